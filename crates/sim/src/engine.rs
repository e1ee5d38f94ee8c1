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
//! there and in [`Engine::check_interrupt`].
//!
//! Under the serial discipline one processor at a time holds a node's
//! protocol-processor role (a lock). Under the parallel disciplines (PDQ,
//! spin-lock, static partitioning) up to a limit of processors serve at
//! once, each taking entries the node's [`NodeQueue`] lets it run.

use crate::bus::{Calendar, Phases};
use crate::config::SimConfig;
use crate::dispatch::{KeyLocks, NodeQueue, Watched};
use crate::event::{EventKind, EventQueue};
use crate::memory::{AddressMap, NodeMemory, WordTransfer};
use crate::stats::{DelayStats, HandlerSpan, KeyCheck, LatencyStats, NodeStats, ProcStats, RunStats};
use crate::thread::{mix_seed, Op, OpResult, SimProc, ThreadShared};
use crate::SimError;
use finegrain_core::{
    Access, AmError, Discipline, HandlerCtx, HandlerId, HandlerTable, Message, MsgKind, NodeId, Policy, PpKind, Region,
    Relinquish, Reply, ReplyGuard, RoleArbitration, SyncKey, ThreadId,
};
use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Simulated time may not pass this cycle (about 730 years at 200 MHz):
/// well below where u64 arithmetic on times could wrap.
pub const CLOCK_LIMIT: u64 = 1 << 62;

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

/// What must happen when a processor's activity ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    Nothing,
    /// The thread's operation is complete.
    ThreadOpDone,
    /// The thread has read its completion flag: hand it its reply.
    ThreadResumed,
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
    /// What the thread does once its charged cycles are computed.
    deferred: Option<Deferred>,
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
    /// PDQ: the key of the entry in service, completed when it finishes.
    serving: Option<SyncKey>,
    /// Cycles of the current handler spent spinning on a key lock.
    spin: u64,
    /// Completion a reply handler produces, applied when it finishes.
    completion: Option<(usize, Message)>,
    seen_arrivals: u64,
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
    irq_pending: bool,
    arbiter_next: usize,
    /// Arrival count: a change invalidates the PPs' cached arrival register.
    arrivals: u64,
    last_arrival: Option<u64>,
    /// Moving average of the time between arrivals (x16, fixed point), what
    /// the adaptive relinquish rule weighs the interrupt overhead against.
    arrival_gap_x16: Option<u64>,
    /// The NI's injection and ejection ports, as calendars like the bus:
    /// a message sent later in event order but earlier in simulated time
    /// does not queue behind replies timed into the future.
    out_port: Calendar,
    in_port: Calendar,
    stats: NodeStats,
    /// Verifies the synchronization-key rules on every handler started.
    key_check: KeyCheck,
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
    delivered: u64,
    requests: u64,
    replies: u64,
    /// Where a caller showing progress reads the replies sent so far.
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
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
        let m = &cfg.machine;
        let ppn = cfg.topology.procs_per_node as usize;
        let compute = cfg.policy.compute_procs(cfg.topology.procs_per_node) as usize;
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
        let discipline = cfg.dispatch.discipline;
        let max_servers = match cfg.policy {
            Policy::Single => 1,
            Policy::Fixed { protocol_procs } => protocol_procs,
            Policy::Floating => cfg.dispatch.max_servers.unwrap_or(ppn as u32),
        };
        let window = m.pdq.as_ref().map_or(1, |p| p.search_window);
        for n in 0..cfg.topology.nodes as usize {
            let owners: Vec<Option<u32>> = (0..ppn).map(|p| (p < compute).then_some(p as u32)).collect();
            nodes.push(Node {
                first_proc: procs.len(),
                procs: ppn,
                threads: compute as u32,
                mem: NodeMemory::new(m, map.clone(), &owners, compute as u32),
                rx: NodeQueue::new(discipline, max_servers as usize, window),
                role: None,
                lock_release_in_flight: false,
                servers: 0,
                max_servers,
                locks: KeyLocks::default(),
                // Up to 2^40 cycles (far beyond any run) at 3 significant figures.
                delays: Histogram::new_with_max(1 << 40, 3).expect("valid histogram bounds"),
                irq_pending: false,
                arbiter_next: 0,
                arrivals: 0,
                last_arrival: None,
                arrival_gap_x16: None,
                out_port: Calendar::default(),
                in_port: Calendar::default(),
                stats: NodeStats::default(),
                key_check: KeyCheck::default(),
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
                    seen_arrivals: 0,
                    rng: ChaCha8Rng::seed_from_u64(mix_seed(cfg.seed, n as u64 + 1, p as u64 + 0x1000)),
                    stats: ProcStats { role: if p < compute { "compute" } else { "protocol" }, ..ProcStats::default() },
                });
            }
            for t in 0..compute {
                let shared = Rc::new(ThreadShared {
                    node: NodeId(n as u32),
                    thread: ThreadId(t as u32),
                    nodes: cfg.topology.nodes,
                    threads_per_node: compute as u32,
                    seed: mix_seed(cfg.seed, n as u64 + 1, t as u64 + 1),
                    op: RefCell::new(None),
                    result: RefCell::new(None),
                    charged: Cell::new(0),
                });
                let task: Task<'a, T> = Box::pin(spawn(SimProc { shared: shared.clone() }));
                threads.push(Thread {
                    shared,
                    task: Some(task),
                    state: ThreadState::Ready,
                    proc: n * ppn + t,
                    local: t as u32,
                    reply: None,
                    issued_at: 0,
                    waiting_on: None,
                    deferred: None,
                });
            }
        }
        let results = threads.iter().map(|_| None).collect();
        Ok(Engine {
            cfg,
            handlers,
            code,
            now: 0,
            queue: EventQueue::with_capacity(1024),
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
            delivered: 0,
            requests: 0,
            replies: 0,
            progress: crate::progress::observer(),
        })
    }

    /// Runs until every thread has finished; returns per-thread results
    /// (node-major) and the statistics.
    pub(crate) fn run(mut self) -> Result<(Vec<T>, RunStats), SimError> {
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
        pr.since = now;
    }

    /// Starts a non-idle activity of `duration` cycles, the first `stall` of
    /// which are stalled on memory.
    fn start_busy(&mut self, p: usize, cat: Cat, duration: u64, stall: u64, after: After) {
        self.account(p);
        let now = self.now;
        let pr = &mut self.procs[p];
        pr.gen = pr.gen.wrapping_add(1);
        pr.busy = true;
        pr.wake_pending = false;
        pr.cat = cat;
        pr.stall_until = now + stall;
        pr.after = after;
        let gen = pr.gen;
        let end = self.deadline(duration);
        self.queue.push(end, EventKind::ProcWake { proc: p as u32, gen });
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
        if let Some(key) = pr.serving.take() {
            let n = pr.node;
            if let Err(e) = self.nodes[n].rx.complete(key) {
                return self.fail(SimError::Invariant(e.to_string()));
            }
        }
        if let Some((t, reply)) = completion {
            self.complete_request(p, t, reply);
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

    fn thread_ready(&mut self, t: usize, result: OpResult) {
        let th = &mut self.threads[t];
        th.state = ThreadState::Ready;
        *th.shared.result.borrow_mut() = Some(result);
    }

    fn record_latency(&mut self, lat: u64) {
        let l = &mut self.latency;
        l.count += 1;
        l.min_cycles = l.min_cycles.min(lat);
        l.max_cycles = l.max_cycles.max(lat);
        self.latency_sum += lat as u128;
    }

    // ----- the policy: what a processor does next --------------------------

    fn decide(&mut self, p: usize) {
        let n = self.procs[p].node;
        if self.procs[p].in_interrupt {
            return self.decide_in_interrupt(p);
        }
        if let Some(saved) = self.procs[p].saved_work.take() {
            if !saved.synthetic {
                return self.start_access(p, saved.stall + saved.work, saved.stall);
            }
            return self.start_compute(p, saved.work, Some((saved.sampled, saved.stall)));
        }
        if self.procs[p].holds_role {
            return self.act_as_pp(p);
        }
        self.clear_announcement(p);
        if let Some(t) = self.procs[p].thread {
            match self.threads[t].state {
                ThreadState::Ready => return self.run_thread(t),
                ThreadState::ReplyArrived => return self.start_resume(p, t),
                ThreadState::PollDrain => {
                    self.thread_ready(t, OpResult::Done);
                    return self.run_thread(t);
                }
                ThreadState::Waiting | ThreadState::Finished | ThreadState::Paused => {
                    if self.cfg.policy.compute_procs_handle() && self.role_open(n) {
                        return self.start_acquire(p);
                    }
                    let cat = if self.threads[t].state == ThreadState::Waiting { Cat::Wait } else { Cat::Idle };
                    return self.go_idle(p, cat);
                }
                ThreadState::Busy => unreachable!("a busy thread's processor is busy"),
            }
        }
        if self.procs[p].dedicated && self.role_open(n) {
            return self.start_acquire(p);
        }
        self.go_idle(p, Cat::Idle)
    }

    /// Whether one more processor may start serving the node.
    fn role_open(&self, n: usize) -> bool {
        let node = &self.nodes[n];
        if self.parallel {
            node.servers < node.max_servers
        } else {
            node.role.is_none()
        }
    }

    /// The global indices of node `n`'s processors.
    fn procs_of(&self, n: usize) -> std::ops::Range<usize> {
        let node = &self.nodes[n];
        node.first_proc..node.first_proc + node.procs
    }

    /// Parallel disciplines: whether another of the node's servers will go
    /// on serving, one with no work of its own to return to. Servers that
    /// will leave as soon as they can do not count: if every server left
    /// for its own work while messages wait whenever another was serving,
    /// servers whose threads keep waking up (short idle periods, cheap
    /// interrupts) could take turns leaving for ever and no message would
    /// be handled.
    fn another_server_stays(&self, p: usize) -> bool {
        self.procs_of(self.procs[p].node)
            .any(|q| q != p && self.procs[q].holds_role && (self.procs[q].dedicated || !self.has_own_work(q)))
    }

    /// Whether a message waits that a serving processor could take now.
    fn work_waiting(&mut self, n: usize) -> bool {
        if self.parallel {
            self.nodes[n].rx.any_ready()
        } else {
            !self.nodes[n].rx.is_empty()
        }
    }

    /// The acting PP handles the next message, gives the role up, or polls.
    fn act_as_pp(&mut self, p: usize) {
        let n = self.procs[p].node;
        let server = self.procs[p].server;
        let own_work = self.has_own_work(p);
        if own_work && self.leaves_for_own_work(p) {
            return self.start_release(p);
        }
        if let Some(slot) = self.nodes[n].rx.take(server) {
            self.start_handle(p, slot);
            if self.parallel {
                self.kick(n); // more may be dispatchable to other servers
            }
        } else if self.should_relinquish(p) {
            self.start_release(p)
        } else {
            self.go_idle(p, if own_work { Cat::Hold } else { Cat::PollIdle });
            if own_work {
                self.schedule_recheck(p);
            }
        }
    }

    /// Whether a serving processor whose own work can go on gives the role
    /// up before taking another message (draining a queue that never
    /// empties at saturation would starve its thread):
    /// - another processor serves, or will take over for good, so waiting
    ///   messages interrupt nobody;
    /// - with a dispatch device (Hurricane-1 Mult) it resumes its work after
    ///   the handler in hand (an interrupted one after the messages waiting
    ///   when it took the role) and tells the device, which interrupts a
    ///   processor again if messages wait while every one computes. One
    ///   handler at least per stint: servers cannot take turns leaving with
    ///   nothing handled.
    fn leaves_for_own_work(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        self.lasting_peer(p)
            || self.parallel && self.another_server_stays(p)
            || self.device_dispatch && pr.stint_handled >= pr.stint_budget
    }

    /// Inside an interrupt: take the role if nobody has it, handle every
    /// pending message, give the role back, return to the interrupted work.
    fn decide_in_interrupt(&mut self, p: usize) {
        let n = self.procs[p].node;
        if self.procs[p].holds_role {
            return self.act_as_pp(p);
        }
        if !self.procs[p].interrupt_claim_tried {
            self.procs[p].interrupt_claim_tried = true;
            self.nodes[n].irq_pending = false;
            if self.role_open(n) {
                return self.start_acquire(p);
            }
            self.nodes[n].stats.spurious_interrupts += 1;
        }
        self.procs[p].in_interrupt = false;
        let o = &self.cfg.machine.interrupt;
        let exit = o.overhead_cycles - o.overhead_cycles * o.entry_percent as u64 / 100;
        self.start_busy(p, Cat::Interrupt, exit, 0, After::Nothing);
    }

    /// Whether an acting PP gives the role up now. It never does while its
    /// own thread waits; once its work can continue (its reply arrived, or
    /// it was interrupted) it drains the queue first, since leaving
    /// messages behind would interrupt a computing processor, then follows
    /// the machine's relinquish rule.
    fn should_relinquish(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        if pr.dedicated || !self.has_own_work(p) {
            return false;
        }
        let n = pr.node;
        if self.parallel && self.nodes[n].servers > 1 {
            return true; // nothing it could take waits, and others serve
        }
        if self.idle_peer(p) {
            return true; // hand-off: the node keeps a protocol processor
        }
        let peer_may_idle = self
            .procs_of(n)
            .filter(|&q| q != p)
            .any(|q| self.procs[q].thread.is_some_and(|t| self.threads[t].state != ThreadState::Finished));
        if !peer_may_idle {
            return true; // nobody could ever take over
        }
        match self.cfg.machine.protocol.relinquish {
            Relinquish::Eager => true,
            Relinquish::Handoff => false,
            Relinquish::Adaptive => match self.nodes[n].arrival_gap_x16 {
                Some(gap_x16) => {
                    // The quiet since the last arrival counts once it is
                    // longer than the average gap: messages may have stopped.
                    let quiet_x16 = self.nodes[n].last_arrival.map_or(0, |l| (self.now - l) * 16);
                    self.interrupt_round_trip() * 16 < gap_x16.max(quiet_x16)
                }
                None => true,
            },
        }
    }

    /// What an interrupt costs: Oint plus taking and giving up the role.
    fn interrupt_round_trip(&self) -> u64 {
        let m = &self.cfg.machine;
        m.interrupt.overhead_cycles + m.protocol.role_acquire_cycles + m.protocol.role_release_cycles
    }

    /// An acting PP keeping the role while its own work waits (the adaptive
    /// rule) is woken again once the node has been quiet for an interrupt's
    /// cost: no arrival would wake it if messages have stopped.
    fn schedule_recheck(&mut self, p: usize) {
        if self.cfg.machine.protocol.relinquish != Relinquish::Adaptive || self.procs[p].recheck_at.is_some() {
            return;
        }
        let n = self.procs[p].node;
        let quiet_from = self.nodes[n].last_arrival.unwrap_or(self.now);
        let at = (quiet_from + self.interrupt_round_trip()).max(self.now) + 1;
        self.procs[p].recheck_at = Some(at);
        self.queue.push(at, EventKind::Recheck { proc: p as u32 });
    }

    /// At most one re-check is pending per processor; it applies to
    /// whatever holding the processor is in when it fires.
    fn on_recheck(&mut self, p: usize) {
        self.procs[p].recheck_at = None;
        let pr = &self.procs[p];
        if !pr.busy && !pr.wake_pending && pr.holds_role && pr.cat == Cat::Hold {
            self.decide(p);
        }
    }

    /// Whether another processor of `p`'s node could take the role now.
    fn idle_peer(&self, p: usize) -> bool {
        self.procs_of(self.procs[p].node).any(|q| q != p && self.can_act(q))
    }

    /// Whether another processor of `p`'s node could take the role now and
    /// keep it while messages wait: its thread waits for a reply (which only
    /// a serving processor can hand it) or has finished. A paused thread's
    /// work resumes by itself; handing the role to it before draining could
    /// make the two take turns leaving for ever with messages waiting.
    fn lasting_peer(&self, p: usize) -> bool {
        self.procs_of(self.procs[p].node).any(|q| {
            q != p
                && self.can_act(q)
                && self.procs[q].thread.is_none_or(|t| self.threads[t].state != ThreadState::Paused)
        })
    }

    fn has_own_work(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        pr.in_interrupt
            || pr.saved_work.is_some()
            || pr.thread.is_some_and(|t| {
                matches!(self.threads[t].state, ThreadState::Ready | ThreadState::ReplyArrived | ThreadState::PollDrain)
            })
    }

    /// Can this idle processor take the role right away?
    fn can_act(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        if pr.busy || pr.holds_role || pr.in_interrupt || pr.saved_work.is_some() {
            return false;
        }
        match pr.thread {
            Some(t) => {
                self.cfg.policy.compute_procs_handle()
                    && matches!(
                        self.threads[t].state,
                        ThreadState::Waiting | ThreadState::Finished | ThreadState::Paused
                    )
            }
            None => pr.dedicated,
        }
    }

    /// The NI keeps its interrupt line raised while messages wait and no
    /// processor acts as PP, but (as the HPCA'97 and Hurricane-1 Mult
    /// devices do) interrupts only when every processor of the node is busy
    /// computing: a processor between activities (sending, resuming, giving
    /// up the role) is about to either take the role or compute, and both
    /// paths come back here. The arbiter picks computing processors
    /// round-robin. An idle processor that may act is woken instead.
    fn check_interrupt(&mut self, n: usize) {
        if !self.work_waiting(n) {
            return;
        }
        let node = &self.nodes[n];
        let (first, count) = (node.first_proc, node.procs);
        if self.parallel {
            // An idle server takes the message even while an interrupt is
            // being delivered to another processor.
            if let Some(p) = (first..first + count).find(|&p| self.idle_server(p)) {
                return self.wake(p);
            }
        } else if node.role.is_some() {
            return;
        }
        if self.nodes[n].irq_pending {
            return;
        }
        if !self.role_open(n) {
            return;
        }
        if let Some(p) = (first..first + count).find(|&p| self.can_act(p)) {
            return self.wake(p);
        }
        if !self.cfg.policy.compute_procs_handle() {
            return;
        }
        // A processor inside an interrupt counts as computing until it
        // serves: one already serving there is a protocol processor.
        let all_computing = (first..first + count)
            .all(|p| self.procs[p].compute.is_some() || self.procs[p].in_interrupt && !self.procs[p].holds_role);
        if !all_computing {
            return;
        }
        let start = self.nodes[n].arbiter_next;
        for k in 0..count {
            let local = (start + k) % count;
            let p = first + local;
            if self.procs[p].compute.is_some() {
                self.nodes[n].arbiter_next = (local + 1) % count;
                self.nodes[n].irq_pending = true;
                self.queue.push(self.now, EventKind::Interrupt { proc: p as u32 });
                return;
            }
        }
    }

    /// A serving processor with nothing in hand.
    fn idle_server(&self, p: usize) -> bool {
        let pr = &self.procs[p];
        pr.holds_role && !pr.busy && !pr.wake_pending
    }

    /// Parallel disciplines: something became dispatchable (an arrival, a
    /// key completed, a server left): wake one server that can take it,
    /// let an idle processor start serving, or interrupt.
    fn kick(&mut self, n: usize) {
        let partitions = self.nodes[n].rx.partitions();
        if partitions > 0 {
            // Static partitioning: each queue has its own (dedicated) server.
            for p in self.procs_of(n) {
                if self.idle_server(p) && self.nodes[n].rx.ready_for(self.procs[p].server) {
                    self.wake(p);
                }
            }
            return;
        }
        self.check_interrupt(n);
    }

    fn on_interrupt(&mut self, p: usize) {
        let n = self.procs[p].node;
        let Some(seg) = self.procs[p].compute.filter(|_| self.procs[p].busy) else {
            // The target stopped computing meanwhile: try another.
            self.nodes[n].irq_pending = false;
            return self.check_interrupt(n);
        };
        // The line stays raised (no second interrupt) until this processor
        // has tried to take the role.
        // Preempt: the work not yet done resumes after the interrupt.
        self.account(p);
        let elapsed = self.now - seg.start;
        let done = elapsed.saturating_sub(seg.stall).min(seg.work);
        let stall = seg.stall.saturating_sub(elapsed);
        let pr = &mut self.procs[p];
        pr.compute = None;
        pr.saved_work =
            Some(SavedWork { work: seg.work - done, sampled: seg.sampled, stall, synthetic: seg.synthetic });
        pr.in_interrupt = true;
        pr.interrupt_claim_tried = false;
        pr.busy = false;
        pr.gen = pr.gen.wrapping_add(1);
        pr.stats.interrupts += 1;
        let o = &self.cfg.machine.interrupt;
        let entry = o.overhead_cycles * o.entry_percent as u64 / 100;
        self.start_busy(p, Cat::Interrupt, entry, 0, After::Nothing);
    }

    // ----- the acting protocol-processor role ------------------------------

    fn start_acquire(&mut self, p: usize) {
        let n = self.procs[p].node;
        debug_assert!(self.role_open(n));
        if self.parallel {
            self.nodes[n].servers += 1;
            self.wake_holders(n, p);
        } else {
            self.nodes[n].role = Some(p);
        }
        self.procs[p].holds_role = true;
        self.procs[p].announced = false; // the acquire's lock write clears it
        self.procs[p].stint_handled = 0;
        let waiting = if self.procs[p].in_interrupt { self.nodes[n].rx.len() as u32 } else { 0 };
        self.procs[p].stint_budget = waiting.max(1);
        self.procs[p].stats.role_acquires += 1;
        let cost = self.role_switch_cost(p, self.cfg.machine.protocol.role_acquire_cycles, RoleSwitch::LockFirst);
        self.start_busy(p, Cat::Role, cost, 0, After::Nothing);
        // Processors that went idle while the last releasing store was in
        // flight, and lost the role to this one, wait for it now: their
        // flags land after this acquire's lock write.
        for q in self.procs_of(n) {
            if q != p && self.can_act(q) {
                self.announce_idle(q);
            }
        }
    }

    /// Taking or giving up the role: the lock (a write that migrates the
    /// lock line to this processor) when other processors of the node could
    /// contend for it, masking or unmasking the NI's interrupt (an uncached
    /// write to the NI) unless the processor is inside an interrupt, where
    /// the hardware already masked it, and the bookkeeping instructions.
    /// Taking it, the lock comes first; giving up a locked role, the lock's
    /// store comes last (unmasking after it would race with the next
    /// holder's masking), so the role is free only once that store lands.
    fn role_switch_cost(&mut self, p: usize, instructions: u64, switch: RoleSwitch) -> u64 {
        let now = self.now;
        let mut t = now;
        match switch {
            RoleSwitch::LockFirst => {
                t = self.role_lock_write(p, t);
                t = self.role_mask_write(p, t);
                t + instructions - now
            }
            // The lock's store is issued when this part ends
            // ([`Engine::issue_lock_release`]).
            RoleSwitch::LockLast => self.role_mask_write(p, t + instructions) - now,
        }
    }

    /// Whether node `n`'s role is a software lock. A dispatch device (the
    /// PDQ machines, whatever the discipline) keeps track of who serves,
    /// and parallel disciplines have no single role: neither takes a
    /// software lock, nor does a node of one processor.
    fn has_role_lock(&self, n: usize) -> bool {
        self.nodes[n].procs > 1 && !self.parallel && !self.device_dispatch
    }

    /// The role's lock write by `p` from cycle `t`, if the role has a lock;
    /// returns when it is done.
    fn role_lock_write(&mut self, p: usize, t: u64) -> u64 {
        let n = self.procs[p].node;
        if !self.has_role_lock(n) {
            return t;
        }
        let lock = self.nodes[n].mem.map().lock_line();
        t + self.nodes[n].mem.access(self.now, t, self.procs[p].local, lock, Access::Write).0
    }

    /// Masking or unmasking the NI's interrupt from cycle `t`, unless inside
    /// an interrupt; returns when it is done.
    fn role_mask_write(&mut self, p: usize, t: u64) -> u64 {
        if self.procs[p].in_interrupt {
            return t;
        }
        let ni = &self.cfg.machine.ni;
        let (occ, mask_lat) = (ni.uncached_write_occupancy, ni.uncached_write_latency);
        self.bus_transaction(self.procs[p].node, t, Phases::Write, occ, mask_lat)
    }

    fn start_release(&mut self, p: usize) {
        let n = self.procs[p].node;
        if self.procs[p].in_interrupt && self.procs[p].stint_handled == 0 {
            // Taken by interrupt, left with nothing handled: another
            // processor took the messages meanwhile.
            self.nodes[n].stats.spurious_interrupts += 1;
        }
        self.procs[p].holds_role = false;
        let instructions = self.cfg.machine.protocol.role_release_cycles;
        if self.has_role_lock(n) {
            // The role stays taken until the lock's releasing store, issued
            // once the instructions and the unmasking are done, has landed:
            // a peer spinning on the lock cannot see it free any sooner.
            let cost = self.role_switch_cost(p, instructions, RoleSwitch::LockLast);
            return self.start_busy(p, Cat::Role, cost, 0, After::ReleaseLock);
        }
        // Without a lock, the unmasking store (which tells a dispatch
        // device) comes first, and the role is free as the release starts.
        let cost = self.role_switch_cost(p, instructions, RoleSwitch::LockFirst);
        if self.parallel {
            self.nodes[n].servers -= 1;
        } else {
            self.nodes[n].role = None;
        }
        self.start_busy(p, Cat::Role, cost, 0, After::Nothing);
        self.offer_role(n);
    }

    /// The releasing store of the role's lock: it drains from the write
    /// buffer while the releasing processor goes back to its own work (its
    /// next `decide`), and the role is free once it has landed, fetching
    /// the line back from a peer that announced itself idle.
    fn issue_lock_release(&mut self, p: usize) {
        let n = self.procs[p].node;
        let done = self.role_lock_write(p, self.now);
        self.nodes[n].lock_release_in_flight = true;
        self.queue.push(done, EventKind::RoleFree { node: n as u32 });
    }

    /// The releasing store has landed: the waiters race for the lock, and
    /// the preset's arbitration decides who wins.
    fn on_role_free(&mut self, n: usize) {
        let node = &mut self.nodes[n];
        node.lock_release_in_flight = false;
        let releaser = node.role.take().unwrap_or(node.first_proc);
        let first = match self.cfg.machine.protocol.role_arbitration {
            RoleArbitration::Lowest => self.nodes[n].first_proc,
            RoleArbitration::RoundRobin => releaser,
        };
        self.offer_role_from(n, first);
    }

    /// The role just became free: a waiting processor takes it over, or an
    /// interrupt is raised if messages wait.
    fn offer_role(&mut self, n: usize) {
        self.offer_role_from(n, self.nodes[n].first_proc);
    }

    /// [`Engine::offer_role`], trying processors in round-robin order from
    /// `first`.
    fn offer_role_from(&mut self, n: usize, first: usize) {
        if self.parallel {
            return self.kick(n);
        }
        let (base, count) = (self.nodes[n].first_proc, self.nodes[n].procs);
        if let Some(p) = (0..count).map(|i| base + (first - base + i) % count).find(|&p| self.can_act(p)) {
            self.wake(p);
        } else {
            self.check_interrupt(n);
        }
    }

    // ----- messages ---------------------------------------------------------

    fn on_arrive(&mut self, slot: u32) {
        let msg = self.messages[slot as usize].as_ref().expect("live message");
        let (n, key) = (msg.dst_node.index(), msg.key);
        self.arrived_at[slot as usize] = self.now;
        let node = &mut self.nodes[n];
        node.rx.push(key, slot);
        node.arrivals += 1;
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
            None => self.check_interrupt(n),
        }
    }

    fn nis_words(&self, msg: &Message) -> u64 {
        let wb = self.cfg.machine.ni.word_bytes as usize;
        (msg.args.len() + msg.payload.len().div_ceil(wb)) as u64
    }

    /// The processor writes the message into the NI a word at a time
    /// (uncached stores), then the NI injects it. Returns the cycle the
    /// processor is done.
    fn send_message(&mut self, p: usize, mut t: u64, msg: Message) -> u64 {
        let ni = &self.cfg.machine.ni;
        let words = ni.header_words as u64 + self.nis_words(&msg);
        let n = self.procs[p].node;
        if let Some(word_cycles) = self.embedded_word_cycles(p) {
            // An embedded PP writes the send queue on its own device.
            t += words * word_cycles;
        } else {
            let (occ, lat) = (ni.uncached_write_occupancy, ni.uncached_write_latency);
            t = self.nodes[n].mem.bus.train(self.now, t, words, Phases::Write, occ, lat);
        }
        self.inject(n, t, words, msg);
        t
    }

    /// How processor `p` reaches node memory if it is an embedded
    /// (cacheless) protocol processor: word transfers over the bus.
    fn device_access(&self, p: usize) -> Option<DeviceAccess> {
        self.embedded_word_cycles(p)?;
        let m = &self.cfg.machine;
        Some(DeviceAccess {
            word_occupancy: m.ni.uncached_read_occupancy,
            posted_write: m.ni.uncached_write_latency,
            word_bytes: m.ni.word_bytes as u64,
            line_bytes: m.cache.line_bytes as u64,
        })
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

    /// Embedded protocol processors reach the device's queues without the
    /// memory bus: the cycles per message word, or None for an SMP processor.
    fn embedded_word_cycles(&self, p: usize) -> Option<u64> {
        let embedded = self.cfg.dispatch.pp_kind == PpKind::Embedded && self.procs[p].dedicated;
        embedded.then(|| self.cfg.machine.pdq.as_ref().map_or(0, |d| d.embedded_word_cycles))
    }

    /// NI ports serialize messages (contention at the interfaces); the
    /// network itself adds a constant latency.
    fn inject(&mut self, n: usize, t: u64, words: u64, msg: Message) {
        let busy = words * self.cfg.machine.ni.port_cycles_per_word;
        let now = self.now;
        let src = &mut self.nodes[n];
        let out_start = src.out_port.reserve(now, t, busy);
        src.stats.messages_sent += 1;
        let at_dst = out_start + busy + self.cfg.machine.network.latency_cycles;
        let dst = &mut self.nodes[msg.dst_node.index()];
        let arrive = dst.in_port.reserve(now, at_dst, busy) + busy;
        let slot = match self.free_messages.pop() {
            Some(s) => {
                self.messages[s as usize] = Some(msg);
                s
            }
            None => {
                self.messages.push(Some(msg));
                self.arrived_at.push(0);
                (self.messages.len() - 1) as u32
            }
        };
        self.queue.push(arrive, EventKind::Arrive { msg: slot });
    }

    /// One bus transaction issued at `t`; returns when it completes.
    fn bus_transaction(&mut self, n: usize, t: u64, phases: Phases, occ: u64, lat: u64) -> u64 {
        self.nodes[n].mem.bus.transact(self.now, t, phases, occ, lat).done
    }

    /// Runs the handler of the message in `slot`: notice and dispatch it,
    /// run the handler (taking its key's lock under the spin-lock
    /// discipline), send the reply or complete the waiting thread.
    fn start_handle(&mut self, p: usize, slot: u32) {
        let n = self.procs[p].node;
        let local = self.procs[p].local;
        let msg = self.messages[slot as usize].take().expect("live message");
        self.free_messages.push(slot);
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
        t += info.body_cycles;
        // Borrowed from the table (which outlives the engine), not cloned:
        // a clone of the `Arc` is two atomic operations per handler.
        let f = table.function(msg.handler).expect("info exists");
        let threads = self.nodes[n].threads;
        let device = self.device_access(p);
        let mut ctx = SimHandlerCtx {
            mem: &mut self.nodes[n].mem,
            now: self.now,
            t,
            proc: local,
            node: NodeId(n as u32),
            threads,
            guard: ReplyGuard::new(msg.kind, &info.name),
            reply: None,
            error: None,
            device,
        };
        let outcome = f(&mut ctx, &msg);
        let (t_after, reply, region_error, replied) = (ctx.t, ctx.reply, ctx.error, ctx.guard.replied());
        t = t_after;
        if let Err(e) = outcome {
            return self.fail(SimError::Handler(e));
        }
        if let Some(reason) = region_error {
            return self.fail(SimError::Handler(AmError::HandlerFailed { handler: info.name.clone(), reason }));
        }
        if let Some((k, acquired)) = lock {
            t = self.unlock_key(p, k, t);
            held = Some((acquired, t));
        }
        match msg.kind {
            MsgKind::Request => {
                let Some(reply) = reply.filter(|_| replied) else {
                    return self.fail(SimError::Handler(AmError::HandlerFailed {
                        handler: info.name.clone(),
                        reason: "returned without replying to a request sent with Proc::request, whose thread would wait forever".into(),
                    }));
                };
                self.replies += 1;
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
        t = self.finish_dispatch(p, t, key);
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
        }
        let duration = t - self.now;
        self.start_busy(p, Cat::Handler, duration, 0, After::Nothing);
    }

    /// Noticing a message and dispatching it, up to the handler's first
    /// instruction; returns the cycle the handler starts.
    fn receive(&mut self, p: usize, msg: &Message) -> u64 {
        let n = self.procs[p].node;
        let local = self.procs[p].local;
        let m = &self.cfg.machine;
        let words = self.nis_words(msg);
        let mut t = self.now;
        if let Some(word_cycles) = self.embedded_word_cycles(p) {
            // The dispatch register and the message sit on the embedded
            // processor's cache bus.
            let dispatch = m.pdq.as_ref().map_or(0, |d| d.embedded_dispatch_cycles);
            return t + dispatch + words * word_cycles;
        }
        if !self.device_dispatch && self.procs[p].seen_arrivals != self.nodes[n].arrivals {
            // The acting PP's cached arrival register was invalidated by
            // new arrivals. (A dispatch device loads each processor's own
            // dispatch register: that is its notice.)
            self.procs[p].seen_arrivals = self.nodes[n].arrivals;
            t = self.bus_transaction(n, t, Phases::Read, m.ni.register_read_occupancy, m.ni.register_read_latency);
        }
        t = self.bus_transaction(n, t, Phases::Read, m.ni.register_read_occupancy, m.ni.register_read_latency);
        let (occ, lat) = (m.ni.uncached_read_occupancy, m.ni.uncached_read_latency);
        t = self.nodes[n].mem.bus.train(self.now, t, words, Phases::Read, occ, lat);
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
        if self.cfg.dispatch.discipline != Discipline::SpinLock {
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
    fn finish_dispatch(&mut self, p: usize, t: u64, key: SyncKey) -> u64 {
        if !self.device_dispatch {
            return t;
        }
        if self.cfg.dispatch.discipline == Discipline::Pdq {
            self.procs[p].serving = Some(key);
        }
        if let Some(word_cycles) = self.embedded_word_cycles(p) {
            return t + word_cycles;
        }
        let n = self.procs[p].node;
        let ni = &self.cfg.machine.ni;
        let (occ, lat) = (ni.uncached_write_occupancy, ni.uncached_write_latency);
        self.bus_transaction(n, t, Phases::Write, occ, lat)
    }

    /// Threads are numbered node-major, like processors.
    fn thread_index(&self, n: usize, local_thread: u32) -> usize {
        let per_node = self.nodes[n].threads as usize;
        n * per_node + local_thread as usize
    }

    /// A reply handler finished: the thread's request is complete. Its
    /// processor notices when it next reads its flag.
    fn complete_request(&mut self, handler_proc: usize, t: usize, reply: Message) {
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
    fn start_resume(&mut self, p: usize, t: usize) {
        let n = self.procs[p].node;
        let flag = self.nodes[n].mem.map().flag_line(self.threads[t].local);
        let (lat, _) = self.nodes[n].mem.access(self.now, self.now, self.procs[p].local, flag, Access::Read);
        self.threads[t].state = ThreadState::Busy;
        self.start_busy(p, Cat::Wait, lat, 0, After::ThreadResumed);
    }

    // ----- threads ------------------------------------------------------------

    /// Polls the thread's task and starts the operation it asks for.
    fn run_thread(&mut self, t: usize) {
        if let Some(next) = self.threads[t].deferred.take() {
            return self.continue_thread(t, next);
        }
        let mut cx = Context::from_waker(Waker::noop());
        let task = self.threads[t].task.as_mut().expect("unfinished thread has a task");
        match task.as_mut().poll(&mut cx) {
            Poll::Ready(result) => {
                self.threads[t].task = None;
                match result {
                    Ok(v) => self.results[t] = Some(v),
                    Err(e) => return self.fail_thread(t, e),
                }
                self.after_charged_work(t, Deferred::Finish);
            }
            Poll::Pending => {
                let op = self.threads[t].shared.op.borrow_mut().take();
                match op {
                    Some(op) => self.after_charged_work(t, Deferred::Op(op)),
                    None => self.fail_thread(
                        t,
                        AmError::Aborted("the thread awaited something that is not a finegrain operation".into()),
                    ),
                }
            }
        }
    }

    /// Cycles the thread declared with `Proc::charge` are computed first
    /// (as ordinary, interruptible work); then `next` happens.
    fn after_charged_work(&mut self, t: usize, next: Deferred) {
        let charged = self.threads[t].shared.charged.replace(0);
        if charged == 0 {
            return self.continue_thread(t, next);
        }
        self.threads[t].deferred = Some(next);
        self.threads[t].state = ThreadState::Busy;
        self.start_compute(self.threads[t].proc, charged, None);
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
            Op::Work(cycles) => self.start_compute(p, cycles, None),
            Op::Request { dst, handler, key, args, payload } => {
                if key == SyncKey::Sequential
                    && matches!(self.cfg.dispatch.discipline, Discipline::SpinLock | Discipline::Static)
                {
                    let e = AmError::Aborted(format!(
                        "a request with the sequential key under the {} discipline, which cannot run a handler alone; use request_keyed with a numbered or nosync key, or the pdq or serial discipline",
                        self.cfg.dispatch.discipline.label()
                    ));
                    return self.reject_op(t, e);
                }
                if dst.0 >= self.cfg.topology.nodes {
                    let e = AmError::NoSuchNode { node: dst.0, nodes: self.cfg.topology.nodes };
                    return self.reject_op(t, e);
                }
                if let Err(e) = self.handlers.info(handler) {
                    return self.reject_op(t, e);
                }
                self.requests += 1;
                self.next_token += 1;
                let msg = Message {
                    kind: MsgKind::Request,
                    src_node: NodeId(n as u32),
                    src_thread: ThreadId(self.threads[t].local),
                    dst_node: dst,
                    handler,
                    key,
                    args,
                    payload,
                    token: self.next_token,
                };
                let end = self.send_message(p, self.now, msg);
                let th = &mut self.threads[t];
                th.state = ThreadState::Waiting;
                th.issued_at = self.now;
                th.waiting_on = Some(handler);
                self.start_busy(p, Cat::Send, end - self.now, 0, After::Nothing);
            }
            Op::Access { region, offset, len, kind } => {
                let threads = self.nodes[n].threads;
                match self.nodes[n].mem.map().lines(region, offset, len, threads) {
                    Ok((first, count)) => {
                        let local = self.procs[p].local;
                        let (lat, missed) =
                            self.nodes[n].mem.access_lines(self.now, self.now, local, first, count, kind);
                        self.start_access(p, lat, missed);
                    }
                    // `Proc::access` has no result to report this in.
                    Err(reason) => self.fail_thread(t, AmError::Aborted(format!("thread access rejected: {reason}"))),
                }
            }
            Op::Idle(cycles) => {
                if cycles == 0 {
                    self.thread_ready(t, OpResult::Done);
                    return self.run_thread(t);
                }
                self.threads[t].state = ThreadState::Paused;
                let end = self.deadline(cycles);
                self.queue.push(end, EventKind::IdleEnd { thread: t as u32 });
                self.decide(p);
            }
            Op::Poll => {
                let hit = self.cfg.machine.cache.hit_cycles;
                let can_handle = self.cfg.policy.compute_procs_handle() && self.role_open(n) && self.work_waiting(n);
                if can_handle {
                    self.threads[t].state = ThreadState::PollDrain;
                    self.start_acquire(p);
                } else {
                    self.start_busy(p, Cat::Compute, hit, 0, After::ThreadOpDone);
                }
            }
        }
    }

    /// A thread's idle period ended: its processor runs it again as soon
    /// as whatever it is doing meanwhile (serving) lets it.
    fn on_idle_end(&mut self, t: usize) {
        if self.threads[t].state != ThreadState::Paused {
            return;
        }
        self.thread_ready(t, OpResult::Done);
        self.wake(self.threads[t].proc);
    }

    /// Hands an error back to the thread that asked for a bad operation.
    fn reject_op(&mut self, t: usize, e: AmError) {
        self.thread_ready(t, OpResult::Failed(e));
        self.run_thread(t);
    }

    /// Starts `work` cycles of computation, stalled first on the misses it
    /// takes; resumed work passes the epoch its misses were sampled at and
    /// the stall it still owes.
    fn start_compute(&mut self, p: usize, work: u64, resumed: Option<(u32, u64)>) {
        let n = self.procs[p].node;
        let c = &self.cfg.machine.compute;
        let (interval, writes) = (c.access_interval_cycles, c.write_percent as f64 / 100.0);
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
            work,
            interval,
            writes,
            sampled_at,
            &mut pr.rng,
        );
        let stall = owed + stall;
        self.run_segment(p, ComputeSegment { start: self.now, work, stall, sampled, synthetic: true });
    }

    /// Runs (or resumes) a thread's `Proc::access` of `lat` cycles, the
    /// first `stall` of them its misses' stall (already on the bus
    /// calendar). Like work, it is computation an interrupt may stop and
    /// that resumes afterwards, so an arrival is not held up by it.
    fn start_access(&mut self, p: usize, lat: u64, stall: u64) {
        let work = lat - stall;
        self.run_segment(p, ComputeSegment { start: self.now, work, stall, sampled: 0, synthetic: false });
    }

    /// Starts a stretch of computation (its stall first, then its work).
    fn run_segment(&mut self, p: usize, seg: ComputeSegment) {
        let n = self.procs[p].node;
        self.procs[p].compute = Some(seg);
        self.start_busy(p, Cat::Compute, seg.stall.saturating_add(seg.work), seg.stall, After::Nothing);
        // A computing processor is a possible interrupt target.
        self.check_interrupt(n);
    }

    /// Ends the run with thread `t`'s error.
    fn fail_thread(&mut self, t: usize, error: AmError) {
        let th = &self.threads[t];
        self.fail(SimError::App { node: th.shared.node.0, thread: th.local, error });
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
            events: self.queue.popped(),
            messages: self.delivered,
            requests: self.requests,
            replies: self.replies,
            ..RunStats::default()
        };
        let mut compute_share = 0.0;
        let mut compute_procs = 0;
        let mut occupancy = 0.0;
        for node in &mut self.nodes {
            let mut ns = std::mem::take(&mut node.stats);
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
        stats
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
    guard: ReplyGuard<'n>,
    reply: Option<Reply>,
    error: Option<String>,
    /// An embedded processor reaches memory as a cacheless bus agent.
    device: Option<DeviceAccess>,
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

impl HandlerCtx for SimHandlerCtx<'_, '_> {
    fn node(&self) -> NodeId {
        self.node
    }

    fn reply(&mut self, reply: Reply) -> Result<(), AmError> {
        self.guard.admit_reply()?;
        self.reply = Some(reply);
        Ok(())
    }

    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access) {
        match self.mem.map().lines(region, offset, len, self.threads) {
            Ok((first, count)) => {
                self.t += match &self.device {
                    Some(d) => d.touch(self.mem, self.now, self.t, self.proc, first, count, offset, len, kind),
                    None => self.mem.access_lines(self.now, self.t, self.proc, first, count, kind).0,
                };
            }
            Err(reason) => {
                self.error.get_or_insert(reason);
            }
        }
    }

    fn charge(&mut self, cycles: u64) {
        match self.t.checked_add(cycles).filter(|&t| t <= CLOCK_LIMIT) {
            Some(t) => self.t = t,
            None => {
                let e = SimError::ClockLimit { now: self.t, duration: cycles };
                self.error.get_or_insert(e.to_string());
            }
        }
    }
}

/// Per-processor cycle totals must add up to the run time (used by tests).
pub fn cycles_consistent(stats: &RunStats) -> bool {
    stats.nodes.iter().flat_map(|n| n.procs.iter()).all(|p| p.cycles.total() == stats.sim_cycles)
}
