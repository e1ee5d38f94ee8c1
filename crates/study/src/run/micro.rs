//! `finegrain run micro`: the scheduling microbenchmark, on the simulated
//! machine or on real threads.

use super::{Common, NativeReport, RunOptions, SimRun, Simulated};
use crate::experiment::preset_shown;
use crate::output::write_json;
use anyhow::{bail, Result};
use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_apps::{Sim, Threads, WorkloadSpec};
use finegrain_core::config::MAX_CYCLES;
use finegrain_core::{CoprocLibrary, MachineConfig, Policy, Relinquish, Topology};
use finegrain_rt::Placement;
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// The microbenchmark's run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct MicroOptions {
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub common: Common,
    /// single, fixed, fixed:K, floating [default: fixed].
    #[cfg_attr(feature = "clap", arg(long))]
    pub policy: Option<String>,
    /// Nodes, 2..=4096 [default: 2].
    #[cfg_attr(feature = "clap", arg(long))]
    pub nodes: Option<u32>,
    /// Processors per node, 1..=64 [default: 2].
    #[cfg_attr(feature = "clap", arg(long))]
    pub procs_per_node: Option<u32>,
    /// null or fetch [default: null].
    #[cfg_attr(feature = "clap", arg(long))]
    pub protocol: Option<String>,
    /// Target compute utilization U in (0, 1); sets the mean compute time
    /// from the measured Lmin. Without it or --compute-cycles, threads do
    /// not compute between requests (U = 0).
    #[cfg_attr(feature = "clap", arg(long, allow_negative_numbers = true))]
    pub u: Option<f64>,
    /// Mean compute cycles between requests (instead of --u), at most 1e9
    /// [default: 0]; on platform native a cycle is a nanosecond.
    #[cfg_attr(feature = "clap", arg(long, allow_negative_numbers = true))]
    pub compute_cycles: Option<f64>,
    /// Requests each node makes, split over its compute threads, 1..=1e9
    /// [default: 10000].
    #[cfg_attr(feature = "clap", arg(long))]
    pub requests_per_node: Option<u64>,
    /// Interrupt overhead in cycles, 0..=1000000000 (overrides the preset).
    #[cfg_attr(feature = "clap", arg(long))]
    pub oint: Option<u64>,
    /// When a processor acting as PP under Floating gives the role up once
    /// its own work can continue: eager, handoff or adaptive (native runs
    /// take eager or handoff) [default: eager].
    #[cfg_attr(feature = "clap", arg(long))]
    pub relinquish: Option<String>,
}

impl MicroOptions {
    fn preset(&self) -> &str {
        self.common.preset.as_deref().unwrap_or("hpca97")
    }

    fn policy(&self) -> Result<Policy> {
        Ok(Policy::parse(self.policy.as_deref().unwrap_or("fixed"))?)
    }

    fn topology(&self) -> Topology {
        Topology { nodes: self.nodes.unwrap_or(2), procs_per_node: self.procs_per_node.unwrap_or(2) }
    }

    fn protocol(&self) -> Result<Protocol> {
        Ok(Protocol::parse(self.protocol.as_deref().unwrap_or("null"))?)
    }

    /// The relinquish rule asked for, if any, checked against the policy.
    fn relinquish(&self, policy: &Policy) -> Result<Option<Relinquish>> {
        let Some(rule) = &self.relinquish else { return Ok(None) };
        let parsed = Relinquish::parse(rule)?;
        relinquish_needs_floating(rule, policy)?;
        Ok(Some(parsed))
    }

    /// The microbenchmark asked for: the mean compute time comes from
    /// `compute_cycles`, or from `u` and the platform's measured Lmin
    /// (which it returns, to be reported).
    fn workload(
        &self,
        protocol: Protocol,
        unit: &str,
        lmin: impl FnOnce() -> Result<f64>,
    ) -> Result<(MicroConfig, Option<f64>)> {
        let (mean, lmin) = match (self.u, self.compute_cycles) {
            (Some(_), Some(_)) => bail!("invalid u and compute_cycles: give one of them, not both"),
            (Some(u), None) => {
                if !(u > 0.0 && u < 1.0) {
                    bail!("invalid u = {u}: allowed a value strictly between 0 and 1");
                }
                let l = lmin()?;
                (mean_for(u, l, unit)?, Some(l))
            }
            (None, Some(c)) => (c, None),
            (None, None) => (0.0, None),
        };
        let workload = MicroConfig {
            protocol,
            mean_compute_cycles: mean,
            requests_per_node: self.requests_per_node.unwrap_or(10_000),
            single_requester: false,
        };
        workload.validate()?;
        Ok((workload, lmin))
    }

    /// What a run on real threads runs with, checked.
    fn native_setup(&self, platform: &str) -> Result<NativeSetup> {
        if platform != "native" && self.u.is_some() {
            bail!(
                "invalid u with platform {platform}: each node process would measure its own Lmin and compute for \
                 a different time; allowed --compute-cycles there"
            );
        }
        if self.oint.is_some() {
            bail!(
                "invalid oint for platform native: the native interrupt cost is what the machine gives (see \
                 finegrain bench interrupt)"
            );
        }
        let machine = MachineConfig::load(self.preset())?;
        let policy = self.policy()?;
        let topology = self.topology();
        let protocol = self.protocol()?;
        let mut rt = finegrain_rt::RtConfig::new(topology, policy);
        if let Some(r) = self.relinquish(&policy)? {
            rt.run.relinquish = r;
        }
        rt.run.seed = self.common.seed();
        rt.segment_bytes = machine.segment_bytes() as usize;
        self.common.apply_runtime_fields(&mut rt);
        micro::two_nodes_at_least(topology.nodes)?;
        rt.validate()?;
        micro::segment_fits(rt.segment_bytes as u64, &machine)?;
        Ok(NativeSetup { rt, machine, protocol })
    }
}

/// The mean compute time that gives utilization `u` with round trips of
/// `lmin` (in `unit`s), within the simulator's limit.
fn mean_for(u: f64, lmin: f64, unit: &str) -> Result<f64> {
    let mean = micro::mean_compute(u, lmin);
    if mean > MAX_CYCLES as f64 {
        bail!(
            "invalid u = {u}: the mean compute time U / (1 - U) x Lmin ({lmin:.0} {unit}) is {mean:.0} {unit}, \
             allowed at most {MAX_CYCLES} (u up to {:.6})",
            MAX_CYCLES as f64 / (MAX_CYCLES as f64 + lmin)
        );
    }
    Ok(mean)
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

/// What a run on real threads runs with, checked.
struct NativeSetup {
    rt: finegrain_rt::RtConfig,
    machine: MachineConfig,
    protocol: Protocol,
}

impl RunOptions for MicroOptions {
    const WORKLOAD: &'static str = "micro";
    const ONE_CHOICE: &'static [&'static str] = &["u", "compute_cycles"];
    const NATIVE_RECORDS: bool = true;
    type Native = NativeRun;

    fn common(&self) -> &Common {
        &self.common
    }

    /// Lmin is measured when `u` asks for a utilization.
    fn simulated(&self) -> Result<SimRun> {
        let mut machine = MachineConfig::load(self.preset())?;
        if let Some(o) = self.oint {
            if o > MAX_CYCLES {
                bail!("invalid oint = {o}: allowed at most {MAX_CYCLES} cycles");
            }
            machine.interrupt.overhead_cycles = o;
        }
        let policy = self.policy()?;
        let topology = self.topology();
        let protocol = self.protocol()?;
        let mut config = SimConfig::new(machine, topology, policy, self.common.seed());
        if let Some(r) = self.relinquish(&policy)? {
            config.run.relinquish = r;
        }
        micro::two_nodes_at_least(topology.nodes)?;
        config.validate()?;
        let (workload, lmin) =
            self.workload(protocol, "cycles", || Ok(micro::measure_lmin(&Sim(config.clone()), protocol)?))?;
        let mut run = SimRun::of(config, WorkloadSpec::Micro(workload), &self.common);
        (run.target_u, run.lmin) = (self.u, lmin);
        Ok(run)
    }

    fn native_nodes(&self, platform: &str) -> Result<u32> {
        self.native_setup(platform).map(|s| s.rt.run.topology.nodes)
    }

    /// The node's processors, and the co-processor's progress thread.
    fn mpi_threads(&self) -> Result<u32> {
        let progress = matches!(self.policy(), Ok(Policy::Coprocessor { library }) if library != CoprocLibrary::MainAm);
        Ok(self.topology().procs_per_node + u32::from(progress))
    }

    fn native(&self, on: Placement<'_>) -> Result<Option<NativeRun>> {
        let NativeSetup { rt, machine, protocol } = self.native_setup(on.name())?;
        let threads = Threads { on, config: rt.clone(), machine: machine.clone() };
        let (workload, lmin) = self.workload(protocol, "ns", || Ok(micro::measure_lmin(&threads, protocol)?))?;
        let out = micro::run(&threads, &workload)?;
        if !on.has_results() {
            return Ok(None);
        }
        let compute: Vec<&finegrain_rt::ThreadTimes> =
            out.stats.threads.iter().filter(|t| t.role == "compute").collect();
        let measured_u = compute.iter().map(|t| t.compute_ns as f64 / t.wall_ns.max(1) as f64).sum::<f64>()
            / compute.len().max(1) as f64;
        Ok(Some(NativeRun {
            platform: on.name(),
            preset: self.common.preset.clone(),
            target_u: self.u,
            rt,
            machine,
            workload,
            lmin_ns: lmin,
            measured_u,
            stats: out.stats,
        }))
    }
}

/// The microbenchmark on real threads, done.
pub struct NativeRun {
    platform: &'static str,
    preset: Option<String>,
    target_u: Option<f64>,
    rt: finegrain_rt::RtConfig,
    machine: MachineConfig,
    workload: MicroConfig,
    lmin_ns: Option<f64>,
    measured_u: f64,
    stats: finegrain_rt::RtStats,
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

impl NativeReport for NativeRun {
    fn write_record(&self, path: &Path) -> Result<()> {
        let run = &self.rt.run;
        write_json(
            path,
            &NativeRecord {
                platform: self.platform,
                workload_name: "micro",
                policy: run.policy.label(),
                nodes: run.topology.nodes,
                procs_per_node: run.topology.procs_per_node,
                relinquish: run.relinquish.label(),
                seed: run.seed,
                preset: self.preset.as_deref().unwrap_or("hpca97"),
                config: &self.rt,
                machine: &self.machine,
                workload: &self.workload,
                lmin_ns: self.lmin_ns,
                measured_u: self.measured_u,
                stats: &self.stats,
            },
        )
    }
}

impl fmt::Display for NativeRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (run, m, s) = (&self.rt.run, &self.machine, &self.stats);
        writeln!(
            f,
            "platform {}  preset {} (segment {} bytes, block {} bytes)  policy {} (relinquish {})  {} nodes x {} \
             threads  protocol {}  seed {}",
            self.platform,
            preset_shown(&m.name, self.preset.as_deref()),
            m.segment_bytes(),
            m.protocol.block_bytes,
            run.policy.label(),
            run.relinquish.label(),
            run.topology.nodes,
            run.topology.procs_per_node,
            self.workload.protocol,
            run.seed
        )?;
        writeln!(
            f,
            "mean compute {} ns  requests per node {}",
            self.workload.mean_compute_cycles, self.workload.requests_per_node
        )?;
        if let (Some(l), Some(u)) = (self.lmin_ns, self.target_u) {
            writeln!(f, "Lmin {l:.0} ns (Fixed, idle cluster); U = {u} gives the mean compute above")?;
        }
        writeln!(f, "wall time        {:.3} ms", s.wall_ns as f64 / 1e6)?;
        writeln!(f, "measured U       {:.3}", self.measured_u)?;
        writeln!(
            f,
            "requests         {}  messages {}  handlers {}  interrupts {}  spilled {}",
            s.requests, s.messages, s.handlers, s.interrupts, s.spilled
        )?;
        writeln!(
            f,
            "{:>5} {:>7} {:>9} {:>11} {:>11} {:>11} {:>11} {:>9} {:>10}",
            "node", "thread", "role", "compute ms", "handler ms", "interrupt ms", "other ms", "handlers", "interrupts"
        )?;
        let ms = |ns: u64| ns as f64 / 1e6;
        for t in &s.threads {
            writeln!(
                f,
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
            )?;
        }
        Ok(())
    }
}

/// A simulated run of the microbenchmark, as `finegrain run` shows it.
pub(super) fn fmt_simulated(f: &mut fmt::Formatter<'_>, done: &Simulated, w: &MicroConfig) -> fmt::Result {
    let Simulated { run, stats: s, wall, .. } = done;
    let SimRun { config, target_u, lmin, preset, .. } = run;
    let mhz = config.machine.processor.mhz as f64;
    writeln!(
        f,
        "preset {}  policy {} (relinquish {})  {} nodes x {} processors  protocol {}  seed {}",
        preset_shown(&config.machine.name, preset.as_deref()),
        config.run.policy.label(),
        config.run.relinquish.label(),
        config.run.topology.nodes,
        config.run.topology.procs_per_node,
        w.protocol,
        config.run.seed
    )?;
    // Everything else the run was given, so the output alone regenerates it.
    writeln!(
        f,
        "oint {} cycles  mean compute {} cycles  requests per node {}",
        config.machine.interrupt.overhead_cycles, w.mean_compute_cycles, w.requests_per_node
    )?;
    if let (Some(l), Some(u)) = (lmin, target_u) {
        writeln!(f, "Lmin {l:.1} cycles; U = {u} gives the mean compute above")?;
    }
    writeln!(f, "simulated time   {} cycles ({:.1} us)", s.sim_cycles, s.sim_cycles as f64 / mhz)?;
    writeln!(f, "measured U       {:.3}", s.measured_u)?;
    writeln!(f, "requests         {}  (mean round trip {:.1} cycles)", s.requests, s.request_latency.mean_cycles)?;
    writeln!(f, "interrupts       {}", s.interrupts)?;
    writeln!(f, "PP occupancy     {:.3}", s.pp_occupancy)?;
    for (n, node) in s.nodes.iter().enumerate() {
        writeln!(f, "bus (node {n})     {}", node.bus.summary(s.sim_cycles))?;
    }
    let c = &s.cycles;
    writeln!(
        f,
        "cycles (all processors): compute {} stall {} send {} wait {} handler {} interrupt {} role {} poll-idle {} \
         hold {} idle {}",
        c.compute, c.stall, c.send, c.wait, c.handler, c.interrupt, c.role, c.poll_idle, c.hold, c.idle
    )?;
    let m = &s.misses;
    writeln!(
        f,
        "misses: interference {} migration {} protocol-refetch {} placement {}",
        m.interference, m.migration, m.protocol_refetch, m.placement
    )?;
    writeln!(
        f,
        "{} events, {} messages in {:.3} s ({:.0} messages/s)",
        s.events, s.messages, wall.wall_seconds, wall.messages_per_wall_second
    )
}
