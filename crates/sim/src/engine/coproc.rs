//! Policy coprocessor: each node's communication co-processor (IPPS 1996,
//! the Meiko CS-2's Elan) as a resource the engine schedules beside the
//! node's one main processor, under the paper's two Active-Message
//! libraries (Section 5.1). The mechanisms' timings are
//! [`crate::coproc::Coproc`]'s, on the node's own memory bus.
//!
//! - **coproc-am**: the main processor stores the message in its cache and
//!   triggers its co-processor with an uncached store; a sending thread
//!   reads the message (no data cache) and moves it by DMA, once the
//!   previous message on that channel was acknowledged (no buffer
//!   management). The arrival's event wakes the destination's dispatch
//!   thread for that source, which runs the handler on the thread engine at
//!   the co-processor's rate, every data word a bus transaction, and sends
//!   the reply itself. A reply handler writes a completion word the waiting
//!   main processor watches. The main processor is never interrupted, never
//!   polls, and runs no handler.
//! - **main-am**: the co-processor only moves messages. The main processor
//!   writes the message and a flag into its outgoing buffer; the sending
//!   thread sees the flag, checks the receive buffer at the destination is
//!   empty (a remote queue of depth one per sender) and deposits the
//!   message by DMA. The destination's main processor finds it only when it
//!   communicates: at a poll site, while its thread waits for a reply or
//!   idles, or once its thread is done. It then frees the buffer (a remote
//!   write by its co-processor) and runs the handler at its own speed.
//!   Nothing interrupts it, so a message waits for as long as the program
//!   computes: the notification delay is the program's.

use super::*;
use crate::coproc::{main_instructions, Buses, Coproc};
use crate::memory::WordTransfer;
use crate::stats::CoprocStats;
use finegrain_core::{CoprocLibrary, MachineConfig, MsgKind};
use std::collections::VecDeque;

/// The co-processors of the run and the state of their libraries.
pub(super) struct CoprocNodes {
    library: CoprocLibrary,
    hw: Coproc,
    nodes: usize,
    /// coproc-am: when channel `src * nodes + dst` may carry its next
    /// message (the previous one's acknowledgement is back at the sender).
    channel_free: Vec<u64>,
    /// main-am: the receive buffer at `dst` for `src` holds a message its
    /// main processor has not taken yet.
    buffer_full: Vec<bool>,
    /// main-am: messages a sending thread holds until that buffer is free,
    /// oldest first.
    held: Vec<VecDeque<u32>>,
    stats: Vec<CoprocStats>,
}

impl CoprocNodes {
    pub(super) fn new(m: &MachineConfig, library: CoprocLibrary, nodes: usize) -> Result<CoprocNodes, ConfigError> {
        let pairs = nodes * nodes;
        Ok(CoprocNodes {
            library,
            hw: Coproc::new(m, nodes)?,
            nodes,
            channel_free: vec![0; pairs],
            buffer_full: vec![false; pairs],
            held: vec![VecDeque::new(); pairs],
            stats: vec![CoprocStats::default(); nodes],
        })
    }

    fn pair(&self, src: usize, dst: usize) -> usize {
        src * self.nodes + dst
    }

    /// Node `n`'s co-processor statistics, with its bus words.
    pub(super) fn node_stats(&self, n: usize) -> CoprocStats {
        CoprocStats { bus_words: self.hw.coproc_bus_words[n], ..self.stats[n].clone() }
    }
}

/// The engine's nodes' memory buses, lent to the co-processor's
/// operations at the current cycle.
struct NodeBuses<'a> {
    nodes: &'a mut [Node],
    now: u64,
}

impl Buses for NodeBuses<'_> {
    fn now(&self) -> u64 {
        self.now
    }
    fn bus(&mut self, node: usize) -> &mut crate::bus::MemoryBus {
        &mut self.nodes[node].mem.bus
    }
}

/// Bytes of a message in memory and on the network: its handler's index
/// and arguments as words of the main processor's stores, then its payload.
fn message_bytes(msg: &Message, word_bytes: u64) -> u64 {
    (1 + msg.args.len() as u64) * word_bytes + msg.payload.len() as u64
}

impl<'a, 'h, T> Engine<'a, 'h, T> {
    /// The co-processors and the nodes' buses, borrowed together.
    fn coproc_parts(&mut self) -> (&mut CoprocNodes, NodeBuses<'_>) {
        let cp = self.coproc.as_mut().expect("policy coprocessor");
        (cp, NodeBuses { nodes: &mut self.nodes, now: self.now })
    }

    fn library(&self) -> Option<CoprocLibrary> {
        self.coproc.as_ref().map(|c| c.library)
    }

    fn msg_bytes(&self, msg: &Message) -> u64 {
        message_bytes(msg, self.cfg.machine.ni.word_bytes as u64)
    }

    /// The co-processor's words for `bytes` (its loads and stores).
    fn coproc_words(&self, bytes: u64) -> u64 {
        let word = self.coproc.as_ref().expect("policy coprocessor").hw.costs.word_bytes;
        bytes.div_ceil(word)
    }

    /// Processor `p` sends `msg` from cycle `t` (a thread's request, or a
    /// reply its handler composed under main-am): the main processor's
    /// part. Returns when the main processor is done with it.
    pub(super) fn coproc_send_from_main(&mut self, p: usize, t: u64, msg: Message) -> u64 {
        let n = self.procs[p].node;
        let words = self.msg_bytes(&msg).div_ceil(self.cfg.machine.ni.word_bytes as u64);
        self.nodes[n].stats.messages_sent += 1;
        let slot = self.store_message(msg);
        let (cp, mut b) = self.coproc_parts();
        let (done, taken) = match cp.library {
            CoprocLibrary::MainAm => {
                // The message and its flag into the outgoing buffer (lines
                // in its cache); the polling sending thread reads the flag
                // from that cache, one cache-to-cache read after the store.
                let written = cp.hw.main_cached_stores(t, words + 1);
                (written, written + cp.hw.costs.cache_to_cache.1)
            }
            _ => {
                let written = cp.hw.main_cached_stores(t, words);
                let triggered = cp.hw.main_trigger(&mut b, n, written);
                (triggered, triggered)
            }
        };
        self.queue.push(taken, EventKind::CoprocSend { msg: slot });
        done
    }

    /// A sending co-processor thread takes the message in `slot`.
    pub(super) fn on_coproc_send(&mut self, slot: u32) {
        let msg = self.messages[slot as usize].as_ref().expect("live message");
        let (src, dst) = (msg.src_node.index(), msg.dst_node.index());
        let bytes = self.msg_bytes(msg);
        let words = self.coproc_words(bytes);
        let now = self.now;
        let (cp, mut b) = self.coproc_parts();
        let pair = cp.pair(src, dst);
        let params = cp.hw.costs.params.clone();
        let delivered = match cp.library {
            CoprocLibrary::MainAm => {
                if cp.buffer_full[pair] {
                    // It waits on the buffer-free event, holding nothing.
                    return cp.held[pair].push_back(slot);
                }
                cp.buffer_full[pair] = true;
                let ran = cp.hw.thread(&mut b, src, now, params.send_thread_instructions as u64);
                // The remote buffer's state is a word the co-processor keeps.
                let checked = cp.hw.coproc_read(&mut b, src, ran, 1);
                cp.hw.hold_thread(src, checked);
                // The message and its flag.
                let flag = cp.hw.costs.word_bytes;
                cp.hw.dma(&mut b, src, dst, checked, bytes + flag).delivered
            }
            _ => {
                let free = cp.channel_free[pair];
                if free > now {
                    // The previous message is not acknowledged yet: the
                    // thread waits on that event, holding nothing.
                    self.queue.push(free, EventKind::CoprocSend { msg: slot });
                    return;
                }
                let ran = cp.hw.thread(&mut b, src, now, params.send_thread_instructions as u64);
                let read = cp.hw.coproc_read(&mut b, src, ran, words);
                cp.hw.hold_thread(src, read);
                let done = cp.hw.dma(&mut b, src, dst, read, bytes);
                cp.channel_free[pair] = done.acknowledged;
                done.delivered
            }
        };
        cp.stats[src].messages_sent += 1;
        self.queue.push(delivered, EventKind::CoprocDeliver { msg: slot });
    }

    /// A message's DMA has written it into its destination's memory.
    pub(super) fn on_coproc_deliver(&mut self, slot: u32) {
        let n = self.messages[slot as usize].as_ref().expect("live message").dst_node.index();
        self.delivered += 1;
        self.nodes[n].stats.messages_received += 1;
        match self.library() {
            Some(CoprocLibrary::MainAm) => self.deposit(n, slot),
            _ => self.handle_on_coproc(n, slot),
        }
    }

    /// main-am: the message lies in its receive buffer until the main
    /// processor polls. One that polls already (its thread waits or idles)
    /// is spinning on the buffer's flag and is woken to look.
    fn deposit(&mut self, n: usize, slot: u32) {
        let key = self.messages[slot as usize].as_ref().expect("live message").key;
        self.arrived_at[slot as usize] = self.now;
        let node = &mut self.nodes[n];
        node.rx.push(key, slot);
        node.stats.max_receive_queue = node.stats.max_receive_queue.max(node.rx.len() as u64);
        let p = node.first_proc;
        if !self.procs[p].busy {
            self.wake(p);
        }
    }

    /// main-am: the sender's co-processor learns its buffer at `dst` is
    /// empty; a message it held for it goes now.
    pub(super) fn on_coproc_buffer_free(&mut self, src: usize, dst: usize) {
        let cp = self.coproc.as_mut().expect("policy coprocessor");
        let pair = cp.pair(src, dst);
        cp.buffer_full[pair] = false;
        if let Some(slot) = cp.held[pair].pop_front() {
            self.on_coproc_send(slot);
        }
    }

    /// What processor `p` does next on a co-processor node: its thread's
    /// work, and under main-am the messages it finds whenever it polls.
    pub(super) fn decide_coproc(&mut self, p: usize) {
        let t = self.procs[p].thread.expect("a co-processor node's processor runs a thread");
        let n = self.procs[p].node;
        let polls = self.library() == Some(CoprocLibrary::MainAm);
        let found = polls && !self.nodes[n].rx.is_empty();
        match self.threads[t].state {
            ThreadState::Ready => self.run_thread(t),
            ThreadState::ReplyArrived => self.start_resume(p, t),
            ThreadState::Recheck => self.start_recheck(p, t),
            ThreadState::PollDrain if found => self.handle_polled(p),
            ThreadState::PollDrain => {
                if self.thread_ready(t, OpResult::Done) {
                    self.run_thread(t);
                }
            }
            ThreadState::Waiting | ThreadState::Awaiting | ThreadState::Finished | ThreadState::Paused if found => {
                self.handle_polled(p)
            }
            ThreadState::Waiting | ThreadState::Awaiting => self.go_idle(p, Cat::Wait),
            ThreadState::Finished | ThreadState::Paused => self.go_idle(p, Cat::Idle),
            ThreadState::Busy => unreachable!("a busy thread's processor is busy"),
        }
    }

    /// main-am: the main processor takes the oldest message it found.
    fn handle_polled(&mut self, p: usize) {
        let n = self.procs[p].node;
        let local = self.procs[p].local;
        let (slot, seq) = self.nodes[n].rx.take(0, local).expect("a message was found");
        self.start_handle(p, slot, seq);
    }

    /// A thread's poll site: under main-am it handles what its buffers
    /// hold, or reads its buffer flags (in its cache) and goes on; the
    /// co-processor libraries' poll is empty.
    pub(super) fn coproc_poll(&mut self, t: usize) {
        let p = self.threads[t].proc;
        let n = self.procs[p].node;
        if self.library() != Some(CoprocLibrary::MainAm) {
            return self.start_busy(p, Cat::Compute, 0, 0, After::ThreadOpDone);
        }
        if !self.nodes[n].rx.is_empty() {
            self.threads[t].state = ThreadState::PollDrain;
            return self.decide_coproc(p);
        }
        let hit = self.cfg.machine.cache.hit_cycles;
        self.start_busy(p, Cat::Compute, hit, 0, After::ThreadOpDone);
    }

    /// main-am: processor `p` reads a message out of its receive buffer
    /// (a miss on each line the DMA wrote, flag included), dispatches it,
    /// and has its co-processor tell the sender the buffer is free.
    /// Returns when the handler starts.
    pub(super) fn coproc_receive(&mut self, p: usize, msg: &Message) -> u64 {
        let n = self.procs[p].node;
        let src = msg.src_node.index();
        let line = self.cfg.machine.cache.line_bytes as u64;
        let bytes = self.msg_bytes(msg);
        let (cp, mut b) = self.coproc_parts();
        let lines = (bytes + cp.hw.costs.word_bytes).div_ceil(line);
        let mut t = b.now;
        for _ in 0..lines {
            t = cp.hw.main_sees_write(&mut b, n, t);
        }
        t += main_instructions(cp.hw.costs.params.dispatch_instructions as u64);
        let triggered = cp.hw.main_trigger(&mut b, n, t);
        let freed = cp.hw.remote_add(&mut b, n, src, triggered);
        self.queue.push(freed, EventKind::CoprocBufferFree { src: src as u32, dst: n as u32 });
        triggered
    }

    /// coproc-am: the arrival's event wakes node `n`'s dispatch thread for
    /// the message's source, which runs its handler.
    fn handle_on_coproc(&mut self, n: usize, slot: u32) {
        let msg = self.messages[slot as usize].take().expect("live message");
        self.free_messages.push(slot);
        let info = match self.handlers.info(msg.handler) {
            Ok(i) => i,
            Err(e) => return self.fail(SimError::Handler(e)),
        };
        let words = self.coproc_words(self.msg_bytes(&msg));
        let now = self.now;
        let (cp, mut b) = self.coproc_parts();
        // The dispatch code and the handler's own (its body's instructions,
        // at the co-processor's rate), then the message's words it reads.
        let dispatch = cp.hw.costs.params.dispatch_instructions as u64;
        let ran = cp.hw.thread(&mut b, n, now, dispatch + info.body_cycles);
        let start = cp.hw.coproc_read(&mut b, n, ran, words);
        let Some((end, reply)) = self.run_coproc_handler(n, &msg, start) else {
            return;
        };
        let cp = self.coproc.as_mut().expect("policy coprocessor");
        cp.hw.hold_thread(n, end);
        cp.stats[n].handlers += 1;
        if self.nodes[n].awaiting > 0 {
            // Threads that checked their conditions before this handler ran
            // check them again once it has ended; any that check later see
            // what it did.
            self.queue.push(end, EventKind::CoprocHandled { node: n as u32 });
        }
        match (msg.kind, reply) {
            (MsgKind::Request, Some(reply)) => self.reply_from_coproc(n, &msg, reply, end),
            // A one-way message's handler that did not reply (one of a
            // request's failed the run already).
            (MsgKind::Request, None) => {}
            // A reply to a one-way message: its handler's accesses are
            // timed, and no thread waits for it.
            (MsgKind::Reply, _) if msg.token == 0 => {}
            (MsgKind::Reply, _) => self.complete_on_coproc(n, msg, end),
        }
    }

    /// Runs the user's handler for `msg` on node `n`'s co-processor from
    /// cycle `t`; returns when it ends and its reply, or None if it failed
    /// (the run is ending).
    fn run_coproc_handler(&mut self, n: usize, msg: &Message, t: u64) -> Option<(u64, Option<Reply>)> {
        let table = self.handlers;
        let info = table.info(msg.handler).expect("checked by the caller");
        let f = table.function(msg.handler).expect("info exists");
        let threads = self.nodes[n].threads;
        let now = self.now;
        let cp = self.coproc.as_mut().expect("policy coprocessor");
        let mut ctx = CoprocCtx {
            hw: &mut cp.hw,
            nodes: &mut self.nodes,
            now,
            t,
            node: n,
            threads,
            line_bytes: self.cfg.machine.cache.line_bytes as u64,
            guard: ReplyGuard::new(msg.kind, &info.name),
            handlers: table.len(),
            reply: None,
            error: None,
        };
        self.running = Running::Handler(msg.handler);
        let outcome = f(&mut ctx, msg);
        self.running = Running::Engine;
        let (end, reply, error, replied) = (ctx.t, ctx.reply, ctx.error, ctx.guard.replied());
        self.nodes[n].handlers_run += 1;
        if let Some(e) = outcome.err().or(error) {
            self.fail(SimError::Handler(e));
            return None;
        }
        if msg.kind == MsgKind::Request && !replied && msg.token != 0 {
            self.fail(SimError::Handler(AmError::HandlerFailed {
                handler: info.name.clone(),
                reason:
                    "returned without replying to a request sent with Proc::request, whose thread would wait forever"
                        .into(),
            }));
            return None;
        }
        Some((end, reply))
    }

    /// coproc-am: the dispatch thread stores the reply's words (no data
    /// cache) and moves them by DMA to the requester, once the channel's
    /// previous message is acknowledged.
    fn reply_from_coproc(&mut self, n: usize, request: &Message, reply: Reply, t: u64) {
        self.count_reply(request.token);
        self.nodes[n].stats.messages_sent += 1;
        let out = Message {
            kind: MsgKind::Reply,
            src_node: NodeId(n as u32),
            src_thread: request.src_thread,
            dst_node: request.src_node,
            handler: reply.handler,
            key: SyncKey::NoSync,
            args: reply.args,
            payload: reply.payload,
            token: request.token,
        };
        let dst = request.src_node.index();
        let bytes = self.msg_bytes(&out);
        let words = self.coproc_words(bytes);
        let slot = self.store_message(out);
        let (cp, mut b) = self.coproc_parts();
        let written = cp.hw.coproc_write(&mut b, n, t, words);
        cp.hw.hold_thread(n, written);
        let pair = cp.pair(n, dst);
        // Waiting for the acknowledgement holds nothing but this thread.
        let start = written.max(cp.channel_free[pair]);
        let done = cp.hw.dma(&mut b, n, dst, start, bytes);
        cp.channel_free[pair] = done.acknowledged;
        cp.stats[n].messages_sent += 1;
        self.queue.push(done.delivered, EventKind::CoprocDeliver { msg: slot });
    }

    /// coproc-am: the reply handler done, the thread writes the request's
    /// completion word; the waiting main processor, spinning on its copy,
    /// misses on it once the write lands.
    fn complete_on_coproc(&mut self, n: usize, reply: Message, t: u64) {
        let global = self.thread_index(n, reply.src_thread.0);
        let (cp, mut b) = self.coproc_parts();
        let written = cp.hw.coproc_write(&mut b, n, t, 1);
        cp.hw.hold_thread(n, written);
        let seen = cp.hw.main_sees_write(&mut b, n, written);
        let th = &mut self.threads[global];
        th.reply = Some(reply);
        th.waiting_on = None;
        self.queue.push(seen, EventKind::CoprocSeen { thread: global as u32 });
    }

    /// coproc-am: the main processor has seen its request complete.
    pub(super) fn on_coproc_seen(&mut self, t: usize) {
        let reply = self.threads[t].reply.take().expect("the reply handler ran");
        self.record_latency(self.now - self.threads[t].issued_at);
        if self.thread_ready(t, OpResult::Reply(reply)) {
            self.wake(self.threads[t].proc);
        }
    }

    /// Each node's co-processor statistics, for the run's.
    pub(super) fn coproc_stats(&self, n: usize) -> Option<CoprocStats> {
        self.coproc.as_ref().map(|c| c.node_stats(n))
    }
}

/// A handler's view of the machine on a co-processor: its code runs at the
/// thread engine's rate, and with no data cache every word it loads or
/// stores is a transaction on the node's memory bus (a store invalidates
/// the main processor's copy of its line).
struct CoprocCtx<'e, 'n> {
    hw: &'e mut Coproc,
    nodes: &'e mut [Node],
    now: u64,
    t: u64,
    node: usize,
    threads: u32,
    line_bytes: u64,
    guard: ReplyGuard<'n>,
    handlers: usize,
    reply: Option<Reply>,
    error: Option<AmError>,
}

impl CoprocCtx<'_, '_> {
    fn refuse(&mut self, guard: Option<AmError>, handler: HandlerId) -> AmError {
        let e = guard.unwrap_or_else(|| AmError::HandlerFailed {
            handler: self.guard.handler().to_string(),
            reason: format!(
                "its reply names unknown handler id {} (the table has {} handlers)",
                handler.0, self.handlers
            ),
        });
        self.error.get_or_insert_with(|| e.clone());
        e
    }

    /// Words of `len` bytes at `offset` in each of lines `first..first+count`.
    fn words_per_line(&self, first: u32, count: u32, offset: u64, len: u32) -> Vec<(u32, u64)> {
        let line = self.line_bytes;
        let word = self.hw.costs.word_bytes;
        let end = offset + len as u64;
        (0..count as u64)
            .map(|i| {
                let start = (offset / line + i) * line;
                let bytes = end.min(start + line) - offset.max(start);
                (first + i as u32, bytes.div_ceil(word).max(1))
            })
            .collect()
    }
}

impl HandlerCtx for CoprocCtx<'_, '_> {
    fn node(&self) -> NodeId {
        NodeId(self.node as u32)
    }

    fn reply(&mut self, reply: Reply) -> Result<(), AmError> {
        match self.guard.admit_reply() {
            Ok(()) if reply.handler.index() < self.handlers => {
                self.reply = Some(reply);
                Ok(())
            }
            refused => Err(self.refuse(refused.err(), reply.handler)),
        }
    }

    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access) {
        let n = self.node;
        let (first, count) = match self.nodes[n].mem.map().lines(region, offset, len, self.threads) {
            Ok(lines) => lines,
            Err(reason) => {
                let handler = self.guard.handler().to_string();
                self.error.get_or_insert(AmError::HandlerFailed { handler, reason });
                return;
            }
        };
        let per_line = self.words_per_line(first, count, offset, len);
        if !kind.writes() {
            let words = per_line.iter().map(|&(_, w)| w).sum();
            let mut b = NodeBuses { nodes: self.nodes, now: self.now };
            self.t = self.hw.coproc_read(&mut b, n, self.t, words);
            return;
        }
        // Stores go through the node's memory so the main processor's
        // cached copies are invalidated; each word is a posted write of
        // the memory's occupancy, as `Coproc::coproc_write` times them.
        let (occupancy, _) = self.hw.costs.memory;
        let cost = WordTransfer { occupancy, posted_write: occupancy };
        for (line, words) in per_line {
            for _ in 0..words {
                self.t += self.nodes[n].mem.access_device(self.now, self.t, 0, line, kind, cost);
            }
            self.hw.coproc_bus_words[n] += words;
        }
    }

    /// Cycles the handler declares are main-processor instructions, which
    /// the co-processor runs at its own rate.
    fn charge(&mut self, cycles: u64) {
        // Over the limit a handler's body may have, and the conversion
        // could overflow: refused below as past the clock's limit.
        let run = if cycles > MAX_CYCLES { u64::MAX } else { self.hw.costs.instructions(cycles) };
        match self.t.checked_add(run).filter(|&t| t <= CLOCK_LIMIT) {
            Some(t) => self.t = t,
            None => {
                let reason = SimError::ClockLimit { now: self.t, duration: run }.to_string();
                let handler = self.guard.handler().to_string();
                self.error.get_or_insert(AmError::HandlerFailed { handler, reason });
            }
        }
    }
}
