//! The command line's arguments: every subcommand and flag, with the help
//! each shows. What they do is in `commands/`.

use clap::{Args, Parser, Subcommand};
use serde::{Deserialize, Serialize};
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
    /// TOML file with the same field names).
    // `--nodes -1` is a bad value, not an unknown flag.
    #[command(allow_negative_numbers = true)]
    Run(RunArgs),
    /// `run --workload fetch-add`: one point of the PDQ study.
    #[command(allow_negative_numbers = true)]
    FetchAdd(RunArgs),
    /// Run one workload over a grid of configuration fields (no claims):
    /// records, results.csv and a summary table.
    #[command(allow_negative_numbers = true)]
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
    /// sweep's runs/<id>.json, or `run --json` output) and check its
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
    /// finegrain run --platform shm ...` (each a node, sharing memory).
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

/// One run, as flags or as a TOML file with the same field names. The
/// microbenchmark's and fetch&add's own fields are refused with the other
/// workload.
#[derive(Args, Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// TOML file with any of the fields below (flags override it).
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// micro (the scheduling microbenchmark), fetch-add (the PDQ
    /// microbenchmark), splitc (a Split-C program) or dsm (a shared-memory
    /// program over the fine-grain DSM) [default: micro].
    #[arg(long)]
    pub workload: Option<String>,
    /// sim (the simulated machine of the preset), native (real threads,
    /// one process) or shm (each node an OS process, sharing memory;
    /// under `finegrain launch`, or launching itself) [default: sim].
    #[arg(long)]
    pub platform: Option<String>,
    /// Real threads: a handler running longer than this many
    /// milliseconds ends the run with an error, 1..=3600000 [default: 1000].
    #[arg(long)]
    pub handler_limit_ms: Option<u64>,
    /// Real threads: a request unanswered after this many milliseconds
    /// ends the run with an error, 1..=3600000 [default: 10000].
    #[arg(long)]
    pub progress_timeout_ms: Option<u64>,
    /// Real threads, policy floating: interrupt with signal SIGRTMIN+N
    /// [default: 4].
    #[arg(long)]
    pub interrupt_signal: Option<u32>,
    /// Machine preset name or path [default: hpca97 for micro, hpca99 for
    /// fetch-add].
    #[arg(long)]
    pub preset: Option<String>,
    /// Seed of every random choice, 0..=2^64-1 [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the full run record (configuration, seed, statistics) here.
    #[arg(long)]
    #[serde(skip)]
    pub json: Option<PathBuf>,

    /// single, fixed, fixed:K, floating [default: fixed].
    #[arg(long, help_heading = "Microbenchmark")]
    pub policy: Option<String>,
    /// Nodes, 2..=4096 [default: 2; splitc: 16].
    #[arg(long, help_heading = "Microbenchmark")]
    pub nodes: Option<u32>,
    /// Processors per node, 1..=64 [default: 2].
    #[arg(long, help_heading = "Microbenchmark")]
    pub procs_per_node: Option<u32>,
    /// null or fetch [default: null].
    #[arg(long, help_heading = "Microbenchmark")]
    pub protocol: Option<String>,
    /// Target compute utilization U in (0, 1); sets the mean
    /// compute time from the measured Lmin. Without it or
    /// --compute-cycles, threads do not compute between requests (U = 0).
    #[arg(long, allow_negative_numbers = true, help_heading = "Microbenchmark")]
    pub u: Option<f64>,
    /// Mean compute cycles between requests (instead of --u), at
    /// most 1e9 [default: 0]; on platform native a cycle is a nanosecond.
    #[arg(long, allow_negative_numbers = true, help_heading = "Microbenchmark")]
    pub compute_cycles: Option<f64>,
    /// Requests each node makes, split over its compute threads,
    /// 1..=1e9 [default: 10000].
    #[arg(long, help_heading = "Microbenchmark")]
    pub requests_per_node: Option<u64>,
    /// Interrupt overhead in cycles, 0..=1000000000 (overrides the
    /// preset).
    #[arg(long, help_heading = "Microbenchmark")]
    pub oint: Option<u64>,
    /// When a processor acting as PP under Floating gives the role
    /// up once its own work can continue: eager, handoff or adaptive
    /// (native runs take eager or handoff) [default: eager].
    #[arg(long, help_heading = "Microbenchmark")]
    pub relinquish: Option<String>,

    /// Who runs the home's handlers: embedded, smp or mult
    /// [default: embedded; native: smp].
    #[arg(long, help_heading = "Fetch&add")]
    pub kind: Option<String>,
    /// serial, pdq, spin-lock or static [default: pdq].
    #[arg(long, help_heading = "Fetch&add")]
    pub discipline: Option<String>,
    /// Protocol processors at the home, 1..=63 with the compute
    /// processors within 64 (for mult: most idle compute processors
    /// serving at once, 1..=compute processors) [default: 1].
    #[arg(long, help_heading = "Fetch&add")]
    pub protocol_procs: Option<u32>,
    /// Distinct words (keys) at the home, 1 up to what the
    /// preset's home protocol table holds (16384 for hpca99 with 8 compute
    /// processors) [default: 4096; native: 64].
    #[arg(long, help_heading = "Fetch&add")]
    pub keys: Option<u64>,
    /// uniform or zipf:S, S in 0.01..=100 [default: uniform].
    #[arg(long, help_heading = "Fetch&add")]
    pub skew: Option<String>,
    /// Nodes besides the home, 1..=4095 [default: 4].
    #[arg(long, help_heading = "Fetch&add")]
    pub requester_nodes: Option<u32>,
    /// Compute processors per node, 1..=64 with the protocol
    /// processors of embedded or smp within 64 [default: 8; dsm: 2].
    #[arg(long, help_heading = "Fetch&add")]
    pub compute_procs: Option<u32>,
    /// Handler instructions besides its accesses, 0..=1e9
    /// [default: 97, as in the pdq-micro study].
    #[arg(long, help_heading = "Fetch&add")]
    pub handler_cycles: Option<u64>,
    /// Requests each requester thread sends, 1..=1e9 [default:
    /// 1500].
    #[arg(long, help_heading = "Fetch&add")]
    pub requests_per_thread: Option<u64>,
    /// Home compute utilization in [0, 1] [default: 0.5].
    #[arg(long, allow_negative_numbers = true, help_heading = "Fetch&add")]
    pub home_u: Option<f64>,
    /// Mean home compute burst in cycles, 1..=1e9 [default:
    /// 2000].
    #[arg(long, allow_negative_numbers = true, help_heading = "Fetch&add")]
    pub home_burst_cycles: Option<f64>,
    /// Mean requester computation before each request in
    /// cycles, 0..=1e9 [default: 0].
    #[arg(long, allow_negative_numbers = true, help_heading = "Fetch&add")]
    pub think_cycles: Option<f64>,
    /// Share of requests with the sequential key, in [0, 1]
    /// [default: 0].
    #[arg(long, allow_negative_numbers = true, help_heading = "Fetch&add")]
    pub sequential_fraction: Option<f64>,

    /// The program. Workload splitc: a program of the co-processor paper
    /// (bitonic, cannon-aligned, fft, radix, wator...) or
    /// primitives:get|put|store|bulk-store|bulk-put; workload dsm: barnes,
    /// cholesky, em3d, fft, fmm, radix or water-sp.
    #[arg(long, help_heading = "Split-C and DSM")]
    pub program: Option<String>,
    /// The program's input: tiny, quick or paper [default: quick; dsm:
    /// tiny].
    #[arg(long, help_heading = "Split-C and DSM")]
    pub size: Option<String>,

    /// Who runs the DSM's handlers: s-coma, hurricane-1pp|2pp|4pp,
    /// hurricane1-1pp|2pp|4pp or mult (natively hurricane1-* and mult)
    /// [default: hurricane-1pp; natively hurricane1-1pp].
    #[arg(long, help_heading = "DSM")]
    pub system: Option<String>,
    /// The DSM's coherence unit in bytes: 32, 64 or 128 [default: 64].
    #[arg(long, help_heading = "DSM")]
    pub block_bytes: Option<u32>,
}

/// A sweep: a base run (the flags of `run`) and the grid over it.
#[derive(Args, Clone, Debug)]
pub struct SweepArgs {
    /// A field and its values: PATH=V1,V2 or PATH=A..B (whole numbers);
    /// PATH names a field of the run's record (machine.interrupt.
    /// overhead_cycles, topology.procs_per_node, policy, dispatch.
    /// discipline, workload.keys ...). Repeat for more axes.
    #[arg(long = "set", value_name = "PATH=VALUES", required = true)]
    pub set: Vec<String>,
    /// Seeds per point, 1..=1000 (each derived from --seed).
    #[arg(long, default_value_t = 1)]
    pub seeds: u32,
    /// Output directory.
    #[arg(long, default_value = "out/sweep")]
    pub out: PathBuf,
    /// The sweep's name (in its records and summary).
    #[arg(long, default_value = "sweep")]
    pub name: String,
    #[command(flatten)]
    pub run: RunArgs,
}
