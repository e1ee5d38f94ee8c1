//! Nodes as MPI ranks (platform `mpi`): each rank runs its node's threads
//! over the MPI transport, then sends its results to rank 0, which
//! gathers and checks them.
//!
//! A rank whose run fails ends the whole job: it prints its error (one
//! line) and aborts (`MPI_Abort`), rather than return and finalise MPI,
//! which waits for every rank, one of which may be stopped or stuck. The
//! end-of-run exchange of reports is under the progress timeout too.
//!
//! MPI thread level: `MPI_THREAD_MULTIPLE` for nodes of several threads,
//! since any thread of a rank may send while another progresses the
//! receives; `MPI_THREAD_SERIALIZED` for nodes of one thread. Asked for and
//! checked at start-up ([`MpiEnv::init`]).

use crate::config::RtConfig;
use crate::processes::{merge, Report};
use crate::runtime::{run_nodes, RtError, RtOutput};
use crate::stats::RtStats;
use crate::transport::mpi::{self as mpi_transport, job, Mpi, MpiPlace, TAG_REPORT};
use finegrain_core::{Platform, Ran, Workload};
use mpi::ffi;
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::topology::Communicator;
use mpi::Threading;
use std::time::Duration;

/// The tag of [`MpiEnv::send_bytes_to`]'s messages: apart from the
/// transport's active messages, control words and end-of-run reports.
const TAG_BYTES: i32 = 14;

/// This process's MPI rank, initialised with the thread level the
/// transport needs. MPI is finalised when it is dropped.
pub struct MpiEnv {
    _universe: mpi::environment::Universe,
    pub rank: u32,
    pub ranks: u32,
    /// MPI_THREAD_MULTIPLE was asked for (and provided).
    pub multiple: bool,
}

impl MpiEnv {
    /// Initialises MPI for nodes of `threads_per_node` threads: with one
    /// thread per node only that thread calls MPI while the run goes on
    /// (the process's other threads before and after it), so
    /// `MPI_THREAD_SERIALIZED` will do, and spares every call the library's
    /// locks; with more, any thread may send while another receives, which
    /// takes `MPI_THREAD_MULTIPLE`. A library that provides less than asked
    /// is refused.
    pub fn init(threads_per_node: u32) -> Result<MpiEnv, String> {
        let want = if threads_per_node == 1 { Threading::Serialized } else { Threading::Multiple };
        let (universe, level) =
            mpi::initialize_with_threading(want).ok_or("MPI was already initialised in this process")?;
        if level < want {
            return Err(format!(
                "the MPI library provides thread level {level:?}; finegrain's MPI transport needs {} for nodes of \
                 {threads_per_node} threads (any thread of a rank sends while another receives): use an MPI built \
                 with thread support",
                if want == Threading::Multiple { "MPI_THREAD_MULTIPLE" } else { "MPI_THREAD_SERIALIZED" }
            ));
        }
        job::start_guard()?;
        let world = universe.world();
        Ok(MpiEnv {
            rank: world.rank() as u32,
            ranks: world.size() as u32,
            multiple: want == Threading::Multiple,
            _universe: universe,
        })
    }

    /// Sends `bytes` to `rank`, under a tag of their own (messages between
    /// ranks that are not nodes of a run: a study's workers and the rank
    /// that hands them runs). Returns once the buffer may be reused.
    pub fn send_bytes_to(&self, rank: u32, bytes: &[u8]) {
        self._universe.world().process_at_rank(rank as i32).send_with_tag(bytes, TAG_BYTES);
    }

    /// A message [`MpiEnv::send_bytes_to`] sent here, from any rank, if
    /// one has arrived: its sender and its bytes. Never waits, so a rank
    /// that has other work (a study's first rank runs runs too) can poll.
    pub fn try_receive_bytes(&self) -> Option<(u32, Vec<u8>)> {
        let world = self._universe.world();
        let matched = world.any_process().immediate_matched_probe_with_tag(TAG_BYTES)?;
        let (bytes, status) = matched.matched_receive_vec::<u8>();
        Some((status.source_rank() as u32, bytes))
    }

    /// Waits for a message [`MpiEnv::send_bytes_to`] sent here from `rank`.
    pub fn receive_bytes_from(&self, rank: u32) -> Vec<u8> {
        self._universe.world().process_at_rank(rank as i32).receive_vec_with_tag::<u8>(TAG_BYTES).0
    }

    /// Refuses a run whose nodes have more threads than MPI was set up for.
    fn check_level(&self, threads_per_node: u32) -> Result<(), RtError> {
        if threads_per_node > 1 && !self.multiple {
            return Err(RtError::Setup(format!(
                "MPI was initialised for one thread per node, and this run has {threads_per_node}: initialise with \
                 MpiEnv::init({threads_per_node}) (MPI_THREAD_MULTIPLE)"
            )));
        }
        Ok(())
    }
}

/// Runs workloads with each node an MPI rank. Every rank runs the same
/// program; rank 0's [`Platform::run`] returns every node's outputs and
/// the whole run's statistics, the others their own.
pub struct MpiPlatform<'c> {
    pub config: &'c RtConfig,
    pub env: &'c MpiEnv,
}

impl MpiPlatform<'_> {
    /// Runs `spawn`'s future on each compute thread of this rank's node and
    /// returns this rank's results only: for programs outside the
    /// [`Workload`] interface, such as the runtime's own benchmarks.
    pub fn run_node<T, F, Fut>(&self, handlers: &finegrain_core::HandlerTable, spawn: F) -> Result<RtOutput<T>, RtError>
    where
        T: Send,
        F: Fn(crate::RtProc) -> Fut + Sync,
        Fut: std::future::Future<Output = Result<T, finegrain_core::AmError>>,
    {
        self.config.validate()?;
        self.check_ranks()?;
        self.env.check_level(self.config.threads_per_node())?;
        let (rank, ranks, multiple) = (self.env.rank, self.env.ranks, self.env.multiple);
        let place = MpiPlace { rank, ranks, multiple };
        match run_nodes::<_, Mpi, _, _>(self.config, handlers, &place, rank..rank + 1, spawn) {
            Ok(out) => Ok(out),
            Err(e) => job::abort(&e.to_string()),
        }
    }

    /// One rank per node of the configuration.
    fn check_ranks(&self) -> Result<(), RtError> {
        let (ranks, nodes) = (self.env.ranks, self.config.run.topology.nodes);
        if ranks != nodes {
            return Err(RtError::Setup(format!(
                "MPI started {ranks} ranks but the configuration has {nodes} nodes: run with mpirun -np {nodes}"
            )));
        }
        Ok(())
    }
}

impl Platform for MpiPlatform<'_> {
    type Stats = RtStats;
    type Error = RtError;

    fn name(&self) -> &'static str {
        "mpi"
    }

    fn run<W: Workload>(&self, workload: &W) -> Result<Ran<W::Output, RtStats>, RtError> {
        workload.across_processes()?;
        self.config.validate()?;
        self.check_ranks()?;
        self.env.check_level(self.config.threads_per_node())?;
        let (rank, ranks, multiple) = (self.env.rank, self.env.ranks, self.env.multiple);
        let place = MpiPlace { rank, ranks, multiple };
        let ran =
            run_nodes::<_, Mpi, _, _>(self.config, workload.handlers(), &place, rank..rank + 1, |p| workload.thread(p));
        // The others may wait for this rank inside MPI, or this rank for
        // one of them: the job ends here (the abort tells every rank).
        let out = ran.unwrap_or_else(|e| job::abort(&e.to_string()));
        let report = Report::of(workload, &out).unwrap_or_else(|e| job::abort(&e));
        let timeout = Duration::from_millis(self.config.progress_timeout_ms);
        if rank != 0 {
            job::arm(timeout, no_progress(0, &format!("take node {rank}'s report"), self.config.progress_timeout_ms));
            mpi_transport::send_now(&[report.len() as u64], 0, TAG_REPORT);
            send_bytes(&report, 0);
            job::disarm();
            return Ok(Ran { outputs: out.results, stats: out.stats });
        }
        let ran = gather(workload, out, ranks, self.config.progress_timeout_ms);
        Ok(ran.unwrap_or_else(|e| job::abort(&e.to_string())))
    }
}

/// Why the job ends when rank `peer` did not do `what` within the
/// progress timeout of `ms` milliseconds.
fn no_progress(peer: u32, what: &str, ms: u64) -> String {
    format!(
        "node {peer} did not {what} within the progress timeout of {ms} ms after the run: node {peer} makes no \
         progress (stopped, or stuck in a handler)"
    )
}

fn send_bytes(b: &[u8], to: u32) {
    // SAFETY: the buffer is live for the whole blocking call.
    unsafe {
        ffi::MPI_Send(
            b.as_ptr().cast(),
            b.len() as i32,
            ffi::RSMPI_UINT8_T,
            to as i32,
            TAG_REPORT,
            ffi::RSMPI_COMM_WORLD,
        )
    };
}

fn recv_bytes(from: u32, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    // SAFETY: the buffer holds `len` bytes for the whole blocking call.
    unsafe {
        ffi::MPI_Recv(
            b.as_mut_ptr().cast(),
            len as i32,
            ffi::RSMPI_UINT8_T,
            from as i32,
            TAG_REPORT,
            ffi::RSMPI_COMM_WORLD,
            ffi::RSMPI_STATUS_IGNORE,
        )
    };
    b
}

/// Rank 0: every other rank's report, then the whole run checked.
/// Each wait for a rank's report is under the progress timeout (`ms`).
fn gather<W: Workload>(
    workload: &W,
    own: RtOutput<W::Output>,
    ranks: u32,
    ms: u64,
) -> Result<Ran<W::Output, RtStats>, RtError> {
    let mut outputs = own.results;
    let mut stats = own.stats;
    for r in 1..ranks {
        job::arm(Duration::from_millis(ms), no_progress(r, "send its report", ms));
        let len = u64::from_le_bytes(recv_bytes(r, 8).try_into().unwrap_or([0; 8])) as usize;
        let bytes = recv_bytes(r, len);
        job::disarm();
        let report = Report::read(&bytes).map_err(RtError::Setup)?;
        workload.absorb(&report.tally)?;
        for v in report.outputs {
            outputs.push(serde_json::from_value(v).map_err(|e| RtError::Setup(format!("rank {r}'s outputs: {e}")))?);
        }
        stats = merge(stats, report.stats);
    }
    workload.check(&outputs)?;
    Ok(Ran { outputs, stats })
}
