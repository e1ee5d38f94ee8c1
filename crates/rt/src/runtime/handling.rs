//! Handling: draining a node's rings as its acting protocol processor, or
//! serving its keyed queue under a parallel discipline, and the role lock.

use super::*;

impl ThreadCtx {
    /// Handles everything waiting at this thread's node. The caller holds
    /// the node's role.
    pub(super) fn drain(&self) -> u64 {
        if self.spilled.get() > 0 {
            self.flush_spill();
        }
        let node = self.node();
        let n = node.inbox.len();
        let mut handled = 0;
        // Rings are visited round-robin, starting one further each pass, so
        // no sender is starved; a pass that finds nothing ends the drain.
        let mut start = node.next_ring.get();
        loop {
            let mut progress = false;
            let mut i = start;
            for _ in 0..n {
                // SAFETY: the caller holds the role, so no other thread uses
                // this consumer or the scratch message (the scratch is this
                // thread's and handlers cannot re-enter `drain`).
                let (consumer, scratch) = unsafe { (&mut *node.inbox[i].get(), &mut *self.scratch.get()) };
                if consumer.ready() && consumer.try_pop(|r| codec::decode(r, NodeId(node.id), scratch)).is_some() {
                    self.handle(scratch);
                    handled += 1;
                    progress = true;
                }
                i += 1;
                if i == n {
                    i = 0;
                }
            }
            start = if start + 1 == n { 0 } else { start + 1 };
            if !progress || self.cluster.failed() {
                break;
            }
        }
        node.next_ring.set(start);
        handled
    }

    /// Parallel disciplines: handles entries while some may run, alongside
    /// the node's other serving threads. Returns the number handled.
    pub(super) fn serve_keyed(&self, keyed: &KeyedQueue) -> u64 {
        if self.spilled.get() > 0 {
            self.flush_spill();
        }
        let node = self.node();
        let mut handled = 0;
        // Two passes when worth it (what arrived during the first is taken
        // in the second), and more while turned-away threads left work.
        let mut wanted = false;
        for pass in 0.. {
            let worth = || pass < 2 && self.keyed_idle.get().worth_retrying(keyed, || node.any_ready());
            if self.cluster.failed() || !(wanted || worth()) {
                break;
            }
            // Floating: idle threads serve, but no more than the limit at
            // once (the configuration allows a limit only there).
            let Some(slot) = self.claim_or_leave_to_servers() else { break };
            handled += self.serve_keyed_batches(keyed);
            drop(slot);
            // A thread turned away while this one served (an interrupted
            // one, say) left its messages here: look again. Pairs with the
            // fence in `claim_or_leave_to_servers`.
            if self.cluster.cfg.max_servers.is_some() {
                fence(Ordering::SeqCst);
                wanted = node.server_wanted.swap(false, Ordering::Relaxed);
            }
        }
        handled
    }

    /// A serving place, or None after telling the servers to look again
    /// once they give theirs up. Dekker-style: either this thread's second
    /// try sees a place freed, or the server that frees it sees the flag.
    fn claim_or_leave_to_servers(&self) -> Option<ServerSlot<'_>> {
        let node = self.node();
        let limit = self.cluster.cfg.max_servers;
        if let Some(slot) = node.claim_server(limit) {
            return Some(slot);
        }
        node.server_wanted.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        node.claim_server(limit)
    }

    /// Runs batches from the keyed queue until it has nothing for this
    /// thread; returns how many handlers ran.
    fn serve_keyed_batches(&self, keyed: &KeyedQueue) -> u64 {
        let node = self.node();
        let mut batch = Batch::default();
        let mut handled = 0;
        loop {
            // SAFETY: the consumers are touched only through the keyed queue.
            match unsafe { keyed.next(&node.inbox, NodeId(node.id), &mut batch) } {
                Ok(()) => {
                    for &e in batch.entries() {
                        let _held = keyed.key_lock(e.key);
                        self.handle(keyed.message(e));
                        handled += 1;
                    }
                    if self.cluster.failed() {
                        keyed.complete(&mut batch);
                        return handled;
                    }
                }
                Err(idle) => {
                    self.keyed_idle.set(idle);
                    return handled;
                }
            }
        }
    }

    /// Runs one handler and completes a reply's waiting thread.
    fn handle(&self, m: &Message) {
        let Some((info, f)) = self.cluster.handlers.entry(m.handler) else {
            return self.cluster.fail(FAIL_UNKNOWN, m.handler, None);
        };
        let mut ctx = RtHandlerCtx { thread: self, msg: m, guard: ReplyGuard::new(m.kind, &info.name) };
        let t0 = self.stats.stamp();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut ctx, m)));
        self.stats.add_handler(self.stats.since(t0));
        match outcome {
            Err(_) => return self.cluster.fail(FAIL_PANIC, m.handler, None),
            Ok(Err(e)) => return self.cluster.fail(FAIL_ERROR, m.handler, Some(e)),
            Ok(Ok(())) => {}
        }
        match m.kind {
            // Token 0 marks a one-way message: nobody waits for a reply.
            MsgKind::Request if m.token != 0 && !ctx.guard.replied() => {
                self.cluster.fail(FAIL_NO_REPLY, m.handler, None)
            }
            MsgKind::Request => {}
            MsgKind::Reply => self.complete(m),
        }
    }

    fn complete(&self, m: &Message) {
        let node = self.node();
        let Some(c) = node.completions.get(m.src_thread.index()) else {
            return self.cluster.fail(FAIL_UNKNOWN, m.handler, None);
        };
        // SAFETY: the requester does not read its payload until it sees the
        // token stored below, and one request has one reply, so this is the
        // only writer (see the Sync argument for Node).
        unsafe { (*c.payload.get()).set(m.payload.as_slice()) };
        for (i, a) in m.args.as_slice().iter().enumerate() {
            c.args[i].store(*a, Ordering::Relaxed);
        }
        c.nargs.store(m.args.len() as u32, Ordering::Relaxed);
        c.handler.store(m.handler.0 as u32, Ordering::Relaxed);
        c.src_node.store(m.src_node.0, Ordering::Relaxed);
        c.token.store(m.token, Ordering::Release);
    }

    /// Takes the role if it is free and handles what waits, repeating if
    /// messages slipped in while it gave the role back. Returns handled count.
    pub(super) fn poll_as_pp(&self) -> u64 {
        let node = self.node();
        if let Some(keyed) = &node.keyed {
            return self.serve_keyed(keyed);
        }
        let mut handled = 0;
        while self.take_role() {
            handled += self.drain();
            self.release_role();
            if !node.any_ready() {
                break;
            }
        }
        handled
    }

    /// Takes the node's role if it is free. Under Single the node's one
    /// thread owns it for good (nobody else could take it), which keeps
    /// atomic read-modify-writes off its message path.
    pub(super) fn take_role(&self) -> bool {
        if self.owns_role {
            return true;
        }
        self.node().try_take_role()
    }

    pub(super) fn release_role(&self) {
        if self.owns_role {
            return;
        }
        let node = self.node();
        node.role.store(false, Ordering::Release);
        if self.cluster.cfg.policy == Policy::Floating {
            // Pairs with the senders' fence (see `after_send`); only Floating
            // interrupts depend on this ordering.
            fence(Ordering::SeqCst);
        }
    }
}
