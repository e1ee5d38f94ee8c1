//! The native runtime runs Proc programs correctly under every policy.

use finegrain_core::{
    AmError, Args, HandlerId, HandlerInfo, HandlerTable, Message, NodeId, Payload, Policy, Proc, Relinquish, Topology,
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
    // Node 1's threads only compute, in 1 ms pieces, until node 0's threads
    // have had all their requests answered (at most 10 s, so that a bug
    // cannot hang the test), which only an interrupt can do meanwhile. A
    // fixed 20 ms of computation could end before a loaded machine ran
    // node 0's threads at all.
    let pingers_done = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let program = |p: finegrain_rt::RtProc| {
        let done = pingers_done.clone();
        async move {
            if p.node().0 == 1 {
                let t0 = std::time::Instant::now();
                while done.load(std::sync::atomic::Ordering::Acquire) < 2 && t0.elapsed().as_secs() < 10 {
                    p.work(1_000_000).await;
                }
                Ok(0)
            } else {
                let sum = pinger(p, request, 100, 0).await;
                done.fetch_add(1, std::sync::atomic::Ordering::Release);
                sum
            }
        }
    };
    let out = run(&cfg, &table, program).unwrap();
    let node1: u64 = out.stats.threads.iter().filter(|t| t.node == 1).map(|t| t.interrupts).sum();
    assert!(node1 > 0, "requests to an all-computing node are served by interrupts: {:?}", out.stats.threads);
    assert_eq!(out.stats.messages, 2 * 2 * 100);
    let mut off = cfg.clone();
    off.run.notification = finegrain_core::Notification::Poll;
    // Without interrupts the run still completes: node 1 serves once it
    // stops computing (20 ms here).
    let fixed_program = |p: finegrain_rt::RtProc| async move {
        if p.node().0 == 1 {
            for _ in 0..20 {
                p.work(1_000_000).await;
            }
            Ok(0)
        } else {
            pinger(p, request, 100, 0).await
        }
    };
    let out = run(&off, &table, fixed_program).unwrap();
    assert_eq!(out.stats.interrupts, 0);
    assert_eq!(out.stats.messages, 2 * 2 * 100);
}

/// Several sender threads stream numbered one-way messages to one node;
/// its handler checks that each sender's messages arrive exactly once and in
/// order. Size: FINEGRAIN_STRESS_MESSAGES (default 1 million; the full test
/// is `stress_ten_million_messages`, run with `--ignored --release`).
fn stress(total: u64, ring_slots: usize) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let senders = 3u64;
    let per_sender = total / senders;
    let expected: Arc<Vec<AtomicU64>> = Arc::new((0..senders).map(|_| AtomicU64::new(0)).collect());
    let errors = Arc::new(AtomicU64::new(0));
    let mut t = HandlerTable::new();
    let (e2, err2) = (expected.clone(), errors.clone());
    let check = t
        .register(info("check_sequence"), move |_, m: &Message| {
            let sender = m.args.get(0) as usize;
            let seq = m.args.get(1);
            let want = e2[sender].load(Ordering::Relaxed);
            if seq != want || m.payload.len() != (seq % 24) as usize {
                err2.fetch_add(1, Ordering::Relaxed);
            }
            e2[sender].store(seq + 1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    // Node 0: three sender threads and a protocol thread; node 1 receives.
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 4 }, Policy::Fixed { protocol_procs: 1 });
    cfg.segment_bytes = 1 << 14;
    cfg.ring_slots = ring_slots;
    let expected3 = expected.clone();
    let out = run(&cfg, &t, move |p| {
        let expected = expected3.clone();
        async move {
            if p.node().0 == 0 {
                let me = p.thread().0 as u64;
                let bytes = [7u8; 24];
                for seq in 0..per_sender {
                    p.send(NodeId(1), check, &[me, seq], &bytes[..(seq % 24) as usize])?;
                }
            } else {
                // Node 1's compute threads wait until everything arrived.
                while expected.iter().map(|e| e.load(std::sync::atomic::Ordering::Relaxed)).sum::<u64>()
                    < per_sender * senders
                {
                    std::thread::yield_now();
                }
            }
            Ok(())
        }
    })
    .unwrap();
    assert_eq!(errors.load(Ordering::Relaxed), 0, "a message was lost, duplicated or reordered");
    for e in expected.iter() {
        assert_eq!(e.load(Ordering::Relaxed), per_sender);
    }
    assert_eq!(out.stats.messages, per_sender * senders);
    assert_eq!(out.stats.handlers, per_sender * senders);
}

fn stress_size() -> u64 {
    std::env::var("FINEGRAIN_STRESS_MESSAGES").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000)
}

#[test]
fn stress_many_senders() {
    stress(stress_size(), 256);
}

#[test]
#[ignore = "10 million messages: run with --release -- --ignored"]
fn stress_ten_million_messages() {
    stress(10_000_000, 256);
}

#[test]
fn smallest_ring_loses_nothing() {
    // Rings just large enough for two of the largest messages: often full,
    // so one-way senders wait for room. (That replies spill rather than
    // wait is shown below, where the ring is certain to be full.)
    stress(200_000, 256);
    let (table, request) = echo_table();
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 3 }, Policy::Floating);
    cfg.segment_bytes = 1 << 14;
    cfg.ring_slots = 256;
    let out = run(&cfg, &table, |p| pinger(p, request, 500, 0)).unwrap();
    assert_eq!(out.stats.messages, 2 * 3 * 2 * 500);
}

/// Node 0's only protocol thread is held in a handler while node 1's
/// answers node 0's requests, so nothing drains the ring that carries the
/// replies: it takes `fit` of the largest replies, the next one must spill,
/// and a small one after it would fit in the room left but must wait behind
/// it. The reply handlers note the order the replies arrived in.
#[test]
fn replies_that_find_their_ring_full_spill_in_order_and_all_arrive() {
    use finegrain_rt::MAX_PAYLOAD;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    let ring_slots = 256;
    // A reply's record: token, source, its one argument and the payload
    // packed eight bytes to a word, seven words to a 64-byte slot (74).
    let slots_per_reply = (2 + 1 + MAX_PAYLOAD / 8).div_ceil(7);
    let fit = (ring_slots / slots_per_reply) as u64;
    let big_replies = fit + 1;
    let requesters = big_replies + 1;
    let payload_of = move |k: u64| -> Vec<u8> {
        let len = if k < big_replies { MAX_PAYLOAD } else { 8 };
        (0..len).map(|i| (i as u64 * 7 + k) as u8).collect()
    };
    let finished = finishes_within(60, move || {
        let holding = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let arrived = Arc::new(Mutex::new(Vec::new()));
        let mut t = HandlerTable::new();
        let (h, r) = (holding.clone(), release.clone());
        let hold = t
            .register(info("hold"), move |_, _| {
                h.store(true, Ordering::Release);
                while !r.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                Ok(())
            })
            .unwrap();
        let a = arrived.clone();
        let reply = t
            .register(info("numbered_reply"), move |_, m| {
                a.lock().unwrap().push(m.args.get(0));
                Ok(())
            })
            .unwrap();
        let request = t
            .register(info("numbered_request"), move |ctx, _| {
                let k = answered.fetch_add(1, Ordering::Relaxed);
                ctx.reply_bytes(reply, Args::new(&[k])?, &payload_of(k))?;
                // Node 0 drains again only once every reply has been sent.
                if k + 1 == requesters {
                    release.store(true, Ordering::Release);
                }
                Ok(())
            })
            .unwrap();
        let topology = Topology { nodes: 2, procs_per_node: requesters as u32 + 1 };
        let mut cfg = RtConfig::new(topology, Policy::Fixed { protocol_procs: 1 });
        cfg.segment_bytes = 1 << 14;
        cfg.ring_slots = ring_slots;
        let out = run(&cfg, &t, |p| {
            let holding = holding.clone();
            async move {
                if p.node().0 == 1 {
                    return Ok(None);
                }
                if p.thread().0 == 0 {
                    p.send(NodeId(0), hold, &[], &[])?;
                }
                while !holding.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                let r = p.request(NodeId(1), request, Args::default(), Payload::none()).await?;
                let k = r.args.get(0);
                assert_eq!(r.payload.as_slice(), &payload_of(k)[..], "reply {k} arrived intact");
                Ok(Some(k))
            }
        })
        .unwrap();
        let mut answers: Vec<u64> = out.results.iter().flatten().copied().collect();
        answers.sort_unstable();
        assert_eq!(answers, (0..requesters).collect::<Vec<_>>(), "every requester got its own reply");
        assert_eq!(*arrived.lock().unwrap(), (0..requesters).collect::<Vec<_>>(), "replies arrive in sending order");
        assert_eq!(out.stats.spilled, requesters - fit, "the replies after the first {fit} spilled");
    });
    assert!(finished, "the run did not finish within 60 s");
}

#[test]
fn a_panicking_handler_is_an_error_not_a_hang() {
    let mut t = HandlerTable::new();
    let boom = t.register(info("boom"), |_, _| panic!("handler bug")).unwrap();
    for policy in [Policy::Single, Policy::Fixed { protocol_procs: 1 }, Policy::Floating] {
        let ppn = if policy == Policy::Single { 1 } else { 2 };
        let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: ppn }, policy);
        cfg.segment_bytes = 1 << 14;
        let e = run(&cfg, &t, |p| async move {
            p.request(NodeId((p.node().0 + 1) % 2), boom, Args::default(), Payload::none()).await.map(|_| ())
        })
        .unwrap_err()
        .to_string();
        assert_eq!(e, "handler 'boom' failed: panicked", "{policy:?}");
    }
}

#[test]
fn a_silent_request_handler_is_an_error_not_a_hang() {
    let mut t = HandlerTable::new();
    let silent = t.register(info("silent"), |_, _| Ok(())).unwrap();
    let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Fixed { protocol_procs: 1 });
    let e = run(&cfg, &t, |p| async move {
        p.request(NodeId((p.node().0 + 1) % 2), silent, Args::default(), Payload::none()).await.map(|_| ())
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("handler 'silent' failed: returned without replying"), "{e}");
}

/// An application that fails stops the run with its own error, under every
/// policy: the other node's requests would never be answered (under Fixed
/// its protocol thread stops), so waiting for them would hang.
#[test]
fn a_failing_application_stops_the_run_with_its_error() {
    for policy in [Policy::Single, Policy::Fixed { protocol_procs: 1 }, Policy::Floating] {
        let finished = finishes_within(60, move || {
            let (table, request) = echo_table();
            let ppn = if policy == Policy::Single { 1 } else { 2 };
            let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: ppn }, policy);
            cfg.segment_bytes = 1 << 14;
            let e = run(&cfg, &table, |p| async move {
                if p.node().0 == 0 {
                    return Err(AmError::Aborted("app gives up".into()));
                }
                pinger(p, request, 1_000, 100_000).await
            })
            .unwrap_err()
            .to_string();
            // Each of node 0's threads fails; the first one reported.
            assert!(
                e.starts_with("node 0 thread ") && e.ends_with(" failed: the run was aborted: app gives up"),
                "{policy:?}: {e}"
            );
        });
        assert!(finished, "{policy:?}: the run did not stop within 60 s");
    }
}

/// A reply the runtime refuses (too large a payload) is no reply: the
/// handler may still send a valid one, which the requester receives.
#[test]
fn a_refused_reply_leaves_the_handler_free_to_reply() {
    let finished = finishes_within(60, || {
        let refusals = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut t = HandlerTable::new();
        let reply = t.register(info("r"), |_, _| Ok(())).unwrap();
        let noted = refusals.clone();
        let request = t
            .register(info("q"), move |ctx, _| {
                let too_large = vec![0u8; finegrain_rt::MAX_PAYLOAD + 1];
                let refused = ctx.reply_bytes(reply, Args::default(), &too_large).map_err(|e| e.to_string());
                noted.lock().unwrap().push(refused);
                ctx.reply_bytes(reply, Args::default(), &[1, 2, 3])
            })
            .unwrap();
        let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Fixed { protocol_procs: 1 });
        let out = run(&cfg, &t, |p| async move {
            let r = p.request(NodeId((p.node().0 + 1) % 2), request, Args::default(), Payload::none()).await?;
            assert_eq!(r.payload.as_slice(), &[1, 2, 3], "the valid reply arrived");
            Ok(())
        })
        .unwrap();
        assert_eq!(out.stats.requests, 2);
        let refused =
            Err("handler 'q''s reply payload of 4097 bytes: allowed at most 4096 bytes on the native runtime"
                .to_string());
        assert_eq!(*refusals.lock().unwrap(), [refused.clone(), refused]);
    });
    assert!(finished, "the requester waited for ever");
}

/// The largest payload is carried whole; one byte more is refused before
/// anything is sent, with the limit named.
#[test]
fn a_payload_over_the_limit_is_refused_before_it_is_sent() {
    use finegrain_rt::MAX_PAYLOAD;
    let finished = finishes_within(60, || {
        let (table, request) = echo_table();
        let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single);
        let out = run(&cfg, &table, |p| async move {
            let peer = NodeId((p.node().0 + 1) % 2);
            let largest: Vec<u8> = (0..MAX_PAYLOAD).map(|i| (i * 31) as u8).collect();
            let r = p.request(peer, request, Args::new(&[1])?, Payload::bytes(&largest)).await?;
            assert_eq!(r.payload.as_slice(), &largest[..], "the largest payload came back whole");
            let over = vec![1u8; MAX_PAYLOAD + 1];
            let request_refused = p.request(peer, request, Args::new(&[2])?, Payload::bytes(&over)).await.unwrap_err();
            let send_refused = p.send(peer, request, &[3], &over).unwrap_err();
            Ok([request_refused, send_refused])
        })
        .unwrap();
        let refused = AmError::PayloadTooLarge {
            what: "payload".into(),
            given: MAX_PAYLOAD + 1,
            max: MAX_PAYLOAD,
            platform: "the native runtime",
        };
        assert_eq!(refused.to_string(), "payload of 4097 bytes: allowed at most 4096 bytes on the native runtime");
        assert!(out.results.iter().flatten().all(|e| *e == refused), "{:?}", out.results);
        assert_eq!(out.stats.messages, 2 * 2, "only the largest payload's request and reply were sent");
    });
    assert!(finished, "the run did not finish within 60 s");
}

#[test]
fn fixed_protocol_threads_may_park_between_messages() {
    let (table, request) = echo_table();
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Fixed { protocol_procs: 1 });
    cfg.segment_bytes = 1 << 14;
    cfg.park_after_polls = Some(50);
    // Long computations between requests: the protocol threads park and are
    // woken by the next sender.
    let out = run(&cfg, &table, |p| pinger(p, request, 100, 50_000)).unwrap();
    assert_eq!(out.stats.messages, 2 * 2 * 100);
    let protocol: Vec<_> = out.stats.threads.iter().filter(|t| t.role == "protocol").collect();
    let parks: u64 = protocol.iter().map(|t| t.parks).sum();
    let woken: u64 = protocol.iter().map(|t| t.parks_woken).sum();
    assert!(parks > 0, "the protocol threads never parked");
    // Without wake-ups every park would last its whole timeout, and the
    // run would still end. Only some need to end early: on a loaded
    // machine a woken thread may not run again before the timeout.
    assert!(woken > 0, "none of {parks} parks ended before the timeout: senders do not wake parked threads");
}

/// Runs `f` on a thread of its own; false if it has not finished after
/// `secs` seconds (a hang fails the test instead of blocking the suite).
/// A panic in `f` is raised again here.
fn finishes_within(secs: u64, f: impl FnOnce() + Send + 'static) -> bool {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match finished.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(Ok(())) => true,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => false,
    }
}

/// Runs `body` on a 2 x 2 Floating cluster under hand-off and under eager,
/// each within 60 s (a hang fails the test instead of stalling it).
fn finishes_under_both_relinquish_rules(body: fn(&RtConfig)) {
    for relinquish in [Relinquish::Handoff, Relinquish::Eager] {
        let finished = finishes_within(60, move || {
            let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Floating);
            cfg.segment_bytes = 1 << 14;
            cfg.run.relinquish = relinquish;
            body(&cfg)
        });
        assert!(finished, "{relinquish:?}: the run did not finish within 60 s");
    }
}

#[test]
fn hand_off_gives_the_role_up_once_no_peer_can_come_to_wait() {
    // The node's other thread returns at once; the last requester's reply
    // then arrives with nobody left to hand the role to.
    finishes_under_both_relinquish_rules(|cfg| {
        let (table, request) = echo_table();
        let out = run(cfg, &table, |p| async move {
            if (p.node().0, p.thread().0) != (0, 0) {
                return Ok(0);
            }
            p.work(200_000).await;
            pinger(p, request, 5, 0).await
        })
        .unwrap();
        assert_eq!(out.stats.requests, 5);
    });
}

#[test]
fn hand_off_gives_the_role_to_a_peer_that_idles() {
    // Node 0's thread 1 idles (serving) until thread 0's one request is
    // answered. Under hand-off thread 0 kept the role, waiting for a peer
    // to come and wait for a reply, and an idle peer never counted: the
    // run hung.
    finishes_under_both_relinquish_rules(|cfg| {
        let (table, request) = echo_table();
        let answered = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let out = run(cfg, &table, |p| {
            let answered = answered.clone();
            async move {
                if p.node().0 != 0 {
                    return Ok(());
                }
                if p.thread().0 == 0 {
                    p.request(NodeId(1), request, Args::new(&[0])?, Payload::none()).await?;
                    answered.store(true, std::sync::atomic::Ordering::Release);
                } else {
                    while !answered.load(std::sync::atomic::Ordering::Acquire) {
                        p.idle(10_000).await;
                    }
                }
                Ok::<_, AmError>(())
            }
        })
        .unwrap();
        assert_eq!(out.stats.requests, 1);
    });
}

#[test]
fn hand_off_is_refused_where_no_thread_gives_the_role_up() {
    use finegrain_core::Discipline;
    let (table, _) = echo_table();
    let cases = [
        (Policy::Fixed { protocol_procs: 1 }, Discipline::Serial, "fixed with serial"),
        (Policy::Floating, Discipline::Pdq, "floating with pdq"),
        (Policy::Floating, Discipline::SpinLock, "floating with spin-lock"),
    ];
    for (policy, discipline, named) in cases {
        let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, policy);
        cfg.run.dispatch.discipline = discipline;
        cfg.run.relinquish = Relinquish::Handoff;
        let err = run(&cfg, &table, |_p| async move { Ok::<_, AmError>(()) }).unwrap_err().to_string();
        assert!(err.contains("invalid relinquish = handoff") && err.contains(named), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

#[test]
fn more_arguments_than_a_message_carries_are_refused() {
    // Eight words used to overflow the header's count into its kind bit: the
    // request arrived as a reply and its sender waited for ever.
    let finished = finishes_within(60, || {
        let (table, request) = echo_table();
        let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single);
        let out = run(&cfg, &table, |p| async move {
            let peer = NodeId((p.node().0 + 1) % 2);
            let refused = p.request_with(peer, request, &[1, 2, 3, 4, 5, 6, 7, 8], &[], |_| ()).unwrap_err();
            assert_eq!(p.send(peer, request, &[0; 5], &[]).unwrap_err(), AmError::TooManyArgs { given: 5 });
            Ok(refused)
        })
        .unwrap();
        assert!(out.results.iter().all(|e| *e == AmError::TooManyArgs { given: 8 }), "{:?}", out.results);
        assert_eq!(out.stats.messages, 0, "nothing was sent");
    });
    assert!(finished, "the run did not finish within 60 s");
}

/// Split-phase use of one-way messages: every thread sends requests
/// without waiting, their handlers reply, the replies' handler counts them
/// at the sender's node, and `wait_until` returns once all are in.
#[test]
fn replies_to_one_way_messages_run_at_the_sender_and_end_its_wait() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    const SENT: u64 = 300;
    for (policy, ppn) in [(Policy::Single, 1), (Policy::Fixed { protocol_procs: 1 }, 3), (Policy::Floating, 2)] {
        let threads = ppn.min(2) as usize;
        let arrived: Arc<Vec<AtomicU64>> = Arc::new((0..3 * threads).map(|_| AtomicU64::new(0)).collect());
        let mut t = HandlerTable::new();
        let counts = arrived.clone();
        let reply = t
            .register(info("counted"), move |ctx, m: &Message| {
                counts[ctx.node().index() * threads + m.src_thread.index()].fetch_add(m.args.get(0), Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
        let request = t.register(info("answer"), move |ctx, m: &Message| ctx.reply_bytes(reply, m.args, &[])).unwrap();
        let cfg = RtConfig::new(Topology { nodes: 3, procs_per_node: ppn }, policy);
        let arrived_in = arrived.clone();
        let out = run(&cfg, &t, move |p| {
            let arrived = arrived_in.clone();
            async move {
                let me = p.node().index() * p.threads_per_node() as usize + p.thread().index();
                for i in 0..SENT {
                    let peer = NodeId((p.node().0 + 1 + i as u32 % 2) % p.nodes());
                    Proc::send_keyed(
                        &p,
                        peer,
                        request,
                        finegrain_core::SyncKey::NoSync,
                        Args::new(&[1])?,
                        Payload::none(),
                    )
                    .await?;
                }
                p.wait_until(|| arrived[me].load(Ordering::Relaxed) == SENT).await?;
                Ok(arrived[me].load(Ordering::Relaxed))
            }
        });
        let out = out.unwrap_or_else(|e| panic!("{policy:?}: {e}"));
        assert!(out.results.iter().all(|&n| n == SENT), "{policy:?}: {:?}", out.results);
    }
}

/// A wait no handler can end fails the run within its progress timeout
/// instead of hanging.
#[test]
fn a_wait_nothing_ends_is_an_error_not_a_hang() {
    let finished = finishes_within(60, || {
        let (table, _) = echo_table();
        let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single);
        cfg.progress_timeout_ms = 300;
        let e = run(&cfg, &table, |p| async move { p.wait_until(|| false).await }).unwrap_err().to_string();
        assert!(e.contains("waited for a condition (Proc::wait_until)"), "{e}");
    });
    assert!(finished, "the run did not finish within 60 s");
}

#[test]
fn one_way_messages_sent_just_before_returning_are_all_handled() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    for (policy, ppn) in [(Policy::Single, 1), (Policy::Fixed { protocol_procs: 1 }, 2), (Policy::Floating, 2)] {
        let handled = Arc::new(AtomicU64::new(0));
        let mut t = HandlerTable::new();
        let count = Arc::clone(&handled);
        let note = t
            .register(info("note"), move |_, _| {
                count.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
        let mut cfg = RtConfig::new(Topology { nodes: 3, procs_per_node: ppn }, policy);
        cfg.segment_bytes = 1 << 14;
        let per_thread = 200;
        let out = run(&cfg, &t, |p| async move {
            for i in 0..per_thread {
                p.send(NodeId((p.node().0 + 1 + i as u32 % 2) % 3), note, &[i], &[])?;
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{policy:?}: {e}"));
        let sent = out.results.len() as u64 * per_thread;
        assert_eq!(handled.load(Ordering::Relaxed), sent, "{policy:?}: every one-way message was handled");
        assert_eq!(out.stats.handlers, sent, "{policy:?}");
    }
}

/// `request_with` lends its closure the thread's one reply buffer. A
/// request made from inside the closure (through a clone of the handle)
/// would write its reply there while the closure still reads the first:
/// the audit's reproducer saw `s[0]` turn from 1 into 2. Such a request is
/// refused; a one-way send, which gets no reply, may forward the lent
/// payload; and once the closure returns, requests work again.
#[test]
fn a_request_from_inside_request_with_cannot_overwrite_the_lent_reply() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let finished = finishes_within(60, || {
        let forwarded = Arc::new(AtomicU64::new(0));
        let mut t = HandlerTable::new();
        let reply = t.register(info("echo_reply"), |_, _| Ok(())).unwrap();
        let echo = t
            .register(info("echo"), move |ctx, m| ctx.reply_bytes(reply, Args::default(), m.payload.as_slice()))
            .unwrap();
        let seen = forwarded.clone();
        let sink = t
            .register(info("sink"), move |_, m| {
                seen.fetch_add(m.payload.as_slice()[0] as u64, Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
        for policy in [Policy::Single, Policy::Fixed { protocol_procs: 1 }, Policy::Floating] {
            let ppn = if policy == Policy::Single { 1 } else { 2 };
            let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: ppn }, policy);
            let out = run(&cfg, &t, |p| async move {
                let peer = NodeId((p.node().0 + 1) % 2);
                let p2 = p.clone();
                let (first, nested) = p.request_with(peer, echo, &[], &[1], |v| {
                    let s = v.payload();
                    let nested = p2.request_with(peer, echo, &[], &[2], |_| ());
                    p2.send(peer, sink, &[], s).expect("a one-way send may forward the lent payload");
                    (s[0], nested)
                })?;
                let after = p.request_with(peer, echo, &[], &[3], |v| v.payload()[0])?;
                Ok((first, nested.map_err(|e| e.to_string()), after))
            })
            .unwrap();
            for (first, nested, after) in out.results {
                assert_eq!(first, 1, "{policy:?}: the lent reply changed under the closure");
                let e = nested.unwrap_err();
                assert!(e.contains("inside request_with's closure") && !e.contains('\n'), "{policy:?}: {e}");
                assert_eq!(after, 3, "{policy:?}: a request after the closure returned is answered");
            }
        }
        // Compute threads: Single's 2, Fixed's 2 (one per node), Floating's 4.
        let threads: u64 = 2 + 2 + 4;
        assert_eq!(forwarded.load(Ordering::Relaxed), threads, "every forwarded payload arrived");
    });
    assert!(finished, "the run did not finish within 60 s");
}

/// Under Fixed, compute threads never handle messages. `RtProc::serve`
/// from one used to serve anyway (under a parallel discipline it ran
/// handlers beside the protocol thread); it is refused instead, and the
/// protocol thread handles everything.
#[test]
fn serve_from_a_fixed_compute_thread_is_refused() {
    use finegrain_core::{Discipline, SyncKey};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    const N: u64 = 20;
    let finished = finishes_within(60, || {
        let holding = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let handled = Arc::new(AtomicU64::new(0));
        let ran_on = Arc::new(Mutex::new(Vec::new()));
        let mut t = HandlerTable::new();
        let (h, r) = (holding.clone(), release.clone());
        let hold = t
            .register(info("hold"), move |_, _| {
                h.store(true, Ordering::Release);
                let t0 = std::time::Instant::now();
                while !r.load(Ordering::Acquire) && t0.elapsed().as_secs() < 10 {
                    std::thread::yield_now();
                }
                Ok(())
            })
            .unwrap();
        let (n, on) = (handled.clone(), ran_on.clone());
        let noted = t
            .register(info("noted"), move |_, _| {
                on.lock().unwrap().push(std::thread::current().name().unwrap_or("?").to_string());
                n.fetch_add(1, Ordering::Release);
                Ok(())
            })
            .unwrap();
        let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Fixed { protocol_procs: 1 });
        cfg.run.dispatch.discipline = Discipline::Pdq;
        cfg.segment_bytes = 1 << 14;
        let out = run(&cfg, &t, |p| {
            let (holding, release, handled) = (holding.clone(), release.clone(), handled.clone());
            async move {
                if p.node().0 == 1 {
                    return Ok(None);
                }
                // The protocol thread is busy in `hold` while the messages
                // wait: only a serving compute thread could take them.
                p.send_keyed(NodeId(0), hold, SyncKey::NoSync, &[], &[])?;
                while !holding.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                for _ in 0..N {
                    p.send_keyed(NodeId(0), noted, SyncKey::NoSync, &[], &[])?;
                }
                let t0 = std::time::Instant::now();
                let served = p.serve(|| handled.load(Ordering::Acquire) == N || t0.elapsed().as_secs() >= 2);
                release.store(true, Ordering::Release);
                while handled.load(Ordering::Acquire) < N {
                    std::thread::yield_now();
                }
                Ok(Some(served.map_err(|e| e.to_string())))
            }
        })
        .unwrap();
        let e = out.results[0].clone().unwrap().unwrap_err();
        assert!(
            e.contains("policy fixed") && e.contains("single, floating and coprocessor") && !e.contains('\n'),
            "{e}"
        );
        let ran_on = ran_on.lock().unwrap();
        assert_eq!(ran_on.len() as u64, N);
        assert!(ran_on.iter().all(|name| name == "fg-n0-t1"), "handled on {ran_on:?}, not only the protocol thread");
    });
    assert!(finished, "the run did not finish within 60 s");
}

/// An access outside its region names who made it: the handler by name
/// (it used to be reported as handler '(access)'), an application thread
/// by node and thread (it used to be reported with neither).
#[test]
fn an_access_outside_its_region_names_who_made_it() {
    use finegrain_core::{Access, Region, ThreadId};
    let finished = finishes_within(60, || {
        let mut t = HandlerTable::new();
        let toucher = t
            .register(info("toucher"), |ctx, _| {
                ctx.access(Region::Segment(ThreadId(0)), 1 << 40, 8, Access::Read);
                Ok(())
            })
            .unwrap();
        let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single);
        cfg.segment_bytes = 1 << 14;
        let e = run(&cfg, &t, |p| async move {
            if p.node().0 == 0 {
                p.send(NodeId(1), toucher, &[], &[])?;
            }
            Ok(())
        })
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("handler 'toucher' failed: access of 8 bytes at offset 1099511627776 is outside"), "{e}");
        let e = run(&cfg, &t, |p| async move {
            if p.node().0 == 1 {
                p.access(Region::Segment(ThreadId(0)), 1 << 14, 8, Access::Write).await;
            }
            Ok(())
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "node 1 thread 0 failed: the run was aborted: thread access rejected: access of 8 bytes at offset \
                 16384 is outside"
            ),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    });
    assert!(finished, "the run did not finish within 60 s");
}
