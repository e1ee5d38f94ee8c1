//! One shared-memory program with its input and its DSM's settings, as run
//! records and experiment files name it, and running it on the simulator
//! or the native runtime with its measures gathered over the threads.

use super::barnes::Barnes;
use super::cholesky::Cholesky;
use super::em3d::Em3d;
use super::fft::Fft;
use super::fmm::Fmm;
use super::radix::Radix;
use super::water::WaterSp;
use super::{DsmProgram, DsmWorkload, ThreadRun};
use crate::splitc::spec::Size;
use crate::Target;
use finegrain_core::config::{MemoryParams, ServingSystem};
use finegrain_core::{ConfigError, MachineConfig, Policy, RunConfig, Topology, WorkloadError};
use finegrain_dsm::DsmConfig;
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The PDQ paper's applications (HPCA 1999 Table 2), tagged by program in
/// records: `{"program": "barnes", ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "program", rename_all = "kebab-case")]
pub enum ProgramSpec {
    Barnes(Barnes),
    Cholesky(Cholesky),
    Em3d(Em3d),
    Fft(Fft),
    Fmm(Fmm),
    Radix(Radix),
    WaterSp(WaterSp),
}

/// Table 2's applications, by the names [`ProgramSpec::named`] takes.
pub const PROGRAMS: &[&str] = &["barnes", "cholesky", "em3d", "fft", "fmm", "radix", "water-sp"];

macro_rules! with_program {
    ($spec:expr, $p:ident => $body:expr) => {
        match $spec {
            ProgramSpec::Barnes($p) => $body,
            ProgramSpec::Cholesky($p) => $body,
            ProgramSpec::Em3d($p) => $body,
            ProgramSpec::Fft($p) => $body,
            ProgramSpec::Fmm($p) => $body,
            ProgramSpec::Radix($p) => $body,
            ProgramSpec::WaterSp($p) => $body,
        }
    };
}

macro_rules! sized {
    ($size:expr, $ty:ident, $seed:expr) => {
        match $size {
            Size::Tiny => $ty::tiny($seed),
            Size::Quick => $ty::quick($seed),
            Size::Paper => $ty::paper($seed),
        }
    };
}

impl ProgramSpec {
    /// The program called `name` with its `size` input drawn from `seed`.
    pub fn named(name: &str, size: Size, seed: u64) -> Result<ProgramSpec, ConfigError> {
        Ok(match name {
            "barnes" => ProgramSpec::Barnes(sized!(size, Barnes, seed)),
            "cholesky" => ProgramSpec::Cholesky(sized!(size, Cholesky, seed)),
            "em3d" => ProgramSpec::Em3d(sized!(size, Em3d, seed)),
            "fft" => ProgramSpec::Fft(sized!(size, Fft, seed)),
            "fmm" => ProgramSpec::Fmm(sized!(size, Fmm, seed)),
            "radix" => ProgramSpec::Radix(sized!(size, Radix, seed)),
            "water-sp" => ProgramSpec::WaterSp(sized!(size, WaterSp, seed)),
            _ => return Err(ConfigError::invalid("program", name, format!("allowed {}", PROGRAMS.join(", ")))),
        })
    }

    pub fn label(&self) -> &'static str {
        with_program!(self, p => p.name())
    }

    pub fn input(&self) -> String {
        with_program!(self, p => p.input())
    }
}

/// A shared-memory run: the program and the DSM it runs on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsmSpec {
    pub program: ProgramSpec,
    pub dsm: DsmConfig,
}

/// Roughly how many seconds of one core simulating `spec` on `config`
/// takes: the program's time at its paper input on 64 processors under
/// Hurricane 1pp (measured here, 2026-12, on one core of a 2-core VM),
/// scaled by its input's size against the paper's (with the power the
/// quick and paper inputs' times gave: cholesky's work grows faster than
/// its columns), and by who runs the handlers (SMP protocol processors on
/// the memory bus and Mult's idle compute processors give the simulator
/// more bus transactions and role changes). An estimate for ordering runs
/// and showing the time left, never for a result.
pub fn planned_seconds(spec: &DsmSpec, config: &SimConfig) -> f64 {
    use finegrain_core::{Policy, PpKind};
    let (seconds, size, paper_size, power) = match &spec.program {
        ProgramSpec::Barnes(b) => (8.0, (b.bodies * b.steps as u64) as f64, 16384.0 * 2.0, 1.0),
        ProgramSpec::Cholesky(c) => (45.0, c.columns() as f64, 13_824.0, 1.5),
        ProgramSpec::Em3d(e) => (2.5, e.nodes as f64, 76_800.0, 1.0),
        ProgramSpec::Fft(f) => (9.0, (1u64 << f.log_points) as f64, (1u64 << 20) as f64, 1.0),
        ProgramSpec::Fmm(f) => (1.0, f.particles as f64, 16384.0, 1.0),
        ProgramSpec::Radix(r) => (11.0, r.keys as f64, (4u64 << 20) as f64, 1.0),
        ProgramSpec::WaterSp(w) => (2.0, (w.molecules * w.steps as u64) as f64, 4096.0 * 3.0, 1.0),
    };
    let handlers = match (config.run.policy, config.run.dispatch.pp_kind) {
        (Policy::Floating, _) => 1.8,
        (_, PpKind::Smp) => 1.3,
        _ => 1.0,
    };
    seconds * (size / paper_size).powf(power) * handlers
}

/// Each node's global segment (where shared memory lives in the
/// simulator) at the paper inputs: room for the largest, radix's 4M keys
/// in two arrays (64 MiB, the default segment) and its histograms.
pub const PAPER_SEGMENT_BYTES: u64 = 128 << 20;

/// Gives `machine` room for the inputs of `size`: at the paper size each
/// node's global segment holds the largest program's shared memory, even
/// when one node holds all of it (a one-processor run).
pub fn room_for(size: Size, machine: &mut MachineConfig) {
    if size == Size::Paper {
        let bytes = PAPER_SEGMENT_BYTES.max(machine.global_segment_bytes());
        machine.memory = Some(MemoryParams { global_segment_bytes: bytes });
    }
}

/// One shared-memory run's shape, as the command line, the pdq-dsm study
/// and the calibration of a remote miss all build it: the system that
/// serves the DSM's handlers, the nodes and compute processors, the
/// coherence unit and the seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DsmRun {
    pub system: ServingSystem,
    pub nodes: u32,
    pub compute_procs: u32,
    pub block_bytes: u32,
    pub seed: u64,
}

impl DsmRun {
    /// The run settings: the system's policy, processors and dispatch.
    pub fn run_config(&self) -> RunConfig {
        let topology = Topology { nodes: self.nodes, procs_per_node: 1 };
        let mut run = RunConfig::new(topology, Policy::Single, self.seed);
        self.system.apply(&mut run, self.compute_procs);
        run
    }

    /// The simulated machine: `machine` with room for the inputs of
    /// `size` (see [`room_for`]) under [`DsmRun::run_config`].
    pub fn sim_config(&self, machine: &MachineConfig, size: Size) -> SimConfig {
        let mut machine = machine.clone();
        room_for(size, &mut machine);
        SimConfig { run: self.run_config(), machine, trace_handlers: false }
    }

    /// The DSM's settings on `machine`: its handler instructions from the
    /// machine's `[dsm]` section, and the shadow copy that checks
    /// coherence where `check_coherence` (it needs the nodes in one
    /// process and messages delivered in order).
    pub fn dsm_config(&self, machine: &MachineConfig, check_coherence: bool) -> Result<DsmConfig, ConfigError> {
        let Some(params) = machine.dsm.as_ref() else {
            return Err(ConfigError::invalid(
                "preset",
                &machine.name,
                "it has no [dsm] section (the DSM handlers' instructions); allowed a preset with one, such as hpca99",
            ));
        };
        Ok(DsmConfig { block_bytes: self.block_bytes, check_coherence, costs: params.clone(), ..DsmConfig::default() })
    }

    /// The simulated run of `program` at `size` (its input drawn from the
    /// run's seed) on `machine`: the simulator's network delivers in order
    /// and its nodes share one process, so the coherence check is on.
    pub fn simulated(
        &self,
        machine: &MachineConfig,
        program: &str,
        size: Size,
    ) -> Result<(SimConfig, DsmSpec), ConfigError> {
        let config = self.sim_config(machine, size);
        let dsm = self.dsm_config(&config.machine, true)?;
        let program = ProgramSpec::named(program, size, self.seed)?;
        Ok((config, DsmSpec { program, dsm }))
    }
}

/// What a run of a program measured, over its threads, on the platform's
/// clock (simulated cycles, or nanoseconds natively).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DsmMeasures {
    /// The slowest thread's time between the start and end barriers: the
    /// program's run time.
    pub time: u64,
    /// Each phase's longest time over the threads.
    pub phase_max: BTreeMap<String, u64>,
    /// Each count summed over the threads.
    pub count_sum: BTreeMap<String, u64>,
    pub input: String,
}

impl DsmMeasures {
    fn of<A>(input: String, outputs: &[ThreadRun<A>]) -> DsmMeasures {
        let mut m = DsmMeasures { input, ..DsmMeasures::default() };
        for o in outputs {
            m.time = m.time.max(o.total);
            for (name, &t) in &o.phases.times {
                let max = m.phase_max.entry(name.clone()).or_default();
                *max = (*max).max(t);
            }
            for (name, &n) in &o.phases.counts {
                *m.count_sum.entry(name.clone()).or_default() += n;
            }
        }
        m
    }
}

fn run_one<G: DsmProgram + Clone, P: Target>(
    prog: &G,
    dsm: &DsmConfig,
    on: &P,
) -> Result<(P::Stats, DsmMeasures), P::Error> {
    let (nodes, threads) = shape(on.run_config());
    let w = DsmWorkload::new(prog.clone(), nodes, threads, dsm.clone()).map_err(WorkloadError::from)?;
    let ran = on.run(&w)?;
    Ok((ran.stats, DsmMeasures::of(prog.input(), &ran.outputs)))
}

/// Nodes and compute threads per node of a run.
fn shape(run: &finegrain_core::RunConfig) -> (u32, u32) {
    (run.topology.nodes, run.policy.compute_procs(run.topology.procs_per_node))
}

impl DsmSpec {
    /// Refuses a machine the DSM cannot run on.
    pub fn validate(&self, run: &finegrain_core::RunConfig) -> Result<(), ConfigError> {
        let (nodes, threads) = shape(run);
        finegrain_dsm::Dsm::builder(nodes, threads, self.dsm.clone())
            .map(|_| ())
            .map_err(|e| ConfigError::invalid("dsm", self.program.label(), e.to_string()))
    }

    /// Runs the program on `on` and checks its answer. The measures are
    /// on the platform's clock, and whole only in the process that holds
    /// the results.
    pub fn run<P: Target>(&self, on: &P) -> Result<(P::Stats, DsmMeasures), P::Error> {
        on.validate()?;
        self.validate(on.run_config()).map_err(WorkloadError::from)?;
        with_program!(&self.program, p => run_one(p, &self.dsm, on))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use finegrain_core::config::MemoryParams;

    /// Every shared byte a program lays out at `size` on one node of one
    /// thread (where one node's global segment holds all of it).
    fn shared_bytes(name: &str, size: Size) -> u64 {
        let program = ProgramSpec::named(name, size, 1).expect("a program");
        with_program!(program, p => {
            let w = super::super::DsmWorkload::new(p, 1, 1, DsmConfig::default()).expect("laid out");
            w.dsm().bytes()
        })
    }

    /// The paper inputs outgrow the default segment (radix's 4M keys did,
    /// and its run failed mid-way on an access past the segment), so a
    /// paper-size run's machine is given room for each program's shared
    /// memory before it starts.
    #[test]
    fn every_paper_input_fits_the_segment_a_paper_run_is_given() {
        let mut machine = MachineConfig::load("hpca99").expect("preset");
        room_for(Size::Paper, &mut machine);
        let default = MemoryParams::DEFAULT_GLOBAL_SEGMENT_BYTES;
        let mut outgrow_default = Vec::new();
        for name in PROGRAMS {
            let bytes = shared_bytes(name, Size::Paper);
            assert!(bytes <= machine.global_segment_bytes(), "{name}: {bytes} bytes");
            if bytes > default {
                outgrow_default.push(*name);
            }
        }
        assert!(outgrow_default.contains(&"radix"), "{outgrow_default:?}");
        let mut quick = MachineConfig::load("hpca99").expect("preset");
        room_for(Size::Quick, &mut quick);
        assert_eq!(quick.global_segment_bytes(), default, "smaller inputs keep the preset's segment");
    }
}
