//! The experiment file of the co-processor study: its grids and their
//! checks.

use crate::experiment::MAX_REQUESTS;
use anyhow::{bail, Result};
use finegrain_apps::splitc::primitives::{MAX_REPS, MAX_WORDS};
use finegrain_apps::splitc::spec::{ProgramSpec, Size};
use serde::{Deserialize, Serialize};

/// The study's name: the experiment file's `study`, and every record's.
pub const NAME: &str = "coprocessor";

/// The most replicates (seeds) per library a grid may ask for.
pub const MAX_REPLICATES: u32 = 64;

/// The most ping-pong rounds the bare DMA flag time may average over.
pub const MAX_DMA_ROUNDS: u64 = 100_000;

/// The most nodes the programs may run on (the simulator's host memory
/// is the real bound; this keeps an edited file from asking for hours).
pub const MAX_NODES: u32 = 256;

/// The study's experiment file: the common header and its grids.
pub type Experiment = crate::experiment::Experiment<crate::experiment::NoFields, Grid>;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    /// Seeds (replicates) per library and measurement.
    pub replicates: u32,
    /// Table 1: null round trips the single requester makes in each run.
    pub round_trips: u64,
    /// Table 1: ping-pong rounds the bare DMA flag's one-way time is
    /// averaged over.
    pub dma_rounds: u64,
    /// Figure 3: timed repetitions of each one-word primitive and of the
    /// 32-byte bulk store.
    pub primitive_reps: u64,
    /// Bulk bandwidth: words of each bulk put, and how many are timed.
    pub bandwidth_words: u64,
    pub bandwidth_reps: u64,
    /// Table 2: nodes the programs run on, their input, and which run.
    pub nodes: u32,
    pub size: Size,
    pub programs: Vec<String>,
}

impl Grid {
    pub(super) fn validate(&self, table: &str) -> Result<()> {
        if self.replicates == 0 || self.replicates > MAX_REPLICATES {
            bail!("invalid {table}.replicates = {}: allowed 1..={MAX_REPLICATES}", self.replicates);
        }
        if self.round_trips == 0 || self.round_trips > MAX_REQUESTS {
            bail!("invalid {table}.round_trips = {}: allowed 1..={MAX_REQUESTS}", self.round_trips);
        }
        if self.dma_rounds == 0 || self.dma_rounds > MAX_DMA_ROUNDS {
            bail!("invalid {table}.dma_rounds = {}: allowed 1..={MAX_DMA_ROUNDS}", self.dma_rounds);
        }
        for (field, v) in [("primitive_reps", self.primitive_reps), ("bandwidth_reps", self.bandwidth_reps)] {
            if v == 0 || v > MAX_REPS {
                bail!("invalid {table}.{field} = {v}: allowed 1..={MAX_REPS}");
            }
        }
        if self.bandwidth_words < 2 || self.bandwidth_words > MAX_WORDS {
            bail!("invalid {table}.bandwidth_words = {}: allowed 2..={MAX_WORDS}", self.bandwidth_words);
        }
        if self.nodes < 2 || self.nodes > MAX_NODES {
            bail!("invalid {table}.nodes = {}: allowed 2..={MAX_NODES}", self.nodes);
        }
        let mut seen = std::collections::BTreeSet::new();
        for p in &self.programs {
            let spec =
                ProgramSpec::named(p, self.size).map_err(|e| anyhow::anyhow!("invalid {table}.programs: {e}"))?;
            if matches!(spec, ProgramSpec::Primitives(_)) {
                bail!(
                    "invalid {table}.programs: {p} is a primitive, which the grid times on its own; allowed programs"
                );
            }
            if !seen.insert(p) {
                bail!("invalid {table}.programs: {p} twice; allowed each program once");
            }
        }
        Ok(())
    }
}
