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
//!
//! [`mpirun`] is the same for MPI ranks on this host: it starts Open MPI's
//! `mpirun` (restricted to shared memory and loopback, see
//! [`ONE_HOST_MCA`]) and stands between it and the user's signals.

use super::{ENV_FD, ENV_NODE, ENV_NODES};
use crate::transport::shm::create_memfd;
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::ChildStderr;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
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
    /// A node process failed and said why on standard error itself (it
    /// exited with [`REPORTED_STATUS`] or [`crate::STUCK_EXIT`]): the
    /// launcher has nothing to add but the status to exit with.
    Reported { code: i32 },
    /// The launcher was interrupted and stopped every node process.
    Interrupted { signal: i32 },
    /// mpirun failed, how (no rank said why: it could not start them, or
    /// one was killed), and the status to exit with.
    MpirunFailed { how: String, code: i32 },
}

impl Launched {
    /// Why the launched run failed, where no node process said why itself
    /// (None when every one succeeded, or when the one that failed printed
    /// its own line: [`Launched::Reported`]).
    pub fn error(&self) -> Option<String> {
        match self {
            Launched::Done | Launched::Reported { .. } => None,
            Launched::Failed { node, how, .. } => Some(format!("node {node} {how}")),
            Launched::MpirunFailed { how, .. } => Some(how.clone()),
            Launched::Interrupted { signal } => {
                Some(format!("interrupted by signal {signal}: stopped every node process"))
            }
        }
    }
}

/// The status of a node process (or an MPI job) that printed its error
/// line: the command line's status for an error it reports.
pub const REPORTED_STATUS: i32 = 2;

/// Whether a process ending with `code` has said why itself.
fn reported(code: Option<i32>) -> bool {
    code == Some(REPORTED_STATUS) || code == Some(crate::STUCK_EXIT)
}

/// Starts `nodes` processes of `program args`, node `k` told so through
/// the environment, and waits for them.
pub fn launch(nodes: u32, program: &OsStr, args: &[OsString]) -> Result<Launched, String> {
    if !(1..=MAX_LAUNCH_NODES).contains(&nodes) {
        return Err(format!(
            "invalid nodes = {nodes}: the launcher starts 1..={MAX_LAUNCH_NODES} node processes on one host"
        ));
    }
    let fd = create_memfd()?;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        crate::os::install_handler(sig, on_interrupt)?;
    }
    let mut children = Vec::new();
    let errors = Arc::new(Mutex::new(Vec::new()));
    let mut readers = Vec::new();
    for k in 0..nodes {
        match spawn(program, args, fd, k, nodes) {
            Ok(mut c) => {
                readers.extend(c.stderr.take().map(|e| read_errors(e, errors.clone())));
                children.push(Some(c));
            }
            Err(e) => {
                stop_all(&mut children);
                return Err(format!("cannot start node {k} ({}): {e}", program.to_string_lossy()));
            }
        }
    }
    // The node processes hold the memory now; the launcher needs no copy.
    // SAFETY: `fd` is the memfd made above, not used again here.
    unsafe { libc::close(fd) };
    let launched = wait_all(&mut children);
    readers.into_iter().flatten().for_each(|r| drop(r.join()));
    let lines = std::mem::take(&mut *errors.lock().unwrap_or_else(|e| e.into_inner()));
    let text: String = one_line_per_cause(&lines).iter().map(|l| format!("{l}\n")).collect();
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
    Ok(launched)
}

/// Reads a node process's standard error: its error lines are kept for
/// [`one_line_per_cause`], anything else passes through at once.
fn read_errors(from: ChildStderr, errors: Arc<Mutex<Vec<String>>>) -> Option<JoinHandle<()>> {
    let read = move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            if line.starts_with("error: ") {
                errors.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            } else {
                let _ = std::io::stderr().lock().write_all(format!("{line}\n").as_bytes());
            }
        }
    };
    std::thread::Builder::new().name("fg-launch-err".into()).stack_size(64 << 10).spawn(read).ok()
}

/// The error lines of a run's node processes, one per cause. A node that
/// stopped because another failed says `node K failed[: why]`: an echo,
/// dropped when a line of the cause itself is there. Lines that differ
/// only in their numbers (the same fault met at many nodes) are one
/// cause, said once with how many nodes hit it.
pub(crate) fn one_line_per_cause(lines: &[String]) -> Vec<String> {
    let echo = |l: &str| {
        l.strip_prefix("error: node ")
            .and_then(|r| r.split_once(' '))
            .is_some_and(|(k, rest)| k.parse::<u32>().is_ok() && (rest == "failed" || rest.starts_with("failed: ")))
    };
    let causes: Vec<&String> = if lines.iter().any(|l| !echo(l)) {
        lines.iter().filter(|l| !echo(l)).collect()
    } else {
        lines.iter().collect()
    };
    let mut groups: Vec<(String, &String, usize)> = Vec::new();
    for l in causes {
        let key = without_numbers(l);
        match groups.iter_mut().find(|(k, _, _)| *k == key) {
            Some(g) => g.2 += 1,
            None => groups.push((key, l, 1)),
        }
    }
    groups.into_iter().map(|(_, l, n)| if n == 1 { l.clone() } else { format!("{l} ({n} nodes)") }).collect()
}

/// `line` with each run of digits as `#`.
fn without_numbers(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('#') {
            out.push('#');
        }
    }
    out
}

fn spawn(program: &OsStr, args: &[OsString], fd: i32, node: u32, nodes: u32) -> std::io::Result<Child> {
    let mut cmd = Command::new(program);
    cmd.args(args).env(ENV_FD, fd.to_string()).env(ENV_NODE, node.to_string()).env(ENV_NODES, nodes.to_string());
    cmd.stderr(std::process::Stdio::piped());
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
                outcome = if reported(status.code()) {
                    Launched::Reported { code }
                } else {
                    Launched::Failed { node, how: describe(status), code }
                };
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

/// Open MPI settings of a job on one host: ranks talk through shared
/// memory (`vader`, and `self` within a rank), so they open no TCP port;
/// mpirun's own out-of-band channel uses loopback only, over IPv4. (Open
/// MPI 4's mpirun still binds that channel's socket to the wildcard
/// address; with loopback its only interface, it carries nothing else.)
pub const ONE_HOST_MCA: [(&str, &str); 4] = [
    ("btl", "self,vader"),
    ("btl_tcp_if_include", "lo"),
    ("oob_tcp_if_include", "lo"),
    ("oob_tcp_disable_ipv6_family", "1"),
];

/// The MCA parameter that places the ranks' shared-memory segments.
const VADER_DIR: &str = "btl_vader_backing_directory";

/// How long mpirun has to end its ranks after a forwarded signal before
/// the launcher kills them itself.
const MPIRUN_GRACE: Duration = Duration::from_secs(3);

/// The `mpirun` command that runs `program args` as `ranks` ranks of this
/// host: oversubscribed if need be, allowed as root, its helpful banners
/// off (each rank says what went wrong in one line), restricted to shared
/// memory and loopback ([`ONE_HOST_MCA`]), the ranks' shared-memory
/// segments in `shm_dir`.
pub fn mpirun_command(ranks: u32, program: &OsStr, args: &[OsString], shm_dir: &Path) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(["-np", &ranks.to_string(), "--oversubscribe", "--quiet"]);
    for (name, value) in ONE_HOST_MCA {
        cmd.args(["--mca", name, value]);
    }
    cmd.args(["--mca", VADER_DIR]).arg(shm_dir);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd.arg(program).args(args).stdin(std::process::Stdio::null());
    cmd
}

/// Runs `program args` as `ranks` MPI ranks of this host under mpirun
/// ([`mpirun_command`]) and waits for the job. SIGINT or SIGTERM to the
/// launcher goes to mpirun (which ends its ranks); ranks still there after
/// [`MPIRUN_GRACE`] are killed. The ranks' shared-memory segments live in
/// a directory of the launcher's own under /dev/shm, removed at the end
/// however the job ended.
pub fn mpirun(ranks: u32, program: &OsStr, args: &[OsString]) -> Result<Launched, String> {
    let dir = ShmDir::make()?;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        crate::os::install_handler(sig, on_interrupt)?;
    }
    let mut cmd = mpirun_command(ranks, program, args, &dir.0);
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes async-signal-safe system calls (setpgid, prctl, signal).
    unsafe {
        cmd.pre_exec(|| {
            // A group of its own, so the launcher decides what reaches it.
            if libc::setpgid(0, 0) != 0 || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        })
    };
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "mpirun not found on PATH: platform mpi runs its ranks under Open MPI's mpirun (Debian: apt-get \
                 install openmpi-bin), or start them yourself with mpirun -np {ranks} {} ...",
                Path::new(program).file_name().map_or("finegrain".into(), |n| n.to_string_lossy())
            ))
        }
        Err(e) => return Err(format!("cannot start mpirun: {e}")),
    };
    Ok(wait_mpirun(&mut child))
}

/// Waits for mpirun, forwarding an interrupt to its process group.
fn wait_mpirun(child: &mut Child) -> Launched {
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Launched::Done,
            Ok(Some(status)) if reported(status.code()) => {
                return Launched::Reported { code: status.code().unwrap_or(REPORTED_STATUS) }
            }
            Ok(Some(status)) => {
                let code = status.code().unwrap_or(128 + status.signal().unwrap_or(0));
                return Launched::MpirunFailed { how: format!("mpirun {}", describe(status)), code };
            }
            Ok(None) => {}
            Err(e) => return Launched::MpirunFailed { how: format!("mpirun could not be waited for: {e}"), code: 1 },
        }
        let sig = INTERRUPTED.load(Ordering::Relaxed);
        if sig != 0 {
            stop_job(child, sig);
            return Launched::Interrupted { signal: sig };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Forwards `sig` to mpirun's process group and waits for the job to end;
/// what is left after [`MPIRUN_GRACE`] is killed.
fn stop_job(child: &mut Child, sig: i32) {
    let pid = child.id() as libc::pid_t;
    // mpirun puts each rank in a process group of its own: note them now,
    // while they are still its children.
    let ranks = descendants(pid as u32);
    // SAFETY: kill only sends a signal, to the group our unreaped child
    // leads (its pid is not reused while we have not waited for it).
    unsafe { libc::kill(-pid, sig) };
    let start = Instant::now();
    while start.elapsed() < MPIRUN_GRACE {
        if matches!(child.try_wait(), Ok(Some(_))) && ranks.iter().all(|&r| !running(r)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: as above; the ranks are checked to be still there first
    // (a pid that has ended could be reused by then, rarely; SIGKILL only).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    for r in ranks.into_iter().filter(|&r| running(r)) {
        // SAFETY: as above.
        unsafe { libc::kill(r as libc::pid_t, libc::SIGKILL) };
    }
    let _ = child.wait();
}

/// The processes below `pid` (its children, theirs, and so on), read
/// from /proc: what a launcher must make sure has ended.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else { continue };
        for t in tasks.flatten() {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// Whether process `pid` exists and has not ended (a zombie has).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

/// A directory of this launcher's own under /dev/shm for the ranks'
/// shared-memory segments, removed with everything in it when dropped.
struct ShmDir(PathBuf);

impl ShmDir {
    fn make() -> Result<ShmDir, String> {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() { base.to_path_buf() } else { std::env::temp_dir() };
        let dir = base.join(format!("finegrain-mpi-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("making {} for the ranks' shared memory: {e}", dir.display()))?;
        Ok(ShmDir(dir))
    }
}

impl Drop for ShmDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_says_each_cause_once_with_how_many_nodes_hit_it() {
        let lines: Vec<String> = [
            "error: node 3 thread 0 failed: no reply from node 4 within the progress timeout of 10000 ms",
            "error: node 3 failed",
            "error: node 7 thread 1 failed: no reply from node 8 within the progress timeout of 10000 ms",
            "error: node 3 failed: node 3 thread 0 failed: no reply from node 4 within the progress timeout of 10000 ms",
            "error: node 9 (process 1234) died before the run ended",
            "error: node 9 (process 1234) died before the run ended",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            one_line_per_cause(&lines),
            [
                "error: node 3 thread 0 failed: no reply from node 4 within the progress timeout of 10000 ms (2 nodes)",
                "error: node 9 (process 1234) died before the run ended (2 nodes)",
            ]
        );
        let echoes: Vec<String> = ["error: node 2 failed", "error: node 2 failed"].map(String::from).into();
        assert_eq!(one_line_per_cause(&echoes), ["error: node 2 failed (2 nodes)"]);
    }

    #[test]
    fn a_one_host_mpirun_uses_shared_memory_and_loopback_only() {
        let cmd = mpirun_command(3, OsStr::new("prog"), &["run".into()], Path::new("/dev/shm/finegrain-mpi-1"));
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let line = args.join(" ");
        for want in [
            "-np 3 --oversubscribe --quiet",
            "--mca btl self,vader",
            "--mca btl_tcp_if_include lo",
            "--mca oob_tcp_if_include lo",
            "--mca oob_tcp_disable_ipv6_family 1",
            "--mca btl_vader_backing_directory /dev/shm/finegrain-mpi-1",
            "prog run",
        ] {
            assert!(line.contains(want), "'{line}' lacks '{want}'");
        }
    }
}
