//! `finegrain bench splitc`: Split-C's operations natively on two nodes of
//! one process (node 0 issues, node 1 owns the words), under the
//! co-processor policy's main-am library (node 1's main thread handles
//! every message when it polls) and its optimized library (a progress
//! thread per node runs the data operations), side by side: the runs of
//! the two libraries alternate, round after round, and every figure is a
//! median over all repetitions of both, with the spread (10th to 90th
//! percentile) beside it. Beside them, the raw MPI-3 one-sided
//! equivalents (a C peer under `mpirun -np 2`) when Open MPI is installed.
//!
//! Under optimized the two nodes have two threads each: on a two-core host
//! the four threads share two cores (the table says so), which is what a
//! progress thread per node costs there.

use anyhow::{Context, Result};
use finegrain_core::{AmError, CoprocLibrary, HandlerTable, NodeId, Policy, Proc, Topology};
use finegrain_rt::clock::Stamp;
use finegrain_rt::probe::Effort;
use finegrain_rt::{run, RtConfig};
use finegrain_splitc::{GlobalPtr, SplitC, SplitNode};
use serde::Serialize;
use std::fmt::Write as _;
use std::process::Command;

/// Bytes of each bulk get and put.
pub const BULK_BYTES: u64 = 64 * 1024;
const BULK_WORDS: u64 = BULK_BYTES / 8;
/// Words of the bulk store (32 bytes).
const STORE_WORDS: u64 = 4;

/// The operations measured, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Get,
    Put,
    Store,
    Store4,
    BulkGet,
    BulkPut,
}

impl Op {
    const ALL: [Op; 6] = [Op::Get, Op::Put, Op::Store, Op::Store4, Op::BulkGet, Op::BulkPut];

    /// The name in the table and the JSON (and in the MPI peer's output).
    fn key(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Put => "put",
            Op::Store => "store",
            Op::Store4 => "store4",
            Op::BulkGet => "bulk_get",
            Op::BulkPut => "bulk_put",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Op::Get => "get + sync, 1 word (blocking read)",
            Op::Put => "put + sync, 1 word",
            Op::Store => "store 1 word, owner sees it (RT/2)",
            Op::Store4 => "store 32 B, owner sees it (RT/2)",
            Op::BulkGet => "bulk get 64 KiB + sync",
            Op::BulkPut => "bulk put 64 KiB + sync",
        }
    }

    fn bandwidth(self) -> bool {
        matches!(self, Op::BulkGet | Op::BulkPut)
    }

    fn unit(self) -> &'static str {
        if self.bandwidth() {
            "MB/s"
        } else {
            "ns"
        }
    }
}

/// A median and its spread over the repetitions.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Spread {
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub samples: usize,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
        Spread { median: at(0.5), p10: at(0.1), p90: at(0.9), samples: v.len() }
    }
}

/// One operation under both libraries (and raw MPI-3 RMA).
#[derive(Debug, Serialize)]
pub struct SplitcRow {
    pub op: &'static str,
    pub what: &'static str,
    /// "ns" (latency, lower is better) or "MB/s" (bandwidth, higher is).
    pub unit: &'static str,
    pub main_am: Spread,
    pub optimized: Spread,
    /// optimized's median over main-am's.
    pub optimized_over_main_am: f64,
    pub mpi_rma: Option<Spread>,
}

/// `finegrain bench splitc`'s result.
#[derive(Debug, Serialize)]
pub struct SplitcBench {
    pub nodes: u32,
    pub cores: usize,
    /// Threads of the run under each library (2 nodes x 1 under main-am,
    /// 2 nodes x 2 under optimized).
    pub main_am_threads: u32,
    pub optimized_threads: u32,
    /// Whether each run's threads were pinned (only when they fit the cores).
    pub main_am_pinned: bool,
    pub optimized_pinned: bool,
    /// Alternating runs of each library, and repetitions per run.
    pub rounds: usize,
    pub reps_per_run: u64,
    pub bulk_reps_per_run: u64,
    pub rows: Vec<SplitcRow>,
    /// Why there is no MPI-3 RMA column, if there is none.
    pub mpi_rma_absent: Option<String>,
    /// Why there is no OpenSHMEM column.
    pub openshmem_absent: String,
}

/// How much one run measures.
#[derive(Clone, Copy, Debug)]
struct Plan {
    warmup: u64,
    reps: u64,
    bulk_reps: u64,
}

impl Plan {
    /// A twentieth of the ping-pong's effort per run: every repetition is
    /// timed alone, and a run under optimized may hop through four threads
    /// on two cores.
    fn of(e: Effort) -> Plan {
        Plan {
            warmup: (e.warmup / 20).max(10),
            reps: (e.per_round / 20).max(20),
            bulk_reps: if e.rounds > 5 { 20 } else { 5 },
        }
    }
}

/// The configuration of one library's runs: two nodes of one main thread,
/// pinned only where every thread has a core of its own.
fn config(library: CoprocLibrary) -> RtConfig {
    let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Coprocessor { library });
    cfg.segment_bytes = 4096;
    cfg.time_split = false;
    cfg.pin = (2 * cfg.threads_per_node()) as usize <= finegrain_rt::online_cores();
    cfg
}

/// Node 0's samples, per operation in [`Op::ALL`] order.
type Samples = Vec<Vec<f64>>;

/// Where the program's words are, the same on both nodes.
struct Words {
    one: u64,
    ping: u64,
    src: u64,
    dst: u64,
}

/// Times `reps` repetitions of `op` after `warmup` untimed ones; node 1
/// answers the store ping-pongs and otherwise waits in the barrier that
/// follows (serving, as its library lets it).
async fn phase<P: Proc>(s: &SplitNode<'_, P>, w: &Words, op: Op, plan: Plan) -> Result<Vec<f64>, AmError> {
    let owner = s.me().0 == 1;
    let (warmup, reps) = if op.bandwidth() { (2, plan.bulk_reps) } else { (plan.warmup, plan.reps) };
    let mut out = Vec::with_capacity(reps as usize);
    for i in 0..warmup + reps {
        let t0 = Stamp::now();
        match (op, owner) {
            (Op::Get, false) => {
                s.get(GlobalPtr::new(NodeId(1), w.one), w.one + 1, 1).await?;
                s.sync().await?;
            }
            (Op::Put, false) => {
                s.put_value(GlobalPtr::new(NodeId(1), w.one), i).await?;
                s.sync().await?;
            }
            (Op::Store | Op::Store4, _) => {
                let n = if op == Op::Store { 1 } else { STORE_WORDS };
                let peer = NodeId(1 - s.me().0);
                if owner {
                    s.store_sync(n).await?;
                }
                s.store(GlobalPtr::new(peer, w.ping), w.ping, n).await?;
                if !owner {
                    s.store_sync(n).await?;
                }
            }
            (Op::BulkGet, false) => {
                s.get(GlobalPtr::new(NodeId(1), w.src), w.dst, BULK_WORDS).await?;
                s.sync().await?;
            }
            (Op::BulkPut, false) => {
                s.put(GlobalPtr::new(NodeId(1), w.dst), w.src, BULK_WORDS).await?;
                s.sync().await?;
            }
            (_, true) => break,
        }
        let ns = t0.elapsed_ns().max(1) as f64;
        if i >= warmup {
            out.push(match op {
                Op::Store | Op::Store4 => ns / 2.0,
                Op::BulkGet | Op::BulkPut => BULK_BYTES as f64 * 1e3 / ns,
                _ => ns,
            });
        }
    }
    s.barrier().await?;
    Ok(if owner { Vec::new() } else { out })
}

/// One node's part of one run: every operation in turn.
async fn program<P: Proc>(p: P, sc: SplitC, plan: Plan) -> Result<Samples, AmError> {
    let s = sc.on(&p)?;
    let w =
        Words { one: s.alloc(2)?, ping: s.alloc(STORE_WORDS)?, src: s.alloc(BULK_WORDS)?, dst: s.alloc(BULK_WORDS)? };
    s.barrier().await?;
    let mut samples = Vec::new();
    for op in Op::ALL {
        samples.push(phase(&s, &w, op, plan).await?);
    }
    Ok(samples)
}

/// One run under `library`; node 0's samples.
fn one_run(library: CoprocLibrary, plan: Plan) -> Result<Samples> {
    let mut table = HandlerTable::new();
    let sc = SplitC::builder(2, 2 * BULK_WORDS + 64).register(&mut table).map_err(anyhow::Error::msg)?;
    let out = run(&config(library), &table, |p| program(p, sc.clone(), plan))
        .with_context(|| format!("the Split-C benchmark under coprocessor:{}", library.label()))?;
    out.results.into_iter().next().context("node 0 returned no samples")
}

/// `finegrain bench splitc`.
pub fn splitc(e: Effort) -> Result<SplitcBench> {
    let plan = Plan::of(e);
    let libraries = [CoprocLibrary::MainAm, CoprocLibrary::Optimized];
    let mut all: Vec<Samples> = libraries.iter().map(|_| vec![Vec::new(); Op::ALL.len()]).collect();
    for _ in 0..e.rounds {
        for (l, library) in libraries.into_iter().enumerate() {
            for (acc, got) in all[l].iter_mut().zip(one_run(library, plan)?) {
                acc.extend(got);
            }
        }
    }
    let (mpi, mpi_rma_absent) = match mpi_rma(plan, e.rounds) {
        Ok(m) => (m, None),
        Err(why) => (Vec::new(), Some(why)),
    };
    let mut optimized = all.pop().expect("two libraries");
    let mut main_am = all.pop().expect("two libraries");
    let rows = Op::ALL
        .iter()
        .enumerate()
        .map(|(i, &op)| {
            let (m, o) = (Spread::of(std::mem::take(&mut main_am[i])), Spread::of(std::mem::take(&mut optimized[i])));
            SplitcRow {
                op: op.key(),
                what: op.what(),
                unit: op.unit(),
                main_am: m,
                optimized: o,
                optimized_over_main_am: o.median / m.median,
                mpi_rma: mpi.iter().find(|(k, _)| *k == op.key()).map(|(_, s)| *s),
            }
        })
        .collect();
    let (m, o) = (config(CoprocLibrary::MainAm), config(CoprocLibrary::Optimized));
    Ok(SplitcBench {
        nodes: 2,
        cores: finegrain_rt::online_cores(),
        main_am_threads: 2 * m.threads_per_node(),
        optimized_threads: 2 * o.threads_per_node(),
        main_am_pinned: m.pin,
        optimized_pinned: o.pin,
        rounds: e.rounds,
        reps_per_run: plan.reps,
        bulk_reps_per_run: plan.bulk_reps,
        rows,
        mpi_rma_absent,
        openshmem_absent: openshmem_absent(),
    })
}

/// The MPI-3 RMA peer's figures per operation, or why there are none.
fn mpi_rma(plan: Plan, rounds: usize) -> Result<Vec<(&'static str, Spread)>, String> {
    let built =
        crate::native::build_c_peer("mpi_rma", include_str!("../peers/mpi_rma.c")).map_err(|e| e.to_string())?;
    let Some((_dir, bin)) = built else { return Err("mpicc or mpirun not on PATH".into()) };
    let mut cmd = Command::new("mpirun");
    if crate::native::running_as_root() {
        cmd.arg("--allow-run-as-root");
    }
    let reps = plan.reps * rounds as u64;
    let bulk_reps = plan.bulk_reps * rounds as u64;
    let out = crate::native::one_host(&mut cmd)
        .args(["-np", "2", "--bind-to", "core"])
        .arg(&bin)
        .args([plan.warmup, reps, BULK_BYTES, bulk_reps].map(|v| v.to_string()))
        .output()
        .map_err(|e| format!("running mpirun: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<_> = Op::ALL
        .iter()
        .filter_map(|op| {
            let line = text.lines().find(|l| l.split_whitespace().next() == Some(op.key()))?;
            let v: Vec<f64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
            let samples = if op.bandwidth() { bulk_reps } else { reps } as usize;
            (v.len() == 3).then(|| (op.key(), Spread { median: v[0], p10: v[1], p90: v[2], samples }))
        })
        .collect();
    if rows.len() != Op::ALL.len() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("the MPI peer printed no result ({})", err.lines().next().unwrap_or("no message")));
    }
    Ok(rows)
}

/// Why OpenSHMEM has no column.
fn openshmem_absent() -> String {
    if crate::native::have("oshcc") && crate::native::have("oshrun") {
        "oshcc and oshrun are on PATH, but this benchmark has no OpenSHMEM peer".into()
    } else {
        "no OpenSHMEM installed (oshcc, oshrun)".into()
    }
}

fn cell(s: &Spread) -> String {
    format!("{:.0} [{:.0}-{:.0}]", s.median, s.p10, s.p90)
}

pub fn splitc_table(b: &SplitcBench) -> String {
    let mut s = String::new();
    let pin = |p: bool| if p { "pinned" } else { "not pinned" };
    let _ = writeln!(
        s,
        "Split-C natively, {} nodes in one process, node 0 issues, node 1 owns; median [10th-90th percentile] over {} \
         alternating runs per library",
        b.nodes, b.rounds
    );
    let _ = writeln!(
        s,
        "main-am: {} threads on {} cores ({}); optimized: {} threads (a progress thread per node) on {} cores ({}{})",
        b.main_am_threads,
        b.cores,
        pin(b.main_am_pinned),
        b.optimized_threads,
        b.cores,
        pin(b.optimized_pinned),
        if b.optimized_threads as usize > b.cores { ", oversubscribed" } else { "" }
    );
    let _ = writeln!(
        s,
        "{:<38} {:>5} {:>20} {:>20} {:>8} {:>20}",
        "operation", "unit", "main-am", "optimized", "opt/main", "MPI-3 RMA"
    );
    for r in &b.rows {
        let _ = writeln!(
            s,
            "{:<38} {:>5} {:>20} {:>20} {:>8.2} {:>20}",
            r.what,
            r.unit,
            cell(&r.main_am),
            cell(&r.optimized),
            r.optimized_over_main_am,
            r.mpi_rma.as_ref().map(cell).unwrap_or_else(|| "absent".into())
        );
    }
    match &b.mpi_rma_absent {
        Some(why) => {
            let _ = writeln!(s, "MPI-3 RMA: absent ({why})");
        }
        None => {
            let _ = writeln!(
                s,
                "MPI-3 RMA: Open MPI, a C peer under mpirun -np 2 --bind-to core (MPI_Win_allocate, MPI_Win_lock_all, \
                 MPI_Get/MPI_Put + MPI_Win_flush; stores polled in the owner's window)"
            );
        }
    }
    let _ = writeln!(s, "OpenSHMEM: absent ({})", b.openshmem_absent);
    s
}
