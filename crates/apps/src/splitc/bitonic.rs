//! Bitonic sort with bulk stores (IPPS 1996 Section 5.3, Table 2: "a
//! bitonic sort program, which uses bulk store operations for
//! communication").
//!
//! Each of P nodes (a power of two) holds `keys_per_node` 32-bit keys.
//! The nodes sort their keys locally, then run Batcher's bitonic network
//! over the P sorted blocks with merge-split in place of compare-exchange:
//! at each of the log P (log P + 1) / 2 steps a node and its partner (the
//! node whose number differs in one bit) swap their whole blocks with one
//! bulk store each, and each merges the two blocks and keeps the lower or
//! the upper half. A bitonic network of merge-splits sorts sorted blocks as
//! its compare-exchanges sort keys, so at the end node p holds the p-th
//! run of the sorted keys.
//!
//! The steps are separated by `all_store_sync`: the co-processor paper's
//! "computation phases, separated by barriers". A node merges from the
//! block its partner stored while a faster node may already store the next
//! step's block, so incoming blocks alternate between two buffers.
//!
//! The paper gives no input size. [`BitonicConfig::paper`] sorts 64 K keys
//! per node (1 M keys on 16 nodes); [`BitonicConfig::quick`] 4 K per node.

use super::sample::sort_work;
use super::{Phases, SplitcProgram};
use finegrain_core::{AmError, NodeId, Proc, Work};
use finegrain_splitc::{GlobalPtr, SplitNode};
use rand::RngCore;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One key a merge-split writes out (`merge_split`'s loop, either half):
/// the loop test on the output's length (compare and branch: 2), the two
/// run-end tests (2 each), the keys' compare and branch (2), the output
/// length's step (1) and the taken run's index step (1): 10 integer ops;
/// loads of the two keys at the heads of the runs, a store of the key
/// written. The local sort before the network is [`sort_work`].
pub const MERGE_KEY: Work = Work::new(0, 0, 10, 2, 1);

/// The upper half's final `reverse` (it is merged from the top down), per
/// key: a swap of a pair is 2 loads, 2 stores, the loop (3) and the
/// mirrored index (1), so per key 1 load, 1 store and 2 integer ops.
pub const REVERSE_KEY: Work = Work::new(0, 0, 2, 1, 1);

/// A merge-split of two runs of `n` keys keeping the lower (or upper)
/// half.
pub fn merge_split_work(n: u64, keep_low: bool) -> Work {
    MERGE_KEY * n + if keep_low { Work::NONE } else { REVERSE_KEY * n }
}

/// The bitonic sort's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BitonicConfig {
    /// Keys each node starts with and ends with.
    pub keys_per_node: u64,
    pub seed: u64,
}

impl BitonicConfig {
    /// 64 K keys per node (the paper gives no size).
    pub fn paper() -> BitonicConfig {
        BitonicConfig { keys_per_node: 64 * 1024, seed: 1996 }
    }

    /// 4 K keys per node.
    pub fn quick() -> BitonicConfig {
        BitonicConfig { keys_per_node: 4 * 1024, seed: 1996 }
    }

    /// 64 keys per node, for tests.
    pub fn tiny() -> BitonicConfig {
        BitonicConfig { keys_per_node: 64, seed: 7 }
    }

    /// Checks the configuration for `nodes` nodes; the error names the
    /// field and what is allowed.
    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        if !nodes.is_power_of_two() {
            return Err(format!(
                "bitonic: {nodes} nodes; allowed: a power of two (1, 2, 4, 8, 16...), the bitonic network's size"
            ));
        }
        if self.keys_per_node == 0 {
            return Err("bitonic: keys_per_node = 0; allowed: 1 or more".into());
        }
        Ok(())
    }
}

/// Key `i` of the seeded input: the top 32 bits of word `i` of the
/// ChaCha8 stream, so a node generates its own run without the others'.
fn keys(seed: u64, first: u64, len: u64) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_word_pos(2 * u128::from(first));
    (0..len).map(|_| rng.next_u64() >> 32).collect()
}

/// One step of the bitonic network: the partner's bit and whether this
/// node keeps the lower half.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Step {
    partner: u32,
    keep_low: bool,
}

/// The network's steps for node `me` of `nodes`: stage k (1..=log P)
/// merges runs of 2^k nodes, ascending when bit k of the node is 0 (always
/// in the last stage), with steps over bits k-1 down to 0.
fn steps(me: u32, nodes: u32) -> Vec<Step> {
    let log = nodes.trailing_zeros();
    let mut out = Vec::new();
    for k in 1..=log {
        let ascending = me & (1 << k) == 0;
        for bit in (0..k).rev() {
            let partner = me ^ (1 << bit);
            out.push(Step { partner, keep_low: (me < partner) == ascending });
        }
    }
    out
}

/// The lower (or upper) `mine.len()` keys of two sorted runs, sorted.
fn merge_split(mine: &[u64], theirs: &[u64], keep_low: bool) -> Vec<u64> {
    let n = mine.len();
    let mut out = Vec::with_capacity(n);
    if keep_low {
        let (mut x, mut y) = (0, 0);
        while out.len() < n {
            if y >= theirs.len() || (x < n && mine[x] <= theirs[y]) {
                out.push(mine[x]);
                x += 1;
            } else {
                out.push(theirs[y]);
                y += 1;
            }
        }
    } else {
        let (mut x, mut y) = (n, theirs.len());
        while out.len() < n {
            if y == 0 || (x > 0 && mine[x - 1] >= theirs[y - 1]) {
                out.push(mine[x - 1]);
                x -= 1;
            } else {
                out.push(theirs[y - 1]);
                y -= 1;
            }
        }
        out.reverse();
    }
    out
}

impl SplitcProgram for BitonicConfig {
    /// The node's keys at the end, sorted.
    type Answer = Vec<u64>;

    fn name(&self) -> &'static str {
        "bitonic"
    }

    fn input(&self, nodes: u32) -> String {
        format!(
            "{} 32-bit keys, {} per node on {nodes} (the paper gives no size)",
            self.keys_per_node.saturating_mul(nodes as u64),
            self.keys_per_node
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        self.keys_per_node.saturating_mul(3).saturating_add(2 * nodes as u64 + 1)
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<Vec<u64>, AmError> {
        self.validate(s.procs()).map_err(AmError::NotAllowed)?;
        let n = self.keys_per_node;
        let mine = s.alloc(n)?;
        let incoming = [s.alloc(n)?, s.alloc(n)?];
        let mut block = keys(self.seed, s.me().0 as u64 * n, n);

        let t0 = s.proc().now();
        block.sort_unstable();
        s.proc().charge_work(sort_work(n));
        s.local().write(mine, &block);
        phases.add("compute", s.proc().now() - t0);

        for (x, step) in steps(s.me().0, s.procs()).into_iter().enumerate() {
            let landing = incoming[x % 2];
            let t0 = s.proc().now();
            s.store(GlobalPtr::new(NodeId(step.partner), landing), mine, n).await?;
            s.all_store_sync().await?;
            phases.add("communicate", s.proc().now() - t0);
            phases.count("bulk_stores", 1);
            phases.count("store_words", n);

            let t0 = s.proc().now();
            let mut theirs = vec![0; n as usize];
            s.local().read(landing, &mut theirs);
            block = merge_split(&block, &theirs, step.keep_low);
            s.proc().charge_work(merge_split_work(n, step.keep_low));
            s.local().write(mine, &block);
            phases.add("compute", s.proc().now() - t0);
        }
        Ok(block)
    }

    fn check(&self, nodes: u32, answers: &[&Vec<u64>]) -> Result<(), String> {
        let n = self.keys_per_node;
        let mut all = keys(self.seed, 0, n * nodes as u64);
        all.sort_unstable();
        for (node, got) in answers.iter().enumerate() {
            let want = &all[node * n as usize..(node + 1) * n as usize];
            if got.as_slice() != want {
                let x = got.iter().zip(want).position(|(g, w)| g != w).unwrap_or(got.len().min(want.len()));
                return Err(format!(
                    "node {node}: {} keys, key {x} is {:?}, expected {:?} (the {x}th of the sorted run {node})",
                    got.len(),
                    got.get(x),
                    want.get(x)
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_split_keeps_each_half_sorted() {
        let (a, b) = ([1, 4, 6, 9], [2, 3, 7, 8]);
        assert_eq!(merge_split(&a, &b, true), [1, 2, 3, 4]);
        assert_eq!(merge_split(&a, &b, false), [6, 7, 8, 9]);
        assert_eq!(merge_split(&[5, 5], &[5, 5], false), [5, 5]);
    }

    #[test]
    fn the_network_sorts_blocks_sequentially() {
        // The same steps run on blocks in one place sort them.
        let nodes = 8u32;
        let mut blocks: Vec<Vec<u64>> = (0..nodes as u64).map(|p| keys(3, p * 5, 5)).collect();
        blocks.iter_mut().for_each(|b| b.sort_unstable());
        let all_steps: Vec<Vec<Step>> = (0..nodes).map(|p| steps(p, nodes)).collect();
        for x in 0..all_steps[0].len() {
            let before = blocks.clone();
            for (p, node_steps) in all_steps.iter().enumerate() {
                let st = node_steps[x];
                assert_eq!(all_steps[st.partner as usize][x].partner as usize, p, "partners pair up");
                blocks[p] = merge_split(&before[p], &before[st.partner as usize], st.keep_low);
            }
        }
        let flat: Vec<u64> = blocks.concat();
        let mut sorted = flat.clone();
        sorted.sort_unstable();
        assert_eq!(flat, sorted);
    }
}
