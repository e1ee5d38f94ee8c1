//! Progress of long work: a study's runs (how many are done, which are
//! under way, and how long the rest will take, from their planned costs),
//! a sweep's, or the requests one long simulated run has answered. On a
//! terminal a bar (after a second, so short work prints nothing extra);
//! otherwise, for logs and CI, a line on standard error every few
//! seconds. Progress changes no result, so a line that cannot be written
//! is dropped.

use indicatif::{FormattedDuration, ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    let status = |elapsed: Duration| {
        let n = done.load(Ordering::Relaxed).min(job.total);
        (n, time_left(elapsed, n, job.total))
    };
    show_status_while(job, &status, f)
}

/// Runs `f`, which starts and finishes the runs on `board`, showing how
/// many are done, which are under way and how long the rest will take.
pub fn show_runs<R>(label: &str, board: &Board, f: impl FnOnce() -> R) -> R {
    let job = Job { label, unit: "runs", total: board.total() };
    let status = |_: Duration| board.status();
    show_status_while(job, &status, f)
}

/// What a progress display shows at an elapsed time: how many are done,
/// and the rest of the line (after the count).
type Status<'a> = dyn Fn(Duration) -> (u64, String) + Sync + 'a;

fn show_status_while<R>(job: Job, status: &Status, f: impl FnOnce() -> R) -> R {
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        let shower = s.spawn(|| show(job, status, &finished));
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

fn show(job: Job, status: &Status, finished: &AtomicBool) {
    let start = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let mut bar: Option<ProgressBar> = None;
    let mut last_line = start;
    while !finished.load(Ordering::Acquire) {
        std::thread::park_timeout(TICK);
        if terminal {
            if bar.is_none() && start.elapsed() >= QUIET_FOR {
                bar = Some(new_bar(job));
            }
            if let Some(b) = &bar {
                let (n, rest) = status(start.elapsed());
                b.set_message(rest);
                b.set_position(n);
            }
        } else if last_line.elapsed() >= LINE_EVERY && !finished.load(Ordering::Acquire) {
            last_line = Instant::now();
            let (n, rest) = status(start.elapsed());
            use std::io::Write;
            let _ = writeln!(std::io::stderr().lock(), "{}", line(job, start.elapsed(), n, &rest));
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
/// terminal: the count, the time so far, then `rest` (what is under way,
/// the time left).
fn line(job: Job, elapsed: Duration, done: u64, rest: &str) -> String {
    if job.total == 0 {
        return format!("{}: {} elapsed", job.label, FormattedDuration(elapsed));
    }
    format!("{}: {done}/{} {}, {} elapsed{rest}", job.label, job.total, job.unit, FormattedDuration(elapsed))
}

/// A study's runs: which are done and which under way, with their planned
/// costs, for a progress line that names the runs under way and an
/// estimate of the time left that knows the long runs are long. Runs
/// start and finish on any thread (or, under MPI, on other ranks).
pub struct Board {
    names: Vec<String>,
    costs: Vec<f64>,
    /// Runs this board counts (of the plan's), and the workers running them.
    total: u64,
    workers: usize,
    state: Mutex<Runs>,
}

#[derive(Default)]
struct Runs {
    /// Runs under way and when each started.
    under_way: Vec<(usize, Instant)>,
    /// Runs not started yet (of those counted).
    waiting: Vec<usize>,
    done: u64,
    /// Planned and actual seconds of the runs done.
    done_planned: f64,
    done_actual: f64,
}

impl Board {
    /// A board for the runs `counted` of those `names` names, each
    /// planned to take `costs` seconds, run by `workers` at once.
    pub fn new(names: &[String], costs: &[f64], counted: &[usize], workers: usize) -> Board {
        Board {
            names: names.to_vec(),
            costs: costs.to_vec(),
            total: counted.len() as u64,
            workers: workers.max(1),
            state: Mutex::new(Runs { waiting: counted.to_vec(), ..Runs::default() }),
        }
    }

    fn total(&self) -> u64 {
        self.total
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, Runs> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn start(&self, i: usize) {
        let mut r = self.runs();
        r.waiting.retain(|&w| w != i);
        r.under_way.push((i, Instant::now()));
    }

    pub fn finish(&self, i: usize) {
        let mut r = self.runs();
        if let Some(k) = r.under_way.iter().position(|&(u, _)| u == i) {
            let (_, started) = r.under_way.remove(k);
            r.done += 1;
            r.done_planned += self.costs[i];
            r.done_actual += started.elapsed().as_secs_f64();
        }
    }

    /// How many are done, then the rest of the progress line.
    fn status(&self) -> (u64, String) {
        let r = self.runs();
        let now = Instant::now();
        let under_way: Vec<(usize, f64)> =
            r.under_way.iter().map(|&(i, t)| (i, now.duration_since(t).as_secs_f64())).collect();
        let left = time_left_planned(
            &r.waiting.iter().map(|&i| self.costs[i]).collect::<Vec<_>>(),
            &under_way.iter().map(|&(i, e)| (self.costs[i], e)).collect::<Vec<_>>(),
            (r.done_planned, r.done_actual),
            self.workers,
        );
        let mut rest = String::new();
        if !under_way.is_empty() {
            let mut longest = under_way.clone();
            longest.sort_by(|a, b| b.1.total_cmp(&a.1));
            let shown: Vec<String> = longest
                .iter()
                .take(3)
                .map(|&(i, e)| format!("{} {}", self.names[i], FormattedDuration(Duration::from_secs_f64(e))))
                .collect();
            let more = if longest.len() > 3 { format!(" and {} more", longest.len() - 3) } else { String::new() };
            rest += &format!(", {} under way ({}{more})", under_way.len(), shown.join(", "));
        }
        if let Some(left) = left {
            rest += &format!(", ~{} left", FormattedDuration(left));
        }
        (r.done, rest)
    }
}

/// Time left for runs not started (their planned costs) and under way
/// (planned cost, seconds so far) on `workers` at once. Planned costs are
/// scaled by how long the runs done took against their plan (`done`:
/// planned, actual seconds), trusted in full once they make a tenth of
/// the work (a few short runs say little of the long ones). At least the
/// longest run left: no sharing of the work hides it.
fn time_left_planned(waiting: &[f64], under_way: &[(f64, f64)], done: (f64, f64), workers: usize) -> Option<Duration> {
    if waiting.is_empty() && under_way.is_empty() {
        return None;
    }
    let total = done.0 + waiting.iter().sum::<f64>() + under_way.iter().map(|u| u.0).sum::<f64>();
    let trust = if total > 0.0 { (done.0 / (0.1 * total)).min(1.0) } else { 0.0 };
    let measured = if done.0 > 0.0 { done.1 / done.0 } else { 1.0 };
    let scale = 1.0 + trust * (measured - 1.0);
    let left_each = waiting.iter().map(|c| c * scale).chain(under_way.iter().map(|&(c, e)| (c * scale - e).max(0.0)));
    let (sum, longest) = left_each.fold((0.0f64, 0.0f64), |(s, m), x| (s + x, m.max(x)));
    Some(Duration::from_secs_f64((sum / workers as f64).max(longest)))
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
        let elapsed = Duration::from_secs(10);
        assert_eq!(
            line(job, elapsed, 10, &time_left(elapsed, 10, 40)),
            "pdq-micro (quick): 10/40 runs, 00:00:10 elapsed, ~00:00:30 left"
        );
    }

    #[test]
    fn work_of_unknown_size_shows_only_its_time() {
        let job = Job { label: "simulating", unit: "requests answered", total: 0 };
        assert_eq!(line(job, Duration::from_secs(7), 0, ""), "simulating: 00:00:07 elapsed");
    }

    #[test]
    fn time_left_knows_the_long_runs_are_long() {
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64().round() as u64);
        // Two workers, four planned runs of 100, 10, 10, 10 s: 65 s of work
        // each, but the 100 s run alone takes 100.
        assert_eq!(secs(time_left_planned(&[100.0, 10.0, 10.0, 10.0], &[], (0.0, 0.0), 2)), Some(100));
        assert_eq!(secs(time_left_planned(&[10.0; 8], &[], (0.0, 0.0), 2)), Some(40));
        // Runs so far (over a tenth of the work) took twice their plan:
        // so will the rest; a sliver of the work is trusted less.
        assert_eq!(secs(time_left_planned(&[10.0; 8], &[], (50.0, 100.0), 2)), Some(80));
        assert_eq!(secs(time_left_planned(&[10.0; 8], &[], (1.3, 2.6), 2)), Some(46));
        // A run under way for 30 of its planned 100 s has 70 left.
        assert_eq!(secs(time_left_planned(&[], &[(100.0, 30.0)], (0.0, 0.0), 2)), Some(70));
        assert_eq!(time_left_planned(&[], &[], (10.0, 10.0), 2), None);
    }

    #[test]
    fn a_board_names_the_runs_under_way() {
        let names: Vec<String> = vec!["cholesky".into(), "fft".into(), "em3d".into()];
        let board = Board::new(&names, &[100.0, 10.0, 10.0], &[0, 1, 2], 2);
        board.start(0);
        board.start(2);
        let (done, rest) = board.status();
        assert_eq!(done, 0);
        assert!(rest.starts_with(", 2 under way (cholesky 00:00:00, em3d 00:00:00), ~00:01:"), "{rest}");
        board.finish(2);
        assert_eq!(board.status().0, 1);
    }
}
