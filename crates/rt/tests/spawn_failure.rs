//! A thread the runtime cannot start ends the run with an error, and the
//! threads already running stop instead of waiting for it. In its own test
//! binary (its own process): it lowers the process's address-space limit.

use finegrain_core::{AmError, HandlerTable, Policy, Topology};
use finegrain_rt::{run, RtConfig, RtError};

#[test]
fn a_thread_that_cannot_start_is_an_error_not_a_hang() {
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 32 }, Policy::Fixed { protocol_procs: 1 });
    cfg.segment_bytes = 1 << 12;
    let table = HandlerTable::new();
    // Room for the rings and a few threads' stacks (2 MiB each), not for 64.
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
    let limit = libc::rlimit { rlim_cur: used + (48 << 20), rlim_max: libc::RLIM_INFINITY };
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
