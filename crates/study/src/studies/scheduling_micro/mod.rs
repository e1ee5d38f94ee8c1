//! The scheduling-micro study: Single, Fixed and Floating on the
//! microbenchmarks of Falsafi & Wood (HPCA 1997, Section 5), with the
//! verdicts on the paper's five findings computed from the measured data.

mod claims;
mod labels;
mod report;

pub use labels::RunLabels;

use crate::claim::Claim;
use crate::experiment::{
    check_distinct, check_distinct_decimals, check_sensitivity_on, shown, EffectOff, Header, Source, MAX_CYCLES,
    MAX_REQUESTS,
};
use crate::figures::Figure;
use crate::record::{Labels as _, RunRecord};
use crate::report::Section;
use crate::study::{Planned, Study};
use anyhow::{bail, Context, Result};
use claims::{claim4_us, oint_dominates, oint_range, sorted_u};
use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_apps::WorkloadSpec;
use finegrain_core::config::{InterruptParams, ProtocolParams, Relinquish, RoleArbitration};
use finegrain_core::{MachineConfig, Policy, Topology};
use finegrain_sim::{mix_seed, SimConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    pub paper: String,
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
    /// Shares of Oint (percent) paid on the interrupt's return, after the
    /// role is given up, other than the preset's, each in extra runs of
    /// claim 1's points (Single, null handler, every U and Oint); the
    /// report gives the claim's verdict under each.
    #[serde(default)]
    pub return_sensitivity: Vec<u32>,
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
        if let Some(r) = self.return_sensitivity.iter().find(|&&r| r > 100) {
            bail!("invalid {} = {r}: allowed percentages 0..=100 of Oint", field("return_sensitivity"));
        }
        check_distinct(&field("return_sensitivity"), &self.return_sensitivity, u32::to_string)?;
        Ok(())
    }

    /// A rule rerun for claim 2 or 4 must differ from the preset's (its
    /// runs would repeat the study's own).
    fn check_rules(&self, table: &str, preset: &ProtocolParams, interrupt: &InterruptParams) -> Result<()> {
        if self.relinquish_sensitivity.contains(&preset.relinquish) {
            bail!(
                "invalid {table}.relinquish_sensitivity = [{}]: {} is the preset's own rule; allowed the other rules \
                 of eager, handoff, adaptive",
                self.relinquish_sensitivity.iter().map(|r| r.label()).collect::<Vec<_>>().join(", "),
                preset.relinquish.label()
            );
        }
        let preset_return = 100 - interrupt.entry_percent;
        if self.return_sensitivity.contains(&preset_return) {
            bail!(
                "invalid {table}.return_sensitivity = {:?}: {preset_return} is the preset's own share of Oint paid on \
                 return; allowed other percentages 0..=100",
                self.return_sensitivity
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

/// What a sensitivity run changes in the preset's machine; the study's own
/// runs change nothing. A record's labels hold its fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Variant {
    /// An effect of the model switched off (claim 5's reruns).
    pub effect_off: Option<EffectOff>,
    /// Another rule for giving the acting-PP role up (claim 2's reruns).
    pub relinquish: Option<Relinquish>,
    /// Another arbitration of a released role (claim 4's reruns).
    pub arbitration: Option<RoleArbitration>,
    /// Another share of Oint (percent) paid on return (claim 1's reruns).
    pub return_percent: Option<u32>,
}

impl Variant {
    /// The study's own runs.
    pub(crate) const BASELINE: Variant =
        Variant { effect_off: None, relinquish: None, arbitration: None, return_percent: None };

    /// The start of a run id that names what the run changes.
    fn id_prefix(&self) -> String {
        let mut s = self.effect_off.map(|e| e.run_label() + "-").unwrap_or_default();
        if let Some(r) = self.relinquish {
            let _ = write!(s, "relinquish-{}-", r.label());
        }
        if let Some(a) = self.arbitration {
            let _ = write!(s, "arbitration-{}-", a.label());
        }
        if let Some(r) = self.return_percent {
            let _ = write!(s, "return{r}-");
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
        if let Some(r) = self.return_percent {
            m.interrupt.entry_percent = 100 - r;
        }
    }

    /// The variant whose runs stand for `policy` under this one. Fixed's
    /// compute processors never act as PP and its dedicated one never gives
    /// the role up, so neither rule changes a Fixed run, and nothing
    /// interrupts it; a single processor never races anyone for the role,
    /// and with no peer to take it over it gives the role up under every
    /// rule. Their reruns pair with the study's own runs of those policies.
    fn seen_by(self, policy: &str) -> Variant {
        match policy {
            "fixed" => Variant { relinquish: None, arbitration: None, return_percent: None, ..self },
            "single" => Variant { relinquish: None, arbitration: None, ..self },
            _ => self,
        }
    }
}

/// The study, loaded: its experiment, the preset's machine, and Lmin
/// measured on it for each protocol.
pub struct SchedulingMicro {
    exp: Experiment,
    header: Header,
    quick: bool,
    machine: MachineConfig,
    lmin: BTreeMap<Protocol, f64>,
}

/// A finished run as the study views it: its record, with its time
/// against Fixed's and its cost-performance.
pub struct Run {
    pub record: RunRecord<RunLabels>,
    pub derived: Derived,
}

impl Run {
    pub fn l(&self) -> &RunLabels {
        &self.record.labels
    }
}

#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// Run time / run time of Fixed with the same processors per node (for
    /// Single: Fixed on two processors, i.e. a dedicated PP added).
    pub time_norm_fixed: Option<f64>,
    /// costup(P) x run time / run time of Single.
    pub cost_performance: Option<f64>,
}

/// costup(P) = 1 + 0.3 (P - 1): each processor costs 30% of a uniprocessor node.
pub fn costup(procs: u32) -> f64 {
    1.0 + 0.3 * (procs as f64 - 1.0)
}

impl SchedulingMicro {
    fn grid(&self) -> &Grid {
        if self.quick {
            &self.exp.quick
        } else {
            &self.exp.full
        }
    }
}

impl Study for SchedulingMicro {
    const NAME: &'static str = "scheduling-micro";
    const EXPERIMENT: &'static str = include_str!("../../../../../experiments/scheduling-micro.toml");
    type Labels = RunLabels;
    type Run = Run;

    fn load(src: &Source, quick: bool) -> Result<SchedulingMicro> {
        let exp = load(src)?;
        let header = crate::experiment::header(src)?;
        let machine = MachineConfig::load(&src.preset(&exp.preset))?;
        for (table, g) in [("full", &exp.full), ("quick", &exp.quick)] {
            g.check_rules(table, &machine.protocol, &machine.interrupt)?;
            check_sensitivity_on(&format!("{table}.sensitivity"), &g.sensitivity, &machine, &exp.preset)?;
        }
        let grid = if quick { &exp.quick } else { &exp.full };
        let mut lmin = BTreeMap::new();
        for &p in &grid.protocols {
            let l = micro::measure_lmin(&machine, p, exp.seed).with_context(|| format!("measuring Lmin for {p}"))?;
            lmin.insert(p, l);
        }
        for (table, g) in [("full", &exp.full), ("quick", &exp.quick)] {
            check_compute_times(table, g, &lmin)?;
            check_oints_decide_claim3(table, g, &lmin)?;
        }
        Ok(SchedulingMicro { exp, header, quick, machine, lmin })
    }

    fn header(&self) -> &Header {
        &self.header
    }

    fn plan(&self) -> Result<Vec<Planned<RunLabels>>> {
        Ok(plan(&self.exp, &self.machine, self.grid(), &self.lmin))
    }

    fn view(&self, records: Vec<RunRecord<RunLabels>>) -> Vec<Run> {
        derive(records)
    }

    fn record(run: &Run) -> &RunRecord<RunLabels> {
        &run.record
    }

    fn csv_header(&self) -> &'static str {
        CSV_HEADER
    }

    fn csv_row(&self, run: &Run) -> String {
        csv_row(run)
    }

    fn claims(&self, runs: &[Run]) -> Vec<Claim> {
        claims::evaluate(self.grid(), runs)
    }

    fn figures(&self, runs: &[Run], out: &Path) -> Result<Vec<Figure>> {
        report::draw_figures(out, self.grid(), runs)
    }

    fn setup(&self, _runs: &[Run]) -> String {
        report::setup(&self.exp, self.grid())
    }

    fn sections(&self, runs: &[Run], _claims: &[Claim]) -> Vec<Section> {
        let sensitivity = claims::sensitivity(self.grid(), runs, &self.machine.protocol);
        report::sections(self.grid(), &self.machine, &self.lmin, runs, &sensitivity)
    }
}

/// Reads the experiment and checks both its grids, every run's machine
/// included, before anything is measured or run.
fn load(src: &Source) -> Result<Experiment> {
    let e: Experiment = src.parse()?;
    if e.study != SchedulingMicro::NAME {
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
        for p in plan(&e, &machine, grid, &any_lmin) {
            p.config
                .validate()
                .map_err(|err| anyhow::anyhow!("invalid experiment ({table} run {}): {err}", p.labels.id()))?;
        }
    }
    Ok(e)
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

fn plan(
    exp: &Experiment,
    machine: &MachineConfig,
    grid: &Grid,
    lmin: &BTreeMap<Protocol, f64>,
) -> Vec<Planned<RunLabels>> {
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
                        let labels = RunLabels::new(
                            protocol,
                            policy,
                            ppn,
                            target_u,
                            oint,
                            replicate,
                            seed,
                            lmin[&protocol],
                            variant,
                        );
                        specs.push(planned(exp, machine, grid, labels, policy));
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
            // Claim 1 looks at Single on the null handler, at every point.
            if protocol == Protocol::Null {
                for &share in &grid.return_sensitivity {
                    for &oint in &grid.oint_cycles {
                        for &target_u in &grid.target_u {
                            point(target_u, oint, &[1], Variant { return_percent: Some(share), ..Variant::BASELINE });
                        }
                    }
                }
            }
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

/// One run: the preset with the run's Oint and what its variant changes,
/// and the microbenchmark at the run's mean compute time.
fn planned(
    exp: &Experiment,
    machine: &MachineConfig,
    grid: &Grid,
    labels: RunLabels,
    policy: Policy,
) -> Planned<RunLabels> {
    let mut m = machine.clone();
    m.interrupt.overhead_cycles = labels.oint_cycles;
    labels.variant().apply(&mut m);
    let topology = Topology { nodes: exp.nodes, procs_per_node: labels.procs_per_node };
    let config = SimConfig::new(m, topology, policy, labels.seed);
    let workload = WorkloadSpec::Micro(MicroConfig {
        protocol: labels.protocol,
        mean_compute_cycles: labels.mean_compute_cycles,
        requests_per_node: grid.requests_per_node,
        single_requester: false,
    });
    Planned { labels, config, workload }
}

/// Key of the configuration a run is compared against.
type Key = (Variant, Protocol, u64, u64, u32, String, u32);

fn key(l: &RunLabels, policy: &str, ppn: u32) -> Key {
    let u = (l.target_u * 1e6).round() as u64;
    (l.variant().seen_by(policy), l.protocol, l.oint_cycles, u, l.replicate, policy.to_string(), ppn)
}

/// Each run with its time against Fixed's and its cost-performance,
/// found among the other runs.
fn derive(records: Vec<RunRecord<RunLabels>>) -> Vec<Run> {
    let time: BTreeMap<Key, u64> = records
        .iter()
        .map(|r| (key(&r.labels, &r.labels.policy, r.labels.procs_per_node), r.stats.sim_cycles))
        .collect();
    let derived = |r: &RunRecord<RunLabels>| {
        let l = &r.labels;
        let fixed = time.get(&key(l, "fixed", l.procs_per_node.max(2)));
        let single = time.get(&key(l, "single", 1));
        let t = r.stats.sim_cycles as f64;
        Derived {
            time_norm_fixed: fixed.map(|&f| t / f as f64),
            cost_performance: single.map(|&s| costup(l.procs_per_node) * t / s as f64),
        }
    };
    let derived: Vec<Derived> = records.iter().map(derived).collect();
    records.into_iter().zip(derived).map(|(record, derived)| Run { record, derived }).collect()
}

const CSV_HEADER: &str =
    "protocol,policy,procs_per_node,compute_procs,target_u,measured_u,oint_cycles,seed,sim_cycles,\
time_norm_fixed,cost_performance,requests,interrupts,pp_occupancy,events,wall_seconds,replicate,lmin_cycles,\
mean_compute_cycles,messages,mean_request_latency_cycles,migration_misses,placement_misses,interference_misses,\
role_cycles,messages_per_wall_second,record,effect_off,relinquish,arbitration,interrupt_return_percent";

fn csv_row(run: &Run) -> String {
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_default();
    let (r, st, perf) = (run.l(), &run.record.stats, &run.record.wall);
    let variant = r.variant();
    format!(
            "{},{},{},{},{},{:.4},{},{},{},{},{},{},{},{:.4},{},{:.4},{},{:.1},{:.1},{},{:.1},{},{},{},{},{:.0},runs/{}.json,{},{},{},{}",
            r.protocol,
            r.policy,
            r.procs_per_node,
            r.compute_procs,
            r.target_u,
            st.measured_u,
            r.oint_cycles,
            r.seed,
            st.sim_cycles,
            opt(run.derived.time_norm_fixed),
            opt(run.derived.cost_performance),
            st.requests,
            st.interrupts,
            st.pp_occupancy,
            st.events,
            perf.wall_seconds,
            r.replicate,
            r.lmin_cycles,
            r.mean_compute_cycles,
            st.messages,
            st.request_latency.mean_cycles,
            st.misses.migration,
            st.misses.placement,
            st.misses.interference,
            st.cycles.role,
            perf.messages_per_wall_second,
            run.record.id,
            variant.effect_off.map(|e| e.to_string()).unwrap_or_default(),
            variant.relinquish.map(|r| r.label()).unwrap_or_default(),
            variant.arbitration.map(|a| a.label()).unwrap_or_default(),
            variant.return_percent.map(|p| p.to_string()).unwrap_or_default()
    )
}
