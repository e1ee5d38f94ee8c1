//! The largest inputs, costs and sizes finegrain accepts: beyond them a
//! run could not finish, or could not fit in memory.

/// Most bytes an input file (preset, configuration, experiment, run
/// record) may hold: the largest real one is a run record of a few hundred
/// KB, and a device such as /dev/zero would otherwise be read until memory
/// runs out.
pub const INPUT_FILE_LIMIT: u64 = 16 << 20;

/// The most nodes a machine may have.
pub const MAX_NODES: u32 = 4096;

/// The most cycles any single cost or duration may take (5 s at 200 MHz):
/// beyond it a run could not finish, and sums of costs could overflow the
/// 64-bit clock.
pub const MAX_CYCLES: u64 = 1_000_000_000;

/// The most requests a run may make (at a million simulated messages per
/// second, half an hour).
pub const MAX_REQUESTS: u64 = 1_000_000_000;
