//! The one seam between programs and platforms. A [`Workload`] is written
//! once against [`Proc`]: its handlers, the program every compute thread
//! runs, and the check of what they computed. A [`Platform`] runs any
//! workload: the simulator on its model of a machine, the native runtime
//! on real threads, and the same runtime with its nodes as processes of
//! one host or as MPI ranks.

use crate::config::ConfigError;
use crate::error::AmError;
use crate::handler::HandlerTable;
use crate::proc_api::Proc;
use std::future::Future;
use thiserror::Error;

/// Why a workload could not be set up or gave a wrong answer.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum WorkloadError {
    /// A configuration the workload cannot run (with the field and what is
    /// allowed).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Its handlers could not be registered.
    #[error(transparent)]
    Handlers(#[from] AmError),
    /// What the threads computed is not what they must have: the run lost
    /// or duplicated an update (a platform's bug, or handlers of one key
    /// that overlapped).
    #[error("wrong answer from {workload}: {what}")]
    WrongAnswer { workload: &'static str, what: String },
}

/// A program written once against [`Proc`], SPMD: every compute thread of
/// every node runs [`Workload::thread`].
pub trait Workload: Sync {
    /// What one compute thread's program returns (serializable: platforms
    /// whose nodes run in separate processes gather the outputs in one).
    type Output: Send + serde::Serialize + serde::de::DeserializeOwned;

    /// The workload's name, for messages.
    fn name(&self) -> &'static str;

    /// Its handlers, registered with whatever state they share with the
    /// threads.
    fn handlers(&self) -> &HandlerTable;

    /// The program of one compute thread.
    fn thread<P: Proc>(&self, p: P) -> impl Future<Output = Result<Self::Output, AmError>>;

    /// Checks what the run computed, from the threads' outputs (node-major)
    /// and whatever the handlers left in the workload's shared state.
    fn check(&self, outputs: &[Self::Output]) -> Result<(), WorkloadError>;

    /// This process's share of the state [`Workload::check`] reads, as
    /// counters that add up across processes. A platform whose nodes run
    /// in separate processes (`shm`, `mpi`) has each process's handlers
    /// and threads update their own copy of the workload; it gathers every
    /// process's tally into one process ([`Workload::absorb`]) and checks
    /// there. Workloads whose check reads only the outputs tally nothing.
    fn tally(&self) -> Vec<u64> {
        Vec::new()
    }

    /// Adds another process's [`Workload::tally`] into this one's state.
    fn absorb(&self, tally: &[u64]) -> Result<(), WorkloadError> {
        if tally.is_empty() {
            return Ok(());
        }
        Err(WorkloadError::WrongAnswer {
            workload: self.name(),
            what: format!("another process sent a tally of {} counters; this workload keeps none", tally.len()),
        })
    }

    /// Whether this workload can run with its nodes in separate processes
    /// (a platform such as `shm` or `mpi` asks before it starts): its
    /// threads on different nodes must share state only through messages.
    /// One whose threads read memory other nodes' threads write (a count
    /// of requesters still running, say) refuses, naming what to use
    /// instead.
    fn across_processes(&self) -> Result<(), WorkloadError> {
        Ok(())
    }
}

/// What a platform's run of a workload gives back: every compute thread's
/// output (node-major) and the platform's statistics.
#[derive(Debug)]
pub struct Ran<T, S> {
    pub outputs: Vec<T>,
    pub stats: S,
}

/// Something that runs workloads.
pub trait Platform {
    /// What a run measured.
    type Stats;
    /// Why a run failed (its workload's errors among them).
    type Error: std::error::Error + From<WorkloadError>;

    /// The platform's name (`sim`, `native`, ...).
    fn name(&self) -> &'static str;

    /// Runs `workload` once and checks its answer.
    fn run<W: Workload>(&self, workload: &W) -> Result<Ran<W::Output, Self::Stats>, Self::Error>;
}
