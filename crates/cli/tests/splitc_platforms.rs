//! The co-processor paper's Split-C programs give their checked answers
//! with their nodes as 4 processes over shared memory and as 4 MPI ranks,
//! under the main-processor library and the co-processor's progress
//! thread (more processes than this machine's cores is fine: these check
//! answers, not speed).

mod common;
mod same_answers;

use finegrain_apps::splitc::spec::PROGRAMS;
use same_answers::ok;

/// Every program on `platform` with 4 nodes: the program's own check
/// against its sequential reference passed (a wrong answer fails the run).
fn every_program_checks_its_answer_on(platform: &str, policy: &str) {
    for &program in PROGRAMS {
        let args = [
            "run",
            "splitc",
            "--program",
            program,
            "--size",
            "tiny",
            "--platform",
            platform,
            "--nodes",
            "4",
            "--policy",
            policy,
        ];
        let out = ok(&args);
        assert!(out.contains("answer            checked against the sequential reference"), "{program}: {out}");
    }
}

#[test]
fn every_program_is_right_on_4_shm_processes() {
    every_program_checks_its_answer_on("shm", "coprocessor:main-am");
    every_program_checks_its_answer_on("shm", "coprocessor:optimized");
}

#[test]
fn every_program_is_right_on_4_mpi_ranks() {
    every_program_checks_its_answer_on("mpi", "coprocessor:main-am");
    every_program_checks_its_answer_on("mpi", "coprocessor:optimized");
}
