//! A fragment that starts with the whole text so far is held until the next fragment (or the
//! end of the call) tells a cumulative resend from an ordinary continuation. The early signal
//! must not wait for that decision once both readings already break the grammar or the schema
//! pre-check, and reporting early must not change how the call finishes.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;
use toolwire::Registry;
use toolwire::{
    Arguments, Assembler, AssemblerConfig, Delta, Error, ScanConfig, Scanner, Status, ToolCall,
};

fn registry() -> Arc<Registry> {
    let mut registry = Registry::new();
    let schema = json!({
        "type": "object",
        "properties": {
            "b": {"type": "array", "items": {"type": "integer"}},
            "s": {"type": "string", "maxLength": 3},
            "o": {"type": "object", "properties": {"b": {"type": "integer"}}}
        },
        "additionalProperties": false
    });
    registry.add("tool", &schema).expect("schema");
    Arc::new(registry)
}

fn assembler(track_progress: bool) -> Assembler {
    let config = AssemblerConfig {
        track_progress,
        ..AssemblerConfig::default()
    };
    Assembler::with_tools(config, registry()).expect("config")
}

fn feed(asm: &mut Assembler, first: bool, text: &[u8]) {
    let delta = Delta {
        index: Some(0),
        id: None,
        name: first.then_some("tool"),
        kind: None,
        arguments: Some(Arguments::Text(text)),
    };
    asm.feed(&delta).expect("feed");
}

type Early = Vec<(String, usize, String, String)>;

fn early(errors: Vec<(usize, Error)>) -> Early {
    errors
        .into_iter()
        .map(|(_, e)| (format!("{:?}", e.kind), e.offset, e.path, e.message))
        .collect()
}

fn summary(call: &ToolCall) -> String {
    format!(
        "{:?} {:?} {:?} {} {}",
        String::from_utf8_lossy(&call.arguments),
        call.error
            .as_ref()
            .map(|e| (e.kind, e.offset, e.path.clone(), e.message.clone())),
        call.warnings,
        call.complete,
        call.plain_numbers
    )
}

/// One call fed as one fragment: its early errors, fail-fast signal and finished call.
fn whole(text: &[u8]) -> (Early, bool, String) {
    let mut asm = assembler(false);
    feed(&mut asm, true, text);
    let errors = early(asm.drain_errors());
    let failed = asm.has_certain_error();
    let calls = asm.finish().expect("finish");
    (errors, failed, summary(&calls[0]))
}

#[test]
fn a_held_fragment_that_breaks_both_readings_is_certain_at_once() {
    for track_progress in [false, true] {
        let mut asm = assembler(track_progress);
        feed(&mut asm, true, br#"{"b": "#);
        assert!(asm.drain_errors().is_empty());
        // Appended, `b` is an object; resent, it is a number (and a `}` too many): either way
        // not an array, so the call fails whichever way it is decided.
        feed(&mut asm, false, br#"{"b": 1}}"#);
        assert!(asm.has_certain_error());
        // The two readings break differently ("got object", "got number"): no error is
        // reported before a later fragment or the end picks one, which may be either.
        assert!(asm.drain_errors().is_empty());
        let calls = asm.finish().expect("finish");
        // Decided at the end as before: appended, the text is one complete value.
        assert_eq!(summary(&calls[0]), whole(br#"{"b": {"b": 1}}"#).2);
        let error = calls[0].error.as_ref().expect("schema violation");
        assert_eq!((error.offset, error.path.as_str()), (6, "/b"));
    }
}

#[test]
fn a_held_fragment_reports_the_errors_both_readings_share() {
    let mut asm = assembler(false);
    feed(&mut asm, true, br#"{"x": 1, "b": "#);
    // `x` is not allowed in either reading; only that is reported while the fragment is held.
    let mut reported = early(asm.drain_errors());
    feed(&mut asm, false, br#"{"x": 1, "b": 1}}"#);
    reported.extend(early(asm.drain_errors()));
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!((reported[0].1, reported[0].2.as_str()), (2, "/x"));
}

#[test]
fn a_held_fragment_one_reading_accepts_stays_quiet() {
    // Appended, `b` is an object; resent, the text is valid: nothing is certain yet.
    let mut asm = assembler(false);
    feed(&mut asm, true, br#"{"b": "#);
    feed(&mut asm, false, br#"{"b": [1]}"#);
    assert!(!asm.has_certain_error());
    assert!(asm.drain_errors().is_empty());
    // The next fragment extends it: a cumulative stream, and valid.
    feed(&mut asm, false, br#"{"b": [1]} "#);
    assert!(asm.drain_errors().is_empty());
    let calls = asm.finish().expect("finish");
    assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
}

/// A fragment held after whitespace can be the whole value (`" "` then `" {}"`, which starts
/// with the text so far). A call the provider ended is whole when the stream is stopped, and an
/// open one is kept when the stream breaks off or reaches the output limit, as it is at a
/// plain finish: deciding the held fragment only at the very end read it as blank or
/// incomplete (`filtered`, or `truncated` with its arguments cleared).
#[test]
fn a_whole_value_held_after_whitespace_survives_a_stop_a_break_and_the_limit() {
    for progress in [false, true] {
        for ended in [false, true] {
            for how in ["stop", "interrupt", "limit", "finish"] {
                let mut asm = assembler(progress);
                feed(&mut asm, true, b" ");
                feed(&mut asm, false, b" {}");
                if ended {
                    asm.end_call(0).expect("end");
                }
                match how {
                    "stop" => asm.stop("error").expect("stop"),
                    "interrupt" => asm.interrupt("reset").expect("interrupt"),
                    "limit" => asm.limit_reached().expect("limit"),
                    _ => {}
                }
                let calls = asm.finish().expect("finish");
                let call = &calls[0];
                assert_eq!(call.arguments, b"  {}", "{how} {ended} {progress}");
                // Only an open call is stopped: the provider had not ended it.
                let stopped = how == "stop" && !ended;
                let kind = call.error.as_ref().map(|e| e.kind);
                assert_eq!(
                    kind.is_some(),
                    stopped,
                    "{how} {ended} {progress}: {kind:?}"
                );
            }
        }
    }
}

/// Texts for the schema above, valid and not, that make many held fragments.
const TEXTS: &[&str] = &[
    r#"{"b": [1, 2]}"#,
    r#"{"b": 1}"#,
    r#"{"b": {"b": 1}}"#,
    r#"{"s": "abcdef"}"#,
    r#"{"s": "ab"}"#,
    r#"{"o": {"b": [1]}}"#,
    r#"{"o": {"b": 1}}"#,
    r#"{"x": 1}"#,
    r#"{"b": ["x"]}"#,
    r#""#,
    r#"}"#,
    r#" "#,
];

fn text(pick: usize) -> &'static [u8] {
    TEXTS[pick % TEXTS.len()].as_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// A first fragment, then one that starts with it (so it may be held): the early signal
    /// after the second fragment is certain exactly when both readings are certainly broken,
    /// with the early errors of the reading the call finishes with; a third fragment
    /// (extending the held one, repeating it, or continuing) and the end give the same calls
    /// as without the early report, and every error of the final text is reported once.
    #[test]
    fn held_fragments_report_errors_as_soon_as_both_readings_fail(
        first in (0usize..TEXTS.len(), 0usize..40),
        second in (0usize..TEXTS.len(), 0usize..40),
        third in prop::option::of((0usize..3, 0usize..TEXTS.len(), 0usize..40)),
        track_progress in any::<bool>(),
    ) {
        // Mostly cut where a value may start, so that `b` may be held.
        let a = text(first.0);
        let starts: Vec<usize> = (1..=a.len())
            .filter(|&i| matches!(a[i - 1], b':' | b'[' | b' '))
            .collect();
        let a = match (first.1 % 4, starts.is_empty()) {
            (0, _) | (_, true) => &a[..first.1 % (a.len() + 1)],
            _ => &a[..starts[first.1 % starts.len()]],
        };
        let tail = text(second.0);
        let tail = &tail[second.1 % (tail.len() + 1)..];
        let b: Vec<u8> = [a, tail].concat();
        let appended: Vec<u8> = [a, &b].concat();
        let (early_appended, certain_appended, _) = whole(&appended);
        let (early_resent, certain_resent, _) = whole(&b);

        let mut asm = assembler(track_progress);
        feed(&mut asm, true, a);
        let mut reported = early(asm.drain_errors());
        let certain_before = asm.has_certain_error();
        feed(&mut asm, false, &b);
        let certain = asm.has_certain_error();
        let after_b = early(asm.drain_errors());
        reported.extend(after_b.iter().cloned());
        // Whether the assembler holds `b`: it starts with the whole text so far, whose value is
        // still open, and appending it is also valid JSON so far.
        let held = {
            let mut scanner = Scanner::new(ScanConfig::default());
            let open = !matches!(scanner.push(a), Status::Complete);
            !a.is_empty()
                && b.len() > a.len()
                && b.starts_with(a)
                && open
                && !matches!(scanner.push(&b), Status::Invalid(_))
        };
        let both_fail = certain_appended && certain_resent;
        if held {
            // The early signal never waits for a decision that cannot make the call valid, and
            // never anticipates one that can.
            prop_assert_eq!(certain, certain_before || both_fail);
            if !both_fail {
                prop_assert!(after_b.is_empty(), "{:?}", after_b);
            }
        }

        let c: Option<Vec<u8>> = third.map(|(how, pick, cut)| {
            let more = text(pick);
            let more = &more[cut % (more.len() + 1)..];
            match how {
                0 => [&b[..], more, b" "].concat(),
                1 => b.clone(),
                _ => [more, b" "].concat(),
            }
        });
        if let Some(c) = &c {
            feed(&mut asm, false, c);
            reported.extend(early(asm.drain_errors()));
        }
        let calls = asm.finish().expect("finish");
        let done = summary(&calls[0]);

        // The same stream without reading anything early finishes the same way.
        let mut quiet = assembler(track_progress);
        feed(&mut quiet, true, a);
        feed(&mut quiet, false, &b);
        if let Some(c) = &c {
            feed(&mut quiet, false, c);
        }
        prop_assert_eq!(&done, &summary(&quiet.finish().expect("finish")[0]));

        if c.is_none() && held && both_fail {
            // Ended on the held fragment: the early errors are those of the text the call
            // finished with, reported once each.
            let final_text = String::from_utf8_lossy(&calls[0].arguments).into_owned();
            let expected = if final_text.as_bytes() == &appended[..] {
                Some(&early_appended)
            } else if final_text.as_bytes() == &b[..] {
                Some(&early_resent)
            } else {
                None
            };
            if let Some(expected) = expected {
                // Reported while held, an error is one both readings have (either may still be
                // picked), so it is one of the text the call finished with; errors of the text
                // before the held fragment were reported before it, and are too.
                for error in &after_b {
                    prop_assert!(expected.contains(error), "{:?} not in {:?}", error, expected);
                    let other = if final_text.as_bytes() == &b[..] {
                        &early_appended
                    } else {
                        &early_resent
                    };
                    prop_assert!(other.contains(error), "{:?} not in {:?}", error, other);
                }
            }
        }
    }
}

#[test]
fn an_early_error_of_the_reading_a_later_fragment_drops_is_not_reported() {
    // Held: appended, `b` is an object; resent, a number and a `}` too many. Both readings
    // break, each its own way. The next fragment extends the held one, so the call is
    // cumulative (the resent reading): an error reported from the appended reading would be
    // one the call's text never has.
    for track_progress in [false, true] {
        let mut asm = assembler(track_progress);
        feed(&mut asm, true, br#"{"b": "#);
        let mut reported = early(asm.drain_errors());
        feed(&mut asm, false, br#"{"b": 1}}"#);
        assert!(asm.has_certain_error());
        reported.extend(early(asm.drain_errors()));
        feed(&mut asm, false, br#"{"b": 1}} "#);
        reported.extend(early(asm.drain_errors()));
        let calls = asm.finish().expect("finish");
        let (want, _, _) = whole(br#"{"b": 1}} "#);
        reported.sort();
        let mut want = want;
        want.sort();
        assert_eq!(reported, want);
        assert_eq!(
            summary(&calls[0]).split(" [").next(),
            whole(br#"{"b": 1}} "#).2.split(" [").next()
        );
    }
}

#[test]
fn a_self_similar_value_is_not_taken_for_a_resend_that_would_break_it() {
    // Each fragment starts with all the text before it, as a resending provider's would; only
    // appending reads the three as valid JSON, so they are appended.
    let pieces: [&[u8]; 3] = [
        b"{\"o\":[",
        b"{\"o\":[{\"o\":[",
        b"{\"o\":[{\"o\":[1]}]}]}]}]}",
    ];
    let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
    for (i, piece) in pieces.iter().enumerate() {
        feed(&mut asm, i == 0, piece);
    }
    let calls = asm.finish().expect("finish");
    let whole: Vec<u8> = pieces.concat();
    assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
    assert_eq!(calls[0].arguments, whole);
    assert!(calls[0].warnings.is_empty(), "{:?}", calls[0].warnings);
    // A true resend stream is still read as one: the third fragment is valid only as a resend.
    let resent: [&[u8]; 3] = [b"{\"o\":[", b"{\"o\":[1", b"{\"o\":[1,2]}"];
    let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
    for (i, piece) in resent.iter().enumerate() {
        feed(&mut asm, i == 0, piece);
    }
    let calls = asm.finish().expect("finish");
    assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
    assert_eq!(calls[0].arguments, b"{\"o\":[1,2]}");
    assert_eq!(calls[0].warnings, vec!["cumulative_arguments"]);
}

#[test]
fn a_whole_value_after_a_held_fragment_mixes_and_nothing_panics() {
    for end_first in [false, true] {
        let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
        feed(&mut asm, true, b" ");
        feed(&mut asm, false, b" {}");
        let delta = Delta {
            index: Some(0),
            arguments: Some(Arguments::Value(b"{\"a\":1}")),
            ..Delta::default()
        };
        asm.feed(&delta).expect("feed");
        if end_first {
            asm.end_call(0).expect("end");
        }
        let calls = asm.finish().expect("finish");
        let kind = calls[0].error.as_ref().map(|e| format!("{:?}", e.kind));
        assert_eq!(kind.as_deref(), Some("MixedArguments"), "{:?}", calls[0]);
    }
}

#[test]
fn a_complete_value_resent_with_whitespace_after_it_is_a_repeat() {
    for pieces in [
        vec![&b"{}"[..], b"{} "],
        vec![&b"{\"b\":[1]}"[..], b"{\"b\":[1]}\n", b"{\"b\":[1]}\n "],
    ] {
        let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
        for (i, piece) in pieces.iter().enumerate() {
            feed(&mut asm, i == 0, piece);
        }
        let calls = asm.finish().expect("finish");
        assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
        assert_eq!(&calls[0].arguments[..], *pieces.last().expect("pieces"));
        assert_eq!(calls[0].warnings, vec!["cumulative_arguments"]);
    }
}
