//! What each subcommand does. Each module takes its parsed arguments and
//! calls into the library crates.

pub mod bench;
pub mod calibrate;
pub mod launch;
pub mod reproduce;
pub mod rerun;
pub mod run;
pub mod sweep;
