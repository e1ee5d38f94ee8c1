//! The study's claims of the paper (Sections 5.1-5.3 and 7: Table 1,
//! Figure 3, Table 2) and their checks, on the tables as measured. Every
//! test was written before any run of the study, and revised after a
//! second reading of the paper (still without any result): bands the
//! paper does not state are marked inferred, with the words they come
//! from.

use super::labels::Variant;
use super::runs::{Measured, Run};
use crate::claim::{Basis, Check, Claim, ClaimSpec, Origin};
use finegrain_apps::splitc::primitives::Primitive;
use finegrain_core::CoprocLibrary;
use std::collections::BTreeMap;

pub(super) const CLAIM_1: ClaimSpec = ClaimSpec {
    number: 1,
    origin: Origin::Paper,
    basis: Basis::Calibrated(
        "preset ipps96's sending-, dispatch- and completion-thread instruction counts and link rate were fitted \
         to Figure 3's primitives (main-am and coproc-am get and store among them), which are built of the same \
         messages as Table 1's round trips; Table 1 itself was held out of the fit",
    ),
    title: "Generic Active Messages on the co-processor about double the latency, and more than double it",
    statement: "Running generic Active Message handlers on the slow co-processor, so that the main processor \
                never polls, makes a null Active Message take more than twice as long, and about twice as long, as \
                with the handlers on the main processor (said of the round trip and of the one-way time; the \
                paper's one-way times are not half its round trips). No Active Message library does better than \
                a flag moved by bare DMA.",
    source: "Schauser, Scheiman, Ferguson & Kolano, IPPS 1996, Section 5.1 and Table 1 (null Active Message \
             ping-pong, one way / round trip: bare DMA 9.5 / 19 us, main-processor AM 12.5 / 23 us, co-processor \
             AM 30 / 52 us), Section 5.2 (generic co-processor AM primitives about twice as slow) and Section 7 \
             (Active Message latencies about two-fold)",
    test: "The null round trip of one requester on two idle nodes, mean over the seeds: coproc-am / main-am in \
           (2.0, 3.0] (above 2.0 as Section 5.1 states; the ceiling of 3.0 is inferred from 'about twice' and \
           'about two-fold' in Sections 5.2 and 7; Table 1's ratio is 2.26); and each library's mean round trip \
           above twice the bare DMA flag's one-way time, that time's mean over the seeds (bare DMA is the best any \
           implementation can do, Section 5.1; it is the preset's calibration target). The one-way ratio (Table 1: \
           2.40) is quoted, not tested: the paper halves the round trip only for the DMA flag, its Active Message \
           one-way times are not half their round trips, and the study times no one-way Active Message.",
};

/// Claim 1's band for coproc-am / main-am round trip: above 2.0
/// (Section 5.1, "more than twice"), at most 3.0 (inferred from "about
/// twice", Section 5.2, and "about two-fold", Section 7).
pub const AM_RATIO: Bound = Bound::AboveAtMost(2.0, 3.0);
/// Table 1's own ratios (Section 5.1), shown beside the measured one.
pub const PAPER_AM_RATIO_ROUND_TRIP: f64 = 52.0 / 23.0;
pub const PAPER_AM_RATIO_ONE_WAY: f64 = 30.0 / 12.5;

/// A bound on a ratio.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// Strictly below.
    Below(f64),
    /// At least.
    AtLeast(f64),
    /// At most.
    AtMost(f64),
    /// Strictly above the first, at most the second.
    AboveAtMost(f64, f64),
}

impl Bound {
    pub fn holds(self, r: f64) -> bool {
        match self {
            Bound::Below(x) => r < x,
            Bound::AtLeast(x) => r >= x,
            Bound::AtMost(x) => r <= x,
            Bound::AboveAtMost(lo, hi) => r > lo && r <= hi,
        }
    }

    fn text(self) -> String {
        match self {
            Bound::Below(x) => format!("< {x:?}"),
            Bound::AtLeast(x) => format!(">= {x:?}"),
            Bound::AtMost(x) => format!("<= {x:?}"),
            Bound::AboveAtMost(lo, hi) => format!("> {lo:?} and <= {hi:?}"),
        }
    }
}

/// One row of Table 1 as measured: the library's round trips over the
/// seeds, in us.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub seeds: usize,
}

impl Row {
    pub(super) fn of(values: &[f64]) -> Option<Row> {
        if values.is_empty() {
            return None;
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Row { mean, min, max, seeds: values.len() })
    }

    /// `34.0` or, when the seeds differ, `34.0 (33.6-34.5)`.
    fn shown(&self) -> String {
        if self.min == self.max {
            format!("{:.1}", self.mean)
        } else {
            format!("{:.1} ({:.1}-{:.1})", self.mean, self.min, self.max)
        }
    }
}

/// Table 1 as measured: the bare DMA flag's one-way time (mean over every
/// ping-pong run's) and each library's null round trip, in us.
#[derive(Clone, Debug, PartialEq)]
pub struct Table1 {
    pub dma_one_way_us: Option<f64>,
    pub main_am: Option<Row>,
    pub coproc_am: Option<Row>,
}

impl Table1 {
    pub fn of(runs: &[&Run]) -> Table1 {
        let ping_pongs = || {
            runs.iter().filter_map(|r| match r.measured {
                Measured::PingPong { round_trip_us, dma_one_way_us } => {
                    Some((r.l().library, round_trip_us, dma_one_way_us))
                }
                _ => None,
            })
        };
        let row = |lib: CoprocLibrary| {
            let v: Vec<f64> = ping_pongs().filter(|p| p.0 == lib).map(|p| p.1).collect();
            Row::of(&v)
        };
        let dma: Vec<f64> = ping_pongs().map(|p| p.2).collect();
        Table1 {
            dma_one_way_us: Row::of(&dma).map(|r| r.mean),
            main_am: row(CoprocLibrary::MainAm),
            coproc_am: row(CoprocLibrary::CoprocAm),
        }
    }
}

/// The checks of claim 1 on `t`.
pub(super) fn checks_1(t: &Table1) -> Vec<Check> {
    let (Some(dma), Some(main), Some(coproc)) = (t.dma_one_way_us, &t.main_am, &t.coproc_am) else {
        let mut c = Vec::new();
        if t.dma_one_way_us.is_none() {
            c.push(Check::missing("the bare DMA flag"));
        }
        if t.main_am.is_none() {
            c.push(Check::missing("main-am"));
        }
        if t.coproc_am.is_none() {
            c.push(Check::missing("coproc-am"));
        }
        return c;
    };
    let ratio = coproc.mean / main.mean;
    let mut c = vec![Check::new(
        AM_RATIO.holds(ratio),
        format!("round trip coproc-am / main-am (Table 1: {PAPER_AM_RATIO_ROUND_TRIP:.2})"),
        format!("{ratio:.2} ({} / {} us)", coproc.shown(), main.shown()),
        AM_RATIO.text(),
    )];
    for (name, row) in [("main-am", main), ("coproc-am", coproc)] {
        c.push(Check::new(
            row.mean > 2.0 * dma,
            format!("{name} round trip, us, over 2 x the DMA flag's one way ({dma:.2} us)"),
            format!("{:.1}", row.mean),
            format!("> {:.1}", 2.0 * dma),
        ));
    }
    c.push(Check::note(
        "one-way ratio, not measured (Table 1: 30 / 12.5 us; not half the round trips)",
        format!("paper: {PAPER_AM_RATIO_ONE_WAY:.2}"),
    ));
    c
}

pub(super) const CLAIM_2: ClaimSpec = ClaimSpec {
    number: 2,
    origin: Origin::Paper,
    basis: Basis::Calibrated(
        "Figure 3's twelve stated values, the numbers this claim compares, were the targets the preset ipps96's \
         sending-, dispatch- and completion-thread instruction counts and link rate were fitted to",
    ),
    title: "Optimized co-processor Split-C: put and bulk store faster, get and store much slower, a little more \
            bandwidth",
    statement: "Invoking Split-C's few handlers directly and using the co-processor's DMA and remote atomic add \
                makes put and the 32-byte bulk store faster than in the main-processor library, while get and \
                store stay much slower than there, though much faster than with generic handlers on the \
                co-processor; long bulk transfers reach a higher bandwidth than the main-processor library's, but \
                only a little higher (about a fifth). Figure 3's numbers (get and store 42% and 69% slower) govern \
                over Section 5.3's recap of them as 30-40% slower.",
    source: "Schauser, Scheiman, Ferguson & Kolano, IPPS 1996, Section 5.2 and Figure 3 (get 34 vs 24 us, store \
             22 vs 13, put 22 vs 24, 32-byte bulk store 23 vs 27, co-processor AM get 54 and store 30; bandwidth 38 \
             vs 32 MB/s), Section 5.3 (only a 20% bandwidth difference; gets and stores 30-40% slower) and \
             Section 7 (put as fast, get and store still slower)",
    test: "Mean over the seeds (their range shown), two idle nodes, each check a ratio of the optimized library's \
           value to another library's: put and the 32-byte bulk store below 1.0 against main-am; get and store at \
           least 1.2 against main-am (inferred from 'much slower', Section 5.2, and the lower end of Section 5.3's \
           '30-40%'); get and store at most 0.85 against coproc-am (inferred from 'much better', Section 5.2); the \
           bandwidth of long bulk puts in (1.0, 1.4] against main-am's (higher, Section 5.2; the ceiling inferred \
           from 'only a 20% difference', Section 5.3). The paper's ratios (get 1.42, store 1.69, put 0.92, bulk \
           store 0.85, get and store against coproc-am 0.63 and 0.73, bandwidth 1.19) are printed as a note, not \
           judged. Bulk-get bandwidth (slightly higher on the co-processor, Section 5.3) is not measured.",
};

/// Claim 2's bounds on optimized / other library.
pub const FASTER: Bound = Bound::Below(1.0);
/// "Much slower" than main-am (inferred, Section 5.2; Section 5.3's
/// "30-40%" at its lower end less a margin).
pub const MUCH_SLOWER: Bound = Bound::AtLeast(1.2);
/// "Much better" than co-processor Active Messages (inferred, Section
/// 5.2).
pub const MUCH_BETTER: Bound = Bound::AtMost(0.85);
/// Bulk bandwidth: higher (Section 5.2), "only a 20% difference"
/// (Section 5.3; the ceiling is inferred).
pub const BANDWIDTH_RATIO: Bound = Bound::AboveAtMost(1.0, 1.4);

pub(super) const CLAIM_3: ClaimSpec = ClaimSpec {
    number: 3,
    origin: Origin::Paper,
    basis: Basis::Predicted,
    title: "Programs: the rest about equal, radix and sample slower, global mm faster, wator about three times \
            faster",
    statement: "On 16 nodes, every Split-C program but four takes about the same time with either library, since \
                they move data in bulk in phases separated by barriers and the bandwidths differ little; the four \
                differ clearly: radix and sample run slower with the co-processor library (its slower store and \
                get), the global blocked matrix multiply runs faster (several gets in flight, a little more \
                bandwidth), and wator runs about three times faster, because under the main-processor library a \
                remote read waits until its owner next communicates (it polls only then): hundreds of \
                microseconds per read instead of tens.",
    source: "Schauser, Scheiman, Ferguson & Kolano, IPPS 1996, Section 5.3 and Table 2 (16 nodes; the programs \
             that vary are mm, radix, sample and wator; wator's read waits 25-33 us on the co-processor against \
             600-800 us) and Section 7 (wator: a factor of three)",
    test: "Program time with the optimized library over main-am's (mean over the seeds), programs on 16 nodes only \
           (runs on other node counts are not judged): every program other than radix, sample, the two mm and wator \
           within 0.85-1.15 (inferred band for 'similar'; not decided when fewer than 6 of the paper's nine such \
           programs ran, those missing listed); radix and sample above 1.15 and mm-global below 0.85 (the same \
           band's edges: 'significant variation' and 'similar' partition the programs); mm-bands not judged (the \
           paper explains only the global one); wator's main-am time over its optimized time within 2.5-4.0 \
           (inferred around 'a factor of three', Section 7); wator's mean remote-read wait (issue to data on the \
           requesting node, per blocking read) under main-am at least 10 times the optimized library's (inferred: \
           about half the paper's lowest ratio, 600 / 33), below 100 us under the optimized library and at least \
           100 us under main-am (tens against hundreds). The paper's 25-33 and 600-800 us are printed as a note.",
};

/// Programs the paper singles out (Section 5.3); every other one should
/// run about equally (claim 3).
pub const RADIX: &str = "radix";
pub const SAMPLE: &str = "sample";
pub const WATOR: &str = "wator";
pub const MM_GLOBAL: &str = "mm-global";

/// The nine programs of Table 2 that Section 5.3 does not name among those
/// that vary, as the study names them (p-ray is `pray`).
pub const PAPER_OTHERS: [&str; 9] =
    ["bitonic", "cannon-aligned", "cannon-skewed", "fft", "fftb", "pray", "radixb", "sampleb", "shell"];
/// Fewer of [`PAPER_OTHERS`] measured than this leaves "the rest about
/// equal" undecided.
pub const MIN_OTHERS: usize = 6;

/// Table 2's machine: 16 nodes (Section 5.3).
pub const PAPER_NODES: u32 = 16;

/// "About equal" in claim 3: co-processor time within this factor of the
/// main processor's (inferred); radix and sample must lie above it and
/// mm-global below it.
pub const EQUAL_BAND: (f64, f64) = (0.85, 1.15);
/// "A factor of three" for wator (Section 7; the band is inferred).
pub const WATOR_BAND: (f64, f64) = (2.5, 4.0);
/// Wator's main-am time over the optimized library's: "a factor of
/// three" (Section 7).
pub const WATOR_FACTOR: f64 = 3.0;
/// Wator's read waits, main-am over optimized: at least this (inferred,
/// about half of 600 / 33, Section 5.3).
pub const WAIT_RATIO: f64 = 10.0;
/// "Tens against hundreds" of us: the optimized library's mean wait below
/// this, main-am's at least this.
pub const WAIT_SPLIT_US: f64 = 100.0;

/// Figure 3 and the bandwidth as measured: per primitive and library,
/// latency in us (bulk-put: MB/s), over the seeds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figure3 {
    pub rows: BTreeMap<(&'static str, &'static str), Row>,
}

impl Figure3 {
    pub fn of(runs: &[&Run]) -> Figure3 {
        let mut values: BTreeMap<(&'static str, &'static str), Vec<f64>> = BTreeMap::new();
        for r in runs {
            let super::labels::Part::Primitive { primitive, .. } = r.l().part else { continue };
            let v = match r.measured {
                Measured::Latency { us } => us,
                Measured::Bandwidth { mb_per_s } => mb_per_s,
                _ => continue,
            };
            values.entry((primitive.label(), r.l().library.label())).or_default().push(v);
        }
        Figure3 { rows: values.iter().filter_map(|(k, v)| Some((*k, Row::of(v)?))).collect() }
    }

    pub fn get(&self, p: Primitive, lib: CoprocLibrary) -> Option<&Row> {
        self.rows.get(&(p.label(), lib.label()))
    }
}

/// Table 2 as measured on one node count: per program and library, run
/// time in us over the seeds, and wator's mean remote-read wait per
/// library (issue to data on the requesting node, per blocking read).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table2 {
    pub time: BTreeMap<(String, &'static str), Row>,
    pub read_wait: BTreeMap<&'static str, Row>,
}

impl Table2 {
    /// Table 2 on the paper's 16 nodes: the runs claim 3 judges.
    pub fn of(runs: &[&Run]) -> Table2 {
        Table2::on(runs, PAPER_NODES)
    }

    /// Table 2 from the program runs on `nodes` nodes (others left out).
    pub fn on(runs: &[&Run], nodes: u32) -> Table2 {
        let mut times: BTreeMap<(String, &'static str), Vec<f64>> = BTreeMap::new();
        let mut waits: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
        for r in runs {
            let Measured::Program { time_us, read_wait_us, .. } = &r.measured else { continue };
            if r.record.config.run.topology.nodes != nodes {
                continue;
            }
            let lib = r.l().library.label();
            times.entry((r.l().subject(), lib)).or_default().push(*time_us);
            if let (Some(w), true) = (read_wait_us, r.l().subject() == WATOR) {
                waits.entry(lib).or_default().push(*w);
            }
        }
        Table2 {
            time: times.iter().filter_map(|(k, v)| Some((k.clone(), Row::of(v)?))).collect(),
            read_wait: waits.iter().filter_map(|(k, v)| Some((*k, Row::of(v)?))).collect(),
        }
    }

    /// Programs measured under both libraries, in name order.
    pub fn programs(&self) -> Vec<String> {
        let mut names: Vec<String> = self.time.keys().map(|(p, _)| p.clone()).collect();
        names.dedup();
        names.into_iter().filter(|p| self.ratio(p).is_some()).collect()
    }

    /// Optimized time over main-am time.
    pub fn ratio(&self, program: &str) -> Option<f64> {
        let t = |lib: CoprocLibrary| self.time.get(&(program.to_string(), lib.label())).map(|r| r.mean);
        Some(t(CoprocLibrary::Optimized)? / t(CoprocLibrary::MainAm)?)
    }
}

/// A check that the ratio of `a` to `b` (named `what`) is within `bound`,
/// with both means and their ranges over the seeds.
fn compare(a: Option<&Row>, b: Option<&Row>, what: &str, bound: Bound, unit: &str) -> Check {
    let (Some(a), Some(b)) = (a, b) else { return Check::missing(what) };
    let r = a.mean / b.mean;
    Check::new(bound.holds(r), what, format!("{r:.2} ({} / {} {unit})", a.shown(), b.shown()), bound.text())
}

/// The checks of claim 2 on `f`.
pub(super) fn checks_2(f: &Figure3) -> Vec<Check> {
    use CoprocLibrary::{CoprocAm, MainAm, Optimized};
    let l = |p, lib| f.get(p, lib);
    let mut c = vec![
        compare(l(Primitive::Put, Optimized), l(Primitive::Put, MainAm), "put optimized / main-am", FASTER, "us"),
        compare(
            l(Primitive::BulkStore, Optimized),
            l(Primitive::BulkStore, MainAm),
            "32-byte bulk store optimized / main-am",
            FASTER,
            "us",
        ),
    ];
    for p in [Primitive::Get, Primitive::Store] {
        let what = format!("{} optimized / main-am", p.label());
        c.push(compare(l(p, Optimized), l(p, MainAm), &what, MUCH_SLOWER, "us"));
    }
    for p in [Primitive::Get, Primitive::Store] {
        let what = format!("{} optimized / coproc-am", p.label());
        c.push(compare(l(p, Optimized), l(p, CoprocAm), &what, MUCH_BETTER, "us"));
    }
    c.push(compare(
        l(Primitive::BulkPut, Optimized),
        l(Primitive::BulkPut, MainAm),
        "bulk bandwidth optimized / main-am",
        BANDWIDTH_RATIO,
        "MB/s",
    ));
    c.push(Check::note(
        "the paper's ratios (Figure 3, Section 5.2)",
        "put 0.92, bulk store 0.85, get 1.42, store 1.69, against coproc-am get 0.63 and store 0.73, bandwidth 1.19",
    ));
    c
}

fn within(x: f64, band: (f64, f64)) -> bool {
    x >= band.0 && x <= band.1
}

/// The checks of claim 3 on `t` (Table 2 on 16 nodes).
pub(super) fn checks_3(t: &Table2) -> Vec<Check> {
    let named = |p: &str| p == RADIX || p == SAMPLE || p == WATOR || p.starts_with("mm");
    let programs = t.programs();
    let others: Vec<(String, f64)> =
        programs.iter().filter(|p| !named(p)).filter_map(|p| Some((p.clone(), t.ratio(p)?))).collect();
    let absent: Vec<&str> = PAPER_OTHERS.iter().copied().filter(|p| !programs.iter().any(|q| q == p)).collect();
    let mut c = Vec::new();
    if PAPER_OTHERS.len() - absent.len() < MIN_OTHERS {
        c.push(Check::missing(&format!(
            "the programs the paper finds about equal on {PAPER_NODES} nodes: {} of its {} ran, at least \
             {MIN_OTHERS} needed (missing: {})",
            PAPER_OTHERS.len() - absent.len(),
            PAPER_OTHERS.len(),
            absent.join(", ")
        )));
    } else {
        let equal = others.iter().filter(|(_, r)| within(*r, EQUAL_BAND)).count();
        let list: Vec<String> = others.iter().map(|(p, r)| format!("{p} {r:.2}")).collect();
        c.push(Check::new(
            equal == others.len(),
            format!(
                "other programs with optimized/main-am within {}-{} ({})",
                EQUAL_BAND.0,
                EQUAL_BAND.1,
                list.join(", ")
            ),
            format!("{equal} of {}", others.len()),
            "all",
        ));
        if !absent.is_empty() {
            c.push(Check::note(format!("not run on {PAPER_NODES} nodes"), absent.join(", ")));
        }
    }
    for p in [RADIX, SAMPLE] {
        c.push(match t.ratio(p) {
            Some(r) => Check::new(
                r > EQUAL_BAND.1,
                format!("{p} optimized/main-am"),
                format!("{r:.2}"),
                format!("> {}", EQUAL_BAND.1),
            ),
            None => Check::missing(p),
        });
    }
    c.push(match t.ratio(MM_GLOBAL) {
        Some(r) => Check::new(
            r < EQUAL_BAND.0,
            format!("{MM_GLOBAL} optimized/main-am"),
            format!("{r:.2}"),
            format!("< {}", EQUAL_BAND.0),
        ),
        None => Check::missing(MM_GLOBAL),
    });
    c.push(match t.ratio(WATOR) {
        Some(r) => Check::new(
            within(1.0 / r, WATOR_BAND),
            format!("wator main-am/optimized (the paper: {WATOR_FACTOR})"),
            format!("{:.2}", 1.0 / r),
            format!("{}-{}", WATOR_BAND.0, WATOR_BAND.1),
        ),
        None => Check::missing(WATOR),
    });
    let wait = |lib: CoprocLibrary| t.read_wait.get(lib.label()).map(|r| r.mean);
    match (wait(CoprocLibrary::MainAm), wait(CoprocLibrary::Optimized)) {
        (Some(m), Some(o)) => {
            c.push(Check::new(
                m >= WAIT_RATIO * o,
                "wator read wait main-am / optimized",
                format!("{:.1} ({m:.1} / {o:.1} us)", m / o),
                format!(">= {WAIT_RATIO:?}"),
            ));
            c.push(Check::new(
                o < WAIT_SPLIT_US,
                "wator read wait optimized, us",
                format!("{o:.1}"),
                format!("< {WAIT_SPLIT_US:?}"),
            ));
            c.push(Check::new(
                m >= WAIT_SPLIT_US,
                "wator read wait main-am, us",
                format!("{m:.1}"),
                format!(">= {WAIT_SPLIT_US:?}"),
            ));
            c.push(Check::note("the paper's read waits, us", "25-33 optimized, 600-800 main-am"));
        }
        _ => c.push(Check::missing("wator's read waits")),
    }
    c
}

/// The study's own runs (no rerun variant).
pub(super) fn own(runs: &[Run]) -> Vec<&Run> {
    runs.iter().filter(|r| r.l().variant.is_none()).collect()
}

/// The study's runs with every main-am run replaced by its rerun under
/// `variant`: the claims judged again with that mechanism off.
pub(super) fn with_variant(runs: &[Run], variant: Variant) -> Vec<&Run> {
    let main = |r: &Run| r.l().library == CoprocLibrary::MainAm;
    runs.iter().filter(|r| if main(r) { r.l().variant == Some(variant) } else { r.l().variant.is_none() }).collect()
}

pub(super) fn evaluate(runs: &[Run]) -> Vec<Claim> {
    judge(&own(runs))
}

/// The three claims on `runs`.
pub(super) fn judge(runs: &[&Run]) -> Vec<Claim> {
    vec![
        Claim::judged(CLAIM_1, &checks_1(&Table1::of(runs))),
        Claim::judged(CLAIM_2, &checks_2(&Figure3::of(runs))),
        Claim::judged(CLAIM_3, &checks_3(&Table2::of(runs))),
    ]
}
#[cfg(test)]
mod tests {
    use super::super::labels::{Part, RunLabels};
    use super::*;
    use crate::record::RunRecord;
    use finegrain_apps::micro::{MicroConfig, Protocol};
    use finegrain_apps::WorkloadSpec;
    use finegrain_core::{MachineConfig, Policy, Topology};
    use finegrain_sim::SimConfig;

    fn row(mean: f64) -> Option<Row> {
        Some(Row { mean, min: mean, max: mean, seeds: 3 })
    }

    /// A finished run with `measured` as its result, on `nodes` nodes.
    fn run(library: CoprocLibrary, part: Part, nodes: u32, measured: Measured) -> Run {
        let machine = MachineConfig::load("ipps96").unwrap();
        let topology = Topology { nodes, procs_per_node: 1 };
        let config = SimConfig::new(machine, topology, Policy::Coprocessor { library }, 1);
        let workload = WorkloadSpec::Micro(MicroConfig {
            protocol: Protocol::Null,
            mean_compute_cycles: 0.0,
            requests_per_node: 1,
            single_requester: true,
        });
        let record = RunRecord {
            study: "coprocessor".into(),
            experiment: None,
            id: String::new(),
            labels: RunLabels { library, replicate: 0, seed: 1, part, variant: None },
            config,
            workload,
            stats: Default::default(),
            measures: None,
            wall: Default::default(),
        };
        Run { record, measures: None, measured }
    }

    fn judged(dma: Option<f64>, main: Option<Row>, coproc: Option<Row>) -> Claim {
        Claim::judged(CLAIM_1, &checks_1(&Table1 { dma_one_way_us: dma, main_am: main, coproc_am: coproc }))
    }

    #[test]
    fn table_1_as_the_paper_gives_it_supports_claim_1() {
        // Table 1: round trips 23 and 52 us, bare DMA one way 9.5 us.
        let c = judged(Some(9.5), row(23.0), row(52.0));
        assert!(c.verdict.supported && c.verdict.decided, "{}", c.line());
        assert!(
            c.line().starts_with(
                "claim 1: supported - round trip coproc-am / main-am (Table 1: 2.26) = 2.26 (52.0 / 23.0 us) \
                 (needs > 2.0 and <= 3.0)"
            ),
            "{}",
            c.line()
        );
        assert!(
            c.line().contains(
                "one-way ratio, not measured (Table 1: 30 / 12.5 us; not half the round trips) = paper: 2.40"
            ),
            "{}",
            c.line()
        );
        assert_eq!(c.verdict.failed_checks, 0);
    }

    #[test]
    fn a_ratio_of_two_or_less_is_not_supported() {
        let c = judged(Some(9.5), row(25.0), row(45.0));
        assert!(c.verdict.decided && !c.verdict.supported, "{}", c.line());
        assert_eq!(c.verdict.failed_checks, 1);
        assert!(
            c.line().contains("FAILS: round trip coproc-am / main-am (Table 1: 2.26) = 1.80 (45.0 / 25.0 us)"),
            "{}",
            c.line()
        );
        // Exactly 2 is not more than twice.
        assert!(!judged(Some(1.0), row(10.0), row(20.0)).verdict.supported);
    }

    #[test]
    fn a_ratio_above_three_is_not_about_twice() {
        let c = judged(Some(9.5), row(20.0), row(70.0));
        assert!(c.verdict.decided && !c.verdict.supported, "{}", c.line());
        assert_eq!(c.verdict.failed_checks, 1);
        assert!(
            c.line().contains("FAILS: round trip coproc-am / main-am (Table 1: 2.26) = 3.50 (70.0 / 20.0 us)"),
            "{}",
            c.line()
        );
        // Exactly 3 is still within the band.
        assert!(judged(Some(9.5), row(20.0), row(60.0)).verdict.supported);
    }

    #[test]
    fn a_round_trip_below_the_dma_round_trip_is_not_supported() {
        // About twice, but main-am under two bare DMA one-ways.
        let c = judged(Some(9.5), row(15.0), row(40.0));
        assert!(c.verdict.decided && !c.verdict.supported, "{}", c.line());
        assert_eq!(c.verdict.failed_checks, 1);
        assert!(c.line().contains(
            "FAILS: main-am round trip, us, over 2 x the DMA flag's one way (9.50 us) = 15.0 (needs > 19.0)"
        ));
    }

    #[test]
    fn a_missing_library_decides_nothing() {
        let c = judged(Some(9.5), row(23.0), None);
        assert!(!c.verdict.decided, "{}", c.line());
        assert_eq!(c.line(), "claim 1: not decided - no data for coproc-am");
        assert!(!judged(None, None, None).verdict.decided);
    }

    #[test]
    fn rows_average_over_the_seeds() {
        let r = Row::of(&[10.0, 14.0, 12.0]).unwrap();
        assert_eq!(r, Row { mean: 12.0, min: 10.0, max: 14.0, seeds: 3 });
        assert_eq!(Row::of(&[]), None);
        assert_eq!(r.shown(), "12.0 (10.0-14.0)");
        assert_eq!(row(12.0).unwrap().shown(), "12.0");
    }

    #[test]
    fn table_1_averages_the_dma_one_way_over_every_ping_pong() {
        let part = || Part::PingPong { round_trips: 10, dma_rounds: 10, dma_one_way_cycles: 380.0 };
        let pp = |round_trip_us, dma_one_way_us| Measured::PingPong { round_trip_us, dma_one_way_us };
        let runs = [
            run(CoprocLibrary::MainAm, part(), 2, pp(22.0, 9.0)),
            run(CoprocLibrary::MainAm, part(), 2, pp(24.0, 10.0)),
            run(CoprocLibrary::CoprocAm, part(), 2, pp(52.0, 11.0)),
        ];
        let t = Table1::of(&runs.iter().collect::<Vec<_>>());
        assert_eq!(t.dma_one_way_us, Some(10.0));
        assert_eq!(t.main_am, Some(Row { mean: 23.0, min: 22.0, max: 24.0, seeds: 2 }));
        assert_eq!(t.coproc_am.map(|r| r.mean), Some(52.0));
    }

    #[test]
    fn bounds_hold_as_written() {
        assert!(Bound::Below(1.0).holds(0.99) && !Bound::Below(1.0).holds(1.0));
        assert!(Bound::AtLeast(1.2).holds(1.2) && !Bound::AtLeast(1.2).holds(1.19));
        assert!(Bound::AtMost(0.85).holds(0.85) && !Bound::AtMost(0.85).holds(0.86));
        let b = Bound::AboveAtMost(1.0, 1.4);
        assert!(!b.holds(1.0) && b.holds(1.01) && b.holds(1.4) && !b.holds(1.41));
        assert_eq!(b.text(), "> 1.0 and <= 1.4");
    }

    fn figure3(rows: &[(Primitive, CoprocLibrary, f64)]) -> Figure3 {
        Figure3 { rows: rows.iter().map(|&(p, l, v)| ((p.label(), l.label()), row(v).unwrap())).collect() }
    }

    /// Figure 3 as the paper gives it (bandwidth 38 vs 32 MB/s).
    fn paper_figure3() -> Vec<(Primitive, CoprocLibrary, f64)> {
        finegrain_apps::coproc_primitives::FIGURE3.to_vec()
    }

    fn claim_2(rows: &[(Primitive, CoprocLibrary, f64)]) -> Claim {
        Claim::judged(CLAIM_2, &checks_2(&figure3(rows)))
    }

    #[test]
    fn the_papers_figure3_supports_claim_2() {
        let c = claim_2(&paper_figure3());
        assert!(c.verdict.decided && c.verdict.supported, "{}", c.line());
        assert!(c.line().contains("get optimized / main-am = 1.42 (34.0 / 24.0 us) (needs >= 1.2)"), "{}", c.line());
        assert!(
            c.line().contains("store optimized / coproc-am = 0.73 (22.0 / 30.0 us) (needs <= 0.85)"),
            "{}",
            c.line()
        );
        assert!(c
            .line()
            .contains("bulk bandwidth optimized / main-am = 1.19 (38.0 / 32.0 MB/s) (needs > 1.0 and <= 1.4)"));
        assert!(c.line().contains("the paper's ratios (Figure 3, Section 5.2) = put 0.92"), "{}", c.line());
    }

    #[test]
    fn claim_2_shows_the_range_over_the_seeds() {
        let mut f = figure3(&paper_figure3());
        let key = (Primitive::Get.label(), CoprocLibrary::Optimized.label());
        f.rows.insert(key, Row { mean: 34.0, min: 33.0, max: 35.0, seeds: 3 });
        let c = Claim::judged(CLAIM_2, &checks_2(&f));
        assert!(c.line().contains("get optimized / main-am = 1.42 (34.0 (33.0-35.0) / 24.0 us)"), "{}", c.line());
    }

    #[test]
    fn a_slower_optimized_put_or_less_bandwidth_fails_claim_2() {
        let mut rows = paper_figure3();
        rows[7].2 = 25.0; // optimized put above main-am's 24
        rows[11].2 = 30.0; // optimized bandwidth below main-am's 32
        let c = claim_2(&rows);
        assert!(c.verdict.decided && !c.verdict.supported, "{}", c.line());
        assert_eq!(c.verdict.failed_checks, 2, "{}", c.line());
        rows.remove(1); // no coproc-am get
        let c = claim_2(&rows);
        assert!(!c.verdict.decided, "{}", c.line());
    }

    #[test]
    fn get_or_store_only_a_little_slower_than_main_am_fails_claim_2() {
        let mut rows = paper_figure3();
        rows[2].2 = 26.4; // get 1.10 x main-am's: slower, but not much
        let c = claim_2(&rows);
        assert_eq!(c.verdict.failed_checks, 1, "{}", c.line());
        assert!(
            c.line().contains("FAILS: get optimized / main-am = 1.10 (26.4 / 24.0 us) (needs >= 1.2)"),
            "{}",
            c.line()
        );
        rows[2].2 = 30.0;
        rows[0].2 = 25.0; // exactly 1.2: still much slower
        assert!(claim_2(&rows).verdict.supported, "{}", claim_2(&rows).line());
        let mut rows = paper_figure3();
        rows[5].2 = 15.0; // store 1.15 x main-am's
        assert_eq!(claim_2(&rows).verdict.failed_checks, 1, "{}", claim_2(&rows).line());
    }

    #[test]
    fn get_or_store_close_to_coproc_am_fails_claim_2() {
        let mut rows = paper_figure3();
        rows[4].2 = 24.0; // coproc-am store 24: optimized 22 is 0.92 of it
        let c = claim_2(&rows);
        assert_eq!(c.verdict.failed_checks, 1, "{}", c.line());
        assert!(
            c.line().contains("FAILS: store optimized / coproc-am = 0.92 (22.0 / 24.0 us) (needs <= 0.85)"),
            "{}",
            c.line()
        );
        let mut rows = paper_figure3();
        rows[1].2 = 38.0; // coproc-am get 38: optimized 34 is 0.89 of it
        assert_eq!(claim_2(&rows).verdict.failed_checks, 1, "{}", claim_2(&rows).line());
    }

    #[test]
    fn far_more_bandwidth_than_main_am_fails_claim_2() {
        let mut rows = paper_figure3();
        rows[11].2 = 48.0; // 1.5 x main-am's 32: not "only 20%"
        let c = claim_2(&rows);
        assert_eq!(c.verdict.failed_checks, 1, "{}", c.line());
        assert!(
            c.line().contains("FAILS: bulk bandwidth optimized / main-am = 1.50 (48.0 / 32.0 MB/s)"),
            "{}",
            c.line()
        );
        rows[11].2 = 44.8; // 1.4 exactly: still within
        assert!(claim_2(&rows).verdict.supported, "{}", claim_2(&rows).line());
    }

    fn table2(times: &[(&str, f64, f64)], waits: Option<(f64, f64)>) -> Table2 {
        let mut t = Table2::default();
        for &(p, main, opt) in times {
            t.time.insert((p.to_string(), CoprocLibrary::MainAm.label()), row(main).unwrap());
            t.time.insert((p.to_string(), CoprocLibrary::Optimized.label()), row(opt).unwrap());
        }
        if let Some((m, o)) = waits {
            t.read_wait.insert(CoprocLibrary::MainAm.label(), row(m).unwrap());
            t.read_wait.insert(CoprocLibrary::Optimized.label(), row(o).unwrap());
        }
        t
    }

    /// Table 2 as Section 5.3 describes it: the nine others about equal,
    /// radix and sample clearly slower, mm-global clearly faster, wator 3x.
    fn paper_like() -> Vec<(&'static str, f64, f64)> {
        vec![
            ("bitonic", 100.0, 102.0),
            ("cannon-aligned", 100.0, 98.0),
            ("cannon-skewed", 100.0, 101.0),
            ("fft", 100.0, 95.0),
            ("fftb", 100.0, 100.0),
            ("pray", 100.0, 97.0),
            ("radixb", 100.0, 104.0),
            ("sampleb", 100.0, 103.0),
            ("shell", 100.0, 105.0),
            (RADIX, 100.0, 130.0),
            (SAMPLE, 100.0, 120.0),
            (MM_GLOBAL, 100.0, 70.0),
            ("mm-bands", 100.0, 140.0),
            (WATOR, 300.0, 100.0),
        ]
    }

    const PAPER_WAITS: Option<(f64, f64)> = Some((700.0, 30.0));

    fn claim_3(times: &[(&str, f64, f64)], waits: Option<(f64, f64)>) -> Claim {
        Claim::judged(CLAIM_3, &checks_3(&table2(times, waits)))
    }

    #[test]
    fn paper_like_program_times_support_claim_3() {
        let c = claim_3(&paper_like(), PAPER_WAITS);
        assert!(c.verdict.decided && c.verdict.supported, "{}", c.line());
        // mm-bands' 1.40 is not judged: the paper explains only mm-global.
        assert!(c.line().contains("other programs with optimized/main-am within 0.85-1.15"), "{}", c.line());
        assert!(c.line().contains(") = 9 of 9 (needs all)"), "{}", c.line());
        assert!(c.line().contains("wator read wait main-am / optimized = 23.3 (700.0 / 30.0 us) (needs >= 10.0)"));
        assert!(c.line().contains("the paper's read waits, us = 25-33 optimized, 600-800 main-am"));
        assert!(!c.line().contains("not run on"), "{}", c.line());
    }

    #[test]
    fn one_other_program_outside_the_band_fails_claim_3() {
        let mut times = paper_like();
        times[8].2 = 130.0; // shell 1.30: the paper does not name it
        let c = claim_3(&times, PAPER_WAITS);
        assert_eq!(c.verdict.failed_checks, 1, "{}", c.line());
        assert!(c.line().contains("FAILS: other programs with optimized/main-am within 0.85-1.15"), "{}", c.line());
        assert!(c.line().contains(") = 8 of 9 (needs all)"), "{}", c.line());
    }

    #[test]
    fn claim_3_fails_on_each_of_its_checks() {
        let mut times = paper_like();
        times[3].2 = 130.0; // fft no longer equal
        times[9].2 = 110.0; // radix slower, but not significantly
        times[10].2 = 90.0; // sample faster on the co-processor
        times[11].2 = 90.0; // mm-global faster, but not significantly
        times[13].2 = 60.0; // wator 5x: beyond "a factor of three"
                            // main-am 90 us (not hundreds), optimized 30 us: 3x.
        let c = claim_3(&times, Some((90.0, 30.0)));
        assert!(c.verdict.decided && !c.verdict.supported, "{}", c.line());
        assert_eq!(c.verdict.failed_checks, 7, "{}", c.line());
        // Optimized waits of hundreds fail too.
        let c = claim_3(&paper_like(), Some((7000.0, 300.0)));
        assert_eq!(c.verdict.failed_checks, 1, "{}", c.line());
        assert!(c.line().contains("FAILS: wator read wait optimized, us = 300.0 (needs < 100.0)"), "{}", c.line());
        // Wator 2.4x is below the band, 4.0x still within.
        let mut times = paper_like();
        times[13].2 = 125.0;
        assert_eq!(claim_3(&times, PAPER_WAITS).verdict.failed_checks, 1);
        times[13].2 = 75.0;
        assert!(claim_3(&times, PAPER_WAITS).verdict.supported);
        // No waits: not decided.
        let c = claim_3(&paper_like(), None);
        assert!(!c.verdict.decided, "{}", c.line());
    }

    #[test]
    fn claim_3_needs_six_of_the_nine_other_programs() {
        // Six of the nine: decided, the missing ones listed.
        let times: Vec<_> = paper_like().into_iter().filter(|p| !["fft", "fftb", "pray"].contains(&p.0)).collect();
        let c = claim_3(&times, PAPER_WAITS);
        assert!(c.verdict.decided && c.verdict.supported, "{}", c.line());
        assert!(c.line().contains("not run on 16 nodes = fft, fftb, pray"), "{}", c.line());
        // Five: not decided.
        let times: Vec<_> = times.into_iter().filter(|p| p.0 != "shell").collect();
        let c = claim_3(&times, PAPER_WAITS);
        assert!(!c.verdict.decided, "{}", c.line());
        assert!(
            c.line().contains("5 of its 9 ran, at least 6 needed (missing: fft, fftb, pray, shell)"),
            "{}",
            c.line()
        );
    }

    #[test]
    fn table_2_keeps_only_the_papers_16_nodes() {
        let program = |p: &str| Part::Program { program: p.into() };
        let measured =
            |time_us: f64, w: Option<f64>| Measured::Program { time_us, phases_us: BTreeMap::new(), read_wait_us: w };
        let runs = [
            run(CoprocLibrary::MainAm, program(WATOR), 16, measured(300.0, Some(700.0))),
            run(CoprocLibrary::Optimized, program(WATOR), 16, measured(100.0, Some(30.0))),
            run(CoprocLibrary::MainAm, program(WATOR), 8, measured(900.0, Some(5.0))),
            run(CoprocLibrary::Optimized, program("shell"), 8, measured(100.0, None)),
            run(CoprocLibrary::MainAm, program("shell"), 8, measured(100.0, None)),
        ];
        let refs: Vec<&Run> = runs.iter().collect();
        let t = Table2::of(&refs);
        assert_eq!(t.programs(), vec![WATOR.to_string()]);
        assert_eq!(t.ratio(WATOR), Some(100.0 / 300.0));
        assert_eq!(t.read_wait.get(CoprocLibrary::MainAm.label()).map(|r| r.mean), Some(700.0));
        assert_eq!(Table2::on(&refs, 8).programs(), vec!["shell".to_string()]);
        // Only runs on other node counts: claim 3 is not decided.
        let c = Claim::judged(CLAIM_3, &checks_3(&Table2::of(&refs[2..])));
        assert!(!c.verdict.decided, "{}", c.line());
    }
}
