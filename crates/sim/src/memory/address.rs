//! Where each region of a node's memory lives: the line numbers of the
//! thread segments, the role's lock and the dispatch loop's state, the
//! completion flags and receive buffers, the protocol code and table, the
//! key locks and the global segment; and which cache set and tag each line
//! maps to.

use super::cache::TAG_MASK;
use finegrain_core::config::MachineConfig;
use finegrain_core::{ConfigError, Region};

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
    /// Saved contexts: one per compute thread, then the node's protocol
    /// thread's (empty without the protocol-thread mechanism).
    contexts: u32,
    context_lines: u32,
    /// Each compute thread's request line, where it leaves a request for
    /// the protocol processor to send.
    requests: u32,
    /// The node's global segment (`Region::Global`), after every other
    /// region: its first line and its size in bytes.
    global: u32,
    global_bytes: u64,
    /// A DSM's directory and access tags (`Region::Directory`), right
    /// after the global segment: its first line and size in bytes.
    directory: u32,
    directory_bytes: u64,
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
        let context_lines =
            if m.protocol.protocol_thread { (m.protocol.context_bytes as u64).div_ceil(line_bytes as u64) } else { 0 };
        let contexts = key_locks.saturating_add(KEY_LOCK_LINES as u64).saturating_add(s / 16);
        let requests = contexts.saturating_add((threads + 1).saturating_mul(context_lines)).saturating_add(s / 32);
        let end = requests.saturating_add(threads);
        if let Some(advice) = Self::overflow(end, s) {
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
        // Last, so that a machine whose other regions fit is told it is the
        // global segment that does not.
        let global_bytes = m.global_segment_bytes();
        let global = end.saturating_add(s * 7 / 16);
        // A DSM's directory and access tags (`Region::Directory`) follow
        // the global segment: half its size, room for an 8-byte entry per
        // 32-byte block and a tag byte per block besides.
        let directory_bytes = global_bytes / 2;
        let global_lines = global_bytes.div_ceil(line_bytes as u64);
        let directory = global.saturating_add(global_lines);
        let global_end = directory.saturating_add(directory_bytes.div_ceil(line_bytes as u64));
        if Self::overflow(global_end, s).is_some() {
            return Err(ConfigError::invalid(
                "memory.global_segment_bytes",
                global_bytes,
                format!(
                    "allowed at most {} bytes with this cache ({} bytes in {line_bytes}-byte lines): a node's memory layout holds at most 2^32 lines and {TAG_MASK} per set",
                    Self::room(global, s) * line_bytes as u64,
                    m.cache.size_bytes
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
            contexts: contexts as u32,
            context_lines: context_lines as u32,
            requests: requests as u32,
            global: global as u32,
            global_bytes,
            directory: directory as u32,
            directory_bytes,
        })
    }

    /// Why a layout ending at line `end` over `sets` sets does not fit, if
    /// it does not: line numbers are u32, and a set's tags run from 0 to
    /// TAG_MASK - 1.
    fn overflow(end: u64, sets: u64) -> Option<&'static str> {
        if end > 1 << 32 {
            Some("fewer, larger lines or smaller table entries")
        } else if (end - 1) / sets >= TAG_MASK as u64 {
            Some("more sets: a larger cache or smaller lines")
        } else {
            None
        }
    }

    /// Lines that fit from line `first` on before the layout overflows.
    fn room(first: u64, sets: u64) -> u64 {
        let end = (1u64 << 32).min(TAG_MASK as u64 * sets);
        end.saturating_sub(first)
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

    /// A compute thread's saved context: first line and line count.
    pub fn thread_context(&self, thread: u32) -> (u32, u32) {
        (self.contexts + thread * self.context_lines, self.context_lines)
    }

    /// The line a compute thread leaves its requests in for the protocol
    /// processor.
    pub fn request_line(&self, thread: u32) -> u32 {
        self.requests + thread
    }

    /// The node's protocol thread's saved context: first line and count.
    pub fn protocol_context(&self) -> (u32, u32) {
        (self.contexts + MAX_THREADS * self.context_lines, self.context_lines)
    }

    pub fn line_bytes(&self) -> u32 {
        self.line_bytes
    }

    pub fn flag_line(&self, thread: u32) -> u32 {
        self.flags + thread
    }

    /// The thread whose completion flag, receive buffer or saved context
    /// `line` is, if it is one.
    pub fn data_owner(&self, line: u32) -> Option<u32> {
        if (self.flags..self.flags + MAX_THREADS).contains(&line) {
            Some(line - self.flags)
        } else if (self.recv..self.data_end).contains(&line) {
            Some((line - self.recv) / RECV_LINES)
        } else if self.is_thread_context(line) {
            Some((line - self.contexts) / self.context_lines)
        } else if (self.requests..self.requests + MAX_THREADS).contains(&line) {
            Some(line - self.requests)
        } else {
            None
        }
    }

    fn is_thread_context(&self, line: u32) -> bool {
        line >= self.contexts && line < self.contexts + MAX_THREADS * self.context_lines
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
    pub(super) fn line_of(&self, tag: u16, set: usize) -> u32 {
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
        } else if self.is_thread_context(line)
            || (self.requests..self.requests + MAX_THREADS).contains(&line)
            || (line >= self.global && line < self.directory)
        {
            // A thread's saved registers: written by the processor that
            // switches away from it, read by the one that switches back to
            // it, as message data is handed from producer to consumer; its
            // request line, handed to the protocol processor; and the
            // global segment, which handlers write for threads to read (and
            // the reverse).
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
            Region::Global => (self.global, self.global_bytes, "global segment"),
            Region::Directory | Region::AccessTags => (self.directory, self.directory_bytes, "directory"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use finegrain_core::config::MemoryParams;

    fn machine() -> MachineConfig {
        MachineConfig::load("hpca97").unwrap()
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
        let (first, count) = map.lines(Region::Global, 0, map.global_bytes as u32, threads).unwrap();
        lines.extend((first..first + count).map(|l| (l, LineClass::Data, false)));
        lines
    }

    #[test]
    fn regions_never_overlap_even_in_a_small_cache() {
        for (size, line) in [(1 << 20, 32), (2048, 32), (64, 8)] {
            let mut m = machine();
            (m.cache.size_bytes, m.cache.line_bytes, m.protocol.block_bytes) = (size, line, line);
            // The default 64 MiB would not fit the smallest cache's tags.
            m.memory = Some(MemoryParams { global_segment_bytes: 64 * line as u64 });
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
    fn the_global_segment_follows_the_other_regions_and_is_bounded() {
        let m = machine();
        let map = AddressMap::new(&m, &[2048]).unwrap();
        let size = MemoryParams::DEFAULT_GLOBAL_SEGMENT_BYTES;
        let (first, count) = map.lines(Region::Global, size - 64, 64, 1).unwrap();
        assert_eq!(count, 2);
        assert!(first > map.request_line(MAX_THREADS - 1) && map.class(first) == LineClass::Data);
        assert!(map.tag(first + 1) < TAG_MASK);
        let e = map.lines(Region::Global, size, 1, 1).unwrap_err();
        assert_eq!(e, format!("access of 1 bytes at offset {size} is outside the global segment ({size} bytes)"));
        // A segment the layout cannot hold names its field and the most
        // this cache allows.
        let mut m = machine();
        (m.cache.size_bytes, m.cache.line_bytes, m.protocol.block_bytes) = (2048, 32, 32);
        let e = AddressMap::new(&m, &[256]).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid memory.global_segment_bytes = 67108864: allowed at most 31117504 bytes with this cache (2048 bytes in 32-byte lines)"),
            "{e}"
        );
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
