//! A study on the native runtime (`finegrain reproduce NAME --platform
//! native`): the study's planned runs, each mapped to threads of this
//! process ([`crate::platform::native_target`]) and run one at a time, so
//! no run's threads share the cores with another's.
//!
//! Native runs are not simulations: their times are wall-clock
//! nanoseconds of this host, they differ from one run to the next, and
//! some measures the simulator takes do not exist there. So their records
//! say which platform made them, carry the run's summary as the runtime
//! measured it (absent measures absent, never zero) and no simulator
//! configuration: `rerun` and `--reuse`, which regenerate or take
//! simulations, refuse them. A study's claims are judged on native runs
//! only where the runtime measures what they compare; the others are
//! reported as not judged, with the reason.

use crate::experiment::{Parsed, Source};
use crate::native_record::{NativeRecord, NotJudged};
use crate::output;
use crate::platform::{host_cores, native_target};
use crate::record::{Labels, Planned};
use crate::report;
use crate::runner::{self, Work};
use crate::study::{load_parsed, Reproduced, Study};
use anyhow::{Context, Result};
use finegrain_apps::{Measures, Threads};
use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::time::Instant;

/// Runs study `S` from `src` on threads of this process into `out`.
pub fn reproduce<S: Study>(src: &Source, exp: Parsed, quick: bool, out: &Path) -> Result<Reproduced> {
    let study: S = load_parsed(src, exp, quick)?;
    let plan = study.native_plan()?;
    let header = &study.experiment().header;
    let mode = study.experiment().mode.table();
    // Every run's runtime configuration is checked before any runs.
    let targets = plan
        .runs
        .iter()
        .map(|p| native_target(&p.config).with_context(|| format!("run {} on platform native", p.labels.id())))
        .collect::<Result<Vec<_>>>()?;
    output::prepare_out(out)?;
    let started = Instant::now();
    let cores = host_cores();
    let jobs: Vec<(&Planned<S::Labels>, &Threads)> = plan.runs.iter().zip(&targets).collect();
    let work = Work {
        specs: &jobs[..],
        costs: plan.runs.iter().map(|p| p.workload.planned_seconds(&p.config)).collect(),
        names: plan.runs.iter().map(|p| p.labels.id()).collect(),
    };
    let all: Vec<usize> = (0..jobs.len()).collect();
    let label = format!("{} ({mode}, platform native)", header.name);
    let write = |&(p, target): &(&Planned<S::Labels>, &Threads)| -> Result<NativeRecord<S::Labels>> {
        let record = run_one(S::NAME, &header.name, p, target, cores)?;
        output::write_json(&out.join("runs").join(output::record_file(&record.id)), &record)?;
        Ok(record)
    };
    let records = runner::on_workers(&work, &all, &label, 1, |_| 0, u64::MAX, write)?;
    let records = records.into_iter().collect::<Option<Vec<_>>>().context("a native run went missing")?;
    let on_disk: HashSet<String> = records.iter().map(|r| output::record_file(&r.id)).collect();
    let refs: Vec<(&str, &NativeRecord<S::Labels>)> = records.iter().map(|r| (r.id.as_str(), r)).collect();
    output::write_outputs(out, Some(src), &refs, &on_disk, &csv(&records))?;
    let not_judged = study.not_judged_natively();
    let notes = notes(&records, cores, plan.left_out.as_deref());
    let text = report::render_native(&report::NativeParts {
        header,
        src,
        mode,
        not_judged: &not_judged,
        sections: study.native_sections(&records),
        notes: &notes,
        runs: records.len(),
        wall_seconds: records.iter().map(|r| r.wall_seconds).sum(),
        started,
    });
    let path = out.join("report.md");
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(Reproduced { report: Some(path), verdicts: not_judged.iter().map(NotJudged::line).collect(), notes })
}

/// Runs one planned run on its native target into its record.
fn run_one<L: Labels>(
    study: &str,
    experiment: &str,
    p: &Planned<L>,
    target: &Threads,
    cores: usize,
) -> Result<NativeRecord<L>> {
    let id = p.labels.id();
    let t0 = Instant::now();
    let out = p.workload.run(target).with_context(|| format!("run {id} on platform native"))?;
    Ok(NativeRecord {
        study: study.to_string(),
        experiment: experiment.to_string(),
        id,
        labels: p.labels.clone(),
        runtime: target.config.clone(),
        machine: target.machine.name.clone(),
        workload: p.workload.clone(),
        summary: out.summary,
        measures: out.measures.as_ref().map(Measures::to_json),
        host_cores: cores,
        wall_seconds: t0.elapsed().as_secs_f64(),
    })
}

/// What a reader of native results must know first, for the report and
/// the terminal: the platform and its clock, what it does not measure,
/// which runs were left out, and whether the host had a core per thread.
fn notes<L>(records: &[NativeRecord<L>], cores: usize, left_out: Option<&str>) -> Vec<String> {
    let mut notes = vec![format!(
        "platform native: each run's nodes were threads of this process on this host ({cores} cores), run one at a \
         time; times are wall-clock nanoseconds of this host, not cycles of the simulated machine, and differ from \
         one run to the next (native records cannot be rerun or reused)"
    )];
    let missing: BTreeSet<&str> = records.iter().flat_map(|r| r.summary.not_measured()).collect();
    if !missing.is_empty() {
        let missing: Vec<&str> = missing.into_iter().collect();
        notes.push(format!("not measured natively: {}", missing.join(", ")));
    }
    notes.extend(left_out.map(str::to_string));
    notes.extend(oversubscribed(records, cores));
    notes
}

/// The warning for runs with more threads than the host has cores: their
/// threads take turns on the cores, so a time says more about the
/// operating system's scheduler than about the run.
fn oversubscribed<L>(records: &[NativeRecord<L>], cores: usize) -> Option<String> {
    let over: Vec<u64> = records.iter().map(NativeRecord::threads).filter(|&t| t > cores as u64).collect();
    let most = over.iter().copied().max()?;
    Some(format!(
        "WARNING: {} of the {} runs have more threads (nodes x procs per node, up to {most}) than this host's {cores} \
         cores: their threads take turns on the cores, so their times mean little here and these runs check \
         correctness only (every run's answer was checked); times mean something on a machine with a core per thread",
        over.len(),
        records.len()
    ))
}

const CSV_HEADER: &str = "id,platform,nodes,procs_per_node,threads,policy,seed,time_ns,requests,messages,handlers,\
interrupts,measured_u,spilled,host_cores,wall_seconds,record";

/// `results.csv` of native runs: what every native run measures, a
/// measure the runtime does not take left empty.
fn csv<L>(records: &[NativeRecord<L>]) -> String {
    let mut s = format!("{CSV_HEADER}\n");
    for r in records {
        let (run, m) = (&r.runtime.run, &r.summary);
        s += &format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4},runs/{}\n",
            r.id,
            m.platform,
            run.topology.nodes,
            run.topology.procs_per_node,
            r.threads(),
            run.policy.label(),
            run.seed,
            m.time,
            m.requests,
            m.messages,
            m.handlers,
            m.interrupts,
            m.measured_u.map(|u| format!("{u:.4}")).unwrap_or_default(),
            m.spilled.map(|s| s.to_string()).unwrap_or_default(),
            r.host_cores,
            r.wall_seconds,
            output::record_file(&r.id)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{seal, Seal};
    use finegrain_apps::WorkloadSpec;
    use finegrain_core::{Clock, MachineConfig, Policy, RunSummary, Topology};
    use finegrain_sim::SimConfig;

    fn record(nodes: u32, procs_per_node: u32) -> NativeRecord<serde_json::Value> {
        let machine = MachineConfig::load("hpca97").unwrap();
        let config = SimConfig::new(machine, Topology { nodes, procs_per_node }, Policy::Floating, 3);
        let target = native_target(&config).unwrap();
        NativeRecord {
            study: "s".into(),
            experiment: "e".into(),
            id: "x".into(),
            labels: serde_json::json!({"u": 0.5}),
            runtime: target.config,
            machine: target.machine.name,
            workload: WorkloadSpec::Micro(finegrain_apps::micro::MicroConfig {
                protocol: finegrain_apps::micro::Protocol::Null,
                mean_compute_cycles: 10.0,
                requests_per_node: 4,
                single_requester: false,
            }),
            summary: RunSummary {
                platform: "native",
                clock: Clock::Nanoseconds,
                time: 5_000,
                requests: 8,
                messages: 16,
                handlers: 16,
                interrupts: 1,
                measured_u: Some(0.25),
                pp_occupancy: None,
                mean_round_trip: None,
                events: None,
                spilled: Some(0),
            },
            measures: None,
            host_cores: 2,
            wall_seconds: 0.01,
        }
    }

    #[test]
    fn a_native_record_names_its_platform_and_no_simulator_configuration() {
        let text = output::json_text(&record(2, 2)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["platform"], "native");
        assert!(v.get("config").is_none() && v.get("stats").is_none(), "{text}");
        assert_eq!(v["summary"]["time"], 5_000);
        assert!(v["summary"]["pp_occupancy"].is_null(), "not measured is absent, not zero: {text}");
        assert_eq!(seal(&v), Seal::Intact);
    }

    #[test]
    fn runs_with_more_threads_than_cores_are_flagged() {
        let records = [record(2, 1), record(2, 4)];
        let w = oversubscribed(&records, 2).expect("a 2 x 4 run on 2 cores is oversubscribed");
        assert!(w.starts_with("WARNING: 1 of the 2 runs have more threads (nodes x procs per node, up to 8)"), "{w}");
        assert!(w.contains("correctness only"), "{w}");
        assert!(oversubscribed(&records, 8).is_none());
        let n = notes(&records, 8, None);
        assert_eq!(n[1], "not measured natively: PP occupancy, mean round trip, simulated events");
        assert_eq!(n.len(), 2, "{n:?}");
    }
}
