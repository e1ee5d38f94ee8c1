//! `finegrain run --workload fetch-add` (`finegrain fetch-add`): one point
//! of the PDQ study, simulated or on real threads. Requesters on other
//! nodes send fetch&add requests to words at node 0 (the home); the key is
//! the word.

use super::SimRun;
use crate::args::RunArgs;
use crate::say;
use anyhow::{bail, Result};
use finegrain_apps::fetch_add::{self, FetchAddConfig, KeySkew};
use finegrain_apps::serving::Point;
use finegrain_apps::{RtPlatform, Threads, WorkloadSpec};
use finegrain_core::{Discipline, MachineConfig, ServingKind};
use finegrain_sim::{RunStats, SimConfig};
use finegrain_study::experiment::preset_shown;
use finegrain_study::output::write_json;
use serde::Serialize;

/// What a point needs besides its machine and workload: who serves.
struct Built {
    point: Point,
    config: SimConfig,
    workload: FetchAddConfig,
}

/// Builds and checks the point the flags ask for. `native` picks the
/// defaults of real threads: there is no network-interface processor to
/// embed handlers in, and the native home's protocol table holds fewer
/// words.
fn point(a: &RunArgs, native: bool) -> Result<Built> {
    let machine = MachineConfig::load(a.preset.as_deref().unwrap_or("hpca99"))?;
    let default_kind = if native { "smp" } else { "embedded" };
    let point = Point {
        kind: ServingKind::parse(a.kind.as_deref().unwrap_or(default_kind))?,
        discipline: Discipline::parse(a.discipline.as_deref().unwrap_or("pdq"))?,
        protocol_procs: a.protocol_procs.unwrap_or(1),
    };
    point.check()?;
    let requester_nodes = a.requester_nodes.unwrap_or(4);
    let compute_procs = a.compute_procs.unwrap_or(8);
    check_sizes(&point, requester_nodes, compute_procs)?;
    if native && a.handler_cycles.is_some() {
        bail!(
            "invalid handler_cycles with platform native: a native handler takes what its code takes (the simulated \
             handler's extra cycles have nothing to stand for on real threads); allowed only with platform sim"
        );
    }
    let config = point.sim_config(&machine, requester_nodes, compute_procs, a.seed.unwrap_or(1));
    config.validate()?;
    let workload = FetchAddConfig {
        keys: a.keys.unwrap_or(if native { NATIVE_KEYS } else { 4096 }),
        skew: KeySkew::parse(a.skew.as_deref().unwrap_or("uniform"))?,
        handler_cycles: a.handler_cycles.unwrap_or(97),
        sequential_fraction: a.sequential_fraction.unwrap_or(0.0),
        requests_per_thread: a.requests_per_thread.unwrap_or(1500),
        think_cycles: a.think_cycles.unwrap_or(0.0),
        home_u: a.home_u.unwrap_or(0.5),
        home_burst_cycles: a.home_burst_cycles.unwrap_or(2000.0),
    };
    if !native {
        let threads = config.run.policy.compute_procs(config.run.topology.procs_per_node);
        workload.validate(&config.machine, threads)?;
    }
    if workload.sequential_fraction > 0.0 && matches!(point.discipline, Discipline::SpinLock | Discipline::Static) {
        bail!(
            "invalid sequential_fraction = {} with discipline {}: only pdq and serial can run a handler alone, \
             allowed 0 here",
            workload.sequential_fraction,
            point.discipline.label()
        );
    }
    Ok(Built { point, config, workload })
}

/// Distinct words a native run uses unless told: within what the native
/// home's protocol table holds with the default preset and threads.
const NATIVE_KEYS: u64 = 64;

/// The simulated run the flags ask for, checked.
pub fn build(a: &RunArgs) -> Result<SimRun> {
    let b = point(a, false)?;
    Ok(SimRun { config: b.config, workload: WorkloadSpec::FetchAdd(b.workload), target_u: None, lmin: None })
}

/// Prints what a simulated run measured at the home.
pub fn print(a: &RunArgs, run: &SimRun, w: &FetchAddConfig, stats: &RunStats) -> Result<()> {
    let c = &run.config;
    let Some(p) = Point::of_config(c) else { bail!("the run's configuration is no fetch&add point") };
    let h = fetch_add::home_measures(&c.machine, stats);
    say!("preset {}  {}", preset_shown(&c.machine.name, a.preset.as_deref()), describe(&p, c, w));
    say!("workload          {}", describe_workload(w, false));
    say!("throughput        {:.3} requests/us at the home", h.throughput_msgs_per_us);
    say!("queue delay       mean {:.0} cycles, p99 {} cycles", h.mean_queue_delay_cycles, h.p99_queue_delay_cycles);
    say!("busy-wait share   {:.3} of protocol-processor time", h.pp_busy_wait_fraction);
    say!("home U            {:.3} (target {})", h.home_u, w.home_u);
    say!("interrupts        {}", h.interrupts);
    say!("bus transactions  {:.2} per request", h.bus_transactions_per_request);
    let home = &stats.nodes[0];
    say!("home bus          {}", home.bus.summary(home.last_handler_end));
    Ok(())
}

/// What a native fetch&add run measured, with the runtime configuration,
/// seed and machine it ran with (measurements on real threads, which
/// `rerun` cannot regenerate and refuses).
#[derive(Serialize)]
struct NativeRecord<'a> {
    platform: &'static str,
    workload_name: &'static str,
    /// The preset as given (a name, or the path of a file).
    preset: &'a str,
    kind: ServingKind,
    discipline: Discipline,
    protocol_procs: u32,
    seed: u64,
    config: &'a finegrain_rt::RtConfig,
    machine: &'a MachineConfig,
    workload: &'a FetchAddConfig,
    stats: &'a finegrain_rt::RtStats,
}

/// The point on real threads, checked: Fixed(k) protocol threads for smp,
/// Floating for mult.
pub struct NativeRun {
    built: Built,
    rt: finegrain_rt::RtConfig,
}

pub fn build_native(a: &RunArgs) -> Result<NativeRun> {
    let built = point(a, true)?;
    if built.point.kind == ServingKind::Embedded {
        bail!(
            "invalid kind = embedded for platform native: allowed smp, mult (there is no network-interface processor)"
        );
    }
    // The same run settings as the simulated point (Mult: at most K idle
    // threads serve at once, as simulated), with the runtime's defaults.
    let mut rt = finegrain_rt::RtConfig::of(built.config.run.clone());
    super::apply_runtime_fields(a, &mut rt);
    rt.validate()?;
    Ok(NativeRun { built, rt })
}

/// Runs the point on real threads; every word is checked afterwards.
pub fn native(a: &RunArgs, run: NativeRun, on: RtPlatform<'_>) -> Result<()> {
    let NativeRun { built: Built { point, config, workload }, rt } = run;
    let out = fetch_add::run(&Threads { on, config: rt.clone(), machine: config.machine.clone() }, &workload)?;
    if !on.has_results() {
        return Ok(());
    }
    let s = &out.stats;
    // The record first: output closed early must not lose it.
    if let Some(path) = &a.json {
        let rec = NativeRecord {
            platform: on.name(),
            workload_name: "fetch-add",
            preset: a.preset.as_deref().unwrap_or(&config.machine.name),
            kind: point.kind,
            discipline: point.discipline,
            protocol_procs: point.protocol_procs,
            seed: rt.run.seed,
            config: &rt,
            machine: &config.machine,
            workload: &workload,
            stats: s,
        };
        write_json(path, &rec)?;
    }
    let wall_us = s.wall_ns.max(1) as f64 / 1e3;
    say!(
        "{}  preset {}  {}",
        on.name(),
        preset_shown(&config.machine.name, a.preset.as_deref()),
        describe(&point, &config, &workload)
    );
    say!("workload          {}", describe_workload(&workload, true));
    // The workload's own requests: across processes each requester also
    // tells the home it is done, with one more request of its own.
    let requests: u64 = out.outputs.iter().map(|o| o.requests).sum();
    let notices = s.requests - requests;
    let notices = if notices > 0 { format!(" (and {notices} requester-done notices)") } else { String::new() };
    say!(
        "requests          {requests} in {wall_us:.0} us ({:.3} per us); every word checked{notices}",
        requests as f64 / wall_us
    );
    say!("handlers          {}   interrupts {}", s.handlers, s.interrupts);
    if std::thread::available_parallelism().map_or(1, |n| n.get())
        < (config.run.topology.nodes * config.run.topology.procs_per_node) as usize
    {
        crate::note(format_args!(
            "more threads than cores; the time measures correctness under oversubscription, not speed"
        ));
    }
    Ok(())
}

/// Node sizes in the user's terms (the machine adds the protocol
/// processors to the compute ones, and the home to the requesters).
fn check_sizes(p: &Point, requester_nodes: u32, compute_procs: u32) -> Result<()> {
    finegrain_study::studies::pdq_micro::check_requester_nodes(requester_nodes)?;
    let (most, extra) = match p.kind {
        ServingKind::Embedded | ServingKind::Smp => {
            (64u32.saturating_sub(p.protocol_procs), " with the protocol processors")
        }
        ServingKind::Mult => (64, ""),
    };
    if most == 0 {
        bail!(
            "invalid protocol_procs = {}: allowed 1..=63 for {} (a node has at most 64 processors, one at least computes)",
            p.protocol_procs,
            p.kind.label()
        );
    }
    if !(1..=most).contains(&compute_procs) {
        if (1..64).contains(&compute_procs) && p.kind != ServingKind::Mult {
            // Too many together: name the protocol processors too.
            bail!(
                "invalid protocol_procs = {} with compute_procs = {compute_procs}: a node has at most 64 processors, \
                 so allowed protocol_procs 1..={} or compute_procs 1..={most}",
                p.protocol_procs,
                64 - compute_procs
            );
        }
        bail!("invalid compute_procs = {compute_procs}: allowed 1..={most} (64 processors per node{extra})");
    }
    if p.kind == ServingKind::Mult && p.protocol_procs > compute_procs {
        bail!(
            "invalid protocol_procs = {} for mult: allowed 1..={compute_procs} (idle compute processors serve)",
            p.protocol_procs
        );
    }
    Ok(())
}

/// The point in one line: who serves, the keys, the requesters, the seed.
fn describe(p: &Point, c: &SimConfig, w: &FetchAddConfig) -> String {
    format!(
        "{} x {} {}  {} keys {}  {} requester nodes x {} threads  seed {}",
        p.protocol_procs,
        p.kind.label(),
        p.discipline.label(),
        w.keys,
        w.skew.label(),
        c.run.topology.nodes - 1,
        c.run.policy.compute_procs(c.run.topology.procs_per_node),
        c.run.seed
    )
}

/// The rest of the workload, so the output alone regenerates the run. (A
/// native handler takes what its code takes: no handler cost to name.)
fn describe_workload(w: &FetchAddConfig, native: bool) -> String {
    let handler = if native { String::new() } else { format!("handler {} cycles  ", w.handler_cycles) };
    format!(
        "{handler}{} requests per thread  think {} cycles  sequential share {}  home U {}, bursts of {} cycles",
        w.requests_per_thread, w.think_cycles, w.sequential_fraction, w.home_u, w.home_burst_cycles
    )
}
