//! Glue between the assembler and the compiled tool schemas: which tools exist, and one
//! pre-check per call driven by the call's scanner events.
//!
//! A call's checker is attached once its name is known. When the name arrives after some
//! argument bytes (quirk 10) or grows by a fragment, the received bytes are replayed through a
//! fresh scanner into a fresh checker: offsets are absolute, so the result is the same as if the
//! checker had been there from the first byte.

use std::sync::Arc;

use crate::error::{Error, ErrorKind, SchemaDetail};
use crate::scanner::{DuplicateKeys, ScanConfig, Scanner};
use crate::schema::{Checker, SchemaError, ToolRegistry, Unsupported};
use crate::secret_keys::SeenSecrets;
use crate::value::{build_value, BuildOptions};
use crate::visit::Visitor;

/// The registered tools, shared (behind an `Arc`) by every stream and thread.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    tools: ToolRegistry,
}

impl Registry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a tool that takes any arguments (no pre-check beyond its name).
    pub fn add_name(&mut self, name: &str) {
        let _ = self.tools.add(name, &serde_json::Value::Bool(true));
    }

    /// Compiles and registers a tool's JSON Schema; returns the keywords left to the final
    /// validation.
    ///
    /// # Errors
    /// A malformed schema.
    pub fn add(
        &mut self,
        name: &str,
        schema: &serde_json::Value,
    ) -> Result<Vec<Unsupported>, SchemaError> {
        self.tools.add(name, schema)
    }

    /// [`Registry::add`], with the JSON Pointers of the values whose text no violation may
    /// show (`*` matches any token); see [`crate::schema::ToolSchema::set_secrets`].
    ///
    /// # Errors
    /// A malformed schema.
    pub fn add_with_secrets(
        &mut self,
        name: &str,
        schema: &serde_json::Value,
        secrets: &[&str],
    ) -> Result<Vec<Unsupported>, SchemaError> {
        self.tools.add_with_secrets(name, schema, secrets)
    }

    /// True when a tool of that exact name is registered.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.tools.get(name).is_some()
    }

    /// True when some registered name starts with `prefix`.
    #[must_use]
    pub fn name_viable(&self, prefix: &str) -> bool {
        self.tools.name_viable(prefix)
    }

    /// True when some registered tool has secret values.
    #[must_use]
    pub fn has_secrets(&self) -> bool {
        self.tools.has_secrets()
    }

    /// See [`ToolRegistry::secrets_may_follow`].
    #[must_use]
    pub fn secrets_may_follow(&self, name: &str) -> bool {
        self.tools.secrets_may_follow(name)
    }

    /// Registered names, sorted.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.tools.names().map(str::to_owned).collect()
    }

    /// Checks a complete argument text against a tool, for calls whose text never streamed
    /// (empty arguments become `{}`).
    #[must_use]
    pub fn check_complete(&self, name: &str, text: &[u8]) -> Option<Error> {
        self.check_text(name, text, DuplicateKeys::Error)
    }

    /// [`Registry::check_complete`] for a text read under a duplicate-key policy: under
    /// `last_wins`, the finding is about the value the text stands for (see
    /// [`CallCheck::first_error`]).
    #[must_use]
    pub fn check_text(
        &self,
        name: &str,
        text: &[u8],
        duplicate_keys: DuplicateKeys,
    ) -> Option<Error> {
        let config = ScanConfig {
            duplicate_keys,
            ..ScanConfig::default()
        };
        self.check_with(name, text, config)
    }

    /// [`Registry::check_text`] under the limits a call's assembler read it with: a text
    /// deeper, longer or with longer numbers than the defaults allow, which that assembler
    /// took, is checked to its end instead of stopping where the default limits would.
    #[must_use]
    pub fn check_with(&self, name: &str, text: &[u8], config: ScanConfig) -> Option<Error> {
        let (check, scanner) = self.checked(name, text, config);
        check.first_error(self, name, text, scanner.repeated_keys(), &config)
    }

    /// A complete text pushed through a fresh pre-check and scanner, and finished.
    fn checked(&self, name: &str, text: &[u8], config: ScanConfig) -> (CallCheck, Scanner) {
        let mut check = CallCheck::new(self, name, b"", &config);
        let mut scanner = Scanner::new(config);
        check.push(&mut scanner, text);
        let _ = check.finish(&mut scanner);
        (check, scanner)
    }

    /// The first violation of the value a complete text stands for when its objects repeat
    /// keys and the last of each wins: the text as written may break the schema only in a
    /// value a later duplicate replaced (`{"n": "x", "n": 3}`). The text's own findings are
    /// `written`. When the value breaks the schema, the finding the text had at the same path
    /// for the same keyword is given, the last such (it is about the occurrence that won), so
    /// its offset points into the text the model sent; failing that, the value's own finding,
    /// at the end of the text, where it became certain.
    fn recheck_last_wins<'e>(
        &self,
        name: &str,
        text: &[u8],
        written: impl Iterator<Item = &'e Error>,
        limits: &ScanConfig,
    ) -> Option<Error> {
        let written: Vec<&Error> = written.collect();
        let Some(value) = build_value(text, BuildOptions::for_complete(true)) else {
            return written.first().map(|e| (*e).clone());
        };
        // The value under the limits the text was read with (its own keys are unique).
        let config = ScanConfig {
            duplicate_keys: DuplicateKeys::Error,
            ..*limits
        };
        let (check, _) = self.checked(name, &value.to_json(), config);
        let found = check.errors().next()?;
        let same = |e: &&&Error| {
            e.path == found.path
                && e.kind == found.kind
                && e.detail.as_ref().map(|d| &d.keyword)
                    == found.detail.as_ref().map(|d| &d.keyword)
        };
        Some(match written.iter().rev().find(same) {
            Some(e) => (*e).clone(),
            None => {
                let mut e = found.clone();
                e.offset = text.len();
                e
            }
        })
    }
}

/// The pre-check of one call.
#[derive(Debug)]
pub struct CallCheck {
    name_error: Option<Error>,
    /// The name is no tool's, though some tool's name starts with it (`search` beside
    /// `search_web`): an error once the name is final ([`CallCheck::name_is_final`]), since
    /// until then more of it may come.
    unregistered: bool,
    checker: Option<Checker>,
    /// Under the `last_wins` policy a later duplicate key can replace any member's value, so
    /// no violation of the arguments is certain before the end: only the name's is.
    provisional: bool,
    /// The secret values complete so far, read from the progress items handed out (see
    /// [`crate::secret_keys`]).
    seen: SeenSecrets,
}

impl CallCheck {
    /// The compiled schema of the call's tool, once its name is a registered one.
    #[must_use]
    pub fn schema(&self) -> Option<&crate::schema::ToolSchema> {
        self.checker.as_ref().map(|checker| &**checker.schema())
    }

    /// The compiled schema of the call's tool when it has secret values, and the secret
    /// values seen so far by the progress items handed out.
    pub fn secrets_mut(&mut self) -> Option<(&crate::schema::ToolSchema, &mut SeenSecrets)> {
        let schema = self.checker.as_ref().map(|checker| &**checker.schema())?;
        schema.has_secrets().then_some((schema, &mut self.seen))
    }

    /// Starts checking a call to `name`, catching up on the argument text already received.
    #[must_use]
    pub fn new(registry: &Registry, name: &str, received: &[u8], config: &ScanConfig) -> Self {
        // One lookup for a registered name, the usual case; the range lookup only otherwise.
        let schema = registry.tools.get(name);
        let viable = schema.is_some() || registry.name_viable(name);
        let name_error = (!viable).then(|| unknown_tool(name, registry));
        // The error is made only if it is ever said: a name streamed in pieces makes a check
        // per piece, each of them unregistered, and the error lists every tool's name.
        let unregistered = viable && schema.is_none();
        let checker = schema.filter(|s| !s.is_trivial()).map(Checker::new);
        let mut check = Self {
            name_error,
            unregistered,
            checker,
            provisional: config.duplicate_keys == DuplicateKeys::LastWins,
            seen: SeenSecrets::default(),
        };
        if !received.is_empty() {
            let mut replay = Scanner::new(*config);
            check.push(&mut replay, received);
        }
        check
    }

    /// The call's name, `name` (the one this check was made for), can no longer grow (its
    /// arguments began, or the call ended): a name no tool has is an error from now on, though
    /// some tool's name starts with it.
    pub fn name_is_final(&mut self, registry: &Registry, name: &str) {
        if std::mem::take(&mut self.unregistered) {
            self.name_error
                .get_or_insert_with(|| unknown_tool(name, registry));
        }
    }

    /// True when there is a schema to check the arguments against.
    #[must_use]
    pub fn has_schema(&self) -> bool {
        self.checker.is_some()
    }

    /// Pushes bytes through `scanner` with this check (and no other visitor).
    pub fn push(&mut self, scanner: &mut Scanner, bytes: &[u8]) {
        match &mut self.checker {
            Some(c) => {
                scanner.feed_with(bytes, c);
                c.redact_secrets();
            }
            None => scanner.feed(bytes),
        }
    }

    /// Pushes bytes through `scanner` with this check and another visitor.
    pub fn push_also<V: Visitor>(&mut self, scanner: &mut Scanner, bytes: &[u8], other: &mut V) {
        match &mut self.checker {
            Some(c) => {
                scanner.feed_with(bytes, &mut crate::visit::Both(&mut *c, other));
                c.redact_secrets();
            }
            None => scanner.feed_with(bytes, other),
        }
    }

    /// [`Scanner::complete_top_level_number`] with this check and another visitor.
    pub fn complete_top_level_number_also<V: Visitor>(
        &mut self,
        scanner: &mut Scanner,
        other: &mut V,
    ) {
        match &mut self.checker {
            Some(c) => {
                scanner.complete_top_level_number(&mut crate::visit::Both(&mut *c, other));
                c.redact_secrets();
            }
            None => scanner.complete_top_level_number(other),
        }
    }

    /// Ends the text: completes a pending number and applies the end-of-value rules.
    pub fn finish(&mut self, scanner: &mut Scanner) -> Result<(), Error> {
        let result = match &mut self.checker {
            Some(c) => scanner.finish_with(c),
            None => scanner.finish(),
        };
        if let Some(c) = &mut self.checker {
            c.finish(scanner.text().len());
            c.redact_secrets();
        }
        result
    }

    /// Violations found so far, earliest first (an unknown tool name first of all).
    pub fn errors(&self) -> impl Iterator<Item = &Error> {
        self.name_error
            .iter()
            .chain(self.checker.iter().flat_map(|c| c.errors()))
    }

    /// Violations for early reporting (see [`Checker::early_errors`]): each reads the same
    /// however the stream was cut. Borrowed, so draining after every fragment copies only the
    /// errors not reported yet. Under `last_wins`, only the name's (see `provisional`).
    pub fn early_errors(&self) -> impl Iterator<Item = &Error> {
        let checker = self.checker.as_ref().filter(|_| !self.provisional);
        self.name_error
            .iter()
            .chain(checker.into_iter().flat_map(Checker::early_errors))
    }

    /// True when some violation found so far is certain: no later input can remove it (see
    /// `provisional`).
    #[must_use]
    pub fn has_certain_error(&self) -> bool {
        self.name_error.is_some()
            || (!self.provisional
                && self
                    .checker
                    .as_ref()
                    .is_some_and(|c| !c.errors().is_empty()))
    }

    /// The call's violation once its text (`text`, complete) has been pushed and finished:
    /// the first found, unless the scan saw `repeated_keys` under `last_wins`, where a finding
    /// may concern a value a later duplicate replaced; see [`Registry::recheck_last_wins`],
    /// which reads that value under `limits`, those the text was read with.
    #[must_use]
    pub fn first_error(
        &self,
        registry: &Registry,
        name: &str,
        text: &[u8],
        repeated_keys: bool,
        limits: &ScanConfig,
    ) -> Option<Error> {
        let first = self.errors().next()?;
        if !(self.provisional && repeated_keys) || self.name_error.is_some() {
            return Some(first.clone());
        }
        registry.recheck_last_wins(name, text, self.errors(), limits)
    }
}

/// An `unknown_tool` error listing the registered names.
#[cold]
#[must_use]
pub fn unknown_tool(name: &str, registry: &Registry) -> Error {
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
    e
}

/// A shared registry handle.
pub type SharedRegistry = Arc<Registry>;
