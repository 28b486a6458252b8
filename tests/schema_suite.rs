//! The schema pre-check through the real scanner: the JSON-Schema-Test-Suite (draft 2020-12) for
//! the keywords we pre-check (and, for no early rejection, those left to validation), fed at
//! every split point, plus split-invariance property tests.
//!
//! The suite is read from `../shared/json-schema-test-suite/` next to the crate (never copied
//! into the repository). For every case whose schema compiles with no unsupported keyword, a
//! `valid: true` instance must get no error (no early rejection) and a `valid: false` one must
//! get one; when the schema has unsupported keywords only the first half is asserted (the
//! pre-check may accept more, never less). Errors must be identical for every split.

use std::path::PathBuf;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};
use toolwire::error::Error;
use toolwire::scanner::Scanner;
use toolwire::schema::{Checker, ToolSchema};

/// The suite files of the keywords the pre-check implements.
const FILES: &[&str] = &[
    "type",
    "properties",
    "additionalProperties",
    "required",
    "enum",
    "const",
    "allOf",
    "anyOf",
    "oneOf",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "patternProperties",
    "ref",
    "defs",
    "boolean_schema",
    // Keywords the pre-check leaves to the final validation: only the first half is asserted
    // (a valid instance gets no error), which guards the loosening they need
    // (`$anchor` and `$dynamicRef` targets,
    // `unevaluatedProperties` next to `properties`, ...).
    "anchor",
    "contains",
    "content",
    "default",
    "dependentRequired",
    "dependentSchemas",
    "dynamicRef",
    "if-then-else",
    "infinite-loop-detection",
    "maxContains",
    "maxProperties",
    "minContains",
    "minProperties",
    "not",
    "propertyNames",
    "refRemote",
    "unevaluatedItems",
    "unevaluatedProperties",
    "uniqueItems",
    // vocabulary.json is left out: a custom meta-schema that drops the validation vocabulary
    // (so `minimum` asserts nothing) is not something a tool schema does.
    // format.json is left out on purpose: 2020-12 makes `format` an annotation by default and
    // the suite expects every instance to pass, while tool schemas want formats asserted. The
    // format assertions have their own tests in `rust/src/schema/format.rs` and below.
];

/// Cases (by `file: case description`) whose invalid instances the pre-check cannot reject,
/// each with the reason. Their valid instances are still checked for no early rejection.
const CANNOT_REJECT: &[(&str, &str)] = &[
    // Fetches a meta-schema by URL; remote references are not resolved.
    ("defs", "validate definition against metaschema"),
];

fn suite_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/json-schema-test-suite/draft2020-12");
    assert!(
        dir.is_dir(),
        "JSON-Schema-Test-Suite not found at {}: CI provides it as ../shared/json-schema-test-suite next to the repository",
        dir.display()
    );
    dir
}

/// Scans `text` in two pieces cut at `cut` (or whole when `cut` is `None`) with a checker.
fn check(schema: &Arc<ToolSchema>, text: &[u8], cut: Option<usize>) -> Vec<Error> {
    let mut checker = Checker::new(Arc::clone(schema));
    let mut scanner = Scanner::default();
    match cut {
        Some(k) => {
            scanner.push_with(&text[..k], &mut checker);
            scanner.push_with(&text[k..], &mut checker);
        }
        None => {
            scanner.push_with(text, &mut checker);
        }
    }
    assert!(
        scanner.finish_with(&mut checker).is_ok(),
        "the scanner accepts {}",
        String::from_utf8_lossy(text)
    );
    checker.finish(text.len()).to_vec()
}

/// Scans `text` cut at every position in `cuts`.
fn check_chunks(schema: &Arc<ToolSchema>, text: &[u8], cuts: &[usize]) -> Vec<Error> {
    let mut checker = Checker::new(Arc::clone(schema));
    let mut scanner = Scanner::default();
    let mut last = 0;
    for &c in cuts {
        let c = c.clamp(last, text.len());
        scanner.push_with(&text[last..c], &mut checker);
        last = c;
    }
    scanner.push_with(&text[last..], &mut checker);
    let _ = scanner.finish_with(&mut checker);
    checker.finish(text.len()).to_vec()
}

#[test]
fn json_schema_test_suite() {
    let dir = suite_dir();
    let mut failures: Vec<String> = Vec::new();
    let mut instances = 0;
    for file in FILES {
        let path = dir.join(format!("{file}.json"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let groups: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for group in groups.as_array().into_iter().flatten() {
            let description = group["description"].as_str().unwrap_or_default();
            let (schema, unsupported) = match ToolSchema::compile(&group["schema"]) {
                Ok(compiled) => compiled,
                Err(e) => {
                    failures.push(format!("{file}: {description}: does not compile: {e}"));
                    continue;
                }
            };
            let exact = unsupported.is_empty() && !CANNOT_REJECT.contains(&(file, description));
            let schema = Arc::new(schema);
            for test in group["tests"].as_array().into_iter().flatten() {
                instances += 1;
                let data = serde_json::to_vec(&test["data"]).expect("suite data serialises");
                let valid = test["valid"].as_bool().unwrap_or(true);
                let name = format!(
                    "{file}: {description}: {}",
                    test["description"].as_str().unwrap_or_default()
                );
                let whole = check(&schema, &data, None);
                if valid && !whole.is_empty() {
                    failures.push(format!("{name}: valid instance rejected: {}", whole[0]));
                    continue;
                }
                if !valid && exact && whole.is_empty() {
                    failures.push(format!("{name}: invalid instance accepted"));
                    continue;
                }
                for k in 0..=data.len() {
                    if check(&schema, &data, Some(k)) != whole {
                        failures.push(format!("{name}: different errors when split at {k}"));
                        break;
                    }
                }
            }
        }
    }
    assert!(instances > 500, "only {instances} suite instances were run");
    assert!(
        failures.is_empty(),
        "{} suite failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn tool_schema() -> Arc<ToolSchema> {
    let schema = json!({
        "type": "object",
        "$defs": {
            "item": {"type": "object", "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"},
                "qty": {"type": "integer", "minimum": 1, "maximum": 99},
                "price": {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0}
            }, "required": ["sku", "qty"], "additionalProperties": false}
        },
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 12},
            "priority": {"enum": ["low", "medium", "high"]},
            "when": {"type": "string", "format": "date-time"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1, "maxItems": 3},
            "note": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]},
            "mode": {"oneOf": [{"const": "fast"}, {"type": "integer"}]}
        },
        "required": ["title", "priority"],
        "additionalProperties": false
    });
    Arc::new(ToolSchema::compile(&schema).expect("compiles").0)
}

/// Instances that look like tool arguments: mostly the right keys and values, some wrong.
fn argument_strategy() -> impl Strategy<Value = Value> {
    let text = prop_oneof![
        Just("low".to_owned()),
        Just("high".to_owned()),
        Just("fast".to_owned()),
        Just("2024-05-01T10:00:00Z".to_owned()),
        Just("AB-12".to_owned()),
        "[a-zé\"\\\\/\u{1F600}\n]{0,14}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..120).prop_map(|n| json!(n)),
        (0u32..3000).prop_map(|n| json!(f64::from(n) / 100.0)),
        text.prop_map(Value::String),
    ];
    let key = prop_oneof![
        Just("title".to_owned()),
        Just("priority".to_owned()),
        Just("when".to_owned()),
        Just("items".to_owned()),
        Just("note".to_owned()),
        Just("mode".to_owned()),
        Just("sku".to_owned()),
        Just("qty".to_owned()),
        Just("price".to_owned()),
        "[a-z~/]{0,6}",
    ];
    leaf.prop_recursive(4, 40, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_splits_give_the_same_errors(
        value in argument_strategy(),
        cuts in prop::collection::vec(0usize..400, 0..8),
        pretty in any::<bool>(),
    ) {
        let schema = tool_schema();
        let text = if pretty { serde_json::to_vec_pretty(&value) } else { serde_json::to_vec(&value) }.unwrap();
        let mut cuts = cuts;
        cuts.sort_unstable();
        let whole = check(&schema, &text, None);
        prop_assert_eq!(check_chunks(&schema, &text, &cuts), whole.clone());
        let bytewise: Vec<usize> = (0..text.len()).collect();
        prop_assert_eq!(check_chunks(&schema, &text, &bytewise), whole);
    }

    #[test]
    fn prefixes_report_a_subset_of_the_final_errors(value in argument_strategy(), cut in 0usize..400) {
        // What was reported on a prefix is never taken back: errors only accumulate.
        let schema = tool_schema();
        let text = serde_json::to_vec(&value).unwrap();
        let cut = cut.min(text.len());
        let mut checker = Checker::new(Arc::clone(&schema));
        let mut scanner = Scanner::default();
        scanner.push_with(&text[..cut], &mut checker);
        let early: Vec<(usize, String)> = checker.errors().iter().map(|e| (e.offset, e.path.clone())).collect();
        scanner.push_with(&text[cut..], &mut checker);
        let _ = scanner.finish_with(&mut checker);
        let last: Vec<(usize, String)> = checker.errors().iter().map(|e| (e.offset, e.path.clone())).collect();
        prop_assert!(early.iter().all(|e| e.0 <= cut));
        // A key or string error may complete its path when the key closes; offsets stay.
        prop_assert_eq!(early.iter().map(|e| e.0).collect::<Vec<_>>(), last.iter().take(early.len()).map(|e| e.0).collect::<Vec<_>>());
    }
}

#[test]
fn tool_schema_examples() {
    let schema = tool_schema();
    let errs = |t: &str| check(&schema, t.as_bytes(), None);
    assert!(errs(r#"{"title":"Ship","priority":"high","items":[{"sku":"AB-1","qty":2,"price":19.99}],"note":null,"mode":3}"#).is_empty());
    assert!(errs(
        r#"{"title":"Ship","priority":"high","when":"2024-05-01T10:00:00+02:00","mode":"fast"}"#
    )
    .is_empty());
    let e = errs(r#"{"title":"Ship","priority":"high","items":[{"sku":"ab-1","qty":2}]}"#);
    assert_eq!(
        (
            e[0].path.as_str(),
            e[0].detail.as_ref().unwrap().keyword.as_str()
        ),
        ("/items/0/sku", "pattern")
    );
    let e = errs(
        r#"{"title":"Ship","priority":"high","items":[{"sku":"AB-1","qty":2,"price":1.001}]}"#,
    );
    assert_eq!(
        (
            e[0].path.as_str(),
            e[0].detail.as_ref().unwrap().keyword.as_str()
        ),
        ("/items/0/price", "multipleOf")
    );
    let e = errs(r#"{"title":"Ship","priority":"high","when":"2024-05-01"}"#);
    assert_eq!(e[0].detail.as_ref().unwrap().keyword, "format");
    let e = errs(r#"{"title":"Ship","priority":"high","note":"too long"}"#);
    assert_eq!(
        (e[0].offset, e[0].detail.as_ref().unwrap().keyword.as_str()),
        (47, "maxLength")
    );
}
