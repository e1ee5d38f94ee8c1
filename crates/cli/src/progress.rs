//! A progress bar for one long simulated run (a study's sweep has its own,
//! counting runs): requests answered out of those the workload makes.
//!
//! The bar appears only once the run has taken a second, so short runs
//! print nothing extra, and only on a terminal (indicatif hides it
//! otherwise), so piped output and tests see none.

use indicatif::{FormattedDuration, ProgressBar, ProgressStyle};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a run goes before its bar appears.
const QUIET_FOR: Duration = Duration::from_secs(1);
/// How often the bar is redrawn.
const TICK: Duration = Duration::from_millis(200);

/// Runs the simulation `f`, which answers `total` requests, showing how
/// many it has answered while it runs.
pub fn one_run<R>(total: u64, f: impl FnOnce() -> R) -> R {
    let answered = Arc::new(AtomicU64::new(0));
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let shower = s.spawn(|| show(total, &answered, &done));
        let out = finegrain_sim::progress::observed(&answered, f);
        done.store(true, Ordering::Release);
        // Wakes the bar at once: a short run must not wait out a tick.
        shower.thread().unpark();
        out
    })
}

fn show(total: u64, answered: &AtomicU64, done: &AtomicBool) {
    let start = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !done.load(Ordering::Acquire) {
        std::thread::park_timeout(TICK);
        if bar.is_none() && start.elapsed() >= QUIET_FOR {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("simulating [{bar:20}] {percent:>3}% of {len} requests answered{msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar = Some(b);
        }
        if let Some(b) = &bar {
            let n = answered.load(Ordering::Relaxed).min(total);
            b.set_message(time_left(start.elapsed(), n, total));
            b.set_position(n);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

/// Time left at the rate so far: requests are answered at a steady rate
/// once caches are warm, and the bar starts a second in, so indicatif's
/// own estimate (from the steps it saw) would start wrong.
fn time_left(elapsed: Duration, answered: u64, total: u64) -> String {
    if answered == 0 {
        return String::new();
    }
    let left = elapsed.mul_f64((total - answered) as f64 / answered as f64);
    format!(", ~{} left", FormattedDuration(left))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_follows_the_rate_so_far() {
        assert_eq!(time_left(Duration::from_secs(10), 0, 100), "");
        assert_eq!(time_left(Duration::from_secs(10), 25, 100), ", ~00:00:30 left");
        assert_eq!(time_left(Duration::from_secs(10), 100, 100), ", ~00:00:00 left");
    }
}
