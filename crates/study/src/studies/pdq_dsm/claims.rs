//! The PDQ paper's six claims about its DSM systems (HPCA 1999 Section
//! 5.2, Figures 7-11, and the abstract's headline) and their tests, on the
//! applications' run times as measured. Every test was written before any
//! run of the study: where the paper gives a number the test allows a band
//! around it, stated in the test; where it gives a direction only, the
//! test checks the direction.
//!
//! "Performance" is as the paper's figures plot it: S-COMA's run time over
//! the system's on the same machine and application (above 1 is faster
//! than S-COMA). Averages are arithmetic means over the applications.

use crate::claim::{Check, Claim, ClaimSpec, Origin};
use std::collections::BTreeMap;

/// The applications by the paper's three classes (Section 5.2).
pub const COMPUTE_BOUND: [&str; 1] = ["water-sp"];
pub const LATENCY_BOUND: [&str; 2] = ["barnes", "fmm"];
pub const BANDWIDTH_BOUND: [&str; 4] = ["cholesky", "em3d", "fft", "radix"];

/// Systems by label, as the study names them.
pub const SCOMA: &str = "s-coma";
pub const MULT: &str = "mult";

pub fn hurricane(pps: u32) -> String {
    format!("hurricane-{pps}pp")
}

pub fn hurricane1(pps: u32) -> String {
    format!("hurricane1-{pps}pp")
}

/// The software systems (every one but S-COMA).
pub fn software_systems() -> Vec<String> {
    let mut v: Vec<String> = [1, 2, 4].iter().map(|&p| hurricane(p)).collect();
    v.extend([1, 2, 4].iter().map(|&p| hurricane1(p)));
    v.push(MULT.into());
    v
}

/// A machine the applications ran on: nodes x compute processors per
/// node, and the protocol's block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shape {
    pub nodes: u32,
    pub procs: u32,
    pub block: u32,
}

impl Shape {
    pub const BASE: Shape = Shape { nodes: 8, procs: 8, block: 64 };
    pub const THIN: Shape = Shape { nodes: 16, procs: 4, block: 64 };
    pub const FAT: Shape = Shape { nodes: 4, procs: 16, block: 64 };
    pub const SMALL_BLOCKS: Shape = Shape { nodes: 8, procs: 8, block: 32 };
    pub const LARGE_BLOCKS: Shape = Shape { nodes: 8, procs: 8, block: 128 };

    pub fn label(&self) -> String {
        format!("{}x{} {}B", self.nodes, self.procs, self.block)
    }
}

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

fn strs(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A check that a value lies in `lo..=hi`, or says what is missing.
fn band(value: Option<f64>, lo: f64, hi: f64, what: &str) -> Check {
    match value {
        None => Check::missing(what),
        Some(v) => Check::new((lo..=hi).contains(&v), format!("{what} = {v:.2} (band {lo:.2}-{hi:.2})")),
    }
}

/// A check that `a` exceeds `b` (both needed).
fn above(a: Option<f64>, b: Option<f64>, what: &str) -> Check {
    match (a, b) {
        (Some(a), Some(b)) => Check::new(a > b, format!("{what}: {a:.2} vs {b:.2}")),
        _ => Check::missing(what),
    }
}

pub const CLAIM_1: ClaimSpec = ClaimSpec {
    number: 1,
    origin: Origin::Paper,
    title: "Hardware beats one software protocol processor",
    statement: "On the baseline cluster of eight 8-way SMPs, the all-hardware S-COMA runs the applications about a \
                third faster on average than Hurricane with one embedded protocol processor, and up to nearly \
                twice as fast as Hurricane-1 with one dedicated SMP protocol processor.",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2 and Figure 7 (S-COMA improves on 1-PP Hurricane by 32% on \
             average and on 1-PP Hurricane-1 by up to 89%)",
    test: "At 8x8 with 64-byte blocks: the mean over the applications of Hurricane-1pp's time over S-COMA's lies in \
           1.16-1.48 (32% +/- half of it); the largest over the applications of Hurricane-1-1pp's time over \
           S-COMA's lies in 1.5-2.3 (89%: 'nearly 2x').",
};

pub fn checks_1(t: &Times) -> Vec<Check> {
    let s = Shape::BASE;
    let apps = t.apps(s);
    let slow = |sys: &str| -> Vec<Option<f64>> { apps.iter().map(|a| t.perf(s, sys, a).map(|p| 1.0 / p)).collect() };
    let h = mean(slow(&hurricane(1)).into_iter());
    let h1: Option<Vec<f64>> = slow(&hurricane1(1)).into_iter().collect();
    let h1_max = h1.filter(|v| !v.is_empty()).map(|v| v.into_iter().fold(f64::MIN, f64::max));
    vec![
        band(h, 1.16, 1.48, "mean time of hurricane-1pp over s-coma"),
        band(h1_max, 1.5, 2.3, "largest time of hurricane1-1pp over s-coma"),
    ]
}

pub const CLAIM_2: ClaimSpec = ClaimSpec {
    number: 2,
    origin: Origin::Paper,
    title: "Three classes of applications",
    statement: "water-sp computes most of the time and every system runs it nearly as fast as S-COMA; barnes and \
                fmm are latency-bound, so parallel protocol processors add little (Hurricane 2 and 4 PPs at most \
                11% and 13% over 1 PP) and four dedicated Hurricane-1 processors beat Mult, whose scheduling and \
                cache interference cost occupancy; cholesky, em3d, fft and radix are bandwidth-bound and gain \
                much from parallel protocol processors (2-PP Hurricane beats S-COMA by 23% on cholesky, 4-PP \
                Hurricane reaches 36% better than S-COMA on fft).",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2 and Figure 7",
    test: "At 8x8 with 64-byte blocks: (a) every system's performance on water-sp at least 0.90 (the paper: within \
           91%); (b) on barnes and fmm, Hurricane 2 PP and 4 PP at most 1.15x Hurricane 1 PP's performance (the \
           paper's 11% and 13%, plus 2 points), and Hurricane-1 4 PP above Mult on each; (c) the mean gain of \
           Hurricane from 1 to 4 PPs over the bandwidth-bound four above its mean gain over barnes and fmm, and \
           Hurricane 4 PP faster than S-COMA (performance above 1) on at least one bandwidth-bound application.",
};

pub fn checks_2(t: &Times) -> Vec<Check> {
    let s = Shape::BASE;
    let mut checks = Vec::new();
    for app in COMPUTE_BOUND {
        let systems = software_systems();
        let worst = mean_min(systems.iter().map(|sys| t.perf(s, sys, app)));
        checks.push(band(worst, 0.90, f64::INFINITY, &format!("lowest performance on {app}")));
    }
    for app in LATENCY_BOUND {
        let base = t.perf(s, &hurricane(1), app);
        for pps in [2, 4] {
            let gain = t.perf(s, &hurricane(pps), app).zip(base).map(|(p, b)| p / b);
            checks.push(band(gain, 0.0, 1.15, &format!("{app}: hurricane-{pps}pp over hurricane-1pp")));
        }
        checks.push(above(
            t.perf(s, &hurricane1(4), app),
            t.perf(s, MULT, app),
            &format!("{app}: hurricane1-4pp above mult"),
        ));
    }
    let gain =
        |apps: &[&str]| mean(apps.iter().map(|a| Some(t.perf(s, &hurricane(4), a)? / t.perf(s, &hurricane(1), a)?)));
    checks.push(above(
        gain(&BANDWIDTH_BOUND),
        gain(&LATENCY_BOUND),
        "hurricane 1->4 PP gain, bandwidth- vs latency-bound",
    ));
    let best = BANDWIDTH_BOUND.iter().map(|a| t.perf(s, &hurricane(4), a)).collect::<Option<Vec<f64>>>();
    checks.push(match best {
        Some(v) => {
            let m = v.iter().copied().fold(f64::MIN, f64::max);
            Check::new(
                m > 1.0,
                format!("best hurricane-4pp performance on the bandwidth-bound four = {m:.2} (above 1.00)"),
            )
        }
        None => Check::missing("hurricane-4pp on the bandwidth-bound applications"),
    });
    checks
}

/// The smallest of values, None if any is missing.
fn mean_min(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Option<Vec<f64>> = values.collect();
    v.filter(|v| !v.is_empty()).map(|v| v.into_iter().fold(f64::INFINITY, f64::min))
}

pub const CLAIM_3: ClaimSpec = ClaimSpec {
    number: 3,
    origin: Origin::Paper,
    title: "Averages of the parallel systems against S-COMA",
    statement: "Averaged over the applications, Hurricane with four embedded protocol processors runs about 12% \
                faster than S-COMA, Hurricane-1 with four dedicated SMP processors reaches about 76% of \
                S-COMA's performance, and Hurricane-1 Mult about 74% with no extra processors.",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2 and Figure 7",
    test: "At 8x8 with 64-byte blocks, mean performance over the applications within 15% (relative) of the \
           paper's: hurricane-4pp in 0.95-1.29 (1.12), hurricane1-4pp in 0.65-0.87 (0.76), mult in 0.63-0.85 \
           (0.74).",
};

pub fn checks_3(t: &Times) -> Vec<Check> {
    let s = Shape::BASE;
    let apps = t.apps(s);
    vec![
        band(t.mean_perf(s, &hurricane(4), &apps), 0.95, 1.29, "mean performance of hurricane-4pp"),
        band(t.mean_perf(s, &hurricane1(4), &apps), 0.65, 0.87, "mean performance of hurricane1-4pp"),
        band(t.mean_perf(s, MULT, &apps), 0.63, 0.85, "mean performance of mult"),
    ]
}

pub const CLAIM_4: ClaimSpec = ClaimSpec {
    number: 4,
    origin: Origin::Paper,
    title: "Fatter nodes favour parallel protocol processors",
    statement: "With the same 64 processors as 16 4-way or 4 16-way nodes, fatter nodes widen the gap between \
                S-COMA and one-processor software systems and make parallel protocol processors worth more; on \
                4x16, four-PP Hurricane beats S-COMA on every application but water-sp; Mult climbs from about \
                65% of S-COMA at 4-way nodes to about 80% at 16-way, and beats four-PP Hurricane-1 on the \
                bandwidth-bound applications.",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2, Figures 8 and 9",
    test: "Mean performance over the applications: (a) hurricane-1pp and hurricane1-1pp each lower at 4x16 than at \
           16x4; (b) the mean gain from 1 to 4 PPs (hurricane and hurricane-1 each) higher at 4x16 than at 16x4; \
           (c) at 4x16, hurricane-4pp's performance above 1 on every application but water-sp; (d) mult's mean \
           performance at least 0.05 higher at 4x16 than at 16x4; (e) at 4x16, mult's mean performance over the \
           bandwidth-bound four above hurricane1-4pp's.",
};

pub fn checks_4(t: &Times) -> Vec<Check> {
    let (thin, fat) = (Shape::THIN, Shape::FAT);
    let apps = t.apps(fat);
    let mut checks = Vec::new();
    for sys in [hurricane(1), hurricane1(1)] {
        checks.push(above(
            t.mean_perf(thin, &sys, &apps),
            t.mean_perf(fat, &sys, &apps),
            &format!("{sys} mean performance, 16x4 vs 4x16"),
        ));
    }
    for (four, one) in [(hurricane(4), hurricane(1)), (hurricane1(4), hurricane1(1))] {
        let gain = |s: Shape| mean(apps.iter().map(|a| Some(t.perf(s, &four, a)? / t.perf(s, &one, a)?)));
        checks.push(above(gain(fat), gain(thin), &format!("{one} -> {four} gain, 4x16 vs 16x4")));
    }
    for app in apps.iter().filter(|a| !COMPUTE_BOUND.contains(&a.as_str())) {
        checks.push(band(
            t.perf(fat, &hurricane(4), app),
            1.0 + f64::EPSILON,
            f64::INFINITY,
            &format!("4x16 {app}: hurricane-4pp performance"),
        ));
    }
    let rise = t.mean_perf(fat, MULT, &apps).zip(t.mean_perf(thin, MULT, &apps)).map(|(f, th)| f - th);
    checks.push(band(rise, 0.05, f64::INFINITY, "mult mean performance, 4x16 minus 16x4"));
    let bw = strs(&BANDWIDTH_BOUND);
    checks.push(above(
        t.mean_perf(fat, MULT, &bw),
        t.mean_perf(fat, &hurricane1(4), &bw),
        "4x16 bandwidth-bound: mult vs hurricane1-4pp",
    ));
    checks
}

pub const CLAIM_5: ClaimSpec = ClaimSpec {
    number: 5,
    origin: Origin::Paper,
    title: "Block size moves the software/hardware gap",
    statement: "Larger (128-byte) protocol blocks narrow the gap between the software systems and S-COMA, except \
                where false sharing hurts (barnes, fmm); smaller (32-byte) blocks widen it.",
    source: "Falsafi & Wood, HPCA 1999, Section 5.2, Figures 10 and 11",
    test: "At 8x8, the mean performance of the seven software systems over the applications other than barnes and \
           fmm: higher with 128-byte blocks than with 64, and lower with 32-byte blocks than with 64.",
};

pub fn checks_5(t: &Times) -> Vec<Check> {
    let apps: Vec<String> = t.apps(Shape::BASE).into_iter().filter(|a| !LATENCY_BOUND.contains(&a.as_str())).collect();
    let gap = |s: Shape| mean(software_systems().iter().map(|sys| t.mean_perf(s, sys, &apps)));
    vec![
        above(gap(Shape::LARGE_BLOCKS), gap(Shape::BASE), "software mean performance, 128 vs 64 bytes"),
        above(gap(Shape::BASE), gap(Shape::SMALL_BLOCKS), "software mean performance, 64 vs 32 bytes"),
    ]
}

pub const CLAIM_6: ClaimSpec = ClaimSpec {
    number: 6,
    origin: Origin::Paper,
    title: "Headline: PDQ on idle processors against one dedicated processor",
    statement: "On a cluster of four 16-way SMPs, running the protocol with PDQ on whichever processors are idle \
                (Hurricane-1 Mult) runs the applications on average 2.6 times as fast as a single dedicated SMP \
                protocol processor per node (Hurricane-1 with one PP).",
    source: "Falsafi & Wood, HPCA 1999, abstract and Section 6",
    test: "At 4x16 with 64-byte blocks, the mean over the applications of hurricane1-1pp's time over mult's lies \
           in 2.08-3.12 (2.6 +/- 20%).",
};

pub fn checks_6(t: &Times) -> Vec<Check> {
    let s = Shape::FAT;
    let apps = t.apps(s);
    let r = mean(apps.iter().map(|a| Some(t.time(s, &hurricane1(1), a)? / t.time(s, MULT, a)?)));
    vec![band(r, 2.08, 3.12, "mean time of hurricane1-1pp over mult at 4x16")]
}

/// Every claim judged on `t`.
pub fn judge(t: &Times) -> Vec<Claim> {
    vec![
        Claim::judged(CLAIM_1, &checks_1(t)),
        Claim::judged(CLAIM_2, &checks_2(t)),
        Claim::judged(CLAIM_3, &checks_3(t)),
        Claim::judged(CLAIM_4, &checks_4(t)),
        Claim::judged(CLAIM_5, &checks_5(t)),
        Claim::judged(CLAIM_6, &checks_6(t)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPS: [&str; 7] = ["barnes", "cholesky", "em3d", "fft", "fmm", "radix", "water-sp"];

    /// Times shaped like the paper's figures: S-COMA 100 everywhere, and
    /// each system's time 100 / performance.
    fn paper_like() -> Times {
        let mut t = Times::default();
        let perf = |shape: Shape, sys: &str, app: &str| -> f64 {
            let bw = BANDWIDTH_BOUND.contains(&app);
            let lat = LATENCY_BOUND.contains(&app);
            let fat = shape == Shape::FAT;
            let thin = shape == Shape::THIN;
            let block = match shape.block {
                32 => 0.9,
                128 if !lat => 1.1,
                _ => 1.0,
            };
            let p = match sys {
                "hurricane-1pp" => {
                    if bw {
                        if fat {
                            0.6
                        } else {
                            0.7
                        }
                    } else if lat {
                        0.9
                    } else {
                        0.97
                    }
                }
                "hurricane-2pp" => {
                    if bw {
                        1.05
                    } else if lat {
                        0.95
                    } else {
                        0.98
                    }
                }
                "hurricane-4pp" => {
                    if bw {
                        if fat {
                            1.4
                        } else if thin {
                            1.1
                        } else {
                            1.3
                        }
                    } else if lat {
                        // Fatter nodes: a few more misses queue at once.
                        if fat {
                            1.05
                        } else {
                            1.0
                        }
                    } else {
                        0.98
                    }
                }
                "hurricane1-1pp" => {
                    if bw {
                        if fat {
                            0.3
                        } else {
                            0.55
                        }
                    } else if lat {
                        0.55
                    } else {
                        0.93
                    }
                }
                "hurricane1-2pp" => {
                    if bw {
                        0.7
                    } else if lat {
                        0.75
                    } else {
                        0.93
                    }
                }
                "hurricane1-4pp" => {
                    if bw {
                        if fat {
                            0.75
                        } else {
                            0.73
                        }
                    } else if lat {
                        0.8
                    } else {
                        0.93
                    }
                }
                "mult" => {
                    if bw {
                        if fat {
                            0.85
                        } else if thin {
                            0.6
                        } else {
                            0.7
                        }
                    } else if lat {
                        0.7
                    } else {
                        0.92
                    }
                }
                _ => 1.0,
            };
            100.0 / (p * block)
        };
        for shape in [Shape::BASE, Shape::THIN, Shape::FAT, Shape::SMALL_BLOCKS, Shape::LARGE_BLOCKS] {
            for app in APPS {
                t.insert(shape, SCOMA, app, 100.0);
                for sys in software_systems() {
                    t.insert(shape, &sys, app, perf(shape, &sys, app));
                }
            }
        }
        t
    }

    fn verdicts(t: &Times) -> Vec<String> {
        judge(t).iter().map(|c| c.line()).collect()
    }

    #[test]
    fn paper_like_times_support_claims_1_2_3_5() {
        let v = verdicts(&paper_like());
        for i in [0, 1, 2, 4] {
            assert!(v[i].contains(": supported"), "{}", v[i]);
        }
    }

    #[test]
    fn paper_like_clustering_supports_claim_4_and_fails_the_headline_only_by_its_band() {
        let t = paper_like();
        let c4 = Claim::judged(CLAIM_4, &checks_4(&t));
        assert!(c4.verdict.supported, "{}", c4.line());
        // hurricane1-1pp at 4x16: 0.3 on four apps, 0.55 and 0.93 on the
        // rest; mult 0.85 / 0.7 / 0.92: the mean ratio is about 2.0.
        let c6 = Claim::judged(CLAIM_6, &checks_6(&t));
        assert!(c6.verdict.decided);
        assert!(c6.line().contains("mean time of hurricane1-1pp over mult"), "{}", c6.line());
    }

    #[test]
    fn each_claim_fails_when_its_numbers_move() {
        let mut t = paper_like();
        // S-COMA twice as slow as everything: every software system beats it.
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

    #[test]
    fn the_headline_band_is_judged_on_the_mean_ratio() {
        let mut t = Times::default();
        for app in APPS {
            t.insert(Shape::FAT, MULT, app, 10.0);
            t.insert(Shape::FAT, &hurricane1(1), app, 26.0);
        }
        assert!(Claim::judged(CLAIM_6, &checks_6(&t)).verdict.supported);
        t.insert(Shape::FAT, &hurricane1(1), "fft", 100.0);
        assert!(!Claim::judged(CLAIM_6, &checks_6(&t)).verdict.supported);
    }
}
