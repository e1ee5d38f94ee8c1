//! Experiment files: one TOML file per study, embedded at build time so
//! `finegrain reproduce <name>` works from any directory (a path to another
//! file works too), and the checks every study's grid shares.

use anyhow::{bail, Context, Result};
use finegrain_core::config::ConfigError;
use finegrain_core::MachineConfig;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::path::Path;

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

impl Source {
    /// An experiment file read from `path`.
    pub fn from_path(path: &str) -> Result<Source> {
        let text = read_input(Path::new(path))?;
        Ok(Source { origin: path.to_string(), text, arg: path.to_string(), file: Some(Path::new(path).to_path_buf()) })
    }

    /// The experiment file a study ships, `experiments/<name>.toml`.
    pub fn shipped(name: &str, text: &str) -> Source {
        Source { origin: format!("experiments/{name}.toml"), text: text.to_string(), arg: name.to_string(), file: None }
    }

    /// Whether `name` names a file rather than a shipped experiment.
    pub fn names_a_file(name: &str) -> bool {
        name.ends_with(".toml") || Path::new(name).components().count() > 1
    }
}

/// What every experiment file starts with: which study it runs, its name
/// and title, the paper its claims come from, the machine preset and the
/// base seed.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
pub struct Header {
    pub name: String,
    pub title: String,
    /// The paper (authors, title, venue) whose claims the study checks.
    pub paper: String,
    pub study: String,
    pub preset: String,
    pub seed: u64,
}

/// Which of an experiment's two grids runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Full,
    Quick,
}

impl Mode {
    pub fn of(quick: bool) -> Mode {
        if quick {
            Mode::Quick
        } else {
            Mode::Full
        }
    }

    /// "full" or "quick": the grid's table, and the mode reports name.
    pub fn table(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Quick => "quick",
        }
    }
}

/// An experiment file, typed by its study: the [`Header`], the study's own
/// top-level fields `O` (a struct refusing unknown fields, `NoFields` for
/// none), its two grids `G` (`[full]` and `[quick]`), and which one runs.
#[derive(Clone, Debug)]
pub struct Experiment<O, G> {
    pub header: Header,
    pub own: O,
    pub full: G,
    pub quick: G,
    pub mode: Mode,
}

/// A study without top-level fields of its own.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoFields {}

impl<O, G> Experiment<O, G> {
    /// The grid that runs.
    pub fn grid(&self) -> &G {
        match self.mode {
            Mode::Full => &self.full,
            Mode::Quick => &self.quick,
        }
    }

    /// Both grids with their tables' names, for the checks made on both
    /// before anything runs.
    pub fn grids(&self) -> [(&'static str, &G); 2] {
        [("full", &self.full), ("quick", &self.quick)]
    }
}

/// An experiment file as parsed, before its study is known: the header
/// typed and checked, the rest still TOML for the study's own types.
pub struct Parsed {
    pub header: Header,
    own: toml::Table,
    full: toml::Value,
    quick: toml::Value,
}

/// The shape [`Parsed`] is read in: the header's fields named here, not
/// flattened, so an error in one is named with its line.
#[derive(Deserialize)]
struct Raw {
    name: String,
    title: String,
    paper: String,
    study: String,
    preset: String,
    seed: u64,
    full: toml::Value,
    quick: toml::Value,
    #[serde(flatten)]
    own: toml::Table,
}

impl Source {
    /// Parses the file, once, and checks its header: which study it asks
    /// for, its names and seed.
    pub fn parsed(&self) -> Result<Parsed> {
        let raw: Raw = finegrain_core::config::parse_toml(&self.origin, &self.text)?;
        // Names and titles go into reports, progress lines and one-line messages.
        for (key, v) in [("name", &raw.name), ("title", &raw.title), ("paper", &raw.paper)] {
            if v.trim().is_empty() || v.chars().any(char::is_control) {
                bail!("invalid {key} = {v:?} in {}: allowed non-blank text without control characters", self.origin);
            }
        }
        let header = Header {
            name: raw.name,
            title: raw.title,
            paper: raw.paper,
            study: raw.study,
            preset: raw.preset,
            seed: raw.seed,
        };
        Ok(Parsed { header, own: raw.own, full: raw.full, quick: raw.quick })
    }
}

impl Parsed {
    /// The experiment typed as study `study`'s, its fields named by their
    /// line in `src` when one is wrong or unknown.
    pub fn typed<O: DeserializeOwned, G: DeserializeOwned>(
        self,
        src: &Source,
        study: &str,
        quick: bool,
    ) -> Result<Experiment<O, G>> {
        if self.header.study != study {
            bail!("invalid study = {} in {}: expected {study}", self.header.study, src.origin);
        }
        let own = typed_part(src, &[], toml::Value::Table(self.own))?;
        let full = typed_part(src, &["full"], self.full)?;
        let quick_grid = typed_part(src, &["quick"], self.quick)?;
        Ok(Experiment { header: self.header, own, full, quick: quick_grid, mode: Mode::of(quick) })
    }
}

/// One part of a parsed experiment (its own top-level fields, or a grid at
/// `table`) as its type, with the one-line error a preset's gets.
fn typed_part<T: DeserializeOwned>(src: &Source, table: &[&str], value: toml::Value) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut path: Vec<String> = table.iter().map(|t| t.to_string()).collect();
        path.extend(e.path().iter().filter_map(|seg| match seg {
            serde_path_to_error::Segment::Map { key } => Some(key.clone()),
            _ => None,
        }));
        let message = finegrain_core::config::plain_type_names(
            e.inner().message().replace('\n', " ").trim(),
            "2^63-1 (the largest TOML integer)",
        );
        // An unknown field is the path's last key, which the path may not
        // name (serde names it in its message).
        if let Some(unknown) = message.strip_prefix("unknown field `").and_then(|m| m.split('`').next()) {
            if path.last().map(String::as_str) != Some(unknown) {
                path.push(unknown.to_string());
            }
        }
        let location = match (line_of(&src.text, &path), path.is_empty()) {
            (Some((n, line)), _) => format!("line {n} (`{}`): ", line.trim().chars().take(60).collect::<String>()),
            (None, false) => format!("{}: ", path.join(".")),
            (None, true) => String::new(),
        };
        anyhow::Error::new(ConfigError::Toml { origin: src.origin.clone(), message: format!("{location}{message}") })
    })
}

/// The line (1-based, and its text) that sets the key `path` names in an
/// experiment file: a top-level key (`[nodes]`) or a grid's (`[quick,
/// nodes, ...]`, found under `[quick]`; deeper keys are on its line).
fn line_of<'a>(text: &'a str, path: &[String]) -> Option<(usize, &'a str)> {
    let is_table = |l: &str| l.trim_start().starts_with('[');
    let sets =
        |l: &str, key: &str| l.trim_start().strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('='));
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    let (start, key) = match path {
        [] => return None,
        [key] => (0, key),
        [table, key, ..] => {
            let header = format!("[{table}]");
            let at =
                lines.iter().position(|(_, l)| l.trim() == header || l.trim().starts_with(&format!("{header} ")))?;
            (at + 1, key)
        }
    };
    lines[start..].iter().take_while(|(_, l)| !is_table(l)).find(|(_, l)| sets(l, key)).copied()
}

/// The study an experiment file asks for, and its other common fields.
pub fn header(src: &Source) -> Result<Header> {
    Ok(src.parsed()?.header)
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
pub(crate) fn is_preset_path(preset: &str) -> bool {
    preset.ends_with(".toml") && Path::new(preset).is_relative()
}

/// A preset as a single run names it: by name, and by the file it came from too
/// when given as a path (a copy may keep the name it was copied from).
pub fn preset_shown(name: &str, given: Option<&str>) -> String {
    match given {
        Some(g) if g != name => format!("{name} ({g})"),
        _ => name.to_string(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Own {
        nodes: u32,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Grid {
        replicates: u32,
    }

    const FILE: &str = "name = \"n\"\ntitle = \"t\"\npaper = \"p\"\nstudy = \"s\"\npreset = \"hpca97\"\nseed = 3\n\
                        nodes = 2\n\n[full]\nreplicates = 5\n\n[quick]\nreplicates = 1\n";

    fn typed(text: &str, quick: bool) -> Result<Experiment<Own, Grid>> {
        let src = Source::shipped("s", text);
        src.parsed()?.typed(&src, "s", quick)
    }

    #[test]
    fn an_experiment_is_its_header_its_own_fields_and_the_grid_that_runs() {
        let e = typed(FILE, true).unwrap();
        assert_eq!((e.header.name.as_str(), e.header.seed, e.own.nodes), ("n", 3, 2));
        assert_eq!((e.grid().replicates, e.mode.table()), (1, "quick"));
        assert_eq!(typed(FILE, false).unwrap().grid().replicates, 5);
        let e = typed(&FILE.replace("study = \"s\"", "study = \"other\""), true).unwrap_err().to_string();
        assert_eq!(e, "invalid study = other in experiments/s.toml: expected s");
    }

    #[test]
    fn an_unknown_or_wrong_field_is_named_with_its_line() {
        for (from, to, says) in [
            ("nodes = 2\n", "nodes = 2\nbogus = 1\n", "line 8 (`bogus = 1`): unknown field `bogus`, expected `nodes`"),
            ("nodes = 2\n", "nodes = \"2\"\n", "line 7 (`nodes = \"2\"`): invalid type: string \"2\""),
            ("replicates = 1\n", "replicates = 1\nseeds = 2\n", "line 14 (`seeds = 2`): unknown field `seeds`"),
            ("replicates = 5\n", "replicates = -5\n", "line 10 (`replicates = -5`): invalid value: integer `-5`"),
            ("nodes = 2\n", "", "missing field `nodes`"),
            ("seed = 3\n", "seed = -3\n", "line 6"),
            ("title = \"t\"", "title = \" \"", "invalid title = \" \""),
        ] {
            let e = typed(&FILE.replacen(from, to, 1), true).unwrap_err().to_string();
            assert!(e.contains(says), "{to:?}: {e}");
            assert!(!e.contains('\n'), "{e:?}");
        }
    }
}
