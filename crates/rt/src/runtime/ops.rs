//! The thread's own operations: requests and one-way sends, waiting for
//! replies (acting as protocol processor meanwhile), work, idling, poll
//! sites and accesses to the thread's regions.

use super::cluster::{run_aborted, Completion, Mode};
use super::thread::ThreadCtx;
use crate::clock::Stamp;
use crate::notify::{park, signal};
use crate::transport::{Inbox, Outgoing, Sender, Transport, MAX_PAYLOAD};
use finegrain_core::{
    Access, AmError, Args, Discipline, HandlerId, MsgKind, NodeId, Region, Relinquish, SyncKey, ThreadId,
};
use rand::Rng;
use std::cell::Cell;
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};

/// What a request made while `request_with`'s closure runs returns.
fn reply_on_loan() -> AmError {
    AmError::NotAllowed(
        "a request from inside request_with's closure, whose reply buffer it would overwrite while the closure \
         still reads it: copy what the closure needs and make the request after it returns"
            .into(),
    )
}

/// When a wait has lasted too long; the clock is read only every so many
/// checks, so waiting stays a tight loop. The time counted is the
/// thread's own, not the wall clock's: time it spent runnable but
/// preempted (more threads than cores) pushes the deadline back, so a
/// heavily oversubscribed run is not mistaken for a stuck one, while a
/// peer that makes no progress is noticed on time wherever the waiter
/// gets a core. A wait on one node also watches that node's heartbeat (the
/// messages it has handled): while it still handles messages it is slow,
/// not stuck (its threads starved of cores while the waiter has one, or a
/// backlog ahead of the waiter's message), and the deadline moves on by
/// the timeout; a node that stops is named one timeout after it stopped.
pub(super) struct Deadline<'a> {
    at: Stamp,
    ms: u64,
    checks: u32,
    /// Once passed, passed for every later check too.
    passed: bool,
    /// The thread's run delay when the wait began (or shortly after; None
    /// until read), and when it was read.
    delay: Option<(Stamp, u64)>,
    /// The awaited node's heartbeat, and its count when last read.
    peer: Option<(&'a AtomicU64, u64)>,
}

/// A thread's last reading of its run delay and when it was made: a wait
/// that begins soon after takes it as its own start.
#[derive(Clone, Copy)]
struct DelaySample {
    at: Stamp,
    delay_ns: u64,
}

thread_local! {
    static DELAY: std::cell::Cell<Option<DelaySample>> = const { std::cell::Cell::new(None) };
}

/// How old a run-delay reading may be and still stand for the start of a
/// wait (what it could miscount is at most this much).
const DELAY_FRESH_NS: u64 = 50_000_000;

/// The calling thread's run delay now (and the sample kept for waits).
fn read_delay() -> Option<(Stamp, u64)> {
    let delay_ns = crate::os::run_delay_ns(None)?;
    let at = Stamp::now();
    DELAY.with(|d| d.set(Some(DelaySample { at, delay_ns })));
    Some((at, delay_ns))
}

impl Deadline<'static> {
    pub(super) fn new(ms: u64) -> Deadline<'static> {
        let now = Stamp::now();
        let delay = DELAY.with(|d| d.get()).filter(|s| now.since(s.at) < DELAY_FRESH_NS).map(|s| (s.at, s.delay_ns));
        Deadline { at: now.plus_ns(ms as f64 * 1e6), ms, checks: 0, passed: false, delay, peer: None }
    }
}

impl<'a> Deadline<'a> {
    /// A deadline of `ms` on a wait for a node whose heartbeat is `beat`
    /// (None where the transport cannot see it: a remote MPI rank).
    pub(super) fn watching(ms: u64, beat: Option<&'a AtomicU64>) -> Deadline<'a> {
        let peer = beat.map(|b| (b, b.load(Ordering::Relaxed)));
        Deadline { peer, ..Deadline::new(ms) }
    }

    #[inline]
    pub(super) fn passed(&mut self) -> bool {
        self.checks = self.checks.wrapping_add(1);
        if !self.passed && self.checks.is_multiple_of(256) {
            self.check();
        }
        self.passed
    }

    /// Reads the clock: past the deadline, unless the thread spent most of
    /// the time preempted (an oversubscribed host), which moves the
    /// deadline back by as much. A thread that had its core most of the
    /// time keeps the wall clock's deadline, so a stopped peer is named on
    /// time on a host that is merely busy.
    #[cold]
    fn check(&mut self) {
        if self.delay.is_none() {
            self.delay = read_delay();
        }
        if !self.at.reached() || self.peer_beats() {
            return;
        }
        let (Some((t0, then)), Some((t1, now))) = (self.delay, read_delay()) else {
            self.passed = true;
            return;
        };
        let preempted = now.saturating_sub(then);
        if preempted.saturating_mul(2) < t1.since(t0) {
            self.passed = true;
            return;
        }
        self.at = self.at.plus_ns(preempted as f64);
        self.delay = Some((t1, now));
    }

    /// Whether the awaited node has handled a message since the last look;
    /// if so the wait starts afresh from now.
    fn peer_beats(&mut self) -> bool {
        let Some((beat, seen)) = &mut self.peer else { return false };
        let count = beat.load(Ordering::Relaxed);
        if count == *seen {
            return false;
        }
        *seen = count;
        self.at = Stamp::now().plus_ns(self.ms as f64 * 1e6);
        self.delay = read_delay();
        true
    }
}

/// Marks the reply lent while alive; the mark goes even if the closure
/// panics (the thread may still serve afterwards).
struct LentReply<'a>(&'a Cell<bool>);

impl<'a> LentReply<'a> {
    fn new(flag: &'a Cell<bool>) -> LentReply<'a> {
        flag.set(true);
        LentReply(flag)
    }
}

impl Drop for LentReply<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl<T: Transport> ThreadCtx<T> {
    fn new_token(&self) -> u64 {
        let t = self.next_token.get() + 1;
        self.next_token.set(t);
        (self.global as u64) << 40 | t
    }

    /// Sends a request and waits for its reply; `f` sees the reply in place.
    pub(super) fn request_with<R>(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
        f: impl FnOnce(&Completion) -> R,
    ) -> Result<R, AmError> {
        let cl = &self.cluster;
        // Only a request of this thread writes its reply buffer; one-way
        // sends get no reply and may go out while the buffer is lent.
        if self.reply_lent.get() {
            return Err(reply_on_loan());
        }
        self.check_send(dst, handler, key, args, payload)?;
        let token = self.new_token();
        self.enter();
        self.poll_on_send();
        self.stats.count_request();
        self.send(dst.0, &self.request_from_here(handler, token, key, args, payload));
        let c = &self.node().completions[self.local as usize];
        self.wait_for(c, token, dst.0, handler);
        self.exit();
        if cl.failed() {
            return Err(run_aborted());
        }
        let _lent = LentReply::new(&self.reply_lent);
        Ok(f(c))
    }

    /// A request from this thread (token 0: one-way, nothing waits for it).
    fn request_from_here<'a>(
        &self,
        handler: HandlerId,
        token: u64,
        key: SyncKey,
        args: &'a [u64],
        payload: &'a [u8],
    ) -> Outgoing<'a> {
        Outgoing {
            kind: MsgKind::Request,
            handler,
            src_node: NodeId(self.node),
            src_thread: ThreadId(self.local),
            token,
            key,
            args,
            payload,
        }
    }

    /// What every send checks first: the node and handler exist, the
    /// arguments and payload fit, and the key can be honoured.
    fn check_send(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
    ) -> Result<(), AmError> {
        let cl = &self.cluster;
        if dst.0 >= cl.cfg.run.topology.nodes {
            return Err(AmError::NoSuchNode { node: dst.0, nodes: cl.cfg.run.topology.nodes });
        }
        cl.handlers.info(handler)?;
        // The header has room for MAX_ARGS words' count; more would spill
        // into the kind and key bits.
        Args::check_len(args)?;
        if payload.len() > MAX_PAYLOAD {
            return Err(AmError::PayloadTooLarge {
                what: "payload".into(),
                given: payload.len(),
                max: MAX_PAYLOAD,
                platform: "the native runtime",
            });
        }
        self.check_key(key)
    }

    /// Under a lock per key nothing can make a handler run alone.
    fn check_key(&self, key: SyncKey) -> Result<(), AmError> {
        if key == SyncKey::Sequential && self.cluster.cfg.run.dispatch.discipline == Discipline::SpinLock {
            return Err(AmError::NotAllowed(
                "a message with the sequential key under the spin-lock discipline, which cannot run a handler alone; \
                 send it with a numbered or nosync key, or use the pdq or serial discipline"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Sends a one-way message (no reply). A full ring (a transport that
    /// takes no more now) makes the sender wait, handling its own node's
    /// messages meanwhile if the policy lets it, so a fast sender is held
    /// back instead of growing an overflow queue.
    pub(super) fn send_oneway(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
    ) -> Result<(), AmError> {
        self.check_send(dst, handler, key, args, payload)?;
        let cl = &self.cluster;
        let m = self.request_from_here(handler, 0, key, args, payload);
        self.enter();
        let mut spins = 0;
        let mut deadline = Deadline::watching(cl.cfg.progress_timeout_ms, self.heartbeat(dst.0));
        loop {
            // SAFETY: only this thread uses its send side, and not
            // re-entrantly (as in `send`); the borrow ends here.
            if unsafe { &mut *self.out.get() }.try_send(dst.0, &m).is_ok() {
                break;
            }
            self.flush_spill();
            if !cl.failed() && deadline.passed() {
                self.no_room(dst.0, handler);
            }
            if cl.failed() {
                self.exit();
                return Err(run_aborted());
            }
            if cl.cfg.run.policy.compute_procs_handle() {
                self.poll_as_pp();
            }
            self.run_forwarded();
            self.relax(&mut spins);
        }
        self.stats.count_sent();
        self.after_send(dst.0);
        self.poll_on_send();
        self.exit();
        Ok(())
    }

    /// Single's thread notices messages when it sends (as well as during
    /// `work`, at poll sites and while it waits); so does Coproc's main
    /// thread, for what its progress thread forwarded.
    fn poll_on_send(&self) {
        if !self.owns_role {
            self.run_forwarded();
            return;
        }
        // SAFETY: this thread owns the role (Single), the inbox's receive
        // right.
        if unsafe { self.node().inbox.pending() } {
            self.drain();
        }
    }

    /// Waits for the token, handling messages as the policy allows, until
    /// the progress timeout (then the run fails, naming `dst` and
    /// `handler`).
    fn wait_for(&self, c: &Completion, token: u64, dst: u32, handler: HandlerId) {
        let done = || c.token.load(Ordering::Acquire) == token;
        self.wait_while_handling(&done, self.heartbeat(dst), || self.no_progress(dst, handler));
    }

    /// `Proc::wait_until`: waits for a condition handlers at this node make
    /// true, handling messages as the policy allows.
    pub(super) fn wait_until(&self, done: &dyn Fn() -> bool) -> Result<(), AmError> {
        if done() {
            return Ok(());
        }
        self.enter();
        self.wait_while_handling(done, None, || self.no_progress_waiting());
        self.exit();
        if self.cluster.failed() {
            return Err(run_aborted());
        }
        Ok(())
    }

    /// Node `dst`'s heartbeat, where this process can see it.
    fn heartbeat(&self, dst: u32) -> Option<&AtomicU64> {
        self.cluster.transport.doorbell(dst).map(|b| &*b.handled)
    }

    /// Waits until `done`, handling messages as the policy allows; past the
    /// progress timeout (with `beat` still, if the wait is on one node whose
    /// heartbeat it is) calls `timed_out` (which fails the run).
    fn wait_while_handling(&self, done: &dyn Fn() -> bool, beat: Option<&AtomicU64>, timed_out: impl Fn()) {
        let t0 = self.stats.stamp();
        let mut deadline = Deadline::watching(self.cluster.cfg.progress_timeout_ms, beat);
        let node = self.node();
        let mode = self.cluster.mode;
        let mut spins = 0;
        // Floating counts its waiting threads: an acting PP whose reply is
        // in hands the role to one of them, and hand-off keeps it for one.
        let counted = mode == Mode::Floating;
        if counted {
            node.waiting.fetch_add(1, Ordering::Relaxed);
        }
        loop {
            if done() || self.cluster.failed() {
                break;
            }
            if deadline.passed() {
                timed_out();
                break;
            }
            let spilled = !self.flush_spill();
            match mode {
                Mode::Fixed => self.relax(&mut spins),
                // The progress thread serves; this thread runs what it
                // forwards (a remote atomic waiting on us, say).
                // A spill waits for the destination's progress thread,
                // which may need this core.
                Mode::Coproc => {
                    if self.run_forwarded() == 0 {
                        self.relax(&mut spins);
                    }
                }
                Mode::Single | Mode::Floating if node.keyed.is_some() => {
                    if self.poll_as_pp() == 0 && !spilled {
                        self.relax(&mut spins);
                    }
                }
                Mode::Single | Mode::Floating => {
                    if self.take_role() {
                        self.act_until_done(done, &mut deadline);
                    } else if !spilled {
                        self.relax(&mut spins);
                    }
                }
            }
        }
        if counted {
            node.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        self.stats.add_wait(self.stats.since(t0));
    }

    /// Acts as PP until this thread's reply is in, then relinquishes
    /// (eagerly, or under hand-off only to a waiting peer).
    fn act_until_done(&self, done: &dyn Fn() -> bool, deadline: &mut Deadline<'_>) {
        let node = self.node();
        let mut spins = 0;
        loop {
            let handled = self.drain();
            let done = done();
            // The waiting loop reports the timeout once the role is back.
            if self.cluster.failed() || (!done && deadline.passed()) {
                break;
            }
            // A thread that owns the role for good (Single) returns to its
            // work at once; messages that remain are handled at its next
            // poll. Others drain first, since leaving messages behind
            // would interrupt a computing thread, unless another thread
            // waits and can take over: at saturation the queue never
            // empties, and draining it would starve this thread's work.
            if done && self.owns_role {
                return;
            }
            let peer_waits = node.waiting.load(Ordering::Relaxed) > 1;
            if done && (handled == 0 || peer_waits) {
                // Hand-off keeps the role for a peer that may still come to
                // wait; once every peer's application has returned, none
                // will, and keeping it would spin here for ever.
                let keep = self.cluster.cfg.run.relinquish == Relinquish::Handoff
                    && node.running.load(Ordering::Acquire) > 1
                    && node.waiting.load(Ordering::Relaxed) <= 1
                    && !self.cluster.shutdown.load(Ordering::Relaxed);
                if !keep {
                    break;
                }
            }
            if handled == 0 {
                self.relax(&mut spins);
            }
        }
        self.release_role();
        if node.any_ready() {
            self.poll_as_pp();
        }
    }

    /// This thread's request to `dst` went unanswered for the progress
    /// timeout: the run fails, naming both nodes and the handler.
    fn no_progress(&self, dst: u32, handler: HandlerId) {
        let cl = &self.cluster;
        let name = cl.handlers.info(handler).map(|i| i.name.clone()).unwrap_or_else(|_| format!("#{}", handler.0));
        let why = format!(
            "no reply from node {dst} to its request {name} within the progress timeout of {} ms: node {dst} makes \
             no progress (a handler that never returns, or threads that never poll)",
            cl.cfg.progress_timeout_ms
        );
        cl.fail_thread(self.node, self.local, AmError::Aborted(why));
    }

    /// This thread's one-way message to `dst` found no room for the
    /// progress timeout: the run fails, naming both nodes and the handler.
    fn no_room(&self, dst: u32, handler: HandlerId) {
        let cl = &self.cluster;
        let name = cl.handlers.info(handler).map(|i| i.name.clone()).unwrap_or_else(|_| format!("#{}", handler.0));
        let why = format!(
            "its one-way message {name} to node {dst} found no room within the progress timeout of {} ms: node {dst} \
             takes no messages (it makes no progress, or the ring to it is corrupt)",
            cl.cfg.progress_timeout_ms
        );
        cl.fail_thread(self.node, self.local, AmError::Aborted(why));
    }

    /// Serving after every application has returned, the node's inbox has
    /// said a message waits while none comes: past the progress timeout
    /// that is a spin on corrupt state, which fails the run (true).
    fn stale_inbox(&self, since: &mut Option<Deadline<'static>>) -> bool {
        let cl = &self.cluster;
        let total = cl.cfg.run.topology.nodes * cl.cfg.compute_threads_per_node();
        if cl.transport.apps_finished() != total || !self.node().work_waiting() {
            *since = None;
            return false;
        }
        if !since.get_or_insert_with(|| Deadline::new(cl.cfg.progress_timeout_ms)).passed() {
            return false;
        }
        cl.fail_corrupt(format!(
            "after every application returned, node {}'s inbox said for the progress timeout of {} ms that a message \
             waits, and none came: the ring state is corrupt (something wrote over it)",
            self.node, cl.cfg.progress_timeout_ms
        ));
        true
    }

    /// This thread's `wait_until` saw its condition stay false for the
    /// progress timeout: the run fails, naming the thread.
    fn no_progress_waiting(&self) {
        let cl = &self.cluster;
        let why = format!(
            "node {} thread {} waited for a condition (Proc::wait_until) that no handler made true within the \
             progress timeout of {} ms: an operation it waits for was lost, or a peer makes no progress",
            self.node, self.local, cl.cfg.progress_timeout_ms
        );
        cl.fail_thread(self.node, self.local, AmError::Aborted(why));
    }

    /// `cycles` of computation with random accesses to the private segment.
    pub(super) fn work(&self, cycles: u64) {
        let cl = &self.cluster;
        let node = self.node();
        let deadline = Stamp::now().plus_ns(cycles as f64 * cl.cfg.ns_per_cycle);
        let t0 = Stamp::now();
        // Handling done inside (polls, interrupts) is not computation.
        let served_before = self.stats.handler_ns() + self.stats.interrupt_ns();
        let seg = &node.segments[self.local as usize];
        let floating = cl.mode == Mode::Floating;
        let single = cl.mode == Mode::Single;
        if floating {
            // A message that arrived before we counted ourselves as
            // computing is ours to handle (no sender interrupts for it).
            signal::begin_computing(self.bell());
            if node.work_waiting() {
                self.enter();
                self.poll_as_pp();
                self.exit();
            }
        }
        self.irq.set_interruptible(floating, Ordering::Release);
        // SAFETY: the rng is used only by this thread, outside interrupts.
        let rng = unsafe { &mut *self.rng.get() };
        let mut acc = 0u64;
        loop {
            if floating {
                self.catch_up_in_work();
            }
            self.stats.count_work_chunk();
            for _ in 0..64 {
                let i = rng.gen_range(0..seg.len());
                acc = acc.wrapping_add(seg[i].load(Ordering::Relaxed));
                if acc & 3 == 0 {
                    seg[i].store(acc, Ordering::Relaxed);
                }
            }
            // A failed run ends long work too: its process must stop soon.
            if deadline.reached() || cl.shutdown.load(Ordering::Relaxed) {
                break;
            }
            if single && node.any_ready() {
                self.irq.set_interruptible(false, Ordering::Relaxed);
                self.enter();
                self.poll_as_pp();
                self.exit();
            }
        }
        self.irq.set_interruptible(false, Ordering::Release);
        if floating {
            signal::end_computing(self.bell());
        }
        std::hint::black_box(acc);
        let served = self.stats.handler_ns() + self.stats.interrupt_ns() - served_before;
        self.stats.add_compute(t0.elapsed_ns().saturating_sub(served));
        if self.irq.pending() {
            self.enter();
            self.exit();
        }
    }

    /// Inside `work` under Floating: does what an interrupt could not. A
    /// signal that came before the thread became interruptible was only
    /// marked pending, and a reply sent from an interrupt may have found
    /// its ring full; either would otherwise wait for the work to end.
    fn catch_up_in_work(&self) {
        compiler_fence(Ordering::SeqCst);
        if !self.irq.pending() && !self.spill_waiting.load(Ordering::Relaxed) {
            return;
        }
        self.irq.set_interruptible(false, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        self.enter();
        self.flush_spill();
        self.exit(); // serves a pending interrupt
        self.irq.set_interruptible(true, Ordering::Release);
    }

    /// Serves the node as protocol processor until `stop` says so (used by
    /// threads with nothing else to do, and by the dedicated threads of
    /// Fixed). The role is held while serving, so polling costs no atomic
    /// read-modify-write per round; Floating gives it back every so often
    /// so a waiting thread can take over and interrupts stay possible.
    pub(super) fn serve(&self, stop: impl Fn() -> bool) {
        let node = self.node();
        let park_after = self.cluster.cfg.park_after_polls;
        let fixed = self.cluster.mode == Mode::Fixed;
        let floating = self.cluster.mode == Mode::Floating;
        let mut empty = 0u32;
        let mut spins = 0;
        let mut holding = false;
        let mut stale = None;
        // A serving Floating thread may take the role: a holder keeping it
        // under hand-off for want of a taker must see it (as one waiting).
        if floating {
            node.waiting.fetch_add(1, Ordering::Relaxed);
        }
        self.enter();
        while !stop() && !self.cluster.failed() {
            let t0 = self.stats.stamp();
            let handled = match &node.keyed {
                Some(keyed) => self.serve_keyed(keyed),
                None => {
                    if !holding {
                        holding = self.take_role();
                    }
                    if holding {
                        self.drain()
                    } else {
                        0
                    }
                }
            };
            let spilled = !self.flush_spill();
            if handled > 0 || spilled {
                empty = 0;
                stale = None;
                // A spill waits for its destination to drain: give that
                // thread the core if it shares this one.
                if handled == 0 {
                    self.relax(&mut spins);
                }
                continue;
            }
            empty = empty.wrapping_add(1);
            if self.stale_inbox(&mut stale) {
                break;
            }
            if holding && floating && empty.is_multiple_of(64) {
                self.release_role();
                holding = false;
            }
            match park_after {
                Some(limit) if fixed && empty >= limit => {
                    let transport = &self.cluster.transport;
                    let slept = park::park_idle(
                        self.bell(),
                        || node.work_waiting(),
                        |timeout| transport.sleep(self.node, timeout),
                    );
                    if let Some(woken) = slept {
                        self.stats.count_park(woken);
                    }
                    empty = 0;
                }
                _ => self.relax(&mut spins),
            }
            self.stats.add_idle(self.stats.since(t0));
        }
        if floating {
            node.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        if holding {
            self.release_role();
            // A sender that saw the role held raised no interrupt.
            if node.any_ready() {
                self.poll_as_pp();
            }
        }
        self.exit();
    }

    /// Nothing to compute for `cycles`: serve the node meanwhile if the
    /// policy lets compute threads handle, otherwise just let time pass.
    pub(super) fn idle(&self, cycles: u64) {
        let deadline = Stamp::now().plus_ns(cycles as f64 * self.cluster.cfg.ns_per_cycle);
        if self.cluster.cfg.run.policy.compute_procs_handle() {
            return self.serve(|| deadline.reached());
        }
        if self.takes_forwarded {
            return self.serve_forwarded(|| deadline.reached());
        }
        let t0 = self.stats.stamp();
        let mut spins = 0;
        while !deadline.reached() && !self.cluster.failed() {
            self.relax(&mut spins);
        }
        self.stats.add_idle(self.stats.since(t0));
    }

    /// A poll site: handle what waits if this thread may act as PP, or
    /// (Coproc's main thread) what its progress thread forwarded.
    pub(super) fn poll_site(&self) {
        if self.cluster.cfg.run.policy.compute_procs_handle() && self.node().work_waiting() {
            self.enter();
            self.poll_as_pp();
            self.exit();
        } else if self.takes_forwarded && !self.node().forwarded.is_empty() {
            self.enter();
            self.run_forwarded();
            self.exit();
        }
    }

    fn region(&self, region: Region) -> Option<&[AtomicU64]> {
        let node = self.node();
        match region {
            Region::Segment(t) => node.segments.get(t.index()).map(|s| &s[..]),
            Region::ProtocolTable => Some(&node.table[..]),
            Region::RecvBuffer(t) => node.recv.get(t.index()).map(|s| &s[..]),
            // Its real words belong to the library that names it (Split-C's
            // segments), which reads and writes them itself.
            Region::Global | Region::Directory | Region::AccessTags => None,
        }
    }

    /// Touches real memory (reads, or writes) of a region of this node.
    pub(super) fn touch(&self, region: Region, offset: u64, len: u32, kind: Access) -> Result<(), String> {
        if matches!(region, Region::Global | Region::Directory | Region::AccessTags) {
            return Ok(());
        }
        let words = self.region(region).ok_or_else(|| format!("{region:?} does not exist on this node"))?;
        let first = (offset / 8) as usize;
        let end = offset.saturating_add(len as u64);
        let last = usize::try_from(end.div_ceil(8)).unwrap_or(usize::MAX);
        if len == 0 || last > words.len() {
            return Err(format!(
                "access of {len} bytes at offset {offset} is outside {region:?} ({} bytes)",
                words.len() * 8
            ));
        }
        let mut acc = 0u64;
        for w in &words[first..last] {
            match kind {
                Access::Read => acc = acc.wrapping_add(w.load(Ordering::Relaxed)),
                Access::Write | Access::Overwrite => w.store(offset, Ordering::Relaxed),
            }
        }
        std::hint::black_box(acc);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Deadline;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    /// How long a deadline of `ms` takes to pass on a thread pinned to
    /// core 0, with `rivals` threads spinning on the same core.
    fn waited(ms: u64, rivals: usize) -> Duration {
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..rivals {
                s.spawn(|| {
                    crate::os::pin_to(0);
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                });
            }
            let took = s
                .spawn(|| {
                    crate::os::pin_to(0);
                    let start = Instant::now();
                    let mut d = Deadline::new(ms);
                    while !d.passed() {
                        std::hint::spin_loop();
                    }
                    start.elapsed()
                })
                .join()
                .unwrap();
            stop.store(true, Ordering::Relaxed);
            took
        })
    }

    /// A waiting thread that shares its core with two others gets about a
    /// third of it: the time it spends preempted does not count, so its
    /// deadline passes well after the wall clock's (an oversubscribed run
    /// is not a stuck one).
    #[test]
    fn time_spent_preempted_does_not_count_toward_a_deadline() {
        crate::clock::calibrate();
        if crate::os::run_delay_ns(None).is_none() {
            return eprintln!("this kernel keeps no run delays: the deadline counts wall-clock time");
        }
        let shared = waited(200, 2);
        assert!(shared >= Duration::from_millis(400), "took {shared:?} sharing a core with two spinners");
    }
}
