//! Every Split-C operation moves the right words natively (the library's
//! conformance program), under the policies that run one compute thread
//! per node.

use finegrain_core::{AmError, HandlerTable, NodeId, Policy, Topology};
use finegrain_rt::{run, RtConfig};
use finegrain_splitc::conformance::Conformance;
use finegrain_splitc::{GlobalPtr, SplitC};

const NODES: u32 = 4;

fn check(policy: Policy, procs_per_node: u32) {
    let mut table = HandlerTable::new();
    let c = Conformance::register(NODES, &mut table).unwrap();
    let cfg = RtConfig::new(Topology { nodes: NODES, procs_per_node }, policy);
    let out = run(&cfg, &table, move |p| {
        let c = c.clone();
        async move { c.run(&p).await }
    })
    .unwrap_or_else(|e| panic!("{policy:?}: {e}"));
    let wrong: Vec<String> = out.results.into_iter().flatten().collect();
    assert!(wrong.is_empty(), "{policy:?}: {wrong:?}");
}

#[test]
fn every_operation_moves_the_right_words_under_single() {
    check(Policy::Single, 1);
}

#[test]
fn every_operation_moves_the_right_words_under_fixed() {
    check(Policy::Fixed { protocol_procs: 1 }, 2);
}

#[test]
fn more_than_one_thread_per_node_is_refused() {
    let mut table = HandlerTable::new();
    let sc = SplitC::builder(2, 100).register(&mut table).unwrap();
    let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Floating);
    let e = run(&cfg, &table, move |p| {
        let sc = sc.clone();
        async move { sc.on(&p).map(|_| ()) }
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("one compute thread per node"), "{e}");
}

#[test]
fn out_of_segment_operations_are_refused() {
    let mut table = HandlerTable::new();
    let sc = SplitC::builder(2, 100).register(&mut table).unwrap();
    let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single);
    let out = run(&cfg, &table, move |p| {
        let sc = sc.clone();
        async move {
            let s = sc.on(&p)?;
            let far = s.get(GlobalPtr::new(NodeId(1), 95), 10, 10).await.unwrap_err().to_string();
            let big = s.alloc(1000).unwrap_err().to_string();
            let node = s.read(GlobalPtr::new(NodeId(9), 0)).await.unwrap_err();
            Ok((far, big, node))
        }
    })
    .unwrap();
    for (far, big, node) in out.results {
        assert!(far.contains("outside its 100-word segment"), "{far}");
        assert!(big.contains("allocating 1000 words"), "{big}");
        assert_eq!(node, AmError::NoSuchNode { node: 9, nodes: 2 });
    }
}
