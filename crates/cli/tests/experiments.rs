//! Experiment files for `finegrain reproduce`: bad values get one clear
//! line naming the field before any run starts, every accepted file decides
//! the claims, and an output directory holds only the study it was last
//! used for.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Longest a command may take here: validation errors come back at once,
/// the smallest grids run in seconds. A command past it is killed (a run
/// that does not end fails the test instead of hanging it).
const TIME_LIMIT: Duration = Duration::from_secs(120);

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

/// Runs `finegrain args`, its output in files under `dir`.
fn finegrain(dir: &Path, args: &[&str]) -> Outcome {
    let (out_path, err_path) = (dir.join("stdout.txt"), dir.join("stderr.txt"));
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args(args)
        .stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
        .spawn()
        .expect("binary runs");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("finegrain {args:?} still runs after {TIME_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        code: status.code(),
        stdout: std::fs::read_to_string(out_path).unwrap(),
        stderr: std::fs::read_to_string(err_path).unwrap(),
        elapsed: started.elapsed(),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("finegrain-experiments-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The smallest `[quick]` grids that decide every claim.
const SCHEDULING_QUICK: &str = r#"
protocols = ["null", "fetch"]
procs_per_node = [1, 2, 3, 4]
target_u = [0.1, 0.3, 0.5, 0.7, 0.9]
oint_cycles = [200, 20000]
requests_per_node = 40
cost_performance_u = [0.3, 0.7]
replicates = 2
"#;
const PDQ_QUICK: &str = r#"
protocol_procs = [1, 2, 4]
keys = [1, 8]
kinds = ["embedded", "smp"]
disciplines = ["serial", "pdq", "spin-lock", "static"]
requests_per_thread = 20
mult_home_u = [0.9, 0.1]
mult_sweep_procs = 4
mult_think_cycles = 2000
sequential_fractions = [0.0]
load_think_cycles = 2000
"#;

/// Writes a shipped experiment with the smallest `[quick]` grid and `edits`
/// applied to `dir/<name>.toml`: each edit is a key (`quick.keys`,
/// `zipf_exponent`) and a TOML value.
fn experiment(dir: &Path, study: &str, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../experiments/{study}.toml"));
    let mut table: toml::Table = std::fs::read_to_string(shipped).unwrap().parse().unwrap();
    let quick = if study == "pdq-micro" { PDQ_QUICK } else { SCHEDULING_QUICK };
    table.insert("quick".into(), toml::Value::Table(quick.parse().unwrap()));
    for (key, value) in edits {
        let value = format!("v = {value}").parse::<toml::Table>().unwrap().remove("v").unwrap();
        match key.split_once('.') {
            Some((t, k)) => table[t].as_table_mut().unwrap().insert(k.into(), value),
            None => table.insert(key.to_string(), value),
        };
    }
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, toml::to_string(&table).unwrap()).unwrap();
    path
}

/// `reproduce --quick` of the experiment with `edits` fails at once with
/// exit code 2 and one line on stderr containing every `needle`.
fn assert_rejected(study: &str, edits: &[(&str, &str)], needles: &[&str]) {
    static CASE: AtomicUsize = AtomicUsize::new(0);
    let d = temp_dir(&format!("{study}-{}", CASE.fetch_add(1, Ordering::Relaxed)));
    let file = experiment(&d, study, "variant", edits);
    let out = d.join("out");
    let o = finegrain(&d, &["reproduce", file.to_str().unwrap(), "--quick", "--out", out.to_str().unwrap()]);
    let err = o.stderr.trim_end();
    assert_eq!(o.code, Some(2), "{edits:?} was accepted: {}{err}", o.stdout);
    assert_eq!(err.lines().count(), 1, "{edits:?} printed more than one line: {err}");
    assert!(err.starts_with("error: invalid "), "{edits:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{edits:?}: '{err}' lacks '{n}'");
    }
    assert!(!out.exists(), "{edits:?}: output written for a rejected experiment");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_value_listed_twice_in_any_list_field_is_rejected() {
    let scheduling = [
        ("quick.protocols", r#"["null", "fetch", "null"]"#, "null"),
        ("quick.procs_per_node", "[1, 2, 2, 3, 4]", "2"),
        ("quick.target_u", "[0.1, 0.3, 0.5, 0.7, 0.9, 0.5]", "0.50"),
        // Run ids name U to two decimals: these two would share records.
        ("quick.target_u", "[0.1, 0.3, 0.5, 0.501, 0.7, 0.9]", "0.50"),
        ("quick.oint_cycles", "[200, 2000, 200]", "200"),
        ("quick.cost_performance_u", "[0.5, 0.5]", "0.50"),
        ("quick.sensitivity", r#"["migration", "migration"]"#, "migration"),
        ("full.procs_per_node", "[1, 2, 3, 4, 4]", "4"),
    ];
    for (field, value, dup) in scheduling {
        let name = field.trim_start_matches("quick.").trim_start_matches("full.");
        assert_rejected(
            "scheduling-micro",
            &[(field, value)],
            &[&format!("invalid {field} = ["), &format!(": {dup} is listed more than once"), "distinct", name],
        );
    }
    let pdq = [
        ("quick.protocol_procs", "[1, 2, 4, 4]", "4"),
        ("quick.keys", "[1, 8, 8]", "8"),
        ("quick.kinds", r#"["embedded", "smp", "smp"]"#, "smp"),
        ("quick.disciplines", r#"["serial", "pdq", "spin-lock", "static", "pdq"]"#, "pdq"),
        ("quick.mult_home_u", "[0.9, 0.1, 0.1]", "0.10"),
        ("quick.sequential_fractions", "[0.0, 0.05, 0.05]", "0.050"),
        ("quick.sensitivity", r#"["cache_interference", "cache_interference"]"#, "cache_interference"),
        ("full.kinds", r#"["embedded", "smp", "mult", "mult"]"#, "mult"),
    ];
    for (field, value, dup) in pdq {
        assert_rejected(
            "pdq-micro",
            &[(field, value)],
            &[&format!("invalid {field} = ["), &format!(": {dup} is listed")],
        );
    }
}

#[test]
fn an_experiment_that_cannot_decide_the_claims_is_rejected() {
    for (field, value, needles) in [
        ("quick.protocols", r#"["null"]"#, &["quick.protocols = [null]", "must contain null and fetch"][..]),
        ("quick.protocols", r#"["fetch"]"#, &["must contain null and fetch"][..]),
        ("quick.cost_performance_u", "[]", &["quick.cost_performance_u = []", "non-empty"][..]),
        ("quick.procs_per_node", "[1, 2, 4]", &["quick.procs_per_node = [1, 2, 4]", "two larger counts"][..]),
        ("quick.target_u", "[0.1, 0.2, 0.3]", &["quick.target_u = [0.1, 0.2, 0.3]", "one >= 0.5"][..]),
        ("quick.target_u", "[0.8, 0.9, 0.95]", &["quick.target_u", "one <= 0.7"][..]),
        ("quick.oint_cycles", "[200]", &["quick.oint_cycles = [200]", "at least two values"][..]),
        ("quick.oint_cycles", "[200, 2000]", &["quick.oint_cycles = [200, 2000]", "claim 3 needs an Oint"][..]),
    ] {
        assert_rejected("scheduling-micro", &[(field, value)], needles);
    }
    for (field, value, needles) in [
        ("quick.kinds", r#"["smp", "mult"]"#, &["quick.kinds = [smp, mult]", "must contain embedded and smp"][..]),
        ("quick.kinds", r#"["embedded", "mult"]"#, &["quick.kinds", "must contain embedded and smp"][..]),
        ("quick.kinds", "[]", &["quick.kinds = []", "must contain embedded and smp"][..]),
        (
            "quick.disciplines",
            r#"["serial"]"#,
            &["quick.disciplines = [serial]", "must contain serial, pdq, spin-lock and static"][..],
        ),
        ("quick.keys", "[1, 4]", &["quick.keys = [1, 4]", "a count above 4"][..]),
        ("quick.keys", "[0, 1, 8]", &["quick.keys = 0", "allowed 1..="][..]),
        ("quick.mult_home_u", "[0.5]", &["quick.mult_home_u = [0.5]", "at least 2 values"][..]),
    ] {
        assert_rejected("pdq-micro", &[(field, value)], needles);
    }
}

#[test]
fn huge_cycle_and_request_counts_are_rejected() {
    for (field, value, needles) in [
        (
            "quick.oint_cycles",
            "[200, 9223372036854775807]",
            &["quick.oint_cycles = 9223372036854775807", "allowed 0..=1000000000"][..],
        ),
        ("quick.requests_per_node", "1000000001", &["quick.requests_per_node = 1000000001", "1..=1000000000"][..]),
        ("quick.replicates", "4000000000", &["quick.replicates = 4000000000", "allowed 1..="][..]),
        ("nodes", "100000", &["nodes = 100000", "allowed 2..=4096"][..]),
        // Known once Lmin is measured, still before any run.
        (
            "quick.target_u",
            "[0.1, 0.3, 0.5, 0.7, 0.9, 0.9999999]",
            &["quick.target_u = 0.9999999", "mean compute time", "allowed at most 1000000000"][..],
        ),
    ] {
        assert_rejected("scheduling-micro", &[(field, value)], needles);
    }
    for (field, value, needles) in [
        ("handler_cycles", "9223372036854775807", &["handler_cycles = 9223372036854775807", "0..=1000000000"][..]),
        ("home_burst_cycles", "1e300", &["home_burst_cycles = 1e300", "1..=1000000000"][..]),
        ("quick.mult_think_cycles", "1e300", &["quick.mult_think_cycles = 1e300", "0..=1000000000"][..]),
        ("quick.load_think_cycles", "0", &["quick.load_think_cycles = 0", "a positive number up to"][..]),
        ("quick.load_think_cycles", "1e300", &["quick.load_think_cycles = 1e300", "a positive number up to"][..]),
        ("quick.requests_per_thread", "1000000001", &["quick.requests_per_thread = 1000000001", "1..=1000000000"][..]),
        ("requester_nodes", "100000", &["requester_nodes = 100000", "allowed 1..=4095"][..]),
        // The skew's exponent names run records: no 300-digit file names.
        ("zipf_exponent", "1e300", &["zipf_exponent = 1e300", "allowed 0.01..=100"][..]),
        ("zipf_exponent", "1e-300", &["zipf_exponent = 1e-300", "allowed 0.01..=100"][..]),
    ] {
        assert_rejected("pdq-micro", &[(field, value)], needles);
    }
}

#[test]
fn an_output_directory_that_cannot_be_made_fails_before_any_run() {
    let d = temp_dir("bad-out");
    let file = d.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let mut outs = vec![file.join("out")];
    if Path::new("/proc/self").exists() {
        outs.push(PathBuf::from(format!("/proc/finegrain-{}", std::process::id())));
    }
    for out in outs {
        // The shipped quick study: its runs take many seconds.
        let o = finegrain(&d, &["reproduce", "scheduling-micro", "--quick", "--out", out.to_str().unwrap()]);
        let err = o.stderr.trim_end();
        assert_eq!(o.code, Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: cannot create output directory "), "{err}");
        assert!(err.contains(out.to_str().unwrap()), "{err}");
        assert!(o.elapsed < Duration::from_secs(5), "failed only after {:?}: {err}", o.elapsed);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Record files in `runs/`.
fn records(out: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

/// The runs results.csv lists, as record file names.
fn csv_records(out: &Path) -> Vec<String> {
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "record").expect("a record column");
    let mut names: Vec<String> =
        csv.lines().skip(1).map(|l| l.split(',').nth(col).unwrap().trim_start_matches("runs/").to_string()).collect();
    names.sort();
    names
}

#[test]
fn claim_4s_reruns_run_once_each() {
    let d = temp_dir("claim4-reruns");
    let out = d.join("out");
    // Claim 4 is judged at the cost-performance U of 0.3 and 0.7, which are
    // also main-grid U values: the reruns must not repeat a record.
    let edits = [("quick.arbitration_sensitivity", "[\"lowest\"]")];
    let file = experiment(&d, "scheduling-micro", "claim4", &edits);
    let o = finegrain(&d, &["reproduce", file.to_str().unwrap(), "--quick", "--out", out.to_str().unwrap()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let rows = csv_records(&out);
    let mut distinct = rows.clone();
    distinct.dedup();
    assert_eq!(rows, distinct, "every run of results.csv once");
    assert_eq!(records(&out), rows, "runs/ holds exactly the records of results.csv");
    assert!(rows.iter().any(|r| r.starts_with("arbitration-lowest-")), "claim 4's reruns ran");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_reused_output_directory_holds_only_the_last_studys_records() {
    let d = temp_dir("reuse");
    let out = d.join("out");
    std::fs::create_dir_all(out.join("runs")).unwrap();
    std::fs::write(out.join("runs").join("stale-run.json"), "{}").unwrap();
    std::fs::write(out.join("runs").join("notes.txt"), "mine").unwrap();
    std::fs::write(out.join("keep.json"), "{}").unwrap();
    std::fs::create_dir_all(out.join("figures")).unwrap();
    std::fs::write(out.join("figures").join("notes.txt"), "mine").unwrap();
    for study in ["scheduling-micro", "pdq-micro"] {
        let file = experiment(&d, study, study, &[]);
        let o = finegrain(&d, &["reproduce", file.to_str().unwrap(), "--quick", "--out", out.to_str().unwrap()]);
        assert_eq!(o.code, Some(0), "{study}: {}", o.stderr);
        assert_eq!(records(&out), csv_records(&out), "{study}: runs/ holds exactly the records of results.csv");
        // Every accepted experiment decides each claim of the paper (five
        // of the scheduling paper, three of the PDQ paper) and each
        // hypothesis of finegrain's own (two for PDQ).
        // The rows of the terminal's verdict table, under its header.
        let is_row = |l: &&str| {
            (l.starts_with("claim ") || l.starts_with("hypothesis H")) && l.split_whitespace().nth(1) != Some("verdict")
        };
        let verdicts: Vec<&str> = o.stdout.lines().filter(is_row).collect();
        assert_eq!(verdicts.len(), 5, "{study}: {}", o.stdout);
        for line in verdicts {
            assert!(line.contains("  supported  ") || line.contains("  not supported  "), "{study}: {line}");
        }
    }
    assert!(records(&out).iter().all(|r| !r.starts_with("null-") && !r.starts_with("fetch-")), "scheduling runs left");
    assert_eq!(std::fs::read_to_string(out.join("runs").join("notes.txt")).unwrap(), "mine");
    assert!(out.join("keep.json").exists(), "a file outside runs/ was removed");
    let figures: Vec<String> = std::fs::read_dir(out.join("figures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(figures.iter().all(|f| !f.starts_with("fig3-")), "the scheduling study's figures were left: {figures:?}");
    assert!(figures.iter().any(|f| f == "notes.txt"), "a file that is not a figure was removed: {figures:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// hpca99 with one setting changed, written as `name` into `d`: the path,
/// quoted as an experiment file's `preset` value.
fn hpca99_with(d: &Path, name: &str, from: &str, to: &str) -> String {
    preset_with(d, "hpca99", name, from, to)
}

/// A shipped preset with one setting changed, written as `name` into `d`:
/// the path, quoted as an experiment file's `preset` value.
fn preset_with(d: &Path, shipped: &str, name: &str, from: &str, to: &str) -> String {
    let shipped_path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../presets/{shipped}.toml"));
    let text = std::fs::read_to_string(shipped_path).unwrap();
    assert!(text.contains(from), "{shipped} has no {from}");
    let preset = d.join(name);
    std::fs::write(&preset, text.replace(from, to)).unwrap();
    format!("{:?}", preset.display().to_string())
}

/// A sensitivity run switches a mechanism off: one the preset has off
/// already would repeat the study's own runs under another name.
#[test]
fn a_sensitivity_run_of_a_mechanism_the_preset_has_off_is_rejected() {
    let d = temp_dir("no-migration-preset");
    let preset = hpca99_with(&d, "hpca99-no-migration.toml", "migration = true", "migration = false");
    assert_rejected(
        "pdq-micro",
        &[("preset", &preset), ("full.sensitivity", r#"["split_bus"]"#), ("quick.sensitivity", r#"["migration"]"#)],
        &[
            "quick.sensitivity = [migration]: migration is already off in preset ",
            "hpca99-no-migration.toml; allowed the mechanisms it has on (cache_interference, data_placement, split_bus)",
        ],
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The scheduling study's reruns without a mechanism of the paper's
/// Section 5 need the preset to have it on; a mechanism named twice would
/// give two runs one id.
#[test]
fn a_mechanism_rerun_the_preset_cannot_make_is_rejected() {
    let d = temp_dir("no-thread-preset");
    let preset =
        preset_with(&d, "hpca97", "hpca97-no-thread.toml", "protocol_thread = true", "protocol_thread = false");
    assert_rejected(
        "scheduling-micro",
        &[("preset", &preset)],
        &["invalid full.mechanism_sensitivity = [protocol_thread]: protocol_thread is already off in the preset; \
             allowed the mechanisms it has on (requests_via_pp)"],
    );
    assert_rejected(
        "scheduling-micro",
        &[("quick.mechanism_sensitivity", r#"["requests_via_pp", "requests_via_pp"]"#)],
        &["quick.mechanism_sensitivity", "requests_via_pp"],
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The context-switch map reruns the grid at other switch costs: the
/// preset's own would repeat the study's runs under another name, a
/// preset without the protocol thread pays no switch, and a context of
/// no bytes is the protocol thread switched off (another rerun's job).
#[test]
fn a_switch_cost_rerun_the_preset_cannot_make_is_rejected() {
    assert_rejected(
        "scheduling-micro",
        &[("quick.switch_sensitivity", "[{ cycles = 256, bytes = 512 }]")],
        &["invalid quick.switch_sensitivity = [256/512]: 256/512 is the preset's own cost; allowed other"],
    );
    assert_rejected(
        "scheduling-micro",
        &[("quick.switch_sensitivity", "[{ cycles = 32, bytes = 0 }]")],
        &["invalid quick.switch_sensitivity = { cycles = 32, bytes = 0 }: allowed bytes 1..=65536"],
    );
    assert_rejected(
        "scheduling-micro",
        &[("quick.switch_sensitivity", "[{ cycles = 32, bytes = 64 }, { cycles = 32, bytes = 64 }]")],
        &["quick.switch_sensitivity", "32/64"],
    );
    let d = temp_dir("no-thread-switch-preset");
    let preset =
        preset_with(&d, "hpca97", "hpca97-no-thread.toml", "protocol_thread = true", "protocol_thread = false");
    assert_rejected(
        "scheduling-micro",
        &[
            ("preset", &preset),
            ("full.mechanism_sensitivity", "[]"),
            ("quick.mechanism_sensitivity", "[]"),
            ("quick.switch_sensitivity", "[{ cycles = 32, bytes = 64 }]"),
        ],
        &["invalid quick.switch_sensitivity = [32/64]: the preset has protocol_thread = false"],
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Affinity reruns switch the device's key affinity on: a preset that has
/// it on already would repeat the main runs under another name.
#[test]
fn affinity_reruns_on_a_preset_with_affinity_are_rejected() {
    let d = temp_dir("affinity-preset");
    let preset = hpca99_with(&d, "hpca99-affinity.toml", "affinity_passes = 0", "affinity_passes = 4");
    assert_rejected(
        "pdq-micro",
        &[("preset", &preset)],
        &[
            "invalid full.affinity_passes = 16: preset ",
            "hpca99-affinity.toml has key affinity on already (pdq.affinity_passes > 0)",
        ],
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The grid that runs is planned and every run of it checked before any
/// runs (the other grid's fields are checked, its runs not planned).
#[test]
fn a_grids_affinity_beyond_the_device_is_rejected_before_any_run() {
    assert_rejected(
        "pdq-micro",
        &[("quick.affinity_passes", "2000000")],
        &[
            "invalid experiment (quick run ",
            "-affinity): invalid pdq.affinity_passes = 2000000: allowed at most 1048576",
        ],
    );
}
