//! The study's claim of the paper (Section 5.1, Table 1) and its checks,
//! on Table 1 as measured.

use super::runs::Run;
use crate::claim::{Check, Claim, ClaimSpec, Origin};
use finegrain_core::CoprocLibrary;

pub(super) const CLAIM: ClaimSpec = ClaimSpec {
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
    fn of(values: &[f64]) -> Option<Row> {
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
    pub fn of(runs: &[Run]) -> Table1 {
        let row = |lib: CoprocLibrary| {
            let v: Vec<f64> = runs.iter().filter(|r| r.l().library == lib).map(|r| r.round_trip_us).collect();
            Row::of(&v)
        };
        Table1 {
            dma_one_way_us: runs.first().map(|r| r.dma_one_way_us),
            main_am: row(CoprocLibrary::MainAm),
            coproc_am: row(CoprocLibrary::CoprocAm),
        }
    }
}

/// The checks of the claim on `t`.
pub(super) fn checks(t: &Table1) -> Vec<Check> {
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

pub(super) fn evaluate(runs: &[Run]) -> Vec<Claim> {
    vec![Claim::judged(CLAIM, &checks(&Table1::of(runs)))]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(mean: f64) -> Option<Row> {
        Some(Row { mean, min: mean, max: mean, seeds: 3 })
    }

    fn judged(dma: Option<f64>, main: Option<Row>, coproc: Option<Row>) -> Claim {
        Claim::judged(CLAIM, &checks(&Table1 { dma_one_way_us: dma, main_am: main, coproc_am: coproc }))
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
}
