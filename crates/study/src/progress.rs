//! Progress of long work: the runs of a sweep done, or the requests one
//! long simulated run has answered. On a terminal a bar (after a second,
//! so short work prints nothing extra); otherwise, for logs and CI, a
//! line on standard error every few seconds. Progress changes no result,
//! so a line that cannot be written is dropped.

use indicatif::{FormattedDuration, ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long work goes before its progress shows.
const QUIET_FOR: Duration = Duration::from_secs(1);
/// How often the bar is redrawn.
const TICK: Duration = Duration::from_millis(200);
/// How often a line is written when standard error is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// What is being counted, for the bar and the lines.
#[derive(Clone, Copy)]
pub struct Job<'a> {
    /// What the work is ("scheduling-micro (quick)", "simulating").
    pub label: &'a str,
    /// What is counted ("runs", "requests answered").
    pub unit: &'a str,
    pub total: u64,
}

/// Runs `f`, showing `done` (which `f` advances) against `job.total`.
pub fn show_while<R>(job: Job, done: &AtomicU64, f: impl FnOnce() -> R) -> R {
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        let shower = s.spawn(|| show(job, done, &finished));
        let out = f();
        finished.store(true, Ordering::Release);
        // Wakes the shower at once: short work must not wait out a tick.
        shower.thread().unpark();
        out
    })
}

/// Runs the simulation `f`, which answers `total` requests, showing how
/// many it has answered while it runs; with no known total (a program
/// whose messages are not requests, such as the DSM's), only the time it
/// has taken.
pub fn one_run<R>(total: Option<u64>, f: impl FnOnce() -> R) -> R {
    let answered = Arc::new(AtomicU64::new(0));
    let job = Job { label: "simulating", unit: "requests answered", total: total.unwrap_or(0) };
    show_while(job, &answered, || finegrain_sim::progress::observed(&answered, f))
}

fn show(job: Job, done: &AtomicU64, finished: &AtomicBool) {
    let start = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let mut bar: Option<ProgressBar> = None;
    let mut last_line = start;
    while !finished.load(Ordering::Acquire) {
        std::thread::park_timeout(TICK);
        let n = done.load(Ordering::Relaxed).min(job.total);
        if terminal {
            if bar.is_none() && start.elapsed() >= QUIET_FOR {
                bar = Some(new_bar(job));
            }
            if let Some(b) = &bar {
                b.set_message(time_left(start.elapsed(), n, job.total));
                b.set_position(n);
            }
        } else if last_line.elapsed() >= LINE_EVERY && !finished.load(Ordering::Acquire) {
            last_line = Instant::now();
            use std::io::Write;
            let _ = writeln!(std::io::stderr().lock(), "{}", line(job, start.elapsed(), n));
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

fn new_bar(job: Job) -> ProgressBar {
    if job.total == 0 {
        let b = ProgressBar::new_spinner();
        let template = format!("{} {{spinner}} {{elapsed}}", job.label);
        b.set_style(ProgressStyle::with_template(&template).expect("valid template"));
        return b;
    }
    let b = ProgressBar::new(job.total);
    let template = format!("{} [{{bar:30}}] {{pos}}/{{len}} {}{{msg}}", job.label, job.unit);
    b.set_style(ProgressStyle::with_template(&template).expect("valid template").progress_chars("=> "));
    b
}

/// The line written every few seconds when standard error is not a
/// terminal.
fn line(job: Job, elapsed: Duration, done: u64) -> String {
    if job.total == 0 {
        return format!("{}: {} elapsed", job.label, FormattedDuration(elapsed));
    }
    format!(
        "{}: {done}/{} {}, {} elapsed{}",
        job.label,
        job.total,
        job.unit,
        FormattedDuration(elapsed),
        time_left(elapsed, done, job.total)
    )
}

/// Time left at the rate so far: the work proceeds at a steady rate once
/// caches are warm, and the bar starts a second in, so indicatif's own
/// estimate (from the steps it saw) would start wrong.
fn time_left(elapsed: Duration, done: u64, total: u64) -> String {
    if done == 0 {
        return String::new();
    }
    let left = elapsed.mul_f64((total - done) as f64 / done as f64);
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

    #[test]
    fn a_line_says_how_far_the_work_is() {
        let job = Job { label: "pdq-micro (quick)", unit: "runs", total: 40 };
        assert_eq!(
            line(job, Duration::from_secs(10), 10),
            "pdq-micro (quick): 10/40 runs, 00:00:10 elapsed, ~00:00:30 left"
        );
    }

    #[test]
    fn work_of_unknown_size_shows_only_its_time() {
        let job = Job { label: "simulating", unit: "requests answered", total: 0 };
        assert_eq!(line(job, Duration::from_secs(7), 0), "simulating: 00:00:07 elapsed");
    }
}
