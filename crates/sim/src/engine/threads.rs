//! Application threads: polling their tasks, the operations they ask for
//! (compute, send, wait for a reply or for a handler, access memory), and
//! resuming them.

use super::*;

impl<'a, 'h, T> Engine<'a, 'h, T> {
    /// Polls the thread's task and starts the operation it asks for.
    pub(super) fn run_thread(&mut self, t: usize) {
        // A step deferred behind charged work had its cycles computed
        // already (none can be charged meanwhile), so it goes straight on;
        // one polled by a re-check of a `wait_until` condition
        // (`start_recheck`) has its charged cycles computed first.
        if let Some(next) = self.threads[t].deferred.take() {
            return self.after_charged_work(t, next);
        }
        if let Some(next) = self.poll_task(t) {
            self.after_charged_work(t, next);
        }
    }

    /// Polls the thread's task: its next step, or None if the run is
    /// ending (the thread failed or misused its operations).
    fn poll_task(&mut self, t: usize) -> Option<Deferred> {
        let mut cx = Context::from_waker(Waker::noop());
        self.threads[t].shared.now.set(self.now);
        let task = self.threads[t].task.as_mut().expect("unfinished thread has a task");
        self.running = Running::Thread(t as u32);
        let polled = task.as_mut().poll(&mut cx);
        self.running = Running::Engine;
        match polled {
            Poll::Ready(result) => {
                // An operation it dropped or leaked unfinished would be lost.
                if self.threads[t].shared.unfinished() {
                    self.fault(t, OpFault::Abandoned);
                    return None;
                }
                self.threads[t].task = None;
                match result {
                    Ok(v) => self.results[t] = Some(v),
                    Err(e) => {
                        self.fail_thread(t, e);
                        return None;
                    }
                }
                Some(Deferred::Finish)
            }
            Poll::Pending => {
                let op = self.threads[t].shared.op.borrow_mut().take();
                match op {
                    // `Op::TwoAtOnce` is reported when started, and a
                    // result left unclaimed (of an operation awaited beside
                    // this one, or dropped) when this one's is handed over
                    // (`thread_ready`): no check here, on every poll.
                    Some(op) => {
                        let th = &mut self.threads[t];
                        if let Op::Await(watch) = op {
                            // The condition was checked in this poll.
                            th.checked_at = self.nodes[self.procs[th.proc].node].handlers_run;
                            th.dirty = false;
                            th.watch = watch;
                            th.reissues = th.shared.waits_for_block.get();
                        } else {
                            th.watch = None;
                        }
                        Some(Deferred::Op(op))
                    }
                    None => {
                        self.fail_thread(
                            t,
                            AmError::Aborted("the thread awaited something that is not a finegrain operation".into()),
                        );
                        None
                    }
                }
            }
        }
    }

    /// Cycles the thread declared with `Proc::charge` are computed first
    /// (as ordinary, interruptible work); then `next` happens.
    fn after_charged_work(&mut self, t: usize, next: Deferred) {
        let charged = self.threads[t].shared.charged.replace(0);
        let counted = self.threads[t].shared.counted.take();
        if charged == 0 {
            return self.continue_thread(t, next);
        }
        self.threads[t].deferred = Some(next);
        self.threads[t].state = ThreadState::Busy;
        let pattern = Pattern::charged(&self.cfg.machine.compute, charged, counted);
        self.start_compute(self.threads[t].proc, charged, pattern, None);
    }

    fn continue_thread(&mut self, t: usize, next: Deferred) {
        match next {
            Deferred::Op(op) => self.start_op(t, op),
            Deferred::Finish => {
                self.threads[t].state = ThreadState::Finished;
                self.finished += 1;
                self.decide(self.threads[t].proc);
            }
        }
    }

    fn start_op(&mut self, t: usize, op: Op) {
        let p = self.threads[t].proc;
        let n = self.procs[p].node;
        self.threads[t].state = ThreadState::Busy;
        match op {
            Op::Work(cycles) => self.start_compute(p, cycles, Pattern::synthetic(&self.cfg.machine.compute), None),
            Op::Request { dst, handler, key, args, payload } => {
                if let Err(e) = self.check_send(dst, handler, key) {
                    return self.reject_op(t, e);
                }
                self.requests += 1;
                self.next_token += 1;
                let msg = self.thread_message(t, dst, handler, key, args, payload, self.next_token);
                let th = &mut self.threads[t];
                th.state = ThreadState::Waiting;
                th.issued_at = self.now;
                th.waiting_on = Some(handler);
                self.send_from_thread(t, msg, After::Nothing);
            }
            Op::Send { dst, handler, key, args, payload } => {
                if let Err(e) = self.check_send(dst, handler, key) {
                    return self.reject_op(t, e);
                }
                self.one_way += 1;
                // Token 0: no thread waits for this message or a reply to it.
                let msg = self.thread_message(t, dst, handler, key, args, payload, 0);
                // The thread goes on once the message is on its way.
                self.send_from_thread(t, msg, After::ThreadOpDone);
            }
            Op::Await(_) => self.start_await(t),
            Op::Access { region, offset, len, kind } => {
                let threads = self.nodes[n].threads;
                match self.nodes[n].mem.map().lines(region, offset, len, threads) {
                    Ok((first, count)) => {
                        let local = self.procs[p].local;
                        let (lat, missed) = match self.device_state_access(p, region, len, kind) {
                            Some(lat) => (lat, lat),
                            None => self.nodes[n].mem.access_bytes(
                                self.now,
                                self.now,
                                local,
                                (first, count),
                                offset,
                                len,
                                kind,
                            ),
                        };
                        if self.cfg.trace_handlers {
                            let (node, thread) = (n as u32, self.threads[t].local);
                            let global = region == Region::Global;
                            let (start, end) = (self.now, self.now + lat);
                            self.trace.push(TraceEvent::Access { node, thread, global, start, end });
                        }
                        self.start_access(p, lat, missed);
                    }
                    // `Proc::access` has no result to report this in.
                    Err(reason) => self.fail_thread(t, AmError::Aborted(format!("thread access rejected: {reason}"))),
                }
            }
            Op::TwoAtOnce => self.fault(t, OpFault::TwoAtOnce),
            Op::Idle(cycles) => {
                if cycles == 0 {
                    if self.thread_ready(t, OpResult::Done) {
                        self.run_thread(t);
                    }
                    return;
                }
                self.threads[t].state = ThreadState::Paused;
                let end = self.deadline(cycles);
                self.queue.push(end, EventKind::IdleEnd { thread: t as u32 });
                self.decide(p);
            }
            Op::Poll if self.coproc.is_some() => self.coproc_poll(t),
            Op::Poll => {
                let site = self.notify.poll_site(p, self.now);
                let can_handle = site.polls
                    && self.cfg.run.policy.compute_procs_handle()
                    && self.role_open(n)
                    && self.work_waiting(n);
                if can_handle {
                    self.threads[t].state = ThreadState::PollDrain;
                    self.start_acquire(p);
                } else {
                    self.start_busy(p, Cat::Compute, site.cycles, 0, After::ThreadOpDone);
                }
            }
        }
    }

    /// Why a thread may not send this message (a request or a one-way):
    /// the sequential key where no handler runs alone, an unknown node or
    /// handler. Handed back to the thread as its operation's error.
    fn check_send(&self, dst: NodeId, handler: HandlerId, key: SyncKey) -> Result<(), AmError> {
        if key == SyncKey::Sequential
            && matches!(self.cfg.run.dispatch.discipline, Discipline::SpinLock | Discipline::Static)
        {
            return Err(AmError::Aborted(format!(
                "a message with the sequential key under the {} discipline, which cannot run a handler alone; use request_keyed or send_keyed with a numbered or nosync key, or the pdq or serial discipline",
                self.cfg.run.dispatch.discipline.label()
            )));
        }
        if dst.0 >= self.cfg.run.topology.nodes {
            return Err(AmError::NoSuchNode { node: dst.0, nodes: self.cfg.run.topology.nodes });
        }
        self.handlers.info(handler).map(|_| ())
    }

    /// The message thread `t` sends: a request, or a one-way (token 0).
    #[allow(clippy::too_many_arguments)]
    fn thread_message(
        &self,
        t: usize,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
        token: u64,
    ) -> Message {
        let n = self.procs[self.threads[t].proc].node;
        Message {
            kind: MsgKind::Request,
            src_node: NodeId(n as u32),
            src_thread: ThreadId(self.threads[t].local),
            dst_node: dst,
            handler,
            key,
            args,
            payload,
            token,
        }
    }

    /// Thread `t`'s processor sends `msg`, through the protocol processor
    /// where the preset says requests go that way; `after` is what the
    /// thread does once it is sent (a request's waits for its reply).
    fn send_from_thread(&mut self, t: usize, msg: Message, after: After) {
        if self.requests_via_pp() && self.coproc.is_none() {
            return self.submit_request(t, msg, after);
        }
        let p = self.threads[t].proc;
        let end = self.send_message(p, self.now, msg);
        self.start_busy(p, Cat::Send, end - self.now, 0, after);
    }

    /// `Proc::wait_until` found its condition false: the thread waits for
    /// a handler to run at its node, its processor serving meanwhile as
    /// while waiting for a reply. A handler that ran after the condition
    /// was checked (while charged work was computed) may have made it true:
    /// then it checks again at once.
    fn start_await(&mut self, t: usize) {
        let p = self.threads[t].proc;
        let n = self.procs[p].node;
        if self.nodes[n].handlers_run != self.threads[t].checked_at {
            self.threads[t].state = ThreadState::Recheck;
        } else {
            self.threads[t].state = ThreadState::Awaiting;
            self.nodes[n].awaiting += 1;
        }
        self.decide(p);
    }

    /// A handler ended at node `n` (on processor `by`, or on the
    /// co-processor): every thread there awaiting checks its condition
    /// again. `by` decides what to do next anyway.
    pub(super) fn wake_awaiting(&mut self, n: usize, by: Option<usize>) {
        if self.nodes[n].awaiting == 0 {
            return;
        }
        self.nodes[n].awaiting = 0;
        for local in 0..self.nodes[n].threads {
            let t = self.thread_index(n, local);
            if self.threads[t].state != ThreadState::Awaiting {
                continue;
            }
            self.threads[t].state = ThreadState::Recheck;
            let p = self.threads[t].proc;
            if Some(p) != by {
                self.wake(p);
            }
        }
    }

    /// Thread `t` checks its `wait_until` condition again. Polled now, it
    /// either waits on (its processor, acting as protocol processor or
    /// not, goes on as before) or has its next step ready, which runs once
    /// its processor returns to it (after giving up the role, if it holds
    /// it, by the policy's rules for a thread whose work can go on). The
    /// check costs a cache hit: what the thread's spin on its completion
    /// flag costs when the flag is in its cache (`start_resume`'s read of
    /// it, on a hit). The state `done` reads is the application's, which
    /// the simulator does not see: its handlers' and threads' accesses to
    /// it (`access`) are what charge its transfers between caches.
    pub(super) fn start_recheck(&mut self, p: usize, t: usize) {
        let n = self.procs[p].node;
        let Some(next) = self.check_condition(t) else { return };
        let th = &mut self.threads[t];
        let hit = self.cfg.machine.cache.hit_cycles;
        let cost = match next {
            Deferred::Op(Op::Await(_)) if th.shared.charged.get() == 0 => {
                th.state = ThreadState::Awaiting;
                self.nodes[n].awaiting += 1;
                if self.can_wait_quietly(p) {
                    return self.start_quiet_wait(p, hit);
                }
                hit
            }
            next => {
                let reissues = th.reissues;
                th.deferred = Some(next);
                th.state = ThreadState::Ready;
                hit.max(self.device_resume_cycles(reissues))
            }
        };
        self.start_busy(p, Cat::Wait, cost, 0, After::Nothing);
    }

    /// Checks thread `t`'s awaited condition: its next step (another
    /// `Op::Await` if the condition is still false), or None if the run is
    /// ending. A thread awaiting with a key that no handler of that key
    /// has touched since its last check would find its condition false
    /// again: the result of polling it is known, so it is not polled (in
    /// release builds; debug builds poll it and hold it to its promise).
    fn check_condition(&mut self, t: usize) -> Option<Deferred> {
        let th = &mut self.threads[t];
        let clean = th.watch.filter(|_| !th.dirty);
        if clean.is_some() && !cfg!(debug_assertions) {
            th.checked_at = self.nodes[self.procs[th.proc].node].handlers_run;
            return Some(Deferred::Op(Op::Await(clean)));
        }
        if !self.thread_ready(t, OpResult::Done) {
            return None;
        }
        let next = self.poll_task(t)?;
        let still_waits = matches!(next, Deferred::Op(Op::Await(_))) && self.threads[t].shared.charged.get() == 0;
        if let Some(key) = clean.filter(|_| !still_waits) {
            self.fail_thread(
                t,
                AmError::NotAllowed(format!(
                "a condition awaited with wait_until_keyed (key {key}) came true with no handler of that key run at \
                 its node since it was last checked; allowed: a key whose handlers are the only ones that change \
                 what the condition reads, or plain wait_until"
            )),
            );
            return None;
        }
        Some(next)
    }

    /// What a thread the dispatch device releases pays before it goes on
    /// (`pdq.*_resume_cycles`, by the kind of the node's protocol
    /// processors); 0 on a machine without a dispatch device, and, with
    /// `pdq.resume_after_misses_only`, for a thread that does not reissue
    /// a missed access (`reissues`).
    fn device_resume_cycles(&self, reissues: bool) -> u64 {
        let kind = self.cfg.run.dispatch.pp_kind;
        let pdq = self.cfg.machine.pdq.as_ref();
        pdq.filter(|d| reissues || !d.resume_after_misses_only).map_or(0, |d| d.resume_cycles(kind))
    }

    /// A thread's idle period ended: its processor runs it again as soon
    /// as whatever it is doing meanwhile (serving) lets it.
    pub(super) fn on_idle_end(&mut self, t: usize) {
        if self.threads[t].state != ThreadState::Paused {
            return;
        }
        self.thread_ready(t, OpResult::Done);
        self.wake(self.threads[t].proc);
    }

    /// Hands an error back to the thread that asked for a bad operation.
    fn reject_op(&mut self, t: usize, e: AmError) {
        if self.thread_ready(t, OpResult::Failed(e)) {
            self.run_thread(t);
        }
    }

    /// Starts `work` cycles of computation touching the private segment
    /// as `pattern` says, stalled first on the misses it takes; resumed
    /// work passes the epoch its misses were sampled at and the stall it
    /// still owes.
    pub(super) fn start_compute(&mut self, p: usize, work: u64, pattern: Pattern, resumed: Option<(u32, u64)>) {
        let n = self.procs[p].node;
        let local = self.procs[p].local;
        let (sampled_at, owed) = match resumed {
            Some((epoch, owed)) => (Some(epoch), owed),
            None => (None, 0),
        };
        let pr = &mut self.procs[p];
        let (stall, sampled) = self.nodes[n].mem.compute_misses(
            self.now,
            self.now + owed,
            local,
            pattern.accesses_in(work),
            pattern.write_fraction,
            sampled_at,
            &mut pr.rng,
        );
        let stall = owed + stall;
        self.run_segment(p, ComputeSegment { start: self.now, work, stall, sampled, synthetic: true, pattern });
    }

    /// Runs (or resumes) a thread's `Proc::access` of `lat` cycles, the
    /// first `stall` of them its misses' stall (already on the bus
    /// calendar). Like work, it is computation an interrupt may stop and
    /// that resumes afterwards, so an arrival is not held up by it.
    pub(super) fn start_access(&mut self, p: usize, lat: u64, stall: u64) {
        let work = lat - stall;
        let pattern = Pattern::synthetic(&self.cfg.machine.compute);
        self.run_segment(p, ComputeSegment { start: self.now, work, stall, sampled: 0, synthetic: false, pattern });
    }

    /// Starts a stretch of computation (its stall first, then its work).
    fn run_segment(&mut self, p: usize, seg: ComputeSegment) {
        let n = self.procs[p].node;
        self.procs[p].compute = Some(seg);
        self.start_busy(p, Cat::Compute, seg.stall.saturating_add(seg.work), seg.stall, After::Nothing);
        // A computing processor is a possible interrupt target.
        self.check_notify(n);
    }

    pub(super) fn fault(&mut self, t: usize, fault: OpFault) {
        self.fail_thread(t, AmError::NotAllowed(fault.describe().into()));
    }

    /// Ends the run with thread `t`'s error.
    fn fail_thread(&mut self, t: usize, error: AmError) {
        let th = &self.threads[t];
        self.fail(SimError::App { node: th.shared.node.0, thread: th.local, error });
    }
}
