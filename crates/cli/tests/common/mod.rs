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

/// The verdicts a report shows (`**claim 1: not supported** (1 of 3
/// fail)` over a table of its checks): each line with its table's rows.
#[allow(dead_code)]
pub fn shown_verdicts(report: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut open = false;
    for line in report.lines() {
        if line.starts_with("**") && line.contains("** (") {
            out.push((line.to_string(), Vec::new()));
            open = true;
        } else if open && line.starts_with("| ") && !line.starts_with("| check |") {
            out.last_mut().expect("a verdict line").1.push(line.to_string());
        } else if open && !line.is_empty() && !line.starts_with('|') {
            open = false;
        }
    }
    out
}

/// The verdict named `name` (`claim 1`, `with affinity, hypothesis H1`)
/// in `report`: its line and rows.
#[allow(dead_code)]
pub fn shown_verdict(report: &str, name: &str) -> (String, Vec<String>) {
    shown_verdicts(report)
        .into_iter()
        .find(|(line, _)| line.starts_with(&format!("**{name}: ")))
        .unwrap_or_else(|| panic!("no verdict of {name} in {report}"))
}

/// How many rows of a verdict's table fail.
#[allow(dead_code)]
pub fn failing_rows(rows: &[String]) -> usize {
    rows.iter().filter(|r| r.starts_with("| fails |")).count()
}
