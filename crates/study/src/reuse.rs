//! Taking finished runs from earlier records (`finegrain reproduce
//! --reuse DIR`): a study planned in pieces (the pdq-dsm paper inputs take
//! hours on 2 cores), or stopped part way, is put together without
//! simulating any run twice.
//!
//! A simulation is deterministic, so a record whose study, labels, whole
//! configuration (seed included) and workload equal a planned run's holds
//! exactly what simulating it would give. Such a record is taken as it is,
//! statistics and wall-clock figures alike, and only if it reads back into
//! the same bytes it was written as: a record edited by hand, or written
//! by a finegrain whose records differ, is simulated again instead.

use crate::record::{Labels, RunRecord};
use crate::regenerate::RecordIn;
use crate::study::Planned;
use anyhow::{bail, Context, Result};
use finegrain_sim::RunStats;
use std::path::{Path, PathBuf};

/// The output directories of earlier runs to take records from, in the
/// order they are searched.
#[derive(Clone, Debug, Default)]
pub struct Earlier {
    dirs: Vec<PathBuf>,
}

/// What the earlier records gave one planned run.
pub enum Found<L> {
    /// A record of exactly this run: taken, from this file.
    Same(Box<RunRecord<L>>, PathBuf),
    /// A record of this id that is not this run (another configuration,
    /// workload or finegrain): it is simulated.
    Differs,
    /// No record of this id.
    None,
}

impl Earlier {
    /// Checks that each directory holds a study's records (`runs/`), or
    /// holds directories that do (the output directories of a batch job's
    /// shares, taken in name order), so a mistyped path is an error before
    /// any run, not a silent simulate-everything.
    pub fn new(dirs: &[PathBuf]) -> Result<Earlier> {
        let mut found = Vec::new();
        for d in dirs {
            if d.join("runs").is_dir() {
                found.push(d.clone());
                continue;
            }
            let mut inner: Vec<PathBuf> = std::fs::read_dir(d)
                .map(|entries| {
                    entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.join("runs").is_dir()).collect()
                })
                .unwrap_or_default();
            if inner.is_empty() {
                bail!(
                    "invalid --reuse {}: it has no runs/ directory, nor directories that have one; allowed the --out \
                     directory of an earlier `finegrain reproduce`, or a directory of them (a batch job's shares)",
                    d.display()
                );
            }
            inner.sort();
            found.extend(inner);
        }
        Ok(Earlier { dirs: found })
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// The directories, for the report.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The first earlier record of exactly run `p` of study `study`.
    pub fn find<L: Labels>(&self, study: &str, experiment: &str, p: &Planned<L>) -> Result<Found<L>> {
        let id = p.labels.id();
        let mut found = Found::None;
        for dir in &self.dirs {
            let path = dir.join("runs").join(crate::output::record_file(&id));
            if !path.is_file() {
                continue;
            }
            match same_run(&path, study, experiment, p)? {
                Some(record) => return Ok(Found::Same(Box::new(record), path)),
                None => found = Found::Differs,
            }
        }
        Ok(found)
    }
}

/// The record at `path` if it is exactly run `p`, read back byte for byte.
fn same_run<L: Labels>(path: &Path, study: &str, experiment: &str, p: &Planned<L>) -> Result<Option<RunRecord<L>>> {
    let text = crate::experiment::read_input(path)?;
    record_of(&text, study, experiment, p).with_context(|| format!("reading {} again", path.display()))
}

/// The record `text` holds if it is exactly run `p` (study, experiment,
/// labels, configuration and workload) and reads back into the same
/// bytes: a record from a file, or from another process that simulated
/// the run.
pub(crate) fn record_of<L: Labels>(
    text: &str,
    study: &str,
    experiment: &str,
    p: &Planned<L>,
) -> Result<Option<RunRecord<L>>> {
    // A text that is not a record of this study's kind at all is another
    // run as far as this plan is concerned: simulate, do not fail.
    let Ok(r) = crate::regenerate::from_json::<RecordIn<L>>(text) else { return Ok(None) };
    let (Ok(stats), Some(wall)) = (serde_json::from_value::<RunStats>(r.stats), r.wall) else { return Ok(None) };
    let same = r.study == study
        && r.experiment.as_deref() == Some(experiment)
        && r.id == p.labels.id()
        && serde_json::to_value(&r.labels)? == serde_json::to_value(&p.labels)?
        && r.config == p.config
        && r.workload == p.workload;
    if !same {
        return Ok(None);
    }
    let record = RunRecord {
        study: r.study,
        experiment: r.experiment,
        id: r.id,
        labels: r.labels,
        config: r.config,
        workload: r.workload,
        stats,
        measures: r.measures,
        wall,
    };
    let again = crate::output::json_text(&record)?;
    Ok((again == text).then_some(record))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::pdq_micro;

    fn planned() -> Vec<Planned<pdq_micro::RunLabels>> {
        let src = crate::studies::source("pdq-micro").unwrap();
        let study = <pdq_micro::PdqMicro as crate::study::Study>::load(&src, true).unwrap();
        crate::study::Study::plan(&study).unwrap().into_iter().take(2).collect()
    }

    fn write(dir: &Path, r: &RunRecord<pdq_micro::RunLabels>) -> PathBuf {
        std::fs::create_dir_all(dir.join("runs")).unwrap();
        let path = dir.join("runs").join(format!("{}.json", r.id));
        crate::output::write_json(&path, r).unwrap();
        path
    }

    #[test]
    fn a_record_of_the_same_run_is_taken_and_any_change_is_simulated_again() {
        let dir = tempfile::tempdir().unwrap();
        let plan = planned();
        let run = crate::study::run_planned("pdq-micro", "pdq-micro", &plan[0]).unwrap();
        let path = write(dir.path(), &run);
        let earlier = Earlier::new(&[dir.path().to_path_buf()]).unwrap();
        match earlier.find("pdq-micro", "pdq-micro", &plan[0]).unwrap() {
            Found::Same(r, p) => {
                assert_eq!(r.stats, run.stats);
                assert_eq!(p, path);
            }
            _ => panic!("the record of the same run was not taken"),
        }
        // No record of the second run.
        assert!(matches!(earlier.find("pdq-micro", "pdq-micro", &plan[1]).unwrap(), Found::None));
        // Another seed under the same id: simulated again.
        let mut other = plan[0].clone();
        other.config.run.seed += 1;
        assert!(matches!(earlier.find("pdq-micro", "pdq-micro", &other).unwrap(), Found::Differs));
        // Another experiment name: simulated again.
        assert!(matches!(earlier.find("pdq-micro", "elsewhere", &plan[0]).unwrap(), Found::Differs));
        // Statistics edited by hand no longer read back as written.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("\"events\": ", "\"events\":  ", 1)).unwrap();
        assert!(matches!(earlier.find("pdq-micro", "pdq-micro", &plan[0]).unwrap(), Found::Differs));
    }

    #[test]
    fn a_directory_without_records_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = Earlier::new(&[dir.path().to_path_buf()]).unwrap_err().to_string();
        assert!(e.starts_with("invalid --reuse ") && e.contains("has no runs/ directory"), "{e}");
        // A directory of shares' outputs stands for each of them.
        for share in ["shard-2", "shard-1"] {
            std::fs::create_dir_all(dir.path().join(share).join("runs")).unwrap();
        }
        let earlier = Earlier::new(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(earlier.dirs(), &[dir.path().join("shard-1"), dir.path().join("shard-2")]);
    }
}
