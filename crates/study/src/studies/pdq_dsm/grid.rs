//! The experiment file of the pdq-dsm study: its grids and their checks.

use anyhow::{bail, Result};
use finegrain_apps::dsm::spec::{ProgramSpec, PROGRAMS};
use finegrain_apps::splitc::spec::Size;
use finegrain_core::config::ServingSystem;
use serde::{Deserialize, Serialize};

/// The study's name: the experiment file's `study`, and every record's.
pub const NAME: &str = "pdq-dsm";

/// The most compute processors a grid's machine may have (the
/// simulator's host memory is the real bound).
pub const MAX_PROCESSORS: u32 = 256;

/// The study's experiment file: the common header, the top-level fields
/// below, and its grids.
pub type Experiment = crate::experiment::Experiment<Own, Grid>;

/// The machine of today the beyond-the-paper runs use.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Own {
    pub modern_preset: String,
}

/// One machine shape: nodes x compute processors per node, block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeSpec {
    pub nodes: u32,
    pub procs: u32,
    pub block_bytes: u32,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    /// The applications' inputs.
    pub size: Size,
    pub apps: Vec<String>,
    pub systems: Vec<ServingSystem>,
    /// Machine shapes every system runs every application on (Figure 7's
    /// baseline, Figures 8-9's clusterings, Figures 10-11's block sizes).
    pub shapes: Vec<ShapeSpec>,
    /// S-COMA on one processor, for Table 2's speedups.
    pub uniprocessor: bool,
    /// Beyond the paper: the baseline again with the PDQ search engine's
    /// key affinity on (this many passes), for every system but S-COMA;
    /// 0 for none.
    pub affinity_passes: u32,
    /// Beyond the paper: the baseline on the modern machine, every system.
    pub modern: bool,
}

impl Grid {
    pub(super) fn validate(&self, table: &str) -> Result<()> {
        if self.apps.is_empty() || self.systems.is_empty() || self.shapes.is_empty() {
            bail!("invalid {table}: apps, systems and shapes each need at least one entry");
        }
        crate::experiment::check_distinct(&format!("{table}.apps"), &self.apps, |a| a.clone())?;
        crate::experiment::check_distinct(&format!("{table}.systems"), &self.systems, |s| s.label())?;
        for app in &self.apps {
            ProgramSpec::named(app, Size::Tiny, 0)
                .map_err(|_| anyhow::anyhow!("invalid {table}.apps: {app}; allowed {}", PROGRAMS.join(", ")))?;
        }
        if !self.systems.contains(&ServingSystem::Scoma) {
            bail!("invalid {table}.systems: s-coma missing; every performance is normalized to it");
        }
        for s in &self.shapes {
            if s.nodes == 0 || s.procs == 0 || s.nodes * s.procs > MAX_PROCESSORS {
                bail!(
                    "invalid {table}.shapes: {}x{}; allowed 1 or more nodes of 1 or more processors, at most \
                     {MAX_PROCESSORS} in all",
                    s.nodes,
                    s.procs
                );
            }
            if ![32, 64, 128].contains(&s.block_bytes) {
                bail!("invalid {table}.shapes: block_bytes = {}; allowed 32, 64, 128", s.block_bytes);
            }
        }
        Ok(())
    }
}
