//! A node's incoming-message queue under each dispatch discipline, and the
//! per-key locks of the spin-lock discipline.
//!
//! The queue holds message slots; who may take the next one is what the
//! disciplines differ in:
//! - serial and spin-lock: one FIFO, taken in arrival order by whoever
//!   serves (one server under serial; under spin-lock the handlers then lock
//!   their key themselves);
//! - PDQ: the core [`Pdq`] state machine hands out the oldest entry whose
//!   key is free, within the device's search window (with the device's key
//!   affinity, the oldest such entry of a key the asking processor took last
//!   or nobody took yet, if there is one);
//! - static partitioning: one FIFO per protocol processor, chosen by key.

use finegrain_core::pdq::{NotInService, Pdq};
use finegrain_core::{Discipline, KeyMap, SyncKey};
use std::collections::VecDeque;

pub(crate) enum NodeQueue {
    Fifo(VecDeque<u32>),
    Pdq {
        queue: Pdq<u32>,
        /// With affinity: the processor that last took each key (looked up
        /// only, never iterated, so the hash order cannot leak into
        /// results).
        last_server: Option<KeyMap<usize>>,
        /// With affinity: how often the oldest entry may be passed over.
        max_passes: u32,
    },
    Partitioned {
        queues: Vec<VecDeque<u32>>,
        /// `NoSync` entries have no key to hash: they go round-robin.
        next_nosync: usize,
    },
}

impl NodeQueue {
    /// `servers` is the number of protocol processors (static partitioning
    /// gives each its own queue); `window` the PDQ search window;
    /// `affinity_passes` (0: none) how often PDQ may pass its oldest
    /// dispatchable entry over for a key the asking processor took last.
    pub(crate) fn new(discipline: Discipline, servers: usize, window: usize, affinity_passes: u32) -> NodeQueue {
        match discipline {
            Discipline::Serial | Discipline::SpinLock => NodeQueue::Fifo(VecDeque::new()),
            Discipline::Pdq => NodeQueue::Pdq {
                queue: Pdq::new(window),
                last_server: (affinity_passes > 0).then(KeyMap::default),
                max_passes: affinity_passes,
            },
            Discipline::Static => {
                NodeQueue::Partitioned { queues: vec![VecDeque::new(); servers.max(1)], next_nosync: 0 }
            }
        }
    }

    /// Queues a message slot. Static partitioning sends a numbered key to
    /// queue `key mod servers`, as address-interleaved hardware would; the
    /// engine refuses sequential keys under it before they get here.
    pub(crate) fn push(&mut self, key: SyncKey, slot: u32) {
        match self {
            NodeQueue::Fifo(q) => q.push_back(slot),
            NodeQueue::Pdq { queue, .. } => queue.enqueue(key, slot),
            NodeQueue::Partitioned { queues, next_nosync } => {
                let n = queues.len();
                let i = match key {
                    SyncKey::Key(k) => (k % n as u64) as usize,
                    SyncKey::NoSync | SyncKey::Sequential => {
                        *next_nosync = (*next_nosync + 1) % n;
                        *next_nosync
                    }
                };
                queues[i].push_back(slot);
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            NodeQueue::Fifo(q) => q.len(),
            NodeQueue::Pdq { queue, .. } => queue.len(),
            NodeQueue::Partitioned { queues, .. } => queues.iter().map(VecDeque::len).sum(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry protocol processor number `server` (its node-local
    /// processor index `local`) may run now: its message slot and its PDQ
    /// sequence number (0 under the disciplines that do not track entries),
    /// which its completion names. Static partitioning numbers the
    /// dedicated processors' queues; key affinity remembers processors,
    /// which under Mult serve without a queue of their own.
    pub(crate) fn take(&mut self, server: usize, local: usize) -> Option<(u32, u64)> {
        match self {
            NodeQueue::Fifo(q) => q.pop_front().map(|slot| (slot, 0)),
            NodeQueue::Pdq { queue, last_server: None, .. } => queue.dispatch().map(|d| (d.item, d.seq)),
            NodeQueue::Pdq { queue, last_server: Some(last), max_passes } => {
                // A key nobody has served yet is anyone's.
                let d = queue.dispatch_preferring(*max_passes, |k| last.get(&k).is_none_or(|&s| s == local))?;
                if let SyncKey::Key(k) = d.key {
                    last.insert(k, local);
                }
                Some((d.item, d.seq))
            }
            NodeQueue::Partitioned { queues, .. } => queues.get_mut(server)?.pop_front().map(|slot| (slot, 0)),
        }
    }

    /// Whether some server could take an entry now.
    pub(crate) fn any_ready(&mut self) -> bool {
        match self {
            NodeQueue::Fifo(q) => !q.is_empty(),
            NodeQueue::Pdq { queue, .. } => queue.dispatchable(),
            NodeQueue::Partitioned { queues, .. } => queues.iter().any(|q| !q.is_empty()),
        }
    }

    /// Whether server `server` in particular could take an entry now.
    pub(crate) fn ready_for(&mut self, server: usize) -> bool {
        match self {
            NodeQueue::Partitioned { queues, .. } => queues.get(server).is_some_and(|q| !q.is_empty()),
            _ => self.any_ready(),
        }
    }

    /// Servers with their own queue (static partitioning), else 0.
    pub(crate) fn partitions(&self) -> usize {
        match self {
            NodeQueue::Partitioned { queues, .. } => queues.len(),
            _ => 0,
        }
    }

    /// The handler of the entry with `key` and sequence number `seq` (from
    /// [`NodeQueue::take`]) finished (only PDQ tracks entries).
    pub(crate) fn complete(&mut self, key: SyncKey, seq: u64) -> Result<(), NotInService> {
        match self {
            NodeQueue::Pdq { queue, .. } => queue.complete(key, seq),
            _ => Ok(()),
        }
    }
}

/// Spin-lock discipline: when each key's lock is next free. Handler
/// timelines are worked out when they start, so a lock is a calendar: the
/// next handler of a key acquires it at the later of its attempt and the
/// holder's release, in dispatch order (a ticket lock). The releases still
/// to come are kept: a waiter watches each of them go by.
#[derive(Default)]
pub(crate) struct KeyLocks {
    /// Membership and lookup only, never iterated, so the hash order cannot
    /// leak into results.
    releases: KeyMap<VecDeque<Release>>,
}

/// A release still to come: when, and whether a waiter's cache holds a
/// copy of the lock line by then (its store is then an upgrade).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Release {
    at: u64,
    shared: bool,
}

/// A release a waiter watches go by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Watched {
    pub at: u64,
    /// The first waiter with a cached copy to watch it: the releasing
    /// store has to invalidate that copy (charged once, however many wait).
    pub first_sharer: bool,
}

impl KeyLocks {
    /// When a handler that tries to take `key`'s lock at `t` (not before
    /// `now`) gets it, and the releases it watches while it waits, the last
    /// being the one that lets it in. `cached`: the waiter spins on a
    /// cached copy of the lock line (not a cacheless processor's polls).
    pub(crate) fn acquire_at(&mut self, key: u64, now: u64, t: u64, cached: bool) -> (u64, Vec<Watched>) {
        let Some(pending) = self.releases.get_mut(&key) else { return (t, Vec::new()) };
        // Releases already past concern no later attempt.
        while pending.front().is_some_and(|r| r.at <= now) {
            pending.pop_front();
        }
        let mut watched = Vec::new();
        for r in pending.iter_mut().filter(|r| r.at > t) {
            watched.push(Watched { at: r.at, first_sharer: cached && !r.shared });
            r.shared |= cached;
        }
        (watched.last().map_or(t, |w| w.at), watched)
    }

    pub(crate) fn release(&mut self, key: u64, t: u64) {
        self.releases.entry(key).or_default().push_back(Release { at: t, shared: false });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_partitioning_routes_by_key() {
        let mut q = NodeQueue::new(Discipline::Static, 4, 8, 0);
        for k in 0..8u64 {
            q.push(SyncKey::Key(k), k as u32);
        }
        assert_eq!(q.take(1, 5), Some((1, 0)));
        assert_eq!(q.take(1, 5), Some((5, 0)));
        assert_eq!(q.take(1, 5), None, "queue 1 holds keys 1 and 5 only");
        assert!(q.ready_for(2) && !q.ready_for(1));
        assert_eq!(q.len(), 6);
    }

    #[test]
    fn pdq_queue_holds_a_busy_key_back() {
        let mut q = NodeQueue::new(Discipline::Pdq, 2, 8, 0);
        q.push(SyncKey::Key(7), 0);
        q.push(SyncKey::Key(7), 1);
        assert_eq!(q.take(0, 4), Some((0, 0)));
        assert!(!q.any_ready());
        assert!(q.complete(SyncKey::Key(7), 1).is_err(), "entry 1 is not in service");
        q.complete(SyncKey::Key(7), 0).unwrap();
        assert_eq!(q.take(1, 5), Some((1, 1)));
    }

    #[test]
    fn affinity_hands_a_processor_the_key_it_served_last() {
        for passes in [0, 4] {
            let affinity = passes > 0;
            let mut q = NodeQueue::new(Discipline::Pdq, 2, 8, passes);
            q.push(SyncKey::Key(2), 0);
            q.push(SyncKey::Key(1), 1);
            assert_eq!(q.take(0, 5), Some((0, 0)), "processor 5 serves key 2");
            assert_eq!(q.take(0, 4), Some((1, 1)), "processor 4 serves key 1");
            q.complete(SyncKey::Key(2), 0).unwrap();
            q.complete(SyncKey::Key(1), 1).unwrap();
            q.push(SyncKey::Key(2), 2);
            q.push(SyncKey::Key(1), 3);
            q.push(SyncKey::Key(9), 4);
            let want = if affinity { (3, 3) } else { (2, 2) };
            assert_eq!(q.take(0, 4), Some(want), "affinity {affinity}: key 1 again, past key 2");
            let want = if affinity { (4, 4) } else { (3, 3) };
            assert_eq!(q.take(0, 6), Some(want), "affinity {affinity}: key 9, nobody's yet, past key 2");
        }
    }

    #[test]
    fn locks_queue_in_dispatch_order() {
        let mut l = KeyLocks::default();
        let at = |(t, w): (u64, Vec<Watched>)| (t, w.iter().map(|w| w.at).collect::<Vec<_>>());
        assert_eq!(at(l.acquire_at(3, 100, 100, true)), (100, vec![]));
        l.release(3, 250);
        assert_eq!(at(l.acquire_at(3, 110, 120, true)), (250, vec![250]), "waits for the holder");
        l.release(3, 400);
        assert_eq!(at(l.acquire_at(3, 120, 130, true)), (400, vec![250, 400]), "a ticket lock: behind both holders");
        assert_eq!(at(l.acquire_at(3, 300, 300, true)), (400, vec![400]), "the first release is past");
        assert_eq!(at(l.acquire_at(3, 300, 450, true)), (450, vec![]));
        assert_eq!(at(l.acquire_at(4, 120, 120, true)), (120, vec![]), "other keys are free");
    }

    #[test]
    fn a_release_invalidates_the_waiters_copies_once() {
        let mut l = KeyLocks::default();
        l.release(5, 200);
        l.release(5, 300);
        let firsts = |w: Vec<Watched>| w.iter().map(|w| w.first_sharer).collect::<Vec<_>>();
        assert_eq!(firsts(l.acquire_at(5, 0, 10, false).1), vec![false, false], "a cacheless poller shares nothing");
        assert_eq!(firsts(l.acquire_at(5, 0, 20, true).1), vec![true, true]);
        assert_eq!(firsts(l.acquire_at(5, 0, 250, true).1), vec![false], "the second release already invalidates");
    }
}
