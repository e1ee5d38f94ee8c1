//! Sample sort (IPPS 1996 Section 5.3, Table 2: `sample` with get, put and
//! bulk get; `sampleb` with its keys moved by bulk stores).
//!
//! Every node starts with `keys_per_node` keys:
//! 1. each picks `oversample` of its keys at random and puts them (one-word
//!    puts) into node 0's sample area; node 0 sorts the samples and takes
//!    every `oversample`-th as the `nodes - 1` splitters, which every node
//!    then fetches with a bulk get;
//! 2. each node finds every key's bucket (binary search of the splitters)
//!    and groups its keys by destination node;
//! 3. the keys move: under `sample` every destination fetches where its
//!    group starts at each source and how long it is (one-word gets), then
//!    pulls the group with a bulk get; under `sampleb` every source stores
//!    its counts at the destinations (one-word stores), the destinations
//!    store back where each source's keys go, and the sources push their
//!    groups there with bulk stores;
//! 4. each node sorts what it received.
//!
//! A node's answer is its bucket, sorted; the buckets in node order are
//! the sorted input. The paper gives no input size; [`SampleConfig::paper`]
//! and [`SampleConfig::quick`] are this crate's choices.

use super::radix::{compute, node_keys, LIBRARY_WORDS_PER_NODE};
use super::{Phases, SplitcProgram};
use finegrain_core::{AmError, NodeId, Proc, Work};
use finegrain_splitc::{GlobalPtr, SplitNode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One comparison of a local sort (`sort_unstable`, a pattern-defeating
/// quicksort, here and in `bitonic` and `shell`), counted from its
/// partition loop: load the key (1 load), compare it with the pivot in a
/// register and branch (2), step the index and test the bound (2), and the
/// key's move (1 store; about every key moves once per level): 4 integer
/// ops, 1 load, 1 store. A sort of n keys makes about n log2 n of them
/// ([`sort_work`]).
pub const SORT_COMPARE: Work = Work::new(0, 0, 4, 1, 1);

/// Picking one random sample (`node_samples`' loop): the ChaCha8 word pair
/// behind `gen_range` (a 64-byte block of 16 32-bit words costs 8 rounds of
/// 4 quarter-rounds of 12 adds, xors and rotates plus 16 final adds: 25
/// integer ops per word, 50 for two, with a store into and a load from the
/// generator's buffer each, and its index test 2), the range reduction
/// (widening multiply, compare, branch: 3), the loop (3) and the key's
/// index (1): 59 integer ops; loads of the two words and the key, stores
/// of the two words and the sample.
pub const SAMPLE_PICK: Work = Work::new(0, 0, 59, 3, 3);

/// One step of a key's binary search of the splitters (`partition_point`):
/// the midpoint (add and shift: 2), the splitter's load, the compare and
/// the conditional move (2), the base's update (1): 5 integer ops, 1 load.
pub const SEARCH_STEP: Work = Work::new(0, 0, 5, 1, 0);

/// `group`'s work per key besides its search steps: finding the bucket
/// (loop 3, search setup 2; load the key, store its destination), counting
/// it (loop 3, increment 1; load the destination and the count, store the
/// count) and moving it into its destination's group (loop 3, the slot's
/// address 1 and bump 1; load the key, its destination and the slot,
/// store the key and the bumped slot): 14 integer ops, 6 loads, 4 stores.
pub const GROUP_KEY: Work = Work::new(0, 0, 14, 6, 4);

/// A node's receive area holds this many times `keys_per_node`: with
/// enough samples a bucket exceeds it only on a freak input (a run that
/// would overflow it fails, naming it).
pub const RECEIVE_FACTOR: u64 = 2;

/// How the keys move to their buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Moves {
    /// Destinations pull: one-word gets of where and how many, then a bulk
    /// get per source (`sample`).
    Gets,
    /// Sources push with bulk stores (`sampleb`).
    BulkStores,
}

/// The sample sort's input and variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleConfig {
    pub moves: Moves,
    /// Keys each node starts with.
    pub keys_per_node: u64,
    /// Keys are uniform in `0..2^key_bits`.
    pub key_bits: u32,
    /// Samples each node contributes.
    pub oversample: u64,
    pub seed: u64,
}

impl SampleConfig {
    /// For the IPPS 1996 Table 2 run on 16 nodes (the paper gives no size):
    /// 64K 32-bit keys per node (1M keys, the Split-C suite's sorts'
    /// scale), 64 samples per node.
    pub fn paper(moves: Moves) -> SampleConfig {
        SampleConfig { moves, keys_per_node: 65536, key_bits: 32, oversample: 64, seed: 1996 }
    }

    /// A few seconds to simulate on 16 nodes: 8K keys per node.
    pub fn quick(moves: Moves) -> SampleConfig {
        SampleConfig { keys_per_node: 8192, ..SampleConfig::paper(moves) }
    }

    /// For tests: 96 16-bit keys per node, 16 samples per node.
    pub fn tiny(moves: Moves) -> SampleConfig {
        SampleConfig { moves, keys_per_node: 96, key_bits: 16, oversample: 16, seed: 7 }
    }

    /// Whether the sort can run on `nodes` nodes; the error names the field
    /// and what is allowed.
    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        if nodes == 0 {
            return Err("sample on 0 nodes; allowed: 1 or more".into());
        }
        if !(1..=1 << 24).contains(&self.keys_per_node) {
            return Err(format!("invalid keys_per_node = {}; allowed 1..=16777216", self.keys_per_node));
        }
        if !(1..=64).contains(&self.key_bits) {
            return Err(format!("invalid key_bits = {}; allowed 1..=64", self.key_bits));
        }
        if !(1..=self.keys_per_node.min(4096)).contains(&self.oversample) {
            return Err(format!(
                "invalid oversample = {}; allowed 1..={} (at most keys_per_node and 4096)",
                self.oversample,
                self.keys_per_node.min(4096)
            ));
        }
        Ok(())
    }

    fn capacity(&self) -> u64 {
        RECEIVE_FACTOR * self.keys_per_node
    }
}

/// Node `node`'s samples: `count` of its keys picked at random (a stream
/// of their own, after the keys' streams).
fn node_samples(seed: u64, node: u32, keys: &[u64], count: u64) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(1 << 32 | node as u64);
    (0..count).map(|_| keys[rng.gen_range(0..keys.len())]).collect()
}

/// The splitters from all samples, sorted: every `per_node`-th.
fn splitters(sorted: &[u64], per_node: u64, nodes: u32) -> Vec<u64> {
    (1..nodes as u64).map(|i| sorted[(i * per_node) as usize]).collect()
}

/// The node a key goes to: how many splitters are at most the key.
fn bucket(splitters: &[u64], key: u64) -> usize {
    splitters.partition_point(|&s| s <= key)
}

/// A comparison sort of `len` keys: about `len` log2 `len`
/// [`SORT_COMPARE`]s (at least one level).
pub fn sort_work(len: u64) -> Work {
    SORT_COMPARE * (len * (64 - len.leading_zeros() as u64).max(1))
}

/// Where the sort keeps things in every node's segment.
struct Layout {
    keys: u64,
    /// Node 0's: every node's samples.
    samples: u64,
    splitters: u64,
    /// This node's keys grouped by destination.
    send: u64,
    /// Per destination: where its group starts in `send`, and its length.
    starts: u64,
    counts: u64,
    /// Per source: (`sample`) where its group for this node starts and its
    /// length; (`sampleb`) its length, and where this node's keys go there.
    in_starts: u64,
    in_counts: u64,
    recv: u64,
}

impl SampleConfig {
    fn layout<P: Proc>(&self, s: &SplitNode<'_, P>) -> Result<Layout, AmError> {
        let (n, p) = (self.keys_per_node, s.procs() as u64);
        Ok(Layout {
            keys: s.alloc(n)?,
            samples: s.alloc(p * self.oversample)?,
            splitters: s.alloc(p)?,
            send: s.alloc(n)?,
            starts: s.alloc(p)?,
            counts: s.alloc(p)?,
            in_starts: s.alloc(p)?,
            in_counts: s.alloc(p)?,
            recv: s.alloc(self.capacity())?,
        })
    }

    /// Step 1: the splitters, known to every node.
    async fn choose_splitters<P: Proc>(
        &self,
        s: &SplitNode<'_, P>,
        lay: &Layout,
        keys: &[u64],
        phases: &mut Phases,
    ) -> Result<Vec<u64>, AmError> {
        let (m, p, me) = (self.oversample, s.procs(), s.me().0);
        let mine = compute(s, phases, SAMPLE_PICK * m, || node_samples(self.seed, me, keys, m));
        let t0 = s.proc().now();
        let node0 = GlobalPtr::new(NodeId(0), lay.samples + me as u64 * m);
        for (i, &v) in mine.iter().enumerate() {
            s.put_value(node0.offset(i as u64), v).await?;
        }
        s.sync().await?;
        s.barrier().await?;
        phases.add("communicate", s.proc().now() - t0);
        if me == 0 {
            compute(s, phases, sort_work(m * p as u64), || {
                let mut all = vec![0; (m * p as u64) as usize];
                s.local().read(lay.samples, &mut all);
                all.sort_unstable();
                s.local().write(lay.splitters, &splitters(&all, m, p));
            });
        }
        let t0 = s.proc().now();
        s.barrier().await?;
        if p > 1 {
            s.get(GlobalPtr::new(NodeId(0), lay.splitters), lay.splitters, p as u64 - 1).await?;
            s.sync().await?;
        }
        phases.add("communicate", s.proc().now() - t0);
        let mut out = vec![0; p as usize - 1];
        s.local().read(lay.splitters, &mut out);
        Ok(out)
    }

    /// Step 2: this node's keys grouped by destination at `lay.send`, with
    /// each group's start and length at `lay.starts` and `lay.counts`.
    fn group<P: Proc>(&self, s: &SplitNode<'_, P>, lay: &Layout, keys: &[u64], split: &[u64], phases: &mut Phases) {
        let levels = 64 - (split.len() as u64).leading_zeros() as u64;
        let n = self.keys_per_node;
        let work = (GROUP_KEY + SEARCH_STEP * levels) * n;
        compute(s, phases, work, || {
            let dest: Vec<usize> = keys.iter().map(|&k| bucket(split, k)).collect();
            let mut counts = vec![0u64; s.procs() as usize];
            for &d in &dest {
                counts[d] += 1;
            }
            let mut at = Vec::with_capacity(counts.len());
            let mut sum = 0;
            for c in &counts {
                at.push(sum);
                sum += c;
            }
            s.local().write(lay.starts, &at);
            s.local().write(lay.counts, &counts);
            for (&k, &d) in keys.iter().zip(&dest) {
                s.local().set(lay.send + at[d], k);
                at[d] += 1;
            }
        });
    }

    /// Fails every node alike if any node would receive more keys than its
    /// receive area holds.
    async fn fits<P: Proc>(&self, s: &SplitNode<'_, P>, total: u64) -> Result<(), AmError> {
        let most = s.all_reduce_max(total).await?;
        if most > self.capacity() {
            return Err(AmError::NotAllowed(format!(
                "a node's bucket of {most} keys exceeds its receive area of {} ({RECEIVE_FACTOR} x keys_per_node); \
                 allowed: a larger oversample",
                self.capacity()
            )));
        }
        Ok(())
    }

    /// Step 3 under `sample`: this node pulls its keys; returns how many.
    async fn pull<P: Proc>(&self, s: &SplitNode<'_, P>, lay: &Layout) -> Result<u64, AmError> {
        let (p, me) = (s.procs(), s.me().0 as u64);
        s.barrier().await?;
        for q in 0..p {
            let src = NodeId(q);
            s.get(GlobalPtr::new(src, lay.starts + me), lay.in_starts + q as u64, 1).await?;
            s.get(GlobalPtr::new(src, lay.counts + me), lay.in_counts + q as u64, 1).await?;
        }
        s.sync().await?;
        let mut total = 0;
        let (mut starts, mut counts) = (vec![0; p as usize], vec![0; p as usize]);
        s.local().read(lay.in_starts, &mut starts);
        s.local().read(lay.in_counts, &mut counts);
        self.fits(s, counts.iter().sum()).await?;
        for q in 0..p {
            let (start, count) = (starts[q as usize], counts[q as usize]);
            if count > 0 {
                s.get(GlobalPtr::new(NodeId(q), lay.send + start), lay.recv + total, count).await?;
            }
            total += count;
        }
        s.sync().await?;
        Ok(total)
    }

    /// Step 3 under `sampleb`: the sources push the keys; returns how many
    /// this node received.
    async fn push<P: Proc>(&self, s: &SplitNode<'_, P>, lay: &Layout) -> Result<u64, AmError> {
        let (p, me) = (s.procs(), s.me().0 as u64);
        for d in 0..p {
            let count = s.local().get(lay.counts + d as u64);
            s.store_value(GlobalPtr::new(NodeId(d), lay.in_counts + me), count).await?;
        }
        s.all_store_sync().await?;
        let mut counts = vec![0; p as usize];
        s.local().read(lay.in_counts, &mut counts);
        let total: u64 = counts.iter().sum();
        self.fits(s, total).await?;
        let mut at = 0;
        for (q, count) in counts.into_iter().enumerate() {
            s.store_value(GlobalPtr::new(NodeId(q as u32), lay.in_starts + me), at).await?;
            at += count;
        }
        s.all_store_sync().await?;
        for d in 0..p as u64 {
            let (start, count) = (s.local().get(lay.starts + d), s.local().get(lay.counts + d));
            if count > 0 {
                let to = GlobalPtr::new(NodeId(d as u32), lay.recv + s.local().get(lay.in_starts + d));
                s.store(to, lay.send + start, count).await?;
            }
        }
        s.all_store_sync().await?;
        Ok(total)
    }
}

impl SplitcProgram for SampleConfig {
    type Answer = Vec<u64>;

    fn name(&self) -> &'static str {
        match self.moves {
            Moves::Gets => "sample",
            Moves::BulkStores => "sampleb",
        }
    }

    fn input(&self, nodes: u32) -> String {
        format!(
            "{} {}-bit keys, {} per node, {} samples per node (keys moved by {}); the paper gives no size",
            self.keys_per_node * nodes as u64,
            self.key_bits,
            self.keys_per_node,
            self.oversample,
            match self.moves {
                Moves::Gets => "bulk gets",
                Moves::BulkStores => "bulk stores",
            }
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        let p = nodes as u64;
        LIBRARY_WORDS_PER_NODE * p + 2 * self.keys_per_node + p * self.oversample + 5 * p + self.capacity()
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<Vec<u64>, AmError> {
        self.validate(s.procs()).map_err(AmError::NotAllowed)?;
        let lay = self.layout(s)?;
        let keys = node_keys(self.seed, s.me().0, self.keys_per_node, self.key_bits);
        s.local().write(lay.keys, &keys);
        let split = self.choose_splitters(s, &lay, &keys, phases).await?;
        self.group(s, &lay, &keys, &split, phases);
        let t0 = s.proc().now();
        let total = match self.moves {
            Moves::Gets => self.pull(s, &lay).await?,
            Moves::BulkStores => self.push(s, &lay).await?,
        };
        phases.add("communicate", s.proc().now() - t0);
        Ok(compute(s, phases, sort_work(total), || {
            let mut mine = vec![0; total as usize];
            s.local().read(lay.recv, &mut mine);
            mine.sort_unstable();
            mine
        }))
    }

    fn check(&self, nodes: u32, answers: &[&Vec<u64>]) -> Result<(), String> {
        let (n, m) = (self.keys_per_node, self.oversample);
        let keys: Vec<Vec<u64>> = (0..nodes).map(|p| node_keys(self.seed, p, n, self.key_bits)).collect();
        let mut samples: Vec<u64> = (0..nodes).flat_map(|p| node_samples(self.seed, p, &keys[p as usize], m)).collect();
        samples.sort_unstable();
        let split = splitters(&samples, m, nodes);
        let mut buckets = vec![Vec::new(); nodes as usize];
        for &k in keys.iter().flatten() {
            buckets[bucket(&split, k)].push(k);
        }
        for (node, (want, got)) in buckets.iter_mut().zip(answers).enumerate() {
            want.sort_unstable();
            if got.len() != want.len() {
                return Err(format!("node {node} holds {} keys; its bucket has {}", got.len(), want.len()));
            }
            if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
                return Err(format!("node {node}'s key {i} is {}; its sorted bucket has {}", got[i], want[i]));
            }
        }
        Ok(())
    }
}
