//! What one run of the PDQ study is: its labels, the id they make, and the
//! check that they describe the run's configuration (`rerun`).

use super::grid::Sweep;
use crate::experiment::EffectOff;
use crate::record::{describe_value, Labels};
use finegrain_apps::serving::Point;
use finegrain_apps::WorkloadSpec;
use finegrain_core::{Discipline, ServingKind};
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLabels {
    /// Which part of the study the run belongs to.
    pub sweep: Sweep,
    pub kind: ServingKind,
    pub discipline: Discipline,
    pub protocol_procs: u32,
    pub keys: u64,
    /// `uniform` or `zipf:S`.
    pub skew: String,
    pub target_home_u: f64,
    pub sequential_fraction: f64,
    pub think_cycles: f64,
    pub seed: u64,
    /// Set in sensitivity runs: the effect switched off (the configuration
    /// holds the machine as run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_off: Option<EffectOff>,
}

impl RunLabels {
    pub fn point(&self) -> Point {
        Point { kind: self.kind, discipline: self.discipline, protocol_procs: self.protocol_procs }
    }
}

impl Labels for RunLabels {
    /// The home's measures, which the study computes from the statistics
    /// with the function that made them (`finegrain_apps` types them for
    /// writing only), so it reads none: whatever a record holds there,
    /// `rerun` compares with the run's.
    type Measures = serde::de::IgnoredAny;

    /// The point, the keys, and what the run's sweep varies.
    fn id(&self) -> String {
        let mut id = format!(
            "{}-{}-k{}-keys{}-{}",
            self.kind.label(),
            self.discipline.label(),
            self.protocol_procs,
            self.keys,
            self.skew.replace(':', "")
        );
        match self.sweep {
            Sweep::Main => {}
            Sweep::MultHomeU => id += &format!("-homeu{:.2}", self.target_home_u),
            Sweep::Sequential => id += &format!("-seq{:.3}", self.sequential_fraction),
            Sweep::Sensitivity => {
                id += &format!("-{}", self.effect_off.map_or_else(|| "no-effect".into(), EffectOff::run_label))
            }
            Sweep::Affinity => id += "-affinity",
            Sweep::Load => id += &format!("-think{:.0}", self.think_cycles),
        }
        id
    }

    fn describe(&self, c: &SimConfig, workload: &WorkloadSpec) -> Result<(), String> {
        let WorkloadSpec::FetchAdd(w) = workload else {
            return Err(format!("it is a {} run, which the PDQ study never makes", workload.description()));
        };
        let Some(point) = Point::of_config(c) else {
            return Err("its configuration is no point of the PDQ study (who serves the home's handlers)".into());
        };
        describe_value("seed", &self.seed, &c.run.seed)?;
        describe_value("kind", &self.kind, &point.kind)?;
        describe_value("discipline", &self.discipline, &point.discipline)?;
        describe_value("protocol_procs", &self.protocol_procs, &point.protocol_procs)?;
        describe_value("keys", &self.keys, &w.keys)?;
        describe_value("skew", &self.skew, &w.skew.label())?;
        describe_value("target_home_u", &self.target_home_u, &w.home_u)?;
        describe_value("sequential_fraction", &self.sequential_fraction, &w.sequential_fraction)?;
        describe_value("think_cycles", &self.think_cycles, &w.think_cycles)?;
        if let Some(e) = self.effect_off.filter(|e| e.is_on(&c.machine)) {
            return Err(format!("it names effect_off = {} but its configuration runs with {0} on", e.name()));
        }
        let affinity = c.machine.pdq.as_ref().is_some_and(|p| p.affinity_passes > 0);
        if self.sweep == Sweep::Affinity && !affinity {
            return Err("it names sweep = \"affinity\" but its configuration runs without key affinity \
                        (pdq.affinity_passes = 0)"
                .into());
        }
        Ok(())
    }
}
