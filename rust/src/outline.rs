//! The outline of a JSON text, read without validating it: how many object members it writes,
//! how deep it nests, whether its numbers are plain, and what its top-level value starts with.
//!
//! Design notes:
//! - It exists so that a strict parser's acceptance of a text can stand in for a full scan. A
//!   strict RFC 8259 parser (orjson) accepts no text our scanner refuses, except in what the
//!   outline measures: nesting beyond our depth limit, and repeated keys (such a parser keeps
//!   the last one). Its objects hold one entry per distinct key, so their sizes add up to
//!   `members` exactly when no object repeats a key.
//! - On text that is not valid JSON the figures mean nothing, but reading them is still safe
//!   and linear: the caller only trusts them once the parser has accepted the same text.
//! - Strings are skipped eight bytes at a time up to the next quote or backslash; only the
//!   bytes between strings are looked at one by one, and those are few in tool arguments.

use crate::scanner::long_exponent;

/// What [`outline`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outline {
    /// Colons outside strings: in valid JSON, one per object member.
    pub members: usize,
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
    let mut members = 0;
    let mut depth = 0usize;
    let mut deepest = 0;
    let mut plain_numbers = true;
    let first = text
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        i += 1;
        match CLASSES[usize::from(b)] {
            Class::Other => {}
            Class::Quote => i = string_end(text, i),
            Class::Colon => members += 1,
            Class::Open => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            Class::Close => depth = depth.saturating_sub(1),
            Class::Number => {
                let start = i - 1;
                let rest = text.get(i..).unwrap_or_default();
                i += rest
                    .iter()
                    .take_while(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .count();
                let lexeme = &text[start..i];
                if lexeme.len() > 18 || long_exponent(lexeme) {
                    plain_numbers = false;
                }
            }
        }
    }
    Outline {
        members,
        depth: deepest,
        plain_numbers,
        first,
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of the lowest zero byte of `w` (and perhaps of bytes above it), or 0.
fn zero_byte(w: u64) -> u64 {
    w.wrapping_sub(ONES) & !w & HIGHS
}

/// The offset just past the closing quote of the string whose content starts at `from` (the
/// end of the text when it never closes). Eight bytes at a time while no quote or backslash is
/// among them: tool arguments are mostly short strings, where a call to `memchr` costs more
/// than the search.
fn string_end(text: &[u8], mut from: usize) -> usize {
    loop {
        while let Some(chunk) = text.get(from..from + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let w = u64::from_le_bytes(word);
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
            Some(b'"') => return from + 1,
            // A backslash escapes the next byte, whatever it is; in valid text a `\u` is
            // followed by four hex digits, which hold no quote or backslash.
            Some(b'\\') => {
                from += if text.get(from + 1) == Some(&b'u') {
                    6
                } else {
                    2
                }
            }
            Some(_) => from += 1,
            None => return text.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_members_outside_strings_only() {
        let o = outline(br#" {"a:b": "c:d", "e\":": [1, {"f": "\\"}], "g": {}} "#);
        assert_eq!(o.members, 4);
        assert_eq!(o.depth, 3);
        assert_eq!(o.first, Some(b'{'));
        assert!(o.plain_numbers);
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
    fn any_bytes_are_read_safely() {
        for text in [&b""[..], b"\"", b"\"\\", b"}}]]", b"\xff\xfe:", b"{\"a\\"] {
            let o = outline(text);
            assert!(o.depth <= text.len());
        }
        assert_eq!(outline(b"   ").first, None);
    }
}
