//! Reading the experiment and planning the study's runs: the null
//! ping-pong under each Active Message library, once per replicate, with
//! the bare DMA flag time of the machine, all checked before anything runs.

use super::grid::{Experiment, Grid, NAME};
use super::labels::{dma_one_way, RunLabels};
use crate::experiment::Source;
use crate::record::Labels as _;
use crate::study::Planned;
use anyhow::{bail, Result};
use finegrain_apps::micro::{MicroConfig, Protocol};
use finegrain_apps::WorkloadSpec;
use finegrain_core::{CoprocLibrary, MachineConfig, Policy, Topology};
use finegrain_sim::{mix_seed, SimConfig};

/// The libraries of Table 1's Active-Message rows, in report order.
pub const LIBRARIES: [CoprocLibrary; 2] = [CoprocLibrary::MainAm, CoprocLibrary::CoprocAm];

/// Table 1's machine: two nodes, one main processor each (Section 5.1).
pub const TOPOLOGY: Topology = Topology { nodes: 2, procs_per_node: 1 };

pub(super) fn load(src: &Source) -> Result<Experiment> {
    let e: Experiment = src.parse()?;
    if e.study != NAME {
        bail!("invalid study = {} in {}: expected {NAME}", e.study, src.origin);
    }
    e.full.validate("full")?;
    e.quick.validate("quick")?;
    let machine = MachineConfig::load(&src.preset(&e.preset))?;
    if machine.coprocessor.is_none() {
        bail!(
            "invalid preset = {}: the study needs a machine with a [coprocessor] section (for example ipps96)",
            e.preset
        );
    }
    // Every run must be valid before any runs.
    for (table, grid) in [("full", &e.full), ("quick", &e.quick)] {
        for p in planned_runs(&e, &machine, grid, 1.0) {
            p.workload
                .validate(&p.config)
                .map_err(|err| anyhow::anyhow!("invalid experiment ({table} run {}): {err}", p.labels.id()))?;
        }
    }
    Ok(e)
}

/// The null ping-pong of one requester, back to back.
pub(super) fn workload(grid: &Grid) -> MicroConfig {
    MicroConfig {
        protocol: Protocol::Null,
        mean_compute_cycles: 0.0,
        requests_per_node: grid.round_trips,
        single_requester: true,
    }
}

/// A run's configuration on `machine`.
fn config(machine: &MachineConfig, library: CoprocLibrary, seed: u64) -> SimConfig {
    SimConfig::new(machine.clone(), TOPOLOGY, Policy::Coprocessor { library }, seed)
}

/// Every run of `grid` with `dma_one_way_cycles` in its labels.
fn planned_runs(exp: &Experiment, machine: &MachineConfig, grid: &Grid, dma: f64) -> Vec<Planned<RunLabels>> {
    let mut runs = Vec::new();
    for library in LIBRARIES {
        for replicate in 0..grid.replicates {
            // The same seed for both libraries in a replicate (common
            // random numbers).
            let seed = mix_seed(exp.seed, replicate as u64, 0xc0_96);
            let labels = RunLabels {
                library,
                replicate,
                seed,
                round_trips: grid.round_trips,
                dma_rounds: grid.dma_rounds,
                dma_one_way_cycles: dma,
            };
            runs.push(Planned {
                labels,
                config: config(machine, library, seed),
                workload: WorkloadSpec::Micro(workload(grid)),
            });
        }
    }
    runs
}

/// Every run of the chosen grid, ready to run, with the machine's bare DMA
/// flag time measured once (the scripted ping-pong takes no seed).
pub(super) fn plan(exp: &Experiment, machine: &MachineConfig, grid: &Grid) -> Result<Vec<Planned<RunLabels>>> {
    let probe = config(machine, CoprocLibrary::MainAm, exp.seed);
    let dma = dma_one_way(&probe, grid.dma_rounds)?;
    Ok(planned_runs(exp, machine, grid, dma))
}
