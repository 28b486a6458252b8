//! The raw SSE path for gateways: response body bytes in, completed tool calls out.
//!
//! Design notes
//! - [`StreamDecoder`] is three stages in a row, each push-based and split-proof on its own:
//!   [`Framer`] (bytes to events), [`Decoder`] (event data to [`Action`]s) and the
//!   [`Assembler`] (deltas to calls). Nothing is buffered between stages, so the output after any
//!   split of the body equals the output of the whole body (tested with proptest).
//! - The format is auto-detected per event; [`StreamDecoder::format`] reports the first one
//!   seen. Each event is decoded independently, so a proxy that mixes formats still works.
//! - Nothing in the body aborts the stream: a malformed event, an unknown event, an oversized
//!   event or a provider error event is counted, the first of each kind kept, and decoding goes
//!   on. The only `Err` is misuse (pushing after `finish`).
//! - Per-call stop events name a wire index; the assembler's open call at that key
//!   ([`Assembler::ordinal_of`]) is the one that ends.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use crate::assembler::{
    has_long_integer, Arguments, Assembler, AssemblerConfig, Delta, Summary, ToolCall,
};
use crate::envelope::{
    is_done_marker, Action, Decoder, EventError, FinishReason, Format, Reasoning,
};
use crate::error::Misuse;
use crate::precheck::Registry;
use crate::scanner::is_ws;
use crate::sse::{Event, Framer, SseConfig, SseError, Tail};

mod text_layout;
mod whole;

use text_layout::TextLayout;
use whole::Document;

/// What went wrong in a stream, outside any one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamErrorKind {
    /// An event's data is not JSON, or a field has the wrong type; the event was skipped.
    MalformedEvent,
    /// An event of no supported format; skipped.
    UnknownEvent,
    /// The provider sent an error event (or a Responses `response.failed`).
    ProviderError,
    /// An event passed the size limit and was dropped.
    EventTooLarge,
    /// Responses: the final `arguments` differ from the deltas received for that call.
    ArgumentsMismatch,
    /// The body ended inside an event (no closing blank line); that event was not decoded.
    TruncatedBody,
    /// An OpenAI stream went on after `[DONE]`; the event was skipped, as the `openai` SDK
    /// stops reading at that marker and never shows it.
    AfterDone,
    /// The response passed a per-stream limit (`max_calls`, `max_stream_bytes`): nothing more
    /// of it was kept, and every call fails.
    StreamLimit,
    /// A Chat Completions stream with several choices (`n > 1`): a choice other than the one
    /// assembled carried text or tool calls, which were not assembled. Counted once per such
    /// choice; the message tells how many there are so far.
    OtherChoice,
}

impl StreamErrorKind {
    const ALL: [Self; 9] = [
        Self::MalformedEvent,
        Self::UnknownEvent,
        Self::ProviderError,
        Self::EventTooLarge,
        Self::ArgumentsMismatch,
        Self::TruncatedBody,
        Self::AfterDone,
        Self::StreamLimit,
        Self::OtherChoice,
    ];

    /// The stable identifier of this kind.
    #[must_use]
    pub fn slug(self) -> &'static str {
        match self {
            Self::MalformedEvent => "malformed_event",
            Self::UnknownEvent => "unknown_event",
            Self::ProviderError => "provider_error",
            Self::EventTooLarge => "event_too_large",
            Self::ArgumentsMismatch => "arguments_mismatch",
            Self::TruncatedBody => "truncated_body",
            Self::AfterDone => "after_done",
            Self::StreamLimit => "stream_limit",
            Self::OtherChoice => "other_choice",
        }
    }

    /// The kind whose [`slug`](Self::slug) is `slug`.
    #[must_use]
    pub fn from_slug(slug: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.slug() == slug)
    }

    fn slot(self) -> usize {
        self as usize
    }
}

impl fmt::Display for StreamErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.slug())
    }
}

/// One stream-level problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamError {
    /// What went wrong.
    pub kind: StreamErrorKind,
    /// The 1-based number of the event it concerns (0: not tied to an event).
    pub event: u64,
    /// Details for people (for provider errors: the provider's JSON).
    pub message: String,
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (event {}): {}", self.kind, self.event, self.message)
    }
}

impl std::error::Error for StreamError {}

#[derive(Debug, Default)]
struct Errors {
    counts: [u64; StreamErrorKind::ALL.len()],
    /// The first error of each kind, ordered by (event, kind): framing errors are only known
    /// after a push, so insertion order would depend on how the body was split.
    first: Vec<StreamError>,
    /// The choices told as [`StreamErrorKind::OtherChoice`] (allocates only once one is).
    other_choices: BTreeSet<i64>,
}

impl Errors {
    /// Choice `index` of a Chat stream whose choice `chosen` is assembled carried text or tool
    /// calls at `event`: counted once per choice, the first event kept, the message retold
    /// with the number of such choices.
    #[cold]
    #[inline(never)]
    fn other_choice(&mut self, event: u64, chosen: i64, index: i64) {
        let seen = &mut self.other_choices;
        if !seen.insert(index) {
            return;
        }
        let n = seen.len();
        let first = seen.iter().next().copied().unwrap_or(index);
        let kind = StreamErrorKind::OtherChoice;
        let message = if n == 1 {
            format!(
                "choice {index} carried text or tool calls that were not assembled: only choice \
                 {chosen} is"
            )
        } else {
            format!(
                "{n} choices (the lowest {first}) carried text or tool calls that were not \
                 assembled: only choice {chosen} is"
            )
        };
        self.record(kind, event, || message.clone());
        if let Some(told) = self.first.iter_mut().find(|e| e.kind == kind) {
            told.message = message;
        }
    }

    #[cold]
    #[inline(never)]
    fn record(&mut self, kind: StreamErrorKind, event: u64, message: impl FnOnce() -> String) {
        self.record_n(kind, 1, event, message);
    }

    #[cold]
    #[inline(never)]
    fn record_n(
        &mut self,
        kind: StreamErrorKind,
        n: u64,
        event: u64,
        message: impl FnOnce() -> String,
    ) {
        self.counts[kind.slot()] += n;
        if self.counts[kind.slot()] == n {
            let at = self
                .first
                .partition_point(|e| (e.event, e.kind.slot()) <= (event, kind.slot()));
            let error = StreamError {
                kind,
                event,
                message: message(),
            };
            self.first.insert(at, error);
        }
    }
}

/// Everything the actions change besides the assembler.
#[derive(Debug, Default)]
struct State {
    text: Vec<u8>,
    /// While a replayed response re-treads its text: how much of `text` it has matched.
    text_replay: Option<usize>,
    usage: Option<serde_json::Map<String, serde_json::Value>>,
    /// The code-execution container the response ran in, the last one named.
    container: Option<String>,
    finish_raw: Option<String>,
    finish: Option<FinishReason>,
    format: Option<Format>,
    done: bool,
    /// An OpenAI stream sent `[DONE]`: the events after it are not part of the response.
    closed: bool,
    /// The provider gave up on the response ([`Action::GaveUp`]).
    gave_up: bool,
    /// How many calls there were when the latest finish reason of a Chat choice ended it as a
    /// whole answer (`stop`, `tool_calls`): Chat has no end event per call, so that reason ended
    /// them all, and neither a break nor a provider error after it cuts or stops one.
    chat_ended_calls: Option<usize>,
    /// The calls below `chat_ended_calls` that argument text came for after that finish
    /// reason: their text did not end there, so a provider error after it stops them too.
    chat_reopened: Vec<usize>,
    events: u64,
    /// Events the framer dropped for size that the assembler has been told of.
    dropped_seen: u64,
    errors: Errors,
}

impl State {
    /// The framer has dropped `dropped` events for size so far: the calls open when a new one
    /// was dropped may lack a fragment it carried.
    fn note_dropped(&mut self, assembler: &mut Assembler, dropped: u64) {
        if dropped > self.dropped_seen {
            self.dropped_seen = dropped;
            // Fails only after `finish`, which `StreamDecoder` rules out.
            let _ = assembler.lose_event("an event too large to read");
        }
    }

    /// Assistant text; during a replay, text the response already had is dropped, and the
    /// text matched so far is taken back as new when the replay differs from it.
    fn push_text(&mut self, t: &[u8]) {
        let Some(pos) = self.text_replay else {
            self.text.extend_from_slice(t);
            return;
        };
        let rest = self.text.get(pos..).unwrap_or_default();
        if rest.starts_with(t) {
            let pos = pos + t.len();
            self.text_replay = (pos < self.text.len()).then_some(pos);
            return;
        }
        self.text_replay = None;
        let (caught_up, skip) = (t.starts_with(rest), rest.len());
        if caught_up {
            self.text
                .extend_from_slice(t.get(skip..).unwrap_or_default());
        } else {
            self.text.extend_from_within(..pos.min(self.text.len()));
            self.text.extend_from_slice(t);
        }
    }

    /// Records, once, that the response passed a per-stream limit.
    fn note_limit(&mut self, assembler: &Assembler) {
        if self.errors.counts[StreamErrorKind::StreamLimit.slot()] == 0 {
            if let Some((limit, _)) = assembler.over_limit() {
                self.errors
                    .record(StreamErrorKind::StreamLimit, self.events, || {
                        limit.message()
                    });
            }
        }
    }

    /// Applies one action; answers, as [`Decoder::decode`] asks, whether the response is still
    /// kept, and for [`Action::Held`], [`Action::SetAside`] and [`Action::HoldFragment`] whether
    /// those bytes may be kept.
    fn apply(&mut self, assembler: &mut Assembler, kept: &mut Kept, action: Action<'_>) -> bool {
        match action {
            Action::Held(n) => assembler.may_hold(n),
            Action::SetAside { index, bytes } => {
                assembler.set_aside(assembler.ordinal_of(Some(index)), bytes)
            }
            // A fragment held for its surrogate half is the call's own text, checked against
            // `max_bytes` when fed: held, it counts toward the stream alone.
            Action::HoldFragment(n) => assembler.set_aside(None, n),
            Action::Release(n) => {
                assembler.release(n);
                assembler.over_limit().is_none()
            }
            // Counted as assistant text is, and kept once the block ends whole.
            Action::HoldReasoning(n) => assembler.keep_text(n),
            Action::Reasoning(block) => {
                kept.keep(block.clone(), 0);
                assembler.over_limit().is_none()
            }
            Action::EarlierReasoning { block, before } => {
                kept.keep(block.clone(), before);
                assembler.over_limit().is_none()
            }
            Action::DropReasoning => {
                kept.drop_last(assembler);
                assembler.over_limit().is_none()
            }
            Action::Restart => {
                // The response comes again from its start, its reasoning blocks too.
                kept.restart(assembler);
                self.apply_action(assembler, action);
                assembler.over_limit().is_none()
            }
            Action::TextBlock => {
                let (reasoning, calls) = (kept.reasoning.len(), assembler.len());
                kept.layout.mark_end_of(&self.text, reasoning, calls);
                assembler.over_limit().is_none()
            }
            Action::TextSignature(json) => {
                kept.layout.sign(json);
                assembler.over_limit().is_none()
            }
            Action::Citation(json) => kept.cite(assembler, json),
            action => {
                self.apply_action(assembler, action);
                assembler.over_limit().is_none()
            }
        }
    }

    fn apply_action(&mut self, assembler: &mut Assembler, action: Action<'_>) {
        match action {
            Action::Call {
                mut delta,
                metadata,
                released,
                shown_index,
            } => {
                // Read before the arguments are fed, and only once a Chat finish reason ended
                // calls.
                let says = self.chat_ended_calls.is_some()
                    && match delta.arguments {
                        Some(Arguments::Text(text)) => text.iter().any(|&b| !is_ws(b)),
                        Some(Arguments::Value(_)) => true,
                        None => false,
                    };
                if let Some(Arguments::Text(text)) = delta.arguments {
                    if released > 0 && text.len() >= released {
                        // The held fragment written back belongs to the call it went to, which
                        // is still the open one under this key (quirks 1-3 with 41). Handed on
                        // first, it also counts as that call's arguments when the rules decide
                        // whether this delta starts another call.
                        let (held, rest) = text.split_at(released);
                        let _ = assembler.feed(&Delta {
                            index: delta.index,
                            arguments: Some(Arguments::Text(held)),
                            ..Delta::default()
                        });
                        delta.arguments = (!rest.is_empty()).then_some(Arguments::Text(rest));
                    }
                }
                // `feed` fails only after `finish`, which `StreamDecoder` rules out.
                let Ok(ordinal) = assembler.feed(&delta) else {
                    return;
                };
                if let Some((key, json)) = metadata {
                    // The ordinal was just returned, so it exists.
                    let _ = assembler.set_metadata(ordinal, key, json);
                }
                if shown_index.is_some() {
                    let _ = assembler.set_index(ordinal, shown_index);
                }
                let ended = self.chat_ended_calls.is_some_and(|ended| ordinal < ended);
                if says && ended && !self.chat_reopened.contains(&ordinal) {
                    self.chat_reopened.push(ordinal);
                }
                if self.gave_up {
                    // Sent after the provider gave up: no SDK shows it, and it must not run.
                    // Only this call: the calls a Chat finish reason ended before the error
                    // stay as they were (the others were stopped when the provider gave up).
                    let _ = assembler.stop_call(ordinal, "error");
                }
            }
            Action::Metadata { index, key, json } => {
                // Fails only after `finish`, which `StreamDecoder` rules out.
                let _ = assembler.set_metadata_for_key(index, key, json);
            }
            Action::EndCall(index) => {
                if let Some(ordinal) = assembler.ordinal_of(Some(index)) {
                    let _ = assembler.end_call(ordinal);
                }
            }
            Action::Text(t) => {
                if assembler.over_limit().is_none() {
                    // Only what the text keeps counts: a replay's text again adds nothing.
                    let before = self.text.len();
                    self.push_text(t);
                    if !assembler.keep_text(self.text.len().saturating_sub(before)) {
                        // Past the limit, as `feed_chunk` leaves it: an event may carry
                        // megabytes of text, none of which is kept.
                        self.text.truncate(before);
                    }
                }
            }
            Action::Restart => self.text_replay = (!self.text.is_empty()).then_some(0),
            Action::Held(_)
            | Action::SetAside { .. }
            | Action::HoldFragment(_)
            | Action::Release(_)
            | Action::HoldReasoning(_)
            | Action::Reasoning(_)
            | Action::EarlierReasoning { .. }
            | Action::TextBlock
            | Action::TextSignature(_)
            | Action::Citation(_)
            | Action::DropReasoning => {
                // Answered by `apply`.
            }
            Action::Usage(u) => {
                // Providers split usage over events (Anthropic: input tokens in
                // `message_start`, output tokens in `message_delta`): merge the members, later
                // values winning. Usage events are a handful per stream, so parsing is cheap.
                merge_usage(&mut self.usage, u);
            }
            Action::Container(id) => {
                let stored = self.container.get_or_insert_with(String::new);
                stored.clear();
                stored.push_str(id);
            }
            Action::Finish { .. } if self.gave_up => {
                // A finish reason after the provider gave up (a `finish_reason` chunk after an
                // error chunk) does not undo the failure: the reason stays `error`.
            }
            Action::Finish { raw, reason } => {
                let stored = self.finish_raw.get_or_insert_with(String::new);
                stored.clear();
                stored.push_str(raw);
                self.finish = Some(reason);
                self.chat_ended_calls = (self.format == Some(Format::OpenAiChat)
                    && matches!(reason, FinishReason::Stop | FinishReason::ToolCalls))
                .then(|| assembler.len());
                self.chat_reopened.clear();
                if reason.stops_calls() {
                    // Fails only after `finish`, which `StreamDecoder` rules out.
                    let _ = assembler.stop(raw);
                } else if reason == FinishReason::Length {
                    // Fails only after `finish`, which `StreamDecoder` rules out.
                    let _ = assembler.limit_reached();
                }
            }
            Action::Stop(reason) => {
                // Fails only after `finish`, which `StreamDecoder` rules out.
                let _ = assembler.stop(reason);
            }
            Action::GaveUp => {
                // Chat has no end event per call: a finish reason that ended the choice as a
                // whole answer ended them all, and an error after it (before the usage chunk
                // or `[DONE]`) stops none of them, as an Anthropic error stops no block that
                // ended; only a call that started after that reason, still open, is stopped.
                // Each fails only after `finish`, which `StreamDecoder` rules out.
                match self.chat_ended_calls {
                    Some(ended) => {
                        // And a call that text came for after that reason: it had not ended.
                        let reopened = self.chat_reopened.iter().copied();
                        for ordinal in reopened.chain(ended..assembler.len()) {
                            let _ = assembler.stop_call(ordinal, "error");
                        }
                    }
                    None => {
                        let _ = assembler.stop("error");
                    }
                }
                self.finish_raw = Some("error".to_owned());
                self.finish = Some(FinishReason::Other);
                self.gave_up = true;
            }
            Action::UnreadArguments(index) => {
                if let Some(ordinal) = assembler.ordinal_of(Some(index)) {
                    // Fails only after `finish`, which `StreamDecoder` rules out.
                    let _ = assembler.lose_arguments(
                        ordinal,
                        "its Vertex AI `partialArgs` hold a value `feed_sse` cannot read as \
                         Python does (an infinite number, a non-ASCII digit in a path, a lone \
                         surrogate beside a private-use character)",
                    );
                }
            }
            Action::Progress {
                index,
                path,
                text,
                value,
            } => {
                if let Some(ordinal) = assembler.ordinal_of(Some(index)) {
                    // Fails only after `finish`, which `StreamDecoder` rules out.
                    let _ = assembler.record_progress(ordinal, path, text, value);
                }
            }
            Action::StopProgress(index) => {
                if let Some(ordinal) = assembler.ordinal_of(Some(index)) {
                    // Fails only after `finish`, which `StreamDecoder` rules out.
                    let _ = assembler.stop_progress(ordinal);
                }
            }
            Action::Interrupt(reason) => {
                // Fails only after `finish`, which `StreamDecoder` rules out.
                let _ = assembler.interrupt(reason);
            }
            Action::UnreadItem(position) => {
                self.errors
                    .record(StreamErrorKind::MalformedEvent, self.events, || {
                        format!(
                            "malformed event: item {position} of the finished response's \
                             output cannot be read"
                        )
                    });
            }
            Action::Done => self.done = true,
            Action::OtherChoice { chosen, index } => {
                self.errors.other_choice(self.events, chosen, index);
            }
            Action::ProviderError(json) => {
                self.errors
                    .record(StreamErrorKind::ProviderError, self.events, || {
                        json.to_owned()
                    });
            }
            Action::FinalInput(index, full) => {
                let Some(ordinal) = assembler.ordinal_of(Some(index)) else {
                    return;
                };
                if assembler.replace_free_form(ordinal, full) {
                    let shown = assembler.index(ordinal).unwrap_or(index);
                    self.errors
                        .record(StreamErrorKind::ArgumentsMismatch, self.events, || {
                            final_input_message(shown)
                        });
                }
            }
            Action::ArgumentsSummary(..) if assembler.over_limit().is_some() => {
                // Nothing more of the response is kept: its deltas were dropped, not lost.
            }
            Action::ArgumentsSummary(index, full) => {
                // Compared with what the call holds, as `feed_chunk` compares it: after
                // cumulative deltas the concatenated deltas differ from the summary while the
                // call's arguments are equal to it, and nothing was lost.
                // A summary that only spaces the same tokens otherwise (a server that
                // re-serializes the arguments) is the same call.
                let Some(ordinal) = assembler.ordinal_of(Some(index)) else {
                    return;
                };
                let verdict = assembler.check_summary(ordinal, full);
                if matches!(verdict, Summary::Extend | Summary::Mismatch) {
                    // Named by the `output_index` it was sent under, not the key it is routed by.
                    let shown = assembler.index(ordinal).unwrap_or(index);
                    self.errors.record(StreamErrorKind::ArgumentsMismatch, self.events, || {
                        format!(
                            "final arguments of the call at output_index {shown} differ from its deltas"
                        )
                    });
                }
                if verdict == Summary::Fill {
                    // A call with no text yet (a bridge that sends only the summary) takes it
                    // as its text, fed as a fragment is.
                    let delta = Delta {
                        index: Some(index),
                        arguments: Some(Arguments::Text(full)),
                        ..Delta::default()
                    };
                    let _ = assembler.feed(&delta);
                }
            }
        }
    }
}

/// How `stream_errors` tells a custom tool call whose finished item replaced the input its
/// `custom_tool_call_input.done` gave (as `feed_chunk` tells it).
#[cold]
fn final_input_message(shown: i64) -> String {
    format!(
        "final input of the custom tool call at output_index {shown} differs from its \
         custom_tool_call_input.done: the finished item's was kept"
    )
}

/// Decodes a provider's raw SSE response body into tool calls, assistant text, usage and the
/// finish reason. Push body bytes as they arrive, split anywhere; call [`StreamDecoder::finish`]
/// at the end of the body.
#[derive(Debug)]
pub struct StreamDecoder {
    /// Framing, event decoding and stream-level state, made on the first body bytes: a caller
    /// that feeds deltas (not bytes) never pays for them, and with thousands of open streams
    /// their ~500 bytes were a tenth of each stream's memory.
    body: Option<Box<Body>>,
    config: SseConfig,
    assembler: Assembler,
    finished: bool,
    /// The body's end was handled ([`StreamDecoder::end_body`]) ahead of `finish`.
    body_ended: bool,
    /// Reasoning blocks and text blocks' places.
    kept: Kept,
    /// Problems told by a caller that reads the events itself ([`StreamDecoder::record_error`])
    /// while no body was pushed; once one is, they go with the body's own.
    told: Errors,
}

#[derive(Debug)]
struct Body {
    framer: Framer,
    decoder: Decoder,
    state: State,
    shape: Shape,
}

/// Whether the body is an event stream or one JSON document (a server that ignored the request
/// to stream: a proxy, a gateway, a mock), told by its first byte that is neither white space
/// nor a BOM: no SSE line starts with `{` or `[` (the spec ignores such a line as a field of
/// no name it knows). Asked once per push while the body has not told it, then never again.
#[derive(Debug)]
enum Shape {
    /// Only white space (or a BOM) so far, held (and counted toward `max_stream_bytes`).
    Untold(Vec<u8>),
    /// An event stream: every byte goes to the framer.
    Events,
    /// A JSON document, held whole and counted toward `max_stream_bytes` until the body ends,
    /// when it is read as the events of the same response (`whole`).
    Document(Vec<u8>),
    /// A JSON document that passed `max_stream_bytes`: refused as any response past it is
    /// (`stream_limit`), and the rest of it is not kept.
    Refused,
}

impl StreamDecoder {
    /// A decoder that assembles calls with `assembler` and the default framing limits.
    #[must_use]
    pub fn new(assembler: Assembler) -> Self {
        Self::with_config(assembler, SseConfig::default())
    }

    /// A decoder with the default framing limits around a new assembler (pre-checking
    /// against `registry`, when given), boxed: the assembler is copied once, where building
    /// it, wrapping it and boxing the decoder copied it at each step.
    ///
    /// # Errors
    /// [`Misuse::BadConfig`] when a limit is out of range.
    pub fn boxed(
        config: AssemblerConfig,
        registry: Option<Arc<Registry>>,
    ) -> Result<Box<Self>, Misuse> {
        config.validate().map_err(Misuse::BadConfig)?;
        // Built once and copied once into the box: `Box::new_uninit` would not build it in
        // place either (measured), and is past the crate's MSRV.
        Ok(Box::new(Self::with_config(
            Assembler::unchecked(config, registry),
            SseConfig::default(),
        )))
    }

    /// A decoder with explicit framing limits.
    #[must_use]
    #[inline]
    pub fn with_config(assembler: Assembler, config: SseConfig) -> Self {
        Self {
            body: None,
            config,
            assembler,
            finished: false,
            body_ended: false,
            kept: Kept::default(),
            told: Errors::default(),
        }
    }

    /// Feed the next piece of the body.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`StreamDecoder::finish`].
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        let config = self.config;
        let (keep_limit, progress) = (
            self.assembler.config().max_stream_bytes,
            self.assembler.config().track_progress,
        );
        let body = self.body.get_or_insert_with(|| {
            let mut decoder = Decoder::new();
            decoder.set_keep_limit(keep_limit);
            decoder.set_track_progress(progress);
            Box::new(Body {
                framer: Framer::new(config),
                decoder,
                state: State::default(),
                shape: Shape::Untold(Vec::new()),
            })
        });
        let (assembler, kept) = (&mut self.assembler, &mut self.kept);
        if let Shape::Events = body.shape {
            frame(body, assembler, kept, bytes);
        } else {
            push_untold(body, assembler, kept, bytes);
        }
        Ok(())
    }

    /// The body ended: complete every call (unfinished ones come back truncated).
    ///
    /// # Errors
    /// [`Misuse::Finished`] when called twice.
    pub fn finish(&mut self) -> Result<Vec<ToolCall>, Misuse> {
        self.finish_calls(false)
    }

    /// [`StreamDecoder::finish`], leaving the JSON verdict of calls that need nothing else to
    /// their reader (see [`Assembler::finish_deferring_scans`]).
    ///
    /// # Errors
    /// [`Misuse::Finished`] when called twice.
    pub fn finish_deferring_scans(&mut self) -> Result<Vec<ToolCall>, Misuse> {
        self.finish_calls(true)
    }

    /// What the end of the body settles before the calls finish: an event cut off, a missing
    /// finish reason, text the decoder still holds (a surrogate half waiting for its pair)
    /// goes into its call. `finish` does it first; a caller that wants what it writes into the
    /// calls (progress items) before they are taken calls it ahead. Once only.
    pub(crate) fn end_body(&mut self) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        if std::mem::replace(&mut self.body_ended, true) {
            return Ok(());
        }
        let (assembler, kept) = (&mut self.assembler, &mut self.kept);
        if let Some(body) = &mut self.body {
            if !matches!(body.shape, Shape::Events) {
                end_untold(body, assembler, kept);
            }
            let Body {
                framer,
                decoder,
                state,
                ..
            } = &mut **body;
            // google-genai reads on to the end of a body that ends cleanly and decodes the data
            // gathered for an event there, where the `openai` and `anthropic` SDKs drop an event
            // the body ends inside: a Gemini chunk is read, lest a call google-genai delivers be
            // lost. A body whose transport broke off (`interrupt`) raised in the SDK instead.
            let interrupted = assembler.is_interrupted();
            let tail = framer.finish_with(|event| {
                if interrupted || !Decoder::reads_as_gemini(event.event, event.data) {
                    return false;
                }
                read_event(state, decoder, assembler, kept, event);
                true
            });
            if let Tail::Truncated { pending_bytes } = tail {
                state
                    .errors
                    .record(StreamErrorKind::TruncatedBody, state.events + 1, || {
                        format!(
                            "the body ended inside an event ({pending_bytes} bytes not decoded)"
                        )
                    });
            }
            if state.finish.is_none() {
                // Quirk 38: a body that never carried a finish reason broke off, however its
                // transport ended (a proxy may close a cut stream cleanly): its open calls with
                // empty or incomplete arguments must not run. Fails only after `finish`.
                let _ = assembler.interrupt("the body ended without a finish reason");
            }
            decoder.finish(&mut |action: Action<'_>| state.apply(assembler, kept, action));
        }
        Ok(())
    }

    fn finish_calls(&mut self, defer: bool) -> Result<Vec<ToolCall>, Misuse> {
        self.end_body()?;
        let assembler = &mut self.assembler;
        self.kept.layout.write(assembler, &self.kept.reasoning);
        self.kept.places = self.kept.layout.turn_places(assembler.len());
        // The citations move from the stream's count to the places written.
        assembler.release(std::mem::take(&mut self.kept.cited_bytes));
        self.finished = true;
        if defer {
            assembler.finish_deferring_scans()
        } else {
            assembler.finish()
        }
    }

    fn state(&self) -> Option<&State> {
        self.body.as_ref().map(|b| &b.state)
    }

    /// Assistant text received so far (invalid UTF-8 cannot occur; lone surrogates became U+FFFD).
    #[must_use]
    pub fn text(&self) -> Cow<'_, str> {
        self.state()
            .map_or(Cow::Borrowed(""), |s| String::from_utf8_lossy(&s.text))
    }

    /// The JSON text of the usage seen so far (members of every usage object, merged).
    #[must_use]
    pub fn usage(&self) -> Option<String> {
        let usage = self.state().and_then(|s| s.usage.as_ref())?;
        Some(serde_json::Value::Object(usage.clone()).to_string())
    }

    /// The id of the code-execution container the response ran in (Anthropic's `container`,
    /// the last one named), which the request continuing a `pause_turn` must name.
    #[must_use]
    pub fn container(&self) -> Option<&str> {
        self.state().and_then(|s| s.container.as_deref())
    }

    /// How many calls there were when a Chat choice's finish reason (`stop`, `tool_calls`, the
    /// latest one, before any provider error) ended it as a whole answer: those calls all
    /// ended there. `None` for another format, reason, or none yet.
    #[must_use]
    pub fn chat_ended_calls(&self) -> Option<usize> {
        self.state().and_then(|s| s.chat_ended_calls)
    }

    /// The normalized finish reason, or `None` if the stream has not sent one (yet).
    #[must_use]
    pub fn finish_reason(&self) -> Option<FinishReason> {
        self.state().and_then(|s| s.finish)
    }

    /// The finish reason as sent (Responses: the status, or the incomplete reason).
    #[must_use]
    pub fn finish_reason_raw(&self) -> Option<&str> {
        self.state().and_then(|s| s.finish_raw.as_deref())
    }

    /// The format of the first recognised event.
    #[must_use]
    pub fn format(&self) -> Option<Format> {
        self.state().and_then(|s| s.format)
    }

    /// True once the end-of-stream marker (`[DONE]`, `message_stop`, Responses completion)
    /// arrived.
    #[must_use]
    pub fn done(&self) -> bool {
        self.state().is_some_and(|s| s.done)
    }

    /// Events dispatched by the framer so far.
    #[must_use]
    pub fn events(&self) -> u64 {
        self.state().map_or(0, |s| s.events)
    }

    /// How many stream errors of `kind` occurred.
    #[must_use]
    pub fn error_count(&self, kind: StreamErrorKind) -> u64 {
        self.state().map_or(&self.told, |s| &s.errors).counts[kind.slot()]
    }

    /// Malformed events so far (not JSON, or wrong field types).
    #[must_use]
    pub fn malformed_events(&self) -> u64 {
        self.error_count(StreamErrorKind::MalformedEvent)
    }

    /// The first stream error of each kind, ordered by event number.
    #[must_use]
    pub fn errors(&self) -> &[StreamError] {
        &self.state().map_or(&self.told, |s| &s.errors).first
    }

    /// A problem of a stream whose events the caller reads itself (chunk objects fed one by
    /// one), at its 1-based event number, so that [`StreamDecoder::errors`] tells it as it
    /// tells the body's own. Only the first of each kind keeps its message.
    pub fn record_error(&mut self, kind: StreamErrorKind, event: u64, message: &str) {
        self.errors_mut().record(kind, event, || message.to_owned());
    }

    /// Choice `index` of a Chat stream whose events the caller reads itself carried text or
    /// tool calls at event `event`, while choice `chosen` is the one assembled: told as
    /// [`StreamErrorKind::OtherChoice`] as the body's own, once per choice.
    pub fn record_other_choice(&mut self, event: u64, chosen: i64, index: i64) {
        self.errors_mut().other_choice(event, chosen, index);
    }

    fn errors_mut(&mut self) -> &mut Errors {
        match &mut self.body {
            Some(body) => &mut body.state.errors,
            None => &mut self.told,
        }
    }

    /// The first stream error of any kind (by event number).
    #[must_use]
    pub fn first_error(&self) -> Option<&StreamError> {
        self.errors().first()
    }

    /// Chat Completions choices other than the one assembled that were skipped.
    #[must_use]
    pub fn ignored_choices(&self) -> u64 {
        self.body
            .as_ref()
            .map_or(0, |b| b.decoder.ignored_choices())
    }

    /// The reasoning that ended whole so far, in output order (Anthropic's `thinking` and
    /// `redacted_thinking` blocks, Responses `reasoning` items, Bedrock `reasoningContent`
    /// blocks): what the next request must send back before the turn's tool calls.
    #[must_use]
    pub fn reasoning(&self) -> &[Reasoning] {
        &self.kept.reasoning
    }

    /// Keeps a reasoning block that ended whole in a stream whose events the caller reads
    /// itself (chunk objects fed one by one), after its bytes were counted as they streamed
    /// ([`Assembler::keep_text`]), as the body's own blocks are.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`StreamDecoder::finish`].
    pub fn keep_reasoning(&mut self, block: Reasoning) -> Result<(), Misuse> {
        self.keep_reasoning_before(block, 0)
    }

    /// Keeps a reasoning block as [`StreamDecoder::keep_reasoning`] does, `before` places
    /// from the end: in output order, it came before the last `before` blocks kept (a
    /// Responses item read from the finished response of a stream joined part way, which
    /// came before items the stream brought).
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`StreamDecoder::finish`].
    pub fn keep_reasoning_before(&mut self, block: Reasoning, before: usize) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        self.kept.keep(block, before);
        Ok(())
    }

    /// Lets go of the reasoning block kept last in a stream whose events the caller reads
    /// itself, its bytes given back: the item that followed it is not one the next turn sends
    /// (a Responses hosted tool's call), and the API refuses the block alone.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`StreamDecoder::finish`].
    pub fn drop_last_reasoning(&mut self) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        self.kept.drop_last(&mut self.assembler);
        Ok(())
    }

    /// The response of a stream whose events the caller reads itself starts again (a replay
    /// after a reconnect): the reasoning blocks kept so far come again, and are let go.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`StreamDecoder::finish`].
    pub fn forget_reasoning(&mut self) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        self.kept.restart(&mut self.assembler);
        Ok(())
    }

    /// A text block starts in a stream whose events the caller reads itself, after `at`
    /// characters of the assistant text it kept: its place among the calls and reasoning
    /// blocks goes on the calls at finish (metadata `text_before`, `text_after`), as the
    /// body's own text blocks' do.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`StreamDecoder::finish`].
    pub fn mark_text_block(&mut self, at: usize) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        let (reasoning, calls) = (self.kept.reasoning.len(), self.assembler.len());
        self.kept.layout.mark(at, reasoning, calls);
        Ok(())
    }

    /// Where each text block of a turn with no call began among its reasoning blocks, once
    /// finished: the JSON text of a list of `[characters of text before it, reasoning blocks
    /// before it]`, the places that a turn with calls writes on them (metadata `text_before`,
    /// `text_after`). `None` before [`StreamDecoder::finish`], with calls, without text blocks,
    /// or past the most blocks kept.
    #[must_use]
    pub fn text_places(&self) -> Option<&str> {
        self.kept.places.as_deref()
    }

    /// The text block begun last in a stream whose events the caller reads itself carries the
    /// Gemini thought signature `json` (a JSON string), as the body's own text parts do: it
    /// goes with the block's place.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`StreamDecoder::finish`].
    pub fn sign_text_block(&mut self, json: &str) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        self.kept.layout.sign(json);
        Ok(())
    }

    /// Keeps a citation (JSON text of an object) of the text block that started last in a
    /// stream whose events the caller reads itself ([`StreamDecoder::mark_text_block`]): it
    /// goes with the block's place, as the body's own citations. False when
    /// it does not fit `max_stream_bytes` (the response is refused).
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`StreamDecoder::finish`].
    pub fn keep_citation(&mut self, json: &str) -> Result<bool, Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        Ok(self.kept.cite(&mut self.assembler, json))
    }

    /// The assembler (for early errors or partial values while the stream runs).
    #[must_use]
    pub fn assembler(&self) -> &Assembler {
        &self.assembler
    }

    /// The assembler, mutably (for deltas that arrive outside the body).
    pub fn assembler_mut(&mut self) -> &mut Assembler {
        &mut self.assembler
    }
}

/// Frames the next piece of an event stream's body and reads the events it completes.
fn frame(body: &mut Body, assembler: &mut Assembler, kept: &mut Kept, bytes: &[u8]) {
    let Body {
        framer,
        decoder,
        state,
        ..
    } = body;
    let framed = framer.push(bytes, |event| {
        read_event(state, decoder, assembler, kept, event);
    });
    if !state.closed {
        state.note_dropped(assembler, framer.dropped_events());
    }
    let errors = &mut state.errors;
    let new = framer.dropped_events() - errors.counts[StreamErrorKind::EventTooLarge.slot()];
    if let Err(e @ SseError::EventTooLarge { after, .. }) = framed {
        errors.record_n(StreamErrorKind::EventTooLarge, new, after + 1, || {
            e.to_string()
        });
    }
}

/// A piece of a body that has not yet told whether it is an event stream (see [`Shape`]), or
/// of a JSON document.
#[cold]
#[inline(never)]
fn push_untold(body: &mut Body, assembler: &mut Assembler, kept: &mut Kept, bytes: &[u8]) {
    let held = match &mut body.shape {
        Shape::Events => return frame(body, assembler, kept, bytes),
        Shape::Refused => return,
        Shape::Document(held) => held,
        Shape::Untold(held) => {
            let first = bytes
                .iter()
                .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0xEF | 0xBB | 0xBF));
            match first {
                Some(b'{' | b'[') => {
                    body.shape = Shape::Document(std::mem::take(held));
                    return push_untold(body, assembler, kept, bytes);
                }
                Some(_) => {
                    let held = std::mem::take(held);
                    assembler.release(held.len());
                    body.shape = Shape::Events;
                    frame(body, assembler, kept, &held);
                    return frame(body, assembler, kept, bytes);
                }
                None => held,
            }
        }
    };
    // Counted as the response's text is: a document past the limit is refused as a stream
    // past it is, and never held whole.
    if assembler.keep_text(bytes.len()) {
        held.extend_from_slice(bytes);
    } else {
        assembler.release(held.len());
        body.shape = Shape::Refused;
        body.state.note_limit(assembler);
    }
}

/// The end of a body that never told it is an event stream: what it held goes to the framer,
/// or, for a JSON document, its events are read.
#[cold]
#[inline(never)]
fn end_untold(body: &mut Body, assembler: &mut Assembler, kept: &mut Kept) {
    let document = match std::mem::replace(&mut body.shape, Shape::Events) {
        Shape::Untold(held) => {
            assembler.release(held.len());
            return frame(body, assembler, kept, &held);
        }
        Shape::Document(held) => held,
        Shape::Events | Shape::Refused => return,
    };
    assembler.release(document.len());
    // A transport that broke off raised in the SDK, which read no response.
    let read = if assembler.is_interrupted() {
        Document::NotJson
    } else {
        whole::read(&document)
    };
    match read {
        Document::Events(events) => {
            let Body { decoder, state, .. } = body;
            for data in &events {
                let event = Event {
                    event: b"",
                    data: data.as_bytes(),
                    id: b"",
                    dropped_before: 0,
                };
                read_event(state, decoder, assembler, kept, event);
            }
        }
        // Told as `assemble` tells it, so that the stream does not end empty without a word.
        Document::Unknown => body.state.errors.record(
            StreamErrorKind::TruncatedBody,
            body.state.events + 1,
            || {
                format!(
                    "the server answered a JSON document, not an event stream ({} bytes): no \
                     event was read",
                    document.len()
                )
            },
        ),
        // Framed as any body: whatever events it holds are read (a first line of no field
        // the spec knows), and one cut is told.
        Document::NotJson => frame(body, assembler, kept, &document),
    }
}

/// Decodes one event the framer dispatched and applies its actions.
fn read_event(
    state: &mut State,
    decoder: &mut Decoder,
    assembler: &mut Assembler,
    kept: &mut Kept,
    event: Event<'_>,
) {
    state.events += 1;
    let data = event.data.trim_ascii();
    if state.closed {
        // The `openai` SDK stops reading at `[DONE]`: what follows is in no response
        // it shows, and a call in it must not run from the raw path alone.
        if !data.is_empty() && !is_done_marker(data) {
            state
                .errors
                .record(StreamErrorKind::AfterDone, state.events, || {
                    String::from_utf8_lossy(&event.data[..event.data.len().min(200)]).into_owned()
                });
        }
        return;
    }
    // Anthropic streams end with `message_stop`, and the `anthropic` SDK reads on past
    // a `[DONE]`, so only an OpenAI stream (or one of no known format yet) ends there.
    state.closed = is_done_marker(data) && state.format != Some(Format::Anthropic);
    state.note_dropped(assembler, event.dropped_before);
    let mut apply = |action: Action<'_>| state.apply(assembler, kept, action);
    match decoder.decode(event.event, event.data, &mut apply) {
        Ok(format) => {
            if state.format.is_none() {
                state.format = format;
            }
        }
        Err(e) => {
            let kind = match e {
                EventError::Malformed(_) | EventError::InvalidUtf8(_) => {
                    // It may have carried a fragment of any open call.
                    let _ = assembler.lose_event("a malformed event");
                    StreamErrorKind::MalformedEvent
                }
                // An event of a type no format has: not a call's (SDKs skip it too).
                EventError::UnknownEvent(_) => StreamErrorKind::UnknownEvent,
            };
            state.errors.record(kind, state.events, || e.to_string());
        }
    }
    state.note_limit(assembler);
}

/// What a response keeps for the next turn besides its calls and text.
#[derive(Debug, Default)]
struct Kept {
    /// Reasoning blocks that ended whole, in output order: decoded from the body, or
    /// kept by a caller that reads the events itself ([`StreamDecoder::keep_reasoning`]).
    reasoning: Vec<Reasoning>,
    /// Where in `reasoning` the block kept last is, until it is let go: not always at the end
    /// (see [`Kept::keep`]).
    last: Option<usize>,
    /// Where the text blocks began among the calls and reasoning blocks.
    layout: TextLayout,
    /// Once finished, the places of a turn with no call to carry them
    /// ([`StreamDecoder::text_places`]).
    places: Option<String>,
    /// Bytes of the citations the text blocks carry ([`TextLayout::cite`]), counted toward
    /// `max_stream_bytes` until finish.
    cited_bytes: usize,
}

impl Kept {
    /// Keeps a reasoning block that came before the last `before` blocks kept (0: after all).
    fn keep(&mut self, block: Reasoning, before: usize) {
        let at = self.reasoning.len().saturating_sub(before);
        self.reasoning.insert(at, block);
        self.last = Some(at);
    }

    /// Lets go of the block kept last: the item after it is not sent back, and the API
    /// refuses the block alone.
    fn drop_last(&mut self, assembler: &mut Assembler) {
        let at = self
            .last
            .take()
            .unwrap_or(self.reasoning.len().saturating_sub(1));
        if at < self.reasoning.len() {
            assembler.release(self.reasoning.remove(at).kept_bytes());
        }
    }

    /// The response starts again: the reasoning blocks kept so far are let go, as are the
    /// citations (they come again with their blocks, which keep their places).
    fn restart(&mut self, assembler: &mut Assembler) {
        let bytes: usize = self.reasoning.drain(..).map(|b| b.kept_bytes()).sum();
        assembler.release(bytes + std::mem::take(&mut self.cited_bytes));
        self.last = None;
        self.layout.restart(assembler.len());
    }

    /// Keeps a citation (JSON text) of the text block that started last, counted as assistant
    /// text is; false when it does not fit (the response is refused). One that no text block's
    /// place holds (none started, or the places were let go) is not kept: the next turn could
    /// not say which block it is for.
    fn cite(&mut self, assembler: &mut Assembler, json: &str) -> bool {
        if !self.layout.citable() {
            return true;
        }
        if !assembler.keep_text(json.len()) {
            return false;
        }
        self.cited_bytes += json.len();
        self.layout.cite(json);
        true
    }
}

/// Merges the members of the usage object `next` (JSON text) into `merged`; a `next` that is
/// no object leaves it as it was.
///
/// A member sent as `null` (Anthropic's `message_delta` repeats `input_tokens` as `null`,
/// OpenAI-compatible servers send `prompt_tokens_details: null`) is no count: it is left out,
/// at any depth, and never erases a count already known. The SDKs read usage the same way
/// (their objects drop `None` members), so every way in reports the same usage.
///
/// Usage is a handful of counts; a provider's is never near these bounds. What passes them is
/// left out, so that a stream of usage objects costs memory and time in proportion to what
/// each brings (never to all of them so far): an object whose text is longer than
/// [`USAGE_MAX_BYTES`] counts nothing, and members past the first [`USAGE_MAX_MEMBERS`] are
/// not added (those known are still updated). Nor does an object holding an integer of more
/// than [`MAX_INT_DIGITS`] digits, which Python cannot read: `usage` would raise.
fn merge_usage(merged: &mut Option<serde_json::Map<String, serde_json::Value>>, next: &str) {
    if next.len() > USAGE_MAX_BYTES {
        return;
    }
    type Usage = serde_json::Map<String, serde_json::Value>;
    let read = serde_json::from_str::<Usage>(next).or_else(|e| {
        // An unpaired surrogate escape, which `json.loads` takes: U+FFFD in its place, names
        // and values, as the SDK path's `merge_usage` writes it.
        crate::envelope::whole_strings(next)
            .ok_or(e)
            .and_then(|whole| serde_json::from_str::<Usage>(&whole))
    });
    let Ok(fresh) = read else {
        // A usage that is no object (a broken bridge's number or text) counts nothing.
        return;
    };
    if fresh.values().any(has_long_integer) {
        return;
    }
    let merged = merged.get_or_insert_with(serde_json::Map::new);
    for (k, v) in fresh {
        if let Some(v) = without_nulls(v) {
            if merged.len() < USAGE_MAX_MEMBERS || merged.contains_key(&k) {
                merged.insert(k, v);
            }
        }
    }
}

/// The longest usage object read, in bytes of JSON text.
pub const USAGE_MAX_BYTES: usize = 8 * 1024;
/// The most members merged usage keeps.
pub const USAGE_MAX_MEMBERS: usize = 64;

/// `value` with the `null` members of its objects left out, at any depth; `None` for `null`.
fn without_nulls(value: serde_json::Value) -> Option<serde_json::Value> {
    match value {
        serde_json::Value::Null => None,
        serde_json::Value::Object(map) => Some(serde_json::Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| without_nulls(v).map(|v| (k, v)))
                .collect(),
        )),
        other => Some(other),
    }
}
