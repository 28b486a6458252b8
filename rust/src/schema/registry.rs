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
        self.tools.insert(name.to_owned(), Arc::new(compiled));
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
