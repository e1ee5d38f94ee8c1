//! The coprocessor study: Schauser, Scheiman, Ferguson & Kolano (IPPS
//! 1996) on the co-processor model. Table 1 (Section 5.1: the null Active
//! Message ping-pong under the main-processor and co-processor libraries
//! beside the bare DMA flag), Figure 3 and the bulk bandwidth (Section
//! 5.2: Split-C's primitives under three libraries) and Table 2 (Section
//! 5.3: the Split-C programs under the main-processor and the optimized
//! co-processor library), with the verdicts on the paper's three claims
//! computed from the measured data.
//!
//! - `grid`: the experiment file and its checks;
//! - `plan`: reading and checking it, and the runs it makes;
//! - `labels`: what a run is (its record's labels and id);
//! - `runs`: the finished runs in us, and CSV rows;
//! - `claims`: the claims, the tables as measured, and the checks;
//! - `report`: the figures and the report's own sections.

mod claims;
mod grid;
mod labels;
mod plan;
mod report;
mod runs;

pub use claims::{Figure3, Row, Table1, Table2};
pub use grid::{Experiment, Grid};
pub use labels::{Part, RunLabels, Variant};
pub use runs::{Measured, Run};

use crate::claim::Claim;
use crate::experiment::{NoFields, Source};
use crate::figures::Figure;
use crate::report::Section;
use crate::study::{Planned, Study};
use anyhow::Result;
use std::path::Path;

/// The study, loaded: its experiment and its runs, planned and checked.
pub struct Coprocessor {
    exp: Experiment,
    planned: Vec<Planned<RunLabels>>,
}

impl Study for Coprocessor {
    const NAME: &'static str = grid::NAME;
    const EXPERIMENT: &'static str = include_str!("../../../../../experiments/coprocessor.toml");
    type Own = NoFields;
    type Grid = Grid;
    type Labels = RunLabels;
    type Run = Run;

    fn load(exp: Experiment, src: &Source) -> Result<Coprocessor> {
        let planned = plan::load(&exp, src)?;
        Ok(Coprocessor { exp, planned })
    }

    fn experiment(&self) -> &Experiment {
        &self.exp
    }

    fn plan(&self) -> Result<Vec<Planned<RunLabels>>> {
        Ok(self.planned.clone())
    }

    fn claims(&self, runs: &[Run]) -> Vec<Claim> {
        claims::evaluate(runs)
    }

    fn figures(&self, runs: &[Run], out: &Path) -> Result<Vec<Figure>> {
        report::draw_figures(out, runs)
    }

    fn setup(&self, _runs: &[Run]) -> String {
        report::setup(&self.exp, self.exp.grid())
    }

    fn sections(&self, runs: &[Run], claims: &[Claim]) -> Vec<Section> {
        report::sections(runs, self.exp.grid(), claims)
    }
}
