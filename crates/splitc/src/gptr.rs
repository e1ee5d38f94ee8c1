//! Global pointers and spread arrays: names for words in any node's global
//! segment.
//!
//! Addresses are in 8-byte words from the start of a node's segment;
//! Split-C programs name doubles and integers, and a word-grained segment
//! keeps every access one atomic load or store natively.

use finegrain_core::NodeId;
use serde::{Deserialize, Serialize};

/// A word in some node's global segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GlobalPtr {
    pub node: NodeId,
    /// Word offset in that node's segment.
    pub word: u64,
}

impl GlobalPtr {
    pub fn new(node: NodeId, word: u64) -> GlobalPtr {
        GlobalPtr { node, word }
    }

    /// The pointer `words` further on the same node.
    pub fn offset(self, words: u64) -> GlobalPtr {
        GlobalPtr { node: self.node, word: self.word + words }
    }
}

/// How a spread array's elements are dealt out to the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Layout {
    /// Element i on node i mod P (Split-C's `a[n]::`).
    Cyclic,
    /// Consecutive runs of `ceil(n / P)` elements per node, node 0 first.
    Blocked,
}

/// An array of `len` elements of `elem_words` words each, spread over all
/// nodes' segments at the same offset (`base`) on every node, as Split-C's
/// collective allocation places it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpreadArray {
    pub base: u64,
    pub len: u64,
    pub elem_words: u64,
    pub nodes: u32,
    pub layout: Layout,
}

impl SpreadArray {
    /// Elements each node holds at most (the space reserved per node).
    pub fn per_node(&self) -> u64 {
        self.len.div_ceil(self.nodes as u64)
    }

    /// Words reserved in every node's segment.
    pub fn words_per_node(&self) -> u64 {
        self.per_node() * self.elem_words
    }

    /// The node holding element `i` and its index there.
    pub fn place(&self, i: u64) -> (NodeId, u64) {
        let p = self.nodes as u64;
        match self.layout {
            Layout::Cyclic => (NodeId((i % p) as u32), i / p),
            Layout::Blocked => {
                let b = self.per_node();
                (NodeId((i / b) as u32), i % b)
            }
        }
    }

    /// The first word of element `i`.
    pub fn ptr(&self, i: u64) -> GlobalPtr {
        let (node, local) = self.place(i);
        GlobalPtr { node, word: self.base + local * self.elem_words }
    }

    /// Word offset, in every node's segment, of the `local`-th element a
    /// node holds.
    pub fn local_word(&self, local: u64) -> u64 {
        self.base + local * self.elem_words
    }

    /// How many elements `node` holds.
    pub fn local_len(&self, node: NodeId) -> u64 {
        let p = self.nodes as u64;
        let n = node.0 as u64;
        match self.layout {
            Layout::Cyclic => self.len / p + u64::from(n < self.len % p),
            Layout::Blocked => {
                let b = self.per_node();
                self.len.saturating_sub(n * b).min(b)
            }
        }
    }

    /// The global index of the `local`-th element `node` holds.
    pub fn global_index(&self, node: NodeId, local: u64) -> u64 {
        match self.layout {
            Layout::Cyclic => local * self.nodes as u64 + node.0 as u64,
            Layout::Blocked => node.0 as u64 * self.per_node() + local,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_element_has_one_place(layout: Layout, len: u64, nodes: u32) {
        let a = SpreadArray { base: 10, len, elem_words: 2, nodes, layout };
        let mut seen = vec![false; len as usize];
        for n in 0..nodes {
            for l in 0..a.local_len(NodeId(n)) {
                let i = a.global_index(NodeId(n), l);
                assert!(!seen[i as usize], "{layout:?} {len}/{nodes}: element {i} twice");
                seen[i as usize] = true;
                assert_eq!(a.place(i), (NodeId(n), l));
                assert_eq!(a.ptr(i).word, 10 + 2 * l);
            }
        }
        assert!(seen.iter().all(|&s| s), "{layout:?} {len}/{nodes}: every element placed");
    }

    #[test]
    fn layouts_place_each_element_once() {
        for layout in [Layout::Cyclic, Layout::Blocked] {
            for (len, nodes) in [(16, 4), (17, 4), (3, 4), (1, 1), (100, 7)] {
                every_element_has_one_place(layout, len, nodes);
            }
        }
    }
}
