//! Engine-level properties every simulation must have, checked on small
//! hand-written programs: conservation, determinism, the Active Message
//! rule, and clear errors instead of panics or hangs.

use finegrain_core::{
    AmError, Args, CoprocLibrary, HandlerCtx, HandlerId, HandlerInfo, HandlerTable, LibraryOp, MachineConfig, Message,
    NodeId, Payload, Policy, Proc, Relinquish, Reply, SyncKey, Topology,
};
use finegrain_sim::{cycles_consistent, simulate, SimConfig, SimError};

fn config(policy: Policy, ppn: u32, seed: u64) -> SimConfig {
    SimConfig::new(MachineConfig::load("hpca97").unwrap(), Topology { nodes: 2, procs_per_node: ppn }, policy, seed)
}

fn info(name: &str) -> HandlerInfo {
    HandlerInfo { name: name.into(), body_cycles: 10, code_bytes: 128 }
}

/// An echo protocol: the request handler replies with its argument + 1.
fn echo_table() -> (HandlerTable, HandlerId) {
    let mut t = HandlerTable::new();
    let reply = t.register(info("echo_reply"), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("echo"), move |ctx, m: &Message| {
            ctx.reply(Reply { handler: reply, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() })
        })
        .unwrap();
    (t, request)
}

/// Each thread computes and sends `n` requests with a sequence number, and
/// checks every reply answers its own request.
async fn pinger<P: Proc>(p: P, request: HandlerId, n: u64, work: u64) -> Result<u64, AmError> {
    let peer = NodeId((p.node().0 + 1) % p.nodes());
    let mut sum = 0;
    for i in 0..n {
        p.work(work + (i * 37 + p.thread().0 as u64 * 11 + p.node().0 as u64 * 101) % 500).await;
        let r = p.request(peer, request, Args::new(&[i])?, Payload::none()).await?;
        assert_eq!(r.args.get(0), i + 1, "reply answers its own request");
        sum += r.args.get(0);
    }
    Ok(sum)
}

const POLICIES: [(Policy, u32); 5] = [
    (Policy::Single, 1),
    (Policy::Fixed { protocol_procs: 1 }, 2),
    (Policy::Fixed { protocol_procs: 2 }, 4),
    (Policy::Floating, 2),
    (Policy::Floating, 4),
];

#[test]
fn every_request_gets_exactly_one_reply_under_every_policy() {
    let (table, request) = echo_table();
    for (policy, ppn) in POLICIES {
        let cfg = config(policy, ppn, 3);
        let n = 50;
        let out = simulate(&cfg, &table, |p| pinger(p, request, n, 300)).unwrap();
        let threads = policy.compute_procs(ppn) as u64 * 2;
        assert_eq!(out.results.len() as u64, threads);
        assert!(out.results.iter().all(|&s| s == n * (n + 1) / 2), "{policy:?}");
        let s = &out.stats;
        assert_eq!(s.requests, threads * n, "{policy:?}");
        assert_eq!(s.replies, s.requests, "{policy:?}");
        assert_eq!(s.messages, s.requests + s.replies, "{policy:?}: delivered = sent");
        let sent: u64 = s.nodes.iter().map(|x| x.messages_sent).sum();
        let received: u64 = s.nodes.iter().map(|x| x.messages_received).sum();
        assert_eq!(sent, received, "{policy:?}");
        assert_eq!(s.handlers, s.messages, "{policy:?}: one handler per message");
        assert!(cycles_consistent(s), "{policy:?}: every processor's cycles add up to the run time");
    }
}

#[test]
fn interrupted_work_is_delayed_not_lost() {
    let (table, request) = echo_table();
    for (policy, ppn) in POLICIES {
        let mut cfg = config(policy, ppn, 5);
        cfg.machine.interrupt.overhead_cycles = 1000;
        cfg.run.relinquish = Relinquish::Eager;
        // Interrupts, not the protocol thread's switches, are under test:
        // without them both of Floating's processors compute more often.
        cfg.machine.protocol.protocol_thread = false;
        let n = 40;
        let out = simulate(&cfg, &table, |p| pinger(p, request, n, 2000)).unwrap();
        let threads = policy.compute_procs(ppn) as u64;
        let offset = |node: u64, t: u64| (0..n).map(|i| (i * 37 + t * 11 + node * 101) % 500).sum::<u64>();
        let offsets: u64 =
            (0..2).flat_map(|node| (0..threads).map(move |t| (node, t))).map(|(node, t)| offset(node, t)).sum();
        let expected = 2 * threads * n * 2000 + offsets;
        assert_eq!(out.stats.cycles.compute, expected, "{policy:?}: every cycle of work is done exactly once");
        if matches!(policy, Policy::Fixed { .. }) {
            assert_eq!(out.stats.interrupts, 0, "Fixed never interrupts compute processors");
        } else {
            assert!(out.stats.interrupts > 0, "{policy:?} takes interrupts when every processor computes");
            assert!(out.stats.cycles.interrupt >= out.stats.interrupts * 1000);
        }
    }
}

#[test]
fn relinquish_rules_trade_interrupts_for_hand_offs() {
    let (table, request) = echo_table();
    let run = |rule| {
        let mut cfg = config(Policy::Floating, 2, 9);
        cfg.machine.interrupt.overhead_cycles = 3000;
        cfg.run.relinquish = rule;
        // The rules alone, on threads that send their own requests.
        cfg.machine.protocol.protocol_thread = false;
        cfg.machine.protocol.requests_via_pp = false;
        simulate(&cfg, &table, |p| pinger(p, request, 60, 3000)).unwrap().stats
    };
    let eager = run(Relinquish::Eager);
    let handoff = run(Relinquish::Handoff);
    // Hand-off keeps a protocol processor on the node once the first one
    // took the role; only the start (everyone computing) can interrupt.
    assert!(handoff.interrupts <= 2, "handoff took {} interrupts", handoff.interrupts);
    assert!(eager.interrupts > 20 * handoff.interrupts.max(1), "eager took {}", eager.interrupts);
    let acquires =
        |s: &finegrain_sim::RunStats| s.nodes.iter().flat_map(|n| &n.procs).map(|p| p.role_acquires).sum::<u64>();
    assert!(acquires(&handoff) > 0);
}

/// Under Floating at saturation messages always wait. An acting PP whose
/// reply has arrived must still hand the role to an idle peer: if it drained
/// the never-empty queue first, its own thread would starve.
#[test]
fn an_acting_pp_with_work_again_hands_the_role_to_an_idle_peer() {
    let (table, request) = echo_table();
    let cfg = config(Policy::Floating, 4, 1);
    // Requests back to back, no computation: the node is protocol-bound.
    let out = simulate(&cfg, &table, |p| async move {
        let peer = NodeId((p.node().0 + 1) % p.nodes());
        for i in 0..1000 {
            p.request(peer, request, Args::new(&[i])?, Payload::none()).await?;
        }
        Ok(())
    })
    .unwrap();
    let lat = &out.stats.request_latency;
    // Four requests per node outstanding: a request waits for a few
    // handlers at each end, never for a whole other thread's run.
    assert!(
        lat.max_cycles < 20 * lat.min_cycles,
        "a thread starved: latency {}..{} cycles (mean {:.0})",
        lat.min_cycles,
        lat.max_cycles,
        lat.mean_cycles
    );
}

#[test]
fn charged_cycles_are_computed_before_the_next_step_and_at_the_end() {
    let (table, request) = echo_table();
    let out = simulate(&config(Policy::Fixed { protocol_procs: 1 }, 2, 4), &table, |p| async move {
        let peer = NodeId((p.node().0 + 1) % p.nodes());
        p.charge(700);
        p.request(peer, request, Args::new(&[1])?, Payload::none()).await?;
        p.charge(300);
        Ok(())
    })
    .unwrap();
    let s = &out.stats;
    assert_eq!(s.cycles.compute, 2 * 1000, "both charges of both threads count as computation");
    assert!(s.sim_cycles >= 1000 + s.request_latency.max_cycles, "the run lasts until the final charge is done");
    assert!(cycles_consistent(s));
}

#[test]
fn a_poll_site_lets_a_computing_single_processor_handle_waiting_messages() {
    let (table, request) = echo_table();
    let mut cfg = config(Policy::Single, 1, 2);
    cfg.machine.interrupt.overhead_cycles = 50_000; // interrupts would be ruinous
                                                    // Polls alone: switching back from the protocol thread after a reply is
                                                    // a window in which the peer's request arrives, and unmasking then
                                                    // takes it by interrupt at once.
    cfg.machine.protocol.protocol_thread = false;
    let out = simulate(&cfg, &table, |p| async move {
        let peer = NodeId((p.node().0 + 1) % p.nodes());
        for i in 0..20 {
            for _ in 0..20 {
                p.work(100).await;
                p.poll().await;
            }
            p.request(peer, request, Args::new(&[i])?, Payload::none()).await?;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(out.stats.replies, 40);
    assert!(out.stats.interrupts <= 2, "messages were found by polls, not interrupts: {}", out.stats.interrupts);
}

fn stats_json(seed: u64) -> String {
    let (table, request) = echo_table();
    let out = simulate(&config(Policy::Floating, 3, seed), &table, |p| pinger(p, request, 30, 400)).unwrap();
    serde_json::to_string(&out.stats).unwrap()
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    assert_eq!(stats_json(11), stats_json(11));
    assert_ne!(stats_json(11), stats_json(12));
}

fn run_with(table: &HandlerTable, request: HandlerId) -> Result<(), SimError> {
    simulate(&config(Policy::Fixed { protocol_procs: 1 }, 2, 1), table, |p| pinger(p, request, 3, 100)).map(|_| ())
}

#[test]
fn second_reply_is_an_error_naming_the_handler() {
    let mut t = HandlerTable::new();
    let reply = t.register(info("r"), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("greedy"), move |ctx, m: &Message| {
            let r = Reply { handler: reply, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() };
            ctx.reply(r.clone())?;
            ctx.reply(r)
        })
        .unwrap();
    let e = run_with(&t, request).unwrap_err().to_string();
    assert_eq!(e, "handler 'greedy' sent a second reply; a request handler may send at most one reply");
}

#[test]
fn reply_from_a_reply_handler_is_an_error_naming_it() {
    let mut t = HandlerTable::new();
    // The reply handler tries to answer the reply with another message.
    let chatty = t
        .register(info("chatty_reply"), |ctx, _| {
            ctx.reply(Reply { handler: HandlerId(0), args: Args::default(), payload: Payload::none() })
        })
        .unwrap();
    let request = t
        .register(info("ask"), move |ctx, m: &Message| {
            ctx.reply(Reply { handler: chatty, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() })
        })
        .unwrap();
    let e = run_with(&t, request).unwrap_err().to_string();
    assert!(e.contains("'chatty_reply' is a reply handler"), "{e}");
}

#[test]
fn request_handler_that_never_replies_is_an_error_not_a_hang() {
    let mut t = HandlerTable::new();
    let request = t.register(info("silent"), |_, _| Ok(())).unwrap();
    let e = run_with(&t, request).unwrap_err().to_string();
    assert!(e.contains("handler 'silent' failed: returned without replying"), "{e}");
}

#[test]
fn bad_requests_come_back_to_the_thread_as_errors() {
    let (table, _) = echo_table();
    let cfg = config(Policy::Single, 1, 1);
    let e = simulate(&cfg, &table, |p| async move {
        p.request(NodeId(9), HandlerId(0), Args::default(), Payload::none()).await.map(|_| ())
    })
    .unwrap_err()
    .to_string();
    assert_eq!(e, "node 0 thread 0 failed: node 9 does not exist: the machine has nodes 0..2");
    let e = simulate(&cfg, &table, |p| async move {
        p.request(NodeId(1), HandlerId(77), Args::default(), Payload::none()).await.map(|_| ())
    })
    .unwrap_err()
    .to_string();
    assert_eq!(e, "node 0 thread 0 failed: unknown handler id 77: the table has 2 handlers");
}

#[test]
fn awaiting_a_foreign_future_is_reported() {
    let (table, _) = echo_table();
    let e = simulate(&config(Policy::Single, 1, 1), &table, |_p| async move {
        std::future::pending::<()>().await;
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("awaited something that is not a finegrain operation"), "{e}");
}

#[test]
fn invalid_topology_is_rejected_before_running() {
    let (table, request) = echo_table();
    let cfg = config(Policy::Fixed { protocol_procs: 2 }, 2, 1);
    let e = simulate(&cfg, &table, |p| pinger(p, request, 1, 1)).unwrap_err().to_string();
    assert!(e.starts_with("invalid protocol_procs = 2:"), "{e}");
}

/// Runs one thread program on Fixed 2 x 2 and returns the run's error.
fn error_of<F, Fut>(table: &HandlerTable, program: F) -> String
where
    F: Fn(finegrain_sim::SimProc) -> Fut,
    Fut: std::future::Future<Output = Result<(), AmError>>,
{
    match simulate(&config(Policy::Fixed { protocol_procs: 1 }, 2, 1), table, program) {
        Ok(_) => panic!("the run should have failed"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn durations_that_would_wrap_the_clock_end_the_run_with_an_error() {
    let (table, request) = echo_table();
    let e = error_of(&table, |p| async move {
        p.work(u64::MAX).await;
        Ok(())
    });
    assert!(e.contains("past 2^62 cycles") && e.contains(&u64::MAX.to_string()), "{e}");
    let e = error_of(&table, |p| async move {
        p.idle(u64::MAX - 5).await;
        Ok(())
    });
    assert!(e.contains("past 2^62 cycles"), "{e}");
    // Charges add up without wrapping before they are refused.
    let e = error_of(&table, |p| async move {
        p.charge(u64::MAX);
        p.charge(u64::MAX);
        let peer = NodeId((p.node().0 + 1) % p.nodes());
        p.request(peer, request, Args::new(&[1])?, Payload::none()).await?;
        Ok(())
    });
    assert!(e.contains("past 2^62 cycles"), "{e}");
    // A handler's charge too.
    let mut t = HandlerTable::new();
    let reply = t.register(info("reply"), |_, _| Ok(())).unwrap();
    let slow = t
        .register(info("slow"), move |ctx, _| {
            ctx.charge(u64::MAX);
            ctx.reply(Reply { handler: reply, args: Args::default(), payload: Payload::none() })
        })
        .unwrap();
    let e = error_of(&t, |p| async move {
        let peer = NodeId((p.node().0 + 1) % p.nodes());
        p.request(peer, slow, Args::default(), Payload::none()).await?;
        Ok(())
    });
    assert!(e.contains("past 2^62 cycles"), "{e}");
}

#[test]
fn a_thread_access_outside_its_region_ends_the_run() {
    let (table, _) = echo_table();
    let e = error_of(&table, |p| async move {
        p.access(finegrain_core::Region::RecvBuffer(p.thread()), 1 << 40, 8, finegrain_core::Access::Read).await;
        Ok(())
    });
    assert!(e.contains("thread access rejected") && e.contains("receive buffer"), "{e}");
}

/// An offset so large that offset + len wraps u64 is out of range, from a
/// thread and from a handler (it used to panic in debug builds and wrap
/// past the bounds check in release ones).
#[test]
fn an_access_whose_end_wraps_u64_is_out_of_range() {
    use finegrain_core::{Access, Region, ThreadId};
    let (table, _) = echo_table();
    let e = error_of(&table, |p| async move {
        p.access(Region::Segment(ThreadId(0)), u64::MAX - 3, 8, Access::Read).await;
        Ok(())
    });
    let at = format!("access of 8 bytes at offset {} is outside the segment", u64::MAX - 3);
    assert!(e.contains("thread access rejected") && e.contains(&at), "{e}");
    let mut t = HandlerTable::new();
    let reply = t.register(info("reply"), |_, _| Ok(())).unwrap();
    let far = t
        .register(info("far"), move |ctx, _| {
            ctx.access(Region::Segment(ThreadId(0)), u64::MAX - 3, 8, Access::Read);
            ctx.reply(Reply { handler: reply, args: Args::default(), payload: Payload::none() })
        })
        .unwrap();
    let e = error_of(&t, |p| async move {
        let peer = NodeId((p.node().0 + 1) % p.nodes());
        p.request(peer, far, Args::default(), Payload::none()).await?;
        Ok(())
    });
    assert!(e.starts_with("handler 'far' failed: ") && e.contains(&at), "{e}");
}

#[test]
fn an_interrupt_during_a_memory_stall_leaves_the_stall_owed_not_forgiven() {
    // Single processor, null handlers: only computation touches the
    // segment, so every interference miss is a compute stall. Interrupts
    // land anywhere in a burst, its stall (which comes first) included;
    // whatever part of the stall an interrupt cuts off is served when the
    // work resumes.
    let (table, request) = echo_table();
    let mut cfg = config(Policy::Single, 1, 9);
    cfg.machine.interrupt.overhead_cycles = 300;
    let out = simulate(&cfg, &table, |p| pinger(p, request, 400, 3_000)).unwrap();
    let mut interrupts = 0;
    for p in out.stats.nodes.iter().flat_map(|n| &n.procs) {
        assert_eq!(p.cycles.stall, p.misses.interference_cycles, "stall cycles = the misses' latencies");
        interrupts += p.interrupts;
    }
    assert!(interrupts > 100, "the run takes interrupts: {interrupts}");
    assert!(cycles_consistent(&out.stats));
}

/// Who wins a released role under Floating is the preset's arbitration:
/// fixed priority keeps the role on the lowest-numbered processors, while
/// round-robin from the releaser spreads it over the node.
#[test]
fn role_arbitration_decides_which_processors_serve() {
    let (table, request) = echo_table();
    let share_of_first_two = |arbitration| {
        let mut cfg = config(Policy::Floating, 8, 5);
        cfg.machine.protocol.role_arbitration = arbitration;
        // The arbitration alone: the protocol thread's switches make a
        // processor that just gave the role up slower to want it back.
        cfg.machine.protocol.protocol_thread = false;
        let out = simulate(&cfg, &table, |p| pinger(p, request, 200, 100)).unwrap();
        let node = &out.stats.nodes[0];
        let all: u64 = node.procs.iter().map(|p| p.handlers).sum();
        (node.procs[0].handlers + node.procs[1].handlers) as f64 / all as f64
    };
    let lowest = share_of_first_two(finegrain_core::RoleArbitration::Lowest);
    let round_robin = share_of_first_two(finegrain_core::RoleArbitration::RoundRobin);
    assert!(lowest > 0.8, "fixed priority: processors 0 and 1 ran {lowest:.2} of the handlers");
    assert!(round_robin < 0.5, "round-robin: processors 0 and 1 ran {round_robin:.2} of the handlers");
}

/// A handler's registered costs are bounded like a preset's: a body of
/// u64::MAX cycles used to overflow the handler's timeline (a panic in debug
/// builds, a wrapped clock and an Ok run in release ones).
#[test]
fn handler_costs_beyond_the_bounds_are_refused_naming_the_handler() {
    let huge = |body_cycles, code_bytes| {
        let mut t = HandlerTable::new();
        let reply = t.register(info("reply"), |_, _| Ok(())).unwrap();
        let request = t
            .register(HandlerInfo { name: "huge".into(), body_cycles, code_bytes }, move |ctx, m: &Message| {
                ctx.reply(Reply { handler: reply, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() })
            })
            .unwrap();
        run_with(&t, request).unwrap_err().to_string()
    };
    assert_eq!(
        huge(u64::MAX, 128),
        format!("invalid handler 'huge' body_cycles = {}: allowed at most 1000000000 cycles", u64::MAX)
    );
    assert_eq!(
        huge(1 << 62, 128),
        format!("invalid handler 'huge' body_cycles = {}: allowed at most 1000000000 cycles", 1u64 << 62)
    );
    let cache = MachineConfig::load("hpca97").unwrap().cache.size_bytes;
    assert_eq!(
        huge(10, u32::MAX),
        format!("invalid handler 'huge' code_bytes = {}: allowed at most cache.size_bytes ({cache})", u32::MAX)
    );
    // The bounds themselves are allowed.
    let mut t = HandlerTable::new();
    let reply = t.register(info("reply"), |_, _| Ok(())).unwrap();
    let request = t
        .register(
            HandlerInfo { name: "big".into(), body_cycles: 1_000_000_000, code_bytes: cache as u32 },
            move |ctx, m: &Message| {
                ctx.reply(Reply { handler: reply, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() })
            },
        )
        .unwrap();
    run_with(&t, request).unwrap();
}

/// One thread is one processor's program: it awaits one operation at a
/// time. Awaiting two at once used to lose a request (the second overwrote
/// the first in the thread's one-slot mailbox, and the first future took
/// the second's reply) and end Ok, or, with join!, fail with a message
/// blaming a foreign future.
mod two_operations_at_once {
    use super::*;
    use std::future::{poll_fn, Future};
    use std::pin::pin;
    use std::task::Poll;

    const TWO_AT_ONCE: &str = "node 0 thread 0 failed: the thread awaited two finegrain operations at once (with join!, a select, or by starting one while a dropped one was unfinished); allowed: one at a time, each awaited to completion";

    /// Runs `program` on thread 0 of node 0 (the others do nothing) against
    /// an echo handler on node 1 that counts the requests it handles.
    fn run<F, Fut>(program: F) -> (Result<Vec<u64>, String>, usize)
    where
        F: Fn(finegrain_sim::SimProc, HandlerId) -> Fut,
        Fut: Future<Output = Result<u64, AmError>>,
    {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let handled = Arc::new(AtomicUsize::new(0));
        let mut t = HandlerTable::new();
        let reply = t.register(info("echo_reply"), |_, _| Ok(())).unwrap();
        let count = handled.clone();
        let request = t
            .register(info("echo"), move |ctx, m: &Message| {
                count.fetch_add(1, Ordering::Relaxed);
                ctx.reply(Reply { handler: reply, args: Args::new(&[m.args.get(0)])?, payload: Payload::none() })
            })
            .unwrap();
        let cfg = config(Policy::Fixed { protocol_procs: 1 }, 2, 1);
        let out = simulate(&cfg, &t, |p| {
            let mine = p.node().0 == 0 && p.thread().0 == 0;
            let fut = program(p, request);
            async move {
                if mine {
                    fut.await
                } else {
                    Ok(0)
                }
            }
        });
        (out.map(|o| o.results).map_err(|e| e.to_string()), handled.load(Ordering::Relaxed))
    }

    fn ask(p: &finegrain_sim::SimProc, h: HandlerId, v: u64) -> impl Future<Output = Result<Message, AmError>> + '_ {
        p.request(NodeId(1), h, Args::new(&[v]).unwrap(), Payload::none())
    }

    #[test]
    fn select_like_polling_of_two_requests_is_refused() {
        let (out, handled) = run(|p, h| async move {
            let (mut a, mut b) = (pin!(ask(&p, h, 1)), pin!(ask(&p, h, 2)));
            // Whichever finishes first, as a select would.
            let first = poll_fn(|cx| match (a.as_mut().poll(cx), b.as_mut().poll(cx)) {
                (Poll::Ready(r), _) | (_, Poll::Ready(r)) => Poll::Ready(r),
                _ => Poll::Pending,
            })
            .await?;
            Ok(first.args.get(0))
        });
        assert_eq!(out, Err(TWO_AT_ONCE.to_string()));
        assert!(handled <= 1, "{handled}");
    }

    /// The second request started in a later poll, once the first is done
    /// but before its future took the reply (which the second's would
    /// otherwise overwrite).
    #[test]
    fn a_request_started_while_anothers_reply_waits_unclaimed_is_refused() {
        let (out, _) = run(|p, h| async move {
            let (mut a, mut b) = (pin!(ask(&p, h, 1)), pin!(ask(&p, h, 2)));
            let mut polls = 0;
            let r = poll_fn(|cx| {
                polls += 1;
                if polls == 1 {
                    return a.as_mut().poll(cx);
                }
                b.as_mut().poll(cx)
            })
            .await?;
            Ok(r.args.get(0))
        });
        assert_eq!(out, Err(TWO_AT_ONCE.to_string()));
    }

    #[test]
    fn joined_requests_are_refused() {
        let (out, _) = run(|p, h| async move {
            let (mut a, mut b) = (pin!(ask(&p, h, 1)), pin!(ask(&p, h, 2)));
            // join!: poll both until both are done.
            let (mut ra, mut rb) = (None, None);
            poll_fn(|cx| {
                if ra.is_none() {
                    if let Poll::Ready(r) = a.as_mut().poll(cx) {
                        ra = Some(r);
                    }
                }
                if rb.is_none() {
                    if let Poll::Ready(r) = b.as_mut().poll(cx) {
                        rb = Some(r);
                    }
                }
                if ra.is_some() && rb.is_some() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            Ok(ra.unwrap()?.args.get(0) * 10 + rb.unwrap()?.args.get(0))
        });
        assert_eq!(out, Err(TWO_AT_ONCE.to_string()));
    }

    /// A work and a request at once are two operations too.
    #[test]
    fn any_two_operations_at_once_are_refused() {
        let (out, _) = run(|p, h| async move {
            let (mut a, mut b) = (pin!(p.work(100)), pin!(ask(&p, h, 2)));
            poll_fn(|cx| match (a.as_mut().poll(cx), b.as_mut().poll(cx)) {
                (Poll::Ready(()), Poll::Ready(_)) => Poll::Ready(()),
                _ => Poll::Pending,
            })
            .await;
            Ok(0)
        });
        assert_eq!(out, Err(TWO_AT_ONCE.to_string()));
    }

    #[test]
    fn dropping_an_operation_in_flight_is_refused() {
        const DROPPED: &str = "node 0 thread 0 failed: the thread ended with a finegrain operation unfinished (dropped or leaked before it completed), which would lose it; allowed: await each operation to completion";
        // Dropped, and the thread ends.
        let (out, _) = run(|p, h| async move {
            let mut a = Box::pin(ask(&p, h, 1));
            poll_fn(|cx| {
                let _ = a.as_mut().poll(cx);
                Poll::Ready(())
            })
            .await;
            drop(a);
            Ok(0)
        });
        assert_eq!(out, Err(DROPPED.to_string()));
        // Dropped, and another operation started: two unfinished at once.
        let (out, _) = run(|p, h| async move {
            let mut a = Box::pin(ask(&p, h, 1));
            poll_fn(|cx| {
                let _ = a.as_mut().poll(cx);
                Poll::Ready(())
            })
            .await;
            drop(a);
            Ok(ask(&p, h, 2).await?.args.get(0))
        });
        assert_eq!(out, Err(TWO_AT_ONCE.to_string()));
        // Leaked: the thread ends with it in flight.
        let (out, _) = run(|p, h| async move {
            let mut a = Box::pin(ask(&p, h, 1));
            poll_fn(|cx| {
                let _ = a.as_mut().poll(cx);
                Poll::Ready(())
            })
            .await;
            std::mem::forget(a);
            Ok(0)
        });
        assert_eq!(out, Err(DROPPED.to_string()));
    }

    /// Futures made ahead and awaited one after another are fine, and each
    /// gets its own reply.
    #[test]
    fn operations_awaited_one_after_another_each_get_their_own_result() {
        let (out, handled) = run(|p, h| async move {
            let (a, b) = (ask(&p, h, 1), ask(&p, h, 2));
            let b = b.await?.args.get(0);
            let a = a.await?.args.get(0);
            Ok(a * 10 + b)
        });
        assert_eq!(out.unwrap()[0], 12);
        assert_eq!(handled, 2);
    }
}

/// A panic in a handler or a thread ends the run with an error naming it,
/// as the native runtime reports one; it used to unwind out of `simulate`.
#[test]
fn a_panicking_handler_ends_the_run_with_an_error_naming_it() {
    let mut t = HandlerTable::new();
    let request = t.register(info("bomb"), |_, m: &Message| panic!("boom at {}", m.args.get(0))).unwrap();
    let e = run_with(&t, request).unwrap_err().to_string();
    assert_eq!(e, "handler 'bomb' failed: panicked: boom at 0");
}

#[test]
fn a_panicking_thread_ends_the_run_with_an_error_naming_it() {
    let (table, request) = echo_table();
    let out = simulate(&config(Policy::Fixed { protocol_procs: 1 }, 2, 1), &table, |p| async move {
        let peer = NodeId((p.node().0 + 1) % p.nodes());
        let r = p.request(peer, request, Args::new(&[1])?, Payload::none()).await?;
        // An assertion's message spans lines: the error keeps it on one.
        assert_eq!(r.args.get(0) + p.node().0 as u64, 2, "only node 0 expects 2");
        Ok(())
    });
    let e = out.unwrap_err().to_string();
    assert_eq!(e, "node 1 thread 0 panicked: assertion `left == right` failed: only node 0 expects 2 left: 3 right: 2");
    // In the call making a thread's future, too.
    let e = simulate(&config(Policy::Single, 1, 1), &table, |p| {
        assert!(p.node().0 == 0, "no program for node {}", p.node().0);
        async { Ok(()) }
    })
    .unwrap_err()
    .to_string();
    assert_eq!(e, "node 1 thread 0 panicked: no program for node 1");
}

/// A reply the guard refuses ends the run even when the handler ignores
/// the error; it used to go on silently.
#[test]
fn a_refused_reply_the_handler_ignores_still_ends_the_run() {
    let mut t = HandlerTable::new();
    let reply = t.register(info("r"), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("greedy"), move |ctx, m: &Message| {
            let r = Reply { handler: reply, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() };
            ctx.reply(r.clone())?;
            let _ = ctx.reply(r);
            Ok(())
        })
        .unwrap();
    let e = run_with(&t, request).unwrap_err().to_string();
    assert_eq!(e, "handler 'greedy' sent a second reply; a request handler may send at most one reply");
    let mut t = HandlerTable::new();
    let chatty = t
        .register(info("chatty_reply"), |ctx, _| {
            let _ = ctx.reply(Reply { handler: HandlerId(0), args: Args::default(), payload: Payload::none() });
            Ok(())
        })
        .unwrap();
    let request = t
        .register(info("ask"), move |ctx, m: &Message| {
            ctx.reply(Reply { handler: chatty, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() })
        })
        .unwrap();
    let e = run_with(&t, request).unwrap_err().to_string();
    assert!(e.starts_with("handler 'chatty_reply' is a reply handler"), "{e}");
}

/// A reply naming a handler the table does not have is refused when the
/// handler replies, naming it; it used to surface only at the node the
/// reply reached, naming nobody.
#[test]
fn a_reply_naming_an_unknown_handler_is_refused_naming_the_replier() {
    for ignore in [false, true] {
        let mut t = HandlerTable::new();
        t.register(info("unused_reply"), |_, _| Ok(())).unwrap();
        let request = t
            .register(info("lost"), move |ctx, _| {
                let r = ctx.reply(Reply { handler: HandlerId(77), args: Args::default(), payload: Payload::none() });
                if ignore {
                    return Ok(());
                }
                r
            })
            .unwrap();
        let e = run_with(&t, request).unwrap_err().to_string();
        assert_eq!(e, "handler 'lost' failed: its reply names unknown handler id 77 (the table has 2 handlers)");
    }
}

/// Registers `f` as a generic handler, or as the library operation `op`.
fn register(
    t: &mut HandlerTable,
    name: &str,
    op: Option<LibraryOp>,
    f: impl Fn(&mut dyn HandlerCtx, &Message) -> Result<(), AmError> + Send + Sync + 'static,
) -> HandlerId {
    match op {
        Some(op) => t.register_library(info(name), op, f),
        None => t.register(info(name), f),
    }
    .unwrap()
}

/// Handlers on a co-processor (its generic handlers under coproc-am, and a
/// put the optimized library's hardware does) keep the request/reply rule
/// with the errors of every other platform, and refuse protocol messages.
#[test]
fn handlers_on_the_coprocessor_keep_the_reply_rule() {
    for (library, op) in [(CoprocLibrary::CoprocAm, None), (CoprocLibrary::Optimized, Some(LibraryOp::PutRequest))] {
        let machine = MachineConfig::load("ipps96").unwrap();
        let cfg = SimConfig::new(machine, Topology { nodes: 2, procs_per_node: 1 }, Policy::Coprocessor { library }, 1);
        let error = |name: &str, f: fn(&mut dyn HandlerCtx, HandlerId) -> Result<(), AmError>| {
            let mut t = HandlerTable::new();
            let done = t.register(info("done"), |_, _| Ok(())).unwrap();
            let request = register(&mut t, name, op, move |ctx, _| f(ctx, done));
            let e = simulate(&cfg, &t, |p| pinger(p, request, 2, 100)).unwrap_err().to_string();
            (e, library.label())
        };
        let (e, on) = error("greedy", |ctx, done| {
            ctx.reply(empty_reply(done))?;
            let _ = ctx.reply(empty_reply(done));
            Ok(())
        });
        assert_eq!(e, "handler 'greedy' sent a second reply; a request handler may send at most one reply", "{on}");
        let (e, on) = error("lost", |ctx, _| {
            let _ = ctx.reply(empty_reply(HandlerId(77)));
            Ok(())
        });
        assert_eq!(
            e, "handler 'lost' failed: its reply names unknown handler id 77 (the table has 2 handlers)",
            "{on}"
        );
        let (e, on) = error("silent", |_, _| Ok(()));
        assert_eq!(
            e,
            "handler 'silent' failed: returned without replying to a request sent with Proc::request, whose thread \
             would wait forever",
            "{on}"
        );
        let (e, on) = error("sender", |ctx, done| {
            let _ = ctx.send(NodeId(0), done, SyncKey::NoSync, Args::default(), Payload::none());
            ctx.reply(empty_reply(done))
        });
        assert!(
            e.starts_with("handler 'sender' sent a protocol message from a handler under the co-processor"),
            "{on}: {e}"
        );
    }
}

/// An empty reply to handler `to`.
fn empty_reply(to: HandlerId) -> Reply {
    Reply { handler: to, args: Args::default(), payload: Payload::none() }
}

/// The scheduling paper's mechanisms (Section 5, Figure 2), each against
/// the same run without it.
mod paper_mechanisms {
    use super::*;

    fn run(cfg: &SimConfig) -> finegrain_sim::RunStats {
        let (table, request) = echo_table();
        simulate(cfg, &table, |p| pinger(p, request, 100, 2000)).unwrap().stats
    }

    /// A computing processor that takes the role switches to the protocol
    /// thread and back: role switching costs more, and the protocol
    /// thread's saved context moves between the processors' caches.
    #[test]
    fn taking_the_role_switches_to_the_protocol_thread() {
        let with = config(Policy::Floating, 2, 3);
        let mut without = with.clone();
        without.machine.protocol.protocol_thread = false;
        let (a, b) = (run(&with), run(&without));
        let acquires =
            |s: &finegrain_sim::RunStats| s.nodes.iter().flat_map(|n| &n.procs).map(|p| p.role_acquires).sum::<u64>();
        let per_switch = |s: &finegrain_sim::RunStats| s.cycles.role as f64 / acquires(s) as f64;
        // Two switches per stint, each at least the preset's instructions.
        let extra = 2.0 * with.machine.protocol.context_switch_cycles as f64;
        assert!(per_switch(&a) >= per_switch(&b) + extra, "{} vs {} cycles per stint", per_switch(&a), per_switch(&b));
        assert!(a.misses.migration > b.misses.migration, "the protocol thread's context migrates");
        // A dedicated protocol processor never switches.
        let fixed = config(Policy::Fixed { protocol_procs: 1 }, 2, 3);
        let mut fixed_without = fixed.clone();
        fixed_without.machine.protocol.protocol_thread = false;
        assert_eq!(run(&fixed).cycles.role, run(&fixed_without).cycles.role);
    }

    /// Under Fixed a compute processor hands its request to the protocol
    /// processor, which sends it: the protocol processor's occupancy grows
    /// by the sends, and each request waits for the hand-off.
    #[test]
    fn under_fixed_requests_go_through_the_protocol_processor() {
        let via = config(Policy::Fixed { protocol_procs: 1 }, 2, 3);
        let mut direct = via.clone();
        direct.machine.protocol.requests_via_pp = false;
        let (a, b) = (run(&via), run(&direct));
        assert_eq!(a.requests, b.requests);
        let pp_handler = |s: &finegrain_sim::RunStats| {
            s.nodes
                .iter()
                .flat_map(|n| &n.procs)
                .filter(|p| p.role != finegrain_sim::ProcRole::Compute)
                .map(|p| p.cycles.handler)
                .sum::<u64>()
        };
        assert!(pp_handler(&a) > pp_handler(&b), "the protocol processors send them");
        assert!(a.request_latency.mean_cycles > b.request_latency.mean_cycles, "the hand-off takes time");
    }

    /// Oint paid on the interrupt's return (the preset's reading of "delaying
    /// a thread upon an interrupt") delays the interrupted thread, not the
    /// handling of the message: the requester's round trip does not grow
    /// with Oint; paid on delivery, it does.
    #[test]
    fn oint_on_return_delays_the_thread_not_the_handler() {
        let latency = |entry_percent: u32| {
            let mut cfg = config(Policy::Single, 1, 4);
            cfg.machine.interrupt.overhead_cycles = 20_000;
            cfg.machine.interrupt.entry_percent = entry_percent;
            let (table, request) = echo_table();
            // Node 1 computes while node 0's one request arrives.
            let out = simulate(&cfg, &table, move |p| async move {
                if p.node().0 == 0 {
                    p.work(1000).await;
                    p.request(NodeId(1), request, Args::new(&[1])?, Payload::none()).await?;
                } else {
                    p.work(100_000).await;
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(out.stats.interrupts, 1);
            out.stats.request_latency.max_cycles
        };
        let (on_return, on_delivery) = (latency(0), latency(100));
        assert!(on_return < 10_000, "the reply came after {on_return} cycles with Oint paid on return");
        assert!(on_delivery > 20_000, "the reply came after {on_delivery} cycles with Oint paid on delivery");
    }
}
