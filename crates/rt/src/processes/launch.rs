//! The launcher: starts a run's node processes on this host and watches
//! them. It makes the shared memory they map (an anonymous `memfd`,
//! inherited by every node process), tells each its node through the
//! environment, and waits:
//! - a node process that ends in failure (or is killed) gives the others
//!   about a second to stop by themselves (they notice within
//!   milliseconds), then the launcher kills what is left;
//! - an interrupt (SIGINT, Ctrl-C, or SIGTERM) to the launcher stops
//!   every node process: SIGTERM, then SIGKILL a second later;
//! - if the launcher itself dies, the kernel kills the node processes
//!   (`PR_SET_PDEATHSIG`), and with the last of them the shared memory.

use super::{ENV_FD, ENV_NODE, ENV_NODES};
use crate::transport::shm::create_memfd;
use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Most node processes one launcher starts.
pub const MAX_LAUNCH_NODES: u32 = 256;
/// How long the other node processes have to stop after one failed.
const STOP_GRACE: Duration = Duration::from_millis(1500);

/// The signal that interrupted the launcher (0: none yet).
static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_interrupt(sig: libc::c_int) {
    INTERRUPTED.store(sig, Ordering::Relaxed);
}

/// How a launched run ended.
#[derive(Debug)]
pub enum Launched {
    /// Every node process exited with status 0.
    Done,
    /// The first node process to fail, how, and the status the launcher
    /// should exit with.
    Failed { node: u32, how: String, code: i32 },
    /// The launcher was interrupted and stopped every node process.
    Interrupted { signal: i32 },
}

/// Starts `nodes` processes of `program args`, node `k` told so through
/// the environment, and waits for them.
pub fn launch(nodes: u32, program: &OsString, args: &[OsString]) -> Result<Launched, String> {
    if !(1..=MAX_LAUNCH_NODES).contains(&nodes) {
        return Err(format!("invalid node count {nodes}: the launcher starts 1..={MAX_LAUNCH_NODES} node processes"));
    }
    let fd = create_memfd()?;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        crate::os::install_handler(sig, on_interrupt)?;
    }
    let mut children = Vec::new();
    for k in 0..nodes {
        match spawn(program, args, fd, k, nodes) {
            Ok(c) => children.push(Some(c)),
            Err(e) => {
                stop_all(&mut children);
                return Err(format!("cannot start node {k} ({}): {e}", program.to_string_lossy()));
            }
        }
    }
    // The node processes hold the memory now; the launcher needs no copy.
    // SAFETY: `fd` is the memfd made above, not used again here.
    unsafe { libc::close(fd) };
    Ok(wait_all(&mut children))
}

fn spawn(program: &OsString, args: &[OsString], fd: i32, node: u32, nodes: u32) -> std::io::Result<Child> {
    let mut cmd = Command::new(program);
    cmd.args(args).env(ENV_FD, fd.to_string()).env(ENV_NODE, node.to_string()).env(ENV_NODES, nodes.to_string());
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes async-signal-safe system calls (prctl, signal).
    unsafe {
        cmd.pre_exec(|| {
            // Die with the launcher, whatever kills it.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The launcher's own interrupt handlers are not the child's.
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        })
    };
    cmd.spawn()
}

/// What an exit status says, in words.
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s} ({})", signal_name(s)),
        _ => "ended".into(),
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        _ => "a signal",
    }
}

/// Waits for every node process; the first failure decides the outcome.
fn wait_all(children: &mut [Option<Child>]) -> Launched {
    let mut outcome = Launched::Done;
    let mut failed_at: Option<Instant> = None;
    while children.iter().any(Option::is_some) {
        let sig = INTERRUPTED.load(Ordering::Relaxed);
        if sig != 0 {
            stop_all(children);
            return Launched::Interrupted { signal: sig };
        }
        let mut ended = Vec::new();
        for (k, slot) in children.iter_mut().enumerate() {
            let Some(child) = slot else { continue };
            let Ok(Some(status)) = child.try_wait() else { continue };
            *slot = None;
            ended.push((k as u32, status));
        }
        // Of the failures seen together, a killed node is the likely cause
        // of the others.
        ended.sort_by_key(|(_, s)| s.signal().is_none());
        if let Some((node, status)) = ended.into_iter().find(|(_, s)| !s.success()) {
            if matches!(outcome, Launched::Done) {
                let code = status.code().unwrap_or(128 + status.signal().unwrap_or(0));
                outcome = Launched::Failed { node, how: describe(status), code };
                failed_at = Some(Instant::now());
            }
        }
        if failed_at.is_some_and(|t| t.elapsed() > STOP_GRACE) {
            stop_all(children);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    outcome
}

/// Stops every node process still running: SIGTERM, then SIGKILL for
/// those that do not go within a second.
fn stop_all(children: &mut [Option<Child>]) {
    for child in children.iter().flatten() {
        // SAFETY: kill only sends a signal to our own child's pid, which
        // is not reaped yet (so not reused).
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    }
    let start = Instant::now();
    while children.iter().any(Option::is_some) && start.elapsed() < Duration::from_secs(1) {
        for slot in children.iter_mut() {
            if slot.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(Some(_)))) {
                *slot = None;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for slot in children.iter_mut() {
        if let Some(mut c) = slot.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
