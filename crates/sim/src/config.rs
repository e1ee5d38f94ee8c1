//! One simulation's full configuration: the run's settings every platform
//! shares ([`RunConfig`]) and the machine model. Serialised into every run
//! record so the run can be regenerated; the record holds it flat
//! (`machine`, `topology`, `policy`, `dispatch`, `relinquish`,
//! `notification`, `seed`), so a field's path is the same whatever platform
//! runs it.

use finegrain_core::{
    ConfigError, CoprocLibrary, Discipline, Dispatch, MachineConfig, Notification, Policy, Relinquish, RunConfig,
    Topology,
};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "Flat", into = "Flat")]
pub struct SimConfig {
    pub run: RunConfig,
    pub machine: MachineConfig,
    /// Record every handler's span in the statistics (for timelines and
    /// tests; costs memory in long runs).
    pub trace_handlers: bool,
}

/// A configuration as a record holds it.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Flat {
    machine: MachineConfig,
    topology: Topology,
    policy: Policy,
    #[serde(default)]
    dispatch: Dispatch,
    relinquish: Relinquish,
    #[serde(default)]
    notification: Notification,
    seed: u64,
    #[serde(default)]
    trace_handlers: bool,
}

impl From<Flat> for SimConfig {
    fn from(f: Flat) -> SimConfig {
        let run = RunConfig {
            topology: f.topology,
            policy: f.policy,
            dispatch: f.dispatch,
            relinquish: f.relinquish,
            notification: f.notification,
            seed: f.seed,
        };
        SimConfig { run, machine: f.machine, trace_handlers: f.trace_handlers }
    }
}

impl From<SimConfig> for Flat {
    fn from(c: SimConfig) -> Flat {
        let r = c.run;
        Flat {
            machine: c.machine,
            topology: r.topology,
            policy: r.policy,
            dispatch: r.dispatch,
            relinquish: r.relinquish,
            notification: r.notification,
            seed: r.seed,
            trace_handlers: c.trace_handlers,
        }
    }
}

impl SimConfig {
    /// A run of `machine` with serial dispatch on SMP processors, the eager
    /// relinquish rule and interrupts (see [`RunConfig::new`]).
    pub fn new(machine: MachineConfig, topology: Topology, policy: Policy, seed: u64) -> SimConfig {
        SimConfig { run: RunConfig::new(topology, policy, seed), machine, trace_handlers: false }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.machine.validate()?;
        self.run.validate()?;
        let d = self.run.dispatch;
        let needs_pdq = d.discipline.parallel() || d.pp_kind.on_device();
        if needs_pdq && self.machine.pdq.is_none() {
            return Err(ConfigError::invalid(
                "dispatch",
                format!("{}/{}", d.discipline.label(), d.pp_kind.label()),
                format!(
                    "preset {} has no [pdq] section; serial dispatch on SMP processors is what it supports",
                    self.machine.name
                ),
            ));
        }
        if let Policy::Coprocessor { library } = self.run.policy {
            self.validate_coprocessor(library)?;
        }
        if self.run.notification != Notification::Interrupt {
            return Err(ConfigError::invalid(
                "notification",
                self.run.notification.label(),
                "the simulator models interrupts only so far; allowed interrupt",
            ));
        }
        // Caches that would not fit in the host's memory are refused here,
        // before a caller prepares anything for the run.
        crate::memory::check_host_memory(&self.machine, self.run.topology.nodes, self.run.topology.procs_per_node)
    }

    /// The most host memory the run's simulated caches may take: runs at
    /// once share [`SimConfig::host_bytes_limit`].
    pub fn host_bytes(&self) -> u64 {
        crate::memory::host_cache_bytes(&self.machine, self.run.topology.nodes, self.run.topology.procs_per_node)
    }

    /// Host memory one run, or the runs of a sweep together, may spend on
    /// simulated caches (three quarters of what this host allows).
    pub fn host_bytes_limit() -> u64 {
        crate::memory::host_cache_bytes_limit()
    }
}

impl SimConfig {
    /// Policy coprocessor: the engine runs the paper's three libraries
    /// (the optimized one on the handlers a library marked with their
    /// `LibraryOp`, Split-C's) on a machine with a co-processor, under the
    /// serial discipline (one main processor per node, which
    /// `Topology::validate` checks).
    fn validate_coprocessor(&self, library: CoprocLibrary) -> Result<(), ConfigError> {
        if self.machine.coprocessor.is_none() {
            return Err(ConfigError::invalid(
                "policy",
                format!("coprocessor:{}", library.label()),
                format!("preset {} has no [coprocessor] section; preset ipps96 has one", self.machine.name),
            ));
        }
        if self.run.dispatch.discipline != Discipline::Serial {
            return Err(ConfigError::invalid(
                "dispatch",
                self.run.dispatch.discipline.label(),
                "policy coprocessor runs one handler at a time per node; allowed serial",
            ));
        }
        Ok(())
    }
}
