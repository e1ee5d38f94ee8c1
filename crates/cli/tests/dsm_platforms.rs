//! The PDQ paper's seven shared-memory programs over the fine-grain DSM
//! give their checked answers on every platform: simulated (Hurricane with
//! one embedded protocol processor), on threads of one process, as 2
//! processes over shared memory and as 2 MPI ranks, each node with 2
//! compute threads and a protocol thread (more threads than this
//! machine's cores is fine: these check answers, not speed).

mod common;
mod same_answers;

use common::*;
use finegrain_apps::dsm::spec::PROGRAMS;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A run longer than this fails the test instead of holding the suite (a
/// tiny run takes seconds at most).
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// Runs `finegrain args`, killed past `RUN_LIMIT`: its standard output if
/// it succeeded, otherwise what went wrong.
fn run_within_limit(args: &[&str]) -> Result<String, String> {
    let dir = temp_dir(&format!("dsm-{}", args.join("-").replace(['/', ' '], "_")));
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("binary runs");
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if t0.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&out_path).unwrap();
    let err = std::fs::read_to_string(&err_path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    match status {
        None => Err(format!("ran past {} s: {text}{}", RUN_LIMIT.as_secs(), err.lines().last().unwrap_or(""))),
        Some(s) if !s.success() => Err(format!("{s}: {text}{err}")),
        Some(_) => Ok(text),
    }
}

fn ok_within_limit(args: &[&str]) -> String {
    run_within_limit(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Every program, tiny, on `platform` with 2 nodes of 2 compute threads:
/// the program's own check against its sequential reference passed (a
/// wrong answer fails the run), and the run says what it ran.
fn every_program_checks_its_answer_on(platform: &str, system: &str) {
    let failed: Vec<String> = PROGRAMS
        .iter()
        .filter_map(|&program| {
            let args = [
                "run",
                "dsm",
                "--program",
                program,
                "--size",
                "tiny",
                "--platform",
                platform,
                "--nodes",
                "2",
                "--compute-procs",
                "2",
            ];
            let out = match run_within_limit(&args) {
                Ok(out) => out,
                Err(e) => return Some(format!("{program}: {e}")),
            };
            let head = format!("system {system}  2 nodes x 2 compute procs  block 64 bytes  program {program}  seed 1");
            if !out.contains("answer            checked against the sequential reference") || !out.contains(&head) {
                return Some(format!("{program}: {out}"));
            }
            None
        })
        .collect();
    assert!(failed.is_empty(), "on {platform}: {failed:#?}");
}

#[test]
fn every_program_is_right_simulated() {
    every_program_checks_its_answer_on("sim", "hurricane-1pp");
}

#[test]
fn every_program_is_right_on_threads_of_one_process() {
    every_program_checks_its_answer_on("native", "hurricane1-1pp");
}

#[test]
fn every_program_is_right_on_2_shm_processes() {
    every_program_checks_its_answer_on("shm", "hurricane1-1pp");
}

#[test]
fn every_program_is_right_on_2_mpi_ranks() {
    every_program_checks_its_answer_on("mpi", "hurricane1-1pp");
}

/// What the simulated run prints, and its record reruns.
#[test]
fn a_simulated_run_names_its_machine_and_time_and_writes_a_record() {
    let dir = temp_dir("dsm-record");
    let json = dir.join("run.json");
    let text = ok_within_limit(&[
        "run",
        "dsm",
        "--program",
        "fft",
        "--system",
        "mult",
        "--block-bytes",
        "32",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        text.starts_with("preset hpca99  system mult  2 nodes x 2 compute procs  block 32 bytes  program fft"),
        "{text}"
    );
    let time = same_answers::line(&text, "run time");
    assert!(time.ends_with(" cycles)") && time.contains(" us ("), "{text}");
    assert!(same_answers::line(&text, "phase transpose").contains("on the slowest thread"), "{text}");
    let rerun = ok_within_limit(&["rerun", json.to_str().unwrap()]);
    assert!(rerun.contains("statistics identical to the record"), "{rerun}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_dsm_runs_are_one_line() {
    let dsm = ["run", "dsm"];
    let with = |more: &[&'static str]| [&dsm[..], more].concat();
    assert_one_line_error(&dsm, &["missing program for workload dsm", "allowed barnes, cholesky"]);
    assert_one_line_error(&with(&["--program", "lu"]), &["invalid program = lu", "water-sp"]);
    assert_one_line_error(&with(&["--program", "fft", "--size", "huge"]), &["invalid size = huge", "tiny, quick"]);
    assert_one_line_error(
        &with(&["--program", "fft", "--system", "hurricane-3pp"]),
        &["invalid system = hurricane-3pp", "allowed s-coma", "mult"],
    );
    for platform in ["native", "shm", "mpi"] {
        for system in ["s-coma", "hurricane-2pp"] {
            assert_one_line_error(
                &with(&["--program", "fft", "--platform", platform, "--system", system]),
                &[
                    &format!("invalid system = {system} on platform {platform}"),
                    "allowed hurricane1-1pp, hurricane1-2pp, hurricane1-4pp, mult",
                ],
            );
        }
    }
    assert_one_line_error(
        &with(&["--program", "fft", "--block-bytes", "48"]),
        &["invalid block_bytes = 48", "32, 64, 128"],
    );
    assert_one_line_error(
        &with(&["--program", "fft", "--compute-procs", "0"]),
        &["invalid compute_procs = 0", "1..=63"],
    );
    assert_one_line_error(&with(&["--program", "fft", "--preset", "hpca97"]), &["invalid preset = hpca97", "[dsm]"]);
    // Another workload's flag is not one of this subcommand's: the error
    // names the flags it takes.
    assert_one_line_error(
        &with(&["--program", "fft", "--policy", "fixed"]),
        &["unexpected argument '--policy' for `finegrain run dsm`: allowed", "--system", "--block-bytes"],
    );
    assert_one_line_error(
        &with(&["--program", "fft", "--keys", "8"]),
        &["unexpected argument '--keys' for `finegrain run dsm`", "--compute-procs"],
    );
    assert_one_line_error(
        &["run", "micro", "--system", "mult"],
        &["unexpected argument '--system' for `finegrain run micro`", "--relinquish"],
    );
    assert_one_line_error(
        &["run", "splitc", "--program", "fft", "--block-bytes", "64"],
        &["unexpected argument '--block-bytes' for `finegrain run splitc`", "--program"],
    );
    // The form before workloads were subcommands says what to write now.
    assert_one_line_error(
        &["run", "--workload", "dsm", "--program", "fft"],
        &["unexpected argument '--workload'", "write `finegrain run dsm ...`"],
    );
    assert_one_line_error(
        &["sweep", "--set", "seed=1,2", "--workload=fetch-add"],
        &["unexpected argument '--workload'", "write `finegrain sweep fetch-add ...`"],
    );
    assert_one_line_error(
        &with(&["--program", "fft", "--platform", "shm", "--json", "x.json"]),
        &["invalid json with workload dsm on platform shm", "simulated runs only"],
    );
}

/// A sweep takes a DSM run as its base, and its records rerun.
#[test]
fn a_sweep_over_a_dsm_run_writes_records_that_rerun() {
    let dir = temp_dir("dsm-sweep");
    let out = dir.to_str().unwrap();
    let base = ["sweep", "--set", "workload.dsm.block_bytes=32,128", "dsm", "--program", "fft"];
    let text = ok_within_limit(&[&base[..], &["--out", out]].concat());
    assert!(text.contains("| 32 |") && text.contains("| 128 |"), "{text}");
    let record = dir.join("runs/block_bytes32-r0.json");
    let rerun = ok_within_limit(&["rerun", record.to_str().unwrap()]);
    assert!(rerun.contains("statistics identical to the record"), "{rerun}");
    let _ = std::fs::remove_dir_all(&dir);
}
