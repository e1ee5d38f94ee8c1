//! One simulation's full configuration: machine, topology, policy, seed.
//! Serialised into every run record so the run can be regenerated.

use finegrain_core::{ConfigError, MachineConfig, Policy, Topology};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub machine: MachineConfig,
    pub topology: Topology,
    pub policy: Policy,
    pub seed: u64,
}

impl SimConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.machine.validate()?;
        self.topology.validate(&self.policy)
    }
}
