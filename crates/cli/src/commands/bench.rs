//! `finegrain bench`: the benchmarks, each writing JSON if asked.

use crate::args::{BenchArgs, BenchCommand};
use crate::{bench, native_bench};
use anyhow::Result;
use finegrain_study::output::{check_writable, write_json};
use serde::Serialize;
use std::path::PathBuf;

pub fn bench(what: BenchCommand) -> Result<()> {
    match what {
        BenchCommand::Pingpong(BenchArgs { quick, json }) => {
            check_writable(json.as_deref(), &[])?;
            let rows = native_bench::pingpong(effort(quick))?;
            write(json, &rows)?;
            native_bench::print_pingpong(&rows)
        }
        BenchCommand::Rate(BenchArgs { quick, json }) => {
            check_writable(json.as_deref(), &[])?;
            let row = native_bench::rate(effort(quick))?;
            write(json, &row)?;
            native_bench::print_rate(&row)
        }
        BenchCommand::Interrupt(BenchArgs { quick, json }) => {
            check_writable(json.as_deref(), &[])?;
            let row = native_bench::interrupt(quick)?;
            write(json, &row)?;
            native_bench::print_interrupt(&row)
        }
        BenchCommand::Pdq(BenchArgs { quick, json }) => {
            check_writable(json.as_deref(), &[])?;
            let rows = native_bench::pdq(effort(quick))?;
            write(json, &rows)?;
            native_bench::print_pdq(&rows)
        }
        BenchCommand::Sim { rounds, requests_per_node, json } => {
            check_writable(json.as_deref(), &[])?;
            let rows = bench::sim(rounds, requests_per_node)?;
            write(json, &rows)?;
            bench::print_sim(&rows)
        }
    }
}

fn effort(quick: bool) -> finegrain_rt::bench::Effort {
    if quick {
        finegrain_rt::bench::Effort::QUICK
    } else {
        finegrain_rt::bench::Effort::DEFAULT
    }
}

/// Writes `value` to the `--json` file, if one was given.
fn write<T: Serialize>(path: Option<PathBuf>, value: &T) -> Result<()> {
    path.map_or(Ok(()), |p| write_json(&p, value))
}
