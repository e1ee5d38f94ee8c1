//! The report's setup paragraph, its own sections (normalized performance
//! at every shape, S-COMA's speedups, the headline ratio, key affinity and
//! the modern machine) and the figures.

use super::claims::{hurricane1, Shape, Times, MULT, SCOMA};
use super::grid::{Experiment, Grid};
use super::labels::Variant;
use super::paper::{self, Scope};
use super::plan::baseline;
use super::runs::Run;
use crate::figures::{BarChart, BarMark, Figure};
use crate::report::Section;
use crate::table::markdown_table;
use anyhow::Result;
use finegrain_core::config::ServingSystem;
use std::path::Path;

/// The paper's grid's run times (no variant), by shape, system, app.
pub(super) fn times(runs: &[Run], variant: Option<Variant>) -> Times {
    let mut t = Times::default();
    for r in runs.iter().filter(|r| r.l().variant == variant) {
        let l = r.l();
        if let Some(c) = r.cycles {
            t.insert(Shape { nodes: l.nodes, procs: l.procs, block: l.block_bytes }, &l.system.label(), &l.app, c);
        }
    }
    t
}

pub(super) fn setup(exp: &Experiment, grid: &Grid, runs: &[Run]) -> String {
    let mut inputs: Vec<(String, String)> = runs
        .iter()
        .filter(|r| r.l().variant.is_none())
        .map(|r| (r.l().app.clone(), r.measures.input.clone()))
        .collect();
    inputs.sort();
    inputs.dedup();
    let listed = inputs.iter().map(|(a, i)| format!("{a}: {i}")).collect::<Vec<_>>().join("; ");
    format!(
        "Preset {}: SMP nodes of 400 MHz processors on a 100 MHz snooping bus, a 100-cycle network, the \
         Stache protocol (full-map, invalidation-based, pages allocated at the caching node, coherence per \
         block) with PDQ keys by block, on the four systems of the paper: S-COMA (one hardware protocol \
         engine), Hurricane (1, 2, 4 embedded protocol processors), Hurricane-1 (1, 2, 4 dedicated SMP \
         processors besides the compute ones) and Mult (idle compute processors, interrupts only when all \
         compute). Shapes (nodes x compute processors, block bytes): {}. Inputs (`{}`): {listed}. Run time is \
         the slowest thread's from the start barrier to the end barrier; performance is S-COMA's time over the \
         system's on the same shape. Every run checks that no two handlers of one block ran at once and that \
         every read returned the last value written (a shadow copy of memory), and each application checks its \
         answer against a sequential reference. Seed {}.",
        exp.header.preset,
        grid.shapes
            .iter()
            .map(|s| format!("{}x{} {}B", s.nodes, s.procs, s.block_bytes))
            .collect::<Vec<_>>()
            .join(", "),
        format!("{:?}", grid.size).to_lowercase(),
        exp.header.seed
    )
}

/// Every software system of the grid, in the paper's order.
fn software(grid: &Grid) -> Vec<String> {
    grid.systems.iter().filter(|&&s| s != ServingSystem::Scoma).map(|s| s.label()).collect()
}

fn perf_table(t: &Times, shape: Shape, systems: &[String]) -> String {
    let apps = t.apps(shape);
    let mut header = vec!["application"];
    header.extend(systems.iter().map(|s| s.as_str()));
    let mut rows: Vec<Vec<String>> = apps
        .iter()
        .map(|a| {
            let mut row = vec![a.clone()];
            row.extend(systems.iter().map(|s| t.perf(shape, s, a).map_or("-".into(), |p| format!("{p:.2}"))));
            row
        })
        .collect();
    let mut mean = vec!["mean".to_string()];
    mean.extend(systems.iter().map(|s| t.mean_perf(shape, s, &apps).map_or("-".into(), |p| format!("{p:.2}"))));
    rows.push(mean);
    markdown_table(&header, &rows)
}

pub(super) fn sections(runs: &[Run], grid: &Grid) -> Vec<Section> {
    let t = times(runs, None);
    let systems = software(grid);
    let mut out = Vec::new();
    let mut body = String::from(
        "S-COMA's run time over each system's (above 1: faster than S-COMA), per shape, as the paper's Figures 7-11 \
         plot it.\n\n",
    );
    for s in &grid.shapes {
        let shape = Shape { nodes: s.nodes, procs: s.procs, block: s.block_bytes };
        body += &format!("**{}**\n\n{}\n", shape.label(), perf_table(&t, shape, &systems));
    }
    out.push(Section { heading: "Performance normalized to S-COMA".into(), body });
    out.push(speedups(runs, grid, &t));
    out.push(shapes(runs, grid));
    out.push(headline(&t));
    if grid.affinity_passes > 0 {
        out.push(affinity(runs, grid, &t));
    }
    if grid.modern {
        let m = times(runs, Some(Variant::Modern));
        let b = baseline(grid);
        let shape = Shape { nodes: b.nodes, procs: b.procs, block: b.block_bytes };
        out.push(Section {
            heading: "Beyond the paper: a modern machine".into(),
            body: format!(
                "The baseline shape on preset `modern` (today's clock, memory and network latencies; see the \
                 preset's comments for each number's source), normalized to S-COMA on the same machine.\n\n{}",
                perf_table(&m, shape, &systems)
            ),
        });
    }
    out
}

fn speedups(runs: &[Run], grid: &Grid, t: &Times) -> Section {
    let b = baseline(grid);
    let shape = Shape { nodes: b.nodes, procs: b.procs, block: b.block_bytes };
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter(|r| r.l().variant == Some(Variant::Uniprocessor))
        .map(|r| {
            let par = t.time(shape, SCOMA, &r.l().app);
            let s = r.cycles.zip(par).map_or("-".into(), |(one, p)| format!("{:.1}", one / p));
            vec![r.l().app.clone(), r.us.map_or("-".into(), |u| format!("{u:.0}")), s]
        })
        .collect();
    Section {
        heading: "S-COMA speedups over one processor".into(),
        body: format!(
            "Each application on one S-COMA processor against the {} machine's {} processors (the paper's Table 2 \
             column, withheld from our copy of the paper, so no comparison is made).\n\n{}",
            shape.label(),
            b.nodes * b.procs,
            markdown_table(&["application", "1 processor (us)", "speedup"], &rows)
        ),
    }
}

/// The class Section 5.2 of the paper puts each application in, from
/// where its time goes under the protocols.
fn paper_class(app: &str) -> &'static str {
    match app {
        "water-sp" => "computation-intensive",
        "barnes" | "fmm" => "latency-bound",
        "cholesky" | "em3d" | "fft" | "radix" => "bandwidth-bound",
        _ => "-",
    }
}

/// Each application's communication against its computation on the
/// baseline shape under S-COMA, beside the paper's class for it.
fn shapes(runs: &[Run], grid: &Grid) -> Section {
    let b = baseline(grid);
    let threads = (b.nodes * b.procs) as f64;
    let mut rows: Vec<Vec<String>> = runs
        .iter()
        .filter(|r| {
            let l = r.l();
            l.variant.is_none()
                && l.system.label() == SCOMA
                && (l.nodes, l.procs, l.block_bytes) == (b.nodes, b.procs, b.block_bytes)
        })
        .map(|r| {
            let st = &r.record.stats;
            let count = |name: &str| r.measures.count_sum.get(name).copied();
            let compute = st.cycles.compute as f64;
            let share = r.cycles.map(|t| compute / (t * threads));
            let per_k = |n: f64, of: f64| if of > 0.0 { format!("{:.2}", 1000.0 * n / of) } else { "-".into() };
            let faults = count(finegrain_apps::dsm::BLOCK_FAULTS);
            let words = count(finegrain_apps::dsm::SHARED_WORDS);
            vec![
                r.l().app.clone(),
                share.map_or("-".into(), |s| format!("{:.0}%", 100.0 * s)),
                per_k(st.messages as f64, compute),
                faults.zip(words).map_or("-".into(), |(f, w)| per_k(f as f64, w as f64)),
                paper_class(&r.l().app).into(),
            ]
        })
        .collect();
    rows.sort();
    Section {
        heading: "Communication against computation".into(),
        body: format!(
            "Each application on the {} machine under S-COMA: the share of its processors' time spent computing \
             (computation charged from the kernels' counted operations by the preset's cost model, over run time \
             times processors), the protocol messages per 1000 cycles of that computation, and the block faults \
             (misses the node's tags did not allow) per 1000 shared words read or written. The last column is \
             the class the paper's Section 5.2 puts the application in; the paper gives no numbers of this kind.\n\n{}",
            Shape { nodes: b.nodes, procs: b.procs, block: b.block_bytes }.label(),
            markdown_table(
                &[
                    "application",
                    "computing",
                    "messages per 1000 compute cycles",
                    "faults per 1000 shared words",
                    "paper's class"
                ],
                &rows
            )
        ),
    }
}

fn headline(t: &Times) -> Section {
    let shape = Shape::FAT;
    let rows: Vec<Vec<String>> = t
        .apps(shape)
        .iter()
        .map(|a| {
            let r = t.time(shape, &hurricane1(1), a).zip(t.time(shape, MULT, a)).map(|(h, m)| h / m);
            vec![a.clone(), r.map_or("-".into(), |r| format!("{r:.2}"))]
        })
        .collect();
    Section {
        heading: "Headline: Mult against one dedicated SMP protocol processor on 4x16".into(),
        body: markdown_table(&["application", "hurricane1-1pp time / mult time"], &rows),
    }
}

fn affinity(runs: &[Run], grid: &Grid, t: &Times) -> Section {
    let a = times(runs, Some(Variant::Affinity));
    let b = baseline(grid);
    let shape = Shape { nodes: b.nodes, procs: b.procs, block: b.block_bytes };
    let systems = software(grid);
    let mut header = vec!["application"];
    header.extend(systems.iter().map(|s| s.as_str()));
    let rows: Vec<Vec<String>> = t
        .apps(shape)
        .iter()
        .map(|app| {
            let mut row = vec![app.clone()];
            row.extend(systems.iter().map(|s| {
                let r = t.time(shape, s, app).zip(a.time(shape, s, app)).map(|(off, on)| off / on);
                r.map_or("-".into(), |r| format!("{r:.2}"))
            }));
            row
        })
        .collect();
    Section {
        heading: "Beyond the paper: key affinity in the dispatch queue".into(),
        body: format!(
            "Time without key affinity over time with it ({} passes) at {}: above 1, affinity helps. The paper's \
             device hands the oldest dispatchable entry to whichever processor asks; with affinity it prefers a \
             key the asking processor served last, so the block's protocol state stays in its cache.\n\n{}",
            grid.affinity_passes,
            shape.label(),
            markdown_table(&header, &rows)
        ),
    }
}

pub(super) fn draw_figures(out: &Path, runs: &[Run], grid: &Grid) -> Result<Vec<Figure>> {
    let t = times(runs, None);
    let systems = software(grid);
    let mut figures = Vec::new();
    for s in &grid.shapes {
        let shape = Shape { nodes: s.nodes, procs: s.procs, block: s.block_bytes };
        let Some(chart) = perf_chart(&t, shape, &systems) else { continue };
        let title = format!("Performance normalized to S-COMA, {}", shape.label());
        let chart = BarChart { title: &title, ..chart };
        let name = format!("perf-{}x{}-{}B.svg", s.nodes, s.procs, s.block_bytes);
        figures.push(Figure::draw_bars(out, &name, &chart, perf_caption(shape, !chart.paper.is_empty()))?);
    }
    Ok(figures)
}

/// The row of the mean over the applications, last in each figure.
const MEAN_ROW: &str = "mean";

/// One shape's bars: each application's performance under every software
/// system, their means in a last row, and the marks the claims put on
/// them. None when the shape has no application measured.
fn perf_chart(t: &Times, shape: Shape, systems: &[String]) -> Option<BarChart<'static>> {
    let apps = t.apps(shape);
    if apps.is_empty() {
        return None;
    }
    let groups = systems
        .iter()
        .map(|sys| {
            let mut v: Vec<Option<f64>> = apps.iter().map(|a| t.perf(shape, sys, a)).collect();
            v.push(t.mean_perf(shape, sys, &apps));
            (sys.clone(), v)
        })
        .collect();
    let paper = paper::marks(shape, &apps)
        .into_iter()
        .filter_map(|m| {
            let category = match &m.scope {
                Scope::App(a) => apps.iter().position(|x| x == a)?,
                Scope::Mean => apps.len(),
            };
            let group = systems.iter().position(|s| *s == m.system)?;
            Some(BarMark { category, group, value: m.band.paper, band: Some((m.band.lo, m.band.hi)) })
        })
        .collect();
    let mut categories = apps;
    categories.push(MEAN_ROW.into());
    Some(BarChart {
        title: "",
        value_label: "S-COMA time / system time",
        categories,
        groups,
        reference: Some(1.0),
        paper,
    })
}

/// What a shape's figure shows and what to look for in it.
fn perf_caption(shape: Shape, marked: bool) -> String {
    let (figure, look) = if shape == Shape::BASE {
        (
            "the paper's Figure 7",
            "water-sp near 1 under every system; barnes and fmm gaining little from more protocol processors; \
             cholesky, em3d, fft and radix gaining much (claims 1-3)",
        )
    } else if shape == Shape::THIN || shape == Shape::FAT {
        (
            "the paper's Figures 8 and 9",
            "single-processor systems falling behind as nodes get fatter, four-PP Hurricane above S-COMA on all \
             but water-sp at 4x16, and Mult's mean rising from 16x4 to 4x16 (claim 4)",
        )
    } else {
        (
            "the paper's Figures 10 and 11",
            "how the block size moves each system against S-COMA beside the 8x8 64-byte figure (claim 5 at 128 \
             bytes, finegrain's hypothesis H1 at 32)",
        )
    };
    let paper = if marked {
        "Black crosses: the values Section 5.2 states; grey boxes: the band each claim allows (open-ended ones run \
         to the axis's end; a box without a cross is a bound or a word, no number). Look for the bars inside \
         their boxes."
    } else {
        "Section 5.2 states no value for this shape, so nothing of the paper is drawn."
    };
    format!(
        "{} ({figure}): each application's performance under every software system, S-COMA = 1 (dashed; above it \
         faster than S-COMA), and the mean over the applications in the last row. Look for {look}. {paper}",
        shape.label()
    )
}

#[cfg(test)]
mod tests {
    use super::super::claims::{checks_2, checks_3, hurricane};
    use super::super::paper::{CHOLESKY_H2PP, MULT_MEAN};
    use super::*;

    fn base_times(apps: &[&str], systems: &[String]) -> Times {
        let mut t = Times::default();
        for app in apps {
            t.insert(Shape::BASE, SCOMA, app, 100.0);
            for s in systems {
                t.insert(Shape::BASE, s, app, 100.0);
            }
        }
        t
    }

    #[test]
    fn each_mark_sits_on_its_bar_with_the_band_the_claim_judges() {
        let systems = super::super::claims::software_systems();
        let t = base_times(&["cholesky", "fft"], &systems);
        let chart = perf_chart(&t, Shape::BASE, &systems).unwrap();
        assert_eq!(chart.categories.last().map(String::as_str), Some(MEAN_ROW));
        let bar = |cat: &str, sys: &str| {
            let c = chart.categories.iter().position(|x| x == cat)?;
            let g = systems.iter().position(|s| s == sys)?;
            chart.paper.iter().find(|m| m.category == c && m.group == g).cloned()
        };
        let cholesky = bar("cholesky", &hurricane(2)).unwrap();
        assert_eq!(cholesky.value, CHOLESKY_H2PP.paper);
        assert_eq!(cholesky.band, Some((CHOLESKY_H2PP.lo, CHOLESKY_H2PP.hi)));
        // The claim judges the very band the figure draws.
        let judged =
            checks_2(&t).into_iter().any(|c| c.needs == format!("{:.2}-{:.2}", CHOLESKY_H2PP.lo, CHOLESKY_H2PP.hi));
        assert!(judged, "claim 2 judges cholesky's two-PP Hurricane in the figure's band");
        let mult = bar(MEAN_ROW, MULT).unwrap();
        assert_eq!(mult.band, Some((MULT_MEAN.lo, MULT_MEAN.hi)));
        let judged = checks_3(&t).into_iter().any(|c| c.needs == format!("{:.2}-{:.2}", MULT_MEAN.lo, MULT_MEAN.hi));
        assert!(judged, "claim 3 judges mult's mean in the figure's band");
        // Applications the run lacks carry no mark.
        assert!(bar("barnes", &hurricane(1)).is_none() && !chart.categories.iter().any(|c| c == "barnes"));
    }

    #[test]
    fn a_shape_without_stated_values_says_so() {
        let small = Shape::SMALL_BLOCKS;
        assert!(paper::marks(small, &["fft".into()]).is_empty());
        assert!(perf_caption(small, false).contains("states no value"));
        assert!(perf_caption(Shape::BASE, true).contains("Figure 7"));
    }
}
