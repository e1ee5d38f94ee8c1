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
//! - [`claim`]: claims as values (statement, source, test, verdict);
//! - [`sweep`]: `finegrain sweep`, any workload over any grid of
//!   configuration fields, no claims;
//! - [`single`]: the record of one `finegrain run`;
//! - [`experiment`], [`output`], [`runner`], [`progress`], [`figures`],
//!   [`report`]: experiment files and inputs, output directories, parallel
//!   runs, progress, SVG charts, report skeleton.

#![forbid(unsafe_code)]

pub mod claim;
pub mod experiment;
pub mod figures;
pub mod output;
pub mod progress;
pub mod record;
pub mod regenerate;
pub mod report;
pub mod rerun;
pub mod reuse;
pub mod runner;
pub mod single;
pub mod studies;
pub mod study;
pub mod sweep;

/// Runs the experiment `name` (a shipped study's name, or a path to an
/// experiment file) into `out`, taking the runs the output directories
/// `reuse` hold exact records of instead of simulating them.
pub fn reproduce(
    name: &str,
    quick: bool,
    out: &std::path::Path,
    reuse: &[std::path::PathBuf],
) -> anyhow::Result<study::Reproduced> {
    let src = studies::source(name)?;
    let header = experiment::header(&src)?;
    let earlier = reuse::Earlier::new(reuse)?;
    match studies::find(&header.study) {
        Some(s) => s.reproduce(&src, quick, out, &earlier),
        None => anyhow::bail!("invalid study = {} in {}: allowed {}", header.study, src.origin, studies::names()),
    }
}
