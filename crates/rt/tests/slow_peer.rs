//! A destination that is slow but alive is not a stuck one: a requester
//! whose reply waits behind the destination's backlog for longer than the
//! progress timeout goes on waiting while the destination keeps handling
//! messages (its heartbeat), as a node starved of cores on an
//! oversubscribed host would. One that stops handling them is still named
//! within the timeout (tests/hang.rs).

use finegrain_core::{Args, HandlerInfo, HandlerTable, NodeId, Payload, Policy, Proc, SyncKey, Topology};
use finegrain_rt::{run, RtConfig};
use std::time::{Duration, Instant};

/// How long each message of the backlog takes to handle.
const SLOW: Duration = Duration::from_millis(40);
/// Messages ahead of the request: about 3.5 progress timeouts of work.
const BACKLOG: u32 = 18;

#[test]
fn a_reply_behind_a_destination_that_keeps_handling_messages_is_waited_for() {
    let info = |n: &str| HandlerInfo { name: n.into(), body_cycles: 0, code_bytes: 0 };
    let mut t = HandlerTable::new();
    let slow = t
        .register(info("slow"), |_, _| {
            std::thread::sleep(SLOW);
            Ok(())
        })
        .unwrap();
    let pong = t.register(info("pong"), |_, _| Ok(())).unwrap();
    let ping = t.register(info("ping"), move |ctx, _| ctx.reply_bytes(pong, Args::default(), &[])).unwrap();
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Fixed { protocol_procs: 1 });
    cfg.segment_bytes = 1 << 14;
    cfg.pin = false;
    cfg.handler_limit_ms = 2000;
    cfg.progress_timeout_ms = 200;
    let start = Instant::now();
    let r = run(&cfg, &t, |p| async move {
        if p.node().0 == 0 {
            for _ in 0..BACKLOG {
                Proc::send_keyed(&p, NodeId(1), slow, SyncKey::NoSync, Args::default(), Payload::none()).await?;
            }
            p.request(NodeId(1), ping, Args::default(), Payload::none()).await?;
        }
        Ok(())
    });
    let took = start.elapsed();
    r.unwrap_or_else(|e| panic!("the run failed after {took:?}: {e}"));
    assert!(took >= SLOW * BACKLOG, "the backlog took {took:?}");
}
