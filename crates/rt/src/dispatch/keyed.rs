//! Parallel dispatch on real threads: a node's messages handed to several
//! protocol-processor threads at once.
//!
//! Under the parallel disciplines a node's inbox is no longer drained by
//! one role holder. Serving threads share two short locks:
//! - the **ingest** lock (the inbox's receive right): one thread at a time
//!   takes messages from the inbox's lanes (the rings) and decodes them
//!   into free buffers of a pool (the device filling its search window);
//!   the others do not wait for it;
//! - the **dispatch** lock over the queue of decoded entries, which decides
//!   what may run next:
//!   - **PDQ**: the core [`Pdq`] state machine (distinct keys run in
//!     parallel, one key at a time in arrival order, `Sequential` alone,
//!     `NoSync` never held back); finishing a handler and taking the next
//!     entry is one acquisition, as writing a dispatch register is;
//!   - **spin-lock** (a lock per key): entries go out in arrival order and
//!     the handler runs holding its key's mutex, so conflicting handlers
//!     wait inside the handler instead of in the queue.
//!
//! Handlers run outside both locks, reading their entry in place in the
//! pool; its buffer returns to the free list when the handler finishes.
//! Decoding happens outside the dispatch lock, so the critical sections that
//! every handler passes through stay a few tens of nanoseconds. Nothing here
//! allocates after construction (dispatch may run in interrupt context).

use super::spin::SpinLock;
use crate::transport::{codec, Inbox};
use crossbeam_utils::CachePadded;
use finegrain_core::pdq::Pdq;
use finegrain_core::{ConfigError, Discipline, Message, SyncKey};
#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::cell::Cell;
#[cfg(not(loom))]
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicBool, AtomicU32};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A pool buffer. Under the loom model checker its accesses are tracked, so
/// a hand-off of a buffer that the locks failed to order shows up as a race.
#[cfg(not(loom))]
type BufferCell = UnsafeCell<Message>;
#[cfg(loom)]
type BufferCell = loom::cell::UnsafeCell<Message>;

/// Reads a buffer.
///
/// # Safety
/// The caller owns the buffer (see [`KeyedQueue::pool`]).
unsafe fn buffer(cell: &BufferCell) -> &Message {
    #[cfg(not(loom))]
    // SAFETY: forwarded from the caller.
    return unsafe { &*cell.get() };
    #[cfg(loom)]
    // SAFETY: forwarded from the caller.
    return cell.with(|p| unsafe { &*p });
}

/// Writes a buffer.
///
/// # Safety
/// As for [`buffer`].
#[allow(clippy::mut_from_ref)] // ownership, not the borrow, makes it unique
unsafe fn buffer_mut(cell: &BufferCell) -> &mut Message {
    #[cfg(not(loom))]
    // SAFETY: forwarded from the caller.
    return unsafe { &mut *cell.get() };
    #[cfg(loom)]
    // SAFETY: forwarded from the caller.
    return cell.with_mut(|p| unsafe { &mut *p });
}

/// Messages decoded per ingest, at most.
const INGEST_BATCH: usize = 32;

/// Key locks of the spin-lock discipline: keys share a lock when they are
/// equal modulo this.
pub const KEY_LOCKS: usize = 4096;

/// Entries a thread takes per visit to the dispatch lock, at most: every
/// visit moves the queue's lines to the visitor's core, which costs about
/// as much as a small handler, so it pays to take several dispatchable
/// entries at once (all may be in service together under PDQ's rules).
pub const BATCH: usize = 16;

/// An entry handed to a serving thread: its key and pool buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub key: SyncKey,
    slot: u32,
    /// PDQ's sequence number, which its completion names (0 otherwise).
    seq: u64,
}

/// The entries a thread holds: taken together, given back together.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batch {
    entries: [Entry; BATCH],
    len: usize,
}

impl Default for Batch {
    fn default() -> Batch {
        Batch { entries: [Entry { key: SyncKey::NoSync, slot: 0, seq: 0 }; BATCH], len: 0 }
    }
}

impl Batch {
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries[..self.len]
    }
}

/// Nothing could run: the queue's change count then, and whether the
/// window was full (no buffer to decode into).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Idle {
    pub changes: u64,
    pub full: bool,
}

impl Idle {
    /// Never idle: the first look always goes to the queue.
    pub(crate) const NEVER: Idle = Idle { changes: u64::MAX, full: false };

    /// Whether looking again could find something: the queue left entries
    /// that may run since, or a ring has a message and there was room to
    /// decode it. (An idle thread decodes while others run their batches,
    /// so slow handlers do not leave it waiting; with the window full it
    /// waits for an entry to finish, which changes the count.)
    pub(crate) fn worth_retrying(&self, queue: &KeyedQueue, rings_ready: impl FnOnce() -> bool) -> bool {
        queue.changes() != self.changes || (!self.full && rings_ready())
    }
}

/// Decoded entries waiting or in service at one node.
pub(crate) struct KeyedQueue {
    discipline: Discipline,
    dispatch: SpinLock<Dispatch>,
    /// Round-robin start of the next ingest over the inbox's lanes; holding
    /// this lock is the inbox's receive right.
    ingest: SpinLock<usize>,
    /// Message buffers. A buffer belongs to the thread that took it from
    /// the free list (decoding it), then to the queue, then to the thread
    /// the queue handed it to, until that thread returns it.
    pool: Box<[BufferCell]>,
    /// Entries decoded and not yet taken (a hint read without a lock).
    queued: CachePadded<AtomicUsize>,
    /// Bumped when a visit to the queue leaves entries that may run behind
    /// (a key freed or entries queued that the visitor did not take). A
    /// thread that found nothing to run at one value need not look again
    /// until it changes or the rings fill; a thread that finishes a key and
    /// takes that key's next entry itself leaves the others undisturbed.
    changes: CachePadded<AtomicU64>,
    locks: Box<[CachePadded<Mutex<()>>]>,
    /// Most entries one visit takes: a quarter of the window (at most
    /// [`BATCH`]), so one thread cannot take everything decoded and leave
    /// the others idle.
    batch_cap: usize,
}

// SAFETY: a pool buffer is accessed only by its current owner (see `pool`);
// ownership passes through the dispatch lock, whose release/acquire orders
// the previous owner's writes before the next owner's reads.
unsafe impl Sync for KeyedQueue {}

struct Dispatch {
    pdq: Pdq<u32>,
    fifo: VecDeque<(SyncKey, u32)>,
    free: Vec<u32>,
    /// A thread found no free buffer and now waits for the change count.
    full_seen: bool,
}

impl Dispatch {
    /// Whether some queued entry may run now.
    fn dispatchable(&mut self, discipline: Discipline) -> bool {
        match discipline {
            Discipline::Pdq => self.pdq.dispatchable(),
            _ => !self.fifo.is_empty(),
        }
    }
}

/// A dispatch window's size: `RtConfig::pdq_window`'s range.
pub(crate) fn check_window(window: usize) -> Result<(), ConfigError> {
    if window == 0 || window > 1 << 16 {
        return Err(ConfigError::invalid("pdq_window", window, "allowed 1..=65536"));
    }
    Ok(())
}

impl KeyedQueue {
    /// A queue for a parallel discipline whose window holds `window`
    /// decoded entries (waiting or in service).
    pub(crate) fn new(discipline: Discipline, window: usize) -> Result<KeyedQueue, ConfigError> {
        if !matches!(discipline, Discipline::Pdq | Discipline::SpinLock) {
            return Err(ConfigError::invalid(
                "discipline",
                discipline.label(),
                "the native runtime runs serial, pdq and spin-lock (static partitioning is simulated only)",
            ));
        }
        check_window(window)?;
        let locks = if discipline == Discipline::SpinLock {
            (0..KEY_LOCKS).map(|_| CachePadded::new(Mutex::new(()))).collect()
        } else {
            Box::default()
        };
        let dispatch = Dispatch {
            pdq: Pdq::new(window),
            fifo: VecDeque::with_capacity(window),
            free: (0..window as u32).rev().collect(),
            full_seen: false,
        };
        Ok(KeyedQueue {
            discipline,
            dispatch: SpinLock::new(dispatch),
            ingest: SpinLock::new(0),
            pool: (0..window).map(|_| BufferCell::new(codec::scratch_message())).collect(),
            queued: CachePadded::new(AtomicUsize::new(0)),
            changes: CachePadded::new(AtomicU64::new(0)),
            locks,
            batch_cap: (window / 4).clamp(1, BATCH),
        })
    }

    /// Entries decoded and waiting (a hint: read without a lock).
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// The change count (see [`Idle`]).
    pub(crate) fn changes(&self) -> u64 {
        // Under loom a plain load may return a stale count every time a
        // waiter retries, so its wait would never end in the model; a
        // read-modify-write always sees the latest.
        #[cfg(loom)]
        return self.changes.fetch_add(0, Ordering::Acquire);
        #[cfg(not(loom))]
        return self.changes.load(Ordering::Acquire);
    }

    /// The message of an entry this thread was handed and has not yet
    /// given back.
    pub(crate) fn message(&self, e: Entry) -> &Message {
        // SAFETY: the caller owns the buffer (it was handed `e` and has not
        // returned it), so nobody writes it meanwhile.
        unsafe { buffer(&self.pool[e.slot as usize]) }
    }

    /// Gives back the entries in `batch`, then fills it with up to
    /// [`BATCH`] entries this thread may run, decoding more from the rings
    /// when nothing queued may run. `Err` when nothing may run.
    ///
    /// # Safety
    /// `inbox` must be this node's, and no thread may take messages from
    /// it except through this queue (whose ingest lock is its receive
    /// right).
    pub(crate) unsafe fn next<I: Inbox>(&self, inbox: &I, batch: &mut Batch) -> Result<(), Idle> {
        loop {
            let mut d = self.dispatch.lock();
            self.give_back(&mut d, batch);
            let refilled = self.fill(&mut d, batch);
            if refilled {
                return Ok(());
            }
            let changes = self.changes.load(Ordering::Relaxed);
            if d.free.is_empty() {
                d.full_seen = true;
                return Err(Idle { changes, full: true });
            }
            drop(d);
            // SAFETY: forwarded from the caller.
            match unsafe { self.ingest(inbox, batch) } {
                Some(0) | None => return Err(Idle { changes, full: false }),
                Some(_) if batch.len > 0 => return Ok(()),
                Some(_) => {} // queued entries another thread blocks: look again
            }
        }
    }

    /// Gives back the entries in `batch` without taking others.
    pub(crate) fn complete(&self, batch: &mut Batch) {
        if batch.len == 0 {
            return;
        }
        let mut d = self.dispatch.lock();
        self.give_back(&mut d, batch);
        self.signal_leftovers(&mut d);
    }

    /// Finishes the entries in `batch` and empties it. Threads that found
    /// the window full wait for the change count alone (see
    /// [`Idle::worth_retrying`]), so freeing buffers after one did bumps
    /// it: a message may be waiting in the rings for room, and nothing else
    /// would tell them.
    fn give_back(&self, d: &mut Dispatch, batch: &mut Batch) {
        for &e in batch.entries() {
            self.finish(d, e);
        }
        if batch.len > 0 {
            self.wake_full_waiters(d);
        }
        batch.len = 0;
    }

    /// Room was just freed: threads that found the window full wait for the
    /// change count alone, so bump it if one did (only then: a bump on every
    /// freed buffer would keep idle threads retrying each other's polls).
    fn wake_full_waiters(&self, d: &mut Dispatch) {
        if d.full_seen {
            d.full_seen = false;
            self.changes.fetch_add(1, Ordering::Release);
        }
    }

    /// Takes up to a batch of entries that may run into `batch`; true if
    /// any. The caller holds the dispatch lock (`d`). Under PDQ the batch
    /// holds entries of several keys, nosync ones and runs of one key (see
    /// [`Pdq::dispatch_batch`]): the thread runs them in order, so a key's
    /// handlers still run one at a time in arrival order, and a hot key
    /// costs one visit per batch. The price: an entry waits behind the
    /// batch's earlier handlers even if another thread is idle (docs/native.md,
    /// "How a thread takes work").
    fn fill(&self, d: &mut Dispatch, batch: &mut Batch) -> bool {
        let room = self.batch_cap - batch.len;
        match self.discipline {
            Discipline::Pdq => {
                d.pdq.dispatch_batch(room, |e| {
                    batch.entries[batch.len] = Entry { key: e.key, slot: e.item, seq: e.seq };
                    batch.len += 1;
                });
            }
            _ => {
                for _ in 0..room {
                    let Some((key, slot)) = d.fifo.pop_front() else { break };
                    batch.entries[batch.len] = Entry { key, slot, seq: 0 };
                    batch.len += 1;
                }
            }
        }
        if batch.len > 0 {
            self.queued.fetch_sub(batch.len, Ordering::Relaxed);
        }
        self.signal_leftovers(d);
        batch.len > 0
    }

    /// Tells idle threads when something may run that this visitor left.
    fn signal_leftovers(&self, d: &mut Dispatch) {
        if d.dispatchable(self.discipline) {
            self.changes.fetch_add(1, Ordering::Release);
        }
    }

    fn finish(&self, d: &mut Dispatch, e: Entry) {
        if self.discipline == Discipline::Pdq {
            let done = d.pdq.complete(e.key, e.seq);
            debug_assert!(done.is_ok(), "{done:?}: the queue completes each entry it dispatched once");
        }
        d.free.push(e.slot);
    }

    /// Decodes up to a batch of messages from the rings into free buffers
    /// and queues them, round-robin over the rings, then takes what may run
    /// into the (empty) `batch` in the same visit, so the thread that did
    /// the work gets it first. Returns how many it queued, or None if
    /// another thread is ingesting.
    ///
    /// # Safety
    /// As for [`KeyedQueue::next`].
    unsafe fn ingest<I: Inbox>(&self, inbox: &I, batch: &mut Batch) -> Option<usize> {
        let mut next_ring = self.ingest.try_lock()?;
        let mut slots = [0u32; INGEST_BATCH];
        let reserved = {
            let mut d = self.dispatch.lock();
            let k = d.free.len().min(INGEST_BATCH);
            for s in slots.iter_mut().take(k) {
                *s = d.free.pop().expect("counted");
            }
            k
        };
        let mut keys = [SyncKey::NoSync; INGEST_BATCH];
        let mut decoded = 0;
        let n = inbox.lanes();
        let mut idle_rings = 0;
        let mut i = *next_ring;
        // SAFETY: the ingest lock is the inbox's receive right.
        unsafe { inbox.progress() };
        while decoded < reserved && idle_rings < n {
            // SAFETY: the reserved buffer is this thread's until it is
            // queued.
            let buffer = unsafe { buffer_mut(&self.pool[slots[decoded] as usize]) };
            // SAFETY: the ingest lock is the inbox's receive right.
            if unsafe { inbox.try_recv(i, buffer) } {
                keys[decoded] = buffer.key;
                decoded += 1;
                idle_rings = 0;
            } else {
                idle_rings += 1;
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
        *next_ring = i;
        let mut d = self.dispatch.lock();
        // Queued while the ingest lock is still held, so entries enter the
        // queue in the order they left the rings.
        for (&slot, &key) in slots.iter().zip(&keys).take(decoded) {
            match self.discipline {
                Discipline::Pdq => d.pdq.enqueue(key, slot),
                _ => d.fifo.push_back((key, slot)),
            }
        }
        self.return_unused(&mut d, &slots[decoded..reserved]);
        if decoded > 0 {
            self.queued.fetch_add(decoded, Ordering::Relaxed);
            self.fill(&mut d, batch);
        }
        Some(decoded)
    }

    /// Puts buffers an ingest reserved but did not fill back on the free
    /// list. A thread that looked while the ingest held every free buffer
    /// saw a full window: it is woken as when a handler finishes, or a
    /// message arriving meanwhile would wait until one did.
    fn return_unused(&self, d: &mut Dispatch, unused: &[u32]) {
        if !unused.is_empty() {
            self.wake_full_waiters(d);
        }
        d.free.extend_from_slice(unused);
    }

    /// Spin-lock discipline: the lock a handler with `key` must hold.
    pub(crate) fn key_lock(&self, key: SyncKey) -> Option<MutexGuard<'_, ()>> {
        let SyncKey::Key(k) = key else { return None };
        let m = self.locks.get((k % KEY_LOCKS as u64) as usize)?;
        Some(m.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl KeyedQueue {
    /// Serves the queue alongside the node's other serving threads: runs
    /// batches while some entry may run here, giving each message to
    /// `handle` (holding its key's lock under the spin-lock discipline).
    /// Looks twice when worth it (what arrived during the first pass is
    /// taken in the second), and again while threads turned away by the
    /// server `limit` left work. `idle` keeps what the queue answered when
    /// this thread last found nothing to run. Returns how many ran.
    ///
    /// # Safety
    /// As for [`KeyedQueue::next`].
    pub(crate) unsafe fn serve<I: Inbox>(
        &self,
        inbox: &I,
        limit: &ServerLimit,
        idle: &Cell<Idle>,
        failed: impl Fn() -> bool,
        mut handle: impl FnMut(&Message),
    ) -> u64 {
        let mut handled = 0;
        let mut wanted = false;
        for pass in 0.. {
            let worth = || pass < 2 && idle.get().worth_retrying(self, || I::PROGRESSES || inbox.ready());
            if failed() || !(wanted || worth()) {
                break;
            }
            // Floating: idle threads serve, but no more than the limit at
            // once (the configuration allows a limit only there).
            let Some(slot) = limit.claim_or_leave() else { break };
            // SAFETY: forwarded from the caller.
            handled += unsafe { self.serve_batches(inbox, idle, &failed, &mut handle) };
            drop(slot);
            // A thread turned away while this one served (an interrupted
            // one, say) left its messages here: look again.
            wanted = limit.look_again();
        }
        handled
    }

    /// Runs batches until the queue has nothing for this thread; returns
    /// how many handlers ran.
    ///
    /// # Safety
    /// As for [`KeyedQueue::next`].
    unsafe fn serve_batches<I: Inbox>(
        &self,
        inbox: &I,
        idle: &Cell<Idle>,
        failed: &impl Fn() -> bool,
        handle: &mut impl FnMut(&Message),
    ) -> u64 {
        let mut batch = Batch::default();
        let mut handled = 0;
        loop {
            // SAFETY: forwarded from the caller.
            match unsafe { self.next(inbox, &mut batch) } {
                Ok(()) => {
                    for &e in batch.entries() {
                        let _held = self.key_lock(e.key);
                        handle(self.message(e));
                        handled += 1;
                    }
                    if failed() {
                        self.complete(&mut batch);
                        return handled;
                    }
                }
                Err(now) => {
                    idle.set(now);
                    return handled;
                }
            }
        }
    }
}

/// Floating under a parallel discipline: at most this many threads of a
/// node serve its keyed queue at once (`RtConfig::max_servers`,
/// Hurricane-1 Mult's K); without a limit every thread may.
pub(crate) struct ServerLimit {
    limit: Option<u32>,
    /// Threads serving now (counted only under a limit).
    servers: CachePadded<AtomicU32>,
    /// A thread found every serving place taken and left what it came for
    /// to the servers: the next one to give its place up looks again.
    wanted: AtomicBool,
}

/// A serving place taken under a server limit; given back when dropped.
pub(crate) struct ServerSlot<'a>(Option<&'a AtomicU32>);

impl Drop for ServerSlot<'_> {
    fn drop(&mut self) {
        if let Some(servers) = self.0 {
            servers.fetch_sub(1, Ordering::Release);
        }
    }
}

impl ServerLimit {
    pub(crate) fn new(limit: Option<u32>) -> ServerLimit {
        ServerLimit { limit, servers: CachePadded::new(AtomicU32::new(0)), wanted: AtomicBool::new(false) }
    }

    /// One of the serving places, or None if all are taken.
    fn claim(&self) -> Option<ServerSlot<'_>> {
        let Some(limit) = self.limit else { return Some(ServerSlot(None)) };
        let mut now = self.servers.load(Ordering::Relaxed);
        loop {
            if now >= limit {
                return None;
            }
            match self.servers.compare_exchange_weak(now, now + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Some(ServerSlot(Some(&self.servers))),
                Err(seen) => now = seen,
            }
        }
    }

    /// A serving place, or None after telling the servers to look again
    /// once they give theirs up. Dekker-style: either this thread's second
    /// try sees a place freed, or the server that frees it sees the flag.
    fn claim_or_leave(&self) -> Option<ServerSlot<'_>> {
        if let Some(slot) = self.claim() {
            return Some(slot);
        }
        self.wanted.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.claim()
    }

    /// After giving a place up: whether a thread was turned away meanwhile
    /// (and left its work to the servers). Pairs with the fence in
    /// `claim_or_leave`.
    fn look_again(&self) -> bool {
        if self.limit.is_none() {
            return false;
        }
        fence(Ordering::SeqCst);
        self.wanted.swap(false, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::codec::{push_message, Outgoing};
    use crate::transport::inproc::RingInbox;
    use crate::transport::ring::{ring, Consumer, Producer};
    use finegrain_core::{HandlerId, MsgKind, NodeId, ThreadId};

    /// Node 0's inbox over one ring.
    pub(super) fn inbox_of(c: Consumer) -> RingInbox {
        RingInbox::new(NodeId(0), vec![c])
    }

    /// Queues a request with `key` whose token and only argument is `token`.
    pub(super) fn send(p: &mut Producer, key: SyncKey, token: u64) {
        let m = Outgoing {
            kind: MsgKind::Request,
            handler: HandlerId(0),
            src_node: NodeId(1),
            src_thread: ThreadId(0),
            token,
            key,
            args: &[token],
            payload: &[],
        };
        push_message(p, &m).unwrap();
    }

    #[test]
    fn pdq_hands_out_distinct_keys_and_a_run_of_a_held_one() {
        let (mut p, c) = ring(64);
        let inbox = inbox_of(c);
        for (t, k) in [(1, 5), (2, 5), (3, 6)] {
            send(&mut p, SyncKey::Key(k), t);
        }
        let q = KeyedQueue::new(Discipline::Pdq, 16).unwrap();
        let mut a = Batch::default();
        let mut b = Batch::default();
        // SAFETY: only this test uses the consumer, through the queue.
        unsafe {
            q.next(&inbox, &mut a).unwrap();
            let taken: Vec<(SyncKey, u64)> = a.entries().iter().map(|&e| (e.key, q.message(e).token)).collect();
            assert_eq!(
                taken,
                [(SyncKey::Key(5), 1), (SyncKey::Key(5), 2), (SyncKey::Key(6), 3)],
                "in arrival order: key 5's second entry runs after its first on the same thread"
            );
            let idle = q.next(&inbox, &mut b).unwrap_err();
            assert_eq!(idle.changes, q.changes());
            assert!(!idle.worth_retrying(&q, || false));
            q.complete(&mut a);
        }
        assert_eq!(q.queued(), 0);
    }

    #[test]
    fn the_window_bounds_what_is_decoded() {
        let (mut p, c) = ring(64);
        let inbox = inbox_of(c);
        for t in 0..10 {
            send(&mut p, SyncKey::Key(1), t);
        }
        let q = KeyedQueue::new(Discipline::Pdq, 4).unwrap();
        let mut a = Batch::default();
        // SAFETY: as above.
        unsafe {
            q.next(&inbox, &mut a).unwrap();
            assert_eq!(a.entries().len(), 1, "a visit takes at most a quarter of the window");
            assert_eq!(q.queued(), 3, "the window's four decoded, one taken; six wait in the ring");
            let mut b = Batch::default();
            assert_eq!(q.next(&inbox, &mut b), Err(Idle { changes: q.changes(), full: true }));
            q.complete(&mut a);
        }
    }

    #[test]
    fn freeing_room_in_a_full_window_wakes_threads_that_found_it_full() {
        let (mut p, c) = ring(64);
        let inbox = inbox_of(c);
        for t in 1..=4 {
            send(&mut p, SyncKey::Key(1), t);
        }
        let q = KeyedQueue::new(Discipline::Pdq, 4).unwrap();
        let (mut a, mut w) = (Batch::default(), Batch::default());
        // SAFETY: as above.
        unsafe {
            q.next(&inbox, &mut a).unwrap();
            let idle = q.next(&inbox, &mut w).unwrap_err();
            assert!(idle.full, "four entries of one key fill the window");
            // The holder runs the key's other entries itself: no entry is
            // ever left for the waiter, and then it leaves.
            for _ in 0..3 {
                q.next(&inbox, &mut a).unwrap();
            }
            assert!(q.next(&inbox, &mut a).is_err());
            send(&mut p, SyncKey::NoSync, 99);
            assert!(idle.worth_retrying(&q, || inbox.ready()), "the window has room and a message waits");
            q.next(&inbox, &mut w).unwrap();
            assert_eq!(q.message(w.entries()[0]).token, 99);
            q.complete(&mut w);
        }
    }

    /// An ingest reserves every free buffer before it looks at the rings; a
    /// thread looking meanwhile finds the window full. If the ingest decodes
    /// nothing, giving the buffers back must wake that thread, or a message
    /// arriving later waits with nothing in service.
    #[test]
    fn an_ingest_that_decodes_nothing_wakes_threads_that_found_the_window_full() {
        let (mut p, c) = ring(64);
        let inbox = inbox_of(c);
        let q = KeyedQueue::new(Discipline::Pdq, 4).unwrap();
        let reserved: Vec<u32> = std::mem::take(&mut q.dispatch.lock().free);
        let mut w = Batch::default();
        // SAFETY: as above.
        unsafe {
            let idle = q.next(&inbox, &mut w).unwrap_err();
            assert!(idle.full, "every buffer is reserved");
            q.return_unused(&mut q.dispatch.lock(), &reserved);
            send(&mut p, SyncKey::NoSync, 5);
            assert!(idle.worth_retrying(&q, || inbox.ready()), "room again and a message waits");
            q.next(&inbox, &mut w).unwrap();
            assert_eq!(q.message(w.entries()[0]).token, 5);
            q.complete(&mut w);
        }
    }

    #[test]
    fn static_partitioning_is_not_native() {
        let e = KeyedQueue::new(Discipline::Static, 8).err().unwrap().to_string();
        assert!(e.contains("simulated only"), "{e}");
    }
}

#[cfg(test)]
mod concurrency_tests {
    use super::*;
    use crate::transport::codec::{push_message, Outgoing};
    use crate::transport::inproc::RingInbox;
    use crate::transport::ring::ring;
    use finegrain_core::{HandlerId, MsgKind, NodeId, ThreadId};
    use std::sync::atomic::AtomicU64;

    #[test]
    fn every_entry_is_handed_out_once_across_threads() {
        const N: u64 = 20_000;
        let (mut producers, consumers): (Vec<_>, Vec<_>) = (0..4).map(|_| ring(8192)).unzip();
        for t in 0..N {
            let m = Outgoing {
                kind: MsgKind::Request,
                handler: HandlerId(0),
                src_node: NodeId(1),
                src_thread: ThreadId(0),
                token: t,
                key: SyncKey::Key(t % 13),
                args: &[t],
                payload: &[],
            };
            push_message(&mut producers[(t % 4) as usize], &m).unwrap();
        }
        let inbox = RingInbox::new(NodeId(0), consumers);
        let q = KeyedQueue::new(Discipline::Pdq, 16).unwrap();
        let seen: Vec<AtomicU64> = (0..N).map(|_| AtomicU64::new(0)).collect();
        let handled = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    let mut batch = Batch::default();
                    while handled.load(Ordering::Relaxed) < N {
                        // SAFETY: consumers used only through the queue.
                        match unsafe { q.next(&inbox, &mut batch) } {
                            Ok(()) => {
                                for &e in batch.entries() {
                                    let t = q.message(e).token;
                                    seen[t as usize].fetch_add(1, Ordering::Relaxed);
                                    handled.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            Err(_) => std::hint::spin_loop(),
                        }
                    }
                    q.complete(&mut batch);
                });
            }
        });
        let dups: Vec<(u64, u64)> =
            (0..N).map(|t| (t, seen[t as usize].load(Ordering::Relaxed))).filter(|p| p.1 != 1).take(8).collect();
        assert!(dups.is_empty(), "tokens not handed out exactly once: {dups:?}");
    }
}

/// The queue under the loom model checker: two serving threads take four
/// messages through `next`, in every interleaving of their lock and atomic
/// operations (up to a preemption bound). One serves until everything is
/// handled, waiting as the runtime's poll loop does (it looks again only
/// when `Idle::worth_retrying` says so); the other, like a Floating thread
/// going back to its computation, leaves through `complete` after one
/// handler. Checked: each message handed out once; never two of a key in
/// service; a sequential entry alone; a key's messages in arrival order;
/// through loom-tracked pool buffers (an access is recorded when the
/// buffer is taken for decoding or for its handler), that the taking for
/// decoding is ordered before the taking for the handler, and that before
/// the buffer is taken again;
/// and that the staying thread is always told about entries the leaver
/// left runnable (else it waits forever and loom reports the model stuck).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::tests::{inbox_of, send};
    use super::*;
    use crate::transport::inproc::RingInbox;
    use crate::transport::ring::ring;
    use loom::sync::atomic::AtomicU64;
    use loom::sync::Arc;

    /// In arrival order (the token is the index). The sequential entry
    /// first: when it finishes, three entries become runnable at once.
    const MESSAGES: [SyncKey; 4] = [SyncKey::Sequential, SyncKey::Key(1), SyncKey::Key(1), SyncKey::Key(2)];

    /// Bit of `running` set while the sequential handler runs.
    const ALONE: u64 = 1 << 32;

    struct Shared {
        queue: KeyedQueue,
        inbox: RingInbox,
        handled: AtomicU64,
        /// Per token: times handed out.
        seen: [AtomicU64; 4],
        /// Handlers in service (low half) and whether one is sequential.
        running: AtomicU64,
        /// Per key: in service; tokens handled so far.
        key_busy: [AtomicU64; 3],
        key_done: [AtomicU64; 3],
    }
    // SAFETY: loom's atomics and cells are Sync; the inbox is used only
    // through the queue.
    unsafe impl Sync for Shared {}
    // SAFETY: as for Sync: nothing in it is tied to a thread.
    unsafe impl Send for Shared {}

    /// Runs entry `e`, checking PDQ's rules with read-modify-writes (which
    /// are totally ordered per location, so a violation cannot hide).
    fn run(e: Entry, s: &Shared) {
        let token = s.queue.message(e).token;
        assert_eq!(e.key, MESSAGES[token as usize], "entry and buffer disagree");
        s.seen[token as usize].fetch_add(1, Ordering::Relaxed);
        if e.key == SyncKey::Sequential {
            assert_eq!(s.running.fetch_add(ALONE + 1, Ordering::Relaxed), 0, "sequential entry not alone");
            s.running.fetch_sub(ALONE + 1, Ordering::Relaxed);
        } else {
            let SyncKey::Key(k) = e.key else { unreachable!() };
            let k = k as usize;
            assert_eq!(s.running.fetch_add(1, Ordering::Relaxed) & ALONE, 0, "ran beside the sequential entry");
            assert_eq!(s.key_busy[k].fetch_add(1, Ordering::Relaxed), 0, "two handlers of key {k} in service");
            let nth = s.key_done[k].fetch_add(1, Ordering::Relaxed) as usize;
            let expected = (0..MESSAGES.len()).filter(|&i| MESSAGES[i] == e.key).nth(nth);
            assert_eq!(expected, Some(token as usize), "key {k} out of arrival order");
            s.key_busy[k].fetch_sub(1, Ordering::Relaxed);
            s.running.fetch_sub(1, Ordering::Relaxed);
        }
        s.handled.fetch_add(1, Ordering::Relaxed);
    }

    /// Serves as the runtime's poll loop does until `quota` handlers have
    /// run here or everything is handled, then gives its batch back.
    fn serve(s: &Shared, quota: usize) {
        let mut batch = Batch::default();
        let mut idle = Idle::NEVER;
        let mut mine = 0;
        // A read-modify-write sees the latest count (a plain load may keep
        // returning a stale one in the model).
        'serving: while s.handled.fetch_add(0, Ordering::Relaxed) < MESSAGES.len() as u64 {
            if idle.worth_retrying(&s.queue, || s.inbox.ready()) {
                loop {
                    // SAFETY: the consumers are used only through the queue.
                    match unsafe { s.queue.next(&s.inbox, &mut batch) } {
                        Ok(()) => {
                            for &e in batch.entries() {
                                run(e, s);
                                mine += 1;
                            }
                            if mine >= quota {
                                break 'serving;
                            }
                        }
                        Err(i) => break idle = i,
                    }
                }
            }
            loom::thread::yield_now();
        }
        s.queue.complete(&mut batch);
    }

    #[test]
    fn loom_keyed_queue_hands_each_entry_once_in_order_and_wakes_waiters() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.max_branches = 20_000;
        model.check(|| {
            let (mut p, c) = ring(8);
            for (token, &key) in MESSAGES.iter().enumerate() {
                send(&mut p, key, token as u64);
            }
            // A window of 4: a visit takes one entry, so entries change hands
            // as often as possible, and the window is full at first.
            let s = Arc::new(Shared {
                queue: KeyedQueue::new(Discipline::Pdq, 4).unwrap(),
                inbox: inbox_of(c),
                handled: AtomicU64::new(0),
                seen: Default::default(),
                running: AtomicU64::new(0),
                key_busy: Default::default(),
                key_done: Default::default(),
            });
            let leaver = s.clone();
            let t = loom::thread::spawn(move || serve(&leaver, 1));
            serve(&s, usize::MAX);
            t.join().unwrap();
            for (token, n) in s.seen.iter().enumerate() {
                let n = n.load(Ordering::Relaxed);
                assert_eq!(n, 1, "token {token} handed out {n} times");
            }
            drop(p);
        });
    }
}
