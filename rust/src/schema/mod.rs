//! The schema pre-check: a JSON Schema subset compiled once per tool ([`ToolSchema`], held in a
//! shared [`ToolRegistry`]) and checked while the arguments stream in ([`Checker`], one per
//! call, driven by the scanner's [`Visitor`](crate::visit::Visitor) events).
//!
//! Design notes:
//! - The pre-check is an early warning, not the validator: the final validation (Pydantic on
//!   the finished text) decides. So the one hard rule is soundness: the pre-check never rejects
//!   an instance the schema accepts, and it speaks at the earliest byte at which no continuation
//!   can make the value valid. Anything it cannot decide soundly it ignores and reports as
//!   [`Unsupported`] at compile time.
//! - Offsets come from scanner events, which are absolute, and every decision is made per
//!   decoded byte, so errors are identical for every split of the input.
//! - Layout: `compile` (schema → arena), `check` (events → errors), and one module per
//!   building block (`decimal`, `trie`, `format`, `pattern`, `canon`, `registry`).

mod canon;
mod check;
mod compile;
mod decimal;
mod format;
pub mod nesting;
mod pattern;
mod registry;
mod trie;

#[cfg(test)]
mod testgen;
#[cfg(test)]
mod tests;

use std::fmt;

pub use check::{Checker, MAX_ERRORS, REDACTED};
pub use pattern::ecma_error as pattern_error;
pub use registry::ToolRegistry;

/// Stack for [`ToolSchema::compile`], which recurses once per level of subschemas (references
/// followed), up to [`nesting::MAX_SCHEMA_DEPTH`] levels at a few KB each (several times more
/// in an unoptimised build): more than the caller's thread may have (128 KB to 512 KB by
/// default for a thread on some systems, where a 250-level chain of references overflowed it
/// and aborted the process). Only the pages used are ever mapped.
const COMPILE_STACK: usize = 32 << 20;

/// A compiled tool schema; build once with [`ToolSchema::compile`] and share it (in an `Arc`)
/// between every call of the tool.
#[derive(Debug)]
pub struct ToolSchema {
    nodes: Vec<compile::Node>,
    root: compile::NodeId,
    unsupported: Vec<Unsupported>,
    /// JSON Pointers of secret values, as escaped tokens; `*` stands for any token (an array
    /// item, an additional property). A violation at or under one shows no value.
    secrets: Vec<Box<[Box<str>]>>,
    /// Buffers of this tool's finished checkers, for its next ones.
    buffers: check::BufferPool,
}

impl ToolSchema {
    /// Compiles `schema`, returning the pre-check and the keywords it ignores.
    ///
    /// The compiler recurses once per level of subschemas (references followed), so it runs on
    /// a thread of its own with room for the deepest schema it accepts ([`COMPILE_STACK`]): a
    /// caller's thread with a small stack cannot be overflowed by a deep schema.
    ///
    /// # Errors
    /// A [`SchemaError`] when the schema is malformed (a keyword with a value of the wrong kind,
    /// a local `$ref` that points nowhere, nesting deeper than 256 levels).
    pub fn compile(schema: &serde_json::Value) -> Result<(Self, Vec<Unsupported>), SchemaError> {
        let compiled = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("toolwire-compile".to_owned())
                .stack_size(COMPILE_STACK)
                .spawn_scoped(scope, || Self::compile_here(schema))
                .ok()
                .map(|handle| handle.join())
        });
        match compiled {
            Some(Ok(result)) => result,
            // The compiler panicked: the same panic, on the caller's thread.
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            // No thread could be had: the caller's own stack is all there is.
            None => Self::compile_here(schema),
        }
    }

    /// [`ToolSchema::compile`] on the caller's stack.
    fn compile_here(schema: &serde_json::Value) -> Result<(Self, Vec<Unsupported>), SchemaError> {
        let compiled = compile::compile(schema)?;
        let unsupported = compiled.unsupported;
        let me = Self {
            nodes: compiled.nodes,
            root: compiled.root,
            unsupported: unsupported.clone(),
            secrets: Vec::new(),
            buffers: check::BufferPool::default(),
        };
        Ok((me, unsupported))
    }

    /// Marks the values at these JSON Pointers secret (`*` matches any one token): a violation
    /// at or under one of them reports `got` as `[redacted]`, so an error shown in a UI or a log
    /// never carries a password the model sent.
    pub fn set_secrets<'a>(&mut self, pointers: impl IntoIterator<Item = &'a str>) {
        self.secrets = pointers
            .into_iter()
            .map(|p| p.split('/').skip(1).map(Box::from).collect())
            .collect();
    }

    /// Whether any value of the tool is secret ([`ToolSchema::set_secrets`]).
    #[must_use]
    pub fn has_secrets(&self) -> bool {
        !self.secrets.is_empty()
    }

    /// Whether the value at `path` (a JSON Pointer) is, or lies inside, a secret one.
    #[must_use]
    pub fn is_secret(&self, path: &str) -> bool {
        if self.secrets.is_empty() {
            return false;
        }
        let tokens: Vec<&str> = path.split('/').skip(1).collect();
        self.secrets.iter().any(|secret| {
            secret.len() <= tokens.len()
                && secret
                    .iter()
                    .zip(&tokens)
                    .all(|(want, got)| &**want == "*" || **want == **got)
        })
    }

    /// The keywords this schema's pre-check ignores (as returned by [`ToolSchema::compile`]).
    #[must_use]
    pub fn unsupported(&self) -> &[Unsupported] {
        &self.unsupported
    }

    /// True when the pre-check can never reject anything (the schema is `true` or `{}`, or
    /// everything in it is unsupported).
    #[must_use]
    pub fn is_trivial(&self) -> bool {
        self.nodes
            .get(self.root as usize)
            .map_or(true, |n| n.trivial)
    }
}

/// A schema keyword the pre-check ignores (the final validation still applies it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unsupported {
    /// The keyword, e.g. `not`, `patternProperties` (for a pattern it cannot run), `format`
    /// (for a format name it does not know), `$ref` (remote or anchor), or the `$ref`, `allOf`, `anyOf` or `oneOf` whose edge
    /// closed a cycle that consumes no input.
    pub keyword: String,
    /// JSON Pointer of the subschema that holds the keyword (`""` for the root).
    pub pointer: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {:?}", self.keyword, self.pointer)
    }
}

/// A malformed schema (misuse: raised to the developer who registered the tool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON Pointer of the offending keyword.
    pub pointer: String,
    /// What is wrong, lowercase.
    pub message: String,
    /// Which kind of fault it is.
    pub kind: SchemaErrorKind,
}

/// What makes a schema one the pre-check cannot compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaErrorKind {
    /// A keyword's value of the wrong kind, a local `$ref` that points nowhere...
    Malformed,
    /// Subschemas, references followed, nest deeper than
    /// [`nesting::MAX_SCHEMA_DEPTH`]: not wrong, too large.
    TooDeep,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{} (at {})", self.message, self.pointer)
        }
    }
}

impl std::error::Error for SchemaError {}

/// Appends one RFC 6901 reference token (`~` as `~0`, `/` as `~1`).
pub(crate) fn push_pointer_token(out: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            _ => out.push(c),
        }
    }
}
