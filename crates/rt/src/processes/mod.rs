//! Nodes as OS processes: each process runs one node of the run, over a
//! transport that joins the processes (shared memory between the
//! processes of one host, or MPI ranks across hosts), and at the end
//! leaves its results for node 0, which gathers and checks them.
//!
//! The run is the same whatever the transport ([`Across`], written once):
//! meet the other processes, run this process's node, leave its report,
//! and on node 0 gather every report. What differs ([`Crossing`]) is how a
//! transport meets the others, what a failed node does (a shared-memory
//! node tells the others and returns; an MPI rank aborts the job, since
//! its peers may wait for it inside the library), and how a report
//! travels. The launchers that start the processes are in [`launch`].

pub mod launch;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(not(feature = "mpi"))]
#[path = "no_mpi.rs"]
mod mpi;
mod shm;

pub use self::mpi::MpiEnv;
pub use shm::{NodeEnv, ENV_FD, ENV_NODE, ENV_NODES};

use crate::config::RtConfig;
use crate::runtime::{run_nodes, RtError, RtOutput};
use crate::stats::{RtStats, ThreadTimes};
use crate::transport::Transport;
use finegrain_core::{AmError, HandlerTable, Platform, Ran, Workload};
use std::future::Future;

/// What a transport between processes adds to a run: meeting the other
/// processes before it, a failure's way out, and the end-of-run exchange
/// of each node's report to node 0.
pub(crate) trait Crossing: Transport {
    /// The platform's name.
    const NAME: &'static str;
    /// What this process was started with: its node, and the run's shape
    /// as its launcher saw it.
    type Env: Copy;

    /// The node this process runs.
    fn node(env: &Self::Env) -> u32;

    /// Checks `env` against the configuration and meets the other
    /// processes: the place the transport opens on.
    fn connect(config: &RtConfig, env: Self::Env) -> Result<Self::Place, RtError>;

    /// This process's run failed with `e` (its own failure, or news of
    /// another's): the others learn of it, and the run returns what this
    /// gives (an MPI rank does not return: it ends the job).
    fn failed(place: &Self::Place, e: RtError) -> RtError;

    /// Node 0 failed after the exchange (a report it could not read, a
    /// wrong answer): what the run returns.
    fn failed_after(e: RtError) -> RtError {
        e
    }

    /// Leaves this node's `report` for node 0 (node 0's own too, where
    /// the transport needs to see that a node has finished).
    fn leave_report(place: &Self::Place, config: &RtConfig, report: &[u8]) -> Result<(), RtError>;

    /// Node 0: node `n`'s report, once it has left it.
    fn take_report(place: &Self::Place, config: &RtConfig, n: u32) -> Result<Vec<u8>, RtError>;

    /// This node's part of a run outside the [`Workload`] interface has
    /// ended, with nothing for node 0.
    fn done(_place: &Self::Place) -> Result<(), RtError> {
        Ok(())
    }
}

/// The process platform: this process's node of a run whose nodes are
/// processes joined by transport `T`. Every process runs the same
/// program; node 0's [`Platform::run`] returns every node's outputs and
/// the whole run's statistics, the others their own.
pub(crate) struct Across<'c, T: Crossing> {
    pub(crate) config: &'c RtConfig,
    pub(crate) env: T::Env,
}

impl<T: Crossing> Across<'_, T> {
    /// Checks the configuration and meets the other processes.
    fn connect(&self) -> Result<T::Place, RtError> {
        self.config.validate()?;
        T::connect(self.config, self.env)
    }

    /// Runs this process's node over `place`.
    fn run_here<R, F, Fut>(&self, place: &T::Place, handlers: &HandlerTable, spawn: F) -> Result<RtOutput<R>, RtError>
    where
        R: Send,
        F: Fn(crate::RtProc) -> Fut + Sync,
        Fut: Future<Output = Result<R, AmError>>,
    {
        let node = T::node(&self.env);
        run_nodes::<_, T, _, _>(self.config, handlers, place, node..node + 1, spawn).map_err(|e| T::failed(place, e))
    }

    /// Runs `spawn`'s future on each compute thread of this process's node
    /// (as [`crate::run`] does for a whole cluster in one process) and
    /// returns this node's results only: for programs outside the
    /// [`Workload`] interface, such as the runtime's own benchmarks.
    pub(crate) fn run_node<R, F, Fut>(&self, handlers: &HandlerTable, spawn: F) -> Result<RtOutput<R>, RtError>
    where
        R: Send,
        F: Fn(crate::RtProc) -> Fut + Sync,
        Fut: Future<Output = Result<R, AmError>>,
    {
        let place = self.connect()?;
        let out = self.run_here(&place, handlers, spawn)?;
        T::done(&place)?;
        Ok(out)
    }
}

impl<T: Crossing> Platform for Across<'_, T> {
    type Stats = RtStats;
    type Error = RtError;

    fn name(&self) -> &'static str {
        T::NAME
    }

    fn run<W: Workload>(&self, workload: &W) -> Result<Ran<W::Output, RtStats>, RtError> {
        workload.across_processes()?;
        let place = self.connect()?;
        let out = self.run_here(&place, workload.handlers(), |p| workload.thread(p))?;
        let report = Report::of(workload, &out).map_err(|e| T::failed_after(RtError::Setup(e)))?;
        T::leave_report(&place, self.config, &report)?;
        if T::node(&self.env) != 0 {
            return Ok(Ran { outputs: out.results, stats: out.stats });
        }
        gather::<T, W>(&place, self.config, workload, out).map_err(T::failed_after)
    }
}

/// Node 0: every other node's report, then the whole run checked.
fn gather<T: Crossing, W: Workload>(
    place: &T::Place,
    config: &RtConfig,
    workload: &W,
    own: RtOutput<W::Output>,
) -> Result<Ran<W::Output, RtStats>, RtError> {
    let mut outputs = own.results;
    let mut stats = own.stats;
    for n in 1..config.run.topology.nodes {
        let report = Report::read(&T::take_report(place, config, n)?).map_err(RtError::Setup)?;
        workload.absorb(&report.tally)?;
        for v in report.outputs {
            outputs.push(serde_json::from_value(v).map_err(|e| RtError::Setup(format!("node {n}'s outputs: {e}")))?);
        }
        stats = merge(stats, report.stats);
    }
    workload.check(&outputs)?;
    Ok(Ran { outputs, stats })
}

/// Sums two processes' statistics (wall time: the longer).
fn merge(a: RtStats, b: RtStats) -> RtStats {
    let mut threads = a.threads;
    threads.extend(b.threads);
    RtStats {
        wall_ns: a.wall_ns.max(b.wall_ns),
        requests: a.requests + b.requests,
        messages: a.messages + b.messages,
        spilled: a.spilled + b.spilled,
        handlers: a.handlers + b.handlers,
        interrupts: a.interrupts + b.interrupts,
        threads,
    }
}

/// What a node process leaves for node 0.
struct Report {
    outputs: Vec<serde_json::Value>,
    tally: Vec<u64>,
    stats: RtStats,
}

impl Report {
    fn of<W: Workload>(workload: &W, out: &RtOutput<W::Output>) -> Result<Vec<u8>, String> {
        let outputs =
            out.results.iter().map(serde_json::to_value).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
        let s = &out.stats;
        let threads: Vec<Vec<u64>> = s.threads.iter().map(thread_words).collect();
        let totals = [s.wall_ns, s.requests, s.messages, s.spilled, s.handlers, s.interrupts];
        serde_json::to_vec(&(outputs, workload.tally(), totals, threads)).map_err(|e| e.to_string())
    }

    fn read(bytes: &[u8]) -> Result<Report, String> {
        type Wire = (Vec<serde_json::Value>, Vec<u64>, [u64; 6], Vec<Vec<u64>>);
        let (outputs, tally, t, threads): Wire =
            serde_json::from_slice(bytes).map_err(|e| format!("a node's report is malformed: {e}"))?;
        let threads =
            threads.iter().map(|w| thread_of(w)).collect::<Option<Vec<_>>>().ok_or("a node's report is malformed")?;
        let stats = RtStats {
            wall_ns: t[0],
            requests: t[1],
            messages: t[2],
            spilled: t[3],
            handlers: t[4],
            interrupts: t[5],
            threads,
        };
        Ok(Report { outputs, tally, stats })
    }
}

fn thread_words(t: &ThreadTimes) -> Vec<u64> {
    vec![
        t.node as u64,
        t.thread as u64,
        (t.role == "protocol") as u64,
        t.wall_ns,
        t.compute_ns,
        t.handler_ns,
        t.interrupt_ns,
        t.other_ns,
        t.wait_ns,
        t.idle_polling_ns,
        t.handlers,
        t.interrupts,
        t.sent,
        t.requests,
        t.spilled,
        t.work_chunks,
        t.parks,
        t.parks_woken,
    ]
}

fn thread_of(w: &[u64]) -> Option<ThreadTimes> {
    let w: &[u64; 18] = w.try_into().ok()?;
    Some(ThreadTimes {
        node: w[0] as u32,
        thread: w[1] as u32,
        role: if w[2] == 1 { "protocol" } else { "compute" },
        wall_ns: w[3],
        compute_ns: w[4],
        handler_ns: w[5],
        interrupt_ns: w[6],
        other_ns: w[7],
        wait_ns: w[8],
        idle_polling_ns: w[9],
        handlers: w[10],
        interrupts: w[11],
        sent: w[12],
        requests: w[13],
        spilled: w[14],
        work_chunks: w[15],
        parks: w[16],
        parks_woken: w[17],
    })
}

impl MpiEnv {
    /// Whether this build has MPI (the `mpi` feature).
    pub const BUILT_IN: bool = cfg!(feature = "mpi");

    /// The ranks of the MPI job that started this process, if an MPI
    /// launcher did (Open MPI's `mpirun`, or a PMI launcher such as
    /// Slurm's `srun`, says so in the environment); None otherwise.
    pub fn launched_ranks() -> Option<u32> {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"].iter().find_map(|v| std::env::var(v).ok()?.parse().ok())
    }
}
