//! `finegrain calibrate`: a preset's calibration targets measured back.

use crate::say;
use anyhow::{bail, Result};
use finegrain_apps::dsm::remote_miss::{
    self, REMOTE_MISS_STEPS, REMOTE_MISS_SYSTEMS, REMOTE_MISS_TOLERANCE, REMOTE_MISS_TOTALS,
};
use finegrain_apps::micro::{self, Protocol};
use finegrain_apps::Sim;
use finegrain_core::config::{Ledger, ProvenanceKind};
use finegrain_core::{DmaCalibration, MachineConfig};

/// The seed `finegrain calibrate` measures Lmin with.
const CALIBRATION_SEED: u64 = 1;

/// Ping-pong round trips the bare DMA flag time is averaged over.
const DMA_ROUNDS: u64 = 100;

pub fn calibrate(preset: &str) -> Result<()> {
    let machine = MachineConfig::load(preset)?;
    print_ledger(&machine)?;
    if let Some(cal) = machine.dma_calibration.clone() {
        return calibrate_dma(&machine, &cal);
    }
    if machine.dsm.is_some() && machine.calibration.is_none() {
        return calibrate_remote_miss(&machine);
    }
    let Some(cal) = machine.calibration.clone() else {
        bail!("preset {preset} has no [calibration] or [dma_calibration] targets to measure");
    };
    say!(
        "preset {}: Lmin under Fixed on an idle machine (2 nodes x 2 processors, one requester, seed {CALIBRATION_SEED})",
        machine.name
    );
    say!("{:<10} {:>12} {:>10} {:>11} {:>8}  ok", "protocol", "cycles", "us", "target us", "error");
    let mut bad = Vec::new();
    for (p, target) in [(Protocol::Null, cal.lmin_null_us), (Protocol::Fetch, cal.lmin_fetch_us)] {
        let l = micro::measure_lmin(&Sim::idle(&machine, CALIBRATION_SEED), p)?;
        let us = machine.cycles_to_us(l);
        let err = (us - target) / target;
        let ok = err.abs() <= cal.tolerance;
        say!(
            "{:<10} {:>12.1} {:>10.3} {:>11.3} {:>7.1}%  {}",
            p.to_string(),
            l,
            us,
            target,
            err * 100.0,
            if ok { "yes" } else { "NO" }
        );
        if !ok {
            bad.push(p.to_string());
        }
    }
    if !bad.is_empty() {
        bail!(
            "Lmin of {} is off its target by more than calibration.tolerance = {} (a fraction of the target)",
            bad.join(", "),
            cal.tolerance
        );
    }
    Ok(())
}

/// The preset's ledger, kind by kind: what the paper states, what follows
/// from it, what was fitted to a stated primitive number (measured back
/// below), and the estimates with the verdicts that move with them.
fn print_ledger(machine: &MachineConfig) -> Result<()> {
    let ledger = &machine.ledger;
    if ledger.is_empty() {
        say!("preset {}: no [ledger] (a preset of one's own may leave it out)", machine.name);
        say!("");
        return Ok(());
    }
    say!("preset {}: where each of its {} parameters comes from ({})", machine.name, ledger.0.len(), counts(ledger));
    for kind in ProvenanceKind::ALL {
        if ledger.of_kind(kind).next().is_none() {
            continue;
        }
        say!("");
        say!("{}:", kind.name());
        for (path, p) in ledger.of_kind(kind) {
            say!("  {path:<36} {}", p.source);
            if let Some(moves) = &p.moves {
                say!("  {:<36} moves: {moves}", "");
            }
        }
    }
    say!("");
    Ok(())
}

fn counts(ledger: &Ledger) -> String {
    ProvenanceKind::ALL
        .iter()
        .map(|&k| format!("{} {}", ledger.of_kind(k).count(), k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A co-processor preset: the one-way time of a flag moved by bare DMA
/// between two main processors, half the round trip of a ping-pong on the
/// co-processor model (the IPPS 1996 paper's Section 5.1 method).
fn calibrate_dma(machine: &MachineConfig, cal: &DmaCalibration) -> Result<()> {
    say!(
        "preset {}: one-way time of a flag moved by bare DMA (2 nodes, half the round trip of {DMA_ROUNDS} ping-pongs)",
        machine.name
    );
    say!("{:<10} {:>12} {:>10} {:>11} {:>8}  ok", "operation", "cycles", "us", "target us", "error");
    let cycles = finegrain_sim::coproc::dma_flag_one_way(machine, DMA_ROUNDS)?;
    let us = machine.cycles_to_us(cycles);
    let err = (us - cal.flag_one_way_us) / cal.flag_one_way_us;
    let ok = err.abs() <= cal.tolerance;
    say!(
        "{:<10} {:>12.1} {:>10.3} {:>11.3} {:>7.1}%  {}",
        "dma-flag",
        cycles,
        us,
        cal.flag_one_way_us,
        err * 100.0,
        if ok { "yes" } else { "NO" }
    );
    if !ok {
        bail!(
            "the bare DMA flag's one-way time is off its target by more than dma_calibration.tolerance = {} (a \
             fraction of the target)",
            cal.tolerance
        );
    }
    print_coproc_primitives(machine)
}

/// The rest of what the co-processor paper states about its primitives
/// (Table 1's round trips, Figure 3's values), measured back with each
/// residual, then the fit of the preset's fitted unknowns to Figure 3
/// done again: a preset at the fit's fixed point prints the same values.
fn print_coproc_primitives(machine: &MachineConfig) -> Result<()> {
    use finegrain_apps::coproc_primitives::{fit, measure};
    say!("");
    say!("stated primitive numbers (IPPS 1996 Table 1 round trips, Figure 3 as Section 5.2 gives it), measured:");
    print_targets(&measure(machine)?)?;
    say!("");
    say!("fit of the unknowns to Figure 3 (Table 1 held out), again from this preset:");
    let f = fit(machine)?;
    for (field, v) in &f.values {
        say!("  {field} = {v}");
    }
    say!("  root-mean-square ln(measured / paper) over Figure 3: {:.3}", f.rms_log_error);
    print_targets(&f.targets)
}

fn print_targets(targets: &[finegrain_apps::coproc_primitives::Target]) -> Result<()> {
    say!("{:<34} {:>10} {:>10} {:>8}", "primitive", "measured", "paper", "error");
    for t in targets {
        say!("{:<34} {:>10.1} {:>10.1} {:>7.1}%  {}", t.name, t.measured, t.paper, t.error() * 100.0, t.unit);
    }
    Ok(())
}

/// `finegrain calibrate hpca99`: a remote read miss under S-COMA,
/// Hurricane and Hurricane-1 (one protocol processor each), step by step
/// against HPCA 1999 Table 1, then the fit of the preset's fitted
/// unknowns to those steps done again: a preset at the fit's fixed point
/// prints the same values.
fn calibrate_remote_miss(machine: &MachineConfig) -> Result<()> {
    say!(
        "preset {}: remote read miss of a 64-byte block on an idle machine (2 nodes, 1 compute thread each), \
         measured / HPCA 1999 Table 1, in cycles",
        machine.name
    );
    let measured = remote_miss::measure(machine)?;
    print_steps(&measured)?;
    let totals: Vec<u64> = measured.iter().map(|m| m.iter().sum()).collect();
    let mut bad = Vec::new();
    for (k, system) in REMOTE_MISS_SYSTEMS.iter().enumerate() {
        let err = (totals[k] as f64 - REMOTE_MISS_TOTALS[k] as f64) / REMOTE_MISS_TOTALS[k] as f64;
        let ok = err.abs() <= REMOTE_MISS_TOLERANCE;
        say!(
            "{:<14} total {:>5} cycles against {:>5}: {:>+6.1}%  {}",
            system.label(),
            totals[k],
            REMOTE_MISS_TOTALS[k],
            err * 100.0,
            if ok { "ok" } else { "NO" }
        );
        if !ok {
            bad.push(system.label());
        }
    }
    say!("root-mean-square step error: {:.1} cycles", remote_miss::rms_step_error(&measured));
    say!("");
    say!("fit of the unknowns to Table 1's steps, again from this preset:");
    let f = remote_miss::fit(machine)?;
    for (field, v) in &f.values {
        say!("  {field} = {v}");
    }
    say!("  root-mean-square step error at the fit: {:.1} cycles", f.rms_cycles);
    if !bad.is_empty() {
        bail!(
            "the remote miss total of {} is off HPCA 1999 Table 1's by more than {}%",
            bad.join(", "),
            REMOTE_MISS_TOLERANCE * 100.0
        );
    }
    Ok(())
}

/// Table 1's steps, measured / paper, one column per system.
fn print_steps(measured: &[[u64; 12]; 3]) -> Result<()> {
    say!("{:<44} {:>13} {:>13} {:>13}", "step", "s-coma", "hurricane", "hurricane-1");
    for (i, (step, paper)) in REMOTE_MISS_STEPS.iter().enumerate() {
        let cell = |k: usize| format!("{} / {}", measured[k][i], paper[k]);
        say!("{:<44} {:>13} {:>13} {:>13}", step, cell(0), cell(1), cell(2));
    }
    let cell = |k: usize| format!("{} / {}", measured[k].iter().sum::<u64>(), REMOTE_MISS_TOTALS[k]);
    say!("{:<44} {:>13} {:>13} {:>13}", "total", cell(0), cell(1), cell(2));
    Ok(())
}
