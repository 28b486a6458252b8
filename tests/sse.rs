//! The raw SSE path end to end: WHATWG framing (`sse`), provider envelopes per format and per
//! provider quirk (`envelope` through `gateway::StreamDecoder`), the split-anywhere property, and
//! an ignored throughput probe (`cargo test --release --test sse -- --ignored --nocapture`).
//!
//! Fixtures are recorded-style bodies in `tests/data/sse/`; quirk files are named after their
//! number in the provider-quirks spec.

use proptest::prelude::*;
use toolwire::assembler::{warning, Assembler, AssemblerConfig};
use toolwire::envelope::{FinishReason, Format, Reasoning};
use toolwire::error::ErrorKind;
use toolwire::gateway::{StreamDecoder, StreamErrorKind};
use toolwire::sse::{Framer, SseConfig, SseError, Tail};

// =============================================================================================
// Framing

#[derive(Debug, Clone, PartialEq, Eq)]
struct Ev {
    event: String,
    data: String,
    id: String,
}

fn ev(event: &str, data: &str, id: &str) -> Ev {
    Ev {
        event: event.into(),
        data: data.into(),
        id: id.into(),
    }
}

fn frame_with(framer: &mut Framer, chunks: &[&[u8]]) -> (Vec<Ev>, Vec<SseError>, Tail) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for chunk in chunks {
        let r = framer.push(chunk, |e| {
            out.push(Ev {
                event: String::from_utf8_lossy(e.event).into_owned(),
                data: String::from_utf8_lossy(e.data).into_owned(),
                id: String::from_utf8_lossy(e.id).into_owned(),
            });
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    let tail = framer.finish();
    (out, errors, tail)
}

fn frame(chunks: &[&[u8]]) -> (Vec<Ev>, Tail) {
    let (events, errors, tail) = frame_with(&mut Framer::default(), chunks);
    assert!(errors.is_empty(), "{errors:?}");
    (events, tail)
}

fn frame_one(body: &str) -> Vec<Ev> {
    let (events, tail) = frame(&[body.as_bytes()]);
    assert_eq!(tail, Tail::Clean);
    events
}

#[test]
fn single_event() {
    assert_eq!(frame_one("data: hello\n\n"), vec![ev("", "hello", "")]);
}

#[test]
fn data_lines_are_joined_with_newline() {
    assert_eq!(
        frame_one("data: a\ndata: b\ndata:\ndata: c\n\n"),
        vec![ev("", "a\nb\n\nc", "")]
    );
}

#[test]
fn only_one_space_after_the_colon_is_removed() {
    assert_eq!(
        frame_one("data:  two\n\ndata:none\n\ndata:\ttab\n\n"),
        vec![ev("", " two", ""), ev("", "none", ""), ev("", "\ttab", "")]
    );
}

#[test]
fn field_without_colon_has_empty_value() {
    assert_eq!(frame_one("data\n\n"), vec![ev("", "", "")]);
    assert_eq!(frame_one("data\ndata\n\n"), vec![ev("", "\n", "")]);
}

#[test]
fn empty_data_field_still_dispatches() {
    assert_eq!(frame_one("data:\n\n"), vec![ev("", "", "")]);
}

#[test]
fn event_type_is_per_event() {
    assert_eq!(
        frame_one("event: ping\ndata: 1\n\ndata: 2\n\n"),
        vec![ev("ping", "1", ""), ev("", "2", "")]
    );
}

#[test]
fn event_type_defaults_to_message() {
    let mut framer = Framer::default();
    let mut types = Vec::new();
    let _ = framer.push(b"data: x\n\nevent: e\ndata: y\n\n", |e| {
        types.push(e.event_type().to_vec());
    });
    assert_eq!(types, vec![b"message".to_vec(), b"e".to_vec()]);
}

#[test]
fn event_without_data_is_not_dispatched() {
    assert_eq!(
        frame_one("event: foo\n\nid: 7\n\n: comment\n\ndata: x\n\n"),
        vec![ev("", "x", "7")]
    );
}

#[test]
fn last_event_id_persists_and_nul_ids_are_ignored() {
    let events = frame_one("id: 1\ndata: a\n\ndata: b\n\nid: bad\0id\ndata: c\n\nid\ndata: d\n\n");
    assert_eq!(
        events,
        vec![
            ev("", "a", "1"),
            ev("", "b", "1"),
            ev("", "c", "1"),
            ev("", "d", "")
        ]
    );
}

#[test]
fn retry_is_parsed_only_from_digits() {
    let mut framer = Framer::default();
    let _ = framer.push(b"retry: 1500\n\n", |_| {});
    assert_eq!(framer.retry(), Some(1500));
    let _ = framer.push(b"retry: 15x\n\nretry: -3\n\nretry:\n\n", |_| {});
    assert_eq!(framer.retry(), Some(1500));
}

#[test]
fn comments_and_unknown_fields_are_ignored() {
    assert_eq!(
        frame_one(": keep-alive\n:\ndata: a\n: inside\nfoo: bar\nDATA: no\n\n"),
        vec![ev("", "a", "")]
    );
}

#[test]
fn all_three_line_endings() {
    assert_eq!(
        frame_one("data: a\r\n\r\ndata: b\r\rdata: c\n\ndata: d\r\ndata: e\n\r"),
        vec![
            ev("", "a", ""),
            ev("", "b", ""),
            ev("", "c", ""),
            ev("", "d\ne", ""),
        ]
    );
}

#[test]
fn crlf_split_between_pushes_is_one_terminator() {
    let (events, tail) = frame(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
    assert_eq!(events, vec![ev("", "a\nb", "")]);
    assert_eq!(tail, Tail::Clean);
    // A lone CR at the end of a push followed by a non-LF byte is still a terminator.
    let (events, _) = frame(&[b"data: a\r", b"data: b\r", b"\r"]);
    assert_eq!(events, vec![ev("", "a\nb", "")]);
}

#[test]
fn field_name_and_payload_split_between_pushes() {
    let (events, _) = frame(&[b"da", b"ta", b": {\"a\":", b"1}\n", b"\n"]);
    assert_eq!(events, vec![ev("", "{\"a\":1}", "")]);
    let (events, _) = frame(&[b"eve", b"nt: x\nda", b"ta:", b" y\n\n"]);
    assert_eq!(events, vec![ev("x", "y", "")]);
}

#[test]
fn utf8_character_split_between_pushes() {
    let body = "data: 東京 ☀️\n\n".as_bytes();
    for cut in 0..=body.len() {
        let (events, _) = frame(&[&body[..cut], &body[cut..]]);
        assert_eq!(events, vec![ev("", "東京 ☀️", "")], "cut at {cut}");
    }
}

#[test]
fn leading_bom_is_skipped_even_when_split() {
    let body = b"\xEF\xBB\xBFdata: a\n\n";
    for cut in 0..=body.len() {
        let (events, _) = frame(&[&body[..cut], &body[cut..]]);
        assert_eq!(events, vec![ev("", "a", "")], "cut at {cut}");
    }
    // Only one, and only at the very start.
    let (events, _) = frame(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"]);
    assert!(
        events.is_empty(),
        "the second BOM belongs to the field name"
    );
    let (events, _) = frame(&[b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"]);
    assert_eq!(events, vec![ev("", "a", "")]);
}

#[test]
fn bom_prefix_that_is_not_a_bom_is_content() {
    let (events, tail) = frame(&[b"\xEF", b"\xBBx\n\ndata: a\n\n"]);
    assert_eq!(events, vec![ev("", "a", "")]);
    assert_eq!(tail, Tail::Clean);
    let mut framer = Framer::default();
    let _ = framer.push(b"\xEF\xBB", |_| {});
    assert_eq!(framer.finish(), Tail::Truncated { pending_bytes: 2 });
}

#[test]
fn trailing_event_without_blank_line_is_cut_not_dispatched() {
    let (events, tail) = frame(&[b"data: a\n\ndata: b\n"]);
    assert_eq!(events, vec![ev("", "a", "")]);
    assert_eq!(tail, Tail::Truncated { pending_bytes: 1 });
    let (events, tail) = frame(&[b"data: a\n\ndata: [DO"]);
    assert_eq!(events, vec![ev("", "a", "")]);
    assert_eq!(tail, Tail::Truncated { pending_bytes: 9 });
    let (_, tail) = frame(&[b"data: a\n\n: trailing comment\n"]);
    assert_eq!(tail, Tail::Clean);
}

#[test]
fn data_inside_one_push_is_borrowed() {
    let body = b"event: x\ndata: {\"a\":1}\n\n";
    let mut framer = Framer::default();
    let mut borrowed = false;
    let _ = framer.push(body, |e| {
        borrowed = body.as_ptr_range().contains(&e.data.as_ptr());
    });
    assert!(borrowed);
}

#[test]
fn oversized_event_is_dropped_and_framing_goes_on() {
    let mut framer = Framer::new(SseConfig { max_event_bytes: 8 });
    let (events, errors, tail) = frame_with(
        &mut framer,
        &[
            b"data: 12345\ndata: 6789\n\ndata: ok\n\n",
            b"data: 0123456789",
            b"abc\n\ndata: ok2\n\n",
        ],
    );
    assert_eq!(events, vec![ev("", "ok", ""), ev("", "ok2", "")]);
    assert_eq!(errors.len(), 2);
    assert!(matches!(
        errors[0],
        SseError::EventTooLarge { limit: 8, .. }
    ));
    assert_eq!(tail, Tail::Clean);
}

#[test]
fn carried_data_line_completed_past_the_limit_is_dropped() {
    let mut framer = Framer::new(SseConfig {
        max_event_bytes: 16,
    });
    let long = format!("{}\ndata: ok\n\n", "c".repeat(64));
    let (events, errors, tail) = frame_with(
        &mut framer,
        &[b"data: short", long.as_bytes(), b"data: next\n\n"],
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    // The line's event is skipped up to its blank line; the next event is intact.
    assert_eq!(events, vec![ev("", "next", "")]);
    assert_eq!(tail, Tail::Clean);
}

#[test]
fn a_comment_or_id_line_past_the_limit_is_skipped_alone() {
    // Only data can hold part of a call: a runaway comment, `id` or `retry` line costs its
    // event nothing, however the body is split.
    let long = "c".repeat(64);
    for line in [
        format!(": {long}"),
        format!("id: {long}"),
        format!("retry: {long}"),
    ] {
        let body = format!("data: a\n{line}\ndata: b\n\ndata: next\n\n");
        for cut in 0..=body.len() {
            let mut framer = Framer::new(SseConfig {
                max_event_bytes: 16,
            });
            let (head, rest) = body.as_bytes().split_at(cut);
            let (events, errors, tail) = frame_with(&mut framer, &[head, rest]);
            assert!(errors.is_empty(), "{line:.8} cut at {cut}: {errors:?}");
            assert_eq!(
                events,
                vec![ev("", "a\nb", ""), ev("", "next", "")],
                "cut at {cut}"
            );
            assert_eq!(tail, Tail::Clean);
        }
    }
}

#[test]
fn exactly_at_the_limit_is_fine() {
    // The limit counts joined data; a line may be LINE_SLACK longer (for `data: `).
    let mut framer = Framer::new(SseConfig { max_event_bytes: 8 });
    let (events, errors, _) = frame_with(&mut framer, &[b"data: 12", b"345678\n\n"]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(events, vec![ev("", "12345678", "")]);
    let (events, errors, tail) =
        frame_with(&mut framer, &[b"data: 123456789\n\n", b"data: 12", b"3"]);
    assert!(events.is_empty());
    assert_eq!(errors.len(), 1, "only the first event passes the cap");
    assert_eq!(tail, Tail::Truncated { pending_bytes: 9 });
}

const MIXED: &[u8] = b"\xEF\xBB\xBF: hi\r\nretry: 10\nid: 1\nevent: a\ndata: x\ndata:  y\r\n\r\n\
data: {\"t\":\"\xC3\xA9\xE6\x9D\xB1\"}\r\rid: 2\ndata\n\nevent: only\n\n:c\ndata: last\n\n";

fn mixed_expected() -> Vec<Ev> {
    vec![
        ev("a", "x\n y", "1"),
        ev("", "{\"t\":\"é東\"}", "1"),
        ev("", "", "2"),
        ev("", "last", "2"),
    ]
}

#[test]
fn every_two_and_three_piece_split_of_a_mixed_body() {
    let body = MIXED;
    for i in 0..=body.len() {
        let (events, tail) = frame(&[&body[..i], &body[i..]]);
        assert_eq!(events, mixed_expected(), "split at {i}");
        assert_eq!(tail, Tail::Clean);
        for j in i..=body.len() {
            let (events, _) = frame(&[&body[..i], &body[i..j], &body[j..]]);
            assert_eq!(events, mixed_expected(), "split at {i},{j}");
        }
    }
}

#[test]
fn byte_by_byte() {
    let pieces: Vec<&[u8]> = MIXED.chunks(1).collect();
    assert_eq!(frame(&pieces).0, mixed_expected());
}

/// One line of a generated event stream (without its terminator).
fn line_strategy() -> impl Strategy<Value = String> {
    let value = "[a-z é東\"{}:]{0,24}";
    prop_oneof![
        value.prop_map(|v| format!("data: {v}")),
        value.prop_map(|v| format!("data:{v}")),
        Just("data".to_owned()),
        value.prop_map(|v| format!("event: {v}")),
        value.prop_map(|v| format!("id: {v}")),
        value.prop_map(|v| format!(": {v}")),
        Just("retry: 1500".to_owned()),
        Just("foo: bar".to_owned()),
        Just(String::new()),
        Just(String::new()),
    ]
}

#[derive(Debug, PartialEq, Eq)]
struct Framed {
    events: Vec<Ev>,
    first_error: Option<SseError>,
    dropped: u64,
    tail: Tail,
}

fn frame_pieces(max: usize, pieces: &[&[u8]]) -> Framed {
    let mut framer = Framer::new(SseConfig {
        max_event_bytes: max,
    });
    let (events, errors, tail) = frame_with(&mut framer, pieces);
    Framed {
        events,
        first_error: errors.into_iter().next(),
        dropped: framer.dropped_events(),
        tail,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Framing is split-invariant, size cap and its errors included.
    #[test]
    fn framing_is_split_invariant(
        bom in any::<bool>(),
        lines in prop::collection::vec((line_strategy(), 0usize..3), 0..24),
        max in 4usize..48,
        cuts in prop::collection::vec(0usize..10_000, 0..12),
    ) {
        let mut body = Vec::new();
        if bom {
            body.extend_from_slice(b"\xEF\xBB\xBF");
        }
        for (line, ending) in &lines {
            body.extend_from_slice(line.as_bytes());
            body.extend_from_slice([&b"\n"[..], b"\r\n", b"\r"][*ending]);
        }
        let whole = frame_pieces(max, &[&body]);
        let pieces = chunked(&body, &cuts);
        let refs: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
        prop_assert_eq!(frame_pieces(max, &refs), whole);
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        prop_assert_eq!(frame_pieces(max, &bytes), frame_pieces(max, &[&body]));
    }
}

// =============================================================================================
// Gateway helpers

#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    ordinal: usize,
    index: Option<i64>,
    id: Option<String>,
    name: Option<String>,
    args: String,
    error: Option<ErrorKind>,
    metadata: Vec<(String, String)>,
    warnings: Vec<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    calls: Vec<Call>,
    text: String,
    usage: Option<String>,
    finish: Option<FinishReason>,
    finish_raw: Option<String>,
    format: Option<Format>,
    done: bool,
    events: u64,
    errors: Vec<(StreamErrorKind, u64, u64)>,
    reasoning: Vec<Reasoning>,
}

impl Outcome {
    fn call(&self, ordinal: usize) -> &Call {
        &self.calls[ordinal]
    }
    fn count(&self, kind: StreamErrorKind) -> u64 {
        self.errors.iter().find(|e| e.0 == kind).map_or(0, |e| e.2)
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/sse/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = format!("{}/tests/data/sse", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| {
            std::path::Path::new(n)
                .extension()
                .is_some_and(|x| x == "sse")
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| (n.clone(), fixture(&n)))
        .collect()
}

fn decoder() -> StreamDecoder {
    StreamDecoder::new(Assembler::new(AssemblerConfig::default()).expect("default config"))
}

fn collect(mut d: StreamDecoder) -> Outcome {
    let calls = d
        .finish()
        .expect("first finish")
        .into_iter()
        .map(|c| Call {
            ordinal: c.ordinal,
            index: c.index,
            id: c.id,
            name: c.name,
            args: String::from_utf8(c.arguments).expect("arguments are UTF-8"),
            error: c.error.map(|e| e.kind),
            metadata: c.metadata,
            warnings: c.warnings,
        })
        .collect();
    let errors = d
        .errors()
        .iter()
        .map(|e| (e.kind, e.event, d.error_count(e.kind)))
        .collect();
    Outcome {
        calls,
        text: d.text().into_owned(),
        usage: d.usage(),
        finish: d.finish_reason(),
        finish_raw: d.finish_reason_raw().map(str::to_owned),
        format: d.format(),
        done: d.done(),
        events: d.events(),
        errors,
        reasoning: d.reasoning().to_vec(),
    }
}

fn run_chunks<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut d = decoder();
    for p in pieces {
        d.push(p).expect("push before finish");
    }
    collect(d)
}

fn run(body: &[u8]) -> Outcome {
    run_chunks([body])
}

fn run_fixture(name: &str) -> Outcome {
    let body = fixture(name);
    let whole = run(&body);
    // Every fixture must give the same result byte by byte as whole.
    let bytewise = run_chunks(body.chunks(1));
    assert_eq!(whole, bytewise, "{name}: whole vs byte-by-byte");
    whole
}

fn ok(c: &Call, name: &str, args: &str) {
    assert_eq!(c.name.as_deref(), Some(name), "{c:?}");
    assert_eq!(c.args, args, "{c:?}");
    assert_eq!(c.error, None, "{c:?}");
}

fn value(args: &str) -> serde_json::Value {
    serde_json::from_str(args).expect("valid JSON arguments")
}

// =============================================================================================
// Formats

#[test]
fn openai_chat_four_interleaved_parallel_calls() {
    let o = run_fixture("openai_chat_parallel4.sse");
    assert_eq!(o.format, Some(Format::OpenAiChat));
    assert_eq!(o.calls.len(), 4);
    ok(
        o.call(0),
        "get_weather",
        r#"{"location": "Paris, France", "unit": "celsius"}"#,
    );
    ok(
        o.call(1),
        "get_weather",
        r#"{"location": "Tōkyō 東京", "unit": "celsius"}"#,
    );
    ok(
        o.call(2),
        "search_flights",
        r#"{"from": "CDG", "to": "HND", "date": "2026-12-01", "max_stops": 1}"#,
    );
    ok(o.call(3), "get_time", r#"{"timezone": "Asia/Tokyo"}"#);
    let ids: Vec<_> = o
        .calls
        .iter()
        .map(|c| c.id.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        ids,
        [
            "call_9fKq2VbX1mTz",
            "call_Lw3HjP0sYc7e",
            "call_Qz8RtN4aUe2d",
            "call_Mb6XcD5fGh1k"
        ]
    );
    assert_eq!(
        o.calls.iter().map(|c| c.index).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2), Some(3)]
    );
    assert_eq!(o.finish, Some(FinishReason::ToolCalls));
    assert_eq!(o.finish_raw.as_deref(), Some("tool_calls"));
    let usage = value(o.usage.as_deref().unwrap_or("null"));
    assert_eq!(usage["total_tokens"], 508);
    assert!(o.done);
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    assert_eq!(o.text, "");
}

#[test]
fn openai_chat_text_only() {
    let o = run_fixture("openai_chat_text.sse");
    assert!(o.calls.is_empty());
    assert_eq!(
        o.text,
        "Bonjour ! Il fait 12 °C à Paris — ensoleillé ☀️.\n\"ok\""
    );
    assert_eq!(o.finish, Some(FinishReason::Stop));
    assert!(o.errors.is_empty());
}

#[test]
fn openai_responses_two_calls() {
    let o = run_fixture("openai_responses_2calls.sse");
    assert_eq!(o.format, Some(Format::OpenAiResponses));
    assert_eq!(o.calls.len(), 2);
    ok(
        o.call(0),
        "get_weather",
        r#"{"location":"Paris, France","unit":"celsius"}"#,
    );
    ok(
        o.call(1),
        "send_email",
        r#"{"to":"ops@example.com","subject":"Status \"green\"","body":"All good.\nSee ya"}"#,
    );
    assert_eq!(o.call(0).id.as_deref(), Some("call_tU5r0oWq3ZyXk8Lm"));
    assert_eq!(o.call(1).id.as_deref(), Some("call_Hn2bV7cX4mQp1Rs9"));
    assert_eq!(
        o.call(0).index,
        Some(1),
        "output_index: the message item is output 0"
    );
    assert_eq!(
        o.call(0).metadata,
        vec![(
            "item_id".to_owned(),
            "\"fc_68d2a1f3b1c48190aa11bb22cc33dd44\"".to_owned()
        )]
    );
    assert_eq!(o.text, "Checking both now.");
    assert_eq!(o.finish, Some(FinishReason::ToolCalls));
    assert_eq!(o.finish_raw.as_deref(), Some("completed"));
    assert_eq!(
        value(o.usage.as_deref().unwrap_or("null"))["output_tokens"],
        71
    );
    assert!(o.done);
    assert!(o.errors.is_empty(), "{:?}", o.errors);
}

#[test]
fn anthropic_text_thinking_and_two_tool_uses() {
    let o = run_fixture("anthropic_text_thinking_2tools.sse");
    assert_eq!(o.format, Some(Format::Anthropic));
    assert_eq!(o.calls.len(), 2);
    ok(
        o.call(0),
        "get_weather",
        r#"{"location": "Paris, France", "unit": "celsius"}"#,
    );
    ok(
        o.call(1),
        "book_table",
        r#"{"restaurant": "Le Comptoir", "party_size": 4, "time": "20:00", "notes": "window seat \u2014 \"quiet\""}"#,
    );
    assert_eq!(
        o.call(0).id.as_deref(),
        Some("toolu_01A09q90qw90lq917835lq9")
    );
    assert_eq!(
        (o.call(0).index, o.call(1).index),
        (Some(2), Some(3)),
        "indexes count text and thinking blocks"
    );
    assert_eq!(
        o.text, "I'll check the weather and book a table for you.",
        "thinking is not text"
    );
    // Kept whole, to be sent back before the calls in the next request.
    assert_eq!(
        o.reasoning,
        [Reasoning::Thinking {
            thinking:
                "The user wants the weather in Paris and to book a table. I'll call both tools."
                    .to_owned(),
            signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".to_owned(),
        }]
    );
    assert_eq!(o.finish, Some(FinishReason::ToolCalls));
    assert_eq!(o.finish_raw.as_deref(), Some("tool_use"));
    // Usage is merged over `message_start` (input) and `message_delta` (output).
    assert_eq!(
        o.usage.as_deref(),
        Some(
            r#"{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":187}"#
        )
    );
    assert!(o.done);
    assert!(o.errors.is_empty(), "{:?}", o.errors);
}

fn anthropic_body(events: &[(&str, &str)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (t, data) in events {
        body.extend_from_slice(format!("event: {t}\ndata: {data}\n\n").as_bytes());
    }
    body
}

/// A `tool_use` block with the `{}` placeholder and no input, as Anthropic streams a tool
/// without parameters (with one empty `input_json_delta` when `empty_delta`), then `tail`.
/// Tool blocks with an empty `{}` input, each with one `input_json_delta` of the given JSON
/// string content (`""`, the usual first delta, or JSON whitespace) or none.
fn empty_tool_blocks(blocks: &[(&str, Option<&str>)], tail: &[(&str, &str)]) -> Vec<u8> {
    let mut events: Vec<(&str, String)> = Vec::new();
    for (index, (name, delta)) in blocks.iter().enumerate() {
        events.push((
            "content_block_start",
            format!(
                r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"tool_use","id":"toolu_{index}","name":"{name}","input":{{}}}}}}"#
            ),
        ));
        if let Some(content) = delta {
            events.push((
                "content_block_delta",
                format!(
                    r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"input_json_delta","partial_json":"{content}"}}}}"#
                ),
            ));
        }
        events.push((
            "content_block_stop",
            format!(r#"{{"type":"content_block_stop","index":{index}}}"#),
        ));
    }
    events.extend(tail.iter().map(|(t, d)| (*t, (*d).to_owned())));
    let borrowed: Vec<(&str, &str)> = events.iter().map(|(t, d)| (*t, d.as_str())).collect();
    anthropic_body(&borrowed)
}

const PING: (&str, &str) = ("ping", r#"{"type":"ping"}"#);

#[test]
fn anthropic_tool_without_parameters_is_not_an_empty_arguments_anomaly() {
    // Anthropic streams a parameterless tool as `input: {}` plus one empty `input_json_delta`:
    // `{}` is the input as sent, not a missing one. `feed_chunk` reads it so; the raw path used
    // to drop the placeholder and flag `empty_arguments`.
    let body = empty_tool_blocks(
        &[("get_time", Some(""))],
        &[
            PING,
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}"#,
            ),
        ],
    );
    let o = run(&body);
    ok(o.call(0), "get_time", "{}");
    assert!(o.call(0).warnings.is_empty(), "{:?}", o.call(0).warnings);
}

#[test]
fn anthropic_tool_block_closed_without_input_at_max_tokens_is_truncated() {
    // The output limit cut the block before its input began: Anthropic closes the block, then
    // says `max_tokens`. The call must not run as a call without parameters, while an empty
    // block the message went on after is one.
    let body = empty_tool_blocks(
        &[("ping", None), ("get_time", Some(""))],
        &[
            PING,
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ],
    );
    let o = run(&body);
    ok(o.call(0), "ping", "{}");
    let cut = o.call(1);
    assert_eq!(cut.error, Some(ErrorKind::Truncated), "{cut:?}");
    assert!(cut.args.is_empty(), "{cut:?}");
}

#[test]
fn anthropic_tool_block_of_whitespace_alone_at_max_tokens_is_truncated() {
    // JSON whitespace is no input yet: the block is held as one without any delta is.
    for blank in ["  ", r"\n\t ", r"\u0020"] {
        let tail = [
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ];
        let body = empty_tool_blocks(&[("ping", Some(blank)), ("get_time", Some(blank))], &tail);
        let o = run(&body);
        ok(o.call(0), "ping", "{}");
        let cut = o.call(1);
        assert_eq!(cut.error, Some(ErrorKind::Truncated), "{blank}: {cut:?}");
    }
}

#[test]
fn anthropic_tool_block_closed_without_input_before_an_error_does_not_run() {
    // The provider gave up right after the block stopped: the message did not go on, so the
    // block is not known to be a call without parameters, and the error stops it as it stops
    // every call it had not ended (`feed_chunk` and the SDKs, which raise the event, agree).
    // A `ping` between them tells nothing either way.
    let error = (
        "error",
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    for tail in [vec![error], vec![PING, error]] {
        for delta in [None, Some(""), Some("  ")] {
            let o = run(&empty_tool_blocks(&[("get_time", delta)], &tail));
            let stopped = o.call(0);
            assert_eq!(
                stopped.error,
                Some(ErrorKind::Filtered),
                "{delta:?}: {stopped:?}"
            );
            assert_eq!(o.finish_raw.as_deref(), Some("error"));
        }
    }
}

#[test]
fn anthropic_tool_use_input_without_deltas_is_the_arguments() {
    let body = anthropic_body(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":1}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
        ),
    ]);
    let o = run(&body);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    ok(o.call(1), "get_time", "{}");
}

#[test]
fn anthropic_placeholder_input_is_not_taken_as_arguments() {
    let body = anthropic_body(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{ }}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
    ]);
    ok(run(&body).call(0), "get_weather", r#"{"city": "Paris"}"#);
}

#[test]
fn anthropic_server_tool_use_is_not_a_client_call() {
    let body = anthropic_body(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
    ]);
    let o = run(&body);
    assert!(o.calls.is_empty(), "{:?}", o.calls);
    assert_eq!(o.format, Some(Format::Anthropic));
}

#[test]
fn anthropic_refusal_stops_open_calls() {
    let body = anthropic_body(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"run","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"cmd\":\"rm"}}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":3}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]);
    let o = run(&body);
    assert_eq!(o.finish, Some(FinishReason::Refusal));
    assert_eq!(o.call(0).error, Some(ErrorKind::Filtered));
}

#[test]
fn anthropic_error_event_is_reported_and_the_stream_goes_on() {
    let body = anthropic_body(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        ("ping", r#"{"type": "ping"}"#),
    ]);
    let o = run(&body);
    assert_eq!(o.count(StreamErrorKind::ProviderError), 1);
    assert_eq!(o.errors[0].1, 2, "event number");
    // The response failed: its finish reason says so, as `feed_chunk` and the SDK path say.
    assert_eq!(o.finish, Some(FinishReason::Other));
    assert_eq!(o.finish_raw.as_deref(), Some("error"));
}

#[test]
fn anthropic_error_event_stops_a_call_it_had_not_ended() {
    // The first call ended with `content_block_stop`; the second has complete JSON but no stop
    // when the provider gives up: it must not come back runnable (`feed_chunk` agrees).
    let body = anthropic_body(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"g","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"b\":2}"}}"#,
        ),
        (
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
    ]);
    let o = run(&body);
    assert_eq!(o.count(StreamErrorKind::ProviderError), 1);
    ok(o.call(0), "f", r#"{"a":1}"#);
    assert_eq!(o.call(1).error, Some(ErrorKind::Filtered));
}

#[test]
fn responses_incomplete_reports_length_and_truncates() {
    let body = b"data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"write\",\"arguments\":\"\"}}\n\n\
data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"delta\":\"{\\\"text\\\":\\\"lor\"}\n\n\
data: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"output_tokens\":5}}}\n\n";
    let o = run(body);
    assert_eq!(o.finish, Some(FinishReason::Length));
    assert_eq!(o.finish_raw.as_deref(), Some("max_output_tokens"));
    assert_eq!(
        o.call(0).args,
        r#"{"text":"lor"#,
        "delta without output_index found by item_id"
    );
    assert_eq!(o.call(0).error, Some(ErrorKind::Truncated));
}

#[test]
fn responses_placeholder_arguments_in_item_added_are_not_the_start_of_the_deltas() {
    // Quirk 24: `added` carries `{}`, the deltas carry the arguments.
    let added = b"data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{}\"}}\n\n";
    let deltas = b"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"{\\\"a\\\":\"}\n\n\
data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"1}\"}\n\n";
    let completed =
        b"data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n";
    let o = run(&[&added[..], deltas, completed].concat());
    assert_eq!(o.call(0).args, r#"{"a":1}"#);
    assert_eq!(o.call(0).error, None);
    // Nothing else brought arguments: a response that ended well gives the call `added`'s;
    // one cut short does not.
    let o = run(&[&added[..], completed].concat());
    assert_eq!((o.call(0).args.as_str(), o.call(0).error), ("{}", None));
    let o = run(added);
    assert_eq!(o.call(0).error, Some(ErrorKind::Truncated));
}

#[test]
fn a_responses_event_sent_twice_is_read_once() {
    // Fault 5: by its `sequence_number` and bytes; numbers that do not rise are not read.
    let event = |seq: u32, delta: &str| {
        format!("data: {{\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"sequence_number\":{seq},\"delta\":\"{delta}\"}}\n\n")
    };
    let added = "data: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"\"}}\n\n";
    let completed = "data: {\"type\":\"response.completed\",\"sequence_number\":9,\"response\":{\"status\":\"completed\"}}\n\n";
    let (open, one, close) = (event(2, "{\\\"a\\\":"), event(3, "1"), event(4, "}"));
    let body = [added, &open, &one, &one, &close, completed].concat();
    assert_eq!(run(body.as_bytes()).call(0).args, r#"{"a":1}"#);
    let constant = [
        added,
        &event(1, "{\\\"a\\\":"),
        &event(1, "1"),
        &event(1, "1"),
        &event(1, "}"),
        completed,
    ]
    .concat();
    assert_eq!(run(constant.as_bytes()).call(0).args, r#"{"a":11}"#);
}

#[test]
fn responses_failed_is_a_provider_error() {
    let body = b"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n";
    let o = run(body);
    assert_eq!(o.finish, Some(FinishReason::Other));
    assert_eq!(o.finish_raw.as_deref(), Some("failed"));
    assert_eq!(o.count(StreamErrorKind::ProviderError), 1);
}

#[test]
fn responses_failed_stops_open_calls() {
    // A call whose arguments closed but whose item never got `output_item.done` must not come
    // back runnable from a failed response; the `feed_chunk` path stops it too.
    let body = b"data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"\"}}\n\n\
data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"{\\\"a\\\":1}\"}\n\n\
data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n";
    let o = run(body);
    assert_eq!(o.call(0).args, r#"{"a":1}"#);
    assert_eq!(o.call(0).error, Some(ErrorKind::Filtered));
    assert_eq!(o.finish_raw.as_deref(), Some("failed"));
}

#[test]
fn chat_content_filter_stops_calls() {
    let body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\ndata: [DONE]\n\n";
    let o = run(body);
    assert_eq!(o.finish, Some(FinishReason::ContentFilter));
    assert_eq!(o.call(0).error, Some(ErrorKind::Filtered));
}

#[test]
fn chat_refusal_text_makes_stop_a_refusal() {
    let body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":\"\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"I can't help with that.\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    let o = run(body);
    assert_eq!(o.finish, Some(FinishReason::Refusal));
    assert_eq!(o.finish_raw.as_deref(), Some("stop"));
    assert_eq!(o.text, "", "refusal text is not assistant text");
}

#[test]
fn chat_only_choice_zero_is_assembled() {
    let body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\"}},{\"index\":1,\"delta\":{\"content\":\"B\",\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n";
    let mut d = decoder();
    d.push(body).expect("push");
    assert_eq!(d.ignored_choices(), 1);
    // What choice 1 carried is not assembled, and the stream says so.
    assert_eq!(d.error_count(StreamErrorKind::OtherChoice), 1);
    let told = d.errors().first().expect("an error");
    assert_eq!((told.kind, told.event), (StreamErrorKind::OtherChoice, 1));
    assert!(
        told.message.starts_with("choice 1 carried"),
        "{}",
        told.message
    );
    let o = collect(d);
    assert_eq!(o.text, "A");
    assert!(o.calls.is_empty());
}

#[test]
fn chat_other_choices_are_told_once_each_and_empty_ones_not_at_all() {
    let body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}},{\"index\":1,\"delta\":{\"content\":\"\",\"tool_calls\":[null]}}]}\n\n\
data: {\"choices\":[{\"index\":2,\"delta\":{\"refusal\":\"no\"}}]}\n\n\
data: {\"choices\":[{\"index\":1,\"delta\":{\"function_call\":{\"name\":\"f\"}}}]}\n\n\
data: {\"choices\":[{\"index\":2,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\n";
    let mut d = decoder();
    d.push(body).expect("push");
    assert_eq!(d.error_count(StreamErrorKind::OtherChoice), 2);
    let told = d.errors().first().expect("an error");
    assert_eq!((told.kind, told.event), (StreamErrorKind::OtherChoice, 2));
    assert_eq!(
        told.message,
        "2 choices (the lowest 1) carried text or tool calls that were not assembled: only \
         choice 0 is"
    );
}

#[test]
fn chat_legacy_function_call_delta() {
    let body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"function_call\":{\"name\":\"f\",\"arguments\":\"\"}}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"function_call\":{\"arguments\":\"{\\\"a\\\":1}\"}}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"function_call\"}]}\n\n";
    let o = run(body);
    ok(o.call(0), "f", r#"{"a":1}"#);
    assert_eq!(o.finish, Some(FinishReason::ToolCalls));
}

#[test]
fn chat_mid_stream_error_object() {
    let o =
        run(b"data: {\"error\":{\"message\":\"rate limited\",\"type\":\"rate_limit_error\"}}\n\n");
    assert_eq!(o.count(StreamErrorKind::ProviderError), 1);
}

#[test]
fn malformed_and_unknown_events_are_counted_and_skipped() {
    let o = run_fixture("openai_chat_malformed_events.sse");
    assert_eq!(o.count(StreamErrorKind::MalformedEvent), 3);
    assert_eq!(o.count(StreamErrorKind::UnknownEvent), 2);
    assert_eq!(o.count(StreamErrorKind::ProviderError), 1);
    assert_eq!(o.format, Some(Format::OpenAiChat));
    // The `tool_calls` finish after the provider's error line does not undo the error.
    assert_eq!(o.finish, Some(FinishReason::Other));
    assert_eq!(o.finish_raw.as_deref(), Some("error"));
    assert_eq!(o.errors[0].0, StreamErrorKind::MalformedEvent);
    assert_eq!(o.errors[0].1, 2, "the first malformed event is event 2");
    // The truncated event 2 contributed nothing: the call continues from event 7. The
    // provider's error line ended the response as an `error` event does (the openai SDK raises
    // it and reads no further): the call it interrupted does not run.
    assert_eq!(o.call(0).args, r#"{"a":2}"#);
    assert_eq!(o.call(0).error, Some(ErrorKind::Filtered));
}

/// A Chat chunk carrying `args` for the call at `index` (its first chunk names it).
fn chat_args(index: u32, args: &str, first: bool) -> String {
    let head = if first {
        format!(r#""id":"c{index}","type":"function","function":{{"name":"f","arguments":"#)
    } else {
        r#""function":{"arguments":"#.to_owned()
    };
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{index},{head}{}}}}}]}}}}]}}\n\n",
        serde_json::to_string(args).expect("a string")
    )
}

const CHAT_END: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";

#[test]
fn a_malformed_event_while_a_call_is_open_keeps_that_call_from_running() {
    // Event 3 could have been `"b": 2, ` of call 0: without it the call still closes as valid
    // JSON, with a field missing. Call 1 was already one complete value, and call 2 started
    // after the loss: both are untouched.
    let body = [
        chat_args(0, r#"{"a": 1, "#, true),
        chat_args(1, r#"{"x": 1}"#, true),
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"fun\n\n"
            .to_owned(),
        chat_args(0, r#""c": 3}"#, false),
        chat_args(2, r#"{"y": 2}"#, true),
        CHAT_END.to_owned(),
    ]
    .concat();
    let whole = run(body.as_bytes());
    assert_eq!(whole.count(StreamErrorKind::MalformedEvent), 1);
    assert_eq!(whole.call(0).args, r#"{"a": 1, "c": 3}"#);
    assert_eq!(whole.call(0).error, Some(ErrorKind::LostEvent));
    assert_eq!(whole.call(1).error, None);
    assert_eq!(whole.call(2).error, None);
    assert_eq!(whole.finish, Some(FinishReason::ToolCalls));
    for at in 1..body.len() {
        let (a, b) = body.as_bytes().split_at(at);
        assert_eq!(run_chunks([a, b]), whole, "split at {at}");
    }
}

#[test]
fn an_event_dropped_for_size_while_a_call_is_open_keeps_that_call_from_running() {
    let run_small = |pieces: &[&[u8]]| {
        let mut d = StreamDecoder::with_config(
            Assembler::new(AssemblerConfig::default()).expect("default config"),
            SseConfig {
                max_event_bytes: 400,
            },
        );
        for p in pieces {
            d.push(p).expect("push");
        }
        collect(d)
    };
    let long = format!(r#""b": "{}", "#, "x".repeat(500));
    let body = [
        chat_args(0, r#"{"a": 1, "#, true),
        chat_args(0, &long, false),
        chat_args(0, r#""c": 3}"#, false),
        chat_args(1, r#"{"y": 2}"#, true),
        CHAT_END.to_owned(),
    ]
    .concat();
    let whole = run_small(&[body.as_bytes()]);
    assert_eq!(whole.count(StreamErrorKind::EventTooLarge), 1);
    assert_eq!(whole.call(0).error, Some(ErrorKind::LostEvent));
    assert_eq!(
        whole.call(1).error,
        None,
        "it started after the dropped event"
    );
    for at in (1..body.len()).step_by(7) {
        let (a, b) = body.as_bytes().split_at(at);
        assert_eq!(run_small(&[a, b]), whole, "split at {at}");
    }
    // Dropped as the last event of a push, after the call opened in the same push.
    let third = chat_args(0, r#""c": 3}"#, false);
    let cut = body.find(&third).expect("present");
    let (a, b) = body.as_bytes().split_at(cut);
    assert_eq!(run_small(&[a, b]), whole);
}

#[test]
fn oversized_event_is_reported() {
    let mut d = StreamDecoder::with_config(
        Assembler::new(AssemblerConfig::default()).expect("default config"),
        SseConfig {
            max_event_bytes: 64,
        },
    );
    let big = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
        "x".repeat(100)
    );
    d.push(big.as_bytes()).expect("push");
    d.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n")
        .expect("push");
    let o = collect(d);
    assert_eq!(o.count(StreamErrorKind::EventTooLarge), 1);
    assert_eq!(o.text, "ok");
}

#[test]
fn push_after_finish_is_misuse() {
    let mut d = decoder();
    d.push(b"data: [DONE]\n\n").expect("push");
    assert_eq!(d.finish().map(|calls| calls.len()), Ok(0));
    assert_eq!(
        d.push(b"data: x\n\n"),
        Err(toolwire::error::Misuse::Finished)
    );
    assert!(d.finish().is_err());
}

#[test]
fn format_and_finish_names_are_stable() {
    assert_eq!(Format::OpenAiChat.as_str(), "openai-chat");
    assert_eq!(Format::OpenAiResponses.as_str(), "openai-responses");
    assert_eq!(Format::Anthropic.as_str(), "anthropic");
    for (raw, want) in [
        ("stop", FinishReason::Stop),
        ("end_turn", FinishReason::Stop),
        ("STOP", FinishReason::Stop),
        ("tool_use", FinishReason::ToolCalls),
        ("max_tokens", FinishReason::Length),
        ("content_filter", FinishReason::ContentFilter),
        ("guardrail_intervened", FinishReason::ContentFilter),
        ("Content_Filtered", FinishReason::ContentFilter),
        ("model_context_window_exceeded", FinishReason::Length),
        ("refusal", FinishReason::Refusal),
        ("pause_turn", FinishReason::Other),
        // Gemini's reasons, sent in upper case.
        ("MAX_TOKENS", FinishReason::Length),
        ("CONTINUATION", FinishReason::Length),
        ("SAFETY", FinishReason::ContentFilter),
        ("RECITATION", FinishReason::ContentFilter),
        ("BLOCKLIST", FinishReason::ContentFilter),
        ("PROHIBITED_CONTENT", FinishReason::ContentFilter),
        ("SPII", FinishReason::ContentFilter),
        ("LANGUAGE", FinishReason::ContentFilter),
        ("IMAGE_SAFETY", FinishReason::ContentFilter),
        ("MALFORMED_FUNCTION_CALL", FinishReason::Other),
        ("OTHER", FinishReason::Other),
    ] {
        assert_eq!(FinishReason::from_raw(raw), want, "{raw}");
    }
}

// =============================================================================================
// Provider quirks (numbers from the provider-quirks spec)

#[test]
fn quirk01_missing_index() {
    let o = run_fixture("quirk01_missing_index.sse");
    assert_eq!(o.calls.len(), 2);
    ok(o.call(0), "get_weather", r#"{"city": "Paris"}"#);
    ok(o.call(1), "get_time", r#"{"tz": "CET"}"#);
    assert_eq!(o.call(0).index, None);
}

#[test]
fn quirk02_same_index_parallel() {
    let o = run_fixture("quirk02_same_index_parallel.sse");
    assert_eq!(o.calls.len(), 2);
    ok(o.call(0), "get_weather", r#"{"city": "Paris"}"#);
    ok(o.call(1), "get_time", r#"{"tz": "CET"}"#);
}

#[test]
fn quirk03_whole_calls_same_index() {
    let o = run_fixture("quirk03_whole_calls_same_index.sse");
    assert_eq!(o.calls.len(), 3);
    for (c, city) in o.calls.iter().zip(["Paris", "Rome", "Oslo"]) {
        ok(c, "get_weather", &format!(r#"{{"city":"{city}"}}"#));
    }
}

#[test]
fn quirk04_offset_index() {
    let o = run_fixture("quirk04_offset_index.sse");
    assert_eq!(
        o.calls
            .iter()
            .map(|c| (c.ordinal, c.index))
            .collect::<Vec<_>>(),
        [(0, Some(1)), (1, Some(2))]
    );
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    ok(o.call(1), "get_time", r#"{"tz":"CET"}"#);
}

#[test]
fn quirk05_negative_index() {
    let o = run_fixture("quirk05_negative_index.sse");
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert_eq!(o.call(0).index, Some(-1));
    assert!(!o.done, "no [DONE] in this body");
    assert_eq!(o.finish, Some(FinishReason::ToolCalls));
}

#[test]
fn quirk06_same_index_in_one_chunk() {
    let o = run_fixture("quirk06_same_index_in_one_chunk.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk07_interleaved() {
    let o = run_fixture("quirk07_interleaved.sse");
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    ok(o.call(1), "get_time", r#"{"tz":"CET"}"#);
}

#[test]
fn quirk08_repeated_name() {
    let o = run_fixture("quirk08_repeated_name.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "read_file", r#"{"path":"/etc/hosts"}"#);
}

#[test]
fn quirk09_name_fragments() {
    let o = run_fixture("quirk09_name_fragments.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk10_name_arrives_late() {
    let o = run_fixture("quirk10_name_arrives_late.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert_eq!(o.call(0).id.as_deref(), Some("call_l1"));
}

#[test]
fn quirk11_blank_name() {
    let o = run_fixture("quirk11_blank_name.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk12_repeated_id() {
    let o = run_fixture("quirk12_repeated_id.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert_eq!(o.call(0).id.as_deref(), Some("call_x1"));
}

#[test]
fn quirk13_unstable_ids() {
    let o = run_fixture("quirk13_unstable_ids.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert_eq!(o.call(0).id.as_deref(), Some("call_u1"));
}

#[test]
fn quirk14_empty_id() {
    let o = run_fixture("quirk14_empty_id.sse");
    assert_eq!(o.calls.len(), 1);
    assert_eq!(o.call(0).id.as_deref(), Some("call_e1"));
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk15_null_string_id() {
    let o = run_fixture("quirk15_null_string_id.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert_ne!(o.call(0).id.as_deref(), Some("null"));
}

#[test]
fn quirk16_same_id_parallel() {
    let o = run_fixture("quirk16_same_id_parallel.sse");
    assert!(o.call(1).warnings.contains(&warning::DUPLICATE_ID));
    assert_eq!(o.calls.len(), 2);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    ok(o.call(1), "get_weather", r#"{"city":"Rome"}"#);
    assert_eq!(o.call(0).id.as_deref(), Some("call_dup"));
    assert_ne!(o.call(0).id, o.call(1).id, "colliding ids are made unique");
}

#[test]
fn quirk17_repeated_type() {
    let o = run_fixture("quirk17_repeated_type.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk18_chunk_id_changes() {
    let o = run_fixture("quirk18_chunk_id_changes.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk19_cumulative_arguments() {
    let o = run_fixture("quirk19_cumulative_arguments.sse");
    assert!(o.call(0).warnings.contains(&warning::CUMULATIVE_ARGUMENTS));
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk20_consolidated_repeat() {
    let o = run_fixture("quirk20_consolidated_repeat.sse");
    assert!(o.call(0).warnings.contains(&warning::REPEAT_DROPPED));
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk20_responses_done_verifies_and_repairs_a_prefix() {
    let o = run_fixture("quirk20_responses_done_verifies.sse");
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    // The deltas of the second call lost their tail; `.done` carried the full text.
    ok(o.call(1), "get_time", r#"{"tz":"CET"}"#);
    assert_eq!(o.count(StreamErrorKind::ArgumentsMismatch), 1);
}

#[test]
fn quirk21_concatenated_values() {
    let o = run_fixture("quirk21_concatenated_values.sse");
    assert_eq!(o.calls.len(), 1);
    let c = o.call(0);
    assert_eq!(
        c.args, r#"{"q":"rust"}{"q":"serde"}"#,
        "kept raw, never replaced by {{}}"
    );
    assert_eq!(c.error, Some(ErrorKind::ConcatenatedValues));
}

#[test]
fn quirk22_whole_call_one_chunk() {
    let o = run_fixture("quirk22_whole_call_one_chunk.sse");
    ok(
        o.call(0),
        "get_weather",
        r#"{"city":"Paris","unit":"celsius"}"#,
    );
    assert_eq!(o.finish, Some(FinishReason::ToolCalls));
}

#[test]
fn quirk23_object_arguments() {
    let o = run_fixture("quirk23_object_arguments.sse");
    ok(
        o.call(0),
        "get_weather",
        r#"{"city":"Paris","days":[1,2],"n":1.5}"#,
    );
    ok(o.call(1), "get_time", "{}");
}

#[test]
fn quirk24_null_first_arguments() {
    let o = run_fixture("quirk24_null_first_arguments.sse");
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk25_empty_arguments() {
    let o = run_fixture("quirk25_empty_arguments.sse");
    assert!(o.call(0).warnings.contains(&warning::EMPTY_ARGUMENTS));
    ok(o.call(0), "list_files", "{}");
}

#[test]
fn quirk26_empty_delta_string() {
    let o = run_fixture("quirk26_empty_delta_string.sse");
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert!(o.errors.is_empty(), "{:?}", o.errors);
}

#[test]
fn quirk28_control_markers() {
    let o = run_fixture("quirk28_control_markers.sse");
    assert_eq!(o.call(0).args, r#"[ARGS]{"city":"Paris"}</tool_call>"#);
    assert!(o.call(0).error.is_some());
}

#[test]
fn quirk29_empty_choices() {
    let o = run_fixture("quirk29_empty_choices.sse");
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert_eq!(
        value(o.usage.as_deref().unwrap_or("null"))["prompt_tokens"],
        412
    );
    assert!(o.errors.is_empty(), "{:?}", o.errors);
}

#[test]
fn quirk30_azure_filter_annotations() {
    let o = run_fixture("quirk30_azure_filter_annotations.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert!(o.errors.is_empty(), "{:?}", o.errors);
}

#[test]
fn quirk31_thought_signature() {
    let o = run_fixture("quirk31_thought_signature.sse");
    assert_eq!(
        o.calls.len(),
        2,
        "a metadata-only delta never starts a call"
    );
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert_eq!(
        o.call(0).metadata,
        vec![(
            "extra_content".to_owned(),
            r#"{"google":{"thought_signature":"CqMDAdHtim9wA1xVqkRkPgP3YwKj+8u0="}}"#.to_owned()
        )]
    );
    assert_eq!(
        o.call(1).metadata,
        vec![(
            "extra_content".to_owned(),
            r#"{"google":{"thought_signature":"Zm9vYmFy"}}"#.to_owned()
        )]
    );
}

#[test]
fn quirk34_stop_with_tool_calls() {
    let o = run_fixture("quirk34_stop_with_tool_calls.sse");
    assert_eq!(o.finish, Some(FinishReason::Stop));
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk35_truncated_as_tool_calls() {
    let o = run_fixture("quirk35_truncated_as_tool_calls.sse");
    assert_eq!(o.finish, Some(FinishReason::ToolCalls));
    assert_eq!(o.call(0).error, Some(ErrorKind::Truncated));
}

#[test]
fn quirk36_length_truncated_never_repaired() {
    let o = run_fixture("quirk36_length_truncated.sse");
    assert_eq!(o.finish, Some(FinishReason::Length));
    assert_eq!(
        o.call(0).args,
        r#"{"path":"a.txt","content":"lorem ipsum dolor"#,
        "raw text kept (quirk 37)"
    );
    assert_eq!(o.call(0).error, Some(ErrorKind::Truncated));
}

#[test]
fn quirk38_no_finish_reason() {
    let o = run_fixture("quirk38_no_finish_reason.sse");
    assert_eq!(o.finish, None);
    assert!(!o.done);
    assert_eq!(o.calls.len(), 2, "every call is returned");
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    assert_eq!(o.call(1).error, Some(ErrorKind::Truncated));
    assert_eq!(o.count(StreamErrorKind::TruncatedBody), 1);
}

#[test]
fn quirk39_utf8_split() {
    let o = run_fixture("quirk39_utf8_split.sse");
    assert_eq!(o.text, "Météo: 東京 ☀️ 🌧");
    ok(
        o.call(0),
        "get_weather",
        r#"{"city":"Zürich","note":"雨 🌧 ok"}"#,
    );
}

#[test]
fn quirk40_replacement_char_passes_through() {
    let o = run_fixture("quirk40_replacement_char.sse");
    assert!(
        o.call(0).warnings.contains(&warning::REPLACEMENT_CHARACTER),
        "{:?}",
        o.call(0)
    );
    ok(o.call(0), "get_weather", "{\"city\":\"Z\u{FFFD}rich\"}");
}

#[test]
fn quirk41_split_surrogate() {
    let o = run_fixture("quirk41_split_surrogate.sse");
    ok(o.call(0), "send", r#"{"emoji":"a😀b"}"#);
}

#[test]
fn quirk19_41_cumulative_resend_of_a_split_surrogate_pair() {
    // Each fragment resends the arguments so far; the middle one ends between the halves of a
    // pair, which the last one resends whole. The held half must not go in front of the resend,
    // and the text before it must not reach the assembler alone: an exact repeat of the text so
    // far, which it appended, and then the resend (`{"k": "{"k": "{"k": "𝄞"}`).
    let chunk = |args: &str| {
        format!(
            r#"data: {{"object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"c","function":{{"name":"f","arguments":{args}}}}}]}}}}]}}"#
        ) + "\n\n"
    };
    let body = [
        chunk(r#""{\"k\": \"""#),
        chunk(r#""{\"k\": \"\ud834""#),
        chunk(r#""{\"k\": \"\ud834\udd1e\"}""#),
    ]
    .concat();
    let o = run(body.as_bytes());
    assert_eq!(o, run_chunks(body.as_bytes().chunks(1)));
    ok(o.call(0), "f", "{\"k\": \"\u{1d11e}\"}");
    assert!(o.call(0).warnings.contains(&warning::CUMULATIVE_ARGUMENTS));
}

#[test]
fn quirk02_41_half_held_when_another_call_starts_under_its_key() {
    // The first call's last fragment ends in half of a pair; the next delta under index 0 has
    // another name, so it starts a call: the half goes back to the first call, not in front of
    // the second call's arguments. A repeated name (quirk 8) continues the call and joins it.
    let chunk = |fields: &str| {
        format!(
            r#"data: {{"object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,{fields}}}]}}}}]}}"#
        ) + "\n\n"
    };
    let body = [
        chunk(r#""id":"a","function":{"name":"f","arguments":"{\"e\":\"\ud83d"}"#),
        chunk(r#""id":"b","function":{"name":"g","arguments":"{\"x\":1}"}"#),
        chunk(r#""id":"c","function":{"name":"h","arguments":"{\"e\":\"\ud83d"}"#),
        chunk(r#""function":{"name":"h","arguments":"\ude00\"}"}"#),
    ]
    .concat();
    let o = run(body.as_bytes());
    assert_eq!(o, run_chunks(body.as_bytes().chunks(1)));
    assert_eq!(o.call(0).args, r#"{"e":"\ud83d"#);
    assert_eq!(o.call(0).error, Some(ErrorKind::Truncated));
    ok(o.call(1), "g", r#"{"x":1}"#);
    ok(o.call(2), "h", "{\"e\":\"\u{1f600}\"}");
}

#[test]
fn quirk42_split_escape() {
    let o = run_fixture("quirk42_split_escape.sse");
    ok(
        o.call(0),
        "write_file",
        r#"{"content":"line1\nline2 \u00e9 \"q\""}"#,
    );
    assert_eq!(value(&o.call(0).args)["content"], "line1\nline2 é \"q\"");
}

#[test]
fn quirk43_invalid_escape() {
    let o = run_fixture("quirk43_invalid_escape.sse");
    assert_eq!(o.call(0).error, Some(ErrorKind::InvalidEscape));
    assert_eq!(o.call(0).args, r#"{"path":"App\Http\Kernel.php"}"#);
    ok(o.call(1), "get_weather", r#"{"city":"Paris"}"#);
}

#[test]
fn quirk44_lone_surrogate_is_kept_as_an_escape() {
    let o = run_fixture("quirk44_lone_surrogate.sse");
    assert_eq!(o.call(0).args, r#"{"t":"x\udc00y"}"#);
}

#[test]
fn quirk45_garbled_arguments() {
    let o = run_fixture("quirk45_garbled_arguments.sse");
    assert_eq!(o.call(0).args, r#"{"city": "Paris"}"}"#);
    assert_eq!(o.call(0).error, Some(ErrorKind::TrailingData));
}

#[test]
fn quirk46_final_brace_dropped() {
    let o = run_fixture("quirk46_final_brace_dropped.sse");
    assert_eq!(o.call(0).error, Some(ErrorKind::Truncated));
}

#[test]
fn quirk47_anthropic_dropped_open() {
    let o = run_fixture("quirk47_anthropic_dropped_open.sse");
    assert_eq!(o.call(0).args, r#"city": "Paris"}"#);
    assert!(o.call(0).error.is_some());
}

#[test]
fn quirk48_index_shifted() {
    let o = run_fixture("quirk48_index_shifted.sse");
    assert_eq!(o.calls.len(), 2);
    ok(o.call(0), "get_weather", r#"{"city":"Paris"}"#);
    ok(o.call(1), "get_time", r#"{"tz":"CET"}"#);
    assert_eq!((o.call(0).index, o.call(1).index), (Some(1), Some(0)));
}

#[test]
fn every_quirk_fixture_has_a_test() {
    let source = include_str!("sse.rs");
    for (name, _) in fixtures() {
        assert!(
            source.contains(&format!("\"{name}\"")),
            "fixture {name} is not used by a test"
        );
    }
}

// =============================================================================================
// Gemini (`streamGenerateContent?alt=sse`, data-only `GenerateContentResponse` chunks)

/// A Gemini fixture, checked at every split point of the body into two pieces (the other
/// fixture tests take every seventh) as well as byte by byte.
fn run_gemini(name: &str) -> Outcome {
    let body = fixture(name);
    let whole = run_fixture(name);
    for cut in 0..=body.len() {
        assert_eq!(
            run_chunks([&body[..cut], &body[cut..]]),
            whole,
            "{name} cut at {cut}"
        );
    }
    assert_eq!(whole.format, Some(Format::Gemini), "{name}");
    assert_eq!(Format::Gemini.as_str(), "gemini");
    whole
}

fn signature(c: &Call) -> Option<&str> {
    c.metadata
        .iter()
        .find(|(k, _)| k == "thought_signature")
        .map(|(_, v)| v.as_str())
}

#[test]
fn gemini_calls_text_and_thought_signatures() {
    let o = run_gemini("gemini_calls_text_signatures.sse");
    let calls: Vec<_> = o
        .calls
        .iter()
        .map(|c| {
            (
                c.ordinal,
                c.index,
                c.name.as_deref(),
                c.args.as_str(),
                c.error,
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            (
                0,
                Some(0),
                Some("get_weather"),
                r#"{"city":"東京","note":"晴れ 🌸 \"quoted\" \\ back"}"#,
                None
            ),
            (
                1,
                Some(1),
                Some("get_weather"),
                r#"{"city":"Rome","days":3}"#,
                None
            ),
            (
                2,
                Some(2),
                Some("get_time"),
                r#"{"tz":"Europe/Rome"}"#,
                None
            ),
            // A name-only part that another call follows: a function without parameters.
            (3, Some(3), Some("list_files"), "{}", None),
            // Quirk 33: the args-only part after a name-only one is the same call.
            (4, Some(4), Some("refresh"), r#"{"force":true}"#, None),
            // Settled by the natural end.
            (5, Some(5), Some("ping"), "{}", None),
        ]
    );
    assert_eq!(o.call(4).id.as_deref(), Some("call-9"));
    // A signature-only part before any call waits for the next call, but text came between;
    // a call's own; a signature-only part after a call; on the second part of quirk 33; a
    // thought's and a text's are their own.
    let signatures: Vec<_> = o.calls.iter().map(signature).collect();
    assert_eq!(
        signatures,
        [
            None,
            Some(r#""c2Vjb25k""#),
            Some(r#""dGhpcmQ=""#),
            None,
            Some(r#""Zm91cnRo""#),
            None
        ]
    );
    // Thought parts are not text.
    assert_eq!(o.text, "Let me check 東京 and 🌸 Rome.Done.");
    assert_eq!(o.finish_raw.as_deref(), Some("STOP"));
    // STOP with calls (quirk 34): the calls decide.
    assert_eq!(o.finish, Some(FinishReason::Stop));
    let usage: serde_json::Value =
        serde_json::from_str(o.usage.as_deref().unwrap_or("null")).expect("usage is JSON");
    assert_eq!(
        usage,
        serde_json::json!({"promptTokenCount": 12, "candidatesTokenCount": 31, "totalTokenCount": 42})
    );
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    assert!(!o.done, "Gemini has no end-of-stream marker");
}

#[test]
fn gemini_output_limit_truncates_a_name_only_call() {
    let o = run_gemini("gemini_max_tokens.sse");
    ok(o.call(0), "f", r#"{"a":1}"#);
    assert_eq!(o.call(1).name.as_deref(), Some("g"));
    assert_eq!(o.call(1).error, Some(ErrorKind::Truncated));
    assert_eq!(o.finish, Some(FinishReason::Length));
    assert_eq!(o.finish_raw.as_deref(), Some("MAX_TOKENS"));
}

#[test]
fn gemini_safety_stops_every_call() {
    let o = run_gemini("gemini_safety.sse");
    let kinds: Vec<_> = o.calls.iter().map(|c| c.error).collect();
    assert_eq!(
        kinds,
        [Some(ErrorKind::Filtered), Some(ErrorKind::Filtered)]
    );
    assert_eq!(o.finish, Some(FinishReason::ContentFilter));
}

#[test]
fn gemini_own_abort_reasons_stop_calls() {
    for reason in [
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "MISSING_THOUGHT_SIGNATURE",
        "MALFORMED_RESPONSE",
        "OTHER",
        "IMAGE_OTHER",
        "RECITATION",
        "SPII",
    ] {
        let body = format!(
            "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"functionCall\":{{\"name\":\"f\",\"args\":{{}}}}}}]}},\"finishReason\":\"{reason}\"}}]}}\n\n"
        );
        let o = run(body.as_bytes());
        assert_eq!(o.call(0).error, Some(ErrorKind::Filtered), "{reason}");
        assert_eq!(o.finish_raw.as_deref(), Some(reason));
    }
    // `FINISH_REASON_UNSPECIFIED` is no reason: a name-only call before it still waits (and the
    // body ending there broke it off).
    for (reason, want) in [
        ("STOP", None),
        ("TOO_MANY_TOOL_CALLS", None),
        ("FINISH_REASON_UNSPECIFIED", Some(ErrorKind::Truncated)),
    ] {
        let body = format!(
            "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"functionCall\":{{\"name\":\"f\"}}}}]}},\"finishReason\":\"{reason}\"}}]}}\n\n"
        );
        let o = run(body.as_bytes());
        assert_eq!(o.call(0).error, want, "{reason}");
        if want.is_none() {
            ok(o.call(0), "f", "{}");
        }
    }
}

#[test]
fn gemini_blocked_prompt_stops_calls_that_follow() {
    let o = run_gemini("gemini_blocked_prompt.sse");
    assert_eq!(o.call(0).error, Some(ErrorKind::Filtered));
    // The candidate's own reason comes later and is the last one sent.
    assert_eq!(o.finish_raw.as_deref(), Some("STOP"));
    assert!(o
        .usage
        .as_deref()
        .is_some_and(|u| u.contains("\"promptTokenCount\":12")));
}

#[test]
fn gemini_error_chunk_gives_up_on_the_answer() {
    let o = run_gemini("gemini_error_chunk.sse");
    // The name-only call waited for its second part: after the error, that part is a call of
    // its own, which does not run either.
    let calls: Vec<_> = o
        .calls
        .iter()
        .map(|c| (c.name.as_deref(), c.error))
        .collect();
    assert_eq!(
        calls,
        [
            (Some("f"), Some(ErrorKind::Filtered)),
            (Some("g"), Some(ErrorKind::Filtered)),
            (None, Some(ErrorKind::Filtered)),
        ]
    );
    assert_eq!(o.finish_raw.as_deref(), Some("error"));
    assert_eq!(o.count(StreamErrorKind::ProviderError), 1);
}

#[test]
fn gemini_only_candidate_zero_is_assembled() {
    let o = run_gemini("gemini_other_candidates.sse");
    assert_eq!(o.calls.len(), 1);
    ok(o.call(0), "f", r#"{"a":1}"#);
    assert_eq!(o.text, "");
    assert_eq!(o.finish_raw.as_deref(), Some("STOP"));
}

#[test]
fn gemini_streamed_partial_arguments_are_merged() {
    let o = run_gemini("gemini_partial_args.sse");
    assert_eq!(o.calls.len(), 2);
    // Numbers as Python writes them: `3.0` sent as a protobuf double is the integer 3.
    ok(
        o.call(0),
        "get_weather",
        r#"{"city":"東京 🌸","days":3,"units":{"temp unit":"C"},"ratio":1e-07,"tags":["a",true],"extra":null}"#,
    );
    assert_eq!(signature(o.call(0)), Some(r#""c2ln""#));
    ok(o.call(1), "get_time", r#"{"tz":"UTC"}"#);
    assert_eq!(o.call(1).index, Some(1));
}

/// A Gemini body of one chunk per `functionCall` part, the last chunk with `finish`.
fn gemini_body(calls: &[&str], finish: Option<&str>) -> Vec<u8> {
    let mut body = String::new();
    for (i, call) in calls.iter().enumerate() {
        let reason = match finish {
            Some(r) if i + 1 == calls.len() => format!(",\"finishReason\":\"{r}\""),
            _ => String::new(),
        };
        body.push_str(&format!(
            "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"functionCall\":{call}}}]}}{reason}}}]}}\n\n"
        ));
    }
    body.into_bytes()
}

#[test]
fn gemini_streamed_arguments_cut_or_broken_never_run() {
    let open = r#"{"name":"f","willContinue":true}"#;
    let city = r#"{"partialArgs":[{"jsonPath":"$.city","stringValue":"Par","willContinue":true}],"willContinue":true}"#;
    // Cut by the output limit, and by the end of the body: what came, without its brace.
    for finish in [Some("MAX_TOKENS"), None] {
        let o = run(&gemini_body(&[open, city], finish));
        assert_eq!(o.call(0).args, r#"{"city":"Par""#, "{finish:?}");
        assert_eq!(o.call(0).error, Some(ErrorKind::Truncated), "{finish:?}");
    }
    // Pieces that do not make one object.
    for bad in [
        r#"{"partialArgs":[{"jsonPath":"$.city","stringValue":"x"},{"jsonPath":"$.city.inner","boolValue":true}]}"#,
        r#"{"partialArgs":[{"jsonPath":"$.list[3]","stringValue":"gap"}]}"#,
        r#"{"partialArgs":[{"jsonPath":"city","stringValue":"no root"}]}"#,
        r#"{"partialArgs":[{"jsonPath":"$","stringValue":"not an object"}]}"#,
        r#"{"partialArgs":[{"jsonPath":"$.a","stringValue":"x"}],"args":{"a":1}}"#,
    ] {
        let o = run(&gemini_body(&[open, bad], Some("STOP")));
        assert_eq!(o.call(0).error, Some(ErrorKind::MixedArguments), "{bad}");
    }
    // A lone surrogate the model sent, in a value or a path: the call ends as the chunk path
    // ends it, on what the model wrote, not on the transport.
    for lone in [
        r#"{"partialArgs":[{"jsonPath":"$.a","stringValue":"\ud800"}]}"#,
        r#"{"partialArgs":[{"jsonPath":"$[\"\\udc00\"]","stringValue":"x"}]}"#,
        r#"{"partialArgs":[{"jsonPath":"$.\udc00","stringValue":"x"}]}"#,
    ] {
        let o = run(&gemini_body(
            &[open, lone, r#"{"name":"g","args":{}}"#],
            Some("STOP"),
        ));
        assert_eq!(o.call(0).error, Some(ErrorKind::LoneSurrogate), "{lone}");
        ok(o.call(1), "g", "{}");
    }
    // Values Python reads where this path cannot follow: never a guess.
    for unread in [
        "{\"partialArgs\":[{\"jsonPath\":\"$.a[\u{661}]\",\"stringValue\":\"x\"}]}",
        r#"{"partialArgs":[],"args":{"a":1e400}}"#,
    ] {
        let o = run(&gemini_body(
            &[open, unread, r#"{"name":"g","args":{}}"#],
            Some("STOP"),
        ));
        assert_eq!(o.call(0).error, Some(ErrorKind::LostEvent), "{unread}");
        ok(o.call(1), "g", "{}");
    }
}

#[test]
fn gemini_broken_body_truncates_the_call_waiting_for_arguments() {
    let o = run_gemini("gemini_broken_body.sse");
    ok(o.call(0), "f", r#"{"a":1}"#);
    assert_eq!(o.call(1).error, Some(ErrorKind::Truncated));
    assert_eq!(o.count(StreamErrorKind::TruncatedBody), 1);
    assert_eq!(o.finish, None);
}

#[test]
fn gemini_fields_of_the_wrong_type_are_absent_and_malformed_chunks_change_nothing() {
    let o = run(concat!(
        "data: {\"candidates\":{\"not\":\"a list\"},\"usageMetadata\":{\"promptTokenCount\":1}}\n\n",
        "data: {\"candidates\":[5,{\"content\":\"x\"},{\"content\":{\"parts\":[1,\"s\",{\"functionCall\":\"f\"}]}}]}\n\n",
        // A repeated field keeps its last value, as `json.loads` keeps it.
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"g\",\"args\":{}}},{\"text\":\"a\",\"text\":\"b\"}]}}]}\n\n",
        // Not JSON: malformed, skipped whole.
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"h\",\"args\":{}}}]}}]\n\n",
        "data: {\"candidates\":[{\"finishReason\":\"STOP\"}]}\n\n",
    ).as_bytes());
    // `functionCall` that is no object: a call without fields (no name).
    assert_eq!(o.calls.len(), 2);
    assert_eq!(o.call(0).error, Some(ErrorKind::MissingName));
    ok(o.call(1), "g", "{}");
    assert_eq!(o.text, "b");
    assert_eq!(o.count(StreamErrorKind::MalformedEvent), 1);
    assert_eq!(o.format, Some(Format::Gemini));
}

#[test]
fn gemini_arguments_keep_number_lexemes_and_read_strings_as_text() {
    let o = run(concat!(
        "data: {\"candidates\":[{\"content\":{\"parts\":[",
        "{\"functionCall\":{\"name\":\"f\",\"args\":{ \"x\" : 1.50, \"y\": 1e5, \"s\": \"\\u00e9\\/\" }}},",
        "{\"functionCall\":{\"name\":\"g\",\"args\":\"{\\\"a\\\":1}\"}},",
        "{\"functionCall\":{\"name\":\"h\",\"args\":42}}",
        "]},\"finishReason\":\"STOP\"}]}\n\n"
    ).as_bytes());
    ok(o.call(0), "f", r#"{"x":1.50,"y":1e5,"s":"é/"}"#);
    ok(o.call(1), "g", r#"{"a":1}"#);
    assert_eq!(o.call(2).args, "42");
    assert_eq!(o.call(2).error, Some(ErrorKind::NotObject));
}

#[test]
fn gemini_snake_case_usage_members_are_respelled() {
    let o =
        run(b"data: {\"usageMetadata\":{\"prompt_token_count\":3,\"x__y\":1,\"cache_Ab\":2}}\n\n");
    assert_eq!(
        o.usage.as_deref(),
        Some(r#"{"promptTokenCount":3,"x_Y":1,"cache_Ab":2}"#)
    );
}

// =============================================================================================
// Split anywhere

#[test]
fn every_fixture_two_piece_splits() {
    for (name, body) in fixtures() {
        let whole = run(&body);
        for cut in (0..=body.len()).step_by(7) {
            assert_eq!(
                run_chunks([&body[..cut], &body[cut..]]),
                whole,
                "{name} cut at {cut}"
            );
        }
    }
}

fn chunked(body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut last = 0;
    for c in cuts {
        out.push(body[last..c].to_vec());
        last = c;
    }
    out.push(body[last..].to_vec());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_splits_give_identical_results(which in 0usize..1000, cuts in prop::collection::vec(0usize..100_000, 0..40)) {
        let all = fixtures();
        let (name, body) = &all[which % all.len()];
        let whole = run(body);
        let pieces = chunked(body, &cuts);
        let split = run_chunks(pieces.iter().map(Vec::as_slice));
        prop_assert_eq!(split, whole, "{}", name);
    }
}

// =============================================================================================
// Throughput probe

/// A chat-completions tool-call stream of about `target` bytes: 4 interleaved parallel calls
/// whose arguments stay valid JSON, 3–20 argument bytes per envelope, realistic envelope fields.
fn synthetic_chat_stream(target: usize) -> Vec<u8> {
    const HEAD: &str = r#"data: {"id":"chatcmpl-Bq7xK2mN9pLr4TzW","object":"chat.completion.chunk","created":1764490000,"model":"gpt-4.1-2025-04-14","system_fingerprint":"fp_b3f1157249","choices":[{"index":0,"delta":{"tool_calls":[{"index":"#;
    // Pieces of argument text (already JSON: the content string's own escapes included).
    const PIECES: [&str; 7] = [
        "fn main() {",
        r"\n    println!(",
        r#"\"hi\");"#,
        r"\n}\n",
        "lorem ipsum ",
        "dolor",
        " sit amet, ",
    ];
    let wire = |piece: &str| serde_json::to_string(piece).expect("a string serializes");
    let mut body = Vec::with_capacity(target + 4096);
    let event = |body: &mut Vec<u8>, call: usize, rest: &str| {
        body.extend_from_slice(HEAD.as_bytes());
        body.extend_from_slice(
            format!("{call},{rest}}}]}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n")
                .as_bytes(),
        );
    };
    for call in 0..4 {
        let open = wire(r#"{"path": "src/main.rs", "content": ""#);
        event(
            &mut body,
            call,
            &format!(
                r#""id":"call_{call}xYzAbC","type":"function","function":{{"name":"write_file","arguments":{open}}}"#
            ),
        );
    }
    let mut n = 0usize;
    while body.len() < target {
        let piece = wire(PIECES[n % PIECES.len()]);
        event(
            &mut body,
            n % 4,
            &format!(r#""function":{{"arguments":{piece}}}"#),
        );
        n += 1;
    }
    for call in 0..4 {
        event(
            &mut body,
            call,
            &format!(r#""function":{{"arguments":{}}}"#, wire(r#""}"#)),
        );
    }
    body.extend_from_slice(b"data: {\"id\":\"chatcmpl-Bq7xK2mN9pLr4TzW\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    body
}

/// Body size of the probes: `SSE_PROBE_MB` MiB (default 64; small values suit valgrind).
fn probe_size() -> usize {
    std::env::var("SSE_PROBE_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
        << 20
}

/// Nanoseconds this thread spent on a CPU (Linux), so that a busy machine does not distort
/// the figure; `None` elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Best of three runs of `f` over `bytes` bytes: (wall-clock MB/s, on-CPU MB/s).
#[allow(clippy::cast_precision_loss)]
fn rate(bytes: usize, f: &mut dyn FnMut()) -> (f64, f64) {
    let mut wall = f64::MAX;
    let mut cpu: Option<f64> = None;
    for _ in 0..3 {
        let (start, cpu_start) = (std::time::Instant::now(), thread_cpu_ns());
        f();
        wall = wall.min(start.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (cpu_start, thread_cpu_ns()) {
            let secs = (b - a) as f64 / 1e9;
            cpu = Some(cpu.map_or(secs, |c| c.min(secs)));
        }
    }
    let mb = bytes as f64 / 1e6;
    (mb / wall, mb / cpu.unwrap_or(wall))
}

#[test]
#[ignore = "throughput probe: cargo test --release --test sse -- --ignored --nocapture"]
#[allow(clippy::print_stdout)]
fn throughput_chat_tool_calls() {
    let body = synthetic_chat_stream(probe_size());
    for chunk in [16 * 1024, 1500] {
        let (wall, cpu) = rate(body.len(), &mut || {
            let mut d = decoder();
            for piece in body.chunks(chunk) {
                d.push(piece).expect("push");
            }
            let calls = d.finish().expect("first finish");
            assert_eq!(calls.len(), 4);
            assert!(
                calls.iter().all(|c| c.error.is_none()),
                "{:?}",
                calls[0].error
            );
            assert_eq!(d.malformed_events(), 0);
        });
        println!("StreamDecoder, {chunk}-byte pushes: {cpu:.0} MB/s on-CPU ({wall:.0} MB/s wall)");
    }
}

#[test]
#[ignore = "throughput probe per stage: cargo test --release --test sse -- --ignored --nocapture"]
#[allow(clippy::print_stdout)]
fn throughput_stages() {
    let body = synthetic_chat_stream(probe_size());
    let (_, framing) = rate(body.len(), &mut || {
        let mut framer = Framer::default();
        let mut n = 0usize;
        for piece in body.chunks(16 * 1024) {
            let _ = framer.push(piece, |e| n += e.data.len());
        }
        assert!(n > 0);
    });
    let (_, decoding) = rate(body.len(), &mut || {
        let mut framer = Framer::default();
        let mut decoder = toolwire::envelope::Decoder::new();
        let mut n = 0usize;
        for piece in body.chunks(16 * 1024) {
            let _ = framer.push(piece, |e| {
                let _ = decoder.decode(e.event, e.data, &mut |_| {
                    n += 1;
                    true
                });
            });
        }
        assert!(n > 0);
    });
    println!(
        "framing only: {framing:.0} MB/s; framing + envelope decoding: {decoding:.0} MB/s (on-CPU)"
    );
}

#[test]
fn a_chat_error_line_is_not_undone_by_what_follows() {
    // After `{"error": ...}` the stream goes on: a finish reason, even a new call. The reason
    // stays `error` (as `feed_chunk` says), and neither call may run.
    let body = b"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n\
data: {\"error\":{\"message\":\"boom\"}}\n\n\
data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\n\
data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: [DONE]\n\n";
    let o = run(body);
    assert_eq!(o.count(StreamErrorKind::ProviderError), 1);
    assert_eq!(o.finish, Some(FinishReason::Other));
    assert_eq!(o.finish_raw.as_deref(), Some("error"));
    assert_eq!(o.call(0).error, Some(ErrorKind::Filtered));
    assert_eq!(o.call(1).error, Some(ErrorKind::Filtered));
}

#[test]
fn a_chat_error_line_after_the_finish_reason_stops_no_call() {
    // Chat has no end event per call: `tool_calls` ended them all, so an error before the
    // usage chunk or `[DONE]` stops none (an Anthropic error stops no ended block). The
    // stream still says `error`.
    let body = b"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n\
data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: {\"error\":{\"message\":\"boom\"}}\n\n";
    let o = run(body);
    assert_eq!(o.count(StreamErrorKind::ProviderError), 1);
    assert_eq!(o.finish_raw.as_deref(), Some("error"));
    ok(o.call(0), "f", "{}");
}

#[test]
fn a_chat_call_after_the_finish_reason_and_an_error_stops_only_itself() {
    // The error after `tool_calls` stops no finished call; a call that still starts after it
    // must not run, and stopping it stopped the finished ones too (Chat never ends a call).
    let body = b"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n\
data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: {\"error\":{\"message\":\"boom\"}}\n\n\
data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\n\
data: [DONE]\n\n";
    let o = run(body);
    assert_eq!(o.count(StreamErrorKind::ProviderError), 1);
    assert_eq!(o.finish_raw.as_deref(), Some("error"));
    ok(o.call(0), "f", "{}");
    assert_eq!(o.call(1).error, Some(ErrorKind::Filtered));
}

#[test]
fn a_chat_error_after_a_call_that_started_after_the_finish_reason_stops_that_call_only() {
    // The finish reason ended call 0; call 1 started after it and was open at the error,
    // sent twice (each stopped every call before).
    let body = b"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n\
data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\n\
data: {\"error\":{\"message\":\"boom\"}}\n\n\
data: {\"error\":{\"message\":\"again\"}}\n\n";
    let o = run(body);
    assert_eq!(o.finish_raw.as_deref(), Some("error"));
    ok(o.call(0), "f", "{}");
    assert_eq!(o.call(1).error, Some(ErrorKind::Filtered));
}

#[test]
fn a_mismatch_names_the_output_index_a_call_was_sent_under() {
    // Two items under one `output_index`: the second is routed by another key, and its
    // `.done` (which repairs lost deltas) is reported by the index the server sent.
    let events = [
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"f","arguments":""}}"#,
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_b","call_id":"call_b","name":"g","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_a","delta":"{}"}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_b","delta":"{\"x\""}"#,
        r#"{"type":"response.function_call_arguments.done","output_index":0,"item_id":"fc_b","arguments":"{\"x\":1}"}"#,
    ];
    let body: String = events
        .iter()
        .map(|data| {
            let kind = value(data)["type"].as_str().map(str::to_owned);
            format!("event: {}\ndata: {data}\n\n", kind.unwrap_or_default())
        })
        .collect();
    let mut d = decoder();
    d.push(body.as_bytes()).expect("push before finish");
    let calls = d.finish().expect("first finish");
    assert_eq!(calls[1].index, Some(0));
    assert_eq!(calls[1].arguments, br#"{"x":1}"#);
    let mismatch: Vec<&str> = d
        .errors()
        .iter()
        .filter(|e| e.kind == StreamErrorKind::ArgumentsMismatch)
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(
        mismatch,
        ["final arguments of the call at output_index 0 differ from its deltas"]
    );
}

#[test]
fn a_body_without_finish_reason_cuts_a_call_whose_arguments_never_began() {
    // Quirk 38, the transport closed cleanly: nothing says the answer ended, so a call with no
    // argument text is not a call without parameters. A complete value is kept.
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let calls = [
        chunk(
            r#"{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}"#,
            "null",
        ),
        chunk(
            r#"{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"transfer","arguments":""}}]}"#,
            "null",
        ),
    ]
    .concat();
    let cut = run(calls.as_bytes());
    ok(cut.call(0), "f", r#"{"x":1}"#);
    assert_eq!(cut.call(1).error, Some(ErrorKind::Truncated), "{cut:?}");
    assert_eq!(cut.finish, None);
    let whole = run(format!("{calls}{}data: [DONE]\n\n", chunk("{}", "\"tool_calls\"")).as_bytes());
    ok(whole.call(1), "transfer", "{}");
}

#[test]
fn fault05_replayed_response_keeps_its_text_once() {
    // Anthropic sends `message_start` again when the stream is replayed from its start; the
    // replay is cut other than the first rendition, and goes on past where it broke off.
    let event = |kind: &str, data: &str| format!("event: {kind}\ndata: {data}\n\n");
    let start = event(
        "message_start",
        r#"{"type":"message_start","message":{"id":"m"}}"#,
    );
    let block = event(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    );
    let text = |t: &str| {
        event(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}"}}}}"#
            ),
        )
    };
    let body = [
        start.clone(),
        block.clone(),
        text("Hel"),
        text("lo, "),
        start,
        block,
        text("Hello"),
        text(", wor"),
        text("ld"),
    ]
    .concat();
    let o = run(body.as_bytes());
    assert_eq!(o, run_chunks(body.as_bytes().chunks(1)));
    assert_eq!(o.text, "Hello, world");
}

#[test]
fn fault14_assistant_text_counts_toward_the_stream_limit() {
    let chunk = |delta: &str| {
        format!(
            r#"data: {{"object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta}}}]}}"#
        ) + "\n\n"
    };
    let mut body =
        chunk(r#"{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}"#);
    for _ in 0..200 {
        body += &chunk(r#"{"content":"0123456789"}"#);
    }
    let mut d = StreamDecoder::new(
        Assembler::new(AssemblerConfig {
            max_stream_bytes: 1000,
            ..AssemblerConfig::default()
        })
        .expect("config"),
    );
    d.push(body.as_bytes()).expect("push");
    assert!(d.text().len() <= 1000);
    assert!(d
        .errors()
        .iter()
        .any(|e| e.kind == StreamErrorKind::StreamLimit));
    let calls = d.finish().expect("finish");
    assert_eq!(
        calls[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::TooLarge)
    );
}

/// A decoder whose assembler has these limits.
fn limited_decoder(max_bytes: usize, max_stream_bytes: usize) -> StreamDecoder {
    StreamDecoder::new(
        Assembler::new(AssemblerConfig {
            scan: toolwire::ScanConfig {
                max_bytes,
                ..toolwire::ScanConfig::default()
            },
            max_stream_bytes,
            ..AssemblerConfig::default()
        })
        .expect("config"),
    )
}

fn over_stream_limit(d: &StreamDecoder) -> bool {
    d.errors()
        .iter()
        .any(|e| e.kind == StreamErrorKind::StreamLimit)
}

/// An Anthropic `tool_use` block at `index` that starts with `input`, then its fragments and
/// its stop.
fn anthropic_block(index: usize, input: &str, fragments: &[&str]) -> String {
    let mut body = format!(
        "data: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"t{index}\",\"name\":\"f\",\"input\":{input}}}}}\n\n"
    );
    for fragment in fragments {
        let fragment = serde_json::to_string(fragment).expect("json");
        body += &format!(
            "data: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{fragment}}}}}\n\n"
        );
    }
    body + &format!("data: {{\"type\":\"content_block_stop\",\"index\":{index}}}\n\n")
}

const ANTHROPIC_START: &str =
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{}}}\n\n";
const ANTHROPIC_END: &str = "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n";

#[test]
fn fault14_anthropic_block_inputs_count_toward_the_stream_limit() {
    // Each block's start carries 10,000 bytes of input that no fragment replaces, and none
    // stops: held until then, they were never counted, and 200 of them were all kept.
    let input = format!(r#"{{"text":"{}"}}"#, "x".repeat(10_000));
    let mut body = ANTHROPIC_START.to_owned();
    for i in 0..200 {
        body += &format!(
            "data: {{\"type\":\"content_block_start\",\"index\":{i},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"t{i}\",\"name\":\"f\",\"input\":{input}}}}}\n\n"
        );
    }
    let mut d = limited_decoder(1 << 20, 64 * 1024);
    d.push(body.as_bytes()).expect("push");
    assert!(over_stream_limit(&d));
    let calls = d.finish().expect("finish");
    // Six inputs fit 64 KiB; the seventh passed it, and no call started after it.
    assert_eq!(calls.len(), 7);
    assert!(calls
        .iter()
        .all(|c| c.error.as_ref().map(|e| e.kind) == Some(ErrorKind::TooLarge)));
}

#[test]
fn fault14_an_anthropic_input_past_max_bytes_fails_its_call_alone() {
    // An input larger than one call may hold fails that call at once, and is not kept; the
    // response goes on.
    let body = [
        ANTHROPIC_START.to_owned(),
        anthropic_block(0, &format!(r#"{{"text":"{}"}}"#, "x".repeat(500)), &[]),
        anthropic_block(1, "{}", &["", r#"{"a": 1}"#]),
        ANTHROPIC_END.to_owned(),
    ]
    .concat();
    let mut d = limited_decoder(100, 1 << 20);
    d.push(body.as_bytes()).expect("push");
    assert!(!over_stream_limit(&d));
    let calls = d.finish().expect("finish");
    assert_eq!(
        calls[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::TooLarge)
    );
    assert_eq!(calls[0].arguments, b"{}");
    assert!(calls[1].error.is_none(), "{:?}", calls[1].error);
    assert_eq!(calls[1].arguments, br#"{"a": 1}"#);
}

#[test]
fn fault14_set_aside_inputs_count_only_while_held() {
    // Inputs of 1,511 bytes under a limit of 3,000: those that fragments replace are given
    // back at the first fragment, and one that is used is counted once. Counted for good when
    // set aside, the second block would pass the limit.
    let big = |n: usize| format!(r#"{{"text":"{}"}}"#, "x".repeat(n));
    let mut body = ANTHROPIC_START.to_owned();
    for i in 0..5 {
        body += &anthropic_block(i, &big(1500), &["", "{}"]);
    }
    body += &anthropic_block(5, &big(1500), &[]);
    body += ANTHROPIC_END;
    let mut d = limited_decoder(1 << 20, 3000);
    d.push(body.as_bytes()).expect("push");
    assert!(!over_stream_limit(&d));
    let calls = d.finish().expect("finish");
    assert_eq!(calls.len(), 6);
    assert!(calls.iter().all(|c| c.error.is_none()), "{calls:?}");
    assert_eq!(calls[5].arguments, big(1500).as_bytes());
}

/// A Responses `output_item.added` at `index` whose item carries `arguments` (decoded text).
fn responses_added(index: usize, arguments: &str) -> String {
    let arguments = serde_json::to_string(arguments).expect("json");
    format!(
        "data: {{\"type\":\"response.output_item.added\",\"output_index\":{index},\"item\":{{\"type\":\"function_call\",\"id\":\"fc_{index}\",\"call_id\":\"c{index}\",\"name\":\"f\",\"arguments\":{arguments}}}}}\n\n"
    )
}

#[test]
fn fault14_responses_added_arguments_are_summed_against_the_stream_limit() {
    // Each `added` carried 10,000 bytes: checked one at a time, each fitted 64 KiB, and 200 of
    // them were all held.
    let arguments = format!(r#"{{"text":"{}"}}"#, "x".repeat(10_000));
    let mut body = String::new();
    for i in 0..200 {
        body += &responses_added(i, &arguments);
    }
    let mut d = limited_decoder(1 << 20, 64 * 1024);
    d.push(body.as_bytes()).expect("push");
    assert!(over_stream_limit(&d));
    let calls = d.finish().expect("finish");
    assert_eq!(calls.len(), 7);
    assert!(calls
        .iter()
        .all(|c| c.error.as_ref().map(|e| e.kind) == Some(ErrorKind::TooLarge)));
}

#[test]
fn fault14_responses_added_arguments_past_max_bytes_fail_their_call_alone() {
    let body = [
        responses_added(0, &format!(r#"{{"text":"{}"}}"#, "x".repeat(500))),
        "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_0\",\"call_id\":\"c0\",\"name\":\"f\"}}\n\n".to_owned(),
        responses_added(1, r#"{"a":1}"#),
        "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n".to_owned(),
    ]
    .concat();
    let mut d = limited_decoder(100, 1 << 20);
    d.push(body.as_bytes()).expect("push");
    assert!(!over_stream_limit(&d));
    let calls = d.finish().expect("finish");
    assert_eq!(
        calls[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::TooLarge)
    );
    assert_eq!(calls[0].arguments, b"{}");
    assert!(calls[1].error.is_none(), "{:?}", calls[1].error);
    assert_eq!(calls[1].arguments, br#"{"a":1}"#);
}

#[test]
fn fault14_merged_gemini_pieces_count_toward_the_stream_limit() {
    let part = |call: &str| {
        format!(r#"data: {{"candidates":[{{"content":{{"parts":[{{"functionCall":{call}}}]}}}}]}}"#)
            + "\r\n\r\n"
    };
    let mut body = part(r#"{"name":"write","willContinue":true}"#);
    for _ in 0..200 {
        body += &part(
            r#"{"partialArgs":[{"jsonPath":"$.text","stringValue":"0123456789","willContinue":true}],"willContinue":true}"#,
        );
    }
    body += &part(r#"{"partialArgs":[{"jsonPath":"$.end","boolValue":true}]}"#);
    let limited = |max_stream_bytes| {
        let mut d = StreamDecoder::new(
            Assembler::new(AssemblerConfig {
                max_stream_bytes,
                ..AssemblerConfig::default()
            })
            .expect("config"),
        );
        d.push(body.as_bytes()).expect("push");
        let over = d
            .errors()
            .iter()
            .any(|e| e.kind == StreamErrorKind::StreamLimit);
        (over, d.finish().expect("finish"))
    };
    // 200 pieces of "$.text" (6 bytes) and ten bytes of text: 3,200 bytes held before the call
    // closes, then "$.end".
    let (over, calls) = limited(1000);
    assert!(over);
    assert_eq!(
        calls[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::TooLarge)
    );
    let (over, calls) = limited(4000);
    assert!(!over);
    assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
    assert_eq!(
        calls[0].arguments.len(),
        2000 + r#"{"text":"","end":true}"#.len()
    );
}

/// A Responses body of `events` (their `data`), each framed under its own `type`.
fn responses_body(events: &[&str]) -> String {
    events
        .iter()
        .map(|data| {
            let kind = value(data)["type"].as_str().map(str::to_owned);
            format!("event: {}\ndata: {data}\n\n", kind.unwrap_or_default())
        })
        .collect()
}

#[test]
fn a_final_item_that_contradicts_the_done_summary_is_not_run() {
    // The `.done` summary gave a call without deltas its text; the finished item then says
    // otherwise. Only the first summary was read, so the call ran with it silently: every
    // summary is compared with what the call holds, as `feed_chunk` compares it.
    for (done, last) in [
        ("{}", r#"{\"n\": 1}"#),
        (r#"{\"a\":1}"#, r#"{\"a\":1,\"b\":2}"#),
    ] {
        let added = r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":""}}"#;
        let done = format!(
            r#"{{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{done}"}}"#
        );
        let last = format!(
            r#"{{"type":"response.output_item.done","output_index":0,"item":{{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{last}"}}}}"#
        );
        let body = responses_body(&[added, &done, &last]);
        let mut d = decoder();
        d.push(body.as_bytes()).expect("push before finish");
        let calls = d.finish().expect("first finish");
        assert_eq!(calls.len(), 1);
        assert!(calls[0].error.is_some(), "{:?}", calls[0]);
        let kinds: Vec<_> = d.errors().iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [StreamErrorKind::ArgumentsMismatch]);
    }
}

#[test]
fn a_final_item_that_repeats_the_done_summary_changes_nothing() {
    let body = responses_body(&[
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{\"a\":1}"}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{\"a\": 1}"}}"#,
    ]);
    let mut d = decoder();
    d.push(body.as_bytes()).expect("push before finish");
    let calls = d.finish().expect("first finish");
    assert_eq!(calls[0].error, None);
    assert_eq!(calls[0].arguments, br#"{"a":1}"#);
    assert!(d.errors().is_empty());
}

#[test]
fn a_call_sent_again_with_only_its_summaries_is_judged_by_its_bytes() {
    // After the call ended, it comes again with no deltas (the same item, or another item
    // under the same `call_id`). Its summary was compared with the first rendition's text by
    // its tokens: a respaced rendition was dropped without a word, and another one was
    // reported as `arguments_mismatch`. As on `feed_chunk`, the same bytes are dropped
    // (`replay_dropped`) and other text is a call of its own under a renamed id.
    let item = |id: &str, at: usize, kind: &str, arguments: &str| {
        format!(
            r#"{{"type":"response.output_item.{kind}","output_index":{at},"item":{{"type":"function_call","id":"{id}","call_id":"call_1","name":"f","arguments":"{arguments}"}}}}"#
        )
    };
    let done = |id: &str, at: usize, arguments: &str| {
        format!(
            r#"{{"type":"response.function_call_arguments.done","item_id":"{id}","output_index":{at},"arguments":"{arguments}"}}"#
        )
    };
    let first = r#"{\"a\": 1}"#;
    for (id, at) in [("fc_1", 0), ("fc_2", 1)] {
        for again in [first, r#"{\"a\":1}"#, r#"{\"a\": 2}"#] {
            let events = [
                item("fc_1", 0, "added", ""),
                done("fc_1", 0, first),
                item("fc_1", 0, "done", first),
                item(id, at, "added", ""),
                done(id, at, again),
                item(id, at, "done", again),
                r#"{"type":"response.completed","response":{"status":"completed"}}"#.to_owned(),
            ];
            let refs: Vec<&str> = events.iter().map(String::as_str).collect();
            let mut d = decoder();
            d.push(responses_body(&refs).as_bytes()).expect("push");
            let calls = d.finish().expect("finish");
            assert!(d.errors().is_empty(), "{:?}", d.errors());
            let got: Vec<_> = calls
                .iter()
                .map(|c| {
                    (
                        c.id.as_deref(),
                        c.arguments.clone(),
                        c.error.is_none(),
                        c.warnings.clone(),
                    )
                })
                .collect();
            let unescaped = |t: &str| t.replace('\\', "").into_bytes();
            if again == first {
                assert_eq!(
                    got,
                    [(
                        Some("call_1"),
                        unescaped(first),
                        true,
                        vec![warning::REPLAY_DROPPED]
                    )]
                );
            } else {
                assert_eq!(
                    got,
                    [
                        (Some("call_1"), unescaped(first), true, vec![]),
                        (
                            Some("call_1_1"),
                            unescaped(again),
                            true,
                            vec![warning::DUPLICATE_ID]
                        ),
                    ]
                );
            }
        }
    }
}

#[test]
fn a_summary_after_its_item_ended_opens_no_call() {
    // Events out of order: the item ended (with no text, or the text a summary gave it), then
    // a `.done` came. The call has ended: the summary must not open a nameless one.
    for done in [
        "",
        r#"{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{\"a\":1}"}"#,
    ] {
        let mut events = vec![
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":""}}"#,
            done,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{\"a\":2}"}"#,
        ];
        events.retain(|e| !e.is_empty());
        let body = responses_body(&events);
        let mut d = decoder();
        d.push(body.as_bytes()).expect("push before finish");
        let calls = d.finish().expect("first finish");
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0].name.as_deref(), Some("f"));
    }
}

#[test]
fn a_responses_item_announced_without_a_name_is_named_by_its_done() {
    // Quirks 10, 11: `added` gave a blank name or none, the arguments streamed in, and the
    // finished item names the call, as it names an item whose `added` was lost. The text that
    // came between is kept; a name the call has is kept as well.
    let done = |name: &str| {
        format!(
            r#"{{"type":"response.output_item.done","output_index":0,"item":{{"type":"function_call","id":"fc_1","call_id":"c","name":"{name}","arguments":"{{\"city\":\"Paris\"}}"}}}}"#
        )
    };
    let delta = r#"{"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_1","delta":"{\"city\":\"Paris\"}"}"#;
    for (added, last, want) in [
        (r#""name":"","#, "get_weather", "get_weather"),
        ("", "get_weather", "get_weather"),
        (r#""name":"f","#, "get_weather", "f"),
    ] {
        let added = format!(
            r#"{{"type":"response.output_item.added","output_index":0,"item":{{"type":"function_call","id":"fc_1","call_id":"c",{added}"arguments":""}}}}"#
        );
        let body = responses_body(&[&added, delta, &done(last)]);
        let whole = run(body.as_bytes());
        ok(whole.call(0), want, r#"{"city":"Paris"}"#);
        assert_eq!(whole.calls.len(), 1);
        assert_eq!(whole, run_chunks(body.as_bytes().chunks(1)), "{added}");
    }
    // A finished item without a name leaves the call without one: it does not run.
    let added = r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"c","name":"","arguments":""}}"#;
    let o = run(responses_body(&[added, delta, &done("")]).as_bytes());
    assert_eq!(o.call(0).error, Some(ErrorKind::MissingName));
}

/// A stream read elsewhere (chunk objects) tells its problems by event number; they are the
/// stream's errors as a body's own are, first of each kind, ordered by event; once a body is
/// pushed they join its errors instead of hiding behind them.
#[test]
fn errors_told_by_the_caller_are_the_streams_errors() {
    let mut d = decoder();
    d.record_error(
        StreamErrorKind::ProviderError,
        4,
        "{\"type\":\"overloaded_error\"}",
    );
    d.record_error(
        StreamErrorKind::MalformedEvent,
        2,
        "a chunk that is not an object",
    );
    d.record_error(StreamErrorKind::ProviderError, 5, "second");
    let told: Vec<_> = d
        .errors()
        .iter()
        .map(|e| (e.kind, e.event, e.message.as_str()))
        .collect();
    assert_eq!(
        told,
        [
            (
                StreamErrorKind::MalformedEvent,
                2,
                "a chunk that is not an object"
            ),
            (
                StreamErrorKind::ProviderError,
                4,
                "{\"type\":\"overloaded_error\"}"
            ),
        ]
    );
    assert_eq!(d.error_count(StreamErrorKind::ProviderError), 2);
    assert_eq!(
        StreamErrorKind::from_slug("provider_error"),
        Some(StreamErrorKind::ProviderError)
    );
    assert_eq!(StreamErrorKind::from_slug("nonsense"), None);

    let mut d = decoder();
    d.push(b"data: {\"error\": {\"message\": \"boom\"}}\n\n")
        .expect("push");
    d.record_error(StreamErrorKind::MalformedEvent, 2, "told");
    let kinds: Vec<_> = d.errors().iter().map(|e| (e.kind, e.event)).collect();
    assert_eq!(
        kinds,
        [
            (StreamErrorKind::ProviderError, 1),
            (StreamErrorKind::MalformedEvent, 2)
        ]
    );
}

#[test]
fn a_call_the_stream_never_ended_does_not_run_as_a_call_without_parameters() {
    // Anthropic and Responses end each call with its own event. A call started with a `{}`
    // placeholder (or `""`) and never ended, followed by a whole call, was read as `{}` when
    // the response then ended, by its output limit or not: a tool whose parameters are all
    // optional ran with its defaults. It is cut off, as when the connection drops.
    let tool_use = |index: u32, name: &str| {
        format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"tool_use","id":"toolu_{index}","name":"{name}","input":{{}}}}}}"#
        )
    };
    for stop in ["max_tokens", "tool_use"] {
        let first = tool_use(0, "delete_files");
        let second = tool_use(1, "lookup");
        let delta = format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{stop}"}},"usage":{{"output_tokens":5}}}}"#
        );
        let body = anthropic_body(&[
            ("content_block_start", &first),
            ("content_block_start", &second),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            ("message_delta", &delta),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ]);
        let o = run(&body);
        assert_eq!(
            o.call(0).error,
            Some(ErrorKind::Truncated),
            "{stop}: {:?}",
            o.call(0)
        );
        assert!(o.call(0).args.is_empty(), "{stop}: {:?}", o.call(0));
        ok(o.call(1), "lookup", r#"{"a":1}"#);
    }
    let added = |index: u32, name: &str| {
        format!(
            r#"{{"type":"response.output_item.added","output_index":{index},"item":{{"type":"function_call","id":"fc_{index}","call_id":"c{index}","name":"{name}","arguments":""}}}}"#
        )
    };
    for end in [
        r#"{"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}}"#,
        r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[]}}"#,
    ] {
        let body = responses_body(&[
            &added(0, "delete_files"),
            &added(1, "lookup"),
            r#"{"type":"response.function_call_arguments.delta","output_index":1,"item_id":"fc_1","delta":"{\"a\":1}"}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"c1","name":"lookup","arguments":"{\"a\":1}"}}"#,
            end,
        ]);
        let o = run(body.as_bytes());
        assert_eq!(
            o.call(0).error,
            Some(ErrorKind::Truncated),
            "{end}: {:?}",
            o.call(0)
        );
        ok(o.call(1), "lookup", r#"{"a":1}"#);
    }
}

#[test]
fn chat_a_single_choice_numbered_other_than_zero_is_assembled() {
    // A translator numbered the only choice 1: its calls vanished, with no error, as if they
    // were another answer's. The first choice the stream shows is the one assembled.
    let body = b"data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"A\",\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":1,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";
    let mut d = decoder();
    d.push(body).expect("push");
    assert_eq!(d.ignored_choices(), 0);
    let o = collect(d);
    assert_eq!(o.text, "A");
    ok(o.call(0), "f", r#"{"a":1}"#);
    assert_eq!(o.finish_raw.as_deref(), Some("tool_calls"));
}

#[test]
fn responses_calls_sent_only_in_the_finished_response_are_read() {
    // A bridge that lists its function calls only in `response.completed`'s `output`: they
    // were dropped, the finish reason `completed`. Read as their `output_item.done` would be.
    let body = responses_body(&[
        r#"{"type":"response.output_text.delta","output_index":0,"item_id":"msg_1","delta":"On it."}"#,
        r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[{"type":"message","id":"msg_1","content":[]},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":"{\"q\":1}"},{"type":"custom_tool_call","id":"ct_1","call_id":"call_x","name":"grammar","input":"x"}]}}"#,
    ]);
    let o = run(body.as_bytes());
    assert_eq!(o.calls.len(), 2, "{:?}", o.calls);
    ok(o.call(0), "lookup", r#"{"q":1}"#);
    assert_eq!(o.call(0).id.as_deref(), Some("call_1"));
    assert_eq!(o.call(0).index, Some(1));
    // The custom tool call beside it is a call too, of its free-form text (it was dropped).
    free_form(o.call(1), "grammar", "x", "call_x");
    assert_eq!(o.call(1).index, Some(2));
    assert_eq!(o.finish, Some(FinishReason::ToolCalls));
    // A call the stream announced is not read again from the summary.
    let streamed = responses_body(&[
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_1","delta":"{\"q\":1}"}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":"{\"q\":1}"}}"#,
        r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":"{\"q\":1}"}]}}"#,
    ]);
    let o = run(streamed.as_bytes());
    assert_eq!(o.calls.len(), 1, "{:?}", o.calls);
}

#[test]
fn gemini_last_chunk_without_its_blank_line_is_read() {
    // google-genai decodes the data an event gathered when a body that ends cleanly ends
    // inside it; the raw path reads such a last chunk too, split anywhere.
    let whole = gemini_body(
        &[
            r#"{"name":"f","args":{"a":1}}"#,
            r#"{"name":"g","args":{}}"#,
        ],
        Some("STOP"),
    );
    for ending in [&b"\n"[..], b"", b"\r", b"\r\n"] {
        let mut body = whole[..whole.len() - 2].to_vec();
        body.extend_from_slice(ending);
        for o in [run(&body), run_chunks(body.chunks(1))] {
            ok(o.call(0), "f", r#"{"a":1}"#);
            ok(o.call(1), "g", "{}");
            assert_eq!(o.finish, Some(FinishReason::Stop), "{ending:?}");
            assert_eq!(o.count(StreamErrorKind::TruncatedBody), 0, "{ending:?}");
        }
    }
    // A last chunk cut inside its JSON is no chunk: the body was cut.
    let o = run(&whole[..whole.len() - 6]);
    assert_eq!(o.calls.len(), 1);
    assert_eq!(o.count(StreamErrorKind::TruncatedBody), 1);
}

#[test]
fn other_formats_drop_an_event_without_its_blank_line() {
    // The `openai` and `anthropic` SDKs dispatch an event only at its blank line: a last event
    // without one is not read, and the body was cut.
    let chat = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n";
    let anthropic = b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n";
    for body in [&chat[..], &anthropic[..]] {
        let o = run(body);
        assert!(o.calls.is_empty());
        assert_eq!(o.count(StreamErrorKind::TruncatedBody), 1);
    }
}

fn free_form(c: &Call, name: &str, input: &str, id: &str) {
    assert_eq!(c.name.as_deref(), Some(name), "{c:?}");
    assert_eq!(c.args, input, "{c:?}");
    assert_eq!(c.id.as_deref(), Some(id), "{c:?}");
    assert_eq!(c.error, Some(ErrorKind::FreeFormCall), "{c:?}");
}

fn custom_events(input: &str, pieces: &[&str]) -> Vec<String> {
    let quoted = serde_json::to_string(input).expect("a string");
    let mut events = vec![
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"custom_tool_call","id":"ctc_1","call_id":"call_c","name":"run_sql","input":""}}"#.to_owned(),
    ];
    for piece in pieces {
        let delta = serde_json::to_string(piece).expect("a string");
        events.push(format!(
            r#"{{"type":"response.custom_tool_call_input.delta","output_index":0,"item_id":"ctc_1","delta":{delta}}}"#
        ));
    }
    events.push(format!(
        r#"{{"type":"response.custom_tool_call_input.done","output_index":0,"item_id":"ctc_1","input":{quoted}}}"#
    ));
    events.push(format!(
        r#"{{"type":"response.output_item.done","output_index":0,"item":{{"type":"custom_tool_call","id":"ctc_1","call_id":"call_c","name":"run_sql","input":{quoted}}}}}"#
    ));
    events
}

#[test]
fn responses_custom_tool_calls_are_calls_of_their_free_form_text() {
    // A custom tool's call streams free text (`custom_tool_call_input` events), no JSON: it
    // was silently no call at all, and the next request lacked its required output. It is a
    // call of that text, never parsed as JSON and never run as arguments.
    let input = "SELECT \"a\" FROM t;\n-- é 😀";
    let mut events = custom_events(input, &["SELECT \"a\"", " FROM t;\n-- é 😀"]);
    events.insert(
        1,
        r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_f","name":"f","arguments":""}}"#.to_owned(),
    );
    events.push(r#"{"type":"response.function_call_arguments.delta","output_index":1,"item_id":"fc_1","delta":"{}"}"#.to_owned());
    events.push(r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_f","name":"f","arguments":"{}"}}"#.to_owned());
    events.push(
        r#"{"type":"response.completed","response":{"id":"r","status":"completed"}}"#.to_owned(),
    );
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let body = responses_body(&refs);
    let whole = run(body.as_bytes());
    assert_eq!(whole.calls.len(), 2, "{:?}", whole.calls);
    free_form(whole.call(0), "run_sql", input, "call_c");
    assert_eq!(
        whole.call(0).metadata,
        [("item_id".to_owned(), "\"ctc_1\"".to_owned())]
    );
    assert!(whole.call(0).warnings.is_empty(), "{:?}", whole.call(0));
    ok(whole.call(1), "f", "{}");
    assert_eq!(whole.finish, Some(FinishReason::ToolCalls));
    assert_eq!(whole, run_chunks(body.as_bytes().chunks(1)));
    assert_eq!(whole, run_chunks(body.as_bytes().chunks(7)));
}

#[test]
fn responses_custom_tool_call_text_that_is_json_is_not_run_as_arguments() {
    // Free-form text that happens to be a JSON object is still the custom tool's input.
    let mut events = custom_events(r#"{"a": 1}"#, &[r#"{"a": 1}"#]);
    events.push(
        r#"{"type":"response.completed","response":{"id":"r","status":"completed"}}"#.to_owned(),
    );
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let o = run(responses_body(&refs).as_bytes());
    free_form(o.call(0), "run_sql", r#"{"a": 1}"#, "call_c");
    // An empty input is an input: kept empty, not `{}`.
    let mut events = custom_events("", &[]);
    events.push(
        r#"{"type":"response.completed","response":{"id":"r","status":"completed"}}"#.to_owned(),
    );
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let o = run(responses_body(&refs).as_bytes());
    free_form(o.call(0), "run_sql", "", "call_c");
}

#[test]
fn responses_custom_tool_call_whose_item_events_were_lost_is_kept() {
    // Its `added` was lost: the input events open it (nameless), the finished item names it.
    let events = custom_events("x + 1", &["x + 1"]);
    let mut kept: Vec<&str> = events[1..].iter().map(String::as_str).collect();
    let o = run(responses_body(&kept).as_bytes());
    free_form(o.call(0), "run_sql", "x + 1", "call_c");
    // Its `added` and finished item both lost, the stream cut: still a call, never run.
    kept.pop();
    let o = run(responses_body(&kept).as_bytes());
    assert_eq!(o.calls.len(), 1, "{:?}", o.calls);
    assert_eq!(o.call(0).error, Some(ErrorKind::MissingName));
    assert_eq!(o.call(0).args, "x + 1");
}

#[test]
fn responses_a_finished_item_that_restates_another_custom_input_wins_and_is_told() {
    // The `.done` event and the finished item disagree: the item is what the provider keeps
    // as the call, so its text is the call's, with a warning and a stream error.
    let mut events = custom_events("SELECT 2", &["SELECT 2"]);
    events[2] = events[2].replace("SELECT 2", "SELECT 1");
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let body = responses_body(&refs);
    let o = run(body.as_bytes());
    assert_eq!(o.call(0).args, "SELECT 2", "{o:?}");
    assert_eq!(o.call(0).warnings, ["input_mismatch"]);
    assert_eq!(o.call(0).error, Some(ErrorKind::FreeFormCall));
    assert_eq!(o.count(StreamErrorKind::ArgumentsMismatch), 1);
    assert_eq!(o, run_chunks(body.as_bytes().chunks(1)));
    // Agreeing, they tell nothing.
    let events = custom_events("SELECT 2", &["SELECT 2"]);
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let o = run(responses_body(&refs).as_bytes());
    assert!(
        o.errors.is_empty() && o.call(0).warnings.is_empty(),
        "{o:?}"
    );
}

#[test]
fn chat_custom_tool_calls_are_calls_of_their_free_form_pieces() {
    // A Chat custom tool call names itself and streams its input under `custom`: its name and
    // text were lost. Pieces that repeat the text before them are free text, joined as sent.
    let piece = |input: &str| {
        let input = serde_json::to_string(input).expect("a string");
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"custom\":{{\"input\":{input}}}}}]}}}}]}}\n\n"
        )
    };
    let mut body = String::from(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"custom\",\"custom\":{\"name\":\"run_sql\",\"input\":\"\"}}]}}]}\n\n",
    );
    for text in ["a", "a", "{}", "{}"] {
        body.push_str(&piece(text));
    }
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    );
    let o = run(body.as_bytes());
    assert_eq!(o.calls.len(), 1, "{o:?}");
    free_form(o.call(0), "run_sql", "aa{}{}", "call_1");
    assert!(o.call(0).warnings.is_empty(), "{o:?}");
    assert_eq!(o, run_chunks(body.as_bytes().chunks(1)));
}

#[test]
fn responses_messages_and_gemini_text_keep_their_places_among_the_calls() {
    // A call, then two messages: each message's place goes on the call, so that the next turn
    // sends both after it, each a message of its own.
    let responses = concat!(
        "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
        "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"ping\",\"arguments\":\"\"}}\n\n",
        "data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":0,\"delta\":\"{}\"}\n\n",
        "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"ping\",\"arguments\":\"{}\"}}\n\n",
        "data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[]}}\n\n",
        "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"Pinged.\"}\n\n",
        "data: {\"type\":\"response.output_item.added\",\"output_index\":2,\"item\":{\"type\":\"message\",\"id\":\"msg_2\",\"role\":\"assistant\",\"content\":[]}}\n\n",
        "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_2\",\"output_index\":2,\"content_index\":0,\"delta\":\"Anything else?\"}\n\n",
        "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[]}}\n\n",
    );
    // Text and a call in one chunk, then text cut over two chunks: one block after the call.
    let gemini = concat!(
        "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Checking.\"},{\"functionCall\":{\"name\":\"ping\",\"args\":{}}}]}}]}\n\n",
        "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Pin\"}]}}]}\n\n",
        "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"ged.\"}]},\"finishReason\":\"STOP\"}]}\n\n",
    );
    for (body, metadata) in [
        (
            responses,
            [("item_id", "\"fc_1\""), ("text_after", "[[0,0],[7,0]]")],
        ),
        (
            gemini,
            [("text_before", "[[0,0]]"), ("text_after", "[[9,0]]")],
        ),
    ] {
        let o = run(body.as_bytes());
        let expected: Vec<(String, String)> = metadata
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        assert_eq!(o.call(0).metadata, expected, "{o:?}");
        assert_eq!(o, run_chunks(body.as_bytes().chunks(1)));
    }
}

/// A `pause_turn` after a code-execution server tool: the next request continues the turn in
/// the same container, so its id must come out of the stream.
fn container_of(events: &[(&str, &str)]) -> Option<String> {
    let config = AssemblerConfig::default();
    let mut decoder =
        StreamDecoder::new(Assembler::new(config).unwrap_or_else(|e| panic!("{e:?}")));
    let body = anthropic_body(events);
    for piece in body.chunks(7) {
        decoder.push(piece).unwrap_or_else(|e| panic!("{e:?}"));
    }
    let _ = decoder.finish();
    assert!(decoder.errors().is_empty(), "{:?}", decoder.errors());
    decoder.container().map(str::to_owned)
}

#[test]
fn anthropic_container_id_is_kept_for_the_turn_that_continues() {
    let start = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"container":null,"usage":{"input_tokens":5}}}"#;
    let paused = r#"{"type":"message_delta","delta":{"stop_reason":"pause_turn","container":{"id":"container_011CT","expires_at":"2026-12-07T23:00:00Z"}},"usage":{"output_tokens":3}}"#;
    let stop = ("message_stop", r#"{"type":"message_stop"}"#);
    assert_eq!(
        container_of(&[("message_start", start), ("message_delta", paused), stop]).as_deref(),
        Some("container_011CT")
    );
    // Named by the message itself (a whole `Message`, or a proxy that sends it at the start),
    // and not forgotten by a `message_delta` that names none.
    let named = start.replace(r#""container":null"#, r#""container":{"id":"container_2"}"#);
    let plain = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","container":null}}"#;
    let events = [
        ("message_start", named.as_str()),
        ("message_delta", plain),
        stop,
    ];
    assert_eq!(container_of(&events).as_deref(), Some("container_2"));
    // None named, or one of another shape: none, and the rest of the event is still read.
    let odd = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","container":{"id":7}}}"#;
    assert_eq!(
        container_of(&[("message_start", start), ("message_delta", odd), stop]),
        None
    );
}
