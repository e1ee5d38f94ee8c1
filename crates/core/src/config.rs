//! Machine, topology and policy configuration: serde types read from TOML,
//! validated so bad input gets a one-line error naming the field and what is
//! allowed.
//!
//! A machine preset (`presets/<name>.toml`) holds every cost the models use,
//! in processor cycles unless the name says otherwise. Presets are data, not
//! code: the files are embedded at build time so the binary works from any
//! directory, and a path to another TOML file works too.

use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// Configuration problems, each rendered as one line.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("invalid {field} = {value}: {allowed}")]
    Invalid { field: String, value: String, allowed: String },
    #[error("unknown preset '{name}': allowed {allowed}")]
    UnknownPreset { name: String, allowed: String },
    #[error("malformed TOML in {origin}: {message}")]
    Toml { origin: String, message: String },
    /// A workload's own check, which names the field itself.
    #[error("{0}")]
    Workload(String),
}

impl ConfigError {
    pub fn invalid(field: &str, value: impl fmt::Display, allowed: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { field: field.to_string(), value: value.to_string(), allowed: allowed.into() }
    }

    /// Converts a TOML parse error into a single line with its location;
    /// `table` is the table it arose in ("" or "." for the top level).
    pub fn from_toml(origin: &str, text: &str, err: &toml::de::Error, table: &str) -> ConfigError {
        let mut message = plain_types(&err.message().replace('\n', " "));
        if message.starts_with("missing field") && !matches!(table, "" | ".") {
            message = format!("{} in [{table}]", message.trim());
        }
        // A missing key is the whole document's fault: its span says
        // nothing about where the key should have been.
        let location = err
            .span()
            .filter(|_| !message.starts_with("missing field"))
            .map(|s| {
                let start = s.start.min(text.len());
                let line = text[..start].matches('\n').count() + 1;
                // The line itself names the key and the value at fault.
                let source = text.lines().nth(line - 1).unwrap_or("").trim();
                let source: String = source.chars().take(60).collect();
                if source.is_empty() {
                    format!("line {line}: ")
                } else {
                    format!("line {line} (`{source}`): ")
                }
            })
            .unwrap_or_default();
        ConfigError::Toml { origin: origin.to_string(), message: format!("{location}{}", message.trim()) }
    }
}

/// TOML's words for what serde says: Rust type names, and the parser's own
/// phrases.
fn plain_types(message: &str) -> String {
    plain_type_names(message, "2^63-1 (the largest TOML integer)")
        // An enum's field holding a number or a list: the words it allows
        // are in the unknown-variant error a quoted wrong word gets.
        .replace("wanted string or table", "expected a quoted word")
        .replace("number too large to fit in target type", "number too large for TOML, whose integers stop at 2^63-1")
}

/// serde names Rust types in what it expected; says what a file may hold
/// instead. `largest` is the largest whole number the format can write.
pub fn plain_type_names(message: &str, largest: &str) -> String {
    let mut m = message.to_string();
    for (rust, plain) in [
        ("expected u64", format!("expected a whole number from 0 to {largest}")),
        ("expected usize", format!("expected a whole number from 0 to {largest}")),
        ("expected u32", "expected a whole number from 0 to 2^32-1".into()),
        ("expected u16", "expected a whole number from 0 to 65535".into()),
        ("expected u8", "expected a whole number from 0 to 255".into()),
        ("expected f64", "expected a number".into()),
        ("expected variant identifier", "expected a quoted kind name".into()),
        ("expected string or map", "expected a quoted word or a group of named fields".into()),
    ] {
        m = m.replace(rust, &plain);
    }
    // "expected struct CacheParams": the user sees a group of named fields
    // (a TOML table, a JSON object), not a Rust type.
    for (rust, plain) in [
        ("expected struct ", "expected a group of named fields"),
        ("expected internally tagged enum ", "expected a group of named fields with its \"kind\""),
    ] {
        m = replace_type_name(&m, rust, plain);
    }
    m
}

/// Replaces every `prefix` followed by a Rust type name with `plain`.
fn replace_type_name(message: &str, prefix: &str, plain: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        out.push_str(plain);
        let after = &rest[at + prefix.len()..];
        let name_len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
        rest = &after[name_len..];
    }
    out.push_str(rest);
    out
}

/// Most bytes an input file (preset, configuration, experiment, run
/// record) may hold: the largest real one is a run record of a few hundred
/// KB, and a device such as /dev/zero would otherwise be read until memory
/// runs out.
pub const INPUT_FILE_LIMIT: u64 = 16 << 20;

/// Reads a UTF-8 input file of at most [`INPUT_FILE_LIMIT`] bytes, without
/// a leading byte-order mark.
pub fn read_input(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?.take(INPUT_FILE_LIMIT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > INPUT_FILE_LIMIT {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} MiB, the most an input file may hold", INPUT_FILE_LIMIT >> 20),
        ));
    }
    // Editors on some systems start a UTF-8 file with a byte-order mark;
    // the TOML parser skips it, the JSON one would not.
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// Derives independent, reproducible seeds from a run seed and two
/// component numbers (SplitMix64 finalizer).
pub fn mix_seed(seed: u64, a: u64, b: u64) -> u64 {
    let mut z = seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Parses TOML into `T`, mapping errors to a one-line [`ConfigError`].
pub fn parse_toml<T: serde::de::DeserializeOwned>(origin: &str, text: &str) -> Result<T, ConfigError> {
    // The path names the table a missing key belongs in, which the error's
    // own span (the whole table) does not.
    serde_path_to_error::deserialize(toml::Deserializer::new(text))
        .map_err(|e| ConfigError::from_toml(origin, text, e.inner(), &e.path().to_string()))
}

/// Who runs protocol handlers on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Policy {
    /// One processor per node computes and handles messages.
    Single,
    /// `protocol_procs` processors per node only handle messages.
    Fixed { protocol_procs: u32 },
    /// Every processor computes; an idle one acts as protocol processor;
    /// when all compute, an arriving message interrupts one.
    Floating,
}

impl Policy {
    /// Parses the command-line spelling: `single`, `fixed`, `fixed:K`,
    /// `floating`.
    pub fn parse(s: &str) -> Result<Policy, ConfigError> {
        // Names are lower case, as every other name on the command line.
        match s {
            "single" => Ok(Policy::Single),
            "floating" => Ok(Policy::Floating),
            "fixed" => Ok(Policy::Fixed { protocol_procs: 1 }),
            other => {
                if let Some(k) = other.strip_prefix("fixed:") {
                    let protocol_procs = k.parse::<u32>().map_err(|_| {
                        ConfigError::invalid("policy", s, "allowed single, fixed, fixed:K (K >= 1), floating")
                    })?;
                    Ok(Policy::Fixed { protocol_procs })
                } else {
                    Err(ConfigError::invalid("policy", s, "allowed single, fixed, fixed:K (K >= 1), floating"))
                }
            }
        }
    }

    /// Short label used in tables and file names.
    pub fn label(&self) -> String {
        match self {
            Policy::Single => "single".into(),
            Policy::Fixed { protocol_procs: 1 } => "fixed".into(),
            Policy::Fixed { protocol_procs } => format!("fixed:{protocol_procs}"),
            Policy::Floating => "floating".into(),
        }
    }

    /// Processors per node that run application threads.
    pub fn compute_procs(&self, procs_per_node: u32) -> u32 {
        match self {
            Policy::Single | Policy::Floating => procs_per_node,
            Policy::Fixed { protocol_procs } => procs_per_node.saturating_sub(*protocol_procs),
        }
    }

    /// Whether a processor that has nothing to compute may take the acting
    /// protocol-processor role (and computing processors may be interrupted).
    pub fn compute_procs_handle(&self) -> bool {
        !matches!(self, Policy::Fixed { .. })
    }
}

/// Shape of the simulated or native cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub nodes: u32,
    pub procs_per_node: u32,
}

impl Topology {
    /// Checks the topology against the policy.
    pub fn validate(&self, policy: &Policy) -> Result<(), ConfigError> {
        if self.nodes == 0 || self.nodes > MAX_NODES {
            return Err(ConfigError::invalid("nodes", self.nodes, format!("allowed 1..={MAX_NODES}")));
        }
        if self.procs_per_node == 0 || self.procs_per_node > 64 {
            return Err(ConfigError::invalid("procs_per_node", self.procs_per_node, "allowed 1..=64"));
        }
        match *policy {
            Policy::Single if self.procs_per_node != 1 => Err(ConfigError::invalid(
                "procs_per_node",
                self.procs_per_node,
                "policy single runs exactly 1 processor per node (use fixed or floating for more)",
            )),
            Policy::Fixed { protocol_procs } if protocol_procs == 0 => Err(ConfigError::invalid(
                "protocol_procs",
                protocol_procs,
                "policy fixed needs at least 1 dedicated protocol processor",
            )),
            Policy::Fixed { protocol_procs } if self.procs_per_node < 2 => Err(ConfigError::invalid(
                "protocol_procs",
                protocol_procs,
                format!(
                    "policy fixed with {} processor per node leaves no compute processor; it needs procs_per_node \
                     >= 2 (or use single)",
                    self.procs_per_node
                ),
            )),
            Policy::Fixed { protocol_procs } if protocol_procs >= self.procs_per_node => Err(ConfigError::invalid(
                "protocol_procs",
                protocol_procs,
                format!(
                    "policy fixed with {} processors per node leaves no compute processor; allowed 1..={}",
                    self.procs_per_node,
                    self.procs_per_node - 1
                ),
            )),
            _ => Ok(()),
        }
    }
}

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

/// When a processor acting as protocol processor outside Fixed gives the
/// role up once its own work can continue (a peer that is idle always takes
/// it over at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Relinquish {
    /// As soon as its own work can continue and no message waits.
    Eager,
    /// Only to an idle peer (as long as some peer may become idle), so a
    /// node always has a protocol processor and never needs an interrupt.
    Handoff,
    /// Eager while an interrupt (Oint plus taking and giving up the role)
    /// costs less than the mean time between message arrivals at the node,
    /// hand-off otherwise. Giving the role up risks one interrupt per
    /// message that arrives while every processor computes; keeping it
    /// costs at most the processor's own time. The first is cheaper exactly
    /// when interrupt cost x arrival rate < 1.
    Adaptive,
}

impl Relinquish {
    pub fn label(self) -> &'static str {
        match self {
            Relinquish::Eager => "eager",
            Relinquish::Handoff => "handoff",
            Relinquish::Adaptive => "adaptive",
        }
    }

    pub fn parse(s: &str) -> Result<Relinquish, ConfigError> {
        match s {
            "eager" => Ok(Relinquish::Eager),
            "handoff" => Ok(Relinquish::Handoff),
            "adaptive" => Ok(Relinquish::Adaptive),
            _ => Err(ConfigError::invalid("relinquish", s, "allowed eager, handoff, adaptive")),
        }
    }
}

/// Which waiting processor gets a software role lock when its releasing
/// store lands: the waiters' re-reads race on the bus, and the bus
/// arbiter's order decides (see docs/scheduling-micro.md, "Who wins a released role").
/// Records made before the field existed ran under `Lowest`, hence the
/// default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RoleArbitration {
    /// The lowest-numbered idle processor (a fixed-priority arbiter).
    #[default]
    Lowest,
    /// The releaser if it wants the role again (its cache holds the line),
    /// then the others in round-robin order from it (a rotating-priority
    /// arbiter, whose last grant was the releaser's store).
    RoundRobin,
}

impl RoleArbitration {
    pub fn label(self) -> &'static str {
        match self {
            RoleArbitration::Lowest => "lowest",
            RoleArbitration::RoundRobin => "round-robin",
        }
    }
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
    /// When an acting protocol processor with work of its own gives up the
    /// role (Single and Floating).
    pub relinquish: Relinquish,
    /// Who gets a released software role lock among the processors waiting
    /// for it (Floating). Absent in records made before it existed, which
    /// ran under `lowest`.
    #[serde(default)]
    pub role_arbitration: RoleArbitration,
    /// Instructions to mark a request complete for its waiting thread.
    pub completion_cycles: u64,
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
}

/// How a node's protocol processors share its incoming messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Discipline {
    /// One handler at a time per node (Tempest semantics): whoever holds
    /// the node's acting-PP role serves the one queue in order.
    Serial,
    /// Parallel Dispatch Queue: handlers with different synchronization
    /// keys run in parallel on any free protocol processor.
    Pdq,
    /// Every protocol processor takes the next message from one shared
    /// queue; handlers lock their key themselves and busy-wait on conflict.
    SpinLock,
    /// One queue per protocol processor, chosen by a hash of the key.
    Static,
}

impl Discipline {
    pub fn label(self) -> &'static str {
        match self {
            Discipline::Serial => "serial",
            Discipline::Pdq => "pdq",
            Discipline::SpinLock => "spin-lock",
            Discipline::Static => "static",
        }
    }

    pub fn parse(s: &str) -> Result<Discipline, ConfigError> {
        match s {
            "serial" => Ok(Discipline::Serial),
            "pdq" => Ok(Discipline::Pdq),
            "spin-lock" => Ok(Discipline::SpinLock),
            "static" => Ok(Discipline::Static),
            _ => Err(ConfigError::invalid("discipline", s, "allowed serial, pdq, spin-lock, static")),
        }
    }

    /// Whether several protocol processors of a node may handle at once.
    pub fn parallel(self) -> bool {
        self != Discipline::Serial
    }
}

/// What the protocol processors are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum PpKind {
    /// SMP processors (dedicated under Fixed, idle compute processors under
    /// Floating): dispatch through cachable registers and uncached NI
    /// accesses over the memory bus (Hurricane-1, Hurricane-1 Mult).
    Smp,
    /// Processors embedded in the network-interface device, with the
    /// dispatch register and message queues on the device (Hurricane).
    Embedded,
}

impl PpKind {
    pub fn label(self) -> &'static str {
        match self {
            PpKind::Smp => "smp",
            PpKind::Embedded => "embedded",
        }
    }
}

/// A node's dispatch arrangement: the discipline and who runs handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dispatch {
    pub discipline: Discipline,
    pub pp_kind: PpKind,
    /// Floating under a parallel discipline: at most this many idle compute
    /// processors handle at once (the device's dispatch registers). Unset:
    /// every processor of the node may.
    #[serde(default)]
    pub max_servers: Option<u32>,
}

/// Checks a limit on how many idle Floating processors serve at once: only
/// Floating under a parallel discipline has one, and it lies in
/// 1..=`procs_per_node`. The simulator and the native runtime share it.
pub fn check_max_servers(
    max_servers: Option<u32>,
    discipline: Discipline,
    policy: Policy,
    procs_per_node: u32,
) -> Result<(), ConfigError> {
    let Some(m) = max_servers else { return Ok(()) };
    if !(discipline.parallel() && policy == Policy::Floating) {
        return Err(ConfigError::invalid(
            "max_servers",
            m,
            "only floating under a parallel discipline (pdq, spin-lock) has a server limit; leave it unset",
        ));
    }
    if m == 0 || m > procs_per_node {
        return Err(ConfigError::invalid(
            "max_servers",
            m,
            format!("allowed 1..={procs_per_node} (the processors of a node)"),
        ));
    }
    Ok(())
}

impl Default for Dispatch {
    fn default() -> Dispatch {
        Dispatch { discipline: Discipline::Serial, pp_kind: PpKind::Smp, max_servers: None }
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
}

/// Presets shipped with finegrain, embedded at build time.
pub const PRESETS: &[(&str, &str)] = &[
    ("hpca97", include_str!("../../../presets/hpca97.toml")),
    ("hpca99", include_str!("../../../presets/hpca99.toml")),
];

impl MachineConfig {
    /// Loads a shipped preset by name, or a TOML file when `name` ends in
    /// `.toml`.
    pub fn load(name: &str) -> Result<MachineConfig, ConfigError> {
        if name.ends_with(".toml") {
            let text = read_input(std::path::Path::new(name))
                .map_err(|e| ConfigError::invalid("preset", name, format!("cannot read the file: {e}")))?;
            // A preset file named from elsewhere (an experiment, a config
            // file) may not be the one the user has in mind: name it.
            return MachineConfig::from_toml(name, &text).map_err(|e| match e {
                ConfigError::Invalid { field, value, allowed } => {
                    ConfigError::Invalid { field, value, allowed: format!("{allowed} (in preset file {name})") }
                }
                other => other,
            });
        }
        let (_, text) = PRESETS.iter().find(|(n, _)| *n == name).ok_or_else(|| ConfigError::UnknownPreset {
            name: name.to_string(),
            allowed: format!(
                "{} (or a path to a .toml file)",
                PRESETS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        })?;
        MachineConfig::from_toml(&format!("preset {name}"), text)
    }

    pub fn from_toml(origin: &str, text: &str) -> Result<MachineConfig, ConfigError> {
        let m: MachineConfig = parse_toml(origin, text)?;
        require_named(origin, text)?;
        m.validate()?;
        Ok(m)
    }

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
        self.check_address_phase()?;
        self.check_read_latencies()?;
        if let Some(p) = &self.pdq {
            if p.search_window == 0 {
                return Err(ConfigError::invalid("pdq.search_window", 0, "allowed a positive integer"));
            }
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

/// Fields that run records made before them may omit (they ran without
/// them), but a preset must name: the table, the field, what it allows.
const NAMED_IN_PRESETS: [(&str, &str, &str); 3] = [
    ("bus", "address_phase_cycles", "the split bus's address phase, a positive number of cycles"),
    ("protocol", "role_arbitration", "lowest or round-robin"),
    ("pdq", "affinity_passes", "0 for the paper's device, or how often key affinity may pass an entry over"),
];

/// A preset names every field, including those records may omit (in the
/// sections it has: an optional section it leaves out names nothing).
fn require_named(origin: &str, text: &str) -> Result<(), ConfigError> {
    // The text parsed as a preset already, so it parses as a table.
    let Ok(table) = text.parse::<toml::Table>() else { return Ok(()) };
    for (section, field, allowed) in NAMED_IN_PRESETS {
        let named = table.get(section).and_then(toml::Value::as_table).is_none_or(|t| t.contains_key(field));
        if !named {
            return Err(ConfigError::Toml {
                origin: origin.to_string(),
                message: format!(
                    "missing field `{field}` in [{section}]: a preset names it (allowed {allowed}); only run records \
                     made before it existed may leave it out"
                ),
            });
        }
    }
    Ok(())
}

/// The most nodes a machine may have.
pub const MAX_NODES: u32 = 4096;

/// The most cycles any single cost or duration may take (5 s at 200 MHz):
/// beyond it a run could not finish, and sums of costs could overflow the
/// 64-bit clock.
pub const MAX_CYCLES: u64 = 1_000_000_000;

/// The most requests a run may make (at a million simulated messages per
/// second, half an hour).
pub const MAX_REQUESTS: u64 = 1_000_000_000;

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
            let cost = ["_cycles", "_latency", "_occupancy", "_per_word"].iter().any(|s| field.ends_with(s));
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
const COUNT_BOUNDS: [(&str, Option<i64>); 9] = [
    ("processor.mhz", Some(1_000_000)),
    ("cache.size_bytes", None),
    ("cache.line_bytes", None),
    ("ni.word_bytes", None),
    ("ni.header_words", Some(64)),
    ("interrupt.entry_percent", None),
    ("compute.write_percent", None),
    ("pdq.search_window", Some(1 << 20)),
    ("pdq.affinity_passes", Some(1 << 20)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_file_is_read_without_its_byte_order_mark() {
        let path = std::env::temp_dir().join(format!("finegrain-bom-{}.toml", std::process::id()));
        std::fs::write(&path, "\u{feff}seed = 3\n").unwrap();
        assert_eq!(read_input(&path).unwrap(), "seed = 3\n");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn shipped_presets_load() {
        for (name, _) in PRESETS {
            MachineConfig::load(name).unwrap();
        }
    }

    #[test]
    fn rust_type_names_become_plain_words() {
        let m = plain_type_names(
            "a: invalid type: integer `5`, expected struct PdqParams; b: expected internally tagged enum Policy at line 1",
            "2^64-1",
        );
        assert_eq!(
            m,
            "a: invalid type: integer `5`, expected a group of named fields; b: expected a group of named fields with its \"kind\" at line 1"
        );
    }

    #[test]
    fn unknown_preset_lists_the_allowed_ones() {
        let e = MachineConfig::load("nope").unwrap_err().to_string();
        assert!(e.starts_with("unknown preset 'nope': allowed hpca97, hpca99"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn malformed_toml_is_one_line_with_a_location() {
        let e = MachineConfig::from_toml("x.toml", "name = \"a\"\n[cache\n").unwrap_err().to_string();
        assert!(e.starts_with("malformed TOML in x.toml: line 2"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn a_value_of_the_wrong_type_names_its_line_and_what_is_allowed() {
        let text = PRESETS[0].1.replace("mhz = 200", "mhz = 2.5e2");
        let e = MachineConfig::from_toml("x.toml", &text).unwrap_err().to_string();
        assert!(e.contains("(`mhz = 2.5e2`)") && e.contains("expected a whole number from 0 to 2^32-1"), "{e}");
        let text = PRESETS[0].1.split("[effects]").next().unwrap();
        let e = MachineConfig::from_toml("x.toml", text).unwrap_err().to_string();
        assert!(e.ends_with("x.toml: missing field `effects`"), "no misleading line: {e}");
    }

    #[test]
    fn unknown_field_is_named() {
        let text = PRESETS[0].1.replace("[cache]", "[cache]\nsize_kb = 3");
        let e = MachineConfig::from_toml("x.toml", &text).unwrap_err().to_string();
        assert!(e.contains("size_kb"), "{e}");
    }

    #[test]
    fn a_name_that_would_break_a_line_is_refused() {
        let mut m = MachineConfig::load("hpca97").unwrap();
        m.name = "x\ny".into();
        let e = m.validate().unwrap_err().to_string();
        assert_eq!(e, r#"invalid name = "x\ny": allowed a non-empty name without control characters"#);
    }

    #[test]
    fn bad_line_size_names_field_and_allowed_values() {
        let mut m = MachineConfig::load("hpca97").unwrap();
        m.cache.line_bytes = 48;
        let e = m.validate().unwrap_err().to_string();
        assert_eq!(e, "invalid cache.line_bytes = 48: allowed a power of two from 8 to 4096");
    }

    #[test]
    fn a_split_bus_address_phase_must_leave_every_data_transfer_a_data_phase() {
        let mut m = MachineConfig::load("hpca97").unwrap();
        let refused = "allowed 1..=3 (below every data-carrying occupancy; ni.uncached_read_occupancy is 4)";
        for bad in [0, 4, 9] {
            m.bus.address_phase_cycles = Some(bad);
            let e = m.validate().unwrap_err().to_string();
            assert_eq!(e, format!("invalid bus.address_phase_cycles = {bad}: {refused}"));
        }
        m.bus.address_phase_cycles = Some(1);
        m.validate().unwrap();
    }

    #[test]
    fn a_read_cannot_be_over_before_the_bus_has_moved_its_data() {
        let mut m = MachineConfig::load("hpca97").unwrap();
        m.bus.memory_latency = 5;
        let e = m.validate().unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid bus.memory_latency = 5: allowed at least bus.memory_occupancy (10): a read is over once the bus \
             has moved its data"
        );
    }

    #[test]
    fn a_preset_names_the_fields_old_records_may_leave_out() {
        let text = PRESETS[0].1;
        for (line, says) in [
            ("address_phase_cycles = 2", "missing field `address_phase_cycles` in [bus]: a preset names it"),
            ("role_arbitration = \"round-robin\"", "missing field `role_arbitration` in [protocol]: a preset names it"),
        ] {
            assert!(text.contains(line), "{line}");
            let e = MachineConfig::from_toml("x.toml", &text.replace(line, "")).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("allowed"), "{e}");
        }
        // A [pdq] section names key affinity; a preset without one names
        // nothing of it.
        let pdq = PRESETS.iter().find(|(name, _)| *name == "hpca99").expect("hpca99 is shipped").1;
        let e = MachineConfig::from_toml("x.toml", &pdq.replace("affinity_passes = 0", "")).unwrap_err().to_string();
        assert!(e.contains("missing field `affinity_passes` in [pdq]: a preset names it"), "{e}");
        assert!(!text.contains("[pdq]") && MachineConfig::from_toml("x.toml", text).is_ok());
    }

    #[test]
    fn topology_rules() {
        let t = |n, p| Topology { nodes: n, procs_per_node: p };
        assert!(t(2, 1).validate(&Policy::Single).is_ok());
        assert!(t(2, 0).validate(&Policy::Floating).unwrap_err().to_string().contains("procs_per_node = 0"));
        let e = t(2, 2).validate(&Policy::Single).unwrap_err().to_string();
        assert!(e.starts_with("invalid procs_per_node = 2: policy single runs exactly 1 processor per node"), "{e}");
        let e = t(2, 2).validate(&Policy::Fixed { protocol_procs: 2 }).unwrap_err().to_string();
        assert!(e.contains("leaves no compute processor"), "{e}");
        assert!(t(2, 3).validate(&Policy::Fixed { protocol_procs: 2 }).is_ok());
        let e = t(0, 3).validate(&Policy::Floating).unwrap_err().to_string();
        assert_eq!(e, format!("invalid nodes = 0: allowed 1..={MAX_NODES}"));
    }

    #[test]
    fn policy_spellings() {
        assert_eq!(Policy::parse("fixed").unwrap(), Policy::Fixed { protocol_procs: 1 });
        // Names are lower case, like every other name.
        let e = Policy::parse("Fixed").unwrap_err().to_string();
        assert_eq!(e, "invalid policy = Fixed: allowed single, fixed, fixed:K (K >= 1), floating");
        assert_eq!(Policy::parse("fixed:3").unwrap(), Policy::Fixed { protocol_procs: 3 });
        assert_eq!(Policy::parse("floating").unwrap(), Policy::Floating);
        let e = Policy::parse("round-robin").unwrap_err().to_string();
        assert!(e.contains("allowed single, fixed, fixed:K"), "{e}");
        assert_eq!(Policy::Fixed { protocol_procs: 2 }.label(), "fixed:2");
        assert_eq!(Policy::Fixed { protocol_procs: 2 }.compute_procs(5), 3);
    }
}
