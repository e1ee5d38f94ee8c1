//! Notification schemes: how a node's processors come to notice messages
//! that wait while nobody acts as protocol processor.
//!
//! The engine decides who serves (the policy, the role, the dispatch
//! queue) and takes every message an idle processor can: a processor with
//! nothing to do notices at once, whatever the scheme. A [`Notify`] scheme
//! decides the rest: what makes a busy node look at its NI, and what that
//! costs. The engine tells the scheme of these events:
//!
//! - [`Notify::unattended`]: messages wait at a node, nobody serves, no
//!   idle processor may take them, and the policy lets compute processors
//!   handle messages. The engine reports it when a message arrives, when
//!   the role is given up, when a processor starts computing and when a
//!   notification missed its target. The scheme names the processor to
//!   notify now, if any; the engine delivers the notification as an
//!   `Interrupt` event, which stops the processor's computation (delayed,
//!   never lost), charges it [`Notify::entry_cycles`], lets it take the
//!   role and drain the queue, and charges [`Notify::exit_cycles`] on its
//!   way back.
//! - [`Notify::in_flight`] and [`Notify::settled`]: while a notification
//!   is on its way to a node the engine leaves its waiting messages to it;
//!   it is settled once its processor has tried to take the role, or found
//!   not computing when it arrived (the engine then reports the messages
//!   unattended again).
//! - [`Notify::poll_site`]: a thread reached a poll site (`Proc::poll`):
//!   whether it polls, and what the site costs when it handles nothing.
//! - [`Notify::masks_role`]: whether taking and giving up the role masks
//!   and unmasks the NI's interrupt (an NI register write each).
//! - [`Notify::overhead`]: what a notification costs the notified
//!   processor, which the adaptive relinquish rule weighs against the time
//!   between arrivals.
//!
//! The schemes are a closed set dispatched by [`Notifier`], an enum: no
//! dynamic call on the engine's paths, and with one scheme the match folds
//! away. Interrupts ([`Interrupts`]) are the only scheme the machine
//! configuration describes today.
//!
//! # The notification study's schemes
//!
//! The study (Perković and Keleher, ICS 1999) replaces interrupts with
//! polls placed in the code, timed checks and a watchdog. What each needs:
//!
//! - **Interrupts, fast and slow** (`ifast`, `islow`; [`Interrupts`], the
//!   one implemented): `unattended` raises the line to a computing
//!   processor, round-robin, once every processor computes; the cost is the
//!   entry and exit split of Oint; the role masks the interrupt.
//! - **Poll on send** (`base`): `unattended` does nothing; a poll follows
//!   each send. That needs one more event, a thread's send done (the
//!   engine times a request's send where it starts it, in `start_op`), which
//!   the scheme answers as it answers `poll_site`. No role mask: a
//!   processor taking the role masks nothing.
//! - **Poll sites** (`loop`, and polls a binary rewriter would insert):
//!   `poll_site` polls at the instrumented sites at the poll's cost (20
//!   cycles in the study) and costs nothing elsewhere. Telling sites apart
//!   needs a site argument on `Proc::poll` (a `finegrain-core` change).
//! - **Timed checks** (`func-t`, `heur-t`, `loop-t`): `poll_site` costs the
//!   check (5 cycles) and polls only once the threshold has passed since
//!   the processor last polled (the scheme keeps that time per processor).
//! - **Polling watchdog** (`wp50`, `wp1m`): `unattended` arms a timer at
//!   the arrival plus the timeout; when it fires with the messages still
//!   unattended the scheme notifies as interrupts do (fast-interrupt
//!   costs), and a poll disarms it. That needs a timer event kind the
//!   engine hands back to the scheme (`timer(node)`), returning the
//!   processor to interrupt.
//! - **Threads** (`k` threads per processor, base polling): a processor
//!   switches threads (400 cycles) when its thread blocks on a reply. That
//!   needs the engine to run several threads on a processor (it binds one
//!   today) and a `thread_blocked` event whose answer is the switch cost.

mod interrupt;

pub(crate) use interrupt::Interrupts;

use finegrain_core::MachineConfig;
use std::ops::Range;

/// What a processor is doing, as far as notification goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activity {
    /// Running its thread's work (preemptible).
    Computing,
    /// Inside a notification, not serving yet: it counts as computing.
    Notified,
    /// Anything else: sending, resuming, serving, switching roles, idle.
    Other,
}

/// What a poll site does: whether it polls (takes the waiting messages if
/// the processor may serve), and the cycles it costs when it handles
/// nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PollSite {
    pub polls: bool,
    pub cycles: u64,
}

/// A notification scheme (see the module docs). Processors are numbered
/// globally, node-major, as the engine numbers them.
pub(crate) trait Notify {
    /// Whether a notification is on its way to node `n`: the engine then
    /// leaves the node's waiting messages to it.
    fn in_flight(&self, n: usize) -> bool;

    /// Messages wait at node `n`, whose processors are `procs`, and nobody
    /// can take them now; `activity` tells what each processor is doing.
    /// Returns the processor to notify now, if any.
    fn unattended(&mut self, n: usize, procs: Range<usize>, activity: impl Fn(usize) -> Activity) -> Option<usize>;

    /// The notification sent to node `n` has done its work: its processor
    /// tried to take the role, or had stopped computing when it arrived.
    fn settled(&mut self, n: usize);

    /// Cycles a notification costs the notified processor before it can
    /// serve (delivery and dispatch).
    fn entry_cycles(&self) -> u64;

    /// Cycles it costs on the way back to the stopped work.
    fn exit_cycles(&self) -> u64;

    /// A notification's whole cost to the notified processor.
    fn overhead(&self) -> u64;

    /// Whether taking and giving up the role masks and unmasks the NI's
    /// interrupt.
    fn masks_role(&self) -> bool;

    /// Processor `p` reached a poll site at `now`.
    fn poll_site(&mut self, p: usize, now: u64) -> PollSite;
}

/// The machine's notification scheme: a closed set, so the engine's calls
/// are matches, not dynamic calls.
pub(crate) enum Notifier {
    Interrupts(Interrupts),
}

impl Notifier {
    /// The scheme of the machine `m` with `nodes` nodes: interrupts, the
    /// only one the machine configuration describes today.
    pub fn new(m: &MachineConfig, nodes: usize) -> Notifier {
        Notifier::Interrupts(Interrupts::new(m, nodes))
    }
}

impl Notify for Notifier {
    #[inline(always)]
    fn in_flight(&self, n: usize) -> bool {
        match self {
            Notifier::Interrupts(s) => s.in_flight(n),
        }
    }

    #[inline(always)]
    fn unattended(&mut self, n: usize, procs: Range<usize>, activity: impl Fn(usize) -> Activity) -> Option<usize> {
        match self {
            Notifier::Interrupts(s) => s.unattended(n, procs, activity),
        }
    }

    #[inline(always)]
    fn settled(&mut self, n: usize) {
        match self {
            Notifier::Interrupts(s) => s.settled(n),
        }
    }

    #[inline(always)]
    fn entry_cycles(&self) -> u64 {
        match self {
            Notifier::Interrupts(s) => s.entry_cycles(),
        }
    }

    #[inline(always)]
    fn exit_cycles(&self) -> u64 {
        match self {
            Notifier::Interrupts(s) => s.exit_cycles(),
        }
    }

    #[inline(always)]
    fn overhead(&self) -> u64 {
        match self {
            Notifier::Interrupts(s) => s.overhead(),
        }
    }

    #[inline(always)]
    fn masks_role(&self) -> bool {
        match self {
            Notifier::Interrupts(s) => s.masks_role(),
        }
    }

    #[inline(always)]
    fn poll_site(&mut self, p: usize, now: u64) -> PollSite {
        match self {
            Notifier::Interrupts(s) => s.poll_site(p, now),
        }
    }
}
