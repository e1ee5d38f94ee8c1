//! Where a run's nodes are: threads of this process, this process as one
//! node of a shared-memory run, or this process as one MPI rank. Found
//! from the environment in one call ([`Placement::detect`]), which also
//! says when this process must start the run's processes instead.

use crate::config::RtConfig;
use crate::processes::launch::{self, Launched};
use crate::processes::{Across, MpiEnv, NodeEnv};
use crate::runtime::{RtError, RtOutput};
use crate::stats::RtStats;
use crate::transport::shm::Shm;
use crate::Native;
use finegrain_core::{AmError, HandlerTable, Platform, Ran, Workload};
use std::ffi::OsString;
use std::future::Future;

/// Where a run on the native runtime goes.
#[derive(Clone, Copy)]
pub enum Placement<'a> {
    /// Every node a group of threads of this process.
    Native,
    /// This process is one node of a shared-memory run (its launcher told
    /// it which).
    Shm(NodeEnv),
    /// This process is one MPI rank, one node of the run.
    Mpi(&'a MpiEnv),
}

/// What this process does for a run on one of the runtime's platforms.
pub enum Start<'a> {
    /// It runs its share of the run's nodes, placed so.
    Here(Placement<'a>),
    /// Nothing started it as a node: it starts the run's processes, each
    /// running this same command.
    Launch(Launch),
}

/// How the processes of a run are started on this host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// By the runtime's own launcher ([`launch::launch`]).
    Shm,
    /// As the ranks of a one-host MPI job ([`launch::mpirun`]).
    Mpi,
}

impl Launch {
    /// Starts `nodes` processes of this same command line and waits for
    /// them.
    pub fn run(self, nodes: u32) -> Result<Launched, String> {
        let program = std::env::current_exe().map_err(|e| format!("finding this program to launch it: {e}"))?;
        let args: Vec<OsString> = std::env::args_os().skip(1).collect();
        match self {
            Launch::Shm => launch::launch(nodes, program.as_os_str(), &args),
            Launch::Mpi => launch::mpirun(nodes, program.as_os_str(), &args),
        }
    }
}

impl<'a> Placement<'a> {
    /// The platforms the runtime runs on, as an error lists them.
    pub const NAMES: &'static str = if MpiEnv::BUILT_IN {
        "native, shm, mpi"
    } else {
        "native, shm (mpi: not built in; build with the mpi feature)"
    };

    /// The platform `name` if this build of the runtime runs it.
    pub fn named(name: &str) -> Option<&'static str> {
        match name {
            "native" => Some("native"),
            "shm" => Some("shm"),
            "mpi" if MpiEnv::BUILT_IN => Some("mpi"),
            _ => None,
        }
    }

    /// Where this process's part of a run on `platform` is, from its
    /// environment: on `shm`, the node its launcher gave it; on `mpi`, its
    /// rank, with MPI initialised (in `mpi`, which must outlive the run)
    /// at the thread level nodes of `threads_per_node()` threads need
    /// (asked only there). Without a launcher around it,
    /// [`Start::Launch`]. None for a platform that is not the runtime's
    /// ([`Placement::named`]); the caller says what it allows, with
    /// [`Placement::NAMES`].
    pub fn detect(
        platform: &str,
        threads_per_node: impl FnOnce() -> Result<u32, String>,
        mpi: &'a mut Option<MpiEnv>,
    ) -> Result<Option<Start<'a>>, String> {
        let start = match Placement::named(platform) {
            None => return Ok(None),
            Some("native") => Start::Here(Placement::Native),
            Some("shm") => match NodeEnv::from_env()? {
                Some(env) => Start::Here(Placement::Shm(env)),
                None => Start::Launch(Launch::Shm),
            },
            Some(_) => match MpiEnv::launched_ranks() {
                Some(_) => Start::Here(Placement::Mpi(mpi.insert(MpiEnv::init(threads_per_node()?)?))),
                None => Start::Launch(Launch::Mpi),
            },
        };
        Ok(Some(start))
    }

    pub fn name(self) -> &'static str {
        match self {
            Placement::Native => "native",
            Placement::Shm(_) => "shm",
            Placement::Mpi(_) => "mpi",
        }
    }

    /// Whether this process has the whole run's results (the others
    /// leave theirs to node 0's process).
    pub fn has_results(self) -> bool {
        match self {
            Placement::Native => true,
            Placement::Shm(env) => env.node == 0,
            Placement::Mpi(env) => env.rank == 0,
        }
    }

    /// Whether the nodes run in separate processes.
    pub fn across_processes(self) -> bool {
        !matches!(self, Placement::Native)
    }

    /// Runs `workload` here, as `config` lays it out, and checks its
    /// answer (in the process that has the results).
    pub fn run<W: Workload>(self, config: &RtConfig, workload: &W) -> Result<Ran<W::Output, RtStats>, RtError> {
        match self {
            Placement::Native => Native { config }.run(workload),
            Placement::Shm(env) => Across::<Shm> { config, env }.run(workload),
            Placement::Mpi(env) => env.run(config, workload),
        }
    }

    /// Runs `spawn`'s future on each compute thread of this process's
    /// nodes and returns their results (every node's, natively; this
    /// node's only, across processes): for programs outside the
    /// [`Workload`] interface, such as the runtime's own benchmarks.
    pub fn run_node<R, F, Fut>(
        self,
        config: &RtConfig,
        handlers: &HandlerTable,
        spawn: F,
    ) -> Result<RtOutput<R>, RtError>
    where
        R: Send,
        F: Fn(crate::RtProc) -> Fut + Sync,
        Fut: Future<Output = Result<R, AmError>>,
    {
        match self {
            Placement::Native => crate::run(config, handlers, spawn),
            Placement::Shm(env) => Across::<Shm> { config, env }.run_node(handlers, spawn),
            Placement::Mpi(env) => env.run_node(config, handlers, spawn),
        }
    }
}
