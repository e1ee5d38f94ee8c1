//! The memory system of one node: a direct-mapped data cache per processor,
//! snooping coherence between them, and the bus they share.
//!
//! The model is mechanistic on purpose: the scheduling study's indirect
//! overheads (cache interference, migration of protocol state, data
//! placement) are not parameters but consequences of which processor touches
//! which line. A private segment exactly as large as a cache fills every set
//! of its owner's cache, so each protocol line a compute processor touches
//! evicts one of its segment lines, and each segment line it touches again
//! evicts the protocol line.
//!
//! Synthetic work touches uniformly random segment lines. Rather than
//! simulating every access, a compute burst of `n` accesses touches each of
//! the `F` sets currently holding someone else's line with probability
//! `1 - exp(-n / S)`; the number touched is drawn from that binomial and the
//! sets chosen at random, which is exact in distribution and costs O(misses)
//! instead of O(accesses).
//!
//! By job:
//! - [`address`]: the address map (regions, line classes, sets and tags);
//! - [`cache`]: the cache model's state (tags and their coherence bits,
//!   each compute cache's foreign-set lists);
//! - [`sampling`]: the misses of synthetic computation, sampled;
//! - [`node`]: a node's memory at work (accesses, coherence, the bus
//!   transactions they take, the overhead each transfer counts as);
//! - [`host`]: the check that simulated caches fit in the host's memory.

mod address;
mod cache;
mod host;
mod node;
mod sampling;

pub use address::AddressMap;
pub use host::{check_host_memory, host_cache_bytes, host_cache_bytes_limit};
pub use node::{NodeMemory, WordTransfer};
