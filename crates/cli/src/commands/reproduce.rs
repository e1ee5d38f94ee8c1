//! `finegrain reproduce`: run a study and print its verdicts.

use crate::say;
use anyhow::{bail, Result};
use finegrain_study::platform::StudyPlatform;
use finegrain_study::study::{Reproduced, Spread};
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
    /// `--platform NAME`, as given.
    pub platform: String,
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
    let platform = StudyPlatform::parse(&what.platform)?;
    if platform == StudyPlatform::Native {
        refuse_with_native(what)?;
        let t0 = Instant::now();
        return show(&finegrain_study::reproduce_native(&name, what.quick, &what.out)?, what, t0);
    }
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
    show(&done, what, t0)
}

/// What does not go with `--platform native`: native runs are neither
/// deterministic nor regenerable, so no earlier record is the same run
/// (`--reuse`), and shares run on other hosts, at other times or beside
/// each other (`--shard`, `--plan` for a batch job, MPI ranks) could not
/// be put together.
fn refuse_with_native(what: &What) -> Result<()> {
    if !what.reuse.is_empty() {
        bail!(
            "invalid --reuse with --platform native: native runs differ from one run to the next, so no earlier \
             record is the same run; allowed --reuse with --platform sim"
        );
    }
    if what.shard.is_some() || what.plan.is_some() {
        let flag = if what.shard.is_some() { "--shard" } else { "--plan" };
        bail!(
            "invalid {flag} with --platform native: a native study runs on one host, one run at a time, since times \
             measured on other hosts or beside other runs do not compare; allowed {flag} with --platform sim"
        );
    }
    if !matches!(Spread::detect()?, Spread::Cores) {
        bail!(
            "invalid --platform native under mpirun: every rank would run the whole study beside the others; allowed \
             --platform native in one process (or --platform sim, whose runs spread over the ranks)"
        );
    }
    Ok(())
}

/// Prints a reproduction's notes, verdicts and where its report is.
fn show(done: &Reproduced, what: &What, t0: Instant) -> Result<()> {
    for note in &done.notes {
        crate::note(format_args!("{note}"));
    }
    for line in &done.verdicts {
        say!("{line}");
    }
    match &done.report {
        Some(report) => say!(
            "report: {} ({:.1} s; each claim's checks are tabled there)",
            report.display(),
            t0.elapsed().as_secs_f64()
        ),
        None => say!("records: {} ({:.1} s)", what.out.join("runs").display(), t0.elapsed().as_secs_f64()),
    }
    Ok(())
}
