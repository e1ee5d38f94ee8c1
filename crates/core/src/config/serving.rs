//! Who runs a node's protocol handlers: the systems of Falsafi & Wood's
//! Parallel Dispatch Queue paper (HPCA 1999, Sections 4 and 5). One value
//! names a system for the fetch&add and DSM workloads, the calibration,
//! the studies and the command line alike.

use super::{ConfigError, Discipline, Dispatch, Policy, PpKind, RunConfig};
use serde::{Deserialize, Serialize};

/// Which processors run the handlers in software (Section 4): the kinds
/// of [`ServingSystem`] that have a count of protocol processors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServingKind {
    /// Protocol processors embedded in the NI device (Hurricane).
    Embedded,
    /// Dedicated SMP processors (Hurricane-1).
    Smp,
    /// Idle compute processors (Hurricane-1 Mult).
    Mult,
}

impl ServingKind {
    pub const ALL: [ServingKind; 3] = [ServingKind::Embedded, ServingKind::Smp, ServingKind::Mult];

    pub fn label(self) -> &'static str {
        match self {
            ServingKind::Embedded => "embedded",
            ServingKind::Smp => "smp",
            ServingKind::Mult => "mult",
        }
    }

    /// The paper's name for the system.
    pub fn system(self) -> &'static str {
        match self {
            ServingKind::Embedded => "Hurricane (embedded)",
            ServingKind::Smp => "Hurricane-1 (dedicated SMP)",
            ServingKind::Mult => "Hurricane-1 Mult (idle compute)",
        }
    }

    /// The kind a label names, or a one-line error saying which exist.
    pub fn parse(s: &str) -> Result<ServingKind, ConfigError> {
        ServingKind::ALL
            .into_iter()
            .find(|k| k.label() == s)
            .ok_or_else(|| ConfigError::invalid("kind", s, "allowed embedded, smp, mult"))
    }
}

/// A system of the PDQ paper. As the paper runs them, every one dispatches
/// through a Parallel Dispatch Queue on the node's custom device
/// ([`ServingSystem::apply`]); the fetch&add workload runs them under
/// other disciplines too ([`ServingSystem::apply_dispatch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ServingSystem {
    /// All-hardware Simple-COMA: one finite-state-machine protocol engine
    /// on the device ("S-COMA is a single-processor device", Section 5).
    Scoma,
    /// Protocol processors embedded in the device (Section 4.1; the DSM
    /// runs 1, 2 or 4).
    Hurricane { pps: u32 },
    /// Dedicated SMP processors besides the compute processors (Section
    /// 4.2; Section 5.2 adds 1, 2 or 4 to the 8 that compute).
    Hurricane1 { pps: u32 },
    /// Hurricane-1 Mult: handlers run on idle compute processors, an
    /// interrupt only when all of them compute (Section 4.2). How many may
    /// serve at once is the dispatch's limit (`Dispatch::max_servers`),
    /// not the system's.
    Mult,
}

/// Protocol processors a Hurricane or Hurricane-1 system of the DSM study
/// may have.
pub const DSM_PPS: [u32; 3] = [1, 2, 4];

const DSM_SPELLINGS: &str = "allowed s-coma, hurricane-1pp, hurricane-2pp, hurricane-4pp, hurricane1-1pp, \
                             hurricane1-2pp, hurricane1-4pp, mult";

impl ServingSystem {
    /// Every system the DSM study runs, in the paper's order.
    pub fn all() -> Vec<ServingSystem> {
        let mut v = vec![ServingSystem::Scoma];
        v.extend(DSM_PPS.map(|pps| ServingSystem::Hurricane { pps }));
        v.extend(DSM_PPS.map(|pps| ServingSystem::Hurricane1 { pps }));
        v.push(ServingSystem::Mult);
        v
    }

    /// The system of `kind` with `protocol_procs` dedicated processors
    /// (ignored under Mult, which has none of its own).
    pub fn of_kind(kind: ServingKind, protocol_procs: u32) -> ServingSystem {
        match kind {
            ServingKind::Embedded => ServingSystem::Hurricane { pps: protocol_procs },
            ServingKind::Smp => ServingSystem::Hurricane1 { pps: protocol_procs },
            ServingKind::Mult => ServingSystem::Mult,
        }
    }

    /// Which processors run the handlers in software; None for S-COMA's
    /// hardware engine.
    pub fn kind(&self) -> Option<ServingKind> {
        match self {
            ServingSystem::Scoma => None,
            ServingSystem::Hurricane { .. } => Some(ServingKind::Embedded),
            ServingSystem::Hurricane1 { .. } => Some(ServingKind::Smp),
            ServingSystem::Mult => Some(ServingKind::Mult),
        }
    }

    pub fn label(&self) -> String {
        match self {
            ServingSystem::Scoma => "s-coma".into(),
            ServingSystem::Hurricane { pps } => format!("hurricane-{pps}pp"),
            ServingSystem::Hurricane1 { pps } => format!("hurricane1-{pps}pp"),
            ServingSystem::Mult => "mult".into(),
        }
    }

    /// Parses the label of one of [`ServingSystem::all`]; a bad name gets
    /// a one-line error naming the allowed ones.
    pub fn parse(s: &str) -> Result<ServingSystem, ConfigError> {
        ServingSystem::all()
            .into_iter()
            .find(|d| d.label() == s)
            .ok_or_else(|| ConfigError::invalid("system", s, DSM_SPELLINGS))
    }

    /// What runs the handlers.
    pub fn pp_kind(&self) -> PpKind {
        match self {
            ServingSystem::Scoma => PpKind::Hardware,
            ServingSystem::Hurricane { .. } => PpKind::Embedded,
            ServingSystem::Hurricane1 { .. } | ServingSystem::Mult => PpKind::Smp,
        }
    }

    /// Dedicated protocol processors per node (none under Mult, whose
    /// compute processors serve).
    pub fn protocol_procs(&self) -> u32 {
        match *self {
            ServingSystem::Scoma => 1,
            ServingSystem::Hurricane { pps } | ServingSystem::Hurricane1 { pps } => pps,
            ServingSystem::Mult => 0,
        }
    }

    /// Processors per node for `compute_procs` that compute: the dedicated
    /// protocol processors come on top (under policy fixed the simulator
    /// counts a device's processors among a node's, the last ones).
    pub fn procs_per_node(&self, compute_procs: u32) -> u32 {
        compute_procs + self.protocol_procs()
    }

    /// The policy that puts the handlers on this system's processors.
    pub fn policy(&self) -> Policy {
        match self {
            ServingSystem::Mult => Policy::Floating,
            _ => Policy::Fixed { protocol_procs: self.protocol_procs() },
        }
    }

    /// Sets `run`'s processors per node, policy and dispatch for this
    /// system as the paper runs it (PDQ, every idle processor may serve)
    /// with `compute_procs` compute processors per node.
    pub fn apply(&self, run: &mut RunConfig, compute_procs: u32) {
        self.apply_dispatch(run, compute_procs, Discipline::Pdq, None);
    }

    /// Sets `run` as [`ServingSystem::apply`] does, dispatching by
    /// `discipline` with at most `max_servers` idle compute processors
    /// serving at once (Mult under a parallel discipline only, as
    /// `RunConfig::validate` checks).
    pub fn apply_dispatch(
        &self,
        run: &mut RunConfig,
        compute_procs: u32,
        discipline: Discipline,
        max_servers: Option<u32>,
    ) {
        run.topology.procs_per_node = self.procs_per_node(compute_procs);
        run.policy = self.policy();
        run.dispatch = Dispatch { discipline, pp_kind: self.pp_kind(), max_servers };
    }

    /// The system whose processors serve `run`, whatever its discipline,
    /// server limit and processor count; None if no system's do.
    pub fn serving(run: &RunConfig) -> Option<ServingSystem> {
        Some(match (run.policy, run.dispatch.pp_kind) {
            (Policy::Fixed { protocol_procs: 1 }, PpKind::Hardware) => ServingSystem::Scoma,
            (Policy::Fixed { protocol_procs: pps }, PpKind::Embedded) => ServingSystem::Hurricane { pps },
            (Policy::Fixed { protocol_procs: pps }, PpKind::Smp) => ServingSystem::Hurricane1 { pps },
            (Policy::Floating, PpKind::Smp) => ServingSystem::Mult,
            _ => return None,
        })
    }

    /// The system of [`ServingSystem::all`] a run configuration is as the
    /// paper runs it ([`ServingSystem::apply`]), or None if none is.
    pub fn of_run(run: &RunConfig) -> Option<ServingSystem> {
        let d = run.dispatch;
        if d.discipline != Discipline::Pdq || d.max_servers.is_some() {
            return None;
        }
        ServingSystem::serving(run).filter(|s| ServingSystem::all().contains(s))
    }
}

impl std::fmt::Display for ServingSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

impl TryFrom<String> for ServingSystem {
    type Error = ConfigError;
    fn try_from(s: String) -> Result<ServingSystem, ConfigError> {
        ServingSystem::parse(&s)
    }
}

impl From<ServingSystem> for String {
    fn from(d: ServingSystem) -> String {
        d.label()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Topology;

    #[test]
    fn labels_parse_back_and_bad_names_list_the_allowed_ones() {
        for d in ServingSystem::all() {
            assert_eq!(ServingSystem::parse(&d.label()).unwrap(), d);
        }
        assert_eq!(ServingSystem::all().len(), 8);
        assert_eq!(ServingSystem::parse("hurricane-2pp").unwrap(), ServingSystem::Hurricane { pps: 2 });
        assert_eq!(ServingSystem::parse("hurricane1-4pp").unwrap(), ServingSystem::Hurricane1 { pps: 4 });
        for bad in ["hurricane-3pp", "S-COMA", "scoma", ""] {
            let e = ServingSystem::parse(bad).unwrap_err().to_string();
            assert!(!e.contains('\n') && e.contains("allowed s-coma") && e.contains("mult"), "{e}");
        }
        #[derive(Serialize, Deserialize)]
        struct Named {
            system: ServingSystem,
        }
        let text = toml::to_string(&Named { system: ServingSystem::Hurricane1 { pps: 2 } }).unwrap();
        assert_eq!(text.trim(), "system = \"hurricane1-2pp\"");
        assert!(toml::from_str::<Named>("system = \"hurricane1-8pp\"").is_err());
    }

    #[test]
    fn a_system_sets_the_run_and_dedicated_processors_come_on_top_of_the_compute_ones() {
        for d in ServingSystem::all() {
            let mut run = RunConfig::new(Topology { nodes: 8, procs_per_node: 1 }, Policy::Single, 1);
            d.apply(&mut run, 8);
            run.validate().unwrap();
            assert_eq!(run.policy.compute_procs(run.topology.procs_per_node), 8, "{d}");
            assert_eq!(run.dispatch.discipline, Discipline::Pdq);
            assert_eq!(ServingSystem::of_run(&run), Some(d));
        }
        let mut run = RunConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single, 1);
        ServingSystem::Hurricane1 { pps: 4 }.apply(&mut run, 8);
        assert_eq!(run.topology.procs_per_node, 12);
        assert_eq!(run.policy, Policy::Fixed { protocol_procs: 4 });
        ServingSystem::Mult.apply(&mut run, 8);
        assert_eq!((run.topology.procs_per_node, run.policy), (8, Policy::Floating));
        ServingSystem::Scoma.apply(&mut run, 1);
        assert_eq!((run.topology.procs_per_node, run.dispatch.pp_kind), (2, PpKind::Hardware));
    }

    #[test]
    fn kinds_parse_back_and_a_bad_kind_lists_the_allowed_ones() {
        for k in ServingKind::ALL {
            assert_eq!(ServingKind::parse(k.label()).unwrap(), k);
            assert_eq!(ServingSystem::of_kind(k, 2).kind(), Some(k));
        }
        assert_eq!(ServingSystem::Scoma.kind(), None);
        assert_eq!(
            ServingKind::parse("gpu").unwrap_err().to_string(),
            "invalid kind = gpu: allowed embedded, smp, mult"
        );
        #[derive(Serialize, Deserialize)]
        struct Named {
            kind: ServingKind,
        }
        assert_eq!(toml::to_string(&Named { kind: ServingKind::Embedded }).unwrap().trim(), "kind = \"embedded\"");
        assert!(toml::from_str::<Named>("kind = \"s-coma\"").is_err());
    }

    #[test]
    fn a_system_under_any_discipline_is_found_back_but_only_pdq_is_the_papers() {
        for system in [ServingSystem::Hurricane { pps: 3 }, ServingSystem::Hurricane1 { pps: 8 }, ServingSystem::Mult] {
            for (discipline, servers) in [(Discipline::Serial, None), (Discipline::SpinLock, Some(2))] {
                let servers = servers.filter(|_| system == ServingSystem::Mult);
                let mut run = RunConfig::new(Topology { nodes: 3, procs_per_node: 1 }, Policy::Single, 1);
                system.apply_dispatch(&mut run, 8, discipline, servers);
                run.validate().unwrap();
                assert_eq!(ServingSystem::serving(&run), Some(system));
                assert_eq!(ServingSystem::of_run(&run), None, "{system} under {}", discipline.label());
                assert_eq!((run.dispatch.discipline, run.dispatch.max_servers), (discipline, servers));
            }
        }
        let run = RunConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Single, 1);
        assert_eq!(ServingSystem::serving(&run), None);
    }
}
