//! One thread streams one-way 8-byte active messages to its own node
//! (Single policy: it handles each when it polls on sending the next), so
//! `valgrind --tool=callgrind` counts the send and handling path of
//! `finegrain bench rate` deterministically, with no second core involved:
//! run it with N=200000 and N=400000 and divide the difference by 200000.
use finegrain_core::*;
use finegrain_rt::clock::Stamp;
use finegrain_rt::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn main() {
    let mut t = HandlerTable::new();
    let info = |n: &str| HandlerInfo { name: n.into(), body_cycles: 0, code_bytes: 0 };
    let received = Arc::new(AtomicU64::new(0));
    let r2 = received.clone();
    let sink = t
        .register(info("sink"), move |_, _| {
            r2.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    let mut cfg = RtConfig::new(Topology { nodes: 1, procs_per_node: 1 }, Policy::Single);
    cfg.segment_bytes = 4096;
    cfg.time_split = false;
    let n: u64 = std::env::var("N").ok().and_then(|s| s.parse().ok()).unwrap_or(2_000_000);
    let out = run(&cfg, &t, |p| async move {
        let word = 0x1122_3344_5566_7788u64.to_le_bytes();
        let t0 = Stamp::now();
        for _ in 0..n {
            p.send(NodeId(0), sink, &[], &word)?;
        }
        Ok::<_, AmError>(t0.elapsed_ns() as f64 / n as f64)
    })
    .unwrap();
    assert_eq!(received.load(Ordering::Relaxed), n, "every message was handled");
    println!("one-way to self (send and handle, one thread): {:.1} ns per message", out.results[0]);
}
