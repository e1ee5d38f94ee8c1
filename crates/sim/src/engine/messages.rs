//! Messages: arrival at a node's queue, sending through the NI, and
//! handling (dispatch, key locks, the handler's timed accesses, its reply).
//! [`SimHandlerCtx`] is the handler's view of the simulated machine.

use super::Submitted;
use super::*;
use finegrain_core::check_send_target;

impl<'a, 'h, T> Engine<'a, 'h, T> {
    pub(super) fn on_arrive(&mut self, slot: u32) {
        let msg = self.messages[slot as usize].as_ref().expect("live message");
        let (n, key) = (msg.dst_node.index(), msg.key);
        self.ni.arrive(&mut self.nodes[n].mem, self.now, n, msg);
        self.arrived_at[slot as usize] = self.now;
        let node = &mut self.nodes[n];
        node.rx.push(key, slot);
        if let Some(last) = node.last_arrival {
            let gap_x16 = (self.now - last) * 16;
            node.arrival_gap_x16 = Some(match node.arrival_gap_x16 {
                Some(avg) => avg - avg / GAP_AVERAGE_WEIGHT + gap_x16 / GAP_AVERAGE_WEIGHT,
                None => gap_x16,
            });
        }
        node.last_arrival = Some(self.now);
        node.stats.messages_received += 1;
        node.stats.max_receive_queue = node.stats.max_receive_queue.max(node.rx.len() as u64);
        self.delivered += 1;
        if self.parallel {
            return self.kick(n);
        }
        match node.role {
            Some(h) => self.wake(h),
            None => self.check_notify(n),
        }
    }

    /// Processor `p` hands the message to its NI from cycle `t` (see
    /// [`NiModel::send`]); the message reaches its destination's queue at
    /// its `Arrive` event. Returns the cycle the processor is done.
    pub(super) fn send_message(&mut self, p: usize, t: u64, msg: Message) -> u64 {
        if self.coproc.is_some() {
            return self.coproc_send_from_main(p, t, msg);
        }
        let n = self.procs[p].node;
        if msg.dst_node.index() == n {
            return self.send_local(p, t, msg);
        }
        let by = self.mover(p);
        let sent = self.ni.send(&mut self.nodes[n].mem, self.now, t, n, by, &msg);
        self.nodes[n].stats.messages_sent += 1;
        self.trace_message(&msg, false, t, [sent.done, sent.injected, sent.arrive]);
        let dst = msg.dst_node.0;
        let slot = self.store_message(msg);
        if self.sink.is_some() {
            self.trace_sent(p, t, slot, dst);
        }
        self.queue.push(sent.arrive, EventKind::Arrive { msg: slot });
        sent.done
    }

    /// A message to the sender's own node is a local protocol event, not a
    /// network message: a block access fault the access-control hardware
    /// raises on a thread's bus transaction, or a protocol message a
    /// handler sends its own node. The sender pays
    /// `protocol.local_event_cycles` (HPCA 1999 Table 1: "detect miss,
    /// issue bus transaction"); the event reaches the node's queue with
    /// that bus transaction (a posted uncached write to the device) from
    /// a processor on the memory bus, at once from one on the device. No
    /// NI port or network is involved.
    fn send_local(&mut self, p: usize, t: u64, msg: Message) -> u64 {
        let n = self.procs[p].node;
        let done = t + self.cfg.machine.protocol.local_event_cycles;
        let arrive = match self.mover(p) {
            Mover::Device { .. } => done,
            Mover::Bus { .. } => {
                let ni = &self.cfg.machine.ni;
                let (occ, lat) = (ni.uncached_write_occupancy, ni.uncached_write_latency);
                self.nodes[n].mem.bus.transact(self.now, done, Phases::Write, occ, lat).done
            }
        };
        self.nodes[n].stats.local_events += 1;
        self.trace_message(&msg, true, t, [done, done, arrive]);
        let dst = msg.dst_node.0;
        let slot = self.store_message(msg);
        if self.sink.is_some() {
            self.trace_sent(p, t, slot, dst);
        }
        self.queue.push(arrive, EventKind::Arrive { msg: slot });
        done
    }

    /// Records a message's passage in a traced run.
    /// `times`: when the sender was done, the payload injected, the
    /// message arrived.
    fn trace_message(&mut self, msg: &Message, local: bool, from: u64, times: [u64; 3]) {
        if self.cfg.trace_handlers {
            let (handler, src, dst) = (msg.handler.0 as u32, msg.src_node.0, msg.dst_node.0);
            let [sent, injected, arrive] = times;
            self.trace.push(TraceEvent::Message { handler, src, dst, local, from, sent, injected, arrive });
        }
    }

    /// Gives the message in `slot`, which processor `p` sends from `t`, its
    /// timeline id and tells the sink.
    #[cold]
    fn trace_sent(&mut self, p: usize, t: u64, slot: u32, dst: u32) {
        let id = self.next_flow;
        self.next_flow += 1;
        if self.flows.len() <= slot as usize {
            self.flows.resize(slot as usize + 1, 0);
        }
        self.flows[slot as usize] = id;
        let (node, proc) = (self.procs[p].node as u32, self.procs[p].local as u32);
        if let Some(sink) = &self.sink {
            sink.borrow_mut().sent(id, node, proc, dst, t);
        }
    }

    /// Puts a message in flight into the slab; returns its slot.
    pub(super) fn store_message(&mut self, msg: Message) -> u32 {
        match self.free_messages.pop() {
            Some(s) => {
                self.messages[s as usize] = Some(msg);
                s
            }
            None => {
                self.messages.push(Some(msg));
                self.arrived_at.push(0);
                (self.messages.len() - 1) as u32
            }
        }
    }

    /// How processor `p` moves message words to and from the NI.
    #[inline]
    fn mover(&self, p: usize) -> Mover {
        match self.embedded_word_cycles(p) {
            Some(word_cycles) => Mover::Device { word_cycles },
            None => Mover::Bus { local: self.procs[p].local },
        }
    }

    /// What processor `p` is if it is a protocol processor on the NI
    /// device (embedded, or a hardware protocol engine); None for a
    /// processor on the memory bus.
    #[inline]
    fn on_device(&self, p: usize) -> Option<PpKind> {
        let kind = self.cfg.run.dispatch.pp_kind;
        (kind.on_device() && self.procs[p].dedicated).then_some(kind)
    }

    /// How processor `p` reaches node memory if it is a cacheless agent on
    /// the device: an embedded processor without a data cache moves words
    /// over the bus; a hardware protocol engine moves whole lines at
    /// memory timing (S-COMA's model counts only memory access times, HPCA
    /// 1999 Section 5). None for a processor with a data cache (SMP, or
    /// embedded with one).
    fn device_access(&self, p: usize) -> Option<DeviceAccess> {
        let kind = self.on_device(p)?;
        let m = &self.cfg.machine;
        let words = self.ni.device_words();
        let line_bytes = m.cache.line_bytes as u64;
        if kind == PpKind::Hardware {
            return Some(DeviceAccess {
                word_occupancy: m.bus.memory_occupancy,
                posted_write: words.posted_write,
                word_bytes: line_bytes,
                line_bytes,
            });
        }
        if m.pdq.as_ref().is_some_and(|d| d.embedded_data_cache) {
            return None;
        }
        Some(DeviceAccess {
            word_occupancy: words.occupancy,
            posted_write: words.posted_write,
            word_bytes: words.word_bytes,
            line_bytes,
        })
    }

    /// How processor `p` reaches `region` (memory for any region but the
    /// protocol state): a DSM's access tags as [`Engine::state_access`]
    /// says, its directory entries the same unless
    /// `pdq.directory_in_memory` puts them in memory for a software
    /// protocol processor.
    pub(super) fn region_access(&self, p: usize, region: Region) -> StateAccess {
        match region {
            Region::AccessTags => self.state_access(p),
            Region::Directory if !self.directory_in_memory(p) => self.state_access(p),
            _ => StateAccess::Memory,
        }
    }

    /// Whether processor `p` keeps the directory entries in memory: a
    /// software protocol processor (or a thread) on a machine whose device
    /// leaves the directory to them.
    fn directory_in_memory(&self, p: usize) -> bool {
        let in_memory = self.cfg.machine.pdq.as_ref().is_some_and(|d| d.directory_in_memory);
        in_memory && self.on_device(p) != Some(PpKind::Hardware)
    }

    /// How processor `p` reaches the device's protocol state: on a machine
    /// with a dispatch device it is the device's own state (a DSM's access
    /// tags, beside the fine-grain access control, and its directory
    /// entries unless they are memory), read and written a word at a time,
    /// by a hardware engine in its own cycles, by an embedded processor on
    /// its cache bus (as message words), and by a processor on the memory
    /// bus with uncached loads and posted uncached stores. Without a
    /// dispatch device it is memory, through the caches.
    pub(super) fn state_access(&self, p: usize) -> StateAccess {
        let m = &self.cfg.machine;
        let Some(pdq) = m.pdq.as_ref() else { return StateAccess::Memory };
        let word_bytes = m.ni.word_bytes as u64;
        match self.on_device(p) {
            Some(PpKind::Hardware) => StateAccess::Device { word_cycles: pdq.hardware_state_cycles, word_bytes },
            Some(_) => StateAccess::Device { word_cycles: pdq.embedded_word_cycles, word_bytes },
            None => StateAccess::Uncached {
                word_bytes,
                read: (m.ni.uncached_read_occupancy, m.ni.uncached_read_latency),
                write: (m.ni.uncached_write_occupancy, m.ni.uncached_write_latency),
            },
        }
    }

    /// A thread's access to device state (see [`Engine::state_access`]):
    /// its latency, or None if `region` is memory.
    pub(super) fn device_state_access(&mut self, p: usize, region: Region, len: u32, kind: Access) -> Option<u64> {
        let state = self.region_access(p, region);
        let n = self.procs[p].node;
        state.time(&mut self.nodes[n].mem, self.now, self.now, len, kind)
    }

    /// One word access to `line` by a protocol processor: through its cache
    /// (SMP) or over the bus (embedded). Returns the latency.
    fn pp_access(&mut self, p: usize, t: u64, line: u32, kind: Access) -> u64 {
        let n = self.procs[p].node;
        let local = self.procs[p].local;
        match self.device_access(p) {
            Some(d) => {
                let cost = WordTransfer { occupancy: d.word_occupancy, posted_write: d.posted_write };
                self.nodes[n].mem.access_device(self.now, t, local, line, kind, cost)
            }
            None => self.nodes[n].mem.access(self.now, t, local, line, kind).0,
        }
    }

    /// Protocol processors on the device reach its queues without the
    /// memory bus: the cycles per message word (none for a hardware
    /// engine, whose sending is one action), or None for an SMP processor.
    fn embedded_word_cycles(&self, p: usize) -> Option<u64> {
        match self.on_device(p)? {
            PpKind::Embedded => Some(self.cfg.machine.pdq.as_ref().map_or(0, |d| d.embedded_word_cycles)),
            _ => Some(0),
        }
    }

    /// A hardware protocol engine's cycles per action (its handler's work,
    /// each message it sends), or None for a processor that runs handler
    /// instructions.
    fn hardware_action(&self, p: usize) -> Option<u64> {
        let hardware = self.on_device(p) == Some(PpKind::Hardware);
        hardware.then(|| self.cfg.machine.pdq.as_ref().map_or(0, |d| d.hardware_action_cycles))
    }

    /// Runs the handler of the message in `slot` (queue entry `seq`): notice
    /// and dispatch it, run the handler (taking its key's lock under the
    /// spin-lock discipline), send the reply or complete the waiting thread.
    pub(super) fn start_handle(&mut self, p: usize, slot: u32, seq: u64) {
        let n = self.procs[p].node;
        let local = self.procs[p].local;
        let msg = self.messages[slot as usize].take().expect("live message");
        self.free_messages.push(slot);
        let flow = if self.sink.is_some() { self.flows.get(slot as usize).copied().unwrap_or(0) } else { 0 };
        self.procs[p].stint_handled += 1;
        let waited = self.now - self.arrived_at[slot as usize];
        self.nodes[n].delays.saturating_record(waited);
        let m = &self.cfg.machine;
        let mut t = self.receive(p, &msg);
        let embedded = self.embedded_word_cycles(p).is_some();
        let key = msg.key;
        let table = self.handlers;
        let info = match table.info(msg.handler) {
            Ok(i) => i,
            Err(e) => return self.fail(SimError::Handler(e)),
        };
        if !embedded {
            // Embedded processors run handlers from the device's own
            // instruction memory.
            let (first, count) = self.code.handlers[msg.handler.index()];
            t += self.nodes[n].mem.access_lines(self.now, t, local, first, count, Access::Read).0;
        }
        let lock = self.lock_key(p, &msg, &mut t);
        let mut held = None;
        let body = t;
        let action = self.hardware_action(p);
        // A hardware engine runs no instructions: its handler is an action.
        t += action.unwrap_or(info.body_cycles);
        // Borrowed from the table (which outlives the engine), not cloned:
        // a clone of the `Arc` is two atomic operations per handler.
        let f = table.function(msg.handler).expect("info exists");
        let threads = self.nodes[n].threads;
        let device = self.device_access(p);
        let state = self.state_access(p);
        let directory = self.region_access(p, Region::Directory);
        let mut ctx = SimHandlerCtx {
            mem: &mut self.nodes[n].mem,
            now: self.now,
            t,
            proc: local,
            node: NodeId(n as u32),
            threads,
            answer: Answer::new(&msg, &info.name, table.len()),
            handlers: table.len(),
            sends: Vec::new(),
            nodes: self.cfg.run.topology.nodes,
            device,
            state,
            directory,
            instructions_free: action.is_some(),
            first_global: None,
        };
        self.running = Running::Handler(msg.handler);
        let outcome = f(&mut ctx, &msg);
        self.running = Running::Engine;
        let (t_after, sends, first_global) = (ctx.t, ctx.sends, ctx.first_global);
        let answered = ctx.answer.end(outcome);
        self.handler_code_ran(n, msg.key);
        t = t_after;
        let reply = match answered {
            Ok(reply) => reply,
            Err(e) => return self.fail(SimError::Handler(e)),
        };
        let traced = Traced { handler: msg.handler.0 as u32, body, first_global, done: t, flow };
        // Protocol messages go out while the handler still holds its key:
        // writing them into the NI is part of its work (Table 1's "send").
        for out in sends {
            t = self.send_message(p, t + action.unwrap_or(0), out);
        }
        if let Some((k, acquired)) = lock {
            t = self.unlock_key(p, k, t);
            held = Some((acquired, t));
        }
        match msg.kind {
            MsgKind::Request => {
                // Without a reply only if none was owed (a one-way message).
                let Some(reply) = reply else {
                    return self.end_handler(p, t, key, seq, held, traced);
                };
                self.count_reply(msg.token);
                // A one-way message's reply keeps its token 0.
                let out = Message {
                    kind: MsgKind::Reply,
                    src_node: NodeId(n as u32),
                    src_thread: msg.src_thread,
                    dst_node: msg.src_node,
                    handler: reply.handler,
                    key: SyncKey::NoSync,
                    args: reply.args,
                    payload: reply.payload,
                    token: msg.token,
                };
                t = self.send_message(p, t, out);
            }
            // A reply to a one-way message: its handler recorded what it
            // brought, and no thread waits for it.
            MsgKind::Reply if msg.token == 0 => {}
            MsgKind::Reply => {
                // Mark the request complete: the waiting thread spins on a
                // flag in its own line.
                let global = self.thread_index(n, msg.src_thread.0);
                t += m.protocol.completion_cycles;
                let flag = self.nodes[n].mem.map().flag_line(msg.src_thread.0);
                t += self.pp_access(p, t, flag, Access::Write);
                self.procs[p].completion = Some((global, msg));
            }
        }
        self.end_handler(p, t, key, seq, held, traced);
    }

    /// Counts a reply sent to the request with `token`: one per request,
    /// which the run's rates and progress count, or one of the replies a
    /// one-way message's handler chose to send (token 0).
    pub(super) fn count_reply(&mut self, token: u64) {
        if token == 0 {
            self.one_way_replies += 1;
        } else {
            self.replies += 1;
        }
    }

    /// The handler on `p`, whose work ends at `t` (the key lock it held
    /// from and until when, if one), tells the dispatch device it is done
    /// and is timed as `p`'s activity, whose end lets threads awaiting at
    /// the node check their conditions again.
    fn end_handler(&mut self, p: usize, mut t: u64, key: SyncKey, seq: u64, held: Option<(u64, u64)>, traced: Traced) {
        let (n, local) = (self.procs[p].node, self.procs[p].local);
        t = self.finish_dispatch(p, t, key, seq);
        self.procs[p].stats.handlers += 1;
        let node = &mut self.nodes[n];
        node.stats.last_handler_end = node.stats.last_handler_end.max(t);
        // The dispatch disciplines promise what the check verifies; a
        // breach is the simulator's own bug, and no workload could see it.
        let span = HandlerSpan { node: n as u32, proc: local as u32, key, start: self.now, end: t, lock: held };
        if let Err(e) = node.key_check.admit(span) {
            return self.fail(SimError::Invariant(e));
        }
        if self.cfg.trace_handlers {
            self.spans.push(span);
            let Traced { handler, body, first_global, done, .. } = traced;
            let (node, proc, start) = (n as u32, local as u32, self.now);
            self.trace.push(TraceEvent::Handler { node, proc, handler, start, body, first_global, done, end: t });
        }
        if self.sink.is_some() {
            self.trace_handler(p, t, traced);
        }
        let duration = t - self.now;
        self.start_busy(p, Cat::Handler, duration, 0, After::Handled);
    }

    /// Tells the sink of the handler `p` runs from now to `end`.
    #[cold]
    fn trace_handler(&mut self, p: usize, end: u64, traced: Traced) {
        let Some(sink) = &self.sink else { return };
        let (node, proc) = (self.procs[p].node as u32, self.procs[p].local as u32);
        let name = self.handlers.info(HandlerId(traced.handler as u16)).map_or("handler", |i| i.name.as_str());
        sink.borrow_mut().handler(traced.flow, node, proc, name, self.now, end);
    }

    /// Noticing a message and dispatching it, up to the handler's first
    /// instruction; returns the cycle the handler starts.
    fn receive(&mut self, p: usize, msg: &Message) -> u64 {
        if self.coproc.is_some() {
            return self.coproc_receive(p, msg);
        }
        let n = self.procs[p].node;
        let local = self.procs[p].local;
        let m = &self.cfg.machine;
        let by = self.mover(p);
        let mut t = self.ni.receive(&mut self.nodes[n].mem, self.now, self.now, n, by, msg);
        if let Mover::Device { .. } = by {
            // The dispatch register and the message sit on the embedded
            // processor's cache bus, or in the hardware engine itself.
            let dispatch = match self.hardware_action(p) {
                Some(_) => m.pdq.as_ref().map_or(0, |d| d.hardware_dispatch_cycles),
                None => m.pdq.as_ref().map_or(0, |d| d.embedded_dispatch_cycles),
            };
            return t + dispatch;
        }
        t += m.protocol.dispatch_cycles;
        let (first, count) = self.code.dispatch;
        t += self.nodes[n].mem.access_lines(self.now, t, local, first, count, Access::Read).0;
        if !self.device_dispatch {
            // The software dispatch loop's shared state (queue pointers):
            // a dispatch device keeps it.
            let (first, count) = self.nodes[n].mem.map().dispatch_state();
            t += self.nodes[n].mem.access_lines(self.now, t, local, first, count, Access::Write).0;
        }
        t
    }

    /// Spin-lock discipline: a handler with a numbered key takes the key's
    /// lock first, spinning while another handler holds it. Returns the key
    /// locked and when it was acquired, and advances `t` past the wait and
    /// the lock's read-modify-write.
    fn lock_key(&mut self, p: usize, msg: &Message, t: &mut u64) -> Option<(u64, u64)> {
        let SyncKey::Key(k) = msg.key else { return None };
        if self.cfg.run.dispatch.discipline != Discipline::SpinLock {
            return None;
        }
        let n = self.procs[p].node;
        let cached = self.device_access(p).is_none();
        let (acquired, watched) = self.nodes[n].locks.acquire_at(k, self.now, *t, cached);
        self.procs[p].spin += acquired - *t;
        self.charge_spinning(p, *t, acquired, &watched);
        let line = self.nodes[n].mem.map().key_lock_line(k);
        let rmw = if self.device_access(p).is_some() {
            // A cacheless processor's atomic swap: a read and a write.
            let read = self.pp_access(p, acquired, line, Access::Read);
            read + self.pp_access(p, acquired + read, line, Access::Write)
        } else {
            self.pp_access(p, acquired, line, Access::Write)
        };
        let instructions = self.cfg.machine.pdq.as_ref().map_or(0, |d| d.lock_cycles);
        *t = acquired + rmw + instructions;
        Some((k, acquired))
    }

    /// The bus traffic of spinning on a held lock from `from` to `until`. A
    /// cacheless (embedded) processor polls the lock word in memory, one
    /// read after another. A cached one first reads the held line from the
    /// holder's cache, then spins on its own copy; each release it watches
    /// is a store that must invalidate the waiters' copies (an upgrade, once
    /// per release however many wait), after which it re-reads the line from
    /// the releaser's cache; the re-read after the last release is the
    /// acquiring read-modify-write, charged already. Bus time only: the
    /// holders' handlers were timed when they started.
    fn charge_spinning(&mut self, p: usize, from: u64, until: u64, watched: &[Watched]) {
        let n = self.procs[p].node;
        let now = self.now;
        let bus = &self.cfg.machine.bus;
        match self.device_access(p) {
            Some(d) => {
                // One poll outstanding at a time: the next is issued when the
                // last one's word is back, so a busy bus slows the polling.
                let period = bus.memory_latency.max(1);
                let mut at = from;
                while at + period <= until {
                    at = self.nodes[n].mem.bus.transact(now, at, Phases::Read, d.word_occupancy, period).done;
                }
            }
            None => {
                let transfer = (bus.cache_to_cache_occupancy, bus.cache_to_cache_latency);
                let upgrade = (bus.upgrade_occupancy, bus.upgrade_latency);
                let b = &mut self.nodes[n].mem.bus;
                if from < until {
                    b.transact(now, from, Phases::Read, transfer.0, transfer.1);
                }
                for w in watched {
                    if w.first_sharer {
                        b.transact(now, w.at, Phases::AddressOnly, upgrade.0, upgrade.1);
                    }
                    if w.at < until {
                        b.transact(now, w.at, Phases::Read, transfer.0, transfer.1);
                    }
                }
            }
        }
    }

    /// Releases a key lock (a store to its line); returns when done.
    fn unlock_key(&mut self, p: usize, k: u64, t: u64) -> u64 {
        let n = self.procs[p].node;
        let line = self.nodes[n].mem.map().key_lock_line(k);
        let store = self.pp_access(p, t, line, Access::Write);
        let instructions = self.cfg.machine.pdq.as_ref().map_or(0, |d| d.lock_cycles);
        let end = t + store + instructions;
        self.nodes[n].locks.release(k, end);
        end
    }

    /// Dispatch device: the handler tells the device it is done (an
    /// uncached store to its dispatch register from an SMP processor, a
    /// register write on the device from an embedded one) and PDQ frees its
    /// key when the handler's activity ends.
    fn finish_dispatch(&mut self, p: usize, t: u64, key: SyncKey, seq: u64) -> u64 {
        if !self.device_dispatch {
            return t;
        }
        if self.cfg.run.dispatch.discipline == Discipline::Pdq {
            self.procs[p].serving = Some((key, seq));
        }
        if let Some(word_cycles) = self.embedded_word_cycles(p) {
            return t + word_cycles;
        }
        let n = self.procs[p].node;
        self.ni.register_write(&mut self.nodes[n].mem, self.now, t)
    }

    /// Threads are numbered node-major, like processors.
    /// A handler with `key` has run its code at node `n`: its effects are
    /// visible from now on. Threads awaiting a condition that a handler of
    /// this key could have made true must check it for real next time
    /// (`Proc::wait_until_keyed`); the sequential and nosync keys may
    /// touch anything.
    pub(super) fn handler_code_ran(&mut self, n: usize, key: SyncKey) {
        self.nodes[n].handlers_run += 1;
        let any = !matches!(key, SyncKey::Key(_));
        let first = self.thread_index(n, 0);
        let threads = self.nodes[n].threads as usize;
        for th in &mut self.threads[first..first + threads] {
            if th.watch.is_some_and(|w| any || key == SyncKey::Key(w)) {
                th.dirty = true;
            }
        }
    }

    pub(super) fn thread_index(&self, n: usize, local_thread: u32) -> usize {
        let per_node = self.nodes[n].threads as usize;
        n * per_node + local_thread as usize
    }

    /// A reply handler finished: the thread's request is complete. Its
    /// processor notices when it next reads its flag.
    pub(super) fn complete_request(&mut self, handler_proc: usize, t: usize, reply: Message) {
        let th = &mut self.threads[t];
        th.state = ThreadState::ReplyArrived;
        th.reply = Some(reply);
        th.waiting_on = None;
        let p = th.proc;
        if p != handler_proc {
            self.wake(p);
        }
    }

    /// The waiting thread reads its completion flag (a cache-to-cache
    /// transfer when another processor ran the reply handler).
    /// Whether threads' requests go through the protocol processor: the
    /// preset's mechanism, where a node has a single acting protocol
    /// processor (the serial discipline without a dispatch device).
    pub(super) fn requests_via_pp(&self) -> bool {
        self.cfg.machine.protocol.requests_via_pp && !self.parallel && !self.device_dispatch
    }

    /// Thread `t`'s request (or one-way message) through the protocol
    /// processor. Under Floating and Single its processor takes the role if
    /// it is free and sends as protocol processor; otherwise the thread
    /// stores the message's words into its request line and the acting (or
    /// dedicated) protocol processor reads it from there and sends it.
    /// `after` is what the thread does once its part is done.
    pub(super) fn submit_request(&mut self, t: usize, msg: Message, after: After) {
        let p = self.threads[t].proc;
        let n = self.procs[p].node;
        if self.cfg.run.policy.compute_procs_handle() && self.role_open(n) {
            self.procs[p].send_first = Some((msg, after));
            return self.start_acquire(p);
        }
        let words = (self.cfg.machine.ni.header_words as usize + msg.args.len()) as u64
            + msg.payload.len().div_ceil(self.cfg.machine.ni.word_bytes as usize) as u64;
        let line = self.nodes[n].mem.map().request_line(self.threads[t].local);
        let local = self.procs[p].local;
        // One store per word, the line claimed whole (it holds only this).
        let (lat, _) = self.nodes[n].mem.access(self.now, self.now, local, line, Access::Overwrite);
        let ready_at = self.now + lat + words;
        self.nodes[n].outbox.push_back(Submitted { msg, line, ready_at });
        self.start_busy(p, Cat::Send, ready_at - self.now, 0, after);
        // The protocol processor notices the request once it is stored.
        self.queue.push(ready_at, EventKind::Submitted { node: n as u32 });
    }

    /// A submitted request is stored: the node's protocol processor (or a
    /// processor that may take the role) is told.
    pub(super) fn on_submitted(&mut self, n: usize) {
        match self.nodes[n].role {
            Some(h) => self.wake(h),
            None => self.check_notify(n),
        }
    }

    /// The acting protocol processor's next submitted request, if one is
    /// stored.
    pub(super) fn take_submitted(&mut self, n: usize) -> Option<Submitted> {
        let ready = self.nodes[n].outbox.front().is_some_and(|s| s.ready_at <= self.now);
        if ready {
            self.nodes[n].outbox.pop_front()
        } else {
            None
        }
    }

    /// The protocol processor sends a thread's request: it reads the
    /// request line (from the submitting processor's cache), runs its
    /// dispatch loop for it, and writes the message into the NI.
    pub(super) fn start_forward(&mut self, p: usize, s: Submitted) {
        let (n, local) = (self.procs[p].node, self.procs[p].local);
        let (lat, _) = self.nodes[n].mem.access(self.now, self.now, local, s.line, Access::Read);
        let t = self.now + lat + self.cfg.machine.protocol.dispatch_cycles;
        let end = self.send_message(p, t, s.msg);
        self.start_busy(p, Cat::Handler, end - self.now, 0, After::Nothing);
    }

    /// A processor that took the role to send its own thread's request
    /// (or one-way message) sends it now, as protocol processor.
    pub(super) fn start_send_as_pp(&mut self, p: usize, msg: Message, after: After) {
        let end = self.send_message(p, self.now, msg);
        self.start_busy(p, Cat::Send, end - self.now, 0, after);
    }

    pub(super) fn start_resume(&mut self, p: usize, t: usize) {
        let n = self.procs[p].node;
        let flag = self.nodes[n].mem.map().flag_line(self.threads[t].local);
        let (lat, _) = self.nodes[n].mem.access(self.now, self.now, self.procs[p].local, flag, Access::Read);
        self.threads[t].state = ThreadState::Busy;
        self.start_busy(p, Cat::Wait, lat, 0, After::ThreadResumed);
    }
}

/// The simulator's [`HandlerCtx`]: every call advances the handler's
/// timeline on the processor running it.
struct SimHandlerCtx<'m, 'n> {
    mem: &'m mut NodeMemory,
    now: u64,
    t: u64,
    proc: usize,
    node: NodeId,
    threads: u32,
    answer: Answer<'n>,
    /// Handlers in the table, to check a protocol message's.
    handlers: usize,
    /// Protocol messages the handler sent ([`HandlerCtx::send`]), in order:
    /// the engine sends them when the handler's work is done.
    sends: Vec<Message>,
    /// The node count, to check a protocol message's destination.
    nodes: u32,
    /// An embedded processor reaches memory as a cacheless bus agent.
    device: Option<DeviceAccess>,
    /// How it reaches `Region::AccessTags`.
    state: StateAccess,
    /// How it reaches `Region::Directory`.
    directory: StateAccess,
    /// A hardware engine: charged instructions cost nothing.
    instructions_free: bool,
    /// When its first access to the global segment began (for the trace).
    first_global: Option<u64>,
}

/// What a simulated handler has answered so far, for every handler
/// context of the simulator: the request/reply rule's guard, the reply it
/// admitted, and the first thing the handler did wrong, which ends the run
/// even if the handler goes on (nothing else reports an access or a
/// refused reply it ignored).
pub(super) struct Answer<'n> {
    guard: ReplyGuard<'n>,
    reply: Option<Reply>,
    error: Option<AmError>,
}

impl<'n> Answer<'n> {
    pub(super) fn new(msg: &Message, handler: &'n str, handlers: usize) -> Answer<'n> {
        Answer { guard: ReplyGuard::new(msg, handler, handlers), reply: None, error: None }
    }

    /// Keeps `reply` if the rule admits it; a refused one ends the run.
    // Inlined as before the rule had checks: left out of line it would
    // copy the reply once more per call.
    #[inline(always)]
    pub(super) fn reply(&mut self, reply: Reply) -> Result<(), AmError> {
        match self.guard.admit_reply(reply.handler) {
            Ok(()) => {
                self.reply = Some(reply);
                Ok(())
            }
            Err(e) => Err(self.refuse(e)),
        }
    }

    /// Records `e` unless the handler already did something wrong, and
    /// hands it back.
    #[cold]
    pub(super) fn refuse(&mut self, e: AmError) -> AmError {
        self.error.get_or_insert_with(|| e.clone());
        e
    }

    /// Records that the handler failed for `reason`.
    #[cold]
    pub(super) fn fail(&mut self, reason: String) {
        if self.error.is_none() {
            self.error = Some(AmError::HandlerFailed { handler: self.guard.handler().to_string(), reason });
        }
    }

    /// The name of the handler answering.
    pub(super) fn handler(&self) -> &str {
        self.guard.handler()
    }

    /// What the handler came to once it returned `returned`: the reply it
    /// sent (None: it sent none, and owed none), or the first error: its
    /// own, one it ignored, or the reply it owed.
    pub(super) fn end(self, returned: Result<(), AmError>) -> Result<Option<Reply>, AmError> {
        returned?;
        if let Some(e) = self.error {
            return Err(e);
        }
        self.guard.finish()?;
        Ok(self.reply)
    }
}

/// What a handler's trace entry needs from its run: its handler, when its
/// first instruction ran, its first global access, and when its body and
/// accesses were done.
#[derive(Clone, Copy, Debug)]
struct Traced {
    handler: u32,
    body: u64,
    first_global: Option<u64>,
    done: u64,
    /// Its message's timeline id (0 when the run is not recorded).
    flow: u64,
}

/// How a processor reaches `Region::Directory` or `Region::AccessTags` (see
/// [`Engine::region_access`]).
#[derive(Clone, Copy, Debug)]
pub(super) enum StateAccess {
    /// Memory, through the caches (no dispatch device).
    Memory,
    /// On the device: cycles per word.
    Device { word_cycles: u64, word_bytes: u64 },
    /// Over the memory bus, a word at a time: uncached loads and posted
    /// uncached stores, each (occupancy, latency).
    Uncached { word_bytes: u64, read: (u64, u64), write: (u64, u64) },
}

impl StateAccess {
    /// The latency of accessing `len` bytes from cycle `t`, or None if the
    /// region is memory.
    fn time(&self, mem: &mut NodeMemory, now: u64, t: u64, len: u32, kind: Access) -> Option<u64> {
        match *self {
            StateAccess::Memory => None,
            StateAccess::Device { word_cycles, word_bytes } => {
                Some((len as u64).div_ceil(word_bytes).max(1) * word_cycles)
            }
            StateAccess::Uncached { word_bytes, read, write } => {
                let words = (len as u64).div_ceil(word_bytes).max(1);
                let done = if kind.writes() {
                    mem.bus.train(now, t, words, Phases::Write, write.0, write.1)
                } else {
                    mem.bus.train(now, t, words, Phases::Read, read.0, read.1)
                };
                Some(done - t)
            }
        }
    }
}

/// Bus costs of a cacheless embedded processor's word transfers.
#[derive(Clone, Copy, Debug)]
struct DeviceAccess {
    word_occupancy: u64,
    posted_write: u64,
    word_bytes: u64,
    line_bytes: u64,
}

impl DeviceAccess {
    /// Accesses `len` bytes at `offset` lying in lines `first..first+count`,
    /// one bus transaction per line; returns the latency.
    #[allow(clippy::too_many_arguments)]
    fn touch(
        &self,
        mem: &mut NodeMemory,
        now: u64,
        t: u64,
        proc: usize,
        first: u32,
        count: u32,
        offset: u64,
        len: u32,
        kind: Access,
    ) -> u64 {
        let mut spent = 0;
        let end = offset + len as u64;
        for i in 0..count as u64 {
            let line_start = (offset / self.line_bytes + i) * self.line_bytes;
            let bytes = end.min(line_start + self.line_bytes) - offset.max(line_start);
            let occupancy = self.word_occupancy * bytes.div_ceil(self.word_bytes).max(1);
            let cost = WordTransfer { occupancy, posted_write: self.posted_write };
            spent += mem.access_device(now, t + spent, proc, first + i as u32, kind, cost);
        }
        spent
    }
}

impl SimHandlerCtx<'_, '_> {
    /// How the handler reaches `region` if it is device state; None if
    /// it is memory.
    fn device_state(&self, region: Region) -> Option<StateAccess> {
        let state = match region {
            Region::AccessTags => self.state,
            Region::Directory => self.directory,
            _ => return None,
        };
        (!matches!(state, StateAccess::Memory)).then_some(state)
    }
}

impl HandlerCtx for SimHandlerCtx<'_, '_> {
    fn node(&self) -> NodeId {
        self.node
    }

    /// A refused reply ends the run even if the handler ignores the error
    /// (`let _ = ctx.reply(..)`): the rule it breaks is what keeps active
    /// messages deadlock-free. A reply naming no handler is refused here,
    /// naming the replying handler, rather than at the node it would reach.
    #[inline(always)]
    fn reply(&mut self, reply: Reply) -> Result<(), AmError> {
        self.answer.reply(reply)
    }

    fn send(
        &mut self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> Result<(), AmError> {
        if let Err(e) = check_send_target(dst, self.nodes, handler, self.handlers) {
            return Err(self.answer.refuse(e));
        }
        self.sends.push(Message {
            kind: MsgKind::Request,
            src_node: self.node,
            src_thread: ThreadId(0),
            dst_node: dst,
            handler,
            key,
            args,
            payload,
            token: 0,
        });
        Ok(())
    }

    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access) {
        match self.mem.map().lines(region, offset, len, self.threads) {
            Ok(_) if self.device_state(region).is_some() => {
                let state = self.device_state(region).expect("just checked");
                self.t += state.time(self.mem, self.now, self.t, len, kind).unwrap_or(0);
            }
            Ok((first, count)) => {
                if region == Region::Global && self.first_global.is_none() {
                    self.first_global = Some(self.t);
                }
                self.t += match &self.device {
                    Some(d) => d.touch(self.mem, self.now, self.t, self.proc, first, count, offset, len, kind),
                    None => self.mem.access_bytes(self.now, self.t, self.proc, (first, count), offset, len, kind).0,
                };
            }
            Err(reason) => self.answer.fail(reason),
        }
    }

    fn charge(&mut self, cycles: u64) {
        if self.instructions_free {
            return;
        }
        match self.t.checked_add(cycles).filter(|&t| t <= CLOCK_LIMIT) {
            Some(t) => self.t = t,
            None => self.answer.fail(SimError::ClockLimit { now: self.t, duration: cycles }.to_string()),
        }
    }
}
