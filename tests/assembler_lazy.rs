//! Deferred scanning is invisible: an assembler that scans each fragment as it arrives (progress
//! tracking forces that) and one that defers scanning until a decision needs it report the same
//! early errors after every fragment, the same fail-fast signal and partial values, and finish
//! with the same calls, for valid, broken and quirky streams cut anywhere, with and without a
//! schema pre-check.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;
use toolwire::value::ValueSink;
use toolwire::Registry;
use toolwire::{Arguments, Assembler, AssemblerConfig, Delta, PartialOptions, ToolCall, Value};

const TEXTS: &[&str] = &[
    r#"{"city": "Paris", "days": [1, 2.5, -3e2], "note": "a\"b\\c\u00e9\ud83d\ude00", "ok": true}"#,
    r#"{"a": {"b": {"c": [null, false, "x"]}}, "n": 12345678901234567890}"#,
    r#"{"a": 1,}"#,
    r#"{"a": 1}{"b": 2}"#,
    r#"{"a": "\x"}"#,
    r#"{"a": 1, "a": 2}"#,
    r#"{"s": "unterminated"#,
    r#"{"t": tru}"#,
    r#"[1, 2, 3]"#,
    r#"  "#,
    r#"{"k": "名前 東京 😀", "v": [{"x": 1}, {"y": [2, [3]]}]}"#,
];

/// The texts above plus ones longer than the assembler's deferral bound, so scans also start
/// mid-stream on their own.
fn texts() -> Vec<String> {
    let mut out: Vec<String> = TEXTS.iter().map(|t| (*t).to_owned()).collect();
    let days: Vec<String> = (0..400).map(|i| i.to_string()).collect();
    out.push(format!(
        r#"{{"note": "{}", "days": [{}], "city": "Rome"}}"#,
        r#"長い\"文\u00e9 "#.repeat(150),
        days.join(", ")
    ));
    out.push(format!(r#"{{"days": [{}], "a": 2}}"#, days.join(",")));
    out
}

#[derive(Debug, Clone)]
enum Shape {
    /// Plain fragments.
    Fragments,
    /// Every fragment resends the whole text so far (quirk 19).
    Cumulative,
    /// The name is repeated on every fragment (quirks 8, 13).
    RepeatedName,
}

fn deltas_for(text: &[u8], cuts: &[usize], shape: &Shape) -> Vec<(Option<String>, Vec<u8>)> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    for (i, w) in points.windows(2).enumerate() {
        let piece = match shape {
            Shape::Cumulative => text[..w[1]].to_vec(),
            _ => text[w[0]..w[1]].to_vec(),
        };
        let name = match shape {
            Shape::RepeatedName => Some("tool".to_owned()),
            _ => (i == 0).then(|| "tool".to_owned()),
        };
        out.push((name, piece));
    }
    if out.is_empty() {
        out.push((Some("tool".to_owned()), Vec::new()));
    }
    out
}

type Early = Vec<(usize, String, usize, String, String)>;

/// A schema that the texts above break in many ways: a string too long, a wrong element type,
/// unknown keys, a bound.
fn registry() -> Arc<Registry> {
    let mut registry = Registry::new();
    let schema = json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 4},
            "days": {"type": "array", "items": {"type": "integer"}},
            "note": {"type": "string"},
            "ok": {"type": "boolean"},
            "a": {"type": "integer", "maximum": 1},
            "k": {"enum": ["名前 東京 😀"]}
        },
        "additionalProperties": false
    });
    registry.add("tool", &schema).expect("schema");
    Arc::new(registry)
}

fn drive(
    eager: bool,
    observe: bool,
    tools: bool,
    calls: &[Vec<(Option<String>, Vec<u8>)>],
) -> (Vec<Early>, Vec<bool>, Vec<Option<Value>>, Vec<ToolCall>) {
    drive_with(eager, observe, tools, false, calls)
}

/// `drive`, where `continuation` first offers each nameless fragment to
/// `Assembler::feed_continuation`, as the Python binding does, and falls back to `feed`.
fn drive_with(
    eager: bool,
    observe: bool,
    tools: bool,
    continuation: bool,
    calls: &[Vec<(Option<String>, Vec<u8>)>],
) -> (Vec<Early>, Vec<bool>, Vec<Option<Value>>, Vec<ToolCall>) {
    let mut asm = assembler(eager, tools);
    let (early, failed, partials) = feed_all(&mut asm, observe, continuation, calls);
    (early, failed, partials, asm.finish().expect("finish"))
}

fn assembler(eager: bool, tools: bool) -> Assembler {
    let config = AssemblerConfig {
        track_progress: eager,
        ..AssemblerConfig::default()
    };
    if tools {
        Assembler::with_tools(config, registry())
    } else {
        Assembler::new(config)
    }
    .expect("config")
}

/// Feeds `calls` interleaved; with `observe`, reads early errors and partial values after
/// every fragment.
fn feed_all(
    asm: &mut Assembler,
    observe: bool,
    continuation: bool,
    calls: &[Vec<(Option<String>, Vec<u8>)>],
) -> (Vec<Early>, Vec<bool>, Vec<Option<Value>>) {
    let mut early = Vec::new();
    let mut failed = Vec::new();
    let mut partials = Vec::new();
    let longest = calls.iter().map(Vec::len).max().unwrap_or(0);
    // Interleave the calls fragment by fragment, as parallel calls arrive.
    for step in 0..longest {
        for (index, call) in calls.iter().enumerate() {
            let Some((name, piece)) = call.get(step) else {
                continue;
            };
            let index = i64::try_from(index).expect("small");
            let fast = if continuation && name.is_none() {
                asm.feed_continuation(index, piece)
            } else {
                None
            };
            let delta = Delta {
                index: Some(index),
                id: None,
                name: name.as_deref(),
                kind: None,
                arguments: Some(Arguments::Text(piece)),
                start: false,
            };
            let ordinal = match fast {
                Some(ordinal) => ordinal,
                None => asm.feed(&delta).expect("feed"),
            };
            if !observe {
                // Nothing asks between fragments: every sync comes from the assembler itself.
                continue;
            }
            early.push(
                asm.drain_errors()
                    .into_iter()
                    .map(|(o, e)| (o, format!("{:?}", e.kind), e.offset, e.path, e.message))
                    .collect(),
            );
            failed.push(asm.has_certain_error());
            let partial = asm
                .partial_into(ordinal, PartialOptions::default(), &mut ValueSink)
                .expect("ordinal")
                .expect("infallible sink");
            partials.push(partial);
        }
    }
    (early, failed, partials)
}

fn summary(calls: &[ToolCall]) -> Vec<String> {
    calls
        .iter()
        .map(|c| {
            format!(
                "{:?} {:?} {:?} {:?} {} {}",
                c.name,
                String::from_utf8_lossy(&c.arguments),
                c.error
                    .as_ref()
                    .map(|e| (e.kind, e.offset, e.path.clone(), e.message.clone())),
                c.warnings,
                c.complete,
                c.plain_numbers
            )
        })
        .collect()
}

/// One call's pick: a text of `texts()`, cut points, a shape and maybe one byte changed.
type Pick = (usize, Vec<usize>, Shape, Option<(usize, u8)>);

fn calls_for(picks: &[Pick]) -> Vec<Vec<(Option<String>, Vec<u8>)>> {
    let texts = texts();
    picks
        .iter()
        .map(|(t, cuts, shape, mutation)| {
            let mut text = texts[*t].as_bytes().to_vec();
            if let Some((at, byte)) = mutation {
                if !text.is_empty() {
                    let at = at % text.len();
                    text[at] = *byte;
                }
            }
            deltas_for(&text, cuts, shape)
        })
        .collect()
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        4 => Just(Shape::Fragments),
        1 => Just(Shape::Cumulative),
        1 => Just(Shape::RepeatedName),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn deferred_scanning_is_invisible(
        picks in prop::collection::vec((0..TEXTS.len() + 2, prop::collection::vec(0usize..4000, 0..40), shape(), prop::option::of((0usize..4000, any::<u8>()))), 1..4),
        tools in any::<bool>(),
    ) {
        let calls = calls_for(&picks);
        let (early_a, failed_a, partial_a, done_a) = drive(true, true, tools, &calls);
        let (early_b, failed_b, partial_b, done_b) = drive(false, true, tools, &calls);
        prop_assert_eq!(early_a, early_b);
        prop_assert_eq!(failed_a, failed_b);
        prop_assert_eq!(partial_a, partial_b);
        prop_assert_eq!(summary(&done_a), summary(&done_b));
        let (_, _, _, unobserved) = drive(false, false, tools, &calls);
        prop_assert_eq!(summary(&done_a), summary(&unobserved));
    }

    #[test]
    fn continuation_fast_path_is_invisible(
        picks in prop::collection::vec((0..TEXTS.len() + 2, prop::collection::vec(0usize..4000, 0..40), shape(), prop::option::of((0usize..4000, any::<u8>()))), 1..4),
        tools in any::<bool>(),
        eager in any::<bool>(),
    ) {
        let calls = calls_for(&picks);
        let (early_a, failed_a, partial_a, done_a) = drive_with(eager, true, tools, false, &calls);
        let (early_b, failed_b, partial_b, done_b) = drive_with(eager, true, tools, true, &calls);
        prop_assert_eq!(early_a, early_b);
        prop_assert_eq!(failed_a, failed_b);
        prop_assert_eq!(partial_a, partial_b);
        prop_assert_eq!(summary(&done_a), summary(&done_b));
        let (_, _, _, unobserved) = drive_with(eager, false, tools, true, &calls);
        prop_assert_eq!(summary(&done_a), summary(&unobserved));
    }

    #[test]
    fn scans_deferred_past_finish_are_invisible(
        picks in prop::collection::vec((0..TEXTS.len() + 2, prop::collection::vec(0usize..4000, 0..40), shape(), prop::option::of((0usize..4000, any::<u8>()))), 1..4),
        tools in any::<bool>(),
    ) {
        let calls = calls_for(&picks);
        let (_, _, _, eager) = drive(true, false, tools, &calls);
        let mut asm = assembler(false, tools);
        feed_all(&mut asm, false, true, &calls);
        let mut deferred = asm.finish_deferring_scans().expect("finish");
        for call in &mut deferred {
            call.scan_deferred();
            prop_assert!(!call.unscanned);
        }
        prop_assert_eq!(summary(&eager), summary(&deferred));
    }
}
