//! The scheduling study on threads of this process (`reproduce
//! scheduling-micro --platform native`): which planned runs mean something
//! there, why no claim is judged on them, and the table of their measured
//! times.

use super::claims::CLAIMS;
use super::grid::Variant;
use super::labels::RunLabels;
use super::operating_points::PAPER_OINT;
use crate::native_record::{NativePlan, NativeRecord, NotJudged};
use crate::record::Planned;
use crate::report::Section;
use crate::table::markdown_table;
use anyhow::{bail, Result};
use finegrain_apps::micro::Protocol;
use std::collections::BTreeMap;

/// Why each claim is not judged on native runs, in claim order: each
/// compares settings of the simulated machine real threads do not have
/// (its interrupt overhead above all, which natively is this host's signal
/// delivery), or measures the runtime does not take.
const WHY_NOT: [&str; 5] = [
    "it compares Single at two interrupt overheads (Oint 200 cycles and the grid's highest); natively the interrupt \
     cost is this host's signal delivery, which no run can set",
    "it compares Floating with Fixed at a low and a high interrupt overhead, which a native run cannot set, and \
     counts migration misses, which the native runtime does not measure",
    "it judges Fixed where the interrupt overhead is ten times Lmin or more, which a native run cannot set, and \
     counts data-placement misses, which the native runtime does not measure",
    "it reads PP occupancy at the most processors, which the native runtime does not measure (a node's handler \
     time is scattered over threads that also compute and wait), at Oint 200 cycles, which a native run cannot set",
    "its cost-performance is stated at Oint 200 cycles on the paper's machine and at U set from that machine's \
     Lmin; natively the interrupt cost and the round trip are this host's, so its times would judge another \
     experiment than the claim's",
];

/// The study's own runs at Oint 200 cycles: the other Oints and every
/// sensitivity variant change only the simulated machine, so natively each
/// would repeat one of these runs.
pub(super) fn plan(planned: &[Planned<RunLabels>]) -> Result<NativePlan<RunLabels>> {
    let runs: Vec<Planned<RunLabels>> = planned
        .iter()
        .filter(|p| p.labels.variant() == Variant::BASELINE && p.labels.oint_cycles == PAPER_OINT)
        .cloned()
        .collect();
    if runs.is_empty() {
        bail!("invalid experiment for --platform native: it plans no run of the study's own at Oint {PAPER_OINT}");
    }
    let left_out = (runs.len() < planned.len()).then(|| {
        format!(
            "{} of the {} planned runs ran: the study's own runs at Oint {PAPER_OINT} cycles; the other Oints and \
             the sensitivity runs change only the simulated machine (its interrupt overhead, cache effects, context \
             switches, role rules), which real threads do not model, so natively each would repeat one of these; \
             each compute thread computes the planned mean time (U / (1 - U) x the simulated Lmin) in cycles of 1 \
             ns",
            runs.len(),
            planned.len()
        )
    });
    Ok(NativePlan { runs, left_out })
}

pub(super) fn not_judged() -> Vec<NotJudged> {
    CLAIMS.iter().zip(WHY_NOT).map(|(&spec, why)| NotJudged { spec, why }).collect()
}

/// The measured times, per protocol: each policy and processor count
/// (rows) at each target U (columns), mean over seeds, and the same
/// against Fixed's on as many processors (Single's against Fixed on two).
pub(super) fn sections(runs: &[NativeRecord<RunLabels>]) -> Vec<Section> {
    let mut time: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
    for r in runs {
        time.entry(key(&r.labels)).or_default().push(r.summary.time as f64);
    }
    let mean: BTreeMap<Key, f64> = time.into_iter().map(|(k, t)| (k, t.iter().sum::<f64>() / t.len() as f64)).collect();
    let mut protocols: Vec<Protocol> = mean.keys().map(|k| k.0).collect();
    protocols.dedup();
    protocols
        .into_iter()
        .map(|p| Section { heading: format!("Measured times: {p} (platform native)"), body: tables(p, &mean) })
        .collect()
}

/// (protocol, processors per node, policy, U in millionths).
type Key = (Protocol, u32, String, u64);

fn key(l: &RunLabels) -> Key {
    (l.protocol, l.procs_per_node, l.policy.clone(), (l.target_u * 1e6).round() as u64)
}

fn tables(p: Protocol, mean: &BTreeMap<Key, f64>) -> String {
    let mut us: Vec<u64> = mean.keys().filter(|k| k.0 == p).map(|k| k.3).collect();
    us.sort_unstable();
    us.dedup();
    let mut rows: Vec<(u32, String)> = mean.keys().filter(|k| k.0 == p).map(|k| (k.1, k.2.clone())).collect();
    rows.dedup();
    let header: Vec<String> =
        std::iter::once("policy".to_string()).chain(us.iter().map(|&u| format!("U={}", u as f64 / 1e6))).collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let cell = |ppn: u32, policy: &str, u: u64| mean.get(&(p, ppn, policy.to_string(), u)).copied();
    let times: Vec<Vec<String>> = rows
        .iter()
        .map(|(ppn, policy)| {
            let cells = us.iter().map(|&u| cell(*ppn, policy, u).map_or("-".into(), |t| format!("{:.0}", t / 1e3)));
            std::iter::once(format!("{policy}-{ppn}")).chain(cells).collect()
        })
        .collect();
    let ratios: Vec<Vec<String>> = rows
        .iter()
        .map(|(ppn, policy)| {
            let cells = us.iter().map(|&u| match (cell(*ppn, policy, u), cell((*ppn).max(2), "fixed", u)) {
                (Some(t), Some(f)) if f > 0.0 => format!("{:.2}", t / f),
                _ => "-".into(),
            });
            std::iter::once(format!("{policy}-{ppn}")).chain(cells).collect()
        })
        .collect();
    format!(
        "Run time in microseconds of this host's wall clock (mean over seeds):\n\n{}\nRun time over Fixed's on as \
         many processors (Single: over Fixed on two), from the same measured times; reported, not judged:\n\n{}",
        markdown_table(&header, &times),
        markdown_table(&header, &ratios)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::native_target;
    use crate::record::Labels as _;
    use crate::study::{load, Study};
    use finegrain_core::{Clock, RunSummary};

    fn quick() -> super::super::SchedulingMicro {
        load(&crate::studies::source("scheduling-micro").unwrap(), true).unwrap()
    }

    #[test]
    fn natively_only_the_studys_own_runs_at_oint_200_go() {
        let study = quick();
        let all = study.plan().unwrap();
        let native = study.native_plan().unwrap();
        assert!(!native.runs.is_empty() && native.runs.len() < all.len());
        for p in &native.runs {
            assert_eq!(
                (p.labels.variant(), p.labels.oint_cycles),
                (Variant::BASELINE, PAPER_OINT),
                "{}",
                p.labels.id()
            );
            native_target(&p.config).unwrap();
        }
        let baseline_200 =
            all.iter().filter(|p| p.labels.variant() == Variant::BASELINE && p.labels.oint_cycles == PAPER_OINT);
        assert_eq!(baseline_200.count(), native.runs.len());
        let note = native.left_out.unwrap();
        assert!(note.starts_with(&format!("{} of the {} planned runs ran", native.runs.len(), all.len())), "{note}");
        assert_eq!(study.not_judged_natively().len(), CLAIMS.len());
    }

    /// Made-up times (2 us for every Fixed run, 1 us for the rest): the
    /// tables average them over seeds and divide by Fixed's.
    #[test]
    fn the_tables_give_each_policys_time_and_its_ratio_to_fixeds() {
        let runs: Vec<NativeRecord<RunLabels>> = quick()
            .native_plan()
            .unwrap()
            .runs
            .into_iter()
            .map(|p| {
                let target = native_target(&p.config).unwrap();
                let time = if p.labels.policy == "fixed" { 2_000 } else { 1_000 };
                NativeRecord {
                    study: "scheduling-micro".into(),
                    experiment: "scheduling-micro".into(),
                    id: p.labels.id(),
                    labels: p.labels,
                    runtime: target.config,
                    machine: target.machine.name,
                    workload: p.workload,
                    summary: RunSummary {
                        platform: "native",
                        clock: Clock::Nanoseconds,
                        time,
                        requests: 1,
                        messages: 2,
                        handlers: 2,
                        interrupts: 0,
                        measured_u: Some(0.5),
                        pp_occupancy: None,
                        mean_round_trip: None,
                        events: None,
                        spilled: Some(0),
                    },
                    measures: None,
                    host_cores: 2,
                    wall_seconds: 0.0,
                }
            })
            .collect();
        let s = sections(&runs);
        assert_eq!(s.len(), 2, "one section per protocol");
        assert_eq!(s[0].heading, "Measured times: null (platform native)");
        let body = &s[0].body;
        assert!(body.contains("| single-1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 |"), "{body}");
        assert!(body.contains("| fixed-8 | 2 | 2 | 2 | 2 | 2 | 2 | 2 |"), "{body}");
        assert!(body.contains("| floating-8 | 0.50 | 0.50 | 0.50 | 0.50 | 0.50 | 0.50 | 0.50 |"), "{body}");
        assert!(body.contains("| single-1 | 0.50 |"), "Single against Fixed on two: {body}");
    }
}
