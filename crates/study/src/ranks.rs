//! A study's runs over MPI ranks (`mpirun -np N finegrain reproduce ...`):
//! every rank plans the same runs from the same experiment file; rank 0
//! hands them out one at a time, longest first, to whichever rank asks
//! (itself included, on a thread of its own), gathers each finished run's
//! record, and writes the outputs. Each rank is a study worker running one
//! simulation at a time, not a simulated node: start one rank per core.
//!
//! Messages are JSON over the runtime's byte messages
//! ([`MpiEnv::send_bytes_to`]): a worker says it is ready, or sends the
//! record of the run it finished (or why it failed), and is told the next
//! run or to stop. Rank 0 polls between its own runs' progress, so it
//! never spins on a blocking receive beside its own simulation.

use crate::progress::{self, Board};
use crate::runner::Work;
use anyhow::{anyhow, bail, Context, Result};
use finegrain_rt::MpiEnv;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A worker's word to rank 0.
#[derive(Serialize, Deserialize)]
enum Note {
    /// Ready for a run (its first word).
    Ready,
    /// Run `index` of the plan is done: its record.
    Done {
        index: usize,
        record: String,
    },
    Failed {
        index: usize,
        error: String,
    },
}

/// Rank 0's word to a worker.
#[derive(Serialize, Deserialize)]
enum Order {
    Run { index: usize },
    Stop,
}

/// How long rank 0 waits between looks for a worker's word when nothing
/// came: runs take seconds to hours, so a few milliseconds lose nothing,
/// and the rank's own run keeps its core.
const POLL: Duration = Duration::from_millis(5);

/// Who ran what: each rank's runs and their time, for the report.
pub struct Tally {
    pub ranks: u32,
    /// Per rank: runs, and seconds of simulation.
    pub by_rank: Vec<(u32, f64)>,
}

impl Tally {
    /// The report's sentence on it.
    pub fn line(&self, planned: usize) -> String {
        let each: Vec<String> = self
            .by_rank
            .iter()
            .enumerate()
            .map(|(r, (n, s))| {
                format!("rank {r} ran {n} ({})", indicatif::FormattedDuration(Duration::from_secs_f64(*s)))
            })
            .collect();
        format!(
            "The {planned} runs to simulate were spread over {} MPI ranks, one at a time each, handed out longest first \
             to whichever rank was free: {}.",
            self.ranks,
            each.join(", ")
        )
    }
}

/// What rank 0 has gathered: each run's result, and who ran what.
struct Gathered<R> {
    results: Vec<Option<R>>,
    by_rank: Vec<(u32, f64)>,
    done: usize,
}

impl<R> Gathered<R> {
    fn take(&mut self, i: usize, rank: u32, seconds: f64, r: R) {
        self.results[i] = Some(r);
        self.by_rank[rank as usize].0 += 1;
        self.by_rank[rank as usize].1 += seconds;
        self.done += 1;
    }
}

/// Rank 0: runs `which` of `work` over every rank, `run` making a run's
/// record text here and `read` taking a record text (from any rank) as
/// run `index`'s result. Returns a result for every run of `work`, `None`
/// for those not in `which`. A failed run ends the study once rank 0's
/// own run under way, if any, has ended (the other ranks are stopped by
/// `mpirun` when this one exits with the error).
pub fn coordinate<S, R>(
    env: &MpiEnv,
    work: &Work<S>,
    which: &[usize],
    label: &str,
    run: impl Fn(&S) -> Result<String> + Sync,
    read: impl Fn(usize, &str) -> Result<R>,
) -> Result<(Vec<Option<R>>, Tally)>
where
    S: Sync,
{
    let mut order: Vec<usize> = which.to_vec();
    order.sort_by(|&a, &b| work.costs[b].total_cmp(&work.costs[a]).then(a.cmp(&b)));
    let queue = Mutex::new(VecDeque::from(order.clone()));
    let take = || queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
    let board = Board::new(&work.names, &work.costs, &order, env.ranks as usize);
    let mut got = Gathered {
        results: work.specs.iter().map(|_| None).collect(),
        by_rank: vec![(0, 0.0); env.ranks as usize],
        done: 0,
    };
    let mut started: Vec<Option<Instant>> = vec![None; work.specs.len()];
    let (local_tx, local_rx) = mpsc::channel::<(usize, Result<String>, f64)>();
    let outcome = progress::show_runs(label, &board, || {
        std::thread::scope(|s| -> Result<()> {
            // Rank 0's own worker: the same queue, on a thread of its own,
            // so this thread stays free to answer the others.
            s.spawn(|| {
                while let Some(i) = take() {
                    board.start(i);
                    let t0 = Instant::now();
                    let r = run(&work.specs[i]);
                    if local_tx.send((i, r, t0.elapsed().as_secs_f64())).is_err() {
                        break;
                    }
                }
            });
            let gathered = gather(env, work, &order, &take, &board, &mut got, &mut started, &local_rx, &read);
            if gathered.is_err() {
                queue.lock().unwrap_or_else(|e| e.into_inner()).clear();
            }
            gathered
        })
    });
    outcome?;
    Ok((got.results, Tally { ranks: env.ranks, by_rank: got.by_rank }))
}

/// Rank 0's loop: takes its own worker's results and the other ranks'
/// words until every run is gathered and every other rank told to stop.
#[allow(clippy::too_many_arguments)]
fn gather<S, R>(
    env: &MpiEnv,
    work: &Work<S>,
    order: &[usize],
    take: &impl Fn() -> Option<usize>,
    board: &Board,
    got: &mut Gathered<R>,
    started: &mut [Option<Instant>],
    local: &mpsc::Receiver<(usize, Result<String>, f64)>,
    read: &impl Fn(usize, &str) -> Result<R>,
) -> Result<()> {
    let mut stopped = 0;
    while got.done < order.len() || stopped + 1 < env.ranks {
        let mut idle = true;
        while let Ok((i, r, seconds)) = local.try_recv() {
            idle = false;
            let text = r.with_context(|| format!("run {} (on rank 0)", work.names[i]))?;
            got.take(i, 0, seconds, read(i, &text)?);
            board.finish(i);
        }
        let Some((rank, bytes)) = env.try_receive_bytes() else {
            if idle {
                std::thread::sleep(POLL);
            }
            continue;
        };
        let note: Note = serde_json::from_slice(&bytes)
            .map_err(|e| anyhow!("a message from rank {rank} that is not a study worker's: {e}"))?;
        match note {
            Note::Ready => {}
            Note::Done { index, record } if index < work.specs.len() => {
                let seconds = started[index].take().map_or(0.0, |t| t.elapsed().as_secs_f64());
                let r = read(index, &record)
                    .with_context(|| format!("the record rank {rank} sent of run {}", work.names[index]))?;
                got.take(index, rank, seconds, r);
                board.finish(index);
            }
            Note::Failed { index, error } if index < work.specs.len() => {
                bail!("run {} (on rank {rank}): {error}", work.names[index])
            }
            Note::Done { index, .. } | Note::Failed { index, .. } => {
                bail!("rank {rank} names run {index}, which the plan does not have")
            }
        }
        let next = match take() {
            Some(index) => {
                started[index] = Some(Instant::now());
                board.start(index);
                Order::Run { index }
            }
            None => {
                stopped += 1;
                Order::Stop
            }
        };
        env.send_bytes_to(rank, &serde_json::to_vec(&next)?);
    }
    Ok(())
}

/// Every other rank: asks rank 0 for runs of `specs`, runs each with
/// `run` and sends back its record text, until told to stop.
pub fn serve<S>(env: &MpiEnv, specs: &[S], run: impl Fn(&S) -> Result<String>) -> Result<()> {
    let mut note = Note::Ready;
    loop {
        env.send_bytes_to(0, &serde_json::to_vec(&note)?);
        let order: Order = serde_json::from_slice(&env.receive_bytes_from(0))
            .map_err(|e| anyhow!("a message from rank 0 that is not a study's order: {e}"))?;
        let index = match order {
            Order::Stop => return Ok(()),
            Order::Run { index } => index,
        };
        let spec =
            specs.get(index).ok_or_else(|| anyhow!("rank 0 asks for run {index}, which the plan does not have"))?;
        note = match run(spec) {
            Ok(record) => Note::Done { index, record },
            Err(e) => Note::Failed { index, error: format!("{e:#}") },
        };
    }
}
