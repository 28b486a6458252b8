//! A byte trie over a small set of strings (property names, string `enum` values), stepped one
//! decoded byte at a time so a key or string can be rejected at the first byte that no allowed
//! value continues.
//!
//! Design notes:
//! - Flat arrays (nodes plus one edge list sorted by byte) instead of boxed children: one
//!   allocation per schema keyword, cache-friendly, and a step is a short linear scan (tool
//!   schemas have a handful of properties, so fan-out is small; binary search past 8 edges).
//! - Each edge carries a `live` flag: whether some entry marked live lies at or below its
//!   target. Object schemas put both property names (live) and `required`-only names (not live)
//!   into one trie, so one walk answers both "is this key allowed" and "which required bit does
//!   it set". The flag sits on the edge, not the node, so a key step reads one edge.
//! - Rejected alternative: a 256-entry table per node (fast, but kilobytes per property name).

/// A node id; [`Trie::ROOT`] is the empty prefix.
pub(crate) type TrieNode = u32;

#[derive(Debug, Clone, Default)]
struct Node {
    edges_start: u32,
    edges_len: u32,
    /// Index of the entry that ends here, or `u32::MAX`.
    value: u32,
}

/// An edge: its byte, whether its target is live (copied here so a key step reads one edge
/// and not the target node too), and its target.
type Edge = (u8, bool, u32);

/// An immutable byte trie built from a list of entries.
#[derive(Debug, Clone, Default)]
pub(crate) struct Trie {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
}

impl Trie {
    pub const ROOT: TrieNode = 0;

    /// Builds a trie; entry `i` is `(bytes, live)` and [`Trie::value`] returns `i` at its end.
    pub fn build<'a>(entries: impl IntoIterator<Item = (&'a [u8], bool)>) -> Self {
        // Build with per-node edge vectors, then flatten.
        let mut children: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
        let mut values: Vec<u32> = vec![u32::MAX];
        let mut live: Vec<bool> = vec![false];
        for (index, (bytes, is_live)) in entries.into_iter().enumerate() {
            let mut node = 0usize;
            live[0] |= is_live;
            for &b in bytes {
                let next = if let Some(&(_, n)) = children[node].iter().find(|(c, _)| *c == b) {
                    n as usize
                } else {
                    let n = children.len();
                    children.push(Vec::new());
                    values.push(u32::MAX);
                    live.push(false);
                    children[node].push((b, to_u32(n)));
                    n
                };
                node = next;
                live[node] |= is_live;
            }
            if values[node] == u32::MAX {
                values[node] = to_u32(index);
            }
        }
        let mut trie = Trie {
            nodes: Vec::with_capacity(children.len()),
            edges: Vec::new(),
        };
        for (i, mut kids) in children.into_iter().enumerate() {
            kids.sort_unstable_by_key(|&(b, _)| b);
            trie.nodes.push(Node {
                edges_start: to_u32(trie.edges.len()),
                edges_len: to_u32(kids.len()),
                value: values[i],
            });
            trie.edges
                .extend(kids.iter().map(|&(b, to)| (b, live[to as usize], to)));
        }
        trie
    }

    #[inline]
    fn edge(&self, node: TrieNode, b: u8) -> Option<Edge> {
        let n = self.nodes.get(node as usize)?;
        let start = n.edges_start as usize;
        let edges = self.edges.get(start..start + n.edges_len as usize)?;
        if edges.len() <= 8 {
            edges.iter().find(|e| e.0 == b).copied()
        } else {
            edges
                .binary_search_by_key(&b, |e| e.0)
                .ok()
                .map(|i| edges[i])
        }
    }

    /// The child of `node` along byte `b`, if any.
    #[inline]
    pub fn step(&self, node: TrieNode, b: u8) -> Option<TrieNode> {
        self.edge(node, b).map(|e| e.2)
    }

    /// The child of `node` along byte `b` when some live entry lies at or below it.
    #[inline]
    pub fn step_live(&self, node: TrieNode, b: u8) -> Option<TrieNode> {
        self.edge(node, b).filter(|e| e.1).map(|e| e.2)
    }

    /// The node reached from the root along `bytes` by live edges only.
    pub fn walk_live(&self, bytes: &[u8]) -> Option<TrieNode> {
        let mut node = Self::ROOT;
        for &b in bytes {
            node = self.step_live(node, b)?;
        }
        Some(node)
    }

    /// The entry index ending exactly at `node`.
    #[inline]
    pub fn value(&self, node: TrieNode) -> Option<u32> {
        self.nodes
            .get(node as usize)
            .map(|n| n.value)
            .filter(|&v| v != u32::MAX)
    }

    /// The entry index of the whole string `bytes`.
    pub fn lookup(&self, bytes: &[u8]) -> Option<u32> {
        let mut node = Self::ROOT;
        for &b in bytes {
            node = self.step(node, b)?;
        }
        self.value(node)
    }
}

/// Trie sizes are bounded by the schema text, far below `u32::MAX`.
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_values() {
        let t = Trie::build([
            (&b"title"[..], true),
            (b"tags", true),
            (b"id", false),
            (b"", true),
        ]);
        assert_eq!(t.lookup(b"title"), Some(0));
        assert_eq!(t.lookup(b"tags"), Some(1));
        assert_eq!(t.lookup(b"id"), Some(2));
        assert_eq!(t.lookup(b""), Some(3));
        assert_eq!(t.lookup(b"ta"), None);
        assert_eq!(t.lookup(b"titles"), None);
        assert!(t.step(Trie::ROOT, b'i').is_some());
        assert_eq!(t.step_live(Trie::ROOT, b'i'), None);
        let ta = t.step_live(t.step_live(Trie::ROOT, b't').unwrap(), b'a');
        let ta = ta.expect("live: tags");
        assert_eq!(t.step(ta, b'x'), None);
    }

    #[test]
    fn wide_fanout_uses_binary_search() {
        let words: Vec<String> = (b'a'..=b'z').map(|c| format!("{}x", c as char)).collect();
        let t = Trie::build(words.iter().map(|w| (w.as_bytes(), true)));
        for (i, w) in words.iter().enumerate() {
            assert_eq!(t.lookup(w.as_bytes()), Some(u32::try_from(i).unwrap()));
        }
        assert_eq!(t.lookup(b"Ax"), None);
    }
}
