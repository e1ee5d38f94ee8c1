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
pub mod platform;
pub mod serving;
pub mod splitc;

pub use platform::{Sim, Target, Threads};

use finegrain_core::RunSummary;
use finegrain_sim::{SimConfig, SimError};
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

/// What a run of a workload spec gives on any platform: the summary every
/// platform fills, the platform's own statistics, and the workload's own
/// measures where it has them.
pub struct Outcome<S> {
    pub summary: RunSummary,
    pub stats: S,
    pub measures: Option<Measures>,
}

/// A workload's own measures of a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Measures {
    /// A fetch&add home's (from the simulator's per-node statistics).
    Home(fetch_add::HomeMeasures),
    /// A Split-C program's, over its nodes.
    Program(splitc::spec::ProgramMeasures),
    /// A shared-memory program's, over its threads.
    Dsm(dsm::spec::DsmMeasures),
}

impl Measures {
    /// As a run record holds them.
    pub fn to_json(&self) -> serde_json::Value {
        let value = match self {
            Measures::Home(m) => serde_json::to_value(m),
            Measures::Program(m) => serde_json::to_value(m),
            Measures::Dsm(m) => serde_json::to_value(m),
        };
        value.expect("measures are plain numbers and names")
    }
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

    /// Runs the workload on `on` and checks its answer (in the process
    /// that holds the results).
    pub fn run<P: Target>(&self, on: &P) -> Result<Outcome<P::Stats>, P::Error> {
        let (stats, measures) = match self {
            WorkloadSpec::Micro(w) => (micro::run(on, w)?.stats, None),
            WorkloadSpec::FetchAdd(w) => {
                let stats = fetch_add::run(on, w)?.stats;
                let home = on.home_measures(&stats).map(Measures::Home);
                (stats, home)
            }
            WorkloadSpec::Splitc(p) => {
                let (stats, m) = p.run(on)?;
                (stats, Some(Measures::Program(m)))
            }
            WorkloadSpec::Dsm(d) => {
                let (stats, m) = d.run(on)?;
                (stats, Some(Measures::Dsm(m)))
            }
        };
        Ok(Outcome { summary: on.summary(&stats), stats, measures })
    }
}
