//! `finegrain bench pingpong --platform shm|mpi`: finegrain's one-way
//! latency with its two nodes in two processes (shared memory, or MPI
//! ranks), beside the same program on threads of one process, the
//! cache-line floors and the raw MPI ping-pong, all in one run.
//!
//! The ping-pong is a [`Workload`], so every platform runs the same code:
//! node 0 times round trips of a request whose handler replies with the
//! payload; node 1 serves (idling in short slices, which serve its node)
//! until node 0's last request, a `stop`, arrives.

use crate::measure;
use anyhow::{bail, Context, Result};
use finegrain_core::{
    AmError, Args, HandlerId, HandlerInfo, HandlerTable, Message, NodeId, Payload, Policy, Proc, Workload,
    WorkloadError,
};
use finegrain_rt::clock::Stamp;
use finegrain_rt::probe::{median, Effort};
use serde::Serialize;
use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The ping-pong as a workload: node 0's output is its rounds' one-way
/// nanoseconds.
pub struct PingPong {
    table: HandlerTable,
    ping: HandlerId,
    stop: HandlerId,
    stopped: Arc<AtomicBool>,
    size: usize,
    effort: Effort,
}

fn info(name: &str) -> HandlerInfo {
    HandlerInfo { name: name.into(), body_cycles: 0, code_bytes: 0 }
}

impl PingPong {
    pub fn new(size: usize, effort: Effort) -> Result<PingPong, AmError> {
        let mut table = HandlerTable::new();
        let pong = table.register(info("pong"), |_, _| Ok(()))?;
        let ping = table.register(info("ping"), move |ctx, m: &Message| {
            ctx.reply_bytes(pong, Args::default(), m.payload.as_slice())
        })?;
        let stopped = Arc::new(AtomicBool::new(false));
        let flag = stopped.clone();
        let stop = table.register(info("stop"), move |ctx, _| {
            flag.store(true, Ordering::Release);
            ctx.reply_bytes(pong, Args::default(), &[])
        })?;
        Ok(PingPong { table, ping, stop, stopped, size, effort })
    }

    async fn trip<P: Proc>(&self, p: &P, payload: &[u8]) -> Result<(), AmError> {
        p.request(NodeId(1), self.ping, Args::default(), Payload::bytes(payload)).await.map(|_| ())
    }
}

impl Workload for PingPong {
    type Output = Vec<f64>;

    fn name(&self) -> &'static str {
        "pingpong"
    }

    fn handlers(&self) -> &HandlerTable {
        &self.table
    }

    async fn thread<P: Proc>(&self, p: P) -> Result<Vec<f64>, AmError> {
        if p.node().0 != 0 {
            while !self.stopped.load(Ordering::Acquire) {
                // 50 us slices: serving all the while, stopping soon after.
                p.idle(50_000).await;
            }
            return Ok(Vec::new());
        }
        let payload = vec![0x5au8; self.size];
        let until = Stamp::now().plus_ns(self.effort.warmup_ms as f64 * 1e6);
        let mut n = 0;
        while n < self.effort.warmup || !until.reached() {
            self.trip(&p, &payload).await?;
            n += 1;
        }
        let mut rounds = Vec::with_capacity(self.effort.rounds);
        for _ in 0..self.effort.rounds {
            let t0 = Stamp::now();
            for _ in 0..self.effort.per_round {
                self.trip(&p, &payload).await?;
            }
            rounds.push(t0.elapsed_ns() as f64 / self.effort.per_round as f64 / 2.0);
        }
        p.request(NodeId(1), self.stop, Args::default(), Payload::none()).await?;
        Ok(rounds)
    }

    fn check(&self, outputs: &[Vec<f64>]) -> Result<(), WorkloadError> {
        match outputs.first() {
            Some(r) if r.len() == self.effort.rounds => Ok(()),
            _ => Err(WorkloadError::WrongAnswer { workload: "pingpong", what: "node 0 timed no rounds".into() }),
        }
    }
}

/// The runtime configuration of the ping-pong: two nodes of one thread
/// each, pinned to cores 0 and 1, Single policy.
pub fn config() -> finegrain_rt::RtConfig {
    measure::two_pinned_threads(Policy::Single)
}

/// The median one-way nanoseconds of the rounds `ran` timed.
pub fn one_way(outputs: Vec<Vec<f64>>) -> f64 {
    median(outputs.into_iter().flatten().collect())
}

/// One payload size of `bench pingpong --platform shm|mpi` (one-way ns).
#[derive(Debug, Serialize)]
pub struct PlatformRow {
    pub platform: &'static str,
    pub size: usize,
    /// The ping-pong workload with the nodes in two processes.
    pub finegrain_ns: f64,
    /// The same workload on two threads of one process (in-process rings).
    pub in_process_ns: f64,
    pub floor_ns: f64,
    pub two_line_floor_ns: f64,
    /// `mpirun -np 2 --bind-to core` of the C ping-pong (MPI_Send/MPI_Recv).
    pub mpi_ns: Option<f64>,
}

/// Runs the node processes of one measurement: `program bench
/// pingpong-node --platform P --size S` under the platform's launcher;
/// node 0 prints `one_way_ns X`.
fn across_processes(platform: &str, size: usize, quick: bool) -> Result<f64> {
    let size = size.to_string();
    run_nodes(platform, &["pingpong-node", "--platform", platform, "--size", &size], quick, "one_way_ns ", "ping-pong")
}

/// `bench pingpong --platform shm|mpi`.
pub fn pingpong(platform: &'static str, e: Effort, quick: bool) -> Result<Vec<PlatformRow>> {
    if platform == "mpi" && !crate::native::have("mpirun") {
        bail!(
            "mpirun not found on PATH: platform mpi runs under Open MPI's mpirun (Debian: apt-get install openmpi-bin)"
        );
    }
    let floor = measure::floor_pingpong(e);
    let two_line = measure::two_line_floor_pingpong(e);
    let mpi = crate::native::mpi_peer();
    let mut rows = Vec::new();
    for size in crate::native::SIZES {
        let w = PingPong::new(size, e).map_err(|err| anyhow::anyhow!("{err}"))?;
        use finegrain_core::Platform;
        let in_process = one_way(finegrain_rt::Native { config: &config() }.run(&w)?.outputs);
        let finegrain_ns = across_processes(platform, size, quick)?;
        let mpi_ns = mpi.as_ref().and_then(|(_dir, b)| crate::native::mpi_pingpong_ns(b, size, e));
        rows.push(PlatformRow {
            platform,
            size,
            finegrain_ns,
            in_process_ns: in_process,
            floor_ns: floor,
            two_line_floor_ns: two_line,
            mpi_ns,
        });
    }
    Ok(rows)
}

pub fn pingpong_table(rows: &[PlatformRow]) -> String {
    let mut s = String::new();
    let Some(first) = rows.first() else { return s };
    let p = first.platform;
    let _ = writeln!(
        s,
        "one-way latency, median ns: finegrain with its 2 nodes in 2 processes ({p}) and on 2 threads of one process (in-process rings), pinned to cores 0 and 1"
    );
    let _ = writeln!(
        s,
        "{:>6} {:>10} {:>11} {:>8} {:>8} {:>8} {:>12} {:>8}",
        "bytes",
        format!("fg {p}"),
        "in-process",
        "floor",
        "2-line",
        "raw mpi",
        format!("{p}/in-proc"),
        "fg/mpi"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:>6} {:>10.0} {:>11.0} {:>8.0} {:>8.0} {:>8} {:>12.2} {:>8}",
            r.size,
            r.finegrain_ns,
            r.in_process_ns,
            r.floor_ns,
            r.two_line_floor_ns,
            r.mpi_ns.map(|m| format!("{m:.0}")).unwrap_or_else(|| "absent".into()),
            r.finegrain_ns / r.in_process_ns,
            r.mpi_ns.map(|m| format!("{:.2}", r.finegrain_ns / m)).unwrap_or_else(|| "-".into())
        );
    }
    if let Some(r) = rows.iter().find(|r| r.size == 8) {
        let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
        let line = match p {
            "shm" => {
                let x = r.finegrain_ns / r.in_process_ns;
                format!("target 8 B: shm <= 1.2 x in-process rings: {} ({x:.2})", verdict(x <= 1.2))
            }
            _ => match r.mpi_ns {
                Some(m) => {
                    let x = r.finegrain_ns / m;
                    format!("target 8 B: finegrain over MPI <= 1.15 x raw MPI: {} ({x:.2})", verdict(x <= 1.15))
                }
                None => "target 8 B: no raw MPI to compare".into(),
            },
        };
        let _ = writeln!(s, "{line}");
    }
    s
}

/// The streaming-rate program: node 0 sends one-way 8-byte messages to
/// node 1 in rounds, each closed by a request (`flush`) whose reply says
/// node 1 has handled everything sent before it (one sender's messages
/// are handled in order); its output is each round's messages per second.
pub struct Stream {
    pub table: HandlerTable,
    sink: HandlerId,
    flush: HandlerId,
    stop: HandlerId,
    stopped: Arc<AtomicBool>,
    effort: Effort,
}

impl Stream {
    pub fn new(effort: Effort) -> Result<Stream, AmError> {
        let mut table = HandlerTable::new();
        let done = table.register(info("done"), |_, _| Ok(()))?;
        let sink = table.register(info("sink"), |_, _| Ok(()))?;
        let flush = table.register(info("flush"), move |ctx, _| ctx.reply_bytes(done, Args::default(), &[]))?;
        let stopped = Arc::new(AtomicBool::new(false));
        let flag = stopped.clone();
        let stop = table.register(info("stop"), move |ctx, _| {
            flag.store(true, Ordering::Release);
            ctx.reply_bytes(done, Args::default(), &[])
        })?;
        Ok(Stream { table, sink, flush, stop, stopped, effort })
    }

    /// Sends `n` messages and waits until node 1 has handled them.
    fn burst(&self, p: &finegrain_rt::RtProc, n: u64) -> Result<(), AmError> {
        let word = 0x1122_3344_5566_7788u64.to_le_bytes();
        for _ in 0..n {
            p.send(NodeId(1), self.sink, &[], &word)?;
        }
        p.request_with(NodeId(1), self.flush, &[], &[], |_| ())
    }

    /// One node's part.
    pub async fn node(&self, p: finegrain_rt::RtProc) -> Result<Vec<f64>, AmError> {
        if p.node().0 != 0 {
            while !self.stopped.load(Ordering::Acquire) {
                p.idle(50_000).await;
            }
            return Ok(Vec::new());
        }
        let e = self.effort;
        self.burst(&p, e.warmup * 5)?;
        let mut rates = Vec::with_capacity(e.rounds);
        for _ in 0..e.rounds {
            let t0 = Stamp::now();
            self.burst(&p, e.per_round * 10)?;
            rates.push((e.per_round * 10) as f64 * 1e9 / t0.elapsed_ns().max(1) as f64);
        }
        p.request_with(NodeId(1), self.stop, &[], &[], |_| ())?;
        Ok(rates)
    }
}

/// `bench rate --platform shm|mpi` (messages per second).
#[derive(Debug, Serialize)]
pub struct PlatformRateRow {
    pub platform: &'static str,
    pub payload_bytes: usize,
    /// The stream with its two nodes in two processes.
    pub finegrain_per_s: f64,
    /// The same program on two threads of one process.
    pub in_process_per_s: f64,
    pub rounds: usize,
}

/// Runs the node processes of the streaming rate; node 0 prints
/// `per_s X`.
fn rate_across_processes(platform: &str, quick: bool) -> Result<f64> {
    run_nodes(platform, &["rate-node", "--platform", platform], quick, "per_s ", "stream")
}

/// Runs `program bench ARGS [--quick]` as the platform's node processes
/// under its launcher and returns the number node 0 prints after `label`;
/// without one, the first error line any node printed (`what` names the
/// measurement).
fn run_nodes(platform: &str, args: &[&str], quick: bool, label: &str, what: &str) -> Result<f64> {
    let program = std::env::current_exe().context("finding this program")?;
    let mut node_args: Vec<String> = vec![program.display().to_string(), "bench".into()];
    node_args.extend(args.iter().map(|a| a.to_string()));
    if quick {
        node_args.push("--quick".into());
    }
    let mut cmd = launcher(platform, &program);
    let out =
        cmd.args(&node_args).stdin(Stdio::null()).output().with_context(|| format!("starting the {platform} nodes"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(v) = text.lines().find_map(|l| l.strip_prefix(label)).and_then(|v| v.trim().parse().ok()) else {
        bail!(
            "the {platform} {what} printed no result: {}",
            String::from_utf8_lossy(&out.stderr).lines().find(|l| l.starts_with("error")).unwrap_or("")
        );
    };
    Ok(v)
}

/// The command that starts two node processes of `platform`.
fn launcher(platform: &str, program: &std::path::Path) -> Command {
    match platform {
        "shm" => {
            let mut c = Command::new(program);
            c.args(["launch", "-n", "2", "--"]);
            c
        }
        _ => {
            let mut c = Command::new("mpirun");
            crate::native::one_host(&mut c)
                .args(["-np", "2", "--bind-to", "core"])
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
            c
        }
    }
}

/// `bench rate --platform shm|mpi`.
pub fn rate(platform: &'static str, e: Effort, quick: bool) -> Result<PlatformRateRow> {
    if platform == "mpi" && !crate::native::have("mpirun") {
        bail!(
            "mpirun not found on PATH: platform mpi runs under Open MPI's mpirun (Debian: apt-get install openmpi-bin)"
        );
    }
    let s = Stream::new(e).map_err(|err| anyhow::anyhow!("{err}"))?;
    let in_process =
        median(finegrain_rt::run(&config(), &s.table, |p| s.node(p))?.results.into_iter().flatten().collect());
    let finegrain_per_s = rate_across_processes(platform, quick)?;
    Ok(PlatformRateRow { platform, payload_bytes: 8, finegrain_per_s, in_process_per_s: in_process, rounds: e.rounds })
}

pub fn rate_table(r: &PlatformRateRow) -> String {
    format!(
        "one-way streaming of {}-byte active messages, node 0 -> node 1 (cores 0 and 1), M messages/s, median of {}:\n  \
         finegrain {}: {:.2}   in-process rings: {:.2}   ratio {:.2}\n",
        r.payload_bytes,
        r.rounds,
        r.platform,
        r.finegrain_per_s / 1e6,
        r.in_process_per_s / 1e6,
        r.finegrain_per_s / r.in_process_per_s
    )
}
