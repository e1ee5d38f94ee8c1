//! Runs independent simulations in parallel on all cores with a progress
//! bar. Results come back in input order, so outputs do not depend on
//! scheduling.

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

pub fn run_all<S, R, F>(specs: &[S], label: &str, f: F) -> Result<Vec<R>>
where
    S: Sync,
    R: Send,
    F: Fn(&S) -> Result<R> + Sync,
{
    let bar = ProgressBar::new(specs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} runs, {elapsed} elapsed, ~{eta} left")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(label.to_string());
    let out = specs
        .par_iter()
        .map(|s| {
            let r = f(s);
            bar.inc(1);
            r
        })
        .collect::<Result<Vec<R>>>();
    bar.finish_and_clear();
    out
}
