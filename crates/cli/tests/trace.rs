//! `run --trace FILE`: a simulated run's timeline as Chrome trace-event
//! JSON, which changes nothing in the run's record.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const RUN: [&str; 6] = ["run", "micro", "--nodes", "2", "--requests-per-node", "50"];

/// The record `run` writes with `extra` flags, without what differs
/// between any two runs (wall time) or follows from it (the digest).
fn record(dir: &Path, name: &str, extra: &[&str]) -> Value {
    let path = dir.join(name);
    let out = finegrain(&[&RUN[..], &["--json", path.to_str().unwrap()], extra].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let o = v.as_object_mut().unwrap();
    assert!(o.remove("wall").is_some() && o.remove("digest").is_some(), "{v}");
    v
}

#[test]
fn a_timeline_is_chrome_trace_json_and_leaves_the_record_as_it_was() {
    let d = temp_dir("trace");
    let trace = d.join("run.trace.json");
    let traced = record(&d, "traced.json", &["--trace", trace.to_str().unwrap()]);
    let plain = record(&d, "plain.json", &[]);
    assert_eq!(traced, plain, "--trace is in neither the configuration nor the statistics");
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(t["displayTimeUnit"], "ns");
    let events = t["traceEvents"].as_array().unwrap();
    let names: BTreeSet<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["processor 0 (compute)", "processor 1 (protocol)"]));
    let processes = events.iter().filter(|e| e["ph"] == "M" && e["name"] == "process_name").count();
    assert_eq!(processes, 2, "one process per node");
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert!(e["dur"].as_f64().unwrap() >= 0.0 && e["ts"].as_f64().unwrap() >= 0.0, "{e}");
        assert!(e["name"].is_string() && e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
    }
    let handlers = events.iter().filter(|e| e["ph"] == "X" && e["cat"] == "handler").count() as u64;
    assert_eq!(handlers, plain["stats"]["handlers"].as_u64().unwrap());
    let flows =
        |ph: &str| events.iter().filter(|e| e["ph"] == ph).map(|e| e["id"].as_u64().unwrap()).collect::<Vec<_>>();
    let (mut sent, mut received) = (flows("s"), flows("f"));
    sent.sort_unstable();
    received.sort_unstable();
    assert_eq!(sent, received, "every message flow has its two ends");
    assert_eq!(sent.len() as u64, plain["stats"]["messages"].as_u64().unwrap());
    assert_eq!(t["otherData"]["about"]["seed"], 1);
}

#[test]
fn a_cut_timeline_says_so_and_bad_bounds_are_one_line_errors() {
    let d = temp_dir("trace-bounds");
    let trace = d.join("cut.json");
    let t = trace.to_str().unwrap();
    let out = finegrain(&[&RUN[..], &["--trace", t, "--trace-events", "40", "--trace-window", "1us.."]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("timeline cut at 40 events"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(v["otherData"]["cut"].as_str().unwrap().contains("limit of 40 events"), "{v}");
    assert_eq!(v["otherData"]["window_cycles"], "200..", "1 us of a 200 MHz processor");
    for (flags, needles) in [
        (&["--trace", t, "--trace-window", "9..3"][..], &["invalid trace_window = 9..3", "allowed START..END"][..]),
        (&["--trace", t, "--trace-window", "soon"], &["invalid trace_window = soon", "us` suffix"]),
        (&["--trace", t, "--trace-events", "0"], &["invalid trace_events = 0", "allowed 1 or more"]),
        (&["--trace-window", "0..10"], &["invalid trace_window without --trace"]),
        (&["--trace", t, "--platform", "native"], &["invalid trace with platform native", "platform sim"]),
    ] {
        assert_one_line_error(&[&RUN[..], flags].concat(), needles);
    }
    assert_one_line_error(
        &["sweep", "--set", "seed=1,2", "--out", d.join("s").to_str().unwrap(), "micro", "--trace", t],
        &["invalid trace for sweep"],
    );
}
