//! The Split-C primitives' timing program moves the right words natively
//! and reports a time for every primitive.

use finegrain_apps::splitc::primitives::{Primitive, PrimitivesConfig};
use finegrain_apps::splitc::SplitcWorkload;
use finegrain_core::{Platform, Policy, Topology};
use finegrain_rt::{Native, RtConfig};

#[test]
fn every_primitive_is_timed_and_checked_natively() {
    for nodes in [2, 3] {
        for primitive in Primitive::ALL {
            let cfg = if primitive == Primitive::BulkPut {
                PrimitivesConfig::bandwidth(2000, 20)
            } else {
                PrimitivesConfig::figure3(primitive, 50)
            };
            cfg.validate(nodes).unwrap();
            let w = SplitcWorkload::new(cfg, nodes).unwrap();
            let rt = RtConfig::new(Topology { nodes, procs_per_node: 1 }, Policy::Single);
            let ran = Native { config: &rt }.run(&w).unwrap_or_else(|e| panic!("{primitive:?} on {nodes}: {e}"));
            let node0 = &ran.outputs[0].phases;
            assert!(node0.times["op"] > 0, "{primitive:?}: {node0:?}");
            assert_eq!(node0.counts["ops"], 50.min(if primitive == Primitive::BulkPut { 20 } else { 50 }));
        }
    }
}

#[test]
fn bad_primitive_configurations_are_refused() {
    let mut c = PrimitivesConfig::figure3(Primitive::Get, 10);
    assert!(c.validate(1).unwrap_err().contains("allowed 2 or more nodes"));
    c.words = 4;
    assert!(c.validate(2).unwrap_err().contains("it moves one word"));
    c.words = 0;
    assert!(c.validate(2).unwrap_err().contains("invalid words = 0"));
    let mut c = PrimitivesConfig::figure3(Primitive::BulkStore, 0);
    assert!(c.validate(2).unwrap_err().contains("invalid reps = 0"));
    c.reps = 5;
    assert!(c.validate(2).is_ok());
}
