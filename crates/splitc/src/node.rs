//! A node's thread's view of Split-C: its operations.

use crate::gptr::{GlobalPtr, Layout, SpreadArray};
use crate::handlers::{Local, CHUNK_WORDS, RETURN_VALUE};
use crate::state::{barrier_rounds, words_to_bytes, NodeState};
use crate::{AtomicId, SplitC};
use finegrain_core::{Access, AmError, Args, HandlerId, NodeId, Payload, Proc, Region, SyncKey};
use std::sync::atomic::Ordering;

/// One node's thread's handle on Split-C (see [`SplitC::on`]).
pub struct SplitNode<'a, P: Proc> {
    lib: &'a SplitC,
    p: &'a P,
    me: NodeId,
}

/// What a data message moves: its first word at the destination, its
/// length, and its words (the value itself when there is one).
struct Chunk {
    to: u64,
    len: u64,
    payload: Payload,
    value: u64,
}

fn bad(what: String) -> AmError {
    AmError::NotAllowed(what)
}

impl<'a, P: Proc> SplitNode<'a, P> {
    pub(crate) fn new(lib: &'a SplitC, p: &'a P) -> SplitNode<'a, P> {
        SplitNode { lib, p, me: p.node() }
    }

    /// This node.
    pub fn me(&self) -> NodeId {
        self.me
    }

    /// Nodes in the machine.
    pub fn procs(&self) -> u32 {
        self.lib.nodes
    }

    /// The platform handle underneath (for work, charge, poll...).
    pub fn proc(&self) -> &P {
        self.p
    }

    fn state(&self) -> &'a NodeState {
        &self.lib.states[self.me.index()]
    }

    /// This node's own segment.
    pub fn local(&self) -> Local<'a> {
        Local { words: self.state().segment() }
    }

    /// Reserves `words` words at the same offset in every node's segment;
    /// every node must make the same reservations in the same order (as
    /// Split-C's collective allocation asks).
    pub fn alloc(&self, words: u64) -> Result<u64, AmError> {
        let state = self.state();
        let first = state.next_free.load(Ordering::Relaxed);
        let end = first.checked_add(words).filter(|&e| e <= state.segment_len());
        let Some(end) = end else {
            return Err(bad(format!(
                "allocating {words} words at word {first} of a {}-word Split-C segment; allowed: at most {} more \
                 words (build the program's SplitC with a larger segment)",
                state.segment_len(),
                state.segment_len().saturating_sub(first)
            )));
        };
        state.next_free.store(end, Ordering::Relaxed);
        Ok(first)
    }

    /// A spread array of `len` elements of `elem_words` words (collective,
    /// as [`SplitNode::alloc`]).
    pub fn alloc_spread(&self, len: u64, elem_words: u64, layout: Layout) -> Result<SpreadArray, AmError> {
        let mut a = SpreadArray { base: 0, len, elem_words, nodes: self.lib.nodes, layout };
        a.base = self.alloc(a.words_per_node())?;
        Ok(a)
    }

    fn check_local(&self, word: u64, len: u64, what: &str) -> Result<(), AmError> {
        self.state().words(word, len, what).map(|_| ()).map_err(bad)
    }

    fn check_remote(&self, to: GlobalPtr, len: u64, what: &str) -> Result<(), AmError> {
        if to.node.0 >= self.lib.nodes {
            return Err(AmError::NoSuchNode { node: to.node.0, nodes: self.lib.nodes });
        }
        let size = self.lib.states[to.node.index()].segment_len();
        if len == 0 || to.word.checked_add(len).is_none_or(|e| e > size) {
            return Err(bad(format!(
                "{what} of {len} words at node {} word {} is outside its {size}-word segment; allowed: 1 or more \
                 words inside it",
                to.node.0, to.word
            )));
        }
        Ok(())
    }

    /// The chunks of `len` words read from this node's `from..`, bound for
    /// the destination's `to..`.
    fn chunks(&self, from: u64, to: u64, len: u64) -> impl Iterator<Item = Chunk> + 'a {
        let words = self.state().segment();
        (0..len.div_ceil(CHUNK_WORDS)).map(move |i| {
            let off = i * CHUNK_WORDS;
            let n = CHUNK_WORDS.min(len - off);
            let src = &words[(from + off) as usize..(from + off + n) as usize];
            if n == 1 {
                Chunk { to: to + off, len: 1, payload: Payload::none(), value: src[0].load(Ordering::Relaxed) }
            } else {
                Chunk { to: to + off, len: n, payload: Payload::bytes(&words_to_bytes(src)), value: 0 }
            }
        })
    }

    /// A copy inside this node's segment (an operation on a local global
    /// pointer), costed as the thread's own accesses.
    async fn copy_local(&self, from: u64, to: u64, len: u64) {
        let words = self.state().segment();
        for i in 0..len as usize {
            let v = words[from as usize + i].load(Ordering::Relaxed);
            words[to as usize + i].store(v, Ordering::Relaxed);
        }
        self.touch(from, len, Access::Read).await;
        self.touch(to, len, Access::Write).await;
    }

    /// Tells the platform the thread touched `len` words of its segment.
    async fn touch(&self, word: u64, len: u64, kind: Access) {
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK_WORDS);
            self.p.access(Region::Global, (word + done) * 8, (n * 8) as u32, kind).await;
            done += n;
        }
    }

    async fn send(&self, dst: NodeId, handler: HandlerId, args: &[u64], payload: Payload) -> Result<(), AmError> {
        self.p.send_keyed(dst, handler, SyncKey::NoSync, Args::new(args)?, payload).await
    }

    /// Split-phase get: copies `len` words at `from` into this node's
    /// segment at word `to`; complete after [`SplitNode::sync`].
    pub async fn get(&self, from: GlobalPtr, to: u64, len: u64) -> Result<(), AmError> {
        self.check_remote(from, len, "get")?;
        self.check_local(to, len, "get destination")?;
        if from.node == self.me {
            self.copy_local(from.word, to, len).await;
            return Ok(());
        }
        let state = self.state();
        let mut off = 0;
        while off < len {
            let n = CHUNK_WORDS.min(len - off);
            state.gets_issued.fetch_add(1, Ordering::Relaxed);
            self.send(from.node, self.lib.ids.get, &[from.word + off, n, to + off], Payload::none()).await?;
            off += n;
        }
        Ok(())
    }

    /// Split-phase put: writes this node's words `from..from + len` at `to`;
    /// acknowledged, complete after [`SplitNode::sync`].
    pub async fn put(&self, to: GlobalPtr, from: u64, len: u64) -> Result<(), AmError> {
        self.check_remote(to, len, "put")?;
        self.check_local(from, len, "put source")?;
        if to.node == self.me {
            self.copy_local(from, to.word, len).await;
            return Ok(());
        }
        for c in self.chunks(from, to.word, len) {
            self.state().puts_issued.fetch_add(1, Ordering::Relaxed);
            self.send(to.node, self.lib.ids.put, &[c.to, c.len, c.value, 0], c.payload).await?;
        }
        Ok(())
    }

    /// One-way store of this node's words `from..from + len` at `to`: the
    /// receiver counts them ([`SplitNode::store_sync`],
    /// [`SplitNode::all_store_sync`]).
    pub async fn store(&self, to: GlobalPtr, from: u64, len: u64) -> Result<(), AmError> {
        self.check_remote(to, len, "store")?;
        self.check_local(from, len, "store source")?;
        if to.node == self.me {
            self.copy_local(from, to.word, len).await;
            return Ok(());
        }
        for c in self.chunks(from, to.word, len) {
            self.state().stored_to[to.node.index()].fetch_add(c.len, Ordering::Relaxed);
            self.send(to.node, self.lib.ids.store, &[c.to, c.len, c.value], c.payload).await?;
        }
        Ok(())
    }

    /// Stores one word `value` at `to`.
    pub async fn store_value(&self, to: GlobalPtr, value: u64) -> Result<(), AmError> {
        self.check_remote(to, 1, "store")?;
        if to.node == self.me {
            self.local().set(to.word, value);
            self.touch(to.word, 1, Access::Write).await;
            return Ok(());
        }
        self.state().stored_to[to.node.index()].fetch_add(1, Ordering::Relaxed);
        self.send(to.node, self.lib.ids.store, &[to.word, 1, value], Payload::none()).await
    }

    /// Split-phase put of one word `value` at `to`.
    pub async fn put_value(&self, to: GlobalPtr, value: u64) -> Result<(), AmError> {
        self.check_remote(to, 1, "put")?;
        if to.node == self.me {
            self.local().set(to.word, value);
            self.touch(to.word, 1, Access::Write).await;
            return Ok(());
        }
        self.state().puts_issued.fetch_add(1, Ordering::Relaxed);
        self.send(to.node, self.lib.ids.put, &[to.word, 1, value, 0], Payload::none()).await
    }

    /// Blocking read of one word (a get waited for at once).
    pub async fn read(&self, from: GlobalPtr) -> Result<u64, AmError> {
        self.check_remote(from, 1, "read")?;
        if from.node == self.me {
            self.touch(from.word, 1, Access::Read).await;
            return Ok(self.local().get(from.word));
        }
        let args = Args::new(&[from.word, 1, RETURN_VALUE])?;
        let reply = self.p.request_keyed(from.node, self.lib.ids.get, SyncKey::NoSync, args, Payload::none()).await?;
        Ok(reply.args.get(2))
    }

    pub async fn read_f64(&self, from: GlobalPtr) -> Result<f64, AmError> {
        Ok(f64::from_bits(self.read(from).await?))
    }

    /// Blocking write of one word (a put waited for at once).
    pub async fn write(&self, to: GlobalPtr, value: u64) -> Result<(), AmError> {
        self.check_remote(to, 1, "write")?;
        if to.node == self.me {
            self.local().set(to.word, value);
            self.touch(to.word, 1, Access::Write).await;
            return Ok(());
        }
        let args = Args::new(&[to.word, 1, value, 1])?;
        self.p.request_keyed(to.node, self.lib.ids.put, SyncKey::NoSync, args, Payload::none()).await?;
        Ok(())
    }

    /// Waits until every get and put this node issued is complete.
    pub async fn sync(&self) -> Result<(), AmError> {
        let state = self.state();
        self.p.wait_until(|| state.outstanding() == 0).await
    }

    /// Gets and puts issued and not yet complete (the counter's value).
    pub fn outstanding(&self) -> u64 {
        self.state().outstanding()
    }

    /// Waits until `words` more words have been stored into this node
    /// (since the last `store_sync`).
    pub async fn store_sync(&self, words: u64) -> Result<(), AmError> {
        let state = self.state();
        let target = state.stores_consumed.load(Ordering::Relaxed) + words;
        self.p.wait_until(|| state.stores_received.load(Ordering::Acquire) >= target).await?;
        state.stores_consumed.store(target, Ordering::Relaxed);
        Ok(())
    }

    /// Waits until every store any node issued before its call has landed,
    /// then synchronizes all nodes. Each node tells every other how many
    /// words it stored there in all (one message each), waits until it has
    /// heard from all and received that many, and enters a barrier.
    pub async fn all_store_sync(&self) -> Result<(), AmError> {
        let state = self.state();
        let epoch = state.store_epoch.fetch_add(1, Ordering::Relaxed) + 1;
        for d in (0..self.lib.nodes).filter(|&d| d != self.me.0) {
            let stored = state.stored_to[d as usize].load(Ordering::Relaxed);
            self.send(NodeId(d), self.lib.ids.count, &[epoch, stored], Payload::none()).await?;
        }
        let me = self.me.index();
        let all_in = || {
            let mut expected = 0;
            for (src, heard) in state.counts_heard.iter().enumerate() {
                if src != me && heard.load(Ordering::Acquire) < epoch {
                    return false;
                }
                expected += state.counts_reported[src].load(Ordering::Relaxed);
            }
            state.stores_received.load(Ordering::Acquire) >= expected
        };
        self.p.wait_until(all_in).await?;
        self.barrier().await
    }

    /// Waits until every node has called it as often as this one
    /// (a dissemination barrier: in round r each node signals the node
    /// 2^r after it and waits for the one 2^r before).
    pub async fn barrier(&self) -> Result<(), AmError> {
        let state = self.state();
        let epoch = state.barrier_epoch.fetch_add(1, Ordering::Relaxed) + 1;
        let p = self.lib.nodes;
        for round in 0..barrier_rounds(p) {
            let to = (self.me.0 + (1 << round)) % p;
            self.send(NodeId(to), self.lib.ids.barrier, &[round as u64], Payload::none()).await?;
            let arrivals = &state.barrier_arrivals[round as usize];
            self.p.wait_until(|| arrivals.load(Ordering::Acquire) >= epoch).await?;
        }
        Ok(())
    }

    /// Every node's `value`, in node order (each node stores its value at
    /// every other, then all_store_sync). Gathers alternate between two
    /// areas, so a fast node's next gather cannot overwrite values a slow
    /// node has not read: it would first need the slow node at the next
    /// barrier.
    pub async fn all_gather(&self, value: u64) -> Result<Vec<u64>, AmError> {
        let state = self.state();
        let epoch = state.gather_epoch.fetch_add(1, Ordering::Relaxed);
        let p = self.lib.nodes as u64;
        let area = (epoch % 2) * p;
        for d in 0..self.lib.nodes {
            self.store_value(GlobalPtr::new(NodeId(d), area + self.me.0 as u64), value).await?;
        }
        self.all_store_sync().await?;
        let mut out = vec![0; p as usize];
        self.local().read(area, &mut out);
        Ok(out)
    }

    /// The sum over all nodes.
    pub async fn all_reduce_sum(&self, value: u64) -> Result<u64, AmError> {
        Ok(self.all_gather(value).await?.iter().fold(0u64, |a, &b| a.wrapping_add(b)))
    }

    pub async fn all_reduce_max(&self, value: u64) -> Result<u64, AmError> {
        Ok(self.all_gather(value).await?.into_iter().max().unwrap_or(0))
    }

    /// The sum over all nodes of a double, added in node order so every
    /// node gets the same bits.
    pub async fn all_reduce_sum_f64(&self, value: f64) -> Result<f64, AmError> {
        let all = self.all_gather(value.to_bits()).await?;
        Ok(all.into_iter().map(f64::from_bits).sum())
    }

    /// Runs atomic function `f` at `node` with `args` and returns its
    /// result: it runs atomically with respect to that node's handlers and
    /// computation.
    pub async fn atomic(&self, node: NodeId, f: AtomicId, args: [u64; 3]) -> Result<u64, AmError> {
        if node.0 >= self.lib.nodes {
            return Err(AmError::NoSuchNode { node: node.0, nodes: self.lib.nodes });
        }
        let args = Args::new(&[f.0, args[0], args[1], args[2]])?;
        let key = SyncKey::Sequential;
        let reply = self.p.request_keyed(node, self.lib.ids.atomic, key, args, Payload::none()).await?;
        Ok(reply.args.get(0))
    }
}
