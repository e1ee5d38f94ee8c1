//! Native parallel dispatch under stress: many threads fire keyed one-way
//! messages (numbered, sequential and nosync keys) at each other, and the
//! handlers check at run time what the discipline promises, with an
//! in-service count per key.

use finegrain_core::{
    AmError, Args, Discipline, HandlerId, HandlerInfo, HandlerTable, Message, NodeId, Payload, Policy, Proc, SyncKey,
    Topology,
};
use finegrain_rt::{run, RtConfig, RtProc};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const KEYS: usize = 24;
const SEQUENTIAL_EVERY: u64 = 29;
const NOSYNC_EVERY: u64 = 11;

/// What one node's handlers have seen.
struct Checker {
    /// Handlers of each key in service now.
    in_key: Vec<AtomicU64>,
    /// Handlers of any kind in service now, and the most seen at once.
    active: AtomicU64,
    max_active: AtomicU64,
    sequential_running: AtomicBool,
    /// Per sender thread and key: the last sequence number handled.
    last_seq: Vec<AtomicU64>,
    /// Messages handled, per sender thread.
    handled_from: Vec<AtomicU64>,
    violations: AtomicU64,
    first_violation: std::sync::Mutex<Option<String>>,
    /// Until two handlers have been in service at once, each stays up to
    /// 1 ms for another to join it: in a run this short two threads of a
    /// node might never happen to be in handlers at the same moment on a
    /// loaded 2-core machine, however freely the dispatch lets them. (One
    /// cannot wait for as long as it takes: what is queued behind it may
    /// rightly be held back, by a sequential entry, say.)
    await_partner: bool,
}

impl Checker {
    fn new(senders: usize, await_partner: bool) -> Checker {
        let zeros = |n| (0..n).map(|_| AtomicU64::new(0)).collect();
        Checker {
            in_key: zeros(KEYS),
            active: AtomicU64::new(0),
            max_active: AtomicU64::new(0),
            sequential_running: AtomicBool::new(false),
            last_seq: zeros(senders * KEYS),
            handled_from: zeros(senders),
            violations: AtomicU64::new(0),
            first_violation: std::sync::Mutex::new(None),
            await_partner,
        }
    }

    fn violate(&self, what: String) {
        self.violations.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut f) = self.first_violation.lock() {
            f.get_or_insert(what);
        }
    }

    /// The handler body: enter, work a little, leave, checking on the way.
    fn handle(&self, m: &Message, fifo: bool) {
        let sender = m.args.get(0) as usize;
        let seq = m.args.get(1);
        let word = m.args.get(2) as usize;
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_active.fetch_max(now, Ordering::Relaxed);
        match m.key {
            SyncKey::Sequential => {
                if now != 1 {
                    self.violate(format!("sequential entry from {sender} ran beside {} other handlers", now - 1));
                }
                self.sequential_running.store(true, Ordering::SeqCst);
            }
            _ if self.sequential_running.load(Ordering::SeqCst) => {
                self.violate(format!("{:?} entry ran beside a sequential one", m.key));
            }
            SyncKey::Key(k) => {
                if k != word as u64 {
                    self.violate(format!("word {word} from {sender} arrived with key {k}"));
                }
                let before = self.in_key[k as usize].fetch_add(1, Ordering::SeqCst);
                if before != 0 {
                    self.violate(format!("key {k} had {before} handler(s) in service already"));
                }
                let last = &self.last_seq[sender * KEYS + k as usize];
                if fifo && last.load(Ordering::Relaxed) > seq {
                    self.violate(format!("key {k} from {sender}: #{seq} after #{}", last.load(Ordering::Relaxed) - 1));
                }
                last.store(seq + 1, Ordering::Relaxed);
            }
            SyncKey::NoSync => {}
        }
        // A sequential handler runs alone: nobody could join it.
        if self.await_partner && m.key != SyncKey::Sequential {
            let t = std::time::Instant::now();
            while self.max_active.load(Ordering::Relaxed) < 2 && t.elapsed().as_micros() < 1000 {
                std::thread::yield_now();
            }
        }
        spin_ns(300);
        match m.key {
            SyncKey::Sequential => {
                if self.active.load(Ordering::SeqCst) != 1 {
                    self.violate("a handler started while a sequential one ran".into());
                }
                self.sequential_running.store(false, Ordering::SeqCst);
            }
            SyncKey::Key(k) => {
                self.in_key[k as usize].fetch_sub(1, Ordering::SeqCst);
            }
            SyncKey::NoSync => {}
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
        self.handled_from[sender].fetch_add(1, Ordering::Release);
    }
}

fn spin_ns(ns: u64) {
    let t = std::time::Instant::now();
    while (t.elapsed().as_nanos() as u64) < ns {
        std::hint::spin_loop();
    }
}

fn key_of(i: u64, sender: u64, keys: u64, sequential: bool) -> (SyncKey, u64) {
    let word = (i * 7 + sender * 5) % keys;
    if sequential && (i + sender).is_multiple_of(SEQUENTIAL_EVERY) {
        (SyncKey::Sequential, word)
    } else if (i + sender).is_multiple_of(NOSYNC_EVERY) {
        (SyncKey::NoSync, word)
    } else {
        (SyncKey::Key(word), word)
    }
}

/// Every compute thread sends `n` one-way messages to the next node, then
/// waits (idling, so Floating threads serve) until all were handled.
async fn sender(
    p: RtProc,
    h: HandlerId,
    n: u64,
    keys: u64,
    sequential: bool,
    checkers: Arc<Vec<Checker>>,
) -> Result<(), AmError> {
    let me = (p.node().0 * p.threads_per_node() + p.thread().0) as u64;
    let dst = (p.node().0 + 1) % p.nodes();
    for i in 0..n {
        let (key, word) = key_of(i, me, keys, sequential);
        p.send_keyed(NodeId(dst), h, key, &[me, i, word], &[])?;
    }
    let seen = &checkers[dst as usize].handled_from[me as usize];
    while seen.load(Ordering::Acquire) < n {
        p.idle(2_000).await;
    }
    Ok(())
}

fn stress(policy: Policy, ppn: u32, discipline: Discipline, keys: u64, n: u64) -> Arc<Vec<Checker>> {
    stress_limited(policy, ppn, discipline, keys, n, None, false)
}

/// `stress`, asserting that some node ran two handlers at once.
fn stress_in_parallel(
    policy: Policy,
    ppn: u32,
    discipline: Discipline,
    keys: u64,
    n: u64,
    max_servers: Option<u32>,
) -> Arc<Vec<Checker>> {
    let c = stress_limited(policy, ppn, discipline, keys, n, max_servers, true);
    let most = most_at_once(&c);
    assert!(most >= 2, "{policy:?} {discipline:?} {keys} keys: handlers ran one at a time ({most} at most)");
    c
}

/// `stress` with a limit on a Floating node's serving threads; with
/// `await_partner`, see [`Checker::await_partner`].
fn stress_limited(
    policy: Policy,
    ppn: u32,
    discipline: Discipline,
    keys: u64,
    n: u64,
    max_servers: Option<u32>,
    await_partner: bool,
) -> Arc<Vec<Checker>> {
    assert!(keys as usize <= KEYS);
    let nodes = 2;
    let mut cfg = RtConfig::new(Topology { nodes, procs_per_node: ppn }, policy);
    cfg.run.dispatch.discipline = discipline;
    cfg.run.dispatch.max_servers = max_servers;
    cfg.segment_bytes = 1 << 16;
    cfg.pdq_window = 16;
    let senders = (nodes * ppn) as usize;
    let checkers: Arc<Vec<Checker>> = Arc::new((0..nodes).map(|_| Checker::new(senders, await_partner)).collect());
    let mut table = HandlerTable::new();
    let fifo = discipline == Discipline::Pdq;
    let c = checkers.clone();
    let h = table
        .register(HandlerInfo { name: "checked".into(), body_cycles: 0, code_bytes: 0 }, move |ctx, m| {
            c[ctx.node().index()].handle(m, fifo);
            Ok(())
        })
        .unwrap();
    let sequential = discipline == Discipline::Pdq;
    let c = checkers.clone();
    let out = run(&cfg, &table, |p| sender(p, h, n, keys, sequential, c.clone()))
        .unwrap_or_else(|e| panic!("{policy:?} {discipline:?}: {e}"));
    let compute = policy.compute_procs(ppn) as u64 * nodes as u64;
    assert_eq!(out.stats.handlers, compute * n, "{policy:?} {discipline:?}: every message handled once");
    for (node, ch) in checkers.iter().enumerate() {
        let v = ch.violations.load(Ordering::Relaxed);
        let first = ch.first_violation.lock().unwrap().clone().unwrap_or_default();
        assert_eq!(v, 0, "{policy:?} {discipline:?} node {node}: {v} violations, first: {first}");
    }
    checkers
}

fn most_at_once(c: &[Checker]) -> u64 {
    c.iter().map(|c| c.max_active.load(Ordering::Relaxed)).max().unwrap_or(0)
}

#[test]
fn pdq_on_dedicated_protocol_threads_keeps_every_promise() {
    stress_in_parallel(Policy::Fixed { protocol_procs: 3 }, 4, Discipline::Pdq, 24, 3000, None);
}

#[test]
fn pdq_on_idle_compute_threads_keeps_every_promise() {
    stress_in_parallel(Policy::Floating, 3, Discipline::Pdq, 24, 2000, None);
    // Few keys: entries wait for their key far more often.
    stress_in_parallel(Policy::Floating, 3, Discipline::Pdq, 3, 2000, None);
}

#[test]
fn a_server_limit_caps_how_many_idle_threads_serve_at_once() {
    // Many keys, so nothing but the limit keeps handlers from overlapping.
    let c = stress_limited(Policy::Floating, 4, Discipline::Pdq, 24, 3000, Some(1), false);
    assert_eq!(most_at_once(&c), 1, "one serving thread at a time");
    let c = stress_in_parallel(Policy::Floating, 4, Discipline::Pdq, 24, 3000, Some(2));
    assert_eq!(most_at_once(&c), 2, "handlers at once under a limit of 2");
}

#[test]
fn a_lock_per_key_keeps_keys_exclusive() {
    stress(Policy::Fixed { protocol_procs: 2 }, 3, Discipline::SpinLock, 2, 4000);
}

#[test]
fn sequential_messages_are_refused_under_a_lock_per_key() {
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Fixed { protocol_procs: 1 });
    cfg.run.dispatch.discipline = Discipline::SpinLock;
    let mut table = HandlerTable::new();
    let h = table.register(HandlerInfo { name: "h".into(), body_cycles: 0, code_bytes: 0 }, |_, _| Ok(())).unwrap();
    let err = run(&cfg, &table, |p| async move { p.send(NodeId(1), h, &[], &[]) }).err().unwrap().to_string();
    assert!(err.contains("sequential key") && !err.contains('\n'), "{err}");
}

#[test]
fn parallel_dispatch_is_refused_where_it_cannot_run() {
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single);
    cfg.run.dispatch.discipline = Discipline::Pdq;
    assert!(cfg.validate().unwrap_err().to_string().contains("policy single has one thread"));
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 3 }, Policy::Fixed { protocol_procs: 2 });
    cfg.run.dispatch.discipline = Discipline::Static;
    assert!(cfg.validate().unwrap_err().to_string().contains("simulated only"));
    cfg.run.dispatch.discipline = Discipline::Pdq;
    cfg.pdq_window = 0;
    assert!(cfg.validate().unwrap_err().to_string().starts_with("invalid pdq_window = 0"));
}

#[test]
fn keyed_requests_get_their_replies_under_pdq() {
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 4 }, Policy::Fixed { protocol_procs: 2 });
    cfg.run.dispatch.discipline = Discipline::Pdq;
    cfg.segment_bytes = 1 << 16;
    let mut table = HandlerTable::new();
    let info = |n: &str| HandlerInfo { name: n.into(), body_cycles: 0, code_bytes: 0 };
    let reply = table.register(info("r"), |_, _| Ok(())).unwrap();
    let req = table
        .register(info("q"), move |ctx, m| {
            ctx.reply(finegrain_core::Reply {
                handler: reply,
                args: Args::new(&[m.args.get(0) * 2])?,
                payload: Payload::none(),
            })
        })
        .unwrap();
    let out = run(&cfg, &table, |p| async move {
        let mut sum = 0;
        for i in 0..500u64 {
            let r = p
                .request_keyed(NodeId(1 - p.node().0), req, SyncKey::Key(i % 7), Args::new(&[i])?, Payload::none())
                .await?;
            assert_eq!(r.args.get(0), 2 * i);
            sum += 1;
        }
        Ok(sum)
    })
    .unwrap();
    assert!(out.results.iter().all(|&s| s == 500));
}
