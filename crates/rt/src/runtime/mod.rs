//! The native runtime: a cluster of nodes in one process, each node a group
//! of (optionally pinned) threads, and the three protocol-processing
//! policies run on real threads. This module composes the layers:
//! - [`crate::transport`] moves the messages: every thread has a send side
//!   to every node and every node an inbox;
//! - [`crate::dispatch`] decides who handles what: the node's acting
//!   protocol processor (whoever holds its role) drains its inbox, which is
//!   why a node runs one handler at a time (Tempest semantics), or under a
//!   parallel discipline (PDQ, or a lock per key) every thread that would
//!   act as protocol processor serves at once through the node's keyed
//!   queue;
//! - [`crate::notify`] decides how a node notices a message: polling,
//!   parked protocol threads that senders wake, or interrupts.
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
//!   interrupt (a signal) on one of them, round-robin (see
//!   [`crate::notify::signal`]).
//! - Coprocessor (IPPS 1996: the Meiko CS-2's Elan runs message handling,
//!   so the main processor neither polls for it nor is interrupted): one
//!   main thread per node computes. Under `optimized` and `coproc-am` each
//!   node has one more thread, its progress thread (the co-processor),
//!   which serves the node's inbox as a Fixed protocol thread does but
//!   runs only the handlers [`RtConfig::progress_runs`] allows: under
//!   optimized Split-C's data and control operations (the copies, counter
//!   updates and remote adds a DMA engine and remote atomic add do), under
//!   coproc-am every handler but a user's atomic function. Everything else
//!   is forwarded to the main thread, which runs it when it polls
//!   (`Proc::poll`), while it waits (for a reply, in `wait_until`, in
//!   `idle`), when it sends, and after its application has returned until
//!   the progress thread has stopped, so nothing forwarded is lost. A
//!   forwarded request's reply leaves from the main thread's send side.
//!   Under `main-am` there is no progress thread: the main thread handles
//!   everything, as under Single.
//!
//! The files: `cluster.rs` (what the threads share), `thread.rs` (a
//! thread's context), `ops.rs` (what a thread asks for: requests, sends,
//! waiting, work, serving), `sending.rs`, `handling.rs`, and `proc.rs`
//! (what applications and handlers see).

mod cluster;
mod handling;
mod ops;
mod proc;
mod sending;
mod thread;
mod watch;

pub use proc::{ReplyView, RtProc};
pub use watch::STUCK_EXIT;

use crate::clock::Stamp;
use crate::config::RtConfig;
use crate::notify::signal::{self, Registration};
use crate::os;
use crate::stats::{RtStats, ThreadTimes};
use crate::transport::{InProc, Layout, ThreadKind, Transport};
use cluster::{Cluster, Node, FAIL_SETUP};
use crossbeam_utils::CachePadded;
use finegrain_core::{AmError, HandlerId, HandlerTable, Policy};
use std::future::Future;
use std::ops::Range;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use thiserror::Error;
use thread::ThreadCtx;

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
    #[error("node {node}: handler {handler} ran longer than the handler time limit of {limit_ms} ms (handlers must be short and never block)")]
    HandlerHung { node: u32, handler: String, limit_ms: u64 },
    #[error("node {node} failed{}", if error.is_empty() { String::new() } else { format!(": {error}") })]
    PeerFailed { node: u32, error: String },
    #[error("node {node} (process {pid}) died before the run ended")]
    PeerDied { node: u32, pid: u32 },
    /// Memory the node processes share was written over: the run cannot
    /// go on.
    #[error("the run's shared memory is corrupt: {0}")]
    Corrupt(String),
    /// The workload's own set-up or answer check failed.
    #[error(transparent)]
    Workload(#[from] finegrain_core::WorkloadError),
}

/// Results per compute thread (node-major) and the run's statistics.
#[derive(Debug)]
pub struct RtOutput<T> {
    pub results: Vec<T>,
    pub stats: RtStats,
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

/// Whether a serving thread of node `n` may stop: the run failed, or every
/// application of the cluster has returned and nothing waits at the node.
/// Once every application has returned, each request has its reply, so
/// only one-way messages can still be on their way, and their handlers
/// send nothing: a node whose rings and queue are empty stays empty. (The
/// count is read first: its acquire makes every message sent before the
/// last application returned visible to the check that follows.)
fn all_done<T: Transport>(cluster: &Cluster<T>, n: u32, total_compute: u32) -> bool {
    cluster.shutdown.load(Ordering::Acquire)
        || (cluster.transport.apps_finished() == total_compute && !cluster.node(n).work_waiting())
}

/// A cluster, and the send side of each of its local threads (node-major).
type Built<T> = (Arc<Cluster<T>>, Vec<<T as Transport>::Sender>);

/// Opens the transport for the nodes `local` of the run (this process
/// hosts them) and builds the cluster around it.
fn build<T: Transport>(
    cfg: &RtConfig,
    handlers: &HandlerTable,
    place: &T::Place,
    local: Range<u32>,
) -> Result<Built<T>, String> {
    let layout = layout_of(cfg, local.clone());
    let (transport, endpoints) = T::open(&layout, place)?;
    let nodes: Box<[CachePadded<Node<T>>]> =
        endpoints.inboxes.into_iter().map(|inbox| CachePadded::new(Node::new(cfg, inbox))).collect();
    let threads = cfg.run.topology.nodes as usize * cfg.threads_per_node() as usize;
    let cluster = Cluster::new(cfg, handlers, transport, nodes, local.start, threads > os::online_cores());
    Ok((Arc::new(cluster), endpoints.senders))
}

/// The transport layout of a run whose process hosts `local`.
pub(crate) fn layout_of(cfg: &RtConfig, local: Range<u32>) -> Layout {
    Layout {
        nodes: cfg.run.topology.nodes,
        threads_per_node: cfg.threads_per_node(),
        compute_threads_per_node: cfg.compute_threads_per_node(),
        ring_slots: cfg.ring_slots,
        local,
    }
}

/// Runs `spawn`'s future once per compute thread on a native cluster and
/// returns each thread's result (node-major) and the run's statistics.
pub fn run<T, F, Fut>(cfg: &RtConfig, handlers: &HandlerTable, spawn: F) -> Result<RtOutput<T>, RtError>
where
    T: Send,
    F: Fn(RtProc) -> Fut + Sync,
    Fut: Future<Output = Result<T, AmError>>,
{
    run_nodes::<T, InProc, F, Fut>(cfg, handlers, &(), 0..cfg.run.topology.nodes, spawn)
}

/// What a thread of the run gives back: its node and thread (`u32::MAX`
/// for a protocol thread), its application's outcome, its times.
type Outcome<T> = (u32, u32, Result<T, RtError>, ThreadTimes);

/// Runs the nodes `local` of a cluster in this process over transport
/// `Tr` (the others run elsewhere, over the same transport): each local
/// compute thread runs `spawn`'s future; returns their results (node-major)
/// and this process's statistics.
pub(crate) fn run_nodes<T, Tr, F, Fut>(
    cfg: &RtConfig,
    handlers: &HandlerTable,
    place: &Tr::Place,
    local: Range<u32>,
    spawn: F,
) -> Result<RtOutput<T>, RtError>
where
    T: Send,
    Tr: Transport,
    F: Fn(RtProc) -> Fut + Sync,
    Fut: Future<Output = Result<T, AmError>>,
{
    cfg.validate()?;
    crate::clock::calibrate();
    // Installed before any thread of the run starts, held until every one
    // is joined.
    let _handler = if cfg.run.policy == Policy::Floating && cfg.interrupts() {
        Some(signal::install(cfg.interrupt_signal).map_err(RtError::Setup)?)
    } else {
        None
    };
    let (cluster, senders) = build::<Tr>(cfg, handlers, place, local.clone()).map_err(RtError::Setup)?;
    let started = Stamp::now();
    let over = AtomicBool::new(false);
    let mut setup_error = None;
    let outcomes: Vec<Outcome<T>> = std::thread::scope(|s| {
        let watching = watch::start(s, &cluster, &over, local.start);
        let handles = start_threads(s, &cluster, senders, local.clone(), &spawn);
        let out = match handles {
            Ok(handles) => join(handles),
            Err((e, handles)) => {
                setup_error = Some(e);
                join(handles)
            }
        };
        over.store(true, Ordering::Release);
        match watching {
            Ok(h) => h.thread().unpark(),
            Err(e) => {
                setup_error.get_or_insert(e);
            }
        }
        out
    });
    let wall_ns = started.elapsed_ns();
    if let Some(e) = setup_error {
        return Err(RtError::Setup(e));
    }
    if cluster.failed_for_peer() {
        // Whatever the local threads said, they stopped for the peer.
        return Err(cluster.failure_error().unwrap_or_else(|| RtError::Setup("a peer failed".into())));
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

/// The threads started so far, compute and protocol.
struct Handles<'s, T> {
    compute: Vec<std::thread::ScopedJoinHandle<'s, Outcome<T>>>,
    protocol: Vec<std::thread::ScopedJoinHandle<'s, ThreadTimes>>,
}

/// Starts every thread of the local nodes; on a failure to start one, stops
/// those already running and returns why, with their handles.
#[allow(clippy::type_complexity)]
fn start_threads<'s, 'e, T, Tr, F, Fut>(
    s: &'s std::thread::Scope<'s, 'e>,
    cluster: &'e Arc<Cluster<Tr>>,
    senders: Vec<Tr::Sender>,
    local: Range<u32>,
    spawn: &'e F,
) -> Result<Handles<'s, T>, (String, Handles<'s, T>)>
where
    T: Send + 's,
    Tr: Transport,
    F: Fn(RtProc) -> Fut + Sync,
    Fut: Future<Output = Result<T, AmError>>,
{
    let ppn = cluster.cfg.threads_per_node();
    let compute = cluster.cfg.compute_threads_per_node();
    let cores = os::online_cores();
    let total_compute = cluster.cfg.run.topology.nodes * compute;
    let mut senders = senders.into_iter();
    let mut handles = Handles { compute: Vec::new(), protocol: Vec::new() };
    for n in local {
        for l in 0..ppn {
            let out = senders.next().expect("one send side per thread");
            let core = (n * ppn + l) as usize % cores;
            let builder = std::thread::Builder::new().name(format!("fg-n{n}-t{l}"));
            let spawned = if l < compute {
                builder
                    .spawn_scoped(s, move || compute_thread(cluster, out, n, l, core, total_compute, spawn))
                    .map(|h| handles.compute.push(h))
            } else {
                builder
                    .spawn_scoped(s, move || {
                        if cluster.cfg.pin {
                            os::pin_to(core);
                        }
                        cluster.transport.register_thread(n, l, ThreadKind::Protocol);
                        cluster.clock(n, l).register();
                        let ctx = ThreadCtx::new(cluster, out, n, l);
                        ctx.serve(|| all_done(cluster, n, total_compute));
                        // Coproc: whatever it forwarded is queued by now.
                        cluster.node(n).forwarded.progress_done.store(true, Ordering::Release);
                        ctx.stats.times(n, l, false)
                    })
                    .map(|h| handles.protocol.push(h))
            };
            if let Err(e) = spawned {
                // The threads already running would wait for this one
                // for ever: stop them.
                cluster.fail(FAIL_SETUP, HandlerId(0), None);
                return Err((format!("cannot start thread {l} of node {n}: {e}"), handles));
            }
        }
    }
    Ok(handles)
}

/// One compute thread: its application, then (if the policy lets compute
/// threads handle) serving its node until the whole run is done.
fn compute_thread<T, Tr, F, Fut>(
    cluster: &Arc<Cluster<Tr>>,
    out: Tr::Sender,
    n: u32,
    l: u32,
    core: usize,
    total_compute: u32,
    spawn: &F,
) -> Outcome<T>
where
    Tr: Transport,
    F: Fn(RtProc) -> Fut + Sync,
    Fut: Future<Output = Result<T, AmError>>,
{
    if cluster.cfg.pin {
        os::pin_to(core);
    }
    let ctx = Rc::new(ThreadCtx::new(cluster, out, n, l));
    cluster.transport.register_thread(n, l, ThreadKind::Compute);
    cluster.clock(n, l).register();
    let registration = Registration::new(&*ctx);
    let proc = RtProc::new(ctx.clone());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| block_on(spawn(proc))));
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
    cluster.transport.app_finished();
    if cluster.cfg.run.policy.compute_procs_handle() {
        ctx.serve(|| all_done(cluster, n, total_compute));
    } else if ctx.takes_forwarded {
        // What the progress thread forwards until it stops must still run.
        let forwarded = &cluster.node(n).forwarded;
        ctx.serve_forwarded(|| forwarded.progress_done.load(Ordering::Acquire) && forwarded.is_empty());
    }
    drop(registration);
    let times = ctx.stats.times(n, l, true);
    (n, l, result, times)
}

/// Joins every thread; protocol threads' outcomes carry only their times.
fn join<T>(handles: Handles<'_, T>) -> Vec<Outcome<T>> {
    // Protocol threads stop by themselves once every application has
    // returned and their node is drained (see `all_done`).
    let mut out: Vec<_> = handles.compute.into_iter().map(|h| h.join().expect("compute thread joins")).collect();
    for h in handles.protocol {
        let times = h.join().expect("protocol thread joins");
        out.push((u32::MAX, 0, Err(RtError::Setup(String::new())), times));
    }
    out
}
