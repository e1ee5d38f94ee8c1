//! The studies as `reproduce`, `rerun` and `--plan` see them, whatever
//! their types: each study registered once (see [`crate::studies::STUDIES`]),
//! its simulated and native runs and its records reached through one
//! object.

use crate::experiment::{Parsed, Source};
use crate::reuse::Earlier;
use crate::study::{reproduce, write_plan, Reproduced, Spread, Study};
use anyhow::Result;
use std::path::Path;

/// A study as the registry holds it: what `reproduce` and `rerun` need,
/// whatever its types.
pub trait AnyStudy: Sync {
    fn name(&self) -> &'static str;
    /// The shipped experiment file's text.
    fn experiment(&self) -> &'static str;
    /// Runs the experiment `src`, parsed as `exp`.
    fn reproduce(
        &self,
        src: &Source,
        exp: Parsed,
        quick: bool,
        out: &Path,
        earlier: &Earlier,
        spread: &Spread,
    ) -> Result<Option<Reproduced>>;
    /// Whether it runs on the native runtime (`--platform native`).
    fn runs_natively(&self) -> bool;
    /// Runs the experiment `src` on threads of this process.
    fn reproduce_native(&self, src: &Source, exp: Parsed, quick: bool, out: &Path) -> Result<Reproduced>;
    /// Writes its planned runs (`finegrain reproduce --plan`).
    fn write_plan(&self, src: &Source, exp: Parsed, quick: bool, dir: &Path) -> Result<String>;
    /// Regenerates one of its records (`finegrain rerun`), checking the
    /// record's labels with the study's own label type.
    fn rerun(&self, record: &str) -> Result<crate::regenerate::Rerun>;
}

/// Registers study `S` (see [`crate::studies::STUDIES`]).
pub struct Registered<S>(std::marker::PhantomData<S>);

impl<S> Registered<S> {
    pub const STUDY: Registered<S> = Registered(std::marker::PhantomData);
}

impl<S: Study> AnyStudy for Registered<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn experiment(&self) -> &'static str {
        S::EXPERIMENT
    }

    fn reproduce(
        &self,
        src: &Source,
        exp: Parsed,
        quick: bool,
        out: &Path,
        earlier: &Earlier,
        spread: &Spread,
    ) -> Result<Option<Reproduced>> {
        reproduce::<S>(src, exp, quick, out, earlier, spread)
    }

    fn runs_natively(&self) -> bool {
        S::NATIVE
    }

    fn reproduce_native(&self, src: &Source, exp: Parsed, quick: bool, out: &Path) -> Result<Reproduced> {
        crate::native::reproduce::<S>(src, exp, quick, out)
    }

    fn write_plan(&self, src: &Source, exp: Parsed, quick: bool, dir: &Path) -> Result<String> {
        write_plan::<S>(src, exp, quick, dir)
    }

    fn rerun(&self, record: &str) -> Result<crate::regenerate::Rerun> {
        crate::regenerate::regenerate::<S::Labels>(record)
    }
}
