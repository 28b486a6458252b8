//! WHATWG `text/event-stream` framing, push-based: bytes in, [`Event`]s out.
//!
//! Design notes
//! - The framer works on bytes, never on decoded text. Field names and line terminators are
//!   ASCII, so a UTF-8 character split between two pushes needs no special case: its bytes are
//!   carried like any others and the JSON layer validates UTF-8 once, on the whole event.
//! - Lines are found with `memchr2(b'\n', b'\r')`. A line that lies inside one push is never
//!   copied; only the unfinished last line of a push is carried over (in `line`).
//! - An event whose data is one `data:` line inside the current push is handed out borrowed from
//!   the push (the common case for LLM streams: one line, one event). Otherwise the data is joined
//!   into `data`, one buffer reused for every event, so the steady state allocates nothing.
//!   A borrowed line still pending at the end of a push is copied into `data` before returning,
//!   because the caller's slice is gone after that.
//! - A `\r` that ends a push ends its line at once; `after_cr` remembers to drop a `\n` that opens
//!   the next push, so `\r\n` split over two pushes is one terminator, not two.
//! - Size cap, [`SseConfig::max_event_bytes`]: an event whose joined data is longer, or that
//!   has a line longer than the cap plus [`LINE_SLACK`] (room for `data: `), is dropped, the rest
//!   of it skipped up to its blank line, and [`SseError::EventTooLarge`] returned; framing then
//!   goes on, so one runaway event never aborts a stream. Both rules look at whole lines and
//!   whole data only, so whether an event is refused (and the error's offset) does not depend on
//!   where the body was split; an unfinished line is refused as soon as it is certain to break
//!   the line rule, which bounds memory at about twice the cap.
//! - `finish` reports a cut event ([`Tail::Truncated`]) instead of dispatching it: the spec
//!   discards an event without its blank line, and a caller needs to know the body was cut.
//!   `finish_with` lets the caller take it instead, as google-genai does.

use std::fmt;

use memchr::{memchr, memchr2};

/// Default for [`SseConfig::max_event_bytes`]: 16 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 << 20;

/// How much longer than [`SseConfig::max_event_bytes`] one line may be: a `data:` line whose
/// value fits the cap must never be refused for the field name in front of it.
pub const LINE_SLACK: usize = 8;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Whether a line (its first 8 bytes suffice) can never carry event data: a comment, or an
/// `id` or `retry` field. One too long for the cap is skipped alone, leaving its event intact: the
/// size cap is about data, and only data can hold part of a call.
fn inert_line(line: &[u8]) -> bool {
    let name = line.split(|&b| b == b':').next().unwrap_or_default();
    line.first() == Some(&b':') || name == b"id" || name == b"retry"
}

/// Limits for a [`Framer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseConfig {
    /// Largest number of bytes one event may hold (joined data plus one unfinished line).
    pub max_event_bytes: usize,
}

impl Default for SseConfig {
    fn default() -> Self {
        Self {
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
        }
    }
}

/// A framing problem. Framing goes on after it; only the offending event is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// An event's data (or one of its lines) was longer than `limit` bytes; it was dropped.
    EventTooLarge {
        /// The configured limit.
        limit: usize,
        /// Stream offset (from the first pushed byte, BOM included) of the line that broke it.
        offset: u64,
        /// Events dispatched before it: the dropped event came in their place `after + 1`.
        after: u64,
    },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EventTooLarge { limit, offset, .. } => {
                write!(
                    f,
                    "event larger than {limit} bytes at byte {offset}, dropped"
                )
            }
        }
    }
}

impl std::error::Error for SseError {}

/// One dispatched event. Borrowed from the push or from the framer; copy what you keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `event:` field, empty when the event had none (the spec then calls it `message`).
    pub event: &'a [u8],
    /// The `data:` lines joined with `\n` (no trailing `\n`). May be empty (`data:` alone).
    pub data: &'a [u8],
    /// The last event id seen so far in the stream (it persists across events, per spec).
    pub id: &'a [u8],
    /// Events dropped for size so far, all of them before this one.
    pub dropped_before: u64,
}

impl Event<'_> {
    /// The event type with the spec's default: `message` when no `event:` field was given.
    #[must_use]
    pub fn event_type(&self) -> &[u8] {
        if self.event.is_empty() {
            b"message"
        } else {
            self.event
        }
    }
}

/// How a stream ended, from [`Framer::finish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Every event was closed by a blank line.
    Clean,
    /// The body stopped inside an event or a line; that part was not dispatched.
    Truncated {
        /// Bytes of the cut event and line that were discarded.
        pending_bytes: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Data {
    /// No `data:` field yet in this event.
    None,
    /// One `data:` line, at `start..end` of the current push.
    Borrowed(usize, usize),
    /// In `Framer::data`.
    Owned,
}

/// Incremental event-stream parser. Feed it with [`Framer::push`], end with [`Framer::finish`].
#[derive(Debug)]
pub struct Framer {
    max: usize,
    /// The unfinished last line of the previous push.
    line: Vec<u8>,
    /// Stream offset of the first byte of `line`.
    line_start: u64,
    data: Vec<u8>,
    data_state: Data,
    event: Vec<u8>,
    id: Vec<u8>,
    retry: Option<u64>,
    after_cr: bool,
    /// Bytes of a leading BOM matched so far; `None` once the start of the stream is decided.
    bom: Option<usize>,
    /// The current event passed the size cap: ignore its fields until its blank line.
    skipping: bool,
    /// The carried line passed the size cap: drop bytes until the line ends.
    skipping_line: bool,
    /// Stream bytes before the current push.
    offset: u64,
    dispatched: u64,
    dropped: u64,
}

impl Default for Framer {
    fn default() -> Self {
        Self::new(SseConfig::default())
    }
}

impl Framer {
    /// A framer with the given limits.
    #[must_use]
    pub fn new(config: SseConfig) -> Self {
        Self {
            max: config.max_event_bytes,
            line: Vec::new(),
            line_start: 0,
            data: Vec::new(),
            data_state: Data::None,
            event: Vec::new(),
            id: Vec::new(),
            retry: None,
            after_cr: false,
            bom: Some(0),
            skipping: false,
            skipping_line: false,
            offset: 0,
            dispatched: 0,
            dropped: 0,
        }
    }

    /// The last `retry:` value, in milliseconds (parsed per spec, otherwise unused here).
    #[must_use]
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// The last event id buffer.
    #[must_use]
    pub fn last_event_id(&self) -> &[u8] {
        &self.id
    }

    /// Events dispatched so far.
    #[must_use]
    pub fn events(&self) -> u64 {
        self.dispatched
    }

    /// Events dropped for size so far ([`SseError::EventTooLarge`] reports only the first of
    /// each push).
    #[must_use]
    pub fn dropped_events(&self) -> u64 {
        self.dropped
    }

    /// Bytes pushed so far.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Feed the next piece of the body, split anywhere; `on_event` runs for every event that
    /// it completes. The whole piece is always consumed. `Err` reports that an event in it was
    /// dropped for size (the first such one); framing goes on after it.
    ///
    /// # Errors
    /// [`SseError::EventTooLarge`] when an event passed [`SseConfig::max_event_bytes`].
    pub fn push<F: FnMut(Event<'_>)>(
        &mut self,
        mut input: &[u8],
        mut on_event: F,
    ) -> Result<(), SseError> {
        let mut first_err = None;
        if let Some(matched) = self.bom {
            let mut m = matched;
            while m < BOM.len() && !input.is_empty() && input[0] == BOM[m] {
                m += 1;
                input = &input[1..];
                self.offset += 1;
            }
            if m == BOM.len() {
                self.bom = None;
            } else if input.is_empty() {
                self.bom = Some(m);
                return Ok(());
            } else {
                // Not a BOM after all: the bytes taken for one are ordinary content.
                self.bom = None;
                if m > 0 {
                    self.offset -= m as u64;
                    if let Err(e) = self.push_lines(&BOM[..m], &mut on_event) {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        if let Err(e) = self.push_lines(input, &mut on_event) {
            first_err.get_or_insert(e);
        }
        first_err.map_or(Ok(()), Err)
    }

    fn push_lines<F: FnMut(Event<'_>)>(
        &mut self,
        input: &[u8],
        on_event: &mut F,
    ) -> Result<(), SseError> {
        let mut first_err = None;
        let mut pos = 0;
        if self.after_cr && !input.is_empty() {
            self.after_cr = false;
            if input[0] == b'\n' {
                pos = 1;
            }
        }
        while pos < input.len() {
            let Some(found) = memchr2(b'\n', b'\r', &input[pos..]) else {
                // Unfinished line: carry it over to the next push.
                if !self.skipping_line {
                    if self.line.is_empty() {
                        self.line_start = self.offset + pos as u64;
                    }
                    self.line.extend_from_slice(&input[pos..]);
                    if self.line.len() > self.max + LINE_SLACK {
                        self.skipping_line = true;
                        if inert_line(&self.line) {
                            self.line.clear();
                        } else {
                            let at = self.line_start;
                            self.overflow();
                            first_err.get_or_insert(self.too_large(at));
                        }
                    }
                }
                break;
            };
            let end = pos + found;
            let r = if self.skipping_line {
                self.skipping_line = false;
                Ok(())
            } else if self.line.is_empty() {
                let start = self.offset + pos as u64;
                if found <= self.max + LINE_SLACK {
                    self.on_line(&input[pos..end], Some(pos), start, input, on_event)
                } else if inert_line(&input[pos..end]) {
                    Ok(())
                } else {
                    self.overflow();
                    Err(self.too_large(start))
                }
            } else if self.line.len() + found > self.max + LINE_SLACK {
                // The held start may be too short to tell: judged with the bytes after it.
                let mut head = [0u8; 8];
                let held = self.line.len().min(head.len());
                head[..held].copy_from_slice(&self.line[..held]);
                let more = (head.len() - held).min(found);
                head[held..held + more].copy_from_slice(&input[pos..pos + more]);
                if inert_line(&head[..held + more]) {
                    self.line.clear();
                    Ok(())
                } else {
                    let at = self.line_start;
                    self.overflow();
                    Err(self.too_large(at))
                }
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&input[pos..end]);
                let r = self.on_line(&line, None, self.line_start, input, on_event);
                line.clear();
                self.line = line;
                r
            };
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
            pos = end + 1;
            if input[end] == b'\r' {
                if pos == input.len() {
                    self.after_cr = true;
                } else if input[pos] == b'\n' {
                    pos += 1;
                }
            }
        }
        // The caller's slice ends here: a borrowed data line of an open event must be kept.
        if let Data::Borrowed(start, end) = self.data_state {
            self.data.clear();
            self.data.extend_from_slice(&input[start..end]);
            self.data_state = Data::Owned;
        }
        self.offset += input.len() as u64;
        first_err.map_or(Ok(()), Err)
    }

    /// Bytes held for the current event.
    fn held(&self) -> usize {
        self.data_len() + self.line.len()
    }

    fn data_len(&self) -> usize {
        match self.data_state {
            Data::None => 0,
            Data::Borrowed(s, e) => e - s,
            Data::Owned => self.data.len(),
        }
    }

    fn overflow(&mut self) {
        self.dropped += 1;
        self.skipping = true;
        self.data_state = Data::None;
        self.data.clear();
        self.line.clear();
    }

    #[cold]
    #[inline(never)]
    fn too_large(&self, offset: u64) -> SseError {
        SseError::EventTooLarge {
            limit: self.max,
            offset,
            after: self.dispatched,
        }
    }

    /// One complete line. `at` is its start in `input` when it lies there (so data can borrow);
    /// `start` is its stream offset.
    fn on_line<F: FnMut(Event<'_>)>(
        &mut self,
        line: &[u8],
        at: Option<usize>,
        start: u64,
        input: &[u8],
        on_event: &mut F,
    ) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(input, on_event);
            return Ok(());
        }
        if self.skipping || line[0] == b':' {
            return Ok(());
        }
        let (name, value, value_at) = match memchr(b':', line) {
            Some(colon) => {
                let skip = usize::from(line.get(colon + 1) == Some(&b' '));
                (&line[..colon], &line[colon + 1 + skip..], colon + 1 + skip)
            }
            None => (line, &line[line.len()..], line.len()),
        };
        match name {
            b"data" => {
                match self.data_state {
                    Data::None => {
                        if let Some(start) = at {
                            let s = start + value_at;
                            self.data_state = Data::Borrowed(s, s + value.len());
                        } else {
                            self.data.clear();
                            self.data.extend_from_slice(value);
                            self.data_state = Data::Owned;
                        }
                    }
                    Data::Borrowed(s, e) => {
                        self.data.clear();
                        self.data.extend_from_slice(&input[s..e]);
                        self.data.push(b'\n');
                        self.data.extend_from_slice(value);
                        self.data_state = Data::Owned;
                    }
                    Data::Owned => {
                        self.data.push(b'\n');
                        self.data.extend_from_slice(value);
                    }
                }
                if self.data_len() > self.max {
                    self.overflow();
                    return Err(self.too_large(start));
                }
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            // An id containing NUL is ignored, per spec.
            b"id" if memchr(0, value).is_none() => {
                self.id.clear();
                self.id.extend_from_slice(value);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().fold(0u64, |n, d| {
                    n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                self.retry = Some(ms);
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch<F: FnMut(Event<'_>)>(&mut self, input: &[u8], on_event: &mut F) {
        let data = match self.data_state {
            Data::None => None,
            Data::Borrowed(s, e) => Some(&input[s..e]),
            Data::Owned => Some(&self.data[..]),
        };
        if let (Some(data), false) = (data, self.skipping) {
            self.dispatched += 1;
            on_event(Event {
                event: &self.event,
                data,
                id: &self.id,
                dropped_before: self.dropped,
            });
        }
        self.skipping = false;
        self.data_state = Data::None;
        self.data.clear();
        self.event.clear();
    }

    /// The body ended. An event without its closing blank line is not dispatched (per spec);
    /// the return value says whether one was cut. The framer is reset for a new stream, except
    /// for the last event id and retry value.
    pub fn finish(&mut self) -> Tail {
        let pending = self.pending();
        self.end(pending)
    }

    /// [`Framer::finish`], first offering the event the body ended inside, if it has data, to
    /// `read`: as it stands, a last line the body cut ending where the body does. `read`
    /// answers whether it took the event, which then counts as dispatched, and the body as
    /// ended clean; an event it refuses is cut, as `finish` reports it. google-genai reads
    /// such an event (the spec, and the `openai` and `anthropic` SDKs, drop it): a caller that
    /// reads a body as that SDK does takes it.
    pub fn finish_with<F: FnOnce(Event<'_>) -> bool>(&mut self, read: F) -> Tail {
        let pending = self.pending();
        if !self.line.is_empty() && !self.skipping_line {
            let line = std::mem::take(&mut self.line);
            // A line that is not the blank one never dispatches; one past the size cap drops
            // its event, which is then cut.
            let _ = self.on_line(&line, None, self.line_start, &[], &mut |_| {});
        }
        if let (Data::Owned, false) = (self.data_state, self.skipping) {
            let event = Event {
                event: &self.event,
                data: &self.data,
                id: &self.id,
                dropped_before: self.dropped,
            };
            if read(event) {
                self.dispatched += 1;
                self.line.clear();
                self.data_state = Data::None;
                self.data.clear();
                self.event.clear();
                return self.end(0);
            }
        }
        self.end(pending)
    }

    /// Bytes held for a cut event (its data and last line, and a BOM begun).
    fn pending(&self) -> usize {
        self.held() + self.bom.unwrap_or(0)
    }

    fn end(&mut self, pending: usize) -> Tail {
        let cut = pending > 0 || self.skipping || self.skipping_line || !self.event.is_empty();
        self.line.clear();
        self.data.clear();
        self.event.clear();
        self.data_state = Data::None;
        self.after_cr = false;
        self.skipping = false;
        self.skipping_line = false;
        self.bom = Some(0);
        if cut {
            Tail::Truncated {
                pending_bytes: pending,
            }
        } else {
            Tail::Clean
        }
    }
}
