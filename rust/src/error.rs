//! Errors: a stable kind, a byte offset into the call's argument text, and a JSON Pointer path.
//!
//! Two families are kept apart in the type: [`ErrorKind::is_incomplete`] is true only for the
//! "the text stopped too early" kinds, so streaming code never matches on message strings.

use std::fmt;

/// Why a JSON text or a tool call was rejected. Every variant has a stable snake_case slug
/// ([`ErrorKind::slug`]) that is part of the public API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The text ended before one complete JSON value was read.
    Truncated,
    /// The text was empty or only whitespace when a value was required.
    Empty,
    /// A byte that cannot continue any valid JSON text at this point.
    UnexpectedByte,
    /// A complete value was followed by something other than whitespace.
    TrailingData,
    /// A second complete top-level value followed the first one (`{...}{...}`).
    ConcatenatedValues,
    /// A byte sequence that is not valid UTF-8.
    InvalidUtf8,
    /// A control character (U+0000..U+001F) written raw inside a string.
    ControlCharacterInString,
    /// A backslash followed by a character that is not a JSON escape.
    InvalidEscape,
    /// A `\u` escape with a non-hexadecimal digit.
    InvalidUnicodeEscape,
    /// A UTF-16 surrogate escape without its other half; such text cannot be encoded as UTF-8.
    LoneSurrogate,
    /// A malformed number (leading zero, missing digits, `1.`, `-`, `1e`).
    InvalidNumber,
    /// An integer part longer than the configured maximum number of digits.
    NumberTooLong,
    /// Nesting deeper than the configured maximum depth.
    TooDeep,
    /// More argument bytes than the configured maximum for one call.
    TooLarge,
    /// The same key twice in one object while the duplicate-key policy is `error`.
    DuplicateKey,
    /// The arguments are valid JSON but not an object.
    NotObject,
    /// The tool name is not registered in the toolset.
    UnknownTool,
    /// The call never received a tool name.
    MissingName,
    /// The arguments break the tool's JSON Schema.
    SchemaViolation,
    /// A call received both object-valued and text fragments, or more data after an object value.
    MixedArguments,
    /// The provider stopped the call (content filter, refusal); it must not be executed.
    Filtered,
    /// An event of the stream that may have carried part of the call could not be read; the
    /// arguments may lack a fragment, so the call must not be executed.
    LostEvent,
    /// The stream's events disagree about the call's arguments: the provider's summary of them
    /// (a Responses `.done`) differs from the fragments it streamed, or a fragment came after
    /// the provider ended a call whose value was not whole. The text is kept as the fragments
    /// made it; the call must not be executed.
    ArgumentsMismatch,
    /// A call to a custom tool (a Responses `custom_tool_call`): its input is free-form text,
    /// not JSON arguments, so it is neither parsed nor checked against a schema. The text is
    /// kept as the call's arguments; the application runs such a tool itself or answers the
    /// call with an error.
    FreeFormCall,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 24] = [
        Self::Truncated,
        Self::Empty,
        Self::UnexpectedByte,
        Self::TrailingData,
        Self::ConcatenatedValues,
        Self::InvalidUtf8,
        Self::ControlCharacterInString,
        Self::InvalidEscape,
        Self::InvalidUnicodeEscape,
        Self::LoneSurrogate,
        Self::InvalidNumber,
        Self::NumberTooLong,
        Self::TooDeep,
        Self::TooLarge,
        Self::DuplicateKey,
        Self::NotObject,
        Self::UnknownTool,
        Self::MissingName,
        Self::SchemaViolation,
        Self::MixedArguments,
        Self::Filtered,
        Self::LostEvent,
        Self::ArgumentsMismatch,
        Self::FreeFormCall,
    ];

    /// The kind whose [`slug`](Self::slug) is `slug`: an error written out (a pickled one)
    /// is read back by it.
    #[must_use]
    pub fn from_slug(slug: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.slug() == slug)
    }

    /// The stable identifier of this kind.
    #[must_use]
    pub fn slug(self) -> &'static str {
        match self {
            Self::Truncated => "truncated",
            Self::Empty => "empty",
            Self::UnexpectedByte => "unexpected_byte",
            Self::TrailingData => "trailing_data",
            Self::ConcatenatedValues => "concatenated_values",
            Self::InvalidUtf8 => "invalid_utf8",
            Self::ControlCharacterInString => "control_character_in_string",
            Self::InvalidEscape => "invalid_escape",
            Self::InvalidUnicodeEscape => "invalid_unicode_escape",
            Self::LoneSurrogate => "lone_surrogate",
            Self::InvalidNumber => "invalid_number",
            Self::NumberTooLong => "number_too_long",
            Self::TooDeep => "too_deep",
            Self::TooLarge => "too_large",
            Self::DuplicateKey => "duplicate_key",
            Self::NotObject => "not_object",
            Self::UnknownTool => "unknown_tool",
            Self::MissingName => "missing_name",
            Self::SchemaViolation => "schema_violation",
            Self::MixedArguments => "mixed_arguments",
            Self::Filtered => "filtered",
            Self::LostEvent => "lost_event",
            Self::ArgumentsMismatch => "arguments_mismatch",
            Self::FreeFormCall => "free_form_call",
        }
    }

    /// True when more input could still have made the text valid (the text stopped early).
    #[must_use]
    pub fn is_incomplete(self) -> bool {
        matches!(self, Self::Truncated | Self::Empty)
    }

    /// True when the text crossed a configured limit (size, depth, digits) rather than broke
    /// the JSON grammar: it may still be well-formed JSON, only larger than allowed.
    #[must_use]
    pub fn is_limit(self) -> bool {
        matches!(self, Self::TooLarge | Self::TooDeep | Self::NumberTooLong)
    }

    /// A short, lowercase, stable description.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Truncated => "the arguments end before the JSON value is complete",
            Self::Empty => "no JSON value",
            Self::UnexpectedByte => "unexpected character",
            Self::TrailingData => "unexpected text after the JSON value",
            Self::ConcatenatedValues => "a second JSON value follows the first",
            Self::InvalidUtf8 => "invalid utf-8",
            Self::ControlCharacterInString => "raw control character in a string",
            Self::InvalidEscape => "invalid escape sequence",
            Self::InvalidUnicodeEscape => "invalid \\u escape",
            Self::LoneSurrogate => "unpaired utf-16 surrogate escape",
            Self::InvalidNumber => "invalid number",
            Self::NumberTooLong => "number has too many digits",
            Self::TooDeep => "nesting is too deep",
            Self::TooLarge => "arguments are too large",
            Self::DuplicateKey => "duplicate key",
            Self::NotObject => "arguments must be a JSON object",
            Self::UnknownTool => "unknown tool",
            Self::MissingName => "the call has no tool name",
            Self::SchemaViolation => "arguments do not match the tool schema",
            Self::MixedArguments => "arguments arrived both as an object and as text",
            Self::Filtered => "the provider stopped this call",
            Self::LostEvent => "part of this call may have been lost in transit",
            Self::ArgumentsMismatch => "the stream's events disagree about this call's arguments",
            Self::FreeFormCall => "a custom tool call: its input is free-form text, not json",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.slug())
    }
}

/// Characters of an error's message or expected text kept whole: past it, a key, a name or
/// a schema's `const` sent back in the text would put up to a whole call into every log line
/// and exception that quotes the error.
pub const ERROR_TEXT_CHARS: usize = 500;

/// Characters of each key of an error's path kept whole.
pub const PATH_KEY_CHARS: usize = 200;

/// The byte offset of `text`'s character past its first `max`, where a cut to `max`
/// characters falls; `None` when `text` has no more than `max`.
#[must_use]
pub fn cut_at(text: &str, max: usize) -> Option<usize> {
    text.char_indices().nth(max).map(|(at, _)| at)
}

/// `text` when it has at most `max` characters; else its first `max` characters, a `…` and
/// how many characters the whole had, so a cut is never read as the value itself.
#[cold]
#[inline(never)]
#[must_use]
pub fn capped(text: &str, max: usize) -> String {
    match cut_at(text, max) {
        Some(cut) => cut_told(text, cut),
        None => text.to_owned(),
    }
}

/// `text` up to byte `cut`, then a `…` and how many characters the whole had.
fn cut_told(text: &str, cut: usize) -> String {
    format!("{}…({} chars)", &text[..cut], text.chars().count())
}

/// The JSON Pointer `path` with each reference token longer than [`PATH_KEY_CHARS`] cut as
/// [`capped`] cuts, a step earlier where the cut would split a `~` escape.
#[cold]
#[inline(never)]
#[must_use]
pub fn capped_path(path: &str) -> String {
    if path.len() <= PATH_KEY_CHARS {
        // A byte count within the limit is a character count within it too.
        return path.to_owned();
    }
    let tokens: Vec<String> = path
        .split('/')
        .map(|token| {
            if token.len() <= PATH_KEY_CHARS {
                return token.to_owned();
            }
            let Some(mut at) = cut_at(token, PATH_KEY_CHARS) else {
                return token.to_owned();
            };
            // A cut right after the `~` of an escape would leave one no pointer reads.
            if token[..at].ends_with('~') {
                at -= 1;
            }
            cut_told(token, at)
        })
        .collect();
    tokens.join("/")
}

/// A rejected JSON text or tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Byte offset into the argument text where the problem became certain.
    pub offset: usize,
    /// JSON Pointer (RFC 6901) of the value being read, `""` for the root.
    pub path: String,
    /// A message for people and models; defaults to the kind's description.
    pub message: String,
    /// Extra detail for schema violations; `None` for grammar errors.
    pub detail: Option<Box<SchemaDetail>>,
}

/// What a schema violation is about, in words built from the schema.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SchemaDetail {
    /// The JSON Schema keyword that failed (`type`, `enum`, `additionalProperties`, ...).
    pub keyword: String,
    /// What was expected, in words (`one of "low", "high"`, `integer`, `<= 100`).
    pub expected: String,
    /// The offending value, cut to 200 characters.
    pub got: String,
}

impl Error {
    /// An error with the kind's default message.
    #[cold]
    #[inline(never)]
    #[must_use]
    pub fn new(kind: ErrorKind, offset: usize, path: String) -> Self {
        Self {
            kind,
            offset,
            path,
            message: kind.describe().to_owned(),
            detail: None,
        }
    }

    /// An error with a specific message.
    #[cold]
    #[inline(never)]
    #[must_use]
    pub fn with_message(kind: ErrorKind, offset: usize, path: String, message: String) -> Self {
        Self {
            kind,
            offset,
            path,
            message,
            detail: None,
        }
    }

    /// This error as it is shown outside the core: its message and expected text cut to
    /// [`ERROR_TEXT_CHARS`] characters and each key of its path to [`PATH_KEY_CHARS`] (see
    /// [`capped`]), as they may quote a whole key or name the model sent, or a schema's whole
    /// `const`. `got` is cut already, and a secret's is redacted before (which reads the
    /// whole path: the core keeps it whole).
    #[cold]
    #[inline(never)]
    #[must_use]
    pub fn capped(&self) -> Self {
        Self {
            kind: self.kind,
            offset: self.offset,
            path: capped_path(&self.path),
            message: capped(&self.message, ERROR_TEXT_CHARS),
            detail: self.detail.as_deref().map(|d| {
                Box::new(SchemaDetail {
                    keyword: d.keyword.clone(),
                    expected: capped(&d.expected, ERROR_TEXT_CHARS),
                    got: d.got.clone(),
                })
            }),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{} at byte {}", self.message, self.offset)
        } else {
            write!(
                f,
                "{} at byte {} (path {})",
                self.message, self.offset, self.path
            )
        }
    }
}

impl std::error::Error for Error {}

/// Misuse of the API by the caller (never caused by model output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Misuse {
    /// `feed` or `push` after `finish`.
    Finished,
    /// No call has that ordinal.
    NoSuchCall(usize),
    /// A configuration value outside its allowed range.
    BadConfig(String),
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Finished => f.write_str("already finished: create a new one for the next stream"),
            Self::NoSuchCall(n) => write!(f, "no call with ordinal {n}"),
            Self::BadConfig(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Misuse {}

#[cfg(test)]
mod tests {
    use super::{Error, ErrorKind, SchemaDetail, ERROR_TEXT_CHARS, PATH_KEY_CHARS};

    #[test]
    fn a_shown_error_keeps_the_start_of_each_long_text_and_says_how_long_it_was() {
        let key = "k".repeat(102_400);
        let mut e = Error::with_message(
            ErrorKind::SchemaViolation,
            3,
            format!("/a/{key}~1b/0"),
            format!("unexpected property \"{key}\""),
        );
        e.detail = Some(Box::new(SchemaDetail {
            keyword: "const".to_owned(),
            expected: "é".repeat(102_400),
            got: "x".to_owned(),
        }));
        let shown = e.capped();
        let cut_key = format!("{}…(102403 chars)", "k".repeat(PATH_KEY_CHARS));
        assert_eq!(shown.path, format!("/a/{cut_key}/0"));
        let message = format!(
            "unexpected property \"{}",
            "k".repeat(ERROR_TEXT_CHARS - 21)
        );
        assert_eq!(shown.message, format!("{message}…(102422 chars)"));
        let detail = shown.detail.as_deref().map(|d| d.expected.clone());
        let expected = format!("{}…(102400 chars)", "é".repeat(ERROR_TEXT_CHARS));
        assert_eq!(detail, Some(expected));
        // A short error is shown as it is.
        let short = Error::new(ErrorKind::Truncated, 0, "/a/b".to_owned());
        assert_eq!(short.capped(), short);
    }

    #[test]
    fn a_cut_key_never_ends_in_half_an_escape() {
        let key = format!("{}~1rest", "k".repeat(PATH_KEY_CHARS - 1));
        let shown = Error::new(ErrorKind::Truncated, 0, format!("/{key}")).capped();
        let whole = key.chars().count();
        let kept = "k".repeat(PATH_KEY_CHARS - 1);
        assert_eq!(shown.path, format!("/{kept}…({whole} chars)"));
        // A key holding the mark itself before the cut is cut at the same place.
        let key = format!("…{}~1rest", "k".repeat(PATH_KEY_CHARS - 2));
        let shown = Error::new(ErrorKind::Truncated, 0, format!("/{key}")).capped();
        let whole = key.chars().count();
        let kept = format!("…{}", "k".repeat(PATH_KEY_CHARS - 2));
        assert_eq!(shown.path, format!("/{kept}…({whole} chars)"));
    }

    #[test]
    fn every_kind_reads_back_from_its_slug() {
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_slug(kind.slug()), Some(kind));
        }
        assert_eq!(ErrorKind::from_slug("no_such_kind"), None);
    }

    #[test]
    fn all_lists_every_kind() {
        // A new variant fails to compile here until it is given a place, which must be its
        // place in `ALL`.
        let place = |kind: ErrorKind| match kind {
            ErrorKind::Truncated => 0,
            ErrorKind::Empty => 1,
            ErrorKind::UnexpectedByte => 2,
            ErrorKind::TrailingData => 3,
            ErrorKind::ConcatenatedValues => 4,
            ErrorKind::InvalidUtf8 => 5,
            ErrorKind::ControlCharacterInString => 6,
            ErrorKind::InvalidEscape => 7,
            ErrorKind::InvalidUnicodeEscape => 8,
            ErrorKind::LoneSurrogate => 9,
            ErrorKind::InvalidNumber => 10,
            ErrorKind::NumberTooLong => 11,
            ErrorKind::TooDeep => 12,
            ErrorKind::TooLarge => 13,
            ErrorKind::DuplicateKey => 14,
            ErrorKind::NotObject => 15,
            ErrorKind::UnknownTool => 16,
            ErrorKind::MissingName => 17,
            ErrorKind::SchemaViolation => 18,
            ErrorKind::MixedArguments => 19,
            ErrorKind::Filtered => 20,
            ErrorKind::LostEvent => 21,
            ErrorKind::ArgumentsMismatch => 22,
            ErrorKind::FreeFormCall => 23,
        };
        for (at, kind) in ErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(place(kind), at);
        }
    }
}
