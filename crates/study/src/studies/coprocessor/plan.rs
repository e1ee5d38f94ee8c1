//! Reading the experiment and planning the study's runs, all checked
//! before anything runs: Table 1's null ping-pong under the two Active
//! Message libraries (with the machine's bare DMA flag time), Figure 3's
//! primitives and the bulk bandwidth under the three Split-C libraries,
//! and Table 2's programs under the main-processor and the optimized
//! co-processor library.

use super::grid::{Experiment, Grid};
use super::labels::{dma_one_way, Part, RunLabels, Variant};
use crate::experiment::Source;
use crate::record::Labels as _;
use crate::study::Planned;
use anyhow::{bail, Result};
use finegrain_apps::micro::{MicroConfig, Protocol};
use finegrain_apps::splitc::primitives::{Primitive, PrimitivesConfig};
use finegrain_apps::splitc::spec::ProgramSpec;
use finegrain_apps::WorkloadSpec;
use finegrain_core::{CoprocLibrary, MachineConfig, Policy, Topology};
use finegrain_sim::{mix_seed, SimConfig};

/// The libraries of Table 1's Active-Message rows, in report order.
pub const AM_LIBRARIES: [CoprocLibrary; 2] = [CoprocLibrary::MainAm, CoprocLibrary::CoprocAm];

/// Figure 3's three versions of Split-C.
pub const SPLITC_LIBRARIES: [CoprocLibrary; 3] =
    [CoprocLibrary::MainAm, CoprocLibrary::CoprocAm, CoprocLibrary::Optimized];

/// Table 2's two versions: handlers on the main processor, and the
/// version that exploits the co-processor (the optimized library).
pub const PROGRAM_LIBRARIES: [CoprocLibrary; 2] = [CoprocLibrary::MainAm, CoprocLibrary::Optimized];

/// Table 1's and Figure 3's machine: two nodes, one main processor each
/// (Sections 5.1 and 5.2).
pub const PAIR: Topology = Topology { nodes: 2, procs_per_node: 1 };

/// Checks the experiment (both grids' fields, the preset's co-processor)
/// and plans the grid that runs, every run checked before any runs.
pub(super) fn load(e: &Experiment, src: &Source) -> Result<Vec<Planned<RunLabels>>> {
    e.full.validate("full")?;
    e.quick.validate("quick")?;
    let machine = MachineConfig::load(&src.preset(&e.header.preset))?;
    if machine.coprocessor.is_none() {
        bail!(
            "invalid preset = {}: the study needs a machine with a [coprocessor] section (for example ipps96)",
            e.header.preset
        );
    }
    let runs = plan(e, &machine, e.grid())?;
    for p in &runs {
        p.workload
            .validate(&p.config)
            .map_err(|err| anyhow::anyhow!("invalid experiment ({} run {}): {err}", e.mode.table(), p.labels.id()))?;
    }
    Ok(runs)
}

/// The null ping-pong of one requester, back to back.
pub(super) fn ping_pong(grid: &Grid) -> MicroConfig {
    MicroConfig {
        protocol: Protocol::Null,
        mean_compute_cycles: 0.0,
        requests_per_node: grid.round_trips,
        single_requester: true,
    }
}

/// A primitive's timing run as the grid sizes it.
pub(super) fn primitive(grid: &Grid, p: Primitive) -> PrimitivesConfig {
    match p {
        Primitive::BulkPut => PrimitivesConfig::bandwidth(grid.bandwidth_words, grid.bandwidth_reps),
        _ => PrimitivesConfig::figure3(p, grid.primitive_reps),
    }
}

fn config(machine: &MachineConfig, topology: Topology, library: CoprocLibrary, seed: u64) -> SimConfig {
    SimConfig::new(machine.clone(), topology, Policy::Coprocessor { library }, seed)
}

/// One run's labels and configuration; the same seed for every library in
/// a replicate (common random numbers).
struct Maker<'a> {
    exp: &'a Experiment,
    machine: &'a MachineConfig,
}

impl Maker<'_> {
    fn run(
        &self,
        library: CoprocLibrary,
        replicate: u32,
        part: Part,
        topology: Topology,
        workload: WorkloadSpec,
    ) -> Planned<RunLabels> {
        let seed = mix_seed(self.exp.header.seed, replicate as u64, 0xc0_96);
        Planned {
            labels: RunLabels { library, replicate, seed, part, variant: None },
            config: config(self.machine, topology, library, seed),
            workload,
        }
    }
}

/// The main-am runs again with the sending threads' instructions taken
/// out: the measured cause of main-am's slow paths (`docs/coprocessor.md`).
fn free_send_thread(runs: &[Planned<RunLabels>]) -> Vec<Planned<RunLabels>> {
    runs.iter()
        .filter(|p| p.labels.library == CoprocLibrary::MainAm)
        .map(|p| {
            let mut q = p.clone();
            q.labels.variant = Some(Variant::FreeSendThread);
            if let Some(cp) = q.config.machine.coprocessor.as_mut() {
                cp.send_thread_instructions = 0;
            }
            q
        })
        .collect()
}

/// Every run of `grid`, with `dma` (the bare DMA flag's one-way time in
/// cycles) in the ping-pongs' labels.
fn planned_runs(exp: &Experiment, machine: &MachineConfig, grid: &Grid, dma: f64) -> Result<Vec<Planned<RunLabels>>> {
    let make = Maker { exp, machine };
    let mut runs = Vec::new();
    for r in 0..grid.replicates {
        for library in AM_LIBRARIES {
            let part =
                Part::PingPong { round_trips: grid.round_trips, dma_rounds: grid.dma_rounds, dma_one_way_cycles: dma };
            runs.push(make.run(library, r, part, PAIR, WorkloadSpec::Micro(ping_pong(grid))));
        }
        for p in Primitive::ALL {
            let cfg = primitive(grid, p);
            for library in SPLITC_LIBRARIES {
                let part = Part::Primitive { primitive: p, words: cfg.words };
                let w = WorkloadSpec::Splitc(ProgramSpec::Primitives(cfg.clone()));
                runs.push(make.run(library, r, part, PAIR, w));
            }
        }
        // A program's input comes from its own seed, so one run per
        // library measures it; the seeds vary the machine's own draws only.
        if r > 0 {
            continue;
        }
        let nodes = Topology { nodes: grid.nodes, procs_per_node: 1 };
        for name in &grid.programs {
            let spec = ProgramSpec::named(name, grid.size)?;
            for library in PROGRAM_LIBRARIES {
                let part = Part::Program { program: spec.label() };
                runs.push(make.run(library, r, part, nodes, WorkloadSpec::Splitc(spec.clone())));
            }
        }
    }
    let reruns = free_send_thread(&runs);
    runs.extend(reruns);
    Ok(runs)
}

/// Every run of the chosen grid, ready to run, with the machine's bare DMA
/// flag time measured once (the scripted ping-pong takes no seed).
pub(super) fn plan(exp: &Experiment, machine: &MachineConfig, grid: &Grid) -> Result<Vec<Planned<RunLabels>>> {
    let probe = config(machine, PAIR, CoprocLibrary::MainAm, exp.header.seed);
    let dma = dma_one_way(&probe, grid.dma_rounds)?;
    planned_runs(exp, machine, grid, dma)
}
