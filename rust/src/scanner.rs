//! A resumable push parser (validator) for one JSON text.
//!
//! Design notes:
//! - Each input byte is examined once. All state that must survive a split lives in
//!   [`Scanner`]: the lexical state (inside a string, a pending escape, `\uXXXX` digits read so
//!   far, a high surrogate awaiting its low half, UTF-8 continuation bytes still expected, a
//!   number or literal in progress) and the container stack. Feeding one byte at a time or the
//!   whole text at once therefore visits the same states in the same order, which is what makes
//!   every verdict and every error offset identical for every split.
//! - Shortcuts past the states (a complete escape, literal or number read in place, a plain
//!   ASCII key or string ended at its quote, a key followed at once by its colon and value, the
//!   next member `,"` or the `}` after a scalar member, a valid multi-byte character checked
//!   whole) are taken only when the whole token is in the text and valid. A token cut by the
//!   end of a push, or an invalid one, goes through the byte-wise states, which alone report
//!   errors; so events, offsets and errors still do not depend on the split, and the shortcuts
//!   only save the state dispatch (an unpredictable indirect jump per byte of `\uXXXX` escapes
//!   and punctuation) and the carried state's loads and stores.
//! - The scanner validates; it does not build values. Values (final or partial) are built on
//!   demand by [`crate::value`] from the bytes the scanner has accepted, so feeding costs nothing
//!   for callers who only want the verdict or who hand the finished text to another parser
//!   (pydantic's `model_validate_json`). Rejected alternative: building a tree while scanning —
//!   it allocates per scalar even when nobody reads the tree.
//! - Every pushed byte is kept in one buffer ([`Scanner::text`]), up to `max_bytes`: the raw
//!   arguments are needed for error payloads, replays and the value builder anyway, and number
//!   lexemes are reported as slices of it without copying.
//! - Containers are tracked on an explicit stack of small plain frames, so depth costs no
//!   recursion (no stack overflow at any depth) and no allocation once the stack has grown.
//! - Duplicate keys are detected exactly: each open object has one entry per key on stacks
//!   shared by all depths (an object's entries sit above those of the objects around it, and
//!   it gives them back when it closes), so opening an object allocates and clears nothing.
//!   A key of at most 8 bytes without a NUL byte (most keys) is its bytes packed in a word,
//!   on its own stack, so it is compared without a hash or a second look, one word per earlier
//!   key, and only when a one-word filter of the object's keys says it may repeat one; a
//!   longer key has a hash and is confirmed byte for byte. A key without escapes is not copied
//!   at all: it is a range of [`Scanner::text`], which holds every scanned byte anyway; only a
//!   key with an escape is decoded, into a shared arena where it stays. Rejected
//!   alternatives: copying every key twice (current key, then a per-object arena) and hashing
//!   it byte by byte, a quarter of the scan on tool arguments; per-frame key vectors and hash
//!   sets, whose clearing on every `{` and drop glue cost more than the keys of a small object.
//! - Per-byte work happens in runs, not in the state dispatch: string content is skipped 8 bytes
//!   at a time while it is plain ASCII (SWAR on a `u64`, safe code), and a valid non-ASCII
//!   character whose bytes are all in the push is checked from one 4-byte read; any other
//!   non-ASCII byte is validated with the same continuation state that carries a character cut
//!   by the end of a push, so a split or invalid character goes through the same checks (and
//!   fails at the same byte); number digits are consumed in a tight loop; the last bytes of a push are
//!   checked as the top of the text's last 8-byte word. Rejected alternative:
//!   `std::str::from_utf8` on each run: on 3-20 byte fragments its call and set-up cost more
//!   than the validation itself, and its error still had to be mapped back to the byte-wise
//!   offsets.

use std::collections::{HashMap, HashSet};

use crate::error::{Error, ErrorKind};
use crate::visit::{NoVisitor, ValueKind, Visitor};

/// What to do when an object repeats a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DuplicateKeys {
    /// Reject the text when the second key closes (recommended for tool arguments: which
    /// `amount` did the model mean?).
    #[default]
    Error,
    /// Accept; the last value wins (what `json.loads` does).
    LastWins,
}

/// Limits and policies of one scanner. Each limit is checked at the byte that crosses it, so the
/// error offset does not depend on how the input was split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanConfig {
    /// Maximum nesting depth of objects and arrays (default 64, at most [`MAX_DEPTH_LIMIT`]).
    pub max_depth: usize,
    /// Maximum number of bytes of one JSON text (default 8 MiB).
    pub max_bytes: usize,
    /// Maximum digits in the integer part of a number (default 4300, CPython's own limit for
    /// converting text to `int`, so every accepted integer converts).
    pub max_number_digits: usize,
    /// Duplicate-key policy.
    pub duplicate_keys: DuplicateKeys,
}

/// The largest `max_depth` a configuration may ask for.
pub const MAX_DEPTH_LIMIT: usize = 128;

impl Default for ScanConfig {
    fn default() -> Self {
        Self {
            max_depth: 64,
            max_bytes: 8 * 1024 * 1024,
            max_number_digits: 4300,
            duplicate_keys: DuplicateKeys::Error,
        }
    }
}

impl ScanConfig {
    /// Checks that every limit is in its allowed range.
    ///
    /// # Errors
    /// A message naming the offending setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_depth == 0 || self.max_depth > MAX_DEPTH_LIMIT {
            return Err(format!("max_depth must be between 1 and {MAX_DEPTH_LIMIT}"));
        }
        if self.max_bytes == 0 {
            return Err("max_bytes must be at least 1".to_owned());
        }
        if self.max_number_digits == 0 {
            return Err("max_number_digits must be at least 1".to_owned());
        }
        Ok(())
    }
}

/// Where the scanner stands after a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// More input is needed (or allowed: a complete top-level number may still grow).
    Incomplete,
    /// One complete value has been read; only whitespace may follow.
    Complete,
    /// The text can no longer become valid JSON.
    Invalid(Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    /// Before the top-level value.
    Start,
    /// A value must come next (after `:` or `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ValueOrClose,
    /// After `{`: a key or `}`.
    KeyOrClose,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value inside a container: `,` or the closing bracket.
    AfterValue,
    /// The top-level value is complete.
    Done,
    /// Inside a string (key or value).
    Str,
    /// After a backslash in a string.
    Escape,
    /// Reading the hex digits of `\uXXXX`.
    Hex,
    /// A high surrogate was read: expecting `\`.
    LowBackslash,
    /// A high surrogate was read: expecting `u`.
    LowU,
    /// In a number.
    Num(NumState),
    /// In `true`, `false` or `null`.
    Literal,
    /// An error was found; further input is kept but not scanned.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumState {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

impl NumState {
    fn can_end(self) -> bool {
        matches!(self, Self::Zero | Self::Int | Self::Frac | Self::ExpDigits)
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Frame {
    is_object: bool,
    /// Elements started so far (arrays) or members whose key closed (objects).
    count: usize,
    /// The key of the current member (objects): while it has no escape, it is its raw bytes
    /// `text[key_start..key_end]`; after its first escape it is decoded into
    /// `Keys::arena[key_start..key_end]`.
    key_start: usize,
    key_end: usize,
    key_escaped: bool,
    /// Objects: the key belongs to the member being read now (false between `,` and the key's
    /// end). Arrays: an element is being read (false between `,` and the next element).
    has_key: bool,
    /// This object's share of the key stacks.
    keys: KeySpan,
}

/// Where one object's entries begin on each stack of [`Keys`], and what it knows of them.
#[derive(Debug, Default, Clone, Copy)]
struct KeySpan {
    short: usize,
    long: usize,
    arena: usize,
    /// One bit per short key, picked by a hash of its word: a key whose bit is clear is new
    /// without a look at the others, which is most keys of the usual small object.
    short_bits: u64,
    /// This object's sets in `Keys::lookups` (at its depth) are built.
    short_indexed: bool,
    long_indexed: bool,
}

/// The keys of every open object, for duplicate detection, on stacks shared by all depths.
/// An object's entries are those above its [`KeySpan`]: the objects nested in it close, and
/// give theirs back, before it reads its next key. So an object costs no allocation, no
/// clearing of its own containers and no drop glue; a frame is a few words.
#[derive(Debug, Default, Clone)]
struct Keys {
    /// Decoded keys that had an escape, back to back: each open object's current key while it
    /// has one, and its longer keys, kept to confirm a hash match.
    arena: Vec<u8>,
    /// The keys of at most 8 bytes and no NUL byte (nearly all keys; a raw key cannot hold a
    /// NUL), each its bytes packed in a word: with no NUL among them the zero padding tells
    /// the length, so one word compare decides equality.
    short: Vec<u64>,
    /// Every other key.
    long: Vec<KeyEntry>,
    /// Per depth, hash sets of the object there once it has many keys.
    lookups: Vec<Lookup>,
}

#[derive(Debug, Default, Clone)]
struct Lookup {
    /// The object's entries of `Keys::short`.
    short: HashSet<u64>,
    /// `word` -> positions in `Keys::long`.
    long: HashMap<u64, Vec<u32>>,
}

/// One key of an object. A key of at most 8 bytes is identified by its length and `word`, its
/// bytes packed; a longer one has a hash in `word` and is confirmed byte for byte from the text
/// (`start` is its offset there) or, when it had escapes, from the arena.
#[derive(Debug, Clone, Copy)]
struct KeyEntry {
    word: u64,
    len: usize,
    start: usize,
    in_arena: bool,
}

/// Above this many keys an object switches from a linear scan of hashes to a hash map.
const LINEAR_KEY_LIMIT: usize = 16;

impl Keys {
    /// The span of an object opening now: empty, on top of the stacks.
    fn open(&self) -> KeySpan {
        KeySpan {
            short: self.short.len(),
            long: self.long.len(),
            arena: self.arena.len(),
            ..KeySpan::default()
        }
    }

    /// Gives back the entries of an object that closed.
    fn close(&mut self, span: &KeySpan) {
        self.short.truncate(span.short);
        self.long.truncate(span.long);
        self.arena.truncate(span.arena);
    }

    /// The decoded current key of `frame` (see `Frame::key_start`).
    fn key_bytes<'a>(&'a self, frame: &Frame, text: &'a [u8]) -> &'a [u8] {
        current_key(&self.arena, frame, text)
    }

    /// Appends decoded bytes to `frame`'s current key, moving its raw bytes so far to the
    /// arena at its first escape. The key being read is always the innermost object's, so it
    /// grows at the top of the arena.
    fn push_decoded(&mut self, frame: &mut Frame, text: &[u8], bytes: &[u8]) {
        if !frame.key_escaped {
            let raw = text.get(frame.key_start..frame.key_end).unwrap_or_default();
            frame.key_start = self.arena.len();
            self.arena.extend_from_slice(raw);
            frame.key_escaped = true;
        }
        self.arena.extend_from_slice(bytes);
        frame.key_end = self.arena.len();
    }

    /// Records `frame`'s current key (the object at depth `level + 1`); returns false when it
    /// was already present.
    #[inline(always)]
    fn insert(&mut self, frame: &mut Frame, level: usize, text: &[u8]) -> bool {
        // The usual case, a short raw key: its word is read straight from the text.
        if !frame.key_escaped {
            let len = frame.key_end - frame.key_start;
            if len <= 8 {
                // The 8 bytes ending with the key, shifted down to it (a shift by 64 is an
                // empty key).
                let word = match frame
                    .key_end
                    .checked_sub(8)
                    .and_then(|at| text.get(at..frame.key_end))
                    .and_then(<[u8]>::first_chunk::<8>)
                {
                    Some(chunk) => u64::from_le_bytes(*chunk)
                        .checked_shr(8 * (8 - len) as u32)
                        .unwrap_or(0),
                    None => pack_near_start(text, frame.key_start, frame.key_end),
                };
                return self.insert_short(&mut frame.keys, level, word);
            }
        }
        self.insert_slow(frame, level, text)
    }

    /// Records a key of `short`; returns false when it was already present.
    #[inline(always)]
    fn insert_short(&mut self, span: &mut KeySpan, level: usize, word: u64) -> bool {
        if self.short.len().saturating_sub(span.short) >= LINEAR_KEY_LIMIT {
            return self.insert_short_many(span, level, word);
        }
        let bit = 1u64 << (word.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58);
        if span.short_bits & bit != 0 {
            let earlier = self.short.get(span.short..).unwrap_or_default();
            if earlier.contains(&word) {
                return false;
            }
        }
        span.short_bits |= bit;
        if self.short.capacity() == 0 {
            // Nearly every text has a dozen keys or more: one allocation instead of three.
            self.short.reserve(SHORT_KEYS_RESERVED);
        }
        self.short.push(word);
        true
    }

    // Out of line: the set code would otherwise cost every small object's keys register saves.
    #[inline(never)]
    fn insert_short_many(&mut self, span: &mut KeySpan, level: usize, word: u64) -> bool {
        let set = &mut lookup(&mut self.lookups, level).short;
        if !span.short_indexed {
            set.clear();
            set.extend(self.short.get(span.short..).unwrap_or_default());
            span.short_indexed = true;
        }
        if !set.insert(word) {
            return false;
        }
        self.short.push(word);
        true
    }

    #[inline(never)]
    fn insert_slow(&mut self, frame: &mut Frame, level: usize, text: &[u8]) -> bool {
        let key = current_key(&self.arena, frame, text);
        let len = key.len();
        if len <= 8 && !key.contains(&0) {
            let word = pack(key);
            return self.insert_short(&mut frame.keys, level, word);
        }
        let word = if len <= 8 { pack(key) } else { hash(key) };
        let span = &mut frame.keys;
        let arena = &self.arena;
        let same = |e: &KeyEntry| {
            e.word == word
                && e.len == len
                && (len <= 8 || {
                    let stored = if e.in_arena {
                        arena.get(e.start..e.start + len)
                    } else {
                        text.get(e.start..e.start + len)
                    };
                    stored == Some(key)
                })
        };
        let earlier = self.long.get(span.long..).unwrap_or_default();
        if earlier.len() < LINEAR_KEY_LIMIT {
            if earlier.iter().any(same) {
                return false;
            }
        } else {
            let map = &mut lookup(&mut self.lookups, level).long;
            if !span.long_indexed {
                map.clear();
                for (pos, e) in earlier.iter().enumerate() {
                    map.entry(e.word).or_default().push(to_u32(span.long + pos));
                }
                span.long_indexed = true;
            }
            if let Some(positions) = map.get(&word) {
                if positions.iter().any(|&p| same(&self.long[p as usize])) {
                    return false;
                }
            }
            map.entry(word).or_default().push(to_u32(self.long.len()));
        }
        // An escaped key stays where it was decoded, in the arena.
        let (start, in_arena) = if len <= 8 {
            (0, false)
        } else {
            (frame.key_start, frame.key_escaped)
        };
        self.long.push(KeyEntry {
            word,
            len,
            start,
            in_arena,
        });
        true
    }
}

/// The decoded current key of `frame` (see `Frame::key_start`).
fn current_key<'a>(arena: &'a [u8], frame: &Frame, text: &'a [u8]) -> &'a [u8] {
    let bytes = if frame.key_escaped { arena } else { text };
    // Out of range only after `take_text`.
    bytes
        .get(frame.key_start..frame.key_end)
        .unwrap_or_default()
}

/// The hash sets of the object at depth `level + 1`, made on first use.
fn lookup(lookups: &mut Vec<Lookup>, level: usize) -> &mut Lookup {
    if lookups.len() <= level {
        lookups.resize_with(level + 1, Lookup::default);
    }
    &mut lookups[level]
}

fn to_u32(n: usize) -> u32 {
    // Objects are capped far below 4 Gi keys by `max_bytes` checks in practice; saturate
    // rather than wrap if a caller configures something absurd.
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Up to 8 bytes, little-endian, zero-padded (exact: the length tells the padding apart).
#[inline]
fn pack(bytes: &[u8]) -> u64 {
    let mut word = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(8) {
        word |= u64::from(b) << (8 * i);
    }
    word
}

/// [`pack`] for a key that ends within the first 8 bytes of the text (the first key, at
/// most): out of line, so that its byte loop does not take registers from every other key.
#[cold]
#[inline(never)]
fn pack_near_start(text: &[u8], start: usize, end: usize) -> u64 {
    pack(text.get(start..end).unwrap_or_default())
}

/// A word-at-a-time hash of a longer key; collisions are resolved by comparing bytes.
fn hash(bytes: &[u8]) -> u64 {
    let mut h = bytes.len() as u64;
    for chunk in bytes.chunks(8) {
        h = (h.rotate_left(5) ^ pack(chunk)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h
}

/// First allocation of a scanner's text: most tool-call arguments fit in it.
const TEXT_RESERVED: usize = 256;

/// First allocation of the short-key list.
const SHORT_KEYS_RESERVED: usize = 16;

/// A resumable JSON validator: push bytes in any pieces, then [`Scanner::finish`].
#[derive(Debug, Clone)]
pub struct Scanner {
    config: ScanConfig,
    text: Vec<u8>,
    /// Bytes of `text` already scanned.
    scanned: usize,
    lex: Lex,
    frames: Vec<Frame>,
    keys: Keys,
    depth: usize,
    in_key: bool,
    /// The current string value is decoded for the visitor (see [`Visitor::wants_string`]).
    want_str: bool,
    /// UTF-8 continuation bytes still expected in a string, and the allowed range of the next one.
    utf8_need: u8,
    utf8_lo: u8,
    utf8_hi: u8,
    hex_digits: u8,
    hex_value: u32,
    high_surrogate: u32,
    num_start: usize,
    num_int_digits: usize,
    /// Some number lexeme is long or has a long exponent (see [`Scanner::plain_numbers`]).
    long_numbers: bool,
    /// Some object repeated a key, under the `last_wins` policy (see [`Scanner::repeated_keys`]).
    repeated_keys: bool,
    literal: &'static [u8],
    literal_pos: u8,
    value_done: bool,
    error: Option<Error>,
    finished: bool,
    overflowed: bool,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new(ScanConfig::default())
    }
}

impl Scanner {
    /// A scanner with the given limits (see [`ScanConfig::validate`]).
    #[must_use]
    pub fn new(config: ScanConfig) -> Self {
        Self {
            config,
            text: Vec::new(),
            scanned: 0,
            lex: Lex::Start,
            frames: Vec::new(),
            keys: Keys::default(),
            depth: 0,
            in_key: false,
            want_str: false,
            utf8_need: 0,
            utf8_lo: 0x80,
            utf8_hi: 0xBF,
            hex_digits: 0,
            hex_value: 0,
            high_surrogate: 0,
            num_start: 0,
            num_int_digits: 0,
            long_numbers: false,
            repeated_keys: false,
            literal: b"",
            literal_pos: 0,
            value_done: false,
            error: None,
            finished: false,
            overflowed: false,
        }
    }

    /// The configuration in force.
    #[must_use]
    pub fn config(&self) -> &ScanConfig {
        &self.config
    }

    /// Every byte pushed so far (up to `max_bytes`).
    #[must_use]
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// Moves the text out (the scanner is left empty); for callers done with the scanner.
    pub fn take_text(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.text)
    }

    /// True once bytes past `max_bytes` were offered: the text holds only the first
    /// `max_bytes` of them, whatever error the scan found first.
    #[must_use]
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// The first error found, if any.
    #[must_use]
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// True once the top-level value is complete (a top-level number counts only once a
    /// delimiter or [`Scanner::finish`] proved it complete).
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.value_done && self.error.is_none()
    }

    /// True when the text pushed is one complete value once it ends here: [`Scanner::is_complete`],
    /// or a top-level number that no byte may follow (`1` is whole only at the end of the text).
    /// Reads what was scanned: bytes pushed but not scanned yet count as unread.
    #[must_use]
    pub fn is_complete_at_end(&self) -> bool {
        self.is_complete()
            || (self.error.is_none()
                && self.depth == 0
                && self.scanned == self.text.len()
                && matches!(self.lex, Lex::Num(st) if st.can_end()))
    }

    /// True when no byte other than whitespace has been pushed.
    #[must_use]
    pub fn is_blank(&self) -> bool {
        matches!(self.lex, Lex::Start)
    }

    /// True when every number read so far has at most 18 characters and an exponent of at most
    /// two digits: such a number is an integer within 64 bits or a double that neither
    /// overflows nor needs more than the usual parse, so a reader limited to machine numbers
    /// (`orjson`, say) reads it exactly as an arbitrary-precision one (`json.loads`) does.
    #[must_use]
    pub fn plain_numbers(&self) -> bool {
        !self.long_numbers
    }

    /// True when some object repeated a key that the `last_wins` policy let through: a value
    /// read from the text may then differ from what its first occurrence said.
    #[must_use]
    pub fn repeated_keys(&self) -> bool {
        self.repeated_keys
    }

    /// The current status.
    #[must_use]
    pub fn status(&self) -> Status {
        if let Some(e) = &self.error {
            Status::Invalid(e.clone())
        } else if self.value_done {
            Status::Complete
        } else {
            Status::Incomplete
        }
    }

    /// Offset up to which the text is known to be valid JSON (a prefix of it).
    #[must_use]
    pub fn valid_len(&self) -> usize {
        self.error
            .as_ref()
            .map_or(self.text.len(), |e| e.offset.min(self.text.len()))
    }

    /// Pushes the next piece of the text.
    pub fn push(&mut self, bytes: &[u8]) -> Status {
        self.push_with(bytes, &mut NoVisitor)
    }

    /// Pushes the next piece of the text, reporting events to `visitor`.
    pub fn push_with<V: Visitor>(&mut self, bytes: &[u8], visitor: &mut V) -> Status {
        self.feed_with(bytes, visitor);
        self.status()
    }

    /// [`Scanner::push`] for callers that do not need the status (it is at hand through
    /// [`Scanner::is_complete`] and [`Scanner::error`]): no [`Status`] is built per fragment.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.feed_with(bytes, &mut NoVisitor);
    }

    /// Appends bytes to the text without scanning them yet, when that is allowed: the next
    /// [`Scanner::feed`], [`Scanner::push`] or [`Scanner::finish`] (or their `_with` forms; an
    /// empty `feed` scans just them) scans them, in order and once, so verdicts, errors and visitor events are
    /// the same as if each piece had been pushed. Until then the state readers
    /// ([`Scanner::status`], [`Scanner::error`], [`Scanner::is_complete`], [`Scanner::is_blank`],
    /// ...) describe only the part already scanned.
    ///
    /// Returns false, appending nothing, after [`Scanner::finish`] or when the bytes would cross
    /// `max_bytes` (that limit is decided against the bytes before it, so the caller pushes them
    /// instead, with its visitor). For callers that read the state rarely: resuming the byte
    /// loop costs tens of nanoseconds per push whatever the piece's length, which is most of a
    /// push for the 3-20 byte fragments of a stream.
    pub fn try_append(&mut self, bytes: &[u8]) -> bool {
        if self.finished || bytes.len() > self.config.max_bytes.saturating_sub(self.text.len()) {
            return false;
        }
        self.append_text(bytes);
        true
    }

    /// Appends to `text`, starting it at [`TEXT_RESERVED`] bytes so that a small call's
    /// arguments live in one allocation rather than in five or six doublings.
    #[inline(always)]
    fn append_text(&mut self, bytes: &[u8]) {
        if self.text.capacity() == 0 {
            self.text.reserve(bytes.len().max(TEXT_RESERVED));
        }
        self.text.extend_from_slice(bytes);
    }

    /// How many appended bytes wait to be scanned (0 once an error or `finish` ends scanning).
    #[must_use]
    pub fn unscanned(&self) -> usize {
        if self.error.is_some() || self.finished {
            0
        } else {
            self.text.len() - self.scanned
        }
    }

    /// [`Scanner::push_with`] without the status (see [`Scanner::feed`]).
    pub fn feed_with<V: Visitor>(&mut self, bytes: &[u8], visitor: &mut V) {
        if self.finished {
            return;
        }
        let room = self.config.max_bytes.saturating_sub(self.text.len());
        let (accepted, over) = if bytes.len() > room {
            (&bytes[..room], true)
        } else {
            (bytes, false)
        };
        self.append_text(accepted);
        if self.error.is_none() {
            if V::WANTS_STRINGS && !self.in_key && self.in_string() {
                // The visitor may not be the one that saw this string start.
                self.want_str = visitor.wants_string();
            }
            self.scan(visitor);
        }
        if over && !self.overflowed {
            self.overflowed = true;
            if self.error.is_none() {
                let offset = self.config.max_bytes;
                let text = std::mem::take(&mut self.text);
                self.fail(&text, ErrorKind::TooLarge, offset);
                self.text = text;
            }
        }
    }

    /// Declares the end of the text: completes a pending top-level number and reports a text that
    /// stopped early as [`ErrorKind::Truncated`] (or [`ErrorKind::Empty`] when it had no value).
    ///
    /// # Errors
    /// The first error of the text.
    pub fn finish(&mut self) -> Result<(), Error> {
        self.finish_with(&mut NoVisitor)
    }

    /// [`Scanner::finish`], reporting the events it causes to `visitor`.
    ///
    /// # Errors
    /// The first error of the text.
    pub fn finish_with<V: Visitor>(&mut self, visitor: &mut V) -> Result<(), Error> {
        self.complete_top_level_number(visitor);
        if !self.finished {
            self.finished = true;
            if self.error.is_none() && !self.value_done {
                let end = self.text.len();
                let text = std::mem::take(&mut self.text);
                let kind = match self.lex {
                    Lex::Start => ErrorKind::Empty,
                    _ => ErrorKind::Truncated,
                };
                self.fail(&text, kind, end);
                self.text = text;
            }
        }
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Completes a top-level number that reaches the end of the text, reporting it to
    /// `visitor`, as [`Scanner::finish`] does first; for a caller who knows that no byte
    /// follows and reads the value before finishing: a number is pending until a delimiter or
    /// the end of the text, so without this the last value of `123` would reach nobody who
    /// reads early. Scans what is left first; does nothing in any other state, and nothing
    /// twice.
    pub fn complete_top_level_number<V: Visitor>(&mut self, visitor: &mut V) {
        if self.finished || self.error.is_some() {
            return;
        }
        if self.scanned < self.text.len() {
            self.scan(visitor);
        }
        if let Lex::Num(st) = self.lex {
            if st.can_end() && self.depth == 0 && self.error.is_none() {
                let end = self.text.len();
                let text = std::mem::take(&mut self.text);
                self.end_number(&text, end, visitor);
                self.text = text;
            }
        }
    }

    /// The JSON Pointer of the position being read (the value, member or element).
    #[must_use]
    pub fn pointer(&self) -> String {
        self.pointer_in(&self.text)
    }

    /// [`Scanner::pointer`] while the text is moved out of `self` (see [`Scanner::scan`]).
    fn pointer_in(&self, text: &[u8]) -> String {
        let mut out = String::new();
        for frame in &self.frames[..self.depth] {
            if frame.is_object {
                if frame.has_key {
                    out.push('/');
                    let key = self.keys.key_bytes(frame, text);
                    push_pointer_token(&mut out, &String::from_utf8_lossy(key));
                }
            } else if frame.has_key && frame.count > 0 {
                out.push('/');
                out.push_str(&(frame.count - 1).to_string());
            }
        }
        out
    }

    /// True inside a string (key or value), escapes included.
    fn in_string(&self) -> bool {
        matches!(
            self.lex,
            Lex::Str | Lex::Escape | Lex::Hex | Lex::LowBackslash | Lex::LowU
        )
    }

    #[cold]
    #[inline(never)]
    fn fail(&mut self, text: &[u8], kind: ErrorKind, offset: usize) {
        let path = self.pointer_in(text);
        self.error = Some(Error::new(kind, offset, path));
        self.lex = Lex::Failed;
    }

    #[cold]
    #[inline(never)]
    fn fail_with(&mut self, text: &[u8], kind: ErrorKind, offset: usize, message: String) {
        let path = self.pointer_in(text);
        self.error = Some(Error::with_message(kind, offset, path, message));
        self.lex = Lex::Failed;
    }

    #[inline]
    fn start_container<V: Visitor>(
        &mut self,
        text: &[u8],
        is_object: bool,
        pos: usize,
        visitor: &mut V,
    ) -> bool {
        if self.depth >= self.config.max_depth {
            let max = self.config.max_depth;
            self.fail_with(
                text,
                ErrorKind::TooDeep,
                pos,
                format!("nesting is deeper than {max} levels"),
            );
            return false;
        }
        visitor.value_start(
            if is_object {
                ValueKind::Object
            } else {
                ValueKind::Array
            },
            pos,
        );
        // Frames above the depth are stale: a new one replaces them.
        self.frames.truncate(self.depth);
        self.frames.push(Frame {
            is_object,
            keys: self.keys.open(),
            ..Frame::default()
        });
        self.depth += 1;
        self.lex = if is_object {
            Lex::KeyOrClose
        } else {
            Lex::ValueOrClose
        };
        true
    }

    /// A value starts at `pos` with byte `b`: scans into it as far as the text allows (a
    /// container only past its bracket) and returns the index of the next byte to look at (the
    /// end of the text after an error).
    #[inline]
    fn start_value<V: Visitor>(
        &mut self,
        text: &[u8],
        b: u8,
        pos: usize,
        visitor: &mut V,
    ) -> usize {
        let end = text.len();
        if self.depth > 0 {
            let frame = &mut self.frames[self.depth - 1];
            if !frame.is_object {
                frame.count += 1;
                frame.has_key = true;
            }
        }
        match b {
            b'"' => {
                visitor.value_start(ValueKind::String, pos);
                self.in_key = false;
                self.want_str = V::WANTS_STRINGS && visitor.wants_string();
                // The usual short plain string, whole in this push, without the string states;
                // the same events as `flush_run` and `end_string` give it.
                let k = skip_plain_ascii(text, pos + 1);
                if text.get(k) == Some(&b'"') {
                    if V::WANTS_STRINGS && self.want_str && k > pos + 1 {
                        visitor.string_piece(&text[pos + 1..k], pos + 1, false);
                    }
                    visitor.string_end(k);
                    self.end_value();
                    return k + 1;
                }
                self.lex = Lex::Str;
                self.scan_string_run_from(text, pos + 1, k, visitor)
            }
            b'-' | b'0'..=b'9' => {
                visitor.value_start(ValueKind::Number, pos);
                if let Some((next, int_digits, long_exp)) = whole_number(text, pos) {
                    if int_digits <= self.config.max_number_digits {
                        // Whole, valid and ended by a delimiter in this push: no per-byte
                        // states. Anything else (cut, invalid, too long) takes the states.
                        if next - pos > 18 || long_exp {
                            self.long_numbers = true;
                        }
                        visitor.number_end_bytes(&text[pos..next], next);
                        self.end_value();
                        return next;
                    }
                }
                self.num_start = pos;
                self.num_int_digits = usize::from(b != b'-');
                let state = match b {
                    b'-' => NumState::Minus,
                    b'0' => NumState::Zero,
                    _ => NumState::Int,
                };
                self.scan_number(text, pos + 1, state, visitor)
            }
            b'{' | b'[' => {
                if self.start_container(text, b == b'{', pos, visitor) {
                    pos + 1
                } else {
                    end
                }
            }
            b't' | b'f' | b'n' => {
                let (kind, value, lit): (ValueKind, bool, &'static [u8]) = match b {
                    b't' => (ValueKind::Bool, true, b"true"),
                    b'f' => (ValueKind::Bool, false, b"false"),
                    _ => (ValueKind::Null, false, b"null"),
                };
                visitor.value_start(kind, pos);
                if literal_at(text, pos, lit) {
                    // Whole in this push: no per-letter states.
                    let last = pos + lit.len() - 1;
                    visitor.literal_end(kind, value, last);
                    self.end_value();
                    return last + 1;
                }
                self.literal = lit;
                self.literal_pos = 1;
                self.lex = Lex::Literal;
                pos + 1
            }
            _ => {
                // The element count stays: the error path names the element being read.
                self.fail(text, ErrorKind::UnexpectedByte, pos);
                end
            }
        }
    }

    /// The `"` opening a key is at `pos`: scans the key and, when they follow at once, the
    /// colon and the start of the value; returns the index of the next byte to look at.
    #[inline]
    fn start_key<V: Visitor>(&mut self, text: &[u8], mut pos: usize, visitor: &mut V) -> usize {
        loop {
            let i = self.scan_member(text, pos, visitor);
            // The usual next member, `,"` right after a scalar, or the object's end, without a
            // round through the dispatch: what its `AfterValue` arm does.
            if self.lex == Lex::AfterValue {
                let frame = &mut self.frames[self.depth - 1];
                if frame.is_object {
                    match text.get(i) {
                        Some(b',') if text.get(i + 1) == Some(&b'"') => {
                            frame.has_key = false;
                            self.lex = Lex::Key;
                            pos = i + 1;
                            continue;
                        }
                        Some(b'}') => {
                            self.close_container(true, i, visitor);
                            return i + 1;
                        }
                        _ => {}
                    }
                }
            }
            return i;
        }
    }

    /// [`Scanner::start_key`] for one member.
    #[inline(always)]
    fn scan_member<V: Visitor>(&mut self, text: &[u8], pos: usize, visitor: &mut V) -> usize {
        self.in_key = true;
        let frame = &mut self.frames[self.depth - 1];
        frame.key_start = pos + 1;
        frame.key_end = pos + 1;
        frame.key_escaped = false;
        frame.has_key = false;
        // The usual plain ASCII key, whole in this push, without the string states; the same
        // events as `flush_run` and `end_string` give it.
        let k = skip_plain_ascii(text, pos + 1);
        let mut i = if text.get(k) == Some(&b'"') {
            frame.key_end = k;
            self.end_whole_key(text, pos + 1, k, visitor);
            k + 1
        } else {
            self.lex = Lex::Str;
            self.scan_string_run_from(text, pos + 1, k, visitor)
        };
        if self.lex == Lex::Colon && text.get(i) == Some(&b':') {
            self.lex = Lex::Value;
            i += 1;
            if let Some(&b) = text.get(i) {
                if !is_ws(b) {
                    i = self.start_value(text, b, i, visitor);
                }
            }
        }
        i
    }

    /// A value (scalar or container) just ended.
    #[inline]
    fn end_value(&mut self) {
        if self.depth == 0 {
            self.value_done = true;
            self.lex = Lex::Done;
        } else {
            self.lex = Lex::AfterValue;
        }
    }

    #[inline]
    fn end_number<V: Visitor>(&mut self, text: &[u8], end: usize, visitor: &mut V) {
        let lexeme = &text[self.num_start..end];
        if lexeme.len() > PLAIN_NUMBER_CHARS || long_exponent(lexeme) {
            self.long_numbers = true;
        }
        visitor.number_end_bytes(lexeme, end);
        self.end_value();
    }

    #[inline]
    fn close_container<V: Visitor>(&mut self, is_object: bool, pos: usize, visitor: &mut V) {
        visitor.container_end(
            if is_object {
                ValueKind::Object
            } else {
                ValueKind::Array
            },
            pos,
        );
        if is_object {
            let span = self.frames[self.depth - 1].keys;
            self.keys.close(&span);
        }
        self.depth -= 1;
        self.end_value();
    }

    #[allow(clippy::too_many_lines)]
    fn scan<V: Visitor>(&mut self, visitor: &mut V) {
        // The buffer is moved out for the duration of the scan so the byte loop reads a local
        // slice instead of reloading `self.text` through `&mut self` on every byte.
        let text = std::mem::take(&mut self.text);
        self.scan_text(&text, visitor);
        self.text = text;
    }

    #[allow(clippy::too_many_lines)]
    fn scan_text<V: Visitor>(&mut self, text: &[u8], visitor: &mut V) {
        let end = text.len();
        let mut i = self.scanned;
        self.scanned = end;
        'scan: while i < end {
            let b = text[i];
            match self.lex {
                Lex::Str => {
                    i = self.scan_string_run(text, i, visitor);
                    continue;
                }
                Lex::Num(state) => {
                    i = self.scan_number(text, i, state, visitor);
                    continue;
                }
                Lex::Start | Lex::Value | Lex::ValueOrClose => {
                    if is_ws(b) {
                    } else if b == b']' && self.lex == Lex::ValueOrClose {
                        self.close_container(false, i, visitor);
                    } else {
                        i = self.start_value(text, b, i, visitor);
                        continue;
                    }
                }
                Lex::KeyOrClose | Lex::Key => {
                    if is_ws(b) {
                    } else if b == b'"' {
                        i = self.start_key(text, i, visitor);
                        continue;
                    } else if b == b'}' && self.lex == Lex::KeyOrClose {
                        self.close_container(true, i, visitor);
                    } else {
                        self.fail(text, ErrorKind::UnexpectedByte, i);
                        break;
                    }
                }
                Lex::Colon => {
                    if is_ws(b) {
                    } else if b == b':' {
                        self.lex = Lex::Value;
                    } else {
                        self.fail(text, ErrorKind::UnexpectedByte, i);
                        break;
                    }
                }
                Lex::AfterValue => {
                    if is_ws(b) {
                    } else {
                        let frame = &mut self.frames[self.depth - 1];
                        match b {
                            b',' if frame.is_object => {
                                frame.has_key = false;
                                self.lex = Lex::Key;
                                // The usual next member, without a round through the dispatch.
                                if text.get(i + 1) == Some(&b'"') {
                                    i = self.start_key(text, i + 1, visitor);
                                    continue;
                                }
                            }
                            b',' => {
                                frame.has_key = false;
                                self.lex = Lex::Value;
                                if let Some(&c) = text.get(i + 1) {
                                    if !is_ws(c) {
                                        i = self.start_value(text, c, i + 1, visitor);
                                        continue;
                                    }
                                }
                            }
                            b'}' if frame.is_object => self.close_container(true, i, visitor),
                            b']' if !frame.is_object => self.close_container(false, i, visitor),
                            _ => {
                                self.fail(text, ErrorKind::UnexpectedByte, i);
                                break;
                            }
                        }
                    }
                }
                Lex::Done => {
                    if !is_ws(b) {
                        // Only a second object or array is taken for a glued value (`}{`);
                        // `thanks` or `1` after the value is plain trailing text.
                        let kind = if matches!(b, b'{' | b'[') {
                            ErrorKind::ConcatenatedValues
                        } else {
                            ErrorKind::TrailingData
                        };
                        self.fail(text, kind, i);
                        break;
                    }
                }
                Lex::Escape => {
                    let decoded = match short_escape(b) {
                        Some(decoded) => decoded,
                        None if b == b'u' => {
                            self.hex_digits = 0;
                            self.hex_value = 0;
                            self.lex = Lex::Hex;
                            i += 1;
                            continue;
                        }
                        None => {
                            self.fail(text, ErrorKind::InvalidEscape, i);
                            break;
                        }
                    };
                    self.emit_decoded(text, &[decoded], i, visitor);
                    self.lex = Lex::Str;
                    i = self.scan_string_run(text, i + 1, visitor);
                    continue;
                }
                Lex::Hex => {
                    // The digits of a `\uXXXX` cut by the end of a push: the rest in one go.
                    let mut c = b;
                    loop {
                        let Some(d) = hex_value(c) else {
                            self.fail(text, ErrorKind::InvalidUnicodeEscape, i);
                            break 'scan;
                        };
                        self.hex_value = (self.hex_value << 4) | d;
                        self.hex_digits += 1;
                        if self.surrogate_decided() {
                            // The digit that makes a lone surrogate certain is the error's
                            // byte (spec R1), not the escape's last.
                            self.fail(text, ErrorKind::LoneSurrogate, i);
                            break 'scan;
                        }
                        if self.hex_digits == 4 || i + 1 == end {
                            break;
                        }
                        i += 1;
                        c = text[i];
                    }
                    if self.hex_digits == 4 {
                        let unit = self.hex_value;
                        if self.high_surrogate != 0 {
                            let high = self.high_surrogate;
                            self.high_surrogate = 0;
                            if !(0xDC00..=0xDFFF).contains(&unit) {
                                self.fail(text, ErrorKind::LoneSurrogate, i);
                                break;
                            }
                            let c = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                            self.emit_char(text, c, i, visitor);
                        } else if (0xD800..=0xDBFF).contains(&unit) {
                            self.high_surrogate = unit;
                            self.lex = Lex::LowBackslash;
                            i += 1;
                            continue;
                        } else if (0xDC00..=0xDFFF).contains(&unit) {
                            self.fail(text, ErrorKind::LoneSurrogate, i);
                            break;
                        } else {
                            self.emit_char(text, unit, i, visitor);
                        }
                        self.lex = Lex::Str;
                        i = self.scan_string_run(text, i + 1, visitor);
                        continue;
                    }
                }
                Lex::LowBackslash => {
                    if b == b'\\' {
                        self.lex = Lex::LowU;
                    } else {
                        self.fail(text, ErrorKind::LoneSurrogate, i);
                        break;
                    }
                }
                Lex::LowU => {
                    if b == b'u' {
                        self.hex_digits = 0;
                        self.hex_value = 0;
                        self.lex = Lex::Hex;
                    } else {
                        self.fail(text, ErrorKind::LoneSurrogate, i);
                        break;
                    }
                }
                Lex::Literal => {
                    if b == self.literal[usize::from(self.literal_pos)] {
                        self.literal_pos += 1;
                        if usize::from(self.literal_pos) == self.literal.len() {
                            let (kind, value) = match self.literal[0] {
                                b't' => (ValueKind::Bool, true),
                                b'f' => (ValueKind::Bool, false),
                                _ => (ValueKind::Null, false),
                            };
                            visitor.literal_end(kind, value, i);
                            self.end_value();
                        }
                    } else {
                        self.fail(text, ErrorKind::UnexpectedByte, i);
                        break;
                    }
                }
                Lex::Failed => break,
            }
            i += 1;
        }
    }

    /// Scans number bytes from `i` in `state`; returns the index of the next byte to look at
    /// (the delimiter that ended the number, or the end of the text).
    #[inline]
    fn scan_number<V: Visitor>(
        &mut self,
        text: &[u8],
        mut i: usize,
        mut state: NumState,
        visitor: &mut V,
    ) -> usize {
        let end = text.len();
        loop {
            if matches!(state, NumState::Int | NumState::Frac | NumState::ExpDigits) {
                // A digit run changes no state; integer digits are only counted.
                let start = i;
                while i < end && text[i].is_ascii_digit() {
                    i += 1;
                }
                if state == NumState::Int && i > start {
                    let max = self.config.max_number_digits;
                    if self.num_int_digits + (i - start) > max {
                        // The error is at the digit that crosses the limit, whatever the split.
                        self.number_too_long(text, start + max.saturating_sub(self.num_int_digits));
                        return end;
                    }
                    self.num_int_digits += i - start;
                }
            }
            let Some(&b) = text.get(i) else {
                self.lex = Lex::Num(state);
                return end;
            };
            let next = match (state, b) {
                (NumState::Minus, b'0') => NumState::Zero,
                (NumState::Minus, b'1'..=b'9') => NumState::Int,
                (NumState::Zero | NumState::Int, b'.') => NumState::Dot,
                (NumState::Dot, b'0'..=b'9') => NumState::Frac,
                (NumState::Zero | NumState::Int | NumState::Frac, b'e' | b'E') => NumState::Exp,
                (NumState::Exp, b'+' | b'-') => NumState::ExpSign,
                (NumState::Exp | NumState::ExpSign, b'0'..=b'9') => NumState::ExpDigits,
                _ => {
                    if state.can_end() && is_delimiter(b) {
                        // The delimiter itself is scanned in the new state.
                        self.end_number(text, i, visitor);
                        return i;
                    }
                    self.fail(text, ErrorKind::InvalidNumber, i);
                    return end;
                }
            };
            if state == NumState::Minus {
                // The first integer digit after a minus.
                self.num_int_digits += 1;
                if self.num_int_digits > self.config.max_number_digits {
                    self.number_too_long(text, i);
                    return end;
                }
            }
            state = next;
            i += 1;
        }
    }

    #[cold]
    #[inline(never)]
    fn number_too_long(&mut self, text: &[u8], offset: usize) {
        let max = self.config.max_number_digits;
        self.fail_with(
            text,
            ErrorKind::NumberTooLong,
            offset,
            format!("number has more than {max} digits"),
        );
    }

    /// Scans string content from `i`; returns the index of the next byte to look at.
    #[inline]
    fn scan_string_run<V: Visitor>(&mut self, text: &[u8], i: usize, visitor: &mut V) -> usize {
        self.scan_string_run_from(text, i, i, visitor)
    }

    /// [`Scanner::scan_string_run`] from `run_start` when `run_start..k` is already known to be
    /// plain ASCII content (see [`skip_plain_ascii`]).
    #[inline]
    fn scan_string_run_from<V: Visitor>(
        &mut self,
        text: &[u8],
        run_start: usize,
        k: usize,
        visitor: &mut V,
    ) -> usize {
        // Without string events (the plain scan) the loop is kept out of line: inlined, its
        // registers burden the paths that handle plain keys, strings and numbers without it.
        // A visitor that reads strings has more of them go through it (pieces), and for it the
        // call costs more than the saves.
        if V::WANTS_STRINGS {
            self.scan_string_loop(text, run_start, k, visitor)
        } else {
            self.scan_string_loop_outlined(text, run_start, k, visitor)
        }
    }

    #[inline(never)]
    fn scan_string_loop_outlined<V: Visitor>(
        &mut self,
        text: &[u8],
        run_start: usize,
        k: usize,
        visitor: &mut V,
    ) -> usize {
        self.scan_string_loop(text, run_start, k, visitor)
    }

    #[inline(always)]
    fn scan_string_loop<V: Visitor>(
        &mut self,
        text: &[u8],
        run_start: usize,
        k: usize,
        visitor: &mut V,
    ) -> usize {
        let (mut run_start, mut k) = (run_start, k);
        loop {
            match self.scan_string_piece(text, run_start, k, visitor) {
                // After an escape the next run starts where it ended, with nothing known of it.
                Ok(next) => (run_start, k) = (next, next),
                Err(next) => return next,
            }
        }
    }

    /// Scans one run of string content from `run_start` (up to `k` it is plain ASCII) and what
    /// ends it. `Ok(next)`: a complete escape was decoded and the string goes on at `next`;
    /// `Err(next)`: the next byte to look at in the state now set (after the string, inside an
    /// escape, or the end of the text).
    #[inline(always)]
    fn scan_string_piece<V: Visitor>(
        &mut self,
        text: &[u8],
        run_start: usize,
        mut k: usize,
        visitor: &mut V,
    ) -> Result<usize, usize> {
        let end = text.len();
        // The multi-byte character in progress: continuation bytes still expected and the
        // allowed range of the next one. `lead` is its first byte when it began in this run
        // (None: it began in an earlier push).
        let mut need = self.utf8_need;
        let mut lo = self.utf8_lo;
        let mut hi = self.utf8_hi;
        let mut lead: Option<usize> = None;
        // The ASCII skip runs after each step rather than before each byte: callers often
        // start at the byte where a skip already stopped.
        while let Some(&b) = text.get(k) {
            if need > 0 {
                // A quote, backslash or control byte inside a character fails here too.
                if b < lo || b > hi {
                    // Pieces stop before a character begun in this run, but include the
                    // bytes of one carried over from an earlier push.
                    self.flush_run(text, run_start, lead.unwrap_or(k), visitor);
                    self.fail(text, ErrorKind::InvalidUtf8, k);
                    return Err(end);
                }
                need -= 1;
                lo = 0x80;
                hi = 0xBF;
                k += 1;
                if need == 0 {
                    k = skip_plain_ascii(text, k);
                }
                continue;
            } else if b < 0x80 {
                if RUN_END[usize::from(b)] {
                    break;
                }
                k = skip_plain_ascii(text, k + 1);
                continue;
            } else {
                // The usual valid characters, all their bytes in this push, are checked at
                // once; a cut or invalid one goes byte by byte, which places the error.
                let next = skip_whole_chars(text, k);
                if next > k {
                    k = skip_plain_ascii(text, next);
                    continue;
                }
                let (n, l, h) = UTF8_LEAD[usize::from(b)];
                if n == 0 {
                    // A byte that can lead nothing: the error is certain at the byte itself.
                    self.flush_run(text, run_start, k, visitor);
                    self.fail(text, ErrorKind::InvalidUtf8, k);
                    return Err(end);
                }
                need = n;
                lo = l;
                hi = h;
                lead = Some(k);
            }
            k += 1;
        }
        // The push may end inside a character: its state carries to the next push.
        self.utf8_need = need;
        self.utf8_lo = lo;
        self.utf8_hi = hi;
        self.flush_run(text, run_start, k, visitor);
        let Some(&b) = text.get(k) else {
            return Err(end);
        };
        match b {
            b'"' => {
                self.end_string(text, k, visitor);
                Err(k + 1)
            }
            b'\\' => {
                // A complete, valid escape is decoded here; one cut by the end of the push or
                // invalid goes through the escape states byte by byte, which report the errors.
                match self.decode_escape(text, k, visitor) {
                    Some(next) => Ok(next),
                    None => {
                        self.lex = Lex::Escape;
                        Err(k + 1)
                    }
                }
            }
            _ => {
                self.fail(text, ErrorKind::ControlCharacterInString, k);
                Err(end)
            }
        }
    }

    /// Whether the `\uXXXX` digits read so far already make the escape a lone surrogate: a
    /// low surrogate (`DC`-`DF`) with no high one before it, or, after a high surrogate, an
    /// escape that cannot be its low half (not `D`, then not `DC`-`DF`).
    #[inline]
    fn surrogate_decided(&self) -> bool {
        let low_half = (0xDC..=0xDF).contains(&self.hex_value);
        match (self.high_surrogate != 0, self.hex_digits) {
            (true, 1) => self.hex_value != 0xD,
            (_, 2) => (self.high_surrogate != 0) != low_half,
            _ => false,
        }
    }

    /// Decodes the escape whose backslash is at `k` when it is complete and valid; returns the
    /// index after it, or None (nothing emitted) to leave it to the escape states.
    #[inline]
    fn decode_escape<V: Visitor>(
        &mut self,
        text: &[u8],
        k: usize,
        visitor: &mut V,
    ) -> Option<usize> {
        let escape = *text.get(k + 1)?;
        let decoded = match short_escape(escape) {
            Some(decoded) => decoded,
            None if escape == b'u' => {
                let unit = hex4(text, k + 2)?;
                if (0xD800..=0xDBFF).contains(&unit) {
                    if text.get(k + 6..k + 8)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(text, k + 8)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return None;
                    }
                    let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    self.emit_char(text, c, k + 11, visitor);
                    return Some(k + 12);
                }
                if (0xDC00..=0xDFFF).contains(&unit) {
                    return None;
                }
                self.emit_char(text, unit, k + 5, visitor);
                return Some(k + 6);
            }
            _ => return None,
        };
        self.emit_decoded(text, &[decoded], k + 1, visitor);
        Some(k + 2)
    }

    /// Hands the raw run `[from, to)` of plain string bytes to the decoders.
    #[inline]
    fn flush_run<V: Visitor>(&mut self, text: &[u8], from: usize, to: usize, visitor: &mut V) {
        if from == to {
            return;
        }
        let piece = &text[from..to];
        if self.in_key {
            let frame = &mut self.frames[self.depth - 1];
            if frame.key_escaped {
                self.keys.push_decoded(frame, text, piece);
            } else {
                // Raw pieces of a key are contiguous until its first escape.
                frame.key_end = to;
            }
            visitor.key_piece(piece, from, false);
        } else if V::WANTS_STRINGS && self.want_str {
            visitor.string_piece(piece, from, false);
        }
    }

    #[inline(always)]
    fn emit_char<V: Visitor>(&mut self, text: &[u8], c: u32, offset: usize, visitor: &mut V) {
        // Nobody reads the character: no encoding, and no call.
        if self.in_key || (V::WANTS_STRINGS && self.want_str) {
            self.emit_encoded(text, c, offset, visitor);
        }
    }

    #[inline(never)]
    fn emit_encoded<V: Visitor>(&mut self, text: &[u8], c: u32, offset: usize, visitor: &mut V) {
        let ch = char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
        let mut buf = [0u8; 4];
        let len = ch.encode_utf8(&mut buf).len();
        self.emit_decoded(text, &buf[..len], offset, visitor);
    }

    #[inline]
    fn emit_decoded<V: Visitor>(
        &mut self,
        text: &[u8],
        bytes: &[u8],
        offset: usize,
        visitor: &mut V,
    ) {
        if self.in_key {
            let frame = &mut self.frames[self.depth - 1];
            self.keys.push_decoded(frame, text, bytes);
            visitor.key_piece(bytes, offset, true);
        } else if V::WANTS_STRINGS && self.want_str {
            visitor.string_piece(bytes, offset, true);
        }
    }

    #[inline]
    fn end_string<V: Visitor>(&mut self, text: &[u8], pos: usize, visitor: &mut V) {
        if self.in_key {
            self.end_key(text, pos, visitor);
        } else {
            visitor.string_end(pos);
            self.end_value();
        }
    }

    #[inline(always)]
    fn end_key<V: Visitor>(&mut self, text: &[u8], pos: usize, visitor: &mut V) {
        if !self.close_key(text) {
            self.duplicate_key(text, pos);
            return;
        }
        if V::WANTS_KEYS {
            let frame = &self.frames[self.depth - 1];
            visitor.key_end_bytes(self.keys.key_bytes(frame, text), pos);
        }
        self.lex = Lex::Colon;
    }

    /// Records the key just read in its object; false when it repeats an earlier key and the
    /// policy makes that an error (which the caller then reports).
    #[inline]
    fn close_key(&mut self, text: &[u8]) -> bool {
        self.in_key = false;
        let policy = self.config.duplicate_keys;
        let level = self.depth - 1;
        let frame = &mut self.frames[level];
        frame.has_key = true;
        if !self.keys.insert(frame, level, text) {
            if policy == DuplicateKeys::Error {
                return false;
            }
            self.repeated_keys = true;
        }
        frame.count += 1;
        true
    }

    /// `end_key` for a plain key whole in this push (`text[start..end]`, closing quote at
    /// `end`): one `key_whole` event instead of a piece and an end.
    #[inline]
    fn end_whole_key<V: Visitor>(
        &mut self,
        text: &[u8],
        start: usize,
        end: usize,
        visitor: &mut V,
    ) {
        if !self.close_key(text) {
            // The visitor still sees the key's text, as a piece ahead of the end would show it.
            if end > start {
                visitor.key_piece(&text[start..end], start, false);
            }
            self.duplicate_key(text, end);
            return;
        }
        visitor.key_whole(&text[start..end], start, end);
        self.lex = Lex::Colon;
    }

    // Out of line: the message formatting would otherwise burden every key's end.
    #[cold]
    #[inline(never)]
    fn duplicate_key(&mut self, text: &[u8], pos: usize) {
        let frame = &self.frames[self.depth - 1];
        let key = String::from_utf8_lossy(self.keys.key_bytes(frame, text)).into_owned();
        self.fail_with(
            text,
            ErrorKind::DuplicateKey,
            pos,
            format!("duplicate key {key:?}"),
        );
    }
}

/// Bytes that end a run of plain string content: `"`, `\\` and control characters.
static RUN_END: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = b < 0x20 || b == b'"' as usize || b == b'\\' as usize;
        b += 1;
    }
    table
};

/// For each byte that can lead a multi-byte UTF-8 character: the continuation bytes it needs
/// and the allowed range of the first one (Unicode Table 3-7: no overlong forms, no
/// surrogates, nothing above U+10FFFF). `(0, _, _)` for a byte that can lead nothing.
static UTF8_LEAD: [(u8, u8, u8); 256] = {
    let mut table = [(0u8, 0u8, 0u8); 256];
    let mut b = 0xC2;
    while b <= 0xF4 {
        table[b] = match b {
            0xC2..=0xDF => (1, 0x80, 0xBF),
            0xE0 => (2, 0xA0, 0xBF),
            0xED => (2, 0x80, 0x9F),
            0xE1..=0xEF => (2, 0x80, 0xBF),
            0xF0 => (3, 0x90, 0xBF),
            0xF4 => (3, 0x80, 0x8F),
            _ => (3, 0x80, 0xBF),
        };
        b += 1;
    }
    table
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is not plain string content: non-ASCII, below 0x20,
/// `"` or `\\`. Subtracting from an ASCII byte that is not below the subtrahend borrows nothing,
/// so the lowest flagged byte is exact (bytes above it may be flagged spuriously).
#[inline]
fn string_stops(w: u64) -> u64 {
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    (w | w.wrapping_sub(ONES * 0x20) | quote.wrapping_sub(ONES) | backslash.wrapping_sub(ONES))
        & HIGH
}

/// Skips plain ASCII string content (no `"`, `\\`, control byte or non-ASCII byte) eight
/// bytes at a time; returns the index of the first byte that needs a byte-wise look.
#[inline]
fn skip_plain_ascii(text: &[u8], mut k: usize) -> usize {
    while let Some(chunk) = text.get(k..).and_then(<[u8]>::first_chunk::<8>) {
        let stop = string_stops(u64::from_le_bytes(*chunk));
        if stop != 0 {
            return k + (stop.trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    // Fewer than 8 bytes are left (the usual end of a push): check them as the top bytes of
    // the last 8 bytes of the text, which are all there once the text is 8 bytes long, with
    // the bytes already passed replaced by a plain `a`.
    let left = text.len() - k;
    if left > 0 {
        let last = text
            .len()
            .checked_sub(8)
            .and_then(|at| text[at..].first_chunk::<8>());
        if let Some(last) = last {
            let w = (u64::from_le_bytes(*last) >> (8 * (8 - left)))
                | ((ONES * u64::from(b'a')) << (8 * left));
            let stop = string_stops(w);
            return k + if stop == 0 {
                left
            } else {
                (stop.trailing_zeros() / 8) as usize
            };
        }
    }
    k
}

/// Skips valid multi-byte characters from `at` while 4 bytes of text start at each; returns
/// the index of the first byte that is ASCII, invalid, or too near the end to check this way.
#[inline]
fn skip_whole_chars(text: &[u8], mut at: usize) -> usize {
    let cont = |c: u8| c & 0xC0 == 0x80;
    while let Some(&[b, c1, c2, c3]) = text.get(at..).and_then(<[u8]>::first_chunk::<4>) {
        let (n, lo, hi) = UTF8_LEAD[usize::from(b)];
        let valid = (lo..=hi).contains(&c1)
            && match n {
                0 => false,
                1 => true,
                2 => cont(c2),
                _ => cont(c2) && cont(c3),
            };
        if !valid {
            break;
        }
        at += usize::from(n) + 1;
    }
    at
}

/// True when `lit` (`true`, `false` or `null`) is whole at `at`; compared as a word and a
/// byte because a `memcmp` call costs more than the compare itself.
#[inline]
fn literal_at(text: &[u8], at: usize, lit: &[u8]) -> bool {
    let Some(rest) = text.get(at..) else {
        return false;
    };
    match (rest.first_chunk::<4>(), lit.first_chunk::<4>()) {
        (Some(head), Some(want)) => head == want && (lit.len() == 4 || rest.get(4) == lit.get(4)),
        _ => false,
    }
}

/// JSON's four whitespace bytes.
#[inline]
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_delimiter(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b',' | b']' | b'}')
}

/// The byte a one-character escape (`\"`, `\n`, ...) stands for: None for `u` and for any
/// byte that is not an escape.
#[inline]
pub(crate) fn short_escape(b: u8) -> Option<u8> {
    Some(match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0C,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

/// The value of the 4 hex digits at `at`, if they are there and all hex.
#[inline]
fn hex4(text: &[u8], at: usize) -> Option<u32> {
    let [a, b, c, d] = text
        .get(at..)?
        .first_chunk::<4>()?
        .map(|x| HEX[usize::from(x)]);
    if (a | b | c | d) & 0x80 != 0 {
        return None;
    }
    Some(u32::from(a) << 12 | u32::from(b) << 8 | u32::from(c) << 4 | u32::from(d))
}

/// The value of each hex digit; 0xFF for any other byte.
static HEX: [u8; 256] = {
    let mut table = [0xFF; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            x @ b'0'..=b'9' => x - b'0',
            x @ b'a'..=b'f' => x - b'a' + 10,
            x @ b'A'..=b'F' => x - b'A' + 10,
            _ => 0xFF,
        };
        b += 1;
    }
    table
};

#[inline]
fn hex_value(b: u8) -> Option<u32> {
    match b {
        b'0'..=b'9' => Some(u32::from(b - b'0')),
        b'a'..=b'f' => Some(u32::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u32::from(b - b'A' + 10)),
        _ => None,
    }
}

/// Appends one RFC 6901 reference token (`~` as `~0`, `/` as `~1`).
pub fn push_pointer_token(out: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            _ => out.push(c),
        }
    }
}

/// The number starting at `at` when it is whole in `text`, valid, and followed by a
/// delimiter: the index of that delimiter, the digits of its integer part, and whether its
/// exponent has three digits or more (see [`long_exponent`]).
#[inline]
fn whole_number(text: &[u8], at: usize) -> Option<(usize, usize, bool)> {
    let digits_from = |i: usize| {
        i + text.get(i..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    let mut i = at + usize::from(text.get(at) == Some(&b'-'));
    let int_start = i;
    i = match *text.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits_from(i + 1),
        _ => return None,
    };
    let int_digits = i - int_start;
    if text.get(i) == Some(&b'.') {
        let frac = i + 1;
        i = digits_from(frac);
        if i == frac {
            return None;
        }
    }
    let mut long_exp = false;
    if matches!(text.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(text.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp = i;
        i = digits_from(exp);
        if i == exp {
            return None;
        }
        long_exp = i - exp > 2;
    }
    is_delimiter(*text.get(i)?).then_some((i, int_digits, long_exp))
}

/// True when `text` is exactly one JSON number, as written in a JSON text (no whitespace
/// around it, no limit on its digits).
#[must_use]
pub fn is_number_lexeme(text: &[u8]) -> bool {
    // The first and last bytes rule out whitespace and every other kind of value; the scanner
    // then decides the grammar, so there is one number grammar in the crate.
    if !matches!(text.first(), Some(b'-' | b'0'..=b'9'))
        || !text.last().is_some_and(u8::is_ascii_digit)
    {
        return false;
    }
    let mut scanner = Scanner::new(ScanConfig {
        max_bytes: text.len(),
        max_number_digits: text.len(),
        ..ScanConfig::default()
    });
    scanner.push(text);
    scanner.finish().is_ok()
}

/// The longest number lexeme that is plain (see [`Scanner::plain_numbers`]).
pub(crate) const PLAIN_NUMBER_CHARS: usize = 18;

/// True when a number lexeme's exponent has three digits or more (it may overflow a double).
pub(crate) fn long_exponent(lexeme: &[u8]) -> bool {
    lexeme
        .iter()
        .position(|&b| b | 0x20 == b'e')
        .is_some_and(|e| {
            let digits = lexeme[e + 1..]
                .iter()
                .filter(|b| b.is_ascii_digit())
                .count();
            digits > 2
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(text: &[u8]) -> Result<(), Error> {
        let mut s = Scanner::default();
        s.push(text);
        s.finish()
    }

    fn verdict_bytewise(text: &[u8]) -> Result<(), Error> {
        let mut s = Scanner::default();
        for b in text {
            s.push(std::slice::from_ref(b));
        }
        s.finish()
    }

    /// The numbers a scan reports, as their lexemes.
    #[derive(Default)]
    struct Numbers(Vec<String>);

    impl Visitor for Numbers {
        fn number_end_bytes(&mut self, lexeme: &[u8], _offset: usize) {
            self.0.push(String::from_utf8_lossy(lexeme).into_owned());
        }
    }

    #[test]
    fn completes_a_top_level_number_at_the_end_once() {
        // Pieces, numbers reported while feeding, numbers the completion reports, and whether
        // the text is valid JSON.
        type Case = (
            &'static [&'static str],
            &'static [&'static str],
            &'static [&'static str],
            bool,
        );
        let cases: &[Case] = &[
            (&["12", "3"], &[], &["123"], true),
            (&["-1", ".5e3"], &[], &["-1.5e3"], true),
            (&["7 "], &["7"], &[], true),
            (&["\"12\""], &[], &[], true),
            (&["1."], &[], &[], false),
            (&["[1"], &[], &[], false),
            (&["01"], &[], &[], false),
        ];
        for &(pieces, fed, completed, valid) in cases {
            let mut s = Scanner::default();
            let mut seen = Numbers::default();
            for piece in pieces {
                s.feed_with(piece.as_bytes(), &mut seen);
            }
            assert_eq!(seen.0, fed, "{pieces:?}");
            seen.0.clear();
            s.complete_top_level_number(&mut seen);
            s.complete_top_level_number(&mut seen);
            assert_eq!(seen.0, completed, "{pieces:?}");
            seen.0.clear();
            assert_eq!(s.finish_with(&mut seen).is_ok(), valid, "{pieces:?}");
            assert!(
                seen.0.is_empty(),
                "{pieces:?}: finish reported the number again"
            );
        }
    }

    #[test]
    fn accepts_plain_values() {
        for t in [
            "{}",
            "[]",
            "0",
            "-0",
            "1.5e-3",
            "\"x\"",
            "true",
            "false",
            "null",
            " {\"a\": [1, {\"b\": null}]} ",
            "\"\\ud83d\\ude00\"",
            "\"\\u00e9\"",
            "[-0.0e+1]",
        ] {
            assert_eq!(verdict(t.as_bytes()), Ok(()), "{t}");
            assert_eq!(verdict_bytewise(t.as_bytes()), Ok(()), "{t}");
        }
    }

    #[test]
    fn rejects_with_stable_offsets() {
        let cases: &[(&str, ErrorKind, usize)] = &[
            ("{\"a\":1,}", ErrorKind::UnexpectedByte, 7),
            ("[1,]", ErrorKind::UnexpectedByte, 3),
            ("01", ErrorKind::InvalidNumber, 1),
            ("1.", ErrorKind::Truncated, 2),
            ("[1.]", ErrorKind::InvalidNumber, 3),
            ("NaN", ErrorKind::UnexpectedByte, 0),
            ("{'a':1}", ErrorKind::UnexpectedByte, 1),
            ("\"\\x\"", ErrorKind::InvalidEscape, 2),
            ("\"\\ud800\"", ErrorKind::LoneSurrogate, 7),
            // Decided at the second digit: no escape starting `\udc` can be valid here.
            ("\"\\udc00\"", ErrorKind::LoneSurrogate, 4),
            ("\"\\udcXX\"", ErrorKind::LoneSurrogate, 4),
            // After a high surrogate: the next escape's first digit must be `d`, its second
            // one of `c`-`f`.
            ("\"\\ud800\\u0041\"", ErrorKind::LoneSurrogate, 9),
            ("\"\\ud800\\ud800\"", ErrorKind::LoneSurrogate, 10),
            ("\"\\ud800\\uC00\"", ErrorKind::LoneSurrogate, 9),
            ("{\"a\":1}{\"b\":2}", ErrorKind::ConcatenatedValues, 7),
            ("{\"a\":1} x", ErrorKind::TrailingData, 8),
            ("{\"a\":1,\"a\":2}", ErrorKind::DuplicateKey, 9),
            ("tru", ErrorKind::Truncated, 3),
            ("", ErrorKind::Empty, 0),
            ("   ", ErrorKind::Empty, 3),
            ("\"a\tb\"", ErrorKind::ControlCharacterInString, 2),
        ];
        for &(text, kind, offset) in cases {
            for result in [verdict(text.as_bytes()), verdict_bytewise(text.as_bytes())] {
                let e = result.expect_err(text);
                assert_eq!((e.kind, e.offset), (kind, offset), "{text}");
            }
        }
    }

    #[test]
    fn error_path_is_a_json_pointer() {
        let e = verdict(br#"{"items": [{"na/me": "x", "q~": tru]}"#).expect_err("invalid");
        assert_eq!(e.kind, ErrorKind::UnexpectedByte);
        assert_eq!(e.path, "/items/0/q~0");
        let e = verdict(br#"{"a/b": [1, 2, x]}"#).expect_err("invalid");
        assert_eq!(e.path, "/a~1b/2");
    }

    #[test]
    fn invalid_utf8_is_rejected_at_the_bad_byte() {
        assert_eq!(
            verdict(b"\"\xff\"").map_err(|e| (e.kind, e.offset)),
            Err((ErrorKind::InvalidUtf8, 1))
        );
        // Overlong encoding of '/'.
        assert_eq!(
            verdict(b"\"\xc0\xaf\"").map_err(|e| e.kind),
            Err(ErrorKind::InvalidUtf8)
        );
        // Encoded surrogate.
        assert_eq!(
            verdict(b"\"\xed\xa0\x80\"").map_err(|e| (e.kind, e.offset)),
            Err((ErrorKind::InvalidUtf8, 2))
        );
        // Sequence cut by the closing quote.
        assert_eq!(
            verdict(b"\"\xe2\x82\"").map_err(|e| (e.kind, e.offset)),
            Err((ErrorKind::InvalidUtf8, 3))
        );
        // A split character is fine.
        let mut s = Scanner::default();
        s.push(b"\"\xe2");
        s.push(b"\x82");
        s.push(b"\xac\"");
        assert_eq!(s.finish(), Ok(()));
    }

    #[test]
    fn depth_limit_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        let e = verdict(deep.as_bytes()).expect_err("too deep");
        assert_eq!((e.kind, e.offset), (ErrorKind::TooDeep, 64));
        let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert_eq!(verdict(ok.as_bytes()), Ok(()));
    }

    #[test]
    fn size_limit() {
        let mut s = Scanner::new(ScanConfig {
            max_bytes: 10,
            ..ScanConfig::default()
        });
        s.push(b"\"0123456");
        s.push(b"789abc\"");
        let e = s.finish().expect_err("too large");
        assert_eq!((e.kind, e.offset), (ErrorKind::TooLarge, 10));
        assert_eq!(s.text().len(), 10);
    }

    #[test]
    fn plain_numbers_are_short_with_short_exponents() {
        for (text, plain) in [
            ("[1, -2.5, 1e10, 123456789012345678]", true),
            ("-12345678901234567", true),
            ("[1.5E-99]", true),
            ("[1234567890123456789]", false),
            ("[1e100]", false),
            ("{\"a\": 1E+400}", false),
            ("\"12345678901234567890\"", true),
        ] {
            let mut s = Scanner::default();
            s.push(text.as_bytes());
            s.finish().expect("valid");
            assert_eq!(s.plain_numbers(), plain, "{text}");
        }
    }

    #[test]
    fn number_digit_limit() {
        let mut s = Scanner::new(ScanConfig {
            max_number_digits: 3,
            ..ScanConfig::default()
        });
        s.push(b"[123, 1234]");
        let e = s.finish().expect_err("too long");
        assert_eq!((e.kind, e.offset), (ErrorKind::NumberTooLong, 9));
    }

    #[test]
    fn last_wins_accepts_duplicates() {
        let mut s = Scanner::new(ScanConfig {
            duplicate_keys: DuplicateKeys::LastWins,
            ..ScanConfig::default()
        });
        s.push(br#"{"a":1,"a":2}"#);
        assert_eq!(s.finish(), Ok(()));
    }

    #[test]
    fn many_keys_switch_to_hash_lookup() {
        let mut text = String::from("{");
        for i in 0..100 {
            text.push_str(&format!("\"k{i}\":{i},"));
        }
        text.push_str("\"k57\":0}");
        let e = verdict(text.as_bytes()).expect_err("duplicate");
        assert_eq!(e.kind, ErrorKind::DuplicateKey);
        assert_eq!(e.path, "/k57");
    }

    #[test]
    fn duplicate_keys_are_found_raw_or_escaped_short_or_long() {
        let mut many = String::from("{");
        for i in 0..40 {
            many.push_str(&format!("\"key number {i}\":{i},"));
        }
        for (text, dup) in [
            (r#"{"ab":1,"a\u0062":2}"#, Some(("/ab", 16))),
            (
                r#"{"abcdefghij":1,"abcdefgh\u0069j":2}"#,
                Some(("/abcdefghij", 32)),
            ),
            (
                r#"{"a\u00e9bcdefghij":1,"aébcdefghij":2}"#,
                Some(("/aébcdefghij", 35)),
            ),
            (r#"{"abcdefgh":1,"abcdefgh\u0000":2}"#, None),
            (r#"{"":1,"\u0000":2,"\u0000\u0000":3}"#, None),
            (r#"{"abcdefghi":1,"abcdefghj":2,"x":{"abcdefghi":3}}"#, None),
            (
                r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"\u0068":18}"#,
                Some(("/h", 118)),
            ),
        ] {
            for result in [verdict(text.as_bytes()), verdict_bytewise(text.as_bytes())] {
                match dup {
                    Some((path, offset)) => {
                        let e = result.expect_err(text);
                        assert_eq!(
                            (e.kind, e.path.as_str(), e.offset),
                            (ErrorKind::DuplicateKey, path, offset),
                            "{text}"
                        );
                    }
                    None => assert_eq!(result, Ok(()), "{text}"),
                }
            }
        }
        many.push_str(r#""key number 3\u0037":0}"#);
        let e = verdict(many.as_bytes()).expect_err("duplicate");
        assert_eq!(
            (e.kind, e.path.as_str()),
            (ErrorKind::DuplicateKey, "/key number 37")
        );
    }

    #[test]
    fn nested_objects_keep_their_own_keys() {
        // Two objects at the same depth with more keys than the linear limit, short and long:
        // the second must not see the first one's sets.
        let many = |extra: &str| {
            let keys: Vec<String> = (0..20)
                .map(|i| format!("\"key number {i}\":{i},\"k{i}\":0"))
                .collect();
            let keys = keys.join(",");
            format!("[{{{keys}}},{{{keys},{extra}\"z\":0}}]")
        };
        let accepted = [
            r#"{"a":{"b":1},"b":2}"#.to_owned(),
            r#"{"a":{"b":1,"c":{"d":1}},"d":2,"b":3}"#.to_owned(),
            r#"{"abcdefghij":{"abcdefghij":1},"x":[{"abcdefghij":2}]}"#.to_owned(),
            r#"{"abcdefgh\u0069j":{"abcdefgh\u0069j":1},"k\u0065y":{"key":[{"k\u0065y":1}]}}"#
                .to_owned(),
            many(""),
            many(r#""key number 20":0,"k20":0,"#),
        ];
        for text in &accepted {
            assert_eq!(verdict(text.as_bytes()), Ok(()), "{text}");
            assert_eq!(verdict_bytewise(text.as_bytes()), Ok(()), "{text}");
        }
        let rejected = [
            (
                r#"{"k\u0065y":{"x\u0079z":[{"q":1}]},"key":1}"#.to_owned(),
                "/key",
            ),
            (
                r#"{"abcdefghi\u006a":{"abcdefghi\u006a":1},"abcdefghij":2}"#.to_owned(),
                "/abcdefghij",
            ),
            (
                r#"{"x":{"abcdefghij":1,"y":{"z":1},"abcdefghij":2}}"#.to_owned(),
                "/x/abcdefghij",
            ),
            (many(r#""k7":0,"#), "/1/k7"),
            (
                format!("{{\"a\":1,\"l\":{}}}", many(r#""key number 7":0,"#)),
                "/l/1/key number 7",
            ),
        ];
        for (text, path) in &rejected {
            for result in [verdict(text.as_bytes()), verdict_bytewise(text.as_bytes())] {
                let e = result.expect_err(text);
                assert_eq!(
                    (e.kind, e.path.as_str()),
                    (ErrorKind::DuplicateKey, *path),
                    "{text}"
                );
            }
        }
        // The error path names an escaped key of each open object.
        let e = verdict(br#"{"a\u0062":{"c\u0064":[1, x]}}"#).expect_err("invalid");
        assert_eq!(e.path, "/ab/cd/1");
    }

    #[test]
    fn status_reports_incomplete_then_complete() {
        let mut s = Scanner::default();
        assert_eq!(s.push(b"{\"a\": 1"), Status::Incomplete);
        assert_eq!(s.push(b"}"), Status::Complete);
        assert_eq!(s.push(b"  \n"), Status::Complete);
        assert!(matches!(s.push(b"{"), Status::Invalid(_)));
    }

    #[test]
    fn number_lexemes_are_exactly_one_json_number() {
        let digits = "9".repeat(5000);
        for good in [
            "0",
            "-0",
            "-0.0",
            "12",
            "1.5",
            "2.5E-3",
            "1e400",
            "1E+2",
            digits.as_str(),
        ] {
            assert!(is_number_lexeme(good.as_bytes()), "{good}");
        }
        for bad in [
            "", "-", "01", "1.", ".5", "1e", "+1", " 1", "1 ", "1,", "NaN", "Infinity", "0x1",
            "1_0", "\"1\"", "[1]", "1.5.5",
        ] {
            assert!(!is_number_lexeme(bad.as_bytes()), "{bad}");
        }
    }
}
