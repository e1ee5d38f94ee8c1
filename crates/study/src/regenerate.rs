//! Regenerating one run from its record: read the record with its kind's
//! label type, check the labels and the statistics' sizes against the
//! configuration, simulate it again, and name every value that differs.

use crate::progress;
use crate::record::Labels;
use anyhow::{bail, Context, Result};
use finegrain_apps::{Measures, Sim, WorkloadSpec};
use finegrain_sim::{RunStats, SimConfig};
use serde::Deserialize;
use serde_json::Value;

/// A record as read back, its labels typed by its kind: what regenerates
/// it and what is checked against the rerun (and what `--reuse` takes).
/// The wall-clock block, if any, is read and not compared.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordIn<L> {
    pub(crate) study: String,
    #[serde(default)]
    pub(crate) experiment: Option<String>,
    pub(crate) id: String,
    pub(crate) labels: L,
    pub(crate) config: SimConfig,
    pub(crate) workload: WorkloadSpec,
    pub(crate) stats: Value,
    #[serde(default)]
    pub(crate) measures: Option<Value>,
    #[serde(default)]
    pub(crate) wall: Option<crate::record::Wall>,
    /// Checked on the record as read (see [`crate::record::seal`]) before
    /// it is read as this, so only taken here.
    #[serde(default, rename = "digest")]
    _digest: Option<String>,
}

/// Parses a record, naming the field at fault in plain words.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, anyhow::Error> {
    refuse_duplicate_keys(text)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| json_error(&e.path().to_string(), e.inner()))?;
    // Anything after the record (a second one, stray bytes) is refused.
    de.end().map_err(|e| json_error("", &e))?;
    Ok(value)
}

/// Refuses a record in which any object, at any depth, names a key twice
/// (parsed into a map, the last would silently win: in `stats` an edited
/// value could hide behind the original).
fn refuse_duplicate_keys(text: &str) -> Result<(), anyhow::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    match serde::Deserializer::deserialize_any(&mut de, KeysOnce(String::new())) {
        Ok(()) => Ok(()),
        // Only duplicates are this check's business; malformed JSON is
        // named by the typed parse that follows, with its field.
        Err(e) if e.to_string().starts_with(DUPLICATE) => Err(anyhow::anyhow!("{e}")),
        Err(_) => Ok(()),
    }
}

const DUPLICATE: &str = "duplicate key";

/// Visits a JSON value, checking that each object names each key once;
/// holds the path to the value, for the error.
struct KeysOnce(String);

impl<'de> serde::de::DeserializeSeed<'de> for KeysOnce {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeysOnce {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq.next_element_seed(KeysOnce(format!("{}[{i}]", self.0)))?.is_some() {
            i += 1;
        }
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.0.is_empty() { key.clone() } else { format!("{}.{key}", self.0) };
            if !seen.insert(key) {
                return Err(serde::de::Error::custom(format!(
                    "{DUPLICATE} `{path}`: a record names each key once (an edited record is not taken)"
                )));
            }
            map.next_value_seed(KeysOnce(path))?;
        }
        Ok(())
    }
}

/// "field: what is wrong", with Rust's type names put in words: the
/// record's tagged groups as they are written, the rest generically.
fn json_error(path: &str, e: &serde_json::Error) -> anyhow::Error {
    let mut m = e.to_string();
    for (rust, record) in [
        ("internally tagged enum KeySkew", r#"skew {"kind": "uniform"} or {"kind": "zipf", "exponent": S}"#),
        (
            "internally tagged enum Policy",
            r#"policy {"kind": "single"}, {"kind": "fixed", "protocol_procs": K} or {"kind": "floating"}"#,
        ),
        ("internally tagged enum WorkloadSpec", r#"workload {"name": "micro", ...} or {"name": "fetch-add", ...}"#),
    ] {
        m = m.replace(rust, record);
    }
    let m = finegrain_core::config::plain_type_names(&m, "2^64-1");
    match path {
        "" | "." => anyhow::anyhow!(m),
        _ => anyhow::anyhow!("{path}: {m}"),
    }
}

/// What a mislabelled record is told it may be instead.
const DESCRIBED: &str = "allowed a record whose labels describe the run";

/// A regenerated run: what it was, its new statistics, and where they
/// differ from the record (empty when identical).
pub struct Rerun {
    /// The workload in words ("fetch&add").
    pub workload: &'static str,
    pub config: SimConfig,
    pub stats: RunStats,
    pub differences: Vec<String>,
    /// How many values were compared.
    pub fields: usize,
}

/// Reruns a record whose labels are `L`s.
pub fn regenerate<L: Labels>(text: &str) -> Result<Rerun> {
    let record: RecordIn<L> = from_json(text)?;
    record.config.validate()?;
    if !record.stats.get("sim_cycles").is_some_and(Value::is_u64) {
        bail!(
            "its stats have no sim_cycles as a whole number of cycles, so they are not a run's statistics and nothing \
             could be compared"
        );
    }
    record.workload.validate(&record.config)?;
    check_sizes(&record.config, &record.workload, &record.stats)
        .map_err(|why| anyhow::anyhow!("{why}; allowed a record whose statistics come from its configuration"))?;
    record.labels.describe(&record.config, &record.workload).map_err(|why| anyhow::anyhow!("{why}; {DESCRIBED}"))?;
    let expected = record.labels.id();
    if record.id != expected {
        bail!("it names id = {} but its labels make {expected}; {DESCRIBED}", record.id);
    }
    let total = record.workload.total_requests(&record.config);
    let out = progress::one_run(total, || record.workload.run(&Sim(record.config.clone())))?;
    let measures = out.measures.as_ref().map(Measures::to_json);
    let now = serde_json::to_value(&out.stats).context("statistics to JSON")?;
    let mut differences = Vec::new();
    diff("stats", &record.stats, &now, &mut differences);
    let mut fields = leaves(&now);
    match (&record.measures, &measures) {
        (Some(recorded), Some(measured)) => {
            diff("measures", recorded, measured, &mut differences);
            fields += leaves(measured);
        }
        (Some(_), None) => {
            differences.push(format!("measures: recorded, but a {} run has none", record.workload.description()))
        }
        (None, Some(measured)) => {
            differences.push(format!("measures: missing, but a {} run has them", record.workload.description()));
            fields += leaves(measured);
        }
        (None, None) => {}
    }
    for m in record.labels.remeasure(&record.config, &record.workload)? {
        fields += 1;
        if m.recorded != m.now {
            differences.push(format!("{}: recorded {}, measured again {}", m.name, m.recorded, m.now));
        }
    }
    Ok(Rerun { workload: record.workload.description(), config: record.config, stats: out.stats, differences, fields })
}

/// The record's own statistics must be a run of its sizes (nodes,
/// processors per node, requests) before anything is simulated: an edited
/// size would otherwise run for hours or take the host's memory.
fn check_sizes(config: &SimConfig, workload: &WorkloadSpec, stats: &Value) -> Result<(), String> {
    let t = config.run.topology;
    let nodes = stats.get("nodes").and_then(Value::as_array).map_or(0, Vec::len);
    if nodes != t.nodes as usize {
        return Err(format!(
            "its configuration has {} nodes but its statistics {nodes}, so they are not this run's",
            t.nodes
        ));
    }
    let procs = |n: &Value| n.get("procs").and_then(Value::as_array).map_or(0, Vec::len);
    if let Some(n) = stats["nodes"].as_array().and_then(|ns| ns.iter().find(|n| procs(n) != t.procs_per_node as usize))
    {
        return Err(format!(
            "its configuration has {} processors per node but its statistics {}, so they are not this run's",
            t.procs_per_node,
            procs(n)
        ));
    }
    let requests = stats.get("requests").and_then(Value::as_u64);
    let Some(total) = workload.total_requests(config) else {
        return Ok(());
    };
    if requests != Some(total) {
        return Err(format!(
            "its workload makes {total} requests but its statistics answer {}, so they are not this run's",
            requests.map_or("none".to_string(), |r| r.to_string())
        ));
    }
    Ok(())
}

/// Appends "path: recorded X, now Y" for every leaf that differs.
fn diff(at: &str, recorded: &Value, now: &Value, out: &mut Vec<String>) {
    match (recorded, now) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                match b.get(k) {
                    Some(vb) => diff(&format!("{at}.{k}"), va, vb, out),
                    None => out.push(format!("{at}.{k}: recorded {va}, now absent")),
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{at}.{k}: not in the record"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                diff(&format!("{at}[{i}]"), va, vb, out);
            }
        }
        _ if recorded != now => out.push(format!("{at}: recorded {recorded}, now {now}")),
        _ => {}
    }
}

fn leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(leaves).sum(),
        Value::Array(a) => a.iter().map(leaves).sum(),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_key_named_twice_at_any_depth_is_refused() {
        let once: serde_json::Value = super::from_json(r#"{"stats": {"a": 1, "b": [{"c": 2}]}}"#).unwrap();
        assert_eq!(once["stats"]["b"][0]["c"], 2);
        let e = super::from_json::<serde_json::Value>(r#"{"stats": {"sim_cycles": 1, "sim_cycles": 2}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("duplicate key `stats.sim_cycles`"), "{e}");
        let e =
            super::from_json::<serde_json::Value>(r#"{"s": [{"x": 1}, {"y": 1, "y": 1}]}"#).unwrap_err().to_string();
        assert!(e.contains("`s[1].y`"), "{e}");
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn diff_names_each_differing_leaf() {
        let mut out = Vec::new();
        diff(
            "stats",
            &json!({"a": 1, "b": {"c": [1, 2]}, "gone": 0}),
            &json!({"a": 1, "b": {"c": [1, 3]}, "new": 0}),
            &mut out,
        );
        assert_eq!(
            out,
            ["stats.b.c[1]: recorded 2, now 3", "stats.gone: recorded 0, now absent", "stats.new: not in the record"]
        );
    }
}
