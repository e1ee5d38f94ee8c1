//! What every test of the binary shares: running it, a scratch directory,
//! and the check that a refusal is one line.

#![allow(dead_code)] // each test file uses some of these

use std::path::PathBuf;
use std::process::{Command, Output};

pub fn finegrain(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_finegrain")).args(args).output().expect("binary runs")
}

pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("finegrain-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The command fails with exit code 2 and exactly one line on stderr that
/// contains every `needle`.
pub fn assert_one_line_error(args: &[&str], needles: &[&str]) {
    let out = finegrain(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?} printed more than one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{err}' lacks '{n}'");
    }
}
