//! Each node's share of Split-C: its global segment and its counters.
//!
//! Split counters (IPPS 1996 Section 4.2): every counter the thread and the
//! handlers share is two words, one only the thread increments (operations
//! it issued) and one only handlers increment (operations completed); the
//! counter's value is their difference. Neither side ever writes the other's
//! word, so no lock is needed, on one processor or across a processor and
//! a co-processor.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// One node's Split-C state. Every process builds the state of every node,
/// but only the node's own thread and the handlers that run at the node
/// touch it, so a node's segment is allocated on first use: a process of
/// the `shm` or `mpi` platforms allocates only its own node's.
pub(crate) struct NodeState {
    segment_words: usize,
    segment: OnceLock<Box<[AtomicU64]>>,
    /// Issuer halves (written by the node's thread only).
    pub gets_issued: AtomicU64,
    pub puts_issued: AtomicU64,
    /// Words this node stored into each node's segment, ever.
    pub stored_to: Box<[AtomicU64]>,
    /// The thread's own progress through the collectives.
    pub store_epoch: AtomicU64,
    pub barrier_epoch: AtomicU64,
    pub gather_epoch: AtomicU64,
    pub stores_consumed: AtomicU64,
    /// The next free word of the segment (collective allocation).
    pub next_free: AtomicU64,
    /// Completer halves (written by handlers at this node only).
    pub gets_done: AtomicU64,
    pub puts_done: AtomicU64,
    pub stores_received: AtomicU64,
    /// Per source: the last all_store_sync epoch it reported, and the
    /// words it had stored here by then.
    pub counts_heard: Box<[AtomicU64]>,
    pub counts_reported: Box<[AtomicU64]>,
    /// Dissemination barrier: arrivals in each round, ever.
    pub barrier_arrivals: Box<[AtomicU64]>,
}

fn zeros(n: usize) -> Box<[AtomicU64]> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

/// Rounds of a dissemination barrier over `nodes` nodes.
pub(crate) fn barrier_rounds(nodes: u32) -> u32 {
    nodes.next_power_of_two().trailing_zeros()
}

impl NodeState {
    pub fn new(nodes: u32, segment_words: usize, reserved_words: u64) -> NodeState {
        let n = nodes as usize;
        NodeState {
            segment_words,
            segment: OnceLock::new(),
            gets_issued: AtomicU64::new(0),
            puts_issued: AtomicU64::new(0),
            stored_to: zeros(n),
            store_epoch: AtomicU64::new(0),
            barrier_epoch: AtomicU64::new(0),
            gather_epoch: AtomicU64::new(0),
            stores_consumed: AtomicU64::new(0),
            next_free: AtomicU64::new(reserved_words),
            gets_done: AtomicU64::new(0),
            puts_done: AtomicU64::new(0),
            stores_received: AtomicU64::new(0),
            counts_heard: zeros(n),
            counts_reported: zeros(n),
            barrier_arrivals: zeros(barrier_rounds(nodes).max(1) as usize),
        }
    }

    /// Words in the segment (allocated or not).
    pub fn segment_len(&self) -> u64 {
        self.segment_words as u64
    }

    /// The node's segment, allocated (zeroed) on first use.
    pub fn segment(&self) -> &[AtomicU64] {
        self.segment.get_or_init(|| zeros(self.segment_words))
    }

    /// Words `first..first + len`, or why not (named for the operation).
    pub fn words(&self, first: u64, len: u64, what: &str) -> Result<&[AtomicU64], String> {
        let seg = self.segment();
        let end = first.checked_add(len).filter(|&e| e <= seg.len() as u64);
        match end {
            Some(end) if len > 0 => Ok(&seg[first as usize..end as usize]),
            _ => Err(format!(
                "{what} of {len} words at word {first} is outside the global segment ({} words); allowed: 1 or more \
                 words ending by word {}",
                seg.len(),
                seg.len()
            )),
        }
    }

    /// Gets and puts issued and not yet complete.
    pub fn outstanding(&self) -> u64 {
        let issued = self.gets_issued.load(Ordering::Relaxed) + self.puts_issued.load(Ordering::Relaxed);
        let done = self.gets_done.load(Ordering::Acquire) + self.puts_done.load(Ordering::Acquire);
        issued - done
    }
}

/// Copies words into a byte payload (native byte order: every node of a
/// run is the same kind of machine).
pub(crate) fn words_to_bytes(words: &[AtomicU64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(words.len() * 8);
    for w in words {
        out.extend_from_slice(&w.load(Ordering::Relaxed).to_ne_bytes());
    }
    out
}

/// Writes a byte payload into words.
pub(crate) fn bytes_to_words(bytes: &[u8], words: &[AtomicU64]) {
    for (w, b) in words.iter().zip(bytes.chunks_exact(8)) {
        w.store(u64::from_ne_bytes(b.try_into().expect("8 bytes")), Ordering::Relaxed);
    }
}
