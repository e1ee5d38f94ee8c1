//! The Split-C sorts and wator (IPPS 1996 Table 2: radix, radixb, sample,
//! sampleb, shell, wator): each computes the sequential reference's answer
//! natively on 1, 2 and 4 nodes, a corrupted answer is caught, and bad
//! configurations are refused in one line naming the field.

use finegrain_apps::splitc::radix::{RadixConfig, Stores};
use finegrain_apps::splitc::sample::{Moves, SampleConfig};
use finegrain_apps::splitc::shell::ShellConfig;
use finegrain_apps::splitc::wator::WatorConfig;
use finegrain_apps::splitc::{NodeRun, SplitcProgram, SplitcWorkload};
use finegrain_core::{Platform, Policy, Topology};
use finegrain_rt::{Native, RtConfig};

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
