//! finegrain-apps: workloads written once against the [`Proc`] API, so the
//! same code runs in the simulator and on the native runtime.
//!
//! [`WorkloadSpec`] names one workload with its configuration, as run
//! records and configuration files hold it.
//!
//! [`Proc`]: finegrain_core::Proc

#![forbid(unsafe_code)]

pub mod coproc_primitives;
pub mod dsm;
pub mod fetch_add;
pub mod fit;
pub mod micro;
pub mod serving;
pub mod splitc;

use finegrain_core::{Platform, Ran, Workload};
use finegrain_rt::{Native, NodeEnv, RtConfig, RtError, RtStats, ShmPlatform};
use finegrain_sim::{RunStats, SimConfig, SimError};
use serde::{Deserialize, Serialize};

/// One workload and its configuration, tagged by name in records:
/// `{"name": "micro", "protocol": "null", ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum WorkloadSpec {
    /// The scheduling paper's microbenchmark (null or fetch-block).
    Micro(micro::MicroConfig),
    /// The PDQ paper's fetch&add microbenchmark.
    FetchAdd(fetch_add::FetchAddConfig),
    /// A Split-C program (the co-processor paper's).
    Splitc(splitc::spec::ProgramSpec),
    /// A shared-memory program on the fine-grain DSM (the PDQ paper's).
    Dsm(dsm::spec::DsmSpec),
}

/// Where a run on the native runtime goes: threads of this process, or
/// this process's node of a cluster of processes.
#[derive(Clone, Copy)]
pub enum RtPlatform<'a> {
    /// Every node a group of threads of this process.
    Native,
    /// This process is one node of a shared-memory run (`finegrain
    /// launch` told it which).
    Shm(NodeEnv),
    /// This process is one MPI rank, one node of the run.
    #[cfg(feature = "mpi")]
    Mpi(&'a finegrain_rt::MpiEnv),
    #[doc(hidden)]
    #[cfg(not(feature = "mpi"))]
    _Lifetime(std::marker::PhantomData<&'a ()>),
}

impl RtPlatform<'_> {
    pub fn name(self) -> &'static str {
        match self {
            RtPlatform::Native => "native",
            RtPlatform::Shm(_) => "shm",
            #[cfg(feature = "mpi")]
            RtPlatform::Mpi(_) => "mpi",
            #[cfg(not(feature = "mpi"))]
            RtPlatform::_Lifetime(_) => "native",
        }
    }

    /// Whether this process has the whole run's results (the others
    /// leave theirs to node 0's process).
    pub fn has_results(self) -> bool {
        match self {
            RtPlatform::Shm(env) => env.node == 0,
            #[cfg(feature = "mpi")]
            RtPlatform::Mpi(env) => env.rank == 0,
            _ => true,
        }
    }

    /// Runs `w` there and checks its answer (in the process that has the
    /// results).
    pub fn run<W: Workload>(self, rt: &RtConfig, w: &W) -> Result<Ran<W::Output, RtStats>, RtError> {
        match self {
            RtPlatform::Shm(env) => ShmPlatform { config: rt, env }.run(w),
            #[cfg(feature = "mpi")]
            RtPlatform::Mpi(env) => finegrain_rt::MpiPlatform { config: rt, env }.run(w),
            _ => Native { config: rt }.run(w),
        }
    }

    /// Whether the workload runs in separate processes here.
    pub fn across_processes(self) -> bool {
        !matches!(self, RtPlatform::Native)
    }
}

/// What a simulated workload run gives: the statistics, and the
/// workload's own measures derived from them (a fetch&add run's home
/// measures), as JSON.
pub struct Simulated {
    pub stats: RunStats,
    pub measures: Option<serde_json::Value>,
}

impl WorkloadSpec {
    /// Roughly how many seconds of one core simulating it takes on
    /// `config`: an estimate from the input's size, for running a study's
    /// long runs first and saying how long the rest will take, never for a
    /// result. Messages simulate at about a million a second; the DSM
    /// programs' figures were measured at their paper inputs on 64
    /// processors (see [`dsm::spec::planned_seconds`]).
    pub fn planned_seconds(&self, config: &finegrain_sim::SimConfig) -> f64 {
        const MESSAGES_PER_SECOND: f64 = 1e6;
        let topology = config.run.topology;
        let compute = config.run.policy.compute_procs(topology.procs_per_node) as f64;
        match self {
            WorkloadSpec::Micro(m) => 2.0 * (m.requests_per_node * topology.nodes as u64) as f64 / MESSAGES_PER_SECOND,
            WorkloadSpec::FetchAdd(f) => {
                2.0 * f.requests_per_thread as f64 * compute * topology.nodes as f64 / MESSAGES_PER_SECOND
            }
            // The co-processor study's programs take a second or less each.
            WorkloadSpec::Splitc(_) => 0.5,
            WorkloadSpec::Dsm(d) => dsm::spec::planned_seconds(d, config),
        }
    }

    /// The workload's name as records tag it.
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadSpec::Micro(_) => "micro",
            WorkloadSpec::FetchAdd(_) => "fetch-add",
            WorkloadSpec::Splitc(_) => "splitc",
            WorkloadSpec::Dsm(_) => "dsm",
        }
    }

    /// Words for messages: "scheduling microbenchmark", "fetch&add".
    pub fn description(&self) -> &'static str {
        match self {
            WorkloadSpec::Micro(_) => "scheduling microbenchmark",
            WorkloadSpec::FetchAdd(_) => "fetch&add",
            WorkloadSpec::Splitc(_) => "Split-C program",
            WorkloadSpec::Dsm(_) => "shared-memory program",
        }
    }

    /// Checks the workload against the machine it would run on (the
    /// checks `simulate` makes first), without running it.
    pub fn validate(&self, config: &SimConfig) -> Result<(), SimError> {
        config.validate()?;
        if let WorkloadSpec::Splitc(p) = self {
            return Ok(p.validate(config.run.topology.nodes)?);
        }
        if let WorkloadSpec::Dsm(d) = self {
            return Ok(d.validate(&config.run)?);
        }
        micro::two_nodes_at_least(config.run.topology.nodes)?;
        match self {
            WorkloadSpec::Micro(w) => {
                w.validate()?;
                Ok(micro::block_fits(w.protocol, &config.machine)?)
            }
            WorkloadSpec::FetchAdd(w) => {
                let threads = config.run.policy.compute_procs(config.run.topology.procs_per_node);
                Ok(w.validate(&config.machine, threads)?)
            }
            WorkloadSpec::Splitc(_) | WorkloadSpec::Dsm(_) => unreachable!("checked above"),
        }
    }

    /// Requests the run answers in all (for progress, and to check a
    /// record's statistics are its run's), when the workload fixes them: a
    /// Split-C program's depend on its data.
    pub fn total_requests(&self, config: &SimConfig) -> Option<u64> {
        match self {
            WorkloadSpec::Micro(w) => Some(micro::total_requests(config, w)),
            WorkloadSpec::FetchAdd(w) => Some(fetch_add::total_requests(config, w)),
            WorkloadSpec::Splitc(_) | WorkloadSpec::Dsm(_) => None,
        }
    }

    /// Runs the workload on the simulated machine `config`.
    pub fn simulate(&self, config: &SimConfig) -> Result<Simulated, SimError> {
        let stats = match self {
            WorkloadSpec::Micro(w) => micro::simulate(config, w)?.stats,
            WorkloadSpec::FetchAdd(w) => fetch_add::simulate(config, w)?.stats,
            WorkloadSpec::Splitc(p) => {
                let (stats, measures) = p.simulate(config)?;
                let measures = serde_json::to_value(measures).expect("program measures are plain numbers");
                return Ok(Simulated { stats, measures: Some(measures) });
            }
            WorkloadSpec::Dsm(d) => {
                let (stats, measures) = d.simulate(config)?;
                let measures = serde_json::to_value(measures).expect("program measures are plain numbers");
                return Ok(Simulated { stats, measures: Some(measures) });
            }
        };
        let measures = self.measures(config, &stats);
        Ok(Simulated { stats, measures })
    }

    /// The workload's own measures of a run, from its statistics (a
    /// Split-C program's come from what its nodes returned instead).
    pub fn measures(&self, config: &SimConfig, stats: &RunStats) -> Option<serde_json::Value> {
        match self {
            WorkloadSpec::Micro(_) | WorkloadSpec::Splitc(_) | WorkloadSpec::Dsm(_) => None,
            WorkloadSpec::FetchAdd(_) => {
                let home = fetch_add::home_measures(&config.machine, stats);
                Some(serde_json::to_value(home).expect("home measures are plain numbers"))
            }
        }
    }
}
