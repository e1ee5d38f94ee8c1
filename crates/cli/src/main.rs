//! `finegrain`: run a workload, sweep a grid, reproduce a study, rerun a
//! record, calibrate a preset, benchmark. A thin shell over the finegrain
//! crates: arguments in `args.rs`, what each command does in `commands/`.

#![forbid(unsafe_code)]

use anyhow::{bail, Context, Result};
use clap::Parser;
use finegrain::args::{Cli, Command, Workload};
use finegrain::commands;
use finegrain::usage;
use std::io::Write;
use std::process::ExitCode;

fn main_inner() -> Result<()> {
    let cli = match Cli::try_parse_from(usage::join_signed_values(std::env::args_os().collect())) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version: their text is the output, so failing to
            // write it is an error.
            e.print().context("writing standard output")?;
            return Ok(());
        }
        Err(e) => bail!("{} (see finegrain --help)", usage::one_line_usage_error(&e)),
    };
    match cli.command {
        Command::Run { workload } => commands::run::run(workload),
        Command::FetchAdd(args) => commands::run::run(Workload::FetchAdd(args)),
        Command::Sweep(args) => commands::sweep::sweep(args),
        Command::Reproduce { experiment, quick, out, reuse, shard, plan, platform, list } => {
            let what = commands::reproduce::What { quick, out, reuse, shard, plan, platform };
            commands::reproduce::reproduce(experiment, &what, list)
        }
        Command::Rerun { record, json } => commands::rerun::rerun(&record, json),
        Command::Calibrate { preset } => commands::calibrate::calibrate(&preset),
        Command::Launch { nodes, command } => commands::launch::launch_command(nodes, command),
        Command::Bench { what } => commands::bench::bench(what),
    }
}

fn main() -> ExitCode {
    match main_inner() {
        Ok(()) => ExitCode::SUCCESS,
        // Output piped into `head` and closed early ends the program
        // quietly, with the status a shell gives a process ended by
        // SIGPIPE, as for other command-line tools. (SIGPIPE itself stays
        // ignored, as Rust sets it: a note on a closed standard error must
        // not end a run before its record is written.)
        Err(e) if usage::closed_pipe(&e) => ExitCode::from(141),
        Err(e) => {
            // One line: the outermost context, then its causes.
            let msg = e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ");
            // One write of the whole line: standard error is unbuffered, so
            // `writeln!` would write the prefix and the message separately,
            // and node processes sharing the launcher's pipe would interleave
            // their lines. A single write below the pipe's atomic size
            // (4 KiB) arrives whole. Nowhere is left to report a failure to
            // write this: the exit status still says the command failed.
            let line = format!("error: {}\n", usage::one_line(&msg));
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            ExitCode::from(2)
        }
    }
}
