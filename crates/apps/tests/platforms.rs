//! One workload spec, one call, any platform: the simulator and the
//! native runtime both run it through `WorkloadSpec::run` and fill the one
//! summary, each leaving out (not zeroing) what it cannot measure.

use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_apps::{Sim, Target, Threads, WorkloadSpec};
use finegrain_core::{Clock, MachineConfig, Policy, Topology};
use finegrain_rt::{Placement, RtConfig};
use finegrain_sim::SimConfig;

fn machine() -> MachineConfig {
    MachineConfig::load("hpca97").unwrap()
}

fn spec() -> WorkloadSpec {
    WorkloadSpec::Micro(MicroConfig {
        protocol: Protocol::Fetch,
        mean_compute_cycles: 100.0,
        requests_per_node: 200,
        single_requester: false,
    })
}

fn topology() -> Topology {
    Topology { nodes: 2, procs_per_node: 2 }
}

#[test]
fn the_simulator_fills_every_measure_of_the_summary() {
    let sim = Sim(SimConfig::new(machine(), topology(), Policy::Fixed { protocol_procs: 1 }, 3));
    let out = spec().run(&sim).unwrap();
    let s = &out.summary;
    assert_eq!((s.platform, s.clock), ("sim", Clock::Cycles { mhz: machine().processor.mhz }));
    assert_eq!((s.time, s.requests, s.messages), (out.stats.sim_cycles, 400, out.stats.messages));
    assert_eq!(s.not_measured(), ["spilled messages"]);
    assert!(out.measures.is_none(), "the microbenchmark's measures are its statistics");
}

#[test]
fn threads_fill_what_they_measure_and_name_the_rest() {
    let m = machine();
    let mut rt = RtConfig::new(topology(), Policy::Fixed { protocol_procs: 1 });
    rt.segment_bytes = m.segment_bytes() as usize;
    let threads = Threads { on: Placement::Native, config: rt, machine: m };
    let out = spec().run(&threads).unwrap();
    let s = &out.summary;
    assert_eq!((s.platform, s.clock, s.requests), ("native", Clock::Nanoseconds, 400));
    assert_eq!(s.time, out.stats.wall_ns);
    assert!(s.measured_u.is_some_and(|u| (0.0..=1.0).contains(&u)), "{s:?}");
    assert_eq!(s.not_measured(), ["PP occupancy", "mean round trip", "simulated events"]);
}

#[test]
fn lmin_is_the_idle_requesters_time_per_round_trip() {
    let m = machine();
    let (pair, round_trips) = Sim(SimConfig::new(m.clone(), topology(), Policy::Floating, 9)).idle_pair();
    assert_eq!((pair.0.run.policy, pair.0.run.seed, round_trips), (Policy::Fixed { protocol_procs: 1 }, 9, 400));
    let lmin = micro::measure_lmin(&Sim::idle(&m, 9), Protocol::Null).unwrap();
    let once = micro::run(
        &pair,
        &MicroConfig {
            protocol: Protocol::Null,
            mean_compute_cycles: 0.0,
            requests_per_node: 400,
            single_requester: true,
        },
    )
    .unwrap();
    assert_eq!(lmin, once.stats.sim_cycles as f64 / 400.0);
}
