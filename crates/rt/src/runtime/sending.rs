//! Sending: a thread hands a message to its send side, and once it has
//! been sent, alerts the destination as the notification scheme says.

use super::thread::ThreadCtx;
use crate::notify::{Alert, Scheme};
use crate::transport::{Outgoing, Sender, Sent, Transport};
use std::sync::atomic::Ordering;

impl<T: Transport> ThreadCtx<T> {
    /// Sends `m` to node `dst`; a full ring spills the message (in order)
    /// rather than blocking, so handlers can always reply.
    pub(super) fn send(&self, dst: u32, m: &Outgoing) {
        // SAFETY: only this thread uses its send side, and never
        // re-entrantly: sends happen in runtime code (the interrupt gate
        // entered) or in an interrupt that runs only when the thread is
        // outside runtime code.
        let out = unsafe { &mut *self.out.get() };
        if out.send(dst, m) == Sent::Spilled {
            self.spill_waiting.store(true, Ordering::Relaxed);
            self.stats.count_spilled();
        }
        self.stats.count_sent();
        self.after_send(dst);
    }

    /// Retries spilled messages in order; true when none is left.
    pub(super) fn flush_spill(&self) -> bool {
        if self.spilled() == 0 {
            return true;
        }
        // SAFETY: as in `send`.
        let out = unsafe { &mut *self.out.get() };
        let empty = out.flush(|d| self.after_send(d));
        if empty {
            self.spill_waiting.store(false, Ordering::Relaxed);
        }
        empty
    }

    /// Alerts node `dst` after a send, if the notification scheme asks:
    /// wakes its parked protocol threads, or interrupts one of its
    /// computing threads.
    #[inline]
    pub(super) fn after_send(&self, dst: u32) {
        let scheme = self.cluster.notify;
        if scheme == Scheme::Poll {
            return;
        }
        let transport = &self.cluster.transport;
        // A node this process cannot reach notices by itself.
        let Some(bell) = transport.doorbell(dst) else { return };
        match scheme.alert(bell) {
            Alert::Nothing => {}
            Alert::WakeParked => transport.wake_parked(dst),
            Alert::Interrupt(thread) => transport.interrupt(dst, thread),
        }
    }
}
