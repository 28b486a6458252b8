//! What the schema pre-check costs on top of scanning: ns per argument byte for the scanner
//! alone and for the scanner driving a [`Checker`], over realistic tool schemas and argument
//! texts of about 200 B, 2 KB and 20 KB cut into 3-20 byte fragments, as streams arrive.
//!
//! Run it in release mode (it is ignored by default; debug timings mean nothing):
//!
//! ```text
//! cargo test --release --test precheck_speed -- --ignored --nocapture
//! ```
//!
//! Design notes:
//! - Each (schema, size) pair is timed as rounds of scan-only and scan+check runs interleaved,
//!   and the minimum per round is kept: on a shared machine the minimum is the number least
//!   disturbed by other jobs. `PRECHECK_SPEED_ROUNDS` sets the number of rounds.
//! - A fresh `Scanner` and `Checker` per run, as per call in the assembler, so buffer growth is
//!   part of the cost; schema compilation (once per tool) is not.
//! - For a noise-free comparison, count instructions instead: `PRECHECK_SPEED_ONCE=1` runs
//!   every case once through the `#[inline(never)]` functions `scan_only` and `scan_check`, so
//!   `valgrind --tool=callgrind` on the test binary plus `callgrind_annotate --inclusive=yes`
//!   gives the instructions of each (`PRECHECK_SPEED_CASE=dense-20KB` narrows it to one case).
//! - The texts come from a seeded generator shaped like `benches/corpus.py` (nested objects,
//!   integers and floats, raw CJK and emoji, `\uXXXX` escapes with surrogate pairs, `\"` and
//!   `\n`), written in Rust so this file needs no Python.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use toolwire::scanner::Scanner;
use toolwire::schema::{Checker, ToolSchema};
use toolwire::visit::NoVisitor;

/// A small deterministic generator (SplitMix64), so every run times the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[usize::try_from(self.below(items.len() as u64)).unwrap_or(0)]
    }
}

const WORDS: &[&str] = &[
    "printer",
    "invoice",
    "shipment",
    "ticket",
    "renewal",
    "warehouse",
    "refund",
    "meeting",
    "café",
    "naïve",
    "résumé",
    "Zürich",
    "São-Paulo",
    "🚀",
    "✨",
    "👍🏽",
    "€42",
    "東京都渋谷区",
    "会議室",
    "서울특별시",
    "日本語テキスト",
];
const SPECIAL: &[&str] = &[
    "\"quoted\"",
    "line\nbreak",
    "tab\there",
    "C:\\temp\\x",
    "a/b",
];
const UNITS: &[&str] = &["cm", "mm", "in", "インチ"];
const LANGS: &[&str] = &["en", "ja", "zh", "ko", "fr"];

fn phrase(rng: &mut Rng, lo: u64, hi: u64) -> String {
    let mut words: Vec<&str> = (0..rng.range(lo, hi)).map(|_| rng.pick(WORDS)).collect();
    if rng.below(2) == 0 {
        let at = usize::try_from(rng.below(words.len() as u64 + 1)).unwrap_or(0);
        words.insert(at, rng.pick(SPECIAL));
    }
    words.join(" ")
}

fn item(rng: &mut Rng, n: usize) -> Value {
    let tags: Vec<&str> = (0..rng.range(0, 3)).map(|_| rng.pick(WORDS)).collect();
    let note = if rng.below(10) < 3 {
        Value::Null
    } else {
        Value::String(phrase(rng, 1, 3))
    };
    #[allow(clippy::cast_precision_loss)] // small integers
    let (price, w, h) = (
        rng.range(50, 999_900) as f64 / 100.0,
        rng.range(1, 3000) as f64 / 10.0,
        rng.range(1, 90) as f64,
    );
    json!({
        "sku": format!("SKU-{n:05}"),
        "qty": rng.range(1, 500),
        "price": price,
        "text": phrase(rng, 2, 8),
        "tags": tags,
        "size": {"w": w, "h": h, "unit": rng.pick(UNITS)},
        "stock": rng.below(10) < 7,
        "note": note,
    })
}

/// JSON text of `v` with every non-ASCII character as `\uXXXX` (surrogate pairs above the
/// BMP), as some providers and proxies send it.
fn ascii_json(v: &Value) -> String {
    let raw = serde_json::to_string(v).unwrap_or_default();
    let mut out = String::with_capacity(raw.len() * 2);
    for c in raw.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// A `create_document` argument text of about `size` bytes (compact, every third item escaped;
/// no items at all when even one does not fit, so a short call stays short).
fn arguments(size: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let head = json!({
        "title": phrase(&mut rng, 1, 2),
        "lang": rng.pick(LANGS),
        "summary": phrase(&mut rng, 4, 10),
        "priority": rng.range(1, 5),
    });
    let mut text = serde_json::to_string(&head).unwrap_or_default();
    text.pop();
    text.push_str(",\"items\":[");
    let mut n = 0;
    loop {
        let it = item(&mut rng, n);
        let s = if n % 3 == 1 {
            ascii_json(&it)
        } else {
            serde_json::to_string(&it).unwrap_or_default()
        };
        if (n > 0 || size < 1_000) && text.len() + s.len() + 2 > size {
            break;
        }
        if n > 0 {
            text.push(',');
        }
        text.push_str(&s);
        n += 1;
    }
    text.push_str("]}");
    text.into_bytes()
}

/// Fragment lengths of 3 to 20 bytes, cutting anywhere (inside escapes and characters too).
fn fragments(text: &[u8], seed: u64) -> Vec<&[u8]> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let len = usize::try_from(rng.range(3, 20)).unwrap_or(3);
        let end = (at + len).min(text.len());
        out.push(&text[at..end]);
        at = end;
    }
    out
}

/// OpenAI-strict style, with the keywords a careful tool author adds: closed objects, every
/// property required, `anyOf [T, null]` for optional ones, enums, patterns, bounds,
/// `multipleOf`, lengths.
fn dense_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["title", "lang", "summary", "priority", "items"],
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 200},
            "lang": {"type": "string", "enum": ["en", "ja", "zh", "ko", "fr", "de"]},
            "summary": {"type": "string", "maxLength": 4000},
            "priority": {"type": "integer", "minimum": 1, "maximum": 5},
            "items": {
                "type": "array",
                "maxItems": 1000,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["sku", "qty", "price", "text", "tags", "size", "stock", "note"],
                    "properties": {
                        "sku": {"type": "string", "pattern": "^SKU-[0-9]{5}$"},
                        "qty": {"type": "integer", "minimum": 1, "maximum": 10000},
                        "price": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01},
                        "text": {"type": "string", "maxLength": 1000},
                        "tags": {
                            "type": "array",
                            "maxItems": 10,
                            "items": {"type": "string", "minLength": 1}
                        },
                        "size": {
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["w", "h", "unit"],
                            "properties": {
                                "w": {"type": "number", "minimum": 0},
                                "h": {"type": "number", "minimum": 0},
                                "unit": {"enum": ["cm", "mm", "in", "インチ"]}
                            }
                        },
                        "stock": {"type": "boolean"},
                        "note": {"anyOf": [{"type": "string", "maxLength": 500}, {"type": "null"}]}
                    }
                }
            }
        }
    })
}

/// What Pydantic's `model_json_schema()` emits for the corpus' `Document` model: `$defs` and
/// `$ref`, titles, `anyOf [T, null]` for the optional field, open objects.
fn pydantic_schema() -> Value {
    json!({
        "$defs": {
            "Dimensions": {
                "properties": {
                    "w": {"title": "W", "type": "number"},
                    "h": {"title": "H", "type": "number"},
                    "unit": {"title": "Unit", "type": "string"}
                },
                "required": ["w", "h", "unit"],
                "title": "Dimensions",
                "type": "object"
            },
            "LineItem": {
                "properties": {
                    "sku": {"title": "Sku", "type": "string"},
                    "qty": {"title": "Qty", "type": "integer"},
                    "price": {"title": "Price", "type": "number"},
                    "text": {"title": "Text", "type": "string"},
                    "tags": {"items": {"type": "string"}, "title": "Tags", "type": "array"},
                    "size": {"$ref": "#/$defs/Dimensions"},
                    "stock": {"title": "Stock", "type": "boolean"},
                    "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Note"}
                },
                "required": ["sku", "qty", "price", "text", "tags", "size", "stock", "note"],
                "title": "LineItem",
                "type": "object"
            }
        },
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "lang": {"title": "Lang", "type": "string"},
            "summary": {"title": "Summary", "type": "string"},
            "priority": {"title": "Priority", "type": "integer"},
            "items": {"items": {"$ref": "#/$defs/LineItem"}, "title": "Items", "type": "array"}
        },
        "required": ["title", "lang", "summary", "priority", "items"],
        "title": "Document",
        "type": "object"
    })
}

/// Types only: no closed objects, no `required`, no value rules.
fn plain_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "lang": {"type": "string"},
            "summary": {"type": "string"},
            "priority": {"type": "integer"},
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "sku": {"type": "string"},
                        "qty": {"type": "integer"},
                        "price": {"type": "number"},
                        "text": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "size": {
                            "type": "object",
                            "properties": {
                                "w": {"type": "number"},
                                "h": {"type": "number"},
                                "unit": {"type": "string"}
                            }
                        },
                        "stock": {"type": "boolean"},
                        "note": {"type": ["string", "null"]}
                    }
                }
            }
        }
    })
}

struct Case {
    name: String,
    schema: Arc<ToolSchema>,
    text: Vec<u8>,
    seed: u64,
}

fn cases() -> Vec<Case> {
    let schemas = [
        ("dense", dense_schema()),
        ("pydantic", pydantic_schema()),
        ("plain", plain_schema()),
        // The assembler attaches no checker for a trivial schema; this row isolates what
        // attaching one costs the scanner (string decoding for the visitor, events).
        ("true", Value::Bool(true)),
    ];
    let only = std::env::var("PRECHECK_SPEED_CASE").ok();
    let mut out = Vec::new();
    for (name, schema) in schemas {
        let (compiled, unsupported) = ToolSchema::compile(&schema).expect("schema compiles");
        assert!(unsupported.is_empty(), "{name}: {unsupported:?}");
        let compiled = Arc::new(compiled);
        // 200 B is a short call, as most are: what a call costs before its first byte and
        // after its last (the checker's set-up and buffer growth) shows there.
        for (label, size, seed) in [("200B", 200, 5), ("2KB", 2_000, 7), ("20KB", 20_000, 11)] {
            let case = format!("{name}-{label}");
            if only.as_deref().is_some_and(|o| o != case) {
                continue;
            }
            out.push(Case {
                name: case,
                schema: Arc::clone(&compiled),
                text: arguments(size, seed),
                seed,
            });
        }
    }
    out
}

#[inline(never)]
fn scan_only(frags: &[&[u8]]) -> usize {
    let mut scanner = Scanner::default();
    for f in frags {
        scanner.push_with(f, &mut NoVisitor);
    }
    assert!(scanner.finish().is_ok());
    scanner.text().len()
}

#[inline(never)]
fn scan_check(frags: &[&[u8]], schema: &Arc<ToolSchema>) -> usize {
    let mut scanner = Scanner::default();
    let mut checker = Checker::new(Arc::clone(schema));
    for f in frags {
        scanner.push_with(f, &mut checker);
    }
    assert!(scanner.finish_with(&mut checker).is_ok());
    let errors = checker.finish(scanner.text().len()).len();
    scanner.text().len() + errors
}

/// Minimum over rounds of the ns per byte of `run`, each round long enough to time.
fn time_round(bytes: usize, reps: u32, run: &mut dyn FnMut() -> usize) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        black_box(run());
    }
    #[allow(clippy::cast_precision_loss)] // a few million bytes at most
    let per_byte = t.elapsed().as_nanos() as f64 / (f64::from(reps) * bytes as f64);
    per_byte
}

#[test]
#[ignore = "a measurement: run in release mode with --ignored --nocapture"]
#[allow(clippy::print_stdout)] // the table is the output
fn precheck_overhead() {
    let once = std::env::var_os("PRECHECK_SPEED_ONCE").is_some();
    let rounds: u32 = std::env::var("PRECHECK_SPEED_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(21);
    if !once {
        println!(
            "{:<15} {:>7} {:>10} {:>10} {:>9}",
            "case", "bytes", "scan ns/B", "check ns/B", "overhead"
        );
    }
    for case in cases() {
        let frags = fragments(&case.text, case.seed);
        let bytes = case.text.len();
        // Every case is a valid instance: the pre-check must accept it.
        assert_eq!(
            scan_check(&frags, &case.schema),
            bytes,
            "{}: rejected",
            case.name
        );
        if once {
            // The check above was the one `scan_check` call; match it with one `scan_only`.
            black_box(scan_only(&frags));
            continue;
        }
        // About 20 ms of scanning per round.
        let reps = u32::try_from((2_000_000 / bytes).max(1)).unwrap_or(1);
        let (mut scan, mut check) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..rounds {
            scan = scan.min(time_round(bytes, reps, &mut || scan_only(&frags)));
            check = check.min(time_round(bytes, reps, &mut || {
                scan_check(&frags, &case.schema)
            }));
        }
        println!(
            "{:<15} {:>7} {:>10.2} {:>10.2} {:>+8.0}%",
            case.name,
            bytes,
            scan,
            check,
            (check / scan - 1.0) * 100.0
        );
    }
}
