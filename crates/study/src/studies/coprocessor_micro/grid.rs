//! The experiment file of the co-processor study: its grids and their
//! checks.

use crate::experiment::MAX_REQUESTS;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// The study's name: the experiment file's `study`, and every record's.
pub const NAME: &str = "coprocessor-micro";

/// The most replicates (seeds) per library a grid may ask for.
pub const MAX_REPLICATES: u32 = 64;

/// The most ping-pong rounds the bare DMA flag time may average over.
pub const MAX_DMA_ROUNDS: u64 = 100_000;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    pub paper: String,
    pub study: String,
    pub preset: String,
    pub seed: u64,
    pub full: Grid,
    pub quick: Grid,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    /// Seeds (replicates) per library.
    pub replicates: u32,
    /// Null round trips the single requester makes in each run.
    pub round_trips: u64,
    /// Ping-pong rounds the bare DMA flag's one-way time is averaged over.
    pub dma_rounds: u64,
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
        Ok(())
    }
}
