//! Checks the shm and MPI platform tests share: the same programs give the
//! same answers on threads of one process and on the platform under test.

#![allow(dead_code)] // each test file uses some of these

use super::common::finegrain;

/// The line of `text` starting with `prefix`.
pub fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no '{prefix}' line in:\n{text}"))
}

pub fn ok(args: &[&str]) -> String {
    let out = finegrain(args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{args:?}: {text}{}", String::from_utf8_lossy(&out.stderr));
    text
}

/// The microbenchmark's counts (requests, messages, handlers) under each
/// policy match on threads of one process and on `platform`, with 2 and 4
/// nodes, and every node's threads report.
pub fn microbenchmark_counts_match_native(platform: &'static str) {
    for nodes in ["2", "4"] {
        for (policy, ppn) in [("single", "1"), ("fixed", "2"), ("floating", "2")] {
            let args = |platform: &'static str| {
                vec![
                    "run",
                    "micro",
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
            let other = ok(&args(platform));
            let counts = |t: &str| line(t, "requests").split("interrupts").next().unwrap().to_string();
            assert_eq!(counts(&native), counts(&other), "{nodes} nodes, {policy}");
            let expected = 400 * nodes.parse::<u64>().unwrap();
            assert!(
                counts(&other).contains(&format!("requests         {expected}  messages {}", 2 * expected)),
                "{other}"
            );
            // One line per thread of every node process.
            let threads = other.lines().filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())).count();
            assert_eq!(threads, nodes.parse::<usize>().unwrap() * ppn.parse::<usize>().unwrap(), "{other}");
        }
    }
}

/// fetch&add words checked on node 0 against the requests every node sent,
/// with PDQ keyed dispatch serving the home, match threads of one process.
pub fn fetch_add_answers_match_native(platform: &'static str) {
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
        let other = ok(&args(platform));
        let requests = |t: &str| line(t, "requests").split(" in ").next().unwrap().to_string();
        assert_eq!(requests(&native), requests(&other), "{requesters} requesters, {kind}");
        assert!(line(&other, "requests").contains("every word checked"), "{other}");
    }
}
