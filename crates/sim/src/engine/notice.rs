//! Noticing messages: the engine's side of the [`Notify`] seam. When
//! messages wait and nobody serves, an idle processor that may serve is
//! woken; otherwise the scheme decides whom to notify. A notification stops
//! the processor's computation (what is left resumes afterwards, delayed,
//! never lost), lets it take the role and drain the queue, and returns it
//! to its work.

use super::*;
use crate::notify::{Activity, Notify};

impl<'a, 'h, T> Engine<'a, 'h, T> {
    /// Messages may wait at node `n` with nobody to take them (a message
    /// arrived, the role was given up, a processor started computing, a
    /// notification missed its target): wake an idle processor that may
    /// serve, or let the notification scheme act.
    pub(super) fn check_notify(&mut self, n: usize) {
        // A co-processor node's main processor is never interrupted: under
        // main-am it finds messages when it polls, woken by a deposit only
        // if it polls already (`Engine::deposit`).
        if self.coproc.is_some() || !self.work_waiting(n) {
            return;
        }
        let node = &self.nodes[n];
        let (first, count) = (node.first_proc, node.procs);
        if self.parallel {
            // An idle server takes the message even while an interrupt is
            // being delivered to another processor.
            if let Some(p) = (first..first + count).find(|&p| self.idle_server(p)) {
                return self.wake(p);
            }
        } else if node.role.is_some() {
            return;
        }
        if self.notify.in_flight(n) {
            return;
        }
        if !self.role_open(n) {
            return;
        }
        if let Some(p) = (first..first + count).find(|&p| self.can_act(p)) {
            return self.wake(p);
        }
        if !self.cfg.run.policy.compute_procs_handle() {
            return;
        }
        let procs = &self.procs;
        let activity = |p: usize| {
            let pr = &procs[p];
            if pr.compute.is_some() {
                Activity::Computing
            } else if pr.in_interrupt && !pr.holds_role {
                Activity::Notified
            } else {
                Activity::Other
            }
        };
        if let Some(p) = self.notify.unattended(n, first..first + count, activity) {
            self.queue.push(self.now, EventKind::Interrupt { proc: p as u32 });
        }
    }

    /// A notification reaches processor `p`: it stops computing and pays
    /// the notification's entry.
    pub(super) fn on_interrupt(&mut self, p: usize) {
        let n = self.procs[p].node;
        let Some(seg) = self.procs[p].compute.filter(|_| self.procs[p].busy) else {
            // The target stopped computing meanwhile: try another.
            self.notify.settled(n);
            return self.check_notify(n);
        };
        // The notification stays in flight (no second one) until this
        // processor has tried to take the role.
        // Preempt: the work not yet done resumes after the interrupt.
        self.account(p);
        let elapsed = self.now - seg.start;
        let done = elapsed.saturating_sub(seg.stall).min(seg.work);
        let stall = seg.stall.saturating_sub(elapsed);
        let pr = &mut self.procs[p];
        pr.compute = None;
        pr.saved_work = Some(SavedWork {
            work: seg.work - done,
            sampled: seg.sampled,
            stall,
            synthetic: seg.synthetic,
            pattern: seg.pattern,
        });
        pr.in_interrupt = true;
        pr.interrupt_claim_tried = false;
        pr.busy = false;
        pr.gen = pr.gen.wrapping_add(1);
        pr.stats.interrupts += 1;
        let entry = self.notify.entry_cycles();
        self.start_busy(p, Cat::Interrupt, entry, 0, After::Nothing);
    }

    /// Inside an interrupt: take the role if nobody has it, handle every
    /// pending message, give the role back, return to the interrupted work.
    pub(super) fn decide_in_interrupt(&mut self, p: usize) {
        let n = self.procs[p].node;
        if self.procs[p].holds_role {
            return self.act_as_pp(p);
        }
        if !self.procs[p].interrupt_claim_tried {
            self.procs[p].interrupt_claim_tried = true;
            self.notify.settled(n);
            if self.role_open(n) {
                return self.start_acquire(p);
            }
            self.nodes[n].stats.spurious_interrupts += 1;
        }
        self.procs[p].in_interrupt = false;
        let exit = self.notify.exit_cycles();
        self.start_busy(p, Cat::Interrupt, exit, 0, After::Nothing);
    }
}
