//! The quick coprocessor study: a row of results.csv per run, one verdict
//! line per claim (pinned), the rerun section, and records that rerun.

mod common;

use common::{failing_rows, finegrain, shown_verdict, temp_dir};

/// How many rows of a verdict's table are notes (they decide nothing).
fn notes(rows: &[String]) -> usize {
    rows.iter().filter(|r| r.starts_with("| note |")).count()
}

/// The record files a study wrote, sorted.
fn records(d: &std::path::Path) -> Vec<String> {
    let mut r: Vec<String> = std::fs::read_dir(d.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    r.sort();
    r
}

#[test]
fn quick_coprocessor_study_writes_a_row_per_run_and_pins_its_claims() {
    let d = temp_dir("coprocessor-study");
    let out = finegrain(&["reproduce", "coprocessor", "--quick", "--out", d.to_str().unwrap()]);
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
    assert_eq!(rows, records(&d), "a row of results.csv per run");
    // Quick grid, one replicate: 2 ping-pongs, 5 primitives x 3 libraries,
    // 14 programs x 2 libraries, and every main-am run again with free
    // sending threads (1 + 5 + 14).
    assert_eq!(rows.len(), 2 + 15 + 28 + 20, "{csv}");
    for id in ["ping-pong-coproc-am-r0.json", "get-optimized-r0.json", "wator-main-am-free-send-thread-r0.json"] {
        assert!(rows.iter().any(|r| r == id), "no {id}: {rows:?}");
    }

    // One verdict line per claim, in the report and on stdout. Pinned to
    // what the data give (this pin moves only on purpose, when the model
    // changes): none of the three supported, main-am's slow sending
    // threads the cause of claim 1 and most of claim 2. Re-pinned after
    // the blind re-read of the tests (2026-12-07, docs/claim-tests-reread.md):
    // claim 2's get and store need a ratio band now, claim 3 bounds
    // wator's gain. Then ipps96's sending-, dispatch- and completion-thread
    // costs and link rate were fitted to Figure 3: main-am's 32-byte bulk
    // store falls below optimized's, and optimized's bandwidth lead grows.
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    for (claim, fails) in [(1, 1), (2, 4), (3, 6)] {
        let (line, rows) = shown_verdict(&report, &format!("claim {claim}"));
        assert!(line.starts_with(&format!("**claim {claim}: not supported** ({fails} of ")), "{line}");
        assert_eq!(failing_rows(&rows), fails, "{}", rows.join("\n"));
        // The failing rows come first.
        assert!(rows[..fails].iter().all(|r| r.starts_with("| fails |")), "{}", rows.join("\n"));
        // The terminal's verdict table: claim, verdict, checks failing.
        let row = stdout.lines().find(|l| l.starts_with(&format!("claim {claim} "))).expect("a verdict row");
        let cells: Vec<&str> = row.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(
            cells[1..3],
            ["not supported".to_string(), format!("{fails} of {} fail", rows.len() - notes(&rows))]
        );
    }
    // Claims 1 and 2 compare Figure 3's primitives, the fit's targets.
    for basis in ["| 1 | ", "| 2 | "] {
        let row = report.lines().find(|l| l.starts_with(basis)).expect("a summary row");
        assert!(row.ends_with("| calibrated |"), "{row}");
    }
    assert!(report.lines().any(|l| l.starts_with("| 3 | ") && l.ends_with("| predicted |")), "{report}");
    // The estimates the verdicts rest on, from the preset's ledger: the
    // fitted unknowns are not among them.
    let estimates = report.split("## The estimates these verdicts rest on").nth(1).expect("an estimates section");
    let estimates = estimates.split("\n## ").next().unwrap();
    assert!(estimates.contains("| `coprocessor.handler_instructions` |"), "{estimates}");
    assert!(!estimates.contains("send_thread_instructions"), "a fitted parameter listed: {estimates}");
    for heading in ["Table 1 as measured", "Figure 3 as measured", "Table 2 as measured", "What the reruns say"] {
        assert!(report.contains(&format!("## {heading}")), "no {heading}: {report}");
    }
    assert!(report.contains("**with free sending threads, claim 1: supported**"), "{report}");

    // Records regenerate from themselves alone: a ping-pong (the DMA time
    // measured again), a primitive and a program.
    for id in ["ping-pong-coproc-am-r0", "store-optimized-r0", "radix-main-am-free-send-thread-r0"] {
        let record = d.join("runs").join(format!("{id}.json"));
        let rerun = finegrain(&["rerun", record.to_str().unwrap()]);
        assert!(rerun.status.success(), "{id}: {}", String::from_utf8_lossy(&rerun.stderr));
        let said = String::from_utf8_lossy(&rerun.stdout);
        assert!(said.contains("identical"), "{id}: {said}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
