//! One Split-C program with its input, as run records and experiment files
//! name it, and running it on the simulator or the native runtime with
//! its measures summed up over the nodes.

use super::bitonic::BitonicConfig;
use super::cannon::{CannonConfig, CannonPlacement};
use super::fft::{FftConfig, FftRemap};
use super::mm::{MmConfig, MmPlacement};
use super::pray::PrayConfig;
use super::primitives::{Primitive, PrimitivesConfig};
use super::radix::{RadixConfig, Stores};
use super::sample::{Moves, SampleConfig};
use super::shell::ShellConfig;
use super::wator::WatorConfig;
use super::{NodeRun, SplitcProgram, SplitcWorkload};
use crate::Target;
use finegrain_core::{ConfigError, WorkloadError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Split-C program and its input, tagged by program in records:
/// `{"program": "primitives", "primitive": "get", ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "program", rename_all = "kebab-case")]
pub enum ProgramSpec {
    /// Split-C's primitives timed one at a time (Figure 3).
    Primitives(PrimitivesConfig),
    /// Table 2's programs (IPPS 1996 Section 5.3).
    Bitonic(BitonicConfig),
    Cannon(CannonConfig),
    Fft(FftConfig),
    Mm(MmConfig),
    Pray(PrayConfig),
    Radix(RadixConfig),
    Sample(SampleConfig),
    Shell(ShellConfig),
    Wator(WatorConfig),
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

/// Table 2's programs, by the names [`ProgramSpec::named`] takes.
pub const PROGRAMS: &[&str] = &[
    "bitonic",
    "cannon-aligned",
    "cannon-skewed",
    "fft",
    "fftb",
    "mm-bands",
    "mm-global",
    "pray",
    "radix",
    "radixb",
    "sample",
    "sampleb",
    "shell",
    "wator",
];

/// The primitives' timing runs, by the names [`ProgramSpec::named`] takes.
pub const PRIMITIVE_PROGRAMS: &[&str] =
    &["primitives:get", "primitives:put", "primitives:store", "primitives:bulk-store", "primitives:bulk-put"];

/// Every name [`ProgramSpec::named`] takes, for messages.
pub fn program_names() -> String {
    PROGRAMS.iter().chain(PRIMITIVE_PROGRAMS).copied().collect::<Vec<_>>().join(", ")
}

/// A program's input at `size`, from its three constructors.
macro_rules! sized {
    ($size:expr, $ty:ident $(, $arg:expr)?) => {
        match $size {
            Size::Tiny => $ty::tiny($($arg)?),
            Size::Quick => $ty::quick($($arg)?),
            Size::Paper => $ty::paper($($arg)?),
        }
    };
}

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
            ProgramSpec::Bitonic($prog) => $body,
            ProgramSpec::Cannon($prog) => $body,
            ProgramSpec::Fft($prog) => $body,
            ProgramSpec::Mm($prog) => $body,
            ProgramSpec::Pray($prog) => $body,
            ProgramSpec::Radix($prog) => $body,
            ProgramSpec::Sample($prog) => $body,
            ProgramSpec::Shell($prog) => $body,
            ProgramSpec::Wator($prog) => $body,
        }
    };
}

fn run_one<G: SplitcProgram + Clone, P: Target>(prog: &G, on: &P) -> Result<(P::Stats, ProgramMeasures), P::Error> {
    let nodes = on.run_config().topology.nodes;
    let w = SplitcWorkload::new(prog.clone(), nodes).map_err(WorkloadError::from)?;
    let ran = on.run(&w)?;
    Ok((ran.stats, ProgramMeasures::of(prog.input(nodes), &ran.outputs)))
}

impl ProgramSpec {
    /// The program called `name` with its `size` input.
    pub fn named(name: &str, size: Size) -> Result<ProgramSpec, ConfigError> {
        let unknown = || ConfigError::invalid("program", name, format!("allowed {}", program_names()));
        if let Some(p) = name.strip_prefix("primitives:") {
            let primitive = Primitive::ALL.into_iter().find(|q| q.label() == p).ok_or_else(unknown)?;
            let reps = primitive_reps(size);
            return Ok(ProgramSpec::Primitives(if primitive == Primitive::BulkPut {
                PrimitivesConfig::bandwidth(BANDWIDTH_WORDS, reps / 10)
            } else {
                PrimitivesConfig::figure3(primitive, reps)
            }));
        }
        Ok(match name {
            "bitonic" => ProgramSpec::Bitonic(sized!(size, BitonicConfig)),
            "cannon-aligned" => ProgramSpec::Cannon(sized!(size, CannonConfig, CannonPlacement::Aligned)),
            "cannon-skewed" => ProgramSpec::Cannon(sized!(size, CannonConfig, CannonPlacement::Skewed)),
            "fft" => ProgramSpec::Fft(sized!(size, FftConfig, FftRemap::Store)),
            "fftb" => ProgramSpec::Fft(sized!(size, FftConfig, FftRemap::BulkStore)),
            "mm-bands" => ProgramSpec::Mm(sized!(size, MmConfig, MmPlacement::Bands)),
            "mm-global" => ProgramSpec::Mm(sized!(size, MmConfig, MmPlacement::Global)),
            "pray" => ProgramSpec::Pray(sized!(size, PrayConfig)),
            "radix" => ProgramSpec::Radix(sized!(size, RadixConfig, Stores::OneWord)),
            "radixb" => ProgramSpec::Radix(sized!(size, RadixConfig, Stores::Bulk)),
            "sample" => ProgramSpec::Sample(sized!(size, SampleConfig, Moves::Gets)),
            "sampleb" => ProgramSpec::Sample(sized!(size, SampleConfig, Moves::BulkStores)),
            "shell" => ProgramSpec::Shell(sized!(size, ShellConfig)),
            "wator" => ProgramSpec::Wator(sized!(size, WatorConfig)),
            _ => return Err(unknown()),
        })
    }

    /// The program's name as tables show it (`primitives:get`, `radixb`).
    pub fn label(&self) -> String {
        match self {
            ProgramSpec::Primitives(p) => format!("primitives:{}", p.primitive.label()),
            other => with_program!(other, p => p.name().to_string()),
        }
    }

    /// Refuses an input the program cannot run on `nodes` nodes.
    pub fn validate(&self, nodes: u32) -> Result<(), ConfigError> {
        let checked = with_program!(self, p => p.validate(nodes));
        checked.map_err(|why| ConfigError::invalid("program", self.label(), why))
    }

    /// Runs the program on `on` and checks its answer. The measures are
    /// on the platform's clock (simulated cycles, or nanoseconds
    /// natively), and whole only in the process that holds the results.
    pub fn run<P: Target>(&self, on: &P) -> Result<(P::Stats, ProgramMeasures), P::Error> {
        on.validate()?;
        self.validate(on.run_config().topology.nodes).map_err(WorkloadError::from)?;
        with_program!(self, p => run_one(p, on))
    }
}
