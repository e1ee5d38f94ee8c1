//! `finegrain run --workload micro`: the scheduling microbenchmark, on the
//! simulated machine or on real threads.

use super::SimRun;
use crate::args::RunArgs;
use crate::say;
use anyhow::{bail, Result};
use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_apps::{RtPlatform, Sim, Threads, WorkloadSpec};
use finegrain_core::{MachineConfig, Policy, Relinquish, Topology};
use finegrain_sim::{RunStats, SimConfig};
use finegrain_study::experiment::preset_shown;
use finegrain_study::output::write_json;
use finegrain_study::record::Wall;
use serde::Serialize;

/// The simulated run the flags ask for, checked (Lmin measured if `--u`
/// asks for a utilization).
pub fn build(a: &RunArgs) -> Result<SimRun> {
    let mut machine = MachineConfig::load(a.preset.as_deref().unwrap_or("hpca97"))?;
    if let Some(o) = a.oint {
        if o > finegrain_core::config::MAX_CYCLES {
            bail!("invalid oint = {o}: allowed at most {} cycles", finegrain_core::config::MAX_CYCLES);
        }
        machine.interrupt.overhead_cycles = o;
    }
    let policy = Policy::parse(a.policy.as_deref().unwrap_or("fixed"))?;
    let topology = Topology { nodes: a.nodes.unwrap_or(2), procs_per_node: a.procs_per_node.unwrap_or(2) };
    let protocol = Protocol::parse(a.protocol.as_deref().unwrap_or("null"))?;
    let mut config = SimConfig::new(machine, topology, policy, a.seed.unwrap_or(1));
    if let Some(r) = &a.relinquish {
        config.run.relinquish = Relinquish::parse(r)?;
        relinquish_needs_floating(r, &policy)?;
    }
    micro::two_nodes_at_least(topology.nodes)?;
    config.validate()?;
    let (workload, lmin) =
        workload(a, protocol, "cycles", || Ok(micro::measure_lmin(&Sim(config.clone()), protocol)?))?;
    Ok(SimRun { config, workload: WorkloadSpec::Micro(workload), target_u: a.u, lmin })
}

/// Prints what a simulated run measured.
pub fn print(a: &RunArgs, run: &SimRun, w: &MicroConfig, s: &RunStats, wall: &Wall) -> Result<()> {
    let SimRun { config, target_u, lmin, .. } = run;
    let mhz = config.machine.processor.mhz as f64;
    say!(
        "preset {}  policy {} (relinquish {})  {} nodes x {} processors  protocol {}  seed {}",
        preset_shown(&config.machine.name, a.preset.as_deref()),
        config.run.policy.label(),
        config.run.relinquish.label(),
        config.run.topology.nodes,
        config.run.topology.procs_per_node,
        w.protocol,
        config.run.seed
    );
    // Everything else `run` was given, so the output alone regenerates it.
    say!(
        "oint {} cycles  mean compute {} cycles  requests per node {}",
        config.machine.interrupt.overhead_cycles,
        w.mean_compute_cycles,
        w.requests_per_node
    );
    if let (Some(l), Some(u)) = (lmin, target_u) {
        say!("Lmin {l:.1} cycles; U = {u} gives the mean compute above");
    }
    say!("simulated time   {} cycles ({:.1} us)", s.sim_cycles, s.sim_cycles as f64 / mhz);
    say!("measured U       {:.3}", s.measured_u);
    say!("requests         {}  (mean round trip {:.1} cycles)", s.requests, s.request_latency.mean_cycles);
    say!("interrupts       {}", s.interrupts);
    say!("PP occupancy     {:.3}", s.pp_occupancy);
    for (n, node) in s.nodes.iter().enumerate() {
        say!("bus (node {n})     {}", node.bus.summary(s.sim_cycles));
    }
    let c = &s.cycles;
    say!(
        "cycles (all processors): compute {} stall {} send {} wait {} handler {} interrupt {} role {} poll-idle {} hold {} idle {}",
        c.compute, c.stall, c.send, c.wait, c.handler, c.interrupt, c.role, c.poll_idle, c.hold, c.idle
    );
    let m = &s.misses;
    say!(
        "misses: interference {} migration {} protocol-refetch {} placement {}",
        m.interference,
        m.migration,
        m.protocol_refetch,
        m.placement
    );
    say!(
        "{} events, {} messages in {:.3} s ({:.0} messages/s)",
        s.events,
        s.messages,
        wall.wall_seconds,
        wall.messages_per_wall_second
    );
    Ok(())
}

/// A native run's record: what it ran on (the runtime's whole
/// configuration, seed included, and the preset's machine) and what it
/// measured. Real threads cannot be rerun to the same bytes, but the
/// record says how to run the same configuration again.
#[derive(Serialize)]
struct NativeRecord<'a> {
    platform: &'static str,
    workload_name: &'static str,
    policy: String,
    nodes: u32,
    procs_per_node: u32,
    relinquish: &'static str,
    seed: u64,
    preset: &'a str,
    config: &'a finegrain_rt::RtConfig,
    machine: &'a MachineConfig,
    workload: &'a MicroConfig,
    lmin_ns: Option<f64>,
    measured_u: f64,
    stats: &'a finegrain_rt::RtStats,
}

/// What a run on real threads runs with, checked.
pub struct NativeSetup {
    rt: finegrain_rt::RtConfig,
    machine: MachineConfig,
    protocol: Protocol,
    policy: Policy,
    topology: Topology,
    preset: String,
}

/// Checks what a run on real threads runs with, and builds it.
pub fn native_setup(a: &RunArgs, platform: &str) -> Result<NativeSetup> {
    if platform != "native" && a.u.is_some() {
        bail!(
            "invalid u with platform {platform}: each node process would measure its own Lmin and compute for a \
             different time; allowed --compute-cycles there"
        );
    }
    if a.oint.is_some() {
        bail!("invalid oint for platform native: the native interrupt cost is what the machine gives (see finegrain bench interrupt)");
    }
    let preset = a.preset.as_deref().unwrap_or("hpca97");
    let machine = MachineConfig::load(preset)?;
    let policy = Policy::parse(a.policy.as_deref().unwrap_or("fixed"))?;
    let topology = Topology { nodes: a.nodes.unwrap_or(2), procs_per_node: a.procs_per_node.unwrap_or(2) };
    let protocol = Protocol::parse(a.protocol.as_deref().unwrap_or("null"))?;
    let mut rt = finegrain_rt::RtConfig::new(topology, policy);
    if let Some(r) = &a.relinquish {
        rt.run.relinquish = Relinquish::parse(r)?;
        relinquish_needs_floating(r, &policy)?;
    }
    rt.run.seed = a.seed.unwrap_or(1);
    rt.segment_bytes = machine.segment_bytes() as usize;
    super::apply_runtime_fields(a, &mut rt);
    micro::two_nodes_at_least(topology.nodes)?;
    rt.validate()?;
    micro::segment_fits(rt.segment_bytes as u64, &machine)?;
    Ok(NativeSetup { rt, machine, protocol, policy, topology, preset: preset.to_string() })
}

/// The microbenchmark on real threads.
pub fn native(a: &RunArgs, on: RtPlatform<'_>) -> Result<()> {
    let NativeSetup { rt, machine, protocol, policy, topology, preset } = native_setup(a, on.name())?;
    let preset = preset.as_str();
    let threads = Threads { on, config: rt.clone(), machine: machine.clone() };
    let (workload, lmin) = workload(a, protocol, "ns", || Ok(micro::measure_lmin(&threads, protocol)?))?;
    let out = micro::run(&threads, &workload)?;
    if !on.has_results() {
        return Ok(());
    }
    let s = &out.stats;
    let compute: Vec<&finegrain_rt::ThreadTimes> = s.threads.iter().filter(|t| t.role == "compute").collect();
    let measured_u = compute.iter().map(|t| t.compute_ns as f64 / t.wall_ns.max(1) as f64).sum::<f64>()
        / compute.len().max(1) as f64;
    // The record first: output closed early must not lose it.
    if let Some(path) = &a.json {
        let rec = NativeRecord {
            platform: on.name(),
            workload_name: "micro",
            policy: policy.label(),
            nodes: topology.nodes,
            procs_per_node: topology.procs_per_node,
            relinquish: rt.run.relinquish.label(),
            seed: rt.run.seed,
            preset,
            config: &rt,
            machine: &machine,
            workload: &workload,
            lmin_ns: lmin,
            measured_u,
            stats: s,
        };
        write_json(path, &rec)?;
    }
    say!(
        "platform {}  preset {} (segment {} bytes, block {} bytes)  policy {} (relinquish {})  {} nodes x {} \
         threads  protocol {}  seed {}",
        on.name(),
        preset_shown(&machine.name, a.preset.as_deref()),
        machine.segment_bytes(),
        machine.protocol.block_bytes,
        policy.label(),
        rt.run.relinquish.label(),
        topology.nodes,
        topology.procs_per_node,
        protocol,
        rt.run.seed
    );
    say!("mean compute {} ns  requests per node {}", workload.mean_compute_cycles, workload.requests_per_node);
    if let (Some(l), Some(u)) = (lmin, a.u) {
        say!("Lmin {l:.0} ns (Fixed, idle cluster); U = {u} gives the mean compute above");
    }
    say!("wall time        {:.3} ms", s.wall_ns as f64 / 1e6);
    say!("measured U       {measured_u:.3}");
    say!(
        "requests         {}  messages {}  handlers {}  interrupts {}  spilled {}",
        s.requests,
        s.messages,
        s.handlers,
        s.interrupts,
        s.spilled
    );
    say!(
        "{:>5} {:>7} {:>9} {:>11} {:>11} {:>11} {:>11} {:>9} {:>10}",
        "node",
        "thread",
        "role",
        "compute ms",
        "handler ms",
        "interrupt ms",
        "other ms",
        "handlers",
        "interrupts"
    );
    for t in &s.threads {
        let ms = |ns: u64| ns as f64 / 1e6;
        say!(
            "{:>5} {:>7} {:>9} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>9} {:>10}",
            t.node,
            t.thread,
            t.role,
            ms(t.compute_ns),
            ms(t.handler_ns),
            ms(t.interrupt_ns),
            ms(t.other_ns),
            t.handlers,
            t.interrupts
        );
    }
    Ok(())
}

/// The microbenchmark a run asks for: the mean compute time comes from
/// `compute_cycles`, or from `u` and the platform's measured Lmin (which it
/// returns, to be reported).
fn workload(
    a: &RunArgs,
    protocol: Protocol,
    unit: &str,
    lmin: impl FnOnce() -> Result<f64>,
) -> Result<(MicroConfig, Option<f64>)> {
    let (mean, lmin) = match (a.u, a.compute_cycles) {
        (Some(_), Some(_)) => bail!("invalid u and compute_cycles: give one of them, not both"),
        (Some(u), None) => {
            if !(u > 0.0 && u < 1.0) {
                bail!("invalid u = {u}: allowed a value strictly between 0 and 1");
            }
            let l = lmin()?;
            let mean = micro::mean_compute(u, l);
            let most = finegrain_core::config::MAX_CYCLES;
            if mean > most as f64 {
                bail!(
                    "invalid u = {u}: the mean compute time U / (1 - U) x Lmin ({l:.0} {unit}) is {mean:.0} {unit}, \
                     allowed at most {most} (u up to {:.6})",
                    most as f64 / (most as f64 + l)
                );
            }
            (mean, Some(l))
        }
        (None, Some(c)) => (c, None),
        (None, None) => (0.0, None),
    };
    let workload = MicroConfig {
        protocol,
        mean_compute_cycles: mean,
        requests_per_node: a.requests_per_node.unwrap_or(10_000),
        single_requester: false,
    };
    workload.validate()?;
    Ok((workload, lmin))
}

/// A relinquish rule given under a policy without a computing processor
/// that acts as protocol processor would change nothing: refused, on either
/// platform, rather than silently ignored.
fn relinquish_needs_floating(rule: &str, policy: &Policy) -> Result<()> {
    if *policy != Policy::Floating {
        bail!(
            "invalid relinquish = {rule} with policy {}: the rule decides when a computing processor acting as \
             protocol processor gives the role up to a peer, which only policy floating has; allowed with floating",
            policy.label()
        );
    }
    Ok(())
}
