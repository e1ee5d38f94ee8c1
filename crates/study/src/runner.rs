//! Runs independent simulations, longest first: on this host's cores, as
//! one share of a batch job (`reproduce --shard I/N`), or over the MPI
//! ranks of an `mpirun` ([`crate::ranks`]). Results come back in plan
//! order whoever ran them, so outputs do not depend on scheduling. The
//! runs under way on one host stay within one host-memory budget (each
//! run's simulated caches are bounded alone; a study on many cores must
//! not multiply that bound).
//!
//! Longest first is the classic rule for keeping a pool of workers busy to
//! the end: the last runs to start are the short ones, so no worker is
//! left finishing a long run alone while the others stand idle. How long a
//! run is comes from its planned cost, an estimate from its input's size
//! ([`finegrain_apps::WorkloadSpec::planned_seconds`]).

use crate::progress::{self, Board};
use anyhow::{anyhow, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Runs to make: what each is, and what it is planned to cost.
pub struct Work<'a, S> {
    pub specs: &'a [S],
    /// Planned seconds of one core, per run.
    pub costs: Vec<f64>,
    /// Each run's name, for progress.
    pub names: Vec<String>,
}

impl<S> Work<'_, S> {
    /// Every run's index, longest first (ties in plan order).
    pub fn longest_first(&self) -> Vec<usize> {
        longest_first(&self.costs, 0..self.specs.len())
    }

    /// The indices of share `index` (1-based) of `count`: runs are dealt
    /// longest first, each to the share planned to be done soonest (ties:
    /// the lowest share), the rule that best evens out fixed shares. Every
    /// share of one plan is computed alike, wherever it runs.
    pub fn share(&self, index: u32, count: u32) -> Vec<usize> {
        let mut load = vec![0.0f64; count as usize];
        let mut mine = Vec::new();
        for i in self.longest_first() {
            let s = (0..load.len()).min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b))).expect("a share");
            load[s] += self.costs[i];
            if s as u32 + 1 == index {
                mine.push(i);
            }
        }
        mine
    }

    /// The planned cost of `indices`.
    pub fn cost_of(&self, indices: &[usize]) -> f64 {
        indices.iter().map(|&i| self.costs[i]).sum()
    }
}

/// `indices` sorted longest first, ties in plan order.
fn longest_first(costs: &[f64], indices: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut order: Vec<usize> = indices.collect();
    order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]).then(a.cmp(&b)));
    order
}

/// Runs `f` on the runs `which` (any order) of `work` on all this host's
/// cores, longest first, each core taking the next run as it finishes one;
/// `bytes` says how much host memory a run may take, and the runs under
/// way together stay within `budget` (a run waits for memory others free;
/// one run larger than the budget alone is refused before anything runs).
/// Returns a result for every run of `work`, `None` for those not in
/// `which`. The first failure stops the cores taking new runs.
pub fn on_cores<S, R, F>(
    work: &Work<S>,
    which: &[usize],
    label: &str,
    bytes: impl Fn(&S) -> u64 + Sync,
    budget: u64,
    f: F,
) -> Result<Vec<Option<R>>>
where
    S: Sync,
    R: Send,
    F: Fn(&S) -> Result<R> + Sync,
{
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    on_workers(work, which, label, cores, bytes, budget, f)
}

/// [`on_cores`] with `workers` runs under way at once at most: 1 for runs
/// that use every core themselves (a native run's threads), whose times
/// another run beside them would distort.
pub fn on_workers<S, R, F>(
    work: &Work<S>,
    which: &[usize],
    label: &str,
    workers: usize,
    bytes: impl Fn(&S) -> u64 + Sync,
    budget: u64,
    f: F,
) -> Result<Vec<Option<R>>>
where
    S: Sync,
    R: Send,
    F: Fn(&S) -> Result<R> + Sync,
{
    check_budget(which.iter().map(|&i| bytes(&work.specs[i])), budget)?;
    let order = longest_first(&work.costs, which.iter().copied());
    let cores = workers.max(1).min(order.len().max(1));
    let board = Board::new(&work.names, &work.costs, &order, cores);
    let memory = Budget::new(budget);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let results: Vec<Mutex<Option<Result<R>>>> = work.specs.iter().map(|_| Mutex::new(None)).collect();
    progress::show_runs(label, &board, || {
        std::thread::scope(|s| {
            for _ in 0..cores {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else { break };
                        let spec = &work.specs[i];
                        let need = bytes(spec);
                        memory.take(need);
                        board.start(i);
                        let r = f(spec);
                        board.finish(i);
                        memory.give(need);
                        stop.fetch_or(r.is_err(), Ordering::Relaxed);
                        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                    }
                });
            }
        })
    });
    // The plan's first failure, so the error does not depend on timing.
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        out.push(r.into_inner().unwrap_or_else(|e| e.into_inner()).transpose()?);
    }
    Ok(out)
}

/// Runs `f` on every spec on all cores (no planned costs: in plan order),
/// results in plan order: a sweep's runs.
pub fn run_all<S, R, F>(specs: &[S], label: &str, bytes: impl Fn(&S) -> u64 + Sync, budget: u64, f: F) -> Result<Vec<R>>
where
    S: Sync,
    R: Send,
    F: Fn(&S) -> Result<R> + Sync,
{
    let work =
        Work { specs, costs: vec![1.0; specs.len()], names: (0..specs.len()).map(|i| format!("#{i}")).collect() };
    let all: Vec<usize> = (0..specs.len()).collect();
    let out = on_cores(&work, &all, label, bytes, budget, f)?;
    out.into_iter().map(|r| r.ok_or_else(|| anyhow!("a run went missing"))).collect()
}

/// Refuses a run larger than the whole budget before anything runs.
fn check_budget(bytes: impl Iterator<Item = u64>, budget: u64) -> Result<()> {
    if let Some(most) = bytes.max().filter(|&b| b > budget) {
        anyhow::bail!(
            "a run would take {:.1} GiB of host memory for its simulated caches; allowed at most {:.1} GiB",
            most as f64 / (1u64 << 30) as f64,
            budget as f64 / (1u64 << 30) as f64
        );
    }
    Ok(())
}

/// Host memory left for runs to take.
struct Budget {
    left: Mutex<u64>,
    freed: Condvar,
}

impl Budget {
    fn new(bytes: u64) -> Budget {
        Budget { left: Mutex::new(bytes), freed: Condvar::new() }
    }

    /// Waits until `bytes` are left, and takes them.
    fn take(&self, bytes: u64) {
        // A poisoned lock means a run panicked while holding it, which the
        // runner reports anyway: the count itself stays whole.
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        while *left < bytes {
            left = self.freed.wait(left).unwrap_or_else(|e| e.into_inner());
        }
        *left -= bytes;
    }

    fn give(&self, bytes: u64) {
        *self.left.lock().unwrap_or_else(|e| e.into_inner()) += bytes;
        self.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn runs_together_stay_within_the_budget() {
        let at_once = AtomicU64::new(0);
        let most = AtomicU64::new(0);
        let specs: Vec<u64> = (0..32).collect();
        let out = run_all(
            &specs,
            "test",
            |_| 40,
            100,
            |&s| {
                let now = at_once.fetch_add(40, Ordering::SeqCst) + 40;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(2));
                at_once.fetch_sub(40, Ordering::SeqCst);
                Ok(s * 2)
            },
        )
        .unwrap();
        assert_eq!(out, specs.iter().map(|s| s * 2).collect::<Vec<_>>(), "results in input order");
        assert!(most.load(Ordering::SeqCst) <= 100, "{} bytes at once", most.load(Ordering::SeqCst));
        let e = run_all(&specs, "test", |&s| if s == 3 { 200 } else { 1 }, 100, |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("allowed at most"), "{e}");
    }

    fn work(costs: &[f64]) -> Work<'static, ()> {
        static SPECS: [(); 16] = [(); 16];
        Work { specs: &SPECS[..costs.len()], costs: costs.to_vec(), names: vec![String::new(); costs.len()] }
    }

    #[test]
    fn runs_go_longest_first_and_shares_even_out() {
        let w = work(&[1.0, 9.0, 3.0, 9.0, 2.0, 5.0]);
        assert_eq!(w.longest_first(), vec![1, 3, 5, 2, 4, 0]);
        // Dealt longest first to the least loaded share: 9 | 9 | 5+3, then
        // 2 to the second... each share is every run once over the shares.
        let shares: Vec<Vec<usize>> = (1..=3).map(|s| w.share(s, 3)).collect();
        assert_eq!(shares, vec![vec![1, 0], vec![3], vec![5, 2, 4]]);
        let mut all: Vec<usize> = shares.concat();
        all.sort();
        assert_eq!(all, (0..6).collect::<Vec<_>>());
        assert_eq!(w.share(1, 1), w.longest_first());
        // More shares than runs: the extra ones are empty.
        assert!(w.share(8, 8).is_empty());
    }

    #[test]
    fn the_first_failure_in_plan_order_is_reported_and_stops_new_runs() {
        let specs: Vec<u64> = (0..40).collect();
        let w = Work { specs: &specs, costs: vec![1.0; 40], names: vec![String::new(); 40] };
        let ran = AtomicU64::new(0);
        let all: Vec<usize> = (0..40).collect();
        let e = on_cores(
            &w,
            &all,
            "test",
            |_| 0,
            1,
            |&s| {
                ran.fetch_add(1, Ordering::SeqCst);
                if s >= 3 {
                    anyhow::bail!("run {s} failed")
                }
                Ok(s)
            },
        )
        .expect_err("a run failed");
        assert_eq!(e.to_string(), "run 3 failed");
        assert!(ran.load(Ordering::SeqCst) < 40, "new runs stopped");
    }
}
