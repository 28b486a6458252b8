//! Progress of a call's arguments for progressive UIs: which JSON path is being written and the
//! text appended to it, without rebuilding any value.
//!
//! Design notes: the visitor keeps its own path stack from the scanner's events and merges
//! consecutive pieces of one string into one item, so a drain after every fragment costs O(new
//! bytes) — the O(1)-per-fragment alternative to re-parsing the buffer for a preview. A
//! character split across fragments is held back until it is whole.
//! - The pointer of the value being written is built once, when the value starts, and shared
//!   (`Arc<str>`) by every item of that value: a long string arrives over many drains, and
//!   rebuilding its pointer for each was most of a drain's cost. Sharing also lets the binding
//!   reuse one Python `str` for the path across drains.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::scanner::push_pointer_token;
use crate::visit::{ValueKind, Visitor};

/// One progress item: text appended to the value at `path` (a JSON Pointer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressItem {
    /// JSON Pointer of the value written (shared by every item of that value).
    pub path: Arc<str>,
    /// Decoded text appended to a string, or the JSON text of a completed number or literal.
    pub text: String,
    /// True when the value at `path` is complete with this item.
    pub complete: bool,
}

#[derive(Debug, Default)]
struct Level {
    is_object: bool,
    key: String,
    count: usize,
    /// Length of `Progress::prefix` before this container's own token.
    prefix_len: usize,
}

/// Visitor that records progress items.
#[derive(Debug, Default)]
pub struct Progress {
    levels: Vec<Level>,
    /// Pointer of the innermost open container, kept up to date as containers open and close
    /// so that a value's pointer costs one token, not one per level.
    prefix: String,
    /// The text of every item since the last drain, back to back: one buffer reused across
    /// drains instead of one allocation per item. After a drain it holds only the bytes of a
    /// UTF-8 character the drain cut, which the next item (the same string's) starts with.
    text: Vec<u8>,
    items: Vec<Pending>,
    /// Pointer of the string being written, for its pieces after a drain.
    string_path: Option<Arc<str>>,
    /// True while the last item is an open string that pieces extend.
    open_string: bool,
}

/// An item not yet drained; its text is `text[previous item's end..end]`.
#[derive(Debug)]
struct Pending {
    path: Arc<str>,
    end: usize,
    complete: bool,
}

impl Progress {
    fn pointer(&self) -> Arc<str> {
        let mut out = String::with_capacity(self.prefix.len() + 16);
        out.push_str(&self.prefix);
        self.push_member_token(&mut out);
        out.into()
    }

    /// Appends `/` and the token of the current member or element of the innermost container.
    fn push_member_token(&self, out: &mut String) {
        if let Some(level) = self.levels.last() {
            out.push('/');
            if level.is_object {
                push_pointer_token(out, &level.key);
            } else {
                // Writing to a String cannot fail.
                let _ = write!(out, "{}", level.count.saturating_sub(1));
            }
        }
    }

    /// The pointer of the open string, built when it started.
    fn string_pointer(&mut self) -> Arc<str> {
        match &self.string_path {
            Some(path) => Arc::clone(path),
            None => {
                let path = self.pointer();
                self.string_path = Some(Arc::clone(&path));
                path
            }
        }
    }

    /// Items since the last drain.
    /// The items recorded since the last drain, as owned values.
    pub fn drain(&mut self) -> Vec<ProgressItem> {
        let mut out = Vec::with_capacity(self.items.len());
        self.drain_each(|path, text, complete| {
            out.push(ProgressItem {
                path: Arc::clone(path),
                text: text.to_owned(),
                complete,
            });
        });
        out
    }

    /// Hands each item recorded since the last drain to `f` (path, text, complete), borrowing
    /// its text: a drain allocates nothing.
    pub fn drain_each(&mut self, mut f: impl FnMut(&Arc<str>, &str, bool)) {
        if self.items.is_empty() {
            // Nothing new (in a parallel stream, the fragments since the last drain may all
            // have gone to other calls): a character the last drain cut stays in `text`.
            return;
        }
        let n = self.items.len();
        let mut start = 0;
        let mut carry_from = None;
        for (i, item) in self.items.iter().enumerate() {
            let bytes = self.text.get(start..item.end).unwrap_or_default();
            start = item.end;
            match std::str::from_utf8(bytes) {
                Ok(text) => f(&item.path, text, item.complete),
                Err(e) => {
                    // The scanner has validated the text, so only a character cut by this
                    // drain can be unfinished: the tail of the last, still open, string.
                    let valid = e.valid_up_to();
                    if i + 1 == n && !item.complete {
                        carry_from = Some(item.end - (bytes.len() - valid));
                        let head = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
                        f(&item.path, head, false);
                    } else {
                        f(&item.path, &String::from_utf8_lossy(bytes), item.complete);
                    }
                }
            }
        }
        if self.open_string && !self.items.is_empty() {
            // The open string continues in a new item after a drain.
            self.open_string = false;
        }
        self.items.clear();
        match carry_from {
            Some(from) => {
                self.text.drain(..from);
            }
            None => self.text.clear(),
        }
    }

    /// Starts an item at the end of the text so far. A new value (not the continuation of a
    /// string a drain cut) drops any carried bytes, which only an open string can own.
    fn push_item(&mut self, path: Arc<str>, continues: bool, complete: bool) {
        if self.items.is_empty() && !continues {
            self.text.clear();
        }
        self.items.push(Pending {
            path,
            end: self.text.len(),
            complete,
        });
    }

    fn scalar(&mut self, text: &[u8]) {
        let path = self.pointer();
        self.push_item(path, false, true);
        self.extend_last(text);
        self.open_string = false;
    }

    /// Appends to the last item's text.
    fn extend_last(&mut self, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
        if let Some(last) = self.items.last_mut() {
            last.end = self.text.len();
        }
    }
}

impl Visitor for Progress {
    const WANTS_STRINGS: bool = true;

    fn value_start(&mut self, kind: ValueKind, _offset: usize) {
        if let Some(parent) = self.levels.last_mut() {
            if !parent.is_object {
                parent.count += 1;
            }
        }
        match kind {
            ValueKind::Object | ValueKind::Array => {
                let prefix_len = self.prefix.len();
                let mut prefix = std::mem::take(&mut self.prefix);
                self.push_member_token(&mut prefix);
                self.prefix = prefix;
                self.levels.push(Level {
                    is_object: kind == ValueKind::Object,
                    key: String::new(),
                    count: 0,
                    prefix_len,
                });
            }
            ValueKind::String => {
                let path = self.pointer();
                self.string_path = Some(Arc::clone(&path));
                self.push_item(path, false, false);
                self.open_string = true;
            }
            _ => {}
        }
    }

    fn key_end(&mut self, key: &str, _offset: usize) {
        if let Some(level) = self.levels.last_mut() {
            key.clone_into(&mut level.key);
        }
    }

    fn string_piece(&mut self, piece: &[u8], _offset: usize, _escaped: bool) {
        if !self.open_string || self.items.is_empty() {
            let path = self.string_pointer();
            self.push_item(path, true, false);
            self.open_string = true;
        }
        self.extend_last(piece);
    }

    fn string_end(&mut self, _offset: usize) {
        if !self.open_string || self.items.is_empty() {
            let path = self.string_pointer();
            self.push_item(path, true, true);
        } else if let Some(last) = self.items.last_mut() {
            last.complete = true;
        }
        self.open_string = false;
        self.string_path = None;
    }

    fn number_end(&mut self, lexeme: &str, _offset: usize) {
        self.scalar(lexeme.as_bytes());
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
        if let Some(level) = self.levels.pop() {
            self.prefix.truncate(level.prefix_len);
        }
        self.open_string = false;
    }
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
