//! The discrete-event engine and the protocol-processing policies.
//!
//! Each processor runs one activity at a time (computing, sending,
//! handling, taking an interrupt, taking or giving up the protocol-processor
//! role) whose end is an event. An activity's timing is worked out when it
//! starts: its bus transactions are reserved on the node's bus calendar and
//! its cache accesses update the caches. Computation (a thread's work and
//! its own memory accesses) is the only preemptible activity: an interrupt
//! stops it, and what is left over is resumed afterwards (delayed, never
//! lost).
//!
//! When an activity ends the processor decides what to do next
//! ([`Engine::decide`]); the policy (Single, Fixed, Floating) enters only
//! there and in [`Engine::check_notify`].
//!
//! Two components sit behind seams the engine calls: the network interface
//! ([`crate::ni`]: what sending and receiving a message cost, the NI's ports
//! and the network) and the notification scheme ([`crate::notify`]: how a
//! busy node comes to notice waiting messages, and at what cost).
//!
//! Under the serial discipline one processor at a time holds a node's
//! protocol-processor role (a lock). Under the parallel disciplines (PDQ,
//! spin-lock, static partitioning) up to a limit of processors serve at
//! once, each taking entries the node's [`NodeQueue`] lets it run.

mod coproc;
mod messages;
mod notice;
mod policy;
mod role;
mod threads;

use crate::bus::Phases;
use crate::config::SimConfig;
use crate::dispatch::{KeyLocks, NodeQueue, Watched};
use crate::event::{DirectStep, EventKind, EventQueue, Reserved};
use crate::memory::{AddressMap, NodeMemory, WordTransfer};
use crate::ni::{Mover, Ni, NiModel};
use crate::notify::{Notifier, Notify};
use crate::stats::{
    DelayStats, HandlerSpan, KeyCheck, LatencyStats, NodeStats, ProcRole, ProcStats, RunStats, TraceEvent,
};
use crate::thread::{mix_seed, Counted, Op, OpFault, OpResult, SimProc, ThreadShared};
use crate::timeline::{Doing, SharedSink};
use crate::SimError;
use finegrain_core::config::{ComputeParams, MAX_CYCLES};
use finegrain_core::{
    Access, AmError, Args, ConfigError, Discipline, HandlerCtx, HandlerId, HandlerTable, Message, MsgKind, NodeId,
    Payload, Policy, PpKind, Region, Relinquish, Reply, ReplyGuard, RoleArbitration, SyncKey, ThreadId,
};
use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Simulated time may not pass this cycle (about 730 years at 200 MHz):
/// well below where u64 arithmetic on times could wrap.
pub const CLOCK_LIMIT: u64 = 1 << 62;

/// A handler's registered costs are the program's input, like a preset's:
/// a body over [`MAX_CYCLES`] would take the handler's timeline past the
/// clock limit unchecked (it is added on every dispatch, where a check would
/// cost), and code larger than the cache would be fetched line by line on
/// every dispatch.
fn check_handlers(handlers: &HandlerTable, m: &finegrain_core::MachineConfig) -> Result<(), ConfigError> {
    for (_, info) in handlers.infos() {
        if info.body_cycles > MAX_CYCLES {
            return Err(ConfigError::invalid(
                &format!("handler '{}' body_cycles", info.name),
                info.body_cycles,
                format!("allowed at most {MAX_CYCLES} cycles"),
            ));
        }
        if info.code_bytes as u64 > m.cache.size_bytes {
            return Err(ConfigError::invalid(
                &format!("handler '{}' code_bytes", info.name),
                info.code_bytes,
                format!("allowed at most cache.size_bytes ({})", m.cache.size_bytes),
            ));
        }
    }
    Ok(())
}

/// Whose code the engine is running: a panic there is the application's
/// failure, reported like the native runtime's (naming the handler or the
/// thread), not an unwind through the caller of `simulate`. One panic catch
/// around the whole run and a marker set around each call cost less than a
/// catch per handler and per poll (a few instructions each, measured).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Running {
    /// The simulator's own code: a panic is its bug, and unwinds on.
    Engine,
    Handler(HandlerId),
    /// A thread's task (global thread index).
    Thread(u32),
}

/// A caught panic's message on one line (assertions span several).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => s,
        (_, Some(s)) => s.as_str(),
        _ => return "a panic without a message".into(),
    };
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Accounting category of a processor's current activity or idle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cat {
    Compute,
    Send,
    Wait,
    Handler,
    Interrupt,
    Role,
    PollIdle,
    /// Acting PP whose own work could run, keeping the role for want of a
    /// successor (the hand-off and adaptive relinquish rules).
    Hold,
    Idle,
}

impl Cat {
    fn doing(self) -> Doing {
        match self {
            Cat::Compute => Doing::Compute,
            Cat::Send => Doing::Send,
            Cat::Wait => Doing::Wait,
            Cat::Handler => Doing::Handler,
            Cat::Interrupt => Doing::Interrupt,
            Cat::Role => Doing::Role,
            Cat::PollIdle => Doing::PollIdle,
            Cat::Hold => Doing::Hold,
            Cat::Idle => Doing::Idle,
        }
    }
}

/// What must happen when a processor's activity ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    Nothing,
    /// The thread's operation is complete.
    ThreadOpDone,
    /// The thread has read its completion flag: hand it its reply.
    ThreadResumed,
    /// A handler ended: threads of the node waiting in `Proc::wait_until`
    /// check their condition again.
    Handled,
    /// The release of a locked role has run its instructions and unmasked
    /// the NI: the lock's releasing store is issued now.
    ReleaseLock,
}

/// The order of a role switch's steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RoleSwitch {
    /// The lock's write (if the role has a lock) and the mask store, then
    /// the instructions: taking the role, or giving up one without a lock
    /// (the unmasking store tells a dispatch device at once).
    LockFirst,
    /// The instructions and the unmasking, then the lock's releasing store,
    /// made when they end: giving up a locked role.
    LockLast,
}

#[derive(Clone, Copy, Debug)]
struct ComputeSegment {
    start: u64,
    work: u64,
    stall: u64,
    /// Foreign-set epoch its misses were sampled at.
    sampled: u32,
    /// The thread's own work (`Proc::work`, charged cycles), whose random
    /// segment accesses are sampled when it resumes; otherwise a
    /// `Proc::access`, whose accesses were all made when it started.
    synthetic: bool,
    /// How often the work touches its private segment.
    pattern: Pattern,
}

/// How a stretch of computation touches the thread's private segment:
/// `accesses` per `cycles` of it, `write_fraction` of them writes.
/// Synthetic and cycle-charged work use the machine's
/// `compute.access_interval_cycles` and `write_percent`; counted work
/// (`Proc::charge_work`) its own loads and stores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Pattern {
    accesses: u64,
    cycles: u64,
    write_fraction: f64,
}

impl Pattern {
    pub(super) fn synthetic(c: &ComputeParams) -> Pattern {
        Pattern { accesses: 1, cycles: c.access_interval_cycles, write_fraction: c.write_percent as f64 / 100.0 }
    }

    /// Charged computation: `total` cycles, of which `counted` came from
    /// counted work and the rest was charged as plain cycles.
    pub(super) fn charged(c: &ComputeParams, total: u64, counted: Counted) -> Pattern {
        if counted.cycles == 0 {
            return Pattern::synthetic(c);
        }
        let plain = total.saturating_sub(counted.cycles) / c.access_interval_cycles;
        let accesses = plain + counted.accesses;
        let writes = plain as f64 * c.write_percent as f64 / 100.0 + counted.stores as f64;
        let write_fraction = if accesses == 0 { 0.0 } else { writes / accesses as f64 };
        Pattern { accesses, cycles: total.max(1), write_fraction }
    }

    /// Accesses in `work` cycles of this computation.
    pub(super) fn accesses_in(&self, work: u64) -> f64 {
        work as f64 * self.accesses as f64 / self.cycles as f64
    }
}

/// Work an interrupt stopped: what is left, the epoch its misses were
/// already sampled at, and the part of their stall not yet served (a
/// segment's stall comes first, so an early interrupt leaves some).
#[derive(Clone, Copy, Debug)]
struct SavedWork {
    work: u64,
    sampled: u32,
    stall: u64,
    synthetic: bool,
    pattern: Pattern,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadState {
    /// Its task must be polled.
    Ready,
    /// An operation is being simulated on its processor.
    Busy,
    /// Waiting for the reply to its request.
    Waiting,
    /// Its reply handler has run; it has not noticed yet.
    ReplyArrived,
    /// In `Proc::wait_until`, waiting for a handler to run at its node
    /// (its processor serves meanwhile if the policy lets it, as while
    /// waiting for a reply).
    Awaiting,
    /// A handler ran at its node while it was awaiting: it checks its
    /// condition again next.
    Recheck,
    /// At a poll site, handling messages as protocol processor.
    PollDrain,
    /// Nothing to compute until its `idle` period ends.
    Paused,
    Finished,
}

/// The arrival-gap average gives each new gap this inverse weight: long
/// enough to see through the burst of a request and its reply.
const GAP_AVERAGE_WEIGHT: u64 = 32;

type Task<'a, T> = Pin<Box<dyn Future<Output = Result<T, AmError>> + 'a>>;

struct Thread<'a, T> {
    shared: Rc<ThreadShared>,
    task: Option<Task<'a, T>>,
    state: ThreadState,
    proc: usize,
    local: u32,
    reply: Option<Message>,
    issued_at: u64,
    waiting_on: Option<HandlerId>,
    /// The node's `handlers_run` when the thread last checked a
    /// `wait_until` condition: a handler run since then may have made it
    /// true.
    checked_at: u64,
    /// What the thread does once its charged cycles are computed.
    deferred: Option<Deferred>,
    /// The key of the `Proc::wait_until_keyed` it last awaited in, if any
    /// (see [`Engine::handler_code_ran`]).
    watch: Option<u64>,
    /// Its last wait was `Proc::wait_for_block`: released, it reissues an
    /// access that missed (read when the wait was submitted, since the
    /// thread's own code runs on past the wait before the engine charges
    /// its release).
    reissues: bool,
    /// A handler that could make its awaited condition true has run at its
    /// node since it last checked it.
    dirty: bool,
}

/// A thread step waiting behind charged computation.
enum Deferred {
    Op(Op),
    Finish,
}

struct Processor {
    node: usize,
    local: usize,
    thread: Option<usize>,
    dedicated: bool,
    /// Bumped whenever a new activity starts or one is preempted, so stale
    /// end events are recognised.
    gen: u32,
    busy: bool,
    /// The end of a quiet wait ([`Engine::start_quiet_wait`]) whose event
    /// was reserved, not pushed: until its place passes, the processor is
    /// busy as far as anyone waking it is concerned.
    quiet_until: Option<Reserved>,
    wake_pending: bool,
    cat: Cat,
    since: u64,
    /// Cycles before this time belong to `stall` rather than `cat`.
    stall_until: u64,
    after: After,
    compute: Option<ComputeSegment>,
    saved_work: Option<SavedWork>,
    in_interrupt: bool,
    interrupt_claim_tried: bool,
    holds_role: bool,
    /// Handlers run since this processor last took the role.
    stint_handled: u32,
    /// Handlers it runs in this stint before going back to work of its own
    /// (with a dispatch device): the messages waiting when an interrupted
    /// processor took the role, else one.
    stint_budget: u32,
    /// When a pending [`EventKind::Recheck`] of its holding fires.
    recheck_at: Option<u64>,
    /// It has written, in the role's lock line, that it waits idle for the
    /// role another processor holds (see [`Engine::announce_idle`]).
    announced: bool,
    /// Static partitioning: the queue this (dedicated) processor serves.
    server: usize,
    /// PDQ: the key and sequence number of the entry in service, completed
    /// when it finishes.
    serving: Option<(SyncKey, u64)>,
    /// Cycles of the current handler spent spinning on a key lock.
    spin: u64,
    /// Completion a reply handler produces, applied when it finishes.
    completion: Option<(usize, Message)>,
    /// Its thread's request (or one-way message), which it sends once it
    /// has taken the role (requests through the protocol processor,
    /// Floating and Single), and what its thread does once it is sent.
    send_first: Option<(Message, After)>,
    rng: ChaCha8Rng,
    stats: ProcStats,
}

struct Node {
    first_proc: usize,
    procs: usize,
    threads: u32,
    mem: NodeMemory,
    rx: NodeQueue,
    /// Serial discipline: the processor holding the role (or releasing it,
    /// until its lock's releasing store has landed).
    role: Option<usize>,
    /// The releasing store of the role's lock is in flight: a processor
    /// going idle now will be offered the role when it lands, and does not
    /// announce itself (its write would reach the line after the store in
    /// the cache model, which applies accesses in the order they are made).
    lock_release_in_flight: bool,
    /// Parallel disciplines: processors serving, and how many may.
    servers: u32,
    max_servers: u32,
    locks: KeyLocks,
    delays: Histogram<u64>,
    last_arrival: Option<u64>,
    /// Moving average of the time between arrivals (x16, fixed point), what
    /// the adaptive relinquish rule weighs the interrupt overhead against.
    arrival_gap_x16: Option<u64>,
    stats: NodeStats,
    /// Verifies the synchronization-key rules on every handler started.
    key_check: KeyCheck,
    /// Requests compute threads left for the protocol processor to send
    /// (requests through the protocol processor), oldest first.
    outbox: std::collections::VecDeque<Submitted>,
    /// Threads in [`ThreadState::Awaiting`]: a handler's end looks for
    /// them only if there are any.
    awaiting: u32,
    /// Handlers whose code has run here (their effects are visible from
    /// then on), on any processor or the co-processor.
    handlers_run: u64,
}

/// A request a compute thread left in its request line for the protocol
/// processor to send.
struct Submitted {
    msg: Message,
    /// Its request line.
    line: u32,
    /// When the thread's stores into the line are done.
    ready_at: u64,
}

/// Code lines of the dispatch loop and of each handler (same on every node).
struct CodeLayout {
    dispatch: (u32, u32),
    handlers: Vec<(u32, u32)>,
}

pub(crate) struct Engine<'a, 'h, T> {
    cfg: &'h SimConfig,
    handlers: &'h HandlerTable,
    code: CodeLayout,
    now: u64,
    queue: EventQueue,
    /// The network interfaces and the network between them.
    ni: Ni,
    /// How busy nodes notice waiting messages.
    notify: Notifier,
    nodes: Vec<Node>,
    procs: Vec<Processor>,
    threads: Vec<Thread<'a, T>>,
    results: Vec<Option<T>>,
    messages: Vec<Option<Message>>,
    /// When each message slot's message reached its node's queue.
    arrived_at: Vec<u64>,
    free_messages: Vec<u32>,
    /// Several processors of a node may handle at once.
    parallel: bool,
    /// The NI is a dispatch device (the machine has a `[pdq]` section):
    /// each protocol processor has its own dispatch register and the device
    /// keeps the queue, under every discipline. Otherwise the NI is a plain
    /// queue the acting PP drains in software.
    device_dispatch: bool,
    next_token: u64,
    finished: usize,
    abort: Option<SimError>,
    latency: LatencyStats,
    latency_sum: u128,
    spans: Vec<HandlerSpan>,
    /// Messages, handlers and thread accesses, when the run is traced.
    trace: Vec<TraceEvent>,
    delivered: u64,
    requests: u64,
    replies: u64,
    /// One-way messages threads sent, and the replies their handlers sent.
    one_way: u64,
    one_way_replies: u64,
    /// Where a caller showing progress reads the replies sent so far.
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Whose code is running, for a panic's error.
    running: Running,
    /// Policy coprocessor: the nodes' co-processors and their library.
    coproc: Option<coproc::CoprocNodes>,
    /// Where the run's timeline goes, if a caller records it.
    sink: Option<SharedSink>,
    /// With a sink: each message slot's timeline id, and the next id.
    flows: Vec<u64>,
    next_flow: u64,
}

/// Events between two publications of progress (a few milliseconds).
const PROGRESS_EVENTS: u64 = 1 << 14;

impl<'a, 'h, T> Engine<'a, 'h, T> {
    pub(crate) fn new<F, Fut>(cfg: &'h SimConfig, handlers: &'h HandlerTable, mut spawn: F) -> Result<Self, SimError>
    where
        F: FnMut(SimProc) -> Fut,
        Fut: Future<Output = Result<T, AmError>> + 'a,
    {
        cfg.validate()?;
        check_handlers(handlers, &cfg.machine)?;
        let m = &cfg.machine;
        let ppn = cfg.run.topology.procs_per_node as usize;
        let compute = cfg.run.policy.compute_procs(cfg.run.topology.procs_per_node) as usize;
        let handler_code: Vec<u32> = handlers.infos().map(|(_, info)| info.code_bytes).collect();
        let code_pieces: Vec<u32> =
            std::iter::once(m.protocol.dispatch_code_bytes).chain(handler_code.iter().copied()).collect();
        let mut map = AddressMap::new(m, &code_pieces)?;
        let code = CodeLayout {
            dispatch: map.alloc_code(m.protocol.dispatch_code_bytes),
            handlers: handler_code.iter().map(|&bytes| map.alloc_code(bytes)).collect(),
        };
        let mut nodes = Vec::new();
        let mut procs = Vec::new();
        let mut threads = Vec::new();
        let discipline = cfg.run.dispatch.discipline;
        let max_servers = match cfg.run.policy {
            // A co-processor node is refused by `SimConfig::validate`.
            Policy::Single | Policy::Coprocessor { .. } => 1,
            Policy::Fixed { protocol_procs } => protocol_procs,
            Policy::Floating => cfg.run.dispatch.max_servers.unwrap_or(ppn as u32),
        };
        let window = m.pdq.as_ref().map_or(1, |p| p.search_window);
        let affinity_passes = m.pdq.as_ref().map_or(0, |p| p.affinity_passes);
        for n in 0..cfg.run.topology.nodes as usize {
            let owners: Vec<Option<u32>> = (0..ppn).map(|p| (p < compute).then_some(p as u32)).collect();
            nodes.push(Node {
                first_proc: procs.len(),
                procs: ppn,
                threads: compute as u32,
                mem: NodeMemory::new(m, map.clone(), &owners, compute as u32),
                rx: NodeQueue::new(discipline, max_servers as usize, window, affinity_passes),
                role: None,
                lock_release_in_flight: false,
                servers: 0,
                max_servers,
                locks: KeyLocks::default(),
                // Up to 2^40 cycles (far beyond any run) at 3 significant figures.
                delays: Histogram::new_with_max(1 << 40, 3).expect("valid histogram bounds"),
                last_arrival: None,
                arrival_gap_x16: None,
                stats: NodeStats::default(),
                key_check: KeyCheck::default(),
                outbox: std::collections::VecDeque::new(),
                awaiting: 0,
                handlers_run: 0,
            });
            for p in 0..ppn {
                let thread = (p < compute).then(|| threads.len() + p);
                procs.push(Processor {
                    node: n,
                    local: p,
                    thread,
                    dedicated: p >= compute,
                    gen: 0,
                    busy: false,
                    quiet_until: None,
                    wake_pending: false,
                    cat: Cat::Idle,
                    since: 0,
                    stall_until: 0,
                    after: After::Nothing,
                    compute: None,
                    saved_work: None,
                    in_interrupt: false,
                    interrupt_claim_tried: false,
                    holds_role: false,
                    stint_handled: 0,
                    stint_budget: 0,
                    recheck_at: None,
                    announced: false,
                    server: p.saturating_sub(compute),
                    serving: None,
                    spin: 0,
                    completion: None,
                    send_first: None,
                    rng: ChaCha8Rng::seed_from_u64(mix_seed(cfg.run.seed, n as u64 + 1, p as u64 + 0x1000)),
                    stats: ProcStats {
                        role: if p < compute { ProcRole::Compute } else { ProcRole::Protocol },
                        ..ProcStats::default()
                    },
                });
            }
            for t in 0..compute {
                let shared = Rc::new(ThreadShared::new(
                    NodeId(n as u32),
                    ThreadId(t as u32),
                    cfg.run.topology.nodes,
                    compute as u32,
                    mix_seed(cfg.run.seed, n as u64 + 1, t as u64 + 1),
                    cfg.machine.compute.clone(),
                ));
                let proc = SimProc { shared: shared.clone() };
                // Once per thread, so caught here rather than by `run`.
                let task: Task<'a, T> = match catch_unwind(AssertUnwindSafe(|| spawn(proc))) {
                    Ok(fut) => Box::pin(fut),
                    Err(payload) => {
                        let message = panic_message(payload.as_ref());
                        return Err(SimError::AppPanic { node: n as u32, thread: t as u32, message });
                    }
                };
                threads.push(Thread {
                    shared,
                    task: Some(task),
                    state: ThreadState::Ready,
                    proc: n * ppn + t,
                    local: t as u32,
                    reply: None,
                    issued_at: 0,
                    waiting_on: None,
                    checked_at: 0,
                    deferred: None,
                    watch: None,
                    reissues: false,
                    dirty: false,
                });
            }
        }
        let results = threads.iter().map(|_| None).collect();
        let coproc = match cfg.run.policy {
            Policy::Coprocessor { library } => {
                Some(coproc::CoprocNodes::new(m, library, cfg.run.topology.nodes as usize, handlers)?)
            }
            _ => None,
        };
        Ok(Engine {
            cfg,
            handlers,
            code,
            now: 0,
            queue: EventQueue::with_capacity(1024),
            ni: Ni::new(m, &cfg.run.topology),
            notify: Notifier::new(m, cfg.run.topology.nodes as usize),
            nodes,
            procs,
            threads,
            results,
            messages: Vec::new(),
            arrived_at: Vec::new(),
            free_messages: Vec::new(),
            parallel: discipline.parallel(),
            device_dispatch: m.pdq.is_some(),
            next_token: 0,
            finished: 0,
            abort: None,
            latency: LatencyStats { min_cycles: u64::MAX, ..LatencyStats::default() },
            latency_sum: 0,
            spans: Vec::new(),
            trace: Vec::new(),
            delivered: 0,
            requests: 0,
            replies: 0,
            one_way: 0,
            one_way_replies: 0,
            progress: crate::progress::observer(),
            running: Running::Engine,
            coproc,
            sink: crate::timeline::take_sink(),
            flows: Vec::new(),
            next_flow: 1,
        })
    }

    /// Runs until every thread has finished; returns per-thread results
    /// (node-major) and the statistics. A panic in a handler or a thread
    /// ends the run with an error naming it (see [`Running`]).
    pub(crate) fn run(mut self) -> Result<(Vec<T>, RunStats), SimError> {
        match catch_unwind(AssertUnwindSafe(|| self.run_events())) {
            Ok(out) => out,
            Err(payload) => {
                let message = panic_message(payload.as_ref());
                match self.running {
                    Running::Engine => resume_unwind(payload),
                    Running::Handler(h) => {
                        let handler = self.handlers.info(h).map_or_else(|_| format!("#{}", h.0), |i| i.name.clone());
                        let reason = format!("panicked: {message}");
                        Err(SimError::Handler(AmError::HandlerFailed { handler, reason }))
                    }
                    Running::Thread(t) => {
                        let th = &self.threads[t as usize];
                        Err(SimError::AppPanic { node: th.shared.node.0, thread: th.local, message })
                    }
                }
            }
        }
    }

    fn run_events(&mut self) -> Result<(Vec<T>, RunStats), SimError> {
        if let Some(sink) = &self.sink {
            for pr in &self.procs {
                sink.borrow_mut().processor(pr.node as u32, pr.local as u32, pr.dedicated);
            }
        }
        for p in 0..self.procs.len() {
            self.wake(p);
        }
        while self.finished < self.threads.len() {
            let Some(ev) = self.queue.pop() else {
                return Err(SimError::Deadlock(self.describe_stuck()));
            };
            debug_assert!(ev.time >= self.now);
            self.now = ev.time;
            match ev.kind {
                EventKind::ProcWake { proc, gen } => self.on_proc_wake(proc as usize, gen),
                EventKind::Arrive { msg } => self.on_arrive(msg),
                EventKind::Interrupt { proc } => self.on_interrupt(proc as usize),
                EventKind::IdleEnd { thread } => self.on_idle_end(thread as usize),
                EventKind::Recheck { proc } => self.on_recheck(proc as usize),
                EventKind::RoleFree { node } => self.on_role_free(node as usize),
                EventKind::Submitted { node } => self.on_submitted(node as usize),
                EventKind::CoprocSend { msg } => self.on_coproc_send(msg),
                EventKind::CoprocDeliver { msg } => self.on_coproc_deliver(msg),
                EventKind::CoprocSeen { thread } => self.on_coproc_seen(thread as usize),
                EventKind::CoprocBufferFree { src, dst } => self.on_coproc_buffer_free(src as usize, dst as usize),
                EventKind::CoprocHandled { node } => self.wake_awaiting(node as usize, None),
                EventKind::CoprocChannelFree { src, dst } => self.on_coproc_channel_free(src as usize, dst as usize),
                EventKind::CoprocDeposit { msg } => self.on_coproc_deposit(msg),
                EventKind::CoprocDirect { msg, step } => self.on_coproc_direct(msg, step),
            }
            // Checked before taking: `take` would move the whole (large)
            // error out and back on every event.
            if self.abort.is_some() {
                return Err(self.abort.take().expect("checked"));
            }
            if self.queue.popped().is_multiple_of(PROGRESS_EVENTS) {
                self.publish_progress();
            }
        }
        self.publish_progress();
        let results = std::mem::take(&mut self.results);
        let stats = self.finish_stats();
        let results = results.into_iter().map(|r| r.expect("every thread finished")).collect();
        Ok((results, stats))
    }

    /// Tells a caller showing progress how many requests are answered.
    fn publish_progress(&self) {
        if let Some(p) = &self.progress {
            p.store(self.replies, std::sync::atomic::Ordering::Relaxed);
        }
    }

    // ----- time keeping ---------------------------------------------------

    fn account(&mut self, p: usize) {
        let now = self.now;
        let pr = &mut self.procs[p];
        let elapsed = now - pr.since;
        let stall = pr.stall_until.saturating_sub(pr.since).min(elapsed);
        let c = &mut pr.stats.cycles;
        c.stall += stall;
        let rest = elapsed - stall;
        match pr.cat {
            Cat::Compute => c.compute += rest,
            Cat::Send => c.send += rest,
            Cat::Wait => c.wait += rest,
            Cat::Handler => {
                let spin = pr.spin.min(rest);
                pr.spin -= spin;
                c.busy_wait += spin;
                c.handler += rest - spin;
            }
            Cat::Interrupt => c.interrupt += rest,
            Cat::Role => c.role += rest,
            Cat::PollIdle => c.poll_idle += rest,
            Cat::Hold => c.hold += rest,
            Cat::Idle => c.idle += rest,
        }
        let (since, cat) = (pr.since, pr.cat);
        pr.since = now;
        if self.sink.is_some() {
            self.trace_activity(p, since, stall, cat);
        }
    }

    /// Tells the sink what processor `p` did from `since` to now, the
    /// first `stall` cycles stalled on memory.
    #[cold]
    fn trace_activity(&mut self, p: usize, since: u64, stall: u64, cat: Cat) {
        let Some(sink) = &self.sink else { return };
        let (node, proc) = (self.procs[p].node as u32, self.procs[p].local as u32);
        let mut sink = sink.borrow_mut();
        if stall > 0 {
            sink.activity(node, proc, Doing::Stall, since, since + stall);
        }
        if since + stall < self.now {
            sink.activity(node, proc, cat.doing(), since + stall, self.now);
        }
    }

    /// Starts a non-idle activity of `duration` cycles, the first `stall` of
    /// which are stalled on memory.
    fn start_busy(&mut self, p: usize, cat: Cat, duration: u64, stall: u64, after: After) {
        self.account(p);
        let now = self.now;
        let pr = &mut self.procs[p];
        pr.gen = pr.gen.wrapping_add(1);
        pr.busy = true;
        pr.quiet_until = None;
        pr.wake_pending = false;
        pr.cat = cat;
        pr.stall_until = now + stall;
        pr.after = after;
        let gen = pr.gen;
        let end = self.deadline(duration);
        self.queue.push(end, EventKind::ProcWake { proc: p as u32, gen });
    }

    /// Whether a processor whose thread waits in `Proc::wait_until` can wait
    /// out a check of its condition that found it false quietly
    /// ([`Engine::start_quiet_wait`]): what it does when the check ends is
    /// go idle, waiting, and nothing but a wake-up can change that. So its
    /// compute processors never serve (the policy is Fixed) and it is doing
    /// nothing a role, an interrupt or a co-processor would return it to.
    fn can_wait_quietly(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        !self.cfg.run.policy.compute_procs_handle()
            && self.coproc.is_none()
            && !pr.holds_role
            && !pr.in_interrupt
            && pr.saved_work.is_none()
            && !pr.announced
    }

    /// A check of a `wait_until` condition that found it false, `duration`
    /// cycles of waiting: [`Engine::start_busy`] for [`Cat::Wait`] with its
    /// end event reserved instead of pushed. At that end the processor
    /// would only go idle waiting, as it is now in every respect but that a
    /// wake-up before the end must wait for the end ([`Engine::wake`] then
    /// pushes the reserved event, which runs where it would have). Checks
    /// like this are most of a DSM run's events: every handler's end wakes
    /// every thread waiting at its node (see [`Engine::wake_awaiting`]).
    fn start_quiet_wait(&mut self, p: usize, duration: u64) {
        debug_assert!(self.can_wait_quietly(p));
        self.account(p);
        let end = self.deadline(duration);
        let reserved = self.queue.reserve(end);
        let now = self.now;
        let pr = &mut self.procs[p];
        pr.gen = pr.gen.wrapping_add(1);
        pr.busy = false;
        pr.quiet_until = Some(reserved);
        pr.wake_pending = false;
        // Busy or idle, a waiting check's cycles are waiting.
        pr.cat = Cat::Wait;
        pr.stall_until = now;
        pr.after = After::Nothing;
    }

    /// The cycle `duration` from now. Durations come from the application
    /// (work, idle, charged cycles), so one that would take the clock past
    /// [`CLOCK_LIMIT`] ends the run with an error instead of wrapping it.
    fn deadline(&mut self, duration: u64) -> u64 {
        let end = self.now.saturating_add(duration);
        if end > CLOCK_LIMIT {
            self.fail(SimError::ClockLimit { now: self.now, duration });
            return CLOCK_LIMIT;
        }
        end
    }

    fn go_idle(&mut self, p: usize, cat: Cat) {
        self.account(p);
        let pr = &mut self.procs[p];
        pr.busy = false;
        pr.quiet_until = None;
        pr.cat = cat;
        pr.stall_until = 0;
        // An acting PP holding the role for want of a successor may now
        // hand it over.
        let n = self.procs[p].node;
        if self.parallel {
            if self.can_act(p) || self.idle_server(p) {
                self.wake_holders(n, p);
            }
        } else if let Some(h) = self.nodes[n].role {
            if h != p && self.can_act(p) {
                if !self.nodes[n].lock_release_in_flight {
                    self.announce_idle(p);
                }
                if self.has_own_work(h) {
                    self.wake(h);
                }
            }
        }
    }

    /// A processor that goes idle while another holds the serial role says
    /// so by writing the role's lock line (a waiting-for-the-role flag
    /// beside the lock): that is how an acting PP with work of its own
    /// learns a peer could take over. The write takes the line from the
    /// holder's cache, so the holder's release write fetches it back. The
    /// processor is idle, so the write's latency delays nobody; it clears
    /// the flag when it takes the role (the acquire's lock write) or goes
    /// back to its own work ([`Engine::clear_announcement`]). A dispatch
    /// device keeps track of who serves without a lock.
    fn announce_idle(&mut self, p: usize) {
        if self.procs[p].announced || !self.has_role_lock(self.procs[p].node) {
            return;
        }
        self.procs[p].announced = true;
        self.role_lock_write(p, self.now);
    }

    /// A processor that announced itself idle and now has work of its own
    /// again clears its flag, a write to the lock line. The store drains
    /// from the write buffer while the processor goes on, so it costs the
    /// bus and moves the line but delays nobody.
    fn clear_announcement(&mut self, p: usize) {
        if !self.procs[p].announced || self.procs[p].holds_role || !self.has_own_work(p) {
            return;
        }
        self.procs[p].announced = false;
        self.role_lock_write(p, self.now);
    }

    /// Parallel disciplines: servers keeping on for want of a successor
    /// reconsider (a processor became idle, or another started serving).
    fn wake_holders(&mut self, n: usize, except: usize) {
        for q in self.procs_of(n) {
            if q != except && self.idle_server(q) && self.has_own_work(q) {
                self.wake(q);
            }
        }
    }

    /// Makes an idle processor reconsider what to do, now.
    fn wake(&mut self, p: usize) {
        let pr = &mut self.procs[p];
        if let Some(end) = pr.quiet_until.take() {
            if !self.queue.passed(end) {
                // Still checking: it sees the wake-up when the check ends.
                pr.busy = true;
                let gen = pr.gen;
                self.queue.push_reserved(end, EventKind::ProcWake { proc: p as u32, gen });
                return;
            }
        }
        if pr.busy || pr.wake_pending {
            return;
        }
        pr.wake_pending = true;
        let gen = pr.gen;
        self.queue.push(self.now, EventKind::ProcWake { proc: p as u32, gen });
    }

    fn on_proc_wake(&mut self, p: usize, gen: u32) {
        if self.procs[p].gen != gen {
            return; // a preempted activity's end, or superseded wake-up
        }
        if self.procs[p].busy {
            self.finish_activity(p);
        } else if self.procs[p].wake_pending {
            self.procs[p].wake_pending = false;
        } else {
            return;
        }
        self.decide(p);
    }

    fn finish_activity(&mut self, p: usize) {
        self.account(p);
        let pr = &mut self.procs[p];
        pr.busy = false;
        pr.stall_until = 0;
        let after = std::mem::replace(&mut pr.after, After::Nothing);
        if after == After::ReleaseLock {
            return self.issue_lock_release(p);
        }
        let pr = &mut self.procs[p];
        let finished_compute = pr.compute.take().is_some();
        // Most activities complete no request: test before taking, as a
        // `take` copies the whole (message-sized) option every time.
        let completion = if pr.completion.is_some() { pr.completion.take() } else { None };
        if let Some((key, seq)) = pr.serving.take() {
            let n = pr.node;
            if let Err(e) = self.nodes[n].rx.complete(key, seq) {
                return self.fail(SimError::Invariant(e.to_string()));
            }
        }
        if let Some((t, reply)) = completion {
            self.complete_request(p, t, reply);
        }
        if after == After::Handled {
            self.wake_awaiting(self.procs[p].node, Some(p));
        }
        let Some(t) = self.procs[p].thread else {
            return;
        };
        if finished_compute && self.threads[t].deferred.is_some() {
            self.threads[t].state = ThreadState::Ready; // charged work done; the deferred step runs next
        } else if finished_compute || after == After::ThreadOpDone {
            self.thread_ready(t, OpResult::Done);
        } else if after == After::ThreadResumed {
            let reply = self.threads[t].reply.take().expect("resumed thread has its reply");
            let lat = self.now - self.threads[t].issued_at;
            self.record_latency(lat);
            self.thread_ready(t, OpResult::Reply(reply));
        }
    }

    /// Hands thread `t` its operation's result to take when polled. A
    /// result still there from an earlier operation means the thread
    /// started this one without taking that one's (two awaited at once, or
    /// one dropped): the run ends, the thread is not polled again (false),
    /// and nothing takes the wrong result. Checked here, where the slot is
    /// written anyway, rather than after every poll.
    #[inline]
    fn thread_ready(&mut self, t: usize, result: OpResult) -> bool {
        let th = &mut self.threads[t];
        let mut slot = th.shared.result.borrow_mut();
        if slot.is_some() {
            drop(slot);
            self.result_unclaimed(t);
            return false;
        }
        *slot = Some(result);
        th.state = ThreadState::Ready;
        true
    }

    /// Out of line: `thread_ready` is on every operation's path.
    #[cold]
    #[inline(never)]
    fn result_unclaimed(&mut self, t: usize) {
        self.threads[t].state = ThreadState::Paused;
        self.fault(t, OpFault::TwoAtOnce);
    }

    fn record_latency(&mut self, lat: u64) {
        let l = &mut self.latency;
        l.count += 1;
        l.min_cycles = l.min_cycles.min(lat);
        l.max_cycles = l.max_cycles.max(lat);
        self.latency_sum += lat as u128;
    }

    fn fail(&mut self, e: SimError) {
        if self.abort.is_none() {
            self.abort = Some(e);
        }
    }

    fn describe_stuck(&self) -> String {
        let stuck: Vec<String> = self
            .threads
            .iter()
            .filter(|t| t.state != ThreadState::Finished)
            .take(4)
            .map(|t| {
                let what = match t.waiting_on.and_then(|h| self.handlers.info(h).ok()) {
                    Some(info) => format!("waits for the reply to a '{}' request", info.name),
                    None if t.state == ThreadState::Awaiting => {
                        "waits for a condition (Proc::wait_until) that no handler made true".to_string()
                    }
                    None => format!("is {:?}", t.state),
                };
                let pr = &self.procs[t.proc];
                let serving = if pr.holds_role { ", serving" } else { "" };
                format!(
                    "node {} thread {} {} (its processor {:?}{serving}, node servers {})",
                    t.shared.node.0, t.local, what, pr.cat, self.nodes[pr.node].servers
                )
            })
            .collect();
        format!("no event left at cycle {} while {}", self.now, stuck.join("; "))
    }

    fn finish_stats(&mut self) -> RunStats {
        for p in 0..self.procs.len() {
            self.account(p);
        }
        let sim = self.now;
        let mut stats = RunStats {
            sim_cycles: sim,
            events: self.queue.handled(),
            messages: self.delivered,
            requests: self.requests,
            replies: self.replies,
            one_way: self.one_way,
            one_way_replies: self.one_way_replies,
            ..RunStats::default()
        };
        let mut compute_share = 0.0;
        let mut compute_procs = 0;
        let mut occupancy = 0.0;
        for n in 0..self.nodes.len() {
            let coproc = self.coproc_stats(n);
            let node = &mut self.nodes[n];
            let mut ns = std::mem::take(&mut node.stats);
            ns.coproc = coproc;
            let mut handler_cycles = 0;
            for local in 0..node.procs {
                let pr = &self.procs[node.first_proc + local];
                let mut ps = pr.stats.clone();
                ps.misses = node.mem.misses[local];
                stats.cycles.add(&ps.cycles);
                stats.misses.add(&ps.misses);
                stats.interrupts += ps.interrupts;
                stats.handlers += ps.handlers;
                handler_cycles += ps.cycles.handler;
                if pr.thread.is_some() && sim > 0 {
                    compute_share += ps.cycles.compute as f64 / sim as f64;
                    compute_procs += 1;
                }
                ns.procs.push(ps);
            }
            if sim > 0 {
                occupancy += handler_cycles as f64 / sim as f64;
            }
            ns.bus = node.mem.bus.totals();
            let d = &node.delays;
            ns.queue_delay = DelayStats {
                count: d.len(),
                mean_cycles: if d.is_empty() { 0.0 } else { d.mean() },
                p99_cycles: d.value_at_quantile(0.99),
                max_cycles: d.max(),
            };
            stats.nodes.push(ns);
        }
        stats.measured_u = if compute_procs > 0 { compute_share / compute_procs as f64 } else { 0.0 };
        stats.pp_occupancy = occupancy / self.nodes.len().max(1) as f64;
        let l = &mut self.latency;
        if l.count > 0 {
            l.mean_cycles = self.latency_sum as f64 / l.count as f64;
        } else {
            l.min_cycles = 0;
        }
        stats.request_latency = self.latency.clone();
        stats.handler_spans = std::mem::take(&mut self.spans);
        stats.trace = std::mem::take(&mut self.trace);
        stats
    }
}

/// Per-processor cycle totals must add up to the run time (used by tests).
pub fn cycles_consistent(stats: &RunStats) -> bool {
    stats.nodes.iter().flat_map(|n| n.procs.iter()).all(|p| p.cycles.total() == stats.sim_cycles)
}
