//! A run that stops making progress is reported, not waited on for ever:
//! a handler that never returns ends the run at the handler time limit,
//! and a node whose threads never poll ends it at the requester's progress
//! timeout, each with an error naming the node and the handler. A thread
//! stuck in code that never returns cannot be taken back, so the process
//! says why and exits (status `STUCK_EXIT`): each case runs in a child
//! process of this test binary.

use finegrain_core::{Args, HandlerInfo, HandlerTable, Message, NodeId, Payload, Policy, Proc, Topology};
use finegrain_rt::{run, RtConfig, STUCK_EXIT};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const CASE: &str = "FINEGRAIN_HANG_CASE";
/// Never set: what the hung code waits for.
static NEVER: AtomicBool = AtomicBool::new(false);

fn table(spin_in_handler: bool) -> (HandlerTable, finegrain_core::HandlerId) {
    let info = |n: &str| HandlerInfo { name: n.into(), body_cycles: 0, code_bytes: 0 };
    let mut t = HandlerTable::new();
    let reply = t.register(info("ping_reply"), |_, _| Ok(())).unwrap();
    let name = if spin_in_handler { "spin_forever" } else { "ping" };
    let request = t
        .register(info(name), move |ctx, _m: &Message| {
            // A handler that never returns (the flag is never set).
            while spin_in_handler && !NEVER.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            ctx.reply_bytes(reply, Args::default(), &[])
        })
        .unwrap();
    (t, request)
}

/// The run a child process makes: node 0 asks node 1, which either hangs
/// in the handler or never polls.
fn hang(policy: Policy, spin_in_handler: bool) {
    let ppn = if policy == Policy::Single { 1 } else { 2 };
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: ppn }, policy);
    cfg.segment_bytes = 1 << 14;
    cfg.handler_limit_ms = 200;
    cfg.progress_timeout_ms = 300;
    let (t, request) = table(spin_in_handler);
    let r = run(&cfg, &t, |p| async move {
        if p.node().0 == 0 && p.thread().0 == 0 {
            p.request(NodeId(1), request, Args::default(), Payload::none()).await?;
        } else if p.node().0 == 1 && !spin_in_handler {
            // Application code that never reaches the runtime.
            while !NEVER.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(())
    });
    panic!("the run returned instead of hanging: {r:?}");
}

/// Runs case `name` in a child process; its status and standard error,
/// and how long it took.
fn child(name: &str) -> (Option<i32>, String, Duration) {
    let start = Instant::now();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture"])
        .env(CASE, "1")
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), start.elapsed())
}

fn in_child() -> bool {
    std::env::var_os(CASE).is_some()
}

fn check(name: &str, needles: &[&str]) {
    let (code, err, took) = child(name);
    assert_eq!(code, Some(STUCK_EXIT), "{err}");
    let line = err.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("no error line: {err}"));
    for n in needles {
        assert!(line.contains(n), "'{line}' lacks '{n}'");
    }
    // The limit, then the grace the stuck thread gets: seconds, not never.
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn a_handler_that_never_returns_ends_the_run_under_fixed() {
    if in_child() {
        return hang(Policy::Fixed { protocol_procs: 1 }, true);
    }
    check(
        "a_handler_that_never_returns_ends_the_run_under_fixed",
        &["node 1: handler spin_forever ran longer than the handler time limit of 200 ms"],
    );
}

#[test]
fn a_handler_that_never_returns_ends_the_run_under_floating() {
    if in_child() {
        return hang(Policy::Floating, true);
    }
    check(
        "a_handler_that_never_returns_ends_the_run_under_floating",
        &["node 1: handler spin_forever ran longer than the handler time limit of 200 ms"],
    );
}

#[test]
fn a_node_that_never_polls_ends_the_run_under_single() {
    if in_child() {
        return hang(Policy::Single, false);
    }
    check(
        "a_node_that_never_polls_ends_the_run_under_single",
        &["node 0 thread 0 failed", "no reply from node 1 to its request ping within the progress timeout of 300 ms"],
    );
}

#[test]
fn a_node_that_never_polls_ends_the_run_under_floating() {
    if in_child() {
        return hang(Policy::Floating, false);
    }
    check(
        "a_node_that_never_polls_ends_the_run_under_floating",
        &["node 0 thread 0 failed", "no reply from node 1 to its request ping within the progress timeout of 300 ms"],
    );
}
