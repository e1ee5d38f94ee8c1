//! The simulator as a [`Platform`]: it runs any [`Workload`] on the
//! simulated machine a [`SimConfig`] describes.

use crate::{simulate, RunStats, SimConfig, SimError};
use finegrain_core::{Platform, Ran, Workload};

/// Runs workloads on the machine `config` describes, deterministically.
pub struct Simulator<'c> {
    pub config: &'c SimConfig,
}

impl Platform for Simulator<'_> {
    type Stats = RunStats;
    type Error = SimError;

    fn name(&self) -> &'static str {
        "sim"
    }

    fn run<W: Workload>(&self, workload: &W) -> Result<Ran<W::Output, RunStats>, SimError> {
        let out = simulate(self.config, workload.handlers(), |p| workload.thread(p))?;
        workload.check(&out.results)?;
        Ok(Ran { outputs: out.results, stats: out.stats })
    }
}
