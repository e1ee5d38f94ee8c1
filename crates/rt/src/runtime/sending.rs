//! Sending: encoding into a thread's rings, spilling when a ring is full,
//! and what a sender does after a send (an interrupt when every thread
//! computes).

use super::*;

impl ThreadCtx {
    /// Encodes and sends; a full ring spills the message (in order) rather
    /// than blocking, so handlers can always reply.
    pub(super) fn send(&self, dst: u32, m: &Outgoing) {
        // SAFETY: only this thread uses its outbox, and never re-entrantly:
        // sends happen in runtime code (in_runtime set) or in an interrupt
        // that runs only when the thread is outside runtime code.
        let out = unsafe { &mut *self.out.get() };
        let d = dst as usize;
        if !out.spill[d].is_empty() || codec::push_message(&mut out.producers[d], m).is_err() {
            let meta = codec::encode(m, &mut out.words);
            out.spill[d].push_back((meta, out.words.clone()));
            self.spilled.set(self.spilled.get() + 1);
            self.spill_waiting.store(true, Ordering::Relaxed);
            self.stats.count_spilled();
        }
        self.stats.count_sent();
        self.after_send(dst);
    }

    /// Retries spilled messages in order; true when none is left.
    pub(super) fn flush_spill(&self) -> bool {
        if self.spilled.get() == 0 {
            return true;
        }
        // SAFETY: as in `send`.
        let out = unsafe { &mut *self.out.get() };
        for d in 0..out.spill.len() {
            while let Some((meta, words)) = out.spill[d].front() {
                if out.producers[d].try_push(*meta, words).is_err() {
                    break;
                }
                out.spill[d].pop_front();
                self.spilled.set(self.spilled.get() - 1);
                self.after_send(d as u32);
            }
        }
        let empty = self.spilled.get() == 0;
        if empty {
            self.spill_waiting.store(false, Ordering::Relaxed);
        }
        empty
    }

    /// Notifies the destination: wakes a parked Fixed protocol thread, or
    /// interrupts a Floating node whose threads all compute.
    pub(super) fn after_send(&self, dst: u32) {
        let node = self.cluster.node(dst);
        match self.cluster.cfg.policy {
            Policy::Fixed { .. } if self.cluster.cfg.park_after_polls.is_some() => {
                // Pairs with the parking thread's count-then-check: either
                // we see it counted, or it sees our message.
                fence(Ordering::SeqCst);
                if node.parked.load(Ordering::Relaxed) > 0 {
                    if let Ok(threads) = node.pp_threads.lock() {
                        threads.iter().for_each(std::thread::Thread::unpark);
                    }
                }
            }
            Policy::Floating if self.cluster.cfg.interrupts => {
                // Pairs with the fence in `work` and in role release: either
                // we see the node all-computing and role-free, or the other
                // side sees our message.
                fence(Ordering::SeqCst);
                if !node.role.load(Ordering::Relaxed)
                    && node.computing.load(Ordering::Relaxed) == node.compute_threads
                    && !node.irq_raised.swap(true, Ordering::Relaxed)
                {
                    let i = node.irq_next.fetch_add(1, Ordering::Relaxed) % node.compute_threads;
                    interrupt::raise(node.pthreads[i as usize].load(Ordering::Relaxed));
                }
            }
            _ => {}
        }
    }
}
