//! Bad input gets one clear line naming what is wrong and what is allowed,
//! before anything runs; a config file and flags combine as documented.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

#[test]
fn unknown_preset() {
    assert_one_line_error(&["run", "micro", "--preset", "cray"], &["unknown preset 'cray'", "allowed hpca97"]);
}

#[test]
fn zero_processors() {
    assert_one_line_error(
        &["run", "micro", "--policy", "floating", "--procs-per-node", "0"],
        &["procs_per_node = 0", "allowed 1..=64"],
    );
}

#[test]
fn fixed_without_a_compute_processor() {
    assert_one_line_error(
        &["run", "micro", "--policy", "fixed", "--procs-per-node", "1"],
        &["protocol_procs = 1", "leaves no compute processor", "needs procs_per_node >= 2"],
    );
}

#[test]
fn utilization_outside_the_open_interval() {
    for u in ["0", "1", "1.5", "-0.2"] {
        assert_one_line_error(&["run", "micro", "--u", u], &["invalid u = ", "strictly between 0 and 1"]);
    }
}

#[test]
fn unknown_policy_and_protocol() {
    assert_one_line_error(
        &["run", "micro", "--policy", "lottery"],
        &["invalid policy = lottery", "single, fixed, fixed:K"],
    );
    assert_one_line_error(&["run", "micro", "--protocol", "bulk"], &["invalid protocol = bulk", "allowed null, fetch"]);
}

#[test]
fn malformed_toml() {
    let d = temp_dir("toml");
    let f = d.join("run.toml");
    std::fs::write(&f, "policy = \"fixed\"\nprocs_per_node = [\n").unwrap();
    assert_one_line_error(&["run", "micro", "--config", f.to_str().unwrap()], &["malformed TOML", "run.toml", "line"]);
    std::fs::write(&f, "policy = \"fixed\"\nprocessors = 4\n").unwrap();
    assert_one_line_error(&["run", "micro", "--config", f.to_str().unwrap()], &["unknown field `processors`"]);
    let p = d.join("preset.toml");
    std::fs::write(&p, "name = \"x\"\n[cache\n").unwrap();
    assert_one_line_error(&["calibrate", p.to_str().unwrap()], &["malformed TOML", "preset.toml", "line 2"]);
}

#[test]
fn unknown_experiment() {
    assert_one_line_error(&["reproduce", "nope"], &["unknown experiment 'nope'", "allowed scheduling-micro"]);
}

#[test]
fn a_reuse_directory_without_records_is_refused_before_any_run() {
    let d = temp_dir("reuse-nothing");
    assert_one_line_error(
        &[
            "reproduce",
            "pdq-micro",
            "--quick",
            "--out",
            d.join("out").to_str().unwrap(),
            "--reuse",
            d.to_str().unwrap(),
        ],
        &["invalid --reuse", "has no runs/ directory", "allowed the --out directory of an earlier"],
    );
    assert!(!d.join("out").join("results.csv").exists(), "nothing ran");
}

#[test]
fn missing_subcommands_and_arguments_are_named() {
    assert_one_line_error(&[], &["`finegrain` needs a subcommand", "run, fetch-add, sweep, reproduce"]);
    assert_one_line_error(&["bench"], &["`finegrain bench` needs a subcommand", "pingpong", "sim"]);
    for command in [&["run"][..], &["sweep", "--set", "seed=1,2"]] {
        assert_one_line_error(command, &["needs a subcommand: one of micro, fetch-add, splitc, dsm"]);
    }
    assert_one_line_error(
        &["run", "--policy", "floating"],
        &["unexpected argument '--policy' for `finegrain run`: name one of micro, fetch-add, splitc, dsm first"],
    );
    assert_one_line_error(&["rerun"], &["required arguments were not provided", "<RECORD>"]);
    assert_one_line_error(&["reproduce", "scheduling-micro", "--list"], &["--list takes no experiment name"]);
    assert_one_line_error(&["bench", "sim", "--rounds", "0"], &["invalid rounds = 0"]);
    assert_one_line_error(
        &["bench", "sim", "--rounds", "4294967295"],
        &["invalid rounds = 4294967295", "allowed 1..=1000"],
    );
    assert_one_line_error(&["run", "micro", "--policy", "FIXED"], &["invalid policy = FIXED"]);
    assert_one_line_error(&["run", "micro", "--nodes", "-1"], &["invalid value '-1' for '--nodes <NODES>'"]);
}

#[test]
fn sizes_beyond_what_a_run_can_finish_are_refused() {
    for (args, needle) in [
        (
            vec!["run", "micro", "--requests-per-node", "18446744073709551615"],
            "requests_per_node = 18446744073709551615",
        ),
        (vec!["run", "micro", "--compute-cycles", "1e300"], "mean_compute_cycles = 1e300: allowed 0..=1000000000"),
        (vec!["run", "micro", "--oint", "18446744073709551615"], "invalid oint = 18446744073709551615"),
        (vec!["fetch-add", "--think-cycles", "1e300"], "think_cycles = 1e300"),
        (vec!["fetch-add", "--handler-cycles", "1000000001"], "handler_cycles = 1000000001"),
        (vec!["fetch-add", "--home-burst-cycles", "1e300"], "home_burst_cycles = 1e300"),
        (vec!["fetch-add", "--protocol-procs", "64"], "protocol_procs = 64: allowed 1..=63"),
        (vec!["bench", "sim", "--requests-per-node", "0"], "invalid requests_per_node = 0"),
        (
            vec!["run", "micro", "--nodes", "4096", "--procs-per-node", "64", "--policy", "floating"],
            "invalid topology = 4096 nodes x 64 processors: at most",
        ),
        (
            vec!["run", "micro", "--platform", "native", "--nodes", "4096", "--procs-per-node", "64"],
            "invalid topology = 4096 nodes x 64 threads: a native run starts one thread per processor",
        ),
        (
            vec![
                "run",
                "micro",
                "--platform",
                "native",
                "--nodes",
                "1024",
                "--procs-per-node",
                "1",
                "--policy",
                "single",
            ],
            "rings and segments would need",
        ),
        (
            vec!["run", "micro", "--json", "/nonexistent-dir/run.json"],
            "cannot write the record to /nonexistent-dir/run.json",
        ),
        (vec!["fetch-add", "--json", "/nonexistent-dir/f.json"], "cannot write the record to /nonexistent-dir/f.json"),
    ] {
        assert_one_line_error(&args, &[needle]);
    }
}

#[test]
fn preset_costs_and_sizes_are_bounded() {
    let d = temp_dir("preset-bounds");
    let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets/hpca99.toml")).unwrap();
    for (i, (edits, needle)) in [
        (
            &[("memory_latency = 60", "memory_latency = 4294967295")][..],
            "bus.memory_latency = 4294967295: allowed at most 1000000000 cycles",
        ),
        (
            &[("table_entry_bytes = 8", "table_entry_bytes = 4294967295")][..],
            "protocol.table_entry_bytes = 4294967295: allowed at most cache.size_bytes",
        ),
        // Counts that multiply costs are bounded too.
        (&[("header_words = 2", "header_words = 4294967295")][..], "ni.header_words = 4294967295: allowed at most 64"),
        // A cache whose lines overflow the simulator's memory layout.
        (
            &[("size_bytes = 1048576", "size_bytes = 1073741824"), ("line_bytes = 64", "line_bytes = 8")][..],
            "invalid cache = 1073741824 bytes in 8-byte lines",
        ),
        // A size bounded by the cache's names the cache when it is what
        // is wrong.
        (
            &[("size_bytes = 1048576", "size_bytes = 0")][..],
            "invalid cache.size_bytes = 0: allowed a positive multiple of cache.line_bytes",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut text = base.clone();
        for (from, to) in edits {
            assert!(text.contains(from), "hpca99 has no line {from}");
            text = text.replace(from, to);
        }
        let p = d.join(format!("preset{i}.toml"));
        std::fs::write(&p, text).unwrap();
        // A small machine, so that its caches fit the host whatever their size.
        let small = ["--requester-nodes", "1", "--compute-procs", "1"];
        assert_one_line_error(&[&["fetch-add", "--preset", p.to_str().unwrap()][..], &small].concat(), &[needle]);
    }
    // The fetch-block benchmark refuses a block its reply cannot carry
    // before it runs (the null handler carries none).
    let big = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets/hpca97.toml"))
        .unwrap()
        .replace("block_bytes = 128", "block_bytes = 8192");
    let p = d.join("big-block.toml");
    std::fs::write(&p, big).unwrap();
    let run = ["run", "micro", "--preset", p.to_str().unwrap(), "--requests-per-node", "10", "--protocol"];
    assert_one_line_error(
        &[&run[..], &["fetch"]].concat(),
        &["invalid protocol.block_bytes = 8192: the fetch-block benchmark moves a block in one message"],
    );
    let out = finegrain(&[&run[..], &["null"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cal = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets/hpca97.toml"))
        .unwrap()
        .replace("lmin_null_us = 3.0", "lmin_null_us = -3");
    let p = d.join("calibration.toml");
    std::fs::write(&p, cal).unwrap();
    assert_one_line_error(&["calibrate", p.to_str().unwrap()], &["calibration.lmin_null_us = -3.0"]);
}

#[test]
fn a_preset_named_in_a_config_file_is_found_beside_it() {
    let d = temp_dir("config-preset");
    let preset = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets/hpca97.toml")).unwrap();
    std::fs::write(d.join("mine.toml"), preset).unwrap();
    std::fs::write(d.join("run.toml"), "preset = \"mine.toml\"\nrequests_per_node = 20\n").unwrap();
    // Run from elsewhere: the relative path is the config file's.
    let out = Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args(["run", "micro", "--config", d.join("run.toml").to_str().unwrap()])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn any_input_is_refused_in_one_line() {
    // A signed value clap would take for a short flag (`-i` of `-inf`)
    // reaches the flag's own check.
    assert_one_line_error(
        &["run", "micro", "--u", "-inf"],
        &["invalid u = -inf: allowed a value strictly between 0 and 1"],
    );
    assert_one_line_error(&["fetch-add", "--home-u", "-.5"], &["invalid home_u = -0.5: allowed 0..=1"]);
    // After `--` everything is positional, flags and numbers alike.
    assert_one_line_error(&["calibrate", "--", "--seed", "-5"], &["unexpected argument '-5'"]);
    // A newline typed into a value is echoed back escaped.
    assert_one_line_error(&["run", "micro", "--platform", "native\nx"], &["invalid platform = native\\nx"]);
    // So is a Unicode line separator, which some terminals break lines on.
    assert_one_line_error(&["run", "micro", "--policy", "a\u{2028}b"], &["invalid policy = a\\u{2028}b"]);
    // A huge value loses its middle, keeping what is wrong and what is allowed.
    let huge = format!("fixed:{}", "9".repeat(100_000));
    let out = finegrain(&["run", "micro", "--policy", &huge]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.len() < 1200, "{} bytes of error", err.len());
    assert!(err.starts_with("error: invalid") && err.contains("characters left out"), "{err}");
    assert!(err.trim_end().ends_with("coprocessor:coproc-am, coprocessor:optimized"), "{err}");
    // A device that never ends is not read until memory runs out.
    assert_one_line_error(&["run", "micro", "--config", "/dev/zero"], &["cannot read /dev/zero", "larger than 16 MiB"]);
    // A number that does not parse says what the flag takes and allows.
    assert_one_line_error(
        &["run", "micro", "--nodes=-1"],
        &["invalid value '-1' for '--nodes <NODES>': out of range", "Nodes, 2..=4096"],
    );
    assert_one_line_error(
        &["run", "micro", "--nodes", "x"],
        &["invalid value 'x'", "expected a whole number", "2..=4096"],
    );
    assert_one_line_error(&["bench", "sim", "--rounds", "-1"], &["out of range", "1..=1000"]);
    assert_one_line_error(&["run", "micro", "--nodes", "4294967296"], &["'4294967296'", "out of range", "2..=4096"]);
    // A missing preset key is placed in its table.
    let d = temp_dir("missing-key");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let preset = std::fs::read_to_string(format!("{root}/presets/hpca97.toml")).unwrap();
    let p = d.join("nokind.toml");
    std::fs::write(&p, preset.replace("kind = \"cm5\"\n", "")).unwrap();
    assert_one_line_error(&["calibrate", p.to_str().unwrap()], &["missing field `kind` in [ni]"]);
    // An experiment's name goes into reports and progress lines.
    let exp = std::fs::read_to_string(format!("{root}/experiments/pdq-micro.toml")).unwrap();
    let e = d.join("unnamed.toml");
    std::fs::write(&e, exp.replace("name = \"pdq-micro\"", "name = \"\"")).unwrap();
    assert_one_line_error(&["reproduce", e.to_str().unwrap(), "--quick"], &["invalid name = \"\"", "non-blank"]);
    // The simulated handler's extra cycles have no native meaning.
    assert_one_line_error(
        &["fetch-add", "--platform", "native", "--kind", "smp", "--handler-cycles", "500"],
        &["invalid handler_cycles with platform native", "allowed only with platform sim"],
    );
}

#[test]
fn every_point_of_a_study_is_checked_before_it_runs() {
    let d = temp_dir("mult-home-u");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let exp = std::fs::read_to_string(format!("{root}/experiments/pdq-micro.toml")).unwrap();
    let line = exp.lines().find(|l| l.starts_with("mult_home_u")).expect("a mult_home_u line").to_string();
    let file = d.join("e.toml");
    std::fs::write(&file, exp.replace(&line, "mult_home_u = [0.9, 0.000001]")).unwrap();
    assert_one_line_error(
        &["reproduce", file.to_str().unwrap(), "--quick", "--out", d.join("out").to_str().unwrap()],
        &["mult_home_u", "invalid home_u = 1e-6"],
    );
    // A machine too large for the host is refused before the output
    // directory is made.
    let big = exp
        .replace("requester_nodes = 4\n", "requester_nodes = 4095\n")
        .replace("compute_procs = 8\n", "compute_procs = 32\n");
    assert!(big.contains("requester_nodes = 4095") && big.contains("compute_procs = 32"), "the topology grew");
    std::fs::write(&file, big).unwrap();
    let out = d.join("big-out");
    assert_one_line_error(
        &["reproduce", file.to_str().unwrap(), "--quick", "--out", out.to_str().unwrap()],
        &["invalid topology = 4096 nodes x 33 processors"],
    );
    assert!(!out.exists(), "the refused study made its output directory");
    // So is one in the scheduling study, at once (it used to fail mid-sweep).
    // The guard is three quarters of the host's memory: 4096 nodes of 64
    // processors need about 190 GiB, beyond any host this runs on.
    let sched = std::fs::read_to_string(format!("{root}/experiments/scheduling-micro.toml")).unwrap();
    let big = sched
        .replace("nodes = 2\n", "nodes = 4096\n")
        .replace("procs_per_node = [1, 2, 4, 6, 8]", "procs_per_node = [1, 2, 3, 64]");
    assert!(big.contains("nodes = 4096") && big.contains("[1, 2, 3, 64]"), "the topology grew");
    std::fs::write(&file, big).unwrap();
    assert_one_line_error(
        &["reproduce", file.to_str().unwrap(), "--quick", "--out", out.to_str().unwrap()],
        &["invalid experiment (", "invalid topology = 4096 nodes x ", "of simulated caches"],
    );
    assert!(!out.exists(), "the refused study made its output directory");
    assert_one_line_error(&["fetch-add", "--home-u", "-0.0"], &["invalid home_u = -0: allowed 0..=1"]);
    let a_file = d.join("a-file");
    std::fs::write(&a_file, "").unwrap();
    assert_one_line_error(
        &["reproduce", "pdq-micro", "--quick", "--out", a_file.to_str().unwrap()],
        &["invalid out = ", "it is a file; allowed a directory"],
    );
}

#[test]
fn the_relinquish_flag_or_file_field_sets_the_rule_a_run_uses() {
    let d = temp_dir("relinquish-flag");
    let rule_of = |args: &[&str], record: &Path| -> String {
        let mut all = vec![
            "run",
            "micro",
            "--policy",
            "floating",
            "--requests-per-node",
            "200",
            "--json",
            record.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        let out = finegrain(&all);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(record).unwrap()).unwrap();
        json["config"]["relinquish"].as_str().unwrap().to_string()
    };
    assert_eq!(rule_of(&[], &d.join("preset.json")), "eager", "the preset's rule by default");
    assert_eq!(rule_of(&["--relinquish", "adaptive"], &d.join("flag.json")), "adaptive");
    let file = d.join("run.toml");
    std::fs::write(&file, "relinquish = \"handoff\"\n").unwrap();
    assert_eq!(rule_of(&["--config", file.to_str().unwrap()], &d.join("file.json")), "handoff");
    assert_one_line_error(
        &["run", "micro", "--relinquish", "bogus"],
        &["invalid relinquish = bogus: allowed eager, handoff, adaptive"],
    );
    assert_one_line_error(
        &["run", "micro", "--platform", "native", "--policy", "floating", "--relinquish", "adaptive"],
        &["invalid relinquish = adaptive", "eager and handoff"],
    );
    // The rule only means something where computing processors act as PP,
    // on either platform (natively eager is the default, not a no-op flag).
    for platform in ["sim", "native"] {
        for policy in ["fixed", "single"] {
            for rule in ["eager", "handoff"] {
                assert_one_line_error(
                    &[
                        "run",
                        "micro",
                        "--platform",
                        platform,
                        "--policy",
                        policy,
                        "--procs-per-node",
                        "2",
                        "--relinquish",
                        rule,
                    ],
                    &[&format!("invalid relinquish = {rule} with policy {policy}"), "allowed with floating"],
                );
            }
        }
    }
    // Lmin is measured under Fixed, where the run's hand-off rule is moot.
    let native = ["run", "micro", "--platform", "native", "--policy", "floating", "--relinquish", "handoff"];
    let out = finegrain(&[&native[..], &["--u", "0.5", "--requests-per-node", "200"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_flag_for_compute_time_replaces_the_files_choice() {
    let d = temp_dir("u-over-cycles");
    let file = d.join("run.toml");
    std::fs::write(&file, "compute_cycles = 1000\nrequests_per_node = 20\n").unwrap();
    let json = d.join("run.json");
    let out = finegrain(&[
        "run",
        "micro",
        "--config",
        file.to_str().unwrap(),
        "--u",
        "0.5",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The flag's U decided the compute time (U = 0.5: as long as Lmin),
    // not the file's 1000 cycles; the output and the record say so.
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let lmin = record["labels"]["lmin_cycles"].as_f64().expect("Lmin measured for --u");
    assert_eq!(record["labels"]["target_u"], 0.5);
    assert_eq!(record["workload"]["mean_compute_cycles"].as_f64(), Some(lmin));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("mean compute {lmin} cycles")), "{stdout}");
    assert!(stdout.contains("U = 0.5 gives the mean compute above"), "{stdout}");
    // And the other way round: a compute-time flag over a file's U.
    std::fs::write(&file, "u = 0.5\nrequests_per_node = 20\n").unwrap();
    let out = finegrain(&["run", "micro", "--config", file.to_str().unwrap(), "--compute-cycles", "1000"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("mean compute 1000 cycles") && !stdout.contains("Lmin"),
        "{stdout}"
    );
    assert_one_line_error(&["run", "micro", "--u", "0.9999999999"], &["invalid u = 0.9999999999", "allowed at most"]);
    assert_one_line_error(&["run", "micro", "--nodes", "5000"], &["invalid nodes = 5000: allowed 2..=4096"]);
}

#[test]
fn calibrate_measures_lmin_back() {
    let out = finegrain(&["calibrate", "hpca97"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for p in ["null", "fetch"] {
        let line = text.lines().find(|l| l.starts_with(p)).expect("a row per protocol");
        assert!(line.ends_with("yes"), "{line}");
    }
}

#[test]
fn calibrate_measures_the_bare_dma_flag_back_for_ipps96() {
    let out = finegrain(&["calibrate", "ipps96"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let line = text.lines().find(|l| l.starts_with("dma-flag")).expect("the bare DMA row");
    assert!(line.contains("9.500") && line.ends_with("yes"), "{line}");
}

/// A config file holds one workload's fields: another's is unknown, named
/// with the ones allowed; the `workload` key of a file written for `run
/// --workload X` is taken when it names the subcommand's workload.
#[test]
fn a_config_file_is_for_one_workload() {
    let d = temp_dir("config-workload");
    let f = d.join("run.toml");
    let c = f.to_str().unwrap();
    std::fs::write(&f, "workload = \"fetch-add\"\nkeys = 16\nrequests_per_thread = 5\n").unwrap();
    let out = finegrain(&["run", "fetch-add", "--config", c, "--requester-nodes", "1", "--compute-procs", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(" 16 keys "), "{}", String::from_utf8_lossy(&out.stdout));
    assert_one_line_error(
        &["run", "micro", "--config", c],
        &["invalid workload = fetch-add in", "`finegrain run fetch-add --config"],
    );
    std::fs::write(&f, "keys = 16\n").unwrap();
    assert_one_line_error(
        &["run", "micro", "--config", c],
        &["unknown field `keys`", "for workload micro: allowed", "compute_cycles"],
    );
}
