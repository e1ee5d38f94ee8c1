//! The quick coprocessor-micro study: a row of results.csv per run, one
//! verdict line for its one claim (pinned), and a record that reruns.

mod common;

use common::{finegrain, temp_dir};

#[test]
fn quick_coprocessor_study_writes_a_row_per_run_and_pins_its_claim() {
    let d = temp_dir("coprocessor-study");
    let out = finegrain(&["reproduce", "coprocessor-micro", "--quick", "--out", d.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // A row of results.csv per run, each naming its record.
    let csv = std::fs::read_to_string(d.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "record").expect("a record column");
    let mut rows: Vec<String> =
        lines.map(|l| l.split(',').nth(col).unwrap().trim_start_matches("runs/").to_string()).collect();
    rows.sort();
    let mut records: Vec<String> = std::fs::read_dir(d.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    records.sort();
    assert_eq!(rows, records, "a row of results.csv per run");
    // Two libraries times the quick grid's two replicates.
    assert_eq!(rows.len(), 4, "{csv}");
    for lib in ["main-am", "coproc-am"] {
        assert!(rows.iter().any(|r| r.starts_with(lib)), "no {lib} run: {rows:?}");
    }

    // One verdict line, in the report and on stdout. Pinned to what the
    // data give: coproc-am's round trip is about 1.4 times main-am's, not
    // more than twice, while both exceed two bare DMA one-ways (one failing
    // check). This pin moves only on purpose, when the model changes.
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    let verdicts: Vec<&str> = report.lines().filter(|l| l.starts_with("claim 1:")).collect();
    assert_eq!(verdicts.len(), 1, "{report}");
    assert_eq!(report.lines().filter(|l| l.starts_with("claim ")).count(), 1, "{report}");
    let line = verdicts[0];
    assert!(line.starts_with("claim 1: not supported - "), "pinned not supported: {line}");
    assert_eq!(line.matches("FAILS: ").count(), 1, "{line}");
    assert!(stdout.lines().any(|l| l == line), "{stdout}");
    assert!(report.contains("## Table 1 as measured"), "{report}");

    // A record regenerates from itself alone, the DMA time measured again.
    let record = d.join("runs").join("coproc-am-r0.json");
    let rerun = finegrain(&["rerun", record.to_str().unwrap()]);
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    assert!(String::from_utf8_lossy(&rerun.stdout).contains("identical"), "{}", String::from_utf8_lossy(&rerun.stdout));
    let _ = std::fs::remove_dir_all(&d);
}
