//! `finegrain bench`: the benchmarks, each writing JSON if asked.

use crate::args::{BenchArgs, BenchCommand, PingpongArgs};
use crate::say;
use anyhow::{bail, Result};
use finegrain_apps::RtPlatform;
use finegrain_bench::{native as native_bench, platforms, sim as bench, Effort};
use finegrain_study::output::{check_writable, write_json};
use serde::Serialize;
use std::path::PathBuf;

pub fn bench(what: BenchCommand) -> Result<()> {
    match what {
        BenchCommand::Pingpong(PingpongArgs { platform, common: BenchArgs { quick, json } }) => {
            check_writable(json.as_deref(), &[])?;
            let platform = match platform.as_str() {
                "native" => {
                    let rows = native_bench::pingpong(effort(quick))?;
                    write(json, &rows)?;
                    say!("{}", native_bench::pingpong_table(&rows).trim_end());
                    return Ok(());
                }
                "shm" => "shm",
                "mpi" if cfg!(feature = "mpi") => "mpi",
                other => bail!(
                    "invalid platform = {other}: allowed native, shm{}",
                    if cfg!(feature = "mpi") { ", mpi" } else { "" }
                ),
            };
            let rows = platforms::pingpong(platform, effort(quick), quick)?;
            write(json, &rows)?;
            say!("{}", platforms::pingpong_table(&rows).trim_end());
            Ok(())
        }
        BenchCommand::PingpongNode { platform, size, quick } => pingpong_node(&platform, size, quick),
        BenchCommand::Rate(BenchArgs { quick, json }) => {
            check_writable(json.as_deref(), &[])?;
            let row = native_bench::rate(effort(quick))?;
            write(json, &row)?;
            say!("{}", native_bench::rate_table(&row).trim_end());
            Ok(())
        }
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
        BenchCommand::Sim { rounds, requests_per_node, json } => {
            check_writable(json.as_deref(), &[])?;
            let rows = bench::sim(rounds, requests_per_node)?;
            write(json, &rows)?;
            say!("{}", bench::sim_table(&rows).trim_end());
            Ok(())
        }
    }
}

/// One node process of the ping-pong across processes; node 0 prints its
/// median for the benchmark that started it.
fn pingpong_node(platform: &str, size: usize, quick: bool) -> Result<()> {
    let w = platforms::PingPong::new(size, effort(quick))?;
    let cfg = platforms::config();
    #[cfg(feature = "mpi")]
    let mpi_env;
    let on = match platform {
        "shm" => match finegrain_rt::NodeEnv::from_env().map_err(anyhow::Error::msg)? {
            Some(env) => RtPlatform::Shm(env),
            None => bail!("bench pingpong-node runs under bench pingpong --platform shm (finegrain launch)"),
        },
        #[cfg(feature = "mpi")]
        "mpi" => {
            mpi_env = finegrain_rt::MpiEnv::init().map_err(anyhow::Error::msg)?;
            RtPlatform::Mpi(&mpi_env)
        }
        other => bail!("invalid platform = {other}: allowed shm, mpi"),
    };
    let ran = on.run(&cfg, &w)?;
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
