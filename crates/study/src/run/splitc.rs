//! `finegrain run splitc --program NAME`: one of the co-processor paper's
//! Split-C programs (or a primitive's timing run) on the simulated machine
//! or natively, its answer checked against the sequential reference.

use super::{Common, NativeReport, RunOptions, SimRun, Simulated};
use crate::experiment::preset_shown;
use anyhow::{bail, Result};
use finegrain_apps::splitc::spec::{program_names, ProgramMeasures, ProgramSpec, Size};
use finegrain_apps::{Measures, Threads, WorkloadSpec};
use finegrain_core::{CoprocLibrary, MachineConfig, Policy, Topology};
use finegrain_rt::Placement;
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// A Split-C program's run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct SplitcOptions {
    #[serde(flatten)]
    #[cfg_attr(feature = "clap", command(flatten))]
    pub common: Common,
    /// A program of the co-processor paper (bitonic, cannon-aligned, fft,
    /// radix, wator...) or primitives:get|put|store|bulk-store|bulk-put.
    #[cfg_attr(feature = "clap", arg(long))]
    pub program: Option<String>,
    /// The program's input: tiny, quick or paper [default: quick].
    #[cfg_attr(feature = "clap", arg(long))]
    pub size: Option<String>,
    /// single or coprocessor:main-am|coproc-am|optimized [default:
    /// coprocessor:main-am; natively single].
    #[cfg_attr(feature = "clap", arg(long))]
    pub policy: Option<String>,
    /// Nodes, 2..=4096 [default: 16, the paper's machine].
    #[cfg_attr(feature = "clap", arg(long))]
    pub nodes: Option<u32>,
    /// Processors per node: 1 (Split-C runs one thread per node).
    #[cfg_attr(feature = "clap", arg(long))]
    pub procs_per_node: Option<u32>,
}

/// The paper's machine: 16 nodes (IPPS 1996 Section 5.3).
const DEFAULT_NODES: u32 = 16;

impl SplitcOptions {
    /// The program named, at the size asked for.
    fn program(&self) -> Result<ProgramSpec> {
        let Some(name) = self.program.as_deref() else {
            bail!("missing program for workload splitc: allowed {}", program_names());
        };
        let size = Size::parse(self.size.as_deref().unwrap_or("quick"))?;
        Ok(ProgramSpec::named(name, size)?)
    }

    /// Split-C runs one thread per node.
    fn topology(&self) -> Result<Topology> {
        if let Some(p) = self.procs_per_node.filter(|&p| p != 1) {
            bail!("invalid procs_per_node = {p} for workload splitc: allowed 1 (Split-C runs one thread per node)");
        }
        Ok(Topology { nodes: self.nodes.unwrap_or(DEFAULT_NODES), procs_per_node: 1 })
    }

    fn machine(&self) -> Result<MachineConfig> {
        Ok(MachineConfig::load(self.common.preset.as_deref().unwrap_or("ipps96"))?)
    }

    /// The native runtime's configuration asked for, checked.
    fn native_config(&self) -> Result<finegrain_rt::RtConfig> {
        let policy = Policy::parse(self.policy.as_deref().unwrap_or("single"))?;
        let mut rt = finegrain_rt::RtConfig::new(self.topology()?, policy);
        rt.run.seed = self.common.seed();
        self.common.apply_runtime_fields(&mut rt);
        rt.validate()?;
        self.program()?.validate(rt.run.topology.nodes)?;
        Ok(rt)
    }
}

impl RunOptions for SplitcOptions {
    const WORKLOAD: &'static str = "splitc";
    const NATIVE_RECORDS: bool = false;
    type Native = NativeRun;

    fn common(&self) -> &Common {
        &self.common
    }

    fn simulated(&self) -> Result<SimRun> {
        let policy = Policy::parse(self.policy.as_deref().unwrap_or("coprocessor:main-am"))?;
        let config = SimConfig::new(self.machine()?, self.topology()?, policy, self.common.seed());
        let workload = WorkloadSpec::Splitc(self.program()?);
        workload.validate(&config)?;
        Ok(SimRun::of(config, workload, &self.common))
    }

    fn native_nodes(&self, _platform: &str) -> Result<u32> {
        Ok(self.native_config()?.run.topology.nodes)
    }

    /// The node's thread, and the co-processor's progress thread.
    fn mpi_threads(&self) -> Result<u32> {
        let policy = self.policy.as_deref().and_then(|p| Policy::parse(p).ok());
        let progress = matches!(policy, Some(Policy::Coprocessor { library }) if library != CoprocLibrary::MainAm);
        Ok(1 + u32::from(progress))
    }

    fn native(&self, on: Placement<'_>) -> Result<Option<NativeRun>> {
        let spec = self.program()?;
        let rt = self.native_config()?;
        let threads = Threads { on, config: rt.clone(), machine: self.machine()? };
        let (stats, measures) = spec.run(&threads)?;
        if !on.has_results() {
            return Ok(None);
        }
        Ok(Some(NativeRun { platform: on.name(), rt, spec, measures, messages: stats.messages }))
    }
}

/// A Split-C program on real threads, done.
pub struct NativeRun {
    platform: &'static str,
    rt: finegrain_rt::RtConfig,
    spec: ProgramSpec,
    measures: ProgramMeasures,
    messages: u64,
}

impl NativeReport for NativeRun {
    fn write_record(&self, _path: &Path) -> Result<()> {
        bail!(
            "invalid json with workload splitc on platform {}: records are written for simulated runs only",
            self.platform
        )
    }
}

impl fmt::Display for NativeRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (run, m) = (&self.rt.run, &self.measures);
        writeln!(
            f,
            "platform {}  policy {}  {} nodes  program {}  seed {}",
            self.platform,
            run.policy.label(),
            run.topology.nodes,
            self.spec.label(),
            run.seed
        )?;
        let us = |ns: u64| ns as f64 / 1e3;
        fmt_measures(f, m, format!("{:.1} us", us(m.time)), us)?;
        writeln!(f, "messages          {}", self.messages)
    }
}

/// A program's input, answer, run time, phases and counts, `us` turning a
/// time into microseconds.
fn fmt_measures(
    f: &mut fmt::Formatter<'_>,
    m: &ProgramMeasures,
    run_time: String,
    us: impl Fn(u64) -> f64,
) -> fmt::Result {
    writeln!(f, "input             {}", m.input)?;
    writeln!(f, "answer            checked against the sequential reference")?;
    writeln!(f, "run time          {run_time}")?;
    for (phase, &t) in &m.phase_max {
        writeln!(f, "phase {phase:<12}{:.1} us on the slowest node", us(t))?;
    }
    for (count, &n) in &m.count_sum {
        writeln!(f, "count {count:<12}{n}")?;
    }
    Ok(())
}

/// A simulated run of a program, as `finegrain run` shows it.
pub(super) fn fmt_simulated(f: &mut fmt::Formatter<'_>, done: &Simulated, spec: &ProgramSpec) -> fmt::Result {
    let c = &done.run.config;
    writeln!(
        f,
        "preset {}  policy {}  {} nodes  program {}  seed {}",
        preset_shown(&c.machine.name, done.run.preset.as_deref()),
        c.run.policy.label(),
        c.run.topology.nodes,
        spec.label(),
        c.run.seed
    )?;
    match &done.measures {
        Some(Measures::Program(m)) => {
            let us = |cycles: u64| c.machine.cycles_to_us(cycles as f64);
            fmt_measures(f, m, format!("{:.1} us ({} cycles)", us(m.time), m.time), us)?;
        }
        _ => writeln!(f, "measures          none (a Split-C run without its measures)")?,
    }
    writeln!(f, "messages          {} requests, {} replies", done.stats.requests, done.stats.replies)
}
