//! The scheduling-micro study: Single, Fixed and Floating on the
//! microbenchmarks of Falsafi & Wood (HPCA 1997), with the verdicts on the
//! five claims of spec/scheduling.md computed from the measured data.

use crate::experiment::{
    check_distinct, check_distinct_decimals, check_sensitivity_on, shown, EffectOff, Source, MAX_CYCLES, MAX_REQUESTS,
};
use crate::figures::{line_chart, Chart, Series};
use crate::report::{markdown_table, Check, Verdict};
use crate::sweep;
use anyhow::{bail, Context, Result};
use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_core::config::{parse_toml, ProtocolParams, Relinquish, RoleArbitration};
use finegrain_core::{MachineConfig, Policy, Topology};
use finegrain_sim::{mix_seed, RunStats, SimConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    pub spec: String,
    pub study: String,
    pub preset: String,
    pub seed: u64,
    pub nodes: u32,
    pub full: Grid,
    pub quick: Grid,
}

/// The points of one sweep.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    pub protocols: Vec<Protocol>,
    pub procs_per_node: Vec<u32>,
    pub target_u: Vec<f64>,
    pub oint_cycles: Vec<u64>,
    pub requests_per_node: u64,
    pub cost_performance_u: Vec<f64>,
    pub replicates: u32,
    /// Effects switched off, one at a time, in extra runs of claim 5's
    /// points (cost-performance at low Oint); the report gives the claim's
    /// verdict without each.
    #[serde(default)]
    pub sensitivity: Vec<EffectOff>,
    /// Relinquish rules other than the preset's, each in extra runs of
    /// claim 2's points (null handler, two processors, the lowest and the
    /// highest Oint); the report gives the claim's verdict under each.
    #[serde(default)]
    pub relinquish_sensitivity: Vec<Relinquish>,
    /// Role arbitrations other than the preset's, each in extra runs of
    /// claim 4's points (Floating at every processor count from 2, the
    /// claim's low and high U, the lowest Oint); the report gives the
    /// claim's verdict under each.
    #[serde(default)]
    pub arbitration_sensitivity: Vec<RoleArbitration>,
}

impl Grid {
    /// The claims need null and fetch, Single (1), the two-processor node
    /// (2) and two more counts, U values on both sides of claim 2's
    /// thresholds, a low and a high Oint, and cost-performance points that
    /// were simulated; no list repeats a value (runs would share an id).
    fn validate(&self, table: &str) -> Result<()> {
        let field = |f: &str| format!("{table}.{f}");
        check_distinct(&field("protocols"), &self.protocols, Protocol::to_string)?;
        if !(self.protocols.contains(&Protocol::Null) && self.protocols.contains(&Protocol::Fetch)) {
            bail!(
                "invalid {} = [{}]: must contain null and fetch (the claims compare them)",
                field("protocols"),
                self.protocols.iter().map(Protocol::to_string).collect::<Vec<_>>().join(", ")
            );
        }
        if let Some(p) = self.procs_per_node.iter().find(|&&p| p == 0 || p > 64) {
            bail!("invalid {} = {p}: allowed 1..=64", field("procs_per_node"));
        }
        check_distinct(&field("procs_per_node"), &self.procs_per_node, u32::to_string)?;
        let larger = self.procs_per_node.iter().filter(|&&p| p > 2).count();
        if !self.procs_per_node.contains(&1) || !self.procs_per_node.contains(&2) || larger < 2 {
            bail!(
                "invalid {} = {:?}: must contain 1 (Single), 2 (the Fixed baseline) and at least two larger counts \
                 (claim 4 follows Floating/Fixed as processors grow), values 1..=64",
                field("procs_per_node"),
                self.procs_per_node
            );
        }
        if let Some(u) = self.target_u.iter().find(|u| !(**u > 0.0 && **u < 1.0)) {
            bail!("invalid {} = {}: allowed values strictly between 0 and 1", field("target_u"), shown(*u));
        }
        check_distinct_decimals(&field("target_u"), &self.target_u, 2)?;
        if self.target_u.len() < 3
            || !self.target_u.iter().any(|&u| u >= 0.5)
            || !self.target_u.iter().any(|&u| u <= 0.7)
        {
            bail!(
                "invalid {} = {:?}: allowed at least 3 values, one >= 0.5 and one <= 0.7 (claim 2 looks at both)",
                field("target_u"),
                self.target_u
            );
        }
        if let Some(o) = self.oint_cycles.iter().find(|&&o| o > MAX_CYCLES) {
            bail!("invalid {} = {o}: allowed 0..={MAX_CYCLES} cycles", field("oint_cycles"));
        }
        check_distinct(&field("oint_cycles"), &self.oint_cycles, u64::to_string)?;
        if self.oint_cycles.len() < 2 {
            bail!(
                "invalid {} = {:?}: allowed at least two values (a low and a high interrupt overhead)",
                field("oint_cycles"),
                self.oint_cycles
            );
        }
        if self.requests_per_node == 0 || self.requests_per_node > MAX_REQUESTS {
            bail!("invalid {} = {}: allowed 1..={MAX_REQUESTS}", field("requests_per_node"), self.requests_per_node);
        }
        if let Some(u) = self.cost_performance_u.iter().find(|u| !self.target_u.iter().any(|t| (*t - **u).abs() < 1e-9))
        {
            bail!("invalid {} = {}: allowed only values listed in target_u", field("cost_performance_u"), shown(*u));
        }
        check_distinct_decimals(&field("cost_performance_u"), &self.cost_performance_u, 2)?;
        if self.cost_performance_u.is_empty() {
            bail!(
                "invalid {} = []: allowed a non-empty list of values listed in target_u (claim 5 and figure 6 need one)",
                field("cost_performance_u")
            );
        }
        if self.replicates == 0 || self.replicates > MAX_REPLICATES {
            bail!("invalid {} = {}: allowed 1..={MAX_REPLICATES}", field("replicates"), self.replicates);
        }
        check_distinct(&field("sensitivity"), &self.sensitivity, EffectOff::to_string)?;
        check_distinct(&field("relinquish_sensitivity"), &self.relinquish_sensitivity, |r| r.label().to_string())?;
        check_distinct(&field("arbitration_sensitivity"), &self.arbitration_sensitivity, |a| a.label().to_string())?;
        Ok(())
    }

    /// A rule rerun for claim 2 or 4 must differ from the preset's (its
    /// runs would repeat the study's own).
    fn check_rules(&self, table: &str, preset: &ProtocolParams) -> Result<()> {
        if self.relinquish_sensitivity.contains(&preset.relinquish) {
            bail!(
                "invalid {table}.relinquish_sensitivity = [{}]: {} is the preset's own rule; allowed the other rules \
                 of eager, handoff, adaptive",
                self.relinquish_sensitivity.iter().map(|r| r.label()).collect::<Vec<_>>().join(", "),
                preset.relinquish.label()
            );
        }
        if self.arbitration_sensitivity.contains(&preset.role_arbitration) {
            bail!(
                "invalid {table}.arbitration_sensitivity = [{}]: {} is the preset's own arbitration; allowed the \
                 other one of lowest, round-robin",
                self.arbitration_sensitivity.iter().map(|a| a.label()).collect::<Vec<_>>().join(", "),
                preset.role_arbitration.label()
            );
        }
        Ok(())
    }
}

/// Most replicates of every point a sweep may ask for.
const MAX_REPLICATES: u32 = 1000;

/// One point of the sweep.
#[derive(Clone, Debug)]
struct RunSpec {
    protocol: Protocol,
    policy: Policy,
    procs_per_node: u32,
    target_u: f64,
    oint: u64,
    replicate: u32,
    seed: u64,
    lmin: f64,
    /// What a sensitivity run changes (the compute time stays the
    /// baseline's, so only the mechanism changes).
    variant: Variant,
}

/// What a sensitivity run changes in the preset's machine; the study's own
/// runs change nothing. A record holds its fields at its top level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Variant {
    /// An effect of the model switched off (claim 5's reruns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect_off: Option<EffectOff>,
    /// Another rule for giving the acting-PP role up (claim 2's reruns).
    #[serde(rename = "relinquish_rule", skip_serializing_if = "Option::is_none")]
    pub relinquish: Option<Relinquish>,
    /// Another arbitration of a released role (claim 4's reruns).
    #[serde(rename = "arbitration_rule", skip_serializing_if = "Option::is_none")]
    pub arbitration: Option<RoleArbitration>,
}

impl Variant {
    /// The study's own runs.
    const BASELINE: Variant = Variant { effect_off: None, relinquish: None, arbitration: None };

    /// The start of a run id that names what the run changes.
    fn id_prefix(&self) -> String {
        let mut s = self.effect_off.map(|e| e.run_label() + "-").unwrap_or_default();
        if let Some(r) = self.relinquish {
            let _ = write!(s, "relinquish-{}-", r.label());
        }
        if let Some(a) = self.arbitration {
            let _ = write!(s, "arbitration-{}-", a.label());
        }
        s
    }

    fn apply(&self, m: &mut MachineConfig) {
        if let Some(e) = self.effect_off {
            e.apply(m);
        }
        if let Some(r) = self.relinquish {
            m.protocol.relinquish = r;
        }
        if let Some(a) = self.arbitration {
            m.protocol.role_arbitration = a;
        }
    }

    /// The variant whose runs stand for `policy` under this one. Fixed's
    /// compute processors never act as PP and its dedicated one never gives
    /// the role up, so neither rule changes a Fixed run; a single processor
    /// never races anyone for the role. Their reruns pair with the study's
    /// own runs of those policies.
    fn seen_by(self, policy: &str) -> Variant {
        match policy {
            "fixed" => Variant { relinquish: None, arbitration: None, ..self },
            "single" => Variant { arbitration: None, ..self },
            _ => self,
        }
    }
}

impl RunSpec {
    fn id(&self) -> String {
        run_id(
            self.variant,
            self.protocol,
            &self.policy.label(),
            self.procs_per_node,
            self.target_u,
            self.oint,
            self.replicate,
        )
    }

    fn mean_compute(&self) -> f64 {
        mean_compute(self.target_u, self.lmin)
    }
}

/// A run's id, from what it is (`finegrain rerun` checks a record's id
/// and labels against each other with it).
#[allow(clippy::too_many_arguments)]
pub fn run_id(
    variant: Variant,
    protocol: Protocol,
    policy_label: &str,
    procs_per_node: u32,
    target_u: f64,
    oint: u64,
    replicate: u32,
) -> String {
    format!(
        "{}{}-{}-p{}-u{:.2}-oint{}-r{}",
        variant.id_prefix(),
        protocol,
        policy_label.replace(':', ""),
        procs_per_node,
        target_u,
        oint,
        replicate
    )
}

/// The mean compute time that gives utilization `u` against `lmin`.
pub fn mean_compute(u: f64, lmin: f64) -> f64 {
    u / (1.0 - u) * lmin
}

/// Everything one run measured, with the configuration that regenerates it.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    pub experiment: String,
    pub id: String,
    pub protocol: Protocol,
    pub policy: String,
    pub procs_per_node: u32,
    pub compute_procs: u32,
    pub target_u: f64,
    pub oint_cycles: u64,
    pub replicate: u32,
    pub seed: u64,
    pub lmin_cycles: f64,
    pub mean_compute_cycles: f64,
    /// Set in sensitivity runs: what they change (`config` holds the
    /// machine as run).
    #[serde(flatten)]
    pub variant: Variant,
    pub config: SimConfig,
    pub workload: MicroConfig,
    pub stats: RunStats,
    pub derived: Derived,
    /// Wall-clock figures: the only part of a record that differs between
    /// two runs of the same configuration and seed.
    pub perf: Perf,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Derived {
    /// Run time / run time of Fixed with the same processors per node (for
    /// Single: Fixed on two processors, i.e. a dedicated PP added).
    pub time_norm_fixed: Option<f64>,
    /// costup(P) x run time / run time of Single.
    pub cost_performance: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Perf {
    pub wall_seconds: f64,
    pub events_per_wall_second: f64,
    pub messages_per_wall_second: f64,
}

/// costup(P) = 1 + 0.3 (P - 1): each processor costs 30% of a uniprocessor node.
pub fn costup(procs: u32) -> f64 {
    1.0 + 0.3 * (procs as f64 - 1.0)
}

pub fn load(src: &Source) -> Result<Experiment> {
    let e: Experiment = parse_toml(&src.origin, &src.text)?;
    if e.study != "scheduling-micro" {
        bail!("invalid study = {} in {}: expected scheduling-micro", e.study, src.origin);
    }
    if e.nodes < 2 || e.nodes > 4096 {
        bail!("invalid nodes = {}: allowed 2..=4096 (requests go to another node)", e.nodes);
    }
    e.full.validate("full")?;
    e.quick.validate("quick")?;
    let machine = MachineConfig::load(&src.preset(&e.preset))?;
    // Every run's machine must pass the simulator's checks (its caches must
    // fit in host memory) before Lmin is measured, the output directory
    // made or hours spent on other runs. Machines do not depend on Lmin,
    // which only sets compute times.
    let any_lmin: BTreeMap<Protocol, f64> = [Protocol::Null, Protocol::Fetch].into_iter().map(|p| (p, 1.0)).collect();
    for (table, grid) in [("full", &e.full), ("quick", &e.quick)] {
        for s in plan(&e, grid, &any_lmin) {
            sim_config(&e, &machine, &s)
                .validate()
                .map_err(|err| anyhow::anyhow!("invalid experiment ({table} run {}): {err}", s.id()))?;
        }
    }
    Ok(e)
}

/// Runs the study and writes results.csv, runs/*.json, figures/*.svg and
/// report.md into `out`. Returns the report's path.
pub fn reproduce(src: &Source, quick: bool, out: &Path) -> Result<PathBuf> {
    let exp = load(src)?;
    let grid = if quick { &exp.quick } else { &exp.full };
    let machine = MachineConfig::load(&src.preset(&exp.preset))?;
    for (table, g) in [("full", &exp.full), ("quick", &exp.quick)] {
        g.check_rules(table, &machine.protocol)?;
        check_sensitivity_on(&format!("{table}.sensitivity"), &g.sensitivity, &machine, &exp.preset)?;
    }
    let started = Instant::now();
    let mut lmin = BTreeMap::new();
    for &p in &grid.protocols {
        let l = micro::measure_lmin(&machine, p, exp.seed).with_context(|| format!("measuring Lmin for {p}"))?;
        lmin.insert(p, l);
    }
    for (table, g) in [("full", &exp.full), ("quick", &exp.quick)] {
        check_compute_times(table, g, &lmin)?;
        check_oints_decide_claim3(table, g, &lmin)?;
    }
    crate::experiment::prepare_out(out)?;
    let specs = plan(&exp, grid, &lmin);
    let mode = if quick { "quick" } else { "full" };
    let mut records = sweep::run_all(&specs, &format!("{} ({mode})", exp.name), |s| run_one(&exp, &machine, grid, s))?;
    derive(&mut records);
    crate::experiment::write_records(out, src, &records, |r| &r.id, &csv(&records))?;
    // Figures and verdicts read the baseline runs (their views skip the
    // sensitivity runs).
    let figures = draw_figures(out, grid, &records)?;
    let verdicts = evaluate(grid, &records);
    // Each claim again on the runs of each sensitivity setting.
    let ((lo, hi), us) = (oint_range(grid), sorted_u(grid));
    let sensitivity = Sensitivity {
        claim5: verdicts_under(
            &grid.sensitivity,
            &records,
            |e| Variant { effect_off: Some(e), ..Variant::BASELINE },
            |v| claim5(v, grid, lo),
        ),
        claim2: verdicts_under(
            &grid.relinquish_sensitivity,
            &records,
            |r| Variant { relinquish: Some(r), ..Variant::BASELINE },
            |v| claim2(v, &us, lo, hi),
        ),
        claim4: verdicts_under(
            &grid.arbitration_sensitivity,
            &records,
            |a| Variant { arbitration: Some(a), ..Variant::BASELINE },
            |v| claim4(v, grid, &us, lo),
        ),
        preset: machine.protocol.clone(),
    };
    let report =
        render_report(&exp, src, mode, grid, &machine, &lmin, &records, &verdicts, &sensitivity, &figures, started);
    let report_path = out.join("report.md");
    std::fs::write(&report_path, report).with_context(|| format!("writing {}", report_path.display()))?;
    Ok(report_path)
}

/// The mean compute time U / (1 - U) x Lmin of every U is at most
/// [`MAX_CYCLES`] (known once Lmin is measured, before any run).
fn check_compute_times(table: &str, grid: &Grid, lmin: &BTreeMap<Protocol, f64>) -> Result<()> {
    for (p, &l) in lmin {
        for &u in &grid.target_u {
            let compute = u / (1.0 - u) * l;
            if compute > MAX_CYCLES as f64 {
                bail!(
                    "invalid {table}.target_u = {}: the mean compute time U / (1 - U) x Lmin ({p}: {l:.0} cycles) \
                     is {} cycles, allowed at most {MAX_CYCLES}",
                    shown(u),
                    shown(compute.round())
                );
            }
        }
    }
    Ok(())
}

/// Claim 3 judges fetch-block at an Oint up to its Lmin and at one of at
/// least twice its Lmin (see [`fixed_wins_only_when_oint_dominates`]): a
/// grid without both could not decide it (known once Lmin is measured).
fn check_oints_decide_claim3(table: &str, grid: &Grid, lmin: &BTreeMap<Protocol, f64>) -> Result<()> {
    let Some(&l) = lmin.get(&Protocol::Fetch).filter(|_| grid.protocols.contains(&Protocol::Fetch)) else {
        return Ok(());
    };
    let sides: Vec<Option<bool>> = grid.oint_cycles.iter().map(|&o| oint_dominates(o, l)).collect();
    if !(sides.contains(&Some(false)) && sides.contains(&Some(true))) {
        bail!(
            "invalid {table}.oint_cycles = {:?}: claim 3 needs an Oint up to fetch-block's Lmin ({l:.0} cycles) and one \
             of at least twice it ({:.0}); allowed lists with both",
            grid.oint_cycles,
            (2.0 * l).ceil()
        );
    }
    Ok(())
}

fn plan(exp: &Experiment, grid: &Grid, lmin: &BTreeMap<Protocol, f64>) -> Vec<RunSpec> {
    let mut specs = Vec::new();
    let (lo, hi) = oint_range(grid);
    for replicate in 0..grid.replicates {
        // Every configuration of a replicate shares its seed (common random
        // numbers), so ratios between policies are not blurred by noise.
        let seed = mix_seed(exp.seed, replicate as u64, 0x5c4e);
        for &protocol in &grid.protocols {
            // The policies a variant changes at each processor count, for a
            // U and an Oint (rules pair with the study's own Fixed runs,
            // see `Variant::seen_by`).
            let mut point = |target_u: f64, oint: u64, counts: &[u32], variant: Variant| {
                for &ppn in counts {
                    for policy in policies(ppn) {
                        if variant.seen_by(&policy.label()) != variant {
                            continue;
                        }
                        specs.push(RunSpec {
                            protocol,
                            policy,
                            procs_per_node: ppn,
                            target_u,
                            oint,
                            replicate,
                            seed,
                            lmin: lmin[&protocol],
                            variant,
                        });
                    }
                }
            };
            for &oint in &grid.oint_cycles {
                for &target_u in &grid.target_u {
                    point(target_u, oint, &grid.procs_per_node, Variant::BASELINE);
                }
            }
            for &effect in &grid.sensitivity {
                for &target_u in &grid.cost_performance_u {
                    point(
                        target_u,
                        lo,
                        &grid.procs_per_node,
                        Variant { effect_off: Some(effect), ..Variant::BASELINE },
                    );
                }
            }
            // Claim 2 looks at the two-processor node only.
            if protocol == Protocol::Null {
                for &rule in &grid.relinquish_sensitivity {
                    for oint in [lo, hi] {
                        for &target_u in &grid.target_u {
                            point(target_u, oint, &[2], Variant { relinquish: Some(rule), ..Variant::BASELINE });
                        }
                    }
                }
            }
            // Claim 4's two U may be one (a grid with one U from 0.1 to 0.9).
            let mut claim4_points = claim4_us(&sorted_u(grid)).to_vec();
            claim4_points.dedup();
            for &arbitration in &grid.arbitration_sensitivity {
                for &target_u in &claim4_points {
                    let variant = Variant { arbitration: Some(arbitration), ..Variant::BASELINE };
                    point(target_u, lo, &grid.procs_per_node, variant);
                }
            }
        }
    }
    specs
}

/// Single on a uniprocessor node, else Fixed (one dedicated PP) and Floating.
fn policies(ppn: u32) -> Vec<Policy> {
    if ppn == 1 {
        vec![Policy::Single]
    } else {
        vec![Policy::Fixed { protocol_procs: 1 }, Policy::Floating]
    }
}

/// The simulated machine of one run: the preset with the run's Oint, and
/// what its variant changes.
fn sim_config(exp: &Experiment, machine: &MachineConfig, s: &RunSpec) -> SimConfig {
    let mut m = machine.clone();
    m.interrupt.overhead_cycles = s.oint;
    s.variant.apply(&mut m);
    SimConfig::new(m, Topology { nodes: exp.nodes, procs_per_node: s.procs_per_node }, s.policy, s.seed)
}

fn run_one(exp: &Experiment, machine: &MachineConfig, grid: &Grid, s: &RunSpec) -> Result<RunRecord> {
    let config = sim_config(exp, machine, s);
    let workload = MicroConfig {
        protocol: s.protocol,
        mean_compute_cycles: s.mean_compute(),
        requests_per_node: grid.requests_per_node,
        single_requester: false,
    };
    let t0 = Instant::now();
    let out = micro::simulate(&config, &workload).with_context(|| format!("run {}", s.id()))?;
    let wall = t0.elapsed().as_secs_f64().max(1e-9);
    let stats = out.stats;
    Ok(RunRecord {
        experiment: exp.name.clone(),
        id: s.id(),
        protocol: s.protocol,
        policy: s.policy.label(),
        procs_per_node: s.procs_per_node,
        compute_procs: s.policy.compute_procs(s.procs_per_node),
        target_u: s.target_u,
        oint_cycles: s.oint,
        replicate: s.replicate,
        seed: s.seed,
        lmin_cycles: s.lmin,
        mean_compute_cycles: s.mean_compute(),
        variant: s.variant,
        perf: Perf {
            wall_seconds: wall,
            events_per_wall_second: stats.events as f64 / wall,
            messages_per_wall_second: stats.messages as f64 / wall,
        },
        config,
        workload,
        stats,
        derived: Derived::default(),
    })
}

/// Key of the configuration a run is compared against.
type Key = (Variant, Protocol, u64, u64, u32, String, u32);

fn key(r: &RunRecord, policy: &str, ppn: u32) -> Key {
    let u = (r.target_u * 1e6).round() as u64;
    (r.variant.seen_by(policy), r.protocol, r.oint_cycles, u, r.replicate, policy.to_string(), ppn)
}

fn derive(records: &mut [RunRecord]) {
    let time: BTreeMap<Key, u64> =
        records.iter().map(|r| (key(r, &r.policy, r.procs_per_node), r.stats.sim_cycles)).collect();
    for r in records.iter_mut() {
        let fixed = time.get(&key(r, "fixed", r.procs_per_node.max(2)));
        let single = time.get(&key(r, "single", 1));
        let t = r.stats.sim_cycles as f64;
        r.derived.time_norm_fixed = fixed.map(|&f| t / f as f64);
        r.derived.cost_performance = single.map(|&s| costup(r.procs_per_node) * t / s as f64);
    }
}

const CSV_HEADER: &str =
    "protocol,policy,procs_per_node,compute_procs,target_u,measured_u,oint_cycles,seed,sim_cycles,\
time_norm_fixed,cost_performance,requests,interrupts,pp_occupancy,events,wall_seconds,replicate,lmin_cycles,\
mean_compute_cycles,messages,mean_request_latency_cycles,migration_misses,placement_misses,interference_misses,\
role_cycles,messages_per_wall_second,record,effect_off,relinquish,arbitration";

fn csv(records: &[RunRecord]) -> String {
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_default();
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in records {
        let st = &r.stats;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{:.4},{},{},{},{},{},{},{},{:.4},{},{:.4},{},{:.1},{:.1},{},{:.1},{},{},{},{},{:.0},runs/{}.json,{},{},{}",
            r.protocol,
            r.policy,
            r.procs_per_node,
            r.compute_procs,
            r.target_u,
            st.measured_u,
            r.oint_cycles,
            r.seed,
            st.sim_cycles,
            opt(r.derived.time_norm_fixed),
            opt(r.derived.cost_performance),
            st.requests,
            st.interrupts,
            st.pp_occupancy,
            st.events,
            r.perf.wall_seconds,
            r.replicate,
            r.lmin_cycles,
            r.mean_compute_cycles,
            st.messages,
            st.request_latency.mean_cycles,
            st.misses.migration,
            st.misses.placement,
            st.misses.interference,
            st.cycles.role,
            r.perf.messages_per_wall_second,
            r.id,
            r.variant.effect_off.map(|e| e.to_string()).unwrap_or_default(),
            r.variant.relinquish.map(|r| r.label()).unwrap_or_default(),
            r.variant.arbitration.map(|a| a.label()).unwrap_or_default()
        );
    }
    s
}

/// Mean over replicates of a metric for one configuration, among the runs
/// of one variant (the baseline: the study's own runs).
struct View<'a> {
    records: &'a [RunRecord],
    variant: Variant,
    /// One seed's runs only (None: every seed's).
    replicate: Option<u32>,
}

impl<'a> View<'a> {
    /// The study's own runs (no sensitivity setting).
    fn baseline(records: &'a [RunRecord]) -> View<'a> {
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

    fn norm(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> Option<f64> {
        self.mean(protocol, policy, ppn, u, oint, |r| r.derived.time_norm_fixed)
    }

    fn cost_perf(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> Option<f64> {
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
    fn irq_rate(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> Option<f64> {
        self.mean(protocol, policy, ppn, u, oint, |r| Some(r.stats.interrupts as f64 / r.stats.requests.max(1) as f64))
    }

    /// Migration misses per request.
    fn migration_rate(&self, protocol: Protocol, policy: &str, ppn: u32, u: f64, oint: u64) -> Option<f64> {
        self.mean(protocol, policy, ppn, u, oint, |r| {
            Some(r.stats.misses.migration as f64 / r.stats.requests.max(1) as f64)
        })
    }
}

fn sorted_u(grid: &Grid) -> Vec<f64> {
    let mut u = grid.target_u.clone();
    u.sort_by(f64::total_cmp);
    u.dedup();
    u
}

/// "High U" in the claims: the largest U up to 0.9, the top of the papers'
/// axes.
fn high_u(us: &[f64]) -> f64 {
    us.iter().copied().rev().find(|&u| u <= 0.9).unwrap_or(*us.last().expect("validated"))
}

fn oint_range(grid: &Grid) -> (u64, u64) {
    (*grid.oint_cycles.iter().min().expect("validated"), *grid.oint_cycles.iter().max().expect("validated"))
}

/// Every Oint of the grid, lowest first.
fn sorted_oints(grid: &Grid) -> Vec<u64> {
    let mut o = grid.oint_cycles.clone();
    o.sort_unstable();
    o
}

/// Floating/Fixed time ratio at `ppn` processors (Floating runs P threads,
/// Fixed P-1, both finish the same number of requests).
fn floating_over_fixed(v: &View, protocol: Protocol, ppn: u32, u: f64, oint: u64) -> Option<f64> {
    v.norm(protocol, "floating", ppn, u, oint)
}

fn f2(x: f64) -> String {
    format!("{x:.2}")
}

/// A claim's verdict, by `judge`, on the runs of each sensitivity setting
/// (the variant `variant` makes of it).
fn verdicts_under<K: Copy>(
    settings: &[K],
    records: &[RunRecord],
    variant: impl Fn(K) -> Variant,
    judge: impl Fn(&View) -> Verdict,
) -> Vec<(K, Verdict)> {
    settings.iter().map(|&k| (k, judge(&View { variant: variant(k), ..View::baseline(records) }))).collect()
}

/// The sensitivity runs' verdicts, for the report.
struct Sensitivity {
    claim5: Vec<(EffectOff, Verdict)>,
    claim2: Vec<(Relinquish, Verdict)>,
    claim4: Vec<(RoleArbitration, Verdict)>,
    /// The preset's rules, which the study's own runs follow.
    preset: ProtocolParams,
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
fn claim2(v: &View, us: &[f64], lo: u64, hi: u64) -> Verdict {
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
fn oint_dominates(oint: u64, lmin: f64) -> Option<bool> {
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
fn claim4(v: &View, grid: &Grid, us: &[f64], lo: u64) -> Verdict {
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
fn arbitration_section(grid: &Grid, records: &[RunRecord], sensitivity: &Sensitivity) -> String {
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
fn claim4_us(us: &[f64]) -> [f64; 2] {
    [us.iter().copied().find(|&u| u >= 0.1).unwrap_or(us[0]), high_u(us)]
}

/// Cost-performance (low Oint) at the configured U values.
fn claim5(v: &View, grid: &Grid, lo: u64) -> Verdict {
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

fn draw_figures(out: &Path, grid: &Grid, records: &[RunRecord]) -> Result<Vec<(String, String)>> {
    let v = View::baseline(records);
    let us = sorted_u(grid);
    let (lo, hi) = oint_range(grid);
    let mut figs = Vec::new();
    let by_u = |policy: &str, ppn: u32| -> Vec<Series> {
        let mut s = Vec::new();
        for &p in &grid.protocols {
            for o in [lo, hi] {
                let pts: Vec<(f64, f64)> =
                    us.iter().filter_map(|&u| v.norm(p, policy, ppn, u, o).map(|x| (u, x))).collect();
                s.push(Series { name: format!("{p}, Oint {o}"), points: pts });
            }
        }
        s
    };
    let f = "figures/fig3-single-vs-fixed.svg";
    line_chart(
        &out.join(f),
        &Chart {
            title: "Single vs Fixed: run time normalized to Fixed (2 processors)",
            x_label: "compute utilization U = C / (C + Lmin)",
            y_label: "time / time of Fixed",
            series: by_u("single", 1),
            reference_y: Some(1.0),
        },
    )?;
    figs.push((f.to_string(), "Single (1 processor) vs Fixed (1 compute + 1 protocol processor)".to_string()));
    let f = "figures/fig4-floating-vs-fixed.svg";
    line_chart(
        &out.join(f),
        &Chart {
            title: "Floating vs Fixed on 2 processors per node",
            x_label: "compute utilization U",
            y_label: "time / time of Fixed",
            series: by_u("floating", 2),
            reference_y: Some(1.0),
        },
    )?;
    figs.push((f.to_string(), "Floating (2 compute) vs Fixed (1 compute + 1 PP)".to_string()));
    let mut procs: Vec<u32> = grid.procs_per_node.iter().copied().filter(|&p| p >= 2).collect();
    procs.sort();
    procs.dedup();
    let u_low = us.iter().copied().find(|&u| u >= 0.1).unwrap_or(us[0]);
    let u_high = high_u(&us);
    let mut series = Vec::new();
    for &p in &grid.protocols {
        for u in [u_low, u_high] {
            let pts = procs.iter().filter_map(|&n| v.norm(p, "floating", n, u, lo).map(|x| (n as f64, x))).collect();
            series.push(Series { name: format!("{p}, U={u}"), points: pts });
        }
    }
    let f = "figures/fig5-processors-per-node.svg";
    line_chart(
        &out.join(f),
        &Chart {
            title: &format!("Floating vs Fixed as processors per node grow (Oint {lo})"),
            x_label: "processors per node",
            y_label: "time of Floating / time of Fixed",
            series,
            reference_y: Some(1.0),
        },
    )?;
    figs.push((f.to_string(), "Floating/Fixed against processors per node".to_string()));
    for &p in &grid.protocols {
        let mut series = Vec::new();
        for &u in &grid.cost_performance_u {
            for pol in ["fixed", "floating"] {
                let mut pts: Vec<(f64, f64)> =
                    v.cost_perf(p, "single", 1, u, lo).map(|c| (1.0, c)).into_iter().collect();
                pts.extend(procs.iter().filter_map(|&n| v.cost_perf(p, pol, n, u, lo).map(|c| (n as f64, c))));
                series.push(Series { name: format!("{pol}, U={u}"), points: pts });
            }
        }
        let f = format!("figures/fig6-cost-performance-{p}.svg");
        line_chart(
            &out.join(&f),
            &Chart {
                title: &format!("Cost-performance, {p} handler (Oint {lo}); below 1 is cost-effective"),
                x_label: "processors per node",
                y_label: "costup x time / time of Single",
                series,
                reference_y: Some(1.0),
            },
        )?;
        figs.push((f, format!("cost-performance, {p}")));
    }
    Ok(figs)
}

#[allow(clippy::too_many_arguments)]
fn render_report(
    exp: &Experiment,
    src: &Source,
    mode: &str,
    grid: &Grid,
    machine: &MachineConfig,
    lmin: &BTreeMap<Protocol, f64>,
    records: &[RunRecord],
    verdicts: &[Verdict],
    sensitivity: &Sensitivity,
    figures: &[(String, String)],
    started: Instant,
) -> String {
    let mut s = String::new();
    let quick_flag = if mode == "quick" { " --quick" } else { "" };
    let _ = writeln!(s, "# {} ({mode})\n", exp.title);
    let _ = writeln!(
        s,
        "Experiment `{}` ({}), spec `{}`, preset `{}`, base seed {}, {} runs.\nRegenerate: `finegrain reproduce {}{quick_flag} --out DIR` \
         (every run's full configuration and seed is in `runs/<id>.json`).\n",
        exp.name,
        src.origin,
        exp.spec,
        exp.preset,
        exp.seed,
        records.len(),
        src.arg
    );
    let _ = writeln!(s, "## Claims\n");
    for v in verdicts {
        let _ = writeln!(s, "{}\n", v.line());
    }
    if !sensitivity.claim2.is_empty() {
        let (lo, hi) = oint_range(grid);
        let _ = writeln!(
            s,
            "## Sensitivity of claim 2\n\nClaim 2's points (null handler, 2 processors per node, Oint {lo} and {hi}) \
             run again with another rule for when an acting protocol processor with work of its own gives the role \
             up; the preset's rule is {}. These runs are in `runs/relinquish-<rule>-*.json` and are not used for the \
             verdicts above.\n",
            sensitivity.preset.relinquish.label()
        );
        for (r, v) in &sensitivity.claim2 {
            let _ = writeln!(s, "- relinquish {}: {} - {}", r.label(), v.status(), v.evidence);
        }
        let _ = writeln!(s);
    }
    if !sensitivity.claim4.is_empty() {
        s += &arbitration_section(grid, records, sensitivity);
    }
    if !sensitivity.claim5.is_empty() {
        let _ = writeln!(
            s,
            "## Sensitivity of claim 5\n\nClaim 5's points (cost-performance at low Oint) run again with one \
             mechanism of the model switched off (an effect, or the split-transaction bus: `split_bus` holds the bus \
             for a transaction's whole occupancy) and the same compute times, to show which decides the verdict. \
             These runs are in `runs/no-<mechanism>-*.json` (its name with dashes) and are not used for the verdicts \
             above.\n"
        );
        for (e, v) in &sensitivity.claim5 {
            let _ = writeln!(s, "- without {e}: {} - {}", v.status(), v.evidence);
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "## Calibration\n");
    let mut rows = Vec::new();
    for (p, l) in lmin {
        let target = machine.calibration.as_ref().map(|c| match p {
            Protocol::Null => c.lmin_null_us,
            Protocol::Fetch => c.lmin_fetch_us,
        });
        rows.push(vec![
            p.to_string(),
            format!("{l:.1}"),
            format!("{:.2}", machine.cycles_to_us(*l)),
            target.map(|t| format!("{t:.2}")).unwrap_or_else(|| "-".into()),
        ]);
    }
    s += &markdown_table(&["protocol", "Lmin (cycles)", "Lmin (us)", "target (us)"], &rows);
    // The table shows the baseline runs, as the verdicts use them.
    let v = View::baseline(records);
    let (lo, hi) = oint_range(grid);
    let _ = writeln!(s, "\n## Time normalized to Fixed (2 processors)\n");
    let mut rows = Vec::new();
    for &p in &grid.protocols {
        for o in [lo, hi] {
            for u in sorted_u(grid) {
                let cell = |x: Option<f64>| x.map(f2).unwrap_or_else(|| "-".into());
                rows.push(vec![
                    p.to_string(),
                    o.to_string(),
                    u.to_string(),
                    cell(v.norm(p, "single", 1, u, o)),
                    cell(v.irq_rate(p, "single", 1, u, o)),
                    cell(v.norm(p, "floating", 2, u, o)),
                    cell(v.irq_rate(p, "floating", 2, u, o)),
                ]);
            }
        }
    }
    s += &markdown_table(
        &["protocol", "Oint", "U", "Single/Fixed", "Single irq/req", "Floating-2/Fixed", "Floating-2 irq/req"],
        &rows,
    );
    let _ = writeln!(s, "\n## Figures\n");
    for (f, caption) in figures {
        let _ = writeln!(s, "- [{caption}]({f})");
    }
    let events: u64 = records.iter().map(|r| r.stats.events).sum();
    let messages: u64 = records.iter().map(|r| r.stats.messages).sum();
    let busy: f64 = records.iter().map(|r| r.perf.wall_seconds).sum();
    let _ = writeln!(
        s,
        "\n## Simulator\n\n{} events and {} messages simulated in {:.1} s of simulation time on all cores \
         ({:.2} M events/s, {:.2} M messages/s per core); whole study {:.1} s wall.",
        events,
        messages,
        busy,
        events as f64 / busy / 1e6,
        messages as f64 / busy / 1e6,
        started.elapsed().as_secs_f64()
    );
    s
}
