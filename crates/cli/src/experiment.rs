//! Experiment files: one TOML file per reproduced study, embedded at build
//! time so `finegrain reproduce <name>` works from any directory (a path to
//! another file works too).

use anyhow::{bail, Context, Result};
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
}

/// Finds an experiment by name, or reads it from a path ending in `.toml`.
pub fn find(name: &str) -> Result<Source> {
    if name.ends_with(".toml") || Path::new(name).components().count() > 1 {
        let text = std::fs::read_to_string(name).with_context(|| format!("cannot read experiment file {name}"))?;
        return Ok(Source { origin: name.to_string(), text });
    }
    match EXPERIMENTS.iter().find(|(n, _)| *n == name) {
        Some((n, text)) => Ok(Source { origin: format!("experiments/{n}.toml"), text: text.to_string() }),
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
        match table.get(key).and_then(|v| v.as_str()) {
            Some(s) => Ok(s.to_string()),
            None => bail!("invalid experiment {}: missing string field '{key}'", src.origin),
        }
    };
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

/// Writes what every study writes before its figures and report into `out`:
/// `runs/<id>.json` per record (its whole configuration, seed and
/// statistics), `results.csv` and a copy of the experiment file. Creates
/// `figures/` for what follows.
pub fn write_records<R: serde::Serialize>(
    out: &Path,
    src: &Source,
    records: &[R],
    id: impl Fn(&R) -> &str,
    csv: &str,
) -> Result<()> {
    std::fs::create_dir_all(out.join("runs")).with_context(|| format!("creating {}", out.display()))?;
    std::fs::create_dir_all(out.join("figures"))?;
    for r in records {
        write_json(&out.join("runs").join(format!("{}.json", id(r))), r)?;
    }
    std::fs::write(out.join("results.csv"), csv)?;
    std::fs::write(out.join("experiment.toml"), &src.text)?;
    Ok(())
}

/// One of the model's indirect effects (`[effects]` of a preset), switched
/// off in a study's sensitivity runs: the claim-deciding points are run
/// again without it, so a report can show which mechanism decides a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectOff {
    CacheInterference,
    Migration,
    DataPlacement,
}

impl EffectOff {
    pub fn apply(self, effects: &mut finegrain_core::config::Effects) {
        match self {
            EffectOff::CacheInterference => effects.cache_interference = false,
            EffectOff::Migration => effects.migration = false,
            EffectOff::DataPlacement => effects.data_placement = false,
        }
    }

    /// How a sensitivity run's id names it: `no-` and the effect, dashed.
    pub fn run_label(self) -> String {
        format!("no-{}", self.name().replace('_', "-"))
    }

    /// The `[effects]` field's name.
    pub fn name(self) -> &'static str {
        match self {
            EffectOff::CacheInterference => "cache_interference",
            EffectOff::Migration => "migration",
            EffectOff::DataPlacement => "data_placement",
        }
    }
}

impl std::fmt::Display for EffectOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
