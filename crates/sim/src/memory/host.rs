//! How much host memory a machine's simulated caches may take, checked
//! before a run is prepared.

use finegrain_core::config::MachineConfig;
use finegrain_core::ConfigError;

/// Host memory the simulator may spend on simulated caches (tags and
/// their bookkeeping) in one run.
pub const HOST_CACHE_BYTES_LIMIT: u64 = 16 << 30;

/// Refuses a machine whose simulated caches could take more than
/// [`HOST_CACHE_BYTES_LIMIT`] of host memory. Per set a cache may take a
/// 2-byte tag (two banks when cache interference is off), a 4-byte
/// foreign-list position, and at worst an 8-byte foreign-list entry with
/// as much again of vector growth.
pub fn check_host_memory(m: &MachineConfig, nodes: u32, procs_per_node: u32) -> Result<(), ConfigError> {
    let need = host_cache_bytes(m, nodes, procs_per_node);
    let caches = nodes as u64 * procs_per_node as u64;
    if need <= HOST_CACHE_BYTES_LIMIT {
        return Ok(());
    }
    Err(ConfigError::invalid(
        "topology",
        format!("{nodes} nodes x {procs_per_node} processors"),
        format!(
            "at most {} GiB of simulated caches; {caches} caches of {} sets need {:.1} GiB (use fewer nodes or processors, or a smaller cache)",
            HOST_CACHE_BYTES_LIMIT >> 30,
            m.cache_lines(),
            need as f64 / (1u64 << 30) as f64
        ),
    ))
}

/// The most host memory a machine's simulated caches may take (see
/// [`check_host_memory`]): what runs at once must share the limit.
pub fn host_cache_bytes(m: &MachineConfig, nodes: u32, procs_per_node: u32) -> u64 {
    let banks = if m.effects.cache_interference { 1 } else { 2 };
    let caches = nodes as u64 * procs_per_node as u64;
    caches.saturating_mul(m.cache_lines() * (2 * banks + 4 + 16))
}
