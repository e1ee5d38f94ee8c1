//! `finegrain rerun RECORD.json`: regenerates one simulated run from the
//! configuration and seed its record holds, and checks that the statistics
//! come out as recorded. Works on every record finegrain writes for a
//! simulated run: a study's `runs/<id>.json`, a sweep's, and `finegrain run
//! --json`. Each kind of record checks its own labels (see
//! [`crate::record::Labels`]); nothing here knows any study's.
//!
//! A record whose digest is not its content's was edited after it was
//! written: it is refused before anything runs, since it no longer says
//! what finegrain measured and simulating it could only confirm the edit.
//! A record without a digest (written before records carried one) is
//! simulated and compared in full: the comparison is its check.

use crate::record::{seal, Seal, DIGEST_KEY};
use crate::regenerate::{from_json, regenerate, Rerun};
use crate::{single, studies, sweep};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::Path;

/// Regenerates the run the record at `path` holds and compares it with
/// the record; the record's `study` says whose labels it carries.
pub fn rerun(path: &Path) -> Result<Rerun> {
    let text = crate::experiment::read_input(path)?;
    let invalid = || format!("invalid run record {}", path.display());
    let value: Value = from_json(&text).with_context(invalid)?;
    if let Some(platform) = value.get("platform").and_then(Value::as_str) {
        bail!(
            "invalid run record {}: it is the record of a {platform} run (platform {platform}), measured on real \
             threads, which no rerun can regenerate; allowed records of simulated runs (a study's runs/*.json, \
             `finegrain run <workload> --json` of platform sim)",
            path.display()
        );
    }
    let Some(kind) = value.get("study").and_then(Value::as_str) else {
        bail!(
            "invalid run record {}: it names no study (the study, run or sweep that made it); expected the JSON a \
             study, `finegrain run <workload> --json` or `finegrain sweep` writes for a simulated run (records made \
             by earlier versions of finegrain have another layout)",
            path.display()
        );
    };
    if seal(&value) == Seal::Broken {
        bail!(
            "invalid run record {}: its {DIGEST_KEY} does not match its content, so it was edited after finegrain \
             wrote it; allowed a record as finegrain wrote it (or regenerate the run with the command that made it)",
            path.display()
        );
    }
    let r = match studies::find(kind) {
        Some(study) => study.rerun(&text),
        None if kind == single::KIND => regenerate::<single::RunLabels>(&text),
        None if kind == sweep::KIND => regenerate::<sweep::SweepLabels>(&text),
        None => bail!(
            "invalid run record {}: study = {kind:?}; allowed {}, {} or {}",
            path.display(),
            studies::names(),
            single::KIND,
            sweep::KIND
        ),
    };
    r.with_context(invalid)
}
