//! Configuration of a native run.

use finegrain_core::{
    ConfigError, CoprocLibrary, Discipline, LibraryOp, Notification, Policy, PpKind, Relinquish, RunConfig, Topology,
};

/// Most OS threads a native run starts (every processor of every node).
pub const MAX_THREADS: u64 = 1024;
/// Most host memory a native run's rings and segments may take.
pub const MAX_HOST_BYTES: u64 = 16 << 30;

/// How a native cluster is laid out and behaves (recorded whole with each
/// native run): the run settings every platform shares, and the runtime's
/// own.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RtConfig {
    /// Topology, policy, dispatch (discipline and, under Floating with a
    /// parallel discipline, the server limit: Hurricane-1 Mult's K),
    /// relinquish rule (`Eager` or `Handoff`: the adaptive rule needs the
    /// simulator's interrupt-cost estimate), notification (Floating: a
    /// signal when a message arrives while every thread computes, or only
    /// polls) and seed.
    #[serde(flatten)]
    pub run: RunConfig,
    /// Slots of each ring (power of two; must hold the largest message).
    pub ring_slots: usize,
    /// Pin each thread to a core (round-robin over the available cores).
    pub pin: bool,
    /// Wall-clock nanoseconds one `work` cycle lasts.
    pub ns_per_cycle: f64,
    /// Bytes of each compute thread's private segment.
    pub segment_bytes: usize,
    /// Fixed: a protocol-processor thread parks after this many empty
    /// polls, at least 1 (None: it spins forever). Refused under the other
    /// policies, whose threads never park.
    pub park_after_polls: Option<u32>,
    /// Read the clock around handlers, waits and polls to report where each
    /// thread's time went (costs a few tens of nanoseconds per message).
    pub time_split: bool,
    /// Parallel disciplines: messages decoded from the rings at a time (the
    /// dispatch search window), 1..=65536. Checked under serial too, which
    /// decodes one message at a time and does not use it.
    pub pdq_window: usize,
    /// Floating's interrupt signal is `SIGRTMIN + interrupt_signal`
    /// (installed before any thread of the run starts, put back after).
    pub interrupt_signal: u32,
    /// A handler running longer than this many milliseconds ends the run
    /// with an error naming its node and handler (handlers are short and
    /// never block: one that does would stall its node for ever).
    pub handler_limit_ms: u64,
    /// A request whose reply has not come after this many milliseconds
    /// ends the run with an error naming the requester, the destination
    /// and the handler (the destination makes no progress: a hung
    /// handler, or threads that never poll).
    pub progress_timeout_ms: u64,
}

/// Most milliseconds a handler limit or progress timeout may be (an hour).
pub const MAX_LIMIT_MS: u64 = 3_600_000;
/// The handler time limit unless told otherwise.
pub const DEFAULT_HANDLER_LIMIT_MS: u64 = 1_000;
/// The request progress timeout unless told otherwise.
pub const DEFAULT_PROGRESS_TIMEOUT_MS: u64 = 10_000;

/// Slowest `work` cycle, in wall-clock nanoseconds: a 1 kHz processor,
/// far slower than any machine worth emulating (the default is 1 ns, and
/// slow-motion runs for debugging need a few orders of magnitude at most).
/// Above it a modest `work(1000)` already lasts over 16 minutes, and
/// nothing checks how long a run may take.
pub const MAX_NS_PER_CYCLE: f64 = 1e6;

/// Parallel disciplines' default window: room for two threads' batches
/// in service and as many decoded behind them.
pub const DEFAULT_PDQ_WINDOW: usize = 64;

impl RtConfig {
    /// Defaults for a topology and policy: 256-slot rings, pinning, 1 ns
    /// cycles, 1 MiB segments, spinning protocol processors, interrupts and
    /// the time split on.
    pub fn new(topology: Topology, policy: Policy) -> RtConfig {
        RtConfig::of(RunConfig::new(topology, policy, 1))
    }

    /// The runtime's defaults for the run settings `run`.
    pub fn of(run: RunConfig) -> RtConfig {
        RtConfig {
            run,
            ring_slots: 256,
            pin: true,
            ns_per_cycle: 1.0,
            segment_bytes: 1 << 20,
            park_after_polls: None,
            time_split: true,
            pdq_window: DEFAULT_PDQ_WINDOW,
            interrupt_signal: crate::notify::signal::DEFAULT_INTERRUPT_SIGNAL,
            handler_limit_ms: DEFAULT_HANDLER_LIMIT_MS,
            progress_timeout_ms: DEFAULT_PROGRESS_TIMEOUT_MS,
        }
    }

    /// Whether a Floating node signals a computing thread when a message
    /// finds nobody acting as protocol processor.
    pub fn interrupts(&self) -> bool {
        self.run.notification == Notification::Interrupt
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.run.validate()?;
        self.check_coprocessor()?;
        if matches!(self.run.dispatch.pp_kind, PpKind::Embedded | PpKind::Hardware) {
            return Err(ConfigError::invalid(
                "pp_kind",
                self.run.dispatch.pp_kind.label(),
                "the native runtime has no network-interface processor or protocol engine; allowed smp (dedicated or \
                 idle threads)",
            ));
        }
        let min_slots =
            crate::transport::codec::slots_for(finegrain_core::MAX_ARGS, crate::transport::MAX_PAYLOAD, true) * 2;
        if !self.ring_slots.is_power_of_two() || self.ring_slots < min_slots || self.ring_slots > 1 << 20 {
            return Err(ConfigError::invalid(
                "ring_slots",
                self.ring_slots,
                format!(
                    "allowed a power of two from {} (two of the largest messages) to 1048576",
                    min_slots.next_power_of_two()
                ),
            ));
        }
        if !(self.ns_per_cycle > 0.0 && self.ns_per_cycle <= MAX_NS_PER_CYCLE) {
            // 1e300 printed in full would be 301 digits.
            let v = self.ns_per_cycle;
            let shown = if v.abs() < 1e9 { v.to_string() } else { format!("{v:e}") };
            return Err(ConfigError::invalid(
                "ns_per_cycle",
                shown,
                format!("allowed more than 0 up to {MAX_NS_PER_CYCLE} (wall-clock nanoseconds per work cycle)"),
            ));
        }
        if self.segment_bytes < 4096 || !self.segment_bytes.is_multiple_of(8) {
            return Err(ConfigError::invalid("segment_bytes", self.segment_bytes, "allowed a multiple of 8 from 4096"));
        }
        self.check_size()?;
        self.check_limits()?;
        // Under serial the window is unused (messages are decoded one at a
        // time), but a window no discipline could use is still wrong.
        crate::dispatch::keyed::check_window(self.pdq_window)?;
        self.check_parking()?;
        if self.run.dispatch.discipline.parallel() {
            crate::dispatch::keyed::KeyedQueue::new(self.run.dispatch.discipline, self.pdq_window)?;
            if self.run.policy == Policy::Single {
                return Err(ConfigError::invalid(
                    "discipline",
                    self.run.dispatch.discipline.label(),
                    "policy single has one thread per node: use serial (or fixed:K / floating for parallel dispatch)",
                ));
            }
        }
        if self.run.relinquish == Relinquish::Adaptive {
            return Err(ConfigError::invalid(
                "relinquish",
                "adaptive",
                "the native runtime supports eager and handoff (adaptive needs the simulator's interrupt-cost model)",
            ));
        }
        // Natively only a Floating thread holding the serial role ever gives
        // it up; elsewhere hand-off would be accepted and do nothing.
        if self.run.relinquish == Relinquish::Handoff
            && (self.run.policy != Policy::Floating || self.run.dispatch.discipline != Discipline::Serial)
        {
            return Err(ConfigError::invalid(
                "relinquish",
                "handoff",
                format!(
                    "natively hand-off applies to policy floating with the serial discipline (here {} with {}); use eager",
                    self.run.policy.label(),
                    self.run.dispatch.discipline.label()
                ),
            ));
        }
        Ok(())
    }

    /// Natively a node's co-processor is one progress thread (or none,
    /// under main-am), which serves the node's inbox alone: a parallel
    /// discipline would have nobody to share it with.
    fn check_coprocessor(&self) -> Result<(), ConfigError> {
        let Policy::Coprocessor { library } = self.run.policy else { return Ok(()) };
        if self.run.dispatch.discipline.parallel() {
            return Err(ConfigError::invalid(
                "discipline",
                self.run.dispatch.discipline.label(),
                format!("policy coprocessor:{} serves each node's messages on one thread: use serial", library.label()),
            ));
        }
        Ok(())
    }

    /// The interrupt signal must exist, and the time limits be real.
    fn check_limits(&self) -> Result<(), ConfigError> {
        let most = crate::notify::signal::max_interrupt_signal();
        if self.interrupt_signal > most {
            return Err(ConfigError::invalid(
                "interrupt_signal",
                self.interrupt_signal,
                format!("allowed 0..={most} (the interrupt signal is SIGRTMIN + this)"),
            ));
        }
        for (field, v) in
            [("handler_limit_ms", self.handler_limit_ms), ("progress_timeout_ms", self.progress_timeout_ms)]
        {
            if !(1..=MAX_LIMIT_MS).contains(&v) {
                return Err(ConfigError::invalid(field, v, format!("allowed 1..={MAX_LIMIT_MS} milliseconds")));
            }
        }
        Ok(())
    }

    /// Only Fixed's protocol threads park; elsewhere the setting would be
    /// accepted and do nothing. A thread parks after at least one empty
    /// poll, so 0 would silently mean 1.
    fn check_parking(&self) -> Result<(), ConfigError> {
        let Some(limit) = self.park_after_polls else { return Ok(()) };
        if !matches!(self.run.policy, Policy::Fixed { .. }) {
            return Err(ConfigError::invalid(
                "park_after_polls",
                limit,
                format!("only policy fixed's protocol threads park (here {}); leave it None", self.run.policy.label()),
            ));
        }
        if limit == 0 {
            return Err(ConfigError::invalid(
                "park_after_polls",
                limit,
                "allowed 1 or more (empty polls before a protocol thread parks), or None to spin",
            ));
        }
        Ok(())
    }

    /// A native run starts one OS thread per processor and gives every
    /// thread a ring to every node: refuse sizes the host could not hold
    /// before any thread starts (a failed spawn or allocation midway would
    /// abort the process).
    fn check_size(&self) -> Result<(), ConfigError> {
        let t = self.run.topology;
        let per_node = self.threads_per_node();
        let threads = t.nodes as u64 * per_node as u64;
        if threads > MAX_THREADS {
            return Err(ConfigError::invalid(
                "topology",
                format!("{} nodes x {per_node} threads", t.nodes),
                format!("a native run starts one thread per processor, allowed at most {MAX_THREADS} in all"),
            ));
        }
        let slot = std::mem::size_of::<crate::transport::ring::Slot>() as u64;
        let rings = (threads * t.nodes as u64).saturating_mul(self.ring_slots as u64).saturating_mul(slot);
        // Segments and protocol tables, roughly.
        let segments = threads.saturating_mul(self.segment_bytes as u64).saturating_mul(2);
        let need = rings.saturating_add(segments);
        if need > MAX_HOST_BYTES {
            return Err(ConfigError::invalid(
                "topology",
                format!("{} nodes x {per_node} threads", t.nodes),
                format!(
                    "rings and segments would need {:.1} GiB, allowed at most {} GiB (use fewer nodes or threads, \
                     a preset with a smaller cache.size_bytes (each thread's segment is as large as its cache) or, \
                     from Rust, fewer RtConfig.ring_slots)",
                    need as f64 / (1u64 << 30) as f64,
                    MAX_HOST_BYTES >> 30
                ),
            ));
        }
        Ok(())
    }

    /// Threads per node: compute threads plus dedicated protocol processors,
    /// plus the co-processor's progress thread where the policy has one.
    pub fn threads_per_node(&self) -> u32 {
        self.run.topology.procs_per_node + u32::from(self.progress_thread())
    }

    /// Whether each node has a co-processor progress thread beside its
    /// processors: policy coprocessor with the coproc-am or optimized
    /// library (under main-am the main thread handles everything itself).
    pub fn progress_thread(&self) -> bool {
        matches!(self.run.policy, Policy::Coprocessor { library } if library != CoprocLibrary::MainAm)
    }

    /// Whether the progress thread runs a handler marked `op` (None: an
    /// ordinary user handler) itself; what it does not run it forwards to
    /// the node's main thread. Under optimized it runs the data and control
    /// operations a co-processor with DMA and remote atomic add does (IPPS
    /// 1996 Section 4.3); under coproc-am every handler but a user's atomic
    /// function, which must run atomically with the main processor's
    /// computation. False without a progress thread.
    pub fn progress_runs(&self, op: Option<LibraryOp>) -> bool {
        let Policy::Coprocessor { library } = self.run.policy else { return false };
        match (library, op) {
            (CoprocLibrary::MainAm, _) | (_, Some(LibraryOp::Atomic)) => false,
            (CoprocLibrary::CoprocAm, _) => true,
            (CoprocLibrary::Optimized, op) => op.is_some(),
        }
    }

    pub fn compute_threads_per_node(&self) -> u32 {
        self.run.policy.compute_procs(self.run.topology.procs_per_node)
    }

    /// Bytes of each node's protocol table: one 8-byte entry per 128-byte
    /// block of every compute thread's segment.
    pub fn protocol_table_bytes(&self) -> usize {
        self.compute_threads_per_node() as usize * (self.segment_bytes / 128) * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_what_it_cannot_run() {
        let t = Topology { nodes: 2, procs_per_node: 2 };
        let mut c = RtConfig::new(t, Policy::Floating);
        assert!(c.validate().is_ok());
        c.ring_slots = 100;
        assert!(c.validate().unwrap_err().to_string().starts_with("invalid ring_slots = 100"));
        c.ring_slots = 256;
        c.run.relinquish = Relinquish::Adaptive;
        assert!(c.validate().unwrap_err().to_string().contains("supports eager and handoff"));
        let c = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Fixed { protocol_procs: 1 });
        assert!(c.validate().unwrap_err().to_string().contains("leaves no compute processor"));
        let mut c = RtConfig::new(t, Policy::Floating);
        c.run.dispatch.max_servers = Some(1);
        assert!(c.validate().unwrap_err().to_string().contains("only floating under a parallel discipline"));
        c.run.dispatch.discipline = Discipline::Pdq;
        assert!(c.validate().is_ok());
        c.run.dispatch.max_servers = Some(3);
        assert!(c.validate().unwrap_err().to_string().starts_with("invalid max_servers = 3: allowed 1..=2"));
    }

    /// A window of 0 was refused under pdq but passed under serial, which
    /// never uses the window; parking was accepted under every policy but
    /// only Fixed parks, and 0 polls meant the same as 1.
    #[test]
    fn settings_that_would_be_ignored_are_refused() {
        let t = Topology { nodes: 2, procs_per_node: 2 };
        let mut c = RtConfig::new(t, Policy::Floating);
        c.pdq_window = 0;
        assert_eq!(c.validate().unwrap_err().to_string(), "invalid pdq_window = 0: allowed 1..=65536");
        c.pdq_window = 16;
        assert!(c.validate().is_ok(), "a valid window is accepted (and unused) under serial");
        for (policy, name) in [(Policy::Floating, "floating"), (Policy::Single, "single")] {
            let ppn = if policy == Policy::Single { 1 } else { 2 };
            let mut c = RtConfig::new(Topology { nodes: 2, procs_per_node: ppn }, policy);
            for limit in [0, 50] {
                c.park_after_polls = Some(limit);
                let e = c.validate().unwrap_err().to_string();
                assert!(
                    e.starts_with(&format!("invalid park_after_polls = {limit}: "))
                        && e.contains(&format!("only policy fixed's protocol threads park (here {name})")),
                    "{e}"
                );
            }
        }
        let mut c = RtConfig::new(t, Policy::Fixed { protocol_procs: 1 });
        c.park_after_polls = Some(0);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("invalid park_after_polls = 0: allowed 1 or more"), "{e}");
        c.park_after_polls = Some(1);
        assert!(c.validate().is_ok());
    }

    /// 1e300 ns per cycle used to pass, and `work(100)` then never returned.
    #[test]
    fn ns_per_cycle_is_bounded() {
        let mut c = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single);
        c.ns_per_cycle = MAX_NS_PER_CYCLE;
        assert!(c.validate().is_ok());
        for bad in [1e300, MAX_NS_PER_CYCLE * 1.5, f64::INFINITY, f64::NAN, 0.0, -1.0] {
            c.ns_per_cycle = bad;
            let e = c.validate().unwrap_err().to_string();
            assert!(e.starts_with("invalid ns_per_cycle = ") && e.contains("allowed more than 0 up to 1000000"), "{e}");
            assert!(e.len() < 200, "{e}");
        }
    }
}
