//! The co-processor paper's Split-C programs under the optimized library
//! in the simulator (ipps96, `coprocessor:optimized`, 4 nodes, tiny
//! inputs): the right answers (the run checks them), the same times from
//! the same seed, none of Split-C's handlers on a dispatch thread, and
//! wator's reads answered while their owner computes (IPPS 1996 Section
//! 5.3's point, as under coproc-am).

use finegrain_apps::splitc::bitonic::BitonicConfig;
use finegrain_apps::splitc::cannon::{CannonConfig, CannonPlacement};
use finegrain_apps::splitc::fft::{FftConfig, FftRemap};
use finegrain_apps::splitc::mm::{MmConfig, MmPlacement};
use finegrain_apps::splitc::pray::PrayConfig;
use finegrain_apps::splitc::radix::{RadixConfig, Stores};
use finegrain_apps::splitc::sample::{Moves, SampleConfig};
use finegrain_apps::splitc::shell::ShellConfig;
use finegrain_apps::splitc::wator::WatorConfig;
use finegrain_apps::splitc::{SplitcProgram, SplitcWorkload};
use finegrain_core::{CoprocLibrary, MachineConfig, Platform, Policy, Topology};
use finegrain_sim::{RunStats, SimConfig, Simulator};

fn ipps96(library: CoprocLibrary) -> SimConfig {
    let topology = Topology { nodes: 4, procs_per_node: 1 };
    SimConfig::new(MachineConfig::load("ipps96").unwrap(), topology, Policy::Coprocessor { library }, 7)
}

/// Runs `program` (the simulator checks its answer); returns each node's
/// total time and the statistics.
fn run<G: SplitcProgram + Clone>(program: &G, cfg: &SimConfig) -> (Vec<u64>, RunStats) {
    let w = SplitcWorkload::new(program.clone(), cfg.run.topology.nodes).unwrap();
    let ran = Simulator { config: cfg }.run(&w).unwrap_or_else(|e| panic!("{}: {e}", program.name()));
    (ran.outputs.iter().map(|o| o.total).collect(), ran.stats)
}

fn right_and_deterministic<G: SplitcProgram + Clone>(program: G) {
    let cfg = ipps96(CoprocLibrary::Optimized);
    let (totals, stats) = run(&program, &cfg);
    assert!(totals.iter().all(|&t| t > 0), "{}: {totals:?}", program.name());
    let dispatched: u64 = stats.nodes.iter().map(|n| n.coproc.as_ref().unwrap().handlers).sum();
    assert_eq!(dispatched, 0, "{}: Split-C's handlers go by the hardware", program.name());
    assert_eq!(run(&program, &cfg), (totals, stats), "{}", program.name());
}

#[test]
fn bitonic_cannon_fft_mm_and_pray_run_under_optimized() {
    right_and_deterministic(BitonicConfig::tiny());
    for placement in [CannonPlacement::Aligned, CannonPlacement::Skewed] {
        right_and_deterministic(CannonConfig::tiny(placement));
    }
    for remap in [FftRemap::Store, FftRemap::BulkStore] {
        right_and_deterministic(FftConfig::tiny(remap));
    }
    for placement in [MmPlacement::Bands, MmPlacement::Global] {
        right_and_deterministic(MmConfig::tiny(placement));
    }
    right_and_deterministic(PrayConfig::tiny());
}

#[test]
fn radix_sample_shell_and_wator_run_under_optimized() {
    right_and_deterministic(RadixConfig::tiny(Stores::OneWord));
    right_and_deterministic(RadixConfig::tiny(Stores::Bulk));
    right_and_deterministic(SampleConfig::tiny(Moves::Gets));
    right_and_deterministic(SampleConfig::tiny(Moves::BulkStores));
    right_and_deterministic(ShellConfig::tiny());
    right_and_deterministic(WatorConfig::tiny());
}

#[test]
fn wator_reads_do_not_wait_for_a_computing_owner_under_optimized() {
    let wait_us = |library, fish_per_node| {
        let cfg = ipps96(library);
        let wator = WatorConfig { fish_per_node, steps: 1, ..WatorConfig::tiny() };
        let w = SplitcWorkload::new(wator, 4).unwrap();
        let outputs = Simulator { config: &cfg }.run(&w).unwrap().outputs;
        let wait: u64 = outputs.iter().map(|o| o.phases.times["read-wait"]).sum();
        let reads: u64 = outputs.iter().map(|o| o.phases.counts["reads"]).sum();
        cfg.machine.cycles_to_us(wait as f64 / reads as f64)
    };
    let (main_small, main_large) = (wait_us(CoprocLibrary::MainAm, 16), wait_us(CoprocLibrary::MainAm, 256));
    let (opt_small, opt_large) = (wait_us(CoprocLibrary::Optimized, 16), wait_us(CoprocLibrary::Optimized, 256));
    println!(
        "wator on 4 nodes, ipps96, average read wait: main-am {main_small:.1} us (16 fish per node), \
         {main_large:.1} us (256); optimized {opt_small:.1} us (16), {opt_large:.1} us (256)"
    );
    let (main_growth, opt_growth) = (main_large - main_small, opt_large - opt_small);
    assert!(main_growth > opt_growth + 20.0, "growth: main-am {main_growth} us, optimized {opt_growth} us");
    assert!(main_large > opt_large, "256 fish per node: main-am {main_large} us, optimized {opt_large} us");
}
