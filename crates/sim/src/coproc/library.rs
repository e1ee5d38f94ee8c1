//! The paper's microbenchmarks as scripted sequences of the co-processor's
//! mechanisms (IPPS 1996 Sections 5.1 and 5.2): the bare DMA flag
//! ping-pong, one-way Active Messages under the main-processor and
//! co-processor libraries, and the optimized library's Split-C put, get
//! and store. Node 0 issues; node 1 owns the data and waits (its main
//! processor spins on its flag or counter, so it notices a change as soon
//! as the write invalidating its copy lands). Each operation is timed from
//! its issue to the cycle the waiting side sees it done.

use super::machine::CoprocMachine;
use finegrain_core::{ConfigError, CoprocLibrary, MachineConfig};

/// The main processor's code runs at one instruction a cycle: the
/// SuperSPARC issues up to three, but message code (loads, stores,
/// branches on what was just loaded) seldom pairs.
pub(crate) fn main_instructions(n: u64) -> u64 {
    n
}

/// One round of the bare DMA flag ping-pong: node `a`'s main processor
/// builds a one-word DMA descriptor and triggers it; the flag lands in node
/// `b`'s memory, and `b`'s main processor, spinning on it, misses on the
/// invalidated line. Returns when `b` has seen the flag.
fn flag_by_dma(cm: &mut CoprocMachine, a: usize, b: usize, t: u64) -> u64 {
    let built = cm.main_cached_stores(t, cm.costs.descriptor_words);
    let triggered = cm.main_trigger(a, built);
    let word = cm.costs.word_bytes;
    let done = cm.dma(a, b, triggered, word);
    cm.main_sees_write(b, done.delivered)
}

/// One-way time, in cycles, of a flag moved by bare DMA: half the round
/// trip of `rounds` ping-pongs between two nodes (the paper's Section 5.1
/// method: halving a repeated round trip).
pub fn dma_flag_one_way(m: &MachineConfig, rounds: u64) -> Result<f64, ConfigError> {
    let mut cm = CoprocMachine::new(m, 2)?;
    let mut t = 0;
    for _ in 0..rounds {
        t = flag_by_dma(&mut cm, 0, 1, t);
        t = flag_by_dma(&mut cm, 1, 0, t);
    }
    Ok(t as f64 / (2 * rounds.max(1)) as f64)
}

/// A one-way Active Message of `words` argument words from node 0 to node
/// 1 under `library`, until its handler has stored one word at the
/// destination and the destination's main processor sees it.
pub(crate) fn active_message(cm: &mut CoprocMachine, library: CoprocLibrary, t: u64, words: u64) -> u64 {
    let c = cm.costs.clone();
    let p = &c.params;
    let bytes = (words + 1) * c.word_bytes; // the arguments and the handler's index
    match library {
        CoprocLibrary::MainAm => {
            // The main processor writes the message and its flag into its
            // outgoing buffer (lines in its cache); the sending
            // co-processor's polling thread reads the flag from that cache
            // and sees it set one read after the store.
            let written = cm.main_cached_stores(t, words + 2);
            let seen = written + c.cache_to_cache.1;
            let ran = cm.thread(0, seen, p.send_thread_instructions as u64);
            // The remote buffer's state is a word the co-processor keeps.
            let checked = cm.coproc_read(0, ran, 1);
            let moved = cm.dma(0, 1, checked, bytes + c.word_bytes);
            // The receiving main processor polls: it misses on the buffer's
            // flag, reads the message and runs the handler.
            let found = cm.main_sees_write(1, moved.delivered);
            found + main_instructions(p.dispatch_instructions as u64 + p.handler_instructions as u64)
        }
        CoprocLibrary::CoprocAm | CoprocLibrary::Optimized => {
            // The main processor triggers the sending thread with the
            // message in its cache; the thread reads it (no data cache).
            let written = cm.main_cached_stores(t, words + 1);
            let triggered = cm.main_trigger(0, written);
            let ran = cm.thread(0, triggered, p.send_thread_instructions as u64);
            let read = cm.coproc_read(0, ran, words + 1);
            let moved = cm.dma(0, 1, read, bytes);
            // The arrival's event wakes the dispatch thread for node 0,
            // which reads the message and runs the handler; the handler's
            // store lands in memory, where the main processor sees it.
            let instructions = (p.dispatch_instructions + p.handler_instructions) as u64;
            let ran = cm.thread(1, moved.delivered, instructions);
            let read = cm.coproc_read(1, ran, words + 1);
            let stored = cm.coproc_write(1, read, 1);
            cm.main_sees_write(1, stored)
        }
    }
}

/// One-way time, in cycles, of an Active Message with `words` argument
/// words from an idle node to another under `library`.
pub fn am_one_way(m: &MachineConfig, library: CoprocLibrary, words: u64) -> Result<u64, ConfigError> {
    Ok(active_message(&mut CoprocMachine::new(m, 2)?, library, 0, words))
}

/// Latency, in cycles, of one operation of the optimized library on an
/// idle pair of nodes.
pub fn optimized_latency(m: &MachineConfig, op: SplitOp) -> Result<u64, ConfigError> {
    Ok(optimized(&mut CoprocMachine::new(m, 2)?, op, 0))
}

/// The optimized library's Split-C operations (Section 5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitOp {
    /// A put of `bytes`: a DMA to the owner whose completion wakes a thread
    /// at the requester that decrements its counter; sync sees it.
    Put { bytes: u64 },
    /// A get of `bytes`: a DMA carries a descriptor to the owner and a
    /// second triggers it there; it moves the data back, and its completion
    /// wakes the requester's counter thread.
    Get { bytes: u64 },
    /// A store of `bytes`: the data by DMA, then a remote atomic add on
    /// the owner's receive counter (no thread runs at the owner); done
    /// when the counter holds the sum.
    Store { bytes: u64 },
}

/// One Split-C operation of the optimized library from node 0 to node 1
/// issued at `t`: when it is complete as `sync` (put, get) or the
/// owner's counter (store) sees it.
pub(crate) fn optimized(cm: &mut CoprocMachine, op: SplitOp, t: u64) -> u64 {
    let c = cm.costs.clone();
    let completion = c.params.completion_instructions as u64;
    // The main processor increments its half of the split counter (a
    // cached store) and builds and triggers the DMA.
    let counted = cm.main_cached_stores(t, 1);
    let built = cm.main_cached_stores(counted, c.descriptor_words);
    let issued = cm.main_trigger(0, built);
    // The counter thread: woken by the completion event, it decrements
    // the co-processor's half of the counter (a read and a write, no data
    // cache); the main processor in `sync` sees the word change.
    let count_down = |cm: &mut CoprocMachine, at: u64| {
        let ran = cm.thread(0, at, completion);
        let read = cm.coproc_read(0, ran, 1);
        let written = cm.coproc_write(0, read, 1);
        cm.main_sees_write(0, written)
    };
    match op {
        SplitOp::Put { bytes } => {
            let done = cm.dma(0, 1, issued, bytes);
            count_down(cm, done.acknowledged)
        }
        SplitOp::Get { bytes } => {
            let descriptor = cm.dma(0, 1, issued, c.descriptor_words * c.word_bytes);
            // The trigger: an event set remotely once the descriptor is
            // there, as a one-word transaction.
            let triggered = cm.remote_add(0, 1, descriptor.delivered);
            let data = cm.dma(1, 0, triggered, bytes);
            count_down(cm, data.delivered)
        }
        SplitOp::Store { bytes } => {
            let data = cm.dma(0, 1, issued, bytes);
            // The add goes out once the data's DMA is done at the source.
            let added = cm.remote_add(0, 1, data.acknowledged.min(data.delivered));
            cm.main_sees_write(1, added)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipps96() -> MachineConfig {
        MachineConfig::load("ipps96").unwrap()
    }

    #[test]
    fn the_bare_dma_ping_pong_is_within_ten_percent_of_the_papers_9_5_us() {
        let m = ipps96();
        let cal = m.dma_calibration.clone().unwrap();
        let us = m.cycles_to_us(dma_flag_one_way(&m, 100).unwrap());
        let err = (us - cal.flag_one_way_us) / cal.flag_one_way_us;
        assert!(err.abs() <= cal.tolerance, "one way {us:.3} us against {} us", cal.flag_one_way_us);
    }

    #[test]
    fn the_engine_accepts_the_optimized_library_on_a_machine_with_a_coprocessor_only() {
        let policy = finegrain_core::Policy::Coprocessor { library: CoprocLibrary::Optimized };
        let topology = finegrain_core::Topology { nodes: 16, procs_per_node: 1 };
        let mut cfg = crate::SimConfig::new(ipps96(), topology, policy, 1);
        cfg.validate().unwrap();
        cfg.machine = MachineConfig::load("hpca97").unwrap();
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.starts_with("invalid policy = coprocessor:optimized: preset hpca97 has no [coprocessor]"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn the_same_config_gives_the_same_times() {
        let m = ipps96();
        let run = || {
            let mut cm = CoprocMachine::new(&m, 2).unwrap();
            let mut out = vec![dma_flag_one_way(&m, 10).unwrap().to_bits()];
            let mut t = 0;
            for lib in CoprocLibrary::ALL {
                t = active_message(&mut cm, lib, t, 2);
                out.push(t.to_le_bytes().iter().map(|&b| b as u64).sum());
            }
            for op in [SplitOp::Put { bytes: 8 }, SplitOp::Get { bytes: 8 }, SplitOp::Store { bytes: 32 }] {
                t = optimized(&mut cm, op, t);
                out.push(t);
            }
            out
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn handlers_on_the_coprocessor_take_longer_than_on_the_main_processor() {
        // Not a claim test: the mechanism's direction only (a slower engine
        // running the same handler path), which the study measures in full.
        let m = ipps96();
        let one = |lib| active_message(&mut CoprocMachine::new(&m, 2).unwrap(), lib, 0, 2);
        assert!(one(CoprocLibrary::CoprocAm) > one(CoprocLibrary::MainAm));
    }

    #[test]
    fn a_put_costs_a_dma_its_acknowledgement_and_the_counter_thread() {
        let m = ipps96();
        let mut cm = CoprocMachine::new(&m, 2).unwrap();
        let done = optimized(&mut cm, SplitOp::Put { bytes: 8 }, 0);
        let mut alone = CoprocMachine::new(&m, 2).unwrap();
        let dma = alone.dma(0, 1, 0, 8);
        // At least the DMA's round trip and the counter thread's code.
        let thread = alone.costs.instructions(m.coprocessor.as_ref().unwrap().completion_instructions as u64);
        assert!(done >= dma.acknowledged + thread, "put {done}, dma acknowledged {}", dma.acknowledged);
    }

    #[test]
    fn a_get_crosses_the_network_more_often_than_a_put() {
        let m = ipps96();
        let put = optimized(&mut CoprocMachine::new(&m, 2).unwrap(), SplitOp::Put { bytes: 8 }, 0);
        let get = optimized(&mut CoprocMachine::new(&m, 2).unwrap(), SplitOp::Get { bytes: 8 }, 0);
        // Descriptor out, trigger out, data back: three traversals against
        // the put's data out and acknowledgement back.
        assert!(get > put + m.network.latency_cycles / 2, "get {get}, put {put}");
    }

    #[test]
    fn a_store_runs_no_thread_at_the_owner() {
        let m = ipps96();
        let mut cm = CoprocMachine::new(&m, 2).unwrap();
        optimized(&mut cm, SplitOp::Store { bytes: 32 }, 0);
        // The owner's bus: the data's line written and the counter's read
        // and write by the input engine, no code fetched for a thread.
        assert_eq!(cm.coproc_bus_words[1], 2);
    }
}
