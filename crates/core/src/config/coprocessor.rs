//! The communication co-processor of a node (the Meiko CS-2's Elan, IPPS
//! 1996 Section 4): a slow thread engine without a data cache, a DMA engine
//! between virtual addresses of two nodes, remote atomic adds, and events
//! that wake waiting threads. Which library runs on it is the run's
//! [`CoprocLibrary`](super::CoprocLibrary).

use super::ConfigError;
use serde::{Deserialize, Serialize};

/// Every cost of one node's co-processor. Times are in main-processor
/// cycles unless the name says otherwise: the co-processor has its own
/// instruction rate, converted here so that one clock orders every event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoprocessorParams {
    /// Instructions per microsecond the thread engine retires (its clock:
    /// one instruction per co-processor cycle, as the model has no finer
    /// figure than the rate).
    pub mips: u32,
    /// Words of the instruction cache: straight-line code longer than it
    /// is fetched from memory over the node's bus, a cache's worth at a
    /// time.
    pub icache_words: u32,
    /// Bytes of one word the thread engine loads or stores (it has no data
    /// cache: each is its own bus transaction).
    pub word_bytes: u32,
    /// Words of a DMA descriptor, which the DMA engine reads from memory
    /// before it starts a transfer.
    pub dma_descriptor_words: u32,
    /// Bytes a DMA moves per microsecond on a link (the network's
    /// bandwidth, which bounds a transfer's streaming).
    pub dma_link_mb_per_s: u32,
    /// Bytes of one network packet a DMA sends: the destination writes
    /// each into memory as one bus transaction per line it covers.
    pub dma_packet_bytes: u32,
    /// Cycles from an event being set to the thread waiting on it
    /// running: a waiting thread holds no resource (the paper's Section 4),
    /// so this is the scheduling of the thread engine only.
    pub event_wake_cycles: u64,
    /// Instructions of the per-source dispatch thread of generic Active
    /// Messages on the co-processor: read the message's handler, call it,
    /// return to wait on its event.
    pub dispatch_instructions: u32,
    /// Instructions of the main-processor library's sending thread for one
    /// message: see the flag set, check the remote buffer is free, start
    /// the DMA that deposits the message.
    pub send_thread_instructions: u32,
    /// Instructions of a handler's own code besides the words it moves
    /// (load its arguments, form the address, update the counter).
    pub handler_instructions: u32,
    /// Instructions of a Split-C completion thread (put or get done):
    /// decrement the co-processor's half of the split counter.
    pub completion_instructions: u32,
}

/// The target `finegrain calibrate` measures a co-processor preset against:
/// the one-way time of a flag moved by bare DMA between two main
/// processors (half a ping-pong's round trip).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaCalibration {
    pub flag_one_way_us: f64,
    /// Allowed relative error, e.g. 0.10.
    pub tolerance: f64,
}

impl CoprocessorParams {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (field, v, max) in [
            ("coprocessor.mips", self.mips, 1_000_000),
            ("coprocessor.icache_words", self.icache_words, 1 << 20),
            ("coprocessor.dma_link_mb_per_s", self.dma_link_mb_per_s, 1_000_000),
            ("coprocessor.dma_packet_bytes", self.dma_packet_bytes, 1 << 20),
        ] {
            if v == 0 || v > max {
                return Err(ConfigError::invalid(field, v, format!("allowed 1..={max}")));
            }
        }
        if !matches!(self.word_bytes, 4 | 8) {
            return Err(ConfigError::invalid("coprocessor.word_bytes", self.word_bytes, "allowed 4 or 8"));
        }
        for (field, v) in [
            ("coprocessor.dma_descriptor_words", self.dma_descriptor_words),
            ("coprocessor.dispatch_instructions", self.dispatch_instructions),
            ("coprocessor.send_thread_instructions", self.send_thread_instructions),
            ("coprocessor.completion_instructions", self.completion_instructions),
            ("coprocessor.handler_instructions", self.handler_instructions),
        ] {
            if v > 1 << 20 {
                return Err(ConfigError::invalid(field, v, format!("allowed at most {}", 1 << 20)));
            }
        }
        Ok(())
    }
}

impl DmaCalibration {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(self.tolerance > 0.0 && self.tolerance < 1.0) {
            return Err(ConfigError::invalid(
                "dma_calibration.tolerance",
                self.tolerance,
                "allowed a fraction in (0, 1)",
            ));
        }
        if !(self.flag_one_way_us > 0.0 && self.flag_one_way_us <= 1e6) {
            return Err(ConfigError::invalid(
                "dma_calibration.flag_one_way_us",
                format!("{:?}", self.flag_one_way_us),
                "allowed a time in microseconds in (0, 1e6]",
            ));
        }
        Ok(())
    }
}
