//! The co-processor's mechanisms on a cluster of nodes, each timed on the
//! resources it holds: the node's memory bus (shared with the main
//! processor), the co-processor's thread engine and DMA engine, and the
//! network ports at each end of a link. Every operation is timed from the
//! cycle it is issued and returns when it is done; resources are calendars,
//! so operations that overlap in time queue for what they share.

use crate::bus::{Calendar, MemoryBus, Phases};
use finegrain_core::{ConfigError, CoprocessorParams, MachineConfig};

/// Where the co-processor's memory transactions go: each node's memory
/// bus, shared with its main processor. The scripts own buses of their
/// own; the engine lends its nodes' buses, so the co-processor's words
/// queue behind (and delay) the main processor's misses.
pub(crate) trait Buses {
    /// The simulation clock: nothing is requested before it (the buses
    /// forget older reservations). Scripts, which run ahead of no clock,
    /// say 0.
    fn now(&self) -> u64;
    fn bus(&mut self, node: usize) -> &mut MemoryBus;
}

impl Buses for Vec<MemoryBus> {
    fn now(&self) -> u64 {
        0
    }
    fn bus(&mut self, node: usize) -> &mut MemoryBus {
        &mut self[node]
    }
}

/// One node's co-processor parts besides the bus.
struct NodeParts {
    /// The thread engine runs one thread at a time, to completion or until
    /// it waits on an event, in the order threads are woken: when it is
    /// free again.
    thread_free: u64,
    /// The DMA engine runs one transfer at a time, in the order they are
    /// triggered: when it is free again.
    dma_free: u64,
    /// The link into and out of the network.
    out: Calendar,
    inp: Calendar,
}

/// The costs of the machine's parts, in main-processor cycles.
#[derive(Clone, Debug)]
pub(crate) struct Costs {
    pub mhz: u64,
    pub mips: u64,
    pub icache_words: u64,
    pub word_bytes: u64,
    pub line_bytes: u64,
    pub hit_cycles: u64,
    pub memory: (u64, u64),
    pub cache_to_cache: (u64, u64),
    pub uncached_write: (u64, u64),
    pub network_latency: u64,
    pub descriptor_words: u64,
    pub link_mb_per_s: u64,
    pub packet_bytes: u64,
    pub event_wake: u64,
    pub params: CoprocessorParams,
}

impl Costs {
    pub fn new(m: &MachineConfig) -> Result<Costs, ConfigError> {
        let Some(c) = m.coprocessor.clone() else {
            return Err(ConfigError::invalid(
                "coprocessor",
                format!("absent from preset {}", m.name),
                "a [coprocessor] section (policy coprocessor needs one; preset ipps96 has it)",
            ));
        };
        Ok(Costs {
            mhz: m.processor.mhz as u64,
            mips: c.mips as u64,
            icache_words: c.icache_words as u64,
            word_bytes: c.word_bytes as u64,
            line_bytes: m.cache.line_bytes as u64,
            hit_cycles: m.cache.hit_cycles,
            memory: (m.bus.memory_occupancy, m.bus.memory_latency),
            cache_to_cache: (m.bus.cache_to_cache_occupancy, m.bus.cache_to_cache_latency),
            uncached_write: (m.ni.uncached_write_occupancy, m.ni.uncached_write_latency),
            network_latency: m.network.latency_cycles,
            descriptor_words: c.dma_descriptor_words as u64,
            link_mb_per_s: c.dma_link_mb_per_s as u64,
            packet_bytes: c.dma_packet_bytes as u64,
            event_wake: c.event_wake_cycles,
            params: c,
        })
    }

    /// Main-processor cycles the co-processor takes for `n` instructions
    /// (rounded up: an instruction started is finished).
    pub fn instructions(&self, n: u64) -> u64 {
        (n * self.mhz).div_ceil(self.mips)
    }

    /// Main-processor cycles `bytes` take on a link.
    pub fn link_cycles(&self, bytes: u64) -> u64 {
        (bytes * self.mhz).div_ceil(self.link_mb_per_s)
    }
}

/// Where and when a DMA finished: the data is in the destination's memory
/// at `delivered`; the source's DMA engine learns it is done (its
/// completion event can fire) at `acknowledged`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DmaDone {
    pub delivered: u64,
    pub acknowledged: u64,
}

/// The co-processors of a cluster and the network between them; their
/// memory transactions go on the [`Buses`] each operation is given.
pub(crate) struct Coproc {
    pub costs: Costs,
    nodes: Vec<NodeParts>,
    /// Transactions on each node's bus by the co-processor (code fetches,
    /// data words, DMA reads and writes).
    pub coproc_bus_words: Vec<u64>,
}

impl Coproc {
    pub fn new(m: &MachineConfig, nodes: usize) -> Result<Coproc, ConfigError> {
        let costs = Costs::new(m)?;
        let parts = (0..nodes)
            .map(|_| NodeParts { thread_free: 0, dma_free: 0, out: Calendar::default(), inp: Calendar::default() })
            .collect();
        Ok(Coproc { costs, nodes: parts, coproc_bus_words: vec![0; nodes] })
    }

    // ----- the main processor -------------------------------------------

    /// The main processor stores `words` into lines its cache holds (a
    /// message or a descriptor it builds): a hit each.
    pub fn main_cached_stores(&self, t: u64, words: u64) -> u64 {
        t + words * self.costs.hit_cycles
    }

    /// The main processor's uncached store to a co-processor register (a
    /// DMA's or an event's trigger), posted on its bus.
    pub fn main_trigger(&mut self, b: &mut impl Buses, n: usize, t: u64) -> u64 {
        let (occ, lat) = self.costs.uncached_write;
        let now = b.now();
        b.bus(n).transact(now, t, Phases::Write, occ, lat).done
    }

    /// The main processor, spinning on a word in its cache that a DMA or
    /// the co-processor wrote at `written` (invalidating its copy), misses
    /// on it and reads it from memory.
    pub fn main_sees_write(&mut self, b: &mut impl Buses, n: usize, written: u64) -> u64 {
        let (occ, lat) = self.costs.memory;
        let now = b.now();
        b.bus(n).transact(now, written, Phases::Read, occ, lat).done
    }

    // ----- the co-processor's thread engine -------------------------------

    /// A thread of `instructions` straight-line instructions woken by an
    /// event at `t`: the wake, then the code (fetched from memory a cache's
    /// worth at a time when it is longer than the instruction cache), on the
    /// thread engine when it is free. Returns when it is done; its data
    /// accesses are the caller's, from then (`coproc_read`, `coproc_write`).
    pub fn thread(&mut self, b: &mut impl Buses, n: usize, t: u64, instructions: u64) -> u64 {
        let c = &self.costs;
        let fills = if instructions > c.icache_words { instructions.div_ceil(c.icache_words) } else { 0 };
        let run = c.instructions(instructions);
        let (occ, lat) = c.memory;
        let start = (t + c.event_wake).max(self.nodes[n].thread_free);
        self.coproc_bus_words[n] += fills;
        let now = b.now();
        let done = b.bus(n).train(now, start, fills, Phases::Read, occ, lat) + run;
        self.nodes[n].thread_free = done;
        done
    }

    /// The running thread goes on until `until` (its data accesses and a
    /// handler's body, timed by the caller after [`Coproc::thread`]): the
    /// engine stays its until then.
    pub fn hold_thread(&mut self, n: usize, until: u64) {
        let free = &mut self.nodes[n].thread_free;
        *free = (*free).max(until);
    }

    /// The co-processor reads `words` from memory: no data cache, so each
    /// is a bus transaction, one after another.
    pub fn coproc_read(&mut self, b: &mut impl Buses, n: usize, t: u64, words: u64) -> u64 {
        let (occ, lat) = self.costs.memory;
        self.coproc_bus_words[n] += words;
        let now = b.now();
        b.bus(n).train(now, t, words, Phases::Read, occ, lat)
    }

    /// The co-processor writes `words` to memory, each a posted write.
    pub fn coproc_write(&mut self, b: &mut impl Buses, n: usize, t: u64, words: u64) -> u64 {
        let (occ, _) = self.costs.memory;
        self.coproc_bus_words[n] += words;
        let now = b.now();
        b.bus(n).train(now, t, words, Phases::Write, occ, occ)
    }

    // ----- the DMA engine and the network -------------------------------

    /// A DMA of `bytes` from node `src` to node `dst`, started at `t` (its
    /// trigger seen by the engine): the engine reads the descriptor (just
    /// written by the main processor: from its cache), then per packet reads
    /// the packet's lines from memory and streams it onto the link, the
    /// reads of one packet overlapping the previous one's link time; the
    /// network adds its latency and the destination writes each packet's
    /// lines into memory. The acknowledgement of the last packet returns
    /// over the network to complete the DMA at the source.
    pub fn dma(&mut self, b: &mut impl Buses, src: usize, dst: usize, t: u64, bytes: u64) -> DmaDone {
        let c = self.costs.clone();
        let now = b.now();
        let start = t.max(self.nodes[src].dma_free);
        let (c2c_occ, c2c_lat) = c.cache_to_cache;
        let mut read_done = b.bus(src).train(now, start, c.descriptor_words, Phases::Read, c2c_occ, c2c_lat);
        self.coproc_bus_words[src] += c.descriptor_words;
        let (mem_occ, mem_lat) = c.memory;
        let mut left = bytes.max(1);
        let mut delivered = read_done;
        let mut out_done = read_done;
        while left > 0 {
            let packet = left.min(c.packet_bytes);
            left -= packet;
            let lines = packet.div_ceil(c.line_bytes);
            read_done = b.bus(src).train(now, read_done, lines, Phases::Read, mem_occ, mem_lat);
            let link = c.link_cycles(packet);
            let sent = self.nodes[src].out.reserve(now, read_done, link);
            out_done = sent + link;
            let arrive = self.nodes[dst].inp.reserve(now, sent + c.network_latency, link) + link;
            delivered = b.bus(dst).train(now, arrive, lines, Phases::Write, mem_occ, mem_occ);
        }
        // The engine is busy until its last packet is out.
        self.nodes[src].dma_free = out_done;
        DmaDone { delivered, acknowledged: delivered + c.network_latency }
    }

    /// A remote atomic add, issued by node `src`'s co-processor at `t`: a
    /// one-word network transaction; the destination's input engine reads
    /// the word and writes the sum back, running no thread. Returns when
    /// the sum is in memory.
    pub fn remote_add(&mut self, b: &mut impl Buses, src: usize, dst: usize, t: u64) -> u64 {
        let link = self.costs.link_cycles(self.costs.word_bytes);
        let now = b.now();
        let sent = self.nodes[src].out.reserve(now, t, link);
        let latency = self.costs.network_latency;
        let arrive = self.nodes[dst].inp.reserve(now, sent + latency, link) + link;
        let read = self.coproc_read(b, dst, arrive, 1);
        self.coproc_write(b, dst, read, 1)
    }
}

/// The co-processors with memory buses of their own, for the scripted
/// microbenchmarks (`super::library`) and the mechanisms' tests: the same
/// operations, each on this cluster's buses.
pub(crate) struct CoprocMachine {
    parts: Coproc,
    buses: Vec<MemoryBus>,
}

impl std::ops::Deref for CoprocMachine {
    type Target = Coproc;
    fn deref(&self) -> &Coproc {
        &self.parts
    }
}

impl CoprocMachine {
    pub fn new(m: &MachineConfig, nodes: usize) -> Result<CoprocMachine, ConfigError> {
        Ok(CoprocMachine { parts: Coproc::new(m, nodes)?, buses: (0..nodes).map(|_| MemoryBus::new(&m.bus)).collect() })
    }

    pub fn main_cached_stores(&self, t: u64, words: u64) -> u64 {
        self.parts.main_cached_stores(t, words)
    }

    pub fn main_trigger(&mut self, n: usize, t: u64) -> u64 {
        self.parts.main_trigger(&mut self.buses, n, t)
    }

    pub fn main_sees_write(&mut self, n: usize, written: u64) -> u64 {
        self.parts.main_sees_write(&mut self.buses, n, written)
    }

    pub fn thread(&mut self, n: usize, t: u64, instructions: u64) -> u64 {
        self.parts.thread(&mut self.buses, n, t, instructions)
    }

    pub fn coproc_read(&mut self, n: usize, t: u64, words: u64) -> u64 {
        self.parts.coproc_read(&mut self.buses, n, t, words)
    }

    pub fn coproc_write(&mut self, n: usize, t: u64, words: u64) -> u64 {
        self.parts.coproc_write(&mut self.buses, n, t, words)
    }

    pub fn dma(&mut self, src: usize, dst: usize, t: u64, bytes: u64) -> DmaDone {
        self.parts.dma(&mut self.buses, src, dst, t, bytes)
    }

    pub fn remote_add(&mut self, src: usize, dst: usize, t: u64) -> u64 {
        self.parts.remote_add(&mut self.buses, src, dst, t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipps96() -> MachineConfig {
        MachineConfig::load("ipps96").unwrap()
    }

    #[test]
    fn the_coprocessor_runs_instructions_at_its_own_rate_not_the_main_processors() {
        let m = ipps96();
        let c = Costs::new(&m).unwrap();
        // 3 MIPS against a 40 MHz clock: 40/3 cycles an instruction.
        assert_eq!(c.instructions(3), 40);
        assert_eq!(c.instructions(30), 400);
        // The same instructions on the main processor (up to 3 a cycle at
        // 120 MIPS peak) take 1/40 of that.
        let main_peak_cycles = 30 / 3;
        assert_eq!(c.instructions(30) / main_peak_cycles, 40);
    }

    #[test]
    fn code_longer_than_the_instruction_cache_is_fetched_over_the_bus() {
        let m = ipps96();
        let mut cm = CoprocMachine::new(&m, 1).unwrap();
        let words = m.coprocessor.as_ref().unwrap().icache_words as u64;
        let fits = cm.thread(0, 0, words);
        assert_eq!(fits, cm.costs.event_wake + cm.costs.instructions(words), "a loop that fits runs from the cache");
        assert_eq!(cm.coproc_bus_words[0], 0);
        let mut cm = CoprocMachine::new(&m, 1).unwrap();
        let long = cm.thread(0, 0, 3 * words);
        assert_eq!(cm.coproc_bus_words[0], 3, "one fill per cache's worth");
        assert_eq!(long, cm.costs.event_wake + 3 * m.bus.memory_latency + cm.costs.instructions(3 * words));
    }

    #[test]
    fn every_data_access_of_the_coprocessor_goes_to_memory() {
        let m = ipps96();
        let mut cm = CoprocMachine::new(&m, 1).unwrap();
        let done = cm.coproc_read(0, 100, 4);
        assert_eq!(done, 100 + 4 * m.bus.memory_latency, "no data cache: four reads, four memory latencies");
        // Reading the same words again costs the same: nothing was cached.
        assert_eq!(cm.coproc_read(0, done, 4), done + 4 * m.bus.memory_latency);
        assert_eq!(cm.coproc_bus_words[0], 8);
    }

    #[test]
    fn a_dma_streams_at_the_link_rate_and_completes_back_at_the_source() {
        let m = ipps96();
        let c = Costs::new(&m).unwrap();
        let mut cm = CoprocMachine::new(&m, 2).unwrap();
        let small = cm.dma(0, 1, 0, 8);
        assert_eq!(small.acknowledged, small.delivered + m.network.latency_cycles);
        // A long transfer is bounded by the link: its time grows by the
        // link's time per extra byte, whatever the memory's.
        let mut cm = CoprocMachine::new(&m, 2).unwrap();
        let a = cm.dma(0, 1, 0, 64 * c.packet_bytes).delivered;
        let mut cm = CoprocMachine::new(&m, 2).unwrap();
        let b = cm.dma(0, 1, 0, 128 * c.packet_bytes).delivered;
        let per_packet = (b - a) as f64 / 64.0;
        let link = c.link_cycles(c.packet_bytes) as f64;
        assert!((per_packet - link).abs() / link < 0.05, "per packet {per_packet} cycles, link {link}");
        // Two DMAs from one engine at once queue: the second ends later.
        let mut cm = CoprocMachine::new(&m, 3).unwrap();
        let first = cm.dma(0, 1, 0, 4096).delivered;
        let second = cm.dma(0, 2, 0, 4096).delivered;
        assert!(second > first, "one engine moves one transfer at a time");
    }

    #[test]
    fn a_remote_atomic_add_runs_no_thread_at_the_destination() {
        let m = ipps96();
        let mut cm = CoprocMachine::new(&m, 2).unwrap();
        let c = cm.costs.clone();
        let done = cm.remote_add(0, 1, 0);
        let link = c.link_cycles(c.word_bytes);
        // Cut-through: the word's head crosses the network while its tail
        // is on the link, so the link's time counts once.
        assert_eq!(done, m.network.latency_cycles + link + m.bus.memory_latency + m.bus.memory_occupancy);
        assert_eq!(cm.coproc_bus_words[1], 2, "a read and a write of the counter, no code fetched");
    }

    #[test]
    fn a_machine_without_a_coprocessor_is_refused_in_one_line() {
        let e = Costs::new(&MachineConfig::load("hpca97").unwrap()).unwrap_err().to_string();
        assert!(e.contains("coprocessor") && e.contains("ipps96") && !e.contains('\n'), "{e}");
    }
}
