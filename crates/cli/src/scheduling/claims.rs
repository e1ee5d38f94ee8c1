//! The verdicts on the five claims of spec/scheduling.md, computed from
//! the study's run records, and the figures they quote.

use super::*;

/// Mean over replicates of a metric for one configuration, among the runs
/// of one variant (the baseline: the study's own runs).
pub(super) struct View<'a> {
    records: &'a [RunRecord],
    variant: Variant,
    /// One seed's runs only (None: every seed's).
    replicate: Option<u32>,
}

impl<'a> View<'a> {
    /// The study's own runs (no sensitivity setting).
    pub(super) fn baseline(records: &'a [RunRecord]) -> View<'a> {
        View { records, variant: Variant::BASELINE, replicate: None }
    }

    fn select(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> Vec<&RunRecord> {
        self.records
            .iter()
            .filter(|r| {
                r.variant == self.variant.seen_by(policy)
                    && self.replicate.is_none_or(|i| r.replicate == i)
                    && r.protocol == protocol
                    && r.policy == policy
                    && r.procs_per_node == ppn
                    && (r.target_u - u).abs() < 1e-9
                    && r.oint_cycles == oint
            })
            .collect()
    }

    fn mean(
        &self,
        protocol: Protocol,
        policy: &str,
        ppn: u32,
        u: f64,
        oint: u64,
        f: impl Fn(&RunRecord) -> Option<f64>,
    ) -> Option<f64> {
        let v: Vec<f64> = self.select(protocol, policy, ppn, u, oint).into_iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    pub(super) fn norm(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> Option<f64> {
        self.mean(protocol, policy, ppn, u, oint, |r| r.derived.time_norm_fixed)
    }

    pub(super) fn cost_perf(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> Option<f64> {
        self.mean(protocol, policy, ppn, u, oint, |r| r.derived.cost_performance)
    }

    /// Cost-performance of one configuration per replicate (seed).
    fn cost_perf_by_seed(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> BTreeMap<u32, f64> {
        self.select(protocol, policy, ppn, u, oint)
            .into_iter()
            .filter_map(|r| r.derived.cost_performance.map(|c| (r.replicate, c)))
            .collect()
    }

    /// Interrupts per request.
    pub(super) fn irq_rate(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> Option<f64> {
        self.mean(protocol, policy, ppn, u, oint, |r| Some(r.stats.interrupts as f64 / r.stats.requests.max(1) as f64))
    }

    /// Migration misses per request.
    fn migration_rate(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> Option<f64> {
        self.mean(protocol, policy, ppn, u, oint, |r| {
            Some(r.stats.misses.migration as f64 / r.stats.requests.max(1) as f64)
        })
    }
}

pub(super) fn sorted_u(grid: &Grid) -> Vec<f64> {
    let mut u = grid.target_u.clone();
    u.sort_by(f64::total_cmp);
    u.dedup();
    u
}

/// "High U" in the claims: the largest U up to 0.9, the top of the papers'
/// axes.
pub(super) fn high_u(us: &[f64]) -> f64 {
    us.iter().copied().rev().find(|&u| u <= 0.9).unwrap_or(*us.last().expect("validated"))
}

pub(super) fn oint_range(grid: &Grid) -> (u64, u64) {
    (*grid.oint_cycles.iter().min().expect("validated"), *grid.oint_cycles.iter().max().expect("validated"))
}

/// Every Oint of the grid, lowest first.
pub(super) fn sorted_oints(grid: &Grid) -> Vec<u64> {
    let mut o = grid.oint_cycles.clone();
    o.sort_unstable();
    o
}

/// Floating/Fixed time ratio at `ppn` processors (Floating runs P threads,
/// Fixed P-1, both finish the same number of requests).
fn floating_over_fixed(v: &View, protocol: Protocol, ppn: u32, u: f64, oint: u64) -> Option<f64> {
    v.norm(protocol, "floating", ppn, u, oint)
}

pub(super) fn f2(x: f64) -> String {
    format!("{x:.2}")
}

/// A claim's verdict, by `judge`, on the runs of each sensitivity setting
/// (the variant `variant` makes of it).
pub(super) fn verdicts_under<K: Copy>(
    settings: &[K],
    records: &[RunRecord],
    variant: impl Fn(K) -> Variant,
    judge: impl Fn(&View) -> Verdict,
) -> Vec<(K, Verdict)> {
    settings.iter().map(|&k| (k, judge(&View { variant: variant(k), ..View::baseline(records) }))).collect()
}

/// The sensitivity runs' verdicts, for the report.
pub(super) struct Sensitivity {
    pub(super) claim1: Vec<(u32, Verdict)>,
    pub(super) claim5: Vec<(EffectOff, Verdict)>,
    pub(super) claim2: Vec<(Relinquish, Verdict)>,
    pub(super) claim4: Vec<(RoleArbitration, Verdict)>,
    /// The preset's rules, which the study's own runs follow.
    pub(super) preset: ProtocolParams,
}

/// Each claim again on the runs of each sensitivity setting.
pub(super) fn sensitivity(grid: &Grid, records: &[RunRecord], preset: &ProtocolParams) -> Sensitivity {
    let ((lo, hi), us) = (oint_range(grid), sorted_u(grid));
    let oints = sorted_oints(grid);
    Sensitivity {
        claim1: verdicts_under(
            &grid.return_sensitivity,
            records,
            |r| Variant { return_percent: Some(r), ..Variant::BASELINE },
            |v| claim1(v, &us, &oints),
        ),
        claim5: verdicts_under(
            &grid.sensitivity,
            records,
            |e| Variant { effect_off: Some(e), ..Variant::BASELINE },
            |v| claim5(v, grid, lo),
        ),
        claim2: verdicts_under(
            &grid.relinquish_sensitivity,
            records,
            |r| Variant { relinquish: Some(r), ..Variant::BASELINE },
            |v| claim2(v, &us, lo, hi),
        ),
        claim4: verdicts_under(
            &grid.arbitration_sensitivity,
            records,
            |a| Variant { arbitration: Some(a), ..Variant::BASELINE },
            |v| claim4(v, grid, &us, lo),
        ),
        preset: preset.clone(),
    }
}

/// Computes the verdict on each claim from the measured runs.
pub fn evaluate(grid: &Grid, records: &[RunRecord]) -> Vec<Verdict> {
    let us = sorted_u(grid);
    let oints = sorted_oints(grid);
    let (lo, hi) = oint_range(grid);
    let first_four =
        |v: &View| [claim1(v, &us, &oints), claim2(v, &us, lo, hi), claim3(v, &us, &oints), claim4(v, grid, &us, lo)];
    let v = View::baseline(records);
    let mut verdicts: Vec<Verdict> = first_four(&v).into();
    verdicts.push(claim5(&v, grid, lo));
    if grid.replicates > 1 {
        // The verdicts use means over the seeds; say how many seeds agree
        // on their own (claim 5 compares seed by seed already).
        let by_seed: Vec<[Verdict; 4]> =
            (0..grid.replicates).map(|i| first_four(&View { replicate: Some(i), ..View::baseline(records) })).collect();
        for (n, verdict) in verdicts.iter_mut().take(4).enumerate() {
            let agree = by_seed.iter().filter(|v| v[n].decided && v[n].supported == verdict.supported).count();
            verdict.evidence += &format!("; seed by seed, {agree} of {} seeds give the same verdict", grid.replicates);
        }
    }
    verdicts
}

/// Single vs Fixed (null handler): the dedicated PP helps more the lower U,
/// until the single processor is communication-bound and, often idle, acts
/// as PP and takes fewer interrupts; with high Oint even a few interrupts
/// hurt badly. The claim names no Oint for the fall-back, so every Oint of
/// the grid must show it.
fn claim1(v: &View, us: &[f64], oints: &[u64]) -> Verdict {
    let p = Protocol::Null;
    let mut checks = Vec::new();
    let (lo, hi) = (oints[0], oints[oints.len() - 1]);
    for &oint in oints {
        let r: Vec<(f64, f64)> = us.iter().filter_map(|&u| v.norm(p, "single", 1, u, oint).map(|x| (u, x))).collect();
        if r.len() != us.len() {
            checks.push(Check::missing(&format!("Single null Oint {oint}")));
            continue;
        }
        let (u_peak, peak) = r.iter().copied().fold((0.0, f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
        let (u_max, at_max) = *r.last().expect("non-empty");
        let (u_min, at_min) = r[0];
        let decreasing =
            r.iter().filter(|(u, _)| *u >= u_peak).collect::<Vec<_>>().windows(2).all(|w| w[1].1 <= w[0].1 * 1.02);
        checks.push(Check::new(
            peak > 1.0 && u_peak < u_max && peak > at_max * 1.05 && decreasing,
            format!(
                "Oint {oint}: Single/Fixed peaks at {} (U={u_peak}) and falls with higher U to {} (U={u_max})",
                f2(peak),
                f2(at_max)
            ),
        ));
        let irq_min = v.irq_rate(p, "single", 1, u_min, oint).unwrap_or(f64::NAN);
        let irq_peak = v.irq_rate(p, "single", 1, u_peak, oint).unwrap_or(f64::NAN);
        checks.push(Check::new(
            at_min < peak && irq_min < irq_peak,
            format!(
                "Oint {oint}: communication-bound U={u_min} falls back to {} with {} interrupts/request (vs {} at the peak)",
                f2(at_min),
                f2(irq_min),
                f2(irq_peak)
            ),
        ));
    }
    let u_max = *us.last().expect("validated");
    match (v.norm(p, "single", 1, u_max, lo), v.norm(p, "single", 1, u_max, hi)) {
        (Some(a), Some(b)) => checks.push(Check::new(
            b >= 1.25 && b > a,
            format!(
                "even at U={u_max} (fewest interrupts per cycle) high Oint leaves Single {} x Fixed (low Oint {})",
                f2(b),
                f2(a)
            ),
        )),
        _ => checks.push(Check::missing("Single null at the highest U")),
    }
    Verdict::from_checks(1, &checks)
}

/// Floating on two processors (null handler): with high Oint it behaves like
/// Fixed, the two processors alternating as PP and avoiding interrupts, a
/// little slower for migration; with low Oint it clearly beats Fixed at
/// higher U because both processors compute.
pub(super) fn claim2(v: &View, us: &[f64], lo: u64, hi: u64) -> Verdict {
    let p = Protocol::Null;
    let mut checks = Vec::new();
    let u_max = high_u(us);
    let high_us: Vec<f64> = us.iter().copied().filter(|u| *u >= 0.5).collect();
    // High Oint: like Fixed at high U, alternating instead of interrupting,
    // and slightly slower for the migration that alternating costs.
    match v.norm(p, "floating", 2, u_max, hi) {
        Some(f) => checks.push(Check::new(
            (1.0..=1.2).contains(&f),
            format!("high Oint: Floating/Fixed at U={u_max} is {} (need 1.0-1.2: like Fixed, slightly slower)", f2(f)),
        )),
        None => checks.push(Check::missing("Floating null high Oint")),
    }
    let irq: Vec<f64> = us.iter().filter(|&&u| u <= 0.7).filter_map(|&u| v.irq_rate(p, "floating", 2, u, hi)).collect();
    if irq.is_empty() {
        checks.push(Check::missing("Floating null interrupts at high Oint and U<=0.7"));
    } else {
        let max_irq = irq.iter().copied().fold(0.0, f64::max);
        checks.push(Check::new(
            max_irq <= 0.05,
            format!("high Oint: at most {} interrupts/request for U<=0.7 (processors alternate as PP)", f2(max_irq)),
        ));
    }
    let mig_float = v.migration_rate(p, "floating", 2, u_max, hi);
    let mig_fixed = v.migration_rate(p, "fixed", 2, u_max, hi);
    match (mig_float, mig_fixed) {
        (Some(a), Some(b)) => checks.push(Check::new(
            a > b + 0.5,
            format!("migration misses/request {} under Floating vs {} under Fixed", f2(a), f2(b)),
        )),
        _ => checks.push(Check::missing("migration misses")),
    }
    // Low Oint: both compute, clearly faster at higher U.
    let low: Vec<(f64, f64)> =
        high_us.iter().filter_map(|&u| v.norm(p, "floating", 2, u, lo).map(|x| (u, x))).collect();
    if low.is_empty() {
        checks.push(Check::missing("Floating null at low Oint and U>=0.5"));
    } else {
        let worst = low.iter().map(|x| x.1).fold(0.0, f64::max);
        checks.push(Check::new(
            worst <= 0.8,
            format!(
                "low Oint: Floating/Fixed <= {} for U>=0.5 ({})",
                f2(worst),
                low.iter().map(|(u, x)| format!("U={u}: {}", f2(*x))).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    match (v.norm(p, "floating", 2, u_max, lo), v.norm(p, "floating", 2, u_max, hi)) {
        (Some(a), Some(b)) => {
            checks.push(Check::new(b > a + 0.1, format!("at U={u_max} low Oint {} vs high Oint {}", f2(a), f2(b))))
        }
        _ => checks.push(Check::missing("Floating null at the highest U")),
    }
    Verdict::from_checks(2, &checks)
}

/// Fetch-block: a dedicated PP helps less than for the null handler, and
/// wins only when Oint >> Lmin; communication-bound with low Oint, Single
/// beats Fixed (no cache-to-cache transfer); Floating on two processors
/// beats Fixed even at low U.
fn claim3(v: &View, us: &[f64], oints: &[u64]) -> Verdict {
    let mut checks = Vec::new();
    let (lo, hi) = (oints[0], oints[oints.len() - 1]);
    let single = |p, u, o| v.norm(p, "single", 1, u, o);
    // Helps less: Single/Fixed lower for fetch than null, at every U and Oint.
    let mut less = Vec::new();
    for &o in oints {
        for &u in us {
            if let (Some(n), Some(f)) = (single(Protocol::Null, u, o), single(Protocol::Fetch, u, o)) {
                less.push((u, o, n, f));
            }
        }
    }
    if less.is_empty() {
        checks.push(Check::missing("Single null and fetch at the same U and Oint"));
    } else {
        let violations: Vec<_> = less.iter().filter(|(_, _, n, f)| f >= n).collect();
        let mean_n = less.iter().map(|x| x.2).sum::<f64>() / less.len() as f64;
        let mean_f = less.iter().map(|x| x.3).sum::<f64>() / less.len() as f64;
        checks.push(Check::new(
            violations.is_empty(),
            format!(
                "Single/Fixed averages {} for fetch vs {} for null ({} of {} points where fetch is not lower)",
                f2(mean_f),
                f2(mean_n),
                violations.len(),
                less.len()
            ),
        ));
    }
    checks.extend(fixed_wins_only_when_oint_dominates(v, us, oints));
    let u_min = us[0];
    match single(Protocol::Fetch, u_min, lo) {
        Some(x) => checks
            .push(Check::new(x < 1.0, format!("communication-bound (U={u_min}), low Oint: Single/Fixed {}", f2(x)))),
        None => checks.push(Check::missing("fetch Single at the lowest U")),
    }
    match (v.norm(Protocol::Fetch, "floating", 2, u_min, lo), v.norm(Protocol::Fetch, "floating", 2, u_min, hi)) {
        (Some(a), Some(b)) => checks.push(Check::new(
            a < 1.0 && b < 1.0,
            format!("Floating/Fixed on 2 processors at U={u_min}: {} (low Oint), {} (high Oint)", f2(a), f2(b)),
        )),
        _ => checks.push(Check::missing("fetch Floating on 2 processors at the lowest U")),
    }
    Verdict::from_checks(3, &checks)
}

/// Whether `oint` is much larger than fetch-block's `lmin` for claim 3:
/// not up to Lmin (false), so from twice Lmin on (true); in between neither
/// reading is safe (None).
pub(super) fn oint_dominates(oint: u64, lmin: f64) -> Option<bool> {
    let ratio = oint as f64 / lmin;
    if ratio <= 1.0 {
        Some(false)
    } else if ratio >= 2.0 {
        Some(true)
    } else {
        None
    }
}

/// Claim 3's "Fixed wins only when Oint >> Lmin" (fetch-block), at every
/// Oint of the grid: up to Lmin, Fixed must never clearly win (Single/Fixed
/// at most 1.05 at every U); from twice Lmin on it must win at every U
/// (above 1.1). Between Lmin and twice Lmin neither reading of ">>" is
/// safe, so those Oints are reported and not judged. Each side needs an
/// Oint of the grid.
fn fixed_wins_only_when_oint_dominates(v: &View, us: &[f64], oints: &[u64]) -> Vec<Check> {
    let Some(lmin) = v.records.iter().find(|r| r.protocol == Protocol::Fetch).map(|r| r.lmin_cycles) else {
        return vec![Check::missing("fetch runs (for Lmin)")];
    };
    let mut checks = Vec::new();
    let mut judged = (false, false);
    let mut between = Vec::new();
    for &o in oints {
        let r: Vec<f64> = us.iter().filter_map(|&u| v.norm(Protocol::Fetch, "single", 1, u, o)).collect();
        if r.len() != us.len() {
            checks.push(Check::missing(&format!("fetch Single at Oint {o}")));
            continue;
        }
        let (most, least) = (r.iter().copied().fold(f64::MIN, f64::max), r.iter().copied().fold(f64::MAX, f64::min));
        let ratio = o as f64 / lmin;
        match oint_dominates(o, lmin) {
            Some(false) => {
                judged.0 = true;
                checks.push(Check::new(
                    most <= 1.05,
                    format!(
                        "Oint {o} ({ratio:.2} x Lmin): Single/Fixed at most {} (need <= 1.05: Fixed never clearly wins)",
                        f2(most)
                    ),
                ));
            }
            Some(true) => {
                judged.1 = true;
                checks.push(Check::new(
                    least > 1.1,
                    format!(
                        "Oint {o} ({ratio:.2} x Lmin): Single/Fixed at least {} (need > 1.1: Fixed wins)",
                        f2(least)
                    ),
                ));
            }
            None => between.push(format!("Oint {o} ({ratio:.2} x Lmin) {}-{}", f2(least), f2(most))),
        }
    }
    if !between.is_empty() {
        checks.push(Check::note(format!("not judged, between Lmin and 2 x Lmin: Single/Fixed {}", between.join(", "))));
    }
    if !judged.0 {
        checks.push(Check::missing("fetch at an Oint up to Lmin"));
    }
    if !judged.1 {
        checks.push(Check::missing("fetch at an Oint of twice Lmin or more"));
    }
    checks
}

/// More processors per node (low Oint): Fixed overtakes Floating at low U,
/// the ratio levels off once the PP saturates, with Fixed markedly ahead for
/// null and modestly for fetch; at high U Floating's advantage shrinks.
pub(super) fn claim4(v: &View, grid: &Grid, us: &[f64], lo: u64) -> Verdict {
    let mut checks = Vec::new();
    let mut procs = grid.procs_per_node.clone();
    procs.sort();
    procs.dedup();
    procs.retain(|&p| p >= 2);
    let (&p_min, &p_max) = (procs.first().expect("validated"), procs.last().expect("validated"));
    let [u_low, u_high] = claim4_us(us);
    let mut leveled = BTreeMap::new();
    for p in [Protocol::Null, Protocol::Fetch] {
        let r: Vec<(u32, f64)> =
            procs.iter().filter_map(|&n| floating_over_fixed(v, p, n, u_low, lo).map(|x| (n, x))).collect();
        if r.len() != procs.len() || r.len() < 3 {
            checks.push(Check::missing(&format!("{p} Floating/Fixed across processors")));
            continue;
        }
        let first = r[0].1;
        let last = r[r.len() - 1].1;
        let prev = r[r.len() - 2].1;
        checks.push(Check::new(
            first < 1.0 && last > 1.0,
            format!(
                "{p}, U={u_low}: Floating/Fixed goes from {} at {p_min} to {} at {p_max} processors (Fixed overtakes)",
                f2(first),
                f2(last)
            ),
        ));
        checks.push(Check::new(
            (last - prev).abs() / prev <= 0.10,
            format!("{p}: levels off ({} -> {} over the last two counts)", f2(prev), f2(last)),
        ));
        // Levelling off is the PP saturating under both policies.
        let occupancy = |policy| v.mean(p, policy, p_max, u_low, lo, |r| Some(r.stats.pp_occupancy));
        match (occupancy("fixed"), occupancy("floating")) {
            (Some(fixed), Some(floating)) => checks.push(Check::new(
                fixed >= 0.85 && floating >= 0.85,
                format!(
                    "{p}: PP occupancy at {p_max} processors {} (Fixed), {} (Floating) (need >= 0.85: saturated)",
                    f2(fixed),
                    f2(floating)
                ),
            )),
            _ => checks.push(Check::missing(&format!("{p} PP occupancy at {p_max} processors"))),
        }
        leveled.insert(p, last);
    }
    if let (Some(&n), Some(&f)) = (leveled.get(&Protocol::Null), leveled.get(&Protocol::Fetch)) {
        checks.push(Check::new(
            n > f && f > 1.0,
            format!("at {p_max} processors Fixed leads by {} (null) vs {} (fetch)", f2(n), f2(f)),
        ));
    }
    for p in [Protocol::Null, Protocol::Fetch] {
        match (floating_over_fixed(v, p, p_min, u_high, lo), floating_over_fixed(v, p, p_max, u_high, lo)) {
            (Some(a), Some(b)) => checks.push(Check::new(
                b > a,
                format!(
                    "{p}, U={u_high}: Floating/Fixed {} at {p_min} vs {} at {p_max} (advantage shrinks)",
                    f2(a),
                    f2(b)
                ),
            )),
            _ => checks.push(Check::missing("high-U Floating/Fixed")),
        }
    }
    Verdict::from_checks(4, &checks)
}

/// The report's section on claim 4 under the other role arbitrations, with
/// how evenly each spreads the handlers over a node's processors.
pub(super) fn arbitration_section(grid: &Grid, records: &[RunRecord], sensitivity: &Sensitivity) -> String {
    let (lo, _) = oint_range(grid);
    let [u_low, u_high] = claim4_us(&sorted_u(grid));
    let us = if u_low == u_high { format!("U={u_low}") } else { format!("U={u_low} and U={u_high}") };
    let p_max = *grid.procs_per_node.iter().max().expect("validated");
    let spread = |variant: Variant| {
        let v = View { variant, ..View::baseline(records) };
        let share = |p| v.mean(p, "floating", p_max, u_low, lo, |r| Some(busiest_two_share(r))).map(f2);
        format!(
            "{} (null), {} (fetch)",
            share(Protocol::Null).unwrap_or_else(|| "-".into()),
            share(Protocol::Fetch).unwrap_or_else(|| "-".into())
        )
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## Sensitivity of claim 4\n\nClaim 4's points (Floating at every processor count from 2, {us}, Oint {lo}) \
         run again with another arbitration of a released acting-PP role among the processors \
         waiting for it; the preset's is {}. These runs are in `runs/arbitration-<rule>-*.json` and are not used for \
         the verdicts above. Under Floating at {p_max} processors, U={u_low}, the two busiest processors of a node \
         run a share of its handlers of {} under {0}.\n",
        sensitivity.preset.role_arbitration.label(),
        spread(Variant::BASELINE)
    );
    for (a, v) in &sensitivity.claim4 {
        let shares = spread(Variant { arbitration: Some(*a), ..Variant::BASELINE });
        let _ = writeln!(
            s,
            "- arbitration {}: {} - {}; the two busiest processors run {shares} of the handlers",
            a.label(),
            v.status(),
            v.evidence
        );
    }
    s.push('\n');
    s
}

/// Mean over nodes of the share of a node's handlers its two busiest
/// processors ran.
fn busiest_two_share(r: &RunRecord) -> f64 {
    let shares: Vec<f64> = r
        .stats
        .nodes
        .iter()
        .map(|n| {
            let mut h: Vec<u64> = n.procs.iter().map(|p| p.handlers).collect();
            h.sort_unstable_by(|a, b| b.cmp(a));
            h.iter().take(2).sum::<u64>() as f64 / h.iter().sum::<u64>().max(1) as f64
        })
        .collect();
    shares.iter().sum::<f64>() / shares.len().max(1) as f64
}

/// Claim 4's low U (about 0.1, where Fixed overtakes) and high U (where
/// Floating's advantage shrinks).
pub(super) fn claim4_us(us: &[f64]) -> [f64; 2] {
    [us.iter().copied().find(|&u| u >= 0.1).unwrap_or(us[0]), high_u(us)]
}

/// Cost-performance (low Oint) at the configured U values.
pub(super) fn claim5(v: &View, grid: &Grid, lo: u64) -> Verdict {
    let mut checks = Vec::new();
    for &u in &grid.cost_performance_u {
        for p in [Protocol::Null, Protocol::Fetch] {
            let fixed2 = v.cost_perf(p, "fixed", 2, u, lo);
            let float2 = v.cost_perf(p, "floating", 2, u, lo);
            let best_of = |pols: &[&'static str]| best_cost_perf(v, grid, p, u, lo, pols);
            let (Some(fx), Some(fl), Some(best), Some(best_fixed), Some(best_floating)) = (
                fixed2,
                float2,
                best_of(&["single", "fixed", "floating"]),
                best_of(&["fixed"]),
                best_of(&["floating"]),
            ) else {
                checks.push(Check::missing(&format!("{p} cost-performance at U={u}")));
                continue;
            };
            let (ok, expect, winner, rival) = match p {
                Protocol::Null => (
                    fx < 1.0 && fl < fx && best.pol == "fixed",
                    "dedicated PP pays, second compute processor pays more, Fixed best",
                    &best_fixed,
                    &best_floating,
                ),
                Protocol::Fetch => (
                    fx > 1.0 && fl < 1.0 && best.pol == "floating",
                    "dedicated PP does not pay, second compute processor does, Floating best",
                    &best_floating,
                    &best_fixed,
                ),
            };
            checks.push(Check::new(
                ok,
                format!(
                    "{p} U={u}: Fixed-2 {}, Floating-2 {}, best {}; best of each {} vs {}, {}-{} ahead in {} \
                     ({expect})",
                    f2(fx),
                    f2(fl),
                    best.name(),
                    best_fixed.name(),
                    best_floating.name(),
                    winner.pol,
                    winner.procs,
                    seeds_ahead(v, p, u, lo, winner, rival)
                ),
            ));
        }
    }
    Verdict::from_checks(5, &checks)
}

/// A configuration's mean cost-performance.
struct CostPoint {
    cost: f64,
    pol: &'static str,
    procs: u32,
}

impl CostPoint {
    fn name(&self) -> String {
        format!("{}-{} {:.3}", self.pol, self.procs, self.cost)
    }
}

/// The most cost-effective configuration among `pols` (Single only on one
/// processor, the others on two or more).
fn best_cost_perf(v: &View, grid: &Grid, p: Protocol, u: f64, lo: u64, pols: &[&'static str]) -> Option<CostPoint> {
    grid.procs_per_node
        .iter()
        .flat_map(|&n| {
            pols.iter()
                .filter(move |&&pol| (pol == "single") == (n == 1))
                .filter_map(move |&pol| v.cost_perf(p, pol, n, u, lo).map(|cost| CostPoint { cost, pol, procs: n }))
        })
        .fold(None, |a: Option<CostPoint>, b| match a {
            Some(a) if a.cost <= b.cost => Some(a),
            _ => Some(b),
        })
}

/// In how many seeds `a` is more cost-effective than `b` (runs of one
/// replicate share a seed), as "k of n seeds".
fn seeds_ahead(v: &View, p: Protocol, u: f64, lo: u64, a: &CostPoint, b: &CostPoint) -> String {
    let a = v.cost_perf_by_seed(p, a.pol, a.procs, u, lo);
    let b = v.cost_perf_by_seed(p, b.pol, b.procs, u, lo);
    let paired: Vec<bool> = a.iter().filter_map(|(r, x)| b.get(r).map(|y| x < y)).collect();
    format!("{} of {} seeds", paired.iter().filter(|&&w| w).count(), paired.len())
}
