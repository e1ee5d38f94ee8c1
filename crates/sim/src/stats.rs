//! What a run measured. Everything here is deterministic (a function of the
//! configuration and seed); wall-clock figures live apart, in the caller's
//! record, so the statistics of two identical runs are byte-identical.

use serde::Serialize;

/// Where a processor's cycles went. The categories are exclusive: they add
/// up to the run's simulated cycles for every processor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Cycles {
    /// Synthetic or charged computation.
    pub compute: u64,
    /// Computation stalled on cache misses (interference, data consumption).
    pub stall: u64,
    /// Composing outgoing requests into the NI.
    pub send: u64,
    /// A thread waiting for its reply while another processor acts as PP.
    pub wait: u64,
    /// Protocol occupancy: noticing, dispatching, running handlers, sending
    /// replies.
    pub handler: u64,
    /// Inside a handler, spinning on a key lock another handler holds (the
    /// spin-lock discipline).
    pub busy_wait: u64,
    /// Interrupt delivery, dispatch and return (Oint).
    pub interrupt: u64,
    /// Taking and giving up the acting protocol-processor role.
    pub role: u64,
    /// Acting as PP with nothing to handle (polling).
    pub poll_idle: u64,
    /// Acting as PP with nothing to handle while its own work could run:
    /// the price of keeping the role until a peer can take it.
    pub hold: u64,
    /// Nothing to do at all.
    pub idle: u64,
}

impl Cycles {
    pub fn total(&self) -> u64 {
        self.compute
            + self.stall
            + self.send
            + self.wait
            + self.handler
            + self.busy_wait
            + self.interrupt
            + self.role
            + self.poll_idle
            + self.hold
            + self.idle
    }

    pub fn add(&mut self, o: &Cycles) {
        self.compute += o.compute;
        self.stall += o.stall;
        self.send += o.send;
        self.wait += o.wait;
        self.handler += o.handler;
        self.busy_wait += o.busy_wait;
        self.interrupt += o.interrupt;
        self.role += o.role;
        self.poll_idle += o.poll_idle;
        self.hold += o.hold;
        self.idle += o.idle;
    }
}

/// Cache misses by the effect they belong to, with the cycles they cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MissStats {
    /// A compute access to an own segment line that protocol state had
    /// evicted (indirect overhead: interference).
    pub interference: u64,
    pub interference_cycles: u64,
    /// Protocol lock, code or data fetched from another processor's cache
    /// (indirect overhead: migration).
    pub migration: u64,
    pub migration_cycles: u64,
    /// Protocol line re-fetched from memory (evicted by computation, or cold).
    pub protocol_refetch: u64,
    pub protocol_refetch_cycles: u64,
    /// Message data or another thread's segment read from a peer cache or
    /// memory (data placement).
    pub placement: u64,
    pub placement_cycles: u64,
}

impl MissStats {
    pub fn add(&mut self, o: &MissStats) {
        self.interference += o.interference;
        self.interference_cycles += o.interference_cycles;
        self.migration += o.migration;
        self.migration_cycles += o.migration_cycles;
        self.protocol_refetch += o.protocol_refetch;
        self.protocol_refetch_cycles += o.protocol_refetch_cycles;
        self.placement += o.placement;
        self.placement_cycles += o.placement_cycles;
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProcStats {
    /// "compute" for processors running a thread, "protocol" for dedicated
    /// protocol processors.
    pub role: &'static str,
    pub cycles: Cycles,
    pub handlers: u64,
    pub interrupts: u64,
    /// Times this processor took the acting-PP role.
    pub role_acquires: u64,
    pub misses: MissStats,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BusStats {
    pub transactions: u64,
    pub busy_cycles: u64,
    pub wait_cycles: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NodeStats {
    pub procs: Vec<ProcStats>,
    pub bus: BusStats,
    pub messages_received: u64,
    pub messages_sent: u64,
    pub max_receive_queue: u64,
    /// Interrupts raised on this node that found the role already taken
    /// when they were delivered (they still cost Oint).
    pub spurious_interrupts: u64,
    /// Time messages waited in this node's queue before a protocol
    /// processor took them.
    pub queue_delay: DelayStats,
    /// When the last handler on this node finished.
    pub last_handler_end: u64,
}

/// A distribution of waiting times, in cycles.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DelayStats {
    pub count: u64,
    pub mean_cycles: f64,
    pub p99_cycles: u64,
    pub max_cycles: u64,
}

/// Request latency as the requesting thread saw it (issue to resume).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    pub count: u64,
    pub mean_cycles: f64,
    pub min_cycles: u64,
    pub max_cycles: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunStats {
    /// Cycle at which the last thread finished.
    pub sim_cycles: u64,
    pub events: u64,
    /// Active messages delivered: requests plus replies.
    pub messages: u64,
    pub requests: u64,
    pub replies: u64,
    pub interrupts: u64,
    pub handlers: u64,
    /// Mean over compute threads of pure compute cycles / sim cycles.
    pub measured_u: f64,
    /// Mean over nodes of handler cycles / sim cycles: how busy the
    /// protocol-processor role was.
    pub pp_occupancy: f64,
    pub request_latency: LatencyStats,
    pub cycles: Cycles,
    pub misses: MissStats,
    pub nodes: Vec<NodeStats>,
    /// Every handler run, when the configuration asks for a trace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handler_spans: Vec<HandlerSpan>,
}

/// One handler run: who ran it, its key, and when (cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct HandlerSpan {
    pub node: u32,
    /// Processor within the node.
    pub proc: u32,
    pub key: finegrain_core::SyncKey,
    /// Dispatch to the end of the handler's activity.
    pub start: u64,
    pub end: u64,
    /// Spin-lock discipline: when the key's lock was taken and released.
    pub lock: Option<(u64, u64)>,
}
