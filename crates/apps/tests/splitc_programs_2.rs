//! The Split-C sorts and wator (IPPS 1996 Table 2: radix, radixb, sample,
//! sampleb, shell, wator): each computes the sequential reference's answer
//! natively on 1, 2 and 4 nodes, a corrupted answer is caught, and bad
//! configurations are refused in one line naming the field. In the
//! simulator each computes the right answer on preset ipps96 under the
//! co-processor policy with both libraries (handlers on the main
//! processor, main-am; on the co-processor, coproc-am) and on hpca97 under
//! Single, and the same seed gives the same times.

use finegrain_apps::splitc::radix::{RadixConfig, Stores};
use finegrain_apps::splitc::sample::{Moves, SampleConfig};
use finegrain_apps::splitc::shell::ShellConfig;
use finegrain_apps::splitc::wator::WatorConfig;
use finegrain_apps::splitc::{NodeRun, SplitcProgram, SplitcWorkload};
use finegrain_core::{CoprocLibrary, MachineConfig, Platform, Policy, Topology};
use finegrain_rt::{Native, RtConfig};
use finegrain_sim::{SimConfig, Simulator};

/// Runs `program` natively on `nodes` nodes (the platform checks the
/// answer); returns every node's output.
fn native<G: SplitcProgram + Clone>(program: &G, nodes: u32) -> Vec<NodeRun<G::Answer>> {
    let w = SplitcWorkload::new(program.clone(), nodes).unwrap();
    let cfg = RtConfig::new(Topology { nodes, procs_per_node: 1 }, Policy::Single);
    let ran = Native { config: &cfg }.run(&w).unwrap_or_else(|e| panic!("{} on {nodes} nodes: {e}", program.name()));
    ran.outputs
}

/// Right on 1, 2 and 4 nodes; on 4 nodes, `corrupt` applied to node 1's
/// answer is caught by the check.
fn right_and_corruption_caught<G: SplitcProgram + Clone>(program: G, corrupt: impl Fn(&mut G::Answer)) {
    for nodes in [1, 2, 4] {
        let outputs = native(&program, nodes);
        assert_eq!(outputs.len(), nodes as usize);
        for out in &outputs {
            assert!(out.phases.times.contains_key("compute"), "{}: {:?}", program.name(), out.phases);
            if nodes > 1 {
                assert!(out.phases.times.contains_key("communicate"), "{}: {:?}", program.name(), out.phases);
            }
        }
        if nodes == 4 {
            let mut answers: Vec<G::Answer> = outputs.into_iter().map(|o| o.answer).collect();
            corrupt(&mut answers[1]);
            let refs: Vec<&G::Answer> = answers.iter().collect();
            let e = program.check(nodes, &refs).unwrap_err();
            assert!(e.contains("node 1"), "{}: {e}", program.name());
        }
    }
}

/// Changes a node's last key: still sorted, no longer the input's keys.
fn bump_last_key(keys: &mut [u64]) {
    let last = keys.len() - 1;
    keys[last] = keys[last].wrapping_add(1);
}

#[test]
fn radix_sorts_with_one_word_stores() {
    right_and_corruption_caught(RadixConfig::tiny(Stores::OneWord), |k| bump_last_key(k));
}

#[test]
fn radixb_sorts_with_bulk_stores() {
    right_and_corruption_caught(RadixConfig::tiny(Stores::Bulk), |k| bump_last_key(k));
}

#[test]
fn sample_sorts_with_gets_and_puts() {
    right_and_corruption_caught(SampleConfig::tiny(Moves::Gets), |k| bump_last_key(k));
}

#[test]
fn sampleb_sorts_with_bulk_stores() {
    right_and_corruption_caught(SampleConfig::tiny(Moves::BulkStores), |keys| {
        keys.pop();
    });
}

#[test]
fn shell_sorts_with_bulk_reads() {
    right_and_corruption_caught(ShellConfig::tiny(), |k| bump_last_key(k));
}

#[test]
fn wator_moves_the_fish_as_the_reference_does() {
    right_and_corruption_caught(WatorConfig::tiny(), |school| school.vy[3] += 1e-12);
}

#[test]
fn wator_times_every_read() {
    let wator = WatorConfig::tiny();
    let outputs = native(&wator, 4);
    // Every node reads x and y of every remote fish each step.
    let fish = 4 * wator.fish_per_node;
    for out in outputs {
        let reads = 2 * (fish - out.answer.x.len() as u64) * wator.steps as u64;
        assert_eq!(out.phases.counts.get("reads"), Some(&reads), "{:?}", out.phases);
        assert!(out.phases.times.contains_key("read-wait"), "{:?}", out.phases);
    }
}

#[test]
fn bad_configurations_are_refused_in_one_line() {
    let refusals = [
        (RadixConfig { keys_per_node: 0, ..RadixConfig::tiny(Stores::Bulk) }.validate(4), "keys_per_node"),
        (RadixConfig { digit_bits: 17, ..RadixConfig::tiny(Stores::OneWord) }.validate(4), "digit_bits"),
        (RadixConfig { key_bits: 0, ..RadixConfig::tiny(Stores::OneWord) }.validate(4), "key_bits"),
        (SampleConfig { oversample: 0, ..SampleConfig::tiny(Moves::Gets) }.validate(4), "oversample"),
        (SampleConfig { keys_per_node: 0, ..SampleConfig::tiny(Moves::BulkStores) }.validate(4), "keys_per_node"),
        (ShellConfig::tiny().validate(3), "power of two"),
        (ShellConfig { key_bits: 65, ..ShellConfig::tiny() }.validate(4), "key_bits"),
        (WatorConfig { fish_per_node: 0, ..WatorConfig::tiny() }.validate(4), "fish_per_node"),
        (WatorConfig { steps: 0, ..WatorConfig::tiny() }.validate(4), "steps"),
    ];
    for (result, needle) in refusals {
        let e = result.unwrap_err();
        assert!(e.contains(needle) && e.contains("allowed") && !e.contains('\n'), "{e}");
    }
    // A program run with a bad configuration fails the run with the same
    // message.
    let w = SplitcWorkload::new(ShellConfig::tiny(), 3).unwrap();
    let cfg = RtConfig::new(Topology { nodes: 3, procs_per_node: 1 }, Policy::Single);
    let e = Native { config: &cfg }.run(&w).unwrap_err().to_string();
    assert!(e.contains("power of two"), "{e}");
    // Unknown fields are refused when a configuration is read.
    let e = serde_json::from_str::<WatorConfig>(r#"{"fish_per_node": 4, "steps": 1, "seed": 1, "sharks": 2}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("sharks"), "{e}");
}

/// The simulated machines: ipps96's co-processor nodes with handlers on
/// the main processor or on the co-processor, and hpca97 under Single.
fn machines(nodes: u32) -> Vec<(&'static str, SimConfig)> {
    let topology = Topology { nodes, procs_per_node: 1 };
    let ipps96 =
        |library| SimConfig::new(MachineConfig::load("ipps96").unwrap(), topology, Policy::Coprocessor { library }, 7);
    vec![
        ("ipps96 main-am", ipps96(CoprocLibrary::MainAm)),
        ("ipps96 coproc-am", ipps96(CoprocLibrary::CoprocAm)),
        ("hpca97 single", SimConfig::new(MachineConfig::load("hpca97").unwrap(), topology, Policy::Single, 7)),
    ]
}

/// Runs `program` in the simulator (which checks the answer); returns
/// every node's output.
fn simulated<G: SplitcProgram + Clone>(program: &G, cfg: &SimConfig, what: &str) -> Vec<NodeRun<G::Answer>> {
    let w = SplitcWorkload::new(program.clone(), cfg.run.topology.nodes).unwrap();
    let ran = Simulator { config: cfg }.run(&w).unwrap_or_else(|e| panic!("{} on {what}: {e}", program.name()));
    ran.outputs
}

/// Right on every simulated machine with 4 nodes, and the same total
/// times when run again with the same seed.
fn right_and_deterministic_in_the_simulator<G: SplitcProgram + Clone>(program: G) {
    for (what, cfg) in machines(4) {
        let totals = || simulated(&program, &cfg, what).iter().map(|o| o.total).collect::<Vec<u64>>();
        let first = totals();
        assert!(first.iter().all(|&t| t > 0), "{} on {what}: {first:?}", program.name());
        assert_eq!(first, totals(), "{} on {what}", program.name());
    }
}

#[test]
fn radix_and_radixb_sort_in_the_simulator() {
    right_and_deterministic_in_the_simulator(RadixConfig::tiny(Stores::OneWord));
    right_and_deterministic_in_the_simulator(RadixConfig::tiny(Stores::Bulk));
}

#[test]
fn sample_and_sampleb_sort_in_the_simulator() {
    right_and_deterministic_in_the_simulator(SampleConfig::tiny(Moves::Gets));
    right_and_deterministic_in_the_simulator(SampleConfig::tiny(Moves::BulkStores));
}

#[test]
fn shell_sorts_in_the_simulator() {
    right_and_deterministic_in_the_simulator(ShellConfig::tiny());
}

#[test]
fn wator_runs_in_the_simulator() {
    right_and_deterministic_in_the_simulator(WatorConfig::tiny());
}

/// The average wait of wator's reads, in us, on the machine `cfg`.
fn wator_read_wait_us(wator: &WatorConfig, cfg: &SimConfig, what: &str) -> f64 {
    let outputs = simulated(wator, cfg, what);
    let wait: u64 = outputs.iter().map(|o| o.phases.times["read-wait"]).sum();
    let reads: u64 = outputs.iter().map(|o| o.phases.counts["reads"]).sum();
    cfg.machine.cycles_to_us(wait as f64 / reads as f64)
}

#[test]
fn wator_reads_wait_for_a_computing_owner_only_under_main_am() {
    // The paper's point (Section 5.3): under main-am a read that arrives
    // while its owner computes waits for the owner's next communication,
    // so the wait grows with the computation after each read; the
    // co-processor answers at once whatever the owner does. Four nodes,
    // one step, 16 fish per node (tiny) against 256 (paper()'s per-read
    // work).
    let machines = machines(4);
    let wait = |m: usize, fish_per_node| {
        let wator = WatorConfig { fish_per_node, steps: 1, ..WatorConfig::tiny() };
        wator_read_wait_us(&wator, &machines[m].1, machines[m].0)
    };
    let (main_small, main_large) = (wait(0, 16), wait(0, 256));
    let (coproc_small, coproc_large) = (wait(1, 16), wait(1, 256));
    println!(
        "wator on 4 nodes, ipps96, average read wait: main-am {main_small:.1} us (16 fish per node), \
         {main_large:.1} us (256); coproc-am {coproc_small:.1} us (16), {coproc_large:.1} us (256)"
    );
    let (main_growth, coproc_growth) = (main_large - main_small, coproc_large - coproc_small);
    assert!(main_growth > coproc_growth + 20.0, "growth: main-am {main_growth} us, coproc-am {coproc_growth} us");
    assert!(main_large > coproc_large, "256 fish per node: main-am {main_large} us, coproc-am {coproc_large} us");
}
