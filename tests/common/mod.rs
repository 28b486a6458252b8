//! Helpers shared by the integration suites.

use toolwire::{Arguments, Delta};

/// A delta of call 0: its name (if any) and a fragment of argument text.
pub fn delta<'a>(name: Option<&'a str>, text: &'a [u8]) -> Delta<'a> {
    Delta {
        index: Some(0),
        id: None,
        name,
        kind: None,
        arguments: Some(Arguments::Text(text)),
        start: false,
    }
}
