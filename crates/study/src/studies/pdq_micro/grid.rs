//! The experiment file of the PDQ study: its grids and their checks, and
//! the sweeps its runs belong to.

use crate::experiment::{check_distinct, check_distinct_decimals, shown, EffectOff, MAX_CYCLES, MAX_REQUESTS};
use anyhow::{bail, Result};
use finegrain_core::{Discipline, ServingKind};
use serde::{Deserialize, Serialize};

/// The study's name: the experiment file's `study`, and every record's.
pub const NAME: &str = "pdq-micro";

/// The study's experiment file: the common header, the top-level fields
/// below, and its grids.
pub type Experiment = crate::experiment::Experiment<Own, Grid>;

/// The fetch&add point every grid shares.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Own {
    /// Nodes besides the home whose threads send requests.
    pub requester_nodes: u32,
    /// Compute processors per node (threads).
    pub compute_procs: u32,
    pub handler_cycles: u64,
    pub home_u: f64,
    pub home_burst_cycles: f64,
    pub zipf_exponent: f64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    pub protocol_procs: Vec<u32>,
    pub keys: Vec<u64>,
    pub kinds: Vec<ServingKind>,
    pub disciplines: Vec<Discipline>,
    pub requests_per_thread: u64,
    pub mult_home_u: Vec<f64>,
    pub mult_sweep_procs: u32,
    /// Requester think time in the Mult sweep: a light load, so the home's
    /// processors are sometimes all computing.
    pub mult_think_cycles: f64,
    /// Requester think time (mean cycles between a reply and the next
    /// request) of the fixed-load sweep: SMP and embedded PDQ with one
    /// think time (closed-loop requesters, so the offered load is only
    /// roughly the same), compared by latency and queueing delay.
    pub load_think_cycles: f64,
    pub sequential_fractions: Vec<f64>,
    /// Effects switched off, one at a time, in extra runs of hypothesis H2's SMP
    /// and embedded scaling points; the report gives the gains without each.
    #[serde(default)]
    pub sensitivity: Vec<EffectOff>,
    /// Run every PDQ point of the dedicated kinds again with the dispatch
    /// device's key affinity on, passing an entry over at most this many
    /// times (an extension of the paper's device; 0: no such runs); the
    /// report checks claim 1 and hypotheses H1 and H2 (saturation) on them
    /// too.
    #[serde(default)]
    pub affinity_passes: u32,
}

impl Grid {
    /// The claims need 1, 2 and 4 protocol processors, one key and more keys
    /// than 4 processors, embedded and smp processors, every discipline and
    /// at least two home utilizations in the Mult sweep; no list repeats a
    /// value (runs would share an id).
    pub(super) fn validate(&self, table: &str, compute_procs: u32) -> Result<()> {
        let field = |f: &str| format!("{table}.{f}");
        if let Some(k) = self.protocol_procs.iter().find(|&&k| k == 0 || k > compute_procs) {
            bail!(
                "invalid {} = {k}: allowed 1..={compute_procs} (mult serves on at most the node's compute processors)",
                field("protocol_procs")
            );
        }
        check_distinct(&field("protocol_procs"), &self.protocol_procs, u32::to_string)?;
        for need in [1, 2, 4] {
            if !self.protocol_procs.contains(&need) {
                bail!(
                    "invalid {} = {:?}: must contain 1, 2 and 4 (the claims compare 1 and 4; hypothesis H1 looks at \
                     2, Section 1's case), values 1..={compute_procs}",
                    field("protocol_procs"),
                    self.protocol_procs
                );
            }
        }
        check_distinct(&field("keys"), &self.keys, u64::to_string)?;
        if !self.keys.contains(&1) || !self.keys.iter().any(|&keys| keys > 4) {
            bail!(
                "invalid {} = {:?}: must contain 1 and a count above 4 (claim 2 uses one key, hypothesis H1 more keys than \
                 4 processors)",
                field("keys"),
                self.keys
            );
        }
        check_distinct(&field("kinds"), &self.kinds, |k| k.label().to_string())?;
        if !(self.kinds.contains(&ServingKind::Embedded) && self.kinds.contains(&ServingKind::Smp)) {
            bail!(
                "invalid {} = [{}]: must contain embedded and smp (claim 1 and hypotheses H1 and H2 measure them), mult is optional",
                field("kinds"),
                self.kinds.iter().map(|k| k.label()).collect::<Vec<_>>().join(", ")
            );
        }
        check_distinct(&field("disciplines"), &self.disciplines, |d| d.label().to_string())?;
        let all = [Discipline::Serial, Discipline::Pdq, Discipline::SpinLock, Discipline::Static];
        if !all.iter().all(|d| self.disciplines.contains(d)) {
            bail!(
                "invalid {} = [{}]: must contain serial, pdq, spin-lock and static (the claims compare PDQ with each)",
                field("disciplines"),
                self.disciplines.iter().map(|d| d.label()).collect::<Vec<_>>().join(", ")
            );
        }
        if self.requests_per_thread == 0 || self.requests_per_thread > MAX_REQUESTS {
            bail!(
                "invalid {} = {}: allowed 1..={MAX_REQUESTS}",
                field("requests_per_thread"),
                self.requests_per_thread
            );
        }
        // -0 would name its runs "-0.00".
        if let Some(u) = self.mult_home_u.iter().find(|u| !(0.0..=1.0).contains(*u) || u.is_sign_negative()) {
            bail!("invalid {} = {}: allowed 0..=1", field("mult_home_u"), shown(*u));
        }
        check_distinct_decimals(&field("mult_home_u"), &self.mult_home_u, 2)?;
        if self.mult_home_u.len() < 2 {
            bail!(
                "invalid {} = {:?}: allowed at least 2 values in 0..=1 (hypothesis H2 follows Mult's interrupts as the \
                 home's utilization falls)",
                field("mult_home_u"),
                self.mult_home_u
            );
        }
        if !(self.mult_think_cycles.is_finite() && (0.0..=MAX_CYCLES as f64).contains(&self.mult_think_cycles)) {
            bail!(
                "invalid {} = {}: allowed a number in 0..={MAX_CYCLES} cycles",
                field("mult_think_cycles"),
                shown(self.mult_think_cycles)
            );
        }
        if !(self.load_think_cycles.is_finite()
            && self.load_think_cycles > 0.0
            && self.load_think_cycles <= MAX_CYCLES as f64)
        {
            bail!(
                "invalid {} = {}: allowed a positive number up to {MAX_CYCLES} cycles (a fixed load needs requesters \
                 that think between requests)",
                field("load_think_cycles"),
                shown(self.load_think_cycles)
            );
        }
        if self.mult_sweep_procs == 0 || self.mult_sweep_procs > compute_procs {
            bail!("invalid {} = {}: allowed 1..={compute_procs}", field("mult_sweep_procs"), self.mult_sweep_procs);
        }
        if let Some(f) = self.sequential_fractions.iter().find(|f| !(0.0..=1.0).contains(*f) || f.is_sign_negative()) {
            bail!("invalid {} = {}: allowed 0..=1", field("sequential_fractions"), shown(*f));
        }
        check_distinct_decimals(&field("sequential_fractions"), &self.sequential_fractions, 3)?;
        check_distinct(&field("sensitivity"), &self.sensitivity, EffectOff::to_string)?;
        Ok(())
    }

    pub(super) fn most_keys(&self) -> u64 {
        *self.keys.iter().max().expect("validated")
    }
}

/// Requesters besides the home: the machine's nodes but one.
pub fn check_requester_nodes(n: u32) -> Result<()> {
    let most = finegrain_core::config::MAX_NODES - 1;
    if !(1..=most).contains(&n) {
        bail!("invalid requester_nodes = {n}: allowed 1..={most}");
    }
    Ok(())
}

/// Which part of the study a run belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sweep {
    /// The grid of kinds, disciplines, processors, keys and skews.
    Main,
    /// Hurricane-1 Mult at several home utilizations.
    MultHomeU,
    /// PDQ with a share of sequential requests.
    Sequential,
    /// Hypothesis H2's scaling points with one effect of the model off.
    Sensitivity,
    /// The dedicated kinds' PDQ points with the device's key affinity on.
    Affinity,
    /// SMP and embedded PDQ at a fixed think time (requesters think
    /// between requests).
    Load,
}

impl Sweep {
    /// The grid field whose values make this sweep's runs (the main grid's
    /// runs take the experiment's own workload fields).
    pub(crate) fn field(self) -> Option<&'static str> {
        match self {
            Sweep::Main | Sweep::Sensitivity | Sweep::Affinity => None,
            Sweep::MultHomeU => Some("mult_home_u"),
            Sweep::Sequential => Some("sequential_fractions"),
            Sweep::Load => Some("load_think_cycles"),
        }
    }
}
