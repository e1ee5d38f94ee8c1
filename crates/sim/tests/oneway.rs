//! One-way messages (`Proc::send_keyed`), waiting for what handlers record
//! (`Proc::wait_until`) and the global segment (`Region::Global`), under
//! every policy of both engines: the counts handlers leave, determinism,
//! and clear errors for a wait nothing ends and for accesses beyond the
//! segment.

use finegrain_core::config::MemoryParams;
use finegrain_core::{
    Access, AmError, Args, CoprocLibrary, HandlerId, HandlerInfo, HandlerTable, MachineConfig, Message, NodeId,
    Payload, Policy, Proc, Region, Reply, SyncKey, Topology,
};
use finegrain_sim::{cycles_consistent, simulate, RunStats, SimConfig, SimError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The policies under test: (preset, policy, processors per node).
const SETUPS: [(&str, Policy, u32); 6] = [
    ("hpca97", Policy::Single, 1),
    ("hpca97", Policy::Fixed { protocol_procs: 1 }, 2),
    ("hpca97", Policy::Floating, 2),
    ("hpca97", Policy::Floating, 3),
    ("ipps96", Policy::Coprocessor { library: CoprocLibrary::MainAm }, 1),
    ("ipps96", Policy::Coprocessor { library: CoprocLibrary::CoprocAm }, 1),
];

fn config(preset: &str, policy: Policy, ppn: u32, seed: u64) -> SimConfig {
    SimConfig::new(MachineConfig::load(preset).unwrap(), Topology { nodes: 2, procs_per_node: ppn }, policy, seed)
}

fn info(name: &str) -> HandlerInfo {
    HandlerInfo { name: name.into(), body_cycles: 10, code_bytes: 128 }
}

/// One counter per compute thread of the machine (node-major), which the
/// handlers at its node bump.
#[derive(Clone)]
struct Counters(Arc<Vec<AtomicU64>>);

impl Counters {
    fn new(slots: usize) -> Counters {
        Counters(Arc::new((0..slots).map(|_| AtomicU64::new(0)).collect()))
    }

    fn get(&self, i: usize) -> u64 {
        self.0[i].load(Ordering::Relaxed)
    }

    fn bump(&self, i: usize) {
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }
}

/// A Split-C-like get: the request handler reads the word at its argument
/// in its node's global segment and replies; the reply handler stores it
/// into the requester's global segment and counts it for its thread.
fn get_table(counters: &Counters, threads_per_node: usize) -> (HandlerTable, HandlerId) {
    let mut t = HandlerTable::new();
    let c = counters.clone();
    let done = t
        .register(info("get_done"), move |ctx, m: &Message| {
            ctx.access(Region::Global, m.args.get(0), 8, Access::Write);
            c.bump(ctx.node().index() * threads_per_node + m.src_thread.index());
            Ok(())
        })
        .unwrap();
    let get = t
        .register(info("get"), move |ctx, m: &Message| {
            ctx.access(Region::Global, m.args.get(0), 8, Access::Read);
            ctx.reply(Reply { handler: done, args: Args::new(&[m.args.get(0)])?, payload: Payload::none() })
        })
        .unwrap();
    (t, get)
}

/// Each thread issues `n` gets to the other node, one-way, with some work
/// between them and one ordinary request among them, then waits until
/// every get's reply handler has counted it, and reads what they stored.
async fn getter<P: Proc>(p: P, get: HandlerId, echo: HandlerId, n: u64, counters: Counters) -> Result<u64, AmError> {
    let peer = NodeId((p.node().0 + 1) % p.nodes());
    let me = p.node().index() * p.threads_per_node() as usize + p.thread().index();
    for i in 0..n {
        let offset = (me as u64 * n + i) * 8;
        p.send_keyed(peer, get, SyncKey::Key(i), Args::new(&[offset])?, Payload::none()).await?;
        p.work(100 + (i * 37 + me as u64 * 11) % 300).await;
        if i == n / 2 {
            let r = p.request(peer, echo, Args::new(&[i])?, Payload::none()).await?;
            assert_eq!(r.args.get(0), i + 1);
        }
    }
    p.wait_until(|| counters.get(me) == n).await?;
    p.access(Region::Global, me as u64 * n * 8, (n * 8) as u32, Access::Read).await;
    Ok(counters.get(me))
}

/// Registers an echo request (reply with the argument + 1) in `t`.
fn add_echo(t: &mut HandlerTable) -> HandlerId {
    let reply = t.register(info("echo_reply"), |_, _| Ok(())).unwrap();
    t.register(info("echo"), move |ctx, m: &Message| {
        ctx.reply(Reply { handler: reply, args: Args::new(&[m.args.get(0) + 1])?, payload: Payload::none() })
    })
    .unwrap()
}

fn run_gets(cfg: &SimConfig, n: u64) -> (Vec<u64>, RunStats) {
    let tpn = cfg.run.policy.compute_procs(cfg.run.topology.procs_per_node) as usize;
    let counters = Counters::new(2 * tpn);
    let (mut table, get) = get_table(&counters, tpn);
    let echo = add_echo(&mut table);
    let out = simulate(cfg, &table, |p| getter(p, get, echo, n, counters.clone()))
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.run.policy.label()));
    (out.results, out.stats)
}

#[test]
fn one_way_gets_whose_replies_count_end_the_wait_under_every_policy() {
    let n = 30;
    for (preset, policy, ppn) in SETUPS {
        let cfg = config(preset, policy, ppn, 11);
        let what = policy.label();
        let (results, s) = run_gets(&cfg, n);
        let threads = policy.compute_procs(ppn) as u64 * 2;
        assert_eq!(results, vec![n; threads as usize], "{what}: every get counted once");
        assert_eq!((s.one_way, s.one_way_replies), (threads * n, threads * n), "{what}");
        // The one ordinary request per thread is what request counts,
        // replies and latencies measure.
        assert_eq!((s.requests, s.replies, s.request_latency.count), (threads, threads, threads), "{what}");
        assert_eq!(s.messages, s.requests + s.replies + s.one_way + s.one_way_replies, "{what}");
        let sent: u64 = s.nodes.iter().map(|x| x.messages_sent).sum();
        let received: u64 = s.nodes.iter().map(|x| x.messages_received).sum();
        assert_eq!((sent, received), (s.messages, s.messages), "{what}");
        let coproc: u64 = s.nodes.iter().filter_map(|x| x.coproc.as_ref()).map(|c| c.handlers).sum();
        assert_eq!(s.handlers + coproc, s.messages, "{what}: one handler per message");
        assert!(cycles_consistent(&s), "{what}");
        // Same seed, same run.
        assert_eq!(run_gets(&cfg, n).1, s, "{what}: deterministic");
    }
}

/// Threads of node 0 send `n` one-way messages each to node 1, whose
/// handler counts them and does not reply; node 1's threads wait until
/// every one has arrived.
#[test]
fn one_way_messages_without_replies_end_the_receivers_wait() {
    let n = 25;
    for (preset, policy, ppn) in SETUPS {
        let what = policy.label();
        let tpn = policy.compute_procs(ppn) as u64;
        let arrived = Counters::new(1);
        let mut table = HandlerTable::new();
        let c = arrived.clone();
        let put = table
            .register(info("put"), move |ctx, m: &Message| {
                ctx.access(Region::Global, m.args.get(0), 8, Access::Write);
                c.bump(0);
                Ok(())
            })
            .unwrap();
        let cfg = config(preset, policy, ppn, 5);
        let out = simulate(&cfg, &table, |p| {
            let arrived = arrived.clone();
            async move {
                if p.node().0 == 0 {
                    for i in 0..n {
                        let offset = (p.thread().0 as u64 * n + i) * 8;
                        p.send_keyed(NodeId(1), put, SyncKey::NoSync, Args::new(&[offset])?, Payload::none()).await?;
                        p.work(50).await;
                    }
                } else {
                    p.wait_until(|| arrived.get(0) == tpn * n).await?;
                }
                Ok(arrived.get(0))
            }
        })
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(out.results[tpn as usize..].iter().all(|&c| c == tpn * n), "{what}: {:?}", out.results);
        let s = &out.stats;
        assert_eq!((s.one_way, s.one_way_replies, s.requests, s.replies), (tpn * n, 0, 0, 0), "{what}");
        assert_eq!(s.messages, tpn * n, "{what}");
        assert_eq!(s.request_latency.count, 0, "{what}");
        assert!(cycles_consistent(s), "{what}");
    }
}

/// A wait nothing can end fails the run with an error naming the thread,
/// whether no handler runs at its node or handlers run but never make the
/// condition true.
#[test]
fn a_wait_nothing_ends_fails_the_run_naming_the_thread() {
    for (preset, policy, ppn) in SETUPS {
        let what = policy.label();
        let counted = Counters::new(1);
        let mut table = HandlerTable::new();
        let c = counted.clone();
        let note = table
            .register(info("note"), move |_, _| {
                c.bump(0);
                Ok(())
            })
            .unwrap();
        let cfg = config(preset, policy, ppn, 1);
        let e = simulate(&cfg, &table, |p| {
            let counted = counted.clone();
            async move {
                match (p.node().0, p.thread().0) {
                    (0, 0) => p.wait_until(|| false).await?,
                    // Two notes arrive at node 1, whose thread waits for three.
                    (1, 0) => p.wait_until(|| counted.get(0) == 3).await?,
                    (0, _) => {}
                    _ => p.work(10).await,
                }
                if p.node().0 == 0 && p.thread().0 == 1 {
                    for _ in 0..2 {
                        p.send_keyed(NodeId(1), note, SyncKey::NoSync, Args::new(&[])?, Payload::none()).await?;
                    }
                }
                Ok(())
            }
        })
        .unwrap_err();
        let SimError::Deadlock(msg) = &e else { panic!("{what}: {e}") };
        assert!(
            msg.contains("node 0 thread 0 waits for a condition (Proc::wait_until) that no handler made true")
                && msg.contains("node 1 thread 0 waits for a condition"),
            "{what}: {msg}"
        );
        assert!(!e.to_string().contains('\n'), "{what}: {e}");
    }
}

/// A handler that runs while the waiting thread computes what it charged
/// before `wait_until` (its condition already checked) still ends the wait.
#[test]
fn a_handler_during_charged_work_before_the_wait_ends_it() {
    for (preset, policy, ppn) in SETUPS {
        let what = policy.label();
        let arrived = Counters::new(1);
        let mut table = HandlerTable::new();
        let c = arrived.clone();
        let put = table
            .register(info("put"), move |_, _| {
                c.bump(0);
                Ok(())
            })
            .unwrap();
        let cfg = config(preset, policy, ppn, 2);
        let out = simulate(&cfg, &table, |p| {
            let arrived = arrived.clone();
            async move {
                if (p.node().0, p.thread().0) == (0, 0) {
                    p.send_keyed(NodeId(1), put, SyncKey::NoSync, Args::new(&[])?, Payload::none()).await?;
                } else if (p.node().0, p.thread().0) == (1, 0) {
                    // Computed before the wait's operation starts, after its
                    // first check: the message is handled meanwhile.
                    p.charge(200_000);
                    p.wait_until(|| arrived.get(0) == 1).await?;
                }
                Ok(p.node().0)
            }
        });
        let out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(out.stats.sim_cycles >= 200_000, "{what}");
    }
}

/// The one-way rules are those of a request: the sequential key where no
/// handler may run alone, an unknown node or handler come back to the
/// thread as errors; a handler of a request (not one-way) must reply.
#[test]
fn one_way_sends_are_checked_as_requests_are() {
    let mut table = HandlerTable::new();
    let quiet = table.register(info("quiet"), |_, _| Ok(())).unwrap();
    let cfg = config("hpca97", Policy::Single, 1, 1);
    let out = simulate(&cfg, &table, |p| async move {
        let unknown_node = p.send_keyed(NodeId(9), quiet, SyncKey::NoSync, Args::new(&[])?, Payload::none()).await;
        let unknown_handler =
            p.send_keyed(NodeId(0), HandlerId(7), SyncKey::NoSync, Args::new(&[])?, Payload::none()).await;
        Ok((unknown_node.unwrap_err().to_string(), unknown_handler.unwrap_err().to_string()))
    })
    .unwrap();
    let (node, handler) = &out.results[0];
    assert!(node.contains("node 9 does not exist"), "{node}");
    assert!(handler.contains("unknown handler id 7"), "{handler}");

    let mut cfg = config("hpca99", Policy::Fixed { protocol_procs: 1 }, 2, 1);
    cfg.run.dispatch.discipline = finegrain_core::Discipline::SpinLock;
    let out = simulate(&cfg, &table, |p| async move {
        let e = p.send_keyed(NodeId(0), quiet, SyncKey::Sequential, Args::new(&[])?, Payload::none()).await;
        Ok(e.unwrap_err().to_string())
    })
    .unwrap();
    assert!(out.results[0].contains("sequential key under the spin-lock discipline"), "{}", out.results[0]);

    // The same silent handler for a request fails the run, naming it.
    let cfg = config("hpca97", Policy::Single, 1, 1);
    let e = simulate(&cfg, &table, |p| async move {
        p.request(NodeId(1 - p.node().0), quiet, Args::new(&[])?, Payload::none()).await?;
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("'quiet'") && e.contains("returned without replying"), "{e}");
}

/// The global segment is as large as the machine says (64 MiB when it
/// says nothing); handlers and threads reach all of it, and nothing beyond.
#[test]
fn the_global_segment_is_reached_by_handlers_and_threads_up_to_its_size() {
    for (preset, policy, ppn) in [SETUPS[0], SETUPS[2], SETUPS[5]] {
        let what = policy.label();
        let mut table = HandlerTable::new();
        let touch = table
            .register(info("touch"), |ctx, m: &Message| {
                ctx.access(Region::Global, m.args.get(0), m.args.get(1) as u32, Access::Write);
                Ok(())
            })
            .unwrap();
        let touched = Counters::new(1);
        let c = touched.clone();
        let count = table
            .register(info("count"), move |_, _| {
                c.bump(0);
                Ok(())
            })
            .unwrap();
        let run = |cfg: &SimConfig, offset: u64, len: u64| {
            let touched = touched.clone();
            simulate(cfg, &table, move |p| {
                let touched = touched.clone();
                async move {
                    if p.node().0 == 0 && p.thread().0 == 0 {
                        let args = Args::new(&[offset, len])?;
                        p.send_keyed(NodeId(1), touch, SyncKey::NoSync, args, Payload::none()).await?;
                        p.send_keyed(NodeId(1), count, SyncKey::NoSync, Args::new(&[])?, Payload::none()).await?;
                    }
                    if p.node().0 == 1 && p.thread().0 == 0 {
                        let before = touched.get(0);
                        p.wait_until(|| touched.get(0) > before).await?;
                        p.access(Region::Global, offset, len as u32, Access::Read).await;
                    }
                    Ok(())
                }
            })
        };
        // The default segment's last word, and the first one past it.
        let cfg = config(preset, policy, ppn, 3);
        let size = MemoryParams::DEFAULT_GLOBAL_SEGMENT_BYTES;
        run(&cfg, size - 8, 8).unwrap_or_else(|e| panic!("{what}: {e}"));
        let e = run(&cfg, size - 8, 16).unwrap_err().to_string();
        assert!(
            e.contains("handler 'touch'") && e.contains(&format!("outside the global segment ({size} bytes)")),
            "{what}: {e}"
        );
        // A machine that names its size.
        let mut small = cfg.clone();
        small.machine.memory = Some(MemoryParams { global_segment_bytes: 4096 });
        run(&small, 4096 - 64, 64).unwrap_or_else(|e| panic!("{what}: {e}"));
        let e = run(&small, 4096, 8).unwrap_err().to_string();
        assert!(e.contains("outside the global segment (4096 bytes)"), "{what}: {e}");
    }
    // A thread's own access beyond it is its failure.
    let cfg = config("hpca97", Policy::Single, 1, 1);
    let e = simulate(&cfg, &HandlerTable::new(), |p| async move {
        p.access(Region::Global, MemoryParams::DEFAULT_GLOBAL_SEGMENT_BYTES, 8, Access::Read).await;
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("node 0 thread 0 failed") && e.contains("outside the global segment"), "{e}");
}

#[test]
fn a_global_segment_size_the_model_cannot_hold_is_refused_in_one_line() {
    for (bytes, needle) in [
        (0, "invalid memory.global_segment_bytes = 0: allowed a positive multiple of cache.line_bytes up to 1 GiB"),
        (100, "invalid memory.global_segment_bytes = 100: allowed a positive multiple of cache.line_bytes"),
        (2 << 30, "invalid memory.global_segment_bytes = 2147483648: allowed"),
    ] {
        let mut cfg = config("hpca97", Policy::Single, 1, 1);
        cfg.machine.memory = Some(MemoryParams { global_segment_bytes: bytes });
        let e = simulate(&cfg, &HandlerTable::new(), |_| async { Ok(()) }).unwrap_err().to_string();
        assert!(e.starts_with(needle) && !e.contains('\n'), "{e}");
    }
}

/// A thread whose processor serves while it waits checks its condition
/// after each handler without giving up the role: one role taken for the
/// whole wait, as one is for a reply.
#[test]
fn a_serving_waiter_keeps_the_role_while_its_condition_is_false() {
    let n = 40;
    for (policy, ppn) in [(Policy::Single, 1), (Policy::Floating, 2)] {
        let what = policy.label();
        let mut cfg = config("hpca97", policy, ppn, 4);
        // Messages sent straight to the NI, so that the wait is the only
        // time node 0's processors take the role.
        cfg.machine.protocol.requests_via_pp = false;
        let arrived = Counters::new(1);
        let mut table = HandlerTable::new();
        let c = arrived.clone();
        let put = table
            .register(info("put"), move |_, _| {
                c.bump(0);
                Ok(())
            })
            .unwrap();
        let out = simulate(&cfg, &table, |p| {
            let arrived = arrived.clone();
            async move {
                match (p.node().0, p.thread().0) {
                    (0, 0) => p.wait_until(|| arrived.get(0) == n).await?,
                    (1, 0) => {
                        for _ in 0..n {
                            p.send_keyed(NodeId(0), put, SyncKey::NoSync, Args::new(&[])?, Payload::none()).await?;
                            p.work(2000).await;
                        }
                    }
                    _ => {}
                }
                Ok(())
            }
        })
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let node0 = &out.stats.nodes[0];
        let acquires: u64 = node0.procs.iter().map(|p| p.role_acquires).sum();
        assert_eq!(out.stats.handlers, n, "{what}");
        assert!(acquires <= 2, "{what}: {acquires} role acquisitions for {n} handlers");
    }
}

/// Node 0's threads send one-way messages to node 1 under two keys, whose
/// handlers count them apart; node 1's threads wait for the count of key
/// 1, with `wait(p, counts)`.
fn keyed_counts<W, F>(cfg: &SimConfig, wait: W) -> Result<RunStats, SimError>
where
    W: Fn(finegrain_sim::SimProc, Counters) -> F + Copy,
    F: std::future::Future<Output = Result<(), AmError>>,
{
    let n = 12;
    let counts = Counters::new(2);
    let mut table = HandlerTable::new();
    let c = counts.clone();
    let count = table
        .register(info("count"), move |ctx, m: &Message| {
            ctx.access(Region::Global, m.args.get(0) * 8, 8, Access::Write);
            c.bump(m.args.get(0) as usize);
            Ok(())
        })
        .unwrap();
    let out = simulate(cfg, &table, |p| {
        let counts = counts.clone();
        async move {
            if p.node().0 == 0 {
                for i in 0..n {
                    let k = i % 2;
                    p.send_keyed(NodeId(1), count, SyncKey::Key(1 + k), Args::new(&[k])?, Payload::none()).await?;
                    p.work(40).await;
                }
                Ok(())
            } else {
                wait(p, counts).await
            }
        }
    })?;
    Ok(out.stats)
}

/// `Proc::wait_until_keyed` promises that only handlers of its key make
/// the condition true: the run is the same as with `wait_until` (the
/// simulator only skips polls whose result it knows), and a broken promise
/// fails the run in debug builds (release builds wait on, here to the end).
#[test]
fn a_keyed_wait_is_the_same_run_and_a_broken_key_is_caught() {
    let setups = SETUPS.into_iter().chain([("hpca97", Policy::Fixed { protocol_procs: 1 }, 3)]);
    for (preset, policy, ppn) in setups {
        let what = format!("{} x{ppn}", policy.label());
        let cfg = config(preset, policy, ppn, 3);
        let tpn = policy.compute_procs(ppn) as u64;
        let want = 6 * tpn; // key 1's share of node 0's messages
        let plain = keyed_counts(&cfg, move |p, c| async move { p.wait_until(|| c.get(0) == want).await })
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let keyed =
            keyed_counts(
                &cfg,
                move |p, c| async move { p.wait_until_keyed(SyncKey::Key(1), || c.get(0) == want).await },
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(plain, keyed, "{what}");
        let broken =
            keyed_counts(
                &cfg,
                move |p, c| async move { p.wait_until_keyed(SyncKey::Key(2), || c.get(0) == want).await },
            );
        if cfg!(debug_assertions) {
            let e = broken.expect_err(&what).to_string();
            assert!(e.contains("wait_until_keyed (key 2) came true with no handler of that key"), "{what}: {e}");
        }
    }
}
