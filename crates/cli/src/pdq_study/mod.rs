//! The pdq-micro study: fetch&add handlers under serial dispatch, the
//! Parallel Dispatch Queue, spin-locks inside handlers and static
//! partitioning, on embedded, dedicated SMP and idle compute protocol
//! processors, with the verdicts on the five claims of issue 4
//! (spec/pdq.md) computed from the measured data.

mod claims;
mod report;

pub use claims::evaluate;
use report::{draw_figures, render_report};

use crate::experiment::{
    check_distinct, check_distinct_decimals, check_sensitivity_on, shown, EffectOff, Source, MAX_CYCLES, MAX_REQUESTS,
};
use crate::figures::{line_chart, Chart, Series};
use crate::report::{markdown_table, Check, Verdict};
use crate::sweep;
use anyhow::{bail, Context, Result};
use finegrain_apps::fetch_add::{self, FetchAddConfig, HomeMeasures, KeySkew};
use finegrain_core::config::parse_toml;
use finegrain_core::{Discipline, Dispatch, MachineConfig, Policy, PpKind, Topology};
use finegrain_sim::{mix_seed, RunStats, SimConfig};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Who runs the handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Protocol processors embedded in the NI device (Hurricane).
    Embedded,
    /// Dedicated SMP processors (Hurricane-1).
    Smp,
    /// Idle compute processors (Hurricane-1 Mult).
    Mult,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Embedded => "embedded",
            Kind::Smp => "smp",
            Kind::Mult => "mult",
        }
    }

    fn system(self) -> &'static str {
        match self {
            Kind::Embedded => "Hurricane (embedded)",
            Kind::Smp => "Hurricane-1 (dedicated SMP)",
            Kind::Mult => "Hurricane-1 Mult (idle compute)",
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    pub spec: String,
    pub study: String,
    pub preset: String,
    pub seed: u64,
    /// Nodes besides the home whose threads send requests.
    pub requester_nodes: u32,
    /// Compute processors per node (threads).
    pub compute_procs: u32,
    pub handler_cycles: u64,
    pub home_u: f64,
    pub home_burst_cycles: f64,
    pub zipf_exponent: f64,
    pub full: Grid,
    pub quick: Grid,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    pub protocol_procs: Vec<u32>,
    pub keys: Vec<u64>,
    pub kinds: Vec<Kind>,
    pub disciplines: Vec<Discipline>,
    pub requests_per_thread: u64,
    pub mult_home_u: Vec<f64>,
    pub mult_sweep_procs: u32,
    /// Requester think time in the Mult sweep: a light load, so the home's
    /// processors are sometimes all computing.
    pub mult_think_cycles: f64,
    pub sequential_fractions: Vec<f64>,
    /// Effects switched off, one at a time, in extra runs of claim 5's SMP
    /// and embedded scaling points; the report gives the gains without each.
    #[serde(default)]
    pub sensitivity: Vec<EffectOff>,
    /// Run every PDQ point of the dedicated kinds again with the dispatch
    /// device's key affinity on, passing an entry over at most this many
    /// times (an extension of the paper's device; 0: no such runs); the
    /// report checks claims 4 and 5 on them too.
    #[serde(default)]
    pub affinity_passes: u32,
}

impl Grid {
    /// The claims need 1 and 4 protocol processors, one key and more keys
    /// than 4 processors, embedded and smp processors, every discipline and
    /// at least two home utilizations in the Mult sweep; no list repeats a
    /// value (runs would share an id).
    fn validate(&self, table: &str, compute_procs: u32) -> Result<()> {
        let field = |f: &str| format!("{table}.{f}");
        if let Some(k) = self.protocol_procs.iter().find(|&&k| k == 0 || k > compute_procs) {
            bail!(
                "invalid {} = {k}: allowed 1..={compute_procs} (mult serves on at most the node's compute processors)",
                field("protocol_procs")
            );
        }
        check_distinct(&field("protocol_procs"), &self.protocol_procs, u32::to_string)?;
        for need in [1, 4] {
            if !self.protocol_procs.contains(&need) {
                bail!(
                    "invalid {} = {:?}: must contain 1 and 4 (the claims compare them), values 1..={compute_procs}",
                    field("protocol_procs"),
                    self.protocol_procs
                );
            }
        }
        check_distinct(&field("keys"), &self.keys, u64::to_string)?;
        if !self.keys.contains(&1) || !self.keys.iter().any(|&keys| keys > 4) {
            bail!(
                "invalid {} = {:?}: must contain 1 and a count above 4 (claim 2 uses one key, claim 4 more keys than \
                 4 processors)",
                field("keys"),
                self.keys
            );
        }
        check_distinct(&field("kinds"), &self.kinds, |k| k.label().to_string())?;
        if !(self.kinds.contains(&Kind::Embedded) && self.kinds.contains(&Kind::Smp)) {
            bail!(
                "invalid {} = [{}]: must contain embedded and smp (claims 1, 4 and 5 measure them), mult is optional",
                field("kinds"),
                self.kinds.iter().map(|k| k.label()).collect::<Vec<_>>().join(", ")
            );
        }
        check_distinct(&field("disciplines"), &self.disciplines, |d| d.label().to_string())?;
        let all = [Discipline::Serial, Discipline::Pdq, Discipline::SpinLock, Discipline::Static];
        if !all.iter().all(|d| self.disciplines.contains(d)) {
            bail!(
                "invalid {} = [{}]: must contain serial, pdq, spin-lock and static (the claims compare PDQ with each)",
                field("disciplines"),
                self.disciplines.iter().map(|d| d.label()).collect::<Vec<_>>().join(", ")
            );
        }
        if self.requests_per_thread == 0 || self.requests_per_thread > MAX_REQUESTS {
            bail!(
                "invalid {} = {}: allowed 1..={MAX_REQUESTS}",
                field("requests_per_thread"),
                self.requests_per_thread
            );
        }
        // -0 would name its runs "-0.00".
        if let Some(u) = self.mult_home_u.iter().find(|u| !(0.0..=1.0).contains(*u) || u.is_sign_negative()) {
            bail!("invalid {} = {}: allowed 0..=1", field("mult_home_u"), shown(*u));
        }
        check_distinct_decimals(&field("mult_home_u"), &self.mult_home_u, 2)?;
        if self.mult_home_u.len() < 2 {
            bail!(
                "invalid {} = {:?}: allowed at least 2 values in 0..=1 (claim 5 follows Mult's interrupts as the \
                 home's utilization falls)",
                field("mult_home_u"),
                self.mult_home_u
            );
        }
        if !(self.mult_think_cycles.is_finite() && (0.0..=MAX_CYCLES as f64).contains(&self.mult_think_cycles)) {
            bail!(
                "invalid {} = {}: allowed a number in 0..={MAX_CYCLES} cycles",
                field("mult_think_cycles"),
                shown(self.mult_think_cycles)
            );
        }
        if self.mult_sweep_procs == 0 || self.mult_sweep_procs > compute_procs {
            bail!("invalid {} = {}: allowed 1..={compute_procs}", field("mult_sweep_procs"), self.mult_sweep_procs);
        }
        if let Some(f) = self.sequential_fractions.iter().find(|f| !(0.0..=1.0).contains(*f) || f.is_sign_negative()) {
            bail!("invalid {} = {}: allowed 0..=1", field("sequential_fractions"), shown(*f));
        }
        check_distinct_decimals(&field("sequential_fractions"), &self.sequential_fractions, 3)?;
        check_distinct(&field("sensitivity"), &self.sensitivity, EffectOff::to_string)?;
        Ok(())
    }

    fn most_keys(&self) -> u64 {
        *self.keys.iter().max().expect("validated")
    }
}

/// Requesters besides the home: the machine's nodes but one.
pub fn check_requester_nodes(n: u32) -> Result<()> {
    let most = finegrain_core::config::MAX_NODES - 1;
    if !(1..=most).contains(&n) {
        bail!("invalid requester_nodes = {n}: allowed 1..={most}");
    }
    Ok(())
}

pub fn load(src: &Source) -> Result<Experiment> {
    let mut e: Experiment = parse_toml(&src.origin, &src.text)?;
    if e.study != "pdq-micro" {
        bail!("invalid study = {} in {}: expected pdq-micro", e.study, src.origin);
    }
    check_requester_nodes(e.requester_nodes)?;
    if e.compute_procs == 0 || e.compute_procs > 32 {
        bail!("invalid compute_procs = {}: allowed 1..=32", e.compute_procs);
    }
    if e.handler_cycles > MAX_CYCLES {
        bail!("invalid handler_cycles = {}: allowed 0..={MAX_CYCLES} cycles", e.handler_cycles);
    }
    if !(e.home_burst_cycles.is_finite() && (1.0..=MAX_CYCLES as f64).contains(&e.home_burst_cycles)) {
        bail!(
            "invalid home_burst_cycles = {}: allowed a number in 1..={MAX_CYCLES} cycles",
            shown(e.home_burst_cycles)
        );
    }
    // Run ids name the skew by its exponent, written out in full.
    fetch_add::check_zipf_exponent("zipf_exponent", e.zipf_exponent).map_err(anyhow::Error::msg)?;
    e.full.validate("full", e.compute_procs)?;
    e.quick.validate("quick", e.compute_procs)?;
    let machine = MachineConfig::load(&src.preset(&e.preset))?;
    if machine.pdq.is_none() {
        bail!("invalid preset = {}: the study needs a machine with a [pdq] section (for example hpca99)", e.preset);
    }
    for (table, grid) in [("full", &e.full), ("quick", &e.quick)] {
        check_sensitivity_on(&format!("{table}.sensitivity"), &grid.sensitivity, &machine, &e.preset)?;
        let passes = grid.affinity_passes;
        if passes > 0 && machine.pdq.as_ref().is_some_and(|p| p.affinity_passes > 0) {
            bail!(
                "invalid {table}.affinity_passes = {passes}: preset {} has key affinity on already \
                 (pdq.affinity_passes > 0), so its reruns would repeat the main runs; allowed 0 with it, or a preset \
                 with pdq.affinity_passes = 0",
                e.preset
            );
        }
    }
    let capacity = fetch_add::key_capacity(&machine, e.compute_procs);
    for (table, grid) in [("full", &e.full), ("quick", &e.quick)] {
        if let Some(keys) = grid.keys.iter().find(|&&keys| keys == 0 || keys > capacity) {
            bail!(
                "invalid {table}.keys = {keys}: allowed 1..={capacity} (one protocol block per word in the home's \
                 protocol table)"
            );
        }
    }
    // Claims 1 and 3 read throughput and busy-wait along processor and key
    // counts in list order.
    for grid in [&mut e.full, &mut e.quick] {
        grid.protocol_procs.sort();
        grid.keys.sort();
    }
    // Every workload point must be valid before hours are spent on others.
    for (table, grid) in [("full", &e.full), ("quick", &e.quick)] {
        for s in plan(&e, grid) {
            // The machine too (its caches must fit in host memory), before
            // the output directory is made.
            sim_config(&e, &machine, &s)
                .validate()
                .map_err(|err| anyhow::anyhow!("invalid experiment (run {}): {err}", s.id()))?;
            run_workload(&e, grid, &s).validate(&machine, e.compute_procs).map_err(|err| match s.sweep.field() {
                Some(f) => anyhow::anyhow!("invalid {table}.{f} (run {}): {err}", s.id()),
                None => anyhow::anyhow!("invalid experiment (run {}): {err}", s.id()),
            })?;
        }
    }
    Ok(e)
}

/// Which part of the study a run belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sweep {
    /// The grid of kinds, disciplines, processors, keys and skews.
    Main,
    /// Hurricane-1 Mult at several home utilizations.
    MultHomeU,
    /// PDQ with a share of sequential requests.
    Sequential,
    /// Claim 5's scaling points with one effect of the model off.
    Sensitivity,
    /// The dedicated kinds' PDQ points with the device's key affinity on.
    Affinity,
}

impl Sweep {
    /// The grid field whose values make this sweep's runs (the main grid's
    /// runs take the experiment's own workload fields).
    fn field(self) -> Option<&'static str> {
        match self {
            Sweep::Main | Sweep::Sensitivity | Sweep::Affinity => None,
            Sweep::MultHomeU => Some("mult_home_u"),
            Sweep::Sequential => Some("sequential_fractions"),
        }
    }
}

#[derive(Clone, Debug)]
struct RunSpec {
    sweep: Sweep,
    kind: Kind,
    discipline: Discipline,
    protocol_procs: u32,
    keys: u64,
    skew: KeySkew,
    home_u: f64,
    sequential_fraction: f64,
    think_cycles: f64,
    seed: u64,
    effect_off: Option<EffectOff>,
}

impl RunSpec {
    fn id(&self) -> String {
        let point = Point { kind: self.kind, discipline: self.discipline, protocol_procs: self.protocol_procs };
        let (keys, skew, home_u, seq) = (self.keys, self.skew, self.home_u, self.sequential_fraction);
        run_id(&point, keys, skew, self.sweep, home_u, seq, self.effect_off)
    }
}

/// A run's id (its record's file name): the point, the keys, and what its
/// sweep varies. `finegrain rerun` rebuilds it from a record's labels.
pub fn run_id(
    point: &Point,
    keys: u64,
    skew: KeySkew,
    sweep: Sweep,
    home_u: f64,
    sequential_fraction: f64,
    effect_off: Option<EffectOff>,
) -> String {
    let mut id = format!(
        "{}-{}-k{}-keys{}-{}",
        point.kind.label(),
        point.discipline.label(),
        point.protocol_procs,
        keys,
        skew.label().replace(':', "")
    );
    match sweep {
        Sweep::Main => {}
        Sweep::MultHomeU => id += &format!("-homeu{home_u:.2}"),
        Sweep::Sequential => id += &format!("-seq{sequential_fraction:.3}"),
        Sweep::Sensitivity => {
            id += &format!("-{}", effect_off.map_or_else(|| "no-effect".into(), EffectOff::run_label))
        }
        Sweep::Affinity => id += "-affinity",
    }
    id
}

/// Everything one run measured, with the configuration that regenerates it.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    pub experiment: String,
    pub id: String,
    pub sweep: Sweep,
    pub kind: Kind,
    pub discipline: Discipline,
    pub protocol_procs: u32,
    pub keys: u64,
    pub skew: String,
    pub target_home_u: f64,
    pub sequential_fraction: f64,
    pub think_cycles: f64,
    pub seed: u64,
    /// Set in sensitivity runs: the effect switched off (`config` holds the
    /// machine as run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect_off: Option<EffectOff>,
    pub config: SimConfig,
    pub workload: FetchAddConfig,
    pub home: HomeMeasures,
    pub stats: RunStats,
    /// Wall-clock figures: the only part of a record that differs between
    /// two runs of the same configuration and seed.
    pub wall_seconds: f64,
}

impl RunRecord {
    fn throughput(&self) -> f64 {
        self.home.throughput_msgs_per_us
    }

    /// Cycles the home's protocol processors spend per request, in handlers
    /// and spinning on key locks.
    fn pp_cycles_per_request(&self) -> f64 {
        let home = &self.stats.nodes[0];
        let spent: u64 = home.procs.iter().map(|p| p.cycles.handler + p.cycles.busy_wait).sum();
        spent as f64 / self.home.requests.max(1) as f64
    }

    /// Protocol state that moved cache to cache at the home, per request.
    fn migration_per_request(&self) -> f64 {
        let migration: u64 = self.stats.nodes[0].procs.iter().map(|p| p.misses.migration).sum();
        migration as f64 / self.home.requests.max(1) as f64
    }
}

/// Runs the study and writes results.csv, runs/*.json, figures/*.svg and
/// report.md into `out`. Returns the report's path.
pub fn reproduce(src: &Source, quick: bool, out: &Path) -> Result<PathBuf> {
    let exp = load(src)?;
    crate::experiment::prepare_out(out)?;
    let grid = if quick { &exp.quick } else { &exp.full };
    let machine = MachineConfig::load(&src.preset(&exp.preset))?;
    let started = Instant::now();
    let specs = plan(&exp, grid);
    let mode = if quick { "quick" } else { "full" };
    let records = sweep::run_all(&specs, &format!("{} ({mode})", exp.name), |s| run_one(&exp, &machine, grid, s))?;
    crate::experiment::write_records(out, src, &records, |r| &r.id, &csv(&records))?;
    let figures = draw_figures(out, grid, &records)?;
    let verdicts = evaluate(grid, &records);
    let report = render_report(&exp, src, mode, grid, &records, &verdicts, &figures, started);
    let report_path = out.join("report.md");
    std::fs::write(&report_path, report).with_context(|| format!("writing {}", report_path.display()))?;
    Ok(report_path)
}

/// Whether a discipline runs with a kind and processor count: serial has
/// one protocol processor, static partitioning needs dedicated ones.
fn runs(kind: Kind, discipline: Discipline, k: u32) -> bool {
    match discipline {
        Discipline::Serial => k == 1,
        Discipline::Static => kind != Kind::Mult,
        Discipline::Pdq | Discipline::SpinLock => true,
    }
}

fn plan(exp: &Experiment, grid: &Grid) -> Vec<RunSpec> {
    // One seed for every run (common random numbers): the requesters draw
    // the same words in every configuration, so differences between
    // configurations are not blurred by sampling noise.
    let seed = mix_seed(exp.seed, 0, 0x9d9);
    let skews = [KeySkew::Uniform, KeySkew::Zipf { exponent: exp.zipf_exponent }];
    let mut specs = Vec::new();
    let main = |kind, discipline, protocol_procs, keys, skew| RunSpec {
        sweep: Sweep::Main,
        kind,
        discipline,
        protocol_procs,
        keys,
        skew,
        home_u: exp.home_u,
        sequential_fraction: 0.0,
        think_cycles: 0.0,
        seed,
        effect_off: None,
    };
    for &kind in &grid.kinds {
        for &discipline in &grid.disciplines {
            for &k in &grid.protocol_procs {
                if !runs(kind, discipline, k) {
                    continue;
                }
                for &keys in &grid.keys {
                    for skew in skews {
                        specs.push(main(kind, discipline, k, keys, skew));
                    }
                }
            }
        }
    }
    let most = grid.most_keys();
    for &u in &grid.mult_home_u {
        let mut s = main(Kind::Mult, Discipline::Pdq, grid.mult_sweep_procs, most, KeySkew::Uniform);
        s.sweep = Sweep::MultHomeU;
        s.home_u = u;
        s.think_cycles = grid.mult_think_cycles;
        specs.push(s);
    }
    for &f in &grid.sequential_fractions {
        let mut s = main(Kind::Embedded, Discipline::Pdq, 4, most, KeySkew::Uniform);
        s.sweep = Sweep::Sequential;
        s.sequential_fraction = f;
        specs.push(s);
    }
    if grid.affinity_passes > 0 {
        // The main sweep's PDQ points on dedicated processors, again.
        let again: Vec<RunSpec> = specs
            .iter()
            .filter(|s| s.sweep == Sweep::Main && s.discipline == Discipline::Pdq && s.kind != Kind::Mult)
            .map(|s| RunSpec { sweep: Sweep::Affinity, ..s.clone() })
            .collect();
        specs.extend(again);
    }
    for &effect in &grid.sensitivity {
        for kind in [Kind::Embedded, Kind::Smp].into_iter().filter(|k| grid.kinds.contains(k)) {
            for k in [1, 4] {
                let mut s = main(kind, Discipline::Pdq, k, most, KeySkew::Uniform);
                s.sweep = Sweep::Sensitivity;
                s.effect_off = Some(effect);
                specs.push(s);
            }
        }
    }
    specs
}

/// The fetch&add workload of one planned run.
fn run_workload(exp: &Experiment, grid: &Grid, s: &RunSpec) -> FetchAddConfig {
    FetchAddConfig {
        think_cycles: s.think_cycles,
        keys: s.keys,
        skew: s.skew,
        handler_cycles: exp.handler_cycles,
        sequential_fraction: s.sequential_fraction,
        requests_per_thread: grid.requests_per_thread,
        home_u: s.home_u,
        home_burst_cycles: exp.home_burst_cycles,
    }
}

fn sim_config(exp: &Experiment, machine: &MachineConfig, s: &RunSpec) -> SimConfig {
    let point = Point { kind: s.kind, discipline: s.discipline, protocol_procs: s.protocol_procs };
    point.sim_config(machine, exp.requester_nodes, exp.compute_procs, s.seed)
}

/// Who serves the home's handlers, and how: one point of the study.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub kind: Kind,
    pub discipline: Discipline,
    pub protocol_procs: u32,
}

impl Point {
    /// A one-line error unless the discipline runs with this kind and
    /// processor count.
    pub fn check(&self) -> Result<()> {
        if self.protocol_procs == 0 {
            bail!("invalid protocol_procs = 0: allowed 1 or more");
        }
        if !runs(self.kind, self.discipline, self.protocol_procs) {
            bail!(
                "invalid discipline = {} with {} x {}: serial runs with 1 protocol processor, static with embedded or smp ones",
                self.discipline.label(),
                self.protocol_procs,
                self.kind.label()
            );
        }
        Ok(())
    }

    /// The simulated machine: a home node and `requester_nodes` others,
    /// each with `compute_procs` compute processors. Embedded and SMP
    /// protocol processors are added to them (Fixed); Mult serves on them
    /// (Floating).
    pub fn sim_config(
        &self,
        machine: &MachineConfig,
        requester_nodes: u32,
        compute_procs: u32,
        seed: u64,
    ) -> SimConfig {
        let k = self.protocol_procs;
        let (policy, ppn, pp_kind, max_servers) = match self.kind {
            Kind::Embedded => (Policy::Fixed { protocol_procs: k }, compute_procs + k, PpKind::Embedded, None),
            Kind::Smp => (Policy::Fixed { protocol_procs: k }, compute_procs + k, PpKind::Smp, None),
            Kind::Mult => (Policy::Floating, compute_procs, PpKind::Smp, self.discipline.parallel().then_some(k)),
        };
        let topology = Topology { nodes: requester_nodes + 1, procs_per_node: ppn };
        let mut cfg = SimConfig::new(machine.clone(), topology, policy, seed);
        cfg.dispatch = Dispatch { discipline: self.discipline, pp_kind, max_servers };
        cfg
    }

    /// The point a configuration runs (the inverse of [`Point::sim_config`]),
    /// or None if no point makes it.
    pub fn of_config(cfg: &SimConfig) -> Option<Point> {
        let d = cfg.dispatch;
        let (kind, protocol_procs) = match (cfg.policy, d.pp_kind) {
            (Policy::Fixed { protocol_procs }, PpKind::Embedded) => (Kind::Embedded, protocol_procs),
            (Policy::Fixed { protocol_procs }, PpKind::Smp) => (Kind::Smp, protocol_procs),
            (Policy::Floating, PpKind::Smp) => (Kind::Mult, d.max_servers.unwrap_or(1)),
            _ => return None,
        };
        Some(Point { kind, discipline: d.discipline, protocol_procs })
    }
}

fn run_one(exp: &Experiment, machine: &MachineConfig, grid: &Grid, s: &RunSpec) -> Result<RunRecord> {
    let mut machine = machine.clone();
    if let Some(e) = s.effect_off {
        e.apply(&mut machine);
    }
    if s.sweep == Sweep::Affinity {
        if let Some(pdq) = machine.pdq.as_mut() {
            pdq.affinity_passes = grid.affinity_passes;
        }
    }
    let machine = &machine;
    let config = sim_config(exp, machine, s);
    let work = run_workload(exp, grid, s);
    let t0 = Instant::now();
    let out = fetch_add::simulate(&config, &work).with_context(|| format!("run {}", s.id()))?;
    let wall = t0.elapsed().as_secs_f64();
    Ok(RunRecord {
        experiment: exp.name.clone(),
        id: s.id(),
        sweep: s.sweep,
        kind: s.kind,
        discipline: s.discipline,
        protocol_procs: s.protocol_procs,
        keys: s.keys,
        skew: s.skew.label(),
        target_home_u: s.home_u,
        sequential_fraction: s.sequential_fraction,
        think_cycles: s.think_cycles,
        seed: s.seed,
        effect_off: s.effect_off,
        home: fetch_add::home_measures(machine, &out),
        config,
        workload: work,
        stats: out.stats,
        wall_seconds: wall,
    })
}

const CSV_HEADER: &str = "discipline,pp_kind,protocol_procs,keys,skew,throughput_msgs_per_us,\
mean_queue_delay_cycles,p99_queue_delay_cycles,pp_busy_wait_fraction,seed,sweep,target_home_u,home_u,\
sequential_fraction,interrupts,interrupts_per_request,bus_transactions_per_request,mean_request_latency_cycles,\
requests,sim_cycles,events,wall_seconds,record,effect_off";

fn csv(records: &[RunRecord]) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in records {
        let h = &r.home;
        let sweep = serde_json::to_value(r.sweep).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{:.4},{:.1},{},{:.4},{},{},{},{:.4},{},{},{:.5},{:.3},{:.1},{},{},{},{:.3},runs/{}.json,{}",
            r.discipline.label(),
            r.kind.label(),
            r.protocol_procs,
            r.keys,
            r.skew,
            h.throughput_msgs_per_us,
            h.mean_queue_delay_cycles,
            h.p99_queue_delay_cycles,
            h.pp_busy_wait_fraction,
            r.seed,
            sweep,
            r.target_home_u,
            h.home_u,
            r.sequential_fraction,
            h.interrupts,
            h.interrupts as f64 / h.requests.max(1) as f64,
            h.bus_transactions_per_request,
            r.stats.request_latency.mean_cycles,
            h.requests,
            r.stats.sim_cycles,
            r.stats.events,
            r.wall_seconds,
            r.id,
            r.effect_off.map(|e| e.to_string()).unwrap_or_default()
        );
    }
    s
}
