//! `finegrain launch -n N -- COMMAND`: starts N node processes of a run on
//! this host (see `finegrain_rt::processes::launch`) and ends as the run
//! does: status 0 when every node succeeded, and otherwise an error line
//! naming the first node process that failed and how it ended (the node
//! itself says why on its own line).

use anyhow::{bail, Result};
use finegrain_rt::processes::launch::{self as rt_launch, Launched};
use std::ffi::OsString;

/// `finegrain launch`.
pub fn launch_command(nodes: u32, command: Vec<OsString>) -> Result<()> {
    let Some((program, args)) = command.split_first() else {
        bail!("invalid command: empty; allowed a program and its arguments after --")
    };
    launch(nodes, program.clone(), args.to_vec())
}

/// Launches `nodes` processes of `program args` and waits for them. A
/// failing node has said why on standard error itself; this adds only
/// what it could not (killed by a signal) and exits with its status.
pub fn launch(nodes: u32, program: OsString, args: Vec<OsString>) -> Result<()> {
    if !(1..=rt_launch::MAX_LAUNCH_NODES).contains(&nodes) {
        bail!(
            "invalid nodes = {nodes}: finegrain launch starts 1..={} node processes on one host",
            rt_launch::MAX_LAUNCH_NODES
        );
    }
    ended(rt_launch::launch(nodes, &program, &args).map_err(anyhow::Error::msg)?)
}

/// How a launched run ended, as this command ends: a node that said why
/// itself leaves only its status to pass on.
pub fn ended(launched: Launched) -> Result<()> {
    match launched {
        Launched::Done => Ok(()),
        Launched::Failed { node, how, .. } => bail!("node {node} {how}"),
        Launched::MpirunFailed { how, .. } => bail!("{how}"),
        Launched::Reported { code } => std::process::exit(code),
        Launched::Interrupted { signal } => {
            bail!("interrupted by signal {signal}: stopped every node process")
        }
    }
}
