//! Machine, topology and policy configuration: serde types read from TOML,
//! validated so bad input gets a one-line error naming the field and what is
//! allowed.
//!
//! A machine preset (`presets/<name>.toml`) holds every cost the models use,
//! in processor cycles unless the name says otherwise. Presets are data, not
//! code: the files are embedded at build time so the binary works from any
//! directory, and a path to another TOML file works too.

mod coprocessor;
mod error;
mod input;
mod ledger;
mod limits;
mod machine;
mod presets;
mod run;
mod serving;
#[cfg(test)]
mod tests;

pub use coprocessor::{CoprocessorParams, DmaCalibration};
pub use error::{plain_type_names, ConfigError};
pub use input::{parse_toml, read_input};
pub use ledger::{Kind as ProvenanceKind, Ledger, Provenance};
pub use limits::{INPUT_FILE_LIMIT, MAX_CYCLES, MAX_NODES, MAX_REQUESTS};
pub use machine::{
    is_zero, BusParams, CacheParams, Calibration, ComputeParams, DsmParams, Effects, InterruptParams, MachineConfig,
    MemoryParams, NetworkParams, NiKind, NiParams, PdqParams, ProcessorParams, ProtocolParams,
};
pub use presets::PRESETS;
pub use run::{
    check_max_servers, mix_seed, CoprocLibrary, Discipline, Dispatch, Notification, Policy, PpKind, Relinquish,
    RoleArbitration, RunConfig, Topology,
};
pub use serving::{ServingKind, ServingSystem, DSM_PPS};
