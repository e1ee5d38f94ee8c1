//! The quick studies write everything, decide each claim (the verdicts
//! pinned, supported or not), and their records rerun.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

#[test]
fn quick_scheduling_study_writes_everything_and_decides_each_claim() {
    let d = temp_dir("study");
    let out = finegrain(&["reproduce", "scheduling-micro", "--quick", "--out", d.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(d.join("results.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for col in [
        "protocol",
        "policy",
        "procs_per_node",
        "compute_procs",
        "target_u",
        "measured_u",
        "oint_cycles",
        "seed",
        "sim_cycles",
        "time_norm_fixed",
        "cost_performance",
        "requests",
        "interrupts",
        "pp_occupancy",
        "events",
        "wall_seconds",
    ] {
        assert!(header.split(',').any(|h| h == col), "results.csv lacks {col}");
    }
    let rows = csv.lines().count() - 1;
    let records = std::fs::read_dir(d.join("runs")).unwrap().count();
    assert_eq!(rows, records, "one JSON record per run");
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(std::fs::read_dir(d.join("runs")).unwrap().next().unwrap().unwrap().path()).unwrap(),
    )
    .unwrap();
    assert!(
        record["config"]["machine"].is_object()
            && record["labels"]["seed"].is_u64()
            && record["stats"]["events"].is_u64()
    );
    for fig in [
        "fig3-single-vs-fixed.svg",
        "fig4-floating-vs-fixed.svg",
        "fig5-processors-per-node.svg",
        "fig6-cost-performance-null.svg",
    ] {
        let svg = std::fs::read_to_string(d.join("figures").join(fig)).unwrap();
        assert!(svg.contains("<svg") && svg.contains("polyline"), "{fig}");
    }
    // With the paper's Section 5 mechanisms (protocol processing as a
    // thread, requests through the protocol processor) only claim 1 emerges
    // from the quick grid: the protocol thread's context moving with the
    // role costs Floating ~20 migration misses a request (see README,
    // "Latest scheduling-micro verdicts", and docs/scheduling-micro.md).
    // Re-pinned after the blind re-read of the tests (2026-12-07, see
    // docs/claim-tests-reread.md): claim 1 is now judged at the paper's Oint
    // of 200 cycles and the high Oint only, and its communication-bound
    // point fails (Single 1.73 x Fixed at both Oints: at U = 0.05 the
    // single processor takes no interrupts).
    check_claims(&d, "scheduling-micro", &[1, 3, 3, 7, 4], &[]);
    // Claim 5 names a best system only when its paired lead over each
    // rival exceeds twice its standard error over the seeds, and says so
    // at each of its four points.
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    // Claim 5's table of checks: the rows under its heading.
    let claim5: String = report
        .lines()
        .skip_while(|l| !l.starts_with("**claim 5:"))
        .skip(1)
        .skip_while(|l| l.is_empty())
        .take_while(|l| l.starts_with('|'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!claim5.is_empty(), "a table of claim 5's checks");
    assert_eq!(claim5.matches("best of each (").count(), 4, "{claim5}");
    let decided = claim5.matches(" best: ").count() + claim5.matches("no clear winner, a tie: ").count();
    assert_eq!(decided, 4, "{claim5}");
    assert!(claim5.contains("(SE, 3 seeds)"), "{claim5}");
    check_rerun(&d, "fetch-fixed-p2-u0.05-oint200-r0.json", "scheduling microbenchmark on preset hpca97");
    check_sensitivity(
        &d,
        "## Sensitivity of claim 5",
        &["migration", "data_placement", "cache_interference"],
        ("no-migration-fetch-floating-p2-u0.30-oint200-r0.json", "migration"),
    );
    // Every claim again without protocol processing as a thread: the
    // record says so, ran so, and reruns; a run with it on that names it
    // is refused. The failing claims are summed up against every rerun.
    let without = "without-protocol-thread-null-floating-p2-u0.50-oint200-r0.json";
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs").join(without)).unwrap()).unwrap();
    assert_eq!(json["labels"]["mechanism_off"], "protocol_thread");
    assert_eq!(json["config"]["machine"]["protocol"]["protocol_thread"], false, "{without} ran with the thread");
    check_rerun(&d, without, "identical");
    check_mislabelled(
        &d,
        "null-floating-p2-u0.50-oint200-r0.json",
        "mechanism_off",
        serde_json::json!("protocol_thread"),
        "it names mechanism_off = protocol_thread but its configuration runs with protocol_thread on",
    );
    let mechanisms = report.split("## Claims without the paper's Section 5 mechanisms").nth(1).expect("a section");
    assert!(
        mechanisms.contains("Without protocol_thread: ") && mechanisms.contains("**without protocol_thread, claim 5: "),
        "{mechanisms}"
    );
    let failing = report.split("## What the reruns say about the failing claims").nth(1).expect("a section");
    assert!(failing.contains("- claim 3 (3 checks fail): without protocol_thread: supported"), "{failing}");
    // The context-switch map: every claim again at each other cost of the
    // switches to and from the protocol thread; the records say so, ran
    // so and rerun; a label the configuration contradicts is refused. The
    // map's rows are pinned like the verdicts (docs/scheduling-micro.md).
    let switched = "switch64-context128-null-floating-p2-u0.50-oint200-r0.json";
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs").join(switched)).unwrap()).unwrap();
    assert_eq!(json["labels"]["context_switch"], serde_json::json!({ "cycles": 64, "bytes": 128 }));
    assert_eq!(json["config"]["machine"]["protocol"]["context_switch_cycles"], 64, "{switched}");
    assert_eq!(json["config"]["machine"]["protocol"]["context_bytes"], 128, "{switched}");
    check_rerun(&d, switched, "identical");
    check_mislabelled(
        &d,
        "null-floating-p2-u0.50-oint200-r0.json",
        "context_switch",
        serde_json::json!({ "cycles": 64, "bytes": 128 }),
        "it names context_switch = 64/128 (cycles/bytes) but its configuration runs with 256/512",
    );
    let map = report.split("## The context-switch map").nth(1).expect("a section");
    let map = map.split("\n## ").next().unwrap();
    for row in [
        "| free (protocol_thread off) | no (1) | no (3) | **yes** | no (1) | no (3) |",
        "| 32/64 | no (1) | no (3) | **yes** | no (2) | no (4) |",
        "| 64/128 | no (1) | no (4) | **yes** | no (3) | no (4) |",
        "| 128/256 | **yes** | no (3) | no (1) | no (5) | no (4) |",
        "| 256/512 (the preset's: the verdicts above) | no (1) | no (3) | no (3) | no (7) | no (4) |",
    ] {
        assert!(map.contains(row), "the map lacks {row}: {map}");
    }
    assert!(failing.contains("switch 128/256: supported"), "{failing}");
    // Claim 1 again with Oint paid on delivery (the preset pays it on
    // return): the record says so, ran so, and reruns; a label the
    // configuration contradicts is refused.
    let returning = "return0-null-single-p1-u0.05-oint2000-r0.json";
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs").join(returning)).unwrap()).unwrap();
    assert_eq!(json["labels"]["interrupt_return_percent"], 0);
    assert_eq!(json["config"]["machine"]["interrupt"]["entry_percent"], 100, "{returning} ran with another split");
    check_rerun(&d, returning, "identical");
    check_mislabelled(&d, returning, "interrupt_return_percent", serde_json::json!(10), "pays 0% of Oint on return");
    // Its CSV row says so too, so it is never taken for a baseline run.
    let row = csv.lines().find(|l| l.contains(&format!("runs/{returning},"))).expect("a row for the rerun");
    assert!(
        header.ends_with(",interrupt_return_percent,mechanism_off,context_switch") && row.ends_with(",0,,"),
        "{row}"
    );
    let row = csv.lines().find(|l| l.contains(&format!("runs/{without},"))).expect("a row for the rerun");
    assert!(row.ends_with(",protocol_thread,"), "{row}");
    let row = csv.lines().find(|l| l.contains(&format!("runs/{switched},"))).expect("a row for the rerun");
    assert!(row.ends_with(",64/128"), "{row}");
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    assert!(report.contains("## Sensitivity of claim 1") && report.contains("**0% on return: "), "{report}");
    // Claim 2 again under the relinquish rules the study does not use.
    let record = "relinquish-adaptive-null-floating-p2-u0.90-oint20000-r0.json";
    check_rule_rerun(
        &d,
        "## Sensitivity of claim 2",
        &["**relinquish adaptive: ", "**relinquish handoff: "],
        record,
        ("relinquish_rule", "/config/relinquish", "adaptive"),
    );
    // Labels the others and the configuration imply are checked too.
    for (field, value, says) in [
        (
            "relinquish_rule",
            serde_json::json!("handoff"),
            "relinquish_rule = handoff but its configuration runs under adaptive",
        ),
        (
            "relinquish_rule",
            serde_json::json!("lazy"),
            "labels.relinquish_rule: unknown variant `lazy`, expected one of `eager`, `handoff`, `adaptive`",
        ),
        ("target_u", serde_json::json!(0.5), "target_u = 0.5 and lmin_cycles"),
        ("target_u", serde_json::json!("0.9"), "labels.target_u: invalid type: string \"0.9\", expected a number"),
        ("target_u", serde_json::json!(1.5), "target_u = 1.5: allowed a utilization from 0 up to but not including 1"),
        ("lmin_cycles", serde_json::json!(1.0), "lmin_cycles = 1"),
        ("replicate", serde_json::json!(2), "names id"),
    ] {
        check_mislabelled(&d, record, field, value, says);
    }
    let sensitivity = "no-migration-fetch-floating-p2-u0.30-oint200-r0.json";
    check_mislabelled(&d, sensitivity, "effect_off", serde_json::json!("data_placement"), "with data_placement on");
    // Claim 4 again under the arbitration the preset does not use.
    let record = "arbitration-lowest-null-floating-p8-u0.30-oint200-r1.json";
    check_rule_rerun(
        &d,
        "## Sensitivity of claim 4",
        &["**arbitration lowest: "],
        record,
        ("arbitration_rule", "/config/machine/protocol/role_arbitration", "lowest"),
    );
    for (value, says) in [
        (serde_json::json!("round-robin"), "arbitration_rule = round-robin but its configuration runs under lowest"),
        (
            serde_json::json!("random"),
            "labels.arbitration_rule: unknown variant `random`, expected `lowest` or `round-robin`",
        ),
    ] {
        check_mislabelled(&d, record, "arbitration_rule", value, says);
    }
}

/// A study's runs under another rule: the report's section has a line per
/// rule, and the record names its rule, ran under it (`field`, a JSON
/// pointer into the record) and reruns.
fn check_rule_rerun(d: &Path, heading: &str, lines: &[&str], record: &str, (label, field, rule): (&str, &str, &str)) {
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    let section = report.split(heading).nth(1).unwrap_or_else(|| panic!("no {heading} in {report}"));
    for line in lines {
        assert!(section.lines().any(|l| l.starts_with(line)), "no {line}: {section}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs").join(record)).unwrap()).unwrap();
    assert_eq!(json["labels"][label], rule);
    assert_eq!(json.pointer(field).unwrap(), rule, "{record} ran under another rule");
    check_rerun(d, record, "identical");
}

/// A copy of a study's record with one label changed is refused by rerun:
/// for its digest, and without one for the label.
fn check_mislabelled(d: &Path, record: &str, field: &str, value: serde_json::Value, says: &str) {
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs").join(record)).unwrap()).unwrap();
    // The id is the record's own; the rest are its labels.
    if field == "id" {
        json["id"] = value;
    } else {
        json["labels"][field] = value;
    }
    let edited = d.join(format!("edited-{field}.json"));
    std::fs::write(&edited, serde_json::to_string(&json).unwrap()).unwrap();
    // Its digest no longer matches: refused as edited.
    assert_one_line_error(&["rerun", edited.to_str().unwrap()], &["invalid run record", "its digest does not match"]);
    // Without a digest (as records were before they carried one) the
    // labels themselves are checked.
    json.as_object_mut().unwrap().remove("digest");
    std::fs::write(&edited, serde_json::to_string(&json).unwrap()).unwrap();
    assert_one_line_error(&["rerun", edited.to_str().unwrap()], &["invalid run record", says]);
}

#[test]
fn a_rerun_under_the_studys_own_rule_is_refused() {
    let d = temp_dir("own-rule");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let exp = std::fs::read_to_string(format!("{root}/experiments/scheduling-micro.toml")).unwrap();
    let file = d.join("e.toml");
    for (line, own, says) in [
        (
            "relinquish_sensitivity = [\"adaptive\", \"handoff\"]",
            "relinquish_sensitivity = [\"eager\"]",
            "invalid full.relinquish_sensitivity = [eager]: eager is the study's own rule",
        ),
        (
            "return_sensitivity = [0]",
            "return_sensitivity = [100]",
            "invalid full.return_sensitivity = [100]: 100 is the preset's own share of Oint paid on return",
        ),
        (
            "arbitration_sensitivity = [\"lowest\"]",
            "arbitration_sensitivity = [\"round-robin\"]",
            "invalid full.arbitration_sensitivity = [round-robin]: round-robin is the preset's own arbitration",
        ),
    ] {
        assert!(exp.contains(line), "the experiment has {line}");
        std::fs::write(&file, exp.replacen(line, own, 1)).unwrap();
        assert_one_line_error(
            &["reproduce", file.to_str().unwrap(), "--quick", "--out", d.join("out").to_str().unwrap()],
            &[says],
        );
    }
}

#[test]
fn quick_pdq_study_writes_everything_and_decides_each_claim() {
    let d = temp_dir("pdq");
    let out = finegrain(&["reproduce", "pdq-micro", "--quick", "--out", d.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(d.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let wanted = "discipline,pp_kind,protocol_procs,keys,skew,throughput_msgs_per_us,mean_queue_delay_cycles,\
p99_queue_delay_cycles,pp_busy_wait_fraction,seed";
    assert_eq!(header[..10].join(","), wanted, "the issue's columns lead results.csv");
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), std::fs::read_dir(d.join("runs")).unwrap().count(), "one JSON record per run");
    for (col, values) in [
        (0, &["serial", "pdq", "spin-lock", "static"][..]),
        (1, &["embedded", "smp", "mult"][..]),
        (2, &["1", "2", "4", "8"][..]),
        (3, &["1", "4", "64", "4096"][..]),
    ] {
        for v in values {
            assert!(rows.iter().any(|r| r[col] == *v), "results.csv has no row with {} = {v}", header[col]);
        }
    }
    assert!(rows.iter().all(|r| r[5].parse::<f64>().unwrap() > 0.0), "every run measured a throughput");
    for fig in ["throughput-embedded-uniform.svg", "spin-busy-wait.svg", "mult-interrupts.svg"] {
        let svg = std::fs::read_to_string(d.join("figures").join(fig)).unwrap();
        assert!(svg.contains("<svg") && svg.contains("polyline"), "{fig}");
    }
    // Claims 2 and 3 emerge from the model; claim 1's near-linear scaling
    // does not: key state migrates between the embedded processors' data
    // caches (the sensitivity run without migration scales 4.00x).
    // Hypothesis H1 fails where PDQ moves keys between caches and static
    // partitioning does not; H2 holds (see README). Since hpca99 was
    // recalibrated against HPCA 1999 Table 1 (2026-11-29) all four of H1's
    // checks fail in the quick run, as in the full one (SMP under uniform
    // keys went from 1.09 to 1.12). Re-pinned after the blind re-read
    // (2026-12-07): claim 1 also checks that more keys never cost
    // throughput (4096 keys fall below 4), H1 checks 2 and 4 processors
    // under Zipf keys apart.
    check_claims(&d, "pdq-micro", &[3, 0, 0], &[6, 0]);
    check_reuse(&d, "pdq-micro", &out.stdout);
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    let (_, h1) = shown_verdict(&report, "hypothesis H1");
    let h1 = h1.join("\n");
    assert!(h1.contains("| embedded uniform") && h1.contains("| smp 2 processors zipf:1"), "H1 per kind: {h1}");
    check_rerun(&d, "smp-pdq-k4-keys64-zipf1.json", "fetch&add on preset hpca99");
    // A record's id and sweep must be the ones its configuration makes.
    let record = "embedded-pdq-k4-keys4096-uniform-seq0.010.json";
    check_rerun(&d, record, "fetch&add on preset hpca99");
    for (field, value, says) in [
        ("id", serde_json::json!("embedded-pdq-k4-keys4096-uniform-seq0.050"), "its labels make embedded-pdq-k4"),
        ("sweep", serde_json::json!("main"), "its labels make embedded-pdq-k4-keys4096-uniform;"),
        (
            "sweep",
            serde_json::json!("grid"),
            "labels.sweep: unknown variant `grid`, expected one of `main`, `mult-home-u`, `sequential`, `sensitivity`, \
             `affinity`",
        ),
        ("sweep", serde_json::json!("affinity"), "configuration runs without key affinity (pdq.affinity_passes = 0)"),
    ] {
        check_mislabelled(&d, record, field, value, says);
    }
    // The extension: claim 1 and hypotheses H1 and H2 judged again on PDQ
    // with the device's key affinity, whose runs say so in their
    // configuration and rerun.
    for name in ["claim 1", "hypothesis H1", "hypothesis H2"] {
        shown_verdict(&report, &format!("with affinity, {name}"));
    }
    // The failing claims, against what the reruns give for them: claim 1
    // comes back without migration. H1 came back with key affinity until
    // the fit of hpca99's SMP costs to Table 1's steps (2026-12-07: an SMP
    // dispatch of 41 instructions and an 8-cycle register fill, where it
    // was 12 and 40); at the quick inputs it no longer does.
    let failing = report.split("## What the reruns say about the failing claims").nth(1).expect("a section");
    assert!(failing.contains("- claim 1: without migration embedded PDQ gains 4.00x from 1 to 4"), "{failing}");
    assert!(failing.contains("- hypothesis H1: with key affinity it is not supported"), "{failing}");
    let with_affinity = "smp-pdq-k4-keys4096-zipf1-affinity.json";
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs").join(with_affinity)).unwrap()).unwrap();
    assert_eq!(
        (json["labels"]["sweep"].as_str(), json["config"]["machine"]["pdq"]["affinity_passes"].as_u64()),
        (Some("affinity"), Some(16))
    );
    check_rerun(&d, with_affinity, "identical");
    // A record made before key affinity existed names no affinity_passes
    // (nor a digest, which came later), and reruns as it ran: without
    // affinity.
    let main_run = "smp-pdq-k4-keys4096-zipf1.json";
    let mut old: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs").join(main_run)).unwrap()).unwrap();
    old["config"]["machine"]["pdq"].as_object_mut().unwrap().remove("affinity_passes").expect("named");
    old.as_object_mut().unwrap().remove("digest").expect("a digest");
    std::fs::write(d.join("runs").join("before-affinity.json"), serde_json::to_string(&old).unwrap()).unwrap();
    check_rerun(&d, "before-affinity.json", "identical");
    check_sensitivity(
        &d,
        "## Sensitivity of hypothesis H2's SMP scaling",
        &["migration", "cache_interference", "split_bus"],
        ("smp-pdq-k4-keys4096-uniform-no-migration.json", "migration"),
    );
    // Without the split bus: the record says so, ran with the bus held
    // whole, and reruns; a split run labelled so is refused.
    let unsplit = "smp-pdq-k4-keys4096-uniform-no-split-bus.json";
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs").join(unsplit)).unwrap()).unwrap();
    assert_eq!(json["labels"]["effect_off"], "split_bus");
    assert!(json["config"]["machine"]["bus"].get("address_phase_cycles").is_none(), "{unsplit} ran on a split bus");
    check_rerun(&d, unsplit, "identical");
    let split = "smp-pdq-k4-keys4096-uniform-no-migration.json";
    check_mislabelled(&d, split, "effect_off", serde_json::json!("split_bus"), "with split_bus on");
}

/// The same study with `--reuse` of its output takes every run from there
/// (the report and the command say so) and writes the same records and
/// results, byte for byte; stopped part way, it is finished by `--reuse`
/// of its own output.
fn check_reuse(d: &Path, study: &str, first_stdout: &[u8]) {
    let again = d.with_extension("reused");
    let out =
        finegrain(&["reproduce", study, "--quick", "--out", again.to_str().unwrap(), "--reuse", d.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(note.contains("none was simulated now"), "{note}");
    let report = std::fs::read_to_string(again.join("report.md")).unwrap();
    assert!(report.contains("none was simulated now"), "the report says where its runs came from");
    for entry in std::fs::read_dir(d.join("runs")).unwrap() {
        let name = entry.unwrap().file_name();
        let (was, now) = (d.join("runs").join(&name), again.join("runs").join(&name));
        assert_eq!(std::fs::read(was).unwrap(), std::fs::read(now).unwrap(), "{name:?}");
    }
    let csv = |dir: &Path| std::fs::read(dir.join("results.csv")).unwrap();
    assert_eq!(csv(d), csv(&again), "results.csv");
    // A study stopped part way: three records missing. `--reuse` of its
    // own output simulates just those three, to the same statistics and
    // the same verdicts.
    let mut names: Vec<_> = std::fs::read_dir(again.join("runs")).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    for name in &names[..3] {
        std::fs::remove_file(again.join("runs").join(name)).unwrap();
    }
    let dir = again.to_str().unwrap();
    let resumed = finegrain(&["reproduce", study, "--quick", "--out", dir, "--reuse", dir]);
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    let note = String::from_utf8_lossy(&resumed.stderr);
    assert!(note.contains("the other 3 were simulated now"), "{note}");
    let stats = |dir: &Path, name: &std::ffi::OsStr| {
        let text = std::fs::read_to_string(dir.join("runs").join(name)).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["stats"].clone()
    };
    for name in &names[..3] {
        assert_eq!(stats(d, name), stats(&again, name), "{name:?} simulated again");
    }
    let verdicts = |stdout: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(stdout).lines().filter(|l| !l.starts_with("report: ")).map(String::from).collect()
    };
    assert_eq!(verdicts(first_stdout), verdicts(&resumed.stdout));
    std::fs::remove_dir_all(&again).unwrap();
}

/// A study's report has one decided verdict, with its numbers, per claim of
/// the paper and per hypothesis of finegrain's own, and claim n fails
/// exactly `claims[n - 1]` of its checks, hypothesis Hn `hypotheses[n - 1]`
/// (0: it is supported). The verdicts are pinned both ways, so a model
/// change that moves one, for better or worse, fails here until these lists
/// (and the README's verdicts) are updated on purpose.
fn check_claims(d: &Path, study: &str, claims: &[usize], hypotheses: &[usize]) {
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    let shown = shown_verdicts(&report);
    for (prefix, pins) in [("claim ", claims), ("hypothesis H", hypotheses)] {
        let own: Vec<&(String, Vec<String>)> =
            shown.iter().filter(|(l, _)| l.starts_with(&format!("**{prefix}"))).collect();
        assert_eq!(own.len(), pins.len(), "one verdict per {prefix}of {study}: {report}");
        for (i, (line, rows)) in own.iter().enumerate() {
            let name = format!("{prefix}{}", i + 1);
            let verdict = if pins[i] == 0 { "supported" } else { "not supported" };
            assert!(line.starts_with(&format!("**{name}: {verdict}** (")) && !rows.is_empty(), "{study}: {line}");
            assert_eq!(failing_rows(rows), pins[i], "{study}, checks failing in {name}: {}", rows.join("\n"));
            assert!(line.contains(&format!("({} of ", pins[i])), "{study}: {line}");
        }
    }
}

/// A study's sensitivity section has a line per effect switched off, and a
/// sensitivity run records the effect and ran without it (and reruns).
fn check_sensitivity(d: &Path, heading: &str, effects: &[&str], (record, effect): (&str, &str)) {
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    let section = report.split(heading).nth(1).unwrap_or_else(|| panic!("no {heading} in {report}"));
    for e in effects {
        // A verdict with its checks (scheduling-micro) or a line of measures (pdq-micro).
        let shown = |l: &str| l.starts_with(&format!("**without {e}: ")) || l.starts_with(&format!("- without {e}: "));
        assert!(section.lines().any(shown), "no line for {e}: {section}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("runs").join(record)).unwrap()).unwrap();
    assert_eq!(json["labels"]["effect_off"], effect);
    assert_eq!(json["config"]["machine"]["effects"][effect], false, "{record} ran with {effect} on");
    check_rerun(d, record, "identical");
}

/// Any run of a study regenerates from its record alone.
fn check_rerun(d: &Path, record: &str, describes: &str) {
    let record = d.join("runs").join(record);
    let rerun = finegrain(&["rerun", record.to_str().unwrap()]);
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    assert!(String::from_utf8_lossy(&rerun.stdout).contains(describes));
}

#[test]
fn an_experiment_file_finds_its_preset_beside_it_and_its_report_says_how_to_rerun_it() {
    let d = temp_dir("experiment-preset");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    std::fs::copy(format!("{root}/presets/hpca99.toml"), d.join("mine.toml")).unwrap();
    let exp = std::fs::read_to_string(format!("{root}/experiments/pdq-micro.toml")).unwrap();
    // A small grid: only where the preset is found matters here.
    let exp = exp
        .replace("preset = \"hpca99\"", "preset = \"mine.toml\"")
        .replace("requests_per_thread = 300", "requests_per_thread = 10")
        .replace("kinds = [\"embedded\", \"smp\", \"mult\"]", "kinds = [\"embedded\", \"smp\"]");
    assert!(exp.contains("preset = \"mine.toml\""), "the experiment names its preset");
    assert!(exp.contains("requests_per_thread = 10"), "the quick grid is small");
    let file = d.join("e.toml");
    std::fs::write(&file, exp).unwrap();
    let out_dir = d.join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args(["reproduce", file.to_str().unwrap(), "--quick", "--out", out_dir.to_str().unwrap()])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    let again = format!("`finegrain reproduce {} --quick --out DIR`", file.display());
    assert!(report.contains(&again), "no '{again}' in the report");
    // The copy kept in the output runs the same study from anywhere.
    let copy = std::fs::read_to_string(out_dir.join("experiment.toml")).unwrap();
    let preset = std::fs::canonicalize(d.join("mine.toml")).unwrap();
    assert!(copy.contains(&format!("preset = \"{}\"", preset.display())), "the copy names the preset by path");
    assert!(copy.contains("# Falsafi & Wood"), "the copy keeps the file's comments");
    let out2 = d.join("out2");
    let again = Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args([
            "reproduce",
            out_dir.join("experiment.toml").to_str().unwrap(),
            "--quick",
            "--out",
            out2.to_str().unwrap(),
        ])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let claims = |dir: &std::path::Path| -> Vec<String> {
        let r = std::fs::read_to_string(dir.join("report.md")).unwrap();
        // Each claim's verdict and its table of checks.
        let evidence = |l: &&str| l.starts_with("**claim ") || l.starts_with("| fails |") || l.starts_with("| holds |");
        r.lines().filter(evidence).map(str::to_string).collect()
    };
    assert!(!claims(&out_dir).is_empty(), "the report tables its claims");
    assert_eq!(claims(&out_dir), claims(&out2), "the copy ran another study");
    // Run by a bare file name from its own directory, too.
    let bare = Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args(["reproduce", "e.toml", "--quick", "--out", "out3"])
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(bare.status.success(), "{}", String::from_utf8_lossy(&bare.stderr));
    let copy = std::fs::read_to_string(d.join("out3").join("experiment.toml")).unwrap();
    assert!(copy.contains(&format!("preset = \"{}\"", preset.display())), "the copy names the preset by path");
}

#[test]
fn a_study_refuses_an_output_it_could_not_write_before_running() {
    let d = temp_dir("report-dir");
    std::fs::create_dir_all(d.join("report.md")).unwrap();
    assert_one_line_error(
        &["reproduce", "pdq-micro", "--quick", "--out", d.to_str().unwrap()],
        &["report.md: it is a directory"],
    );
}

/// A file an earlier study left that cannot be overwritten (here one the
/// kernel refuses to open for writing, even to root) stops the study
/// before its runs, not after them.
#[test]
#[cfg(target_os = "linux")] // /proc/sys and /dev/full
fn a_study_refuses_an_earlier_file_it_could_not_overwrite_before_running() {
    let d = temp_dir("report-unwritable");
    let locked = Path::new("/proc/sys/kernel/osrelease");
    assert!(std::fs::OpenOptions::new().write(true).open(locked).is_err(), "{} is writable here", locked.display());
    std::os::unix::fs::symlink(locked, d.join("report.md")).unwrap();
    assert_one_line_error(
        &["reproduce", "pdq-micro", "--quick", "--out", d.to_str().unwrap()],
        &["cannot write", "report.md (left by an earlier study)"],
    );
    let runs = std::fs::read_dir(d.join("runs")).map_or(0, |r| r.count());
    assert_eq!(runs, 0, "runs made before the study gave up");
}
