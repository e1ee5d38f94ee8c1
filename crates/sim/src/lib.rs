//! finegrain-sim: a deterministic discrete-event simulator of clusters of
//! SMP nodes.
//!
//! Time is integer processor cycles; events are ordered by (time, sequence
//! number); application threads are async tasks polled by the engine. The
//! same configuration and seed give the same statistics, bit for bit.
//!
//! ```
//! use finegrain_core::{MachineConfig, Policy, Topology, HandlerTable, Proc};
//! use finegrain_sim::{simulate, SimConfig};
//!
//! let cfg = SimConfig::new(
//!     MachineConfig::load("hpca97").unwrap(),
//!     Topology { nodes: 2, procs_per_node: 1 },
//!     Policy::Single,
//!     1,
//! );
//! let out = simulate(&cfg, &HandlerTable::new(), |p| async move {
//!     p.work(1000).await;
//!     Ok(p.node().0)
//! })
//! .unwrap();
//! assert_eq!(out.results, vec![0, 1]);
//! assert!(out.stats.sim_cycles >= 1000);
//! ```
//!
//! The engine (`engine/`) runs components behind two seams: the network
//! interface (`ni/`, the `NiModel` trait, with the CM-5-like NI) and the
//! notification scheme (`notify/`, the `Notify` trait, with interrupts);
//! the memory system (`memory/`: address map, cache model, sampling, node
//! memory) and the bus (`bus.rs`) are what both act on.

#![forbid(unsafe_code)]

mod bus;
mod config;
pub mod coproc;
mod dispatch;
mod engine;
mod event;
mod memory;
mod ni;
mod notify;
mod platform;
pub mod progress;
pub mod stats;
mod thread;
pub mod timeline;

pub use config::SimConfig;
pub use engine::cycles_consistent;
pub use platform::Simulator;
pub use stats::{ProcRole, RunStats};
pub use thread::{mix_seed, SimProc};

use finegrain_core::{AmError, ConfigError, HandlerTable, WorkloadError};
use std::future::Future;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum SimError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Handler(AmError),
    #[error("node {node} thread {thread} failed: {error}")]
    App { node: u32, thread: u32, error: AmError },
    /// The thread's future (or the spawn call making it) panicked; the
    /// panic's message, on one line.
    #[error("node {node} thread {thread} panicked: {message}")]
    AppPanic { node: u32, thread: u32, message: String },
    /// The workload's own set-up or answer check failed.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error("deadlock: {0}")]
    Deadlock(String),
    #[error("simulator invariant broken (a bug in finegrain-sim): {0}")]
    Invariant(String),
    #[error("an activity of {duration} cycles at cycle {now} would take the simulated clock past 2^62 cycles; allowed: work, idle and charged cycles that end before it")]
    ClockLimit { now: u64, duration: u64 },
}

/// What a simulation returns: each thread's result (node-major) and the
/// run's statistics.
#[derive(Debug)]
pub struct SimOutput<T> {
    pub results: Vec<T>,
    pub stats: RunStats,
}

/// Runs one simulation: `spawn` is called once per compute thread with its
/// [`SimProc`] and returns the thread's future.
pub fn simulate<'a, T, F, Fut>(cfg: &SimConfig, handlers: &HandlerTable, spawn: F) -> Result<SimOutput<T>, SimError>
where
    F: FnMut(SimProc) -> Fut,
    Fut: Future<Output = Result<T, AmError>> + 'a,
{
    let engine = engine::Engine::new(cfg, handlers, spawn)?;
    let (results, stats) = engine.run()?;
    Ok(SimOutput { results, stats })
}
