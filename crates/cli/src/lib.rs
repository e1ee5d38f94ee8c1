//! The `finegrain` command line, as a library: experiment files, parallel
//! sweeps, figures, reports and benchmarks. `main.rs` only parses
//! arguments and calls in here.

pub mod bench;
pub mod experiment;
pub mod fetch_add_run;
pub mod figures;
pub mod native_bench;
pub mod pdq_study;
pub mod progress;
pub mod report;
pub mod rerun;
pub mod scheduling;
pub mod sweep;
