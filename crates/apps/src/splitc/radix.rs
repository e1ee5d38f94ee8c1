//! Radix sort (IPPS 1996 Section 5.3, Table 2: `radix` with one-word
//! stores, `radixb` the same algorithm with bulk stores).
//!
//! Keys are dealt out in blocks of `keys_per_node`; the sorted keys end up
//! blocked the same way (node 0 holds the smallest). Each pass sorts stably
//! on one digit of `digit_bits`, least significant first, as the Split-C
//! suite's radix sort does:
//! 1. every node counts its keys per digit value (its histogram);
//! 2. a parallel prefix over the histograms: digit values are dealt out in
//!    blocks to owner nodes, each node stores its counts to the owners, the
//!    owners scan their block (digit value, then node) and gather the
//!    block totals, and store every node's starting positions back;
//! 3. every node stores each key to its position in the other key buffer
//!    (`radix`: one one-word store per key; `radixb`: keys first grouped by
//!    digit locally, then each run bound for one node sent as one bulk
//!    store).
//!
//! The paper gives no input size; [`RadixConfig::paper`] and
//! [`RadixConfig::quick`] are this crate's choices (see their comments).

use super::{Phases, SplitcProgram};
use finegrain_core::{AmError, NodeId, Proc, Work};
use finegrain_splitc::{GlobalPtr, SplitNode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Counting one key into the histogram (`histogram`'s loop): the loop (3
/// integer), the digit (shift and mask: 2), the count's address (1) and
/// its increment (1): 7 integer ops; loads of the key and the count, a
/// store of the count.
pub const HISTOGRAM_KEY: Work = Work::new(0, 0, 7, 2, 1);

/// One histogram entry of the owners' first scan, which only sums
/// (`scan_owned` without a base): the loop (3), the entry's word
/// (`owned + p * per + d`, the product stepped: 2 adds), the `base` test
/// (1) and the running sum (1): 7 integer ops, one load of the count.
pub const SCAN_SUM_ENTRY: Work = Work::new(0, 0, 7, 1, 0);

/// One histogram entry of the owners' second scan, which also replaces the
/// count with its starting position (`scan_owned` with a base): the
/// first scan's entry and the store of the running sum.
pub const SCAN_START_ENTRY: Work = SCAN_SUM_ENTRY.plus(Work::new(0, 0, 0, 0, 1));

/// Finding one key's destination just before its one-word store (`route`
/// under `radix`): the loop (3), the digit (shift and mask: 2), the
/// position's split into node and word (divide and remainder by the keys
/// per node: 2), the word's address (1), bumping the digit's next
/// position (1) and its address (1): 10 integer ops; loads of the key and
/// the digit's next position, a store of the bumped position.
pub const ROUTE_KEY: Work = Work::new(0, 0, 10, 2, 1);

/// Moving one key into its digit's group before the bulk stores (`group`
/// under `radixb`, its per-key loop): the loop (3), the digit (shift and
/// mask: 2), the group slot's address (1) and the slot's bump (1): 7
/// integer ops; loads of the key and the digit's slot, stores of the key
/// and the bumped slot.
pub const GROUP_KEY: Work = Work::new(0, 0, 7, 2, 2);

/// `group`'s work per digit value: the prefix over the histogram (loop 3,
/// running sum 1; load the count, store the start) and the digit's run of
/// keys split at node boundaries (the loop test 2, the remainder by the
/// keys per node and the room left 2, the `min` compare-and-branch 2, the
/// three advances 3, the push 1; loads of the count again, the group
/// start and the global start, three stores of the run): 14 integer ops,
/// 4 loads, 4 stores (a run crossing a node boundary repeats the split,
/// which is not counted).
pub const GROUP_DIGIT: Work = Work::new(0, 0, 14, 4, 4);

/// Words the Split-C library keeps at the start of every segment, per
/// node (its two gather areas).
pub(super) const LIBRARY_WORDS_PER_NODE: u64 = 2;

/// How keys travel to their destinations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stores {
    /// One store operation per word (`radix`).
    OneWord,
    /// One bulk store per run of consecutive words (`radixb`).
    Bulk,
}

/// The radix sort's input and variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadixConfig {
    pub stores: Stores,
    /// Keys each node starts with (and ends with).
    pub keys_per_node: u64,
    /// Keys are uniform in `0..2^key_bits`.
    pub key_bits: u32,
    /// Bits sorted per pass.
    pub digit_bits: u32,
    pub seed: u64,
}

impl RadixConfig {
    /// For the IPPS 1996 Table 2 run on 16 nodes (the paper gives no size):
    /// 4K 32-bit keys per node (64K keys), four passes of 8-bit digits:
    /// 256K one-word stores in all, which the simulator finishes in about
    /// ten seconds under coproc-am (twice the keys took nearly a minute: its
    /// time there grows faster than the stores).
    pub fn paper(stores: Stores) -> RadixConfig {
        RadixConfig { stores, keys_per_node: 4096, key_bits: 32, digit_bits: 8, seed: 1996 }
    }

    /// A few seconds to simulate on 16 nodes: 1K 32-bit keys per node, four
    /// passes of 8-bit digits.
    pub fn quick(stores: Stores) -> RadixConfig {
        RadixConfig { keys_per_node: 1024, ..RadixConfig::paper(stores) }
    }

    /// For tests: 64 16-bit keys per node, four passes of 4-bit digits.
    pub fn tiny(stores: Stores) -> RadixConfig {
        RadixConfig { stores, keys_per_node: 64, key_bits: 16, digit_bits: 4, seed: 7 }
    }

    /// Whether the sort can run on `nodes` nodes; the error names the field
    /// and what is allowed.
    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        if nodes == 0 {
            return Err("radix on 0 nodes; allowed: 1 or more".into());
        }
        if !(1..=1 << 24).contains(&self.keys_per_node) {
            return Err(format!("invalid keys_per_node = {}; allowed 1..=16777216", self.keys_per_node));
        }
        if !(1..=64).contains(&self.key_bits) {
            return Err(format!("invalid key_bits = {}; allowed 1..=64", self.key_bits));
        }
        if !(1..=16).contains(&self.digit_bits) || self.digit_bits > self.key_bits {
            return Err(format!(
                "invalid digit_bits = {}; allowed 1..=16 and at most key_bits ({})",
                self.digit_bits, self.key_bits
            ));
        }
        Ok(())
    }

    fn passes(&self) -> u32 {
        self.key_bits.div_ceil(self.digit_bits)
    }

    fn buckets(&self) -> u64 {
        1 << self.digit_bits
    }
}

/// Node `node`'s `n` keys of `bits` bits from `seed` (a stream per node, so
/// any node's keys can be made without the others').
pub(super) fn node_keys(seed: u64, node: u32, n: u64, bits: u32) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(node as u64);
    let mask = if bits >= 64 { u64::MAX } else { (1 << bits) - 1 };
    (0..n).map(|_| rng.gen::<u64>() & mask).collect()
}

/// Checks that the nodes hold `all`'s keys sorted, `per_node` each in node
/// order.
pub(super) fn check_sorted_blocks(mut all: Vec<u64>, per_node: u64, answers: &[&Vec<u64>]) -> Result<(), String> {
    all.sort_unstable();
    for (node, (want, got)) in all.chunks(per_node as usize).zip(answers).enumerate() {
        if got.len() != want.len() {
            return Err(format!("node {node} holds {} keys; the sort gives it {}", got.len(), want.len()));
        }
        if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
            return Err(format!("node {node}'s key {i} is {}; the sorted input has {}", got[i], want[i]));
        }
    }
    Ok(())
}

/// Runs `f` (computation the thread does itself), charges the platform
/// the counted `work` it does, and adds its time to phase "compute".
pub(super) fn compute<P: Proc, T>(s: &SplitNode<'_, P>, phases: &mut Phases, work: Work, f: impl FnOnce() -> T) -> T {
    let t0 = s.proc().now();
    let out = f();
    s.proc().charge_work(work);
    phases.add("compute", s.proc().now() - t0);
    out
}

/// Where the sort keeps things in every node's segment.
struct Layout {
    /// The two key buffers (a pass reads one and stores into the other).
    keys: [u64; 2],
    /// This node's histogram, then (bulk) its keys grouped by digit.
    hist: u64,
    group: u64,
    /// At an owner: counts, then starting positions, node-major over its
    /// block of digit values.
    owned: u64,
    /// This node's starting position for each digit value.
    starts: u64,
}

/// The digit values node `o` owns in the parallel prefix: a block of
/// `ceil(buckets / nodes)`.
fn owned_digits(buckets: u64, nodes: u32, o: u32) -> std::ops::Range<u64> {
    let per = buckets.div_ceil(nodes as u64);
    let first = (o as u64 * per).min(buckets);
    first..(first + per).min(buckets)
}

/// Sends `len` words from this node's `from` to `to`, as the variant
/// does: word by word, or in one bulk store.
async fn send<P: Proc>(
    s: &SplitNode<'_, P>,
    stores: Stores,
    to: GlobalPtr,
    from: u64,
    len: u64,
) -> Result<(), AmError> {
    match stores {
        Stores::Bulk => s.store(to, from, len).await,
        Stores::OneWord => {
            for i in 0..len {
                s.store_value(to.offset(i), s.local().get(from + i)).await?;
            }
            Ok(())
        }
    }
}

impl RadixConfig {
    fn layout<P: Proc>(&self, s: &SplitNode<'_, P>) -> Result<Layout, AmError> {
        let n = self.keys_per_node;
        let b = self.buckets();
        let per = b.div_ceil(s.procs() as u64);
        Ok(Layout {
            keys: [s.alloc(n)?, s.alloc(n)?],
            hist: s.alloc(b)?,
            group: s.alloc(n)?,
            owned: s.alloc(s.procs() as u64 * per)?,
            starts: s.alloc(b)?,
        })
    }

    fn digit(&self, key: u64, pass: u32) -> u64 {
        let shift = pass * self.digit_bits;
        if shift >= 64 {
            return 0;
        }
        (key >> shift) & (self.buckets() - 1)
    }

    /// Step 1: this node's histogram of the pass's digit, left at
    /// `lay.hist`.
    fn histogram<P: Proc>(&self, s: &SplitNode<'_, P>, lay: &Layout, src: u64, pass: u32, phases: &mut Phases) {
        let n = self.keys_per_node;
        compute(s, phases, HISTOGRAM_KEY * n, || {
            let mut hist = vec![0u64; self.buckets() as usize];
            for i in 0..n {
                hist[self.digit(s.local().get(src + i), pass) as usize] += 1;
            }
            s.local().write(lay.hist, &hist);
        });
    }

    /// Step 2: the parallel prefix; leaves this node's starting position
    /// for each digit value at `lay.starts`.
    async fn prefix<P: Proc>(&self, s: &SplitNode<'_, P>, lay: &Layout, phases: &mut Phases) -> Result<(), AmError> {
        let (b, nodes, me) = (self.buckets(), s.procs(), s.me().0 as u64);
        let per = b.div_ceil(nodes as u64);
        let t0 = s.proc().now();
        for o in 0..nodes {
            let digits = owned_digits(b, nodes, o);
            if !digits.is_empty() {
                let to = GlobalPtr::new(NodeId(o), lay.owned + me * per);
                send(s, self.stores, to, lay.hist + digits.start, digits.end - digits.start).await?;
            }
        }
        s.all_store_sync().await?;
        phases.add("communicate", s.proc().now() - t0);
        let mine = owned_digits(b, nodes, s.me().0);
        let width = mine.end - mine.start;
        let total = self.scan_owned(s, lay, width, None, phases);
        let totals = phases.time(s.proc(), "communicate", s.all_gather(total)).await?;
        let base: u64 = totals[..s.me().index()].iter().sum();
        self.scan_owned(s, lay, width, Some(base), phases);
        let t0 = s.proc().now();
        if width > 0 {
            for p in 0..nodes as u64 {
                let to = GlobalPtr::new(NodeId(p as u32), lay.starts + mine.start);
                send(s, self.stores, to, lay.owned + p * per, width).await?;
            }
        }
        s.all_store_sync().await?;
        phases.add("communicate", s.proc().now() - t0);
        Ok(())
    }

    /// The owner's scan of its block (digit value, then node): sums the
    /// block, and with a `base` also replaces every count with its
    /// starting position, counting from there.
    fn scan_owned<P: Proc>(
        &self,
        s: &SplitNode<'_, P>,
        lay: &Layout,
        width: u64,
        base: Option<u64>,
        phases: &mut Phases,
    ) -> u64 {
        let nodes = s.procs() as u64;
        let per = self.buckets().div_ceil(nodes);
        let entry = if base.is_some() { SCAN_START_ENTRY } else { SCAN_SUM_ENTRY };
        compute(s, phases, entry * (nodes * width), || {
            let mut running = base.unwrap_or(0);
            for d in 0..width {
                for p in 0..nodes {
                    let w = lay.owned + p * per + d;
                    let count = s.local().get(w);
                    if base.is_some() {
                        s.local().set(w, running);
                    }
                    running += count;
                }
            }
            running - base.unwrap_or(0)
        })
    }

    /// Step 3: every key stored to its position in buffer `dst`.
    async fn route<P: Proc>(
        &self,
        s: &SplitNode<'_, P>,
        lay: &Layout,
        (src, dst): (u64, u64),
        pass: u32,
        phases: &mut Phases,
    ) -> Result<(), AmError> {
        let n = self.keys_per_node;
        let mut next = vec![0u64; self.buckets() as usize];
        s.local().read(lay.starts, &mut next);
        let place = |g: u64| GlobalPtr::new(NodeId((g / n) as u32), dst + g % n);
        match self.stores {
            Stores::OneWord => {
                let t0 = s.proc().now();
                // Each key's destination is found just before its store,
                // as the program interleaves them.
                for i in 0..n {
                    let key = s.local().get(src + i);
                    let d = self.digit(key, pass) as usize;
                    s.proc().charge_work(ROUTE_KEY);
                    s.store_value(place(next[d]), key).await?;
                    next[d] += 1;
                }
                s.all_store_sync().await?;
                phases.add("communicate", s.proc().now() - t0);
            }
            Stores::Bulk => {
                let runs = self.group(s, lay, src, pass, &next, phases);
                let t0 = s.proc().now();
                for (from, g, len) in runs {
                    s.store(place(g), from, len).await?;
                }
                s.all_store_sync().await?;
                phases.add("communicate", s.proc().now() - t0);
            }
        }
        Ok(())
    }

    /// `radixb`'s local step: the keys grouped by digit value (stably) at
    /// `lay.group`; returns the bulk stores to make, `(first local word,
    /// global position, words)`, each run within one destination node.
    fn group<P: Proc>(
        &self,
        s: &SplitNode<'_, P>,
        lay: &Layout,
        src: u64,
        pass: u32,
        starts: &[u64],
        phases: &mut Phases,
    ) -> Vec<(u64, u64, u64)> {
        let n = self.keys_per_node;
        let work = GROUP_KEY * n + GROUP_DIGIT * self.buckets();
        compute(s, phases, work, || {
            let mut hist = vec![0u64; self.buckets() as usize];
            s.local().read(lay.hist, &mut hist);
            let mut at = Vec::with_capacity(hist.len());
            let mut sum = 0;
            for h in &hist {
                at.push(sum);
                sum += h;
            }
            let group_starts = at.clone();
            for i in 0..n {
                let key = s.local().get(src + i);
                let d = self.digit(key, pass) as usize;
                s.local().set(lay.group + at[d], key);
                at[d] += 1;
            }
            let mut runs = Vec::new();
            for (d, &count) in hist.iter().enumerate() {
                let (mut from, mut g, mut left) = (lay.group + group_starts[d], starts[d], count);
                while left > 0 {
                    let len = left.min(n - g % n);
                    runs.push((from, g, len));
                    (from, g, left) = (from + len, g + len, left - len);
                }
            }
            runs
        })
    }
}

impl SplitcProgram for RadixConfig {
    type Answer = Vec<u64>;

    fn name(&self) -> &'static str {
        match self.stores {
            Stores::OneWord => "radix",
            Stores::Bulk => "radixb",
        }
    }

    fn input(&self, nodes: u32) -> String {
        format!(
            "{} {}-bit keys, {} per node, {} passes of {}-bit digits ({} stores); the paper gives no size",
            self.keys_per_node * nodes as u64,
            self.key_bits,
            self.keys_per_node,
            self.passes(),
            self.digit_bits,
            match self.stores {
                Stores::OneWord => "one-word",
                Stores::Bulk => "bulk",
            }
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        let b = self.buckets();
        LIBRARY_WORDS_PER_NODE * nodes as u64 + 3 * self.keys_per_node + 2 * b + nodes as u64 * b.div_ceil(nodes as u64)
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<Vec<u64>, AmError> {
        self.validate(s.procs()).map_err(AmError::NotAllowed)?;
        let lay = self.layout(s)?;
        let n = self.keys_per_node;
        s.local().write(lay.keys[0], &node_keys(self.seed, s.me().0, n, self.key_bits));
        s.barrier().await?;
        for pass in 0..self.passes() {
            let (src, dst) = (lay.keys[pass as usize % 2], lay.keys[(pass as usize + 1) % 2]);
            self.histogram(s, &lay, src, pass, phases);
            self.prefix(s, &lay, phases).await?;
            self.route(s, &lay, (src, dst), pass, phases).await?;
        }
        let mut out = vec![0; n as usize];
        s.local().read(lay.keys[self.passes() as usize % 2], &mut out);
        Ok(out)
    }

    fn check(&self, nodes: u32, answers: &[&Vec<u64>]) -> Result<(), String> {
        let n = self.keys_per_node;
        let all: Vec<u64> = (0..nodes).flat_map(|p| node_keys(self.seed, p, n, self.key_bits)).collect();
        check_sorted_blocks(all, n, answers)
    }
}
