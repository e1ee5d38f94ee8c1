//! Interrupts for the Floating policy: a real-time signal sent to one
//! computing thread of a node when a message arrives there while every
//! thread of the node computes.
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
//!   `irq_pending` flag (an atomic store) and returns; the thread serves the
//!   interrupt at its next runtime exit.
//! - The node's rings are consumed only by the holder of the node's role,
//!   which the handler takes with the same try-lock as everyone else.
//! - The signal is installed with `SA_RESTART`, so system calls the thread
//!   makes elsewhere are restarted, not failed.
//!
//! A panic inside a handler is caught before it can unwind out of the
//! signal frame (`catch_unwind` in the dispatch loop).

use crate::runtime::ThreadCtx;
use std::cell::Cell;
use std::sync::Mutex;

thread_local! {
    static CURRENT: Cell<Option<*const ThreadCtx>> = const { Cell::new(None) };
}

fn signal_number() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

extern "C" fn on_signal(_sig: libc::c_int) {
    let saved = std::io::Error::last_os_error().raw_os_error();
    if let Some(p) = CURRENT.with(|c| c.get()) {
        // SAFETY: the pointer was registered by this thread and is cleared
        // (by `Registration::drop`) before the context it points to is
        // freed; the handler runs on the same thread, so the context is
        // alive. See the module documentation for why the work is sound.
        unsafe { (*p).interrupt() };
    }
    if let Some(errno) = saved {
        // SAFETY: restores errno for the interrupted code.
        unsafe { *libc::__errno_location() = errno };
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

/// Installs the signal handler for the life of the returned guard.
pub fn install() -> Result<Installed, String> {
    let mut state = INSTALLS.lock().unwrap_or_else(|p| p.into_inner());
    if state.0 == 0 {
        // SAFETY: a zeroed sigaction is a valid starting value; we set a
        // plain handler with an empty mask and SA_RESTART, and keep the
        // previous action to restore.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal_number(), &sa, &mut old) != 0 {
                return Err(format!("sigaction failed: {}", std::io::Error::last_os_error()));
            }
            state.1 = Some(old);
        }
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
                // SAFETY: restores the action sigaction returned; the run's
                // threads are joined, so no interrupt of it is pending.
                unsafe {
                    libc::sigaction(signal_number(), &old, std::ptr::null_mut());
                }
            }
        }
    }
}

/// The calling thread's pthread id, as a number.
pub fn current_thread() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// Sends the interrupt signal to a thread (0: not registered yet, ignored).
pub fn raise(thread: u64) {
    if thread != 0 {
        // SAFETY: `thread` is the pthread id of a thread of this process
        // that is still running (threads are joined only after the run).
        unsafe { libc::pthread_kill(thread as libc::pthread_t, signal_number()) };
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
    let _installed = install()?;
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
        crate::runtime::pin_to(0);
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
        crate::runtime::pin_to(1 % crate::runtime::online_cores());
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

/// Makes the calling thread's context reachable from the signal handler
/// until dropped.
pub(crate) struct Registration;

impl Registration {
    pub(crate) fn new(ctx: &ThreadCtx) -> Registration {
        CURRENT.with(|c| c.set(Some(ctx as *const ThreadCtx)));
        Registration
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(None));
    }
}
