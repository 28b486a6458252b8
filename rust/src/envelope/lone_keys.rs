//! Member names that hold an unpaired UTF-16 surrogate escape (`"k\ud800"`).
//!
//! Design notes
//! - `json.loads` takes such a name, so every SDK reads the event; serde_json refuses it
//!   wherever it decodes a name as `str`, which the envelope's structs do for every member of
//!   the objects they read, known or not. The event was skipped as malformed then, with every
//!   fragment in it.
//! - Nothing is spent on the usual event: only once serde_json has refused one are its names
//!   looked at ([`whole_names`]). Each name it refuses gets its unpaired halves written as
//!   `\ufffd`, U+FFFD, as in ids and names, and the event is read again; an escape and its
//!   replacement are both 6 bytes, so every offset in the event stays where it was.
//! - Only the names serde_json refuses are rewritten, found by the position of its error:
//!   names inside a value read as raw JSON (a call's metadata, object arguments, `usage`) are
//!   kept as sent, as the SDK path keeps them. Past [`GUIDED_ROUNDS`] such names, those left
//!   are rewritten at once, so that an event of many thousands costs a bounded number of
//!   reads (names inside raw values after them then get U+FFFD too).
//! - The nested objects read after the event (a Responses `item`, an Anthropic
//!   `content_block`, a Chat `custom`...) are `&RawValue` to the first read, which does not
//!   look at their names: each is made whole on its own when its read is refused, into a
//!   `String` its caller keeps while the object is used (`read_nested!`).
//! - A Gemini chunk's candidates, parts, calls and pieces are each read from their own text
//!   (`gemini.rs`): a refusal there is placed in the chunk by where that text starts
//!   ([`Refusal`]), and the whole chunk is made whole and read again.
//! - A Chat tool-call entry's own names are its call's metadata keys: they are read from the
//!   event as sent ([`text_name`]), so that two names the SDK tells apart (`"k\ud800"` and
//!   `"k\ufffd"`) are two members there too, each with its own last value.

use std::borrow::Cow;

use memchr::memchr2;

/// Refused names rewritten one by one, each followed by a read of the whole event.
const GUIDED_ROUNDS: usize = 16;

/// A name (a string followed by `:`) holding unpaired surrogate escapes.
struct Name {
    /// The offsets of its opening and closing quotes.
    open: usize,
    close: usize,
    /// Where each of its unpaired `\uXXXX` escapes starts.
    lone: Vec<usize>,
}

/// `text` with the names `parses` refuses for their unpaired surrogate escapes made whole, or
/// the refusal that remains when it is not (only) those. `first` is the refusal of `text`.
#[cold]
#[inline(never)]
pub(super) fn whole_names(
    text: &str,
    first: serde_json::Error,
    parses: impl Fn(&str) -> Result<(), serde_json::Error>,
) -> Result<String, serde_json::Error> {
    let within = |error| Refusal { at: 0, error };
    whole_names_within(text, within(first), |t| parses(t).map_err(within))
}

/// A refusal of serde_json while reading a value inside a text: `error` is placed in the
/// value's own text, which starts at byte `at` of the whole.
pub(super) struct Refusal {
    pub(super) at: usize,
    pub(super) error: serde_json::Error,
}

/// [`whole_names`] for a text whose read goes on into values inside it (a Gemini chunk's
/// candidates, parts and calls, each read from its own text): `parses` says where the value
/// it was refused in starts.
#[cold]
#[inline(never)]
pub(super) fn whole_names_within(
    text: &str,
    first: Refusal,
    parses: impl Fn(&str) -> Result<(), Refusal>,
) -> Result<String, serde_json::Error> {
    let names = lone_names(text.as_bytes());
    if names.is_empty() {
        return Err(first.error);
    }
    let mut fixed = text.to_owned();
    let mut done = vec![false; names.len()];
    let mut refusal = first;
    for round in 0.. {
        let Refusal { at, error } = refusal;
        let at = fixed
            .get(at..)
            .map_or(usize::MAX, |t| at + offset(t, &error));
        // The error comes within the name, or right after its closing quote.
        let Some(i) = names
            .iter()
            .position(|n| n.open < at && at <= n.close + 2)
            .filter(|&i| !done[i])
        else {
            return Err(error);
        };
        let last = if round < GUIDED_ROUNDS {
            i + 1
        } else {
            names.len()
        };
        for (name, done) in names[i..last].iter().zip(&mut done[i..last]) {
            for &escape in &name.lone {
                fixed.replace_range(escape..escape + 6, "\\ufffd");
            }
            *done = true;
        }
        match parses(&fixed) {
            Ok(()) => return Ok(fixed),
            Err(e) => refusal = e,
        }
    }
    Err(refusal.error)
}

/// The byte offset in `text` where serde_json stopped with `error`.
fn offset(text: &str, error: &serde_json::Error) -> usize {
    let line_start = if error.line() <= 1 {
        0
    } else {
        text.match_indices('\n')
            .nth(error.line() - 2)
            .map_or(text.len(), |(i, _)| i + 1)
    };
    line_start + error.column()
}

/// Every name in the JSON `text` that holds unpaired surrogate escapes, in order.
fn lone_names(text: &[u8]) -> Vec<Name> {
    lone_strings(text, true)
}

/// The JSON `text` with the unpaired surrogate escapes of all its strings, names and values,
/// written as `\ufffd`; `None` when it has none. For `usage`, whose names and values are all
/// text the SDK path reads with U+FFFD there too, and which serde_json refuses otherwise.
#[cold]
#[inline(never)]
pub(crate) fn whole_strings(text: &str) -> Option<String> {
    let strings = lone_strings(text.as_bytes(), false);
    if strings.is_empty() {
        return None;
    }
    let mut fixed = text.to_owned();
    for &escape in strings.iter().flat_map(|s| &s.lone) {
        fixed.replace_range(escape..escape + 6, "\\ufffd");
    }
    Some(fixed)
}

/// Every string (only names, if `names_only`) in the JSON `text` that holds unpaired
/// surrogate escapes, in order.
fn lone_strings(text: &[u8], names_only: bool) -> Vec<Name> {
    let mut names = Vec::new();
    let mut i = 0;
    // Outside strings, JSON has no quotes: each one found there opens a string.
    while let Some(open) = text
        .get(i..)
        .and_then(|t| memchr::memchr(b'"', t))
        .map(|n| i + n)
    {
        let mut lone = Vec::new();
        let mut held: Option<usize> = None;
        let mut j = open + 1;
        let close = loop {
            let Some(n) = text.get(j..).and_then(|t| memchr2(b'"', b'\\', t)) else {
                return names;
            };
            j += n;
            if text[j] == b'"' {
                break j;
            }
            let escape = unit(text, j);
            match escape {
                // The low half right after a held high one: a pair.
                Some(0xDC00..=0xDFFF) if held.is_some_and(|h| h + 6 == j) => held = None,
                _ => {
                    lone.extend(held.take());
                    match escape {
                        Some(0xD800..=0xDBFF) => held = Some(j),
                        Some(0xDC00..=0xDFFF) => lone.push(j),
                        _ => {}
                    }
                }
            }
            j += if escape.is_some() { 6 } else { 2 };
        };
        lone.extend(held);
        i = close + 1;
        let colon = text
            .get(i..)
            .and_then(|t| t.iter().find(|b| !b.is_ascii_whitespace()))
            == Some(&b':');
        if (colon || !names_only) && !lone.is_empty() {
            names.push(Name { open, close, lone });
        }
    }
    names
}

/// The UTF-16 unit of the `\uXXXX` escape at `at`, if there is one.
fn unit(text: &[u8], at: usize) -> Option<u16> {
    let hex = text.get(at..at + 6)?.strip_prefix(b"\\u")?;
    let hex = std::str::from_utf8(hex).ok()?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(hex, 16).ok()
}

/// A name as serde_json reads it without checking (WTF-8: an unpaired surrogate as its 3-byte
/// form), as text: each unpaired surrogate U+FFFD.
pub(super) fn text_name(name: Cow<'_, [u8]>) -> Cow<'_, str> {
    match name {
        Cow::Borrowed(b) => match std::str::from_utf8(b) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => Cow::Owned(replaced(b)),
        },
        Cow::Owned(b) => {
            Cow::Owned(String::from_utf8(b).unwrap_or_else(|e| replaced(e.as_bytes())))
        }
    }
}

#[cold]
fn replaced(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                out.push(char::REPLACEMENT_CHARACTER);
                // A surrogate is 3 bytes (0xED 0xA0..=0xBF, then one more); anything else
                // invalid is replaced as `from_utf8_lossy` would.
                let skip = match rest {
                    [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] => 3,
                    _ => e.error_len().unwrap_or(rest.len()),
                };
                bytes = rest.get(skip..).unwrap_or_default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::value::RawValue;

    use super::*;

    fn lone(text: &str) -> Vec<(usize, Vec<usize>)> {
        lone_names(text.as_bytes())
            .into_iter()
            .map(|n| (n.open, n.lone))
            .collect()
    }

    #[test]
    fn only_names_with_unpaired_halves_are_found() {
        // A pair is whole; a high half before another high, or alone, and a low half alone
        // are not; a string that is a value is no name.
        let text = r#"{"a\ud83d\ude00":1,"b\ud800\ud800":"\ud800","c\udc00" : 2,"\\ud800":3}"#;
        assert_eq!(lone(text), vec![(19, vec![21, 27]), (44, vec![46])]);
        assert!(lone(r#"{"k":"\ud800","\"":1}"#).is_empty());
        // Text cut short finds what it holds and stops.
        assert_eq!(lone(r#"{"\udc00":1,"x\ud8"#), vec![(1, vec![2])]);
    }

    #[test]
    fn refused_names_are_made_whole_and_nothing_else() {
        // The first object's names are read, the second is kept raw: only the first's name is
        // refused, and rewritten.
        type Read<'a> = (HashMap<String, i64>, &'a RawValue);
        let text = r#"[{"x\ud800":1},{"y\ud800":2}]"#;
        let parse = |t: &str| serde_json::from_str::<Read<'_>>(t).map(drop);
        let first = parse(text).expect_err("refused");
        let fixed = whole_names(text, first, parse).expect("whole");
        assert_eq!(fixed, r#"[{"x\ufffd":1},{"y\ud800":2}]"#);
    }

    #[test]
    fn a_refusal_inside_a_value_is_placed_by_where_the_value_starts() {
        // The outer read keeps the second member raw and reads it on its own, as a Gemini
        // chunk's parts are read: its refused name is found in the whole text, and only it
        // is rewritten (the name at the same offset of the first member is not).
        type Outer<'a> = HashMap<String, &'a RawValue>;
        let text = r#"{"a":{"y\ud800":1},"b":{"y\ud800":2}}"#;
        let parses = |t: &str| {
            let outer: Outer<'_> =
                serde_json::from_str(t).map_err(|error| Refusal { at: 0, error })?;
            let inner = outer.get("b").map_or("{}", |raw| raw.get());
            serde_json::from_str::<HashMap<String, i64>>(inner)
                .map(drop)
                .map_err(|error| Refusal {
                    at: inner.as_ptr() as usize - t.as_ptr() as usize,
                    error,
                })
        };
        let first = parses(text).expect_err("refused");
        assert_eq!(first.at, 23);
        let fixed = whole_names_within(text, first, parses).expect("whole");
        assert_eq!(fixed, r#"{"a":{"y\ud800":1},"b":{"y\ufffd":2}}"#);
    }

    #[test]
    fn a_refusal_for_another_reason_stays() {
        let text = r#"{"k\ud800":1,}"#;
        let parse = |t: &str| serde_json::from_str::<serde_json::Value>(t).map(drop);
        let first = parse(text).expect_err("refused");
        let error = whole_names(text, first, parse).expect_err("still refused");
        assert!(error.to_string().contains("trailing comma"), "{error}");
    }

    #[test]
    fn many_refused_names_take_few_reads() {
        let text = format!(
            "{{{}\"end\":0}}",
            (0..5000)
                .map(|i| format!("\"k{i}\\udc00\":{i},"))
                .collect::<String>()
        );
        let reads = std::cell::Cell::new(0);
        let parse = |t: &str| {
            reads.set(reads.get() + 1);
            serde_json::from_str::<serde_json::Value>(t).map(drop)
        };
        let first = parse(&text).expect_err("refused");
        let fixed = whole_names(&text, first, parse).expect("whole");
        assert_eq!(reads.get(), 1 + GUIDED_ROUNDS + 1);
        assert!(!fixed.contains("\\udc00") && fixed.len() == text.len());
    }

    #[test]
    fn every_string_is_made_whole_for_usage() {
        let text = r#"{"x\ud800":{"y\udc00":"\ud83d\ude00\ud800"},"n":1}"#;
        let fixed = whole_strings(text).expect("has halves");
        assert_eq!(
            fixed,
            r#"{"x\ufffd":{"y\ufffd":"\ud83d\ude00\ufffd"},"n":1}"#
        );
        assert!(serde_json::from_str::<serde_json::Value>(&fixed).is_ok());
        assert_eq!(whole_strings(r#"{"a":"\ud83d\ude00"}"#), None);
    }

    #[test]
    fn names_read_unchecked_become_text() {
        // serde_json's unchecked reading of `"k\ud800é"`: the half as 0xED 0xA0 0x80.
        let wtf8 = b"k\xED\xA0\x80\xC3\xA9".to_vec();
        assert_eq!(text_name(Cow::Owned(wtf8.clone())), "k\u{FFFD}é");
        assert_eq!(text_name(Cow::Borrowed(&wtf8)), "k\u{FFFD}é");
        assert!(matches!(
            text_name(Cow::Borrowed(b"plain")),
            Cow::Borrowed("plain")
        ));
    }
}
