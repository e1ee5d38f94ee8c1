//! The four fine-grain DSM systems of Falsafi & Wood's Parallel Dispatch
//! Queue paper (HPCA 1999, Sections 4 and 5): who runs the Stache
//! protocol's handlers on a node. One value names a system for the
//! calibration, the studies and the command line alike.

use super::{ConfigError, Discipline, Dispatch, Policy, PpKind, RunConfig};
use serde::{Deserialize, Serialize};

/// A DSM system of the PDQ paper. Every one dispatches through a
/// Parallel Dispatch Queue on the node's custom device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum DsmSystem {
    /// All-hardware Simple-COMA: one finite-state-machine protocol engine
    /// on the device ("S-COMA is a single-processor device", Section 5).
    Scoma,
    /// 1, 2 or 4 protocol processors embedded in the device (Section 4.1).
    Hurricane { pps: u32 },
    /// 1, 2 or 4 dedicated SMP processors besides the compute processors
    /// (Section 4.2; Section 5.2 adds them to the 8 that compute).
    Hurricane1 { pps: u32 },
    /// Hurricane-1 Mult: handlers run on idle compute processors, an
    /// interrupt only when all of them compute (Section 4.2).
    Mult,
}

/// Protocol processors a Hurricane or Hurricane-1 system may have.
pub const DSM_PPS: [u32; 3] = [1, 2, 4];

const DSM_SPELLINGS: &str = "allowed s-coma, hurricane-1pp, hurricane-2pp, hurricane-4pp, hurricane1-1pp, \
                             hurricane1-2pp, hurricane1-4pp, mult";

impl DsmSystem {
    /// Every system, in the paper's order.
    pub fn all() -> Vec<DsmSystem> {
        let mut v = vec![DsmSystem::Scoma];
        v.extend(DSM_PPS.map(|pps| DsmSystem::Hurricane { pps }));
        v.extend(DSM_PPS.map(|pps| DsmSystem::Hurricane1 { pps }));
        v.push(DsmSystem::Mult);
        v
    }

    pub fn label(&self) -> String {
        match self {
            DsmSystem::Scoma => "s-coma".into(),
            DsmSystem::Hurricane { pps } => format!("hurricane-{pps}pp"),
            DsmSystem::Hurricane1 { pps } => format!("hurricane1-{pps}pp"),
            DsmSystem::Mult => "mult".into(),
        }
    }

    /// Parses a label ([`DsmSystem::label`]); a bad name gets a one-line
    /// error naming the allowed ones.
    pub fn parse(s: &str) -> Result<DsmSystem, ConfigError> {
        DsmSystem::all()
            .into_iter()
            .find(|d| d.label() == s)
            .ok_or_else(|| ConfigError::invalid("system", s, DSM_SPELLINGS))
    }

    /// What runs the handlers.
    pub fn pp_kind(&self) -> PpKind {
        match self {
            DsmSystem::Scoma => PpKind::Hardware,
            DsmSystem::Hurricane { .. } => PpKind::Embedded,
            DsmSystem::Hurricane1 { .. } | DsmSystem::Mult => PpKind::Smp,
        }
    }

    /// Dedicated protocol processors per node (none under Mult, whose
    /// compute processors serve).
    pub fn protocol_procs(&self) -> u32 {
        match *self {
            DsmSystem::Scoma => 1,
            DsmSystem::Hurricane { pps } | DsmSystem::Hurricane1 { pps } => pps,
            DsmSystem::Mult => 0,
        }
    }

    /// Processors per node for `compute_procs` that compute: the dedicated
    /// protocol processors come on top (under policy fixed the simulator
    /// counts a device's processors among a node's, the last ones).
    pub fn procs_per_node(&self, compute_procs: u32) -> u32 {
        compute_procs + self.protocol_procs()
    }

    /// Sets `run`'s processors per node, policy and dispatch (PDQ) for
    /// this system with `compute_procs` compute processors per node.
    pub fn apply(&self, run: &mut RunConfig, compute_procs: u32) {
        run.topology.procs_per_node = self.procs_per_node(compute_procs);
        run.policy = match self {
            DsmSystem::Mult => Policy::Floating,
            _ => Policy::Fixed { protocol_procs: self.protocol_procs() },
        };
        run.dispatch = Dispatch { discipline: Discipline::Pdq, pp_kind: self.pp_kind(), max_servers: None };
    }

    /// The system a run configuration is, or None if none is.
    pub fn of_run(run: &RunConfig) -> Option<DsmSystem> {
        let d = run.dispatch;
        if d.discipline != Discipline::Pdq || d.max_servers.is_some() {
            return None;
        }
        let system = match (run.policy, d.pp_kind) {
            (Policy::Fixed { protocol_procs: 1 }, PpKind::Hardware) => DsmSystem::Scoma,
            (Policy::Fixed { protocol_procs: pps }, PpKind::Embedded) => DsmSystem::Hurricane { pps },
            (Policy::Fixed { protocol_procs: pps }, PpKind::Smp) => DsmSystem::Hurricane1 { pps },
            (Policy::Floating, PpKind::Smp) => DsmSystem::Mult,
            _ => return None,
        };
        DsmSystem::all().contains(&system).then_some(system)
    }
}

impl std::fmt::Display for DsmSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

impl TryFrom<String> for DsmSystem {
    type Error = ConfigError;
    fn try_from(s: String) -> Result<DsmSystem, ConfigError> {
        DsmSystem::parse(&s)
    }
}

impl From<DsmSystem> for String {
    fn from(d: DsmSystem) -> String {
        d.label()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Topology;

    #[test]
    fn labels_parse_back_and_bad_names_list_the_allowed_ones() {
        for d in DsmSystem::all() {
            assert_eq!(DsmSystem::parse(&d.label()).unwrap(), d);
        }
        assert_eq!(DsmSystem::all().len(), 8);
        assert_eq!(DsmSystem::parse("hurricane-2pp").unwrap(), DsmSystem::Hurricane { pps: 2 });
        assert_eq!(DsmSystem::parse("hurricane1-4pp").unwrap(), DsmSystem::Hurricane1 { pps: 4 });
        for bad in ["hurricane-3pp", "S-COMA", "scoma", ""] {
            let e = DsmSystem::parse(bad).unwrap_err().to_string();
            assert!(!e.contains('\n') && e.contains("allowed s-coma") && e.contains("mult"), "{e}");
        }
        #[derive(Serialize, Deserialize)]
        struct Named {
            system: DsmSystem,
        }
        let text = toml::to_string(&Named { system: DsmSystem::Hurricane1 { pps: 2 } }).unwrap();
        assert_eq!(text.trim(), "system = \"hurricane1-2pp\"");
        assert!(toml::from_str::<Named>("system = \"hurricane1-8pp\"").is_err());
    }

    #[test]
    fn a_system_sets_the_run_and_dedicated_processors_come_on_top_of_the_compute_ones() {
        for d in DsmSystem::all() {
            let mut run = RunConfig::new(Topology { nodes: 8, procs_per_node: 1 }, Policy::Single, 1);
            d.apply(&mut run, 8);
            run.validate().unwrap();
            assert_eq!(run.policy.compute_procs(run.topology.procs_per_node), 8, "{d}");
            assert_eq!(run.dispatch.discipline, Discipline::Pdq);
            assert_eq!(DsmSystem::of_run(&run), Some(d));
        }
        let mut run = RunConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single, 1);
        DsmSystem::Hurricane1 { pps: 4 }.apply(&mut run, 8);
        assert_eq!(run.topology.procs_per_node, 12);
        assert_eq!(run.policy, Policy::Fixed { protocol_procs: 4 });
        DsmSystem::Mult.apply(&mut run, 8);
        assert_eq!((run.topology.procs_per_node, run.policy), (8, Policy::Floating));
        DsmSystem::Scoma.apply(&mut run, 1);
        assert_eq!((run.topology.procs_per_node, run.dispatch.pp_kind), (2, PpKind::Hardware));
    }
}
