//! Reading the experiment and planning the study's runs: the main grid,
//! the Mult, sequential, affinity and sensitivity sweeps, each run's
//! machine and workload, all checked before anything runs.

use super::grid::{check_requester_nodes, Experiment, Grid, Sweep};
use super::labels::RunLabels;
use crate::experiment::{check_sensitivity_on, shown, EffectOff, Source, MAX_CYCLES};
use crate::record::Labels as _;
use crate::study::Planned;
use anyhow::{bail, Result};
use finegrain_apps::fetch_add::{self, FetchAddConfig, KeySkew};
use finegrain_apps::serving::{runs, Point};
use finegrain_apps::WorkloadSpec;
use finegrain_core::{Discipline, MachineConfig, ServingKind};
use finegrain_sim::mix_seed;

/// Checks the experiment (its fields, both grids' fields, the preset) and
/// plans the grid that runs, every run checked before any runs; returns
/// the experiment with its grids' lists in order, and the runs.
pub(super) fn load(mut e: Experiment, src: &Source) -> Result<(Experiment, Vec<Planned<RunLabels>>)> {
    check_requester_nodes(e.own.requester_nodes)?;
    if e.own.compute_procs == 0 || e.own.compute_procs > 32 {
        bail!("invalid compute_procs = {}: allowed 1..=32", e.own.compute_procs);
    }
    if e.own.handler_cycles > MAX_CYCLES {
        bail!("invalid handler_cycles = {}: allowed 0..={MAX_CYCLES} cycles", e.own.handler_cycles);
    }
    if !(e.own.home_burst_cycles.is_finite() && (1.0..=MAX_CYCLES as f64).contains(&e.own.home_burst_cycles)) {
        bail!(
            "invalid home_burst_cycles = {}: allowed a number in 1..={MAX_CYCLES} cycles",
            shown(e.own.home_burst_cycles)
        );
    }
    // Run ids name the skew by its exponent, written out in full.
    fetch_add::check_zipf_exponent("zipf_exponent", e.own.zipf_exponent)?;
    e.full.validate("full", e.own.compute_procs)?;
    e.quick.validate("quick", e.own.compute_procs)?;
    let machine = MachineConfig::load(&src.preset(&e.header.preset))?;
    if machine.pdq.is_none() {
        bail!(
            "invalid preset = {}: the study needs a machine with a [pdq] section (for example hpca99)",
            e.header.preset
        );
    }
    for (table, grid) in [("full", &e.full), ("quick", &e.quick)] {
        check_sensitivity_on(&format!("{table}.sensitivity"), &grid.sensitivity, &machine, &e.header.preset)?;
        let passes = grid.affinity_passes;
        if passes > 0 && machine.pdq.as_ref().is_some_and(|p| p.affinity_passes > 0) {
            bail!(
                "invalid {table}.affinity_passes = {passes}: preset {} has key affinity on already \
                 (pdq.affinity_passes > 0), so its reruns would repeat the main runs; allowed 0 with it, or a preset \
                 with pdq.affinity_passes = 0",
                e.header.preset
            );
        }
    }
    let capacity = fetch_add::key_capacity(&machine, e.own.compute_procs);
    for (table, grid) in [("full", &e.full), ("quick", &e.quick)] {
        if let Some(keys) = grid.keys.iter().find(|&&keys| keys == 0 || keys > capacity) {
            bail!(
                "invalid {table}.keys = {keys}: allowed 1..={capacity} (one protocol block per word in the home's \
                 protocol table)"
            );
        }
    }
    // The claims read throughput, busy-wait and queue delay along processor
    // and key counts from the smallest up (and sort their own copies too).
    for grid in [&mut e.full, &mut e.quick] {
        grid.protocol_procs.sort();
        grid.keys.sort();
    }
    // Every workload point must be valid before hours are spent on others.
    let (table, grid) = (e.mode.table(), e.grid());
    let mut runs = Vec::new();
    for s in plan(&e, grid) {
        // The machine too (its caches must fit in host memory), before
        // the output directory is made.
        let p = planned(&e, &machine, grid, &s);
        p.config.validate().map_err(|err| anyhow::anyhow!("invalid experiment ({table} run {}): {err}", s.id()))?;
        run_workload(&e, grid, &s).validate(&machine, e.own.compute_procs).map_err(|err| match s.sweep.field() {
            Some(f) => anyhow::anyhow!("invalid {table}.{f} (run {}): {err}", s.id()),
            None => anyhow::anyhow!("invalid experiment ({table} run {}): {err}", s.id()),
        })?;
        runs.push(p);
    }
    Ok((e, runs))
}

/// One planned run, typed.
#[derive(Clone, Debug)]
struct RunSpec {
    sweep: Sweep,
    kind: ServingKind,
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
    let config = s.point().sim_config(&machine, exp.own.requester_nodes, exp.own.compute_procs, s.seed);
    Planned { labels: s.labels(), config, workload: WorkloadSpec::FetchAdd(run_workload(exp, grid, s)) }
}

fn plan(exp: &Experiment, grid: &Grid) -> Vec<RunSpec> {
    // One seed for every run (common random numbers): the requesters draw
    // the same words in every configuration, so differences between
    // configurations are not blurred by sampling noise.
    let seed = mix_seed(exp.header.seed, 0, 0x9d9);
    let skews = [KeySkew::Uniform, KeySkew::Zipf { exponent: exp.own.zipf_exponent }];
    let mut specs = Vec::new();
    let main = |kind, discipline, protocol_procs, keys, skew| RunSpec {
        sweep: Sweep::Main,
        kind,
        discipline,
        protocol_procs,
        keys,
        skew,
        home_u: exp.own.home_u,
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
        let mut s = main(ServingKind::Mult, Discipline::Pdq, grid.mult_sweep_procs, most, KeySkew::Uniform);
        s.sweep = Sweep::MultHomeU;
        s.home_u = u;
        s.think_cycles = grid.mult_think_cycles;
        specs.push(s);
    }
    for &f in &grid.sequential_fractions {
        let mut s = main(ServingKind::Embedded, Discipline::Pdq, 4, most, KeySkew::Uniform);
        s.sweep = Sweep::Sequential;
        s.sequential_fraction = f;
        specs.push(s);
    }
    for kind in [ServingKind::Embedded, ServingKind::Smp] {
        for &k in &grid.protocol_procs {
            let mut s = main(kind, Discipline::Pdq, k, most, KeySkew::Uniform);
            s.sweep = Sweep::Load;
            s.think_cycles = grid.load_think_cycles;
            specs.push(s);
        }
    }
    if grid.affinity_passes > 0 {
        // The main sweep's PDQ points on dedicated processors, again.
        let again: Vec<RunSpec> = specs
            .iter()
            .filter(|s| s.sweep == Sweep::Main && s.discipline == Discipline::Pdq && s.kind != ServingKind::Mult)
            .map(|s| RunSpec { sweep: Sweep::Affinity, ..s.clone() })
            .collect();
        specs.extend(again);
    }
    for &effect in &grid.sensitivity {
        for kind in [ServingKind::Embedded, ServingKind::Smp].into_iter().filter(|k| grid.kinds.contains(k)) {
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
        handler_cycles: exp.own.handler_cycles,
        sequential_fraction: s.sequential_fraction,
        requests_per_thread: grid.requests_per_thread,
        home_u: s.home_u,
        home_burst_cycles: exp.own.home_burst_cycles,
    }
}
