//! `finegrain calibrate`: a preset's calibration targets measured back
//! (see `finegrain_study::calibrate`).

use crate::say;
use anyhow::{bail, Result};

pub fn calibrate(preset: &str) -> Result<()> {
    let done = finegrain_study::calibrate::calibrate(preset)?;
    say!("{}", done.report.trim_end());
    if let Some(missed) = done.missed {
        bail!("{missed}");
    }
    Ok(())
}
