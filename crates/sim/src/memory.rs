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

#[cfg(test)]
use crate::bus::Granted;
use crate::bus::{MemoryBus, Phases};
use crate::stats::MissStats;
use finegrain_core::config::{BusParams, Effects, MachineConfig};
use finegrain_core::ConfigError;
use finegrain_core::{Access, Region};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};

/// A cache set holds a 14-bit tag (line / sets) and two state bits; two
/// bytes per set keep a simulated 1 MB cache's tags in 64 KB of host memory.
/// The bits give the MOESI states that matter for timing: Modified (DIRTY),
/// Owned (DIRTY | SHARED), Exclusive (neither), Shared (SHARED). A DIRTY
/// line is written back when evicted; a SHARED line needs a bus upgrade
/// before it can be written.
const INVALID: u16 = u16::MAX;
const DIRTY: u16 = 1 << 15;
const SHARED: u16 = 1 << 14;
const TAG_MASK: u16 = !(DIRTY | SHARED);
/// Position marker for sets not in a foreign list.
const NOT_LISTED: u32 = u32::MAX;
/// Most compute threads a node may have (segments are laid out for this many).
pub const MAX_THREADS: u32 = 64;
/// Lines of each thread's receive buffer.
pub const RECV_LINES: u32 = 64;
/// Lines of the spin-lock discipline's lock table; keys hash into it.
pub const KEY_LOCK_LINES: u32 = 1 << 16;

/// What kind of state a line holds; decides which effect a miss belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineClass {
    /// A compute thread's private segment.
    Segment(u32),
    /// Protocol code, lock and tables: what migrates between acting PPs.
    Protocol,
    /// Message data and completion flags handed from handler to consumer.
    Data,
}

/// Where each region of a node's memory lives, in line numbers. Every
/// sub-region starts at a different cache-set offset so they do not all
/// collide with set 0.
#[derive(Clone, Debug)]
pub struct AddressMap {
    sets: u32,
    /// log2(sets) when sets is a power of two: set and owner by shift and
    /// mask instead of division on the hot path.
    sets_log2: Option<u32>,
    line_bytes: u32,
    lock: u32,
    state: u32,
    state_lines: u32,
    flags: u32,
    recv: u32,
    /// End of the message-data regions (flags and receive buffers).
    data_end: u32,
    code: u32,
    /// Lines reserved for code: what `new` was told the code needs.
    code_capacity: u32,
    table: u32,
    table_lines_per_thread: u32,
    key_locks: u32,
    code_lines: u32,
}

impl AddressMap {
    /// Lays out a node's memory for the preset's cache and the pieces of
    /// protocol code `code_bytes` (each rounded up to whole lines and then
    /// placed with [`AddressMap::alloc_code`]), or says why
    /// its lines would not fit the map's 32-bit line numbers and 14-bit
    /// tags. Each region starts at its own set offset within a cache-sized
    /// stretch, or right after the previous region when a small cache
    /// leaves the stretch too short for it.
    pub fn new(m: &MachineConfig, code_bytes: &[u32]) -> Result<AddressMap, ConfigError> {
        let line_bytes = m.cache.line_bytes;
        let code_lines: u64 = code_bytes.iter().map(|&b| Self::code_lines_of(line_bytes, b) as u64).sum();
        // `lines` finds a byte's line by shifting (the preset checks this).
        debug_assert!(line_bytes.is_power_of_two());
        let s = m.cache_lines();
        let table_bytes_per_thread = m.blocks_per_segment().saturating_mul(m.protocol.table_entry_bytes as u64);
        let table_lines_per_thread = table_bytes_per_thread.div_ceil(line_bytes as u64);
        let state_lines = (m.protocol.dispatch_state_bytes as u64).div_ceil(line_bytes as u64);
        let threads = MAX_THREADS as u64;
        let base = threads * s;
        let lock = base + s * 3 / 4;
        let state = lock + 1;
        let flags = (base + s + s * 5 / 8).max(state + state_lines);
        let recv = (base + 2 * s + s / 2).max(flags + threads);
        let data_end = recv + threads * RECV_LINES as u64;
        let code = (base + 3 * s + s / 8).max(data_end);
        let table = (base + 4 * s + s / 4).max(code.saturating_add(code_lines));
        let key_locks = table.saturating_add(threads.saturating_mul(table_lines_per_thread)).saturating_add(s * 3 / 8);
        let end = key_locks.saturating_add(KEY_LOCK_LINES as u64);
        // Line numbers are u32; a set's tags run from 0 to TAG_MASK - 1.
        let advice = if end > 1 << 32 {
            Some("fewer, larger lines or smaller table entries")
        } else if (end - 1) / s >= TAG_MASK as u64 {
            Some("more sets: a larger cache or smaller lines")
        } else {
            None
        };
        if let Some(advice) = advice {
            return Err(ConfigError::invalid(
                "cache",
                format!(
                    "{} bytes in {line_bytes}-byte lines with {}-byte protocol table entries",
                    m.cache.size_bytes, m.protocol.table_entry_bytes
                ),
                format!(
                    "a memory layout of at most 2^32 lines in all and {TAG_MASK} per set; this one needs {end} lines over {s} sets (use {advice})"
                ),
            ));
        }
        let sets = s as u32;
        Ok(AddressMap {
            sets,
            sets_log2: sets.is_power_of_two().then(|| sets.trailing_zeros()),
            line_bytes,
            lock: lock as u32,
            state: state as u32,
            state_lines: state_lines as u32,
            flags: flags as u32,
            recv: recv as u32,
            data_end: data_end as u32,
            code: code as u32,
            code_capacity: (table - code) as u32,
            table: table as u32,
            table_lines_per_thread: table_lines_per_thread as u32,
            key_locks: key_locks as u32,
            code_lines: 0,
        })
    }

    /// Lines a piece of code of `bytes` takes.
    fn code_lines_of(line_bytes: u32, bytes: u32) -> u32 {
        bytes.div_ceil(line_bytes).max(1)
    }

    pub fn sets(&self) -> u32 {
        self.sets
    }

    pub fn segment_line(&self, thread: u32, set: u32) -> u32 {
        thread * self.sets + set
    }

    pub fn lock_line(&self) -> u32 {
        self.lock
    }

    /// The line holding the spin lock a handler takes for `key`.
    pub fn key_lock_line(&self, key: u64) -> u32 {
        self.key_locks + (key % KEY_LOCK_LINES as u64) as u32
    }

    /// The dispatch loop's mutable state: first line and line count.
    pub fn dispatch_state(&self) -> (u32, u32) {
        (self.state, self.state_lines)
    }

    pub fn line_bytes(&self) -> u32 {
        self.line_bytes
    }

    pub fn flag_line(&self, thread: u32) -> u32 {
        self.flags + thread
    }

    /// The thread whose completion flag or receive buffer `line` is, if it
    /// is one.
    pub fn data_owner(&self, line: u32) -> Option<u32> {
        if (self.flags..self.flags + MAX_THREADS).contains(&line) {
            Some(line - self.flags)
        } else if (self.recv..self.data_end).contains(&line) {
            Some((line - self.recv) / RECV_LINES)
        } else {
            None
        }
    }

    /// Reserves `bytes` of code and returns its first line and line count.
    /// The map was sized for all the code (`new`'s `code_bytes`).
    pub fn alloc_code(&mut self, bytes: u32) -> (u32, u32) {
        let lines = Self::code_lines_of(self.line_bytes, bytes);
        assert!(self.code_lines + lines <= self.code_capacity, "code beyond what the map was sized for");
        let first = self.code + self.code_lines;
        self.code_lines += lines;
        (first, lines)
    }

    /// Whether `line` holds protocol code.
    pub fn is_code(&self, line: u32) -> bool {
        line >= self.code && line < self.code + self.code_lines
    }

    /// The line a tag in a set stands for.
    fn line_of(&self, tag: u16, set: usize) -> u32 {
        // `set` may lie in the second bank (see `Tags`).
        tag as u32 * self.sets + self.set(set as u32)
    }

    /// Every protocol line a dedicated protocol processor keeps warm.
    pub fn protocol_lines(&self, threads: u32) -> impl Iterator<Item = u32> {
        let code = self.code..self.code + self.code_lines;
        let table = self.table..self.table + threads * self.table_lines_per_thread;
        let state = self.state..self.state + self.state_lines;
        std::iter::once(self.lock).chain(state).chain(code).chain(table)
    }

    /// A line's tag: which of the lines sharing its set it is.
    pub fn tag(&self, line: u32) -> u16 {
        let t = match self.sets_log2 {
            Some(k) => line >> k,
            None => line / self.sets,
        };
        debug_assert!(t < TAG_MASK as u32);
        t as u16
    }

    /// The cache set a line maps to.
    pub fn set(&self, line: u32) -> u32 {
        match self.sets_log2 {
            Some(_) => line & (self.sets - 1),
            None => line % self.sets,
        }
    }

    pub fn class(&self, line: u32) -> LineClass {
        if line < MAX_THREADS * self.sets {
            LineClass::Segment(match self.sets_log2 {
                Some(k) => line >> k,
                None => line / self.sets,
            })
        } else if line >= self.flags && line < self.data_end {
            LineClass::Data
        } else {
            LineClass::Protocol
        }
    }

    /// Line range of `len` bytes at `offset` in `region`, or a one-line
    /// description of why it is out of bounds.
    pub fn lines(&self, region: Region, offset: u64, len: u32, threads: u32) -> Result<(u32, u32), String> {
        let lb = self.line_bytes as u64;
        let (base, size_bytes, name) = match region {
            Region::Segment(t) => {
                check_thread(t.0, threads)?;
                (self.segment_line(t.0, 0), self.sets as u64 * lb, "segment")
            }
            Region::ProtocolTable => {
                (self.table, threads as u64 * self.table_lines_per_thread as u64 * lb, "protocol table")
            }
            Region::RecvBuffer(t) => {
                check_thread(t.0, threads)?;
                (self.recv + t.0 * RECV_LINES, RECV_LINES as u64 * lb, "receive buffer")
            }
        };
        // The offset comes from the application: near u64::MAX the sum
        // would wrap past the bound (and the line arithmetic below and in
        // the callers relies on `offset + len` fitting).
        if len == 0 || offset.checked_add(len as u64).is_none_or(|end| end > size_bytes) {
            return Err(format!("access of {len} bytes at offset {offset} is outside the {name} ({size_bytes} bytes)"));
        }
        // Line sizes are powers of two (the preset checks), so the line of
        // a byte is a shift, not a division.
        let shift = lb.trailing_zeros();
        let first = base + (offset >> shift) as u32;
        let last = base + ((offset + len as u64 - 1) >> shift) as u32;
        Ok((first, last - first + 1))
    }
}

fn check_thread(t: u32, threads: u32) -> Result<(), String> {
    if t < threads {
        Ok(())
    } else {
        Err(format!("thread {t} does not exist on this node (it has {threads} compute threads)"))
    }
}

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

/// Sets of a compute cache whose own segment line is not writable without a
/// bus transaction, in two lists: `ABSENT` (another line took the set) and
/// `SHARED` (the own line is there, but another cache holds a copy, so a
/// write needs an upgrade). Each entry records the epoch at which it joined.
/// Vectors plus positions: a random entry is drawn, and any entry removed,
/// in O(1).
#[derive(Clone, Debug)]
struct ForeignSets {
    lists: [Vec<(u32, u32)>; 2],
    /// Per set: NOT_LISTED, or the list in bit 31 and the index below it.
    pos: Vec<u32>,
    epoch: u32,
    /// Every set that joined a list after epoch `joined_since`, in joining
    /// order (a set may be here twice). Work resumed after an interrupt
    /// samples only the entries newer than an epoch, usually a handful of
    /// a list of hundreds: this log finds them without scanning the lists.
    joined: Vec<u32>,
    joined_since: u32,
}

/// Longest the join log grows before it is dropped (a later resumption
/// then scans the lists, as it would without the log).
const JOINED_LOG_MAX: usize = 1024;

const ABSENT: usize = 0;
const SHARED_OWN: usize = 1;

/// Which foreign list a compute cache's set belongs in while it holds
/// `held`, for the thread `own` whose segment the cache computes on. A
/// thread's segment line in set s has tag == the thread's number; the set
/// is the thread's own only if it may write it without a bus transaction
/// (Modified or Exclusive).
#[inline(always)]
fn foreign_kind(held: u16, own: u32) -> Option<usize> {
    if held & TAG_MASK != own as u16 {
        Some(ABSENT)
    } else if held & SHARED != 0 {
        Some(SHARED_OWN)
    } else {
        None
    }
}

impl ForeignSets {
    fn new(sets: u32) -> ForeignSets {
        ForeignSets {
            lists: [Vec::new(), Vec::new()],
            pos: vec![NOT_LISTED; sets as usize],
            epoch: 0,
            joined: Vec::new(),
            joined_since: 0,
        }
    }

    /// The list `set` is in (None: neither).
    fn kind_of(&self, set: u32) -> Option<usize> {
        let p = self.pos[set as usize];
        (p != NOT_LISTED).then_some((p >> 31) as usize)
    }

    /// Moves `set` from list `from`, where it is, to list `to` (None: in
    /// neither). The caller knows `from` (from the set's old tag), so a set
    /// joining a list costs no read of its position, a random access into
    /// a large array.
    fn change(&mut self, set: u32, from: Option<usize>, to: Option<usize>) {
        debug_assert_eq!(self.kind_of(set), from, "foreign lists out of step");
        if from == to {
            return;
        }
        if let Some(list) = from {
            let i = (self.pos[set as usize] & !(1 << 31)) as usize;
            self.lists[list].swap_remove(i);
            if let Some(&(moved, _)) = self.lists[list].get(i) {
                self.pos[moved as usize] = (list as u32) << 31 | i as u32;
            }
            self.pos[set as usize] = NOT_LISTED;
        }
        if let Some(list) = to {
            if self.joined.len() >= JOINED_LOG_MAX {
                self.forget_joined();
            }
            self.epoch += 1;
            self.pos[set as usize] = (list as u32) << 31 | self.lists[list].len() as u32;
            self.lists[list].push((set, self.epoch));
            self.joined.push(set);
        }
    }

    /// Empties the join log. Asked later for what joined after an earlier
    /// epoch, `joined_after` scans the lists instead.
    fn forget_joined(&mut self) {
        self.joined.clear();
        self.joined_since = self.epoch;
    }

    /// Appends to `out` (empty), in list order, the sets of list `kind`
    /// whose entries joined after epoch `mark`: what
    /// `list.iter().filter(|(_, e)| *e > mark)` gives.
    fn joined_after(&self, kind: usize, mark: u32, out: &mut Vec<u32>) {
        let list = &self.lists[kind];
        if mark < self.joined_since {
            // The log does not reach back that far.
            out.extend(list.iter().filter(|(_, e)| *e > mark).map(|(s, _)| *s));
            return;
        }
        // Such an entry joined after `joined_since`, so its set is in the
        // log; a logged set may since have left, moved to the other list,
        // or joined again (logged twice).
        out.extend(self.joined.iter().copied().filter(|&s| {
            let p = self.pos[s as usize];
            p != NOT_LISTED && (p >> 31) as usize == kind && list[(p & !(1 << 31)) as usize].1 > mark
        }));
        // Within one list, positions order the sets as the list does.
        out.sort_unstable_by_key(|&s| self.pos[s as usize]);
        out.dedup();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lists[0].len() + self.lists[1].len()
    }
}

/// The tags of every cache of a node: the tag (with its state bits) each
/// cache holds in each set. With cache interference switched off,
/// non-segment lines use a second bank of sets so they never displace
/// segment lines.
///
/// Stored set-major: the tags one set has in all the node's caches lie side
/// by side. A miss looks the set up in every peer cache (a copy to supply,
/// copies to invalidate), so a cache-major layout cost the host a cache
/// miss per peer; set-major, the whole snoop reads one host cache line.
struct Tags {
    data: Vec<u16>,
    caches: usize,
}

impl Tags {
    fn new(caches: usize, sets: usize) -> Tags {
        Tags { data: vec![INVALID; caches * sets], caches }
    }

    /// Cache `proc`'s tag in `set`.
    #[inline(always)]
    fn get(&self, proc: usize, set: usize) -> u16 {
        self.data[set * self.caches + proc]
    }

    #[inline(always)]
    fn put(&mut self, proc: usize, set: usize, tagged: u16) {
        self.data[set * self.caches + proc] = tagged;
    }

    /// The tags `set` has in every cache, indexed by processor.
    #[inline(always)]
    fn set_row(&self, set: usize) -> &[u16] {
        &self.data[set * self.caches..(set + 1) * self.caches]
    }
}

struct Cache {
    /// The segment this processor's thread owns, if it runs one.
    own_thread: Option<u32>,
    foreign: ForeignSets,
    /// Code lines not in this cache. Code is never written, so it leaves a
    /// cache only by eviction; while this is zero every instruction fetch
    /// hits and the dispatch path can skip the per-line lookups.
    code_missing: u32,
}

/// Host memory the simulator may spend on simulated caches (tags and
/// their bookkeeping) in one run.
pub const HOST_CACHE_BYTES_LIMIT: u64 = 16 << 30;

/// Refuses a machine whose simulated caches could take more than
/// [`HOST_CACHE_BYTES_LIMIT`] of host memory. Per set a cache may take a
/// 2-byte tag (two banks when cache interference is off), a 4-byte
/// foreign-list position, and at worst an 8-byte foreign-list entry with
/// as much again of vector growth.
pub fn check_host_memory(m: &MachineConfig, nodes: u32, procs_per_node: u32) -> Result<(), ConfigError> {
    let banks = if m.effects.cache_interference { 1 } else { 2 };
    let caches = nodes as u64 * procs_per_node as u64;
    let need = caches.saturating_mul(m.cache_lines() * (2 * banks + 4 + 16));
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

/// One node's caches and bus.
pub struct NodeMemory {
    caches: Vec<Cache>,
    tags: Tags,
    pub bus: MemoryBus,
    map: AddressMap,
    bus_params: BusParams,
    hit_cycles: u64,
    effects: Effects,
    sets: u32,
    pub misses: Vec<MissStats>,
    /// Scratch for the sets a compute burst touches.
    picks: Vec<u32>,
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

    /// Cache misses of `work` cycles of synthetic computation by `proc`.
    /// Sets whose own line is gone are touched by any access; sets whose own
    /// line is shared matter only to writes (an upgrade). For each kind, the
    /// number of sets a burst of `n` accesses (or writes) touches is drawn
    /// from Binomial(F, 1 - exp(-n / S)) and the sets are chosen at random,
    /// which is exact in distribution and costs O(touched) instead of
    /// O(accesses). Work resumed after an interrupt passes the epoch its
    /// first part was sampled at (`newer_than`): only sets that became
    /// foreign since are sampled again, so no access is counted twice.
    /// Returns the stall cycles (transactions issued from cycle `t`) and the
    /// epoch to pass if this work is interrupted in turn.
    #[allow(clippy::too_many_arguments)]
    pub fn compute_misses(
        &mut self,
        now: u64,
        t: u64,
        proc: usize,
        work: u64,
        interval: u64,
        write_fraction: f64,
        newer_than: Option<u32>,
        rng: &mut ChaCha8Rng,
    ) -> (u64, u32) {
        // With interference off the misses below are waived (free), but
        // still sampled: the own lines they bring back evict what took their
        // sets, as with it on, and upgrades of shared own lines are data
        // placement, not interference.
        let Some(own) = self.caches[proc].own_thread else {
            return (0, 0);
        };
        if work == 0 {
            return (0, self.caches[proc].foreign.epoch);
        }
        let accesses = work as f64 / interval as f64;
        let mut stall = 0;
        for (kind, n) in [(ABSENT, accesses), (SHARED_OWN, accesses * write_fraction)] {
            let touch = Touch::after(n, self.sets);
            let mut picks = std::mem::take(&mut self.picks);
            self.pick_sets(proc, kind, touch, newer_than, rng, &mut picks);
            for &set in &picks {
                let line = self.map.segment_line(own, set);
                let held = self.tags.get(proc, set as usize);
                let (present, shared) = (held & TAG_MASK == own as u16, held & SHARED != 0);
                let write = match kind {
                    SHARED_OWN => true,
                    _ => rng.gen_bool(write_fraction),
                };
                if present && (!write || !shared) {
                    continue; // repaired meanwhile, or a read of a shared copy
                }
                let kind = if write { Access::Write } else { Access::Read };
                // A waived miss is a hit, which the burst's work already
                // counts: only real misses stall.
                let (latency, outcome) = self.access(now, t + stall, proc, line, kind);
                if outcome != Outcome::Hit {
                    stall += latency;
                }
            }
            self.picks = picks;
        }
        // Work resumed after an interrupt passes back the epoch returned
        // here and asks only for what joins the lists after it.
        let foreign = &mut self.caches[proc].foreign;
        foreign.forget_joined();
        (stall, foreign.epoch)
    }

    /// Draws the sets of list `kind` a burst touches (each with probability
    /// `touch.p`), distinct, optionally only among those newer than an epoch, into
    /// `out` (a buffer kept across bursts: this runs once per compute burst).
    fn pick_sets(
        &self,
        proc: usize,
        kind: usize,
        touch: Touch,
        newer_than: Option<u32>,
        rng: &mut ChaCha8Rng,
        out: &mut Vec<u32>,
    ) {
        out.clear();
        let list = &self.caches[proc].foreign.lists[kind];
        match newer_than {
            None => {
                let touched = binomial(list.len() as u64, touch, rng) as usize;
                distinct_indices(list.len(), touched, rng, out);
                for s in out.iter_mut() {
                    *s = list[*s as usize].0;
                }
            }
            Some(mark) => {
                self.caches[proc].foreign.joined_after(kind, mark, out);
                let touched = binomial(out.len() as u64, touch, rng) as usize;
                for i in 0..touched {
                    let j = rng.gen_range(i..out.len());
                    out.swap(i, j);
                }
                out.truncate(touched);
            }
        }
    }

    /// Sets of `proc`'s cache not holding its own segment.
    #[cfg(test)]
    pub fn foreign_sets(&self, proc: usize) -> usize {
        self.caches[proc].foreign.len()
    }
}

/// `k` distinct indices below `len`, uniformly, appended to `out` (empty):
/// rejection while few are wanted (the usual case), a partial shuffle
/// otherwise.
fn distinct_indices(len: usize, k: usize, rng: &mut ChaCha8Rng, out: &mut Vec<u32>) {
    let k = k.min(len);
    if k * 4 <= len {
        while out.len() < k {
            let i = rng.gen_range(0..len);
            if !out.contains(&(i as u32)) {
                out.push(i as u32);
            }
        }
    } else {
        out.extend(0..len as u32);
        for i in 0..k {
            let j = rng.gen_range(i..len);
            out.swap(i, j);
        }
        out.truncate(k);
    }
}

/// The chance that a burst of `n` uniformly random accesses over `sets`
/// sets touches a given one: p = 1 - exp(-n / sets). Its complement's
/// logarithm is kept too, so that q^k is one `exp` rather than a `powf`
/// (this runs twice per compute burst).
#[derive(Clone, Copy, Debug)]
struct Touch {
    p: f64,
    ln_q: f64,
}

impl Touch {
    fn after(n: f64, sets: u32) -> Touch {
        let ln_q = -n / sets as f64;
        Touch { p: 1.0 - ln_q.exp(), ln_q }
    }
}

/// Draws from Binomial(n, touch.p). Compute bursts touch few foreign sets,
/// so the mean is usually small: inversion from k = 0 then needs about
/// `mean` cheap steps, much less than a general sampler's setup.
fn binomial(n: u64, touch: Touch, rng: &mut ChaCha8Rng) -> u64 {
    let p = touch.p;
    let mean = n as f64 * p;
    if mean > 40.0 || p > 0.5 {
        return Binomial::new(n, p).map(|d| d.sample(rng)).unwrap_or(0);
    }
    let q = 1.0 - p;
    let mut pmf = (n as f64 * touch.ln_q).exp();
    let mut cdf = pmf;
    let u: f64 = rng.gen();
    let mut k = 0;
    while u > cdf && k < n {
        pmf *= (n - k) as f64 / (k + 1) as f64 * p / q;
        k += 1;
        cdf += pmf;
        if pmf < 1e-300 {
            break;
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use finegrain_core::ThreadId;
    use rand::SeedableRng;

    #[test]
    fn joined_after_matches_a_scan_of_the_list() {
        // Random moves between the lists, with marks taken now and then
        // and the log dropped now and then (as compute bursts do) or
        // overflowing (about 1300 joins between drops): the log's answer
        // is always the scan's.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let sets = 3000;
        let mut f = ForeignSets::new(sets);
        let mut kinds = vec![None; sets as usize];
        let mut marks = vec![0];
        for step in 0..60_000 {
            let set = rng.gen_range(0..sets);
            let to = [None, Some(ABSENT), Some(SHARED_OWN)][rng.gen_range(0..3)];
            f.change(set, kinds[set as usize], to);
            kinds[set as usize] = to;
            if rng.gen_bool(0.01) {
                marks.push(f.epoch);
            }
            if rng.gen_bool(0.0005) {
                f.forget_joined();
            }
            if step % 97 == 0 {
                for &mark in &marks[marks.len().saturating_sub(3)..] {
                    for kind in [ABSENT, SHARED_OWN] {
                        let mut got = Vec::new();
                        f.joined_after(kind, mark, &mut got);
                        let want: Vec<u32> = f.lists[kind].iter().filter(|(_, e)| *e > mark).map(|(s, _)| *s).collect();
                        assert_eq!(got, want, "step {step}, mark {mark}, list {kind}");
                    }
                }
            }
        }
    }

    #[test]
    fn small_binomial_has_the_right_mean() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for (n, p) in [(40u64, 0.01), (200, 0.02), (1000, 0.3), (5, 0.9)] {
            let draws = 20_000;
            let sum: u64 = (0..draws).map(|_| binomial(n, Touch { p, ln_q: (-p).ln_1p() }, &mut rng)).sum();
            let mean = sum as f64 / draws as f64;
            let expect = n as f64 * p;
            assert!((mean - expect).abs() < 0.05 * expect + 0.02, "n={n} p={p}: {mean} vs {expect}");
        }
    }

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
    fn compute_misses_repair_foreign_sets() {
        let m = machine();
        let mut n = node(&m, &[Some(0)]);
        let (first, count) = n.map().lines(Region::ProtocolTable, 0, 4096, 1).unwrap();
        n.access_lines(0, 0, 0, first, count, Access::Write);
        assert_eq!(n.foreign_sets(0), 128);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // A long burst touches every set: all foreign sets are refilled.
        let (stall, _) = n.compute_misses(0, 0, 0, 50_000_000, 8, 0.3, None, &mut rng);
        assert_eq!(n.foreign_sets(0), 0);
        assert!(stall >= 128 * m.bus.memory_latency);
    }

    #[test]
    fn a_compute_burst_stalls_only_on_the_misses_it_records() {
        // Processor 1 reads 64 of processor 0's own lines (so processor 0
        // must upgrade them to write) and then 64 other lines of another
        // thread's segment in processor 0's cache (displacing own lines).
        // With each effect on or off, the stall of a long burst is exactly
        // the misses it records: a waived miss stalls nothing.
        for (placement, interference) in [(true, true), (false, true), (true, false), (false, false)] {
            let mut m = machine();
            m.effects.data_placement = placement;
            m.effects.cache_interference = interference;
            let mut n = node(&m, &[Some(0), Some(1), Some(2)]);
            for set in 0..64 {
                let own = n.map().segment_line(0, set);
                n.access(0, 0, 1, own, Access::Read);
                let other = n.map().segment_line(2, 1000 + set);
                n.access(0, 0, 0, other, Access::Read);
            }
            let before = n.misses[0];
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let (stall, _) = n.compute_misses(0, 100_000, 0, 50_000_000, 8, 0.3, None, &mut rng);
            let after = &n.misses[0];
            let upgrades = after.placement_cycles - before.placement_cycles;
            let refetches = after.interference_cycles - before.interference_cycles;
            let case = format!("placement {placement}, interference {interference}");
            assert_eq!(stall, upgrades + refetches, "{case}");
            assert_eq!((upgrades > 0, refetches > 0), (placement, interference), "{case}");
        }
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

    #[test]
    fn region_bounds_are_checked() {
        let m = machine();
        let map = AddressMap::new(&m, &[2048]).unwrap();
        assert!(map.lines(Region::RecvBuffer(finegrain_core::ThreadId(0)), 0, 128, 1).is_ok());
        let e = map.lines(Region::RecvBuffer(finegrain_core::ThreadId(0)), 2000, 128, 1).unwrap_err();
        assert!(e.contains("outside the receive buffer"), "{e}");
        let e = map.lines(Region::Segment(finegrain_core::ThreadId(3)), 0, 8, 2).unwrap_err();
        assert!(e.contains("thread 3 does not exist"), "{e}");
        // An offset whose end wraps u64 is out of range, not a small one.
        for region in [Region::Segment(finegrain_core::ThreadId(0)), Region::ProtocolTable] {
            let e = map.lines(region, u64::MAX - 3, 8, 1).unwrap_err();
            assert!(e.contains(&format!("at offset {} is outside the", u64::MAX - 3)), "{e}");
        }
    }

    /// Every line of every region, with the class and code-ness it must have.
    fn regions(map: &AddressMap, threads: u32) -> Vec<(u32, LineClass, bool)> {
        let mut lines = Vec::new();
        let t = finegrain_core::ThreadId;
        for th in 0..threads {
            let (first, count) = map.lines(Region::Segment(t(th)), 0, map.sets * map.line_bytes, threads).unwrap();
            lines.extend((first..first + count).map(|l| (l, LineClass::Segment(th), false)));
            lines.push((map.flag_line(th), LineClass::Data, false));
            let (first, count) = map.lines(Region::RecvBuffer(t(th)), 0, RECV_LINES * map.line_bytes, threads).unwrap();
            lines.extend((first..first + count).map(|l| (l, LineClass::Data, false)));
        }
        for l in map.protocol_lines(threads) {
            lines.push((l, LineClass::Protocol, map.is_code(l)));
        }
        lines.extend((0..KEY_LOCK_LINES as u64).map(|k| (map.key_lock_line(k), LineClass::Protocol, false)));
        lines
    }

    #[test]
    fn regions_never_overlap_even_in_a_small_cache() {
        for (size, line) in [(1 << 20, 32), (2048, 32), (64, 8)] {
            let mut m = machine();
            (m.cache.size_bytes, m.cache.line_bytes, m.protocol.block_bytes) = (size, line, line);
            let mut map = AddressMap::new(&m, &[4 * line; 3]).unwrap();
            for _ in 0..3 {
                map.alloc_code(4 * line);
            }
            let lines = regions(&map, MAX_THREADS);
            let mut seen = std::collections::HashSet::new();
            for &(l, class, code) in &lines {
                assert!(seen.insert(l), "cache {size}/{line}: line {l} in two regions");
                assert_eq!(map.class(l), class, "cache {size}/{line}: line {l}");
                assert_eq!(map.is_code(l), code, "cache {size}/{line}: line {l}");
                assert!(map.tag(l) < TAG_MASK, "cache {size}/{line}: line {l} has no tag");
            }
        }
    }

    #[test]
    fn a_cache_whose_lines_overflow_the_map_is_refused() {
        let mut m = machine();
        (m.cache.size_bytes, m.cache.line_bytes, m.protocol.block_bytes) = (1 << 30, 16, 16);
        let e = AddressMap::new(&m, &[2048]).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid cache = 1073741824 bytes in 16-byte lines") && e.contains("fewer, larger lines"),
            "{e}"
        );
        let mut m = machine();
        m.protocol.table_entry_bytes = 1 << 20;
        let e = AddressMap::new(&m, &[2048]).unwrap_err().to_string();
        assert!(
            e.contains("with 1048576-byte protocol table entries: a memory layout of at most 2^32 lines")
                && e.contains("smaller table entries"),
            "{e}"
        );
        // One set cannot tell the key locks' lines apart in 14-bit tags.
        let mut m = machine();
        (m.cache.size_bytes, m.cache.line_bytes, m.protocol.block_bytes) = (8, 8, 8);
        let e = AddressMap::new(&m, &[2048]).unwrap_err().to_string();
        assert!(e.contains("more sets"), "{e}");
    }
}
