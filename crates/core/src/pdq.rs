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
//!
//! Completion is exact: it names the dispatched entry (its key and arrival
//! sequence number), so a completion too many, or of an entry not in
//! service, is refused without changing the queue. Counting completions per
//! key could not tell a handler's second completion from its run-mate's
//! first, and would free a key another handler still holds.

use crate::keymap::KeyMap;
use crate::message::SyncKey;
use std::collections::VecDeque;

/// Most entries one [`Pdq::dispatch_batch`] call hands out.
pub const MAX_BATCH: usize = 32;

/// Keys in service, each with the sequence number of its entry to complete
/// next (the oldest of a run taken with [`Pdq::dispatch_batch`]).
type KeyHolds = KeyMap<u64>;

/// A run's later entries: each run entry's sequence number to the next's.
type RunLinks = KeyMap<u64>;

/// One queued entry.
#[derive(Clone, Debug)]
struct Queued<E> {
    key: SyncKey,
    seq: u64,
    item: E,
    /// Times a preferring dispatch passed it over while it was the oldest
    /// dispatchable entry.
    passes: u32,
}

/// An entry handed to a protocol processor; give its key and sequence
/// number back to [`Pdq::complete`] when the handler finishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatched<E> {
    pub key: SyncKey,
    /// Arrival order (0, 1, 2, ...): names the entry to [`Pdq::complete`].
    pub seq: u64,
    pub item: E,
}

/// Dispatch status of the queue: what is in service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InService {
    /// Numbered keys in service (a run of one key's entries counts once).
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
    /// Links of the runs in service (empty unless batches take runs).
    runs: RunLinks,
    /// Sequence numbers of the nosync entries in service: a few (one per
    /// serving processor, or a batch's), so a scan beats hashing.
    nosync: Vec<u64>,
    /// The sequential entry in service.
    sequential: Option<u64>,
    next_seq: u64,
    /// The last search found nothing and nothing it depends on has changed
    /// since: protocol processors ask again and again while the queue is
    /// blocked, and each failed search costs a pass over the window.
    blocked: bool,
    /// The last search (or batch) found an entry that may run, and nothing
    /// has been taken since: enqueues and completions only add to what may
    /// run, so the answer stands until the next dispatch.
    ready: bool,
}

impl<E> Pdq<E> {
    /// A queue whose dispatch searches the `window` oldest entries (at least 1).
    pub fn new(window: usize) -> Pdq<E> {
        Pdq {
            queue: VecDeque::new(),
            window: window.max(1),
            busy: KeyHolds::default(),
            runs: RunLinks::default(),
            nosync: Vec::new(),
            sequential: None,
            next_seq: 0,
            blocked: false,
            ready: false,
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
        self.queue.push_back(Queued { key, seq, item, passes: 0 });
    }

    /// Entries waiting (not yet dispatched).
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn in_service(&self) -> InService {
        InService { keyed: self.busy.len(), nosync: self.nosync.len(), sequential: self.sequential.is_some() }
    }

    /// Whether an entry with this key is in service.
    pub fn key_busy(&self, key: u64) -> bool {
        self.busy.contains_key(&key)
    }

    /// Position (within the window) of the oldest entry that may be
    /// dispatched now.
    fn find(&mut self) -> Option<usize> {
        if self.sequential.is_some() || self.blocked {
            return None;
        }
        let found = self.search(0);
        self.blocked = found.is_none();
        self.ready = found.is_some();
        found
    }

    /// Position of the oldest entry at or after window position `from`
    /// that may be dispatched now.
    fn search(&self, from: usize) -> Option<usize> {
        let idle = self.busy.is_empty() && self.nosync.is_empty();
        // Runs of one busy key (one hot word, a block's burst of requests)
        // are skipped without probing the set again.
        let mut last_busy = None;
        for (i, e) in self.queue.iter().take(self.window).enumerate().skip(from) {
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
        self.ready || self.find().is_some()
    }

    /// Hands out the oldest entry that may run now, marking its key busy.
    pub fn dispatch(&mut self) -> Option<Dispatched<E>> {
        let i = self.find()?;
        Some(self.take_at(i))
    }

    /// Like [`Pdq::dispatch`], but hands out the oldest dispatchable entry
    /// whose key `prefer` accepts when there is one before the first
    /// nosync or sequential entry of the window, else the oldest
    /// dispatchable entry. A dispatch device with affinity passes "keys
    /// this processor served last", so a key's state stays in one cache.
    /// Preferring by key keeps each key's entries in arrival order (a
    /// key's older entry is preferred whenever its younger one would be),
    /// and nothing passes a sequential or nosync entry that plain dispatch
    /// would not pass. The oldest dispatchable entry is passed over at most
    /// `max_passes` times, then handed out whoever asks: its own processor
    /// may be busy for long, or gone back to its computation.
    pub fn dispatch_preferring(&mut self, max_passes: u32, prefer: impl Fn(u64) -> bool) -> Option<Dispatched<E>> {
        let first = self.find()?;
        let head = &self.queue[first];
        let i = match head.key {
            SyncKey::Key(k) if !prefer(k) && head.passes < max_passes => {
                match self.search_preferred(first + 1, prefer) {
                    Some(i) => {
                        self.queue[first].passes += 1;
                        i
                    }
                    None => first,
                }
            }
            _ => first,
        };
        Some(self.take_at(i))
    }

    /// Position of the oldest dispatchable keyed entry at or after window
    /// position `from` whose key `prefer` accepts, stopping at the first
    /// nosync or sequential entry.
    fn search_preferred(&self, from: usize, prefer: impl Fn(u64) -> bool) -> Option<usize> {
        let mut last_busy = None;
        for (i, e) in self.queue.iter().take(self.window).enumerate().skip(from) {
            match e.key {
                SyncKey::Sequential | SyncKey::NoSync => return None,
                SyncKey::Key(k) if last_busy == Some(k) => {}
                SyncKey::Key(k) if self.busy.contains_key(&k) => last_busy = Some(k),
                SyncKey::Key(k) if prefer(k) => return Some(i),
                SyncKey::Key(_) => {}
            }
        }
        None
    }

    /// Takes the dispatchable entry at window position `i` into service.
    fn take_at(&mut self, i: usize) -> Dispatched<E> {
        let e = self.queue.remove(i).expect("found within the queue");
        self.ready = false;
        match e.key {
            SyncKey::Key(k) => {
                self.busy.insert(k, e.seq);
            }
            SyncKey::NoSync => self.nosync.push(e.seq),
            SyncKey::Sequential => self.sequential = Some(e.seq),
        }
        Dispatched { key: e.key, seq: e.seq, item: e.item }
    }

    /// Hands out up to `max` entries in one pass over the window, oldest
    /// first, to one protocol processor that runs them in the order given.
    /// Each is an entry [`Pdq::dispatch`] would hand out, or the next entry
    /// of a key taken earlier in the same call (a run: the processor runs
    /// the key's entries one after another, so they still run one at a time
    /// in arrival order). Repeated `dispatch` calls would rescan the blocked
    /// entries at the head of the window each time, and a hot key would cost
    /// one call per entry. `max` is capped at [`MAX_BATCH`]. Returns how many
    /// were handed out; each is completed on its own, a run's in the order
    /// given.
    pub fn dispatch_batch(&mut self, max: usize, mut out: impl FnMut(Dispatched<E>)) -> usize {
        let max = max.min(MAX_BATCH);
        if self.sequential.is_some() || self.blocked || max == 0 {
            return 0;
        }
        // Keys taken in this call, each with its run's last entry so far.
        let mut mine = [(0u64, 0u64); MAX_BATCH];
        let mut held = 0;
        let mut taken = 0;
        let mut i = 0;
        while taken < max && i < self.window.min(self.queue.len()) {
            let seq = self.queue[i].seq;
            let take = match self.queue[i].key {
                SyncKey::Sequential => {
                    let alone = i == 0 && taken == 0 && self.busy.is_empty() && self.nosync.is_empty();
                    if !alone {
                        break;
                    }
                    self.sequential = Some(seq);
                    true
                }
                SyncKey::NoSync => {
                    self.nosync.push(seq);
                    true
                }
                SyncKey::Key(k) => match mine[..held].iter_mut().find(|(m, _)| *m == k) {
                    Some((_, last)) => {
                        self.runs.insert(*last, seq);
                        *last = seq;
                        true
                    }
                    None if !self.busy.contains_key(&k) => {
                        self.busy.insert(k, seq);
                        mine[held] = (k, seq);
                        held += 1;
                        true
                    }
                    None => false,
                },
            };
            if !take {
                i += 1;
                continue;
            }
            // Removing shifts the window by one, as a dispatch does.
            let e = self.queue.remove(i).expect("within the queue");
            out(Dispatched { key: e.key, seq: e.seq, item: e.item });
            taken += 1;
            if e.key == SyncKey::Sequential {
                break;
            }
        }
        // Whether anything is left for another processor: go on from
        // where the batch stopped (what it passed cannot have become
        // eligible, since the batch only made keys busier).
        let more = taken > 0 && self.sequential.is_none() && self.search(i).is_some();
        self.blocked = !more;
        self.ready = more;
        taken
    }

    /// The handler of the dispatched entry with `key` and sequence number
    /// `seq` (from its [`Dispatched`]) finished. A completion of an entry
    /// not in service (a completion too many, a wrong key or number), or of
    /// a run's entry before the ones handed out ahead of it, changes nothing
    /// and is refused: accepting it would free a key a handler still holds.
    pub fn complete(&mut self, key: SyncKey, seq: u64) -> Result<(), NotInService> {
        let done = match key {
            SyncKey::Key(k) => match self.busy.get_mut(&k) {
                Some(next) if *next == seq => {
                    // Most holds are single entries: skip the run lookup.
                    match if self.runs.is_empty() { None } else { self.runs.remove(&seq) } {
                        Some(after) => *next = after,
                        None => {
                            self.busy.remove(&k);
                        }
                    }
                    true
                }
                _ => false,
            },
            SyncKey::NoSync => match self.nosync.iter().position(|&s| s == seq) {
                Some(i) => {
                    self.nosync.swap_remove(i);
                    true
                }
                None => false,
            },
            SyncKey::Sequential if self.sequential == Some(seq) => {
                self.sequential = None;
                true
            }
            SyncKey::Sequential => false,
        };
        if !done {
            return Err(NotInService { key, seq });
        }
        self.blocked = false;
        Ok(())
    }
}

/// [`Pdq::complete`] of an entry that is not in service, or not next in its
/// key's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("PDQ completion of entry {seq} with key {key:?}, which is not in service or not next in its run (each dispatched entry completes once, a run's in the order handed out)")]
pub struct NotInService {
    pub key: SyncKey,
    pub seq: u64,
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
        q.complete(d1.key, d1.seq).unwrap();
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
        q.complete(a.key, a.seq).unwrap();
        let s = q.dispatch().unwrap();
        assert_eq!(s.item, 2);
        assert!(q.dispatch().is_none(), "nothing runs beside a sequential entry");
        q.complete(s.key, s.seq).unwrap();
        assert_eq!(q.dispatch().unwrap().item, 3);
        assert_eq!(q.dispatch().unwrap().item, 4);
    }

    #[test]
    fn a_completion_too_many_is_refused_and_changes_nothing() {
        let mut q = Pdq::new(8);
        q.enqueue(SyncKey::Key(1), "a1");
        q.enqueue(SyncKey::Key(1), "a2");
        let a1 = q.dispatch().unwrap();
        q.complete(a1.key, a1.seq).unwrap();
        let a2 = q.dispatch().unwrap();
        q.complete(a2.key, a2.seq).unwrap();
        for key in [SyncKey::Key(1), SyncKey::Key(9), SyncKey::NoSync, SyncKey::Sequential] {
            assert_eq!(q.complete(key, a2.seq), Err(NotInService { key, seq: a2.seq }), "{key:?} is not in service");
        }
        assert_eq!(q.in_service(), InService::default());
        q.enqueue(SyncKey::Key(1), "a3");
        q.enqueue(SyncKey::Key(1), "a4");
        assert_eq!(q.dispatch().unwrap().item, "a3");
        assert!(q.dispatch().is_none(), "the refused completions freed nothing");
    }

    /// The audit's case: a batch hands out a run of one key (entries 0 and
    /// 1); completing entry 0 twice used to be accepted, freeing the key
    /// while entry 1 still ran, so entry 2 was dispatched beside it.
    #[test]
    fn completion_names_the_entry_so_a_run_member_cannot_be_completed_twice() {
        let mut q = Pdq::new(8);
        for item in 0..3 {
            q.enqueue(SyncKey::Key(1), item);
        }
        let mut run = Vec::new();
        assert_eq!(q.dispatch_batch(2, |d| run.push(d)), 2);
        let (e0, e1) = (run[0].clone(), run[1].clone());
        assert_eq!((e0.item, e1.item), (0, 1));
        assert_eq!(q.complete(e1.key, e1.seq), Err(NotInService { key: e1.key, seq: e1.seq }), "out of run order");
        q.complete(e0.key, e0.seq).unwrap();
        assert_eq!(q.complete(e0.key, e0.seq), Err(NotInService { key: e0.key, seq: e0.seq }), "completed twice");
        assert_eq!(q.complete(SyncKey::Key(2), e1.seq), Err(NotInService { key: SyncKey::Key(2), seq: e1.seq }));
        assert!(q.dispatch().is_none(), "entry 1 of key 1 still runs");
        assert_eq!(q.in_service(), InService { keyed: 1, nosync: 0, sequential: false });
        q.complete(e1.key, e1.seq).unwrap();
        assert_eq!(q.dispatch().unwrap().item, 2);
    }

    /// Nosync and sequential entries are named too: one nosync entry's
    /// second completion does not stand in for another's still running.
    #[test]
    fn nosync_and_sequential_completions_are_exact() {
        let mut q = Pdq::new(8);
        q.enqueue(SyncKey::NoSync, "n1");
        q.enqueue(SyncKey::NoSync, "n2");
        q.enqueue(SyncKey::Sequential, "s");
        let (n1, n2) = (q.dispatch().unwrap(), q.dispatch().unwrap());
        q.complete(n1.key, n1.seq).unwrap();
        assert!(q.complete(n1.key, n1.seq).is_err(), "n1 completed twice");
        assert!(q.dispatch().is_none(), "the sequential entry waits for n2");
        q.complete(n2.key, n2.seq).unwrap();
        let s = q.dispatch().unwrap();
        assert!(q.complete(SyncKey::Sequential, s.seq + 1).is_err(), "another entry's number");
        assert!(q.complete(SyncKey::NoSync, s.seq).is_err(), "the sequential entry under another key");
        assert_eq!(q.in_service(), InService { keyed: 0, nosync: 0, sequential: true });
        q.complete(s.key, s.seq).unwrap();
        assert_eq!(q.in_service(), InService::default());
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

    /// A reference for [`Pdq::dispatch_preferring`]: the first eligible
    /// entry, unless it is keyed, not preferred and passed over fewer than
    /// `max_passes` times (`passes`), and a preferred eligible keyed entry
    /// follows it before any nosync or sequential entry. Returns the pick
    /// and whether it passed the first eligible entry over.
    fn eligible_preferring(
        entries: &[(SyncKey, u64)],
        window: usize,
        (busy, nosync, seq): (&[u64], usize, bool),
        (passes, max_passes): (u32, u32),
        prefer: impl Fn(u64) -> bool,
    ) -> Option<(u64, bool)> {
        let first = eligible(entries, window, busy, nosync, seq)?;
        let at = entries.iter().position(|(_, id)| *id == first).expect("eligible entries are queued");
        if !matches!(entries[at].0, SyncKey::Key(k) if !prefer(k)) || passes >= max_passes {
            return Some((first, false));
        }
        for (i, (key, id)) in entries.iter().enumerate().take(window).skip(at + 1) {
            let SyncKey::Key(k) = *key else { break };
            let earlier = &entries[..i];
            if prefer(k) && !busy.contains(&k) && !earlier.iter().any(|(e, _)| e == key) {
                return Some((*id, true));
            }
        }
        Some((first, false))
    }

    #[test]
    fn preferring_takes_a_younger_entry_of_a_preferred_key_but_passes_no_nosync() {
        let mut q = Pdq::new(8);
        for (k, i) in [(SyncKey::Key(1), 1), (SyncKey::Key(2), 2), (SyncKey::Key(2), 3), (SyncKey::NoSync, 4)] {
            q.enqueue(k, i);
        }
        q.enqueue(SyncKey::Key(3), 5);
        assert_eq!(q.dispatch_preferring(9, |k| k == 2).unwrap().item, 2, "key 2's oldest entry, past key 1");
        assert_eq!(q.dispatch_preferring(9, |k| k == 2).unwrap().item, 1, "key 2 is busy: the oldest again");
        assert_eq!(q.dispatch_preferring(9, |k| k == 3).unwrap().item, 4, "key 3 lies past a nosync entry");
        assert_eq!(q.dispatch_preferring(9, |_| false).unwrap().item, 5);
    }

    #[test]
    fn preferring_passes_the_oldest_entry_over_a_bounded_number_of_times() {
        let mut q = Pdq::new(8);
        for k in 1..=5 {
            q.enqueue(SyncKey::Key(k), k);
        }
        let others = |k| k != 1;
        assert_eq!(q.dispatch_preferring(2, others).unwrap().item, 2);
        assert_eq!(q.dispatch_preferring(2, others).unwrap().item, 3);
        assert_eq!(q.dispatch_preferring(2, others).unwrap().item, 1, "passed over twice: its turn");
        assert_eq!(q.dispatch_preferring(0, |k| k == 5).unwrap().item, 4, "no passes: plain dispatch");
    }

    #[derive(Clone, Debug)]
    enum Op {
        Enqueue(SyncKey),
        Dispatch,
        /// A dispatch preferring the keys whose bits are set (keys 0..5),
        /// passing the oldest entry over at most so many times.
        DispatchPreferring(u8, u32),
        /// One processor takes up to this many entries in one call.
        Batch(usize),
        Complete(usize),
        /// A completion the queue must refuse (see [`Model::bad_complete`]).
        BadComplete(usize, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..5).prop_map(|k| Op::Enqueue(SyncKey::Key(k))),
            1 => Just(Op::Enqueue(SyncKey::Sequential)),
            1 => Just(Op::Enqueue(SyncKey::NoSync)),
            5 => Just(Op::Dispatch),
            3 => ((0u8..32), (0u32..4)).prop_map(|(mask, max)| Op::DispatchPreferring(mask, max)),
            2 => (0usize..6).prop_map(Op::Batch),
            4 => (0usize..8).prop_map(Op::Complete),
            1 => ((0usize..8), (0u8..3)).prop_map(|(i, how)| Op::BadComplete(i, how)),
        ]
    }

    /// A protocol processor's hold: the key and the entries it was handed
    /// (item and sequence number), which it runs one after another in this
    /// order.
    type Holder = (SyncKey, VecDeque<(u64, u64)>);

    /// The reference for a batch: the oldest entry in the window that is
    /// eligible, or is the next entry of a key in `mine` (taken earlier in
    /// the batch) with no sequential entry before it.
    fn batch_pick(
        entries: &[(SyncKey, u64)],
        window: usize,
        busy: &[u64],
        nosync: usize,
        seq: bool,
        mine: &[u64],
    ) -> Option<u64> {
        if seq {
            return None;
        }
        for (i, (key, id)) in entries.iter().enumerate().take(window) {
            match key {
                SyncKey::Key(k) if mine.contains(k) => return Some(*id),
                SyncKey::Sequential if i == 0 && busy.is_empty() && nosync == 0 => return Some(*id),
                SyncKey::Sequential => return None,
                _ => {}
            }
            if eligible(&entries[i..=i], 1, busy, nosync, seq) == Some(*id)
                && !entries[..i].iter().any(|(e, _)| e == key && matches!(key, SyncKey::Key(_)))
            {
                return Some(*id);
            }
        }
        None
    }

    struct Model {
        q: Pdq<u64>,
        window: usize,
        queued: Vec<(SyncKey, u64)>,
        holders: Vec<Holder>,
        last_started: std::collections::HashMap<u64, u64>,
        /// Entries completed so far.
        completed: Vec<(SyncKey, u64)>,
        /// Times each entry was passed over by a preferring dispatch.
        passes: std::collections::HashMap<u64, u32>,
    }

    impl Model {
        /// Never two holders of one key; a sequential holder is alone; the
        /// queue says something may run exactly when the reference does.
        fn check(&mut self) {
            let (busy, nosync, seq) = self.status();
            let want = eligible(&self.queued, self.window, &busy, nosync, seq).is_some();
            assert_eq!(self.q.dispatchable(), want, "dispatchable with {:?} held", self.holders);
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
            let (busy, nosync, seq) = self.status();
            let want = eligible(&self.queued, self.window, &busy, nosync, seq);
            let got = self.q.dispatch();
            assert_eq!(got.as_ref().map(|d| d.item), want);
            let Some(d) = got else { return false };
            self.started(d.key, d.item);
            self.holders.push((d.key, VecDeque::from([(d.item, d.seq)])));
            true
        }

        fn dispatch_preferring(&mut self, mask: u8, max_passes: u32) -> bool {
            let prefer = |k: u64| k < 8 && mask & (1 << k) != 0;
            let (busy, nosync, seq) = self.status();
            let first = eligible(&self.queued, self.window, &busy, nosync, seq);
            let passes = first.map_or(0, |f| self.passes.get(&f).copied().unwrap_or(0));
            let want =
                eligible_preferring(&self.queued, self.window, (&busy, nosync, seq), (passes, max_passes), prefer);
            let got = self.q.dispatch_preferring(max_passes, prefer);
            assert_eq!(got.as_ref().map(|d| d.item), want.map(|(id, _)| id));
            if let (Some((_, true)), Some(f)) = (want, first) {
                *self.passes.entry(f).or_default() += 1;
            }
            let Some(d) = got else { return false };
            self.started(d.key, d.item);
            self.holders.push((d.key, VecDeque::from([(d.item, d.seq)])));
            true
        }

        /// One processor's batch: distinct keys become holders, and a key's
        /// further entries join its holder's run.
        fn batch(&mut self, max: usize) {
            let mut got = Vec::new();
            let n = self.q.dispatch_batch(max, |d| got.push(d));
            assert_eq!(n, got.len());
            let mut mine: Vec<u64> = Vec::new();
            for d in got {
                let (busy, nosync, seq) = self.status();
                let want = batch_pick(&self.queued, self.window, &busy, nosync, seq, &mine);
                assert_eq!(Some(d.item), want, "batch entry {} of {max}", mine.len());
                self.started(d.key, d.item);
                match d.key {
                    SyncKey::Key(k) if mine.contains(&k) => {
                        let h = self.holders.iter_mut().find(|(hk, _)| *hk == d.key).expect("holder of a run");
                        h.1.push_back((d.item, d.seq));
                    }
                    key => {
                        if let SyncKey::Key(k) = key {
                            mine.push(k);
                        }
                        self.holders.push((key, VecDeque::from([(d.item, d.seq)])));
                    }
                }
            }
            if n < max {
                let (busy, nosync, seq) = self.status();
                let more = batch_pick(&self.queued, self.window, &busy, nosync, seq, &mine);
                assert_eq!(more, None, "the batch stopped at {n} of {max} with {more:?} still eligible");
            }
        }

        fn status(&self) -> (Vec<u64>, usize, bool) {
            let busy = self
                .holders
                .iter()
                .filter_map(|(k, _)| if let SyncKey::Key(x) = k { Some(*x) } else { None })
                .collect();
            let nosync = self.holders.iter().filter(|(k, _)| *k == SyncKey::NoSync).count();
            let seq = self.holders.iter().any(|(k, _)| *k == SyncKey::Sequential);
            (busy, nosync, seq)
        }

        /// Holder `i` finishes the first entry of its run.
        fn complete(&mut self, i: usize) {
            if self.holders.is_empty() {
                return;
            }
            let h = i % self.holders.len();
            let key = self.holders[h].0;
            let (_, seq) = self.holders[h].1.pop_front().expect("a holder holds an entry");
            if self.holders[h].1.is_empty() {
                self.holders.remove(h);
            }
            self.q.complete(key, seq).unwrap();
            self.completed.push((key, seq));
        }

        /// A completion that names no entry in service: `how` 0 completes an
        /// entry again, 1 a run's entry ahead of its turn, 2 a held entry
        /// under another key. It must be refused and change nothing (the
        /// check after each step compares the queue with the reference).
        fn bad_complete(&mut self, i: usize, how: u8) {
            let bad = match how {
                0 if !self.completed.is_empty() => Some(self.completed[i % self.completed.len()]),
                1 => self.holders.iter().find(|(_, run)| run.len() > 1).map(|(k, run)| (*k, run[1].1)),
                2 if !self.holders.is_empty() => {
                    let (k, run) = &self.holders[i % self.holders.len()];
                    let other = match k {
                        SyncKey::Key(x) => SyncKey::Key(x + 1),
                        SyncKey::NoSync => SyncKey::Sequential,
                        SyncKey::Sequential => SyncKey::NoSync,
                    };
                    Some((other, run[0].1))
                }
                _ => None,
            };
            if let Some((key, seq)) = bad {
                assert_eq!(self.q.complete(key, seq), Err(NotInService { key, seq }), "holders {:?}", self.holders);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Against the reference, on random interleavings: dispatch hands out
        /// exactly the first eligible entry (a preferring dispatch, the
        /// reference's preferred pick), and a batch exactly the entries
        /// repeated picks would give (runs of its own keys included); two processors never hold one key; a sequential entry is
        /// always alone; same-key entries start in arrival order; nosync is
        /// never refused while eligible; and draining at the end dispatches
        /// everything (no starvation, sequential entries included).
        #[test]
        fn pdq_invariants(
            ops in proptest::collection::vec(op(), 1..200),
            window in 1usize..10,
            adversary in proptest::bool::ANY,
        ) {
            let mut m = Model {
                q: Pdq::new(window),
                window,
                queued: Vec::new(),
                holders: Vec::new(),
                last_started: Default::default(),
                completed: Vec::new(),
                passes: Default::default(),
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
                    Op::DispatchPreferring(mask, max) => {
                        m.dispatch_preferring(mask, max);
                    }
                    Op::Batch(max) => m.batch(max),
                    Op::Complete(i) => m.complete(i),
                    Op::BadComplete(i, how) => m.bad_complete(i, how),
                }
                m.check();
            }
            // Drain: complete the oldest holder's entry whenever nothing can
            // be dispatched; everything must come out in bounded steps, also
            // when every dispatch prefers every key but the oldest entry's.
            let mut guard = 0;
            while !m.queued.is_empty() || !m.holders.is_empty() {
                guard += 1;
                prop_assert!(guard < 10_000, "starvation: {:?} {:?}", m.queued, m.holders);
                let dispatched = if adversary {
                    let (busy, nosync, seq) = m.status();
                    let first = eligible(&m.queued, m.window, &busy, nosync, seq);
                    let key = first.and_then(|f| m.queued.iter().find(|(_, id)| *id == f)).map(|(k, _)| *k);
                    let mask = match key {
                        Some(SyncKey::Key(k)) if k < 8 => !(1u8 << k),
                        _ => u8::MAX,
                    };
                    m.dispatch_preferring(mask, 3)
                } else {
                    m.dispatch()
                };
                if !dispatched {
                    m.complete(0);
                }
                m.check();
            }
            prop_assert!(m.q.is_empty());
        }
    }
}
