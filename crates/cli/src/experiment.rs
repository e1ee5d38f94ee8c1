//! Experiment files: one TOML file per reproduced study, embedded at build
//! time so `finegrain reproduce <name>` works from any directory (a path to
//! another file works too).

use anyhow::{bail, Context, Result};
use finegrain_core::MachineConfig;
use std::path::Path;

/// Experiments shipped with finegrain: (name, TOML text).
pub const EXPERIMENTS: &[(&str, &str)] = &[
    ("scheduling-micro", include_str!("../../../experiments/scheduling-micro.toml")),
    ("pdq-micro", include_str!("../../../experiments/pdq-micro.toml")),
];

/// An experiment file's text and where it came from.
pub struct Source {
    pub origin: String,
    pub text: String,
    /// What `finegrain reproduce` takes to run it again: the shipped name,
    /// or the path it was read from.
    pub arg: String,
    /// The file it was read from (None for a shipped experiment): relative
    /// preset paths inside it are found beside it.
    pub file: Option<std::path::PathBuf>,
}

impl Source {
    /// The preset an experiment names, a relative `.toml` path taken from
    /// the experiment file's directory, as `run --config` does.
    pub fn preset(&self, named: &str) -> String {
        match &self.file {
            Some(f) => preset_beside(f, Some(named.to_string())).unwrap_or_else(|| named.to_string()),
            None => named.to_string(),
        }
    }
}

/// Reads an input file (config, experiment, run record) within the size
/// limit every input has.
pub fn read_input(path: &Path) -> Result<String> {
    finegrain_core::config::read_input(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Finds an experiment by name, or reads it from a path ending in `.toml`.
pub fn find(name: &str) -> Result<Source> {
    if name.ends_with(".toml") || Path::new(name).components().count() > 1 {
        let text = read_input(Path::new(name))?;
        let file = Some(Path::new(name).to_path_buf());
        return Ok(Source { origin: name.to_string(), text, arg: name.to_string(), file });
    }
    match EXPERIMENTS.iter().find(|(n, _)| *n == name) {
        Some((n, text)) => Ok(Source {
            origin: format!("experiments/{n}.toml"),
            text: text.to_string(),
            arg: n.to_string(),
            file: None,
        }),
        None => bail!(
            "unknown experiment '{name}': allowed {} (or a path to a .toml file)",
            EXPERIMENTS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The study an experiment file asks for and its title.
pub fn header(src: &Source) -> Result<(String, String)> {
    let table: toml::Table = finegrain_core::config::parse_toml(&src.origin, &src.text)?;
    let get = |key: &str| -> Result<String> {
        match table.get(key) {
            Some(toml::Value::String(s)) => Ok(s.to_string()),
            Some(other) => bail!(
                "invalid {key} = {other} in {}: allowed a string{}",
                src.origin,
                match key {
                    "study" => " (scheduling-micro or pdq-micro)",
                    _ => "",
                }
            ),
            None => bail!("invalid experiment {}: missing string field '{key}'", src.origin),
        }
    };
    // Names and titles go into reports, progress lines and one-line messages.
    for key in ["name", "title"] {
        let v = get(key)?;
        if v.trim().is_empty() || v.chars().any(char::is_control) {
            bail!("invalid {key} = {v:?} in {}: allowed non-blank text without control characters", src.origin);
        }
    }
    Ok((get("study")?, get("title")?))
}

/// Runs an experiment; returns the report's path.
pub fn reproduce(name: &str, quick: bool, out: &Path) -> Result<std::path::PathBuf> {
    let src = find(name)?;
    let (study, _) = header(&src)?;
    match study.as_str() {
        "scheduling-micro" => crate::scheduling::reproduce(&src, quick, out),
        "pdq-micro" => crate::pdq_study::reproduce(&src, quick, out),
        other => bail!("invalid study = {other} in {}: allowed scheduling-micro, pdq-micro", src.origin),
    }
}

/// Writes `value` as pretty JSON to `path` (every record and result file the
/// command line writes).
pub fn write_json<T: serde::Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(value)? + "\n")
        .with_context(|| format!("writing {}", path.display()))
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

/// A preset file named by a relative path inside a config file is found
/// next to the config file, not in the current directory.
pub fn preset_beside(config: &Path, preset: Option<String>) -> Option<String> {
    match (preset, config.parent()) {
        (Some(p), Some(dir)) if is_preset_path(&p) => Some(dir.join(p).display().to_string()),
        (p, _) => p,
    }
}

/// Whether a preset is named by a relative path to a file (rather than by
/// a shipped preset's name or an absolute path).
fn is_preset_path(preset: &str) -> bool {
    preset.ends_with(".toml") && Path::new(preset).is_relative()
}

/// A preset as `run` and `fetch-add` name it: by name, and by the file it came from too
/// when given as a path (a copy may keep the name it was copied from).
pub fn preset_shown(name: &str, given: Option<&str>) -> String {
    match given {
        Some(g) if g != name => format!("{name} ({g})"),
        _ => name.to_string(),
    }
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
/// hold only what this study writes. Nothing else there is touched.
fn remove_old_outputs(dir: &Path, ext: &str) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let path = entry.path();
        let is_file = entry.file_type().with_context(|| format!("reading {}", path.display()))?.is_file();
        if is_file && path.extension().is_some_and(|e| e == ext) {
            std::fs::remove_file(&path).with_context(|| format!("removing old output {}", path.display()))?;
        }
    }
    Ok(())
}

/// Writes what every study writes before its figures and report into `out`:
/// `runs/<id>.json` per record (its whole configuration, seed and
/// statistics; records and figures of earlier studies in `runs/` and
/// `figures/` are removed first),
/// `results.csv` and a copy of the experiment file. Creates `figures/` for
/// what follows.
pub fn write_records<R: serde::Serialize>(
    out: &Path,
    src: &Source,
    records: &[R],
    id: impl Fn(&R) -> &str,
    csv: &str,
) -> Result<()> {
    prepare_out(out)?;
    let runs = out.join("runs");
    remove_old_outputs(&runs, "json")?;
    remove_old_outputs(&out.join("figures"), "svg")?;
    for r in records {
        write_json(&runs.join(format!("{}.json", id(r))), r)?;
    }
    let results = out.join("results.csv");
    std::fs::write(&results, csv).with_context(|| format!("writing {}", results.display()))?;
    let copy = out.join("experiment.toml");
    std::fs::write(&copy, portable_copy(src)?).with_context(|| format!("writing {}", copy.display()))?;
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

/// Largest cycle count (handler, interrupt, think, burst and compute
/// times) and request count per node or thread an experiment may ask for:
/// the simulator's own limits, checked here before any run.
pub use finegrain_core::config::{MAX_CYCLES, MAX_REQUESTS};

/// A number as an error message shows it: short, even when huge or tiny.
pub fn shown(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-6..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// A one-line error naming the list field `field` when two of its values
/// are the same; `name` gives a value as run ids and tables name it.
pub fn check_distinct<T>(field: &str, values: &[T], name: impl Fn(&T) -> String) -> Result<()> {
    let names: Vec<String> = values.iter().map(&name).collect();
    repeated(field, &names, &names, "")
}

/// [`check_distinct`] for numbers that run ids name to `decimals` decimals:
/// values equal to that many decimals are the same.
pub fn check_distinct_decimals(field: &str, values: &[f64], decimals: usize) -> Result<()> {
    let written: Vec<String> = values.iter().map(|&x| shown(x)).collect();
    // + 0.0 makes -0.0 the same as 0.0.
    let names: Vec<String> = values.iter().map(|&x| format!("{:.*}", decimals, x + 0.0)).collect();
    repeated(field, &written, &names, &format!(" (run ids name values to {decimals} decimals)"))
}

fn repeated(field: &str, written: &[String], names: &[String], note: &str) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
        bail!(
            "invalid {field} = [{}]: {dup} is listed more than once{note}; allowed distinct values",
            written.join(", ")
        );
    }
    Ok(())
}

/// One of the model's mechanisms switched off in a study's sensitivity runs:
/// an indirect effect (`[effects]` of a preset), or the split-transaction
/// bus (its runs hold the bus for a transaction's whole occupancy). The
/// claim-deciding points are run again without it, so a report can show
/// which mechanism decides a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectOff {
    CacheInterference,
    Migration,
    DataPlacement,
    SplitBus,
}

impl EffectOff {
    pub const ALL: [EffectOff; 4] =
        [EffectOff::CacheInterference, EffectOff::Migration, EffectOff::DataPlacement, EffectOff::SplitBus];

    pub fn apply(self, machine: &mut MachineConfig) {
        let effects = &mut machine.effects;
        match self {
            EffectOff::CacheInterference => effects.cache_interference = false,
            EffectOff::Migration => effects.migration = false,
            EffectOff::DataPlacement => effects.data_placement = false,
            EffectOff::SplitBus => machine.bus.address_phase_cycles = None,
        }
    }

    /// Every name, for messages: "a, b, c or d".
    pub fn allowed_names() -> String {
        let names: Vec<&str> = EffectOff::ALL.iter().map(|e| e.name()).collect();
        let (last, rest) = names.split_last().expect("four mechanisms");
        format!("{} or {last}", rest.join(", "))
    }

    /// Whether `machine` has the mechanism on (a run without it would
    /// otherwise repeat the study's own).
    pub fn is_on(self, machine: &MachineConfig) -> bool {
        let mut off = machine.clone();
        self.apply(&mut off);
        off != *machine
    }

    /// How a sensitivity run's id names it: `no-` and the effect, dashed.
    pub fn run_label(self) -> String {
        format!("no-{}", self.name().replace('_', "-"))
    }

    /// The `[effects]` field's name, or `split_bus`.
    pub fn name(self) -> &'static str {
        match self {
            EffectOff::CacheInterference => "cache_interference",
            EffectOff::Migration => "migration",
            EffectOff::DataPlacement => "data_placement",
            EffectOff::SplitBus => "split_bus",
        }
    }
}

/// Every mechanism a sensitivity list switches off must be on in the
/// preset (`field` names the list, `preset` the experiment's preset).
pub fn check_sensitivity_on(
    field: &str,
    sensitivity: &[EffectOff],
    machine: &MachineConfig,
    preset: &str,
) -> Result<()> {
    let Some(off) = sensitivity.iter().find(|e| !e.is_on(machine)) else { return Ok(()) };
    let on: Vec<&str> = EffectOff::ALL.iter().filter(|e| e.is_on(machine)).map(|e| e.name()).collect();
    bail!(
        "invalid {field} = [{}]: {off} is already off in preset {preset}; allowed the mechanisms it has on ({})",
        sensitivity.iter().map(|e| e.name()).collect::<Vec<_>>().join(", "),
        if on.is_empty() { "none".to_string() } else { on.join(", ") }
    )
}

impl std::fmt::Display for EffectOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
