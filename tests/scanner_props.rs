//! Property tests of the scanner and value builder, with serde_json as the oracle.

use proptest::prelude::*;
use toolwire::{build_value, BuildOptions, Scanner, Status, Value};

fn from_serde(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Number(n.to_string()),
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(a) => Value::Array(a.iter().map(from_serde).collect()),
        serde_json::Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), from_serde(v))).collect())
        }
    }
}

fn json_strategy() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::json!(f)),
        "\\PC{0,12}".prop_map(serde_json::Value::String),
        "[\"\\\\/\u{0}-\u{1f}\u{e9}\u{1F600}\u{4e2d}a-z]{0,8}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::btree_map("[a-z\u{e9}\"/~]{0,6}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn scan_in_pieces(text: &[u8], cuts: &[usize]) -> (Scanner, Result<(), toolwire::Error>) {
    let mut scanner = Scanner::default();
    let mut last = 0;
    for &cut in cuts {
        let cut = cut.min(text.len()).max(last);
        scanner.push(&text[last..cut]);
        last = cut;
    }
    scanner.push(&text[last..]);
    let verdict = scanner.finish();
    (scanner, verdict)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_split_gives_the_oracle_value(value in json_strategy(), pretty in any::<bool>(), mut cuts in prop::collection::vec(0usize..2000, 0..12)) {
        let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) };
        let text = text.expect("serializable");
        cuts.sort_unstable();
        let (scanner, verdict) = scan_in_pieces(text.as_bytes(), &cuts);
        prop_assert_eq!(verdict, Ok(()));
        let built = build_value(scanner.text(), BuildOptions { complete: true, ..BuildOptions::default() });
        prop_assert_eq!(built, Some(from_serde(&value)));
    }

    #[test]
    fn every_strict_prefix_is_incomplete_and_partials_are_monotone(value in json_strategy()) {
        let text = serde_json::to_string(&value).expect("serializable");
        let bytes = text.as_bytes();
        let mut scanner = Scanner::default();
        let mut previous: Option<Value> = None;
        let complete_value = from_serde(&value);
        for (i, b) in bytes.iter().enumerate() {
            let status = scanner.push(std::slice::from_ref(b));
            let is_number_root = matches!(value, serde_json::Value::Number(_));
            if i + 1 < bytes.len() || is_number_root {
                prop_assert_eq!(&status, &Status::Incomplete, "prefix {} of {}", i + 1, text);
            }
            let partial = build_value(&scanner.text()[..scanner.valid_len()], BuildOptions::default());
            if let Some(p) = &previous {
                let now = partial.as_ref().expect("a reported value is never taken back");
                prop_assert!(contained(p, now), "{:?} not contained in {:?}", p, now);
            }
            if let Some(p) = &partial {
                prop_assert!(contained(p, &complete_value), "{:?} not contained in final {:?}", p, complete_value);
            }
            previous = partial;
        }
    }

    #[test]
    fn errors_do_not_depend_on_the_split(text in "[\\[\\]{}\":,0-9a-z\\\\ .eE+-]{0,24}", mut cuts in prop::collection::vec(0usize..30, 0..8)) {
        cuts.sort_unstable();
        let whole = {
            let mut s = Scanner::default();
            s.push(text.as_bytes());
            s.finish()
        };
        let (_, pieces) = scan_in_pieces(text.as_bytes(), &cuts);
        prop_assert_eq!(whole.clone(), pieces);
        let oracle = serde_json::from_str::<serde_json::Value>(&text);
        // Duplicate keys are rejected by us and accepted by serde_json.
        if whole.as_ref().is_err_and(|e| e.kind != toolwire::ErrorKind::DuplicateKey) {
            prop_assert!(oracle.is_err(), "we rejected what serde_json accepts: {}", text);
        }
        if whole.is_ok() {
            prop_assert!(oracle.is_ok(), "we accepted what serde_json rejects: {}", text);
        }
    }
}

/// `a` is contained in `b`: objects only gain members, arrays only gain elements, the open
/// string only grows at its end, scalars never change.
fn contained(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .all(|(k, v)| y.iter().any(|(k2, v2)| k == k2 && contained(v, v2))),
        (Value::Array(x), Value::Array(y)) => {
            x.len() <= y.len() && x.iter().zip(y).all(|(u, v)| contained(u, v))
        }
        (Value::String(x), Value::String(y)) => y.starts_with(x.as_str()),
        _ => a == b,
    }
}

#[test]
fn feeding_a_long_string_is_linear() {
    // One long string fed byte by byte: the case where some incremental parsers go quadratic.
    // Checked by counting nothing but bytes: the scanner's buffer grows once per byte.
    let body = "x".repeat(1 << 20);
    let text = format!("{{\"content\": \"{body}\"}}");
    let mut scanner = Scanner::default();
    for chunk in text.as_bytes().chunks(1) {
        scanner.push(chunk);
    }
    assert_eq!(scanner.finish(), Ok(()));
}
