//! The reproduced studies, one module each, and the list that registers
//! them. Adding a study: a module here implementing
//! [`Study`](crate::study::Study), its experiment file in `experiments/`,
//! and one line in [`STUDIES`].

pub mod coprocessor;
pub mod pdq_dsm;
pub mod pdq_micro;
pub mod scheduling_micro;

use crate::experiment::Source;
use crate::study::{AnyStudy, Registered};
use anyhow::{bail, Result};

/// Every study `finegrain reproduce` and `finegrain rerun` know.
pub static STUDIES: &[&dyn AnyStudy] = &[
    &Registered::<scheduling_micro::SchedulingMicro>::STUDY,
    &Registered::<pdq_micro::PdqMicro>::STUDY,
    &Registered::<coprocessor::Coprocessor>::STUDY,
    &Registered::<pdq_dsm::PdqDsm>::STUDY,
];

/// The study named `name`.
pub fn find(name: &str) -> Option<&'static dyn AnyStudy> {
    STUDIES.iter().copied().find(|s| s.name() == name)
}

/// Every study's name, for messages: "a, b".
pub fn names() -> String {
    STUDIES.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

/// The experiment `name` names: a shipped study's file, or the file at
/// that path (a name ending in `.toml`, or with a directory).
pub fn source(name: &str) -> Result<Source> {
    if Source::names_a_file(name) {
        return Source::from_path(name);
    }
    match find(name) {
        Some(s) => Ok(Source::shipped(name, s.experiment())),
        None => bail!("unknown experiment '{name}': allowed {} (or a path to a .toml file)", names()),
    }
}
