//! The study's finished runs: each with its time against Fixed's and its
//! cost-performance, found among the other runs, and its row of
//! `results.csv`.

use super::grid::Variant;
use super::labels::RunLabels;
use crate::record::RunRecord;
use crate::study::{Measured, StudyRun};
use anyhow::Result;
use finegrain_apps::micro::Protocol;
use std::collections::BTreeMap;

/// A finished run as the study views it: its record, with its time
/// against Fixed's and its cost-performance.
pub struct Run {
    pub record: RunRecord<RunLabels>,
    pub derived: Derived,
}

impl Run {
    pub fn l(&self) -> &RunLabels {
        &self.record.labels
    }
}

#[derive(Clone, Debug, Default)]
pub struct Derived {
    /// Run time / run time of Fixed with the same processors per node (for
    /// Single: Fixed on two processors, i.e. a dedicated PP added).
    pub time_norm_fixed: Option<f64>,
    /// costup(P) x run time / run time of Single.
    pub cost_performance: Option<f64>,
}

/// costup(P) = 1 + 0.3 (P - 1): each processor costs 30% of a uniprocessor node.
pub fn costup(procs: u32) -> f64 {
    1.0 + 0.3 * (procs as f64 - 1.0)
}

/// Key of the configuration a run is compared against.
type Key = (Variant, Protocol, u64, u64, u32, String, u32);

fn key(l: &RunLabels, policy: &str, ppn: u32) -> Key {
    let u = (l.target_u * 1e6).round() as u64;
    (l.variant().seen_by(policy), l.protocol, l.oint_cycles, u, l.replicate, policy.to_string(), ppn)
}

impl StudyRun<RunLabels> for Run {
    const CSV_HEADER: &'static str = CSV_HEADER;

    /// The run alone: what it is compared with is found by [`derive`].
    fn of(run: Measured<RunLabels>) -> Result<Run> {
        Ok(Run { record: run.record, derived: Derived::default() })
    }

    fn record(&self) -> &RunRecord<RunLabels> {
        &self.record
    }

    fn csv_row(&self) -> String {
        csv_row(self)
    }
}

/// Each run's time against Fixed's and its cost-performance, found among
/// the other runs.
pub(super) fn derive(runs: &mut [Run]) {
    let time: BTreeMap<Key, u64> = runs
        .iter()
        .map(|r| &r.record)
        .map(|r| (key(&r.labels, &r.labels.policy, r.labels.procs_per_node), r.stats.sim_cycles))
        .collect();
    let derived = |r: &RunRecord<RunLabels>| {
        let l = &r.labels;
        let fixed = time.get(&key(l, "fixed", l.procs_per_node.max(2)));
        let single = time.get(&key(l, "single", 1));
        let t = r.stats.sim_cycles as f64;
        Derived {
            time_norm_fixed: fixed.map(|&f| t / f as f64),
            cost_performance: single.map(|&s| costup(l.procs_per_node) * t / s as f64),
        }
    };
    for run in runs.iter_mut() {
        run.derived = derived(&run.record);
    }
}

const CSV_HEADER: &str =
    "protocol,policy,procs_per_node,compute_procs,target_u,measured_u,oint_cycles,seed,sim_cycles,\
time_norm_fixed,cost_performance,requests,interrupts,pp_occupancy,events,wall_seconds,replicate,lmin_cycles,\
mean_compute_cycles,messages,mean_request_latency_cycles,migration_misses,placement_misses,interference_misses,\
role_cycles,messages_per_wall_second,record,effect_off,relinquish,arbitration,interrupt_return_percent,mechanism_off,\
context_switch";

fn csv_row(run: &Run) -> String {
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_default();
    let (r, st, perf) = (run.l(), &run.record.stats, &run.record.wall);
    let variant = r.variant();
    format!(
            "{},{},{},{},{},{:.4},{},{},{},{},{},{},{},{:.4},{},{:.4},{},{:.1},{:.1},{},{:.1},{},{},{},{},{:.0},runs/{}.json,{},{},{},{},{},{}",
            r.protocol,
            r.policy,
            r.procs_per_node,
            r.compute_procs,
            r.target_u,
            st.measured_u,
            r.oint_cycles,
            r.seed,
            st.sim_cycles,
            opt(run.derived.time_norm_fixed),
            opt(run.derived.cost_performance),
            st.requests,
            st.interrupts,
            st.pp_occupancy,
            st.events,
            perf.wall_seconds,
            r.replicate,
            r.lmin_cycles,
            r.mean_compute_cycles,
            st.messages,
            st.request_latency.mean_cycles,
            st.misses.migration,
            st.misses.placement,
            st.misses.interference,
            st.cycles.role,
            perf.messages_per_wall_second,
            run.record.id,
            variant.effect_off.map(|e| e.to_string()).unwrap_or_default(),
            variant.relinquish.map(|r| r.label()).unwrap_or_default(),
            variant.arbitration.map(|a| a.label()).unwrap_or_default(),
            variant.return_percent.map(|p| p.to_string()).unwrap_or_default(),
            variant.mechanism_off.map(|m| m.to_string()).unwrap_or_default(),
            variant.context_switch.map(|c| c.label()).unwrap_or_default()
    )
}
