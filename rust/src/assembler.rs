//! Assembles streamed tool-call fragments into complete calls, one [`Assembler`] per response
//! stream.
//!
//! Design notes:
//! - The wire `index` is an opaque key, never an array subscript: it may be missing, constant,
//!   start at 1 or be negative (provider quirks 1-5). Calls get dense ordinals in order of first
//!   appearance, and `finish` returns every started call exactly once in that order.
//! - Each call owns a [`Scanner`] that validates its arguments once per byte; the scanner's
//!   buffer is the call's raw argument text. With progress tracking the bytes are scanned as
//!   they arrive (the caller drains events per fragment). Otherwise fragments are appended and
//!   scanned, through the pre-check if any (`Call::sync`), when something reads the call's
//!   state — routing a named delta, a resend, `drain_errors`, `has_certain_error`, partial
//!   values, `finish` — or, for a pre-checked call, once 128 bytes wait, because resuming the
//!   scanner per 3-20 byte fragment cost more than scanning the bytes. The bound keeps `finish`
//!   (the latency from the last fragment to a validated call) independent of the arguments'
//!   size. A call without a pre-check is scanned in one pass when read. A caller who drains
//!   errors after every fragment gets them at the same byte as before.
//! - `finish_deferring_scans` goes one step further for such a call: its text is left
//!   unscanned past the end of the stream, for a reader that builds the value anyway to prove it
//!   valid more cheaply (the Python binding: orjson plus [`crate::outline`]), or to scan it.
//! - Routing rules (quirks 1-26): a nameless delta only continues a call; a named delta starts a
//!   new call at a key whose call already has a name and argument text (several calls sent under
//!   one index); an exact repeat of the stored name is ignored (quirk 8); `id` and `type` are set
//!   once (quirks 12-17); a fragment that strictly extends the whole buffer switches the call to
//!   cumulative mode (quirk 19) once appending it would break the JSON; while both readings stay
//!   valid, the fragments are held and each reading scanned, until one breaks or the call ends
//!   (then the one that is a whole value wins, appending on a tie); a repeat of a complete
//!   buffer is dropped (quirk 20).
//! - Bad model output never fails `feed`: it ends up as the call's [`Error`]. `feed` fails only on
//!   misuse (after `finish`).
//! - `drain_errors` and `has_certain_error` visit only the calls changed since they last
//!   looked (see `Calls`): a gateway asks after every chunk, and visiting all 1,024 calls a
//!   response may open cost O(calls) per chunk.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Misuse, SchemaDetail};
use crate::precheck::{CallCheck, Registry};
use crate::progress::{Progress, ProgressItem, Recorded};
use crate::scanner::{is_ws, ScanConfig, Scanner};
use crate::schema::REDACTED;
use crate::tokens::same_tokens;
use crate::value::{build, BuildOptions, PartialOptions, Sink};

/// The call type of a free-form call (a Responses `custom_tool_call`): its text is the tool's
/// input as the model wrote it, not JSON arguments. Such a call is not parsed, pre-checked or
/// tracked for progress; it ends as an [`ErrorKind::FreeFormCall`] error with its text kept
/// (see [`Assembler::finish`]), as no JSON-schema tool can run it.
pub const FREE_FORM_KIND: &str = "custom";

/// How one delta carries arguments.
#[derive(Debug, Clone, Copy)]
pub enum Arguments<'a> {
    /// A text fragment to append.
    Text(&'a [u8]),
    /// The complete JSON text of a value sent as an object rather than a string (quirk 23).
    Value(&'a [u8]),
}

/// One tool-call delta as it comes off the wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct Delta<'a> {
    /// The wire index; `None` when the provider omitted it.
    pub index: Option<i64>,
    /// The call id, if this delta carries one.
    pub id: Option<&'a str>,
    /// A name or a fragment of it.
    pub name: Option<&'a str>,
    /// The call type (`function`), assigned once.
    pub kind: Option<&'a str>,
    /// Argument text or value.
    pub arguments: Option<Arguments<'a>>,
    /// The event that carried the delta starts a call (a Responses `output_item.added`, an
    /// Anthropic `content_block_start`): a header equal to an earlier call's under its key is
    /// then that call sent again (a replayed stream), even while the call is still open.
    pub start: bool,
}

/// Settings of an assembler.
#[derive(Debug, Clone, Copy)]
pub struct AssemblerConfig {
    /// Limits of each call's JSON text.
    pub scan: ScanConfig,
    /// Record (path, appended text) progress items for progressive UIs.
    pub track_progress: bool,
    /// Most calls one response may start (default 1,024): past it, the response is refused
    /// whole (see [`StreamLimit`]).
    pub max_calls: usize,
    /// Most bytes of argument text (and, on the raw SSE path, assistant text) one response may
    /// send, all calls together (default 32 MiB): past it, the response is refused whole.
    pub max_stream_bytes: usize,
}

impl Default for AssemblerConfig {
    fn default() -> Self {
        Self {
            scan: ScanConfig::default(),
            track_progress: false,
            max_calls: 1024,
            max_stream_bytes: 32 * 1024 * 1024,
        }
    }
}

impl AssemblerConfig {
    /// Checks that every limit is in its allowed range.
    ///
    /// # Errors
    /// A message naming the offending setting.
    pub fn validate(&self) -> Result<(), String> {
        self.scan.validate()?;
        if self.max_calls == 0 {
            return Err("max_calls must be at least 1".to_owned());
        }
        if self.max_stream_bytes == 0 {
            return Err("max_stream_bytes must be at least 1".to_owned());
        }
        Ok(())
    }
}

/// A per-stream limit a response passed. Past it nothing more of the response is kept (memory
/// stays bounded whatever the provider sends), and every call of the response fails with
/// [`ErrorKind::TooLarge`]: a response that ran away is refused whole rather than run in part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamLimit {
    /// More calls than [`AssemblerConfig::max_calls`].
    Calls(usize),
    /// More bytes than [`AssemblerConfig::max_stream_bytes`].
    Bytes(usize),
}

impl StreamLimit {
    /// The limit's setting (`max_calls`, `max_stream_bytes`) and its value.
    #[must_use]
    pub fn setting(self) -> (&'static str, usize) {
        match self {
            Self::Calls(max) => ("max_calls", max),
            Self::Bytes(max) => ("max_stream_bytes", max),
        }
    }

    /// The error of every call of a response that passed this limit: `too_large`, the
    /// limit's setting as its keyword and its value as what was expected.
    #[must_use]
    pub fn error(self) -> Error {
        let (setting, max) = self.setting();
        let mut error = Error::with_message(ErrorKind::TooLarge, 0, String::new(), self.message());
        error.detail = Some(Box::new(SchemaDetail {
            keyword: setting.to_owned(),
            expected: format!("at most {max}"),
            got: String::new(),
        }));
        error
    }

    /// Why the calls of a response that passed this limit fail.
    #[must_use]
    pub fn message(self) -> String {
        match self {
            Self::Calls(max) => format!(
                "the response started more than {max} tool calls (max_calls): it is refused \
                 whole, and none of its calls runs"
            ),
            Self::Bytes(max) => format!(
                "the response sent more than {max} bytes of arguments and text \
                 (max_stream_bytes): it is refused whole, and none of its calls runs"
            ),
        }
    }
}

/// Anomalies worth knowing about that did not make a call invalid.
pub mod warning {
    /// The provider resent the whole argument text in every chunk; handled.
    pub const CUMULATIVE_ARGUMENTS: &str = "cumulative_arguments";
    /// A consolidated repeat of complete arguments was dropped.
    pub const REPEAT_DROPPED: &str = "repeat_dropped";
    /// The arguments contain U+FFFD, usually a character split and mangled before it reached us.
    pub const REPLACEMENT_CHARACTER: &str = "replacement_character";
    /// The wire id was already used by an earlier call, or is the synthetic id of a call that
    /// has none ([`synthetic_id`](super::synthetic_id)); this call got a derived id no other call of the turn has.
    pub const DUPLICATE_ID: &str = "duplicate_id";
    /// The call had no argument text; `{}` was used.
    pub const EMPTY_ARGUMENTS: &str = "empty_arguments";
    /// The provider sent the call again from its start (a stream replayed after a reconnect):
    /// the text it already had was dropped, not appended.
    pub const REPLAY_DROPPED: &str = "replay_dropped";
    /// Argument text came after the provider ended the call, whose value was whole: it could
    /// only have made the call invalid (a delta a proxy sent again), so it was dropped.
    pub const LATE_FRAGMENT_DROPPED: &str = "late_fragment_dropped";
    /// A provider field for the call could not be written as JSON (nested past what the
    /// binding's writer allows) and was not kept: the next turn lacks it.
    pub const METADATA_DROPPED: &str = "metadata_dropped";
    /// A custom tool call's finished item stated another input than its
    /// `custom_tool_call_input.done` event: the item's, which the provider keeps as the call,
    /// replaced it.
    pub const INPUT_MISMATCH: &str = "input_mismatch";

    /// Every warning: a call written out (a pickled one) reads its warnings back from it.
    pub const ALL: [&str; 9] = [
        CUMULATIVE_ARGUMENTS,
        REPEAT_DROPPED,
        REPLACEMENT_CHARACTER,
        DUPLICATE_ID,
        EMPTY_ARGUMENTS,
        REPLAY_DROPPED,
        LATE_FRAGMENT_DROPPED,
        METADATA_DROPPED,
        INPUT_MISMATCH,
    ];
}

/// What a provider's statement of a call's whole arguments (a Responses `.done` summary) says
/// of the text the call holds (see [`Assembler::check_summary`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summary {
    /// The call holds those arguments (fragments held two ways are decided by it).
    Same,
    /// The call holds no argument text yet: the summary is its text, to be fed as a fragment.
    Fill,
    /// The call holds a start of the summary (its last deltas were lost): the summary's text
    /// completes it.
    Extend,
    /// The call holds other text: it became an [`ErrorKind::ArgumentsMismatch`] error, its
    /// text kept as its fragments made it.
    Mismatch,
}

/// A finished call.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// Dense position in order of first appearance, from 0.
    pub ordinal: usize,
    /// The wire index as received (first delta of the call).
    pub index: Option<i64>,
    /// The call id (unique within the stream), if the provider sent one.
    pub id: Option<String>,
    /// The tool name.
    pub name: Option<String>,
    /// The call type, if sent.
    pub kind: Option<String>,
    /// The raw argument text (`{}` when none arrived).
    pub arguments: Vec<u8>,
    /// Why the call must not be executed, if anything.
    pub error: Option<Error>,
    /// Opaque provider fields kept for the next turn: (key, JSON text).
    pub metadata: Vec<(String, String)>,
    /// Anomalies that were handled (see [`warning`]).
    pub warnings: Vec<&'static str>,
    /// True when `arguments` is one complete JSON value (an object or not).
    pub complete: bool,
    /// Every number in `arguments` is plain (see [`Scanner::plain_numbers`]).
    pub plain_numbers: bool,
    /// The registry the call's arguments were checked against while they streamed (the
    /// assembler's): a violation of that registry's schema would be in `error`. Only that
    /// registry's schemas are known to hold; see [`ToolCall::prechecked_by`].
    pub precheck_registry: Option<Arc<Registry>>,
    /// Set by [`Assembler::finish_deferring_scans`] on a call whose only open question is
    /// whether its text is one JSON object: the text has not been scanned, and `error`,
    /// `complete` and `plain_numbers` hold nothing until [`ToolCall::scan_deferred`] runs.
    pub unscanned: bool,
    /// The limits and policies its text is scanned with (its assembler's): a replay of the
    /// call needs them to reach the same verdict.
    pub limits: ScanConfig,
    /// The limits of the whole response it came in, `(max_calls, max_stream_bytes)`: a replay
    /// of a response refused whole needs them too.
    pub stream_limits: (usize, usize),
    /// Why the provider stopped the call (`content_filter`, a refusal, ...), when it did: its
    /// error is then [`ErrorKind::Filtered`].
    pub stop_reason: Option<String>,
}

/// What a scan decides about a call's text.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonVerdict {
    /// The JSON error, `not_object`, or None.
    pub error: Option<Error>,
    /// The text is one complete JSON value.
    pub complete: bool,
    /// Every number is plain (see [`Scanner::plain_numbers`]).
    pub plain_numbers: bool,
}

impl JsonVerdict {
    /// One JSON object, valid, with plain numbers.
    pub const ACCEPTED: Self = Self {
        error: None,
        complete: true,
        plain_numbers: true,
    };
}

impl ToolCall {
    /// True when the call's arguments were checked against a registry while they streamed.
    #[must_use]
    pub fn prechecked(&self) -> bool {
        self.precheck_registry.is_some()
    }

    /// True when `registry` itself pre-checked the call, so its schemas are known to hold. A
    /// tool of the same name in another registry may have another schema (a looser one lets
    /// through what this one refuses): a call checked there must be checked again here.
    #[must_use]
    pub fn prechecked_by(&self, registry: &Arc<Registry>) -> bool {
        self.precheck_registry
            .as_ref()
            .is_some_and(|checked| Arc::ptr_eq(checked, registry))
    }

    /// The verdict on the text of a call that [`Assembler::finish_deferring_scans`] left
    /// unscanned, by scanning it now: exactly what [`Assembler::finish`] would have set. None
    /// for a call already settled.
    #[must_use]
    pub fn scan_unscanned(&self) -> Option<JsonVerdict> {
        if !self.unscanned {
            return None;
        }
        let mut scanner = Scanner::new(self.limits);
        scanner.push(&self.arguments);
        let json_result = scanner.finish();
        Some(JsonVerdict {
            complete: json_result.is_ok(),
            plain_numbers: scanner.plain_numbers(),
            error: json_verdict(&self.arguments, json_result),
        })
    }

    /// True when its assembler let a repeated key's last value win (`duplicate_keys`), which
    /// building the value must know.
    #[must_use]
    pub fn last_key_wins(&self) -> bool {
        self.limits.duplicate_keys == crate::scanner::DuplicateKeys::LastWins
    }

    /// Settles a call left unscanned with `verdict` (from [`ToolCall::scan_unscanned`], or
    /// [`JsonVerdict::ACCEPTED`] once its text is proved valid another way).
    pub fn settle(&mut self, verdict: JsonVerdict) {
        self.unscanned = false;
        self.error = verdict.error;
        self.complete = verdict.complete;
        self.plain_numbers = verdict.plain_numbers;
    }

    /// Scans a call left unscanned and settles it; does nothing on a settled call.
    pub fn scan_deferred(&mut self) {
        if let Some(verdict) = self.scan_unscanned() {
            self.settle(verdict);
        }
    }

    /// Builds the parsed value into `sink`, when the arguments are complete JSON.
    ///
    /// # Errors
    /// The sink's own errors.
    pub fn value_into<S: Sink>(&self, sink: &mut S) -> Result<Option<S::Value>, S::Error> {
        if !self.complete {
            return Ok(None);
        }
        build(
            &self.arguments,
            BuildOptions::for_complete(self.last_key_wins()),
            sink,
        )
    }
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum ArgMode {
    Fragments,
    Cumulative,
    Value,
}

#[derive(Debug)]
struct Call {
    index: Option<i64>,
    id: Option<String>,
    name: String,
    kind: Option<String>,
    scanner: Scanner,
    mode: ArgMode,
    ended: bool,
    stopped: Option<String>,
    /// An error in how the fragments arrived, not in what they say: object and text fragments
    /// mixed, or an event that may have carried some of them lost in transit.
    arrival: Option<Box<Error>>,
    metadata: Vec<(String, String)>,
    warnings: Vec<&'static str>,
    // Boxed, like `progress` and `arrival`: most calls have none, and inline they made a `Call`
    // 952 bytes, most of the memory of a stream in flight besides its text.
    check: Option<Box<CallCheck>>,
    /// Early errors already handed out by `drain_errors`.
    reported: Reported,
    progress: Option<Box<Progress>>,
    /// Fragments that start with the whole buffer while plain appending is also valid: a
    /// cumulative resend or an ordinary continuation. They wait, both readings kept, until a
    /// later fragment breaks one of them or the call ends.
    held: Option<Box<Held>>,
    /// The provider is sending the call again from its start (see [`Retread`]).
    retread: Option<Retread>,
    /// The bytes of the call counted toward `max_stream_bytes` (see [`Call::kept_bytes`]).
    counted: usize,
    /// Whether `drain_errors` and `has_certain_error` have looked at the call since it last
    /// changed (see [`Calls`]).
    watch: u8,
}

/// A call the provider sends again from its start: its header came again (same key, id and
/// name) after its text, as a stream replayed after a reconnect sends it. The fragments that
/// follow are compared with the text the call holds rather than appended, so a replayed
/// stream gives each call once, with its text once.
#[derive(Debug, Clone, Copy)]
struct Retread {
    /// How much of the call's text the replayed fragments have matched.
    pos: usize,
    /// The call was whole (ended, or its value complete) when the replay began: text that
    /// differs from it is another call under the same id, as before replays were recognised.
    /// Otherwise the matched text was a continuation after all (a provider that repeats the
    /// header) and is appended.
    whole: bool,
    /// Some replayed text was dropped as the call's own: a replay cut short still says so.
    dropped: bool,
}

/// Fragments held while two readings of them stay possible (see `Call::held`): appended to the
/// call's text, or each resending the whole text so far (quirk 19). A resend stream and a
/// self-similar value (`{"a":` then `{"a":[` then `{"a":[]}`, then `]}}`) can look alike for
/// several fragments; deciding at the first fragment that both readings accept ran a valid
/// but wrong call, or broke a valid one. Each reading is scanned as its fragments arrive, so a
/// long ambiguity costs one more pass over its text per reading, never a replay.
#[derive(Debug)]
struct Held {
    /// The call's text with every held fragment appended.
    appended: Reading,
    /// The last held fragment alone, as a resending provider means it; each fragment extends
    /// the one before, so only the new part of each is pushed.
    resent: Reading,
    /// A held fragment repeated the one before it: a resend stream's repeat (quirk 20).
    repeated: bool,
    /// Set when both readings already have an error no later input can fix: the call is
    /// invalid whichever way the fragments are decided, so the early signal does not wait for
    /// the decision. Holds the early errors both readings share: those are certain whichever
    /// way a later fragment decides.
    early: Option<EarlyErrors>,
}

/// One reading of a call's text: its scanner and, with a registry, its own pre-check.
#[derive(Debug)]
struct Reading {
    scanner: Scanner,
    check: Option<CallCheck>,
}

impl Reading {
    /// A reading of `text`, pre-checked against `name` when there is a registry.
    fn of(text: &[u8], config: ScanConfig, name: &str, registry: Option<&Registry>) -> Self {
        let mut reading = Self {
            scanner: Scanner::new(config),
            check: registry.map(|reg| CallCheck::new(reg, name, b"", &config)),
        };
        reading.push(text);
        reading
    }

    fn push(&mut self, bytes: &[u8]) {
        match &mut self.check {
            Some(check) => check.push(&mut self.scanner, bytes),
            None => self.scanner.feed(bytes),
        }
    }

    /// True when the text can no longer become valid JSON.
    fn broken(&self) -> bool {
        certain_grammar_error(&self.scanner).is_some()
    }

    /// True when the text broke the JSON grammar, so the fragments cannot have meant it. A
    /// limit it crossed (depth, size, digits) is no such evidence: a self-similar value sent
    /// in fragments of its period (`{"a":` again and again) is over the depth limit appended
    /// while its resend reading is still open, and taking the resend then reported a valid but
    /// too deep value as text the provider never sent, cut at another place by every split.
    fn refuted(&self) -> bool {
        certain_grammar_error(&self.scanner).is_some_and(|e| !e.kind.is_limit())
    }

    /// True when `bytes` appended would leave the text valid JSON so far (on a copy).
    fn accepts(&self, bytes: &[u8]) -> bool {
        !self.broken() && {
            let mut trial = self.scanner.clone();
            !matches!(trial.push(bytes), crate::scanner::Status::Invalid(_))
        }
    }

    /// Gives the reading a pre-check for `name`, caught up on the text it holds.
    fn check_against(&mut self, registry: &Registry, name: &str) {
        let config = *self.scanner.config();
        self.check = Some(CallCheck::new(registry, name, self.scanner.text(), &config));
    }

    /// The pre-check's violations for early reporting (see [`CallCheck::early_errors`]).
    fn early_checks(&self) -> impl Iterator<Item = &Error> {
        self.check.iter().flat_map(CallCheck::early_errors)
    }

    /// True when the text has a complete value and nothing else.
    fn completes(&self) -> bool {
        let mut trial = self.scanner.clone();
        trial.finish().is_ok()
    }
}

impl Held {
    /// Holds `fragment`, which starts with the whole of `call`'s (synced) text.
    fn new(call: &Call, fragment: &[u8], registry: Option<&Registry>) -> Self {
        let config = *call.scanner.config();
        let registry = registry.filter(|_| call.check.is_some());
        // The call's scanner is copied rather than replayed; only a pre-check must replay.
        let mut appended = Reading {
            scanner: call.scanner.clone(),
            check: None,
        };
        if let Some(reg) = registry {
            appended.check_against(reg, &call.name);
        }
        appended.push(fragment);
        let mut held = Self {
            appended,
            resent: Reading::of(fragment, config, &call.name, registry),
            repeated: false,
            early: None,
        };
        held.judge();
        held
    }

    /// The last held fragment: the whole text, read as a resend.
    fn last(&self) -> &[u8] {
        self.resent.scanner.text()
    }

    /// Whether `fragment` keeps the resend reading: it extends the last held fragment, or
    /// repeats it.
    fn resends(&self, fragment: &[u8]) -> bool {
        fragment.starts_with(self.last())
    }

    /// Whether the resend reading is one whole value and the appended reading is not.
    fn only_resend_completes(&self) -> bool {
        !self.appended.completes() && self.resent.completes()
    }

    /// Whether `fragment` is more of this call as `feed_text` would take it: a resend of the
    /// last held fragment (broken or not), or text the appended reading accepts (on a copy).
    fn continued_by(&self, fragment: &[u8]) -> bool {
        self.resends(fragment) || self.appended.accepts(fragment)
    }

    /// Rebuilds both readings' pre-checks for `name` (a name completed while fragments are
    /// held changes what each reading breaks).
    fn recheck(&mut self, registry: &Registry, name: &str) {
        for reading in [&mut self.appended, &mut self.resent] {
            reading.check_against(registry, name);
        }
        self.judge();
    }

    /// Records the early errors both readings share, if both have a certain error.
    fn judge(&mut self) {
        let (appended, resent) = (&self.appended, &self.resent);
        let failed = |r: &Reading| has_certain_error(&r.scanner, r.check.as_ref());
        self.early = (failed(appended) && failed(resent)).then(|| {
            // Only what both readings have is certain: a later fragment may still pick either,
            // and an error reported from the one it drops would be an error the call never has.
            let grammar = certain_grammar_error(&appended.scanner)
                .filter(|&e| certain_grammar_error(&resent.scanner) == Some(e))
                .cloned();
            let checks = appended
                .early_checks()
                .zip(resent.early_checks())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a.clone())
                .collect();
            EarlyErrors { grammar, checks }
        });
    }
}

/// The early errors of one reading of a call's text, by source (see [`Reported`]).
#[derive(Debug, PartialEq)]
struct EarlyErrors {
    grammar: Option<Error>,
    checks: Vec<Error>,
}

impl Call {
    /// True when nothing more belongs to the call's arguments: it was ended, its value is
    /// complete, or it was sent as a value (scanned up to date: see [`Call::sync`]).
    fn is_whole(&self) -> bool {
        self.ended || self.scanner.is_complete() || self.mode == ArgMode::Value
    }

    /// The bytes the call keeps of what the provider sent: its text, the fragments it holds
    /// (each reading's copy), its name and id.
    fn kept_bytes(&self) -> usize {
        let held = self.held.as_deref().map_or(0, |h| {
            h.appended.scanner.text().len() + h.resent.scanner.text().len()
        });
        self.scanner.text().len() + held + self.name.len() + self.id.as_ref().map_or(0, String::len)
    }

    /// Scans the fragments appended since the last scan, through the pre-check if there is one
    /// (a call whose progress comes from its scanner is never behind).
    fn sync(&mut self) {
        if scanned_progress(&mut self.progress).is_none() && self.scanner.unscanned() > 0 {
            self.scan_now(b"");
        }
    }

    /// Pushes `text` and whatever was appended before it through the scanner and the
    /// pre-check now (calls without progress tracking).
    fn scan_now(&mut self, text: &[u8]) {
        match &mut self.check {
            Some(check) => check.push(&mut self.scanner, text),
            None => self.scanner.feed(text),
        }
    }

    fn has_arguments(&self) -> bool {
        !self.scanner.is_blank() || self.mode == ArgMode::Value
    }
}

/// What `drain_errors` already handed out for a call, per source: the sources grow
/// independently (a grammar error can follow reported pre-check violations, and a pre-check
/// attached when the name arrives can find violations before an already reported grammar
/// error), so one count over their concatenation would report some twice and skip others.
#[derive(Debug, Default, Clone, Copy)]
struct Reported {
    /// Settled pre-check violations.
    checks: usize,
    /// The grammar error.
    grammar: bool,
    /// The arrival error.
    arrival: bool,
}

/// The open call of each wire key. Providers number parallel calls 0, 1, 2, ...: those keys
/// are looked up in a small table, as most deltas of interleaved calls need one lookup each
/// (SipHash on every one cost more than the rest of routing). Any other key goes to a map,
/// which keeps its resistance to crafted keys.
#[derive(Debug)]
struct OpenCalls {
    /// The ordinal of the open call under index `i`, or `NONE`.
    small: [u32; SMALL_KEYS],
    other: HashMap<Option<i64>, usize>,
}

const SMALL_KEYS: usize = 16;
const NONE: u32 = u32::MAX;

/// How many of the latest calls are searched for a wire id when a delta has no index.
const RECENT_BY_ID: usize = 64;

impl Default for OpenCalls {
    fn default() -> Self {
        Self {
            small: [NONE; SMALL_KEYS],
            other: HashMap::new(),
        }
    }
}

impl OpenCalls {
    /// The table slot of `key`, when it has one.
    fn slot(key: Option<i64>) -> Option<usize> {
        key.and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < SMALL_KEYS)
    }

    fn get(&self, key: Option<i64>) -> Option<usize> {
        match Self::slot(key).map(|slot| self.small[slot]) {
            Some(ordinal) if ordinal != NONE => usize::try_from(ordinal).ok(),
            _ => self.other.get(&key).copied(),
        }
    }

    fn insert(&mut self, key: Option<i64>, ordinal: usize) {
        match (Self::slot(key), u32::try_from(ordinal)) {
            (Some(slot), Ok(o)) if o != NONE => self.small[slot] = o,
            (Some(slot), _) => {
                // An ordinal too large for the table (never in practice): the map keeps it.
                self.small[slot] = NONE;
                self.other.insert(key, ordinal);
            }
            (None, _) => {
                self.other.insert(key, ordinal);
            }
        }
    }
}

/// The calls of a response, and which of them changed since each reader last looked at them:
/// [`Assembler::drain_errors`], [`Assembler::has_certain_error`],
/// [`Assembler::drain_progress_each`] and [`Assembler::lose_event`].
///
/// A gateway drains errors (and asks whether the response failed) after every chunk, and a
/// chunk changes one call or a few. Visiting every call each time cost O(calls) per chunk
/// (from 6 us to over 40 us a chunk at 1,024 calls open, with the signal and a pre-check),
/// O(chunks x calls) over a response. A call unchanged since a reader's visit has nothing new
/// for it: the visit scanned the call's text and settled its name, and a call's errors come
/// from its own state alone (and the registry, which never changes). So each change queues
/// the call, once, for each reader, and each reader visits its own queue: O(calls changed)
/// per drain. The same holds for progress items (recorded only by a change to their call) and
/// for a lost event (a call it left alone, unchanged since, it leaves alone again); a call
/// that tracks no progress is never queued for it, so a stream without progress pays nothing
/// for that reader.
///
/// Nothing outside this module touches the list: reading derefs to it, and every change goes
/// through [`Calls::push`], [`Calls::get_mut`] or [`Calls::iter_mut`], which queue the calls
/// they hand out, so a path that changes a call unseen does not compile. Once a call is
/// queued, another change costs one test of [`Call::watch`], and the queues keep their
/// capacity: a fragment allocates nothing for them.
mod watched {
    use super::{
        call_has_certain_error, drain_call_errors, drain_call_progress, settle_name, Call, Error,
        Registry,
    };

    /// Changed since `drain_errors` visited it (queued in `undrained`).
    const UNDRAINED: u8 = 1;
    /// Changed since `has_certain_error` judged it (queued in `unjudged`).
    const UNJUDGED: u8 = 2;
    /// Judged, not changed since, and failing: counted in `failing`.
    const FAILING: u8 = 4;
    /// Changed since its progress items were drained (queued in `undrained_progress`); always
    /// set on a call that tracks no progress, which is never queued for it.
    const UNPROGRESSED: u8 = 8;
    /// Changed since `lose_event` visited it (queued in `unlost`); always set on a call it
    /// lost, which it never visits again.
    const UNLOST: u8 = 16;
    const QUEUED: u8 = UNDRAINED | UNJUDGED | UNPROGRESSED | UNLOST;

    #[derive(Debug, Default)]
    pub(super) struct Calls {
        list: Vec<Call>,
        queues: Queues,
        /// Calls the two error readers visited (for tests that prove they visit only those
        /// changed).
        #[cfg(test)]
        pub(super) visited: usize,
        /// Calls the progress drain visited (as `visited`).
        #[cfg(test)]
        pub(super) visited_progress: usize,
        /// Calls `lose_event` visited (as `visited`).
        #[cfg(test)]
        pub(super) visited_lost: usize,
    }

    /// One queue per reader.
    #[derive(Debug, Default)]
    struct Queues {
        undrained: Queue,
        unjudged: Queue,
        undrained_progress: Queue,
        /// Calls whose progress items wait for their name, while `undrained_progress` is
        /// drained (kept for its buffer).
        waiting: Vec<usize>,
        unlost: Queue,
        /// Calls with the `FAILING` bit.
        failing: usize,
    }

    /// Ordinals of queued calls, in no order. The first is kept inline: a response of one call
    /// never allocates for it.
    #[derive(Debug, Default)]
    struct Queue {
        one: Option<usize>,
        more: Vec<usize>,
    }

    impl Queue {
        #[inline]
        fn push(&mut self, ordinal: usize) {
            if self.one.is_none() {
                self.one = Some(ordinal);
            } else {
                self.more.push(ordinal);
            }
        }

        fn pop(&mut self) -> Option<usize> {
            self.more.pop().or_else(|| self.one.take())
        }

        /// Empties the queue into `visit`, in ascending order.
        fn drain_ascending(&mut self, mut visit: impl FnMut(usize)) {
            let one = self.one.take();
            if self.more.is_empty() {
                one.into_iter().for_each(visit);
                return;
            }
            let mut more = std::mem::take(&mut self.more);
            more.extend(one);
            more.sort_unstable();
            more.iter().copied().for_each(&mut visit);
            more.clear();
            self.more = more;
        }
    }

    /// Queues `call` (at `ordinal`) for each reader that looked at it since its last change.
    #[cold]
    #[inline(never)]
    fn queue(call: &mut Call, ordinal: usize, queues: &mut Queues) {
        if call.watch & UNDRAINED == 0 {
            queues.undrained.push(ordinal);
        }
        if call.watch & UNJUDGED == 0 {
            queues.unjudged.push(ordinal);
            if call.watch & FAILING != 0 {
                // Judged again before it counts.
                queues.failing -= 1;
            }
        }
        if call.watch & UNPROGRESSED == 0 {
            queues.undrained_progress.push(ordinal);
        }
        if call.watch & UNLOST == 0 {
            queues.unlost.push(ordinal);
        }
        call.watch = QUEUED;
    }

    impl std::ops::Deref for Calls {
        type Target = [Call];

        #[inline]
        fn deref(&self) -> &[Call] {
            &self.list
        }
    }

    impl std::ops::Index<usize> for Calls {
        type Output = Call;

        #[inline]
        fn index(&self, ordinal: usize) -> &Call {
            &self.list[ordinal]
        }
    }

    /// The call at `ordinal`, for a change ([`Calls::get_mut`]); panics as a slice does.
    impl std::ops::IndexMut<usize> for Calls {
        #[inline]
        fn index_mut(&mut self, ordinal: usize) -> &mut Call {
            let len = self.list.len();
            self.get_mut(ordinal)
                .unwrap_or_else(|| panic!("call ordinal {ordinal} out of range for {len} calls"))
        }
    }

    impl Calls {
        /// Adds the call `make` builds, queued for every reader; returns its ordinal.
        ///
        /// The room is made first and the call built straight into it: a `Call` is large,
        /// and building it, passing it here and pushing it copied it three times per call.
        #[inline]
        pub(super) fn push(&mut self, make: impl FnOnce() -> Call) -> usize {
            let ordinal = self.list.len();
            // Most streams have one or two calls: grow one slot at a time while small instead
            // of doubling to four (about 2.7 KB saved per single-call stream).
            if ordinal < 4 {
                self.list.reserve_exact(1);
            } else {
                self.list.reserve(1);
            }
            let call = self.list.spare_capacity_mut()[0].write(make());
            if call.progress.is_none() {
                // No progress to drain, ever (progress is only ever taken away).
                call.watch |= UNPROGRESSED;
            }
            // SAFETY: the first slot past the length, inside the capacity reserved above, was
            // initialized just above; a panic in `make` leaves the length as it was.
            unsafe { self.list.set_len(ordinal + 1) };
            // Handed out for a change, the new call is queued.
            let _ = self.get_mut(ordinal);
            ordinal
        }

        /// The call at `ordinal`, for a change: it is queued for every reader.
        #[inline]
        pub(super) fn get_mut(&mut self, ordinal: usize) -> Option<&mut Call> {
            let call = self.list.get_mut(ordinal)?;
            if call.watch & QUEUED != QUEUED {
                if call.watch | UNPROGRESSED == call.watch | QUEUED {
                    // The common case with progress drained after every fragment, inline.
                    call.watch |= UNPROGRESSED;
                    self.queues.undrained_progress.push(ordinal);
                } else {
                    queue(call, ordinal, &mut self.queues);
                }
            }
            Some(call)
        }

        /// Every call, for a change: each is queued for every reader as it is handed out.
        pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Call> {
            let queues = &mut self.queues;
            self.list
                .iter_mut()
                .enumerate()
                .map(move |(ordinal, call)| {
                    if call.watch & QUEUED != QUEUED {
                        queue(call, ordinal, queues);
                    }
                    call
                })
        }

        /// Hands the progress items recorded since the last drain to `f`, call by call in
        /// ordinal order, visiting only the calls changed since (see
        /// [`super::Assembler::drain_progress_each`]). A call whose items wait for its name
        /// stays queued. Draining changes no call for the other readers.
        pub(super) fn drain_progress(
            &mut self,
            registry: Option<&Registry>,
            names_final: bool,
            mut f: impl FnMut(usize, &[u8], &[u8], bool, bool),
        ) {
            let (list, queues) = (&mut self.list, &mut self.queues);
            #[cfg(test)]
            let visited = &mut self.visited_progress;
            let Queues {
                undrained_progress,
                waiting,
                ..
            } = queues;
            undrained_progress.drain_ascending(|ordinal| {
                let Some(call) = list.get_mut(ordinal) else {
                    return;
                };
                #[cfg(test)]
                {
                    *visited += 1;
                }
                if drain_call_progress(ordinal, call, registry, names_final, &mut f) {
                    call.watch &= !UNPROGRESSED;
                } else {
                    waiting.push(ordinal);
                }
            });
            if !waiting.is_empty() {
                waiting
                    .iter()
                    .for_each(|&ordinal| undrained_progress.push(ordinal));
                waiting.clear();
            }
        }

        /// Visits each call changed since the last visit of `lose_event`, in ordinal order;
        /// `visit` returns true when it lost the call, which is then queued for the readers
        /// (see [`super::Assembler::lose_event`]). It may scan the call's deferred text
        /// ([`Call::sync`]) without queueing it: the text was queued when it was appended, and
        /// when it is scanned changes nothing a reader sees.
        pub(super) fn visit_for_lost_event(&mut self, mut visit: impl FnMut(&mut Call) -> bool) {
            let mut unlost = std::mem::take(&mut self.queues.unlost);
            let (list, queues) = (&mut self.list, &mut self.queues);
            #[cfg(test)]
            let visited = &mut self.visited_lost;
            unlost.drain_ascending(|ordinal| {
                let Some(call) = list.get_mut(ordinal) else {
                    return;
                };
                #[cfg(test)]
                {
                    *visited += 1;
                }
                call.watch &= !UNLOST;
                if visit(call) {
                    // Lost, the call is never visited again: it is queued for the others only.
                    call.watch |= UNLOST;
                    queue(call, ordinal, queues);
                }
            });
            // The queue's buffer is kept.
            queues.unlost = unlost;
        }

        /// Appends the errors of every call changed since the last drain that became certain
        /// since (see [`super::Assembler::drain_errors`]), in ordinal order.
        pub(super) fn drain_errors(
            &mut self,
            registry: Option<&Registry>,
            out: &mut Vec<(usize, Error)>,
        ) {
            let list = &mut self.list;
            #[cfg(test)]
            let visited = &mut self.visited;
            self.queues.undrained.drain_ascending(|ordinal| {
                let Some(call) = list.get_mut(ordinal) else {
                    return;
                };
                #[cfg(test)]
                {
                    *visited += 1;
                }
                call.watch &= !UNDRAINED;
                call.sync();
                drain_call_errors(ordinal, call, registry, out);
            });
        }

        /// True when some call has an error no later input can fix. Calls changed since they
        /// were last judged are judged until one fails; the others are known.
        pub(super) fn any_certain_error(&mut self, registry: Option<&Registry>) -> bool {
            while self.queues.failing == 0 {
                let Some(ordinal) = self.queues.unjudged.pop() else {
                    return false;
                };
                let Some(call) = self.list.get_mut(ordinal) else {
                    continue;
                };
                #[cfg(test)]
                {
                    self.visited += 1;
                }
                call.watch &= !UNJUDGED;
                call.sync();
                settle_name(call, registry);
                if call_has_certain_error(call) {
                    call.watch |= FAILING;
                    self.queues.failing += 1;
                }
            }
            true
        }

        /// Takes every call out (at `finish`), leaving none.
        pub(super) fn take_all(&mut self) -> Vec<Call> {
            let list = std::mem::take(&mut self.list);
            *self = Self::default();
            list
        }

        /// [`Calls::drain_errors`] the way it was before calls were queued: every call is
        /// visited (the oracle of the tests that prove the queues change nothing).
        #[cfg(test)]
        pub(super) fn drain_errors_visiting_all(
            &mut self,
            registry: Option<&Registry>,
            out: &mut Vec<(usize, Error)>,
        ) {
            self.queues.undrained = Queue::default();
            for (ordinal, call) in self.list.iter_mut().enumerate() {
                call.watch &= !UNDRAINED;
                call.sync();
                drain_call_errors(ordinal, call, registry, out);
            }
        }

        /// [`Calls::any_certain_error`] the way it was before calls were queued: every call
        /// is judged in turn until one fails (the tests' oracle). It leaves the queues as
        /// they are, so the two must not be mixed on one assembler.
        #[cfg(test)]
        pub(super) fn any_certain_error_visiting_all(
            &mut self,
            registry: Option<&Registry>,
        ) -> bool {
            self.list.iter_mut().any(|call| {
                call.sync();
                settle_name(call, registry);
                call_has_certain_error(call)
            })
        }

        /// [`Calls::drain_progress`] the way it was before calls were queued: every call is
        /// visited (the tests' oracle; not to be mixed with the queued drain on one assembler).
        #[cfg(test)]
        pub(super) fn drain_progress_visiting_all(
            &mut self,
            registry: Option<&Registry>,
            names_final: bool,
            mut f: impl FnMut(usize, &[u8], &[u8], bool, bool),
        ) {
            for (ordinal, call) in self.list.iter_mut().enumerate() {
                self.visited_progress += 1;
                drain_call_progress(ordinal, call, registry, names_final, &mut f);
            }
        }

        /// [`Calls::visit_for_lost_event`] the way it was before calls were queued: every call
        /// is visited (the tests' oracle; not to be mixed with the queued visit).
        #[cfg(test)]
        pub(super) fn visit_all_for_lost_event(
            &mut self,
            mut visit: impl FnMut(&mut Call) -> bool,
        ) {
            for call in &mut self.list {
                self.visited_lost += 1;
                visit(call);
            }
        }
    }
}

use watched::Calls;

/// Assembles the tool calls of one response stream.
#[derive(Debug)]
pub struct Assembler {
    config: AssemblerConfig,
    registry: Option<Arc<Registry>>,
    calls: Calls,
    /// The open call of each wire key.
    open: OpenCalls,
    /// The most recent call a delta went to.
    last: Option<usize>,
    /// The wire key of the most recent delta and its call: most deltas continue the call of the
    /// previous one, so this skips the map lookup.
    last_key: Option<(Option<i64>, usize)>,
    /// Metadata that arrived for a key before its call started (a metadata-only delta never
    /// starts a call, quirk 31).
    pending_metadata: Vec<(Option<i64>, String, String)>,
    /// Keys whose metadata was dropped before their call started (see
    /// [`Assembler::drop_metadata_for_key`]): that call gets the warning.
    pending_dropped: Vec<Option<i64>>,
    /// The transport broke off: calls not ended become `truncated` unless their value is complete.
    interrupted: Option<String>,
    /// The calls below this ordinal had all ended when the transport broke off (a Chat finish
    /// reason ended them, see [`Assembler::interrupt_from`]): the break cuts none of them.
    interrupted_from: usize,
    /// The output limit was reached while this call (the last one started) was open.
    cut_by_limit: Option<usize>,
    /// The output limit was reached (see [`Assembler::limit_reached`]).
    limit_hit: bool,
    /// The stream ends its calls one by one (Anthropic, Responses, Bedrock): known from the
    /// first call it ended ([`Assembler::end_call`]) or started with a start event
    /// ([`Delta::start`], which only such formats send). A call it never ended was not
    /// finished, whatever ended the response: several calls announced and then cut by the
    /// output limit before any of them ended are all cut, not only the last.
    ends_calls: bool,
    /// Bytes of argument text and values the response sent, assistant text counted in, and
    /// arguments held set aside outside the calls (see [`Assembler::set_aside`]).
    stream_bytes: usize,
    /// The per-stream limit the response passed, if any.
    over: Option<StreamLimit>,
    /// Calls the response tried to start past `max_calls`.
    refused_calls: u64,
    /// Why the provider stopped the response ([`Assembler::stop`]), if it did: a call that
    /// starts after that is stopped for the same reason (see `start_call`).
    stopped_as: Option<String>,
    /// Errors that became certain as `finish` decided the calls (held fragments read one way
    /// at last) and were not drained before: the first [`Assembler::drain_errors`] after it
    /// gives them.
    released_errors: Vec<(usize, Error)>,
    /// Some call came out of `finish` with an error (the fail-fast signal, once the calls are
    /// handed over).
    finished_failed: bool,
    finished: bool,
    /// The calls' working state (scanners, pre-check state) once `finish` has handed their
    /// results over, freed with the assembler: freeing it was a third of `finish` on a small
    /// call, time spent after the last fragment that nothing waiting on the calls needs.
    retired: Vec<Call>,
    /// No fragment follows ([`Assembler::settle_held_fragments`]): every call's name is final,
    /// so no progress item waits for one (see [`Assembler::drain_progress_each`]).
    names_final: bool,
    /// The tests' oracle: `lose_event` and the progress drain visit every call, as before
    /// calls were queued.
    #[cfg(test)]
    visit_all: bool,
}

impl Assembler {
    /// A new assembler without a toolset (no pre-check).
    ///
    /// # Errors
    /// [`Misuse::BadConfig`] when a limit is out of range.
    pub fn new(config: AssemblerConfig) -> Result<Self, Misuse> {
        config.validate().map_err(Misuse::BadConfig)?;
        Ok(Self::unchecked(config, None))
    }

    /// A new assembler with a configuration already validated: infallible, so that a caller
    /// can build it straight in its final place ([`crate::gateway::StreamDecoder::boxed`]).
    #[inline]
    pub(crate) fn unchecked(config: AssemblerConfig, registry: Option<Arc<Registry>>) -> Self {
        Self {
            config,
            registry,
            calls: Calls::default(),
            open: OpenCalls::default(),
            last: None,
            last_key: None,
            pending_metadata: Vec::new(),
            pending_dropped: Vec::new(),
            interrupted: None,
            interrupted_from: 0,
            cut_by_limit: None,
            limit_hit: false,
            ends_calls: false,
            stream_bytes: 0,
            over: None,
            refused_calls: 0,
            stopped_as: None,
            released_errors: Vec::new(),
            finished_failed: false,
            finished: false,
            retired: Vec::new(),
            names_final: false,
            #[cfg(test)]
            visit_all: false,
        }
    }

    /// A new assembler that pre-checks every call against the registered tools.
    ///
    /// # Errors
    /// [`Misuse::BadConfig`] when a limit is out of range.
    pub fn with_tools(config: AssemblerConfig, registry: Arc<Registry>) -> Result<Self, Misuse> {
        config.validate().map_err(Misuse::BadConfig)?;
        Ok(Self::unchecked(config, Some(registry)))
    }

    /// The number of calls started so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// True before the first call starts.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// True once [`Assembler::finish`] ran.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn start_call(&mut self, index: Option<i64>) -> usize {
        let (scan, stopped_as) = (self.config.scan, &self.stopped_as);
        let progress = self.config.track_progress && stopped_as.is_none();
        let ordinal = self.calls.push(|| Call {
            index,
            id: None,
            name: String::new(),
            kind: None,
            scanner: Scanner::new(scan),
            mode: ArgMode::Fragments,
            ended: false,
            // A call the provider starts after it stopped the response (filtered, refused) is
            // in no answer it gave: whatever sent it, it must not run.
            stopped: stopped_as.clone(),
            arrival: None,
            metadata: Vec::new(),
            warnings: Vec::new(),
            check: None,
            reported: Reported::default(),
            // Nothing of a call that must not run is a progress item (see `quiet`).
            progress: progress.then(Box::default),
            held: None,
            retread: None,
            counted: 0,
            watch: 0,
        });
        self.open.insert(index, ordinal);
        self.last_key = None;
        if !self.pending_metadata.is_empty() {
            let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_metadata)
                .into_iter()
                .partition(|(k, _, _)| *k == index);
            self.pending_metadata = rest;
            if let Some(call) = self.calls.get_mut(ordinal) {
                call.metadata
                    .extend(mine.into_iter().map(|(_, k, v)| (k, v)));
            }
        }
        if self.pending_dropped.contains(&index) {
            self.pending_dropped.retain(|k| *k != index);
            if let Some(call) = self.calls.get_mut(ordinal) {
                warn_once(call, warning::METADATA_DROPPED);
            }
        }
        ordinal
    }

    /// Whether [`Assembler::feed`] would start a new call for `delta` rather than continue an
    /// open one (it changes nothing but may scan text already appended).
    pub fn starts_call(&mut self, delta: &Delta<'_>) -> bool {
        self.replay_of(delta).is_none() && self.open_call_for(delta).is_none()
    }

    /// The most recent call started without an index that has `id` and still takes deltas.
    /// Only the last [`RECENT_BY_ID`] calls are searched: a fragment costs a bounded scan,
    /// however many calls a response starts.
    fn open_keyless_call(&self, id: &str) -> Option<usize> {
        self.calls
            .iter()
            .enumerate()
            .rev()
            .take(RECENT_BY_ID)
            .find(|(_, c)| c.index.is_none() && c.id.as_deref() == Some(id))
            .map(|(ordinal, _)| ordinal)
            .filter(|&o| self.takes_deltas(o))
    }

    /// True when the call at `ordinal` takes deltas routed to it: it was not ended, or the
    /// provider is sending it again (see [`Retread`]).
    fn takes_deltas(&self, ordinal: usize) -> bool {
        self.calls
            .get(ordinal)
            .is_some_and(|c| !c.ended || c.retread.is_some())
    }

    /// The call that `delta` starts sending again, and whether that call was whole (see
    /// [`Retread`]): a header with the id and name of the last call under its key (without a
    /// key, or from an event that starts a call under a key no call with that id has, of a
    /// recent call with that id: a Responses item without `output_index` is keyed by its
    /// place among the items, which a replay does not keep) that got its text or was ended,
    /// carrying no
    /// argument text of its own or only a start of the call's. A call still open is sent again
    /// only by an event that starts a call ([`Delta::start`]): a header repeated inside an open
    /// call by a provider that repeats it in every chunk may be followed by text that starts
    /// the way the call's text does (`{"a": ` then `{"a": 1}}`) and is still the call going on.
    fn replay_of(&mut self, delta: &Delta<'_>) -> Option<(usize, bool)> {
        let name = delta.name.filter(|n| !n.is_empty())?;
        let id = real_id(delta.id)?;
        let recent = |keyless: bool| {
            self.calls
                .iter()
                .rev()
                .take(RECENT_BY_ID)
                .position(|c| (!keyless || c.index.is_none()) && c.id.as_deref() == Some(id))
                .map(|back| self.calls.len() - 1 - back)
        };
        let ordinal = match delta.index {
            None => recent(true),
            key => self
                .open
                .get(key)
                .filter(|&o| !delta.start || self.calls[o].id.as_deref() == Some(id))
                .or_else(|| delta.start.then(|| recent(false)).flatten()),
        }?;
        let call = self.calls.get_mut(ordinal)?;
        let same = call.name == name && call.id.as_deref() == Some(id);
        // Held fragments are two readings of the text still: no start of it is known.
        if !same || call.retread.is_some() || call.held.is_some() {
            return None;
        }
        call.sync();
        if !call.has_arguments() {
            // Without text, an open call takes a repeated header as the call going on.
            return call.ended.then_some((ordinal, true));
        }
        let whole = call.is_whole();
        if !whole && !delta.start {
            return None;
        }
        let text = call.scanner.text();
        // The whole text again under the call's key, before the call ended, is a consolidated
        // repeat (quirk 20), which the ordinary rules drop; after, or found by its id, it is
        // the call sent again.
        let again = call.ended || delta.index.is_none();
        let replays = match delta.arguments {
            None | Some(Arguments::Text([])) => true,
            Some(Arguments::Text(t)) => text.starts_with(t) && (t.len() < text.len() || again),
            Some(Arguments::Value(v)) => again && v == text,
        };
        replays.then_some((ordinal, whole))
    }

    /// Finds the call a delta belongs to, starting a new one when the rules say so; `None`
    /// when that would pass `max_calls` (the response is then over its limit).
    fn route(&mut self, delta: &Delta<'_>) -> Option<usize> {
        match self.open_call_for(delta) {
            Some(ordinal) => Some(ordinal),
            None if self.calls.len() < self.config.max_calls => Some(self.start_call(delta.index)),
            None => {
                self.refuse_call();
                None
            }
        }
    }

    /// A call the response tried to start past `max_calls`.
    fn refuse_call(&mut self) {
        self.refused_calls += 1;
        self.over
            .get_or_insert(StreamLimit::Calls(self.config.max_calls));
    }

    /// Counts `n` more bytes of the response; false once it is over a per-stream limit, when
    /// they must not be kept.
    pub fn count_stream_bytes(&mut self, n: usize) -> bool {
        self.stream_bytes = self.stream_bytes.saturating_add(n);
        self.may_hold(0)
    }

    /// Counts `n` bytes of assistant text toward `max_stream_bytes`; true when the text is
    /// kept. Text that would pass the limit is neither kept nor counted, and the response is
    /// over its limit from then on: the text that crosses it is not kept either, since one
    /// event may carry megabytes of it.
    pub fn keep_text(&mut self, n: usize) -> bool {
        if !self.may_hold(n) {
            return false;
        }
        self.count_stream_bytes(n);
        true
    }

    /// Whether `n` more bytes held outside the calls (a Gemini call's merged `partialArgs`,
    /// fed when the call closes and counted then) fit beside what the response has kept. When
    /// they do not, the response is over its byte limit from now on, as if it had kept them.
    pub fn may_hold(&mut self, n: usize) -> bool {
        if self.stream_bytes.saturating_add(n) > self.config.max_stream_bytes {
            self.over
                .get_or_insert(StreamLimit::Bytes(self.config.max_stream_bytes));
        }
        self.over.is_none()
    }

    /// Whether the caller may keep `n` bytes of arguments set aside for the call at `ordinal`
    /// (what Anthropic's `content_block_start` or a Responses `output_item.added` carries, used
    /// only if the call's own fragments never come), counting them toward `max_stream_bytes`
    /// until [`Assembler::release`] gives them back. `n` is the length of the text the bytes
    /// will be fed as, so a use that releases and then feeds them counts the same total.
    ///
    /// They are counted while they are held, not only once used: the promise is that a
    /// response never makes us hold more than the limit, and whether set-aside text is used is
    /// known only when its call ends, after later calls may have been read. Counted only when
    /// used, a hostile stream held any number of them; counted when set aside and again when
    /// its fragments came, a response under the limit could be refused. Held text is therefore
    /// counted exactly while it is held, and a response is refused only when what it made us
    /// hold at one time passed the limit.
    ///
    /// False, counting nothing, when the bytes must not be kept: after finish; once the
    /// response is over a per-stream limit; when `n` passes `max_bytes`, which fails that call
    /// with [`ErrorKind::TooLarge`] now (its arguments could never be taken whole); or when
    /// they do not fit beside what the response keeps, which refuses the response as the
    /// stream limit does.
    ///
    /// With no `ordinal`, the bytes are a call's own text held for a moment (a fragment that
    /// ends in a surrogate half, waiting for the other half): past `max_bytes` they fail
    /// nothing here, as the call fails when they are fed.
    pub fn set_aside(&mut self, ordinal: Option<usize>, n: usize) -> bool {
        if self.finished || self.over.is_some() {
            return false;
        }
        let max_bytes = self.config.scan.max_bytes;
        if n > max_bytes {
            if let Some(call) = ordinal.and_then(|o| self.calls.get_mut(o)) {
                set_aside_too_large(call, max_bytes);
            }
            return false;
        }
        if !self.may_hold(n) {
            return false;
        }
        self.stream_bytes += n;
        true
    }

    /// Gives back `n` bytes counted by [`Assembler::set_aside`]: they were let go, or are about
    /// to be fed (and counted again as the call's own).
    pub fn release(&mut self, n: usize) {
        self.stream_bytes = self.stream_bytes.saturating_sub(n);
    }

    /// The per-stream limit the response passed, if any, and how many calls it tried to start
    /// past `max_calls` before that (nothing is read after).
    #[must_use]
    pub fn over_limit(&self) -> Option<(StreamLimit, u64)> {
        self.over.map(|limit| (limit, self.refused_calls))
    }

    /// The open call a delta continues, or `None` when the rules say it starts a new one.
    fn open_call_for(&mut self, delta: &Delta<'_>) -> Option<usize> {
        let name = delta.name.filter(|n| !n.is_empty());
        if let Some((key, ordinal)) = self.last_key {
            // The common case: a nameless continuation of the previous delta's call.
            if key == delta.index
                && name.is_none()
                && delta.index.is_some()
                && self.takes_deltas(ordinal)
            {
                return Some(ordinal);
            }
        }
        let id = real_id(delta.id);
        let current = match delta.index {
            None => {
                // Without an index, the id is the key: parallel calls interleave there too,
                // each fragment carrying its call's id, and "the last call" would take
                // another's text.
                let by_id = id.and_then(|i| self.open_keyless_call(i));
                if let Some(ordinal) = by_id {
                    // Fragments without an id that follow continue this call (quirk 1).
                    self.open.insert(None, ordinal);
                }
                // Else a missing index continues the call the previous delta went to (quirk
                // 1), unless that call was ended.
                by_id.or_else(|| {
                    self.open
                        .get(None)
                        .or(self.last)
                        .filter(|&o| self.takes_deltas(o))
                })
            }
            key => self.open.get(key),
        };
        let ordinal = current.filter(|&o| self.takes_deltas(o))?;
        if let Some(name) = name {
            // The rules below read how far the arguments got.
            let call = &mut self.calls[ordinal];
            call.sync();
            let new_id = id.is_some_and(|i| call.id.as_deref().is_some_and(|c| c != i));
            if let Some(held) = call.held.as_deref().filter(|_| name == call.name) {
                // A provider that repeats the name in every chunk: held fragments are decided
                // first when a new id says a new call starts, or when neither of their
                // readings takes this text as more of the call; text a reading accepts never
                // starts a call of its own.
                let continues = match delta.arguments {
                    Some(Arguments::Text(text)) => held.continued_by(text),
                    _ => true,
                };
                if new_id || !continues {
                    settle_held(call);
                    call.sync();
                }
            }
            let call = &self.calls[ordinal];
            if !call.name.is_empty() && call.has_arguments() {
                // Free text is never a whole JSON value that a named delta would follow.
                let complete = (call.scanner.is_complete() || call.mode == ArgMode::Value)
                    && !is_free_form(call);
                let same_name = name == call.name;
                // An empty fragment is no new argument text (quirk 26): a repeated header.
                // Nor is whitespace, which cannot start a value: a provider that repeats the
                // name (and id) in every chunk sends a model's trailing newline token that way.
                // Nor is the whole text again, whitespace after it or not: a resending
                // provider's repeat (quirks 19, 20).
                let repeat_or_header = match delta.arguments {
                    None => true,
                    Some(Arguments::Text(t)) => {
                        first_non_ws(t).is_none()
                            || t.strip_prefix(call.scanner.text())
                                .is_some_and(|rest| first_non_ws(rest).is_none())
                    }
                    Some(Arguments::Value(t)) => t == call.scanner.text(),
                };
                // Another name under the same key, or a named delta with a new id or new
                // arguments after a complete value, is another call (quirks 2, 3). The same name
                // while the value is still open is a repeated header (quirks 8, 13).
                // A call sent again decides its new text itself (see `Retread`).
                let replaying = call.retread.is_some();
                if !same_name || (complete && (new_id || (!repeat_or_header && !replaying))) {
                    return None;
                }
            } else if !call.name.is_empty()
                && self.starts_before_arguments(call, name, new_id, delta.start)
            {
                return None;
            }
        }
        Some(ordinal)
    }

    /// Whether a named delta starts another call under the key of `call`, which has a name
    /// but no argument text yet: a call of a tool without parameters sends none before the
    /// next call comes under the same key (quirks 2, 3 and 25). A name there is otherwise read
    /// as more of the name (quirk 9), so what tells them apart is evidence that it is not:
    /// a different id (quirk 2), an event that starts a call (it carries a whole name), or a
    /// registered tool that the name so far already is and that no registered name extends
    /// by this piece.
    fn starts_before_arguments(&self, call: &Call, name: &str, new_id: bool, start: bool) -> bool {
        if new_id {
            return true;
        }
        if name == call.name || call.id.as_deref() == Some(name) {
            // A repeated header (quirk 8), or a proxy that glues the call's id onto its name.
            return false;
        }
        if start {
            return true;
        }
        self.registry.as_deref().is_some_and(|registry| {
            registry.contains(&call.name) && !registry.name_viable(&format!("{}{name}", call.name))
        })
    }

    /// Feeds one delta; returns the ordinal of the call it went to.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`Assembler::finish`].
    pub fn feed(&mut self, delta: &Delta<'_>) -> Result<usize, Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        self.ends_calls |= delta.start;
        if self.over.is_some() {
            // Past a per-stream limit nothing more is kept: the response is refused whole. The
            // ordinal handed back names a call (one is started, without text, if none was), so
            // that a reader that shows calls as they start sees that one end too.
            if self.calls.is_empty() {
                self.start_call(delta.index);
            }
            let last = self.calls.len() - 1;
            return Ok(self.last.filter(|&o| o < last).unwrap_or(last));
        }
        let to = self.feed_kept(delta)?;
        // What the call keeps now, counted once: a cumulative resend or a replay keeps (and
        // counts) only what is new; a name streamed in pieces counts as it grows.
        self.recount(to);
        Ok(to)
    }

    /// Brings the response's byte count up to what the call at `ordinal` keeps now: what it
    /// keeps more is counted, what it let go (the second reading of fragments it held, once
    /// they are decided) is given back, as [`Assembler::set_aside`] gives back what it held.
    /// Kept counted at their peak, those copies were charged to every later call of the
    /// response, and twice over once [`Assembler::feed_continuation`], which counts only
    /// what each fragment appends, took over the call: a response refused under its limit
    /// by `feed` and `feed_chunk`, and kept by `feed_sse`.
    fn recount(&mut self, ordinal: usize) {
        let Some(call) = self.calls.get_mut(ordinal) else {
            return;
        };
        let kept = call.kept_bytes();
        let counted = std::mem::replace(&mut call.counted, kept);
        if kept >= counted {
            self.count_stream_bytes(kept - counted);
        } else {
            self.release(counted - kept);
        }
    }

    /// [`Assembler::feed`] under the per-stream limits.
    fn feed_kept(&mut self, delta: &Delta<'_>) -> Result<usize, Misuse> {
        if let Some(ordinal) = self.ended_call_for(delta) {
            late_fragment(&mut self.calls[ordinal], delta.arguments);
            return Ok(ordinal);
        }
        let replay = self.replay_of(delta);
        let routed = match replay {
            Some((ordinal, _)) => Some(ordinal),
            None => self.route(delta),
        };
        let Some(ordinal) = routed else {
            // A call past `max_calls` is not kept; the response is refused whole at finish,
            // and the delta is answered with the last call kept, which it leaves as it is.
            return Ok(self.calls.len().saturating_sub(1));
        };
        self.last = Some(ordinal);
        self.last_key = Some((delta.index, ordinal));
        let registry = self.registry.as_deref();
        if let Some((_, whole)) = replay {
            self.calls[ordinal].retread = Some(Retread {
                pos: 0,
                whole,
                dropped: false,
            });
            // Deltas under the key go to the call sent again (without a key, the call found
            // by its id may not be the one open there).
            self.open.insert(delta.index, ordinal);
        }
        let call = &mut self.calls[ordinal];
        if call.index.is_none() {
            call.index = delta.index;
        }
        if let Some(id) = real_id(delta.id) {
            if call.id.is_none() {
                call.id = Some(id.to_owned());
            }
        }
        if let Some(kind) = delta.kind.filter(|k| !k.is_empty()) {
            if call.kind.is_none() {
                call.kind = Some(kind.to_owned());
                if kind == FREE_FORM_KIND {
                    // Its text is no JSON: nothing of it is a value to show as it grows.
                    quiet(call);
                }
            }
        }
        if let Some(name) = delta.name.filter(|n| !n.is_empty()) {
            if name != call.name {
                call.name.push_str(name);
                if let Some(reg) = registry.filter(|_| !is_free_form(call)) {
                    attach_check(call, reg);
                }
            }
        }
        match delta.arguments {
            None => {}
            Some(Arguments::Text(text)) if call.retread.is_some() => {
                let to = self.feed_retread(ordinal, delta.index, text);
                self.last = Some(to);
                self.last_key = Some((delta.index, to));
                return Ok(to);
            }
            Some(Arguments::Text(text)) => feed_text(call, text, registry),
            Some(Arguments::Value(text)) if call.retread.is_some() => {
                if call.scanner.text() == text {
                    warn_once(call, warning::REPLAY_DROPPED);
                    return Ok(ordinal);
                }
                call.retread = None;
                // Another value under the id of a whole call is another call (quirk 16); in an
                // open call, the ordinary rules take it.
                let to = if call.is_whole() {
                    match self.fork(ordinal, delta.index) {
                        Some(to) => to,
                        None => return Ok(ordinal),
                    }
                } else {
                    ordinal
                };
                self.feed(&Delta {
                    index: delta.index,
                    arguments: delta.arguments,
                    ..Delta::default()
                })?;
                return Ok(to);
            }
            Some(Arguments::Value(text)) => {
                // A fragment held to tell a resend from new text is text the call has: decide
                // it first, so that a whole value after it mixes (and nothing is left held).
                settle_held(call);
                call.sync();
                if call.has_arguments() {
                    extra_arguments(call, text);
                } else {
                    call.mode = ArgMode::Value;
                    if let Some(reg) = registry.filter(|_| !is_free_form(call)) {
                        attach_check(call, reg);
                    }
                    push_checked(call, text);
                    if let Some(progress) = call.progress.as_deref_mut() {
                        // The whole value of recorded items: a string still open is whole.
                        progress.end_string();
                    }
                }
            }
        }
        Ok(ordinal)
    }

    /// The call a delta of argument text alone (no name, no other id, no start event) comes
    /// too late for: the call under its key was ended by the provider (a per-call stop event)
    /// and is not being sent again. Such text is no call of its own, which would have neither
    /// id nor name and would need a result the provider rejects (see [`late_fragment`]).
    fn ended_call_for(&self, delta: &Delta<'_>) -> Option<usize> {
        if delta.start || delta.arguments.is_none() || delta.name.is_some_and(|n| !n.is_empty()) {
            return None;
        }
        let ordinal = self.open.get(Some(delta.index?))?;
        let call = self.calls.get(ordinal)?;
        let id = real_id(delta.id);
        let other_id = id.is_some_and(|i| call.id.as_deref() != Some(i));
        (call.ended && call.retread.is_none() && !other_id).then_some(ordinal)
    }

    /// A fragment of a call the provider sends again (see [`Retread`]): text the call already
    /// has is dropped; text past it goes on an open call; text that differs ends the replay,
    /// with the text matched so far taken back as new. Returns the ordinal the text went to.
    fn feed_retread(&mut self, ordinal: usize, key: Option<i64>, text: &[u8]) -> usize {
        let registry = self.registry.as_deref();
        let Some(call) = self.calls.get_mut(ordinal) else {
            return ordinal;
        };
        let Some(mut retread) = call.retread else {
            feed_text(call, text, registry);
            return ordinal;
        };
        let held = call.scanner.text();
        let cumulative = call.mode == ArgMode::Cumulative;
        if cumulative {
            // Each fragment is the whole text so far: the replay is a start of the call's text.
            if held.starts_with(text) {
                if text.len() == held.len() {
                    warn_once(call, warning::REPLAY_DROPPED);
                } else if !text.is_empty() {
                    call.retread = Some(Retread {
                        dropped: true,
                        ..retread
                    });
                }
                return ordinal;
            }
            if text.starts_with(held) && !retread.whole {
                call.retread = None;
                warn_once(call, warning::REPLAY_DROPPED);
                feed_text(call, text, registry);
                return ordinal;
            }
        } else {
            let rest = held.get(retread.pos..).unwrap_or_default();
            if rest.starts_with(text) {
                retread.pos += text.len();
                retread.dropped |= !text.is_empty();
                let caught_up = retread.pos == held.len();
                if caught_up && !retread.whole {
                    // The open call goes on from here: its next fragments are new.
                    call.retread = None;
                } else {
                    call.retread = Some(retread);
                }
                if caught_up {
                    warn_once(call, warning::REPLAY_DROPPED);
                }
                return ordinal;
            }
            if let Some(new) = text.strip_prefix(rest) {
                if !retread.whole {
                    // An open call is sent again only by an event that starts it: what
                    // follows its text is new.
                    call.retread = None;
                    warn_once(call, warning::REPLAY_DROPPED);
                    feed_text(call, new, registry);
                    return ordinal;
                }
                if first_non_ws(new).is_none() {
                    retread.pos = held.len();
                    call.retread = Some(retread);
                    warn_once(call, warning::REPLAY_DROPPED);
                    return ordinal;
                }
            }
        }
        // The text differs from the call's: what matched was not a replay after all.
        let matched = if cumulative { 0 } else { retread.pos };
        let mut sent = held.get(..matched).unwrap_or_default().to_vec();
        sent.extend_from_slice(text);
        call.retread = None;
        if retread.whole && first_non_ws(&sent).is_none() {
            // Only white space after a whole call, from a provider that repeats the header in
            // every chunk: the model's text went on with white space past the value, which
            // starts the way the call's own text does. White space makes no call (it would be
            // a runnable `{}`); the call stays as it was, as after a replay cut short.
            return ordinal;
        }
        if !retread.whole {
            // The open call was sent again otherwise (generated anew): nothing is dropped,
            // and its text, no longer one value, keeps it from running.
            feed_text(call, &sent, registry);
            return ordinal;
        }
        // After a whole call, other text under its id is another call (quirk 16), as it was
        // before replays were recognised; the call sent first stays as it was.
        let Some(started) = self.fork(ordinal, key) else {
            return ordinal;
        };
        let registry = self.registry.as_deref();
        feed_text(&mut self.calls[started], &sent, registry);
        started
    }

    /// Starts a call under `key` with the id, name, type and index of the call at `ordinal`:
    /// what a replay of that whole call sent that differs from it. `None` past `max_calls`.
    fn fork(&mut self, ordinal: usize, key: Option<i64>) -> Option<usize> {
        if self.calls.len() >= self.config.max_calls {
            self.refuse_call();
            return None;
        }
        let from = &self.calls[ordinal];
        let (index, id, name, kind) = (
            from.index,
            from.id.clone(),
            from.name.clone(),
            from.kind.clone(),
        );
        let started = self.start_call(key);
        let call = &mut self.calls[started];
        call.index = index;
        call.id = id;
        call.kind = kind;
        call.name = name;
        if let Some(reg) = self.registry.as_deref() {
            attach_check(call, reg);
        }
        Some(started)
    }

    /// Feeds the most common delta, an argument fragment alone (no id, name or type) for the
    /// call open under its wire index, when every rule of [`Assembler::feed`] would only append
    /// it to that call: the call is open and plain (not sent whole, not cumulative, no fragment
    /// held), and the fragment does not start with the text so far (it is shorter, or differs
    /// within it), so it can be neither a resend nor a repeat. Returns the call's ordinal, or
    /// `None` (having changed nothing) when the delta needs the full rules; `feed` then gives
    /// the same result as if this were not tried.
    pub fn feed_continuation(&mut self, index: i64, text: &[u8]) -> Option<usize> {
        if self.finished
            || self.over.is_some()
            || self.stream_bytes.saturating_add(text.len()) > self.config.max_stream_bytes
        {
            return None;
        }
        let key = Some(index);
        let ordinal = match self.last_key {
            Some((last, ordinal)) if last == key => ordinal,
            // Interleaved parallel calls: another call's index.
            _ => self.open.get(key)?,
        };
        let registry = self.registry.is_some();
        let call = self.calls.get_mut(ordinal)?;
        let buffered = call.scanner.text().len();
        let appends_only = !call.ended
            && call.mode == ArgMode::Fragments
            && call.held.is_none()
            && call.retread.is_none()
            // A fragment at least as long as the text so far is one only when it starts with
            // that text: most such fragments are a stream's first few, and differ at once.
            && (buffered == 0
                || text.len() < buffered
                || !text.starts_with(call.scanner.text()))
            // Bytes past `max_bytes` are not kept, and `feed` counts only what the call keeps:
            // counted here in full, they refused a response that kept no more than its limit.
            && text.len() <= self.config.scan.max_bytes.saturating_sub(buffered)
            && !may_repeat_value(call.scanner.text(), text)
            // `feed_text` would attach the pre-check first.
            && (call.check.is_some() || !registry || call.name.is_empty());
        if !appends_only {
            return None;
        }
        if !text.is_empty() {
            push_checked(call, text);
        }
        call.counted += text.len();
        self.stream_bytes += text.len();
        self.last = Some(ordinal);
        self.last_key = Some((key, ordinal));
        Some(ordinal)
    }

    /// Marks the call at `ordinal` complete (a per-call stop event); a later delta under the same
    /// key starts a new call.
    ///
    /// # Errors
    /// [`Misuse`] after finish or for an unknown ordinal.
    pub fn end_call(&mut self, ordinal: usize) -> Result<(), Misuse> {
        self.ends_calls = true;
        let over = self.over.is_some();
        let call = self.open_call_mut(ordinal)?;
        // Past a per-stream limit nothing more of the response is kept, a call's end neither:
        // the call ends as where the reader stopped at the limit (see `finish_calls`).
        call.ended |= !over;
        end_retread(call);
        // No fragment follows to tell held fragments' two readings apart: they are decided
        // now, as `finish` would decide them, so partial values and progress see them at once.
        // Except when only the resend reading is a whole value: the stream's stop reason, still
        // to come, may say the output was cut there (`max_tokens` after the block's stop), and
        // then the appended, unfinished reading is the one the provider sent.
        if !call
            .held
            .as_deref()
            .is_some_and(Held::only_resend_completes)
        {
            settle_held(call);
        }
        complete_for_progress(call);
        Ok(())
    }

    /// Decides every fragment still held (see [`Assembler::feed`]) as `finish` will, so that
    /// the progress items and partial values of the stream's last fragments can be read
    /// before it: the caller knows no fragment follows.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after finish.
    pub fn settle_held_fragments(&mut self) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        for call in self.calls.iter_mut() {
            settle_held(call);
            complete_for_progress(call);
        }
        self.names_final = true;
        Ok(())
    }

    /// The call at `ordinal`, for a change while the stream runs.
    fn open_call_mut(&mut self, ordinal: usize) -> Result<&mut Call, Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        self.calls
            .get_mut(ordinal)
            .ok_or(Misuse::NoSuchCall(ordinal))
    }

    /// Sets the index a call reports ([`ToolCall::index`]) when it is not the key the call is
    /// routed by: a Responses item keyed by its `item_id`, apart from another item sent under
    /// the same `output_index`, still reports the `output_index` it came with.
    ///
    /// # Errors
    /// [`Misuse`] after finish or for an unknown ordinal.
    pub fn set_index(&mut self, ordinal: usize, index: Option<i64>) -> Result<(), Misuse> {
        let over = self.over.is_some();
        let call = self.open_call_mut(ordinal)?;
        if over {
            // Past a per-stream limit nothing more is kept (it may be a call refused).
            return Ok(());
        }
        call.index = index;
        Ok(())
    }

    /// The ordinal of the open call under a wire key.
    #[must_use]
    pub fn ordinal_of(&self, index: Option<i64>) -> Option<usize> {
        self.open.get(index)
    }

    /// Keeps an opaque provider field (JSON text) on a call.
    ///
    /// # Errors
    /// [`Misuse`] after finish or for an unknown ordinal.
    pub fn set_metadata(&mut self, ordinal: usize, key: &str, json: &str) -> Result<(), Misuse> {
        if text_has_long_integer(json) {
            // Kept, it would make the call's metadata unreadable in Python: the field is left
            // out, on the record.
            warn_once(self.open_call_mut(ordinal)?, warning::METADATA_DROPPED);
            return Ok(());
        }
        // A value that replaces the key's last one counts only what it adds: the stream keeps
        // one value per key (a provider may resend a field, a signature, with every chunk).
        let kept = self
            .calls
            .get(ordinal)
            .and_then(|call| call.metadata.iter().find(|(k, _)| k == key))
            .map_or(0, |(k, v)| k.len() + v.len());
        let added = (key.len() + json.len()).saturating_sub(kept);
        let over = self.finished || !self.count_stream_bytes(added);
        let call = self.open_call_mut(ordinal)?;
        if over {
            // Past a per-stream limit nothing more is kept (it may be a call refused).
            return Ok(());
        }
        if let Some(slot) = call.metadata.iter_mut().find(|(k, _)| k == key) {
            json.clone_into(&mut slot.1);
        } else {
            call.metadata.push((key.to_owned(), json.to_owned()));
        }
        Ok(())
    }

    /// The call metadata under a wire key belongs to: the one open there, or for a missing
    /// index the call a delta without index continues (quirk 1): the one open without index,
    /// else the last call fed, unless it was ended.
    fn metadata_call(&self, index: Option<i64>) -> Option<usize> {
        match index {
            None => self
                .open
                .get(None)
                .or(self.last)
                .filter(|&o| !self.calls[o].ended),
            key => self.ordinal_of(key),
        }
    }

    /// Keeps metadata for the call under a wire key; when no call is open there yet, it waits
    /// for the next call that starts under that key. A missing index means the call a delta
    /// without index continues (quirk 1): the one open without index, else the last call fed,
    /// unless it was ended.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after finish.
    pub fn set_metadata_for_key(
        &mut self,
        index: Option<i64>,
        key: &str,
        json: &str,
    ) -> Result<(), Misuse> {
        if text_has_long_integer(json) {
            return self.drop_metadata_for_key(index);
        }
        match self.metadata_call(index) {
            Some(ordinal) => self.set_metadata(ordinal, key, json),
            None if self.finished => Err(Misuse::Finished),
            None if !self.count_stream_bytes(key.len() + json.len()) => Ok(()),
            None => {
                self.pending_metadata
                    .push((index, key.to_owned(), json.to_owned()));
                Ok(())
            }
        }
    }

    /// A provider field for the call under a wire key could not be kept (the binding could not
    /// write it as JSON): that call, or the next one to start under the key, gets the warning
    /// [`warning::METADATA_DROPPED`], so that the loss is on the record, not silent.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after finish.
    pub fn drop_metadata_for_key(&mut self, index: Option<i64>) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        match self.metadata_call(index) {
            Some(ordinal) => warn_once(&mut self.calls[ordinal], warning::METADATA_DROPPED),
            None if !self.pending_dropped.contains(&index) => self.pending_dropped.push(index),
            None => {}
        }
        Ok(())
    }

    /// The transport broke off (connection drop, early close): at finish, calls that were not
    /// ended and whose arguments are not a complete value are `truncated` — even calls with no
    /// argument text, which would otherwise become `{}`.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after finish.
    pub fn interrupt(&mut self, reason: &str) -> Result<(), Misuse> {
        self.interrupt_from(0, reason)
    }

    /// The transport broke off after the response had ended the calls below ordinal `first`
    /// (a Chat finish reason, which ends every call there is, with no end event per call):
    /// [`Assembler::interrupt`] for the calls that started after it only. A call that starts
    /// after the answer ended is in no answer that ended, and empty it must not run as `{}`.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after finish.
    pub fn interrupt_from(&mut self, first: usize, reason: &str) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        // A second break reaches as far back as the first one did.
        self.interrupted_from = if self.interrupted.is_some() {
            self.interrupted_from.min(first)
        } else {
            first
        };
        self.interrupted = Some(reason.to_owned());
        for ordinal in first..self.calls.len() {
            let call = &self.calls[ordinal];
            // Only a call that holds fragments changes (and is queued for the readers).
            if !call.ended && call.held.is_some() {
                settle_held_appended(&mut self.calls[ordinal]);
            }
        }
        Ok(())
    }

    /// Whether [`Assembler::interrupt`] said the transport broke off.
    #[must_use]
    pub fn is_interrupted(&self) -> bool {
        self.interrupted.is_some()
    }

    /// The output limit was reached (`length`, `max_tokens`, `max_output_tokens`): the last
    /// call started, if the provider had not ended it, was cut there. With some text, its
    /// arguments are incomplete anyway; with none, it becomes `truncated` at finish rather than
    /// `{}`, which would run a call whose arguments the model never began as a call without
    /// parameters (quirk 36 meets quirk 25). Earlier calls were followed by another, so an
    /// empty one among them is a call without parameters.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after finish.
    pub fn limit_reached(&mut self) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        self.limit_hit = true;
        let last = self.calls.len().checked_sub(1);
        self.cut_by_limit = last.filter(|&o| !self.calls[o].ended);
        // The last call was cut, even when the provider ended it first (Anthropic and Bedrock
        // stop the block, then say `max_tokens`): fragments it still holds are appended.
        if let Some(call) = last.and_then(|o| self.calls.get_mut(o)) {
            settle_held_appended(call);
        }
        Ok(())
    }

    /// The provider stopped the stream (content filter, refusal): every call not yet ended,
    /// or ended with its arguments incomplete, becomes a [`ErrorKind::Filtered`] error and must
    /// not be executed. A call already stopped keeps its first reason.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after finish.
    pub fn stop(&mut self, reason: &str) -> Result<(), Misuse> {
        self.stop_calls(reason, false)
    }

    /// The provider said the calls it sent are themselves malformed (Bedrock's
    /// `malformed_tool_use`): every call becomes a [`ErrorKind::Filtered`] error, even one the
    /// provider had ended with a complete value, since nothing tells which call it judged.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after finish.
    pub fn stop_all(&mut self, reason: &str) -> Result<(), Misuse> {
        self.stop_calls(reason, true)
    }

    /// The provider stopped the call at `ordinal` alone: it becomes a [`ErrorKind::Filtered`]
    /// error and must not be executed, whatever it holds, and a call already stopped keeps its
    /// first reason. For a call sent after the provider gave up on a response whose other
    /// calls had all ended before (a Chat finish reason, then an error): [`Assembler::stop`]
    /// would stop those too, since Chat never ends a call by itself.
    ///
    /// # Errors
    /// [`Misuse`] after finish or for an unknown ordinal.
    pub fn stop_call(&mut self, ordinal: usize, reason: &str) -> Result<(), Misuse> {
        let call = self.open_call_mut(ordinal)?;
        if call.stopped.is_none() {
            call.stopped = Some(reason.to_owned());
            quiet(call);
        }
        Ok(())
    }

    fn stop_calls(&mut self, reason: &str, ended_too: bool) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        self.stopped_as.get_or_insert_with(|| reason.to_owned());
        for call in self.calls.iter_mut() {
            if ended_too {
                call.stopped = Some(reason.to_owned());
                quiet(call);
                continue;
            }
            if call.ended {
                // No fragment can follow an ended call: its held one is decided as `finish`
                // would decide it, or a whole value held after whitespace (`" "` then
                // `" {}"`) would read as incomplete here and be stopped.
                settle_held(call);
            }
            call.sync();
            // A call ended with no argument text is a parameterless call, as whole as one
            // ended with `{}`: it stays as the provider finished it. So does one ended with a
            // bare number, whole once no byte follows (the model's error, not the stop's).
            let whole = call.scanner.is_complete()
                || (call.ended && call.held.is_none() && call.scanner.is_complete_at_end())
                || (!call.has_arguments() && call.held.is_none());
            // The first reason stays: a finish reason after the provider's error (which the
            // raw path reads as no news) must not rename what stopped the call.
            if (!call.ended || !whole) && call.stopped.is_none() {
                call.stopped = Some(reason.to_owned());
                quiet(call);
            }
        }
        Ok(())
    }

    /// An event that may have carried part of a call could not be read (malformed or too
    /// large, so skipped): every call whose arguments were still open may now lack a fragment
    /// and becomes a [`ErrorKind::LostEvent`] error, never executed. A call whose arguments
    /// were already one complete value, or whose end the provider had signalled, is untouched.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after finish.
    pub fn lose_event(&mut self, reason: &str) -> Result<(), Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        // Only the calls changed since the last lost event are visited: one left alone then is
        // left alone again (a whole Chat call is never ended, and visiting every call from
        // the first whole one cost time events x calls). A call ended or lost stays so.
        let done = |call: &Call| {
            call.ended
                || call
                    .arrival
                    .as_ref()
                    .is_some_and(|e| e.kind == ErrorKind::LostEvent)
        };
        let visit = |call: &mut Call| {
            if done(call) {
                return false;
            }
            call.sync();
            let open = !call.ended && !call.scanner.is_complete() && call.stopped.is_none();
            if open {
                lose(call, || {
                    format!(
                        "an event that may have carried part of this call could not be read \
                         ({reason})"
                    )
                });
            }
            // Only a call lost is queued for the readers (see `Calls`).
            open
        };
        #[cfg(test)]
        if self.visit_all {
            self.calls.visit_all_for_lost_event(visit);
            return Ok(());
        }
        self.calls.visit_for_lost_event(visit);
        Ok(())
    }

    /// The arguments of the call at `ordinal` came in a form this path does not read (`reason`
    /// says which): whatever it holds, the call becomes a [`ErrorKind::LostEvent`] error and is
    /// never executed, as when an event carrying part of it could not be read.
    ///
    /// # Errors
    /// [`Misuse`] after finish or for an unknown ordinal.
    pub fn lose_arguments(&mut self, ordinal: usize, reason: &str) -> Result<(), Misuse> {
        let call = self.open_call_mut(ordinal)?;
        call.sync();
        lose(call, || {
            format!("this call's arguments could not be read ({reason})")
        });
        Ok(())
    }

    /// Errors that became certain since the last call, as (ordinal, error): grammar errors and
    /// pre-check violations, each reported once. After `finish`, the first call gives those
    /// that only `finish` made certain (a fragment held to tell a resend from new text, decided
    /// at last), or that were never drained.
    pub fn drain_errors(&mut self) -> Vec<(usize, Error)> {
        if self.finished {
            return std::mem::take(&mut self.released_errors);
        }
        let mut out = Vec::new();
        // Only the calls changed since the last drain can have new errors (see `Calls`).
        self.calls.drain_errors(self.registry.as_deref(), &mut out);
        out
    }

    /// True when some call already has an error that no later input can fix (fail-fast signal);
    /// after `finish`, when some call came out of it with an error.
    #[must_use]
    pub fn has_certain_error(&mut self) -> bool {
        if self.finished {
            return self.finished_failed;
        }
        if self.over.is_some() {
            // Every call of a response past a per-stream limit fails.
            return true;
        }
        self.calls.any_certain_error(self.registry.as_deref())
    }

    /// The settings this assembler was made with.
    #[must_use]
    pub fn config(&self) -> &AssemblerConfig {
        &self.config
    }

    /// Progress items recorded since the last drain (with `track_progress`).
    pub fn drain_progress(&mut self) -> Vec<(usize, ProgressItem)> {
        let mut out = Vec::new();
        self.drain_progress_each(|ordinal, path, text, complete, _continues| {
            let item = ProgressItem {
                path: String::from_utf8_lossy(path).into_owned(),
                text: String::from_utf8_lossy(text).into_owned(),
                complete,
            };
            out.push((ordinal, item));
        });
        out
    }

    /// `drain_progress` without allocating: each item goes to `f` as (ordinal, path, text,
    /// complete, continues), its path and text borrowed from the call's progress buffers as
    /// UTF-8 bytes (see [`Progress::drain_each`](crate::progress::Progress::drain_each)).
    ///
    /// With tools, an item at or under a secret value reads [`REDACTED`] (once per value: the
    /// rest of a long string is empty). Which values are secret depends on the call's tool,
    /// so while its name may still change into that of a tool with secret values (no name
    /// yet, or a prefix of such a tool's name, before its arguments began), the call's items
    /// wait, merged as they would be between two drains, until the name is final, the call is
    /// ended, or no fragment follows ([`Assembler::settle_held_fragments`]). Only the calls
    /// changed since the last drain are visited.
    pub fn drain_progress_each(&mut self, f: impl FnMut(usize, &[u8], &[u8], bool, bool)) {
        let registry = self.registry.as_deref();
        #[cfg(test)]
        if self.visit_all {
            self.calls
                .drain_progress_visiting_all(registry, self.names_final, f);
            return;
        }
        self.calls.drain_progress(registry, self.names_final, f);
    }

    /// Records a progress item for the call at `ordinal` that arrived as a value, not as text
    /// (a Vertex AI `partialArgs` piece): see [`Progress::record`]. From the first one on, the
    /// call's text (written from those values when the call closes) adds no items of its own.
    /// Nothing is recorded without `track_progress`, once the response is refused whole, or
    /// for a path deeper than `max_depth`, which makes the call `too_deep`: nothing more is
    /// recorded for it then, as the scanner records nothing past that error.
    ///
    /// # Errors
    /// [`Misuse`] after finish or for an unknown ordinal.
    pub fn record_progress(
        &mut self,
        ordinal: usize,
        path: &str,
        text: &str,
        value: Recorded,
    ) -> Result<(), Misuse> {
        let (over, max_depth) = (self.over.is_some(), self.config.scan.max_depth);
        let call = self.open_call_mut(ordinal)?;
        let Some(progress) = call.progress.as_deref_mut().filter(|_| !over) else {
            return Ok(());
        };
        // Each step of the pointer is a container the value is inside.
        if memchr::memchr_iter(b'/', path.as_bytes()).count() > max_depth {
            progress.stop_recording();
        } else {
            progress.record(path, text, value);
        }
        Ok(())
    }

    /// Records no more progress items for the call at `ordinal`, from values or from its text:
    /// the values its arguments arrive as do not make what the call will hold (Vertex AI pieces
    /// that do not merge). The items already recorded stay to be drained.
    ///
    /// # Errors
    /// [`Misuse`] after finish or for an unknown ordinal.
    pub fn stop_progress(&mut self, ordinal: usize) -> Result<(), Misuse> {
        if let Some(progress) = self.open_call_mut(ordinal)?.progress.as_deref_mut() {
            progress.stop_recording();
        }
        Ok(())
    }

    /// The index the call at `ordinal` reports ([`ToolCall::index`]): its wire index, or the
    /// one [`Assembler::set_index`] gave it.
    pub fn index(&self, ordinal: usize) -> Option<i64> {
        self.calls.get(ordinal).and_then(|call| call.index)
    }

    /// The raw argument text received so far for a call.
    #[must_use]
    pub fn arguments(&self, ordinal: usize) -> Option<&[u8]> {
        self.calls.get(ordinal).map(|c| c.scanner.text())
    }

    /// A provider's statement of a call's whole argument text (the Responses API's `.done`
    /// summaries): true when the call's text is already those JSON tokens
    /// ([`crate::tokens::same_tokens`]). While fragments are held, it decides them by the
    /// reading it matches: a summary is the one witness of which reading the provider meant,
    /// and a stream that ends cut would otherwise take the resend reading if only that one is a
    /// whole value. False, changing nothing, when it matches no reading (or no such call).
    pub fn confirm_whole(&mut self, ordinal: usize, full: &[u8]) -> bool {
        let Some(call) = self.calls.get_mut(ordinal) else {
            return false;
        };
        let Some(held) = call.held.as_deref() else {
            return same_tokens(call.scanner.text(), full);
        };
        if same_tokens(held.appended.scanner.text(), full) {
            settle_held_appended(call);
            true
        } else if same_tokens(held.last(), full) {
            if let Some(held) = call.held.take() {
                take_resent(call, *held);
            }
            true
        } else {
            false
        }
    }

    /// Compares a provider's statement of a call's whole arguments (a Responses `.done`
    /// summary, or the finished item's) with the text the call holds. The summary decides
    /// only between readings of what the call's fragments hold ([`Assembler::confirm_whole`]),
    /// or completes text that stopped short ([`Summary::Extend`]): it never replaces text
    /// that says something else, which the call keeps and does not run with
    /// ([`Summary::Mismatch`]); appended, the two texts made a call that seemed to send two
    /// values. [`Summary::Same`] (changing nothing) for no such call.
    pub fn check_summary(&mut self, ordinal: usize, full: &[u8]) -> Summary {
        // Past a per-stream limit nothing more is kept: the deltas were dropped, not lost.
        if self.finished || self.over.is_some() || self.confirm_whole(ordinal, full) {
            return Summary::Same;
        }
        let Some(call) = self.calls.get_mut(ordinal) else {
            return Summary::Same;
        };
        call.sync();
        if call.held.is_none() && !call.has_arguments() {
            return Summary::Fill;
        }
        // Text that the summary continues: the last deltas were lost on the way, and the
        // summary is the whole text (a second value the deltas' repeat rule dropped included).
        let extended = match call.held.as_deref() {
            Some(held) if full.starts_with(held.appended.scanner.text()) => {
                settle_held_appended(call);
                true
            }
            Some(held) if held.resends(full) => {
                if let Some(held) = call.held.take() {
                    take_resent(call, *held);
                }
                true
            }
            Some(_) => false,
            None => call.mode != ArgMode::Value && full.starts_with(call.scanner.text()),
        };
        if extended {
            call.sync();
            push_resent(call, full);
            // Counted once kept, as `feed` counts what a fragment adds.
            self.recount(ordinal);
            return Summary::Extend;
        }
        // Held fragments are decided as the call would end without the summary: the text
        // kept is the one its fragments make.
        settle_held(call);
        call.sync();
        mismatch(call, || {
            "the provider's final arguments for this call differ from the fragments it \
             streamed: the call was not run"
                .to_owned()
        });
        Summary::Mismatch
    }

    /// The whole free-form text of the call at `ordinal` (see [`FREE_FORM_KIND`]) as the
    /// provider's finished item states it: it replaces the text the call holds when the two
    /// differ (a `custom_tool_call_input.done` that said otherwise), with the warning
    /// [`warning::INPUT_MISMATCH`]. Returns whether it differed; false, changing nothing, for a
    /// call that is not free-form, has ended or is past a per-stream limit.
    pub fn replace_free_form(&mut self, ordinal: usize, full: &[u8]) -> bool {
        if self.finished || self.over.is_some() {
            return false;
        }
        let Some(call) = self.calls.get_mut(ordinal) else {
            return false;
        };
        if !is_free_form(call) || call.ended || call.scanner.text() == full {
            return false;
        }
        call.scanner = Scanner::new(*call.scanner.config());
        if !full.is_empty() {
            push_checked(call, full);
        }
        warn_once(call, warning::INPUT_MISMATCH);
        self.recount(ordinal);
        true
    }

    /// The call at `ordinal` became an [`ErrorKind::ArgumentsMismatch`] error with `message`
    /// (a recorded call replayed), whatever it holds, unless an arrival error came first.
    ///
    /// # Errors
    /// [`Misuse`] after finish or for an unknown ordinal.
    pub fn mismatch_arguments(&mut self, ordinal: usize, message: &str) -> Result<(), Misuse> {
        let call = self.open_call_mut(ordinal)?;
        call.sync();
        mismatch(call, || message.to_owned());
        Ok(())
    }

    /// The name received so far for a call.
    #[must_use]
    pub fn name(&self, ordinal: usize) -> Option<&str> {
        self.calls.get(ordinal).map(|c| c.name.as_str())
    }

    /// The id of a call, if one arrived.
    #[must_use]
    pub fn id(&self, ordinal: usize) -> Option<&str> {
        self.calls.get(ordinal).and_then(|c| c.id.as_deref())
    }

    /// The JSON text a call keeps as metadata under `key`, if any.
    #[must_use]
    pub fn metadata(&self, ordinal: usize, key: &str) -> Option<&str> {
        let call = self.calls.get(ordinal)?;
        call.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The partial value of a call's arguments into `sink` (spec R1-R11), shown as `view` asks:
    /// `Ok(None)` when nothing is reportable yet.
    ///
    /// # Errors
    /// [`Misuse::Finished`] after [`Assembler::finish`] (the finished calls have their values),
    /// [`Misuse::NoSuchCall`]; sink errors are returned inside the `Ok`.
    pub fn partial_into<S: Sink>(
        &mut self,
        ordinal: usize,
        view: PartialOptions,
        sink: &mut S,
    ) -> Result<Result<Option<S::Value>, S::Error>, Misuse> {
        let call = self.open_call_mut(ordinal)?;
        call.sync();
        Ok(partial_of(&call.scanner, view, sink))
    }

    /// Ends the stream: every started call, exactly once, in ordinal order.
    ///
    /// # Errors
    /// [`Misuse::Finished`] when called twice.
    pub fn finish(&mut self) -> Result<Vec<ToolCall>, Misuse> {
        self.finish_calls(false)
    }

    /// [`Assembler::finish`], except that a call whose only open question is whether its text
    /// is valid JSON (no pre-check, a name, text never scanned) is returned with
    /// [`ToolCall::unscanned`] set: the caller settles it with [`ToolCall::scan_deferred`], or
    /// with [`ToolCall::settle`] once another strict parser has accepted the text
    /// (see [`crate::outline`]). A caller that builds the value anyway saves the scan.
    ///
    /// # Errors
    /// [`Misuse::Finished`] when called twice.
    pub fn finish_deferring_scans(&mut self) -> Result<Vec<ToolCall>, Misuse> {
        self.finish_calls(true)
    }

    fn finish_calls(&mut self, defer: bool) -> Result<Vec<ToolCall>, Misuse> {
        if self.finished {
            return Err(Misuse::Finished);
        }
        self.finished = true;
        let registry = self.registry.clone();
        // Calls are finished in place: moving each (scanner and all) out would copy it.
        let mut calls = self.calls.take_all();
        let mut renamed = renamed_ids(&calls);
        let mut out = Vec::with_capacity(calls.len());
        for (ordinal, call) in calls.iter_mut().enumerate() {
            let renamed_id = renamed.get_mut(ordinal).and_then(Option::take);
            end_retread(call);
            let deferred = defer && deferrable(call, registry.as_deref());
            if !deferred {
                // Decided before asking whether the call is blank: a fragment held after
                // whitespace may be the whole value (`" "` then `" {}"`).
                settle_held(call);
                call.sync();
                drain_call_errors(
                    ordinal,
                    call,
                    registry.as_deref(),
                    &mut self.released_errors,
                );
            }
            // A call with no argument text at all would become `{}`; after a broken stream it
            // is cut off instead (a call with some text is already `truncated`). With a
            // pre-check, `{}` may also break the schema (a required field): that finding is
            // about the stand-in `{}`, not about anything the model sent, so the cut wins.
            // In a stream that ends its calls, one it never ended was cut off too (its start
            // event's placeholder input is no argument the model sent), as when the
            // connection drops: an earlier call's end event may be the one lost. A call that a
            // later one replaced under its key was ended by that one (quirks 2 and 25). Past a
            // per-stream limit nothing of the response is kept, its end neither: a call that had
            // no text by then keeps none, whether the reader read on to the finish reason
            // (`feed_sse`) or stopped at the limit (`assemble`).
            let broke_off = self
                .interrupted
                .as_deref()
                .filter(|_| ordinal >= self.interrupted_from);
            let cut = broke_off.is_some()
                || self.over.is_some()
                || self.cut_by_limit == Some(ordinal)
                || (self.ends_calls && self.open.get(call.index) == Some(ordinal));
            let cut_before_arguments = cut
                && !deferred
                && !call.ended
                && call.stopped.is_none()
                && call.scanner.is_blank()
                && call.mode != ArgMode::Value;
            let stream_limits = (self.config.max_calls, self.config.max_stream_bytes);
            let mut done = finish_call(
                ordinal,
                call,
                registry.as_ref(),
                renamed_id,
                deferred,
                stream_limits,
            );
            let about_the_stand_in = done.error.as_ref().map_or(true, |e| {
                matches!(e.kind, ErrorKind::SchemaViolation | ErrorKind::FreeFormCall)
            });
            if cut_before_arguments && about_the_stand_in {
                done.arguments.clear();
                done.complete = false;
                let message = match broke_off {
                    Some(reason) => format!(
                        "the stream broke off before this call's arguments arrived ({reason})"
                    ),
                    None if self.limit_hit => {
                        "the output limit was reached before this call's arguments began".to_owned()
                    }
                    None => "the response ended before this call's arguments arrived, and the \
                             provider never ended the call"
                        .to_owned(),
                };
                done.error = Some(Error::with_message(
                    ErrorKind::Truncated,
                    0,
                    String::new(),
                    message,
                ));
            }
            if let Some(limit) = self.over {
                done.scan_deferred();
                done.error = Some(limit.error());
            }
            out.push(done);
        }
        self.retired = calls;
        self.finished_failed = out.iter().any(|call| call.error.is_some());
        Ok(out)
    }

    /// Frees the working state (scanners, pre-check and progress state) of the calls
    /// `finish` handed over, which it leaves to be freed with the assembler so that the calls
    /// come out sooner: for an assembler kept after its stream ended, once nothing waits on
    /// it. Everything `finish` returned, and what the assembler still reports (errors not yet
    /// drained, the finish reason, usage), stays. Before `finish` it does nothing.
    pub fn release_finished(&mut self) {
        self.retired = Vec::new();
    }
}

/// True when nothing but the JSON verdict on `call`'s text is left to decide at its end, and
/// that text has not been scanned yet: no pre-check, progress or resend handling touched it,
/// the call has a name, and the text is not blank.
fn deferrable(call: &Call, registry: Option<&Registry>) -> bool {
    registry.is_none()
        && !is_free_form(call)
        && call.check.is_none()
        && call.progress.is_none()
        && call.held.is_none()
        && call.arrival.is_none()
        && call.stopped.is_none()
        && call.mode != ArgMode::Value
        && !call.name.is_empty()
        && call.scanner.unscanned() == call.scanner.text().len()
        && first_non_ws(call.scanner.text()).is_some()
}

/// Builds a partial value from a scanner's accepted prefix, shown as `view` asks.
pub fn partial_of<S: Sink>(
    scanner: &Scanner,
    view: PartialOptions,
    sink: &mut S,
) -> Result<Option<S::Value>, S::Error> {
    let valid = scanner.valid_len();
    let options = BuildOptions::for_partial(
        view,
        scanner.is_complete(),
        scanner.config().duplicate_keys == crate::scanner::DuplicateKeys::LastWins,
    );
    build(&scanner.text()[..valid], options, sink)
}

fn attach_check(call: &mut Call, registry: &Registry) {
    // The check replays the text so far; later pushes must not show it those bytes again.
    call.sync();
    let check = CallCheck::new(
        registry,
        &call.name,
        call.scanner.text(),
        call.scanner.config(),
    );
    call.check = Some(Box::new(check));
    // A name completed while fragments are held changes what their readings break.
    if let Some(held) = call.held.as_deref_mut() {
        held.recheck(registry, &call.name);
    }
}

fn push_checked(call: &mut Call, text: &[u8]) {
    if let Some(progress) = scanned_progress(&mut call.progress) {
        // Progress reports every fragment's events as they arrive.
        match &mut call.check {
            Some(check) => check.push_also(&mut call.scanner, text, progress),
            None => call.scanner.feed_with(text, progress),
        }
    } else if !call.scanner.try_append(text) {
        // Bytes past `max_bytes` (or after finish): the scanner decides them now.
        call.scan_now(text);
    } else if call.check.is_some()
        && (call.scanner.unscanned() >= DEFERRED_BYTES || may_close_value(text))
    {
        // Otherwise scanning (and the pre-check) waits until some decision or reader needs it
        // (`Call::sync`), or, for a pre-checked call, until `DEFERRED_BYTES` are waiting or the
        // fragment may have closed the arguments; every byte is still scanned once, in order.
        // A call without a pre-check has nothing to decide early that nobody asks for, so its
        // text is scanned in one pass when read: one pass over the whole text costs about a
        // fifth less than resuming once per `DEFERRED_BYTES` (1.64 ns/B against 2.0 ns/B on a
        // 20 KB call).
        call.sync();
    }
}

/// True when `fragment` ends, past whitespace, with `}`: the arguments may be complete now.
/// A pre-checked call scans then rather than at `finish`, so the bytes it deferred are not left
/// for the time between the last fragment and a validated call (on a 200 B call they were most
/// of `finish`). A `}` that closes a nested object costs one early resume, no more.
fn may_close_value(fragment: &[u8]) -> bool {
    fragment.iter().rev().find(|&&b| !is_ws(b)) == Some(&b'}')
}

/// Most bytes a pre-checked call leaves unscanned between decisions. Resuming the scanner
/// once per this many bytes (about ten fragments) costs 1% more instructions than once per
/// 256 bytes, and it halves the work left for `finish`, which is most of the time from the
/// last fragment to a validated call on small calls (a 200 B call: 1.64x to 1.41x pydantic's
/// own validation in instructions); that time does not grow with the size of the arguments.
const DEFERRED_BYTES: usize = 128;

fn feed_text(call: &mut Call, text: &[u8], registry: Option<&Registry>) {
    if text.is_empty() {
        return;
    }
    if call.mode == ArgMode::Value {
        extra_arguments(call, text);
        return;
    }
    if call.check.is_none() && !call.name.is_empty() {
        if let Some(reg) = registry.filter(|_| !is_free_form(call)) {
            attach_check(call, reg);
        }
    }
    if let Some(mut held) = call.held.take() {
        call.sync();
        // Each reading takes the fragment its own way; one that breaks is dropped.
        let resends = held.resends(text);
        if resends {
            held.repeated |= text.len() == held.last().len();
            let new = text.get(held.last().len()..).unwrap_or_default();
            held.resent.push(new);
        }
        let held_end = held.appended.scanner.text().len();
        held.appended.push(text);
        let appends = !held.appended.refuted();
        if appends && resends && !held.resent.broken() {
            held.judge();
            call.held = Some(held);
            return;
        }
        if resends && (!appends || !held.resent.broken()) {
            // Only the resend reading survives, or neither does and the fragment still
            // extends the last: a cumulative stream (quirks 19, 20), broken or not, whose own
            // text the call keeps.
            take_resent(call, *held);
            return;
        }
        // Appended: the held fragments join the call's text, and this one goes the ordinary
        // way (it may start a new hold).
        take_appended(call, *held, held_end);
    }
    let buffer = call.scanner.text();
    let extends = text.len() > buffer.len() && text.starts_with(buffer);
    // The resend and repeat rules read JSON values: in free text (a Chat custom tool call's
    // `custom.input` pieces) a piece that repeats or extends what came before ("a", "a") is
    // just more text. Asked only once a rule would apply, so other calls pay nothing for it.
    if !buffer.is_empty() && (extends || text == buffer) && !is_free_form(call) {
        // A resend or a repeat is told apart by how far the value got.
        call.sync();
        let buffer = call.scanner.text();
        if extends
            && call.mode != ArgMode::Cumulative
            && call.scanner.is_complete()
            && text
                .get(buffer.len()..)
                .is_some_and(|rest| first_non_ws(rest).is_none())
        {
            // A complete value sent again with whitespace after it: a resending provider's
            // final repeat (appended, it would be a second value).
            latch_cumulative(call);
            push_resent(call, text);
            return;
        }
        // The whole text again while the value is open is read both ways too: a resending
        // provider's unchanged snapshot, appended, broke the call it then went on with.
        let open_repeat = text == buffer
            && call.mode != ArgMode::Cumulative
            && !call.scanner.is_complete()
            && certain_grammar_error(&call.scanner).is_none();
        if open_repeat
            || (extends && (call.mode == ArgMode::Cumulative || !call.scanner.is_complete()))
        {
            if call.mode != ArgMode::Cumulative {
                let held = Held::new(call, text, registry);
                match (held.appended.refuted(), held.resent.broken()) {
                    (false, false) => {
                        call.held = Some(Box::new(held));
                        return;
                    }
                    (false, true) => {
                        // The fragment already breaks the resend reading: it is plain text,
                        // and the errors it makes certain are released now, as they are when
                        // it is cut a byte earlier and starts no hold.
                        push_checked(call, text);
                        return;
                    }
                    _ => {}
                }
            }
            // Quirk 19: the provider resends everything so far; keep only what is new.
            latch_cumulative(call);
            push_resent(call, text);
            return;
        }
        if text == buffer && (call.mode == ArgMode::Cumulative || call.scanner.is_complete()) {
            // Quirk 19/20: an exact repeat once latched, or a consolidated repeat of a complete
            // value.
            warn_once(call, warning::REPEAT_DROPPED);
            return;
        }
    }
    if call.mode != ArgMode::Cumulative
        && may_repeat_value(call.scanner.text(), text)
        && !is_free_form(call)
    {
        // The same value written again with other spacing: an adapter that re-serializes the
        // parsed arguments for its consolidated repeat (quirk 20). Appended, it would be a
        // second value and the call lost.
        call.sync();
        if call.scanner.is_complete() && same_tokens(call.scanner.text(), text) {
            warn_once(call, warning::REPEAT_DROPPED);
            return;
        }
    }
    push_checked(call, text);
}

/// A delta's id, unless it is blank or `"null"` (sent for no id): none is taken as a call's.
/// Blank is asked character by character, as `trim` judges whitespace, stopping at the
/// first character of a real id: `trim` measured both ends of it, three times a call.
#[inline]
fn real_id(id: Option<&str>) -> Option<&str> {
    id.filter(|i| !i.chars().all(char::is_whitespace) && *i != "null")
}

/// Whether `text` may be `buffer`'s object or array written again: `buffer` ends a container
/// and `text` starts one of the same kind. No valid continuation does (a `}` or `]` is never
/// followed by `{` or `[` in one value), so the test costs the hot path a few byte reads: the
/// fragment's first, which settles nearly every fragment, and the buffer's ends only then.
fn may_repeat_value(buffer: &[u8], text: &[u8]) -> bool {
    let (opens, closes) = match first_non_ws(text) {
        Some(b'{') => (b'{', b'}'),
        Some(b'[') => (b'[', b']'),
        _ => return false,
    };
    first_non_ws(buffer) == Some(opens)
        && buffer.iter().rev().copied().find(|&b| !is_ws(b)) == Some(closes)
}

fn finish_call(
    ordinal: usize,
    call: &mut Call,
    registry: Option<&Arc<Registry>>,
    renamed_id: Option<String>,
    deferred: bool,
    stream_limits: (usize, usize),
) -> ToolCall {
    settle_held(call);
    if !deferred {
        call.sync();
    }
    let mut warnings = std::mem::take(&mut call.warnings);
    let (arguments, error, json_ok) = if is_free_form(call) {
        free_form_verdict(call)
    } else {
        let blank = !deferred && call.scanner.is_blank() && call.mode != ArgMode::Value;
        let json_result = if blank || deferred {
            Ok(())
        } else {
            match (&mut call.check, scanned_progress(&mut call.progress)) {
                (Some(check), _) => check.finish(&mut call.scanner),
                (None, Some(p)) => call.scanner.finish_with(p),
                (None, None) => call.scanner.finish(),
            }
        };
        let arguments = if blank {
            warnings.push(warning::EMPTY_ARGUMENTS);
            b"{}".to_vec()
        } else {
            call.scanner.take_text()
        };
        let json_ok = json_result.is_ok() && !deferred;
        let error = if let Some(reason) = &call.stopped {
            Some(Error::with_message(
                ErrorKind::Filtered,
                arguments.len(),
                String::new(),
                format!("the provider stopped this call ({reason})"),
            ))
        } else if call.name.is_empty() {
            Some(Error::new(ErrorKind::MissingName, 0, String::new()))
        } else if registry.is_some_and(|r| !r.contains(&call.name)) {
            registry.map(|r| crate::precheck::unknown_tool(&call.name, r))
        } else if let Some(e) = call.arrival.take() {
            Some(*e)
        } else if deferred {
            None
        } else if blank {
            registry.and_then(|r| r.check_complete(&call.name, b"{}"))
        } else if let Some(e) = json_verdict(&arguments, json_result) {
            Some(e)
        } else {
            let repeated_keys = call.scanner.repeated_keys();
            match (&call.check, registry) {
                (Some(check), Some(registry)) => check.first_error(
                    registry,
                    &call.name,
                    &arguments,
                    repeated_keys,
                    call.scanner.config(),
                ),
                (check, _) => check.as_ref().and_then(|c| c.errors().next().cloned()),
            }
        };
        (arguments, error, json_ok)
    };
    if contains_replacement_character(&arguments) {
        warnings.push(warning::REPLACEMENT_CHARACTER);
    }
    let free_form = is_free_form(call);
    let mut id = call.id.take();
    if let (Some(wire), Some(renamed)) = (&id, renamed_id) {
        warnings.push(warning::DUPLICATE_ID);
        call.metadata.push((
            "wire_id".to_owned(),
            // JSON, as every metadata value: Rust's `{:?}` escapes are not.
            serde_json::to_string(wire).unwrap_or_default(),
        ));
        id = Some(renamed);
    }
    ToolCall {
        ordinal,
        index: call.index,
        id,
        name: (!call.name.is_empty()).then(|| std::mem::take(&mut call.name)),
        kind: call.kind.take(),
        arguments,
        error,
        metadata: std::mem::take(&mut call.metadata),
        warnings,
        complete: json_ok,
        plain_numbers: call.scanner.plain_numbers() && !deferred && !free_form,
        precheck_registry: registry.cloned(),
        unscanned: deferred,
        limits: *call.scanner.config(),
        stream_limits,
        stop_reason: call.stopped.clone(),
    }
}

/// The text and error of a free-form call (see [`FREE_FORM_KIND`]), whose text is kept as
/// it came (empty when none did: an empty input is an input) and never judged as JSON. What
/// stopped, cut or broke it comes first, as for any call; otherwise it is a
/// [`ErrorKind::FreeFormCall`] error, so that it never runs as JSON arguments.
fn free_form_verdict(call: &mut Call) -> (Vec<u8>, Option<Error>, bool) {
    let overflowed = call.scanner.overflowed();
    let limit = call.scanner.config().max_bytes;
    let arguments = call.scanner.take_text();
    let error = if let Some(reason) = &call.stopped {
        Error::with_message(
            ErrorKind::Filtered,
            arguments.len(),
            String::new(),
            format!("the provider stopped this call ({reason})"),
        )
    } else if call.name.is_empty() {
        Error::new(ErrorKind::MissingName, 0, String::new())
    } else if let Some(e) = call.arrival.take() {
        *e
    } else if overflowed {
        Error::new(ErrorKind::TooLarge, limit, String::new())
    } else {
        Error::with_message(
            ErrorKind::FreeFormCall,
            0,
            String::new(),
            format!(
                "{:?} is a custom tool: its input is free-form text, not json arguments",
                call.name
            ),
        )
    };
    (arguments, Some(error), false)
}

/// The error of a text from its scan: the JSON error, or `not_object` for valid JSON that is
/// not an object.
fn json_verdict(arguments: &[u8], json_result: Result<(), Error>) -> Option<Error> {
    match json_result {
        Err(e) => Some(e),
        Ok(()) if first_non_ws(arguments) != Some(b'{') => Some(Error::new(
            ErrorKind::NotObject,
            first_non_ws_offset(arguments),
            String::new(),
        )),
        Ok(()) => None,
    }
}

/// The id a call without a wire id is answered with (Python's `call_id_for`).
#[must_use]
pub fn synthetic_id(ordinal: usize) -> String {
    format!("toolwire_{ordinal}")
}

/// For each call, the id it gets in place of its wire id, if it needs one: a wire id that an
/// earlier call used, or one equal to the synthetic id of a call without an id, would make two
/// calls answer to one id (a provider refuses a turn with an unanswered call). The new id is
/// [`renamed_id`]. Empty when no call needs one.
fn renamed_ids(calls: &[Call]) -> Vec<Option<String>> {
    let idless = calls.iter().any(|c| c.id.is_none());
    let posing = |id: &str| idless && is_synthetic_of_idless(calls, id);
    // Usually nothing clashes, and nothing is allocated: a quadratic scan for the usual handful
    // of calls, a set for many.
    const LINEAR_LIMIT: usize = 16;
    let mut seen = std::collections::HashSet::new();
    let flagged: Vec<usize> = (0..calls.len())
        .filter(|&i| {
            calls[i].id.as_deref().is_some_and(|id| {
                let repeated = if calls.len() <= LINEAR_LIMIT {
                    calls[..i].iter().any(|c| c.id.as_deref() == Some(id))
                } else {
                    !seen.insert(id)
                };
                repeated || posing(id)
            })
        })
        .collect();
    if flagged.is_empty() {
        // Nothing to rename: nothing is allocated on the common path (an empty `Vec` does not allocate).
        return Vec::new();
    }
    let mut out = vec![None; calls.len()];
    let mut taken: std::collections::HashSet<String> = calls
        .iter()
        .enumerate()
        .map(|(ordinal, c)| c.id.clone().unwrap_or_else(|| synthetic_id(ordinal)))
        .collect();
    for ordinal in flagged {
        let wire = calls[ordinal].id.as_deref().unwrap_or_default();
        let id = renamed_id(wire, ordinal, &taken);
        taken.insert(id.clone());
        out[ordinal] = Some(id);
    }
    out
}

/// The length limits on a call id that the providers set, in characters, shortest first:
/// OpenAI's Chat API refuses a `tool_calls[].id` over 40 ("string too long"), Bedrock a
/// `toolUseId` over 64 (its service model), OpenAI's Responses API an `input[].call_id` over 64
/// (`string_above_max_length`, AnswerDotAI/fastllm#45).
const ID_LENGTH_LIMITS: [usize; 2] = [40, 64];

/// Mistral's call ids: exactly this many ASCII letters and digits, and the only ids it takes
/// back ("must be a-z, A-Z, 0-9, with a length of 9").
const MISTRAL_ID_CHARS: usize = 9;

/// The new id of the call `ordinal` whose wire id `wire` another call of the turn has, none of
/// `taken`: `<wire>_<ordinal>`, then `<wire>_<ordinal>_<n>` for the first free `n`. The
/// assembler does not know which provider the id goes back to (an application may send its
/// own copy of the turn with it), so the new id keeps every rule the wire id kept: it adds
/// only `_` and digits, which every provider's pattern allows, and it is never longer than
/// the shortest limit in [`ID_LENGTH_LIMITS`] that the wire id is within (the wire id is cut
/// to make room), nor, past them all, than the wire id itself. A wire id of Mistral's shape
/// (see [`mistral_renamed_id`]) keeps that shape.
fn renamed_id(wire: &str, ordinal: usize, taken: &std::collections::HashSet<String>) -> String {
    if wire.len() == MISTRAL_ID_CHARS && wire.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return mistral_renamed_id(wire, ordinal, taken);
    }
    let length = wire.chars().count();
    let cap = ID_LENGTH_LIMITS
        .into_iter()
        .find(|&limit| length <= limit)
        .unwrap_or(length);
    // Every `n` gives an id of its own (the text after its last `_`), so one of the first
    // `taken.len() + 1` is free.
    let mut n = 0_usize;
    loop {
        let suffix = if n == 0 {
            format!("_{ordinal}")
        } else {
            format!("_{ordinal}_{n}")
        };
        let room = cap.saturating_sub(suffix.len());
        let stem = wire
            .char_indices()
            .nth(room)
            .map_or(wire, |(at, _)| &wire[..at]);
        let id = format!("{stem}{suffix}");
        if !taken.contains(&id) {
            return id;
        }
        n += 1;
    }
}

/// The new id of a repeated wire id of Mistral's shape ([`MISTRAL_ID_CHARS`] ASCII letters
/// and digits), none of `taken`: the same shape, its last characters replaced by the digits of
/// `ordinal`, then of `ordinal` followed by `n` for the first free `n` (the last nine digits
/// when there are more). It ends in a digit, as every renamed id does, which the Python side
/// reads as "maybe renamed".
fn mistral_renamed_id(
    wire: &str,
    ordinal: usize,
    taken: &std::collections::HashSet<String>,
) -> String {
    // Ids of one suffix length differ by their suffix, so each length offers far more free
    // ids than a turn has calls.
    let mut n = 0_usize;
    loop {
        let digits = if n == 0 {
            ordinal.to_string()
        } else {
            format!("{ordinal}{n}")
        };
        let digits = &digits[digits.len().saturating_sub(MISTRAL_ID_CHARS)..];
        // `wire` is ASCII: any byte index is a character boundary.
        let id = format!("{}{digits}", &wire[..MISTRAL_ID_CHARS - digits.len()]);
        if !taken.contains(&id) {
            return id;
        }
        n += 1;
    }
}

/// Whether `id` is the synthetic id of some call that has no wire id.
fn is_synthetic_of_idless(calls: &[Call], id: &str) -> bool {
    id.strip_prefix("toolwire_")
        .and_then(|n| n.parse::<usize>().ok())
        .is_some_and(|n| synthetic_id(n) == id && calls.get(n).is_some_and(|c| c.id.is_none()))
}

fn first_non_ws(text: &[u8]) -> Option<u8> {
    text.iter().copied().find(|&b| !is_ws(b))
}

fn first_non_ws_offset(text: &[u8]) -> usize {
    text.iter().position(|&b| !is_ws(b)).unwrap_or(0)
}

/// U+FFFD (EF BF BD) in the text: a character was mangled before it reached us (quirk 40).
/// A search for the lead byte: `memmem` builds a searcher on each call, which cost more than
/// the search itself on short arguments, and EF leads only U+F000 to U+FFFF, rare in text.
fn contains_replacement_character(text: &[u8]) -> bool {
    memchr::memchr_iter(0xEF, text).any(|at| text.get(at + 1..at + 3) == Some(&[0xBF, 0xBD]))
}

/// The most digits of an integer Python reads from JSON text: its default
/// `sys.get_int_max_str_digits()`, past which `json.loads` refuses the text (and `json.dumps`
/// the `int`). Provider data kept for the next turn (usage, metadata) must hold none longer.
pub const MAX_INT_DIGITS: usize = 4300;

/// Whether `value` holds an integer of more than [`MAX_INT_DIGITS`] digits, at any depth.
pub(crate) fn has_long_integer(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Number(n) => {
            let text = n.as_str();
            text.len() > MAX_INT_DIGITS
                && !text.contains(['.', 'e', 'E'])
                && text.trim_start_matches('-').len() > MAX_INT_DIGITS
        }
        serde_json::Value::Array(items) => items.iter().any(has_long_integer),
        serde_json::Value::Object(map) => map.values().any(has_long_integer),
        _ => false,
    }
}

/// Whether the JSON text `json` holds such an integer. Only a text longer than the digits
/// can, so the usual short field is not parsed.
fn text_has_long_integer(json: &str) -> bool {
    json.len() > MAX_INT_DIGITS
        && serde_json::from_str::<serde_json::Value>(json).is_ok_and(|v| has_long_integer(&v))
}

fn warn_once(call: &mut Call, warning: &'static str) {
    if !call.warnings.contains(&warning) {
        call.warnings.push(warning);
    }
}

/// Arguments for a call that already has some: an exact repeat of an object value is dropped
/// (quirk 20); anything else mixes an object with other arguments (quirk 23).
fn extra_arguments(call: &mut Call, text: &[u8]) {
    if call.mode == ArgMode::Value && call.scanner.text() == text {
        call.warnings.push(warning::REPEAT_DROPPED);
    } else if call.arrival.is_none() {
        let offset = call.scanner.text().len();
        call.arrival = Some(Box::new(Error::new(
            ErrorKind::MixedArguments,
            offset,
            String::new(),
        )));
    }
}

/// Pushes the part of a cumulative resend (everything so far) beyond what the call holds.
fn push_resent(call: &mut Call, full: &[u8]) {
    let held = call.scanner.text().len();
    push_checked(call, full.get(held..).unwrap_or_default());
}

fn latch_cumulative(call: &mut Call) {
    if call.mode != ArgMode::Cumulative {
        call.mode = ArgMode::Cumulative;
        call.warnings.push(warning::CUMULATIVE_ARGUMENTS);
    }
}

/// Decides the fragments still held when no fragment can follow: appended, unless only the
/// resend reading gives one complete value.
fn settle_held(call: &mut Call) {
    let Some(held) = call.held.take() else { return };
    if held.only_resend_completes() {
        take_resent(call, *held);
    } else {
        let end = held.appended.scanner.text().len();
        take_appended(call, *held, end);
    }
}

/// Ends a replay of the call, if one is under way: a replay cut short leaves the call as it
/// was, and says so when it dropped text (the text could also have been a new call cut off).
fn end_retread(call: &mut Call) {
    if call.retread.take().is_some_and(|r| r.dropped) {
        warn_once(call, warning::REPLAY_DROPPED);
    }
}

/// A call's progress when its items come from its scanner's events: `None` without progress
/// tracking, and for items recorded from outside ([`Progress::record`]), whose call text is
/// scanned as a call's without tracking is.
fn scanned_progress(progress: &mut Option<Box<Progress>>) -> Option<&mut Progress> {
    progress.as_deref_mut().filter(|p| !p.is_recorded())
}

/// Completes a top-level number at the end of a call's text for its progress items, once no
/// fragment can follow (its end event, or `finish`, which releases progress items before it
/// finishes the calls). Held fragments, still undecided, leave the call as it is.
fn complete_for_progress(call: &mut Call) {
    if call.held.is_some() {
        return;
    }
    if let Some(progress) = scanned_progress(&mut call.progress) {
        match call.check.as_deref_mut() {
            Some(check) => check.complete_top_level_number_also(&mut call.scanner, progress),
            None => call.scanner.complete_top_level_number(progress),
        }
    }
}

/// Decides held fragments as appended, whatever either reading completes: the call was cut
/// (by the output limit or a broken transport), so its text is expected to be unfinished, and
/// a resend reading that happens to be a whole value would run a call the model never
/// finished.
fn settle_held_appended(call: &mut Call) {
    if let Some(held) = call.held.take() {
        let end = held.appended.scanner.text().len();
        take_appended(call, *held, end);
    }
}

/// Decides held fragments as resends: the call's text becomes the last one's.
fn take_resent(call: &mut Call, held: Held) {
    latch_cumulative(call);
    push_resent(call, held.resent.scanner.text());
    if held.repeated {
        warn_once(call, warning::REPEAT_DROPPED);
    }
    recount_reported(call, held.early);
}

/// Decides held fragments as appended: the call's text grows to the appended reading's, up
/// to `end`.
fn take_appended(call: &mut Call, held: Held, end: usize) {
    let own = call.scanner.text().len();
    push_checked(
        call,
        held.appended
            .scanner
            .text()
            .get(own..end)
            .unwrap_or_default(),
    );
    recount_reported(call, held.early);
}

/// The early errors `drain_errors` reports for a call besides its arrival error: its grammar
/// error and its settled pre-check violations, or, while a held fragment already breaks both
/// of its readings, those both readings share.
/// Makes `call` a [`ErrorKind::LostEvent`] error at the text it holds (synced), unless an
/// arrival error came first.
/// Set-aside arguments of `call` passed `max_bytes`: the call fails as a call whose fragments
/// passed it would, without the text being kept (see [`Assembler::set_aside`]).
#[cold]
#[inline(never)]
fn set_aside_too_large(call: &mut Call, max_bytes: usize) {
    if call.arrival.is_none() {
        // At the end of the text the call holds (none, for a call just started), as for a
        // lost event: the bytes that passed the limit were never part of it.
        call.arrival = Some(Box::new(Error::with_message(
            ErrorKind::TooLarge,
            call.scanner.text().len(),
            String::new(),
            format!(
                "the arguments sent with this call's start are larger than max_bytes \
                 ({max_bytes} bytes)"
            ),
        )));
    }
}

/// Records no more progress items for `call`, which can no longer run (stopped, or an event
/// of it lost): what would still come of it is text that never was one value (`pay Alice` and
/// then the fragment after a lost one), which a progressive view would show as written.
fn quiet(call: &mut Call) {
    if let Some(progress) = call.progress.as_deref_mut() {
        progress.stop_recording();
    }
}

/// Makes `call` a `kind` error at the text it holds, unless an arrival error came first; its
/// progress stops being recorded either way.
fn fail_on_arrival(call: &mut Call, kind: ErrorKind, message: impl FnOnce() -> String) {
    quiet(call);
    if call.arrival.is_none() {
        call.arrival = Some(Box::new(Error::with_message(
            kind,
            call.scanner.text().len(),
            String::new(),
            message(),
        )));
    }
}

fn lose(call: &mut Call, message: impl FnOnce() -> String) {
    fail_on_arrival(call, ErrorKind::LostEvent, message);
}

/// Makes `call` an [`ErrorKind::ArgumentsMismatch`] error at the text it holds (synced),
/// unless an arrival error came first.
#[cold]
#[inline(never)]
fn mismatch(call: &mut Call, message: impl FnOnce() -> String) {
    fail_on_arrival(call, ErrorKind::ArgumentsMismatch, message);
}

/// Argument text for `call` after the provider ended it (see [`Assembler::ended_call_for`]).
/// White space adds nothing to a call that ended, as after a whole call sent again. Other text
/// after a whole value could only have made it invalid (a delta that a proxy repeated): it is
/// dropped, with a warning, and the call stays as the provider ended it. After a value that is
/// not whole (or one that came whole as a value, which may stand for no text: Anthropic's
/// `input` of a block with no fragments), the text the call ended with is not all of it: the
/// call does not run. Never a second call: it would have no id nor name.
#[cold]
#[inline(never)]
fn late_fragment(call: &mut Call, arguments: Option<Arguments<'_>>) {
    match arguments {
        None => return,
        Some(Arguments::Text(text)) if first_non_ws(text).is_none() => return,
        Some(_) => {}
    }
    settle_held(call);
    call.sync();
    if call.mode != ArgMode::Value && call.scanner.is_complete() {
        warn_once(call, warning::LATE_FRAGMENT_DROPPED);
    } else {
        mismatch(call, || {
            "argument text for this call came after the provider ended it: the text it \
             ended with is not all of its arguments, and the call was not run"
                .to_owned()
        });
    }
}

fn early_errors(call: &Call) -> (Option<&Error>, Vec<&Error>) {
    if is_free_form(call) {
        // Free-form text is not JSON: what the scanner finds in it is no error of the call's.
        return (None, Vec::new());
    }
    match call.held.as_ref().and_then(|h| h.early.as_ref()) {
        Some(early) => (early.grammar.as_ref(), early.checks.iter().collect()),
        None => (
            certain_grammar_error(&call.scanner),
            call.check
                .as_ref()
                .map_or_else(Vec::new, |c| c.early_errors().collect()),
        ),
    }
}

/// Appends the errors of `call` that became certain since they were last drained (see
/// [`Assembler::drain_errors`]); the call is scanned up to date.
fn drain_call_errors(
    ordinal: usize,
    call: &mut Call,
    registry: Option<&Registry>,
    out: &mut Vec<(usize, Error)>,
) {
    settle_name(call, registry);
    let start = out.len();
    let mut reported = call.reported;
    // An arrival error (a fragment that cannot join the call) is known when its delta comes,
    // before the bytes after it are scanned: first among equal offsets.
    if let Some(e) = &call.arrival {
        if !reported.arrival {
            out.push((ordinal, (**e).clone()));
            reported.arrival = true;
        }
    }
    let (grammar, checks) = early_errors(call);
    if let Some(e) = grammar {
        if !reported.grammar {
            out.push((ordinal, e.clone()));
            reported.grammar = true;
        }
    }
    for e in checks.into_iter().skip(reported.checks) {
        out.push((ordinal, e.clone()));
        reported.checks += 1;
    }
    call.reported = reported;
    // In the order they became certain, as the byte offsets tell it (stable: a tie keeps the
    // order above), so one drain after many events reads as many drains.
    if let Some(mine) = out.get_mut(start..) {
        mine.sort_by_key(|(_, e)| e.offset);
        if !mine.is_empty() {
            hide_secret_keys(call, mine);
        }
    }
}

/// Hides in `errors`, drained from `call` in the order of their offsets, the secret values
/// the model sent again as keys (see [`crate::secret_keys`]): the call's own error keeps them.
fn hide_secret_keys(call: &Call, errors: &mut [(usize, Error)]) {
    let Some(schema) = call
        .check
        .as_deref()
        .and_then(CallCheck::schema)
        .filter(|schema| schema.has_secrets())
    else {
        return;
    };
    // Held fragments are not in the call's text yet; the errors both readings share are
    // those of the text with them appended.
    let text = match call.held.as_deref() {
        Some(held) => held.appended.scanner.text(),
        None => call.scanner.text(),
    };
    crate::secret_keys::hide_in_errors(
        errors.iter_mut().map(|(_, e)| e),
        text,
        schema,
        *call.scanner.config(),
    );
}

/// Hands the progress items of `call` (at `ordinal`) recorded since its last drain to `f`, its
/// secret values' text hidden; false, draining nothing, while they wait for its name (see
/// [`Assembler::drain_progress_each`]).
#[inline]
fn drain_call_progress(
    ordinal: usize,
    call: &mut Call,
    registry: Option<&Registry>,
    names_final: bool,
    f: &mut impl FnMut(usize, &[u8], &[u8], bool, bool),
) -> bool {
    if call.progress.is_none() {
        return true;
    }
    // The name is final as `settle_name` has it: once the arguments began or the call ended.
    let waits = |registry: &Registry| {
        !names_final
            && !call.ended
            && (call.name.is_empty() || !call.has_arguments())
            && registry.secrets_may_follow(&call.name)
    };
    if registry.is_some_and(|registry| registry.has_secrets() && waits(registry)) {
        return false;
    }
    let Call {
        check, progress, ..
    } = call;
    let Some(progress) = progress.as_deref_mut() else {
        return true;
    };
    let Some((schema, seen)) = check.as_deref_mut().and_then(CallCheck::secrets_mut) else {
        progress.drain_each(|path, text, complete, continues| {
            f(ordinal, path, text, complete, continues);
        });
        return true;
    };
    progress.drain_each(|path, text, complete, continues| {
        let path_text = std::str::from_utf8(path).ok();
        if path_text.is_some_and(|path| schema.is_secret(path)) {
            seen.take(text, complete, continues);
            // A secret value's text never leaves in an item, as in a pre-check error: its
            // first item says it is hidden, and the rest of a long string adds nothing.
            let text = if continues {
                &b""[..]
            } else {
                REDACTED.as_bytes()
            };
            f(ordinal, path, text, complete, continues);
            return;
        }
        // The model may send a secret it wrote before again as a key (see `secret_keys`).
        match path_text.and_then(|path| seen.hidden_pointer(path)) {
            Some(hidden) => f(ordinal, hidden.as_bytes(), text, complete, continues),
            None => f(ordinal, path, text, complete, continues),
        }
    });
    true
}

/// Once a call's arguments began or it ended, its name is final: a later name under its key
/// starts another call (see `open_call_for`).
fn settle_name(call: &mut Call, registry: Option<&Registry>) {
    if call.ended || call.has_arguments() {
        if let (Some(check), Some(registry)) = (call.check.as_deref_mut(), registry) {
            check.name_is_final(registry, &call.name);
        }
    }
}

/// Whether `call` is a free-form call (see [`FREE_FORM_KIND`]).
fn is_free_form(call: &Call) -> bool {
    call.kind.as_deref() == Some(FREE_FORM_KIND)
}

fn certain_grammar_error(scanner: &Scanner) -> Option<&Error> {
    scanner.error().filter(|e| !e.kind.is_incomplete())
}

/// True when `call` (synced, its name settled) has an error no later input can fix.
fn call_has_certain_error(call: &Call) -> bool {
    (!is_free_form(call) && has_certain_error(&call.scanner, call.check.as_deref()))
        || call.arrival.is_some()
        || call.stopped.is_some()
        || call.held.as_ref().is_some_and(|h| h.early.is_some())
}

/// True when a scan or its pre-check has an error no later input can fix.
fn has_certain_error(scanner: &Scanner, check: Option<&CallCheck>) -> bool {
    certain_grammar_error(scanner).is_some() || check.is_some_and(CallCheck::has_certain_error)
}

/// After a held fragment whose errors were reported early is decided: if the reading taken is
/// not the one they came from, the errors the two readings do not share count as not reported
/// yet, so `drain_errors` goes on to report those of the text the call really has.
fn recount_reported(call: &mut Call, early: Option<EarlyErrors>) {
    let Some(early) = early else { return };
    call.sync();
    let (grammar, checks) = early_errors(call);
    let shared = early
        .checks
        .iter()
        .zip(checks)
        .take_while(|(a, b)| *a == *b)
        .count();
    let same_grammar = early.grammar.as_ref() == grammar;
    let reported = &mut call.reported;
    reported.checks = reported.checks.min(shared);
    reported.grammar &= same_grammar;
}

#[cfg(test)]
mod watch_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn call_with_id(id: Option<&str>) -> Call {
        let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
        asm.feed(&Delta {
            index: Some(0),
            id,
            name: Some("f"),
            arguments: Some(Arguments::Text(b"{}")),
            kind: None,
            start: false,
        })
        .expect("feed");
        asm.calls.take_all().remove(0)
    }

    #[test]
    fn an_id_that_is_blank_by_any_unicode_space_or_null_is_no_id() {
        for blank in ["", " ", "\t\n", "\u{3000}", "\u{a0}\u{2029}", "null"] {
            assert_eq!(call_with_id(Some(blank)).id, None, "{blank:?}");
        }
        for real in ["call_1", " call_1 ", "\u{3000}x", "Null", "null "] {
            assert_eq!(
                call_with_id(Some(real)).id.as_deref(),
                Some(real),
                "{real:?}"
            );
        }
    }

    fn tracking(config: AssemblerConfig) -> Assembler {
        let mut asm = Assembler::new(AssemblerConfig {
            track_progress: true,
            ..config
        })
        .expect("config");
        asm.feed(&Delta {
            index: Some(0),
            name: Some("f"),
            ..Delta::default()
        })
        .expect("feed");
        asm
    }

    fn feed_value(asm: &mut Assembler, text: &[u8]) {
        asm.feed(&Delta {
            index: Some(0),
            arguments: Some(Arguments::Value(text)),
            ..Delta::default()
        })
        .expect("feed");
    }

    /// (path, text, complete) of each item drained.
    fn drained(asm: &mut Assembler) -> Vec<(String, String, bool)> {
        asm.drain_progress()
            .into_iter()
            .map(|(_, i)| (i.path, i.text, i.complete))
            .collect()
    }

    fn item(path: &str, text: &str, complete: bool) -> (String, String, bool) {
        (path.to_owned(), text.to_owned(), complete)
    }

    #[test]
    fn the_text_of_recorded_values_adds_no_items_of_its_own() {
        let mut asm = tracking(AssemblerConfig::default());
        asm.record_progress(0, "/a", "x", Recorded::String { ends: false })
            .expect("record");
        asm.record_progress(0, "/a", "y", Recorded::String { ends: false })
            .expect("record");
        assert_eq!(drained(&mut asm), [item("/a", "xy", false)]);
        // The call closes: its text, written from the values, is whole, and so is the string.
        feed_value(&mut asm, br#"{"a":"xy"}"#);
        assert_eq!(drained(&mut asm), [item("/a", "", true)]);
        let calls = asm.finish().expect("finish");
        assert_eq!(calls[0].arguments, br#"{"a":"xy"}"#);
        assert_eq!(calls[0].error, None);
        assert!(asm.drain_progress().is_empty());
    }

    #[test]
    fn a_call_whose_values_are_not_recorded_is_scanned_for_items() {
        let mut asm = tracking(AssemblerConfig::default());
        feed_value(&mut asm, br#"{"a":"xy","n":1}"#);
        assert_eq!(
            drained(&mut asm),
            [item("/a", "xy", true), item("/n", "1", true)]
        );
    }

    #[test]
    fn nothing_is_recorded_without_tracking_or_past_max_depth() {
        let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
        asm.feed(&Delta {
            index: Some(0),
            name: Some("f"),
            ..Delta::default()
        })
        .expect("feed");
        asm.record_progress(0, "/a", "1", Recorded::Scalar)
            .expect("record");
        assert!(asm.drain_progress().is_empty());
        assert_eq!(
            asm.record_progress(1, "/a", "1", Recorded::Scalar),
            Err(Misuse::NoSuchCall(1))
        );

        // A value inside three containers, under `max_depth` 2: the call is `too_deep`, and
        // nothing after it is recorded, as the scanner records nothing past that error.
        let scan = ScanConfig {
            max_depth: 2,
            ..ScanConfig::default()
        };
        let mut asm = tracking(AssemblerConfig {
            scan,
            ..AssemblerConfig::default()
        });
        asm.record_progress(0, "/a/b", "1", Recorded::Scalar)
            .expect("record");
        asm.record_progress(0, "/a/c/d", "2", Recorded::Scalar)
            .expect("record");
        asm.record_progress(0, "/e", "3", Recorded::Scalar)
            .expect("record");
        feed_value(&mut asm, br#"{"a":{"b":1,"c":{"d":2}},"e":3}"#);
        assert_eq!(drained(&mut asm), [item("/a/b", "1", true)]);
        let calls = asm.finish().expect("finish");
        assert_eq!(
            calls[0].error.as_ref().map(|e| e.kind),
            Some(ErrorKind::TooDeep)
        );
    }

    /// Feeds `text` to the call of `f` under `index`.
    fn feed_call(asm: &mut Assembler, index: i64, text: &[u8]) {
        asm.feed(&Delta {
            index: Some(index),
            id: None,
            name: Some("f"),
            arguments: Some(Arguments::Text(text)),
            kind: None,
            start: false,
        })
        .expect("feed");
    }

    #[test]
    fn recorded_progress_waits_while_a_streamed_name_may_become_a_secret_tools() {
        let mut registry = Registry::new();
        let schema = serde_json::json!({"properties": {"key": {"type": "string"}}});
        registry
            .add_with_secrets("tool", &schema, &["/key"])
            .expect("schema");
        registry.add("tools_list", &schema).expect("schema");
        let config = AssemblerConfig {
            track_progress: true,
            ..AssemblerConfig::default()
        };
        let mut asm = Assembler::with_tools(config, Arc::new(registry)).expect("config");
        let name = |asm: &mut Assembler, piece| {
            asm.feed(&Delta {
                index: Some(0),
                name: Some(piece),
                ..Delta::default()
            })
            .expect("feed")
        };
        let drained = |asm: &mut Assembler| -> Vec<(usize, String, String)> {
            let items = asm.drain_progress().into_iter();
            items.map(|(o, i)| (o, i.path, i.text)).collect()
        };
        // Values arrive before the name is whole (Vertex AI pieces, quirk 9): `to` may become
        // `tool`, whose key is secret, or `tools_list`, whose is not; `tool` itself may too.
        name(&mut asm, "to");
        asm.record_progress(0, "/key", "hunter2", Recorded::String { ends: false })
            .expect("record");
        assert_eq!(drained(&mut asm), vec![]);
        name(&mut asm, "ol");
        assert_eq!(drained(&mut asm), vec![]);
        // The call ends as `tool`: its items go out, hidden.
        asm.record_progress(0, "/key", "-more", Recorded::String { ends: true })
            .expect("record");
        asm.end_call(0).expect("end");
        let hidden = vec![(0, "/key".to_owned(), REDACTED.to_owned())];
        assert_eq!(drained(&mut asm), hidden);
    }

    #[test]
    fn release_frees_the_finished_calls_state_and_keeps_what_is_reported() {
        let mut asm = Assembler::new(AssemblerConfig {
            track_progress: true,
            ..AssemblerConfig::default()
        })
        .expect("config");
        asm.release_finished(); // nothing finished yet: nothing to do
        for (index, text) in [(0, &b"{\"a\": [1, 2"[..]), (1, b"{\"b\": 1}")] {
            feed_call(&mut asm, index, text);
        }
        let calls = asm.finish().expect("finish");
        assert_eq!(asm.retired.len(), 2);
        asm.release_finished();
        assert!(asm.retired.is_empty() && asm.retired.capacity() == 0);
        assert_eq!(calls.len(), 2);
        assert!(calls[0].error.is_some() && calls[1].error.is_none());
        assert!(matches!(asm.finish(), Err(Misuse::Finished)));
    }

    #[test]
    fn a_lost_event_visits_only_the_calls_it_may_still_change() {
        let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
        for index in 0..100 {
            feed_call(&mut asm, index, b"{\"a\": ");
        }
        let lose = |asm: &mut Assembler| {
            let before = asm.calls.visited_lost;
            asm.lose_event("a malformed event").expect("lose");
            asm.calls.visited_lost - before
        };
        assert_eq!(lose(&mut asm), 100);
        // Every call is lost: the next unreadable event of the stream visits none of them
        // (each visited all the response's calls, time events x calls).
        assert_eq!(lose(&mut asm), 0);
        // A whole call the stream has not ended may still be changed by a lost event (text
        // after it makes it open again), but only once something changed it: the next event
        // visits it and the new open call, and the one after that neither.
        feed_call(&mut asm, 100, b"{\"a\": 1}");
        feed_call(&mut asm, 101, b"{\"a\": ");
        assert_eq!(lose(&mut asm), 2);
        assert_eq!(lose(&mut asm), 0);
        let kinds: Vec<_> = asm
            .finish()
            .expect("finish")
            .iter()
            .map(|c| c.error.as_ref().map(|e| e.kind))
            .collect();
        assert_eq!(kinds[..100], [Some(ErrorKind::LostEvent); 100]);
        assert_eq!(kinds[100..], [None, Some(ErrorKind::LostEvent)]);
    }

    #[test]
    fn renamed_ids_never_collide_with_any_id_of_the_turn() {
        for wire in [
            vec![Some("x"), Some("x"), Some("x_1")],
            vec![None, Some("toolwire_0")],
            vec![
                Some("a"),
                Some("a"),
                Some("a"),
                Some("a_1"),
                Some("a_2"),
                Some("a_2_"),
            ],
        ] {
            let calls: Vec<Call> = wire.iter().map(|id| call_with_id(*id)).collect();
            let renamed = renamed_ids(&calls);
            let ids: Vec<String> = calls
                .iter()
                .zip(&renamed)
                .enumerate()
                .map(|(ordinal, (call, new))| {
                    new.clone()
                        .or_else(|| call.id.clone())
                        .unwrap_or_else(|| synthetic_id(ordinal))
                })
                .collect();
            let unique: std::collections::HashSet<&String> = ids.iter().collect();
            assert_eq!(unique.len(), ids.len(), "{ids:?}");
            assert!(renamed[0].is_none() || wire[0].is_none() || wire[1].is_none());
        }
    }

    #[test]
    fn renamed_ids_stay_within_every_length_limit_their_wire_id_was_within() {
        // A repeated 64-character id was renamed `<64>_1`, past Bedrock's `toolUseId` limit;
        // a repeated 40-character one past OpenAI Chat's.
        let (chat, past_chat) = ("c".repeat(40), "p".repeat(41));
        let (bedrock, long) = ("b".repeat(64), "l".repeat(70));
        for (wire, cap) in [
            (chat.as_str(), 40),
            (&chat[..39], 40),
            (past_chat.as_str(), 64),
            (bedrock.as_str(), 64),
            (long.as_str(), 70),
            ("\u{e9}".repeat(40).as_str(), 40),
        ] {
            // The cut ids collide with calls of their own, and `_1` with a wire id too.
            let cut: String = wire.chars().take(cap - 2).collect();
            let ids = [wire, wire, wire, &format!("{cut}_1"), &format!("{cut}_2")];
            let calls: Vec<Call> = ids.iter().map(|id| call_with_id(Some(id))).collect();
            let renamed = renamed_ids(&calls);
            let mut all: Vec<&str> = ids.to_vec();
            for (ordinal, new) in renamed.iter().enumerate() {
                if let Some(new) = new {
                    assert!(new.chars().count() <= cap, "{new} past {cap}");
                    assert!(new.starts_with(&cut[..cut.len().min(20)]), "{new}");
                    all[ordinal] = new;
                }
            }
            assert!(renamed[1].is_some() && renamed[2].is_some(), "{renamed:?}");
            let unique: std::collections::HashSet<&&str> = all.iter().collect();
            assert_eq!(unique.len(), all.len(), "{all:?}");
        }
        // A short id keeps its readable form.
        let calls: Vec<Call> = ["fc1", "fc1"]
            .iter()
            .map(|id| call_with_id(Some(id)))
            .collect();
        assert_eq!(renamed_ids(&calls), [None, Some("fc1_1".to_owned())]);
    }

    #[test]
    fn renamed_mistral_ids_keep_mistral_shape() {
        // Mistral refuses back any id but nine ASCII letters and digits: `<id>_1` was refused.
        let ids = [
            "aB3xK9mP2",
            "aB3xK9mP2",
            "aB3xK9mP2",
            "aB3xK9mP1",
            "aB3xK9m21",
        ];
        let calls: Vec<Call> = ids.iter().map(|id| call_with_id(Some(id))).collect();
        let renamed = renamed_ids(&calls);
        let mut all: Vec<String> = ids.iter().map(|&id| id.to_owned()).collect();
        for (ordinal, new) in renamed.iter().enumerate() {
            if let Some(new) = new {
                assert_eq!(new.len(), MISTRAL_ID_CHARS, "{new}");
                assert!(new.bytes().all(|b| b.is_ascii_alphanumeric()), "{new}");
                assert!(new.ends_with(|c: char| c.is_ascii_digit()), "{new}");
                all[ordinal].clone_from(new);
            }
        }
        assert!(renamed[1].is_some() && renamed[2].is_some(), "{renamed:?}");
        let unique: std::collections::HashSet<&String> = all.iter().collect();
        assert_eq!(unique.len(), all.len(), "{all:?}");
        // Not Mistral's shape (ten characters, or an `_`): renamed as before.
        for wire in ["aB3xK9mP2Q", "aB3x_9mP2"] {
            let calls: Vec<Call> = [wire, wire]
                .iter()
                .map(|id| call_with_id(Some(id)))
                .collect();
            assert_eq!(renamed_ids(&calls), [None, Some(format!("{wire}_1"))]);
        }
    }

    #[test]
    fn replacement_character_is_found_wherever_it_is() {
        let fffd = "\u{FFFD}".as_bytes();
        for text in [
            fffd.to_vec(),
            [b"{\"a\": \"".as_slice(), fffd, b"\"}"].concat(),
            [&[0xEF, 0xEF][..], fffd].concat(),
            "\u{F000}\u{FFFD}".as_bytes().to_vec(),
        ] {
            assert!(contains_replacement_character(&text), "{text:?}");
        }
        for text in [
            &b""[..],
            &[0xEF],
            &[0xEF, 0xBF],
            &[0xEF, 0xBF, 0xBE],
            "\u{F000}\u{FFFC}".as_bytes(),
            b"{\"a\": \"\\ufffd\"}",
        ] {
            assert!(!contains_replacement_character(text), "{text:?}");
        }
    }

    #[test]
    fn open_calls_keep_every_kind_of_key() {
        let mut open = OpenCalls::default();
        let keys = [Some(0), Some(15), Some(16), Some(-1), Some(i64::MAX), None];
        for (ordinal, key) in keys.iter().enumerate() {
            assert_eq!(open.get(*key), None);
            open.insert(*key, ordinal);
        }
        for (ordinal, key) in keys.iter().enumerate() {
            assert_eq!(open.get(*key), Some(ordinal));
        }
        // A later call under a key replaces the earlier one, in the table and in the map.
        open.insert(Some(0), 7);
        open.insert(Some(16), 8);
        assert_eq!((open.get(Some(0)), open.get(Some(16))), (Some(7), Some(8)));
        // An ordinal the table cannot hold moves the key to the map, and back.
        let huge = usize::try_from(u32::MAX).unwrap_or(usize::MAX);
        open.insert(Some(3), huge);
        assert_eq!(open.get(Some(3)), Some(huge));
        open.insert(Some(3), 9);
        assert_eq!(open.get(Some(3)), Some(9));
    }

    /// Feeds the `k`-th fragment of call 0 of tool `tool` (named on the first) and returns the
    /// bytes its scanner has not read yet.
    fn feed_fragment(asm: &mut Assembler, k: usize, fragment: &[u8]) -> usize {
        let delta = Delta {
            index: Some(0),
            id: None,
            name: (k == 0).then_some("tool"),
            kind: None,
            arguments: Some(Arguments::Text(fragment)),
            start: false,
        };
        assert_eq!(asm.feed(&delta), Ok(0));
        asm.calls[0].scanner.unscanned()
    }

    /// Feeds `{"note":"xxxx…"}` (about 2 KB) to one call in 10-byte fragments and returns the
    /// bytes its scanner has not read yet.
    fn unscanned_after_feeding(asm: &mut Assembler) -> usize {
        let text = format!("{{\"note\":\"{}\"}}", "x".repeat(2000));
        let mut unscanned = 0;
        for (k, piece) in text.as_bytes().chunks(10).enumerate() {
            unscanned = feed_fragment(asm, k, piece);
        }
        unscanned
    }

    /// An assembler that pre-checks tool `tool` against an object schema with `properties`.
    fn checked_assembler(properties: serde_json::Value) -> Assembler {
        let mut registry = Registry::new();
        let schema = serde_json::json!({"type": "object", "properties": properties});
        assert!(registry.add("tool", &schema).is_ok());
        Assembler::with_tools(AssemblerConfig::default(), Arc::new(registry)).expect("config")
    }

    #[test]
    fn only_prechecked_calls_scan_while_streaming() {
        // Without a pre-check nothing is decided early unless asked: one pass at the end (the
        // opening fragment may be read at once, to tell a call's shape).
        let mut plain = Assembler::new(AssemblerConfig::default()).expect("config");
        assert!(unscanned_after_feeding(&mut plain) >= 2002);
        assert!(plain.finish().expect("finish")[0].error.is_none());
        // A pre-checked call keeps its early decisions at most `DEFERRED_BYTES` behind.
        let mut checked = checked_assembler(serde_json::json!({"note": {"type": "string"}}));
        assert!(unscanned_after_feeding(&mut checked) < DEFERRED_BYTES);
    }

    #[test]
    fn a_prechecked_fragment_that_may_close_the_value_is_scanned_at_once() {
        let mut asm = checked_assembler(
            serde_json::json!({"note": {"type": "string"}, "size": {"type": "object"}}),
        );
        let fragments = [
            r#"{"note":"a"#,
            r#"b","size":{"w":1"#,
            "}",
            r#","note2":"#,
            "3} \n",
        ];
        let unscanned: Vec<usize> = (fragments.iter().enumerate())
            .map(|(k, fragment)| feed_fragment(&mut asm, k, fragment.as_bytes()))
            .collect();
        // Short fragments wait for `DEFERRED_BYTES`, unless they end with `}` (whitespace
        // after it included): then nothing is left for `finish` to scan.
        assert!(unscanned[0] > 0 && unscanned[1] > 0 && unscanned[3] > 0);
        assert_eq!((unscanned[2], unscanned[4]), (0, 0));
        // The early scans change no verdict: the call is complete and valid.
        let calls = asm.finish().expect("finish");
        assert!(calls[0].error.is_none() && calls[0].complete);
    }

    fn text_delta(index: i64, text: &str) -> Delta<'_> {
        Delta {
            index: Some(index),
            arguments: Some(Arguments::Text(text.as_bytes())),
            ..Delta::default()
        }
    }

    /// One call `f` under key 0, fed `fragments` and ended; then `late` under its key.
    fn ended_then(fragments: &[&str], late: &str) -> Vec<ToolCall> {
        let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
        let header = Delta {
            index: Some(0),
            id: Some("c1"),
            name: Some("f"),
            start: true,
            ..Delta::default()
        };
        assert_eq!(asm.feed(&header), Ok(0));
        for fragment in fragments {
            assert_eq!(asm.feed(&text_delta(0, fragment)), Ok(0));
        }
        assert_eq!(asm.end_call(0), Ok(()));
        assert_eq!(asm.feed(&text_delta(0, late)), Ok(0));
        asm.finish().expect("finish")
    }

    #[test]
    fn text_after_an_ended_call_makes_no_call_of_its_own() {
        // White space adds nothing; other text after a whole value is dropped and said.
        for (late, warnings) in [("\n", vec![]), ("1}", vec![warning::LATE_FRAGMENT_DROPPED])] {
            let calls = ended_then(&[r#"{"a":"#, "1}"], late);
            assert_eq!(calls.len(), 1);
            assert_eq!(calls[0].arguments, br#"{"a":1}"#);
            assert!(calls[0].error.is_none());
            assert_eq!(calls[0].warnings, warnings);
        }
        // After a value that was not whole (or no text at all), the call does not run.
        for fragments in [&[r#"{"a":"#][..], &[][..]] {
            let calls = ended_then(fragments, "1}");
            assert_eq!(calls.len(), 1);
            let kind = calls[0].error.as_ref().map(|e| e.kind);
            assert_eq!(kind, Some(ErrorKind::ArgumentsMismatch));
        }
    }

    #[test]
    fn a_summary_completes_cut_deltas_and_never_replaces_others() {
        let cases: [(&[&str], &str, Summary, &str); 5] = [
            // A second value the repeat rule dropped (quirk 20): the summary has both.
            (
                &[r#"{"a":1}"#, r#"{"a":1}"#],
                r#"{"a":1}{"a":1}"#,
                Summary::Extend,
                r#"{"a":1}{"a":1}"#,
            ),
            (
                &[r#"{"a":"x"#, "y", "y", r#""}"#],
                r#"{"a":"xy"}"#,
                Summary::Mismatch,
                r#"{"a":"xyy"}"#,
            ),
            (
                &[r#"{"a":"x"#],
                r#"{"a":"xy"}"#,
                Summary::Extend,
                r#"{"a":"xy"}"#,
            ),
            (
                &[r#"{"a":"#, r#""xy"}"#],
                r#"{"a": "xy"}"#,
                Summary::Same,
                r#"{"a":"xy"}"#,
            ),
            (&[], r#"{"a":"xy"}"#, Summary::Fill, r#"{"a":"xy"}"#),
        ];
        for (fragments, summary, verdict, arguments) in cases {
            let mut asm = Assembler::new(AssemblerConfig::default()).expect("config");
            let header = Delta {
                index: Some(0),
                id: Some("c1"),
                name: Some("f"),
                ..Delta::default()
            };
            assert_eq!(asm.feed(&header), Ok(0));
            for fragment in fragments {
                assert_eq!(asm.feed(&text_delta(0, fragment)), Ok(0));
            }
            assert_eq!(asm.check_summary(0, summary.as_bytes()), verdict);
            if verdict == Summary::Fill {
                assert_eq!(asm.feed(&text_delta(0, summary)), Ok(0));
            }
            let calls = asm.finish().expect("finish");
            assert_eq!(calls[0].arguments, arguments.as_bytes());
            let kind = calls[0].error.as_ref().map(|e| e.kind);
            let want = match verdict {
                Summary::Mismatch => Some(ErrorKind::ArgumentsMismatch),
                // The model's own two values, which the summary shows.
                _ if summary.contains("}{") => Some(ErrorKind::ConcatenatedValues),
                _ => None,
            };
            assert_eq!(kind, want);
        }
    }

    #[test]
    fn a_fragment_that_breaks_the_resend_reading_at_once_releases_its_errors() {
        // `{"a": ` then a fragment that starts with it and closes more than the resend
        // reading opened: its errors are drained while streaming, as for any other cut.
        let text = r#"{"a": {"a": 5, "b": 1}, "c": 2}"#;
        let drained = |cut: usize| {
            let mut asm = checked_assembler(serde_json::json!({
                "a": {"type": "object", "properties": {"a": {"type": "string"}}}
            }));
            let mut seen = Vec::new();
            for (k, part) in [&text[..cut], &text[cut..]].into_iter().enumerate() {
                feed_fragment(&mut asm, k, part.as_bytes());
                seen.extend(
                    asm.drain_errors()
                        .into_iter()
                        .map(|(_, e)| (e.path, e.offset)),
                );
            }
            seen
        };
        let want = drained(5);
        assert!(!want.is_empty());
        assert_eq!(drained(6), want);
    }
}
