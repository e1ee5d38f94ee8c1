//! The report's setup paragraph and its own sections: Table 1, Figure 3
//! with the bulk bandwidth, and Table 2 as measured, with their figures.

use super::claims::{
    judge, own, with_variant, Figure3, Row, Table1, Table2, EQUAL_BAND, MM_GLOBAL, RADIX, SAMPLE, WATOR, WATOR_BAND,
    WATOR_FACTOR,
};
use super::grid::{Experiment, Grid};
use super::labels::Variant;
use super::plan::{AM_LIBRARIES, PAIR, SPLITC_LIBRARIES};
use super::runs::{Measured, Run};
use crate::claim::Claim;
use crate::figures::{BarChart, BarMark, Chart, Figure, Paper, Series};
use crate::report::{self, Section};
use crate::table::markdown_table;
use anyhow::Result;
use finegrain_apps::coproc_primitives::{figure3, TABLE1_ROUND_TRIP_US};
use finegrain_apps::splitc::primitives::Primitive;
use finegrain_core::CoprocLibrary;
use std::path::Path;

pub(super) fn setup(exp: &Experiment, grid: &Grid) -> String {
    format!(
        "Preset {}: the Meiko CS-2 of the paper, its Elan co-processor modelled as `docs/coprocessor.md` \
         describes. Table 1: the null Active Message ping-pong of one requester on {} nodes, {} round trips a run, \
         under `coprocessor:main-am` and `coprocessor:coproc-am`; the bare DMA flag's one-way time is half the \
         round trip of {} scripted ping-pongs (no seed enters it). Figure 3: on the same two nodes, node 0 times \
         {} one-word gets and puts (each followed by sync), store and 32-byte bulk-store ping-pongs (a store's \
         latency is half the round trip), and {} bulk puts of {} bytes for bandwidth, under the three Split-C \
         libraries. Table 2: each program on {} nodes with its `{}` input (listed with the table), under main-am \
         and the optimized co-processor library, once (a program's input comes from its own seed). {} seed(s) \
         per Table 1 and Figure 3 measurement; those tables show the mean over them.",
        exp.header.preset,
        PAIR.nodes,
        grid.round_trips,
        grid.dma_rounds,
        grid.primitive_reps,
        grid.bandwidth_reps,
        grid.bandwidth_words * 8,
        grid.nodes,
        format!("{:?}", grid.size).to_lowercase(),
        grid.replicates
    )
}

fn range(r: &Row, scale: f64) -> String {
    if r.min == r.max {
        format!("{:.1}", r.mean * scale)
    } else {
        format!("{:.1} ({:.1}-{:.1})", r.mean * scale, r.min * scale, r.max * scale)
    }
}

fn table1_section(runs: &[&Run]) -> Section {
    let t = Table1::of(runs);
    let mut rows = Vec::new();
    if let Some(dma) = t.dma_one_way_us {
        rows.push(vec!["DMA (bare flag)".into(), format!("{dma:.1}"), format!("{:.1}", 2.0 * dma)]);
    }
    for (name, row) in [("Main-processor AM (main-am)", &t.main_am), ("Co-processor AM (coproc-am)", &t.coproc_am)] {
        if let Some(r) = row {
            rows.push(vec![name.into(), range(r, 0.5), range(r, 1.0)]);
        }
    }
    let mut body = String::from(
        "Latency in us; one way is shown as half the round trip. The paper computes only the DMA row that way \
         (Section 5.1); its Active Message one-way times (Table 1: 12.5 and 30 us) are not half their round trips, \
         so this column's Active Message rows are not compared with them. Active Message rows: the mean over the \
         seeds (the range over them in parentheses when they differ).\n\n",
    );
    body += &markdown_table(&["operation", "one way (us)", "round trip (us)"], &rows);
    if let (Some(main), Some(coproc)) = (&t.main_am, &t.coproc_am) {
        body += &format!("\ncoproc-am / main-am: {:.2}.\n", coproc.mean / main.mean);
    }
    Section { heading: "Table 1 as measured".into(), body }
}

fn figure3_section(runs: &[&Run]) -> Section {
    let f = Figure3::of(runs);
    let mut rows = Vec::new();
    for p in Primitive::ALL {
        let mut row =
            vec![if p == Primitive::BulkPut { "bulk bandwidth (MB/s)".into() } else { format!("{} (us)", p.label()) }];
        for lib in SPLITC_LIBRARIES {
            let measured = f.get(p, lib).map_or("-".to_string(), |r| range(r, 1.0));
            let paper =
                finegrain_apps::coproc_primitives::figure3(p, lib).map_or(String::new(), |v| format!(" [{v:.0}]"));
            row.push(measured + &paper);
        }
        rows.push(row);
    }
    let mut body = String::from(
        "Mean over the seeds; the paper's value in brackets where Section 5.2 states it (the paper does not give \
         every bar of its Figure 3 in its text). Latency of one operation in us; the last row is the bandwidth of \
         long bulk puts in MB/s.\n\n",
    );
    body += &markdown_table(&["operation", "main-am", "coproc-am", "optimized"], &rows);
    Section { heading: "Figure 3 as measured: Split-C primitives".into(), body }
}

fn table2_section(runs: &[&Run], grid: &Grid) -> Section {
    // The grid's own node count; claim 3 judges only the paper's 16.
    let t = Table2::on(runs, grid.nodes);
    let mut rows = Vec::new();
    for p in t.programs() {
        let time = |lib: CoprocLibrary| t.time.get(&(p.clone(), lib.label())).map_or("-".into(), |r| range(r, 1e-3));
        let ratio = t.ratio(&p).map_or("-".into(), |r| format!("{r:.2}"));
        rows.push(vec![p.clone(), time(CoprocLibrary::MainAm), time(CoprocLibrary::Optimized), ratio]);
    }
    let mut body = format!(
        "Run time in ms on {} nodes (the slowest node, between the program's first and last barrier), one run \
         each; ratio = optimized / main-am (below 1: faster with the co-processor).\n\n",
        grid.nodes
    );
    body += &markdown_table(&["program", "main-am (ms)", "optimized (ms)", "ratio"], &rows);
    body += &phases_table(runs);
    let wait = |lib: CoprocLibrary| t.read_wait.get(lib.label()).map(|r| r.mean);
    if let (Some(m), Some(o)) = (wait(CoprocLibrary::MainAm), wait(CoprocLibrary::Optimized)) {
        body += &format!(
            "\n{WATOR}'s remote reads waited (issue to data on the requesting node) {m:.1} us on average under main-am and {o:.1} us under the optimized \
             library (the paper: 600-800 against 25-33 us).\n"
        );
    }
    body += "\nInputs (the paper gives none; chosen as `docs/coprocessor.md` says):\n\n";
    for r in runs.iter().filter(|r| r.l().library == CoprocLibrary::MainAm && r.l().replicate == 0) {
        if let (Measured::Program { .. }, Some(input)) = (&r.measured, input_of(r)) {
            body += &format!("- {}: {input}\n", r.l().subject());
        }
    }
    Section { heading: "Table 2 as measured: programs".into(), body }
}

fn input_of(r: &Run) -> Option<String> {
    r.measures.as_ref().map(|m| m.input.clone())
}

/// Every program's phases on its slowest node (fft's compute and remap).
fn phases_table(runs: &[&Run]) -> String {
    let mut rows = Vec::new();
    for r in runs.iter().filter(|r| r.l().replicate == 0) {
        if let Measured::Program { phases_us, .. } = &r.measured {
            let phases: Vec<String> = phases_us.iter().map(|(k, v)| format!("{k} {:.2}", v * 1e-3)).collect();
            if !phases.is_empty() {
                rows.push(vec![r.l().subject(), r.l().library.label().into(), phases.join(", ")]);
            }
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nPhases on the slowest node, in ms (first seed):\n\n");
    s += &markdown_table(&["program", "library", "phases"], &rows);
    s
}

pub(super) fn sections(runs: &[Run], grid: &Grid, claims: &[Claim]) -> Vec<Section> {
    let mine = own(runs);
    let mut s = vec![table1_section(&mine), figure3_section(&mine), table2_section(&mine, grid)];
    s.extend(rerun_section(runs, claims));
    s
}

/// Every claim judged again with main-am's sending threads free, beside
/// its verdict on the study's own runs.
fn rerun_section(runs: &[Run], claims: &[Claim]) -> Option<Section> {
    let variant = Variant::FreeSendThread;
    let rerun = with_variant(runs, variant);
    if !rerun.iter().any(|r| r.l().variant.is_some()) {
        return None;
    }
    let mut body = String::from(
        "Every main-am run ran again with `coprocessor.send_thread_instructions = 0` (runs `*-main-am-free-send-thread-*`): \
         the sending co-processor thread's own code (a count the paper does not give, fitted in the preset to \
         Figure 3) then takes no time, while the DMA, the depth-one buffer and the main processor's polling \
         stay. Each claim judged again with those main-am runs in place of the study's:\n\n",
    );
    let again = judge(&rerun);
    for (c, a) in claims.iter().zip(&again) {
        body += &format!("{} on the study's runs: {}.\n\n", c.spec.heading(), c.verdict.status());
        body += &report::evidence(&format!("with free sending threads, {}", a.spec.name()), &a.verdict);
        body.push('\n');
    }
    let t = Table1::of(&rerun);
    if let (Some(m), Some(c)) = (&t.main_am, &t.coproc_am) {
        body += &format!(
            "\nWith free sending threads the null round trip under main-am is {:.1} us (coproc-am {:.1} us).\n",
            m.mean, c.mean
        );
    }
    let f = Figure3::of(&rerun);
    let lat: Vec<String> = [Primitive::Get, Primitive::Put, Primitive::Store, Primitive::BulkStore]
        .iter()
        .filter_map(|&p| Some(format!("{} {:.1} us", p.label(), f.get(p, CoprocLibrary::MainAm)?.mean)))
        .collect();
    if !lat.is_empty() {
        body += &format!(
            "main-am's primitives then: {} (the paper: get 24, put 24, store 13, bulk store 27).\n",
            lat.join(", ")
        );
    }
    Some(Section { heading: "What the reruns say about the failing claims".into(), body })
}

/// Table 1's round trips per seed against twice the bare DMA one-way;
/// Figure 3 as bars; Table 2's ratios as bars.
pub(super) fn draw_figures(out: &Path, runs: &[Run]) -> Result<Vec<Figure>> {
    let runs = &own(runs)[..];
    let mut figures = vec![round_trips(out, runs)?];
    if let Some(chart) = primitives_chart(&Figure3::of(runs)) {
        let caption = "Split-C primitives' latency per library, as the paper's Figure 3 (Section 5.2). Black \
                       crosses: the paper's values where its text states them (it leaves out coproc-am's put and \
                       bulk store). Look for the optimized library's put and bulk store shorter than main-am's and \
                       its get and store longer than main-am's but shorter than coproc-am's (claim 2). The bulk \
                       bandwidth is in the report's Figure 3 table, not drawn.";
        figures.push(Figure::draw_bars(out, "primitives.svg", &chart, caption)?);
    }
    let t = Table2::of(runs);
    let programs = t.programs();
    if !programs.is_empty() {
        let chart = BarChart {
            title: "Program time with the co-processor library / main-processor library",
            value_label: "optimized / main-am (dashed: equal)",
            categories: programs.clone(),
            groups: vec![("optimized / main-am".into(), programs.iter().map(|p| t.ratio(p)).collect())],
            reference: Some(1.0),
            paper: program_marks(&programs),
        };
        let caption = format!(
            "Each program's run time with the optimized co-processor library over main-am's on the paper's 16 \
             nodes (Table 2, Section 5.3); below the dashed line the co-processor is faster. The paper withholds \
             Table 2's times, so the grey bands are claim 3's readings of its words: {}-{} for the programs it \
             finds about equal, above {} for radix and sample (slower), below {} for mm-global (faster), and \
             wator {:.2}-{:.2} around the paper's \"factor of three\" (Section 7; the cross at 1/{WATOR_FACTOR}). \
             mm-bands is not judged and has no band. Look for bars inside their bands.",
            EQUAL_BAND.0,
            EQUAL_BAND.1,
            EQUAL_BAND.1,
            EQUAL_BAND.0,
            1.0 / WATOR_BAND.1,
            1.0 / WATOR_BAND.0
        );
        figures.push(Figure::draw_bars(out, "programs.svg", &chart, caption)?);
    }
    Ok(figures)
}

/// Figure 3's latencies as bars, the paper's stated values marked; None
/// without a measured primitive.
fn primitives_chart(f: &Figure3) -> Option<BarChart<'static>> {
    if f.rows.is_empty() {
        return None;
    }
    let latencies: Vec<Primitive> = Primitive::ALL.into_iter().filter(|&p| p != Primitive::BulkPut).collect();
    let paper = latencies
        .iter()
        .enumerate()
        .flat_map(|(category, &p)| {
            SPLITC_LIBRARIES.iter().enumerate().filter_map(move |(group, &lib)| {
                Some(BarMark { category, group, value: Some(figure3(p, lib)?), band: None })
            })
        })
        .collect();
    Some(BarChart {
        title: "Split-C primitives: latency per library",
        value_label: "latency (us)",
        categories: latencies.iter().map(|p| p.label().to_string()).collect(),
        groups: SPLITC_LIBRARIES
            .iter()
            .map(|&lib| (lib.label().to_string(), latencies.iter().map(|&p| f.get(p, lib).map(|r| r.mean)).collect()))
            .collect(),
        reference: None,
        paper,
    })
}

/// Claim 3's band for each program (optimized / main-am), and the
/// paper's factor for wator; mm-bands, not judged, gets none.
fn program_marks(programs: &[String]) -> Vec<BarMark> {
    programs
        .iter()
        .enumerate()
        .filter_map(|(category, p)| {
            let (value, band) = match p.as_str() {
                RADIX | SAMPLE => (None, (EQUAL_BAND.1, f64::INFINITY)),
                MM_GLOBAL => (None, (0.0, EQUAL_BAND.0)),
                WATOR => (Some(1.0 / WATOR_FACTOR), (1.0 / WATOR_BAND.1, 1.0 / WATOR_BAND.0)),
                "mm-bands" => return None,
                _ => (None, EQUAL_BAND),
            };
            Some(BarMark { category, group: 0, value, band: Some(band) })
        })
        .collect()
}

fn round_trips(out: &Path, runs: &[&Run]) -> Result<Figure> {
    let t = Table1::of(runs);
    let series: Vec<Series> = AM_LIBRARIES
        .iter()
        .map(|&lib| Series {
            name: lib.label().into(),
            points: runs
                .iter()
                .filter(|r| r.l().library == lib)
                .filter_map(|r| match r.measured {
                    Measured::PingPong { round_trip_us, .. } => Some((r.l().replicate as f64, round_trip_us)),
                    _ => None,
                })
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    let paper = table1_points(&series, runs.first().and_then(|r| dma_flag_us(r)));
    let title = "Null Active Message round trip per seed (dashed: two bare DMA one-ways)";
    let chart = Chart {
        title,
        x_label: "replicate",
        y_label: "round trip (us)",
        series,
        reference_y: t.dma_one_way_us.map(|d| 2.0 * d),
        log_y: false,
        paper: Paper { points: paper, bands: Vec::new() },
    };
    let caption = "The null Active Message's round trip per seed under each library (Table 1, Section 5.1); the \
                   dashed line is twice the measured bare-DMA one-way time, the floor no library can beat. Black \
                   crosses: Table 1's round trips and bare-DMA round trip (the preset's calibration target). Look \
                   for coproc-am more than twice main-am (claim 1) and both above the dashed line.";
    Figure::draw(out, "round-trips.svg", &chart, caption)
}

/// The bare DMA flag's one-way time the paper states (Table 1), as the
/// preset records it for its calibration.
fn dma_flag_us(r: &Run) -> Option<f64> {
    r.record.config.machine.dma_calibration.as_ref().map(|c| c.flag_one_way_us)
}

/// Table 1's round trips at each measured seed's x: one series per
/// library measured, and the bare DMA flag's round trip when known.
fn table1_points(series: &[Series], dma_one_way: Option<f64>) -> Vec<Series> {
    let xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    let at = |y: f64| xs.iter().map(|&x| (x, y)).collect::<Vec<_>>();
    let mut paper: Vec<Series> = TABLE1_ROUND_TRIP_US
        .iter()
        .filter(|(lib, _)| series.iter().any(|s| s.name == lib.label()))
        .map(|&(lib, us)| Series { name: format!("Table 1, {} round trip ({us} us)", lib.label()), points: at(us) })
        .collect();
    if let Some(d) = dma_one_way {
        paper.push(Series { name: format!("Table 1, bare DMA round trip ({} us)", 2.0 * d), points: at(2.0 * d) });
    }
    paper
}

#[cfg(test)]
mod tests {
    use super::*;
    use finegrain_apps::coproc_primitives::FIGURE3;

    #[test]
    fn the_primitives_figure_marks_every_latency_figure_3_states_on_its_bar() {
        let mut f = Figure3::default();
        let row = Row { mean: 1.0, min: 1.0, max: 1.0, seeds: 1 };
        f.rows.insert((Primitive::Get.label(), CoprocLibrary::MainAm.label()), row);
        let chart = primitives_chart(&f).unwrap();
        let latencies = FIGURE3.iter().filter(|(p, ..)| *p != Primitive::BulkPut).count();
        assert_eq!(chart.paper.len(), latencies);
        for m in &chart.paper {
            let p: Primitive = Primitive::ALL.into_iter().find(|p| p.label() == chart.categories[m.category]).unwrap();
            let lib = SPLITC_LIBRARIES[m.group];
            assert_eq!(chart.groups[m.group].0, lib.label());
            assert_eq!(m.value, figure3(p, lib), "{} under {}", p.label(), lib.label());
        }
        assert!(primitives_chart(&Figure3::default()).is_none());
    }

    #[test]
    fn the_programs_figure_carries_claim_3s_bands() {
        let programs: Vec<String> =
            ["fft", RADIX, MM_GLOBAL, "mm-bands", WATOR].iter().map(|s| s.to_string()).collect();
        let marks = program_marks(&programs);
        let at = |i: usize| marks.iter().find(|m| m.category == i);
        assert_eq!(at(0).unwrap().band, Some(EQUAL_BAND));
        assert_eq!(at(1).unwrap().band, Some((EQUAL_BAND.1, f64::INFINITY)));
        assert_eq!(at(2).unwrap().band, Some((0.0, EQUAL_BAND.0)));
        assert!(at(3).is_none(), "mm-bands is not judged");
        let wator = at(4).unwrap();
        assert_eq!(wator.value, Some(1.0 / WATOR_FACTOR));
        assert_eq!(wator.band, Some((1.0 / WATOR_BAND.1, 1.0 / WATOR_BAND.0)));
    }

    #[test]
    fn the_round_trip_figure_shows_table_1_at_every_seed() {
        let series =
            vec![Series { name: CoprocLibrary::MainAm.label().into(), points: vec![(0.0, 25.0), (1.0, 26.0)] }];
        let paper = table1_points(&series, Some(9.5));
        let main = TABLE1_ROUND_TRIP_US.iter().find(|(l, _)| *l == CoprocLibrary::MainAm).unwrap().1;
        assert_eq!(paper.len(), 2, "main-am's row and the DMA flag; coproc-am not measured");
        assert_eq!(paper[0].points, vec![(0.0, main), (1.0, main)]);
        assert_eq!(paper[1].points, vec![(0.0, 19.0), (1.0, 19.0)]);
    }
}
