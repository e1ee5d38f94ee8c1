//! What a native run measured.

use crate::clock::Stamp;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-thread accumulators. Atomics because the interrupt handler updates
/// them on the same thread it interrupted.
pub(crate) struct ThreadStats {
    started: Stamp,
    compute: AtomicU64,
    handler: AtomicU64,
    interrupt: AtomicU64,
    wait: AtomicU64,
    idle: AtomicU64,
    handlers: AtomicU64,
    interrupts: AtomicU64,
}

impl Default for ThreadStats {
    fn default() -> ThreadStats {
        ThreadStats {
            started: Stamp::now(),
            compute: AtomicU64::new(0),
            handler: AtomicU64::new(0),
            interrupt: AtomicU64::new(0),
            wait: AtomicU64::new(0),
            idle: AtomicU64::new(0),
            handlers: AtomicU64::new(0),
            interrupts: AtomicU64::new(0),
        }
    }
}

impl ThreadStats {
    pub(crate) fn add_compute(&self, ns: u64) {
        self.compute.fetch_add(ns, Ordering::Relaxed);
    }

    pub(crate) fn add_handler(&self, ns: u64) {
        self.handler.fetch_add(ns, Ordering::Relaxed);
        self.handlers.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_interrupt(&self, ns: u64) {
        self.interrupt.fetch_add(ns, Ordering::Relaxed);
        self.interrupts.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_wait(&self, ns: u64) {
        self.wait.fetch_add(ns, Ordering::Relaxed);
    }

    pub(crate) fn add_idle(&self, ns: u64) {
        self.idle.fetch_add(ns, Ordering::Relaxed);
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
        }
    }
}

/// Where one thread's time went. `compute + handler + interrupt + other =
/// wall`; `other` is waiting, polling and sending. `wait` (time blocked on
/// replies, including handling while waiting) and `idle_polling` (a
/// protocol thread's empty polls) break parts of it down further.
#[derive(Clone, Debug, PartialEq, Eq)]
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
}

/// A native run's totals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtStats {
    pub wall_ns: u64,
    pub requests: u64,
    /// Active messages sent (requests and replies).
    pub messages: u64,
    /// Messages that found their ring full and waited in the sender's
    /// overflow queue (none is ever dropped).
    pub spilled: u64,
    pub handlers: u64,
    pub interrupts: u64,
    pub threads: Vec<ThreadTimes>,
}
