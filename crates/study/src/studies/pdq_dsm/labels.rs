//! What one run of the pdq-dsm study is: its labels, the id they make,
//! and the check that they describe the run's configuration.

use crate::record::{describe_value, Labels};
use finegrain_apps::WorkloadSpec;
use finegrain_core::config::ServingSystem;
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};

/// A run beside the paper's grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// S-COMA on one processor (the speedups' base).
    Uniprocessor,
    /// The PDQ search engine hands a processor a key it served last when
    /// the window holds one (not in the paper's device).
    Affinity,
    /// The modern machine.
    Modern,
}

impl Variant {
    pub fn label(self) -> &'static str {
        match self {
            Variant::Uniprocessor => "uniprocessor",
            Variant::Affinity => "affinity",
            Variant::Modern => "modern",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLabels {
    pub app: String,
    pub system: ServingSystem,
    pub nodes: u32,
    /// Compute processors per node.
    pub procs: u32,
    pub block_bytes: u32,
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<Variant>,
}

impl Labels for RunLabels {
    type Measures = finegrain_apps::dsm::spec::DsmMeasures;

    fn id(&self) -> String {
        let variant = self.variant.map_or(String::new(), |v| format!("-{}", v.label()));
        format!("{}-{}-{}x{}-{}B{variant}", self.app, self.system.label(), self.nodes, self.procs, self.block_bytes)
    }

    fn describe(&self, c: &SimConfig, workload: &WorkloadSpec) -> Result<(), String> {
        let WorkloadSpec::Dsm(d) = workload else {
            return Err(format!("it is a {} run labelled as a shared-memory one", workload.description()));
        };
        describe_value("app", &self.app.as_str(), &d.program.label())?;
        describe_value("system", &Some(self.system), &ServingSystem::of_run(&c.run))?;
        describe_value("nodes", &self.nodes, &c.run.topology.nodes)?;
        describe_value("procs", &self.procs, &c.run.policy.compute_procs(c.run.topology.procs_per_node))?;
        describe_value("block_bytes", &self.block_bytes, &d.dsm.block_bytes)?;
        describe_value("seed", &self.seed, &c.run.seed)?;
        let affinity = c.machine.pdq.as_ref().map_or(0, |p| p.affinity_passes) > 0;
        describe_value("affinity", &(self.variant == Some(Variant::Affinity)), &affinity)
    }
}
