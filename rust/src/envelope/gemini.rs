//! Gemini native API chunks (`GenerateContentResponse`, the data-only SSE of
//! `streamGenerateContent?alt=sse`) to [`Action`]s: the raw path's twin of the `feed_chunk`
//! adapter `python/toolwire/formats/gemini.py`, whose design notes are the specification. Each
//! chunk drives the assembler with the same deltas, metadata, stops and limits as the adapter
//! drives its sink, so both ways in give the same calls.
//!
//! Design notes
//! - Only Gemini chunks pay for Gemini: the [`Envelope`] holds three more borrowed fields
//!   (`candidates`, `usageMetadata`, `promptFeedback`), absent from every other format's events,
//!   and the per-stream state is boxed and made on the first Gemini chunk.
//! - The chunk is parsed whole before any action is emitted (a malformed chunk changes
//!   nothing): candidate 0's parts are collected first, one small `Vec` per Gemini chunk.
//! - Fields are read as the adapter reads a dict: one of the wrong type is absent (a
//!   `candidates` that is no list, a part that is no object), never a malformed event; a
//!   `functionCall` that is no object is a call without fields. The REST spelling (camelCase) is
//!   read, as Google's servers send it; the adapter also reads the snake_case of `model_dump()`.
//! - Every `functionCall` part is one whole call under its own running key, reported as its
//!   `index`. Quirk 33: a name-only part followed by a part without a name is one call; alone,
//!   it becomes `{}` when another call starts or the candidate stops naturally, and stays
//!   without arguments at the output limit (the core makes it `truncated`). When the body ends
//!   with one still open, no finish reason came after it: the stream broke off, and the
//!   assembler is interrupted, as `assemble` interrupts it when the connection drops.
//! - `args` is the complete value (quirk 23), written by [`canonical`] as `json.dumps` writes
//!   the value the SDK decoded: the same text, except number lexemes, kept as sent (`1.0`, `1e5`,
//!   `-0.0`, where Python writes `1.0`, `100000.0`, `-0.0` after `json.loads`; `1e5` and `1E5`
//!   differ), and repeated keys, kept (the scanner reports `duplicate_key`, where `json.loads`
//!   keeps the last). A string `args` is argument text, a scalar its JSON text.
//! - Vertex AI's streamed arguments (`partialArgs` pieces, `willContinue`) are merged as the
//!   adapter merges them (`partial_args.rs`) and fed when the call closes, or cut (`truncated`)
//!   by the limit, another call or the end of the body; pieces that do not make one object end
//!   it `mixed_arguments`. A lone surrogate is held (`partial_args.rs`) and written back as its
//!   escape, so that the call ends `lone_surrogate` where the adapter's does. A piece that
//!   Python reads where Rust cannot follow (an infinite number in `args`, a non-ASCII digit in
//!   a path) is never guessed: that call ends `lost_event` and never runs. A surrogate pair cut
//!   between two pieces of a string is read, as one character. With progress tracking
//!   ([`Decoder::set_track_progress`]), each value merged is reported as it arrives
//!   ([`Action::Progress`]), so that a progressive view sees the arguments stream, until a
//!   piece is refused ([`Action::StopProgress`]); without it, a merge reports nothing and costs
//!   what it cost before.
//! - A name with an unpaired surrogate escape (`"k\ud800"`), which `json.loads` takes, in a
//!   candidate, its content, a part, a call, a piece or the prompt feedback: those objects are
//!   read after the chunk, each from its own text, and serde_json refuses it there. Only then
//!   ([`made_whole`]) is the chunk made whole as its first read is (`lone_keys`), the name
//!   U+FFFD, and read again: a refused chunk lost its calls, or a blocked prompt's stop.
//! - Thought signatures (quirk 31) go to the call of their part, else (a signature-only part) to
//!   the last call while no text came after it, else to the text block it follows, else to the
//!   next call; as metadata `thought_signature`, the JSON text of the base64 string. One on a
//!   text part, or a signature-only part after text, goes with that text block's place
//!   ([`Action::TextSignature`]), and ends the block: the next turn sends it on its part. One
//!   that none of them takes (a second one after signed text, one before text, one that no call
//!   followed when the candidate finished) is an empty text block of its own ([`signed_part`]).
//! - The first text part, and the first after a call, a thought part or a signed text part,
//!   starts a block of text ([`Action::TextBlock`]), whose place among the calls the next turn
//!   keeps; text parts in a row are one block (a stream cuts one text into parts), thought parts
//!   are no text.
//! - Thought parts in a row are one thought, kept for the next turn
//!   ([`Reasoning::GeminiThought`](super::Reasoning::GeminiThought)) once another part, a
//!   signature on one of them (its last), the finish reason or the end of the body ends it; held
//!   and counted as Anthropic thinking is, and let go at an error chunk. A call after some gets
//!   their number as metadata `reasoning_before`.

use std::borrow::Cow;

use memchr::memchr;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::lone_keys::{whole_names_within, whole_strings, Refusal};
use super::partial_args::{Merge, Piece, Report, Streamed};
use super::thinking::{drop_thought, Thought};
use super::{
    args, call, canonical, decode_owned, json_string, raw_str, still_kept, string, Action,
    Arguments, Decoder, Envelope, EventError, Few, FinishReason, Lone,
};
use crate::progress::Recorded;
use crate::tokens::same_tokens;

/// The metadata key of a call's thought signature.
const SIGNATURE: &str = "thought_signature";

/// Gemini's own finish reasons after which no call may run, beyond the filters every format
/// shares ([`FinishReason::stops_calls`]); `_ABORTS` of the adapter.
const ABORTS: [&str; 6] = [
    "malformed_function_call",
    "unexpected_tool_call",
    "missing_thought_signature",
    "malformed_response",
    "other",
    "image_other",
];

/// The enums' zero values: no reason at all.
const UNSPECIFIED: [&str; 2] = ["finish_reason_unspecified", "blocked_reason_unspecified"];

wire_struct! {
    struct Candidate<'a> {
        index: Option<&'a RawValue> = "index",
        content: Option<&'a RawValue> = "content",
        finish_reason: Option<&'a RawValue> = "finishReason",
    }
}

wire_struct! {
    struct Content<'a> {
        parts: Option<&'a RawValue> = "parts",
    }
}

wire_struct! {
    struct Part<'a> {
        text: Option<&'a RawValue> = "text",
        thought: Option<&'a RawValue> = "thought",
        thought_signature: Option<&'a RawValue> = "thoughtSignature",
        function_call: Option<&'a RawValue> = "functionCall",
        // Content that makes a part more than the carrier of a signature.
        inline_data: Option<&'a RawValue> = "inlineData",
        file_data: Option<&'a RawValue> = "fileData",
        executable_code: Option<&'a RawValue> = "executableCode",
        code_execution_result: Option<&'a RawValue> = "codeExecutionResult",
        function_response: Option<&'a RawValue> = "functionResponse",
    }
}

impl Part<'_> {
    fn has_content(&self) -> bool {
        self.inline_data.is_some()
            || self.file_data.is_some()
            || self.executable_code.is_some()
            || self.code_execution_result.is_some()
            || self.function_response.is_some()
    }
}

wire_struct! {
    #[derive(Default)]
    struct FunctionCall<'a> {
        name: Option<&'a RawValue> = "name",
        id: Option<&'a RawValue> = "id",
        args: Option<&'a RawValue> = "args",
        partial_args: Option<&'a RawValue> = "partialArgs",
        will_continue: Option<&'a RawValue> = "willContinue",
    }
}

wire_struct! {
    struct PromptFeedback<'a> {
        block_reason: Option<&'a RawValue> = "blockReason",
    }
}

/// What candidate 0 of one chunk holds, in order. One `Finish` per candidate: boxing the parts
/// to make it smaller would allocate for every part.
#[allow(clippy::large_enum_variant)]
enum Item<'a> {
    /// A part, with its `functionCall` if it has one, and that call's `partialArgs` if they
    /// are a list (a piece that is no object is `None`).
    Part(
        Part<'a>,
        Option<FunctionCall<'a>>,
        Option<Vec<Option<Piece<'a>>>>,
    ),
    /// The end of a candidate's parts, with its finish reason.
    Finish(Option<&'a RawValue>),
}

/// A call that may still receive arguments from a later part.
#[derive(Debug)]
struct Open {
    key: i64,
    /// Arguments streamed as `partialArgs` pieces, merged so far; `None` for a name-only part
    /// waiting for an args-only one (quirk 33).
    value: Option<Box<Streamed>>,
    /// A piece held what this path cannot read exactly: the call is `lost_event`, and nothing
    /// more is fed for it.
    unread: bool,
}

impl Open {
    fn new(key: i64) -> Self {
        Self {
            key,
            value: None,
            unread: false,
        }
    }

    /// A string whose last piece ended on half a surrogate pair, and no piece came with the
    /// other half: Python's value holds a lone surrogate there, and so does the call's.
    fn lone_half<F: FnMut(Action<'_>) -> bool>(&mut self, emit: &mut F) {
        let Some(value) = self.value.as_mut().filter(|v| v.holds_half()) else {
            return;
        };
        if value.settle_half() == Merge::Unread && !self.unread {
            self.unread = true;
            emit(Action::UnreadArguments(self.key));
        }
    }
}

/// Per-stream Gemini state: the adapter's `_State`.
#[derive(Debug, Default)]
pub(super) struct GeminiState {
    /// The key the next call gets.
    next_key: i64,
    open: Option<Open>,
    /// The last call, while no text came after it: a signature-only part belongs to it.
    last: Option<i64>,
    /// A signature (JSON text) that came before any call, for the next call.
    held: Option<String>,
    /// Text came after the last call (or with none yet), whether its block is still open or
    /// not.
    after_text: bool,
    /// Text came after the last call (or with none yet): a text part continues its block.
    saying: bool,
    /// Why the prompt was blocked: calls that follow must not run either.
    blocked: Option<String>,
    /// Deltas fed for the current chunk.
    feeds: usize,
    /// Usage with its member names respelled (rare: only when one has an underscore).
    usage: String,
    /// Each whole call by its id: (id, name, arguments JSON), to know a call sent again.
    whole: Vec<(String, String, String)>,
    /// A call's merged pieces passed the stream's byte limit: the response is refused whole,
    /// and pieces are no longer merged, so that what a runaway stream sends is not held.
    over: bool,
    /// The thought parts in a row so far: one thought, kept once another part, the finish
    /// reason or the end of the body ends it.
    thought: Option<Box<Thought>>,
}

/// A value inside the chunk that serde_json refused (`raw`, its text in the chunk's), and why.
struct Refused<'a> {
    raw: &'a str,
    error: serde_json::Error,
}

/// An object field as the adapter reads a dict: anything but an object is absent.
fn object<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Result<Option<T>, Refused<'a>> {
    match raw {
        Some(r) if r.get().starts_with('{') => {
            serde_json::from_str(r.get())
                .map(Some)
                .map_err(|error| Refused {
                    raw: r.get(),
                    error,
                })
        }
        _ => Ok(None),
    }
}

/// A list field: anything but an array holds nothing.
fn list(raw: Option<&RawValue>) -> Result<Few<&RawValue>, Refused<'_>> {
    match raw {
        Some(r) if r.get().starts_with('[') => {
            serde_json::from_str(r.get()).map_err(|error| Refused {
                raw: r.get(),
                error,
            })
        }
        _ => Ok(Few::Zero),
    }
}

/// What a chunk holds for the assembler: its prompt feedback, and candidate 0's parts (each
/// with its call and that call's pieces) and finish reason, in order.
type Chunk<'a> = (Option<PromptFeedback<'a>>, Vec<Item<'a>>);

/// The chunk's objects, read whole before any action is emitted: a malformed chunk must emit
/// nothing.
fn read_chunk<'a>(env: &Envelope<'a>) -> Result<Chunk<'a>, Refused<'a>> {
    let feedback: Option<PromptFeedback<'_>> = object(env.prompt_feedback)?;
    let mut items = Vec::new();
    for candidate in list(env.candidates)?.as_slice() {
        let Some(candidate) = object::<Candidate<'_>>(Some(candidate))? else {
            continue;
        };
        if !is_first(&candidate) {
            continue;
        }
        let content: Option<Content<'_>> = object(candidate.content)?;
        for part in list(content.and_then(|c| c.parts))?.as_slice() {
            let Some(part) = object::<Part<'_>>(Some(part))? else {
                continue;
            };
            let call: Option<FunctionCall<'_>> = match part.function_call {
                Some(raw) => Some(object(Some(raw))?.unwrap_or_default()),
                None => None,
            };
            let pieces = match call.as_ref().and_then(|c| c.partial_args) {
                Some(raw) if raw.get().starts_with('[') => Some(
                    list(Some(raw))?
                        .as_slice()
                        .iter()
                        .map(|p| {
                            let piece = object::<Piece<'_>>(Some(p))?;
                            Ok(piece.map(|piece| piece.noting_other_values(p)))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                _ => None,
            };
            items.push(Item::Part(part, call, pieces));
        }
        items.push(Item::Finish(candidate.finish_reason));
    }
    Ok((feedback, items))
}

/// The chunk `text` with the names [`read_chunk`] refused for their unpaired surrogate
/// escapes made whole (`lone_keys`), as `json.loads` takes them: a name deep in a candidate,
/// part, call or piece, which the chunk's first read does not look at. Names inside values
/// read as raw JSON (`args`, `usageMetadata`) are kept as sent.
#[cold]
#[inline(never)]
fn made_whole(text: &str, first: Refused<'_>) -> Result<String, EventError> {
    let within = |t: &str, refused: Refused<'_>| Refusal {
        at: (refused.raw.as_ptr() as usize)
            .checked_sub(t.as_ptr() as usize)
            .unwrap_or(usize::MAX),
        error: refused.error,
    };
    let first = within(text, first);
    whole_names_within(text, first, |t| {
        let env = serde_json::from_slice::<Envelope<'_>>(t.as_bytes())
            .map_err(|error| Refusal { at: 0, error })?;
        read_chunk(&env).map(drop).map_err(|r| within(t, r))
    })
    .map_err(EventError::Malformed)
}

/// A finish or block reason as sent; `None` for none, a blank or an `*_UNSPECIFIED`.
fn reason(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    string(raw).filter(|r| !r.is_empty() && !UNSPECIFIED.iter().any(|u| u.eq_ignore_ascii_case(r)))
}

/// A thought signature as the JSON text `json.dumps` gives the adapter's string.
fn signature(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let r = raw_str(raw).filter(|r| r.len() > 2)?;
    if memchr(b'\\', r.as_bytes()).is_none() {
        return Some(Cow::Borrowed(r));
    }
    Some(Cow::Owned(json_string(&decode_owned(r))))
}

/// A signature-only part (`json`, the JSON text of its signature) that neither a call nor a
/// text block takes: an empty text block of its own, at the end of the text so far, which
/// carries it.
fn signed_part<F: FnMut(Action<'_>) -> bool>(json: &str, emit: &mut F) {
    emit(Action::TextBlock);
    emit(Action::TextSignature(json));
}

/// Candidate 0 is assembled: a missing index, or one that is no integer, is 0 (the REST API
/// omits it), as the adapter's `index_of` reads it.
fn is_first(candidate: &Candidate<'_>) -> bool {
    candidate
        .index
        .and_then(|i| i.get().parse::<i64>().ok())
        .map_or(true, |i| i == 0)
}

/// Usage with its member names in the REST spelling, as the adapter's `_rest_names` respells
/// a snake_case dict: `_x` becomes `X` for an ASCII lowercase letter or digit `x`. An unpaired
/// surrogate escape, which serde_json refuses, is U+FFFD, as every path merges usage
/// (`whole_strings`): left as sent, its names were merged unspelled.
#[cold]
fn rest_names(text: &str) -> String {
    let read = serde_json::from_str::<serde_json::Value>(text).or_else(|e| {
        whole_strings(text)
            .ok_or(e)
            .and_then(|whole| serde_json::from_str(&whole))
    });
    match read {
        Ok(value) => camel(value).to_string(),
        Err(_) => text.to_owned(),
    }
}

fn camel(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => serde_json::Value::Object(
            map.into_iter()
                .map(|(k, v)| (camel_key(&k), camel(v)))
                .collect(),
        ),
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(camel).collect())
        }
        other => other,
    }
}

fn camel_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut chars = key.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '_' {
            if let Some(&next) = chars
                .peek()
                .filter(|n| n.is_ascii_lowercase() || n.is_ascii_digit())
            {
                out.push(next.to_ascii_uppercase());
                chars.next();
                continue;
            }
        }
        out.push(c);
    }
    out
}

impl GeminiState {
    /// Emit a delta of this chunk (counted: calls fed after a blocked prompt are stopped).
    fn feed<F: FnMut(Action<'_>) -> bool>(&mut self, emit: &mut F, action: Action<'_>) {
        self.feeds += 1;
        emit(action);
    }

    /// No more arguments come for the open call (another call starts, the answer ended): a
    /// name-only part is a function without parameters.
    fn settle<F: FnMut(Action<'_>) -> bool>(&mut self, emit: &mut F) {
        if let Some(open) = self.open.take() {
            if open.value.is_none() {
                self.feed(emit, args(Some(open.key), Arguments::Value(b"{}")));
            } else {
                self.cut_call(open, emit);
            }
        }
    }

    /// A streamed call still waiting for pieces is cut where it is.
    fn cut<F: FnMut(Action<'_>) -> bool>(&mut self, emit: &mut F) {
        if self.open.as_ref().is_some_and(|o| o.value.is_some()) {
            if let Some(open) = self.open.take() {
                self.cut_call(open, emit);
            }
        }
    }

    /// Feed the merged pieces of a streamed call whose last piece came.
    fn close<F: FnMut(Action<'_>) -> bool>(&mut self, mut open: Open, emit: &mut F) {
        open.lone_half(emit);
        if open.unread {
            self.feeds += 1;
            return;
        }
        let text = open
            .value
            .as_ref()
            .map_or_else(|| "{}".to_owned(), |v| v.text(true));
        self.feed(
            emit,
            args(Some(open.key), Arguments::Value(text.as_bytes())),
        );
        if open.value.is_some_and(|v| v.broken) {
            // Pieces that do not make one object: text after an object value is the core's
            // `mixed_arguments`, so the call never runs.
            self.feed(emit, args(Some(open.key), Arguments::Text(b"?")));
        }
    }

    /// Feed a streamed call's pieces so far without its closing brace: `truncated`.
    fn cut_call<F: FnMut(Action<'_>) -> bool>(&mut self, mut open: Open, emit: &mut F) {
        open.lone_half(emit);
        let broken = open.value.as_ref().is_some_and(|v| v.broken);
        if open.unread || broken {
            self.close(open, emit);
            return;
        }
        let text = open
            .value
            .as_ref()
            .map_or_else(String::new, |v| v.text(false));
        let cut = text.len().saturating_sub(1);
        self.feed(
            emit,
            args(Some(open.key), Arguments::Text(&text.as_bytes()[..cut])),
        );
    }
}

impl Decoder {
    /// One Gemini chunk: usage, a blocked prompt, candidate 0's parts and finish reason, or an
    /// `{"error": ...}` chunk.
    pub(super) fn gemini<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        env: &Envelope<'_>,
        text: &str,
        emit: &mut F,
    ) -> Result<(), EventError> {
        if let (Some(error), None) = (env.error, env.candidates) {
            // The server gave up on the answer (google-genai raises this chunk).
            self.gemini_gave_up(emit);
            emit(Action::ProviderError(error.get()));
            emit(Action::GaveUp);
            return Ok(());
        }
        // Parsed whole first: a malformed chunk must emit nothing. `text` is the chunk's.
        let whole: String;
        let (feedback, items) = match read_chunk(env) {
            Ok(chunk) => chunk,
            Err(refused) => {
                whole = made_whole(text, refused)?;
                let env = serde_json::from_slice::<Envelope<'_>>(whole.as_bytes())
                    .map_err(EventError::Malformed)?;
                read_chunk(&env).map_err(|r| EventError::Malformed(r.error))?
            }
        };

        let mut st = self.gemini.take().unwrap_or_default();
        st.feeds = 0;
        if let Some(usage) = env.usage_metadata {
            let text = usage.get();
            if memchr(b'_', text.as_bytes()).is_some() {
                st.usage = rest_names(text);
                emit(Action::Usage(&st.usage));
            } else {
                emit(Action::Usage(text));
            }
        }
        if let Some(blocked) = feedback.as_ref().and_then(|f| reason(f.block_reason)) {
            // The prompt was blocked: no answer comes, and no call may run.
            st.open = None;
            emit(Action::Finish {
                raw: &blocked,
                reason: FinishReason::from_raw(&blocked),
            });
            emit(Action::Stop(&blocked));
            st.blocked = Some(blocked.into_owned());
        }
        for item in &items {
            match item {
                Item::Part(part, call, pieces) => {
                    let call = call.as_ref().map(|c| (c, pieces.as_deref()));
                    self.gemini_part(&mut st, part, call, emit);
                }
                Item::Finish(raw) => self.gemini_finish(&mut st, *raw, emit),
            }
        }
        if st.feeds > 0 {
            if let Some(blocked) = &st.blocked {
                emit(Action::Stop(blocked));
            }
        }
        self.gemini = Some(st);
        Ok(())
    }

    /// The provider gave up: a call waiting for a second part gets none, and the thought
    /// still streaming is not kept.
    pub(super) fn gemini_gave_up<F: FnMut(Action<'_>) -> bool>(&mut self, emit: &mut F) {
        if let Some(st) = &mut self.gemini {
            st.open = None;
            if let Some(thought) = st.thought.take() {
                drop_thought(&thought, emit);
            }
        }
    }

    /// The thought parts in a row end: the thought is kept, with its signature.
    fn gemini_end_thought<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        st: &mut GeminiState,
        emit: &mut F,
    ) {
        if let Some(thought) = st.thought.take() {
            self.end_gemini_thought(thought, emit);
        }
    }

    /// A thought part: its text goes on the thought streaming, and its signature ends it.
    fn gemini_thought<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        st: &mut GeminiState,
        part: &Part<'_>,
        emit: &mut F,
    ) {
        let text = raw_str(part.text).filter(|r| r.len() > 2);
        let signature = raw_str(part.thought_signature).filter(|r| r.len() > 2);
        if text.is_none() && signature.is_none() {
            return;
        }
        if st.thought.is_none() {
            // `None` once the response keeps nothing more.
            st.thought = self.start_thought(false, None, None, emit);
        }
        let Some(mut thought) = st.thought.take() else {
            return;
        };
        if let Some(raw) = text {
            self.think(&mut thought, raw, emit);
        }
        match signature {
            // Sent back on this part, which no thought after it joins.
            Some(raw) => {
                self.sign(&mut thought, raw, emit);
                self.end_gemini_thought(thought, emit);
            }
            None => st.thought = Some(thought),
        }
    }

    /// End of body: a streamed call still waiting for pieces is cut there (the adapter's
    /// `flush`); a name-only call still open means no finish reason came after it.
    pub(super) fn gemini_finish_stream<F: FnMut(Action<'_>) -> bool>(&mut self, emit: &mut F) {
        let Some(mut st) = self.gemini.take() else {
            return;
        };
        self.gemini_end_thought(&mut st, emit);
        st.cut(emit);
        let open = st.open.take();
        self.gemini = Some(st);
        if open.is_some() {
            emit(Action::Interrupt(
                "the body ended before the answer finished",
            ));
        }
    }

    fn gemini_part<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        st: &mut GeminiState,
        part: &Part<'_>,
        call: Option<(&FunctionCall<'_>, Option<&[Option<Piece<'_>>]>)>,
        emit: &mut F,
    ) {
        let signature = signature(part.thought_signature);
        if let Some((call, pieces)) = call {
            self.gemini_end_thought(st, emit);
            self.gemini_call(st, call, pieces, signature, emit);
            return;
        }
        if part.thought.is_some_and(|t| t.get() == "true") {
            // The model's reasoning: not text, and its signature is its own; text after it is a
            // part of its own.
            st.saying = false;
            self.gemini_thought(st, part, emit);
            return;
        }
        let text = raw_str(part.text).filter(|r| r.len() > 2);
        if text.is_some() || signature.is_some() || part.has_content() {
            // A part that says something ends the thought before it.
            self.gemini_end_thought(st, emit);
        }
        if let Some(raw) = text {
            if let Some(held) = st.held.take() {
                // A signature-only part that no call took goes back before the text, where it
                // came.
                signed_part(&held, emit);
            }
            if !st.saying {
                // The text's first part, or the first after a call: a block of its own in the
                // next turn, in its place among the calls.
                st.saying = true;
                emit(Action::TextBlock);
            }
            self.text(raw, emit);
            // What follows belongs to the text now, not to the call before it.
            st.last = None;
            st.held = None;
            st.after_text = true;
            if let Some(json) = &signature {
                // Sent back on this part, which no text after it joins.
                st.saying = false;
                emit(Action::TextSignature(json.as_ref()));
            }
            return;
        }
        let Some(signature) = signature else { return };
        if part.has_content() {
            return;
        }
        if st.saying {
            // The last part of the text before it (Gemini signs an answer without calls there).
            st.saying = false;
            emit(Action::TextSignature(signature.as_ref()));
            return;
        }
        match st.last {
            Some(key) => {
                emit(Action::Metadata {
                    index: Some(key),
                    key: SIGNATURE,
                    json: &signature,
                });
            }
            // After a signed text part (a second signature-only part): a part of its own, sent
            // back where it came.
            None if st.after_text => signed_part(&signature, emit),
            None => st.held = Some(signature.into_owned()),
        }
    }

    fn gemini_call<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        st: &mut GeminiState,
        fc: &FunctionCall<'_>,
        pieces: Option<&[Option<Piece<'_>>]>,
        mut signature: Option<Cow<'_, str>>,
        emit: &mut F,
    ) {
        let name = string(fc.name);
        let name = name.as_deref().filter(|s| !s.is_empty());
        let id = string(fc.id);
        let id = id.as_deref().filter(|s| !s.is_empty());
        let more = fc.will_continue.is_some_and(|w| w.get() == "true");
        if let (Some(id), Some(name), Some(args), false, None, None) =
            (id, name, fc.args, more, pieces, st.open.as_ref())
        {
            // The same call (id, name and arguments) sent again is a repeat: run once, not
            // twice under a renamed id (quirk 20), as `feed_chunk` reads it. Once the response
            // was refused whole, none of its calls runs: calls are no longer kept by their id,
            // so that what follows costs no memory.
            if still_kept(emit) {
                let seen = st.whole.iter().find(|(i, _, _)| i == id);
                if let Some((_, seen_name, seen_args)) = seen {
                    if seen_name == name && same_tokens(seen_args.as_bytes(), args.get().as_bytes())
                    {
                        return;
                    }
                } else {
                    st.whole
                        .push((id.to_owned(), name.to_owned(), args.get().to_owned()));
                }
            }
        }
        let (key, opened) = match st.open.take() {
            Some(open) if name.is_none() => {
                // The next part of the open call: its arguments (quirk 33) or pieces.
                if id.is_some() {
                    st.feed(emit, call(Some(open.key), id, None, None, None, None));
                }
                (open.key, Some(open))
            }
            other => {
                st.open = other;
                st.settle(emit);
                let key = st.next_key;
                st.next_key = st.next_key.saturating_add(1);
                st.feed(emit, call(Some(key), id, name, None, None, None));
                if signature.is_none() {
                    signature = st.held.take().map(Cow::Owned);
                }
                self.count_reasoning_before(key, emit);
                (key, None)
            }
        };
        st.held = None;
        st.last = Some(key);
        st.saying = false;
        st.after_text = false;
        if let Some(json) = &signature {
            emit(Action::Metadata {
                index: Some(key),
                key: SIGNATURE,
                json,
            });
        }
        let streamed = opened.as_ref().is_some_and(|o| o.value.is_some());
        if more || pieces.is_some() || streamed {
            let mut open = opened.unwrap_or_else(|| Open::new(key));
            if !open.unread && !st.over && (pieces.is_some() || fc.args.is_some()) {
                let value = open.value.get_or_insert_with(Box::default);
                let before = value.kept;
                // Each value merged, as a progress item of the call, when progress is tracked.
                let mut record = |path: &str, text: &str, value: Recorded| {
                    emit(Action::Progress {
                        index: key,
                        path,
                        text,
                        value,
                    });
                };
                let mut report: Report<'_, '_> = self.progress.then_some(&mut record);
                let mut merged = match pieces {
                    Some(pieces) => value.merge(pieces, report.as_deref_mut()),
                    None => Merge::Done,
                };
                // Pieces that pass the limit refuse the response: the `args` beside them are not
                // merged (nor reported as progress), as `feed_chunk` leaves them.
                let limit = self.keep_limit.unwrap_or(usize::MAX);
                let passed = value.kept > before && value.kept > limit;
                if let (false, false, Some(raw)) = (merged == Merge::Unread, passed, fc.args) {
                    merged = value.merge_object(raw, report);
                }
                if self.progress && (value.broken || value.silent || merged == Merge::Unread) {
                    // The call never holds what its pieces say: nothing more of it is an item,
                    // not even its text when it closes.
                    emit(Action::StopProgress(key));
                }
                if value.kept > before {
                    // What the call holds must fit beside what the response kept (the raw twin
                    // of the adapter's `_may_hold`); past the limit it is let go.
                    emit(Action::Held(value.kept));
                    if value.kept > limit {
                        st.over = true;
                        **value = Streamed::default();
                    }
                }
                if merged == Merge::Unread {
                    open.unread = true;
                    emit(Action::UnreadArguments(key));
                }
            }
            if more {
                st.open = Some(open);
            } else {
                st.close(open, emit);
            }
        } else if let Some(raw) = fc.args {
            st.feeds += 1;
            self.gemini_arguments(key, raw, emit);
        } else if opened.is_none() && name.is_some() {
            // A name and no arguments: they may follow in the next part (quirk 33).
            st.open = Some(Open::new(key));
        } else {
            st.open = opened;
        }
    }

    /// `args` fed as `feed_chunk` feeds the adapter's `arguments_of(args)`: an object or array
    /// whole, a string as text, a scalar as its JSON text.
    fn gemini_arguments<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        key: i64,
        raw: &RawValue,
        emit: &mut F,
    ) {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'"') => {
                self.emit_call(Some(key), None, None, None, Some(raw), Lone::Escape, emit)
            }
            Some(b'{' | b'[') => {
                canonical(text, &mut self.scratch);
                emit(args(Some(key), Arguments::Value(&self.scratch)));
            }
            _ => {
                canonical(text, &mut self.scratch);
                emit(args(Some(key), Arguments::Text(&self.scratch)));
            }
        }
    }

    fn gemini_finish<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        st: &mut GeminiState,
        raw: Option<&RawValue>,
        emit: &mut F,
    ) {
        let Some(raw) = reason(raw) else { return };
        // The candidate ended: so did its thought, and a signature-only part that no call
        // took goes back where it came.
        self.gemini_end_thought(st, emit);
        if let Some(held) = st.held.take() {
            signed_part(&held, emit);
        }
        let normalized = FinishReason::from_raw(&raw);
        if normalized.stops_calls() || ABORTS.iter().any(|a| a.eq_ignore_ascii_case(&raw)) {
            st.open = None;
            emit(Action::Finish {
                raw: &raw,
                reason: normalized,
            });
            emit(Action::Stop(&raw));
        } else if normalized == FinishReason::Length {
            // Pieces still streaming are cut where they are; a name-only call is left without
            // arguments, which the limit makes `truncated`.
            st.cut(emit);
            st.open = None;
            emit(Action::Finish {
                raw: &raw,
                reason: normalized,
            });
        } else {
            st.settle(emit);
            emit(Action::Finish {
                raw: &raw,
                reason: normalized,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::Budget;
    use super::super::{Action, Decoder};

    /// Decodes `chunks` under a budget of `limit` bytes with progress tracked: the paths of the
    /// progress items, in order.
    fn progress_paths(limit: usize, chunks: &[&str]) -> Vec<String> {
        let mut decoder = Decoder::new();
        decoder.set_keep_limit(limit);
        decoder.set_track_progress(true);
        let mut budget = Budget::new(limit);
        let mut paths = Vec::new();
        for chunk in chunks {
            let mut answer = |action: Action<'_>| {
                if let Action::Progress { path, .. } = &action {
                    paths.push((*path).to_owned());
                }
                budget.answer(action)
            };
            decoder
                .decode(b"", chunk.as_bytes(), &mut answer)
                .expect("event");
        }
        paths
    }

    #[test]
    fn args_beside_pieces_that_pass_the_limit_are_not_merged() {
        // The pieces (24 bytes kept) pass the limit of 20: the response is refused, and the
        // whole `args` in the same part are neither merged nor reported, as `feed_chunk` does.
        let paths = progress_paths(
            20,
            &[
                r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}"#,
                r#"{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.city","stringValue":"Oslo Oslo Oslo Oslo"}],"args":{"q":"x"},"willContinue":true}}]}}]}"#,
            ],
        );
        assert!(!paths.iter().any(|p| p == "/q"), "{paths:?}");
    }

    #[test]
    fn whole_calls_are_not_kept_by_id_once_the_response_is_refused() {
        // 1,000 whole calls with ids, 98 bytes of arguments each, under a limit of 1,000: the
        // eleventh call passes it, and the thousand after it make no state.
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(1000);
        for i in 0..1000 {
            let chunk = format!(
                r#"{{"candidates":[{{"content":{{"parts":[{{"functionCall":{{"id":"id{i}","name":"f","args":{{"a":"{}"}}}}}}]}}}}]}}"#,
                "x".repeat(90)
            );
            budget.decode(&mut decoder, &chunk);
        }
        assert!(budget.refused);
        let whole = decoder.gemini.as_ref().map_or(0, |st| st.whole.len());
        assert_eq!(whole, 11);
    }
}
