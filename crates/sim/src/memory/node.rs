//! One node's memory system at work: accesses by the processors' caches
//! and by cacheless bus agents, snooping coherence between the caches
//! (MOESI states that matter for timing), the bus transactions each access
//! needs, and which overhead (migration, refetch, placement, interference)
//! each transfer counts as.

use super::address::{AddressMap, LineClass};
use super::cache::{foreign_kind, Cache, ForeignSets, Tags, DIRTY, INVALID, SHARED, TAG_MASK};
#[cfg(test)]
use crate::bus::Granted;
use crate::bus::{MemoryBus, Phases};
use crate::stats::MissStats;
use finegrain_core::config::{BusParams, Effects, MachineConfig};
use finegrain_core::Access;

/// Bus cost of a cacheless agent's transfer: its occupancy, and a posted
/// write's latency.
#[derive(Clone, Copy, Debug)]
pub struct WordTransfer {
    pub occupancy: u64,
    pub posted_write: u64,
}

/// Which bus transaction an access needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Hit,
    Upgrade,
    /// No other cache held the line.
    Memory,
    /// Another cache held the line: it supplies a dirty copy (Modified or
    /// Owned); a clean one comes from memory, at memory's cost, but the
    /// miss is still the line's moving between caches.
    CacheToCache,
}

/// Where a line lives in the caches: its set (in its bank) and its tag.
#[derive(Clone, Copy, Debug)]
struct Place {
    line: u32,
    set: usize,
    tag: u16,
}

/// The overhead a transfer counts as (the per-processor miss statistics,
/// and what each `[effects]` switch waives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    Migration,
    ProtocolRefetch,
    Placement,
    Interference,
}

/// One node's caches and bus.
pub struct NodeMemory {
    pub(super) caches: Vec<Cache>,
    pub(super) tags: Tags,
    pub bus: MemoryBus,
    pub(super) map: AddressMap,
    bus_params: BusParams,
    hit_cycles: u64,
    effects: Effects,
    pub(super) sets: u32,
    pub misses: Vec<MissStats>,
    /// Scratch for the sets a compute burst touches.
    pub(super) picks: Vec<u32>,
}

impl NodeMemory {
    /// `own_threads[p]` is the thread whose segment processor `p` computes
    /// on (None for a dedicated protocol processor). Compute caches start
    /// warm with their segment; dedicated protocol processors start warm with
    /// the protocol's lines.
    pub fn new(m: &MachineConfig, map: AddressMap, own_threads: &[Option<u32>], threads: u32) -> NodeMemory {
        let sets = map.sets();
        let banks = if m.effects.cache_interference { 1 } else { 2 };
        let mut tags = Tags::new(own_threads.len(), (sets * banks) as usize);
        for (p, own) in own_threads.iter().enumerate() {
            if let Some(t) = *own {
                for s in 0..sets {
                    tags.put(p, s as usize, map.tag(map.segment_line(t, s)) | DIRTY);
                }
            }
        }
        let mut caches: Vec<Cache> = own_threads
            .iter()
            .map(|own| Cache { own_thread: *own, foreign: ForeignSets::new(sets), code_missing: 0 })
            .collect();
        let mut mem_misses = Vec::new();
        mem_misses.resize_with(own_threads.len(), MissStats::default);
        let mut node = NodeMemory {
            caches: Vec::new(),
            tags,
            bus: MemoryBus::new(&m.bus),
            bus_params: m.bus.clone(),
            hit_cycles: m.cache.hit_cycles,
            effects: m.effects,
            sets,
            misses: mem_misses,
            picks: Vec::new(),
            map,
        };
        // Several dedicated processors hold the protocol's lines as clean
        // shared copies: the first write by one of them invalidates the rest.
        let dedicated = own_threads.iter().filter(|o| o.is_none()).count();
        let warm_state = if dedicated > 1 { SHARED } else { 0 };
        for (p, own) in own_threads.iter().enumerate() {
            if own.is_none() {
                let lines: Vec<u32> = node.map.protocol_lines(threads).collect();
                for line in lines {
                    let set = node.set_of(line) as usize;
                    node.tags.put(p, set, node.map.tag(line) | warm_state);
                }
            }
        }
        let code: Vec<u32> = node.map.protocol_lines(0).filter(|&l| node.map.is_code(l)).collect();
        for (p, c) in caches.iter_mut().enumerate() {
            c.code_missing = code
                .iter()
                .filter(|&&l| node.tags.get(p, node.set_of(l) as usize) & TAG_MASK != node.map.tag(l))
                .count() as u32;
        }
        node.caches = caches;
        node
    }

    pub fn map(&self) -> &AddressMap {
        &self.map
    }

    fn set_of(&self, line: u32) -> u32 {
        self.set_in_bank(line, self.map.class(line))
    }

    fn set_in_bank(&self, line: u32, class: LineClass) -> u32 {
        let set = self.map.set(line);
        match class {
            LineClass::Segment(_) => set,
            _ if self.effects.cache_interference => set,
            _ => set + self.sets,
        }
    }

    /// Which overhead a transfer by `proc` of `line`, of `class`, is.
    fn effect_of(&self, proc: usize, line: u32, class: LineClass, outcome: Outcome) -> Option<Effect> {
        let own = self.caches[proc].own_thread;
        match (class, outcome) {
            (_, Outcome::Hit) => None,
            (LineClass::Protocol, Outcome::CacheToCache | Outcome::Upgrade) => Some(Effect::Migration),
            (LineClass::Protocol, Outcome::Memory) => Some(Effect::ProtocolRefetch),
            // Upgrading an own line another processor read: data placement.
            (LineClass::Segment(t), Outcome::Upgrade) if Some(t) == own => Some(Effect::Placement),
            (LineClass::Segment(t), _) if Some(t) == own => Some(Effect::Interference),
            // A processor's own thread's flag or receive buffer that no
            // cache holds left this cache when computation evicted it: no
            // other processor handed it over (under Single there is no
            // other), so it is a refetch, like a protocol line's. A line
            // another processor wrote and then lost to its own eviction
            // before the consumer came counts here too: the caches no
            // longer tell the two apart, and it is rare.
            (LineClass::Data, Outcome::Memory) if own.is_some() && self.map.data_owner(line) == own => {
                Some(Effect::ProtocolRefetch)
            }
            (LineClass::Segment(_), _) | (LineClass::Data, _) => Some(Effect::Placement),
        }
    }

    /// Whether a switched-off effect waives this transfer: it then costs a
    /// hit and no bus time, while the caches change as they otherwise would,
    /// so the effects left on are what they would be (a protocol line still
    /// evicts a segment line with migration off, say). Refetches of
    /// protocol lines from memory are capacity misses, waived by no switch
    /// (with interference off, computation no longer evicts them).
    fn waived(&self, effect: Option<Effect>) -> bool {
        match effect {
            Some(Effect::Migration) => !self.effects.migration,
            Some(Effect::Placement) => !self.effects.data_placement,
            Some(Effect::Interference) => !self.effects.cache_interference,
            Some(Effect::ProtocolRefetch) | None => false,
        }
    }

    /// Performs one access by `proc` at cycle `t` (`now` is the clock);
    /// returns its latency including any wait for the bus.
    pub fn access(&mut self, now: u64, t: u64, proc: usize, line: u32, kind: Access) -> (u64, Outcome) {
        let class = self.map.class(line);
        self.access_classed(now, t, proc, line, class, kind)
    }

    /// [`NodeMemory::access`] of a line whose class is known. A waived
    /// transfer (see [`NodeMemory::waived`]) is reported as a hit.
    #[inline]
    fn access_classed(
        &mut self,
        now: u64,
        t: u64,
        proc: usize,
        line: u32,
        class: LineClass,
        kind: Access,
    ) -> (u64, Outcome) {
        let at = Place { line, set: self.set_in_bank(line, class) as usize, tag: self.map.tag(line) };
        self.access_at(now, t, proc, at, class, kind)
    }

    /// [`NodeMemory::access_classed`] of a line whose set and tag are known.
    #[inline(never)] // one copy for its three callers
    fn access_at(
        &mut self,
        now: u64,
        t: u64,
        proc: usize,
        at: Place,
        class: LineClass,
        kind: Access,
    ) -> (u64, Outcome) {
        let Place { line, set, tag } = at;
        let write = kind.writes();
        let held = self.tags.get(proc, set);
        if held & TAG_MASK == tag {
            if write && held & SHARED == 0 {
                self.tags.put(proc, set, tag | DIRTY); // E or M: silent
            } else if write {
                self.invalidate_others(proc, set, line);
                // The same line stays: code residency is unchanged, so the
                // state bits change in place.
                self.tags.put(proc, set, tag | DIRTY);
                Self::track_foreign(&mut self.caches[proc], held, tag | DIRTY, set, self.sets);
                let effect = self.effect_of(proc, line, class, Outcome::Upgrade);
                if self.waived(effect) {
                    return (self.hit_cycles, Outcome::Hit);
                }
                let p = &self.bus_params;
                let (occ, lat) = (p.upgrade_occupancy, p.upgrade_latency);
                let latency = self.bus.transact(now, t, Phases::AddressOnly, occ, lat).done - t;
                self.count(proc, effect, latency);
                return (latency, Outcome::Upgrade);
            }
            return (self.hit_cycles, Outcome::Hit);
        }
        // Miss: fetch from a peer cache if one holds the line, else from
        // memory; then write a dirty victim back (bus occupancy only: the
        // write buffer hides it from the processor).
        let (supplier, supplied_dirty) = self.peer_copies(proc, set, tag);
        let state = if write {
            self.invalidate_others(proc, set, line);
            DIRTY
        } else if let Some(q) = supplier {
            // The supplier keeps its copy: Modified becomes Owned.
            self.share(q, set);
            SHARED
        } else {
            0
        };
        let p = &self.bus_params;
        let (outcome, occ, lat) = match supplier {
            Some(_) if supplied_dirty => (Outcome::CacheToCache, p.cache_to_cache_occupancy, p.cache_to_cache_latency),
            Some(_) => (Outcome::CacheToCache, p.memory_occupancy, p.memory_latency),
            None => (Outcome::Memory, p.memory_occupancy, p.memory_latency),
        };
        let effect = self.effect_of(proc, line, class, outcome);
        let waived = self.waived(effect);
        let (done, bus_free) = if waived {
            (t, t)
        } else {
            // An overwrite claims the line without its data: the outcome
            // still says where ownership came from (it decides the effect),
            // but the bus carries only an invalidation, priced as an
            // upgrade. Each call names its phases as a constant, so the
            // inlined `transact` folds their split away.
            let g = match kind {
                Access::Overwrite => {
                    self.bus.transact(now, t, Phases::AddressOnly, p.upgrade_occupancy, p.upgrade_latency)
                }
                _ => self.bus.transact(now, t, Phases::Read, occ, lat),
            };
            (g.done, g.bus_free)
        };
        if held != INVALID && held & DIRTY != 0 {
            // Queued behind the fetch that displaced the victim.
            self.bus.transact(now, bus_free, Phases::Write, self.bus_params.writeback_occupancy, 0);
        }
        self.install(proc, set, line, tag | state);
        if waived {
            return (self.hit_cycles, Outcome::Hit);
        }
        let latency = done - t;
        self.count(proc, effect, latency);
        (latency, outcome)
    }

    /// The first other cache holding `tag` in `set`, and whether any other
    /// cache holds it dirty (Modified or Owned). Every copy lies at or
    /// after the first, so the dirty one is looked for from there, and
    /// only if there is a copy at all. (A single pass folding both into
    /// one loop compiled to several times the instructions.)
    fn peer_copies(&self, proc: usize, set: usize, tag: u16) -> (Option<usize>, bool) {
        let row = self.tags.set_row(set);
        let peer_copy = |q: usize| q != proc && row[q] & TAG_MASK == tag;
        let first = (0..row.len()).find(|&q| peer_copy(q));
        let dirty = first.is_some_and(|f| (f..row.len()).any(|q| peer_copy(q) && row[q] & DIRTY != 0));
        (first, dirty)
    }

    /// An access by a bus agent without a cache (a protocol processor
    /// embedded in the network-interface device): a word read is supplied
    /// by a cache holding the line dirty or by memory, and leaves the
    /// supplier's copy in place; a word write is posted to memory and
    /// invalidates every cached copy. Returns the latency; misses are
    /// recorded against `recorder`.
    pub fn access_device(
        &mut self,
        now: u64,
        t: u64,
        recorder: usize,
        line: u32,
        kind: Access,
        cost: WordTransfer,
    ) -> u64 {
        let class = self.map.class(line);
        let set = self.set_in_bank(line, class) as usize;
        let tag = self.map.tag(line);
        if kind.writes() {
            self.invalidate_others(usize::MAX, set, line);
            return self.bus.transact(now, t, Phases::Write, cost.occupancy, cost.posted_write).done - t;
        }
        let dirty = self.tags.set_row(set).iter().position(|&held| held & TAG_MASK == tag && held & DIRTY != 0);
        let p = &self.bus_params;
        let (outcome, lat) = match dirty {
            Some(_) => (Outcome::CacheToCache, p.cache_to_cache_latency),
            None => (Outcome::Memory, p.memory_latency),
        };
        if let Some(q) = dirty {
            // The supplier keeps the line, now shared (Owned).
            self.share(q, set);
        }
        let latency = self.bus.transact(now, t, Phases::Read, cost.occupancy, lat).done - t;
        self.record(recorder, line, class, outcome, latency);
        latency
    }

    /// A DMA engine writes `line` (the co-processor's model times its bus
    /// transactions): every cached copy is invalidated, as by a device's
    /// posted write ([`NodeMemory::access_device`]), with no bus time here.
    pub fn dma_write(&mut self, line: u32) {
        let class = self.map.class(line);
        let set = self.set_in_bank(line, class) as usize;
        self.invalidate_others(usize::MAX, set, line);
    }

    /// Accesses `count` consecutive lines back to back; returns total
    /// latency and the latency spent in misses. An `Overwrite` here claims
    /// every line whole: [`NodeMemory::access_bytes`] takes byte ranges.
    /// The lines of one range share a region, hence a class: hits (the
    /// common case for code and warm protocol state) are checked here
    /// without the full access path.
    pub fn access_lines(&mut self, now: u64, t: u64, proc: usize, first: u32, count: u32, kind: Access) -> (u64, u64) {
        if kind == Access::Read && self.caches[proc].code_missing == 0 && self.map.is_code(first) {
            return (self.hit_cycles * count as u64, 0);
        }
        let class = self.map.class(first);
        // Misses take the class of the range's first line.
        debug_assert_eq!(self.map.class(first + count - 1), class, "a line range crosses a region");
        let write = kind.writes();
        let mut spent = 0;
        let mut missed = 0;
        // Consecutive lines take consecutive sets, the tag going up by one
        // where the sets wrap around: stepping both is cheaper than
        // deriving them from each line.
        let bank = self.set_in_bank(first, class) - self.map.set(first);
        let (mut set, mut tag) = (self.map.set(first), self.map.tag(first));
        for line in first..first + count {
            let at = Place { line, set: (set + bank) as usize, tag };
            (set, tag) = if set + 1 == self.sets { (0, tag + 1) } else { (set + 1, tag) };
            let held = self.tags.get(proc, at.set);
            // A read hits any valid copy; a write hits only a Modified one.
            if held & TAG_MASK == at.tag && (!write || held & (DIRTY | SHARED) == DIRTY) {
                spent += self.hit_cycles;
                continue;
            }
            let (lat, out) = self.access_at(now, t + spent, proc, at, class, kind);
            spent += lat;
            if out != Outcome::Hit {
                missed += lat;
            }
        }
        (spent, missed)
    }

    /// Accesses the `len` bytes at byte `offset` of a region, which occupy
    /// lines `first..first + count`; returns what [`NodeMemory::access_lines`]
    /// does. An overwrite claims only the lines it covers whole: a line at
    /// either end that it covers in part keeps bytes it does not write, so
    /// it is read for ownership like any write.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn access_bytes(
        &mut self,
        now: u64,
        t: u64,
        proc: usize,
        (first, count): (u32, u32),
        offset: u64,
        len: u32,
        kind: Access,
    ) -> (u64, u64) {
        if kind != Access::Overwrite {
            return self.access_lines(now, t, proc, first, count, kind);
        }
        let lb = self.map.line_bytes() as u64;
        let head_partial = !offset.is_multiple_of(lb);
        // A single line partly covered at its head is the head's alone.
        let head_only = head_partial && count == 1;
        let tail_partial = !((offset + len as u64).is_multiple_of(lb) || head_only);
        let whole = count - head_partial as u32 - tail_partial as u32;
        let parts = [
            (first, head_partial as u32, Access::Write),
            (first + head_partial as u32, whole, Access::Overwrite),
            (first + count - tail_partial as u32, tail_partial as u32, Access::Write),
        ];
        let (mut spent, mut missed) = (0, 0);
        for (line, n, kind) in parts.into_iter().filter(|p| p.1 > 0) {
            let (s, m) = self.access_lines(now, t + spent, proc, line, n, kind);
            spent += s;
            missed += m;
        }
        (spent, missed)
    }

    /// Puts `line` (tagged with its state) in `proc`'s cache, in `set`.
    fn install(&mut self, proc: usize, set: usize, line: u32, tagged: u16) {
        let before = self.tags.get(proc, set);
        if before != INVALID && self.map.is_code(self.map.line_of(before & TAG_MASK, set)) {
            self.caches[proc].code_missing += 1;
        }
        if self.map.is_code(line) {
            self.caches[proc].code_missing -= 1;
        }
        self.tags.put(proc, set, tagged);
        Self::track_foreign(&mut self.caches[proc], before, tagged, set, self.sets);
    }

    /// Cache `q` supplies its copy of the line in `set` and keeps it,
    /// shared: Modified becomes Owned, Exclusive becomes Shared.
    fn share(&mut self, q: usize, set: usize) {
        let before = self.tags.get(q, set);
        self.tags.put(q, set, before | SHARED);
        Self::track_foreign(&mut self.caches[q], before, before | SHARED, set, self.sets);
    }

    fn invalidate_others(&mut self, proc: usize, set: usize, line: u32) {
        let tag = self.map.tag(line);
        let code = self.map.is_code(line) as u32;
        let row = set * self.tags.caches;
        for (q, c) in self.caches.iter_mut().enumerate() {
            let held = &mut self.tags.data[row + q];
            if q != proc && *held & TAG_MASK == tag {
                let before = std::mem::replace(held, INVALID);
                c.code_missing += code;
                Self::track_foreign(c, before, INVALID, set, self.sets);
            }
        }
    }

    /// Keeps the foreign-set list of a compute cache in step with its tags
    /// (protocol processors' caches and the second bank have none): the
    /// cache's tag in `set` went from `before` to `after`.
    #[inline(always)]
    fn track_foreign(c: &mut Cache, before: u16, after: u16, set: usize, sets: u32) {
        if let Some(own) = c.own_thread {
            if set < sets as usize {
                Self::track_own_set(c, before, after, set, own);
            }
        }
    }

    /// The lists always match the tags, so the list a set is in follows
    /// from its old tag. Most changes leave it where it was (a foreign line
    /// replaced or invalidated, say) and touch no list.
    #[inline]
    fn track_own_set(c: &mut Cache, before: u16, after: u16, set: usize, own: u32) {
        c.foreign.change(set as u32, foreign_kind(before, own), foreign_kind(after, own));
    }

    fn record(&mut self, proc: usize, line: u32, class: LineClass, outcome: Outcome, latency: u64) {
        let effect = self.effect_of(proc, line, class, outcome);
        self.count(proc, effect, latency);
    }

    /// Adds a transfer to `proc`'s miss statistics under its effect.
    fn count(&mut self, proc: usize, effect: Option<Effect>, latency: u64) {
        let m = &mut self.misses[proc];
        let (count, cycles) = match effect {
            None => return,
            Some(Effect::Migration) => (&mut m.migration, &mut m.migration_cycles),
            Some(Effect::ProtocolRefetch) => (&mut m.protocol_refetch, &mut m.protocol_refetch_cycles),
            Some(Effect::Placement) => (&mut m.placement, &mut m.placement_cycles),
            Some(Effect::Interference) => (&mut m.interference, &mut m.interference_cycles),
        };
        *count += 1;
        *cycles += latency;
    }

    /// Sets of `proc`'s cache not holding its own segment.
    #[cfg(test)]
    pub fn foreign_sets(&self, proc: usize) -> usize {
        self.caches[proc].foreign.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use finegrain_core::{Region, ThreadId};

    fn machine() -> MachineConfig {
        MachineConfig::load("hpca97").unwrap()
    }

    fn node(m: &MachineConfig, owners: &[Option<u32>]) -> NodeMemory {
        let threads = owners.iter().flatten().count() as u32;
        NodeMemory::new(m, AddressMap::new(m, &[2048]).unwrap(), owners, threads)
    }

    #[test]
    fn own_segment_hits_and_protocol_line_evicts_it() {
        let m = machine();
        let mut n = node(&m, &[Some(0)]);
        let seg = n.map().segment_line(0, 10);
        assert_eq!(n.access(0, 0, 0, seg, Access::Read).1, Outcome::Hit);
        let lock = n.map().lock_line();
        assert_eq!(n.access(0, 0, 0, lock, Access::Write).1, Outcome::Memory);
        assert_eq!(n.foreign_sets(0), 1);
        let set = lock % n.map().sets();
        let mine = n.map().segment_line(0, set);
        assert_eq!(n.access(0, 100, 0, mine, Access::Read).1, Outcome::Memory);
        assert_eq!(n.foreign_sets(0), 0);
        assert_eq!(n.misses[0].interference, 1);
    }

    /// Under Single one cache holds everything: the thread's own flag,
    /// evicted by its computation and fetched again, is a refetch, never a
    /// data-placement miss, and switching data placement off does not waive
    /// it. Another thread's flag from memory still is placement.
    #[test]
    fn own_message_data_evicted_by_computation_is_a_refetch_not_placement() {
        for placement in [true, false] {
            let mut m = machine();
            m.effects.data_placement = placement;
            let mut n = node(&m, &[Some(0)]);
            let flag = n.map().flag_line(0);
            n.access(0, 0, 0, flag, Access::Write);
            let evictor = n.map().segment_line(0, flag % n.map().sets());
            n.access(0, 100, 0, evictor, Access::Read);
            let (latency, outcome) = n.access(0, 1_000, 0, flag, Access::Read);
            assert_eq!((outcome, latency), (Outcome::Memory, m.bus.memory_latency), "placement {placement}");
            let misses = n.misses[0];
            assert_eq!((misses.placement, misses.protocol_refetch), (0, 2), "cold, then evicted: {misses:?}");
            n.access(0, 2_000, 0, n.map().flag_line(1), Access::Read);
            assert_eq!(n.misses[0].placement, u64::from(placement), "another thread's flag is placement");
        }
    }

    #[test]
    fn lock_migrates_cache_to_cache_between_processors() {
        let m = machine();
        let mut n = node(&m, &[Some(0), Some(1)]);
        let lock = n.map().lock_line();
        n.access(0, 0, 0, lock, Access::Write);
        let (_, out) = n.access(0, 200, 1, lock, Access::Write);
        assert_eq!(out, Outcome::CacheToCache);
        assert_eq!(n.misses[1].migration, 1);
        // Processor 0's copy was invalidated.
        assert_eq!(n.access(0, 400, 0, lock, Access::Read).1, Outcome::CacheToCache);
    }

    #[test]
    fn only_a_dirty_copy_is_supplied_by_a_peer_cache() {
        let m = machine();
        let mut n = node(&m, &[Some(0), Some(1), Some(2)]);
        let (c2c, memory) = (m.bus.cache_to_cache_latency, m.bus.memory_latency);
        // A line processor 0 only read (Exclusive) comes from memory; one
        // it wrote (its segment starts Modified) from its cache, later.
        let clean = n.map().lock_line();
        let dirty = n.map().segment_line(0, 12);
        assert_eq!(n.access(0, 0, 0, clean, Access::Read).1, Outcome::Memory);
        assert_eq!(n.access(0, 10_000, 1, clean, Access::Read), (memory, Outcome::CacheToCache));
        assert_eq!(n.access(0, 20_000, 1, dirty, Access::Read), (c2c, Outcome::CacheToCache));
        // Now Owned by processor 0 and Shared by 1: still supplied dirty,
        // whichever copy is found first.
        assert_eq!(n.access(0, 30_000, 2, dirty, Access::Read), (c2c, Outcome::CacheToCache));
    }

    #[test]
    fn owned_line_read_by_a_peer_needs_an_upgrade_before_the_owner_writes_again() {
        let m = machine();
        let mut n = node(&m, &[Some(0), None]);
        let line = n.map().segment_line(0, 77);
        // The protocol processor reads the owner's Modified line: supplied
        // cache-to-cache, the owner keeps it Owned.
        assert_eq!(n.access(0, 0, 1, line, Access::Read).1, Outcome::CacheToCache);
        assert_eq!(n.foreign_sets(0), 1, "a shared own line is no longer free to write");
        assert_eq!(n.access(0, 100, 0, line, Access::Read).1, Outcome::Hit);
        assert_eq!(n.access(0, 200, 0, line, Access::Write).1, Outcome::Upgrade);
        assert_eq!(n.foreign_sets(0), 0);
        assert_eq!(n.misses[0].placement, 1, "the owner's upgrade is a data-placement cost");
        // The reader's copy was invalidated by the upgrade.
        assert_eq!(n.access(0, 300, 1, line, Access::Read).1, Outcome::CacheToCache);
    }

    #[test]
    fn an_overwrite_claims_a_peers_dirty_line_without_its_data() {
        let m = machine();
        let mut n = node(&m, &[Some(0), Some(1)]);
        let (first, _) = n.map().lines(Region::RecvBuffer(ThreadId(0)), 0, 32, 2).unwrap();
        n.access(0, 0, 1, first, Access::Write);
        let read_for_ownership = {
            let mut again = node(&m, &[Some(0), Some(1)]);
            again.access(0, 0, 1, first, Access::Write);
            again.access(0, 10_000, 0, first, Access::Write).0
        };
        // Long after the peer's write, on an idle bus.
        let (latency, outcome) = n.access(0, 10_000, 0, first, Access::Overwrite);
        assert_eq!(outcome, Outcome::CacheToCache, "ownership still comes from the peer");
        assert_eq!(latency, m.bus.upgrade_latency, "but only an invalidation crosses the bus");
        assert!(read_for_ownership > latency);
        // The peer's copy is gone and the claimer holds the line Modified.
        assert_eq!(n.access(0, 10_100, 0, first, Access::Write).1, Outcome::Hit);
        assert_eq!(n.access(0, 10_200, 1, first, Access::Read).1, Outcome::CacheToCache);
    }

    #[test]
    fn an_overwrite_reads_the_lines_it_covers_only_in_part() {
        let m = machine();
        let lb = m.cache.line_bytes as u64;
        let cost = |offset: u64, len: u32| {
            let mut n = node(&m, &[Some(0), Some(1)]);
            let range = n.map().lines(Region::RecvBuffer(ThreadId(0)), offset, len, 2).unwrap();
            n.access_bytes(0, 0, 1, range, 0, 4 * lb as u32, Access::Write);
            n.access_bytes(0, 10_000, 0, range, offset, len, Access::Overwrite).0
        };
        let claim = m.bus.upgrade_latency;
        let fetch = m.bus.cache_to_cache_latency;
        assert_eq!(cost(0, 4 * lb as u32), 4 * claim, "four whole lines: four claims");
        // Back-to-back transfers may wait a bus cycle or two for each other.
        let ragged = cost(8, 3 * lb as u32);
        assert!(
            (2 * claim + 2 * fetch..2 * claim + 2 * fetch + 8).contains(&ragged),
            "ragged ends are read first: {ragged}"
        );
        assert_eq!(cost(8, 8), fetch, "a part of one line is an ordinary write");
    }

    #[test]
    fn exclusive_line_is_written_silently() {
        let m = machine();
        let mut n = node(&m, &[Some(0)]);
        let lock = n.map().lock_line();
        assert_eq!(n.access(0, 0, 0, lock, Access::Read).1, Outcome::Memory);
        assert_eq!(n.access(0, 100, 0, lock, Access::Write).1, Outcome::Hit);
        let tx = n.bus.totals().transactions;
        assert_eq!(n.access_lines(0, 200, 0, lock, 1, Access::Write), (m.cache.hit_cycles, 0));
        assert_eq!(n.bus.totals().transactions, tx);
    }

    #[test]
    fn code_residency_count_follows_evictions() {
        let m = machine();
        let mut map = AddressMap::new(&m, &[256]).unwrap();
        let (code, lines) = map.alloc_code(256);
        let mut n = NodeMemory::new(&m, map, &[Some(0), None], 1);
        assert_eq!(n.caches[0].code_missing, lines, "a compute cache starts without code");
        assert_eq!(n.caches[1].code_missing, 0, "a dedicated PP starts with it");
        n.access_lines(0, 0, 0, code, lines, Access::Read);
        assert_eq!(n.caches[0].code_missing, 0);
        // The computation takes one code line's set back.
        let set = n.map().set(code + 3);
        let own = n.map().segment_line(0, set);
        n.access(0, 1000, 0, own, Access::Write);
        assert_eq!(n.caches[0].code_missing, 1);
        let (spent, missed) = n.access_lines(0, 2000, 0, code, lines, Access::Read);
        assert!(missed > 0 && spent > missed);
        assert_eq!(n.caches[0].code_missing, 0);
    }

    #[test]
    fn dedicated_protocol_processor_starts_warm() {
        let m = machine();
        let mut n = node(&m, &[Some(0), None]);
        let lock = n.map().lock_line();
        assert_eq!(n.access(0, 0, 1, lock, Access::Read).1, Outcome::Hit);
    }

    #[test]
    fn effects_switched_off_make_their_transfers_free() {
        let mut m = machine();
        m.effects.migration = false;
        m.effects.data_placement = false;
        let mut n = node(&m, &[Some(0), Some(1)]);
        let lock = n.map().lock_line();
        n.access(0, 0, 0, lock, Access::Write);
        assert_eq!(n.access(0, 0, 1, lock, Access::Write).1, Outcome::Hit, "the lock migrates free");
        let other = n.map().segment_line(0, 5);
        assert_eq!(n.access(0, 0, 1, other, Access::Read).1, Outcome::Hit);
        m.effects = Effects { cache_interference: false, ..Effects::default() };
        let mut n = node(&m, &[Some(0)]);
        let lock = n.map().lock_line();
        n.access(0, 0, 0, lock, Access::Write);
        assert_eq!(n.foreign_sets(0), 0, "protocol lines live in their own bank");
    }

    #[test]
    fn a_switched_off_effect_leaves_the_others_as_they_were() {
        // Migration off: the lock still comes into processor 1's cache, so
        // it evicts processor 1's own segment line there (interference)
        // though it cost nothing to fetch.
        let mut m = machine();
        m.effects.migration = false;
        let mut n = node(&m, &[Some(0), Some(1)]);
        let lock = n.map().lock_line();
        let own = n.map().segment_line(1, n.map().set(lock));
        n.access(0, 0, 0, lock, Access::Write);
        assert_eq!(n.access(0, 0, 1, lock, Access::Write).1, Outcome::Hit);
        assert_eq!(n.misses[1].migration, 0);
        assert!(n.foreign_sets(1) > 0, "the lock took a set of processor 1's segment");
        assert_eq!(n.access(0, 0, 1, own, Access::Read).1, Outcome::Memory, "an interference miss");
        assert_eq!(n.misses[1].interference, 1);
        // Data placement off: another thread's segment line comes in free
        // and still displaces the own line of its set.
        let mut m = machine();
        m.effects.data_placement = false;
        let mut n = node(&m, &[Some(0), Some(1)]);
        let other = n.map().segment_line(0, 7);
        let own = n.map().segment_line(1, 7);
        assert_eq!(n.access(0, 0, 1, other, Access::Read).1, Outcome::Hit);
        assert_eq!(n.misses[1].placement, 0);
        assert_eq!(n.access(0, 0, 1, own, Access::Read).1, Outcome::Memory);
        assert_eq!(n.misses[1].interference, 1);
        // Interference off: an own line another processor read is still
        // upgraded on the owner's write (data placement).
        let mut m = machine();
        m.effects.cache_interference = false;
        let mut n = node(&m, &[Some(0), Some(1)]);
        let own = n.map().segment_line(0, 9);
        n.access(0, 0, 1, own, Access::Read);
        assert_eq!(n.access(0, 0, 0, own, Access::Write).1, Outcome::Upgrade);
        assert_eq!((n.misses[0].placement, n.misses[1].placement), (1, 1), "processor 0's upgrade, 1's read");
    }

    #[test]
    fn a_write_back_follows_the_fetch_that_displaced_its_line() {
        let mut m = machine();
        (m.bus.memory_occupancy, m.bus.writeback_occupancy, m.bus.address_phase_cycles) = (10, 30, None);
        let mut n = node(&m, &[Some(0)]);
        // The lock's set holds thread 0's dirty segment line.
        let lock = n.map().lock_line();
        assert_eq!(n.access(0, 0, 0, lock, Access::Read).1, Outcome::Memory);
        // The fetch holds the bus for 10 cycles, then the write-back for 30.
        assert_eq!(n.bus.transact(0, 10, Phases::AddressOnly, 1, 0).start, 40);
    }

    #[test]
    fn on_a_split_bus_a_write_back_takes_the_data_bus_after_the_fetchs_data() {
        let mut m = machine();
        m.bus.address_phase_cycles = Some(2);
        (m.bus.memory_latency, m.bus.memory_occupancy, m.bus.writeback_occupancy) = (56, 10, 10);
        let mut n = node(&m, &[Some(0)]);
        // The lock's set holds thread 0's dirty segment line.
        let lock = n.map().lock_line();
        // Address [0, 2), data [48, 56): the miss completes at 56. The
        // victim's write-back goes once the fill has arrived: address
        // [56, 58), data [58, 66).
        assert_eq!(n.access(0, 0, 0, lock, Access::Read), (56, Outcome::Memory));
        // Meanwhile both buses are free: an upgrade's address goes at once.
        assert_eq!(n.bus.transact(0, 2, Phases::AddressOnly, 2, 4).done, 6);
        // A store issued at 56 queues behind the write-back on both buses:
        // address at 58, data at 66 instead of 60, so it is done 6 late.
        assert_eq!(n.bus.transact(0, 56, Phases::Write, 10, 10), Granted { start: 58, done: 74, bus_free: 74 });
        let totals = n.bus.totals();
        assert_eq!((totals.address_busy_cycles, totals.data_busy_cycles), (Some(2 + 2 + 2 + 2), Some(8 + 8 + 8)));
        assert_eq!(totals.wait_cycles, 2 + 6);
    }
}
