//! The settings of one run that every platform interprets: who handles
//! messages (policy), the topology, how handlers are dispatched, when a
//! processor gives up the protocol role, and the seed's derivation.

use super::{ConfigError, MAX_NODES};
use serde::{Deserialize, Serialize};

/// Derives independent, reproducible seeds from a run seed and two
/// component numbers (SplitMix64 finalizer).
pub fn mix_seed(seed: u64, a: u64, b: u64) -> u64 {
    let mut z = seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
    /// One main processor per node computes; the node's communication
    /// co-processor (the machine's `[coprocessor]`) moves messages, and
    /// runs handlers under the libraries that put them there.
    Coprocessor { library: CoprocLibrary },
}

/// The three communication libraries of the co-processor paper (IPPS 1996,
/// Sections 5.1 and 5.2), selectable per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoprocLibrary {
    /// Handlers run on the main processor, which finds messages when it
    /// polls; the co-processor only moves them (a remote queue of depth
    /// one per destination).
    MainAm,
    /// Generic Active Messages on the co-processor: an arrival's event
    /// wakes the dispatch thread for its source, which runs the handler;
    /// a sender waits for the acknowledgement before its next message to
    /// the same destination.
    CoprocAm,
    /// Split-C specialised for the co-processor: put by DMA, get by a DMA
    /// descriptor triggered at the owner, store as data plus a remote
    /// atomic add; completions wake a thread that updates the counter.
    Optimized,
}

impl CoprocLibrary {
    pub const ALL: [CoprocLibrary; 3] = [CoprocLibrary::MainAm, CoprocLibrary::CoprocAm, CoprocLibrary::Optimized];

    pub fn label(self) -> &'static str {
        match self {
            CoprocLibrary::MainAm => "main-am",
            CoprocLibrary::CoprocAm => "coproc-am",
            CoprocLibrary::Optimized => "optimized",
        }
    }

    pub fn parse(s: &str) -> Result<CoprocLibrary, ConfigError> {
        CoprocLibrary::ALL
            .into_iter()
            .find(|l| l.label() == s)
            .ok_or_else(|| ConfigError::invalid("library", s, "allowed main-am, coproc-am, optimized"))
    }
}

/// What `Policy::parse` accepts, for its errors.
const POLICY_SPELLINGS: &str =
    "allowed single, fixed, fixed:K (K >= 1), floating, coprocessor:main-am, coprocessor:coproc-am, coprocessor:optimized";

impl Policy {
    /// Parses the command-line spelling: `single`, `fixed`, `fixed:K`,
    /// `floating`, `coprocessor:LIBRARY`.
    pub fn parse(s: &str) -> Result<Policy, ConfigError> {
        // Names are lower case, as every other name on the command line.
        match s {
            "single" => Ok(Policy::Single),
            "floating" => Ok(Policy::Floating),
            "fixed" => Ok(Policy::Fixed { protocol_procs: 1 }),
            other => {
                if let Some(k) = other.strip_prefix("fixed:") {
                    let protocol_procs =
                        k.parse::<u32>().map_err(|_| ConfigError::invalid("policy", s, POLICY_SPELLINGS))?;
                    Ok(Policy::Fixed { protocol_procs })
                } else if let Some(l) = other.strip_prefix("coprocessor:") {
                    let library =
                        CoprocLibrary::parse(l).map_err(|_| ConfigError::invalid("policy", s, POLICY_SPELLINGS))?;
                    Ok(Policy::Coprocessor { library })
                } else {
                    Err(ConfigError::invalid("policy", s, POLICY_SPELLINGS))
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
            Policy::Coprocessor { library } => format!("coprocessor:{}", library.label()),
        }
    }

    /// Processors per node that run application threads.
    pub fn compute_procs(&self, procs_per_node: u32) -> u32 {
        match self {
            // The co-processor is a part of the node besides its processors.
            Policy::Single | Policy::Floating | Policy::Coprocessor { .. } => procs_per_node,
            Policy::Fixed { protocol_procs } => procs_per_node.saturating_sub(*protocol_procs),
        }
    }

    /// Whether a processor that has nothing to compute may take the acting
    /// protocol-processor role (and computing processors may be interrupted).
    pub fn compute_procs_handle(&self) -> bool {
        match self {
            Policy::Fixed { .. } => false,
            Policy::Coprocessor { library } => *library == CoprocLibrary::MainAm,
            Policy::Single | Policy::Floating => true,
        }
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
            Policy::Coprocessor { .. } if self.procs_per_node != 1 => Err(ConfigError::invalid(
                "procs_per_node",
                self.procs_per_node,
                "policy coprocessor models one main processor per node beside its co-processor (as the Meiko CS-2)",
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
    /// A finite-state-machine protocol engine on the device (S-COMA,
    /// HPCA 1999 Section 5): each handler action takes a cycle, so only
    /// memory access times count.
    Hardware,
}

impl PpKind {
    pub fn label(self) -> &'static str {
        match self {
            PpKind::Smp => "smp",
            PpKind::Embedded => "embedded",
            PpKind::Hardware => "hardware",
        }
    }

    /// Whether the protocol processors sit on the network-interface device
    /// (and are dedicated: policy fixed).
    pub fn on_device(self) -> bool {
        self != PpKind::Smp
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

/// How a node notices a message that arrives while no processor acts as
/// protocol processor (every one of them computes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Notification {
    /// The network interface interrupts one computing processor (the
    /// machine's interrupt costs apply).
    #[default]
    Interrupt,
    /// Nothing interrupts: a processor notices messages only when it polls
    /// (when it sends, waits for a reply, or reaches a poll site).
    Poll,
}

impl Notification {
    pub fn label(self) -> &'static str {
        match self {
            Notification::Interrupt => "interrupt",
            Notification::Poll => "poll",
        }
    }

    pub fn parse(s: &str) -> Result<Notification, ConfigError> {
        match s {
            "interrupt" => Ok(Notification::Interrupt),
            "poll" => Ok(Notification::Poll),
            other => Err(ConfigError::invalid("notification", other, "allowed interrupt, poll")),
        }
    }
}

/// The settings of one run that every platform interprets: the machine's
/// shape, who handles messages and how they are dispatched, when a
/// processor gives the protocol role up, how a node notices a message, and
/// the seed every random choice derives from. A platform adds its own
/// (the simulator a machine model, the native runtime its rings and
/// threads).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub topology: Topology,
    pub policy: Policy,
    /// How each node's protocol processors share its messages (serial, on
    /// SMP processors, unless set).
    #[serde(default)]
    pub dispatch: Dispatch,
    /// When a processor acting as protocol processor under Floating gives
    /// the role up once its own work can continue.
    pub relinquish: Relinquish,
    #[serde(default)]
    pub notification: Notification,
    pub seed: u64,
}

impl RunConfig {
    /// A run with serial dispatch on SMP processors, the eager relinquish
    /// rule and interrupts.
    pub fn new(topology: Topology, policy: Policy, seed: u64) -> RunConfig {
        RunConfig {
            topology,
            policy,
            dispatch: Dispatch::default(),
            relinquish: Relinquish::Eager,
            notification: Notification::Interrupt,
            seed,
        }
    }

    /// What every platform refuses: a topology the policy cannot run, and
    /// a dispatch arrangement the policy cannot have.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.topology.validate(&self.policy)?;
        let d = self.dispatch;
        if d.pp_kind.on_device() && !matches!(self.policy, Policy::Fixed { .. }) {
            return Err(ConfigError::invalid(
                "pp_kind",
                d.pp_kind.label(),
                format!(
                    "{} protocol processors are dedicated: use policy fixed:K (K = {} processors per node)",
                    d.pp_kind.label(),
                    d.pp_kind.label()
                ),
            ));
        }
        check_max_servers(d.max_servers, d.discipline, self.policy, self.topology.procs_per_node)?;
        if d.discipline == Discipline::Static && self.policy.compute_procs_handle() {
            return Err(ConfigError::invalid(
                "discipline",
                "static",
                "static partitioning needs dedicated protocol processors (policy fixed:K)",
            ));
        }
        Ok(())
    }
}
