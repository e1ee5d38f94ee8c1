//! Parallel dispatch in the simulator: PDQ, spin-locks, static
//! partitioning and serial dispatch keep their promises in simulated time,
//! on every kind of protocol processor.

use finegrain_core::{
    Access, AmError, Args, Discipline, Dispatch, HandlerId, HandlerInfo, HandlerTable, MachineConfig, NodeId, Payload,
    Policy, PpKind, Proc, Region, Reply, SyncKey, Topology,
};
use finegrain_sim::stats::HandlerSpan;
use finegrain_sim::{cycles_consistent, simulate, RunStats, SimConfig, SimError};

/// Node 0 is the home; every thread elsewhere sends `n` keyed requests to
/// it. `key_of(thread_global, i)` picks the key.
fn keyed_table() -> (HandlerTable, HandlerId) {
    let mut t = HandlerTable::new();
    let info = |name: &str, body_cycles| HandlerInfo { name: name.into(), body_cycles, code_bytes: 128 };
    let reply = t.register(info("keyed_reply", 10), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("keyed_request", 200), move |ctx, m| {
            ctx.reply(Reply { handler: reply, args: Args::new(&[m.args.get(0)])?, payload: Payload::none() })
        })
        .unwrap();
    (t, request)
}

async fn requester<P: Proc>(p: P, h: HandlerId, n: u64, keys: u64, seq_every: u64) -> Result<u64, AmError> {
    if p.node().0 == 0 {
        return Ok(0);
    }
    let me = (p.node().0 * p.threads_per_node() + p.thread().0) as u64;
    for i in 0..n {
        let key = if seq_every > 0 && (i + me).is_multiple_of(seq_every) {
            SyncKey::Sequential
        } else {
            SyncKey::Key(finegrain_core::mix_seed(me, i, 7) % keys)
        };
        p.request_keyed(NodeId(0), h, key, Args::new(&[i])?, Payload::none()).await?;
    }
    Ok(n)
}

fn config(policy: Policy, ppn: u32, discipline: Discipline, kind: PpKind) -> SimConfig {
    let mut c =
        SimConfig::new(MachineConfig::load("hpca99").unwrap(), Topology { nodes: 3, procs_per_node: ppn }, policy, 11);
    c.run.dispatch = Dispatch { discipline, pp_kind: kind, max_servers: None };
    c.trace_handlers = true;
    c
}

fn run(cfg: &SimConfig, n: u64, keys: u64, seq_every: u64) -> RunStats {
    let (table, h) = keyed_table();
    let out = simulate(cfg, &table, |p| requester(p, h, n, keys, seq_every)).unwrap();
    assert!(cycles_consistent(&out.stats), "every processor's cycles add up");
    assert_eq!(out.stats.replies, out.stats.requests, "one reply per request");
    out.stats
}

fn home_spans(s: &RunStats) -> Vec<HandlerSpan> {
    s.handler_spans.iter().copied().filter(|x| x.node == 0).collect()
}

fn overlap(a: &HandlerSpan, b: &HandlerSpan) -> bool {
    a.start < b.end && b.start < a.end
}

/// Pairs of distinct spans satisfying `f`.
fn pairs(spans: &[HandlerSpan], f: impl Fn(&HandlerSpan, &HandlerSpan) -> bool) -> usize {
    let mut n = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            n += usize::from(f(a, b));
        }
    }
    n
}

#[test]
fn pdq_runs_distinct_keys_together_and_one_key_at_a_time() {
    for kind in [PpKind::Embedded, PpKind::Smp] {
        let s = run(&config(Policy::Fixed { protocol_procs: 4 }, 8, Discipline::Pdq, kind), 30, 5, 0);
        let spans = home_spans(&s);
        assert_eq!(spans.len(), 2 * 4 * 30, "{kind:?}: every request handled at the home");
        assert_eq!(pairs(&spans, |a, b| a.key == b.key && overlap(a, b)), 0, "{kind:?}: same key overlapped");
        assert!(pairs(&spans, |a, b| a.key != b.key && overlap(a, b)) > 50, "{kind:?}: distinct keys ran in parallel");
        let procs: std::collections::BTreeSet<u32> = spans.iter().map(|x| x.proc).collect();
        assert_eq!(procs.len(), 4, "{kind:?}: all four protocol processors served");
        let bw: u64 = s.nodes[0].procs.iter().map(|p| p.cycles.busy_wait).sum();
        assert_eq!(bw, 0, "PDQ never busy-waits");
    }
}

#[test]
fn sequential_entries_run_alone() {
    let s = run(&config(Policy::Fixed { protocol_procs: 4 }, 6, Discipline::Pdq, PpKind::Embedded), 40, 16, 5);
    let spans = home_spans(&s);
    let seq = spans.iter().filter(|x| x.key == SyncKey::Sequential).count();
    assert!(seq > 10, "the workload sends sequential requests ({seq})");
    let beside = pairs(&spans, |a, b| (a.key == SyncKey::Sequential || b.key == SyncKey::Sequential) && overlap(a, b));
    assert_eq!(beside, 0, "a sequential handler ran beside another");
    assert!(pairs(&spans, overlap) > 0, "keyed handlers still ran in parallel");
}

#[test]
fn serial_dispatch_never_overlaps_handlers() {
    let s = run(&config(Policy::Fixed { protocol_procs: 1 }, 3, Discipline::Serial, PpKind::Smp), 30, 5, 0);
    assert_eq!(pairs(&home_spans(&s), overlap), 0);
}

#[test]
fn spin_locks_serialize_critical_sections_and_spin_on_conflict() {
    let s = run(&config(Policy::Fixed { protocol_procs: 4 }, 6, Discipline::SpinLock, PpKind::Smp), 30, 1, 0);
    let spans = home_spans(&s);
    assert!(spans.iter().all(|x| x.lock.is_some()), "every keyed handler took its lock");
    let held = |a: &HandlerSpan, b: &HandlerSpan| {
        let ((s1, e1), (s2, e2)) = (a.lock.unwrap(), b.lock.unwrap());
        s1 < e2 && s2 < e1
    };
    assert_eq!(pairs(&spans, held), 0, "two handlers held one key's lock at once");
    assert!(pairs(&spans, overlap) > 0, "handlers themselves overlap (one spins while another holds the lock)");
    let bw: u64 = s.nodes[0].procs.iter().map(|p| p.cycles.busy_wait).sum();
    assert!(bw > 0, "one key and four processors: somebody spins");
}

#[test]
fn static_partitioning_keeps_each_key_on_one_processor() {
    let s = run(&config(Policy::Fixed { protocol_procs: 3 }, 5, Discipline::Static, PpKind::Embedded), 30, 7, 0);
    let spans = home_spans(&s);
    for key in 0..7 {
        let procs: std::collections::BTreeSet<u32> =
            spans.iter().filter(|x| x.key == SyncKey::Key(key)).map(|x| x.proc).collect();
        assert_eq!(procs.len(), 1, "key {key} ran on {procs:?}");
    }
    assert_eq!(pairs(&spans, |a, b| a.proc == b.proc && overlap(a, b)), 0, "one handler at a time per queue");
}

#[test]
fn idle_compute_processors_serve_in_parallel_up_to_the_limit() {
    let mut cfg = config(Policy::Floating, 4, Discipline::Pdq, PpKind::Smp);
    cfg.run.dispatch.max_servers = Some(2);
    let s = run(&cfg, 30, 64, 0);
    let spans = home_spans(&s);
    // The home's threads finish at once, so its processors are idle and serve.
    assert!(pairs(&spans, overlap) > 0, "two servers at once");
    for a in &spans {
        let at_once = spans.iter().filter(|b| b.start <= a.start && a.start < b.end).count();
        assert!(at_once <= 2, "at most max_servers handlers at once, found {at_once}");
    }
}

#[test]
fn parallel_runs_are_deterministic() {
    for d in [Discipline::Pdq, Discipline::SpinLock, Discipline::Static] {
        let cfg = config(Policy::Fixed { protocol_procs: 2 }, 4, d, PpKind::Smp);
        let a = serde_json::to_string(&run(&cfg, 20, 4, 0)).unwrap();
        let b = serde_json::to_string(&run(&cfg, 20, 4, 0)).unwrap();
        assert_eq!(a, b, "{d:?}");
    }
}

#[test]
fn dispatch_settings_are_checked() {
    let (table, h) = keyed_table();
    let err = |cfg: &SimConfig| match simulate(cfg, &table, |p| requester(p, h, 1, 1, 0)) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted {:?}", cfg.run.dispatch),
    };
    let mut c = config(Policy::Fixed { protocol_procs: 1 }, 2, Discipline::Pdq, PpKind::Smp);
    c.machine = MachineConfig::load("hpca97").unwrap();
    assert!(err(&c).contains("has no [pdq] section"), "{}", err(&c));
    let c = config(Policy::Floating, 2, Discipline::Static, PpKind::Smp);
    assert!(err(&c).contains("static partitioning needs dedicated"), "{}", err(&c));
    let c = config(Policy::Floating, 2, Discipline::Pdq, PpKind::Embedded);
    assert!(err(&c).contains("embedded protocol processors are dedicated"), "{}", err(&c));
    let mut c = config(Policy::Floating, 2, Discipline::Pdq, PpKind::Smp);
    c.run.dispatch.max_servers = Some(3);
    assert!(err(&c).contains("allowed 1..=2"), "{}", err(&c));
}

#[test]
fn sequential_requests_are_refused_where_they_cannot_run_alone() {
    let (table, h) = keyed_table();
    let cfg = config(Policy::Fixed { protocol_procs: 2 }, 3, Discipline::SpinLock, PpKind::Smp);
    let r = simulate(&cfg, &table, |p| async move {
        if p.node().0 == 0 {
            return Ok(());
        }
        p.request(NodeId(0), h, Args::default(), Payload::none()).await.map(|_| ())
    });
    match r {
        Err(SimError::App { error, .. }) => assert!(error.to_string().contains("sequential key"), "{error}"),
        other => panic!("expected the request to be refused, got {:?}", other.map(|_| ())),
    }
}

/// A keyed request whose handler reads and writes its key's word in the
/// protocol table (fetch&add's accesses), for the embedded data cache.
fn word_table() -> (HandlerTable, HandlerId) {
    let mut t = HandlerTable::new();
    let info = |name: &str, body_cycles| HandlerInfo { name: name.into(), body_cycles, code_bytes: 128 };
    let reply = t.register(info("word_reply", 10), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("word_request", 50), move |ctx, m| {
            let offset = m.args.get(0) * 64;
            ctx.access(Region::ProtocolTable, offset, 8, Access::Read);
            ctx.access(Region::ProtocolTable, offset, 8, Access::Write);
            ctx.reply(Reply { handler: reply, args: Args::new(&[0])?, payload: Payload::none() })
        })
        .unwrap();
    (t, request)
}

/// With a data cache, an embedded protocol processor keeps a hot key's word
/// after its first miss: far fewer bus transactions at the home and less
/// time per handler than word-by-word bus accesses without one.
#[test]
fn an_embedded_data_cache_keeps_handler_data_off_the_bus() {
    let home = |cache: bool| {
        let mut c = config(Policy::Fixed { protocol_procs: 1 }, 3, Discipline::Pdq, PpKind::Embedded);
        c.machine.pdq.as_mut().unwrap().embedded_data_cache = cache;
        let (table, h) = word_table();
        let out = simulate(&c, &table, |p| async move {
            if p.node().0 == 0 {
                return Ok(());
            }
            for i in 0..20u64 {
                p.request_keyed(NodeId(0), h, SyncKey::Key(i % 2), Args::new(&[i % 2])?, Payload::none()).await?;
            }
            Ok(())
        })
        .unwrap();
        let n = &out.stats.nodes[0];
        let handler: u64 = n.procs.iter().map(|p| p.cycles.handler).sum();
        (n.bus.transactions, handler)
    };
    let ((bus_cached, time_cached), (bus_cacheless, time_cacheless)) = (home(true), home(false));
    assert!(bus_cached * 4 < bus_cacheless, "bus transactions {bus_cached} with a cache vs {bus_cacheless} without");
    assert!(time_cached < time_cacheless, "handler cycles {time_cached} with a cache vs {time_cacheless} without");
}

/// Node 1's thread sends a message to node 0, whose handler sends one back
/// that sets a flag at node 1, and waits for the flag either as for a
/// missed block (`wait_for_block`) or as for anything else
/// (`wait_until_keyed`): the cycles from the send to the end of the wait.
fn released_after(resume_after_misses_only: bool, for_block: bool) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let flag = Arc::new(AtomicU64::new(0));
    let mut t = HandlerTable::new();
    let set = flag.clone();
    let info = HandlerInfo { name: "set_flag".into(), body_cycles: 50, code_bytes: 64 };
    let set_flag = t
        .register(info, move |_, _| {
            set.store(1, Ordering::Release);
            Ok(())
        })
        .unwrap();
    let info = HandlerInfo { name: "bounce".into(), body_cycles: 50, code_bytes: 64 };
    let h = t
        .register(info, move |ctx, _| ctx.send(NodeId(1), set_flag, SyncKey::Key(3), Args::new(&[])?, Payload::none()))
        .unwrap();
    let mut cfg = config(Policy::Fixed { protocol_procs: 1 }, 2, Discipline::Pdq, PpKind::Smp);
    cfg.machine.pdq.as_mut().unwrap().resume_after_misses_only = resume_after_misses_only;
    let out = simulate(&cfg, &t, |p| {
        let flag = flag.clone();
        async move {
            if p.node().0 != 1 {
                return Ok(0);
            }
            let t0 = p.now();
            p.send_keyed(NodeId(0), h, SyncKey::Key(3), Args::new(&[])?, Payload::none()).await?;
            let done = || flag.load(Ordering::Acquire) == 1;
            if for_block {
                p.wait_for_block(SyncKey::Key(3), done).await?;
            } else {
                p.wait_until_keyed(SyncKey::Key(3), done).await?;
            }
            // The release is charged before the thread's next operation.
            p.work(1).await;
            Ok(p.now() - t0)
        }
    })
    .unwrap();
    out.results[1]
}

#[test]
fn with_the_switch_only_a_thread_reissuing_a_missed_access_pays_the_devices_resume() {
    let resume = MachineConfig::load("hpca99").unwrap().pdq.unwrap().smp_resume_cycles;
    assert!(resume > 100, "hpca99's SMP resume is Table 1's 178 cycles");
    // Off (the records before the switch): every release pays it.
    assert_eq!(released_after(false, true), released_after(false, false));
    // On: a wait for a block pays it as before, any other wait does not.
    assert_eq!(released_after(true, true), released_after(false, true));
    let saved = released_after(true, true) - released_after(true, false);
    assert!(saved + 10 >= resume && saved <= resume, "saved {saved} of {resume} cycles");
}
