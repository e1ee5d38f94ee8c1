//! One run of one workload, as `finegrain run <workload>` and `finegrain
//! sweep` ask for it: each workload's options (the same fields as flags or
//! in a TOML file), the checked simulated or native run they build, and
//! what a run reports, which prints itself (`Display`).
//!
//! The options structs derive clap's `Args` behind the `clap` feature
//! rather than being copied into the command line's own structs: each
//! field, its help (the doc comment) and its TOML name are written once,
//! and no struct holds another workload's fields.

pub mod dsm;
pub mod fetch_add;
pub mod micro;
pub mod splitc;
pub mod trace;

use crate::experiment::{preset_beside, read_input};
use crate::record::{RunRecord, Wall};
use crate::single::{self, RunLabels};
use anyhow::{bail, Result};
use finegrain_apps::{Measures, Sim, WorkloadSpec};
use finegrain_core::config::parse_toml;
use finegrain_rt::Placement;
use finegrain_sim::{RunStats, SimConfig};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;
use std::time::Instant;

/// The fields a run of every workload takes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Common {
    /// sim (the simulated machine of the preset), native (real threads,
    /// one process), shm (each node an OS process, sharing memory; under
    /// `finegrain launch`, or launching itself) or mpi (each node an MPI
    /// rank; under mpirun, or launching itself) [default: sim].
    #[cfg_attr(feature = "clap", arg(long))]
    pub platform: Option<String>,
    /// Machine preset name or path [default: hpca97 for micro, hpca99 for
    /// fetch-add and dsm, ipps96 for splitc].
    #[cfg_attr(feature = "clap", arg(long))]
    pub preset: Option<String>,
    /// Seed of every random choice, 0..=2^64-1 [default: 1].
    #[cfg_attr(feature = "clap", arg(long))]
    pub seed: Option<u64>,
    /// Real threads: a handler running longer than this many
    /// milliseconds ends the run with an error, 1..=3600000 [default: 1000].
    #[cfg_attr(feature = "clap", arg(long))]
    pub handler_limit_ms: Option<u64>,
    /// Real threads: a request unanswered after this many milliseconds
    /// ends the run with an error, 1..=3600000 [default: 10000].
    #[cfg_attr(feature = "clap", arg(long))]
    pub progress_timeout_ms: Option<u64>,
    /// Real threads, policy floating: interrupt with signal SIGRTMIN+N
    /// [default: 4].
    #[cfg_attr(feature = "clap", arg(long))]
    pub interrupt_signal: Option<u32>,
    /// A TOML file's `workload` key (files written for `run --workload X`):
    /// taken when it names the workload run, refused otherwise.
    #[cfg_attr(feature = "clap", arg(skip))]
    #[serde(default, skip_serializing)]
    pub workload: Option<String>,
}

impl Common {
    /// The seed asked for, or the default.
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(1)
    }

    /// The runtime's own fields mean nothing to the simulator.
    pub fn refuse_runtime_fields(&self) -> Result<()> {
        let given = [
            ("handler_limit_ms", self.handler_limit_ms.is_some()),
            ("progress_timeout_ms", self.progress_timeout_ms.is_some()),
            ("interrupt_signal", self.interrupt_signal.is_some()),
        ];
        if let Some((field, _)) = given.iter().find(|(_, g)| *g) {
            bail!("invalid {field} with platform sim: it sets the native runtime; allowed with platform native or shm");
        }
        Ok(())
    }

    /// The runtime's own fields set on `rt` (its defaults otherwise).
    pub fn apply_runtime_fields(&self, rt: &mut finegrain_rt::RtConfig) {
        if let Some(v) = self.handler_limit_ms {
            rt.handler_limit_ms = v;
        }
        if let Some(v) = self.progress_timeout_ms {
            rt.progress_timeout_ms = v;
        }
        if let Some(v) = self.interrupt_signal {
            rt.interrupt_signal = v;
        }
    }
}

/// A workload's options: what `finegrain run <workload>` takes, as flags
/// or as a TOML file with the same field names.
pub trait RunOptions: Clone + Default + Serialize + DeserializeOwned {
    /// The workload's name (its subcommand, and its records' tag).
    const WORKLOAD: &'static str;
    /// Fields that together make one choice: a flag setting any of them
    /// replaces the file's values of all (`u` or `compute_cycles`).
    const ONE_CHOICE: &'static [&'static str] = &[];
    /// Whether a run on real threads leaves a record (`--json`).
    const NATIVE_RECORDS: bool;
    /// What a run on real threads reports.
    type Native: NativeReport;

    fn common(&self) -> &Common;

    /// The simulated run asked for, checked.
    fn simulated(&self) -> Result<SimRun>;

    /// The nodes of the run on real threads, its configuration checked
    /// here once (before node processes start) rather than by each.
    fn native_nodes(&self, platform: &str) -> Result<u32>;

    /// The threads an MPI rank (a node) of the run starts.
    fn mpi_threads(&self) -> Result<u32>;

    /// Runs on real threads; None in a node process that leaves the
    /// results to node 0's.
    fn native(&self, on: Placement<'_>) -> Result<Option<Self::Native>>;
}

/// What a run on real threads reports: it prints itself, and may leave a
/// record.
pub trait NativeReport: fmt::Display {
    /// Writes the run's record (configuration, seed, what it measured).
    fn write_record(&self, path: &Path) -> Result<()>;
    /// Whether the run had more threads than the host has cores: its time
    /// then measures correctness, not speed.
    fn oversubscribed(&self) -> bool {
        false
    }
}

/// Whether `threads` outnumber this host's cores.
fn more_threads_than_cores(threads: u32) -> bool {
    std::thread::available_parallelism().map_or(1, |n| n.get()) < threads as usize
}

/// The options `flags` ask for over the TOML file at `path`: the file's
/// fields where no flag is given. The file is checked on its own first, so
/// an unknown or mistyped field is named with its line.
pub fn with_file<T: RunOptions>(flags: T, path: &Path) -> Result<T> {
    let origin = path.display().to_string();
    let text = read_input(path)?;
    let mut file: toml::Table = parse_toml(&origin, &text)?;
    // A file for another workload holds that workload's fields: named
    // first, it says why they are unknown here.
    if let Some(w) = file.get("workload").and_then(toml::Value::as_str).filter(|w| *w != T::WORKLOAD) {
        bail!(
            "invalid workload = {w} in {origin}: the workload is the subcommand; allowed {} here, or run the file \
             with `finegrain run {w} --config {origin}`",
            T::WORKLOAD
        );
    }
    let known = known_fields::<T>()?;
    if let Some(unknown) = file.keys().find(|k| !known.contains(k) && k.as_str() != "workload") {
        bail!("unknown field `{unknown}` in {origin} for workload {}: allowed {}", T::WORKLOAD, known.join(", "));
    }
    // Wrong types named with their line (a non-text `workload` too).
    parse_toml::<T>(&origin, &text)?;
    if let Some(toml::Value::String(p)) = file.get_mut("preset") {
        *p = preset_beside(path, Some(p.clone())).unwrap_or_default();
    }
    let toml::Value::Table(given) = toml::Value::try_from(&flags).map_err(|e| {
        anyhow::anyhow!(
            "invalid flags with --config {origin}: {e}; a whole number above 9223372036854775807 (the largest TOML \
             holds) is allowed without --config only"
        )
    })?
    else {
        bail!("the options of workload {} are no table", T::WORKLOAD)
    };
    if T::ONE_CHOICE.iter().any(|k| given.contains_key(*k)) {
        for k in T::ONE_CHOICE {
            file.remove(*k);
        }
    }
    file.extend(given);
    Ok(toml::Value::Table(file).try_into()?)
}

/// The field names `T` takes in a file (its serde names).
fn known_fields<T: RunOptions>() -> Result<Vec<String>> {
    match serde_json::to_value(T::default())? {
        serde_json::Value::Object(m) => Ok(m.keys().cloned().collect()),
        _ => bail!("the options of workload {} are no table", T::WORKLOAD),
    }
}

/// A simulated run, built and checked but not run: its configuration, its
/// workload, the preset as given, and the target U and Lmin that set a
/// microbenchmark's compute time.
pub struct SimRun {
    pub config: SimConfig,
    pub workload: WorkloadSpec,
    pub preset: Option<String>,
    pub target_u: Option<f64>,
    pub lmin: Option<f64>,
}

impl SimRun {
    fn of(config: SimConfig, workload: WorkloadSpec, common: &Common) -> SimRun {
        SimRun { config, workload, preset: common.preset.clone(), target_u: None, lmin: None }
    }

    /// Simulates the run, showing progress.
    pub fn simulate(self) -> Result<Simulated> {
        let t0 = Instant::now();
        let total = self.workload.total_requests(&self.config);
        let out = crate::progress::one_run(total, || self.workload.run(&Sim(self.config.clone())))?;
        let wall = Wall::of(t0.elapsed(), &out.stats);
        Ok(Simulated { run: self, stats: out.stats, measures: out.measures, wall })
    }
}

/// A simulated run done: what it measured. Prints as `finegrain run`
/// shows it.
pub struct Simulated {
    pub run: SimRun,
    pub stats: RunStats,
    pub measures: Option<Measures>,
    pub wall: Wall,
}

impl Simulated {
    /// The run's record (configuration, seed, statistics), which `rerun`
    /// regenerates.
    pub fn record(&self) -> RunRecord<RunLabels> {
        let r = &self.run;
        let labels = RunLabels::of(&r.config, &r.workload, r.target_u, r.lmin);
        let measures = self.measures.as_ref().map(Measures::to_json);
        single::record(&r.config, &r.workload, labels, self.stats.clone(), measures, self.wall)
    }
}

impl fmt::Display for Simulated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.run.workload {
            WorkloadSpec::Micro(w) => micro::fmt_simulated(f, self, w),
            WorkloadSpec::FetchAdd(w) => fetch_add::fmt_simulated(f, self, w),
            WorkloadSpec::Splitc(p) => splitc::fmt_simulated(f, self, p),
            WorkloadSpec::Dsm(d) => dsm::fmt_simulated(f, self, d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::micro::MicroOptions;
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn flags_override_the_file_which_fills_the_rest() {
        let (_d, path) = file("seed = 7\nnodes = 3\npolicy = \"floating\"\n");
        let flags = MicroOptions { nodes: Some(4), ..Default::default() };
        let merged = with_file(flags, &path).unwrap();
        assert_eq!((merged.common.seed, merged.nodes, merged.policy.as_deref()), (Some(7), Some(4), Some("floating")));
    }

    #[test]
    fn either_compute_flag_replaces_the_files_choice_of_compute_time() {
        let (_d, path) = file("u = 0.5\n");
        let merged = with_file(MicroOptions { compute_cycles: Some(100.0), ..Default::default() }, &path).unwrap();
        assert_eq!((merged.u, merged.compute_cycles), (None, Some(100.0)));
        let (_d, path) = file("compute_cycles = 100.0\nrequests_per_node = 5\n");
        let merged = with_file(MicroOptions { u: Some(0.25), ..Default::default() }, &path).unwrap();
        assert_eq!((merged.u, merged.compute_cycles, merged.requests_per_node), (Some(0.25), None, Some(5)));
    }

    #[test]
    fn a_flag_that_is_not_a_number_stays_what_it_was() {
        // A NaN must reach the field's own check, not vanish into a default.
        let (_d, path) = file("u = 0.5\n");
        let merged = with_file(MicroOptions { u: Some(f64::NAN), ..Default::default() }, &path).unwrap();
        assert!(merged.u.is_some_and(f64::is_nan));
    }

    #[test]
    fn what_a_file_cannot_hold_is_refused_in_words() {
        let (_d, path) = file("seed = 7\n");
        let huge = MicroOptions { common: Common { seed: Some(u64::MAX), ..Default::default() }, ..Default::default() };
        let e = with_file(huge, &path).unwrap_err().to_string();
        assert!(e.contains("allowed without --config only"), "{e}");
        let (_d, path) = file("keys = 4\n");
        let e = with_file(MicroOptions::default(), &path).unwrap_err().to_string();
        assert!(e.contains("unknown field `keys`") && e.contains("allowed compute_cycles"), "{e}");
        let (_d, path) = file("workload = \"dsm\"\n");
        let e = with_file(MicroOptions::default(), &path).unwrap_err().to_string();
        assert!(e.contains("invalid workload = dsm") && e.contains("finegrain run dsm --config"), "{e}");
        let (_d, path) = file("workload = \"micro\"\nnodes = 3\n");
        assert_eq!(with_file(MicroOptions::default(), &path).unwrap().nodes, Some(3));
    }
}
