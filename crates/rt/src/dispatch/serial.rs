//! Serial dispatch: the acting protocol processor.
//!
//! One thread at a time holds the node's role, and with it the receive
//! right over the node's inbox. It drains the lanes round-robin and runs
//! each message's handler as soon as it is decoded. The role's word lives
//! in the node's doorbell (senders read it: see [`crate::notify::signal`]);
//! this module takes and gives it back.

use crate::transport::Inbox;
use crossbeam_utils::CachePadded;
use finegrain_core::Message;
use std::cell::Cell;
use std::sync::atomic::{fence, AtomicBool, Ordering};

/// Takes the role `role` if it is free (test, then test-and-set).
#[inline]
pub(crate) fn try_take(role: &AtomicBool) -> bool {
    !role.load(Ordering::Relaxed) && role.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
}

/// Gives the role back. `fence_after`: a full fence follows the release,
/// for a sender deciding whether to interrupt the node (it pairs with the
/// sender's fence: either the sender sees the role free, or this thread's
/// next look at the inbox sees its message).
#[inline]
pub(crate) fn release(role: &AtomicBool, fence_after: bool) {
    role.store(false, Ordering::Release);
    if fence_after {
        fence(Ordering::SeqCst);
    }
}

/// Where the next drain starts: the lane after the one the last pass
/// started from, so no sender is starved.
pub(crate) struct Cursor(CachePadded<Cell<usize>>);

// SAFETY: the cell is read and written only by the holder of the node's
// role (in `drain`), one thread at a time; the role's acquire/release
// orders each holder's accesses after the previous holder's.
unsafe impl Sync for Cursor {}

impl Cursor {
    pub(crate) fn new() -> Cursor {
        Cursor(CachePadded::new(Cell::new(0)))
    }
}

/// Handles everything waiting in `inbox`: passes over the lanes
/// round-robin, each pass starting one lane further, taking at most one
/// message per lane per pass into `scratch` and giving it to `handle`,
/// until a pass finds nothing or `stop` says so. Returns how many were
/// handled.
///
/// # Safety
/// The caller holds the node's role (the receive right over `inbox` and
/// the right to use `cursor`), and `handle` does not drain this node.
pub(crate) unsafe fn drain<I: Inbox>(
    inbox: &I,
    cursor: &Cursor,
    scratch: &mut Message,
    stop: impl Fn() -> bool,
    mut handle: impl FnMut(&Message),
) -> u64 {
    let n = inbox.lanes();
    let mut handled = 0;
    let mut start = cursor.0.get();
    loop {
        // SAFETY: the caller holds the receive right.
        unsafe { inbox.progress() };
        let mut progress = false;
        let mut i = start;
        for _ in 0..n {
            // SAFETY: the caller holds the receive right.
            if unsafe { inbox.try_recv(i, scratch) } {
                handle(scratch);
                handled += 1;
                progress = true;
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        start = if start + 1 == n { 0 } else { start + 1 };
        if !progress || stop() {
            break;
        }
    }
    cursor.0.set(start);
    handled
}
