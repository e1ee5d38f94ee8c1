//! `finegrain sweep`: any workload over any grid of configuration fields,
//! named by their path in the run's configuration, with seeds, on all
//! cores. No claims: the records, `results.csv` and a summary table of the
//! main measures per point.
//!
//! A path names a field of the run's configuration as its record holds it
//! (`machine.interrupt.overhead_cycles`, `topology.procs_per_node`,
//! `policy`, `dispatch.discipline`, `seed`) or of its workload
//! (`workload.protocol`, `workload.keys`, `workload.skew`). Values are
//! comma-separated; `a..b` is every whole number from a to b. A policy is
//! written as on the command line (`fixed:2`), a key skew likewise
//! (`zipf:1`).

use crate::output;
use crate::record::{Labels, RunRecord};
use crate::runner;
use crate::study::{host_bytes, run_planned, Planned};
use crate::table::markdown_table;
use anyhow::{bail, Context, Result};
use finegrain_apps::fetch_add::KeySkew;
use finegrain_apps::WorkloadSpec;
use finegrain_core::Policy;
use finegrain_sim::{mix_seed, SimConfig};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// The `study` of a sweep's records.
pub const KIND: &str = "sweep";

/// Most points (settings x seeds) one sweep may run.
pub const MAX_RUNS: usize = 100_000;

/// One axis of the grid: a field and the values it takes.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub path: String,
    pub values: Vec<Value>,
}

impl Axis {
    /// Parses `PATH=V1,V2,...` (`a..b` for a range of whole numbers).
    pub fn parse(spec: &str) -> Result<Axis> {
        let Some((path, values)) = spec.split_once('=') else {
            bail!("invalid --set {spec}: allowed PATH=VALUES, e.g. topology.procs_per_node=1..8");
        };
        let path = path.trim();
        if path.is_empty() || path.split('.').any(str::is_empty) {
            bail!("invalid --set {spec}: the path must name a field, e.g. machine.interrupt.overhead_cycles");
        }
        let mut out = Vec::new();
        for v in values.split(',').map(str::trim) {
            match range(v) {
                Some(r) => out.extend(r?),
                None if v.is_empty() => bail!("invalid --set {spec}: an empty value; allowed comma-separated values"),
                None => out.push(scalar(v)),
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(dup) = out.iter().find(|v| !seen.insert(v.to_string())) {
            bail!("invalid --set {spec}: {dup} is listed more than once; allowed distinct values");
        }
        Ok(Axis { path: path.to_string(), values: out })
    }
}

/// `a..b`, inclusive, as numbers; None when `v` is no range.
fn range(v: &str) -> Option<Result<Vec<Value>>> {
    let (a, b) = v.split_once("..")?;
    let (Ok(a), Ok(b)) = (a.trim().parse::<i64>(), b.trim().parse::<i64>()) else {
        return Some(Err(anyhow::anyhow!("invalid range {v}: allowed a..b with whole numbers a <= b")));
    };
    if a > b || b - a >= MAX_RUNS as i64 {
        return Some(Err(anyhow::anyhow!(
            "invalid range {v}: allowed a..b with whole numbers a <= b, at most {MAX_RUNS} values"
        )));
    }
    Some(Ok((a..=b).map(Value::from).collect()))
}

/// A value as JSON: a number, true/false, or else a string.
fn scalar(v: &str) -> Value {
    if let Ok(i) = v.parse::<i64>() {
        return Value::from(i);
    }
    if let Ok(u) = v.parse::<u64>() {
        return Value::from(u);
    }
    if let Some(x) = v.parse::<f64>().ok().filter(|x| x.is_finite()) {
        return Value::from(x);
    }
    match v {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::String(v.to_string()),
    }
}

/// One setting of one point: a field and its value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    pub path: String,
    pub value: Value,
}

/// What a sweep's run is: its settings, its replicate and the base seed
/// its seed was derived from.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepLabels {
    pub settings: Vec<Setting>,
    pub replicate: u32,
    pub base_seed: u64,
}

impl Labels for SweepLabels {
    /// Any workload's, as recorded (a sweep runs any workload).
    type Measures = serde_json::Value;

    /// The settings (each path's last part and its value) and the replicate.
    fn id(&self) -> String {
        let mut id = String::new();
        for s in &self.settings {
            let field = s.path.rsplit('.').next().unwrap_or(&s.path);
            let value = match &s.value {
                Value::String(v) => v.clone(),
                other => other.to_string(),
            };
            let _ = write!(id, "{field}{}-", file_safe(&value));
        }
        format!("{id}r{}", self.replicate)
    }

    fn describe(&self, config: &SimConfig, workload: &WorkloadSpec) -> Result<(), String> {
        let doc = document(config, workload).map_err(|e| e.to_string())?;
        for s in &self.settings {
            let named = normalized(&s.path, &s.value).map_err(|e| e.to_string())?;
            let actual = lookup(&doc, &s.path).ok_or_else(|| format!("its configuration has no field {}", s.path))?;
            if named != *actual {
                return Err(format!(
                    "it names {} = {} but its configuration and workload say {actual}",
                    s.path, s.value
                ));
            }
        }
        if !self.settings.iter().any(|s| s.path == "seed") {
            let seed = seed_of(self.base_seed, self.replicate);
            if config.run.seed != seed {
                return Err(format!(
                    "it names replicate {} of base seed {}, which make seed {seed}, but its configuration runs seed {}",
                    self.replicate, self.base_seed, config.run.seed
                ));
            }
        }
        Ok(())
    }
}

/// A value in a file name: letters, digits and `.:_+-` kept, the rest `_`.
fn file_safe(v: &str) -> String {
    v.chars()
        .map(|c| if c.is_ascii_alphanumeric() || ".:_+-".contains(c) { c } else { '_' })
        .collect::<String>()
        .replace(':', "")
}

/// A replicate's seed.
fn seed_of(base: u64, replicate: u32) -> u64 {
    mix_seed(base, replicate as u64, 0x5eed)
}

/// The run as one JSON document: the configuration, and the workload
/// under `workload`.
fn document(config: &SimConfig, workload: &WorkloadSpec) -> Result<Value> {
    let mut doc = serde_json::to_value(config)?;
    doc["workload"] = serde_json::to_value(workload)?;
    Ok(doc)
}

fn lookup<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, part| v.get(part))
}

/// A value as the configuration holds it: fields written as on the
/// command line (a policy, a key skew) are turned into their JSON form.
fn normalized(path: &str, value: &Value) -> Result<Value> {
    let Value::String(text) = value else { return Ok(value.clone()) };
    Ok(match path {
        "policy" => serde_json::to_value(Policy::parse(text)?)?,
        "workload.skew" => serde_json::to_value(KeySkew::parse(text)?)?,
        _ => value.clone(),
    })
}

/// Sets `path` in `doc` to `value`; the path must name a field the
/// document has.
fn set(doc: &mut Value, path: &str, value: Value) -> Result<()> {
    let mut at = doc;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let known = || -> String {
            let mut names: Vec<String> = at.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
            names.sort();
            names.join(", ")
        };
        let Some(obj) = at.as_object() else {
            bail!("invalid --set {path}: {} is not a table of fields", parts[..i].join("."));
        };
        if !obj.contains_key(*part) {
            let within = if i == 0 { "the run".to_string() } else { parts[..i].join(".") };
            bail!("invalid --set {path}: {within} has no field {part}; allowed {}", known());
        }
        at = &mut at[*part];
    }
    *at = value;
    Ok(())
}

/// A sweep: a base run, the axes of its grid, and the seeds of each point.
pub struct Sweep {
    pub name: String,
    pub config: SimConfig,
    pub workload: WorkloadSpec,
    pub axes: Vec<Axis>,
    /// Seeds per point.
    pub seeds: u32,
}

impl Sweep {
    /// Every run of the grid, each checked before any runs.
    pub fn plan(&self) -> Result<Vec<Planned<SweepLabels>>> {
        // The name goes into every record and the summary's title.
        if self.name.trim().is_empty() || self.name.chars().any(char::is_control) {
            bail!("invalid name = {:?}: allowed non-blank text without control characters", self.name);
        }
        if self.seeds == 0 || self.seeds > 1000 {
            bail!("invalid seeds = {}: allowed 1..=1000", self.seeds);
        }
        let mut paths = std::collections::BTreeSet::new();
        if let Some(a) = self.axes.iter().find(|a| !paths.insert(a.path.as_str())) {
            bail!("invalid --set {}: the path is set twice; allowed one --set per field", a.path);
        }
        if self.axes.iter().any(|a| a.path == "seed") && self.seeds > 1 {
            bail!("invalid seeds = {}: the sweep sets seed itself, so allowed only 1", self.seeds);
        }
        let points: usize = self.axes.iter().map(|a| a.values.len()).product::<usize>() * self.seeds as usize;
        if points > MAX_RUNS {
            bail!("invalid sweep: {points} runs; allowed at most {MAX_RUNS}");
        }
        let base = document(&self.config, &self.workload)?;
        let mut planned = Vec::with_capacity(points);
        let mut ids = std::collections::BTreeSet::new();
        for settings in grid(&self.axes) {
            for replicate in 0..self.seeds {
                let labels = SweepLabels { settings: settings.clone(), replicate, base_seed: self.config.run.seed };
                let p = self.point(&base, labels)?;
                if !ids.insert(p.labels.id()) {
                    bail!(
                        "invalid sweep: two points would share the record name {}; allowed values that differ in \
                         letters or digits",
                        p.labels.id()
                    );
                }
                planned.push(p);
            }
        }
        Ok(planned)
    }

    fn point(&self, base: &Value, labels: SweepLabels) -> Result<Planned<SweepLabels>> {
        let mut doc = base.clone();
        for s in &labels.settings {
            set(&mut doc, &s.path, normalized(&s.path, &s.value)?)?;
        }
        if !labels.settings.iter().any(|s| s.path == "seed") {
            doc["seed"] = Value::from(seed_of(labels.base_seed, labels.replicate));
        }
        let what = || format!("invalid sweep point {}", labels.id());
        let workload: WorkloadSpec = from_value(doc["workload"].take()).with_context(what)?;
        doc.as_object_mut().expect("a table").remove("workload");
        let config: SimConfig = from_value(doc).with_context(what)?;
        workload.validate(&config).with_context(what)?;
        Ok(Planned { labels, config, workload })
    }

    /// Runs every point and writes `runs/`, `results.csv` and
    /// `summary.md` into `out`; returns the summary table.
    pub fn run(&self, out: &Path) -> Result<String> {
        let planned = self.plan()?;
        output::prepare_out(out)?;
        let label = format!("sweep {}", self.name);
        let records = runner::run_all(&planned, &label, host_bytes, SimConfig::host_bytes_limit(), |p| {
            run_planned(KIND, &self.name, p)
        })?;
        let refs: Vec<&RunRecord<SweepLabels>> = records.iter().collect();
        output::write_records(out, None, &refs, &Default::default(), &csv(&self.axes, &records))?;
        let summary = summary(&self.axes, &records);
        let path = out.join("summary.md");
        let text = format!(
            "# Sweep {}\n\n{} runs ({} seeds per point) of the {} workload; every run's configuration and seed is in \
             `runs/<id>.json`.\n\n{summary}",
            self.name,
            records.len(),
            self.seeds,
            self.workload.description()
        );
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(summary)
    }
}

/// Every combination of the axes' values, the first axis outermost.
fn grid(axes: &[Axis]) -> Vec<Vec<Setting>> {
    axes.iter().fold(vec![Vec::new()], |acc, axis| {
        acc.iter()
            .flat_map(|prefix| {
                axis.values.iter().map(move |v| {
                    let mut s = prefix.clone();
                    s.push(Setting { path: axis.path.clone(), value: v.clone() });
                    s
                })
            })
            .collect()
    })
}

fn from_value<T: serde::de::DeserializeOwned>(v: Value) -> Result<T> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let m = finegrain_core::config::plain_type_names(&e.inner().to_string(), "2^64-1");
        anyhow::anyhow!("{}: {m}", e.path())
    })
}

/// The measures a sweep reports for every run, in this order.
const MEASURES: [&str; 7] = [
    "sim_us",
    "requests_per_us",
    "interrupts_per_request",
    "pp_occupancy",
    "measured_u",
    "mean_request_latency_cycles",
    "migration_misses_per_request",
];

/// A run's [`MEASURES`].
fn measures(r: &RunRecord<SweepLabels>) -> [f64; 7] {
    let s = &r.stats;
    let us = r.config.machine.cycles_to_us(s.sim_cycles as f64);
    let per_request = |n: u64| n as f64 / s.requests.max(1) as f64;
    [
        us,
        s.requests as f64 / us.max(1e-9),
        per_request(s.interrupts),
        s.pp_occupancy,
        s.measured_u,
        s.request_latency.mean_cycles,
        per_request(s.misses.migration),
    ]
}

fn csv(axes: &[Axis], records: &[RunRecord<SweepLabels>]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{},replicate,seed,sim_cycles,events,messages,{},wall_seconds,record",
        axes.iter().map(|a| a.path.as_str()).collect::<Vec<_>>().join(","),
        MEASURES.join(",")
    );
    for r in records {
        let settings: Vec<String> = r.labels.settings.iter().map(|x| csv_cell(&x.value)).collect();
        let values: Vec<String> = measures(r).iter().map(|v| format!("{v:.4}")).collect();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{:.3},runs/{}.json",
            settings.join(","),
            r.labels.replicate,
            r.config.run.seed,
            r.stats.sim_cycles,
            r.stats.events,
            r.stats.messages,
            values.join(","),
            r.wall.wall_seconds,
            r.id
        );
    }
    s
}

/// A value in a CSV cell (strings bare, quoted if they hold a comma).
fn csv_cell(v: &Value) -> String {
    match v {
        Value::String(s) if s.contains(',') || s.contains('"') => format!("\"{}\"", s.replace('"', "\"\"")),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Means over each point's seeds of the main measures, one row a point.
fn summary(axes: &[Axis], records: &[RunRecord<SweepLabels>]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut i = 0;
    while i < records.len() {
        let settings = &records[i].labels.settings;
        let same = records[i..].iter().take_while(|r| &r.labels.settings == settings).count();
        let group = &records[i..i + same];
        let mut row: Vec<String> = settings.iter().map(|s| csv_cell(&s.value)).collect();
        for k in 0..MEASURES.len() {
            let mean = group.iter().map(|r| measures(r)[k]).sum::<f64>() / group.len() as f64;
            row.push(format!("{mean:.3}"));
        }
        rows.push(row);
        i += same;
    }
    let mut header: Vec<&str> = axes.iter().map(|a| a.path.as_str()).collect();
    header.extend(MEASURES);
    markdown_table(&header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_parse_values_and_ranges() {
        let a = Axis::parse("topology.procs_per_node=1..3,8").unwrap();
        assert_eq!(a.path, "topology.procs_per_node");
        assert_eq!(a.values, vec![Value::from(1), Value::from(2), Value::from(3), Value::from(8)]);
        let a = Axis::parse("policy=single,fixed:2").unwrap();
        assert_eq!(a.values, vec![Value::from("single"), Value::from("fixed:2")]);
        assert!(Axis::parse("policy").unwrap_err().to_string().contains("allowed PATH=VALUES"));
        assert!(Axis::parse("x=1,1").unwrap_err().to_string().contains("listed more than once"));
        assert!(Axis::parse("x=3..1").unwrap_err().to_string().contains("a <= b"));
        assert!(Axis::parse("x..y=1").unwrap_err().to_string().contains("must name a field"));
    }

    #[test]
    fn the_grid_is_every_combination_first_axis_outermost() {
        let axes = [Axis::parse("a=1,2").unwrap(), Axis::parse("b=x,y").unwrap()];
        let g = grid(&axes);
        let flat: Vec<String> =
            g.iter().map(|s| s.iter().map(|x| format!("{}{}", x.path, x.value)).collect::<String>()).collect();
        assert_eq!(flat, ["a1b\"x\"", "a1b\"y\"", "a2b\"x\"", "a2b\"y\""]);
    }

    fn base() -> Sweep {
        let config = SimConfig::new(
            finegrain_core::MachineConfig::load("hpca97").unwrap(),
            finegrain_core::Topology { nodes: 2, procs_per_node: 1 },
            Policy::Single,
            7,
        );
        let workload = WorkloadSpec::Micro(finegrain_apps::micro::MicroConfig {
            protocol: finegrain_apps::micro::Protocol::Null,
            mean_compute_cycles: 0.0,
            requests_per_node: 10,
            single_requester: false,
        });
        Sweep { name: "t".into(), config, workload, axes: Vec::new(), seeds: 1 }
    }

    #[test]
    fn each_point_sets_its_fields_and_its_labels_describe_it() {
        let mut s = base();
        s.axes = vec![
            Axis::parse("machine.interrupt.overhead_cycles=200,2000").unwrap(),
            Axis::parse("policy=floating,fixed").unwrap(),
        ];
        s.config.run.topology.procs_per_node = 2;
        s.seeds = 2;
        let p = s.plan().unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(p.len(), 8);
        assert_eq!(p[3].config.machine.interrupt.overhead_cycles, 200);
        assert_eq!(p[3].config.run.policy, Policy::Fixed { protocol_procs: 1 });
        assert_eq!(p[3].labels.id(), "overhead_cycles200-policyfixed-r1");
        assert_ne!(p[2].config.run.seed, p[3].config.run.seed, "each replicate its own seed");
        for q in &p {
            q.labels.describe(&q.config, &q.workload).unwrap();
        }
        // Labels that another configuration does not match are caught.
        let err = p[0].labels.describe(&p[4].config, &p[4].workload).unwrap_err();
        assert!(err.contains("machine.interrupt.overhead_cycles = 200"), "{err}");
    }

    #[test]
    fn a_path_or_value_the_run_cannot_take_is_named() {
        let mut s = base();
        s.axes = vec![Axis::parse("machine.interrupt.overhed=1").unwrap()];
        let e = format!("{:#}", s.plan().unwrap_err());
        assert!(e.contains("machine.interrupt has no field overhed; allowed") && e.contains("overhead_cycles"), "{e}");
        s.axes = vec![Axis::parse("topology.procs_per_node=lots").unwrap()];
        let e = format!("{:#}", s.plan().unwrap_err());
        assert!(e.contains("topology.procs_per_node"), "{e}");
        s.axes = vec![Axis::parse("topology.procs_per_node=0").unwrap()];
        let e = format!("{:#}", s.plan().unwrap_err());
        assert!(e.contains("procs_per_node"), "{e}");
    }
}
