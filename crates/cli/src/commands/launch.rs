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

/// Launches `nodes` processes of `program args` and waits for them.
pub fn launch(nodes: u32, program: OsString, args: Vec<OsString>) -> Result<()> {
    ended(rt_launch::launch(nodes, &program, &args).map_err(anyhow::Error::msg)?)
}

/// How a launched run ended, as this command ends: a node process that
/// said why itself leaves only its status to pass on.
pub fn ended(launched: Launched) -> Result<()> {
    if let Some(error) = launched.error() {
        bail!(error)
    }
    match launched {
        Launched::Reported { code } => std::process::exit(code),
        _ => Ok(()),
    }
}
