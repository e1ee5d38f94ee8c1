//! Nodes as OS processes over shared memory (`--platform shm`): the same
//! programs give the same answers as on threads of one process, with 2
//! and 4 node processes (more processes than this machine's cores is fine:
//! these check answers, not speed).

mod common;

use common::*;

/// The line of `text` starting with `prefix`.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no '{prefix}' line in:\n{text}"))
}

fn ok(args: &[&str]) -> String {
    let out = finegrain(args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{args:?}: {text}{}", String::from_utf8_lossy(&out.stderr));
    text
}

/// The microbenchmark's counts (requests, messages, handlers) under each
/// policy, on threads and on processes, launched both ways.
#[test]
fn microbenchmark_counts_match_native_with_2_and_4_processes() {
    for nodes in ["2", "4"] {
        for (policy, ppn) in [("single", "1"), ("fixed", "2"), ("floating", "2")] {
            let args = |platform: &'static str| {
                vec![
                    "run",
                    "--platform",
                    platform,
                    "--policy",
                    policy,
                    "--procs-per-node",
                    ppn,
                    "--nodes",
                    nodes,
                    "--protocol",
                    "fetch",
                    "--compute-cycles",
                    "300",
                    "--requests-per-node",
                    "400",
                ]
            };
            let native = ok(&args("native"));
            let shm = ok(&args("shm"));
            let counts = |t: &str| line(t, "requests").split("interrupts").next().unwrap().to_string();
            assert_eq!(counts(&native), counts(&shm), "{nodes} nodes, {policy}");
            let expected = 400 * nodes.parse::<u64>().unwrap();
            assert!(counts(&shm).contains(&format!("requests         {expected}  messages {}", 2 * expected)), "{shm}");
            // One line per thread of every node process.
            let threads = shm.lines().filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())).count();
            assert_eq!(threads, nodes.parse::<usize>().unwrap() * ppn.parse::<usize>().unwrap(), "{shm}");
        }
    }
}

/// fetch&add words checked in node 0's process against the requests every
/// process sent; PDQ keyed dispatch serves the home.
#[test]
fn fetch_add_answers_match_native_with_2_and_4_processes() {
    for (requesters, kind) in [("1", "smp"), ("3", "smp"), ("3", "mult")] {
        let args = |platform: &'static str| {
            vec![
                "fetch-add",
                "--platform",
                platform,
                "--kind",
                kind,
                "--discipline",
                "pdq",
                "--requester-nodes",
                requesters,
                "--compute-procs",
                "2",
                "--keys",
                "8",
                "--requests-per-thread",
                "300",
            ]
        };
        let native = ok(&args("native"));
        let shm = ok(&args("shm"));
        let requests = |t: &str| line(t, "requests").split(" in ").next().unwrap().to_string();
        assert_eq!(requests(&native), requests(&shm), "{requesters} requesters, {kind}");
        assert!(line(&shm, "requests").contains("every word checked"), "{shm}");
    }
}

/// `finegrain launch -n N -- finegrain run --platform shm` is the same run.
#[test]
fn launch_starts_one_process_per_node() {
    let bin = env!("CARGO_BIN_EXE_finegrain");
    let text =
        ok(&["launch", "-n", "4", "--", bin, "run", "--platform", "shm", "--nodes", "4", "--requests-per-node", "500"]);
    assert!(line(&text, "requests").starts_with("requests         2000  messages 4000"), "{text}");
}

#[test]
fn a_launch_of_the_wrong_size_is_one_line() {
    let bin = env!("CARGO_BIN_EXE_finegrain");
    let out = finegrain(&["launch", "-n", "3", "--", bin, "run", "--platform", "shm", "--nodes", "2"]);
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
        &["run", "--platform", "shm", "--nodes", "2", "--u", "0.5"],
        &["invalid u with platform shm", "--compute-cycles"],
    );
    assert_one_line_error(&["run", "--platform", "mars"], &["invalid platform = mars", "sim, native, shm"]);
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
