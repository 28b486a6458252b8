//! `drain_errors`, `has_certain_error`, the progress drain and `lose_event` visit only the
//! calls changed since they last looked (see `watched::Calls`), and report exactly what
//! visiting every call reported: the same errors, in the same order, the same signal, the same
//! progress items in the same order and the same lost calls, after every step of any sequence
//! of operations, through `feed`, `feed_continuation`, every per-call and per-stream operation
//! the bindings and adapters use, and the raw SSE path.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;

use super::{
    Arguments, Assembler, AssemblerConfig, Delta, Error, ErrorKind, Registry, Summary, ToolCall,
};
use crate::gateway::StreamDecoder;
use crate::progress::Recorded;
use crate::scanner::ScanConfig;
use crate::value::{PartialOptions, ValueSink};

/// The readers as they were before calls were queued: every call visited (the oracle).
impl Assembler {
    fn drain_errors_visiting_all(&mut self) -> Vec<(usize, Error)> {
        if self.finished {
            return std::mem::take(&mut self.released_errors);
        }
        let mut out = Vec::new();
        self.calls
            .drain_errors_visiting_all(self.registry.as_deref(), &mut out);
        out
    }

    fn has_certain_error_visiting_all(&mut self) -> bool {
        if self.finished {
            return self.finished_failed;
        }
        self.over.is_some()
            || self
                .calls
                .any_certain_error_visiting_all(self.registry.as_deref())
    }
}

const KEYS: [Option<i64>; 6] = [Some(0), Some(1), Some(2), None, Some(20), Some(-1)];
const IDS: [&str; 3] = ["a", "b", "c"];
const NAMES: [&str; 5] = ["tool", "other", "to", "ol", "nope"];
const PIECES: &[&str] = &[
    r#"{"a": "#,
    "1",
    "2}",
    r#""x"#,
    r#"y""#,
    "}",
    r#", "b": ["#,
    "]",
    r#"{"city": "Paris"}"#,
    " ",
    "{",
    "tru",
    "e",
    r#""\x""#,
    ",}",
    r#"{"a": 1}{"b": 2}"#,
    "}}",
    "[1, 2]",
    r#"{"n": 3, "city": "Rome", "x": 1}"#,
    "",
    "\n",
    r#"{"x": "#,
];
const VALUES: &[&str] = &[
    r#"{"a": 1}"#,
    "{}",
    r#"{"city": "Paris"}"#,
    "[1]",
    r#"{"x": 2}"#,
];

/// A registry the pieces above break in many ways: unknown keys, a bound, a string too long, a
/// required key; and names that are pieces of others.
fn registry() -> Arc<Registry> {
    let mut registry = Registry::new();
    let tool = json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 4},
            "a": {"type": "integer", "maximum": 1},
            "b": {"type": "array", "items": {"type": "integer"}},
            "n": {"type": "integer"},
            "note": {"type": "string"}
        },
        "additionalProperties": false
    });
    // Secret values, and names that are pieces of the secret tool's: progress items wait for
    // a name, and hide what they must once it is known.
    registry
        .add_with_secrets("tool", &tool, &["/note", "/b"])
        .expect("schema");
    let other =
        json!({"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}}});
    registry.add("other", &other).expect("schema");
    Arc::new(registry)
}

/// Argument text, some of it read from the call the delta goes to.
#[derive(Debug, Clone)]
enum Text {
    Piece(usize),
    /// The call's text so far and a piece: a cumulative resend (held while both readings stay
    /// valid).
    Resend(usize),
    /// The call's text so far again.
    Repeat,
    /// More than the deferral bound and the small `max_bytes`.
    Long,
}

#[derive(Debug, Clone)]
enum Args {
    None,
    Text(Text),
    Value(usize),
}

#[derive(Debug, Clone)]
struct Header {
    key: usize,
    id: Option<usize>,
    name: Option<usize>,
    kind: bool,
    args: Args,
    start: bool,
}

#[derive(Debug, Clone)]
enum Op {
    Feed(Header),
    StartsCall(Header),
    /// `feed_continuation`, then `feed` when it declines, as the Python binding does.
    Continue(usize, Text),
    End(usize),
    Summary(usize, Text),
    Confirm(usize, Text),
    Interrupt,
    Limit,
    Stop,
    StopAll,
    Lose,
    LoseArguments(usize),
    Mismatch(usize),
    SetAside(Option<usize>, usize),
    Release(usize),
    KeepText(usize),
    Metadata(usize),
    MetadataForKey(usize),
    DropMetadata(usize),
    SetIndex(usize, usize),
    SettleHeld,
    Partial(usize),
    RecordProgress(usize, bool),
    StopProgress(usize),
    DrainProgress,
}

fn text() -> impl Strategy<Value = Text> {
    prop_oneof![
        6 => (0..PIECES.len()).prop_map(Text::Piece),
        2 => (0..PIECES.len()).prop_map(Text::Resend),
        1 => Just(Text::Repeat),
        1 => Just(Text::Long),
    ]
}

fn header() -> impl Strategy<Value = Header> {
    let args = prop_oneof![
        1 => Just(Args::None),
        6 => text().prop_map(Args::Text),
        1 => (0..VALUES.len()).prop_map(Args::Value),
    ];
    (
        0..KEYS.len(),
        prop::option::weighted(0.4, 0..IDS.len()),
        prop::option::weighted(0.4, 0..NAMES.len()),
        prop::bool::weighted(0.1),
        args,
        prop::bool::weighted(0.15),
    )
        .prop_map(|(key, id, name, kind, args, start)| Header {
            key,
            id,
            name,
            kind,
            args,
            start,
        })
}

fn op() -> impl Strategy<Value = Op> {
    let call = 0usize..8;
    prop_oneof![
        20 => header().prop_map(Op::Feed),
        1 => header().prop_map(Op::StartsCall),
        8 => (0..3usize, text()).prop_map(|(k, t)| Op::Continue(k, t)),
        3 => call.clone().prop_map(Op::End),
        2 => (call.clone(), text()).prop_map(|(o, t)| Op::Summary(o, t)),
        1 => (call.clone(), text()).prop_map(|(o, t)| Op::Confirm(o, t)),
        1 => Just(Op::Interrupt),
        1 => Just(Op::Limit),
        1 => Just(Op::Stop),
        1 => Just(Op::StopAll),
        2 => Just(Op::Lose),
        1 => call.clone().prop_map(Op::LoseArguments),
        1 => call.clone().prop_map(Op::Mismatch),
        1 => (prop::option::of(call.clone()), 0usize..300).prop_map(|(o, n)| Op::SetAside(o, n)),
        1 => (0usize..300).prop_map(Op::Release),
        1 => (0usize..300).prop_map(Op::KeepText),
        1 => call.clone().prop_map(Op::Metadata),
        1 => (0..KEYS.len()).prop_map(Op::MetadataForKey),
        1 => (0..KEYS.len()).prop_map(Op::DropMetadata),
        1 => (call.clone(), 0..KEYS.len()).prop_map(|(o, k)| Op::SetIndex(o, k)),
        1 => Just(Op::SettleHeld),
        1 => call.clone().prop_map(Op::Partial),
        1 => (call.clone(), any::<bool>()).prop_map(|(o, secret)| Op::RecordProgress(o, secret)),
        1 => call.clone().prop_map(Op::StopProgress),
        1 => Just(Op::DrainProgress),
    ]
}

/// The ordinal `pick` names among the calls started, or past them (a misuse) when none is.
fn ordinal(asm: &Assembler, pick: usize) -> usize {
    if asm.is_empty() {
        pick
    } else {
        pick % asm.len()
    }
}

fn long_text() -> String {
    format!(r#"{{"note": "{}", "a": 2}}"#, "long text ".repeat(20))
}

/// The bytes `text` stands for on the call under `key` (read from `asm`).
fn bytes(asm: &Assembler, ordinal: Option<usize>, text: &Text) -> Vec<u8> {
    let held = ordinal
        .and_then(|o| asm.arguments(o))
        .unwrap_or_default()
        .to_vec();
    match text {
        Text::Piece(p) => PIECES[*p].as_bytes().to_vec(),
        Text::Resend(p) => [held.as_slice(), PIECES[*p].as_bytes()].concat(),
        Text::Repeat => held,
        Text::Long => long_text().into_bytes(),
    }
}

/// Applies `op` to `asm`; what it returned, to compare the two assemblers' courses.
fn apply(asm: &mut Assembler, op: &Op) -> String {
    match op {
        Op::Feed(h) | Op::StartsCall(h) => {
            let key = KEYS[h.key];
            let arguments = match &h.args {
                Args::None => None,
                Args::Text(t) => Some(bytes(asm, asm.ordinal_of(key), t)),
                Args::Value(v) => Some(VALUES[*v].as_bytes().to_vec()),
            };
            let delta = Delta {
                index: key,
                id: h.id.map(|i| IDS[i]),
                name: h.name.map(|n| NAMES[n]),
                kind: h.kind.then_some("function"),
                arguments: arguments.as_deref().map(|a| match h.args {
                    Args::Value(_) => Arguments::Value(a),
                    _ => Arguments::Text(a),
                }),
                start: h.start,
            };
            if matches!(op, Op::StartsCall(_)) {
                format!("{:?}", asm.starts_call(&delta))
            } else {
                format!("{:?}", asm.feed(&delta))
            }
        }
        Op::Continue(key, t) => {
            let key = i64::try_from(*key).expect("small");
            let text = bytes(asm, asm.ordinal_of(Some(key)), t);
            match asm.feed_continuation(key, &text) {
                Some(o) => format!("{o}"),
                None => format!(
                    "{:?}",
                    asm.feed(&Delta {
                        index: Some(key),
                        arguments: Some(Arguments::Text(&text)),
                        ..Delta::default()
                    })
                ),
            }
        }
        Op::End(o) => format!("{:?}", asm.end_call(ordinal(asm, *o))),
        Op::Summary(o, t) => {
            let o = ordinal(asm, *o);
            let full = bytes(asm, Some(o), t);
            format!("{:?}", asm.check_summary(o, &full))
        }
        Op::Confirm(o, t) => {
            let o = ordinal(asm, *o);
            let full = bytes(asm, Some(o), t);
            format!("{:?}", asm.confirm_whole(o, &full))
        }
        Op::Interrupt => format!("{:?}", asm.interrupt("reset")),
        Op::Limit => format!("{:?}", asm.limit_reached()),
        Op::Stop => format!("{:?}", asm.stop("content_filter")),
        Op::StopAll => format!("{:?}", asm.stop_all("malformed_tool_use")),
        Op::Lose => format!("{:?}", asm.lose_event("a malformed event")),
        Op::LoseArguments(o) => format!("{:?}", asm.lose_arguments(ordinal(asm, *o), "unread")),
        Op::Mismatch(o) => format!(
            "{:?}",
            asm.mismatch_arguments(ordinal(asm, *o), "replayed otherwise")
        ),
        Op::SetAside(o, n) => {
            let o = o.map(|o| ordinal(asm, o));
            format!("{:?}", asm.set_aside(o, *n))
        }
        Op::Release(n) => {
            asm.release(*n);
            String::new()
        }
        Op::KeepText(n) => format!("{:?}", asm.keep_text(*n)),
        Op::Metadata(o) => format!(
            "{:?}",
            asm.set_metadata(ordinal(asm, *o), "signature", r#""sig""#)
        ),
        Op::MetadataForKey(k) => format!(
            "{:?}",
            asm.set_metadata_for_key(KEYS[*k], "signature", r#""sig""#)
        ),
        Op::DropMetadata(k) => format!("{:?}", asm.drop_metadata_for_key(KEYS[*k])),
        Op::SetIndex(o, k) => format!("{:?}", asm.set_index(ordinal(asm, *o), KEYS[*k])),
        Op::SettleHeld => format!("{:?}", asm.settle_held_fragments()),
        Op::Partial(o) => format!(
            "{:?}",
            asm.partial_into(ordinal(asm, *o), PartialOptions::default(), &mut ValueSink)
        ),
        Op::RecordProgress(o, secret) => format!(
            "{:?}",
            asm.record_progress(
                ordinal(asm, *o),
                if *secret { "/note" } else { "/a" },
                "x",
                Recorded::String { ends: false }
            )
        ),
        Op::StopProgress(o) => format!("{:?}", asm.stop_progress(ordinal(asm, *o))),
        Op::DrainProgress => format!("{:?}", asm.drain_progress()),
    }
}

#[derive(Debug, Clone, Copy)]
struct Setup {
    tools: bool,
    progress: bool,
    max_calls: usize,
    max_bytes: usize,
    max_stream_bytes: usize,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        any::<bool>(),
        prop::bool::weighted(0.3),
        prop_oneof![Just(3usize), Just(1024)],
        prop_oneof![Just(64usize), Just(1 << 20)],
        prop_oneof![1 => Just(400usize), 3 => Just(32 << 20)],
    )
        .prop_map(
            |(tools, progress, max_calls, max_bytes, max_stream_bytes)| Setup {
                tools,
                progress,
                max_calls,
                max_bytes,
                max_stream_bytes,
            },
        )
}

/// An assembler; with `oracle`, one whose progress drain and `lose_event` visit every call.
fn assembler(setup: Setup, oracle: bool) -> Assembler {
    let config = AssemblerConfig {
        scan: ScanConfig {
            max_bytes: setup.max_bytes,
            ..ScanConfig::default()
        },
        track_progress: setup.progress,
        max_calls: setup.max_calls,
        max_stream_bytes: setup.max_stream_bytes,
    };
    let mut asm = if setup.tools {
        Assembler::with_tools(config, registry())
    } else {
        Assembler::new(config)
    }
    .expect("config");
    asm.visit_all = oracle;
    asm
}

/// When a step is followed by a drain of errors, a look at the signal and a drain of
/// progress items.
#[derive(Debug, Clone, Copy)]
struct Look {
    drain: bool,
    judge: bool,
    progress: bool,
}

const EVERY: Look = Look {
    drain: true,
    judge: true,
    progress: true,
};

fn look() -> impl Strategy<Value = Look> {
    (
        prop::bool::weighted(0.6),
        prop::bool::weighted(0.4),
        prop::bool::weighted(0.5),
    )
        .prop_map(|(drain, judge, progress)| Look {
            drain,
            judge,
            progress,
        })
}

fn summary(calls: &[ToolCall]) -> String {
    format!("{calls:?}")
}

/// Compares what the queued readers of `fast` and the visiting ones of `full` report now.
fn compare(fast: &mut Assembler, full: &mut Assembler, look: Look) -> Result<(), TestCaseError> {
    if look.drain {
        prop_assert_eq!(fast.drain_errors(), full.drain_errors_visiting_all());
    }
    if look.judge {
        prop_assert_eq!(
            fast.has_certain_error(),
            full.has_certain_error_visiting_all()
        );
    }
    if look.progress {
        prop_assert_eq!(fast.drain_progress(), full.drain_progress());
    }
    Ok(())
}

fn finish_both(fast: &mut Assembler, full: &mut Assembler) -> Result<(), TestCaseError> {
    prop_assert_eq!(fast.drain_progress(), full.drain_progress());
    let (a, b) = (fast.finish(), full.finish());
    match (a, b) {
        (Ok(a), Ok(b)) => prop_assert_eq!(summary(&a), summary(&b)),
        (a, b) => prop_assert_eq!(a.is_ok(), b.is_ok()),
    }
    // What only `finish` made certain, then nothing.
    for _ in 0..2 {
        compare(fast, full, EVERY)?;
    }
    Ok(())
}

/// Lines of a Responses and an Anthropic stream that give calls errors after they ended: a
/// summary that differs from the streamed text, text after the stop, a stop at the output
/// limit, a refusal; and events that cannot be read.
const LATE_EVENTS: &[&str] = &[
    "event: response.function_call_arguments.done\ndata: {\"type\":\"response.function_call_arguments.done\",\"output_index\":1,\"item_id\":\"fc_68d2a1f3b1c48190aa11bb22cc33dd44\",\"arguments\":\"{\\\"other\\\": 1}\"}\n\n",
    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":2,\"item\":{\"id\":\"fc_x\",\"type\":\"function_call\",\"status\":\"completed\",\"arguments\":\"{\\\"a\\\": 5}\",\"call_id\":\"call_x\",\"name\":\"tool\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"late\\\": \"}}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":3}}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\"},\"usage\":{\"output_tokens\":3}}\n\n",
    "data: {\"choices\": [{\"index\": 0, \"delta\": {\"tool_calls\": [{\"index\": 0, \"function\": {\"arguments\": \"}}\"}}]}}]\n\n",
    "data: {\"choices\": [\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
];

/// The events of every recorded SSE stream, each with its blank line.
fn recorded_events() -> Vec<Vec<String>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sse");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("recorded streams")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "sse"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let body = std::fs::read_to_string(path).expect("utf-8 stream");
            body.replace("\r\n", "\n")
                .split_inclusive("\n\n")
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn queued_readers_report_what_visiting_every_call_reported(
        setup in setup(),
        steps in prop::collection::vec((op(), look()), 0..60),
        every_step in prop::bool::weighted(0.3),
    ) {
        let (mut fast, mut full) = (assembler(setup, false), assembler(setup, true));
        for (op, look) in &steps {
            prop_assert_eq!(apply(&mut fast, op), apply(&mut full, op), "{:?}", op);
            let look = if every_step { EVERY } else { *look };
            compare(&mut fast, &mut full, look)?;
        }
        finish_both(&mut fast, &mut full)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn queued_readers_report_what_visiting_every_call_reported_on_raw_streams(
        setup in setup(),
        picks in prop::collection::vec((0usize..100, 0usize..1000), 1..50),
        files in (0usize..100, 0usize..100),
        cuts in prop::collection::vec((0usize..100_000, look()), 0..30),
    ) {
        let recorded = recorded_events();
        let chosen = [&recorded[files.0 % recorded.len()], &recorded[files.1 % recorded.len()]];
        // Mostly one stream's events in their order, with repeats, skips, late events and
        // another stream's events mixed in.
        let mut body = String::new();
        for (i, (source, event)) in picks.iter().enumerate() {
            match source % 10 {
                0 => body.push_str(LATE_EVENTS[event % LATE_EVENTS.len()]),
                1 => body.push_str(&chosen[1][event % chosen[1].len()]),
                2 | 3 => body.push_str(&chosen[0][event % chosen[0].len()]),
                _ => body.push_str(&chosen[0][i % chosen[0].len()]),
            }
        }
        let body = body.as_bytes();
        let mut points: Vec<(usize, Look)> =
            cuts.iter().map(|(at, look)| (at % (body.len() + 1), *look)).collect();
        points.sort_by_key(|(at, _)| *at);
        points.push((body.len(), EVERY));
        let mut fast = StreamDecoder::new(assembler(setup, false));
        let mut full = StreamDecoder::new(assembler(setup, true));
        let mut from = 0;
        for (to, look) in points {
            let piece = &body[from..to];
            from = to;
            prop_assert_eq!(fast.push(piece), full.push(piece));
            compare(fast.assembler_mut(), full.assembler_mut(), look)?;
        }
        // As the binding finishes a stream whose progress it tracks: the body's end first.
        prop_assert_eq!(fast.end_body(), full.end_body());
        prop_assert_eq!(
            fast.assembler_mut().settle_held_fragments(),
            full.assembler_mut().settle_held_fragments()
        );
        compare(fast.assembler_mut(), full.assembler_mut(), EVERY)?;
        let (a, b) = (fast.finish(), full.finish());
        prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
        for _ in 0..2 {
            prop_assert_eq!(
                fast.assembler_mut().drain_errors(),
                full.assembler_mut().drain_errors_visiting_all()
            );
        }
    }
}

/// Opens calls `from..to` of `tool` (keys equal to their ordinals), one fragment each, with
/// or without start events: each is in a string that takes any length.
fn open_calls(asm: &mut Assembler, from: i64, to: i64, start: bool) {
    for key in from..to {
        asm.feed(&Delta {
            index: Some(key),
            id: Some("id"),
            name: Some("tool"),
            arguments: Some(Arguments::Text(br#"{"note": ""#)),
            start,
            ..Delta::default()
        })
        .expect("feed");
    }
}

/// How many calls the readers visit for one drain and one look at the signal, and what they
/// report: the kinds of the errors drained and the signal.
fn visits(asm: &mut Assembler) -> (usize, Vec<(usize, ErrorKind)>, bool) {
    let before = asm.calls.visited;
    let errors = asm.drain_errors();
    let failed = asm.has_certain_error();
    let kinds = errors.iter().map(|(o, e)| (*o, e.kind)).collect();
    (asm.calls.visited - before, kinds, failed)
}

#[test]
fn a_drain_after_each_chunk_visits_only_the_calls_it_changed() {
    let mut asm = Assembler::with_tools(AssemblerConfig::default(), registry()).expect("config");
    let max = i64::try_from(asm.config().max_calls).expect("small");
    open_calls(&mut asm, 0, max, false);
    let (_, errors, failed) = visits(&mut asm);
    assert!(errors.is_empty() && !failed);
    // A thousand chunks of one call, then of another: two visits each (one per reader), not
    // two thousand.
    for round in 0..1000 {
        let key = if round < 500 { 7 } else { max - 1 };
        asm.feed(&Delta {
            index: Some(key),
            arguments: Some(Arguments::Text(b"ab")),
            ..Delta::default()
        })
        .expect("feed");
        assert_eq!(visits(&mut asm), (2, vec![], false), "round {round}");
    }
    // A chunk that breaks one call (an unknown key, a string too long): that call's errors,
    // and the signal from then on without another visit.
    asm.feed(&Delta {
        index: Some(3),
        arguments: Some(Arguments::Text(br#"", "zz": 1, "city": "Paris"}"#)),
        ..Delta::default()
    })
    .expect("feed");
    let unknown_key_and_too_long = vec![
        (3, ErrorKind::SchemaViolation),
        (3, ErrorKind::SchemaViolation),
    ];
    assert_eq!(visits(&mut asm), (2, unknown_key_and_too_long, true));
    asm.feed(&Delta {
        index: Some(5),
        arguments: Some(Arguments::Text(b"a")),
        ..Delta::default()
    })
    .expect("feed");
    assert_eq!(visits(&mut asm), (1, vec![], true));
}

#[test]
fn a_call_ended_long_ago_still_gets_its_late_errors() {
    let mut asm = Assembler::with_tools(AssemblerConfig::default(), registry()).expect("config");
    asm.feed(&Delta {
        index: Some(0),
        id: Some("first"),
        name: Some("tool"),
        arguments: Some(Arguments::Text(br#"{"a": 1}"#)),
        start: true,
        ..Delta::default()
    })
    .expect("feed");
    asm.end_call(0).expect("end");
    open_calls(&mut asm, 1, 200, true);
    assert_eq!(visits(&mut asm).1, vec![]);
    // The provider's summary of the first call differs from what it streamed.
    assert_eq!(asm.check_summary(0, br#"{"a": 2}"#), Summary::Mismatch);
    assert_eq!(
        visits(&mut asm),
        (2, vec![(0, ErrorKind::ArgumentsMismatch)], true)
    );
}

#[test]
fn a_lost_event_queues_only_the_calls_it_loses() {
    let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
    open_calls(&mut asm, 0, 100, false);
    for ordinal in 0..99 {
        asm.end_call(ordinal).expect("end");
    }
    visits(&mut asm);
    asm.lose_event("a malformed event").expect("lose");
    assert_eq!(
        visits(&mut asm),
        (2, vec![(99, ErrorKind::LostEvent)], true)
    );
}

/// A delta of `text` under `key`, named or not.
fn fragment<'a>(key: i64, name: Option<&'a str>, text: &'a [u8]) -> Delta<'a> {
    Delta {
        index: Some(key),
        name,
        arguments: Some(Arguments::Text(text)),
        ..Delta::default()
    }
}

/// The progress items of one drain as (ordinal, path, text), and how many calls it visited.
fn progress_visits(asm: &mut Assembler) -> (usize, Vec<(usize, String, String)>) {
    let before = asm.calls.visited_progress;
    let items = asm
        .drain_progress()
        .into_iter()
        .map(|(o, item)| (o, item.path, item.text))
        .collect();
    (asm.calls.visited_progress - before, items)
}

#[test]
fn a_progress_drain_after_each_chunk_visits_only_the_calls_it_changed() {
    let config = AssemblerConfig {
        track_progress: true,
        ..AssemblerConfig::default()
    };
    let mut asm = Assembler::with_tools(config, registry()).expect("config");
    let max = i64::try_from(asm.config().max_calls).expect("small");
    for key in 0..max {
        asm.feed(&fragment(key, Some("tool"), br#"{"city": ""#))
            .expect("feed");
    }
    let (visited, items) = progress_visits(&mut asm);
    assert_eq!((visited, items.len()), (1024, 1024));
    // A thousand chunks of one call, then of another: one visit each, not 1,024.
    for round in 0..1000 {
        let key = if round < 500 { 7 } else { max - 1 };
        asm.feed(&fragment(key, None, b"ab")).expect("feed");
        let ordinal = usize::try_from(key).expect("small");
        let expected = vec![(ordinal, "/city".to_owned(), "ab".to_owned())];
        assert_eq!(progress_visits(&mut asm), (1, expected), "round {round}");
    }
    // Draining again visits nothing; a call whose items wait for its name stays queued (one
    // visit per drain), and its items come out, hidden, once its name says what is secret.
    assert_eq!(progress_visits(&mut asm), (0, vec![]));
    let mut nameless = Assembler::with_tools(config, registry()).expect("config");
    nameless
        .feed(&fragment(0, None, br#"{"note": "hunter2", "a""#))
        .expect("feed");
    assert_eq!(progress_visits(&mut nameless), (1, vec![]));
    assert_eq!(progress_visits(&mut nameless), (1, vec![]));
    nameless
        .feed(&fragment(0, Some("tool"), b": 1"))
        .expect("feed");
    let hidden = vec![(0, "/note".to_owned(), "[redacted]".to_owned())];
    assert_eq!(progress_visits(&mut nameless), (1, hidden));
    assert_eq!(progress_visits(&mut nameless), (0, vec![]));
}

/// How many calls one lost event visits, and the ordinals of the calls lost so far.
fn lost_visits(asm: &mut Assembler) -> (usize, Vec<usize>) {
    let before = asm.calls.visited_lost;
    asm.lose_event("a malformed event").expect("lose");
    let lost = (0..asm.len())
        .filter(|&o| {
            asm.calls[o]
                .arrival
                .as_ref()
                .is_some_and(|e| e.kind == ErrorKind::LostEvent)
        })
        .collect();
    (asm.calls.visited_lost - before, lost)
}

#[test]
fn a_lost_event_visits_only_the_calls_changed_since_the_last_one() {
    // Chat calls whose values are whole are never ended: each unreadable event of a stream of
    // them visited every call from the first whole one on.
    let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
    for key in 0..500 {
        asm.feed(&fragment(key, Some("f"), br#"{"a": 1}"#))
            .expect("feed");
    }
    assert_eq!(lost_visits(&mut asm), (500, vec![]));
    for round in 0..100 {
        // A new call, open when the next event is lost: only it is visited, and lost.
        let key = 500 + round;
        asm.feed(&fragment(key, Some("f"), br#"{"a": "#))
            .expect("feed");
        let (visited, lost) = lost_visits(&mut asm);
        assert_eq!(visited, 1, "round {round}");
        assert_eq!(
            lost,
            (500..=usize::try_from(key).expect("small")).collect::<Vec<_>>()
        );
    }
    // A whole call made open again by text after it is visited again, and lost.
    asm.feed(&fragment(3, None, b" x")).expect("feed");
    let (visited, lost) = lost_visits(&mut asm);
    assert_eq!((visited, lost.first()), (1, Some(&3)));
    assert_eq!(lost_visits(&mut asm).0, 0);
}
