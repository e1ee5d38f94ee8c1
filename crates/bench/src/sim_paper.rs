//! `finegrain bench sim --paper`: the simulator's wall time on runs at the
//! papers' inputs, this build beside another (`--against`, an older
//! build), each run by both in turn, with their records compared.
//!
//! Both builds run each run as a `finegrain run ... --json` child process,
//! so both are timed alike (start-up and input generation included), and
//! the records they write must agree in everything but the wall-clock
//! figures: a speed-up that changed a result is reported as one. On a
//! shared machine only the ratio of times measured in turn means much.

use anyhow::{bail, Context, Result};
use finegrain_apps::dsm::spec::{room_for, PAPER_SEGMENT_BYTES};
use finegrain_apps::splitc::spec::Size;
use finegrain_core::MachineConfig;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One run of the set: its name, its workload and its `finegrain run`
/// arguments; DSM runs get the paper-input preset (`--preset`) first.
struct PaperRun {
    name: &'static str,
    workload: &'static str,
    args: &'static [&'static str],
    dsm: bool,
}

macro_rules! dsm {
    ($name:literal, $program:literal, $system:literal) => {
        PaperRun {
            name: $name,
            workload: "dsm",
            args: &[
                "--program",
                $program,
                "--system",
                $system,
                "--size",
                "paper",
                "--nodes",
                "8",
                "--compute-procs",
                "8",
                "--seed",
                "1999",
            ],
            dsm: true,
        }
    };
}

/// The runs `--paper` knows: the pdq-dsm study's paper inputs on 8x8
/// (64-byte blocks), the applications under Hurricane 1pp and the
/// longest-running one (cholesky) and fft under the other kinds of
/// protocol processor, and the scheduling-micro study's longest run.
const RUNS: &[PaperRun] = &[
    dsm!("em3d", "em3d", "hurricane-1pp"),
    dsm!("fft", "fft", "hurricane-1pp"),
    dsm!("barnes", "barnes", "hurricane-1pp"),
    dsm!("radix", "radix", "hurricane-1pp"),
    dsm!("fmm", "fmm", "hurricane-1pp"),
    dsm!("water-sp", "water-sp", "hurricane-1pp"),
    dsm!("cholesky", "cholesky", "hurricane-1pp"),
    dsm!("fft-smp", "fft", "hurricane1-1pp"),
    dsm!("fft-s-coma", "fft", "s-coma"),
    dsm!("fft-mult", "fft", "mult"),
    dsm!("cholesky-smp", "cholesky", "hurricane1-4pp"),
    dsm!("cholesky-s-coma", "cholesky", "s-coma"),
    dsm!("cholesky-mult", "cholesky", "mult"),
    // The scheduling-micro study's longest run: fetch-block under
    // Floating on 6-processor nodes at U = 0.95, Oint 5000 (its full
    // grid's 16000 requests per node).
    PaperRun {
        name: "sched-micro",
        workload: "micro",
        args: &[
            "--preset",
            "hpca97",
            "--policy",
            "floating",
            "--procs-per-node",
            "6",
            "--protocol",
            "fetch",
            "--u",
            "0.95",
            "--oint",
            "5000",
            "--requests-per-node",
            "16000",
            "--seed",
            "1997",
        ],
        dsm: false,
    },
];

/// The runs measured when none are named: the four the speed issue
/// measured first, radix, and the longest.
pub const DEFAULT_RUNS: &[&str] = &["em3d", "fft", "barnes", "radix", "cholesky"];

/// Every run's name, for messages.
pub fn run_names() -> String {
    RUNS.iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
}

#[derive(Debug, Serialize)]
pub struct PaperRow {
    pub run: String,
    /// The `finegrain run` arguments that regenerate it.
    pub args: String,
    pub rounds: u32,
    pub events: u64,
    pub messages: u64,
    pub median_seconds: f64,
    /// The other build's median, and its over this one's (above 1: this
    /// build is faster).
    pub against_median_seconds: Option<f64>,
    pub speedup: Option<f64>,
    /// Whether the two builds' records agree but for wall-clock figures.
    pub same_records: Option<bool>,
}

/// Times the runs `which` (names from [`run_names`]; empty: the default
/// set) `rounds` times with this build and, in turn, with `against`.
pub fn paper(against: Option<&Path>, rounds: u32, which: &[String]) -> Result<Vec<PaperRow>> {
    if !(1..=100).contains(&rounds) {
        bail!("invalid rounds = {rounds}: allowed 1..=100 for --paper (each run takes seconds to minutes)");
    }
    let runs = chosen(which)?;
    let this = std::env::current_exe().context("finding this finegrain's executable")?;
    if let Some(other) = against {
        if !other.is_file() {
            bail!(
                "invalid --against {}: no such file; allowed the path of another finegrain executable",
                other.display()
            );
        }
    }
    let dir = tempfile::tempdir().context("creating a scratch directory")?;
    let preset = write_preset(dir.path())?;
    let mut rows = Vec::new();
    for run in runs {
        let mut mine = Vec::new();
        let mut theirs = Vec::new();
        let mut same = None;
        let mut record = serde_json::Value::Null;
        for round in 0..rounds {
            let (t, r) = time_run(&this, &preset, run, &dir.path().join(format!("{}-this-{round}.json", run.name)))?;
            mine.push(t);
            record = r;
            if let Some(other) = against {
                let path = dir.path().join(format!("{}-against-{round}.json", run.name));
                let (t, r) = time_run(other, &preset, run, &path)?;
                theirs.push(t);
                same = Some(same.unwrap_or(true) && without_wall(&record) == without_wall(&r));
            }
        }
        let count = |k: &str| record.pointer(&format!("/stats/{k}")).and_then(|v| v.as_u64()).unwrap_or(0);
        let median_seconds = median(mine);
        let against_median_seconds = (!theirs.is_empty()).then(|| median(theirs));
        rows.push(PaperRow {
            run: run.name.to_string(),
            args: match run.dsm {
                true => format!(
                    "run {} --preset hpca99 (+ [memory] global_segment_bytes = {PAPER_SEGMENT_BYTES}) {}",
                    run.workload,
                    run.args.join(" ")
                ),
                false => format!("run {} {}", run.workload, run.args.join(" ")),
            },
            rounds,
            events: count("events"),
            messages: count("messages"),
            median_seconds,
            against_median_seconds,
            speedup: against_median_seconds.map(|a| a / median_seconds),
            same_records: same,
        });
    }
    Ok(rows)
}

fn chosen(which: &[String]) -> Result<Vec<&'static PaperRun>> {
    let names: Vec<&str> =
        if which.is_empty() { DEFAULT_RUNS.to_vec() } else { which.iter().map(String::as_str).collect() };
    names
        .iter()
        .map(|n| {
            RUNS.iter()
                .find(|r| r.name == *n)
                .ok_or_else(|| anyhow::anyhow!("invalid run '{n}' for --paper: allowed {}", run_names()))
        })
        .collect()
}

/// hpca99 with the study's paper-input global segment, as a preset file
/// both builds read.
fn write_preset(dir: &Path) -> Result<PathBuf> {
    let mut machine = MachineConfig::load("hpca99")?;
    room_for(Size::Paper, &mut machine);
    let path = dir.join("hpca99-paper.toml");
    std::fs::write(&path, toml::to_string(&machine)?).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Runs `run` with the executable `exe`, its record to `json`: the wall
/// seconds and the record.
fn time_run(exe: &Path, preset: &Path, run: &PaperRun, json: &Path) -> Result<(f64, serde_json::Value)> {
    let mut cmd = Command::new(exe);
    cmd.arg("run");
    // A build from before workloads were subcommands of run (`--against`)
    // names the workload with a flag.
    if workload_subcommands(exe) {
        cmd.arg(run.workload);
    } else {
        cmd.args(["--workload", run.workload]);
    }
    if run.dsm {
        cmd.arg("--preset").arg(preset);
    }
    let t0 = Instant::now();
    let out = cmd
        .args(run.args)
        .arg("--json")
        .arg(json)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("starting {}", exe.display()))?;
    let seconds = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        bail!("{} failed on run {}: {}", exe.display(), run.name, why.lines().last().unwrap_or("").trim());
    }
    let text = std::fs::read_to_string(json).with_context(|| format!("reading {}", json.display()))?;
    Ok((seconds, serde_json::from_str(&text).with_context(|| format!("reading {}", json.display()))?))
}

/// Whether the finegrain executable `exe` names a run's workload as a
/// subcommand (`run micro`) rather than with `--workload`.
fn workload_subcommands(exe: &Path) -> bool {
    let mut help = Command::new(exe);
    help.args(["run", "micro", "--help"]).stdout(Stdio::null()).stderr(Stdio::null());
    help.status().is_ok_and(|s| s.success())
}

/// A record without its wall-clock figures, the only part two runs of one
/// configuration and seed may differ in, and without the digest that
/// covers them (which a build from before records carried one lacks).
fn without_wall(record: &serde_json::Value) -> serde_json::Value {
    let mut r = record.clone();
    if let Some(o) = r.as_object_mut() {
        o.remove("wall");
        o.remove("digest");
    }
    r
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn paper_table(rows: &[PaperRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<16} {:>14} {:>12} {:>10} {:>10} {:>8} {:>8}",
        "run", "events", "messages", "median s", "against s", "speedup", "records"
    );
    for r in rows {
        let opt = |x: Option<f64>, prec: usize| x.map_or("-".to_string(), |v| format!("{v:.prec$}"));
        let same = match r.same_records {
            Some(true) => "same",
            Some(false) => "DIFFER",
            None => "-",
        };
        let _ = writeln!(
            s,
            "{:<16} {:>14} {:>12} {:>10.2} {:>10} {:>8} {:>8}",
            r.run,
            r.events,
            r.messages,
            r.median_seconds,
            opt(r.against_median_seconds, 2),
            opt(r.speedup, 2),
            same
        );
    }
    s
}
