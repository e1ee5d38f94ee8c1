//! `finegrain rerun`: regenerate a simulated run from its record.

use crate::say;
use anyhow::{bail, Result};
use finegrain_study::output::{check_writable, write_json};
use std::path::{Path, PathBuf};

pub fn rerun(record: &Path, json: Option<PathBuf>) -> Result<()> {
    check_writable(json.as_deref(), &[(Some(record), "record")])?;
    let r = finegrain_study::rerun::rerun(record)?;
    if let Some(path) = json {
        write_json(&path, &r.stats)?;
    }
    let c = &r.config;
    let what = format!(
        "{}: {} on preset {}, policy {}, {} nodes x {} processors, seed {}",
        record.display(),
        r.workload,
        c.machine.name,
        c.run.policy.label(),
        c.run.topology.nodes,
        c.run.topology.procs_per_node,
        c.run.seed
    );
    if !r.differences.is_empty() {
        let shown: Vec<&str> = r.differences.iter().take(5).map(String::as_str).collect();
        bail!(
            "{what}: the rerun differs from the record in {} of {} values (the record comes from another version, was edited, or a run is not deterministic): {}",
            r.differences.len(),
            r.fields,
            shown.join("; ")
        );
    }
    say!("{what}: statistics identical to the record ({} values compared)", r.fields);
    Ok(())
}
