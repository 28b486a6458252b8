//! Every early error is handed out by `drain_errors` exactly once, however the arguments are
//! cut and whenever the name arrives: the errors drained along the way are the errors drained
//! once after feeding the whole text. (No fragment of these texts starts with all the text
//! before it, which could be a cumulative resend: `assembler_held.rs` covers those.)

mod common;

use std::sync::Arc;

use common::delta;
use proptest::prelude::*;
use serde_json::json;
use toolwire::Registry;
use toolwire::{Assembler, AssemblerConfig, Error};

fn registry() -> Arc<Registry> {
    let mut registry = Registry::new();
    let schema = json!({
        "type": "object",
        "properties": {
            "b": {"type": "array", "items": {"type": "integer"}},
            "s": {"type": "string", "maxLength": 3}
        },
        "additionalProperties": false
    });
    registry.add("tool", &schema).expect("schema");
    Arc::new(registry)
}

const TEXTS: &[&str] = &[
    r#"{"b": {x}"#,
    r#"{"s": "abcd", "b": {"s": 1}, x"#,
    r#"{"s": "abcdef", "x": 1, "b": [1, "a"]]"#,
    r#"{"b": [1.5, true], "s": 1}}"#,
    r#"{"x": 1,}"#,
    r#"{"b": [1, 2], "s": "ab"}"#,
];

type Early = Vec<(String, usize, String, String)>;

fn early(errors: Vec<(usize, Error)>) -> Early {
    errors
        .into_iter()
        .map(|(_, e)| (format!("{:?}", e.kind), e.offset, e.path, e.message))
        .collect()
}

/// One error was drained, at `path`, showing `got`.
fn assert_one_error(drained: &[(usize, Error)], path: &str, got: &str, context: &str) {
    assert_eq!(drained.len(), 1, "{context}: {drained:?}");
    let e = &drained[0].1;
    assert_eq!(e.path, path, "{context}");
    assert_eq!(
        e.detail.as_ref().map(|d| d.got.as_str()),
        Some(got),
        "{context}"
    );
}

fn sorted(mut errors: Early) -> Early {
    errors.sort();
    errors
}

#[test]
fn a_grammar_error_after_a_reported_violation_is_reported() {
    let mut asm = Assembler::with_tools(AssemblerConfig::default(), registry()).expect("config");
    asm.feed(&delta(Some("tool"), br#"{"b": {"#)).expect("feed");
    let first = early(asm.drain_errors());
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].0, "SchemaViolation");
    asm.feed(&delta(None, b"x")).expect("feed");
    let second = early(asm.drain_errors());
    assert_eq!(second.len(), 1, "{second:?}");
    assert_eq!(second[0].0, "UnexpectedByte");
}

#[test]
fn a_violation_inside_an_open_string_is_drained_at_once() {
    // Certain at the byte that decided it, and handed out then, not when the string closes (or
    // never, when the stream is cut inside it); as it read at that byte.
    let text = r#"{"s": "abcd"#;
    let mut asm = Assembler::with_tools(AssemblerConfig::default(), registry()).expect("config");
    asm.feed(&delta(Some("tool"), text.as_bytes()))
        .expect("feed");
    assert_one_error(&asm.drain_errors(), "/s", "abcd", text);
    asm.feed(&delta(None, br#"ef"}"#)).expect("feed");
    assert!(asm.drain_errors().is_empty(), "{text}: reported once");
}

/// An unknown key is certain at the first byte no allowed name continues, but the key so far
/// names no member (`/x` of `{"xyz": 1}`), where the call's error and validation name the
/// whole key: it is handed out when the key closes, as they read it (and never for a key the
/// stream cuts off, whose call is truncated).
#[test]
fn an_unknown_key_is_drained_whole_when_it_closes() {
    // Certain already: a fail-fast caller may stop here.
    let mut asm = Assembler::with_tools(AssemblerConfig::default(), registry()).expect("config");
    asm.feed(&delta(Some("tool"), br#"{"xy"#)).expect("feed");
    assert!(asm.has_certain_error());
    assert!(asm.drain_errors().is_empty());
    for (text, path) in [
        (r#"{"xyz": 1}"#, "/xyz"),
        (r#"{"b": [], "s~/x": 1}"#, "/s~0~1x"),
        (r#"{"京都": 1}"#, "/京都"),
    ] {
        let bytes = text.as_bytes();
        let close = bytes.len() - 5; // the key's closing quote
        for cut in 1..bytes.len() {
            let mut asm =
                Assembler::with_tools(AssemblerConfig::default(), registry()).expect("config");
            asm.feed(&delta(Some("tool"), &bytes[..cut])).expect("feed");
            let first = asm.drain_errors();
            if cut <= close {
                assert!(first.is_empty(), "{text} cut at {cut}: {first:?}");
            }
            asm.feed(&delta(None, &bytes[cut..])).expect("feed");
            let mut drained = first;
            drained.extend(asm.drain_errors());
            let key = path.rsplit('/').next().unwrap_or_default();
            let key = key.replace("~1", "/").replace("~0", "~");
            assert_one_error(&drained, path, &key, &format!("{text} cut at {cut}"));
            assert_eq!(drained[0].1.message, format!("unexpected property {key:?}"));
            let calls = asm.finish().expect("finish");
            let error = calls[0].error.as_ref().expect("the call's error");
            assert_eq!(
                (&error.path, &error.message),
                (&drained[0].1.path, &drained[0].1.message)
            );
        }
    }
}

#[test]
fn an_early_error_decided_inside_a_character_shows_the_whole_ones_before_it() {
    let mut registry = Registry::new();
    let schema = json!({
        "type": "object",
        "properties": {"v": {"enum": ["東京"]}, "w": {"type": "string", "maxLength": 2}},
        "additionalProperties": false
    });
    registry.add("tool", &schema).expect("schema");
    let registry = Arc::new(registry);
    for (text, path, got) in [
        (r#"{"v": "京"}"#, "/v", ""),
        (r#"{"w": "東京都庁"}"#, "/w", "東京"),
        (r#"{"京": 1}"#, "/京", "京"),
    ] {
        let bytes = text.as_bytes();
        for cut in 1..bytes.len() {
            let mut asm = Assembler::with_tools(AssemblerConfig::default(), Arc::clone(&registry))
                .expect("config");
            asm.feed(&delta(Some("tool"), &bytes[..cut])).expect("feed");
            let mut drained = asm.drain_errors();
            asm.feed(&delta(None, &bytes[cut..])).expect("feed");
            drained.extend(asm.drain_errors());
            assert_one_error(&drained, path, got, &format!("{text} cut at {cut}"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn each_early_error_is_drained_once(
        pick in 0..TEXTS.len(),
        cuts in prop::collection::vec(0usize..64, 0..6),
        name_at in 0usize..8,
        track_progress in any::<bool>(),
    ) {
        let text = TEXTS[pick].as_bytes();
        let config = AssemblerConfig { track_progress, ..AssemblerConfig::default() };
        let mut whole = Assembler::with_tools(config, registry()).expect("config");
        whole.feed(&delta(Some("tool"), text)).expect("feed");
        let expected = sorted(early(whole.drain_errors()));

        let mut points: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        points.extend([0, text.len()]);
        points.sort_unstable();
        points.dedup();
        let pieces: Vec<&[u8]> = points.windows(2).map(|w| &text[w[0]..w[1]]).collect();
        // The name comes with one of the fragments, or after all of them.
        let name_at = name_at.min(pieces.len());
        let mut asm = Assembler::with_tools(config, registry()).expect("config");
        let mut drained = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            asm.feed(&delta((i == name_at).then_some("tool"), piece)).expect("feed");
            drained.extend(early(asm.drain_errors()));
        }
        if name_at == pieces.len() {
            asm.feed(&delta(Some("tool"), b"")).expect("feed");
            drained.extend(early(asm.drain_errors()));
        }
        prop_assert_eq!(sorted(drained), expected);
    }
}

/// A name no tool has, that a tool's name starts with (`tool` beside `tool_v2`), waits only
/// while more of it may come: once the arguments begin (or the call ends) it is final, and the
/// unknown tool is said then, not first at `finish`.
#[test]
fn an_unknown_name_that_starts_a_known_one_is_said_once_it_is_final() {
    let mut registry = Registry::new();
    registry
        .add("search_web", &json!({"type": "object"}))
        .expect("schema");
    let registry = Arc::new(registry);
    let kinds = |a: &mut Assembler| {
        a.drain_errors()
            .into_iter()
            .map(|(_, e)| e.kind)
            .collect::<Vec<_>>()
    };
    let mut a = Assembler::with_tools(AssemblerConfig::default(), registry.clone()).expect("ok");
    a.feed(&delta(Some("search"), b"")).expect("feed");
    // More of the name may come yet.
    assert!(kinds(&mut a).is_empty());
    assert!(!a.has_certain_error());
    a.feed(&delta(None, b"{\"q\": ")).expect("feed");
    assert_eq!(kinds(&mut a), [toolwire::ErrorKind::UnknownTool]);
    assert!(a.has_certain_error());
    // Ended before any argument: final too.
    let mut a = Assembler::with_tools(AssemblerConfig::default(), registry).expect("ok");
    let ordinal = a.feed(&delta(Some("search"), b"")).expect("feed");
    a.end_call(ordinal).expect("end");
    assert_eq!(kinds(&mut a), [toolwire::ErrorKind::UnknownTool]);
}
