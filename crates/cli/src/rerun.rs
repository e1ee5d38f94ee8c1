//! `finegrain rerun RECORD.json`: regenerates one simulated run from the
//! configuration and seed its record holds, and checks that the
//! statistics come out as recorded. Works on every record a study writes
//! (`runs/<id>.json`) and on `finegrain run --json` output.

use crate::experiment::EffectOff;
use crate::pdq_study::Point;
use crate::scheduling;
use anyhow::{Context, Result};
use finegrain_apps::{fetch_add, fetch_add::FetchAddConfig, micro, micro::MicroConfig};
use finegrain_core::Relinquish;
use finegrain_sim::{RunStats, SimConfig};
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;

/// The part of a run record that regenerates it and what is checked
/// against the rerun: the statistics, a fetch&add record's home measures
/// (the figures its study tabulates), and the labels a study's record names
/// beside its configuration (they must describe it). Figures across runs
/// and wall-clock time are not checked.
#[derive(Deserialize)]
struct Record {
    config: SimConfig,
    workload: Value,
    stats: Value,
    home: Option<Value>,
    #[serde(flatten)]
    labels: serde_json::Map<String, Value>,
}

/// The workloads a record may name.
enum Workload {
    Micro(MicroConfig),
    FetchAdd(FetchAddConfig),
}

impl Workload {
    /// Told apart by `keys`, which only fetch&add has, so a bad record
    /// gets the error of the workload it is meant to be.
    fn from_value(v: Value) -> Result<Workload> {
        if v.get("keys").is_some() {
            return serde_json::from_value(v).map(Workload::FetchAdd).map_err(|e| {
                // serde names the Rust type; say what the record should hold.
                let e = e.to_string().replace(
                    "internally tagged enum KeySkew",
                    "skew {\"kind\": \"uniform\"} or {\"kind\": \"zipf\", \"exponent\": S}",
                );
                anyhow::anyhow!("invalid fetch&add workload in the record: {e}")
            });
        }
        serde_json::from_value(v).map(Workload::Micro).map_err(|e| {
            anyhow::anyhow!(
                "invalid workload in the record: allowed a scheduling microbenchmark or a fetch&add workload ({e})"
            )
        })
    }

    fn label(&self) -> &'static str {
        match self {
            Workload::Micro(_) => "scheduling microbenchmark",
            Workload::FetchAdd(_) => "fetch&add",
        }
    }

    /// The labels a record of this workload may carry, as its
    /// configuration and workload say they must read.
    fn labels(&self, c: &SimConfig) -> Vec<(&'static str, Value)> {
        let mut labels = vec![("seed", json!(c.seed))];
        match self {
            Workload::Micro(w) => labels.extend([
                ("protocol", json!(w.protocol)),
                ("policy", json!(c.policy.label())),
                ("procs_per_node", json!(c.topology.procs_per_node)),
                ("compute_procs", json!(c.policy.compute_procs(c.topology.procs_per_node))),
                ("oint_cycles", json!(c.machine.interrupt.overhead_cycles)),
                ("mean_compute_cycles", json!(w.mean_compute_cycles)),
            ]),
            Workload::FetchAdd(w) => {
                if let Some(p) = Point::of_config(c) {
                    labels.extend([
                        ("kind", json!(p.kind)),
                        ("discipline", json!(p.discipline)),
                        ("protocol_procs", json!(p.protocol_procs)),
                    ]);
                }
                labels.extend([
                    ("keys", json!(w.keys)),
                    ("skew", json!(w.skew.label())),
                    ("target_home_u", json!(w.home_u)),
                    ("sequential_fraction", json!(w.sequential_fraction)),
                    ("think_cycles", json!(w.think_cycles)),
                ]);
            }
        }
        labels
    }

    /// The run's statistics, and its home measures for fetch&add.
    fn simulate(&self, config: &SimConfig) -> Result<(RunStats, Option<Value>)> {
        Ok(match self {
            Workload::Micro(w) => (micro::simulate(config, w)?.stats, None),
            Workload::FetchAdd(w) => {
                let out = fetch_add::simulate(config, w)?;
                let home = serde_json::to_value(fetch_add::home_measures(&config.machine, &out))?;
                (out.stats, Some(home))
            }
        })
    }
}

/// A regenerated run: what it was, its new statistics, and where they
/// differ from the record (empty when identical).
pub struct Rerun {
    pub workload: &'static str,
    pub config: SimConfig,
    pub stats: RunStats,
    pub differences: Vec<String>,
    pub fields: usize,
}

pub fn rerun(path: &Path) -> Result<Rerun> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if serde_json::from_str::<Value>(&text).is_ok_and(|v| v.get("platform").and_then(Value::as_str) == Some("native")) {
        anyhow::bail!(
            "invalid run record {}: it is a native run's (platform native), measured on real threads, which no rerun \
             can regenerate; allowed records of simulated runs (a study's runs/*.json, `finegrain run --json` of \
             platform sim)",
            path.display()
        );
    }
    let record: Record = serde_json::from_str(&text).with_context(|| {
        format!(
            "invalid run record {}: expected the JSON a study, `finegrain run --json` or `finegrain fetch-add --json` \
             writes for a simulated run",
            path.display()
        )
    })?;
    record.config.validate()?;
    if !record.stats.get("sim_cycles").is_some_and(Value::is_u64) {
        anyhow::bail!(
            "invalid run record {}: its stats are not a run's statistics (no sim_cycles), so nothing could be compared",
            path.display()
        );
    }
    let workload = Workload::from_value(record.workload)?;
    let mislabelled = |name: &str, named: &Value, expected: &dyn std::fmt::Display| {
        anyhow::anyhow!(
            "invalid run record {}: it names {name} = {named} but its configuration and workload say {expected}; \
             allowed a record whose labels describe the run",
            path.display()
        )
    };
    for (name, expected) in workload.labels(&record.config) {
        if let Some(named) = record.labels.get(name).filter(|&v| *v != expected) {
            return Err(mislabelled(name, named, &expected));
        }
    }
    if let Some((name, named, expected)) = derived_label_mismatch(&workload, &record.config, &record.labels) {
        return Err(mislabelled(name, &named, &expected));
    }
    let (stats, home) = workload.simulate(&record.config)?;
    let now = serde_json::to_value(&stats).context("statistics to JSON")?;
    let mut differences = Vec::new();
    diff("stats", &record.stats, &now, &mut differences);
    let mut fields = leaves(&now);
    match (&record.home, &home) {
        (Some(recorded), Some(home)) => {
            diff("home", recorded, home, &mut differences);
            fields += leaves(home);
        }
        (Some(_), None) => differences.push("home: recorded, but a scheduling run has no home measures".into()),
        (None, _) => {}
    }
    Ok(Rerun { workload: workload.label(), config: record.config, stats, differences, fields })
}

/// The first label that disagrees with what the others and the
/// configuration imply: a sensitivity run's switched-off effect and
/// relinquish rule must be the configuration's, a scheduling run's target
/// U and Lmin must give its mean compute time, and its id must be the one
/// its labels (replicate included) make.
fn derived_label_mismatch(
    workload: &Workload,
    c: &SimConfig,
    labels: &serde_json::Map<String, Value>,
) -> Option<(&'static str, Value, String)> {
    let effect_off = labels.get("effect_off").filter(|v| !v.is_null());
    let effect: Option<EffectOff> = match effect_off.map(|v| serde_json::from_value(v.clone())) {
        Some(Ok(e)) => Some(e),
        Some(Err(_)) => {
            return Some(("effect_off", effect_off?.clone(), "cache_interference, migration or data_placement".into()))
        }
        None => None,
    };
    if let Some(e) = effect {
        let mut off = c.machine.effects;
        e.apply(&mut off);
        if off != c.machine.effects {
            return Some(("effect_off", json!(e), format!("{} on", e.name())));
        }
    }
    let Workload::Micro(w) = workload else { return None };
    let rule = labels.get("relinquish_rule").filter(|v| !v.is_null());
    let rule: Option<Relinquish> = match rule.map(|v| serde_json::from_value(v.clone())) {
        Some(Ok(r)) => Some(r),
        Some(Err(_)) => return Some(("relinquish_rule", rule?.clone(), "eager, handoff or adaptive".into())),
        None => None,
    };
    if let Some(r) = rule.filter(|&r| r != c.machine.protocol.relinquish) {
        return Some(("relinquish_rule", json!(r), c.machine.protocol.relinquish.label().to_string()));
    }
    let u = labels.get("target_u").and_then(Value::as_f64);
    let lmin = labels.get("lmin_cycles").and_then(Value::as_f64);
    if let (Some(u), Some(lmin)) = (u, lmin) {
        let implied = scheduling::mean_compute(u, lmin);
        if implied != w.mean_compute_cycles {
            return Some((
                "target_u and lmin_cycles",
                json!([u, lmin]),
                format!("a mean compute time of {} cycles, not {implied}", w.mean_compute_cycles),
            ));
        }
        let replicate = labels.get("replicate").and_then(Value::as_u64).and_then(|r| u32::try_from(r).ok());
        if let (Some(id), Some(r)) = (labels.get("id").and_then(Value::as_str), replicate) {
            let policy = c.policy.label();
            let procs = c.topology.procs_per_node;
            let oint = c.machine.interrupt.overhead_cycles;
            let expected = scheduling::run_id(effect, rule, w.protocol, &policy, procs, u, oint, r);
            if id != expected {
                return Some(("id", json!(id), expected));
            }
        }
    }
    None
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
