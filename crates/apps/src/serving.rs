//! Who serves a home node's handlers in the fetch&add workload, and how:
//! the three systems of the PDQ paper (Falsafi & Wood, HPCA 1999, Section
//! 4) as a simulated machine's policy and dispatch.
//!
//! - embedded: K protocol processors on the network-interface device
//!   (Hurricane), each with a data cache when the preset says so (hpca99
//!   does), added to the node's compute processors;
//! - smp: K dedicated SMP processors (Hurricane-1), added likewise;
//! - mult: the node's idle compute processors, at most K at once
//!   (Hurricane-1 Mult), interrupted only when every one computes.

use finegrain_core::{ConfigError, Discipline, MachineConfig, Policy, ServingKind, ServingSystem, Topology};
use finegrain_sim::SimConfig;

/// Whether a discipline runs with a kind and processor count: serial has
/// one protocol processor, static partitioning needs dedicated ones.
pub fn runs(kind: ServingKind, discipline: Discipline, k: u32) -> bool {
    match discipline {
        Discipline::Serial => k == 1,
        Discipline::Static => kind != ServingKind::Mult,
        Discipline::Pdq | Discipline::SpinLock => true,
    }
}

/// Who serves the home's handlers, and how: one point of the PDQ study.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub kind: ServingKind,
    pub discipline: Discipline,
    pub protocol_procs: u32,
}

impl Point {
    /// A one-line error unless the discipline runs with this kind and
    /// processor count.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.protocol_procs == 0 {
            return Err(ConfigError::invalid("protocol_procs", 0, "allowed 1 or more"));
        }
        if !runs(self.kind, self.discipline, self.protocol_procs) {
            return Err(ConfigError::invalid(
                "discipline",
                format!("{} with {} x {}", self.discipline.label(), self.protocol_procs, self.kind.label()),
                "serial runs with 1 protocol processor, static with embedded or smp ones",
            ));
        }
        Ok(())
    }

    /// The simulated machine: a home node and `requester_nodes` others,
    /// each with `compute_procs` compute processors. Embedded and SMP
    /// protocol processors are added to them (Fixed); Mult serves on them
    /// (Floating).
    pub fn sim_config(
        &self,
        machine: &MachineConfig,
        requester_nodes: u32,
        compute_procs: u32,
        seed: u64,
    ) -> SimConfig {
        let k = self.protocol_procs;
        let max_servers = (self.kind == ServingKind::Mult && self.discipline.parallel()).then_some(k);
        let topology = Topology { nodes: requester_nodes + 1, procs_per_node: compute_procs };
        let mut cfg = SimConfig::new(machine.clone(), topology, Policy::Single, seed);
        self.system().apply_dispatch(&mut cfg.run, compute_procs, self.discipline, max_servers);
        cfg
    }

    /// The system serving the home: the kind with this point's protocol
    /// processors (under Mult its server limit, set in the dispatch).
    pub fn system(&self) -> ServingSystem {
        ServingSystem::of_kind(self.kind, self.protocol_procs)
    }

    /// The point a configuration runs (the inverse of [`Point::sim_config`]),
    /// or None if no point makes it.
    pub fn of_config(cfg: &SimConfig) -> Option<Point> {
        let d = cfg.run.dispatch;
        let system = ServingSystem::serving(&cfg.run)?;
        // Mult under serial dispatch has no server limit: one serves at a
        // time.
        let protocol_procs = match system {
            ServingSystem::Mult => d.max_servers.unwrap_or(1),
            _ => system.protocol_procs(),
        };
        Some(Point { kind: system.kind()?, discipline: d.discipline, protocol_procs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_is_found_back_from_its_configuration() {
        let machine = MachineConfig::load("hpca99").unwrap();
        for kind in ServingKind::ALL {
            for discipline in [Discipline::Serial, Discipline::Pdq, Discipline::SpinLock, Discipline::Static] {
                for k in [1, 4] {
                    let p = Point { kind, discipline, protocol_procs: k };
                    if p.check().is_err() {
                        continue;
                    }
                    let cfg = p.sim_config(&machine, 2, 8, 1);
                    // Mult under serial dispatch has no server limit: it
                    // reads back as one server.
                    let back = Point::of_config(&cfg).unwrap();
                    assert_eq!(back.kind, kind);
                    assert_eq!(back.discipline, discipline);
                    if discipline.parallel() || kind != ServingKind::Mult {
                        assert_eq!(back.protocol_procs, k);
                    }
                }
            }
        }
    }

    #[test]
    fn dedicated_processors_come_on_top_and_mult_serves_on_the_compute_ones() {
        use finegrain_core::PpKind;
        let machine = MachineConfig::load("hpca99").unwrap();
        let run = |kind, discipline, protocol_procs| {
            let cfg = Point { kind, discipline, protocol_procs }.sim_config(&machine, 2, 8, 1);
            let d = cfg.run.dispatch;
            (cfg.run.topology.nodes, cfg.run.topology.procs_per_node, cfg.run.policy, d.pp_kind, d.max_servers)
        };
        let fixed = |protocol_procs| Policy::Fixed { protocol_procs };
        assert_eq!(run(ServingKind::Embedded, Discipline::Static, 4), (3, 12, fixed(4), PpKind::Embedded, None));
        assert_eq!(run(ServingKind::Smp, Discipline::Serial, 1), (3, 9, fixed(1), PpKind::Smp, None));
        assert_eq!(run(ServingKind::Mult, Discipline::Pdq, 2), (3, 8, Policy::Floating, PpKind::Smp, Some(2)));
        assert_eq!(run(ServingKind::Mult, Discipline::Serial, 1), (3, 8, Policy::Floating, PpKind::Smp, None));
    }
}
