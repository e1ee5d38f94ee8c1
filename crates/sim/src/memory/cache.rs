//! The cache model's state: each cache's tags with their coherence state
//! bits, stored set-major for the node's caches together, and each compute
//! cache's lists of the sets where its own segment line is not writable
//! without a bus transaction (what synthetic computation misses on).

/// A cache set holds a 14-bit tag (line / sets) and two state bits; two
/// bytes per set keep a simulated 1 MB cache's tags in 64 KB of host memory.
/// The bits give the MOESI states that matter for timing: Modified (DIRTY),
/// Owned (DIRTY | SHARED), Exclusive (neither), Shared (SHARED). A DIRTY
/// line is written back when evicted; a SHARED line needs a bus upgrade
/// before it can be written.
pub(super) const INVALID: u16 = u16::MAX;
pub(super) const DIRTY: u16 = 1 << 15;
pub(super) const SHARED: u16 = 1 << 14;
pub(super) const TAG_MASK: u16 = !(DIRTY | SHARED);
/// Position marker for sets not in a foreign list.
pub(super) const NOT_LISTED: u32 = u32::MAX;

/// Sets of a compute cache whose own segment line is not writable without a
/// bus transaction, in two lists: `ABSENT` (another line took the set) and
/// `SHARED` (the own line is there, but another cache holds a copy, so a
/// write needs an upgrade). Each entry records the epoch at which it joined.
/// Vectors plus positions: a random entry is drawn, and any entry removed,
/// in O(1).
#[derive(Clone, Debug)]
pub(super) struct ForeignSets {
    pub(super) lists: [Vec<(u32, u32)>; 2],
    /// Per set: NOT_LISTED, or the list in bit 31 and the index below it.
    pub(super) pos: Vec<u32>,
    pub(super) epoch: u32,
    /// Every set that joined a list after epoch `joined_since`, in joining
    /// order (a set may be here twice). Work resumed after an interrupt
    /// samples only the entries newer than an epoch, usually a handful of
    /// a list of hundreds: this log finds them without scanning the lists.
    pub(super) joined: Vec<u32>,
    pub(super) joined_since: u32,
}

/// Longest the join log grows before it is dropped (a later resumption
/// then scans the lists, as it would without the log).
pub(super) const JOINED_LOG_MAX: usize = 1024;

pub(super) const ABSENT: usize = 0;
pub(super) const SHARED_OWN: usize = 1;

/// Which foreign list a compute cache's set belongs in while it holds
/// `held`, for the thread `own` whose segment the cache computes on. A
/// thread's segment line in set s has tag == the thread's number; the set
/// is the thread's own only if it may write it without a bus transaction
/// (Modified or Exclusive).
#[inline(always)]
pub(super) fn foreign_kind(held: u16, own: u32) -> Option<usize> {
    if held & TAG_MASK != own as u16 {
        Some(ABSENT)
    } else if held & SHARED != 0 {
        Some(SHARED_OWN)
    } else {
        None
    }
}

impl ForeignSets {
    pub(super) fn new(sets: u32) -> ForeignSets {
        ForeignSets {
            lists: [Vec::new(), Vec::new()],
            pos: vec![NOT_LISTED; sets as usize],
            epoch: 0,
            joined: Vec::new(),
            joined_since: 0,
        }
    }

    /// The list `set` is in (None: neither).
    pub(super) fn kind_of(&self, set: u32) -> Option<usize> {
        let p = self.pos[set as usize];
        (p != NOT_LISTED).then_some((p >> 31) as usize)
    }

    /// Moves `set` from list `from`, where it is, to list `to` (None: in
    /// neither). The caller knows `from` (from the set's old tag), so a set
    /// joining a list costs no read of its position, a random access into
    /// a large array.
    pub(super) fn change(&mut self, set: u32, from: Option<usize>, to: Option<usize>) {
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
    pub(super) fn forget_joined(&mut self) {
        self.joined.clear();
        self.joined_since = self.epoch;
    }

    /// Appends to `out` (empty), in list order, the sets of list `kind`
    /// whose entries joined after epoch `mark`: what
    /// `list.iter().filter(|(_, e)| *e > mark)` gives.
    pub(super) fn joined_after(&self, kind: usize, mark: u32, out: &mut Vec<u32>) {
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
    pub(super) fn len(&self) -> usize {
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
pub(super) struct Tags {
    pub(super) data: Vec<u16>,
    pub(super) caches: usize,
}

impl Tags {
    pub(super) fn new(caches: usize, sets: usize) -> Tags {
        Tags { data: vec![INVALID; caches * sets], caches }
    }

    /// Cache `proc`'s tag in `set`.
    #[inline(always)]
    pub(super) fn get(&self, proc: usize, set: usize) -> u16 {
        self.data[set * self.caches + proc]
    }

    #[inline(always)]
    pub(super) fn put(&mut self, proc: usize, set: usize, tagged: u16) {
        self.data[set * self.caches + proc] = tagged;
    }

    /// The tags `set` has in every cache, indexed by processor.
    #[inline(always)]
    pub(super) fn set_row(&self, set: usize) -> &[u16] {
        &self.data[set * self.caches..(set + 1) * self.caches]
    }
}

pub(super) struct Cache {
    /// The segment this processor's thread owns, if it runs one.
    pub(super) own_thread: Option<u32>,
    pub(super) foreign: ForeignSets,
    /// Code lines not in this cache. Code is never written, so it leaves a
    /// cache only by eviction; while this is zero every instruction fetch
    /// hits and the dispatch path can skip the per-line lookups.
    pub(super) code_missing: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    pub(super) fn joined_after_matches_a_scan_of_the_list() {
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
}
