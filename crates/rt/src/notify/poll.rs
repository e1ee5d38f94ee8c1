//! Polling: a thread that waits for a reply, or serves its node with
//! nothing to handle, looks at the node's rings again and again. Between
//! looks it relaxes here.
//!
//! Where a thread polls is the runtime's business (Single's thread when
//! it sends, during `work`, at poll sites and while it waits; protocol
//! threads all the time). This module only decides how a poll loop gives
//! the core away.

/// Spins politely: one pause per look, and when threads outnumber cores,
/// the core is given away every 64 looks so that a descheduled peer (the
/// sender, or the holder of the role) can run.
#[inline]
pub(crate) fn relax(spins: &mut u32, oversubscribed: bool) {
    *spins = spins.wrapping_add(1);
    if oversubscribed && (*spins).is_multiple_of(64) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}
