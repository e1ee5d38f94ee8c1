//! The co-processor paper's eleven Split-C programs (IPPS 1996 Table 2),
//! written once against [`finegrain_splitc`] and so against [`Proc`]: each
//! computes a real answer from a seeded input and checks it against a
//! sequential reference computed from the same input.
//!
//! A program implements [`SplitcProgram`]; [`SplitcWorkload`] makes it a
//! [`Workload`] any platform runs: every node's thread runs the program
//! between two barriers, and its output is what it computed plus the time
//! its phases took on the platform's clock ([`Proc::now`]: simulated
//! cycles, or nanoseconds natively).
//!
//! A program's own computation is charged as counted [`Work`]: one
//! constant per kernel operation, counted by reading the program's inner
//! loop, which the machine's cost model turns into cycles (natively a
//! no-op). The counts follow one convention throughout:
//! - a loop iteration is 3 integer ops (step the index, compare it with
//!   the bound, branch); indexing an array with the loop's own index is
//!   free (the step moves the pointer), while index arithmetic written
//!   in the source (`l + half`, `i * n + k`, a shift and a mask) is one
//!   integer op per operator; a compare-and-branch on data is 2;
//! - loop-invariant values (a scale factor, a row's base address) are
//!   hoisted: not counted per iteration;
//! - a value loaded or stored once per iteration is one load or store
//!   (its second use reads a register);
//! - copies between the node's segment and a local vector that stand in
//!   for the Split-C program's in-place access are not counted, only the
//!   kernel's own accesses;
//! - a library call is counted as the routine it runs ([`SINE`], a
//!   comparison sort's [`sample::sort_work`]).

pub mod bitonic;
pub mod cannon;
pub mod fft;
pub mod mm;
pub mod pray;
pub mod primitives;
pub mod radix;
pub mod sample;
pub mod shell;
pub mod spec;
pub mod wator;

use finegrain_core::{AmError, HandlerTable, Proc, Work, Workload, WorkloadError};
use finegrain_splitc::{Builder, SplitC, SplitNode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;

/// One libm `sin` or `cos` of a double (fft's twiddles, wator's current),
/// counted from an fdlibm-style kernel: the argument reduction (multiply by
/// 2/π, round, subtract the multiple of π/2 in two parts: 5 flops), the
/// quadrant's odd or even polynomial by Horner's rule (the square, six
/// multiply-adds and the final scale: 15 flops), 20 flops in all; 6 integer
/// ops (the rounded multiple to an integer, its quadrant mask, the range
/// and quadrant branches); 8 loads of the polynomial's and the reduction's
/// constants.
pub const SINE: Work = Work::new(20, 0, 6, 8, 0);

/// A Split-C program: its input's size, its per-node program, and the check
/// of what the nodes computed against a sequential reference.
pub trait SplitcProgram: Sync {
    /// What one node computed (its share of the answer).
    type Answer: Send + Serialize + DeserializeOwned;

    /// The program's name (`radix`, `fftb`, ...).
    fn name(&self) -> &'static str;

    /// The input in words, for reports ("1M 32-bit keys, 64K per node").
    fn input(&self, nodes: u32) -> String;

    /// Words each node's segment needs.
    fn segment_words(&self, nodes: u32) -> u64;

    /// Registers the program's atomic functions, if it has any (called
    /// once, before the handlers are registered).
    fn atomics(&mut self, _b: &mut Builder) {}

    /// One node's program. Time spent in named phases is added to
    /// `phases` (see [`Phases`]).
    fn run<P: Proc>(
        &self,
        s: &SplitNode<'_, P>,
        phases: &mut Phases,
    ) -> impl Future<Output = Result<Self::Answer, AmError>>;

    /// Checks the nodes' answers (node order) against the sequential
    /// reference; the error says what differs.
    fn check(&self, nodes: u32, answers: &[&Self::Answer]) -> Result<(), String>;
}

/// Time a node spent in each named phase, on the platform's clock, and
/// named counts of events (reads issued, say) to divide them by.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phases {
    pub times: BTreeMap<String, u64>,
    pub counts: BTreeMap<String, u64>,
}

impl Phases {
    /// Adds `duration` to phase `name`.
    pub fn add(&mut self, name: &str, duration: u64) {
        *self.times.entry(name.to_string()).or_default() += duration;
    }

    /// Adds `n` to count `name`.
    pub fn count(&mut self, name: &str, n: u64) {
        *self.counts.entry(name.to_string()).or_default() += n;
    }

    /// Runs `f`, adding its duration on `p`'s clock to phase `name`.
    pub async fn time<P: Proc, T>(&mut self, p: &P, name: &str, f: impl Future<Output = T>) -> T {
        let t0 = p.now();
        let out = f.await;
        self.add(name, p.now() - t0);
        out
    }
}

/// What one node's thread returns.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeRun<A> {
    pub answer: A,
    /// From the start barrier to the end barrier.
    pub total: u64,
    pub phases: Phases,
}

/// A Split-C program as a [`Workload`].
pub struct SplitcWorkload<G: SplitcProgram> {
    program: G,
    table: HandlerTable,
    splitc: SplitC,
    nodes: u32,
}

impl<G: SplitcProgram> SplitcWorkload<G> {
    /// The program for `nodes` nodes, its handlers registered.
    pub fn new(mut program: G, nodes: u32) -> Result<SplitcWorkload<G>, AmError> {
        let mut b = SplitC::builder(nodes, program.segment_words(nodes));
        program.atomics(&mut b);
        let mut table = HandlerTable::new();
        let splitc = b.register(&mut table)?;
        Ok(SplitcWorkload { program, table, splitc, nodes })
    }

    pub fn program(&self) -> &G {
        &self.program
    }
}

impl<G: SplitcProgram> Workload for SplitcWorkload<G> {
    type Output = NodeRun<G::Answer>;

    fn name(&self) -> &'static str {
        self.program.name()
    }

    fn handlers(&self) -> &HandlerTable {
        &self.table
    }

    async fn thread<P: Proc>(&self, p: P) -> Result<Self::Output, AmError> {
        let s = self.splitc.on(&p)?;
        let mut phases = Phases::default();
        s.barrier().await?;
        let t0 = p.now();
        let answer = self.program.run(&s, &mut phases).await?;
        s.barrier().await?;
        Ok(NodeRun { answer, total: p.now() - t0, phases })
    }

    fn check(&self, outputs: &[Self::Output]) -> Result<(), WorkloadError> {
        if outputs.len() != self.nodes as usize {
            return Err(WorkloadError::WrongAnswer {
                workload: self.program.name(),
                what: format!("{} node outputs for {} nodes", outputs.len(), self.nodes),
            });
        }
        let answers: Vec<&G::Answer> = outputs.iter().map(|o| &o.answer).collect();
        self.program
            .check(self.nodes, &answers)
            .map_err(|what| WorkloadError::WrongAnswer { workload: self.program.name(), what })
    }
}
