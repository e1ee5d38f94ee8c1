//! `finegrain run --workload splitc --program NAME`: one of the
//! co-processor paper's Split-C programs (or a primitive's timing run) on
//! the simulated machine or natively, its answer checked against the
//! sequential reference.

use super::SimRun;
use crate::args::RunArgs;
use crate::say;
use anyhow::{bail, Result};
use finegrain_apps::splitc::spec::{program_names, ProgramSpec, Size};
use finegrain_apps::{Measures, RtPlatform, Threads, WorkloadSpec};
use finegrain_core::{MachineConfig, Policy, Topology};
use finegrain_sim::{RunStats, SimConfig};
use finegrain_study::experiment::preset_shown;

/// The paper's machine: 16 nodes (IPPS 1996 Section 5.3).
const DEFAULT_NODES: u32 = 16;

/// The program the flags name, at the size they ask for.
fn program(a: &RunArgs) -> Result<ProgramSpec> {
    let Some(name) = a.program.as_deref() else {
        bail!("missing program for workload splitc: allowed {}", program_names());
    };
    let size = Size::parse(a.size.as_deref().unwrap_or("quick"))?;
    Ok(ProgramSpec::named(name, size)?)
}

/// Split-C runs one thread per node.
fn topology(a: &RunArgs) -> Result<Topology> {
    if let Some(p) = a.procs_per_node.filter(|&p| p != 1) {
        bail!("invalid procs_per_node = {p} for workload splitc: allowed 1 (Split-C runs one thread per node)");
    }
    Ok(Topology { nodes: a.nodes.unwrap_or(DEFAULT_NODES), procs_per_node: 1 })
}

/// The simulated run the flags ask for, checked.
pub fn build(a: &RunArgs) -> Result<SimRun> {
    let machine = MachineConfig::load(a.preset.as_deref().unwrap_or("ipps96"))?;
    let policy = Policy::parse(a.policy.as_deref().unwrap_or("coprocessor:main-am"))?;
    let config = SimConfig::new(machine, topology(a)?, policy, a.seed.unwrap_or(1));
    let workload = WorkloadSpec::Splitc(program(a)?);
    workload.validate(&config)?;
    Ok(SimRun { config, workload, target_u: None, lmin: None })
}

/// Prints what a simulated run measured.
pub fn print(
    a: &RunArgs,
    run: &SimRun,
    spec: &ProgramSpec,
    stats: &RunStats,
    measures: Option<&Measures>,
) -> Result<()> {
    let c = &run.config;
    let Some(Measures::Program(m)) = measures else { bail!("a Split-C run without its measures") };
    say!(
        "preset {}  policy {}  {} nodes  program {}  seed {}",
        preset_shown(&c.machine.name, a.preset.as_deref()),
        c.run.policy.label(),
        c.run.topology.nodes,
        spec.label(),
        c.run.seed
    );
    say!("input             {}", m.input);
    say!("answer            checked against the sequential reference");
    let us = |cycles: u64| c.machine.cycles_to_us(cycles as f64);
    say!("run time          {:.1} us ({} cycles)", us(m.time), m.time);
    for (phase, &t) in &m.phase_max {
        say!("phase {phase:<12}{:.1} us on the slowest node", us(t));
    }
    for (count, &n) in &m.count_sum {
        say!("count {count:<12}{n}");
    }
    say!("messages          {} requests, {} replies", stats.requests, stats.replies);
    Ok(())
}

/// The program natively.
pub fn native(a: &RunArgs, on: RtPlatform<'_>) -> Result<()> {
    let spec = program(a)?;
    let rt = native_config(a)?;
    let threads =
        Threads { on, config: rt.clone(), machine: MachineConfig::load(a.preset.as_deref().unwrap_or("ipps96"))? };
    let (stats, m) = spec.run(&threads)?;
    if !on.has_results() {
        return Ok(());
    }
    say!(
        "platform {}  policy {}  {} nodes  program {}  seed {}",
        on.name(),
        rt.run.policy.label(),
        rt.run.topology.nodes,
        spec.label(),
        rt.run.seed
    );
    say!("input             {}", m.input);
    say!("answer            checked against the sequential reference");
    say!("run time          {:.1} us", m.time as f64 / 1e3);
    for (phase, &t) in &m.phase_max {
        say!("phase {phase:<12}{:.1} us on the slowest node", t as f64 / 1e3);
    }
    for (count, &n) in &m.count_sum {
        say!("count {count:<12}{n}");
    }
    say!("messages          {}", stats.messages);
    Ok(())
}

/// The native runtime's configuration the flags ask for.
pub fn native_config(a: &RunArgs) -> Result<finegrain_rt::RtConfig> {
    let policy = Policy::parse(a.policy.as_deref().unwrap_or("single"))?;
    let mut rt = finegrain_rt::RtConfig::new(topology(a)?, policy);
    rt.run.seed = a.seed.unwrap_or(1);
    super::apply_runtime_fields(a, &mut rt);
    rt.validate()?;
    program(a)?.validate(rt.run.topology.nodes)?;
    Ok(rt)
}
