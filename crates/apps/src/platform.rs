//! Where a [`WorkloadSpec`](crate::WorkloadSpec) runs: any [`Platform`]
//! that also says what machine the workload is sized for and how its
//! statistics sum up into a [`RunSummary`]. The simulator ([`Sim`]) and
//! the native runtime on any of its transports ([`Threads`]) are the two;
//! above them nothing forks by platform.

use crate::fetch_add::{home_measures, HomeMeasures};
use finegrain_core::{
    Clock, MachineConfig, Platform, Policy, Ran, Relinquish, RunConfig, RunSummary, Topology, Workload,
};
use finegrain_rt::{Placement, RtConfig, RtError, RtStats};
use finegrain_sim::{RunStats, SimConfig, SimError, Simulator};

/// A platform a workload spec runs on.
pub trait Target: Platform + Sized {
    /// The machine the workload sizes itself from (its blocks, segments
    /// and protocol tables).
    fn machine(&self) -> &MachineConfig;
    /// The run's topology, policy, dispatch and seed.
    fn run_config(&self) -> &RunConfig;
    /// Checks the platform's own configuration, before a workload sizes
    /// itself from it.
    fn validate(&self) -> Result<(), Self::Error>;
    /// Bytes of each compute thread's private segment.
    fn segment_bytes(&self) -> u64;
    /// Bytes of a node's protocol table where it is smaller than the
    /// simulated machine's (the native runtime's); None where it is the
    /// machine's own, which the workloads check themselves.
    fn native_table_bytes(&self) -> Option<u64> {
        None
    }
    /// Whether this process holds the whole run's results (a node process
    /// of `shm` or `mpi` other than node 0's leaves them to it).
    fn has_results(&self) -> bool {
        true
    }
    /// Whether the nodes run in separate processes.
    fn across_processes(&self) -> bool {
        false
    }
    /// The run's statistics as every platform reports them.
    fn summary(&self, stats: &Self::Stats) -> RunSummary;
    /// How long node 0's first compute thread ran, on the platform's
    /// clock (the requester of an idle-machine round trip).
    fn first_thread_time(&self, stats: &Self::Stats) -> f64;
    /// The same platform and machine as an idle cluster of 2 nodes x 2
    /// processors under Fixed, where Lmin is measured, with the round
    /// trips to average over.
    fn idle_pair(&self) -> (Self, u64);
    /// A fetch&add home's measures, which only the simulator's per-node
    /// statistics give.
    fn home_measures(&self, _stats: &Self::Stats) -> Option<HomeMeasures> {
        None
    }
}

/// The simulated machine a [`SimConfig`] describes.
#[derive(Clone, Debug)]
pub struct Sim(pub SimConfig);

impl Sim {
    /// An idle cluster of `machine` (2 nodes x 2 processors under Fixed,
    /// every other run setting the simulator's default): where Lmin is
    /// measured.
    pub fn idle(machine: &MachineConfig, seed: u64) -> Sim {
        let topology = Topology { nodes: 2, procs_per_node: 2 };
        Sim(SimConfig::new(machine.clone(), topology, Policy::Fixed { protocol_procs: 1 }, seed))
    }
}

impl Platform for Sim {
    type Stats = RunStats;
    type Error = SimError;

    fn name(&self) -> &'static str {
        "sim"
    }

    fn run<W: Workload>(&self, workload: &W) -> Result<Ran<W::Output, RunStats>, SimError> {
        Simulator { config: &self.0 }.run(workload)
    }
}

impl Target for Sim {
    fn machine(&self) -> &MachineConfig {
        &self.0.machine
    }

    fn run_config(&self) -> &RunConfig {
        &self.0.run
    }

    fn validate(&self) -> Result<(), SimError> {
        Ok(self.0.validate()?)
    }

    fn segment_bytes(&self) -> u64 {
        self.0.machine.segment_bytes()
    }

    fn summary(&self, s: &RunStats) -> RunSummary {
        RunSummary {
            platform: "sim",
            clock: Clock::Cycles { mhz: self.0.machine.processor.mhz },
            time: s.sim_cycles,
            requests: s.requests,
            messages: s.messages,
            handlers: s.handlers,
            interrupts: s.interrupts,
            measured_u: Some(s.measured_u),
            pp_occupancy: Some(s.pp_occupancy),
            mean_round_trip: Some(s.request_latency.mean_cycles),
            events: Some(s.events),
            spilled: None,
        }
    }

    /// The run's length: the requester finishes last.
    fn first_thread_time(&self, s: &RunStats) -> f64 {
        s.sim_cycles as f64
    }

    /// A fresh configuration of the machine with the run's seed (every
    /// other run setting the simulator's default), 400 round trips: the
    /// simulated machine is deterministic.
    fn idle_pair(&self) -> (Sim, u64) {
        (Sim::idle(&self.0.machine, self.0.run.seed), 400)
    }

    fn home_measures(&self, s: &RunStats) -> Option<HomeMeasures> {
        Some(home_measures(&self.0.machine, s))
    }
}

/// The native runtime on one of its transports, with the machine (a
/// preset) the workloads size their segments and tables from.
#[derive(Clone)]
pub struct Threads<'a> {
    pub on: Placement<'a>,
    pub config: RtConfig,
    pub machine: MachineConfig,
}

impl Platform for Threads<'_> {
    type Stats = RtStats;
    type Error = RtError;

    fn name(&self) -> &'static str {
        self.on.name()
    }

    fn run<W: Workload>(&self, workload: &W) -> Result<Ran<W::Output, RtStats>, RtError> {
        self.on.run(&self.config, workload)
    }
}

impl Target for Threads<'_> {
    fn machine(&self) -> &MachineConfig {
        &self.machine
    }

    fn run_config(&self) -> &RunConfig {
        &self.config.run
    }

    fn validate(&self) -> Result<(), RtError> {
        self.machine.validate()?;
        Ok(self.config.validate()?)
    }

    fn segment_bytes(&self) -> u64 {
        self.config.segment_bytes as u64
    }

    fn native_table_bytes(&self) -> Option<u64> {
        Some(self.config.protocol_table_bytes() as u64)
    }

    fn has_results(&self) -> bool {
        self.on.has_results()
    }

    fn across_processes(&self) -> bool {
        self.on.across_processes()
    }

    fn summary(&self, s: &RtStats) -> RunSummary {
        let compute: Vec<f64> = s
            .threads
            .iter()
            .filter(|t| t.role == "compute")
            .map(|t| t.compute_ns as f64 / t.wall_ns.max(1) as f64)
            .collect();
        RunSummary {
            platform: self.on.name(),
            clock: Clock::Nanoseconds,
            time: s.wall_ns,
            requests: s.requests,
            messages: s.messages,
            handlers: s.handlers,
            interrupts: s.interrupts,
            measured_u: (!compute.is_empty()).then(|| compute.iter().sum::<f64>() / compute.len() as f64),
            pp_occupancy: None,
            mean_round_trip: None,
            events: None,
            spilled: Some(s.spilled),
        }
    }

    /// That thread's own wall time (the run's includes starting and
    /// stopping the cluster).
    fn first_thread_time(&self, s: &RtStats) -> f64 {
        let first = s.threads.iter().find(|t| t.node == 0 && t.thread == 0 && t.role == "compute");
        first.map_or(s.wall_ns, |t| t.wall_ns) as f64
    }

    /// Threads of this process with the run's runtime settings, 20,000
    /// round trips to average the clock's noise out. A dedicated protocol
    /// thread never gives the role up: the run's own rule (hand-off, say,
    /// which only Floating takes natively) is moot here.
    fn idle_pair(&self) -> (Self, u64) {
        let mut pair = Threads { on: Placement::Native, ..self.clone() };
        pair.config.run.topology = Topology { nodes: 2, procs_per_node: 2 };
        pair.config.run.policy = Policy::Fixed { protocol_procs: 1 };
        pair.config.run.relinquish = Relinquish::Eager;
        (pair, 20_000)
    }
}
