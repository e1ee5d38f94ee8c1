//! `finegrain sweep`: any workload over a grid of configuration fields,
//! with seeds; every record reruns, and a path or value the run cannot take
//! is one line naming it.

mod common;

use common::*;

#[test]
fn a_sweep_runs_every_point_and_seed_and_its_records_rerun() {
    let d = temp_dir("sweep");
    let out = d.join("out");
    let o = finegrain(&[
        "sweep",
        "micro",
        "--protocol",
        "fetch",
        "--compute-cycles",
        "1000",
        "--requests-per-node",
        "200",
        "--set",
        "machine.interrupt.overhead_cycles=200,5000",
        "--set",
        "policy=fixed,floating",
        "--seeds",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
    // A row per point (means over its seeds), a record per run.
    assert!(stdout.contains("| machine.interrupt.overhead_cycles | policy | sim_us |"), "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("| 5000 | floating |")).count(), 1, "{stdout}");
    let runs: Vec<_> = std::fs::read_dir(out.join("runs")).unwrap().collect();
    assert_eq!(runs.len(), 8);
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 9);
    assert!(csv.starts_with("machine.interrupt.overhead_cycles,policy,replicate,seed,sim_cycles,"), "{csv}");
    let record = out.join("runs").join("overhead_cycles5000-policyfloating-r1.json");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(json["study"], "sweep");
    assert_eq!(json["config"]["machine"]["interrupt"]["overhead_cycles"], 5000);
    assert_eq!(json["config"]["policy"]["kind"], "floating");
    let rerun = finegrain(&["rerun", record.to_str().unwrap()]);
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    // Seeds differ between replicates, and each is derived from --seed.
    let other: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("runs").join("overhead_cycles5000-policyfloating-r0.json")).unwrap(),
    )
    .unwrap();
    assert_ne!(json["config"]["seed"], other["config"]["seed"]);
    // A label the configuration contradicts is refused.
    let mut edited = json.clone();
    edited["labels"]["settings"][0]["value"] = serde_json::json!(200);
    let p = d.join("edited.json");
    std::fs::write(&p, edited.to_string()).unwrap();
    // Edited, it no longer matches its digest, which rerun checks first.
    assert_one_line_error(&["rerun", p.to_str().unwrap()], &["its digest does not match its content"]);
    // Without a digest (a record from before digests) the label check
    // itself is what refuses it.
    edited.as_object_mut().unwrap().remove("digest");
    std::fs::write(&p, edited.to_string()).unwrap();
    assert_one_line_error(
        &["rerun", p.to_str().unwrap()],
        &["it names machine.interrupt.overhead_cycles = 200 but its configuration and workload say 5000"],
    );
}

#[test]
fn a_sweep_of_fetch_add_sets_workload_fields() {
    let d = temp_dir("sweep-fa");
    let out = d.join("out");
    let small = ["--requester-nodes", "1", "--compute-procs", "2", "--requests-per-thread", "50"];
    let args = ["sweep", "--set", "workload.keys=1,16", "--set", "workload.skew=uniform,zipf:1", "fetch-add"];
    let o = finegrain(&[&args[..], &small[..], &["--out", out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let record = out.join("runs").join("keys16-skewzipf1-r0.json");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(json["workload"]["skew"], serde_json::json!({"kind": "zipf", "exponent": 1.0}));
    assert!(json["measures"]["throughput_msgs_per_us"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_sweep_it_cannot_run_is_refused_in_one_line_before_any_run() {
    let d = temp_dir("sweep-bad");
    let out = d.join("out");
    let o = out.to_str().unwrap();
    for (set, says) in [
        (
            "machine.interrupt.overhed=1",
            "machine.interrupt has no field overhed; allowed entry_percent, overhead_cycles",
        ),
        ("topology.procs_per_node=0..2", "invalid procs_per_node = 0"),
        ("topology.procs_per_node=two", "topology.procs_per_node: invalid type: string \"two\""),
        ("policy=sometimes", "invalid policy = sometimes"),
        ("topology", "allowed PATH=VALUES"),
        ("x=5..1", "invalid range 5..1"),
    ] {
        assert_one_line_error(&["sweep", "--set", set, "--out", o, "micro"], &[says]);
        assert!(!out.exists(), "{set}: output written for a refused sweep");
    }
    assert_one_line_error(
        &["sweep", "--set", "seed=1,2", "--seeds", "2", "--out", o, "micro"],
        &["invalid seeds = 2: the sweep sets seed itself"],
    );
    assert_one_line_error(
        &["sweep", "--set", "seed=1", "micro", "--platform", "native", "--out", o],
        &["invalid platform = native"],
    );
    assert_one_line_error(&["sweep", "--out", o, "micro"], &["--set"]);
    assert_one_line_error(
        &["sweep", "--set", "seed=1", "--name", " ", "micro"],
        &["invalid name = \" \"", "non-blank"],
    );
    // The sweep's flags may follow the workload's.
    assert_one_line_error(&["sweep", "micro", "--u", "0.5", "--set", "seed=1", "--seeds", "0"], &["invalid seeds = 0"]);
    assert!(!out.exists(), "output written for a refused sweep");
}
