//! The PDQ paper's six claims about its DSM systems (HPCA 1999 Section
//! 5.2, Figures 7-11, and the abstract's headline), one hypothesis of
//! finegrain's drawn from the paper's block-size argument, and their tests,
//! on the applications' run times as measured. Every test was written from
//! the paper before any run of the study (and revised after a second
//! reading against the paper, again without results): where the paper
//! gives a number the test allows a band around it, stated in the test;
//! where it gives a direction only, the test checks the direction.
//!
//! "Performance" is as the paper's figures plot it: S-COMA's run time over
//! the system's on the same machine and application (above 1 is faster
//! than S-COMA). Averages are arithmetic means over the applications, of
//! performance as plotted (the paper's own averages are of the plotted
//! bars, Section 5.2). The paper's "within X% of S-COMA" reads as a
//! performance of about X/100; its "S-COMA improves performance over a
//! slower system by X%" reads as X points of normalized performance
//! (Claim 1 says why).

use super::paper::{
    ABOVE_SCOMA, CHOLESKY_H2PP, CHOLESKY_H4PP, FAT_H4PP_MEAN, FAT_MULT_MEAN, FAT_WATER_SP_H4PP, FFT_H4PP, H1PP_MEAN,
    H4PP_MEAN, HURRICANE1_4PP_MEAN, LARGE_H2PP, LARGE_H4PP_MEAN, LARGE_HURRICANE1_4PP_AND_MULT_MEAN, LATENCY_H1PP,
    LATENCY_HURRICANE1_1PP, LATENCY_HURRICANE1_MORE_PP, MULT_MEAN, RADIX_H4PP, THIN_H4PP_MEAN, THIN_MULT_MEAN,
    WATER_SP,
};
use crate::claim::{Basis, Check, Claim, ClaimSpec, Origin};
use std::collections::BTreeMap;

pub use super::systems::{
    hurricane, hurricane1, software_systems, Shape, BANDWIDTH_BOUND, BURSTY, COMPUTE_BOUND, LATENCY_BOUND, MULT, SCOMA,
};

/// Run times (any unit, the same for all) by shape, system and
/// application.
#[derive(Clone, Debug, Default)]
pub struct Times(pub BTreeMap<(Shape, String, String), f64>);

impl Times {
    pub fn insert(&mut self, shape: Shape, system: &str, app: &str, time: f64) {
        self.0.insert((shape, system.to_string(), app.to_string()), time);
    }

    pub fn time(&self, shape: Shape, system: &str, app: &str) -> Option<f64> {
        self.0.get(&(shape, system.to_string(), app.to_string())).copied()
    }

    /// S-COMA's time over the system's (the figures' normalized
    /// performance).
    pub fn perf(&self, shape: Shape, system: &str, app: &str) -> Option<f64> {
        Some(self.time(shape, SCOMA, app)? / self.time(shape, system, app)?)
    }

    /// The applications with any time at `shape`.
    pub fn apps(&self, shape: Shape) -> Vec<String> {
        let mut v: Vec<String> = self.0.keys().filter(|k| k.0 == shape).map(|k| k.2.clone()).collect();
        v.dedup();
        v.sort();
        v.dedup();
        v
    }

    /// Mean performance of `system` over `apps` at `shape`; None if any
    /// is missing (or there are none).
    pub fn mean_perf(&self, shape: Shape, system: &str, apps: &[String]) -> Option<f64> {
        mean(apps.iter().map(|a| self.perf(shape, system, a)))
    }
}

fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Option<Vec<f64>> = values.collect();
    let v = v?;
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// A check that a value lies in `lo..=hi`, or says what is missing.
fn band(value: Option<f64>, lo: f64, hi: f64, what: &str) -> Check {
    match value {
        None => Check::missing(what),
        Some(v) => Check::new((lo..=hi).contains(&v), what, format!("{v:.2}"), band_text(lo, hi)),
    }
}

/// `1.16-1.48`, or `>= 0.88` when the band has no ceiling.
fn band_text(lo: f64, hi: f64) -> String {
    if hi.is_finite() {
        format!("{lo:.2}-{hi:.2}")
    } else {
        format!(">= {lo:.2}")
    }
}

/// A check that a value is strictly below `limit`.
fn under(value: Option<f64>, limit: f64, what: &str) -> Check {
    match value {
        None => Check::missing(what),
        Some(v) => Check::new(v < limit, what, format!("{v:.2}"), format!("< {limit:.2}")),
    }
}

/// A check that a value is at most `limit`.
fn at_most(value: Option<f64>, limit: f64, what: &str) -> Check {
    match value {
        None => Check::missing(what),
        Some(v) => Check::new(v <= limit, what, format!("{v:.2}"), format!("<= {limit:.2}")),
    }
}

/// A check that `a` exceeds `b` (both needed).
fn above(a: Option<f64>, b: Option<f64>, what: &str) -> Check {
    match (a, b) {
        (Some(a), Some(b)) => Check::new(a > b, what, format!("{a:.2} vs {b:.2}"), "the first above the second"),
        _ => Check::missing(what),
    }
}

/// A check that `a` is at least `b` (both needed).
fn at_least(a: Option<f64>, b: Option<f64>, what: &str) -> Check {
    match (a, b) {
        (Some(a), Some(b)) => Check::new(a >= b, what, format!("{a:.2} vs {b:.2}"), "the first at least the second"),
        _ => Check::missing(what),
    }
}

/// A figure reported beside the checks (deciding nothing), or that it has
/// no data (still deciding nothing).
fn note(value: Option<f64>, what: &str, context: &str) -> Check {
    match value {
        Some(v) => Check::note(format!("{what} ({context})"), format!("{v:.2}")),
        None => Check::note(what, "no data"),
    }
}

/// The smallest of values, None if any is missing (or there are none).
fn min_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Option<Vec<f64>> = values.collect();
    v.filter(|v| !v.is_empty()).map(|v| v.into_iter().fold(f64::INFINITY, f64::min))
}

/// The largest of values, None if any is missing (or there are none).
fn max_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Option<Vec<f64>> = values.collect();
    v.filter(|v| !v.is_empty()).map(|v| v.into_iter().fold(f64::NEG_INFINITY, f64::max))
}

pub const CLAIM_1: ClaimSpec = ClaimSpec {
    number: 1,
    origin: Origin::Paper,
    basis: Basis::Predicted,
    title: "Hardware beats one software protocol processor",
    statement: "On the baseline cluster of eight 8-way SMPs with 64-byte blocks, Hurricane with a single embedded \
                protocol processor delivers on average roughly two thirds (about 0.68) of the all-hardware \
                S-COMA's performance: about 0.9 or better on barnes and fmm, but no more than about 0.61 on em3d, \
                fft and radix. Hurricane-1 with a single dedicated SMP protocol processor does far worse: about \
                0.11 of S-COMA on its worst application, and no more than about 0.25 on any of em3d, fft and \
                radix.",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2 (Baseline System Performance and the three classes of \
             applications) and Figure 7: S-COMA's 32% average and up-to-89% advantages over the one-PP \
             Hurricane and Hurricane-1, read as points of normalized performance; one-PP Hurricane within 90% \
             on barnes and fmm and at best 61% on em3d, fft and radix; one-PP Hurricane-1 at best 25% on those \
             three",
    test: "At 8x8 with 64-byte blocks: (a) hurricane-1pp's mean performance over the applications in 0.58-0.78 \
           (0.68 +/- 15%; the time-ratio reading of 32%, 1/1.32 = 0.76, also lies inside); (b) hurricane-1pp's \
           performance at least 0.88 on barnes and on fmm (0.90 less 2 points); (c) hurricane-1pp's best \
           performance over em3d, fft and radix in 0.52-0.70 (0.61 +/- 15%); (d) hurricane1-1pp's lowest \
           performance over the applications in 0.06-0.17 (0.11 +/- half, the 89 points); (e) hurricane1-1pp's \
           best performance over em3d, fft and radix in 0.20-0.30 (0.25 +/- 20%). Reported beside, deciding \
           nothing: hurricane1-1pp's largest time over S-COMA's (1.89 if the 89% were a time ratio, a reading \
           that (e) rules out).",
};

pub fn checks_1(t: &Times) -> Vec<Check> {
    let s = Shape::BASE;
    let apps = t.apps(s);
    let (h, h1) = (hurricane(1), hurricane1(1));
    // (a) Section 5.2: S-COMA 32 points above 1-PP Hurricane on average
    // (Figure 7, read as the paper reads its other averages).
    let mut checks =
        vec![band(t.mean_perf(s, &h, &apps), H1PP_MEAN.lo, H1PP_MEAN.hi, "mean performance of hurricane-1pp")];
    // (b) Section 5.2: 1-PP Hurricane within 90% of S-COMA on barnes, fmm.
    for app in LATENCY_BOUND {
        checks.push(band(
            t.perf(s, &h, app),
            LATENCY_H1PP.lo,
            LATENCY_H1PP.hi,
            &format!("{app}: hurricane-1pp performance"),
        ));
    }
    // (c) Section 5.2: 1-PP Hurricane at best within 61% on em3d, fft, radix.
    checks.push(band(
        max_of(BURSTY.iter().map(|a| t.perf(s, &h, a))),
        0.52,
        0.70,
        "best hurricane-1pp performance on em3d, fft, radix",
    ));
    // (d) Section 5.2: S-COMA up to 89 points above 1-PP Hurricane-1.
    checks.push(band(min_of(apps.iter().map(|a| t.perf(s, &h1, a))), 0.06, 0.17, "lowest hurricane1-1pp performance"));
    // (e) Section 5.2: 1-PP Hurricane-1 at best within 25% on em3d, fft,
    // radix.
    checks.push(band(
        max_of(BURSTY.iter().map(|a| t.perf(s, &h1, a))),
        0.20,
        0.30,
        "best hurricane1-1pp performance on em3d, fft, radix",
    ));
    checks.push(note(
        max_of(apps.iter().map(|a| t.perf(s, &h1, a).map(|p| 1.0 / p))),
        "largest time of hurricane1-1pp over s-coma",
        "1.89 if the paper's 89% were a time ratio, which its 25% ceiling on em3d, fft and radix contradicts",
    ));
    checks
}

pub const CLAIM_2: ClaimSpec = ClaimSpec {
    number: 2,
    origin: Origin::Paper,
    basis: Basis::Predicted,
    title: "Three classes of applications",
    statement: "water-sp computes most of the time and every system runs it nearly as fast as S-COMA. barnes and \
                fmm are latency-bound: parallel protocol processors add little to Hurricane (2 and 4 PPs gain at \
                most about 11% and 13% over 1 PP), one-PP Hurricane-1 sits near 0.6 of S-COMA and more dedicated \
                processors lift it to no more than about 0.84, and four dedicated Hurricane-1 processors beat \
                Mult, whose scheduling and cache interference cost occupancy. cholesky, em3d, fft and radix are \
                bandwidth-bound and gain much from parallel protocol processors: on cholesky two-PP Hurricane is \
                about 1.23 of S-COMA and four-PP about 1.32, and four-PP Hurricane-1 passes S-COMA; four-PP \
                Hurricane is best on fft (about 1.36) and worst on radix, a little under S-COMA.",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2 (the three classes of applications) and Figure 7; the 32% \
             cap with four processors is read as cholesky's, the paragraph's application",
    test: "At 8x8 with 64-byte blocks: (a) every software system's performance on water-sp at least 0.90 (the \
           paper: within 91%); (b) on barnes and on fmm: hurricane-2pp over hurricane-1pp in 0.98-1.13 and \
           hurricane-4pp over hurricane-1pp in 0.98-1.15 (the paper's 11% and 13% plus 2 points; at most 2 \
           points below 1, since they improve), hurricane1-1pp in 0.50-0.70 (about 0.60), hurricane1-2pp and \
           hurricane1-4pp each at most 0.86 (0.84 plus 2 points), and hurricane1-4pp above mult; (c) \
           hurricane's mean gain from 1 to 4 PPs over the bandwidth-bound four above its mean gain over barnes \
           and fmm; (d) on cholesky: hurricane-2pp in 1.05-1.41 (1.23 +/- 15%), hurricane-4pp in 1.12-1.52 \
           (1.32 +/- 15%) and at least hurricane-2pp's, hurricane1-4pp above 1; (e) hurricane-4pp on fft in \
           1.16-1.56 (1.36 +/- 15%) and at least its performance on em3d and radix; on radix in 0.85-1.00 \
           (slightly below S-COMA; the 0.85 edge is finegrain's) and at most its performance on em3d and fft.",
};

pub fn checks_2(t: &Times) -> Vec<Check> {
    let s = Shape::BASE;
    let mut checks = Vec::new();
    // (a) Section 5.2: all systems within 91% of S-COMA on water-sp.
    for app in COMPUTE_BOUND {
        let systems = software_systems();
        let worst = min_of(systems.iter().map(|sys| t.perf(s, sys, app)));
        checks.push(band(worst, WATER_SP.lo, WATER_SP.hi, &format!("lowest performance on {app}")));
    }
    // (b) Section 5.2, barnes and fmm: Hurricane 2 and 4 PPs improve on 1
    // PP by at most 11% and 13%; 1-PP Hurricane-1 about 60% of S-COMA, more
    // PPs at most 84%; 4-PP Hurricane-1 beats Mult.
    for app in LATENCY_BOUND {
        let base = t.perf(s, &hurricane(1), app);
        for (pps, hi) in [(2, 1.13), (4, 1.15)] {
            let gain = t.perf(s, &hurricane(pps), app).zip(base).map(|(p, b)| p / b);
            checks.push(band(gain, 0.98, hi, &format!("{app}: hurricane-{pps}pp over hurricane-1pp")));
        }
        let b = LATENCY_HURRICANE1_1PP;
        checks.push(band(t.perf(s, &hurricane1(1), app), b.lo, b.hi, &format!("{app}: hurricane1-1pp performance")));
        for pps in [2, 4] {
            checks.push(at_most(
                t.perf(s, &hurricane1(pps), app),
                LATENCY_HURRICANE1_MORE_PP.hi,
                &format!("{app}: hurricane1-{pps}pp performance"),
            ));
        }
        checks.push(above(
            t.perf(s, &hurricane1(4), app),
            t.perf(s, MULT, app),
            &format!("{app}: hurricane1-4pp above mult"),
        ));
    }
    // (c) Section 5.2: the bandwidth-bound class gains from parallel
    // protocol execution, the latency-bound one little.
    let gain =
        |apps: &[&str]| mean(apps.iter().map(|a| Some(t.perf(s, &hurricane(4), a)? / t.perf(s, &hurricane(1), a)?)));
    checks.push(above(
        gain(&BANDWIDTH_BOUND),
        gain(&LATENCY_BOUND),
        "hurricane 1->4 PP gain, bandwidth- vs latency-bound",
    ));
    // (d) Section 5.2, cholesky: 2-PP Hurricane 23% over S-COMA, 4-PP at
    // most 32% (this paragraph's application only: fft's 36% is higher),
    // 4-PP Hurricane-1 outperforms S-COMA.
    let chol = "cholesky";
    let (h2, h4) = (t.perf(s, &hurricane(2), chol), t.perf(s, &hurricane(4), chol));
    checks.push(band(h2, CHOLESKY_H2PP.lo, CHOLESKY_H2PP.hi, "cholesky: hurricane-2pp performance"));
    checks.push(band(h4, CHOLESKY_H4PP.lo, CHOLESKY_H4PP.hi, "cholesky: hurricane-4pp performance"));
    checks.push(at_least(h4, h2, "cholesky: hurricane-4pp vs hurricane-2pp"));
    checks.push(band(
        t.perf(s, &hurricane1(4), chol),
        ABOVE_SCOMA.lo,
        ABOVE_SCOMA.hi,
        "cholesky: hurricane1-4pp performance",
    ));
    // (e) Section 5.2: 4-PP Hurricane ranges from slightly worse than
    // S-COMA (radix) to 36% better (fft) over em3d, fft and radix.
    let h4 = |app: &str| t.perf(s, &hurricane(4), app);
    checks.push(band(h4("fft"), FFT_H4PP.lo, FFT_H4PP.hi, "fft: hurricane-4pp performance"));
    checks.push(at_least(h4("fft"), max_of(["em3d", "radix"].iter().map(|a| h4(a))), "hurricane-4pp highest on fft"));
    checks.push(band(h4("radix"), RADIX_H4PP.lo, RADIX_H4PP.hi, "radix: hurricane-4pp performance"));
    checks.push(at_least(min_of(["em3d", "fft"].iter().map(|a| h4(a))), h4("radix"), "hurricane-4pp lowest on radix"));
    checks
}

pub const CLAIM_3: ClaimSpec = ClaimSpec {
    number: 3,
    origin: Origin::Paper,
    basis: Basis::Predicted,
    title: "Averages of the parallel systems against S-COMA",
    statement: "Averaged over the applications, Hurricane with four embedded protocol processors runs about 12% \
                faster than S-COMA, Hurricane-1 with four dedicated SMP processors reaches about 76% of \
                S-COMA's performance, and Hurricane-1 Mult about 74% with no extra processors.",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2 (the summary of the baseline results) and Figure 7",
    test: "At 8x8 with 64-byte blocks, mean performance over the applications: hurricane-4pp in 1.00-1.29 (1.12 \
           + 15% relative, and not below S-COMA, since the paper has it faster), hurricane1-4pp in 0.65-0.87 \
           (0.76 +/- 15%), mult in 0.63-0.85 (0.74 +/- 15%). Reported beside, deciding nothing: mult's mean \
           minus hurricane1-4pp's.",
};

pub fn checks_3(t: &Times) -> Vec<Check> {
    let s = Shape::BASE;
    let apps = t.apps(s);
    let (h1_4, mult) = (t.mean_perf(s, &hurricane1(4), &apps), t.mean_perf(s, MULT, &apps));
    vec![
        // Section 5.2: 4-PP Hurricane 12% faster than S-COMA on average.
        band(t.mean_perf(s, &hurricane(4), &apps), H4PP_MEAN.lo, H4PP_MEAN.hi, "mean performance of hurricane-4pp"),
        band(h1_4, HURRICANE1_4PP_MEAN.lo, HURRICANE1_4PP_MEAN.hi, "mean performance of hurricane1-4pp"),
        band(mult, MULT_MEAN.lo, MULT_MEAN.hi, "mean performance of mult"),
        note(
            mult.zip(h1_4).map(|(m, h)| m - h),
            "mean performance of mult minus hurricane1-4pp",
            "the paper: 0.74 - 0.76 = -0.02, nearly as good without extra processors",
        ),
    ]
}

pub const CLAIM_4: ClaimSpec = ClaimSpec {
    number: 4,
    origin: Origin::Paper,
    basis: Basis::Predicted,
    title: "Fatter nodes favour parallel protocol processors",
    statement: "With the same 64 processors as 16 4-way or 4 16-way nodes, fatter nodes put single-processor \
                Hurricane further behind S-COMA on most applications and hurt single-processor Hurricane-1 \
                badly, and make parallel protocol processors worth more. Four-PP Hurricane's average lead over \
                S-COMA grows from about 7% to about 13%; on 4x16 it beats S-COMA on every application but \
                water-sp, where it comes within about 1%. Four-PP Hurricane-1 still falls short of S-COMA on \
                4x16, while Mult climbs from about 65% of S-COMA at 4-way nodes to about 80% at 16-way and beats \
                four-PP Hurricane-1 on every bandwidth-bound application.",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2 (Impact of Clustering Degree), Figures 8 and 9",
    test: "Performance at 16x4 and 4x16 with 64-byte blocks, means over the applications: (a) hurricane-1pp's \
           performance lower at 4x16 than at 16x4 on a majority of the applications (at least 4 of 7), and \
           hurricane1-1pp's mean lower at 4x16; (b) the mean gain from 1 to 4 PPs (hurricane and hurricane-1 \
           each) higher at 4x16 than at 16x4; (c) at 4x16, hurricane-4pp's performance above 1 on every \
           application but water-sp, and on water-sp in 0.97-1.00 (0.99 less 2 points); (d) mult's mean \
           performance in 0.55-0.75 at 16x4 and 0.68-0.92 at 4x16 (0.65 and 0.80 +/- 15%), and at least 0.075 \
           higher at 4x16 (half the paper's 0.15 rise); (e) at 4x16, mult above hurricane1-4pp on each of \
           cholesky, em3d, fft and radix; (f) hurricane-4pp's mean performance in 1.00-1.23 at 16x4 and \
           1.00-1.30 at 4x16 (1.07 and 1.13 + 15%, not below S-COMA), higher at 4x16; (g) hurricane1-4pp's mean \
           performance at 4x16 below 1.",
};

pub fn checks_4(t: &Times) -> Vec<Check> {
    let (thin, fat) = (Shape::THIN, Shape::FAT);
    let apps = t.apps(fat);
    let mut checks = Vec::new();
    // (a) Figure 8 (Section 5.2): a higher clustering degree widens the gap
    // between 1-PP Hurricane and S-COMA in most of the applications.
    let h1pp = hurricane(1);
    let lower: Option<Vec<bool>> =
        apps.iter().map(|a| Some(t.perf(fat, &h1pp, a)? < t.perf(thin, &h1pp, a)?)).collect();
    checks.push(match lower.filter(|v| !v.is_empty()) {
        Some(v) => {
            let n = v.iter().filter(|&&b| b).count();
            Check::new(
                2 * n > v.len(),
                "applications where hurricane-1pp performs lower at 4x16 than at 16x4",
                format!("{n} of {}", v.len()),
                "a majority",
            )
        }
        None => Check::missing("hurricane-1pp at 16x4 and 4x16"),
    });
    // Figure 9 (Section 5.2): high clustering has a large impact on 1-PP
    // Hurricane-1.
    let sys = hurricane1(1);
    checks.push(above(
        t.mean_perf(thin, &sys, &apps),
        t.mean_perf(fat, &sys, &apps),
        &format!("{sys} mean performance, 16x4 vs 4x16"),
    ));
    // (b) Section 5.2: fewer network interfaces favour parallel protocol
    // execution.
    for (four, one) in [(hurricane(4), hurricane(1)), (hurricane1(4), hurricane1(1))] {
        let gain = |s: Shape| mean(apps.iter().map(|a| Some(t.perf(s, &four, a)? / t.perf(s, &one, a)?)));
        checks.push(above(gain(fat), gain(thin), &format!("{one} -> {four} gain, 4x16 vs 16x4")));
    }
    // (c) Section 5.2: at degree 16, 4-PP Hurricane outperforms S-COMA on
    // all applications but water-sp, where it is within 99%.
    for app in apps.iter().filter(|a| !COMPUTE_BOUND.contains(&a.as_str())) {
        checks.push(band(
            t.perf(fat, &hurricane(4), app),
            ABOVE_SCOMA.lo,
            ABOVE_SCOMA.hi,
            &format!("4x16 {app}: hurricane-4pp performance"),
        ));
    }
    for app in COMPUTE_BOUND {
        checks.push(band(
            t.perf(fat, &hurricane(4), app),
            FAT_WATER_SP_H4PP.lo,
            FAT_WATER_SP_H4PP.hi,
            &format!("4x16 {app}: hurricane-4pp performance"),
        ));
    }
    // (d) Section 5.2: Mult from 65% to 80% of S-COMA, degree 4 to 16.
    let (mult_thin, mult_fat) = (t.mean_perf(thin, MULT, &apps), t.mean_perf(fat, MULT, &apps));
    checks.push(band(mult_thin, THIN_MULT_MEAN.lo, THIN_MULT_MEAN.hi, "16x4 mean performance of mult"));
    checks.push(band(mult_fat, FAT_MULT_MEAN.lo, FAT_MULT_MEAN.hi, "4x16 mean performance of mult"));
    let rise = mult_fat.zip(mult_thin).map(|(f, th)| f - th);
    checks.push(band(rise, 0.075, f64::INFINITY, "mult mean performance, 4x16 minus 16x4"));
    // (e) Section 5.2: Mult outperforms 4-PP Hurricane-1 in all
    // bandwidth-bound applications at degree 16.
    for app in BANDWIDTH_BOUND {
        checks.push(above(
            t.perf(fat, MULT, app),
            t.perf(fat, &hurricane1(4), app),
            &format!("4x16 {app}: mult above hurricane1-4pp"),
        ));
    }
    // (f) Section 5.2: 4-PP Hurricane from 7% to 13% over S-COMA on
    // average, degree 4 to 16.
    let (h4_thin, h4_fat) = (t.mean_perf(thin, &hurricane(4), &apps), t.mean_perf(fat, &hurricane(4), &apps));
    checks.push(band(h4_thin, THIN_H4PP_MEAN.lo, THIN_H4PP_MEAN.hi, "16x4 mean performance of hurricane-4pp"));
    checks.push(band(h4_fat, FAT_H4PP_MEAN.lo, FAT_H4PP_MEAN.hi, "4x16 mean performance of hurricane-4pp"));
    checks.push(above(h4_fat, h4_thin, "hurricane-4pp mean performance, 4x16 vs 16x4"));
    // (g) Section 5.2: four PPs fail to make Hurricane-1 competitive with
    // S-COMA at degree 16.
    checks.push(under(t.mean_perf(fat, &hurricane1(4), &apps), 1.0, "4x16 mean performance of hurricane1-4pp"));
    checks
}

pub const CLAIM_5: ClaimSpec = ClaimSpec {
    number: 5,
    origin: Origin::Paper,
    basis: Basis::Predicted,
    title: "Block size moves the software/hardware gap",
    statement: "Going from 64- to 128-byte protocol blocks brings single-processor Hurricane closer to S-COMA on \
                cholesky, em3d, fft, radix and water-sp, where the software overhead is spread over more data, \
                and further from it on barnes and fmm, whose fine-grain sharing turns into false sharing; it \
                helps single-processor Hurricane-1 more than Hurricane. With 128-byte blocks, two-PP Hurricane \
                keeps up with S-COMA on every application, four-PP Hurricane is about 20% faster than S-COMA on \
                average, and four-PP Hurricane-1 and Mult each reach about 88% of S-COMA.",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2 (Impact of Block Size), Figures 10 and 11; the text's \
             comparisons are read against the 64-byte default of Figure 7",
    test: "At 8x8: (a) hurricane-1pp's performance higher with 128-byte blocks than with 64 on each of cholesky, \
           em3d, fft, radix and water-sp, and lower on each of barnes and fmm; (b) the mean over those five of \
           the 128-over-64-byte performance gain higher for hurricane1-1pp than for hurricane-1pp; at 128 bytes, \
           (c) hurricane-2pp's performance at least 0.90 on every application ('competitive'; the 0.90 edge is \
           finegrain's); mean performance over the applications (d) of hurricane-4pp in 1.02-1.38 (1.20 +/- \
           15%) and (e) of hurricane1-4pp and of mult each in 0.75-1.01 (0.88 +/- 15%).",
};

/// The applications the paper names as gaining from 128-byte blocks
/// under single-processor Hurricane (Section 5.2, Figure 10).
const LARGE_BLOCK_GAINERS: [&str; 5] = ["cholesky", "em3d", "fft", "radix", "water-sp"];

pub fn checks_5(t: &Times) -> Vec<Check> {
    let (base, large) = (Shape::BASE, Shape::LARGE_BLOCKS);
    let h = hurricane(1);
    let mut checks = Vec::new();
    // (a) Section 5.2, Figure 10: with 128-byte blocks these five do better
    // under 1-PP Hurricane relative to S-COMA; barnes and fmm, false
    // sharing, do worse.
    for app in LARGE_BLOCK_GAINERS {
        checks.push(above(
            t.perf(large, &h, app),
            t.perf(base, &h, app),
            &format!("{app}: hurricane-1pp performance, 128 vs 64 bytes"),
        ));
    }
    for app in LATENCY_BOUND {
        checks.push(above(
            t.perf(base, &h, app),
            t.perf(large, &h, app),
            &format!("{app}: hurricane-1pp performance, 64 vs 128 bytes (false sharing)"),
        ));
    }
    // (b) Section 5.2, Figure 11: large blocks matter more to 1-PP
    // Hurricane-1 than to Hurricane.
    let gain =
        |sys: &str| mean(LARGE_BLOCK_GAINERS.iter().map(|a| Some(t.perf(large, sys, a)? / t.perf(base, sys, a)?)));
    checks.push(above(
        gain(&hurricane1(1)),
        gain(&h),
        "mean 128- over 64-byte gain on the five, hurricane1-1pp vs hurricane-1pp",
    ));
    // (c) Section 5.2: two PPs make Hurricane competitive with S-COMA in
    // all applications (128-byte blocks).
    let apps = t.apps(large);
    for app in &apps {
        checks.push(band(
            t.perf(large, &hurricane(2), app),
            LARGE_H2PP.lo,
            LARGE_H2PP.hi,
            &format!("128B {app}: hurricane-2pp performance"),
        ));
    }
    // (d) Section 5.2: 4-PP Hurricane 20% faster than S-COMA on average.
    let b = LARGE_H4PP_MEAN;
    checks.push(band(t.mean_perf(large, &hurricane(4), &apps), b.lo, b.hi, "128B mean performance of hurricane-4pp"));
    // (e) Section 5.2, Figure 11: 4-PP Hurricane-1 and Mult both within
    // about 88% of S-COMA.
    let b = LARGE_HURRICANE1_4PP_AND_MULT_MEAN;
    checks.push(band(t.mean_perf(large, &hurricane1(4), &apps), b.lo, b.hi, "128B mean performance of hurricane1-4pp"));
    checks.push(band(t.mean_perf(large, MULT, &apps), b.lo, b.hi, "128B mean performance of mult"));
    checks
}

pub const CLAIM_6: ClaimSpec = ClaimSpec {
    number: 6,
    origin: Origin::Paper,
    basis: Basis::Predicted,
    title: "Headline: PDQ on idle processors against one dedicated processor",
    statement: "On a cluster of four 16-way SMPs, running the protocol with PDQ on whichever processors are idle \
                (Hurricane-1 Mult) runs the applications on average 2.6 times as fast as a single dedicated SMP \
                protocol processor per node (Hurricane-1 with one PP).",
    source: "Falsafi & Wood, HPCA 1999, abstract, Section 1 and Section 6",
    test: "At 4x16 with 64-byte blocks, the mean over the applications of hurricane1-1pp's time over mult's lies \
           in 2.08-3.12 (2.6 +/- 20%). Reported beside, deciding nothing: mult's mean performance over \
           hurricane1-1pp's (the ratio of the figure's averages, the other reading of 'on average').",
};

pub fn checks_6(t: &Times) -> Vec<Check> {
    let s = Shape::FAT;
    let apps = t.apps(s);
    let r = mean(apps.iter().map(|a| Some(t.time(s, &hurricane1(1), a)? / t.time(s, MULT, a)?)));
    let of_means = t.mean_perf(s, MULT, &apps).zip(t.mean_perf(s, &hurricane1(1), &apps)).map(|(m, h)| m / h);
    vec![
        band(r, 2.08, 3.12, "mean time of hurricane1-1pp over mult at 4x16"),
        note(
            of_means,
            "mean performance of mult over mean performance of hurricane1-1pp at 4x16",
            "the ratio of Figure 9's averages",
        ),
    ]
}

pub const HYPOTHESIS_1: ClaimSpec = ClaimSpec {
    number: 1,
    origin: Origin::Hypothesis,
    basis: Basis::Predicted,
    title: "Smaller blocks widen the software/hardware gap",
    statement: "Halving the protocol block from 64 to 32 bytes leaves the software protocols less data transfer \
                over which to spread their per-handler overhead, so outside the false-sharing applications \
                (barnes, fmm) the software systems fall further behind S-COMA.",
    source: "Drawn from Falsafi & Wood, HPCA 1999, Section 5.2 (Impact of Block Size: larger blocks amortize the \
             software overhead over a larger occupancy). Figures 10 and 11 plot 32-byte results, but the text \
             states no finding about them; the direction is finegrain's, the paper's argument run backwards.",
    test: "At 8x8, the mean performance of the seven software systems over the applications other than barnes and \
           fmm: lower with 32-byte blocks than with 64.",
};

pub fn checks_h1(t: &Times) -> Vec<Check> {
    let apps: Vec<String> = t.apps(Shape::BASE).into_iter().filter(|a| !LATENCY_BOUND.contains(&a.as_str())).collect();
    let gap = |s: Shape| mean(software_systems().iter().map(|sys| t.mean_perf(s, sys, &apps)));
    vec![above(gap(Shape::BASE), gap(Shape::SMALL_BLOCKS), "software mean performance, 64 vs 32 bytes")]
}

/// Every claim and hypothesis judged on `t`.
pub fn judge(t: &Times) -> Vec<Claim> {
    vec![
        Claim::judged(CLAIM_1, &checks_1(t)),
        Claim::judged(CLAIM_2, &checks_2(t)),
        Claim::judged(CLAIM_3, &checks_3(t)),
        Claim::judged(CLAIM_4, &checks_4(t)),
        Claim::judged(CLAIM_5, &checks_5(t)),
        Claim::judged(CLAIM_6, &checks_6(t)),
        Claim::judged(HYPOTHESIS_1, &checks_h1(t)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPS: [&str; 7] = ["barnes", "cholesky", "em3d", "fft", "fmm", "radix", "water-sp"];
    const SYSTEMS: [&str; 7] = [
        "hurricane-1pp",
        "hurricane-2pp",
        "hurricane-4pp",
        "hurricane1-1pp",
        "hurricane1-2pp",
        "hurricane1-4pp",
        "mult",
    ];

    /// Performance shaped like the paper's figures, by system (SYSTEMS'
    /// order) and application (APPS' order: barnes, cholesky, em3d, fft,
    /// fmm, radix, water-sp).
    fn table(shape: Shape) -> [[f64; 7]; 7] {
        match shape {
            Shape::BASE => [
                [0.92, 0.55, 0.45, 0.61, 0.92, 0.40, 0.97],
                [1.00, 1.23, 0.62, 0.85, 1.00, 0.56, 0.98],
                [1.02, 1.32, 1.10, 1.36, 1.02, 0.95, 0.98],
                [0.60, 0.30, 0.20, 0.25, 0.60, 0.11, 0.93],
                [0.80, 0.70, 0.50, 0.60, 0.80, 0.40, 0.93],
                [0.84, 1.05, 0.60, 0.72, 0.84, 0.35, 0.93],
                [0.75, 0.98, 0.55, 0.76, 0.75, 0.45, 0.92],
            ],
            Shape::THIN => [
                [0.95, 0.60, 0.50, 0.65, 0.95, 0.45, 0.98],
                [1.00, 1.00, 0.70, 0.90, 1.00, 0.65, 0.98],
                [1.02, 1.20, 1.05, 1.25, 1.02, 0.98, 0.98],
                [0.65, 0.35, 0.25, 0.30, 0.65, 0.15, 0.94],
                [0.80, 0.70, 0.50, 0.60, 0.80, 0.35, 0.94],
                [0.85, 1.00, 0.60, 0.70, 0.85, 0.40, 0.94],
                [0.65, 0.75, 0.50, 0.60, 0.65, 0.40, 0.90],
            ],
            Shape::FAT => [
                [0.90, 0.50, 0.40, 0.55, 0.90, 0.35, 0.97],
                [1.00, 1.10, 0.80, 1.00, 1.00, 0.70, 0.98],
                [1.05, 1.30, 1.10, 1.40, 1.05, 1.02, 0.99],
                [0.45, 0.30, 0.25, 0.30, 0.45, 0.20, 0.90],
                [0.70, 0.70, 0.45, 0.55, 0.70, 0.30, 0.92],
                [0.85, 0.95, 0.60, 0.70, 0.85, 0.40, 0.93],
                [0.70, 1.00, 0.75, 0.80, 0.70, 0.65, 0.92],
            ],
            Shape::LARGE_BLOCKS => [
                [0.85, 0.65, 0.55, 0.70, 0.85, 0.50, 0.99],
                [0.95, 1.30, 0.95, 1.00, 0.95, 0.92, 0.99],
                [1.05, 1.40, 1.30, 1.45, 1.05, 1.10, 0.99],
                [0.55, 0.40, 0.30, 0.35, 0.55, 0.18, 0.95],
                [0.80, 0.90, 0.60, 0.70, 0.80, 0.50, 0.94],
                [0.85, 1.10, 0.80, 0.90, 0.85, 0.70, 0.95],
                [0.80, 1.05, 0.80, 0.90, 0.80, 0.75, 0.94],
            ],
            // 32-byte blocks: every software system 10% further behind.
            _ => table(Shape::BASE).map(|row| row.map(|p| p * 0.9)),
        }
    }

    /// Sets `system`'s performance on `app` at `shape` (S-COMA's time is
    /// 100).
    fn set(t: &mut Times, shape: Shape, system: &str, app: &str, perf: f64) {
        t.insert(shape, system, app, 100.0 / perf);
    }

    /// Times shaped like the paper's figures: S-COMA 100 everywhere, and
    /// each system's time 100 / performance.
    fn paper_like() -> Times {
        let mut t = Times::default();
        for shape in [Shape::BASE, Shape::THIN, Shape::FAT, Shape::SMALL_BLOCKS, Shape::LARGE_BLOCKS] {
            let table = table(shape);
            for (a, app) in APPS.iter().enumerate() {
                t.insert(shape, SCOMA, app, 100.0);
                for (s, sys) in SYSTEMS.iter().enumerate() {
                    set(&mut t, shape, sys, app, table[s][a]);
                }
            }
        }
        t
    }

    fn verdicts(t: &Times) -> Vec<String> {
        judge(t).iter().map(|c| c.line()).collect()
    }

    #[test]
    fn paper_like_times_support_every_claim_and_the_hypothesis() {
        assert_eq!(SYSTEMS.map(String::from).to_vec(), software_systems());
        let t = paper_like();
        let claims = judge(&t);
        assert_eq!(claims.len(), 7);
        for c in &claims {
            assert!(c.verdict.supported, "{}", c.line());
        }
        assert_eq!(claims[6].spec.origin, Origin::Hypothesis);
        assert!(claims[..6].iter().all(|c| c.spec.origin == Origin::Paper));
        // The notes are reported and decide nothing.
        let v = verdicts(&t);
        assert!(v[0].contains("largest time of hurricane1-1pp over s-coma (1.89 if"), "{}", v[0]);
        assert!(v[0].contains("contradicts) = 9.09 (not judged)"), "{}", v[0]);
        assert!(v[2].contains("mean performance of mult minus hurricane1-4pp (the paper: "), "{}", v[2]);
        assert!(v[2].contains(") = -0.02 (not judged)"), "{}", v[2]);
        assert!(
            v[5].contains("mean performance of mult over mean performance of hurricane1-1pp at 4x16 ("),
            "{}",
            v[5]
        );
    }

    /// One value moved from the paper-like times: `sets` are (shape,
    /// system, application, performance); the claim at `claim` (judge's
    /// order) must then be decided and fail on the check named `needle`.
    struct Case {
        sets: Vec<(Shape, &'static str, &'static str, f64)>,
        claim: usize,
        needle: &'static str,
    }

    fn case(sets: &[(Shape, &'static str, &'static str, f64)], claim: usize, needle: &'static str) -> Case {
        Case { sets: sets.to_vec(), claim, needle }
    }

    /// `system` at `perf` on every application at `shape`.
    fn all(shape: Shape, system: &'static str, perf: f64) -> Vec<(Shape, &'static str, &'static str, f64)> {
        APPS.iter().map(|&a| (shape, system, a, perf)).collect()
    }

    /// `system` at `shape` set from `row` (APPS' order).
    fn row(shape: Shape, system: &'static str, row: [f64; 7]) -> Vec<(Shape, &'static str, &'static str, f64)> {
        APPS.iter().zip(row).map(|(&a, p)| (shape, system, a, p)).collect()
    }

    fn assert_fails(c: &Case) {
        let mut t = paper_like();
        for &(shape, sys, app, p) in &c.sets {
            set(&mut t, shape, sys, app, p);
        }
        let claim = &judge(&t)[c.claim];
        assert!(claim.verdict.decided, "{}", claim.line());
        assert!(!claim.verdict.supported, "{}", claim.line());
        assert!(claim.verdict.text().contains(&format!("FAILS: {}", c.needle)), "{}: {}", c.needle, claim.line());
    }

    const B: Shape = Shape::BASE;
    const TH: Shape = Shape::THIN;
    const FT: Shape = Shape::FAT;
    const LG: Shape = Shape::LARGE_BLOCKS;

    #[test]
    fn claim_1_fails_when_its_numbers_move() {
        let h = "hurricane-1pp";
        let h1 = "hurricane1-1pp";
        for c in [
            case(
                &[(B, h, "barnes", 0.3), (B, h, "fmm", 0.3), (B, h, "water-sp", 0.3)],
                0,
                "mean performance of hurricane-1pp",
            ),
            case(
                &[(B, h, "cholesky", 0.99), (B, h, "em3d", 0.99), (B, h, "radix", 0.99)],
                0,
                "mean performance of hurricane-1pp",
            ),
            case(&[(B, h, "barnes", 0.85)], 0, "barnes: hurricane-1pp performance"),
            case(&[(B, h, "fmm", 0.85)], 0, "fmm: hurricane-1pp performance"),
            case(&[(B, h, "fft", 0.75)], 0, "best hurricane-1pp performance on em3d, fft, radix"),
            case(&[(B, h, "fft", 0.45)], 0, "best hurricane-1pp performance on em3d, fft, radix"),
            case(&[(B, h1, "radix", 0.28)], 0, "lowest hurricane1-1pp performance"),
            case(&[(B, h1, "radix", 0.03)], 0, "lowest hurricane1-1pp performance"),
            case(&[(B, h1, "fft", 0.40)], 0, "best hurricane1-1pp performance on em3d, fft, radix"),
            case(
                &[(B, h1, "fft", 0.15), (B, h1, "em3d", 0.15)],
                0,
                "best hurricane1-1pp performance on em3d, fft, radix",
            ),
        ] {
            assert_fails(&c);
        }
    }

    /// The old reading (S-COMA at most 1.89x hurricane1-1pp's speed) no
    /// longer decides: a worst application at 0.11 of S-COMA (a time
    /// ratio of 9) supports the claim, one at 0.55 does not.
    #[test]
    fn claim_1_reads_89_percent_as_points_of_performance() {
        let t = paper_like();
        assert!(Claim::judged(CLAIM_1, &checks_1(&t)).verdict.supported);
        let mut t = paper_like();
        for (app, p) in [("cholesky", 0.55), ("em3d", 0.55), ("radix", 0.55), ("fft", 0.55)] {
            set(&mut t, B, "hurricane1-1pp", app, p);
        }
        let c = Claim::judged(CLAIM_1, &checks_1(&t));
        assert!(c.line().contains("FAILS: lowest hurricane1-1pp performance"), "{}", c.line());
    }

    #[test]
    fn claim_2_fails_when_its_numbers_move() {
        for c in [
            case(&[(B, "mult", "water-sp", 0.85)], 1, "lowest performance on water-sp"),
            // 1.05 / 0.92 = 1.14: inside the old 1.15, outside 1.13.
            case(&[(B, "hurricane-2pp", "barnes", 1.05)], 1, "barnes: hurricane-2pp over hurricane-1pp"),
            case(&[(B, "hurricane-2pp", "barnes", 0.88)], 1, "barnes: hurricane-2pp over hurricane-1pp"),
            case(&[(B, "hurricane-4pp", "fmm", 1.08)], 1, "fmm: hurricane-4pp over hurricane-1pp"),
            case(&[(B, "hurricane-4pp", "fmm", 0.85)], 1, "fmm: hurricane-4pp over hurricane-1pp"),
            case(&[(B, "hurricane1-1pp", "barnes", 0.45)], 1, "barnes: hurricane1-1pp performance"),
            case(&[(B, "hurricane1-1pp", "fmm", 0.75)], 1, "fmm: hurricane1-1pp performance"),
            case(&[(B, "hurricane1-2pp", "fmm", 0.90)], 1, "fmm: hurricane1-2pp performance"),
            case(&[(B, "hurricane1-4pp", "barnes", 0.90)], 1, "barnes: hurricane1-4pp performance"),
            case(&[(B, "mult", "barnes", 0.85)], 1, "barnes: hurricane1-4pp above mult"),
            case(&[(B, "hurricane-1pp", "barnes", 0.3), (B, "hurricane-1pp", "fmm", 0.3)], 1, "hurricane 1->4 PP gain"),
            case(&[(B, "hurricane-2pp", "cholesky", 1.0)], 1, "cholesky: hurricane-2pp performance"),
            case(&[(B, "hurricane-2pp", "cholesky", 1.45)], 1, "cholesky: hurricane-2pp performance"),
            case(&[(B, "hurricane-4pp", "cholesky", 1.60)], 1, "cholesky: hurricane-4pp performance"),
            case(&[(B, "hurricane-4pp", "cholesky", 1.10)], 1, "cholesky: hurricane-4pp performance"),
            case(
                &[(B, "hurricane-2pp", "cholesky", 1.38), (B, "hurricane-4pp", "cholesky", 1.30)],
                1,
                "cholesky: hurricane-4pp vs hurricane-2pp",
            ),
            case(&[(B, "hurricane1-4pp", "cholesky", 0.98)], 1, "cholesky: hurricane1-4pp performance"),
            case(&[(B, "hurricane-4pp", "fft", 1.60)], 1, "fft: hurricane-4pp performance"),
            case(&[(B, "hurricane-4pp", "fft", 1.12)], 1, "fft: hurricane-4pp performance"),
            case(&[(B, "hurricane-4pp", "em3d", 1.40)], 1, "hurricane-4pp highest on fft"),
            case(&[(B, "hurricane-4pp", "radix", 0.80)], 1, "radix: hurricane-4pp performance"),
            case(&[(B, "hurricane-4pp", "radix", 1.03)], 1, "radix: hurricane-4pp performance"),
            case(&[(B, "hurricane-4pp", "em3d", 0.90)], 1, "hurricane-4pp lowest on radix"),
        ] {
            assert_fails(&c);
        }
    }

    #[test]
    fn claim_3_fails_when_its_numbers_move() {
        for c in [
            // A mean of 0.97: inside the old 0.95 edge, slower than S-COMA.
            case(&all(B, "hurricane-4pp", 0.97), 2, "mean performance of hurricane-4pp"),
            case(&all(B, "hurricane-4pp", 1.35), 2, "mean performance of hurricane-4pp"),
            case(&all(B, "hurricane1-4pp", 0.60), 2, "mean performance of hurricane1-4pp"),
            case(&all(B, "mult", 0.90), 2, "mean performance of mult"),
        ] {
            assert_fails(&c);
        }
    }

    #[test]
    fn claim_4_fails_when_its_numbers_move() {
        let h4_thin_up = table(TH)[2].map(|p| p + 0.08);
        for c in [
            case(
                &[
                    (FT, "hurricane-1pp", "barnes", 0.96),
                    (FT, "hurricane-1pp", "cholesky", 0.62),
                    (FT, "hurricane-1pp", "em3d", 0.55),
                    (FT, "hurricane-1pp", "fft", 0.70),
                ],
                3,
                "applications where hurricane-1pp performs lower at 4x16 than at 16x4 = 3 of 7",
            ),
            case(&all(FT, "hurricane1-1pp", 0.95), 3, "hurricane1-1pp mean performance, 16x4 vs 4x16"),
            case(&all(TH, "hurricane-4pp", 2.0), 3, "hurricane-1pp -> hurricane-4pp gain"),
            case(&all(TH, "hurricane1-4pp", 2.0), 3, "hurricane1-1pp -> hurricane1-4pp gain"),
            case(&[(FT, "hurricane-4pp", "radix", 0.99)], 3, "4x16 radix: hurricane-4pp performance"),
            case(&[(FT, "hurricane-4pp", "water-sp", 1.02)], 3, "4x16 water-sp: hurricane-4pp performance"),
            case(&[(FT, "hurricane-4pp", "water-sp", 0.95)], 3, "4x16 water-sp: hurricane-4pp performance"),
            case(&all(TH, "mult", 0.50), 3, "16x4 mean performance of mult"),
            case(&all(FT, "mult", 0.95), 3, "4x16 mean performance of mult"),
            // A rise of 0.06 to a 4x16 mean of 0.70: inside the old 0.05.
            case(
                &row(FT, "mult", [0.61, 0.91, 0.66, 0.71, 0.61, 0.56, 0.83]),
                3,
                "mult mean performance, 4x16 minus 16x4",
            ),
            // mult's mean over the four stays above hurricane1-4pp's (0.80
            // vs 0.71), but not on em3d.
            case(&[(FT, "hurricane1-4pp", "em3d", 0.80)], 3, "4x16 em3d: mult above hurricane1-4pp"),
            case(&all(TH, "hurricane-4pp", 0.98), 3, "16x4 mean performance of hurricane-4pp"),
            case(&all(FT, "hurricane-4pp", 1.35), 3, "4x16 mean performance of hurricane-4pp"),
            case(&row(TH, "hurricane-4pp", h4_thin_up), 3, "hurricane-4pp mean performance, 4x16 vs 16x4"),
            case(&all(FT, "hurricane1-4pp", 1.05), 3, "4x16 mean performance of hurricane1-4pp"),
        ] {
            assert_fails(&c);
        }
    }

    /// The clustering check on single-processor Hurricane counts
    /// applications: a mean that rises while most applications fall
    /// passes it.
    #[test]
    fn claim_4_counts_applications_for_hurricane_1pp() {
        let mut t = paper_like();
        for app in ["cholesky", "em3d", "fft"] {
            set(&mut t, FT, "hurricane-1pp", app, 0.9);
        }
        let apps = t.apps(FT);
        assert!(t.mean_perf(FT, "hurricane-1pp", &apps) > t.mean_perf(TH, "hurricane-1pp", &apps));
        let line = Claim::judged(CLAIM_4, &checks_4(&t)).line();
        assert!(
            line.contains("applications where hurricane-1pp performs lower at 4x16 than at 16x4 = 4 of 7"),
            "{line}"
        );
        assert!(!line.contains("FAILS: applications where hurricane-1pp performs lower"), "{line}");
    }

    #[test]
    fn claim_5_fails_when_its_numbers_move() {
        let base_h1 = table(B)[3];
        let mut h1_small_gain = base_h1.map(|p| p * 1.05);
        for i in [0, 4] {
            h1_small_gain[i] = table(LG)[3][i];
        }
        for c in [
            case(&[(LG, "hurricane-1pp", "cholesky", 0.50)], 4, "cholesky: hurricane-1pp performance, 128 vs 64 bytes"),
            case(&[(LG, "hurricane-1pp", "water-sp", 0.96)], 4, "water-sp: hurricane-1pp performance, 128 vs 64 bytes"),
            case(&[(LG, "hurricane-1pp", "barnes", 0.95)], 4, "barnes: hurricane-1pp performance, 64 vs 128 bytes"),
            case(&[(LG, "hurricane-1pp", "fmm", 0.95)], 4, "fmm: hurricane-1pp performance, 64 vs 128 bytes"),
            case(&row(LG, "hurricane1-1pp", h1_small_gain), 4, "mean 128- over 64-byte gain on the five"),
            case(&[(LG, "hurricane-2pp", "radix", 0.85)], 4, "128B radix: hurricane-2pp performance"),
            case(&all(LG, "hurricane-4pp", 1.00), 4, "128B mean performance of hurricane-4pp"),
            case(&all(LG, "hurricane-4pp", 1.40), 4, "128B mean performance of hurricane-4pp"),
            case(&all(LG, "hurricane1-4pp", 0.70), 4, "128B mean performance of hurricane1-4pp"),
            case(&all(LG, "mult", 1.05), 4, "128B mean performance of mult"),
        ] {
            assert_fails(&c);
        }
    }

    /// 32-byte blocks are finegrain's hypothesis, apart from claim 5: a
    /// 32-byte machine faster than the 64-byte one fails the hypothesis
    /// and leaves claim 5 supported.
    #[test]
    fn the_32_byte_direction_is_a_hypothesis() {
        let mut sets = Vec::new();
        for (s, sys) in SYSTEMS.iter().enumerate() {
            sets.extend(row(Shape::SMALL_BLOCKS, sys, table(B)[s].map(|p| p * 1.1)));
        }
        assert_fails(&case(&sets, 6, "software mean performance, 64 vs 32 bytes"));
        let mut t = paper_like();
        for &(shape, sys, app, p) in &sets {
            set(&mut t, shape, sys, app, p);
        }
        assert!(Claim::judged(CLAIM_5, &checks_5(&t)).verdict.supported);
    }

    #[test]
    fn each_claim_fails_when_its_numbers_move() {
        let mut t = paper_like();
        // S-COMA ten times as slow as everything: every software system beats it.
        for app in APPS {
            for shape in [Shape::BASE, Shape::FAT] {
                t.insert(shape, SCOMA, app, 1000.0);
            }
        }
        let v = verdicts(&t);
        assert!(v[0].contains("not supported"), "{}", v[0]);
        assert!(v[2].contains("not supported"), "{}", v[2]);
    }

    #[test]
    fn a_missing_system_decides_nothing() {
        let mut t = paper_like();
        t.0.retain(|k, _| k.1 != MULT);
        let c = Claim::judged(CLAIM_3, &checks_3(&t));
        assert!(!c.verdict.decided, "{}", c.line());
        let c = Claim::judged(CLAIM_6, &checks_6(&t));
        assert!(!c.verdict.decided, "{}", c.line());
    }

    /// The headline's band is on the mean per-application ratio; its note
    /// (the ratio of means, here without S-COMA to normalize) decides
    /// nothing.
    #[test]
    fn the_headline_band_is_judged_on_the_mean_ratio() {
        let mut t = Times::default();
        for app in APPS {
            t.insert(Shape::FAT, MULT, app, 10.0);
            t.insert(Shape::FAT, &hurricane1(1), app, 26.0);
        }
        let c = Claim::judged(CLAIM_6, &checks_6(&t));
        assert!(c.verdict.supported, "{}", c.line());
        assert!(
            c.line().contains(
                "mean performance of mult over mean performance of hurricane1-1pp at 4x16 = no data (not judged)"
            ),
            "{}",
            c.line()
        );
        t.insert(Shape::FAT, &hurricane1(1), "fft", 100.0);
        assert!(!Claim::judged(CLAIM_6, &checks_6(&t)).verdict.supported);
    }
}
