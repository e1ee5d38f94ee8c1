//! The pdq-micro study: fetch&add handlers under serial dispatch, the
//! Parallel Dispatch Queue, spin-locks inside handlers and static
//! partitioning, on embedded, dedicated SMP and idle compute protocol
//! processors, with the verdicts on the five claims of issue 4
//! (spec/pdq.md) computed from the measured data.

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
}

impl Sweep {
    /// The grid field whose values make this sweep's runs (the main grid's
    /// runs take the experiment's own workload fields).
    fn field(self) -> Option<&'static str> {
        match self {
            Sweep::Main | Sweep::Sensitivity => None,
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

/// Lookups into the main sweep.
struct View<'a> {
    records: &'a [RunRecord],
}

impl View<'_> {
    fn get(&self, kind: Kind, d: Discipline, k: u32, keys: u64, skew: &str) -> Option<&RunRecord> {
        self.records.iter().find(|r| {
            r.sweep == Sweep::Main
                && r.kind == kind
                && r.discipline == d
                && r.protocol_procs == k
                && r.keys == keys
                && r.skew == skew
        })
    }

    fn tput(&self, kind: Kind, d: Discipline, k: u32, keys: u64, skew: &str) -> Option<f64> {
        self.get(kind, d, k, keys, skew).map(RunRecord::throughput)
    }

    fn busy_wait(&self, kind: Kind, d: Discipline, k: u32, keys: u64, skew: &str) -> Option<f64> {
        self.get(kind, d, k, keys, skew).map(|r| r.home.pp_busy_wait_fraction)
    }

    fn sweep(&self, sweep: Sweep) -> Vec<&RunRecord> {
        self.records.iter().filter(|r| r.sweep == sweep).collect()
    }
}

fn f2(x: f64) -> String {
    format!("{x:.2}")
}

const UNIFORM: &str = "uniform";

fn skewed(records: &[RunRecord]) -> String {
    records.iter().map(|r| r.skew.clone()).find(|s| s != UNIFORM).unwrap_or_else(|| "zipf".into())
}

pub fn evaluate(grid: &Grid, records: &[RunRecord]) -> Vec<Verdict> {
    let v = View { records };
    let zipf = skewed(records);
    vec![claim1(&v, grid), claim2(&v, grid), claim3(&v, grid, &zipf), claim4(&v, grid, &zipf), claim5(&v, grid)]
}

/// Many distinct keys: PDQ on embedded processors scales nearly linearly,
/// at least 3.5x from 1 to 4.
fn claim1(v: &View, grid: &Grid) -> Verdict {
    let keys = grid.most_keys();
    let t = |k| v.tput(Kind::Embedded, Discipline::Pdq, k, keys, UNIFORM);
    let (Some(t1), Some(t4)) = (t(1), t(4)) else {
        return Verdict::from_checks(1, &[Check::missing("embedded PDQ at 1 and 4 processors")]);
    };
    let series: Vec<String> =
        grid.protocol_procs.iter().filter_map(|&k| t(k).map(|x| format!("{k}: {} ({}x)", f2(x), f2(x / t1)))).collect();
    let mut checks = vec![Check::new(
        t4 / t1 >= 3.5,
        format!(
            "embedded PDQ, {keys} uniform keys, msgs/us by protocol processors {}: 1->4 gives {}x (need >= 3.5)",
            series.join(", "),
            f2(t4 / t1)
        ),
    )];
    // "Until the requesters saturate": every step up the grid stays within
    // 90% of linear, unless requests no longer queue for a processor (the
    // mean queue delay is below one handler's occupancy), in which case the
    // requesters are the limit.
    let mut counts = grid.protocol_procs.clone();
    counts.sort_unstable();
    for w in counts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let at = |k| v.get(Kind::Embedded, Discipline::Pdq, k, keys, UNIFORM);
        let (Some(ra), Some(rb)) = (at(a), at(b)) else {
            checks.push(Check::missing(&format!("embedded PDQ at {a} and {b} processors")));
            continue;
        };
        let (gain, linear) = (rb.throughput() / ra.throughput(), b as f64 / a as f64);
        let (delay, occupancy) = (rb.home.mean_queue_delay_cycles, rb.pp_cycles_per_request());
        checks.push(Check::new(
            gain >= 0.9 * linear || delay < occupancy,
            format!(
                "{a}->{b} gives {}x of {}x (need >= 90% of linear, or saturated requesters: a queue delay below one \
                 handler's occupancy; here {delay:.0} and {occupancy:.0} cycles)",
                f2(gain),
                f2(linear)
            ),
        ));
    }
    Verdict::from_checks(1, &checks)
}

/// One key: PDQ behaves like serial dispatch (within 10%), and PDQ never
/// busy-waits.
fn claim2(v: &View, grid: &Grid) -> Verdict {
    let mut checks = Vec::new();
    for &kind in &grid.kinds {
        let Some(serial) = v.tput(kind, Discipline::Serial, 1, 1, UNIFORM) else {
            checks.push(Check::missing(&format!("{} serial with one key", kind.label())));
            continue;
        };
        let ratios: Vec<f64> = grid
            .protocol_procs
            .iter()
            .filter_map(|&k| v.tput(kind, Discipline::Pdq, k, 1, UNIFORM))
            .map(|t| t / serial)
            .collect();
        if ratios.is_empty() {
            checks.push(Check::missing(&format!("{} PDQ with one key", kind.label())));
            continue;
        }
        let worst = ratios.iter().map(|r| (r - 1.0).abs()).fold(0.0, f64::max);
        checks.push(Check::new(
            worst <= 0.10,
            format!(
                "{}: PDQ/serial with 1 key at {} processors = {}",
                kind.label(),
                grid.protocol_procs.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
                ratios.iter().map(|&r| f2(r)).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    // PDQ holds an entry whose key is busy in the queue, so no handler waits
    // for another on a processor: in this model PDQ cannot busy-wait at all
    // (only the spin-lock discipline charges waiting). What the data can
    // show is that PDQ's processors spend no more time per request than
    // serial's one: none goes to waiting, nor to moving the key's state
    // between them.
    for &kind in &grid.kinds {
        let Some(serial) = v.get(kind, Discipline::Serial, 1, 1, UNIFORM) else { continue };
        let costs: Vec<f64> = grid
            .protocol_procs
            .iter()
            .filter_map(|&k| v.get(kind, Discipline::Pdq, k, 1, UNIFORM))
            .map(RunRecord::pp_cycles_per_request)
            .collect();
        let Some(most) = costs.iter().copied().reduce(f64::max) else { continue };
        let base = serial.pp_cycles_per_request();
        checks.push(Check::new(
            most <= base * 1.02,
            format!(
                "{}: PP cycles per request with 1 key {} under PDQ vs {base:.0} serial (need <= 1.02x: no added time)",
                kind.label(),
                costs.iter().map(|c| format!("{c:.0}")).collect::<Vec<_>>().join("/")
            ),
        ));
    }
    Verdict::from_checks(2, &checks)
}

/// Spin-locks lose to PDQ at every count above one, and spin more the
/// more contention (fewer keys, more processors).
fn claim3(v: &View, grid: &Grid, zipf: &str) -> Verdict {
    let mut checks = Vec::new();
    let mut worse = 0;
    let mut total = 0;
    let mut worst: Option<(f64, String)> = None;
    let mut missing = Vec::new();
    for &kind in &grid.kinds {
        for &k in grid.protocol_procs.iter().filter(|&&k| k > 1) {
            for &keys in &grid.keys {
                for skew in [UNIFORM, zipf] {
                    let (Some(s), Some(p)) = (
                        v.tput(kind, Discipline::SpinLock, k, keys, skew),
                        v.tput(kind, Discipline::Pdq, k, keys, skew),
                    ) else {
                        missing.push(format!("{} k={k} keys={keys} {skew}", kind.label()));
                        continue;
                    };
                    total += 1;
                    worse += usize::from(s < p);
                    let r = s / p;
                    if worst.as_ref().is_none_or(|(w, _)| r > *w) {
                        worst = Some((r, format!("{} k={k} keys={keys} {skew}", kind.label())));
                    }
                }
            }
        }
    }
    if !missing.is_empty() {
        checks.push(Check::missing(&format!("spin-lock and PDQ at {}", missing.join(", "))));
    }
    match worst {
        Some((wr, wat)) => checks.push(Check::new(
            worse == total,
            format!(
                "spin-lock below PDQ in {worse} of {total} configurations with 2+ processors (closest: {} at {wat})",
                f2(wr)
            ),
        )),
        None => checks.push(Check::missing("spin-lock and PDQ at 2+ processors")),
    }
    // Contention: fewer keys at a fixed count, more processors at one key.
    for &kind in &grid.kinds {
        let k = 4;
        let bw: Vec<Option<f64>> =
            grid.keys.iter().map(|&keys| v.busy_wait(kind, Discipline::SpinLock, k, keys, UNIFORM)).collect();
        let vals: Vec<f64> = bw.iter().flatten().copied().collect();
        if vals.len() == grid.keys.len() {
            let falls = vals.windows(2).all(|w| w[0] >= w[1]) && vals[0] > *vals.last().unwrap_or(&0.0);
            checks.push(Check::new(
                falls,
                format!(
                    "{} busy-wait at {k} processors by keys {}: {}",
                    kind.label(),
                    slashed(&grid.keys),
                    slashed(vals.iter().map(|&x| f2(x)))
                ),
            ));
        } else {
            checks.push(Check::missing(&format!("{} spin-lock at {k} processors for every key count", kind.label())));
        }
        let by_k: Vec<f64> = grid
            .protocol_procs
            .iter()
            .filter_map(|&k| v.busy_wait(kind, Discipline::SpinLock, k, 1, UNIFORM))
            .collect();
        if by_k.len() == grid.protocol_procs.len() {
            let grows = by_k.windows(2).all(|w| w[1] >= w[0]) && by_k[by_k.len() - 1] > by_k[0];
            checks.push(Check::new(
                grows,
                format!(
                    "{} busy-wait with 1 key by processors {}: {}",
                    kind.label(),
                    slashed(&grid.protocol_procs),
                    slashed(by_k.iter().map(|&x| f2(x)))
                ),
            ));
        } else {
            checks.push(Check::missing(&format!("{} spin-lock with 1 key at every processor count", kind.label())));
        }
    }
    Verdict::from_checks(3, &checks)
}

/// A series as a verdict shows it: `a/b/c`.
fn slashed<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    items.into_iter().map(|x| x.to_string()).collect::<Vec<_>>().join("/")
}

/// Static partitioning: close to PDQ under uniform keys (mean static/PDQ at
/// least 0.90) and clearly behind under skewed keys: the skew costs static at
/// least 0.10 more of PDQ's throughput than uniform keys do. Comparing the
/// two skews isolates load imbalance from what favours or hurts static under
/// both (cache affinity of a key to one SMP processor). Points: the
/// dedicated kinds at 2 and 4 processors (the paper's parallel counts),
/// every key count above the processor count.
fn claim4(v: &View, grid: &Grid, zipf: &str) -> Verdict {
    let mut checks = Vec::new();
    // Each kind of dedicated protocol processor on its own: pooled, one
    // kind's points could carry the other's failure.
    for kind in [Kind::Embedded, Kind::Smp].into_iter().filter(|k| grid.kinds.contains(k)) {
        let (Some((uniform, u_text)), Some((skewed, z_text))) =
            (static_over_pdq(v, grid, kind, UNIFORM), static_over_pdq(v, grid, kind, zipf))
        else {
            checks.push(Check::missing(&format!("{} static and PDQ under {UNIFORM} and {zipf} keys", kind.label())));
            continue;
        };
        // Comes close: within 10% either way.
        checks.push(Check::new((0.9..=1.1).contains(&uniform), format!("{} {u_text} (need 0.90-1.10)", kind.label())));
        // Clearly behind PDQ, and by more than under uniform keys (so the
        // gap is load imbalance, not a difference both skews share).
        checks.push(Check::new(
            skewed <= 0.90 && skewed <= uniform - 0.10,
            format!("{} {z_text} (need <= 0.90 and <= uniform - 0.10 = {})", kind.label(), f2(uniform - 0.10)),
        ));
    }
    Verdict::from_checks(4, &checks)
}

/// Static partitioning's throughput over PDQ's for one kind and skew, at 2
/// and 4 processors and every key count above the processor count: the
/// mean, and its text.
fn static_over_pdq(v: &View, grid: &Grid, kind: Kind, skew: &str) -> Option<(f64, String)> {
    let mut ratios = Vec::new();
    for k in [2u32, 4].into_iter().filter(|k| grid.protocol_procs.contains(k)) {
        for &keys in grid.keys.iter().filter(|&&keys| keys > k as u64) {
            if let (Some(s), Some(p)) =
                (v.tput(kind, Discipline::Static, k, keys, skew), v.tput(kind, Discipline::Pdq, k, keys, skew))
            {
                ratios.push(s / p);
            }
        }
    }
    if ratios.is_empty() {
        return None;
    }
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let (lo, hi) = ratios.iter().fold((f64::MAX, f64::MIN), |(a, b), r| (a.min(*r), b.max(*r)));
    let text =
        format!("{skew}: static/PDQ mean {} over {} points (range {}..{})", f2(mean), ratios.len(), f2(lo), f2(hi));
    Some((mean, text))
}

/// SMP processors: lower throughput than embedded at equal counts, yet at
/// least the same relative gain from 1 to 4; Mult takes fewer interrupts as
/// the home's utilization falls.
fn claim5(v: &View, grid: &Grid) -> Verdict {
    let keys = grid.most_keys();
    let mut checks = Vec::new();
    let t = |kind, k| v.tput(kind, Discipline::Pdq, k, keys, UNIFORM);
    let pairs: Vec<(u32, f64, f64)> =
        grid.protocol_procs.iter().filter_map(|&k| Some((k, t(Kind::Smp, k)?, t(Kind::Embedded, k)?))).collect();
    if pairs.is_empty() {
        return Verdict::from_checks(5, &[Check::missing("smp and embedded PDQ at equal processor counts")]);
    }
    checks.push(Check::new(
        pairs.iter().all(|(_, s, e)| s < e),
        format!(
            "PDQ, {keys} uniform keys, smp/embedded msgs/us by processors: {}",
            pairs.iter().map(|(k, s, e)| format!("{k}: {}/{}", f2(*s), f2(*e))).collect::<Vec<_>>().join(", ")
        ),
    ));
    match (t(Kind::Smp, 1), t(Kind::Smp, 4), t(Kind::Embedded, 1), t(Kind::Embedded, 4)) {
        (Some(s1), Some(s4), Some(e1), Some(e4)) => checks.push(Check::new(
            s4 / s1 >= e4 / e1,
            format!("gain 1->4: smp {}x vs embedded {}x (need smp >= embedded)", f2(s4 / s1), f2(e4 / e1)),
        )),
        _ => checks.push(Check::missing("smp and embedded PDQ at 1 and 4 processors")),
    }
    let mut mult = v.sweep(Sweep::MultHomeU);
    mult.sort_by(|a, b| b.target_home_u.total_cmp(&a.target_home_u));
    let rate = |r: &RunRecord| r.home.interrupts as f64 / r.home.requests.max(1) as f64;
    let rates: Vec<f64> = mult.iter().map(|r| rate(r)).collect();
    if rates.len() < 2 {
        checks.push(Check::missing("mult at two or more home utilizations"));
        return Verdict::from_checks(5, &checks);
    }
    let falls = rates.windows(2).all(|w| w[1] <= w[0]) && rates[rates.len() - 1] < rates[0];
    checks.push(Check::new(
        falls,
        format!(
            "mult ({} servers) interrupts per request as the home's utilization falls {}: {}",
            grid.mult_sweep_procs,
            slashed(mult.iter().map(|r| format!("{:.2}", r.home.home_u))),
            slashed(rates.iter().map(|x| format!("{x:.4}")))
        ),
    ));
    Verdict::from_checks(5, &checks)
}

fn draw_figures(out: &Path, grid: &Grid, records: &[RunRecord]) -> Result<Vec<(String, String)>> {
    let v = View { records };
    let keys = grid.most_keys();
    let zipf = skewed(records);
    let mut figs = Vec::new();
    // Draws one chart into figures/<file> and lists it for the report.
    let mut draw = |file: &str, title: String, axes: (&str, &str), series: Vec<Series>| -> Result<()> {
        let name = format!("figures/{file}");
        let chart = Chart { title: &title, x_label: axes.0, y_label: axes.1, series, reference_y: None };
        line_chart(&out.join(&name), &chart)?;
        figs.push((name, title));
        Ok(())
    };
    const THROUGHPUT: (&str, &str) = ("protocol processors", "requests per us");
    let ks = |f: &dyn Fn(u32) -> Option<f64>| -> Vec<(f64, f64)> {
        grid.protocol_procs.iter().filter_map(|&k| f(k).map(|y| (k as f64, y))).collect()
    };
    for &kind in &grid.kinds {
        for (skew, tag) in [(UNIFORM, "uniform"), (zipf.as_str(), "skewed")] {
            let series = grid
                .disciplines
                .iter()
                .map(|&d| Series { name: d.label().into(), points: ks(&|k| v.tput(kind, d, k, keys, skew)) })
                .filter(|s| !s.points.is_empty())
                .collect();
            let title = format!("{}: fetch&add throughput, {keys} {skew} keys", kind.system());
            draw(&format!("throughput-{}-{tag}.svg", kind.label()), title, THROUGHPUT, series)?;
        }
    }
    let series = grid
        .keys
        .iter()
        .map(|&keys| Series {
            name: format!("{keys} keys"),
            points: ks(&|k| v.tput(Kind::Embedded, Discipline::Pdq, k, keys, UNIFORM)),
        })
        .collect();
    let title = "Hurricane (embedded) PDQ: throughput by distinct keys (uniform)".to_string();
    draw("pdq-keys-embedded.svg", title, THROUGHPUT, series)?;
    let series = grid
        .kinds
        .iter()
        .map(|&kind| Series {
            name: kind.label().into(),
            points: grid
                .keys
                .iter()
                .filter_map(|&keys| {
                    v.busy_wait(kind, Discipline::SpinLock, 4, keys, UNIFORM).map(|b| ((keys as f64).log2(), b))
                })
                .collect(),
        })
        .collect();
    let title = "Spin-locks at 4 protocol processors: busy-wait share by key count (uniform)".to_string();
    draw("spin-busy-wait.svg", title, ("log2(keys)", "busy-wait / protocol time"), series)?;
    let mut mult = v.sweep(Sweep::MultHomeU);
    mult.sort_by(|a, b| a.home.home_u.total_cmp(&b.home.home_u));
    let points: Vec<(f64, f64)> =
        mult.iter().map(|r| (r.home.home_u, r.home.interrupts as f64 / r.home.requests.max(1) as f64)).collect();
    if !points.is_empty() {
        let title = "Hurricane-1 Mult: interrupts per request by the home's compute utilization".to_string();
        let series = vec![Series { name: format!("PDQ, {} servers", grid.mult_sweep_procs), points }];
        draw("mult-interrupts.svg", title, ("home compute utilization (measured)", "interrupts per request"), series)?;
    }
    Ok(figs)
}

fn throughput_table(grid: &Grid, records: &[RunRecord]) -> String {
    let v = View { records };
    let zipf = skewed(records);
    let mut rows = Vec::new();
    for &kind in &grid.kinds {
        for &d in &grid.disciplines {
            for &keys in &grid.keys {
                for skew in [UNIFORM, zipf.as_str()] {
                    let mut row =
                        vec![kind.label().to_string(), d.label().to_string(), keys.to_string(), skew.to_string()];
                    let mut any = false;
                    for &k in &grid.protocol_procs {
                        match v.get(kind, d, k, keys, skew) {
                            Some(r) => {
                                any = true;
                                let bw = r.home.pp_busy_wait_fraction;
                                let spin = if bw > 0.0 { format!(" ({:.0}% spin)", bw * 100.0) } else { String::new() };
                                row.push(format!("{}{spin}", f2(r.throughput())));
                            }
                            None => row.push("-".into()),
                        }
                    }
                    if any {
                        rows.push(row);
                    }
                }
            }
        }
    }
    let mut header = vec!["kind".to_string(), "discipline".into(), "keys".into(), "skew".into()];
    header.extend(grid.protocol_procs.iter().map(|k| format!("{k} PP")));
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    markdown_table(&h, &rows)
}

/// Claim 5's SMP-scaling check on the sensitivity runs: one line per effect
/// switched off.
fn sensitivity_lines(grid: &Grid, records: &[RunRecord]) -> Vec<String> {
    let keys = grid.most_keys();
    grid.sensitivity
        .iter()
        .map(|&e| {
            let run = |kind: Kind, k: u32| {
                records.iter().find(|r| {
                    r.sweep == Sweep::Sensitivity
                        && r.effect_off == Some(e)
                        && r.kind == kind
                        && r.protocol_procs == k
                        && r.keys == keys
                })
            };
            let t = |kind, k| run(kind, k).map(RunRecord::throughput);
            match (t(Kind::Smp, 1), t(Kind::Smp, 4), t(Kind::Embedded, 1), t(Kind::Embedded, 4)) {
                (Some(s1), Some(s4), Some(e1), Some(e4)) => {
                    let migration = run(Kind::Smp, 4).map_or(0.0, RunRecord::migration_per_request);
                    let bus = run(Kind::Smp, 4).map_or(0.0, home_bus_utilization);
                    format!(
                        "- without {e}: gain 1->4 smp {}x vs embedded {}x ({}); smp/embedded msgs/us at 1: {}/{}, at 4: {}/{}; \
                         smp migration misses per request at 4: {migration:.2}; smp home bus utilization at 4 (busier \
                         phase): {bus:.2}",
                        f2(s4 / s1),
                        f2(e4 / e1),
                        if s4 / s1 >= e4 / e1 { "the scaling part would hold" } else { "still below embedded" },
                        f2(s1),
                        f2(e1),
                        f2(s4),
                        f2(e4)
                    )
                }
                _ => format!("- without {e}: missing smp or embedded PDQ runs at 1 and 4 processors"),
            }
        })
        .collect()
}

/// The share of the run (to the home's last handler) its bus, or the
/// busier of a split bus's phases, was busy.
fn home_bus_utilization(r: &RunRecord) -> f64 {
    let home = &r.stats.nodes[0];
    home.bus.bottleneck_busy_cycles() as f64 / home.last_handler_end.max(1) as f64
}

/// Per-request cost at the home for embedded and SMP processors: what
/// makes one kind scale differently from the other.
fn occupancy_table(grid: &Grid, records: &[RunRecord]) -> String {
    let v = View { records };
    let mut rows = Vec::new();
    for kind in [Kind::Embedded, Kind::Smp].into_iter().filter(|k| grid.kinds.contains(k)) {
        for &k in &grid.protocol_procs {
            let Some(r) = v.get(kind, Discipline::Pdq, k, grid.most_keys(), UNIFORM) else { continue };
            let home = &r.stats.nodes[0];
            rows.push(vec![
                kind.label().to_string(),
                k.to_string(),
                f2(r.throughput()),
                format!("{:.0}", r.pp_cycles_per_request()),
                format!("{:.1}", r.home.bus_transactions_per_request),
                format!("{:.2}", home_bus_utilization(r)),
                format!("{:.1}", home.bus.wait_cycles as f64 / home.bus.transactions.max(1) as f64),
                format!("{:.2}", r.migration_per_request()),
            ]);
        }
    }
    markdown_table(
        &[
            "kind",
            "PPs",
            "requests per us",
            "PP cycles per request",
            "bus transactions per request",
            "bus utilization (busier phase)",
            "bus wait per transaction",
            "migration misses per request",
        ],
        &rows,
    )
}

#[allow(clippy::too_many_arguments)]
fn render_report(
    exp: &Experiment,
    src: &Source,
    mode: &str,
    grid: &Grid,
    records: &[RunRecord],
    verdicts: &[Verdict],
    figures: &[(String, String)],
    started: Instant,
) -> String {
    let mut s = String::new();
    let quick_flag = if mode == "quick" { " --quick" } else { "" };
    let _ = writeln!(s, "# {} ({mode})\n", exp.title);
    let _ = writeln!(
        s,
        "Experiment `{}` ({}), spec `{}`, preset `{}`, base seed {}, {} runs. Home node 0, {} requester nodes x {} \
         threads sending back to back, handler cost {} cycles, home compute utilization {}, {} requests per \
         requester thread.\nRegenerate: `finegrain reproduce {}{quick_flag} --out DIR` (every run's full \
         configuration and seed is in `runs/<id>.json`).\n",
        exp.name,
        src.origin,
        exp.spec,
        exp.preset,
        exp.seed,
        records.len(),
        exp.requester_nodes,
        exp.compute_procs,
        exp.handler_cycles,
        exp.home_u,
        grid.requests_per_thread,
        src.arg
    );
    let _ = writeln!(s, "## Claims\n");
    for v in verdicts {
        let _ = writeln!(s, "{}\n", v.line());
    }
    let sensitivity = sensitivity_lines(grid, records);
    if !sensitivity.is_empty() {
        let _ = writeln!(
            s,
            "## Sensitivity of claim 5's SMP scaling\n\nSMP and embedded PDQ ({} uniform keys) at 1 and 4 protocol \
             processors, run again with one mechanism of the model switched off (an effect, or the split-transaction \
             bus: `split_bus` holds the bus for a transaction's whole occupancy), to show which decides the gain. \
             These runs (`runs/*-no-<mechanism>.json`, its name with dashes) are not used for the verdicts above.\n",
            grid.most_keys()
        );
        for line in sensitivity {
            let _ = writeln!(s, "{line}");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "## Throughput at the home (requests per us; spin-lock busy-wait share in brackets)\n");
    s += &throughput_table(grid, records);
    let v = View { records };
    let _ = writeln!(s, "\n## Hurricane-1 Mult by the home's compute utilization\n");
    let mut rows = Vec::new();
    for r in v.sweep(Sweep::MultHomeU) {
        rows.push(vec![
            format!("{:.2}", r.target_home_u),
            format!("{:.3}", r.home.home_u),
            r.home.interrupts.to_string(),
            format!("{:.4}", r.home.interrupts as f64 / r.home.requests.max(1) as f64),
            f2(r.throughput()),
        ]);
    }
    s += &markdown_table(&["target U", "measured U", "interrupts", "per request", "requests per us"], &rows);
    let _ = writeln!(s, "\n## PDQ with sequential requests (embedded, 4 processors)\n");
    let mut rows = Vec::new();
    for r in v.sweep(Sweep::Sequential) {
        rows.push(vec![
            format!("{}", r.sequential_fraction),
            f2(r.throughput()),
            format!("{:.0}", r.home.mean_queue_delay_cycles),
            r.home.p99_queue_delay_cycles.to_string(),
        ]);
    }
    s += &markdown_table(&["sequential share", "requests per us", "mean queue delay", "p99 queue delay"], &rows);
    let _ = writeln!(s, "\n## Where protocol-processor time goes (PDQ, {} uniform keys)\n", grid.most_keys());
    s += &occupancy_table(grid, records);
    let _ = writeln!(s, "\n## Figures\n");
    for (f, caption) in figures {
        let _ = writeln!(s, "- [{caption}]({f})");
    }
    let events: u64 = records.iter().map(|r| r.stats.events).sum();
    let messages: u64 = records.iter().map(|r| r.stats.messages).sum();
    let busy: f64 = records.iter().map(|r| r.wall_seconds).sum();
    let _ = writeln!(
        s,
        "\n## Simulator\n\n{} events and {} messages simulated in {:.1} s of simulation time on all cores \
         ({:.2} M events/s per core); whole study {:.1} s wall.",
        events,
        messages,
        busy,
        events as f64 / busy.max(1e-9) / 1e6,
        started.elapsed().as_secs_f64()
    );
    s
}
