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
use crate::experiment::Source;
use crate::figures::Figure;
use crate::report::Section;
use crate::study::{Planned, Study};
use anyhow::Result;
use std::path::Path;

/// The study, loaded: its experiment and its runs, planned and checked.
pub struct PdqMicro {
    exp: Experiment,
    planned: Vec<Planned<RunLabels>>,
}

impl Study for PdqMicro {
    const NAME: &'static str = grid::NAME;
    const EXPERIMENT: &'static str = include_str!("../../../../../experiments/pdq-micro.toml");
    type Own = grid::Own;
    type Grid = Grid;
    type Labels = RunLabels;
    type Run = Run;

    fn load(exp: Experiment, src: &Source) -> Result<PdqMicro> {
        let (exp, planned) = plan::load(exp, src)?;
        Ok(PdqMicro { exp, planned })
    }

    fn experiment(&self) -> &Experiment {
        &self.exp
    }

    fn plan(&self) -> Result<Vec<Planned<RunLabels>>> {
        Ok(self.planned.clone())
    }

    fn claims(&self, runs: &[Run]) -> Vec<Claim> {
        claims::evaluate(self.exp.grid(), runs)
    }

    fn figures(&self, runs: &[Run], out: &Path) -> Result<Vec<Figure>> {
        report::draw_figures(out, self.exp.grid(), runs)
    }

    fn setup(&self, _runs: &[Run]) -> String {
        report::setup(&self.exp, self.exp.grid())
    }

    fn sections(&self, runs: &[Run], claims: &[Claim]) -> Vec<Section> {
        report::sections(self.exp.grid(), runs, claims)
    }
}
