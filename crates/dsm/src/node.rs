//! One node's share of the DSM: its access tags, its page frames, the
//! directory entries of the blocks it is home to, and the synchronization
//! state its threads and handlers share.
//!
//! Access control is in software (as in Shasta and Blizzard-S): a tag byte
//! per block, checked on every access. The tag's top bit is a short lock
//! that an access or a handler holds while it reads or changes the block,
//! so a thread's check-and-access and a handler's data-and-tag change never
//! interleave (in the simulator nothing runs concurrently, so it is never
//! contended).

use crate::space::Space;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Tag states; a thread wanting to read needs at least `READ_ONLY`, one
/// wanting to write `READ_WRITE`.
pub(crate) const INVALID: u8 = 0;
pub(crate) const READ_ONLY: u8 = 1;
pub(crate) const READ_WRITE: u8 = 2;
const LOCKED: u8 = 0x80;

/// How many times a block that just arrived for a waiting thread may put
/// off an invalidation or fetch before the thread has tried its access:
/// without the hold, two nodes that both want one block can take it from
/// each other forever, neither thread getting to use it (a livelock that
/// hardware avoids by completing the access with the fill). Bounded, so a
/// thread that never comes back cannot stall the protocol.
pub(crate) const HOLD_DEFERRALS: u8 = 16;

/// The nodes a block is shared by, one bit each (128 nodes at most).
pub(crate) type Sharers = u128;

/// What the home knows of a block's copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DirState {
    /// Only the home has it (its tag read-write).
    Idle,
    /// Read-only copies at these nodes (and at the home).
    Shared(Sharers),
    /// One node other than the home holds it read-write.
    Exclusive(u32),
}

/// A home's transaction on a block that waits for other nodes: acks of
/// invalidations, a fetched block, or the requester's acknowledgement of
/// its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Txn {
    pub requester: u32,
    pub want: u8,
    /// Invalidation acks or fetch replies still to come.
    pub awaiting: u32,
    /// The block went out; the transaction ends with the requester's ack.
    pub data_sent: bool,
}

#[derive(Debug)]
pub(crate) struct DirEntry {
    pub state: DirState,
    pub busy: Option<Txn>,
    /// Requests that arrived while a transaction was open, in order.
    pub deferred: VecDeque<(u32, u8)>,
}

impl DirEntry {
    fn new() -> DirEntry {
        DirEntry { state: DirState::Idle, busy: None, deferred: VecDeque::new() }
    }
}

/// A lock's queue at its home node.
#[derive(Debug, Default)]
pub(crate) struct LockState {
    pub held: bool,
    pub waiting: VecDeque<(u32, u32)>,
}

pub(crate) struct NodeState {
    pub node: u32,
    space: Arc<Space>,
    threads: u32,
    locks: u32,
    tags: OnceLock<Box<[AtomicU8]>>,
    /// Per block: the access a thread of this node has asked the protocol
    /// for and not yet got (0 when none), so threads of one node send one
    /// request per block.
    pending: OnceLock<Box<[AtomicU8]>>,
    /// Per block: how many more times an invalidation or fetch may be put
    /// back in the queue so that the thread the block just arrived for
    /// gets its access in first (0: none held).
    hold: OnceLock<Box<[AtomicU8]>>,
    frames: Box<[OnceLock<Box<[AtomicU64]>>]>,
    directory: OnceLock<Box<[Mutex<DirEntry>]>>,
    lock_states: OnceLock<Box<[Mutex<LockState>]>>,
    /// Threads of this node that reached the current barrier.
    pub barrier_arrived: AtomicU32,
    /// Barriers released at this node, ever.
    pub barrier_released: AtomicU64,
    /// Node 0 only: nodes whose threads all reached the current barrier.
    pub barrier_root: AtomicU32,
    /// Per thread: the lock granted to it, plus one (0 when none).
    pub granted: Box<[AtomicU64]>,
}

impl NodeState {
    pub fn new(node: u32, space: Arc<Space>, threads: u32, locks: u32) -> NodeState {
        let frames = (0..space.pages()).map(|_| OnceLock::new()).collect();
        NodeState {
            node,
            space,
            threads,
            locks,
            tags: OnceLock::new(),
            pending: OnceLock::new(),
            hold: OnceLock::new(),
            frames,
            directory: OnceLock::new(),
            lock_states: OnceLock::new(),
            barrier_arrived: AtomicU32::new(0),
            barrier_released: AtomicU64::new(0),
            barrier_root: AtomicU32::new(0),
            granted: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub fn threads(&self) -> u32 {
        self.threads
    }

    fn tags(&self) -> &[AtomicU8] {
        self.tags.get_or_init(|| {
            (0..self.space.blocks())
                .map(|b| AtomicU8::new(if self.space.home_of_block(b) == self.node { READ_WRITE } else { INVALID }))
                .collect()
        })
    }

    fn hold_slots(&self) -> &[AtomicU8] {
        self.hold.get_or_init(|| (0..self.space.blocks()).map(|_| AtomicU8::new(0)).collect())
    }

    /// A block arrived for a waiting thread: hold it for that thread's
    /// access (see [`NodeState::take_hold`]).
    pub fn hold(&self, block: u64) {
        self.hold_slots()[block as usize].store(HOLD_DEFERRALS, Ordering::Release);
    }

    /// A thread tried an access to the block: whatever came of it, the
    /// block need be held no longer.
    pub fn release_hold(&self, block: u64) {
        let slot = &self.hold_slots()[block as usize];
        if slot.load(Ordering::Relaxed) != 0 {
            slot.store(0, Ordering::Release);
        }
    }

    /// Whether a handler that would take the block away must defer to a
    /// thread the block just arrived for; counts the deferral.
    pub fn take_hold(&self, block: u64) -> bool {
        let slot = &self.hold_slots()[block as usize];
        slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| h.checked_sub(1)).is_ok()
    }

    fn pending_slots(&self) -> &[AtomicU8] {
        self.pending.get_or_init(|| (0..self.space.blocks()).map(|_| AtomicU8::new(0)).collect())
    }

    /// The block's tag state (without its lock bit).
    pub fn state(&self, block: u64) -> u8 {
        self.tags()[block as usize].load(Ordering::Acquire) & !LOCKED
    }

    /// Whether this node has a frame for the page: its home always does,
    /// another node once the page-allocation handler gave it one.
    pub fn mapped(&self, page: u64) -> bool {
        self.space.page_home[page as usize] == self.node || self.frames[page as usize].get().is_some()
    }

    /// Gives the page a frame here (the page-allocation handler).
    pub fn map(&self, page: u64) {
        self.frame(page);
    }

    fn frame(&self, page: u64) -> &[AtomicU64] {
        self.frames[page as usize].get_or_init(|| {
            let initial = if self.space.page_home[page as usize] == self.node {
                self.space.initial_page(page)
            } else {
                vec![0; self.space.page_words as usize]
            };
            initial.into_iter().map(AtomicU64::new).collect()
        })
    }

    /// A word of this node's copy (callers hold its block's lock).
    pub fn word(&self, word: u64) -> &AtomicU64 {
        let page = self.space.page_of_word(word);
        &self.frame(page)[(word % self.space.page_words) as usize]
    }

    /// Takes the block's lock; returns its state.
    pub fn lock_block(&self, block: u64) -> u8 {
        let tag = &self.tags()[block as usize];
        loop {
            let t = tag.load(Ordering::Relaxed);
            if t & LOCKED == 0 && tag.compare_exchange_weak(t, t | LOCKED, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                return t;
            }
            std::hint::spin_loop();
        }
    }

    /// Releases the block's lock, leaving it in `state`.
    pub fn unlock_block(&self, block: u64, state: u8) {
        self.tags()[block as usize].store(state, Ordering::Release);
    }

    /// Runs `f` on the word under its block's lock if the block's state
    /// allows `want`; None (and nothing done) if it does not.
    pub fn access<R>(&self, word: u64, want: u8, f: impl FnOnce(&AtomicU64) -> R) -> Option<R> {
        let block = self.space.block_of_word(word);
        let state = self.lock_block(block);
        let out = (state >= want).then(|| f(self.word(word)));
        self.unlock_block(block, state);
        self.release_hold(block);
        out
    }

    /// The block's words (the caller holds its lock).
    pub fn read_block(&self, block: u64) -> Vec<u64> {
        let first = block * self.space.block_words;
        (first..first + self.space.block_words).map(|w| self.word(w).load(Ordering::Relaxed)).collect()
    }

    /// Overwrites the block's words (the caller holds its lock).
    pub fn write_block(&self, block: u64, words: &[u64]) {
        let first = block * self.space.block_words;
        for (i, &v) in words.iter().enumerate() {
            self.word(first + i as u64).store(v, Ordering::Relaxed);
        }
    }

    /// Claims the right to ask for `want` on the block: true if no request
    /// for as much is outstanding from this node.
    pub fn claim_request(&self, block: u64, want: u8) -> bool {
        let slot = &self.pending_slots()[block as usize];
        slot.fetch_max(want, Ordering::AcqRel) < want
    }

    /// Whether a request from this node for at least `want` is
    /// outstanding (a thread waiting for it may wait; otherwise it must
    /// raise the fault again).
    pub fn request_outstanding(&self, block: u64, want: u8) -> bool {
        self.pending_slots()[block as usize].load(Ordering::Acquire) >= want
    }

    /// An answer granting `got` arrived: requests for no more are done.
    pub fn settle_request(&self, block: u64, got: u8) {
        let slot = &self.pending_slots()[block as usize];
        let _ = slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| (p <= got).then_some(0));
    }

    /// The directory entry of a block this node is home to.
    pub fn dir(&self, block: u64) -> MutexGuard<'_, DirEntry> {
        let entries = self.directory.get_or_init(|| {
            let n = self.space.home_pages[self.node as usize] as u64 * self.space.blocks_per_page();
            (0..n).map(|_| Mutex::new(DirEntry::new())).collect()
        });
        // Handlers of one block never run at once (its PDQ key), so the
        // mutex is never contended; a panicked handler already failed the
        // run, so a poisoned entry is still the best state to report from.
        entries[self.space.dir_slot(block)].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The queue of a lock this node is home to.
    pub fn lock_state(&self, lock: u32) -> MutexGuard<'_, LockState> {
        let nodes = self.space.nodes;
        let states = self.lock_states.get_or_init(|| {
            let mine = (0..self.locks).filter(|l| l % nodes == self.node).count();
            (0..mine).map(|_| Mutex::new(LockState::default())).collect()
        });
        states[(lock / nodes) as usize].lock().unwrap_or_else(|e| e.into_inner())
    }
}
