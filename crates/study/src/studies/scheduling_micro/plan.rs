//! Reading the experiment and planning the study's runs: every point of a
//! grid, the sensitivity runs, and their machines and workloads, all
//! checked before anything runs.

use super::claims::{high_oint, oint_dominates, sorted_oints, CLAIM4_US, DOMINATES};
use super::grid::{Experiment, Grid, Variant};
use super::labels::RunLabels;
use super::operating_points::PAPER_OINT;
use crate::experiment::{check_sensitivity_on, shown, Source, MAX_CYCLES};
use crate::record::Labels as _;
use crate::study::Planned;
use anyhow::{bail, Context, Result};
use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_apps::{Sim, WorkloadSpec};
use finegrain_core::{MachineConfig, Policy, Topology};
use finegrain_sim::{mix_seed, SimConfig};
use std::collections::BTreeMap;

/// When the study's own Floating runs give the role up: the paper's
/// Floating, whose idle processor handles messages until it has work
/// again and then gives the role up (to an idle peer if one waits for it).
/// Its runs keep [`finegrain_sim::SimConfig::new`]'s rule, this one.
pub(super) const OWN_RELINQUISH: finegrain_core::Relinquish = finegrain_core::Relinquish::Eager;

/// What planning the study needs besides its experiment.
pub(super) struct Loaded {
    pub machine: MachineConfig,
    /// Lmin measured on the machine for each protocol of the grid that runs.
    pub lmin: BTreeMap<Protocol, f64>,
    pub planned: Vec<Planned<RunLabels>>,
}

/// Checks the experiment (its fields and both grids', against the preset
/// and the Lmin measured on it), then plans the grid that runs, every
/// run's machine checked, before anything runs.
pub(super) fn load(e: &Experiment, src: &Source) -> Result<Loaded> {
    if e.own.nodes < 2 || e.own.nodes > 4096 {
        bail!("invalid nodes = {}: allowed 2..=4096 (requests go to another node)", e.own.nodes);
    }
    e.full.validate("full")?;
    e.quick.validate("quick")?;
    let machine = MachineConfig::load(&src.preset(&e.header.preset))?;
    for (table, g) in e.grids() {
        g.check_rules(table, OWN_RELINQUISH, &machine.protocol, &machine.interrupt)?;
        check_sensitivity_on(&format!("{table}.sensitivity"), &g.sensitivity, &machine, &e.header.preset)?;
    }
    let mut lmin = BTreeMap::new();
    for &p in &e.grid().protocols {
        let l = micro::measure_lmin(&Sim::idle(&machine, e.header.seed), p)
            .with_context(|| format!("measuring Lmin for {p}"))?;
        lmin.insert(p, l);
    }
    for (table, g) in e.grids() {
        check_compute_times(table, g, &lmin)?;
        check_oints_decide_claim3(table, g, &lmin)?;
    }
    // Every run's machine must pass the simulator's checks (its caches must
    // fit in host memory) before the output directory is made or hours are
    // spent on other runs.
    let planned = plan(e, &machine, e.grid(), &lmin);
    for p in &planned {
        p.config
            .validate()
            .map_err(|err| anyhow::anyhow!("invalid experiment ({} run {}): {err}", e.mode.table(), p.labels.id()))?;
    }
    Ok(Loaded { machine, lmin, planned })
}

/// The mean compute time U / (1 - U) x Lmin of every U is at most
/// [`MAX_CYCLES`] (known once Lmin is measured, before any run).
fn check_compute_times(table: &str, grid: &Grid, lmin: &BTreeMap<Protocol, f64>) -> Result<()> {
    for (p, &l) in lmin {
        for &u in &grid.target_u {
            let compute = u / (1.0 - u) * l;
            if compute > MAX_CYCLES as f64 {
                bail!(
                    "invalid {table}.target_u = {}: the mean compute time U / (1 - U) x Lmin ({p}: {l:.0} cycles) \
                     is {} cycles, allowed at most {MAX_CYCLES}",
                    shown(u),
                    shown(compute.round())
                );
            }
        }
    }
    Ok(())
}

/// Claim 3 judges "Fixed does best when Oint >> Lmin" at the Oints of at
/// least ten times each protocol's Lmin (see `oint_dominates`; fetch-block
/// has the longer Lmin): a grid without one for fetch-block could not
/// decide it (known once Lmin is measured).
pub(super) fn check_oints_decide_claim3(table: &str, grid: &Grid, lmin: &BTreeMap<Protocol, f64>) -> Result<()> {
    let Some(&l) = lmin.get(&Protocol::Fetch).filter(|_| grid.protocols.contains(&Protocol::Fetch)) else {
        return Ok(());
    };
    if !grid.oint_cycles.iter().any(|&o| oint_dominates(o, l)) {
        bail!(
            "invalid {table}.oint_cycles = {:?}: claim 3 needs an Oint of at least {DOMINATES} x fetch-block's Lmin \
             ({l:.0} cycles), i.e. {:.0} or more; allowed lists with one",
            grid.oint_cycles,
            (DOMINATES * l).ceil()
        );
    }
    Ok(())
}

pub(super) fn plan(
    exp: &Experiment,
    machine: &MachineConfig,
    grid: &Grid,
    lmin: &BTreeMap<Protocol, f64>,
) -> Vec<Planned<RunLabels>> {
    let mut specs = Vec::new();
    // The claims' low Oint (the paper's 200 cycles, which the grid holds)
    // and high Oint (the grid's highest).
    let lo = PAPER_OINT;
    let hi = high_oint(&sorted_oints(grid)).unwrap_or(lo);
    for replicate in 0..grid.replicates {
        // Every configuration of a replicate shares its seed (common random
        // numbers), so ratios between policies are not blurred by noise.
        let seed = mix_seed(exp.header.seed, replicate as u64, 0x5c4e);
        for &protocol in &grid.protocols {
            // The policies a variant changes at each processor count, for a
            // U and an Oint (rules pair with the study's own Fixed runs,
            // see `Variant::seen_by`).
            let mut point = |target_u: f64, oint: u64, counts: &[u32], variant: Variant| {
                for &ppn in counts {
                    for policy in policies(ppn) {
                        if variant.seen_by(&policy.label()) != variant {
                            continue;
                        }
                        let labels = RunLabels::new(
                            protocol,
                            policy,
                            ppn,
                            target_u,
                            oint,
                            replicate,
                            seed,
                            lmin[&protocol],
                            variant,
                        );
                        specs.push(planned(exp, machine, grid, labels, policy));
                    }
                }
            };
            for &oint in &grid.oint_cycles {
                for &target_u in &grid.target_u {
                    point(target_u, oint, &grid.procs_per_node, Variant::BASELINE);
                }
            }
            // Every point again without each mechanism, at the same compute
            // times, so each claim can be judged without it.
            for &mechanism in &grid.mechanism_sensitivity {
                for &oint in &grid.oint_cycles {
                    for &target_u in &grid.target_u {
                        let variant = Variant { mechanism_off: Some(mechanism), ..Variant::BASELINE };
                        point(target_u, oint, &grid.procs_per_node, variant);
                    }
                }
            }
            // And at each other cost of the context switches: the map of
            // where each claim holds as the paper's unknown moves.
            for &switch in &grid.switch_sensitivity {
                for &oint in &grid.oint_cycles {
                    for &target_u in &grid.target_u {
                        let variant = Variant { context_switch: Some(switch), ..Variant::BASELINE };
                        point(target_u, oint, &grid.procs_per_node, variant);
                    }
                }
            }
            for &effect in &grid.sensitivity {
                for &target_u in &grid.cost_performance_u {
                    point(
                        target_u,
                        lo,
                        &grid.procs_per_node,
                        Variant { effect_off: Some(effect), ..Variant::BASELINE },
                    );
                }
            }
            // Claim 2 looks at the two-processor node only.
            let mut claim2_oints = vec![lo, hi];
            claim2_oints.dedup();
            if protocol == Protocol::Null {
                for &rule in &grid.relinquish_sensitivity {
                    for &oint in &claim2_oints {
                        for &target_u in &grid.target_u {
                            point(target_u, oint, &[2], Variant { relinquish: Some(rule), ..Variant::BASELINE });
                        }
                    }
                }
            }
            // Claim 4's two U (0.3 and 0.7, which the grid holds).
            let claim4_points = CLAIM4_US;
            // Claim 1 looks at Single on the null handler, at every point.
            if protocol == Protocol::Null {
                for &share in &grid.return_sensitivity {
                    for &oint in &grid.oint_cycles {
                        for &target_u in &grid.target_u {
                            point(target_u, oint, &[1], Variant { return_percent: Some(share), ..Variant::BASELINE });
                        }
                    }
                }
            }
            for &arbitration in &grid.arbitration_sensitivity {
                for &target_u in &claim4_points {
                    let variant = Variant { arbitration: Some(arbitration), ..Variant::BASELINE };
                    point(target_u, lo, &grid.procs_per_node, variant);
                }
            }
        }
    }
    specs
}

/// Single on a uniprocessor node, else Fixed (one dedicated PP) and Floating.
fn policies(ppn: u32) -> Vec<Policy> {
    if ppn == 1 {
        vec![Policy::Single]
    } else {
        vec![Policy::Fixed { protocol_procs: 1 }, Policy::Floating]
    }
}

/// One run: the preset with the run's Oint and what its variant changes,
/// and the microbenchmark at the run's mean compute time.
fn planned(
    exp: &Experiment,
    machine: &MachineConfig,
    grid: &Grid,
    labels: RunLabels,
    policy: Policy,
) -> Planned<RunLabels> {
    let mut m = machine.clone();
    m.interrupt.overhead_cycles = labels.oint_cycles;
    let topology = Topology { nodes: exp.own.nodes, procs_per_node: labels.procs_per_node };
    let mut config = SimConfig::new(m, topology, policy, labels.seed);
    labels.variant().apply(&mut config);
    let workload = WorkloadSpec::Micro(MicroConfig {
        protocol: labels.protocol,
        mean_compute_cycles: labels.mean_compute_cycles,
        requests_per_node: grid.requests_per_node,
        single_requester: false,
    });
    Planned { labels, config, workload }
}
