//! Native runs and benchmarks on real threads.

mod common;

use common::*;

#[test]
fn native_microbenchmark_runs_under_every_policy() {
    for (policy, ppn) in [("single", "1"), ("fixed", "2"), ("floating", "2")] {
        let d = temp_dir(&format!("native-{policy}"));
        let f = d.join("run.json");
        let out = finegrain(&[
            "run",
            "micro",
            "--platform",
            "native",
            "--policy",
            policy,
            "--procs-per-node",
            ppn,
            "--protocol",
            "fetch",
            "--compute-cycles",
            "2000",
            "--requests-per-node",
            "300",
            "--json",
            f.to_str().unwrap(),
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{policy}: {text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("measured U") && text.contains("handler ms"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        assert_eq!(v["stats"]["requests"], 600);
        assert_eq!(v["stats"]["messages"], 1200, "{policy}: every request answered");
        // Its configuration, seed and machine are recorded.
        assert_eq!(v["seed"], 1);
        assert_eq!(v["config"]["seed"], 1);
        assert_eq!(v["config"]["topology"]["procs_per_node"], ppn.parse::<u32>().unwrap());
        assert_eq!(v["preset"], "hpca97");
        assert_eq!(v["machine"]["cache"]["size_bytes"], 1 << 20);
    }
    assert_one_line_error(
        &["run", "micro", "--platform", "cloud"],
        &["invalid platform = cloud", "allowed sim, native"],
    );
    assert_one_line_error(
        &["run", "micro", "--platform", "native", "--oint", "300"],
        &["invalid oint for platform native"],
    );
}

#[test]
fn native_benchmarks_print_their_comparison() {
    let out = finegrain(&["bench", "rate", "--quick"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("M messages/s"), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let d = temp_dir("pp");
    let f = d.join("pp.json");
    let out = finegrain(&["bench", "pingpong", "--quick", "--json", f.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("finegrain") && text.contains("floor"), "{text}");
    let rows: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.iter().map(|r| r["size"].as_u64().unwrap()).collect::<Vec<_>>(), vec![8, 64, 256]);
    for r in rows {
        for k in ["finegrain_ns", "floor_ns", "crossbeam_ns"] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{k}");
        }
        // A peer that is not installed is null, never an error.
        for k in ["mpi_ns", "ucx_am_ns"] {
            assert!(r[k].is_null() || r[k].as_f64().unwrap() > 0.0, "{k}");
        }
    }
    let f = d.join("pdq.json");
    let out = finegrain(&["bench", "pdq", "--quick", "--json", f.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("PDQ") && text.contains("mutex per key"), "{text}");
    let rows: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 6, "two handler costs x three key counts");
    for r in rows {
        for k in ["pdq_per_s", "mutex_per_key_per_s", "single_dispatcher_per_s"] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{k}");
        }
    }
}
