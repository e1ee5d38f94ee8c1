//! Runs independent simulations in parallel on all cores, showing how many
//! are done, within one host-memory budget for all the runs at once (each
//! run's simulated caches are bounded alone; a study on many cores must
//! not multiply that bound). Results come back in input order, so outputs
//! do not depend on scheduling.

use crate::progress::{self, Job};
use anyhow::Result;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

/// Runs `f` on every spec in parallel; `bytes` says how much host memory a
/// spec's run may take, and the runs under way together stay within
/// `budget` (a run waits for memory others free; one run larger than the
/// budget alone is refused before anything runs).
pub fn run_all<S, R, F>(specs: &[S], label: &str, bytes: impl Fn(&S) -> u64 + Sync, budget: u64, f: F) -> Result<Vec<R>>
where
    S: Sync,
    R: Send,
    F: Fn(&S) -> Result<R> + Sync,
{
    if let Some(most) = specs.iter().map(&bytes).max().filter(|&b| b > budget) {
        anyhow::bail!(
            "a run would take {:.1} GiB of host memory for its simulated caches; allowed at most {:.1} GiB",
            most as f64 / (1u64 << 30) as f64,
            budget as f64 / (1u64 << 30) as f64
        );
    }
    let memory = Budget::new(budget);
    let done = AtomicU64::new(0);
    let job = Job { label, unit: "runs", total: specs.len() as u64 };
    progress::show_while(job, &done, || {
        specs
            .par_iter()
            // One run per task, so a core that runs out of work takes any
            // run not yet started: left to rayon's own chunking, one core
            // could be left with a tail of long runs (a paper-input grid's
            // last cholesky runs) while the other stood idle.
            .with_max_len(1)
            .map(|s| {
                let need = bytes(s);
                memory.take(need);
                let r = f(s);
                memory.give(need);
                done.fetch_add(1, Ordering::Relaxed);
                r
            })
            .collect::<Result<Vec<R>>>()
    })
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
}
