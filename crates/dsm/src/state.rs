//! What every handler of the DSM shares, the coherence protocol's and the
//! locks' and barriers' alike: the space, every node's state, the handler
//! ids and the protocol's counts.

use crate::node::NodeState;
use crate::space::Space;
use finegrain_core::{Args, HandlerCtx, HandlerId};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

/// The DSM's handler ids.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ids {
    pub page: HandlerId,
    pub fault: HandlerId,
    pub get: HandlerId,
    pub inv: HandlerId,
    pub inv_ack: HandlerId,
    pub fetch: HandlerId,
    pub fetch_reply: HandlerId,
    pub data: HandlerId,
    pub data_ack: HandlerId,
    pub arrive: HandlerId,
    pub release: HandlerId,
    pub acquire: HandlerId,
    pub unlock: HandlerId,
    pub grant: HandlerId,
}

/// What every handler shares: the space, every node's state, the ids.
pub(crate) struct State {
    pub space: Arc<Space>,
    pub nodes: Vec<NodeState>,
    pub ids: OnceLock<Ids>,
    pub counts: Counts,
}

/// What the protocol did that the paper's Stache does not describe, counted
/// so its cost can be measured (see [`crate::ProtocolCounts`]).
#[derive(Default)]
pub(crate) struct Counts {
    pub blocks_placed: AtomicU64,
    pub upgrades: AtomicU64,
    pub upgrades_with_data: AtomicU64,
    pub held_requeues: AtomicU64,
}

impl State {
    pub fn ids(&self) -> Ids {
        *self.ids.get().expect("handlers registered before any message")
    }

    /// The state of the node a handler runs on.
    pub fn node(&self, ctx: &dyn HandlerCtx) -> &NodeState {
        &self.nodes[ctx.node().index()]
    }
}

/// A message's argument words (the library's messages carry at most 4).
pub(crate) fn args(words: &[u64]) -> Args {
    Args::new(words).expect("the DSM's messages carry at most 4 words")
}
