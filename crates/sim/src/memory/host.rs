//! How much host memory a machine's simulated caches may take, checked
//! before a run is prepared.

use finegrain_core::config::MachineConfig;
use finegrain_core::ConfigError;

/// Host memory the simulator may spend on simulated caches (tags and
/// their bookkeeping), in one run or in the runs under way at once: three
/// quarters of the memory this process may use (the host's, or its
/// control group's limit when lower), read once. Where neither can be read
/// (not Linux), 16 GiB.
pub fn host_cache_bytes_limit() -> u64 {
    static LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| usable_memory_bytes().map_or(FALLBACK_BYTES, |b| b / 4 * 3))
}

const FALLBACK_BYTES: u64 = 16 << 30;

/// The host's memory, or the control group's limit when it is lower.
fn usable_memory_bytes() -> Option<u64> {
    let host = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| mem_total_bytes(&m));
    let group = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok());
    match (host, group) {
        (Some(h), Some(g)) => Some(h.min(g)),
        (h, g) => h.or(g),
    }
}

/// `MemTotal` of a /proc/meminfo text, in bytes.
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// Refuses a machine whose simulated caches could take more than
/// [`host_cache_bytes_limit`] of host memory. Per set a cache may take a
/// 2-byte tag (two banks when cache interference is off), a 4-byte
/// foreign-list position, and at worst an 8-byte foreign-list entry with
/// as much again of vector growth.
pub fn check_host_memory(m: &MachineConfig, nodes: u32, procs_per_node: u32) -> Result<(), ConfigError> {
    let need = host_cache_bytes(m, nodes, procs_per_node);
    let caches = nodes as u64 * procs_per_node as u64;
    let limit = host_cache_bytes_limit();
    if need <= limit {
        return Ok(());
    }
    Err(ConfigError::invalid(
        "topology",
        format!("{nodes} nodes x {procs_per_node} processors"),
        format!(
            "at most {:.1} GiB of simulated caches (three quarters of this host's memory); {caches} caches of {} sets need {:.1} GiB (use fewer nodes or processors, or a smaller cache)",
            limit as f64 / (1u64 << 30) as f64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_three_quarters_of_what_this_host_allows() {
        assert_eq!(mem_total_bytes("MemFree: 1 kB\nMemTotal:  24683772 kB\n"), Some(24683772 * 1024));
        assert_eq!(mem_total_bytes("nothing"), None);
        let usable = usable_memory_bytes();
        assert_eq!(host_cache_bytes_limit(), usable.map_or(FALLBACK_BYTES, |b| b / 4 * 3));
        if let Some(b) = usable {
            assert!(b > 0);
        }
    }
}
