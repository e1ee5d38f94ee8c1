//! Run records: a run is reproducible from its record, `rerun` regenerates it
//! and refuses what it cannot compare, and a record is never lost or written
//! over its own input.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

#[test]
fn a_record_is_never_written_over_the_file_it_comes_from() {
    let d = temp_dir("same-file");
    let record = d.join("r.json");
    let out = finegrain(&["run", "micro", "--requests-per-node", "50", "--json", record.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = record.to_str().unwrap();
    assert_one_line_error(&["rerun", r, "--json", r], &["invalid json", "the record being read"]);
    let check = finegrain(&["rerun", r]);
    assert!(check.status.success(), "the record survived: {}", String::from_utf8_lossy(&check.stderr));
    let config = d.join("c.toml");
    std::fs::write(&config, "seed = 3\n").unwrap();
    let c = config.to_str().unwrap();
    for command in [&["run", "micro"][..], &["fetch-add"]] {
        assert_one_line_error(
            &[command, &["--config", c, "--json", c]].concat(),
            &["invalid json", "the config file being read"],
        );
    }
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "seed = 3\n");
    // A hard link is the same file under another name.
    let link = d.join("link.json");
    std::fs::hard_link(&config, &link).unwrap();
    assert_one_line_error(
        &["run", "micro", "--config", c, "--json", link.to_str().unwrap()],
        &["invalid json", "the config file being read"],
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "seed = 3\n");
    // Nor over the preset file it runs on.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let preset = d.join("machine.toml");
    std::fs::copy(format!("{root}/presets/hpca99.toml"), &preset).unwrap();
    let m = preset.to_str().unwrap();
    for command in [&["run", "micro"][..], &["fetch-add"]] {
        assert_one_line_error(
            &[command, &["--preset", m, "--json", m]].concat(),
            &["invalid json", "the preset file being read"],
        );
    }
    assert!(std::fs::read_to_string(&preset).unwrap().contains("[effects]"), "the preset survived");
}

fn run_json(dir: &Path, name: &str, seed: &str) -> serde_json::Value {
    let f = dir.join(name);
    let out = finegrain(&[
        "run",
        "micro",
        "--policy",
        "floating",
        "--procs-per-node",
        "3",
        "--protocol",
        "fetch",
        "--u",
        "0.4",
        "--requests-per-node",
        "300",
        "--seed",
        seed,
        "--json",
        f.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    assert!(v["wall"]["messages_per_wall_second"].as_f64().unwrap() > 0.0);
    v.as_object_mut().unwrap().remove("wall");
    unsigned(v)
}

/// A record without its digest, as records were written before they
/// carried one: `rerun` still checks it in full by simulating it, which is
/// how the tests below show each of its checks on an edited record.
fn unsigned(mut record: serde_json::Value) -> serde_json::Value {
    assert!(record["digest"].as_str().is_some_and(|d| d.starts_with("sha256:")), "{record}");
    record.as_object_mut().unwrap().remove("digest");
    record
}

#[test]
fn runs_are_reproducible_from_their_record() {
    let d = temp_dir("det");
    let a = run_json(&d, "a.json", "7");
    let b = run_json(&d, "b.json", "7");
    let c = run_json(&d, "c.json", "8");
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap(), "same seed, same bytes");
    assert_ne!(a["stats"], c["stats"], "another seed, another run");
    assert_eq!(a["config"]["seed"], 7);
    assert_eq!(a["config"]["machine"]["name"], "hpca97", "the record holds the whole machine");

    let rerun = finegrain(&["rerun", d.join("a.json").to_str().unwrap()]);
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    assert!(String::from_utf8_lossy(&rerun.stdout).contains("statistics identical to the record"));
    // A record whose statistics do not match its configuration is caught
    // and the differing value named.
    let mut tampered = a.clone();
    tampered["stats"]["events"] = serde_json::json!(a["stats"]["events"].as_u64().unwrap() + 1);
    tampered["wall"] =
        serde_json::json!({"wall_seconds": 1.0, "events_per_wall_second": 1.0, "messages_per_wall_second": 1.0});
    let t = d.join("tampered.json");
    std::fs::write(&t, serde_json::to_string(&tampered).unwrap()).unwrap();
    assert_one_line_error(&["rerun", t.to_str().unwrap()], &["the rerun differs from the record", "stats.events"]);
    // Statistics of another size than the run's are refused before it
    // runs: an edited size could run for hours.
    let mut resized = tampered.clone();
    resized["workload"]["requests_per_node"] = serde_json::json!(1_000_000_000u64);
    std::fs::write(&t, serde_json::to_string(&resized).unwrap()).unwrap();
    assert_one_line_error(
        &["rerun", t.to_str().unwrap()],
        &["its workload makes 2000000000 requests but its statistics answer 600"],
    );
    let mut resized = tampered.clone();
    resized["config"]["topology"]["nodes"] = serde_json::json!(4096);
    std::fs::write(&t, serde_json::to_string(&resized).unwrap()).unwrap();
    assert_one_line_error(&["rerun", t.to_str().unwrap()], &["has 4096 nodes but its statistics 2"]);
    std::fs::write(&t, "{}").unwrap();
    assert_one_line_error(&["rerun", t.to_str().unwrap()], &["invalid run record", "names no study"]);
    // A fetch&add record's home measures (what its study tabulates) are
    // checked too.
    let f = d.join("f.json");
    let small = ["--requester-nodes", "1", "--compute-procs", "2", "--keys", "8", "--requests-per-thread", "100"];
    let out = finegrain(&[&["fetch-add", "--json", f.to_str().unwrap()][..], &small[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rerun = finegrain(&["rerun", f.to_str().unwrap()]);
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    let record = unsigned(serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap());
    let mut tampered = record.clone();
    tampered["measures"]["throughput_msgs_per_us"] = serde_json::json!(123.0);
    std::fs::write(&t, serde_json::to_string(&tampered).unwrap()).unwrap();
    assert_one_line_error(
        &["rerun", t.to_str().unwrap()],
        &["differ", "measures.throughput_msgs_per_us: recorded 123"],
    );
    // So are the labels a record names beside its configuration.
    let mut tampered = a.clone();
    tampered["labels"]["seed"] = serde_json::json!(1);
    std::fs::write(&t, serde_json::to_string(&tampered).unwrap()).unwrap();
    assert_one_line_error(&["rerun", t.to_str().unwrap()], &["invalid run record", "names seed = 1", "say 7"]);
    let mut tampered = record.clone();
    tampered["labels"]["kind"] = serde_json::json!("mult");
    std::fs::write(&t, serde_json::to_string(&tampered).unwrap()).unwrap();
    assert_one_line_error(&["rerun", t.to_str().unwrap()], &["names kind = \"mult\"", "say \"embedded\""]);
    // A fetch&add record without its home measures hides them from the
    // comparison: a difference, not a pass.
    let mut tampered = record;
    tampered.as_object_mut().unwrap().remove("measures");
    std::fs::write(&t, serde_json::to_string(&tampered).unwrap()).unwrap();
    assert_one_line_error(&["rerun", t.to_str().unwrap()], &["measures: missing, but a fetch&add run has them"]);
    // A run's Lmin is measured again from its machine and seed, even when
    // no target U ties it to the compute time.
    let mut tampered = a;
    tampered["labels"]["lmin_cycles"] = serde_json::json!(500.0);
    tampered["labels"].as_object_mut().unwrap().remove("target_u");
    std::fs::write(&t, serde_json::to_string(&tampered).unwrap()).unwrap();
    assert_one_line_error(&["rerun", t.to_str().unwrap()], &["lmin_cycles: recorded 500, measured again 16"]);
}

#[test]
fn one_fetch_add_point_runs_and_regenerates_from_its_record() {
    let d = temp_dir("fa");
    let f = d.join("fa.json");
    let args = ["fetch-add", "--kind", "smp", "--discipline", "pdq", "--protocol-procs", "2", "--keys", "64"];
    let out = finegrain(
        &[&args[..], &["--skew", "zipf:1", "--requests-per-thread", "100", "--json", f.to_str().unwrap()]].concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 x smp pdq") && text.contains("requests/us"), "{text}");
    let rec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(rec["measures"]["requests"], 4 * 8 * 100, "every request handled at the home");
    let rerun = finegrain(&["rerun", f.to_str().unwrap()]);
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));

    assert_one_line_error(&["fetch-add", "--kind", "gpu"], &["invalid kind = gpu", "embedded, smp, mult"]);
    assert_one_line_error(
        &["fetch-add", "--discipline", "serial", "--protocol-procs", "2"],
        &["serial", "1 protocol processor"],
    );
    assert_one_line_error(&["fetch-add", "--kind", "mult", "--discipline", "static"], &["static", "embedded or smp"]);
    assert_one_line_error(&["fetch-add", "--keys", "0"], &["invalid keys = 0", "allowed 1..="]);
    assert_one_line_error(&["fetch-add", "--skew", "zipf"], &["invalid skew", "uniform or zipf:S"]);
    assert_one_line_error(&["fetch-add", "--home-u", "1.5"], &["invalid home_u = 1.5", "0..=1"]);
    assert_one_line_error(&["fetch-add", "--home-u", "1e-300"], &["invalid home_u = 1e-300", "2.000e-6..=1"]);

    // The same point on real threads, every word checked afterwards.
    let small = ["--requester-nodes", "1", "--compute-procs", "2", "--keys", "8", "--requests-per-thread", "250"];
    for (kind, discipline, procs) in
        [("smp", "pdq", "2"), ("mult", "pdq", ""), ("mult", "pdq", "1"), ("smp", "spin-lock", "2")]
    {
        let mut args = vec!["fetch-add", "--platform", "native", "--kind", kind, "--discipline", discipline];
        if !procs.is_empty() {
            args.extend(["--protocol-procs", procs]);
        }
        let out = finegrain(&[&args[..], &small[..]].concat());
        assert!(out.status.success(), "{kind} {discipline}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("requests          500 in"), "{kind} {discipline}");
    }
    assert_one_line_error(
        &["fetch-add", "--platform", "native", "--kind", "embedded"],
        &["invalid kind = embedded", "smp, mult"],
    );
    // Its own defaults run natively (smp protocol threads, keys the native
    // table holds).
    let out = finegrain(&["fetch-add", "--platform", "native", "--requests-per-thread", "20"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 x smp pdq  64 keys"));
    // A key count beyond the native table names the native range, even
    // beyond the simulated machine's.
    assert_one_line_error(
        &["fetch-add", "--platform", "native", "--keys", "100000", "--requests-per-thread", "2"],
        &["invalid keys = 100000", "on the native runtime"],
    );
    assert_one_line_error(&["fetch-add", "--platform", "gpu"], &["invalid platform = gpu", "sim, native"]);
    assert_one_line_error(
        &["fetch-add", "--platform", "native", "--kind", "mult", "--compute-procs", "2", "--protocol-procs", "3"],
        &["invalid protocol_procs = 3 for mult", "1..=2"],
    );
    assert_one_line_error(
        &["fetch-add", "--platform", "native", "--kind", "smp", "--compute-procs", "2", "--keys", "4096"],
        &["invalid keys = 4096", "on the native runtime"],
    );
    assert_one_line_error(&["fetch-add", "--requester-nodes", "4294967295"], &["invalid requester_nodes", "1..=4095"]);
    assert_one_line_error(
        &["fetch-add", "--kind", "smp", "--compute-procs", "64"],
        &["invalid compute_procs = 64", "1..=63"],
    );
    assert_one_line_error(
        &["fetch-add", "--protocol-procs", "60"],
        &["invalid protocol_procs = 60 with compute_procs = 8", "protocol_procs 1..=56 or compute_procs 1..=4"],
    );
}

#[test]
fn rerun_refuses_records_it_cannot_compare_or_run() {
    let d = temp_dir("rerun-bad");
    let record = run_json(&d, "good.json", "3");
    let mut no_stats = record.clone();
    no_stats["stats"] = serde_json::Value::Null;
    let p = d.join("no-stats.json");
    std::fs::write(&p, no_stats.to_string()).unwrap();
    assert_one_line_error(
        &["rerun", p.to_str().unwrap()],
        &["its stats have no sim_cycles as a whole number of cycles"],
    );
    let mut one_node = record;
    one_node["config"]["topology"]["nodes"] = 1.into();
    let p = d.join("one-node.json");
    std::fs::write(&p, one_node.to_string()).unwrap();
    assert_one_line_error(&["rerun", p.to_str().unwrap()], &["invalid nodes = 1: allowed 2..=4096"]);
    let f = d.join("fetch-add.json");
    let out = finegrain(&["fetch-add", "--requests-per-thread", "2", "--json", f.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut bad_skew = unsigned(serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap());
    bad_skew["workload"]["skew"] = "zipf".into();
    std::fs::write(&f, bad_skew.to_string()).unwrap();
    assert_one_line_error(&["rerun", f.to_str().unwrap()], &["expected skew {\"kind\": \"uniform\"}"]);
    // A label the record's kind never carries, or one of the wrong type,
    // could hide a mislabelled run: refused, not skipped.
    let good = run_json(&d, "labels.json", "3");
    let p = d.join("labelled.json");
    for (label, value, says) in [
        ("kind", serde_json::json!("smp"), "it names kind = \"smp\" but its configuration and workload say null"),
        ("platform", serde_json::json!(1), "labels.platform: unknown field `platform`, expected one of `workload`"),
        ("lmin_cycles", serde_json::json!(-3), "lmin_cycles = -3: allowed a positive number"),
        ("bogus", serde_json::Value::Null, "labels.bogus: unknown field `bogus`"),
        ("lmin_cycles", serde_json::Value::Null, "it names target_u = 0.4 but no lmin_cycles"),
        ("nodes", serde_json::json!("2"), "labels.nodes: invalid type: string \"2\", expected a whole number"),
    ] {
        let mut r = good.clone();
        r["labels"][label] = value;
        std::fs::write(&p, r.to_string()).unwrap();
        assert_one_line_error(&["rerun", p.to_str().unwrap()], &[says]);
    }
    // A key given twice would leave which one counts to the parser.
    let text = good.to_string();
    let twice = text.replacen("\"study\":", "\"id\":\"x\",\"study\":", 1);
    assert!(twice.matches("\"id\":").count() == 2, "{twice}");
    std::fs::write(&p, twice).unwrap();
    assert_one_line_error(&["rerun", p.to_str().unwrap()], &["duplicate key `id`: a record names each key once"]);
    // Nothing may follow the record.
    std::fs::write(&p, format!("{good}\n{{}}")).unwrap();
    assert_one_line_error(&["rerun", p.to_str().unwrap()], &["trailing characters"]);
    // A number no preset could hold is named too.
    let mut r = good.clone();
    r["config"]["machine"]["bus"]["memory_latency"] = serde_json::json!(1u64 << 63);
    std::fs::write(&p, r.to_string()).unwrap();
    assert_one_line_error(&["rerun", p.to_str().unwrap()], &["invalid bus.memory_latency = a value beyond 2^63"]);
    // A field of the wrong type is named by its path, in plain words.
    let mut r = good;
    r["config"]["machine"]["bus"]["memory_latency"] = "x".into();
    std::fs::write(&p, r.to_string()).unwrap();
    assert_one_line_error(
        &["rerun", p.to_str().unwrap()],
        &["config.machine.bus.memory_latency: invalid type: string \"x\", expected a whole number"],
    );
}

#[test]
fn a_refused_run_leaves_an_existing_record_as_it_was() {
    let d = temp_dir("keep-record");
    run_json(&d, "good.json", "3");
    let good = d.join("good.json");
    let before = std::fs::read(&good).unwrap();
    assert_one_line_error(
        &["run", "micro", "--json", good.to_str().unwrap(), "--policy", "bogus"],
        &["invalid policy = bogus"],
    );
    assert_one_line_error(
        &["fetch-add", "--json", good.to_str().unwrap(), "--platform", "bogus"],
        &["invalid platform = bogus"],
    );
    assert_eq!(std::fs::read(&good).unwrap(), before, "the record was changed by a refused run");
    let fresh = d.join("fresh.json");
    assert_one_line_error(&["run", "micro", "--json", fresh.to_str().unwrap(), "--protocol", "x"], &["protocol"]);
    assert!(!fresh.exists(), "a refused run left an empty record behind");
}

#[test]
fn a_native_record_is_refused_by_rerun_with_the_reason() {
    let d = temp_dir("rerun-native");
    let p = d.join("native.json");
    std::fs::write(&p, r#"{"platform": "native", "policy": "fixed", "stats": {}}"#).unwrap();
    assert_one_line_error(&["rerun", p.to_str().unwrap()], &["native run", "no rerun can regenerate"]);
    // A native fetch&add run records what it measured and what it ran with.
    let f = d.join("fetch-add.json");
    let small = ["--requester-nodes", "1", "--compute-procs", "1", "--keys", "8", "--requests-per-thread", "20"];
    let out = finegrain(
        &[
            &["fetch-add", "--platform", "native", "--kind", "smp", "--seed", "5", "--json", f.to_str().unwrap()][..],
            &small,
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!((&record["platform"], &record["kind"], &record["seed"]), (&"native".into(), &"smp".into(), &5.into()));
    assert_eq!(record["workload"]["keys"], 8);
    assert!(record["machine"]["name"] == "hpca99" && record["stats"]["requests"] == 20, "{record}");
    assert_eq!(record["preset"], "hpca99");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("native  preset hpca99  1 x smp pdq") && !stdout.contains("handler 97"), "{stdout}");
    assert_one_line_error(&["rerun", f.to_str().unwrap()], &["native run", "no rerun can regenerate"]);
}

/// A run whose output is closed early (piped into a command that stops
/// reading) still leaves its record: the record is written first.
#[test]
fn a_run_record_survives_output_closed_early() {
    let d = temp_dir("closed-output");
    for (args, json) in [
        (&["run", "micro", "--requests-per-node", "500"][..], d.join("run.json")),
        (&["fetch-add", "--requests-per-thread", "50"][..], d.join("fetch-add.json")),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_finegrain"))
            .args(args)
            .args(["--json", json.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        child.wait().unwrap();
        let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{args:?}: no record: {e}"));
        let record: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(record["stats"]["sim_cycles"].is_u64(), "{args:?}");
    }
}

/// What `run` and `fetch-add` print names everything that regenerates the
/// run, the preset's file included when it was given by path.
#[test]
fn a_runs_output_names_its_whole_configuration() {
    let preset = concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets/hpca97.toml");
    let out = finegrain(&[
        "run",
        "micro",
        "--preset",
        preset,
        "--oint",
        "700",
        "--compute-cycles",
        "250.5",
        "--requests-per-node",
        "30",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with(&format!("preset hpca97 ({preset})")), "{stdout}");
    assert!(stdout.contains("oint 700 cycles  mean compute 250.5 cycles  requests per node 30"), "{stdout}");
    let out = finegrain(&["fetch-add", "--requests-per-thread", "7", "--handler-cycles", "33", "--think-cycles", "12"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("handler 33 cycles  7 requests per thread  think 12 cycles  sequential share 0  home U 0.5"),
        "{stdout}"
    );
}

/// `text` with the first `"key": N` changed to `"key": value`, its layout
/// kept, so that only the digest can tell.
fn edit_number(text: &str, key: &str, value: &str) -> String {
    let at = text.find(&format!("\"{key}\": ")).unwrap_or_else(|| panic!("no {key}")) + key.len() + 4;
    let end = at + text[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
    format!("{}{value}{}", &text[..at], &text[end..])
}

/// A study's records edited after they were written (a run's simulated
/// time set to 2^64-1, a count changed), each laid out as finegrain writes
/// them: `--reuse` simulates their runs again and says so, one line per
/// record, and `rerun` refuses them. A record without a digest (written
/// before records carried one) is simulated again by `--reuse` too, and
/// checked in full by `rerun`.
#[test]
fn an_edited_study_record_is_simulated_again_by_reuse_and_refused_by_rerun() {
    let d = temp_dir("reuse-edited");
    let (first, second) = (d.join("first"), d.join("second"));
    let out = finegrain(&["reproduce", "pdq-micro", "--quick", "--out", first.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = first.join("runs");
    let mut names: Vec<_> = std::fs::read_dir(&runs).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    let original: Vec<String> = names[..3].iter().map(|n| std::fs::read_to_string(runs.join(n)).unwrap()).collect();
    let edited =
        [edit_number(&original[0], "sim_cycles", &u64::MAX.to_string()), edit_number(&original[1], "messages", "7")];
    for (i, text) in edited.iter().enumerate() {
        assert_ne!(text, &original[i]);
        std::fs::write(runs.join(&names[i]), text).unwrap();
    }
    let cut = original[2].find(",\n  \"digest\": \"sha256:").expect("a record ends with its digest");
    std::fs::write(runs.join(&names[2]), format!("{}\n}}\n", &original[2][..cut])).unwrap();

    let out = finegrain(&[
        "reproduce",
        "pdq-micro",
        "--quick",
        "--out",
        second.to_str().unwrap(),
        "--reuse",
        first.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for name in &names[..2] {
        let path = runs.join(name);
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(path.to_str().unwrap())).collect();
        assert_eq!(lines.len(), 1, "one line on {name:?}: {err}");
        assert!(lines[0].contains("its digest does not match its content"), "{err}");
        assert!(lines[0].contains("its run was simulated again"), "{err}");
    }
    assert!(err.contains("1 record(s) carry no digest"), "{err}");
    assert!(err.contains("the other 3 were simulated now"), "{err}");
    // Simulated again: the statistics as first written, not as edited.
    for (i, name) in names[..3].iter().enumerate() {
        let stats = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap()["stats"].clone();
        assert_eq!(stats(&std::fs::read_to_string(second.join("runs").join(name)).unwrap()), stats(&original[i]));
    }

    for name in &names[..2] {
        let path = runs.join(name);
        assert_one_line_error(
            &["rerun", path.to_str().unwrap()],
            &["invalid run record", "its digest does not match its content", "edited after finegrain wrote it"],
        );
    }
    let rerun = finegrain(&["rerun", runs.join(&names[2]).to_str().unwrap()]);
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    assert!(String::from_utf8_lossy(&rerun.stdout).contains("statistics identical to the record"));
    let _ = std::fs::remove_dir_all(&d);
}
