//! The pdq-micro study: fetch&add handlers under serial dispatch, the
//! Parallel Dispatch Queue, spin-locks inside handlers and static
//! partitioning, on embedded, dedicated SMP and idle compute protocol
//! processors (Falsafi & Wood, HPCA 1999), with the verdicts on five
//! claims computed from the measured data.

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
use anyhow::{bail, Result};
use finegrain_apps::fetch_add::{self, FetchAddConfig, HomeMeasures, KeySkew};
use finegrain_apps::serving::{runs, Kind, Point};
use finegrain_apps::WorkloadSpec;
use finegrain_core::{Discipline, MachineConfig};
use finegrain_sim::mix_seed;
use serde::{Deserialize, Serialize};
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

/// The study, loaded: its experiment and the preset's machine.
pub struct PdqMicro {
    exp: Experiment,
    header: Header,
    quick: bool,
    machine: MachineConfig,
}

/// A finished run as the study views it: its record and the home node's
/// measures.
pub struct Run {
    pub record: RunRecord<RunLabels>,
    pub home: HomeMeasures,
}

impl PdqMicro {
    fn grid(&self) -> &Grid {
        if self.quick {
            &self.exp.quick
        } else {
            &self.exp.full
        }
    }
}

impl Study for PdqMicro {
    const NAME: &'static str = "pdq-micro";
    const EXPERIMENT: &'static str = include_str!("../../../../../experiments/pdq-micro.toml");
    type Labels = RunLabels;
    type Run = Run;

    fn load(src: &Source, quick: bool) -> Result<PdqMicro> {
        let exp = load(src)?;
        let header = crate::experiment::header(src)?;
        let machine = MachineConfig::load(&src.preset(&exp.preset))?;
        Ok(PdqMicro { exp, header, quick, machine })
    }

    fn header(&self) -> &Header {
        &self.header
    }

    fn plan(&self) -> Result<Vec<Planned<RunLabels>>> {
        let grid = self.grid();
        Ok(plan(&self.exp, grid).iter().map(|s| planned(&self.exp, &self.machine, grid, s)).collect())
    }

    fn view(&self, records: Vec<RunRecord<RunLabels>>) -> Vec<Run> {
        records
            .into_iter()
            .map(|record| Run { home: fetch_add::home_measures_of(&record.config.machine, &record.stats), record })
            .collect()
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
        report::sections(self.grid(), runs)
    }
}

impl Run {
    pub fn l(&self) -> &RunLabels {
        &self.record.labels
    }

    pub fn throughput(&self) -> f64 {
        self.home.throughput_msgs_per_us
    }

    /// Cycles the home's protocol processors spend per request, in handlers
    /// and spinning on key locks.
    pub fn pp_cycles_per_request(&self) -> f64 {
        let home = &self.record.stats.nodes[0];
        let spent: u64 = home.procs.iter().map(|p| p.cycles.handler + p.cycles.busy_wait).sum();
        spent as f64 / self.home.requests.max(1) as f64
    }

    /// Protocol state that moved cache to cache at the home, per request.
    pub fn migration_per_request(&self) -> f64 {
        let migration: u64 = self.record.stats.nodes[0].procs.iter().map(|p| p.misses.migration).sum();
        migration as f64 / self.home.requests.max(1) as f64
    }
}

fn load(src: &Source) -> Result<Experiment> {
    let mut e: Experiment = src.parse()?;
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
            planned(&e, &machine, grid, &s)
                .config
                .validate()
                .map_err(|err| anyhow::anyhow!("invalid experiment ({table} run {}): {err}", s.id()))?;
            run_workload(&e, grid, &s).validate(&machine, e.compute_procs).map_err(|err| match s.sweep.field() {
                Some(f) => anyhow::anyhow!("invalid {table}.{f} (run {}): {err}", s.id()),
                None => anyhow::anyhow!("invalid experiment ({table} run {}): {err}", s.id()),
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
    pub(crate) fn field(self) -> Option<&'static str> {
        match self {
            Sweep::Main | Sweep::Sensitivity | Sweep::Affinity => None,
            Sweep::MultHomeU => Some("mult_home_u"),
            Sweep::Sequential => Some("sequential_fractions"),
        }
    }
}

/// One planned run, typed.
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
    fn point(&self) -> Point {
        Point { kind: self.kind, discipline: self.discipline, protocol_procs: self.protocol_procs }
    }

    fn labels(&self) -> RunLabels {
        RunLabels {
            sweep: self.sweep,
            kind: self.kind,
            discipline: self.discipline,
            protocol_procs: self.protocol_procs,
            keys: self.keys,
            skew: self.skew.label(),
            target_home_u: self.home_u,
            sequential_fraction: self.sequential_fraction,
            think_cycles: self.think_cycles,
            seed: self.seed,
            effect_off: self.effect_off,
        }
    }

    fn id(&self) -> String {
        self.labels().id()
    }
}

/// A run's machine (the preset with its sensitivity run's effect off, or
/// with key affinity for the affinity sweep) and its workload.
fn planned(exp: &Experiment, machine: &MachineConfig, grid: &Grid, s: &RunSpec) -> Planned<RunLabels> {
    let mut machine = machine.clone();
    if let Some(e) = s.effect_off {
        e.apply(&mut machine);
    }
    if s.sweep == Sweep::Affinity {
        if let Some(pdq) = machine.pdq.as_mut() {
            pdq.affinity_passes = grid.affinity_passes;
        }
    }
    let config = s.point().sim_config(&machine, exp.requester_nodes, exp.compute_procs, s.seed);
    Planned { labels: s.labels(), config, workload: WorkloadSpec::FetchAdd(run_workload(exp, grid, s)) }
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

const CSV_HEADER: &str = "discipline,pp_kind,protocol_procs,keys,skew,throughput_msgs_per_us,\
mean_queue_delay_cycles,p99_queue_delay_cycles,pp_busy_wait_fraction,seed,sweep,target_home_u,home_u,\
sequential_fraction,interrupts,interrupts_per_request,bus_transactions_per_request,mean_request_latency_cycles,\
requests,sim_cycles,events,wall_seconds,record,effect_off";

fn csv_row(run: &Run) -> String {
    let (r, h, st) = (run.l(), &run.home, &run.record.stats);
    let sweep = serde_json::to_value(r.sweep).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    format!(
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
        st.request_latency.mean_cycles,
        h.requests,
        st.sim_cycles,
        st.events,
        run.record.wall.wall_seconds,
        run.record.id,
        r.effect_off.map(|e| e.to_string()).unwrap_or_default()
    )
}
