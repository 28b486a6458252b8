//! Fragment-level provider quirks (spec provider-quirks.md 1-26), through the Rust API.

use toolwire::{Arguments, Assembler, AssemblerConfig, Delta, ErrorKind, ToolCall};

fn text<'a>(
    index: Option<i64>,
    id: Option<&'a str>,
    name: Option<&'a str>,
    args: &'a str,
) -> Delta<'a> {
    Delta {
        index,
        id,
        name,
        kind: None,
        arguments: Some(Arguments::Text(args.as_bytes())),
        start: false,
    }
}

fn run(deltas: &[Delta<'_>]) -> Vec<ToolCall> {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    for d in deltas {
        a.feed(d).expect("feed");
    }
    a.finish().expect("finish")
}

/// (id, name, arguments, error kind) of a call.
type Summary = (Option<String>, Option<String>, String, Option<ErrorKind>);

fn summary(calls: &[ToolCall]) -> Vec<Summary> {
    calls
        .iter()
        .map(|c| {
            (
                c.id.clone(),
                c.name.clone(),
                String::from_utf8_lossy(&c.arguments).into_owned(),
                c.error.as_ref().map(|e| e.kind),
            )
        })
        .collect()
}

fn ok(
    id: &str,
    name: &str,
    args: &str,
) -> (Option<String>, Option<String>, String, Option<ErrorKind>) {
    (
        Some(id.to_owned()),
        Some(name.to_owned()),
        args.to_owned(),
        None,
    )
}

#[test]
fn quirk_01_missing_index_continues_the_open_call() {
    let calls = run(&[
        text(None, Some("a"), Some("f"), "{\"x\":"),
        text(None, None, None, "1}"),
        text(None, Some("b"), Some("g"), "{}"),
    ]);
    assert_eq!(
        summary(&calls),
        vec![ok("a", "f", "{\"x\":1}"), ok("b", "g", "{}")]
    );
}

#[test]
fn quirk_02_same_index_for_parallel_calls() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{\"x\":1}"),
        text(Some(0), Some("b"), Some("f"), "{\"x\":2}"),
    ]);
    assert_eq!(
        summary(&calls),
        vec![ok("a", "f", "{\"x\":1}"), ok("b", "f", "{\"x\":2}")]
    );
}

/// A call of a tool without parameters sends no text before the next call comes under the
/// same key: the next call's header once joined it, names run together and one id lost.
#[test]
fn quirk_02_25_call_without_arguments_then_another_under_the_same_index() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("get_time"), ""),
        text(
            Some(0),
            Some("b"),
            Some("get_weather"),
            "{\"city\":\"Paris\"}",
        ),
    ]);
    assert_eq!(
        summary(&calls),
        vec![
            ok("a", "get_time", "{}"),
            ok("b", "get_weather", "{\"city\":\"Paris\"}")
        ]
    );
    // The same tool twice, told apart by the id alone.
    let calls = run(&[
        text(Some(0), Some("a"), Some("get_time"), " "),
        text(Some(0), Some("b"), Some("get_time"), ""),
    ]);
    assert_eq!(
        summary(&calls),
        vec![ok("a", "get_time", "{}"), ok("b", "get_time", "{}")]
    );
    // An event that starts a call carries a whole name, id or not.
    let start = |name| Delta {
        start: true,
        ..text(Some(0), None, Some(name), "")
    };
    let calls = run(&[start("get_time"), start("get_weather")]);
    assert_eq!(
        calls.iter().map(|c| c.name.as_deref()).collect::<Vec<_>>(),
        vec![Some("get_time"), Some("get_weather")]
    );
}

/// Without an id, a second name is more of the first (quirk 9) unless the registry says the
/// name so far is a whole tool that no registered name extends by it.
#[test]
fn quirk_02_09_name_after_a_whole_registered_name_starts_a_call() {
    let mut registry = toolwire::Registry::new();
    let schema = serde_json::json!({"type": "object"});
    for name in ["get_time", "get_weather", "get_", "get_timezone"] {
        registry.add(name, &schema).expect("schema compiles");
    }
    let registry = std::sync::Arc::new(registry);
    let names = |deltas: &[Delta<'_>]| {
        let mut a =
            Assembler::with_tools(AssemblerConfig::default(), registry.clone()).expect("config");
        for d in deltas {
            a.feed(d).expect("feed");
        }
        let calls = a.finish().expect("finish");
        calls.into_iter().map(|c| c.name).collect::<Vec<_>>()
    };
    assert_eq!(
        names(&[
            text(Some(0), Some("a"), Some("get_time"), ""),
            text(Some(0), None, Some("get_weather"), "{}"),
        ]),
        vec![Some("get_time".to_owned()), Some("get_weather".to_owned())]
    );
    // Pieces of a registered name still join, even after a name that is a tool itself.
    assert_eq!(
        names(&[
            text(Some(0), Some("a"), Some("get_"), ""),
            text(Some(0), None, Some("weather"), "{}"),
        ]),
        vec![Some("get_weather".to_owned())]
    );
    assert_eq!(
        names(&[
            text(Some(0), Some("a"), Some("get_time"), ""),
            text(Some(0), None, Some("zone"), "{}"),
        ]),
        vec![Some("get_timezone".to_owned())]
    );
    // Without a registry the pieces join (quirk 9).
    let calls = run(&[
        text(Some(0), Some("a"), Some("get_time"), ""),
        text(Some(0), None, Some("get_weather"), "{}"),
    ]);
    assert_eq!(calls.len(), 1);
}

#[test]
fn quirk_04_05_offset_and_negative_indexes() {
    let calls = run(&[
        text(Some(1), Some("a"), Some("f"), "{}"),
        text(Some(-1), Some("b"), Some("g"), "{}"),
    ]);
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.ordinal, c.index))
            .collect::<Vec<_>>(),
        vec![(0, Some(1)), (1, Some(-1))]
    );
}

#[test]
fn quirk_07_interleaved_fragments() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{\"x\":"),
        text(Some(1), Some("b"), Some("g"), "{\"y\":"),
        text(Some(0), None, None, "1}"),
        text(Some(1), None, None, "2}"),
    ]);
    assert_eq!(
        summary(&calls),
        vec![ok("a", "f", "{\"x\":1}"), ok("b", "g", "{\"y\":2}")]
    );
}

#[test]
fn quirk_01_07_interleaved_calls_without_index_are_routed_by_id() {
    // Without an index the id is the only key: "the last call" would give each call the
    // other's text, and with an output limit, a whole call made of another's fragments.
    let calls = run(&[
        text(None, Some("a"), Some("delete_rows"), "{\"ids\":["),
        text(None, Some("b"), Some("archive_rows"), "{\"ids\":["),
        text(None, Some("a"), None, "1"),
        text(None, None, None, "]}"),
        text(None, Some("b"), None, "2]}"),
    ]);
    assert_eq!(
        summary(&calls),
        vec![
            ok("a", "delete_rows", "{\"ids\":[1]}"),
            ok("b", "archive_rows", "{\"ids\":[2]}")
        ]
    );
}

#[test]
fn quirk_08_repeated_full_name() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("read_file"), "{\"p\":"),
        text(Some(0), Some("a"), Some("read_file"), "1}"),
    ]);
    assert_eq!(summary(&calls), vec![ok("a", "read_file", "{\"p\":1}")]);
}

#[test]
fn quirk_09_fragmented_name() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("get_"), ""),
        text(Some(0), None, Some("weather"), "{}"),
    ]);
    assert_eq!(summary(&calls), vec![ok("a", "get_weather", "{}")]);
}

#[test]
fn quirk_10_name_after_arguments() {
    let calls = run(&[
        text(Some(0), None, None, "{\"a\":1}"),
        text(Some(0), Some("x"), Some("f"), ""),
    ]);
    assert_eq!(summary(&calls), vec![ok("x", "f", "{\"a\":1}")]);
}

/// The pre-check attached when the name arrives inside a string value must see the whole
/// string: it once got only the part after the name, and rejected `SKU-12` as `U-12`.
#[test]
fn quirk_10_name_inside_a_string_keeps_the_whole_value() {
    let mut registry = toolwire::Registry::new();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"sku": {"type": "string", "pattern": "^SKU-[0-9]+$"}}
    });
    registry.add("f", &schema).expect("schema compiles");
    let mut a = Assembler::with_tools(AssemblerConfig::default(), std::sync::Arc::new(registry))
        .expect("config");
    for d in [
        text(Some(0), Some("x"), None, "{\"sku\":\"SK"),
        text(Some(0), None, Some("f"), "U-1"),
        text(Some(0), None, None, "2\"}"),
    ] {
        a.feed(&d).expect("feed");
    }
    let calls = a.finish().expect("finish");
    assert_eq!(summary(&calls), vec![ok("x", "f", "{\"sku\":\"SKU-12\"}")]);
}

#[test]
fn quirk_11_14_15_blank_names_and_ids() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{\"x\""),
        text(Some(0), Some(""), Some(""), ":"),
        text(Some(0), Some("null"), None, "1}"),
    ]);
    assert_eq!(summary(&calls), vec![ok("a", "f", "{\"x\":1}")]);
}

#[test]
fn quirk_13_changing_id_without_name_continues() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{\"x\":"),
        text(Some(0), Some("zz"), None, "1}"),
    ]);
    assert_eq!(summary(&calls), vec![ok("a", "f", "{\"x\":1}")]);
}

#[test]
fn quirk_16_reused_wire_id_gets_a_unique_id() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{}"),
        text(Some(1), Some("a"), Some("g"), "{}"),
    ]);
    assert_eq!(calls[0].id.as_deref(), Some("a"));
    assert_ne!(calls[1].id.as_deref(), Some("a"));
}

#[test]
fn quirk_17_type_assigned_once() {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    for _ in 0..2 {
        a.feed(&Delta {
            index: Some(0),
            kind: Some("function"),
            name: Some("f"),
            ..Delta::default()
        })
        .expect("feed");
    }
    assert_eq!(
        a.finish().expect("finish")[0].kind.as_deref(),
        Some("function")
    );
}

#[test]
fn quirk_19_cumulative_arguments() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{\"ci"),
        text(Some(0), None, None, "{\"city\": \"Pa"),
        text(Some(0), None, None, "{\"city\": \"Paris\"}"),
        text(Some(0), None, None, "{\"city\": \"Paris\"}"),
    ]);
    assert_eq!(summary(&calls), vec![ok("a", "f", "{\"city\": \"Paris\"}")]);
}

#[test]
fn quirk_21_concatenated_objects_are_reported_never_merged() {
    let calls = run(&[text(Some(0), Some("a"), Some("f"), "{\"a\":1}{\"b\":2}")]);
    assert_eq!(
        calls[0].error.as_ref().map(|e| (e.kind, e.offset)),
        Some((ErrorKind::ConcatenatedValues, 7))
    );
    assert_eq!(calls[0].arguments, b"{\"a\":1}{\"b\":2}");
}

#[test]
fn quirk_23_arguments_as_an_object() {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    let d = Delta {
        index: Some(0),
        id: Some("a"),
        name: Some("f"),
        kind: None,
        arguments: Some(Arguments::Value(b"{\"x\":1}")),
        start: false,
    };
    a.feed(&d).expect("feed");
    let calls = a.finish().expect("finish");
    assert_eq!(summary(&calls), vec![ok("a", "f", "{\"x\":1}")]);
}

#[test]
fn quirk_25_26_empty_arguments() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("ping"), ""),
        text(Some(0), None, None, ""),
    ]);
    assert_eq!(summary(&calls), vec![ok("a", "ping", "{}")]);
}

#[test]
fn quirk_35_36_truncation_whatever_the_finish_reason() {
    let calls = run(&[text(Some(0), Some("a"), Some("f"), "{\"city\": \"Par")]);
    let e = calls[0].error.as_ref().expect("truncated");
    assert_eq!((e.kind, e.offset), (ErrorKind::Truncated, 13));
    assert!(e.kind.is_incomplete());
}

#[test]
fn finish_returns_every_call_once_in_order_and_refuses_a_second_finish() {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    for i in 0..50 {
        a.feed(&text(Some(i % 7), None, Some("f"), "{"))
            .expect("feed");
    }
    let calls = a.finish().expect("finish");
    assert_eq!(
        calls.iter().map(|c| c.ordinal).collect::<Vec<_>>(),
        (0..7).collect::<Vec<_>>()
    );
    assert!(a.finish().is_err());
    assert!(a.feed(&text(Some(0), None, None, "x")).is_err());
}

#[test]
fn quirk_08_26_repeated_name_with_an_empty_fragment_after_a_complete_value() {
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{}"),
        text(Some(0), None, Some("f"), ""),
    ]);
    assert_eq!(summary(&calls), vec![ok("a", "f", "{}")]);
}

#[test]
fn quirk_08_12_repeated_header_with_whitespace_after_a_complete_value() {
    // A provider that repeats name and id in every chunk sends the model's trailing newline
    // token that way: it is the call's own whitespace, not a second call with `{}`.
    for (id, tail) in [(Some("a"), "\n"), (None, " "), (Some("a"), "\r\n\t")] {
        let calls = run(&[
            text(Some(0), Some("a"), Some("f"), "{\"x\": "),
            text(Some(0), Some("a"), Some("f"), "1}"),
            text(Some(0), id, Some("f"), tail),
        ]);
        let want = format!("{{\"x\": 1}}{tail}");
        assert_eq!(summary(&calls), vec![ok("a", "f", &want)], "{tail:?}");
    }
    // A new id, or a value after the whitespace, still starts another call.
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{}"),
        text(Some(0), Some("b"), Some("f"), " "),
        text(Some(0), None, None, "{}"),
    ]);
    assert_eq!(calls.len(), 2);
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{}"),
        text(Some(0), Some("a"), Some("f"), " {}"),
    ]);
    assert_eq!(calls.len(), 2);
}

#[test]
fn a_fragment_that_merely_starts_with_the_buffer_is_appended() {
    // `{"k": ` then `{"k": null}}` reads as a cumulative resend at first sight; appending is
    // the only reading that gives one complete value.
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{\"k\": "),
        text(Some(0), None, None, "{\"k\": null}}"),
    ]);
    assert_eq!(
        summary(&calls),
        vec![ok("a", "f", "{\"k\": {\"k\": null}}")]
    );
    assert!(calls[0].warnings.is_empty());
}

#[test]
fn feed_continuation_takes_a_long_fragment_that_does_not_repeat_the_text() {
    // A stream's first fragments are often longer than the text so far; only one that starts
    // with that text can be a resend, so the others are plain appends the short path takes.
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    a.feed(&text(Some(0), Some("a"), Some("f"), "{\"k\""))
        .expect("feed");
    assert_eq!(a.feed_continuation(0, b": [1, 2, 3], \"j\": "), Some(0));
    // Starting with the whole text, it may be a resend: left to `feed`.
    assert_eq!(
        a.feed_continuation(0, b"{\"k\": [1, 2, 3], \"j\": null, \"i\": 0}"),
        None
    );
    assert_eq!(a.feed_continuation(0, b"true}"), Some(0));
    let calls = a.finish().expect("finish");
    assert_eq!(
        summary(&calls),
        vec![ok("a", "f", "{\"k\": [1, 2, 3], \"j\": true}")]
    );
}

#[test]
fn feed_continuation_takes_only_what_plain_appending_settles() {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    a.feed(&text(Some(0), Some("a"), Some("f"), "{\"k\""))
        .expect("feed");
    assert_eq!(a.feed_continuation(0, b": "), Some(0));
    // An index with no open call, or a fragment as long as the text so far (a possible
    // resend), is left to `feed`.
    assert_eq!(a.feed_continuation(1, b"[]"), None);
    assert_eq!(a.feed_continuation(0, b"{\"k\": "), None);
    // Interleaved parallel calls continue by index.
    a.feed(&text(Some(1), Some("b"), Some("g"), "["))
        .expect("feed");
    assert_eq!(a.feed_continuation(0, b""), Some(0));
    assert_eq!(a.feed_continuation(1, b""), Some(1));
    a.feed(&text(Some(1), None, None, "]")).expect("feed");
    a.feed(&text(Some(0), None, None, "{\"k\": {\"j\": "))
        .expect("feed");
    // That fragment started with the whole text and is held until the next one decides; a
    // short continuation must go through `feed`, which settles the held fragment first.
    assert_eq!(a.feed_continuation(0, b"1"), None);
    a.feed(&text(Some(0), None, None, "1")).expect("feed");
    assert_eq!(a.feed_continuation(0, b"}}}"), Some(0));
    let calls = a.finish().expect("finish");
    assert_eq!(
        summary(&calls),
        vec![
            ok("a", "f", "{\"k\": {\"k\": {\"j\": 1}}}"),
            (
                Some("b".to_owned()),
                Some("g".to_owned()),
                "[]".to_owned(),
                Some(ErrorKind::NotObject)
            )
        ]
    );
}

#[test]
fn quirk_19_cumulative_stream_whose_first_resend_is_ambiguous() {
    // `{"city":` + `{"city":"Par` is also a valid prefix; the next resend settles it.
    let calls = run(&[
        text(Some(0), Some("a"), Some("f"), "{\"city\":"),
        text(Some(0), None, None, "{\"city\":\"Par"),
        text(Some(0), None, None, "{\"city\":\"Paris\"}"),
    ]);
    assert_eq!(summary(&calls), vec![ok("a", "f", "{\"city\":\"Paris\"}")]);
}

/// A call whose arguments never arrived before the stream broke off is cut off, also when the
/// pre-check would reject the stand-in `{}` for a required field: the model did not omit it.
#[test]
fn interrupted_call_without_arguments_is_truncated_even_with_required_fields() {
    let mut registry = toolwire::Registry::new();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"order_id": {"type": "integer"}},
        "required": ["order_id"]
    });
    registry.add("f", &schema).expect("schema compiles");
    let mut a = Assembler::with_tools(AssemblerConfig::default(), std::sync::Arc::new(registry))
        .expect("config");
    a.feed(&text(Some(0), Some("x"), Some("f"), ""))
        .expect("feed");
    a.interrupt("connection reset").expect("interrupt");
    let calls = a.finish().expect("finish");
    let error = calls[0].error.as_ref().expect("an error");
    assert_eq!(error.kind, ErrorKind::Truncated);
    assert!(calls[0].arguments.is_empty());
}

/// A break after a Chat finish reason cuts only the calls that started after it: those before
/// had ended, an empty one as a call without parameters.
#[test]
fn interrupt_from_cuts_only_the_calls_from_that_ordinal() {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    a.feed(&text(Some(0), Some("a"), Some("now"), ""))
        .expect("feed");
    a.feed(&text(Some(1), Some("b"), Some("delete_all"), ""))
        .expect("feed");
    a.interrupt_from(1, "connection reset").expect("interrupt");
    let calls = a.finish().expect("finish");
    assert_eq!(
        summary(&calls),
        vec![
            ok("a", "now", "{}"),
            (
                Some("b".to_owned()),
                Some("delete_all".to_owned()),
                String::new(),
                Some(ErrorKind::Truncated)
            ),
        ]
    );
}

#[test]
fn output_limit_truncates_the_last_call_cut_before_its_arguments() {
    // Only the last call can have been cut by the limit: an empty call another call followed
    // is a call without parameters (quirk 25), the empty last one was cut (quirk 36).
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    a.feed(&text(Some(0), Some("a"), Some("ping"), ""))
        .expect("feed");
    a.feed(&text(Some(1), Some("b"), Some("f"), ""))
        .expect("feed");
    a.limit_reached().expect("open");
    let calls = a.finish().expect("finish");
    assert_eq!(
        summary(&calls),
        vec![
            (Some("a".into()), Some("ping".into()), "{}".into(), None),
            (
                Some("b".into()),
                Some("f".into()),
                String::new(),
                Some(ErrorKind::Truncated)
            ),
        ]
    );
}

#[test]
fn output_limit_cuts_every_call_a_stream_of_start_events_never_ended() {
    // Calls opened by start events (Responses items, Anthropic blocks) end one by one: those
    // the limit caught before any of them ended were all cut, not only the last (quirk 25 is
    // for streams that never end their calls, where an empty call followed by another is a
    // call without parameters).
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    for (index, id, name) in [(0, "a", "ping"), (1, "b", "f")] {
        let mut start = text(Some(index), Some(id), Some(name), "");
        start.start = true;
        a.feed(&start).expect("feed");
    }
    a.limit_reached().expect("open");
    let calls = a.finish().expect("finish");
    let kinds: Vec<_> = calls
        .iter()
        .map(|c| c.error.as_ref().map(|e| e.kind))
        .collect();
    assert_eq!(
        kinds,
        [Some(ErrorKind::Truncated), Some(ErrorKind::Truncated)]
    );
}

#[test]
fn a_call_ended_with_a_bare_number_is_whole_when_the_provider_stops() {
    // `1` is whole only once no byte follows: the end event says so, so a stop after it leaves
    // the call's own error (`not_object`), as when the call's end was read before the stop.
    for (arguments, pushed_after_end) in [("1", false), ("-2.5e3", false), ("1", true)] {
        let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
        let ordinal = a
            .feed(&text(Some(0), Some("a"), Some("f"), arguments))
            .expect("feed");
        a.end_call(ordinal).expect("open");
        if pushed_after_end {
            a.limit_reached().expect("open");
        }
        a.stop("refusal").expect("open");
        let calls = a.finish().expect("finish");
        let kind = calls[0].error.as_ref().map(|e| e.kind);
        assert_eq!(kind, Some(ErrorKind::NotObject), "{arguments}");
    }
    // Not ended, the same number may still have been growing: the stop wins.
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    a.feed(&text(Some(0), Some("a"), Some("f"), "1"))
        .expect("feed");
    a.stop("refusal").expect("open");
    let calls = a.finish().expect("finish");
    assert_eq!(
        calls[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Filtered)
    );
}

#[test]
fn quirk_19_an_unchanged_snapshot_before_the_stream_grows_is_a_resend() {
    // A resending provider may send the same snapshot twice before it grows: appended, the
    // repeat broke the call (`{"city": "Par{"city": "Par`); read both ways, the resend wins.
    let calls = run(&[
        text(Some(0), Some("c"), Some("f"), r#"{"city": "Par"#),
        text(Some(0), None, None, r#"{"city": "Par"#),
        text(Some(0), None, None, r#"{"city": "Paris"#),
        text(Some(0), None, None, r#"{"city": "Paris"}"#),
    ]);
    assert_eq!(calls[0].error, None);
    assert_eq!(calls[0].arguments, r#"{"city": "Paris"}"#.as_bytes());
    // Text already broken stays as sent: a repeat of it proves nothing.
    let calls = run(&[
        text(Some(0), Some("c"), Some("f"), "01"),
        text(Some(0), None, None, "01"),
    ]);
    assert_eq!(calls[0].arguments, b"0101");
}

#[test]
fn a_stopped_call_keeps_the_first_reason() {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    a.feed(&text(Some(0), Some("a"), Some("f"), "{\"x\": "))
        .expect("feed");
    a.stop("error").expect("stop");
    a.feed(&text(Some(1), Some("b"), Some("g"), "{\"y\": 2"))
        .expect("feed");
    a.stop("content_filter").expect("stop");
    let calls = a.finish().expect("finish");
    let reasons: Vec<_> = calls.iter().map(|c| c.stop_reason.as_deref()).collect();
    // The call started after the stop is stopped as it starts, for the same reason.
    assert_eq!(reasons, [Some("error"), Some("error")]);
}

/// A call the provider starts after it stopped the response (a content filter, a refusal) is
/// in no answer it gave; it once ran as if the stop had not happened.
#[test]
fn a_call_started_after_a_stop_is_stopped_too() {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    let first = a
        .feed(&text(Some(0), Some("a"), Some("f"), "{\"x\": 1}"))
        .expect("feed");
    a.end_call(first).expect("end");
    a.stop("content_filter").expect("stop");
    a.feed(&text(Some(1), Some("b"), Some("g"), "{\"y\": 2}"))
        .expect("feed");
    let calls = a.finish().expect("finish");
    let kinds: Vec<_> = calls
        .iter()
        .map(|c| (c.error.as_ref().map(|e| e.kind), c.stop_reason.as_deref()))
        .collect();
    // The call the provider had ended whole stays as it finished it.
    assert_eq!(
        kinds,
        [
            (None, None),
            (Some(ErrorKind::Filtered), Some("content_filter"))
        ]
    );
}

#[test]
fn stop_spares_ended_whole_calls_and_stop_all_spares_none() {
    let feed = |a: &mut Assembler| {
        let first = a
            .feed(&text(Some(0), Some("a"), Some("f"), "{\"x\": 1}"))
            .expect("feed");
        a.end_call(first).expect("end");
        a.feed(&text(Some(1), Some("b"), Some("g"), "{\"y\": 2}"))
            .expect("feed");
    };
    let mut stopped = Assembler::new(AssemblerConfig::default()).expect("config");
    feed(&mut stopped);
    stopped.stop("content_filter").expect("stop");
    let calls = stopped.finish().expect("finish");
    let kinds: Vec<_> = calls
        .iter()
        .map(|c| c.error.as_ref().map(|e| e.kind))
        .collect();
    // The second call was not ended: its closed JSON may still have been followed by more.
    assert_eq!(kinds, [None, Some(ErrorKind::Filtered)]);
    let reasons: Vec<_> = calls.iter().map(|c| c.stop_reason.as_deref()).collect();
    assert_eq!(reasons, [None, Some("content_filter")]);

    let mut rejected = Assembler::new(AssemblerConfig::default()).expect("config");
    feed(&mut rejected);
    rejected.stop_all("malformed_tool_use").expect("stop_all");
    let calls = rejected.finish().expect("finish");
    let kinds: Vec<_> = calls
        .iter()
        .map(|c| c.error.as_ref().map(|e| e.kind))
        .collect();
    assert_eq!(kinds, [Some(ErrorKind::Filtered); 2]);
    let message = calls[0].error.as_ref().map(|e| e.message.clone());
    assert!(message.is_some_and(|m| m.contains("malformed_tool_use")));
    // Values still read: the JSON itself was complete.
    assert!(calls.iter().all(|c| c.complete));
}

// --- A stream replayed after a reconnect (faults.md 5) -----------------------------------------

fn header<'a>(index: i64, id: &'a str, name: &'a str) -> Delta<'a> {
    text(Some(index), Some(id), Some(name), "")
}

/// The header of an event that starts a call (Responses `output_item.added`, Anthropic
/// `content_block_start`).
fn start<'a>(index: i64, id: &'a str, name: &'a str) -> Delta<'a> {
    Delta {
        start: true,
        ..header(index, id, name)
    }
}

fn frag(index: i64, args: &str) -> Delta<'_> {
    text(Some(index), None, None, args)
}

#[test]
fn fault_05_replay_after_a_whole_call_drops_the_repeated_text() {
    // The replay is cut other than the first rendition: it still lines up.
    let calls = run(&[
        header(0, "c0", "f"),
        frag(0, r#"{"a": "#),
        frag(0, "[1, 2]}"),
        header(0, "c0", "f"),
        frag(0, r#"{"#),
        frag(0, r#""a": [1"#),
        frag(0, ", 2]}"),
    ]);
    assert_eq!(summary(&calls), vec![ok("c0", "f", r#"{"a": [1, 2]}"#)]);
    assert!(calls[0].warnings.contains(&"replay_dropped"));
}

#[test]
fn fault_05_call_started_again_from_the_middle_goes_on_after_the_text_it_had() {
    // Cut other than the first rendition, or one replayed fragment with all the text and more.
    for replay in [&[r#"{"a": "#, "[1, 2", "]}"][..], &[r#"{"a": [1, 2"#, "]}"]] {
        let mut deltas = vec![
            start(0, "c0", "f"),
            frag(0, r#"{"a": "#),
            frag(0, "[1"),
            start(0, "c0", "f"),
        ];
        deltas.extend(replay.iter().map(|t| frag(0, t)));
        let calls = run(&deltas);
        assert_eq!(summary(&calls), vec![ok("c0", "f", r#"{"a": [1, 2]}"#)]);
        assert!(calls[0].warnings.contains(&"replay_dropped"));
    }
}

#[test]
fn fault_05_a_header_repeated_inside_an_open_call_is_no_replay() {
    // Quirks 8 and 12 with blank fragments: a provider that repeats the header, then a nested
    // value that starts the way the call's text does. Only an event that starts a call sends
    // an open call again.
    let calls = run(&[
        text(Some(0), Some("c0"), Some("f"), r#"{"filter": "#),
        header(0, "c0", "f"),
        frag(0, r#"{""#),
        frag(0, r#"filter": "x"}"#),
        header(0, "c0", "f"),
        frag(0, r#", "limit": 5}"#),
    ]);
    assert_eq!(
        summary(&calls),
        vec![ok("c0", "f", r#"{"filter": {"filter": "x"}, "limit": 5}"#)]
    );
    assert!(calls[0].warnings.is_empty());
}

#[test]
fn fault_05_other_text_after_a_whole_call_is_another_call() {
    // The text matched until it differed: all of it is the second call's, none the first's.
    let calls = run(&[
        header(0, "c0", "f"),
        frag(0, r#"{"a": 1}"#),
        header(0, "c0", "f"),
        frag(0, r#"{"a": "#),
        frag(0, "2}"),
    ]);
    assert_eq!(
        summary(&calls),
        vec![ok("c0", "f", r#"{"a": 1}"#), ok("c0_1", "f", r#"{"a": 2}"#)]
    );
    assert!(calls[1].warnings.contains(&"duplicate_id"));
    assert!(!calls[0].warnings.contains(&"replay_dropped"));
}

#[test]
fn fault_05_open_call_started_again_otherwise_keeps_every_byte() {
    // The call sent again differs from what it had (generated anew): nothing is dropped, and
    // the text, no longer one value, keeps the call from running.
    let calls = run(&[
        start(0, "c0", "f"),
        frag(0, r#"{"a": ["#),
        start(0, "c0", "f"),
        frag(0, "{"),
        frag(0, r#""b": 1}"#),
    ]);
    assert_eq!(calls[0].arguments, br#"{"a": [{"b": 1}"#);
    assert_eq!(
        calls[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Truncated)
    );
}

#[test]
fn fault_05_headers_in_every_chunk_are_no_replay() {
    // Quirks 8 and 12: the id and name with every fragment of an open call.
    let calls = run(&[
        text(Some(0), Some("c0"), Some("f"), r#"{"a": "#),
        text(Some(0), Some("c0"), Some("f"), r#"{"#),
        text(Some(0), Some("c0"), Some("f"), r#""a": 1}}"#),
    ]);
    assert_eq!(summary(&calls), vec![ok("c0", "f", r#"{"a": {"a": 1}}"#)]);
}

#[test]
fn fault_05_white_space_after_a_whole_call_with_headers_in_every_chunk_is_no_call() {
    // Text that starts with white space, then white space after the value, each fragment with
    // the header: the white space looked like the call sent again, and when it went on
    // otherwise, it became a call of its own, a runnable `{}` the model never made.
    for tail in [&["\n", "\n"][..], &["\n", "\n", "\n"], &["\n", " ", "\t\n"]] {
        let mut deltas = vec![
            text(Some(0), Some("c0"), Some("f"), "\n"),
            text(Some(0), Some("c0"), Some("f"), r#"{"path": "/tmp/x"}"#),
        ];
        deltas.extend(tail.iter().map(|t| text(Some(0), Some("c0"), Some("f"), t)));
        let calls = run(&deltas);
        assert_eq!(calls.len(), 1, "{tail:?}");
        assert!(calls[0].error.is_none());
        assert!(String::from_utf8_lossy(&calls[0].arguments).contains("/tmp/x"));
    }
    // Text after the white space is still another call under the id (quirk 16).
    let calls = run(&[
        text(Some(0), Some("c0"), Some("f"), "\n"),
        text(Some(0), Some("c0"), Some("f"), r#"{"path": "/tmp/x"}"#),
        text(Some(0), Some("c0"), Some("f"), "\n"),
        text(Some(0), Some("c0"), Some("f"), r#"{"path": "/tmp/y"}"#),
    ]);
    assert_eq!(calls.len(), 2);
}

#[test]
fn fault_05_replay_of_an_ended_call_and_of_a_call_without_text() {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    for _ in 0..2 {
        let first = a.feed(&header(0, "c0", "now")).expect("feed");
        a.end_call(first).expect("end");
        let second = a.feed(&header(1, "c1", "f")).expect("feed");
        a.feed(&frag(1, r#"{"q": "#)).expect("feed");
        a.feed(&frag(1, r#""x"}"#)).expect("feed");
        a.end_call(second).expect("end");
    }
    let calls = a.finish().expect("finish");
    assert_eq!(
        summary(&calls),
        vec![ok("c0", "now", "{}"), ok("c1", "f", r#"{"q": "x"}"#)]
    );
}

#[test]
fn fault_05_cumulative_replay_is_dropped() {
    // Quirk 19 meets a replay: each fragment is the text so far, sent again from the start.
    let calls = run(&[
        header(0, "c0", "f"),
        frag(0, r#"{"a""#),
        frag(0, r#"{"a": 1}"#),
        header(0, "c0", "f"),
        frag(0, r#"{"a""#),
        frag(0, r#"{"a": 1}"#),
    ]);
    assert_eq!(summary(&calls), vec![ok("c0", "f", r#"{"a": 1}"#)]);
}

#[test]
fn fault_05_replay_of_a_call_sent_whole_as_a_value() {
    // Anthropic's `input` of a tool without parameters, or a Chat provider's object (quirk 23).
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    for value in [r#"{"a": 1}"#, r#"{"a": 1}"#, r#"{"a": 2}"#] {
        let ordinal = a.feed(&start(0, "t", "f")).expect("feed");
        a.feed(&Delta {
            index: Some(0),
            arguments: Some(Arguments::Value(value.as_bytes())),
            ..Delta::default()
        })
        .expect("feed");
        a.end_call(a.ordinal_of(Some(0)).unwrap_or(ordinal))
            .expect("end");
    }
    let calls = a.finish().expect("finish");
    assert_eq!(
        summary(&calls),
        vec![ok("t", "f", r#"{"a": 1}"#), ok("t_1", "f", r#"{"a": 2}"#)]
    );
    assert!(calls[0].warnings.contains(&"replay_dropped"));
}

#[test]
fn fault_05_replay_without_indexes_finds_each_call_by_its_id() {
    // Quirk 1: no index at all; each call is found again by its id.
    let header = |id, name| text(None, Some(id), Some(name), "");
    let frag = |t| text(None, None, None, t);
    let rendition = [
        header("a", "f"),
        frag(r#"{"x": "#),
        frag("1}"),
        header("b", "g"),
        frag(r#"{"y": 2}"#),
    ];
    let calls = run(&[&rendition[..], &rendition[..]].concat());
    assert_eq!(
        summary(&calls),
        vec![ok("a", "f", r#"{"x": 1}"#), ok("b", "g", r#"{"y": 2}"#)]
    );
}

#[test]
fn fault_05_consolidated_repeat_with_its_header_stays_a_repeat() {
    // Quirk 20 from a provider that repeats the header: the whole text again is a repeat.
    let calls = run(&[
        header(0, "c0", "f"),
        frag(0, r#"{"a": "#),
        frag(0, "1}"),
        text(Some(0), Some("c0"), Some("f"), r#"{"a": 1}"#),
    ]);
    assert_eq!(summary(&calls), vec![ok("c0", "f", r#"{"a": 1}"#)]);
    assert!(calls[0].warnings.contains(&"repeat_dropped"));
}

#[test]
fn quirk_20_consolidated_repeat_with_other_spacing_is_a_repeat() {
    // An adapter that re-serializes the parsed arguments for its repeat spaces them its own way.
    let calls = run(&[
        header(0, "c0", "f"),
        frag(0, r#"{"city": "Paris", "#),
        frag(0, r#""unit": "c"}"#),
        frag(0, r#"{"city":"Paris","unit":"c"}"#),
    ]);
    assert_eq!(
        summary(&calls),
        vec![ok("c0", "f", r#"{"city": "Paris", "unit": "c"}"#)]
    );
    assert!(calls[0].warnings.contains(&"repeat_dropped"));
    // Another value after it is still a second value, never dropped as a repeat.
    let calls = run(&[
        header(0, "c0", "f"),
        frag(0, r#"{"city": "Paris"}"#),
        frag(0, r#"{"city":"Rome"}"#),
    ]);
    assert_eq!(
        calls[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::ConcatenatedValues)
    );
}

#[test]
fn fault_05_whole_call_sent_again_in_one_delta() {
    // Quirk 22 (each call whole in one chunk) replayed: after the call ended, or without a key
    // (found by its id), the same header and text is the call sent again.
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    for _ in 0..2 {
        let ordinal = a
            .feed(&Delta {
                arguments: Some(Arguments::Value(br#"{"a":1}"#)),
                ..header(0, "t", "f")
            })
            .expect("feed");
        a.end_call(ordinal).expect("end");
    }
    assert_eq!(a.finish().expect("finish").len(), 1);
    let whole = |id, name, args| text(None, Some(id), Some(name), args);
    let calls = run(&[
        whole("a", "f", r#"{"x":1}"#),
        whole("b", "g", r#"{"y":2}"#),
        whole("a", "f", r#"{"x":1}"#),
        whole("b", "g", r#"{"y":2}"#),
    ]);
    assert_eq!(
        summary(&calls),
        vec![ok("a", "f", r#"{"x":1}"#), ok("b", "g", r#"{"y":2}"#)]
    );
}

// --- Per-stream limits (faults.md 14) -----------------------------------------------------------

fn limited(max_calls: usize, max_stream_bytes: usize) -> Assembler {
    Assembler::new(AssemblerConfig {
        max_calls,
        max_stream_bytes,
        ..AssemblerConfig::default()
    })
    .expect("config")
}

#[test]
fn fault_14_a_response_past_max_calls_is_refused_whole() {
    let mut a = limited(2, 1 << 20);
    for i in 0..5 {
        let ordinal = a
            .feed(&text(Some(i), Some("c"), Some("f"), r#"{"a": 1}"#))
            .expect("feed");
        assert!(ordinal < 2);
    }
    assert_eq!(a.len(), 2);
    // Past the limit nothing more is read: the first call refused is the one counted.
    assert_eq!(a.over_limit(), Some((toolwire::StreamLimit::Calls(2), 1)));
    let calls = a.finish().expect("finish");
    assert!(calls
        .iter()
        .all(|c| c.error.as_ref().map(|e| e.kind) == Some(ErrorKind::TooLarge)));
}

#[test]
fn fault_14_a_response_past_max_stream_bytes_keeps_no_more() {
    let mut a = limited(16, 64);
    a.feed(&text(
        Some(0),
        Some("c0"),
        Some("f"),
        r#"{"a": "0123456789"}"#,
    ))
    .expect("feed");
    for _ in 0..100 {
        a.feed(&text(Some(1), Some("c1"), Some("g"), "0123456789"))
            .expect("feed");
    }
    assert!(matches!(
        a.over_limit(),
        Some((toolwire::StreamLimit::Bytes(64), 0))
    ));
    let calls = a.finish().expect("finish");
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().map(|c| c.arguments.len()).sum::<usize>() <= 64);
    // The call that was whole before the limit fails too: the response is refused whole.
    assert!(calls
        .iter()
        .all(|c| c.error.as_ref().map(|e| e.kind) == Some(ErrorKind::TooLarge)));
}

/// A call started under key 0 (id `c`, name `f`: two bytes counted), and its ordinal.
fn started(a: &mut Assembler) -> usize {
    a.feed(&Delta {
        index: Some(0),
        id: Some("c"),
        name: Some("f"),
        ..Delta::default()
    })
    .expect("feed")
}

#[test]
fn fault_14_set_aside_arguments_count_while_held() {
    // Arguments set aside outside the calls (an Anthropic block's `input`, a Responses
    // `added`'s `arguments`) count toward `max_stream_bytes` as they are held: two inputs of
    // 60 bytes are never held together under a limit of 100.
    let mut a = limited(16, 100);
    let o = started(&mut a);
    assert!(a.set_aside(Some(o), 60));
    assert_eq!(a.over_limit(), None);
    assert!(!a.set_aside(Some(o), 60));
    assert_eq!(a.over_limit(), Some((toolwire::StreamLimit::Bytes(100), 0)));
    // Refused whole: nothing more is set aside, even what would fit.
    a.release(60);
    assert!(!a.set_aside(Some(o), 1));
    let calls = a.finish().expect("finish");
    assert_eq!(
        calls[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::TooLarge)
    );
}

#[test]
fn fault_14_set_aside_arguments_given_back_are_not_counted_twice() {
    // Given back when let go, or before they are fed: a response that only ever holds 90 of its
    // 100 bytes at a time is never refused, however many it set aside in turn.
    let mut a = limited(16, 100);
    let o = started(&mut a);
    for _ in 0..10 {
        assert!(a.set_aside(Some(o), 90));
        a.release(90);
    }
    assert!(a.set_aside(Some(o), 90));
    a.release(90);
    let value = format!(r#"{{"a":"{}"}}"#, "x".repeat(90 - 8));
    a.feed(&Delta {
        index: Some(0),
        arguments: Some(Arguments::Value(value.as_bytes())),
        ..Delta::default()
    })
    .expect("feed");
    assert_eq!(a.over_limit(), None);
    let calls = a.finish().expect("finish");
    assert!(calls[0].error.is_none(), "{:?}", calls[0].error);
    assert_eq!(calls[0].arguments, value.as_bytes());
}

#[test]
fn fault_14_set_aside_arguments_past_max_bytes_fail_their_call_at_once() {
    // More than one call may hold: that call fails now, nothing is kept or counted, and the
    // response goes on (the next call is whole).
    let mut a = Assembler::new(AssemblerConfig {
        scan: toolwire::ScanConfig {
            max_bytes: 10,
            ..toolwire::ScanConfig::default()
        },
        max_stream_bytes: 100,
        ..AssemblerConfig::default()
    })
    .expect("config");
    let o = started(&mut a);
    assert!(!a.set_aside(Some(o), 11));
    assert_eq!(a.over_limit(), None);
    let early = a.drain_errors();
    assert_eq!(
        early.iter().map(|(o, e)| (*o, e.kind)).collect::<Vec<_>>(),
        vec![(o, ErrorKind::TooLarge)]
    );
    a.end_call(o).expect("end");
    a.feed(&text(Some(1), Some("d"), Some("g"), r#"{"a":1}"#))
        .expect("feed");
    assert!(a.set_aside(Some(1), 10));
    let calls = a.finish().expect("finish");
    assert_eq!(
        calls[0].error.as_ref().map(|e| e.kind),
        Some(ErrorKind::TooLarge)
    );
    assert_eq!(calls[0].arguments, b"{}");
    assert!(calls[1].error.is_none(), "{:?}", calls[1].error);
}

#[test]
fn fault_14_limits_must_allow_something() {
    assert!(Assembler::new(AssemblerConfig {
        max_calls: 0,
        ..AssemblerConfig::default()
    })
    .is_err());
    assert!(Assembler::new(AssemblerConfig {
        max_stream_bytes: 0,
        ..AssemblerConfig::default()
    })
    .is_err());
}

#[test]
fn fault_05_keyless_header_alone_after_the_call_ended() {
    let mut a = Assembler::new(AssemblerConfig::default()).expect("config");
    for header in [
        text(None, Some("c1"), Some("g"), r#"{"a": 1}"#),
        Delta {
            start: true,
            ..text(None, Some("c1"), Some("g"), "")
        },
    ] {
        a.feed(&header).expect("feed");
        if header.start {
            a.feed(&text(None, None, None, r#"{"a": 1}"#))
                .expect("feed");
        }
        a.end_call(a.len() - 1).expect("end");
    }
    let calls = a.finish().expect("finish");
    assert_eq!(summary(&calls), vec![ok("c1", "g", r#"{"a": 1}"#)]);
}

#[test]
fn fault_14_what_is_kept_counts_not_what_is_resent() {
    // A provider that resends the text so far (quirk 19) sends the square of the arguments'
    // size; only what the call keeps counts toward the limit.
    let full = format!(r#"{{"a":"{}"}}"#, "x".repeat(20_000));
    let mut a = limited(16, 30_000);
    for end in (100..full.len()).step_by(100).chain([full.len()]) {
        a.feed(&text(Some(0), Some("c"), Some("f"), &full[..end]))
            .expect("feed");
    }
    assert_eq!(a.over_limit(), None);
    let calls = a.finish().expect("finish");
    assert_eq!(summary(&calls), vec![ok("c", "f", &full)]);
}

#[test]
fn fault_14_names_count_and_nothing_grows_past_the_limit() {
    // Names streamed in pieces are joined (quirk 9): a name can grow without end.
    let mut a = limited(16, 1_000);
    for i in 0..200 {
        let piece = format!("piece{i:05}");
        a.feed(&Delta {
            name: Some(&piece),
            index: Some(0),
            ..Delta::default()
        })
        .expect("feed");
    }
    assert!(a.over_limit().is_some());
    assert!(a.has_certain_error());
    let calls = a.finish().expect("finish");
    assert!(calls[0].name.as_ref().map_or(0, String::len) <= 1_010);
}

#[test]
fn fault_05_a_replay_cut_short_says_it_dropped_text() {
    // The replay stopped inside the call's text (the connection, or the output limit): what
    // it sent was dropped as the call's own, which the call said only once the replay caught
    // up. A header repeated with no text after it drops nothing and says nothing.
    for (first, replay) in [(r#"{"q":"a"}"#, r#"{"q":""#), ("{}", "{")] {
        let calls = run(&[
            header(0, "c0", "f"),
            frag(0, first),
            header(0, "c0", "f"),
            frag(0, replay),
        ]);
        assert_eq!(summary(&calls), vec![ok("c0", "f", first)]);
        assert!(
            calls[0].warnings.contains(&"replay_dropped"),
            "{replay}: {:?}",
            calls[0]
        );
    }
    let calls = run(&[header(0, "c0", "f"), frag(0, "{}"), header(0, "c0", "f")]);
    assert_eq!(summary(&calls), vec![ok("c0", "f", "{}")]);
    assert!(calls[0].warnings.is_empty(), "{:?}", calls[0]);
}

#[test]
fn fault_14_bytes_past_max_bytes_count_toward_no_limit_on_the_short_path() {
    // A call full to `max_bytes`, then fragments the scanner does not keep: through
    // `feed_continuation` (the Python binding's path for a bare fragment) they were counted
    // in full, and a response that kept 11 bytes was refused under a limit of 11.
    let mut a = Assembler::new(AssemblerConfig {
        max_stream_bytes: 11,
        scan: toolwire::ScanConfig {
            max_bytes: 10,
            ..toolwire::ScanConfig::default()
        },
        ..AssemblerConfig::default()
    })
    .expect("config");
    a.feed(&text(Some(0), None, None, r#"{"a":"bcde"#))
        .expect("feed");
    for _ in 0..3 {
        if a.feed_continuation(0, b"k").is_none() {
            a.feed(&text(Some(0), None, None, "k")).expect("feed");
        }
    }
    a.feed(&text(Some(1), None, None, "l")).expect("feed");
    assert_eq!(a.over_limit(), None);
    let calls = a.finish().expect("finish");
    assert_eq!(
        calls.iter().map(|c| c.arguments.len()).collect::<Vec<_>>(),
        [10, 1]
    );
}
