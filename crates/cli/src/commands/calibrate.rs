//! `finegrain calibrate`: a preset's calibration targets measured back.

use crate::say;
use anyhow::{bail, Result};
use finegrain_apps::micro::{self, Protocol};
use finegrain_core::MachineConfig;

/// The seed `finegrain calibrate` measures Lmin with.
const CALIBRATION_SEED: u64 = 1;

pub fn calibrate(preset: &str) -> Result<()> {
    let machine = MachineConfig::load(preset)?;
    let Some(cal) = machine.calibration.clone() else {
        bail!("preset {preset} has no [calibration] targets to measure");
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
