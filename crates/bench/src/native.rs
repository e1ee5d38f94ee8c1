//! `finegrain bench pingpong | rate | interrupt | pdq`: the native runtime
//! against the hardware floor, a crossbeam channel, Open MPI and UCX, and its
//! dispatch disciplines against each other, measured side by side in one
//! run. Peers that are not installed are reported as absent.

use crate::measure;
use anyhow::{Context, Result};
use finegrain_rt::probe::{self, Effort};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// One payload size of the ping-pong comparison (one-way nanoseconds).
#[derive(Debug, Serialize)]
pub struct PingPongRow {
    pub size: usize,
    pub finegrain_ns: f64,
    pub floor_ns: f64,
    /// Each direction on its own line (the least a pair of queues costs).
    pub two_line_floor_ns: f64,
    pub crossbeam_ns: f64,
    pub mpi_ns: Option<f64>,
    pub ucx_am_ns: Option<f64>,
}

pub const SIZES: [usize; 3] = [8, 64, 256];

pub(crate) fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Builds the MPI peer (source embedded in the binary) with `mpicc` in a
/// private temporary directory, removed when the returned guard drops.
fn build_mpi_peer() -> Result<Option<(tempfile::TempDir, PathBuf)>> {
    build_c_peer("mpi_pingpong", include_str!("../peers/mpi_pingpong.c"))
}

/// Builds the MPI peer `name` from `source` with `mpicc` in a private
/// temporary directory, removed when the returned guard drops (None:
/// mpicc or mpirun is not installed).
pub(crate) fn build_c_peer(name: &str, source: &str) -> Result<Option<(tempfile::TempDir, PathBuf)>> {
    if !have("mpicc") || !have("mpirun") {
        return Ok(None);
    }
    let dir =
        tempfile::Builder::new().prefix("finegrain-mpi-peer-").tempdir().context("making a temporary directory")?;
    let src = dir.path().join(format!("{name}.c"));
    std::fs::write(&src, source)?;
    let bin = dir.path().join(name);
    let out = Command::new("mpicc").args(["-O2", "-o"]).arg(&bin).arg(&src).output().context("running mpicc")?;
    if !out.status.success() {
        anyhow::bail!("mpicc failed: {}", String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or(""));
    }
    Ok(Some((dir, bin)))
}

/// Restricts an `mpirun` of this host's peers to shared memory and
/// loopback (`finegrain_rt`'s one-host settings): Open MPI's TCP transport
/// would otherwise listen on every interface while the benchmark runs.
pub(crate) fn one_host(cmd: &mut Command) -> &mut Command {
    for (name, value) in finegrain_rt::processes::launch::ONE_HOST_MCA {
        cmd.args(["--mca", name, value]);
    }
    cmd
}

/// Whether this process runs as root: `/proc/self` belongs to the
/// process's effective user.
pub(crate) fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn mpi_pingpong(bin: &std::path::Path, size: usize, e: Effort) -> Result<f64> {
    let mut cmd = Command::new("mpirun");
    if running_as_root() {
        cmd.arg("--allow-run-as-root");
    }
    let out = one_host(&mut cmd)
        .args(["-np", "2", "--bind-to", "core"])
        .arg(bin)
        .args([size.to_string(), e.warmup.to_string(), e.per_round.to_string(), e.rounds.to_string()])
        .output()
        .context("running mpirun")?;
    let rounds: Vec<f64> = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect();
    if rounds.is_empty() {
        anyhow::bail!(
            "mpirun printed no result: {}",
            String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("")
        );
    }
    Ok(probe::median(rounds))
}

/// `ucx_perftest -t ucp_am_lat` between two processes over loopback, pinned
/// to cores 0 and 1; its 50th-percentile one-way latency. The server's
/// address-exchange socket listens on every interface and ucx_perftest has
/// no option to bind it, so both processes run in a network namespace of
/// their own (`unshare`), whose only interface is loopback: nothing
/// outside the machine can reach the port.
fn ucx_am_latency(size: usize, e: Effort) -> Result<f64> {
    // The server in the background, the client once it listens, then the
    // server stopped; in the namespace, loopback starts down.
    const SCRIPT: &str = "ip link set lo up || exit 97
common=\"-t ucp_am_lat -s $1 -n $2 -w $3 -p 20000\"
ucx_perftest $common -c 1 >/dev/null 2>&1 &
server=$!
sleep 0.5
ucx_perftest localhost $common -c 0
status=$?
kill $server 2>/dev/null
wait $server 2>/dev/null
exit $status";
    if !have("unshare") || !have("ip") {
        anyhow::bail!("unshare or ip missing: the peer runs only in a private network namespace");
    }
    let mut cmd = Command::new("unshare");
    if !running_as_root() {
        // An unprivileged user maps itself to root in a user namespace of
        // its own, where the kernel allows it.
        cmd.args(["--user", "--map-root-user"]);
    }
    let iters = (e.per_round * e.rounds as u64).to_string();
    let out = cmd
        .args(["--net", "sh", "-c", SCRIPT, "sh", &size.to_string(), &iters, &e.warmup.to_string()])
        .output()
        .context("running ucx_perftest in a private network namespace")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(line) = text.lines().find(|l| l.trim_start().starts_with("Final:")) else {
        anyhow::bail!(
            "no result from ucx_perftest in a private network namespace (unshare exit {:?}: {})",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("")
        );
    };
    let us: f64 =
        line.split_whitespace().nth(2).and_then(|s| s.parse().ok()).context("unreadable ucx_perftest line")?;
    Ok(us * 1000.0)
}

/// The raw MPI ping-pong peer, built (None, with a note, if it cannot be).
pub(crate) fn mpi_peer() -> Option<(tempfile::TempDir, PathBuf)> {
    match build_mpi_peer() {
        Ok(b) => b,
        Err(err) => {
            crate::note(format_args!("Open MPI peer unavailable ({err})"));
            None
        }
    }
}

/// The raw MPI ping-pong's one-way median (None, with a note, on failure).
pub(crate) fn mpi_pingpong_ns(bin: &std::path::Path, size: usize, e: Effort) -> Option<f64> {
    mpi_pingpong(bin, size, e).map_err(|err| crate::note(format_args!("MPI ping-pong failed ({err})"))).ok()
}

pub fn pingpong(e: Effort) -> Result<Vec<PingPongRow>> {
    let floor = measure::floor_pingpong(e);
    let two_line = measure::two_line_floor_pingpong(e);
    let mpi = mpi_peer();
    let ucx = have("ucx_perftest");
    let mut rows = Vec::new();
    for size in SIZES {
        let finegrain = measure::finegrain_pingpong(size, e)?;
        let crossbeam = measure::crossbeam_pingpong(size, e);
        let mpi_ns = mpi.as_ref().and_then(|(_dir, b)| mpi_pingpong_ns(b, size, e));
        let ucx_am_ns = if ucx {
            ucx_am_latency(size, e).map_err(|err| crate::note(format_args!("UCX ping-pong failed ({err})"))).ok()
        } else {
            None
        };
        rows.push(PingPongRow {
            size,
            finegrain_ns: finegrain,
            floor_ns: floor,
            two_line_floor_ns: two_line,
            crossbeam_ns: crossbeam,
            mpi_ns,
            ucx_am_ns,
        });
    }
    Ok(rows)
}

fn cell(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.0}")).unwrap_or_else(|| "absent".into())
}

pub fn pingpong_table(rows: &[PingPongRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "one-way latency, median ns (two threads pinned to cores 0 and 1)");
    let _ = writeln!(
        s,
        "{:>6} {:>10} {:>8} {:>10} {:>10} {:>8} {:>8} {:>10} {:>8}",
        "bytes", "finegrain", "floor", "2-line", "crossbeam", "mpi", "ucx_am", "fg/floor", "fg/mpi"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:>6} {:>10.0} {:>8.0} {:>10.0} {:>10.0} {:>8} {:>8} {:>10.2} {:>8}",
            r.size,
            r.finegrain_ns,
            r.floor_ns,
            r.two_line_floor_ns,
            r.crossbeam_ns,
            cell(r.mpi_ns),
            cell(r.ucx_am_ns),
            r.finegrain_ns / r.floor_ns,
            r.mpi_ns.map(|m| format!("{:.2}", r.finegrain_ns / m)).unwrap_or_else(|| "-".into())
        );
    }
    if let Some(r) = rows.iter().find(|r| r.size == 8) {
        let floor_ok = r.finegrain_ns <= 2.0 * r.floor_ns;
        let _ = writeln!(
            s,
            "target 8 B: <= 2.0 x floor: {} ({:.2}); <= 0.6 x Open MPI: {}",
            if floor_ok { "met" } else { "NOT met" },
            r.finegrain_ns / r.floor_ns,
            match r.mpi_ns {
                Some(m) =>
                    format!("{} ({:.2})", if r.finegrain_ns <= 0.6 * m { "met" } else { "NOT met" }, r.finegrain_ns / m),
                None => "no MPI to compare".into(),
            }
        );
    }
    s
}

#[derive(Debug, Serialize)]
pub struct RateRow {
    pub payload_bytes: usize,
    pub messages_per_second: f64,
    pub rounds: usize,
}

pub fn rate(e: Effort) -> Result<RateRow> {
    Ok(RateRow { payload_bytes: 8, messages_per_second: measure::stream_rate(e)?, rounds: e.rounds })
}

pub fn rate_table(r: &RateRow) -> String {
    let mut s = String::new();
    let _ = writeln!(s,
        "one-way streaming of {}-byte active messages, core 0 -> core 1: {:.2} M messages/s (median of {}); target >= 10 M: {}",
        r.payload_bytes,
        r.messages_per_second / 1e6,
        r.rounds,
        if r.messages_per_second >= 10e6 { "met" } else { "NOT met" }
    );
    s
}

#[derive(Debug, Serialize)]
pub struct InterruptRow {
    pub delivery_ns: f64,
    pub signal_ns: f64,
    pub runtime_path_ns: f64,
    pub oint_ns: f64,
    pub interrupts: u64,
}

pub fn interrupt(quick: bool) -> Result<InterruptRow> {
    let (messages, ms) = if quick { (300, 60) } else { (2000, 300) };
    let c = measure::interrupt_cost(messages, ms)?;
    Ok(InterruptRow {
        delivery_ns: c.delivery_ns,
        signal_ns: c.signal_ns,
        runtime_path_ns: c.runtime_path_ns,
        oint_ns: c.oint_ns,
        interrupts: c.interrupts,
    })
}

pub fn interrupt_table(r: &InterruptRow) -> String {
    let mut s = String::new();
    let _ =
        writeln!(s, "native interrupt (Floating: a signal to a computing thread), over {} interrupts", r.interrupts);
    let _ = writeln!(s, "  {:<46} {:>8.0} ns", "send to handler start (median)", r.delivery_ns);
    let _ = writeln!(s, "  {:<46} {:>8.0} ns", "bare signal, cost to the interrupted thread", r.signal_ns);
    let _ = writeln!(s, "  {:<46} {:>8.0} ns", "runtime path (role, poll, handler, release)", r.runtime_path_ns);
    let _ = writeln!(s, "  {:<46} {:>8.0} ns", "native Oint (signal + path)", r.oint_ns);
    s
}

/// One row of `finegrain bench pdq` (handlers per second).
#[derive(Debug, Serialize)]
pub struct PdqRow {
    pub keys: u64,
    pub work_iterations: u32,
    pub single_ns_per_handler: f64,
    pub pdq_per_s: f64,
    pub mutex_per_key_per_s: f64,
    pub single_dispatcher_per_s: f64,
    pub rounds: usize,
}

/// Handler costs of the comparison: a bare fetch&add, and one with a few
/// hundred nanoseconds of work (a protocol handler's size).
pub const PDQ_WORK: [u32; 2] = [0, 200];
pub const PDQ_KEYS: [u64; 3] = [1, 64, 4096];

pub fn pdq(e: Effort) -> Result<Vec<PdqRow>> {
    let mut rows = Vec::new();
    for work in PDQ_WORK {
        for keys in PDQ_KEYS {
            let r = probe::keyed_dispatch(keys, work, e).map_err(anyhow::Error::msg)?;
            rows.push(PdqRow {
                keys,
                work_iterations: work,
                single_ns_per_handler: r.single_ns_per_handler,
                pdq_per_s: r.pdq_per_s,
                mutex_per_key_per_s: r.lock_per_key_per_s,
                single_dispatcher_per_s: r.single_per_s,
                rounds: r.rounds,
            });
        }
    }
    Ok(rows)
}

pub fn pdq_table(rows: &[PdqRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "fetch&add handler throughput, M handlers/s, median of interleaved rounds");
    let _ = writeln!(s, "(PDQ and mutex per key: two threads pinned to cores 0 and 1; single dispatcher: one thread)");
    let _ = writeln!(
        s,
        "{:>6} {:>11} {:>8} {:>14} {:>8} {:>11} {:>11}",
        "keys", "handler ns", "PDQ", "mutex per key", "single", "PDQ/single", "PDQ/mutex"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:>6} {:>11.0} {:>8.2} {:>14.2} {:>8.2} {:>11.2} {:>11.2}",
            r.keys,
            r.single_ns_per_handler,
            r.pdq_per_s / 1e6,
            r.mutex_per_key_per_s / 1e6,
            r.single_dispatcher_per_s / 1e6,
            r.pdq_per_s / r.single_dispatcher_per_s,
            r.pdq_per_s / r.mutex_per_key_per_s
        );
    }
    s
}
