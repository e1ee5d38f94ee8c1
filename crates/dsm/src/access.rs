//! What a thread does with shared memory: reads and writes checked
//! against its node's access tags, faults when a tag is too weak, and the
//! barrier and locks.

use crate::node::NodeState;
use crate::protocol::{WANT_READ, WANT_WRITE};
use crate::state::args;
use crate::sync::{barrier_key, lock_key};
use crate::{Dsm, LockId, Shared};
use finegrain_core::{Access, AmError, NodeId, Payload, Proc, Region, SyncKey, Work};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// A compute thread's handle on the DSM.
pub struct DsmProc<'a, P: Proc> {
    dsm: &'a Dsm,
    p: &'a P,
    node: &'a NodeState,
    /// Barriers this thread has passed.
    barriers: Cell<u64>,
    /// Shared words this thread has read or written.
    words: Cell<u64>,
    /// Block access faults it has raised (a miss its node's tags did not
    /// allow: to a remote block, or an upgrade).
    faults: Cell<u64>,
}

impl<'a, P: Proc> DsmProc<'a, P> {
    pub(crate) fn new(dsm: &'a Dsm, p: &'a P) -> Result<DsmProc<'a, P>, AmError> {
        if p.nodes() != dsm.nodes() || p.threads_per_node() != dsm.threads {
            return Err(AmError::NotAllowed(format!(
                "a DSM built for {} nodes of {} threads run by {} nodes of {} threads; allowed: the same shape",
                dsm.nodes(),
                dsm.threads,
                p.nodes(),
                p.threads_per_node()
            )));
        }
        let node = &dsm.shared.nodes[p.node().index()];
        Ok(DsmProc { dsm, p, node, barriers: Cell::new(0), words: Cell::new(0), faults: Cell::new(0) })
    }

    /// The platform's handle underneath.
    pub fn proc(&self) -> &P {
        self.p
    }

    /// This thread's number among all threads (node-major).
    pub fn rank(&self) -> u32 {
        self.p.node().0 * self.dsm.threads + self.p.thread().0
    }

    pub fn ranks(&self) -> u32 {
        self.dsm.nodes() * self.dsm.threads
    }

    pub fn node(&self) -> u32 {
        self.p.node().0
    }

    pub fn nodes(&self) -> u32 {
        self.dsm.nodes()
    }

    pub fn threads_per_node(&self) -> u32 {
        self.dsm.threads
    }

    /// Shared words this thread has read or written so far.
    pub fn shared_words(&self) -> u64 {
        self.words.get()
    }

    /// Block access faults this thread has raised so far: its misses that
    /// needed the protocol.
    pub fn faults(&self) -> u64 {
        self.faults.get()
    }

    /// The platform's clock (simulated cycles, or nanoseconds natively).
    pub fn now(&self) -> u64 {
        self.p.now()
    }

    /// Accounts for computation the program just did, as the operations
    /// its kernel counted (the simulator's cost model turns them into
    /// cycles and private accesses; natively this does nothing).
    pub fn charge_work(&self, work: Work) {
        self.p.charge_work(work)
    }

    pub async fn read(&self, a: Shared, i: u64) -> Result<u64, AmError> {
        let word = a.word(i)?;
        let shadow = self.dsm.shadow.as_deref();
        // The coherence check compares at the load, under the block's lock:
        // later, another node may already have written the word.
        let (v, last) = self
            .with_word(word, WANT_READ, |w| {
                (w.load(Ordering::Relaxed), shadow.map(|s| s[word as usize].load(Ordering::Relaxed)))
            })
            .await?;
        if let Some(last) = last.filter(|&l| l != v) {
            return Err(self.incoherent(word, v, last));
        }
        Ok(v)
    }

    pub async fn write(&self, a: Shared, i: u64, v: u64) -> Result<(), AmError> {
        let word = a.word(i)?;
        let shadow = self.dsm.shadow.as_deref();
        self.with_word(word, WANT_WRITE, |w| {
            w.store(v, Ordering::Relaxed);
            if let Some(s) = shadow {
                s[word as usize].store(v, Ordering::Relaxed);
            }
        })
        .await
    }

    pub async fn read_f64(&self, a: Shared, i: u64) -> Result<f64, AmError> {
        Ok(f64::from_bits(self.read(a, i).await?))
    }

    pub async fn write_f64(&self, a: Shared, i: u64, v: f64) -> Result<(), AmError> {
        self.write(a, i, v.to_bits()).await
    }

    /// Adds `delta` to a word atomically with respect to every other
    /// access; returns the old value.
    pub async fn fetch_add(&self, a: Shared, i: u64, delta: u64) -> Result<u64, AmError> {
        let word = a.word(i)?;
        let shadow = self.dsm.shadow.as_deref();
        let (old, last) = self
            .with_word(word, WANT_WRITE, |w| {
                let old = w.fetch_add(delta, Ordering::Relaxed);
                let last = shadow.map(|s| s[word as usize].swap(old.wrapping_add(delta), Ordering::Relaxed));
                (old, last)
            })
            .await?;
        if let Some(last) = last.filter(|&l| l != old) {
            return Err(self.incoherent(word, old, last));
        }
        Ok(old)
    }

    /// Reads `out.len()` words from `start`, a block at a time.
    pub async fn read_into(&self, a: Shared, start: u64, out: &mut [u64]) -> Result<(), AmError> {
        let mut done = 0usize;
        while done < out.len() {
            let word = a.word(start + done as u64)?;
            let n = self.run_in_block(word, out.len() - done);
            a.word(start + (done + n) as u64 - 1)?;
            let chunk = &mut out[done..done + n];
            let shadow = self.dsm.shadow.as_deref();
            let mut stale = None;
            self.with_block_words(word, n, WANT_READ, |node| {
                for (k, slot) in chunk.iter_mut().enumerate() {
                    let w = word + k as u64;
                    *slot = node.word(w).load(Ordering::Relaxed);
                    let last = shadow.map(|s| s[w as usize].load(Ordering::Relaxed));
                    if let Some(last) = last.filter(|&l| l != *slot) {
                        stale.get_or_insert((w, *slot, last));
                    }
                }
            })
            .await?;
            if let Some((w, v, last)) = stale {
                return Err(self.incoherent(w, v, last));
            }
            done += n;
        }
        Ok(())
    }

    /// Writes `values` from `start`, a block at a time.
    pub async fn write_from(&self, a: Shared, start: u64, values: &[u64]) -> Result<(), AmError> {
        let shadow = self.dsm.shadow.as_deref();
        let mut done = 0usize;
        while done < values.len() {
            let word = a.word(start + done as u64)?;
            let n = self.run_in_block(word, values.len() - done);
            a.word(start + (done + n) as u64 - 1)?;
            let chunk = &values[done..done + n];
            self.with_block_words(word, n, WANT_WRITE, |node| {
                for (k, &v) in chunk.iter().enumerate() {
                    let w = word + k as u64;
                    node.word(w).store(v, Ordering::Relaxed);
                    if let Some(s) = shadow {
                        s[w as usize].store(v, Ordering::Relaxed);
                    }
                }
            })
            .await?;
            done += n;
        }
        Ok(())
    }

    /// Words from `word` to the end of its block, at most `left`.
    fn run_in_block(&self, word: u64, left: usize) -> usize {
        let bw = self.dsm.shared.space.block_words;
        ((bw - word % bw) as usize).min(left)
    }

    fn incoherent(&self, word: u64, read: u64, last: u64) -> AmError {
        AmError::NotAllowed(format!(
            "coherence violated: node {} thread {} read {read:#x} from word {word}, whose last write was {last:#x}",
            self.p.node().0,
            self.p.thread().0
        ))
    }

    /// Runs `f` on one word once its block allows `want`, raising faults
    /// until it does; the platform then times the access.
    async fn with_word<R>(&self, word: u64, want: u8, f: impl FnOnce(&AtomicU64) -> R) -> Result<R, AmError> {
        let mut f = Some(f);
        loop {
            if let Some(r) = self.node.access(word, want, |w| (f.take().expect("runs once"))(w)) {
                self.words.set(self.words.get() + 1);
                let kind = if want == WANT_WRITE { Access::Write } else { Access::Read };
                self.p.access(Region::Global, word * 8, 8, kind).await;
                return Ok(r);
            }
            self.fault(word, want).await?;
        }
    }

    /// Runs `f` once the block of `word` allows `want`, holding the
    /// block's lock throughout, so the `n` words it touches are one
    /// consistent snapshot; the platform then times the access.
    async fn with_block_words(&self, word: u64, n: usize, want: u8, f: impl FnOnce(&NodeState)) -> Result<(), AmError> {
        let block = self.dsm.shared.space.block_of_word(word);
        let mut f = Some(f);
        loop {
            let state = self.node.lock_block(block);
            self.node.release_hold(block);
            if state >= want {
                (f.take().expect("runs once"))(self.node);
                self.node.unlock_block(block, state);
                self.words.set(self.words.get() + n as u64);
                let kind = if want == WANT_WRITE { Access::Write } else { Access::Read };
                self.p.access(Region::Global, word * 8, (n * 8) as u32, kind).await;
                return Ok(());
            }
            self.node.unlock_block(block, state);
            self.fault(word, want).await?;
        }
    }

    /// Raises a block access fault for `word` and waits until the block's
    /// tag allows `want` (or the request it waited for was answered and
    /// the block taken again, when the caller faults anew).
    async fn fault(&self, word: u64, want: u8) -> Result<(), AmError> {
        self.faults.set(self.faults.get() + 1);
        let space = &self.dsm.shared.space;
        let ids = self.dsm.shared.ids();
        let me = NodeId(self.p.node().0);
        let page = space.page_of_word(word);
        if !self.node.mapped(page) {
            self.p.send_keyed(me, ids.page, SyncKey::Sequential, args(&[page]), Payload::none()).await?;
            let node = self.node;
            self.p.wait_until(|| node.mapped(page)).await?;
        }
        let block = space.block_of_word(word);
        if self.node.claim_request(block, want) {
            let a = args(&[block, want as u64]);
            self.p.send_keyed(me, ids.fault, SyncKey::Key(block), a, Payload::none()).await?;
        }
        let node = self.node;
        // Only the block's handlers (its key) change its tag and settle its
        // requests.
        self.p
            .wait_for_block(SyncKey::Key(block), || node.state(block) >= want || !node.request_outstanding(block, want))
            .await
    }

    /// Waits until every thread of every node has called `barrier`.
    pub async fn barrier(&self) -> Result<(), AmError> {
        let epoch = self.barriers.get() + 1;
        self.barriers.set(epoch);
        let node = self.node;
        let arrived = node.barrier_arrived.fetch_add(1, Ordering::AcqRel) + 1;
        if arrived == node.threads() {
            node.barrier_arrived.store(0, Ordering::Release);
            let ids = self.dsm.shared.ids();
            self.p.send_keyed(NodeId(0), ids.arrive, barrier_key(), args(&[epoch]), Payload::none()).await?;
        }
        // Only the barrier's release handler moves its epoch on.
        self.p.wait_until_keyed(barrier_key(), || node.barrier_released.load(Ordering::Acquire) >= epoch).await
    }

    /// Takes `lock`, waiting in its queue at its home.
    pub async fn lock(&self, lock: LockId) -> Result<(), AmError> {
        let nodes = self.dsm.nodes();
        let ids = self.dsm.shared.ids();
        let t = self.p.thread().0;
        let a = args(&[lock.0 as u64, self.p.node().0 as u64, t as u64]);
        self.p.send_keyed(NodeId(lock.0 % nodes), ids.acquire, lock_key(lock.0), a, Payload::none()).await?;
        let slot = &self.node.granted[t as usize];
        let want = lock.0 as u64 + 1;
        // Only the lock's grant handler hands it to this thread.
        self.p.wait_until_keyed(lock_key(lock.0), || slot.load(Ordering::Acquire) == want).await?;
        slot.store(0, Ordering::Release);
        Ok(())
    }

    /// Releases `lock` (which this thread holds).
    pub async fn unlock(&self, lock: LockId) -> Result<(), AmError> {
        let nodes = self.dsm.nodes();
        let ids = self.dsm.shared.ids();
        let a = args(&[lock.0 as u64]);
        self.p.send_keyed(NodeId(lock.0 % nodes), ids.unlock, lock_key(lock.0), a, Payload::none()).await
    }
}
