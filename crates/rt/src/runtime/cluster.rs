//! What the threads of a run share: the cluster (configuration, handlers,
//! transport, nodes, failure state) and each node's local state (its
//! inbox, dispatch state and reply mailboxes, and the memory its threads
//! touch).

use super::RtError;
use crate::config::RtConfig;
use crate::dispatch::keyed::{KeyedQueue, ServerLimit};
use crate::dispatch::serial::Cursor;
use crate::notify::{Doorbell, Scheme};
use crate::transport::{Inbox, Transport, MAX_PAYLOAD};
use crossbeam_utils::CachePadded;
use finegrain_core::{AmError, HandlerId, HandlerTable, Message, Payload, Policy, MAX_ARGS};
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

/// How a node's threads share its messages, as the runtime carries the
/// policy out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// One thread per node computes and handles, holding the node's role
    /// for good: Single, and the co-processor's main-am library (the
    /// co-processor only moves messages; the main processor handles them
    /// when it polls).
    Single,
    /// Dedicated protocol threads; compute threads never handle.
    Fixed,
    /// Idle compute threads handle; computing ones may be interrupted.
    Floating,
    /// The co-processor's coproc-am and optimized libraries: a progress
    /// thread serves the node and forwards what it may not run to the main
    /// thread, which runs it when it polls, waits or sends.
    Coproc,
}

impl Mode {
    pub(super) fn of(cfg: &RtConfig) -> Mode {
        match cfg.run.policy {
            Policy::Single => Mode::Single,
            Policy::Fixed { .. } => Mode::Fixed,
            Policy::Floating => Mode::Floating,
            Policy::Coprocessor { .. } if cfg.progress_thread() => Mode::Coproc,
            Policy::Coprocessor { .. } => Mode::Single,
        }
    }
}

/// Coproc: the messages a node's progress thread handed to its main
/// thread. Only forwarded messages go through it (user atomic functions,
/// and under optimized user handlers), so a lock is cheap enough; the
/// count lets the main thread look without taking it.
pub(super) struct Forwarded {
    queue: Mutex<VecDeque<Message>>,
    count: AtomicUsize,
    /// The progress thread has stopped serving: nothing more will come.
    pub(super) progress_done: AtomicBool,
}

impl Forwarded {
    fn new() -> Forwarded {
        Forwarded {
            queue: Mutex::new(VecDeque::new()),
            count: AtomicUsize::new(0),
            progress_done: AtomicBool::new(false),
        }
    }

    /// Hands `m` to the main thread (a copy: the progress thread's scratch
    /// message is reused for the next one).
    pub(super) fn push(&self, m: &Message) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.push_back(m.clone());
        self.count.fetch_add(1, Ordering::Release);
    }

    /// The oldest forwarded message, if any.
    pub(super) fn pop(&self) -> Option<Message> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let m = q.pop_front()?;
        self.count.fetch_sub(1, Ordering::Relaxed);
        Some(m)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.count.load(Ordering::Acquire) == 0
    }
}

/// Handler failures are recorded without allocating (they may happen in
/// interrupt context) and turned into messages after the run.
#[derive(Default)]
pub(super) struct Failure {
    /// 0 none, 1 panicked, 2 returned an error, 3 did not reply, 4 unknown
    /// handler, 5 an application failed, 6 a thread could not start, 7 an
    /// application thread's own operation failed.
    kind: AtomicU8,
    handler: AtomicU32,
    error: Mutex<Option<AmError>>,
    /// Node and thread (high and low 32 bits) of a FAIL_APP or FAIL_THREAD;
    /// node and milliseconds of a FAIL_HUNG; node and process id of a
    /// FAIL_PEER (process id 0: it failed, rather than died).
    app: AtomicU64,
}

/// Which handler a thread is running and since when (0: none), for the
/// handler time limit.
#[derive(Default)]
pub(super) struct HandlerClock {
    pub(super) since: AtomicU64,
    pub(super) handler: AtomicU32,
    /// The thread's Linux thread id (0 until it starts), for its run delay.
    pub(super) tid: std::sync::atomic::AtomicI32,
}

impl HandlerClock {
    /// Records the calling thread as the one this clock times.
    pub(super) fn register(&self) {
        // SAFETY: gettid has no preconditions.
        self.tid.store(unsafe { libc::gettid() }, Ordering::Release);
    }
}

pub(super) const FAIL_PANIC: u8 = 1;
pub(super) const FAIL_ERROR: u8 = 2;
pub(super) const FAIL_NO_REPLY: u8 = 3;
pub(super) const FAIL_UNKNOWN: u8 = 4;
/// An application returned an error or panicked; its own outcome says why.
const FAIL_APP: u8 = 5;
/// A thread of the run could not be started.
pub(super) const FAIL_SETUP: u8 = 6;
/// An application thread's operation failed in a way it cannot be told
/// (`Proc::access` returns nothing, a request's reply never came); the
/// failure carries its error.
const FAIL_THREAD: u8 = 7;
/// A handler ran over the handler time limit.
const FAIL_HUNG: u8 = 8;
/// Another process's node failed or died.
const FAIL_PEER: u8 = 9;
/// The transport's shared state was found corrupt; the failure carries
/// what was found.
const FAIL_CORRUPT: u8 = 10;

/// What a request or send still in progress returns once the run failed.
pub(super) fn run_aborted() -> AmError {
    AmError::Aborted("the run stopped: a handler or another thread failed".into())
}

/// A compute thread's reply mailbox: the reply handler (on whichever thread
/// acts as PP) fills it and publishes the token; the waiting thread reads
/// it after seeing its token.
pub(super) struct Completion {
    pub(super) token: AtomicU64,
    pub(super) handler: AtomicU32,
    pub(super) nargs: AtomicU32,
    pub(super) args: [AtomicU64; MAX_ARGS],
    pub(super) src_node: AtomicU32,
    /// Written only by the acting PP between the requester's send and the
    /// token store, read only by the requester after the token load.
    pub(super) payload: UnsafeCell<Payload>,
}

// SAFETY: `payload` is written only by the thread handling the reply
// (one request has one reply) before its Release store of `token`, and
// read only by the requesting thread after an Acquire load that observed
// that token, and before it sends its next request. Everything else is
// atomic.
unsafe impl Sync for Completion {}

impl Completion {
    fn new() -> Completion {
        Completion {
            token: AtomicU64::new(0),
            handler: AtomicU32::new(0),
            nargs: AtomicU32::new(0),
            args: std::array::from_fn(|_| AtomicU64::new(0)),
            src_node: AtomicU32::new(0),
            payload: UnsafeCell::new(Payload::with_capacity(MAX_PAYLOAD)),
        }
    }
}

/// A node's own state: what only its threads use. (What its senders read
/// is its [`Doorbell`], which the transport keeps.)
pub(super) struct Node<T: Transport> {
    /// Everything sent to this node.
    pub(super) inbox: T::Inbox,
    /// Serial discipline: where the acting PP's next drain starts.
    pub(super) cursor: Cursor,
    /// Floating: threads waiting for a reply or serving for want of work
    /// (in `idle`, or done with their application): the role's possible
    /// takers.
    pub(super) waiting: CachePadded<AtomicU32>,
    /// Compute threads whose application has not returned yet: only these
    /// can still come to wait, so hand-off keeps the role only while a peer
    /// is among them.
    pub(super) running: CachePadded<AtomicU32>,
    pub(super) completions: Box<[CachePadded<Completion>]>,
    pub(super) segments: Box<[Box<[AtomicU64]>]>,
    pub(super) table: Box<[AtomicU64]>,
    pub(super) recv: Box<[Box<[AtomicU64]>]>,
    /// Parallel disciplines: the node's dispatch (None: serial).
    pub(super) keyed: Option<KeyedQueue>,
    /// Parallel disciplines: how many threads may serve at once.
    pub(super) servers: ServerLimit,
    /// Coproc: what the progress thread leaves to the main thread.
    pub(super) forwarded: Forwarded,
}

impl<T: Transport> Node<T> {
    pub(super) fn new(cfg: &RtConfig, inbox: T::Inbox) -> Node<T> {
        let compute = cfg.compute_threads_per_node() as usize;
        Node {
            inbox,
            cursor: Cursor::new(),
            waiting: CachePadded::new(AtomicU32::new(0)),
            running: CachePadded::new(AtomicU32::new(compute as u32)),
            completions: (0..compute).map(|_| CachePadded::new(Completion::new())).collect(),
            segments: (0..compute).map(|_| atomic_words(cfg.segment_bytes)).collect(),
            table: atomic_words(cfg.protocol_table_bytes().max(8)),
            recv: (0..compute).map(|_| atomic_words(MAX_PAYLOAD)).collect(),
            keyed: cfg.run.dispatch.discipline.parallel().then(|| {
                KeyedQueue::new(cfg.run.dispatch.discipline, cfg.pdq_window).expect("validated with the configuration")
            }),
            servers: ServerLimit::new(cfg.run.dispatch.max_servers),
            forwarded: Forwarded::new(),
        }
    }

    /// Whether a message may be waiting in the inbox (any thread).
    #[inline]
    pub(super) fn any_ready(&self) -> bool {
        self.inbox.ready()
    }

    /// Messages in the inbox, or decoded and queued (parallel disciplines).
    #[inline]
    pub(super) fn work_waiting(&self) -> bool {
        self.keyed.as_ref().is_some_and(|k| k.queued() > 0) || self.any_ready()
    }
}

fn atomic_words(bytes: usize) -> Box<[AtomicU64]> {
    (0..bytes.div_ceil(8)).map(|_| AtomicU64::new(0)).collect()
}

/// Everything the threads of a run share.
pub(crate) struct Cluster<T: Transport> {
    pub(super) cfg: RtConfig,
    pub(super) handlers: HandlerTable,
    pub(super) transport: T,
    /// The nodes this process runs, by node id. Padded so one node's hot
    /// fields never share a line with another's.
    pub(super) nodes: Box<[CachePadded<Node<T>>]>,
    /// The first node this process runs (`nodes[0]`).
    pub(super) first: u32,
    /// Per local thread (node-major): the handler it runs now.
    pub(super) clocks: Box<[CachePadded<HandlerClock>]>,
    /// Threads per node (compute and protocol), for indexing the clocks.
    pub(super) ppn: u32,
    /// How the policy is carried out.
    pub(super) mode: Mode,
    /// Coproc: per handler id, whether the progress thread runs it (the
    /// rest is forwarded to the main thread). Empty otherwise.
    progress_runs: Box<[bool]>,
    /// How nodes notice messages (from the configuration).
    pub(super) notify: Scheme,
    /// The run is aborted (a handler failed, or an application returned an
    /// error): every thread stops at once, whatever is still queued.
    pub(super) shutdown: AtomicBool,
    failure: Failure,
    pub(super) oversubscribed: bool,
}

impl<T: Transport> Cluster<T> {
    pub(super) fn new(
        cfg: &RtConfig,
        handlers: &HandlerTable,
        transport: T,
        nodes: Box<[CachePadded<Node<T>>]>,
        first: u32,
        oversubscribed: bool,
    ) -> Cluster<T> {
        let threads = nodes.len() * cfg.threads_per_node() as usize;
        let mode = Mode::of(cfg);
        let progress_runs = match mode {
            Mode::Coproc => handlers.infos().map(|(id, _)| cfg.progress_runs(handlers.library_op(id))).collect(),
            _ => Box::default(),
        };
        Cluster {
            cfg: cfg.clone(),
            handlers: handlers.clone(),
            transport,
            nodes,
            first,
            clocks: (0..threads).map(|_| CachePadded::new(HandlerClock::default())).collect(),
            ppn: cfg.threads_per_node(),
            mode,
            progress_runs,
            notify: Scheme::of(cfg.run.policy, cfg.park_after_polls.is_some(), cfg.interrupts()),
            shutdown: AtomicBool::new(false),
            failure: Failure::default(),
            oversubscribed,
        }
    }

    #[inline]
    pub(super) fn node(&self, n: u32) -> &Node<T> {
        &self.nodes[(n - self.first) as usize]
    }

    /// Coproc: whether the progress thread runs `handler` itself. An
    /// unknown id counts as its own, so `handle` reports it at once.
    #[inline]
    pub(super) fn progress_runs(&self, handler: HandlerId) -> bool {
        self.progress_runs.get(handler.index()).copied().unwrap_or(true)
    }

    /// The handler clock of thread `local` of local node `n`.
    #[inline]
    pub(super) fn clock(&self, n: u32, local: u32) -> &HandlerClock {
        &self.clocks[((n - self.first) * self.ppn + local) as usize]
    }

    /// A local node's doorbell.
    #[inline]
    pub(super) fn bell(&self, n: u32) -> &Doorbell {
        self.transport.doorbell(n).expect("a local node's doorbell is always reachable")
    }

    pub(super) fn fail(&self, kind: u8, handler: HandlerId, error: Option<AmError>) {
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

    #[inline]
    pub(super) fn failed(&self) -> bool {
        self.failure.kind.load(Ordering::Relaxed) != 0
    }

    /// Application `(node, thread)` failed: every other thread stops too
    /// (requests in flight may never be answered). Only the first failure
    /// is reported; a handler failure seen before it takes precedence.
    pub(super) fn fail_app(&self, node: u32, thread: u32) {
        if self.fail_first(FAIL_APP, HandlerId(0), None) {
            self.failure.app.store((node as u64) << 32 | thread as u64, Ordering::Release);
        }
    }

    /// Application `(node, thread)` did something the run cannot go on
    /// from; reported as that thread's failure, whatever it returns.
    pub(super) fn fail_thread(&self, node: u32, thread: u32, error: AmError) {
        if self.fail_first(FAIL_THREAD, HandlerId(0), Some(error)) {
            self.failure.app.store((node as u64) << 32 | thread as u64, Ordering::Release);
        }
    }

    /// A handler of node `node` ran over the time limit (`ms`).
    pub(super) fn fail_hung(&self, node: u32, handler: HandlerId, ms: u64) {
        if self.fail_first(FAIL_HUNG, handler, None) {
            self.failure.app.store((node as u64) << 32 | ms, Ordering::Release);
        }
    }

    /// Node `node` of another process failed (`pid` 0) or died.
    pub(super) fn fail_peer(&self, node: u32, pid: u32) {
        if self.fail_first(FAIL_PEER, HandlerId(0), None) {
            self.failure.app.store((node as u64) << 32 | pid as u64, Ordering::Release);
        }
    }

    /// The transport's shared state is corrupt (`what` says where).
    pub(super) fn fail_corrupt(&self, what: String) {
        self.fail_first(FAIL_CORRUPT, HandlerId(0), Some(AmError::Aborted(what)));
    }

    /// Whether the run stopped for another process's node.
    pub(super) fn failed_for_peer(&self) -> bool {
        self.failure.kind.load(Ordering::Acquire) == FAIL_PEER
    }

    /// The application whose failure stopped the run, if one did.
    pub(super) fn failed_app(&self) -> Option<(u32, u32)> {
        if self.failure.kind.load(Ordering::Acquire) != FAIL_APP {
            return None;
        }
        let v = self.failure.app.load(Ordering::Acquire);
        Some(((v >> 32) as u32, v as u32))
    }

    pub(super) fn failure_error(&self) -> Option<RtError> {
        let kind = self.failure.kind.load(Ordering::Acquire);
        if kind == 0 || kind == FAIL_APP || kind == FAIL_SETUP {
            return None;
        }
        if kind == FAIL_CORRUPT {
            let what = self.failure.error.lock().ok().and_then(|e| e.clone());
            return Some(RtError::Corrupt(match what {
                Some(AmError::Aborted(what)) => what,
                _ => "the transport's shared state".into(),
            }));
        }
        if kind == FAIL_THREAD {
            let v = self.failure.app.load(Ordering::Acquire);
            let error = self.failure.error.lock().ok().and_then(|e| e.clone()).unwrap_or_else(run_aborted);
            return Some(RtError::App { node: (v >> 32) as u32, thread: v as u32, error });
        }
        let id = HandlerId(self.failure.handler.load(Ordering::Relaxed) as u16);
        let name = self.handlers.info(id).map(|i| i.name.clone()).unwrap_or_else(|_| format!("#{}", id.0));
        if kind == FAIL_HUNG || kind == FAIL_PEER {
            let v = self.failure.app.load(Ordering::Acquire);
            let node = (v >> 32) as u32;
            return Some(match kind {
                FAIL_HUNG => RtError::HandlerHung { node, handler: name, limit_ms: v as u32 as u64 },
                _ if v as u32 == 0 => RtError::PeerFailed { node, error: String::new() },
                _ => RtError::PeerDied { node, pid: v as u32 },
            });
        }
        let e = match kind {
            FAIL_PANIC => AmError::HandlerFailed { handler: name, reason: "panicked".into() },
            FAIL_NO_REPLY => AmError::NoReply { handler: name },
            FAIL_UNKNOWN => AmError::UnknownHandler { id: id.0, len: self.handlers.len() },
            _ => self
                .failure
                .error
                .lock()
                .ok()
                .and_then(|e| e.clone())
                .unwrap_or(AmError::HandlerFailed { handler: name, reason: "failed".into() }),
        };
        Some(RtError::Handler(e))
    }
}
