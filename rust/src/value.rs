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
                        return sink.string(utf8_prefix(&rest[..q])).map(Some);
                    }
                }
                let mut buf = std::mem::take(&mut self.scratch);
                buf.clear();
                let state = self.string_into(&mut buf);
                let out = match state {
                    Str::Complete => Some(sink.string(utf8_prefix(&buf))?),
                    Str::Open if self.options.strings == StringMode::Trailing => {
                        Some(sink.string(utf8_prefix(&buf))?)
                    }
                    Str::Open => None,
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
        match word[0] {
            b't' => sink.boolean(true).map(Some),
            b'f' => sink.boolean(false).map(Some),
            _ => sink.null().map(Some),
        }
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
        if self.at_end()
            && !self.options.complete
            && (!self.options.eager_numbers || !lexeme.last().is_some_and(u8::is_ascii_digit))
        {
            return Ok(None);
        }
        let lexeme = std::str::from_utf8(lexeme).unwrap_or("0");
        sink.number(lexeme).map(Some)
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
        loop {
            self.skip_ws();
            match self.text.get(self.pos) {
                None => break,
                Some(b']') => {
                    self.pos += 1;
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
        sink.end_array(array)
    }

    fn object<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, S::Error> {
        self.pos += 1;
        let mut object = sink.object()?;
        let replace = self.options.duplicate_keys;
        loop {
            self.skip_ws();
            match self.text.get(self.pos) {
                None => break,
                Some(b'}') => {
                    self.pos += 1;
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
        sink.end_object(object)
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
