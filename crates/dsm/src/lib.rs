//! finegrain-dsm: fine-grain distributed shared memory over finegrain's
//! active messages, on every platform.
//!
//! Shared arrays live in one global address space whose pages are homed on
//! nodes; a node caches remote blocks in its own memory (allocated a page
//! at a time, kept coherent a block at a time, 32 to 128 bytes) under the
//! Stache protocol (HPCA 1999 Section 4): full-map, invalidation-based,
//! with per-block access tags (invalid, read-only, read-write) checked on
//! every access. A miss raises a block access fault that a protocol
//! handler serves; handlers are active messages whose synchronization key
//! is the block, so a parallel dispatch queue (PDQ) runs handlers of
//! different blocks in parallel, and page allocation takes the sequential
//! key. Threads of one node share its copies, as an SMP's snooping bus
//! keeps their caches coherent.
//!
//! Access control is in software (a tag table checked on each access, as
//! Shasta and Blizzard-S do), so the library runs wherever [`Proc`] does:
//! the simulator (where the systems of the paper give the same handlers
//! their costs) and natively on threads, processes and MPI ranks.
//! Accesses are sequentially consistent: a write waits until every other
//! copy is invalidated. Locks and barriers are active messages ([`sync`]).
//!
//! ```ignore
//! let mut b = Dsm::builder(nodes, threads_per_node, DsmConfig::default())?;
//! let a = b.alloc(1024, Home::Blocked);
//! let dsm = b.register(&mut table)?;
//! // in each thread:
//! let d = dsm.on(&p);
//! d.write(a, d.rank() as u64, 7).await?;
//! d.barrier().await?;
//! ```

mod access;
pub mod conformance;
mod handlers;
mod node;
mod protocol;
mod space;
mod state;
mod sync;

pub use access::DsmProc;

use finegrain_core::config::DsmParams;
use finegrain_core::{AmError, HandlerTable};
use node::NodeState;
use serde::{Deserialize, Serialize};
use space::Space;
use state::State;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

/// How the DSM is laid out and what its handlers cost in the simulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsmConfig {
    /// Coherence unit: 32, 64 or 128 bytes (HPCA 1999 uses 64 by default
    /// and 32 and 128 in Section 5.2).
    pub block_bytes: u32,
    /// Allocation unit of cached remote data (a page, 4 KiB).
    pub page_bytes: u32,
    /// Check on every read that it returns the last value written to the
    /// word anywhere (a shadow copy of the whole memory). Only meaningful
    /// where every node runs in one process (the simulator, in-process
    /// threads).
    pub check_coherence: bool,
    /// Instructions of each handler, for the simulator: a machine's
    /// `[dsm]` section, recorded under the handlers' own names.
    #[serde(with = "RecordedCosts")]
    pub costs: DsmParams,
}

impl Default for DsmConfig {
    fn default() -> DsmConfig {
        DsmConfig { block_bytes: 64, page_bytes: 4096, check_coherence: false, costs: DEFAULT_COSTS }
    }
}

/// Instruction counts of a small hand-coded protocol (tens of instructions
/// per handler, as Table 1's Hurricane column implies: its embedded
/// processors spend 36 to 61 cycles on each step beyond memory). Studies
/// take their machine's.
pub const DEFAULT_COSTS: DsmParams = DsmParams {
    fault_cycles: 30,
    page_cycles: 200,
    get_cycles: 50,
    inv_cycles: 20,
    fetch_cycles: 30,
    fetch_reply_cycles: 30,
    data_cycles: 40,
    ack_cycles: 15,
    sync_cycles: 20,
};

/// How a DSM configuration writes its handler costs: by handler, without
/// the preset's `_cycles` (records have always held them so). Serde's
/// remote derive checks at build time that it names every field of
/// [`DsmParams`] and no other, so the two spellings cannot drift apart.
#[derive(Serialize, Deserialize)]
#[serde(remote = "DsmParams", deny_unknown_fields)]
struct RecordedCosts {
    #[serde(rename = "fault")]
    fault_cycles: u64,
    #[serde(rename = "page")]
    page_cycles: u64,
    #[serde(rename = "get")]
    get_cycles: u64,
    #[serde(rename = "inv")]
    inv_cycles: u64,
    #[serde(rename = "fetch")]
    fetch_cycles: u64,
    #[serde(rename = "fetch_reply")]
    fetch_reply_cycles: u64,
    #[serde(rename = "data")]
    data_cycles: u64,
    #[serde(rename = "ack")]
    ack_cycles: u64,
    #[serde(rename = "sync")]
    sync_cycles: u64,
}

/// Where an allocation's pages live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Home {
    /// The pages split into equal contiguous parts, one per node in order.
    Blocked,
    /// Page `i` of the space on node `i % nodes`.
    RoundRobin,
    /// Every page on one node.
    Node(u32),
}

/// A shared array of 8-byte words (a handle: copy it freely).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shared {
    base: u64,
    len: u64,
}

impl Shared {
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Words `start..start + len` of this array.
    ///
    /// # Panics
    /// If the range is not inside the array (a program's bug).
    pub fn slice(&self, start: u64, len: u64) -> Shared {
        assert!(start.checked_add(len).is_some_and(|e| e <= self.len), "slice {start}+{len} of {} words", self.len);
        Shared { base: self.base + start, len }
    }

    /// The global word address of element `i`, or an error naming the
    /// bound.
    pub(crate) fn word(&self, i: u64) -> Result<u64, AmError> {
        if i < self.len {
            Ok(self.base + i)
        } else {
            Err(AmError::NotAllowed(format!("shared array index {i} out of bounds: the array has {} words", self.len)))
        }
    }
}

/// A lock (an active-message queue at node `id % nodes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockId(pub(crate) u32);

/// Collects allocations before the handlers are registered.
pub struct DsmBuilder {
    threads: u32,
    cfg: DsmConfig,
    space: Space,
    locks: u32,
}

/// A program's DSM: its handlers (registered in the program's table) and
/// every node's state.
#[derive(Clone)]
pub struct Dsm {
    pub(crate) shared: Arc<State>,
    pub(crate) threads: u32,
    pub(crate) cfg: Arc<DsmConfig>,
    /// The coherence check's copy of memory: the last value written to
    /// every word.
    pub(crate) shadow: Option<Arc<[AtomicU64]>>,
}

/// The most nodes a directory entry's sharer set holds.
pub const MAX_NODES: u32 = 128;

impl Dsm {
    /// Starts a DSM for `nodes` nodes of `threads_per_node` compute
    /// threads.
    pub fn builder(nodes: u32, threads_per_node: u32, cfg: DsmConfig) -> Result<DsmBuilder, AmError> {
        if nodes == 0 || nodes > MAX_NODES || threads_per_node == 0 {
            return Err(AmError::NotAllowed(format!(
                "a DSM of {nodes} nodes of {threads_per_node} threads; allowed 1 to {MAX_NODES} nodes of 1 or more \
                 threads (a directory entry holds {MAX_NODES} sharers)"
            )));
        }
        if ![32, 64, 128].contains(&cfg.block_bytes) {
            return Err(AmError::NotAllowed(format!("DSM block of {} bytes; allowed 32, 64 or 128", cfg.block_bytes)));
        }
        if !cfg.page_bytes.is_power_of_two() || cfg.page_bytes < cfg.block_bytes {
            return Err(AmError::NotAllowed(format!(
                "DSM page of {} bytes; allowed a power of two no smaller than the {}-byte block",
                cfg.page_bytes, cfg.block_bytes
            )));
        }
        let space = Space::new(nodes, cfg.block_bytes, cfg.page_bytes);
        Ok(DsmBuilder { threads: threads_per_node, cfg, space, locks: 0 })
    }

    /// This thread's handle.
    pub fn on<'a, P: finegrain_core::Proc>(&'a self, p: &'a P) -> Result<DsmProc<'a, P>, AmError> {
        DsmProc::new(self, p)
    }

    pub fn nodes(&self) -> u32 {
        self.shared.space.nodes
    }

    pub fn config(&self) -> &DsmConfig {
        &self.cfg
    }

    /// Bytes of shared memory allocated.
    pub fn bytes(&self) -> u64 {
        self.shared.space.words() * 8
    }

    /// What the protocol has done so far that the paper's Stache does not
    /// describe, every node's together.
    pub fn protocol_counts(&self) -> ProtocolCounts {
        let c = &self.shared.counts;
        let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        ProtocolCounts {
            blocks_placed: get(&c.blocks_placed),
            upgrades: get(&c.upgrades),
            upgrades_with_data: get(&c.upgrades_with_data),
            held_requeues: get(&c.held_requeues),
        }
    }
}

/// Counts of protocol work beyond the paper's Stache, to measure its cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProtocolCounts {
    /// Blocks a DATA message placed at a requester (each a miss served
    /// from another node).
    pub blocks_placed: u64,
    /// Writes granted to a node's current read-only copy by a grant
    /// without data (an upgrade; not among `blocks_placed`).
    pub upgrades: u64,
    /// Blocks placed over a current read-only copy: an upgrade whose grant
    /// still carried the block (the protocol sends none; kept to show it).
    pub upgrades_with_data: u64,
    /// Invalidations and fetches a node put back in its own queue because
    /// the block had just arrived for a waiting thread (see the hold in
    /// `node.rs`): each one more handler run.
    pub held_requeues: u64,
}

impl DsmBuilder {
    /// Nodes the DSM spans.
    pub fn nodes(&self) -> u32 {
        self.space.nodes
    }

    /// Compute threads per node.
    pub fn threads_per_node(&self) -> u32 {
        self.threads
    }

    /// A zero-filled shared array of `words` words.
    pub fn alloc(&mut self, words: u64, home: Home) -> Shared {
        let base = self.space.alloc(words, home);
        Shared { base, len: words }
    }

    /// A shared array holding `values` from the start (the program's
    /// input, set up before the run as SPLASH-2 programs do before their
    /// timed section).
    pub fn alloc_with(&mut self, values: Vec<u64>, home: Home) -> Shared {
        let words = values.len() as u64;
        let base = self.space.alloc(words, home);
        self.space.images.push((base, values.into()));
        Shared { base, len: words }
    }

    /// `count` new locks.
    pub fn locks(&mut self, count: u32) -> Vec<LockId> {
        let first = self.locks;
        self.locks += count;
        (first..self.locks).map(LockId).collect()
    }

    /// Registers the protocol's handlers in `table`.
    pub fn register(self, table: &mut HandlerTable) -> Result<Dsm, AmError> {
        let space = Arc::new(self.space);
        let nodes = (0..space.nodes).map(|n| NodeState::new(n, Arc::clone(&space), self.threads, self.locks)).collect();
        let shadow = self.cfg.check_coherence.then(|| {
            let mut words: Vec<u64> = vec![0; space.words() as usize];
            for (base, values) in &space.images {
                words[*base as usize..*base as usize + values.len()].copy_from_slice(values);
            }
            words.into_iter().map(AtomicU64::new).collect()
        });
        let shared = Arc::new(State { space, nodes, ids: OnceLock::new(), counts: Default::default() });
        let ids = handlers::register(&shared, &self.cfg.costs, table)?;
        let _ = shared.ids.set(ids);
        Ok(Dsm { shared, threads: self.threads, cfg: Arc::new(self.cfg), shadow })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_costs_are_recorded_by_handler_and_read_back() {
        let costs = DsmParams { get_cycles: 62, data_cycles: 25, ..DEFAULT_COSTS };
        let cfg = DsmConfig { check_coherence: true, costs, ..DsmConfig::default() };
        let text = serde_json::to_string(&cfg).unwrap();
        assert_eq!(
            text,
            r#"{"block_bytes":64,"page_bytes":4096,"check_coherence":true,"costs":{"fault":30,"page":200,"get":62,"inv":20,"fetch":30,"fetch_reply":30,"data":25,"ack":15,"sync":20}}"#
        );
        assert_eq!(serde_json::from_str::<DsmConfig>(&text).unwrap(), cfg);
        let preset_spelling = text.replace(r#""fault":"#, r#""fault_cycles":"#);
        let e = serde_json::from_str::<DsmConfig>(&preset_spelling).unwrap_err().to_string();
        assert!(e.contains("unknown field `fault_cycles`"), "{e}");
    }
}
