//! One simulation's full configuration: machine, topology, policy, seed.
//! Serialised into every run record so the run can be regenerated.

use finegrain_core::{ConfigError, Discipline, Dispatch, MachineConfig, Policy, PpKind, Topology};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub machine: MachineConfig,
    pub topology: Topology,
    pub policy: Policy,
    /// How each node's protocol processors share its messages (serial and
    /// SMP processors unless set).
    #[serde(default)]
    pub dispatch: Dispatch,
    pub seed: u64,
    /// Record every handler's span in the statistics (for timelines and
    /// tests; costs memory in long runs).
    #[serde(default)]
    pub trace_handlers: bool,
}

impl SimConfig {
    /// A configuration with serial dispatch on SMP processors.
    pub fn new(machine: MachineConfig, topology: Topology, policy: Policy, seed: u64) -> SimConfig {
        SimConfig { machine, topology, policy, dispatch: Dispatch::default(), seed, trace_handlers: false }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.machine.validate()?;
        self.topology.validate(&self.policy)?;
        let d = self.dispatch;
        let needs_pdq = d.discipline.parallel() || d.pp_kind == PpKind::Embedded;
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
        if d.pp_kind == PpKind::Embedded && !matches!(self.policy, Policy::Fixed { .. }) {
            return Err(ConfigError::invalid(
                "pp_kind",
                "embedded",
                "embedded protocol processors are dedicated: use policy fixed:K (K = embedded processors per node)",
            ));
        }
        finegrain_core::config::check_max_servers(
            d.max_servers,
            d.discipline,
            self.policy,
            self.topology.procs_per_node,
        )?;
        if d.discipline == Discipline::Static && self.policy.compute_procs_handle() {
            return Err(ConfigError::invalid(
                "discipline",
                "static",
                "static partitioning needs dedicated protocol processors (policy fixed:K)",
            ));
        }
        // Caches that would not fit in the host's memory are refused here,
        // before a caller prepares anything for the run.
        crate::memory::check_host_memory(&self.machine, self.topology.nodes, self.topology.procs_per_node)
    }
}
