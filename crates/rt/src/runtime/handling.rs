//! Handling: serving the node as its acting protocol processor (serial
//! discipline) or through its keyed queue (parallel ones), running one
//! handler, and completing the waiting thread of a reply.

use super::cluster::{FAIL_ERROR, FAIL_NO_REPLY, FAIL_PANIC, FAIL_UNKNOWN};
use super::proc::RtHandlerCtx;
use super::thread::ThreadCtx;
use crate::clock::Stamp;
use crate::dispatch::keyed::KeyedQueue;
use crate::dispatch::serial;
use crate::transport::Transport;
use finegrain_core::{Message, MsgKind, Policy, ReplyGuard};
use std::sync::atomic::Ordering;

impl<T: Transport> ThreadCtx<T> {
    /// Handles everything waiting at this thread's node. The caller holds
    /// the node's role.
    pub(super) fn drain(&self) -> u64 {
        if self.spilled() > 0 {
            self.flush_spill();
        }
        let node = self.node();
        // SAFETY: the caller holds the role, which is the inbox's receive
        // right and the cursor's; the scratch message is this thread's and
        // handlers cannot re-enter `drain`.
        unsafe {
            serial::drain(
                &node.inbox,
                &node.cursor,
                &mut *self.scratch.get(),
                || self.cluster.failed(),
                |m| self.take(m),
            )
        }
    }

    /// Runs `m`'s handler here or, on the co-processor's progress thread
    /// for a handler it may not run (see `RtConfig::progress_runs`), hands
    /// it to the node's main thread.
    #[inline]
    fn take(&self, m: &Message) {
        if self.progress && !self.cluster.progress_runs(m.handler) {
            return self.node().forwarded.push(m);
        }
        self.handle(m)
    }

    /// Coproc's main thread: runs what the progress thread forwarded, in
    /// order (a forwarded request's reply leaves from this thread's send
    /// side). Returns how many ran; nothing on other threads.
    pub(super) fn run_forwarded(&self) -> u64 {
        if !self.takes_forwarded {
            return 0;
        }
        let forwarded = &self.node().forwarded;
        let mut ran = 0;
        while !self.cluster.failed() {
            let Some(m) = forwarded.pop() else { break };
            self.handle(&m);
            ran += 1;
        }
        ran
    }

    /// Coproc's main thread once its application has returned: runs what
    /// is forwarded until the progress thread has stopped (so nothing it
    /// forwards is lost) and nothing is left, or until `stop` says so.
    pub(super) fn serve_forwarded(&self, stop: impl Fn() -> bool) {
        let forwarded = &self.node().forwarded;
        let mut spins = 0;
        self.enter();
        loop {
            let t0 = self.stats.stamp();
            let ran = self.run_forwarded();
            // A spill waits for its destination to drain; relaxing lets
            // that thread run if it shares this core.
            self.flush_spill();
            if self.cluster.failed() || stop() {
                break;
            }
            if ran == 0 {
                self.relax(&mut spins);
                self.stats.add_idle(self.stats.since(t0));
            }
        }
        // The progress thread may have forwarded more before it stopped.
        if forwarded.progress_done.load(Ordering::Acquire) {
            self.run_forwarded();
        }
        self.exit();
    }

    /// Parallel disciplines: handles entries while some may run, alongside
    /// the node's other serving threads. Returns the number handled.
    pub(super) fn serve_keyed(&self, keyed: &KeyedQueue) -> u64 {
        if self.spilled() > 0 {
            self.flush_spill();
        }
        let node = self.node();
        // SAFETY: under a parallel discipline the node's inbox is taken
        // from only through its keyed queue.
        unsafe {
            keyed.serve(&node.inbox, &node.servers, &self.keyed_idle, || self.cluster.failed(), |m| self.handle(m))
        }
    }

    /// Runs one handler and completes a reply's waiting thread.
    pub(super) fn handle(&self, m: &Message) {
        let Some((info, f)) = self.cluster.handlers.entry(m.handler) else {
            return self.cluster.fail(FAIL_UNKNOWN, m.handler, None);
        };
        let guard = ReplyGuard::new(m, &info.name, self.cluster.handlers.len());
        let mut ctx = RtHandlerCtx { thread: self, msg: m, guard };
        let t0 = self.stats.stamp();
        let clock = self.cluster.clock(self.node, self.local);
        clock.handler.store(m.handler.0 as u32, Ordering::Relaxed);
        // Never 0, which means "no handler".
        clock.since.store(Stamp::now().ticks() | 1, Ordering::Release);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut ctx, m)));
        clock.since.store(0, Ordering::Release);
        self.cluster.bell(self.node).handled.fetch_add(1, Ordering::Relaxed);
        self.stats.add_handler(self.stats.since(t0));
        match outcome {
            Err(_) => return self.cluster.fail(FAIL_PANIC, m.handler, None),
            Ok(Err(e)) => return self.cluster.fail(FAIL_ERROR, m.handler, Some(e)),
            Ok(Ok(())) => {}
        }
        if ctx.guard.owes_reply() {
            return self.cluster.fail(FAIL_NO_REPLY, m.handler, None);
        }
        match m.kind {
            MsgKind::Request => {}
            // A reply to a one-way message: its handler recorded what it
            // brought, and no thread waits on a completion slot.
            MsgKind::Reply if m.token == 0 => {}
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
        // only writer (see the Sync argument for Completion).
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
            let now = self.drain();
            handled += now;
            self.release_role();
            // A pass that found nothing though the rings said otherwise
            // ends the poll too: rings whose state was written over could
            // say so for ever, and the caller has deadlines to watch.
            if now == 0 || !node.any_ready() || self.cluster.failed() {
                break;
            }
        }
        handled
    }

    /// Takes the node's role if it is free. Under Single the node's one
    /// thread owns it for good (nobody else could take it), which keeps
    /// atomic read-modify-writes off its message path.
    #[inline]
    pub(super) fn take_role(&self) -> bool {
        if self.owns_role {
            return true;
        }
        serial::try_take(&self.bell().role)
    }

    pub(super) fn release_role(&self) {
        if self.owns_role {
            return;
        }
        // Only Floating interrupts depend on the fence after the release
        // (it pairs with the senders' fence, see `notify::signal::target`).
        serial::release(&self.bell().role, self.cluster.cfg.run.policy == Policy::Floating);
    }
}
