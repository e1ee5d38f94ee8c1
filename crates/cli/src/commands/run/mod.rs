//! `finegrain run <workload>`: one workload once, on the simulated machine
//! or on real threads. The workload's options (`finegrain_study::run`)
//! build the run and print what it measured; this module reads them, picks
//! the platform and writes the record.

mod platform;
mod trace;

use crate::args::{RunArgs, Workload};
use anyhow::{bail, Result};
use finegrain_rt::Placement;
use finegrain_study::output::{check_writable, run_inputs, write_json};
use finegrain_study::run::{with_file, NativeReport, RunOptions, SimRun};
use std::fmt::Display;
use std::path::Path;

/// `finegrain run <workload>` (and `finegrain fetch-add`).
pub fn run(workload: Workload) -> Result<()> {
    match workload {
        Workload::Micro(a) => run_one(a),
        Workload::FetchAdd(a) => run_one(a),
        Workload::Splitc(a) => run_one(a),
        Workload::Dsm(a) => run_one(a),
    }
}

/// The simulated run of `workload` as `run` would build it: the base of
/// a sweep, which writes every run's record itself and only simulates.
pub fn sweep_base(workload: Workload) -> Result<SimRun> {
    fn of<O: RunOptions + clap::Args>(a: RunArgs<O>) -> Result<SimRun> {
        trace::refuse(&a.trace, "for sweep")?;
        if a.json.is_some() {
            bail!("invalid json for sweep: every run's record goes to --out DIR/runs; allowed with run only");
        }
        let o = options(&a)?;
        if let Some(p) = o.common().platform.as_deref().filter(|p| *p != "sim") {
            bail!("invalid platform = {p} for sweep: allowed sim (native runs are measured one at a time with run)");
        }
        o.simulated()
    }
    match workload {
        Workload::Micro(a) => of(a),
        Workload::FetchAdd(a) => of(a),
        Workload::Splitc(a) => of(a),
        Workload::Dsm(a) => of(a),
    }
}

/// The options the flags ask for, over the file `--config` names.
fn options<O: RunOptions + clap::Args>(a: &RunArgs<O>) -> Result<O> {
    match &a.config {
        Some(path) => with_file(a.options.clone(), path),
        None => Ok(a.options.clone()),
    }
}

/// One run of workload `O` where its options say.
fn run_one<O: RunOptions + clap::Args>(a: RunArgs<O>) -> Result<()> {
    let o = options(&a)?;
    let platform = o.common().platform.as_deref().unwrap_or("sim");
    if a.json.is_some() && platform != "sim" && !O::NATIVE_RECORDS {
        bail!(
            "invalid json with workload {} on platform {platform}: records are written for simulated runs only",
            O::WORKLOAD
        );
    }
    if platform != "sim" {
        trace::refuse(&a.trace, &format!("with platform {platform}"))?;
    }
    let inputs = run_inputs(a.config.as_deref(), o.common().preset.as_deref());
    platform::on_platform(&o, |on| match on {
        None => simulate(&o, &a, &inputs),
        Some(on) => native(&o, on, &a, &inputs),
    })
}

/// The run simulated, its record written and what it measured printed.
fn simulate<O: RunOptions + clap::Args>(o: &O, a: &RunArgs<O>, inputs: &[(Option<&Path>, &str)]) -> Result<()> {
    o.common().refuse_runtime_fields()?;
    let run = o.simulated()?;
    check_writable(a.json.as_deref(), inputs)?;
    let traced = trace::TraceRequest::of(&a.trace, run.config.machine.processor.mhz, inputs)?;
    let done = match traced {
        Some(t) => t.simulate(run)?,
        None => run.simulate()?,
    };
    // The record first: output closed early must not lose it.
    if let Some(path) = &a.json {
        write_json(path, &done.record())?;
    }
    show(&done)
}

/// The run on real threads; in the process holding the results, its
/// record and what it measured.
fn native<O: RunOptions + clap::Args>(
    o: &O,
    on: Placement<'_>,
    a: &RunArgs<O>,
    inputs: &[(Option<&Path>, &str)],
) -> Result<()> {
    // A bad configuration is named before a bad record path, as on the
    // simulator.
    o.native_nodes(on.name())?;
    check_writable(a.json.as_deref(), inputs)?;
    let Some(report) = o.native(on)? else { return Ok(()) };
    if let Some(path) = &a.json {
        report.write_record(path)?;
    }
    show(&report)?;
    if report.oversubscribed() {
        crate::note(format_args!(
            "more threads than cores; the time measures correctness under oversubscription, not speed"
        ));
    }
    Ok(())
}

/// Prints a report (its lines end in newlines of their own).
fn show(report: &impl Display) -> Result<()> {
    crate::stdout_text(format_args!("{report}"))
}
