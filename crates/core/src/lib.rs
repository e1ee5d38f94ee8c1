//! finegrain-core: the vocabulary every finegrain platform shares.
//!
//! Nothing here knows what time it is or starts a thread. The simulator
//! (`finegrain-sim`) and the native runtime interpret these types; the
//! applications in `finegrain-apps` are written against [`Proc`] and
//! [`HandlerCtx`] only, as [`Workload`]s, so one workload runs on every
//! [`Platform`]. [`RunConfig`] holds the run settings every platform
//! shares.

#![forbid(unsafe_code)]

pub mod config;
pub mod error;
pub mod handler;
pub mod ids;
pub mod keymap;
pub mod memory;
pub mod message;
pub mod pdq;
pub mod proc_api;
pub mod summary;
pub mod work;
pub mod workload;

pub use config::{
    mix_seed, ConfigError, CoprocLibrary, CoprocessorParams, Discipline, Dispatch, DmaCalibration, Effects,
    MachineConfig, Notification, PdqParams, Policy, PpKind, Relinquish, RoleArbitration, RunConfig, ServingKind,
    ServingSystem, Topology,
};
pub use error::AmError;
pub use handler::{check_send_target, HandlerCtx, HandlerFn, HandlerInfo, HandlerTable, LibraryOp, ReplyGuard};
pub use ids::{HandlerId, NodeId, ThreadId};
pub use keymap::KeyMap;
pub use memory::{Access, Region};
pub use message::{Args, Message, MsgKind, Payload, Reply, SyncKey, MAX_ARGS};
pub use pdq::{Dispatched, InService, Pdq};
pub use proc_api::Proc;
pub use summary::{Clock, RunSummary};
pub use work::Work;
pub use workload::{Platform, Ran, Workload, WorkloadError};
