//! What a native run measured.

use crate::clock::Stamp;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-thread accumulators. Atomics because the interrupt handler updates
/// them on the same thread it interrupted.
pub(crate) struct ThreadStats {
    started: Stamp,
    /// Whether to read the clock around handlers, waits and polls (the
    /// time split); counters are kept either way.
    timing: bool,
    compute: AtomicU64,
    handler: AtomicU64,
    interrupt: AtomicU64,
    wait: AtomicU64,
    idle: AtomicU64,
    handlers: AtomicU64,
    interrupts: AtomicU64,
    sent: AtomicU64,
    requests: AtomicU64,
    spilled: AtomicU64,
    work_chunks: AtomicU64,
    parks: AtomicU64,
    parks_woken: AtomicU64,
}

/// Adds to a counter only this thread writes. The interrupt handler runs
/// on the same thread but only while the thread is inside `work`, which
/// updates none of the counters the handler does (see
/// `notify/signal.rs`), so a plain load and store cannot lose an update,
/// and it avoids a locked read-modify-write (tens of nanoseconds) per
/// message.
fn bump(c: &AtomicU64, by: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(by), Ordering::Relaxed);
}

impl ThreadStats {
    pub(crate) fn new(timing: bool) -> ThreadStats {
        ThreadStats {
            started: Stamp::now(),
            timing,
            compute: AtomicU64::new(0),
            handler: AtomicU64::new(0),
            interrupt: AtomicU64::new(0),
            wait: AtomicU64::new(0),
            idle: AtomicU64::new(0),
            handlers: AtomicU64::new(0),
            interrupts: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            spilled: AtomicU64::new(0),
            work_chunks: AtomicU64::new(0),
            parks: AtomicU64::new(0),
            parks_woken: AtomicU64::new(0),
        }
    }

    /// Now, if the time split is on.
    pub(crate) fn stamp(&self) -> Option<Stamp> {
        self.timing.then(Stamp::now)
    }

    /// Nanoseconds since `t` (0 without the time split).
    pub(crate) fn since(&self, t: Option<Stamp>) -> u64 {
        t.map_or(0, |t| t.elapsed_ns())
    }

    pub(crate) fn add_compute(&self, ns: u64) {
        bump(&self.compute, ns);
    }

    pub(crate) fn add_handler(&self, ns: u64) {
        bump(&self.handler, ns);
        bump(&self.handlers, 1);
    }

    pub(crate) fn add_interrupt(&self, ns: u64) {
        bump(&self.interrupt, ns);
        bump(&self.interrupts, 1);
    }

    pub(crate) fn add_wait(&self, ns: u64) {
        bump(&self.wait, ns);
    }

    pub(crate) fn add_idle(&self, ns: u64) {
        bump(&self.idle, ns);
    }

    // Counters owned by one thread (and its interrupt handler): never
    // contended, so a relaxed add is a plain increment in practice.
    pub(crate) fn count_sent(&self) {
        bump(&self.sent, 1);
    }

    pub(crate) fn count_request(&self) {
        bump(&self.requests, 1);
    }

    pub(crate) fn count_spilled(&self) {
        bump(&self.spilled, 1);
    }

    pub(crate) fn count_work_chunk(&self) {
        bump(&self.work_chunks, 1);
    }

    pub(crate) fn count_park(&self, woken: bool) {
        bump(&self.parks, 1);
        bump(&self.parks_woken, woken as u64);
    }

    pub(crate) fn handler_ns(&self) -> u64 {
        self.handler.load(Ordering::Relaxed)
    }

    pub(crate) fn interrupt_ns(&self) -> u64 {
        self.interrupt.load(Ordering::Relaxed)
    }

    pub(crate) fn times(&self, node: u32, thread: u32, compute_thread: bool) -> ThreadTimes {
        let wall = self.started.elapsed_ns();
        let compute = self.compute.load(Ordering::Relaxed);
        let handler = self.handler.load(Ordering::Relaxed);
        let interrupt = self.interrupt.load(Ordering::Relaxed);
        ThreadTimes {
            node,
            thread,
            role: if compute_thread { "compute" } else { "protocol" },
            wall_ns: wall,
            compute_ns: compute,
            handler_ns: handler,
            interrupt_ns: interrupt,
            other_ns: wall.saturating_sub(compute + handler + interrupt),
            wait_ns: self.wait.load(Ordering::Relaxed),
            idle_polling_ns: self.idle.load(Ordering::Relaxed),
            handlers: self.handlers.load(Ordering::Relaxed),
            interrupts: self.interrupts.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
            spilled: self.spilled.load(Ordering::Relaxed),
            work_chunks: self.work_chunks.load(Ordering::Relaxed),
            parks: self.parks.load(Ordering::Relaxed),
            parks_woken: self.parks_woken.load(Ordering::Relaxed),
        }
    }
}

/// Where one thread's time went. `compute + handler + interrupt + other =
/// wall`; `other` is waiting, polling and sending. `wait` (time blocked on
/// replies, including handling while waiting) and `idle_polling` (a
/// protocol thread's empty polls) break parts of it down further.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ThreadTimes {
    pub node: u32,
    pub thread: u32,
    pub role: &'static str,
    pub wall_ns: u64,
    pub compute_ns: u64,
    pub handler_ns: u64,
    pub interrupt_ns: u64,
    pub other_ns: u64,
    pub wait_ns: u64,
    pub idle_polling_ns: u64,
    pub handlers: u64,
    pub interrupts: u64,
    /// Active messages this thread sent (requests, replies, one-way).
    pub sent: u64,
    pub requests: u64,
    pub spilled: u64,
    /// 64-access chunks of synthetic work done (work progress, for
    /// measuring what interrupts cost the interrupted computation).
    pub work_chunks: u64,
    /// Fixed protocol threads: times this thread parked, and how many of
    /// those ended before the timeout, which only a sender's wake-up (or,
    /// rarely, a spurious one) does.
    pub parks: u64,
    pub parks_woken: u64,
}

/// A native run's totals.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RtStats {
    pub wall_ns: u64,
    pub requests: u64,
    /// Active messages sent (requests, replies and one-way messages).
    pub messages: u64,
    /// Messages that found their ring full and waited in the sender's
    /// overflow queue (none is ever dropped).
    pub spilled: u64,
    pub handlers: u64,
    pub interrupts: u64,
    pub threads: Vec<ThreadTimes>,
}
