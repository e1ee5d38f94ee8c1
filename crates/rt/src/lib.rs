//! finegrain-rt: the native runtime.

pub mod ring;
