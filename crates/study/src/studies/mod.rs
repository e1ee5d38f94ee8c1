//! The reproduced studies, one module each, and the list that registers
//! them. Adding a study: a module here implementing
//! [`Study`](crate::study::Study), its experiment file in `experiments/`,
//! and one line in [`STUDIES`].

pub mod coprocessor;
pub mod pdq_dsm;
pub mod pdq_micro;
pub mod scheduling_micro;

use crate::experiment::Source;
use crate::registry::{AnyStudy, Registered};
use anyhow::{bail, Result};

/// Every study `finegrain reproduce` and `finegrain rerun` know.
pub static STUDIES: &[&dyn AnyStudy] = &[
    &Registered::<scheduling_micro::SchedulingMicro>::STUDY,
    &Registered::<pdq_micro::PdqMicro>::STUDY,
    &Registered::<coprocessor::Coprocessor>::STUDY,
    &Registered::<pdq_dsm::PdqDsm>::STUDY,
];

/// Experiment files shipped beside the studies' own: another grid of a
/// study, run by name like a study (`finegrain reproduce pdq-dsm-paper`).
pub static MORE_EXPERIMENTS: &[(&str, &str)] = &[
    // pdq-dsm's five machine shapes at the paper inputs (all six claims).
    ("pdq-dsm-paper", include_str!("../../../../experiments/pdq-dsm-paper.toml")),
    // Its 8x8 shapes alone (a piece for --reuse).
    ("pdq-dsm-paper-blocks", include_str!("../../../../experiments/pdq-dsm-paper-blocks.toml")),
];

/// Every experiment `reproduce` knows by name: the studies', then the
/// other shipped files.
pub fn experiment_names() -> Vec<&'static str> {
    STUDIES.iter().map(|s| s.name()).chain(MORE_EXPERIMENTS.iter().map(|e| e.0)).collect()
}

/// The study named `name`.
pub fn find(name: &str) -> Option<&'static dyn AnyStudy> {
    STUDIES.iter().copied().find(|s| s.name() == name)
}

/// Every study's name, for messages: "a, b".
pub fn names() -> String {
    STUDIES.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

/// The studies that run on the native runtime, for messages: "a, b".
pub fn native_names() -> String {
    STUDIES.iter().filter(|s| s.runs_natively()).map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

/// The experiment `name` names: a shipped study's file, or the file at
/// that path (a name ending in `.toml`, or with a directory).
pub fn source(name: &str) -> Result<Source> {
    if Source::names_a_file(name) {
        return Source::from_path(name);
    }
    if let Some(s) = find(name) {
        return Ok(Source::shipped(name, s.experiment()));
    }
    match MORE_EXPERIMENTS.iter().find(|e| e.0 == name) {
        Some(e) => Ok(Source::shipped(name, e.1)),
        None => {
            bail!("unknown experiment '{name}': allowed {} (or a path to a .toml file)", experiment_names().join(", "))
        }
    }
}
