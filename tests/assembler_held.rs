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
        start: false,
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
        feed(&mut asm, true, br#"{"s": "#);
        assert!(asm.drain_errors().is_empty());
        // Appended, `s` is an object; resent, a string too long: either way not what the
        // schema takes, so the call fails whichever way it is decided.
        feed(&mut asm, false, br#"{"s": "abcdef"}"#);
        assert!(asm.has_certain_error());
        // The two readings break differently ("got object", "longer than 3"): no error is
        // reported before a later fragment or the end picks one, which may be either.
        assert!(asm.drain_errors().is_empty());
        let calls = asm.finish().expect("finish");
        // Decided at the end as before: only the resent reading is one complete value.
        assert_eq!(
            summary(&calls[0]).split(" [").next(),
            whole(br#"{"s": "abcdef"}"#).2.split(" [").next()
        );
        let error = calls[0].error.as_ref().expect("schema violation");
        assert_eq!((error.offset, error.path.as_str()), (10, "/s"));
    }
}

#[test]
fn a_fragment_that_breaks_the_resend_reading_is_appended_at_once() {
    // `{"b": ` then `{"b": 1}}`: resent, the text has a `}` too many, so it is no resend, and
    // its errors are those of the appended text, reported at once, as for a cut a byte
    // earlier (which starts no hold). A later fragment that extends it changes nothing.
    for track_progress in [false, true] {
        let text = br#"{"b": {"b": 1}}"#;
        let (want, _, done) = whole(text);
        for (a, b) in [(&text[..6], &text[6..]), (&text[..5], &text[5..])] {
            let mut asm = assembler(track_progress);
            feed(&mut asm, true, a);
            let mut reported = early(asm.drain_errors());
            feed(&mut asm, false, b);
            assert!(asm.has_certain_error());
            reported.extend(early(asm.drain_errors()));
            assert_eq!(reported, want);
            assert_eq!(summary(&asm.finish().expect("finish")[0]), done);
        }
    }
}

#[test]
fn a_held_fragment_reports_the_errors_both_readings_share() {
    let mut asm = assembler(false);
    feed(&mut asm, true, br#"{"x": 1, "b": "#);
    // `x` is not allowed in either reading; only that is reported while the fragment is held.
    let mut reported = early(asm.drain_errors());
    feed(&mut asm, false, br#"{"x": 1, "b": 1}"#);
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
        // still open, and both appending it and reading it as a resend are valid JSON so far.
        let held = {
            let mut scanner = Scanner::new(ScanConfig::default());
            let open = !matches!(scanner.push(a), Status::Complete);
            let resent = Scanner::new(ScanConfig::default()).push(&b);
            !a.is_empty()
                && b.len() > a.len()
                && b.starts_with(a)
                && open
                && !matches!(scanner.push(&b), Status::Invalid(_))
                && !matches!(resent, Status::Invalid(_))
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
    // Held: appended, `b` is an object; resent, a number. Both readings break the schema,
    // each its own way. The next fragment extends the held one, so the call is cumulative
    // (the resent reading): an error reported from the appended reading would be one the
    // call's text never has.
    for track_progress in [false, true] {
        let mut asm = assembler(track_progress);
        feed(&mut asm, true, br#"{"b": "#);
        let mut reported = early(asm.drain_errors());
        feed(&mut asm, false, br#"{"b": 1}"#);
        assert!(asm.has_certain_error());
        reported.extend(early(asm.drain_errors()));
        feed(&mut asm, false, br#"{"b": 1} "#);
        reported.extend(early(asm.drain_errors()));
        let calls = asm.finish().expect("finish");
        let (want, _, _) = whole(br#"{"b": 1} "#);
        reported.sort();
        let mut want = want;
        want.sort();
        assert_eq!(reported, want);
        assert_eq!(
            summary(&calls[0]).split(" [").next(),
            whole(br#"{"b": 1} "#).2.split(" [").next()
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

/// Self-similar JSON: few keys and small values, so that one prefix of a text often starts
/// another, as the fragments of a resending provider do.
fn self_similar() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("1".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just("\"a\"".to_owned()),
    ];
    let value = leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
            (
                prop::sample::subsequence(vec!["a", "b"], 1..=2),
                prop::collection::vec(inner, 2)
            )
                .prop_map(|(keys, values)| {
                    let members: Vec<String> = keys
                        .iter()
                        .zip(values)
                        .map(|(k, v)| format!("\"{k}\":{v}"))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
        ]
    });
    (prop::sample::select(vec!["a", "b"]), value).prop_map(|(k, v)| format!("{{\"{k}\":{v}}}"))
}

/// Cut points of `text`: sorted, distinct, inside it.
fn cuts_of(text: &str, picks: &[usize]) -> Vec<usize> {
    let mut cuts: Vec<usize> = picks
        .iter()
        .map(|p| 1 + p % text.len().max(1))
        .filter(|&c| c < text.len())
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

fn fed(pieces: &[&[u8]], name_every_chunk: bool) -> Vec<ToolCall> {
    let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
    for (i, piece) in pieces.iter().enumerate() {
        feed(&mut asm, i == 0 || name_every_chunk, piece);
    }
    asm.finish().expect("finish")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Valid arguments appended fragment by fragment are read as they are, however much the
    /// fragments look like a provider resending everything (each starting with the text
    /// before it), and whether or not every chunk repeats the name.
    #[test]
    fn appended_arguments_are_never_taken_for_a_resend(
        text in self_similar(),
        picks in prop::collection::vec(any::<usize>(), 0..8),
        name_every_chunk in any::<bool>(),
    ) {
        let cuts = cuts_of(&text, &picks);
        let mut pieces = Vec::new();
        let mut at = 0;
        for &cut in cuts.iter().chain(std::iter::once(&text.len())) {
            pieces.push(&text.as_bytes()[at..cut]);
            at = cut;
        }
        let calls = fed(&pieces, name_every_chunk);
        prop_assert_eq!(calls.len(), 1, "{:?}", calls);
        prop_assert!(calls[0].error.is_none(), "{:?}", calls[0]);
        prop_assert_eq!(&calls[0].arguments[..], text.as_bytes());
    }

    /// A resending provider's stream (each chunk the whole text so far) is read as its last
    /// chunk, unless its chunks appended one after the other are also one whole value: then
    /// nothing tells the two apart, and appending, the ordinary case, is kept.
    #[test]
    fn resent_arguments_are_read_as_the_last_chunk(
        text in self_similar(),
        picks in prop::collection::vec(any::<usize>(), 1..8),
        name_every_chunk in any::<bool>(),
    ) {
        let cuts = cuts_of(&text, &picks);
        let chunks: Vec<&[u8]> = cuts
            .iter()
            .chain(std::iter::once(&text.len()))
            .map(|&cut| &text.as_bytes()[..cut])
            .collect();
        let calls = fed(&chunks, name_every_chunk);
        let appended: Vec<u8> = chunks.concat();
        let appended_whole = {
            let mut scanner = Scanner::new(ScanConfig::default());
            scanner.push(&appended);
            scanner.finish().is_ok()
        };
        prop_assert_eq!(calls.len(), 1, "{:?}", calls);
        prop_assert!(calls[0].error.is_none(), "{:?}", calls[0]);
        if appended_whole {
            prop_assert_eq!(&calls[0].arguments, &appended);
        } else {
            prop_assert_eq!(&calls[0].arguments[..], text.as_bytes());
            if chunks.len() > 1 {
                prop_assert_eq!(&calls[0].warnings, &vec!["cumulative_arguments"]);
            }
        }
    }
}

#[test]
fn fragments_that_both_readings_accept_wait_for_the_one_that_breaks() {
    let pieces: [&[u8]; 4] = [b"{\"a\":", b"{\"a\":[", b"{\"a\":[]}", b"]}}"];
    for name_every_chunk in [false, true] {
        let calls = fed(&pieces, name_every_chunk);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
        assert_eq!(calls[0].arguments, pieces.concat());
        assert!(calls[0].warnings.is_empty(), "{:?}", calls[0].warnings);
        // Ended before the fragment that breaks the resend reading, only that reading is a
        // whole value.
        let calls = fed(&pieces[..3], name_every_chunk);
        assert_eq!(calls[0].arguments, b"{\"a\":[]}");
        assert_eq!(calls[0].warnings, vec!["cumulative_arguments"]);
    }
}

#[test]
fn a_named_chunk_after_a_resent_whole_value_starts_the_next_call() {
    // Every chunk names the tool; the second resends the first and completes it, and the third
    // is a new call under the same index, which only the resend reading leaves room for.
    let pieces: [&[u8]; 3] = [b"{\"a\":", b"{\"a\":1}", b"{\"b\":2}"];
    let calls = fed(&pieces, true);
    let summary: Vec<(&[u8], bool)> = calls
        .iter()
        .map(|c| (&c.arguments[..], c.error.is_none()))
        .collect();
    assert_eq!(
        summary,
        vec![(&b"{\"a\":1}"[..], true), (&b"{\"b\":2}"[..], true)]
    );
}

/// The text that closes `text` (JSON without strings but `"a"`): a value where one is due, then
/// every open container.
fn closing(text: &[u8]) -> Vec<u8> {
    let mut open = Vec::new();
    let mut in_string = false;
    for &b in text {
        match (in_string, b) {
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b'{') => open.push(b'}'),
            (false, b'[') => open.push(b']'),
            (false, b'}' | b']') => {
                open.pop();
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if in_string {
        out.push(b'"');
    }
    if matches!(
        text.iter().rev().find(|b| !b.is_ascii_whitespace()),
        Some(b':' | b',')
    ) {
        out.push(b'1');
    }
    out.extend(open.iter().rev());
    out
}

/// Appends to `text` one token that keeps it a valid prefix of a JSON value, picked by
/// `choice` among those the grammar allows; `levels` holds each open container (`{` or `[`)
/// and how many members it has. Objects have at most the keys `a` and `b`, each once.
fn grow(text: &mut Vec<u8>, levels: &mut Vec<(u8, usize)>, choice: usize) {
    let last = text
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace())
        .copied();
    let value_due = matches!(last, Some(b':' | b',' | b'[')) || last.is_none();
    let mut options: Vec<&[u8]> = Vec::new();
    match levels.last().copied() {
        Some((b'{', members)) if last == Some(b'{') => {
            options.extend([&b"\"a\":"[..], b"}"]);
            let _ = members;
        }
        Some((b'{', members)) if !value_due => {
            options.push(b"}");
            if members == 1 {
                options.push(b",\"b\":");
            }
        }
        Some((b'[', _)) if !value_due => options.extend([&b","[..], b"]"]),
        None if !value_due => return,
        Some((b'[', _)) if last == Some(b'[') => options.push(b"]"),
        _ => {}
    }
    if value_due {
        options.extend([&b"{"[..], b"[", b"1", b"\"a\"", b"{}", b"[]"]);
    }
    let token = options[choice % options.len()];
    text.extend_from_slice(token);
    match token {
        b"{" => levels.push((b'{', 0)),
        b"[" => levels.push((b'[', 0)),
        b"}" | b"]" => {
            levels.pop();
        }
        b"\"a\":" | b",\"b\":" => {
            if let Some(level) = levels.last_mut() {
                level.1 += 1;
            }
        }
        _ => {}
    }
}

/// Chunks that each extend the one before by a few tokens, all valid prefixes of one value
/// that starts `{"a":`: a resending provider's chunks, and, appended, sometimes valid too.
fn extending_chunks() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<usize>(), 1..4), 2..5).prop_map(|steps| {
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        let mut text = b"{\"a\":".to_vec();
        let mut levels = vec![(b'{', 1)];
        for step in steps {
            for choice in step {
                grow(&mut text, &mut levels, choice);
            }
            if chunks.last() != Some(&text) {
                chunks.push(text.clone());
            }
        }
        chunks
    })
}

fn whole_value(text: &[u8]) -> bool {
    let mut scanner = Scanner::new(ScanConfig::default());
    scanner.push(text);
    scanner.finish().is_ok()
}

proptest! {
    // Appended chunks that start with the text before them are rarely valid: most cases are
    // thrown away before the one that counts.
    #![proptest_config(ProptestConfig {
        cases: 2000,
        max_global_rejects: 20_000,
        ..ProptestConfig::default()
    })]

    /// Chunks that each start with the one before, appended and then closed: when that is
    /// valid JSON, it is the call's text (the resend reading is dropped once it breaks).
    #[test]
    fn extending_chunks_that_append_validly_are_appended(
        chunks in extending_chunks(),
        name_every_chunk in any::<bool>(),
    ) {
        let mut pieces = chunks.clone();
        let appended: Vec<u8> = chunks.concat();
        pieces.push(closing(&appended));
        let text: Vec<u8> = pieces.concat();
        prop_assume!(whole_value(&text));
        let pieces: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
        let calls = fed(&pieces, name_every_chunk);
        prop_assert_eq!(calls.len(), 1, "{:?}", calls);
        prop_assert!(calls[0].error.is_none(), "{:?}", calls[0]);
        prop_assert_eq!(&calls[0].arguments, &text);
    }

    /// The same chunks as a resending provider's, the last one closed: read as the last chunk
    /// unless appending them is also one whole value.
    #[test]
    fn extending_chunks_that_only_resend_validly_are_resent(
        chunks in extending_chunks(),
        name_every_chunk in any::<bool>(),
    ) {
        let mut chunks = chunks;
        let last = chunks.last().cloned().unwrap_or_default();
        chunks.push([&last[..], &closing(&last)].concat());
        let text = chunks.last().cloned().unwrap_or_default();
        prop_assume!(whole_value(&text));
        let appended: Vec<u8> = chunks.concat();
        let pieces: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let calls = fed(&pieces, name_every_chunk);
        prop_assert_eq!(calls.len(), 1, "{:?}", calls);
        prop_assert!(calls[0].error.is_none(), "{:?}", calls[0]);
        let expected = if whole_value(&appended) { &appended } else { &text };
        prop_assert_eq!(&calls[0].arguments, expected);
    }
}

fn named(asm: &mut Assembler, id: Option<&str>, text: &[u8]) {
    let delta = Delta {
        index: Some(0),
        id,
        name: Some("tool"),
        kind: None,
        arguments: Some(Arguments::Text(text)),
        start: false,
    };
    asm.feed(&delta).expect("feed");
}

#[test]
fn a_named_resend_with_whitespace_after_a_whole_value_is_the_same_call() {
    for pieces in [
        vec![&b"{}"[..], b"{} "],
        vec![&b"{\"a\":\""[..], b"{\"a\":\"x\"}", b"{\"a\":\"x\"} "],
    ] {
        let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
        for piece in &pieces {
            named(&mut asm, None, piece);
        }
        let calls = asm.finish().expect("finish");
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
        assert_eq!(&calls[0].arguments[..], *pieces.last().expect("pieces"));
        assert_eq!(calls[0].warnings, vec!["cumulative_arguments"]);
    }
}

#[test]
fn a_new_id_while_fragments_are_held_starts_the_next_call() {
    // Held: `{"a":{"a":1}` appended, `{"a":1}` resent. Another call under the same index, with
    // its own id, repeats the same text: it is not a repeat of the first call.
    let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
    named(&mut asm, Some("A"), b"{\"a\":");
    feed(&mut asm, false, b"{\"a\":1}");
    named(&mut asm, Some("B"), b"{\"a\":1}");
    let calls = asm.finish().expect("finish");
    let summary: Vec<(Option<&str>, &[u8])> = calls
        .iter()
        .map(|c| (c.id.as_deref(), &c.arguments[..]))
        .collect();
    assert_eq!(
        summary,
        vec![
            (Some("A"), &b"{\"a\":1}"[..]),
            (Some("B"), &b"{\"a\":1}"[..])
        ]
    );
}

/// `{"children": [` then `{"children": [], "name": "leaf"}`: appended, unfinished; resent, a
/// whole value. Only a stream that ends normally reads the resend.
fn look_alike() -> (Assembler, Vec<u8>) {
    let pieces: [&[u8]; 2] = [
        b"{\"children\": [",
        b"{\"children\": [], \"name\": \"leaf\"}",
    ];
    let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
    feed(&mut asm, true, pieces[0]);
    feed(&mut asm, false, pieces[1]);
    (asm, pieces.concat())
}

#[test]
fn held_fragments_of_a_call_the_limit_cut_are_appended_even_after_its_end() {
    let (mut asm, appended) = look_alike();
    asm.end_call(0).expect("end");
    asm.limit_reached().expect("limit");
    let calls = asm.finish().expect("finish");
    assert_eq!(calls[0].arguments, appended);
    let kind = calls[0].error.as_ref().map(|e| e.kind);
    assert_eq!(kind, Some(toolwire::ErrorKind::Truncated));
    // Ended normally, the resend is read.
    let (mut asm, _) = look_alike();
    asm.end_call(0).expect("end");
    let calls = asm.finish().expect("finish");
    assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
    assert_eq!(
        calls[0].arguments,
        b"{\"children\": [], \"name\": \"leaf\"}"
    );
}

#[test]
fn a_whole_text_summary_decides_held_fragments_by_the_reading_it_matches() {
    let (mut asm, appended) = look_alike();
    assert!(asm.confirm_whole(0, &appended));
    assert_eq!(asm.arguments(0), Some(&appended[..]));
    let (mut asm, _) = look_alike();
    // Spaced otherwise, the same tokens.
    assert!(asm.confirm_whole(0, b"{\"children\":[],\"name\":\"leaf\"}"));
    assert_eq!(
        asm.arguments(0),
        Some(&b"{\"children\": [], \"name\": \"leaf\"}"[..])
    );
    let (mut asm, _) = look_alike();
    assert!(!asm.confirm_whole(0, b"{\"children\": [1]}"));
}

/// A violation carried by the last fragment of a call, one that starts with all the text
/// before it (`" "` then `" {...}"`), became certain only when `finish` read the fragment one
/// way: the first drain after `finish` hands it out, as a drain hands out any other, and the
/// errors drained along the way and after `finish` are those of the whole text fed at once.
#[test]
fn a_violation_decided_by_finish_is_drained_after_it() {
    for pieces in [
        &[&b" "[..], br#" {"s": "abcd"}"#][..],
        &[&b"\n"[..], b"\n{\"x\": 1}"],
        &[&b" "[..], br#" {"b": [1, "a"]}"#, b""],
        &[&b"  "[..], br#"{"s": "abcd"}"#],
    ] {
        let text: Vec<u8> = pieces.concat();
        let (at_once, _, finished_at_once) = whole(&text);
        let mut asm = assembler(false);
        let mut drained = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            feed(&mut asm, i == 0, piece);
            drained.extend(early(asm.drain_errors()));
        }
        let calls = asm.finish().expect("finish");
        drained.extend(early(asm.drain_errors()));
        assert_eq!(drained, at_once, "{pieces:?}");
        assert!(!drained.is_empty(), "{pieces:?}");
        assert!(asm.drain_errors().is_empty(), "each is handed out once");
        assert_eq!(summary(&calls[0]), finished_at_once, "{pieces:?}");
    }
}
