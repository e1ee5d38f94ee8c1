//! The one record every simulated run leaves (a study's `runs/<id>.json`,
//! a sweep's, `finegrain run --json`): what it is (its labels, which make
//! its id), everything that regenerates it (the whole configuration with
//! its seed, and the workload), what it measured, and the wall-clock
//! figures kept apart, as the only part two runs of one configuration and
//! seed may differ in.

use finegrain_apps::WorkloadSpec;
use finegrain_sim::{RunStats, SimConfig};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One simulated run. `L` is the labels of the kind of record it is: a
/// study's own type while the study runs, any JSON when read back.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord<L> {
    /// What made the record: a study's name, `run` or `sweep`.
    pub study: String,
    /// The experiment (a study's) or sweep it belongs to, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
    /// Its file name in `runs/`, made from the labels alone.
    pub id: String,
    pub labels: L,
    pub config: SimConfig,
    pub workload: WorkloadSpec,
    pub stats: RunStats,
    /// The workload's own measures, derived from `stats` (a fetch&add
    /// run's home measures); absent for workloads that have none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measures: Option<serde_json::Value>,
    pub wall: Wall,
}

/// Wall-clock figures of a run: the only part of a record that differs
/// between two runs of the same configuration and seed.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Wall {
    pub wall_seconds: f64,
    pub events_per_wall_second: f64,
    pub messages_per_wall_second: f64,
}

impl Wall {
    /// The figures of a run that took `elapsed` for `stats`.
    pub fn of(elapsed: Duration, stats: &RunStats) -> Wall {
        let wall = elapsed.as_secs_f64().max(1e-9);
        Wall {
            wall_seconds: wall,
            events_per_wall_second: stats.events as f64 / wall,
            messages_per_wall_second: stats.messages as f64 / wall,
        }
    }
}

/// A kind of record's labels: what a run is in its maker's terms, beside
/// the configuration that runs it. Reading them back with serde refuses a
/// label the kind never has, or one of the wrong type, naming it.
pub trait Labels: Serialize + DeserializeOwned + Clone + Send + Sync {
    /// The run's id (its record's file name), from the labels alone.
    fn id(&self) -> String;

    /// Whether the labels describe `config` and `workload`; if not, why, as
    /// the rest of a one-line message ("it names X = 1 but ...").
    fn describe(&self, config: &SimConfig, workload: &WorkloadSpec) -> Result<(), String>;

    /// Values besides the statistics that `rerun` measures again, each
    /// with the recorded and the new value (a single run's Lmin).
    fn remeasure(&self, _config: &SimConfig, _workload: &WorkloadSpec) -> anyhow::Result<Vec<Remeasured>> {
        Ok(Vec::new())
    }
}

/// A value measured again by `rerun`.
pub struct Remeasured {
    pub name: &'static str,
    pub recorded: f64,
    pub now: f64,
}

/// Checks one label against what the configuration and workload say it
/// must be, both written as JSON in the message.
pub fn describe_value<T: PartialEq + Serialize>(name: &str, named: &T, actual: &T) -> Result<(), String> {
    if named == actual {
        return Ok(());
    }
    let json = |v: &T| serde_json::to_string(v).unwrap_or_default();
    Err(format!("it names {name} = {} but its configuration and workload say {}", json(named), json(actual)))
}
