//! Single-producer single-consumer rings of cache-line slots.
//!
//! The layout follows the coherent network interfaces of Mukherjee & Hill
//! (HPCA 1998):
//! - every slot is one 64-byte line: a header word and seven data words, so
//!   a small message crosses between cores as one cache-line transfer;
//! - a **valid bit with sense reverse**: the header's top bit means "full"
//!   with a sense that flips on every lap of the ring, so the consumer never
//!   clears slots and polls only the line it expects next;
//! - a **lazy pointer**: the producer keeps a private copy of the consumer's
//!   position and re-reads the shared one only when the ring looks full, so
//!   in steady state neither side touches the other's control line.
//!
//! A record (one message) occupies one or more consecutive slots. The
//! producer fills every slot of a record, then publishes it with one release
//! store of the first header; the consumer's acquire load of that header
//! makes the whole record visible. Nothing is ever dropped: a full ring
//! makes `try_push` fail and the caller decide how to wait.

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
use loom::sync::Arc;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::Arc;

use crossbeam_utils::CachePadded;

/// Data words per slot (the eighth word is the header).
pub const SLOT_DATA_WORDS: usize = 7;
/// Most slots one record may span (7 bits in the header).
pub const MAX_RECORD_SLOTS: usize = 127;
/// Bits of caller metadata a record header carries.
pub const META_BITS: u32 = 56;

const SENSE: u64 = 1 << 63;
const COUNT_SHIFT: u32 = META_BITS;
const COUNT_MASK: u64 = 0x7f;
const META_MASK: u64 = (1 << META_BITS) - 1;

/// One cache line.
#[repr(C, align(64))]
pub(crate) struct Slot {
    header: AtomicU64,
    data: [AtomicU64; SLOT_DATA_WORDS],
}

impl Slot {
    fn new() -> Slot {
        Slot { header: AtomicU64::new(0), data: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

/// The ring's memory as both sides see it: its slots and the consumer's
/// published position, on this process's heap or in a mapping shared
/// between processes (see [`MappedRing`]).
struct Shared {
    slots: *const Slot,
    len: usize,
    mask: u64,
    /// The consumer's position, published after every record it consumes;
    /// on a line of its own so the producer's slots never share it.
    head: *const AtomicU64,
    /// Where a consumer position the ring cannot have is reported (mapped
    /// rings: memory other processes can write over).
    fault: Option<FaultAt>,
    /// Keeps the memory above alive for as long as either side holds it.
    _owner: Owner,
}

/// Three words of a shared mapping where a producer reports a consumer
/// position it cannot believe: 1 + the ring's number (0: none yet), the
/// position read, and the producer's own position then. Always the
/// standard library's atomics, also in loom models: these words live in a
/// mapping other processes see, which loom does not model.
#[derive(Clone, Copy)]
pub(crate) struct FaultAt {
    pub(crate) words: *const [std::sync::atomic::AtomicU64; 3],
    pub(crate) ring: u64,
}

enum Owner {
    Heap { _slots: Box<[Slot]>, _head: Box<CachePadded<AtomicU64>> },
    Mapped { _map: std::sync::Arc<dyn Send + Sync> },
}

// SAFETY: the pointers lead to atomics owned by `_owner` (heap memory or
// a shared mapping kept mapped by it), valid for the life of `Shared`;
// every access to them is an atomic operation.
unsafe impl Send for Shared {}
// SAFETY: as for Send: only atomics are reached through the pointers.
unsafe impl Sync for Shared {}

impl Shared {
    /// The consumer's published position `head` cannot be: the producer,
    /// at `tail`, has never written past what it allows (`tail - len ..=
    /// tail`). Reported once, where the ring has somewhere to report it.
    #[cold]
    fn bad_head(&self, head: u64, tail: u64) {
        if let Some(f) = self.fault {
            // SAFETY: the words lie in the mapping `_owner` keeps mapped.
            let words = unsafe { &*f.words };
            if words[0].load(Ordering::Acquire) == 0 {
                words[1].store(head, Ordering::Relaxed);
                words[2].store(tail, Ordering::Relaxed);
                let _ = words[0].compare_exchange(0, f.ring + 1, Ordering::AcqRel, Ordering::Acquire);
            }
        }
    }

    #[inline(always)]
    fn slot(&self, pos: u64) -> &Slot {
        // SAFETY: `pos & mask` is below `len`, the number of slots at
        // `slots`, which `_owner` keeps alive as long as `self`.
        unsafe { &*self.slots.add((pos & self.mask) as usize) }
    }

    #[inline(always)]
    fn head(&self) -> &AtomicU64 {
        // SAFETY: `head` points to an atomic `_owner` keeps alive.
        unsafe { &*self.head }
    }
}

/// (The loom models exercise heap rings only: loom's atomics are not the
/// ones other processes see.)
///
/// Where a ring lives in memory mapped by several processes: `slots`
/// slots of 64 bytes from `slots_at`, and the consumer's position (a
/// line of its own) at `head_at`. Both zeroed when the mapping was made
/// (an empty ring).
pub(crate) struct MappedRing {
    pub(crate) slots_at: *const u8,
    pub(crate) slots: usize,
    pub(crate) head_at: *const u8,
    pub(crate) fault: FaultAt,
}

/// Bytes a mapped ring of `slots` slots takes (its slots, then its head
/// line padded to 128 bytes against adjacent-line prefetch).
pub(crate) fn mapped_bytes(slots: usize) -> usize {
    slots * std::mem::size_of::<Slot>() + 128
}

/// The two ends of a ring in a shared mapping kept alive by `owner`.
///
/// # Safety
/// `at` must describe zeroed (or previously used by a ring of the same
/// size) memory, 64-byte aligned, inside a mapping `owner` keeps mapped,
/// used by no other ring; `slots` a power of two, at least 2. At most one
/// producer and one consumer may exist for it across all processes.
pub(crate) unsafe fn mapped(at: &MappedRing, owner: std::sync::Arc<dyn Send + Sync>) -> (Producer, Consumer) {
    debug_assert!(at.slots.is_power_of_two() && at.slots >= 2);
    debug_assert!((at.slots_at as usize).is_multiple_of(64) && (at.head_at as usize).is_multiple_of(64));
    let shared = Arc::new(Shared {
        slots: at.slots_at.cast(),
        len: at.slots,
        mask: at.slots as u64 - 1,
        head: at.head_at.cast(),
        fault: Some(at.fault),
        _owner: Owner::Mapped { _map: owner },
    });
    let log2 = at.slots.trailing_zeros();
    (Producer { shared: shared.clone(), tail: 0, cached_head: 0, log2 }, Consumer { shared, head: 0, log2 })
}

/// The producer end alone of a mapped ring (the consumer is in another
/// process), starting where `head` says the consumer is.
///
/// # Safety
/// As for [`mapped`]; the ring's consumer is in another process.
pub(crate) unsafe fn mapped_producer(at: &MappedRing, owner: std::sync::Arc<dyn Send + Sync>) -> Producer {
    // SAFETY: forwarded from the caller.
    unsafe { mapped(at, owner) }.0
}

/// The consumer end alone of a mapped ring (the producer is in another
/// process).
///
/// # Safety
/// As for [`mapped`]; the ring's producer is in another process.
pub(crate) unsafe fn mapped_consumer(at: &MappedRing, owner: std::sync::Arc<dyn Send + Sync>) -> Consumer {
    // SAFETY: forwarded from the caller.
    unsafe { mapped(at, owner) }.1
}

/// The ring has no room for the record now; nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// Slots a record of `words` data words occupies.
pub fn slots_for(words: usize) -> usize {
    words.div_ceil(SLOT_DATA_WORDS).max(1)
}

/// The sense a slot at absolute position `pos` carries when it is full:
/// 1 on even laps, 0 on odd ones, so zero-initialised slots read as empty.
fn full_sense(pos: u64, capacity_log2: u32) -> u64 {
    if (pos >> capacity_log2) & 1 == 0 {
        SENSE
    } else {
        0
    }
}

#[cfg(all(target_arch = "x86_64", not(loom)))]
fn prefetch(slot: &Slot) {
    // SAFETY: a prefetch is a hint with no architectural effect; the address
    // is that of a live slot.
    unsafe { core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(slot as *const Slot as *const i8) }
}

#[cfg(not(all(target_arch = "x86_64", not(loom))))]
fn prefetch(_slot: &Slot) {}

/// Creates a ring of `capacity` slots (a power of two, at least 2).
pub fn ring(capacity: usize) -> (Producer, Consumer) {
    assert!(capacity.is_power_of_two() && capacity >= 2, "ring capacity must be a power of two >= 2");
    let slots: Box<[Slot]> = (0..capacity).map(|_| Slot::new()).collect();
    let head = Box::new(CachePadded::new(AtomicU64::new(0)));
    let shared = Arc::new(Shared {
        slots: slots.as_ptr(),
        len: capacity,
        mask: capacity as u64 - 1,
        head: &**head as *const AtomicU64,
        fault: None,
        _owner: Owner::Heap { _slots: slots, _head: head },
    });
    let log2 = capacity.trailing_zeros();
    (Producer { shared: shared.clone(), tail: 0, cached_head: 0, log2 }, Consumer { shared, head: 0, log2 })
}

/// The sending side. Owned by exactly one thread at a time.
pub struct Producer {
    shared: Arc<Shared>,
    tail: u64,
    cached_head: u64,
    log2: u32,
}

/// The receiving side. Owned by exactly one thread at a time.
pub struct Consumer {
    shared: Arc<Shared>,
    head: u64,
    log2: u32,
}

impl Producer {
    pub fn capacity(&self) -> usize {
        self.shared.len
    }

    /// The consumer's published position, if it is one the ring can have
    /// (it never passes the producer, nor lags it by more than the ring);
    /// otherwise the ring's memory was overwritten: it is reported, and
    /// the ring stays full rather than overwrite records not yet read.
    #[inline]
    fn read_head(&self) -> Result<u64, Full> {
        let head = self.shared.head().load(Ordering::Acquire);
        if head > self.tail || self.tail - head > self.shared.len as u64 {
            self.shared.bad_head(head, self.tail);
            return Err(Full);
        }
        Ok(head)
    }

    /// Appends a record of `meta` (56 bits) and `words`; fails with `Full`
    /// (writing nothing) if the consumer has not freed enough slots.
    pub fn try_push(&mut self, meta: u64, words: &[u64]) -> Result<(), Full> {
        self.try_push_with(meta, words.len(), |i| words[i])
    }

    /// A record of at most seven words (one slot): the hot path of small
    /// messages, without the multi-slot bookkeeping.
    #[inline]
    pub fn try_push_one(&mut self, meta: u64, words: &[u64]) -> Result<(), Full> {
        debug_assert!(words.len() <= SLOT_DATA_WORDS && meta <= META_MASK);
        if self.tail + 1 - self.cached_head > self.shared.len as u64 {
            self.cached_head = self.read_head()?;
            if self.tail + 1 - self.cached_head > self.shared.len as u64 {
                return Err(Full);
            }
        }
        let slot = self.shared.slot(self.tail);
        for (d, w) in slot.data.iter().zip(words) {
            d.store(*w, Ordering::Relaxed);
        }
        let header = full_sense(self.tail, self.log2) | 1 << COUNT_SHIFT | meta;
        slot.header.store(header, Ordering::Release);
        self.tail += 1;
        Ok(())
    }

    /// Like [`Producer::try_push`], with data word `i` produced by `word(i)`
    /// straight into the slot (no intermediate buffer).
    #[inline]
    pub fn try_push_with(&mut self, meta: u64, len: usize, mut word: impl FnMut(usize) -> u64) -> Result<(), Full> {
        let n = slots_for(len);
        assert!(n <= MAX_RECORD_SLOTS && n <= self.capacity(), "record of {n} slots does not fit the ring");
        debug_assert!(meta <= META_MASK);
        let cap = self.capacity() as u64;
        if self.tail + n as u64 - self.cached_head > cap {
            // Lazy pointer: look at the consumer's position only now.
            self.cached_head = self.read_head()?;
            if self.tail + n as u64 - self.cached_head > cap {
                return Err(Full);
            }
        }
        let first = self.shared.slot(self.tail);
        let mut i = 0;
        for k in 0..n {
            let pos = self.tail + k as u64;
            let slot = if k == 0 { first } else { self.shared.slot(pos) };
            let end = (i + SLOT_DATA_WORDS).min(len);
            for d in &slot.data[..end - i] {
                d.store(word(i), Ordering::Relaxed);
                i += 1;
            }
            if k > 0 {
                // Continuation slots carry their lap's sense too, so when
                // this position later heads a record the stale header reads
                // as empty.
                slot.header.store(full_sense(pos, self.log2), Ordering::Relaxed);
            }
        }
        let header = full_sense(self.tail, self.log2) | (n as u64) << COUNT_SHIFT | meta;
        // Publishes every store above to the consumer's acquire load.
        first.header.store(header, Ordering::Release);
        self.tail += n as u64;
        Ok(())
    }
}

/// Read access to one record while the consumer holds it.
pub struct Record<'a> {
    shared: &'a Shared,
    start: u64,
    meta: u64,
    slots: usize,
}

impl Record<'_> {
    pub fn meta(&self) -> u64 {
        self.meta
    }

    /// Data words the record can hold (its slots times seven); only the
    /// loom model needs it.
    #[cfg(all(loom, test))]
    pub fn capacity_words(&self) -> usize {
        self.slots * SLOT_DATA_WORDS
    }

    /// The i-th data word.
    pub fn word(&self, i: usize) -> u64 {
        let slot = self.shared.slot(self.start + (i / SLOT_DATA_WORDS) as u64);
        slot.data[i % SLOT_DATA_WORDS].load(Ordering::Relaxed)
    }
}

/// A read-only view of a ring's consumer side, for threads that do not own
/// the consumer but want to know whether a record waits (it follows the
/// consumer's published position).
#[derive(Clone)]
pub struct Peeker {
    shared: Arc<Shared>,
    log2: u32,
}

impl Peeker {
    pub fn ready(&self) -> bool {
        let head = self.shared.head().load(Ordering::Acquire);
        let h = self.shared.slot(head).header.load(Ordering::Acquire);
        h & SENSE == full_sense(head, self.log2)
    }
}

impl Consumer {
    pub fn peeker(&self) -> Peeker {
        Peeker { shared: self.shared.clone(), log2: self.log2 }
    }

    /// Whether a record is waiting (one load of the next slot's header).
    pub fn ready(&self) -> bool {
        let h = self.shared.slot(self.head).header.load(Ordering::Acquire);
        h & SENSE == full_sense(self.head, self.log2)
    }

    /// Hands the next record to `f`, then frees its slots. `None` if the
    /// ring is empty.
    pub fn try_pop<R>(&mut self, f: impl FnOnce(&Record) -> R) -> Option<R> {
        let slot = self.shared.slot(self.head);
        let h = slot.header.load(Ordering::Acquire);
        if h & SENSE != full_sense(self.head, self.log2) {
            return None;
        }
        let record = Record {
            shared: &self.shared,
            start: self.head,
            meta: h & META_MASK,
            slots: ((h >> COUNT_SHIFT) & COUNT_MASK) as usize,
        };
        // Ask for every line of a long record at once: the misses then
        // overlap instead of being paid one after another.
        for k in 1..record.slots {
            prefetch(self.shared.slot(self.head + k as u64));
        }
        let out = f(&record);
        self.head += record.slots as u64;
        // Releases the slots: the producer's acquire of this value orders
        // our reads above before its next writes to them.
        self.shared.head().store(self.head, Ordering::Release);
        Some(out)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn words(seed: u64, n: usize) -> Vec<u64> {
        (0..n as u64).map(|i| seed * 1000 + i).collect()
    }

    #[test]
    fn records_come_out_in_order_across_laps() {
        let (mut p, mut c) = ring(8);
        let mut expected = std::collections::VecDeque::new();
        for round in 0..200u64 {
            let n = (round % 17) as usize; // 0..16 words: 1 to 3 slots
            let w = words(round, n);
            while p.try_push(round, &w).is_err() {
                let (meta, got) =
                    c.try_pop(|r| (r.meta(), (0..n_of(&expected)).map(|i| r.word(i)).collect::<Vec<_>>())).unwrap();
                let (m, e): (u64, Vec<u64>) = expected.pop_front().unwrap();
                assert_eq!((meta, got), (m, e));
            }
            expected.push_back((round, w));
        }
        while let Some((m, e)) = expected.pop_front() {
            let got = c.try_pop(|r| (r.meta(), (0..e.len()).map(|i| r.word(i)).collect::<Vec<_>>())).unwrap();
            assert_eq!(got, (m, e));
        }
        assert!(c.try_pop(|_| ()).is_none());
        assert!(!c.ready());
        assert!(!c.peeker().ready());
        p.try_push(9, &[1]).unwrap();
        assert!(c.peeker().ready());
    }

    fn n_of(q: &std::collections::VecDeque<(u64, Vec<u64>)>) -> usize {
        q.front().map_or(0, |x| x.1.len())
    }

    #[test]
    fn a_full_ring_refuses_and_writes_nothing() {
        let (mut p, mut c) = ring(4);
        assert!(p.try_push(1, &words(1, 14)).is_ok()); // 2 slots
        assert!(p.try_push(2, &words(2, 7)).is_ok()); // 1 slot
        assert_eq!(p.try_push(3, &words(3, 8)), Err(Full)); // needs 2, 1 free
        assert!(p.try_push(4, &words(4, 1)).is_ok()); // the last slot
        assert_eq!(p.try_push(5, &[]), Err(Full));
        assert_eq!(c.try_pop(|r| (r.meta(), r.word(13))), Some((1, 1013)));
        assert!(p.try_push(5, &words(5, 8)).is_ok(), "two slots freed");
        let metas: Vec<u64> = std::iter::from_fn(|| c.try_pop(|r| r.meta())).collect();
        assert_eq!(metas, vec![2, 4, 5]);
    }

    #[test]
    fn slots_per_record() {
        assert_eq!(slots_for(0), 1);
        assert_eq!(slots_for(7), 1);
        assert_eq!(slots_for(8), 2);
        assert_eq!(slots_for(34), 5);
    }

    /// Spins a while, then lets the other thread run: on a loaded machine
    /// the two may share a core, where spinning alone waits out whole
    /// scheduler slices (the test then took up to 21 s instead of 0.1 s).
    fn back_off(spins: &mut u32) {
        *spins += 1;
        if spins.is_multiple_of(64) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn threads_exchange_many_records() {
        let (mut p, mut c) = ring(16);
        let n = 100_000u64;
        let t = std::thread::spawn(move || {
            let mut spins = 0;
            for i in 0..n {
                let w = [i, i * 3, !i];
                let len = (i % 4) as usize;
                while p.try_push(i & META_MASK, &w[..len.min(3)]).is_err() {
                    back_off(&mut spins);
                }
            }
        });
        let mut spins = 0;
        let mut next = 0;
        while next < n {
            if let Some((m, a, b)) = c.try_pop(|r| (r.meta(), r.word(0), r.word(1))) {
                assert_eq!(m, next);
                let len = (next % 4) as usize;
                if len >= 1 {
                    assert_eq!(a, next);
                }
                if len >= 2 {
                    assert_eq!(b, next * 3);
                }
                next += 1;
            } else {
                back_off(&mut spins);
            }
        }
        t.join().unwrap();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;

    /// Two-slot ring, three records of one and two slots: exercises the lazy
    /// pointer refresh, wrap-around and the sense flip on every interleaving.
    #[test]
    fn loom_ring_wraps_with_sense_reverse() {
        loom::model(|| {
            let (mut p, mut c) = ring(2);
            let t = loom::thread::spawn(move || {
                let records: [&[u64]; 3] = [&[10], &[20, 21, 22, 23, 24, 25, 26, 27], &[30]];
                for (i, w) in records.iter().enumerate() {
                    while p.try_push(i as u64, w).is_err() {
                        loom::thread::yield_now();
                    }
                }
            });
            let mut seen = Vec::new();
            while seen.len() < 3 {
                match c.try_pop(|r| (r.meta(), r.word(0), if r.capacity_words() > 7 { r.word(7) } else { 0 })) {
                    Some(x) => seen.push(x),
                    None => loom::thread::yield_now(),
                }
            }
            assert_eq!(seen, vec![(0, 10, 0), (1, 20, 27), (2, 30, 0)]);
            t.join().unwrap();
        });
    }
}
