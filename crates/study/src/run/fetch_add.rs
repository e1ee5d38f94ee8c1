//! `finegrain run fetch-add` (`finegrain fetch-add`): one point of the
//! PDQ study, simulated or on real threads. Requesters on other nodes send
//! fetch&add requests to words at node 0 (the home); the key is the word.

use super::{more_threads_than_cores, Common, NativeReport, RunOptions, SimRun, Simulated};
use crate::experiment::preset_shown;
use crate::output::write_json;
use anyhow::{bail, Result};
use finegrain_apps::fetch_add::{self, FetchAddConfig, KeySkew};
use finegrain_apps::serving::Point;
use finegrain_apps::{Threads, WorkloadSpec};
use finegrain_core::{Discipline, MachineConfig, ServingKind};
use finegrain_rt::Placement;
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// One point of the PDQ study.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct FetchAddOptions {
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub common: Common,
    /// Who runs the home's handlers: embedded, smp or mult [default:
    /// embedded; native: smp].
    #[cfg_attr(feature = "clap", arg(long))]
    pub kind: Option<String>,
    /// serial, pdq, spin-lock or static [default: pdq].
    #[cfg_attr(feature = "clap", arg(long))]
    pub discipline: Option<String>,
    /// Protocol processors at the home, 1..=63 with the compute processors
    /// within 64 (for mult: most idle compute processors serving at once,
    /// 1..=compute processors) [default: 1].
    #[cfg_attr(feature = "clap", arg(long))]
    pub protocol_procs: Option<u32>,
    /// Distinct words (keys) at the home, 1 up to what the preset's home
    /// protocol table holds (16384 for hpca99 with 8 compute processors)
    /// [default: 4096; native: 64].
    #[cfg_attr(feature = "clap", arg(long))]
    pub keys: Option<u64>,
    /// uniform or zipf:S, S in 0.01..=100 [default: uniform].
    #[cfg_attr(feature = "clap", arg(long))]
    pub skew: Option<String>,
    /// Nodes besides the home, 1..=4095 [default: 4].
    #[cfg_attr(feature = "clap", arg(long))]
    pub requester_nodes: Option<u32>,
    /// Compute processors per node, 1..=64 with the protocol processors of
    /// embedded or smp within 64 [default: 8].
    #[cfg_attr(feature = "clap", arg(long))]
    pub compute_procs: Option<u32>,
    /// Handler instructions besides its accesses, 0..=1e9 [default: 97, as
    /// in the pdq-micro study].
    #[cfg_attr(feature = "clap", arg(long))]
    pub handler_cycles: Option<u64>,
    /// Requests each requester thread sends, 1..=1e9 [default: 1500].
    #[cfg_attr(feature = "clap", arg(long))]
    pub requests_per_thread: Option<u64>,
    /// Home compute utilization in [0, 1] [default: 0.5].
    #[cfg_attr(feature = "clap", arg(long, allow_negative_numbers = true))]
    pub home_u: Option<f64>,
    /// Mean home compute burst in cycles, 1..=1e9 [default: 2000].
    #[cfg_attr(feature = "clap", arg(long, allow_negative_numbers = true))]
    pub home_burst_cycles: Option<f64>,
    /// Mean requester computation before each request in cycles, 0..=1e9
    /// [default: 0].
    #[cfg_attr(feature = "clap", arg(long, allow_negative_numbers = true))]
    pub think_cycles: Option<f64>,
    /// Share of requests with the sequential key, in [0, 1] [default: 0].
    #[cfg_attr(feature = "clap", arg(long, allow_negative_numbers = true))]
    pub sequential_fraction: Option<f64>,
}

/// Distinct words a native run uses unless told: within what the native
/// home's protocol table holds with the default preset and threads.
const NATIVE_KEYS: u64 = 64;

/// A point built and checked: who serves, the machine, the workload.
struct Built {
    point: Point,
    config: SimConfig,
    workload: FetchAddConfig,
}

impl FetchAddOptions {
    /// Builds and checks the point asked for. `native` picks the defaults
    /// of real threads: there is no network-interface processor to embed
    /// handlers in, and the native home's protocol table holds fewer words.
    fn point(&self, native: bool) -> Result<Built> {
        let machine = MachineConfig::load(self.common.preset.as_deref().unwrap_or("hpca99"))?;
        let default_kind = if native { "smp" } else { "embedded" };
        let point = Point {
            kind: ServingKind::parse(self.kind.as_deref().unwrap_or(default_kind))?,
            discipline: Discipline::parse(self.discipline.as_deref().unwrap_or("pdq"))?,
            protocol_procs: self.protocol_procs.unwrap_or(1),
        };
        point.check()?;
        let requester_nodes = self.requester_nodes.unwrap_or(4);
        let compute_procs = self.compute_procs.unwrap_or(8);
        check_sizes(&point, requester_nodes, compute_procs)?;
        if native && self.handler_cycles.is_some() {
            bail!(
                "invalid handler_cycles with platform native: a native handler takes what its code takes (the \
                 simulated handler's extra cycles have nothing to stand for on real threads); allowed only with \
                 platform sim"
            );
        }
        let config = point.sim_config(&machine, requester_nodes, compute_procs, self.common.seed());
        config.validate()?;
        let workload = FetchAddConfig {
            keys: self.keys.unwrap_or(if native { NATIVE_KEYS } else { 4096 }),
            skew: KeySkew::parse(self.skew.as_deref().unwrap_or("uniform"))?,
            handler_cycles: self.handler_cycles.unwrap_or(97),
            sequential_fraction: self.sequential_fraction.unwrap_or(0.0),
            requests_per_thread: self.requests_per_thread.unwrap_or(1500),
            think_cycles: self.think_cycles.unwrap_or(0.0),
            home_u: self.home_u.unwrap_or(0.5),
            home_burst_cycles: self.home_burst_cycles.unwrap_or(2000.0),
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

    /// The point on real threads, checked: Fixed(k) protocol threads for
    /// smp, Floating for mult.
    fn native_point(&self) -> Result<(Built, finegrain_rt::RtConfig)> {
        let built = self.point(true)?;
        if built.point.kind == ServingKind::Embedded {
            bail!(
                "invalid kind = embedded for platform native: allowed smp, mult (there is no network-interface \
                 processor)"
            );
        }
        // The same run settings as the simulated point (Mult: at most K
        // idle threads serve at once, as simulated), with the runtime's
        // defaults.
        let mut rt = finegrain_rt::RtConfig::of(built.config.run.clone());
        self.common.apply_runtime_fields(&mut rt);
        rt.validate()?;
        Ok((built, rt))
    }
}

impl RunOptions for FetchAddOptions {
    const WORKLOAD: &'static str = "fetch-add";
    const NATIVE_RECORDS: bool = true;
    type Native = NativeRun;

    fn common(&self) -> &Common {
        &self.common
    }

    fn simulated(&self) -> Result<SimRun> {
        let b = self.point(false)?;
        Ok(SimRun::of(b.config, WorkloadSpec::FetchAdd(b.workload), &self.common))
    }

    /// The requester nodes and the home.
    fn native_nodes(&self, _platform: &str) -> Result<u32> {
        self.native_point().map(|(b, _)| b.config.run.topology.nodes)
    }

    fn mpi_threads(&self) -> Result<u32> {
        Ok(2)
    }

    /// Every word is checked afterwards.
    fn native(&self, on: Placement<'_>) -> Result<Option<NativeRun>> {
        let (Built { point, config, workload }, rt) = self.native_point()?;
        let out = fetch_add::run(&Threads { on, config: rt.clone(), machine: config.machine.clone() }, &workload)?;
        if !on.has_results() {
            return Ok(None);
        }
        // The workload's own requests: across processes each requester
        // also tells the home it is done, with one more request of its own.
        let requests = out.outputs.iter().map(|o| o.requests).sum();
        Ok(Some(NativeRun {
            platform: on.name(),
            preset: self.common.preset.clone(),
            point,
            config,
            workload,
            rt,
            requests,
            stats: out.stats,
        }))
    }
}

/// A fetch&add point on real threads, done.
pub struct NativeRun {
    platform: &'static str,
    preset: Option<String>,
    point: Point,
    config: SimConfig,
    workload: FetchAddConfig,
    rt: finegrain_rt::RtConfig,
    requests: u64,
    stats: finegrain_rt::RtStats,
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

impl NativeReport for NativeRun {
    fn write_record(&self, path: &Path) -> Result<()> {
        write_json(
            path,
            &NativeRecord {
                platform: self.platform,
                workload_name: "fetch-add",
                preset: self.preset.as_deref().unwrap_or(&self.config.machine.name),
                kind: self.point.kind,
                discipline: self.point.discipline,
                protocol_procs: self.point.protocol_procs,
                seed: self.rt.run.seed,
                config: &self.rt,
                machine: &self.config.machine,
                workload: &self.workload,
                stats: &self.stats,
            },
        )
    }

    fn oversubscribed(&self) -> bool {
        let t = self.config.run.topology;
        more_threads_than_cores(t.nodes * t.procs_per_node)
    }
}

impl fmt::Display for NativeRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        let wall_us = s.wall_ns.max(1) as f64 / 1e3;
        writeln!(
            f,
            "{}  preset {}  {}",
            self.platform,
            preset_shown(&self.config.machine.name, self.preset.as_deref()),
            describe(&self.point, &self.config, &self.workload)
        )?;
        writeln!(f, "workload          {}", describe_workload(&self.workload, true))?;
        let requests = self.requests;
        let notices = s.requests - requests;
        let notices = if notices > 0 { format!(" (and {notices} requester-done notices)") } else { String::new() };
        writeln!(
            f,
            "requests          {requests} in {wall_us:.0} us ({:.3} per us); every word checked{notices}",
            requests as f64 / wall_us
        )?;
        writeln!(f, "handlers          {}   interrupts {}", s.handlers, s.interrupts)
    }
}

/// A simulated point, as `finegrain run` shows it: what it measured at the
/// home.
pub(super) fn fmt_simulated(f: &mut fmt::Formatter<'_>, done: &Simulated, w: &FetchAddConfig) -> fmt::Result {
    let c = &done.run.config;
    let point = match Point::of_config(c) {
        Some(p) => describe(&p, c, w),
        None => "a configuration that names no fetch&add point".to_string(),
    };
    let h = fetch_add::home_measures(&c.machine, &done.stats);
    writeln!(f, "preset {}  {point}", preset_shown(&c.machine.name, done.run.preset.as_deref()))?;
    writeln!(f, "workload          {}", describe_workload(w, false))?;
    writeln!(f, "throughput        {:.3} requests/us at the home", h.throughput_msgs_per_us)?;
    writeln!(
        f,
        "queue delay       mean {:.0} cycles, p99 {} cycles",
        h.mean_queue_delay_cycles, h.p99_queue_delay_cycles
    )?;
    writeln!(f, "busy-wait share   {:.3} of protocol-processor time", h.pp_busy_wait_fraction)?;
    writeln!(f, "home U            {:.3} (target {})", h.home_u, w.home_u)?;
    writeln!(f, "interrupts        {}", h.interrupts)?;
    writeln!(f, "bus transactions  {:.2} per request", h.bus_transactions_per_request)?;
    let home = &done.stats.nodes[0];
    writeln!(f, "home bus          {}", home.bus.summary(home.last_handler_end))
}

/// Node sizes in the user's terms (the machine adds the protocol
/// processors to the compute ones, and the home to the requesters).
fn check_sizes(p: &Point, requester_nodes: u32, compute_procs: u32) -> Result<()> {
    crate::studies::pdq_micro::check_requester_nodes(requester_nodes)?;
    let (most, extra) = match p.kind {
        ServingKind::Embedded | ServingKind::Smp => {
            (64u32.saturating_sub(p.protocol_procs), " with the protocol processors")
        }
        ServingKind::Mult => (64, ""),
    };
    if most == 0 {
        bail!(
            "invalid protocol_procs = {}: allowed 1..=63 for {} (a node has at most 64 processors, one at least \
             computes)",
            p.protocol_procs,
            p.kind.label()
        );
    }
    if !(1..=most).contains(&compute_procs) {
        if (1..64).contains(&compute_procs) && p.kind != ServingKind::Mult {
            // Too many together: name the protocol processors too.
            bail!(
                "invalid protocol_procs = {} with compute_procs = {compute_procs}: a node has at most 64 \
                 processors, so allowed protocol_procs 1..={} or compute_procs 1..={most}",
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
