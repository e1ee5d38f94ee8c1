//! Faults of a self-launched MPI run (`finegrain run micro --platform mpi` outside
//! mpirun): a stopped rank ends the job within the progress timeout plus
//! 2 s with one error line naming it, SIGINT or SIGTERM to the command
//! stops mpirun and every rank, the ranks open no TCP port, and nothing is
//! left in /dev/shm.

use finegrain_rt::processes::launch::descendants;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One job at a time: the progress timeout counts the waiting rank's own
/// time, not time it spends preempted, so jobs of the other tests sharing
/// the cores would stretch it (as they should) past the bound tested here.
static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_job() -> std::sync::MutexGuard<'static, ()> {
    ONE_JOB.lock().unwrap_or_else(|e| e.into_inner())
}

/// A long self-launched MPI run of two ranks.
fn long_run(extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_finegrain"))
        .args(["run", "micro", "--platform", "mpi", "--nodes", "2", "--requests-per-node", "100000000"])
        .args(extra)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The value of `name` in process `pid`'s environment.
fn env_of(pid: u32, name: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    env.split(|b| *b == 0).find_map(|kv| String::from_utf8_lossy(kv).strip_prefix(&prefix).map(str::to_string))
}

/// mpirun and the ranks (rank, pid) of the run `run`, once both ranks run.
fn job(run: &mut Child) -> (u32, Vec<(u32, u32)>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let below = descendants(run.id());
        let mpirun = below.iter().copied().find(|&p| comm(p) == "mpirun");
        let mut ranks: Vec<(u32, u32)> = below
            .iter()
            .filter_map(|&p| env_of(p, "OMPI_COMM_WORLD_RANK").and_then(|r| r.parse().ok()).map(|r| (r, p)))
            .collect();
        ranks.sort();
        if let (Some(m), 2) = (mpirun, ranks.len()) {
            return (m, ranks);
        }
        assert!(Instant::now() < deadline, "the ranks did not start: {below:?}");
        assert!(run.try_wait().unwrap().is_none(), "the run ended before its ranks started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

fn signal(pid: u32, sig: &str) {
    assert!(Command::new("kill").args(["-s", sig, &pid.to_string()]).status().unwrap().success());
}

/// Waits for `run` (at most `limit`): its stderr and how long it took.
/// Processes of the job still there once it ended are killed (they hold
/// its output open) and named.
fn finish(mut run: Child, limit: Duration, job: &(u32, Vec<(u32, u32)>)) -> (String, Duration) {
    let start = Instant::now();
    let pids: Vec<u32> = std::iter::once(job.0).chain(job.1.iter().map(|r| r.1)).collect();
    while run.try_wait().unwrap().is_none() && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = start.elapsed();
    let ended = run.try_wait().unwrap().is_some();
    let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    for &p in &left {
        signal(p, "KILL");
    }
    if !ended {
        let _ = run.kill();
    }
    let out = run.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(ended, "the run did not end within {limit:?}: {err}");
    assert!(left.is_empty(), "processes of the job were left behind: {left:?} (mpirun {}): {err}", job.0);
    assert!(!out.status.success());
    (err, took)
}

/// No shared memory of the run's own is left.
fn nothing_left(launcher: u32) {
    let ours = std::path::Path::new("/dev/shm").join(format!("finegrain-mpi-{launcher}"));
    assert!(!ours.exists(), "{} was left behind", ours.display());
}

/// The thread of process `pid` named `name`, if there is one.
fn thread_named(pid: u32, name: &str) -> Option<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten().find_map(|t| {
        let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
        (comm.trim() == name).then(|| t.file_name().to_string_lossy().parse().ok()).flatten()
    })
}

/// Nanoseconds thread `tid` of process `pid` has waited for a core.
fn run_delay(pid: u32, tid: Option<u32>) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{}/schedstat", tid?)).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// TCP ports process `pid` listens on (its sockets in LISTEN state).
fn listening(pid: u32) -> Vec<String> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter_map(|l| l.to_string_lossy().strip_prefix("socket:[")?.strip_suffix(']').map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for l in text.lines().skip(1) {
            let f: Vec<&str> = l.split_whitespace().collect();
            // Field 3 is the state (0A: LISTEN), field 9 the inode.
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                out.push(format!("{table} {}", f[1]));
            }
        }
    }
    out
}

#[test]
fn a_stopped_rank_ends_the_job_within_the_progress_timeout_naming_it() {
    let _one = one_job();
    let mut run = long_run(&["--progress-timeout-ms", "3000"]);
    let launcher = run.id();
    let job = job(&mut run);
    std::thread::sleep(Duration::from_millis(500));
    // The waiting thread's time preempted (run delay) while the job ends:
    // the progress timeout counts its own time, so on a busy host the
    // wall clock may run longer by that much.
    let waiter = thread_named(job.1[0].1, "fg-n0-t0");
    let delay_at_stop = run_delay(job.1[0].1, waiter);
    signal(job.1[1].1, "STOP");
    let last_delay = std::sync::Mutex::new(delay_at_stop);
    let rank0 = job.1[0].1;
    let (err, took) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            while alive(rank0) {
                if let Some(d) = run_delay(rank0, waiter) {
                    *last_delay.lock().unwrap() = Some(d);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let out = finish(run, Duration::from_secs(60), &job);
        sampler.join().unwrap();
        out
    });
    let preempted = match (delay_at_stop, *last_delay.lock().unwrap()) {
        (Some(a), Some(b)) => Duration::from_nanos(b.saturating_sub(a)),
        _ => Duration::ZERO,
    };
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "one error line:\n{err}");
    assert!(errors[0].contains("no reply from node 1"), "{err}");
    assert!(errors[0].contains("node 1 makes no progress"), "{err}");
    assert!(
        took.saturating_sub(preempted) < Duration::from_millis(5000),
        "the progress timeout (3 s) plus 2 s; took {took:?}, {preempted:?} of it preempted\n{err}"
    );
    nothing_left(launcher);
}

#[test]
fn sigint_or_sigterm_to_the_command_stops_mpirun_and_every_rank() {
    let _one = one_job();
    for sig in ["INT", "TERM"] {
        let mut run = long_run(&[]);
        let launcher = run.id();
        let job = job(&mut run);
        std::thread::sleep(Duration::from_millis(300));
        signal(launcher, sig);
        let (err, took) = finish(run, Duration::from_secs(10), &job);
        assert!(err.lines().any(|l| l.starts_with("error: interrupted by signal")), "{sig}: {err}");
        assert!(took < Duration::from_secs(5), "{sig}: took {took:?}");
        nothing_left(launcher);
    }
}

/// One host needs no network: the ranks talk through shared memory and
/// open no TCP port (Open MPI's TCP transport would listen on every
/// interface).
#[test]
fn the_ranks_of_a_one_host_run_listen_on_no_tcp_port() {
    let _one = one_job();
    let mut run = long_run(&[]);
    let job = job(&mut run);
    std::thread::sleep(Duration::from_millis(500));
    let ports: Vec<String> = job.1.iter().flat_map(|&(_, pid)| listening(pid)).collect();
    signal(run.id(), "TERM");
    let _ = finish(run, Duration::from_secs(10), &job);
    assert!(ports.is_empty(), "the ranks listen on {ports:?}");
}
