//! finegrain-rt: the native runtime.
//!
//! A cluster of nodes in one process, each node a group of threads pinned to
//! cores where possible, active messages moved through single-producer
//! single-consumer rings of cache-line slots, and the Single, Fixed and
//! Floating policies run on real threads. Applications are the same
//! `Proc`-generic code the simulator runs.

pub mod bench;
pub mod clock;
pub mod codec;
pub mod config;
pub mod interrupt;
mod keyed;
pub mod ring;
mod runtime;
mod spin;
pub mod stats;

pub use config::RtConfig;
pub use runtime::{run, ReplyView, RtError, RtOutput, RtProc};
pub use stats::{RtStats, ThreadTimes};
