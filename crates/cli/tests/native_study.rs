//! `reproduce --platform native`: a study's planned runs on threads of this
//! process, with records and a report that say so, and the refusals of
//! what native runs cannot do (rerun, reuse, shares, other studies).

mod common;

use common::*;
use std::path::Path;

/// A scheduling-micro experiment small enough to run natively in about a
/// second: the protocols, processor counts and U the claims' checks
/// require, two seeds, few requests.
const TINY: &str = r#"
name = "tiny-native"
title = "Scheduling microbenchmarks, tiny"
paper = "Falsafi & Wood, HPCA 1997"
study = "scheduling-micro"
preset = "hpca97"
seed = 5
nodes = 2

[full]
protocols = ["null", "fetch"]
procs_per_node = [1, 2, 3, 4]
target_u = [0.1, 0.3, 0.5, 0.7]
oint_cycles = [200, 20000]
requests_per_node = 20
cost_performance_u = [0.3, 0.7]
replicates = 2

[quick]
protocols = ["null", "fetch"]
procs_per_node = [1, 2, 3, 4]
target_u = [0.1, 0.3, 0.5, 0.7]
oint_cycles = [200, 20000]
requests_per_node = 20
cost_performance_u = [0.3, 0.7]
replicates = 2
mechanism_sensitivity = ["protocol_thread"]
"#;

fn tiny(d: &Path) -> String {
    let path = d.join("tiny.toml");
    std::fs::write(&path, TINY).unwrap();
    path.to_str().unwrap().to_string()
}

fn record_files(runs: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(runs).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

#[test]
fn a_small_study_runs_natively_and_its_records_are_neither_rerun_nor_reused() {
    let d = temp_dir("native-study");
    let exp = tiny(&d);
    let out = d.join("out");
    let o = finegrain(&["reproduce", &exp, "--quick", "--platform", "native", "--out", out.to_str().unwrap()]);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{stdout}{stderr}");
    // Only the study's own runs at Oint 200: 2 protocols x 7 policy-processor
    // pairs x 4 U x 2 seeds (the other Oint and the sensitivity runs change
    // only the simulated machine).
    let files = record_files(&out.join("runs"));
    assert_eq!(files.len(), 112, "{files:?}");
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count() - 1, files.len(), "a row per record");
    for f in &files {
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        assert_eq!(r["platform"], "native", "{}", f.display());
        assert!(r["summary"]["time"].as_u64().unwrap() > 0, "{}", f.display());
        assert_eq!(r["summary"]["clock"], "nanoseconds");
        assert!(r.get("config").is_none() && r.get("stats").is_none(), "no simulator configuration or statistics");
        assert_eq!(r["labels"]["oint_cycles"], 200);
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for needle in [
        "platform native",
        "wall-clock nanoseconds of this host",
        "Not measured natively: PP occupancy, mean round trip, simulated events.",
        "112 of the 448 planned runs ran",
        "## Measured times: null (platform native)",
        "## Measured times: fetch (platform native)",
        "| fixed-2 | 1.00 | 1.00 | 1.00 | 1.00 |",
    ] {
        assert!(report.contains(needle), "report lacks '{needle}':\n{report}");
    }
    assert_eq!(report.matches("- Not judged natively: ").count(), 5, "{report}");
    assert_eq!(stdout.matches(": not judged natively - ").count(), 5, "{stdout}");
    assert!(stderr.contains("note: platform native") && stderr.contains("note: not measured natively"), "{stderr}");
    // The largest run has 2 nodes x 4 threads.
    let oversubscribed = std::thread::available_parallelism().map_or(1, |n| n.get()) < 8;
    assert_eq!(report.contains("times mean little here"), oversubscribed, "{report}");
    assert_eq!(stderr.contains("check correctness only"), oversubscribed, "{stderr}");

    let record = files[0].to_str().unwrap();
    assert_one_line_error(
        &["rerun", record],
        &["the record of a native run (platform native)", "allowed records of simulated runs"],
    );
    let again = d.join("again");
    assert_one_line_error(
        &["reproduce", &exp, "--quick", "--reuse", out.to_str().unwrap(), "--out", again.to_str().unwrap()],
        &["a record of a run on platform native", "allowed --reuse of the output directories of simulated"],
    );
    let simulated = std::fs::read_dir(again.join("runs")).map_or(0, |d| d.count());
    assert_eq!(simulated, 0, "refused before any run");
}

#[test]
fn a_platform_a_study_cannot_run_on_is_refused() {
    assert_one_line_error(
        &["reproduce", "scheduling-micro", "--quick", "--platform", "shm"],
        &["invalid --platform shm: allowed sim, native"],
    );
    let d = temp_dir("native-refusals");
    let out = d.join("out");
    let out = out.to_str().unwrap();
    for study in ["pdq-micro", "pdq-dsm", "coprocessor"] {
        assert_one_line_error(
            &["reproduce", study, "--quick", "--platform", "native", "--out", out],
            &[
                &format!("invalid --platform native for study {study}"),
                "allowed --platform native with scheduling-micro",
            ],
        );
    }
    let native = ["reproduce", "scheduling-micro", "--quick", "--platform", "native"];
    assert_one_line_error(&[&native[..], &["--reuse", out]].concat(), &["invalid --reuse with --platform native"]);
    assert_one_line_error(&[&native[..], &["--shard", "1/2"]].concat(), &["invalid --shard with --platform native"]);
    assert_one_line_error(&[&native[..], &["--plan", out]].concat(), &["invalid --plan with --platform native"]);
    assert!(!Path::new(out).exists(), "nothing written");
}

/// Under mpirun every rank would run the whole native study beside the
/// others: each rank refuses with the one line, before writing anything.
#[test]
fn a_native_study_under_mpirun_is_refused() {
    let d = temp_dir("native-mpirun");
    let out = d.join("out");
    let o = std::process::Command::new("mpirun")
        .args(["-np", "2", "--oversubscribe", env!("CARGO_BIN_EXE_finegrain"), "reproduce", "scheduling-micro"])
        .args(["--quick", "--platform", "native", "--out"])
        .arg(&out)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun runs (Open MPI is installed)");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    let refusal =
        "error: invalid --platform native under mpirun: every rank would run the whole study beside the others";
    assert!(err.lines().any(|l| l.starts_with(refusal)), "{err}");
    assert!(!out.exists(), "nothing written");
}
