//! Reasoning the provider needs back in the next request: Anthropic's extended-thinking
//! blocks and the `OpenAI` Responses API's `reasoning` items (Bedrock Converse's
//! `reasoningContent` blocks are read by `feed_chunk` only, and kept here as it gives them),
//! and with them the Responses hosted items ([`is_hosted`]), which the next request needs
//! back in their places as much: the reasoning item before one is refused without it.
//!
//! Design notes
//! - The Messages API refuses the next request of an extended-thinking turn with tool use when
//!   the assistant turn lacks its `thinking` / `redacted_thinking` blocks, in order and
//!   unchanged, so they are kept as the provider sent them: a `thinking` block's text (its
//!   start's `thinking`, then every `thinking_delta` appended) and its signature (the last
//!   `signature_delta` replaces it, as the `anthropic` SDK's accumulator does), a
//!   `redacted_thinking` block's `data` from its start.
//! - Only a block that ends (`content_block_stop`) whole is kept: a `thinking` block with a
//!   signature, a `redacted_thinking` block with data. A block cut off (the body ends before its
//!   stop, or it stops unsigned) is dropped: its signature could not be checked, and sent back
//!   it would be refused or, worse, taken as the whole of what the model thought.
//! - A block's text is held while it streams, and kept after; every byte counts toward
//!   `max_stream_bytes` as assistant text does ([`Action::HoldReasoning`]), so a stream of
//!   thinking cannot make the gateway hold more than the limit. Bytes that do not fit refuse
//!   the response whole, as text past the limit does; the block is then dropped, and so is
//!   every block that stops after. A block dropped lets its bytes go ([`Action::Release`]).
//! - The text is decoded as assistant text is: a surrogate pair split between two deltas is
//!   joined, a half left unpaired at the block's stop is U+FFFD. `feed_chunk` reads it the
//!   same way (`formats/anthropic_messages.py`), so both paths keep the same blocks.
//! - An Anthropic block of any other kind than text, thinking and `tool_use` (a server tool's
//!   call, `server_tool_use`, and its result, `web_search_tool_result`,
//!   `code_execution_tool_result`..., an `mcp_tool_use`, a `container_upload`...) ran on
//!   Anthropic's side: the next turn must send it back as it came, in its place, and nothing
//!   runs it here. It is kept with the thinking blocks, whole as JSON text, from its start's
//!   block and, for a server tool's call, the `input` its `input_json_delta`s wrote (held and
//!   counted as thinking is; only checked to be one JSON value, never against a client tool's
//!   schema). One whose input does not read, or that never stopped, is left out. A
//!   `compaction` block (context management) takes its `compaction_delta`s as the SDK's
//!   accumulator does ([`Decoder::compact`]): each sets its `content` and `encrypted_content`.

use serde_json::value::RawValue;

use super::{canonical, push_lone, unescape, Action, Decoder, Item, Lone, Str};

/// A reasoning block the provider needs back in the next request, as it sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reasoning {
    /// A Responses output item (a `reasoning` item, or a hosted item), as its
    /// `response.output_item.done` carried it (`id`, `summary`, `encrypted_content`...), or an
    /// Anthropic server block ([`Decoder::start_server_block`]), written as JSON text the way
    /// `feed_chunk` writes it (`json.dumps` with `ensure_ascii=False` and no spaces; every
    /// non-ASCII character escaped when the item holds an unpaired surrogate).
    Item {
        /// The item, as JSON text.
        json: String,
    },
    /// A Bedrock Converse `reasoningContent` block with `reasoningText`.
    ConverseText {
        /// The reasoning, as streamed.
        text: String,
        /// Its signature, when the model signs its reasoning (Anthropic's models do).
        signature: Option<String>,
    },
    /// A Bedrock Converse `reasoningContent` block with `redactedContent`: the reasoning,
    /// encrypted.
    ConverseRedacted {
        /// The encrypted reasoning, as sent.
        data: Vec<u8>,
    },
    /// A Bedrock Converse `image` block the model wrote (its `source.bytes`): not reasoning,
    /// but the next turn sends it back in its place as it does the reasoning blocks.
    ConverseImage {
        /// Its `format` (`png`, `jpeg`...), as sent.
        format: String,
        /// The image, its `bytes` deltas joined.
        data: Vec<u8>,
    },
    /// Anthropic's `thinking` block.
    Thinking {
        /// The model's thinking, as streamed.
        thinking: String,
        /// The signature that lets the API check the thinking it gets back.
        signature: String,
    },
    /// Anthropic's `redacted_thinking` block: the thinking, encrypted.
    Redacted {
        /// The encrypted thinking, as sent.
        data: String,
    },
    /// A Gemini thought: a run of `thought` parts, their text joined, as one part.
    GeminiThought {
        /// The thought, as streamed.
        text: String,
        /// Its `thoughtSignature` (base64, as sent), which Gemini wants back on its part.
        signature: Option<String>,
    },
}

impl Reasoning {
    /// The bytes this block counts toward `max_stream_bytes`.
    #[must_use]
    pub fn kept_bytes(&self) -> usize {
        match self {
            Self::Thinking {
                thinking,
                signature,
            } => thinking.len() + signature.len(),
            Self::Redacted { data } | Self::Item { json: data } => data.len(),
            Self::ConverseText { text, signature } | Self::GeminiThought { text, signature } => {
                text.len() + signature.as_ref().map_or(0, String::len)
            }
            Self::ConverseRedacted { data } => data.len(),
            Self::ConverseImage { format, data } => format.len() + data.len(),
        }
    }

    /// Whether this is a Responses hosted item ([`is_hosted`]), kept with the reasoning items
    /// for the next turn; an Anthropic server block, kept the same way, reads as one too.
    /// Reads the item's JSON: for the rare question, not the stream.
    #[must_use]
    pub fn is_hosted_item(&self) -> bool {
        let Self::Item { json } = self else {
            return false;
        };
        serde_json::from_str::<Item<'_>>(json)
            .is_ok_and(|item| item.kind.as_ref().is_some_and(|k| is_hosted(k.as_str())))
    }
}

/// A reasoning block still streaming, inside its [`super::BlockState`].
#[derive(Debug, Default)]
pub(super) struct Thought {
    redacted: bool,
    /// A server block ([`Decoder::start_server_block`]): the block as its start gave it, as
    /// JSON text; `text` then holds its input as its `input_json_delta`s wrote it.
    server: Option<Vec<u8>>,
    /// A `compaction` server block, which its `compaction_delta`s set ([`Decoder::compact`]).
    compaction: bool,
    /// The thinking (or the redacted data), decoded.
    text: Vec<u8>,
    signature: Vec<u8>,
    /// A high surrogate that ended the last delta, waiting for its other half.
    pending: Option<u16>,
    /// Bytes counted toward `max_stream_bytes` for this block.
    counted: usize,
    /// Some of its bytes did not fit: it keeps nothing (the response is refused whole).
    dead: bool,
}

impl Thought {
    /// Whether it is a server block ([`Decoder::start_server_block`]).
    pub(super) fn is_server(&self) -> bool {
        self.server.is_some()
    }
}

impl Decoder {
    /// A `thinking` (or, `redacted`, a `redacted_thinking`) block starts with `first`, its
    /// `thinking` (or `data`), and `signature` (JSON string literals): `None` when the response
    /// keeps nothing more.
    pub(super) fn start_thought<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        redacted: bool,
        first: Option<&str>,
        signature: Option<&str>,
        emit: &mut F,
    ) -> Option<Box<Thought>> {
        if !emit(Action::Held(0)) {
            return None;
        }
        let mut thought = Box::new(Thought {
            redacted,
            ..Thought::default()
        });
        if let Some(raw) = first {
            self.think(&mut thought, raw, emit);
        }
        if let Some(raw) = signature {
            self.sign(&mut thought, raw, emit);
        }
        Some(thought)
    }

    /// A server block starts (see the design notes): `raw`, its start's block, is held as JSON
    /// text; `None` when the response keeps nothing more.
    pub(super) fn start_server_block<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        raw: &str,
        compaction: bool,
        emit: &mut F,
    ) -> Option<Box<Thought>> {
        if !emit(Action::Held(0)) {
            return None;
        }
        let mut block = Vec::new();
        canonical(raw, &mut block);
        let mut thought = Box::new(Thought {
            compaction,
            ..Thought::default()
        });
        if hold(&mut thought, block.len(), emit) {
            thought.server = Some(block);
        }
        Some(thought)
    }

    /// A `compaction_delta` of the block at `index`: when it is a `compaction` block, its
    /// `content` and `encrypted_content` become the delta's (JSON text; null when the delta
    /// has none, or no string), as the `anthropic` SDK's accumulator sets them; the block is
    /// counted anew.
    pub(super) fn compact<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: i64,
        content: Option<&RawValue>,
        encrypted: Option<&RawValue>,
        emit: &mut F,
    ) {
        let Some(block) = self.blocks.get_mut(&index) else {
            return;
        };
        let Some(thought) = block.thought.as_mut().filter(|t| t.compaction) else {
            return;
        };
        let Some(old) = thought.server.take() else {
            return;
        };
        let mut value = Vec::new();
        let mut set = old.clone();
        for (name, raw) in [
            (&b"content"[..], content),
            (&b"encrypted_content"[..], encrypted),
        ] {
            match raw.map(RawValue::get).filter(|r| r.starts_with('"')) {
                Some(text) => canonical(text, &mut value),
                None => {
                    value.clear();
                    value.extend_from_slice(b"null");
                }
            }
            set = with_member(&set, name, &value);
        }
        thought.counted -= old.len();
        emit(Action::Release(old.len()));
        if hold(thought, set.len(), emit) {
            thought.server = Some(set);
        }
    }

    /// An `input_json_delta` (JSON string literal `raw`) of the block at `index`: appended to
    /// its input when it is a server block's. Apart from the `tool_use` fragments' path, which
    /// pays nothing for it.
    #[cold]
    #[inline(never)]
    pub(super) fn server_input<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        index: i64,
        raw: &str,
        emit: &mut F,
    ) {
        let Some(block) = self.blocks.get_mut(&index) else {
            return;
        };
        let Some(mut thought) = block.thought.take_if(|t| t.is_server()) else {
            return;
        };
        self.think(&mut thought, raw, emit);
        if let Some(block) = self.blocks.get_mut(&index) {
            block.thought = Some(thought);
        }
    }

    /// Appends a `thinking_delta` (JSON string literal `raw`) to the block; a block that does
    /// not fit is emptied and its bytes let go (the response is refused whole then).
    pub(super) fn think<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        thought: &mut Thought,
        raw: &str,
        emit: &mut F,
    ) {
        self.scratch.clear();
        unescape(raw, &mut self.scratch, &mut thought.pending, Lone::Replace);
        if self.scratch.is_empty() || hold(thought, self.scratch.len(), emit) {
            thought.text.extend_from_slice(&self.scratch);
        }
    }

    /// A `signature_delta` replaces the block's signature.
    pub(super) fn sign<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        thought: &mut Thought,
        raw: &str,
        emit: &mut F,
    ) {
        if thought.redacted || thought.dead {
            return;
        }
        self.scratch.clear();
        let mut pending = None;
        unescape(raw, &mut self.scratch, &mut pending, Lone::Replace);
        if let Some(unit) = pending {
            push_lone(&mut self.scratch, unit, Lone::Replace);
        }
        let old = std::mem::take(&mut thought.signature);
        if !old.is_empty() {
            thought.counted -= old.len();
            emit(Action::Release(old.len()));
        }
        if self.scratch.is_empty() || hold(thought, self.scratch.len(), emit) {
            thought.signature.clone_from(&self.scratch);
        }
    }

    /// The block stopped: kept when whole, else let go.
    pub(super) fn end_thought<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        mut thought: Box<Thought>,
        emit: &mut F,
    ) {
        self.settle_half(&mut thought, emit);
        if let Some(block) = thought.server.take() {
            self.end_server_block(&thought, &block, emit);
            return;
        }
        let whole = if thought.redacted {
            !thought.text.is_empty()
        } else {
            !thought.signature.is_empty()
        };
        // Once the response is refused, no block is kept, even one counted in full before.
        if !whole || thought.dead || !emit(Action::Held(0)) {
            drop_thought(&thought, emit);
            return;
        }
        // Decoded from validated JSON strings with lone halves replaced: always UTF-8.
        let text = String::from_utf8_lossy(&thought.text).into_owned();
        let block = if thought.redacted {
            Reasoning::Redacted { data: text }
        } else {
            Reasoning::Thinking {
                thinking: text,
                signature: String::from_utf8_lossy(&thought.signature).into_owned(),
            }
        };
        emit(Action::Reasoning(&block));
        self.thoughts_kept += 1;
    }

    /// A Gemini thought (a run of `thought` parts) ended: kept with its signature, if it came
    /// with one. Gemini has no stop event to tell a whole thought, and sends it back unsigned
    /// too; one that holds nothing is let go.
    pub(super) fn end_gemini_thought<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        mut thought: Box<Thought>,
        emit: &mut F,
    ) {
        self.settle_half(&mut thought, emit);
        let empty = thought.text.is_empty() && thought.signature.is_empty();
        if empty || thought.dead || !emit(Action::Held(0)) {
            drop_thought(&thought, emit);
            return;
        }
        // Decoded from validated JSON strings with lone halves replaced: always UTF-8.
        let block = Reasoning::GeminiThought {
            text: String::from_utf8_lossy(&thought.text).into_owned(),
            signature: (!thought.signature.is_empty())
                .then(|| String::from_utf8_lossy(&thought.signature).into_owned()),
        };
        emit(Action::Reasoning(&block));
        self.thoughts_kept += 1;
    }

    /// A call under `index` starts after the reasoning blocks kept so far: their number goes on
    /// it as metadata `reasoning_before`, so that the next turn sends them back before it.
    pub(super) fn count_reasoning_before<F: FnMut(Action<'_>) -> bool>(
        &self,
        index: i64,
        emit: &mut F,
    ) {
        if self.thoughts_kept > 0 {
            let json = self.thoughts_kept.to_string();
            emit(Action::Metadata {
                index: Some(index),
                key: "reasoning_before",
                json: &json,
            });
        }
    }

    /// A high surrogate the block's last piece ended on, which no other half followed: U+FFFD.
    fn settle_half<F: FnMut(Action<'_>) -> bool>(&mut self, thought: &mut Thought, emit: &mut F) {
        if let Some(unit) = thought.pending.take() {
            self.scratch.clear();
            push_lone(&mut self.scratch, unit, Lone::Replace);
            if hold(thought, self.scratch.len(), emit) {
                thought.text.extend_from_slice(&self.scratch);
            }
        }
    }
}

impl Decoder {
    /// A server block stopped: kept with its input, the whole block counted as kept in place
    /// of what it counted while it streamed; left out when its input is no JSON value.
    fn end_server_block<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        thought: &Thought,
        block: &[u8],
        emit: &mut F,
    ) {
        // Decoded from JSON strings with lone halves replaced: always UTF-8.
        let text = String::from_utf8_lossy(&thought.text);
        let json = if text.trim_matches([' ', '\t', '\n', '\r']).is_empty() {
            block.to_vec()
        } else {
            // `&RawValue` checks the value without recursion, however deep it nests.
            if serde_json::from_str::<&RawValue>(&text).is_err() {
                drop_thought(thought, emit);
                return;
            }
            canonical(&text, &mut self.scratch);
            with_member(block, b"input", &self.scratch)
        };
        drop_thought(thought, emit);
        if thought.dead || !emit(Action::Held(0)) || !emit(Action::HoldReasoning(json.len())) {
            return;
        }
        // Written from validated JSON with lone halves escaped: always UTF-8.
        let json = String::from_utf8(json)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        emit(Action::Reasoning(&Reasoning::Item { json }));
        self.thoughts_kept += 1;
    }
}

/// `object`, the JSON text of an object as [`canonical`] writes it, with its member `name`
/// set to `value` (JSON text): in its place, or last when it has none.
fn with_member(object: &[u8], name: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(object.len() + name.len() + value.len() + 4);
    if let Some((start, end)) = member_value(object, name) {
        out.extend_from_slice(&object[..start]);
        out.extend_from_slice(value);
        out.extend_from_slice(&object[end..]);
        return out;
    }
    let Some(body) = object.strip_suffix(b"}") else {
        return object.to_vec();
    };
    out.extend_from_slice(body);
    if body != b"{" {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(name);
    out.extend_from_slice(b"\":");
    out.extend_from_slice(value);
    out.push(b'}');
    out
}

/// Where the value of the first top-level member `name` of `object` (compact JSON text of an
/// object, names written as [`canonical`] writes them) starts and ends.
fn member_value(object: &[u8], name: &[u8]) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut in_string = false;
    // The next string at depth 1 is a member's name; the last one read was `name`.
    let mut naming = true;
    let mut named = false;
    let mut string_start = 0;
    let mut found = None;
    let mut i = 0;
    while let Some(&b) = object.get(i) {
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => {
                    in_string = false;
                    if depth == 1 && naming {
                        named = object.get(string_start..i) == Some(name);
                    }
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                string_start = i + 1;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' | b',' if depth == 1 && found.is_some() => {
                return found.map(|start| (start, i));
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => naming = true,
            b':' if depth == 1 => {
                naming = false;
                if named {
                    found = Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// What came after a Responses `reasoning` item in the output: the API refuses an item sent
/// back without the item that followed it, so only one followed by an item the next turn
/// sends (a call, the assistant text, a hosted item) is kept.
#[derive(Debug, Clone, Copy)]
pub(super) enum Follower {
    /// A `message` item: the assistant text, which the next turn sends.
    Message,
    /// A call, under this wire key: the call is told the item's `id` (metadata
    /// `reasoning_id`), so that the next turn sends the item right before it.
    Call(i64),
    /// A hosted item that finished, kept right after it (see [`is_hosted`]).
    Hosted,
    /// Another reasoning item, or the response's end.
    Other,
}

/// Whether a Responses output item of this `type` is a hosted item: one the next turn sends
/// back as the output had it, being none of the items the assembler reads otherwise (a call,
/// the assistant text, a reasoning item). It is kept only with an `id`, which the API needs. A hosted tool's call (`web_search_call`,
/// `file_search_call`, `code_interpreter_call`, `image_generation_call`, `mcp_call`,
/// `mcp_list_tools`...) and an item the application answers itself (`computer_call`,
/// `local_shell_call`, `mcp_approval_request`...): every output item type is an input item
/// type, and a stateless request (`store=False`) must carry them, with the reasoning item
/// before each.
pub(super) fn is_hosted(kind: &str) -> bool {
    !matches!(
        kind,
        "function_call" | "custom_tool_call" | "message" | "reasoning"
    )
}

impl Decoder {
    /// A Responses `reasoning` item, or with `hosted` a hosted item ([`is_hosted`]), finished
    /// (`output_item.done`, the whole item as the next request sends it back, or `summary`:
    /// read from the finished response's `output`): kept once per `id`, as `feed_chunk` keeps
    /// it, its bytes counted toward `max_stream_bytes`; not kept once the response is refused.
    /// A reasoning item waits for its follower ([`Follower`]); a hosted item is one, and the
    /// calls after it are told how many came before them (metadata `hosted_before`). An item
    /// of the finished response that came before the last `before` items kept goes before
    /// them ([`Action::EarlierReasoning`]).
    pub(super) fn keep_item<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        raw: &RawValue,
        id: Option<&str>,
        summary: bool,
        hosted: bool,
        before: usize,
        emit: &mut F,
    ) {
        // A repeated `output_item.done` of one item (a stream that numbers no events, so a
        // repeat is not seen as one) is the item kept already.
        if let Some(id) = id.filter(|id| self.was_kept(id)) {
            if !hosted
                && self
                    .awaiting
                    .as_ref()
                    .is_some_and(|a| a.as_deref() != Some(id))
            {
                self.follow(Follower::Other, emit);
            }
            return;
        }
        let streamed = if hosted {
            &mut self.hosted_streamed
        } else {
            &mut self.reasoning_streamed
        };
        if id.is_none() && summary && *streamed {
            // An item without `id` cannot be told from one its `output_item.done` brought.
            return;
        }
        *streamed |= !summary;
        // A reasoning item right after another has no follower the next turn could send.
        let follower = if hosted {
            Follower::Hosted
        } else {
            Follower::Other
        };
        self.follow(follower, emit);
        let mut text = Vec::new();
        canonical(raw.get(), &mut text);
        if !emit(Action::HoldReasoning(text.len())) {
            return;
        }
        if let Some(id) = id {
            self.reasoning_ids.push((id.into(), true));
        }
        // Written from validated JSON with lone halves escaped: always UTF-8.
        let json = String::from_utf8(text)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let block = Reasoning::Item { json };
        let action = if before == 0 {
            Action::Reasoning(&block)
        } else {
            Action::EarlierReasoning {
                block: &block,
                before,
            }
        };
        if emit(action) {
            if hosted {
                self.hosted_kept += 1;
            } else {
                self.awaiting = Some(id.map(Box::from));
            }
        }
    }

    /// The item after a kept `reasoning` item came: a call is told the item's `id`; the item
    /// is let go when what follows it is not sent back ([`Action::DropReasoning`]).
    pub(super) fn follow<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        follower: Follower,
        emit: &mut F,
    ) {
        let Some(id) = self.awaiting.take() else {
            return;
        };
        match follower {
            Follower::Message | Follower::Hosted => {}
            Follower::Call(key) => {
                if let Some(id) = id {
                    let json = super::json_string(&id);
                    emit(Action::Metadata {
                        index: Some(key),
                        key: "reasoning_id",
                        json: &json,
                    });
                }
            }
            Follower::Other => {
                if let Some(id) = id {
                    // Let go: it is no longer among the items kept, though kept once.
                    let kept = self.reasoning_ids.iter_mut().rev().find(|(k, _)| *k == id);
                    if let Some((_, present)) = kept {
                        *present = false;
                    }
                }
                emit(Action::DropReasoning);
            }
        }
    }

    /// Whether the Responses item with this `id` was kept in this response (maybe let go
    /// since): it is not kept again.
    pub(super) fn was_kept(&self, id: &str) -> bool {
        self.reasoning_ids.iter().any(|(kept, _)| &**kept == id)
    }

    /// What follows a kept `reasoning` item, when it is no call (calls are followed up as
    /// they open) and no finished hosted item (kept by `keep_item`); `None`: an item that does
    /// not read.
    pub(super) fn follow_item<F: FnMut(Action<'_>) -> bool>(
        &mut self,
        item: Option<&Item<'_>>,
        emit: &mut F,
    ) {
        let Some(waiting) = &self.awaiting else {
            return;
        };
        let kind = item.and_then(|i| i.kind.as_ref()).map(Str::as_str);
        let id = item.and_then(|i| i.id.as_ref()).map(Str::as_str);
        match kind {
            // The item's own `added` again (a replay): it follows nothing.
            Some("reasoning") if id.is_some_and(|id| waiting.as_deref() == Some(id)) => {}
            Some("message") => self.follow(Follower::Message, emit),
            // A hosted item follows it once it finishes, and is kept then (`keep_item`); one
            // without `id` is not kept.
            Some(kind) if is_hosted(kind) && id.is_some() => {}
            _ => self.follow(Follower::Other, emit),
        }
    }
}

/// Counts `n` more bytes of `thought`; false when they do not fit, when the block is dropped
/// (its bytes let go) and keeps nothing more.
fn hold<F: FnMut(Action<'_>) -> bool>(thought: &mut Thought, n: usize, emit: &mut F) -> bool {
    if thought.dead {
        return false;
    }
    if emit(Action::HoldReasoning(n)) {
        thought.counted += n;
        return true;
    }
    drop_thought(thought, emit);
    *thought = Thought {
        dead: true,
        ..Thought::default()
    };
    false
}

/// Lets go of what a block that will not be kept counted.
pub(super) fn drop_thought<F: FnMut(Action<'_>) -> bool>(thought: &Thought, emit: &mut F) {
    if thought.counted > 0 {
        emit(Action::Release(thought.counted));
    }
}

#[cfg(test)]
mod tests {
    use super::{member_value, with_member, Reasoning};
    use crate::envelope::tests::Budget;
    use crate::envelope::{Action, Decoder};

    fn start(index: usize, block: &str) -> String {
        format!(r#"{{"type":"content_block_start","index":{index},"content_block":{block}}}"#)
    }

    fn delta(index: usize, delta: &str) -> String {
        format!(r#"{{"type":"content_block_delta","index":{index},"delta":{delta}}}"#)
    }

    fn stop(index: usize) -> String {
        format!(r#"{{"type":"content_block_stop","index":{index}}}"#)
    }

    fn thinking(index: usize, pieces: &[&str], signature: Option<&str>) -> Vec<String> {
        let mut events = vec![start(
            index,
            r#"{"type":"thinking","thinking":"","signature":""}"#,
        )];
        for piece in pieces {
            events.push(delta(
                index,
                &format!(r#"{{"type":"thinking_delta","thinking":"{piece}"}}"#),
            ));
        }
        if let Some(signature) = signature {
            events.push(delta(
                index,
                &format!(r#"{{"type":"signature_delta","signature":"{signature}"}}"#),
            ));
        }
        events.push(stop(index));
        events
    }

    /// Decodes `events`, answering as an assembler with a `limit`-byte stream budget; returns
    /// the blocks kept and the budget.
    fn kept(events: &[String], limit: usize) -> (Vec<Reasoning>, Budget) {
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(limit);
        let mut blocks = Vec::new();
        for event in events {
            decoder
                .decode(b"", event.as_bytes(), &mut |action| {
                    if let Action::Reasoning(block) = action {
                        blocks.push(block.clone());
                    }
                    budget.answer(action)
                })
                .expect("event");
        }
        (blocks, budget)
    }

    fn thought(thinking: &str, signature: &str) -> Reasoning {
        Reasoning::Thinking {
            thinking: thinking.to_owned(),
            signature: signature.to_owned(),
        }
    }

    #[test]
    fn signed_and_redacted_blocks_are_kept_in_block_order() {
        let mut events = thinking(0, &["Let me ", "think."], Some("c2ln"));
        events.push(start(
            1,
            r#"{"type":"redacted_thinking","data":"RW5jcnlwdGVk"}"#,
        ));
        events.push(stop(1));
        events.push(start(
            2,
            r#"{"type":"tool_use","id":"t","name":"f","input":{}}"#,
        ));
        events.push(delta(
            2,
            r#"{"type":"input_json_delta","partial_json":"{\"a\":1}"}"#,
        ));
        events.push(stop(2));
        events.extend(thinking(3, &["Next."], Some("c2")));
        let (blocks, budget) = kept(&events, 1 << 20);
        assert_eq!(
            blocks,
            [
                thought("Let me think.", "c2ln"),
                Reasoning::Redacted {
                    data: "RW5jcnlwdGVk".to_owned()
                },
                thought("Next.", "c2"),
            ]
        );
        // The blocks stay counted, with the call's arguments.
        assert_eq!(budget.counted, 13 + 4 + 12 + 5 + 2 + 7);
    }

    #[test]
    fn the_last_signature_counts_and_a_split_pair_is_joined() {
        let mut events = thinking(0, &["a\\ud83d", "\\ude00b", "\\ud83d"], Some("x"));
        events.insert(
            events.len() - 1,
            delta(0, r#"{"type":"signature_delta","signature":"sig"}"#),
        );
        let (blocks, budget) = kept(&events, 1 << 20);
        // The pair split between two deltas is one character; a half left unpaired is U+FFFD.
        assert_eq!(blocks, [thought("a\u{1F600}b\u{FFFD}", "sig")]);
        assert_eq!(budget.counted, "a\u{1F600}b\u{FFFD}".len() + 3);
    }

    #[test]
    fn blocks_cut_off_or_unsigned_are_let_go() {
        let mut events = thinking(0, &["unsigned"], None);
        events.extend(thinking(1, &["cut"], Some("s")));
        events.pop();
        let (blocks, budget) = kept(&events, 1 << 20);
        assert_eq!(blocks, []);
        // The unsigned block gave its bytes back; the one cut off still holds its own.
        assert_eq!(budget.counted, 4);
        let redacted_empty = [
            start(0, r#"{"type":"redacted_thinking","data":""}"#),
            stop(0),
        ];
        assert_eq!(kept(&redacted_empty, 1 << 20).0, []);
    }

    #[test]
    fn a_block_restarted_at_its_index_gives_its_bytes_back() {
        let mut events = thinking(0, &["first"], Some("s"));
        events.pop();
        events.extend(thinking(0, &["again"], Some("s")));
        let (blocks, budget) = kept(&events, 1 << 20);
        assert_eq!(blocks, [thought("again", "s")]);
        assert_eq!(budget.counted, 6);
    }

    #[test]
    fn thinking_past_the_stream_limit_is_not_kept() {
        let mut events = thinking(0, &["fits"], Some("s"));
        events.extend(thinking(1, &["0123456789", "0123456789"], Some("s")));
        events.extend(thinking(2, &["x"], Some("s")));
        let (blocks, budget) = kept(&events, 20);
        // The first block ended before the limit; the second crossed it and keeps nothing,
        // its bytes given back; nothing after is kept.
        assert_eq!(blocks, [thought("fits", "s")]);
        assert!(budget.refused);
        assert_eq!(budget.counted, 5);
    }

    #[test]
    fn a_block_that_stops_after_the_response_is_refused_is_not_kept() {
        // Counted in full before a call's arguments crossed the limit, it stops after.
        let mut events = thinking(0, &["held"], Some("s"));
        let stopped = events.pop().expect("stop");
        events.push(start(1, r#"{"type":"tool_use","id":"t","name":"f"}"#));
        events.push(delta(
            1,
            r#"{"type":"input_json_delta","partial_json":"{\"a\":\"0123456789\"}"}"#,
        ));
        events.push(stopped);
        let (blocks, budget) = kept(&events, 12);
        assert!(budget.refused);
        assert_eq!(blocks, []);
    }

    fn item_done(index: usize, item: &str) -> String {
        format!(r#"{{"type":"response.output_item.done","output_index":{index},"item":{item}}}"#)
    }

    fn item(json: &str) -> Reasoning {
        Reasoning::Item {
            json: json.to_owned(),
        }
    }

    #[test]
    fn responses_reasoning_items_are_kept_whole_once_each_in_output_order() {
        let first = r#"{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Think \u00e9\n"}], "encrypted_content": "gAAA"}"#;
        let second = r#"{"type":"reasoning","id":"rs_2","summary":[]}"#;
        let events = [
            r#"{"type":"response.created","response":{}}"#.to_owned(),
            item_done(0, first),
            item_done(
                1,
                r#"{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{}"}"#,
            ),
            // A repeat of a finished item, in a stream that numbers no events.
            item_done(0, first),
            item_done(2, second),
        ];
        let (blocks, budget) = kept(&events, 1 << 20);
        // Written as `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` writes it.
        let written = r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Think é\n"}],"encrypted_content":"gAAA"}"#;
        assert_eq!(blocks, [item(written), item(second)]);
        assert_eq!(budget.counted, written.len() + second.len() + 2);
    }

    #[test]
    fn hosted_items_are_kept_in_output_order_and_keep_the_reasoning_before_them() {
        let reasoning = |id: &str| format!(r#"{{"type":"reasoning","id":"{id}","summary":[]}}"#);
        let search = r#"{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}"#;
        let code = r#"{"type":"code_interpreter_call","id":"ci_1","status":"completed","code":"1","container_id":"c","outputs":null}"#;
        let call = |index: usize, id: &str| {
            format!(
                r#"{{"type":"response.output_item.added","output_index":{index},"item":{{"type":"function_call","id":"fc_{id}","call_id":"{id}","name":"f","arguments":""}}}}"#
            )
        };
        let added = r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"web_search_call","id":"ws_1","status":"in_progress"}}"#;
        let events = [
            item_done(0, &reasoning("rs_1")),
            // Its `added` does not let the reasoning item before it go: its `done` follows it.
            added.to_owned(),
            item_done(1, search),
            item_done(2, &reasoning("rs_2")),
            call(3, "c1"),
            item_done(4, code),
            // Sent again (a stream that numbers no events): kept once.
            item_done(4, code),
            call(5, "c2"),
            item_done(6, &reasoning("rs_3")),
        ];
        let mut decoder = Decoder::new();
        let mut budget = Budget::new(1 << 20);
        let (mut blocks, mut told) = (Vec::new(), Vec::new());
        for event in &events {
            decoder
                .decode(b"", event.as_bytes(), &mut |action| {
                    match &action {
                        Action::Reasoning(block) => blocks.push((*block).clone()),
                        Action::DropReasoning => drop(blocks.pop()),
                        Action::Metadata { index, key, json } if *key != "item_id" => {
                            told.push((*index, (*key).to_owned(), (*json).to_owned()));
                        }
                        _ => {}
                    }
                    budget.answer(action)
                })
                .expect("event");
        }
        decoder
            .decode(
                b"",
                br#"{"type":"response.completed","response":{}}"#,
                &mut |a| {
                    if matches!(a, Action::DropReasoning) {
                        blocks.pop();
                    }
                    budget.answer(a)
                },
            )
            .expect("event");
        // The last reasoning item had no follower; the hosted items are none of the calls.
        let rs_2 = reasoning("rs_2");
        assert_eq!(
            blocks,
            [
                item(&reasoning("rs_1")),
                item(search),
                item(&rs_2),
                item(code)
            ]
        );
        assert_eq!(
            told,
            [
                (Some(3), "reasoning_id".to_owned(), r#""rs_2""#.to_owned()),
                (Some(3), "hosted_before".to_owned(), "1".to_owned()),
                (Some(5), "hosted_before".to_owned(), "2".to_owned()),
            ]
        );
    }

    #[test]
    fn a_responses_item_past_the_stream_limit_is_not_kept() {
        let small = r#"{"type":"reasoning","id":"rs_1","summary":[]}"#;
        let big = format!(
            r#"{{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"{}"}}"#,
            "x".repeat(100)
        );
        let events = [item_done(0, small), item_done(1, &big), item_done(2, small)];
        let (blocks, budget) = kept(&events, 100);
        assert_eq!(blocks, [item(small)]);
        assert!(budget.refused);
        assert_eq!(budget.counted, small.len());
    }

    fn server(json: &str) -> Reasoning {
        Reasoning::Item {
            json: json.to_owned(),
        }
    }

    #[test]
    fn a_server_block_is_kept_with_its_input_and_counted_as_kept() {
        let mut events = vec![start(
            0,
            r#"{"type":"server_tool_use","id":"s1","name":"web_search","input":{}}"#,
        )];
        for piece in ["", r#"{\"query\": "#, r#"\"x\"}"#] {
            events.push(delta(
                0,
                &format!(r#"{{"type":"input_json_delta","partial_json":"{piece}"}}"#),
            ));
        }
        // A thinking delta on it is none of its own.
        events.push(delta(0, r#"{"type":"thinking_delta","thinking":"no"}"#));
        events.push(stop(0));
        events.push(start(
            1,
            r#"{"type":"web_search_tool_result","tool_use_id":"s1","content":[]}"#,
        ));
        events.push(stop(1));
        let (blocks, budget) = kept(&events, 1 << 20);
        let search =
            r#"{"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":"x"}}"#;
        let result = r#"{"type":"web_search_tool_result","tool_use_id":"s1","content":[]}"#;
        assert_eq!(blocks, [server(search), server(result)]);
        assert_eq!(budget.counted, search.len() + result.len());
    }

    #[test]
    fn a_server_block_whose_input_does_not_read_gives_its_bytes_back() {
        let events = [
            start(0, r#"{"type":"server_tool_use","id":"s1","input":{}}"#),
            delta(
                0,
                r#"{"type":"input_json_delta","partial_json":"{\"q\": "}"#,
            ),
            stop(0),
        ];
        let (blocks, budget) = kept(&events, 1 << 20);
        assert_eq!(blocks, []);
        assert_eq!(budget.counted, 0);
    }

    #[test]
    fn a_compaction_block_takes_its_deltas_as_the_sdk_does() {
        let compaction = |content: &str| {
            delta(
                0,
                &format!(r#"{{"type":"compaction_delta","content":{content}}}"#),
            )
        };
        let events = [
            start(0, r#"{"type":"compaction","content":null,"signature":"s"}"#),
            delta(
                0,
                r#"{"type":"compaction_delta","content":"a","encrypted_content":"e"}"#,
            ),
            // Each delta sets both members; one it lacks (or no string) becomes null.
            compaction(r#""Sum é""#),
            // None of another block's.
            delta(1, r#"{"type":"compaction_delta","content":"x"}"#),
            stop(0),
            start(1, r#"{"type":"web_search_tool_result","content":[]}"#),
            delta(1, r#"{"type":"compaction_delta","content":"x"}"#),
            stop(1),
        ];
        let (blocks, budget) = kept(&events, 1 << 20);
        let summary =
            r#"{"type":"compaction","content":"Sum é","signature":"s","encrypted_content":null}"#;
        let result = r#"{"type":"web_search_tool_result","content":[]}"#;
        assert_eq!(blocks, [server(summary), server(result)]);
        assert_eq!(budget.counted, summary.len() + result.len());
    }

    #[test]
    fn a_member_is_set_in_its_place_or_last() {
        let set = |object: &str| {
            String::from_utf8(with_member(object.as_bytes(), b"input", b"[1]")).expect("utf-8")
        };
        assert_eq!(
            set(r#"{"input":{"a":{"input":2}},"n":"input"}"#),
            r#"{"input":[1],"n":"input"}"#
        );
        assert_eq!(
            set(r#"{"x":"input","y":["input",{"input":1}],"input":"a\"b"}"#),
            r#"{"x":"input","y":["input",{"input":1}],"input":[1]}"#
        );
        assert_eq!(set(r#"{"x":1}"#), r#"{"x":1,"input":[1]}"#);
        assert_eq!(set("{}"), r#"{"input":[1]}"#);
        assert_eq!(member_value(br#"{"inputs":1}"#, b"input"), None);
    }
}
