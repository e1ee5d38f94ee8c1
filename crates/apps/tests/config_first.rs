//! The apps' entry points check the machine (and the native runtime's
//! configuration) before the workload, whose checks and handlers size
//! things from them: a bad machine is named, never a division by zero or a
//! message about something else.

use finegrain_apps::fetch_add::{self, FetchAddConfig, KeySkew};
use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_apps::{Sim, Threads};
use finegrain_core::{MachineConfig, Policy, Topology};
use finegrain_rt::Placement;
use finegrain_sim::SimConfig;

fn micro_workload() -> MicroConfig {
    MicroConfig {
        protocol: Protocol::Fetch,
        mean_compute_cycles: 100.0,
        requests_per_node: 10,
        single_requester: false,
    }
}

fn fetch_add_workload() -> FetchAddConfig {
    FetchAddConfig {
        keys: 8,
        skew: KeySkew::Uniform,
        handler_cycles: 10,
        sequential_fraction: 0.0,
        requests_per_thread: 5,
        home_u: 0.5,
        home_burst_cycles: 1000.0,
        think_cycles: 0.0,
    }
}

fn zero_block(preset: &str) -> MachineConfig {
    let mut m = MachineConfig::load(preset).unwrap();
    m.protocol.block_bytes = 0;
    m
}

#[test]
fn a_zero_block_size_is_named_in_the_simulator() {
    let topology = Topology { nodes: 2, procs_per_node: 2 };
    let sim = SimConfig::new(zero_block("hpca97"), topology, Policy::Fixed { protocol_procs: 1 }, 1);
    let e = micro::run(&Sim(sim.clone()), &micro_workload()).unwrap_err().to_string();
    assert!(e.starts_with("invalid protocol.block_bytes = 0"), "{e}");
    let sim = SimConfig::new(zero_block("hpca99"), topology, Policy::Fixed { protocol_procs: 1 }, 1);
    let e = fetch_add::run(&Sim(sim.clone()), &fetch_add_workload()).unwrap_err().to_string();
    assert!(e.starts_with("invalid protocol.block_bytes = 0"), "{e}");
}

#[test]
fn a_zero_block_size_is_named_natively() {
    let rt = finegrain_rt::RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Fixed { protocol_procs: 1 });
    let e = micro::run(&native(&rt, zero_block("hpca97")), &micro_workload()).unwrap_err().to_string();
    assert!(e.starts_with("invalid protocol.block_bytes = 0"), "{e}");
    let e = fetch_add::run(&native(&rt, zero_block("hpca99")), &fetch_add_workload()).unwrap_err().to_string();
    assert!(e.starts_with("invalid protocol.block_bytes = 0"), "{e}");
}

#[test]
fn fixed_with_no_compute_processor_is_named_not_the_key_table() {
    let sim = SimConfig::new(
        MachineConfig::load("hpca99").unwrap(),
        Topology { nodes: 2, procs_per_node: 1 },
        Policy::Fixed { protocol_procs: 1 },
        1,
    );
    let e = fetch_add::run(&Sim(sim.clone()), &fetch_add_workload()).unwrap_err().to_string();
    assert!(e.contains("leaves no compute processor"), "{e}");
}

#[test]
fn a_native_segment_smaller_than_the_presets_is_refused_before_the_run() {
    let machine = MachineConfig::load("hpca97").unwrap();
    let mut rt =
        finegrain_rt::RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Fixed { protocol_procs: 1 });
    rt.segment_bytes = 4096;
    let e = micro::run(&native(&rt, machine.clone()), &micro_workload()).unwrap_err().to_string();
    assert!(e.starts_with(&format!("invalid segment_bytes = 4096: the microbenchmark's segment is as large as preset hpca97's cache; allowed at least {}", machine.segment_bytes())), "{e}");
}

#[test]
fn iterations_split_a_nodes_requests_exactly() {
    let w = MicroConfig { requests_per_node: 10, ..micro_workload() };
    assert_eq!((0..3).map(|t| w.iterations(t, 3)).collect::<Vec<_>>(), [4, 3, 3]);
    assert_eq!(w.iterations(0, 0), 0, "no threads, no iterations (not a division by zero)");
    assert_eq!(w.iterations(3, 3), 0);
}

/// The native runtime's threads of this process with `machine`.
fn native(rt: &finegrain_rt::RtConfig, machine: MachineConfig) -> Threads<'static> {
    Threads { on: Placement::Native, config: rt.clone(), machine }
}
