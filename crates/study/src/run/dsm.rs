//! `finegrain run dsm --program NAME`: one of the PDQ paper's
//! shared-memory applications over the fine-grain DSM, on the simulated
//! machine under one of the paper's systems or natively with protocol
//! threads serving the DSM's handlers, its answer checked against the
//! sequential reference.

use super::{more_threads_than_cores, Common, NativeReport, RunOptions, SimRun, Simulated};
use crate::experiment::preset_shown;
use anyhow::{bail, Result};
use finegrain_apps::dsm::spec::{DsmMeasures, DsmRun, DsmSpec, ProgramSpec, PROGRAMS};
use finegrain_apps::splitc::spec::Size;
use finegrain_apps::{Measures, Threads, WorkloadSpec};
use finegrain_core::config::ServingSystem;
use finegrain_core::{MachineConfig, RunConfig};
use finegrain_dsm::DsmConfig;
use finegrain_rt::Placement;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// A shared-memory program's run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct DsmOptions {
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub common: Common,
    /// barnes, cholesky, em3d, fft, fmm, radix or water-sp.
    #[cfg_attr(feature = "clap", arg(long))]
    pub program: Option<String>,
    /// The program's input: tiny, quick or paper [default: tiny].
    #[cfg_attr(feature = "clap", arg(long))]
    pub size: Option<String>,
    /// Who runs the DSM's handlers: s-coma, hurricane-1pp|2pp|4pp,
    /// hurricane1-1pp|2pp|4pp or mult (natively hurricane1-* and mult)
    /// [default: hurricane-1pp; natively hurricane1-1pp].
    #[cfg_attr(feature = "clap", arg(long))]
    pub system: Option<String>,
    /// The DSM's coherence unit in bytes: 32, 64 or 128 [default: 64].
    #[cfg_attr(feature = "clap", arg(long))]
    pub block_bytes: Option<u32>,
    /// Nodes, up to 4096 [default: 2].
    #[cfg_attr(feature = "clap", arg(long))]
    pub nodes: Option<u32>,
    /// Compute processors per node, 1..=64 with the system's protocol
    /// processors [default: 2].
    #[cfg_attr(feature = "clap", arg(long))]
    pub compute_procs: Option<u32>,
}

const DEFAULT_NODES: u32 = 2;
const DEFAULT_COMPUTE_PROCS: u32 = 2;
const BLOCK_BYTES: [u32; 3] = [32, 64, 128];

/// The systems with a native meaning: protocol threads of the node's own
/// (hurricane1) or its idle compute threads (mult).
const NATIVE_SYSTEMS: &str = "hurricane1-1pp, hurricane1-2pp, hurricane1-4pp, mult";

impl DsmOptions {
    /// The program named, its input drawn from the run's seed.
    fn program(&self) -> Result<ProgramSpec> {
        let Some(name) = self.program.as_deref() else {
            bail!("missing program for workload dsm: allowed {}", PROGRAMS.join(", "));
        };
        Ok(ProgramSpec::named(name, self.size()?, self.common.seed())?)
    }

    fn size(&self) -> Result<Size> {
        Ok(Size::parse(self.size.as_deref().unwrap_or("tiny"))?)
    }

    fn preset(&self) -> &str {
        self.common.preset.as_deref().unwrap_or("hpca99")
    }

    fn block_bytes(&self) -> Result<u32> {
        let b = self.block_bytes.unwrap_or(64);
        if !BLOCK_BYTES.contains(&b) {
            bail!("invalid block_bytes = {b}: allowed 32, 64, 128");
        }
        Ok(b)
    }

    /// The system asked for; natively only those a node's threads can be.
    fn system(&self, native: Option<&str>) -> Result<ServingSystem> {
        let default = if native.is_some() { "hurricane1-1pp" } else { "hurricane-1pp" };
        let system = ServingSystem::parse(self.system.as_deref().unwrap_or(default))?;
        if let Some(platform) = native {
            if matches!(system, ServingSystem::Scoma | ServingSystem::Hurricane { .. }) {
                bail!(
                    "invalid system = {system} on platform {platform}: it is simulated only (no hardware protocol \
                     engine or network-interface processor here); allowed {NATIVE_SYSTEMS}"
                );
            }
        }
        Ok(system)
    }

    /// The run's shape asked for under `system`, checked.
    fn dsm_run(&self, system: ServingSystem) -> Result<DsmRun> {
        let compute = self.compute_procs.unwrap_or(DEFAULT_COMPUTE_PROCS);
        let most = 64 - system.protocol_procs();
        if !(1..=most).contains(&compute) {
            bail!(
                "invalid compute_procs = {compute} with system {system}: allowed 1..={most} (64 processors per node)"
            );
        }
        let nodes = self.nodes.unwrap_or(DEFAULT_NODES);
        let run = DsmRun {
            system,
            nodes,
            compute_procs: compute,
            block_bytes: self.block_bytes()?,
            seed: self.common.seed(),
        };
        run.run_config().validate()?;
        Ok(run)
    }

    /// The native runtime's configuration asked for, checked (with the
    /// program and its DSM) before any node starts.
    fn native_config(&self, platform: &str) -> Result<finegrain_rt::RtConfig> {
        let run = self.dsm_run(self.system(Some(platform))?)?.run_config();
        let mut rt = finegrain_rt::RtConfig::of(run);
        self.common.apply_runtime_fields(&mut rt);
        rt.validate()?;
        let dsm = DsmConfig { block_bytes: self.block_bytes()?, ..DsmConfig::default() };
        DsmSpec { program: self.program()?, dsm }.validate(&rt.run)?;
        Ok(rt)
    }
}

impl RunOptions for DsmOptions {
    const WORKLOAD: &'static str = "dsm";
    const NATIVE_RECORDS: bool = false;
    type Native = NativeRun;

    fn common(&self) -> &Common {
        &self.common
    }

    fn simulated(&self) -> Result<SimRun> {
        let machine = MachineConfig::load(self.preset())?;
        let program = self.program()?;
        if machine.dsm.is_none() {
            bail!(
                "invalid preset = {} for workload dsm: it has no [dsm] section (the DSM handlers' instructions); \
                 allowed a preset with one, such as hpca99",
                self.preset()
            );
        }
        let (config, spec) = self.dsm_run(self.system(None)?)?.simulated(&machine, program.label(), self.size()?)?;
        let workload = WorkloadSpec::Dsm(spec);
        workload.validate(&config)?;
        Ok(SimRun::of(config, workload, &self.common))
    }

    fn native_nodes(&self, platform: &str) -> Result<u32> {
        Ok(self.native_config(platform)?.run.topology.nodes)
    }

    /// The compute threads and the system's protocol threads.
    fn mpi_threads(&self) -> Result<u32> {
        Ok(self.native_config("mpi")?.run.topology.procs_per_node)
    }

    fn native(&self, on: Placement<'_>) -> Result<Option<NativeRun>> {
        let rt = self.native_config(on.name())?;
        // Only threads of one process can keep the shadow copy; no native
        // transport promises the order of messages from different threads.
        let dsm = DsmConfig {
            block_bytes: self.block_bytes()?,
            check_coherence: matches!(on, Placement::Native),
            ..DsmConfig::default()
        };
        let spec = DsmSpec { program: self.program()?, dsm };
        let threads = Threads { on, config: rt.clone(), machine: MachineConfig::load(self.preset())? };
        let (stats, measures) = spec.run(&threads)?;
        if !on.has_results() {
            return Ok(None);
        }
        let counts = [stats.messages, stats.handlers, stats.interrupts];
        Ok(Some(NativeRun { platform: on.name(), rt, spec, measures, counts }))
    }
}

/// A shared-memory program on real threads, done.
pub struct NativeRun {
    platform: &'static str,
    rt: finegrain_rt::RtConfig,
    spec: DsmSpec,
    measures: DsmMeasures,
    /// Messages, handlers and interrupts.
    counts: [u64; 3],
}

impl NativeReport for NativeRun {
    fn write_record(&self, _path: &Path) -> Result<()> {
        bail!(
            "invalid json with workload dsm on platform {}: records are written for simulated runs only",
            self.platform
        )
    }

    fn oversubscribed(&self) -> bool {
        let t = self.rt.run.topology;
        more_threads_than_cores(t.nodes * t.procs_per_node)
    }
}

impl fmt::Display for NativeRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let run = &self.rt.run;
        writeln!(f, "platform {}  {}", self.platform, describe(ServingSystem::of_run(run), run, &self.spec))?;
        fmt_measures(f, &self.measures, |ns| format!("{:.1} us ({ns} ns)", ns as f64 / 1e3))?;
        let [messages, handlers, interrupts] = self.counts;
        writeln!(f, "messages          {messages}  handlers {handlers}  interrupts {interrupts}")
    }
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
fn fmt_measures(f: &mut fmt::Formatter<'_>, m: &DsmMeasures, unit: impl Fn(u64) -> String) -> fmt::Result {
    writeln!(f, "input             {}", m.input)?;
    writeln!(f, "answer            checked against the sequential reference")?;
    writeln!(f, "run time          {}", unit(m.time))?;
    // The values in one column, past the longest name.
    let width = m.phase_max.keys().chain(m.count_sum.keys()).map(|k| k.len() + 1).max().unwrap_or(0).max(12);
    for (phase, &t) in &m.phase_max {
        writeln!(f, "phase {phase:<width$}{} on the slowest thread", unit(t))?;
    }
    for (count, &n) in &m.count_sum {
        writeln!(f, "count {count:<width$}{n}")?;
    }
    Ok(())
}

/// A simulated run of a program, as `finegrain run` shows it.
pub(super) fn fmt_simulated(f: &mut fmt::Formatter<'_>, done: &Simulated, spec: &DsmSpec) -> fmt::Result {
    let c = &done.run.config;
    writeln!(
        f,
        "preset {}  {}",
        preset_shown(&c.machine.name, done.run.preset.as_deref()),
        describe(ServingSystem::of_run(&c.run), &c.run, spec)
    )?;
    match &done.measures {
        Some(Measures::Dsm(m)) => {
            fmt_measures(f, m, |cycles| format!("{:.1} us ({cycles} cycles)", c.machine.cycles_to_us(cycles as f64)))?
        }
        _ => writeln!(f, "measures          none (a DSM run without its measures)")?,
    }
    let s = &done.stats;
    writeln!(
        f,
        "messages          {} ({} one-way, {} replies to them)  handlers {}  interrupts {}",
        s.messages, s.one_way, s.one_way_replies, s.handlers, s.interrupts
    )
}
