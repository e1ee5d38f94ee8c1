//! The PDQ paper's seven shared-memory applications (HPCA 1999 Table 2),
//! written once against [`finegrain_dsm`] and so against [`Proc`]: each
//! computes a real answer from a seeded input and checks it against a
//! sequential reference computed from the same input.
//!
//! A program implements [`DsmProgram`]; [`DsmWorkload`] makes it a
//! [`Workload`] any platform runs: every compute thread of every node runs
//! the program between two barriers, and its output is what it computed
//! plus the time its phases took on the platform's clock.

pub mod barnes;
pub mod cholesky;
pub mod em3d;
pub mod fft;
pub mod fmm;
pub mod radix;
pub mod remote_miss;
pub mod spec;
pub mod water;

pub use crate::splitc::Phases;

/// Counts every DSM run records beside the program's own, over the
/// whole run: the shared words its threads read or wrote and the block
/// access faults they raised (the misses that needed the protocol).
pub const SHARED_WORDS: &str = "shared words";
pub const BLOCK_FAULTS: &str = "block faults";

use finegrain_core::{AmError, HandlerTable, Proc, Workload, WorkloadError};
use finegrain_dsm::{Dsm, DsmBuilder, DsmConfig, DsmProc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::future::Future;

/// A shared-memory program: its shared data, its per-thread program, and
/// the check of what the threads computed against a sequential reference.
pub trait DsmProgram: Sync {
    /// What one thread computed (its share of the answer).
    type Answer: Send + Serialize + DeserializeOwned;

    /// The program's name (`barnes`, `radix`, ...).
    fn name(&self) -> &'static str;

    /// The input, for reports ("16384 particles, 2 steps").
    fn input(&self) -> String;

    /// Allocates the program's shared arrays and locks (keeping their
    /// handles), with their initial contents.
    fn layout(&mut self, b: &mut DsmBuilder);

    /// One thread's program (SPMD over every thread of every node).
    fn run<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        phases: &mut Phases,
    ) -> impl Future<Output = Result<Self::Answer, AmError>>;

    /// Checks the threads' answers (rank order) against the sequential
    /// reference; the error says what differs.
    fn check(&self, answers: &[&Self::Answer]) -> Result<(), String>;
}

/// What one thread returns.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ThreadRun<A> {
    pub answer: A,
    /// From the start barrier to the end barrier, on the platform's clock.
    pub total: u64,
    pub phases: Phases,
}

/// A shared-memory program as a [`Workload`].
pub struct DsmWorkload<G: DsmProgram> {
    program: G,
    table: HandlerTable,
    dsm: Dsm,
    ranks: u32,
}

impl<G: DsmProgram> DsmWorkload<G> {
    /// The program on `nodes` nodes of `threads` compute threads, its
    /// shared data laid out and the protocol's handlers registered.
    pub fn new(mut program: G, nodes: u32, threads: u32, cfg: DsmConfig) -> Result<DsmWorkload<G>, AmError> {
        let mut b = Dsm::builder(nodes, threads, cfg)?;
        program.layout(&mut b);
        let mut table = HandlerTable::new();
        let dsm = b.register(&mut table)?;
        Ok(DsmWorkload { program, table, dsm, ranks: nodes * threads })
    }

    pub fn program(&self) -> &G {
        &self.program
    }

    pub fn dsm(&self) -> &Dsm {
        &self.dsm
    }
}

impl<G: DsmProgram> Workload for DsmWorkload<G> {
    type Output = ThreadRun<G::Answer>;

    fn name(&self) -> &'static str {
        self.program.name()
    }

    fn handlers(&self) -> &HandlerTable {
        &self.table
    }

    async fn thread<P: Proc>(&self, p: P) -> Result<Self::Output, AmError> {
        let d = self.dsm.on(&p)?;
        let mut phases = Phases::default();
        d.barrier().await?;
        let t0 = p.now();
        let answer = self.program.run(&d, &mut phases).await?;
        d.barrier().await?;
        // What the study reports as each program's miss rate.
        phases.count(SHARED_WORDS, d.shared_words());
        phases.count(BLOCK_FAULTS, d.faults());
        Ok(ThreadRun { answer, total: p.now() - t0, phases })
    }

    fn check(&self, outputs: &[Self::Output]) -> Result<(), WorkloadError> {
        if outputs.len() != self.ranks as usize {
            return Err(WorkloadError::WrongAnswer {
                workload: self.program.name(),
                what: format!("{} thread outputs for {} threads", outputs.len(), self.ranks),
            });
        }
        let answers: Vec<&G::Answer> = outputs.iter().map(|o| &o.answer).collect();
        self.program.check(&answers).map_err(|what| WorkloadError::WrongAnswer { workload: self.program.name(), what })
    }

    fn across_processes(&self) -> Result<(), WorkloadError> {
        if self.dsm.config().check_coherence {
            return Err(WorkloadError::WrongAnswer {
                workload: self.program.name(),
                what: "the DSM's coherence check keeps one copy of all memory, which processes cannot share; run \
                       with it off on the shm and mpi platforms"
                    .into(),
            });
        }
        Ok(())
    }
}

/// Runs programs on small machines in tests: the simulator (Hurricane with
/// one embedded PDQ processor on the hpca99 machine, coherence checked)
/// and native threads (one protocol thread per node under PDQ).
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use finegrain_core::{Discipline, MachineConfig, Platform, Policy, PpKind, Topology};

    pub fn checked() -> DsmConfig {
        DsmConfig { check_coherence: true, ..DsmConfig::default() }
    }

    /// Simulates `program` on `nodes` nodes of `threads` compute threads;
    /// the run checks the answer.
    pub fn run_sim<G: DsmProgram>(program: G, nodes: u32, threads: u32) -> Result<Vec<ThreadRun<G::Answer>>, String> {
        let cfg = checked();
        let w = DsmWorkload::new(program, nodes, threads, cfg).map_err(|e| e.to_string())?;
        let machine = MachineConfig::load("hpca99").map_err(|e| e.to_string())?;
        let topology = Topology { nodes, procs_per_node: threads + 1 };
        let mut sim = finegrain_sim::SimConfig::new(machine, topology, Policy::Fixed { protocol_procs: 1 }, 1999);
        sim.run.dispatch.discipline = Discipline::Pdq;
        sim.run.dispatch.pp_kind = PpKind::Embedded;
        let ran = finegrain_sim::Simulator { config: &sim }.run(&w).map_err(|e| e.to_string())?;
        Ok(ran.outputs)
    }

    /// Runs `program` natively on threads of this process; the run checks
    /// the answer.
    pub fn run_native<G: DsmProgram>(
        program: G,
        nodes: u32,
        threads: u32,
    ) -> Result<Vec<ThreadRun<G::Answer>>, String> {
        let w = DsmWorkload::new(program, nodes, threads, checked()).map_err(|e| e.to_string())?;
        let topology = Topology { nodes, procs_per_node: threads + 1 };
        let mut rt = finegrain_rt::RtConfig::new(topology, Policy::Fixed { protocol_procs: 1 });
        rt.run.dispatch.discipline = Discipline::Pdq;
        let ran = finegrain_rt::Native { config: &rt }.run(&w).map_err(|e| e.to_string())?;
        Ok(ran.outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{run_native, run_sim};
    use super::*;
    use finegrain_dsm::{Home, Shared};

    /// Every thread writes a stripe; every thread then sums all of them.
    #[derive(Default)]
    struct StripeSum {
        data: Option<Shared>,
        ranks: u64,
    }

    const STRIPE: u64 = 40;

    impl DsmProgram for StripeSum {
        type Answer = u64;
        fn name(&self) -> &'static str {
            "stripe-sum"
        }
        fn input(&self) -> String {
            format!("{STRIPE} words per thread")
        }
        fn layout(&mut self, b: &mut DsmBuilder) {
            self.data = Some(b.alloc(self.ranks * STRIPE, Home::Blocked));
        }
        async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<u64, AmError> {
            let a = self.data.expect("laid out");
            let me = d.rank() as u64;
            let t0 = d.now();
            let mine: Vec<u64> = (0..STRIPE).map(|k| me * STRIPE + k).collect();
            d.write_from(a, me * STRIPE, &mine).await?;
            d.barrier().await?;
            phases.add("write", d.now() - t0);
            let mut all = vec![0; a.len() as usize];
            d.read_into(a, 0, &mut all).await?;
            Ok(all.iter().sum())
        }
        fn check(&self, answers: &[&u64]) -> Result<(), String> {
            let n = self.ranks * STRIPE;
            let want = n * (n - 1) / 2;
            match answers.iter().position(|&&a| a != want) {
                Some(r) => Err(format!("rank {r} summed {}, want {want}", answers[r])),
                None => Ok(()),
            }
        }
    }

    #[test]
    fn a_program_runs_between_barriers_on_the_simulator_and_natively() {
        let sim = run_sim(StripeSum { ranks: 6, ..StripeSum::default() }, 3, 2).unwrap();
        assert_eq!(sim.len(), 6);
        assert!(sim.iter().all(|r| r.total > 0 && r.phases.times["write"] > 0));
        let native = run_native(StripeSum { ranks: 4, ..StripeSum::default() }, 2, 2).unwrap();
        assert_eq!(native.len(), 4);
    }

    #[test]
    fn a_wrong_answer_is_reported() {
        struct Wrong(StripeSum);
        impl DsmProgram for Wrong {
            type Answer = u64;
            fn name(&self) -> &'static str {
                "wrong"
            }
            fn input(&self) -> String {
                String::new()
            }
            fn layout(&mut self, b: &mut DsmBuilder) {
                self.0.layout(b)
            }
            async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<u64, AmError> {
                Ok(self.0.run(d, phases).await? + 1)
            }
            fn check(&self, answers: &[&u64]) -> Result<(), String> {
                self.0.check(answers)
            }
        }
        let e = run_sim(Wrong(StripeSum { ranks: 2, ..StripeSum::default() }), 2, 1).unwrap_err();
        assert!(e.contains("rank 0 summed"), "{e}");
    }
}
