//! What a study or a sweep writes into its output directory, and the
//! checks that it can be written, made before any time is spent on runs.

use crate::experiment::{is_preset_path, preset_beside, Source};
use crate::record::RunRecord;
use anyhow::{bail, Context, Result};
use std::collections::HashSet;
use std::path::Path;

/// Writes `value` as pretty JSON to `path` (every record and result file the
/// command line writes).
pub fn write_json<T: serde::Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    std::fs::write(path, json_text(value)?).with_context(|| format!("writing {}", path.display()))
}

/// The file name of run `id`'s record in `runs/`.
pub fn record_file(id: &str) -> String {
    format!("{id}.json")
}

/// The text [`write_json`] writes for `value`.
pub fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// Fails now, before a run, if the record could not be written to `path`
/// afterwards, without touching `path`: an existing file is opened for
/// writing without truncation; otherwise a scratch file is made and removed
/// in its directory. So a run refused later leaves everything as it was.
/// `path` must not name one of the files the command reads (`reads`, each
/// with what it is): writing there would destroy the record's input.
pub fn check_writable(path: Option<&Path>, reads: &[(Option<&Path>, &str)]) -> Result<()> {
    let Some(p) = path else { return Ok(()) };
    for &(input, what) in reads {
        if let Some(input) = input {
            check_not_input(p, input, what)?;
        }
    }
    let fail = |e: std::io::Error| anyhow::anyhow!("cannot write the record to {}: {e}", p.display());
    if p.is_dir() {
        bail!("cannot write the record to {}: it is a directory", p.display());
    }
    if p.exists() {
        std::fs::OpenOptions::new().write(true).open(p).map_err(fail)?;
        return Ok(());
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    can_create_in(dir).map_err(fail)
}

fn check_not_input(out: &Path, input: &Path, what: &str) -> Result<()> {
    if same_file(out, input) {
        bail!("invalid json = {}: it is the {what} being read; allowed another file", out.display());
    }
    Ok(())
}

/// Whether two paths name one existing file, however reached (symbolic
/// links, `..`, hard links): the same inode on the same device.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// The files a run reads, for [`check_writable`]: its config file and its
/// preset (when named by a path).
pub fn run_inputs<'a>(config: Option<&'a Path>, preset: Option<&'a str>) -> [(Option<&'a Path>, &'static str); 2] {
    [(config, "config file"), (preset.map(Path::new), "preset file")]
}

/// Creates and removes a scratch file in `dir`: whether files can be
/// written there, without touching any other.
fn can_create_in(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".finegrain-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// Creates the output directory `out` with its `runs/` and `figures/` and
/// checks that files can be written in each, before a study spends time on
/// its runs.
pub fn prepare_out(out: &Path) -> Result<()> {
    if out.exists() && !out.is_dir() {
        bail!("invalid out = {}: it is a file; allowed a directory, existing or new", out.display());
    }
    for dir in [out.join("runs"), out.join("figures")] {
        if dir.exists() && !dir.is_dir() {
            bail!(
                "cannot write in {}: it is a file (the study keeps its records and figures in directories there)",
                dir.display()
            );
        }
    }
    for dir in [out.to_path_buf(), out.join("runs"), out.join("figures")] {
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create output directory {}", dir.display()))?;
        can_create_in(&dir).with_context(|| format!("cannot write in output directory {}", dir.display()))?;
    }
    for name in ["results.csv", "report.md", "experiment.toml"] {
        let f = out.join(name);
        if f.is_dir() {
            bail!("cannot write {}: it is a directory (the study writes a file there)", f.display());
        }
        // A file left by an earlier study is overwritten at the end: find
        // out now if it cannot be, not after the runs. (Opening for writing
        // without truncating changes nothing.)
        if f.exists() {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&f)
                .with_context(|| format!("cannot write {} (left by an earlier study)", f.display()))?;
        }
    }
    Ok(())
}

/// Removes the files with extension `ext` a previous study left in `dir`
/// (`runs/*.json`, `figures/*.svg`: the tool's own directories), so they
/// hold only what this study writes; files named in `keep` (records this
/// study wrote as its runs finished) stay. Nothing else there is touched.
fn remove_old_outputs(dir: &Path, ext: &str, keep: &HashSet<String>) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let path = entry.path();
        let is_file = entry.file_type().with_context(|| format!("reading {}", path.display()))?.is_file();
        let kept = entry.file_name().to_str().is_some_and(|n| keep.contains(n));
        if is_file && !kept && path.extension().is_some_and(|e| e == ext) {
            std::fs::remove_file(&path).with_context(|| format!("removing old output {}", path.display()))?;
        }
    }
    Ok(())
}

/// Writes what every study and sweep writes before its figures and report
/// into `out`: `runs/<id>.json` per record (its whole configuration, seed
/// and statistics; records and figures of earlier studies in `runs/` and
/// `figures/` are removed first), `results.csv` and, for a study, a copy
/// of its experiment file. Records whose file names are in `on_disk` were
/// written as their runs finished and are left as they are. Creates
/// `figures/` for what follows.
pub fn write_records<L: serde::Serialize>(
    out: &Path,
    experiment: Option<&Source>,
    records: &[&RunRecord<L>],
    on_disk: &HashSet<String>,
    csv: &str,
) -> Result<()> {
    let records: Vec<(&str, &RunRecord<L>)> = records.iter().map(|r| (r.id.as_str(), *r)).collect();
    write_outputs(out, experiment, &records, on_disk, csv)
}

/// [`write_records`] for records of any kind, each with its id.
pub fn write_outputs<R: serde::Serialize>(
    out: &Path,
    experiment: Option<&Source>,
    records: &[(&str, &R)],
    on_disk: &HashSet<String>,
    csv: &str,
) -> Result<()> {
    prepare_out(out)?;
    let runs = out.join("runs");
    remove_old_outputs(&runs, "json", on_disk)?;
    remove_old_outputs(&out.join("figures"), "svg", &HashSet::new())?;
    for (id, r) in records {
        let name = record_file(id);
        if !on_disk.contains(&name) {
            write_json(&runs.join(name), r)?;
        }
    }
    let results = out.join("results.csv");
    std::fs::write(&results, csv).with_context(|| format!("writing {}", results.display()))?;
    if let Some(src) = experiment {
        let copy = out.join("experiment.toml");
        std::fs::write(&copy, portable_copy(src)?).with_context(|| format!("writing {}", copy.display()))?;
    }
    Ok(())
}

/// The experiment file's text as `--out` keeps it: a preset named by a
/// relative path is found beside the original file, so the copy names it by
/// its absolute path instead and `finegrain reproduce DIR/experiment.toml`
/// runs the same study. Comments and layout are kept.
fn portable_copy(src: &Source) -> Result<String> {
    let Some(file) = &src.file else { return Ok(src.text.clone()) };
    let mut doc: toml_edit::DocumentMut =
        src.text.parse().with_context(|| format!("invalid TOML in {}", src.origin))?;
    let Some(value) = doc.get_mut("preset").and_then(|i| i.as_value_mut()) else { return Ok(src.text.clone()) };
    let Some(named) = value.as_str().filter(|p| is_preset_path(p)).map(str::to_string) else {
        return Ok(src.text.clone());
    };
    let beside = preset_beside(file, Some(named.clone())).unwrap_or(named);
    let absolute = std::fs::canonicalize(&beside).with_context(|| format!("cannot find preset {beside}"))?;
    let decor = value.decor().clone();
    *value = toml_edit::Value::from(absolute.display().to_string());
    *value.decor_mut() = decor;
    Ok(doc.to_string())
}
