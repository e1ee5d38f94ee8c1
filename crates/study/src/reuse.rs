//! Taking finished runs from earlier records (`finegrain reproduce
//! --reuse DIR`): a study planned in pieces (the pdq-dsm paper inputs take
//! hours on 2 cores), or stopped part way, is put together without
//! simulating any run twice.
//!
//! A simulation is deterministic, so a record whose study, labels, whole
//! configuration (seed included) and workload equal a planned run's holds
//! exactly what simulating it would give. Such a record is taken as it is,
//! statistics and wall-clock figures alike, and only if its digest is its
//! content's and it reads back into the same bytes it was written as: a
//! record edited by hand, one without a digest (written before records
//! carried one), or one written by a finegrain whose records differ, is
//! simulated again instead.

use crate::record::{seal, Labels, Planned, RunRecord, Seal};
use crate::regenerate::RecordIn;
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
    /// A record of this id whose digest is not its content's (edited after
    /// it was written), in this file: it is simulated.
    Edited(PathBuf),
    /// A record of this id without a digest (written before records
    /// carried one), in this file: nothing shows it unedited, so it is
    /// simulated.
    Unsigned(PathBuf),
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
            found = match same_run(&path, study, experiment, p)? {
                Read::Same(record) => return Ok(Found::Same(record, path)),
                Read::Other => Found::Differs,
                Read::Seal(Seal::Missing) => Found::Unsigned(path),
                Read::Seal(_) => Found::Edited(path),
            };
        }
        Ok(found)
    }
}

/// What an earlier record is to a planned run.
pub(crate) enum Read<L> {
    /// Exactly the run, unedited: taken.
    Same(Box<RunRecord<L>>),
    /// Another run, or not a record this finegrain writes.
    Other,
    /// A record whose digest is missing or not its content's.
    Seal(Seal),
}

/// What the record at `path` is to run `p`.
fn same_run<L: Labels>(path: &Path, study: &str, experiment: &str, p: &Planned<L>) -> Result<Read<L>> {
    let text = crate::experiment::read_input(path)?;
    record_of(&text, study, experiment, p).with_context(|| format!("reading {} again", path.display()))
}

/// What the record `text` holds to run `p`: the same run if it is exactly
/// `p` (study, experiment, labels, configuration and workload), carries
/// its content's digest and reads back into the same bytes; a record from
/// a file, or from another process that simulated the run.
pub(crate) fn record_of<L: Labels>(text: &str, study: &str, experiment: &str, p: &Planned<L>) -> Result<Read<L>> {
    // A text that is not a record at all is another run as far as this
    // plan is concerned: simulate, do not fail.
    let Ok(value) = crate::regenerate::from_json::<serde_json::Value>(text) else { return Ok(Read::Other) };
    if let Some(platform) = value.get("platform").and_then(serde_json::Value::as_str) {
        bail!(
            "it is a record of a run on platform {platform}, whose times are the wall clock of the host that ran it \
             and differ from run to run; allowed --reuse of the output directories of simulated reproductions"
        );
    }
    match seal(&value) {
        Seal::Intact => {}
        broken => return Ok(Read::Seal(broken)),
    }
    let Ok(r) = serde_json::from_value::<RecordIn<L>>(value) else { return Ok(Read::Other) };
    let (Ok(stats), Some(wall)) = (serde_json::from_value::<RunStats>(r.stats), r.wall) else {
        return Ok(Read::Other);
    };
    let same = r.study == study
        && r.experiment.as_deref() == Some(experiment)
        && r.id == p.labels.id()
        && serde_json::to_value(&r.labels)? == serde_json::to_value(&p.labels)?
        && r.config == p.config
        && r.workload == p.workload;
    if !same {
        return Ok(Read::Other);
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
    Ok(if again == text { Read::Same(Box::new(record)) } else { Read::Other })
}

/// What `--reuse` did for a study: runs taken from earlier records,
/// planned runs whose earlier records were of another run, and records
/// not taken because their digest does not vouch for them.
#[derive(Default)]
pub struct Reused {
    pub taken: usize,
    pub differing: usize,
    /// Records whose digest is not their content's (edited after they
    /// were written).
    pub edited: Vec<PathBuf>,
    /// Records without a digest (written before records carried one).
    pub unsigned: Vec<PathBuf>,
}

impl Reused {
    /// Counts what the earlier records gave one planned run; the record
    /// it takes, if any.
    pub(crate) fn count<L>(&mut self, found: Found<L>) -> Option<RunRecord<L>> {
        match found {
            Found::Same(r, _) => return Some(*r),
            Found::Differs => self.differing += 1,
            Found::Edited(path) => self.edited.push(path),
            Found::Unsigned(path) => self.unsigned.push(path),
            Found::None => {}
        }
        None
    }

    /// The report's sentence on where the runs came from.
    pub(crate) fn line(&self, earlier: &Earlier, total: usize) -> String {
        let dirs: Vec<String> = earlier.dirs().iter().map(|d| format!("`{}`", d.display())).collect();
        let mut not_taken = String::new();
        for (n, why) in [
            (self.differing, "had a record there of another configuration, workload or finegrain"),
            (
                self.edited.len(),
                "had a record there whose digest does not match its content (edited after it was written)",
            ),
            (self.unsigned.len(), "had a record there without a digest (written before records carried one)"),
        ] {
            if n > 0 {
                not_taken += &format!("; {n} planned run(s) {why} and were simulated again");
            }
        }
        let simulated = match total - self.taken {
            0 => "none was simulated now".to_string(),
            n => format!("the other {n} were simulated now"),
        };
        format!(
            "{} of the {total} runs were taken from the records of earlier runs in {} (same study, labels, \
             configuration, seed and workload, each with its content's digest, so the same statistics as simulating \
             them){not_taken}; {simulated}. Without `--reuse` the same command simulates every run and gives the same \
             results.",
            self.taken,
            dirs.join(", ")
        )
    }

    /// A note per record not taken for its digest: one line per edited
    /// record, one per directory of records without a digest.
    pub(crate) fn digest_notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .edited
            .iter()
            .map(|p| format!("{}: its digest does not match its content (edited after it was written); not taken, its run was simulated again", p.display()))
            .collect();
        let mut by_dir: std::collections::BTreeMap<&Path, usize> = std::collections::BTreeMap::new();
        for p in &self.unsigned {
            *by_dir.entry(p.parent().unwrap_or(Path::new(""))).or_default() += 1;
        }
        notes.extend(by_dir.into_iter().map(|(dir, n)| {
            format!(
                "{}: {n} record(s) carry no digest (written by a finegrain from before records carried one), so \
                 nothing shows them unedited; not taken, their runs were simulated again",
                dir.display()
            )
        }));
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::pdq_micro;

    fn planned() -> Vec<Planned<pdq_micro::RunLabels>> {
        let src = crate::studies::source("pdq-micro").unwrap();
        let study: pdq_micro::PdqMicro = crate::study::load(&src, true).unwrap();
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
        // A record laid out anew (same content, other white space) is not
        // what this finegrain writes: simulated again.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("\"events\": ", "\"events\":  ", 1)).unwrap();
        assert!(matches!(earlier.find("pdq-micro", "pdq-micro", &plan[0]).unwrap(), Found::Differs));
        std::fs::write(&path, &text).unwrap();
        assert!(matches!(earlier.find("pdq-micro", "pdq-micro", &plan[0]).unwrap(), Found::Same(..)));
    }

    /// The record of `run` with one value of its statistics edited as a
    /// JSON pointer names it, written back in finegrain's own layout.
    fn edit(path: &Path, pointer: &str, value: serde_json::Value) {
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        *v.pointer_mut(pointer).unwrap() = value;
        crate::output::write_json(path, &v).unwrap();
    }

    #[test]
    fn an_edited_record_or_one_without_a_digest_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let plan = planned();
        let run = crate::study::run_planned("pdq-micro", "pdq-micro", &plan[0]).unwrap();
        let path = write(dir.path(), &run);
        let earlier = Earlier::new(&[dir.path().to_path_buf()]).unwrap();
        let find = || earlier.find("pdq-micro", "pdq-micro", &plan[0]).unwrap();
        // The run's simulated time set to 2^64-1, and a count changed: each
        // reads back byte for byte, but its digest is the original's.
        for (pointer, value) in [
            ("/stats/sim_cycles", serde_json::json!(u64::MAX)),
            ("/stats/messages", serde_json::json!(run.stats.messages + 1)),
            ("/wall/wall_seconds", serde_json::json!(1e-3)),
        ] {
            write(dir.path(), &run);
            edit(&path, pointer, value);
            assert!(matches!(find(), Found::Edited(p) if p == path), "{pointer} edited was taken");
        }
        // A digest of other content, or no digest at all.
        write(dir.path(), &run);
        edit(&path, "/digest", serde_json::json!("sha256:00"));
        assert!(matches!(find(), Found::Edited(_)));
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("digest");
        crate::output::write_json(&path, &v).unwrap();
        assert!(matches!(find(), Found::Unsigned(p) if p == path));
        // What a study says of them: one line per edited record, naming
        // it; one per directory of records without a digest.
        let mut reused = Reused::default();
        for found in [Found::<()>::Edited(path.clone()), Found::Unsigned(path.clone()), Found::Unsigned(path.clone())] {
            assert!(reused.count(found).is_none());
        }
        let notes = reused.digest_notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with(&format!("{}: its digest does not match", path.display())), "{}", notes[0]);
        assert!(notes[1].contains(": 2 record(s) carry no digest"), "{}", notes[1]);
        assert!(notes.iter().all(|n| !n.contains('\n')));
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
