//! The one record every simulated run leaves (a study's `runs/<id>.json`,
//! a sweep's, `finegrain run --json`): what it is (its labels, which make
//! its id), everything that regenerates it (the whole configuration with
//! its seed, and the workload), what it measured, and the wall-clock
//! figures kept apart, as the only part two runs of one configuration and
//! seed may differ in. Every record is written with a digest of all of
//! that (see [`Seal`]), so an edit made after it was written shows.

use finegrain_apps::WorkloadSpec;
use finegrain_sim::{RunStats, SimConfig};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One simulated run. `L` is the labels of the kind of record it is: a
/// study's own type while the study runs, any JSON when read back. It is
/// written with its fields in this order and a last one, `digest`, of
/// them all (see [`digest`]).
#[derive(Clone, Debug)]
pub struct RunRecord<L> {
    /// What made the record: a study's name, `run` or `sweep`.
    pub study: String,
    /// The experiment (a study's) or sweep it belongs to, by name.
    pub experiment: Option<String>,
    /// Its file name in `runs/`, made from the labels alone.
    pub id: String,
    pub labels: L,
    pub config: SimConfig,
    pub workload: WorkloadSpec,
    pub stats: RunStats,
    /// The workload's own measures, derived from `stats` (a fetch&add
    /// run's home measures); absent for workloads that have none.
    pub measures: Option<serde_json::Value>,
    pub wall: Wall,
}

/// One run a study plans: what it is (its labels) and what runs it, all a
/// record of it holds before it runs.
#[derive(Clone, Debug)]
pub struct Planned<L> {
    pub labels: L,
    pub config: SimConfig,
    pub workload: WorkloadSpec,
}

/// A record's content as it is written: every field but the digest.
#[derive(Serialize)]
struct Content<'a, L> {
    study: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    experiment: Option<&'a str>,
    id: &'a str,
    labels: &'a L,
    config: &'a SimConfig,
    workload: &'a WorkloadSpec,
    stats: &'a RunStats,
    #[serde(skip_serializing_if = "Option::is_none")]
    measures: Option<&'a serde_json::Value>,
    wall: &'a Wall,
}

/// A record as it is written: its content, then the digest of it.
#[derive(Serialize)]
struct Signed<C> {
    #[serde(flatten)]
    content: C,
    digest: String,
}

/// Writes a record's `content` (a struct of its fields in order) with the
/// digest of it last: how every kind of record is written.
pub(crate) fn signed<C: Serialize, S: serde::Serializer>(content: C, s: S) -> Result<S::Ok, S::Error> {
    let value = serde_json::to_value(&content).map_err(serde::ser::Error::custom)?;
    Signed { content, digest: digest(&value) }.serialize(s)
}

impl<L: Serialize> Serialize for RunRecord<L> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let content = Content {
            study: &self.study,
            experiment: self.experiment.as_deref(),
            id: &self.id,
            labels: &self.labels,
            config: &self.config,
            workload: &self.workload,
            stats: &self.stats,
            measures: self.measures.as_ref(),
            wall: &self.wall,
        };
        signed(content, s)
    }
}

/// The key a record's digest is written under.
pub const DIGEST_KEY: &str = "digest";

/// The digest of a record's content (a JSON object without its
/// `digest`): SHA-256 of its canonical text, every object's keys in
/// byte order and no white space, so the layout a record is written in
/// does not count, only what it says. Written `sha256:` and 64 hex digits.
pub fn digest(content: &serde_json::Value) -> String {
    use sha2::{Digest, Sha256};
    let mut text = String::new();
    canonical(content, &mut text);
    format!("sha256:{:x}", Sha256::digest(text.as_bytes()))
}

/// Writes `v` as canonical JSON: keys sorted whatever order the map keeps
/// them in, numbers and strings as serde_json writes them.
fn canonical(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// What a record read back says of its own digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seal {
    /// The digest is that of the record's content: unedited since written.
    Intact,
    /// No digest: written by a finegrain from before records carried one,
    /// so nothing shows whether it was edited.
    Missing,
    /// A digest that is not its content's (or not a digest at all): the
    /// record was edited after it was written.
    Broken,
}

/// Checks a record's digest against its content; `record` is the whole
/// record as read (a JSON object).
pub fn seal(record: &serde_json::Value) -> Seal {
    let Some(object) = record.as_object() else { return Seal::Missing };
    let Some(written) = object.get(DIGEST_KEY) else { return Seal::Missing };
    let mut content = object.clone();
    content.remove(DIGEST_KEY);
    if written.as_str() == Some(digest(&serde_json::Value::Object(content)).as_str()) {
        Seal::Intact
    } else {
        Seal::Broken
    }
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
    /// The workload's own measures a record of this kind carries
    /// (`measures`), typed: what the study reads of them.
    type Measures: DeserializeOwned + Send + Sync;

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

/// The measures of a kind of record whose runs have none: any measures
/// such a record holds are malformed.
#[derive(Clone, Copy, Debug, Deserialize)]
pub enum NoMeasures {}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_digest_is_of_the_content_not_its_layout() {
        let a = json!({"b": [1, 2.5, "x"], "a": {"d": null, "c": 18446744073709551615u64}});
        let b: serde_json::Value =
            serde_json::from_str("{ \"a\": {\"c\": 18446744073709551615, \"d\": null},\n \"b\": [1, 2.5, \"x\"] }")
                .unwrap();
        assert_eq!(digest(&a), digest(&b));
        assert!(digest(&a).starts_with("sha256:") && digest(&a).len() == 7 + 64, "{}", digest(&a));
        for other in [json!({"b": [1, 2.5, "x"], "a": {"d": null, "c": 0}}), json!({"b": [2.5, 1, "x"], "a": {}})] {
            assert_ne!(digest(&a), digest(&other), "{other}");
        }
    }

    #[test]
    fn a_record_is_intact_until_any_value_is_edited() {
        let mut record =
            json!({"study": "run", "stats": {"sim_cycles": 7, "events": 3}, "wall": {"wall_seconds": 1.5}});
        assert_eq!(seal(&record), Seal::Missing, "no digest yet");
        let d = digest(&record);
        record["digest"] = json!(d);
        assert_eq!(seal(&record), Seal::Intact);
        for (pointer, value) in
            [("/stats/sim_cycles", json!(u64::MAX)), ("/stats/events", json!(4)), ("/wall/wall_seconds", json!(1.25))]
        {
            let mut edited = record.clone();
            *edited.pointer_mut(pointer).unwrap() = value;
            assert_eq!(seal(&edited), Seal::Broken, "{pointer}");
        }
        let mut renamed = record.clone();
        renamed["digest"] = json!(7);
        assert_eq!(seal(&renamed), Seal::Broken, "a digest that is not text");
        assert_eq!(seal(&json!([1])), Seal::Missing, "not a record at all");
    }
}
