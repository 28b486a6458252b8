//! The streaming checker: follows scanner events with a stack of (node, state) slots and
//! records each schema violation at the earliest byte at which no continuation can fix it.
//!
//! Design notes:
//! - One *frame* per open JSON value, holding the *slots* (compiled nodes applied to that value)
//!   in one shared, stack-ordered `Vec`. A node with `$ref`, `allOf`, `anyOf` or `oneOf`
//!   expands into several slots on the same value, linked to their owner: `$ref` and each
//!   `allOf` member are conjuncts (`Link::Conj`: they fail alone and report their own keyword,
//!   and under a branch they take the branch with them), branches form a group that fails
//!   when its last live branch dies. Member and element values get slots linked to the
//!   container's slot, so a failure deep inside a branch climbs to the branch and eliminates
//!   it at the byte where it happened.
//! - A slot is *conditional* when it sits under a branch. Conditional failures only eliminate
//!   (no error text is built: the hot `anyOf [T, null]` case stays allocation-free);
//!   unconditional failures are recorded and the failed slot stops checking its value, so one
//!   mistake does not cascade. Local problems (an unknown key, one element too many) are
//!   recorded without killing the container's slot, so sibling mistakes are still reported.
//! - Values no slot applies to are skipped with a depth counter, so unconstrained subtrees
//!   cost one branch per event (decided in the inline visitor callbacks). A *plain* node (a
//!   type and nothing else for the value's kind, `Node::plain`; also an `anyOf` one of whose
//!   one-slot branches is plain, as it cannot fail) gets no slot outside a branch group: its
//!   only check passes at the first byte, and a slot for it was most of the pre-check's cost on
//!   schemas of plain fields. A node that is only one conjunct (a `$ref`, or an `allOf` of one
//!   member, as older exporters wrap a described `$ref`) applies it in its place (same parent,
//!   link and condition), so it adds no slot either.
//! - Fast paths for the common shape, a container checked by one unconditional slot: its
//!   members are decided in `start_fast` before the general path (`start_slots`) runs; a scalar
//!   member whose schema is one node (`Node::lone`: no conjuncts, branches or `false`) is
//!   followed in a `Lone` record without frame or slot, and gets both (`materialize`, with the
//!   state read so far) only when a rule is about to fail, so every error is still built by the
//!   general path; a container member of that kind opens its frame and slot directly, and a
//!   container closes inline when none of its end rules fails. Each fast path is small and
//!   inline and its general path out of line (`step_keys`, `step_string`, `end_slots`): the
//!   scanner's visitor call sites inline only small callbacks.
//! - Keys: arguments mostly list properties in schema order, so an object slot compares each
//!   key with the property after the last one matched (`Slot::guess`) before it walks its
//!   trie, and a closed object steps the trie byte by byte only once the key leaves that name
//!   (until then the key so far is that name's start and is not copied). A key found among a
//!   slot's names is kept as that entry, not copied, for error paths. An unknown key is
//!   recorded at the byte that decides it, under the key so far, and completed (path, text)
//!   when the key closes; until then `early_errors` holds it back, as the key so far names no
//!   member. An object with `patternProperties` decides its keys only when they close.
//! - The checker keeps the decoded text of a string itself, and only of strings that a string
//!   rule, an enum or a captured container reads ([`Visitor::wants_string`]); the scanner
//!   decodes no other string for it, and keys and number lexemes reach it as bytes
//!   ([`Visitor::key_end_bytes`]), converted to `&str` only where a rule or an error needs it.
//!   Numbers of up to 18 digits without exponent are compared in machine integers
//!   (`decimal::Fixed`), others through the exact decimal parse. Buffers (slots, frames,
//!   required bits, keys) are reused, so steady-state checking does not allocate; error
//!   construction is `#[cold]`.
//! - `oneOf` "more than one" is decided at value end and only counts branches compiled exactly
//!   (nothing ignored under them, in any conjunct either) and not loosened by the slot cap,
//!   because an ignored keyword could make a surviving branch invalid after all.
//! - Container-valued `enum`/`const` are decided at the container's close, on a value rebuilt
//!   from events (`canon`); scalars are decided without building anything.

use std::cell::Cell;
use std::sync::Arc;

use super::canon::{Builder, Canon};
use super::compile::{
    at_least, at_most, count_words, cut_to, type_words, Additional, KeyInfo, Node, NodeId,
    ObjectRule, PatternMember, FALSE_NODE, NONE, TRUE_NODE, T_ARRAY, T_BOOL, T_INTEGER, T_NULL,
    T_NUMBER, T_OBJECT, T_STRING,
};
use super::decimal::{float_multiple, is_int_lexeme, parse_into, DecRef, Decimal, Fixed};
use super::trie::Trie;
use super::{push_pointer_token, ToolSchema};
use crate::error::{Error, ErrorKind, SchemaDetail};
use crate::value::utf8_prefix;
use crate::visit::{ValueKind, Visitor};

/// The most errors one [`Checker`] records; the first is the one that matters.
pub const MAX_ERRORS: usize = 8;

const NO_SLOT: u32 = u32::MAX;
const DEAD: u32 = u32::MAX;
/// Key position of a slot whose key so far is the start of its expected name (`Slot::guess`).
const GUESSING: u32 = u32::MAX - 1;
/// Cap on slots for one value: `anyOf` trees over shared `$ref`s can grow exponentially.
/// Past it, further subschemas are not applied (which only loosens the check).
const MAX_SLOTS_PER_VALUE: usize = 256;
/// How much of an offending value goes into an error.
const GOT_CHARS: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Root,
    /// Member or element value of the parent slot's container.
    Member,
    /// `$ref` of the parent slot (same value).
    Conj,
    AnyOf,
    OneOf,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    node: NodeId,
    parent: u32,
    link: Link,
    cond: bool,
    alive: bool,
    /// False for a branch that stands in for subschemas cut by `MAX_SLOTS_PER_VALUE`, and for
    /// every slot above a subschema the cap left out.
    exact: bool,
    any_alive: u32,
    one_alive: u32,
    /// Branches of this slot's `anyOf` / `oneOf` that died of something more specific than
    /// their type (they matched the type, then failed a keyword).
    specific_deaths: u32,
    /// Code points read (strings).
    count: u64,
    /// Trie position: the key being read (objects that deny unknown keys; `GUESSING` while
    /// the key matches the start of the expected name) or the string (string `enum`).
    pos: u32,
    /// Objects: the property expected next (the one after the last key matched), whose name
    /// is compared whole before the key trie is walked: arguments mostly list properties in
    /// schema order.
    guess: u32,
    /// Schema of the member value about to be read (objects), `NONE` when unchecked.
    member: NodeId,
    /// First word of this slot's required-property bits in `State::bits`.
    bits: u32,
}

impl Slot {
    /// The unconditional slot of a member value whose schema is the single node `node`; other
    /// slots start from it.
    #[inline]
    fn member(node: NodeId, parent: u32) -> Self {
        Self {
            node,
            parent,
            link: Link::Member,
            cond: false,
            alive: true,
            exact: true,
            any_alive: 0,
            one_alive: 0,
            specific_deaths: 0,
            count: 0,
            pos: Trie::ROOT,
            guess: 0,
            member: NONE,
            bits: 0,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    kind: ValueKind,
    slots_start: u32,
    bits_start: u32,
    /// This object's current key is `keys[key_start..key_end]`, or when `key_node` is not
    /// `NONE`, the name of entry `key_entry` of that node's object rule: a key that some slot
    /// found among its names is not copied.
    key_start: u32,
    key_end: u32,
    key_node: NodeId,
    key_entry: u32,
    /// Elements started (arrays).
    elems: u32,
    /// Some slot steps a key trie (denies unknown keys).
    steps_keys: bool,
    /// Some slot counts code points or steps a string `enum` trie.
    steps_string: bool,
}

/// A scalar followed without a frame or slot (see `Node::lone`): what its slot would hold.
#[derive(Debug, Clone, Copy)]
struct Lone {
    node: NodeId,
    /// The container's slot, the parent the slot would have.
    parent: u32,
    kind: ValueKind,
    count: u64,
    pos: u32,
}

/// An error whose `got` (and for keys the path) is completed when the key or string closes;
/// for a key, the first of them (see `State::more_key_errors`).
#[derive(Debug, Clone, Copy)]
struct Pending {
    error: u32,
    is_key: bool,
    /// Length of the object's path inside the error's path (keys only).
    base: u32,
}

#[derive(Debug, Clone, Copy)]
enum Failure {
    Type,
    False,
    Enum,
    UnknownKey,
    PropertyFalse,
    /// A key a `patternProperties` pattern with the `false` schema takes.
    PatternFalse,
    Required,
    MaxItems,
    MinItems,
    MaxLength,
    MinLength,
    Bound(&'static str),
    MultipleOf,
    Pattern,
    Format,
    AnyOf,
    OneOfNone,
    OneOfMany,
    /// A union (`one_of`: a `oneOf`, else an `anyOf`) none of whose branches takes the value's
    /// type: reported as the type error it is, with the branches' words as the types.
    BranchTypes {
        one_of: bool,
    },
}

/// What a value turned out to be, for the checks made when it ends.
#[derive(Clone, Copy)]
enum Payload<'a> {
    /// The decoded text (valid UTF-8), read as `&str` only by the rules that need one.
    Str(&'a [u8]),
    /// The lexeme (ASCII).
    Num(&'a [u8]),
    Bool(bool),
    Null,
    Container(Option<&'a Canon>),
}

/// The pre-check of one tool call: feed it the scanner's events (it is a [`Visitor`]), then
/// read [`Checker::errors`].
///
/// Every error has kind [`ErrorKind::SchemaViolation`], the absolute byte offset at which the
/// violation became certain (identical for every split of the input), the JSON Pointer of the
/// offending value, and a [`SchemaDetail`]. At most [`MAX_ERRORS`] are kept.
#[derive(Debug)]
pub struct Checker {
    schema: Arc<ToolSchema>,
    /// Boxed, so a new checker moves into its call as a pointer; taken in `drop`, to go back
    /// to the schema's pool.
    st: std::mem::ManuallyDrop<Box<State>>,
}

#[derive(Debug, Default)]
struct State {
    slots: Vec<Slot>,
    frames: Vec<Frame>,
    bits: Vec<u64>,
    /// Keys of the open objects (whole decoded keys, so valid UTF-8).
    keys: Vec<u8>,
    /// The key read so far while a key trie runs (error text), or the string value read so
    /// far when `want_str`; emptied when the key or string closes, so a key starts empty.
    text: Vec<u8>,
    /// Bytes of the current key read so far by `key_piece` (`text` may lag behind, see
    /// `key_text`).
    key_len: usize,
    /// The errors before this one had secret values hidden (`Checker::redact_secrets`).
    redacted: usize,
    /// Errors raised inside a string still open, as they read when they became certain (index
    /// into `errors`, the error then): the text so far through the byte that decided.
    early_forms: Vec<(u32, Error)>,
    /// Errors after the first (`pending`) that name the key still open: completed with it.
    more_key_errors: Vec<u32>,
    /// The early forms before this one had secret values hidden.
    early_redacted: usize,
    /// The current string value is read: some slot has a string rule or an enum on it, or a
    /// container `enum` captures it.
    want_str: bool,
    /// Plain nodes and `$ref` wrappers left out of the current value's slots, counted against
    /// `MAX_SLOTS_PER_VALUE` as if they had slots, so the cap cuts what it always cut.
    phantom: usize,
    num: Vec<u8>,
    /// Depth of skipped (unchecked) containers.
    skip: u32,
    skip_scalar: bool,
    /// The scalar being read, when it is followed without a frame; it gets its frame and slot
    /// (`materialize`) before anything fails, so failures take the general path.
    lone: Option<Lone>,
    started: bool,
    full: bool,
    pending: Option<Pending>,
    capture: Builder,
    errors: Vec<Error>,
}

/// Most states a schema keeps for its next checkers: a stream checks its calls one after
/// another, so one state per thread checking the tool at once is all that is ever taken.
const POOLED_SETS: usize = 8;
/// A state whose buffers grew past this many bytes (a call of unusual depth) is freed, not kept.
const POOLED_BYTES: usize = 16 << 10;

impl State {
    /// A state whose buffers are each one allocation sized for a typical tool call (a few
    /// levels, a few slots per value), instead of growth from empty at every call's first
    /// values.
    fn with_buffers() -> Box<Self> {
        Box::new(Self {
            slots: Vec::with_capacity(16),
            frames: Vec::with_capacity(8),
            bits: Vec::with_capacity(4),
            text: Vec::with_capacity(32),
            ..Self::default()
        })
    }

    /// The bytes its buffers hold.
    fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.frames.capacity() * std::mem::size_of::<Frame>()
            + self.bits.capacity() * 8
            + self.keys.capacity()
            + self.text.capacity()
            + self.num.capacity()
    }

    /// Back to a new checker's state, keeping the buffers' room.
    fn reset(&mut self) {
        let mut slots = std::mem::take(&mut self.slots);
        let mut frames = std::mem::take(&mut self.frames);
        let mut bits = std::mem::take(&mut self.bits);
        let mut keys = std::mem::take(&mut self.keys);
        let mut text = std::mem::take(&mut self.text);
        let mut num = std::mem::take(&mut self.num);
        slots.clear();
        frames.clear();
        bits.clear();
        keys.clear();
        text.clear();
        num.clear();
        *self = Self {
            slots,
            frames,
            bits,
            keys,
            text,
            num,
            ..Self::default()
        };
    }
}

/// The states of finished checkers, emptied, kept by a compiled schema (shared by every stream
/// and thread) for the next calls of the tool. Made for every call, the buffers' allocations
/// and frees were over 1% of the instructions of pre-checking a 200 B call; kept inline in the
/// checker, the state (about 500 bytes) was copied at each of the five moves that take a new
/// checker into its call. Never waited on: when another thread holds the pool, a checker makes
/// a new state, or frees its own.
// The states stay boxed in the pool: a checker takes its box as it is, a pointer.
#[allow(clippy::vec_box)]
#[derive(Debug, Default)]
pub(crate) struct BufferPool(std::sync::Mutex<Vec<Box<State>>>);

impl BufferPool {
    fn take(&self) -> Box<State> {
        self.0
            .try_lock()
            .ok()
            .and_then(|mut states| states.pop())
            .unwrap_or_else(State::with_buffers)
    }

    /// How many states are kept.
    #[cfg(test)]
    pub(crate) fn pooled(&self) -> usize {
        self.0.lock().map_or(0, |states| states.len())
    }

    fn give(&self, mut state: Box<State>) {
        if state.bytes() > POOLED_BYTES {
            return;
        }
        state.reset();
        if let Ok(mut states) = self.0.try_lock() {
            if states.len() < POOLED_SETS {
                states.push(state);
            }
        }
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        // SAFETY: `st` is taken once, here, and the checker is not used after its drop.
        let st = unsafe { std::mem::ManuallyDrop::take(&mut self.st) };
        self.schema.buffers.give(st);
    }
}

impl Checker {
    /// A checker for one call of the tool whose compiled schema is `schema`.
    #[must_use]
    pub fn new(schema: Arc<ToolSchema>) -> Self {
        let st = std::mem::ManuallyDrop::new(schema.buffers.take());
        Self { schema, st }
    }

    /// The schema this checker applies.
    #[must_use]
    pub fn schema(&self) -> &Arc<ToolSchema> {
        &self.schema
    }

    /// Violations found so far, in the order they became certain.
    #[must_use]
    pub fn errors(&self) -> &[Error] {
        &self.st.errors
    }

    /// Hides the value of every violation (and early form) found since the last call whose
    /// path is a secret of the schema (see [`ToolSchema::set_secrets`]); call it after each
    /// piece of text and at the end, before the errors are read.
    pub fn redact_secrets(&mut self) {
        let st: &mut State = &mut self.st;
        if st.errors.len() <= st.redacted && st.early_forms.len() <= st.early_redacted {
            return;
        }
        let schema = &self.schema;
        let hide = |e: &mut Error| {
            if schema.is_secret(&e.path) {
                if let Some(d) = e.detail.as_mut() {
                    REDACTED.clone_into(&mut d.got);
                }
            }
        };
        // A pending string error's path is already its value's, so it is judged now; its value,
        // when the string closes, is not written over `[redacted]` (see `patch_pending`). A
        // pending key error is judged again once the key, and so its path, is whole.
        st.errors[st.redacted..].iter_mut().for_each(hide);
        st.early_forms[st.early_redacted..]
            .iter_mut()
            .for_each(|(_, e)| hide(e));
        st.redacted = st.errors.len();
        st.early_redacted = st.early_forms.len();
    }

    /// Every violation found so far, for early reporting: one raised inside a string still
    /// open reads as it did when it became certain (the text through the deciding byte),
    /// however the text was cut and whether or not that string has closed since, so an early
    /// report is the same for every cut. `errors` has them completed.
    ///
    /// An unknown key found inside a key still open is held back (and the errors after it)
    /// until the key closes, and then reads as in `errors`: its path is the member's, which
    /// the key so far is not (`/colo` names no member of `{"color": ...}`), and the final
    /// verdict and validation name the whole key. It is certain all the same
    /// ([`Checker::errors`] has it at once, at the byte that decided it).
    pub fn early_errors(&self) -> impl Iterator<Item = &Error> {
        let held = match self.st.pending {
            Some(p) if p.is_key => p.error as usize,
            _ => self.st.errors.len(),
        };
        let mut forms = self.st.early_forms.iter().peekable();
        let settled = self.st.errors.get(..held).unwrap_or_default();
        settled.iter().enumerate().map(move |(i, e)| {
            match forms.next_if(|(at, _)| *at as usize == i) {
                Some((_, early)) => early,
                None => e,
            }
        })
    }

    /// The first violation, the one to report.
    #[must_use]
    pub fn first_error(&self) -> Option<&Error> {
        self.st.errors.first()
    }

    /// Ends the check at `end_offset` (the length of the text). Every rule is decided by the
    /// event that completes its value (a top-level number completes in the scanner's
    /// `finish_with`, which must therefore be given this checker), so there is nothing left to
    /// decide here; an incomplete text is the scanner's `truncated` error, not a schema one.
    pub fn finish(&mut self, end_offset: usize) -> &[Error] {
        let _ = end_offset;
        // A key that never closed keeps its errors held back: the text is truncated, and the
        // key so far names no member.
        if self.st.pending.is_some_and(|p| !p.is_key) {
            self.st.pending = None;
        }
        &self.st.errors
    }
}

/// What a violation at a secret value shows instead of the value.
/// What a secret value's text is shown as (see [`ToolSchema::set_secrets`]).
pub const REDACTED: &str = "[redacted]";

#[inline]
fn kind_bits(kind: ValueKind) -> u8 {
    match kind {
        ValueKind::Object => T_OBJECT,
        ValueKind::Array => T_ARRAY,
        ValueKind::String => T_STRING,
        ValueKind::Number => T_NUMBER | T_INTEGER,
        ValueKind::Bool => T_BOOL,
        ValueKind::Null => T_NULL,
    }
}

#[inline]
fn is_container(kind: ValueKind) -> bool {
    matches!(kind, ValueKind::Object | ValueKind::Array)
}

/// Where a slot of `rule` starts reading a key when it expects entry `guess` next.
#[inline]
fn key_start(rule: &ObjectRule, guess: u32) -> u32 {
    if rule.names_property(guess) {
        GUESSING
    } else {
        Trie::ROOT
    }
}

/// The text of a closed string or key: whole decoded pieces, so valid UTF-8.
fn utf8(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or("")
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[inline]
fn node(nodes: &[Node], id: NodeId) -> &Node {
    // Ids come from the compiler and always index the arena.
    &nodes[id as usize]
}

fn cut(s: &str) -> String {
    cut_to(s, GOT_CHARS)
}

fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

impl Visitor for Checker {
    const WANTS_STRINGS: bool = true;

    #[inline]
    fn value_start(&mut self, kind: ValueKind, offset: usize) {
        let st: &mut State = &mut self.st;
        // Inside an unchecked container only the depth counts (unless a container `enum`
        // captures the text): kept inline, as most values of a loosely typed call are here.
        if st.skip > 0 && !st.capture.is_active() {
            if kind == ValueKind::String {
                st.want_str = false;
                st.text.clear();
            } else if is_container(kind) {
                st.skip += 1;
            }
            return;
        }
        st.value_start(&self.schema.nodes, self.schema.root, kind, offset);
    }

    #[inline]
    fn key_piece(&mut self, piece: &[u8], offset: usize, escaped: bool) {
        let st: &mut State = &mut self.st;
        if st.skip == 0 && !st.full && st.frames.last().is_some_and(|f| f.steps_keys) {
            st.key_piece(&self.schema.nodes, piece, offset, escaped);
        }
    }

    #[inline]
    fn key_end(&mut self, key: &str, offset: usize) {
        self.key_end_bytes(key.as_bytes(), offset);
    }

    #[inline]
    fn key_whole(&mut self, key: &[u8], start: usize, end: usize) {
        if self.st.whole_expected_key(&self.schema.nodes, key) {
            return;
        }
        if !key.is_empty() {
            self.key_piece(key, start, false);
        }
        self.key_end_bytes(key, end);
    }

    #[inline]
    fn key_end_bytes(&mut self, key: &[u8], offset: usize) {
        let st: &mut State = &mut self.st;
        if st.skip > 0 && !st.capture.is_active() {
            return;
        }
        st.key_end(&self.schema.nodes, key, offset);
    }

    #[inline]
    fn wants_string(&self) -> bool {
        self.st.want_str
    }

    #[inline]
    fn string_piece(&mut self, piece: &[u8], offset: usize, escaped: bool) {
        let st: &mut State = &mut self.st;
        if !st.want_str {
            return; // declined; a `Both` partner asked for it
        }
        let before = st.text.len();
        st.text.extend_from_slice(piece);
        if st.skip == 0 && !st.skip_scalar && !st.full {
            st.string_piece(&self.schema.nodes, piece, before, offset, escaped);
        }
    }

    #[inline]
    fn string_end(&mut self, offset: usize) {
        let st: &mut State = &mut self.st;
        if !st.want_str {
            // Nothing reads this string's text: no capture, no string rule or enum (so no
            // pending string error either).
            if st.skip > 0 {
                return;
            }
            if st.skip_scalar {
                st.skip_scalar = false;
                return;
            }
            if !st.full {
                st.end_value(&self.schema.nodes, offset, Payload::Str(b""));
            }
            return;
        }
        let mut text = std::mem::take(&mut st.text);
        st.string_end(&self.schema.nodes, &text, offset);
        // Empty again, for the next key that a key trie reads into it.
        text.clear();
        st.text = text;
    }

    #[inline]
    fn number_end(&mut self, lexeme: &str, offset: usize) {
        self.number_end_bytes(lexeme.as_bytes(), offset);
    }

    #[inline]
    fn number_end_bytes(&mut self, lexeme: &[u8], offset: usize) {
        let st: &mut State = &mut self.st;
        if st.capture.is_active() {
            let number = std::str::from_utf8(lexeme).ok().and_then(Decimal::parse);
            st.capture.push(number.map_or(Canon::Null, Canon::Num));
        }
        if st.skip > 0 {
            return;
        }
        if st.skip_scalar {
            st.skip_scalar = false;
            return;
        }
        if !st.full {
            st.end_value(&self.schema.nodes, offset, Payload::Num(lexeme));
        }
    }

    #[inline]
    fn literal_end(&mut self, kind: ValueKind, value: bool, offset: usize) {
        let st: &mut State = &mut self.st;
        let payload = if kind == ValueKind::Null {
            Payload::Null
        } else {
            Payload::Bool(value)
        };
        if st.capture.is_active() {
            st.capture.push(if kind == ValueKind::Null {
                Canon::Null
            } else {
                Canon::Bool(value)
            });
        }
        if st.skip > 0 {
            return;
        }
        if st.skip_scalar {
            st.skip_scalar = false;
            return;
        }
        if !st.full {
            st.end_value(&self.schema.nodes, offset, payload);
        }
    }

    #[inline]
    fn container_end(&mut self, _kind: ValueKind, offset: usize) {
        let st: &mut State = &mut self.st;
        if st.skip > 1 && !st.capture.is_active() {
            st.skip -= 1;
            return;
        }
        st.container_end(&self.schema.nodes, offset);
    }
}

impl State {
    fn container_end(&mut self, nodes: &[Node], offset: usize) {
        let captured = if self.capture.is_active() {
            self.capture.end()
        } else {
            None
        };
        if self.skip > 0 {
            self.skip -= 1;
        } else if !self.full && (captured.is_some() || !self.closes_single(nodes)) {
            self.end_value(nodes, offset, Payload::Container(captured.as_ref()));
        }
        if let Some(v) = captured {
            if self.capture.is_active() {
                self.capture.push(v);
            }
        }
    }

    /// Closes the innermost container when one slot checks it and none of its end rules
    /// fails (no `oneOf` or `enum`, required properties present, enough items): the general
    /// path would find nothing to report. False, having changed nothing, otherwise.
    #[inline]
    fn closes_single(&mut self, nodes: &[Node]) -> bool {
        let (Some(f), Some(slot)) = (self.frames.last(), self.slots.last()) else {
            return false;
        };
        if f.slots_start as usize + 1 != self.slots.len() {
            return false;
        }
        if slot.alive {
            let n = node(nodes, slot.node);
            if !n.one_of.is_empty() || n.enumeration.is_some() {
                return false;
            }
            let passes = match f.kind {
                ValueKind::Object => n
                    .object
                    .as_ref()
                    .map_or(true, |rule| self.all_required(rule, slot.bits as usize)),
                _ => n
                    .array
                    .as_ref()
                    .map_or(true, |rule| u64::from(f.elems) >= rule.min_items),
            };
            if !passes {
                return false;
            }
        }
        let f = *f;
        self.frames.pop();
        self.slots.truncate(f.slots_start as usize);
        self.bits.truncate(f.bits_start as usize);
        self.keys.truncate(f.key_start as usize);
        true
    }

    /// Whether every required property of `rule` is marked in the bits starting at `base`.
    fn all_required(&self, rule: &ObjectRule, base: usize) -> bool {
        let count = rule.required.len();
        (0..count.div_ceil(64)).all(|w| {
            let want = if (w + 1) * 64 <= count {
                u64::MAX
            } else {
                (1 << (count % 64)) - 1
            };
            self.bits.get(base + w).copied().unwrap_or(0) & want == want
        })
    }

    // ----- value start -------------------------------------------------------------------

    /// The common cases of `value_start`, decided before the general path: a member or
    /// element of a container checked by one unconditional slot either meets a plain schema
    /// (or none) and is skipped, or is a scalar whose schema is `lone` for its kind and is
    /// followed without a frame. Returns false, having changed nothing, when the general path
    /// must decide.
    #[inline]
    fn start_fast(&mut self, nodes: &[Node], kind: ValueKind) -> bool {
        if self.full || self.capture.is_active() {
            return false;
        }
        let Some(pf) = self.frames.last_mut() else {
            return false;
        };
        let parent = self.slots.len().wrapping_sub(1);
        let Some(slot) = self.slots.get(parent) else {
            return false;
        };
        if pf.slots_start as usize != parent {
            return false;
        }
        let bits = kind_bits(kind);
        let mut lone = None;
        if slot.alive {
            let child = if pf.kind == ValueKind::Array {
                match node(nodes, slot.node).array.as_deref() {
                    None => NONE,
                    Some(rule) => {
                        let index = pf.elems as usize;
                        if index as u64 >= rule.max_items {
                            return false;
                        }
                        rule.prefix.get(index).copied().unwrap_or(rule.items)
                    }
                }
            } else {
                slot.member
            };
            if child != NONE {
                let mut n = node(nodes, child);
                // A wrapper stands for its one conjunct (see `instantiate`); chains of them
                // are short, and a long one is left to the general path.
                let mut hops = 0;
                let mut child = child;
                while n.wrapped != NONE {
                    if hops == 8 {
                        return false;
                    }
                    hops += 1;
                    child = n.wrapped;
                    n = node(nodes, child);
                }
                if n.plain & bits == 0 {
                    if n.lone & bits == 0 || slot.cond {
                        return false;
                    }
                    lone = Some((child, n));
                }
            }
        }
        if pf.kind == ValueKind::Array {
            pf.elems += 1;
        }
        if let Some((child, n)) = lone {
            if is_container(kind) {
                self.open_single(n, child, to_u32(parent), kind);
                return true;
            }
            self.lone = Some(Lone {
                node: child,
                parent: to_u32(parent),
                kind,
                count: 0,
                pos: Trie::ROOT,
            });
            if kind == ValueKind::String {
                self.want_str = n.string.is_some() || n.enumeration.is_some();
                self.text.clear();
            }
            return true;
        }
        match kind {
            ValueKind::Object | ValueKind::Array => self.skip = 1,
            ValueKind::String => {
                self.want_str = false;
                self.text.clear();
                self.skip_scalar = true;
            }
            _ => self.skip_scalar = true,
        }
        true
    }

    /// Opens the frame of a value whose slots start at `slots_start`, with no key read yet.
    #[inline]
    fn push_frame(
        &mut self,
        kind: ValueKind,
        slots_start: usize,
        bits_start: u32,
        steps_keys: bool,
        steps_string: bool,
    ) {
        let keys = to_u32(self.keys.len());
        self.frames.push(Frame {
            kind,
            slots_start: to_u32(slots_start),
            bits_start,
            key_start: keys,
            key_end: keys,
            key_node: NONE,
            key_entry: 0,
            elems: 0,
            steps_keys,
            steps_string,
        });
    }

    /// Opens the frame and slot of a container whose schema is the single node `n` (see
    /// `Node::lone`), as the general path would: one unconditional member slot, the type and
    /// (absent) `enum` already known to pass.
    fn open_single(&mut self, n: &Node, id: NodeId, parent: u32, kind: ValueKind) {
        let mut slot = Slot::member(id, parent);
        let mut steps_keys = false;
        let bits_start = to_u32(self.bits.len());
        if kind == ValueKind::Object {
            if let Some(rule) = &n.object {
                if rule.additional == Additional::Deny {
                    steps_keys = true;
                    slot.pos = key_start(rule, 0);
                }
                if !rule.required.is_empty() {
                    slot.bits = bits_start;
                    let words = rule.required.len().div_ceil(64);
                    self.bits.extend(std::iter::repeat(0).take(words));
                }
            }
        }
        self.push_frame(kind, self.slots.len(), bits_start, steps_keys, false);
        self.slots.push(slot);
    }

    /// Gives the lone scalar the frame and slot the general path would have given it, with
    /// the state read so far.
    #[cold]
    #[inline(never)]
    fn materialize(&mut self, nodes: &[Node], lone: Lone) {
        self.lone = None;
        let n = node(nodes, lone.node);
        let steps_string = lone.kind == ValueKind::String
            && (n.enumeration.is_some()
                || n.string
                    .as_ref()
                    .is_some_and(|r| r.min_len > 0 || r.max_len < u64::MAX));
        let bits_start = to_u32(self.bits.len());
        self.push_frame(lone.kind, self.slots.len(), bits_start, false, steps_string);
        self.slots.push(Slot {
            count: lone.count,
            pos: lone.pos,
            ..Slot::member(lone.node, lone.parent)
        });
    }

    /// Follows the lone scalar over a string piece; false (nothing changed) when the piece
    /// breaks a rule, which the general path then reports.
    fn lone_piece(&mut self, nodes: &[Node], piece: &[u8]) -> bool {
        let Some(lone) = self.lone.as_mut() else {
            return false;
        };
        let n = node(nodes, lone.node);
        let mut count = lone.count;
        if let Some(rule) = &n.string {
            if rule.min_len > 0 || rule.max_len < u64::MAX {
                count += piece.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
                if count > rule.max_len {
                    return false;
                }
            }
        }
        let mut pos = lone.pos;
        if let Some(e) = &n.enumeration {
            for &b in piece {
                match e.strings.step(pos, b) {
                    Some(next) => pos = next,
                    None => return false,
                }
            }
        }
        lone.count = count;
        lone.pos = pos;
        true
    }

    /// Whether the lone scalar's value passes every rule its slot would check at its end.
    fn lone_passes(&mut self, n: &Node, lone: Lone, payload: Payload<'_>) -> bool {
        match payload {
            Payload::Str(v) => {
                if let Some(rule) = &n.string {
                    if lone.count < rule.min_len
                        || rule
                            .pattern
                            .as_ref()
                            .is_some_and(|(re, _)| !re.is_match(utf8(v)))
                        || rule.format.is_some_and(|f| !f.check(utf8(v)))
                    {
                        return false;
                    }
                }
                n.enumeration
                    .as_ref()
                    .map_or(true, |e| e.strings.value(lone.pos).is_some())
            }
            Payload::Num(lexeme) => {
                if n.number.is_none()
                    && n.enumeration.is_none()
                    && (n.types & T_NUMBER != 0 || is_int_lexeme(lexeme))
                {
                    return true;
                }
                match Fixed::parse(lexeme).and_then(|x| fixed_number_failure(n, x)) {
                    Some(None) => return true,
                    Some(Some(f)) if float_reading_fails(n, lexeme, f) => return false,
                    // A failure the float reading denies may hide another: the general path
                    // checks every rule.
                    _ => {}
                }
                let Some((neg, exp)) = parse_into(lexeme, &mut self.num) else {
                    return true;
                };
                let d = DecRef {
                    neg,
                    digits: &self.num,
                    exp,
                };
                // A rule left to the final validation sends the value to the general path,
                // which keeps an enclosing `oneOf` from counting it as a certain match.
                let uncertain = Cell::new(false);
                number_failure(
                    n,
                    &d,
                    is_int_lexeme(lexeme),
                    |f| float_reading_fails(n, lexeme, f),
                    &uncertain,
                )
                .is_none()
                    && !uncertain.get()
            }
            Payload::Bool(b) => n
                .enumeration
                .as_ref()
                .map_or(true, |e| e.bools & (if b { 2 } else { 1 }) != 0),
            Payload::Null | Payload::Container(_) => true,
        }
    }

    fn value_start(&mut self, nodes: &[Node], root: NodeId, kind: ValueKind, offset: usize) {
        if !self.start_fast(nodes, kind) {
            self.start_slots(nodes, root, kind, offset);
        }
    }

    /// The general path of `value_start`: out of line, so the fast path's call stays cheap.
    #[inline(never)]
    fn start_slots(&mut self, nodes: &[Node], root: NodeId, kind: ValueKind, offset: usize) {
        let capturing = self.capture.is_active();
        if capturing && is_container(kind) {
            self.capture.begin(kind);
        }
        if kind == ValueKind::String {
            self.want_str = capturing;
            self.text.clear();
        }
        if self.skip > 0 {
            if is_container(kind) {
                self.skip += 1;
            }
            return;
        }
        if self.full {
            return;
        }
        let start = self.slots.len();
        let parent = self.frames.len().checked_sub(1);
        if parent.is_none() {
            if self.started {
                return; // a second top-level value: the scanner rejects it
            }
            self.started = true;
        }
        let bits = kind_bits(kind);
        self.phantom = 0;
        // Slots first, the frame only if there are any: most values of a tool call meet a
        // plain node (a type and nothing else) or none, and then cost no frame at all.
        match parent {
            None => self.instantiate(nodes, root, NO_SLOT, Link::Root, false, start, bits),
            Some(p) => {
                let pf = self.frames[p];
                if pf.kind == ValueKind::Array {
                    self.frames[p].elems += 1;
                    self.start_element(nodes, p, pf, offset, start, bits);
                } else {
                    for s in pf.slots_start as usize..start {
                        let slot = self.slots[s];
                        if slot.alive && slot.member != NONE {
                            self.instantiate(
                                nodes,
                                slot.member,
                                to_u32(s),
                                Link::Member,
                                slot.cond,
                                start,
                                bits,
                            );
                        }
                    }
                }
            }
        }
        if self.slots.len() == start {
            if is_container(kind) {
                self.skip = 1;
            } else {
                self.skip_scalar = true;
            }
            return;
        }
        let bits_start = to_u32(self.bits.len());
        self.push_frame(kind, start, bits_start, false, false);
        self.start_checks(nodes, kind, offset, start);
        if kind == ValueKind::String && !self.want_str {
            self.want_str = self.slots[start..].iter().any(|s| {
                let n = node(nodes, s.node);
                s.alive && (n.string.is_some() || n.enumeration.is_some())
            });
        }
        if !capturing && is_container(kind) {
            let needs = self.slots[start..].iter().any(|s| {
                s.alive
                    && node(nodes, s.node)
                        .enumeration
                        .as_ref()
                        .is_some_and(|e| e.kinds & kind_bits(kind) != 0 && !e.containers.is_empty())
            });
            if needs {
                self.capture.begin(kind);
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // the element, its parent and its kind
    fn start_element(
        &mut self,
        nodes: &[Node],
        p: usize,
        pf: Frame,
        offset: usize,
        start: usize,
        bits: u8,
    ) {
        let index = pf.elems as usize; // elements before this one
        for s in pf.slots_start as usize..start {
            let slot = self.slots[s];
            if !slot.alive {
                continue;
            }
            let Some(rule) = node(nodes, slot.node).array.as_ref() else {
                continue;
            };
            if index as u64 >= rule.max_items {
                // Only the first extra element is an error; later ones are just not checked.
                if index as u64 == rule.max_items {
                    let got = count_words(index as u64 + 1, "item");
                    self.fail_at_depth(nodes, s, p, offset, false, Failure::MaxItems, &got);
                }
                continue;
            }
            let child = rule.prefix.get(index).copied().unwrap_or(rule.items);
            if child != NONE && self.slots[s].alive {
                self.instantiate(
                    nodes,
                    child,
                    to_u32(s),
                    Link::Member,
                    slot.cond,
                    start,
                    bits,
                );
            }
        }
    }

    /// Adds the slots of node `id` (and of its conjuncts and branches) for a value of kind
    /// `bits`. A plain node (see `Node::plain`) gets none outside a branch group: its one
    /// check, the type, passes, and nothing else would ever look at its slot.
    #[allow(clippy::too_many_arguments)] // a slot is described by all of these
    fn instantiate(
        &mut self,
        nodes: &[Node],
        id: NodeId,
        parent: u32,
        link: Link,
        cond: bool,
        start: usize,
        bits: u8,
    ) {
        let n = node(nodes, id);
        let branch = matches!(link, Link::AnyOf | Link::OneOf);
        if n.trivial && !branch {
            return;
        }
        let capped = self.slots.len() - start + self.phantom >= MAX_SLOTS_PER_VALUE;
        if capped && !branch {
            if link == Link::Conj {
                // The owner now matches more than its schema does.
                self.loosen(parent);
            }
            return;
        }
        if n.plain & bits != 0 && !branch {
            // As many as it would have had: itself and one per branch (see `Node::plain`).
            self.phantom += 1 + n.any_of.len();
            return;
        }
        // The wrapper's slot would assert nothing and only relay its conjunct's failures, which
        // the conjunct does itself when it takes the wrapper's place (same parent, link and
        // condition). Counted as a slot, so the cap falls where it always did.
        if n.wrapped != NONE && self.slots.len() - start + self.phantom + 1 < MAX_SLOTS_PER_VALUE {
            self.phantom += 1;
            self.instantiate(nodes, n.wrapped, parent, link, cond, start, bits);
            return;
        }
        let idx = to_u32(self.slots.len());
        let (id, n) = if capped {
            (TRUE_NODE, node(nodes, TRUE_NODE))
        } else {
            (id, n)
        };
        self.slots.push(Slot {
            link,
            cond,
            any_alive: to_u32(n.any_of.len()),
            one_alive: to_u32(n.one_of.len()),
            ..Slot::member(id, parent)
        });
        if capped {
            self.loosen(idx);
        }
        // Conjuncts are unconditional exactly when their owner is: a failure of one is the
        // owner's failure, with the conjunct's own keyword in the report.
        for c in n.conjuncts() {
            self.instantiate(nodes, c, idx, Link::Conj, cond, start, bits);
        }
        for &b in &n.any_of {
            self.instantiate(nodes, b, idx, Link::AnyOf, true, start, bits);
        }
        for &b in &n.one_of {
            self.instantiate(nodes, b, idx, Link::OneOf, true, start, bits);
        }
    }

    fn start_checks(&mut self, nodes: &[Node], kind: ValueKind, offset: usize, start: usize) {
        let bits = kind_bits(kind);
        let depth = self.frames.len() - 1;
        let mut steps_keys = false;
        let mut steps_string = false;
        for i in start..self.slots.len() {
            if !self.slots[i].alive {
                continue;
            }
            let n = node(nodes, self.slots[i].node);
            if n.is_false {
                self.fail_at_depth(
                    nodes,
                    i,
                    depth,
                    offset,
                    true,
                    Failure::False,
                    kind.type_name(),
                );
                continue;
            }
            if n.types & bits == 0 {
                self.fail_at_depth(
                    nodes,
                    i,
                    depth,
                    offset,
                    true,
                    Failure::Type,
                    kind.type_name(),
                );
                continue;
            }
            if let Some(e) = &n.enumeration {
                if e.kinds & bits == 0 {
                    self.fail_at_depth(
                        nodes,
                        i,
                        depth,
                        offset,
                        true,
                        Failure::Enum,
                        kind.type_name(),
                    );
                    continue;
                }
                if kind == ValueKind::String {
                    steps_string = true;
                }
            }
            match kind {
                ValueKind::Object => {
                    if let Some(rule) = &n.object {
                        if rule.additional == Additional::Deny {
                            steps_keys = true;
                            self.slots[i].pos = key_start(rule, 0);
                        }
                        if !rule.required.is_empty() {
                            self.slots[i].bits = to_u32(self.bits.len());
                            let words = rule.required.len().div_ceil(64);
                            self.bits.extend(std::iter::repeat(0).take(words));
                        }
                    }
                }
                ValueKind::String => {
                    if let Some(rule) = &n.string {
                        steps_string |= rule.min_len > 0 || rule.max_len < u64::MAX;
                    }
                }
                _ => {}
            }
        }
        if let Some(f) = self.frames.last_mut() {
            f.steps_keys = steps_keys;
            f.steps_string = steps_string;
        }
    }

    // ----- keys --------------------------------------------------------------------------

    /// Steps the slots of the innermost object that deny unknown keys over the next `piece`
    /// of its key, reporting the first byte that no allowed name continues.
    #[inline]
    fn key_piece(&mut self, nodes: &[Node], piece: &[u8], offset: usize, escaped: bool) {
        // One slot still reading the name it expects: the common case, decided here.
        if let (Some(f), Some(slot)) = (self.frames.last(), self.slots.last()) {
            if f.slots_start as usize + 1 == self.slots.len()
                && slot.alive
                && slot.pos == GUESSING
                && node(nodes, slot.node)
                    .object
                    .as_ref()
                    .is_some_and(|rule| rule.continues(slot.guess, self.key_len, piece))
            {
                if self.key_len == 0 {
                    self.text.clear();
                }
                self.key_len += piece.len();
                return;
            }
        }
        self.step_keys(nodes, piece, offset, escaped);
    }

    /// The general path of `key_piece`.
    #[inline(never)]
    fn step_keys(&mut self, nodes: &[Node], piece: &[u8], offset: usize, escaped: bool) {
        let Some(depth) = self.frames.len().checked_sub(1) else {
            return;
        };
        let f = self.frames[depth];
        let before = self.key_len;
        if before == 0 {
            self.text.clear();
        }
        self.key_len += piece.len();
        let end = f.slots_start as usize + self.slots_in(depth);
        // As in `step_string`: failures are applied in byte order after every slot has read
        // the piece, so the result does not depend on where the key was cut.
        let mut failures: Vec<(usize, usize, usize)> = Vec::new();
        for s in f.slots_start as usize..end {
            let slot = self.slots[s];
            if !slot.alive || slot.pos == DEAD {
                continue;
            }
            let Some(rule) = node(nodes, slot.node).object.as_ref() else {
                continue;
            };
            if rule.additional != Additional::Deny {
                continue;
            }
            let mut pos = slot.pos;
            let mut guessed = None;
            if pos == GUESSING {
                if rule.continues(slot.guess, before, piece) {
                    continue;
                }
                // The key so far is the start of the expected name: a prefix of an allowed
                // name, so the walk succeeds.
                let name = rule
                    .names
                    .get(slot.guess as usize)
                    .map_or(&[][..], |n| &n[..]);
                let so_far = name.get(..before).unwrap_or(name);
                pos = rule.trie.walk_live(so_far).unwrap_or(DEAD);
                guessed = Some(so_far);
            }
            self.key_text(before, piece, guessed);
            for (i, &b) in piece.iter().enumerate() {
                if let Some(n) = rule.trie.step_live(pos, b) {
                    pos = n;
                } else {
                    pos = DEAD;
                    let at = if escaped { offset } else { offset + i };
                    let upto = if escaped {
                        before + piece.len()
                    } else {
                        before + i + 1
                    };
                    failures.push((at, s, upto));
                    break;
                }
            }
            self.slots[s].pos = pos;
        }
        failures.sort_unstable();
        for (at, s, upto) in failures {
            if self.slots[s].alive {
                // Through the deciding byte, which may not end its character (the rest may
                // not have arrived): the whole characters before it, the same for every cut.
                let prefix = utf8_prefix(&self.text[..upto]).to_owned();
                self.unknown_key(nodes, s, depth, at, &prefix, true);
            }
        }
    }

    /// Brings `text` to the key read so far, `piece` included, for a slot that steps the trie
    /// (or reports) from here on. While every slot still matches its expected name, pieces are
    /// not copied: the key so far is then `so_far` (the guessed name's first bytes).
    fn key_text(&mut self, before: usize, piece: &[u8], so_far: Option<&[u8]>) {
        if self.text.len() == before + piece.len() {
            return;
        }
        if self.text.len() != before {
            self.text.clear();
            self.text.extend_from_slice(so_far.unwrap_or_default());
        }
        self.text.extend_from_slice(piece);
    }

    /// Number of slots of frame `depth` (the frame's own, not its children's).
    fn slots_in(&self, depth: usize) -> usize {
        let start = self.frames[depth].slots_start as usize;
        let end = self
            .frames
            .get(depth + 1)
            .map_or(self.slots.len(), |f| f.slots_start as usize);
        end - start
    }

    #[cold]
    #[inline(never)]
    fn unknown_key(
        &mut self,
        nodes: &[Node],
        s: usize,
        depth: usize,
        at: usize,
        key: &str,
        partial: bool,
    ) {
        let before = self.errors.len();
        // A key still open whose first character decided shows its object's path: `/` would
        // name the empty key.
        let shown = (!partial || !key.is_empty()).then_some(key);
        let named =
            self.fail_at_depth_key(nodes, s, depth, at, false, Failure::UnknownKey, key, shown);
        if partial && named && self.errors.len() > before {
            // Every error naming the key is completed when it closes (one per object slot
            // that refuses it: an `allOf` of closed objects has several).
            match self.pending {
                None => {
                    let base = self.path_to(nodes, depth).len();
                    self.pending = Some(Pending {
                        error: to_u32(before),
                        is_key: true,
                        base: to_u32(base),
                    });
                }
                Some(p) if p.is_key => self.more_key_errors.push(to_u32(before)),
                Some(_) => {}
            }
        }
    }

    fn key_end(&mut self, nodes: &[Node], key: &[u8], offset: usize) {
        // Keys come whole and decoded from the scanner: valid UTF-8.
        let key_str = || std::str::from_utf8(key).unwrap_or("");
        if self.capture.is_active() {
            self.capture.key(key_str());
        }
        if self.skip > 0 {
            return;
        }
        self.text.clear();
        self.key_len = 0;
        if self.pending.is_some() {
            self.patch_pending(true, key_str());
        }
        if self.full {
            return;
        }
        let Some(depth) = self.frames.len().checked_sub(1) else {
            return;
        };
        let f = self.frames[depth];
        self.keys.truncate(f.key_start as usize);
        let end = f.slots_start as usize + self.slots_in(depth);
        if end == f.slots_start as usize + 1 && self.expected_key(nodes, depth, end - 1, key) {
            return;
        }
        // Set below; the loop's errors name this key themselves and only read the path of
        // the frames around this one.
        let mut named = None;
        for s in f.slots_start as usize..end {
            let slot = self.slots[s];
            if !slot.alive {
                continue;
            }
            let Some(rule) = node(nodes, slot.node).object.as_ref() else {
                continue;
            };
            let deny = rule.additional == Additional::Deny;
            let entry = if deny {
                match slot.pos {
                    DEAD => {
                        // Already reported while the key was read.
                        self.slots[s].pos = key_start(rule, slot.guess);
                        self.slots[s].member = NONE;
                        continue;
                    }
                    GUESSING => rule.guessed(slot.guess, key).or_else(|| {
                        // A strict prefix of the expected name (or another name).
                        rule.trie.walk_live(key).and_then(|p| rule.trie.value(p))
                    }),
                    pos => rule.trie.value(pos),
                }
            } else {
                rule.guessed(slot.guess, key)
                    .or_else(|| rule.trie.lookup(key))
            };
            if named.is_none() {
                named = entry.map(|e| (slot.node, e));
            }
            let info = entry.and_then(|e| rule.keys.get(e as usize).copied());
            let mut guess = slot.guess;
            if let (Some(e), Some(info)) = (entry, info) {
                if info.prop != NONE {
                    guess = e + 1;
                }
                if info.required_bit != u32::MAX {
                    let w = slot.bits as usize + (info.required_bit / 64) as usize;
                    if let Some(word) = self.bits.get_mut(w) {
                        *word |= 1 << (info.required_bit % 64);
                    }
                }
            }
            self.slots[s].guess = guess;
            if deny {
                self.slots[s].pos = key_start(rule, guess);
            }
            let mut additional = rule.additional;
            let mut by_pattern = false;
            if let (Some(patterns), None | Some(KeyInfo { prop: NONE, .. })) =
                (&rule.patterns, info)
            {
                additional = patterns.additional;
                match patterns.member(key_str()) {
                    PatternMember::Additional => {}
                    PatternMember::Patterns(id, sure) => {
                        if !sure {
                            self.loosen(to_u32(s));
                        }
                        by_pattern = true;
                        additional = Additional::Schema(id);
                    }
                    PatternMember::Unknown => {
                        self.loosen(to_u32(s));
                        additional = Additional::Any;
                    }
                }
            }
            let member = match info {
                Some(info) if info.prop != NONE => info.prop,
                _ => match additional {
                    Additional::Any => NONE,
                    Additional::Schema(id) => id,
                    Additional::Deny => {
                        self.unknown_key(nodes, s, depth, offset, key_str(), false);
                        NONE
                    }
                },
            };
            if member == FALSE_NODE {
                self.fail_at_depth_key(
                    nodes,
                    s,
                    depth,
                    offset,
                    false,
                    if by_pattern {
                        Failure::PatternFalse
                    } else {
                        Failure::PropertyFalse
                    },
                    key_str(),
                    Some(key_str()),
                );
                self.slots[s].member = NONE;
            } else if self.slots[s].alive {
                self.slots[s].member = member;
            }
        }
        let frame = &mut self.frames[depth];
        match named {
            Some((node, entry)) => {
                frame.key_node = node;
                frame.key_entry = entry;
                frame.key_end = frame.key_start;
            }
            None => {
                self.keys.extend_from_slice(key);
                frame.key_node = NONE;
                frame.key_end = to_u32(self.keys.len());
            }
        }
    }

    /// `key_piece` and `key_end` of a key that arrived whole, when it is the property the
    /// object's one slot expects next: no byte of it can fail, so only the end's updates are
    /// made. False, having changed nothing, in every other case.
    #[inline]
    fn whole_expected_key(&mut self, nodes: &[Node], key: &[u8]) -> bool {
        if self.skip > 0
            || self.full
            || self.key_len != 0
            || self.pending.is_some()
            || self.capture.is_active()
        {
            return false;
        }
        let Some(depth) = self.frames.len().checked_sub(1) else {
            return false;
        };
        let f = self.frames[depth];
        let s = f.slots_start as usize;
        if s + 1 != self.slots.len() || !self.expected_key(nodes, depth, s, key) {
            return false;
        }
        self.text.clear();
        self.keys.truncate(f.key_start as usize);
        true
    }

    /// `key_end` for the common case, where the object's only slot reads a property and the
    /// key is the one it expected next (arguments mostly follow the schema's order): the same
    /// updates as the general loop, without it. False, having changed nothing, otherwise.
    #[inline]
    fn expected_key(&mut self, nodes: &[Node], depth: usize, s: usize, key: &[u8]) -> bool {
        let slot = self.slots[s];
        if !slot.alive {
            return false;
        }
        let Some(rule) = node(nodes, slot.node).object.as_ref() else {
            return false;
        };
        let deny = rule.additional == Additional::Deny;
        if deny && slot.pos != GUESSING {
            return false;
        }
        let Some(entry) = rule.guessed(slot.guess, key) else {
            return false;
        };
        let Some(info) = rule.keys.get(entry as usize).copied() else {
            return false;
        };
        if info.prop == NONE || info.prop == FALSE_NODE {
            return false;
        }
        if info.required_bit != u32::MAX {
            let w = slot.bits as usize + (info.required_bit / 64) as usize;
            if let Some(word) = self.bits.get_mut(w) {
                *word |= 1 << (info.required_bit % 64);
            }
        }
        let guess = entry + 1;
        let updated = &mut self.slots[s];
        updated.guess = guess;
        if deny {
            updated.pos = key_start(rule, guess);
        }
        updated.member = info.prop;
        let frame = &mut self.frames[depth];
        frame.key_node = slot.node;
        frame.key_entry = entry;
        frame.key_end = frame.key_start;
        true
    }

    // ----- strings -----------------------------------------------------------------------

    /// `piece` has just been appended to `text` at `before`.
    #[inline]
    fn string_piece(
        &mut self,
        nodes: &[Node],
        piece: &[u8],
        before: usize,
        offset: usize,
        escaped: bool,
    ) {
        if let Some(lone) = self.lone {
            if self.lone_piece(nodes, piece) {
                return;
            }
            self.materialize(nodes, lone);
        }
        self.step_string(nodes, piece, before, offset, escaped);
    }

    /// The general path of `string_piece`.
    #[inline(never)]
    fn step_string(
        &mut self,
        nodes: &[Node],
        piece: &[u8],
        before: usize,
        offset: usize,
        escaped: bool,
    ) {
        let Some(depth) = self.frames.len().checked_sub(1) else {
            return;
        };
        let f = self.frames[depth];
        if !f.steps_string {
            return;
        }
        let chars = piece.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
        // Failures are applied in byte order once every slot has read the piece, as if the
        // piece had come byte by byte: a group of branches dies at its last branch's byte,
        // whatever the order of its slots.
        let mut failures: Vec<(usize, usize, Failure, usize)> = Vec::new();
        for s in f.slots_start as usize..self.slots.len() {
            let slot = self.slots[s];
            if !slot.alive {
                continue;
            }
            let n = node(nodes, slot.node);
            // The slot's first failure in byte order: a piece longer than `maxLength` may
            // break the `enum` earlier, where a byte-by-byte stream would have said so.
            let mut first: Option<(usize, Failure, usize)> = None;
            if let Some(rule) = &n.string {
                if slot.count + chars > rule.max_len {
                    // Find the byte that starts code point max_len + 1.
                    let mut count = slot.count;
                    let mut at = offset;
                    let mut upto = self.text.len();
                    for (i, &b) in piece.iter().enumerate() {
                        if b & 0xC0 != 0x80 {
                            count += 1;
                            if count > rule.max_len {
                                if !escaped {
                                    at = offset + i;
                                    upto = before + i + 1;
                                }
                                break;
                            }
                        }
                    }
                    first = Some((at, Failure::MaxLength, upto));
                } else {
                    self.slots[s].count += chars;
                }
            }
            if let Some(e) = &n.enumeration {
                let mut pos = slot.pos;
                for (i, &b) in piece.iter().enumerate() {
                    if let Some(next) = e.strings.step(pos, b) {
                        pos = next;
                    } else {
                        let (at, upto) = if escaped {
                            (offset, self.text.len())
                        } else {
                            (offset + i, before + i + 1)
                        };
                        pos = DEAD;
                        if first.map_or(true, |(length_at, _, _)| at < length_at) {
                            first = Some((at, Failure::Enum, upto));
                        }
                        break;
                    }
                }
                self.slots[s].pos = pos;
            }
            if let Some((at, failure, upto)) = first {
                failures.push((at, s, failure, upto));
            }
        }
        failures.sort_by_key(|&(at, s, _, _)| (at, s));
        for (at, s, failure, upto) in failures {
            if self.slots[s].alive {
                self.string_failure(nodes, s, depth, at, failure, upto);
            }
        }
    }

    /// A string value read into `text` (passed in as `value`) closes at `offset`.
    fn string_end(&mut self, nodes: &[Node], value: &[u8], offset: usize) {
        if self.capture.is_active() {
            self.capture.push(Canon::Str(utf8(value).into()));
        }
        if self.skip > 0 {
            return;
        }
        if self.skip_scalar {
            self.skip_scalar = false;
            return;
        }
        if self.pending.is_some() {
            self.patch_pending(false, utf8(value));
        }
        if !self.full {
            self.end_value(nodes, offset, Payload::Str(value));
        }
    }

    #[cold]
    #[inline(never)]
    fn string_failure(
        &mut self,
        nodes: &[Node],
        s: usize,
        depth: usize,
        at: usize,
        f: Failure,
        upto: usize,
    ) {
        // As for keys: the whole characters through the deciding byte.
        let prefix = utf8_prefix(&self.text[..upto]).to_owned();
        let before = self.errors.len();
        let named = self.fail_at_depth(nodes, s, depth, at, true, f, &prefix);
        if named && self.errors.len() > before && self.pending.is_none() {
            self.pending = Some(Pending {
                error: to_u32(before),
                is_key: false,
                base: 0,
            });
            self.early_forms
                .push((to_u32(before), self.errors[before].clone()));
        }
    }

    /// Completes an error raised while a key or string was still being read.
    fn patch_pending(&mut self, is_key: bool, full: &str) {
        let Some(p) = self.pending else {
            return;
        };
        if p.is_key != is_key {
            return;
        }
        self.pending = None;
        let more = std::mem::take(&mut self.more_key_errors);
        for &i in std::iter::once(&p.error).chain(&more) {
            let Some(e) = self.errors.get_mut(i as usize) else {
                continue;
            };
            if let Some(d) = e.detail.as_mut() {
                if d.got != REDACTED {
                    d.got = cut(full);
                }
            }
            if is_key {
                e.path.truncate(p.base as usize);
                e.path.push('/');
                push_pointer_token(&mut e.path, full);
                e.message = format!("unexpected property {}", quoted(full));
            }
        }
        if is_key {
            // Judged again on the whole key's path (see `Checker::redact_secrets`).
            self.redacted = self.redacted.min(p.error as usize);
        }
        let mut more = more;
        more.clear();
        self.more_key_errors = more;
    }

    // ----- value end ---------------------------------------------------------------------

    #[inline]
    fn end_value(&mut self, nodes: &[Node], offset: usize, payload: Payload<'_>) {
        if let Some(lone) = self.lone {
            if self.lone_passes(node(nodes, lone.node), lone, payload) {
                self.lone = None;
                return;
            }
            self.materialize(nodes, lone);
        }
        self.end_slots(nodes, offset, payload);
    }

    /// The general path of `end_value`: every slot of the value closing at `offset`.
    #[inline(never)]
    fn end_slots(&mut self, nodes: &[Node], offset: usize, payload: Payload<'_>) {
        let Some(depth) = self.frames.len().checked_sub(1) else {
            return;
        };
        let f = self.frames[depth];
        let start = f.slots_start as usize;
        let mut parsed: Option<(bool, i64)> = None;
        let mut i = self.slots.len();
        while i > start {
            i -= 1;
            if !self.slots[i].alive {
                continue;
            }
            let n = node(nodes, self.slots[i].node);
            match payload {
                Payload::Str(v) => self.end_string(nodes, n, i, depth, offset, v),
                // Most numbers only need their type: known from the first byte, or for an
                // integer type from a lexeme without fraction or exponent.
                Payload::Num(lexeme)
                    if n.number.is_none()
                        && n.enumeration.is_none()
                        && (n.types & T_NUMBER != 0 || is_int_lexeme(lexeme)) => {}
                Payload::Num(lexeme) => {
                    if parsed.is_none() {
                        parsed = parse_into(lexeme, &mut self.num);
                    }
                    if let Some((neg, exp)) = parsed {
                        let d = DecRef {
                            neg,
                            digits: &self.num,
                            exp,
                        };
                        let uncertain = Cell::new(false);
                        let failure = number_failure(
                            n,
                            &d,
                            is_int_lexeme(lexeme),
                            |f| float_reading_fails(n, lexeme, f),
                            &uncertain,
                        );
                        if failure.is_none() && uncertain.get() {
                            // Not a certain match: see `number_failure`.
                            self.loosen(to_u32(i));
                        }
                        if let Some(f) = failure {
                            // A type error names the type found; the others show the number.
                            let got = if matches!(f, Failure::Type) {
                                "number"
                            } else {
                                std::str::from_utf8(lexeme).unwrap_or("")
                            };
                            self.fail_at_depth(nodes, i, depth, offset, true, f, got);
                        }
                    }
                }
                Payload::Bool(b) => {
                    if let Some(e) = &n.enumeration {
                        if e.bools & (if b { 2 } else { 1 }) == 0 {
                            let got = if b { "true" } else { "false" };
                            self.fail_at_depth(nodes, i, depth, offset, true, Failure::Enum, got);
                        }
                    }
                }
                Payload::Null => {}
                Payload::Container(captured) => {
                    self.end_container(nodes, n, i, depth, f, offset, captured);
                }
            }
            if self.slots[i].alive && !n.one_of.is_empty() {
                let exact_alive = (i + 1..self.slots.len())
                    .filter(|&j| {
                        let s = self.slots[j];
                        s.parent == to_u32(i)
                            && s.link == Link::OneOf
                            && s.alive
                            && s.exact
                            && node(nodes, s.node).exact
                    })
                    .count();
                if exact_alive > 1 {
                    let got = f.kind.type_name();
                    self.fail_at_depth(nodes, i, depth, offset, true, Failure::OneOfMany, got);
                }
            }
        }
        self.frames.pop();
        self.slots.truncate(start);
        self.bits.truncate(f.bits_start as usize);
        self.keys.truncate(f.key_start as usize);
    }

    fn end_string(
        &mut self,
        nodes: &[Node],
        n: &Node,
        i: usize,
        depth: usize,
        offset: usize,
        v: &[u8],
    ) {
        if let Some(rule) = &n.string {
            if self.slots[i].count < rule.min_len {
                let v = utf8(v);
                self.fail_at_depth(nodes, i, depth, offset, true, Failure::MinLength, v);
                return;
            }
            if let Some((re, _)) = &rule.pattern {
                let v = utf8(v);
                if !re.is_match(v) {
                    self.fail_at_depth(nodes, i, depth, offset, true, Failure::Pattern, v);
                    return;
                }
            }
            if let Some(fmt) = rule.format {
                let v = utf8(v);
                if !fmt.check(v) {
                    self.fail_at_depth(nodes, i, depth, offset, true, Failure::Format, v);
                    return;
                }
            }
        }
        if let Some(e) = &n.enumeration {
            if e.strings.value(self.slots[i].pos).is_none() {
                let v = utf8(v);
                self.fail_at_depth(nodes, i, depth, offset, true, Failure::Enum, v);
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // all of them describe the one value being closed
    fn end_container(
        &mut self,
        nodes: &[Node],
        n: &Node,
        i: usize,
        depth: usize,
        f: Frame,
        offset: usize,
        captured: Option<&Canon>,
    ) {
        match f.kind {
            ValueKind::Object => {
                if let Some(rule) = &n.object {
                    let all_present = self.all_required(rule, self.slots[i].bits as usize);
                    if !all_present && !self.report_missing(nodes, rule, i, depth, offset) {
                        return;
                    }
                }
            }
            ValueKind::Array => {
                if let Some(rule) = &n.array {
                    if u64::from(f.elems) < rule.min_items {
                        let got = count_words(u64::from(f.elems), "item");
                        self.fail_at_depth(nodes, i, depth, offset, true, Failure::MinItems, &got);
                        return;
                    }
                }
            }
            _ => {}
        }
        if let (Some(e), Some(v)) = (&n.enumeration, captured) {
            // Digits beyond a double's precision are left to the final validation, as for a
            // scalar (the float comparison runs only once the exact one has failed).
            if !e.containers.iter().any(|c| c == v)
                && !e.containers.iter().any(|c| c.read_as_this(v))
            {
                self.fail_at_depth(
                    nodes,
                    i,
                    depth,
                    offset,
                    true,
                    Failure::Enum,
                    f.kind.type_name(),
                );
            }
        }
    }

    /// Reports each required property missing from the object closing at `offset`; false
    /// when that killed slot `i`.
    #[cold]
    #[inline(never)]
    fn report_missing(
        &mut self,
        nodes: &[Node],
        rule: &ObjectRule,
        i: usize,
        depth: usize,
        offset: usize,
    ) -> bool {
        let base = self.slots[i].bits as usize;
        for (bit, name) in rule.required.iter().enumerate() {
            let word = self.bits.get(base + bit / 64).copied().unwrap_or(0);
            if word & (1 << (bit % 64)) == 0 {
                self.fail_at_depth_key(
                    nodes,
                    i,
                    depth,
                    offset,
                    false,
                    Failure::Required,
                    name,
                    Some(name),
                );
                if !self.slots[i].alive {
                    return false;
                }
            }
        }
        true
    }

    // ----- failures ----------------------------------------------------------------------

    #[allow(clippy::too_many_arguments)] // a failure is described by all of these
    fn fail_at_depth(
        &mut self,
        nodes: &[Node],
        s: usize,
        depth: usize,
        at: usize,
        fatal: bool,
        f: Failure,
        got: &str,
    ) -> bool {
        self.fail_at_depth_key(nodes, s, depth, at, fatal, f, got, None)
    }

    /// Slot `s` (of the value at frame `depth`) fails at byte `at`. Conditional slots are
    /// eliminated (and the elimination climbs to the owning branch group); unconditional ones
    /// record an error, and stop checking when `fatal`. True when an error recorded for this
    /// failure names it (its own, or the one branch left of a group, see `propagate`), so a
    /// caller reading an open key or string completes that error when the text closes.
    #[allow(clippy::too_many_arguments)] // a failure is described by all of these
    fn fail_at_depth_key(
        &mut self,
        nodes: &[Node],
        s: usize,
        depth: usize,
        at: usize,
        fatal: bool,
        f: Failure,
        got: &str,
        key: Option<&str>,
    ) -> bool {
        let slot = self.slots[s];
        if !slot.alive {
            return false;
        }
        if slot.cond {
            self.kill(s);
            self.propagate(nodes, s, at, (depth, f, got, key))
        } else {
            self.record(nodes, s, depth, at, f, got, key);
            if fatal {
                self.kill(s);
            }
            true
        }
    }

    /// Marks slot `s` and the slots it belongs to (to the root) as matching more than their
    /// schemas: a subschema was left out under them, so none may count as an exact `oneOf`
    /// match.
    #[cold]
    fn loosen(&mut self, mut s: u32) {
        while let Some(slot) = self.slots.get_mut(s as usize) {
            slot.exact = false;
            s = slot.parent;
        }
    }

    /// Marks slot `s` and every slot under it dead.
    fn kill(&mut self, s: usize) {
        self.slots[s].alive = false;
        for j in s + 1..self.slots.len() {
            let p = self.slots[j].parent;
            if p != NO_SLOT && !self.slots[p as usize].alive {
                self.slots[j].alive = false;
            }
        }
    }

    /// The dead conditional slot `s` takes its parent with it, up to a branch group that still
    /// has a live branch, or to an unconditional owner whose group ran out (an error).
    ///
    /// `cause` is the failure that killed `s`: when it is the last live branch of an `anyOf` /
    /// `oneOf` and it failed on something more specific than its type (a pattern, an enum, a
    /// bound), that failure is the one reported — `a string matching ^u_...$` tells the model
    /// more than `none of the alternatives` for an optional field. True when that failure is
    /// the one recorded.
    fn propagate(
        &mut self,
        nodes: &[Node],
        mut s: usize,
        at: usize,
        mut cause: (usize, Failure, &str, Option<&str>),
    ) -> bool {
        let mut origin = s;
        loop {
            let slot = self.slots[s];
            if slot.parent == NO_SLOT {
                return false;
            }
            let p = slot.parent as usize;
            if !self.slots[p].alive {
                return false;
            }
            // A branch got past its own type when it failed on a keyword, or on anything
            // inside its value (an item of the wrong type in an array branch).
            let specific = !matches!(
                cause.1,
                Failure::Type | Failure::False | Failure::BranchTypes { .. }
            ) || (matches!(slot.link, Link::AnyOf | Link::OneOf)
                && cause.0 > self.frame_of(p));
            if specific && matches!(slot.link, Link::AnyOf | Link::OneOf) {
                self.slots[p].specific_deaths += 1;
            }
            let failure = match slot.link {
                Link::Root => return false,
                Link::Member | Link::Conj => None,
                Link::AnyOf => {
                    self.slots[p].any_alive -= 1;
                    if self.slots[p].any_alive > 0 {
                        return false;
                    }
                    Some(Failure::AnyOf)
                }
                Link::OneOf => {
                    self.slots[p].one_alive -= 1;
                    if self.slots[p].one_alive > 0 {
                        return false;
                    }
                    Some(Failure::OneOfNone)
                }
            };
            // No branch got past its type (`Optional[int]` given a string): "none of the
            // alternatives" hides what the model needs, the types it may send ("integer or
            // null"), which final validation names as a `type` error too.
            let failure = failure.map(|f| {
                if self.slots[p].specific_deaths == 0 {
                    Failure::BranchTypes {
                        one_of: matches!(f, Failure::OneOfNone),
                    }
                } else {
                    f
                }
            });
            if self.slots[p].cond {
                // A union that ran out inside a branch of an outer one, with no single
                // branch to name: it, not the leaf that ended it, is what failed there
                // (`integer or null` at `/obj/n`, not the `null` its last branch wanted).
                if let Some(f) = failure.filter(|_| !specific || self.slots[p].specific_deaths != 1)
                {
                    let depth = self.frame_of(p);
                    cause = (depth, f, self.frames[depth].kind.type_name(), None);
                    origin = p;
                }
                self.kill(p);
                s = p;
                continue;
            }
            let mut named = false;
            if let Some(f) = failure {
                let (cause_depth, cause_failure, cause_got, cause_key) = cause;
                // Only when exactly one branch got past its type is its failure the whole story;
                // otherwise naming one branch's rule would mislead.
                if !specific || self.slots[p].specific_deaths != 1 {
                    let depth = self.frame_of(p);
                    let got = self.frames[depth].kind.type_name();
                    self.record(nodes, p, depth, at, f, got, None);
                } else {
                    self.record(
                        nodes,
                        origin,
                        cause_depth,
                        at,
                        cause_failure,
                        cause_got,
                        cause_key,
                    );
                    named = true;
                }
            }
            self.kill(p);
            return named;
        }
    }

    fn frame_of(&self, s: usize) -> usize {
        self.frames
            .iter()
            .rposition(|f| f.slots_start as usize <= s)
            .unwrap_or(0)
    }

    /// JSON Pointer of the value at frame `depth`.
    fn path_to(&self, nodes: &[Node], depth: usize) -> String {
        let mut p = String::new();
        for f in &self.frames[..depth.min(self.frames.len())] {
            p.push('/');
            match f.kind {
                ValueKind::Object => {
                    let key = if f.key_node == NONE {
                        self.keys.get(f.key_start as usize..f.key_end as usize)
                    } else {
                        node(nodes, f.key_node)
                            .object
                            .as_ref()
                            .and_then(|rule| rule.names.get(f.key_entry as usize))
                            .map(|name| &name[..])
                    };
                    push_pointer_token(&mut p, utf8(key.unwrap_or_default()));
                }
                _ => p.push_str(&f.elems.saturating_sub(1).to_string()),
            }
        }
        p
    }

    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)] // see fail_at_depth_key
    fn record(
        &mut self,
        nodes: &[Node],
        s: usize,
        depth: usize,
        at: usize,
        f: Failure,
        got: &str,
        key: Option<&str>,
    ) {
        if self.errors.len() >= MAX_ERRORS {
            self.full = true;
            return;
        }
        let mut path = self.path_to(nodes, depth);
        if let Some(k) = key {
            path.push('/');
            push_pointer_token(&mut path, k);
        }
        let n = node(nodes, self.slots[s].node);
        let (keyword, expected, message) = describe(nodes, n, f, got);
        if let Some(last) = self.bound_told(&path, at, keyword) {
            // A value several subschemas bound (a property's and a pattern's, `allOf`
            // members') hears every bound it breaks in one error, as validation tells it.
            if let Some(d) = last.detail.as_deref_mut() {
                if d.expected != expected {
                    let tail = d.expected.strip_prefix("a number ").unwrap_or(&d.expected);
                    d.expected = format!("{expected} and {tail}");
                    keyword.clone_into(&mut d.keyword);
                    last.message = message;
                }
            }
            return;
        }
        self.errors.push(Error {
            kind: ErrorKind::SchemaViolation,
            offset: at,
            path,
            message,
            detail: Some(Box::new(SchemaDetail {
                keyword: keyword.to_owned(),
                expected,
                got: cut(got),
            })),
        });
        if self.errors.len() >= MAX_ERRORS {
            self.full = true;
        }
    }
}

impl State {
    /// The last error when it is about the same value (`path`), found at the same byte (`at`),
    /// for a bound of the same kind as `keyword` (a range, a length, a divisor, a pattern):
    /// the error to tell this bound in too.
    fn bound_told(&mut self, path: &str, at: usize, keyword: &str) -> Option<&mut Error> {
        let kind = bound_kind(keyword)?;
        let last = self.errors.last_mut()?;
        let same = last.offset == at
            && last.path == path
            && last
                .detail
                .as_ref()
                .is_some_and(|d| bound_kind(&d.keyword) == Some(kind));
        same.then_some(last)
    }
}

/// Which bounds validation tells together: ranges, lengths, divisors, patterns.
fn bound_kind(keyword: &str) -> Option<u8> {
    Some(match keyword {
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => 0,
        "minLength" | "maxLength" | "minItems" | "maxItems" => 1,
        "multipleOf" => 2,
        "pattern" => 3,
        _ => return None,
    })
}

/// A bound, its keyword, and which comparison outcomes break it.
type BoundCheck<'a> = (
    &'a Option<Decimal>,
    &'static str,
    fn(std::cmp::Ordering) -> bool,
);

/// A [`Fixed`] bound, its keyword, and which comparison outcomes break it.
type FixedBoundCheck = (Option<Fixed>, &'static str, fn(std::cmp::Ordering) -> bool);

/// [`number_failure`] for a number that fits a [`Fixed`], when the node's rules do too (an
/// `enum` is left to the decimal path): `None` when it cannot decide.
fn fixed_number_failure(n: &Node, x: Fixed) -> Option<Option<Failure>> {
    use std::cmp::Ordering::{Greater, Less};
    if n.enumeration.is_some() {
        return None;
    }
    let rule = match &n.number {
        Some(rule) => Some(rule.fixed.as_ref()?),
        None => None,
    };
    if n.types & T_NUMBER == 0 && !x.is_integer() {
        return Some(Some(Failure::Type));
    }
    let Some(rule) = rule else {
        return Some(None);
    };
    let checks: [FixedBoundCheck; 4] = [
        (rule.minimum, "minimum", |o| o == Less),
        (rule.exclusive_minimum, "exclusiveMinimum", |o| o != Greater),
        (rule.maximum, "maximum", |o| o == Greater),
        (rule.exclusive_maximum, "exclusiveMaximum", |o| o != Less),
    ];
    for (bound, keyword, breaks) in checks {
        if let Some(b) = bound {
            if breaks(x.cmp(b)) {
                return Some(Some(Failure::Bound(keyword)));
            }
        }
    }
    if let Some(m) = rule.multiple_of {
        if !x.is_multiple_of(m) {
            // Maybe a float-rounded multiple (see `float_multiple`): the general path decides.
            return None;
        }
    }
    Some(None)
}

/// The first rule the exact value `d` breaks for which `holds` is true, in the order the
/// keywords are checked. A failure `holds` denies (one that the float reading of the number
/// keeps, see [`float_reading_fails`]) does not hide the rules after it: the float reading of
/// `99999999999999999999.5` may be whole, but it is above `maximum: 5` either way.
///
/// `uncertain` is set when a rule the exact value breaks was let pass (denied by `holds`, or
/// within the float tolerance of `multipleOf`), or an `enum` member it equals may be another
/// number to a reader (see [`Decimal::reads_alike`]): the final validation decides it, so the value
/// may still fail there, and a `oneOf` must not count its branch as a certain match.
/// `int` tells whether the number was written as an integer (see [`is_int_lexeme`]).
fn number_failure(
    n: &Node,
    d: &DecRef<'_>,
    int: bool,
    mut holds: impl FnMut(Failure) -> bool,
    uncertain: &Cell<bool>,
) -> Option<Failure> {
    use std::cmp::Ordering::{Greater, Less};
    let mut found = |f: Failure| {
        let held = holds(f);
        if !held {
            uncertain.set(true);
        }
        held.then_some(f)
    };
    if n.types & T_NUMBER == 0 && !d.is_integer() {
        if let Some(f) = found(Failure::Type) {
            return Some(f);
        }
    }
    if let Some(rule) = &n.number {
        let checks: [BoundCheck<'_>; 4] = [
            (&rule.minimum, "minimum", |o| o == Less),
            (&rule.exclusive_minimum, "exclusiveMinimum", |o| {
                o != Greater
            }),
            (&rule.maximum, "maximum", |o| o == Greater),
            (&rule.exclusive_maximum, "exclusiveMaximum", |o| o != Less),
        ];
        for (bound, keyword, breaks) in checks {
            if let Some(b) = bound {
                if breaks(d.cmp(&b.as_ref())) {
                    if let Some(f) = found(Failure::Bound(keyword)) {
                        return Some(f);
                    }
                }
            }
        }
        if let Some((m, text)) = &rule.multiple_of {
            // Exact, as JSON Schema has it, or within the tolerance of Pydantic's float
            // fields: the pre-check must not refuse what the final validation accepts.
            if !m.divides(d) {
                if d.is_integer() || !text.parse().is_ok_and(|m| float_multiple(d.to_f64(), m)) {
                    if let Some(f) = found(Failure::MultipleOf) {
                        return Some(f);
                    }
                } else {
                    uncertain.set(true);
                }
            }
        }
    }
    if let Some(e) = &n.enumeration {
        match e.numbers.iter().find(|x| x.as_ref().cmp(d).is_eq()) {
            None => return found(Failure::Enum),
            Some(x) if !x.reads_alike(int) => uncertain.set(true),
            Some(_) => {}
        }
    }
    None
}

/// Whether `failure`, found on the exact value of `lexeme`, holds for its nearest `f64` too.
///
/// Final validation may read the number as a float (a Pydantic `float` field, `jsonschema` on
/// the parsed value), and to a float `100.000000000000000001` is `100.0` and
/// `0.10000000000000001` is `0.1`: the pre-check reports only what every reading rejects, so
/// a rule broken by digits beyond a double's precision is left to the final validation. Only
/// failures reach here, so the hot path never parses a float.
#[cold]
fn float_reading_fails(n: &Node, lexeme: &[u8], failure: Failure) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let Some(x) = std::str::from_utf8(lexeme)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
    else {
        return true;
    };
    let float = |d: &Decimal| d.as_ref().to_f64();
    // An integer written as one is an exact `int` to Python, compared exactly with another:
    // only a float on one side (or a float field's reading, below) rounds.
    let int = is_int_lexeme(lexeme);
    match failure {
        Failure::Type => !(x.is_finite() && x.fract() == 0.0),
        Failure::Bound(keyword) => {
            let Some(rule) = &n.number else {
                return true;
            };
            let (bound, breaks): (&Option<Decimal>, fn(std::cmp::Ordering) -> bool) = match keyword
            {
                "minimum" => (&rule.minimum, |o| o == Less),
                "exclusiveMinimum" => (&rule.exclusive_minimum, |o| o != Greater),
                "maximum" => (&rule.maximum, |o| o == Greater),
                _ => (&rule.exclusive_maximum, |o| o != Less),
            };
            bound.as_ref().map_or(true, |b| {
                // An integer against an integer bound where no float field can read it (no
                // `number` type): `jsonschema` and Pydantic's `int` compare them exactly, so
                // `9007199254740993` is above `maximum: 9007199254740992` to both.
                if int && b.written_int() && n.types & T_NUMBER == 0 {
                    return true;
                }
                // Both float readings must break it: Pydantic's (the bound a float too) and
                // Python's (`jsonschema` compares the float with an integer bound exactly).
                breaks(x.partial_cmp(&float(b)).unwrap_or(Equal))
                    && (!b.as_ref().is_integer()
                        || exact_of(x, lexeme)
                            .map_or(true, |e| breaks(e.as_ref().cmp(&b.as_ref()))))
            })
        }
        Failure::Enum => n.enumeration.as_ref().map_or(true, |e| {
            let exact = exact_of(x, lexeme);
            !e.numbers.iter().any(|v| v.read_as_this(x, exact.as_ref()))
        }),
        Failure::MultipleOf => {
            // `jsonschema` divides the float Python read: `9007199254740995.0` is
            // `9007199254740996.0` there, a multiple of 3.
            let whole = x.is_finite() && x.fract() == 0.0;
            let multiple = n.number.as_ref().and_then(|r| r.multiple_of.as_ref());
            match (whole, multiple, exact_of(x, lexeme)) {
                (true, Some((m, _)), Some(e)) => !m.divides(&e.as_ref()),
                _ => true,
            }
        }
        _ => true,
    }
}

/// The exact value of `x`, the float Python reads from `lexeme`, when Python reads a float
/// there (a fraction or an exponent; an integer lexeme is an exact `int`).
fn exact_of(x: f64, lexeme: &[u8]) -> Option<Decimal> {
    if is_int_lexeme(lexeme) {
        return None;
    }
    Decimal::of_f64(x)
}

fn branch_words(nodes: &[Node], branches: &[NodeId]) -> String {
    let mut out = String::new();
    for (i, &b) in branches.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == branches.len() {
                " or "
            } else {
                ", "
            });
        }
        out.push_str(&node(nodes, b).summary);
    }
    out
}

/// `(keyword, expected, message)` of a failure, in words built from the schema.
#[allow(clippy::too_many_lines)] // one arm per failure kind, kept side by side on purpose
fn describe(nodes: &[Node], n: &Node, f: Failure, got: &str) -> (&'static str, String, String) {
    let object = n.object.as_deref();
    let string = n.string.as_deref();
    let array = n.array.as_deref();
    match f {
        Failure::Type => {
            let expected = type_words(n.types);
            let message = format!("expected {expected}, got {got}");
            ("type", expected, message)
        }
        Failure::False => (
            "false",
            "no value".to_owned(),
            "no value is allowed here".to_owned(),
        ),
        Failure::Enum => {
            let (keyword, expected) = n
                .enumeration
                .as_deref()
                .map_or(("enum", String::new()), |e| (e.keyword, e.expected.clone()));
            let message = if keyword == "const" {
                "value is not the allowed constant".to_owned()
            } else {
                "value is not one of the allowed values".to_owned()
            };
            (keyword, expected, message)
        }
        Failure::UnknownKey => (
            "additionalProperties",
            object.map(|o| o.deny_expected.clone()).unwrap_or_default(),
            format!("unexpected property {}", quoted(got)),
        ),
        Failure::PropertyFalse | Failure::PatternFalse => (
            if matches!(f, Failure::PatternFalse) {
                "patternProperties"
            } else {
                "properties"
            },
            format!("no property {}", quoted(got)),
            format!("property {} is not allowed", quoted(got)),
        ),
        Failure::Required => (
            "required",
            object
                .map(|o| o.required_expected.clone())
                .unwrap_or_default(),
            format!("missing required property {}", quoted(got)),
        ),
        Failure::MaxItems => {
            let max = array.map_or(0, |a| a.max_items);
            (
                "maxItems",
                at_most(max, "item"),
                format!("array has more than {}", count_words(max, "item")),
            )
        }
        Failure::MinItems => {
            let min = array.map_or(0, |a| a.min_items);
            (
                "minItems",
                at_least(min, "item"),
                format!("array has fewer than {}", count_words(min, "item")),
            )
        }
        Failure::MaxLength => {
            let max = string.map_or(0, |s| s.max_len);
            (
                "maxLength",
                at_most(max, "character"),
                "string is too long".to_owned(),
            )
        }
        Failure::MinLength => {
            let min = string.map_or(0, |s| s.min_len);
            (
                "minLength",
                at_least(min, "character"),
                "string is too short".to_owned(),
            )
        }
        Failure::Bound(keyword) => (
            keyword,
            n.number
                .as_ref()
                .map(|r| r.bounds_expected.clone())
                .unwrap_or_default(),
            "number is out of range".to_owned(),
        ),
        Failure::MultipleOf => {
            let m = n
                .number
                .as_ref()
                .and_then(|r| r.multiple_of.as_ref())
                .map_or("", |(_, t)| &**t);
            (
                "multipleOf",
                format!("a multiple of {m}"),
                format!("number is not a multiple of {m}"),
            )
        }
        Failure::Pattern => {
            let p = string
                .and_then(|s| s.pattern.as_ref())
                .map_or("", |(_, src)| &**src);
            (
                "pattern",
                format!("a string matching {p}"),
                "string does not match the pattern".to_owned(),
            )
        }
        Failure::Format => {
            let fmt = string.and_then(|s| s.format);
            (
                "format",
                fmt.map(|f| f.expected().to_owned()).unwrap_or_default(),
                format!(
                    "string is not a valid {}",
                    fmt.map_or("value", |f| f.name())
                ),
            )
        }
        Failure::AnyOf => (
            if n.one_of_named { "oneOf" } else { "anyOf" },
            branch_words(nodes, &n.any_of),
            "value matches none of the allowed alternatives".to_owned(),
        ),
        Failure::OneOfNone => (
            "oneOf",
            format!("exactly one of {}", branch_words(nodes, &n.one_of)),
            "value matches none of the allowed alternatives".to_owned(),
        ),
        Failure::BranchTypes { one_of } => {
            let expected = branch_words(nodes, if one_of { &n.one_of } else { &n.any_of });
            let message = format!("expected {expected}, got {got}");
            ("type", expected, message)
        }
        Failure::OneOfMany => (
            "oneOf",
            format!("exactly one of {}", branch_words(nodes, &n.one_of)),
            "value matches more than one alternative".to_owned(),
        ),
    }
}
