//! Builds values from text the scanner has already accepted: the final value of a complete
//! text, or the partial value of a prefix (spec "Partial values", rules R2-R9).
//!
//! Design notes:
//! - The builder trusts its input: it only ever sees a prefix the scanner validated, so it does
//!   no grammar checks and can use tight loops. Cost is O(size of the text) per call, and nothing
//!   at all when nobody asks for a value.
//! - Output goes through the [`Sink`] trait, so the same walk produces the Rust [`Value`] used in
//!   tests and by Rust callers, and (in the binding) Python objects directly, without an
//!   intermediate tree.
//! - Partial rules: containers appear as soon as they open (R2); a member appears once its key is
//!   closed and its value is reportable (R3); the open string shows its decoded text minus any
//!   unfinished tail (R4); a number touching the end of a prefix is pending (R5) unless
//!   `eager_numbers`; literals appear when complete (R6); nothing reportable is `None` (R7).
//! - Completeness flags (R9) are asked for, not always made: with [`BuildOptions::flags`] the
//!   builder hands each node to [`Sink::flag`] once it is made, saying whether the text ended
//!   inside it. Without the option the hook is never called, so the plain view pays one
//!   predictable branch per node and sinks that ignore flags need not know about them.

use crate::scanner::short_escape;

/// A JSON value. Numbers keep their exact lexeme.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, as the exact text the model wrote.
    Number(String),
    /// A decoded string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, members in document order (duplicates resolved last-wins, in the first
    /// position, as Python's `json.loads` does).
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The value as compact JSON text: numbers as their lexemes, strings escaped as JSON
    /// requires and nothing more.
    #[must_use]
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Self::Null => out.extend_from_slice(b"null"),
            Self::Bool(true) => out.extend_from_slice(b"true"),
            Self::Bool(false) => out.extend_from_slice(b"false"),
            Self::Number(lexeme) => out.extend_from_slice(lexeme.as_bytes()),
            Self::String(s) => write_json_string(s, out),
            Self::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write_json(out);
                }
                out.push(b']');
            }
            Self::Object(members) => {
                out.push(b'{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_json_string(key, out);
                    out.push(b':');
                    value.write_json(out);
                }
                out.push(b'}');
            }
        }
    }
}

fn write_json_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in s.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0..=0x1f => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// How unfinished strings appear in a partial value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StringMode {
    /// Show the open string with what has been decoded so far (default).
    #[default]
    Trailing,
    /// Hide members and elements whose string is still open.
    Off,
}

/// Options for building a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BuildOptions {
    /// True when `text` is the complete text (the scanner finished without error): a number that
    /// touches the end is then complete.
    pub complete: bool,
    /// How an open string is shown.
    pub strings: StringMode,
    /// Report a pending number's longest valid prefix (`12` for `12`, nothing for `1.`).
    pub eager_numbers: bool,
    /// Objects may repeat keys (last wins); the sink must then replace earlier members.
    pub duplicate_keys: bool,
    /// Hand every node to [`Sink::flag`] with its completeness (R9).
    pub flags: bool,
}

/// What the caller chooses about a partial view; whether the text is complete and how repeated
/// keys read come from the text's scanner instead (see [`BuildOptions::for_partial`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartialOptions {
    /// How an open string is shown.
    pub strings: StringMode,
    /// Report a pending number's longest valid prefix.
    pub eager_numbers: bool,
    /// Tell the sink each node's completeness (R9).
    pub flags: bool,
}

impl BuildOptions {
    /// Options for a complete text the scanner accepted, read with its duplicate-key policy.
    #[must_use]
    pub fn for_complete(duplicate_keys: bool) -> Self {
        Self {
            complete: true,
            duplicate_keys,
            ..Self::default()
        }
    }

    /// Options for a prefix the scanner accepted: `complete` when it is the whole text, read
    /// with the scanner's duplicate-key policy and shown as `view` asks.
    #[must_use]
    pub fn for_partial(view: PartialOptions, complete: bool, duplicate_keys: bool) -> Self {
        Self {
            complete,
            strings: view.strings,
            eager_numbers: view.eager_numbers,
            duplicate_keys,
            flags: view.flags,
        }
    }
}

/// Receives the values the builder produces.
pub trait Sink {
    /// A finished value.
    type Value;
    /// An array under construction.
    type Array;
    /// An object under construction.
    type Object;
    /// An object key.
    type Key;
    /// Failure to produce a value (e.g. a Python error).
    type Error;

    /// `null`
    ///
    /// # Errors
    /// Sink-specific.
    fn null(&mut self) -> Result<Self::Value, Self::Error>;
    /// `true` / `false`
    ///
    /// # Errors
    /// Sink-specific.
    fn boolean(&mut self, value: bool) -> Result<Self::Value, Self::Error>;
    /// A number from its exact, valid lexeme.
    ///
    /// # Errors
    /// Sink-specific.
    fn number(&mut self, lexeme: &str) -> Result<Self::Value, Self::Error>;
    /// A decoded string.
    ///
    /// # Errors
    /// Sink-specific.
    fn string(&mut self, value: &str) -> Result<Self::Value, Self::Error>;
    /// A new, empty array.
    ///
    /// # Errors
    /// Sink-specific.
    fn array(&mut self) -> Result<Self::Array, Self::Error>;
    /// Appends an element.
    ///
    /// # Errors
    /// Sink-specific.
    fn push(&mut self, array: &mut Self::Array, value: Self::Value) -> Result<(), Self::Error>;
    /// Finishes an array.
    ///
    /// # Errors
    /// Sink-specific.
    fn end_array(&mut self, array: Self::Array) -> Result<Self::Value, Self::Error>;
    /// A new, empty object.
    ///
    /// # Errors
    /// Sink-specific.
    fn object(&mut self) -> Result<Self::Object, Self::Error>;
    /// An object key, made before its value is read (so the builder keeps no copy of it).
    ///
    /// # Errors
    /// Sink-specific.
    fn key(&mut self, key: &str) -> Result<Self::Key, Self::Error>;
    /// Sets a member; with `replace`, an existing member of that key must be replaced in place.
    ///
    /// # Errors
    /// Sink-specific.
    fn set(
        &mut self,
        object: &mut Self::Object,
        key: Self::Key,
        value: Self::Value,
        replace: bool,
    ) -> Result<(), Self::Error>;
    /// Finishes an object.
    ///
    /// # Errors
    /// Sink-specific.
    fn end_object(&mut self, object: Self::Object) -> Result<Self::Value, Self::Error>;
    /// Marks a node just made (a scalar, or a container after its last member) with its
    /// completeness (R9): `complete` is false exactly when the text ended inside it, so later
    /// text may still extend it. Called once per node, before the node goes into its parent,
    /// and only when [`BuildOptions::flags`] is set; by default the node is kept as it is.
    ///
    /// # Errors
    /// Sink-specific.
    fn flag(&mut self, value: Self::Value, complete: bool) -> Result<Self::Value, Self::Error> {
        let _ = complete;
        Ok(value)
    }
}

/// Builds the Rust [`Value`] tree.
#[derive(Debug, Default, Clone, Copy)]
pub struct ValueSink;

impl Sink for ValueSink {
    type Value = Value;
    type Array = Vec<Value>;
    type Object = Vec<(String, Value)>;
    type Key = String;
    type Error = std::convert::Infallible;

    fn null(&mut self) -> Result<Value, Self::Error> {
        Ok(Value::Null)
    }
    fn boolean(&mut self, value: bool) -> Result<Value, Self::Error> {
        Ok(Value::Bool(value))
    }
    fn number(&mut self, lexeme: &str) -> Result<Value, Self::Error> {
        Ok(Value::Number(lexeme.to_owned()))
    }
    fn string(&mut self, value: &str) -> Result<Value, Self::Error> {
        Ok(Value::String(value.to_owned()))
    }
    fn array(&mut self) -> Result<Vec<Value>, Self::Error> {
        Ok(Vec::new())
    }
    fn push(&mut self, array: &mut Vec<Value>, value: Value) -> Result<(), Self::Error> {
        array.push(value);
        Ok(())
    }
    fn end_array(&mut self, array: Vec<Value>) -> Result<Value, Self::Error> {
        Ok(Value::Array(array))
    }
    fn object(&mut self) -> Result<Vec<(String, Value)>, Self::Error> {
        Ok(Vec::new())
    }
    fn key(&mut self, key: &str) -> Result<String, Self::Error> {
        Ok(key.to_owned())
    }
    fn set(
        &mut self,
        object: &mut Vec<(String, Value)>,
        key: String,
        value: Value,
        replace: bool,
    ) -> Result<(), Self::Error> {
        if replace {
            if let Some(slot) = object.iter_mut().find(|(k, _)| *k == key) {
                slot.1 = value;
                return Ok(());
            }
        }
        object.push((key, value));
        Ok(())
    }
    fn end_object(&mut self, object: Vec<(String, Value)>) -> Result<Value, Self::Error> {
        Ok(Value::Object(object))
    }
}

/// Builds the value of `text` (a prefix the scanner accepted) into `sink`; `Ok(None)` when
/// nothing is reportable yet.
///
/// # Errors
/// Only the sink's own errors.
pub fn build<S: Sink>(
    text: &[u8],
    options: BuildOptions,
    sink: &mut S,
) -> Result<Option<S::Value>, S::Error> {
    let mut reader = Reader {
        text,
        pos: 0,
        options,
        scratch: Vec::new(),
        key: Vec::new(),
    };
    reader.skip_ws();
    if reader.pos >= text.len() {
        return Ok(None);
    }
    reader.value(sink)
}

/// Builds a Rust [`Value`].
#[must_use]
pub fn build_value(text: &[u8], options: BuildOptions) -> Option<Value> {
    match build(text, options, &mut ValueSink) {
        Ok(v) => v,
        Err(never) => match never {},
    }
}

struct Reader<'t> {
    text: &'t [u8],
    pos: usize,
    options: BuildOptions,
    scratch: Vec<u8>,
    key: Vec<u8>,
}

enum Str {
    /// The whole string (closing quote read).
    Complete,
    /// The text ended inside the string.
    Open,
}

impl Reader<'_> {
    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn skip_ws(&mut self) {
        while let Some(&b) = self.text.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// `value` as the sink marks it with its completeness, when flags were asked for (R9).
    #[inline]
    fn mark<S: Sink>(
        &self,
        sink: &mut S,
        value: S::Value,
        complete: bool,
    ) -> Result<S::Value, S::Error> {
        if self.options.flags {
            sink.flag(value, complete)
        } else {
            Ok(value)
        }
    }

    /// Reads a value starting at `pos` (not whitespace). `None` when not reportable.
    fn value<S: Sink>(&mut self, sink: &mut S) -> Result<Option<S::Value>, S::Error> {
        let Some(&b) = self.text.get(self.pos) else {
            return Ok(None);
        };
        match b {
            b'{' => self.object(sink).map(Some),
            b'[' => self.array(sink).map(Some),
            b'"' => {
                self.pos += 1;
                // Most strings have no escape: hand the slice over without copying it.
                let rest = &self.text[self.pos..];
                if let Some(q) = memchr::memchr2(b'"', b'\\', rest) {
                    if rest[q] == b'"' {
                        self.pos += q + 1;
                        let value = sink.string(utf8_prefix(&rest[..q]))?;
                        return self.mark(sink, value, true).map(Some);
                    }
                }
                let mut buf = std::mem::take(&mut self.scratch);
                buf.clear();
                let state = self.string_into(&mut buf);
                // Shown whole (complete), or open under `Trailing` (incomplete), or not at all.
                let shown = match state {
                    Str::Complete => Some(true),
                    Str::Open => (self.options.strings == StringMode::Trailing).then_some(false),
                };
                let out = match shown {
                    Some(complete) => {
                        let value = sink.string(utf8_prefix(&buf))?;
                        Some(self.mark(sink, value, complete)?)
                    }
                    None => None,
                };
                self.scratch = buf;
                Ok(out)
            }
            b't' => self.literal(b"true", sink),
            b'f' => self.literal(b"false", sink),
            b'n' => self.literal(b"null", sink),
            _ => self.number(sink),
        }
    }

    fn literal<S: Sink>(
        &mut self,
        word: &[u8],
        sink: &mut S,
    ) -> Result<Option<S::Value>, S::Error> {
        if self.text.len() - self.pos < word.len() {
            self.pos = self.text.len();
            return Ok(None);
        }
        self.pos += word.len();
        let value = match word[0] {
            b't' => sink.boolean(true)?,
            b'f' => sink.boolean(false)?,
            _ => sink.null()?,
        };
        // A literal is reported only once its last letter is in (R6): it is always complete.
        self.mark(sink, value, true).map(Some)
    }

    fn number<S: Sink>(&mut self, sink: &mut S) -> Result<Option<S::Value>, S::Error> {
        let start = self.pos;
        while let Some(&b) = self.text.get(self.pos) {
            if matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                self.pos += 1;
            } else {
                break;
            }
        }
        let lexeme = &self.text[start..self.pos];
        // A number touching the end of a prefix is pending (R5); with `eager_numbers` its
        // longest valid prefix is shown, which excludes `-`, `1.` and `1e` (they end in a
        // non-digit).
        let complete = !self.at_end() || self.options.complete;
        if !complete
            && (!self.options.eager_numbers || !lexeme.last().is_some_and(u8::is_ascii_digit))
        {
            return Ok(None);
        }
        let lexeme = std::str::from_utf8(lexeme).unwrap_or("0");
        let value = sink.number(lexeme)?;
        // Only a delimiter (or the end of the whole text) settles a number: an eager one
        // touching the end may still gain digits.
        self.mark(sink, value, complete).map(Some)
    }

    /// Decodes string content after the opening quote into `out`.
    fn string_into(&mut self, out: &mut Vec<u8>) -> Str {
        loop {
            let rest = &self.text[self.pos..];
            let run = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\')
                .unwrap_or(rest.len());
            out.extend_from_slice(&rest[..run]);
            self.pos += run;
            match self.text.get(self.pos) {
                None => return Str::Open,
                Some(b'"') => {
                    self.pos += 1;
                    return Str::Complete;
                }
                Some(_) => {
                    let Some(&e) = self.text.get(self.pos + 1) else {
                        self.pos = self.text.len();
                        return Str::Open;
                    };
                    self.pos += 2;
                    if e == b'u' {
                        let Some(unit) = self.hex4() else {
                            return Str::Open;
                        };
                        let code = if (0xD800..0xDC00).contains(&unit) {
                            // The scanner guarantees a low surrogate follows, unless the
                            // text ends first.
                            if self.text.len() < self.pos + 6 {
                                self.pos = self.text.len();
                                return Str::Open;
                            }
                            self.pos += 2;
                            let Some(low) = self.hex4() else {
                                return Str::Open;
                            };
                            0x10000 + ((unit - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF)
                        } else {
                            unit
                        };
                        let ch = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        continue;
                    }
                    // The scanner accepted the text: any other escape is a short one.
                    let c = short_escape(e).unwrap_or(e);
                    out.push(c);
                }
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.pos..self.pos + 4);
        let Some(digits) = digits else {
            self.pos = self.text.len();
            return None;
        };
        let mut v = 0u32;
        for &d in digits {
            let n = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => 0,
            };
            v = (v << 4) | u32::from(n);
        }
        self.pos += 4;
        Some(v)
    }

    fn array<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, S::Error> {
        self.pos += 1;
        let mut array = sink.array()?;
        let mut closed = false;
        loop {
            self.skip_ws();
            match self.text.get(self.pos) {
                None => break,
                Some(b']') => {
                    self.pos += 1;
                    closed = true;
                    break;
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {
                    let item = self.value(sink)?;
                    match item {
                        Some(v) => sink.push(&mut array, v)?,
                        None => break,
                    }
                    if self.at_end() {
                        break;
                    }
                }
            }
        }
        let value = sink.end_array(array)?;
        self.mark(sink, value, closed)
    }

    fn object<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, S::Error> {
        self.pos += 1;
        let mut object = sink.object()?;
        let replace = self.options.duplicate_keys;
        let mut closed = false;
        loop {
            self.skip_ws();
            match self.text.get(self.pos) {
                None => break,
                Some(b'}') => {
                    self.pos += 1;
                    closed = true;
                    break;
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {
                    // A key: borrowed from the text when it has no escape.
                    self.pos += 1;
                    let rest = &self.text[self.pos..];
                    let key = match memchr::memchr2(b'"', b'\\', rest) {
                        Some(q) if rest[q] == b'"' => {
                            self.pos += q + 1;
                            sink.key(utf8_prefix(&rest[..q]))?
                        }
                        _ => {
                            let mut buf = std::mem::take(&mut self.key);
                            buf.clear();
                            if matches!(self.string_into(&mut buf), Str::Open) {
                                self.key = buf;
                                break;
                            }
                            let key = sink.key(utf8_prefix(&buf))?;
                            self.key = buf;
                            key
                        }
                    };
                    self.skip_ws();
                    if self.at_end() {
                        break;
                    }
                    self.pos += 1; // ':'
                    self.skip_ws();
                    let item = self.value(sink)?;
                    match item {
                        Some(v) => sink.set(&mut object, key, v, replace)?,
                        None => break,
                    }
                    if self.at_end() {
                        break;
                    }
                }
            }
        }
        let value = sink.end_object(object)?;
        self.mark(sink, value, closed)
    }
}

/// The longest prefix of `bytes` that is valid UTF-8 (an unfinished character at the end of a
/// partial string is held back).
pub(crate) fn utf8_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partial(text: &str) -> Option<Value> {
        build_value(text.as_bytes(), BuildOptions::default())
    }

    fn obj(members: &[(&str, Value)]) -> Value {
        Value::Object(
            members
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    fn s(v: &str) -> Value {
        Value::String(v.to_owned())
    }

    fn n(v: &str) -> Value {
        Value::Number(v.to_owned())
    }

    #[test]
    fn to_json_reads_back_as_the_same_value_with_each_duplicate_resolved() {
        let text = r#"{"a": "q\"\\\u0001\n\u00e9\ud83d\ude80", "b": [1.50, -0e3, true, null, {}], "a": 7}"#;
        let value = build_value(text.as_bytes(), BuildOptions::for_complete(true)).expect("value");
        let json = value.to_json();
        assert_eq!(
            std::str::from_utf8(&json).expect("utf-8"),
            "{\"a\":7,\"b\":[1.50,-0e3,true,null,{}]}"
        );
        let strings = r#"["q\"\\\u0001\n\u00e9\ud83d\ude80\u001f"]"#;
        let value = build_value(strings.as_bytes(), BuildOptions::for_complete(false)).expect("v");
        let again = build_value(&value.to_json(), BuildOptions::for_complete(false));
        assert_eq!(again, Some(value));
    }

    #[test]
    fn spec_examples() {
        assert_eq!(partial(""), None);
        assert_eq!(partial("{\"a"), Some(obj(&[])));
        assert_eq!(partial("{\"a\":"), Some(obj(&[])));
        assert_eq!(partial("{\"a\": \"hel"), Some(obj(&[("a", s("hel"))])));
        assert_eq!(partial("{\"a\": \"x\\"), Some(obj(&[("a", s("x"))])));
        assert_eq!(
            partial("{\"a\": \"hello \\u00"),
            Some(obj(&[("a", s("hello "))]))
        );
        assert_eq!(partial("{\"a\": \"ab\\ud83d"), Some(obj(&[("a", s("ab"))])));
        assert_eq!(
            partial("{\"a\": \"\\ud83d\\ude00"),
            Some(obj(&[("a", s("😀"))]))
        );
        assert_eq!(
            build_value(b"{\"a\": \"\xc3", BuildOptions::default()),
            Some(obj(&[("a", s(""))]))
        );
        assert_eq!(partial("{\"a\": 1"), Some(obj(&[])));
        assert_eq!(partial("{\"a\": 1,"), Some(obj(&[("a", n("1"))])));
        assert_eq!(partial("{\"a\": 1."), Some(obj(&[])));
        assert_eq!(partial("{\"a\": -"), Some(obj(&[])));
        assert_eq!(partial("{\"a\": tr"), Some(obj(&[])));
        assert_eq!(
            partial("{\"a\": true"),
            Some(obj(&[("a", Value::Bool(true))]))
        );
        assert_eq!(partial("[1, 2"), Some(Value::Array(vec![n("1")])));
        assert_eq!(partial("[1, 2,"), Some(Value::Array(vec![n("1"), n("2")])));
        assert_eq!(
            partial("[\"x\", \"y"),
            Some(Value::Array(vec![s("x"), s("y")]))
        );
        assert_eq!(
            partial("{\"a\": {\"b\": [1, {\"c\": \"d"),
            Some(obj(&[(
                "a",
                obj(&[("b", Value::Array(vec![n("1"), obj(&[("c", s("d"))])]))])
            )]))
        );
        assert_eq!(partial("12"), None);
        let eager = BuildOptions {
            eager_numbers: true,
            ..BuildOptions::default()
        };
        assert_eq!(
            build_value(b"{\"a\": 12", eager),
            Some(obj(&[("a", n("12"))]))
        );
        assert_eq!(build_value(b"{\"a\": 1.", eager), Some(obj(&[])));
        let off = BuildOptions {
            strings: StringMode::Off,
            ..BuildOptions::default()
        };
        assert_eq!(build_value(b"{\"a\": \"hel", off), Some(obj(&[])));
    }

    #[test]
    fn complete_values() {
        let done = BuildOptions {
            complete: true,
            ..BuildOptions::default()
        };
        assert_eq!(build_value(b" 12 ", done), Some(n("12")));
        assert_eq!(build_value(b"12", done), Some(n("12")));
        assert_eq!(
            build_value(br#""a\"b\\\/\b\f\n\r\t\u00e9""#, done),
            Some(s("a\"b\\/\u{8}\u{c}\n\r\té"))
        );
        let dup = BuildOptions {
            complete: true,
            duplicate_keys: true,
            ..BuildOptions::default()
        };
        assert_eq!(
            build_value(br#"{"a":1,"b":2,"a":3}"#, dup),
            Some(obj(&[("a", n("3")), ("b", n("2"))]))
        );
    }
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    /// Renders nodes as compact JSON with `~` after each incomplete one, and counts the nodes
    /// made and flagged, so a node the builder forgot to flag (or flagged twice) shows.
    #[derive(Default)]
    struct Marks {
        made: usize,
        flagged: usize,
    }

    impl Marks {
        fn made(&mut self, text: String) -> Result<String, std::convert::Infallible> {
            self.made += 1;
            Ok(text)
        }
    }

    impl Sink for Marks {
        type Value = String;
        type Array = Vec<String>;
        type Object = Vec<(String, String)>;
        type Key = String;
        type Error = std::convert::Infallible;

        fn null(&mut self) -> Result<String, Self::Error> {
            self.made("null".to_owned())
        }
        fn boolean(&mut self, value: bool) -> Result<String, Self::Error> {
            self.made(value.to_string())
        }
        fn number(&mut self, lexeme: &str) -> Result<String, Self::Error> {
            self.made(lexeme.to_owned())
        }
        fn string(&mut self, value: &str) -> Result<String, Self::Error> {
            let mut out = Vec::new();
            write_json_string(value, &mut out);
            self.made(String::from_utf8_lossy(&out).into_owned())
        }
        fn array(&mut self) -> Result<Vec<String>, Self::Error> {
            Ok(Vec::new())
        }
        fn push(&mut self, array: &mut Vec<String>, value: String) -> Result<(), Self::Error> {
            array.push(value);
            Ok(())
        }
        fn end_array(&mut self, array: Vec<String>) -> Result<String, Self::Error> {
            self.made(format!("[{}]", array.join(",")))
        }
        fn object(&mut self) -> Result<Vec<(String, String)>, Self::Error> {
            Ok(Vec::new())
        }
        fn key(&mut self, key: &str) -> Result<String, Self::Error> {
            let mut out = Vec::new();
            write_json_string(key, &mut out);
            Ok(String::from_utf8_lossy(&out).into_owned())
        }
        fn set(
            &mut self,
            object: &mut Vec<(String, String)>,
            key: String,
            value: String,
            _replace: bool,
        ) -> Result<(), Self::Error> {
            object.push((key, value));
            Ok(())
        }
        fn end_object(&mut self, object: Vec<(String, String)>) -> Result<String, Self::Error> {
            let members: Vec<String> = object.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            self.made(format!("{{{}}}", members.join(",")))
        }
        fn flag(&mut self, value: String, complete: bool) -> Result<String, Self::Error> {
            self.flagged += 1;
            Ok(if complete { value } else { value + "~" })
        }
    }

    /// The flagged rendering of `text` built with `options` (flags on), after checking that
    /// every node was flagged exactly once.
    fn marked(text: &[u8], options: BuildOptions) -> Option<String> {
        let mut sink = Marks::default();
        let options = BuildOptions {
            flags: true,
            ..options
        };
        let Ok(out) = build(text, options, &mut sink);
        assert_eq!(
            sink.made, sink.flagged,
            "every node is flagged once: {text:?}"
        );
        out
    }

    fn prefix(text: &str) -> Option<String> {
        marked(text.as_bytes(), BuildOptions::default())
    }

    #[test]
    fn spec_example_prefixes() {
        let table: &[(&str, Option<&str>)] = &[
            ("", None),
            ("{\"a", Some("{}~")),
            ("{\"a\":", Some("{}~")),
            ("{\"a\": \"hel", Some("{\"a\":\"hel\"~}~")),
            ("{\"a\": \"x\\", Some("{\"a\":\"x\"~}~")),
            ("{\"a\": \"hello \\u00", Some("{\"a\":\"hello \"~}~")),
            ("{\"a\": \"ab\\ud83d", Some("{\"a\":\"ab\"~}~")),
            // Every character is in, but the closing quote is not: still open.
            ("{\"a\": \"\\ud83d\\ude00", Some("{\"a\":\"😀\"~}~")),
            ("{\"a\": 1", Some("{}~")),
            ("{\"a\": 1,", Some("{\"a\":1}~")),
            ("{\"a\": 1.", Some("{}~")),
            ("{\"a\": -", Some("{}~")),
            ("{\"a\": tr", Some("{}~")),
            ("{\"a\": true", Some("{\"a\":true}~")),
            ("[1, 2", Some("[1]~")),
            ("[1, 2,", Some("[1,2]~")),
            ("[\"x\", \"y", Some("[\"x\",\"y\"~]~")),
            (
                "{\"a\": {\"b\": [1, {\"c\": \"d",
                Some("{\"a\":{\"b\":[1,{\"c\":\"d\"~}~]~}~}~"),
            ),
        ];
        for (text, expected) in table {
            assert_eq!(prefix(text).as_deref(), *expected, "{text:?}");
        }
        // A character cut inside its UTF-8 bytes: the string shows nothing of it, and is open.
        assert_eq!(
            marked(b"{\"a\": \"\xc3", BuildOptions::default()).as_deref(),
            Some("{\"a\":\"\"~}~")
        );
    }

    #[test]
    fn closed_nodes_on_an_open_path_are_complete() {
        assert_eq!(prefix("{\"a\": \"x\"").as_deref(), Some("{\"a\":\"x\"}~"));
        assert_eq!(prefix("{\"a\": \"x\" ").as_deref(), Some("{\"a\":\"x\"}~"));
        assert_eq!(
            prefix("{\"a\": [null, false, {}], \"b\": {\"c\": [[]").as_deref(),
            Some("{\"a\":[null,false,{}],\"b\":{\"c\":[[]]~}~}~")
        );
        assert_eq!(prefix("[[1, [2]], [").as_deref(), Some("[[1,[2]],[]~]~"));
        // A closed container is complete even before the scanner calls the text complete.
        assert_eq!(prefix("{\"a\": [1]}").as_deref(), Some("{\"a\":[1]}"));
    }

    #[test]
    fn strings_off_hides_the_open_string_and_keeps_its_parents_open() {
        let off = BuildOptions {
            strings: StringMode::Off,
            ..BuildOptions::default()
        };
        assert_eq!(
            marked(b"{\"a\": \"hel", off).as_deref(),
            Some("{}~"),
            "member hidden"
        );
        assert_eq!(marked(b"[\"x\", \"y", off).as_deref(), Some("[\"x\"]~"));
        assert_eq!(
            marked(b"{\"a\": [\"x\"], \"b\": \"", off).as_deref(),
            Some("{\"a\":[\"x\"]}~")
        );
        assert_eq!(marked(b"\"open", off), None);
    }

    #[test]
    fn an_eager_number_touching_the_end_is_incomplete() {
        let eager = BuildOptions {
            eager_numbers: true,
            ..BuildOptions::default()
        };
        assert_eq!(
            marked(b"{\"a\": 12", eager).as_deref(),
            Some("{\"a\":12~}~")
        );
        assert_eq!(
            marked(b"{\"a\": 12 ", eager).as_deref(),
            Some("{\"a\":12}~")
        );
        assert_eq!(marked(b"[1, 2.5e3", eager).as_deref(), Some("[1,2.5e3~]~"));
        assert_eq!(marked(b"[1, 2.5e", eager).as_deref(), Some("[1]~"));
        assert_eq!(marked(b"{\"a\": 1.", eager).as_deref(), Some("{}~"));
        assert_eq!(marked(b"-7", eager).as_deref(), Some("-7~"));
        // Without `eager_numbers` a pending number is not shown at all.
        assert_eq!(prefix("-7"), None);
    }

    #[test]
    fn a_complete_text_is_complete_everywhere() {
        let done = BuildOptions::for_complete(false);
        let text = br#" {"a": [1, {"b": "c~"}, -0.5e-3], "d": true, "e": null, "f": 12} "#;
        assert_eq!(
            marked(text, done).as_deref(),
            Some(r#"{"a":[1,{"b":"c~"},-0.5e-3],"d":true,"e":null,"f":12}"#)
        );
        // A top-level number ends only with the text.
        assert_eq!(marked(b"12", done).as_deref(), Some("12"));
        let eager = BuildOptions {
            eager_numbers: true,
            ..BuildOptions::default()
        };
        assert_eq!(marked(b"12", eager).as_deref(), Some("12~"));
        assert_eq!(
            marked(b"\"ab\"", BuildOptions::default()).as_deref(),
            Some("\"ab\"")
        );
        assert_eq!(marked(b"tru", BuildOptions::default()), None);
        assert_eq!(
            marked(b"true", BuildOptions::default()).as_deref(),
            Some("true")
        );
    }

    #[test]
    fn at_every_prefix_the_flags_mark_one_open_path_and_change_nothing_else() {
        let text = br#"{"id": 12, "tags": ["a", "bc"], "to": {"x": [1.5, {"y": null}], "z": "w"}, "n": -3}"#;
        let eager = [false, true];
        let strings = [StringMode::Trailing, StringMode::Off];
        for end in 0..=text.len() {
            for &eager_numbers in &eager {
                for &mode in &strings {
                    let options = BuildOptions {
                        complete: end == text.len(),
                        strings: mode,
                        eager_numbers,
                        ..BuildOptions::default()
                    };
                    let mut plain_sink = Marks::default();
                    let Ok(plain) = build(&text[..end], options, &mut plain_sink);
                    assert_eq!(plain_sink.flagged, 0, "no flags unless asked for");
                    let flagged = marked(&text[..end], options);
                    assert_eq!(
                        flagged.as_deref().map(|f| f.replace('~', "")),
                        plain,
                        "flags change nothing else at {end}"
                    );
                    // The incomplete nodes are the open path: each is the last child of its
                    // parent, so every `~` sits in the run of closers ending the rendering, and
                    // from the innermost one on, every parent is marked too, up to the root.
                    let Some(flagged) = flagged else { continue };
                    let tail = flagged.trim_end_matches(['~', ']', '}']);
                    let run = &flagged[tail.len()..];
                    let open = flagged.matches('~').count();
                    assert_eq!(open, run.matches('~').count(), "{flagged} at {end}");
                    if let Some(first) = run.find('~') {
                        let outer = &run.as_bytes()[first + 1..];
                        assert!(
                            outer.chunks(2).all(|c| c.len() == 2 && c[1] == b'~'),
                            "{flagged} at {end}"
                        );
                    }
                    // The root object closes with the last byte: until then it is open.
                    assert_eq!(open > 0, end < text.len(), "{flagged} at {end}");
                }
            }
        }
    }
}
