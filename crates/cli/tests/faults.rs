//! Faults of a run across processes: a node process killed mid-run makes
//! every other node stop with an error naming it, an interrupted launcher
//! stops every node, and nothing is left behind (no node process, and the
//! shared memory is a `memfd`, which has no name to leave).

mod common;

use common::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A long shared-memory run of `nodes` node processes, launched by the
/// binary itself.
fn long_run(nodes: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args([
            "run",
            "micro",
            "--platform",
            "shm",
            "--nodes",
            nodes,
            "--compute-cycles",
            "2000",
            "--requests-per-node",
            "100000000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The node processes of launcher `pid`: (node, pid), once all `nodes` run.
fn node_processes(run: &mut Child, nodes: usize) -> Vec<(u32, u32)> {
    let launcher = run.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            let ppid: u32 = stat.rsplit(')').next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
            if ppid != launcher {
                continue;
            }
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let node = env
                .split(|b| *b == 0)
                .find_map(|kv| String::from_utf8_lossy(kv).strip_prefix("FINEGRAIN_NODE=").map(|v| v.parse().unwrap()));
            if let Some(node) = node {
                found.push((node, pid));
            }
        }
        if found.len() == nodes {
            found.sort();
            return found;
        }
        if Instant::now() > deadline || run.try_wait().unwrap().is_some() {
            let _ = run.kill();
            let mut err = String::new();
            std::io::Read::read_to_string(run.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("the node processes did not all start: {found:?}; {err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ")
}

fn signal(pid: u32, sig: &str) {
    assert!(Command::new("kill").args(["-s", sig, &pid.to_string()]).status().unwrap().success());
}

/// Waits for `child` (at most `limit`); its stderr and how long it took.
fn finish(mut child: Child, limit: Duration) -> (String, Duration) {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the run did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = start.elapsed();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    (String::from_utf8_lossy(&out.stderr).into_owned(), took)
}

#[test]
fn a_killed_node_stops_every_other_node_naming_it() {
    let mut run = long_run("3");
    let nodes = node_processes(&mut run, 3);
    // Let the run get going.
    std::thread::sleep(Duration::from_millis(300));
    let (_, victim) = nodes[2];
    signal(victim, "KILL");
    let (err, took) = finish(run, Duration::from_secs(10));
    let died = format!("error: node 2 (process {victim}) died before the run ended");
    // Both other nodes say so; the launcher says it once, for both.
    let died = format!("{died} (2 nodes)");
    assert_eq!(err.lines().filter(|l| l.starts_with("error: ")).count(), 2, "one line per cause:\n{err}");
    assert!(err.lines().any(|l| l == died), "{err}");
    assert!(err.lines().any(|l| l == "error: node 2 was killed by signal 9 (SIGKILL)"), "{err}");
    // The others notice within milliseconds; the launcher then reaps them.
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    for (_, pid) in nodes {
        assert!(!alive(pid), "node process {pid} was left behind");
    }
}

#[test]
fn an_interrupted_launcher_stops_every_node() {
    let mut run = long_run("2");
    let launcher = run.id();
    let nodes = node_processes(&mut run, 2);
    std::thread::sleep(Duration::from_millis(200));
    signal(launcher, "INT");
    let (err, took) = finish(run, Duration::from_secs(10));
    assert!(err.lines().any(|l| l == "error: interrupted by signal 2: stopped every node process"), "{err}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    for (_, pid) in nodes {
        assert!(!alive(pid), "node process {pid} was left behind");
    }
}

#[test]
fn limits_and_the_interrupt_signal_are_checked_and_documented() {
    assert_one_line_error(
        &["run", "micro", "--platform", "native", "--interrupt-signal", "99"],
        &["invalid interrupt_signal = 99", "SIGRTMIN"],
    );
    assert_one_line_error(
        &["run", "micro", "--platform", "native", "--handler-limit-ms", "0"],
        &["invalid handler_limit_ms = 0", "allowed 1..=3600000"],
    );
    assert_one_line_error(
        &["run", "micro", "--progress-timeout-ms", "100"],
        &["invalid progress_timeout_ms with platform sim", "native or shm"],
    );
    // Another real-time signal does the interrupting when asked.
    let out = finegrain(&[
        "run",
        "micro",
        "--platform",
        "shm",
        "--policy",
        "floating",
        "--interrupt-signal",
        "6",
        "--compute-cycles",
        "3000",
        "--requests-per-node",
        "300",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
