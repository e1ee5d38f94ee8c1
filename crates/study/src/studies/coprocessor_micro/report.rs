//! The report's setup paragraph and its own section: Table 1 as measured.

use super::claims::Table1;
use super::grid::{Experiment, Grid};
use super::plan::{LIBRARIES, TOPOLOGY};
use super::runs::Run;
use crate::figures::{Chart, Figure, Series};
use crate::report::{markdown_table, Section};
use anyhow::Result;
use std::path::Path;

pub(super) fn setup(exp: &Experiment, grid: &Grid) -> String {
    format!(
        "Preset {}: {} nodes of {} main processor each, the Elan co-processor modelled as \
         `docs/coprocessor.md` describes. The null Active Message ping-pong of one requester (thread 0 of node 0 \
         sends a null request, waits for its reply, and sends the next at once), {} round trips a run, under \
         `coprocessor:main-am` (handlers on the main processor, which polls while it waits) and \
         `coprocessor:coproc-am` (handlers on the co-processor), {} seed(s) each. The bare DMA flag's one-way time \
         is half the round trip of {} scripted ping-pongs of the co-processor's mechanisms (the method of \
         `finegrain calibrate`; it takes no seed), recorded with every run and measured again by `rerun`.",
        exp.preset, TOPOLOGY.nodes, TOPOLOGY.procs_per_node, grid.round_trips, grid.replicates, grid.dma_rounds
    )
}

fn range(mean: f64, min: f64, max: f64, scale: f64) -> String {
    if min == max {
        format!("{:.1}", mean * scale)
    } else {
        format!("{:.1} ({:.1}-{:.1})", mean * scale, min * scale, max * scale)
    }
}

pub(super) fn sections(runs: &[Run]) -> Vec<Section> {
    let t = Table1::of(runs);
    let mut rows = Vec::new();
    if let Some(dma) = t.dma_one_way_us {
        rows.push(vec!["DMA (bare flag)".into(), format!("{dma:.1}"), format!("{:.1}", 2.0 * dma), "-".into()]);
    }
    for (name, row) in [("Main-processor AM (main-am)", &t.main_am), ("Co-processor AM (coproc-am)", &t.coproc_am)] {
        if let Some(r) = row {
            rows.push(vec![
                name.into(),
                range(r.mean, r.min, r.max, 0.5),
                range(r.mean, r.min, r.max, 1.0),
                r.seeds.to_string(),
            ]);
        }
    }
    let mut body = String::from(
        "Latency in us; one way is half the round trip (the paper's method). Active Message rows: the mean over \
         the seeds (the range over them in parentheses when they differ).\n\n",
    );
    body += &markdown_table(&["operation", "one way (us)", "round trip (us)", "seeds"], &rows);
    if let (Some(main), Some(coproc)) = (&t.main_am, &t.coproc_am) {
        body += &format!("\ncoproc-am / main-am: {:.2}.\n", coproc.mean / main.mean);
    }
    vec![Section { heading: "Table 1 as measured".into(), body }]
}

/// The null round trip of each seed under each library, against twice the
/// bare DMA flag's one-way time (the dashed line).
pub(super) fn draw_figures(out: &Path, runs: &[Run]) -> Result<Vec<Figure>> {
    let t = Table1::of(runs);
    let series = LIBRARIES
        .iter()
        .map(|&lib| Series {
            name: lib.label().into(),
            points: runs
                .iter()
                .filter(|r| r.l().library == lib)
                .map(|r| (r.l().replicate as f64, r.round_trip_us))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    let title = "Null Active Message round trip per seed (dashed: two bare DMA one-ways)";
    let chart = Chart {
        title,
        x_label: "replicate",
        y_label: "round trip (us)",
        series,
        reference_y: t.dma_one_way_us.map(|d| 2.0 * d),
        log_y: false,
    };
    Ok(vec![Figure::draw(out, "round-trips.svg", &chart, title)?])
}
