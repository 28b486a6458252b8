//! Events the scanner reports while it reads, for consumers that act on a value before it is
//! complete (the schema pre-check, progress reporting).
//!
//! The scanner is generic over the visitor, so a visitor whose methods are empty costs nothing:
//! calls are inlined away and string decoding for the visitor is skipped unless
//! [`Visitor::WANTS_STRINGS`] asks for it. Offsets are absolute byte offsets into the text the
//! scanner was fed, so every event (and every error built from it) is the same for any split.
//!
//! Design notes:
//! - String values reach a visitor only as pieces; a visitor that needs the whole value keeps
//!   the pieces it asked for. The scanner used to buffer the decoded value for `string_end`, a
//!   second copy for the pre-check (which keeps its own for error text) and a wrong one when a
//!   call's visitor changed inside a string (a tool name arriving mid-arguments): the new
//!   visitor got the tail of the string as its value.
//! - [`Visitor::wants_string`] lets a visitor decline one string: the pre-check only reads
//!   strings whose schema has a string rule or an enum, so most strings of a tool call are
//!   validated by the scanner and never decoded.

/// The kind of a JSON value, known from its first byte (numbers: `-` or a digit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// `{`
    Object,
    /// `[`
    Array,
    /// `"`
    String,
    /// `-` or a digit; integer or not is known only at [`Visitor::number_end`].
    Number,
    /// `t` or `f`
    Bool,
    /// `n`
    Null,
}

impl ValueKind {
    /// The JSON Schema type name (`number` for numbers, refine with the lexeme).
    #[must_use]
    pub fn type_name(self) -> &'static str {
        match self {
            Self::Object => "object",
            Self::Array => "array",
            Self::String => "string",
            Self::Number => "number",
            Self::Bool => "boolean",
            Self::Null => "null",
        }
    }
}

/// Receives the scanner's events in document order. Every method has an empty default.
///
/// Order for an object member: `key_piece`* then `key_end`, then the member value's events.
/// For an array element: the element's `value_start` (its index is the count of earlier
/// elements). A string value: `value_start(String)`, `string_piece`*, `string_end`.
#[allow(unused_variables)]
pub trait Visitor {
    /// When false, string values are not decoded for the visitor: `string_piece` is never
    /// called. Keys are always decoded.
    const WANTS_STRINGS: bool = false;

    /// When false, `key_end` is not called (keys are still decoded for duplicate detection
    /// and error paths).
    const WANTS_KEYS: bool = true;

    /// A value begins; `offset` is its first byte. Called for every value, nested ones included.
    #[inline]
    fn value_start(&mut self, kind: ValueKind, offset: usize) {}

    /// Decoded UTF-8 bytes of an object key being read. When `escaped` is false, byte `i` of
    /// `piece` is raw byte `offset + i`; when true, `piece` is one decoded escape and every byte
    /// of it belongs to the escape's last raw byte `offset`. A multi-byte character may be split
    /// over two pieces.
    #[inline]
    fn key_piece(&mut self, piece: &[u8], offset: usize, escaped: bool) {}

    /// An object key is closed; `key` is the whole decoded key, `offset` its closing quote.
    #[inline]
    fn key_end(&mut self, key: &str, offset: usize) {}

    /// A key that arrived whole in one push with no escape: the same as its one `key_piece`
    /// (at `start`, when not empty) followed by `key_end_bytes` (at `end`, its closing quote),
    /// which is what it does unless a visitor can decide the key at once.
    #[inline]
    fn key_whole(&mut self, key: &[u8], start: usize, end: usize) {
        if !key.is_empty() {
            self.key_piece(key, start, false);
        }
        if Self::WANTS_KEYS {
            self.key_end_bytes(key, end);
        }
    }

    /// [`Visitor::key_end`] as the scanner calls it: `key` is the decoded key, already checked
    /// to be UTF-8. A visitor that reads keys as bytes overrides this and skips the conversion
    /// (a call per key that showed in the pre-check's profile).
    #[inline]
    fn key_end_bytes(&mut self, key: &[u8], offset: usize) {
        self.key_end(std::str::from_utf8(key).unwrap_or(""), offset);
    }

    /// Whether the string value that just started (after its `value_start`) should be decoded
    /// for this visitor. Only asked when [`Visitor::WANTS_STRINGS`] is true, at the string's
    /// start and again at the start of each push that begins inside it (the visitor may have
    /// changed between pushes), so the answer must not change while the string is open.
    #[inline]
    fn wants_string(&self) -> bool {
        true
    }

    /// Decoded bytes of a string value, in the same form as [`Visitor::key_piece`]. Only called
    /// when [`Visitor::WANTS_STRINGS`] is true and [`Visitor::wants_string`] said yes.
    #[inline]
    fn string_piece(&mut self, piece: &[u8], offset: usize, escaped: bool) {}

    /// A string value is closed at `offset` (its closing quote).
    #[inline]
    fn string_end(&mut self, offset: usize) {}

    /// A number is complete: `lexeme` is its exact text, `offset` the byte after it (the
    /// delimiter that proved it complete, or the end of the text).
    #[inline]
    fn number_end(&mut self, lexeme: &str, offset: usize) {}

    /// [`Visitor::number_end`] as the scanner calls it, with the (ASCII) lexeme as bytes; see
    /// [`Visitor::key_end_bytes`].
    #[inline]
    fn number_end_bytes(&mut self, lexeme: &[u8], offset: usize) {
        self.number_end(std::str::from_utf8(lexeme).unwrap_or(""), offset);
    }

    /// `true`, `false` or `null` is complete; `offset` is its last letter.
    #[inline]
    fn literal_end(&mut self, kind: ValueKind, value: bool, offset: usize) {}

    /// An object or array is closed at `offset` (its closing bracket).
    #[inline]
    fn container_end(&mut self, kind: ValueKind, offset: usize) {}
}

/// A visitor that does nothing; the scanner's plain `push` uses it.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoVisitor;

impl Visitor for NoVisitor {
    const WANTS_KEYS: bool = false;

    // The default converts the lexeme to `&str` for `number_end`, which does nothing here: a
    // UTF-8 check per number that showed in the instruction counts of the plain scan.
    #[inline]
    fn number_end_bytes(&mut self, _lexeme: &[u8], _offset: usize) {}
}

/// Two visitors fed the same events, in order.
#[derive(Debug)]
pub struct Both<'a, A, B>(pub &'a mut A, pub &'a mut B);

impl<A: Visitor, B: Visitor> Visitor for Both<'_, A, B> {
    const WANTS_STRINGS: bool = A::WANTS_STRINGS || B::WANTS_STRINGS;
    const WANTS_KEYS: bool = A::WANTS_KEYS || B::WANTS_KEYS;

    #[inline]
    fn value_start(&mut self, kind: ValueKind, offset: usize) {
        self.0.value_start(kind, offset);
        self.1.value_start(kind, offset);
    }
    #[inline]
    fn key_piece(&mut self, piece: &[u8], offset: usize, escaped: bool) {
        self.0.key_piece(piece, offset, escaped);
        self.1.key_piece(piece, offset, escaped);
    }
    #[inline]
    fn key_end(&mut self, key: &str, offset: usize) {
        self.0.key_end(key, offset);
        self.1.key_end(key, offset);
    }
    #[inline]
    fn key_end_bytes(&mut self, key: &[u8], offset: usize) {
        self.0.key_end_bytes(key, offset);
        self.1.key_end_bytes(key, offset);
    }
    /// Pieces go to both when either wants them, so each side must ignore pieces of a string
    /// it declined (the pre-check and the progress reporter do).
    #[inline]
    fn wants_string(&self) -> bool {
        (A::WANTS_STRINGS && self.0.wants_string()) || (B::WANTS_STRINGS && self.1.wants_string())
    }
    #[inline]
    fn string_piece(&mut self, piece: &[u8], offset: usize, escaped: bool) {
        if A::WANTS_STRINGS {
            self.0.string_piece(piece, offset, escaped);
        }
        if B::WANTS_STRINGS {
            self.1.string_piece(piece, offset, escaped);
        }
    }
    #[inline]
    fn string_end(&mut self, offset: usize) {
        self.0.string_end(offset);
        self.1.string_end(offset);
    }
    #[inline]
    fn number_end(&mut self, lexeme: &str, offset: usize) {
        self.0.number_end(lexeme, offset);
        self.1.number_end(lexeme, offset);
    }
    #[inline]
    fn number_end_bytes(&mut self, lexeme: &[u8], offset: usize) {
        self.0.number_end_bytes(lexeme, offset);
        self.1.number_end_bytes(lexeme, offset);
    }
    #[inline]
    fn literal_end(&mut self, kind: ValueKind, value: bool, offset: usize) {
        self.0.literal_end(kind, value, offset);
        self.1.literal_end(kind, value, offset);
    }
    #[inline]
    fn container_end(&mut self, kind: ValueKind, offset: usize) {
        self.0.container_end(kind, offset);
        self.1.container_end(kind, offset);
    }
}

impl<V: Visitor> Visitor for &mut V {
    const WANTS_STRINGS: bool = V::WANTS_STRINGS;
    const WANTS_KEYS: bool = V::WANTS_KEYS;

    #[inline]
    fn value_start(&mut self, kind: ValueKind, offset: usize) {
        (**self).value_start(kind, offset);
    }
    #[inline]
    fn key_piece(&mut self, piece: &[u8], offset: usize, escaped: bool) {
        (**self).key_piece(piece, offset, escaped);
    }
    #[inline]
    fn key_end(&mut self, key: &str, offset: usize) {
        (**self).key_end(key, offset);
    }
    #[inline]
    fn key_end_bytes(&mut self, key: &[u8], offset: usize) {
        (**self).key_end_bytes(key, offset);
    }
    #[inline]
    fn key_whole(&mut self, key: &[u8], start: usize, end: usize) {
        (**self).key_whole(key, start, end);
    }
    #[inline]
    fn wants_string(&self) -> bool {
        (**self).wants_string()
    }
    #[inline]
    fn string_piece(&mut self, piece: &[u8], offset: usize, escaped: bool) {
        (**self).string_piece(piece, offset, escaped);
    }
    #[inline]
    fn string_end(&mut self, offset: usize) {
        (**self).string_end(offset);
    }
    #[inline]
    fn number_end(&mut self, lexeme: &str, offset: usize) {
        (**self).number_end(lexeme, offset);
    }
    #[inline]
    fn number_end_bytes(&mut self, lexeme: &[u8], offset: usize) {
        (**self).number_end_bytes(lexeme, offset);
    }
    #[inline]
    fn literal_end(&mut self, kind: ValueKind, value: bool, offset: usize) {
        (**self).literal_end(kind, value, offset);
    }
    #[inline]
    fn container_end(&mut self, kind: ValueKind, offset: usize) {
        (**self).container_end(kind, offset);
    }
}
