//! Runs independent simulations in parallel on all cores, showing how many
//! are done. Results come back in input order, so outputs do not depend on
//! scheduling.

use crate::progress::{self, Job};
use anyhow::Result;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

pub fn run_all<S, R, F>(specs: &[S], label: &str, f: F) -> Result<Vec<R>>
where
    S: Sync,
    R: Send,
    F: Fn(&S) -> Result<R> + Sync,
{
    let done = AtomicU64::new(0);
    let job = Job { label, unit: "runs", total: specs.len() as u64 };
    progress::show_while(job, &done, || {
        specs
            .par_iter()
            .map(|s| {
                let r = f(s);
                done.fetch_add(1, Ordering::Relaxed);
                r
            })
            .collect::<Result<Vec<R>>>()
    })
}
