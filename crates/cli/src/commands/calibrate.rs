//! `finegrain calibrate`: a preset's calibration targets measured back.

use crate::say;
use anyhow::{bail, Result};
use finegrain_apps::micro::{self, Protocol};
use finegrain_core::{DmaCalibration, MachineConfig};

/// The seed `finegrain calibrate` measures Lmin with.
const CALIBRATION_SEED: u64 = 1;

/// Ping-pong round trips the bare DMA flag time is averaged over.
const DMA_ROUNDS: u64 = 100;

pub fn calibrate(preset: &str) -> Result<()> {
    let machine = MachineConfig::load(preset)?;
    if let Some(cal) = machine.dma_calibration.clone() {
        return calibrate_dma(&machine, &cal);
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
        let l = micro::measure_lmin(&machine, p, CALIBRATION_SEED)?;
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
    Ok(())
}
