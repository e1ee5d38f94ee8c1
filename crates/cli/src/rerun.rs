//! `finegrain rerun RECORD.json`: regenerates one simulated run from the
//! configuration and seed its record holds, and checks that the
//! statistics come out as recorded. Works on every record a study writes
//! (`runs/<id>.json`) and on `finegrain run --json` output.

use crate::experiment::EffectOff;
use crate::pdq_study::{self, Point, Sweep};
use crate::scheduling;
use anyhow::{Context, Result};
use finegrain_apps::{fetch_add, fetch_add::FetchAddConfig, micro, micro::MicroConfig};
use finegrain_core::{Relinquish, RoleArbitration};
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

/// Parses a record, naming the field at fault in plain words.
fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, anyhow::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| json_error(&e.path().to_string(), e.inner()))?;
    // Anything after the record (a second one, stray bytes) is refused.
    de.end().map_err(|e| json_error("", &e))?;
    Ok(value)
}

/// [`from_json`] of a part of a record already parsed.
fn from_json_value<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, anyhow::Error> {
    serde_path_to_error::deserialize(v).map_err(|e| json_error(&e.path().to_string(), e.inner()))
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

/// The workloads a record may name.
enum Workload {
    Micro(MicroConfig),
    FetchAdd(FetchAddConfig),
}

impl Workload {
    /// Told apart by fields only fetch&add has, so a bad record gets the
    /// error of the workload it is meant to be.
    fn from_value(v: Value) -> Result<Workload> {
        if ["keys", "skew", "handler_cycles"].iter().any(|f| v.get(f).is_some()) {
            return from_json_value(v)
                .map(Workload::FetchAdd)
                .map_err(|e| anyhow::anyhow!("invalid fetch&add workload in the record: {e}"));
        }
        from_json_value(v).map(Workload::Micro).map_err(|e| {
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
        let total = match self {
            Workload::Micro(w) => micro::total_requests(config, w),
            Workload::FetchAdd(w) => fetch_add::total_requests(config, w),
        };
        crate::progress::one_run(total, || self.simulate_quietly(config))
    }

    fn simulate_quietly(&self, config: &SimConfig) -> Result<(RunStats, Option<Value>)> {
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
    let text = crate::experiment::read_input(path)?;
    if serde_json::from_str::<Value>(&text).is_ok_and(|v| v.get("platform").and_then(Value::as_str) == Some("native")) {
        anyhow::bail!(
            "invalid run record {}: it is a native run's (platform native), measured on real threads, which no rerun \
             can regenerate; allowed records of simulated runs (a study's runs/*.json, `finegrain run --json` of \
             platform sim)",
            path.display()
        );
    }
    let record: Record = from_json(&text).with_context(|| {
        format!(
            "invalid run record {}: expected the JSON a study, `finegrain run --json` or `finegrain fetch-add --json` \
             writes for a simulated run",
            path.display()
        )
    })?;
    record.config.validate()?;
    if !record.stats.get("sim_cycles").is_some_and(Value::is_u64) {
        anyhow::bail!(
            "invalid run record {}: its stats have no sim_cycles as a whole number of cycles, so they are not a run's \
             statistics and nothing could be compared",
            path.display()
        );
    }
    let workload = Workload::from_value(record.workload)?;
    let mislabelled = |name: &str, named: &Value, expected: &dyn std::fmt::Display| {
        anyhow::anyhow!(
            "invalid run record {}: it names {name} = {named} but its configuration and workload say {expected}; \
             {DESCRIBED}",
            path.display()
        )
    };
    if let Some(why) = unknown_or_mistyped_label(&workload, &record.labels) {
        anyhow::bail!("invalid run record {}: {why}", path.display());
    }
    for (name, expected) in workload.labels(&record.config) {
        if let Some(named) = record.labels.get(name).filter(|&v| *v != expected) {
            return Err(mislabelled(name, named, &expected));
        }
    }
    if let Some(why) = derived_label_mismatch(&workload, &record.config, &record.labels) {
        anyhow::bail!("invalid run record {}: {why}", path.display());
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
        (None, Some(home)) => {
            differences.push("home: missing, but a fetch&add run has home measures".into());
            fields += leaves(home);
        }
        (None, None) => {}
    }
    fields += compare_lmin(&workload, &record.config, &record.labels, &mut differences)?;
    Ok(Rerun { workload: workload.label(), config: record.config, stats, differences, fields })
}

/// A `finegrain run --json` record's Lmin against the one its machine and
/// seed measure (the run measured it with them), noting a difference;
/// returns how many values it compared (0 or 1). A study's record is left
/// alone: its study measured Lmin with the study's base seed, which the
/// record does not name; its target U and mean compute time must agree
/// with it all the same (see [`derived_label_mismatch`]).
fn compare_lmin(
    workload: &Workload,
    c: &SimConfig,
    labels: &serde_json::Map<String, Value>,
    differences: &mut Vec<String>,
) -> Result<usize> {
    let (Workload::Micro(w), None) = (workload, labels.get("experiment")) else { return Ok(0) };
    let Some(recorded) = labels.get("lmin_cycles").and_then(Value::as_f64) else { return Ok(0) };
    let measured = micro::measure_lmin(&c.machine, w.protocol, c.seed).context("measuring Lmin again")?;
    if measured != recorded {
        differences.push(format!("lmin_cycles: recorded {recorded}, measured again {measured}"));
    }
    Ok(1)
}

/// The first label that disagrees with what the others and the
/// configuration imply, as the rest of a one-line message: a sensitivity
/// run's switched-off effect and relinquish rule must be the
/// configuration's, a scheduling run's target U and Lmin must give its
/// mean compute time, and its id must be the one its labels (replicate
/// included) make. (A sensitivity
/// run relabelled as a baseline one is not caught: the record does not say
/// what the preset's own effects and rule were.)
fn derived_label_mismatch(
    workload: &Workload,
    c: &SimConfig,
    labels: &serde_json::Map<String, Value>,
) -> Option<String> {
    let present = |name: &str| labels.get(name).filter(|v| !v.is_null());
    let effect = match parsed_label::<EffectOff>(labels, "effect_off", &EffectOff::allowed_names()) {
        Ok(e) => e,
        Err(why) => return Some(why),
    };
    if let Some(e) = effect {
        if e.is_on(&c.machine) {
            return Some(format!(
                "it names effect_off = {} but its configuration runs with {0} on; {DESCRIBED}",
                e.name()
            ));
        }
    }
    let w = match workload {
        Workload::Micro(w) => w,
        Workload::FetchAdd(w) => return fetch_add_id_mismatch(w, c, effect, labels),
    };
    let protocol = &c.machine.protocol;
    let rule = match named_rule(
        labels,
        "relinquish_rule",
        "eager, handoff or adaptive",
        protocol.relinquish,
        Relinquish::label,
    ) {
        Ok(r) => r,
        Err(why) => return Some(why),
    };
    let arbitration = match named_rule(
        labels,
        "arbitration_rule",
        "lowest or round-robin",
        protocol.role_arbitration,
        RoleArbitration::label,
    ) {
        Ok(a) => a,
        Err(why) => return Some(why),
    };
    let return_percent = match return_share(labels, c.machine.interrupt.entry_percent) {
        Ok(r) => r,
        Err(why) => return Some(why),
    };
    let u = present("target_u").and_then(Value::as_f64)?;
    let Some(lmin) = present("lmin_cycles").and_then(Value::as_f64) else {
        return Some(format!(
            "it names target_u = {u} but no lmin_cycles, which turned that U into its mean compute time; {DESCRIBED}"
        ));
    };
    let implied = scheduling::mean_compute(u, lmin);
    if implied != w.mean_compute_cycles {
        return Some(format!(
            "it names target_u = {u} and lmin_cycles = {lmin}, which give a mean compute time of {implied} cycles, but \
             its workload computes {} on average; {DESCRIBED}",
            w.mean_compute_cycles
        ));
    }
    let (Some(id), Some(r)) = (present("id").and_then(Value::as_str), present("replicate").and_then(Value::as_u64))
    else {
        return None;
    };
    let policy = c.policy.label();
    let (procs, oint) = (c.topology.procs_per_node, c.machine.interrupt.overhead_cycles);
    let variant = scheduling::Variant { effect_off: effect, relinquish: rule, arbitration, return_percent };
    let expected = scheduling::run_id(variant, w.protocol, &policy, procs, u, oint, r as u32);
    (id != expected).then(|| format!("it names id = {id} but its labels make {expected}; {DESCRIBED}"))
}

/// A PDQ study record's id against the one its sweep, configuration and
/// workload make.
fn fetch_add_id_mismatch(
    w: &FetchAddConfig,
    c: &SimConfig,
    effect: Option<EffectOff>,
    labels: &serde_json::Map<String, Value>,
) -> Option<String> {
    let sweep = match parsed_label::<Sweep>(labels, "sweep", "main, mult-home-u, sequential, sensitivity or affinity") {
        Ok(s) => s,
        Err(why) => return Some(why),
    };
    let affinity = c.machine.pdq.as_ref().is_some_and(|p| p.affinity_passes > 0);
    if sweep == Some(Sweep::Affinity) && !affinity {
        return Some(format!(
            "it names sweep = \"affinity\" but its configuration runs without key affinity \
             (pdq.affinity_passes = 0); {DESCRIBED}"
        ));
    }
    let (Some(id), Some(sweep)) = (labels.get("id").and_then(Value::as_str), sweep) else { return None };
    let point = Point::of_config(c)?;
    let expected = pdq_study::run_id(&point, w.keys, w.skew, sweep, w.home_u, w.sequential_fraction, effect);
    (id != expected).then(|| format!("it names id = {id} but its labels make {expected}; {DESCRIBED}"))
}

/// What JSON a label must hold (null counts as absent, except for
/// `Compared` labels, which are compared with what the configuration says).
#[derive(Clone, Copy)]
enum LabelType {
    Text,
    Sim,
    Number,
    Positive,
    /// A target utilization, in [0, 1).
    Utilization,
    WholeU32,
    Object,
    /// Compared with the configuration and workload instead, which types it.
    Compared,
}

impl LabelType {
    fn admits(self, v: &Value) -> bool {
        match self {
            LabelType::Text => v.is_string(),
            LabelType::Sim => v.as_str() == Some("sim"),
            LabelType::Number => v.is_number(),
            LabelType::Positive => v.as_f64().is_some_and(|x| x > 0.0 && x.is_finite()),
            LabelType::Utilization => v.as_f64().is_some_and(|x| (0.0..1.0).contains(&x)),
            LabelType::WholeU32 => v.as_u64().is_some_and(|r| r <= u32::MAX as u64),
            LabelType::Object => v.is_object(),
            LabelType::Compared => true,
        }
    }

    fn allowed(self) -> &'static str {
        match self {
            LabelType::Text => "a string",
            LabelType::Sim => "\"sim\"",
            LabelType::Number => "a number",
            LabelType::Positive => "a positive number",
            LabelType::Utilization => "a utilization from 0 up to but not including 1",
            LabelType::WholeU32 => "a whole number",
            LabelType::Object => "an object",
            LabelType::Compared => "what the configuration says",
        }
    }
}

use LabelType::{Compared, Number, Object, Positive, Sim, Text, Utilization, WholeU32};

/// Labels every simulated record may carry besides its workload's own.
const COMMON_LABELS: &[(&str, LabelType)] = &[
    ("experiment", Text),
    ("id", Text),
    ("platform", Sim),
    ("wall_seconds", Number),
    ("perf", Object),
    ("derived", Object),
    ("seed", Compared),
    ("effect_off", Compared),
];

/// Labels only a scheduling microbenchmark's record carries.
const MICRO_LABELS: &[(&str, LabelType)] = &[
    ("protocol", Compared),
    ("policy", Compared),
    ("procs_per_node", Compared),
    ("compute_procs", Compared),
    ("oint_cycles", Compared),
    ("mean_compute_cycles", Compared),
    ("target_u", Utilization),
    ("lmin_cycles", Positive),
    ("replicate", WholeU32),
    ("relinquish_rule", Compared),
    ("arbitration_rule", Compared),
    ("interrupt_return_percent", Compared),
];

/// Labels only a fetch&add record carries.
const FETCH_ADD_LABELS: &[(&str, LabelType)] = &[
    ("sweep", Compared),
    ("kind", Compared),
    ("discipline", Compared),
    ("protocol_procs", Compared),
    ("keys", Compared),
    ("skew", Compared),
    ("target_home_u", Compared),
    ("sequential_fraction", Compared),
    ("think_cycles", Compared),
];

/// A label this kind of record never carries, or one of the wrong JSON
/// type, as the rest of a one-line message: a record is checked label by
/// label, so one it would silently skip could hide a mislabelled run.
fn unknown_or_mistyped_label(workload: &Workload, labels: &serde_json::Map<String, Value>) -> Option<String> {
    let own = match workload {
        Workload::Micro(_) => MICRO_LABELS,
        Workload::FetchAdd(_) => FETCH_ADD_LABELS,
    };
    let known = || COMMON_LABELS.iter().chain(own);
    // A null stands for a label the record leaves open (`lmin_cycles` of a
    // run given its compute time), so only a known label may be null.
    for (name, v) in labels {
        let Some(&(_, ty)) = known().find(|(n, _)| n == name) else {
            let names: Vec<&str> = known().map(|(n, _)| *n).collect();
            return Some(format!(
                "it has a label {name} that no {} record carries; allowed {}",
                workload.label(),
                names.join(", ")
            ));
        };
        if !v.is_null() && !ty.admits(v) {
            return Some(format!("{name} = {v}: allowed {}", ty.allowed()));
        }
    }
    None
}

/// A rule a sensitivity run's record names (if any), which must be the one
/// its configuration runs under.
fn named_rule<T: serde::de::DeserializeOwned + PartialEq + Copy>(
    labels: &serde_json::Map<String, Value>,
    name: &str,
    allowed: &str,
    configured: T,
    label: fn(T) -> &'static str,
) -> Result<Option<T>, String> {
    let rule = parsed_label::<T>(labels, name, allowed)?;
    match rule {
        Some(r) if r != configured => Err(format!(
            "it names {name} = {} but its configuration runs under {}; {DESCRIBED}",
            label(r),
            label(configured)
        )),
        _ => Ok(rule),
    }
}

/// The share of Oint paid on return that a claim-1 rerun names, checked
/// against the interrupt's split its configuration runs with.
fn return_share(labels: &serde_json::Map<String, Value>, entry_percent: u32) -> Result<Option<u32>, String> {
    let share = parsed_label::<u32>(labels, "interrupt_return_percent", "a percentage 0..=100")?;
    match share {
        Some(r) if r > 100 => Err(format!("interrupt_return_percent = {r}: allowed a percentage 0..=100")),
        Some(r) if r != 100 - entry_percent => Err(format!(
            "it names interrupt_return_percent = {r} but its configuration pays {}% of Oint on return; {DESCRIBED}",
            100 - entry_percent
        )),
        _ => Ok(share),
    }
}

/// A label naming one of a few values: None when absent (or null), an
/// error saying what is allowed when it names none of them.
fn parsed_label<T: serde::de::DeserializeOwned>(
    labels: &serde_json::Map<String, Value>,
    name: &str,
    allowed: &str,
) -> Result<Option<T>, String> {
    match labels.get(name).filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|_| format!("{name} = {v}: allowed {allowed}")),
    }
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
