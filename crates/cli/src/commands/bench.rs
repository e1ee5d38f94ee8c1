//! `finegrain bench`: the benchmarks, each writing JSON if asked.

use crate::args::{BenchArgs, BenchCommand, PingpongArgs};
use crate::say;
use anyhow::{bail, Result};
use finegrain_bench::{native as native_bench, platforms, sim as bench, Effort};
use finegrain_rt::{MpiEnv, Placement, Start};
use finegrain_study::output::{check_writable, write_json};
use serde::Serialize;
use std::path::PathBuf;

pub fn bench(what: BenchCommand) -> Result<()> {
    match what {
        BenchCommand::Pingpong(PingpongArgs { platform, common: BenchArgs { quick, json } }) => {
            check_writable(json.as_deref(), &[])?;
            let Some(platform) = across(&platform)? else {
                let rows = native_bench::pingpong(effort(quick))?;
                write(json, &rows)?;
                say!("{}", native_bench::pingpong_table(&rows).trim_end());
                return Ok(());
            };
            let rows = platforms::pingpong(platform, effort(quick), quick)?;
            write(json, &rows)?;
            say!("{}", platforms::pingpong_table(&rows).trim_end());
            Ok(())
        }
        BenchCommand::PingpongNode { platform, size, quick } => pingpong_node(&platform, size, quick),
        BenchCommand::Rate(PingpongArgs { platform, common: BenchArgs { quick, json } }) => {
            check_writable(json.as_deref(), &[])?;
            let Some(platform) = across(&platform)? else {
                let row = native_bench::rate(effort(quick))?;
                write(json, &row)?;
                say!("{}", native_bench::rate_table(&row).trim_end());
                return Ok(());
            };
            let row = platforms::rate(platform, effort(quick), quick)?;
            write(json, &row)?;
            say!("{}", platforms::rate_table(&row).trim_end());
            Ok(())
        }
        BenchCommand::RateNode { platform, quick } => rate_node(&platform, quick),
        BenchCommand::Interrupt(BenchArgs { quick, json }) => {
            check_writable(json.as_deref(), &[])?;
            let row = native_bench::interrupt(quick)?;
            write(json, &row)?;
            say!("{}", native_bench::interrupt_table(&row).trim_end());
            Ok(())
        }
        BenchCommand::Pdq(BenchArgs { quick, json }) => {
            check_writable(json.as_deref(), &[])?;
            let rows = native_bench::pdq(effort(quick))?;
            write(json, &rows)?;
            say!("{}", native_bench::pdq_table(&rows).trim_end());
            Ok(())
        }
        BenchCommand::Splitc(BenchArgs { quick, json }) => {
            check_writable(json.as_deref(), &[])?;
            let b = finegrain_bench::splitc::splitc(effort(quick))?;
            write(json, &b)?;
            say!("{}", finegrain_bench::splitc::splitc_table(&b).trim_end());
            Ok(())
        }
        BenchCommand::Sim { rounds, requests_per_node, paper, against, runs, json } => {
            check_writable(json.as_deref(), &[])?;
            if paper {
                let rows = finegrain_bench::sim_paper::paper(against.as_deref(), rounds.unwrap_or(1), &runs)?;
                write(json, &rows)?;
                say!("{}", finegrain_bench::sim_paper::paper_table(&rows).trim_end());
                if rows.iter().any(|r| r.same_records == Some(false)) {
                    anyhow::bail!("the two builds' records differ (beyond wall-clock figures) on a run marked DIFFER");
                }
                return Ok(());
            }
            let rows = bench::sim(rounds.unwrap_or(5), requests_per_node)?;
            write(json, &rows)?;
            say!("{}", bench::sim_table(&rows).trim_end());
            Ok(())
        }
    }
}

/// The platform a benchmark runs across processes on (None: native).
fn across(platform: &str) -> Result<Option<&'static str>> {
    match Placement::named(platform) {
        Some("native") => Ok(None),
        Some(name) => Ok(Some(name)),
        None => bail!("invalid platform = {platform}: allowed {}", Placement::NAMES),
    }
}

/// This process's node of a benchmark across processes (MPI, if it is a
/// rank, initialised in `mpi`).
fn node_placement<'a>(platform: &str, mpi: &'a mut Option<MpiEnv>) -> Result<Placement<'a>> {
    let threads = || Ok(platforms::config().threads_per_node());
    match Placement::detect(platform, threads, mpi).map_err(anyhow::Error::msg)? {
        Some(Start::Here(on)) if on.across_processes() => Ok(on),
        Some(Start::Launch(_)) => {
            bail!(
                "this benchmark node runs under its launcher (finegrain bench pingpong or rate --platform {platform})"
            )
        }
        _ => bail!("invalid platform = {platform}: allowed shm, mpi"),
    }
}

/// One node process of the streaming rate across processes; node 0
/// prints its median.
fn rate_node(platform: &str, quick: bool) -> Result<()> {
    let s = platforms::Stream::new(effort(quick))?;
    let mut mpi = None;
    let on = node_placement(platform, &mut mpi)?;
    let out = on.run_node(&platforms::config(), &s.table, |p| s.node(p))?;
    if on.has_results() {
        say!("per_s {}", finegrain_rt::probe::median(out.results.into_iter().flatten().collect()));
    }
    Ok(())
}

/// One node process of the ping-pong across processes; node 0 prints its
/// median for the benchmark that started it.
fn pingpong_node(platform: &str, size: usize, quick: bool) -> Result<()> {
    let w = platforms::PingPong::new(size, effort(quick))?;
    let mut mpi = None;
    let on = node_placement(platform, &mut mpi)?;
    let ran = on.run(&platforms::config(), &w)?;
    if on.has_results() {
        say!("one_way_ns {}", platforms::one_way(ran.outputs));
    }
    Ok(())
}

fn effort(quick: bool) -> Effort {
    if quick {
        Effort::QUICK
    } else {
        Effort::DEFAULT
    }
}

/// Writes `value` to the `--json` file, if one was given.
fn write<T: Serialize>(path: Option<PathBuf>, value: &T) -> Result<()> {
    path.map_or(Ok(()), |p| write_json(&p, value))
}
