//! Progress of Vertex AI's streamed arguments (`partialArgs`) on the raw SSE path: the items
//! drained for a call, concatenated per JSON Pointer, agree with the call's final value, arrive
//! as the pieces do (all of them before the call closes), and come once, however the body is
//! split. Without progress tracking the calls are the same and no item is made.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use toolwire::assembler::{Assembler, AssemblerConfig, ToolCall};
use toolwire::gateway::StreamDecoder;

const FIXTURE: &[u8] = include_bytes!("data/sse/gemini_partial_args.sse");

/// Per (call ordinal, JSON Pointer), the texts of its items, concatenated.
type Texts = BTreeMap<(usize, String), String>;

fn decoder(track_progress: bool) -> StreamDecoder {
    let config = AssemblerConfig {
        track_progress,
        ..AssemblerConfig::default()
    };
    StreamDecoder::new(Assembler::new(config).expect("config"))
}

fn drain(d: &mut StreamDecoder, texts: &mut Texts) {
    d.assembler_mut()
        .drain_progress_each(|ordinal, path, text, _, _| {
            texts
                .entry((ordinal, String::from_utf8_lossy(path).into_owned()))
                .or_default()
                .push_str(&String::from_utf8_lossy(text));
        });
}

/// Pushes `pieces` in turn, draining after each; returns what was drained.
fn push_all<'a>(d: &mut StreamDecoder, pieces: impl IntoIterator<Item = &'a [u8]>) -> Texts {
    let mut texts = Texts::new();
    for piece in pieces {
        d.push(piece).expect("push");
        drain(d, &mut texts);
    }
    texts
}

/// What the items of a whole value give, per pointer: each string's text, and each number's
/// and literal's JSON text as the arguments hold it.
fn leaves(ordinal: usize, value: &Value, pointer: &mut String, out: &mut Texts) {
    let len = pointer.len();
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                leaves(ordinal, member, pointer, out);
                pointer.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                pointer.push_str(&format!("/{i}"));
                leaves(ordinal, item, pointer, out);
                pointer.truncate(len);
            }
        }
        Value::String(text) => {
            out.insert((ordinal, pointer.clone()), text.clone());
        }
        other => {
            out.insert((ordinal, pointer.clone()), other.to_string());
        }
    }
}

/// The texts the calls' final values give, for the calls without an error.
fn final_texts(calls: &[ToolCall]) -> Texts {
    let mut out = Texts::new();
    for call in calls.iter().filter(|c| c.error.is_none()) {
        let value: Value = serde_json::from_slice(&call.arguments).expect("arguments are JSON");
        leaves(call.ordinal, &value, &mut String::new(), &mut out);
    }
    out
}

fn only(texts: &Texts, ordinal: usize) -> Texts {
    texts
        .iter()
        .filter(|((o, _), _)| *o == ordinal)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Where the `n`th event (from 0) of an SSE body starts.
fn event_start(body: &[u8], n: usize) -> usize {
    let mut at = 0;
    for _ in 0..n {
        let rest = body.get(at..).unwrap_or_default();
        let end = rest
            .windows(2)
            .position(|w| w == b"\n\n")
            .expect("an event");
        at += end + 2;
    }
    at
}

fn calls_of(mut d: StreamDecoder) -> Vec<ToolCall> {
    d.finish().expect("finish")
}

/// Everything a call holds, to compare calls (`ToolCall` has no `PartialEq`).
fn shown(calls: &[ToolCall]) -> String {
    format!("{calls:?}")
}

#[test]
fn the_sample_stream_reports_its_pieces_as_they_arrive() {
    let mut d = decoder(true);
    // Up to the streamed call's third piece event: the string and the first numbers so far.
    let cut = event_start(FIXTURE, 3);
    let early = push_all(&mut d, [&FIXTURE[..cut]]);
    let expected: Texts = [
        ("/city", "東京 🌸"),
        ("/days", "3"),
        ("/units/temp unit", "C"),
        ("/ratio", "1e-07"),
    ]
    .into_iter()
    .map(|(p, t)| ((0, p.to_owned()), t.to_owned()))
    .collect();
    assert_eq!(early, expected);
    // Before the part that closes the call, every piece was reported.
    let close = event_start(FIXTURE, 4);
    let mut texts = early;
    for (k, v) in push_all(&mut d, [&FIXTURE[cut..close]]) {
        texts.entry(k).or_default().push_str(&v);
    }
    let rest = push_all(&mut d, [&FIXTURE[close..]]);
    let calls = calls_of(d);
    let whole = final_texts(&calls);
    assert_eq!(texts, only(&whole, 0));
    // The call's text, fed when it closed, added nothing; the whole call after it is scanned.
    assert_eq!(rest, only(&whole, 1));
}

#[test]
fn the_sample_stream_gives_the_same_items_wherever_it_is_cut() {
    let mut d = decoder(true);
    let whole_texts = push_all(&mut d, [FIXTURE]);
    let whole_calls = calls_of(d);
    assert_eq!(whole_texts, final_texts(&whole_calls));
    for cut in 0..=FIXTURE.len() {
        let mut d = decoder(true);
        let texts = push_all(&mut d, [&FIXTURE[..cut], &FIXTURE[cut..]]);
        assert_eq!(texts, whole_texts, "cut at {cut}");
    }
    let mut d = decoder(true);
    assert_eq!(push_all(&mut d, FIXTURE.chunks(1)), whole_texts);
}

#[test]
fn without_progress_tracking_nothing_is_reported_and_the_calls_are_the_same() {
    let mut off = decoder(false);
    assert!(push_all(&mut off, [FIXTURE]).is_empty());
    let mut on = decoder(true);
    push_all(&mut on, [FIXTURE]);
    assert_eq!(shown(&calls_of(off)), shown(&calls_of(on)));
}

// --- Generated streams -------------------------------------------------------------------------

/// Keys that need quoting or escaping in a JSON Path or a JSON Pointer.
const KEYS: [&str; 8] = ["a", "b c", "x/y", "t~0", "東京", "q'uote", "d\"q", "n1"];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        "\\PC{0,12}".prop_map(Value::String),
        (-1_000_000i64..1_000_000).prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ]
}

/// A value of the arguments: partialArgs carry scalars only, so no container is empty.
fn member() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Value::Array),
            object(inner),
        ]
    })
}

fn object(inner: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(&KEYS[..]), inner), 1..5).prop_map(|members| {
        let mut map = Map::new();
        for (key, value) in members {
            map.entry(key).or_insert(value);
        }
        Value::Object(map)
    })
}

/// The JSON Path step of `key`: `.key` for a plain name, else `["key"]`.
fn step(key: &str) -> String {
    if key.chars().all(|c| c.is_ascii_alphanumeric()) {
        format!(".{key}")
    } else {
        format!("[{}]", Value::String(key.to_owned()))
    }
}

/// The pieces of `value` at JSON Path `path`, in document order; strings cut into pieces of
/// `size` characters, each but the last with `willContinue`.
fn pieces_of(path: &str, value: &Value, size: usize, out: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                pieces_of(&format!("{path}{}", step(key)), member, size, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                pieces_of(&format!("{path}[{i}]"), item, size, out);
            }
        }
        Value::String(text) => {
            let chars: Vec<char> = text.chars().collect();
            let cuts: Vec<&[char]> = if chars.is_empty() {
                vec![&[]]
            } else {
                chars.chunks(size).collect()
            };
            for (i, cut) in cuts.iter().enumerate() {
                let mut piece =
                    json!({"jsonPath": path, "stringValue": cut.iter().collect::<String>()});
                if i + 1 < cuts.len() {
                    piece["willContinue"] = json!(true);
                }
                out.push(piece);
            }
        }
        Value::Bool(b) => out.push(json!({"jsonPath": path, "boolValue": b})),
        Value::Null => out.push(json!({"jsonPath": path, "nullValue": "NULL_VALUE"})),
        Value::Number(n) => out.push(json!({"jsonPath": path, "numberValue": n})),
    }
}

fn event(call: &Value, finish: Option<&str>) -> Vec<u8> {
    raw_event(&call.to_string(), finish)
}

/// The event of a chunk whose one part is the `functionCall` JSON text `call`.
fn raw_event(call: &str, finish: Option<&str>) -> Vec<u8> {
    let reason = finish.map_or_else(String::new, |r| format!(r#","finishReason":"{r}""#));
    let data = format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"functionCall":{call}}}]}}{reason}}}]}}"#
    );
    format!("data: {data}\n\n").into_bytes()
}

/// A body streaming `args` as pieces, `per_part` pieces a part, then closing the call; and
/// where its closing event starts.
fn streamed_body(args: &Value, size: usize, per_part: usize) -> (Vec<u8>, usize) {
    let mut pieces = Vec::new();
    pieces_of("$", args, size, &mut pieces);
    let mut body = event(&json!({"name": "f", "willContinue": true}), None);
    for part in pieces.chunks(per_part) {
        body.extend(event(
            &json!({"partialArgs": part, "willContinue": true}),
            None,
        ));
    }
    let close = body.len();
    body.extend(event(&json!({}), Some("STOP")));
    (body, close)
}

fn split<'a>(body: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    at.push(0);
    at.push(body.len());
    at.sort_unstable();
    at.windows(2).map(|w| &body[w[0]..w[1]]).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_streams_report_every_value_once_before_the_call_closes(
        args in object(member()),
        size in 1usize..6,
        per_part in 1usize..4,
        cuts in prop::collection::vec(0usize..100_000, 0..12),
    ) {
        let (body, close) = streamed_body(&args, size, per_part);
        let mut d = decoder(true);
        let mut texts = push_all(&mut d, split(&body[..close], &cuts));
        // The rest of the body closes the call: its text adds nothing but empty items.
        let rest = push_all(&mut d, [&body[close..]]);
        prop_assert!(rest.values().all(String::is_empty), "{:?}", rest);
        for (k, v) in rest {
            texts.entry(k).or_default().push_str(&v);
        }
        let calls = calls_of(d);
        prop_assert_eq!(calls.len(), 1);
        prop_assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
        prop_assert_eq!(&texts, &final_texts(&calls));
        // Without progress tracking, the same call.
        let mut off = decoder(false);
        prop_assert!(push_all(&mut off, [body.as_slice()]).is_empty());
        prop_assert_eq!(shown(&calls_of(off)), shown(&calls));
    }
}

#[test]
fn pieces_that_do_not_merge_report_nothing_more_nor_their_text() {
    let open = r#"{"name":"f","willContinue":true}"#;
    let later = r#"{"partialArgs":[{"jsonPath":"$.later","stringValue":"z"}],"willContinue":true}"#;
    for (bad, reported) in [
        // The first piece breaks the call: the text fed when it closes reports nothing either.
        (
            r#"{"partialArgs":[{"jsonPath":"$.list[3]","stringValue":"gap"}],"willContinue":true}"#,
            vec![],
        ),
        // A piece where another value is: what came before it stays.
        (
            r#"{"partialArgs":[{"jsonPath":"$.a","stringValue":"x"},{"jsonPath":"$.a.b","boolValue":true},{"jsonPath":"$.c","numberValue":1}],"willContinue":true}"#,
            vec![("/a", "x")],
        ),
        // A piece only Python reads (a lone surrogate): the call ends `lost_event`.
        (
            r#"{"partialArgs":[{"jsonPath":"$.a","numberValue":2},{"jsonPath":"$.b","stringValue":"\ud800"}],"willContinue":true}"#,
            vec![("/a", "2")],
        ),
    ] {
        let mut body = Vec::new();
        for call in [open, bad, later, "{}"] {
            body.extend(raw_event(call, None));
        }
        body.extend(raw_event(r#"{"name":"g","args":{"k":"v"}}"#, Some("STOP")));
        let mut d = decoder(true);
        let texts = push_all(&mut d, body.chunks(7));
        let calls = calls_of(d);
        let mut expected: Texts = reported
            .into_iter()
            .map(|(p, t)| ((0, p.to_owned()), t.to_owned()))
            .collect();
        expected.insert((1, "/k".to_owned()), "v".to_owned());
        assert_eq!(texts, expected, "{bad}");
        assert_eq!(calls.len(), 2);
        assert!(calls[0].error.is_some(), "{bad}");
    }
}
