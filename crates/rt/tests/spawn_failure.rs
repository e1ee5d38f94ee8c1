//! A thread the runtime cannot start ends the run with an error, and the
//! threads already running stop instead of waiting for it. In a child
//! process of this test binary: it lowers the process's address-space
//! limit, and a thread that did start aborts the whole process if one of
//! its own small allocations fails under that limit (Rust's signal stack,
//! glibc's TLS destructors, a heap allocation: windows of a few KiB below
//! each 2 MiB thread stack; about 2% of headrooms in a sweep of 600). A
//! child that aborts that way is run again with a little more room; any
//! other outcome decides the test.

use finegrain_core::{AmError, HandlerTable, Policy, Topology};
use finegrain_rt::{run, RtConfig, RtError};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

const TEST: &str = "a_thread_that_cannot_start_is_an_error_not_a_hang";
/// Set in the child: the headroom above the address space in use, in KiB.
const HEADROOM_VAR: &str = "FINEGRAIN_SPAWN_FAILURE_HEADROOM_KIB";

#[test]
fn a_thread_that_cannot_start_is_an_error_not_a_hang() {
    if let Ok(kib) = std::env::var(HEADROOM_VAR) {
        return run_limited(kib.parse::<u64>().unwrap() << 10);
    }
    let mut aborts = Vec::new();
    for attempt in 0..6u64 {
        // 48 MiB plus a step that is not a multiple of a thread's stack, so
        // a retry lands elsewhere in the per-thread allocation pattern.
        let headroom_kib = (48 << 10) + attempt * 700;
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(HEADROOM_VAR, headroom_kib.to_string())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            return;
        }
        let out_of_memory = ["failed to allocate an alternative stack", "memory allocation of", "out of memory"]
            .iter()
            .any(|m| stderr.contains(m));
        if out.status.signal() != Some(libc::SIGABRT) || !out_of_memory {
            panic!("child with {headroom_kib} KiB of headroom failed ({}): {stderr}", out.status);
        }
        aborts.push(headroom_kib);
    }
    panic!("every child aborted on a failed allocation of its own (headroom {aborts:?} KiB)");
}

/// The scenario: 64 threads, room for the rings and a few threads' stacks
/// (2 MiB each) only.
fn run_limited(headroom: u64) {
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 32 }, Policy::Fixed { protocol_procs: 1 });
    cfg.segment_bytes = 1 << 12;
    let table = HandlerTable::new();
    let used = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:").map(|v| v.trim().trim_end_matches(" kB").parse::<u64>().unwrap()))
        .unwrap()
        * 1024;
    // The run goes on a thread started before the limit, so a hang fails
    // the test instead of blocking it.
    let (go, start) = std::sync::mpsc::channel::<()>();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        start.recv().unwrap();
        let out = run(&cfg, &table, |_p| async move { Ok::<(), AmError>(()) });
        let _ = done.send(out.map(|o| o.results.len()));
    });
    let limit = libc::rlimit { rlim_cur: used + headroom, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: setrlimit only reads `limit`.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    go.send(()).unwrap();
    let out = finished.recv_timeout(std::time::Duration::from_secs(60));
    let unlimited = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: as above.
    unsafe { libc::setrlimit(libc::RLIMIT_AS, &unlimited) };
    match out {
        Ok(Err(RtError::Setup(e))) => assert!(e.starts_with("cannot start thread "), "{e}"),
        Ok(other) => panic!("expected a setup error, got {other:?}"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("the run panicked"),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("the run did not end within 60 s"),
    }
}
