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
//! - **optimized** (Section 5.2): Split-C's handlers, marked with their
//!   [`LibraryOp`], are invoked directly with the Elan's hardware, with no
//!   sending or dispatch thread. The main processor counts the operation
//!   in its half of the split counter (a cached store), builds a DMA
//!   descriptor in its cache and triggers it (an uncached store); then
//!   - a put's DMA writes the data at the owner, where the handler runs
//!     "by hardware" (its words are the DMA's, timed by the DMA), and the
//!     DMA's completion back at the requester wakes its counter thread,
//!     which runs the acknowledgement's handler (a read and a write of the
//!     counter word);
//!   - a get's DMA carries its descriptor to the owner and the requester's
//!     co-processor triggers it there (a one-word remote transaction); the
//!     request's handler reads the words at the trigger, the DMA brings
//!     them back, and its arrival wakes the requester's counter thread,
//!     which runs the reply's handler;
//!   - a store's (and a control message's: barrier arrivals, store
//!     counts, an atomic function's answer) DMA writes the data, then the
//!     requester's co-processor adds to the owner's counter remotely once
//!     the DMA is done; the handler runs when the add lands, no thread at
//!     the owner.
//!
//!   Threads waiting at a node see a completion when its main processor
//!   sees the counter word change. Unmarked (user) handlers go as under
//!   coproc-am.
//!
//! User atomic functions (handlers marked [`LibraryOp::Atomic`]) run on
//! the owner's main processor in every library, which polls for them
//! (Section 3): under coproc-am the dispatch thread leaves the message for
//! it (a flag it writes), under optimized the requester's DMA writes it
//! into the main processor's buffer with its flag, as main-am's remote
//! queue does. The main processor runs it when it polls, waits or is
//! done, as main-am handles every message, and its reply goes out through
//! the library's own send path.
//!
//! A coproc-am channel carries one message at a time: messages waiting
//! for the previous one's acknowledgement queue on the channel, oldest
//! first, and the next goes when the acknowledgement is back.

use super::messages::Answer;
use super::*;
use crate::coproc::{main_instructions, Buses, Coproc};
use crate::memory::WordTransfer;
use crate::stats::CoprocStats;
use finegrain_core::{CoprocLibrary, LibraryOp, MachineConfig, MsgKind};
use std::collections::VecDeque;

/// How the library moves a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// Its generic Active-Message path: main-am's remote queue,
    /// coproc-am's sending and dispatch threads.
    Generic,
    /// Optimized: a put, a get, a store (or control message) done with
    /// the Elan's DMA engine, events and remote atomic adds.
    Put,
    Get,
    Store,
    /// An atomic function's request, for the owner's main processor.
    Main,
}

/// The co-processors of the run and the state of their libraries.
pub(super) struct CoprocNodes {
    library: CoprocLibrary,
    hw: Coproc,
    nodes: usize,
    /// coproc-am: when channel `src * nodes + dst` may carry its next
    /// message (the previous one's acknowledgement is back at the sender).
    channel_free: Vec<u64>,
    /// coproc-am: messages waiting for their channel, oldest first. While
    /// any wait, one [`EventKind::CoprocChannelFree`] of the channel is
    /// pending.
    waiting: Vec<VecDeque<u32>>,
    /// main-am: the receive buffer at `dst` for `src` holds a message its
    /// main processor has not taken yet.
    buffer_full: Vec<bool>,
    /// main-am: messages a sending thread holds until that buffer is free,
    /// oldest first.
    held: Vec<VecDeque<u32>>,
    /// optimized: when each put's DMA (by its message's slot) is
    /// acknowledged at the requester.
    acked: Vec<u64>,
    /// The program has atomic functions: the library's poll reads the
    /// flag of the main processor's buffer for them (coproc-am, optimized).
    atomics: bool,
    stats: Vec<CoprocStats>,
}

impl CoprocNodes {
    pub(super) fn new(
        m: &MachineConfig,
        library: CoprocLibrary,
        nodes: usize,
        handlers: &HandlerTable,
    ) -> Result<CoprocNodes, ConfigError> {
        let pairs = nodes * nodes;
        let atomics = (0..handlers.len()).any(|i| handlers.library_op(HandlerId(i as u16)) == Some(LibraryOp::Atomic));
        Ok(CoprocNodes {
            library,
            hw: Coproc::new(m, nodes)?,
            nodes,
            channel_free: vec![0; pairs],
            waiting: vec![VecDeque::new(); pairs],
            buffer_full: vec![false; pairs],
            held: vec![VecDeque::new(); pairs],
            acked: Vec::new(),
            atomics,
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
        let route = self.route(&msg);
        if self.library() == Some(CoprocLibrary::Optimized) && route != Route::Generic {
            return self.direct_send(n, t, msg, route);
        }
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

    /// How the library moves `msg`.
    fn route(&self, msg: &Message) -> Route {
        let Some(library) = self.library() else { return Route::Generic };
        let request = msg.kind == MsgKind::Request;
        match (library, self.handlers.library_op(msg.handler)) {
            (CoprocLibrary::MainAm, _) => Route::Generic,
            (_, Some(LibraryOp::Atomic)) if request => Route::Main,
            (CoprocLibrary::CoprocAm, _) => Route::Generic,
            (CoprocLibrary::Optimized, Some(LibraryOp::PutRequest)) if request => Route::Put,
            (CoprocLibrary::Optimized, Some(LibraryOp::GetRequest)) if request => Route::Get,
            // One-way: a request a thread waits on needs its reply, which
            // the hardware's add does not carry.
            (CoprocLibrary::Optimized, Some(LibraryOp::Store | LibraryOp::Control)) if !request || msg.token == 0 => {
                Route::Store
            }
            _ => Route::Generic,
        }
    }

    /// A sending co-processor thread takes the message in `slot`.
    pub(super) fn on_coproc_send(&mut self, slot: u32) {
        let msg = self.messages[slot as usize].as_ref().expect("live message");
        let (src, dst) = (msg.src_node.index(), msg.dst_node.index());
        let bytes = self.msg_bytes(msg);
        let now = self.now;
        let cp = self.coproc.as_mut().expect("policy coprocessor");
        let pair = cp.pair(src, dst);
        if cp.library != CoprocLibrary::MainAm {
            let free = cp.channel_free[pair];
            if cp.waiting[pair].is_empty() && free <= now {
                return self.transmit(slot);
            }
            // The previous message is not acknowledged yet: the thread
            // waits on that event, holding nothing, behind any message
            // already waiting for the channel.
            cp.waiting[pair].push_back(slot);
            if cp.waiting[pair].len() == 1 {
                self.queue.push(free, EventKind::CoprocChannelFree { src: src as u32, dst: dst as u32 });
            }
            return;
        }
        if cp.buffer_full[pair] {
            // It waits on the buffer-free event, holding nothing.
            return cp.held[pair].push_back(slot);
        }
        cp.buffer_full[pair] = true;
        let params = cp.hw.costs.params.clone();
        let (cp, mut b) = self.coproc_parts();
        let ran = cp.hw.thread(&mut b, src, now, params.send_thread_instructions as u64);
        // The remote buffer's state is a word the co-processor keeps.
        let checked = cp.hw.coproc_read(&mut b, src, ran, 1);
        cp.hw.hold_thread(src, checked);
        // The message and its flag.
        let flag = cp.hw.costs.word_bytes;
        let delivered = cp.hw.dma(&mut b, src, dst, checked, bytes + flag).delivered;
        cp.stats[src].messages_sent += 1;
        self.queue.push(delivered, EventKind::CoprocDeliver { msg: slot });
    }

    /// coproc-am: the sending thread reads the message in `slot` (no data
    /// cache) and moves it by DMA; the channel is busy until the DMA's
    /// acknowledgement is back.
    fn transmit(&mut self, slot: u32) {
        let msg = self.messages[slot as usize].as_ref().expect("live message");
        let (src, dst) = (msg.src_node.index(), msg.dst_node.index());
        let bytes = self.msg_bytes(msg);
        let words = self.coproc_words(bytes);
        let now = self.now;
        let (cp, mut b) = self.coproc_parts();
        let pair = cp.pair(src, dst);
        let instructions = cp.hw.costs.params.send_thread_instructions as u64;
        let ran = cp.hw.thread(&mut b, src, now, instructions);
        let read = cp.hw.coproc_read(&mut b, src, ran, words);
        cp.hw.hold_thread(src, read);
        let done = cp.hw.dma(&mut b, src, dst, read, bytes);
        cp.channel_free[pair] = done.acknowledged;
        cp.stats[src].messages_sent += 1;
        self.queue.push(done.delivered, EventKind::CoprocDeliver { msg: slot });
    }

    /// coproc-am: the acknowledgement the oldest message waiting for
    /// channel `src` to `dst` waited on is back: it goes, and the next
    /// waits for its acknowledgement. A reply its dispatch thread sent
    /// meanwhile may have taken the channel first (a dispatch thread waits
    /// for the acknowledgement itself, `reply_from_coproc`): then the
    /// message waits for that one's.
    pub(super) fn on_coproc_channel_free(&mut self, src: usize, dst: usize) {
        let cp = self.coproc.as_mut().expect("policy coprocessor");
        let pair = cp.pair(src, dst);
        let free = cp.channel_free[pair];
        if free > self.now {
            return self.queue.push(free, EventKind::CoprocChannelFree { src: src as u32, dst: dst as u32 });
        }
        let slot = cp.waiting[pair].pop_front().expect("a message waits for the channel");
        self.transmit(slot);
        let cp = self.coproc.as_mut().expect("policy coprocessor");
        if !cp.waiting[pair].is_empty() {
            let free = cp.channel_free[pair];
            self.queue.push(free, EventKind::CoprocChannelFree { src: src as u32, dst: dst as u32 });
        }
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
        // Only main-am's messages and atomic functions' are left for it.
        let found = !self.nodes[n].rx.is_empty();
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

    /// A thread's poll site: the main processor handles what its buffers
    /// hold, or reads their flags (in its cache) and goes on. Under the
    /// co-processor libraries only atomic functions come to it: a program
    /// without any polls for nothing, and its poll is empty.
    pub(super) fn coproc_poll(&mut self, t: usize) {
        let p = self.threads[t].proc;
        let n = self.procs[p].node;
        if !self.nodes[n].rx.is_empty() {
            self.threads[t].state = ThreadState::PollDrain;
            return self.decide_coproc(p);
        }
        let cp = self.coproc.as_ref().expect("policy coprocessor");
        let polls = cp.library == CoprocLibrary::MainAm || cp.atomics;
        let cost = if polls { self.cfg.machine.cache.hit_cycles } else { 0 };
        self.start_busy(p, Cat::Compute, cost, 0, After::ThreadOpDone);
    }

    /// Processor `p` reads a message out of its receive buffer (a miss on
    /// each line the DMA wrote, flag included) and dispatches it; under
    /// main-am its co-processor then tells the sender the buffer is free.
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
        if cp.library != CoprocLibrary::MainAm {
            // An atomic function's message: its buffer is the main
            // processor's own, freed by the handler's taking it.
            return t;
        }
        let triggered = cp.hw.main_trigger(&mut b, n, t);
        let freed = cp.hw.remote_add(&mut b, n, src, triggered);
        self.queue.push(freed, EventKind::CoprocBufferFree { src: src as u32, dst: n as u32 });
        triggered
    }

    /// coproc-am: the arrival's event wakes node `n`'s dispatch thread for
    /// the message's source, which runs its handler.
    fn handle_on_coproc(&mut self, n: usize, slot: u32) {
        if self.route(self.messages[slot as usize].as_ref().expect("live message")) == Route::Main {
            return self.pass_to_main(n, slot);
        }
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
        if let Some(sink) = &self.sink {
            sink.borrow_mut().handler(0, n as u32, crate::timeline::COPROCESSOR, &info.name, now, end);
        }
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
            answer: Answer::new(msg, &info.name, table.len()),
        };
        self.running = Running::Handler(msg.handler);
        let outcome = f(&mut ctx, msg);
        self.running = Running::Engine;
        let (end, answered) = (ctx.t, ctx.answer.end(outcome));
        self.handler_code_ran(n, msg.key);
        let reply = self.handler_outcome(answered)?;
        Some((end, reply))
    }

    /// coproc-am: the dispatch thread stores the reply's words (no data
    /// cache) and moves them by DMA to the requester, once the channel's
    /// previous message is acknowledged.
    fn reply_from_coproc(&mut self, n: usize, request: &Message, reply: Reply, t: u64) {
        let out = self.reply_message(n, request, reply);
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

    /// The main processor has seen its request complete.
    pub(super) fn on_coproc_seen(&mut self, t: usize) {
        let reply = self.threads[t].reply.take().expect("the reply handler ran");
        self.finish_request(t, reply);
    }

    /// Thread `t`'s request is complete, as its main processor sees now.
    fn finish_request(&mut self, t: usize, reply: Message) {
        self.threads[t].waiting_on = None;
        self.record_latency(self.now - self.threads[t].issued_at);
        if self.thread_ready(t, OpResult::Reply(reply)) {
            self.wake(self.threads[t].proc);
        }
    }

    /// coproc-am: the dispatch thread finds an atomic function's message
    /// (it reads the handler's index) and leaves it for the main
    /// processor, writing the flag its poll reads.
    fn pass_to_main(&mut self, n: usize, slot: u32) {
        let now = self.now;
        let (cp, mut b) = self.coproc_parts();
        let dispatch = cp.hw.costs.params.dispatch_instructions as u64;
        let ran = cp.hw.thread(&mut b, n, now, dispatch);
        let read = cp.hw.coproc_read(&mut b, n, ran, 1);
        let written = cp.hw.coproc_write(&mut b, n, read, 1);
        cp.hw.hold_thread(n, written);
        self.queue.push(written, EventKind::CoprocDeposit { msg: slot });
    }

    /// coproc-am: the flag is written; the atomic function's message waits
    /// for the main processor.
    pub(super) fn on_coproc_deposit(&mut self, slot: u32) {
        let n = self.messages[slot as usize].as_ref().expect("live message").dst_node.index();
        self.deposit(n, slot);
    }

    /// The reply node `n` sends to `request`, counted as sent (a one-way
    /// message's reply keeps its token 0).
    fn reply_message(&mut self, n: usize, request: &Message, reply: Reply) -> Message {
        self.count_reply(request.token);
        self.nodes[n].stats.messages_sent += 1;
        Message {
            kind: MsgKind::Reply,
            src_node: NodeId(n as u32),
            src_thread: request.src_thread,
            dst_node: request.src_node,
            handler: reply.handler,
            key: SyncKey::NoSync,
            args: reply.args,
            payload: reply.payload,
            token: request.token,
        }
    }

    // ----- the optimized library ------------------------------------------

    /// Bytes an operation's data DMA moves: its payload, or the one word
    /// that is a put's, store's or get's value, or the whole of a control
    /// message's arguments.
    fn data_bytes(&self, msg: &Message) -> u64 {
        if !msg.payload.is_empty() {
            return msg.payload.len() as u64;
        }
        let word = self.cfg.machine.ni.word_bytes as u64;
        match self.handlers.library_op(msg.handler) {
            Some(LibraryOp::PutRequest | LibraryOp::Store | LibraryOp::GetReply) => word,
            _ => (msg.args.len() as u64 * word).max(word),
        }
    }

    /// optimized: the main processor's part of an operation (as
    /// `crate::coproc::SplitOp` scripts it): it counts the operation in
    /// its half of the split counter (a cached store), builds the DMA's
    /// descriptor in its cache and triggers it (an uncached store). An
    /// atomic function's request is written out instead of counted, as a
    /// message for the owner's main processor. Returns when the main
    /// processor is done.
    fn direct_send(&mut self, n: usize, t: u64, msg: Message, route: Route) -> u64 {
        let words = self.msg_bytes(&msg).div_ceil(self.cfg.machine.ni.word_bytes as u64);
        self.nodes[n].stats.messages_sent += 1;
        let slot = self.store_message(msg);
        let (cp, mut b) = self.coproc_parts();
        let descriptor = cp.hw.costs.descriptor_words;
        let stores = if route == Route::Main { words + descriptor } else { 1 + descriptor };
        let built = cp.hw.main_cached_stores(t, stores);
        let issued = cp.hw.main_trigger(&mut b, n, built);
        self.queue.push(issued, EventKind::CoprocDirect { msg: slot, step: DirectStep::Issue });
        issued
    }

    /// optimized: the next step of the operation whose message (or reply)
    /// is in `slot`.
    pub(super) fn on_coproc_direct(&mut self, slot: u32, step: DirectStep) {
        match step {
            DirectStep::Issue => self.direct_issue(slot),
            DirectStep::Deliver => self.direct_put_delivered(slot),
            DirectStep::Descriptor => self.direct_get_triggered(slot),
            DirectStep::Trigger => self.direct_get_at_owner(slot),
            DirectStep::Add => self.direct_store_add(slot),
            DirectStep::Land => self.direct_store_landed(slot),
            DirectStep::Count => self.direct_count(slot),
            DirectStep::Seen => self.direct_seen(slot),
            DirectStep::Deposit => {
                let n = self.messages[slot as usize].as_ref().expect("live message").dst_node.index();
                self.delivered += 1;
                self.nodes[n].stats.messages_received += 1;
                self.deposit(n, slot);
            }
        }
    }

    /// optimized: the requester's DMA engine starts the operation's first
    /// DMA: a put's or store's data, a get's descriptor, an atomic
    /// function's message and its flag.
    fn direct_issue(&mut self, slot: u32) {
        let msg = self.messages[slot as usize].as_ref().expect("live message");
        let (src, dst) = (msg.src_node.index(), msg.dst_node.index());
        let route = self.route(msg);
        let data = self.data_bytes(msg);
        let whole = self.msg_bytes(msg);
        let now = self.now;
        let (cp, mut b) = self.coproc_parts();
        let word = cp.hw.costs.word_bytes;
        let (bytes, step) = match route {
            Route::Put => (data, DirectStep::Deliver),
            Route::Get => (cp.hw.costs.descriptor_words * word, DirectStep::Descriptor),
            Route::Store => (data, DirectStep::Add),
            Route::Main => (whole + word, DirectStep::Deposit),
            Route::Generic => unreachable!("generic messages go by the sending thread"),
        };
        let done = cp.hw.dma(&mut b, src, dst, now, bytes);
        cp.stats[src].direct_dmas += 1;
        cp.stats[src].messages_sent += 1;
        let at = match route {
            Route::Put => {
                let s = slot as usize;
                if cp.acked.len() <= s {
                    cp.acked.resize(s + 1, 0);
                }
                cp.acked[s] = done.acknowledged;
                done.delivered
            }
            // The add goes out once the data's DMA is done at the source.
            Route::Store => done.acknowledged.min(done.delivered),
            _ => done.delivered,
        };
        self.queue.push(at, EventKind::CoprocDirect { msg: slot, step });
    }

    /// optimized: a put's data is in the owner's memory, its handler run by
    /// the hardware; the DMA's acknowledgement will wake the requester's
    /// counter thread, which runs the acknowledgement's handler.
    fn direct_put_delivered(&mut self, slot: u32) {
        let acked = self.coproc.as_ref().expect("policy coprocessor").acked[slot as usize];
        let Some((n, request, Some(reply))) = self.take_direct(slot) else { return };
        let out = self.reply_message(n, &request, reply);
        let r = self.store_message(out);
        self.queue.push(acked, EventKind::CoprocDirect { msg: r, step: DirectStep::Count });
    }

    /// optimized: a get's descriptor is at the owner; the requester's
    /// co-processor sets the owner's event that starts it (a one-word
    /// remote transaction, timed as a remote add).
    fn direct_get_triggered(&mut self, slot: u32) {
        let msg = self.messages[slot as usize].as_ref().expect("live message");
        let (src, dst) = (msg.src_node.index(), msg.dst_node.index());
        let now = self.now;
        let (cp, mut b) = self.coproc_parts();
        let triggered = cp.hw.remote_add(&mut b, src, dst, now);
        cp.stats[src].remote_adds += 1;
        self.queue.push(triggered, EventKind::CoprocDirect { msg: slot, step: DirectStep::Trigger });
    }

    /// optimized: a get's descriptor runs at the owner: the request's
    /// handler reads the words (the DMA's reads), and its reply's data
    /// goes back by DMA, whose arrival wakes the requester's counter
    /// thread.
    fn direct_get_at_owner(&mut self, slot: u32) {
        let Some((n, request, Some(reply))) = self.take_direct(slot) else { return };
        let out = self.reply_message(n, &request, reply);
        let bytes = self.data_bytes(&out);
        let to = request.src_node.index();
        let r = self.store_message(out);
        let now = self.now;
        let (cp, mut b) = self.coproc_parts();
        let done = cp.hw.dma(&mut b, n, to, now, bytes);
        cp.stats[n].direct_dmas += 1;
        cp.stats[n].messages_sent += 1;
        self.queue.push(done.delivered, EventKind::CoprocDirect { msg: r, step: DirectStep::Count });
    }

    /// optimized: a store's data DMA is done at the source; its
    /// co-processor adds to the owner's counter remotely.
    fn direct_store_add(&mut self, slot: u32) {
        let msg = self.messages[slot as usize].as_ref().expect("live message");
        let (src, dst) = (msg.src_node.index(), msg.dst_node.index());
        let now = self.now;
        let (cp, mut b) = self.coproc_parts();
        let added = cp.hw.remote_add(&mut b, src, dst, now);
        cp.stats[src].remote_adds += 1;
        self.queue.push(added, EventKind::CoprocDirect { msg: slot, step: DirectStep::Land });
    }

    /// optimized: a store's add has landed in the owner's counter: its
    /// handler has run, with no thread. A thread waiting for an atomic
    /// function's answer (a control reply) sees it when its main processor
    /// sees the counter change.
    fn direct_store_landed(&mut self, slot: u32) {
        let Some((n, msg, reply)) = self.take_direct(slot) else { return };
        if let Some(reply) = reply {
            // A one-way message's handler that answered: the library's
            // generic path carries the answer.
            return self.reply_from_coproc(n, &msg, reply, self.now);
        }
        if msg.kind == MsgKind::Reply && msg.token != 0 {
            let t = self.thread_index(n, msg.src_thread.0);
            let now = self.now;
            let (cp, mut b) = self.coproc_parts();
            let seen = cp.hw.main_sees_write(&mut b, n, now);
            self.threads[t].reply = Some(msg);
            self.queue.push(seen, EventKind::CoprocSeen { thread: t as u32 });
        }
    }

    /// optimized: a DMA's completion wakes the requester's counter thread:
    /// it decrements the co-processor's half of the counter (a read and a
    /// write, no data cache), and the main processor, spinning on it,
    /// sees the word change.
    fn direct_count(&mut self, slot: u32) {
        let n = self.messages[slot as usize].as_ref().expect("live message").dst_node.index();
        let now = self.now;
        let (cp, mut b) = self.coproc_parts();
        let completion = cp.hw.costs.params.completion_instructions as u64;
        let ran = cp.hw.thread(&mut b, n, now, completion);
        let read = cp.hw.coproc_read(&mut b, n, ran, 1);
        let written = cp.hw.coproc_write(&mut b, n, read, 1);
        cp.hw.hold_thread(n, written);
        let seen = cp.hw.main_sees_write(&mut b, n, written);
        cp.stats[n].counter_threads += 1;
        self.queue.push(seen, EventKind::CoprocDirect { msg: slot, step: DirectStep::Seen });
    }

    /// optimized: the requester's main processor sees its counter change:
    /// the reply's handler (the counter thread's) has run, a thread
    /// waiting for the reply has it, and threads waiting on a condition
    /// check it again.
    fn direct_seen(&mut self, slot: u32) {
        let msg = self.messages[slot as usize].take().expect("live message");
        self.free_messages.push(slot);
        let n = msg.dst_node.index();
        self.delivered += 1;
        self.nodes[n].stats.messages_received += 1;
        if self.run_direct(n, &msg).is_none() {
            return;
        }
        if msg.token != 0 {
            let t = self.thread_index(n, msg.src_thread.0);
            self.finish_request(t, msg);
        }
        self.wake_awaiting(n, None);
    }

    /// optimized: takes the message in `slot` at its destination, where
    /// the hardware has done what its handler does; runs the handler.
    /// Threads waiting there check their conditions again once the main
    /// processor sees the write (a get's DMA only reads, and wakes
    /// nobody). Returns the node, the message and its handler's reply, or
    /// None if the handler failed (the run is ending).
    fn take_direct(&mut self, slot: u32) -> Option<(usize, Message, Option<Reply>)> {
        let msg = self.messages[slot as usize].take().expect("live message");
        self.free_messages.push(slot);
        let n = msg.dst_node.index();
        self.delivered += 1;
        self.nodes[n].stats.messages_received += 1;
        let reply = self.run_direct(n, &msg)?;
        let writes = self.handlers.library_op(msg.handler) != Some(LibraryOp::GetRequest);
        if writes && self.nodes[n].awaiting > 0 {
            let now = self.now;
            let (cp, mut b) = self.coproc_parts();
            let seen = cp.hw.main_sees_write(&mut b, n, now);
            self.queue.push(seen, EventKind::CoprocHandled { node: n as u32 });
        }
        Some((n, msg, reply))
    }

    /// optimized: runs `msg`'s handler on node `n` as the hardware does its
    /// work: no instructions, and its words are the DMA's, whose bus
    /// transactions `Coproc::dma` times (its writes invalidate the main
    /// processor's cached copies). Returns its reply, or None if it failed.
    fn run_direct(&mut self, n: usize, msg: &Message) -> Option<Option<Reply>> {
        let table = self.handlers;
        let info = match table.info(msg.handler) {
            Ok(i) => i,
            Err(e) => {
                self.fail(SimError::Handler(e));
                return None;
            }
        };
        let f = table.function(msg.handler).expect("info exists");
        let threads = self.nodes[n].threads;
        let mut ctx = DirectCtx {
            mem: &mut self.nodes[n].mem,
            node: n,
            threads,
            answer: Answer::new(msg, &info.name, table.len()),
        };
        self.running = Running::Handler(msg.handler);
        let outcome = f(&mut ctx, msg);
        self.running = Running::Engine;
        let answered = ctx.answer.end(outcome);
        self.handler_code_ran(n, msg.key);
        self.coproc.as_mut().expect("policy coprocessor").stats[n].direct_handlers += 1;
        self.handler_outcome(answered)
    }

    /// The reply of a handler on the co-processor (None inside: it sent
    /// none, and owed none); None if it failed, which ends the run.
    fn handler_outcome(&mut self, answered: Result<Option<Reply>, AmError>) -> Option<Option<Reply>> {
        match answered {
            Ok(reply) => Some(reply),
            Err(e) => {
                self.fail(SimError::Handler(e));
                None
            }
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
    answer: Answer<'n>,
}

/// Refuses a protocol message a handler sends on the co-processor, which
/// models none; the refusal ends the run.
fn refuse_send(answer: &mut Answer) -> Result<(), AmError> {
    Err(answer.refuse(AmError::NotAllowed(format!(
        "handler '{}' sent a protocol message from a handler under the co-processor policy, which does not model \
         handler sends; allowed under the single, fixed and floating policies",
        answer.handler()
    ))))
}

impl CoprocCtx<'_, '_> {
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

    fn send(&mut self, _: NodeId, _: HandlerId, _: SyncKey, _: Args, _: Payload) -> Result<(), AmError> {
        refuse_send(&mut self.answer)
    }

    fn reply(&mut self, reply: Reply) -> Result<(), AmError> {
        self.answer.reply(reply)
    }

    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access) {
        let n = self.node;
        let (first, count) = match self.nodes[n].mem.map().lines(region, offset, len, self.threads) {
            Ok(lines) => lines,
            Err(reason) => return self.answer.fail(reason),
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
            None => self.answer.fail(SimError::ClockLimit { now: self.t, duration: run }.to_string()),
        }
    }
}

/// A handler's view of the machine when the optimized library's hardware
/// does its work (a DMA writes or reads its words, an input engine adds to
/// its counter): it runs no instructions, so its charges cost nothing, and
/// its accesses were the DMA's, timed by the DMA; a write invalidates the
/// main processor's cached copies of the line.
struct DirectCtx<'m, 'n> {
    mem: &'m mut NodeMemory,
    node: usize,
    threads: u32,
    answer: Answer<'n>,
}

impl HandlerCtx for DirectCtx<'_, '_> {
    fn node(&self) -> NodeId {
        NodeId(self.node as u32)
    }

    fn send(&mut self, _: NodeId, _: HandlerId, _: SyncKey, _: Args, _: Payload) -> Result<(), AmError> {
        refuse_send(&mut self.answer)
    }

    fn reply(&mut self, reply: Reply) -> Result<(), AmError> {
        self.answer.reply(reply)
    }

    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access) {
        match self.mem.map().lines(region, offset, len, self.threads) {
            Ok((first, count)) if kind.writes() => (first..first + count).for_each(|line| self.mem.dma_write(line)),
            Ok(_) => {}
            Err(reason) => self.answer.fail(reason),
        }
    }

    fn charge(&mut self, _cycles: u64) {}
}
