//! Where `finegrain run` runs: the one place that turns `--platform` into
//! the simulator, threads of this process, or this process's node of a
//! cluster of processes (launching them first when no launcher did). The
//! runtime detects which (`finegrain_rt::Placement::detect`).

use anyhow::{bail, Result};
use finegrain_rt::{Placement, Start};
use finegrain_study::run::RunOptions;

/// Runs `body` on the platform `o` names: None for the simulator, or
/// where on the native runtime. A node process of shm or mpi started with
/// no launcher around it launches the whole run (this same command once
/// per node) instead, its configuration checked here once rather than by
/// every node.
pub fn on_platform<O: RunOptions>(o: &O, body: impl FnOnce(Option<Placement<'_>>) -> Result<()>) -> Result<()> {
    let platform = o.common().platform.as_deref().unwrap_or("sim");
    if platform == "sim" {
        return body(None);
    }
    let mut mpi = None;
    let threads = || o.mpi_threads().map_err(|e| format!("{e:#}"));
    match Placement::detect(platform, threads, &mut mpi).map_err(anyhow::Error::msg)? {
        Some(Start::Here(on)) => body(Some(on)),
        Some(Start::Launch(how)) => {
            let nodes = o.native_nodes(platform)?;
            crate::commands::launch::ended(how.run(nodes).map_err(anyhow::Error::msg)?)
        }
        None => bail!("invalid platform = {platform}: allowed sim, {}", Placement::NAMES),
    }
}
