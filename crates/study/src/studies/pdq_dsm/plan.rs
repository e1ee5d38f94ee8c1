//! Reading the experiment and planning the study's runs, all checked
//! before anything runs: every application on every system at every
//! shape of the grid (Figures 7-11), S-COMA on one processor (Table 2's
//! speedups), and the runs beyond the paper (key affinity, the modern
//! machine).

use super::grid::{Experiment, Grid, ShapeSpec};
use super::labels::{RunLabels, Variant};
use crate::experiment::Source;
use crate::record::Labels as _;
use crate::study::Planned;
use anyhow::{bail, Context, Result};
use finegrain_apps::dsm::spec::DsmRun;
use finegrain_apps::WorkloadSpec;
use finegrain_core::config::ServingSystem;
use finegrain_core::MachineConfig;

/// The machines a study runs on.
pub(super) struct Machines {
    pub paper: MachineConfig,
    pub modern: Option<MachineConfig>,
}

/// Checks the experiment (both grids' fields, the presets) and plans the
/// grid that runs, every run checked before any runs.
pub(super) fn load(e: &Experiment, src: &Source) -> Result<Vec<Planned<RunLabels>>> {
    e.full.validate("full")?;
    e.quick.validate("quick")?;
    let paper = machine(src, &e.header.preset)?;
    let modern = if e.full.modern || e.quick.modern { Some(machine(src, &e.own.modern_preset)?) } else { None };
    let runs = plan(e, &Machines { paper, modern }, e.grid())?;
    for p in &runs {
        p.workload
            .validate(&p.config)
            .map_err(|err| anyhow::anyhow!("invalid experiment ({} run {}): {err}", e.mode.table(), p.labels.id()))?;
    }
    Ok(runs)
}

fn machine(src: &Source, name: &str) -> Result<MachineConfig> {
    let m = MachineConfig::load(&src.preset(name))?;
    if m.dsm.is_none() || m.pdq.is_none() {
        bail!("invalid preset = {name}: the study needs a machine with [dsm] and [pdq] sections (for example hpca99)");
    }
    Ok(m)
}

/// One run: the system's policy and processors on `machine`, the DSM's
/// costs from the machine, the simulator's in-order network, and the
/// coherence check on.
fn run(
    machine: &MachineConfig,
    grid: &Grid,
    app: &str,
    system: ServingSystem,
    shape: ShapeSpec,
    seed: u64,
    variant: Option<Variant>,
) -> Result<Planned<RunLabels>> {
    let run = DsmRun { system, nodes: shape.nodes, compute_procs: shape.procs, block_bytes: shape.block_bytes, seed };
    // The inputs come from the experiment's seed, the same on every
    // system (common random numbers).
    let (config, spec) = run.simulated(machine, app, grid.size)?;
    let labels = RunLabels {
        app: app.to_string(),
        system,
        nodes: shape.nodes,
        procs: shape.procs,
        block_bytes: shape.block_bytes,
        seed,
        variant,
    };
    Ok(Planned { labels, config, workload: WorkloadSpec::Dsm(spec) })
}

/// The baseline shape: the grid's first.
pub(super) fn baseline(grid: &Grid) -> ShapeSpec {
    grid.shapes[0]
}

pub(super) fn plan(exp: &Experiment, machines: &Machines, grid: &Grid) -> Result<Vec<Planned<RunLabels>>> {
    let seed = exp.header.seed;
    let paper = &machines.paper;
    let mut runs = Vec::new();
    for app in &grid.apps {
        for &shape in &grid.shapes {
            for &system in &grid.systems {
                runs.push(run(paper, grid, app, system, shape, seed, None)?);
            }
        }
        let base = baseline(grid);
        if grid.uniprocessor {
            let one = ShapeSpec { nodes: 1, procs: 1, block_bytes: base.block_bytes };
            runs.push(run(paper, grid, app, ServingSystem::Scoma, one, seed, Some(Variant::Uniprocessor))?);
        }
        if grid.affinity_passes > 0 {
            let mut m = paper.clone();
            if let Some(pdq) = m.pdq.as_mut() {
                pdq.affinity_passes = grid.affinity_passes;
            }
            for &system in grid.systems.iter().filter(|&&s| s != ServingSystem::Scoma) {
                runs.push(run(&m, grid, app, system, base, seed, Some(Variant::Affinity))?);
            }
        }
        if grid.modern {
            let m = machines.modern.as_ref().context("the modern preset is not loaded")?;
            for &system in &grid.systems {
                runs.push(run(m, grid, app, system, base, seed, Some(Variant::Modern))?);
            }
        }
    }
    Ok(runs)
}
