//! Shell sort (IPPS 1996 Section 5.3, Table 2: `shell`, with bulk reads),
//! the parallel form Split-C programs use (Fox et al.'s hypercube
//! shellsort): every node sorts its block, then
//! 1. for each hypercube dimension, highest first, the node and its
//!    partner across that dimension merge-split their blocks (the lower
//!    node keeps the smaller half);
//! 2. odd-even transposition between neighbours finishes the sort: rounds
//!    pairing (even, next) and (odd, next) alternate until a pair of
//!    rounds changes no block.
//!
//! Each merge-split fetches the partner's whole block with a bulk read (a
//! bulk get waited for at once); barriers separate reading a block from
//! replacing it. A node's answer is its final block; the blocks in node
//! order are the sorted input. The paper gives no input size;
//! [`ShellConfig::paper`] and [`ShellConfig::quick`] are this crate's
//! choices.

use super::radix::{check_sorted_blocks, compute, node_keys, LIBRARY_WORDS_PER_NODE};
use super::sample::sort_work;
use super::{Phases, SplitcProgram};
use finegrain_core::{AmError, NodeId, Proc, Work};
use finegrain_splitc::{GlobalPtr, SplitNode};
use serde::{Deserialize, Serialize};

/// One key a merge-split writes out (`merge_split`'s loop, either half):
/// the loop test on the output's length (compare and branch: 2), the two
/// run-end tests (2 each), the keys' compare and branch (2), the output
/// length's step (1) and the taken run's index step (1): 10 integer ops;
/// loads of the two keys at the heads of the runs, a store of the key
/// written. The local sort before the merges is [`sort_work`].
pub const MERGE_KEY: Work = Work::new(0, 0, 10, 2, 1);

/// The larger half's final `reverse` (it is merged from the top down), per
/// key: a swap of a pair is 2 loads, 2 stores, the loop (3) and the
/// mirrored index (1), so per key 1 load, 1 store and 2 integer ops.
pub const REVERSE_KEY: Work = Work::new(0, 0, 2, 1, 1);

/// Comparing one key of the merged block with the old one, to learn
/// whether the step changed the block (up to the first difference): the
/// loop (3), the compare and branch (2); loads of both keys.
pub const CHANGED_KEY: Work = Work::new(0, 0, 5, 2, 0);

/// The shell sort's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellConfig {
    /// Keys each node holds throughout.
    pub keys_per_node: u64,
    /// Keys are uniform in `0..2^key_bits`.
    pub key_bits: u32,
    pub seed: u64,
}

impl ShellConfig {
    /// For the IPPS 1996 Table 2 run on 16 nodes (the paper gives no size):
    /// 64K 32-bit keys per node (1M keys, the Split-C suite's sorts'
    /// scale).
    pub fn paper() -> ShellConfig {
        ShellConfig { keys_per_node: 65536, key_bits: 32, seed: 1996 }
    }

    /// A few seconds to simulate on 16 nodes: 8K keys per node.
    pub fn quick() -> ShellConfig {
        ShellConfig { keys_per_node: 8192, ..ShellConfig::paper() }
    }

    /// For tests: 64 16-bit keys per node.
    pub fn tiny() -> ShellConfig {
        ShellConfig { keys_per_node: 64, key_bits: 16, seed: 7 }
    }

    /// Whether the sort can run on `nodes` nodes; the error names the field
    /// and what is allowed.
    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        if !nodes.is_power_of_two() {
            return Err(format!("shell on {nodes} nodes; allowed: a power of two (its hypercube phase)"));
        }
        if !(1..=1 << 24).contains(&self.keys_per_node) {
            return Err(format!("invalid keys_per_node = {}; allowed 1..=16777216", self.keys_per_node));
        }
        if !(1..=64).contains(&self.key_bits) {
            return Err(format!("invalid key_bits = {}; allowed 1..=64", self.key_bits));
        }
        Ok(())
    }
}

/// The smaller (`low`) or larger half of two sorted blocks of equal
/// length.
fn merge_split(mine: &[u64], theirs: &[u64], low: bool) -> Vec<u64> {
    let n = mine.len();
    let mut out = Vec::with_capacity(n);
    if low {
        let (mut i, mut j) = (0, 0);
        while out.len() < n {
            if j >= theirs.len() || (i < n && mine[i] <= theirs[j]) {
                out.push(mine[i]);
                i += 1;
            } else {
                out.push(theirs[j]);
                j += 1;
            }
        }
    } else {
        let (mut i, mut j) = (n, theirs.len());
        while out.len() < n {
            if j == 0 || (i > 0 && mine[i - 1] >= theirs[j - 1]) {
                out.push(mine[i - 1]);
                i -= 1;
            } else {
                out.push(theirs[j - 1]);
                j -= 1;
            }
        }
        out.reverse();
    }
    out
}

/// Where the sort keeps things in every node's segment.
struct Layout {
    /// This node's block (partners read it).
    block: u64,
    /// Where a partner's block lands.
    theirs: u64,
}

impl ShellConfig {
    /// One merge-split step; `partner` is `None` for a node left out of an
    /// odd-even round (it still takes part in the barriers). Returns
    /// whether this node's block changed.
    async fn step<P: Proc>(
        &self,
        s: &SplitNode<'_, P>,
        lay: &Layout,
        partner: Option<u32>,
        phases: &mut Phases,
    ) -> Result<bool, AmError> {
        let n = self.keys_per_node;
        let t0 = s.proc().now();
        // Every block is final for this step once all nodes are here.
        s.barrier().await?;
        if let Some(q) = partner {
            s.get(GlobalPtr::new(NodeId(q), lay.block), lay.theirs, n).await?;
            s.sync().await?;
        }
        phases.add("communicate", s.proc().now() - t0);
        let merged = partner.map(|q| {
            let low = s.me().0 < q;
            let merge = MERGE_KEY * n + if low { Work::NONE } else { REVERSE_KEY * n };
            compute(s, phases, merge, || {
                let (mut mine, mut theirs) = (vec![0; n as usize], vec![0; n as usize]);
                s.local().read(lay.block, &mut mine);
                s.local().read(lay.theirs, &mut theirs);
                let out = merge_split(&mine, &theirs, low);
                // Whether the block changed, compared up to the first
                // difference.
                let differs = out.iter().zip(&mine).position(|(o, m)| o != m);
                s.proc().charge_work(CHANGED_KEY * differs.map_or(n, |i| i as u64 + 1));
                differs.map(|_| out)
            })
        });
        // The partner has read this block once all nodes are here.
        phases.time(s.proc(), "communicate", s.barrier()).await?;
        if let Some(Some(out)) = merged {
            s.local().write(lay.block, &out);
            return Ok(true);
        }
        Ok(false)
    }

    /// The odd-even transposition phase: alternating rounds until a pair of
    /// rounds changes no block anywhere (at most `nodes` rounds sort any
    /// blocks, so at most `nodes / 2 + 1` pairs run).
    async fn odd_even<P: Proc>(&self, s: &SplitNode<'_, P>, lay: &Layout, phases: &mut Phases) -> Result<(), AmError> {
        let (me, p) = (s.me().0, s.procs());
        for _pair in 0..=p / 2 + 1 {
            let mut changed = 0;
            for parity in [0, 1] {
                let partner = if me % 2 == parity { me + 1 } else { me.wrapping_sub(1) };
                let partner = (partner < p).then_some(partner);
                changed += u64::from(self.step(s, lay, partner, phases).await?);
            }
            if phases.time(s.proc(), "communicate", s.all_reduce_sum(changed)).await? == 0 {
                return Ok(());
            }
        }
        Err(AmError::NotAllowed(format!(
            "shell's odd-even phase still changed blocks after {} rounds on {p} nodes (at most {p} sort any blocks)",
            2 * (p / 2 + 2)
        )))
    }
}

impl SplitcProgram for ShellConfig {
    type Answer = Vec<u64>;

    fn name(&self) -> &'static str {
        "shell"
    }

    fn input(&self, nodes: u32) -> String {
        format!(
            "{} {}-bit keys, {} per node; the paper gives no size",
            self.keys_per_node * nodes as u64,
            self.key_bits,
            self.keys_per_node
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        LIBRARY_WORDS_PER_NODE * nodes as u64 + 2 * self.keys_per_node
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<Vec<u64>, AmError> {
        self.validate(s.procs()).map_err(AmError::NotAllowed)?;
        let n = self.keys_per_node;
        let lay = Layout { block: s.alloc(n)?, theirs: s.alloc(n)? };
        let mut keys = node_keys(self.seed, s.me().0, n, self.key_bits);
        compute(s, phases, sort_work(n), || keys.sort_unstable());
        s.local().write(lay.block, &keys);
        for dim in (0..s.procs().trailing_zeros()).rev() {
            self.step(s, &lay, Some(s.me().0 ^ (1 << dim)), phases).await?;
        }
        self.odd_even(s, &lay, phases).await?;
        s.local().read(lay.block, &mut keys);
        Ok(keys)
    }

    fn check(&self, nodes: u32, answers: &[&Vec<u64>]) -> Result<(), String> {
        let n = self.keys_per_node;
        let all: Vec<u64> = (0..nodes).flat_map(|p| node_keys(self.seed, p, n, self.key_bits)).collect();
        check_sorted_blocks(all, n, answers)
    }
}
