//! One Split-C program with its input, as run records and experiment files
//! name it, and running it on the simulator or the native runtime with
//! its measures summed up over the nodes.

use super::primitives::{Primitive, PrimitivesConfig};
use super::{NodeRun, SplitcProgram, SplitcWorkload};
use crate::RtPlatform;
use finegrain_core::{ConfigError, Platform};
use finegrain_rt::{RtConfig, RtError, RtStats};
use finegrain_sim::{RunStats, SimConfig, SimError, Simulator};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Split-C program and its input, tagged by program in records:
/// `{"program": "primitives", "primitive": "get", ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "program", rename_all = "kebab-case")]
pub enum ProgramSpec {
    /// Split-C's primitives timed one at a time (Figure 3).
    Primitives(PrimitivesConfig),
}

/// Which of a program's inputs: the smallest (tests), the study's quick
/// set, or the paper-sized one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Size {
    Tiny,
    Quick,
    Paper,
}

impl Size {
    pub fn parse(s: &str) -> Result<Size, ConfigError> {
        match s {
            "tiny" => Ok(Size::Tiny),
            "quick" => Ok(Size::Quick),
            "paper" => Ok(Size::Paper),
            other => Err(ConfigError::invalid("size", other, "allowed tiny, quick, paper")),
        }
    }
}

/// Repetitions of a primitive's timing run at each size.
fn primitive_reps(size: Size) -> u64 {
    match size {
        Size::Tiny => 20,
        Size::Quick => 200,
        Size::Paper => 1000,
    }
}

/// The words of the bandwidth run's bulk puts: 64 KiB, long enough that
/// the per-message costs are a small part of the time.
pub const BANDWIDTH_WORDS: u64 = 8192;

/// Every program name [`ProgramSpec::named`] takes.
pub const PROGRAM_NAMES: &[&str] =
    &["primitives:get", "primitives:put", "primitives:store", "primitives:bulk-store", "primitives:bulk-put"];

/// What a run of a program measured, over its nodes, on the platform's
/// clock (simulated cycles, or nanoseconds natively).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgramMeasures {
    /// The slowest node's time between the start and end barriers: the
    /// program's run time.
    pub time: u64,
    /// Each phase's longest time over the nodes.
    pub phase_max: BTreeMap<String, u64>,
    /// Each phase's time summed over the nodes, and each count's sum (so
    /// an average per event is their quotient).
    pub phase_sum: BTreeMap<String, u64>,
    pub count_sum: BTreeMap<String, u64>,
    /// The input, in words.
    pub input: String,
}

impl ProgramMeasures {
    fn of<A>(input: String, outputs: &[NodeRun<A>]) -> ProgramMeasures {
        let mut m = ProgramMeasures { input, ..ProgramMeasures::default() };
        for o in outputs {
            m.time = m.time.max(o.total);
            for (name, &t) in &o.phases.times {
                let max = m.phase_max.entry(name.clone()).or_default();
                *max = (*max).max(t);
                *m.phase_sum.entry(name.clone()).or_default() += t;
            }
            for (name, &n) in &o.phases.counts {
                *m.count_sum.entry(name.clone()).or_default() += n;
            }
        }
        m
    }

    /// Phase `phase`'s summed time per event of count `count`, if any.
    pub fn per_event(&self, phase: &str, count: &str) -> Option<f64> {
        let n = *self.count_sum.get(count)?;
        (n > 0).then(|| *self.phase_sum.get(phase).unwrap_or(&0) as f64 / n as f64)
    }
}

/// Runs `$body` with `$prog` bound to the program's configuration.
macro_rules! with_program {
    ($spec:expr, $prog:ident => $body:expr) => {
        match $spec {
            ProgramSpec::Primitives($prog) => $body,
        }
    };
}

fn simulate_one<G: SplitcProgram + Clone>(prog: &G, sim: &SimConfig) -> Result<(RunStats, ProgramMeasures), SimError> {
    let nodes = sim.run.topology.nodes;
    let w = SplitcWorkload::new(prog.clone(), nodes).map_err(SimError::Handler)?;
    let ran = Simulator { config: sim }.run(&w)?;
    Ok((ran.stats, ProgramMeasures::of(prog.input(nodes), &ran.outputs)))
}

fn run_rt_one<G: SplitcProgram + Clone>(
    prog: &G,
    platform: RtPlatform,
    rt: &RtConfig,
) -> Result<(RtStats, Option<ProgramMeasures>), RtError> {
    let nodes = rt.run.topology.nodes;
    let w = SplitcWorkload::new(prog.clone(), nodes).map_err(|e| RtError::Setup(e.to_string()))?;
    let ran = platform.run(rt, &w)?;
    let measures = platform.has_results().then(|| ProgramMeasures::of(prog.input(nodes), &ran.outputs));
    Ok((ran.stats, measures))
}

impl ProgramSpec {
    /// The program called `name` with its `size` input.
    pub fn named(name: &str, size: Size) -> Result<ProgramSpec, ConfigError> {
        let unknown = || ConfigError::invalid("program", name, format!("allowed {}", PROGRAM_NAMES.join(", ")));
        if let Some(p) = name.strip_prefix("primitives:") {
            let primitive = Primitive::ALL.into_iter().find(|q| q.label() == p).ok_or_else(unknown)?;
            let reps = primitive_reps(size);
            return Ok(ProgramSpec::Primitives(if primitive == Primitive::BulkPut {
                PrimitivesConfig::bandwidth(BANDWIDTH_WORDS, reps / 10)
            } else {
                PrimitivesConfig::figure3(primitive, reps)
            }));
        }
        Err(unknown())
    }

    /// The program's name as tables show it (`primitives:get`, `radixb`).
    pub fn label(&self) -> String {
        match self {
            ProgramSpec::Primitives(p) => format!("primitives:{}", p.primitive.label()),
        }
    }

    /// Refuses an input the program cannot run on `nodes` nodes.
    pub fn validate(&self, nodes: u32) -> Result<(), ConfigError> {
        let checked = with_program!(self, p => p.validate(nodes));
        checked.map_err(|why| ConfigError::invalid("program", self.label(), why))
    }

    /// Runs the program on the simulated machine `sim`; checks its answer.
    pub fn simulate(&self, sim: &SimConfig) -> Result<(RunStats, ProgramMeasures), SimError> {
        sim.validate()?;
        self.validate(sim.run.topology.nodes)?;
        with_program!(self, p => simulate_one(p, sim))
    }

    /// Runs the program natively; checks its answer. The measures are in
    /// nanoseconds, and only the process holding the results has them.
    pub fn run_rt(&self, platform: RtPlatform, rt: &RtConfig) -> Result<(RtStats, Option<ProgramMeasures>), RtError> {
        self.validate(rt.run.topology.nodes).map_err(|e| RtError::Setup(e.to_string()))?;
        with_program!(self, p => run_rt_one(p, platform, rt))
    }
}
