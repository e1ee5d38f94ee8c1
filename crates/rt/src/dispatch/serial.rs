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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::transport::codec::{push_message, scratch_message, Outgoing};
    use crate::transport::inproc::RingInbox;
    use crate::transport::ring::ring;
    use finegrain_core::{HandlerId, MsgKind, NodeId, SyncKey, ThreadId};

    fn send(p: &mut crate::transport::ring::Producer, token: u64) {
        let m = Outgoing {
            kind: MsgKind::Request,
            handler: HandlerId(0),
            src_node: NodeId(0),
            src_thread: ThreadId(0),
            token,
            key: SyncKey::Sequential,
            args: &[],
            payload: &[],
        };
        push_message(p, &m).unwrap();
    }

    /// Three lanes holding 3, 1 and 2 messages (token = 10 x lane + i).
    fn inbox() -> RingInbox {
        let (mut producers, consumers): (Vec<_>, Vec<_>) = (0..3).map(|_| ring(8)).unzip();
        for (lane, n) in [(0, 3), (1, 1), (2, 2)] {
            for i in 0..n {
                send(&mut producers[lane], 10 * lane as u64 + i);
            }
        }
        RingInbox::new(NodeId(0), consumers)
    }

    #[test]
    fn a_drain_passes_over_the_lanes_round_robin_each_pass_one_further() {
        let inbox = inbox();
        let cursor = Cursor::new();
        let mut scratch = scratch_message();
        let mut order = Vec::new();
        // SAFETY: this test is the only user of the inbox and the cursor.
        let n = unsafe { drain(&inbox, &cursor, &mut scratch, || false, |m| order.push(m.token)) };
        assert_eq!(n, 6);
        // Pass 1 from lane 0, pass 2 from lane 1, pass 3 from lane 2, pass 4
        // (from lane 0) finds nothing.
        assert_eq!(order, [0, 10, 20, 21, 1, 2]);
        assert_eq!(cursor.0.get(), 1, "the next drain starts one lane further");
    }

    #[test]
    fn a_drain_stops_after_the_pass_in_which_it_is_told_to() {
        let inbox = inbox();
        let cursor = Cursor::new();
        let mut scratch = scratch_message();
        let mut order = Vec::new();
        // SAFETY: as above.
        let n = unsafe { drain(&inbox, &cursor, &mut scratch, || true, |m| order.push(m.token)) };
        assert_eq!((n, &order[..]), (3, &[0, 10, 20][..]));
        assert_eq!(cursor.0.get(), 1);
        // SAFETY: as above.
        let n = unsafe { drain(&inbox, &cursor, &mut scratch, || true, |m| order.push(m.token)) };
        assert_eq!(n, 2, "from lane 1, which is empty now: lanes 2 and 0");
        assert_eq!(order[3..], [21, 1]);
    }

    #[test]
    fn the_role_is_taken_once_until_released() {
        let role = AtomicBool::new(false);
        assert!(try_take(&role));
        assert!(!try_take(&role));
        release(&role, true);
        assert!(try_take(&role));
    }
}
