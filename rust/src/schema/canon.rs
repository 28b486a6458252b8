//! Canonical JSON values for `enum`/`const` members that are objects or arrays, and the small
//! builder that reconstructs such a value from scanner events.
//!
//! Design notes:
//! - JSON Schema equality is structural with numbers compared by value (`1.0 == 1`) and object
//!   members unordered. Canonical form (exact decimals, members sorted by key) makes it plain
//!   `==`.
//! - Only container-valued `enum`/`const` need this, which tool schemas rarely use, so the
//!   builder allocates freely: it runs only while such a value is being read. Scalars are
//!   compared without building anything (string trie, decimals, flags).

use super::decimal::Decimal;
use crate::visit::ValueKind;

/// A JSON value in canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Canon {
    Null,
    Bool(bool),
    Num(Decimal),
    Str(Box<str>),
    Arr(Vec<Canon>),
    /// Members sorted by key.
    Obj(Vec<(Box<str>, Canon)>),
}

impl Canon {
    /// Converts a schema value. Numbers keep their exact value (`arbitrary_precision`).
    pub fn from_json(v: &serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Self::Null,
            serde_json::Value::Bool(b) => Self::Bool(*b),
            serde_json::Value::Number(n) => {
                Decimal::parse(&n.to_string()).map_or(Self::Null, Self::Num)
            }
            serde_json::Value::String(s) => Self::Str(s.as_str().into()),
            serde_json::Value::Array(a) => Self::Arr(a.iter().map(Self::from_json).collect()),
            serde_json::Value::Object(o) => {
                let mut members: Vec<(Box<str>, Canon)> = o
                    .iter()
                    .map(|(k, v)| (k.as_str().into(), Self::from_json(v)))
                    .collect();
                members.sort_by(|a, b| a.0.cmp(&b.0));
                Self::Obj(members)
            }
        }
    }

    /// Whether some reader takes `other`, a value read from the arguments, for `self`, a
    /// schema constant, with each number read as [`Decimal::read_as_this`] has it.
    ///
    /// `jsonschema` compares the floats Python reads, to which `[0.1000000000000000001]` is
    /// `[0.1]`, but reads an integer as an exact `int`: `[12345678901234567891]` is not
    /// `[12345678901234567890]` to it. A value this refuses is refused by every reading (the
    /// pre-check reports only those). A scalar `enum` is judged alike (`float_reading_fails`).
    pub fn read_as_this(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Num(a), Self::Num(b)) => {
                let x = b.as_ref().to_f64();
                let exact = (!b.written_int()).then(|| Decimal::of_f64(x)).flatten();
                a == b || a.read_as_this(x, exact.as_ref())
            }
            (Self::Arr(a), Self::Arr(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.read_as_this(y))
            }
            (Self::Obj(a), Self::Obj(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((ka, va), (kb, vb))| ka == kb && va.read_as_this(vb))
            }
            _ => self == other,
        }
    }
}

#[derive(Debug)]
enum Partial {
    Arr(Vec<Canon>),
    Obj(Vec<(Box<str>, Canon)>, Box<str>),
}

/// Rebuilds container values from events while a container `enum`/`const` needs them.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    stack: Vec<Partial>,
}

impl Builder {
    pub fn is_active(&self) -> bool {
        !self.stack.is_empty()
    }

    pub fn begin(&mut self, kind: ValueKind) {
        self.stack.push(match kind {
            ValueKind::Object => Partial::Obj(Vec::new(), "".into()),
            _ => Partial::Arr(Vec::new()),
        });
    }

    pub fn key(&mut self, key: &str) {
        if let Some(Partial::Obj(_, k)) = self.stack.last_mut() {
            *k = key.into();
        }
    }

    /// Adds a completed value to the open container.
    pub fn push(&mut self, value: Canon) {
        match self.stack.last_mut() {
            Some(Partial::Arr(items)) => items.push(value),
            Some(Partial::Obj(members, key)) => members.push((std::mem::take(key), value)),
            None => {}
        }
    }

    /// Closes the innermost container and returns it.
    pub fn end(&mut self) -> Option<Canon> {
        Some(match self.stack.pop()? {
            Partial::Arr(items) => Canon::Arr(items),
            Partial::Obj(mut members, _) => {
                // With a last-wins duplicate-key policy the later member counts: reverse, then
                // a stable sort keeps it first among equal keys, and dedup keeps the first.
                members.reverse();
                members.sort_by(|a, b| a.0.cmp(&b.0));
                members.dedup_by(|a, b| a.0 == b.0);
                Canon::Obj(members)
            }
        })
    }
}
