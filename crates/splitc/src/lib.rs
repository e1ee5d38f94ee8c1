//! finegrain-splitc: Split-C over finegrain's active messages, on every
//! platform.
//!
//! Split-C (Culler et al., 1993) is the programming layer the co-processor
//! paper's applications are written in (IPPS 1996 Section 3): one thread
//! per node (SPMD), a global address space named by global pointers and
//! spread arrays, and split-phase operations whose completion is tracked
//! by counters:
//! - `get` copies remote words into this node's segment, `put` writes
//!   remote words and is acknowledged; `sync` waits for both;
//! - `store` writes remote words one way; the receiver counts the words it
//!   got (`store_sync`), and `all_store_sync` waits until every store in
//!   the machine has landed;
//! - atomic functions run at a word's owner, atomically with respect to the
//!   owner's other handlers and its computation;
//! - `barrier`, and gathers and reductions built on stores.
//!
//! Every operation is an active message through [`Proc`], so a program
//! written against this crate runs on the simulator and natively (threads,
//! processes, MPI ranks) alike; natively the words really move between the
//! nodes' segments, in the simulator they also cost what the machine says.
//! Handlers are registered with a [`LibraryOp`](finegrain_core::LibraryOp)
//! mark so a platform with a DMA engine can move the same data its own way
//! (the co-processor's optimized library).

pub mod conformance;
mod gptr;
mod handlers;
mod node;
mod state;

pub use gptr::{GlobalPtr, Layout, SpreadArray};
pub use handlers::{AtomicFn, Local, CHUNK_WORDS};
pub use node::SplitNode;

use finegrain_core::{AmError, HandlerTable, Proc};
use handlers::Ids;
use state::NodeState;
use std::sync::Arc;

/// Identifies one of the program's atomic functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicId(pub(crate) u64);

/// A program's Split-C: its handlers (registered in the program's table)
/// and every node's segment and counters.
#[derive(Clone)]
pub struct SplitC {
    pub(crate) nodes: u32,
    pub(crate) states: Arc<Vec<NodeState>>,
    pub(crate) ids: Ids,
}

/// Collects the atomic functions before the handlers are registered.
pub struct Builder {
    nodes: u32,
    segment_words: u64,
    atomics: Vec<(AtomicFn, u64)>,
}

/// Words at the start of every segment the library keeps for itself:
/// two gather areas of one word per node (alternating, see
/// [`SplitNode::all_gather`]).
pub(crate) fn reserved_words(nodes: u32) -> u64 {
    2 * nodes as u64
}

impl SplitC {
    /// Starts a program's Split-C for `nodes` nodes with segments of
    /// `segment_words` words each.
    pub fn builder(nodes: u32, segment_words: u64) -> Builder {
        Builder { nodes, segment_words, atomics: Vec::new() }
    }

    /// This thread's handle. Split-C runs one thread per node: a platform
    /// with more compute threads per node is refused.
    pub fn on<'a, P: Proc>(&'a self, p: &'a P) -> Result<SplitNode<'a, P>, AmError> {
        if p.threads_per_node() != 1 || p.nodes() != self.nodes {
            return Err(AmError::NotAllowed(format!(
                "Split-C built for {} nodes run by {} nodes of {} compute threads; allowed: the same node count, one \
                 compute thread per node (Split-C's model)",
                self.nodes,
                p.nodes(),
                p.threads_per_node()
            )));
        }
        Ok(SplitNode::new(self, p))
    }

    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// Words in each node's segment.
    pub fn segment_words(&self) -> u64 {
        self.states.first().map_or(0, |s| s.segment_len())
    }
}

impl Builder {
    /// Adds an atomic function of about `cycles` instructions (what the
    /// simulator charges it beyond the library's handler).
    pub fn atomic(&mut self, cycles: u64, f: impl Fn(&Local<'_>, [u64; 3]) -> u64 + Send + Sync + 'static) -> AtomicId {
        self.atomics.push((Arc::new(f), cycles));
        AtomicId(self.atomics.len() as u64 - 1)
    }

    /// Registers the library's handlers in `table`.
    pub fn register(self, table: &mut HandlerTable) -> Result<SplitC, AmError> {
        if self.nodes == 0 || self.segment_words <= reserved_words(self.nodes) {
            return Err(AmError::NotAllowed(format!(
                "a Split-C segment of {} words for {} nodes; allowed: 1 or more nodes, more than {} words (the \
                 library keeps {} for its gathers)",
                self.segment_words,
                self.nodes,
                reserved_words(self.nodes),
                reserved_words(self.nodes)
            )));
        }
        let words = usize::try_from(self.segment_words)
            .map_err(|_| AmError::NotAllowed(format!("a segment of {} words", self.segment_words)))?;
        let states: Arc<Vec<NodeState>> =
            Arc::new((0..self.nodes).map(|_| NodeState::new(self.nodes, words, reserved_words(self.nodes))).collect());
        let ids = handlers::register(table, states.clone(), Arc::new(self.atomics))?;
        Ok(SplitC { nodes: self.nodes, states, ids })
    }
}
