//! The study's claims of the paper (Sections 5.1-5.3: Table 1, Figure 3,
//! Table 2) and their checks, on the tables as measured. Every test was
//! written before any run of the study.

use super::labels::Variant;
use super::runs::{Measured, Run};
use crate::claim::{Check, Claim, ClaimSpec, Origin};
use finegrain_apps::splitc::primitives::Primitive;
use finegrain_core::CoprocLibrary;
use std::collections::BTreeMap;

pub(super) const CLAIM_1: ClaimSpec = ClaimSpec {
    number: 1,
    origin: Origin::Paper,
    title: "Generic Active Messages on the co-processor more than double the latency",
    statement: "Running generic Active Message handlers on the slow co-processor, so that the main processor \
                never polls, takes more than twice the one-way and the round-trip latency of the library whose \
                handlers run on the main processor.",
    source: "Schauser, Scheiman, Ferguson & Kolano, IPPS 1996, Section 5.1 and Table 1 (null Active Message \
             ping-pong: one-way and round-trip latency of bare DMA, main-processor and co-processor Active \
             Messages)",
    test: "The null round trip of one requester on two idle nodes, mean over the seeds: coproc-am / main-am above \
           2.0 (one way is half the round trip, so the one-way ratio is the same); and each library's mean round \
           trip above twice the bare DMA flag's one-way time (an Active Message round trip costs more than the two \
           DMA transfers it makes).",
};

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
}

/// Table 1 as measured: the bare DMA flag's one-way time and each
/// library's null round trip, in us.
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
        Table1 {
            dma_one_way_us: ping_pongs().next().map(|p| p.2),
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
        ratio > 2.0,
        format!(
            "round trip coproc-am {:.1} us / main-am {:.1} us = {ratio:.2} (> 2.0; one way {:.1} / {:.1} us)",
            coproc.mean,
            main.mean,
            coproc.mean / 2.0,
            main.mean / 2.0
        ),
    )];
    for (name, row) in [("main-am", main), ("coproc-am", coproc)] {
        c.push(Check::new(
            row.mean > 2.0 * dma,
            format!("{name} round trip {:.1} us > 2 x DMA one way {dma:.2} us = {:.1} us", row.mean, 2.0 * dma),
        ));
    }
    c
}

pub(super) const CLAIM_2: ClaimSpec = ClaimSpec {
    number: 2,
    origin: Origin::Paper,
    title: "Optimized co-processor Split-C: put and bulk store faster, get and store slower, more bandwidth",
    statement: "Invoking Split-C's few handlers directly and using the co-processor's DMA and remote atomic add \
                makes put and the 32-byte bulk store faster than in the main-processor library, while get and \
                store stay slower than there (though much faster than with generic handlers on the \
                co-processor), and bulk transfers reach a higher bandwidth than the main-processor library's.",
    source: "Schauser, Scheiman, Ferguson & Kolano, IPPS 1996, Section 5.2 and Figure 3 (get 34 vs 24 us, store \
             22 vs 13, put 22 vs 24, 32-byte bulk store 23 vs 27, co-processor AM get 54 and store 30; bandwidth 38 \
             vs 32 MB/s)",
    test: "Mean over the seeds, two idle nodes: optimized below main-am for put and for the 32-byte bulk store; \
           optimized above main-am for get and for store; optimized below coproc-am for get and for store; \
           bulk-put bandwidth of optimized above main-am's. Directions only: the paper's own ratios (get 1.42, \
           store 1.69) are shown beside the measured ones, not judged.",
};

pub(super) const CLAIM_3: ClaimSpec = ClaimSpec {
    number: 3,
    origin: Origin::Paper,
    title: "Programs: most equal, radix and sample slower, global mm faster, wator about three times faster",
    statement: "Most Split-C programs take about the same time with either library, since they move data in \
                bulk in phases separated by barriers; radix and sample run slower with the co-processor library \
                (its slower store and get); the global blocked matrix multiply runs faster (several gets in flight, \
                more bandwidth); and wator runs about three to four times faster, because under the \
                main-processor library a read request waits until its owner next communicates (it polls only \
                then), hundreds of microseconds instead of tens.",
    source: "Schauser, Scheiman, Ferguson & Kolano, IPPS 1996, Section 5.3 and Table 2 (16 nodes), and Section 6 \
             (wator: a factor of three; read waits 25-33 us on the co-processor against 600-800 us)",
    test: "Program time with the optimized library over main-am's (mean over the seeds): within 0.85-1.15 for more \
           than half of the programs other than radix, sample, both mm and wator; above 1.0 for radix and for \
           sample; below 1.0 for mm-global; wator's main-am time over its optimized time within 2.5-5.0; wator's \
           mean remote-read wait under main-am at least 5 times the optimized library's.",
};

/// Programs the paper singles out; every other one should run about
/// equally (claim 3).
pub const RADIX: &str = "radix";
pub const SAMPLE: &str = "sample";
pub const WATOR: &str = "wator";
pub const MM_GLOBAL: &str = "mm-global";

/// "About equal" in claim 3: co-processor time within this factor of the
/// main processor's.
pub const EQUAL_BAND: (f64, f64) = (0.85, 1.15);
/// "About three to four times" for wator (claim 3).
pub const WATOR_BAND: (f64, f64) = (2.5, 5.0);
/// "Hundreds of microseconds instead of tens" (claim 3).
pub const WAIT_RATIO: f64 = 5.0;

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

/// Table 2 as measured: per program and library, run time in us over the
/// seeds, and wator's mean remote-read wait per library.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table2 {
    pub time: BTreeMap<(String, &'static str), Row>,
    pub read_wait: BTreeMap<&'static str, Row>,
}

impl Table2 {
    pub fn of(runs: &[&Run]) -> Table2 {
        let mut times: BTreeMap<(String, &'static str), Vec<f64>> = BTreeMap::new();
        let mut waits: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
        for r in runs {
            let Measured::Program { time_us, read_wait_us, .. } = &r.measured else { continue };
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

/// A check that `a` (named `an`) is below or above `b`.
fn compare(a: Option<&Row>, b: Option<&Row>, what: &str, below: bool, unit: &str) -> Check {
    let (Some(a), Some(b)) = (a, b) else { return Check::missing(what) };
    let holds = if below { a.mean < b.mean } else { a.mean > b.mean };
    let sign = if below { "<" } else { ">" };
    Check::new(holds, format!("{what} {:.1} {sign} {:.1} {unit} ({:.2})", a.mean, b.mean, a.mean / b.mean))
}

/// The checks of claim 2 on `f`.
pub(super) fn checks_2(f: &Figure3) -> Vec<Check> {
    use CoprocLibrary::{CoprocAm, MainAm, Optimized};
    let l = |p, lib| f.get(p, lib);
    vec![
        compare(l(Primitive::Put, Optimized), l(Primitive::Put, MainAm), "put optimized vs main-am", true, "us"),
        compare(
            l(Primitive::BulkStore, Optimized),
            l(Primitive::BulkStore, MainAm),
            "32-byte bulk store optimized vs main-am",
            true,
            "us",
        ),
        compare(l(Primitive::Get, Optimized), l(Primitive::Get, MainAm), "get optimized vs main-am", false, "us"),
        compare(l(Primitive::Store, Optimized), l(Primitive::Store, MainAm), "store optimized vs main-am", false, "us"),
        compare(l(Primitive::Get, Optimized), l(Primitive::Get, CoprocAm), "get optimized vs coproc-am", true, "us"),
        compare(
            l(Primitive::Store, Optimized),
            l(Primitive::Store, CoprocAm),
            "store optimized vs coproc-am",
            true,
            "us",
        ),
        compare(
            l(Primitive::BulkPut, Optimized),
            l(Primitive::BulkPut, MainAm),
            "bulk bandwidth optimized vs main-am",
            false,
            "MB/s",
        ),
    ]
}

fn within(x: f64, band: (f64, f64)) -> bool {
    x >= band.0 && x <= band.1
}

/// The checks of claim 3 on `t`.
pub(super) fn checks_3(t: &Table2) -> Vec<Check> {
    let named = |p: &str| p == RADIX || p == SAMPLE || p == WATOR || p.starts_with("mm");
    let others: Vec<(String, f64)> =
        t.programs().into_iter().filter(|p| !named(p)).filter_map(|p| Some((p.clone(), t.ratio(&p)?))).collect();
    let mut c = Vec::new();
    if others.is_empty() {
        c.push(Check::missing("the programs the paper finds about equal"));
    } else {
        let equal = others.iter().filter(|(_, r)| within(*r, EQUAL_BAND)).count();
        let list: Vec<String> = others.iter().map(|(p, r)| format!("{p} {r:.2}")).collect();
        c.push(Check::new(
            2 * equal > others.len(),
            format!(
                "{equal} of {} other programs within {}-{} ({})",
                others.len(),
                EQUAL_BAND.0,
                EQUAL_BAND.1,
                list.join(", ")
            ),
        ));
    }
    for p in [RADIX, SAMPLE] {
        c.push(match t.ratio(p) {
            Some(r) => Check::new(r > 1.0, format!("{p} optimized/main-am {r:.2} (> 1)")),
            None => Check::missing(p),
        });
    }
    c.push(match t.ratio(MM_GLOBAL) {
        Some(r) => Check::new(r < 1.0, format!("{MM_GLOBAL} optimized/main-am {r:.2} (< 1)")),
        None => Check::missing(MM_GLOBAL),
    });
    c.push(match t.ratio(WATOR) {
        Some(r) => Check::new(
            within(1.0 / r, WATOR_BAND),
            format!("wator main-am/optimized {:.2} (in {}-{})", 1.0 / r, WATOR_BAND.0, WATOR_BAND.1),
        ),
        None => Check::missing(WATOR),
    });
    let wait = |lib: CoprocLibrary| t.read_wait.get(lib.label()).map(|r| r.mean);
    c.push(match (wait(CoprocLibrary::MainAm), wait(CoprocLibrary::Optimized)) {
        (Some(m), Some(o)) => Check::new(
            m >= WAIT_RATIO * o,
            format!("wator read wait main-am {m:.1} us vs optimized {o:.1} us ({:.1}x, >= {WAIT_RATIO})", m / o),
        ),
        _ => Check::missing("wator's read waits"),
    });
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
    use super::*;

    fn row(mean: f64) -> Option<Row> {
        Some(Row { mean, min: mean, max: mean, seeds: 3 })
    }

    fn judged(dma: Option<f64>, main: Option<Row>, coproc: Option<Row>) -> Claim {
        Claim::judged(CLAIM_1, &checks_1(&Table1 { dma_one_way_us: dma, main_am: main, coproc_am: coproc }))
    }

    #[test]
    fn more_than_double_above_the_dma_round_trip_is_supported() {
        let c = judged(Some(9.5), row(24.0), row(54.0));
        assert!(c.verdict.supported && c.verdict.decided, "{}", c.line());
        assert!(c.line().starts_with("claim 1: supported - round trip coproc-am 54.0 us / main-am 24.0 us = 2.25"));
        assert_eq!(c.verdict.failed_checks, 0);
    }

    #[test]
    fn a_ratio_of_two_or_less_is_not_supported() {
        let c = judged(Some(9.5), row(45.7), row(65.4));
        assert!(c.verdict.decided && !c.verdict.supported, "{}", c.line());
        assert_eq!(c.verdict.failed_checks, 1);
        assert!(c.line().contains("FAILS: round trip coproc-am 65.4 us / main-am 45.7 us = 1.43"), "{}", c.line());
        // Exactly 2 is not more than twice.
        assert!(!judged(Some(1.0), row(10.0), row(20.0)).verdict.supported);
    }

    #[test]
    fn a_round_trip_below_the_dma_round_trip_is_not_supported() {
        // More than double, but main-am under two bare DMA one-ways.
        let c = judged(Some(9.5), row(15.0), row(40.0));
        assert!(c.verdict.decided && !c.verdict.supported, "{}", c.line());
        assert_eq!(c.verdict.failed_checks, 1);
        assert!(c.line().contains("FAILS: main-am round trip 15.0 us > 2 x DMA one way 9.50 us = 19.0 us"));
    }

    #[test]
    fn a_missing_library_decides_nothing() {
        let c = judged(Some(9.5), row(24.0), None);
        assert!(!c.verdict.decided, "{}", c.line());
        assert_eq!(c.line(), "claim 1: not decided - no data for coproc-am");
        assert!(!judged(None, None, None).verdict.decided);
    }

    #[test]
    fn rows_average_over_the_seeds() {
        let r = Row::of(&[10.0, 14.0, 12.0]).unwrap();
        assert_eq!(r, Row { mean: 12.0, min: 10.0, max: 14.0, seeds: 3 });
        assert_eq!(Row::of(&[]), None);
    }

    fn figure3(rows: &[(Primitive, CoprocLibrary, f64)]) -> Figure3 {
        Figure3 { rows: rows.iter().map(|&(p, l, v)| ((p.label(), l.label()), row(v).unwrap())).collect() }
    }

    /// Figure 3 as the paper gives it (bandwidth 38 vs 32 MB/s).
    fn paper_figure3() -> Vec<(Primitive, CoprocLibrary, f64)> {
        use CoprocLibrary::{CoprocAm, MainAm, Optimized};
        vec![
            (Primitive::Get, MainAm, 24.0),
            (Primitive::Get, CoprocAm, 54.0),
            (Primitive::Get, Optimized, 34.0),
            (Primitive::Store, MainAm, 13.0),
            (Primitive::Store, CoprocAm, 30.0),
            (Primitive::Store, Optimized, 22.0),
            (Primitive::Put, MainAm, 24.0),
            (Primitive::Put, Optimized, 22.0),
            (Primitive::BulkStore, MainAm, 27.0),
            (Primitive::BulkStore, Optimized, 23.0),
            (Primitive::BulkPut, MainAm, 32.0),
            (Primitive::BulkPut, Optimized, 38.0),
        ]
    }

    #[test]
    fn the_papers_figure3_supports_claim_2() {
        let c = Claim::judged(CLAIM_2, &checks_2(&figure3(&paper_figure3())));
        assert!(c.verdict.decided && c.verdict.supported, "{}", c.line());
        assert!(c.line().contains("get optimized vs main-am 34.0 > 24.0 us (1.42)"), "{}", c.line());
    }

    #[test]
    fn a_slower_optimized_put_or_less_bandwidth_fails_claim_2() {
        let mut rows = paper_figure3();
        rows[7].2 = 25.0; // optimized put above main-am's 24
        rows[11].2 = 30.0; // optimized bandwidth below main-am's 32
        let c = Claim::judged(CLAIM_2, &checks_2(&figure3(&rows)));
        assert!(c.verdict.decided && !c.verdict.supported, "{}", c.line());
        assert_eq!(c.verdict.failed_checks, 2, "{}", c.line());
        rows.remove(1); // no coproc-am get
        let c = Claim::judged(CLAIM_2, &checks_2(&figure3(&rows)));
        assert!(!c.verdict.decided, "{}", c.line());
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

    fn paper_like() -> Vec<(&'static str, f64, f64)> {
        vec![
            ("bitonic", 100.0, 102.0),
            ("fft", 100.0, 95.0),
            ("shell", 100.0, 130.0),
            (RADIX, 100.0, 120.0),
            (SAMPLE, 100.0, 110.0),
            (MM_GLOBAL, 100.0, 80.0),
            ("mm-local", 100.0, 140.0),
            (WATOR, 300.0, 100.0),
        ]
    }

    #[test]
    fn paper_like_program_times_support_claim_3() {
        let c = Claim::judged(CLAIM_3, &checks_3(&table2(&paper_like(), Some((700.0, 30.0)))));
        assert!(c.verdict.decided && c.verdict.supported, "{}", c.line());
        // mm-local's 1.40 is not among the "about equal" ones.
        assert!(c.line().contains("2 of 3 other programs within 0.85-1.15"), "{}", c.line());
    }

    #[test]
    fn claim_3_fails_on_each_of_its_checks() {
        let mut times = paper_like();
        times[1].2 = 130.0; // fft no longer equal: 1 of 3
        times[3].2 = 90.0; // radix faster on the co-processor
        times[5].2 = 100.0; // mm-global not faster
        times[7].2 = 50.0; // wator 6x: beyond "about three to four"
        let c = Claim::judged(CLAIM_3, &checks_3(&table2(&times, Some((100.0, 30.0)))));
        assert!(c.verdict.decided && !c.verdict.supported, "{}", c.line());
        assert_eq!(c.verdict.failed_checks, 5, "{}", c.line());
        let c = Claim::judged(CLAIM_3, &checks_3(&table2(&paper_like(), None)));
        assert!(!c.verdict.decided, "{}", c.line());
    }
}
