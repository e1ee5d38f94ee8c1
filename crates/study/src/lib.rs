//! finegrain-study: the experiment machinery every study shares, and the
//! studies themselves.
//!
//! - [`study`]: the [`Study`](study::Study) trait and the pipeline of
//!   `finegrain reproduce` (plan, run on all cores, records, CSV, claims,
//!   figures, report);
//! - [`studies`]: the reproduced studies, registered in one list;
//! - [`record`]: the one run record every simulated run leaves;
//!   [`regenerate`] reruns one from its record with its labels' type, and
//!   [`rerun`] picks that type by the record's study; [`reuse`] takes
//!   finished runs from earlier records (`reproduce --reuse`);
//! - [`calibrate`]: a preset's paper targets measured back (`finegrain
//!   calibrate`);
//! - [`claim`]: claims as values (statement, source, test, verdict);
//! - [`sweep`]: `finegrain sweep`, any workload over any grid of
//!   configuration fields, no claims;
//! - [`single`]: the record of one `finegrain run`; [`run`]: each
//!   workload's options, the run they build, and what it reports;
//! - [`experiment`], [`output`], [`runner`], [`progress`], [`figures`],
//!   [`report`]: experiment files and inputs, output directories, runs on
//!   all cores longest first (or one share of a batch job), progress, SVG
//!   charts, report skeleton; [`ranks`] spreads a study's runs over the
//!   ranks of an `mpirun` (in a build with MPI, the `mpi` feature).

#![forbid(unsafe_code)]

pub mod calibrate;
pub mod claim;
pub mod experiment;
pub mod figures;
pub mod native;
pub mod native_record;
pub mod output;
pub mod platform;
pub mod progress;
pub mod ranks;
pub mod record;
pub mod regenerate;
pub mod registry;
pub mod report;
pub mod rerun;
pub mod reuse;
pub mod run;
pub mod runner;
pub mod single;
pub mod studies;
pub mod study;
pub mod sweep;
pub mod table;

/// Runs the experiment `name` (a shipped study's name, or a path to an
/// experiment file) into `out`, taking the runs the output directories
/// `reuse` hold exact records of instead of simulating them, and
/// simulating the others as `spread` says. None on an MPI rank that only
/// ran runs for the first.
pub fn reproduce(
    name: &str,
    quick: bool,
    out: &std::path::Path,
    reuse: &[std::path::PathBuf],
    spread: &study::Spread,
) -> anyhow::Result<Option<study::Reproduced>> {
    let src = studies::source(name)?;
    let exp = src.parsed()?;
    let earlier = reuse::Earlier::new(reuse)?;
    match studies::find(&exp.header.study) {
        Some(s) => s.reproduce(&src, exp, quick, out, &earlier, spread),
        None => anyhow::bail!("invalid study = {} in {}: allowed {}", exp.header.study, src.origin, studies::names()),
    }
}

/// Runs the experiment `name` on threads of this process into `out`
/// (`finegrain reproduce --platform native`): a study that cannot run
/// there is refused, naming those that can.
pub fn reproduce_native(name: &str, quick: bool, out: &std::path::Path) -> anyhow::Result<study::Reproduced> {
    let src = studies::source(name)?;
    let exp = src.parsed()?;
    let Some(s) = studies::find(&exp.header.study) else {
        anyhow::bail!("invalid study = {} in {}: allowed {}", exp.header.study, src.origin, studies::names())
    };
    if !s.runs_natively() {
        anyhow::bail!(
            "invalid --platform native for study {}: it runs on the simulator only; allowed --platform native \
             with {} (or --platform sim)",
            s.name(),
            studies::native_names()
        );
    }
    s.reproduce_native(&src, exp, quick, out)
}

/// Writes the planned runs of experiment `name` to `dir/plan.json`
/// (`finegrain reproduce --plan`); returns a summary to print.
pub fn plan(name: &str, quick: bool, dir: &std::path::Path) -> anyhow::Result<String> {
    let src = studies::source(name)?;
    let exp = src.parsed()?;
    match studies::find(&exp.header.study) {
        Some(s) => s.write_plan(&src, exp, quick, dir),
        None => anyhow::bail!("invalid study = {} in {}: allowed {}", exp.header.study, src.origin, studies::names()),
    }
}
