//! The pdq-micro study: fetch&add handlers under serial dispatch, the
//! Parallel Dispatch Queue, spin-locks inside handlers and static
//! partitioning, on embedded, dedicated SMP and idle compute protocol
//! processors (Falsafi & Wood, HPCA 1999), with the verdicts on five
//! claims computed from the measured data.
//!
//! - `grid`: the experiment file and the sweeps of the study;
//! - `plan`: reading and checking it, and the runs it makes;
//! - `labels`: what a run is (its record's labels and id);
//! - `runs`: the finished runs with the home's measures, and CSV rows;
//! - `claims`: the five claims and their checks;
//! - `report`: figures and the report's own sections.

mod claims;
mod grid;
mod labels;
mod plan;
mod report;
mod runs;

pub use grid::{check_requester_nodes, Experiment, Grid, Sweep};
pub use labels::RunLabels;
pub use runs::Run;

use crate::claim::Claim;
use crate::experiment::{Header, Source};
use crate::figures::Figure;
use crate::record::RunRecord;
use crate::report::Section;
use crate::study::{Planned, Study};
use anyhow::Result;
use finegrain_apps::fetch_add;
use finegrain_core::MachineConfig;
use std::path::Path;

/// The study, loaded: its experiment and the preset's machine.
pub struct PdqMicro {
    exp: Experiment,
    header: Header,
    quick: bool,
    machine: MachineConfig,
}

impl PdqMicro {
    fn grid(&self) -> &Grid {
        if self.quick {
            &self.exp.quick
        } else {
            &self.exp.full
        }
    }
}

impl Study for PdqMicro {
    const NAME: &'static str = grid::NAME;
    const EXPERIMENT: &'static str = include_str!("../../../../../experiments/pdq-micro.toml");
    type Labels = RunLabels;
    type Run = Run;

    fn load(src: &Source, quick: bool) -> Result<PdqMicro> {
        let exp = plan::load(src)?;
        let header = crate::experiment::header(src)?;
        let machine = MachineConfig::load(&src.preset(&exp.preset))?;
        Ok(PdqMicro { exp, header, quick, machine })
    }

    fn header(&self) -> &Header {
        &self.header
    }

    fn plan(&self) -> Result<Vec<Planned<RunLabels>>> {
        let grid = self.grid();
        Ok(plan::planned_runs(&self.exp, &self.machine, grid))
    }

    fn view(&self, records: Vec<RunRecord<RunLabels>>) -> Vec<Run> {
        records
            .into_iter()
            .map(|record| Run { home: fetch_add::home_measures(&record.config.machine, &record.stats), record })
            .collect()
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
        claims::evaluate(self.grid(), runs)
    }

    fn figures(&self, runs: &[Run], out: &Path) -> Result<Vec<Figure>> {
        report::draw_figures(out, self.grid(), runs)
    }

    fn setup(&self, _runs: &[Run]) -> String {
        report::setup(&self.exp, self.grid())
    }

    fn sections(&self, runs: &[Run], claims: &[Claim]) -> Vec<Section> {
        report::sections(self.grid(), runs, claims)
    }
}
