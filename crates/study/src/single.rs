//! The record of one `finegrain run` on the simulated machine: its labels
//! name the workload and the point it ran (so a record read on its own
//! says what it is), and, for a microbenchmark given a target U, the Lmin
//! that turned U into its mean compute time.

use crate::record::{describe_value, Labels, Remeasured, RunRecord, Wall};
use finegrain_apps::serving::Point;
use finegrain_apps::{micro, Sim, WorkloadSpec};
use finegrain_sim::{RunStats, SimConfig};
use serde::{Deserialize, Serialize};

/// The `study` of a single run's record.
pub const KIND: &str = "run";

/// What a single run is.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLabels {
    pub workload: String,
    pub policy: String,
    pub nodes: u32,
    pub procs_per_node: u32,
    pub seed: u64,
    /// Who served the home's handlers (fetch&add): embedded, smp or mult;
    /// or which Split-C program ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The compute utilization asked for, which with Lmin gave the mean
    /// compute time (microbenchmark with `--u`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_u: Option<f64>,
    /// Lmin measured on the run's machine with its seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lmin_cycles: Option<f64>,
}

impl RunLabels {
    /// The labels of a run of `workload` on `config`, with the target U
    /// and Lmin that set its compute time, if they did.
    pub fn of(config: &SimConfig, workload: &WorkloadSpec, target_u: Option<f64>, lmin: Option<f64>) -> RunLabels {
        RunLabels {
            workload: workload.name().to_string(),
            policy: config.run.policy.label(),
            nodes: config.run.topology.nodes,
            procs_per_node: config.run.topology.procs_per_node,
            seed: config.run.seed,
            kind: match workload {
                WorkloadSpec::FetchAdd(_) => Point::of_config(config).map(|p| p.kind.label().to_string()),
                WorkloadSpec::Micro(_) => None,
                WorkloadSpec::Splitc(p) => Some(p.label()),
                WorkloadSpec::Dsm(d) => Some(d.program.label().to_string()),
            },
            target_u,
            lmin_cycles: lmin,
        }
    }
}

impl Labels for RunLabels {
    /// Any workload's, as recorded (a run of any workload may be recorded).
    type Measures = serde_json::Value;

    fn id(&self) -> String {
        format!(
            "{}-{}-n{}-p{}-s{}",
            self.workload,
            self.policy.replace(':', ""),
            self.nodes,
            self.procs_per_node,
            self.seed
        )
    }

    fn describe(&self, config: &SimConfig, workload: &WorkloadSpec) -> Result<(), String> {
        let actual = RunLabels::of(config, workload, self.target_u, self.lmin_cycles);
        describe_value("workload", &self.workload, &actual.workload)?;
        describe_value("policy", &self.policy, &actual.policy)?;
        describe_value("nodes", &self.nodes, &actual.nodes)?;
        describe_value("procs_per_node", &self.procs_per_node, &actual.procs_per_node)?;
        describe_value("seed", &self.seed, &actual.seed)?;
        describe_value("kind", &self.kind, &actual.kind)?;
        if let Some(l) = self.lmin_cycles.filter(|l| !(*l > 0.0 && l.is_finite())) {
            return Err(format!("lmin_cycles = {l}: allowed a positive number"));
        }
        if let Some(u) = self.target_u.filter(|u| !(*u > 0.0 && *u < 1.0)) {
            return Err(format!("target_u = {u}: allowed a utilization strictly between 0 and 1"));
        }
        match (workload, self.target_u, self.lmin_cycles) {
            (_, None, _) => Ok(()),
            (WorkloadSpec::Micro(w), Some(u), Some(lmin)) => {
                let implied = micro::mean_compute(u, lmin);
                if implied == w.mean_compute_cycles {
                    Ok(())
                } else {
                    Err(format!(
                        "it names target_u = {u} and lmin_cycles = {lmin}, which give a mean compute time of \
                         {implied} cycles, but its workload computes {} on average",
                        w.mean_compute_cycles
                    ))
                }
            }
            (WorkloadSpec::Micro(_), Some(u), None) => Err(format!(
                "it names target_u = {u} but no lmin_cycles, which turned that U into its mean compute time"
            )),
            (WorkloadSpec::FetchAdd(_) | WorkloadSpec::Splitc(_) | WorkloadSpec::Dsm(_), Some(u), _) => {
                Err(format!("it names target_u = {u}, which only a microbenchmark run has"))
            }
        }
    }

    /// Lmin again, from the machine and seed the run measured it with.
    fn remeasure(&self, config: &SimConfig, workload: &WorkloadSpec) -> anyhow::Result<Vec<Remeasured>> {
        let (WorkloadSpec::Micro(w), Some(recorded)) = (workload, self.lmin_cycles) else { return Ok(Vec::new()) };
        let now = micro::measure_lmin(&Sim(config.clone()), w.protocol)?;
        Ok(vec![Remeasured { name: "lmin_cycles", recorded, now }])
    }
}

/// The record of a single simulated run.
pub fn record(
    config: &SimConfig,
    workload: &WorkloadSpec,
    labels: RunLabels,
    stats: RunStats,
    measures: Option<serde_json::Value>,
    wall: Wall,
) -> RunRecord<RunLabels> {
    RunRecord {
        study: KIND.to_string(),
        experiment: None,
        id: labels.id(),
        labels,
        config: config.clone(),
        workload: workload.clone(),
        stats,
        measures,
        wall,
    }
}
