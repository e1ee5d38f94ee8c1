//! The scheduling-micro study: Single, Fixed and Floating on the
//! microbenchmarks of Falsafi & Wood (HPCA 1997, Section 5), with the
//! verdicts on the paper's five findings computed from the measured data.
//!
//! - `grid`: the experiment file and the variants of sensitivity runs;
//! - `plan`: reading and checking it, and the runs it makes;
//! - `labels`: what a run is (its record's labels and id);
//! - `runs`: the finished runs with the ratios across them, and CSV rows;
//! - `claims`: the five claims and their checks;
//! - `report`: figures and the report's own sections;
//! - `native`: the runs, claims and tables of `--platform native`.

mod claims;
mod grid;
mod labels;
mod native;
mod operating_points;
mod plan;
mod report;
mod runs;

pub use grid::{Experiment, Grid, Variant};
pub use labels::RunLabels;
pub use runs::{costup, Derived, Run};

use crate::claim::Claim;
use crate::experiment::Source;
use crate::figures::Figure;
use crate::native_record::{NativePlan, NativeRecord, NotJudged};
use crate::report::Section;
use crate::study::{Measured, Planned, Study, StudyRun};
use anyhow::Result;
use finegrain_apps::micro::Protocol;
use finegrain_core::MachineConfig;
use plan::OWN_RELINQUISH;
use std::collections::BTreeMap;
use std::path::Path;

/// The study, loaded: its experiment, the preset's machine, Lmin measured
/// on it for each protocol, and its runs, planned and checked.
pub struct SchedulingMicro {
    exp: Experiment,
    machine: MachineConfig,
    lmin: BTreeMap<Protocol, f64>,
    planned: Vec<Planned<RunLabels>>,
}

impl Study for SchedulingMicro {
    const NAME: &'static str = grid::NAME;
    const EXPERIMENT: &'static str = include_str!("../../../../../experiments/scheduling-micro.toml");
    type Own = grid::Own;
    type Grid = Grid;
    type Labels = RunLabels;
    type Run = Run;

    fn load(exp: Experiment, src: &Source) -> Result<SchedulingMicro> {
        let plan::Loaded { machine, lmin, planned } = plan::load(&exp, src)?;
        Ok(SchedulingMicro { exp, machine, lmin, planned })
    }

    fn experiment(&self) -> &Experiment {
        &self.exp
    }

    fn plan(&self) -> Result<Vec<Planned<RunLabels>>> {
        Ok(self.planned.clone())
    }

    fn view(&self, runs: Vec<Measured<RunLabels>>) -> Result<Vec<Run>> {
        let mut runs = runs.into_iter().map(Run::of).collect::<Result<Vec<Run>>>()?;
        runs::derive(&mut runs);
        Ok(runs)
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
        let grid = self.exp.grid();
        let sensitivity = claims::sensitivity(grid, runs, OWN_RELINQUISH, &self.machine.protocol);
        report::sections(grid, &self.machine, &self.lmin, runs, &sensitivity, claims)
    }

    const NATIVE: bool = true;

    fn native_plan(&self) -> Result<NativePlan<RunLabels>> {
        native::plan(&self.planned)
    }

    fn not_judged_natively(&self) -> Vec<NotJudged> {
        native::not_judged()
    }

    fn native_sections(&self, runs: &[NativeRecord<RunLabels>]) -> Vec<Section> {
        native::sections(runs)
    }
}
