//! What one run of the scheduling study is: its labels, the id they make,
//! and the check that they describe the run's configuration (`rerun`).

use super::grid::{ContextSwitch, Mechanism, Variant};
use crate::experiment::EffectOff;
use crate::record::{describe_value, Labels};
use finegrain_apps::micro::{self, Protocol};
use finegrain_apps::WorkloadSpec;
use finegrain_core::config::{Relinquish, RoleArbitration};
use finegrain_core::Policy;
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLabels {
    pub protocol: Protocol,
    pub policy: String,
    pub procs_per_node: u32,
    pub compute_procs: u32,
    /// The compute utilization the run's mean compute time was set for.
    pub target_u: f64,
    pub oint_cycles: u64,
    /// Which of the study's seeds (replicates) the run is.
    pub replicate: u32,
    pub seed: u64,
    /// Lmin measured with the study's base seed, from which `target_u`
    /// gave the mean compute time.
    pub lmin_cycles: f64,
    pub mean_compute_cycles: f64,
    /// Set in sensitivity runs: an effect of the model switched off
    /// (claim 5's reruns; the configuration holds the machine as run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_off: Option<EffectOff>,
    /// Another rule for giving the acting-PP role up (claim 2's reruns).
    #[serde(default, rename = "relinquish_rule", skip_serializing_if = "Option::is_none")]
    pub relinquish: Option<Relinquish>,
    /// Another arbitration of a released role (claim 4's reruns).
    #[serde(default, rename = "arbitration_rule", skip_serializing_if = "Option::is_none")]
    pub arbitration: Option<RoleArbitration>,
    /// Another share of Oint (percent) paid on return (claim 1's reruns).
    #[serde(default, rename = "interrupt_return_percent", skip_serializing_if = "Option::is_none")]
    pub return_percent: Option<u32>,
    /// A mechanism of the paper's Section 5 switched off (every claim's
    /// reruns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism_off: Option<Mechanism>,
    /// Another cost of the switches to and from the protocol thread
    /// (every claim's reruns: the context-switch map).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switch: Option<ContextSwitch>,
}

impl RunLabels {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        protocol: Protocol,
        policy: Policy,
        procs_per_node: u32,
        target_u: f64,
        oint_cycles: u64,
        replicate: u32,
        seed: u64,
        lmin_cycles: f64,
        variant: Variant,
    ) -> RunLabels {
        RunLabels {
            protocol,
            policy: policy.label(),
            procs_per_node,
            compute_procs: policy.compute_procs(procs_per_node),
            target_u,
            oint_cycles,
            replicate,
            seed,
            lmin_cycles,
            mean_compute_cycles: micro::mean_compute(target_u, lmin_cycles),
            effect_off: variant.effect_off,
            relinquish: variant.relinquish,
            arbitration: variant.arbitration,
            return_percent: variant.return_percent,
            mechanism_off: variant.mechanism_off,
            context_switch: variant.context_switch,
        }
    }

    /// What the run changes in the preset's machine.
    pub fn variant(&self) -> Variant {
        Variant {
            effect_off: self.effect_off,
            relinquish: self.relinquish,
            arbitration: self.arbitration,
            return_percent: self.return_percent,
            mechanism_off: self.mechanism_off,
            context_switch: self.context_switch,
        }
    }
}

impl Labels for RunLabels {
    /// A microbenchmark run has none.
    type Measures = crate::record::NoMeasures;

    /// `[variant-]protocol-policy-pP-uU-ointO-rR`, U to two decimals.
    fn id(&self) -> String {
        format!(
            "{}{}-{}-p{}-u{:.2}-oint{}-r{}",
            self.variant().id_prefix(),
            self.protocol,
            self.policy.replace(':', ""),
            self.procs_per_node,
            self.target_u,
            self.oint_cycles,
            self.replicate
        )
    }

    fn describe(&self, c: &SimConfig, workload: &WorkloadSpec) -> Result<(), String> {
        let WorkloadSpec::Micro(w) = workload else {
            return Err(format!("it is a {} run, which the scheduling study never makes", workload.description()));
        };
        if !(0.0..1.0).contains(&self.target_u) {
            return Err(format!(
                "target_u = {}: allowed a utilization from 0 up to but not including 1",
                self.target_u
            ));
        }
        if !(self.lmin_cycles > 0.0 && self.lmin_cycles.is_finite()) {
            return Err(format!("lmin_cycles = {}: allowed a positive number", self.lmin_cycles));
        }
        describe_value("seed", &self.seed, &c.run.seed)?;
        describe_value("protocol", &self.protocol, &w.protocol)?;
        describe_value("policy", &self.policy, &c.run.policy.label())?;
        describe_value("procs_per_node", &self.procs_per_node, &c.run.topology.procs_per_node)?;
        describe_value(
            "compute_procs",
            &self.compute_procs,
            &c.run.policy.compute_procs(c.run.topology.procs_per_node),
        )?;
        describe_value("oint_cycles", &self.oint_cycles, &c.machine.interrupt.overhead_cycles)?;
        describe_value("mean_compute_cycles", &self.mean_compute_cycles, &w.mean_compute_cycles)?;
        if let Some(e) = self.effect_off.filter(|e| e.is_on(&c.machine)) {
            return Err(format!("it names effect_off = {} but its configuration runs with {0} on", e.name()));
        }
        let protocol = &c.machine.protocol;
        if let Some(m) = self.mechanism_off.filter(|m| m.is_on(protocol)) {
            return Err(format!("it names mechanism_off = {m} but its configuration runs with {m} on"));
        }
        if let Some(named) = self.context_switch {
            let configured = ContextSwitch::of(protocol);
            if named != configured {
                return Err(format!(
                    "it names context_switch = {} (cycles/bytes) but its configuration runs with {}",
                    named.label(),
                    configured.label()
                ));
            }
        }
        named_rule("relinquish_rule", self.relinquish, c.run.relinquish, Relinquish::label)?;
        named_rule("arbitration_rule", self.arbitration, protocol.role_arbitration, RoleArbitration::label)?;
        if let Some(r) = self.return_percent {
            let paid = 100 - c.machine.interrupt.entry_percent;
            if r > 100 {
                return Err(format!("interrupt_return_percent = {r}: allowed a percentage 0..=100"));
            }
            if r != paid {
                return Err(format!(
                    "it names interrupt_return_percent = {r} but its configuration pays {paid}% of Oint on return"
                ));
            }
        }
        let implied = micro::mean_compute(self.target_u, self.lmin_cycles);
        if implied != w.mean_compute_cycles {
            return Err(format!(
                "it names target_u = {} and lmin_cycles = {}, which give a mean compute time of {implied} cycles, \
                 but its workload computes {} on average",
                self.target_u, self.lmin_cycles, w.mean_compute_cycles
            ));
        }
        Ok(())
    }
}

/// A rule a sensitivity run names (if any) must be the one its
/// configuration runs under.
fn named_rule<T: PartialEq + Copy>(
    name: &str,
    named: Option<T>,
    configured: T,
    label: fn(T) -> &'static str,
) -> Result<(), String> {
    match named {
        Some(r) if r != configured => {
            Err(format!("it names {name} = {} but its configuration runs under {}", label(r), label(configured)))
        }
        _ => Ok(()),
    }
}
