//! The MPI rank of a build without MPI (the `mpi` feature off): the same
//! API, which no process can enter. [`MpiEnv::init`] says so, so that
//! everything above the runtime compiles and words its errors the same
//! way with or without MPI.

use crate::config::RtConfig;
use crate::runtime::{RtError, RtOutput};
use crate::stats::RtStats;
use finegrain_core::{AmError, HandlerTable, Ran, Workload};

/// Why there is no MPI rank in this build.
pub(crate) const NOT_BUILT_IN: &str = "mpi: not built in; build with the mpi feature";

/// No value of it exists: an MPI rank cannot be started in this build.
#[derive(Clone, Copy)]
enum Absent {}

/// This process's MPI rank: in a build without MPI, one that cannot be
/// made (see `MpiEnv::init`).
pub struct MpiEnv {
    pub rank: u32,
    pub ranks: u32,
    pub multiple: bool,
    absent: Absent,
}

impl MpiEnv {
    /// Refuses: this build has no MPI.
    pub fn init(_threads_per_node: u32) -> Result<MpiEnv, String> {
        Err(NOT_BUILT_IN.into())
    }

    pub fn send_bytes_to(&self, _rank: u32, _bytes: &[u8]) {
        match self.absent {}
    }

    pub fn try_receive_bytes(&self) -> Option<(u32, Vec<u8>)> {
        match self.absent {}
    }

    pub fn receive_bytes_from(&self, _rank: u32) -> Vec<u8> {
        match self.absent {}
    }

    pub(crate) fn run<W: Workload>(
        &self,
        _config: &RtConfig,
        _workload: &W,
    ) -> Result<Ran<W::Output, RtStats>, RtError> {
        match self.absent {}
    }

    pub(crate) fn run_node<R, F, Fut>(
        &self,
        _config: &RtConfig,
        _handlers: &HandlerTable,
        _spawn: F,
    ) -> Result<RtOutput<R>, RtError>
    where
        R: Send,
        F: Fn(crate::RtProc) -> Fut + Sync,
        Fut: std::future::Future<Output = Result<R, AmError>>,
    {
        match self.absent {}
    }
}
