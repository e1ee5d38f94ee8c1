//! Nodes as MPI ranks (platform `mpi`): each rank runs its node's threads
//! over the MPI transport, then sends its report to rank 0.
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

use super::{Across, Crossing};
use crate::config::RtConfig;
use crate::runtime::{RtError, RtOutput};
use crate::stats::RtStats;
use crate::transport::mpi::{self as mpi_transport, job, Mpi, MpiPlace, TAG_REPORT};
use finegrain_core::{AmError, HandlerTable, Platform, Ran, Workload};
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

    /// Runs `workload` with this rank one node of it (see
    /// [`crate::Placement::run`]).
    pub(crate) fn run<W: Workload>(&self, config: &RtConfig, workload: &W) -> Result<Ran<W::Output, RtStats>, RtError> {
        Across::<Mpi> { config, env: self.place() }.run(workload)
    }

    /// Runs `spawn` on this rank's node (see [`crate::Placement::run_node`]).
    pub(crate) fn run_node<R, F, Fut>(
        &self,
        config: &RtConfig,
        handlers: &HandlerTable,
        spawn: F,
    ) -> Result<RtOutput<R>, RtError>
    where
        R: Send,
        F: Fn(crate::RtProc) -> Fut + Sync,
        Fut: std::future::Future<Output = Result<R, AmError>>,
    {
        Across::<Mpi> { config, env: self.place() }.run_node(handlers, spawn)
    }

    fn place(&self) -> MpiPlace {
        MpiPlace { rank: self.rank, ranks: self.ranks, multiple: self.multiple }
    }
}

impl Crossing for Mpi {
    const NAME: &'static str = "mpi";
    type Env = MpiPlace;

    fn node(env: &MpiPlace) -> u32 {
        env.rank
    }

    fn connect(config: &RtConfig, env: MpiPlace) -> Result<MpiPlace, RtError> {
        check_ranks(config, env.ranks)?;
        check_level(config.threads_per_node(), env.multiple)?;
        Ok(env)
    }

    /// The others may wait for this rank inside MPI, or this rank for one
    /// of them: the job ends here (the abort tells every rank).
    fn failed(_place: &MpiPlace, e: RtError) -> RtError {
        job::abort(&e.to_string())
    }

    fn failed_after(e: RtError) -> RtError {
        job::abort(&e.to_string())
    }

    /// Under the progress timeout: rank 0 may never take it.
    fn leave_report(place: &MpiPlace, config: &RtConfig, report: &[u8]) -> Result<(), RtError> {
        let rank = place.rank;
        if rank == 0 {
            return Ok(());
        }
        let ms = config.progress_timeout_ms;
        job::arm(Duration::from_millis(ms), no_progress(0, &format!("take node {rank}'s report"), ms));
        mpi_transport::send_now(&[report.len() as u64], 0, TAG_REPORT);
        send_bytes(report, 0);
        job::disarm();
        Ok(())
    }

    /// Under the progress timeout: rank `n` may never send it.
    fn take_report(_place: &MpiPlace, config: &RtConfig, n: u32) -> Result<Vec<u8>, RtError> {
        let ms = config.progress_timeout_ms;
        job::arm(Duration::from_millis(ms), no_progress(n, "send its report", ms));
        let len = u64::from_le_bytes(recv_bytes(n, 8).try_into().unwrap_or([0; 8])) as usize;
        let bytes = recv_bytes(n, len);
        job::disarm();
        Ok(bytes)
    }
}

/// One rank per node of the configuration.
fn check_ranks(config: &RtConfig, ranks: u32) -> Result<(), RtError> {
    let nodes = config.run.topology.nodes;
    if ranks != nodes {
        return Err(RtError::Setup(format!(
            "MPI started {ranks} ranks but the configuration has {nodes} nodes: run with mpirun -np {nodes}"
        )));
    }
    Ok(())
}

/// Refuses a run whose nodes have more threads than MPI was set up for.
fn check_level(threads_per_node: u32, multiple: bool) -> Result<(), RtError> {
    if threads_per_node > 1 && !multiple {
        return Err(RtError::Setup(format!(
            "MPI was initialised for one thread per node, and this run has {threads_per_node}: initialise with \
             MpiEnv::init({threads_per_node}) (MPI_THREAD_MULTIPLE)"
        )));
    }
    Ok(())
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
