//! `finegrain reproduce`: run a study and print its verdicts.

use crate::say;
use anyhow::{bail, Result};
use finegrain_study::{experiment, studies};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Lists the shipped studies with their titles.
pub fn list() -> Result<()> {
    for s in studies::STUDIES {
        let src = studies::source(s.name())?;
        let header = experiment::header(&src)?;
        say!("{:<20} {}", s.name(), header.title);
    }
    Ok(())
}

pub fn reproduce(name: Option<String>, quick: bool, out: &Path, reuse: &[PathBuf], list_them: bool) -> Result<()> {
    if list_them {
        if let Some(name) = name {
            bail!("--list takes no experiment name (got '{name}'): it lists them all");
        }
        return list();
    }
    let Some(name) = name else {
        bail!("missing experiment name: give one of `finegrain reproduce --list`");
    };
    let t0 = Instant::now();
    let done = finegrain_study::reproduce(&name, quick, out, reuse)?;
    if let Some(reused) = &done.reused {
        crate::note(format_args!("{reused}"));
    }
    for line in &done.verdicts {
        say!("{line}");
    }
    say!("report: {} ({:.1} s)", done.report.display(), t0.elapsed().as_secs_f64());
    Ok(())
}
