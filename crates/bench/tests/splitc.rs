//! `finegrain bench splitc` measures every operation under both libraries
//! and prints them with their ratio (whatever the figures: speed is judged
//! from the table, not by a test).

use finegrain_bench::splitc::{splitc, splitc_table};
use finegrain_bench::Effort;

#[test]
fn every_operation_is_measured_under_both_libraries_and_tabled() {
    let tiny = Effort { warmup: 200, warmup_ms: 0, per_round: 400, rounds: 1 };
    let b = splitc(tiny).unwrap();
    let ops: Vec<&str> = b.rows.iter().map(|r| r.op).collect();
    assert_eq!(ops, ["get", "put", "store", "store4", "bulk_get", "bulk_put"]);
    for r in &b.rows {
        assert!(r.main_am.samples >= 5 && r.optimized.samples >= 5, "{r:?}");
        assert!(r.main_am.median > 0.0 && r.optimized.median > 0.0, "{r:?}");
        assert!(r.main_am.p10 <= r.main_am.median && r.main_am.median <= r.main_am.p90, "{r:?}");
        assert_eq!(r.mpi_rma.is_some(), b.mpi_rma_absent.is_none(), "{r:?}");
    }
    assert_eq!((b.main_am_threads, b.optimized_threads), (2, 4));
    let text = splitc_table(&b);
    assert!(text.contains("opt/main") && text.contains("OpenSHMEM: absent ("), "{text}");
    assert!(text.contains("MPI-3 RMA: "), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains(" ns ") || l.contains(" MB/s ")).count(), 6, "{text}");
}
