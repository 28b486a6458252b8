//! Provider event decoding: the data of one SSE event becomes [`Action`]s for the assembler.
//!
//! Design notes
//! - One serde pass per event over a single permissive `Envelope` struct that holds the
//!   top-level fields of all four formats (`OpenAI` Chat Completions chunks, `OpenAI` Responses
//!   events, Anthropic Messages events, Gemini `GenerateContentResponse` chunks, decoded in
//!   `envelope/gemini.rs`); unknown fields are skipped, so the format is detected per event from
//!   the fields present and what `type` says.
//! - The structs are declared with `wire_struct!` (`envelope/wire.rs`), not serde's derive: a
//!   repeated member keeps its last value, as `json.loads` in every SDK keeps it, where the
//!   derive refused the event.
//! - The event is checked as UTF-8 once and parsed with `serde_json::from_str`: `from_slice`
//!   would re-check every string it borrows.
//! - String fields are taken as `&RawValue` and decoded on use: borrowed when they hold no
//!   escape (ids, names, types in practice), and argument fragments and text are unescaped by
//!   our own `unescape` straight into one reused buffer. `serde_json`'s unescaping would allocate
//!   a scratch buffer per event, and argument fragments always contain escaped quotes.
//! - Nested objects that only a few events need (`item`, `response`, `content_block`,
//!   `message`, Anthropic's `delta`, the legacy `function_call`) are also `&RawValue` and parsed
//!   by a second, small pass when their event comes. Measured on the Chat Completions hot path:
//!   keeping them as typed fields made `Envelope` ~700 bytes, and moving it through serde's
//!   `Result`s cost more (memcpy) than the rare second pass does.
//! - Arrays (`choices`, `tool_calls`) are `Few`: one element inline, a `Vec` only for two or
//!   more, so the usual chunk (one choice, one tool call) allocates nothing. Steady state: no
//!   allocation per event (checked with callgrind on a synthetic stream).
//! - The whole event is parsed before any action is emitted: a malformed event changes nothing.
//! - A name with an unpaired surrogate escape, which `json.loads` takes and serde_json refuses,
//!   is made whole (U+FFFD) for a second read of the event, only once the first was refused
//!   (`envelope/lone_keys.rs`): the usual event costs nothing more. A nested object read in
//!   the second pass (`read_nested!`) is made whole the same way, once its own read is refused.
//! - Only one choice of a Chat Completions stream is assembled (its calls, text and finish
//!   reason): the first one it shows, 0 unless a translator numbered a single choice
//!   otherwise; other choices are counted in [`Decoder::ignored_choices`]. Tool calls with
//!   `n > 1` are rare, and the assembler's key is one wire index, not (choice, index).
//! - Per-call state lives here only where the wire format needs it: Anthropic blocks (is it a
//!   `tool_use`? did `input_json_delta`s follow the `input` of `content_block_start`?) and
//!   Responses items (`item_id` to `output_index`, a length and FNV-1a hash of the deltas so that
//!   `.done`'s full `arguments` can be verified without keeping a second copy of the text).
//! - Arguments set aside until their call ends (an Anthropic block's `input`, a Responses
//!   `added`'s `arguments`, used only if the call's own fragments never come) are held decoded,
//!   as they will be fed, and the assembler counts them toward `max_stream_bytes` while they are
//!   held ([`Action::SetAside`], [`crate::Assembler::set_aside`] says why then): a stream cannot
//!   make the decoder hold more than the limit, and one past `max_bytes` is not kept. Once the
//!   response is refused whole, no per-item state is made.
//! - A UTF-16 surrogate pair split between two fragments of one call (quirk 41) is joined: a
//!   fragment that ends in a high surrogate is held whole per call until the next fragment
//!   (held whole, a cumulative resend of it, quirk 19, is seen against the text before it),
//!   counted toward `max_stream_bytes` while held ([`Action::HoldFragment`]); one the assembler
//!   will not let be held is handed on at once. A half left unpaired is written back as its
//!   `\uXXXX` escape, so the argument scanner reports it at its offset.
//! - Blank ids and names (`""`, and `"null"` for ids) become `None` here already (quirks 11,
//!   14, 15); the assembler does the same for deltas fed from Python.
//! - Reasoning the next request must send back is kept (`envelope/thinking.rs`): Anthropic's
//!   `thinking` blocks, and each Responses `reasoning` item whole from its
//!   `output_item.done` (its summary deltas are not held: the finished item is the
//!   authoritative copy, and one that never finished is not kept), or from the finished
//!   response's `output` when no `output_item.done` brought it. The item after it decides
//!   whether it is kept ([`thinking::Follower`]): the API refuses one sent back without it.
//!   Every other Responses item that is no call and no text (a hosted tool's call,
//!   [`thinking::is_hosted`]) is kept with them the same way, in output order; it is never a
//!   call, and a call is told how many came before it (metadata `hosted_before`). In a stream
//!   joined part way, an item only the finished response's `output` has goes before the kept
//!   items the stream brought that came after it there ([`Action::EarlierReasoning`]).
//! - A Responses `custom_tool_call` item is a call of type [`FREE_FORM_KIND`]: its free-form
//!   input is fed once, whole, from `custom_tool_call_input.done` or the finished item
//!   (whichever comes first), decoded as plain text; its deltas only open a call whose
//!   `output_item.added` was lost. The JSON rules for fragments (resends, repeats) do not
//!   apply to text that is no JSON.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use memchr::memchr;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::assembler::{Arguments, Delta, FREE_FORM_KIND};
use crate::progress::Recorded;

/// Read the nested object `$text` (JSON text) as `$ty`, which only some events need. A name in
/// it with an unpaired surrogate escape, which `json.loads` takes, is made whole into `$store`
/// (`lone_keys`) and the object read from there, only once serde_json has refused it: names
/// inside `&RawValue` members are not seen by the event's first read. `$store` is a `String`
/// declared and left unset by the caller, so that the usual read makes and drops none.
macro_rules! read_nested {
    ($ty:ident, $text:expr, $store:ident) => {{
        let text: &str = $text;
        match serde_json::from_str::<$ty<'_>>(text) {
            Ok(read) => Ok(read),
            Err(e) => reread_nested!($ty, text, e, $store),
        }
    }};
}

/// The read of [`read_nested!`] once serde_json refused `$text` with `$first`.
macro_rules! reread_nested {
    ($ty:ident, $text:expr, $first:expr, $store:ident) => {
        match lone_keys::whole_names($text, $first, |t: &str| {
            serde_json::from_slice::<$ty<'_>>(t.as_bytes()).map(drop)
        }) {
            Ok(whole) => {
                $store = whole;
                serde_json::from_slice::<$ty<'_>>($store.as_bytes())
            }
            Err(e) => Err(e),
        }
    };
}

/// [`read_nested!`] for an optional member; a refusal is the event's.
macro_rules! nested {
    ($ty:ident, $raw:expr, $store:ident) => {
        match $raw {
            None => Ok(None),
            Some(raw) => read_nested!($ty, raw.get(), $store)
                .map(Some)
                .map_err(EventError::Malformed),
        }
    };
}

#[macro_use]
mod wire;
mod gemini;
mod items;
mod lone_keys;
mod partial_args;
mod thinking;

use items::{ItemState, Items};
pub(crate) use lone_keys::whole_strings;
pub use thinking::Reasoning;
use thinking::{drop_thought, Thought};

/// The wire format of an event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `OpenAI` Chat Completions chunks (and every OpenAI-compatible server).
    OpenAiChat,
    /// `OpenAI` Responses API events.
    OpenAiResponses,
    /// Anthropic Messages API events.
    Anthropic,
    /// Gemini native API `GenerateContentResponse` chunks (`streamGenerateContent?alt=sse`).
    Gemini,
}

impl Format {
    /// The stable name: `openai-chat`, `openai-responses`, `anthropic` or `gemini` (the names
    /// of Python's `WireFormat`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the model stopped, normalized across formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishReason {
    /// A natural end (`stop`, `end_turn`, `stop_sequence`, Responses `completed` without calls).
    Stop,
    /// The model asked for tools (`tool_calls`, `tool_use`, Responses `completed` with calls).
    ToolCalls,
    /// The output limit was hit (`length`, `max_tokens`, `max_output_tokens`).
    Length,
    /// The provider's content filter stopped the output (`content_filter`, `safety`, Bedrock's
    /// `guardrail_intervened` and `content_filtered`).
    ContentFilter,
    /// The model refused.
    Refusal,
    /// A value with no normalized meaning (see the raw value), or a failed response.
    Other,
}

impl FinishReason {
    /// The stable name: `stop`, `tool_calls`, `length`, `content_filter`, `refusal`, `other`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::ToolCalls => "tool_calls",
            Self::Length => "length",
            Self::ContentFilter => "content_filter",
            Self::Refusal => "refusal",
            Self::Other => "other",
        }
    }

    /// Normalize a raw finish/stop reason of any format (case-insensitive).
    #[must_use]
    pub fn from_raw(raw: &str) -> Self {
        const TABLE: &[(&str, FinishReason)] = &[
            ("stop", FinishReason::Stop),
            ("end_turn", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("eos", FinishReason::Stop),
            ("completed", FinishReason::Stop),
            ("tool_calls", FinishReason::ToolCalls),
            ("function_call", FinishReason::ToolCalls),
            ("tool_use", FinishReason::ToolCalls),
            ("length", FinishReason::Length),
            ("max_tokens", FinishReason::Length),
            ("max_output_tokens", FinishReason::Length),
            ("model_length", FinishReason::Length),
            ("model_context_window_exceeded", FinishReason::Length),
            // Gemini's per-request token limit, when the answer is not continued.
            ("continuation", FinishReason::Length),
            ("content_filter", FinishReason::ContentFilter),
            ("safety", FinishReason::ContentFilter),
            // Bedrock Converse: a guardrail or the model's own filter ended the response.
            ("guardrail_intervened", FinishReason::ContentFilter),
            ("content_filtered", FinishReason::ContentFilter),
            // Gemini's filters: the output was cut because of what it held.
            ("recitation", FinishReason::ContentFilter),
            ("blocklist", FinishReason::ContentFilter),
            ("prohibited_content", FinishReason::ContentFilter),
            ("spii", FinishReason::ContentFilter),
            ("language", FinishReason::ContentFilter),
            ("image_safety", FinishReason::ContentFilter),
            ("image_prohibited_content", FinishReason::ContentFilter),
            ("image_recitation", FinishReason::ContentFilter),
            ("refusal", FinishReason::Refusal),
        ];
        TABLE
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(raw))
            .map_or(Self::Other, |&(_, reason)| reason)
    }

    /// True for endings after which no call may run (`content_filter`, `refusal`).
    #[must_use]
    pub fn stops_calls(self) -> bool {
        matches!(self, Self::ContentFilter | Self::Refusal)
    }
}

/// Something one event asks of the assembler or the stream state, in event order.
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    /// Feed one tool-call delta; keep `metadata` (key, JSON text) on the call it lands on.
    Call {
        /// The delta, with blank ids and names already turned into `None`.
        delta: Delta<'a>,
        /// An opaque provider field for this call (a Responses item's `item_id`).
        metadata: Option<(&'static str, &'a str)>,
        /// The text arguments start with this many bytes of the previous fragment under this
        /// key, held because it ended in a high surrogate (with that half's `\uXXXX` escape if
        /// it found no partner). They belong to the call that fragment went to, which is not
        /// this delta's if the delta starts one.
        released: usize,
        /// The index the call reports when it differs from the routing key `delta.index`: a
        /// Responses item keyed apart from another item sent under the same `output_index`.
        shown_index: Option<i64>,
    },
    /// An opaque provider field for the call under this wire index, kept on the call open
    /// there, or once one opens; never opens a call (quirk 31). Chat Completions: a member of a
    /// tool-call entry that is not its own, right after the entry's [`Action::Call`], or alone
    /// when the entry has no id, type or function.
    Metadata {
        /// The wire index.
        index: Option<i64>,
        /// The field's name (`extra_content`, `thought_signature`).
        key: &'a str,
        /// The field's value, as JSON text.
        json: &'a str,
    },
    /// The call last fed at this wire index is complete (Anthropic `content_block_stop`,
    /// Responses `output_item.done`).
    EndCall(i64),
    /// Assistant text, decoded UTF-8.
    Text(&'a [u8]),
    /// A block of assistant text starts (Anthropic `content_block_start` of a `text` block,
    /// a Responses `message` item's `output_item.added`, Gemini's first text part or the first
    /// after a call): the next turn sends each block back in its place among the calls.
    TextBlock,
    /// The text block begun last carries this Gemini thought signature (a JSON string): the
    /// next turn sends it back on that block's part.
    TextSignature(&'a str),
    /// A citation (JSON text of an object, as [`canonical`] writes it) of the text block that
    /// started last (Anthropic `citations_delta`, or a `citations` list on the block's start):
    /// the next turn sends the block back with it, counted as assistant text is.
    Citation(&'a str),
    /// A usage object, as raw JSON text.
    Usage(&'a str),
    /// The id of the code-execution container the response ran in (Anthropic's `container`):
    /// the request that continues a `pause_turn` names it.
    Container(&'a str),
    /// A finish reason: the raw value and its normalized meaning.
    Finish {
        /// As sent (Responses: the status, or the incomplete reason).
        raw: &'a str,
        /// Normalized.
        reason: FinishReason,
    },
    /// The end-of-stream marker (`[DONE]`, `message_stop`).
    Done,
    /// The response starts again from its beginning (a second `message_start` or
    /// `response.created`: a stream replayed after a reconnect). Its text comes again too.
    Restart,
    /// The response failed (Responses `response.failed`): calls not yet complete and ended
    /// must not run, as after a content filter. The reason as sent.
    Stop(&'a str),
    /// The provider reported an error; raw JSON of the error object (or of the whole event).
    ProviderError(&'a str),
    /// Chat Completions: choice `index` carried text or tool calls, which are not assembled,
    /// as only choice `chosen` is (`n > 1`).
    OtherChoice {
        /// The choice assembled.
        chosen: i64,
        /// The choice whose content was skipped.
        index: i64,
    },
    /// The provider gave up on the response after an error: calls not yet complete and ended
    /// must not run, the finish reason is `error` whatever comes after, and a call that still
    /// starts later is stopped too (an SDK raises at the error and never shows it).
    GaveUp,
    /// Gemini: the Vertex AI `partialArgs` pieces of the call at this wire key hold a value
    /// this path cannot read exactly as `feed_chunk` does: the call ends `lost_event` and
    /// never runs.
    UnreadArguments(i64),
    /// Gemini: a progress item of the call at this wire key, whose arguments arrive as values
    /// (Vertex AI `partialArgs` pieces, merged as they come): see
    /// [`crate::Assembler::record_progress`]. Emitted only after
    /// [`Decoder::set_track_progress`].
    Progress {
        /// The wire key of the call.
        index: i64,
        /// The JSON Pointer of the value.
        path: &'a str,
        /// The text appended to the string there, or the JSON text of the number or literal.
        text: &'a str,
        /// What the text is.
        value: Recorded,
    },
    /// Gemini: the pieces of the call at this wire key do not make one object (or hold what
    /// this path cannot read): nothing more of it is a progress item, its text included (see
    /// [`crate::Assembler::stop_progress`]). Emitted only after [`Decoder::set_track_progress`].
    StopProgress(i64),
    /// Responses: the item at this position of a finished response's `output` could not be
    /// read and was skipped; the rest of the event was read (a malformed event, told, that
    /// loses no call).
    UnreadItem(usize),
    /// Gemini: the body ended before the answer did (no finish reason after the last call):
    /// a call still without arguments was cut off, as after a dropped connection.
    Interrupt(&'a str),
    /// Responses `.done` (or `output_item.done`) carried the whole arguments (decoded) of the
    /// call at this wire index, once per item. The assembler compares them with the arguments
    /// it holds (cumulative deltas, quirk 19, replace rather than append; a repeat it dropped,
    /// quirk 20) and feeds them only when those differ (a lost delta).
    ArgumentsSummary(i64, &'a [u8]),
    /// Responses `output_item.done` restated the whole free-form input (decoded) of the
    /// custom tool call at this wire index after its `custom_tool_call_input.done` gave it
    /// its text: the item is what the provider keeps as the call, so its text is kept (see
    /// [`crate::Assembler::replace_free_form`]), and a difference is told.
    FinalInput(i64, &'a [u8]),
    /// Bytes the decoder holds for a call outside the assembler until the call closes (a
    /// Gemini call's merged `partialArgs` pieces; see [`crate::Assembler::may_hold`]): answered
    /// with whether they fit beside what the response keeps. `Held(0)` asks whether the
    /// response is still kept at all, before the decoder makes state for a new item.
    Held(usize),
    /// Arguments the decoder would set aside for the call at this wire index until the call
    /// ends, used only if its own fragments never come: the `input` of an Anthropic
    /// `content_block_start`, the `arguments` of a Responses `output_item.added`. `bytes` is
    /// the length of the text they would be fed as. Answered with whether they may be kept
    /// (see [`crate::Assembler::set_aside`]); kept, they are counted until a
    /// [`Action::Release`] of the same length.
    SetAside {
        /// The wire index of the call.
        index: i64,
        /// The length of the text held.
        bytes: usize,
    },
    /// Set-aside bytes let go: replaced by the call's own fragments, or about to be fed; or
    /// the bytes of a reasoning block dropped ([`Action::HoldReasoning`]).
    Release(usize),
    /// Bytes of an Anthropic reasoning block still streaming, which the decoder holds and
    /// keeps once the block ends whole, or of a finished Responses `reasoning` item: answered,
    /// as assistant text is counted, with whether they fit under `max_stream_bytes` (see
    /// [`crate::Assembler::keep_text`]); kept, they stay counted, or are given back by a
    /// [`Action::Release`] if the block is dropped.
    HoldReasoning(usize),
    /// A reasoning block (Anthropic) or item (Responses) that ended whole, in output order:
    /// kept for the next request (its bytes were counted by [`Action::HoldReasoning`]).
    Reasoning(&'a Reasoning),
    /// A Responses item kept as [`Action::Reasoning`] is, that came in the output before the
    /// last `before` items kept: read from the finished response of a stream joined part way,
    /// where the items before the join came only there.
    EarlierReasoning {
        /// The item.
        block: &'a Reasoning,
        /// How many of the items kept so far came after it.
        before: usize,
    },
    /// The Responses `reasoning` item kept last is let go, its bytes given back: the item
    /// that followed it is not one the next turn sends, and the API refuses it alone.
    DropReasoning,
    /// The decoded bytes of an argument fragment held for its call's next fragment because it
    /// ends in a high surrogate (quirk 41). Answered with whether they may be kept (see
    /// [`crate::Assembler::set_aside`], for no call in particular: held, they are the call's
    /// own text, checked against `max_bytes` when fed); kept, they are counted until a
    /// [`Action::Release`] of the same length. Refused, the fragment is handed on at once with
    /// its half written back as an escape, and nothing is held.
    HoldFragment(usize),
}

/// Why one event produced no actions. Never fatal for the stream.
#[derive(Debug)]
pub enum EventError {
    /// The data is not JSON, or a field we read has the wrong type.
    Malformed(serde_json::Error),
    /// The data is not UTF-8 (byte offset of the first bad byte).
    InvalidUtf8(usize),
    /// Valid JSON that no supported format recognises (the `type`, if any, is kept).
    UnknownEvent(Option<String>),
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(e) => write!(f, "malformed event: {e}"),
            Self::InvalidUtf8(at) => write!(f, "malformed event: invalid utf-8 at byte {at}"),
            Self::UnknownEvent(Some(t)) => write!(f, "unknown event type {t:?}"),
            Self::UnknownEvent(None) => f.write_str("unknown event"),
        }
    }
}

impl std::error::Error for EventError {}

// ---------------------------------------------------------------------------------------------
// Wire structs: only the fields we read.

/// A JSON string, borrowed from the event unless it contained escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Str<'a>(Cow<'a, str>);

impl Str<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

/// Zero, one or more elements of a JSON array; only two or more allocate.
#[derive(Debug)]
enum Few<T> {
    Zero,
    One(T),
    Many(Vec<T>),
}

impl<T> Few<T> {
    fn as_slice(&self) -> &[T] {
        match self {
            Self::Zero => &[],
            Self::One(x) => std::slice::from_ref(x),
            Self::Many(v) => v,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Few<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Few<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let mut mismatch = None;
                let read = <Few<T> as wire::Direct>::from_array(seq, &mut mismatch)?;
                read.ok_or_else(|| {
                    mismatch
                        .unwrap_or(wire::Mismatch::Array)
                        .error::<A::Error, Option<Few<T>>>()
                })
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> wire::Direct<'de> for Few<T> {
    const EXPECTED: &'static str = "an array";

    fn from_array<A: SeqAccess<'de>>(
        mut seq: A,
        _: &mut Option<wire::Mismatch>,
    ) -> Result<Option<Self>, A::Error> {
        let Some(first) = seq.next_element()? else {
            return Ok(Some(Few::Zero));
        };
        let Some(second) = seq.next_element()? else {
            return Ok(Some(Few::One(first)));
        };
        let mut all = Vec::with_capacity(4);
        all.push(first);
        all.push(second);
        while let Some(x) = seq.next_element()? {
            all.push(x);
        }
        Ok(Some(Few::Many(all)))
    }
}

wire_struct! {
    /// The union of the top-level fields of all the formats.
    struct Envelope<'a> {
        kind: Option<&'a RawValue> = "type",
        object: Option<&'a RawValue> = "object",
        choices: Option<Few<Choice<'a>>> = "choices",
        usage: Option<&'a RawValue> = "usage",
        error: Option<&'a RawValue> = "error",
        // Responses
        output_index: Option<i64> = "output_index" => position,
        /// Read leniently: a bridge's odd value (a string, a negative number) is no number.
        sequence_number: Option<&'a RawValue> = "sequence_number",
        item_id: Option<&'a RawValue> = "item_id",
        /// An [`Item`], parsed only for Responses item events.
        item: Option<&'a RawValue> = "item",
        /// Responses: a string; Anthropic: an object.
        delta: Option<&'a RawValue> = "delta",
        arguments: Option<&'a RawValue> = "arguments",
        /// The whole free-form text of a custom tool call (`custom_tool_call_input.done`).
        input: Option<&'a RawValue> = "input",
        /// A [`ResponseObject`], parsed only for the final Responses events.
        response: Option<&'a RawValue> = "response",
        // Anthropic
        index: Option<i64> = "index" => position,
        /// A [`Block`], parsed only for `content_block_start`.
        content_block: Option<&'a RawValue> = "content_block",
        /// A [`Message`], parsed only for `message_start`.
        message: Option<&'a RawValue> = "message",
        // Gemini: each parsed only when a Gemini chunk comes.
        candidates: Option<&'a RawValue> = "candidates",
        usage_metadata: Option<&'a RawValue> = "usageMetadata",
        prompt_feedback: Option<&'a RawValue> = "promptFeedback",
    }
}

impl Envelope<'_> {
    /// Whether the data is a Chat Completions chunk: it has `choices`, or its `object` says so.
    fn is_chat_chunk(&self) -> bool {
        self.choices.is_some()
            || self
                .object
                .is_some_and(|o| o.get().starts_with("\"chat.completion"))
    }

    /// Whether the data has a field only a Gemini `GenerateContentResponse` chunk has.
    fn is_gemini_chunk(&self) -> bool {
        self.candidates.is_some() || self.usage_metadata.is_some() || self.prompt_feedback.is_some()
    }

    /// Whether [`Decoder::decode`] reads the data, under the event's `kind`, as a Gemini
    /// chunk: no other format's event comes first.
    fn reads_as_gemini(&self, kind: Option<&str>) -> bool {
        let other_kind = kind
            .is_some_and(|t| t.starts_with("response.") || is_anthropic_kind(t) || t == "error");
        let chat = self.is_chat_chunk() || (kind.is_none() && self.usage.is_some());
        self.is_gemini_chunk() && !other_kind && !chat
    }
}

wire_struct! {
    struct Choice<'a> {
        index: Option<i64> = "index" => lax_index,
        delta: Option<ChatDelta<'a>> = "delta",
        finish_reason: Option<&'a RawValue> = "finish_reason",
    }
}

wire_struct! {
    struct ChatDelta<'a> {
        content: Option<&'a RawValue> = "content",
        refusal: Option<&'a RawValue> = "refusal",
        /// A `null` entry is skipped, as `feed_chunk` skips it: it carries no call, and reading it
        /// as malformed lost the calls beside it.
        tool_calls: Option<Few<Option<ToolCallEntry<'a>>>> = "tool_calls",
        /// A [`Function`] of the legacy `functions` API: one call, no index.
        function_call: Option<&'a RawValue> = "function_call",
    }
}

wire_struct! {
    struct ToolCallEntry<'a> {
        /// Read with [`wire_index`]: a value that is not an integer is a missing index.
        index: Option<&'a RawValue> = "index",
        id: Option<&'a RawValue> = "id",
        kind: Option<&'a RawValue> = "type",
        function: Option<Function<'a>> = "function",
        /// A custom tool's call (`type: "custom"`): a [`Custom`], its name and a piece of its
        /// free-form input, streamed as `arguments` are. Parsed only for an entry without
        /// `function`, so a function call's entries cost no more to read.
        custom: Option<&'a RawValue> = "custom",
        ;
        ..
        /// The entry has members of other names (Gemini's `extra_content`, a server's own
        /// fields), which the SDK keeps and `feed_chunk` makes the call's metadata. Only noted
        /// here: [`EntryMembers`] reads them from the event again, so that the usual entry,
        /// which has none, costs no more to read.
        other
    }
}

wire_struct! {
    /// A Chat chunk read again for the text of its tool-call entries, when one has members
    /// [`ToolCallEntry`] does not read: its members are read as [`Envelope`], [`Choice`] and
    /// [`ChatDelta`] read them, so that the entries and their order are the same.
    struct ChunkEntries<'a> {
        choices: Option<Few<ChoiceEntries<'a>>> = "choices",
    }
}

wire_struct! {
    struct ChoiceEntries<'a> {
        delta: Option<DeltaEntries<'a>> = "delta",
    }
}

wire_struct! {
    struct DeltaEntries<'a> {
        tool_calls: Option<Few<Option<&'a RawValue>>> = "tool_calls",
    }
}

wire_struct! {
    struct Custom<'a> {
        name: Option<&'a RawValue> = "name",
        input: Option<&'a RawValue> = "input",
    }
}

wire_struct! {
    struct Function<'a> {
        name: Option<&'a RawValue> = "name",
        arguments: Option<&'a RawValue> = "arguments",
    }
}

wire_struct! {
    struct Item<'a> {
        kind: Option<Str<'a>> = "type" => opt_str,
        id: Option<Str<'a>> = "id" => opt_str,
        call_id: Option<Str<'a>> = "call_id" => opt_str,
        name: Option<Str<'a>> = "name" => opt_str,
        arguments: Option<&'a RawValue> = "arguments",
        /// A `custom_tool_call`'s free-form text.
        input: Option<&'a RawValue> = "input",
        /// The `namespace` tool the called tool is declared in (its `name` is the bare name).
        /// Raw: a value that is no string is no namespace, not a broken item.
        namespace: Option<&'a RawValue> = "namespace",
    }
}

wire_struct! {
    struct ResponseObject<'a> {
        incomplete_details: Option<IncompleteDetails<'a>> = "incomplete_details" => details,
        usage: Option<&'a RawValue> = "usage",
        error: Option<&'a RawValue> = "error",
        /// The response's items, read only when no item event announced a call.
        output: Option<Vec<&'a RawValue>> = "output" => parsed,
    }
}

wire_struct! {
    struct IncompleteDetails<'a> {
        reason: Option<Str<'a>> = "reason" => opt_str,
    }
}

wire_struct! {
    struct Block<'a> {
        /// Required: a block of no kind is unread, so that `input_json_delta` fragments after it
        /// are kept as those of a block whose start was lost (the call fails `missing_name`)
        /// rather than dropped unsaid as another kind of block's.
        kind: Str<'a> = "type" => required_kind,
        id: Option<Str<'a>> = "id" => opt_str,
        name: Option<Str<'a>> = "name" => opt_str,
        input: Option<&'a RawValue> = "input",
        text: Option<&'a RawValue> = "text",
        thinking: Option<&'a RawValue> = "thinking",
        signature: Option<&'a RawValue> = "signature",
        data: Option<&'a RawValue> = "data",
        /// A `tool_use` block's caller: the code that made the call, with programmatic tool
        /// calling.
        caller: Option<&'a RawValue> = "caller",
        /// A `tool_use` block's toolset (a tool of an MCP toolset).
        toolset_name: Option<&'a RawValue> = "toolset_name",
        /// A `text` block's citations so far.
        citations: Option<&'a RawValue> = "citations",
    }
}

wire_struct! {
    /// The members of an Anthropic `content_block_delta`'s `delta` that only rare deltas
    /// carry, read apart from [`AnthropicDelta`] so that the text and argument deltas do not
    /// pay for them.
    struct RareDelta<'a> {
        /// A `citations_delta`'s citation.
        citation: Option<&'a RawValue> = "citation",
        /// A `compaction_delta`'s summary.
        content: Option<&'a RawValue> = "content",
        /// A `compaction_delta`'s opaque metadata.
        encrypted_content: Option<&'a RawValue> = "encrypted_content",
    }
}

wire_struct! {
    struct Message<'a> {
        usage: Option<&'a RawValue> = "usage",
        /// A [`Container`], read only when set.
        container: Option<&'a RawValue> = "container",
    }
}

wire_struct! {
    /// Anthropic's code-execution container (`message_start`'s message, `message_delta`'s
    /// delta).
    struct Container<'a> {
        id: Option<Str<'a>> = "id" => opt_str,
    }
}

wire_struct! {
    /// Anthropic's `delta` object (`content_block_delta` and `message_delta`).
    struct AnthropicDelta<'a> {
        kind: Option<Str<'a>> = "type" => opt_str,
        partial_json: Option<&'a RawValue> = "partial_json",
        text: Option<&'a RawValue> = "text",
        thinking: Option<&'a RawValue> = "thinking",
        signature: Option<&'a RawValue> = "signature",
        stop_reason: Option<Str<'a>> = "stop_reason" => opt_str,
        /// `message_delta`: a [`Container`], read only when set.
        container: Option<&'a RawValue> = "container",
    }
}

// ---------------------------------------------------------------------------------------------
// Decoder state.

#[derive(Debug)]
struct BlockState {
    index: i64,
    tool: bool,
    /// A `text` block: `citations_delta`s are its own.
    text: bool,
    /// A non-empty `input_json_delta` arrived (Anthropic sends an empty one first).
    got_delta: bool,
    /// A delta held more than JSON whitespace: only then did the input start. A block cut by
    /// the output limit after whitespace alone has no input, as one with no delta.
    got_content: bool,
    /// The `input` of `content_block_start`, used only if no non-empty delta follows: `{}` then
    /// is the real input of a tool without parameters, as `feed_chunk` reads it too.
    input: Placeholder,
    /// A tool block's id, to know the block sent again after a reconnect.
    id: Option<Box<str>>,
    /// A `thinking` or `redacted_thinking` block's content so far.
    thought: Option<Box<Thought>>,
}

/// The `input` of a `tool_use` block's `content_block_start`, until the block stops.
#[derive(Debug)]
enum Placeholder {
    /// An input that says nothing (none, `""`, or not kept), or the `{}` of a tool without
    /// parameters (`object`): nothing to hold, as its text is known.
    Empty { object: bool },
    /// The value, as it will be fed: written by [`canonical`], as `feed_chunk` writes it.
    /// Set aside ([`Action::SetAside`]): the held bytes are what is counted, so escapes and
    /// whitespace as sent can neither hide bytes from the limit nor differ from `feed_chunk`,
    /// which sees only the decoded value.
    Value(Box<[u8]>),
    /// The arguments' JSON text sent as a string (a translator that copied a Chat `arguments`
    /// string), decoded; set aside as a value is.
    Text(Box<[u8]>),
}

impl Placeholder {
    const NONE: Self = Self::Empty { object: false };

    /// Whether the input says nothing that a tool without parameters would not.
    fn is_empty(&self) -> bool {
        matches!(self, Self::Empty { .. })
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Whether an event type is one of the Anthropic Messages stream's.
fn is_anthropic_kind(t: &str) -> bool {
    matches!(
        t,
        "message_start"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop"
            | "ping"
    )
}

/// Whether an event's data (trimmed) is OpenAI's end-of-stream marker: the `openai` SDK stops
/// at any data that starts with `[DONE]` (`[DONE]x` included), and so does `feed_sse`, or a
/// call sent after it would run from the raw path alone.
#[must_use]
pub fn is_done_marker(data: &[u8]) -> bool {
    data.starts_with(b"[DONE]")
}

/// A hash of a whole event's bytes, to tell an event sent again from another with its number.
/// Eight bytes a step: every Responses event is hashed, and `fnv`'s byte a step cost a quarter
/// of the raw path's time on a long call.
fn fingerprint(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    let word = |chunk: &[u8]| {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        u64::from_le_bytes(word)
    };
    let h = words
        .by_ref()
        .fold(bytes.len() as u64, |h, chunk| step(h, word(chunk)));
    step(h, word(words.remainder()))
}

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }
    h
}

/// Turns events into [`Action`]s, keeping the little per-format state the formats need.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Decoded argument or text fragment, reused for every event.
    scratch: Vec<u8>,
    /// High surrogates held at the end of a fragment, per wire index (quirk 41). A map: every
    /// fragment of a call looks its key up while any is held, and a stream may leave a half
    /// held under each of many indexes (up to `max_calls`, since each held fragment's key has
    /// a call; none once the response is refused), which a scan would cost on every fragment.
    held: HashMap<Option<i64>, Held>,
    /// Insertion order of `held`, so that halves still held at the end are written back in
    /// the order `feed_chunk` writes them back (a dict's).
    held_order: u64,
    /// The last [`Decoder::fragment`] wrote this many bytes of a held fragment at the start of
    /// `scratch` (see [`Action::Call`]).
    released: usize,
    held_text: Option<u16>,
    /// The open Anthropic blocks by index (a stream may open many and stop none: a lookup
    /// must not cost a scan of them).
    blocks: HashMap<i64, BlockState>,
    /// The highest Anthropic block index an event gave, for a block start without one.
    highest_block: Option<i64>,
    /// An Anthropic tool block that stopped with no input, whose end waits for the next event
    /// (see [`Decoder::anthropic`]).
    empty_block: Option<BlockState>,
    items: Items,
    /// A key above every `output_index` and key seen, for an item that must be keyed apart.
    next_key: i64,
    any_function_call: bool,
    refusal: bool,
    ignored_choices: u64,
    /// The Chat Completions choice assembled: the first one the stream shows, the lowest of a
    /// chunk's (0, or the index a translator numbered a single choice with, quirk 4).
    chat_choice: Option<i64>,
    /// Made on the first Gemini chunk: other formats never pay for it.
    gemini: Option<Box<gemini::GeminiState>>,
    /// Most bytes of `partialArgs` pieces merged in one stream (the assembler's
    /// `max_stream_bytes`; none until [`Decoder::set_keep_limit`]).
    keep_limit: Option<usize>,
    /// Report progress items of merged arguments ([`Decoder::set_track_progress`]).
    progress: bool,
    /// Bytes of arguments set aside (Anthropic block inputs, Responses `added` arguments) and of
    /// fragments held for a surrogate half, counted by the assembler while held (see
    /// [`Action::SetAside`], [`Action::HoldFragment`]).
    aside: usize,
    /// The response's first event (`message_start`, `response.created`) came.
    started: bool,
    /// The `id`s of the Responses `reasoning` and hosted items kept in this response, in the
    /// order kept, each with whether it still is (a reasoning item let go is not; see
    /// [`Decoder::keep_item`]).
    reasoning_ids: Vec<(Box<str>, bool)>,
    /// The last Responses `reasoning` item kept (with its `id`), while the item after it has
    /// not come (see [`Decoder::follow`]).
    awaiting: Option<Option<Box<str>>>,
    /// A Responses `reasoning` item came in its own `output_item.done`.
    reasoning_streamed: bool,
    /// Anthropic reasoning blocks kept in this response: a tool block is told how many came
    /// before it (metadata `reasoning_before`), so that the next turn keeps their places.
    thoughts_kept: usize,
    /// Responses hosted items kept in this response ([`thinking::is_hosted`]): a call is told
    /// how many came before it (metadata `hosted_before`), so that the next turn keeps their
    /// places.
    hosted_kept: usize,
    /// Hosted items of the finished response's `output` before the call read from it (see
    /// [`Decoder::summary_calls`]), kept after the calls: counted for the call as kept ones.
    hosted_ahead: usize,
    /// A Responses hosted item came in its own `output_item.done`.
    hosted_streamed: bool,
    /// The Responses `output_item.done` events read: when the finished response's `output`
    /// holds no more items, every one came in its own, and it is not read for hosted items.
    items_done: usize,
    /// How the Responses events of this response are numbered (see
    /// [`Decoder::is_repeated_event`]).
    sequence: Sequence,
}

/// The `sequence_number`s of a Responses stream read so far.
#[derive(Debug, Default)]
struct Sequence {
    /// The highest number since the last `response.created`.
    last: Option<u64>,
    /// A fingerprint of each of the latest events, with its number.
    recent: std::collections::VecDeque<(u64, u64)>,
    /// A number came again on another event: this stream's numbers say nothing.
    unreliable: bool,
}

/// How many of the latest events a repeat is looked for among.
const RECENT_EVENTS: usize = 16;

/// An argument fragment that ended in a high surrogate, waiting for the call's next fragment;
/// `before` is counted by the assembler while held ([`Action::HoldFragment`]).
#[derive(Debug)]
struct Held {
    /// When it was held, among the fragments held in this stream (see `Decoder::held_order`).
    order: u64,
    unit: u16,
    /// How the half is written if it stays unpaired: free-form text (a Chat custom tool's
    /// input) is not JSON, and gets U+FFFD.
    lone: Lone,
    /// The decoded fragment before the half, not yet handed on: a cumulative resend (quirk 19)
    /// starts with this text followed by the whole pair, and replaces it. Handed on alone, it
    /// was an exact repeat of the text so far to the assembler, which then appended the
    /// resend to it.
    before: Vec<u8>,
}

/// What to do with an unpaired surrogate escape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lone {
    /// Write it back as a `\uXXXX` escape (argument text is JSON; the scanner decides).
    Escape,
    /// Write U+FFFD (assistant text and a custom tool's free-form input are plain text).
    Replace,
}

impl Lone {
    /// The bytes an unpaired half is written as.
    const fn len(self) -> usize {
        match self {
            Self::Escape => 6,
            Self::Replace => char::REPLACEMENT_CHARACTER.len_utf8(),
        }
    }
}

fn is_blank_id(s: &str) -> bool {
    s.is_empty() || s == "null"
}

fn non_blank<'s>(s: Option<&'s Str<'_>>) -> Option<&'s str> {
    s.map(Str::as_str).filter(|s| !s.is_empty())
}

/// The value of a JSON string field: borrowed unless it holds escapes (then decoded once).
/// `None` for a missing, `null` or non-string value.
fn string(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let r = raw_str(raw)?;
    let inner = r.get(1..r.len() - 1)?;
    if memchr(b'\\', inner.as_bytes()).is_none() {
        return Some(Cow::Borrowed(inner));
    }
    Some(Cow::Owned(decode_owned(r)))
}

#[cold]
fn decode_owned(raw: &str) -> String {
    let mut out = Vec::new();
    let mut pending = None;
    unescape(raw, &mut out, &mut pending, Lone::Replace);
    if let Some(unit) = pending {
        push_lone(&mut out, unit, Lone::Replace);
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A tool call's wire index as the `openai` SDK reads it (pydantic's lax integer, which
/// `feed_chunk` mirrors): an integer that fits `i64`; a boolean as 0 or 1; a float with no
/// fraction; a string holding an integer (`" 2"`, `"+1"`, `"1_000"`, `"1.00"`). Anything else,
/// or out of range, is missing (quirk 1). Read as missing while the SDK routed by it, two
/// interleaved calls had their fragments mixed into one. Nothing here makes the whole event
/// malformed, which would drop every fragment in it. The raw value is valid JSON, so
/// `str::parse` (no `+` sign can occur) reads exactly the JSON integers that fit.
fn wire_index(raw: Option<&RawValue>) -> Option<i64> {
    let r = raw?.get();
    if let Ok(i) = r.parse() {
        return Some(i);
    }
    match r.as_bytes().first()? {
        b't' => Some(1),
        b'f' => Some(0),
        b'"' => lax_integer(&string(raw)?),
        // A JSON integer past 64 bits is an integer to the SDK too: out of range, not a float.
        _ if r.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) => integral_float(r.parse().ok()?),
        _ => None,
    }
}

/// A float with no fraction within `i64`, as an integer (pydantic refuses any other).
fn integral_float(f: f64) -> Option<i64> {
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) || f.fract() != 0.0
    {
        return None;
    }
    // 2^63 is exact in f64, so the range check is exact and the cast loses nothing.
    #[allow(clippy::cast_possible_truncation)]
    Some(f as i64)
}

/// The integer a string holds, read as pydantic reads one: ASCII whitespace around it, a
/// sign, digits with single underscores between them, and a fraction of zeros.
fn lax_integer(s: &str) -> Option<i64> {
    let s = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let s = match s.split_once('.') {
        Some((int, zeros)) if !zeros.is_empty() && zeros.bytes().all(|b| b == b'0') => int,
        Some(_) => return None,
        None => s,
    };
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    let well_formed = digits
        .split('_')
        .all(|run| !run.is_empty() && run.bytes().all(|b| b.is_ascii_digit()));
    if !well_formed {
        return None;
    }
    s.replace('_', "").parse().ok()
}

fn raw_str(raw: Option<&RawValue>) -> Option<&str> {
    raw.map(RawValue::get).filter(|s| s.starts_with('"'))
}

/// A Chat chunk's text, read again for the members of its tool-call entries that
/// [`ToolCallEntry`] does not read: once, when the first entry that has any needs them.
struct Reread<'t> {
    /// The text the chunk was read from.
    text: &'t str,
    /// The text as sent: `text`, unless names in it were made whole (`lone_keys`), at the same
    /// offsets.
    sent: &'t str,
    chunk: Option<Option<ChunkEntries<'t>>>,
}

impl<'t> Reread<'t> {
    fn new(text: &'t str, sent: &'t str) -> Self {
        Self {
            text,
            sent,
            chunk: None,
        }
    }

    /// The [`EntryMembers`] of entry `nth` of choice `at` (positions in the arrays as sent),
    /// their names as text.
    #[cold]
    fn members(&mut self, at: usize, nth: usize) -> Vec<(Cow<'t, str>, &'t RawValue)> {
        let text = self.text;
        // The event was read once already, with the same rules: it reads again. Read as bytes
        // (it is UTF-8 already), so that serde_json's reader code for it is its own, not more
        // uses of the `&str` reader's that change how the compiler inlines the hot path
        // (callgrind, a plain Chat stream: 0.3% more instructions through `&str`, none so).
        let chunk = self
            .chunk
            .get_or_insert_with(|| serde_json::from_slice(text.as_bytes()).ok());
        let entry = chunk
            .as_ref()
            .and_then(|c| c.choices.as_ref())
            .and_then(|choices| choices.as_slice().get(at))
            .and_then(|choice| choice.delta.as_ref())
            .and_then(|delta| delta.tool_calls.as_ref())
            .and_then(|entries| entries.as_slice().get(nth).copied().flatten());
        // Its names as sent: one made whole for the read above may be another member's name
        // as sent (`"k\ud800"`, `"k\ufffd"`), where the SDK keeps two.
        let sent = self.sent;
        entry
            .and_then(|raw| {
                let start = (raw.get().as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
                sent.get(start..start + raw.get().len())
            })
            .and_then(|raw| serde_json::from_slice::<EntryMembers<'t>>(raw.as_bytes()).ok())
            .map_or_else(Vec::new, |members| {
                let text_names = |(name, value)| (lone_keys::text_name(name), value);
                members.0.into_iter().map(text_names).collect()
            })
    }
}

/// The members of a Chat tool-call entry that are not its own (`index`, `id`, `type`,
/// `function`, `custom`: those [`ToolCallEntry`] reads), as `feed_chunk` keeps the SDK's
/// `model_extra`: in the order their names first come, each with its last value (`json.loads`
/// keeps a repeated name where it first came, with its last value), one whose last value is
/// `null` left out. Names are compared unescaped, as `json.loads` reads them: an unpaired
/// surrogate half is one of their code points.
#[derive(Debug)]
struct EntryMembers<'a>(Vec<(Cow<'a, [u8]>, &'a RawValue)>);

impl<'de> Deserialize<'de> for EntryMembers<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = EntryMembers<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool call entry")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut all = Vec::new();
                while let Some(MemberName(name)) = map.next_key()? {
                    let value: &'de RawValue = map.next_value()?;
                    if !matches!(&*name, b"index" | b"id" | b"type" | b"function" | b"custom") {
                        all.push((name, value));
                    }
                }
                Ok(EntryMembers(last_values(all)))
            }
        }
        d.deserialize_map(Members)
    }
}

/// `members` with one per name, where the name first came, with its last value; those whose
/// value is `null` left out (the SDK path drops a `None` extra).
fn last_values<'a>(
    members: Vec<(Cow<'a, [u8]>, &'a RawValue)>,
) -> Vec<(Cow<'a, [u8]>, &'a RawValue)> {
    // Where each name's last value is, in the order the names first come. A map, not a search
    // of what is kept: an entry may have many thousands of members.
    let order: Vec<usize> = {
        let mut last: HashMap<&[u8], usize> = HashMap::with_capacity(members.len());
        for (i, (name, _)) in members.iter().enumerate() {
            last.insert(name, i);
        }
        members
            .iter()
            .filter_map(|(name, _)| last.remove(&**name))
            .collect()
    };
    let mut members: Vec<_> = members.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|i| members.get_mut(i).and_then(Option::take))
        .filter(|(_, value)| value.get() != "null")
        .collect()
}

/// A member name, unescaped but unchecked (`lone_keys::text_name`), borrowed from the event
/// unless it holds escapes.
struct MemberName<'a>(Cow<'a, [u8]>);

impl<'de> Deserialize<'de> for MemberName<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl<'de> Visitor<'de> for Name {
            type Value = MemberName<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                Ok(MemberName(Cow::Borrowed(v)))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(MemberName(Cow::Owned(v.to_owned())))
            }
        }
        // Bytes: serde_json then reads the name without refusing an unpaired half.
        d.deserialize_bytes(Name)
    }
}

/// Whether a Chat delta carries what the assembled choice would keep: text, a refusal, a tool
/// call entry or a legacy function call (as `feed_chunk` decides it for a choice it skips).
#[cold]
fn carries_content(delta: &ChatDelta<'_>) -> bool {
    let text = |raw| raw_str(raw).is_some_and(|s| s.len() > 2);
    text(delta.content)
        || text(delta.refusal)
        || delta
            .tool_calls
            .as_ref()
            .is_some_and(|entries| entries.as_slice().iter().any(Option::is_some))
        || delta.function_call.is_some_and(|raw| raw.get() != "null")
}

impl Decoder {
    /// A decoder with no state.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Bounds what the decoder holds for calls still open (merged `partialArgs` pieces).
    pub fn set_keep_limit(&mut self, limit: usize) {
        self.keep_limit = Some(limit);
    }

    /// Reports progress items ([`Action::Progress`]) for arguments the decoder merges itself
    /// (Vertex AI `partialArgs`), for an assembler that tracks progress.
    pub fn set_track_progress(&mut self, on: bool) {
        self.progress = on;
    }

    /// Bytes of arguments held for calls still open (set aside, or a fragment held for its
    /// surrogate half), each counted by the assembler toward `max_stream_bytes` while held (see
    /// [`Action::SetAside`], [`Action::HoldFragment`]).
    #[must_use]
    pub fn set_aside_bytes(&self) -> usize {
        self.aside
    }

    /// The provider gave up on the response (an error event; the SDKs raise it): `json` says
    /// why.
    fn provider_error<F: FnMut(Action<'_>) -> bool>(&mut self, json: &str, emit: &mut F) {
        // A tool block that stopped with no input is a call without parameters only if the
        // message goes on; an error says it did not, so the block is left open for the error
        // to stop, as `feed_chunk` and the SDKs (which raise the event) read it. Its input says
        // nothing: nothing is set aside to let go.
        self.empty_block = None;
        self.gemini_gave_up(emit);
        emit(Action::ProviderError(json));
        provider_gave_up(emit);
    }

    /// Chat Completions choices other than the one assembled that were skipped.
    #[must_use]
    pub fn ignored_choices(&self) -> u64 {
        self.ignored_choices
    }

    /// Whether [`Decoder::decode`] reads an event as a Gemini chunk (bytes that are no UTF-8
    /// read as U+FFFD, as google-genai reads them).
    #[must_use]
    pub fn reads_as_gemini(event: &[u8], data: &[u8]) -> bool {
        let text = String::from_utf8_lossy(data);
        let whole: String;
        let env = match serde_json::from_str::<Envelope<'_>>(&text) {
            Ok(env) => env,
            Err(e) => {
                // A name with an unpaired surrogate escape, as `decode` reads it (`lone_keys`).
                let parses =
                    |t: &str| serde_json::from_slice::<Envelope<'_>>(t.as_bytes()).map(drop);
                let Ok(made) = lone_keys::whole_names(&text, e, parses) else {
                    return false;
                };
                whole = made;
                let Ok(env) = serde_json::from_slice(whole.as_bytes()) else {
                    return false;
                };
                env
            }
        };
        let from_event = std::str::from_utf8(event)
            .ok()
            .filter(|e| !e.is_empty() && *e != "message");
        env.reads_as_gemini(string(env.kind).as_deref().or(from_event))
    }

    /// Decode one event (`event` is its SSE `event:` field, possibly empty) and emit its
    /// actions in order. Returns the event's format, or `None` for an event that belongs to no
    /// particular format (`[DONE]`, a keep-alive with empty data, an error event).
    ///
    /// `emit` answers each action with whether the response is still kept: false once it was
    /// refused whole (past a per-stream limit), when the decoder makes no more state for new
    /// items; for [`Action::Held`], [`Action::SetAside`] and [`Action::HoldFragment`], whether
    /// those bytes may be kept.
    ///
    /// # Errors
    /// [`EventError`] when the event is skipped; nothing was emitted for it then.
    pub fn decode<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        event: &[u8],
        data: &[u8],
        emit: &mut F,
    ) -> Result<Option<Format>, EventError> {
        let trimmed = data.trim_ascii();
        if trimmed.is_empty() {
            if event == b"error" {
                // The `anthropic` SDK raises an `error` event before it looks at the data (and
                // the `openai` SDK cannot decode empty data): the provider gave up either way.
                self.provider_error("{}", emit);
            }
            return Ok(None);
        }
        if is_done_marker(trimmed) {
            emit(Action::Done);
            return Ok(None);
        }
        // One UTF-8 check of the whole event lets serde_json skip its per-string checks.
        let replaced: String;
        let (mut text, invalid) = match std::str::from_utf8(data) {
            Ok(text) => (text, None),
            Err(e) => {
                replaced = String::from_utf8_lossy(data).into_owned();
                (replaced.as_str(), Some(e.valid_up_to()))
            }
        };
        // The event as sent, before any name is made whole: a Chat entry's metadata keys are
        // read from it (`Reread`).
        let sent = text;
        let whole: String;
        let env: Envelope<'_> = match serde_json::from_str(text) {
            Ok(env) => env,
            Err(e) => {
                // `json.loads` takes a name with an unpaired surrogate escape; read so, the
                // event is not lost (`lone_keys`). Read as bytes, as `Reread` reads: more uses
                // of the `&str` reader's code for `Envelope` change how the compiler inlines
                // it on the hot path (callgrind, a plain Chat stream: +0.6%, none so).
                let parses =
                    |t: &str| serde_json::from_slice::<Envelope<'_>>(t.as_bytes()).map(drop);
                whole = lone_keys::whole_names(text, e, parses).map_err(|e| {
                    invalid.map_or(EventError::Malformed(e), EventError::InvalidUtf8)
                })?;
                text = &whole;
                serde_json::from_slice(text.as_bytes()).map_err(EventError::Malformed)?
            }
        };
        let from_event = std::str::from_utf8(event)
            .ok()
            .filter(|e| !e.is_empty() && *e != "message");
        let kind_text = string(env.kind);
        // A Chat chunk under an event name (`ping`, another format's, or `error` without an
        // `error` member): the `openai` SDK reads the data alone, and so the chunk is read.
        // Taken as the event's kind, the name made it another format's event, dropped.
        let chat_named = kind_text.is_none()
            && env.is_chat_chunk()
            && !(from_event == Some("error") && env.error.is_some());
        let kind = kind_text.as_deref().or(from_event.filter(|_| !chat_named));
        if let Some(at) = invalid.filter(|_| !env.reads_as_gemini(kind)) {
            // google-genai decodes the body's lines with `errors="replace"` and reads a chunk
            // with bytes that are no UTF-8, U+FFFD in their place; the other SDKs raise on
            // them, and their events stay unread.
            return Err(EventError::InvalidUtf8(at));
        }
        if let (Some(name @ ("error" | "ping")), Some(t)) = (from_event, kind_text.as_deref()) {
            // Anthropic data under the event name the `anthropic` SDK decides by: it raises
            // every `error` event and skips every `ping`, whatever the data says.
            if is_anthropic_kind(t) {
                if name == "error" {
                    self.provider_error(env.error.map_or_else(|| lossy(data), RawValue::get), emit);
                } else {
                    return Ok(Some(Format::Anthropic));
                }
                return Ok(None);
            }
        }
        match kind {
            Some(t) if t.starts_with("response.") => {
                if let Some(error) = env.error.filter(|e| truthy(e.get())) {
                    // The openai SDK raises any event whose data has an `error` member that
                    // Python reads as true, whatever its type says, and reads no further.
                    emit(Action::ProviderError(error.get()));
                    provider_gave_up(emit);
                    return Ok(Some(Format::OpenAiResponses));
                }
                if !self.is_repeated_event(t, &env, text) {
                    self.responses(t, &env, emit)?;
                }
                Ok(Some(Format::OpenAiResponses))
            }
            Some(t) if is_anthropic_kind(t) => {
                self.anthropic(t, &env, emit)?;
                Ok(Some(Format::Anthropic))
            }
            Some("error") => {
                self.provider_error(env.error.map_or_else(|| lossy(data), RawValue::get), emit);
                Ok(None)
            }
            _ if env.is_chat_chunk() || (kind.is_none() && env.usage.is_some()) => {
                if let Some(error) = env.error.filter(|e| truthy(e.get())) {
                    // An error next to `choices` (OpenRouter's mid-stream error chunk): the
                    // openai SDK raises it as it does a bare `{"error": ...}` line, before the
                    // chunk's deltas are read, and reads no further.
                    emit(Action::ProviderError(error.get()));
                    provider_gave_up(emit);
                    return Ok(Some(Format::OpenAiChat));
                }
                self.chat(&env, text, sent, emit)?;
                Ok(Some(Format::OpenAiChat))
            }
            // A Gemini `GenerateContentResponse` chunk (no `choices`, checked above).
            _ if env.is_gemini_chunk() => {
                self.gemini(&env, text, emit)?;
                Ok(Some(Format::Gemini))
            }
            None if env.error.is_some() => {
                // A Chat stream's `{"error": ...}` line: the same end as an `error` event (the
                // openai SDK raises it and reads no further). Gemini's (google-genai raises
                // it) also ends a call waiting for its second part.
                self.gemini_gave_up(emit);
                emit(Action::ProviderError(env.error.map_or("", RawValue::get)));
                provider_gave_up(emit);
                Ok(None)
            }
            _ => Err(unknown(kind)),
        }
    }

    /// End of stream: write back surrogates still held (unpaired) to their calls; a Gemini
    /// call still waiting for its arguments was cut off.
    pub fn finish<F: FnMut(Action<'_>) -> bool>(&mut self, emit: &mut F) {
        self.gemini_finish_stream(emit);
        let mut held: Vec<_> = std::mem::take(&mut self.held).into_iter().collect();
        held.sort_unstable_by_key(|(_, h)| h.order);
        for (index, h) in held {
            self.write_back(index, h, emit);
        }
        if let Some(unit) = self.held_text.take() {
            self.scratch.clear();
            push_lone(&mut self.scratch, unit, Lone::Replace);
            emit(Action::Text(&self.scratch));
        }
        self.blocks.clear();
        self.items.clear();
        // What was set aside is let go with them; the assembler counts nothing after finish.
        self.aside = 0;
    }

    /// Decode an argument fragment for the call at `index` into `scratch`, joining surrogates.
    ///
    /// A fragment that repeats the held one, now with the pair whole (or again ending in the
    /// half), is a cumulative resend (quirk 19 with 41): it replaces the held fragment, which
    /// is dropped. Any other fragment follows the held one, whose half it may pair.
    ///
    /// Held, the fragment's bytes are counted toward `max_stream_bytes` ([`Action::HoldFragment`])
    /// until given back just before they are fed or dropped; one the assembler will not let be
    /// held is written into `scratch` with its half escaped, as it would be at the end.
    fn fragment<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: Option<i64>,
        raw: &str,
        lone: Lone,
        emit: &mut F,
    ) {
        self.scratch.clear();
        self.released = 0;
        // Nothing held (the usual stream): no lookup.
        let held = if self.held.is_empty() {
            None
        } else {
            self.take_held(index, emit)
        };
        let mut pending = None;
        if let Some(h) = held {
            unescape(raw, &mut self.scratch, &mut pending, lone);
            // A fragment that starts with a low half goes on from the held high one. Decoded
            // alone, that half reads as its escape, the same bytes as the text `\udXXX` the
            // held fragment may start with, and the fragment passed for a resend of it: the
            // held text was dropped.
            if starts_with_low_half(raw) || !resends(&h, &self.scratch, pending) {
                self.scratch.clone_from(&h.before);
                let start = self.scratch.len();
                pending = Some(h.unit);
                unescape(raw, &mut self.scratch, &mut pending, lone);
                // Joined with its partner, the half starts a 4-byte character; unpaired, it
                // was written back as its escape or U+FFFD.
                let unpaired = !matches!(self.scratch.get(start), Some(0xF0..) | None);
                self.released = start + if unpaired { lone.len() } else { 0 };
            }
        } else {
            unescape(raw, &mut self.scratch, &mut pending, lone);
        }
        if let Some(unit) = pending {
            let bytes = self.scratch.len();
            if emit(Action::HoldFragment(bytes)) {
                self.aside += bytes;
                self.released = 0;
                self.held_order += 1;
                let held = Held {
                    order: self.held_order,
                    unit,
                    lone,
                    before: std::mem::take(&mut self.scratch),
                };
                self.held.insert(index, held);
            } else {
                // Not kept (the response is over its limit, or the text alone passes
                // `max_bytes`): handed on now, the half unpaired. Whatever the next fragment
                // brings, the call is `too_large` then, as on `feed_chunk`.
                push_lone(&mut self.scratch, unit, lone);
            }
        }
    }

    /// Takes the fragment held for the call at `index`, given back to the assembler's count:
    /// it is about to be fed, or dropped.
    fn take_held<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: Option<i64>,
        emit: &mut F,
    ) -> Option<Held> {
        let held = self.held.remove(&index)?;
        self.let_go(&held.before, emit);
        Some(held)
    }

    /// Feeds a held fragment to its call with its half written back unpaired.
    fn write_back<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: Option<i64>,
        held: Held,
        emit: &mut F,
    ) {
        self.let_go(&held.before, emit);
        self.scratch = held.before;
        push_lone(&mut self.scratch, held.unit, held.lone);
        emit(args(index, Arguments::Text(&self.scratch)));
    }

    /// Sets aside the arguments decoded into `scratch` for the call at `index`, if the
    /// assembler lets them be kept; returns the bytes held.
    fn set_aside<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: i64,
        emit: &mut F,
    ) -> Option<Box<[u8]>> {
        let bytes = self.scratch.len();
        if !emit(Action::SetAside { index, bytes }) {
            return None;
        }
        self.aside += bytes;
        Some(self.scratch.as_slice().into())
    }

    /// Lets go of set-aside bytes (used or replaced): the assembler no longer counts them.
    fn let_go<F: FnMut(Action<'_>) -> bool>(&mut self, held: &[u8], emit: &mut F) {
        self.aside = self.aside.saturating_sub(held.len());
        emit(Action::Release(held.len()));
    }

    fn text<F: FnMut(Action<'_>) -> bool>(&mut self, raw: &str, emit: &mut F) {
        self.scratch.clear();
        unescape(raw, &mut self.scratch, &mut self.held_text, Lone::Replace);
        if !self.scratch.is_empty() {
            emit(Action::Text(&self.scratch));
        }
    }

    /// The call at `index` starts again (a replayed stream) and sends its text again: a
    /// surrogate half held from its first rendition is not waiting for more.
    fn forget_held<F: FnMut(Action<'_>) -> bool>(&mut self, index: i64, emit: &mut F) {
        self.take_held(Some(index), emit);
    }

    /// Write back a held surrogate of the call at `index` before that call ends.
    fn release<F: FnMut(Action<'_>) -> bool>(&mut self, index: Option<i64>, emit: &mut F) {
        if let Some(held) = self.held.remove(&index) {
            self.write_back(index, held, emit);
        }
    }

    /// A Chat chunk, read from `text` (`sent` with its refused names made whole, or `sent`).
    fn chat<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        env: &Envelope<'_>,
        text: &str,
        sent: &str,
        emit: &mut F,
    ) -> Result<(), EventError> {
        let choices = env.choices.as_ref().map_or(&[][..], Few::as_slice);
        if self.chat_choice.is_none() {
            // Of several in the stream's first choice-bearing chunk, the lowest.
            self.chat_choice = choices.iter().map(|c| c.index.unwrap_or(0)).min();
        }
        let mut reread = Reread::new(text, sent);
        for (at, choice) in choices.iter().enumerate() {
            let index = choice.index.unwrap_or(0);
            if self.chat_choice != Some(index) {
                self.ignored_choices += 1;
                if let (Some(chosen), Some(delta)) = (self.chat_choice, &choice.delta) {
                    if carries_content(delta) {
                        emit(Action::OtherChoice { chosen, index });
                    }
                }
                continue;
            }
            // Azure content-filter annotations come as choices without `delta` (quirk 30).
            if let Some(delta) = &choice.delta {
                // Parsed first: a malformed event must emit nothing.
                let store: String;
                let legacy = nested!(Function, delta.function_call, store)?;
                if let Some(raw) = raw_str(delta.content) {
                    self.text(raw, emit);
                }
                if raw_str(delta.refusal).is_some_and(|r| r.len() > 2) {
                    self.refusal = true;
                }
                let entries = delta.tool_calls.as_ref().map_or(&[][..], Few::as_slice);
                for (nth, entry) in entries.iter().enumerate() {
                    match entry {
                        Some(entry) if entry.other => {
                            let members = reread.members(at, nth);
                            self.entry_with_members(entry, &members, emit);
                        }
                        Some(entry) => self.entry(entry, emit),
                        None => {}
                    }
                }
                if let Some(f) = legacy {
                    let name = string(f.name);
                    let name = name.as_deref().filter(|s| !s.is_empty());
                    self.emit_call(None, None, name, None, f.arguments, Lone::Escape, emit);
                }
            }
            // A blank reason (`""`, sent by some compatible servers instead of `null`) is none,
            // as the chunk path reads it: the stream has not said it ended.
            if let Some(reason) = string(choice.finish_reason).filter(|r| !r.is_empty()) {
                let raw = &*reason;
                let mut normalized = FinishReason::from_raw(raw);
                if normalized == FinishReason::Stop && self.refusal {
                    normalized = FinishReason::Refusal;
                }
                emit(Action::Finish {
                    raw,
                    reason: normalized,
                });
            }
        }
        if let Some(usage) = env.usage {
            emit(Action::Usage(usage.get()));
        }
        Ok(())
    }

    /// One Chat tool-call entry's delta.
    #[inline(always)]
    fn entry<F: FnMut(Action<'_>) -> bool>(&mut self, entry: &ToolCallEntry<'_>, emit: &mut F) {
        let function = entry.function.as_ref();
        // A custom tool's call names itself and streams its input in `custom`; one that cannot
        // be read is a custom call without them, as `feed_chunk` reads it.
        let custom = match entry.custom {
            Some(raw) if function.is_none() && raw.get() != "null" => {
                match serde_json::from_str::<Custom<'_>>(raw.get()) {
                    Ok(custom) => Some(Some(custom)),
                    Err(e) => return self.entry_with_custom_made_whole(entry, raw, e, emit),
                }
            }
            _ => None,
        };
        self.entry_with(entry, custom.as_ref(), emit);
    }

    /// [`Decoder::entry`] of a `custom` object serde_json refused: read again with its names
    /// made whole (`lone_keys`). Apart, so that the usual entry holds no `String` for it.
    #[cold]
    #[inline(never)]
    fn entry_with_custom_made_whole<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        entry: &ToolCallEntry<'_>,
        raw: &RawValue,
        first: serde_json::Error,
        emit: &mut F,
    ) {
        let store: String;
        let custom = reread_nested!(Custom, raw.get(), first, store).ok();
        self.entry_with(entry, Some(&custom), emit);
    }

    /// One Chat tool-call entry's delta, its `custom` object read (`Some` for a custom call,
    /// holding `None` when it cannot be read).
    #[inline(always)]
    fn entry_with<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        entry: &ToolCallEntry<'_>,
        custom: Option<&Option<Custom<'_>>>,
        emit: &mut F,
    ) {
        let function = entry.function.as_ref();
        let (name, args) = match custom {
            None => (
                function.and_then(|f| f.name),
                function.and_then(|f| f.arguments),
            ),
            Some(c) => (
                c.as_ref().and_then(|c| c.name),
                c.as_ref().and_then(|c| c.input),
            ),
        };
        let id = string(entry.id);
        let id = id.as_deref().filter(|s| !is_blank_id(s));
        let name = string(name);
        let name = name.as_deref().filter(|s| !s.is_empty());
        let kind = string(entry.kind);
        let kind = kind
            .as_deref()
            .filter(|s| !s.is_empty())
            .or_else(|| custom.as_ref().map(|_| FREE_FORM_KIND));
        // A custom tool's input is plain text: an unpaired surrogate half is U+FFFD (warning
        // `replacement_character`), as in a Responses custom call's, not a JSON escape.
        let lone = if custom.is_some() {
            Lone::Replace
        } else {
            Lone::Escape
        };
        self.emit_call(wire_index(entry.index), id, name, kind, args, lone, emit);
    }

    /// A Chat tool-call entry with members of other names, `members` those kept: after its
    /// delta, they are metadata of the call it went to, as `feed_chunk` sets them. Apart from
    /// [`Decoder::entry`], so that the usual entry's path stays as short as it was.
    #[cold]
    #[inline(never)]
    fn entry_with_members<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        entry: &ToolCallEntry<'_>,
        members: &[(Cow<'_, str>, &RawValue)],
        emit: &mut F,
    ) {
        let index = wire_index(entry.index);
        let alone = entry.function.is_none()
            && entry.custom.map_or(true, |raw| raw.get() == "null")
            && string(entry.id).is_none()
            && string(entry.kind).is_none();
        // Only provider fields (Gemini's thought signature): they go to the call under this
        // index, now or once it opens; they never open a call (quirk 31), as in `feed_chunk`.
        if members.is_empty() || !alone {
            self.entry(entry, emit);
        }
        for (key, json) in members {
            emit(Action::Metadata {
                index,
                key,
                json: json.get(),
            });
        }
    }

    /// One tool-call delta whose `arguments` may be a string fragment, an object (a complete
    /// value, quirk 23) or absent/null.
    #[allow(clippy::too_many_arguments)]
    fn emit_call<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: Option<i64>,
        id: Option<&str>,
        name: Option<&str>,
        kind: Option<&str>,
        args: Option<&RawValue>,
        lone: Lone,
        emit: &mut F,
    ) {
        let raw = args.map(RawValue::get).filter(|r| *r != "null");
        let mut released = 0;
        let arguments = match raw {
            Some(r) if r.starts_with('"') => {
                self.fragment(index, r, lone, emit);
                released = self.released;
                // An empty fragment is a no-op (quirk 26); do not let it count as arguments.
                (!self.scratch.is_empty()).then_some(Arguments::Text(&self.scratch))
            }
            Some(r) => {
                canonical(r, &mut self.scratch);
                Some(Arguments::Value(&self.scratch))
            }
            None => None,
        };
        let mut action = call(index, id, name, kind, arguments, None);
        if let Action::Call { released: r, .. } = &mut action {
            *r = released;
        }
        emit(action);
    }

    /// Whether a Responses event is one read already, sent again (fault 5: a proxy repeats a
    /// delta after a reconnect), which taken twice would double its text: its
    /// `sequence_number` is not above the last one's, and an event among the latest had that
    /// number and these very bytes. A response sent again from its start begins with
    /// `response.created`, and its events go to the replay rules. A number that comes again on
    /// other bytes means the producer does not number events in order (a bridge that sends a
    /// constant): numbers are then not read for the rest of the stream.
    fn is_repeated_event(&mut self, t: &str, env: &Envelope<'_>, data: &str) -> bool {
        let seq = &mut self.sequence;
        let number = env
            .sequence_number
            .and_then(|n| n.get().parse::<u64>().ok());
        let Some(number) = number.filter(|_| !seq.unreliable) else {
            return false;
        };
        let fingerprint = fingerprint(data.as_bytes());
        if seq.last.is_some_and(|last| number <= last) && t != "response.created" {
            if seq.recent.contains(&(number, fingerprint)) {
                return true;
            }
            seq.unreliable = true;
            return false;
        }
        seq.last = Some(number);
        if seq.recent.len() == RECENT_EVENTS {
            seq.recent.pop_front();
        }
        seq.recent.push_back((number, fingerprint));
        false
    }

    /// The response's first event; a second one starts a replay of the response.
    fn start<F: FnMut(Action<'_>) -> bool>(&mut self, emit: &mut F) {
        if std::mem::replace(&mut self.started, true) {
            // Its reasoning items come again, and are let go with the blocks kept.
            self.reasoning_ids.clear();
            self.awaiting = None;
            self.thoughts_kept = 0;
            self.hosted_kept = 0;
            emit(Action::Restart);
        }
    }

    fn responses<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        t: &str,
        env: &Envelope<'_>,
        emit: &mut F,
    ) -> Result<(), EventError> {
        match t {
            "response.output_item.added" => {
                let store: String;
                let item: Option<Item<'_>> = nested!(Item, env.item, store)?;
                let item = match item {
                    Some(item) if is_call_item(&item) => item,
                    other => {
                        self.follow_item(other.as_ref(), emit);
                        if other.is_some_and(|item| is_kind(item.kind.as_ref(), "message")) {
                            // After the reasoning item before it is kept: its place counts it.
                            emit(Action::TextBlock);
                        }
                        return Ok(());
                    }
                };
                let index = env
                    .output_index
                    .unwrap_or_else(|| i64::try_from(self.items.len()).unwrap_or(i64::MAX));
                let item_id = item.id.as_ref().map_or("", Str::as_str);
                // A repeated `added` of one item (a replay after a reconnect) keeps its key.
                let known = self.items.with_id(item_id).and_then(|p| self.items.get(p));
                let key = match known.map(|item| item.key) {
                    Some(key) => {
                        self.forget_held(key, emit);
                        key
                    }
                    None => self.new_key(index, item_id),
                };
                self.open_item(index, key, &item, true, emit);
            }
            "response.function_call_arguments.delta" => {
                let key = self.item_key(env, None, Some(&mut *emit));
                if let Some(raw) = raw_str(env.delta) {
                    self.responses_fragment(key, raw, emit);
                } else if let Some(value) = env.delta.map(RawValue::get).filter(|r| *r != "null") {
                    // A delta that is no string (a broken bridge's number): a value, as in a
                    // Chat delta (quirk 23), which the core never splices into the text.
                    canonical(value, &mut self.scratch);
                    let latest = self.items.latest_under(key);
                    if let Some(state) = latest.and_then(|p| self.items.get_mut(p)) {
                        state.has_text = true;
                    }
                    emit(args(Some(key), Arguments::Value(&self.scratch)));
                }
            }
            "response.function_call_arguments.done" => {
                // An item never announced (its `added` and deltas lost) is opened here, as for
                // a delta: the summary is all of it that came, and it was dropped unsaid.
                let key = self.item_key(env, None, Some(&mut *emit));
                if let Some(raw) = raw_str(env.arguments) {
                    self.verify(key, raw, emit);
                } else {
                    self.summary_value(key, env.arguments, emit);
                }
            }
            "response.output_item.done" => {
                let store: String;
                let item: Option<Item<'_>> = nested!(Item, env.item, store)?;
                self.items_done += 1;
                if let (Some(found), Some(raw)) = (&item, env.item) {
                    if is_kind(found.kind.as_ref(), "reasoning") {
                        let id = non_blank(found.id.as_ref());
                        self.keep_item(raw, id, false, false, 0, emit);
                        return Ok(());
                    }
                    if let Some(id) = hosted_id(found) {
                        self.keep_item(raw, Some(id), false, true, 0, emit);
                        return Ok(());
                    }
                }
                let item = match item {
                    Some(item) if is_call_item(&item) => item,
                    other => {
                        // An item whose `added` was lost still follows the reasoning before it.
                        self.follow_item(other.as_ref(), emit);
                        return Ok(());
                    }
                };
                let key = self.item_key(env, item.id.as_ref().map(Str::as_str), None::<&mut F>);
                let latest = self.items.latest_under(key);
                let state = latest.and_then(|p| self.items.get(p));
                if !state.is_some_and(|state| state.announced) {
                    // A bridge that sends the finished item alone (no `output_item.added`):
                    // the call is opened from it, as `feed_chunk` does, never dropped.
                    let index = state.map_or(env.output_index.unwrap_or(key), |state| state.index);
                    // Its arguments are the summary read next, fed as `feed_chunk` feeds them:
                    // not set aside first, which failed the call (or refused the response)
                    // for them where feeding them does not.
                    self.open_item(index, key, &item, false, emit);
                } else {
                    // The finished item may name the `namespace` its `added` left out.
                    tell_namespace(key, &item, emit);
                    if let Some(name) = non_blank(item.name.as_ref()) {
                        // Announced without a name (blank or missing), the item is named by
                        // its finished form, as when its `added` was lost (quirks 10, 11): the
                        // text that came between is buffered under the key, not dropped. A
                        // call with a name keeps it.
                        let named = latest.and_then(|p| self.items.get_mut(p)).map(|state| {
                            let named = state.named;
                            state.named = true;
                            named
                        });
                        if named == Some(false) {
                            emit(call(Some(key), None, Some(name), None, None, None));
                        }
                    }
                }
                if is_free_form(&item) {
                    self.free_form_input(key, item.input, true, emit);
                } else if let Some(raw) = raw_str(item.arguments) {
                    self.verify(key, raw, emit);
                } else {
                    self.summary_value(key, item.arguments, emit);
                }
                self.feed_provisional(key, emit);
                self.release(Some(key), emit);
                emit(Action::EndCall(key));
                let latest = self.items.latest_under(key);
                if let Some(state) = latest.and_then(|p| self.items.get_mut(p)) {
                    state.ended = true;
                }
            }
            "response.custom_tool_call_input.delta" => {
                // Its text is taken whole from the `.done` event or the finished item: the
                // deltas only open the call when its `added` was lost, so it is not dropped.
                self.free_form_key(env, emit);
            }
            "response.custom_tool_call_input.done" => {
                let key = self.free_form_key(env, emit);
                self.free_form_input(key, env.input, false, emit);
            }
            "response.created" => self.start(emit),
            "response.output_text.delta" => {
                if let Some(raw) = raw_str(env.delta) {
                    self.text(raw, emit);
                }
            }
            "response.refusal.delta" => self.refusal = true,
            "response.completed"
            | "response.incomplete"
            | "response.failed"
            | "response.cancelled" => self.responses_end(t, env, emit)?,
            _ => {}
        }
        Ok(())
    }

    /// The function calls of a response that no item event announced (a bridge that sends
    /// them only in the finished response's `output`): each is read as its
    /// `output_item.done` would have been, at its position in `output`. Read only when the
    /// stream announced no call at all, so that a summary never doubles a streamed call.
    ///
    /// An item that does not read (no object, a `type`, `id`, `call_id` or `name` that is no
    /// string) is skipped and told once per event ([`Action::UnreadItem`]): refusing the whole
    /// event for it lost the finish reason and every item after it, though the item holds no
    /// part of another one.
    fn summary_calls<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        response: Option<&ResponseObject<'_>>,
        emit: &mut F,
    ) {
        let Some(output) = response.and_then(|r| r.output.as_ref()) else {
            return;
        };
        let mut told = false;
        for (position, raw) in output.iter().enumerate() {
            let store: String;
            let read = match read_nested!(Item, raw.get(), store) {
                Ok(item) if !is_call_item(&item) => {
                    // Kept after the calls (`summary_reasoning`), it still came before them.
                    if hosted_id(&item).is_some_and(|id| !self.was_kept(id)) {
                        self.hosted_ahead += 1;
                    }
                    continue;
                }
                Ok(_) => {
                    let event = format!(
                        r#"{{"type":"response.output_item.done","output_index":{position},"item":{}}}"#,
                        raw.get()
                    );
                    serde_json::from_str::<Envelope<'_>>(&event)
                        .map_err(EventError::Malformed)
                        .and_then(|env| self.responses("response.output_item.done", &env, emit))
                }
                Err(e) => Err(EventError::Malformed(e)),
            };
            if read.is_err() && !told {
                told = true;
                emit(Action::UnreadItem(position));
            }
        }
        self.hosted_ahead = 0;
    }

    /// Each call the stream brought is told the `namespace` its item in the finished
    /// response's `output` names, which no item event may have said. Only an item whose text
    /// holds the word is read again: the finished response repeats every call's arguments.
    fn summary_namespaces<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        response: Option<&ResponseObject<'_>>,
        emit: &mut F,
    ) {
        let output = response.and_then(|r| r.output.as_deref());
        for raw in output.unwrap_or_default() {
            if !raw.get().contains("namespace") {
                continue;
            }
            let store: String;
            let Ok(item) = read_nested!(Item, raw.get(), store) else {
                continue;
            };
            let known = non_blank(item.id.as_ref()).and_then(|id| self.items.with_id(id));
            let key = known.and_then(|p| self.items.get(p)).map(|state| state.key);
            if let Some(key) = key.filter(|_| is_call_item(&item)) {
                tell_namespace(key, &item, emit);
            }
        }
    }

    /// The `reasoning` and hosted items of the finished response's `output` that no
    /// `output_item.done` brought (a stream joined part way, a bridge that sends only the
    /// finished response), kept as theirs would have been. The item after each reasoning item
    /// in `output` is its follower, and so it is for an item the stream brought that still
    /// waits; the response ends here, so one not found there has none. Hosted items are looked
    /// for only when `output` holds more items than `output_item.done` events came: the
    /// finished response repeats every call's arguments, which are not read again for
    /// nothing. As `feed_chunk` reads them.
    fn summary_reasoning<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        response: Option<&ResponseObject<'_>>,
        emit: &mut F,
    ) {
        let output = response
            .and_then(|r| r.output.as_deref())
            .unwrap_or_default();
        if let Some(waiting) = self.awaiting.clone() {
            let at = waiting.as_deref().and_then(|id| {
                output.iter().position(|raw| {
                    let mut store = String::new();
                    reasoning_item(raw, &mut store)
                        .is_some_and(|item| non_blank(item.id.as_ref()) == Some(id))
                })
            });
            self.follow_output(output, at, 0, emit);
        }
        let hosted = output.len() > self.items_done;
        let kept = self.hosted_kept;
        // The items the stream brought, kept so far: in a stream joined part way, an item only
        // `output` has goes before those that came after it there.
        let streamed = self.reasoning_ids.len();
        let mut places = None;
        for (at, raw) in output.iter().enumerate() {
            let mut store = String::new();
            let Some((item, is_hosted)) = output_item(raw, hosted, &mut store) else {
                continue;
            };
            let id = non_blank(item.id.as_ref());
            let before = if id.is_some_and(|id| self.was_kept(id)) {
                0
            } else {
                self.kept_after(output, at, streamed, &mut places)
            };
            self.keep_item(raw, id, true, is_hosted, before, emit);
            if !is_hosted && self.awaiting.is_some() {
                self.follow_output(output, Some(at), before, emit);
            }
        }
        if self.hosted_kept > kept {
            self.tell_hosted_before(output, emit);
        }
    }

    /// How many of the first `streamed` items kept, still kept, came after `at` in `output`:
    /// their places there are read once (`places`), for the first item only `output` has.
    fn kept_after(
        &self,
        output: &[&RawValue],
        at: usize,
        streamed: usize,
        places: &mut Option<Vec<usize>>,
    ) -> usize {
        if streamed == 0 {
            return 0;
        }
        let kept = self.reasoning_ids.get(..streamed).unwrap_or_default();
        let places = places.get_or_insert_with(|| {
            let found = output.iter().enumerate().filter_map(|(place, raw)| {
                let store: String;
                let item = read_nested!(Item, raw.get(), store).ok()?;
                let id = non_blank(item.id.as_ref())?;
                let still = kept.iter().any(|(k, present)| *present && &**k == id);
                still.then_some(place)
            });
            found.collect()
        });
        places.iter().filter(|&&place| place > at).count()
    }

    /// Hosted items kept from the finished response's `output` were kept in its order, maybe
    /// before items the stream brought: each call after them there is told how many came
    /// before it (metadata `hosted_before`), as its `output_item.added` would have been.
    fn tell_hosted_before<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        output: &[&RawValue],
        emit: &mut F,
    ) {
        let mut count = 0usize;
        for raw in output {
            let store: String;
            let Ok(item) = read_nested!(Item, raw.get(), store) else {
                continue;
            };
            if hosted_id(&item).is_some() {
                count += 1;
            } else if count > 0 && is_call_item(&item) {
                let known = non_blank(item.id.as_ref()).and_then(|id| self.items.with_id(id));
                if let Some(key) = known.and_then(|p| self.items.get(p)).map(|s| s.key) {
                    let json = count.to_string();
                    emit(Action::Metadata {
                        index: Some(key),
                        key: "hosted_before",
                        json: &json,
                    });
                }
            }
        }
    }

    /// The item waiting is at `at` in the finished response's `output`: the next one there
    /// follows it (none: it has no follower). A hosted item kept here goes right after it,
    /// before the last `before` items kept.
    fn follow_output<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        output: &[&RawValue],
        at: Option<usize>,
        before: usize,
        emit: &mut F,
    ) {
        // An item that does not read is no item the next turn sends.
        let store: String;
        let next = at.and_then(|at| output.get(at + 1));
        let after = match next {
            Some(raw) => read_nested!(Item, raw.get(), store).ok(),
            None => None,
        };
        match after {
            None => self.follow(thinking::Follower::Other, emit),
            Some(item) if hosted_id(&item).is_some() => {
                // Kept here, right after it; one kept already came before it, and is no
                // follower.
                if let Some(raw) = next {
                    self.keep_item(raw, hosted_id(&item), true, true, before, emit);
                }
                self.follow(thinking::Follower::Other, emit);
            }
            Some(item) if is_call_item(&item) => {
                let known = non_blank(item.id.as_ref()).and_then(|id| self.items.with_id(id));
                match known.and_then(|p| self.items.get(p)).map(|state| state.key) {
                    Some(key) => self.follow(thinking::Follower::Call(key), emit),
                    None => self.follow(thinking::Follower::Other, emit),
                }
            }
            Some(item) => self.follow_item(Some(&item), emit),
        }
    }

    /// Opens the call of a `function_call` item at `output_index` `index` under `key`: its id,
    /// name and `item_id`, then, with `aside` (an `added`), the arguments the item already
    /// carries, set aside. Once the response was refused whole, the item gets no state.
    fn open_item<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: i64,
        key: i64,
        item: &Item<'_>,
        aside: bool,
        emit: &mut F,
    ) {
        self.any_function_call = true;
        let item_id = item.id.as_ref().map_or("", Str::as_str);
        let call_id = non_blank(item.call_id.as_ref()).or(non_blank(item.id.as_ref()));
        let meta = (!item_id.is_empty()).then(|| json_string(item_id));
        let metadata = meta.as_deref().map(|m| ("item_id", m));
        let name = non_blank(item.name.as_ref());
        let kind = is_free_form(item).then_some(FREE_FORM_KIND);
        let mut action = call(Some(key), call_id, name, kind, None, metadata);
        if let Action::Call {
            shown_index, delta, ..
        } = &mut action
        {
            *shown_index = (key != index).then_some(index);
            delta.start = true;
        }
        if !emit(action) {
            // The response was refused whole: the item gets no state (its later events find
            // none, and the assembler keeps none of them), so what follows costs no memory.
            return;
        }
        tell_namespace(key, item, emit);
        self.follow(thinking::Follower::Call(key), emit);
        let hosted = self.hosted_kept + self.hosted_ahead;
        if hosted > 0 {
            let json = hosted.to_string();
            emit(Action::Metadata {
                index: Some(key),
                key: "hosted_before",
                json: &json,
            });
        }
        let unannounced = self
            .items
            .under_key(key)
            .find(|&p| self.items.get(p).is_some_and(|s| !s.announced));
        let pos = match unannounced {
            // Its deltas came first (its `added` was lost): the state they started goes on.
            Some(pos) => {
                let blank = self.items.get_mut(pos).is_some_and(|state| {
                    state.announced = true;
                    state.item_id().is_empty()
                });
                if blank {
                    self.items.set_item_id(pos, item_id);
                }
                pos
            }
            None => self
                .items
                .push(ItemState::new(index, key, item_id, true, FNV_OFFSET)),
        };
        if let Some(state) = self.items.get_mut(pos) {
            state.named = name.is_some();
        }
        // What `added` carries may be a placeholder (`"{}"`, quirk 24) that deltas do not
        // continue: set aside, it is fed only if nothing else brings the arguments.
        if let Some(raw) = raw_str(item.arguments).filter(|r| aside && r.len() > 2) {
            let Some(pos) = self.items.latest_under(key) else {
                return;
            };
            let fresh = self
                .items
                .get(pos)
                .is_some_and(|state| state.fed_len == 0 && !state.verified);
            if !fresh {
                return;
            }
            // An `added` sent again (a replay) replaces what the first one carried, held by
            // the item state made for it then, as `feed_chunk` keeps one per key: given back
            // first, so that the two are never counted at once (nor fed one after the other
            // at the end of the response).
            let under: Vec<usize> = self.items.under_key(key).collect();
            for p in under {
                let before = self.items.get_mut(p).and_then(|s| s.provisional.take());
                if let Some(before) = before {
                    self.let_go(&before, emit);
                }
            }
            decode_text(raw, &mut self.scratch, Lone::Escape);
            let held = self.set_aside(key, emit);
            if let Some(state) = self.items.get_mut(pos) {
                state.provisional = held;
            }
        }
    }

    /// A summary whose `arguments` is no string (a broken bridge's number, list or object): for
    /// an item that got no text of its own it is all the provider said of the arguments, fed as
    /// a value, as a delta that is no string is (quirk 23) and as `feed_chunk` feeds it. Alone,
    /// a value that is not an object fails the call (`not_object`) instead of the call running
    /// as `{}`. Beside text of its own it is not compared, as on `feed_chunk`.
    fn summary_value<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        key: i64,
        arguments: Option<&RawValue>,
        emit: &mut F,
    ) {
        let Some(value) = arguments.map(RawValue::get).filter(|r| *r != "null") else {
            return;
        };
        let Some(pos) = self.items.latest_under(key) else {
            return;
        };
        let unused = match self.items.get_mut(pos) {
            Some(state) if !state.ended && !state.has_text => {
                state.has_text = true;
                state.provisional.take()
            }
            _ => return,
        };
        // What `added` carried is not used now: given back before the value is counted.
        if let Some(unused) = unused {
            self.let_go(&unused, emit);
        }
        canonical(value, &mut self.scratch);
        emit(args(Some(key), Arguments::Value(&self.scratch)));
    }

    /// Feeds the arguments an item's `added` carried, if nothing else brought any.
    fn feed_provisional<F: FnMut(Action<'_>) -> bool>(&mut self, key: i64, emit: &mut F) {
        let latest = self.items.latest_under(key);
        let held = latest
            .and_then(|p| self.items.get_mut(p))
            .and_then(|state| state.provisional.take());
        if let Some(held) = held {
            self.feed_set_aside(key, &held, emit);
        }
    }

    /// Feeds set-aside arguments (decoded, surrogate halves paired or escaped) to the item at
    /// `key`, as [`Decoder::responses_fragment`] feeds a fragment: no delta brought any text,
    /// so no surrogate half is held for it.
    fn feed_set_aside<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        key: i64,
        held: &[u8],
        emit: &mut F,
    ) {
        // Given back first: fed, the same bytes are counted as the call's own.
        self.let_go(held, emit);
        let latest = self.items.latest_under(key);
        if let Some(state) = latest.and_then(|p| self.items.get_mut(p)) {
            state.fed_len += held.len();
            state.hash = fnv(state.hash, held);
            state.has_text = true;
        }
        emit(args(Some(key), Arguments::Text(held)));
    }

    /// `response.completed` / `.incomplete` / `.failed` / `.cancelled`: usage and finish reason.
    fn responses_end<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        t: &str,
        env: &Envelope<'_>,
        emit: &mut F,
    ) -> Result<(), EventError> {
        // A `response` that is no object (a bridge's string or number) is no response, as the
        // chunk path reads it: refusing the event for it lost what its type says, and a
        // `response.failed` left its open call runnable.
        let store: String;
        let response: Option<ResponseObject<'_>> = nested!(
            ResponseObject,
            env.response.filter(|r| r.get().starts_with('{')),
            store
        )?;
        if t == "response.completed" && !self.any_function_call && self.items.len() == 0 {
            self.summary_calls(response.as_ref(), emit);
        } else if self.items.len() > 0 {
            self.summary_namespaces(response.as_ref(), emit);
        }
        self.summary_reasoning(response.as_ref(), emit);
        if t == "response.completed" {
            // A response that ended well gives every item the arguments its `added` carried,
            // if nothing else brought any; one cut short leaves such a call without them.
            for (key, held) in self.items.take_provisional() {
                self.feed_set_aside(key, &held, emit);
            }
        }
        if let Some(usage) = response.as_ref().and_then(|r| r.usage) {
            emit(Action::Usage(usage.get()));
        }
        // The event's type says how the response ended, as the chunk path reads the SDK's
        // event: a `status` that says otherwise (`response.failed` of a response `completed`)
        // made the raw path run calls the SDK path stopped, or stop calls it ran. It holds
        // without a `response` object (a minimal bridge) too.
        let status = t.strip_prefix("response.").unwrap_or(t);
        let (raw, reason) = match status {
            "completed" if self.any_function_call => (status, FinishReason::ToolCalls),
            "completed" if self.refusal => (status, FinishReason::Refusal),
            "completed" => (status, FinishReason::Stop),
            "incomplete" => {
                let raw = response
                    .as_ref()
                    .and_then(|r| r.incomplete_details.as_ref())
                    .and_then(|d| d.reason.as_ref())
                    .map_or(status, Str::as_str);
                (raw, FinishReason::from_raw(raw))
            }
            other => (other, FinishReason::Other),
        };
        if status == "failed" {
            emit(Action::ProviderError(
                response
                    .as_ref()
                    .and_then(|r| r.error)
                    .map_or("{}", RawValue::get),
            ));
            emit(Action::Stop(status));
        } else if status == "cancelled" {
            // The response was cut off: a call the server had not finished must not run.
            emit(Action::Stop(status));
        }
        emit(Action::Finish { raw, reason });
        emit(Action::Done);
        Ok(())
    }

    /// The item an event names: by its `item_id` when one is known; else by `output_index`
    /// (the latest item sent there, unless that item has another `item_id`); else, with
    /// neither, the last function call seen.
    fn find_item(&self, item_id: Option<&str>, output_index: Option<i64>) -> Option<usize> {
        let item_id = item_id.filter(|id| !id.is_empty());
        if let Some(pos) = item_id.and_then(|id| self.items.with_id(id)) {
            return Some(pos);
        }
        match output_index {
            Some(i) => self.items.at_index(i).filter(|&p| {
                item_id.is_none() || self.items.get(p).is_some_and(|s| s.item_id().is_empty())
            }),
            None => self.items.len().checked_sub(1),
        }
    }

    /// The key of a new item at `output_index` `index`: the index itself, unless an item with
    /// another `item_id` has that key already (two calls sent under one `output_index` must not
    /// have their arguments mixed), then a key above every index and key seen.
    fn new_key(&mut self, index: i64, item_id: &str) -> i64 {
        let taken = !item_id.is_empty()
            && self.items.under_key(index).any(|p| {
                self.items
                    .get(p)
                    .is_some_and(|s| !(s.item_id().is_empty() || s.item_id() == item_id))
            });
        let key = if taken { self.next_key } else { index };
        self.next_key = self.next_key.max(key.saturating_add(1));
        key
    }

    /// The key of a Responses item event, found by [`Decoder::find_item`]. With `start` (the
    /// stream's `emit`), an event for an item never announced (its `output_item.added` was
    /// lost) starts its state, so its later events find it by `item_id`, unless the response
    /// was refused whole.
    fn item_key<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        env: &Envelope<'_>,
        item_id: Option<&str>,
        start: Option<&mut F>,
    ) -> i64 {
        let from_event = string(env.item_id);
        let id = from_event.as_deref().filter(|s| !s.is_empty()).or(item_id);
        if let Some(i) = env.output_index {
            self.next_key = self.next_key.max(i.saturating_add(1));
        }
        if let Some(item) = self
            .find_item(id, env.output_index)
            .and_then(|p| self.items.get(p))
        {
            return item.key;
        }
        // A delta without `output_index` for an item never seen is opened at 0 (or the next
        // free key), as `feed_chunk` opens it, so that its later deltas find it by `item_id`.
        let Some(index) = env.output_index.or(start.is_some().then_some(0)) else {
            return 0;
        };
        let id = id.unwrap_or("");
        let key = self.new_key(index, id);
        if !start.is_some_and(|emit| still_kept(emit)) {
            return key;
        }
        let shown = if env.output_index.is_some() {
            index
        } else {
            key
        };
        self.items
            .push(ItemState::new(shown, key, id, false, FNV_OFFSET));
        key
    }

    /// The key of a custom tool call's input event. An item never announced (its
    /// `output_item.added` was lost) is opened here as a free-form call without a name, as a
    /// function call's delta opens one: its `output_item.done` names it, else it ends
    /// `missing_name`, never dropped.
    fn free_form_key<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        env: &Envelope<'_>,
        emit: &mut F,
    ) -> i64 {
        let before = self.items.len();
        let key = self.item_key(env, None, Some(&mut *emit));
        if self.items.len() > before {
            emit(call(
                Some(key),
                None,
                None,
                Some(FREE_FORM_KIND),
                None,
                None,
            ));
        }
        key
    }

    /// The whole free-form text of the custom tool call at `key` (from its `.done` event or,
    /// `finished`, its finished item), fed once as the call's text: a later `.done` repeats
    /// it, and the finished item's, which the provider keeps as the call, is compared with it.
    fn free_form_input<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        key: i64,
        input: Option<&RawValue>,
        finished: bool,
        emit: &mut F,
    ) {
        let Some(raw) = raw_str(input) else {
            return;
        };
        let Some(state) = self
            .items
            .latest_under(key)
            .and_then(|p| self.items.get_mut(p))
        else {
            return;
        };
        if state.ended {
            return;
        }
        let restated = std::mem::replace(&mut state.has_text, true);
        if restated && !finished {
            return;
        }
        // Plain text, not JSON: an unpaired surrogate half is U+FFFD (warning
        // `replacement_character`), as in assistant text; its `\uXXXX` escape would change
        // what the input says.
        decode_text(raw, &mut self.scratch, Lone::Replace);
        if restated {
            emit(Action::FinalInput(key, &self.scratch));
        } else if !self.scratch.is_empty() {
            emit(args(Some(key), Arguments::Text(&self.scratch)));
        }
    }

    fn responses_fragment<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: i64,
        raw: &str,
        emit: &mut F,
    ) {
        let latest = self.items.latest_under(index);
        // Any text is the call's own, even a surrogate half held for the next fragment (as
        // `feed_chunk` reads a non-empty delta): what `added` carried is not used. Given back
        // before the fragment is counted (or held): both are never counted at once.
        let unused = latest
            .filter(|_| raw.len() > 2)
            .and_then(|p| self.items.get_mut(p))
            .and_then(|state| state.provisional.take());
        if let Some(unused) = unused {
            self.let_go(&unused, emit);
        }
        self.fragment(Some(index), raw, Lone::Escape, emit);
        if let Some(state) = latest.and_then(|p| self.items.get_mut(p)) {
            state.fed_len += self.scratch.len();
            state.hash = fnv(state.hash, &self.scratch);
            // Any text is its own, even a surrogate half held for the next fragment.
            state.has_text |= raw.len() > 2;
        }
        if !self.scratch.is_empty() {
            emit(args(Some(index), Arguments::Text(&self.scratch)));
        }
    }

    /// Hand full `arguments` to the assembler, which compares them with what the call holds and
    /// feeds them when they differ, so the cumulative-resend rule (quirk 19) replaces a prefix.
    /// The deltas' hash only decides whether a surrogate half held from them still stands.
    /// Every summary is handed on, not only the first: an `output_item.done` that contradicts
    /// the `.done` before it (or the text that one gave a call with no deltas) must not leave
    /// the call to run silently with the first reading. One that repeats what the call holds
    /// changes nothing. The first summary of an item that got no text of its own is its text,
    /// fed as a fragment. As `feed_chunk` compares them.
    fn verify<F: FnMut(Action<'_>) -> bool>(&mut self, index: i64, raw: &str, emit: &mut F) {
        let Some(pos) = self.items.latest_under(index) else {
            return;
        };
        match self.items.get_mut(pos) {
            Some(state) if !state.ended => state.verified = true,
            _ => return,
        }
        // Surrogate state of the deltas must not leak into the full text.
        self.scratch.clear();
        let mut pending = None;
        unescape(raw, &mut self.scratch, &mut pending, Lone::Escape);
        if let Some(unit) = pending {
            push_lone(&mut self.scratch, unit, Lone::Escape);
        }
        let same = self.items.get(pos).is_some_and(|state| {
            state.fed_len == self.scratch.len() && state.hash == fnv(FNV_OFFSET, &self.scratch)
        });
        if !same {
            self.forget_held(index, emit);
        }
        // Even when the deltas match the summary, the call may hold less than they carried (a
        // fragment dropped as a repeat, quirk 20): the assembler compares with what it holds,
        // as `feed_chunk` does, so both paths keep the same text.
        if self.scratch.is_empty() {
            return;
        }
        let unused = self
            .items
            .get_mut(pos)
            .and_then(|state| state.provisional.take());
        if let Some(unused) = unused {
            self.let_go(&unused, emit);
        }
        let state = self.items.get_mut(pos).filter(|state| !state.has_text);
        if let Some(state) = state {
            // No text of its own came: the summary is its text, fed as a fragment is, as
            // `feed_chunk` feeds it. Compared with what the call holds, it would be compared
            // with a rendition before it (a call sent again with only its summaries, or an
            // item under another `item_id` with the same `call_id`) and dropped without a
            // word when its tokens are the same, where the assembler's replay rules drop it
            // only as the same bytes (`replay_dropped`) and make other text a call of its own.
            state.has_text = true;
            state.fed_len = self.scratch.len();
            state.hash = fnv(FNV_OFFSET, &self.scratch);
            emit(args(Some(index), Arguments::Text(&self.scratch)));
            return;
        }
        emit(Action::ArgumentsSummary(index, &self.scratch));
    }

    fn anthropic<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        t: &str,
        env: &Envelope<'_>,
        emit: &mut F,
    ) -> Result<(), EventError> {
        // A tool block that stopped with no input is a tool without parameters only if the
        // message goes on; Anthropic closes the block the output limit cut before it says why
        // the message stopped, so at `max_tokens` the call is left open for `limit_reached` to
        // cut. A `ping` tells nothing either way.
        if t != "ping" {
            if let Some(block) = self.empty_block.take() {
                match replay_of(&block, t, env) {
                    Replay::Before => self.empty_block = Some(block),
                    // Its own stop decides again.
                    Replay::Same => {}
                    Replay::No if t == "message_delta" && stops_at_limit(env.delta) => {}
                    Replay::No => self.end_tool_block(block, emit),
                }
            }
        }
        match t {
            "message_start" => {
                let store: String;
                let message: Option<Message<'_>> = nested!(Message, env.message, store)?;
                self.start(emit);
                if let Some(message) = message {
                    if let Some(usage) = message.usage {
                        emit(Action::Usage(usage.get()));
                    }
                    container(message.container, emit);
                }
            }
            "content_block_start" => {
                let store: String;
                let block: Option<Block<'_>> = nested!(Block, env.content_block, store)?;
                self.note_block_index(env.index);
                let Some(block) = block else {
                    return Ok(());
                };
                // Without an index: the next one after the highest the stream gave (a block
                // whose start lost its index while its deltas keep theirs); in a stream that
                // gives none, the number of blocks open, so that start, deltas and stop pair up
                // one block at a time.
                let index = env.index.unwrap_or_else(|| match self.highest_block {
                    Some(highest) => highest.saturating_add(1),
                    None => i64::try_from(self.blocks.len()).unwrap_or(i64::MAX),
                });
                // A block restarting at an index still open (a translator that reuses indexes
                // and skips `content_block_stop`) replaces it, whatever its type.
                if let Some(old) = self.blocks.remove(&index) {
                    self.let_go_input(old.input, emit);
                    if let Some(thought) = old.thought {
                        drop_thought(&thought, emit);
                    }
                }
                let tool = block.kind.as_str() == "tool_use";
                let mut state = BlockState {
                    index,
                    tool,
                    text: block.kind.as_str() == "text",
                    got_delta: false,
                    got_content: false,
                    input: Placeholder::NONE,
                    id: None,
                    thought: None,
                };
                if tool {
                    let id = non_blank(block.id.as_ref()).filter(|s| !is_blank_id(s));
                    state.id = id.map(Box::from);
                    let name = non_blank(block.name.as_ref());
                    let mut start = call(Some(index), id, name, None, None, None);
                    if let Action::Call { delta, .. } = &mut start {
                        delta.start = true;
                    }
                    self.forget_held(index, emit);
                    if !emit(start) {
                        // The response was refused whole: its blocks keep nothing (their
                        // deltas and stop find no block, and the assembler keeps none of it).
                        return Ok(());
                    }
                    self.count_reasoning_before(index, emit);
                    // The next turn sends them back on the call's block.
                    let caller = block.caller.filter(|c| c.get().starts_with('{'));
                    for (key, raw) in [("caller", caller), ("toolset_name", block.toolset_name)] {
                        if let Some(raw) = raw.filter(|r| r.get().starts_with(['{', '"'])) {
                            let mut json = Vec::new();
                            canonical(raw.get(), &mut json);
                            emit(Action::Metadata {
                                index: Some(index),
                                key,
                                json: &String::from_utf8_lossy(&json),
                            });
                        }
                    }
                    if let Some(input) = block.input {
                        state.input = self.placeholder(index, input.get(), emit);
                    }
                } else if matches!(block.kind.as_str(), "thinking" | "redacted_thinking") {
                    let redacted = block.kind.as_str() == "redacted_thinking";
                    let first = if redacted { block.data } else { block.thinking };
                    state.thought = self.start_thought(
                        redacted,
                        raw_str(first),
                        raw_str(block.signature),
                        emit,
                    );
                } else if state.text {
                    emit(Action::TextBlock);
                    if let Some(raw) = raw_str(block.text) {
                        self.text(raw, emit);
                    }
                    if let Some(citations) = block.citations {
                        cite_all(citations.get(), emit);
                    }
                } else if let Some(raw) = env.content_block {
                    // A server tool's call or result, run on Anthropic's side: never a call,
                    // kept for the next turn (`envelope/thinking.rs`).
                    let compaction = block.kind.as_str() == "compaction";
                    state.thought = self.start_server_block(raw.get(), compaction, emit);
                }
                self.blocks.insert(index, state);
            }
            "content_block_delta" => self.anthropic_delta(env, emit)?,
            "content_block_stop" => {
                self.note_block_index(env.index);
                let index = env.index.unwrap_or(0);
                let Some(mut block) = self.blocks.remove(&index) else {
                    return Ok(());
                };
                if let Some(thought) = block.thought.take() {
                    self.end_thought(thought, emit);
                }
                if block.tool {
                    if !block.got_content && (block.got_delta || block.input.is_empty()) {
                        self.empty_block = Some(block);
                    } else {
                        self.end_tool_block(block, emit);
                    }
                }
            }
            "message_delta" => {
                if let Some(raw) = env.delta {
                    let store: String;
                    let delta = read_nested!(AnthropicDelta, raw.get(), store)
                        .map_err(EventError::Malformed)?;
                    // A blank reason is none, as the chunk path reads it.
                    if let Some(reason) = delta
                        .stop_reason
                        .as_ref()
                        .filter(|r| !r.as_str().is_empty())
                    {
                        let raw = reason.as_str();
                        emit(Action::Finish {
                            raw,
                            reason: FinishReason::from_raw(raw),
                        });
                    }
                    container(delta.container, emit);
                }
                if let Some(usage) = env.usage {
                    emit(Action::Usage(usage.get()));
                }
            }
            "message_stop" => {
                emit(Action::Done);
            }
            _ => {}
        }
        Ok(())
    }

    /// Ends a stopped `tool_use` block: its `input` is the arguments when no fragment came.
    fn end_tool_block<F: FnMut(Action<'_>) -> bool>(&mut self, block: BlockState, emit: &mut F) {
        let index = block.index;
        // After a fragment the input was let go already (see `anthropic_delta`): what is left
        // here is used.
        match block.input {
            Placeholder::Empty { object: true } => {
                emit(args(Some(index), Arguments::Value(b"{}")));
            }
            Placeholder::Empty { .. } => {}
            Placeholder::Value(value) => {
                // Given back first: fed, the same bytes are counted as the call's own.
                self.let_go(&value, emit);
                emit(args(Some(index), Arguments::Value(&value)));
            }
            Placeholder::Text(text) => {
                // `input` sent as the arguments' JSON text (a translator that copied a Chat
                // `arguments` string): text, as `feed_chunk` reads it, not a string value that
                // is no object.
                self.let_go(&text, emit);
                emit(args(Some(index), Arguments::Text(&text)));
            }
        }
        self.release(Some(index), emit);
        emit(Action::EndCall(index));
    }

    /// The `input` of a `tool_use` block's start, set aside for the block at `index` as the
    /// text it would be fed as; an input too large to keep is not kept (the assembler failed
    /// the call, or refused the response).
    fn placeholder<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: i64,
        input: &str,
        emit: &mut F,
    ) -> Placeholder {
        if no_input(input.as_bytes()) {
            return Placeholder::Empty {
                object: input.trim_ascii_start().starts_with('{'),
            };
        }
        let text = input.starts_with('"');
        if text {
            decode_text(input, &mut self.scratch, Lone::Escape);
        } else {
            canonical(input, &mut self.scratch);
        }
        match self.set_aside(index, emit) {
            Some(held) if text => Placeholder::Text(held),
            Some(held) => Placeholder::Value(held),
            None => Placeholder::NONE,
        }
    }

    /// A block's input that will not be used: the assembler no longer counts it.
    fn let_go_input<F: FnMut(Action<'_>) -> bool>(&mut self, input: Placeholder, emit: &mut F) {
        if let Placeholder::Value(held) | Placeholder::Text(held) = input {
            self.let_go(&held, emit);
        }
    }

    /// `content_block_delta`: argument fragments of `tool_use` blocks and text.
    fn note_block_index(&mut self, index: Option<i64>) {
        if let Some(index) = index {
            self.highest_block = Some(self.highest_block.map_or(index, |h| h.max(index)));
        }
    }

    fn anthropic_delta<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        env: &Envelope<'_>,
        emit: &mut F,
    ) -> Result<(), EventError> {
        let Some(raw) = env.delta else { return Ok(()) };
        match serde_json::from_str::<AnthropicDelta<'_>>(raw.get()) {
            Ok(delta) => self.anthropic_delta_read(env, &delta, emit),
            Err(e) => self.anthropic_delta_made_whole(env, raw, e, emit),
        }
    }

    /// [`Decoder::anthropic_delta`] of a `delta` serde_json refused: read again with its names
    /// made whole (`lone_keys`). Apart, so that the usual delta holds no `String` for it.
    #[cold]
    #[inline(never)]
    fn anthropic_delta_made_whole<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        env: &Envelope<'_>,
        raw: &RawValue,
        first: serde_json::Error,
        emit: &mut F,
    ) -> Result<(), EventError> {
        let store: String;
        let delta = reread_nested!(AnthropicDelta, raw.get(), first, store)
            .map_err(EventError::Malformed)?;
        self.anthropic_delta_read(env, &delta, emit)
    }

    /// One `content_block_delta` event, its `delta` read.
    #[inline(always)]
    fn anthropic_delta_read<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        env: &Envelope<'_>,
        delta: &AnthropicDelta<'_>,
        emit: &mut F,
    ) -> Result<(), EventError> {
        self.note_block_index(env.index);
        let index = env.index.unwrap_or(0);
        let block = self.blocks.get_mut(&index);
        match delta.kind.as_ref().map(Str::as_str) {
            Some("input_json_delta") => {
                // A delta for a block never started is kept (tolerant); one for a server
                // tool's call is its input, kept with the block; one for another
                // non-`tool_use` block is not ours.
                if block.as_ref().is_some_and(|b| !b.tool) {
                    if let Some(raw) = raw_str(delta.partial_json) {
                        self.server_input(index, raw, emit);
                    }
                    return Ok(());
                }
                if let Some(other) = delta
                    .partial_json
                    .filter(|r| !r.get().starts_with('"') && r.get() != "null")
                {
                    // Arguments sent as a value, not text: ignored, they left the call `{}`,
                    // a call that runs. A field of the wrong type makes the event unread.
                    return serde_json::from_str::<String>(other.get())
                        .map(drop)
                        .map_err(EventError::Malformed);
                }
                let raw = raw_str(delta.partial_json);
                let mut unused = Placeholder::NONE;
                if let (Some(b), Some(r)) = (block, raw) {
                    // `""`, the usual first delta, is no fragment (quirk 26).
                    b.got_delta |= r.len() > 2;
                    if b.got_delta {
                        // The input of the block's start is not used now: let go at once.
                        unused = std::mem::replace(&mut b.input, Placeholder::NONE);
                    }
                    if !b.got_content && r.len() > 2 {
                        // Decoded until the first delta with content: usually the first one. A
                        // text no `String` holds (a lone surrogate) is content.
                        b.got_content = serde_json::from_str::<String>(r).map_or(true, |text| {
                            !text
                                .trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
                                .is_empty()
                        });
                    }
                }
                // Given back before the fragment is counted: both are never counted at once.
                self.let_go_input(unused, emit);
                if let Some(raw) = raw {
                    self.fragment(Some(index), raw, Lone::Escape, emit);
                    if !self.scratch.is_empty() {
                        emit(args(Some(index), Arguments::Text(&self.scratch)));
                    }
                }
            }
            Some("text_delta") => {
                if let Some(raw) = raw_str(delta.text) {
                    self.text(raw, emit);
                }
            }
            Some(kind @ ("thinking_delta" | "signature_delta")) => {
                let Some(mut thought) = block.and_then(|b| b.thought.take_if(|t| !t.is_server()))
                else {
                    return Ok(());
                };
                if kind == "thinking_delta" {
                    if let Some(raw) = raw_str(delta.thinking) {
                        self.think(&mut thought, raw, emit);
                    }
                } else if let Some(raw) = raw_str(delta.signature) {
                    self.sign(&mut thought, raw, emit);
                }
                if let Some(b) = self.blocks.get_mut(&index) {
                    b.thought = Some(thought);
                }
            }
            Some(kind @ ("citations_delta" | "compaction_delta")) => {
                let text = block.is_some_and(|b| b.text);
                if let Some(raw) = env.delta {
                    self.rare_delta(index, kind, text, raw.get(), emit)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A `citations_delta` of a text block (`text`), or a `compaction_delta`, at `index`, its
    /// `delta` as JSON text: apart from the text and argument deltas, which pay nothing for it.
    #[cold]
    #[inline(never)]
    fn rare_delta<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: i64,
        kind: &str,
        text: bool,
        raw: &str,
        emit: &mut F,
    ) -> Result<(), EventError> {
        let store: String;
        let delta = read_nested!(RareDelta, raw, store).map_err(EventError::Malformed)?;
        if kind == "compaction_delta" {
            // As the `anthropic` SDK's accumulator: each member set, one it lacks to null.
            self.compact(index, delta.content, delta.encrypted_content, emit);
        } else if let Some(citation) = delta.citation.filter(|_| text) {
            cite(citation.get(), emit);
        }
        Ok(())
    }
}

/// Keeps one citation (JSON text) of the text block open, if it is an object.
fn cite<F: FnMut(Action<'_>) -> bool>(raw: &str, emit: &mut F) {
    if raw.starts_with('{') {
        let mut json = Vec::new();
        canonical(raw, &mut json);
        emit(Action::Citation(&String::from_utf8_lossy(&json)));
    }
}

/// Keeps each citation of a text block's start (`citations`, JSON text), in order.
#[cold]
#[inline(never)]
fn cite_all<F: FnMut(Action<'_>) -> bool>(raw: &str, emit: &mut F) {
    if let Ok(list) = serde_json::from_str::<Vec<&RawValue>>(raw) {
        for citation in list {
            cite(citation.get(), emit);
        }
    }
}

fn call<'a>(
    index: Option<i64>,
    id: Option<&'a str>,
    name: Option<&'a str>,
    kind: Option<&'a str>,
    arguments: Option<Arguments<'a>>,
    metadata: Option<(&'static str, &'a str)>,
) -> Action<'a> {
    Action::Call {
        delta: Delta {
            index,
            id,
            name,
            kind,
            arguments,
            start: false,
        },
        metadata,
        released: 0,
        shown_index: None,
    }
}

/// A delta that only carries an argument fragment or value.
fn args(index: Option<i64>, arguments: Arguments<'_>) -> Action<'_> {
    call(index, None, None, None, Some(arguments), None)
}

/// Tells the call under `key` the `namespace` tool its item says the called tool is declared
/// in: called by its bare name, the tool is told apart by it, and the next turn must send it
/// back. A value that is no string, or a blank one, is no namespace.
fn tell_namespace<F: FnMut(Action<'_>) -> bool>(key: i64, item: &Item<'_>, emit: &mut F) {
    if let Some(namespace) = string(item.namespace).filter(|n| !n.is_empty()) {
        emit(Action::Metadata {
            index: Some(key),
            key: "namespace",
            json: &json_string(&namespace),
        });
    }
}

/// A finished response's `output` item read when it is a `reasoning` item.
fn reasoning_item<'r>(raw: &'r RawValue, store: &'r mut String) -> Option<Item<'r>> {
    output_item(raw, false, store).map(|(item, _)| item)
}

/// A finished response's `output` item read when it is a `reasoning` item, or with `hosted` a
/// hosted item ([`hosted_id`]), with whether it is hosted: read once for both. The finished
/// response repeats every call's arguments: unless hosted items are looked for, an item whose
/// text cannot name the type (neither the word nor an escape) is not read again. An item
/// serde_json refuses for a name with an unpaired surrogate escape is read made whole into
/// `store` (`lone_keys`), as `output_item.done` reads it: refused, the item was not kept, nor
/// named by its follower.
fn output_item<'r>(
    raw: &'r RawValue,
    hosted: bool,
    store: &'r mut String,
) -> Option<(Item<'r>, bool)> {
    let text = raw.get();
    if !hosted && !text.contains("reasoning") && !text.contains('\\') {
        return None;
    }
    let item = match serde_json::from_str::<Item<'_>>(text) {
        Ok(item) => item,
        Err(e) => {
            *store = whole_item(text, e)?;
            let store: &'r String = store;
            serde_json::from_slice::<Item<'_>>(store.as_bytes()).ok()?
        }
    };
    if is_kind(item.kind.as_ref(), "reasoning") {
        Some((item, false))
    } else {
        (hosted && hosted_id(&item).is_some()).then_some((item, true))
    }
}

/// The `id` of a hosted item ([`thinking::is_hosted`]), which is kept only with one: the API
/// takes none back without it.
fn hosted_id<'s>(item: &'s Item<'_>) -> Option<&'s str> {
    let kind = item.kind.as_ref().map(Str::as_str);
    kind.is_some_and(thinking::is_hosted)
        .then(|| non_blank(item.id.as_ref()))
        .flatten()
}

/// An `output` item's text with the names serde_json refused made whole, if that reads.
#[cold]
#[inline(never)]
fn whole_item(text: &str, first: serde_json::Error) -> Option<String> {
    let parses = |t: &str| serde_json::from_slice::<Item<'_>>(t.as_bytes()).map(drop);
    lone_keys::whole_names(text, first, parses).ok()
}

/// A Responses item the caller must answer: a `function_call`, or a `custom_tool_call`
/// (free-form input: see [`FREE_FORM_KIND`]).
fn is_call_item(item: &Item<'_>) -> bool {
    is_kind(item.kind.as_ref(), "function_call") || is_free_form(item)
}

fn is_free_form(item: &Item<'_>) -> bool {
    is_kind(item.kind.as_ref(), "custom_tool_call")
}

fn is_kind(kind: Option<&Str<'_>>, want: &str) -> bool {
    kind.is_some_and(|k| k.as_str() == want)
}

#[cold]
#[inline(never)]
fn unknown(kind: Option<&str>) -> EventError {
    EventError::UnknownEvent(kind.map(str::to_owned))
}

#[cold]
fn lossy(data: &[u8]) -> &str {
    std::str::from_utf8(data).unwrap_or("{}")
}

/// A position in a response's output (Responses `output_index`, an Anthropic block `index`):
/// one past every real list's length, from [`POSITION_LIMIT`] on, is read as missing, as a
/// position is keyed and numbered on from (`index + 1`) where a value near `i64::MAX` would
/// wrap or saturate into another item's key.
fn position<E: de::Error>(raw: Option<&RawValue>) -> Result<Option<i64>, E> {
    Ok(lax_index(raw)?.filter(|&i| i < POSITION_LIMIT))
}

/// An index as the SDKs read it into their models (pydantic's lax integer, [`wire_index`]):
/// `1.0`, `true` and `"1"` are 1. Read strictly, such an event was unread, and the call it
/// started vanished from the raw path while the SDK path ran it. What is no integer to the
/// SDKs either (`0.5`, `"x"`) leaves the event unread.
fn lax_index<E: de::Error>(raw: Option<&RawValue>) -> Result<Option<i64>, E> {
    match raw.filter(|r| r.get() != "null") {
        None => Ok(None),
        Some(raw) => wire_index(Some(raw)).map(Some).ok_or_else(|| {
            de::Error::custom(format_args!("an index that is no integer: {}", raw.get()))
        }),
    }
}

/// An optional string member ([`Str`]): absent or `null` is `None`, any other type refused.
/// Read through its raw text, as `string` reads a Chat chunk's fields: serde refuses the
/// escape of a lone surrogate (`"\ud800"`), and a name or an id holding one made the whole
/// event unread, every open call lost with it. It is U+FFFD, as in the SDKs' objects once they
/// reach the core.
fn opt_str<'a, E: de::Error>(raw: Option<&'a RawValue>) -> Result<Option<Str<'a>>, E> {
    match raw.filter(|r| r.get() != "null") {
        None => Ok(None),
        Some(r) => string(Some(r)).map(|s| Some(Str(s))).ok_or_else(|| {
            de::Error::invalid_type(de::Unexpected::Other("no string"), &"a string")
        }),
    }
}

/// A block's `type`, which must be there.
fn required_kind<'a, E: de::Error>(raw: Option<&'a RawValue>) -> Result<Str<'a>, E> {
    opt_str(raw)?.ok_or_else(|| de::Error::missing_field("type"))
}

/// An optional member of any readable type, parsed from the last of its values only; one that
/// does not parse as `T` (a bridge's string for an object) is absent, as the chunk path's
/// lookups read it: refusing the whole event for it lost what the event's type says.
fn parsed<'a, T: Deserialize<'a>, E: de::Error>(raw: Option<&'a RawValue>) -> Result<Option<T>, E> {
    Ok(raw
        .filter(|r| r.get() != "null")
        .and_then(|r| serde_json::from_str(r.get()).ok()))
}

/// A finished response's `incomplete_details`, read as [`parsed`] reads it. One serde_json
/// refused for a name with an unpaired surrogate escape, which `json.loads` takes, is read made
/// whole (`lone_keys`): refused, the response's reason was lost, and a call the output limit
/// cut short was not told so.
#[allow(clippy::unnecessary_wraps)] // the form of a `wire_struct!` reader
fn details<'a, E: de::Error>(
    raw: Option<&'a RawValue>,
) -> Result<Option<IncompleteDetails<'a>>, E> {
    let Some(raw) = raw.filter(|r| r.get() != "null") else {
        return Ok(None);
    };
    match serde_json::from_str::<IncompleteDetails<'_>>(raw.get()) {
        Ok(read) => Ok(Some(read)),
        Err(e) => Ok(details_made_whole(raw.get(), e)),
    }
}

/// [`details`] of a text serde_json refused with `first`: its reason owned, as the text made
/// whole is let go here.
#[cold]
#[inline(never)]
fn details_made_whole(text: &str, first: serde_json::Error) -> Option<IncompleteDetails<'static>> {
    let store: String;
    let read = reread_nested!(IncompleteDetails, text, first, store).ok()?;
    let reason = read.reason.map(|r| Str(Cow::Owned(r.0.into_owned())));
    Some(IncompleteDetails { reason })
}

/// How an event relates to a tool block that stopped with no input and waits for the next
/// event to say whether the message went on ([`Decoder::anthropic`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replay {
    /// The message sent again after a reconnect, up to the block: the wait goes on. Taken as
    /// the message going on, the block was a call without parameters, and the output limit
    /// or the error that came after the replay no longer cut it.
    Before,
    /// The block itself sent again: the copy replaces it.
    Same,
    /// Anything else.
    No,
}

/// Tells the id of the code-execution container `raw` (a message's or a `message_delta`'s
/// `container`) names, if it names one: continuing a `pause_turn` needs it. One of another
/// shape tells nothing and spoils nothing else of the event, as `feed_chunk` reads it.
fn container<F: FnMut(Action<'_>) -> bool>(raw: Option<&RawValue>, emit: &mut F) {
    let Some(raw) = raw.filter(|r| r.get() != "null") else {
        return;
    };
    let store: String;
    if let Ok(Container { id: Some(id) }) = read_nested!(Container, raw.get(), store) {
        if !id.as_str().is_empty() {
            emit(Action::Container(id.as_str()));
        }
    }
}

/// Whether event `t` replays the message up to the waiting `block`: `message_start`, an
/// event of an earlier block, or the block's own start again (same index, same id).
fn replay_of(block: &BlockState, t: &str, env: &Envelope<'_>) -> Replay {
    match t {
        "message_start" => Replay::Before,
        "content_block_start" | "content_block_delta" | "content_block_stop" => match env.index {
            Some(index) if index < block.index => Replay::Before,
            Some(index) if index == block.index && t == "content_block_start" => {
                let store: String;
                let started: Option<Block<'_>> =
                    nested!(Block, env.content_block, store).ok().flatten();
                let same = started.is_some_and(|b| {
                    b.kind.as_str() == "tool_use"
                        && block.id.is_some()
                        && non_blank(b.id.as_ref()) == block.id.as_deref()
                });
                if same {
                    Replay::Same
                } else {
                    Replay::No
                }
            }
            _ => Replay::No,
        },
        _ => Replay::No,
    }
}

/// See [`position`]; `feed_chunk`'s adapters read positions the same way.
pub const POSITION_LIMIT: i64 = 1 << 53;

/// Whether the response is still kept, asked before the decoder makes state for a new item
/// (a Responses item, an Anthropic block, a Gemini call by its id): once it was refused whole,
/// what follows costs no memory, as `feed_chunk`'s adapters ask `sink._may_hold(0)`.
fn still_kept<F: FnMut(Action<'_>) -> bool>(emit: &mut F) -> bool {
    emit(Action::Held(0))
}

/// Decode the JSON string literal `raw` onto `out` (cleared first) as argument text: a
/// surrogate half without its partner, even a trailing one, written back as its escape. The
/// text a set-aside string is fed as, whole.
fn decode_text(raw: &str, out: &mut Vec<u8>, lone: Lone) {
    out.clear();
    let mut pending = None;
    unescape(raw, out, &mut pending, lone);
    if let Some(unit) = pending {
        push_lone(out, unit, lone);
    }
}

#[cold]
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

fn push_lone(out: &mut Vec<u8>, unit: u16, lone: Lone) {
    match lone {
        Lone::Escape => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u");
            for shift in [12, 8, 4, 0] {
                out.push(HEX[usize::from((unit >> shift) & 0xF)]);
            }
        }
        Lone::Replace => push_char(out, char::REPLACEMENT_CHARACTER),
    }
}

/// Whether a JSON value is truthy as Python reads it (the openai SDK's `if data.get("error")`):
/// not `null`, `false`, zero, or an empty string, array or object.
fn truthy(raw: &str) -> bool {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Null | serde_json::Value::Bool(false)) => false,
        Ok(serde_json::Value::Number(n)) => n.as_f64().is_some_and(|f| f.abs() > 0.0),
        Ok(serde_json::Value::String(s)) => !s.is_empty(),
        Ok(serde_json::Value::Array(a)) => !a.is_empty(),
        Ok(serde_json::Value::Object(o)) => !o.is_empty(),
        Ok(serde_json::Value::Bool(true)) | Err(_) => true,
    }
}

/// The provider reported an error inside the stream and gave up on the response: a call it had
/// not ended must not run, as on the `feed_chunk` path and when an SDK raises the event
/// instead, and the finish reason says `error`.
fn provider_gave_up<F: FnMut(Action<'_>) -> bool>(emit: &mut F) {
    emit(Action::GaveUp);
}

/// Write the JSON value `raw` (validated by `serde_json`), sent whole as a call's arguments
/// (quirk 23), in the form an SDK client gives it to `feed_chunk` after decoding the event and
/// `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`: no whitespace between tokens,
/// strings with only the escapes that are required (`\"`, `\\`, control characters), and, as
/// there, every non-ASCII character escaped when a lone surrogate has no UTF-8 form. Numbers and
/// repeated keys are kept as sent (the scanner reports a repeated key). Both ways in then give
/// the same `arguments` text for the same bytes.
/// A `tool_use` block's `input` that says nothing: none, the `{}` placeholder or `""`.
fn no_input(input: &[u8]) -> bool {
    let trimmed = input.trim_ascii();
    let mut object = trimmed
        .iter()
        .filter(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    trimmed.is_empty()
        || trimmed == b"\"\""
        || (object.next() == Some(&b'{') && object.next() == Some(&b'}') && object.next().is_none())
}

/// Whether a `message_delta`'s `delta` says the output limit stopped the message.
fn stops_at_limit(delta: Option<&RawValue>) -> bool {
    let Some(raw) = delta else { return false };
    let store: String;
    read_nested!(AnthropicDelta, raw.get(), store)
        .ok()
        .and_then(|d| d.stop_reason)
        .is_some_and(|r| FinishReason::from_raw(r.as_str()) == FinishReason::Length)
}

fn canonical(raw: &str, out: &mut Vec<u8>) {
    out.clear();
    if canonical_pass(raw, out, false) {
        out.clear();
        canonical_pass(raw, out, true);
    }
}

/// One pass of [`canonical`]; returns whether a lone surrogate was met.
fn canonical_pass(raw: &str, out: &mut Vec<u8>, ascii: bool) -> bool {
    let mut lone = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            if !matches!(c, ' ' | '\t' | '\n' | '\r') {
                push_char(out, c);
            }
            continue;
        }
        out.push(b'"');
        while let Some(c) = chars.next() {
            let decoded = match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some('r') => '\r',
                    Some('b') => '\u{8}',
                    Some('f') => '\u{c}',
                    Some('u') => {
                        let unit = hex_unit(&mut chars);
                        let pair = (0xD800..=0xDBFF).contains(&unit) && {
                            let mut ahead = chars.clone();
                            ahead.next() == Some('\\')
                                && ahead.next() == Some('u')
                                && (0xDC00..=0xDFFF).contains(&hex_unit(&mut ahead))
                        };
                        if pair {
                            chars.next();
                            chars.next();
                            let low = hex_unit(&mut chars);
                            let c = 0x10000
                                + ((u32::from(unit) - 0xD800) << 10)
                                + (u32::from(low) - 0xDC00);
                            char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER)
                        } else if let Some(c) = char::from_u32(u32::from(unit)) {
                            c
                        } else {
                            lone = true;
                            push_lone(out, unit, Lone::Escape);
                            continue;
                        }
                    }
                    Some(other) => other,
                    None => break,
                },
                other => other,
            };
            push_json_char(out, decoded, ascii);
        }
        out.push(b'"');
    }
    lone
}

/// Four hex digits of a `\u` escape (validated JSON has them).
fn hex_unit(chars: &mut impl Iterator<Item = char>) -> u16 {
    (0..4).fold(0u16, |n, _| {
        let digit = chars.next().and_then(|d| d.to_digit(16)).unwrap_or(0);
        n << 4 | u16::try_from(digit).unwrap_or(0)
    })
}

/// One decoded character of a string, escaped as Python's `json.dumps` escapes it.
fn push_json_char(out: &mut Vec<u8>, c: char, ascii: bool) {
    match c {
        '"' => out.extend_from_slice(b"\\\""),
        '\\' => out.extend_from_slice(b"\\\\"),
        '\n' => out.extend_from_slice(b"\\n"),
        '\r' => out.extend_from_slice(b"\\r"),
        '\t' => out.extend_from_slice(b"\\t"),
        '\u{8}' => out.extend_from_slice(b"\\b"),
        '\u{c}' => out.extend_from_slice(b"\\f"),
        c if c < ' ' || (ascii && !c.is_ascii()) => {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                push_lone(out, *unit, Lone::Escape);
            }
        }
        c => push_char(out, c),
    }
}

fn hex4(digits: &[u8]) -> Option<u16> {
    if digits.len() != 4 {
        return None;
    }
    digits.iter().try_fold(0u16, |n, &d| {
        Some(n << 4 | u16::try_from(char::from(d).to_digit(16)?).ok()?)
    })
}

/// The code unit of a `\uXXXX` escape that is all of `escape`.
fn escaped_unit(escape: &str) -> Option<u16> {
    hex4(escape.strip_prefix("\\u")?.as_bytes())
}

/// Whether the JSON string literal `raw` starts with a low surrogate's escape.
fn starts_with_low_half(raw: &str) -> bool {
    raw.get(1..7)
        .and_then(escaped_unit)
        .is_some_and(|unit| (0xDC00..0xE000).contains(&unit))
}

/// Whether `fragment` (decoded alone, `pending` its own trailing half) resends the fragment
/// that left `held`: it starts with that text, followed by the held half, now paired with its
/// low half or again trailing.
fn resends(held: &Held, fragment: &[u8], pending: Option<u16>) -> bool {
    let Some(rest) = fragment.strip_prefix(&held.before[..]) else {
        return false;
    };
    if held.before.is_empty() {
        return false;
    }
    if rest.is_empty() {
        return pending == Some(held.unit);
    }
    let first = rest
        .get(..4)
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|s| s.chars().next());
    first.is_some_and(|c| {
        let mut units = [0u16; 2];
        c.encode_utf16(&mut units).len() == 2 && units[0] == held.unit
    })
}

/// Decode the JSON string literal `raw` (quotes included; `serde_json` has validated it) onto
/// `out`. `pending` is a high surrogate held from the previous fragment of the same text; on
/// return it holds this fragment's trailing unpaired high surrogate, if any.
fn unescape(raw: &str, out: &mut Vec<u8>, pending: &mut Option<u16>, lone: Lone) {
    let bytes = raw.as_bytes();
    let inner = bytes
        .get(1..bytes.len().saturating_sub(1))
        .unwrap_or_default();
    let mut i = 0;
    while i < inner.len() {
        let next = memchr(b'\\', &inner[i..]).map_or(inner.len(), |n| i + n);
        if next > i {
            if let Some(unit) = pending.take() {
                push_lone(out, unit, lone);
            }
            out.extend_from_slice(&inner[i..next]);
        }
        if next >= inner.len() {
            break;
        }
        let simple = match inner.get(next + 1) {
            Some(b'n') => Some(b'\n'),
            Some(b't') => Some(b'\t'),
            Some(b'r') => Some(b'\r'),
            Some(b'b') => Some(0x08),
            Some(b'f') => Some(0x0C),
            Some(&c @ (b'"' | b'\\' | b'/')) => Some(c),
            _ => None,
        };
        if let Some(c) = simple {
            if let Some(unit) = pending.take() {
                push_lone(out, unit, lone);
            }
            out.push(c);
            i = next + 2;
            continue;
        }
        let Some(unit) = inner.get(next + 2..next + 6).and_then(hex4) else {
            // Not reachable for validated JSON; keep the bytes rather than lose them.
            out.push(b'\\');
            i = next + 1;
            continue;
        };
        i = next + 6;
        match unit {
            0xD800..=0xDBFF => {
                if let Some(prev) = pending.replace(unit) {
                    push_lone(out, prev, lone);
                }
            }
            0xDC00..=0xDFFF => match pending.take() {
                Some(high) => {
                    let c =
                        0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                    push_char(
                        out,
                        char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER),
                    );
                }
                None => push_lone(out, unit, lone),
            },
            _ => {
                if let Some(prev) = pending.take() {
                    push_lone(out, prev, lone);
                }
                push_char(
                    out,
                    char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER),
                );
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::{
        unescape, wire_index, Action, Arguments, Block, Decoder, Envelope, Function, Lone, Str,
    };
    use serde_json::value::RawValue;

    /// The assembler's answers to a decoder, reduced to the byte budget of one response: what
    /// calls are fed and what is set aside count against `limit`; past it the response is
    /// refused, and nothing more is kept.
    pub(in crate::envelope) struct Budget {
        pub limit: usize,
        /// Bytes fed to calls (not given back) and set aside (until released).
        pub counted: usize,
        pub refused: bool,
    }

    impl Budget {
        pub fn new(limit: usize) -> Self {
            Self {
                limit,
                counted: 0,
                refused: false,
            }
        }

        fn fits(&mut self, n: usize) -> bool {
            if self.refused || self.counted + n > self.limit {
                self.refused = true;
                return false;
            }
            true
        }

        pub fn answer(&mut self, action: Action<'_>) -> bool {
            match action {
                Action::SetAside { bytes, .. } | Action::HoldFragment(bytes) => {
                    let kept = self.fits(bytes);
                    if kept {
                        self.counted += bytes;
                    }
                    kept
                }
                Action::Release(n) => {
                    self.counted -= n;
                    !self.refused
                }
                Action::HoldReasoning(n) => {
                    let kept = self.fits(n);
                    if kept {
                        self.counted += n;
                    }
                    kept
                }
                Action::Held(n) => !self.refused && self.counted + n <= self.limit,
                Action::Call {
                    delta:
                        crate::assembler::Delta {
                            arguments: Some(Arguments::Text(t) | Arguments::Value(t)),
                            ..
                        },
                    ..
                } => {
                    if self.fits(t.len()) {
                        self.counted += t.len();
                    }
                    !self.refused
                }
                _ => !self.refused,
            }
        }

        /// Decodes one event's data, answering as the assembler would.
        pub fn decode(&mut self, decoder: &mut Decoder, data: &str) {
            decoder
                .decode(b"", data.as_bytes(), &mut |a| self.answer(a))
                .expect("event");
        }
    }

    fn anthropic_block(index: usize, input: &str) -> String {
        format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"tool_use","id":"t{index}","name":"f","input":{input}}}}}"#
        )
    }

    #[test]
    fn anthropic_inputs_held_stay_within_the_stream_limit() {
        // 200 blocks that start with 1,000 bytes of input each and never stop: what the decoder
        // holds never passes the 3,500 bytes of the limit, and once the response is refused a
        // block keeps nothing.
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(3500);
        let input = format!(r#"{{"text":"{}"}}"#, "x".repeat(989));
        let mut blocks_when_refused = None;
        for i in 0..200 {
            budget.decode(&mut decoder, &anthropic_block(i, &input));
            assert!(decoder.set_aside_bytes() <= budget.limit);
            assert!(decoder.set_aside_bytes() <= budget.counted);
            if budget.refused {
                let blocks = *blocks_when_refused.get_or_insert(decoder.blocks.len());
                assert_eq!(decoder.blocks.len(), blocks);
            }
        }
        assert!(budget.refused);
        assert_eq!(decoder.set_aside_bytes(), input.len() * 3);
    }

    #[test]
    fn anthropic_input_is_given_back_at_the_first_fragment_or_when_fed() {
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(1000);
        let input = format!(r#"{{"text":"{}"}}"#, "x".repeat(589));
        budget.decode(&mut decoder, &anthropic_block(0, &input));
        assert_eq!(decoder.set_aside_bytes(), 600);
        // Whitespace as sent is not held: the value as it will be fed is.
        budget.decode(&mut decoder, &anthropic_block(1, r#" { "a" : 1 } "#));
        assert_eq!(decoder.set_aside_bytes(), 600 + r#"{"a":1}"#.len());
        // An empty first fragment leaves the input in place; a real one lets it go.
        for fragment in ["", "{}"] {
            budget.decode(
                &mut decoder,
                &format!(
                    r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"input_json_delta","partial_json":"{fragment}"}}}}"#
                ),
            );
        }
        assert_eq!(decoder.set_aside_bytes(), r#"{"a":1}"#.len());
        // Block 1 stops without fragments: its input is fed, given back first.
        budget.decode(&mut decoder, r#"{"type":"content_block_stop","index":1}"#);
        assert_eq!(decoder.set_aside_bytes(), 0);
        assert_eq!(budget.counted, 2 + r#"{"a":1}"#.len());
        assert!(!budget.refused);
    }

    #[test]
    fn responses_added_arguments_held_stay_within_the_stream_limit() {
        // 200 items announced with 1,000 bytes of arguments each: checked one at a time, each
        // fitted the limit of 3,500 bytes. They are summed now, and once the response is
        // refused, deltas for ever-new items make no item state.
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(3500);
        let arguments = format!(r#"{{\"text\":\"{}\"}}"#, "x".repeat(989));
        for i in 0..200 {
            budget.decode(
                &mut decoder,
                &format!(
                    r#"{{"type":"response.output_item.added","output_index":{i},"item":{{"type":"function_call","id":"fc_{i}","call_id":"c{i}","name":"f","arguments":"{arguments}"}}}}"#
                ),
            );
            assert!(decoder.set_aside_bytes() <= budget.limit);
        }
        assert!(budget.refused);
        assert_eq!(decoder.set_aside_bytes(), 3000);
        let items = decoder.items.len();
        for i in 200..1200 {
            budget.decode(
                &mut decoder,
                &format!(
                    r#"{{"type":"response.function_call_arguments.delta","item_id":"fc_{i}","output_index":{i},"delta":"{{}}"}}"#
                ),
            );
        }
        assert_eq!(decoder.items.len(), items);
    }

    /// A Chat chunk with one argument fragment (JSON string contents) for the call at `index`.
    fn chat_fragment(index: usize, fragment: &str) -> String {
        format!(
            r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":{index},"function":{{"arguments":"{fragment}"}}}}]}}}}]}}"#
        )
    }

    #[test]
    fn chat_fragments_held_for_a_surrogate_half_stay_within_the_stream_limit() {
        // 200 new indexes, each a 1,000-byte fragment ending in a high surrogate half whose
        // low half never comes: each was held whole, counted against no limit. They are
        // counted now; once the response is refused, none is held.
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(3500);
        let fragment = format!("{}\\ud83d", "x".repeat(1000));
        for i in 0..200 {
            budget.decode(&mut decoder, &chat_fragment(i, &fragment));
            assert!(decoder.set_aside_bytes() <= budget.limit);
            assert!(decoder.set_aside_bytes() <= budget.counted);
            assert!(decoder.held.len() <= 3);
        }
        assert!(budget.refused);
        assert_eq!(decoder.set_aside_bytes(), 3000);
        decoder.finish(&mut |a| budget.answer(a));
        assert_eq!(decoder.set_aside_bytes(), 0);
        assert!(decoder.held.is_empty());
    }

    /// The argument text each wire index was fed, in order.
    fn fed(decoder: &mut Decoder, budget: &mut Budget, events: &[String]) -> Vec<(i64, String)> {
        let mut out: Vec<(i64, String)> = Vec::new();
        let mut at: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        let mut answer = |a: Action<'_>| {
            if let Action::Call {
                delta:
                    crate::assembler::Delta {
                        index: Some(i),
                        arguments: Some(Arguments::Text(t)),
                        ..
                    },
                ..
            } = a
            {
                let text = String::from_utf8_lossy(t);
                match at.get(&i) {
                    Some(&p) => out[p].1.push_str(&text),
                    None => {
                        at.insert(i, out.len());
                        out.push((i, text.into_owned()));
                    }
                }
            }
            budget.answer(a)
        };
        for event in events {
            decoder
                .decode(b"", event.as_bytes(), &mut answer)
                .expect("event");
        }
        decoder.finish(&mut answer);
        out
    }

    #[test]
    fn fragments_held_for_a_surrogate_half_count_only_while_held() {
        // A pair split between fragments, and a cumulative resend (quirk 19) of a held
        // fragment: what was held is given back before it is fed or replaced, so the stream
        // counts what it feeds, once, and the text is as before.
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(1000);
        let events = [
            chat_fragment(0, "{\\\"a\\\":\\\"\\ud83d"),
            chat_fragment(0, "\\ude00\\\"}"),
            chat_fragment(1, "{\\\"b\\\":\\\"x\\ud83d"),
            chat_fragment(1, "{\\\"b\\\":\\\"x\\ud83d\\ude00\\\"}"),
        ];
        let out = fed(&mut decoder, &mut budget, &events);
        assert_eq!(
            out,
            [
                (0, "{\"a\":\"\u{1f600}\"}".to_owned()),
                (1, "{\"b\":\"x\u{1f600}\"}".to_owned()),
            ]
        );
        assert!(!budget.refused);
        assert_eq!(
            budget.counted,
            out.iter().map(|(_, t)| t.len()).sum::<usize>()
        );
        assert_eq!(decoder.set_aside_bytes(), 0);
    }

    #[test]
    fn a_low_half_after_a_held_fragment_starting_with_escape_text_is_no_resend() {
        // The held fragment starts with the text `\ude00` (an escape in the arguments) and
        // ends with a high half; the next starts with the low half, which decoded alone reads
        // as the same bytes: taken for a resend, the held text was dropped.
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(1000);
        let events = [
            chat_fragment(0, "{\\\"s\\\":\\\"\\\\ud83d"),
            chat_fragment(0, "\\\\ude00\\ud83d"),
            chat_fragment(0, "\\ude00\\ud83d\\ude00\\\"}"),
        ];
        let out = fed(&mut decoder, &mut budget, &events);
        let text: String = out.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(text, "{\"s\":\"\\ud83d\\ude00\u{1f600}\u{1f600}\"}");
    }

    #[test]
    fn a_fragment_refused_a_hold_is_handed_on_with_its_half_escaped() {
        // Past the limit nothing is held: the fragment goes on at once, its half unpaired, and
        // the next fragment's low half is unpaired too.
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(10);
        let events = [
            chat_fragment(0, "0123456789ab\\ud83d"),
            chat_fragment(0, "\\ude00"),
        ];
        let out = fed(&mut decoder, &mut budget, &events);
        assert!(budget.refused);
        assert_eq!(out, [(0, "0123456789ab\\ud83d\\ude00".to_owned())]);
        assert!(decoder.held.is_empty());
        assert_eq!(decoder.set_aside_bytes(), 0);
    }

    #[test]
    fn halves_held_under_many_indexes_are_each_found() {
        // 20,000 calls each holding a half (a scan of the held halves per fragment made this
        // quadratic: seconds, not milliseconds), paired in reverse order, and the halves
        // still held at the end written back in the order they were held.
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(usize::MAX / 2);
        let n = 20_000;
        let mut events: Vec<String> = (0..n).map(|i| chat_fragment(i, "\\ud83d")).collect();
        events.extend((2..n).rev().map(|i| chat_fragment(i, "\\ude00")));
        let out = fed(&mut decoder, &mut budget, &events);
        let lone = out.iter().filter(|(_, t)| t == "\\ud83d").count();
        let paired = out.iter().filter(|(_, t)| t == "\u{1f600}").count();
        assert_eq!((lone, paired), (2, n - 2));
        let last: Vec<_> = out[n - 2..].iter().map(|(i, _)| *i).collect();
        assert_eq!(last, [0, 1]);
        assert!(decoder.held.is_empty());
    }

    /// The argument text a Chat stream of `entries` (tool-call entry JSON, one per chunk) hands
    /// on, joined, the stream finished.
    fn chat_text(entries: &[&str]) -> String {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        let mut answer = |a: Action<'_>| {
            if let Action::Call {
                delta:
                    crate::assembler::Delta {
                        arguments: Some(Arguments::Text(t)),
                        ..
                    },
                ..
            } = a
            {
                out.extend_from_slice(t);
            }
            true
        };
        for entry in entries {
            let chunk =
                format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{entry}]}}}}]}}"#);
            decoder
                .decode(b"", chunk.as_bytes(), &mut answer)
                .expect("event");
        }
        decoder.finish(&mut answer);
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn a_chat_custom_input_s_unpaired_surrogate_is_u_fffd_and_a_split_pair_is_joined() {
        // Free-form text, not JSON: as a Responses custom call's input, not `\ud83d` text.
        let custom = |input: &str| format!(r#"{{"index":0,"custom":{{"input":"{input}"}}}}"#);
        let start = r#"{"index":0,"id":"c","type":"custom","custom":{"name":"t","input":""}}"#;
        let text = |inputs: &[&str]| {
            let entries: Vec<String> = inputs.iter().map(|i| custom(i)).collect();
            let mut all = vec![start];
            all.extend(entries.iter().map(String::as_str));
            chat_text(&all)
        };
        assert_eq!(text(&["a\\ud83d b"]), "a\u{fffd} b");
        assert_eq!(text(&["a\\ud83d", "\\ude00b"]), "a\u{1f600}b");
        // Held at the end, or followed by no low half: U+FFFD, once.
        assert_eq!(text(&["a\\ud83d"]), "a\u{fffd}");
        assert_eq!(text(&["a\\ud83d", "b"]), "a\u{fffd}b");
        assert_eq!(text(&["\\ude00"]), "\u{fffd}");
        // Typed text that reads as an escape is kept as typed; a function's arguments keep
        // the escape, which the scanner reports.
        assert_eq!(text(&["\\\\ud83d"]), "\\ud83d");
        let function = r#"{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"\ud83d"}}"#;
        assert_eq!(chat_text(&[function]), "\\ud83d");
    }

    /// What a Responses `event` makes the decoder hand on for arguments: `("text", ..)` for a
    /// fragment, `("summary", ..)` for a summary the assembler compares with the call.
    fn argument_actions(decoder: &mut Decoder, event: &str) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let mut answer = |a: Action<'_>| {
            match a {
                Action::Call {
                    delta:
                        crate::assembler::Delta {
                            arguments: Some(Arguments::Text(t)),
                            ..
                        },
                    ..
                } => out.push(("text", String::from_utf8_lossy(t).into_owned())),
                Action::ArgumentsSummary(_, t) => {
                    out.push(("summary", String::from_utf8_lossy(t).into_owned()));
                }
                _ => {}
            }
            true
        };
        decoder
            .decode(b"", event.as_bytes(), &mut answer)
            .expect("event");
        out
    }

    #[test]
    fn a_summary_is_the_text_of_an_item_that_got_none_of_its_own() {
        // A call sent again after it ended, with only its summaries (the same item, or another
        // item under the same `call_id`): its first summary is that rendition's text, fed as a
        // fragment, so the assembler's replay rules judge it (dropped as the same bytes, a
        // call of its own otherwise). Compared with the call instead, a respaced rendition
        // was the first one's tokens and was dropped without a word. The summary after it is
        // compared, as any summary of an item with text is.
        for (item_id, output_index) in [("fc_1", 0), ("fc_2", 1)] {
            let mut decoder = Decoder::new();
            let item = |id: &str, at: i64, kind: &str, arguments: &str| {
                format!(
                    r#"{{"type":"response.output_item.{kind}","output_index":{at},"item":{{"type":"function_call","id":"{id}","call_id":"call_1","name":"f","arguments":"{arguments}"}}}}"#
                )
            };
            let done = |id: &str, at: i64, arguments: &str| {
                format!(
                    r#"{{"type":"response.function_call_arguments.done","item_id":"{id}","output_index":{at},"arguments":"{arguments}"}}"#
                )
            };
            let delta = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"a\": 1}"}"#;
            let first = [
                (item("fc_1", 0, "added", ""), vec![]),
                (delta.to_owned(), vec![("text", r#"{"a": 1}"#)]),
                (
                    done("fc_1", 0, r#"{\"a\": 1}"#),
                    vec![("summary", r#"{"a": 1}"#)],
                ),
                (
                    item("fc_1", 0, "done", r#"{\"a\": 1}"#),
                    vec![("summary", r#"{"a": 1}"#)],
                ),
            ];
            let again = [
                (item(item_id, output_index, "added", ""), vec![]),
                (
                    done(item_id, output_index, r#"{\"a\":1}"#),
                    vec![("text", r#"{"a":1}"#)],
                ),
                (
                    item(item_id, output_index, "done", r#"{\"a\":1}"#),
                    vec![("summary", r#"{"a":1}"#)],
                ),
            ];
            for (event, want) in first.iter().chain(again.iter()) {
                let got = argument_actions(&mut decoder, event);
                let want: Vec<(&str, String)> =
                    want.iter().map(|&(k, t)| (k, t.to_owned())).collect();
                assert_eq!(got, want, "{item_id}: {event}");
            }
        }
    }

    #[test]
    fn arguments_an_ended_item_carries_again_are_its_text() {
        // Its header comes again carrying the arguments, then its `output_item.done`: the
        // summary finds the arguments set aside and, the item having no text of its own, is
        // fed as its text in their place.
        let mut decoder = Decoder::new();
        let item = |kind: &str, arguments: &str| {
            format!(
                r#"{{"type":"response.output_item.{kind}","output_index":0,"item":{{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{arguments}"}}}}"#
            )
        };
        assert!(argument_actions(&mut decoder, &item("added", "")).is_empty());
        let first = argument_actions(&mut decoder, &item("done", r#"{\"a\": 1}"#));
        assert_eq!(first, [("text", r#"{"a": 1}"#.to_owned())]);
        assert!(argument_actions(&mut decoder, &item("added", r#"{\"a\":1}"#)).is_empty());
        assert_eq!(decoder.set_aside_bytes(), r#"{"a":1}"#.len());
        let again = argument_actions(&mut decoder, &item("done", r#"{\"a\":1}"#));
        assert_eq!(again, [("text", r#"{"a":1}"#.to_owned())]);
        assert_eq!(decoder.set_aside_bytes(), 0);
    }

    fn un(raw: &str) -> String {
        let mut out = Vec::new();
        let mut pending = None;
        unescape(raw, &mut out, &mut pending, Lone::Escape);
        assert!(pending.is_none());
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn repeated_members_keep_their_last_value() {
        // As `json.loads` reads them: an earlier value, of any type for a deferred member, is
        // dropped; keys are compared unescaped; unknown members are skipped however often.
        let text = r#"{"type":1,"choices":[],"x":1,"x":[],"output_index":["0"],
            "choices":[{"index":"a","index":2,"delta":{"content":"a","content":"b"},
                "delta":{"content":"c","tool_calls":[],"tool_calls":[{"function":{"name":"f",
                "name":"g","arguments":"{}"}}]}}],"\u0074ype":"t","output_index":3}"#;
        let env: Envelope<'_> = serde_json::from_str(text).expect("read");
        assert_eq!(super::string(env.kind).as_deref(), Some("t"));
        assert_eq!(env.output_index, Some(3));
        let choices = env.choices.expect("choices");
        let [choice] = choices.as_slice() else {
            panic!("one choice")
        };
        assert_eq!(choice.index, Some(2));
        let delta = choice.delta.as_ref().expect("delta");
        assert_eq!(super::string(delta.content).as_deref(), Some("c"));
        let calls = delta.tool_calls.as_ref().expect("tool calls");
        let [Some(call)] = calls.as_slice() else {
            panic!("one call")
        };
        let function = call.function.as_ref().expect("function");
        assert_eq!(super::string(function.name).as_deref(), Some("g"));

        let block: Block<'_> =
            serde_json::from_str(r#"{"type":null,"name":5,"type":"tool_use","name":"n"}"#)
                .expect("read");
        assert_eq!(
            (block.kind.as_str(), block.name.as_ref().map(Str::as_str)),
            ("tool_use", Some("n"))
        );
        // The last value decides: a `type` that ends `null` or missing is still refused.
        assert!(serde_json::from_str::<Block<'_>>(r#"{"type":"tool_use","type":null}"#).is_err());
        assert!(serde_json::from_str::<Block<'_>>(r#"{"name":"n"}"#).is_err());
        // Only an object is read as one (the derive took an array as the fields in order).
        assert!(serde_json::from_str::<Function<'_>>(r#"["f","{}"]"#).is_err());
    }

    #[test]
    fn a_hot_path_member_s_earlier_value_of_another_type_is_dropped() {
        // The Chat members read directly (`choices`, `delta`, `tool_calls`, `function`): an
        // earlier copy of any other JSON type is dropped as `json.loads` drops it, and only a
        // last value of the wrong type makes the event malformed.
        let chunk = |choices: &str, delta: &str, calls: &str, function: &str| {
            format!(
                r#"{{"choices":{choices},"choices":[{{"index":0,"delta":{delta},"delta":{{"tool_calls":{calls},"tool_calls":[{{"index":0,"function":{function},"function":{{"name":"g","arguments":"{{}}"}}}}]}}}}]}}"#
            )
        };
        let others = [
            "null",
            "true",
            "5",
            "-1.5e3",
            "\"x\"",
            "{}",
            "{\"a\":[1]}",
            "[]",
            "[{}]",
        ];
        for other in others {
            for text in [
                chunk(other, "{}", "[]", "{}"),
                chunk("[]", other, "[]", "{}"),
                chunk("[]", "{}", other, "{}"),
                chunk("[]", "{}", "[]", other),
            ] {
                let env: Envelope<'_> = serde_json::from_str(&text).expect(&text);
                let choices = env.choices.expect("choices");
                let [choice] = choices.as_slice() else {
                    panic!("{text}: one choice")
                };
                let delta = choice.delta.as_ref().expect("delta");
                let calls = delta.tool_calls.as_ref().expect("tool calls");
                let [Some(call)] = calls.as_slice() else {
                    panic!("{text}: one call")
                };
                let function = call.function.as_ref().expect("function");
                assert_eq!(super::string(function.name).as_deref(), Some("g"), "{text}");
            }
        }
        // A last value of another type is still refused (a number included, which serde_json
        // hands on as a map of its own); `null` is no value.
        for last in ["true", "5", "1.5", "\"x\""] {
            for (member, before) in [
                ("choices", "[]"),
                ("delta", "{}"),
                ("tool_calls", "[]"),
                ("function", "{}"),
            ] {
                let text = format!(r#"{{"{member}":{before},"{member}":{last}}}"#);
                let error = match member {
                    "choices" => serde_json::from_str::<Envelope<'_>>(&text).err(),
                    "delta" => serde_json::from_str::<super::Choice<'_>>(&text).err(),
                    "tool_calls" => serde_json::from_str::<super::ChatDelta<'_>>(&text).err(),
                    _ => serde_json::from_str::<super::ToolCallEntry<'_>>(&text).err(),
                };
                assert!(error.is_some(), "{text}");
            }
        }
        let object = r#"{"choices":[[]],"choices":{}}"#;
        assert!(serde_json::from_str::<Envelope<'_>>(object).is_err());
        let array = r#"{"delta":{},"delta":[{}]}"#;
        assert!(serde_json::from_str::<super::Choice<'_>>(array).is_err());
        let none = r#"{"delta":{},"delta":null}"#;
        let choice: super::Choice<'_> = serde_json::from_str(none).expect("read");
        assert!(choice.delta.is_none());
    }

    #[test]
    fn unescape_matches_serde() {
        for raw in [
            r#""""#,
            r#""plain""#,
            r#""{\"a\":1}""#,
            r#""\n\t\r\b\f\/\\\"""#,
            r#""\u00e9\u4e2d\ud83d\ude00x""#,
            r#""é中😀""#,
        ] {
            let want: String = serde_json::from_str(raw).unwrap_or_default();
            assert_eq!(un(raw), want, "{raw}");
        }
    }

    #[test]
    fn wire_index_reads_what_the_sdk_reads() {
        let read = |json: &str| {
            let raw: Box<RawValue> = serde_json::from_str(json).expect("json");
            wire_index(Some(&raw))
        };
        for (json, want) in [
            ("3", Some(3)),
            ("true", Some(1)),
            ("false", Some(0)),
            ("1.0", Some(1)),
            ("-0.0", Some(0)),
            ("1e2", Some(100)),
            ("1.5", None),
            ("1e300", None),
            ("9223372036854775808", None),
            ("-9223372036854775809", None),
            (r#""0""#, Some(0)),
            (r#"" 2\n""#, Some(2)),
            (r#""+4""#, Some(4)),
            (r#""-3""#, Some(-3)),
            (r#""1_000""#, Some(1000)),
            (r#""1.00""#, Some(1)),
            (r#""1.""#, None),
            (r#""1.5""#, None),
            (r#""1__0""#, None),
            (r#""_1""#, None),
            (r#""1e2""#, None),
            (r#""x""#, None),
            (r#""""#, None),
            ("null", None),
            ("[0]", None),
        ] {
            assert_eq!(read(json), want, "{json}");
        }
    }

    #[test]
    fn split_surrogate_pair_is_joined() {
        let mut out = Vec::new();
        let mut pending = None;
        unescape(r#""a\ud83d""#, &mut out, &mut pending, Lone::Escape);
        assert_eq!(out, b"a");
        assert_eq!(pending, Some(0xD83D));
        unescape(r#""\ude00b""#, &mut out, &mut pending, Lone::Escape);
        assert_eq!(String::from_utf8_lossy(&out), "a😀b");
    }

    #[test]
    fn lone_surrogate_is_written_back_as_escape() {
        assert_eq!(un(r#""x\udc00y""#), r"x\udc00y");
        let mut out = Vec::new();
        let mut pending = None;
        unescape(r#""\ud83dz""#, &mut out, &mut pending, Lone::Replace);
        assert_eq!(String::from_utf8_lossy(&out), "\u{FFFD}z");
    }

    /// What a decoder emits for one event: calls as (index, id), metadata as (index, key,
    /// value as sent); other actions left out.
    fn chat_calls_and_metadata(data: &str) -> Vec<(Option<i64>, String, String)> {
        let mut out = Vec::new();
        Decoder::new()
            .decode(b"", data.as_bytes(), &mut |action| {
                match action {
                    Action::Call { delta, .. } => out.push((
                        delta.index,
                        "call".to_owned(),
                        delta.id.unwrap_or_default().to_owned(),
                    )),
                    Action::Metadata { index, key, json } => {
                        out.push((index, key.to_owned(), json.to_owned()));
                    }
                    _ => {}
                }
                true
            })
            .expect("event");
        out
    }

    #[test]
    fn a_tool_call_entry_notes_members_of_other_names_only() {
        let read = |json: &str| -> bool {
            serde_json::from_str::<super::ToolCallEntry<'_>>(json)
                .expect(json)
                .other
        };
        assert!(!read(
            r#"{"index":0,"id":"c","type":"function","function":{"name":"f","x":1}}"#
        ));
        // An escaped name of the entry's own is that member.
        assert!(!read(r#"{"\u0069d":"c","index":0}"#));
        assert!(read(r#"{"index":0,"extra_content":{}}"#));
        assert!(read(r#"{"index":0,"foo":null}"#));
    }

    #[test]
    fn a_chat_entry_s_other_members_follow_its_call_as_metadata() {
        // In the order the names first come, each with its last value; a `null` last value is
        // no metadata; members inside `function` are the function's, not the call's.
        let data = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"b":1,"id":"c1","type":"function","a":"x","function":{"name":"f","arguments":"{}","y":2},"b":{"k":[2]},"a":null,"c":null,"c":3,"d\u00e9":true,"extra_content":{"google":{}}}]}}]}"#;
        let want = [
            (Some(0), "call", "c1"),
            (Some(0), "b", r#"{"k":[2]}"#),
            (Some(0), "c", "3"),
            (Some(0), "dé", "true"),
            (Some(0), "extra_content", r#"{"google":{}}"#),
        ];
        let got = chat_calls_and_metadata(data);
        let got: Vec<_> = got
            .iter()
            .map(|(i, k, v)| (*i, k.as_str(), v.as_str()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_chat_entry_of_other_members_alone_opens_no_call() {
        let data = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"thought_signature":"s","id":null,"function":null}]}}]}"#;
        assert_eq!(
            chat_calls_and_metadata(data),
            [(Some(3), "thought_signature".to_owned(), r#""s""#.to_owned())]
        );
        // Members whose last value is `null` carry nothing: the entry is a delta as without them.
        let data = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"x":null}]}}]}"#;
        assert_eq!(
            chat_calls_and_metadata(data),
            [(Some(3), "call".to_owned(), String::new())]
        );
    }

    #[test]
    fn a_chat_entry_s_members_are_read_from_that_entry() {
        // A choice not assembled comes first, and a `null` entry and an entry without members
        // come before the ones that have some: each call gets its own entry's members.
        let data = r#"{"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"z","q":0}]}},{"index":0,"delta":{"tool_calls":[null,{"index":0,"id":"c0"},{"index":1,"id":"c1","a":1},{"index":2,"id":"c2","b":2}]}}]}"#;
        let got = chat_calls_and_metadata(data);
        let got: Vec<_> = got
            .iter()
            .map(|(i, k, v)| (*i, k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (Some(0), "call", "c0"),
                (Some(1), "call", "c1"),
                (Some(1), "a", "1"),
                (Some(2), "call", "c2"),
                (Some(2), "b", "2"),
            ]
        );
    }

    #[test]
    fn names_with_unpaired_surrogates_keep_the_chunk_and_are_metadata_keys() {
        // serde_json refuses such a name where the envelope reads it (here: the chunk's, the
        // function's, the entry's), and the whole chunk was skipped. Read as `json.loads` reads
        // it, an entry's name is a metadata key with U+FFFD for the half; `"k\ud800"` and
        // `"k\ufffd"` are two members, the first's value kept, the second's `null` dropped.
        let data = r#"{"x\ud800":1,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}","\udc00":2},"k\ud800":[1],"k\ufffd":null,"m":{"n\ud800":3}}]}}]}"#;
        let want = [
            (Some(0), "call", "c1"),
            (Some(0), "k\u{FFFD}", "[1]"),
            (Some(0), "m", r#"{"n\ud800":3}"#),
        ];
        let want = want.map(|(i, k, v)| (i, k.to_owned(), v.to_owned()));
        assert_eq!(chat_calls_and_metadata(data), want);
    }

    #[test]
    fn many_repeated_members_are_kept_once_each() {
        // Thousands of names, each sent twice: one per name, with its last value.
        let members: String = (0..20_000)
            .map(|i| format!(r#","m{}":{i}"#, i % 10_000))
            .collect();
        let data = format!(
            r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"c"{members}}}]}}}}]}}"#
        );
        let got = chat_calls_and_metadata(&data);
        assert_eq!(got.len(), 1 + 10_000);
        assert_eq!(got[1], (Some(0), "m0".to_owned(), "10000".to_owned()));
        assert_eq!(
            got[10_000],
            (Some(0), "m9999".to_owned(), "19999".to_owned())
        );
    }
}
