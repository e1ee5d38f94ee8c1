//! What a run measured. Everything here is deterministic (a function of the
//! configuration and seed); wall-clock figures live apart, in the caller's
//! record, so the statistics of two identical runs are byte-identical.

use finegrain_core::config::is_zero;
use finegrain_core::SyncKey;
use serde::{Deserialize, Serialize};

/// Where a processor's cycles went. The categories are exclusive: they add
/// up to the run's simulated cycles for every processor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissStats {
    /// A compute access to an own segment line that protocol state had
    /// evicted (indirect overhead: interference).
    pub interference: u64,
    pub interference_cycles: u64,
    /// Protocol lock, code or data fetched from another processor's cache
    /// (indirect overhead: migration).
    pub migration: u64,
    pub migration_cycles: u64,
    /// Protocol line, or the processor's own thread's message data (its
    /// completion flag, its receive buffer), re-fetched from memory
    /// (evicted by computation, or cold).
    pub protocol_refetch: u64,
    pub protocol_refetch_cycles: u64,
    /// Message data or another thread's segment read from a peer cache or
    /// memory, or message data for another thread read from memory (data
    /// placement).
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

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcStats {
    /// Written "compute" or "protocol".
    pub role: ProcRole,
    pub cycles: Cycles,
    pub handlers: u64,
    pub interrupts: u64,
    /// Times this processor took the acting-PP role.
    pub role_acquires: u64,
    pub misses: MissStats,
}

/// What a processor is for in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcRole {
    /// It runs a thread (and, under some policies, handlers too).
    #[default]
    Compute,
    /// A dedicated protocol processor.
    Protocol,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BusStats {
    pub transactions: u64,
    /// The transactions' occupancy, both phases together on a split bus.
    pub busy_cycles: u64,
    /// How much later than on an idle bus the transactions were done.
    pub wait_cycles: u64,
    /// Split bus only: the address bus's and the data bus's busy cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_busy_cycles: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_busy_cycles: Option<u64>,
}

impl BusStats {
    /// Busy cycles of the busier resource: the whole bus, or on a split bus
    /// its busier phase (what saturates first).
    pub fn bottleneck_busy_cycles(&self) -> u64 {
        match (self.address_busy_cycles, self.data_busy_cycles) {
            (Some(a), Some(d)) => a.max(d),
            _ => self.busy_cycles,
        }
    }

    /// One line for a text summary: the share of `cycles` the bus (each
    /// phase of a split one) was busy, and the mean wait per transaction.
    pub fn summary(&self, cycles: u64) -> String {
        let share = |busy: u64| busy as f64 / cycles.max(1) as f64;
        let busy = match (self.address_busy_cycles, self.data_busy_cycles) {
            (Some(a), Some(d)) => format!("address bus {:.2}, data bus {:.2} busy", share(a), share(d)),
            _ => format!("{:.2} busy", share(self.busy_cycles)),
        };
        let wait = self.wait_cycles as f64 / self.transactions.max(1) as f64;
        format!("{busy}; {wait:.1} cycles wait per transaction")
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeStats {
    pub procs: Vec<ProcStats>,
    pub bus: BusStats,
    pub messages_received: u64,
    pub messages_sent: u64,
    /// Messages to this node's own dispatch queue (block access faults,
    /// protocol messages a handler sent its own node), which no network
    /// carried; `messages_received` counts them too. Left out of records
    /// when none, as in every run before local events existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub local_events: u64,
    pub max_receive_queue: u64,
    /// Interrupts raised on this node that found the role already taken
    /// when they were delivered (they still cost Oint).
    pub spurious_interrupts: u64,
    /// Time messages waited in this node's queue before a protocol
    /// processor took them.
    pub queue_delay: DelayStats,
    /// When the last handler on this node finished.
    pub last_handler_end: u64,
    /// Policy coprocessor only (absent, and not serialized, otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coproc: Option<CoprocStats>,
}

/// What a node's communication co-processor did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CoprocStats {
    /// Handlers its thread engine ran (coproc-am).
    pub handlers: u64,
    /// Messages its DMA engine moved out of the node.
    pub messages_sent: u64,
    /// Its transactions on the node's memory bus: code fetches, data words
    /// (it has no data cache), DMA descriptors.
    pub bus_words: u64,
    /// Optimized library only (left out of records when none): DMAs its
    /// engine ran for Split-C's put, get, store and atomic messages
    /// straight from a descriptor (no sending thread), remote atomic adds
    /// and remote event triggers it sent, handlers run by its hardware
    /// with no thread (a put's or store's words written by the DMA, a
    /// get's read by it), and counter threads its DMAs' completions woke.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub direct_dmas: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub remote_adds: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub direct_handlers: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub counter_threads: u64,
}

/// A distribution of waiting times, in cycles.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DelayStats {
    pub count: u64,
    pub mean_cycles: f64,
    pub p99_cycles: u64,
    pub max_cycles: u64,
}

/// Request latency as the requesting thread saw it (issue to resume).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: u64,
    pub mean_cycles: f64,
    pub min_cycles: u64,
    pub max_cycles: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    /// Cycle at which the last thread finished.
    pub sim_cycles: u64,
    pub events: u64,
    /// Active messages delivered: requests plus replies, and one-way
    /// messages plus their replies.
    pub messages: u64,
    /// Requests threads sent with `Proc::request`, each answered by one of
    /// `replies` (what latency and throughput are measured on).
    pub requests: u64,
    pub replies: u64,
    /// One-way messages threads sent with `Proc::send_keyed`, and the
    /// replies their handlers chose to send (left out of records when
    /// none, as in every run before one-way messages existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub one_way: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub one_way_replies: u64,
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handler_spans: Vec<HandlerSpan>,
    /// With the handler trace: every message's passage and every thread
    /// access to memory, in the order they were timed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<TraceEvent>,
}

/// A step of a traced run (`SimConfig::trace_handlers`), in cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum TraceEvent {
    /// A message handed to the NI (or, `local`, to its own node's
    /// dispatch queue): `from` the cycle its sender started moving it,
    /// `sent` when the sender was done, `injected` when the sender's link
    /// had sent its payload (`network.payload_cycles_per_byte`; the
    /// network's latency runs from there), `arrive` when it reached the
    /// destination's queue.
    Message { handler: u32, src: u32, dst: u32, local: bool, from: u64, sent: u64, injected: u64, arrive: u64 },
    /// A handler's run, beside its [`HandlerSpan`]: `start` when its
    /// processor began dispatching it, `body` when its first instruction
    /// ran, `first_global` when its first access to the global segment
    /// began (if it made one), `done` when its body and accesses were over
    /// (its messages go out after), `end` when its activity ended.
    Handler {
        node: u32,
        proc: u32,
        handler: u32,
        start: u64,
        body: u64,
        first_global: Option<u64>,
        done: u64,
        end: u64,
    },
    /// A thread's `Proc::access`: from `start` to `end`.
    Access { node: u32, thread: u32, global: bool, start: u64, end: u64 },
}

/// One handler run: who ran it, its key, and when (cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

impl HandlerSpan {
    /// The part of the run its key protects: the lock's hold under the
    /// spin-lock discipline (handlers spin side by side), else all of it.
    fn exclusive(&self) -> (u64, u64) {
        self.lock.unwrap_or((self.start, self.end))
    }
}

/// The first breach of the synchronization-key rules in a handler trace,
/// described in one line (see [`KeyCheck`]).
pub fn key_conflict(spans: &[HandlerSpan]) -> Option<String> {
    let mut by_node: Vec<HandlerSpan> = spans.to_vec();
    by_node.sort_by_key(|s| (s.node, s.exclusive().0));
    by_node.chunk_by(|a, b| a.node == b.node).find_map(|node| {
        let mut check = KeyCheck::default();
        node.iter().find_map(|&s| check.admit(s).err())
    })
}

/// Checks one node's handlers, taken in the order they start, against the
/// synchronization-key rules: two handlers of one numbered key may not run
/// at once, and a sequential handler runs beside no other. Nosync handlers
/// never conflict. The simulator runs a handler's code in one step, so a
/// workload cannot see such an overlap in its data (a fetch&add's words
/// stay right); the handlers' times can. It keeps only the handlers a later
/// one could still overlap (those ending after the latest start), so its
/// memory and each check's cost stay those of the handlers in flight: a
/// map of every key seen grew with a DSM's blocks (hundreds of thousands)
/// and cost a cache miss per handler.
#[derive(Debug, Default)]
pub struct KeyCheck {
    /// The latest-ending handler so far with its end (0: none yet), and
    /// the latest-ending sequential one: plain ends keep the common case
    /// to two comparisons.
    any: (u64, Option<HandlerSpan>),
    sequential: (u64, Option<HandlerSpan>),
    /// Per numbered key, its latest handler, while it may still overlap
    /// one to come.
    live: Vec<HandlerSpan>,
}

impl KeyCheck {
    /// Admits the next handler to start, or describes the one it overlaps.
    /// Handlers come in the order they start, and a handler's key is held
    /// from its start at the earliest, so no later handler can overlap one
    /// that ended by `s.start`.
    pub fn admit(&mut self, s: HandlerSpan) -> Result<(), String> {
        let (start, end) = s.exclusive();
        if self.sequential.0 > start {
            return Err(describe(self.sequential.1, s));
        }
        match s.key {
            SyncKey::Sequential => {
                if self.any.0 > start {
                    return Err(describe(self.any.1, s));
                }
                self.sequential = (end, Some(s));
            }
            SyncKey::Key(_) => {
                self.live.retain(|o| o.exclusive().1 > s.start);
                match self.live.iter_mut().find(|o| o.key == s.key) {
                    Some(o) if o.exclusive().1 > start => return Err(describe(Some(*o), s)),
                    Some(o) => *o = s,
                    None => self.live.push(s),
                }
            }
            SyncKey::NoSync => {}
        }
        if end >= self.any.0 {
            self.any = (end, Some(s));
        }
        Ok(())
    }
}

#[cold]
fn describe(a: Option<HandlerSpan>, b: HandlerSpan) -> String {
    let Some(a) = a else { return format!("node {}: a {:?} handler overlaps an unrecorded one", b.node, b.key) };
    let ((s1, e1), (s2, e2)) = (a.exclusive(), b.exclusive());
    format!(
        "node {}: a {:?} handler on processor {} ran {s2}..{e2} while a {:?} handler on processor {} ran {s1}..{e1}",
        a.node, b.key, b.proc, a.key, a.proc
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bus_summary_gives_each_phase_of_a_split_bus() {
        let whole = BusStats { transactions: 4, busy_cycles: 40, wait_cycles: 6, ..BusStats::default() };
        assert_eq!(whole.summary(100), "0.40 busy; 1.5 cycles wait per transaction");
        let split = BusStats { address_busy_cycles: Some(8), data_busy_cycles: Some(32), ..whole };
        assert_eq!(split.summary(100), "address bus 0.08, data bus 0.32 busy; 1.5 cycles wait per transaction");
        assert_eq!(split.bottleneck_busy_cycles(), 32);
    }

    use super::*;

    fn span(proc: u32, key: SyncKey, start: u64, end: u64) -> HandlerSpan {
        HandlerSpan { node: 0, proc, key, start, end, lock: None }
    }

    #[test]
    fn one_key_back_to_back_and_distinct_keys_together_are_fine() {
        let spans = [
            span(0, SyncKey::Key(1), 0, 10),
            span(1, SyncKey::Key(1), 10, 20),
            span(2, SyncKey::Key(2), 5, 15),
            span(3, SyncKey::NoSync, 0, 30),
        ];
        assert_eq!(key_conflict(&spans), None);
    }

    #[test]
    fn one_key_twice_at_once_is_a_conflict() {
        let spans = [span(0, SyncKey::Key(1), 0, 10), span(2, SyncKey::Key(2), 0, 50), span(1, SyncKey::Key(1), 9, 20)];
        let e = key_conflict(&spans).expect("overlap");
        assert!(e.contains("processor 1 ran 9..20") && e.contains("processor 0 ran 0..10"), "{e}");
        // On different nodes the same key is a different word.
        let mut other = spans;
        other[2].node = 1;
        assert_eq!(key_conflict(&other), None);
    }

    #[test]
    fn a_sequential_handler_runs_beside_nothing() {
        let before = [span(0, SyncKey::NoSync, 0, 10), span(1, SyncKey::Sequential, 5, 20)];
        assert!(key_conflict(&before).is_some());
        let during = [span(1, SyncKey::Sequential, 0, 20), span(0, SyncKey::Key(3), 19, 25)];
        assert!(key_conflict(&during).is_some());
        let after = [span(1, SyncKey::Sequential, 0, 20), span(0, SyncKey::Key(3), 20, 25)];
        assert_eq!(key_conflict(&after), None);
        // A long handler that started first still runs when a later short
        // one has ended.
        let long =
            [span(0, SyncKey::Key(1), 0, 100), span(1, SyncKey::Key(2), 1, 2), span(2, SyncKey::Sequential, 50, 60)];
        assert!(key_conflict(&long).is_some());
    }

    #[test]
    fn under_spin_locks_only_the_lock_holds_count() {
        let mut a = span(0, SyncKey::Key(1), 0, 40);
        let mut b = span(1, SyncKey::Key(1), 5, 50);
        (a.lock, b.lock) = (Some((2, 20)), Some((20, 45)));
        assert_eq!(key_conflict(&[a, b]), None);
        b.lock = Some((19, 45));
        assert!(key_conflict(&[a, b]).is_some());
    }

    #[test]
    fn the_check_keeps_only_handlers_in_flight() {
        let mut check = KeyCheck::default();
        // Two processors, each running 10,000 short handlers on keys of its
        // own, back to back.
        for i in 0..10_000u64 {
            check.admit(span(0, SyncKey::Key(2 * i), 10 * i, 10 * i + 10)).unwrap();
            check.admit(span(1, SyncKey::Key(2 * i + 1), 10 * i + 5, 10 * i + 15)).unwrap();
            assert!(check.live.len() <= 3, "{} spans kept", check.live.len());
        }
        // A long one on a key, then the same key again while it runs.
        check.admit(span(0, SyncKey::Key(7), 100_000, 100_500)).unwrap();
        for i in 0..100 {
            check.admit(span(1, SyncKey::Key(1_000_000 + i), 100_001 + i, 100_002 + i)).unwrap();
        }
        let e = check.admit(span(1, SyncKey::Key(7), 100_200, 100_300)).unwrap_err();
        assert!(e.contains("ran 100200..100300") && e.contains("ran 100000..100500"), "{e}");
    }
}
