//! Parking: Fixed's protocol threads may sleep after a budget of empty
//! polls (`RtConfig::park_after_polls`), and senders wake them.
//!
//! The protocol is Dekker-style on the doorbell's `parked` count:
//! - a thread about to sleep counts itself, then (after a full fence)
//!   looks for work once more, and sleeps only if there is none;
//! - a sender, after its message is in the ring, fences and reads the
//!   count, and wakes the node's parked threads if it is not zero.
//!
//! So either the sender sees the sleeper counted, or the sleeper sees the
//! message. A sleep also ends after [`TIMEOUT`], so a wake-up lost to
//! anything else costs a millisecond, not the run. How a thread sleeps and
//! how it is woken is the transport's business (an in-process unpark, a
//! shared futex between processes).

use super::Doorbell;
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

/// The longest a parked thread sleeps without being woken.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(1);

/// The receiving side: sleeps (through `sleep`, for at most [`TIMEOUT`])
/// unless `work_waiting` finds something once this thread is counted.
/// Returns None if it did not sleep, otherwise whether the sleep ended
/// before the timeout (woken).
pub(crate) fn park_idle(
    bell: &Doorbell,
    work_waiting: impl FnOnce() -> bool,
    sleep: impl FnOnce(Duration),
) -> Option<bool> {
    bell.parked.fetch_add(1, Ordering::SeqCst);
    // Pairs with the sender's fence in `wanted`: either it sees us counted,
    // or we see its message.
    fence(Ordering::SeqCst);
    let mut slept = None;
    if !work_waiting() {
        let asleep = Instant::now();
        sleep(TIMEOUT);
        slept = Some(asleep.elapsed() < TIMEOUT);
    }
    bell.parked.fetch_sub(1, Ordering::Relaxed);
    slept
}

/// The sending side: whether the node behind `bell` has threads that may
/// be asleep (called after the message is in the ring).
#[inline]
pub(crate) fn wanted(bell: &Doorbell) -> bool {
    // Pairs with the parking thread's count-then-check.
    fence(Ordering::SeqCst);
    bell.parked.load(Ordering::Relaxed) > 0
}
