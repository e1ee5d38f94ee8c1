//! Where a study's planned runs go (`reproduce --platform`): the
//! simulated machine the study plans for, or threads of this process.
//! Planning does not change with the platform: a run is planned on the
//! study's machine and workload, then mapped to the platform's target here.

use anyhow::{bail, Context, Result};
use finegrain_apps::Threads;
use finegrain_rt::Placement;
use finegrain_rt::RtConfig;
use finegrain_sim::SimConfig;

/// A platform a study can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StudyPlatform {
    /// The simulated machine: deterministic, every measure, regenerable.
    Sim,
    /// Every node a group of threads of this process: wall-clock times of
    /// this host, fewer measures, not regenerable.
    Native,
}

impl StudyPlatform {
    /// The names `--platform` takes, for messages.
    pub const ALLOWED: &'static str = "sim, native";

    /// `--platform NAME`.
    pub fn parse(name: &str) -> Result<StudyPlatform> {
        match name {
            "sim" => Ok(StudyPlatform::Sim),
            "native" => Ok(StudyPlatform::Native),
            other => bail!("invalid --platform {other}: allowed {} (a study runs on one host)", Self::ALLOWED),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StudyPlatform::Sim => "sim",
            StudyPlatform::Native => "native",
        }
    }
}

/// The native runtime's target for a run planned as `config`: its nodes as
/// threads of this process, with the run's topology, policy and seed, the
/// runtime's defaults otherwise, and each thread's segment the planned
/// machine's (the workload sizes itself from that machine). The planned
/// machine's costs (interrupt overhead, caches, network) stay behind: real
/// threads pay this host's.
pub fn native_target(config: &SimConfig) -> Result<Threads<'static>> {
    let mut rt = RtConfig::new(config.run.topology, config.run.policy);
    rt.run.seed = config.run.seed;
    rt.segment_bytes = usize::try_from(config.machine.segment_bytes())
        .context("the planned machine's segment does not fit this host's address space")?;
    rt.validate()?;
    Ok(Threads { on: Placement::Native, config: rt, machine: config.machine.clone() })
}

/// This host's cores (what the standard library says it may use).
pub fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use finegrain_core::{MachineConfig, Policy, Topology};

    #[test]
    fn only_sim_and_native_are_platforms_of_a_study() {
        assert_eq!(StudyPlatform::parse("native").unwrap(), StudyPlatform::Native);
        assert_eq!(StudyPlatform::parse("sim").unwrap().name(), "sim");
        let e = StudyPlatform::parse("shm").unwrap_err().to_string();
        assert_eq!(e, "invalid --platform shm: allowed sim, native (a study runs on one host)");
    }

    #[test]
    fn a_native_target_keeps_the_runs_topology_policy_and_seed() {
        let machine = MachineConfig::load("hpca97").unwrap();
        let topology = Topology { nodes: 2, procs_per_node: 3 };
        let config = SimConfig::new(machine.clone(), topology, Policy::Floating, 77);
        let t = native_target(&config).unwrap();
        assert_eq!(t.on.name(), "native");
        assert_eq!(t.config.run.topology, topology);
        assert_eq!(t.config.run.policy, Policy::Floating);
        assert_eq!(t.config.run.seed, 77);
        assert_eq!(t.config.segment_bytes as u64, machine.segment_bytes());
    }
}
