//! A study spread over processes: over MPI ranks (`mpirun -np N finegrain
//! reproduce`, 2 and 3 ranks on this host) and as a batch job's shares
//! (`--shard I/N`, gathered with `--reuse`), each giving the records,
//! `results.csv` and verdicts of one process; and `--plan`.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The study the tests spread: small and quick, with claims.
const STUDY: &str = "coprocessor";

/// Every record of `dir/runs` by file name, without its wall-clock
/// figures (the only part two runs of one configuration may differ in)
/// and the digest that covers them.
fn records(dir: &Path) -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir.join("runs")).unwrap() {
        let path = e.unwrap().path();
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("wall");
        v.as_object_mut().unwrap().remove("digest");
        out.insert(path.file_name().unwrap().to_string_lossy().into_owned(), v);
    }
    out
}

/// `results.csv` without its wall-clock columns.
fn results(dir: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let rows: Vec<Vec<String>> = text.lines().map(|l| l.split(',').map(String::from).collect()).collect();
    let keep: Vec<usize> = (0..rows[0].len()).filter(|&i| !rows[0][i].contains("wall")).collect();
    rows.iter().map(|r| keep.iter().map(|&i| r[i].clone()).collect()).collect()
}

fn verdicts(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with("claim ")).map(String::from).collect()
}

/// The study in one process, into `dir`.
fn one_process(dir: &Path) -> std::process::Output {
    let out = finegrain(&["reproduce", STUDY, "--quick", "--out", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn assert_same_study(a: &Path, b: &Path) {
    let (ra, rb) = (records(a), records(b));
    assert_eq!(ra.keys().collect::<Vec<_>>(), rb.keys().collect::<Vec<_>>(), "the same runs");
    for (k, v) in &ra {
        assert_eq!(Some(v), rb.get(k), "record {k}");
    }
    assert_eq!(results(a), results(b), "results.csv");
}

#[test]
fn mpi_ranks_give_the_records_and_verdicts_of_one_process() {
    let d = temp_dir("spread-mpi");
    let alone = one_process(&d.join("alone"));
    for ranks in ["2", "3"] {
        let dir = d.join(format!("ranks-{ranks}"));
        let out = Command::new("mpirun")
            .args(["-np", ranks, "--oversubscribe", env!("CARGO_BIN_EXE_finegrain"), "reproduce", STUDY, "--quick"])
            .arg("--out")
            .arg(&dir)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("mpirun runs (Open MPI is installed)");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{ranks} ranks: {err}");
        assert_same_study(&d.join("alone"), &dir);
        assert_eq!(verdicts(&out), verdicts(&alone), "{ranks} ranks");
        // Rank 0 says how the runs were spread, in the report too.
        let note = format!("were spread over {ranks} MPI ranks");
        assert!(err.contains(&note), "{err}");
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(report.contains(&note) && report.contains("rank 1 ran "), "{report}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn shards_gathered_with_reuse_give_the_records_and_verdicts_of_one_process() {
    let d = temp_dir("spread-shards");
    let alone = one_process(&d.join("alone"));
    let mut seen = BTreeMap::new();
    for i in 1..=3 {
        let dir = d.join("shards").join(format!("shard-{i}"));
        let out =
            finegrain(&["reproduce", STUDY, "--quick", "--shard", &format!("{i}/3"), "--out", dir.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains(&format!("share {i}/3: ")), "{err}");
        assert!(verdicts(&out).is_empty() && !dir.join("report.md").exists(), "a share judges nothing");
        for k in records(&dir).into_keys() {
            assert!(seen.insert(k.clone(), i).is_none(), "{k} in two shares");
        }
    }
    assert_eq!(seen.len(), records(&d.join("alone")).len(), "every run in one share");
    // Gathered: nothing simulated again, everything as in one process.
    let all = d.join("all");
    let out = Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args(["reproduce", STUDY, "--quick", "--reuse"])
        .arg(d.join("shards"))
        .arg("--out")
        .arg(&all)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("none was simulated now"), "{err}");
    assert_same_study(&d.join("alone"), &all);
    assert_eq!(verdicts(&out), verdicts(&alone));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_plan_lists_the_runs_longest_first_and_runs_nothing() {
    let d = temp_dir("spread-plan");
    let out = finegrain(&["reproduce", "pdq-dsm-paper", "--plan", d.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("pdq-dsm: 287 runs (full), planned "));
    let plan: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("plan.json")).unwrap()).unwrap();
    let runs = plan["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 287);
    let costs: Vec<f64> = runs.iter().map(|r| r["planned_seconds"].as_f64().unwrap()).collect();
    assert!(costs.windows(2).all(|w| w[0] >= w[1]), "longest first");
    assert!(runs[0]["id"].as_str().unwrap().starts_with("cholesky-mult-"), "{}", runs[0]["id"]);
    assert!(runs[0]["config"]["machine"].is_object() && runs[0]["workload"].is_object());
    assert!(!d.join("runs").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bad_shard_is_one_line() {
    for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
        assert_one_line_error(
            &["reproduce", STUDY, "--quick", "--shard", bad, "--out", "/tmp/finegrain-never"],
            &[&format!("invalid --shard {bad}: allowed I/N, share I of N with 1 <= I <= N")],
        );
    }
}
