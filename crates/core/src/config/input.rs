//! Reading input files (within their size limit) and parsing TOML into
//! typed configuration with one-line errors.

use super::{ConfigError, INPUT_FILE_LIMIT};

/// Reads a UTF-8 input file of at most [`INPUT_FILE_LIMIT`] bytes, without
/// a leading byte-order mark.
pub fn read_input(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?.take(INPUT_FILE_LIMIT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > INPUT_FILE_LIMIT {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} MiB, the most an input file may hold", INPUT_FILE_LIMIT >> 20),
        ));
    }
    // Editors on some systems start a UTF-8 file with a byte-order mark;
    // the TOML parser skips it, the JSON one would not.
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// Parses TOML into `T`, mapping errors to a one-line [`ConfigError`].
pub fn parse_toml<T: serde::de::DeserializeOwned>(origin: &str, text: &str) -> Result<T, ConfigError> {
    // The path names the table a missing key belongs in, which the error's
    // own span (the whole table) does not.
    serde_path_to_error::deserialize(toml::Deserializer::new(text))
        .map_err(|e| ConfigError::from_toml(origin, text, e.inner(), &e.path().to_string()))
}
