//! Interrupts for the Floating policy: a real-time signal sent to one
//! computing thread of a node when a message arrives there while every
//! thread of the node computes and none acts as its protocol processor.
//!
//! The pieces:
//! - the sending side's rule ([`target`]): whom to interrupt, if anyone,
//!   read from the destination's [`Doorbell`];
//! - the receiving side's count of computing threads ([`begin_computing`],
//!   [`end_computing`]) that the rule reads;
//! - each thread's [`IrqGate`]: whether an interrupt may be served where
//!   the thread is now, or must wait for its next exit from runtime code;
//! - the signal handler, installed while a run that uses it is alive
//!   ([`install`]), which finds the interrupted thread's context through a
//!   [`Registration`].
//!
//! # Why this is safe
//!
//! The signal handler runs on the interrupted thread, so it can reach that
//! thread's runtime state through a thread-local pointer registered for the
//! thread's lifetime (cleared before the state is freed). It then does real
//! work (it runs the dispatch loop and protocol handlers), which is sound
//! only because of *where* it lets that work happen:
//!
//! - The handler does anything only if the thread is inside the runtime's
//!   `work` loop (`interruptible` set, `in_runtime` clear). That loop only
//!   loads and stores atomics of the thread's private segment and draws from
//!   its own random generator; it holds no lock (not even malloc's), owns no
//!   reference to the outbox, the scratch message or the node's rings, and
//!   is not in the middle of any libc call. So the handler cannot deadlock
//!   on a lock the interrupted code holds, cannot observe a half-updated
//!   runtime structure, and may call functions that are not
//!   async-signal-safe in general (allocation included), because the code
//!   they would race with is not running.
//! - Anywhere else (user code between operations, runtime code, a thread
//!   that already stopped computing), the handler only sets the thread's
//!   pending flag (an atomic store) and returns; the thread serves the
//!   interrupt at its next runtime exit.
//! - The node's rings are consumed only by the holder of the node's role,
//!   which the handler takes with the same try-lock as everyone else.
//! - The signal is installed with `SA_RESTART`, so system calls the thread
//!   makes elsewhere are restarted, not failed.
//!
//! A panic inside a handler is caught before it can unwind out of the
//! signal frame (`catch_unwind` in the dispatch loop).

use super::Doorbell;
use crate::os;
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

pub use crate::os::current_thread;

/// What the signal handler calls on the interrupted thread: its runtime
/// context serving the interrupt (or deferring it, see [`IrqGate`]).
pub(crate) trait Interruptible {
    fn interrupt(&self);
}

/// A registered context, its type erased: the context's address and the
/// function that calls [`Interruptible::interrupt`] on it. (Erased so that
/// this module does not depend on the runtime that implements it.)
type Registered = (*const (), unsafe fn(*const ()));

thread_local! {
    static CURRENT: Cell<Option<Registered>> = const { Cell::new(None) };
}

/// Calls `interrupt` on the context at `p`.
///
/// # Safety
/// `p` must point to a live `C`.
unsafe fn call_interrupt<C: Interruptible>(p: *const ()) {
    // SAFETY: forwarded from the caller.
    unsafe { (*p.cast::<C>()).interrupt() }
}

/// The interrupt signal the runtime uses unless told otherwise:
/// `SIGRTMIN + 4` (`RtConfig::interrupt_signal`), clear of the first
/// real-time signals, which threading libraries and profilers tend to use.
pub const DEFAULT_INTERRUPT_SIGNAL: u32 = 4;

/// The offset from `SIGRTMIN` of the signal installed now.
static OFFSET: AtomicI32 = AtomicI32::new(DEFAULT_INTERRUPT_SIGNAL as i32);

/// Real-time signals above `SIGRTMIN` this system has (the offsets
/// `RtConfig::interrupt_signal` may take are 0 up to this).
pub fn max_interrupt_signal() -> u32 {
    (libc::SIGRTMAX() - libc::SIGRTMIN()) as u32
}

/// The interrupt signal's number now.
pub(crate) fn signal_number() -> libc::c_int {
    libc::SIGRTMIN() + OFFSET.load(Ordering::Relaxed)
}

extern "C" fn on_signal(_sig: libc::c_int) {
    let saved = os::errno();
    if let Some((p, call)) = CURRENT.with(|c| c.get()) {
        // SAFETY: the pointer and its function were registered together by
        // this thread (`Registration::new`) and are cleared by
        // `Registration::drop`, which the borrow it holds keeps before the
        // context is freed; the handler runs on the same thread, so the
        // context is alive. See the module documentation for why the work
        // is sound.
        unsafe { call(p) };
    }
    if let Some(errno) = saved {
        // Restores errno for the interrupted code.
        os::set_errno(errno);
    }
}

/// Runs using interrupts now, and the signal's disposition before the
/// first of them installed the handler.
static INSTALLS: Mutex<(usize, Option<libc::sigaction>)> = Mutex::new((0, None));

/// The interrupt signal's handler, installed while a run that uses it is
/// alive: the first such run installs it, the last one to end puts back
/// whatever the process had before (an application may use the signal).
#[must_use = "the handler is uninstalled when the guard is dropped"]
pub struct Installed(());

/// Installs the signal handler on `SIGRTMIN + offset` for the life of
/// the returned guard. Runs alive at once share one signal.
pub fn install(offset: u32) -> Result<Installed, String> {
    if offset > max_interrupt_signal() {
        return Err(format!(
            "invalid interrupt_signal = {offset}: allowed 0..={} (the signal is SIGRTMIN + this)",
            max_interrupt_signal()
        ));
    }
    let mut state = INSTALLS.lock().unwrap_or_else(|p| p.into_inner());
    if state.0 == 0 {
        OFFSET.store(offset as i32, Ordering::Relaxed);
        state.1 = Some(os::install_handler(signal_number(), on_signal)?);
    } else if OFFSET.load(Ordering::Relaxed) != offset as i32 {
        return Err(format!(
            "interrupt signal SIGRTMIN+{offset} asked for while another run of this process interrupts with \
             SIGRTMIN+{}: allowed the same signal for runs alive at once",
            OFFSET.load(Ordering::Relaxed)
        ));
    }
    state.0 += 1;
    Ok(Installed(()))
}

impl Drop for Installed {
    fn drop(&mut self) {
        let mut state = INSTALLS.lock().unwrap_or_else(|p| p.into_inner());
        state.0 -= 1;
        if state.0 == 0 {
            if let Some(old) = state.1.take() {
                // The run's threads are joined, so no interrupt of it is
                // pending.
                os::restore_handler(signal_number(), &old);
            }
        }
    }
}

/// Sends the interrupt signal to a thread (0: not registered yet, ignored).
pub(crate) fn raise(thread: u64) {
    if thread != 0 {
        // SAFETY: `thread` is the pthread id of a thread of this process
        // that is still running (threads are joined only after the run).
        unsafe { os::signal_thread(thread, signal_number()) };
    }
}

/// The sending side, after a message to the node behind `bell` is in its
/// ring: the compute thread to interrupt, if every thread there computes,
/// none acts as protocol processor and no interrupt is already on its way.
#[inline]
pub(crate) fn target(bell: &Doorbell) -> Option<u32> {
    // Pairs with the fence in `begin_computing` and in the role's release:
    // either we see the node all-computing and role-free, or the other
    // side sees our message.
    fence(Ordering::SeqCst);
    if !bell.role.load(Ordering::Relaxed)
        && bell.computing.load(Ordering::Relaxed) == bell.compute_threads
        && !bell.irq_raised.swap(true, Ordering::Relaxed)
    {
        Some(bell.irq_next.fetch_add(1, Ordering::Relaxed) % bell.compute_threads)
    } else {
        None
    }
}

/// The receiving side: the calling thread starts computing. A message
/// that arrived before it counted itself is its own to handle: the caller
/// looks for work after this (the fence pairs with the senders').
#[inline]
pub(crate) fn begin_computing(bell: &Doorbell) {
    bell.computing.fetch_add(1, Ordering::SeqCst);
    fence(Ordering::SeqCst);
}

/// The calling thread stops computing.
#[inline]
pub(crate) fn end_computing(bell: &Doorbell) {
    bell.computing.fetch_sub(1, Ordering::SeqCst);
}

/// A thread's interrupt state: whether it is in runtime code (which an
/// interrupt must not re-enter), whether it is inside `work` (the only
/// place an interrupt is served on arrival), and whether one came and
/// waits. Atomics, because the signal handler reads and writes them on
/// the thread it interrupted.
pub(crate) struct IrqGate {
    in_runtime: AtomicBool,
    interruptible: AtomicBool,
    pending: AtomicBool,
}

impl IrqGate {
    pub(crate) fn new() -> IrqGate {
        IrqGate {
            in_runtime: AtomicBool::new(false),
            interruptible: AtomicBool::new(false),
            pending: AtomicBool::new(false),
        }
    }

    /// Enters runtime code.
    #[inline]
    pub(crate) fn enter(&self) {
        self.in_runtime.store(true, Ordering::Relaxed);
        // The interrupt handler runs on this thread: keep the runtime code's
        // plain accesses (outbox, scratch) after the flag is up.
        compiler_fence(Ordering::SeqCst);
    }

    /// Leaves runtime code. True if an interrupt came meanwhile: the caller
    /// serves it now, between [`IrqGate::enter`] and [`IrqGate::leave`].
    #[inline]
    pub(crate) fn exit(&self) -> bool {
        compiler_fence(Ordering::SeqCst);
        self.in_runtime.store(false, Ordering::Relaxed);
        if self.pending.load(Ordering::Relaxed) {
            self.pending.store(false, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Leaves runtime code after serving a deferred interrupt (one that
    /// comes meanwhile waits for the next exit).
    #[inline]
    pub(crate) fn leave(&self) {
        self.in_runtime.store(false, Ordering::Relaxed);
    }

    /// On a signal's arrival: true if the interrupt may be served now (the
    /// thread is inside `work` and not in runtime code; the gate is then
    /// entered, to be left with [`IrqGate::leave`]), otherwise marks it
    /// pending.
    #[inline]
    pub(crate) fn arrive(&self) -> bool {
        if !self.interruptible.load(Ordering::Acquire) || self.in_runtime.load(Ordering::Relaxed) {
            self.pending.store(true, Ordering::Relaxed);
            return false;
        }
        self.in_runtime.store(true, Ordering::Relaxed);
        true
    }

    /// Marks the thread inside (or outside) `work`'s loop.
    #[inline]
    pub(crate) fn set_interruptible(&self, on: bool, order: Ordering) {
        self.interruptible.store(on, order);
    }

    /// An interrupt came and waits for the next exit.
    #[inline]
    pub(crate) fn pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }
}

/// Makes the calling thread's context reachable from the signal handler
/// until dropped (it borrows the context, so it cannot outlive it, and
/// stays on the thread that made it).
pub(crate) struct Registration<'a>(PhantomData<(&'a (), *const ())>);

impl<'a> Registration<'a> {
    pub(crate) fn new<C: Interruptible>(ctx: &'a C) -> Registration<'a> {
        let erased: Registered = ((ctx as *const C).cast::<()>(), call_interrupt::<C>);
        CURRENT.with(|c| c.set(Some(erased)));
        Registration(PhantomData)
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(None));
    }
}

/// What one signal costs the thread it interrupts when the handler has
/// nothing to do (kernel entry, delivery, handler frame, return), in
/// nanoseconds. Thread A runs rounds of two equal chunks of fixed work
/// (about 5 ms each): a quiet one, then one during which thread B signals
/// it every 20 us. A round's cost is the busy chunk's extra time divided by
/// the signals sent in it; the median over the rounds is returned, so one
/// chunk disturbed by the machine does not decide it. `signals` (at least
/// 20) sets how many are sent in all. On a loaded machine thread B may be
/// off its core for a whole busy chunk, so rounds go on (up to eight times
/// as many) until at least one signal was sent.
pub fn bare_signal_cost(signals: u64) -> Result<f64, String> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    // Held to the end: with no handler the signal's default action would
    // end the process.
    let _installed = install(DEFAULT_INTERRUPT_SIGNAL)?;
    let work = |iters: u64| {
        let t0 = crate::clock::Stamp::now();
        let mut x = 0u64;
        for i in 0..iters {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        std::hint::black_box(x);
        t0.elapsed_ns()
    };
    const SIGNAL_GAP_NS: f64 = 20_000.0;
    const CHUNK_NS: f64 = 5_000_000.0;
    let per_round = (CHUNK_NS / SIGNAL_GAP_NS) as u64;
    let rounds = signals.max(20).div_ceil(per_round).max(5);
    let most_rounds = 8 * rounds;
    // The victim's pthread id (0 until known), and the phase: 2r + 1 while
    // round r's busy chunk runs, even otherwise, u64::MAX when finished.
    let target = Arc::new(AtomicU64::new(0));
    let phase = Arc::new(AtomicU64::new(0));
    // Set once the signalling thread is on its core; signals sent so far.
    let ready = Arc::new(AtomicBool::new(false));
    let sent_so_far = Arc::new(AtomicU64::new(0));
    let (t2, p2, ready2, sent2) = (target.clone(), phase.clone(), ready.clone(), sent_so_far.clone());
    let victim = std::thread::spawn(move || {
        // Ends the signaller's loop however this thread ends.
        struct Finished(Arc<AtomicU64>);
        impl Drop for Finished {
            fn drop(&mut self) {
                self.0.store(u64::MAX, Ordering::Release);
            }
        }
        let _finished = Finished(p2.clone());
        os::pin_to(0);
        t2.store(current_thread(), Ordering::Release);
        // A busy chunk run before the signalling thread is on its core
        // would get no signal (bounded: a signaller that never comes only
        // makes the rounds go on without signals).
        let since = std::time::Instant::now();
        while !ready2.load(Ordering::Acquire) && since.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::yield_now();
        }
        // Size a chunk from one timed run (no context registered: the
        // handler returns at once).
        let probe = 2_000_000;
        let iters = ((probe as f64) * CHUNK_NS / work(probe).max(1) as f64) as u64;
        let mut pairs = Vec::new();
        for r in 0..most_rounds {
            if r >= rounds && sent2.load(Ordering::Acquire) > 0 {
                break;
            }
            let quiet = work(iters);
            p2.store(2 * r + 1, Ordering::Release);
            let busy = work(iters);
            p2.store(2 * r + 2, Ordering::Release);
            pairs.push((quiet, busy));
        }
        pairs
    });
    let signaler = std::thread::spawn(move || {
        let victim = loop {
            let t = target.load(Ordering::Acquire);
            if t != 0 {
                break t;
            }
            if phase.load(Ordering::Acquire) == u64::MAX {
                return Vec::new(); // the victim ended before it started
            }
            std::thread::yield_now();
        };
        os::pin_to(1 % os::online_cores());
        ready.store(true, Ordering::Release);
        let mut sent = vec![0u64; most_rounds as usize];
        loop {
            let now = phase.load(Ordering::Acquire);
            if now == u64::MAX {
                break;
            }
            if now % 2 == 1 {
                raise(victim);
                sent[(now / 2) as usize] += 1;
                sent_so_far.fetch_add(1, Ordering::Release);
                let t = crate::clock::Stamp::now().plus_ns(SIGNAL_GAP_NS);
                while !t.reached() {
                    std::hint::spin_loop();
                }
            } else {
                std::hint::spin_loop();
            }
        }
        sent
    });
    let sent = signaler.join().map_err(|_| "signaling thread panicked".to_string())?;
    let pairs = victim.join().map_err(|_| "victim thread panicked".to_string())?;
    let mut costs: Vec<f64> = pairs
        .iter()
        .zip(&sent)
        .filter(|(_, &n)| n > 0)
        .map(|(&(quiet, busy), &n)| (busy as f64 - quiet as f64) / n as f64)
        .collect();
    if costs.is_empty() {
        return Err("no signal reached the measuring thread".into());
    }
    costs.sort_by(f64::total_cmp);
    Ok(costs[costs.len() / 2].max(0.0))
}
