//! What a study is: the [`Study`] trait, and the one pipeline every study
//! runs through (`finegrain reproduce`): check the experiment file, plan
//! the runs, run them on all cores, write the records and `results.csv`,
//! judge the claims, draw the figures, write the report.
//!
//! A new study is a module under `studies/` implementing [`Study`] and one
//! line in [`crate::studies::STUDIES`]; `reproduce --list`, `reproduce NAME`
//! and `rerun` then know it.

use crate::claim::Claim;
use crate::experiment::{Experiment, Parsed, Source};
use crate::figures::Figure;
use crate::native_record::{NativePlan, NativeRecord, NotJudged};
use crate::output;
use crate::record::{Labels, RunRecord, Wall};
use crate::report::{self, Section};
use crate::reuse::{Earlier, Reused};
use crate::runner::{self, Work};
use anyhow::{Context, Result};
use finegrain_apps::{Measures, Sim, WorkloadSpec};
use finegrain_rt::MpiEnv;
use finegrain_sim::SimConfig;
use serde::de::DeserializeOwned;
use serde::Deserialize as _;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use crate::record::Planned;

/// A reproduced study: an experiment file's grid, what one run of it is,
/// and what the study makes of the runs (claims, figures, report
/// sections). Only what differs between studies is stated by each; the
/// experiment file is read, the grid chosen and the runs' measures typed
/// here.
pub trait Study: Sized + Sync + 'static {
    /// Its name: the experiment file's `study`, and every record's.
    const NAME: &'static str;
    /// The experiment file shipped with finegrain (`experiments/NAME.toml`).
    const EXPERIMENT: &'static str;
    /// The experiment file's top-level fields besides the [`Header`]
    /// (`NoFields` for none); unknown ones are refused.
    type Own: DeserializeOwned;
    /// One of its grids (`[full]` and `[quick]`).
    type Grid: DeserializeOwned;
    /// What one run is, in the study's terms (its record's labels).
    type Labels: Labels;
    /// The study's view of a finished run.
    type Run: StudyRun<Self::Labels>;

    /// Checks the experiment (both grids' fields; the runs of the grid
    /// that runs) and prepares what planning needs, before anything runs.
    fn load(exp: Experiment<Self::Own, Self::Grid>, src: &Source) -> Result<Self>;
    /// The experiment it was loaded from.
    fn experiment(&self) -> &Experiment<Self::Own, Self::Grid>;
    /// The runs of the grid that runs, in the order they are reported.
    fn plan(&self) -> Result<Vec<Planned<Self::Labels>>>;
    /// The finished runs, in plan order, as the study views them: each on
    /// its own, unless the study computes something across runs.
    fn view(&self, runs: Vec<Measured<Self::Labels>>) -> Result<Vec<Self::Run>> {
        runs.into_iter().map(Self::Run::of).collect()
    }
    /// Every claim, judged on the runs.
    fn claims(&self, runs: &[Self::Run]) -> Vec<Claim>;
    /// Draws the figures into `out/figures/`.
    fn figures(&self, runs: &[Self::Run], out: &Path) -> Result<Vec<Figure>>;
    /// The report's paragraph on the setup, after its title.
    fn setup(&self, runs: &[Self::Run]) -> String;
    /// The report's sections after the claims: sensitivity runs, tables.
    fn sections(&self, _runs: &[Self::Run], _claims: &[Claim]) -> Vec<Section> {
        Vec::new()
    }

    /// Whether `reproduce --platform native` runs it on threads of this
    /// process (see [`crate::native`]).
    const NATIVE: bool = false;
    /// The planned runs that mean something on real threads, and why the
    /// others are left out: every planned run unless the study says.
    fn native_plan(&self) -> Result<NativePlan<Self::Labels>> {
        Ok(NativePlan { runs: self.plan()?, left_out: None })
    }
    /// The claims native runs cannot judge, each with why.
    fn not_judged_natively(&self) -> Vec<NotJudged> {
        Vec::new()
    }
    /// The report's sections on native runs (their measured times).
    fn native_sections(&self, _runs: &[NativeRecord<Self::Labels>]) -> Vec<Section> {
        Vec::new()
    }
}

/// Loads study `S` from the experiment `src`: parsed once, typed as the
/// study's, the grid `quick` picks chosen.
pub fn load<S: Study>(src: &Source, quick: bool) -> Result<S> {
    load_parsed(src, src.parsed()?, quick)
}

pub(crate) fn load_parsed<S: Study>(src: &Source, exp: Parsed, quick: bool) -> Result<S> {
    S::load(exp.typed(src, S::NAME, quick)?, src)
}

/// A finished run's record with its measures typed by its labels
/// ([`Labels::Measures`]).
pub struct Measured<L: Labels> {
    pub record: RunRecord<L>,
    pub measures: Option<L::Measures>,
}

/// The record's measures as its labels' type: malformed ones are an error
/// naming the run, never left out.
pub fn measured<L: Labels>(record: RunRecord<L>) -> Result<Measured<L>> {
    let measures = match &record.measures {
        None => None,
        Some(v) => Some(
            L::Measures::deserialize(v).with_context(|| format!("run {}: its measures are malformed", record.id))?,
        ),
    };
    Ok(Measured { record, measures })
}

/// A study's view of one finished run: made from its record and typed
/// measures, and its row of `results.csv`.
pub trait StudyRun<L: Labels>: Sized + Send + Sync {
    /// `results.csv`'s header line (comma-separated column names).
    const CSV_HEADER: &'static str;
    /// The run on its own (what [`Study::view`] does not add across runs);
    /// an error names a run whose record lacks what the study reads.
    fn of(run: Measured<L>) -> Result<Self>;
    /// Its record (what `runs/<id>.json` holds).
    fn record(&self) -> &RunRecord<L>;
    /// Its row of `results.csv`.
    fn csv_row(&self) -> String;
}

/// What a reproduction leaves: its report and its verdicts as lines for a
/// terminal
/// (none for one share of a batch job, which leaves only its runs'
/// records), and notes on where the runs came from.
pub struct Reproduced {
    pub report: Option<PathBuf>,
    pub verdicts: Vec<String>,
    /// Runs taken from earlier records (`--reuse`), how they were spread
    /// over MPI ranks, which share a shard ran.
    pub notes: Vec<String>,
}

/// Where a study's runs are simulated.
pub enum Spread {
    /// On this host's cores.
    Cores,
    /// Share `index` (1-based) of `count`: one task of a batch job, which
    /// leaves its runs' records for `reproduce --reuse` to gather.
    Shard { index: u32, count: u32 },
    /// Over the MPI ranks of this `mpirun`.
    Ranks(MpiEnv),
}

impl Spread {
    /// The ranks of an `mpirun` that started this process with more than
    /// one (Open MPI's or a PMI launcher's environment says so), else this
    /// host's cores.
    pub fn detect() -> Result<Spread> {
        let size = MpiEnv::launched_ranks().unwrap_or(1);
        if size <= 1 {
            return Ok(Spread::Cores);
        }
        if MpiEnv::BUILT_IN {
            return Ok(Spread::Ranks(MpiEnv::init(1).map_err(anyhow::Error::msg)?));
        }
        anyhow::bail!(
            "started by mpirun with {size} ranks, but this finegrain was built without MPI (--no-default-features); \
             allowed: a build with the mpi feature, or one process (its runs use every core)"
        )
    }

    /// `--shard I/N`: share I of N, 1 <= I <= N <= 100000.
    pub fn shard(text: &str) -> Result<Spread> {
        let bad = || {
            anyhow::anyhow!(
                "invalid --shard {text}: allowed I/N, share I of N with 1 <= I <= N <= 100000 (for a Slurm array \
                 --array=1-N: --shard $SLURM_ARRAY_TASK_ID/N)"
            )
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse::<u32>().map_err(|_| bad())?, n.trim().parse::<u32>().map_err(|_| bad())?);
        if !(1..=100_000).contains(&count) || !(1..=count).contains(&index) {
            return Err(bad());
        }
        Ok(Spread::Shard { index, count })
    }

    /// Whether this process writes the outputs (not an MPI worker rank).
    fn writes(&self) -> bool {
        match self {
            Spread::Ranks(env) => env.rank == 0,
            _ => true,
        }
    }
}

/// Runs study `S` from `src` into `out`, taking the runs `earlier` holds
/// records of instead of simulating them, simulating the rest as `spread`
/// says. None on an MPI rank other than the first, which only ran runs.
pub fn reproduce<S: Study>(
    src: &Source,
    exp: Parsed,
    quick: bool,
    out: &Path,
    earlier: &Earlier,
    spread: &Spread,
) -> Result<Option<Reproduced>> {
    let study: S = load_parsed(src, exp, quick)?;
    let planned = study.plan()?;
    let header = &study.experiment().header;
    let mode = study.experiment().mode.table();
    if let Spread::Ranks(env) = spread {
        if env.rank != 0 {
            let experiment = header.name.clone();
            crate::ranks::serve(env, &planned, |p| record_text(S::NAME, &experiment, p))?;
            return Ok(None);
        }
    }
    debug_assert!(spread.writes());
    output::prepare_out(out)?;
    let started = Instant::now();
    let ran = run_or_reuse(S::NAME, &header.name, mode, &planned, earlier, out, spread)?;
    let mut notes: Vec<String> = ran.reused.as_ref().map(|r| r.digest_notes()).unwrap_or_default();
    notes.extend(ran.reused.as_ref().map(|r| r.line(earlier, planned.len())));
    notes.extend(ran.spread_line);
    let Some(records) = ran.records else {
        return Ok(Some(Reproduced { report: None, verdicts: Vec::new(), notes }));
    };
    let runs = study.view(records.into_iter().map(measured).collect::<Result<_>>()?)?;
    let csv = csv::<S::Labels, S::Run>(&runs);
    let records: Vec<&RunRecord<S::Labels>> = runs.iter().map(StudyRun::record).collect();
    output::write_records(out, Some(src), &records, &ran.on_disk, &csv)?;
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
        notes: &notes,
        started,
    });
    let path = out.join("report.md");
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(Some(Reproduced { report: Some(path), verdicts: report::verdict_table(&claims), notes }))
}

/// A study's runs, done: their records in plan order (None for a shard,
/// which has only its share), the record files already written as the
/// runs finished, what `--reuse` took, and how the runs were spread.
struct Ran<L> {
    records: Option<Vec<RunRecord<L>>>,
    on_disk: HashSet<String>,
    reused: Option<Reused>,
    spread_line: Option<String>,
}

/// Simulates the planned runs, longest first, as `spread` says, except
/// those `earlier` holds exact records of, which are taken as they are.
/// Each simulated run's record goes to `out/runs/` as soon as it is done,
/// so a study stopped part way can be finished with `--reuse` of its `out`.
fn run_or_reuse<L: Labels>(
    study: &str,
    experiment: &str,
    mode: &str,
    planned: &[Planned<L>],
    earlier: &Earlier,
    out: &Path,
    spread: &Spread,
) -> Result<Ran<L>> {
    let mut reused = Reused::default();
    let mut found = Vec::with_capacity(planned.len());
    for p in planned {
        found.push(reused.count(earlier.find(study, experiment, p)?));
    }
    let work = Work {
        specs: planned,
        costs: planned.iter().map(|p| p.workload.planned_seconds(&p.config)).collect(),
        names: planned.iter().map(|p| p.labels.id()).collect(),
    };
    let to_run: Vec<usize> = (0..planned.len()).filter(|&i| found[i].is_none()).collect();
    reused.taken = planned.len() - to_run.len();
    let reused = (!earlier.is_empty()).then_some(reused);
    let label = format!("{experiment} ({mode})");
    let write = |p: &Planned<L>| -> Result<RunRecord<L>> {
        let record = run_planned(study, experiment, p)?;
        output::write_json(&out.join("runs").join(output::record_file(&record.id)), &record)?;
        Ok(record)
    };
    let (simulated, spread_line) = match spread {
        Spread::Cores => {
            (runner::on_cores(&work, &to_run, &label, |p| host_bytes(p), SimConfig::host_bytes_limit(), write)?, None)
        }
        Spread::Shard { index, count } => {
            let share = work.share(*index, *count);
            let mine: Vec<usize> = share.iter().copied().filter(|&i| found[i].is_none()).collect();
            let label = format!("{label}, share {index}/{count}");
            runner::on_cores(&work, &mine, &label, |p| host_bytes(p), SimConfig::host_bytes_limit(), write)?;
            let line = shard_line(&work, &share, mine.len(), *index, *count);
            let on_disk = mine.iter().map(|&i| output::record_file(&work.names[i])).collect();
            return Ok(Ran { records: None, on_disk, reused, spread_line: Some(line) });
        }
        Spread::Ranks(env) => {
            let read = |i: usize, text: &str| -> Result<RunRecord<L>> {
                let crate::reuse::Read::Same(record) = crate::reuse::record_of(text, study, experiment, &planned[i])?
                else {
                    anyhow::bail!("it is not a record of run {} of this plan with its content's digest", work.names[i]);
                };
                let path = out.join("runs").join(output::record_file(&record.id));
                std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
                Ok(*record)
            };
            let run = |p: &Planned<L>| record_text(study, experiment, p);
            let (records, tally) = crate::ranks::coordinate(env, &work, &to_run, &label, run, read)?;
            (records, Some(tally.line(to_run.len())))
        }
    };
    let on_disk = to_run.iter().map(|&i| output::record_file(&work.names[i])).collect();
    let records = found.into_iter().zip(simulated).map(|(f, s)| f.or(s)).collect::<Option<Vec<_>>>();
    let records = records.context("a simulated run went missing while merging the taken ones")?;
    Ok(Ran { records: Some(records), on_disk, reused, spread_line })
}

/// A shard's note: which share it ran, and how to gather the shares.
fn shard_line<S>(work: &Work<S>, share: &[usize], simulated: usize, index: u32, count: u32) -> String {
    format!(
        "share {index}/{count}: {} of the {} runs ({simulated} simulated now, the rest taken from earlier records), \
         planned {:.0} of {:.0} core-seconds; no report: gather the shares with `finegrain reproduce EXPERIMENT \
         --reuse DIR --out OUT`, DIR holding every share's output directory",
        share.len(),
        work.specs.len(),
        work.cost_of(share),
        work.costs.iter().sum::<f64>()
    )
}

/// Simulates one planned run into its record's text, as `runs/<id>.json`
/// holds it (what an MPI worker rank sends rank 0).
fn record_text<L: Labels>(study: &str, experiment: &str, p: &Planned<L>) -> Result<String> {
    output::json_text(&run_planned(study, experiment, p)?)
}

/// The most host memory a planned run's simulated caches may take.
pub fn host_bytes<L>(p: &Planned<L>) -> u64 {
    p.config.host_bytes()
}

/// Simulates one planned run into its record.
pub fn run_planned<L: Labels>(study: &str, experiment: &str, p: &Planned<L>) -> Result<RunRecord<L>> {
    let id = p.labels.id();
    let t0 = Instant::now();
    let out = p.workload.run(&Sim(p.config.clone())).with_context(|| format!("run {id}"))?;
    let wall = Wall::of(t0.elapsed(), &out.stats);
    Ok(RunRecord {
        study: study.to_string(),
        experiment: Some(experiment.to_string()),
        id,
        labels: p.labels.clone(),
        config: p.config.clone(),
        workload: p.workload.clone(),
        stats: out.stats,
        measures: out.measures.as_ref().map(Measures::to_json),
        wall,
    })
}

fn csv<L: Labels, R: StudyRun<L>>(runs: &[R]) -> String {
    let mut s = String::from(R::CSV_HEADER);
    s.push('\n');
    for r in runs {
        s += &r.csv_row();
        s.push('\n');
    }
    s
}

/// One planned run as `reproduce --plan` writes it.
#[derive(serde::Serialize)]
struct PlannedRun<'a, L> {
    id: String,
    /// An estimate from the input's size (see
    /// [`WorkloadSpec::planned_seconds`]).
    planned_seconds: f64,
    labels: &'a L,
    config: &'a SimConfig,
    workload: &'a WorkloadSpec,
}

/// Writes study `S`'s planned runs to `dir/plan.json` (longest first, each
/// with its planned cost and everything that runs it), for a batch job to
/// size its array; returns a summary to print.
pub fn write_plan<S: Study>(src: &Source, exp: Parsed, quick: bool, dir: &Path) -> Result<String> {
    let study: S = load_parsed(src, exp, quick)?;
    let planned = study.plan()?;
    let header = &study.experiment().header;
    let work = Work {
        specs: &planned,
        costs: planned.iter().map(|p| p.workload.planned_seconds(&p.config)).collect(),
        names: planned.iter().map(|p| p.labels.id()).collect(),
    };
    let order = work.longest_first();
    let runs: Vec<PlannedRun<S::Labels>> = order
        .iter()
        .map(|&i| PlannedRun {
            id: work.names[i].clone(),
            planned_seconds: work.costs[i],
            labels: &planned[i].labels,
            config: &planned[i].config,
            workload: &planned[i].workload,
        })
        .collect();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mode = study.experiment().mode.table();
    let file = serde_json::json!({ "study": S::NAME, "experiment": header.name, "mode": mode, "runs": runs });
    let path = dir.join("plan.json");
    output::write_json(&path, &file)?;
    let total: f64 = work.costs.iter().sum();
    let longest = order
        .first()
        .map_or(String::new(), |&i| format!("; the longest, {}, about {:.0} s", work.names[i], work.costs[i]));
    Ok(format!(
        "{}: {} runs ({mode}), planned {:.1} core-hours{longest}; written to {} (longest first)",
        header.name,
        planned.len(),
        total / 3600.0,
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::{coprocessor, pdq_dsm, pdq_micro, scheduling_micro};

    /// A record of study `S`'s first planned run, with `measures` as its
    /// measures (statistics left empty: only the measures are read here).
    fn record<S: Study>(measures: Option<serde_json::Value>) -> RunRecord<S::Labels> {
        let src = crate::studies::source(S::NAME).unwrap();
        let p = load::<S>(&src, true).unwrap().plan().unwrap().remove(0);
        RunRecord {
            study: S::NAME.into(),
            experiment: Some(S::NAME.into()),
            id: p.labels.id(),
            labels: p.labels,
            config: p.config,
            workload: p.workload,
            stats: Default::default(),
            measures,
            wall: Default::default(),
        }
    }

    /// Measures of the wrong shape are an error naming the run in every
    /// study that reads them (pdq-micro reads none: it computes the home's
    /// measures from the statistics).
    #[test]
    fn malformed_measures_are_an_error_naming_the_run() {
        let bad = Some(serde_json::json!({"time": "soon"}));
        let errors = [
            measured(record::<coprocessor::Coprocessor>(bad.clone())).err(),
            measured(record::<pdq_dsm::PdqDsm>(bad.clone())).err(),
            measured(record::<scheduling_micro::SchedulingMicro>(bad.clone())).err(),
        ];
        for e in errors {
            let e = format!("{:#}", e.expect("malformed measures were taken"));
            assert!(e.starts_with("run ") && e.contains("its measures are malformed"), "{e}");
        }
        assert!(measured(record::<pdq_micro::PdqMicro>(bad)).is_ok());
        // A DSM run without measures cannot be viewed either.
        let r = measured(record::<pdq_dsm::PdqDsm>(None)).unwrap();
        let e = <pdq_dsm::Run as StudyRun<_>>::of(r).err().expect("a DSM run without measures was taken").to_string();
        assert!(e.contains("its record has no measures, which every DSM run has"), "{e}");
    }

    /// Only the grid that runs is planned: a full grid whose runs the
    /// simulator would refuse (affinity passes beyond the device) stops
    /// the full study before any run, and not the quick one, whose grid
    /// fields are checked all the same.
    #[test]
    fn only_the_grid_that_runs_is_planned() {
        let text = pdq_micro::PdqMicro::EXPERIMENT;
        let at = text.find("[full]").unwrap();
        let (head, full) = text.split_at(at);
        let edited = format!("{head}{}", full.replacen("affinity_passes = 16", "affinity_passes = 2000000", 1));
        assert_ne!(edited, text, "the full grid names its affinity passes");
        let src = Source::shipped("pdq-micro", &edited);
        assert!(load::<pdq_micro::PdqMicro>(&src, true).is_ok());
        let e = load::<pdq_micro::PdqMicro>(&src, false).err().unwrap().to_string();
        assert!(e.starts_with("invalid experiment (full run ") && e.contains("affinity_passes = 2000000"), "{e}");
        let bad_field = format!("{head}{}", full.replacen("keys = [1, 4, 64, 4096]", "keys = [1, 4, 64, 4096, 4]", 1));
        assert_ne!(bad_field, text);
        let e = load::<pdq_micro::PdqMicro>(&Source::shipped("pdq-micro", &bad_field), true).err().unwrap().to_string();
        assert!(e.starts_with("invalid full.keys"), "the full grid's fields are checked under quick: {e}");
    }
}
