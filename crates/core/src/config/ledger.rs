//! The parameter ledger: where each value of a machine preset comes from.
//!
//! A preset's `[ledger]` table gives every other parameter of the file
//! (by its dotted path, `"bus.memory_latency"`) one provenance:
//! - `paper`: stated by the paper (`source` names the section, table or
//!   figure);
//! - `derived`: computed from other values (`source` says from which, and
//!   how);
//! - `fitted`: chosen so that a number the paper states about a primitive
//!   (a latency, an occupancy, a step of a table) comes out (`source`
//!   names that number; `finegrain calibrate` measures it back with its
//!   residual);
//! - `estimate`: the paper leaves it open (`source` says why this value;
//!   `moves` which verdicts move when it does).
//!
//! The ledger documents the machine; it is not part of it. Records leave it
//! out and two machines that differ only in their ledgers are equal, so a
//! record made before the ledger existed still matches its preset.

use super::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The four kinds of provenance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Paper,
    Derived,
    Fitted,
    Estimate,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Paper, Kind::Derived, Kind::Fitted, Kind::Estimate];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Paper => "paper",
            Kind::Derived => "derived",
            Kind::Fitted => "fitted",
            Kind::Estimate => "estimate",
        }
    }
}

/// One parameter's provenance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub kind: Kind,
    /// The section or table (paper), the inputs and rule (derived), the
    /// stated number fitted to (fitted), or the reason for the value
    /// (estimate).
    pub source: String,
    /// Estimates only: the verdicts that move when the value moves, and
    /// the sensitivity run that showed it (or that none was run yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves: Option<String>,
}

/// A preset's ledger, by dotted parameter path.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ledger(pub BTreeMap<String, Provenance>);

/// Documentation, not machine: see the module's notes.
impl PartialEq for Ledger {
    fn eq(&self, _: &Ledger) -> bool {
        true
    }
}

/// Top-level keys that are not parameters: the preset's name and
/// description, and the ledger itself.
const NOT_PARAMETERS: [&str; 3] = ["name", "description", "ledger"];

impl Ledger {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Entries of one kind, in path order.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = (&String, &Provenance)> {
        self.0.iter().filter(move |(_, p)| p.kind == kind)
    }

    /// Checks a ledger against its preset's text: an entry for every
    /// parameter, none for a parameter the preset does not have, a source
    /// in each, and what moves with each estimate.
    pub fn check(&self, origin: &str, text: &str) -> Result<(), ConfigError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::Toml { origin: origin.into(), message: e.to_string() })?;
        let params = parameter_paths(&table);
        let fail = |message: String| Err(ConfigError::Toml { origin: origin.into(), message });
        let missing: Vec<&str> = params.iter().filter(|p| !self.0.contains_key(*p)).map(String::as_str).collect();
        if !missing.is_empty() {
            return fail(format!(
                "[ledger] gives no provenance for {}: a ledger names every parameter (kind = paper, derived, fitted \
                 or estimate, and its source)",
                missing.join(", ")
            ));
        }
        for (path, p) in &self.0 {
            if !params.contains(path) {
                return fail(format!("[ledger] names `{path}`, which is no parameter of this preset"));
            }
            if p.source.trim().is_empty() {
                return fail(format!(
                    "[ledger] `{path}` has an empty source: allowed a section, rule, target or reason"
                ));
            }
            match (p.kind, &p.moves) {
                (Kind::Estimate, None) => {
                    return fail(format!(
                        "[ledger] `{path}` is an estimate without `moves`: say which verdicts move with it"
                    ))
                }
                (k, Some(_)) if k != Kind::Estimate => {
                    return fail(format!("[ledger] `{path}` is {} and has `moves`: only estimates have it", k.name()))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Every leaf of a preset's tables, as a dotted path, but the keys that are
/// not parameters.
fn parameter_paths(table: &toml::Table) -> std::collections::BTreeSet<String> {
    fn walk(prefix: &str, table: &toml::Table, out: &mut std::collections::BTreeSet<String>) {
        for (k, v) in table {
            let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            match v {
                toml::Value::Table(t) => walk(&path, t, out),
                _ => {
                    out.insert(path);
                }
            }
        }
    }
    let mut out = Default::default();
    let params: toml::Table = table
        .iter()
        .filter(|(k, _)| !NOT_PARAMETERS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    walk("", &params, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRESET: &str = r#"
name = "x"
description = "y"
[bus]
memory_latency = 60
memory_occupancy = 20
[ledger]
"bus.memory_latency" = { kind = "paper", source = "Section 5" }
"bus.memory_occupancy" = { kind = "estimate", source = "a DRAM of the period", moves = "none measured" }
"#;

    fn ledger(text: &str) -> Ledger {
        let t: toml::Table = text.parse().unwrap();
        t["ledger"].clone().try_into().unwrap()
    }

    #[test]
    fn a_complete_ledger_passes() {
        ledger(PRESET).check("t", PRESET).unwrap();
    }

    #[test]
    fn a_parameter_without_provenance_is_named() {
        let text = PRESET.replace("[ledger]", "[network]\nlatency_cycles = 100\n[ledger]");
        let e = ledger(&text).check("t", &text).unwrap_err().to_string();
        assert!(e.contains("network.latency_cycles"), "{e}");
    }

    #[test]
    fn an_entry_for_no_parameter_is_named() {
        let text = PRESET.to_string() + "\"bus.gone\" = { kind = \"paper\", source = \"S\" }\n";
        let e = ledger(&text).check("t", &text).unwrap_err().to_string();
        assert!(e.contains("bus.gone"), "{e}");
    }

    #[test]
    fn an_estimate_says_what_moves_and_only_an_estimate() {
        let text = PRESET.replace(", moves = \"none measured\"", "");
        let e = ledger(&text).check("t", &text).unwrap_err().to_string();
        assert!(e.contains("without `moves`"), "{e}");
        let text = PRESET.replace("source = \"Section 5\"", "source = \"Section 5\", moves = \"x\"");
        let e = ledger(&text).check("t", &text).unwrap_err().to_string();
        assert!(e.contains("only estimates"), "{e}");
    }

    #[test]
    fn ledgers_never_make_machines_differ() {
        assert_eq!(ledger(PRESET), Ledger::default());
    }
}

#[cfg(test)]
mod shipped {
    use crate::config::{MachineConfig, PRESETS};

    /// Every shipped preset traces every parameter (loading checks the
    /// ledger is whole; this checks there is one).
    #[test]
    fn every_shipped_preset_has_a_whole_ledger() {
        for (name, _) in PRESETS {
            let m = MachineConfig::load(name).unwrap_or_else(|e| panic!("{e}"));
            assert!(!m.ledger.is_empty(), "preset {name} has no [ledger]");
        }
    }
}
