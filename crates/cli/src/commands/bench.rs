//! `finegrain bench`: the benchmarks, each writing JSON if asked.

use crate::args::{BenchArgs, BenchCommand};
use crate::say;
use anyhow::Result;
use finegrain_bench::{native as native_bench, sim as bench, Effort};
use finegrain_study::output::{check_writable, write_json};
use serde::Serialize;
use std::path::PathBuf;

pub fn bench(what: BenchCommand) -> Result<()> {
    match what {
        BenchCommand::Pingpong(BenchArgs { quick, json }) => {
            check_writable(json.as_deref(), &[])?;
            let rows = native_bench::pingpong(effort(quick))?;
            write(json, &rows)?;
            say!("{}", native_bench::pingpong_table(&rows).trim_end());
            Ok(())
        }
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
