//! Machine presets: TOML files shipped with finegrain (embedded at build
//! time, so the binary works from any directory), or any other file by
//! path; a preset must name every field.

use super::{parse_toml, read_input, ConfigError, MachineConfig};

/// Presets shipped with finegrain, embedded at build time.
pub const PRESETS: &[(&str, &str)] = &[
    ("hpca97", include_str!("../../../../presets/hpca97.toml")),
    ("hpca99", include_str!("../../../../presets/hpca99.toml")),
    ("ipps96", include_str!("../../../../presets/ipps96.toml")),
    ("modern", include_str!("../../../../presets/modern.toml")),
];

impl MachineConfig {
    /// Loads a shipped preset by name, or a TOML file when `name` ends in
    /// `.toml`.
    pub fn load(name: &str) -> Result<MachineConfig, ConfigError> {
        if name.ends_with(".toml") {
            let text = read_input(std::path::Path::new(name))
                .map_err(|e| ConfigError::invalid("preset", name, format!("cannot read the file: {e}")))?;
            // A preset file named from elsewhere (an experiment, a config
            // file) may not be the one the user has in mind: name it.
            return MachineConfig::from_toml(name, &text).map_err(|e| match e {
                ConfigError::Invalid { field, value, allowed } => {
                    ConfigError::Invalid { field, value, allowed: format!("{allowed} (in preset file {name})") }
                }
                other => other,
            });
        }
        let (_, text) = PRESETS.iter().find(|(n, _)| *n == name).ok_or_else(|| ConfigError::UnknownPreset {
            name: name.to_string(),
            allowed: format!(
                "{} (or a path to a .toml file)",
                PRESETS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        })?;
        MachineConfig::from_toml(&format!("preset {name}"), text)
    }

    pub fn from_toml(origin: &str, text: &str) -> Result<MachineConfig, ConfigError> {
        let m: MachineConfig = parse_toml(origin, text)?;
        require_named(origin, text)?;
        require_every_value_named(origin, text, &m)?;
        // A ledger is optional in a preset of one's own, and whole if given.
        if !m.ledger.is_empty() {
            m.ledger.check(origin, text)?;
        }
        m.validate()?;
        Ok(m)
    }
}

/// Fields that run records made before them may omit (they ran without
/// them), but a preset must name: the table, the field, what it allows.
const NAMED_IN_PRESETS: [(&str, &str, &str); 15] = [
    ("bus", "address_phase_cycles", "the split bus's address phase, a positive number of cycles"),
    ("protocol", "role_arbitration", "lowest or round-robin"),
    ("protocol", "protocol_thread", "true or false"),
    ("protocol", "context_switch_cycles", "a number of cycles"),
    ("protocol", "context_bytes", "a number of bytes"),
    ("protocol", "requests_via_pp", "true or false"),
    ("pdq", "embedded_data_cache", "true (embedded protocol processors have a data cache) or false (cacheless)"),
    ("pdq", "affinity_passes", "0 for the paper's device, or how often key affinity may pass an entry over"),
    ("network", "latency_includes_ports", "true (the latency spans both ports) or false (ports added at both ends)"),
    ("network", "payload_cycles_per_byte", "cycles per payload byte on the sender's link, 0 for none"),
    (
        "network",
        "payload_occupies_sender",
        "true (the sender waits for its payload's injection) or false (the port alone)",
    ),
    ("pdq", "hardware_resume_cycles", "cycles to release a stalled thread, 0 for the spin's cache hit"),
    ("pdq", "embedded_resume_cycles", "cycles to release a stalled thread, 0 for the spin's cache hit"),
    ("pdq", "smp_resume_cycles", "cycles to release a stalled thread, 0 for the spin's cache hit"),
    ("pdq", "directory_in_memory", "true (software protocol processors cache the directory) or false (device state)"),
];

/// A preset names every field, including those records may omit (in the
/// sections it has: an optional section it leaves out names nothing).
fn require_named(origin: &str, text: &str) -> Result<(), ConfigError> {
    // The text parsed as a preset already, so it parses as a table.
    let Ok(table) = text.parse::<toml::Table>() else { return Ok(()) };
    for (section, field, allowed) in NAMED_IN_PRESETS {
        let named = table.get(section).and_then(toml::Value::as_table).is_none_or(|t| t.contains_key(field));
        if !named {
            return Err(ConfigError::Toml {
                origin: origin.to_string(),
                message: format!(
                    "missing field `{field}` in [{section}]: a preset names it (allowed {allowed}); only run records \
                     made before it existed may leave it out"
                ),
            });
        }
    }
    Ok(())
}

/// A preset names every value the machine holds: a field that run records
/// may omit (so deserializing fills it with 0 or false) must not stand for
/// a number the preset forgot. Every value the parsed machine writes back
/// out must be in the text (fields left out when zero or false, and
/// optional sections, are not written back, so they are not demanded).
fn require_every_value_named(origin: &str, text: &str, m: &MachineConfig) -> Result<(), ConfigError> {
    let Ok(named) = text.parse::<toml::Table>() else { return Ok(()) };
    let Ok(toml::Value::Table(held)) = toml::Value::try_from(m) else { return Ok(()) };
    let mut missing = Vec::new();
    unnamed_leaves("", &held, &named, &mut missing);
    match missing.first() {
        None => Ok(()),
        Some(path) => Err(ConfigError::Toml {
            origin: origin.to_string(),
            message: format!(
                "missing field `{path}`{}: a preset names every field (only run records made before a field \
                 existed may leave it out)",
                if missing.len() > 1 {
                    format!(" (and {} more: {})", missing.len() - 1, missing[1..].join(", "))
                } else {
                    String::new()
                }
            ),
        }),
    }
}

/// Dotted paths of the leaves of `held` that `named` does not have.
fn unnamed_leaves(prefix: &str, held: &toml::Table, named: &toml::Table, out: &mut Vec<String>) {
    for (key, value) in held {
        if prefix.is_empty() && key == "ledger" {
            continue;
        }
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match (value, named.get(key)) {
            (toml::Value::Table(inner), Some(toml::Value::Table(given))) => unnamed_leaves(&path, inner, given, out),
            (_, Some(_)) => {}
            (_, None) => out.push(path),
        }
    }
}
