//! `finegrain calibrate`: a preset's ledger (where each of its values
//! comes from), then the numbers its paper states about primitives
//! measured back on it: Lmin for the scheduling paper's machines, the bare
//! DMA flag and the primitives for the co-processor paper's, and the
//! remote read miss of HPCA 1999 Table 1 for the PDQ paper's.

use anyhow::Result;
use finegrain_apps::dsm::remote_miss::{
    self, REMOTE_MISS_STEPS, REMOTE_MISS_SYSTEMS, REMOTE_MISS_TOLERANCE, REMOTE_MISS_TOTALS,
};
use finegrain_apps::micro::{self, Protocol};
use finegrain_apps::Sim;
use finegrain_core::config::{Ledger, ProvenanceKind};
use finegrain_core::{DmaCalibration, MachineConfig};
use std::fmt::Write as _;

/// The seed `finegrain calibrate` measures Lmin with.
const CALIBRATION_SEED: u64 = 1;

/// Ping-pong round trips the bare DMA flag time is averaged over.
const DMA_ROUNDS: u64 = 100;

/// Writes one line to `out` (a `String`, which cannot fail to take it).
macro_rules! w {
    ($out:expr, $($arg:tt)*) => {
        writeln!($out, $($arg)*).expect("writing to a String")
    };
}

/// What calibrating a preset found: the report, and which targets (if
/// any) the preset misses by more than its tolerance.
pub struct Calibrated {
    pub report: String,
    pub missed: Option<String>,
}

/// Calibrates preset `preset` (a name or a path).
pub fn calibrate(preset: &str) -> Result<Calibrated> {
    let mut out = String::new();
    let missed = calibrate_into(&mut out, preset)?;
    Ok(Calibrated { report: out, missed })
}

fn calibrate_into(out: &mut String, preset: &str) -> Result<Option<String>> {
    let machine = MachineConfig::load(preset)?;
    print_ledger(out, &machine);
    if let Some(cal) = machine.dma_calibration.clone() {
        return calibrate_dma(out, &machine, &cal);
    }
    if machine.dsm.is_some() && machine.calibration.is_none() {
        return calibrate_remote_miss(out, &machine);
    }
    let Some(cal) = machine.calibration.clone() else {
        return Ok(Some(format!("preset {preset} has no [calibration] or [dma_calibration] targets to measure")));
    };
    w!(
        out,
        "preset {}: Lmin under Fixed on an idle machine (2 nodes x 2 processors, one requester, seed {CALIBRATION_SEED})",
        machine.name
    );
    w!(out, "{:<10} {:>12} {:>10} {:>11} {:>8}  ok", "protocol", "cycles", "us", "target us", "error");
    let mut bad = Vec::new();
    for (p, target) in [(Protocol::Null, cal.lmin_null_us), (Protocol::Fetch, cal.lmin_fetch_us)] {
        let l = micro::measure_lmin(&Sim::idle(&machine, CALIBRATION_SEED), p)?;
        let us = machine.cycles_to_us(l);
        let err = (us - target) / target;
        let ok = err.abs() <= cal.tolerance;
        w!(
            out,
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
    Ok((!bad.is_empty()).then(|| {
        format!(
            "Lmin of {} is off its target by more than calibration.tolerance = {} (a fraction of the target)",
            bad.join(", "),
            cal.tolerance
        )
    }))
}

/// The preset's ledger, kind by kind: what the paper states, what follows
/// from it, what was fitted to a stated primitive number (measured back
/// below), and the estimates with the verdicts that move with them.
fn print_ledger(out: &mut String, machine: &MachineConfig) {
    let ledger = &machine.ledger;
    if ledger.is_empty() {
        w!(out, "preset {}: no [ledger] (a preset of one's own may leave it out)", machine.name);
        w!(out, "");
        return;
    }
    w!(out, "preset {}: where each of its {} parameters comes from ({})", machine.name, ledger.0.len(), counts(ledger));
    for kind in ProvenanceKind::ALL {
        if ledger.of_kind(kind).next().is_none() {
            continue;
        }
        w!(out, "");
        w!(out, "{}:", kind.name());
        for (path, p) in ledger.of_kind(kind) {
            w!(out, "  {path:<36} {}", p.source);
            if let Some(moves) = &p.moves {
                w!(out, "  {:<36} moves: {moves}", "");
            }
        }
    }
    w!(out, "");
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
fn calibrate_dma(out: &mut String, machine: &MachineConfig, cal: &DmaCalibration) -> Result<Option<String>> {
    w!(
        out,
        "preset {}: one-way time of a flag moved by bare DMA (2 nodes, half the round trip of {DMA_ROUNDS} ping-pongs)",
        machine.name
    );
    w!(out, "{:<10} {:>12} {:>10} {:>11} {:>8}  ok", "operation", "cycles", "us", "target us", "error");
    let cycles = finegrain_sim::coproc::dma_flag_one_way(machine, DMA_ROUNDS)?;
    let us = machine.cycles_to_us(cycles);
    let err = (us - cal.flag_one_way_us) / cal.flag_one_way_us;
    let ok = err.abs() <= cal.tolerance;
    w!(
        out,
        "{:<10} {:>12.1} {:>10.3} {:>11.3} {:>7.1}%  {}",
        "dma-flag",
        cycles,
        us,
        cal.flag_one_way_us,
        err * 100.0,
        if ok { "yes" } else { "NO" }
    );
    if !ok {
        return Ok(Some(format!(
            "the bare DMA flag's one-way time is off its target by more than dma_calibration.tolerance = {} (a \
             fraction of the target)",
            cal.tolerance
        )));
    }
    print_coproc_primitives(out, machine)?;
    Ok(None)
}

/// The rest of what the co-processor paper states about its primitives
/// (Table 1's round trips, Figure 3's values), measured back with each
/// residual, then the fit of the preset's fitted unknowns to Figure 3
/// done again: a preset at the fit's fixed point prints the same values.
fn print_coproc_primitives(out: &mut String, machine: &MachineConfig) -> Result<()> {
    use finegrain_apps::coproc_primitives::{fit, measure};
    w!(out, "");
    w!(out, "stated primitive numbers (IPPS 1996 Table 1 round trips, Figure 3 as Section 5.2 gives it), measured:");
    print_targets(out, &measure(machine)?);
    w!(out, "");
    w!(out, "fit of the unknowns to Figure 3 (Table 1 held out), again from this preset:");
    let f = fit(machine)?;
    for (field, v) in &f.values {
        w!(out, "  {field} = {v}");
    }
    w!(out, "  root-mean-square ln(measured / paper) over Figure 3: {:.3}", f.rms_log_error);
    print_targets(out, &f.targets);
    Ok(())
}

fn print_targets(out: &mut String, targets: &[finegrain_apps::coproc_primitives::Target]) {
    w!(out, "{:<34} {:>10} {:>10} {:>8}", "primitive", "measured", "paper", "error");
    for t in targets {
        w!(out, "{:<34} {:>10.1} {:>10.1} {:>7.1}%  {}", t.name, t.measured, t.paper, t.error() * 100.0, t.unit);
    }
}

/// `finegrain calibrate hpca99`: a remote read miss under S-COMA,
/// Hurricane and Hurricane-1 (one protocol processor each), step by step
/// against HPCA 1999 Table 1, then the fit of the preset's fitted
/// unknowns to those steps done again: a preset at the fit's fixed point
/// prints the same values.
fn calibrate_remote_miss(out: &mut String, machine: &MachineConfig) -> Result<Option<String>> {
    w!(
        out,
        "preset {}: remote read miss of a 64-byte block on an idle machine (2 nodes, 1 compute thread each), \
         measured / HPCA 1999 Table 1, in cycles",
        machine.name
    );
    let measured = remote_miss::measure(machine)?;
    print_steps(out, &measured);
    let totals: Vec<u64> = measured.iter().map(|m| m.iter().sum()).collect();
    let mut bad = Vec::new();
    for (k, system) in REMOTE_MISS_SYSTEMS.iter().enumerate() {
        let err = (totals[k] as f64 - REMOTE_MISS_TOTALS[k] as f64) / REMOTE_MISS_TOTALS[k] as f64;
        let ok = err.abs() <= REMOTE_MISS_TOLERANCE;
        w!(
            out,
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
    w!(out, "root-mean-square step error: {:.1} cycles", remote_miss::rms_step_error(&measured));
    w!(out, "");
    w!(out, "fit of the unknowns to Table 1's steps, again from this preset:");
    let f = remote_miss::fit(machine)?;
    for (field, v) in &f.values {
        w!(out, "  {field} = {v}");
    }
    w!(out, "  root-mean-square step error at the fit: {:.1} cycles", f.rms_cycles);
    Ok((!bad.is_empty()).then(|| {
        format!(
            "the remote miss total of {} is off HPCA 1999 Table 1's by more than {}%",
            bad.join(", "),
            REMOTE_MISS_TOLERANCE * 100.0
        )
    }))
}

/// Table 1's steps, measured / paper, one column per system.
fn print_steps(out: &mut String, measured: &[[u64; 12]; 3]) {
    w!(out, "{:<44} {:>13} {:>13} {:>13}", "step", "s-coma", "hurricane", "hurricane-1");
    for (i, (step, paper)) in REMOTE_MISS_STEPS.iter().enumerate() {
        let cell = |k: usize| format!("{} / {}", measured[k][i], paper[k]);
        w!(out, "{:<44} {:>13} {:>13} {:>13}", step, cell(0), cell(1), cell(2));
    }
    let cell = |k: usize| format!("{} / {}", measured[k].iter().sum::<u64>(), REMOTE_MISS_TOTALS[k]);
    w!(out, "{:<44} {:>13} {:>13} {:>13}", "total", cell(0), cell(1), cell(2));
}
