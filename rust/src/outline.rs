//! The outline of a JSON text, read without validating it: whether an object may repeat a key,
//! how deep it nests, whether its numbers are plain, and what its top-level value starts with.
//!
//! Design notes:
//! - It exists so that a strict parser's acceptance of a text can stand in for a full scan. A
//!   strict RFC 8259 parser (orjson) accepts no text our scanner refuses, except in what the
//!   outline measures: nesting beyond our depth limit, and repeated keys (such a parser keeps
//!   the last one).
//! - Repeated keys are judged on the raw key bytes: two keys decode alike only if their bytes
//!   are equal or one of them has an escape (valid UTF-8 decodes one way). So a key with an
//!   escape, or two keys of one object with the same hash, count as possibly repeated: the
//!   caller then scans, and the scan decides. A false alarm costs time, never a wrong verdict.
//! - On text that is not valid JSON the figures mean nothing, but reading them is still safe
//!   and linear: the caller only trusts them once the parser has accepted the same text.
//! - Strings are skipped eight bytes at a time up to the next quote or backslash; only the
//!   bytes between strings are looked at one by one, and those are few in tool arguments.

use crate::scanner::{long_exponent, PLAIN_NUMBER_CHARS};

/// What [`outline`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outline {
    /// Some object may repeat a key (see the module notes); false means none does.
    pub repeated_keys: bool,
    /// The deepest nesting of objects and arrays.
    pub depth: usize,
    /// Every number lexeme has at most 18 characters and an exponent of at most two digits
    /// (the scanner's [`plain_numbers`](crate::Scanner::plain_numbers)).
    pub plain_numbers: bool,
    /// The first byte that is not JSON whitespace, if any.
    pub first: Option<u8>,
}

/// What a byte outside strings means to the outline.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Other,
    Quote,
    Colon,
    Open,
    Close,
    Number,
    Literal,
}

static CLASSES: [Class; 256] = {
    let mut table = [Class::Other; 256];
    table[b'"' as usize] = Class::Quote;
    table[b':' as usize] = Class::Colon;
    table[b'{' as usize] = Class::Open;
    table[b'[' as usize] = Class::Open;
    table[b'}' as usize] = Class::Close;
    table[b']' as usize] = Class::Close;
    table[b'-' as usize] = Class::Number;
    table[b't' as usize] = Class::Literal;
    table[b'f' as usize] = Class::Literal;
    table[b'n' as usize] = Class::Literal;
    let mut digit = b'0';
    while digit <= b'9' {
        table[digit as usize] = Class::Number;
        digit += 1;
    }
    table
};

/// Reads the outline of `text` in one pass.
#[must_use]
pub fn outline(text: &[u8]) -> Outline {
    let mut keys = Keys::default();
    let mut depth = 0usize;
    let mut deepest = 0;
    let mut plain_numbers = true;
    let first = text
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    // The last string read: in valid JSON, a colon follows a key and nothing else.
    let mut last_string = (0, 0, false);
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        i += 1;
        match CLASSES[usize::from(b)] {
            Class::Other => {}
            // Runs of `"key":"value",` are read here without a round through the loop: which
            // class of byte comes next is what the processor cannot predict, and in compact
            // text a string is mostly followed by a colon or a comma and another string.
            Class::Quote => loop {
                // `i` is just past an opening quote.
                let (end, escaped) = string_end(text, i);
                match text.get(end) {
                    Some(b':') => {
                        keys.add(key_word(text, i, end - 1), escaped);
                        i = end + 1;
                    }
                    Some(b',') => i = end + 1,
                    _ => {
                        last_string = (i, end.saturating_sub(1), escaped);
                        i = end;
                        break;
                    }
                }
                if text.get(i) != Some(&b'"') {
                    break;
                }
                i += 1;
            },
            Class::Colon => {
                let (start, end, escaped) = last_string;
                keys.add(key_word(text, start, end), escaped);
            }
            Class::Open => {
                depth += 1;
                deepest = deepest.max(depth);
                keys.open();
            }
            Class::Close => {
                depth = depth.saturating_sub(1);
                keys.close();
            }
            // `true`, `false` or `null`, skipped whole rather than letter by letter.
            Class::Literal => {
                i += text
                    .get(i..)
                    .unwrap_or_default()
                    .iter()
                    .take_while(|c| c.is_ascii_lowercase())
                    .count();
            }
            Class::Number => {
                let start = i - 1;
                let rest = text.get(i..).unwrap_or_default();
                i += rest
                    .iter()
                    .take_while(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .count();
                let lexeme = &text[start..i];
                if lexeme.len() > PLAIN_NUMBER_CHARS || long_exponent(lexeme) {
                    plain_numbers = false;
                }
            }
        }
    }
    Outline {
        repeated_keys: keys.repeated,
        depth: deepest,
        plain_numbers,
        first,
    }
}

/// The keys of the open containers, as words: one stack shared by all depths.
#[derive(Default)]
struct Keys {
    words: Stack<u64, 32>,
    /// Where each open container's words start.
    starts: Stack<usize, 16>,
    repeated: bool,
}

/// An object with at most this many keys is checked pair by pair; a larger one is sorted.
const PAIRWISE_KEYS: usize = 16;

impl Keys {
    fn open(&mut self) {
        self.starts.push(self.words.len());
    }

    fn add(&mut self, word: u64, escaped: bool) {
        if escaped {
            self.repeated = true;
        }
        self.words.push(word);
    }

    fn close(&mut self) {
        let start = self.starts.pop().unwrap_or(0).min(self.words.len());
        let words = &mut self.words.as_mut_slice()[start..];
        if words.len() <= PAIRWISE_KEYS {
            for (i, word) in words.iter().enumerate() {
                if words[i + 1..].contains(word) {
                    self.repeated = true;
                }
            }
        } else {
            words.sort_unstable();
            if words.windows(2).any(|pair| pair[0] == pair[1]) {
                self.repeated = true;
            }
        }
        self.words.truncate(start);
    }
}

/// A stack that lives inline until it outgrows `N` items, then on the heap. Arguments of a few
/// kilobytes rarely hold more than a few dozen keys at once, and for them the allocations of a
/// `Vec` cost as much as the rest of the outline.
struct Stack<T, const N: usize> {
    inline: [T; N],
    len: usize,
    /// Every item, once there were more than `N`; `inline` is unused from then on.
    spilled: Option<Vec<T>>,
}

impl<T: Copy + Default, const N: usize> Default for Stack<T, N> {
    fn default() -> Self {
        Self {
            inline: [T::default(); N],
            len: 0,
            spilled: None,
        }
    }
}

impl<T: Copy, const N: usize> Stack<T, N> {
    fn len(&self) -> usize {
        self.spilled.as_ref().map_or(self.len, Vec::len)
    }

    fn push(&mut self, item: T) {
        if let Some(items) = &mut self.spilled {
            items.push(item);
        } else if let Some(slot) = self.inline.get_mut(self.len) {
            *slot = item;
            self.len += 1;
        } else {
            let mut items = Vec::with_capacity(4 * N);
            items.extend_from_slice(&self.inline);
            items.push(item);
            self.spilled = Some(items);
        }
    }

    fn pop(&mut self) -> Option<T> {
        if let Some(items) = &mut self.spilled {
            return items.pop();
        }
        self.len = self.len.checked_sub(1)?;
        self.inline.get(self.len).copied()
    }

    fn truncate(&mut self, len: usize) {
        if let Some(items) = &mut self.spilled {
            items.truncate(len);
        } else {
            self.len = self.len.min(len);
        }
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.spilled {
            Some(items) => items,
            None => &mut self.inline[..self.len],
        }
    }
}

/// Up to eight bytes as a little-endian word, zero-padded. A byte loop: `copy_from_slice` of a
/// variable length becomes a call to `memcpy`, which cost more than the rest of a short key.
fn word_of(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .enumerate()
        .fold(0, |word, (i, &b)| word | u64::from(b) << (8 * i))
}

/// A key as one word: its bytes themselves when it has at most 7 (then equal words mean equal
/// keys), or a hash with the top bit set (equal keys give equal words). `text[start..end]` is the
/// key; the bytes after it (its closing quote at least) let a short key be read in one load.
fn key_word(text: &[u8], start: usize, end: usize) -> u64 {
    let key = text.get(start..end).unwrap_or_default();
    if key.len() < 8 {
        let word = match text.get(start..start + 8) {
            Some(eight) => word8(eight) & ((1 << (8 * key.len())) - 1),
            None => word_of(key),
        };
        // The length in the top byte tells a key from the same key padded with NUL bytes.
        return word | (key.len() as u64) << 56;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut chunks = key.chunks_exact(8);
    for chunk in chunks.by_ref() {
        hash = mix(hash, word8(chunk));
    }
    if !chunks.remainder().is_empty() {
        // The last eight bytes of the key, overlapping the chunk before: still a function of
        // the key's bytes alone.
        hash = mix(hash, word8(&key[key.len() - 8..]));
    }
    hash ^ (key.len() as u64).rotate_left(40) | 1 << 63
}

/// The first eight bytes of `bytes` (which has at least eight) as a little-endian word.
fn word8(bytes: &[u8]) -> u64 {
    bytes
        .first_chunk::<8>()
        .map_or_else(|| word_of(bytes), |eight| u64::from_le_bytes(*eight))
}

fn mix(hash: u64, word: u64) -> u64 {
    let hash = (hash ^ word).wrapping_mul(0x0000_0100_0000_01b3);
    hash ^ hash >> 29
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of the lowest zero byte of `w` (and perhaps of bytes above it), or 0.
fn zero_byte(w: u64) -> u64 {
    w.wrapping_sub(ONES) & !w & HIGHS
}

/// The offset just past the closing quote of the string whose content starts at `from` (the
/// end of the text when it never closes), and whether the string has an escape. Eight bytes
/// at a time while no quote or backslash is among them: tool arguments are mostly short
/// strings, where a call to `memchr` costs more than the search.
fn string_end(text: &[u8], mut from: usize) -> (usize, bool) {
    let mut escaped = false;
    loop {
        while let Some(chunk) = text.get(from..from + 8) {
            let w = word8(chunk);
            let stop =
                zero_byte(w ^ (ONES * u64::from(b'"'))) | zero_byte(w ^ (ONES * u64::from(b'\\')));
            if stop != 0 {
                // The lowest flagged byte is a real quote or backslash.
                from += (stop.trailing_zeros() / 8) as usize;
                break;
            }
            from += 8;
        }
        match text.get(from) {
            Some(b'"') => return (from + 1, escaped),
            // A backslash escapes the next byte, whatever it is; in valid text a `\u` is
            // followed by four hex digits, which hold no quote or backslash.
            Some(b'\\') => {
                escaped = true;
                from += if text.get(from + 1) == Some(&b'u') {
                    6
                } else {
                    2
                };
            }
            Some(_) => from += 1,
            None => return (text.len(), escaped),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keys_outside_strings_only() {
        let o = outline(br#" {"a:b": "c:d", "e": [1, {"f": "a:b"}], "g": {"e": 1}} "#);
        assert!(!o.repeated_keys);
        assert_eq!(o.depth, 3);
        assert_eq!(o.first, Some(b'{'));
        assert!(o.plain_numbers);
    }

    #[test]
    fn repeated_keys_are_never_missed() {
        for text in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"x": {"b": 1, "c": [{"d": 1}], "b": 2}}"#,
            r#"{"a long key of many bytes": 1, "a long key of many bytes": 2}"#,
            r#"{"a": 1, "\u0061": 2}"#,
            r#"{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":3}"#,
        ] {
            assert!(outline(text.as_bytes()).repeated_keys, "{text}");
        }
        for text in [
            r#"{"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]}"#,
            r#"{"ab": 1, "a": 2, "abcdefgh": 3, "abcdefg": 4, "abcdefghi": 5}"#,
            r#"{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16}"#,
        ] {
            assert!(!outline(text.as_bytes()).repeated_keys, "{text}");
        }
    }

    /// Past the inline capacity of the key stacks (32 words, 16 open containers) nothing changes.
    #[test]
    fn many_keys_and_deep_nesting_are_judged_alike() {
        let many: Vec<String> = (0..70).map(|k| format!("\"key{k}\": {k}")).collect();
        let flat = format!("{{{}}}", many.join(", "));
        assert!(!outline(flat.as_bytes()).repeated_keys);
        let repeated = format!("{{{}, \"key3\": 0}}", many.join(", "));
        assert!(outline(repeated.as_bytes()).repeated_keys);
        // Forty nested objects, each with a key of its own before the next and one after it:
        // the words of every open level stay on the stack while deeper levels come and go.
        let mut nested = String::new();
        for level in 0..40 {
            nested.push_str(&format!("{{\"a{level}\": 1, \"next\": "));
        }
        nested.push_str("null");
        for level in (0..40).rev() {
            nested.push_str(&format!(", \"z{level}\": 2}}"));
        }
        let o = outline(nested.as_bytes());
        assert_eq!(o.depth, 40);
        assert!(!o.repeated_keys, "{nested}");
        let clash = nested.replacen(", \"z20\": 2}", ", \"a20\": 2}", 1);
        assert!(outline(clash.as_bytes()).repeated_keys, "{clash}");
        let elsewhere = nested.replacen(", \"z20\": 2}", ", \"a21\": 2}", 1);
        assert!(!outline(elsewhere.as_bytes()).repeated_keys, "{elsewhere}");
    }

    #[test]
    fn numbers_are_plain_as_the_scanner_says() {
        for (text, plain) in [
            ("{\"a\": [0.5, -1E+99, 99999999999999999.9]}", false),
            ("{\"a\": [0.5, -1E+99, 9999999999999999.9]}", true),
            ("{\"a\": -0, \"b\": 1e-7}", true),
            ("{\"a\": 2E-100}", false),
            ("{\"a\": \"1e1000\", \"1e1000\": 0}", true),
        ] {
            assert_eq!(outline(text.as_bytes()).plain_numbers, plain, "{text}");
            let mut scanner = crate::Scanner::default();
            scanner.push(text.as_bytes());
            scanner.finish().expect("valid");
            assert_eq!(scanner.plain_numbers(), plain, "{text}");
        }
    }

    #[test]
    fn runs_of_strings_literals_and_numbers_are_read_in_any_spacing() {
        for (text, repeated, depth) in [
            (r#"{"a":"x","b":["p","q"],"a":1}"#, true, 2),
            (
                r#"{"a":"x","b":["p","q"],"c":true,"d":null,"e":false,"f":{"a":1}}"#,
                false,
                2,
            ),
            (r#"{"a":{"b":1},"b":[{"b":2},{"b":3}],"c":"d"}"#, false, 3),
            (r#"{"a" :"x", "a"  : "y"}"#, true, 1),
            (r#"{"t":true,"n":null,"t":false}"#, true, 1),
            (r#"["a","b",{"a":"a","b":"b"},"a",["a"]]"#, false, 2),
            (r#"{"key,":"a,","key":",b"}"#, false, 1),
            (r#"{"abcdefghij":1,"abcdefghik":2,"abcdefghij":3}"#, true, 1),
            (r#"{"abcdefghij":1,"abcdefghik":2}"#, false, 1),
        ] {
            let o = outline(text.as_bytes());
            assert_eq!((o.repeated_keys, o.depth), (repeated, depth), "{text}");
        }
    }

    proptest::proptest! {
        /// Against the structure itself, on random compact or spaced texts with short keys
        /// (at most seven bytes, no escapes: judged exactly, never a false alarm).
        #[test]
        fn repeated_keys_and_depth_match_the_structure(
            node in node_strategy(),
            spaced in proptest::bool::ANY,
        ) {
            let mut text = String::new();
            node.render(spaced, &mut text);
            let o = outline(text.as_bytes());
            proptest::prop_assert_eq!(o.repeated_keys, node.repeats(), "{}", text);
            proptest::prop_assert_eq!(o.depth, node.depth(), "{}", text);
        }
    }

    #[derive(Debug, Clone)]
    enum Node {
        Leaf(String),
        Array(Vec<Node>),
        Object(Vec<(String, Node)>),
    }

    impl Node {
        fn render(&self, spaced: bool, out: &mut String) {
            let gap = if spaced { " " } else { "" };
            match self {
                Node::Leaf(text) => out.push_str(text),
                Node::Array(items) => {
                    out.push('[');
                    for (n, item) in items.iter().enumerate() {
                        if n > 0 {
                            out.push(',');
                            out.push_str(gap);
                        }
                        item.render(spaced, out);
                    }
                    out.push(']');
                }
                Node::Object(fields) => {
                    out.push('{');
                    for (n, (key, value)) in fields.iter().enumerate() {
                        if n > 0 {
                            out.push(',');
                            out.push_str(gap);
                        }
                        out.push_str(&format!("\"{key}\"{gap}:{gap}"));
                        value.render(spaced, out);
                    }
                    out.push('}');
                }
            }
        }

        fn repeats(&self) -> bool {
            match self {
                Node::Leaf(_) => false,
                Node::Array(items) => items.iter().any(Node::repeats),
                Node::Object(fields) => {
                    let mut seen = std::collections::HashSet::new();
                    !fields.iter().all(|(key, _)| seen.insert(key))
                        || fields.iter().any(|(_, value)| value.repeats())
                }
            }
        }

        fn depth(&self) -> usize {
            match self {
                Node::Leaf(_) => 0,
                Node::Array(items) => 1 + items.iter().map(Node::depth).max().unwrap_or(0),
                Node::Object(fields) => {
                    1 + fields.iter().map(|(_, v)| v.depth()).max().unwrap_or(0)
                }
            }
        }
    }

    fn node_strategy() -> impl proptest::strategy::Strategy<Value = Node> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Node::Leaf("null".into())),
            Just(Node::Leaf("true".into())),
            Just(Node::Leaf("false".into())),
            Just(Node::Leaf("-12.5e+3".into())),
            (0u32..1000).prop_map(|n| Node::Leaf(n.to_string())),
            "[a-c:, {}\\[\\]]{0,4}".prop_map(|s| Node::Leaf(format!("\"{s}\""))),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Node::Array),
                proptest::collection::vec(("[a-c:,]{1,2}", inner), 0..5).prop_map(Node::Object),
            ]
        })
    }

    #[test]
    fn any_bytes_are_read_safely() {
        for text in [&b""[..], b"\"", b"\"\\", b"}}]]", b"\xff\xfe:", b"{\"a\\"] {
            let o = outline(text);
            assert!(o.depth <= text.len());
        }
        assert_eq!(outline(b"   ").first, None);
    }
}
