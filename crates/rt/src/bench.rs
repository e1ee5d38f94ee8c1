//! Native measurements behind `finegrain bench`: active-message ping-pong
//! and streaming rate between two pinned threads, the cache-line ping-pong
//! floor and a crossbeam-channel ping-pong measured the same way, a raw
//! pair of rings, and what an interrupt costs. Each figure is the median of several rounds.

use crate::clock::Stamp;
use crate::config::RtConfig;
use crate::runtime::{run, RtError};
use crossbeam_utils::CachePadded;
use finegrain_core::{AmError, Args, HandlerInfo, HandlerTable, Message, NodeId, Policy, Proc, Topology};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// How much to measure. Warm-up is at least `warmup` iterations and at
/// least `warmup_ms` of wall time: on shared virtual machines the cores
/// take a while to reach a steady speed.
#[derive(Clone, Copy, Debug)]
pub struct Effort {
    pub warmup: u64,
    pub warmup_ms: u64,
    pub per_round: u64,
    pub rounds: usize,
}

impl Effort {
    pub const DEFAULT: Effort = Effort { warmup: 20_000, warmup_ms: 500, per_round: 20_000, rounds: 9 };
    pub const QUICK: Effort = Effort { warmup: 2_000, warmup_ms: 50, per_round: 2_000, rounds: 5 };

    /// Runs `step` for the warm-up.
    fn warm_up<E>(&self, mut step: impl FnMut() -> Result<(), E>) -> Result<(), E> {
        let until = Stamp::now().plus_ns(self.warmup_ms as f64 * 1e6);
        let mut n = 0;
        while n < self.warmup || !until.reached() {
            step()?;
            n += 1;
        }
        Ok(())
    }

    /// Times `rounds` rounds of `per_round` round trips; one-way
    /// nanoseconds (half a round trip) per round.
    fn one_way_rounds<E>(&self, mut trip: impl FnMut() -> Result<(), E>) -> Result<Vec<f64>, E> {
        let mut one_way = Vec::with_capacity(self.rounds);
        for _ in 0..self.rounds {
            let t0 = Stamp::now();
            for _ in 0..self.per_round {
                trip()?;
            }
            one_way.push(t0.elapsed_ns() as f64 / self.per_round as f64 / 2.0);
        }
        Ok(one_way)
    }

    /// Warms up, then [`Effort::one_way_rounds`], for a round trip that
    /// cannot fail.
    fn warm_one_way(&self, mut trip: impl FnMut()) -> Vec<f64> {
        let _ = self.warm_up(|| {
            trip();
            Ok::<(), ()>(())
        });
        self.one_way_rounds_plain(trip)
    }

    /// [`Effort::one_way_rounds`] for a round trip that cannot fail.
    fn one_way_rounds_plain(&self, mut trip: impl FnMut()) -> Vec<f64> {
        let rounds = self.one_way_rounds(|| {
            trip();
            Ok::<(), std::convert::Infallible>(())
        });
        rounds.unwrap_or_else(|never| match never {})
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn info(name: &str) -> HandlerInfo {
    HandlerInfo { name: name.into(), body_cycles: 0, code_bytes: 0 }
}

fn two_pinned_threads(policy: Policy) -> RtConfig {
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, policy);
    cfg.segment_bytes = 4096;
    cfg.time_split = false;
    cfg
}

/// Median one-way latency (round trip / 2) of an active-message request
/// whose handler replies with the same payload, between two threads pinned
/// to cores 0 and 1 (Single policy: each thread computes and handles).
pub fn finegrain_pingpong(size: usize, effort: Effort) -> Result<f64, RtError> {
    let mut t = HandlerTable::new();
    let done = t.register(info("pong"), |_, _| Ok(())).map_err(RtError::Handler)?;
    let ping = t
        .register(info("ping"), move |ctx, m: &Message| ctx.reply_bytes(done, Args::default(), m.payload.as_slice()))
        .map_err(RtError::Handler)?;
    let stop = Arc::new(AtomicBool::new(false));
    let payload = vec![0x5au8; size];
    let out = run(&two_pinned_threads(Policy::Single), &t, |p| {
        let (stop, payload) = (stop.clone(), payload.clone());
        async move {
            if p.node().0 == 1 {
                p.serve(|| stop.load(Ordering::Acquire))?;
                return Ok(Vec::new());
            }
            let trip = || {
                let n = p.request_with(NodeId(1), ping, &[], &payload, |r| r.payload().len())?;
                debug_assert_eq!(n, payload.len());
                Ok::<(), AmError>(())
            };
            effort.warm_up(trip)?;
            let one_way = effort.one_way_rounds(trip)?;
            stop.store(true, Ordering::Release);
            Ok::<_, AmError>(one_way)
        }
    })?;
    Ok(median(out.results.into_iter().flatten().collect()))
}

fn pin(core: usize) {
    crate::os::pin_to(core % crate::os::online_cores());
}

/// The hardware floor: two threads on cores 0 and 1 pass a counter back and
/// forth through one padded atomic word; median one-way time.
pub fn floor_pingpong(effort: Effort) -> f64 {
    const STOP: u64 = u64::MAX;
    let word = Arc::new(CachePadded::new(AtomicU64::new(0)));
    let w = word.clone();
    let partner = std::thread::spawn(move || {
        pin(1);
        loop {
            let v = w.load(Ordering::Acquire);
            if v == STOP {
                break;
            }
            if v % 2 == 1 {
                w.store(v + 1, Ordering::Release);
            } else {
                std::hint::spin_loop();
            }
        }
    });
    // The measuring side runs on its own thread too, so the caller's
    // affinity is left alone.
    let one_way = std::thread::spawn(move || {
        pin(0);
        let mut next = 0u64;
        let trip = || {
            word.store(next + 1, Ordering::Release);
            while word.load(Ordering::Acquire) != next + 2 {
                std::hint::spin_loop();
            }
            next += 2;
        };
        let one_way = effort.warm_one_way(trip);
        word.store(STOP, Ordering::Release);
        one_way
    })
    .join()
    .expect("measuring thread");
    partner.join().expect("partner thread");
    median(one_way)
}

/// The two-line floor: like [`floor_pingpong`], but each direction has
/// its own padded word (each thread polls the line the other writes), which
/// is the least any pair of one-way queues can cost.
pub fn two_line_floor_pingpong(effort: Effort) -> f64 {
    const STOP: u64 = u64::MAX;
    let there = Arc::new(CachePadded::new(AtomicU64::new(0)));
    let back = Arc::new(CachePadded::new(AtomicU64::new(0)));
    let (t2, b2) = (there.clone(), back.clone());
    let partner = std::thread::spawn(move || {
        pin(1);
        loop {
            let v = t2.load(Ordering::Acquire);
            if v == STOP {
                break;
            }
            if v != b2.load(Ordering::Relaxed) {
                b2.store(v, Ordering::Release);
            } else {
                std::hint::spin_loop();
            }
        }
    });
    let one_way = std::thread::spawn(move || {
        pin(0);
        let mut next = 0u64;
        let trip = || {
            next += 1;
            there.store(next, Ordering::Release);
            while back.load(Ordering::Acquire) != next {
                std::hint::spin_loop();
            }
        };
        let one_way = effort.warm_one_way(trip);
        there.store(STOP, Ordering::Release);
        one_way
    })
    .join()
    .expect("measuring thread");
    partner.join().expect("partner thread");
    median(one_way)
}

/// A raw pair of the runtime's rings with no runtime around them: threads
/// on cores 0 and 1 bounce a one-slot record (each side reads its first
/// word); median one-way time. (The rings themselves are internal, which
/// is why this lives here rather than in an example.)
pub fn ring_pingpong(effort: Effort) -> f64 {
    const PING: u64 = 1;
    const STOP: u64 = 2;
    let (mut there, mut there_in) = crate::transport::ring::ring(256);
    let (mut back, mut back_in) = crate::transport::ring::ring(256);
    let partner = std::thread::spawn(move || {
        pin(1);
        loop {
            match there_in.try_pop(|r| (r.meta(), r.word(0))) {
                Some((STOP, _)) => break,
                Some(_) => {
                    while back.try_push(PING, &[]).is_err() {
                        std::hint::spin_loop();
                    }
                }
                None => std::hint::spin_loop(),
            }
        }
    });
    let one_way = std::thread::spawn(move || {
        pin(0);
        let trip = || {
            while there.try_push(PING, &[]).is_err() {
                std::hint::spin_loop();
            }
            while back_in.try_pop(|r| r.word(0)).is_none() {
                std::hint::spin_loop();
            }
        };
        let one_way = effort.warm_one_way(trip);
        while there.try_push(STOP, &[]).is_err() {
            std::hint::spin_loop();
        }
        one_way
    })
    .join()
    .expect("measuring thread");
    partner.join().expect("partner thread");
    median(one_way)
}

/// A crossbeam-channel ping-pong of `size`-byte messages between cores 0
/// and 1 (bounded channels of capacity 1); median one-way time.
pub fn crossbeam_pingpong(size: usize, effort: Effort) -> f64 {
    let (to_b, from_a) = crossbeam_channel::bounded::<Vec<u8>>(1);
    let (to_a, from_b) = crossbeam_channel::bounded::<Vec<u8>>(1);
    let total = effort.warmup + effort.per_round * effort.rounds as u64;
    let partner = std::thread::spawn(move || {
        pin(1);
        for _ in 0..total {
            let m = from_a.recv().expect("ping");
            to_a.send(m).expect("pong");
        }
    });
    let one_way = std::thread::spawn(move || {
        pin(0);
        let mut buf = vec![0x5au8; size];
        let mut trip = || {
            to_b.send(std::mem::take(&mut buf)).expect("ping");
            buf = from_b.recv().expect("pong");
        };
        // A fixed warm-up count: the partner answers exactly `total` pings.
        for _ in 0..effort.warmup {
            trip();
        }
        effort.one_way_rounds_plain(trip)
    })
    .join()
    .expect("measuring thread");
    partner.join().expect("partner thread");
    median(one_way)
}

/// One-way streaming of 8-byte active messages from the thread on core 0 to
/// the one on core 1; median messages per second over the rounds.
pub fn stream_rate(effort: Effort) -> Result<f64, RtError> {
    let received = Arc::new(CachePadded::new(AtomicU64::new(0)));
    let mut t = HandlerTable::new();
    let r2 = received.clone();
    let sink = t
        .register(info("sink"), move |_, _| {
            r2.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .map_err(RtError::Handler)?;
    let stop = Arc::new(AtomicBool::new(false));
    let out = run(&two_pinned_threads(Policy::Single), &t, |p| {
        let (stop, received) = (stop.clone(), received.clone());
        async move {
            if p.node().0 == 1 {
                p.serve(|| stop.load(Ordering::Acquire))?;
                return Ok(Vec::new());
            }
            let word = 0x1122_3344_5566_7788u64.to_le_bytes();
            let mut rates = Vec::new();
            let mut sent = 0u64;
            let mut send_all = |n: u64| -> Result<(), AmError> {
                for _ in 0..n {
                    p.send(NodeId(1), sink, &[], &word)?;
                }
                sent += n;
                while received.load(Ordering::Acquire) < sent {
                    std::hint::spin_loop();
                }
                Ok(())
            };
            send_all(effort.warmup * 5)?;
            for _ in 0..effort.rounds {
                let t0 = Stamp::now();
                send_all(effort.per_round * 10)?;
                rates.push((effort.per_round * 10) as f64 * 1e9 / t0.elapsed_ns().max(1) as f64);
            }
            stop.store(true, Ordering::Release);
            Ok::<_, AmError>(rates)
        }
    })?;
    Ok(median(out.results.into_iter().flatten().collect()))
}

/// What an interrupt costs natively.
#[derive(Clone, Copy, Debug)]
pub struct InterruptCost {
    /// Median time from the sender's send to the start of the handler on
    /// the interrupted thread (signal delivery included).
    pub delivery_ns: f64,
    /// What a signal costs the interrupted thread with nothing to handle
    /// (kernel entry, delivery, return).
    pub signal_ns: f64,
    /// The runtime's interrupt path per interrupt: taking the role, polling
    /// the rings, running the handler, giving the role back.
    pub runtime_path_ns: f64,
    /// The native Oint: signal plus runtime path.
    pub oint_ns: f64,
    /// Interrupts taken in the measured phase.
    pub interrupts: u64,
}

/// Floating, two nodes of one thread: node 1's thread computes for a fixed
/// time while node 0 sends it null one-way messages spaced out; each
/// arrives while node 1's only thread computes, so each is taken by
/// interrupt. Delivery is timed in the handler; the native Oint is the bare
/// signal cost plus the runtime's interrupt path as the thread measured it.
pub fn interrupt_cost(messages: u64, phase_ms: u64) -> Result<InterruptCost, RtError> {
    let mut t = HandlerTable::new();
    let delivery: Arc<Vec<AtomicU64>> = Arc::new((0..messages).map(|_| AtomicU64::new(0)).collect());
    let d2 = delivery.clone();
    let null = t
        .register(info("null"), move |_, m: &Message| {
            let sent = m.args.get(0);
            let i = m.args.get(1) as usize;
            let now = Stamp::now();
            if let Some(slot) = d2.get(i) {
                slot.store(now.since(crate::clock::Stamp::from_ticks(sent)), Ordering::Relaxed);
            }
            Ok(())
        })
        .map_err(RtError::Handler)?;
    let phase = Arc::new(AtomicU64::new(0));
    let mut cfg = two_pinned_threads(Policy::Floating);
    cfg.run.notification = finegrain_core::Notification::Interrupt;
    let chunk_cycles = 50_000; // 50 us pieces of work
    let pieces = phase_ms * 1_000_000 / chunk_cycles;
    let out = run(&cfg, &t, |p| {
        let phase = phase.clone();
        async move {
            if p.node().0 == 1 {
                // Compute the whole time; node 0's messages interrupt us.
                phase.store(2, Ordering::Release);
                for _ in 0..pieces {
                    p.work(chunk_cycles).await;
                }
                phase.store(3, Ordering::Release);
                Ok(Vec::<u64>::new())
            } else {
                while phase.load(Ordering::Acquire) < 2 {
                    std::thread::yield_now();
                }
                let gap_ns = phase_ms as f64 * 1e6 / (messages as f64 + 1.0);
                for i in 0..messages {
                    let until = Stamp::now().plus_ns(gap_ns);
                    while !until.reached() {
                        std::hint::spin_loop();
                    }
                    p.send(NodeId(1), null, &[Stamp::now().ticks(), i], &[])?;
                }
                while phase.load(Ordering::Acquire) < 3 {
                    std::thread::yield_now();
                }
                Ok(Vec::new())
            }
        }
    })?;
    let node1 = out.stats.threads.iter().find(|t| t.node == 1);
    let interrupts = node1.map(|t| t.interrupts).unwrap_or(0);
    // Node 1's thread only computes, so all its handling happened in
    // interrupts: the path cost is everything its interrupts did.
    let path_ns =
        node1.map(|t| (t.interrupt_ns + t.handler_ns) as f64 / t.interrupts.max(1) as f64).unwrap_or(f64::NAN);
    let _ = out.results;
    let signal_ns = crate::interrupt::bare_signal_cost(messages.min(5000)).map_err(RtError::Setup)?;
    let delays: Vec<f64> = delivery.iter().map(|d| d.load(Ordering::Relaxed) as f64).filter(|&d| d > 0.0).collect();
    Ok(InterruptCost {
        delivery_ns: median(delays),
        signal_ns,
        runtime_path_ns: path_ns,
        oint_ns: signal_ns + path_ns,
        interrupts,
    })
}

/// One configuration of `finegrain bench pdq`: handlers per second on the
/// node's dispatch path with two serving threads (PDQ, or a lock per key)
/// and with one thread dispatching serially.
#[derive(Clone, Copy, Debug)]
pub struct KeyedRow {
    pub keys: u64,
    /// Iterations of dependent arithmetic each handler does besides its
    /// fetch&add (the handler cost).
    pub work: u32,
    /// Median nanoseconds one handler takes on the single dispatcher.
    pub single_ns_per_handler: f64,
    pub pdq_per_s: f64,
    pub lock_per_key_per_s: f64,
    pub single_per_s: f64,
    pub rounds: usize,
}

/// Rings standing for the node's senders.
const BENCH_SENDERS: usize = 16;

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Pdq,
    LockPerKey,
    Single,
}

/// The handler: a fetch&add on the key's word with `work` iterations of
/// arithmetic between the load and the store, so overlapping handlers of one
/// key would lose updates (checked after every round).
fn fetch_add_handler(words: &[CachePadded<AtomicU64>], m: &finegrain_core::Message, work: u32) {
    let w = &words[m.args.get(0) as usize];
    let v = w.load(Ordering::Relaxed);
    let mut x = v | 1;
    for _ in 0..work {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
    }
    std::hint::black_box(x);
    w.store(v + 1, Ordering::Relaxed);
}

/// Handler throughput of PDQ, a lock per key and a single dispatcher on
/// `keys` words, rounds interleaved so the three see the same machine.
pub fn keyed_dispatch(keys: u64, work: u32, effort: Effort) -> Result<KeyedRow, String> {
    use crate::dispatch::keyed::{Batch, Idle, KeyedQueue};
    use crate::transport::codec::{push_message, Outgoing};
    use crate::transport::inproc::RingInbox;
    use crate::transport::Inbox;
    use finegrain_core::{Discipline, HandlerId, MsgKind, SyncKey, ThreadId};
    crate::clock::calibrate();
    let per_round = effort.per_round.max(BENCH_SENDERS as u64);
    let per_ring = per_round.div_ceil(BENCH_SENDERS as u64) as usize;
    let (mut producers, consumers): (Vec<_>, Vec<_>) =
        (0..BENCH_SENDERS).map(|_| crate::transport::ring::ring((per_ring + 8).next_power_of_two().max(64))).unzip();
    // The node's senders' rings; only the keyed queue (under its ingest
    // lock) or the single dispatcher (alone in its round) takes from them.
    let inbox = RingInbox::new(NodeId(0), consumers);
    let words: Vec<CachePadded<AtomicU64>> = (0..keys).map(|_| CachePadded::new(AtomicU64::new(0))).collect();
    let mut fill = |round: u64| {
        for i in 0..per_round {
            let word = finegrain_core::mix_seed(round, i, 0x6b) % keys;
            let m = Outgoing {
                kind: MsgKind::Request,
                handler: HandlerId(0),
                src_node: NodeId(1),
                src_thread: ThreadId(0),
                token: 0,
                key: SyncKey::Key(word),
                args: &[word],
                payload: &[],
            };
            push_message(&mut producers[i as usize % BENCH_SENDERS], &m).expect("rings hold a round");
        }
    };
    let run_round = |v: Variant| -> f64 {
        let discipline = if v == Variant::LockPerKey { Discipline::SpinLock } else { Discipline::Pdq };
        let queue = KeyedQueue::new(discipline, crate::config::DEFAULT_PDQ_WINDOW).expect("valid window");
        let handled = AtomicU64::new(0);
        let threads = if v == Variant::Single { 1 } else { 2 };
        let barrier = std::sync::Barrier::new(threads + 1);
        let finish: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(0)).collect();
        // Each worker stamps its own start after the barrier: the spawning
        // thread is not pinned and may be descheduled between the barrier
        // and its stamp, which would shorten the measured interval.
        let begin: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(u64::MAX)).collect();
        std::thread::scope(|s| {
            for (t, (fin, beg)) in finish.iter().zip(&begin).enumerate() {
                let (queue, handled, barrier, inbox, words) = (&queue, &handled, &barrier, &inbox, &words);
                s.spawn(move || {
                    pin(t);
                    let mut scratch = crate::transport::codec::scratch_message();
                    barrier.wait();
                    beg.store(Stamp::now().ticks(), Ordering::Relaxed);
                    if v == Variant::Single {
                        // The serial runtime's drain: rings round-robin, no lock,
                        // and (alone) no shared count to keep.
                        let (mut i, mut done) = (0, 0);
                        while done < per_round {
                            // SAFETY: the only thread of this round.
                            if unsafe { inbox.pop(i, &mut scratch) } {
                                fetch_add_handler(words, &scratch, work);
                                done += 1;
                            }
                            i = (i + 1) % BENCH_SENDERS;
                        }
                    } else {
                        let mut last = Idle::NEVER;
                        let mut batch = Batch::default();
                        while handled.load(Ordering::Relaxed) < per_round {
                            if !last.worth_retrying(queue, || inbox.ready()) {
                                std::hint::spin_loop();
                                continue;
                            }
                            // SAFETY: the consumers are used only through the queue.
                            match unsafe { queue.next(inbox, &mut batch) } {
                                Ok(()) => {
                                    for &e in batch.entries() {
                                        let _held = queue.key_lock(e.key);
                                        fetch_add_handler(words, queue.message(e), work);
                                    }
                                    handled.fetch_add(batch.entries().len() as u64, Ordering::Relaxed);
                                    last = Idle::NEVER;
                                }
                                Err(idle) => last = idle,
                            }
                        }
                        queue.complete(&mut batch);
                    }
                    fin.store(Stamp::now().ticks(), Ordering::Relaxed);
                });
            }
            barrier.wait();
        });
        let start = begin.iter().map(|b| b.load(Ordering::Relaxed)).min().unwrap_or(0);
        let end = finish.iter().map(|f| f.load(Ordering::Relaxed)).max().unwrap_or(start);
        let ns = Stamp::from_ticks(end).since(Stamp::from_ticks(start)).max(1);
        per_round as f64 * 1e9 / ns as f64
    };
    let order = [Variant::Pdq, Variant::LockPerKey, Variant::Single];
    let mut rates: [Vec<f64>; 3] = Default::default();
    let mut round = 0u64;
    let mut expected = 0u64;
    let warm = (effort.warmup / per_round).max(1);
    for r in 0..warm + effort.rounds as u64 {
        for (k, v) in order.iter().enumerate() {
            fill(round);
            round += 1;
            let rate = run_round(*v);
            expected += per_round;
            let total: u64 = words.iter().map(|w| w.load(Ordering::Relaxed)).sum();
            if total != expected {
                return Err(format!("{} updates lost: handlers of one key overlapped", expected - total));
            }
            if r >= warm {
                rates[k].push(rate);
            }
        }
    }
    let [pdq, lock, single] = rates.map(median);
    Ok(KeyedRow {
        keys,
        work,
        single_ns_per_handler: 1e9 / single,
        pdq_per_s: pdq,
        lock_per_key_per_s: lock,
        single_per_s: single,
        rounds: effort.rounds,
    })
}
