//! The machine model: every cost of a simulated machine (processor,
//! caches, bus, network interface, network, interrupts, protocol handlers,
//! parallel dispatch hardware), validated.

use super::{ConfigError, CoprocessorParams, DmaCalibration, Ledger, PpKind, RoleArbitration, MAX_CYCLES};
use crate::work::Work;
use serde::{Deserialize, Serialize};

/// Switches for the overheads the scheduling study separates, so each can be
/// turned off to measure what it costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effects {
    /// Compute and protocol lines compete for the same cache sets.
    pub cache_interference: bool,
    /// Protocol lock, code and data move between the caches of the
    /// processors that take turns as protocol processor.
    pub migration: bool,
    /// Data a handler touched must be transferred cache-to-cache when a
    /// different processor consumes it.
    pub data_placement: bool,
}

impl Default for Effects {
    fn default() -> Effects {
        Effects { cache_interference: true, migration: true, data_placement: true }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessorParams {
    /// Clock rate; converts cycles to microseconds in reports.
    pub mhz: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheParams {
    /// Per-processor direct-mapped data cache.
    pub size_bytes: u64,
    pub line_bytes: u32,
    pub hit_cycles: u64,
}

/// Split-transaction snooping bus inside a node. Latency is what the
/// requesting processor waits once its transaction has the bus; occupancy is
/// how long the transaction holds the bus (and makes others queue).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusParams {
    pub memory_latency: u64,
    pub memory_occupancy: u64,
    pub cache_to_cache_latency: u64,
    pub cache_to_cache_occupancy: u64,
    pub upgrade_latency: u64,
    pub upgrade_occupancy: u64,
    pub writeback_occupancy: u64,
    /// Split transactions: cycles of a transaction's address phase on the
    /// address bus; the rest of its occupancy is its data phase on the data
    /// bus, when the data moves (so one transaction's address goes out
    /// while another's data moves). Upgrades carry no data. Absent, the
    /// bus is one resource held for a transaction's whole occupancy at
    /// once, as every record made before this field ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_phase_cycles: Option<u64>,
}

/// Kinds of network interface. Only the CM-5-like one exists so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NiKind {
    /// Uncached memory-mapped send and receive queues on the memory bus,
    /// moved a word at a time by the processor.
    Cm5,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NiParams {
    pub kind: NiKind,
    pub word_bytes: u32,
    /// Words of every message besides arguments and payload (handler, key,
    /// source, token).
    pub header_words: u32,
    pub uncached_read_latency: u64,
    pub uncached_read_occupancy: u64,
    pub uncached_write_latency: u64,
    pub uncached_write_occupancy: u64,
    /// Reading the cacheable arrival/dispatch registers after the NI
    /// invalidated them (one bus transaction each).
    pub register_read_latency: u64,
    pub register_read_occupancy: u64,
    /// Cycles an NI port spends per word injecting or accepting a message.
    pub port_cycles_per_word: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkParams {
    /// Constant point-to-point latency.
    pub latency_cycles: u64,
    /// The constant latency counts from the first word leaving the
    /// sender's NI port to the last word entering the receiver's (cut
    /// through, as a network whose latency is quoted per message whatever
    /// its size): an uncontended message takes `latency_cycles` (at least
    /// both ports' time), and the ports still serialize messages, so
    /// contention at the interfaces stays. Off, the ports' time is added at
    /// both ends (store and forward). Records made before it ran with it
    /// off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency_includes_ports: bool,
    /// Cycles the sender's link takes per byte of a message's payload
    /// before the constant latency starts: the header and arguments ride in
    /// the message's first flit, the payload follows at the link's
    /// bandwidth, and the sender's port is busy for it (contention at the
    /// interfaces). 0: payloads cost only their words' port time. Records
    /// made before it ran with 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub payload_cycles_per_byte: u64,
    /// The sender stays busy until its payload is on the link (the
    /// injection is part of its occupancy, waiting for a busy port
    /// included), as HPCA 1999 Table 1 counts the 64-byte block's sending
    /// in the home's protocol occupancy. Off, the sender goes on once its
    /// words are in the NI and the port injects the payload alone. Records
    /// made before it ran with it off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub payload_occupies_sender: bool,
}

/// Serde's test for a count or cost left out of records while zero (a
/// field older records ran without).
pub fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterruptParams {
    /// Oint: delivery, dispatch and return, charged to the interrupted
    /// processor.
    pub overhead_cycles: u64,
    /// Share of Oint paid before handling (delivery and dispatch); the rest
    /// is paid on return.
    pub entry_percent: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolParams {
    /// Dispatch loop instructions per message (decode, table lookup, call).
    pub dispatch_cycles: u64,
    /// Code of the dispatch loop, fetched through the cache per message.
    pub dispatch_code_bytes: u32,
    /// Mutable runtime state the dispatch loop updates per message (queue
    /// bookkeeping, the current-handler record, statistics). It stays in a
    /// dedicated protocol processor's cache and follows the role around
    /// otherwise.
    pub dispatch_state_bytes: u32,
    /// Taking the acting protocol-processor role: masking interrupts, the
    /// test-and-set, deciding to stay (besides the lock line's own miss).
    pub role_acquire_cycles: u64,
    /// Giving the role up: unmasking, deciding to leave, releasing the lock.
    pub role_release_cycles: u64,
    /// Who gets a released software role lock among the processors waiting
    /// for it (Floating). Absent in records made before it existed, which
    /// ran under `lowest`.
    #[serde(default)]
    pub role_arbitration: RoleArbitration,
    /// Protocol processing is a thread (the scheduling paper's Section 5,
    /// Figure 2): a computing processor that takes the role switches from
    /// its thread to the node's protocol thread, and back when it gives the
    /// role up (a dedicated protocol processor runs the protocol thread
    /// only). Off: taking the role costs only the role switch itself.
    /// Absent in records made before it existed, which ran without it.
    #[serde(default)]
    pub protocol_thread: bool,
    /// Instructions of one context switch (saving one register file and
    /// restoring another).
    #[serde(default)]
    pub context_switch_cycles: u64,
    /// Bytes of a thread's saved context: each switch writes the outgoing
    /// thread's and reads the incoming thread's through the caches (the
    /// protocol thread's follows the role from processor to processor).
    #[serde(default)]
    pub context_bytes: u32,
    /// Requests go through the protocol processor (the scheduling paper's
    /// Section 5, Figure 2): under Fixed a compute processor stores its
    /// request in a cachable request line that the protocol processor
    /// reads and sends; under Floating and Single the requester becomes
    /// protocol processor and sends, or hands the request to the one
    /// acting. Off: threads write their requests into the NI themselves.
    /// Absent in records made before it existed, which ran without it.
    #[serde(default)]
    pub requests_via_pp: bool,
    /// Instructions to mark a request complete for its waiting thread.
    pub completion_cycles: u64,
    /// A message to the sender's own node is a local protocol event (a
    /// block access fault the access-control hardware raises, or a
    /// protocol message a handler sends itself): it goes to the node's
    /// dispatch queue without the network, and the sender pays this (HPCA
    /// 1999 Table 1: "detect miss, issue bus transaction"). Absent in
    /// records made before local events existed: 0.
    #[serde(default)]
    pub local_event_cycles: u64,
    /// Bytes of protocol-table state per protocol block.
    pub table_entry_bytes: u32,
    /// Protocol block size: the unit of remote data transfer and of
    /// protocol-table state.
    pub block_bytes: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeParams {
    /// Synthetic work makes one random access to the private segment every
    /// this many cycles.
    pub access_interval_cycles: u64,
    /// Share of those accesses that write (a written line another cache
    /// holds a copy of needs an upgrade).
    pub write_percent: u32,
    /// Instructions the processor issues per cycle at best: counted work
    /// ([`Work`]) takes at least `instructions / issue_width` cycles.
    pub issue_width: u32,
    /// Loads and stores it issues per cycle at best.
    pub memory_ports: u32,
    /// Pipelined floating-point operations it issues per cycle at best.
    pub fp_units: u32,
    /// Cycles of a floating-point divide or square root, which holds the
    /// processor (they do not pipeline).
    pub long_flop_cycles: u64,
}

impl ComputeParams {
    /// The cycles counted work takes when every private access hits: the
    /// busiest of the issue slots, the memory ports and the floating-point
    /// units (a statically scheduled pipeline overlapping the rest with
    /// it), plus the divides and square roots in full. Misses are the
    /// cache model's, sampled from [`Work::accesses`].
    pub fn cycles(&self, w: &Work) -> u64 {
        let per = |n: u64, width: u32| n.div_ceil(width.max(1) as u64);
        let issue = per(w.instructions() - w.long_flops, self.issue_width);
        let memory = per(w.accesses(), self.memory_ports);
        let fp = per(w.flops, self.fp_units);
        issue.max(memory).max(fp).saturating_add(w.long_flops.saturating_mul(self.long_flop_cycles))
    }
}

/// Costs of parallel dispatch hardware (Hurricane-like devices).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PdqParams {
    /// Entries the device's search engine examines for a dispatchable key.
    pub search_window: usize,
    /// Embedded PP: reading the dispatch register on the device (cache bus)
    /// and decoding the entry.
    pub embedded_dispatch_cycles: u64,
    /// Embedded PP: reading or writing one message word in device memory.
    pub embedded_word_cycles: u64,
    /// Embedded PPs reach node memory through a data cache of their own
    /// that snoops the memory bus like a node processor's (the preset's
    /// cache), instead of word by word as cacheless bus agents. Message
    /// words and the dispatch register stay on the device either way.
    /// Records made before it ran cacheless.
    #[serde(default)]
    pub embedded_data_cache: bool,
    /// Spin-lock discipline: instructions to take and to release a key's
    /// lock (besides the lock line's own cache traffic).
    pub lock_cycles: u64,
    /// Key affinity, an extension of the paper's device (0: none, as in the
    /// paper): a processor asking for work gets the oldest dispatchable
    /// entry of a key it served last (or that nobody has served), if the
    /// search window holds one, so a key's state stays in one cache (what
    /// static partitioning gets for free); otherwise, as without it, the
    /// oldest dispatchable entry. The oldest dispatchable entry is passed
    /// over at most this many times, so it waits for its own processor
    /// only so long. Records made before it ran without affinity.
    #[serde(default)]
    pub affinity_passes: u32,
    /// A hardware protocol engine (S-COMA's finite-state machine, pp kind
    /// hardware): dispatching a queue entry to it.
    #[serde(default)]
    pub hardware_dispatch_cycles: u64,
    /// A hardware protocol engine: each handler's work and each message it
    /// sends is one action of this many cycles; its accesses to memory
    /// cost their memory time.
    #[serde(default)]
    pub hardware_action_cycles: u64,
    /// A hardware protocol engine: reading or writing one word of the
    /// device's own state (a DSM's directory entries and access tags,
    /// `Region::Directory` and `Region::AccessTags`).
    #[serde(default)]
    pub hardware_state_cycles: u64,
    /// SMP protocol processors move messages to and from the device as
    /// cache lines: a message's header and arguments arrive in the line of
    /// the processor's cachable dispatch register (one fill from the
    /// device, `ni.register_read_*`), and a payload moves as whole lines
    /// between the processor's cache and the device's queues (a fill from
    /// the device per line received, like the register's; a posted line
    /// write per line sent, `bus.writeback_occupancy` on the bus and
    /// `ni.uncached_write_latency` to the processor). Off, they are
    /// uncached word loads and stores. Records made before it ran with it
    /// off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub smp_line_transfers: bool,
    /// Releasing a thread stalled on the device (a block access fault, or
    /// any `Proc::wait_until`) once a handler has made its condition true,
    /// on a node whose protocol processors are hardware engines (the two
    /// fields below: embedded, SMP): what the thread pays
    /// before it goes on, in place of its spin's cache hit. 0: the hit
    /// only. Records made before they existed ran with 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hardware_resume_cycles: u64,
    /// The same release on a node of embedded protocol processors.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub embedded_resume_cycles: u64,
    /// The same release on a node of SMP protocol processors (dedicated or
    /// multiplexed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub smp_resume_cycles: u64,
    /// Software protocol processors (embedded, SMP) keep a DSM's directory
    /// entries (`Region::Directory`) in node memory, through their data
    /// caches, so the entries move between the caches of processors that
    /// serve neighbouring blocks (HPCA 1999 Section 5.2: parallel protocol
    /// execution pays for protocol state migrating among the protocol
    /// processors' caches); the access tags stay on the device. Off, the
    /// entries are device state like the tags. A hardware engine keeps
    /// both on the device either way. Records made before it ran with it
    /// off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub directory_in_memory: bool,
    /// Charge the resume cycles above only where Table 1 (HPCA 1999
    /// Section 5.1) puts them: to a thread released from a block access
    /// fault, which reissues the access that missed (`Proc::wait_for_block`).
    /// Off, every release from a wait pays them (barriers, locks, page
    /// mapping too), as records made before the switch existed ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resume_after_misses_only: bool,
}

impl PdqParams {
    /// What a thread released by the device pays before it goes on, when
    /// the node's protocol processors are of `kind` (see the fields).
    pub fn resume_cycles(&self, kind: PpKind) -> u64 {
        // (Whether a given release pays them: `resume_after_misses_only`.)
        match kind {
            PpKind::Hardware => self.hardware_resume_cycles,
            PpKind::Embedded => self.embedded_resume_cycles,
            PpKind::Smp => self.smp_resume_cycles,
        }
    }
}

/// The node's memory beyond what the caches and the protocol use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryParams {
    /// Bytes of each node's global segment (`Region::Global`): the memory
    /// Split-C's global pointers and spread arrays name, which handlers
    /// for other nodes' messages read and write.
    pub global_segment_bytes: u64,
}

impl MemoryParams {
    /// What a machine without a `[memory]` section has: room for the
    /// spread arrays of the Split-C programs the papers ran.
    pub const DEFAULT_GLOBAL_SEGMENT_BYTES: u64 = 64 << 20;
    /// The largest global segment: as large as the largest cache, which
    /// keeps a node's memory layout within 32-bit line numbers.
    pub const MAX_GLOBAL_SEGMENT_BYTES: u64 = 1 << 30;
}

/// Instructions of the fine-grain DSM's protocol handlers (one field per
/// handler; finegrain-dsm's `DsmConfig::costs`) on this machine's software
/// protocol processors, beyond the memory, device-state and message costs
/// the simulator times itself. A hardware protocol engine runs none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsmParams {
    /// A block access fault at the requester (read the fault state, send
    /// the request).
    pub fault_cycles: u64,
    /// Page allocation at a caching node.
    pub page_cycles: u64,
    /// A request at the home (directory lookup, state change, send).
    pub get_cycles: u64,
    /// An invalidation at a sharer.
    pub inv_cycles: u64,
    /// A fetch at the owner.
    pub fetch_cycles: u64,
    /// A fetched block back at the home.
    pub fetch_reply_cycles: u64,
    /// A block placed at the requester.
    pub data_cycles: u64,
    /// An acknowledgement at the home (of an invalidation or of data).
    pub ack_cycles: u64,
    /// Barrier and lock handlers.
    pub sync_cycles: u64,
}

/// Round-trip latencies the preset was calibrated to; `finegrain calibrate`
/// measures them back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub lmin_null_us: f64,
    pub lmin_fetch_us: f64,
    /// Allowed relative error, e.g. 0.10.
    pub tolerance: f64,
}

/// Every cost of one simulated machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    pub name: String,
    pub description: String,
    pub processor: ProcessorParams,
    pub cache: CacheParams,
    pub bus: BusParams,
    pub ni: NiParams,
    pub network: NetworkParams,
    pub interrupt: InterruptParams,
    pub protocol: ProtocolParams,
    pub compute: ComputeParams,
    pub effects: Effects,
    /// Parallel dispatch hardware; needed by any discipline but serial and
    /// by embedded protocol processors.
    pub pdq: Option<PdqParams>,
    pub calibration: Option<Calibration>,
    /// A communication co-processor per node (the Meiko CS-2's Elan);
    /// needed by policy coprocessor. Absent from the presets and records
    /// of machines without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coprocessor: Option<CoprocessorParams>,
    /// The bare-DMA target a co-processor preset was calibrated to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dma_calibration: Option<DmaCalibration>,
    /// Node memory beyond the caches' and the protocol's. Optional, and
    /// left out of the presets and of records when absent, so machines
    /// described before it existed load and record as they did; absent,
    /// each node has a global segment of
    /// [`MemoryParams::DEFAULT_GLOBAL_SEGMENT_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryParams>,
    /// The fine-grain DSM's handler instructions on this machine (presets
    /// of the DSM papers; absent elsewhere and left out of records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsm: Option<DsmParams>,
    /// Where each parameter's value comes from (the preset's `[ledger]`):
    /// documentation, left out of records and of comparisons.
    #[serde(default, skip_serializing)]
    pub ledger: Ledger,
}

impl MachineConfig {
    /// Rejects parameters the models cannot interpret.
    pub fn validate(&self) -> Result<(), ConfigError> {
        // The name goes into one-line messages and reports.
        if self.name.is_empty() || self.name.chars().any(char::is_control) {
            return Err(ConfigError::invalid(
                "name",
                format!("{:?}", self.name),
                "allowed a non-empty name without control characters",
            ));
        }
        if self.description.chars().any(char::is_control) {
            return Err(ConfigError::invalid(
                "description",
                format!("{:?}", self.description),
                "allowed text without control characters",
            ));
        }
        positive("processor.mhz", self.processor.mhz as u64)?;
        let c = &self.cache;
        if !c.line_bytes.is_power_of_two() || !(8..=4096).contains(&c.line_bytes) {
            return Err(ConfigError::invalid(
                "cache.line_bytes",
                c.line_bytes,
                "allowed a power of two from 8 to 4096",
            ));
        }
        if c.size_bytes == 0 || !c.size_bytes.is_multiple_of(c.line_bytes as u64) || c.size_bytes > (1 << 30) {
            return Err(ConfigError::invalid(
                "cache.size_bytes",
                c.size_bytes,
                "allowed a positive multiple of cache.line_bytes up to 1 GiB",
            ));
        }
        // After the cache's own checks: some magnitudes are bounded by the
        // cache's size, which must be named first if it is what is wrong.
        self.check_magnitudes()?;
        if !matches!(self.ni.word_bytes, 4 | 8) {
            return Err(ConfigError::invalid("ni.word_bytes", self.ni.word_bytes, "allowed 4 or 8"));
        }
        if self.interrupt.entry_percent > 100 {
            return Err(ConfigError::invalid(
                "interrupt.entry_percent",
                self.interrupt.entry_percent,
                "allowed 0..=100",
            ));
        }
        positive("compute.access_interval_cycles", self.compute.access_interval_cycles)?;
        positive("compute.issue_width", self.compute.issue_width as u64)?;
        positive("compute.memory_ports", self.compute.memory_ports as u64)?;
        positive("compute.fp_units", self.compute.fp_units as u64)?;
        if self.compute.write_percent > 100 {
            return Err(ConfigError::invalid("compute.write_percent", self.compute.write_percent, "allowed 0..=100"));
        }
        positive("protocol.table_entry_bytes", self.protocol.table_entry_bytes as u64)?;
        let b = self.protocol.block_bytes;
        if !b.is_power_of_two() || b < self.cache.line_bytes || b as u64 > self.cache.size_bytes {
            return Err(ConfigError::invalid(
                "protocol.block_bytes",
                b,
                "allowed a power of two between cache.line_bytes and cache.size_bytes",
            ));
        }
        let pr = &self.protocol;
        if pr.protocol_thread && pr.context_bytes == 0 {
            return Err(ConfigError::invalid(
                "protocol.context_bytes",
                0,
                "allowed a positive size with protocol_thread = true (a context switch saves and restores a register file)",
            ));
        }
        self.check_address_phase()?;
        self.check_read_latencies()?;
        if let Some(p) = &self.pdq {
            if p.search_window == 0 {
                return Err(ConfigError::invalid("pdq.search_window", 0, "allowed a positive integer"));
            }
        }
        if let Some(c) = &self.coprocessor {
            c.validate()?;
        }
        self.check_global_segment()?;
        if let Some(cal) = &self.dma_calibration {
            cal.validate()?;
        }
        if let Some(cal) = &self.calibration {
            if !(cal.tolerance > 0.0 && cal.tolerance < 1.0) {
                return Err(ConfigError::invalid(
                    "calibration.tolerance",
                    cal.tolerance,
                    "allowed a fraction in (0, 1)",
                ));
            }
            for (field, target) in
                [("calibration.lmin_null_us", cal.lmin_null_us), ("calibration.lmin_fetch_us", cal.lmin_fetch_us)]
            {
                if !(target > 0.0 && target <= 1e6) {
                    return Err(ConfigError::invalid(
                        field,
                        format!("{target:?}"),
                        "allowed a time in microseconds in (0, 1e6]",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The global segment is whole lines (the memory model's unit) and no
    /// larger than the layout's line numbers allow.
    fn check_global_segment(&self) -> Result<(), ConfigError> {
        let bytes = self.global_segment_bytes();
        let max = MemoryParams::MAX_GLOBAL_SEGMENT_BYTES;
        if bytes == 0 || !bytes.is_multiple_of(self.cache.line_bytes as u64) || bytes > max {
            return Err(ConfigError::invalid(
                "memory.global_segment_bytes",
                bytes,
                "allowed a positive multiple of cache.line_bytes up to 1 GiB",
            ));
        }
        Ok(())
    }

    /// A split bus's address phase is positive and fits in every
    /// transaction that carries data, so that each has a data phase.
    fn check_address_phase(&self) -> Result<(), ConfigError> {
        let Some(a) = self.bus.address_phase_cycles else { return Ok(()) };
        let (b, ni) = (&self.bus, &self.ni);
        let carrying = [
            ("bus.memory_occupancy", b.memory_occupancy),
            ("bus.cache_to_cache_occupancy", b.cache_to_cache_occupancy),
            ("bus.writeback_occupancy", b.writeback_occupancy),
            ("ni.uncached_read_occupancy", ni.uncached_read_occupancy),
            ("ni.uncached_write_occupancy", ni.uncached_write_occupancy),
            ("ni.register_read_occupancy", ni.register_read_occupancy),
        ];
        let (field, least) = carrying.into_iter().min_by_key(|&(_, occ)| occ).expect("six occupancies");
        if a == 0 || a >= least {
            let allowed = if least > 1 {
                format!("allowed 1..={} (below every data-carrying occupancy; {field} is {least})", least - 1)
            } else {
                format!("allowed none while {field} is {least} (every data-carrying transaction needs a data phase)")
            };
            return Err(ConfigError::invalid("bus.address_phase_cycles", a, allowed));
        }
        Ok(())
    }

    /// A read's requester has its data when the transfer is over: its
    /// latency is at least the bus occupancy that moves the data.
    fn check_read_latencies(&self) -> Result<(), ConfigError> {
        let (b, ni) = (&self.bus, &self.ni);
        let reads = [
            ("bus.memory_latency", b.memory_latency, "bus.memory_occupancy", b.memory_occupancy),
            (
                "bus.cache_to_cache_latency",
                b.cache_to_cache_latency,
                "bus.cache_to_cache_occupancy",
                b.cache_to_cache_occupancy,
            ),
            (
                "ni.uncached_read_latency",
                ni.uncached_read_latency,
                "ni.uncached_read_occupancy",
                ni.uncached_read_occupancy,
            ),
            (
                "ni.register_read_latency",
                ni.register_read_latency,
                "ni.register_read_occupancy",
                ni.register_read_occupancy,
            ),
        ];
        match reads.into_iter().find(|&(_, lat, _, occ)| lat < occ) {
            Some((field, lat, occupancy, occ)) => Err(ConfigError::invalid(
                field,
                lat,
                format!("allowed at least {occupancy} ({occ}): a read is over once the bus has moved its data"),
            )),
            None => Ok(()),
        }
    }

    /// Bytes of a compute thread's private segment (as large as its cache).
    pub fn segment_bytes(&self) -> u64 {
        self.cache.size_bytes
    }

    /// Bytes of each node's global segment (`Region::Global`).
    pub fn global_segment_bytes(&self) -> u64 {
        self.memory.as_ref().map_or(MemoryParams::DEFAULT_GLOBAL_SEGMENT_BYTES, |m| m.global_segment_bytes)
    }

    /// Protocol blocks in one segment.
    pub fn blocks_per_segment(&self) -> u64 {
        self.segment_bytes() / self.protocol.block_bytes as u64
    }

    /// Lines in one processor's cache.
    pub fn cache_lines(&self) -> u64 {
        self.cache.size_bytes / self.cache.line_bytes as u64
    }

    pub fn cycles_to_us(&self, cycles: f64) -> f64 {
        cycles / self.processor.mhz as f64
    }

    pub fn us_to_cycles(&self, us: f64) -> f64 {
        us * self.processor.mhz as f64
    }
}

impl MachineConfig {
    /// Every cost in cycles is at most [`MAX_CYCLES`], and every size in
    /// the protocol section at most the cache. Walks the serialized preset,
    /// so a field added later is covered by its name alone.
    fn check_magnitudes(&self) -> Result<(), ConfigError> {
        let tree = toml::Value::try_from(self).map_err(|_| {
            // Serialized again to learn which field: a value TOML cannot
            // hold (a run record's JSON can).
            let mut text = String::new();
            let field = serde_path_to_error::serialize(self, toml::Serializer::new(&mut text))
                .err()
                .map_or_else(|| "preset".to_string(), |e| e.path().to_string());
            ConfigError::invalid(
                &field,
                "a value beyond 2^63",
                format!("costs are allowed at most {MAX_CYCLES} cycles, and no field holds more than 2^63-1"),
            )
        })?;
        let mut fields = Vec::new();
        flatten("", &tree, &mut fields);
        for (field, v) in fields {
            let cost =
                ["_cycles", "_latency", "_occupancy", "_per_word", "_per_byte"].iter().any(|s| field.ends_with(s));
            if cost && v > MAX_CYCLES as i64 {
                return Err(ConfigError::invalid(&field, v, format!("allowed at most {MAX_CYCLES} cycles")));
            }
            if field.starts_with("protocol.") && field.ends_with("_bytes") && v as u64 > self.cache.size_bytes {
                return Err(ConfigError::invalid(
                    &field,
                    v,
                    format!("allowed at most cache.size_bytes ({})", self.cache.size_bytes),
                ));
            }
            if cost || field.starts_with("protocol.") && field.ends_with("_bytes") {
                continue;
            }
            // Every other integer must have a bound: a count that
            // multiplies a cost (words per message) could otherwise wrap.
            match COUNT_BOUNDS.iter().find(|(name, _)| *name == field) {
                Some(&(_, Some(max))) if v > max => {
                    return Err(ConfigError::invalid(&field, v, format!("allowed at most {max}")));
                }
                Some(_) => {}
                None => {
                    return Err(ConfigError::invalid(
                        &field,
                        v,
                        "a field with a known bound (this integer has none: give it one in config.rs)",
                    ))
                }
            }
        }
        Ok(())
    }
}

/// Bounds of the preset's integers that are neither costs nor protocol
/// sizes; None where `validate` has a finer rule of its own.
const COUNT_BOUNDS: [(&str, Option<i64>); 23] = [
    ("processor.mhz", Some(1_000_000)),
    ("cache.size_bytes", None),
    ("cache.line_bytes", None),
    ("ni.word_bytes", None),
    ("ni.header_words", Some(64)),
    ("interrupt.entry_percent", None),
    ("compute.write_percent", None),
    ("compute.issue_width", Some(64)),
    ("compute.memory_ports", Some(64)),
    ("compute.fp_units", Some(64)),
    ("pdq.search_window", Some(1 << 20)),
    ("pdq.affinity_passes", Some(1 << 20)),
    ("coprocessor.mips", None),
    ("coprocessor.icache_words", None),
    ("coprocessor.word_bytes", None),
    ("coprocessor.dma_descriptor_words", None),
    ("coprocessor.dma_link_mb_per_s", None),
    ("coprocessor.dma_packet_bytes", None),
    ("coprocessor.dispatch_instructions", None),
    ("coprocessor.send_thread_instructions", None),
    ("coprocessor.completion_instructions", None),
    ("coprocessor.handler_instructions", None),
    ("memory.global_segment_bytes", None),
];

/// The integer leaves of `v` with their dotted names.
fn flatten(prefix: &str, v: &toml::Value, out: &mut Vec<(String, i64)>) {
    match v {
        toml::Value::Table(t) => {
            for (k, child) in t {
                let name = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&name, child, out);
            }
        }
        toml::Value::Integer(i) => out.push((prefix.to_string(), *i)),
        _ => {}
    }
}

fn positive(field: &str, v: u64) -> Result<(), ConfigError> {
    if v == 0 {
        Err(ConfigError::invalid(field, v, "allowed a positive integer"))
    } else {
        Ok(())
    }
}
