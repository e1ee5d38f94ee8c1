//! finegrain-rt: the native runtime.
//!
//! A cluster of nodes in one process, each node a group of threads pinned to
//! cores where possible, active messages moved through single-producer
//! single-consumer rings of cache-line slots, and the Single, Fixed and
//! Floating policies run on real threads. Applications are the same
//! `Proc`-generic code the simulator runs.

//!
//! The rings and the message codec are internal: they trust their callers
//! (the runtime checks every message and the ring size first) and would
//! panic on, or silently mangle, what those checks refuse.
//!
//! ```
//! assert_eq!(finegrain_rt::MAX_PAYLOAD, 4096);
//! ```
//! ```compile_fail
//! let (_p, _c) = finegrain_rt::ring::ring(0); // not public: panics on 0
//! ```
//! ```compile_fail
//! use finegrain_rt::codec::push_message; // not public: 5 arguments lose the 5th
//! ```

pub mod bench;
pub mod clock;
mod codec;
pub mod config;
pub mod interrupt;
mod keyed;
mod ring;
mod runtime;
mod spin;
pub mod stats;

pub use codec::MAX_PAYLOAD;
pub use config::RtConfig;
pub use runtime::{run, ReplyView, RtError, RtOutput, RtProc};
pub use stats::{RtStats, ThreadTimes};
