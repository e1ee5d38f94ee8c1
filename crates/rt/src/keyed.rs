//! Parallel dispatch on real threads: a node's messages handed to several
//! protocol-processor threads at once.
//!
//! Under the parallel disciplines a node's rings are no longer drained by
//! one role holder. Instead any serving thread takes a short lock, pulls
//! messages from the rings into a bounded window of decoded entries (the
//! device's search window), and takes the next entry it may run:
//! - **PDQ**: the core [`Pdq`] state machine decides (distinct keys run in
//!   parallel, one key at a time in arrival order, `Sequential` alone,
//!   `NoSync` never held back); finishing a handler and taking the next one
//!   is a single lock acquisition, as writing a dispatch register is;
//! - **spin-lock** (a lock per key): entries go out in arrival order and the
//!   handler runs holding its key's mutex, so conflicting handlers wait
//!   inside the handler instead of in the queue.
//!
//! Handlers run outside the lock. Decoded entries live in a pool of message
//! buffers that are swapped with the serving thread's own scratch message,
//! so dispatch never allocates (it may run in interrupt context).

use crate::codec;
use crate::ring::Consumer;
use crossbeam_utils::CachePadded;
use finegrain_core::pdq::Pdq;
use finegrain_core::{ConfigError, Discipline, Message, NodeId, SyncKey};
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Key locks of the spin-lock discipline: keys share a lock when they are
/// equal modulo this.
pub const KEY_LOCKS: usize = 4096;

/// Decoded entries waiting or in service at one node.
pub(crate) struct KeyedQueue {
    discipline: Discipline,
    inner: Mutex<Inner>,
    /// Entries decoded and not yet taken: lets a thread skip the lock when
    /// the rings are empty too.
    queued: AtomicUsize,
    locks: Box<[CachePadded<Mutex<()>>]>,
}

struct Inner {
    pdq: Pdq<u32>,
    fifo: VecDeque<u32>,
    /// Message buffers; `free` lists those not holding a queued entry.
    pool: Vec<Message>,
    free: Vec<u32>,
    /// Round-robin start of the next refill over the rings.
    next_ring: usize,
}

impl KeyedQueue {
    /// A queue for a parallel discipline searching `window` entries.
    pub(crate) fn new(discipline: Discipline, window: usize) -> Result<KeyedQueue, ConfigError> {
        if !matches!(discipline, Discipline::Pdq | Discipline::SpinLock) {
            return Err(ConfigError::invalid(
                "discipline",
                discipline.label(),
                "the native runtime runs serial, pdq and spin-lock (static partitioning is simulated only)",
            ));
        }
        if window == 0 || window > 1 << 16 {
            return Err(ConfigError::invalid("pdq_window", window, "allowed 1..=65536"));
        }
        let locks = if discipline == Discipline::SpinLock {
            (0..KEY_LOCKS).map(|_| CachePadded::new(Mutex::new(()))).collect()
        } else {
            Box::default()
        };
        let inner = Inner {
            pdq: Pdq::new(window),
            fifo: VecDeque::with_capacity(window),
            pool: (0..window).map(|_| codec::scratch_message()).collect(),
            free: (0..window as u32).rev().collect(),
            next_ring: 0,
        };
        Ok(KeyedQueue { discipline, inner: Mutex::new(inner), queued: AtomicUsize::new(0), locks })
    }

    /// Entries decoded and waiting (a hint: read without the lock).
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A handler panic is caught outside the lock, so poisoning would
        // only follow a bug in this module; the data stays consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Finishes the entry with key `done` (if any) and hands the next entry
    /// this thread may run into `scratch`, refilling the window from the
    /// rings when nothing queued may run. Returns the entry's key, or None
    /// when nothing may run now.
    ///
    /// # Safety
    /// `inbox` must be the consumers of this node's rings, and no thread may
    /// touch them except through this queue (which does so under its lock).
    pub(crate) unsafe fn next(
        &self,
        inbox: &[UnsafeCell<Consumer>],
        node: NodeId,
        done: Option<SyncKey>,
        scratch: &mut Message,
    ) -> Option<SyncKey> {
        let mut g = self.lock();
        if let Some(key) = done {
            if self.discipline == Discipline::Pdq {
                g.pdq.complete(key);
            }
        }
        loop {
            let taken = match self.discipline {
                Discipline::Pdq => g.pdq.dispatch().map(|d| d.item),
                _ => g.fifo.pop_front(),
            };
            if let Some(slot) = taken {
                let inner = &mut *g;
                std::mem::swap(&mut inner.pool[slot as usize], scratch);
                inner.free.push(slot);
                self.queued.fetch_sub(1, Ordering::Relaxed);
                return Some(scratch.key);
            }
            // SAFETY: forwarded from the caller; the lock is held.
            if unsafe { !self.refill(&mut g, inbox, node) } {
                return None;
            }
        }
    }

    /// Finishes an entry without taking another.
    pub(crate) fn complete(&self, key: SyncKey) {
        if self.discipline == Discipline::Pdq {
            self.lock().pdq.complete(key);
        }
    }

    /// Decodes messages from the rings into free buffers, round-robin over
    /// the rings; true if it queued any.
    ///
    /// # Safety
    /// As for [`KeyedQueue::next`]; the caller holds the lock (`g`).
    unsafe fn refill(&self, g: &mut Inner, inbox: &[UnsafeCell<Consumer>], node: NodeId) -> bool {
        let n = inbox.len();
        let mut added = 0;
        let mut idle_rings = 0;
        let mut i = g.next_ring;
        while idle_rings < n {
            let Some(&slot) = g.free.last() else { break };
            // SAFETY: the caller guarantees exclusive use of the consumers
            // while the lock is held.
            let consumer = unsafe { &mut *inbox[i].get() };
            let buffer = &mut g.pool[slot as usize];
            if consumer.ready() && consumer.try_pop(|r| codec::decode(r, node, buffer)).is_some() {
                g.free.pop();
                let key = g.pool[slot as usize].key;
                match self.discipline {
                    Discipline::Pdq => g.pdq.enqueue(key, slot),
                    _ => g.fifo.push_back(slot),
                }
                added += 1;
                idle_rings = 0;
            } else {
                idle_rings += 1;
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
        g.next_ring = i;
        self.queued.fetch_add(added, Ordering::Relaxed);
        added > 0
    }

    /// Spin-lock discipline: the lock a handler with `key` must hold.
    pub(crate) fn key_lock(&self, key: SyncKey) -> Option<MutexGuard<'_, ()>> {
        let SyncKey::Key(k) = key else { return None };
        let m = self.locks.get((k % KEY_LOCKS as u64) as usize)?;
        Some(m.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{push_message, Outgoing};
    use crate::ring::ring;
    use finegrain_core::{HandlerId, MsgKind, ThreadId};

    fn send(p: &mut crate::ring::Producer, key: SyncKey, token: u64) {
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
    fn pdq_hands_out_distinct_keys_and_holds_a_busy_one() {
        let (mut p, c) = ring(64);
        let inbox = [UnsafeCell::new(c)];
        for (t, k) in [(1, 5), (2, 5), (3, 6)] {
            send(&mut p, SyncKey::Key(k), t);
        }
        let q = KeyedQueue::new(Discipline::Pdq, 8).unwrap();
        let (mut a, mut b) = (codec::scratch_message(), codec::scratch_message());
        // SAFETY: only this test uses the consumer, through the queue.
        unsafe {
            assert_eq!(q.next(&inbox, NodeId(0), None, &mut a), Some(SyncKey::Key(5)));
            assert_eq!(a.token, 1);
            assert_eq!(q.next(&inbox, NodeId(0), None, &mut b), Some(SyncKey::Key(6)), "key 5 is busy");
            assert_eq!(q.next(&inbox, NodeId(0), Some(SyncKey::Key(6)), &mut b), None);
            assert_eq!(q.next(&inbox, NodeId(0), Some(SyncKey::Key(5)), &mut a), Some(SyncKey::Key(5)));
            assert_eq!(a.token, 2, "same key in arrival order");
        }
        assert_eq!(q.queued(), 0);
    }

    #[test]
    fn the_window_bounds_what_is_decoded() {
        let (mut p, c) = ring(64);
        let inbox = [UnsafeCell::new(c)];
        for t in 0..10 {
            send(&mut p, SyncKey::Key(1), t);
        }
        let q = KeyedQueue::new(Discipline::Pdq, 4).unwrap();
        let mut m = codec::scratch_message();
        // SAFETY: as above.
        unsafe {
            assert!(q.next(&inbox, NodeId(0), None, &mut m).is_some());
        }
        assert_eq!(q.queued(), 3, "four decoded, one taken; six wait in the ring");
    }

    #[test]
    fn static_partitioning_is_not_native() {
        let e = KeyedQueue::new(Discipline::Static, 8).err().unwrap().to_string();
        assert!(e.contains("simulated only"), "{e}");
    }
}
