//! Nodes as MPI ranks (`--platform mpi`, under Open MPI's mpirun): the
//! same programs give the same answers as on threads of one process, with
//! 2 and 4 ranks (more ranks than this machine's cores is fine: these
//! check answers, not speed).

mod common;
mod same_answers;

use common::*;
use same_answers::*;

/// The microbenchmark's counts under each policy, as on threads.
#[test]
fn microbenchmark_counts_match_native_with_2_and_4_ranks() {
    microbenchmark_counts_match_native("mpi");
}

/// fetch&add answers (PDQ serving the home), as on threads.
#[test]
fn fetch_add_answers_match_native_with_2_and_4_ranks() {
    fetch_add_answers_match_native("mpi");
}

/// Under mpirun directly, as on a cluster.
#[test]
fn mpirun_runs_one_rank_per_node() {
    let out = mpirun(&[
        "-np",
        "4",
        "--oversubscribe",
        env!("CARGO_BIN_EXE_finegrain"),
        "run",
        "micro",
        "--platform",
        "mpi",
        "--nodes",
        "4",
        "--requests-per-node",
        "500",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(line(&text, "requests").starts_with("requests         2000  messages 4000"), "{text}");
}

fn mpirun(args: &[&str]) -> std::process::Output {
    std::process::Command::new("mpirun")
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun runs (Open MPI is installed)")
}

#[test]
fn a_wrong_rank_count_or_no_mpirun_is_one_line() {
    let out = mpirun(&[
        "-np",
        "3",
        "--oversubscribe",
        env!("CARGO_BIN_EXE_finegrain"),
        "run",
        "micro",
        "--platform",
        "mpi",
        "--nodes",
        "2",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    let want = "error: could not start the runtime: MPI started 3 ranks but the configuration has 2 nodes: run with mpirun -np 2";
    // Ranks' lines may interleave, and mpirun stops the others once one
    // has failed: at least one says it whole.
    assert!(err.lines().any(|l| l.ends_with(&want[7..])), "{err}");
    // Without mpirun on the PATH.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args(["run", "micro", "--platform", "mpi", "--nodes", "2"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("error: mpirun not found on PATH"), "{err}");
    assert_one_line_error(
        &["run", "micro", "--platform", "mpi", "--nodes", "2", "--u", "0.5"],
        &["invalid u with platform mpi"],
    );
}

/// The benchmark prints the comparison with raw MPI (whatever the figures:
/// speed is judged from its table, not by a test).
#[test]
fn bench_pingpong_on_mpi_prints_its_comparison() {
    let text = ok(&["bench", "pingpong", "--platform", "mpi", "--quick"]);
    assert!(text.contains("fg mpi  in-process"), "{text}");
    assert!(line(&text, "target 8 B: finegrain over MPI <= 1.15 x raw MPI: ").contains('('), "{text}");
}

#[test]
fn bench_rate_on_mpi_prints_its_comparison() {
    let text = ok(&["bench", "rate", "--platform", "mpi", "--quick"]);
    assert!(line(&text, "  finegrain mpi: ").contains("in-process rings: "), "{text}");
}
