//! What one run of the co-processor study is: its labels, the id they
//! make, the check that they describe the run's configuration, and the
//! bare DMA flag time `rerun` measures again.

use super::grid::MAX_DMA_ROUNDS;
use crate::record::{describe_value, Labels, Remeasured};
use finegrain_apps::micro::Protocol;
use finegrain_apps::splitc::primitives::Primitive;
use finegrain_apps::splitc::spec::{ProgramMeasures, ProgramSpec};
use finegrain_apps::WorkloadSpec;
use finegrain_core::{CoprocLibrary, Policy};
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};

/// Which of the paper's measurements a run is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Part {
    /// Table 1: the null Active Message ping-pong of one requester, with
    /// the machine's bare DMA flag one-way time (in cycles; scripted, no
    /// seed enters it).
    PingPong { round_trips: u64, dma_rounds: u64, dma_one_way_cycles: f64 },
    /// Figure 3 and the bulk bandwidth: one Split-C primitive timed.
    Primitive { primitive: Primitive, words: u64 },
    /// Table 2: one program.
    Program { program: String },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLabels {
    /// The library the run uses: its Active Messages (Table 1) or its
    /// Split-C (Figure 3, Table 2).
    pub library: CoprocLibrary,
    /// Which of the study's seeds (replicates) the run is.
    pub replicate: u32,
    pub seed: u64,
    pub part: Part,
    /// A rerun of a main-am run with its sending threads' instructions
    /// taken out (see [`Variant`]); absent for the study's own runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<Variant>,
}

/// A mechanism switched off to measure a failing claim's cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// main-am with `coprocessor.send_thread_instructions = 0`: the
    /// sending co-processor thread's own code takes no time (the paper
    /// gives no count; the preset's 30 is an estimate).
    FreeSendThread,
}

impl Variant {
    pub fn label(self) -> &'static str {
        match self {
            Variant::FreeSendThread => "free-send-thread",
        }
    }
}

/// The one-way time, in cycles, of a flag moved by bare DMA on `c`'s machine.
pub fn dma_one_way(c: &SimConfig, rounds: u64) -> anyhow::Result<f64> {
    Ok(finegrain_sim::coproc::dma_flag_one_way(&c.machine, rounds)?)
}

impl RunLabels {
    /// What the run measured, as ids and tables name it.
    pub fn subject(&self) -> String {
        match &self.part {
            Part::PingPong { .. } => "ping-pong".into(),
            Part::Primitive { primitive, .. } => primitive.label().into(),
            Part::Program { program } => program.clone(),
        }
    }
}

fn describe_ping_pong(c: &SimConfig, workload: &WorkloadSpec, part: &Part) -> Result<(), String> {
    let (Part::PingPong { round_trips, dma_rounds, dma_one_way_cycles }, WorkloadSpec::Micro(w)) = (part, workload)
    else {
        return Err(format!("it is a {} run labelled as a ping-pong", workload.description()));
    };
    if !(*dma_one_way_cycles > 0.0 && dma_one_way_cycles.is_finite()) {
        return Err(format!("dma_one_way_cycles = {dma_one_way_cycles}: allowed a positive number"));
    }
    if *dma_rounds == 0 || *dma_rounds > MAX_DMA_ROUNDS {
        return Err(format!("dma_rounds = {dma_rounds}: allowed 1..={MAX_DMA_ROUNDS}"));
    }
    describe_value("round_trips", round_trips, &w.requests_per_node)?;
    // The study's ping-pong: one requester, null handlers, back to back,
    // on two nodes of one processor each.
    describe_value("protocol", &Protocol::Null, &w.protocol)?;
    describe_value("single_requester", &true, &w.single_requester)?;
    describe_value("mean_compute_cycles", &0.0, &w.mean_compute_cycles)?;
    describe_value("nodes", &2, &c.run.topology.nodes)
}

fn describe_splitc(c: &SimConfig, workload: &WorkloadSpec, part: &Part) -> Result<(), String> {
    let WorkloadSpec::Splitc(spec) = workload else {
        return Err(format!("it is a {} run labelled as a Split-C one", workload.description()));
    };
    match (part, spec) {
        (Part::Primitive { primitive, words }, ProgramSpec::Primitives(p)) => {
            describe_value("primitive", primitive, &p.primitive)?;
            describe_value("words", words, &p.words)?;
            describe_value("nodes", &2, &c.run.topology.nodes)
        }
        (Part::Program { program }, spec) => describe_value("program", program, &spec.label()),
        _ => Err(format!("its labels name {part:?} but it runs {}", spec.label())),
    }
}

impl Labels for RunLabels {
    /// A Split-C run's (the ping-pongs have none).
    type Measures = ProgramMeasures;

    /// The measurement, the library and the replicate.
    fn id(&self) -> String {
        let variant = self.variant.map_or(String::new(), |v| format!("-{}", v.label()));
        format!("{}-{}{variant}-r{}", self.subject(), self.library.label(), self.replicate)
    }

    fn describe(&self, c: &SimConfig, workload: &WorkloadSpec) -> Result<(), String> {
        describe_value("seed", &self.seed, &c.run.seed)?;
        describe_value("library", &Policy::Coprocessor { library: self.library }.label(), &c.run.policy.label())?;
        describe_value("procs_per_node", &1, &c.run.topology.procs_per_node)?;
        if self.variant == Some(Variant::FreeSendThread) {
            let cp = c.machine.coprocessor.as_ref().map(|cp| cp.send_thread_instructions);
            describe_value("coprocessor.send_thread_instructions", &Some(0), &cp)?;
        }
        match self.part {
            Part::PingPong { .. } => describe_ping_pong(c, workload, &self.part),
            _ => describe_splitc(c, workload, &self.part),
        }
    }

    fn remeasure(&self, config: &SimConfig, _workload: &WorkloadSpec) -> anyhow::Result<Vec<Remeasured>> {
        let Part::PingPong { dma_rounds, dma_one_way_cycles, .. } = self.part else { return Ok(Vec::new()) };
        let now = dma_one_way(config, dma_rounds)?;
        Ok(vec![Remeasured { name: "dma_one_way_cycles", recorded: dma_one_way_cycles, now }])
    }
}
