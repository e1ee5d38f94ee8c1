//! finegrain-bench: the benchmarks behind `finegrain bench`, kept out of
//! the runtime's library.
//!
//! - [`measure`]: native measurements through the runtime's public
//!   interface (active-message ping-pong and rate between two pinned
//!   threads, the cache-line floors, a crossbeam-channel ping-pong, the
//!   interrupt cost);
//! - [`native`]: the tables `bench pingpong / rate / interrupt / pdq`
//!   print, with the Open MPI and UCX peers (`peers/mpi_pingpong.c`) run
//!   side by side; the runtime's internals are measured through its
//!   `probe` feature;
//! - [`platforms`]: the ping-pong with its nodes in two processes (shared
//!   memory, MPI ranks) beside the in-process figure and raw MPI;
//! - [`splitc`]: Split-C's operations under the co-processor policy's
//!   main-am and optimized libraries side by side, beside raw MPI-3 RMA
//!   (`peers/mpi_rma.c`);
//! - [`sim`]: simulated messages and events per wall second.
//!
//! Each figure is a median over rounds; targets are stated as ratios
//! measured in the same run.

#![forbid(unsafe_code)]

pub mod measure;
pub mod native;
pub mod platforms;
pub mod sim;
pub mod sim_paper;
pub mod splitc;

pub use finegrain_rt::probe::Effort;

/// A note on standard error for the user (a peer that is unavailable, a
/// run that is oversubscribed). It changes no result, so if standard error
/// cannot be written the note is dropped.
pub fn note(args: std::fmt::Arguments) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "note: {args}");
}
