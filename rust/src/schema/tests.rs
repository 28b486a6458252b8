//! Unit tests per keyword: verdict, error offset, path and detail, checked identical for every
//! split point and for byte-by-byte feeding.

use std::sync::Arc;

use serde_json::{json, Value};

use super::testgen::drive;
use super::{Checker, ToolSchema};
use crate::error::Error;

fn feed(schema: &Arc<ToolSchema>, text: &str, splits: &[usize]) -> Vec<Error> {
    let mut c = Checker::new(Arc::clone(schema));
    drive(text, splits, &mut c);
    c.finish(text.len()).to_vec()
}

/// Errors for `text`, asserting they are the same for every split.
fn run(schema: &Value, text: &str) -> Vec<Error> {
    let (compiled, _) = ToolSchema::compile(schema).expect("schema compiles");
    let compiled = Arc::new(compiled);
    let whole = feed(&compiled, text, &[]);
    for k in 0..=text.len() {
        assert_eq!(feed(&compiled, text, &[k]), whole, "split at {k} of {text}");
    }
    let all: Vec<usize> = (0..=text.len()).collect();
    assert_eq!(feed(&compiled, text, &all), whole, "bytewise {text}");
    whole
}

/// The single error's (offset, path, keyword).
fn one(schema: &Value, text: &str) -> (usize, String, String) {
    let errs = run(schema, text);
    assert_eq!(errs.len(), 1, "{text}: {errs:#?}");
    let e = &errs[0];
    (
        e.offset,
        e.path.clone(),
        e.detail.as_ref().unwrap().keyword.clone(),
    )
}

fn ok(schema: &Value, text: &str) {
    let errs = run(schema, text);
    assert!(errs.is_empty(), "{text}: {errs:#?}");
}

fn at(offset: usize, path: &str, keyword: &str) -> (usize, String, String) {
    (offset, path.to_owned(), keyword.to_owned())
}

fn tool() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 5},
            "priority": {"enum": ["low", "high"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "count": {"type": "integer", "minimum": 1, "maximum": 100}
        },
        "required": ["title", "priority"],
        "additionalProperties": false
    })
}

#[test]
fn valid_tool_call() {
    ok(
        &tool(),
        r#"{"title":"hi","priority":"low","tags":["a","b"],"count":100}"#,
    );
    ok(
        &tool(),
        r#"{ "priority" : "high" , "title" : "\u00e9\u00e9\u00e9\u00e9\u00e9" }"#,
    );
}

#[test]
fn type_at_first_byte() {
    let s = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert_eq!(one(&s, r#"{"a":12}"#), at(5, "/a", "type"));
    assert_eq!(one(&s, "[1]"), at(0, "", "type"));
    let errs = run(&s, r#"{"a":{"b":1}}"#);
    let d = errs[0].detail.as_ref().unwrap();
    assert_eq!((d.expected.as_str(), d.got.as_str()), ("string", "object"));
    assert_eq!(errs[0].message, "expected string, got object");
}

#[test]
fn integer_versus_number() {
    let s = json!({"type": "integer"});
    for t in ["1", "1.0", "1e2", "-0", "12.50e1"] {
        ok(&s, t);
    }
    let errs = run(
        &json!({"properties": {"n": {"type": "integer"}}}),
        r#"{"n":1.5}"#,
    );
    assert_eq!(errs[0].offset, 8, "at number end");
    assert_eq!(errs[0].detail.as_ref().unwrap().got, "number");
    assert_eq!(errs[0].detail.as_ref().unwrap().expected, "integer");
    ok(&json!({"type": ["integer", "string"]}), "\"x\"");
    ok(&json!({"type": "number"}), "1");
}

#[test]
fn unknown_key_at_first_impossible_byte() {
    // "tit" is a prefix of "title"; "tix" is not: rejected at the 'x'.
    let errs = run(&tool(), r#"{"tix":1,"title":"a","priority":"low"}"#);
    assert_eq!(errs.len(), 1);
    let e = &errs[0];
    assert_eq!(e.offset, 4);
    assert_eq!(e.path, "/tix", "completed with the whole key");
    let d = e.detail.as_ref().unwrap();
    assert_eq!(d.keyword, "additionalProperties");
    assert_eq!(d.got, "tix");
    assert_eq!(
        d.expected,
        r#"no properties other than "title", "priority", "tags", "count""#
    );
    assert_eq!(e.message, r#"unexpected property "tix""#);
    // A key that is a strict prefix of an allowed key fails at its closing quote.
    assert_eq!(
        one(&tool(), r#"{"tit":1,"title":"a","priority":"low"}"#),
        at(5, "/tit", "additionalProperties")
    );
    // Escaped bytes are judged decoded: "\u0074itle" is "title".
    ok(&tool(), r#"{"\u0074itle":"a","priority":"low"}"#);
    // Unknown keys are allowed without additionalProperties: false.
    ok(&json!({"properties": {"a": {}}}), r#"{"b":1}"#);
}

#[test]
fn unknown_key_with_escaped_pointer_path() {
    let s = json!({"additionalProperties": false});
    let errs = run(&s, r#"{"a/b~":1}"#);
    assert_eq!(errs[0].offset, 2);
    assert_eq!(errs[0].path, "/a~1b~0");
    ok(&s, "{}");
}

/// Each closed `allOf` member refuses an unknown key, at the byte no name of its continues:
/// every such error names the whole key once it closes, not only the first.
#[test]
fn every_error_about_an_open_key_names_the_whole_key() {
    let closed = json!({"properties": {"a": {}}, "additionalProperties": false});
    let s = json!({"allOf": [closed.clone(), closed]});
    let errs = run(&s, r#"{"xyz":1}"#);
    let paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["/xyz", "/xyz"], "{errs:#?}");
    assert!(errs
        .iter()
        .all(|e| e.message == r#"unexpected property "xyz""#));
}

#[test]
fn additional_properties_schema() {
    let s = json!({"properties": {"a": {}}, "additionalProperties": {"type": "boolean"}});
    ok(&s, r#"{"a":1,"b":true}"#);
    assert_eq!(one(&s, r#"{"a":1,"b":2}"#), at(11, "/b", "type"));
}

#[test]
fn pattern_properties_narrow_additional_properties() {
    let s = json!({"properties": {"a": {}}, "patternProperties": {"^x": {}}, "additionalProperties": false});
    ok(&s, r#"{"xyz":1,"a":2}"#);
    // Decided when the key closes (a prefix such as `z` could still grow into... nothing here,
    // but a pattern need not be anchored).
    assert_eq!(
        one(&s, r#"{"a":1,"zzz":1}"#),
        at(11, "/zzz", "additionalProperties")
    );
    let errs = run(&s, r#"{"zzz":1}"#);
    assert_eq!(errs[0].message, r#"unexpected property "zzz""#);
    assert_eq!(
        errs[0].detail.as_ref().unwrap().expected,
        r#"no properties other than "a" or names matching "^x""#
    );
    // `additionalProperties` as a schema holds for the keys no pattern takes.
    let s = json!({"patternProperties": {"^x": {"type": "string"}}, "additionalProperties": {"type": "integer"}});
    ok(&s, r#"{"xa":"s","b":1}"#);
    assert_eq!(one(&s, r#"{"xa":1}"#), at(6, "/xa", "type"));
    assert_eq!(one(&s, r#"{"b":"s"}"#), at(5, "/b", "type"));
}

#[test]
fn every_pattern_that_takes_a_key_applies_and_so_does_its_property() {
    let s = json!({
        "properties": {"n_a": {"maximum": 10}},
        "patternProperties": {"^n_": {"minimum": 5}, "a$": {"type": "integer"}}
    });
    ok(&s, r#"{"n_a":7,"n_b":5.5,"ba":3}"#);
    assert_eq!(one(&s, r#"{"n_a":3}"#), at(8, "/n_a", "minimum"));
    assert_eq!(one(&s, r#"{"n_a":11}"#), at(9, "/n_a", "maximum"));
    assert_eq!(one(&s, r#"{"n_a":7.5}"#), at(10, "/n_a", "type"));
    assert_eq!(one(&s, r#"{"n_ba":4}"#), at(9, "/n_ba", "minimum"));
    assert_eq!(one(&s, r#"{"n_ba":5.5}"#), at(11, "/n_ba", "type"));
    assert_eq!(one(&s, r#"{"xa":"s"}"#), at(6, "/xa", "type"));
    // A pattern whose schema is `false` forbids the keys it takes.
    let s = json!({"patternProperties": {"^_": false}});
    ok(&s, r#"{"a":1}"#);
    assert_eq!(one(&s, r#"{"_a":1}"#), at(4, "/_a", "patternProperties"));
}

/// A value both its property's bounds and a pattern's refuse hears every bound in one error, as
/// validation tells it; one only the pattern refuses hears the pattern's.
#[test]
fn a_value_a_property_and_a_pattern_both_refuse_hears_both_bounds() {
    let s = json!({
        "properties": {"n_a": {"minimum": 5}},
        "patternProperties": {"^n_": {"minimum": 10, "maximum": 20}}
    });
    let errs = run(&s, r#"{"n_a":3}"#);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let d = errs[0].detail.as_ref().unwrap();
    assert_eq!(
        (errs[0].path.as_str(), d.keyword.as_str()),
        ("/n_a", "minimum")
    );
    assert_eq!(d.expected, "a number >= 5 and >= 10 and <= 20");
    let errs = run(&s, r#"{"n_a":7}"#);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(
        errs[0].detail.as_ref().unwrap().expected,
        "a number >= 10 and <= 20"
    );
    // Bounds of other kinds stay apart.
    let s = json!({"allOf": [{"type": "integer"}, {"minimum": 5}]});
    assert_eq!(run(&s, "2.5").len(), 2);
}

/// A key is judged by a pattern only where every dialect reads it alike: `\d` takes `١` in
/// Python's and Pydantic's engines, not in ECMA-262's, so such a key is neither the pattern's
/// nor an additional one for the pre-check.
#[test]
fn a_key_the_dialects_read_apart_is_left_to_validation() {
    let s = json!({"patternProperties": {r"^\d+$": {"type": "integer"}}, "additionalProperties": false});
    ok(&s, r#"{"12":1,"١٢":"x","٣":1}"#);
    assert_eq!(one(&s, r#"{"12":"x"}"#), at(6, "/12", "type"));
    assert_eq!(one(&s, r#"{"ab":1}"#), at(4, "/ab", "additionalProperties"));
    // A pattern the pre-check cannot run takes no key, and leaves every key possible.
    let s = json!({"patternProperties": {"(?=a)b": {"type": "integer"}}, "additionalProperties": false});
    let (_, unsupported) = ToolSchema::compile(&s).expect("compiles");
    assert_eq!(unsupported.len(), 1, "{unsupported:?}");
    ok(&s, r#"{"ab":"x","zz":1}"#);
    // A property whose name the dialects read apart meets its own schema only.
    let s = json!({"properties": {"٣": {"type": "string"}}, "patternProperties": {r"^\d$": {"type": "integer"}}});
    ok(&s, r#"{"٣":"x"}"#);
}

/// `oneOf` counts a branch as a sure match only when every member was judged: a key a pattern
/// may or may not take leaves its branch unsure.
#[test]
fn one_of_does_not_count_a_branch_with_an_unsure_key() {
    let s = json!({"oneOf": [
        {"type": "object", "patternProperties": {r"^\d$": {"type": "integer"}}},
        {"type": "object", "additionalProperties": {"type": ["integer", "string"]}}
    ]});
    ok(&s, r#"{"3":"s"}"#);
    assert_eq!(one(&s, r#"{"3":1}"#), at(6, "", "oneOf"));
    // Validation takes `٣` for a digit, and `1` then meets both branches: the pre-check,
    // which cannot tell, counts only the second.
    ok(&s, r#"{"٣":1}"#);
}

#[test]
fn required_at_close() {
    let errs = run(&tool(), r#"{"title":"a"}"#);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].offset, 12);
    assert_eq!(errs[0].path, "/priority");
    assert_eq!(errs[0].message, r#"missing required property "priority""#);
    let errs = run(&tool(), "{}");
    assert_eq!(errs.len(), 2, "one error per missing property");
}

#[test]
fn string_enum_prefix() {
    // "lo" ok, "lx" impossible: rejected at the x.
    let errs = run(&tool(), r#"{"title":"a","priority":"lxw"}"#);
    assert_eq!(errs.len(), 1);
    let e = &errs[0];
    assert_eq!((e.offset, e.path.as_str()), (26, "/priority"));
    let d = e.detail.as_ref().unwrap();
    assert_eq!(d.expected, r#"one of "low", "high""#);
    assert_eq!(d.got, "lxw", "completed at string end");
    // A prefix of an allowed value fails at the closing quote.
    assert_eq!(
        one(&tool(), r#"{"title":"a","priority":"lo"}"#),
        at(27, "/priority", "enum")
    );
    // Decoded comparison: \u006c is 'l'.
    ok(&tool(), r#"{"title":"a","priority":"\u006cow"}"#);
    // Wrong kind for every enum member: at the first byte.
    assert_eq!(
        one(&tool(), r#"{"title":"a","priority":3}"#),
        at(24, "/priority", "enum")
    );
}

#[test]
fn max_length_counts_code_points() {
    let s = json!({"type": "string", "maxLength": 2});
    ok(&s, r#""éé""#);
    ok(&s, r#""😀😀""#);
    ok(&s, r#""\ud83d\ude00a""#);
    // 'é' is 2 bytes: the third code point starts at byte 5.
    let errs = run(&s, r#""ééx""#);
    assert_eq!(errs[0].offset, 5);
    assert_eq!(errs[0].detail.as_ref().unwrap().got, "ééx");
    // An escape counts at its last byte.
    assert_eq!(one(&s, r#""ab\n""#).0, 4);
}

#[test]
fn min_length_at_close() {
    let s = json!({"minLength": 3});
    ok(&s, r#""abc""#);
    ok(&s, "12");
    assert_eq!(one(&s, r#""ab""#), at(3, "", "minLength"));
}

#[test]
fn max_items_when_extra_element_starts() {
    let errs = run(
        &tool(),
        r#"{"title":"a","priority":"low","tags":["a","b","c","d"]}"#,
    );
    assert_eq!(errs.len(), 1, "only the first extra element");
    assert_eq!((errs[0].offset, errs[0].path.as_str()), (46, "/tags"));
    assert_eq!(errs[0].detail.as_ref().unwrap().expected, "at most 2 items");
}

#[test]
fn min_items_and_prefix_items() {
    let s = json!({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false, "minItems": 2});
    ok(&s, r#"["a",1]"#);
    assert_eq!(one(&s, r#"["a"]"#), at(4, "", "minItems"));
    assert_eq!(one(&s, r#"["a",1,2]"#), at(7, "/2", "false"));
    assert_eq!(one(&s, "[1,1]"), at(1, "/0", "type"));
}

#[test]
fn numeric_bounds_only_at_number_end() {
    let s = json!({"minimum": 10, "exclusiveMaximum": 100});
    ok(&s, "10");
    ok(&s, "99.999");
    ok(&s, "1e1");
    ok(&s, "[1]");
    let errs = run(&json!({"properties": {"n": {"minimum": 10}}}), r#"{"n":1}"#);
    assert_eq!(errs[0].offset, 6, "the byte after the number");
    assert_eq!(errs[0].detail.as_ref().unwrap().expected, "a number >= 10");
    assert_eq!(errs[0].detail.as_ref().unwrap().got, "1");
    assert_eq!(one(&s, "100").2, "exclusiveMaximum");
    assert_eq!(one(&s, "9.99").2, "minimum");
    let errs = run(&tool(), r#"{"title":"a","priority":"low","count":0}"#);
    assert_eq!(
        errs[0].detail.as_ref().unwrap().expected,
        "a number >= 1 and <= 100"
    );
}

#[test]
fn multiple_of_is_exact() {
    let s = json!({"multipleOf": 0.01});
    ok(&s, "19.99");
    ok(&s, "1e2");
    ok(&s, "0");
    assert_eq!(one(&s, "19.999"), at(6, "", "multipleOf"));
    ok(&json!({"multipleOf": 0.1}), "0.3");
    ok(&json!({"multipleOf": 10}), "1e2");
}

#[test]
fn numeric_enum_and_const() {
    let s = json!({"enum": [1, 2.5, "x"]});
    ok(&s, "1.0");
    ok(&s, "25e-1");
    ok(&s, "\"x\"");
    assert_eq!(one(&s, "3"), at(1, "", "enum"));
    let c = json!({"const": false});
    ok(&c, "false");
    assert_eq!(one(&c, "true"), at(3, "", "const"));
    assert_eq!(one(&c, "0"), at(0, "", "const"));
    assert_eq!(one(&json!({"const": null}), "false"), at(0, "", "const"));
}

#[test]
fn container_enum_decided_at_close() {
    let s = json!({"enum": [{"a": [1, {"b": null}]}, [true]]});
    ok(&s, r#"{"a":[1.0,{"b":null}]}"#);
    ok(&s, "[true]");
    assert_eq!(one(&s, r#"{"a":[1,{"b":false}]}"#), at(20, "", "enum"));
    assert_eq!(one(&s, "[true,true]"), at(10, "", "enum"));
    assert_eq!(one(&s, "\"x\""), at(0, "", "enum"));
    let c = json!({"properties": {"p": {"const": {"x": 1, "y": 2}}}});
    ok(&c, r#"{"p":{"y":2,"x":1}}"#);
    assert_eq!(one(&c, r#"{"p":{"x":1}}"#), at(11, "/p", "const"));
}

/// `jsonschema` reads `0.1000000000000000001` as the float `0.1`, inside a container constant
/// too: the pre-check once refused such a value that validation accepts.
#[test]
fn container_enum_leaves_digits_beyond_a_double_to_validation() {
    let c = json!({"properties": {"p": {"const": [0.1, {"x": 2.5}]}}});
    ok(
        &c,
        r#"{"p":[0.1000000000000000001,{"x":2.5000000000000000001}]}"#,
    );
    let e = json!({"properties": {"p": {"enum": [{"x": 0.1}, [1]]}}});
    ok(&e, r#"{"p":{"x":0.10000000000000001}}"#);
    // A difference a double holds is still refused.
    assert_eq!(one(&c, r#"{"p":[0.11,{"x":2.5}]}"#), at(20, "/p", "const"));
    assert_eq!(one(&e, r#"{"p":{"x":0.2}}"#), at(13, "/p", "enum"));
}

#[test]
fn pattern_at_string_end() {
    let s = json!({"properties": {"id": {"type": "string", "pattern": "^u_[0-9a-f]{8}$"}}});
    ok(&s, r#"{"id":"u_0123abcd"}"#);
    let errs = run(&s, r#"{"id":"u_0123abcz"}"#);
    let e = &errs[0];
    assert_eq!((e.offset, e.path.as_str()), (17, "/id"));
    assert_eq!(
        e.detail.as_ref().unwrap().expected,
        "a string matching ^u_[0-9a-f]{8}$"
    );
    ok(&json!({"pattern": "b"}), r#""abc""#);
}

#[test]
fn formats() {
    let s = json!({"format": "date-time"});
    ok(&s, r#""2024-05-01T10:00:00Z""#);
    let errs = run(&s, r#""2024-05-01 10:00""#);
    assert_eq!(errs[0].offset, 17);
    assert_eq!(
        errs[0].detail.as_ref().unwrap().expected,
        "a date-time (RFC 3339)"
    );
    ok(&s, "12");
    let (_, unsupported) = ToolSchema::compile(&json!({"format": "uri"})).unwrap();
    assert_eq!(unsupported[0].keyword, "format");
    ok(&json!({"format": "uri"}), r#""not a uri""#);
}

#[test]
fn any_of_keeps_possible_branches() {
    let s =
        json!({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "number", "minimum": 5}]});
    ok(&s, r#""ab""#);
    ok(&s, "7");
    // No branch takes null: a type error, naming the branches' types.
    assert_eq!(one(&s, "null"), at(0, "", "type"));
    // Only the string branch got past its type: its own rule is the error.
    assert_eq!(one(&s, r#""abc""#), at(3, "", "maxLength"));
    assert_eq!(one(&s, "1"), at(1, "", "minimum"));
    let e = &run(&s, "true")[0];
    assert_eq!(e.detail.as_ref().unwrap().expected, "string or number");
}

#[test]
fn any_of_over_objects_eliminates_inside() {
    let s = json!({"properties": {"x": {"anyOf": [
        {"type": "object", "properties": {"k": {"const": "a"}, "v": {"type": "string"}}, "additionalProperties": false},
        {"type": "object", "properties": {"k": {"const": "b"}, "v": {"type": "integer"}}, "additionalProperties": false},
        {"type": "null"}
    ]}}});
    ok(&s, r#"{"x":{"k":"a","v":"s"}}"#);
    ok(&s, r#"{"x":{"k":"b","v":1}}"#);
    ok(&s, r#"{"x":null}"#);
    // "c" kills both object branches inside the string; null died at '{'.
    assert_eq!(one(&s, r#"{"x":{"k":"c"}}"#), at(11, "/x", "anyOf"));
    assert_eq!(one(&s, r#"{"x":{"k":"a","v":1}}"#), at(18, "/x", "anyOf"));
    assert_eq!(one(&s, r#"{"x":{"z":1}}"#), at(7, "/x", "anyOf"));
}

/// The one branch of an optional field (`anyOf` with null) that fails on a key or string
/// still being read names the whole key or string once it closes, as an unconditional
/// property does: it once named `/x/z` for the key `zz` and reported `got: "u"` for `"urgent"`.
#[test]
fn last_branch_failure_in_an_open_key_or_string_is_completed() {
    let s = json!({"properties": {
        "x": {"anyOf": [
            {"type": "object", "properties": {"a": {}}, "additionalProperties": false},
            {"type": "null"}
        ]},
        "p": {"anyOf": [{"enum": ["low", "high"]}, {"type": "null"}]}
    }});
    let errs = run(&s, r#"{"x": {"a": 1, "zz": 2}}"#);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!((errs[0].offset, errs[0].path.as_str()), (16, "/x/zz"));
    assert_eq!(errs[0].message, "unexpected property \"zz\"");
    assert_eq!(errs[0].detail.as_ref().unwrap().got, "zz");
    let errs = run(&s, r#"{"p": "urgent"}"#);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!((errs[0].offset, errs[0].path.as_str()), (7, "/p"));
    assert_eq!(errs[0].detail.as_ref().unwrap().got, "urgent");
}

/// `multipleOf` accepts what Pydantic's float fields accept: a multiple rounded by binary
/// floating point (`57 * 0.01` prints as `0.5700000000000001`), within `|x| / 1e9`.
#[test]
fn multiple_of_allows_float_rounding() {
    let s = json!({"type": "number", "multipleOf": 0.01});
    for text in [
        "0.57",
        "0.5700000000000001",
        "2.0100000000000002",
        "-1.3800000000000001",
        "1e2",
    ] {
        ok(&s, text);
    }
    assert_eq!(one(&s, "0.575"), at(5, "", "multipleOf"));
    assert_eq!(one(&s, "0.5701"), at(6, "", "multipleOf"));
    let s = json!({"type": "integer", "multipleOf": 5});
    ok(&s, "10");
    assert_eq!(one(&s, "11"), at(2, "", "multipleOf"));
}

#[test]
fn one_of_exactly_one() {
    let s = json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]});
    ok(&s, "1");
    ok(&s, "2.5");
    assert_eq!(one(&s, "3"), at(1, "", "oneOf"));
    assert_eq!(one(&s, "1.5"), at(3, "", "oneOf"));
    // An inexact branch (unsupported keyword) never counts as a second match.
    let loose = json!({"oneOf": [{"type": "integer"}, {"minimum": 2, "not": {"const": 3}}]});
    ok(&loose, "3");
}

#[test]
fn any_of_dies_at_its_last_branch_byte_for_every_split() {
    // The enum branch dies at "c" (offset 1), the maxLength branch at "e" (offset 4): the
    // group fails at 4, also when the whole string arrives in one piece and the branch that
    // dies last is stepped first.
    let s = json!({"anyOf": [{"type": "string", "maxLength": 3}, {"enum": ["", "RED"]}]});
    assert_eq!(one(&s, "\"cafe\""), at(4, "", "anyOf"));
    let s = json!({"anyOf": [{"maxLength": 3}, {"maxLength": 2}]});
    assert_eq!(one(&s, "\"cafe\""), at(4, "", "anyOf"));
    // Keys: {"abc"} dies at "x" (offset 4), {"a"} at "b" (offset 3).
    let s = json!({"anyOf": [
        {"properties": {"abc": {}}, "additionalProperties": false},
        {"properties": {"a": {}}, "additionalProperties": false}
    ]});
    assert_eq!(one(&s, "{\"abx\": 1}"), at(4, "", "anyOf"));
}

#[test]
fn one_of_branch_loosened_by_a_dropped_edge_stays_inexact() {
    // `{"not": ...}` is ignored, so it compiles to a trivial but inexact node; dropping it
    // from the `anyOf` (or the `$ref` to it) must not leave the owner counting as an exact
    // match: 7 matches only the number branch, and the schema accepts it.
    let any_of = json!({"oneOf": [
        {"anyOf": [{"not": {"type": "number"}}, {"type": "null"}]},
        {"type": "number"}
    ]});
    ok(&any_of, "7");
    ok(&any_of, "null");
    let reff = json!({
        "oneOf": [{"$ref": "#/$defs/s"}, {"type": "number"}],
        "$defs": {"s": {"not": {"type": "number"}}}
    });
    ok(&reff, "7");
    ok(&reff, "\"x\"");
    // Exact branches still count twice.
    let exact = json!({"oneOf": [{"anyOf": [{}, {"type": "null"}]}, {"type": "number"}]});
    assert_eq!(one(&exact, "7"), at(1, "", "oneOf"));
}

#[test]
fn one_of_branch_that_passes_only_by_the_float_reading_is_no_certain_match() {
    // `multipleOf: 0.1` lets `0.30000000000000004` pass within Pydantic's float tolerance, and
    // `type: integer` lets `999.9999999999999999` pass as the float 1000.0: the final
    // validation decides both, so such a branch beside `{}` is not a second match.
    let tolerance = json!({"oneOf": [{}, {"multipleOf": 0.1}]});
    ok(&tolerance, "0.30000000000000004");
    ok(&tolerance, "2.4000000000000004");
    ok(
        &json!({"properties": {"x": tolerance}}),
        "{\"x\": 0.30000000000000004}",
    );
    let whole = json!({"oneOf": [{}, {"type": "integer"}]});
    ok(&whole, "999.9999999999999999");
    ok(
        &json!({"oneOf": [{}, {"type": "integer", "maximum": 10}]}),
        "9.99999999999999999999",
    );
    // An exact match still counts twice.
    assert_eq!(one(&tolerance, "0.5"), at(3, "", "oneOf"));
    assert_eq!(one(&whole, "7"), at(1, "", "oneOf"));
}

#[test]
fn one_of_branch_that_passes_a_format_check_is_no_certain_match() {
    // The format checkers are lenient (a space for `T`, no seconds, a leap second): such a
    // value may be one the final validation refuses, which leaves the other branch the only
    // match, so the pre-check must not say "more than one".
    let when = json!({"oneOf": [
        {"type": "string", "format": "date-time"},
        {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}"}
    ]});
    ok(&when, "\"2024-01-02 03:04:05Z\"");
    ok(
        &json!({"properties": {"when": when}}),
        "{\"when\": \"2024-01-02 03:04:05Z\"}",
    );
    let address = json!({"oneOf": [{"format": "ipv6"}, {"pattern": "%"}]});
    ok(&address, "\"fe80::1%eth0\"");
    // A value no branch takes is still refused, and a branch without a format still counts.
    assert_eq!(one(&when, "\"soon\""), at(5, "", "oneOf"));
    let twice = json!({"oneOf": [{"type": "string"}, {"maxLength": 9}]});
    assert_eq!(one(&twice, "\"x\""), at(2, "", "oneOf"));
}

#[test]
fn one_of_branch_whose_pattern_the_dialects_read_apart_is_no_certain_match() {
    // The pattern check takes what any dialect matches: `\d` takes `٣` and `\s` U+0085 for
    // Python, `.` takes `\r` for Rust, none of which ECMA-262 (a plain tool's validation)
    // does, so the other branch may be the only match there.
    for (pattern, text) in [
        (r"^\d$", r#""\u0663""#),
        (r"^\s$", r#""\u0085""#),
        (r"^a.b$", r#""a\rb""#),
        (r"^[^\d]$", r#""\u0663""#),
    ] {
        let s = json!({"oneOf": [{"type": "string", "pattern": pattern}, {"type": "string"}]});
        ok(&s, text);
    }
    // A pattern every dialect reads alike still counts as a certain match.
    let s = json!({"oneOf": [{"type": "string", "pattern": "^[0-9]$"}, {"type": "string"}]});
    assert_eq!(one(&s, "\"3\""), at(2, "", "oneOf"));
}

#[test]
fn one_of_branch_with_both_enum_and_const_is_no_certain_match() {
    // Only one of the two rules is checked; the other may refuse the value in validation.
    for branch in [
        json!({"const": "b", "enum": ["a", "b"]}),
        json!({"enum": ["a", "b"], "const": "b"}),
    ] {
        let s = json!({"oneOf": [branch, {"enum": ["a"]}]});
        ok(&s, "\"a\"");
        assert_eq!(one(&s, "\"c\"").2, "oneOf");
    }
}

#[test]
fn keywords_a_draft_lacks_are_annotations_there() {
    let d4 = "http://json-schema.org/draft-04/schema#";
    let d7 = "http://json-schema.org/draft-07/schema#";
    let d2019 = "https://json-schema.org/draft/2019-09/schema";
    // Draft 4 has no `const`.
    let s = json!({"$schema": d4, "properties": {"a": {"const": 1}}});
    ok(&s, r#"{"a": 2}"#);
    // Nor numeric exclusive bounds: only the boolean modifier of `minimum`.
    let s = json!({"$schema": d4, "properties": {"a": {"exclusiveMinimum": 5}}});
    ok(&s, r#"{"a": 3}"#);
    // `prefixItems` is 2020-12's; before it, `items` takes every element.
    for draft in [d4, d7, d2019] {
        let s =
            json!({"$schema": draft, "properties": {"a": {"prefixItems": [{"type": "string"}]}}});
        ok(&s, r#"{"a": [1]}"#);
    }
    let s = json!({"$schema": d7, "properties": {"a": {
        "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}}});
    assert_eq!(one(&s, r#"{"a": ["x"]}"#), at(7, "/a/0", "type"));
    // Without `$schema`, 2020-12, they assert.
    let s = json!({"properties": {"a": {"const": 1}}});
    assert_eq!(one(&s, r#"{"a": 2}"#), at(7, "/a", "const"));
}

#[test]
fn draft4_integer_branch_is_no_certain_match() {
    // Draft 4 reads `1.0` as no integer, so the `number` branch alone takes it.
    let s = json!({"$schema": "http://json-schema.org/draft-04/schema#",
        "oneOf": [{"type": "integer"}, {"type": "number"}]});
    ok(&s, "1.0");
    ok(&s, "1e2");
    let s = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
    assert_eq!(one(&s, "1.0"), at(3, "", "oneOf"));
}

#[test]
fn alternatives_of_one_type_are_told_apart_in_the_expected_words() {
    let expected = |schema: &Value, text: &str| {
        let errs = run(schema, text);
        errs[0].detail.as_ref().map(|d| d.expected.clone())
    };
    let ids = json!({"oneOf": [
        {"type": "string", "pattern": "^ORD-[0-9]+$"},
        {"type": "string", "pattern": "^CUS-[0-9]+$"}
    ]});
    assert_eq!(
        expected(&ids, "\"order 42\"").as_deref(),
        Some("exactly one of string matching ^ORD-[0-9]+$ or string matching ^CUS-[0-9]+$")
    );
    let either = json!({"type": "object", "oneOf": [
        {"required": ["email"]}, {"required": ["phone", "country"]}
    ]});
    assert_eq!(
        expected(&either, "{}").as_deref(),
        Some("exactly one of object with email or object with phone, country")
    );
    let when = json!({"oneOf": [{"type": "string", "format": "date"}, {"type": "integer"}]});
    assert_eq!(
        expected(&when, "true").as_deref(),
        Some("date string or integer")
    );
}

#[test]
fn a_string_breaking_enum_before_max_length_reports_enum_for_every_cut() {
    // Whole, the piece passed `maxLength` first and was reported there (byte 9); byte by
    // byte the `enum` broke at the first letter (byte 7). `run` checks every cut agrees.
    let s = json!({"properties": {"x": {"type": "string", "maxLength": 2, "enum": ["ab", "cd"]}}});
    assert_eq!(one(&s, "{\"x\": \"lowest\"}"), at(7, "/x", "enum"));
    assert_eq!(one(&s, "{\"x\": \"abc\"}"), at(9, "/x", "maxLength"));
}

#[test]
fn refs_and_recursion() {
    let s = json!({
        "$defs": {"node": {"type": "object", "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
        }, "additionalProperties": false}},
        "$ref": "#/$defs/node"
    });
    ok(&s, r#"{"value":1,"children":[{"value":2,"children":[]}]}"#);
    assert_eq!(
        one(
            &s,
            r#"{"value":1,"children":[{"value":2,"children":[{"value":"x"}]}]}"#
        ),
        at(55, "/children/0/children/0/value", "type")
    );
    assert_eq!(
        one(&s, r#"{"children":[{"valu":1}]}"#),
        at(19, "/children/0/valu", "additionalProperties")
    );
    let escaped = json!({"$defs": {"a/b": {"type": "string"}, "c%d": {"type": "null"}},
        "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c%25d"}}});
    ok(&escaped, r#"{"x":"s","y":null}"#);
    assert_eq!(one(&escaped, r#"{"x":1}"#), at(5, "/x", "type"));
    assert_eq!(one(&escaped, r#"{"y":1}"#), at(5, "/y", "type"));
    let root = json!({"properties": {"next": {"$ref": "#"}, "v": {"type": "string"}}});
    assert_eq!(
        one(&root, r#"{"next":{"next":{"v":1}}}"#),
        at(21, "/next/next/v", "type")
    );
    let defs =
        json!({"definitions": {"x": {"type": "boolean"}}, "items": {"$ref": "#/definitions/x"}});
    assert_eq!(one(&defs, "[true,1]"), at(6, "/1", "type"));
}

#[test]
fn cycles_without_input_are_cut() {
    let (_, unsupported) = ToolSchema::compile(&json!({"$ref": "#"})).unwrap();
    assert_eq!(unsupported.len(), 1);
    ok(&json!({"$ref": "#"}), "1");
    ok(&json!({"anyOf": [{"$ref": "#"}, {"type": "string"}]}), "1");
    ok(
        &json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        "1",
    );
}

#[test]
fn boolean_schemas() {
    ok(&json!(true), r#"{"a":[1,2,{"b":"c"}]}"#);
    assert_eq!(one(&json!(false), r#"{"a":1}"#), at(0, "", "false"));
    let s = json!({"properties": {"no": false}});
    assert_eq!(one(&s, r#"{"no":1}"#), at(4, "/no", "properties"));
    ok(&s, r#"{"yes":1}"#);
}

#[test]
fn nullable_openapi_is_lenient() {
    let s = json!({"type": "string", "nullable": true, "enum": ["a"]});
    ok(&s, "null");
    ok(&s, r#""a""#);
}

#[test]
fn errors_collect_without_cascading() {
    let errs = run(
        &tool(),
        r#"{"title":"toolong","priority":"mid","x":{"deep":[1,2,3]},"count":0}"#,
    );
    let kinds: Vec<&str> = errs
        .iter()
        .map(|e| e.detail.as_ref().unwrap().keyword.as_str())
        .collect();
    assert_eq!(
        kinds,
        ["maxLength", "enum", "additionalProperties", "minimum"]
    );
    let offsets: Vec<usize> = errs.iter().map(|e| e.offset).collect();
    let mut sorted = offsets.clone();
    sorted.sort_unstable();
    assert_eq!(offsets, sorted);
}

#[test]
fn at_most_eight_errors() {
    let s = json!({"items": {"type": "string"}});
    let errs = run(&s, "[1,2,3,4,5,6,7,8,9,10]");
    assert_eq!(errs.len(), super::MAX_ERRORS);
    assert_eq!(errs[0].path, "/0");
}

#[test]
fn got_is_cut_to_200_chars() {
    let long = "x".repeat(300);
    let errs = run(&json!({"enum": ["a"]}), &format!("\"{long}\""));
    assert_eq!(errs[0].offset, 1);
    assert_eq!(errs[0].detail.as_ref().unwrap().got.chars().count(), 201);
}

#[test]
fn unsupported_keywords_are_reported_and_ignored() {
    let s = json!({
        "type": "object",
        "not": {"required": ["zzz"]},
        "properties": {"a": {"not": {"type": "string"}, "x-extra": 1}},
        "if": {}, "then": {}, "dependentRequired": {}, "unevaluatedProperties": false
    });
    let (_, unsupported) = ToolSchema::compile(&s).unwrap();
    let words: Vec<(&str, &str)> = unsupported
        .iter()
        .map(|u| (u.keyword.as_str(), u.pointer.as_str()))
        .collect();
    assert_eq!(
        words,
        [
            ("not", ""),
            ("if", ""),
            ("then", ""),
            ("dependentRequired", ""),
            ("unevaluatedProperties", ""),
            ("not", "/properties/a"),
            ("x-extra", "/properties/a"),
        ]
    );
    ok(&s, r#"{"a":"s"}"#);
}

#[test]
fn malformed_schemas_are_errors() {
    for bad in [
        json!({"type": "strin"}),
        json!({"required": "a"}),
        json!({"minLength": -1}),
        json!({"multipleOf": 0}),
        json!({"$ref": "#/$defs/missing"}),
        json!({"anyOf": []}),
        json!(3),
    ] {
        assert!(ToolSchema::compile(&bad).is_err(), "{bad}");
    }
    let e = ToolSchema::compile(&json!({"properties": {"a": {"type": 1}}})).unwrap_err();
    assert_eq!(e.pointer, "/properties/a/type");
}

#[test]
fn remote_and_anchor_refs_are_unsupported() {
    for r in ["http://example.com/s.json", "#anchor", "other.json#/a"] {
        let s = json!({"$ref": r, "type": "string"});
        let (_, u) = ToolSchema::compile(&s).unwrap();
        assert_eq!(u[0].keyword, "$ref");
        ok(&s, r#""x""#);
    }
}

#[test]
fn draft7_ref_ignores_siblings() {
    let s = json!({"$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"s": {"type": "string"}},
        "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}}});
    ok(&s, r#"{"a":"long"}"#);
}

#[test]
fn digits_beyond_a_double_are_left_to_the_final_validation() {
    // A float reading (Pydantic float fields, jsonschema on the parsed value) sees 100.0 and
    // 0.1 here: the exact value breaks the rule, the final validation accepts.
    let bounds =
        json!({"properties": {"n": {"type": "number", "maximum": 100, "exclusiveMinimum": 0.1}}});
    ok(&bounds, r#"{"n":100.000000000000000001}"#);
    ok(&bounds, r#"{"n":1.00000000000000000001e2}"#);
    ok(&bounds, r#"{"n":0.10000000000000001}"#);
    assert_eq!(
        one(&bounds, r#"{"n":100.00000000001}"#),
        at(20, "/n", "maximum")
    );
    assert_eq!(
        one(&bounds, r#"{"n":0.1}"#),
        at(8, "/n", "exclusiveMinimum")
    );
    let integer = json!({"properties": {"n": {"type": "integer"}}});
    ok(&integer, r#"{"n":1.0000000000000000001}"#);
    assert_eq!(one(&integer, r#"{"n":1.5}"#).2, "type");
    let choice = json!({"properties": {"n": {"enum": [0.1, 2]}}});
    ok(&choice, r#"{"n":0.1000000000000000055511151231257827}"#);
    ok(&choice, r#"{"n":2.00000000000000000001}"#);
    assert_eq!(one(&choice, r#"{"n":0.2}"#).2, "enum");
    // Past 2**53 Python compares the float it read with an integer bound exactly, and divides
    // that float: `9007199254740993.0` reads `...992.0`, `9007199254740995.0` reads `...996.0`.
    let big = json!({"properties": {
        "lt": {"type": "number", "exclusiveMaximum": 9_007_199_254_740_993_u64},
        "gt": {"type": "number", "exclusiveMinimum": 9_007_199_254_740_995_u64},
        "by3": {"type": "number", "multipleOf": 3},
    }});
    ok(&big, r#"{"lt":9007199254740993.0}"#);
    ok(&big, r#"{"gt":9007199254740995.0}"#);
    ok(&big, r#"{"by3":9007199254740995.0}"#);
    // Integer lexemes are exact integers to every reading.
    assert_eq!(
        one(&big, r#"{"lt":9007199254740993}"#).2,
        "exclusiveMaximum"
    );
    assert_eq!(one(&big, r#"{"by3":9007199254740995}"#).2, "multipleOf");
    assert_eq!(one(&big, r#"{"by3":4.0}"#).2, "multipleOf");
}

#[test]
fn integers_as_written_are_compared_exactly() {
    // Past 2**53 many integers share a nearest double, but Python reads an integer as an
    // exact `int` (and Pydantic's `int` and `Literal` fields compare it so): `...891` is not
    // `...890` to any reader, in `const`, `enum`, an array member, or against an integer
    // bound where no float field may read it.
    let big = json!({"properties": {
        "c": {"const": 12_345_678_901_234_567_890_u64},
        "e": {"enum": [12_345_678_901_234_567_890_u64, "a"]},
        "a": {"enum": [[12_345_678_901_234_567_890_u64]]},
        "max": {"type": "integer", "maximum": 9_007_199_254_740_992_u64},
        "min": {"type": "integer", "exclusiveMinimum": 9_007_199_254_740_993_u64},
    }});
    assert_eq!(
        one(&big, r#"{"c":12345678901234567891}"#),
        at(25, "/c", "const")
    );
    assert_eq!(one(&big, r#"{"e":12345678901234567891}"#).2, "enum");
    assert_eq!(one(&big, r#"{"a":[12345678901234567891]}"#).2, "enum");
    assert_eq!(one(&big, r#"{"max":9007199254740993}"#).2, "maximum");
    assert_eq!(
        one(&big, r#"{"min":9007199254740992}"#).2,
        "exclusiveMinimum"
    );
    ok(
        &big,
        r#"{"c":12345678901234567890,"e":12345678901234567890}"#,
    );
    ok(
        &big,
        r#"{"a":[12345678901234567890],"max":9007199254740992}"#,
    );
    // Written as a float it is the float Python reads, which equals an integer only when it
    // is exactly that integer: `...891.0` and `1.2345678901234567e19` are `...168.0`.
    assert_eq!(one(&big, r#"{"c":12345678901234567891.0}"#).2, "const");
    assert_eq!(one(&big, r#"{"e":1.2345678901234567e19}"#).2, "enum");
    assert_eq!(one(&big, r#"{"a":[1.2345678901234567e19]}"#).2, "enum");
    // Its own digits are the member, as the final validation reads a whole float.
    ok(
        &big,
        r#"{"c":12345678901234567890.0,"e":1.234567890123456789e19}"#,
    );
    // A float constant or a float field reads the integer as its nearest double.
    let floats = json!({"properties": {
        "c": {"const": 1.2345678901234567e19},
        "max": {"type": "number", "maximum": 9_007_199_254_740_992_u64},
    }});
    ok(
        &floats,
        r#"{"c":12345678901234567890,"max":9007199254740993}"#,
    );
}

#[test]
fn one_of_member_equal_only_as_written_is_no_certain_match() {
    // `12345678901234567890.0` is the member `12345678901234567890` as written, but the float
    // `12345678901234567168.0` to `jsonschema`, where it is no member and only the second
    // branch matches: not "more than one".
    let s = json!({"oneOf": [
        {"const": 12_345_678_901_234_567_890_u64},
        {"type": "number", "multipleOf": 0.5}
    ]});
    ok(&s, "12345678901234567890.0");
    ok(&s, "1.234567890123456789e19");
    ok(
        &json!({"properties": {"x": s}}),
        r#"{"x":12345678901234567890.0}"#,
    );
    // Written alike, or a member that is exactly a double, it counts twice.
    assert_eq!(one(&s, "12345678901234567890"), at(20, "", "oneOf"));
    let exact = json!({"oneOf": [{"const": 4}, {"type": "number", "multipleOf": 0.5}]});
    assert_eq!(one(&exact, "4.0"), at(3, "", "oneOf"));
    let float = json!({"oneOf": [{"const": 0.5}, {"type": "number", "multipleOf": 0.5}]});
    assert_eq!(one(&float, "0.50"), at(4, "", "oneOf"));
}

#[test]
fn a_rule_the_float_reading_keeps_does_not_hide_the_next_one() {
    // To a float `99999999999999999999.5` is a whole number, so `type: integer` is left to
    // the final validation; it is above `maximum: 5` whatever the reading, and that was not
    // checked once the type check stopped short (nor the enum after it).
    let bounded = json!({"properties": {"n": {"type": "integer", "maximum": 5}}});
    assert_eq!(
        one(&bounded, r#"{"n":99999999999999999999.5}"#).2,
        "maximum"
    );
    ok(&bounded, r#"{"n":4.0000000000000000001}"#);
    let choice = json!({"properties": {"n": {"type": "integer", "enum": [1, 2]}}});
    assert_eq!(one(&choice, r#"{"n":3.0000000000000000001}"#).2, "enum");
    ok(&choice, r#"{"n":2.0000000000000000001}"#);
    let nullable = json!({"properties": {"n": {"type": ["integer", "null"], "minimum": 100}}});
    assert_eq!(
        one(&nullable, r#"{"n":3.0000000000000000001}"#).2,
        "minimum"
    );
    ok(&nullable, r#"{"n":100.0000000000000000001}"#);
}

#[test]
fn all_of_members_check_the_same_value() {
    let s = json!({
        "type": "object",
        "allOf": [
            {"properties": {"name": {"type": "string", "maxLength": 4}}, "required": ["name"]},
            {"properties": {"kind": {"enum": ["user", "team"]}}, "required": ["kind"]}
        ]
    });
    ok(&s, r#"{"name":"ada","kind":"team","other":1}"#);
    assert_eq!(
        one(&s, r#"{"name":1,"kind":"user"}"#),
        at(8, "/name", "type")
    );
    assert_eq!(
        one(&s, r#"{"name":"ada","kind":"usr"}"#),
        at(24, "/kind", "enum")
    );
    assert_eq!(
        one(&s, r#"{"name":"adam!","kind":"user"}"#),
        at(13, "/name", "maxLength")
    );
    let errs = run(&s, r#"{"name":"ada"}"#);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let (e, d) = (&errs[0], errs[0].detail.as_ref().unwrap());
    assert_eq!((e.offset, e.path.as_str()), (13, "/kind"));
    assert_eq!(
        (d.keyword.as_str(), d.expected.as_str()),
        ("required", r#"required properties "kind""#)
    );
    assert_eq!(e.message, r#"missing required property "kind""#);
    // Every member that fails says so, each with its own keyword.
    let mut paths: Vec<String> = run(&s, "{}").iter().map(|e| e.path.clone()).collect();
    paths.sort();
    assert_eq!(paths, ["/kind", "/name"]);
    // A member's type is checked at the value's first byte.
    let typed = json!({"allOf": [{"type": "object"}, {"required": ["a"]}]});
    assert_eq!(one(&typed, "[1]"), at(0, "", "type"));
    assert_eq!(one(&typed, "{}"), at(1, "/a", "required"));
}

#[test]
fn a_keyword_inside_all_of_reports_as_it_does_alone() {
    // The same offset, path, keyword, expected, got and message as the keyword at the top, for
    // a lone member, a member next to others, and a member under a described wrapper.
    let cases: &[(Value, &str)] = &[
        (
            tool(),
            r#"{"title":"toolong","priority":"mid","x":{"deep":[1]},"count":0}"#,
        ),
        (tool(), r#"{"tix":1,"title":"a","priority":"low"}"#),
        (tool(), r#"{"title":"a"}"#),
        (
            tool(),
            r#"{"title":"a","priority":"low","tags":["a","b","c"]}"#,
        ),
        (json!({"type": "integer", "multipleOf": 3}), "7"),
        (
            json!({"type": "string", "pattern": "^u_[0-9]+$"}),
            r#""u_x""#,
        ),
        (json!({"const": {"a": [1]}}), r#"{"a":[2]}"#),
        (
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            "1",
        ),
        (json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}), "3"),
        (json!(false), "1"),
    ];
    for (schema, text) in cases {
        let alone = run(schema, text);
        assert!(!alone.is_empty(), "{schema} {text}");
        for wrapped in [
            json!({"allOf": [schema]}),
            json!({"allOf": [schema], "description": "described"}),
            json!({"allOf": [{}, schema, true]}),
            json!({"allOf": [{"allOf": [schema]}]}),
        ] {
            assert_eq!(run(&wrapped, text), alone, "{wrapped} {text}");
        }
    }
}

#[test]
fn additional_properties_sees_only_its_own_member() {
    // 2020-12: `additionalProperties` knows the `properties` of its own schema object only,
    // so a closed member refuses what a sibling member declares.
    let s = json!({"allOf": [
        {"properties": {"a": {}}, "additionalProperties": false},
        {"properties": {"b": {}}}
    ]});
    ok(&s, r#"{"a":1}"#);
    let errs = run(&s, r#"{"a":1,"b":2}"#);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!((errs[0].offset, errs[0].path.as_str()), (8, "/b"));
    let d = errs[0].detail.as_ref().unwrap();
    assert_eq!(
        (d.keyword.as_str(), d.expected.as_str()),
        ("additionalProperties", r#"no properties other than "a""#)
    );
    // Open members compose: each checks the properties it names.
    let open = json!({"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"},
        "allOf": [{"properties": {"b": {"type": "boolean"}}}]});
    ok(&open, r#"{"a":1,"c":"x"}"#);
    assert_eq!(one(&open, r#"{"b":true}"#), at(5, "/b", "type"));
    assert_eq!(one(&open, r#"{"a":1,"b":"x"}"#), at(11, "/b", "type"));
}

#[test]
fn nested_all_of_and_refs() {
    let s = json!({
        "$defs": {
            "named": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            "node": {"allOf": [
                {"$ref": "#/$defs/named"},
                {"properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}},
                {"allOf": [{"properties": {"size": {"type": "integer", "minimum": 0}}}]}
            ]}
        },
        "$ref": "#/$defs/node"
    });
    ok(
        &s,
        r#"{"name":"a","children":[{"name":"b","size":0,"children":[]}]}"#,
    );
    assert_eq!(
        one(
            &s,
            r#"{"name":"a","children":[{"name":"b","children":[{"size":-1,"name":"c"}]}]}"#
        ),
        at(58, "/children/0/children/0/size", "minimum")
    );
    assert_eq!(
        one(&s, r#"{"name":"a","children":[{"size":1}]}"#),
        at(33, "/children/0/name", "required")
    );
    assert_eq!(
        one(&s, r#"{"name":"a","children":[7]}"#),
        at(24, "/children/0", "type")
    );
}

#[test]
fn all_of_inside_any_of_branches() {
    let s = json!({"properties": {"who": {"anyOf": [
        {"allOf": [{"type": "object"}, {"properties": {"id": {"pattern": "^u_"}}, "required": ["id"]}]},
        {"type": "null"}
    ]}}});
    ok(&s, r#"{"who":null}"#);
    ok(&s, r#"{"who":{"id":"u_1"}}"#);
    // The one branch that got past its type failed in a member: that failure is reported.
    let errs = run(&s, r#"{"who":{"id":"x"}}"#);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let d = errs[0].detail.as_ref().unwrap();
    assert_eq!(
        (errs[0].offset, errs[0].path.as_str(), d.keyword.as_str()),
        (15, "/who/id", "pattern")
    );
    assert_eq!(d.expected, "a string matching ^u_");
    assert_eq!(one(&s, r#"{"who":{}}"#), at(8, "/who/id", "required"));
    // A type no branch takes names the alternatives, the member's type standing for its owner.
    let errs = run(&s, r#"{"who":"u_1"}"#);
    assert_eq!(errs[0].offset, 7);
    assert_eq!(errs[0].detail.as_ref().unwrap().expected, "object or null");
}

#[test]
fn a_type_no_branch_takes_is_a_type_error() {
    // `Optional[int]` given a string: "none of the alternatives" hid the types it takes.
    for union in ["anyOf", "oneOf"] {
        let s = json!({"properties": {"n": {union: [{"type": "integer"}, {"type": "null"}]}}});
        let errs = run(&s, r#"{"n":"x"}"#);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        let d = errs[0].detail.as_ref().unwrap();
        assert_eq!(
            (
                errs[0].path.as_str(),
                d.keyword.as_str(),
                d.expected.as_str()
            ),
            ("/n", "type", "integer or null")
        );
        assert_eq!(errs[0].message, "expected integer or null, got string");
    }
    // A branch that took the type and failed on more still speaks for itself.
    let s = json!({"anyOf": [{"type": "string", "maxLength": 1}, {"type": "null"}]});
    assert_eq!(one(&s, r#""xy""#), at(2, "", "maxLength"));
}

#[test]
fn one_of_counts_an_all_of_branch_only_when_exact() {
    let s = json!({"oneOf": [
        {"allOf": [{"type": "integer"}, {"maximum": 5}]},
        {"allOf": [{"minimum": 3}]}
    ]});
    ok(&s, "1");
    ok(&s, "7");
    assert_eq!(one(&s, "4"), at(1, "", "oneOf"));
    assert_eq!(one(&s, "2.5"), at(3, "", "oneOf"));
    // An ignored keyword inside a member makes its owner inexact: it never counts as a
    // second match, however deep the member.
    let loose = json!({"oneOf": [
        {"type": "integer"},
        {"allOf": [{"minimum": 2}, {"allOf": [{"not": {"const": 3}}]}]}
    ]});
    ok(&loose, "3");
    assert_eq!(one(&loose, "1.5"), at(3, "", "oneOf"));
}

#[test]
fn cycles_through_all_of_are_cut() {
    let (_, unsupported) = ToolSchema::compile(&json!({"allOf": [{"$ref": "#"}]})).unwrap();
    assert_eq!(unsupported.len(), 1, "{unsupported:?}");
    ok(&json!({"allOf": [{"$ref": "#"}]}), r#"{"a":[1]}"#);
    let typed = json!({"type": "string", "allOf": [{"$ref": "#"}, {"maxLength": 2}]});
    ok(&typed, r#""ab""#);
    assert_eq!(one(&typed, "1"), at(0, "", "type"));
    assert_eq!(one(&typed, r#""abc""#), at(3, "", "maxLength"));
    let mutual = json!({"$defs": {
        "a": {"allOf": [{"$ref": "#/$defs/b"}], "type": "object"},
        "b": {"allOf": [{"$ref": "#/$defs/a"}], "required": ["x"]}
    }, "$ref": "#/$defs/a"});
    ok(&mutual, r#"{"x":1}"#);
    assert_eq!(one(&mutual, "{}"), at(1, "/x", "required"));
    // Recursion that consumes input is kept.
    let tree = json!({"allOf": [{"properties": {"next": {"$ref": "#"}}}], "type": "object"});
    assert_eq!(
        one(&tree, r#"{"next":{"next":1}}"#),
        at(16, "/next/next", "type")
    );
}

#[test]
fn trivial_members_and_malformed_all_of() {
    let (compiled, unsupported) =
        ToolSchema::compile(&json!({"allOf": [{}, true, {"description": "x"}]})).unwrap();
    assert!(compiled.is_trivial() && unsupported.is_empty());
    assert_eq!(
        one(&json!({"allOf": [true, false]}), "1"),
        at(0, "", "false")
    );
    for bad in [
        json!({"allOf": []}),
        json!({"allOf": {}}),
        json!({"allOf": [1]}),
    ] {
        assert!(ToolSchema::compile(&bad).is_err(), "{bad}");
    }
    let e = ToolSchema::compile(&json!({"allOf": [{"type": "nope"}]})).unwrap_err();
    assert_eq!(e.pointer, "/allOf/0/type");
}

#[test]
fn a_member_the_slot_cap_leaves_out_loosens_its_owner() {
    // Past `MAX_SLOTS_PER_VALUE` the last member (which 5 breaks) gets no slot: the second
    // branch then seems to match, but must not count as a second exact `oneOf` match.
    let mut members = vec![json!({"minimum": 0}); 300];
    members.push(json!({"maximum": -1}));
    let s = json!({"oneOf": [{"type": "number"}, {"allOf": members}]});
    ok(&s, "5");
    ok(&s, "-3");
    ok(&s, "\"x\"");
}

#[test]
fn secret_pointers_match_their_values_and_everything_under_them() {
    let (mut schema, _) = ToolSchema::compile(&serde_json::json!({})).expect("compiles");
    assert!(!schema.is_secret("/password"));
    schema.set_secrets(["/password", "/vaults/*/pin", "/a~1b"]);
    for path in [
        "/password",
        "/password/0",
        "/vaults/3/pin",
        "/vaults/x/pin/deep",
        "/a~1b",
    ] {
        assert!(schema.is_secret(path), "{path}");
    }
    for path in [
        "",
        "/passwords",
        "/vaults/3",
        "/vaults/3/kind",
        "/a/b",
        "/pass",
    ] {
        assert!(!schema.is_secret(path), "{path}");
    }
}

#[test]
fn an_any_of_that_stands_for_a_one_of_names_one_of() {
    // The Python side loosens a `oneOf` whose branches it checks less strictly into an
    // `anyOf`, marked: its errors name the keyword the tool's schema has.
    let branches = json!([{"type": "integer", "minimum": 5}, {"type": "integer", "maximum": 1}]);
    let s = json!({"x-toolwire-one-of": true, "anyOf": branches});
    assert_eq!(one(&s, "3"), at(1, "", "oneOf"));
    let plain = json!({"anyOf": branches});
    assert_eq!(one(&plain, "3"), at(1, "", "anyOf"));
    // A type no branch takes is a type error, whichever keyword the union has.
    assert_eq!(one(&s, "true"), at(0, "", "type"));
}

#[test]
fn a_pattern_ecma_262_refuses_is_a_broken_schema_wherever_it_sits() {
    // JSON Schema reads patterns as ECMA-262 with the `u` flag: Python's and PCRE's syntax is
    // refused rather than run with some engine's meaning, and so is a pattern in a definition
    // no `$ref` reaches, which compiling alone never visits.
    let string = |p: &str| json!({"type": "string", "pattern": p});
    for (schema, pointer) in [
        (
            json!({"properties": {"a": string("(?i)abc")}}),
            "/properties/a/pattern",
        ),
        (json!({"items": [true, string("\\Z")]}), "/items/1/pattern"),
        (json!({"anyOf": [string("(?P<n>x)")]}), "/anyOf/0/pattern"),
        (
            json!({"$defs": {"unused": string("a++")}}),
            "/$defs/unused/pattern",
        ),
        (
            json!({"definitions": {"k": {"patternProperties": {"\\h": {}}}}}),
            "/definitions/k/patternProperties/\\h",
        ),
        (
            json!({"patternProperties": {"a~/{": {}}}),
            "/patternProperties/a~0~1{",
        ),
    ] {
        let refused = ToolSchema::compile(&schema).expect_err("refused");
        assert_eq!(refused.pointer, pointer, "{schema}");
        assert!(refused.message.contains("ECMA-262"), "{}", refused.message);
    }
    // Valid only without the `u` flag, or only in another dialect: refused too.
    for p in [
        "\\a",
        "\\q",
        "{",
        "]",
        "[[:alpha:]]",
        "\\8",
        "(?=a)*",
        "[\\d-z]",
    ] {
        assert!(super::pattern_error(p).is_some(), "{p}");
    }
    // ECMA-262 syntax Python spells otherwise, and data that only looks like a schema.
    for p in [
        "(?<name>x)\\k<name>",
        "[^]*",
        "x[\\-]y",
        "\\p{Letter}\\P{N}",
        "\\u{1F600}",
        "(?<!a)b",
        "(?i:a)",
    ] {
        assert_eq!(super::pattern_error(p), None, "{p}");
        ToolSchema::compile(&string(p)).expect("compiles");
    }
    let data = json!({"const": {"pattern": "(?i)"}, "default": {"pattern": "\\Z"}, "enum": [{"patternProperties": {"(?P<x>)": {}}}]});
    ToolSchema::compile(&data).expect("data is no schema");
}

#[test]
fn a_checker_reuses_the_buffers_of_the_last_one_and_nothing_else() {
    let (compiled, _) = ToolSchema::compile(&tool()).expect("schema compiles");
    let compiled = Arc::new(compiled);
    let bad = r#"{"title": "far too long", "tags": ["a", "b", "c"], "count": 0}"#;
    let fresh = feed(&compiled, bad, &[]);
    assert!(fresh.len() > 2, "{fresh:#?}");
    assert_eq!(
        compiled.buffers.pooled(),
        1,
        "a finished checker gives its buffers back"
    );
    // Dropped inside nested values, with errors recorded: the next checker starts clean.
    let mut left = Checker::new(Arc::clone(&compiled));
    assert_eq!(
        compiled.buffers.pooled(),
        0,
        "a new checker takes the kept buffers"
    );
    let mut scanner = crate::scanner::Scanner::new(crate::scanner::ScanConfig::default());
    scanner.feed_with(&bad.as_bytes()[..40], &mut left);
    assert!(!left.errors().is_empty());
    drop(left);
    assert_eq!(compiled.buffers.pooled(), 1);
    assert_eq!(feed(&compiled, bad, &[]), fresh);
    assert!(feed(
        &compiled,
        r#"{"title": "ok", "priority": "low", "tags": ["a"]}"#,
        &[]
    )
    .is_empty());
}
