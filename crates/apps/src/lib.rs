//! finegrain-apps: workloads written once against the [`Proc`] API, so the
//! same code runs in the simulator and on the native runtime.
//!
//! [`Proc`]: finegrain_core::Proc

pub mod fetch_add;
pub mod micro;
