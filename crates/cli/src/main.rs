//! `finegrain`: run one simulation, reproduce a study, calibrate a preset,
//! benchmark. A thin shell over the finegrain crates.

use anyhow::{bail, Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand};
use finegrain::{bench, experiment, native_bench, say};
use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_core::{MachineConfig, Policy, Relinquish, Topology};
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "finegrain",
    version,
    about = "Fine-grain communication on clusters of SMP nodes: simulator and studies"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate one microbenchmark configuration (flags, or a TOML file).
    // `--nodes -1` is a bad value, not an unknown flag.
    #[command(allow_negative_numbers = true)]
    Run(RunArgs),
    /// Simulate one fetch&add configuration (a point of the PDQ study:
    /// who serves the home's handlers, the dispatch discipline, the keys).
    #[command(allow_negative_numbers = true)]
    FetchAdd(finegrain::fetch_add_run::FetchAddArgs),
    /// Run a study from experiments/ and write results, figures and a report.
    Reproduce {
        /// Experiment name (see --list) or path to a .toml file.
        experiment: Option<String>,
        /// The fast version of the study.
        #[arg(long)]
        quick: bool,
        /// Output directory.
        #[arg(long, default_value = "out")]
        out: PathBuf,
        /// List the available experiments.
        #[arg(long, conflicts_with_all = ["quick", "out"])]
        list: bool,
    },
    /// Regenerate one simulated run from its JSON record (a study's
    /// runs/<id>.json or `run --json` output) and check its statistics
    /// come out as recorded.
    Rerun {
        /// The run record.
        record: PathBuf,
        /// Write the regenerated statistics here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Measure a preset's calibration targets (Lmin) back.
    Calibrate {
        /// Preset name or path to a preset .toml file.
        #[arg(default_value = "hpca97")]
        preset: String,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Native active-message ping-pong vs the cache-line floor, crossbeam,
    /// Open MPI and UCX (8, 64, 256 bytes).
    Pingpong {
        /// Fewer round trips (for CI).
        #[arg(long)]
        quick: bool,
        /// Also write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Native one-way streaming rate of 8-byte active messages.
    Rate {
        /// Fewer repetitions (for CI).
        #[arg(long)]
        quick: bool,
        /// Also write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// What a native interrupt (a signal to a computing thread) costs.
    Interrupt {
        /// Fewer repetitions (for CI).
        #[arg(long)]
        quick: bool,
        /// Also write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Native handler throughput on two threads: PDQ vs a mutex per key vs
    /// a single dispatcher (fetch&add handlers, 1, 64 and 4096 keys).
    Pdq {
        /// Fewer repetitions (for CI).
        #[arg(long)]
        quick: bool,
        /// Also write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Simulated messages and events per wall second, one core.
    #[command(allow_negative_numbers = true)]
    Sim {
        /// Repetitions, 1..=1000; the median is reported.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Requests each node's threads make per run, 1..=1e9.
        #[arg(long, default_value_t = 50_000)]
        requests_per_node: u64,
        /// Also write the table as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

/// One run, as flags or as a TOML file with the same field names.
#[derive(Args, Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// TOML file with any of the fields below (flags override it).
    #[arg(long)]
    #[serde(skip)]
    config: Option<PathBuf>,
    /// sim (the simulated machine of the preset) or native (real threads)
    /// [default: sim].
    #[arg(long)]
    platform: Option<String>,
    /// Machine preset name or path [default: hpca97].
    #[arg(long)]
    preset: Option<String>,
    /// single, fixed, fixed:K, floating [default: fixed].
    #[arg(long)]
    policy: Option<String>,
    /// Nodes, 2..=4096 [default: 2].
    #[arg(long)]
    nodes: Option<u32>,
    /// Processors per node, 1..=64 [default: 2].
    #[arg(long)]
    procs_per_node: Option<u32>,
    /// null or fetch [default: null].
    #[arg(long)]
    protocol: Option<String>,
    /// Target compute utilization U in (0, 1); sets the mean compute time
    /// from the measured Lmin. Without it or --compute-cycles, threads do
    /// not compute between requests (U = 0).
    #[arg(long, allow_negative_numbers = true)]
    u: Option<f64>,
    /// Mean compute cycles between requests (instead of --u), at most 1e9
    /// [default: 0]; on platform native a cycle is a nanosecond.
    #[arg(long, allow_negative_numbers = true)]
    compute_cycles: Option<f64>,
    /// Requests each node makes, split over its compute threads,
    /// 1..=1e9 [default: 10000].
    #[arg(long)]
    requests_per_node: Option<u64>,
    /// Interrupt overhead in cycles, 0..=1000000000 (overrides the preset).
    #[arg(long)]
    oint: Option<u64>,
    /// When a processor acting as PP under Floating gives the
    /// role up once its own work can continue: eager, handoff or adaptive
    /// (overrides the preset; native runs take eager or handoff)
    /// [default: the preset's; native: eager].
    #[arg(long)]
    relinquish: Option<String>,
    /// Seed of every random choice, 0..=2^64-1 [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// Write the full run record (configuration, seed, statistics) here.
    #[arg(long)]
    #[serde(skip)]
    json: Option<PathBuf>,
}

impl RunArgs {
    /// Flags override the file; unset fields take documented defaults.
    fn merged(self) -> Result<RunArgs> {
        let Some(path) = &self.config else { return Ok(self) };
        let text = experiment::read_input(path)?;
        let mut file: RunArgs = finegrain_core::config::parse_toml(&path.display().to_string(), &text)?;
        file.preset = experiment::preset_beside(path, file.preset);
        let flag_sets_compute = self.u.is_some() || self.compute_cycles.is_some();
        Ok(RunArgs {
            config: None,
            platform: self.platform.or(file.platform),
            preset: self.preset.or(file.preset),
            policy: self.policy.or(file.policy),
            nodes: self.nodes.or(file.nodes),
            procs_per_node: self.procs_per_node.or(file.procs_per_node),
            protocol: self.protocol.or(file.protocol),
            // Either flag replaces the file's choice of compute time.
            u: if flag_sets_compute { self.u } else { file.u },
            compute_cycles: if flag_sets_compute { self.compute_cycles } else { file.compute_cycles },
            requests_per_node: self.requests_per_node.or(file.requests_per_node),
            oint: self.oint.or(file.oint),
            relinquish: self.relinquish.or(file.relinquish),
            seed: self.seed.or(file.seed),
            json: self.json,
        })
    }
}

#[derive(Serialize)]
struct RunOutput<'a> {
    config: &'a SimConfig,
    workload: &'a MicroConfig,
    /// The U asked for (`--u`), which with Lmin gave the mean compute time.
    target_u: Option<f64>,
    lmin_cycles: Option<f64>,
    stats: &'a finegrain_sim::RunStats,
    perf: Perf,
}

#[derive(Serialize)]
struct Perf {
    wall_seconds: f64,
    events_per_wall_second: f64,
    messages_per_wall_second: f64,
}

fn rerun(record: &std::path::Path, json: Option<PathBuf>) -> Result<()> {
    let r = finegrain::rerun::rerun(record)?;
    write_json(json, &r.stats)?;
    let c = &r.config;
    let what = format!(
        "{}: {} on preset {}, policy {}, {} nodes x {} processors, seed {}",
        record.display(),
        r.workload,
        c.machine.name,
        c.policy.label(),
        c.topology.nodes,
        c.topology.procs_per_node,
        c.seed
    );
    if !r.differences.is_empty() {
        let shown: Vec<&str> = r.differences.iter().take(5).map(String::as_str).collect();
        bail!(
            "{what}: the rerun differs from the record in {} of {} values (the record comes from another version, was edited, or a run is not deterministic): {}",
            r.differences.len(),
            r.fields,
            shown.join("; ")
        );
    }
    say!("{what}: statistics identical to the record ({} values compared)", r.fields);
    Ok(())
}

fn run(args: RunArgs) -> Result<()> {
    let config = args.config.clone();
    let a = args.merged()?;
    experiment::check_writable(a.json.as_deref(), &experiment::run_inputs(config.as_deref(), a.preset.as_deref()))?;
    match a.platform.as_deref().unwrap_or("sim") {
        "sim" => run_sim(a),
        "native" => run_native(a),
        other => bail!("invalid platform = {other}: allowed sim, native"),
    }
}

/// A native run's record: what it ran on (the runtime's whole
/// configuration, seed included, and the preset's machine) and what it
/// measured. Real threads cannot be rerun to the same bytes, but the
/// record says how to run the same configuration again.
#[derive(Serialize)]
struct NativeRecord<'a> {
    platform: &'static str,
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

/// The microbenchmark a run asks for: the mean compute time comes from
/// `compute_cycles`, or from `u` and the platform's measured Lmin (which it
/// returns, to be reported).
fn micro_workload(
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
            let mean = finegrain::scheduling::mean_compute(u, l);
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
    workload.validate().map_err(anyhow::Error::msg)?;
    Ok((workload, lmin))
}

fn run_native(a: RunArgs) -> Result<()> {
    if a.oint.is_some() {
        bail!("invalid oint for platform native: the native interrupt cost is what the machine gives (see finegrain bench interrupt)");
    }
    let preset = a.preset.as_deref().unwrap_or("hpca97");
    let machine = MachineConfig::load(preset)?;
    let policy = Policy::parse(a.policy.as_deref().unwrap_or("fixed"))?;
    let topology = Topology { nodes: a.nodes.unwrap_or(2), procs_per_node: a.procs_per_node.unwrap_or(2) };
    let protocol = Protocol::parse(a.protocol.as_deref().unwrap_or("null")).map_err(anyhow::Error::msg)?;
    let mut rt = finegrain_rt::RtConfig::new(topology, policy);
    if let Some(r) = &a.relinquish {
        rt.relinquish = Relinquish::parse(r)?;
        relinquish_needs_floating(r, &policy)?;
    }
    rt.seed = a.seed.unwrap_or(1);
    rt.segment_bytes = machine.segment_bytes() as usize;
    micro::two_nodes_at_least(topology.nodes).map_err(anyhow::Error::msg)?;
    rt.validate()?;
    let (workload, lmin) =
        micro_workload(&a, protocol, "ns", || Ok(micro::measure_lmin_native(&rt, &machine, protocol)?))?;
    let out = micro::run_native(&rt, &machine, &workload)?;
    let s = &out.stats;
    let compute: Vec<&finegrain_rt::ThreadTimes> = s.threads.iter().filter(|t| t.role == "compute").collect();
    let measured_u = compute.iter().map(|t| t.compute_ns as f64 / t.wall_ns.max(1) as f64).sum::<f64>()
        / compute.len().max(1) as f64;
    // The record first: output closed early must not lose it.
    if let Some(path) = a.json {
        let rec = NativeRecord {
            platform: "native",
            policy: policy.label(),
            nodes: topology.nodes,
            procs_per_node: topology.procs_per_node,
            relinquish: rt.relinquish.label(),
            seed: rt.seed,
            preset,
            config: &rt,
            machine: &machine,
            workload: &workload,
            lmin_ns: lmin,
            measured_u,
            stats: s,
        };
        experiment::write_json(&path, &rec)?;
    }
    say!(
        "platform native  preset {} (segment {} bytes, block {} bytes)  policy {} (relinquish {})  {} nodes x {} \
         threads  protocol {}  seed {}",
        experiment::preset_shown(&machine.name, a.preset.as_deref()),
        machine.segment_bytes(),
        machine.protocol.block_bytes,
        policy.label(),
        rt.relinquish.label(),
        topology.nodes,
        topology.procs_per_node,
        protocol,
        rt.seed
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

fn run_sim(a: RunArgs) -> Result<()> {
    let mut machine = MachineConfig::load(a.preset.as_deref().unwrap_or("hpca97"))?;
    if let Some(o) = a.oint {
        if o > finegrain_core::config::MAX_CYCLES {
            bail!("invalid oint = {o}: allowed at most {} cycles", finegrain_core::config::MAX_CYCLES);
        }
        machine.interrupt.overhead_cycles = o;
    }
    let policy = Policy::parse(a.policy.as_deref().unwrap_or("fixed"))?;
    if let Some(r) = &a.relinquish {
        machine.protocol.relinquish = Relinquish::parse(r)?;
        relinquish_needs_floating(r, &policy)?;
    }
    let topology = Topology { nodes: a.nodes.unwrap_or(2), procs_per_node: a.procs_per_node.unwrap_or(2) };
    let protocol = Protocol::parse(a.protocol.as_deref().unwrap_or("null")).map_err(anyhow::Error::msg)?;
    let config = SimConfig::new(machine, topology, policy, a.seed.unwrap_or(1));
    micro::two_nodes_at_least(topology.nodes).map_err(anyhow::Error::msg)?;
    config.validate()?;
    let (workload, lmin) =
        micro_workload(&a, protocol, "cycles", || Ok(micro::measure_lmin(&config.machine, protocol, config.seed)?))?;
    let mean = workload.mean_compute_cycles;
    let t0 = Instant::now();
    let total = micro::total_requests(&config, &workload);
    let out = finegrain::progress::one_run(total, || micro::simulate(&config, &workload))?;
    let wall = t0.elapsed().as_secs_f64().max(1e-9);
    let s = &out.stats;
    let mhz = config.machine.processor.mhz as f64;
    // The record first: output closed early must not lose it.
    if let Some(path) = a.json {
        let rec = RunOutput {
            config: &config,
            workload: &workload,
            target_u: a.u,
            lmin_cycles: lmin,
            stats: s,
            perf: Perf {
                wall_seconds: wall,
                events_per_wall_second: s.events as f64 / wall,
                messages_per_wall_second: s.messages as f64 / wall,
            },
        };
        experiment::write_json(&path, &rec)?;
    }
    say!(
        "preset {}  policy {} (relinquish {})  {} nodes x {} processors  protocol {}  seed {}",
        experiment::preset_shown(&config.machine.name, a.preset.as_deref()),
        policy.label(),
        config.machine.protocol.relinquish.label(),
        topology.nodes,
        topology.procs_per_node,
        protocol,
        config.seed
    );
    // Everything else `run` was given, so the output alone regenerates it.
    say!(
        "oint {} cycles  mean compute {mean} cycles  requests per node {}",
        config.machine.interrupt.overhead_cycles,
        workload.requests_per_node
    );
    if let (Some(l), Some(u)) = (lmin, a.u) {
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
    say!("{} events, {} messages in {:.3} s ({:.0} messages/s)", s.events, s.messages, wall, s.messages as f64 / wall);
    Ok(())
}

/// The seed `finegrain calibrate` measures Lmin with.
const CALIBRATION_SEED: u64 = 1;

fn calibrate(preset: &str) -> Result<()> {
    let machine = MachineConfig::load(preset)?;
    let Some(cal) = machine.calibration.clone() else {
        bail!("preset {preset} has no [calibration] targets to measure");
    };
    say!(
        "preset {}: Lmin under Fixed on an idle machine (2 nodes x 2 processors, one requester, seed {CALIBRATION_SEED})",
        machine.name
    );
    say!("{:<10} {:>12} {:>10} {:>11} {:>8}  ok", "protocol", "cycles", "us", "target us", "error");
    let mut bad = Vec::new();
    for (p, target) in [(Protocol::Null, cal.lmin_null_us), (Protocol::Fetch, cal.lmin_fetch_us)] {
        let l = micro::measure_lmin(&machine, p, CALIBRATION_SEED)?;
        let us = machine.cycles_to_us(l);
        let err = (us - target) / target;
        let ok = err.abs() <= cal.tolerance;
        say!(
            "{:<10} {:>12.1} {:>10.3} {:>11.3} {:>7.1}%  {}",
            p.to_string(),
            l,
            us,
            target,
            err * 100.0,
            if ok { "yes" } else { "NO" }
        );
        if !ok {
            bad.push(p.to_string());
        }
    }
    if !bad.is_empty() {
        bail!(
            "Lmin of {} is off its target by more than calibration.tolerance = {} (a fraction of the target)",
            bad.join(", "),
            cal.tolerance
        );
    }
    Ok(())
}

/// The command line without the program name, for naming what it asked
/// for in a message (`std::env::args` would panic on a non-UTF-8 argument).
fn lossy_args() -> Vec<String> {
    std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect()
}

/// Joins a flag and a following signed number into `--flag=value`: clap
/// takes a value that starts with `-` only if it looks like digits, so
/// `--u -inf`, `--u -nan` or `--u -.5` would read as an unknown short flag
/// `-i`; joined, the value reaches the flag's own check, which says what is
/// allowed.
fn join_signed_values(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let command = Cli::command();
    let mut out = Vec::with_capacity(args.len());
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        if arg == "--" {
            // What follows is positional, whatever it looks like.
            out.push(arg);
            out.extend(args);
            break;
        }
        let joined = match (arg.to_str(), args.peek().and_then(|v| v.to_str())) {
            (Some(flag), Some(value))
                if value.starts_with('-') && value.parse::<f64>().is_ok() && takes_a_value(&command, flag) =>
            {
                Some(format!("{flag}={value}"))
            }
            _ => None,
        };
        match joined {
            Some(j) => {
                args.next();
                out.push(j.into());
            }
            None => out.push(arg),
        }
    }
    out
}

/// Whether `--long` is a flag of some subcommand that takes a value.
fn takes_a_value(command: &clap::Command, flag: &str) -> bool {
    let Some(long) = flag.strip_prefix("--").filter(|l| !l.is_empty() && !l.contains('=')) else { return false };
    command.get_arguments().any(|a| a.get_long() == Some(long) && a.get_action().takes_values())
        || command.get_subcommands().any(|c| takes_a_value(c, flag))
}

/// clap's error as one line: the problem and what it names (the lines
/// before the usage), or for a missing subcommand the ones there are.
fn one_line_usage_error(e: &clap::Error) -> String {
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return missing_subcommand(&lossy_args());
    }
    if let Some(msg) = bad_value(e) {
        return msg;
    }
    let rendered = e.render().to_string();
    let words: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(|l| l.trim().trim_start_matches("error: "))
        .filter(|l| !l.is_empty())
        .collect();
    if words.is_empty() {
        "invalid arguments".into()
    } else {
        words.join(" ")
    }
}

/// A flag's value that does not parse, in words: what kind of value the
/// flag takes and, from its help, the values allowed (Rust's parse errors
/// say only what went wrong, e.g. "invalid digit found in string").
fn bad_value(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::ValueValidation {
        return None;
    }
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (flag, value) = (text(ContextKind::InvalidArg)?, text(ContextKind::InvalidValue)?);
    let cause = std::error::Error::source(e).map(|c| c.to_string()).unwrap_or_default();
    let expected = if cause.contains(" is not in ") || cause.contains("too large") || cause.contains("too small") {
        "out of range"
    } else if cause.contains("integer") || cause.contains("digit") {
        "expected a whole number"
    } else if cause.contains("float") {
        "expected a number"
    } else {
        return None;
    };
    let long = flag.trim_start_matches('-').split(' ').next().unwrap_or_default();
    // The first clause of the help names what the flag is and its range.
    let help = flag_help(long)
        .map(|h| h.split("; ").next().unwrap_or_default().to_string())
        .map(|h| format!(" (--{long}: {h})"))
        .unwrap_or_default();
    Some(format!("invalid value '{value}' for '{flag}': {expected}{help}"))
}

/// The help line of flag `--long` of the subcommand the command line names.
fn flag_help(long: &str) -> Option<String> {
    let (cmd, _) = named_subcommand(&lossy_args());
    let arg = cmd.get_arguments().find(|a| a.get_long() == Some(long))?;
    Some(arg.get_help()?.to_string())
}

/// The deepest subcommand the command line `args` (without the program
/// name) names, and the words naming it.
fn named_subcommand(args: &[String]) -> (clap::Command, Vec<String>) {
    let mut cmd = Cli::command();
    let mut path = vec!["finegrain".to_string()];
    for a in args {
        match cmd.find_subcommand(a) {
            Some(sub) => {
                path.push(a.clone());
                cmd = sub.clone();
            }
            None => break,
        }
    }
    (cmd, path)
}

/// Names the subcommands that the command line `args` (without the program
/// name) stops short of choosing between.
fn missing_subcommand(args: &[String]) -> String {
    let (cmd, path) = named_subcommand(args);
    let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).filter(|n| *n != "help").collect();
    format!("`{}` needs a subcommand: one of {}", path.join(" "), names.join(", "))
}

fn main_inner() -> Result<()> {
    let cli = match Cli::try_parse_from(join_signed_values(std::env::args_os().collect())) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version: their text is the output, so failing to
            // write it is an error.
            e.print().context("writing standard output")?;
            return Ok(());
        }
        Err(e) => bail!("{} (see finegrain --help)", one_line_usage_error(&e)),
    };
    match cli.command {
        Command::Run(args) => run(args),
        Command::FetchAdd(args) => finegrain::fetch_add_run::run(args),
        Command::Reproduce { experiment: name, quick, out, list } => {
            if list {
                if let Some(name) = name {
                    bail!("--list takes no experiment name (got '{name}'): it lists them all");
                }
                for (n, _) in experiment::EXPERIMENTS {
                    let src = experiment::find(n)?;
                    let (_, title) = experiment::header(&src)?;
                    say!("{n:<20} {title}");
                }
                return Ok(());
            }
            let Some(name) = name else {
                bail!("missing experiment name: give one of `finegrain reproduce --list`");
            };
            let t0 = Instant::now();
            let report = experiment::reproduce(&name, quick, &out)?;
            let text = std::fs::read_to_string(&report)?;
            for line in text.lines().filter(|l| l.starts_with("claim ")) {
                say!("{line}");
            }
            say!("report: {} ({:.1} s)", report.display(), t0.elapsed().as_secs_f64());
            Ok(())
        }
        Command::Rerun { record, json } => {
            experiment::check_writable(json.as_deref(), &[(Some(&record), "record")])?;
            rerun(&record, json)
        }
        Command::Calibrate { preset } => calibrate(&preset),
        Command::Bench { what: BenchCommand::Pingpong { quick, json } } => {
            experiment::check_writable(json.as_deref(), &[])?;
            let rows = native_bench::pingpong(effort(quick))?;
            write_json(json, &rows)?;
            native_bench::print_pingpong(&rows)
        }
        Command::Bench { what: BenchCommand::Rate { quick, json } } => {
            experiment::check_writable(json.as_deref(), &[])?;
            let row = native_bench::rate(effort(quick))?;
            write_json(json, &row)?;
            native_bench::print_rate(&row)
        }
        Command::Bench { what: BenchCommand::Interrupt { quick, json } } => {
            experiment::check_writable(json.as_deref(), &[])?;
            let row = native_bench::interrupt(quick)?;
            write_json(json, &row)?;
            native_bench::print_interrupt(&row)
        }
        Command::Bench { what: BenchCommand::Pdq { quick, json } } => {
            experiment::check_writable(json.as_deref(), &[])?;
            let rows = native_bench::pdq(effort(quick))?;
            write_json(json, &rows)?;
            native_bench::print_pdq(&rows)
        }
        Command::Bench { what: BenchCommand::Sim { rounds, requests_per_node, json } } => {
            experiment::check_writable(json.as_deref(), &[])?;
            let rows = bench::sim(rounds, requests_per_node)?;
            write_json(json, &rows)?;
            bench::print_sim(&rows)
        }
    }
}

fn effort(quick: bool) -> finegrain_rt::bench::Effort {
    if quick {
        finegrain_rt::bench::Effort::QUICK
    } else {
        finegrain_rt::bench::Effort::DEFAULT
    }
}

/// Writes `value` to the `--json` file, if one was given.
fn write_json<T: Serialize>(path: Option<PathBuf>, value: &T) -> Result<()> {
    path.map_or(Ok(()), |p| experiment::write_json(&p, value))
}

/// A message on one line whatever the user typed: values and paths are
/// echoed back, and a newline (or a Unicode line or paragraph separator) in
/// one would split the error. A message longer than [`ERROR_CHARS`] loses
/// its middle, which only a huge echoed value makes that long, so what is
/// wrong (the start) and what is allowed (the end) both stay.
fn one_line(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(4 * ERROR_CHARS));
    let chars = msg.chars().count();
    let (head, tail) = if chars > ERROR_CHARS { (ERROR_CHARS / 2, ERROR_CHARS / 2) } else { (chars, 0) };
    for (i, c) in msg.chars().enumerate() {
        if i == head && tail > 0 {
            out.push_str(&format!(" [... {} characters left out ...] ", chars - head - tail));
        }
        if i >= head && i < chars - tail {
            continue;
        }
        if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Most characters of an error message shown whole; the longest the
/// program writes itself are a few hundred.
const ERROR_CHARS: usize = 1000;

/// Whether `e` comes from writing into a pipe whose reader has gone.
fn closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

fn main() -> ExitCode {
    match main_inner() {
        Ok(()) => ExitCode::SUCCESS,
        // Output piped into `head` and closed early ends the program
        // quietly, with the status a shell gives a process ended by
        // SIGPIPE, as for other command-line tools. (SIGPIPE itself stays
        // ignored, as Rust sets it: a note on a closed standard error must
        // not end a run before its record is written.)
        Err(e) if closed_pipe(&e) => ExitCode::from(141),
        Err(e) => {
            // One line: the outermost context, then its causes.
            let msg = e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ");
            // Nowhere is left to report a failure to write this: the exit
            // status still says the command failed.
            let _ = writeln!(std::io::stderr().lock(), "error: {}", one_line(&msg));
            ExitCode::from(2)
        }
    }
}
