//! Existing workloads on preset ipps96 under policy coprocessor: handlers
//! on the co-processor never touch the main processor (coproc-am), the
//! main processor handles at its polls (main-am), the null round trip of
//! each, determinism, and fetch&add's answers under both libraries.

use finegrain_apps::fetch_add::{self, FetchAddConfig, KeySkew};
use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_apps::Sim;
use finegrain_core::{CoprocLibrary, MachineConfig, Policy, Topology};
use finegrain_sim::{RunStats, SimConfig};

const LIBRARIES: [CoprocLibrary; 2] = [CoprocLibrary::CoprocAm, CoprocLibrary::MainAm];

fn ipps96(policy: Policy, nodes: u32, procs_per_node: u32) -> SimConfig {
    SimConfig::new(MachineConfig::load("ipps96").unwrap(), Topology { nodes, procs_per_node }, policy, 7)
}

fn coproc(library: CoprocLibrary, nodes: u32) -> SimConfig {
    ipps96(Policy::Coprocessor { library }, nodes, 1)
}

fn micro_run(cfg: &SimConfig, protocol: Protocol, compute: f64, single: bool) -> RunStats {
    let w = MicroConfig { protocol, mean_compute_cycles: compute, requests_per_node: 40, single_requester: single };
    micro::run(&Sim(cfg.clone()), &w).unwrap().stats
}

fn coproc_handlers(stats: &RunStats) -> u64 {
    stats.nodes.iter().map(|n| n.coproc.as_ref().expect("a co-processor node").handlers).sum()
}

/// The null round trip on an idle machine (one requester), in us.
fn null_round_trip_us(cfg: &SimConfig) -> f64 {
    let stats = micro_run(cfg, Protocol::Null, 0.0, true);
    cfg.machine.cycles_to_us(stats.request_latency.mean_cycles)
}

#[test]
fn under_coproc_am_the_main_processor_takes_no_interrupt_and_runs_no_handler() {
    for protocol in [Protocol::Null, Protocol::Fetch] {
        let stats = micro_run(&coproc(CoprocLibrary::CoprocAm, 4), protocol, 2000.0, false);
        assert_eq!(stats.interrupts, 0, "{protocol}");
        assert_eq!(stats.handlers, 0, "{protocol}: main processors ran handlers");
        assert_eq!(stats.cycles.handler + stats.cycles.interrupt + stats.cycles.role, 0, "{protocol}");
        // Every request's handler and its reply's ran on a co-processor.
        assert_eq!(coproc_handlers(&stats), 2 * stats.requests, "{protocol}");
        assert_eq!(stats.requests, 4 * 40);
    }
    // Under main-am the same run's handlers are the main processors'.
    let stats = micro_run(&coproc(CoprocLibrary::MainAm, 4), Protocol::Null, 2000.0, false);
    assert_eq!((stats.interrupts, coproc_handlers(&stats)), (0, 0));
    assert_eq!(stats.handlers, 2 * stats.requests);
}

#[test]
fn a_null_round_trip_is_slower_with_handlers_on_the_coprocessor() {
    let on_coproc = null_round_trip_us(&coproc(CoprocLibrary::CoprocAm, 2));
    let on_main = null_round_trip_us(&coproc(CoprocLibrary::MainAm, 2));
    let single = null_round_trip_us(&ipps96(Policy::Single, 2, 1));
    let fixed = null_round_trip_us(&ipps96(Policy::Fixed { protocol_procs: 1 }, 2, 2));
    println!(
        "null round trip on ipps96: coproc-am {on_coproc:.1} us, main-am {on_main:.1} us (ratio {:.2}); \
         main-processor policies: single {single:.1} us, fixed {fixed:.1} us",
        on_coproc / on_main
    );
    assert!(on_coproc > on_main, "coproc-am {on_coproc} us, main-am {on_main} us");
}

#[test]
fn main_am_requests_wait_for_the_owner_to_poll() {
    // The owner polls only when it communicates: the more it computes
    // between requests, the longer a message waits in its buffer.
    let delay = |compute| {
        let stats = micro_run(&coproc(CoprocLibrary::MainAm, 2), Protocol::Null, compute, false);
        stats.nodes.iter().map(|n| n.queue_delay.mean_cycles).sum::<f64>() / 2.0
    };
    let (short, long) = (delay(100.0), delay(20_000.0));
    assert!(long > 10.0 * short.max(1.0), "mean wait {short} cycles at 100 compute, {long} at 20000");
}

#[test]
fn the_same_config_and_seed_give_the_same_bytes() {
    for library in LIBRARIES {
        let run = || {
            let stats = micro_run(&coproc(library, 4), Protocol::Fetch, 3000.0, false);
            serde_json::to_string(&stats).unwrap()
        };
        assert_eq!(run(), run(), "{}", library.label());
    }
}

#[test]
fn fetch_and_add_answers_are_right_under_both_libraries() {
    let w = FetchAddConfig {
        keys: 8,
        skew: KeySkew::Uniform,
        handler_cycles: 50,
        sequential_fraction: 0.0,
        requests_per_thread: 30,
        home_u: 0.5,
        home_burst_cycles: 1000.0,
        think_cycles: 200.0,
    };
    for library in LIBRARIES {
        let cfg = coproc(library, 4);
        // The run checks every word against the requests sent for it.
        let out = fetch_add::run(&Sim(cfg.clone()), &w).unwrap();
        assert_eq!(out.stats.requests, fetch_add::total_requests(&cfg, &w), "{}", library.label());
        assert_eq!(out.stats.replies, out.stats.requests, "{}", library.label());
    }
}

#[test]
fn the_optimized_library_is_accepted_and_a_machine_without_a_coprocessor_refused_in_one_line() {
    coproc(CoprocLibrary::Optimized, 2).validate().unwrap();
    let mut cfg = coproc(CoprocLibrary::CoprocAm, 2);
    cfg.machine = MachineConfig::load("hpca97").unwrap();
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("no [coprocessor] section") && !e.contains('\n'), "{e}");
}
