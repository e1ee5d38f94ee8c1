//! What a study is: the [`Study`] trait, and the one pipeline every study
//! runs through (`finegrain reproduce`): check the experiment file, plan
//! the runs, run them on all cores, write the records and `results.csv`,
//! judge the claims, draw the figures, write the report.
//!
//! A new study is a module under `studies/` implementing [`Study`] and one
//! line in [`crate::studies::STUDIES`]; `reproduce --list`, `reproduce NAME`
//! and `rerun` then know it.

use crate::claim::Claim;
use crate::experiment::{Header, Source};
use crate::figures::Figure;
use crate::record::{Labels, RunRecord, Wall};
use crate::report::{self, Section};
use crate::reuse::{Earlier, Found};
use crate::{output, runner};
use anyhow::{Context, Result};
use finegrain_apps::WorkloadSpec;
use finegrain_sim::SimConfig;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One run a study plans: what it is (its labels) and what runs it.
#[derive(Clone, Debug)]
pub struct Planned<L> {
    pub labels: L,
    pub config: SimConfig,
    pub workload: WorkloadSpec,
}

/// A reproduced study: an experiment file's grid, what one run of it is,
/// and what the study makes of the runs (CSV rows, claims, figures,
/// report sections).
pub trait Study: Sized + Sync + 'static {
    /// Its name: the experiment file's `study`, and every record's.
    const NAME: &'static str;
    /// The experiment file shipped with finegrain (`experiments/NAME.toml`).
    const EXPERIMENT: &'static str;
    /// What one run is, in the study's terms (its record's labels).
    type Labels: Labels;
    /// The study's view of a finished run: its record, and whatever the
    /// study computes across runs for it.
    type Run: Send + Sync;

    /// Reads and checks the experiment file, both its grids, before
    /// anything runs; `quick` picks the grid the study will run.
    fn load(src: &Source, quick: bool) -> Result<Self>;
    /// The experiment file's common fields.
    fn header(&self) -> &Header;
    /// The runs of the chosen grid, in the order they are reported.
    fn plan(&self) -> Result<Vec<Planned<Self::Labels>>>;
    /// The finished runs, in plan order, as the study views them.
    fn view(&self, records: Vec<RunRecord<Self::Labels>>) -> Vec<Self::Run>;
    /// A run's record (what `runs/<id>.json` holds).
    fn record(run: &Self::Run) -> &RunRecord<Self::Labels>;
    /// `results.csv`'s header line (comma-separated column names).
    fn csv_header(&self) -> &'static str;
    /// A run's row of `results.csv`.
    fn csv_row(&self, run: &Self::Run) -> String;
    /// Every claim, judged on the runs.
    fn claims(&self, runs: &[Self::Run]) -> Vec<Claim>;
    /// Draws the figures into `out/figures/`.
    fn figures(&self, runs: &[Self::Run], out: &Path) -> Result<Vec<Figure>>;
    /// The report's paragraph on the setup, after its title.
    fn setup(&self, runs: &[Self::Run]) -> String;
    /// The report's sections after the claims: sensitivity runs, tables.
    fn sections(&self, runs: &[Self::Run], claims: &[Claim]) -> Vec<Section>;
}

/// What a reproduction leaves: its report, and each claim's verdict line.
pub struct Reproduced {
    pub report: PathBuf,
    pub verdicts: Vec<String>,
    /// With `--reuse`: how many runs were taken from earlier records.
    pub reused: Option<String>,
}

/// Runs study `S` from `src` into `out`, taking the runs `earlier` holds
/// records of instead of simulating them.
pub fn reproduce<S: Study>(src: &Source, quick: bool, out: &Path, earlier: &Earlier) -> Result<Reproduced> {
    let study = S::load(src, quick)?;
    output::prepare_out(out)?;
    let started = Instant::now();
    let planned = study.plan()?;
    let header = study.header();
    let mode = if quick { "quick" } else { "full" };
    let Ran { records, on_disk, reused } = run_or_reuse(S::NAME, &header.name, mode, &planned, earlier, out)?;
    let reused_line = reused.as_ref().map(|r| r.line(earlier, planned.len()));
    let runs = study.view(records);
    let csv = csv(&study, &runs);
    let records: Vec<&RunRecord<S::Labels>> = runs.iter().map(S::record).collect();
    output::write_records(out, Some(src), &records, &on_disk, &csv)?;
    let claims = study.claims(&runs);
    let figures = study.figures(&runs, out)?;
    let text = report::render(&report::Parts {
        header,
        src,
        mode,
        setup: study.setup(&runs),
        claims: &claims,
        sections: study.sections(&runs, &claims),
        figures: &figures,
        records: &records,
        reused: reused_line.as_deref(),
        started,
    });
    let path = out.join("report.md");
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(Reproduced { report: path, verdicts: claims.iter().map(Claim::line).collect(), reused: reused_line })
}

/// What `--reuse` did for a study: runs taken from earlier records, and
/// planned runs whose earlier records were of another run.
pub struct Reused {
    pub taken: usize,
    pub differing: usize,
}

impl Reused {
    /// The report's sentence on where the runs came from.
    fn line(&self, earlier: &Earlier, total: usize) -> String {
        let dirs: Vec<String> = earlier.dirs().iter().map(|d| format!("`{}`", d.display())).collect();
        let differing = match self.differing {
            0 => String::new(),
            n => format!(
                "; {n} planned run(s) had a record there of another configuration, workload or finegrain and were \
                 simulated again"
            ),
        };
        let simulated = match total - self.taken {
            0 => "none was simulated now".to_string(),
            n => format!("the other {n} were simulated now"),
        };
        format!(
            "{} of the {total} runs were taken from the records of earlier runs in {} (same study, labels, \
             configuration, seed and workload, so the same statistics as simulating them){differing}; {simulated}. \
             Without `--reuse` the same command simulates every run and gives the same results.",
            self.taken,
            dirs.join(", ")
        )
    }
}

/// A study's runs, done: their records in plan order, the record files
/// already written as the runs finished, and what `--reuse` took.
struct Ran<L> {
    records: Vec<RunRecord<L>>,
    on_disk: HashSet<String>,
    reused: Option<Reused>,
}

/// Simulates the planned runs on all cores, in plan order, except those
/// `earlier` holds exact records of, which are taken as they are. Each
/// simulated run's record goes to `out/runs/` as soon as it is done, so a
/// study stopped part way can be finished with `--reuse` of its `out`.
fn run_or_reuse<L: Labels>(
    study: &str,
    experiment: &str,
    mode: &str,
    planned: &[Planned<L>],
    earlier: &Earlier,
    out: &Path,
) -> Result<Ran<L>> {
    let mut found = Vec::with_capacity(planned.len());
    let mut differing = 0;
    for p in planned {
        found.push(match earlier.find(study, experiment, p)? {
            Found::Same(r, _) => Some(*r),
            Found::Differs => {
                differing += 1;
                None
            }
            Found::None => None,
        });
    }
    let to_run: Vec<&Planned<L>> = planned.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|(p, _)| p).collect();
    let taken = planned.len() - to_run.len();
    let label = format!("{experiment} ({mode})");
    let simulated = runner::run_all(
        &to_run,
        &label,
        |p| host_bytes(p),
        SimConfig::HOST_BYTES_LIMIT,
        |p| {
            let record = run_planned(study, experiment, p)?;
            output::write_json(&out.join("runs").join(output::record_file(&record.id)), &record)?;
            Ok(record)
        },
    )?;
    let on_disk = simulated.iter().map(|r| output::record_file(&r.id)).collect();
    let mut simulated = simulated.into_iter();
    let records = found.into_iter().map(|f| f.or_else(|| simulated.next())).collect::<Option<Vec<_>>>();
    let records = records.context("a simulated run went missing while merging the taken ones")?;
    let reused = (!earlier.is_empty()).then_some(Reused { taken, differing });
    Ok(Ran { records, on_disk, reused })
}

/// The most host memory a planned run's simulated caches may take.
pub fn host_bytes<L>(p: &Planned<L>) -> u64 {
    p.config.host_bytes()
}

/// Simulates one planned run into its record.
pub fn run_planned<L: Labels>(study: &str, experiment: &str, p: &Planned<L>) -> Result<RunRecord<L>> {
    let id = p.labels.id();
    let t0 = Instant::now();
    let out = p.workload.simulate(&p.config).with_context(|| format!("run {id}"))?;
    let wall = Wall::of(t0.elapsed(), &out.stats);
    Ok(RunRecord {
        study: study.to_string(),
        experiment: Some(experiment.to_string()),
        id,
        labels: p.labels.clone(),
        config: p.config.clone(),
        workload: p.workload.clone(),
        stats: out.stats,
        measures: out.measures,
        wall,
    })
}

fn csv<S: Study>(study: &S, runs: &[S::Run]) -> String {
    let mut s = String::from(study.csv_header());
    s.push('\n');
    for r in runs {
        s += &study.csv_row(r);
        s.push('\n');
    }
    s
}

/// A study as the registry holds it: what `reproduce` and `rerun` need,
/// whatever its types.
pub trait AnyStudy: Sync {
    fn name(&self) -> &'static str;
    /// The shipped experiment file's text.
    fn experiment(&self) -> &'static str;
    fn reproduce(&self, src: &Source, quick: bool, out: &Path, earlier: &Earlier) -> Result<Reproduced>;
    /// Regenerates one of its records (`finegrain rerun`), checking the
    /// record's labels with the study's own label type.
    fn rerun(&self, record: &str) -> Result<crate::regenerate::Rerun>;
}

/// Registers study `S` (see [`crate::studies::STUDIES`]).
pub struct Registered<S>(std::marker::PhantomData<S>);

impl<S> Registered<S> {
    pub const STUDY: Registered<S> = Registered(std::marker::PhantomData);
}

impl<S: Study> AnyStudy for Registered<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn experiment(&self) -> &'static str {
        S::EXPERIMENT
    }

    fn reproduce(&self, src: &Source, quick: bool, out: &Path, earlier: &Earlier) -> Result<Reproduced> {
        reproduce::<S>(src, quick, out, earlier)
    }

    fn rerun(&self, record: &str) -> Result<crate::regenerate::Rerun> {
        crate::regenerate::regenerate::<S::Labels>(record)
    }
}
