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
use crate::experiment::{Header, Source};
use crate::figures::Figure;
use crate::record::RunRecord;
use crate::report::Section;
use crate::study::{Planned, Study};
use anyhow::Result;
use finegrain_core::MachineConfig;
use std::path::Path;

/// The study, loaded: its experiment and the preset's machine.
pub struct Coprocessor {
    exp: Experiment,
    header: Header,
    quick: bool,
    machine: MachineConfig,
}

impl Coprocessor {
    fn grid(&self) -> &Grid {
        if self.quick {
            &self.exp.quick
        } else {
            &self.exp.full
        }
    }
}

impl Study for Coprocessor {
    const NAME: &'static str = grid::NAME;
    const EXPERIMENT: &'static str = include_str!("../../../../../experiments/coprocessor.toml");
    type Labels = RunLabels;
    type Run = Run;

    fn load(src: &Source, quick: bool) -> Result<Coprocessor> {
        let exp = plan::load(src)?;
        let header = crate::experiment::header(src)?;
        let machine = MachineConfig::load(&src.preset(&exp.preset))?;
        Ok(Coprocessor { exp, header, quick, machine })
    }

    fn header(&self) -> &Header {
        &self.header
    }

    fn plan(&self) -> Result<Vec<Planned<RunLabels>>> {
        plan::plan(&self.exp, &self.machine, self.grid())
    }

    fn view(&self, records: Vec<RunRecord<RunLabels>>) -> Vec<Run> {
        records.into_iter().map(Run::of).collect()
    }

    fn record(run: &Run) -> &RunRecord<RunLabels> {
        &run.record
    }

    fn csv_header(&self) -> &'static str {
        runs::CSV_HEADER
    }

    fn csv_row(&self, run: &Run) -> String {
        runs::csv_row(run)
    }

    fn claims(&self, runs: &[Run]) -> Vec<Claim> {
        claims::evaluate(runs)
    }

    fn figures(&self, runs: &[Run], out: &Path) -> Result<Vec<Figure>> {
        report::draw_figures(out, runs)
    }

    fn setup(&self, _runs: &[Run]) -> String {
        report::setup(&self.exp, self.grid())
    }

    fn sections(&self, runs: &[Run], claims: &[Claim]) -> Vec<Section> {
        report::sections(runs, self.grid(), claims)
    }
}
