//! Native measurements through the runtime's public interface: active-
//! message ping-pong and streaming rate between two pinned threads, the
//! cache-line ping-pong floors and a crossbeam-channel ping-pong measured
//! the same way, and what an interrupt costs. Each figure is the median of
//! several rounds ([`Effort`]).

use crossbeam_utils::CachePadded;
use finegrain_core::{AmError, Args, HandlerInfo, HandlerTable, Message, NodeId, Policy, Proc, Topology};
use finegrain_rt::clock::Stamp;
use finegrain_rt::probe::{median, Effort};
use finegrain_rt::{run, RtConfig, RtError};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn info(name: &str) -> HandlerInfo {
    HandlerInfo { name: name.into(), body_cycles: 0, code_bytes: 0 }
}

pub fn two_pinned_threads(policy: Policy) -> RtConfig {
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
    finegrain_rt::pin_to(core % finegrain_rt::online_cores());
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
                slot.store(now.since(Stamp::from_ticks(sent)), Ordering::Relaxed);
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
    let signal_ns = finegrain_rt::interrupt::bare_signal_cost(messages.min(5000)).map_err(RtError::Setup)?;
    let delays: Vec<f64> = delivery.iter().map(|d| d.load(Ordering::Relaxed) as f64).filter(|&d| d > 0.0).collect();
    Ok(InterruptCost {
        delivery_ns: median(delays),
        signal_ns,
        runtime_path_ns: path_ns,
        oint_ns: signal_ns + path_ns,
        interrupts,
    })
}
