//! Runs leave no threads behind. In its own test binary (its own process),
//! so no other test's threads are counted.

use finegrain_core::{Args, HandlerId, HandlerInfo, HandlerTable, Message, NodeId, Payload, Policy, Proc, Topology};
use finegrain_rt::{run, RtConfig};

fn echo_table() -> (HandlerTable, HandlerId) {
    let info = |n: &str| HandlerInfo { name: n.into(), body_cycles: 0, code_bytes: 0 };
    let mut t = HandlerTable::new();
    let reply = t.register(info("echo_reply"), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("echo"), move |ctx, m: &Message| ctx.reply_bytes(reply, Args::new(&[m.args.get(0) + 1])?, &[]))
        .unwrap();
    (t, request)
}

fn threads_in_process() -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines().find(|l| l.starts_with("Threads:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn runs_leave_no_threads_behind() {
    let (table, request) = echo_table();
    let before = threads_in_process();
    for policy in [Policy::Single, Policy::Fixed { protocol_procs: 1 }, Policy::Floating] {
        let ppn = if policy == Policy::Single { 1 } else { 3 };
        let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: ppn }, policy);
        cfg.segment_bytes = 1 << 14;
        run(&cfg, &table, |p| async move {
            for i in 0..20 {
                p.work(10).await;
                let peer = NodeId((p.node().0 + 1) % p.nodes());
                p.request(peer, request, Args::new(&[i])?, Payload::none()).await?;
            }
            Ok(())
        })
        .unwrap();
    }
    // A joined thread can still be counted for a moment while the kernel
    // finishes its exit (it wakes the joiner before it is reaped); a leaked
    // one stays.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut after = threads_in_process();
    while after != before && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
        after = threads_in_process();
    }
    assert_eq!(after, before, "every runtime thread was joined");
}
