//! The experiment file of the scheduling study: its grids and their
//! checks, and the variants its sensitivity runs make of the preset.

use super::operating_points::{COMM_BOUND_U, PAPER_OINT, PAPER_US};
use crate::experiment::{check_distinct, check_distinct_decimals, shown, EffectOff, MAX_CYCLES, MAX_REQUESTS};
use anyhow::{bail, Result};
use finegrain_apps::micro::Protocol;
use finegrain_core::config::{InterruptParams, ProtocolParams, Relinquish, RoleArbitration};
use finegrain_core::MachineConfig;
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The study's name: the experiment file's `study`, and every record's.
pub const NAME: &str = "scheduling-micro";

/// The study's experiment file: the common header, the top-level fields
/// below, and its grids.
pub type Experiment = crate::experiment::Experiment<Own, Grid>;

/// The machine's size every grid shares.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Own {
    pub nodes: u32,
}

/// The points of one sweep.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    pub protocols: Vec<Protocol>,
    pub procs_per_node: Vec<u32>,
    pub target_u: Vec<f64>,
    pub oint_cycles: Vec<u64>,
    pub requests_per_node: u64,
    pub cost_performance_u: Vec<f64>,
    pub replicates: u32,
    /// Effects switched off, one at a time, in extra runs of claim 5's
    /// points (cost-performance at Oint 200); the report gives the claim's
    /// verdict without each.
    #[serde(default)]
    pub sensitivity: Vec<EffectOff>,
    /// Relinquish rules other than the preset's, each in extra runs of
    /// claim 2's points (null handler, two processors, Oint 200 and the
    /// highest Oint); the report gives the claim's verdict under each.
    #[serde(default)]
    pub relinquish_sensitivity: Vec<Relinquish>,
    /// Role arbitrations other than the preset's, each in extra runs of
    /// claim 4's points (Floating at every processor count from 2, the
    /// claim's U of 0.3 and 0.7, Oint 200); the report gives the claim's
    /// verdict under each.
    #[serde(default)]
    pub arbitration_sensitivity: Vec<RoleArbitration>,
    /// Shares of Oint (percent) paid on the interrupt's return, after the
    /// role is given up, other than the preset's, each in extra runs of
    /// claim 1's points (Single, null handler, every U and Oint); the
    /// report gives the claim's verdict under each.
    #[serde(default)]
    pub return_sensitivity: Vec<u32>,
    /// Mechanisms of the paper's Section 5 the preset has on, each switched
    /// off in a rerun of every point of the grid with the same compute
    /// times; the report judges every claim again without each.
    #[serde(default)]
    pub mechanism_sensitivity: Vec<Mechanism>,
    /// Costs of the two context switches to and from the protocol thread
    /// other than the preset's, each in a rerun of every point of the grid
    /// with the same compute times; the report judges every claim again at
    /// each and draws the map of where each holds as the cost moves (the
    /// paper gives no cost, Section 5).
    #[serde(default)]
    pub switch_sensitivity: Vec<ContextSwitch>,
}

impl Grid {
    /// The claims need null and fetch, Single (1), the two-processor node
    /// (2) and two more counts, U values on both sides of claim 2's
    /// thresholds, a low and a high Oint, and cost-performance points that
    /// were simulated; no list repeats a value (runs would share an id);
    /// and the points the claims are judged at.
    pub(super) fn validate(&self, table: &str) -> Result<()> {
        let field = |f: &str| format!("{table}.{f}");
        check_distinct(&field("protocols"), &self.protocols, Protocol::to_string)?;
        if !(self.protocols.contains(&Protocol::Null) && self.protocols.contains(&Protocol::Fetch)) {
            bail!(
                "invalid {} = [{}]: must contain null and fetch (the claims compare them)",
                field("protocols"),
                self.protocols.iter().map(Protocol::to_string).collect::<Vec<_>>().join(", ")
            );
        }
        if let Some(p) = self.procs_per_node.iter().find(|&&p| p == 0 || p > 64) {
            bail!("invalid {} = {p}: allowed 1..=64", field("procs_per_node"));
        }
        check_distinct(&field("procs_per_node"), &self.procs_per_node, u32::to_string)?;
        let larger = self.procs_per_node.iter().filter(|&&p| p > 2).count();
        if !self.procs_per_node.contains(&1) || !self.procs_per_node.contains(&2) || larger < 2 {
            bail!(
                "invalid {} = {:?}: must contain 1 (Single), 2 (the Fixed baseline) and at least two larger counts \
                 (claim 4 follows Floating/Fixed as processors grow), values 1..=64",
                field("procs_per_node"),
                self.procs_per_node
            );
        }
        if let Some(u) = self.target_u.iter().find(|u| !(**u > 0.0 && **u < 1.0)) {
            bail!("invalid {} = {}: allowed values strictly between 0 and 1", field("target_u"), shown(*u));
        }
        check_distinct_decimals(&field("target_u"), &self.target_u, 2)?;
        if self.target_u.len() < 3
            || !self.target_u.iter().any(|&u| u >= 0.5)
            || !self.target_u.iter().any(|&u| u <= 0.7)
        {
            bail!(
                "invalid {} = {:?}: allowed at least 3 values, one >= 0.5 and one <= 0.7 (claim 2 looks at both)",
                field("target_u"),
                self.target_u
            );
        }
        if let Some(o) = self.oint_cycles.iter().find(|&&o| o > MAX_CYCLES) {
            bail!("invalid {} = {o}: allowed 0..={MAX_CYCLES} cycles", field("oint_cycles"));
        }
        check_distinct(&field("oint_cycles"), &self.oint_cycles, u64::to_string)?;
        if self.oint_cycles.len() < 2 {
            bail!(
                "invalid {} = {:?}: allowed at least two values (a low and a high interrupt overhead)",
                field("oint_cycles"),
                self.oint_cycles
            );
        }
        if self.requests_per_node == 0 || self.requests_per_node > MAX_REQUESTS {
            bail!("invalid {} = {}: allowed 1..={MAX_REQUESTS}", field("requests_per_node"), self.requests_per_node);
        }
        if let Some(u) = self.cost_performance_u.iter().find(|u| !self.target_u.iter().any(|t| (*t - **u).abs() < 1e-9))
        {
            bail!("invalid {} = {}: allowed only values listed in target_u", field("cost_performance_u"), shown(*u));
        }
        check_distinct_decimals(&field("cost_performance_u"), &self.cost_performance_u, 2)?;
        if self.cost_performance_u.is_empty() {
            bail!(
                "invalid {} = []: allowed a non-empty list of values listed in target_u (claim 5 and figure 6 need one)",
                field("cost_performance_u")
            );
        }
        if self.replicates == 0 || self.replicates > MAX_REPLICATES {
            bail!("invalid {} = {}: allowed 1..={MAX_REPLICATES}", field("replicates"), self.replicates);
        }
        check_distinct(&field("sensitivity"), &self.sensitivity, EffectOff::to_string)?;
        check_distinct(&field("relinquish_sensitivity"), &self.relinquish_sensitivity, |r| r.label().to_string())?;
        check_distinct(&field("arbitration_sensitivity"), &self.arbitration_sensitivity, |a| a.label().to_string())?;
        check_distinct(&field("mechanism_sensitivity"), &self.mechanism_sensitivity, |m| m.name().to_string())?;
        if let Some(r) = self.return_sensitivity.iter().find(|&&r| r > 100) {
            bail!("invalid {} = {r}: allowed percentages 0..=100 of Oint", field("return_sensitivity"));
        }
        check_distinct(&field("return_sensitivity"), &self.return_sensitivity, u32::to_string)?;
        check_distinct(&field("switch_sensitivity"), &self.switch_sensitivity, |c| c.label())?;
        if let Some(c) = self.switch_sensitivity.iter().find(|c| c.bytes == 0 || c.bytes > MAX_CONTEXT_BYTES) {
            bail!(
                "invalid {} = {{ cycles = {}, bytes = {} }}: allowed bytes 1..={MAX_CONTEXT_BYTES} (a switch saves \
                 and restores a register file; no context at all is mechanism_sensitivity's protocol_thread)",
                field("switch_sensitivity"),
                c.cycles,
                c.bytes
            );
        }
        if let Some(c) = self.switch_sensitivity.iter().find(|c| c.cycles > MAX_CYCLES) {
            bail!(
                "invalid {} = {{ cycles = {}, bytes = {} }}: allowed cycles 0..={MAX_CYCLES}",
                field("switch_sensitivity"),
                c.cycles,
                c.bytes
            );
        }
        self.validate_claim_points(table)
    }

    /// The points the claims are judged at (see `claims.rs`): the paper's
    /// Oint of 200 cycles (Section 2, Figure 5), a communication-bound U
    /// (at most 0.1: claims 1 to 3), U = 0.5 (claim 2), Figure 5's U = 0.3
    /// and 0.7 among the cost-performance U (claims 4 and 5), and two seeds
    /// at least (claim 5 pairs them for a standard error). A grid without
    /// them could not decide every claim.
    fn validate_claim_points(&self, table: &str) -> Result<()> {
        let field = |f: &str| format!("{table}.{f}");
        let has = |list: &[f64], u: f64| list.iter().any(|&x| (x - u).abs() < 1e-9);
        if !self.oint_cycles.contains(&PAPER_OINT) {
            bail!(
                "invalid {} = {:?}: must contain {PAPER_OINT}, the paper's interrupt overhead (Section 2, Figure 5), \
                 at which the claims are judged",
                field("oint_cycles"),
                self.oint_cycles
            );
        }
        if !self.target_u.iter().any(|&u| u <= COMM_BOUND_U + 1e-9) {
            bail!(
                "invalid {} = {:?}: must contain a U of at most {COMM_BOUND_U} (communication-bound, C << Lmin: \
                 claims 1 to 3)",
                field("target_u"),
                self.target_u
            );
        }
        if !has(&self.target_u, 0.5) {
            bail!("invalid {} = {:?}: must contain 0.5 (claim 2 looks at it)", field("target_u"), self.target_u);
        }
        if !PAPER_US.iter().all(|&u| has(&self.cost_performance_u, u)) {
            bail!(
                "invalid {} = {:?}: must contain 0.3 and 0.7, the paper's U for its processor sweeps (Section 5, \
                 Figure 5: claims 4 and 5)",
                field("cost_performance_u"),
                self.cost_performance_u
            );
        }
        if self.replicates < 2 {
            bail!(
                "invalid {} = {}: allowed at least 2 seeds (claim 5 pairs them for a standard error)",
                field("replicates"),
                self.replicates
            );
        }
        Ok(())
    }

    /// A rule rerun for claim 2 or 4 must differ from the preset's (its
    /// runs would repeat the study's own).
    /// `own` is the rule the study's own runs give up the role by.
    pub(super) fn check_rules(
        &self,
        table: &str,
        own: Relinquish,
        preset: &ProtocolParams,
        interrupt: &InterruptParams,
    ) -> Result<()> {
        if self.relinquish_sensitivity.contains(&own) {
            bail!(
                "invalid {table}.relinquish_sensitivity = [{}]: {} is the study's own rule; allowed the other rules \
                 of eager, handoff, adaptive",
                self.relinquish_sensitivity.iter().map(|r| r.label()).collect::<Vec<_>>().join(", "),
                own.label()
            );
        }
        let preset_return = 100 - interrupt.entry_percent;
        if self.return_sensitivity.contains(&preset_return) {
            bail!(
                "invalid {table}.return_sensitivity = {:?}: {preset_return} is the preset's own share of Oint paid on \
                 return; allowed other percentages 0..=100",
                self.return_sensitivity
            );
        }
        if let Some(off) = self.mechanism_sensitivity.iter().find(|m| !m.is_on(preset)) {
            let on: Vec<&str> = Mechanism::ALL.iter().filter(|m| m.is_on(preset)).map(|m| m.name()).collect();
            bail!(
                "invalid {table}.mechanism_sensitivity = [{}]: {} is already off in the preset; allowed the \
                 mechanisms it has on ({})",
                self.mechanism_sensitivity.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
                off.name(),
                if on.is_empty() { "none".to_string() } else { on.join(", ") }
            );
        }
        self.check_switches(table, preset)?;
        if self.arbitration_sensitivity.contains(&preset.role_arbitration) {
            bail!(
                "invalid {table}.arbitration_sensitivity = [{}]: {} is the preset's own arbitration; allowed the \
                 other one of lowest, round-robin",
                self.arbitration_sensitivity.iter().map(|a| a.label()).collect::<Vec<_>>().join(", "),
                preset.role_arbitration.label()
            );
        }
        Ok(())
    }

    /// A switch cost rerun needs the protocol thread on in the preset (it
    /// costs nothing otherwise) and must differ from the preset's own.
    fn check_switches(&self, table: &str, preset: &ProtocolParams) -> Result<()> {
        if self.switch_sensitivity.is_empty() {
            return Ok(());
        }
        let listed = self.switch_sensitivity.iter().map(|c| c.label()).collect::<Vec<_>>().join(", ");
        if !preset.protocol_thread {
            bail!(
                "invalid {table}.switch_sensitivity = [{listed}]: the preset has protocol_thread = false, so no \
                 context switch is paid; allowed an empty list with it"
            );
        }
        let own = ContextSwitch::of(preset);
        if self.switch_sensitivity.contains(&own) {
            bail!(
                "invalid {table}.switch_sensitivity = [{listed}]: {} is the preset's own cost; allowed other \
                 cycles / bytes pairs",
                own.label()
            );
        }
        Ok(())
    }
}

/// Most replicates of every point a sweep may ask for.
const MAX_REPLICATES: u32 = 1000;

/// Largest saved context a switch sensitivity may ask for: 64 KiB, far
/// beyond any register file (the rule's full SPARC V8 save is 512).
const MAX_CONTEXT_BYTES: u32 = 65536;

/// What a sensitivity run changes in the preset's machine; the study's own
/// runs change nothing. A record's labels hold its fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Variant {
    /// An effect of the model switched off (claim 5's reruns).
    pub effect_off: Option<EffectOff>,
    /// Another rule for giving the acting-PP role up (claim 2's reruns).
    pub relinquish: Option<Relinquish>,
    /// Another arbitration of a released role (claim 4's reruns).
    pub arbitration: Option<RoleArbitration>,
    /// Another share of Oint (percent) paid on return (claim 1's reruns).
    pub return_percent: Option<u32>,
    /// A mechanism of the paper's Section 5 switched off (every claim's
    /// reruns).
    pub mechanism_off: Option<Mechanism>,
    /// Another cost of the switches to and from the protocol thread (every
    /// claim's reruns: the context-switch map).
    pub context_switch: Option<ContextSwitch>,
}

impl Variant {
    /// The study's own runs.
    pub(crate) const BASELINE: Variant = Variant {
        effect_off: None,
        relinquish: None,
        arbitration: None,
        return_percent: None,
        mechanism_off: None,
        context_switch: None,
    };

    /// The start of a run id that names what the run changes.
    pub(super) fn id_prefix(&self) -> String {
        let mut s = self.effect_off.map(|e| e.run_label() + "-").unwrap_or_default();
        if let Some(r) = self.relinquish {
            let _ = write!(s, "relinquish-{}-", r.label());
        }
        if let Some(a) = self.arbitration {
            let _ = write!(s, "arbitration-{}-", a.label());
        }
        if let Some(r) = self.return_percent {
            let _ = write!(s, "return{r}-");
        }
        if let Some(m) = self.mechanism_off {
            let _ = write!(s, "without-{}-", m.name().replace('_', "-"));
        }
        if let Some(c) = self.context_switch {
            let _ = write!(s, "switch{}-context{}-", c.cycles, c.bytes);
        }
        s
    }

    pub(super) fn apply(&self, config: &mut SimConfig) {
        let m = &mut config.machine;
        if let Some(e) = self.effect_off {
            e.apply(m);
        }
        if let Some(r) = self.relinquish {
            config.run.relinquish = r;
        }
        if let Some(a) = self.arbitration {
            m.protocol.role_arbitration = a;
        }
        if let Some(r) = self.return_percent {
            m.interrupt.entry_percent = 100 - r;
        }
        if let Some(mechanism) = self.mechanism_off {
            mechanism.apply(m);
        }
        if let Some(c) = self.context_switch {
            c.apply(m);
        }
    }

    /// The variant whose runs stand for `policy` under this one. Fixed's
    /// compute processors never act as PP and its dedicated one never gives
    /// the role up, so neither rule changes a Fixed run, and nothing
    /// interrupts it; a single processor never races anyone for the role,
    /// and with no peer to take it over it gives the role up under every
    /// rule. Their reruns pair with the study's own runs of those policies.
    /// A mechanism switched off changes every policy (Fixed's requests
    /// pass through its protocol processor, Single's processor switches to
    /// the protocol thread), so its runs pair with each other; so does a
    /// switch cost (Fixed's dedicated processor never switches, but the
    /// context's size moves every save area in its memory map).
    pub(super) fn seen_by(self, policy: &str) -> Variant {
        match policy {
            "fixed" => Variant { relinquish: None, arbitration: None, return_percent: None, ..self },
            "single" => Variant { relinquish: None, arbitration: None, ..self },
            _ => self,
        }
    }
}

/// A mechanism of the paper's Section 5 (HPCA 1997, Figure 2) that a preset
/// can have on: the study's `mechanism_sensitivity` reruns the whole grid
/// without it, to measure what it does to each claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// `protocol.protocol_thread`: taking and giving up the acting-PP role
    /// switches to and from the node's protocol thread.
    ProtocolThread,
    /// `protocol.requests_via_pp`: requests are handed to the protocol
    /// processor, which sends them.
    RequestsViaPp,
}

impl Mechanism {
    pub const ALL: [Mechanism; 2] = [Mechanism::ProtocolThread, Mechanism::RequestsViaPp];

    /// The preset's `[protocol]` field.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::ProtocolThread => "protocol_thread",
            Mechanism::RequestsViaPp => "requests_via_pp",
        }
    }

    pub fn is_on(self, protocol: &ProtocolParams) -> bool {
        match self {
            Mechanism::ProtocolThread => protocol.protocol_thread,
            Mechanism::RequestsViaPp => protocol.requests_via_pp,
        }
    }

    pub fn apply(self, machine: &mut MachineConfig) {
        match self {
            Mechanism::ProtocolThread => machine.protocol.protocol_thread = false,
            Mechanism::RequestsViaPp => machine.protocol.requests_via_pp = false,
        }
    }
}

impl std::fmt::Display for Mechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A cost of the two context switches to and from the protocol thread
/// (HPCA 1997, Section 5, Figure 2), which the paper does not give: the
/// study's `switch_sensitivity` reruns the whole grid at each, mapping where
/// each claim holds as this unknown moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextSwitch {
    /// Instructions of one switch (`protocol.context_switch_cycles`).
    pub cycles: u64,
    /// Bytes of a saved context, written and read through the caches at
    /// each switch (`protocol.context_bytes`).
    pub bytes: u32,
}

impl ContextSwitch {
    /// The preset's own cost.
    pub fn of(protocol: &ProtocolParams) -> ContextSwitch {
        ContextSwitch { cycles: protocol.context_switch_cycles, bytes: protocol.context_bytes }
    }

    pub fn apply(self, machine: &mut MachineConfig) {
        machine.protocol.context_switch_cycles = self.cycles;
        machine.protocol.context_bytes = self.bytes;
    }

    /// `cycles/bytes`, as the report's map and the results table give it.
    pub fn label(self) -> String {
        format!("{}/{}", self.cycles, self.bytes)
    }
}
