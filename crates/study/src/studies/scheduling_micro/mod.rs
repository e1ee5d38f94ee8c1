//! The scheduling-micro study: Single, Fixed and Floating on the
//! microbenchmarks of Falsafi & Wood (HPCA 1997, Section 5), with the
//! verdicts on the paper's five findings computed from the measured data.
//!
//! - `grid`: the experiment file and the variants of sensitivity runs;
//! - `plan`: reading and checking it, and the runs it makes;
//! - `labels`: what a run is (its record's labels and id);
//! - `runs`: the finished runs with the ratios across them, and CSV rows;
//! - `claims`: the five claims and their checks;
//! - `report`: figures and the report's own sections.

mod claims;
mod grid;
mod labels;
mod plan;
mod report;
mod runs;

pub use grid::{Experiment, Grid, Variant};
pub use labels::RunLabels;
pub use runs::{costup, Derived, Run};

use crate::claim::Claim;
use crate::experiment::{check_sensitivity_on, Header, Source};
use crate::figures::Figure;
use crate::record::RunRecord;
use crate::report::Section;
use crate::study::{Planned, Study};
use anyhow::{Context, Result};
use finegrain_apps::micro::{self, Protocol};
use finegrain_apps::Sim;
use finegrain_core::MachineConfig;
use std::collections::BTreeMap;
use std::path::Path;

/// When the study's own Floating runs give the role up: the paper's
/// Floating, whose idle processor handles messages until it has work
/// again and then gives the role up (to an idle peer if one waits for it).
/// Its runs keep [`finegrain_sim::SimConfig::new`]'s rule, this one.
const OWN_RELINQUISH: finegrain_core::Relinquish = finegrain_core::Relinquish::Eager;

/// The study, loaded: its experiment, the preset's machine, and Lmin
/// measured on it for each protocol.
pub struct SchedulingMicro {
    exp: Experiment,
    header: Header,
    quick: bool,
    machine: MachineConfig,
    lmin: BTreeMap<Protocol, f64>,
}

impl SchedulingMicro {
    fn grid(&self) -> &Grid {
        if self.quick {
            &self.exp.quick
        } else {
            &self.exp.full
        }
    }
}

impl Study for SchedulingMicro {
    const NAME: &'static str = grid::NAME;
    const EXPERIMENT: &'static str = include_str!("../../../../../experiments/scheduling-micro.toml");
    type Labels = RunLabels;
    type Run = Run;

    fn load(src: &Source, quick: bool) -> Result<SchedulingMicro> {
        let exp = plan::load(src)?;
        let header = crate::experiment::header(src)?;
        let machine = MachineConfig::load(&src.preset(&exp.preset))?;
        for (table, g) in [("full", &exp.full), ("quick", &exp.quick)] {
            g.check_rules(table, OWN_RELINQUISH, &machine.protocol, &machine.interrupt)?;
            check_sensitivity_on(&format!("{table}.sensitivity"), &g.sensitivity, &machine, &exp.preset)?;
        }
        let grid = if quick { &exp.quick } else { &exp.full };
        let mut lmin = BTreeMap::new();
        for &p in &grid.protocols {
            let l = micro::measure_lmin(&Sim::idle(&machine, exp.seed), p)
                .with_context(|| format!("measuring Lmin for {p}"))?;
            lmin.insert(p, l);
        }
        for (table, g) in [("full", &exp.full), ("quick", &exp.quick)] {
            plan::check_compute_times(table, g, &lmin)?;
            plan::check_oints_decide_claim3(table, g, &lmin)?;
        }
        Ok(SchedulingMicro { exp, header, quick, machine, lmin })
    }

    fn header(&self) -> &Header {
        &self.header
    }

    fn plan(&self) -> Result<Vec<Planned<RunLabels>>> {
        Ok(plan::plan(&self.exp, &self.machine, self.grid(), &self.lmin))
    }

    fn view(&self, records: Vec<RunRecord<RunLabels>>) -> Vec<Run> {
        runs::derive(records)
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
        let sensitivity = claims::sensitivity(self.grid(), runs, OWN_RELINQUISH, &self.machine.protocol);
        report::sections(self.grid(), &self.machine, &self.lmin, runs, &sensitivity, claims)
    }
}
