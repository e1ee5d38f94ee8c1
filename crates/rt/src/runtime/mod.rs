//! The native runtime: a cluster of nodes in one process, each node a group
//! of (optionally pinned) threads, messages moved through cache-line rings,
//! and the three protocol-processing policies run on real threads.
//!
//! Every thread owns one ring to every node (its producer side); every node
//! owns the consumer side of the rings that lead to it. Only the node's
//! acting protocol processor (whoever holds the node's role lock) touches
//! those consumers, which is why a node runs one handler at a time (Tempest
//! semantics) and why the consumer state needs no further locking.
//!
//! Policies (the same data the simulator interprets):
//! - Single: one thread per node computes and handles; it polls when it
//!   sends, during `work`, at poll sites and while it waits for a reply.
//! - Fixed(k): compute threads never handle messages; k protocol threads
//!   poll (one acts at a time), optionally parking after a budget of empty
//!   polls.
//! - Floating: a thread that waits takes the role with a try-lock and
//!   handles messages until its reply is in (then relinquishes, eagerly or
//!   only to a waiting peer); when every thread computes, a sender raises an
//!   interrupt (a signal) on one of them, round-robin. See `interrupt.rs`.
//!
//! Under a parallel discipline (PDQ, or a lock per key) there is no role:
//! every thread that would act as protocol processor serves at once through
//! the node's [`KeyedQueue`] (see `keyed.rs`), which alone touches the
//! rings' consumers.

mod handling;
mod ops;
mod sending;

use crate::clock::Stamp;
use crate::codec::{self, Outgoing, MAX_PAYLOAD};
use crate::config::RtConfig;
use crate::interrupt;
use crate::keyed::{Batch, Idle, KeyedQueue};
use crate::ring::{self, Consumer, Peeker, Producer};
use crate::stats::{RtStats, ThreadStats, ThreadTimes};
use crossbeam_utils::CachePadded;
use finegrain_core::{
    Access, AmError, Args, Discipline, HandlerCtx, HandlerId, HandlerTable, Message, MsgKind, NodeId, Payload, Policy,
    Proc, Region, Relinquish, Reply, ReplyGuard, SyncKey, ThreadId, MAX_ARGS,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, UnsafeCell};
use std::collections::VecDeque;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use thiserror::Error;

/// Why a native run failed.
#[derive(Debug, Error)]
pub enum RtError {
    #[error(transparent)]
    Config(#[from] finegrain_core::ConfigError),
    #[error("{0}")]
    Handler(AmError),
    #[error("node {node} thread {thread} failed: {error}")]
    App { node: u32, thread: u32, error: AmError },
    #[error("node {node} thread {thread} panicked")]
    AppPanic { node: u32, thread: u32 },
    #[error("could not start the runtime: {0}")]
    Setup(String),
}

/// Results per compute thread (node-major) and the run's statistics.
#[derive(Debug)]
pub struct RtOutput<T> {
    pub results: Vec<T>,
    pub stats: RtStats,
}

/// Handler failures are recorded without allocating (they may happen in
/// interrupt context) and turned into messages after the run.
#[derive(Default)]
struct Failure {
    /// 0 none, 1 panicked, 2 returned an error, 3 did not reply, 4 unknown
    /// handler, 5 an application failed, 6 a thread could not start, 7 an
    /// application thread's own operation failed.
    kind: AtomicU8,
    handler: AtomicU32,
    error: Mutex<Option<AmError>>,
    /// Node and thread (high and low 32 bits) of a FAIL_APP or FAIL_THREAD.
    app: AtomicU64,
}

const FAIL_PANIC: u8 = 1;
const FAIL_ERROR: u8 = 2;
const FAIL_NO_REPLY: u8 = 3;
const FAIL_UNKNOWN: u8 = 4;
/// An application returned an error or panicked; its own outcome says why.
const FAIL_APP: u8 = 5;
/// A thread of the run could not be started.
const FAIL_SETUP: u8 = 6;
/// An application thread's operation failed in a way it cannot be told
/// (`Proc::access` returns nothing); the failure carries its error.
const FAIL_THREAD: u8 = 7;

/// What a request made while `request_with`'s closure runs returns.
fn reply_on_loan() -> AmError {
    AmError::NotAllowed(
        "a request from inside request_with's closure, whose reply buffer it would overwrite while the closure \
         still reads it: copy what the closure needs and make the request after it returns"
            .into(),
    )
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

/// What a request or send still in progress returns once the run failed.
fn run_aborted() -> AmError {
    AmError::Aborted("the run stopped: a handler or another thread failed".into())
}

/// A compute thread's reply mailbox: the reply handler (on whichever thread
/// acts as PP) fills it and publishes the token; the waiting thread reads
/// it after seeing its token.
struct Completion {
    token: AtomicU64,
    handler: AtomicU32,
    nargs: AtomicU32,
    args: [AtomicU64; MAX_ARGS],
    src_node: AtomicU32,
    /// Written only by the acting PP between the requester's send and the
    /// token store, read only by the requester after the token load.
    payload: UnsafeCell<Payload>,
}

struct Node {
    id: u32,
    /// Consumer side of every ring leading here, indexed by sending thread.
    inbox: Box<[UnsafeCell<Consumer>]>,
    peek: Box<[Peeker]>,
    /// Round-robin start of the next poll (role holder only).
    next_ring: CachePadded<Cell<usize>>,
    /// The acting protocol-processor role.
    role: CachePadded<AtomicBool>,
    computing: CachePadded<AtomicU32>,
    /// Floating: threads waiting for a reply or serving for want of work
    /// (in `idle`, or done with their application): the role's possible
    /// takers.
    waiting: CachePadded<AtomicU32>,
    /// Compute threads whose application has not returned yet: only these
    /// can still come to wait, so hand-off keeps the role only while a peer
    /// is among them.
    running: CachePadded<AtomicU32>,
    /// An interrupt was raised and not yet taken.
    irq_raised: CachePadded<AtomicBool>,
    irq_next: AtomicU32,
    compute_threads: u32,
    completions: Box<[CachePadded<Completion>]>,
    /// pthread ids of the compute threads (for interrupts).
    pthreads: Box<[AtomicU64]>,
    segments: Box<[Box<[AtomicU64]>]>,
    table: Box<[AtomicU64]>,
    recv: Box<[Box<[AtomicU64]>]>,
    /// Fixed: protocol threads parked now (each counts itself while parked,
    /// so one thread's wake-up cannot hide another that still sleeps).
    parked: AtomicU32,
    pp_threads: Mutex<Vec<std::thread::Thread>>,
    /// Parallel disciplines: the node's dispatch (None: serial).
    keyed: Option<KeyedQueue>,
    /// Threads serving the keyed queue now (counted only under a server
    /// limit, see `RtConfig::max_servers`).
    servers: CachePadded<AtomicU32>,
    /// A thread found every serving place taken and left what it came for
    /// to the servers: the next one to give its place up looks again.
    server_wanted: AtomicBool,
}

/// A serving place taken under a server limit; given back when dropped.
struct ServerSlot<'a>(Option<&'a AtomicU32>);

impl Drop for ServerSlot<'_> {
    fn drop(&mut self) {
        if let Some(servers) = self.0 {
            servers.fetch_sub(1, Ordering::Release);
        }
    }
}

// SAFETY: `inbox` and `next_ring` are touched only by the thread holding
// `role` (acquired with Acquire, released with Release) under the serial
// discipline, and only under the keyed queue's mutex under the parallel
// ones (a run uses one or the other), so at most one thread accesses them at
// a time and each holder sees its predecessor's writes. `Completion::payload` is written only by the acting PP before the
// Release store of the token and read only by the owning thread after an
// Acquire load that observed it. Everything else is atomic.
unsafe impl Sync for Node {}

/// Everything the threads of a run share.
pub struct Cluster {
    cfg: RtConfig,
    handlers: HandlerTable,
    /// Padded so one node's hot fields never share a line with another's.
    nodes: Box<[CachePadded<Node>]>,
    ppn: u32,
    /// The run is aborted (a handler failed, or an application returned an
    /// error): every thread stops at once, whatever is still queued.
    shutdown: AtomicBool,
    failure: Failure,
    oversubscribed: bool,
}

impl Node {
    /// One of at most `limit` serving places (every thread may serve
    /// without a limit), or None if all are taken.
    fn claim_server(&self, limit: Option<u32>) -> Option<ServerSlot<'_>> {
        let Some(limit) = limit else { return Some(ServerSlot(None)) };
        let mut now = self.servers.load(Ordering::Relaxed);
        loop {
            if now >= limit {
                return None;
            }
            match self.servers.compare_exchange_weak(now, now + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Some(ServerSlot(Some(&self.servers))),
                Err(seen) => now = seen,
            }
        }
    }

    fn try_take_role(&self) -> bool {
        !self.role.load(Ordering::Relaxed)
            && self.role.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    fn any_ready(&self) -> bool {
        self.peek.iter().any(|p| p.ready())
    }

    /// Messages in the rings, or decoded and queued (parallel disciplines).
    fn work_waiting(&self) -> bool {
        self.keyed.as_ref().is_some_and(|k| k.queued() > 0) || self.any_ready()
    }
}

/// What a thread sends with: its producers, messages that found a ring
/// full (kept in order, never dropped), and a scratch encode buffer.
struct Outbox {
    producers: Vec<Producer>,
    spill: Vec<VecDeque<(u64, Vec<u64>)>>,
    words: Vec<u64>,
}

/// One thread's runtime state. Fields the interrupt handler may use live in
/// cells: the handler runs only while the thread is in the allocation-free
/// `work` loop, which touches none of them (see `interrupt.rs`).
pub(crate) struct ThreadCtx {
    cluster: Arc<Cluster>,
    node: u32,
    local: u32,
    global: usize,
    out: UnsafeCell<Outbox>,
    scratch: UnsafeCell<Message>,
    rng: UnsafeCell<ChaCha8Rng>,
    next_token: Cell<u64>,
    /// Holds the node's role for its whole life (Single).
    owns_role: bool,
    /// `request_with`'s closure is running: it borrows this thread's reply
    /// buffer, which the next reply to this thread would overwrite.
    reply_lent: Cell<bool>,
    /// Messages waiting in the overflow queues (skip them when zero).
    spilled: Cell<usize>,
    /// What the keyed queue answered when this thread last found nothing
    /// to run there.
    keyed_idle: Cell<Idle>,
    /// Set while the thread runs runtime code that an interrupt must not
    /// re-enter.
    pub(crate) in_runtime: AtomicBool,
    /// Set while the thread is inside `work` (the only place interrupts run).
    pub(crate) interruptible: AtomicBool,
    pub(crate) irq_pending: AtomicBool,
    /// `spilled` is not zero. A reply sent from an interrupt may spill; the
    /// `work` loop, which must not touch the cells, watches this instead
    /// and sends it on without waiting for the work to end.
    spill_waiting: AtomicBool,
    stats: ThreadStats,
}

impl Cluster {
    fn node(&self, n: u32) -> &Node {
        &self.nodes[n as usize]
    }

    fn fail(&self, kind: u8, handler: HandlerId, error: Option<AmError>) {
        self.fail_first(kind, handler, error);
    }

    /// Stops the run; the first failure is the one reported (true if this
    /// one is).
    fn fail_first(&self, kind: u8, handler: HandlerId, error: Option<AmError>) -> bool {
        let first = self.failure.kind.compare_exchange(0, kind, Ordering::AcqRel, Ordering::Relaxed).is_ok();
        if first {
            self.failure.handler.store(handler.0 as u32, Ordering::Relaxed);
            if let Some(e) = error {
                if let Ok(mut slot) = self.failure.error.try_lock() {
                    *slot = Some(e);
                }
            }
        }
        self.shutdown.store(true, Ordering::Release);
        first
    }

    fn failed(&self) -> bool {
        self.failure.kind.load(Ordering::Relaxed) != 0
    }

    /// Application `(node, thread)` failed: every other thread stops too
    /// (requests in flight may never be answered). Only the first failure
    /// is reported; a handler failure seen before it takes precedence.
    fn fail_app(&self, node: u32, thread: u32) {
        if self.fail_first(FAIL_APP, HandlerId(0), None) {
            self.failure.app.store((node as u64) << 32 | thread as u64, Ordering::Release);
        }
    }

    /// Application `(node, thread)` did something the run cannot go on
    /// from; reported as that thread's failure, whatever it returns.
    fn fail_thread(&self, node: u32, thread: u32, error: AmError) {
        if self.fail_first(FAIL_THREAD, HandlerId(0), Some(error)) {
            self.failure.app.store((node as u64) << 32 | thread as u64, Ordering::Release);
        }
    }

    /// The application whose failure stopped the run, if one did.
    fn failed_app(&self) -> Option<(u32, u32)> {
        if self.failure.kind.load(Ordering::Acquire) != FAIL_APP {
            return None;
        }
        let v = self.failure.app.load(Ordering::Acquire);
        Some(((v >> 32) as u32, v as u32))
    }

    fn failure_error(&self) -> Option<RtError> {
        let kind = self.failure.kind.load(Ordering::Acquire);
        if kind == 0 || kind == FAIL_APP || kind == FAIL_SETUP {
            return None;
        }
        if kind == FAIL_THREAD {
            let v = self.failure.app.load(Ordering::Acquire);
            let error = self.failure.error.lock().ok().and_then(|mut e| e.take()).unwrap_or_else(run_aborted);
            return Some(RtError::App { node: (v >> 32) as u32, thread: v as u32, error });
        }
        let id = HandlerId(self.failure.handler.load(Ordering::Relaxed) as u16);
        let name = self.handlers.info(id).map(|i| i.name.clone()).unwrap_or_else(|_| format!("#{}", id.0));
        let e = match kind {
            FAIL_PANIC => AmError::HandlerFailed { handler: name, reason: "panicked".into() },
            FAIL_NO_REPLY => AmError::HandlerFailed {
                handler: name,
                reason:
                    "returned without replying to a request sent with Proc::request, whose thread would wait forever"
                        .into(),
            },
            FAIL_UNKNOWN => AmError::UnknownHandler { id: id.0, len: self.handlers.len() },
            _ => self
                .failure
                .error
                .lock()
                .ok()
                .and_then(|mut e| e.take())
                .unwrap_or(AmError::HandlerFailed { handler: name, reason: "failed".into() }),
        };
        Some(RtError::Handler(e))
    }
}

impl ThreadCtx {
    fn node(&self) -> &Node {
        self.cluster.node(self.node)
    }

    /// Spin politely: when threads outnumber cores, give the core away.
    fn relax(&self, spins: &mut u32) {
        *spins = spins.wrapping_add(1);
        if self.cluster.oversubscribed && (*spins).is_multiple_of(64) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }

    fn enter(&self) {
        self.in_runtime.store(true, Ordering::Relaxed);
        // The interrupt handler runs on this thread: keep the runtime code's
        // plain accesses (outbox, scratch) after the flag is up.
        compiler_fence(Ordering::SeqCst);
    }

    /// Leaves runtime code; an interrupt that arrived meanwhile is served
    /// now, and counted (with its time) like one served on arrival.
    fn exit(&self) {
        compiler_fence(Ordering::SeqCst);
        self.in_runtime.store(false, Ordering::Relaxed);
        if self.irq_pending.load(Ordering::Relaxed) {
            self.irq_pending.store(false, Ordering::Relaxed);
            self.node().irq_raised.store(false, Ordering::Relaxed);
            self.enter();
            self.serve_interrupt();
            self.in_runtime.store(false, Ordering::Relaxed);
        }
    }

    /// Serves the node's messages for an interrupt, counting it and its
    /// time, the handlers' own time aside.
    fn serve_interrupt(&self) {
        let t0 = Stamp::now();
        let before = self.stats.handler_ns();
        self.poll_as_pp();
        let handling = self.stats.handler_ns() - before;
        self.stats.add_interrupt(t0.elapsed_ns().saturating_sub(handling));
    }
}

/// The runtime's [`HandlerCtx`]: replies go straight into the ring.
struct RtHandlerCtx<'a> {
    thread: &'a ThreadCtx,
    msg: &'a Message,
    guard: ReplyGuard<'a>,
}

impl HandlerCtx for RtHandlerCtx<'_> {
    fn node(&self) -> NodeId {
        NodeId(self.thread.node)
    }

    fn reply(&mut self, reply: Reply) -> Result<(), AmError> {
        self.reply_bytes(reply.handler, reply.args, reply.payload.as_slice())
    }

    fn reply_bytes(&mut self, handler: HandlerId, args: Args, data: &[u8]) -> Result<(), AmError> {
        let m = self.msg;
        // Token 0 marks a one-way message: no thread waits for a reply, so
        // completing one would write a completion slot its owner may be
        // reading.
        if m.token == 0 {
            return Err(AmError::ReplyToOneWay { handler: self.guard.handler().to_string() });
        }
        if data.len() > MAX_PAYLOAD {
            return Err(AmError::PayloadTooLarge {
                what: format!("handler '{}''s reply payload", self.guard.handler()),
                given: data.len(),
                max: MAX_PAYLOAD,
                platform: "the native runtime",
            });
        }
        // Counted only once it will be sent: a refused reply is no reply,
        // and the handler may still send a valid one.
        self.guard.admit_reply()?;
        self.thread.send(
            m.src_node.0,
            &Outgoing {
                kind: MsgKind::Reply,
                handler,
                src_node: NodeId(self.thread.node),
                src_thread: m.src_thread,
                token: m.token,
                key: SyncKey::NoSync,
                args: args.as_slice(),
                payload: data,
            },
        );
        Ok(())
    }

    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access) {
        if let Err(reason) = self.thread.touch(region, offset, len, kind) {
            let e = AmError::HandlerFailed { handler: self.guard.handler().to_string(), reason };
            self.thread.cluster.fail(FAIL_ERROR, self.msg.handler, Some(e));
        }
    }

    fn charge(&mut self, _cycles: u64) {}
}

/// A native compute thread's handle: the runtime's implementation of
/// [`Proc`].
#[derive(Clone)]
pub struct RtProc {
    ctx: Rc<ThreadCtx>,
}

/// A reply, borrowed in place from the thread's mailbox.
pub struct ReplyView<'a> {
    c: &'a Completion,
}

impl ReplyView<'_> {
    pub fn args(&self) -> Args {
        let n = self.c.nargs.load(Ordering::Relaxed) as usize;
        let a: [u64; MAX_ARGS] = std::array::from_fn(|i| self.c.args[i].load(Ordering::Relaxed));
        Args::new(&a[..n]).expect("at most MAX_ARGS")
    }

    pub fn payload(&self) -> &[u8] {
        // SAFETY: the reply handler finished writing before publishing the
        // token this thread waited for, and no other reply can arrive until
        // this thread sends its next request, which it cannot do while the
        // view exists: views live only inside `request_with`'s closure, and
        // a request made from there is refused (see `reply_lent`).
        unsafe { (*self.c.payload.get()).as_slice() }
    }
}

impl RtProc {
    /// Sends a request and lends its reply to `f` without copying it out.
    ///
    /// The reply stays in the thread's one reply buffer while `f` runs, so
    /// `f` may not make another request from this thread (through a clone of
    /// this handle): that request fails at once with an error saying so.
    /// One-way sends, work and the rest remain allowed.
    pub fn request_with<R>(
        &self,
        dst: NodeId,
        handler: HandlerId,
        args: &[u64],
        payload: &[u8],
        f: impl FnOnce(ReplyView) -> R,
    ) -> Result<R, AmError> {
        self.ctx.request_with(dst, handler, SyncKey::Sequential, args, payload, |c| f(ReplyView { c }))
    }

    /// [`RtProc::request_with`] with a synchronization key.
    pub fn request_keyed_with<R>(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
        f: impl FnOnce(ReplyView) -> R,
    ) -> Result<R, AmError> {
        self.ctx.request_with(dst, handler, key, args, payload, |c| f(ReplyView { c }))
    }

    /// The reply as an owned message.
    fn reply_message(&self, c: &Completion) -> Message {
        let view = ReplyView { c };
        Message {
            kind: MsgKind::Reply,
            src_node: NodeId(c.src_node.load(Ordering::Relaxed)),
            src_thread: ThreadId(self.ctx.local),
            dst_node: NodeId(self.ctx.node),
            handler: HandlerId(c.handler.load(Ordering::Relaxed) as u16),
            key: SyncKey::NoSync,
            args: view.args(),
            payload: Payload::bytes(view.payload()),
            token: c.token.load(Ordering::Relaxed),
        }
    }

    /// Sends a one-way active message: its request handler must not reply.
    /// It carries the `Sequential` key (see [`Proc::request`]).
    pub fn send(&self, dst: NodeId, handler: HandlerId, args: &[u64], payload: &[u8]) -> Result<(), AmError> {
        self.ctx.send_oneway(dst, handler, SyncKey::Sequential, args, payload)
    }

    /// [`RtProc::send`] with a synchronization key.
    pub fn send_keyed(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
    ) -> Result<(), AmError> {
        self.ctx.send_oneway(dst, handler, key, args, payload)
    }

    /// Acts as protocol processor for this node until `stop` returns true
    /// (or the run fails).
    ///
    /// Only where compute threads may handle messages (policies single and
    /// floating); under fixed they never do, so this fails at once.
    pub fn serve(&self, stop: impl Fn() -> bool) -> Result<(), AmError> {
        let policy = self.ctx.cluster.cfg.policy;
        if !policy.compute_procs_handle() {
            return Err(AmError::NotAllowed(format!(
                "RtProc::serve on a compute thread under policy {}, whose compute threads never handle messages: \
                 only single and floating let them serve (use idle to let time pass)",
                policy.label()
            )));
        }
        self.ctx.serve(stop);
        Ok(())
    }

    /// This thread's time split so far.
    pub fn times(&self) -> ThreadTimes {
        self.ctx.stats.times(self.ctx.node, self.ctx.local, true)
    }
}

impl Proc for RtProc {
    fn node(&self) -> NodeId {
        NodeId(self.ctx.node)
    }

    fn thread(&self) -> ThreadId {
        ThreadId(self.ctx.local)
    }

    fn nodes(&self) -> u32 {
        self.ctx.cluster.cfg.topology.nodes
    }

    fn threads_per_node(&self) -> u32 {
        self.ctx.cluster.cfg.compute_threads_per_node()
    }

    fn seed(&self) -> u64 {
        finegrain_core::mix_seed(self.ctx.cluster.cfg.seed, self.ctx.node as u64 + 1, self.ctx.local as u64 + 1)
    }

    async fn work(&self, cycles: u64) {
        self.ctx.work(cycles)
    }

    fn charge(&self, _cycles: u64) {}

    async fn request_keyed(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> Result<Message, AmError> {
        self.ctx.request_with(dst, handler, key, args.as_slice(), payload.as_slice(), |c| self.reply_message(c))
    }

    async fn access(&self, region: Region, offset: u64, len: u32, kind: Access) {
        if let Err(reason) = self.ctx.touch(region, offset, len, kind) {
            // The same words as the simulator's.
            let error = AmError::Aborted(format!("thread access rejected: {reason}"));
            self.ctx.cluster.fail_thread(self.ctx.node, self.ctx.local, error);
        }
    }

    async fn poll(&self) {
        self.ctx.poll_site()
    }

    async fn idle(&self, cycles: u64) {
        self.ctx.idle(cycles)
    }
}

/// Polls a future that never waits on anything but the runtime's own
/// blocking operations to completion.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::hint::spin_loop();
    }
}

fn atomic_words(bytes: usize) -> Box<[AtomicU64]> {
    (0..bytes.div_ceil(8)).map(|_| AtomicU64::new(0)).collect()
}

/// Whether a serving thread of node `n` may stop: the run failed, or every
/// application has returned and nothing waits at the node. Once every
/// application has returned, each request has its reply, so only one-way
/// messages can still be on their way, and their handlers send nothing: a
/// node whose rings and queue are empty stays empty. (`finished` is read
/// first: its acquire makes every message sent before the last application
/// returned visible to the check that follows.)
fn all_done(cluster: &Cluster, n: u32, finished: &AtomicU32, total_compute: u32) -> bool {
    cluster.shutdown.load(Ordering::Acquire)
        || (finished.load(Ordering::Acquire) == total_compute && !cluster.node(n).work_waiting())
}

fn build(cfg: &RtConfig, handlers: &HandlerTable) -> (Arc<Cluster>, Vec<Vec<Producer>>) {
    let nodes = cfg.topology.nodes as usize;
    let ppn = cfg.topology.procs_per_node as usize;
    let compute = cfg.compute_threads_per_node() as usize;
    let total = nodes * ppn;
    let mut producers: Vec<Vec<Producer>> = (0..total).map(|_| Vec::with_capacity(nodes)).collect();
    let mut inboxes: Vec<Vec<Consumer>> = (0..nodes).map(|_| Vec::with_capacity(total)).collect();
    for sender in producers.iter_mut() {
        for inbox in inboxes.iter_mut() {
            let (p, c) = ring::ring(cfg.ring_slots);
            sender.push(p);
            inbox.push(c);
        }
    }
    let table_bytes = cfg.protocol_table_bytes();
    let node_vec: Vec<Node> = inboxes
        .into_iter()
        .enumerate()
        .map(|(n, inbox)| Node {
            id: n as u32,
            peek: inbox.iter().map(|c| c.peeker()).collect(),
            inbox: inbox.into_iter().map(UnsafeCell::new).collect(),
            next_ring: CachePadded::new(Cell::new(0)),
            role: CachePadded::new(AtomicBool::new(false)),
            computing: CachePadded::new(AtomicU32::new(0)),
            waiting: CachePadded::new(AtomicU32::new(0)),
            running: CachePadded::new(AtomicU32::new(compute as u32)),
            irq_raised: CachePadded::new(AtomicBool::new(false)),
            irq_next: AtomicU32::new(0),
            compute_threads: compute as u32,
            completions: (0..compute)
                .map(|_| {
                    CachePadded::new(Completion {
                        token: AtomicU64::new(0),
                        handler: AtomicU32::new(0),
                        nargs: AtomicU32::new(0),
                        args: std::array::from_fn(|_| AtomicU64::new(0)),
                        src_node: AtomicU32::new(0),
                        payload: UnsafeCell::new(Payload::with_capacity(MAX_PAYLOAD)),
                    })
                })
                .collect(),
            pthreads: (0..compute).map(|_| AtomicU64::new(0)).collect(),
            segments: (0..compute).map(|_| atomic_words(cfg.segment_bytes)).collect(),
            table: atomic_words(table_bytes.max(8)),
            recv: (0..compute).map(|_| atomic_words(MAX_PAYLOAD)).collect(),
            parked: AtomicU32::new(0),
            pp_threads: Mutex::new(Vec::new()),
            keyed: cfg
                .discipline
                .parallel()
                .then(|| KeyedQueue::new(cfg.discipline, cfg.pdq_window).expect("validated with the configuration")),
            servers: CachePadded::new(AtomicU32::new(0)),
            server_wanted: AtomicBool::new(false),
        })
        .collect();
    let cores = online_cores();
    let cluster = Arc::new(Cluster {
        cfg: cfg.clone(),
        handlers: handlers.clone(),
        nodes: node_vec.into_iter().map(CachePadded::new).collect(),
        ppn: ppn as u32,
        shutdown: AtomicBool::new(false),
        failure: Failure::default(),
        oversubscribed: total > cores,
    });
    (cluster, producers)
}

/// Cores of the machine (not the calling thread's affinity mask, which a
/// pinned caller would have narrowed).
pub(crate) fn online_cores() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    }
}

pub(crate) fn pin_to(core: usize) {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it; the call
    // affects only the calling thread and failures are ignored (pinning is
    // an optimisation).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn make_ctx(cluster: &Arc<Cluster>, producers: Vec<Producer>, node: u32, local: u32) -> Rc<ThreadCtx> {
    let nodes = producers.len();
    let global = (node * cluster.ppn + local) as usize;
    let owns_role = cluster.cfg.policy == Policy::Single;
    if owns_role {
        let taken = cluster.node(node).try_take_role();
        debug_assert!(taken, "a Single node has one thread");
    }
    Rc::new(ThreadCtx {
        cluster: cluster.clone(),
        node,
        local,
        global,
        out: UnsafeCell::new(Outbox {
            producers,
            spill: (0..nodes).map(|_| VecDeque::new()).collect(),
            words: Vec::with_capacity(codec::MAX_WORDS),
        }),
        scratch: UnsafeCell::new(codec::scratch_message()),
        rng: UnsafeCell::new(ChaCha8Rng::seed_from_u64(finegrain_core::mix_seed(
            cluster.cfg.seed,
            node as u64 + 101,
            local as u64 + 7,
        ))),
        next_token: Cell::new(0),
        owns_role,
        reply_lent: Cell::new(false),
        spilled: Cell::new(0),
        keyed_idle: Cell::new(Idle::NEVER),
        in_runtime: AtomicBool::new(false),
        interruptible: AtomicBool::new(false),
        irq_pending: AtomicBool::new(false),
        spill_waiting: AtomicBool::new(false),
        stats: ThreadStats::new(cluster.cfg.time_split),
    })
}

/// Runs `spawn`'s future once per compute thread on a native cluster and
/// returns each thread's result (node-major) and the run's statistics.
pub fn run<T, F, Fut>(cfg: &RtConfig, handlers: &HandlerTable, spawn: F) -> Result<RtOutput<T>, RtError>
where
    T: Send,
    F: Fn(RtProc) -> Fut + Sync,
    Fut: Future<Output = Result<T, AmError>>,
{
    cfg.validate()?;
    crate::clock::calibrate();
    // Held until every thread of the run is joined.
    let _handler = if cfg.policy == Policy::Floating && cfg.interrupts {
        Some(interrupt::install().map_err(RtError::Setup)?)
    } else {
        None
    };
    let (cluster, producers) = build(cfg, handlers);
    let ppn = cfg.topology.procs_per_node;
    let compute = cfg.compute_threads_per_node();
    let cores = online_cores();
    let started = Stamp::now();
    let finished = AtomicU32::new(0);
    let total_compute = cfg.topology.nodes * compute;
    let mut producers = producers.into_iter();
    let mut setup_error = None;
    let outcomes: Vec<(u32, u32, Result<T, RtError>, ThreadTimes)> = std::thread::scope(|s| {
        let mut compute_handles = Vec::new();
        let mut pp_handles = Vec::new();
        'start: for n in 0..cfg.topology.nodes {
            for l in 0..ppn {
                let prods = producers.next().expect("one producer set per thread");
                let cluster = &cluster;
                let finished = &finished;
                let spawn = &spawn;
                let core = (n * ppn + l) as usize % cores;
                let builder = std::thread::Builder::new().name(format!("fg-n{n}-t{l}"));
                let spawned = if l < compute {
                    builder
                        .spawn_scoped(s, move || {
                            if cluster.cfg.pin {
                                pin_to(core);
                            }
                            let ctx = make_ctx(cluster, prods, n, l);
                            cluster.node(n).pthreads[l as usize].store(interrupt::current_thread(), Ordering::Release);
                            let registration = interrupt::Registration::new(&ctx);
                            let proc = RtProc { ctx: ctx.clone() };
                            let outcome =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| block_on(spawn(proc))));
                            let result = match outcome {
                                Ok(Ok(v)) => Ok(v),
                                Ok(Err(e)) => Err(RtError::App { node: n, thread: l, error: e }),
                                Err(_) => Err(RtError::AppPanic { node: n, thread: l }),
                            };
                            if result.is_err() {
                                // Others may wait for replies that will never come.
                                cluster.fail_app(n, l);
                            }
                            // Stay available as PP for the others once done.
                            cluster.node(n).running.fetch_sub(1, Ordering::AcqRel);
                            finished.fetch_add(1, Ordering::AcqRel);
                            if cluster.cfg.policy.compute_procs_handle() {
                                ctx.serve(|| all_done(cluster, n, finished, total_compute));
                            }
                            drop(registration);
                            let times = ctx.stats.times(n, l, true);
                            (n, l, result, times)
                        })
                        .map(|h| compute_handles.push(h))
                } else {
                    builder
                        .spawn_scoped(s, move || {
                            if cluster.cfg.pin {
                                pin_to(core);
                            }
                            if let Ok(mut t) = cluster.node(n).pp_threads.lock() {
                                t.push(std::thread::current());
                            }
                            let ctx = make_ctx(cluster, prods, n, l);
                            ctx.serve(|| all_done(cluster, n, finished, total_compute));
                            ctx.stats.times(n, l, false)
                        })
                        .map(|h| pp_handles.push(h))
                };
                if let Err(e) = spawned {
                    // The threads already running would wait for this one
                    // for ever: stop them.
                    setup_error = Some(format!("cannot start thread {l} of node {n}: {e}"));
                    cluster.fail(FAIL_SETUP, HandlerId(0), None);
                    break 'start;
                }
            }
        }
        // Protocol threads stop by themselves once every application has
        // returned and their node is drained (see `all_done`).
        let mut out: Vec<_> = compute_handles.into_iter().map(|h| h.join().expect("compute thread joins")).collect();
        for h in pp_handles {
            let times = h.join().expect("protocol thread joins");
            out.push((u32::MAX, 0, Err(RtError::Setup(String::new())), times));
        }
        out
    });
    let wall_ns = started.elapsed_ns();
    if let Some(e) = setup_error {
        return Err(RtError::Setup(e));
    }
    if let Some(e) = cluster.failure_error() {
        return Err(e);
    }
    let mut results = Vec::new();
    let mut threads = Vec::new();
    let mut first_error = None;
    for (n, l, r, times) in outcomes {
        threads.push(times);
        if n == u32::MAX {
            continue;
        }
        match r {
            Ok(v) => results.push(v),
            // The failure that stopped the run, not the aborts it caused.
            Err(e) if cluster.failed_app() == Some((n, l)) => return Err(e),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let sum = |f: fn(&ThreadTimes) -> u64| threads.iter().map(f).sum();
    let stats = RtStats {
        wall_ns,
        requests: sum(|t| t.requests),
        messages: sum(|t| t.sent),
        spilled: sum(|t| t.spilled),
        handlers: sum(|t| t.handlers),
        interrupts: sum(|t| t.interrupts),
        threads,
    };
    Ok(RtOutput { results, stats })
}
