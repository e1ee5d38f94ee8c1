//! Notification: how a node notices that a message has arrived, and what a
//! sender does so that it does.
//!
//! Every scheme has a receiving side (what the node's threads do while
//! they have nothing to handle) and a sending side (what a sender does
//! right after a message has gone out: nothing, wake a sleeper, interrupt a
//! computing thread). The sending side decides from the destination's
//! [`Doorbell`], a handful of atomics the destination keeps up to date.
//! Here is the *protocol* (counts, fences, the rule for whom to alert).
//! The *mechanism* depends on where the destination lives: a thread
//! handle to unpark or a pthread to signal within one process, a shared
//! futex or `tgkill` between processes. So the transport supplies it
//! ([`crate::transport::Transport::sleep`], `wake_parked`, `interrupt`),
//! together with the doorbell's memory.
//!
//! - [`poll`]: spinning, in other words polling. A thread that waits or
//!   serves looks at the rings again and again, backing off politely when
//!   threads outnumber cores. Single's one thread also polls when it sends,
//!   during `work` and at poll sites (the runtime decides where).
//! - [`park`]: Fixed's protocol threads may sleep after a budget of empty
//!   polls. They count themselves in the doorbell first, and a sender that
//!   sees the count wakes them.
//! - [`signal`]: Floating's interrupts. When every thread of the
//!   destination computes and none acts as protocol processor, a sender
//!   signals one of them, round-robin. The signal handler serves the node's
//!   messages if the thread is inside `work`, and otherwise defers to the
//!   thread's next exit from runtime code.
//!
//! # Room for more schemes
//!
//! Two schemes of the design have a place here, each in a module of its
//! own beside these three:
//! - **Timed checks** (`timed`): a computing thread reads the time-stamp
//!   counter at its poll sites (or in `work`) and polls only once a
//!   configured interval has passed since its last poll. This is polling
//!   with a bounded rate; senders do nothing. It needs a per-thread "last
//!   checked" stamp and a [`Scheme`] variant; the receiving side hooks
//!   into `work` and `poll_site`.
//! - **A polling watchdog** (`watchdog`): a thread of the node that sleeps
//!   for a timeout, then checks whether messages have waited unserved for
//!   longer than that (arrival stamps, or a count the senders bump) and, if
//!   so, alerts a computing thread as a sender would, through
//!   [`signal`]. Senders do nothing. This is also how a node learns of
//!   messages from a transport whose senders cannot reach its doorbell
//!   (MPI across hosts: `Transport::doorbell` gives `None`).

pub(crate) mod park;
pub(crate) mod poll;
pub mod signal;

use crossbeam_utils::CachePadded;
use finegrain_core::Policy;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};

/// What a node shows its senders so they can tell whether and how to
/// alert it. Only plain atomics and a constant, with no pointers: a
/// transport between processes can place it in shared memory as it is.
pub(crate) struct Doorbell {
    /// The serial discipline's role: set while one thread acts as the
    /// node's protocol processor (see [`crate::dispatch::serial`], which
    /// takes and releases it). It lives here because senders read it: a
    /// node with an acting protocol processor needs no interrupt.
    pub(crate) role: CachePadded<AtomicBool>,
    /// Floating: threads of the node inside `work` now.
    pub(crate) computing: CachePadded<AtomicU32>,
    /// An interrupt was raised and not yet taken.
    pub(crate) irq_raised: CachePadded<AtomicBool>,
    /// The compute thread the next interrupt goes to (round-robin).
    pub(crate) irq_next: AtomicU32,
    pub(crate) compute_threads: u32,
    /// Fixed: protocol threads that may be asleep now (each counts itself
    /// while it may sleep, so one thread's wake-up cannot hide another
    /// that still sleeps).
    pub(crate) parked: AtomicU32,
    /// Messages the node has handled: its heartbeat. A thread waiting on
    /// the node reads it when its progress timeout comes: a node that
    /// still handles messages is slow (starved of cores, say), not stuck.
    /// On a line of its own, which only the node's handling threads write.
    pub(crate) handled: CachePadded<AtomicU64>,
}

impl Doorbell {
    pub(crate) fn new(compute_threads: u32) -> Doorbell {
        Doorbell {
            role: CachePadded::new(AtomicBool::new(false)),
            computing: CachePadded::new(AtomicU32::new(0)),
            irq_raised: CachePadded::new(AtomicBool::new(false)),
            irq_next: AtomicU32::new(0),
            compute_threads,
            parked: AtomicU32::new(0),
            handled: CachePadded::new(AtomicU64::new(0)),
        }
    }
}

/// How a run's nodes notice messages, as the configuration asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// Threads poll; senders do nothing.
    Poll,
    /// Fixed with `park_after_polls`: idle protocol threads park, senders
    /// wake them.
    Park,
    /// Floating with `interrupts`: senders interrupt a node whose threads
    /// all compute.
    Interrupt,
}

/// What a sender must do after a send (carried out by the transport,
/// which knows how to reach the destination's threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alert {
    Nothing,
    /// Wake the destination's parked protocol threads.
    WakeParked,
    /// Interrupt this compute thread of the destination.
    Interrupt(u32),
}

impl Scheme {
    /// The scheme of a run under `policy`, whose protocol threads park
    /// (`RtConfig::park_after_polls` set) or not, with `interrupts` on or
    /// off (`RtConfig::interrupts`).
    pub(crate) fn of(policy: Policy, parking: bool, interrupts: bool) -> Scheme {
        match policy {
            Policy::Fixed { .. } if parking => Scheme::Park,
            Policy::Floating if interrupts => Scheme::Interrupt,
            _ => Scheme::Poll,
        }
    }

    /// The sending side, once a message to the node behind `bell` has been
    /// sent: gone out, or queued in the sender's spill behind earlier ones
    /// (the runtime alerts again when it leaves the spill).
    #[inline]
    pub(crate) fn alert(self, bell: &Doorbell) -> Alert {
        match self {
            Scheme::Poll => Alert::Nothing,
            Scheme::Park if park::wanted(bell) => Alert::WakeParked,
            Scheme::Park => Alert::Nothing,
            Scheme::Interrupt => signal::target(bell).map_or(Alert::Nothing, Alert::Interrupt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn the_scheme_follows_the_policy_and_its_settings() {
        let fixed = Policy::Fixed { protocol_procs: 1 };
        assert_eq!(Scheme::of(fixed, true, true), Scheme::Park);
        assert_eq!(Scheme::of(fixed, false, true), Scheme::Poll);
        assert_eq!(Scheme::of(Policy::Floating, false, true), Scheme::Interrupt);
        assert_eq!(Scheme::of(Policy::Floating, true, false), Scheme::Poll);
        assert_eq!(Scheme::of(Policy::Single, true, true), Scheme::Poll);
    }

    #[test]
    fn senders_wake_a_node_only_while_a_thread_is_parked() {
        let bell = Doorbell::new(2);
        assert_eq!(Scheme::Park.alert(&bell), Alert::Nothing);
        bell.parked.store(1, Ordering::Relaxed);
        assert_eq!(Scheme::Park.alert(&bell), Alert::WakeParked);
        assert_eq!(Scheme::Poll.alert(&bell), Alert::Nothing);
    }

    #[test]
    fn senders_interrupt_a_node_whose_threads_all_compute_once_round_robin() {
        let bell = Doorbell::new(2);
        signal::begin_computing(&bell);
        assert_eq!(Scheme::Interrupt.alert(&bell), Alert::Nothing, "one of two threads computes");
        signal::begin_computing(&bell);
        bell.role.store(true, Ordering::Relaxed);
        assert_eq!(Scheme::Interrupt.alert(&bell), Alert::Nothing, "a protocol processor acts");
        bell.role.store(false, Ordering::Relaxed);
        assert_eq!(Scheme::Interrupt.alert(&bell), Alert::Interrupt(0));
        assert_eq!(Scheme::Interrupt.alert(&bell), Alert::Nothing, "one is on its way");
        bell.irq_raised.store(false, Ordering::Relaxed); // taken
        assert_eq!(Scheme::Interrupt.alert(&bell), Alert::Interrupt(1));
        signal::end_computing(&bell);
        bell.irq_raised.store(false, Ordering::Relaxed);
        assert_eq!(Scheme::Interrupt.alert(&bell), Alert::Nothing);
    }

    #[test]
    fn a_parking_thread_sleeps_only_without_work_and_uncounts_itself() {
        let bell = Doorbell::new(1);
        let mut slept = false;
        assert_eq!(park::park_idle(&bell, || true, |_| slept = true), None);
        assert!(!slept);
        let r = park::park_idle(
            &bell,
            || false,
            |timeout| {
                assert_eq!(bell.parked.load(Ordering::Relaxed), 1, "counted while asleep");
                assert_eq!(timeout, park::TIMEOUT);
                slept = true;
            },
        );
        assert!(slept && r == Some(true), "a sleep that returns at once counts as woken");
        assert_eq!(bell.parked.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn an_interrupt_outside_work_waits_for_the_next_exit() {
        let gate = signal::IrqGate::new();
        assert!(!gate.arrive(), "not inside work");
        assert!(gate.pending());
        gate.enter();
        assert!(gate.exit(), "served at the exit");
        assert!(!gate.pending());
        gate.enter();
        assert!(!gate.exit());
        gate.set_interruptible(true, Ordering::Release);
        assert!(gate.arrive(), "inside work and outside runtime code: served at once");
        gate.leave();
        gate.enter();
        assert!(!gate.arrive(), "runtime code is never re-entered");
        assert!(gate.exit());
    }
}
