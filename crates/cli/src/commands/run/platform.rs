//! Where `finegrain run` runs: the one place that turns `--platform` into
//! the simulator, threads of this process, or this process's node of a
//! cluster of processes (launching them first when no launcher did).

use anyhow::{bail, Result};
use finegrain_apps::RtPlatform;
use finegrain_rt::NodeEnv;
use finegrain_study::run::RunOptions;

/// Runs `body` on the platform `o` names: None for the simulator, or
/// where on the native runtime. A node process of shm or mpi started with
/// no launcher around it launches the whole run (this same command once
/// per node) instead.
pub fn on_platform<O: RunOptions>(o: &O, body: impl FnOnce(Option<RtPlatform<'_>>) -> Result<()>) -> Result<()> {
    match o.common().platform.as_deref().unwrap_or("sim") {
        "sim" => body(None),
        "native" => body(Some(RtPlatform::Native)),
        "shm" => match NodeEnv::from_env().map_err(anyhow::Error::msg)? {
            Some(env) => body(Some(RtPlatform::Shm(env))),
            None => launch_self(o.native_nodes("shm")?),
        },
        #[cfg(feature = "mpi")]
        "mpi" => {
            if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() {
                return launch_mpi(o.native_nodes("mpi")?);
            }
            let env = finegrain_rt::MpiEnv::init(o.mpi_threads()?).map_err(anyhow::Error::msg)?;
            body(Some(RtPlatform::Mpi(&env)))
        }
        other => bail!(
            "invalid platform = {other}: allowed sim, native, shm{}",
            if cfg!(feature = "mpi") { ", mpi" } else { " (mpi: not built in; build with the mpi feature)" }
        ),
    }
}

/// This same command as the ranks of a one-host MPI job (see
/// `finegrain_rt::processes::launch::mpirun`).
#[cfg(feature = "mpi")]
fn launch_mpi(nodes: u32) -> Result<()> {
    let program = std::env::current_exe().map_err(|e| anyhow::anyhow!("finding this program to launch it: {e}"))?;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let launched = finegrain_rt::processes::launch::mpirun(nodes, program.as_os_str(), &args);
    crate::commands::launch::ended(launched.map_err(anyhow::Error::msg)?)
}

/// This same command once per node of the run, sharing memory.
fn launch_self(nodes: u32) -> Result<()> {
    let program = std::env::current_exe().map_err(|e| anyhow::anyhow!("finding this program to launch it: {e}"))?;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    crate::commands::launch::launch(nodes, program.into_os_string(), args)
}
