//! The policy: what a processor does when its activity ends (compute, serve,
//! take or keep the acting protocol-processor role, go idle). How a busy
//! node notices waiting messages is in `notice.rs`.

use super::*;

impl<'a, 'h, T> Engine<'a, 'h, T> {
    pub(super) fn decide(&mut self, p: usize) {
        if self.coproc.is_some() {
            // No role, no interrupt: the co-processor's library decides.
            return self.decide_coproc(p);
        }
        let n = self.procs[p].node;
        if self.procs[p].in_interrupt {
            return self.decide_in_interrupt(p);
        }
        if let Some(saved) = self.procs[p].saved_work.take() {
            if !saved.synthetic {
                return self.start_access(p, saved.stall + saved.work, saved.stall);
            }
            return self.start_compute(p, saved.work, saved.pattern, Some((saved.sampled, saved.stall)));
        }
        if self.procs[p].holds_role {
            return self.act_as_pp(p);
        }
        self.clear_announcement(p);
        if let Some(t) = self.procs[p].thread {
            match self.threads[t].state {
                ThreadState::Ready => return self.run_thread(t),
                ThreadState::ReplyArrived => return self.start_resume(p, t),
                ThreadState::Recheck => return self.start_recheck(p, t),
                ThreadState::PollDrain => {
                    if self.thread_ready(t, OpResult::Done) {
                        self.run_thread(t);
                    }
                    return;
                }
                ThreadState::Waiting | ThreadState::Awaiting | ThreadState::Finished | ThreadState::Paused => {
                    if self.cfg.run.policy.compute_procs_handle() && self.role_open(n) {
                        return self.start_acquire(p);
                    }
                    let waits = matches!(self.threads[t].state, ThreadState::Waiting | ThreadState::Awaiting);
                    return self.go_idle(p, if waits { Cat::Wait } else { Cat::Idle });
                }
                ThreadState::Busy => unreachable!("a busy thread's processor is busy"),
            }
        }
        if self.procs[p].dedicated && self.role_open(n) {
            return self.start_acquire(p);
        }
        self.go_idle(p, Cat::Idle)
    }

    /// Whether one more processor may start serving the node.
    pub(super) fn role_open(&self, n: usize) -> bool {
        let node = &self.nodes[n];
        if self.parallel {
            node.servers < node.max_servers
        } else {
            node.role.is_none()
        }
    }

    /// The global indices of node `n`'s processors.
    pub(super) fn procs_of(&self, n: usize) -> std::ops::Range<usize> {
        let node = &self.nodes[n];
        node.first_proc..node.first_proc + node.procs
    }

    /// Parallel disciplines: whether another of the node's servers will go
    /// on serving, one with no work of its own to return to. Servers that
    /// will leave as soon as they can do not count: if every server left
    /// for its own work while messages wait whenever another was serving,
    /// servers whose threads keep waking up (short idle periods, cheap
    /// interrupts) could take turns leaving for ever and no message would
    /// be handled.
    fn another_server_stays(&self, p: usize) -> bool {
        self.procs_of(self.procs[p].node)
            .any(|q| q != p && self.procs[q].holds_role && (self.procs[q].dedicated || !self.has_own_work(q)))
    }

    /// Whether a message waits that a serving processor could take now.
    pub(super) fn work_waiting(&mut self, n: usize) -> bool {
        if self.nodes[n].outbox.front().is_some_and(|s| s.ready_at <= self.now) {
            return true;
        }
        if self.parallel {
            self.nodes[n].rx.any_ready()
        } else {
            !self.nodes[n].rx.is_empty()
        }
    }

    /// The acting PP handles the next message, gives the role up, or polls.
    pub(super) fn act_as_pp(&mut self, p: usize) {
        let n = self.procs[p].node;
        if let Some((msg, after)) = self.procs[p].send_first.take() {
            return self.start_send_as_pp(p, msg, after);
        }
        // Its own thread awaiting in `wait_until` checks its condition
        // after each handler, while keeping the role (as the native
        // runtime's thread does): before the next message, so a queue
        // that never empties cannot starve it.
        if let Some(t) = self.procs[p].thread.filter(|&t| self.threads[t].state == ThreadState::Recheck) {
            return self.start_recheck(p, t);
        }
        if let Some(s) = self.take_submitted(n) {
            return self.start_forward(p, s);
        }
        let server = self.procs[p].server;
        let own_work = self.has_own_work(p);
        if own_work && self.leaves_for_own_work(p) {
            return self.start_release(p);
        }
        let local = p - self.nodes[n].first_proc;
        if let Some((slot, seq)) = self.nodes[n].rx.take(server, local) {
            self.start_handle(p, slot, seq);
            if self.parallel {
                self.kick(n); // more may be dispatchable to other servers
            }
        } else if self.should_relinquish(p) {
            self.start_release(p)
        } else {
            self.go_idle(p, if own_work { Cat::Hold } else { Cat::PollIdle });
            if own_work {
                self.schedule_recheck(p);
            }
        }
    }

    /// Whether a serving processor whose own work can go on gives the role
    /// up before taking another message (draining a queue that never
    /// empties at saturation would starve its thread):
    /// - another processor serves, or will take over for good, so waiting
    ///   messages interrupt nobody;
    /// - with a dispatch device (Hurricane-1 Mult) it resumes its work after
    ///   the handler in hand (an interrupted one after the messages waiting
    ///   when it took the role) and tells the device, which interrupts a
    ///   processor again if messages wait while every one computes. One
    ///   handler at least per stint: servers cannot take turns leaving with
    ///   nothing handled.
    fn leaves_for_own_work(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        self.lasting_peer(p)
            || self.parallel && self.another_server_stays(p)
            || self.device_dispatch && pr.stint_handled >= pr.stint_budget
    }

    /// Whether an acting PP gives the role up now. It never does while its
    /// own thread waits; once its work can continue (its reply arrived, or
    /// it was interrupted) it drains the queue first, since leaving
    /// messages behind would interrupt a computing processor, then follows
    /// the machine's relinquish rule.
    fn should_relinquish(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        if pr.dedicated || !self.has_own_work(p) {
            return false;
        }
        let n = pr.node;
        if self.parallel && self.nodes[n].servers > 1 {
            return true; // nothing it could take waits, and others serve
        }
        if self.idle_peer(p) {
            return true; // hand-off: the node keeps a protocol processor
        }
        let peer_may_idle = self
            .procs_of(n)
            .filter(|&q| q != p)
            .any(|q| self.procs[q].thread.is_some_and(|t| self.threads[t].state != ThreadState::Finished));
        if !peer_may_idle {
            return true; // nobody could ever take over
        }
        match self.cfg.run.relinquish {
            Relinquish::Eager => true,
            Relinquish::Handoff => false,
            Relinquish::Adaptive => match self.nodes[n].arrival_gap_x16 {
                Some(gap_x16) => {
                    // The quiet since the last arrival counts once it is
                    // longer than the average gap: messages may have stopped.
                    let quiet_x16 = self.nodes[n].last_arrival.map_or(0, |l| (self.now - l) * 16);
                    self.interrupt_round_trip() * 16 < gap_x16.max(quiet_x16)
                }
                None => true,
            },
        }
    }

    /// What an interrupt costs: Oint (the notification's overhead) plus
    /// taking and giving up the role.
    fn interrupt_round_trip(&self) -> u64 {
        let m = &self.cfg.machine;
        self.notify.overhead() + m.protocol.role_acquire_cycles + m.protocol.role_release_cycles
    }

    /// An acting PP keeping the role while its own work waits (the adaptive
    /// rule) is woken again once the node has been quiet for an interrupt's
    /// cost: no arrival would wake it if messages have stopped.
    fn schedule_recheck(&mut self, p: usize) {
        if self.cfg.run.relinquish != Relinquish::Adaptive || self.procs[p].recheck_at.is_some() {
            return;
        }
        let n = self.procs[p].node;
        let quiet_from = self.nodes[n].last_arrival.unwrap_or(self.now);
        let at = (quiet_from + self.interrupt_round_trip()).max(self.now) + 1;
        self.procs[p].recheck_at = Some(at);
        self.queue.push(at, EventKind::Recheck { proc: p as u32 });
    }

    /// At most one re-check is pending per processor; it applies to
    /// whatever holding the processor is in when it fires.
    pub(super) fn on_recheck(&mut self, p: usize) {
        self.procs[p].recheck_at = None;
        let pr = &self.procs[p];
        if !pr.busy && !pr.wake_pending && pr.holds_role && pr.cat == Cat::Hold {
            self.decide(p);
        }
    }

    /// Whether another processor of `p`'s node could take the role now.
    fn idle_peer(&self, p: usize) -> bool {
        self.procs_of(self.procs[p].node).any(|q| q != p && self.can_act(q))
    }

    /// Whether another processor of `p`'s node could take the role now and
    /// keep it while messages wait: its thread waits for a reply or a
    /// handler (which only a serving processor can bring) or has finished. A paused thread's
    /// work resumes by itself; handing the role to it before draining could
    /// make the two take turns leaving for ever with messages waiting.
    fn lasting_peer(&self, p: usize) -> bool {
        self.procs_of(self.procs[p].node).any(|q| {
            q != p
                && self.can_act(q)
                && self.procs[q].thread.is_none_or(|t| self.threads[t].state != ThreadState::Paused)
        })
    }

    pub(super) fn has_own_work(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        pr.in_interrupt
            || pr.saved_work.is_some()
            || pr.thread.is_some_and(|t| {
                matches!(self.threads[t].state, ThreadState::Ready | ThreadState::ReplyArrived | ThreadState::PollDrain)
            })
    }

    /// Can this idle processor take the role right away?
    pub(super) fn can_act(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        if pr.busy || pr.holds_role || pr.in_interrupt || pr.saved_work.is_some() {
            return false;
        }
        match pr.thread {
            Some(t) => {
                self.cfg.run.policy.compute_procs_handle()
                    && matches!(
                        self.threads[t].state,
                        ThreadState::Waiting | ThreadState::Awaiting | ThreadState::Finished | ThreadState::Paused
                    )
            }
            None => pr.dedicated,
        }
    }

    /// A serving processor with nothing in hand.
    pub(super) fn idle_server(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        pr.holds_role && !pr.busy && !pr.wake_pending
    }

    /// Parallel disciplines: something became dispatchable (an arrival, a
    /// key completed, a server left): wake one server that can take it,
    /// let an idle processor start serving, or interrupt.
    pub(super) fn kick(&mut self, n: usize) {
        let partitions = self.nodes[n].rx.partitions();
        if partitions > 0 {
            // Static partitioning: each queue has its own (dedicated) server.
            for p in self.procs_of(n) {
                if self.idle_server(p) && self.nodes[n].rx.ready_for(self.procs[p].server) {
                    self.wake(p);
                }
            }
            return;
        }
        self.check_notify(n);
    }
}
