//! The conformance program on the simulator (under the paper's systems'
//! policies, with the coherence check on) and natively on threads.

use finegrain_core::{Discipline, HandlerTable, MachineConfig, Policy, PpKind, Topology};
use finegrain_dsm::conformance::Conformance;
use finegrain_dsm::DsmConfig;

fn checked() -> DsmConfig {
    DsmConfig { check_coherence: true, ..DsmConfig::default() }
}

fn sim(nodes: u32, procs: u32, threads: u32, policy: Policy, discipline: Discipline, kind: PpKind, block: u32) {
    let mut table = HandlerTable::new();
    let cfg = DsmConfig { block_bytes: block, ..checked() };
    let c = Conformance::register(nodes, threads, cfg, &mut table).unwrap();
    let machine = MachineConfig::load("hpca99").unwrap();
    let mut sc = finegrain_sim::SimConfig::new(machine, Topology { nodes, procs_per_node: procs }, policy, 7);
    sc.run.dispatch.discipline = discipline;
    sc.run.dispatch.pp_kind = kind;
    let out = finegrain_sim::simulate(&sc, &table, |p| {
        let c = c.clone();
        async move { c.run(&p).await }
    })
    .unwrap_or_else(|e| panic!("{policy:?} {discipline:?} {kind:?}: {e}"));
    let wrong: Vec<String> = out.results.into_iter().flatten().collect();
    assert!(wrong.is_empty(), "{wrong:?}");
    upgrades_carry_no_data(&c);
}

/// The program writes blocks its node read (the counter's read-modify-
/// writes): each such write is granted without the block, whose copy the
/// coherence check has just found current.
fn upgrades_carry_no_data(c: &Conformance) {
    let counts = c.protocol_counts();
    assert!(counts.upgrades > 0, "{counts:?}");
    assert_eq!(counts.upgrades_with_data, 0, "{counts:?}");
}

#[test]
fn simulated_hurricane_with_two_embedded_pdq_processors() {
    sim(4, 4, 2, Policy::Fixed { protocol_procs: 2 }, Discipline::Pdq, PpKind::Embedded, 64);
}

#[test]
fn simulated_hurricane1_with_one_smp_processor_and_32_byte_blocks() {
    sim(3, 3, 2, Policy::Fixed { protocol_procs: 1 }, Discipline::Pdq, PpKind::Smp, 32);
}

#[test]
fn simulated_mult_on_idle_processors_with_128_byte_blocks() {
    sim(2, 4, 4, Policy::Floating, Discipline::Pdq, PpKind::Smp, 128);
}

fn native(nodes: u32, procs: u32, threads: u32, policy: Policy, discipline: Discipline) {
    let mut table = HandlerTable::new();
    let c = Conformance::register(nodes, threads, checked(), &mut table).unwrap();
    let counted = c.clone();
    let mut cfg = finegrain_rt::RtConfig::new(Topology { nodes, procs_per_node: procs }, policy);
    cfg.run.dispatch.discipline = discipline;
    let out = finegrain_rt::run(&cfg, &table, move |p| {
        let c = c.clone();
        async move { c.run(&p).await }
    })
    .unwrap_or_else(|e| panic!("{policy:?} {discipline:?}: {e}"));
    let wrong: Vec<String> = out.results.into_iter().flatten().collect();
    assert!(wrong.is_empty(), "{wrong:?}");
    upgrades_carry_no_data(&counted);
}

#[test]
fn native_single_thread_nodes() {
    native(3, 1, 1, Policy::Single, Discipline::Serial);
}

#[test]
fn native_pdq_protocol_threads() {
    native(2, 3, 2, Policy::Fixed { protocol_procs: 1 }, Discipline::Pdq);
}

#[test]
fn native_floating() {
    native(2, 2, 2, Policy::Floating, Discipline::Pdq);
}
