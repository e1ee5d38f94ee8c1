//! The native runtime runs Proc programs correctly under every policy.

use finegrain_core::{
    AmError, Args, HandlerId, HandlerInfo, HandlerTable, Message, NodeId, Payload, Policy, Proc, Topology,
};
use finegrain_rt::{run, RtConfig};

fn info(name: &str) -> HandlerInfo {
    HandlerInfo { name: name.into(), body_cycles: 0, code_bytes: 0 }
}

fn echo_table() -> (HandlerTable, HandlerId) {
    let mut t = HandlerTable::new();
    let reply = t.register(info("echo_reply"), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("echo"), move |ctx, m: &Message| {
            ctx.reply_bytes(reply, Args::new(&[m.args.get(0) + 1, m.src_thread.0 as u64])?, m.payload.as_slice())
        })
        .unwrap();
    (t, request)
}

async fn pinger<P: Proc>(p: P, request: HandlerId, n: u64, work: u64) -> Result<u64, AmError> {
    let mut sum = 0;
    for i in 0..n {
        if work > 0 {
            p.work(work).await;
        }
        let peer = NodeId((p.node().0 + 1 + (i as u32 % (p.nodes() - 1).max(1))) % p.nodes());
        let payload: Vec<u8> = (0..(i % 70) as u8).collect();
        let r = p.request(peer, request, Args::new(&[i])?, Payload::bytes(&payload)).await?;
        assert_eq!(r.args.get(0), i + 1, "the reply answers this request");
        assert_eq!(r.args.get(1), p.thread().0 as u64, "and this thread");
        assert_eq!(r.payload.as_slice(), &payload[..], "payload echoed intact");
        sum += r.args.get(0);
    }
    Ok(sum)
}

fn check(policy: Policy, nodes: u32, ppn: u32, work: u64) {
    let (table, request) = echo_table();
    let mut cfg = RtConfig::new(Topology { nodes, procs_per_node: ppn }, policy);
    cfg.segment_bytes = 1 << 16;
    let n = 300;
    let out = run(&cfg, &table, |p| pinger(p, request, n, work)).unwrap_or_else(|e| panic!("{policy:?}: {e}"));
    let threads = (policy.compute_procs(ppn) * nodes) as u64;
    assert_eq!(out.results.len() as u64, threads);
    assert!(out.results.iter().all(|&s| s == n * (n + 1) / 2));
    assert_eq!(out.stats.requests, threads * n);
    assert_eq!(out.stats.messages, 2 * threads * n, "every request got one reply");
    assert_eq!(out.stats.handlers, out.stats.messages, "every message was handled once");
}

#[test]
fn single() {
    check(Policy::Single, 2, 1, 0);
    check(Policy::Single, 3, 1, 200);
}

#[test]
fn fixed() {
    check(Policy::Fixed { protocol_procs: 1 }, 2, 2, 0);
    check(Policy::Fixed { protocol_procs: 1 }, 2, 3, 300);
}

#[test]
fn floating() {
    check(Policy::Floating, 2, 2, 0);
    check(Policy::Floating, 2, 2, 2000);
}

#[test]
fn floating_interrupts_when_every_thread_computes() {
    let (table, request) = echo_table();
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Floating);
    cfg.segment_bytes = 1 << 16;
    // Node 1's threads only compute (20 ms each, in pieces); node 0's send
    // them requests meanwhile, which only an interrupt can serve.
    let program = |p: finegrain_rt::RtProc| async move {
        if p.node().0 == 1 {
            for _ in 0..20 {
                p.work(1_000_000).await;
            }
            Ok(0)
        } else {
            pinger(p, request, 100, 0).await
        }
    };
    let out = run(&cfg, &table, program).unwrap();
    let node1: u64 = out.stats.threads.iter().filter(|t| t.node == 1).map(|t| t.interrupts).sum();
    assert!(node1 > 0, "requests to an all-computing node are served by interrupts: {:?}", out.stats.threads);
    assert_eq!(out.stats.messages, 2 * 2 * 100);
    let mut off = cfg.clone();
    off.interrupts = false;
    // Without interrupts the run still completes (node 1 serves once it stops computing).
    let out = run(&off, &table, program).unwrap();
    assert_eq!(out.stats.interrupts, 0);
    assert_eq!(out.stats.messages, 2 * 2 * 100);
}
