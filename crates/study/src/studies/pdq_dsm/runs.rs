//! The study's finished runs and their rows of `results.csv`.

use super::labels::RunLabels;
use crate::record::RunRecord;
use crate::study::{Measured, StudyRun};
use anyhow::{Context, Result};
use finegrain_apps::dsm::spec::DsmMeasures;

/// A finished run as the study views it: its run time between the
/// program's start and end barriers (the slowest thread's), in cycles of
/// its machine and in microseconds.
pub struct Run {
    pub record: RunRecord<RunLabels>,
    pub measures: DsmMeasures,
    pub cycles: Option<f64>,
    pub us: Option<f64>,
    /// Handlers run per node, on average.
    pub handlers_per_node: f64,
}

impl Run {
    pub fn l(&self) -> &RunLabels {
        &self.record.labels
    }
}

impl StudyRun<RunLabels> for Run {
    const CSV_HEADER: &'static str = CSV_HEADER;

    fn of(run: Measured<RunLabels>) -> Result<Run> {
        let Measured { record, measures } = run;
        let measures = measures
            .with_context(|| format!("run {}: its record has no measures, which every DSM run has", record.id))?;
        let cycles = Some(measures.time as f64).filter(|&t| t > 0.0);
        let us = cycles.map(|c| record.config.machine.cycles_to_us(c));
        let nodes = record.stats.nodes.len().max(1) as f64;
        let handlers_per_node = record.stats.handlers as f64 / nodes;
        Ok(Run { record, measures, cycles, us, handlers_per_node })
    }

    fn record(&self) -> &RunRecord<RunLabels> {
        &self.record
    }

    fn csv_row(&self) -> String {
        csv_row(self)
    }
}

const CSV_HEADER: &str =
    "app,system,nodes,procs,block_bytes,variant,seed,time_cycles,time_us,handlers_per_node,sim_cycles,events,wall_seconds,record";

fn csv_row(run: &Run) -> String {
    let l = run.l();
    let st = &run.record.stats;
    format!(
        "{},{},{},{},{},{},{},{},{},{:.1},{},{},{:.3},runs/{}.json",
        l.app,
        l.system.label(),
        l.nodes,
        l.procs,
        l.block_bytes,
        l.variant.map_or("", |v| v.label()),
        l.seed,
        run.cycles.map_or(String::new(), |c| format!("{c:.0}")),
        run.us.map_or(String::new(), |u| format!("{u:.3}")),
        run.handlers_per_node,
        st.sim_cycles,
        st.events,
        run.record.wall.wall_seconds,
        run.record.id
    )
}
