//! The run's watcher: one thread per process that notices what the
//! run's own threads cannot, because they are the ones stuck or because
//! it happens elsewhere:
//! - a handler running longer than `RtConfig::handler_limit_ms` (it will
//!   never give its thread back to the node);
//! - a node of another process that failed or died, or shared transport
//!   state found corrupt (the transport says);
//! - a run that failed but whose threads do not stop (one is stuck in a
//!   handler, or in application code that never reaches the runtime).
//!   A thread cannot be taken back from code that never returns, so the
//!   process reports the failure on standard error and exits (status 3)
//!   after [`STUCK_GRACE`], rather than hang.

use super::cluster::Cluster;
use crate::clock::Stamp;
use crate::transport::{Transport, Trouble};
use finegrain_core::HandlerId;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// How often the watcher looks.
const PERIOD: Duration = Duration::from_millis(5);
/// How long a failed run's threads have to stop before the process exits.
pub(crate) const STUCK_GRACE: Duration = Duration::from_millis(1000);
/// The exit status of a process whose failed run could not stop.
pub const STUCK_EXIT: i32 = 3;

/// Starts the watcher of `cluster` (whose process announces failures as
/// node `node`); it runs until `over` is set and it is unparked.
pub(super) fn start<'s, 'e, T: Transport>(
    s: &'s Scope<'s, 'e>,
    cluster: &'e Arc<Cluster<T>>,
    over: &'e AtomicBool,
    node: u32,
) -> Result<ScopedJoinHandle<'s, ()>, String> {
    std::thread::Builder::new()
        .name("fg-watch".into())
        .spawn_scoped(s, move || watch(cluster, over, node))
        .map_err(|e| format!("cannot start the run's watcher thread: {e}"))
}

fn watch<T: Transport>(cluster: &Cluster<T>, over: &AtomicBool, node: u32) {
    let limit_ns = cluster.cfg.handler_limit_ms.saturating_mul(1_000_000);
    let mut failed_at: Option<Instant> = None;
    let mut announced = false;
    let mut seen = vec![None; cluster.clocks.len()];
    while !over.load(Ordering::Acquire) {
        if !cluster.failed() {
            check_handlers(cluster, limit_ns, &mut seen);
        }
        if !cluster.failed() {
            match cluster.transport.peer_trouble() {
                Some(Trouble::Failed { node }) => cluster.fail_peer(node, 0),
                Some(Trouble::Died { node, pid }) => cluster.fail_peer(node, pid),
                Some(Trouble::Corrupt { sender, node, head, tail }) => {
                    cluster.fail_corrupt(corrupt_ring(cluster, sender, node, head, tail))
                }
                None => {}
            }
        }
        if cluster.failed() {
            if failed_at.is_none() {
                cluster.transport.run_failed(&failure_text(cluster, node));
            }
            if !announced && !cluster.failed_for_peer() {
                // The others stop now; the words follow when the run ends.
                cluster.transport.announce_failure(node, "");
                announced = true;
            }
            if failed_at.get_or_insert_with(Instant::now).elapsed() > STUCK_GRACE {
                stuck(cluster, node);
            }
        }
        std::thread::park_timeout(PERIOD);
    }
}

/// How long a handler runs before the watcher notes its thread's run
/// delay (what the limit then discounts is measured from there: at most
/// this much preemption before it is missed).
const SIGHT_NS: u64 = 50_000_000;

/// A handler the watcher has seen running a while: its clock's stamp and
/// its thread's run delay then.
#[derive(Clone, Copy)]
struct Sighting {
    since: u64,
    delay_ns: u64,
}

/// Fails the run if a local thread has been in one handler too long. The
/// time counted is the thread's own: time it spent preempted (more
/// threads than cores) does not count, time it spent running or blocked
/// does.
fn check_handlers<T: Transport>(cluster: &Cluster<T>, limit_ns: u64, seen: &mut [Option<Sighting>]) {
    for (i, clock) in cluster.clocks.iter().enumerate() {
        let since = clock.since.load(Ordering::Acquire);
        let age = if since == 0 { 0 } else { Stamp::from_ticks(since).elapsed_ns() };
        if age < SIGHT_NS {
            continue;
        }
        let tid = clock.tid.load(Ordering::Acquire);
        let delay = || crate::os::run_delay_ns(Some(tid));
        let preempted = match seen[i] {
            Some(s) if s.since == since => delay().map_or(0, |d| d.saturating_sub(s.delay_ns)),
            _ => {
                // First seen now (perhaps late, the watcher preempted too):
                // judged from the next look on, where the kernel keeps
                // run delays.
                seen[i] = delay().map(|delay_ns| Sighting { since, delay_ns });
                if seen[i].is_some() {
                    continue;
                }
                0
            }
        };
        if age.saturating_sub(preempted) > limit_ns {
            let node = cluster.first + i as u32 / cluster.ppn;
            let handler = HandlerId(clock.handler.load(Ordering::Relaxed) as u16);
            cluster.fail_hung(node, handler, cluster.cfg.handler_limit_ms);
            return;
        }
    }
}

/// What a producer found wrong with the ring from thread `sender` (of the
/// run) to node `node`.
fn corrupt_ring<T: Transport>(cluster: &Cluster<T>, sender: u32, node: u32, head: u64, tail: u64) -> String {
    let slots = cluster.cfg.ring_slots as u64;
    format!(
        "the ring from node {} thread {} to node {node} has its consumer position at {head}, which a ring of {slots} \
         slots whose producer is at {tail} cannot have (allowed {}..={tail}): something wrote over it",
        sender / cluster.ppn,
        sender % cluster.ppn,
        tail.saturating_sub(slots)
    )
}

/// Why the run failed, as far as the watcher can tell.
fn failure_text<T: Transport>(cluster: &Cluster<T>, node: u32) -> String {
    cluster.failure_error().map(|e| e.to_string()).unwrap_or_else(|| {
        format!("a thread of node {node} did not stop within {} ms of the run failing", STUCK_GRACE.as_millis())
    })
}

/// The run failed and a thread will not stop: say why and end the process.
fn stuck<T: Transport>(cluster: &Cluster<T>, node: u32) -> ! {
    let text = failure_text(cluster, node);
    cluster.transport.announce_failure(node, &text);
    let _ = writeln!(std::io::stderr().lock(), "error: {text}");
    std::process::exit(STUCK_EXIT);
}
