//! Nodes as OS processes over shared memory (`--platform shm`): the same
//! programs give the same answers as on threads of one process, with 2
//! and 4 node processes (more processes than this machine's cores is fine:
//! these check answers, not speed).

mod common;
mod same_answers;

use common::*;
use same_answers::*;

/// The microbenchmark's counts under each policy, as on threads.
#[test]
fn microbenchmark_counts_match_native_with_2_and_4_processes() {
    microbenchmark_counts_match_native("shm");
}

/// fetch&add answers (PDQ serving the home), as on threads.
#[test]
fn fetch_add_answers_match_native_with_2_and_4_processes() {
    fetch_add_answers_match_native("shm");
}

/// `finegrain launch -n N -- finegrain run micro --platform shm` is the same run.
#[test]
fn launch_starts_one_process_per_node() {
    let bin = env!("CARGO_BIN_EXE_finegrain");
    let text = ok(&[
        "launch",
        "-n",
        "4",
        "--",
        bin,
        "run",
        "micro",
        "--platform",
        "shm",
        "--nodes",
        "4",
        "--requests-per-node",
        "500",
    ]);
    assert!(line(&text, "requests").starts_with("requests         2000  messages 4000"), "{text}");
}

#[test]
fn a_launch_of_the_wrong_size_is_one_line() {
    let bin = env!("CARGO_BIN_EXE_finegrain");
    let out = finegrain(&["launch", "-n", "3", "--", bin, "run", "micro", "--platform", "shm", "--nodes", "2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.lines().any(|l| l.starts_with("error: could not start the runtime: the launcher started 3 node processes but the configuration has 2 nodes")),
        "{err}"
    );
    assert_one_line_error(&["launch", "-n", "300", "--", bin], &["invalid nodes = 300", "1..=256"]);
    assert_one_line_error(&["launch", "-n", "0", "--", bin], &["invalid nodes = 0"]);
    assert_one_line_error(&["launch", "-n", "2", "--", "/nonexistent/program"], &["cannot start node 0"]);
}

#[test]
fn shm_refuses_what_cannot_cross_processes() {
    assert_one_line_error(
        &["run", "micro", "--platform", "shm", "--nodes", "2", "--u", "0.5"],
        &["invalid u with platform shm", "--compute-cycles"],
    );
    assert_one_line_error(&["run", "micro", "--platform", "mars"], &["invalid platform = mars", "sim, native, shm"]);
}

/// The benchmark prints the comparison (whatever the figures: speed is
/// judged from its table, not by a test).
#[test]
fn bench_pingpong_on_shm_prints_its_comparison() {
    let text = ok(&["bench", "pingpong", "--platform", "shm", "--quick"]);
    assert!(text.contains("fg shm  in-process"), "{text}");
    assert_eq!(text.lines().filter(|l| l.trim_start().starts_with(['8', '6', '2'])).count(), 3, "{text}");
    assert!(line(&text, "target 8 B: shm <= 1.2 x in-process rings: ").len() > 40, "{text}");
}

#[test]
fn bench_rate_on_shm_prints_its_comparison() {
    let text = ok(&["bench", "rate", "--platform", "shm", "--quick"]);
    assert!(line(&text, "  finegrain shm: ").contains("in-process rings: "), "{text}");
    assert_one_line_error(&["bench", "rate", "--platform", "tcp"], &["invalid platform = tcp", "native, shm"]);
}
