//! The native runtime as a [`Platform`]: it runs any [`Workload`] on real
//! threads in this process, laid out as an [`RtConfig`] says.

use crate::config::RtConfig;
use crate::runtime::{run, RtError};
use crate::stats::RtStats;
use finegrain_core::{Platform, Ran, Workload};

/// Runs workloads on real threads, one group of threads per node.
pub struct Native<'c> {
    pub config: &'c RtConfig,
}

impl Platform for Native<'_> {
    type Stats = RtStats;
    type Error = RtError;

    fn name(&self) -> &'static str {
        "native"
    }

    fn run<W: Workload>(&self, workload: &W) -> Result<Ran<W::Output, RtStats>, RtError> {
        let out = run(self.config, workload.handlers(), |p| workload.thread(p))?;
        workload.check(&out.results)?;
        Ok(Ran { outputs: out.results, stats: out.stats })
    }
}
