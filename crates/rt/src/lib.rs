//! finegrain-rt: the native runtime.
//!
//! A cluster of nodes in one process, each node a group of threads pinned to
//! cores where possible, active messages moved through single-producer
//! single-consumer rings of cache-line slots, and the Single, Fixed,
//! Floating and Coprocessor policies run on real threads. Applications are
//! the same `Proc`-generic code the simulator runs.
//!
//! # The co-processor policy natively
//!
//! `coprocessor:optimized` and `coprocessor:coproc-am` give each node, beside
//! its one main (compute) thread, a progress thread standing for the
//! communication co-processor: it serves the node's messages and runs the
//! handlers the library puts on the co-processor, marked with
//! [`finegrain_core::LibraryOp`] (optimized: Split-C's gets, puts, stores and
//! bookkeeping; coproc-am: every handler but atomic functions). The rest, a
//! user's atomic functions and (under optimized) unmarked user handlers, is
//! forwarded to the main thread, which runs it at its polls, waits and
//! sends, so atomic functions stay atomic with respect to its computation.
//! `coprocessor:main-am` has no progress thread: the main thread handles
//! everything, as under Single. The threads are named `fg-n{node}-t{i}`, the
//! main thread `t0` and the progress thread `t1`; thread counts
//! ([`RtConfig::threads_per_node`]) include the progress thread on every
//! transport, so a run of N nodes under optimized has 2N threads (on a
//! two-core host, oversubscribed from two nodes on).
//!
//! The runtime is built in layers, after UCX's:
//! - `transport/`: moving messages between threads and nodes behind the
//!   `Transport` trait: the in-process rings, their message codec and the
//!   ordered spill; the same rings in memory shared between processes; MPI;
//! - `dispatch/`: who handles which message: the serial drain by the acting
//!   protocol processor, and the keyed (PDQ) queue with its spin lock;
//! - `notify/`: how a node notices a message: polling, parking, signal
//!   interrupts ([`interrupt`] is its public part);
//! - `runtime/`: the threads, which compose the three, and [`run`];
//! - [`processes`]: nodes as OS processes, one process platform whichever
//!   transport joins them (shared memory between the processes of one
//!   host, MPI ranks with the `mpi` feature), and the launchers that start
//!   them; [`Placement`] says where a run's nodes are, from the
//!   environment;
//! - `os`: the operating-system helpers they share.
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
//! let (_p, _c) = finegrain_rt::transport::ring::ring(0); // not public either
//! ```
//! ```compile_fail
//! use finegrain_rt::codec::push_message; // not public: 5 arguments lose the 5th
//! ```

pub mod clock;
pub mod config;
mod dispatch;
mod notify;
mod os;
mod placement;
mod platform;
#[cfg(feature = "probe")]
pub mod probe;
pub mod processes;
mod runtime;
pub mod stats;
mod transport;

/// Interrupts for the Floating policy: the signal handler's installation
/// and what a bare signal costs. (Raising the signal, which must name a
/// thread still running, stays inside the runtime's notification layer.)
pub mod interrupt {
    pub use crate::notify::signal::{
        bare_signal_cost, current_thread, install, max_interrupt_signal, Installed, DEFAULT_INTERRUPT_SIGNAL,
    };
}

pub use config::RtConfig;
pub use os::{online_cores, pin_to};
pub use placement::{Launch, Placement, Start};
pub use platform::Native;
pub use processes::{MpiEnv, NodeEnv};
pub use runtime::{run, ReplyView, RtError, RtOutput, RtProc, STUCK_EXIT};
pub use stats::{RtStats, ThreadTimes};
pub use transport::codec::MAX_PAYLOAD;
