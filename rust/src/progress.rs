//! Progress of a call's arguments for progressive UIs: which JSON path is being written and the
//! text appended to it, without rebuilding any value.
//!
//! Design notes: the visitor keeps its own path stack from the scanner's events and merges
//! consecutive pieces of one string into one item, so a drain after every fragment costs O(new
//! bytes) — the O(1)-per-fragment alternative to re-parsing the buffer for a preview. A
//! character split across fragments is held back until it is whole.
//! - Items live in one reused buffer, each its path then its text, back to back: recording an
//!   item allocates nothing once the buffer has grown. One allocation (or two, with a shared
//!   pointer) per value was most of the cost of tracking a dense object, and a second buffer
//!   (paths apart from texts) was one allocation more per call.
//! - One pointer, the current value's, is kept up to date as keys, elements and containers
//!   come: an item's path is a copy of it, and a string's pieces after a drain copy it again
//!   (nothing moves it while the string is open). A level only remembers where its own tokens
//!   start, so no level owns a buffer: a key string per level, and a second pointer for the
//!   open string, were a fifth of the allocations of a small call's tracking.
//! - Arguments that arrive as values rather than text (Vertex AI's `partialArgs` pieces) are
//!   recorded by whoever reads them, with [`Progress::record`], as each piece arrives. The call's
//!   text, written from those values when it closes, is then not scanned for items: the items
//!   would come a second time, all at once and only at the end.

use crate::visit::{ValueKind, Visitor};

/// One progress item: text appended to the value at `path` (a JSON Pointer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressItem {
    /// JSON Pointer of the value written.
    pub path: String,
    /// Decoded text appended to a string, or the JSON text of a completed number or literal.
    pub text: String,
    /// True when the value at `path` is complete with this item.
    pub complete: bool,
}

#[derive(Debug, Clone, Copy)]
struct Level {
    is_object: bool,
    /// Elements of an array so far.
    count: usize,
    /// Length of [`Progress::pointer`] at this container itself: its members' tokens follow.
    prefix_len: usize,
}

/// What a recorded item ([`Progress::record`]) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Text appended to the string at the path: it starts the string, or goes on with the one
    /// the last item recorded at the same path if that one did not end. `ends` when no more of
    /// it comes.
    String {
        /// The string is complete with this text.
        ends: bool,
    },
    /// The JSON text of a complete number or literal.
    Scalar,
}

/// Where a call's items come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The scanner's events.
    Scanner,
    /// [`Progress::record`]; `open` while the last string recorded may go on.
    Recorded { open: bool },
    /// Recording stopped ([`Progress::stop_recording`]): nothing more is recorded.
    Stopped,
}

/// Visitor that records progress items.
#[derive(Debug)]
pub struct Progress {
    /// The open containers, outermost first.
    levels: Vec<Level>,
    /// Pointer of the current value: the innermost container's own pointer and the token of
    /// its current member (set at the member's key) or element (set at the element's start).
    /// Kept as bytes, as keys come from the scanner: it is UTF-8 (the scanner checked each
    /// key), and whoever hands a path on checks that once, where an ASCII check that making a
    /// Python `str` needs anyway does it (a UTF-8 check per key was 3% of a small call's
    /// tracking).
    pointer: Vec<u8>,
    /// The path and then the text of every item since the last drain, back to back: an
    /// item's text is always the last bytes, which is where a string's pieces extend it.
    bytes: Vec<u8>,
    items: Vec<Pending>,
    /// The bytes (at most 3) of a UTF-8 character the last drain cut, which the next item (the
    /// same string's) starts its text with; `carry_len` of them.
    carry: [u8; 3],
    carry_len: u8,
    /// Path of the last string [`Progress::record`] recorded (recorded items have no scanner
    /// events to keep [`Progress::pointer`]); empty until then.
    string_path: Vec<u8>,
    /// True while the last item is an open string that pieces extend.
    open_string: bool,
    source: Source,
}

/// An item not yet drained; its path is `bytes[previous item's end..text_start]` and its text
/// `bytes[text_start..end]`.
#[derive(Debug)]
struct Pending {
    text_start: usize,
    end: usize,
    complete: bool,
    /// The rest of a string whose first piece went out in an earlier drain.
    continues: bool,
}

/// Room reserved when tracking starts, enough for a typical call's nesting, pointers and the
/// items of a few fragments: growing each buffer from empty cost a tenth of a small call's
/// progress tracking in reallocations.
const LEVELS: usize = 4;
const POINTER_BYTES: usize = 32;
const PENDING_BYTES: usize = 128;
const PENDING_ITEMS: usize = 4;

impl Default for Progress {
    fn default() -> Self {
        Self {
            levels: Vec::with_capacity(LEVELS),
            pointer: Vec::with_capacity(POINTER_BYTES),
            bytes: Vec::with_capacity(PENDING_BYTES),
            items: Vec::with_capacity(PENDING_ITEMS),
            carry: [0; 3],
            carry_len: 0,
            string_path: Vec::new(),
            open_string: false,
            source: Source::Scanner,
        }
    }
}

impl Progress {
    /// Records an item that no scanned byte gave: `text` appended to the string at `path` (a
    /// JSON Pointer), or the JSON text of the number or literal there, as the scanner would
    /// have recorded them for the same value. From the first one on, the scanner's events are
    /// not recorded (see [`Progress::is_recorded`]): the items are only ever recorded this way.
    /// A string left open ends when an item at another path comes, or at
    /// [`Progress::end_string`]. Nothing is recorded once [`Progress::stop_recording`] was
    /// called.
    pub fn record(&mut self, path: &str, text: &str, value: Recorded) {
        let open = match self.source {
            Source::Stopped => return,
            Source::Scanner => false,
            Source::Recorded { open } => open,
        };
        let goes_on =
            open && matches!(value, Recorded::String { .. }) && self.string_path == path.as_bytes();
        if open && !goes_on {
            self.string_end(0);
        }
        match value {
            Recorded::String { ends } => {
                if !goes_on {
                    self.string_path.clear();
                    self.string_path.extend_from_slice(path.as_bytes());
                    self.bytes.extend_from_slice(path.as_bytes());
                    self.push_item(false, false);
                    self.open_string = true;
                }
                self.string_piece(text.as_bytes(), 0, false);
                if ends {
                    self.string_end(0);
                }
                self.source = Source::Recorded { open: !ends };
            }
            Recorded::Scalar => {
                self.bytes.extend_from_slice(path.as_bytes());
                self.push_item(false, true);
                self.extend_last(text.as_bytes());
                self.open_string = false;
                self.source = Source::Recorded { open: false };
            }
        }
    }

    /// Ends the string recorded last, if it may still go on: its whole value arrived.
    pub fn end_string(&mut self) {
        if self.source == (Source::Recorded { open: true }) {
            self.string_end(0);
            self.source = Source::Recorded { open: false };
        }
    }

    /// Records nothing more: the values that would follow are ones the call will never hold
    /// (the items so far stay to be drained). The scanner's events are not recorded either.
    pub fn stop_recording(&mut self) {
        self.source = Source::Stopped;
    }

    /// True once items are recorded with [`Progress::record`] (or recording stopped): the
    /// call's text is then scanned without this visitor.
    #[must_use]
    pub fn is_recorded(&self) -> bool {
        self.source != Source::Scanner
    }

    /// The items recorded since the last drain, as owned values.
    pub fn drain(&mut self) -> Vec<ProgressItem> {
        let mut out = Vec::with_capacity(self.items.len());
        self.drain_each(|path, text, complete, _continues| {
            out.push(ProgressItem {
                path: String::from_utf8_lossy(path).into_owned(),
                text: String::from_utf8_lossy(text).into_owned(),
                complete,
            });
        });
        out
    }

    /// Hands each item recorded since the last drain to `f` (path, text, complete, continues),
    /// borrowing its path and text: a drain allocates nothing. `continues` is true for the rest
    /// of a string whose first piece an earlier drain gave (its pointer is not new).
    ///
    /// Path and text are UTF-8: the scanner checked every byte it reported, recorded items
    /// come as `&str`, and a character this drain would cut (at the end of the last, still
    /// open, string) is held back for the next one. They are handed on as bytes so that a
    /// caller that must look at each byte anyway (an ASCII check to build a Python `str`) does
    /// not pay for a second check here.
    pub fn drain_each(&mut self, mut f: impl FnMut(&[u8], &[u8], bool, bool)) {
        if self.items.is_empty() {
            // Nothing new (in a parallel stream, the fragments since the last drain may all
            // have gone to other calls): a character the last drain cut stays carried.
            return;
        }
        let n = self.items.len();
        let mut start = 0;
        for (i, item) in self.items.iter().enumerate() {
            let path = self.bytes.get(start..item.text_start).unwrap_or_default();
            let mut text = self
                .bytes
                .get(item.text_start..item.end)
                .unwrap_or_default();
            start = item.end;
            if i + 1 == n && !item.complete {
                let cut = cut_character_len(text);
                if cut > 0 {
                    let (whole, cut) = text.split_at(text.len() - cut);
                    self.carry[..cut.len()].copy_from_slice(cut);
                    // At most 3 bytes (see `cut_character_len`).
                    self.carry_len = cut.len() as u8;
                    text = whole;
                }
            }
            f(path, text, item.complete, item.continues);
        }
        // The open string continues in a new item after a drain.
        self.open_string = false;
        self.items.clear();
        self.bytes.clear();
    }

    /// Starts an item whose path was just appended to `bytes`. The continuation of a string
    /// starts with the bytes the last drain cut from it; a new value drops them (only an open
    /// string can own them, and only the first item after a drain can be its continuation).
    fn push_item(&mut self, continues: bool, complete: bool) {
        let text_start = self.bytes.len();
        if self.carry_len > 0 {
            if continues {
                let carried = self.carry.get(..usize::from(self.carry_len));
                self.bytes.extend_from_slice(carried.unwrap_or_default());
            }
            self.carry_len = 0;
        }
        self.items.push(Pending {
            text_start,
            end: self.bytes.len(),
            complete,
            continues,
        });
    }

    /// Starts an item of the open string. A scanned string's path is still the current
    /// pointer; a recorded one's was kept when it began.
    fn push_string_item(&mut self, complete: bool) {
        let path = match self.source {
            Source::Scanner => &self.pointer,
            Source::Recorded { .. } | Source::Stopped => &self.string_path,
        };
        self.bytes.extend_from_slice(path);
        self.push_item(true, complete);
    }

    fn scalar(&mut self, text: &[u8]) {
        self.bytes.extend_from_slice(&self.pointer);
        self.push_item(false, true);
        self.extend_last(text);
        self.open_string = false;
    }

    /// Appends to the last item's text, the last bytes of `bytes`.
    fn extend_last(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        if let Some(last) = self.items.last_mut() {
            last.end = self.bytes.len();
        }
    }
}

impl Visitor for Progress {
    const WANTS_STRINGS: bool = true;

    fn value_start(&mut self, kind: ValueKind, _offset: usize) {
        if let Some(parent) = self.levels.last_mut() {
            if !parent.is_object {
                // An element's token is its index, known only now (a member's came with its key).
                self.pointer.truncate(parent.prefix_len);
                self.pointer.push(b'/');
                push_decimal(&mut self.pointer, parent.count);
                parent.count += 1;
            }
        }
        match kind {
            ValueKind::Object | ValueKind::Array => self.levels.push(Level {
                is_object: kind == ValueKind::Object,
                count: 0,
                prefix_len: self.pointer.len(),
            }),
            ValueKind::String => {
                self.bytes.extend_from_slice(&self.pointer);
                self.push_item(false, false);
                self.open_string = true;
            }
            _ => {}
        }
    }

    fn key_end(&mut self, key: &str, offset: usize) {
        self.key_end_bytes(key.as_bytes(), offset);
    }

    /// The key's bytes go into the pointer as they are (see [`Progress::pointer`]).
    fn key_end_bytes(&mut self, key: &[u8], _offset: usize) {
        if let Some(level) = self.levels.last() {
            self.pointer.truncate(level.prefix_len);
            self.pointer.push(b'/');
            // Keys are short: a plain loop beats memchr's set-up. `~` and `/` are ASCII, so
            // they never occur inside a multi-byte character and escaping bytewise is exact.
            if key.iter().any(|&b| b == b'~' || b == b'/') {
                for &b in key {
                    match b {
                        b'~' => self.pointer.extend_from_slice(b"~0"),
                        b'/' => self.pointer.extend_from_slice(b"~1"),
                        _ => self.pointer.push(b),
                    }
                }
            } else {
                self.pointer.extend_from_slice(key);
            }
        }
    }

    fn string_piece(&mut self, piece: &[u8], _offset: usize, _escaped: bool) {
        if !self.open_string || self.items.is_empty() {
            self.push_string_item(false);
            self.open_string = true;
        }
        self.extend_last(piece);
    }

    fn string_end(&mut self, _offset: usize) {
        if !self.open_string || self.items.is_empty() {
            self.push_string_item(true);
        } else if let Some(last) = self.items.last_mut() {
            last.complete = true;
        }
        self.open_string = false;
    }

    fn number_end(&mut self, lexeme: &str, _offset: usize) {
        self.scalar(lexeme.as_bytes());
    }

    /// The lexeme is recorded as bytes: its UTF-8 check (a call per number) is not needed.
    fn number_end_bytes(&mut self, lexeme: &[u8], _offset: usize) {
        self.scalar(lexeme);
    }

    fn literal_end(&mut self, kind: ValueKind, value: bool, _offset: usize) {
        let text: &[u8] = match (kind, value) {
            (ValueKind::Null, _) => b"null",
            (_, true) => b"true",
            _ => b"false",
        };
        self.scalar(text);
    }

    fn container_end(&mut self, _kind: ValueKind, _offset: usize) {
        // The pointer goes back to the container's own: the next member or element of its
        // parent replaces that token.
        if let Some(level) = self.levels.pop() {
            self.pointer.truncate(level.prefix_len);
        }
        self.open_string = false;
    }
}

/// How many bytes at the end of `bytes` start a UTF-8 character that is not whole yet: 0 when
/// `bytes` ends on a character boundary. Only the last three bytes can hold such a start.
fn cut_character_len(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 != 0x80 {
            // The last byte that is not a continuation: the character it leads needs `need`
            // bytes, and `back` of them are here.
            let need = match b {
                0x00..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            return if need > back { back } else { 0 };
        }
    }
    0
}

/// Appends `n` in decimal (an array index in a pointer), without the formatting machinery.
fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        // `n % 10` is below 10, so the cast keeps it whole.
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scanner::Scanner;

    #[test]
    fn reports_paths_and_appended_text() {
        let mut scanner = Scanner::default();
        let mut progress = Progress::default();
        scanner.push_with(br#"{"title": "Print"#, &mut progress);
        let first = progress.drain();
        assert_eq!(
            first,
            vec![ProgressItem {
                path: "/title".into(),
                text: "Print".into(),
                complete: false
            }]
        );
        scanner.push_with(b"er \xe2\x82", &mut progress);
        let second = progress.drain();
        assert_eq!(
            second,
            vec![ProgressItem {
                path: "/title".into(),
                text: "er ".into(),
                complete: false
            }]
        );
        scanner.push_with(b"\xac\", \"tags\": [\"a\", 12, true]}", &mut progress);
        let third = progress.drain();
        let summary: Vec<(&str, &str, bool)> = third
            .iter()
            .map(|i| (&*i.path, i.text.as_str(), i.complete))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("/title", "€", true),
                ("/tags/0", "a", true),
                ("/tags/1", "12", true),
                ("/tags/2", "true", true)
            ]
        );
    }

    #[test]
    fn items_after_a_drain_say_they_continue_a_string() {
        let mut scanner = Scanner::default();
        let mut progress = Progress::default();
        let mut seen = Vec::new();
        for piece in [&br#"{"a": "x"#[..], b"y", br#"", "b": ""#, br#""}"#] {
            scanner.push_with(piece, &mut progress);
            progress.drain_each(|path, text, complete, continues| {
                seen.push((utf8(path), utf8(text), complete, continues));
            });
        }
        let expected = [
            ("/a", "x", false, false),
            ("/a", "y", false, true),
            ("/a", "", true, true),
            ("/b", "", false, false),
            ("/b", "", true, true),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|&(p, t, c, k)| (p.to_owned(), t.to_owned(), c, k))
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_cut_character_survives_a_drain_with_nothing_new() {
        let mut scanner = Scanner::default();
        let mut progress = Progress::default();
        scanner.push_with("{\"a\": \"東".as_bytes().split_at(8).0, &mut progress);
        let first: Vec<String> = progress.drain().into_iter().map(|i| i.text).collect();
        assert_eq!(first, vec![String::new()]);
        assert!(progress.drain().is_empty());
        scanner.push_with(&"東京\"}".as_bytes()[1..], &mut progress);
        let texts: Vec<String> = progress.drain().into_iter().map(|i| i.text).collect();
        assert_eq!(texts, vec!["東京".to_owned()]);
    }

    fn utf8(bytes: &[u8]) -> String {
        String::from_utf8(bytes.to_vec()).expect("items are UTF-8")
    }

    /// (path, text, complete, continues) of each item drained.
    fn drained(progress: &mut Progress) -> Vec<(String, String, bool, bool)> {
        let mut out = Vec::new();
        progress.drain_each(|path, text, complete, continues| {
            out.push((utf8(path), utf8(text), complete, continues));
        });
        out
    }

    fn item(
        path: &str,
        text: &str,
        complete: bool,
        continues: bool,
    ) -> (String, String, bool, bool) {
        (path.to_owned(), text.to_owned(), complete, continues)
    }

    #[test]
    fn recorded_items_mean_what_scanned_ones_mean() {
        // The pieces of `{"a~/b": "xyz", "n": [1.5, true]}` as values: the items the scanner
        // gives for its text, piece by piece.
        let mut progress = Progress::default();
        assert!(!progress.is_recorded());
        progress.record("/a~0~1b", "x", Recorded::String { ends: false });
        assert!(progress.is_recorded());
        assert_eq!(drained(&mut progress), [item("/a~0~1b", "x", false, false)]);
        progress.record("/a~0~1b", "y", Recorded::String { ends: false });
        progress.record("/a~0~1b", "z", Recorded::String { ends: true });
        progress.record("/n/0", "1.5", Recorded::Scalar);
        assert_eq!(
            drained(&mut progress),
            [
                item("/a~0~1b", "yz", true, true),
                item("/n/0", "1.5", true, false)
            ]
        );
        // An item at another path ends a string left open; one at its path starts another.
        progress.record("/s", "", Recorded::String { ends: false });
        assert_eq!(drained(&mut progress), [item("/s", "", false, false)]);
        progress.record("/n/1", "true", Recorded::Scalar);
        progress.record("/t", "q", Recorded::String { ends: true });
        progress.record("/t", "r", Recorded::String { ends: true });
        assert_eq!(
            drained(&mut progress),
            [
                item("/s", "", true, true),
                item("/n/1", "true", true, false),
                item("/t", "q", true, false),
                item("/t", "r", true, false)
            ]
        );
    }

    #[test]
    fn a_recorded_string_ends_when_its_value_is_whole() {
        let mut progress = Progress::default();
        progress.record("/a", "x", Recorded::String { ends: false });
        progress.end_string();
        progress.end_string();
        assert_eq!(drained(&mut progress), [item("/a", "x", true, false)]);
        progress.record("/b", "y", Recorded::String { ends: false });
        assert_eq!(drained(&mut progress), [item("/b", "y", false, false)]);
        progress.end_string();
        assert_eq!(drained(&mut progress), [item("/b", "", true, true)]);
    }

    #[test]
    fn nothing_is_recorded_once_recording_stopped() {
        let mut progress = Progress::default();
        progress.record("/a", "x", Recorded::String { ends: false });
        progress.stop_recording();
        progress.record("/a", "y", Recorded::String { ends: true });
        progress.record("/b", "1", Recorded::Scalar);
        progress.end_string();
        assert!(progress.is_recorded());
        assert_eq!(drained(&mut progress), [item("/a", "x", false, false)]);
    }

    #[test]
    fn paths_follow_nesting_escapes_and_indices_past_nine() {
        let mut scanner = Scanner::default();
        let mut progress = Progress::default();
        let text = br#"{"a/b": [[1, {"x~": "s"}], 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, {"k": [true]}], "z": null}"#;
        let mut paths = Vec::new();
        for piece in text.chunks(3) {
            scanner.push_with(piece, &mut progress);
            for item in progress.drain() {
                if item.complete {
                    paths.push(item.path.to_string());
                }
            }
        }
        let mut expected = vec!["/a~1b/0/0".to_owned(), "/a~1b/0/1/x~0".to_owned()];
        expected.extend((1..=10).map(|i| format!("/a~1b/{i}")));
        expected.extend(["/a~1b/11/k/0".to_owned(), "/z".to_owned()]);
        assert_eq!(paths, expected);
    }
}
