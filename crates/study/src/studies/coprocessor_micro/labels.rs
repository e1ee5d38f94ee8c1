//! What one run of the co-processor study is: its labels, the id they
//! make, the check that they describe the run's configuration, and the
//! bare DMA flag time `rerun` measures again.

use super::grid::MAX_DMA_ROUNDS;
use crate::record::{describe_value, Labels, Remeasured};
use finegrain_apps::micro::Protocol;
use finegrain_apps::WorkloadSpec;
use finegrain_core::{CoprocLibrary, Policy};
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLabels {
    /// The Active Message library the null ping-pong runs under.
    pub library: CoprocLibrary,
    /// Which of the study's seeds (replicates) the run is.
    pub replicate: u32,
    pub seed: u64,
    /// Null round trips the single requester makes.
    pub round_trips: u64,
    /// Ping-pong rounds of the bare DMA flag time below.
    pub dma_rounds: u64,
    /// One-way time of a flag moved by bare DMA on the run's machine, in
    /// cycles: half the round trip of `dma_rounds` scripted ping-pongs
    /// (no seed enters it); Table 1's DMA row.
    pub dma_one_way_cycles: f64,
}

/// The one-way time, in cycles, of a flag moved by bare DMA on `c`'s machine.
pub fn dma_one_way(c: &SimConfig, rounds: u64) -> anyhow::Result<f64> {
    Ok(finegrain_sim::coproc::dma_flag_one_way(&c.machine, rounds)?)
}

impl Labels for RunLabels {
    /// The library and the replicate.
    fn id(&self) -> String {
        format!("{}-r{}", self.library.label(), self.replicate)
    }

    fn describe(&self, c: &SimConfig, workload: &WorkloadSpec) -> Result<(), String> {
        let WorkloadSpec::Micro(w) = workload else {
            return Err(format!("it is a {} run, which the co-processor study never makes", workload.description()));
        };
        if !(self.dma_one_way_cycles > 0.0 && self.dma_one_way_cycles.is_finite()) {
            return Err(format!("dma_one_way_cycles = {}: allowed a positive number", self.dma_one_way_cycles));
        }
        if self.dma_rounds == 0 || self.dma_rounds > MAX_DMA_ROUNDS {
            return Err(format!("dma_rounds = {}: allowed 1..={MAX_DMA_ROUNDS}", self.dma_rounds));
        }
        describe_value("seed", &self.seed, &c.run.seed)?;
        describe_value("library", &Policy::Coprocessor { library: self.library }.label(), &c.run.policy.label())?;
        describe_value("round_trips", &self.round_trips, &w.requests_per_node)?;
        // The study's ping-pong: one requester, null handlers, back to back,
        // on two nodes of one processor each.
        describe_value("protocol", &Protocol::Null, &w.protocol)?;
        describe_value("single_requester", &true, &w.single_requester)?;
        describe_value("mean_compute_cycles", &0.0, &w.mean_compute_cycles)?;
        describe_value("nodes", &2, &c.run.topology.nodes)?;
        describe_value("procs_per_node", &1, &c.run.topology.procs_per_node)?;
        Ok(())
    }

    fn remeasure(&self, config: &SimConfig, _workload: &WorkloadSpec) -> anyhow::Result<Vec<Remeasured>> {
        let now = dma_one_way(config, self.dma_rounds)?;
        Ok(vec![Remeasured { name: "dma_one_way_cycles", recorded: self.dma_one_way_cycles, now }])
    }
}
