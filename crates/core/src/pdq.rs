//! The Parallel Dispatch Queue (Falsafi & Wood, HPCA 1999) as a plain state
//! machine: no threads, no clocks. The simulator's protocol processors and
//! the native runtime's dispatch both drive it.
//!
//! Each entry carries a synchronization key. The queue, not the handler,
//! synchronizes:
//! - entries whose keys differ may be in service at the same time; entries
//!   with the same key are served one at a time, in arrival order;
//! - a `Sequential` entry is served alone: it is dispatched only when it is
//!   the oldest entry and nothing is in service, and nothing queued after it
//!   is dispatched until it completes;
//! - a `NoSync` entry is never held back by keys (it still respects an
//!   older sequential entry, which by definition stops all dispatch).
//!
//! Dispatch searches a bounded window of the oldest entries, as the
//! hardware's associative search engine does; an entry beyond the window
//! waits even if it could run.

use crate::message::SyncKey;
use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes a key with one multiply (Fibonacci hashing): keys are integers
/// chosen by the application, the set is probed on every dispatch, and
/// SipHash's protection against crafted keys buys nothing here.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, k: u64) {
        self.0 = (self.0 ^ k).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type KeySet = HashSet<u64, BuildHasherDefault<KeyHasher>>;

/// One queued entry.
#[derive(Clone, Debug)]
struct Queued<E> {
    key: SyncKey,
    seq: u64,
    item: E,
}

/// An entry handed to a protocol processor; give its key back to
/// [`Pdq::complete`] when the handler finishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatched<E> {
    pub key: SyncKey,
    /// Arrival order (0, 1, 2, ...), for tracing and tests.
    pub seq: u64,
    pub item: E,
}

/// Dispatch status of the queue: what is in service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InService {
    pub keyed: usize,
    pub nosync: usize,
    pub sequential: bool,
}

#[derive(Clone, Debug)]
pub struct Pdq<E> {
    queue: VecDeque<Queued<E>>,
    window: usize,
    /// Keys with an entry in service (membership only, never iterated, so
    /// the hash order cannot leak into results).
    busy: KeySet,
    nosync: usize,
    sequential: bool,
    next_seq: u64,
    /// The last search found nothing and nothing it depends on has changed
    /// since: protocol processors ask again and again while the queue is
    /// blocked, and each failed search costs a pass over the window.
    blocked: bool,
}

impl<E> Pdq<E> {
    /// A queue whose dispatch searches the `window` oldest entries (at least 1).
    pub fn new(window: usize) -> Pdq<E> {
        Pdq {
            queue: VecDeque::new(),
            window: window.max(1),
            busy: KeySet::default(),
            nosync: 0,
            sequential: false,
            next_seq: 0,
            blocked: false,
        }
    }

    pub fn window(&self) -> usize {
        self.window
    }

    pub fn enqueue(&mut self, key: SyncKey, item: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        // An entry beyond the window cannot change the search's answer.
        self.blocked &= self.queue.len() >= self.window;
        self.queue.push_back(Queued { key, seq, item });
    }

    /// Entries waiting (not yet dispatched).
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn in_service(&self) -> InService {
        InService { keyed: self.busy.len(), nosync: self.nosync, sequential: self.sequential }
    }

    /// Whether an entry with this key is in service.
    pub fn key_busy(&self, key: u64) -> bool {
        self.busy.contains(&key)
    }

    /// Position (within the window) of the oldest entry that may be
    /// dispatched now.
    fn find(&mut self) -> Option<usize> {
        if self.sequential || self.blocked {
            return None;
        }
        let found = self.search();
        self.blocked = found.is_none();
        found
    }

    fn search(&self) -> Option<usize> {
        let idle = self.busy.is_empty() && self.nosync == 0;
        // Runs of one busy key (one hot word, a block's burst of requests)
        // are skipped without probing the set again.
        let mut last_busy = None;
        for (i, e) in self.queue.iter().take(self.window).enumerate() {
            match e.key {
                SyncKey::Sequential => {
                    // Alone, and only once everything older has gone.
                    return (i == 0 && idle).then_some(0);
                }
                SyncKey::NoSync => return Some(i),
                // An older entry with the same key is either dispatchable
                // (and found first) or waiting for its key, so a busy check
                // alone keeps each key's entries in arrival order.
                SyncKey::Key(k) if last_busy == Some(k) => {}
                SyncKey::Key(k) if !self.busy.contains(&k) => return Some(i),
                SyncKey::Key(k) => last_busy = Some(k),
            }
        }
        None
    }

    /// Whether some entry may be dispatched now.
    pub fn dispatchable(&mut self) -> bool {
        self.find().is_some()
    }

    /// Hands out the oldest entry that may run now, marking its key busy.
    pub fn dispatch(&mut self) -> Option<Dispatched<E>> {
        let i = self.find()?;
        let e = self.queue.remove(i).expect("found within the queue");
        match e.key {
            SyncKey::Key(k) => {
                self.busy.insert(k);
            }
            SyncKey::NoSync => self.nosync += 1,
            SyncKey::Sequential => self.sequential = true,
        }
        Some(Dispatched { key: e.key, seq: e.seq, item: e.item })
    }

    /// The handler of a dispatched entry with `key` finished.
    pub fn complete(&mut self, key: SyncKey) {
        self.blocked = false;
        match key {
            SyncKey::Key(k) => {
                let was = self.busy.remove(&k);
                debug_assert!(was, "completion of a key not in service");
            }
            SyncKey::NoSync => {
                debug_assert!(self.nosync > 0, "completion of a nosync entry not in service");
                self.nosync = self.nosync.saturating_sub(1);
            }
            SyncKey::Sequential => {
                debug_assert!(self.sequential, "completion of a sequential entry not in service");
                self.sequential = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn distinct_keys_run_together_same_keys_in_order() {
        let mut q = Pdq::new(8);
        q.enqueue(SyncKey::Key(1), "a1");
        q.enqueue(SyncKey::Key(1), "a2");
        q.enqueue(SyncKey::Key(2), "b1");
        let d1 = q.dispatch().unwrap();
        assert_eq!(d1.item, "a1");
        let d2 = q.dispatch().unwrap();
        assert_eq!(d2.item, "b1", "a2 waits behind a1; b1 passes it");
        assert!(q.dispatch().is_none());
        q.complete(d1.key);
        assert_eq!(q.dispatch().unwrap().item, "a2");
    }

    #[test]
    fn sequential_runs_alone_and_stops_what_follows() {
        let mut q = Pdq::new(8);
        q.enqueue(SyncKey::Key(1), 1);
        q.enqueue(SyncKey::Sequential, 2);
        q.enqueue(SyncKey::Key(3), 3);
        q.enqueue(SyncKey::NoSync, 4);
        let a = q.dispatch().unwrap();
        assert_eq!(a.item, 1);
        assert!(q.dispatch().is_none(), "the sequential entry waits for key 1; nothing passes it");
        q.complete(a.key);
        let s = q.dispatch().unwrap();
        assert_eq!(s.item, 2);
        assert!(q.dispatch().is_none(), "nothing runs beside a sequential entry");
        q.complete(s.key);
        assert_eq!(q.dispatch().unwrap().item, 3);
        assert_eq!(q.dispatch().unwrap().item, 4);
    }

    #[test]
    fn nosync_is_not_held_back_by_keys() {
        let mut q = Pdq::new(8);
        q.enqueue(SyncKey::Key(7), 1);
        q.enqueue(SyncKey::Key(7), 2);
        q.enqueue(SyncKey::NoSync, 3);
        q.enqueue(SyncKey::NoSync, 4);
        assert_eq!(q.dispatch().unwrap().item, 1);
        assert_eq!(q.dispatch().unwrap().item, 3);
        assert_eq!(q.dispatch().unwrap().item, 4);
        assert_eq!(q.in_service(), InService { keyed: 1, nosync: 2, sequential: false });
    }

    #[test]
    fn the_window_bounds_the_search() {
        let mut q = Pdq::new(2);
        q.enqueue(SyncKey::Key(1), 1);
        q.enqueue(SyncKey::Key(1), 2);
        q.enqueue(SyncKey::Key(1), 3);
        q.enqueue(SyncKey::Key(2), 4);
        assert_eq!(q.dispatch().unwrap().item, 1);
        assert!(q.dispatch().is_none(), "entry 4 could run but lies beyond the window of 2 waiting entries");
        let mut wide = Pdq::new(3);
        for (k, i) in [(1, 1), (1, 2), (1, 3), (2, 4)] {
            wide.enqueue(SyncKey::Key(k), i);
        }
        wide.dispatch();
        assert_eq!(wide.dispatch().unwrap().item, 4);
    }

    /// A reference: which queued entries are eligible, by the definition.
    fn eligible(entries: &[(SyncKey, u64)], window: usize, busy: &[u64], nosync: usize, seq: bool) -> Option<u64> {
        if seq {
            return None;
        }
        for (i, (key, id)) in entries.iter().enumerate().take(window) {
            let earlier = &entries[..i];
            let ok = match key {
                SyncKey::Sequential => i == 0 && busy.is_empty() && nosync == 0,
                SyncKey::NoSync => true,
                SyncKey::Key(k) => !busy.contains(k) && !earlier.iter().any(|(e, _)| e == key),
            };
            if ok {
                return Some(*id);
            }
            if *key == SyncKey::Sequential {
                return None;
            }
        }
        None
    }

    #[derive(Clone, Debug)]
    enum Op {
        Enqueue(SyncKey),
        Dispatch,
        Complete(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..5).prop_map(|k| Op::Enqueue(SyncKey::Key(k))),
            1 => Just(Op::Enqueue(SyncKey::Sequential)),
            1 => Just(Op::Enqueue(SyncKey::NoSync)),
            5 => Just(Op::Dispatch),
            4 => (0usize..8).prop_map(Op::Complete),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Against the reference, on random interleavings: dispatch hands out
        /// exactly the first eligible entry; two entries with one key are never
        /// in service together; a sequential entry is always alone; same-key
        /// entries start in arrival order; nosync is never refused while
        /// eligible; and draining at the end dispatches everything (no
        /// starvation, sequential entries included).
        #[test]
        fn pdq_invariants(ops in proptest::collection::vec(op(), 1..200), window in 1usize..10) {
            let mut q: Pdq<u64> = Pdq::new(window);
            let mut queued: Vec<(SyncKey, u64)> = Vec::new();
            let mut running: Vec<(SyncKey, u64)> = Vec::new();
            let mut last_started: std::collections::HashMap<u64, u64> = Default::default();
            let mut next = 0u64;
            let check_running = |running: &Vec<(SyncKey, u64)>| {
                let keys: Vec<u64> = running.iter().filter_map(|(k, _)| if let SyncKey::Key(x) = k { Some(*x) } else { None }).collect();
                let mut dedup = keys.clone();
                dedup.sort();
                dedup.dedup();
                assert_eq!(dedup.len(), keys.len(), "two in-service entries share a key: {running:?}");
                if running.iter().any(|(k, _)| *k == SyncKey::Sequential) {
                    assert_eq!(running.len(), 1, "a sequential entry runs with others: {running:?}");
                }
            };
            let mut step = |q: &mut Pdq<u64>, queued: &mut Vec<(SyncKey, u64)>, running: &mut Vec<(SyncKey, u64)>| -> bool {
                let busy: Vec<u64> = running.iter().filter_map(|(k, _)| if let SyncKey::Key(x) = k { Some(*x) } else { None }).collect();
                let nosync = running.iter().filter(|(k, _)| *k == SyncKey::NoSync).count();
                let seq = running.iter().any(|(k, _)| *k == SyncKey::Sequential);
                let want = eligible(queued, window, &busy, nosync, seq);
                let got = q.dispatch();
                assert_eq!(got.as_ref().map(|d| d.item), want);
                if let Some(d) = got {
                    if let SyncKey::Key(k) = d.key {
                        if let Some(prev) = last_started.insert(k, d.item) {
                            assert!(prev < d.item, "key {k} started out of arrival order");
                        }
                    }
                    queued.retain(|(_, id)| *id != d.item);
                    running.push((d.key, d.item));
                    true
                } else {
                    false
                }
            };
            for o in ops {
                match o {
                    Op::Enqueue(k) => {
                        q.enqueue(k, next);
                        queued.push((k, next));
                        next += 1;
                    }
                    Op::Dispatch => {
                        step(&mut q, &mut queued, &mut running);
                    }
                    Op::Complete(i) => {
                        if !running.is_empty() {
                            let (k, _) = running.remove(i % running.len());
                            q.complete(k);
                        }
                    }
                }
                check_running(&running);
            }
            // Drain: complete the oldest running entry whenever nothing can
            // be dispatched; everything must come out in bounded steps.
            let mut guard = 0;
            while !queued.is_empty() || !running.is_empty() {
                guard += 1;
                prop_assert!(guard < 10_000, "starvation: {queued:?} {running:?}");
                if !step(&mut q, &mut queued, &mut running) {
                    let (k, _) = running.remove(0);
                    q.complete(k);
                }
                check_running(&running);
            }
            prop_assert!(q.is_empty());
        }
    }
}
