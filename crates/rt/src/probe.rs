//! Measurements of the runtime's internals for `finegrain bench` (the
//! `probe` feature): a raw pair of its rings with no runtime around them,
//! and its keyed dispatch path on its own; with the measuring discipline
//! every native benchmark shares ([`Effort`], [`median`]). The benchmarks
//! themselves, and their peers, are in the `finegrain-bench` crate.

use crate::clock::Stamp;
use crossbeam_utils::CachePadded;
use finegrain_core::NodeId;
use std::sync::atomic::{AtomicU64, Ordering};

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
    pub fn warm_up<E>(&self, mut step: impl FnMut() -> Result<(), E>) -> Result<(), E> {
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
    pub fn one_way_rounds<E>(&self, mut trip: impl FnMut() -> Result<(), E>) -> Result<Vec<f64>, E> {
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
    pub fn warm_one_way(&self, mut trip: impl FnMut()) -> Vec<f64> {
        let _ = self.warm_up(|| {
            trip();
            Ok::<(), ()>(())
        });
        self.one_way_rounds_plain(trip)
    }

    /// [`Effort::one_way_rounds`] for a round trip that cannot fail.
    pub fn one_way_rounds_plain(&self, mut trip: impl FnMut()) -> Vec<f64> {
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

fn pin(core: usize) {
    crate::os::pin_to(core % crate::os::online_cores());
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
