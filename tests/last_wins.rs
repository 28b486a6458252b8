//! Under the `last_wins` duplicate-key policy a call stands for the value with each repeated
//! key's last value, as Python's `json.loads` reads it. The pre-check's verdict must be about
//! that value, not about a value a later duplicate replaced; and while the text streams no
//! violation of the arguments is certain, so none is reported early.

mod common;

use std::sync::Arc;

use common::delta;
use proptest::prelude::*;
use serde_json::json;
use toolwire::{Assembler, AssemblerConfig, DuplicateKeys, ErrorKind, Registry, ScanConfig};

fn registry() -> Arc<Registry> {
    let mut registry = Registry::new();
    let schema = json!({
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "mode": {"enum": ["fast", "slow"]},
            "inner": {
                "type": "object",
                "properties": {"k": {"type": "string", "maxLength": 3}},
                "additionalProperties": false
            }
        },
        "required": ["n"],
        "additionalProperties": false
    });
    registry.add("tool", &schema).expect("schema");
    Arc::new(registry)
}

fn last_wins() -> AssemblerConfig {
    AssemblerConfig {
        scan: ScanConfig {
            duplicate_keys: DuplicateKeys::LastWins,
            ..ScanConfig::default()
        },
        ..AssemblerConfig::default()
    }
}

/// The call's error after streaming `text` in one fragment under `last_wins`, and the errors
/// drained before the end.
fn streamed(text: &str) -> (Option<toolwire::Error>, usize) {
    let mut asm = Assembler::with_tools(last_wins(), registry()).expect("config");
    asm.feed(&delta(Some("tool"), text.as_bytes()))
        .expect("feed");
    let early = asm.drain_errors().len();
    let mut calls = asm.finish().expect("finish");
    (calls.remove(0).error, early)
}

#[test]
fn a_violation_a_later_duplicate_replaced_is_no_violation() {
    for text in [
        r#"{"n": "x", "n": 3}"#,
        r#"{"n": 1, "mode": "warp", "mode": "fast"}"#,
        r#"{"n": 1, "inner": {"zz": 1}, "inner": {"k": "ab"}}"#,
        r#"{"n": 1, "inner": {"k": "abcdef", "k": "a"}}"#,
    ] {
        let (error, early) = streamed(text);
        assert!(error.is_none(), "{text}: {error:?}");
        assert_eq!(early, 0, "{text}");
        let registry = registry();
        assert!(
            registry
                .check_text("tool", text.as_bytes(), DuplicateKeys::LastWins)
                .is_none(),
            "{text}"
        );
        // Read under `error`, the same text breaks the schema before its duplicate.
        assert!(
            registry.check_complete("tool", text.as_bytes()).is_some(),
            "{text}"
        );
    }
}

#[test]
fn a_violation_in_the_last_value_points_at_it() {
    for (text, path, winner) in [
        (r#"{"n": 3, "n": "x"}"#, "/n", r#""n": "x""#),
        (
            r#"{"n": "a", "mode": "fast", "n": "b"}"#,
            "/n",
            r#""n": "b""#,
        ),
        (
            r#"{"n": 1, "inner": {"k": "a"}, "inner": {"k": "long"}}"#,
            "/inner/k",
            r#""k": "long""#,
        ),
    ] {
        let (error, _) = streamed(text);
        let error = error.unwrap_or_else(|| panic!("{text}: no error"));
        assert_eq!(error.kind, ErrorKind::SchemaViolation, "{text}");
        assert_eq!(error.path, path, "{text}");
        // The offset is in the text the model sent, at the occurrence that won.
        let at = text.find(winner).expect("the winner is in the text");
        assert!(
            (at..text.len()).contains(&error.offset),
            "{text}: {}",
            error.offset
        );
    }
}

#[test]
fn a_repeated_unknown_field_stays_unknown_and_other_errors_stay() {
    for text in [
        r#"{"n": 1, "zz": 1, "zz": 2}"#,
        r#"{"n": 1, "n": 2, "zz": 1}"#,
        r#"{"mode": "fast", "mode": "slow"}"#,
    ] {
        let (error, _) = streamed(text);
        assert!(error.is_some(), "{text}");
    }
}

#[test]
fn an_unknown_tool_is_still_reported_early() {
    let mut asm = Assembler::with_tools(last_wins(), registry()).expect("config");
    asm.feed(&delta(Some("nope"), br#"{"n": "#)).expect("feed");
    let early = asm.drain_errors();
    assert_eq!(early.len(), 1, "{early:?}");
    assert_eq!(early[0].1.kind, ErrorKind::UnknownTool);
    assert!(asm.has_certain_error());
}

#[test]
fn under_error_violations_are_still_reported_early() {
    let mut asm = Assembler::with_tools(AssemblerConfig::default(), registry()).expect("config");
    asm.feed(&delta(Some("tool"), br#"{"n": "x""#))
        .expect("feed");
    assert_eq!(asm.drain_errors().len(), 1);
    assert!(asm.has_certain_error());
}

/// An object of members drawn from a few keys and values, some of them wrong for the schema.
fn members() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec!["n", "mode", "inner", "zz"]);
    let value = prop::sample::select(vec![
        "1",
        "\"x\"",
        "\"fast\"",
        "\"warp\"",
        "{\"k\": \"ab\"}",
        "{\"k\": \"abcd\"}",
        "{\"k\": \"a\", \"k\": 1}",
        "null",
    ]);
    prop::collection::vec((key, value), 0..7).prop_map(|members| {
        let inner: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("\"{k}\": {v}"))
            .collect();
        format!("{{{}}}", inner.join(", "))
    })
}

proptest! {
    /// The verdict under `last_wins` is the verdict on the value with each key's last value
    /// (serde_json keeps a repeated key's first position and its last value, as `json.loads`).
    #[test]
    fn the_verdict_is_the_verdict_on_the_last_wins_value(text in members()) {
        let registry = registry();
        let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        let canonical = serde_json::to_vec(&value).expect("serialises");
        let expected = registry.check_complete("tool", &canonical).is_some();
        let checked = registry.check_text("tool", text.as_bytes(), DuplicateKeys::LastWins);
        prop_assert_eq!(checked.is_some(), expected, "{} -> {:?}", text, checked);
        let (error, early) = streamed(&text);
        prop_assert_eq!(error.is_some(), expected, "{} -> {:?}", text, error);
        prop_assert_eq!(early, 0);
    }
}

#[test]
fn the_value_a_repeated_key_leaves_is_checked_under_the_calls_own_limits() {
    // A value deeper than the default limit, which this assembler allows: the value the text
    // stands for was checked under the default limits, stopped at the deep value, and the
    // violation after it (the last `n`) went unseen.
    let mut registry = Registry::new();
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}, "doc": {}},
        "additionalProperties": false
    });
    registry.add("tool", &schema).expect("schema");
    let registry = Arc::new(registry);
    let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
    let config = ScanConfig {
        max_depth: 128,
        duplicate_keys: DuplicateKeys::LastWins,
        ..ScanConfig::default()
    };
    for (text, broken) in [
        (format!(r#"{{"doc": {deep}, "n": 3, "n": "x"}}"#), true),
        (format!(r#"{{"doc": {deep}, "n": "x", "n": 3}}"#), false),
    ] {
        let assembler_config = AssemblerConfig {
            scan: config,
            ..AssemblerConfig::default()
        };
        let mut asm =
            Assembler::with_tools(assembler_config, Arc::clone(&registry)).expect("config");
        asm.feed(&delta(Some("tool"), text.as_bytes()))
            .expect("feed");
        let error = asm.finish().expect("finish").remove(0).error;
        assert_eq!(error.is_some(), broken, "{text}: {error:?}");
        let checked = registry.check_with("tool", text.as_bytes(), config);
        assert_eq!(checked.is_some(), broken, "{text}: {checked:?}");
        if let Some(e) = error {
            assert_eq!(e.kind, ErrorKind::SchemaViolation);
        }
    }
}
