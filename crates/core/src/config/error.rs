//! Configuration problems as one-line errors, and Rust's type names in
//! serde messages put in plain words.

use std::fmt;
use thiserror::Error;

/// Configuration problems, each rendered as one line.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("invalid {field} = {value}: {allowed}")]
    Invalid { field: String, value: String, allowed: String },
    #[error("unknown preset '{name}': allowed {allowed}")]
    UnknownPreset { name: String, allowed: String },
    #[error("malformed TOML in {origin}: {message}")]
    Toml { origin: String, message: String },
}

impl ConfigError {
    pub fn invalid(field: &str, value: impl fmt::Display, allowed: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { field: field.to_string(), value: value.to_string(), allowed: allowed.into() }
    }

    /// Converts a TOML parse error into a single line with its location;
    /// `table` is the table it arose in ("" or "." for the top level).
    pub fn from_toml(origin: &str, text: &str, err: &toml::de::Error, table: &str) -> ConfigError {
        let mut message = plain_types(&err.message().replace('\n', " "));
        if message.starts_with("missing field") && !matches!(table, "" | ".") {
            message = format!("{} in [{table}]", message.trim());
        }
        // A missing key is the whole document's fault: its span says
        // nothing about where the key should have been.
        let location = err
            .span()
            .filter(|_| !message.starts_with("missing field"))
            .map(|s| {
                let start = s.start.min(text.len());
                let line = text[..start].matches('\n').count() + 1;
                // The line itself names the key and the value at fault.
                let source = text.lines().nth(line - 1).unwrap_or("").trim();
                let source: String = source.chars().take(60).collect();
                if source.is_empty() {
                    format!("line {line}: ")
                } else {
                    format!("line {line} (`{source}`): ")
                }
            })
            .unwrap_or_default();
        ConfigError::Toml { origin: origin.to_string(), message: format!("{location}{}", message.trim()) }
    }
}

/// TOML's words for what serde says: Rust type names, and the parser's own
/// phrases.
fn plain_types(message: &str) -> String {
    plain_type_names(message, "2^63-1 (the largest TOML integer)")
        // An enum's field holding a number or a list: the words it allows
        // are in the unknown-variant error a quoted wrong word gets.
        .replace("wanted string or table", "expected a quoted word")
        .replace("number too large to fit in target type", "number too large for TOML, whose integers stop at 2^63-1")
}

/// serde names Rust types in what it expected; says what a file may hold
/// instead. `largest` is the largest whole number the format can write.
pub fn plain_type_names(message: &str, largest: &str) -> String {
    let mut m = message.to_string();
    for (rust, plain) in [
        ("expected u64", format!("expected a whole number from 0 to {largest}")),
        ("expected usize", format!("expected a whole number from 0 to {largest}")),
        ("expected u32", "expected a whole number from 0 to 2^32-1".into()),
        ("expected u16", "expected a whole number from 0 to 65535".into()),
        ("expected u8", "expected a whole number from 0 to 255".into()),
        ("expected f64", "expected a number".into()),
        ("expected variant identifier", "expected a quoted kind name".into()),
        ("expected string or map", "expected a quoted word or a group of named fields".into()),
    ] {
        m = m.replace(rust, &plain);
    }
    // "expected struct CacheParams": the user sees a group of named fields
    // (a TOML table, a JSON object), not a Rust type.
    for (rust, plain) in [
        ("expected struct ", "expected a group of named fields"),
        ("expected internally tagged enum ", "expected a group of named fields with its \"kind\""),
    ] {
        m = replace_type_name(&m, rust, plain);
    }
    m
}

/// Replaces every `prefix` followed by a Rust type name with `plain`.
fn replace_type_name(message: &str, prefix: &str, plain: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        out.push_str(plain);
        let after = &rest[at + prefix.len()..];
        let name_len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
        rest = &after[name_len..];
    }
    out.push_str(rest);
    out
}
