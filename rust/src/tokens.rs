//! Whether two JSON texts are the same tokens: equal once the whitespace between tokens is
//! gone. A provider's final copy of a call's arguments may be re-serialized (`{"a":1}` after
//! deltas that spelled `{"a": 1}`); it is then the same call, and nothing was lost.
//!
//! Design notes:
//! - No validation: inside a string every byte counts (an escape is skipped with the byte it
//!   escapes, so `\"` does not end the string); outside, JSON's four whitespace bytes are
//!   dropped, except that whitespace between two bytes of literals or numbers still separates
//!   them (`[1 2]` is not `[12]`). Two valid texts that compare equal are equal values.
//! - Escapes are compared as written: `"\u0041"` and `"A"` differ. A summary that re-escapes is
//!   rare, and treating it as different only means it is fed as before.

use crate::scanner::is_ws;

/// Whether `a` and `b` are the same JSON tokens (see the module notes).
#[must_use]
pub fn same_tokens(a: &[u8], b: &[u8]) -> bool {
    let mut left = Tokens::new(a);
    let mut right = Tokens::new(b);
    loop {
        match (left.next(), right.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if x == y => {}
            _ => return false,
        }
    }
}

/// The bytes of a JSON text without the whitespace outside strings.
struct Tokens<'a> {
    text: &'a [u8],
    at: usize,
    in_string: bool,
    escaped: bool,
    /// The last byte given was part of a literal or number.
    after_word: bool,
    /// A separating space is owed before the byte read next.
    space: Option<u8>,
}

/// A byte of a literal (`true`) or a number (`-1.5e3`).
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

impl<'a> Tokens<'a> {
    fn new(text: &'a [u8]) -> Self {
        Self {
            text,
            at: 0,
            in_string: false,
            escaped: false,
            after_word: false,
            space: None,
        }
    }
}

impl Iterator for Tokens<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        if let Some(b) = self.space.take() {
            return Some(b);
        }
        let mut skipped = false;
        loop {
            let b = *self.text.get(self.at)?;
            self.at += 1;
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                return Some(b);
            }
            if is_ws(b) {
                skipped = true;
                continue;
            }
            let word = is_word(b);
            let separated = skipped && self.after_word && word;
            self.after_word = word;
            self.in_string = b == b'"';
            if separated {
                self.space = Some(b);
                return Some(b' ');
            }
            return Some(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::same_tokens;

    #[test]
    fn whitespace_between_tokens_does_not_count() {
        assert!(same_tokens(
            b"{\"a\": 1, \"b\": [1, 2]}",
            b"{\"a\":1,\"b\":[1,2]}"
        ));
        assert!(same_tokens(b" {}\n", b"{}"));
        assert!(same_tokens(b"", b"  "));
    }

    #[test]
    fn whitespace_inside_strings_counts() {
        assert!(!same_tokens(b"{\"a\": \"x y\"}", b"{\"a\":\"xy\"}"));
        assert!(!same_tokens(b"{\"a b\": 1}", b"{\"ab\":1}"));
        // An escaped quote does not end the string: the space after it is still inside.
        assert!(!same_tokens(b"{\"a\": \"\\\" x\"}", b"{\"a\":\"\\\"x\"}"));
        assert!(same_tokens(b"{\"a\": \"\\\\\" }", b"{\"a\":\"\\\\\"}"));
    }

    #[test]
    fn different_tokens_differ() {
        assert!(!same_tokens(b"{\"a\": 1}", b"{\"a\": 12}"));
        assert!(!same_tokens(b"{\"a\": 1}", b"{\"a\": 1}{\"a\": 1}"));
        assert!(!same_tokens(b"[1 2]", b"[12]"));
        assert!(same_tokens(b"[1 ,\n 2]", b"[1,2]"));
        assert!(same_tokens(b"[true , null]", b"[true,null]"));
    }
}
