//! The command line's arguments: every subcommand and flag, with the help
//! each shows. What they do is in `commands/`.

use clap::{Args, Parser, Subcommand};
use finegrain_study::run::{dsm::DsmOptions, fetch_add::FetchAddOptions, micro::MicroOptions, splitc::SplitcOptions};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "finegrain",
    version,
    about = "Fine-grain communication on clusters of SMP nodes: simulator, native runtime and studies"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run one workload once, simulated or on real threads (flags, or a
    /// TOML file with the same field names): `finegrain run micro ...`.
    #[command(subcommand_value_name = "WORKLOAD", subcommand_help_heading = "Workloads")]
    Run {
        #[command(subcommand)]
        workload: Workload,
    },
    /// `run fetch-add`: one point of the PDQ study.
    // `--nodes -1` is a bad value, not an unknown flag.
    #[command(allow_negative_numbers = true)]
    FetchAdd(RunArgs<FetchAddOptions>),
    /// Run one workload over a grid of configuration fields (no claims):
    /// records, results.csv and a summary table: `finegrain sweep --set
    /// PATH=VALUES micro --u 0.5`.
    #[command(
        allow_negative_numbers = true,
        subcommand_value_name = "WORKLOAD",
        subcommand_help_heading = "Workloads"
    )]
    Sweep(SweepArgs),
    /// Run a study from experiments/ and write results, figures and a report.
    Reproduce {
        /// Experiment name (see --list) or path to a .toml file.
        experiment: Option<String>,
        /// The fast version of the study.
        #[arg(long)]
        quick: bool,
        /// Output directory.
        #[arg(long, default_value = "out")]
        out: PathBuf,
        /// The output directory of an earlier reproduction (repeatable):
        /// each planned run it holds an exact record of (same study,
        /// labels, configuration, seed and workload) is taken from there
        /// instead of simulated, so a long study can be put together from
        /// pieces or finished after a stop. May be --out itself.
        #[arg(long, value_name = "DIR")]
        reuse: Vec<PathBuf>,
        /// Run only share I of N of the runs (a batch job's array task,
        /// each share's runs planned to take about as long), leaving their
        /// records in --out without a report; gather the shares with
        /// --reuse. Under mpirun the runs are spread over the ranks instead.
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        /// Write the planned runs to DIR/plan.json (longest first, with
        /// their planned cost) and run nothing.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "reuse", "shard"])]
        plan: Option<PathBuf>,
        /// Where the planned runs go: sim (the simulated machine) or
        /// native (threads of this process, one run at a time: wall-clock
        /// times of this host, fewer measures, no verdicts where a claim
        /// needs what real threads do not have).
        #[arg(long, value_name = "PLATFORM", default_value = "sim")]
        platform: String,
        /// List the available experiments.
        #[arg(long, conflicts_with_all = ["quick", "out", "reuse", "shard", "plan", "platform"])]
        list: bool,
    },
    /// Regenerate one simulated run from its JSON record (a study's or a
    /// sweep's runs/<id>.json, or `run <workload> --json` output) and check its
    /// statistics come out as recorded.
    Rerun {
        /// The run record.
        record: PathBuf,
        /// Write the regenerated statistics here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Print a preset's parameter ledger (where each value comes from), then
    /// measure back the numbers its paper states about primitives.
    Calibrate {
        /// Preset name or path to a preset .toml file.
        #[arg(default_value = "hpca97")]
        preset: String,
    },
    /// Start a run's node processes on this host: `finegrain launch -n 4 --
    /// finegrain run micro --platform shm ...` (each a node, sharing memory).
    Launch {
        /// Node processes to start, 1..=256 (as many as the run has nodes).
        #[arg(short = 'n', long = "nodes")]
        nodes: u32,
        /// The command each node process runs.
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

/// The options every native benchmark takes.
#[derive(Args)]
pub struct BenchArgs {
    /// Fewer repetitions (for CI).
    #[arg(long)]
    pub quick: bool,
    /// Also write the results as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `bench pingpong`'s and `bench rate`'s options.
#[derive(Args)]
pub struct PingpongArgs {
    /// native (threads of one process), shm (two processes sharing
    /// memory) or mpi (two MPI ranks) [default: native].
    #[arg(long, default_value = "native")]
    pub platform: String,
    #[command(flatten)]
    pub common: BenchArgs,
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Active-message ping-pong vs the cache-line floor, crossbeam, Open
    /// MPI and UCX (8, 64, 256 bytes); with --platform shm or mpi, its two
    /// nodes in two processes beside the in-process figure and raw MPI.
    Pingpong(PingpongArgs),
    /// One node process of `bench pingpong --platform shm|mpi` (started by
    /// the benchmark itself).
    #[command(hide = true)]
    PingpongNode {
        #[arg(long)]
        platform: String,
        #[arg(long)]
        size: usize,
        #[arg(long)]
        quick: bool,
    },
    /// One-way streaming rate of 8-byte active messages; with --platform
    /// shm or mpi, between two processes beside the in-process rings.
    Rate(PingpongArgs),
    /// One node process of `bench rate --platform shm|mpi`.
    #[command(hide = true)]
    RateNode {
        #[arg(long)]
        platform: String,
        #[arg(long)]
        quick: bool,
    },
    /// What a native interrupt (a signal to a computing thread) costs.
    Interrupt(BenchArgs),
    /// Native handler throughput on two threads: PDQ vs a mutex per key vs
    /// a single dispatcher (fetch&add handlers, 1, 64 and 4096 keys).
    Pdq(BenchArgs),
    /// Split-C's operations natively on 2 nodes (get, put, store, 32-byte
    /// store latency; 64 KiB get and put bandwidth) under the co-processor
    /// policy's main-am and optimized libraries side by side, beside raw
    /// MPI-3 RMA where Open MPI is installed.
    Splitc(BenchArgs),
    /// Simulated messages and events per wall second, one core.
    #[command(allow_negative_numbers = true)]
    Sim {
        /// Repetitions, 1..=1000 (--paper: 1..=100); the median is
        /// reported [default: 5; --paper: 1].
        #[arg(long)]
        rounds: Option<u32>,
        /// Requests each node's threads make per run, 1..=1e9.
        #[arg(long, default_value_t = 50_000)]
        requests_per_node: u64,
        /// Time runs at the papers' inputs (the pdq-dsm study's, on 8x8)
        /// instead of the microbenchmarks, each as a `finegrain run` child.
        #[arg(long)]
        paper: bool,
        /// With --paper: another finegrain executable (an older build) to
        /// time on the same runs in turn, comparing its records with this
        /// build's.
        #[arg(long, value_name = "FINEGRAIN", requires = "paper")]
        against: Option<PathBuf>,
        /// With --paper: the runs, comma-separated [default: em3d, fft,
        /// barnes, radix, cholesky].
        #[arg(long, value_delimiter = ',', requires = "paper")]
        runs: Vec<String>,
        /// Also write the table as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

/// `finegrain run`'s workloads: each a subcommand taking the fields every
/// run takes and its own, so another workload's flag is refused as
/// unknown.
#[derive(Subcommand, Clone, Debug)]
pub enum Workload {
    /// The scheduling microbenchmark: requests between compute threads of
    /// every node, served under a scheduling policy (hpca97).
    #[command(allow_negative_numbers = true)]
    Micro(RunArgs<MicroOptions>),
    /// The PDQ microbenchmark: one point of the pdq-micro study, fetch&add
    /// requests to words at a home node (hpca99).
    #[command(allow_negative_numbers = true)]
    FetchAdd(RunArgs<FetchAddOptions>),
    /// A Split-C program of the co-processor paper, or a primitive's
    /// timing run (ipps96).
    #[command(allow_negative_numbers = true)]
    Splitc(RunArgs<SplitcOptions>),
    /// A shared-memory program of the PDQ paper over the fine-grain DSM
    /// (hpca99).
    #[command(allow_negative_numbers = true)]
    Dsm(RunArgs<DsmOptions>),
}

/// One run of a workload: its options as flags, over a TOML file with the
/// same field names.
#[derive(Args, Clone, Debug)]
pub struct RunArgs<O: clap::Args> {
    /// TOML file with any of the fields below (flags override it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Write the full run record (configuration, seed, statistics) here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub trace: TraceArgs,
    #[command(flatten)]
    pub options: O,
}

/// A simulated run's timeline (kept out of the run's configuration and
/// record: it changes nothing the run measures).
#[derive(Args, Clone, Debug)]
pub struct TraceArgs {
    /// Simulated runs: write the run's timeline here as Chrome trace-event
    /// JSON (open it in the Perfetto UI, ui.perfetto.dev, with "Open trace
    /// file", or in chrome://tracing).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// With --trace: keep only this part of the run, in cycles, or in
    /// microseconds with a `us` suffix; either end may be left out
    /// (`0..50000`, `10us..20us`, `100000..`) [default: the whole run].
    #[arg(long, value_name = "START..END")]
    pub trace_window: Option<String>,
    /// With --trace: keep at most N events (activities, handlers and
    /// message ends), 1 or more; the file says where it was cut
    /// [default: 1,000,000, about 100 MB].
    #[arg(long, value_name = "N")]
    pub trace_events: Option<usize>,
}

/// A sweep: the grid, then its base run as `run` takes it (`finegrain
/// sweep --set PATH=VALUES micro --u 0.5`).
#[derive(Args, Clone, Debug)]
pub struct SweepArgs {
    /// A field and its values: PATH=V1,V2 or PATH=A..B (whole numbers);
    /// PATH names a field of the run's record (machine.interrupt.
    /// overhead_cycles, topology.procs_per_node, policy, dispatch.
    /// discipline, workload.keys ...). Repeat for more axes; one at least.
    #[arg(long = "set", value_name = "PATH=VALUES", global = true)]
    pub set: Vec<String>,
    /// Seeds per point, 1..=1000 (each derived from --seed).
    #[arg(long, default_value_t = 1, global = true)]
    pub seeds: u32,
    /// Output directory.
    #[arg(long, default_value = "out/sweep", global = true)]
    pub out: PathBuf,
    /// The sweep's name (in its records and summary).
    #[arg(long, default_value = "sweep", global = true)]
    pub name: String,
    #[command(subcommand)]
    pub run: Workload,
}
