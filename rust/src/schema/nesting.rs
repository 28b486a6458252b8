//! Reading a schema's JSON text with its depth bounded: how deep its subschemas and its JSON
//! nest is measured first, without recursion, so that a schema too deep to compile, or a value
//! inside it too deep to read, is refused by name (with its levels) rather than as text that is
//! "not valid JSON" or by running out of stack.
//!
//! Design notes:
//! - The measure walks the text's bytes once with an explicit stack. It trusts the text to be
//!   JSON (the parse that follows tells when it is not): on text that is not, its figures only
//!   decide which of two refusals is given.
//! - A subschema is what `schema_export.refuse_too_deep` counts on the Python side: an object
//!   under a keyword that holds subschemas (`properties`' values, `items`, an `anyOf` member,
//!   a definition...), references not followed. The compiler counts levels with references
//!   followed and refuses past the same limit.

/// Deepest subschema nesting compiled (the compiler recurses over subschemas), as written here
/// and with references followed there.
pub const MAX_SCHEMA_DEPTH: usize = 256;

/// Most levels of JSON a schema's text may nest: two per level of subschemas at the limit (an
/// object under `properties`, a member of `anyOf`), and a value inside (a `const`, an `enum`)
/// as deep as an argument may be (128 levels at the most). The reader recurses per level, and
/// so does Python's `json.dumps`, which stays well within its default recursion limit here.
pub const MAX_SCHEMA_NESTING: usize = 2 * MAX_SCHEMA_DEPTH + 128;

/// Keywords whose value maps names to subschemas (as `schema_export` has them).
pub(crate) const NAMED_SUBSCHEMAS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Keywords whose value is a subschema or a list of them (as `schema_export` has them).
pub(crate) const SUBSCHEMAS: &[&str] = &[
    "items",
    "prefixItems",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "contentSchema",
];

/// Why a schema's text was not read.
#[derive(Debug)]
pub enum ReadError {
    /// Its subschemas nest `levels` deep, past [`MAX_SCHEMA_DEPTH`].
    TooDeep {
        /// Levels of subschemas, the root's properties at 1.
        levels: usize,
    },
    /// Its JSON nests `levels` deep, past [`MAX_SCHEMA_NESTING`].
    TooNested {
        /// Levels of JSON containers, the root object at 1.
        levels: usize,
    },
    /// It is not JSON.
    Json(serde_json::Error),
}

/// What a value about to open holds, told by where it stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Holds {
    /// A schema at this level (an object that is one; anything else is data).
    Schema(usize),
    /// A subschema, or a list of them, at this level (`items`, `anyOf`).
    SchemaOrList(usize),
    /// Names mapped to subschemas at this level (`properties`).
    Named(usize),
    /// Data: nothing below is a subschema.
    Data,
}

/// How deep a schema's subschemas and its JSON nest, as `(subschemas, json)`.
#[must_use]
pub fn measure(text: &[u8]) -> (usize, usize) {
    // Per open container: what its members hold, and for an object whether a key comes next.
    let mut open: Vec<(Holds, bool)> = Vec::new();
    // What the next value holds: for an object member, told by its key.
    let mut next = Holds::Schema(0);
    let (mut deepest, mut nesting) = (0, 0);
    let mut at = 0;
    while at < text.len() {
        let byte = text[at];
        at += 1;
        match byte {
            b'{' | b'[' => {
                let holds = match (next, byte) {
                    (Holds::Schema(level) | Holds::SchemaOrList(level), b'{') => {
                        deepest = deepest.max(level);
                        // Members of a schema: what each holds is told by its key.
                        Holds::Schema(level)
                    }
                    (Holds::SchemaOrList(level), b'[') => Holds::SchemaOrList(level),
                    (Holds::Named(level), b'{') => Holds::Named(level),
                    _ => Holds::Data,
                };
                open.push((holds, byte == b'{'));
                nesting = nesting.max(open.len());
                next = member(holds, byte == b'[');
            }
            b'}' | b']' => {
                open.pop();
            }
            b',' => {
                if let Some(&(holds, is_object)) = open.last() {
                    // An object's member is told by its key, which comes next.
                    next = member(holds, !is_object);
                }
            }
            b'"' => {
                let start = at;
                while at < text.len() && text[at] != b'"' {
                    at += if text[at] == b'\\' { 2 } else { 1 };
                }
                let key = &text[start..at.min(text.len())];
                at += 1;
                if let Some(&(holds, true)) = open.last() {
                    if followed_by_colon(text, at) {
                        next = keyed(holds, key);
                    }
                }
            }
            _ => {}
        }
    }
    (deepest, nesting)
}

/// What a member of a container that holds `holds` holds (before its key, for an object).
fn member(holds: Holds, in_array: bool) -> Holds {
    match holds {
        Holds::SchemaOrList(level) if in_array => Holds::Schema(level),
        _ => Holds::Data,
    }
}

/// What the value under `key` holds, in an object that holds `holds`.
fn keyed(holds: Holds, key: &[u8]) -> Holds {
    let decoded;
    let key = if key.contains(&b'\\') {
        let mut quoted = Vec::with_capacity(key.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(key);
        quoted.push(b'"');
        decoded = serde_json::from_slice::<String>(&quoted).unwrap_or_default();
        decoded.as_bytes()
    } else {
        key
    };
    match holds {
        Holds::Schema(level) if NAMED_SUBSCHEMAS.iter().any(|k| k.as_bytes() == key) => {
            Holds::Named(level + 1)
        }
        Holds::Schema(level) if SUBSCHEMAS.iter().any(|k| k.as_bytes() == key) => {
            Holds::SchemaOrList(level + 1)
        }
        Holds::Named(level) => Holds::Schema(level),
        _ => Holds::Data,
    }
}

/// Whether the next byte after whitespace at `at` is a `:` (the string before was a key).
fn followed_by_colon(text: &[u8], at: usize) -> bool {
    text.get(at..)
        .and_then(|rest| rest.iter().find(|b| !b.is_ascii_whitespace()))
        == Some(&b':')
}

/// Parses a schema's text, refusing one whose subschemas or JSON nest too deeply to compile
/// or read (see [`measure`]).
///
/// # Errors
/// [`ReadError::TooDeep`], [`ReadError::TooNested`], or [`ReadError::Json`] for text that is
/// not JSON.
pub fn read(text: &str) -> Result<serde_json::Value, ReadError> {
    let (levels, nesting) = measure(text.as_bytes());
    if levels > MAX_SCHEMA_DEPTH {
        return Err(ReadError::TooDeep { levels });
    }
    if nesting > MAX_SCHEMA_NESTING {
        return Err(ReadError::TooNested { levels: nesting });
    }
    let mut reader = serde_json::Deserializer::from_str(text);
    // serde_json's own limit (128 levels) is below what a schema within the limits above may
    // nest; the measure bounds the reader's recursion instead.
    reader.disable_recursion_limit();
    let value = serde::Deserialize::deserialize(&mut reader).map_err(ReadError::Json)?;
    reader.end().map_err(ReadError::Json)?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_subschemas_as_written_and_json_levels() {
        let cases: &[(&str, (usize, usize))] = &[
            (r#"{"type": "integer"}"#, (0, 1)),
            (
                r#"{"properties": {"a": {"items": {"type": "string"}}}}"#,
                (2, 4),
            ),
            (
                r#"{"anyOf": [{"type": "null"}, {"items": [{}, {}]}]}"#,
                (2, 5),
            ),
            // Definitions count where they sit; a reference is not followed.
            (
                r##"{"$defs": {"a": {"not": {}}}, "$ref": "#/$defs/a"}"##,
                (2, 4),
            ),
            // Data: a keyword's name inside a value, or a property named like one.
            (
                r#"{"const": {"properties": {"a": {}}}, "default": [[[1]]]}"#,
                (0, 4),
            ),
            (
                r#"{"properties": {"items": {"enum": [{"items": {}}]}}}"#,
                (1, 6),
            ),
            // Strings that hold brackets, quotes and escapes, and an escaped keyword.
            (
                r#"{"description": "{[\"}", "prop\u0065rties": {"a\\": {}}}"#,
                (1, 3),
            ),
            // A list under a keyword that takes one schema, and one whose items are no schema.
            (r#"{"dependencies": {"a": ["b"], "c": {"if": {}}}}"#, (2, 4)),
        ];
        for (text, want) in cases {
            assert_eq!(measure(text.as_bytes()), *want, "{text}");
        }
    }

    #[test]
    fn refuses_by_depth_then_by_nesting_without_recursing() {
        let deep = |levels: usize, open: &str, close: &str| {
            format!("{}{{}}{}", open.repeat(levels), close.repeat(levels))
        };
        let text = deep(100_000, r#"{"items": "#, "}");
        assert!(matches!(
            read(&text),
            Err(ReadError::TooDeep { levels: 100_000 })
        ));
        let text = format!(r#"{{"const": {}}}"#, deep(100_000, "[", "]"));
        assert!(matches!(
            read(&text),
            Err(ReadError::TooNested { levels: 100_002 })
        ));
        // Past serde_json's own limit of 128, within these.
        let text = deep(MAX_SCHEMA_DEPTH, r#"{"items": "#, "}");
        assert!(read(&text).is_ok());
        let text = format!(r#"{{"const": {}}}"#, deep(MAX_SCHEMA_NESTING - 2, "[", "]"));
        assert!(read(&text).is_ok());
        assert!(matches!(read("{not json"), Err(ReadError::Json(_))));
    }

    #[test]
    fn the_compiler_tells_a_schema_deep_through_references_by_kind() {
        use crate::schema::{SchemaErrorKind, ToolSchema};
        let chain = |levels: usize| {
            let defs: serde_json::Map<String, serde_json::Value> = (0..levels)
                .map(|i| {
                    let next = format!("#/$defs/d{}", i + 1);
                    (
                        format!("d{i}"),
                        serde_json::json!({"items": {"$ref": next}}),
                    )
                })
                .chain([(format!("d{levels}"), serde_json::json!({}))])
                .collect();
            serde_json::json!({"$ref": "#/$defs/d0", "$defs": defs})
        };
        // The compiler recurses once per level followed, up to the limit: an unoptimised
        // build's frames outgrow a test thread's 2 MB there, so the compile gets room.
        let kind = |schema: &serde_json::Value| {
            let schema = schema.clone();
            std::thread::Builder::new()
                .stack_size(64 << 20)
                .spawn(move || ToolSchema::compile(&schema).err().map(|e| e.kind))
                .and_then(|handle| handle.join().map_err(|_| std::io::ErrorKind::Other.into()))
                .expect("the compile thread runs")
        };
        // Written two levels deep: the measure passes it, the compiler follows the chain.
        assert_eq!(measure(chain(300).to_string().as_bytes()).0, 2);
        assert_eq!(kind(&chain(300)), Some(SchemaErrorKind::TooDeep));
        assert_eq!(kind(&chain(100)), None);
        let malformed = serde_json::json!({"minLength": "two"});
        assert_eq!(kind(&malformed), Some(SchemaErrorKind::Malformed));
    }
}
