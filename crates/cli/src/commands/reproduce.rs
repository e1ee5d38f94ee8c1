//! `finegrain reproduce`: run a study and print its verdicts.

use crate::say;
use anyhow::{bail, Result};
use finegrain_study::study::Spread;
use finegrain_study::{experiment, studies};
use std::path::PathBuf;
use std::time::Instant;

/// Lists the shipped studies with their titles.
pub fn list() -> Result<()> {
    for name in studies::experiment_names() {
        let src = studies::source(name)?;
        let header = experiment::header(&src)?;
        say!("{:<22} {}", name, header.title);
    }
    Ok(())
}

/// What `reproduce` was asked to do with an experiment.
pub struct What {
    pub quick: bool,
    pub out: PathBuf,
    pub reuse: Vec<PathBuf>,
    /// `--shard I/N`, as given.
    pub shard: Option<String>,
    /// `--plan DIR`.
    pub plan: Option<PathBuf>,
}

pub fn reproduce(name: Option<String>, what: &What, list_them: bool) -> Result<()> {
    if list_them {
        if let Some(name) = name {
            bail!("--list takes no experiment name (got '{name}'): it lists them all");
        }
        return list();
    }
    let Some(name) = name else {
        bail!("missing experiment name: give one of `finegrain reproduce --list`");
    };
    if let Some(dir) = &what.plan {
        say!("{}", finegrain_study::plan(&name, what.quick, dir)?);
        return Ok(());
    }
    let spread = match &what.shard {
        Some(s) => Spread::shard(s)?,
        None => Spread::detect()?,
    };
    let t0 = Instant::now();
    let Some(done) = finegrain_study::reproduce(&name, what.quick, &what.out, &what.reuse, &spread)? else {
        return Ok(()); // an MPI rank that ran runs for the first
    };
    for note in &done.notes {
        crate::note(format_args!("{note}"));
    }
    for line in &done.verdicts {
        say!("{line}");
    }
    match &done.report {
        Some(report) => say!("report: {} ({:.1} s)", report.display(), t0.elapsed().as_secs_f64()),
        None => say!("records: {} ({:.1} s)", what.out.join("runs").display(), t0.elapsed().as_secs_f64()),
    }
    Ok(())
}
