//! The pdq-dsm study: Falsafi & Wood (HPCA 1999) Section 5.2. The seven
//! shared-memory applications on the fine-grain DSM under S-COMA,
//! Hurricane (1, 2, 4 embedded PPs), Hurricane-1 (1, 2, 4 dedicated SMP
//! PPs) and Mult, on the baseline 8x8 machine (Figure 7), at clustering
//! degrees 16x4 and 4x16 (Figures 8, 9) and with 32- and 128-byte blocks
//! (Figures 10, 11), with the paper's six claims and one hypothesis of
//! finegrain's (32-byte blocks) judged on the data, and runs beyond the
//! paper (key affinity, a modern machine).
//!
//! - `grid`: the experiment file and its checks;
//! - `plan`: reading it and the runs it makes;
//! - `labels`: what a run is;
//! - `runs`: the finished runs, CSV rows;
//! - `claims`: the claims and their checks;
//! - `paper`: the values and bands of Section 5.2 they test, which the
//!   figures mark;
//! - `report`: tables, figures, the setup paragraph.

pub mod claims;
mod grid;
mod labels;
pub mod paper;
mod plan;
mod report;
mod runs;
pub mod systems;

pub use grid::{Experiment, Grid, ShapeSpec};
pub use labels::{RunLabels, Variant};
pub use runs::Run;

use crate::claim::Claim;
use crate::experiment::Source;
use crate::figures::Figure;
use crate::report::Section;
use crate::study::{Planned, Study};
use anyhow::Result;
use std::path::Path;

/// The study, loaded: its experiment and its runs, planned and checked.
pub struct PdqDsm {
    exp: Experiment,
    planned: Vec<Planned<RunLabels>>,
}

impl Study for PdqDsm {
    const NAME: &'static str = grid::NAME;
    const EXPERIMENT: &'static str = include_str!("../../../../../experiments/pdq-dsm.toml");
    type Own = grid::Own;
    type Grid = Grid;
    type Labels = RunLabels;
    type Run = Run;

    fn load(exp: Experiment, src: &Source) -> Result<PdqDsm> {
        let planned = plan::load(&exp, src)?;
        Ok(PdqDsm { exp, planned })
    }

    fn experiment(&self) -> &Experiment {
        &self.exp
    }

    fn plan(&self) -> Result<Vec<Planned<RunLabels>>> {
        Ok(self.planned.clone())
    }

    fn claims(&self, runs: &[Run]) -> Vec<Claim> {
        claims::judge(&report::times(runs, None))
    }

    fn figures(&self, runs: &[Run], out: &Path) -> Result<Vec<Figure>> {
        report::draw_figures(out, runs, self.exp.grid())
    }

    fn setup(&self, runs: &[Run]) -> String {
        report::setup(&self.exp, self.exp.grid(), runs)
    }

    fn sections(&self, runs: &[Run], _claims: &[Claim]) -> Vec<Section> {
        report::sections(runs, self.exp.grid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Labels as _;

    /// The shipped experiment loads, checks every run of both grids and
    /// plans the quick one: Figures 7-11's shapes for every system, the
    /// uniprocessor, affinity and modern runs, all distinct.
    #[test]
    fn the_shipped_experiment_plans_every_figure() {
        let src = crate::studies::source("pdq-dsm").unwrap();
        let study: PdqDsm = crate::study::load(&src, true).unwrap();
        let runs = study.plan().unwrap();
        let grid = study.exp.grid();
        let per_app = grid.systems.len() * grid.shapes.len() + 1 + (grid.systems.len() - 1) + grid.systems.len();
        assert_eq!(runs.len(), grid.apps.len() * per_app);
        let mut ids: Vec<String> = runs.iter().map(|r| r.labels.id()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), runs.len(), "run ids are distinct");
        assert!(ids.contains(&"radix-mult-4x16-64B".to_string()), "{:?}", &ids[..5]);
        for r in &runs {
            r.labels.describe(&r.config, &r.workload).unwrap();
        }
    }

    /// The paper-input files run by path load and plan, and the 8x8 piece
    /// is exactly the 8x8 part of the five shapes, run for run, so
    /// `--reuse` of its output leaves only the other two shapes to simulate.
    #[test]
    fn the_paper_input_pieces_fit_together() {
        let file = |name: &str| format!("{}/../../experiments/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let plan = |name: &str| -> Vec<Planned<RunLabels>> {
            let src = Source::from_path(&file(name)).unwrap();
            crate::study::load::<PdqDsm>(&src, false).unwrap().plan().unwrap()
        };
        let (whole, piece) = (plan("pdq-dsm-paper"), plan("pdq-dsm-paper-blocks"));
        // The five shapes (280) and Table 2's seven one-processor runs.
        assert_eq!((whole.len(), piece.len()), (287, 168));
        let json = |p: &Planned<RunLabels>| serde_json::to_string(&(&p.labels, &p.config, &p.workload)).unwrap();
        let whole: std::collections::BTreeMap<String, String> =
            whole.iter().map(|p| (p.labels.id(), json(p))).collect();
        for p in &piece {
            assert_eq!(whole.get(&p.labels.id()), Some(&json(p)), "{} is not the same run", p.labels.id());
        }
    }

    #[test]
    fn a_grid_without_s_coma_is_refused() {
        let text = crate::studies::source("pdq-dsm").unwrap().text.replace("\"s-coma\", ", "");
        let src = Source::shipped("pdq-dsm", &text);
        let e = crate::study::load::<PdqDsm>(&src, true).err().unwrap().to_string();
        assert!(e.contains("s-coma missing"), "{e}");
    }
}
