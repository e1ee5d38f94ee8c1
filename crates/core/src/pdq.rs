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
use std::collections::{HashMap, VecDeque};
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

/// Keys in service and how many entries of each are handed out (more than
/// one only for a run taken with [`Pdq::dispatch_run_of`]).
type KeyHolds = HashMap<u64, u32, BuildHasherDefault<KeyHasher>>;

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
    /// Keys with an entry in service (looked up only, never iterated, so
    /// the hash order cannot leak into results).
    busy: KeyHolds,
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
            busy: KeyHolds::default(),
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
        self.busy.contains_key(&key)
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
                SyncKey::Key(k) if !self.busy.contains_key(&k) => return Some(i),
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
                self.busy.insert(k, 1);
            }
            SyncKey::NoSync => self.nosync += 1,
            SyncKey::Sequential => self.sequential = true,
        }
        Some(Dispatched { key: e.key, seq: e.seq, item: e.item })
    }

    /// For the holder of numbered key `key`: the key's next entry, if it
    /// lies in the window and no sequential entry comes before it. The
    /// holder runs it after the entries it holds, so the key's handlers
    /// still run one at a time in arrival order; taking a run in one visit
    /// saves a queue visit per handler when one key is hot. Each entry is
    /// completed on its own.
    pub fn dispatch_run_of(&mut self, key: u64) -> Option<Dispatched<E>> {
        if self.sequential || !self.busy.contains_key(&key) {
            return None;
        }
        let i = self
            .queue
            .iter()
            .take(self.window)
            .take_while(|e| e.key != SyncKey::Sequential)
            .position(|e| e.key == SyncKey::Key(key))?;
        let e = self.queue.remove(i).expect("found within the queue");
        *self.busy.get_mut(&key).expect("held") += 1;
        // The window now reaches one entry further.
        self.blocked = false;
        Some(Dispatched { key: e.key, seq: e.seq, item: e.item })
    }

    /// The handler of a dispatched entry with `key` finished.
    pub fn complete(&mut self, key: SyncKey) {
        self.blocked = false;
        match key {
            SyncKey::Key(k) => match self.busy.get_mut(&k) {
                Some(1) => {
                    self.busy.remove(&k);
                }
                Some(held) => *held -= 1,
                None => debug_assert!(false, "completion of a key not in service"),
            },
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
        /// A holder of a numbered key takes that key's next entry as a run.
        Extend(usize),
        Complete(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..5).prop_map(|k| Op::Enqueue(SyncKey::Key(k))),
            1 => Just(Op::Enqueue(SyncKey::Sequential)),
            1 => Just(Op::Enqueue(SyncKey::NoSync)),
            5 => Just(Op::Dispatch),
            2 => (0usize..8).prop_map(Op::Extend),
            4 => (0usize..8).prop_map(Op::Complete),
        ]
    }

    /// A protocol processor's hold: the key and the entries it was handed,
    /// which it runs one after another in this order.
    type Holder = (SyncKey, VecDeque<u64>);

    /// The reference for a run: the key's oldest waiting entry, if it is in
    /// the window and no sequential entry comes before it.
    fn next_of(entries: &[(SyncKey, u64)], window: usize, key: u64) -> Option<u64> {
        entries
            .iter()
            .take(window)
            .take_while(|(k, _)| *k != SyncKey::Sequential)
            .find(|(k, _)| *k == SyncKey::Key(key))
            .map(|&(_, id)| id)
    }

    struct Model {
        q: Pdq<u64>,
        window: usize,
        queued: Vec<(SyncKey, u64)>,
        holders: Vec<Holder>,
        last_started: std::collections::HashMap<u64, u64>,
    }

    impl Model {
        /// Never two holders of one key; a sequential holder is alone.
        fn check(&self) {
            let mut keys: Vec<u64> = self
                .holders
                .iter()
                .filter_map(|(k, _)| if let SyncKey::Key(x) = k { Some(*x) } else { None })
                .collect();
            let n = keys.len();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), n, "two in-service entries share a key: {:?}", self.holders);
            if self.holders.iter().any(|(k, _)| *k == SyncKey::Sequential) {
                assert_eq!(self.holders.len(), 1, "a sequential entry runs with others: {:?}", self.holders);
            }
        }

        fn started(&mut self, key: SyncKey, id: u64) {
            if let SyncKey::Key(k) = key {
                if let Some(prev) = self.last_started.insert(k, id) {
                    assert!(prev < id, "key {k} started out of arrival order");
                }
            }
            self.queued.retain(|(_, q)| *q != id);
        }

        fn dispatch(&mut self) -> bool {
            let busy: Vec<u64> = self
                .holders
                .iter()
                .filter_map(|(k, _)| if let SyncKey::Key(x) = k { Some(*x) } else { None })
                .collect();
            let nosync = self.holders.iter().filter(|(k, _)| *k == SyncKey::NoSync).count();
            let seq = self.holders.iter().any(|(k, _)| *k == SyncKey::Sequential);
            let want = eligible(&self.queued, self.window, &busy, nosync, seq);
            let got = self.q.dispatch();
            assert_eq!(got.as_ref().map(|d| d.item), want);
            let Some(d) = got else { return false };
            self.started(d.key, d.item);
            self.holders.push((d.key, VecDeque::from([d.item])));
            true
        }

        fn extend(&mut self, i: usize) {
            let Some(h) = self.holders.len().checked_sub(1).map(|last| i.min(last)) else { return };
            let SyncKey::Key(k) = self.holders[h].0 else { return };
            let want = next_of(&self.queued, self.window, k);
            let got = self.q.dispatch_run_of(k);
            assert_eq!(got.as_ref().map(|d| d.item), want, "run of key {k}");
            if let Some(d) = got {
                self.started(d.key, d.item);
                self.holders[h].1.push_back(d.item);
            }
        }

        /// Holder `i` finishes the first entry of its run.
        fn complete(&mut self, i: usize) {
            if self.holders.is_empty() {
                return;
            }
            let h = i % self.holders.len();
            let key = self.holders[h].0;
            self.holders[h].1.pop_front();
            if self.holders[h].1.is_empty() {
                self.holders.remove(h);
            }
            self.q.complete(key);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Against the reference, on random interleavings: dispatch hands out
        /// exactly the first eligible entry and a run exactly the key's next
        /// one; two processors never hold one key; a sequential entry is
        /// always alone; same-key entries start in arrival order; nosync is
        /// never refused while eligible; and draining at the end dispatches
        /// everything (no starvation, sequential entries included).
        #[test]
        fn pdq_invariants(ops in proptest::collection::vec(op(), 1..200), window in 1usize..10) {
            let mut m = Model {
                q: Pdq::new(window),
                window,
                queued: Vec::new(),
                holders: Vec::new(),
                last_started: Default::default(),
            };
            let mut next = 0u64;
            for o in ops {
                match o {
                    Op::Enqueue(k) => {
                        m.q.enqueue(k, next);
                        m.queued.push((k, next));
                        next += 1;
                    }
                    Op::Dispatch => {
                        m.dispatch();
                    }
                    Op::Extend(i) => m.extend(i),
                    Op::Complete(i) => m.complete(i),
                }
                m.check();
            }
            // Drain: complete the oldest holder's entry whenever nothing can
            // be dispatched; everything must come out in bounded steps.
            let mut guard = 0;
            while !m.queued.is_empty() || !m.holders.is_empty() {
                guard += 1;
                prop_assert!(guard < 10_000, "starvation: {:?} {:?}", m.queued, m.holders);
                if !m.dispatch() {
                    m.complete(0);
                }
                m.check();
            }
            prop_assert!(m.q.is_empty());
        }
    }
}
