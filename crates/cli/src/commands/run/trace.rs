//! `--trace FILE`: a simulated run recorded as a timeline (Chrome
//! trace-event JSON). The flags are checked before the run starts; the
//! run itself is the one `run` makes without them, only observed.

use crate::args::TraceArgs;
use anyhow::{bail, Context, Result};
use finegrain_sim::timeline::chrome::{Bounds, ChromeTrace, DEFAULT_MAX_EVENTS};
use finegrain_sim::timeline::recorded;
use finegrain_study::run::{SimRun, Simulated};
use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// What `--trace` asks for, checked: where to write and what to keep.
pub struct TraceRequest {
    path: PathBuf,
    bounds: Bounds,
}

const WINDOW_ALLOWED: &str = "allowed START..END in cycles, or in microseconds with a `us` suffix, START before END, \
                              either end left out (e.g. 0..50000, 10us..20us, 100000..)";

/// The trace flags refused where no timeline is recorded (`what` says
/// where: a platform, or sweep).
pub fn refuse(t: &TraceArgs, what: &str) -> Result<()> {
    let given = [("trace", t.trace.is_some()), ("trace_window", t.trace_window.is_some())];
    let given = given.into_iter().chain([("trace_events", t.trace_events.is_some())]);
    if let Some((flag, _)) = given.into_iter().find(|(_, g)| *g) {
        bail!(
            "invalid {flag} {what}: a timeline is recorded for one simulated run; allowed with `run` on platform sim"
        );
    }
    Ok(())
}

impl TraceRequest {
    /// The request the flags make for a machine of `mhz`, or None without
    /// `--trace`; `inputs` are files the run reads, which the timeline
    /// must not overwrite.
    pub fn of(t: &TraceArgs, mhz: u32, inputs: &[(Option<&Path>, &str)]) -> Result<Option<TraceRequest>> {
        let Some(path) = &t.trace else {
            if t.trace_window.is_some() || t.trace_events.is_some() {
                let flag = if t.trace_window.is_some() { "trace_window" } else { "trace_events" };
                bail!(
                    "invalid {flag} without --trace: it bounds the timeline --trace FILE writes; allowed with --trace"
                );
            }
            return Ok(None);
        };
        let window = match &t.trace_window {
            Some(w) => parse_window(w, mhz)?,
            None => (0, u64::MAX),
        };
        let max_events = t.trace_events.unwrap_or(DEFAULT_MAX_EVENTS);
        if max_events == 0 {
            bail!("invalid trace_events = 0: allowed 1 or more (events kept in the timeline)");
        }
        check_output(path, inputs)?;
        Ok(Some(TraceRequest { path: path.clone(), bounds: Bounds { window, max_events } }))
    }

    /// Simulates `run` recording its timeline, and writes it.
    pub fn simulate(&self, run: SimRun) -> Result<Simulated> {
        let mhz = run.config.machine.processor.mhz as f64;
        let about = serde_json::json!({
            "workload": run.workload,
            "seed": run.config.run.seed,
            "topology": run.config.run.topology,
            "policy": run.config.run.policy,
            "preset": run.preset,
        });
        let trace = Rc::new(RefCell::new(ChromeTrace::new(self.bounds)));
        let done = recorded(trace.clone(), || run.simulate())?;
        let fail =
            |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot write the timeline to {}: {e}", self.path.display());
        let file = std::fs::File::create(&self.path).map_err(|e| fail(&e))?;
        let mut out = std::io::BufWriter::new(file);
        trace.borrow().write(&mut out, mhz, about).map_err(|e| fail(&e))?;
        out.flush().map_err(|e| fail(&e))?;
        if let Some(cut) = trace.borrow().cut_at() {
            crate::note(format_args!(
                "timeline cut at {} events (cycle {cut} on is missing); raise --trace-events or narrow --trace-window",
                self.bounds.max_events
            ));
        }
        Ok(done)
    }
}

/// `START..END` as cycles of a machine of `mhz`: whole numbers are cycles,
/// numbers with a `us` suffix microseconds.
fn parse_window(text: &str, mhz: u32) -> Result<(u64, u64)> {
    let bad = || anyhow::anyhow!("invalid trace_window = {text}: {WINDOW_ALLOWED}");
    let (from, to) = text.split_once("..").ok_or_else(bad)?;
    let end = |s: &str, open: u64| -> Result<u64> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(open);
        }
        match s.strip_suffix("us") {
            Some(us) => {
                let us: f64 = us.trim().parse().map_err(|_| bad())?;
                let cycles = us * mhz as f64;
                if !(cycles.is_finite() && cycles >= 0.0 && cycles < u64::MAX as f64) {
                    return Err(bad());
                }
                Ok(cycles.round() as u64)
            }
            None => s.parse().map_err(|_| bad()),
        }
    };
    let (from, to) = (end(from, 0)?, end(to, u64::MAX)?);
    if from >= to {
        return Err(bad());
    }
    Ok((from, to))
}

/// The timeline's file may be written and is none of the run's inputs.
fn check_output(path: &Path, inputs: &[(Option<&Path>, &str)]) -> Result<()> {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    for (input, what) in inputs {
        if input.is_some_and(|i| same(path, i)) {
            bail!("invalid trace = {}: it is the {what} being read; allowed another file", path.display());
        }
    }
    if path.is_dir() {
        bail!("cannot write the timeline to {}: it is a directory", path.display());
    }
    // Opened (and a new file removed again) before the run, which may be
    // long, rather than found unwritable after it.
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("cannot write the timeline to {}", path.display()))?;
    if !existed {
        std::fs::remove_file(path).with_context(|| format!("cannot write the timeline to {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_window;

    #[test]
    fn a_window_is_cycles_or_microseconds_with_either_end_open() {
        assert_eq!(parse_window("2000..50000", 200).unwrap(), (2000, 50000));
        assert_eq!(parse_window("10us..20us", 200).unwrap(), (2000, 4000));
        assert_eq!(parse_window("100000..", 200).unwrap(), (100000, u64::MAX));
        assert_eq!(parse_window("..1.5us", 200).unwrap(), (0, 300));
    }

    #[test]
    fn a_bad_window_is_named_in_one_line() {
        for bad in ["5..5", "9..3", "abc", "1..x", "-1us..2us", "1e400us..", "10"] {
            let e = parse_window(bad, 200).unwrap_err().to_string();
            assert!(e.starts_with(&format!("invalid trace_window = {bad}: allowed START..END")), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
