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

use finegrain_core::{ConfigError, Discipline, Dispatch, MachineConfig, Policy, PpKind, Topology};
use finegrain_sim::SimConfig;
use serde::{Deserialize, Serialize};

/// Who runs the home's handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Protocol processors embedded in the NI device (Hurricane).
    Embedded,
    /// Dedicated SMP processors (Hurricane-1).
    Smp,
    /// Idle compute processors (Hurricane-1 Mult).
    Mult,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Embedded, Kind::Smp, Kind::Mult];

    pub fn label(self) -> &'static str {
        match self {
            Kind::Embedded => "embedded",
            Kind::Smp => "smp",
            Kind::Mult => "mult",
        }
    }

    /// The paper's name for the system.
    pub fn system(self) -> &'static str {
        match self {
            Kind::Embedded => "Hurricane (embedded)",
            Kind::Smp => "Hurricane-1 (dedicated SMP)",
            Kind::Mult => "Hurricane-1 Mult (idle compute)",
        }
    }

    /// The kind a label names, or a one-line error saying which exist.
    pub fn parse(s: &str) -> Result<Kind, ConfigError> {
        Kind::ALL
            .into_iter()
            .find(|k| k.label() == s)
            .ok_or_else(|| ConfigError::invalid("kind", s, "allowed embedded, smp, mult"))
    }
}

/// Whether a discipline runs with a kind and processor count: serial has
/// one protocol processor, static partitioning needs dedicated ones.
pub fn runs(kind: Kind, discipline: Discipline, k: u32) -> bool {
    match discipline {
        Discipline::Serial => k == 1,
        Discipline::Static => kind != Kind::Mult,
        Discipline::Pdq | Discipline::SpinLock => true,
    }
}

/// Who serves the home's handlers, and how: one point of the PDQ study.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub kind: Kind,
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
        let (policy, ppn, pp_kind, max_servers) = match self.kind {
            Kind::Embedded => (Policy::Fixed { protocol_procs: k }, compute_procs + k, PpKind::Embedded, None),
            Kind::Smp => (Policy::Fixed { protocol_procs: k }, compute_procs + k, PpKind::Smp, None),
            Kind::Mult => (Policy::Floating, compute_procs, PpKind::Smp, self.discipline.parallel().then_some(k)),
        };
        let topology = Topology { nodes: requester_nodes + 1, procs_per_node: ppn };
        let mut cfg = SimConfig::new(machine.clone(), topology, policy, seed);
        cfg.run.dispatch = Dispatch { discipline: self.discipline, pp_kind, max_servers };
        cfg
    }

    /// The point a configuration runs (the inverse of [`Point::sim_config`]),
    /// or None if no point makes it.
    pub fn of_config(cfg: &SimConfig) -> Option<Point> {
        let d = cfg.run.dispatch;
        let (kind, protocol_procs) = match (cfg.run.policy, d.pp_kind) {
            (Policy::Fixed { protocol_procs }, PpKind::Embedded) => (Kind::Embedded, protocol_procs),
            (Policy::Fixed { protocol_procs }, PpKind::Smp) => (Kind::Smp, protocol_procs),
            (Policy::Floating, PpKind::Smp) => (Kind::Mult, d.max_servers.unwrap_or(1)),
            _ => return None,
        };
        Some(Point { kind, discipline: d.discipline, protocol_procs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_is_found_back_from_its_configuration() {
        let machine = MachineConfig::load("hpca99").unwrap();
        for kind in Kind::ALL {
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
                    if discipline.parallel() || kind != Kind::Mult {
                        assert_eq!(back.protocol_procs, k);
                    }
                }
            }
        }
        assert_eq!(Kind::parse("gpu").unwrap_err().to_string(), "invalid kind = gpu: allowed embedded, smp, mult");
    }
}
