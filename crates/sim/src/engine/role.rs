//! The acting protocol-processor role: taking it (the role lock, masking
//! interrupts), giving it up, and who wins it when it is released.

use super::*;

impl<'a, 'h, T> Engine<'a, 'h, T> {
    pub(super) fn start_acquire(&mut self, p: usize) {
        let n = self.procs[p].node;
        debug_assert!(self.role_open(n));
        if self.parallel {
            self.nodes[n].servers += 1;
            self.wake_holders(n, p);
        } else {
            self.nodes[n].role = Some(p);
        }
        self.procs[p].holds_role = true;
        self.procs[p].announced = false; // the acquire's lock write clears it
        self.procs[p].stint_handled = 0;
        let waiting = if self.procs[p].in_interrupt { self.nodes[n].rx.len() as u32 } else { 0 };
        self.procs[p].stint_budget = waiting.max(1);
        self.procs[p].stats.role_acquires += 1;
        let cost = self.role_switch_cost(p, self.cfg.machine.protocol.role_acquire_cycles, RoleSwitch::LockFirst);
        self.start_busy(p, Cat::Role, cost, 0, After::Nothing);
        // Processors that went idle while the last releasing store was in
        // flight, and lost the role to this one, wait for it now: their
        // flags land after this acquire's lock write.
        for q in self.procs_of(n) {
            if q != p && self.can_act(q) {
                self.announce_idle(q);
            }
        }
    }

    /// Taking or giving up the role: the lock (a write that migrates the
    /// lock line to this processor) when other processors of the node could
    /// contend for it, masking or unmasking the NI's interrupt (an uncached
    /// write to the NI) unless the processor is inside an interrupt, where
    /// the hardware already masked it, and the bookkeeping instructions.
    /// Taking it, the lock comes first; giving up a locked role, the lock's
    /// store comes last (unmasking after it would race with the next
    /// holder's masking), so the role is free only once that store lands.
    fn role_switch_cost(&mut self, p: usize, instructions: u64, switch: RoleSwitch) -> u64 {
        let now = self.now;
        let mut t = now;
        match switch {
            RoleSwitch::LockFirst => {
                t = self.role_lock_write(p, t);
                t = self.role_mask_write(p, t);
                // The role is already taken or given up: to the protocol
                // thread when taken.
                t = self.context_switch(p, t, self.procs[p].holds_role);
                t + instructions - now
            }
            // The lock's store is issued when this part ends
            // ([`Engine::issue_lock_release`]).
            RoleSwitch::LockLast => {
                t = self.context_switch(p, t + instructions, false);
                self.role_mask_write(p, t) - now
            }
        }
    }

    /// With protocol processing as a thread (the preset's
    /// `protocol.protocol_thread`), a computing processor taking the role
    /// switches from its thread to the node's protocol thread
    /// (`to_protocol`), and back when it gives the role up: the outgoing
    /// thread's registers are stored whole into its save area and the
    /// incoming thread's loaded from its own, through the caches (the
    /// protocol thread's area follows the role from processor to
    /// processor), besides the switch's instructions. A dedicated protocol
    /// processor runs the protocol thread only, and a thread at a poll site
    /// runs the handlers itself (the dispatch loop is called from the
    /// poll). Returns when it is done.
    fn context_switch(&mut self, p: usize, t: u64, to_protocol: bool) -> u64 {
        let protocol = &self.cfg.machine.protocol;
        let polling = self.procs[p].thread.is_some_and(|th| self.threads[th].state == ThreadState::PollDrain);
        if !protocol.protocol_thread || self.procs[p].dedicated || polling {
            return t;
        }
        let instructions = protocol.context_switch_cycles;
        let (n, local) = (self.procs[p].node, self.procs[p].local);
        let map = self.nodes[n].mem.map();
        let protocol_area = map.protocol_context();
        let own_area = self.procs[p].thread.map(|th| map.thread_context(self.threads[th].local));
        let (out, incoming) =
            if to_protocol { (own_area, Some(protocol_area)) } else { (Some(protocol_area), own_area) };
        let mut t = t;
        let mem = &mut self.nodes[n].mem;
        if let Some((first, count)) = out {
            t += mem.access_lines(self.now, t, local, first, count, Access::Overwrite).0;
        }
        if let Some((first, count)) = incoming {
            t += mem.access_lines(self.now, t, local, first, count, Access::Read).0;
        }
        t + instructions
    }

    /// Whether node `n`'s role is a software lock. A dispatch device (the
    /// PDQ machines, whatever the discipline) keeps track of who serves,
    /// and parallel disciplines have no single role: neither takes a
    /// software lock, nor does a node of one processor.
    pub(super) fn has_role_lock(&self, n: usize) -> bool {
        self.nodes[n].procs > 1 && !self.parallel && !self.device_dispatch
    }

    /// The role's lock write by `p` from cycle `t`, if the role has a lock;
    /// returns when it is done.
    pub(super) fn role_lock_write(&mut self, p: usize, t: u64) -> u64 {
        let n = self.procs[p].node;
        if !self.has_role_lock(n) {
            return t;
        }
        let lock = self.nodes[n].mem.map().lock_line();
        t + self.nodes[n].mem.access(self.now, t, self.procs[p].local, lock, Access::Write).0
    }

    /// Masking or unmasking the NI's interrupt from cycle `t`, unless inside
    /// an interrupt or the notification scheme has no interrupt to mask;
    /// returns when it is done.
    fn role_mask_write(&mut self, p: usize, t: u64) -> u64 {
        if self.procs[p].in_interrupt || !self.notify.masks_role() {
            return t;
        }
        let n = self.procs[p].node;
        self.ni.register_write(&mut self.nodes[n].mem, self.now, t)
    }

    pub(super) fn start_release(&mut self, p: usize) {
        let n = self.procs[p].node;
        if self.procs[p].in_interrupt && self.procs[p].stint_handled == 0 {
            // Taken by interrupt, left with nothing handled: another
            // processor took the messages meanwhile.
            self.nodes[n].stats.spurious_interrupts += 1;
        }
        self.procs[p].holds_role = false;
        let instructions = self.cfg.machine.protocol.role_release_cycles;
        if self.has_role_lock(n) {
            // The role stays taken until the lock's releasing store, issued
            // once the instructions and the unmasking are done, has landed:
            // a peer spinning on the lock cannot see it free any sooner.
            let cost = self.role_switch_cost(p, instructions, RoleSwitch::LockLast);
            return self.start_busy(p, Cat::Role, cost, 0, After::ReleaseLock);
        }
        // Without a lock, the unmasking store (which tells a dispatch
        // device) comes first, and the role is free as the release starts.
        let cost = self.role_switch_cost(p, instructions, RoleSwitch::LockFirst);
        if self.parallel {
            self.nodes[n].servers -= 1;
        } else {
            self.nodes[n].role = None;
        }
        self.start_busy(p, Cat::Role, cost, 0, After::Nothing);
        self.offer_role(n);
    }

    /// The releasing store of the role's lock: it drains from the write
    /// buffer while the releasing processor goes back to its own work (its
    /// next `decide`), and the role is free once it has landed, fetching
    /// the line back from a peer that announced itself idle.
    pub(super) fn issue_lock_release(&mut self, p: usize) {
        let n = self.procs[p].node;
        let done = self.role_lock_write(p, self.now);
        self.nodes[n].lock_release_in_flight = true;
        self.queue.push(done, EventKind::RoleFree { node: n as u32 });
    }

    /// The releasing store has landed: the waiters race for the lock, and
    /// the preset's arbitration decides who wins.
    pub(super) fn on_role_free(&mut self, n: usize) {
        let node = &mut self.nodes[n];
        node.lock_release_in_flight = false;
        let releaser = node.role.take().unwrap_or(node.first_proc);
        let first = match self.cfg.machine.protocol.role_arbitration {
            RoleArbitration::Lowest => self.nodes[n].first_proc,
            RoleArbitration::RoundRobin => releaser,
        };
        self.offer_role_from(n, first);
    }

    /// The role just became free: a waiting processor takes it over, or an
    /// interrupt is raised if messages wait.
    fn offer_role(&mut self, n: usize) {
        self.offer_role_from(n, self.nodes[n].first_proc);
    }

    /// [`Engine::offer_role`], trying processors in round-robin order from
    /// `first`.
    fn offer_role_from(&mut self, n: usize, first: usize) {
        if self.parallel {
            return self.kick(n);
        }
        let (base, count) = (self.nodes[n].first_proc, self.nodes[n].procs);
        if let Some(p) = (0..count).map(|i| base + (first - base + i) % count).find(|&p| self.can_act(p)) {
            self.wake(p);
        } else {
            self.check_notify(n);
        }
    }
}
