//! `finegrain run --workload dsm --program NAME`: one of the PDQ paper's
//! shared-memory applications over the fine-grain DSM, on the simulated
//! machine under one of the paper's systems or natively with protocol
//! threads serving the DSM's handlers, its answer checked against the
//! sequential reference.

use super::SimRun;
use crate::args::RunArgs;
use crate::say;
use anyhow::{bail, Result};
use finegrain_apps::dsm::spec::{DsmMeasures, DsmRun, DsmSpec, ProgramSpec, PROGRAMS};
use finegrain_apps::splitc::spec::Size;
use finegrain_apps::{Measures, RtPlatform, Threads, WorkloadSpec};
use finegrain_core::config::ServingSystem;
use finegrain_core::{MachineConfig, RunConfig};
use finegrain_dsm::DsmConfig;
use finegrain_sim::RunStats;
use finegrain_study::experiment::preset_shown;

const DEFAULT_NODES: u32 = 2;
const DEFAULT_COMPUTE_PROCS: u32 = 2;
const BLOCK_BYTES: [u32; 3] = [32, 64, 128];

/// The program the flags name, its input drawn from the run's seed.
fn program(a: &RunArgs) -> Result<ProgramSpec> {
    let Some(name) = a.program.as_deref() else {
        bail!("missing program for workload dsm: allowed {}", PROGRAMS.join(", "));
    };
    Ok(ProgramSpec::named(name, size(a)?, a.seed.unwrap_or(1))?)
}

fn size(a: &RunArgs) -> Result<Size> {
    Ok(Size::parse(a.size.as_deref().unwrap_or("tiny"))?)
}

fn block_bytes(a: &RunArgs) -> Result<u32> {
    let b = a.block_bytes.unwrap_or(64);
    if !BLOCK_BYTES.contains(&b) {
        bail!("invalid block_bytes = {b}: allowed 32, 64, 128");
    }
    Ok(b)
}

/// The systems with a native meaning: protocol threads of the node's own
/// (hurricane1) or its idle compute threads (mult).
const NATIVE_SYSTEMS: &str = "hurricane1-1pp, hurricane1-2pp, hurricane1-4pp, mult";

/// The system the flags ask for; natively only those a node's threads
/// can be.
fn system(a: &RunArgs, native: Option<&str>) -> Result<ServingSystem> {
    let default = if native.is_some() { "hurricane1-1pp" } else { "hurricane-1pp" };
    let system = ServingSystem::parse(a.system.as_deref().unwrap_or(default))?;
    if let Some(platform) = native {
        if matches!(system, ServingSystem::Scoma | ServingSystem::Hurricane { .. }) {
            bail!(
                "invalid system = {system} on platform {platform}: it is simulated only (no hardware protocol engine \
                 or network-interface processor here); allowed {NATIVE_SYSTEMS}"
            );
        }
    }
    Ok(system)
}

/// The run's shape the flags ask for under `system`, checked.
fn dsm_run(a: &RunArgs, system: ServingSystem) -> Result<DsmRun> {
    let compute = a.compute_procs.unwrap_or(DEFAULT_COMPUTE_PROCS);
    let most = 64 - system.protocol_procs();
    if !(1..=most).contains(&compute) {
        bail!("invalid compute_procs = {compute} with system {system}: allowed 1..={most} (64 processors per node)");
    }
    let nodes = a.nodes.unwrap_or(DEFAULT_NODES);
    let run = DsmRun { system, nodes, compute_procs: compute, block_bytes: block_bytes(a)?, seed: a.seed.unwrap_or(1) };
    run.run_config().validate()?;
    Ok(run)
}

/// The simulated run the flags ask for, checked.
pub fn build(a: &RunArgs) -> Result<SimRun> {
    let preset = a.preset.as_deref().unwrap_or("hpca99");
    let machine = MachineConfig::load(preset)?;
    let program = program(a)?;
    if machine.dsm.is_none() {
        bail!(
            "invalid preset = {preset} for workload dsm: it has no [dsm] section (the DSM handlers' instructions); \
             allowed a preset with one, such as hpca99"
        );
    }
    let system = system(a, None)?;
    let (config, spec) = dsm_run(a, system)?.simulated(&machine, program.label(), size(a)?)?;
    let workload = WorkloadSpec::Dsm(spec);
    workload.validate(&config)?;
    Ok(SimRun { config, workload, target_u: None, lmin: None })
}

/// The run's shape in one line.
fn describe(system: Option<ServingSystem>, run: &RunConfig, spec: &DsmSpec) -> String {
    let compute = run.policy.compute_procs(run.topology.procs_per_node);
    format!(
        "system {}  {} nodes x {} compute procs  block {} bytes  program {}  seed {}",
        system.map_or_else(|| "none".to_string(), |s| s.label()),
        run.topology.nodes,
        compute,
        spec.dsm.block_bytes,
        spec.program.label(),
        run.seed
    )
}

/// The phases and counts of a run, `unit` turning a time into words.
fn print_measures(m: &DsmMeasures, unit: impl Fn(u64) -> String) -> Result<()> {
    say!("input             {}", m.input);
    say!("answer            checked against the sequential reference");
    say!("run time          {}", unit(m.time));
    // The values in one column, past the longest name.
    let width = m.phase_max.keys().chain(m.count_sum.keys()).map(|k| k.len() + 1).max().unwrap_or(0).max(12);
    for (phase, &t) in &m.phase_max {
        say!("phase {phase:<width$}{} on the slowest thread", unit(t));
    }
    for (count, &n) in &m.count_sum {
        say!("count {count:<width$}{n}");
    }
    Ok(())
}

/// Prints what a simulated run measured.
pub fn print(a: &RunArgs, run: &SimRun, spec: &DsmSpec, stats: &RunStats, measures: Option<&Measures>) -> Result<()> {
    let c = &run.config;
    let Some(Measures::Dsm(m)) = measures else { bail!("a DSM run without its measures") };
    say!(
        "preset {}  {}",
        preset_shown(&c.machine.name, a.preset.as_deref()),
        describe(ServingSystem::of_run(&c.run), &c.run, spec)
    );
    let us = |cycles: u64| format!("{:.1} us ({cycles} cycles)", c.machine.cycles_to_us(cycles as f64));
    print_measures(m, us)?;
    say!(
        "messages          {} ({} one-way, {} replies to them)  handlers {}  interrupts {}",
        stats.messages,
        stats.one_way,
        stats.one_way_replies,
        stats.handlers,
        stats.interrupts
    );
    Ok(())
}

/// The program natively.
pub fn native(a: &RunArgs, on: RtPlatform<'_>) -> Result<()> {
    let rt = native_config(a, on.name())?;
    // Only threads of one process can keep the shadow copy; no native
    // transport promises the order of messages from different threads.
    let dsm = DsmConfig {
        block_bytes: block_bytes(a)?,
        check_coherence: matches!(on, RtPlatform::Native),
        ..DsmConfig::default()
    };
    let spec = DsmSpec { program: program(a)?, dsm };
    let threads =
        Threads { on, config: rt.clone(), machine: MachineConfig::load(a.preset.as_deref().unwrap_or("hpca99"))? };
    let (stats, m) = spec.run(&threads)?;
    if !on.has_results() {
        return Ok(());
    }
    say!("platform {}  {}", on.name(), describe(ServingSystem::of_run(&rt.run), &rt.run, &spec));
    print_measures(&m, |ns| format!("{:.1} us ({ns} ns)", ns as f64 / 1e3))?;
    say!("messages          {}  handlers {}  interrupts {}", stats.messages, stats.handlers, stats.interrupts);
    if std::thread::available_parallelism().map_or(1, |n| n.get())
        < (rt.run.topology.nodes * rt.run.topology.procs_per_node) as usize
    {
        crate::note(format_args!(
            "more threads than cores; the time measures correctness under oversubscription, not speed"
        ));
    }
    Ok(())
}

/// The native runtime's configuration the flags ask for, checked (with
/// the program and its DSM) before any node starts.
pub fn native_config(a: &RunArgs, platform: &str) -> Result<finegrain_rt::RtConfig> {
    if a.json.is_some() {
        bail!("invalid json with workload dsm on platform {platform}: records are written for simulated runs only");
    }
    let system = system(a, Some(platform))?;
    let run = dsm_run(a, system)?.run_config();
    let mut rt = finegrain_rt::RtConfig::of(run);
    super::apply_runtime_fields(a, &mut rt);
    rt.validate()?;
    let dsm = DsmConfig { block_bytes: block_bytes(a)?, ..DsmConfig::default() };
    DsmSpec { program: program(a)?, dsm }.validate(&rt.run)?;
    Ok(rt)
}
