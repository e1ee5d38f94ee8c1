//! `finegrain fetch-add`: one point of the PDQ study, simulated alone, from
//! flags or a TOML file with the same field names.

use crate::experiment;
use crate::pdq_study::{Kind, Point};
use anyhow::{bail, Result};
use clap::Args;
use finegrain_apps::fetch_add::{self, FetchAddConfig, HomeMeasures, KeySkew};
use finegrain_core::config::parse_toml;
use finegrain_core::{Discipline, MachineConfig};
use finegrain_sim::{RunStats, SimConfig};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;

/// One fetch&add run: requesters on other nodes send fetch&add requests
/// to words at node 0 (the home); the key is the word.
#[derive(Args, Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchAddArgs {
    /// TOML file with any of the fields below (flags override it).
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// sim (the preset's simulated machine) or native (real threads: smp
    /// means dedicated protocol threads, mult idle compute threads)
    /// [default: sim].
    #[arg(long)]
    pub platform: Option<String>,
    /// Machine preset name or path [default: hpca99].
    #[arg(long)]
    pub preset: Option<String>,
    /// Who runs the home's handlers: embedded, smp or mult [default: embedded].
    #[arg(long)]
    pub kind: Option<String>,
    /// serial, pdq, spin-lock or static [default: pdq].
    #[arg(long)]
    pub discipline: Option<String>,
    /// Protocol processors at the home, 1..=63 with the compute processors
    /// within 64 (for mult: most idle compute processors serving at once,
    /// 1..=compute processors) [default: 1].
    #[arg(long)]
    pub protocol_procs: Option<u32>,
    /// Distinct words (keys) at the home, 1 up to what the preset's home
    /// protocol table holds (16384 for hpca99 with 8 compute processors)
    /// [default: 4096].
    #[arg(long)]
    pub keys: Option<u64>,
    /// uniform or zipf:S, S in 0.01..=100 [default: uniform].
    #[arg(long)]
    pub skew: Option<String>,
    /// Nodes besides the home, 1..=4095 [default: 4].
    #[arg(long)]
    pub requester_nodes: Option<u32>,
    /// Compute processors per node, 1..=64 with the protocol processors of
    /// embedded or smp within 64 [default: 8].
    #[arg(long)]
    pub compute_procs: Option<u32>,
    /// Handler instructions besides its accesses, 0..=1e9 [default: 97, as
    /// in the pdq-micro study].
    #[arg(long)]
    pub handler_cycles: Option<u64>,
    /// Requests each requester thread sends, 1..=1e9 [default: 1500].
    #[arg(long)]
    pub requests_per_thread: Option<u64>,
    /// Home compute utilization in [0, 1] [default: 0.5].
    #[arg(long, allow_negative_numbers = true)]
    pub home_u: Option<f64>,
    /// Mean home compute burst in cycles, 1..=1e9 [default: 2000].
    #[arg(long, allow_negative_numbers = true)]
    pub home_burst_cycles: Option<f64>,
    /// Mean requester computation before each request in cycles, 0..=1e9
    /// [default: 0].
    #[arg(long, allow_negative_numbers = true)]
    pub think_cycles: Option<f64>,
    /// Share of requests with the sequential key, in [0, 1] [default: 0].
    #[arg(long, allow_negative_numbers = true)]
    pub sequential_fraction: Option<f64>,
    /// Base seed of the run's random streams, 0..=2^64-1 [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the full run record (configuration, seed, statistics) here.
    #[arg(long)]
    #[serde(skip)]
    pub json: Option<PathBuf>,
}

impl FetchAddArgs {
    /// Flags override the file.
    fn merged(self) -> Result<FetchAddArgs> {
        let Some(path) = &self.config else { return Ok(self) };
        let text = experiment::read_input(path)?;
        let mut f: FetchAddArgs = parse_toml(&path.display().to_string(), &text)?;
        f.preset = experiment::preset_beside(path, f.preset);
        Ok(FetchAddArgs {
            config: None,
            platform: self.platform.or(f.platform),
            preset: self.preset.or(f.preset),
            kind: self.kind.or(f.kind),
            discipline: self.discipline.or(f.discipline),
            protocol_procs: self.protocol_procs.or(f.protocol_procs),
            keys: self.keys.or(f.keys),
            skew: self.skew.or(f.skew),
            requester_nodes: self.requester_nodes.or(f.requester_nodes),
            compute_procs: self.compute_procs.or(f.compute_procs),
            handler_cycles: self.handler_cycles.or(f.handler_cycles),
            requests_per_thread: self.requests_per_thread.or(f.requests_per_thread),
            home_u: self.home_u.or(f.home_u),
            home_burst_cycles: self.home_burst_cycles.or(f.home_burst_cycles),
            think_cycles: self.think_cycles.or(f.think_cycles),
            sequential_fraction: self.sequential_fraction.or(f.sequential_fraction),
            seed: self.seed.or(f.seed),
            json: self.json,
        })
    }
}

/// Node sizes in the user's terms (the machine adds the protocol
/// processors to the compute ones, and the home to the requesters).
fn check_sizes(p: &Point, requester_nodes: u32, compute_procs: u32) -> Result<()> {
    crate::pdq_study::check_requester_nodes(requester_nodes)?;
    let (most, extra) = match p.kind {
        Kind::Embedded | Kind::Smp => (64u32.saturating_sub(p.protocol_procs), " with the protocol processors"),
        Kind::Mult => (64, ""),
    };
    if most == 0 {
        bail!(
            "invalid protocol_procs = {}: allowed 1..=63 for {} (a node has at most 64 processors, one at least computes)",
            p.protocol_procs,
            p.kind.label()
        );
    }
    if !(1..=most).contains(&compute_procs) {
        if (1..64).contains(&compute_procs) && p.kind != Kind::Mult {
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
    if p.kind == Kind::Mult && p.protocol_procs > compute_procs {
        bail!(
            "invalid protocol_procs = {} for mult: allowed 1..={compute_procs} (idle compute processors serve)",
            p.protocol_procs
        );
    }
    Ok(())
}

fn parse_kind(s: &str) -> Result<Kind> {
    match s {
        "embedded" => Ok(Kind::Embedded),
        "smp" => Ok(Kind::Smp),
        "mult" => Ok(Kind::Mult),
        other => bail!("invalid kind = {other}: allowed embedded, smp, mult"),
    }
}

/// The run record: enough to regenerate it (`finegrain rerun`).
#[derive(Serialize)]
struct Record<'a> {
    kind: Kind,
    config: &'a SimConfig,
    workload: &'a FetchAddConfig,
    home: &'a HomeMeasures,
    stats: &'a RunStats,
    wall_seconds: f64,
}

/// What a native fetch&add run measured, with the runtime configuration,
/// seed and machine it ran with (measurements on real threads, which
/// `rerun` cannot regenerate and refuses).
#[derive(Serialize)]
struct NativeRecord<'a> {
    platform: &'static str,
    /// The preset as given (a name, or the path of a file).
    preset: &'a str,
    kind: Kind,
    discipline: Discipline,
    protocol_procs: u32,
    seed: u64,
    config: &'a finegrain_rt::RtConfig,
    machine: &'a MachineConfig,
    workload: &'a FetchAddConfig,
    stats: &'a finegrain_rt::RtStats,
}

pub fn run(args: FetchAddArgs) -> Result<()> {
    let config_file = args.config.clone();
    let a = args.merged()?;
    let machine = MachineConfig::load(a.preset.as_deref().unwrap_or("hpca99"))?;
    let point = Point {
        kind: parse_kind(a.kind.as_deref().unwrap_or("embedded"))?,
        discipline: Discipline::parse(a.discipline.as_deref().unwrap_or("pdq"))?,
        protocol_procs: a.protocol_procs.unwrap_or(1),
    };
    point.check()?;
    let requester_nodes = a.requester_nodes.unwrap_or(4);
    let compute_procs = a.compute_procs.unwrap_or(8);
    check_sizes(&point, requester_nodes, compute_procs)?;
    let native = a.platform.as_deref() == Some("native");
    if native && a.handler_cycles.is_some() {
        bail!(
            "invalid handler_cycles with platform native: a native handler takes what its code takes (the simulated \
             handler's extra cycles have nothing to stand for on real threads); allowed only with platform sim"
        );
    }
    let config = point.sim_config(&machine, requester_nodes, compute_procs, a.seed.unwrap_or(1));
    config.validate()?;
    let workload = FetchAddConfig {
        keys: a.keys.unwrap_or(4096),
        skew: KeySkew::parse(a.skew.as_deref().unwrap_or("uniform")).map_err(anyhow::Error::msg)?,
        handler_cycles: a.handler_cycles.unwrap_or(97),
        sequential_fraction: a.sequential_fraction.unwrap_or(0.0),
        requests_per_thread: a.requests_per_thread.unwrap_or(1500),
        think_cycles: a.think_cycles.unwrap_or(0.0),
        home_u: a.home_u.unwrap_or(0.5),
        home_burst_cycles: a.home_burst_cycles.unwrap_or(2000.0),
    };
    let threads = config.policy.compute_procs(config.topology.procs_per_node);
    workload.validate(&config.machine, threads).map_err(anyhow::Error::msg)?;
    if workload.sequential_fraction > 0.0 && matches!(point.discipline, Discipline::SpinLock | Discipline::Static) {
        bail!(
            "invalid sequential_fraction = {} with discipline {}: only pdq and serial can run a handler alone, \
             allowed 0 here",
            workload.sequential_fraction,
            point.discipline.label()
        );
    }
    experiment::check_writable(
        a.json.as_deref(),
        &experiment::run_inputs(config_file.as_deref(), a.preset.as_deref()),
    )?;
    match a.platform.as_deref().unwrap_or("sim") {
        "sim" => simulate(&point, &config, &workload, a.json, a.preset.as_deref()),
        "native" => run_native(&point, &config, &workload, a.json, a.kind.is_some(), a.preset.as_deref()),
        other => bail!("invalid platform = {other}: allowed sim, native"),
    }
}

fn simulate(
    point: &Point,
    config: &SimConfig,
    workload: &FetchAddConfig,
    json: Option<PathBuf>,
    preset_given: Option<&str>,
) -> Result<()> {
    let t0 = Instant::now();
    let total = fetch_add::total_requests(config, workload);
    let out = crate::progress::one_run(total, || fetch_add::simulate(config, workload))?;
    let wall = t0.elapsed().as_secs_f64();
    let home = fetch_add::home_measures(&config.machine, &out);
    // The record first: output closed early must not lose it.
    if let Some(path) = json {
        let rec = Record { kind: point.kind, config, workload, home: &home, stats: &out.stats, wall_seconds: wall };
        experiment::write_json(&path, &rec)?;
    }
    print_summary(point, config, workload, &home, preset_given)?;
    let home_node = &out.stats.nodes[0];
    crate::say!("home bus          {}", home_node.bus.summary(home_node.last_handler_end));
    Ok(())
}

/// The same point on real threads: Fixed(k) protocol threads for smp,
/// Floating for mult; every word is checked afterwards.
fn run_native(
    point: &Point,
    config: &SimConfig,
    workload: &FetchAddConfig,
    json: Option<PathBuf>,
    kind_given: bool,
    preset_given: Option<&str>,
) -> Result<()> {
    if point.kind == Kind::Embedded {
        bail!(
            "invalid kind = embedded{} for platform native: allowed smp, mult (there is no network-interface \
             processor)",
            if kind_given { "" } else { " (the default kind)" }
        );
    }
    let mut rt = finegrain_rt::RtConfig::new(config.topology, config.policy);
    rt.discipline = point.discipline;
    rt.seed = config.seed;
    // Mult: at most K idle threads serve at once, as in the simulator.
    rt.max_servers = config.dispatch.max_servers;
    rt.validate()?;
    let out = fetch_add::run_native(&rt, &config.machine, workload)?;
    let s = &out.stats;
    // The record first: output closed early must not lose it.
    if let Some(path) = json {
        let rec = NativeRecord {
            platform: "native",
            preset: preset_given.unwrap_or(&config.machine.name),
            kind: point.kind,
            discipline: point.discipline,
            protocol_procs: point.protocol_procs,
            seed: rt.seed,
            config: &rt,
            machine: &config.machine,
            workload,
            stats: s,
        };
        experiment::write_json(&path, &rec)?;
    }
    let wall_us = s.wall_ns.max(1) as f64 / 1e3;
    crate::say!(
        "native  preset {}  {}",
        experiment::preset_shown(&config.machine.name, preset_given),
        describe(point, config, workload)
    );
    crate::say!("workload          {}", describe_workload(workload, true));
    crate::say!(
        "requests          {} in {:.0} us ({:.3} per us); every word checked",
        s.requests,
        wall_us,
        s.requests as f64 / wall_us
    );
    crate::say!("handlers          {}   interrupts {}", s.handlers, s.interrupts);
    if std::thread::available_parallelism().map_or(1, |n| n.get())
        < (config.topology.nodes * config.topology.procs_per_node) as usize
    {
        crate::note(format_args!(
            "more threads than cores; the time measures correctness under oversubscription, not speed"
        ));
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
        c.topology.nodes - 1,
        c.policy.compute_procs(c.topology.procs_per_node),
        c.seed
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

fn print_summary(
    p: &Point,
    c: &SimConfig,
    w: &FetchAddConfig,
    h: &HomeMeasures,
    preset_given: Option<&str>,
) -> Result<()> {
    crate::say!("preset {}  {}", experiment::preset_shown(&c.machine.name, preset_given), describe(p, c, w));
    crate::say!("workload          {}", describe_workload(w, false));
    crate::say!("throughput        {:.3} requests/us at the home", h.throughput_msgs_per_us);
    crate::say!(
        "queue delay       mean {:.0} cycles, p99 {} cycles",
        h.mean_queue_delay_cycles,
        h.p99_queue_delay_cycles
    );
    crate::say!("busy-wait share   {:.3} of protocol-processor time", h.pp_busy_wait_fraction);
    crate::say!("home U            {:.3} (target {})", h.home_u, w.home_u);
    crate::say!("interrupts        {}", h.interrupts);
    crate::say!("bus transactions  {:.2} per request", h.bus_transactions_per_request);
    Ok(())
}
