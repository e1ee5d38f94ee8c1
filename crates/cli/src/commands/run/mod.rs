//! `finegrain run`: one workload once, on the simulated machine or on
//! real threads. The flags (or a TOML file with the same names) choose the
//! workload, the platform and the point; each workload's module builds its
//! configuration, runs it and prints what it measured.

mod dsm;
mod fetch_add;
mod micro;
mod splitc;

use crate::args::RunArgs;
use anyhow::{bail, Result};
use finegrain_apps::{Measures, RtPlatform, Sim, WorkloadSpec};
use finegrain_core::config::parse_toml;
use finegrain_rt::NodeEnv;
use finegrain_sim::SimConfig;
use finegrain_study::experiment::{preset_beside, read_input};
use finegrain_study::output::{check_writable, run_inputs, write_json};
use finegrain_study::record::Wall;
use finegrain_study::single::{self, RunLabels};
use std::time::Instant;

/// The workloads `run` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Micro,
    FetchAdd,
    Splitc,
    Dsm,
}

impl Workload {
    fn parse(s: &str) -> Result<Workload> {
        match s {
            "micro" => Ok(Workload::Micro),
            "fetch-add" => Ok(Workload::FetchAdd),
            "splitc" => Ok(Workload::Splitc),
            "dsm" => Ok(Workload::Dsm),
            other => bail!("invalid workload = {other}: allowed micro, fetch-add, splitc, dsm"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Workload::Micro => "micro",
            Workload::FetchAdd => "fetch-add",
            Workload::Splitc => "splitc",
            Workload::Dsm => "dsm",
        }
    }
}

/// A simulated run, built and checked but not run: its configuration,
/// its workload, and the target U and Lmin that set a microbenchmark's
/// compute time.
pub struct SimRun {
    pub config: SimConfig,
    pub workload: WorkloadSpec,
    pub target_u: Option<f64>,
    pub lmin: Option<f64>,
}

/// `finegrain run` (`workload` set: `finegrain fetch-add`, which runs
/// that workload only).
pub fn run(args: RunArgs, alias: Option<Workload>) -> Result<()> {
    let config_file = args.config.clone();
    let a = merged(args)?;
    let workload = chosen(&a, alias)?;
    let platform = a.platform.as_deref().unwrap_or("sim");
    #[cfg(feature = "mpi")]
    let mpi_env;
    let on = match platform {
        "sim" => None,
        "native" => Some(RtPlatform::Native),
        "shm" => match NodeEnv::from_env().map_err(anyhow::Error::msg)? {
            Some(env) => Some(RtPlatform::Shm(env)),
            None => return launch_self(&a, workload),
        },
        #[cfg(feature = "mpi")]
        "mpi" => {
            if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() {
                return launch_mpi(&a, workload);
            }
            // Nodes of one thread take a cheaper thread level; the
            // co-processor's progress thread is one more.
            let progress = a.policy.as_deref().and_then(|p| finegrain_core::Policy::parse(p).ok()).is_some_and(|p| {
                matches!(p, finegrain_core::Policy::Coprocessor { library } if library != finegrain_core::CoprocLibrary::MainAm)
            });
            let threads = match workload {
                Workload::Micro => a.procs_per_node.unwrap_or(2) + u32::from(progress),
                Workload::FetchAdd => 2,
                Workload::Splitc => 1 + u32::from(progress),
                // The compute threads and the system's protocol threads.
                Workload::Dsm => dsm::native_config(&a, "mpi")?.run.topology.procs_per_node,
            };
            mpi_env = finegrain_rt::MpiEnv::init(threads).map_err(anyhow::Error::msg)?;
            Some(RtPlatform::Mpi(&mpi_env))
        }
        other => bail!(
            "invalid platform = {other}: allowed sim, native, shm{}",
            if cfg!(feature = "mpi") { ", mpi" } else { " (mpi: not built in; build with the mpi feature)" }
        ),
    };
    let inputs = run_inputs(config_file.as_deref(), a.preset.as_deref());
    let Some(on) = on else {
        refuse_runtime_fields(&a)?;
        let run = match workload {
            Workload::Micro => micro::build(&a)?,
            Workload::FetchAdd => fetch_add::build(&a)?,
            Workload::Splitc => splitc::build(&a)?,
            Workload::Dsm => dsm::build(&a)?,
        };
        check_writable(a.json.as_deref(), &inputs)?;
        return simulate(&a, run);
    };
    match workload {
        Workload::Micro => {
            check_writable(a.json.as_deref(), &inputs)?;
            micro::native(&a, on)
        }
        Workload::FetchAdd => {
            let run = fetch_add::build_native(&a)?;
            check_writable(a.json.as_deref(), &inputs)?;
            fetch_add::native(&a, run, on)
        }
        Workload::Splitc => {
            if a.json.is_some() {
                bail!(
                    "invalid json with workload splitc on platform {}: records are written for simulated runs only",
                    on.name()
                );
            }
            splitc::native(&a, on)
        }
        Workload::Dsm => dsm::native(&a, on),
    }
}

/// The runtime's own fields mean nothing to the simulator.
fn refuse_runtime_fields(a: &RunArgs) -> Result<()> {
    let given = [
        ("handler_limit_ms", a.handler_limit_ms.is_some()),
        ("progress_timeout_ms", a.progress_timeout_ms.is_some()),
        ("interrupt_signal", a.interrupt_signal.is_some()),
    ];
    if let Some((field, _)) = given.iter().find(|(_, g)| *g) {
        bail!("invalid {field} with platform sim: it sets the native runtime; allowed with platform native or shm");
    }
    Ok(())
}

/// The runtime's own fields, from the flags (defaults otherwise).
pub fn apply_runtime_fields(a: &RunArgs, rt: &mut finegrain_rt::RtConfig) {
    if let Some(v) = a.handler_limit_ms {
        rt.handler_limit_ms = v;
    }
    if let Some(v) = a.progress_timeout_ms {
        rt.progress_timeout_ms = v;
    }
    if let Some(v) = a.interrupt_signal {
        rt.interrupt_signal = v;
    }
}

/// The nodes of the run `a` asks for, its configuration checked here, once,
/// rather than by every node process.
fn checked_nodes(a: &RunArgs, workload: Workload, platform: &str) -> Result<u32> {
    Ok(match workload {
        Workload::Micro => micro::native_setup(a, platform).map(|_| a.nodes.unwrap_or(2))?,
        Workload::FetchAdd => fetch_add::build_native(a).map(|_| a.requester_nodes.unwrap_or(4).saturating_add(1))?,
        Workload::Splitc => splitc::native_config(a)?.run.topology.nodes,
        Workload::Dsm => dsm::native_config(a, platform)?.run.topology.nodes,
    })
}

/// `run --platform mpi` outside mpirun: this same command as the ranks of
/// a one-host job (see `finegrain_rt::processes::launch::mpirun`).
#[cfg(feature = "mpi")]
fn launch_mpi(a: &RunArgs, workload: Workload) -> Result<()> {
    let nodes = checked_nodes(a, workload, "mpi")?;
    let program = std::env::current_exe().map_err(|e| anyhow::anyhow!("finding this program to launch it: {e}"))?;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let launched = finegrain_rt::processes::launch::mpirun(nodes, program.as_os_str(), &args);
    crate::commands::launch::ended(launched.map_err(anyhow::Error::msg)?)
}

/// `run --platform shm` with no launcher around it: launch this same
/// command once per node of the run.
fn launch_self(a: &RunArgs, workload: Workload) -> Result<()> {
    let nodes = checked_nodes(a, workload, "shm")?;
    let program = std::env::current_exe().map_err(|e| anyhow::anyhow!("finding this program to launch it: {e}"))?;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    crate::commands::launch::launch(nodes, program.into_os_string(), args)
}

/// Runs `run` on the simulated machine, writes its record (if asked) and
/// prints what it measured.
fn simulate(a: &RunArgs, run: SimRun) -> Result<()> {
    let t0 = Instant::now();
    let total = run.workload.total_requests(&run.config);
    let out = finegrain_study::progress::one_run(total, || run.workload.run(&Sim(run.config.clone())))?;
    let measures = out.measures.as_ref().map(Measures::to_json);
    let wall = Wall::of(t0.elapsed(), &out.stats);
    // The record first: output closed early must not lose it.
    if let Some(path) = &a.json {
        let labels = RunLabels::of(&run.config, &run.workload, run.target_u, run.lmin);
        let record = single::record(&run.config, &run.workload, labels, out.stats.clone(), measures, wall);
        write_json(path, &record)?;
    }
    match &run.workload {
        WorkloadSpec::Micro(w) => micro::print(a, &run, w, &out.stats, &wall),
        WorkloadSpec::FetchAdd(w) => fetch_add::print(a, &run, w, &out.stats),
        WorkloadSpec::Splitc(p) => splitc::print(a, &run, p, &out.stats, out.measures.as_ref()),
        WorkloadSpec::Dsm(d) => dsm::print(a, &run, d, &out.stats, out.measures.as_ref()),
    }
}

/// A simulated run of `args` as `run` would build it (the base of a
/// sweep).
pub fn build_sim(args: RunArgs) -> Result<SimRun> {
    let a = merged(args)?;
    match chosen(&a, None)? {
        Workload::Micro => micro::build(&a),
        Workload::FetchAdd => fetch_add::build(&a),
        Workload::Splitc => splitc::build(&a),
        Workload::Dsm => dsm::build(&a),
    }
}

/// Flags override the file; unset fields take documented defaults.
fn merged(flags: RunArgs) -> Result<RunArgs> {
    let Some(path) = &flags.config else { return Ok(flags) };
    let text = read_input(path)?;
    let mut file: RunArgs = parse_toml(&path.display().to_string(), &text)?;
    file.preset = preset_beside(path, file.preset);
    let flag_sets_compute = flags.u.is_some() || flags.compute_cycles.is_some();
    Ok(RunArgs {
        config: None,
        workload: flags.workload.or(file.workload),
        platform: flags.platform.or(file.platform),
        handler_limit_ms: flags.handler_limit_ms.or(file.handler_limit_ms),
        progress_timeout_ms: flags.progress_timeout_ms.or(file.progress_timeout_ms),
        interrupt_signal: flags.interrupt_signal.or(file.interrupt_signal),
        preset: flags.preset.or(file.preset),
        seed: flags.seed.or(file.seed),
        json: flags.json,
        policy: flags.policy.or(file.policy),
        nodes: flags.nodes.or(file.nodes),
        procs_per_node: flags.procs_per_node.or(file.procs_per_node),
        protocol: flags.protocol.or(file.protocol),
        // Either flag replaces the file's choice of compute time.
        u: if flag_sets_compute { flags.u } else { file.u },
        compute_cycles: if flag_sets_compute { flags.compute_cycles } else { file.compute_cycles },
        requests_per_node: flags.requests_per_node.or(file.requests_per_node),
        oint: flags.oint.or(file.oint),
        relinquish: flags.relinquish.or(file.relinquish),
        kind: flags.kind.or(file.kind),
        discipline: flags.discipline.or(file.discipline),
        protocol_procs: flags.protocol_procs.or(file.protocol_procs),
        keys: flags.keys.or(file.keys),
        skew: flags.skew.or(file.skew),
        requester_nodes: flags.requester_nodes.or(file.requester_nodes),
        compute_procs: flags.compute_procs.or(file.compute_procs),
        handler_cycles: flags.handler_cycles.or(file.handler_cycles),
        requests_per_thread: flags.requests_per_thread.or(file.requests_per_thread),
        home_u: flags.home_u.or(file.home_u),
        home_burst_cycles: flags.home_burst_cycles.or(file.home_burst_cycles),
        think_cycles: flags.think_cycles.or(file.think_cycles),
        sequential_fraction: flags.sequential_fraction.or(file.sequential_fraction),
        program: flags.program.or(file.program),
        size: flags.size.or(file.size),
        system: flags.system.or(file.system),
        block_bytes: flags.block_bytes.or(file.block_bytes),
    })
}

/// The workload the run asks for, with no field of another one given.
fn chosen(a: &RunArgs, alias: Option<Workload>) -> Result<Workload> {
    use Workload::{Dsm, FetchAdd, Micro, Splitc};
    let named = a.workload.as_deref().map(Workload::parse).transpose()?;
    let workload = match (alias, named) {
        (Some(w), Some(n)) if w != n => {
            bail!("invalid workload = {} for `finegrain fetch-add`: it runs fetch-add only", n.name())
        }
        (Some(w), _) | (None, Some(w)) => w,
        (None, None) => Micro,
    };
    // Each workload's own fields, with the workloads that share them.
    let fields: [(&str, bool, &[Workload]); 26] = [
        ("policy", a.policy.is_some(), &[Micro, Splitc]),
        ("nodes", a.nodes.is_some(), &[Micro, Splitc, Dsm]),
        ("procs_per_node", a.procs_per_node.is_some(), &[Micro, Splitc]),
        ("protocol", a.protocol.is_some(), &[Micro]),
        ("u", a.u.is_some(), &[Micro]),
        ("compute_cycles", a.compute_cycles.is_some(), &[Micro]),
        ("requests_per_node", a.requests_per_node.is_some(), &[Micro]),
        ("oint", a.oint.is_some(), &[Micro]),
        ("relinquish", a.relinquish.is_some(), &[Micro]),
        ("kind", a.kind.is_some(), &[FetchAdd]),
        ("discipline", a.discipline.is_some(), &[FetchAdd]),
        ("protocol_procs", a.protocol_procs.is_some(), &[FetchAdd]),
        ("keys", a.keys.is_some(), &[FetchAdd]),
        ("skew", a.skew.is_some(), &[FetchAdd]),
        ("requester_nodes", a.requester_nodes.is_some(), &[FetchAdd]),
        ("compute_procs", a.compute_procs.is_some(), &[FetchAdd, Dsm]),
        ("handler_cycles", a.handler_cycles.is_some(), &[FetchAdd]),
        ("requests_per_thread", a.requests_per_thread.is_some(), &[FetchAdd]),
        ("home_u", a.home_u.is_some(), &[FetchAdd]),
        ("home_burst_cycles", a.home_burst_cycles.is_some(), &[FetchAdd]),
        ("think_cycles", a.think_cycles.is_some(), &[FetchAdd]),
        ("sequential_fraction", a.sequential_fraction.is_some(), &[FetchAdd]),
        ("program", a.program.is_some(), &[Splitc, Dsm]),
        ("size", a.size.is_some(), &[Splitc, Dsm]),
        ("system", a.system.is_some(), &[Dsm]),
        ("block_bytes", a.block_bytes.is_some(), &[Dsm]),
    ];
    if let Some((field, _, owners)) = fields.iter().find(|(_, given, owners)| *given && !owners.contains(&workload)) {
        let names: Vec<&str> = owners.iter().map(|w| w.name()).collect();
        bail!(
            "invalid {field} with workload {}: it is a field of workload{} {}; allowed there only",
            workload.name(),
            if names.len() > 1 { "s" } else { "" },
            names.join(", ")
        );
    }
    Ok(workload)
}
