//! The set of tools a stream may call, shared (in an `Arc`) by every stream.
//!
//! Design notes:
//! - A `BTreeMap` keeps names sorted, so [`ToolRegistry::name_viable`] (can this streamed name
//!   prefix still become a registered tool?) is one range lookup instead of a scan.
//! - Immutable once shared: registration happens before streaming starts, so readers need no
//!   lock; `Arc<ToolSchema>` lets a checker outlive a registry that is being replaced.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{SchemaError, ToolSchema, Unsupported};

/// Compiled schemas by tool name. `Send + Sync`; build it, then share it.
#[derive(Debug, Default, Clone)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<ToolSchema>>,
    /// How many of the tools have secret values.
    secret_tools: usize,
}

impl ToolRegistry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Compiles `schema` and registers it under `name`, replacing an earlier tool of that name.
    ///
    /// # Errors
    /// The [`SchemaError`] of a malformed schema; the registry is then unchanged.
    pub fn add(
        &mut self,
        name: &str,
        schema: &serde_json::Value,
    ) -> Result<Vec<Unsupported>, SchemaError> {
        self.add_with_secrets(name, schema, &[])
    }

    /// [`Registry::add`], with the JSON Pointers of the tool's secret values (see
    /// [`ToolSchema::set_secrets`]).
    ///
    /// # Errors
    /// The [`SchemaError`] of a malformed schema; the registry is then unchanged.
    pub fn add_with_secrets(
        &mut self,
        name: &str,
        schema: &serde_json::Value,
        secrets: &[&str],
    ) -> Result<Vec<Unsupported>, SchemaError> {
        let (mut compiled, unsupported) = ToolSchema::compile(schema)?;
        compiled.set_secrets(secrets.iter().copied());
        self.secret_tools += usize::from(compiled.has_secrets());
        if let Some(replaced) = self.tools.insert(name.to_owned(), Arc::new(compiled)) {
            self.secret_tools -= usize::from(replaced.has_secrets());
        }
        Ok(unsupported)
    }

    /// The compiled schema of a tool.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Arc<ToolSchema>> {
        self.tools.get(name).cloned()
    }

    /// True when some registered name starts with `prefix` (every name does for `""`).
    #[must_use]
    pub fn name_viable(&self, prefix: &str) -> bool {
        self.tools
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .next()
            .is_some_and(|(name, _)| name.starts_with(prefix))
    }

    /// True when some tool has secret values.
    #[must_use]
    pub fn has_secrets(&self) -> bool {
        self.secret_tools > 0
    }

    /// Whether a call whose name so far is `name`, a name that may still grow, may turn out to
    /// call a tool with secret values that `name` alone does not tell: some tool with secret
    /// values has a name that starts with `name`, and `name` is not the only tool name that
    /// does (that one a call cannot outgrow: a piece that makes it no tool's name starts
    /// another call).
    #[must_use]
    pub fn secrets_may_follow(&self, name: &str) -> bool {
        let mut named = self
            .tools
            .range::<str, _>((std::ops::Bound::Included(name), std::ops::Bound::Unbounded))
            .take_while(|(tool, _)| tool.starts_with(name));
        let Some((first, schema)) = named.next() else {
            return false;
        };
        let mut secrets = schema.has_secrets();
        let only_itself = first == name && {
            match named.next() {
                None => true,
                Some((_, schema)) => {
                    secrets |= schema.has_secrets();
                    false
                }
            }
        };
        !only_itself && (secrets || named.any(|(_, schema)| schema.has_secrets()))
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.tools.keys().map(String::as_str)
    }

    /// How many tools are registered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is registered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shared<T: Send + Sync>(_: &T) {}

    #[test]
    fn a_deep_chain_of_references_compiles_from_a_thread_with_little_stack() {
        let chain = |levels: usize| {
            let mut defs = serde_json::Map::new();
            for i in 0..levels {
                let next = format!("#/$defs/d{}", i + 1);
                defs.insert(format!("d{i}"), json!({"items": {"$ref": next}}));
            }
            defs.insert(format!("d{levels}"), json!({}));
            json!({"properties": {"a": {"$ref": "#/$defs/d0"}}, "$defs": defs})
        };
        // Just within the depth limit, and past it: from a thread as small as some systems
        // give by default, which the compiler's recursion would overflow. Through a registry
        // and through the compiler's own public entry point.
        for (levels, compiles) in [(120, true), (250, false)] {
            let schema = chain(levels);
            let small = |compile: fn(&serde_json::Value) -> bool| {
                let schema = schema.clone();
                std::thread::Builder::new()
                    .stack_size(256 << 10)
                    .spawn(move || compile(&schema))
                    .unwrap()
                    .join()
                    .ok()
            };
            let added = small(|s| ToolRegistry::new().add("t", s).is_ok());
            assert_eq!(added, Some(compiles), "{levels} levels, registry");
            let compiled = small(|s| ToolSchema::compile(s).is_ok());
            assert_eq!(compiled, Some(compiles), "{levels} levels, compile");
        }
    }

    #[test]
    fn secrets_may_follow_a_name_that_can_still_become_a_secret_tools() {
        let mut r = ToolRegistry::new();
        let schema = json!({"properties": {"key": {"type": "string"}}});
        r.add("get", &schema).unwrap();
        r.add("get_time", &schema).unwrap();
        assert!(!r.has_secrets() && !r.secrets_may_follow(""));
        r.add_with_secrets("login", &schema, &["/key"]).unwrap();
        r.add_with_secrets("get_key", &schema, &["/key"]).unwrap();
        assert!(r.has_secrets());
        // A prefix of a secret tool's name, or a tool another tool's name extends.
        for name in ["", "lo", "get", "get_"] {
            assert!(r.secrets_may_follow(name), "{name}");
        }
        // No secret tool ahead, or the only tool the name can still be.
        for name in ["get_t", "get_time", "login", "loginx", "z"] {
            assert!(!r.secrets_may_follow(name), "{name}");
        }
        // Replaced without secrets, a tool no longer counts.
        r.add("login", &schema).unwrap();
        r.add("get_key", &schema).unwrap();
        assert!(!r.has_secrets() && !r.secrets_may_follow("lo"));
    }

    #[test]
    fn names_and_prefixes() {
        let mut r = ToolRegistry::new();
        assert!(!r.name_viable(""));
        r.add("get_weather", &json!({"type": "object"})).unwrap();
        r.add("get_time", &json!(true)).unwrap();
        r.add("search", &json!({"type": "object", "not": {}}))
            .map(|u| assert_eq!(u.len(), 1))
            .unwrap();
        assert!(r.name_viable(""));
        assert!(r.name_viable("get_"));
        assert!(r.name_viable("get_weather"));
        assert!(!r.name_viable("get_weatherx"));
        assert!(!r.name_viable("z"));
        assert!(r.get("search").is_some());
        assert!(r.get("sea").is_none());
        assert_eq!(
            r.names().collect::<Vec<_>>(),
            ["get_time", "get_weather", "search"]
        );
        assert!(r.add("bad", &json!({"type": 5})).is_err());
        assert_eq!(r.len(), 3);
        shared(&r);
    }
}
