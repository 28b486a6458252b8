//! The function-call items of a Responses stream, found by `item_id`, by assembler key and by
//! `output_index` in constant time.
//!
//! Every event names its item one of these ways, and a response may hold thousands of items:
//! a scan of all items per event made a stream of 16,000 calls take 0.4 s, twelve times the
//! time of 4,000. Items are never removed while a stream runs, so each index only grows: by
//! one item per call the response starts, as no item is made once it was refused whole.

use std::collections::HashMap;

/// What the decoder keeps of one item.
#[derive(Debug)]
pub(super) struct ItemState {
    /// The `output_index` as sent.
    pub index: i64,
    /// The assembler key of the item's call: `index`, unless another item (another non-blank
    /// `item_id`) already has that key, as when a server sends one `output_index` for all.
    pub key: i64,
    /// Its `output_item.added` (or `.done`) was read; deltas alone open no item with a name.
    pub announced: bool,
    /// Its announcement gave the call a name: an item announced with none (a blank or missing
    /// `name`) is named by its `output_item.done` (quirks 10, 11).
    pub named: bool,
    /// Set through [`Items::set_item_id`], which keeps the index by id.
    item_id: String,
    pub fed_len: usize,
    pub hash: u64,
    pub verified: bool,
    /// Text of its own went to its call: a non-empty delta, the arguments its `added` carried,
    /// or a summary fed as its text. Until then a summary is the item's text (a bridge that
    /// sends only the summaries, or a call sent again that way) and is fed as a fragment is,
    /// never compared with the text a rendition before it left in the call. As `feed_chunk`
    /// keeps its `with_arguments`.
    pub has_text: bool,
    /// Its `output_item.done` was read: the call ended, so a summary that comes late (events
    /// out of order) finds no call to compare with, and must not open a nameless one.
    pub ended: bool,
    /// The arguments its `output_item.added` carried, decoded, set aside: fed only if no delta
    /// and no summary brings any (quirk 24). Counted by the assembler while held.
    pub provisional: Option<Box<[u8]>>,
}

impl ItemState {
    /// A new item at `output_index` `index` under `key`, nothing fed yet.
    pub fn new(index: i64, key: i64, item_id: &str, announced: bool, hash: u64) -> Self {
        Self {
            index,
            key,
            announced,
            named: false,
            item_id: item_id.to_owned(),
            fed_len: 0,
            hash,
            verified: false,
            has_text: false,
            ended: false,
            provisional: None,
        }
    }

    pub fn item_id(&self) -> &str {
        &self.item_id
    }
}

/// The items in the order they were opened, with their indexes.
#[derive(Debug, Default)]
pub(super) struct Items {
    all: Vec<ItemState>,
    /// The latest item with each non-blank `item_id`.
    by_id: HashMap<String, usize>,
    /// The items under each key, in order.
    by_key: HashMap<i64, Vec<usize>>,
    /// The latest item sent at each `output_index`.
    by_index: HashMap<i64, usize>,
}

impl Items {
    pub fn len(&self) -> usize {
        self.all.len()
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    pub fn get(&self, pos: usize) -> Option<&ItemState> {
        self.all.get(pos)
    }

    pub fn get_mut(&mut self, pos: usize) -> Option<&mut ItemState> {
        self.all.get_mut(pos)
    }

    /// Takes the set-aside arguments of every item still holding some, with their keys.
    pub fn take_provisional(&mut self) -> Vec<(i64, Box<[u8]>)> {
        self.all
            .iter_mut()
            .filter_map(|state| Some((state.key, state.provisional.take()?)))
            .collect()
    }

    /// Adds an item; returns its position.
    pub fn push(&mut self, item: ItemState) -> usize {
        let pos = self.all.len();
        if !item.item_id.is_empty() {
            self.by_id.insert(item.item_id.clone(), pos);
        }
        self.by_key.entry(item.key).or_default().push(pos);
        self.by_index.insert(item.index, pos);
        self.all.push(item);
        pos
    }

    /// Gives the item at `pos` the `item_id` its announcement brought.
    pub fn set_item_id(&mut self, pos: usize, item_id: &str) {
        if let Some(item) = self.all.get_mut(pos) {
            item_id.clone_into(&mut item.item_id);
            if !item_id.is_empty() && !self.by_id.get(item_id).is_some_and(|&p| p > pos) {
                self.by_id.insert(item_id.to_owned(), pos);
            }
        }
    }

    /// The latest item with this non-blank `item_id`.
    pub fn with_id(&self, item_id: &str) -> Option<usize> {
        self.by_id.get(item_id).copied()
    }

    /// The latest item at this `output_index`.
    pub fn at_index(&self, index: i64) -> Option<usize> {
        self.by_index.get(&index).copied()
    }

    /// The items under `key`, latest first.
    pub fn under_key(&self, key: i64) -> impl Iterator<Item = usize> + '_ {
        self.by_key
            .get(&key)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .rev()
            .copied()
    }

    /// The latest item under `key`.
    pub fn latest_under(&self, key: i64) -> Option<usize> {
        self.under_key(key).next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_follow_pushes_and_late_ids() {
        let mut items = Items::default();
        let a = items.push(ItemState::new(1, 1, "fc_a", true, 0));
        let b = items.push(ItemState::new(1, 5, "", false, 0));
        assert_eq!(items.with_id("fc_a"), Some(a));
        assert_eq!(items.at_index(1), Some(b));
        assert_eq!(items.latest_under(5), Some(b));
        items.set_item_id(b, "fc_b");
        assert_eq!(items.with_id("fc_b"), Some(b));
        let again = items.push(ItemState::new(1, 1, "fc_a", true, 0));
        assert_eq!(items.with_id("fc_a"), Some(again));
        assert_eq!(items.under_key(1).collect::<Vec<_>>(), vec![again, a]);
        items.clear();
        assert_eq!(items.len(), 0);
        assert_eq!(items.with_id("fc_a"), None);
    }
}
