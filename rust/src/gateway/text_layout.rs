//! Where each block of assistant text began among a response's tool calls and reasoning
//! blocks (Anthropic and Bedrock text blocks, Responses `message` items among the reasoning and
//! hosted items, runs of Gemini text parts), so that the next turn sends the text back in its
//! places: the assistant text itself is kept as one string, which says neither where a text
//! block came after a call nor where one block ended and the next began.
//!
//! A mark is taken once per text block, never per delta; the places go on the calls as
//! metadata only at the end, and only when the text was not one block right before the first
//! call, where the turn puts it anyway. A turn with no call keeps them itself
//! ([`TextLayout::turn_places`]). What the provider wants back on a text block goes with
//! its place: a Gemini thought signature on a text part, the citations of an Anthropic or
//! Bedrock text block. One writer then serves a turn with calls and one without.

use std::fmt::Write;

use crate::assembler::Assembler;
use crate::envelope::Reasoning;

/// The most text blocks whose places are kept: past it, the places are let go (the turn then
/// sends the text as one block), so that a stream of empty blocks cannot grow the list.
const MAX_BLOCKS: usize = 1024;

/// One text block's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    /// Characters of assistant text kept before it.
    at: usize,
    /// Reasoning blocks kept before it.
    reasoning: usize,
    /// Calls started before it.
    calls: usize,
    /// Its Gemini thought signature: where in [`TextLayout::signatures`].
    signed: Option<usize>,
    /// Its citations (Anthropic, Bedrock): where in [`TextLayout::citations`].
    cited: Option<usize>,
}

/// The text blocks' places in one response.
#[derive(Debug, Default)]
pub(super) struct TextLayout {
    blocks: Vec<Block>,
    /// The thought signatures Gemini put on text parts, as JSON strings, each on its block.
    signatures: Vec<String>,
    /// The citations of text blocks, each block's as the members of a JSON list (objects
    /// joined by commas), on its block.
    citations: Vec<String>,
    /// Too many blocks made the places unknown.
    lost: bool,
    /// While a response replayed from its start (a reconnect) sends again the blocks kept:
    /// how many it has begun again. Its text and calls are kept once, so the blocks keep their
    /// places, each matched by its order; marks past them are new blocks.
    replayed: Option<usize>,
    /// Of the raw path's text: the bytes whose characters are counted, and their count.
    counted_bytes: usize,
    counted_chars: usize,
}

impl TextLayout {
    /// A text block starts after `at` characters of text, `reasoning` reasoning blocks and
    /// `calls` calls. A block that starts where the last one did replaces it: the last one
    /// held no text, and has no place to keep, unless it carries a signature (a Gemini
    /// signature-only part), which goes back on its own part.
    pub(super) fn mark(&mut self, at: usize, reasoning: usize, calls: usize) {
        if self.lost {
            return;
        }
        if let Some(again) = self.replayed {
            if again < self.blocks.len() {
                self.replayed = Some(again + 1);
                return;
            }
            self.replayed = None;
        }
        let mut block = Block {
            at,
            reasoning,
            calls,
            signed: None,
            cited: None,
        };
        // A signed block stays (a Gemini signature-only part goes back on its own part); an
        // unsigned one held no text, and its citations go on with the block that replaces it.
        let empty = |last: &&mut Block| last.at == at && last.signed.is_none();
        if let Some(last) = self.blocks.last_mut().filter(empty) {
            block.cited = last.cited;
            *last = block;
        } else if self.blocks.len() == MAX_BLOCKS {
            self.lose();
        } else {
            self.blocks.push(block);
        }
    }

    /// The block begun last carries the thought signature `json` (a JSON string), which the
    /// next turn sends back on its part; a later one replaces it.
    pub(super) fn sign(&mut self, json: &str) {
        let Some(last) = self.open().and_then(|i| self.blocks.get_mut(i)) else {
            return;
        };
        match last.signed.and_then(|i| self.signatures.get_mut(i)) {
            Some(held) => json.clone_into(held),
            None => {
                last.signed = Some(self.signatures.len());
                self.signatures.push(json.to_owned());
            }
        }
    }

    /// Whether a citation would be kept ([`TextLayout::cite`]): a text block started, and the
    /// places are known, else the next turn could not say which block it is for.
    pub(super) fn citable(&self) -> bool {
        self.open().is_some()
    }

    /// Where the block begun last is: the last one, or during a replay the one it began
    /// again last; `None` when none was (or the places were let go).
    fn open(&self) -> Option<usize> {
        match self.replayed {
            _ if self.lost => None,
            Some(again) => again.checked_sub(1),
            None => self.blocks.len().checked_sub(1),
        }
    }

    /// The block begun last carries one more citation, `json` (the JSON text of an object),
    /// after those it has; nothing when it is not [`TextLayout::citable`].
    pub(super) fn cite(&mut self, json: &str) {
        let Some(last) = self.open().and_then(|i| self.blocks.get_mut(i)) else {
            return;
        };
        match last.cited.and_then(|i| self.citations.get_mut(i)) {
            Some(held) => {
                held.push(',');
                held.push_str(json);
            }
            None => {
                last.cited = Some(self.citations.len());
                self.citations.push(json.to_owned());
            }
        }
    }

    /// [`TextLayout::mark`] at the end of `text`, the raw path's UTF-8 text: its characters
    /// are counted once, from where the last mark counted them.
    pub(super) fn mark_end_of(&mut self, text: &[u8], reasoning: usize, calls: usize) {
        if self.lost {
            return;
        }
        let fresh = text.get(self.counted_bytes..).unwrap_or_else(|| {
            // The text is shorter than it was (it never is today): count it anew.
            self.counted_chars = 0;
            text
        });
        self.counted_chars += chars(fresh);
        self.counted_bytes = text.len();
        self.mark(self.counted_chars, reasoning, calls);
    }

    /// The response starts again (a replay after a reconnect): it sends again the blocks kept
    /// so far, which keep their places (see [`TextLayout::replayed`]), and their citations,
    /// which are let go here to be kept once (the caller gives their bytes back). Nothing
    /// changes when nothing was kept yet.
    pub(super) fn restart(&mut self, calls: usize) {
        if self.lost || (self.blocks.is_empty() && calls == 0) {
            return;
        }
        self.replayed = Some(0);
        self.citations = Vec::new();
        for block in &mut self.blocks {
            block.cited = None;
        }
    }

    fn lose(&mut self) {
        self.lost = true;
        self.blocks = Vec::new();
        self.signatures = Vec::new();
        self.citations = Vec::new();
    }

    /// Writes the places on the calls as metadata: on each call, `text_before`, the blocks
    /// between the call before it and itself; on the last call, `text_after`, the blocks after
    /// it; each block as `[characters of text before it, reasoning blocks before it]`, then
    /// what goes back on it: a Gemini text part's thought signature (a JSON string, see
    /// [`TextLayout::sign`]), a cited block's citations (a JSON list, see
    /// [`TextLayout::cite`]). Nothing
    /// when the text is one block right before the first call, after the reasoning blocks
    /// that call follows (see [`TextLayout::is_plain`]): the turn sends it there anyway.
    /// `kept`: the reasoning blocks kept, in output order.
    pub(super) fn write(&self, assembler: &mut Assembler, kept: &[Reasoning]) {
        let calls = assembler.len();
        if self.lost || calls == 0 || self.is_plain(assembler, kept) {
            return;
        }
        let mut json = String::new();
        let mut rest = self.blocks.as_slice();
        for ordinal in 0..calls {
            let last = ordinal + 1 == calls;
            let before = rest.iter().take_while(|b| b.calls <= ordinal).count();
            let (mine, after) = rest.split_at(before);
            rest = after;
            if !mine.is_empty() {
                self.write_blocks(&mut json, mine);
                // Fails only after `finish`, which the caller has not reached.
                let _ = assembler.set_metadata(ordinal, "text_before", &json);
            }
            if last && !rest.is_empty() {
                self.write_blocks(&mut json, rest);
                let _ = assembler.set_metadata(ordinal, "text_after", &json);
            }
        }
    }

    /// The places of a turn that has no call to write them on (a Responses output of messages
    /// and reasoning items, an Anthropic `pause_turn` after a server tool, a Gemini answer of
    /// text parts): the blocks as [`TextLayout::write`] writes them, `[[at, reasoning], ...]`.
    /// `None` when there are calls (they carry the places), no block, or the places are lost.
    pub(super) fn turn_places(&self, calls: usize) -> Option<String> {
        if self.lost || calls > 0 || self.blocks.is_empty() {
            return None;
        }
        let mut json = String::new();
        self.write_blocks(&mut json, &self.blocks);
        Some(json)
    }

    /// The text is at most one block, at the start, right before the first call and after
    /// the reasoning blocks before that call (metadata `reasoning_before`). A Responses
    /// message goes there after the hosted items before the first call (metadata
    /// `hosted_before`) and before the reasoning item that call names: it is in its place when
    /// no hosted item came between it and that call. An Anthropic server block before the
    /// text reads as a hosted item here, with no `hosted_before` to match: its places are
    /// always written, which is exact.
    fn is_plain(&self, assembler: &Assembler, kept: &[Reasoning]) -> bool {
        let [only] = self.blocks.as_slice() else {
            return self.blocks.is_empty();
        };
        if only.at != 0 || only.calls != 0 || only.signed.is_some() || only.cited.is_some() {
            return false;
        }
        let count = |key| {
            assembler
                .metadata(0, key)
                .and_then(|n| n.parse::<usize>().ok())
        };
        let before = kept.get(..only.reasoning).unwrap_or(kept);
        let hosted = count("hosted_before");
        let kept_whole = |b: &Reasoning| matches!(b, Reasoning::Item { .. });
        if hosted.is_some() || before.iter().any(kept_whole) {
            let hosted_before = before.iter().filter(|b| b.is_hosted_item()).count();
            hosted_before == hosted.unwrap_or(0)
        } else {
            only.reasoning == count("reasoning_before").unwrap_or(0)
        }
    }

    /// `blocks` as a JSON list of `[at, reasoning]` pairs, into `json` (cleared first); a
    /// signed block's with its signature after them, a cited one's with its citations' list.
    fn write_blocks(&self, json: &mut String, blocks: &[Block]) {
        json.clear();
        json.push('[');
        for (i, block) in blocks.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            // Writing into a `String` cannot fail.
            let _ = write!(json, "[{},{}", block.at, block.reasoning);
            if let Some(signature) = block.signed.and_then(|s| self.signatures.get(s)) {
                json.push(',');
                json.push_str(signature);
            }
            if let Some(cited) = block.cited.and_then(|c| self.citations.get(c)) {
                json.push_str(",[");
                json.push_str(cited);
                json.push(']');
            }
            json.push(']');
        }
        json.push(']');
    }
}

/// The characters of valid UTF-8 `text`: its bytes that do not continue a character.
fn chars(text: &[u8]) -> usize {
    text.iter().filter(|&&b| (b as i8) >= -0x40).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembler::{AssemblerConfig, Delta};

    fn with_calls(n: usize) -> Assembler {
        let mut asm = Assembler::new(AssemblerConfig::default()).expect("default config");
        for i in 0..n {
            let index = i64::try_from(i).expect("small");
            asm.feed(&Delta {
                index: Some(index),
                name: Some("f"),
                start: true,
                ..Delta::default()
            })
            .expect("open");
        }
        asm
    }

    fn written(layout: &TextLayout, calls: usize) -> Vec<Vec<(String, String)>> {
        let mut asm = with_calls(calls);
        layout.write(&mut asm, &[]);
        (0..calls)
            .map(|o| {
                ["text_before", "text_after"]
                    .iter()
                    .filter_map(|k| asm.metadata(o, k).map(|v| ((*k).to_owned(), v.to_owned())))
                    .collect()
            })
            .collect()
    }

    fn pair(key: &str, json: &str) -> (String, String) {
        (key.to_owned(), json.to_owned())
    }

    #[test]
    fn one_block_before_the_first_call_is_written_nowhere() {
        let mut layout = TextLayout::default();
        layout.mark(0, 0, 0);
        assert_eq!(written(&layout, 2), vec![vec![], vec![]]);
        // Nor is text without calls, or no text.
        assert_eq!(written(&layout, 0), Vec::<Vec<_>>::new());
        assert_eq!(written(&TextLayout::default(), 1), vec![vec![]]);
    }

    #[test]
    fn a_turn_without_calls_keeps_its_places_itself() {
        let mut layout = TextLayout::default();
        assert_eq!(layout.turn_places(0), None);
        layout.mark(0, 1, 0);
        layout.mark(7, 2, 0);
        assert_eq!(layout.turn_places(0).as_deref(), Some("[[0,1],[7,2]]"));
        // With calls, the calls carry them.
        assert_eq!(layout.turn_places(1), None);
        // A replay keeps them.
        layout.restart(0);
        assert_eq!(layout.turn_places(0).as_deref(), Some("[[0,1],[7,2]]"));
    }

    #[test]
    fn text_after_a_call_goes_on_the_calls_around_it() {
        let mut layout = TextLayout::default();
        layout.mark(0, 0, 0);
        layout.mark(5, 0, 1);
        layout.mark(9, 1, 2);
        assert_eq!(
            written(&layout, 2),
            vec![
                vec![pair("text_before", "[[0,0]]")],
                vec![
                    pair("text_before", "[[5,0]]"),
                    pair("text_after", "[[9,1]]")
                ],
            ]
        );
    }

    #[test]
    fn blocks_in_a_row_keep_their_own_starts() {
        let mut layout = TextLayout::default();
        layout.mark(0, 0, 0);
        layout.mark(3, 1, 0);
        assert_eq!(
            written(&layout, 1),
            vec![vec![pair("text_before", "[[0,0],[3,1]]")]]
        );
        // An empty block gives way to the next one.
        let mut layout = TextLayout::default();
        layout.mark(0, 0, 0);
        layout.mark(0, 1, 0);
        assert_eq!(
            written(&layout, 1),
            vec![vec![pair("text_before", "[[0,1]]")]]
        );
    }

    #[test]
    fn too_many_blocks_lose_the_places() {
        let mut many = TextLayout::default();
        for at in 0..=MAX_BLOCKS {
            many.mark(at, 0, 1);
        }
        assert!(many.lost && many.blocks.is_empty());
        many.restart(1);
        many.mark(0, 0, 0);
        assert!(many.lost && many.blocks.is_empty() && !many.citable());
    }

    #[test]
    fn a_replayed_response_keeps_its_places_and_its_citations_once() {
        let mut layout = TextLayout::default();
        // Nothing kept yet: the replay marks anew.
        layout.restart(0);
        assert_eq!(layout.replayed, None);
        layout.mark(0, 0, 0);
        layout.cite(r#"{"n":1}"#);
        layout.mark(6, 0, 1);
        layout.restart(1);
        // Before the replay begins a block again, a citation has no block.
        assert!(!layout.citable());
        // The blocks sent again keep their places, whatever the text kept says now; their
        // citations come again with them, once.
        layout.mark(9, 0, 1);
        layout.cite(r#"{"n":1}"#);
        layout.mark(9, 0, 1);
        layout.sign(r#""c2ln""#);
        // A block past those kept is a new one.
        layout.mark(9, 0, 1);
        layout.cite(r#"{"n":2}"#);
        assert_eq!(
            written(&layout, 1),
            vec![vec![
                pair("text_before", r#"[[0,0,[{"n":1}]]]"#),
                pair("text_after", r#"[[6,0,"c2ln"],[9,0,[{"n":2}]]]"#)
            ]]
        );
    }

    fn item(json: &str) -> Reasoning {
        Reasoning::Item {
            json: json.to_owned(),
        }
    }

    #[test]
    fn a_responses_message_before_the_first_call_is_plain_unless_a_hosted_item_follows_it() {
        let kept = [
            item(r#"{"id":"rs_1","type":"reasoning","summary":[]}"#),
            item(r#"{"id":"ws_1","type":"web_search_call","status":"completed"}"#),
        ];
        // The message after `reasoning` kept items, the first call after `hosted` hosted ones.
        let plain = |reasoning: usize, hosted: Option<&str>| {
            let mut layout = TextLayout::default();
            layout.mark(0, reasoning, 0);
            let mut asm = with_calls(1);
            if let Some(n) = hosted {
                asm.set_metadata(0, "hosted_before", n).expect("open");
            }
            layout.write(&mut asm, &kept);
            asm.metadata(0, "text_before").is_none()
        };
        // Right after its reasoning item, or after the web search the call follows too: where
        // the turn puts it anyway.
        assert!(plain(1, None));
        assert!(plain(2, Some("1")));
        // The web search came between the message and the call: its place is written.
        assert!(!plain(1, Some("1")));
        assert!(!plain(0, Some("1")));
        assert!(item(r#"{"type":"web_search_call"}"#).is_hosted_item());
        assert!(!kept[0].is_hosted_item() && !item("not json").is_hosted_item());
    }

    #[test]
    fn a_signed_text_part_keeps_its_signature_and_its_place() {
        let mut layout = TextLayout::default();
        layout.sign(r#""lost""#);
        layout.mark(0, 0, 0);
        assert_eq!(layout.turn_places(0).as_deref(), Some("[[0,0]]"));
        layout.sign(r#""Zmlyc3Q=""#);
        // A later signature of the same block replaces it.
        layout.sign(r#""c2Vjb25k""#);
        layout.mark(6, 0, 0);
        layout.mark(6, 0, 0);
        layout.sign(r#""dGhpcmQ=""#);
        assert_eq!(
            layout.turn_places(0).as_deref(),
            Some(r#"[[0,0,"c2Vjb25k"],[6,0,"dGhpcmQ="]]"#)
        );
        // One signed block before the first call is written: the call cannot carry it.
        let mut one = TextLayout::default();
        one.mark(0, 0, 0);
        one.sign(r#""c2ln""#);
        assert_eq!(
            written(&one, 1),
            vec![vec![pair("text_before", r#"[[0,0,"c2ln"]]"#)]]
        );
    }

    #[test]
    fn a_cited_block_keeps_its_citations_with_its_place_with_calls_or_without() {
        let mut layout = TextLayout::default();
        assert!(!layout.citable());
        layout.mark(0, 0, 0);
        layout.cite(r#"{"n":1}"#);
        layout.cite(r#"{"n":2}"#);
        layout.mark(4, 1, 0);
        layout.mark(9, 1, 0);
        layout.cite(r#"{"n":3}"#);
        // A turn with no call keeps them itself, each block's after its counts.
        assert_eq!(
            layout.turn_places(0).as_deref(),
            Some(r#"[[0,0,[{"n":1},{"n":2}]],[4,1],[9,1,[{"n":3}]]]"#)
        );
        // One cited block right before the first call is written: the call cannot carry it.
        let mut one = TextLayout::default();
        one.mark(0, 0, 0);
        one.cite(r#"{"n":1}"#);
        assert_eq!(
            written(&one, 1),
            vec![vec![pair("text_before", r#"[[0,0,[{"n":1}]]]"#)]]
        );
        // A block that gives way keeps them; once the places are lost, none is kept.
        one.mark(0, 0, 0);
        assert_eq!(one.turn_places(0).as_deref(), Some(r#"[[0,0,[{"n":1}]]]"#));
        one.restart(1);
        assert!(!one.citable() && one.citations.is_empty());
    }

    #[test]
    fn a_signed_empty_block_gives_way_to_none() {
        // A Gemini signature-only part after a signed text part, then another text block: each
        // keeps its own part.
        let mut layout = TextLayout::default();
        layout.mark(0, 0, 0);
        layout.sign(r#""YQ==""#);
        layout.mark(2, 0, 0);
        layout.sign(r#""Yg==""#);
        layout.mark(2, 0, 0);
        assert_eq!(
            layout.turn_places(0).as_deref(),
            Some(r#"[[0,0,"YQ=="],[2,0,"Yg=="],[2,0]]"#)
        );
    }

    #[test]
    fn characters_are_counted_once() {
        let mut layout = TextLayout::default();
        let mut text = "é😀a".as_bytes().to_vec();
        layout.mark_end_of(&text, 0, 0);
        text.extend_from_slice("東x".as_bytes());
        layout.mark_end_of(&text, 0, 1);
        assert_eq!(layout.counted_chars, 5);
        assert_eq!(layout.blocks[1].at, 5);
    }
}
