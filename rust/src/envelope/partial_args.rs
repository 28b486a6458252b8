//! Vertex AI's streamed function-call arguments (`partialArgs`): JSON Path pieces merged into
//! one object, exactly as the adapter's `_Open.merge` / `merge_object` merge them into Python
//! values and `json.dumps` writes them.
//!
//! Design notes
//! - Values are `serde_json::Value`s (insertion order kept, as a Python dict keeps it), their
//!   numbers rewritten as Python writes the number `json.loads` made of them: an integer as its
//!   digits (`-0` as `0`), a float with `repr` (shortest round-trip digits, exponent form below
//!   `1e-4` and from `1e16`). A piece's `numberValue` is a protobuf double: integral and within
//!   2^53 it is an integer; written as a string it is read as its number text. One that no
//!   double holds (`1e999`, `"Infinity"`), a value member of the wrong type or of a kind not
//!   read here (`listValue`), or no value where no string goes on, breaks the call
//!   (`mixed_arguments`): dropped, the member would be missing from a call that runs.
//! - A lone surrogate, which a Python `str` holds and no Rust string does, is held as a stand-in
//!   character of Supplementary Private Use Area-A (U+F0000 plus its offset from U+D800) and
//!   written back as the `\uXXXX` escape the adapter's text has, so that the core reports the
//!   call `lone_surrogate` at the same place on both paths (a model-actionable error, where
//!   `lost_event` blamed the transport). Half of a pair that a UTF-16 producer cut between two
//!   pieces of one string is no lone surrogate: the first piece ends with the high half, the
//!   next starts with the low one, and the two make one character, as Python's joined string
//!   does once written. A call that holds a stand-in and may hold a real character of that
//!   area (seen in a piece's bytes or escapes) could not be written back exactly: it ends
//!   `lost_event`, as does what else Python reads where this path cannot follow (an infinite
//!   float inside `args`, which `json.dumps` writes as `Infinity`; a non-ASCII digit in a path
//!   index, which Python's `\d` takes): the merge reports [`Merge::Unread`].
//! - With progress tracking, each value merged is reported as it is merged ([`Report`]): a
//!   string piece as text appended to the string at its path, a number or literal as the JSON
//!   text the merged object writes for it, at the JSON Pointer of its path. Only what merged is
//!   reported: nothing for the piece that breaks the call, nor after it.

use std::fmt::Write;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

use super::escaped_unit;
use crate::progress::Recorded;
use crate::scanner::{is_number_lexeme, push_pointer_token};

/// Where a merge reports each value it merged, for progress: (JSON Pointer, text, what the
/// text is; see [`crate::progress::Progress::record`]).
pub(super) type Report<'r, 'f> = Option<&'r mut (dyn FnMut(&str, &str, Recorded) + 'f)>;

wire_struct! {
    /// One piece of `partialArgs`.
    #[derive(Default)]
    pub(super) struct Piece<'a> {
        json_path: Option<&'a RawValue> = "jsonPath",
        string_value: Option<&'a RawValue> = "stringValue",
        bool_value: Option<&'a RawValue> = "boolValue",
        number_value: Option<&'a RawValue> = "numberValue",
        /// Present, whatever its value: protobuf's JSON writes a `NullValue` as `null`.
        null_value: bool = "nullValue" => present,
        will_continue: Option<&'a RawValue> = "willContinue";
        /// A value member of a kind this reader does not know (`listValue`, `structValue`): see
        /// [`Piece::noting_other_values`].
        other_value: bool,
    }
}

impl Piece<'_> {
    /// The piece, noting whether `raw` (its JSON text) carries a value member of another kind
    /// than the four this reader knows (any member named `...Value`). Dropped, that value
    /// would be missing from a call that runs: it breaks the call instead.
    pub(super) fn noting_other_values(mut self, raw: &RawValue) -> Self {
        self.other_value = serde_json::from_str::<OtherValue>(raw.get()).is_ok_and(|o| o.0);
        self
    }
}

/// Whether a JSON object has a member named like a value of a kind [`Piece`] does not read.
struct OtherValue(bool);

impl<'de> Deserialize<'de> for OtherValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = OtherValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<OtherValue, A::Error> {
                let mut other = false;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    other |= key.ends_with("Value") && !KNOWN_VALUES.contains(&key.as_ref());
                }
                Ok(OtherValue(other))
            }
        }
        d.deserialize_map(Members)
    }
}

/// The value members a piece is read by.
const KNOWN_VALUES: [&str; 4] = ["stringValue", "boolValue", "numberValue", "nullValue"];

/// One step of a JSON Path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    /// An index; one past `usize` is `usize::MAX`, which no list reaches either.
    Index(usize),
}

/// Why a merge stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Merge {
    /// Merged.
    Done,
    /// Pieces that do not make one object: the adapter's `broken`.
    Broken,
    /// Python would read this in a way this path does not reproduce.
    Unread,
}

/// The arguments merged so far of a call whose pieces are still coming.
#[derive(Debug, Default)]
pub(super) struct Streamed {
    root: Map<String, Value>,
    /// The path of a string piece that said another piece of it follows.
    continuing: Option<Vec<Step>>,
    /// The adapter's `broken`: the call ends `mixed_arguments`.
    pub(super) broken: bool,
    /// Bytes of the pieces merged: each one's decoded path and, for a string, its text. What
    /// the merged value holds grows with it, and it is counted against the stream's limit.
    pub(super) kept: usize,
    /// The high surrogate that ended the last string piece, which said more of the string
    /// follows: the next piece must start with its low half (a UTF-16 producer's pair cut in
    /// two, which Python joins as one character).
    half: Option<u16>,
    /// Lone surrogates held as stand-ins ([`stand_in`]); the merged value may hold fewer (a
    /// piece that breaks the call puts its value nowhere, though the containers on its path
    /// stay, as in Python's value).
    lones: usize,
    /// A piece may have held a real character of the stand-ins' area ([`may_hold_stand_ins`]).
    private: bool,
    /// A lone surrogate was merged: nothing more is reported (no progress item holds it).
    pub(super) silent: bool,
}

impl Streamed {
    /// Merge pieces in order; a piece that cannot be merged breaks the call. Each value merged
    /// into a call not broken goes to `report`, if there is one.
    pub(super) fn merge(
        &mut self,
        pieces: &[Option<Piece<'_>>],
        mut report: Report<'_, '_>,
    ) -> Merge {
        let mut pointer = String::new();
        for piece in pieces {
            let piece = piece.as_ref();
            // Lone surrogates of this piece, held as stand-ins.
            let mut lones = 0;
            for raw in piece.iter().flat_map(|p| [p.json_path, p.string_value]) {
                self.private |= raw.is_some_and(|r| may_hold_stand_ins(r.get()));
            }
            let path = piece
                .and_then(|p| p.json_path)
                .filter(|r| r.get().starts_with('"'))
                .map(|raw| decode_string(raw.get()).ok_or(()));
            let (steps, path_len) = match path {
                None => return self.breaks(),
                Some(Err(())) => return Merge::Unread,
                Some(Ok((text, in_path))) => match parse_path(&text, &mut lones) {
                    // Each stand-in counted as the three bytes Python counts for a lone one.
                    Ok(Some(steps)) => {
                        lones += in_path;
                        (steps, text.len() - in_path)
                    }
                    Ok(None) => return self.breaks(),
                    Err(()) => return Merge::Unread,
                },
            };
            if !matches!(steps.first(), Some(Step::Key(_))) {
                return self.breaks();
            }
            let more = piece
                .and_then(|p| p.will_continue)
                .is_some_and(|w| w.get() == "true");
            let mut in_value = 0;
            let (value, halves) = match piece.map_or(Ok(None), |p| scalar(p, &mut in_value)) {
                Err(Merge::Broken) => return self.breaks(),
                Err(failure) => return failure,
                Ok(Some(value)) => value,
                // A piece with no value starts a string that more pieces continue, or ends
                // the string they continued (protobuf's JSON leaves an empty `stringValue`
                // out). Anywhere else its value is missing (or of a kind the SDK drops), and
                // the call must not run without it.
                Ok(None) if more || self.continuing.as_ref() == Some(&steps) => {
                    (Value::String(String::new()), Halves::default())
                }
                Ok(None) => return self.breaks(),
            };
            // Each half, and each stand-in inside the value, counted as the three bytes Python
            // counts for a lone surrogate.
            let half_bytes =
                3 * (usize::from(halves.low.is_some()) + usize::from(halves.high.is_some()));
            let value_bytes = value.as_str().map_or(0, str::len) - in_value;
            lones += in_value;
            self.kept = self
                .kept
                .saturating_add(path_len + value_bytes + half_bytes);
            let appended = value.is_string() && self.continuing.as_ref() == Some(&steps);
            let mut value = value;
            let held = self.half.take();
            let paired = match (held, halves.low) {
                (Some(high), Some(low)) if appended => surrogate_pair(high, low),
                _ => None,
            };
            if let (Some(pair), Value::String(text)) = (paired, &mut value) {
                text.insert(0, pair);
            } else {
                // Half a pair that the piece beside it does not complete: a lone surrogate,
                // the high one ending the string before, the low one starting this one.
                if held.is_some() {
                    self.settle_half_at(held);
                }
                if let (Some(low), Value::String(text)) = (halves.low, &mut value) {
                    text.insert(0, stand_in(low));
                    lones += 1;
                }
            }
            if let Some(high) = halves.high {
                if more {
                    self.half = Some(high);
                } else if let Value::String(text) = &mut value {
                    text.push(stand_in(high));
                    lones += 1;
                }
            }
            if self.lones + lones > 0 && self.private {
                return Merge::Unread;
            }
            // Nothing is reported from a lone surrogate on: no progress item can hold it.
            self.lones += lones;
            self.silent |= self.lones > 0;
            // Taken before the value moves into the object (only with progress tracking).
            let item = report
                .as_ref()
                .filter(|_| !self.broken && !self.silent)
                .map(|_| item_of(&value, more));
            let mut root = Value::Object(std::mem::take(&mut self.root));
            let put = put(&mut root, &steps, value, appended);
            if let Value::Object(map) = root {
                self.root = map;
            }
            if !put {
                return self.breaks();
            }
            if let (Some(report), Some((text, kind))) = (report.as_mut(), item) {
                pointer.clear();
                push_steps(&mut pointer, &steps);
                report(&pointer, &text, kind);
            }
            self.continuing = more.then_some(steps);
        }
        Merge::Done
    }

    /// Merge whole arguments sent next to the pieces; a member already there breaks the call.
    /// Each member merged into a call not broken goes to `report`, if there is one, value by
    /// value.
    pub(super) fn merge_object(&mut self, args: &RawValue, mut report: Report<'_, '_>) -> Merge {
        let raw = args.get();
        self.private |= may_hold_stand_ins(raw);
        let parsed = serde_json::from_str::<Value>(raw).ok().or_else(|| {
            // A lone surrogate escape, held as its stand-in.
            let (text, lones) = with_stand_ins(raw)?;
            self.lones += lones;
            serde_json::from_str::<Value>(&text).ok()
        });
        let Some(Value::Object(values)) = parsed else {
            // Not an object.
            return self.breaks();
        };
        if self.lones > 0 && self.private {
            return Merge::Unread;
        }
        for (key, value) in values {
            if self.root.contains_key(&key) {
                return self.breaks();
            }
            let Some(value) = python_numbers(value) else {
                return Merge::Unread;
            };
            if let Some(report) = report.as_mut().filter(|_| !self.broken && !self.silent) {
                let mut pointer = String::from("/");
                push_pointer_token(&mut pointer, &key);
                // Nothing is reported from a lone surrogate on: no progress item can hold it.
                self.silent =
                    has_stand_in(&key) || !report_values(&value, &mut pointer, &mut **report);
            }
            self.root.insert(key, value);
        }
        Merge::Done
    }

    /// Whether the last string piece ended on half a surrogate pair whose other half never
    /// came: Python's value holds a lone surrogate there.
    pub(super) fn holds_half(&self) -> bool {
        self.half.is_some()
    }

    /// No piece comes with the other half of the pair the last string piece ended on: that
    /// half is a lone surrogate at the end of its string, as in Python's value. `Unread` when
    /// the call may hold a real character of the stand-ins' area.
    pub(super) fn settle_half(&mut self) -> Merge {
        let held = self.half.take();
        self.settle_half_at(held);
        if self.lones > 0 && self.private {
            Merge::Unread
        } else {
            Merge::Done
        }
    }

    /// Appends the stand-in of the high surrogate `held`, whose pair never came, to the string
    /// the last piece went on with.
    fn settle_half_at(&mut self, held: Option<u16>) {
        let (Some(high), Some(steps)) = (held, self.continuing.as_deref()) else {
            return;
        };
        let lone = Value::String(stand_in(high).to_string());
        let mut root = Value::Object(std::mem::take(&mut self.root));
        // The string the piece before put there: appending to it cannot conflict.
        put(&mut root, steps, lone, true);
        if let Value::Object(map) = root {
            self.root = map;
        }
        self.lones += 1;
        self.silent = true;
    }

    fn breaks(&mut self) -> Merge {
        self.broken = true;
        Merge::Broken
    }

    /// The merged object as `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`
    /// writes it. With a lone surrogate, which that cannot write as UTF-8, as the adapter's
    /// text reaches the core: a value (`whole`, the call closed) is written by the core with
    /// every character past ASCII as its `\uXXXX` escapes (the raw path's `canonical` writes
    /// whole `args` so too); the text of a call cut short has only its lone surrogates
    /// escaped.
    pub(super) fn text(&self, whole: bool) -> String {
        let text = serde_json::to_string(&self.root).unwrap_or_default();
        if self.lones == 0 || !has_stand_in(&text) {
            return text;
        }
        let mut out = String::with_capacity(text.len() * 2);
        for c in text.chars() {
            if c.is_ascii() || !(whole || lone_of(c).is_some()) {
                out.push(c);
                continue;
            }
            let mut units = [0u16; 2];
            let units: &[u16] = match lone_of(c) {
                Some(unit) => {
                    units[0] = unit;
                    &units[..1]
                }
                None => c.encode_utf16(&mut units),
            };
            for unit in units {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
        out
    }
}

/// The value of one piece: `Ok(None)` for none; `Err(Merge::Broken)` for one no reader holds:
/// a value member of the wrong type, or a number no double holds (`1e999`, protobuf's
/// `"Infinity"`), which would otherwise vanish from the arguments the call runs with. Lone
/// surrogates held as stand-ins inside a string are added to `lones`.
fn scalar(piece: &Piece<'_>, lones: &mut usize) -> Result<Option<(Value, Halves)>, Merge> {
    if piece.other_value {
        return Err(Merge::Broken);
    }
    if let Some(raw) = piece.string_value {
        if !raw.get().starts_with('"') {
            return Err(Merge::Broken);
        }
        return string_value(raw.get(), lones).map(|(s, halves)| Some((Value::String(s), halves)));
    }
    let value = if let Some(raw) = piece.bool_value {
        match raw.get() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(Merge::Broken),
        }
    } else if let Some(raw) = piece.number_value {
        number_value(raw.get())?
    } else if piece.null_value {
        Value::Null
    } else {
        return Ok(None);
    };
    Ok(Some((value, Halves::default())))
}

/// Halves of a surrogate pair at the ends of a string piece: a UTF-16 producer that cut a pair
/// between two pieces writes each half as a lone `\uXXXX` escape.
#[derive(Debug, Default, Clone, Copy)]
struct Halves {
    /// A low surrogate the piece starts with (the rest of the last piece's pair).
    low: Option<u16>,
    /// A high surrogate the piece ends with (its pair's other half is in the next piece).
    high: Option<u16>,
}

/// A `stringValue`'s text (a JSON string, quotes included), without a low surrogate escape it
/// starts with or a high one it ends with, and those halves. A lone surrogate anywhere else is
/// held as its stand-in, counted in `lones`.
fn string_value(raw: &str, lones: &mut usize) -> Result<(String, Halves), Merge> {
    const ESCAPE: usize = "\\uXXXX".len();
    let mut halves = Halves::default();
    // The text between the quotes.
    let mut inner = raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default();
    // The first escape's backslash cannot itself be escaped.
    if let Some(low) = inner
        .get(..ESCAPE)
        .and_then(escaped_unit)
        .filter(|u| (0xDC00..0xE000).contains(u))
    {
        halves.low = Some(low);
        inner = inner.get(ESCAPE..).unwrap_or_default();
    }
    if let Some(start) = inner.len().checked_sub(ESCAPE) {
        let backslashes = inner.as_bytes()[..start]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        // An escape only if its backslash is not the second of an escaped one.
        if let Some(high) = inner
            .get(start..)
            .filter(|_| backslashes % 2 == 0)
            .and_then(escaped_unit)
            .filter(|u| (0xD800..0xDC00).contains(u))
        {
            halves.high = Some(high);
            inner = inner.get(..start).unwrap_or_default();
        }
    }
    let text = if halves.low.is_none() && halves.high.is_none() {
        decode_string(raw)
    } else {
        decode_string(&format!("\"{inner}\""))
    };
    let (text, found) = text.ok_or(Merge::Broken)?;
    *lones += found;
    Ok((text, halves))
}

/// The JSON string literal `raw` decoded, with the lone surrogates in it held as stand-ins
/// ([`stand_in`]), and how many; `None` when it is no JSON string.
fn decode_string(raw: &str) -> Option<(String, usize)> {
    if let Ok(text) = serde_json::from_str::<String>(raw) {
        return Some((text, 0));
    }
    let (text, lones) = with_stand_ins(raw)?;
    Some((serde_json::from_str::<String>(&text).ok()?, lones))
}

/// The first of the 2,048 characters of Supplementary Private Use Area-A that stand in for
/// lone surrogates, U+D800 to U+DFFF in order: a lone one, which a Python `str` holds, has no
/// place in a Rust string, and is written back as its escape ([`Streamed::text`]).
const STAND_INS: u32 = 0xF0000;

/// The stand-in of the lone surrogate `unit`.
fn stand_in(unit: u16) -> char {
    char::from_u32(STAND_INS + u32::from(unit).saturating_sub(0xD800)).unwrap_or('\u{FFFD}')
}

/// The lone surrogate that `c` stands in for, if it is a stand-in.
fn lone_of(c: char) -> Option<u16> {
    let offset = u32::from(c).checked_sub(STAND_INS).filter(|o| *o < 0x800)?;
    u16::try_from(0xD800 + offset).ok()
}

/// Whether `text` holds a stand-in.
fn has_stand_in(text: &str) -> bool {
    text.chars().any(|c| lone_of(c).is_some())
}

/// Whether the JSON text `raw` may hold a real character of the stand-ins' area: as UTF-8 (its
/// first byte, 0xF3, leads every character from U+C0000 to U+FFFFF) or as the escape of its
/// high surrogate (U+DB80 to U+DB8F lead U+F0000 to U+F3FFF). A superset, cheap to ask: what
/// it catches is written back as `lost_event` only when the call holds a lone surrogate too.
fn may_hold_stand_ins(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    memchr::memchr(0xF3, bytes).is_some()
        || memchr::memchr_iter(b'\\', bytes).any(|at| {
            bytes
                .get(at + 1..at + 5)
                .is_some_and(|h| h.eq_ignore_ascii_case(b"udb8"))
        })
}

/// The JSON text `raw` with each lone surrogate escape in its strings replaced by its stand-in
/// (as UTF-8, which a JSON string holds as it is), and how many; `None` when it holds none.
fn with_stand_ins(raw: &str) -> Option<(String, usize)> {
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let (mut copied, mut lones, mut at) = (0, 0, 0);
    while let Some(found) = memchr::memchr(b'\\', &bytes[at..]) {
        let start = at + found;
        let unit = (bytes.get(start + 1) == Some(&b'u'))
            .then(|| raw.get(start..start + 6).and_then(super::escaped_unit))
            .flatten();
        let Some(unit) = unit else {
            // Any other escape: two characters, the second maybe a backslash.
            at = start + 2;
            continue;
        };
        at = start + 6;
        if !(0xD800..0xE000).contains(&unit) {
            continue;
        }
        let low = raw.get(at..at + 6).and_then(super::escaped_unit);
        if unit < 0xDC00 && low.is_some_and(|l| (0xDC00..0xE000).contains(&l)) {
            // A pair, which serde_json reads.
            at += 6;
            continue;
        }
        out.push_str(&raw[copied..start]);
        out.push(stand_in(unit));
        copied = at;
        lones += 1;
    }
    if lones == 0 {
        return None;
    }
    out.push_str(&raw[copied..]);
    Some((out, lones))
}

/// The character of a high and a low surrogate.
fn surrogate_pair(high: u16, low: u16) -> Option<char> {
    char::decode_utf16([high, low]).next()?.ok()
}

/// A `numberValue` (a number, or its text as a string).
fn number_value(text: &str) -> Result<Value, Merge> {
    // Protobuf's JSON may write a double as a string: its number text (or `"Infinity"` and
    // `"NaN"`, which no JSON number holds).
    let lexeme = if text.starts_with('"') {
        serde_json::from_str::<String>(text).map_err(|_| Merge::Broken)?
    } else {
        text.to_owned()
    };
    if !is_number_lexeme(lexeme.as_bytes()) {
        return Err(Merge::Broken);
    }
    python_number(&lexeme, true)
        .map(|n| number(&n))
        .ok_or(Merge::Broken)
}

/// A merged piece's value as a progress item: a string's text, appended to the string at its
/// path (which ends unless `more` of it comes), or the JSON text the merged object writes for
/// a number or literal.
fn item_of(value: &Value, more: bool) -> (String, Recorded) {
    match value {
        Value::String(text) => (text.clone(), Recorded::String { ends: !more }),
        other => (other.to_string(), Recorded::Scalar),
    }
}

/// Appends the JSON Pointer of `steps` to `out`.
fn push_steps(out: &mut String, steps: &[Step]) {
    for step in steps {
        out.push('/');
        match step {
            Step::Key(key) => push_pointer_token(out, key),
            Step::Index(i) => {
                let _ = write!(out, "{i}");
            }
        }
    }
}

/// Reports every string, number and literal inside `value`, which sits at `pointer`, as one
/// complete item each, in document order, up to a lone surrogate (its stand-in, in a key or a
/// string), which no item holds: false once one was met. A `Value` is at most as deep as
/// serde_json reads one (128 levels), which bounds the recursion.
fn report_values(
    value: &Value,
    pointer: &mut String,
    report: &mut dyn FnMut(&str, &str, Recorded),
) -> bool {
    let len = pointer.len();
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                if has_stand_in(key) {
                    return false;
                }
                pointer.push('/');
                push_pointer_token(pointer, key);
                let more = report_values(member, pointer, report);
                pointer.truncate(len);
                if !more {
                    return false;
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let _ = write!(pointer, "/{i}");
                let more = report_values(item, pointer, report);
                pointer.truncate(len);
                if !more {
                    return false;
                }
            }
        }
        Value::String(text) if has_stand_in(text) => return false,
        Value::String(text) => report(pointer, text, Recorded::String { ends: true }),
        other => report(pointer, &other.to_string(), Recorded::Scalar),
    }
    true
}

/// True for a member that is there, `null` included (an `Option` reads `null` as absent).
#[allow(clippy::unnecessary_wraps)] // the form of a `wire_struct!` reader
fn present<E>(member: Option<&RawValue>) -> Result<bool, E> {
    Ok(member.is_some())
}

fn number(text: &str) -> Value {
    serde_json::from_str::<Number>(text).map_or(Value::Null, Value::Number)
}

/// `value` with its numbers as Python writes them back; `None` for one it writes as no JSON.
fn python_numbers(value: Value) -> Option<Value> {
    Some(match value {
        Value::Number(n) => number(&python_number(&n.to_string(), false)?),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(python_numbers)
                .collect::<Option<_>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| Some((k, python_numbers(v)?)))
                .collect::<Option<_>>()?,
        ),
        other => other,
    })
}

/// The JSON number `lexeme` as Python writes the number `json.loads` made of it; with
/// `double`, read as a protobuf double (`_scalar`: integral within 2^53 is an integer). `None`
/// for a float that is not finite.
fn python_number(lexeme: &str, double: bool) -> Option<String> {
    if !lexeme.contains(['.', 'e', 'E']) {
        // An `int`: its digits (a JSON integer has no leading zeros), `-0` being `0`.
        return Some(if lexeme == "-0" {
            "0".to_owned()
        } else {
            lexeme.to_owned()
        });
    }
    let f: f64 = lexeme.parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    if double && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        // Exact: an integral double below 2^53 fits an i64.
        #[allow(clippy::cast_possible_truncation)]
        return Some((f as i64).to_string());
    }
    Some(float_repr(f))
}

/// Python's `repr` of a finite float: the shortest digits that read back as `f` (Rust's
/// `{:e}` finds the same), fixed notation for a decimal exponent from -4 to 15, else
/// `d.ddde±XX`.
fn float_repr(f: f64) -> String {
    let shortest = format!("{f:e}");
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    // The position of the decimal point after the first digit: 0.d1d2... x 10^point.
    let point = exponent + 1;
    let mut out = String::from(sign);
    if point <= -4 || point > 16 {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = point - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    } else if point <= 0 {
        out.push_str("0.");
        for _ in 0..-point {
            out.push('0');
        }
        out.push_str(&digits);
    } else if point >= n {
        out.push_str(&digits);
        for _ in 0..point - n {
            out.push('0');
        }
        out.push_str(".0");
    } else {
        let cut = usize::try_from(point).unwrap_or(0);
        out.push_str(&digits[..cut]);
        out.push('.');
        out.push_str(&digits[cut..]);
    }
    out
}

/// The steps of a JSON Path such as `$.a['b c'][0]` as the adapter's `_path` reads them:
/// `Ok(None)` when it is not one, `Err` where Python would read what this path cannot. A lone
/// surrogate escape in a quoted name is held as its stand-in, counted in `lones`.
fn parse_path(text: &str, lones: &mut usize) -> Result<Option<Vec<Step>>, ()> {
    let Some(mut rest) = text.strip_prefix('$') else {
        return Ok(None);
    };
    let mut steps = Vec::new();
    while !rest.is_empty() {
        let step;
        if let Some(after) = rest.strip_prefix('.') {
            let end = after
                .find(['.', '[', ']', '\'', '"'])
                .unwrap_or(after.len());
            if end == 0 {
                return Ok(None);
            }
            step = Step::Key(after[..end].to_owned());
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let digits = after.find(|c: char| !c.is_numeric()).unwrap_or(after.len());
            if digits > 0 {
                if !after[..digits].bytes().all(|b| b.is_ascii_digit()) {
                    // Python's `\d` takes any decimal digit, and `int` reads it.
                    return Err(());
                }
                let Some(tail) = after[digits..].strip_prefix(']') else {
                    return Ok(None);
                };
                step = Step::Index(after[..digits].parse().unwrap_or(usize::MAX));
                rest = tail;
            } else if let Some(quote) = after.chars().next().filter(|c| matches!(c, '\'' | '"')) {
                let body = &after[1..];
                let Some(end) = quoted_end(body, quote) else {
                    return Ok(None);
                };
                let Some(tail) = body[end + 1..].strip_prefix(']') else {
                    return Ok(None);
                };
                let inner = &body[..end];
                let inner = if quote == '\'' {
                    inner.replace("\\'", "'")
                } else {
                    inner.to_owned()
                };
                step = match decode_string(&format!("\"{inner}\"")) {
                    Some((key, found)) => {
                        *lones += found;
                        Step::Key(key)
                    }
                    None => return Ok(None),
                };
                rest = tail;
            } else {
                return Ok(None);
            }
        } else {
            return Ok(None);
        }
        steps.push(step);
    }
    Ok(Some(steps))
}

/// Where the quoted name `body` (after its opening `quote`) ends: the first unescaped `quote`,
/// a backslash taking any one character but a newline (the regex's `\\.`).
fn quoted_end(body: &str, quote: char) -> Option<usize> {
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some((_, '\n')) | None => return None,
                Some(_) => {}
            }
        } else if c == quote {
            return Some(i);
        }
    }
    None
}

/// Set `value` at `steps` inside `root`, creating containers; false on a shape conflict.
fn put(root: &mut Value, steps: &[Step], value: Value, append: bool) -> bool {
    let Some((last, inner)) = steps.split_last() else {
        return false;
    };
    let mut node = root;
    for (i, step) in inner.iter().enumerate() {
        let want_object = matches!(steps.get(i + 1), Some(Step::Key(_)));
        let Some(next) = child(node, step, want_object) else {
            return false;
        };
        node = next;
    }
    match (node, last) {
        (Value::Object(map), Step::Key(key)) => set(map, key, value, append),
        (Value::Array(items), Step::Index(i)) => {
            if let (true, Some(Value::String(s)), Value::String(more)) =
                (append, items.get_mut(*i), &value)
            {
                s.push_str(more);
            } else if *i == items.len() {
                items.push(value);
            } else {
                return false;
            }
            true
        }
        _ => false,
    }
}

fn set(map: &mut Map<String, Value>, key: &str, value: Value, append: bool) -> bool {
    if let (true, Some(Value::String(s)), Value::String(more)) = (append, map.get_mut(key), &value)
    {
        s.push_str(more);
        return true;
    }
    if map.contains_key(key) {
        return false;
    }
    map.insert(key.to_owned(), value);
    true
}

fn empty(object: bool) -> Value {
    if object {
        Value::Object(Map::new())
    } else {
        Value::Array(Vec::new())
    }
}

fn same_shape(value: &Value, object: bool) -> bool {
    if object {
        value.is_object()
    } else {
        value.is_array()
    }
}

/// The container at `step` in `node`, created if absent; `None` on a conflict.
fn child<'v>(node: &'v mut Value, step: &Step, object: bool) -> Option<&'v mut Value> {
    let child = match (node, step) {
        (Value::Object(map), Step::Key(key)) => match map.entry(key.clone()) {
            serde_json::map::Entry::Vacant(v) => v.insert(empty(object)),
            serde_json::map::Entry::Occupied(o) => o.into_mut(),
        },
        (Value::Array(items), Step::Index(i)) => {
            if *i == items.len() {
                items.push(empty(object));
            }
            items.get_mut(*i)?
        }
        _ => return None,
    };
    same_shape(child, object).then_some(child)
}

#[cfg(test)]
mod tests {
    use super::{float_repr, parse_path, python_number, Merge, Piece, Step, Streamed};
    use crate::progress::Recorded;

    /// Merges the pieces of a JSON list, then `args` if any, as `gemini.rs` does; returns the
    /// verdict and the items reported, (path, text, what).
    fn merged(
        streamed: &mut Streamed,
        pieces: &str,
        args: Option<&str>,
    ) -> (Merge, Vec<(String, String, Recorded)>) {
        let pieces: Vec<Option<Piece<'_>>> = serde_json::from_str(pieces).expect("pieces");
        let mut items = Vec::new();
        let mut record = |path: &str, text: &str, what: Recorded| {
            items.push((path.to_owned(), text.to_owned(), what));
        };
        let mut verdict = streamed.merge(&pieces, Some(&mut record));
        if let (Merge::Done, Some(args)) = (verdict, args) {
            let raw: Box<serde_json::value::RawValue> = serde_json::from_str(args).expect("args");
            verdict = streamed.merge_object(&raw, Some(&mut record));
        }
        (verdict, items)
    }

    fn string(path: &str, text: &str, ends: bool) -> (String, String, Recorded) {
        (path.to_owned(), text.to_owned(), Recorded::String { ends })
    }

    fn scalar(path: &str, text: &str) -> (String, String, Recorded) {
        (path.to_owned(), text.to_owned(), Recorded::Scalar)
    }

    /// The verdict of merging the pieces of a JSON list, each read as `gemini.rs` reads it.
    fn verdict(pieces: &str) -> (Merge, String) {
        let raws: Vec<&serde_json::value::RawValue> = serde_json::from_str(pieces).expect("list");
        let pieces: Vec<Option<Piece<'_>>> = raws
            .iter()
            .map(|raw| {
                let piece: Piece<'_> = serde_json::from_str(raw.get()).expect("piece");
                Some(piece.noting_other_values(raw))
            })
            .collect();
        let mut streamed = Streamed::default();
        (streamed.merge(&pieces, None), streamed.text(true))
    }

    #[test]
    fn a_piece_whose_value_is_missing_or_unknown_breaks_the_call() {
        for piece in [
            r#"{"jsonPath": "$.b"}"#,
            r#"{"jsonPath": "$.b", "listValue": {"values": [true]}}"#,
            r#"{"jsonPath": "$.b", "structValue": {"max": 5}}"#,
            r#"{"jsonPath": "$.b", "stringValue": "x", "listValue": {}}"#,
        ] {
            let pieces = format!(r#"[{{"jsonPath": "$.a", "stringValue": "x"}}, {piece}]"#);
            assert_eq!(verdict(&pieces).0, Merge::Broken, "{piece}");
        }
        // No value where a string goes on ends it (an empty last piece left out).
        let pieces = r#"[{"jsonPath": "$.a", "stringValue": "x", "willContinue": true},
                         {"jsonPath": "$.a"}, {"jsonPath": "$.b", "boolValue": true}]"#;
        assert_eq!(
            verdict(pieces),
            (Merge::Done, r#"{"a":"x","b":true}"#.to_owned())
        );
    }

    #[test]
    fn each_value_merged_is_reported_at_its_pointer() {
        let mut streamed = Streamed::default();
        let (verdict, items) = merged(
            &mut streamed,
            r#"[{"jsonPath": "$['a/b~c'].d", "stringValue": "x", "willContinue": true},
                {"jsonPath": "$['a/b~c'].d", "stringValue": "y"},
                {"jsonPath": "$.n[0]", "numberValue": 3.0},
                {"jsonPath": "$.n[1]", "numberValue": 1e20},
                {"jsonPath": "$.n[2]", "numberValue": "2.5"},
                {"jsonPath": "$.t", "boolValue": false},
                {"jsonPath": "$.z", "nullValue": null},
                {"jsonPath": "$.e", "willContinue": true}]"#,
            Some(r#"{"w": {"k~": [1.50, "s"]}}"#),
        );
        assert_eq!(verdict, Merge::Done);
        assert_eq!(
            items,
            [
                string("/a~1b~0c/d", "x", false),
                string("/a~1b~0c/d", "y", true),
                scalar("/n/0", "3"),
                scalar("/n/1", "1e+20"),
                scalar("/n/2", "2.5"),
                scalar("/t", "false"),
                scalar("/z", "null"),
                string("/e", "", false),
                scalar("/w/k~0/0", "1.5"),
                string("/w/k~0/1", "s", true),
            ]
        );
        // The same numbers as the merged object writes.
        assert_eq!(
            streamed.text(true),
            r#"{"a/b~c":{"d":"xy"},"n":[3,1e+20,2.5],"t":false,"z":null,"e":"","w":{"k~":[1.5,"s"]}}"#
        );
    }

    #[test]
    fn nothing_is_reported_for_a_piece_that_breaks_the_call_nor_after_it() {
        let mut streamed = Streamed::default();
        let (verdict, items) = merged(
            &mut streamed,
            r#"[{"jsonPath": "$.a", "numberValue": 5, "willContinue": true},
                {"jsonPath": "$.a", "stringValue": "x"},
                {"jsonPath": "$.b", "stringValue": "y"}]"#,
            None,
        );
        assert_eq!(verdict, Merge::Broken);
        assert_eq!(items, [scalar("/a", "5")]);
        // Pieces that still come for the broken call (the adapter merges them) report nothing.
        let (_, items) = merged(
            &mut streamed,
            r#"[{"jsonPath": "$.c", "stringValue": "z"}]"#,
            Some(r#"{"d": 1}"#),
        );
        assert_eq!(items, []);

        // A lone surrogate, which no item holds, is merged and reported no more, nor is what
        // follows it.
        let mut streamed = Streamed::default();
        let (verdict, items) = merged(
            &mut streamed,
            r#"[{"jsonPath": "$.a", "stringValue": "x"},
                {"jsonPath": "$.b", "stringValue": "\ud800"},
                {"jsonPath": "$.c", "stringValue": "z"}]"#,
            Some(r#"{"d": 1}"#),
        );
        assert_eq!(verdict, Merge::Done);
        assert!(streamed.silent);
        assert_eq!(items, [string("/a", "x", true)]);
        assert_eq!(
            streamed.text(true),
            r#"{"a":"x","b":"\ud800","c":"z","d":1}"#
        );
        // In whole arguments next to the pieces, the values before it are reported.
        let mut streamed = Streamed::default();
        let (verdict, items) = merged(
            &mut streamed,
            "[]",
            Some(r#"{"a": [1, "\udc00", 2], "\ud800": 3}"#),
        );
        assert_eq!(verdict, Merge::Done);
        assert_eq!(items, [scalar("/a/0", "1")]);
        assert_eq!(streamed.text(true), r#"{"a":[1,"\udc00",2],"\ud800":3}"#);
        // A piece that breaks the call leaves the containers of its path, a lone surrogate in
        // a name among them, and puts its value (another lone one) nowhere.
        let mut streamed = Streamed::default();
        let pieces = r#"[{"jsonPath": "$.a", "stringValue": "é"},
                         {"jsonPath": "$.t\ud83d[1]", "stringValue": "x"},
                         {"jsonPath": "$.u[1]", "stringValue": "\ud83d"}]"#;
        assert_eq!(merged(&mut streamed, pieces, None).0, Merge::Broken);
        assert_eq!(streamed.text(true), r#"{"a":"\u00e9","t\ud83d":[]}"#);
        let mut streamed = Streamed::default();
        let pieces = r#"[{"jsonPath": "$.a", "stringValue": "é"},
                         {"jsonPath": "$.u[1]", "stringValue": "\ud83d"}]"#;
        assert_eq!(merged(&mut streamed, pieces, None).0, Merge::Broken);
        assert_eq!(streamed.text(true), r#"{"a":"é","u":[]}"#);
        // Beside a lone surrogate, every character past ASCII is written as its escapes.
        let mut streamed = Streamed::default();
        merged(&mut streamed, "[]", Some(r#"{"k\ud800": "é😀"}"#));
        assert_eq!(streamed.text(true), r#"{"k\ud800":"\u00e9\ud83d\ude00"}"#);
    }

    #[test]
    fn a_surrogate_pair_cut_between_pieces_of_a_string_is_one_character() {
        let mut streamed = Streamed::default();
        let (verdict, items) = merged(
            &mut streamed,
            r#"[{"jsonPath": "$.a", "stringValue": "x\ud83d", "willContinue": true},
                {"jsonPath": "$.a", "stringValue": "\ude00\\ud83d", "willContinue": true},
                {"jsonPath": "$.a", "stringValue": "\ud83c\udf38\ud83c", "willContinue": true},
                {"jsonPath": "$.a", "stringValue": "\udf38"}]"#,
            None,
        );
        assert_eq!(verdict, Merge::Done);
        assert!(!streamed.holds_half());
        assert_eq!(streamed.text(true), r#"{"a":"x😀\\ud83d🌸🌸"}"#);
        // The held half is in no item until its pair is whole.
        assert_eq!(
            items,
            [
                string("/a", "x", false),
                string("/a", "😀\\ud83d", false),
                string("/a", "🌸", false),
                string("/a", "🌸", true),
            ]
        );
        // Counted as Python counts the pieces: each half as the three bytes of a lone one.
        assert_eq!(streamed.kept, 3 * 4 + (1 + 3) + (3 + 6) + (4 + 3) + 3);
    }

    #[test]
    fn a_surrogate_half_without_its_pair_is_written_back_as_its_escape() {
        for (pieces, text, kept) in [
            // The string ends on a high half, or goes on at another path.
            (
                r#"[{"jsonPath": "$.a", "stringValue": "x\ud83d"}]"#,
                r#"{"a":"x\ud83d"}"#,
                3 + 1 + 3,
            ),
            (
                r#"[{"jsonPath": "$.a", "stringValue": "x\ud83d", "willContinue": true},
                    {"jsonPath": "$.b", "stringValue": "\ude00"}]"#,
                r#"{"a":"x\ud83d","b":"\ude00"}"#,
                3 + 1 + 3 + 3 + 3,
            ),
            (
                r#"[{"jsonPath": "$.a", "stringValue": "x\ud83d", "willContinue": true},
                    {"jsonPath": "$.a", "stringValue": "y"}]"#,
                r#"{"a":"x\ud83dy"}"#,
                3 + 1 + 3 + 3 + 1,
            ),
            // A low half with no high half before it.
            (
                r#"[{"jsonPath": "$.a", "stringValue": "\ude00"}]"#,
                r#"{"a":"\ude00"}"#,
                3 + 3,
            ),
            // A half inside a piece, not at its end, and one in a name.
            (
                r#"[{"jsonPath": "$.a", "stringValue": "\ud83dx", "willContinue": true}]"#,
                r#"{"a":"\ud83dx"}"#,
                3 + 3 + 1,
            ),
            (
                r#"[{"jsonPath": "$.\udc00", "stringValue": "x"}]"#,
                r#"{"\udc00":"x"}"#,
                5 + 1,
            ),
        ] {
            let mut streamed = Streamed::default();
            assert_eq!(
                merged(&mut streamed, pieces, None).0,
                Merge::Done,
                "{pieces}"
            );
            assert_eq!(streamed.text(true), text, "{pieces}");
            // Counted as Python counts it: a lone surrogate as its three bytes.
            assert_eq!(streamed.kept, kept, "{pieces}");
        }
        // A high half still waiting when the pieces stop: `gemini.rs` settles it at the close.
        let mut streamed = Streamed::default();
        let pieces = r#"[{"jsonPath": "$.a", "stringValue": "x\ud83d", "willContinue": true}]"#;
        assert_eq!(merged(&mut streamed, pieces, None).0, Merge::Done);
        assert!(streamed.holds_half());
        assert_eq!(streamed.settle_half(), Merge::Done);
        assert_eq!(streamed.text(true), r#"{"a":"x\ud83d"}"#);
    }

    #[test]
    fn a_lone_surrogate_beside_a_private_use_character_is_unread() {
        // U+F0000 stands in for U+D800: with both, the text could not be written back.
        for pieces in [
            "[{\"jsonPath\": \"$.a\", \"stringValue\": \"\u{F0000}\"},
              {\"jsonPath\": \"$.b\", \"stringValue\": \"\\ud800\"}]",
            r#"[{"jsonPath": "$.b", "stringValue": "\ud800"},
                {"jsonPath": "$.a", "stringValue": "\udb80\udc00"}]"#,
        ] {
            let mut streamed = Streamed::default();
            assert_eq!(
                merged(&mut streamed, pieces, None).0,
                Merge::Unread,
                "{pieces}"
            );
        }
        // Alone, it is a character like any other.
        let mut streamed = Streamed::default();
        let pieces = "[{\"jsonPath\": \"$.a\", \"stringValue\": \"\u{F0000}\"}]";
        assert_eq!(merged(&mut streamed, pieces, None).0, Merge::Done);
        assert_eq!(streamed.text(true), "{\"a\":\"\u{F0000}\"}");
    }

    #[test]
    fn floats_are_written_as_python_repr_writes_them() {
        for (f, want) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e100, "1e+100"),
            (-123.456, "-123.456"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (100_000.0, "100000.0"),
        ] {
            assert_eq!(float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn numbers_are_read_as_json_loads_reads_them() {
        let n = |lexeme, double| python_number(lexeme, double);
        assert_eq!(n("3", true).as_deref(), Some("3"));
        assert_eq!(n("-0", false).as_deref(), Some("0"));
        assert_eq!(n("3.0", true).as_deref(), Some("3"));
        assert_eq!(n("3.0", false).as_deref(), Some("3.0"));
        assert_eq!(n("-0.0", true).as_deref(), Some("0"));
        assert_eq!(n("1e20", true).as_deref(), Some("1e+20"));
        assert_eq!(n("1E5", false).as_deref(), Some("100000.0"));
        assert_eq!(n("1e400", true), None);
        assert_eq!(
            n("123456789012345678901234567890", false).as_deref(),
            Some("123456789012345678901234567890")
        );
    }

    fn path(text: &str) -> Result<Option<Vec<Step>>, ()> {
        parse_path(text, &mut 0)
    }

    #[test]
    fn paths_are_read_as_the_adapter_reads_them() {
        let key = |k: &str| Step::Key(k.to_owned());
        assert_eq!(
            path("$.a['b c'][0][\"d\\\"e\"]['f\\'g']"),
            Ok(Some(vec![
                key("a"),
                key("b c"),
                Step::Index(0),
                key("d\"e"),
                key("f'g")
            ]))
        );
        assert_eq!(path("$"), Ok(Some(vec![])));
        assert_eq!(path("a.b"), Ok(None));
        assert_eq!(path("$.a."), Ok(None));
        assert_eq!(path("$[1"), Ok(None));
        assert_eq!(path("$['a]"), Ok(None));
        assert_eq!(path("$[\"a\nb\"]"), Ok(None));
        assert_eq!(path("$[\"\\ud800\"]"), Ok(Some(vec![key("\u{F0000}")])));
        assert_eq!(path("$[\u{661}]"), Err(()));
    }
}
