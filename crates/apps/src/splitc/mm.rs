//! MM: blocked matrix multiply with bulk gets (IPPS 1996 Section 5.3,
//! Table 2: "two versions of a blocked matrix multiply algorithm (which
//! differ with respect to data placement); both use bulk gets").
//!
//! C = A × B for n × n matrices of doubles cut into b × b blocks. Each
//! matrix is a Split-C spread array of (n/b)² blocks of b² words, and the
//! node holding block C(i,j) computes it: for every k it bulk-gets A(i,k)
//! and B(k,j) into a buffer and multiplies them into its block. The gets
//! of a batch of `batch` products are issued together, and the next batch
//! is issued before the current one is multiplied, so 2 × `batch` bulk
//! gets are in flight while the node computes: the global blocked
//! program's several outstanding gets (the paper attributes about half of
//! its gain under the co-processor library to the main-processor library
//! serving one get at a time).
//!
//! The two placements ([`MmPlacement`]):
//! - `bands`: blocks dealt out in row-major order, a run of whole block
//!   rows per node (Split-C's blocked layout): the A blocks a node needs
//!   are its own, every B block but its band's comes from another node;
//! - `global`: blocks dealt out one by one round robin (cyclic layout over
//!   the row-major block index): with as many blocks per row as a multiple
//!   of the nodes, a node holds whole block columns, so its B blocks are
//!   local and its A blocks remote.
//!
//! Every product starts at a k that depends on the block, so the nodes do
//! not all fetch from the same owner at once (Cannon's stagger).
//!
//! The paper gives no input size. [`MmConfig::paper`] multiplies two
//! 512 × 512 matrices in 32 × 32 blocks (16 blocks of C per node on 16
//! nodes, 2 MiB per matrix), in the range the Split-C benchmarks of the
//! time used; [`MmConfig::quick`] 128 × 128 in 16 × 16 blocks.
//!
//! This module also holds what the dense programs share: seeded matrix
//! entries, the local block product and the floating-point comparison.

use super::{Phases, SplitcProgram};
use finegrain_core::{AmError, NodeId, Proc, Work};
use finegrain_splitc::{Layout, SplitNode, SpreadArray};
use rand::RngCore;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One multiply-add of the block product's inner loop (`multiply_add`,
/// `*cij += aik * bkj` along a row): a multiply and an add (2 flops), the
/// loop (3 integer; one index steps both rows), loads of `cij` and `bkj`
/// (`aik` is in a register), a store of `cij`.
pub const MULTIPLY_ADD: Work = Work::new(2, 0, 3, 2, 1);

/// The block product's work per (i, k) pair around the inner loop: the
/// loop over k (3 integer), `aik`'s index `i * n + k` (1, the product
/// hoisted) and B's row `k * n` (1) and the inner loop's setup (1): 6
/// integer ops, a load of `aik`.
pub const MULTIPLY_ADD_ROW: Work = Work::new(0, 0, 6, 1, 0);

/// `multiply_add` of two `b` × `b` blocks: b³ multiply-adds, b² rows.
pub fn block_product(b: u64) -> Work {
    MULTIPLY_ADD * (b * b * b) + MULTIPLY_ADD_ROW * (b * b)
}

/// Largest relative difference accepted between a parallel and the
/// sequential floating-point answer. The parallel programs add the
/// products of a sum in another order than the reference (each node starts
/// at its own k), so the last bits may differ; for entries below 1 in
/// magnitude the bound is absolute. 1e-9 is far above the rounding of the
/// sizes used (about n × 1e-16 relative) and far below any real mistake.
pub const RELATIVE_TOLERANCE: f64 = 1e-9;

/// Where the blocks of the three matrices live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MmPlacement {
    /// Whole block rows per node (blocked layout).
    Bands,
    /// Blocks dealt round robin (cyclic layout): the global blocked program.
    Global,
}

impl MmPlacement {
    fn layout(self) -> Layout {
        match self {
            MmPlacement::Bands => Layout::Blocked,
            MmPlacement::Global => Layout::Cyclic,
        }
    }
}

/// The blocked matrix multiply's input and placement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MmConfig {
    /// Matrix order n.
    pub n: u64,
    /// Block order b (n a multiple of it).
    pub block: u64,
    pub placement: MmPlacement,
    /// Block products whose gets are issued together.
    pub batch: u64,
    pub seed: u64,
}

impl MmConfig {
    /// 512 × 512 in 32 × 32 blocks, 4 products a batch (the paper gives no
    /// size).
    pub fn paper(placement: MmPlacement) -> MmConfig {
        MmConfig { n: 512, block: 32, placement, batch: 4, seed: 1996 }
    }

    /// 128 × 128 in 16 × 16 blocks.
    pub fn quick(placement: MmPlacement) -> MmConfig {
        MmConfig { n: 128, block: 16, placement, batch: 4, seed: 1996 }
    }

    /// 16 × 16 in 4 × 4 blocks, for tests on 1, 2 or 4 nodes.
    pub fn tiny(placement: MmPlacement) -> MmConfig {
        MmConfig { n: 16, block: 4, placement, batch: 2, seed: 7 }
    }

    fn blocks_per_row(&self) -> u64 {
        self.n / self.block.max(1)
    }

    /// Checks the configuration for `nodes` nodes; the error names the
    /// field and what is allowed.
    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        if self.block == 0 || self.n == 0 || !self.n.is_multiple_of(self.block) {
            return Err(format!(
                "mm: n = {} with block = {}; allowed: block 1 or more and n a positive multiple of it",
                self.n, self.block
            ));
        }
        if self.batch == 0 {
            return Err("mm: batch = 0; allowed: 1 or more block products a batch".into());
        }
        let blocks = self.blocks_per_row() * self.blocks_per_row();
        if nodes == 0 || !blocks.is_multiple_of(nodes as u64) {
            return Err(format!(
                "mm: (n / block)² = {blocks} blocks on {nodes} nodes; allowed: a node count that divides the \
                 number of blocks, so every node owns as many"
            ));
        }
        Ok(())
    }

    fn spread(&self, s: &SplitNode<'_, impl Proc>) -> Result<SpreadArray, AmError> {
        let nb = self.blocks_per_row();
        s.alloc_spread(nb * nb, self.block * self.block, self.placement.layout())
    }
}

/// A node's answer: its C blocks (in its local order), each b² doubles
/// row-major, with their block indices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MmAnswer {
    pub blocks: Vec<(u64, u64)>,
    pub values: Vec<Vec<f64>>,
}

/// One block product to do: C block `local` (the node's index) += A(i,k)
/// × B(k,j).
#[derive(Clone, Copy, Debug)]
struct Product {
    local: usize,
    i: u64,
    j: u64,
    k: u64,
}

/// The node's block products in the order it does them.
fn products(c: &SpreadArray, me: NodeId, nb: u64) -> Vec<Product> {
    let mut out = Vec::new();
    for local in 0..c.local_len(me) {
        let index = c.global_index(me, local);
        let (i, j) = (index / nb, index % nb);
        for s in 0..nb {
            out.push(Product { local: local as usize, i, j, k: (i + j + s) % nb });
        }
    }
    out
}

impl SplitcProgram for MmConfig {
    type Answer = MmAnswer;

    fn name(&self) -> &'static str {
        match self.placement {
            MmPlacement::Bands => "mm-bands",
            MmPlacement::Global => "mm-global",
        }
    }

    fn input(&self, nodes: u32) -> String {
        let nb = self.blocks_per_row();
        format!(
            "{n} x {n} doubles in {b} x {b} blocks ({} blocks of C per node on {nodes}), {:?} placement, {} \
             products a batch (the paper gives no size)",
            (nb * nb) / nodes.max(1) as u64,
            self.placement,
            self.batch,
            n = self.n,
            b = self.block
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        let nb = self.blocks_per_row();
        let words = self.block.saturating_mul(self.block);
        let per_node = (nb * nb).div_ceil(nodes.max(1) as u64);
        let matrices = per_node.saturating_mul(words).saturating_mul(3);
        let buffers = self.batch.saturating_mul(4).saturating_mul(words);
        matrices.saturating_add(buffers).saturating_add(2 * nodes as u64 + 1)
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<MmAnswer, AmError> {
        self.validate(s.procs()).map_err(AmError::NotAllowed)?;
        let (a, b, c) = (self.spread(s)?, self.spread(s)?, self.spread(s)?);
        let words = self.block * self.block;
        let nb = self.blocks_per_row();
        let fetch = Fetch { a, b, nb, words, batch: self.batch, slots: s.alloc(self.batch * 4 * words)? };
        fill_local_blocks(s, &a, 0, self);
        fill_local_blocks(s, &b, 1, self);
        s.barrier().await?;

        let work = products(&c, s.me(), nb);
        let mut sums = vec![vec![0.0; words as usize]; c.local_len(s.me()) as usize];
        let batches: Vec<&[Product]> = work.chunks(self.batch as usize).collect();
        if let Some(first) = batches.first() {
            fetch.issue(s, first, 0, phases).await?;
        }
        for (t, batch) in batches.iter().enumerate() {
            let t0 = s.proc().now();
            s.sync().await?;
            phases.add("communicate", s.proc().now() - t0);
            if let Some(next) = batches.get(t + 1) {
                fetch.issue(s, next, (t + 1) % 2, phases).await?;
            }
            let t0 = s.proc().now();
            for (n, p) in batch.iter().enumerate() {
                multiply_from_slot(s, fetch.slot(t % 2, n), self.block, &mut sums[p.local]);
            }
            phases.add("compute", s.proc().now() - t0);
        }
        for (local, values) in sums.iter().enumerate() {
            s.local().write_f64(c.local_word(local as u64), values);
        }
        let blocks = (0..c.local_len(s.me())).map(|l| c.global_index(s.me(), l)).map(|x| (x / nb, x % nb)).collect();
        Ok(MmAnswer { blocks, values: sums })
    }

    fn check(&self, nodes: u32, answers: &[&MmAnswer]) -> Result<(), String> {
        let product = reference_product(self.seed, self.n);
        let nb = self.blocks_per_row();
        let mut seen = vec![false; (nb * nb) as usize];
        for (node, answer) in answers.iter().enumerate() {
            if answer.blocks.len() != answer.values.len() {
                return Err(format!(
                    "node {node}: {} block indices, {} blocks",
                    answer.blocks.len(),
                    answer.values.len()
                ));
            }
            for (&(i, j), got) in answer.blocks.iter().zip(&answer.values) {
                if i >= nb || j >= nb || std::mem::replace(&mut seen[(i * nb + j) as usize], true) {
                    return Err(format!("node {node}: block ({i},{j}) out of range or computed twice"));
                }
                let want = block_of(&product, self.n, self.block, i, j);
                compare(&format!("node {node}: C block ({i},{j})"), got, &want)?;
            }
        }
        match seen.iter().position(|&s| !s).map(|x| x as u64) {
            Some(x) => Err(format!("C block ({},{}) computed by none of the {nodes} nodes", x / nb, x % nb)),
            None => Ok(()),
        }
    }
}

/// Where the blocks of a batch of products come from and land: two sets
/// of `batch` slots, each an A block then a B block, so one set arrives
/// while the other is multiplied.
#[derive(Clone, Copy, Debug)]
struct Fetch {
    a: SpreadArray,
    b: SpreadArray,
    nb: u64,
    words: u64,
    batch: u64,
    slots: u64,
}

impl Fetch {
    /// The first word of slot `n` of set `set`.
    fn slot(&self, set: usize, n: usize) -> u64 {
        self.slots + (set as u64 * self.batch + n as u64) * 2 * self.words
    }

    /// Issues the bulk gets of `batch`'s blocks into set `set`.
    async fn issue<P: Proc>(
        &self,
        s: &SplitNode<'_, P>,
        batch: &[Product],
        set: usize,
        phases: &mut Phases,
    ) -> Result<(), AmError> {
        let t0 = s.proc().now();
        for (n, p) in batch.iter().enumerate() {
            let to = self.slot(set, n);
            s.get(self.a.ptr(p.i * self.nb + p.k), to, self.words).await?;
            s.get(self.b.ptr(p.k * self.nb + p.j), to + self.words, self.words).await?;
        }
        phases.add("communicate", s.proc().now() - t0);
        phases.count("bulk_gets", 2 * batch.len() as u64);
        phases.count("get_words", 2 * batch.len() as u64 * self.words);
        Ok(())
    }
}

/// Multiplies the A and B blocks in a slot into `sum`, and charges it.
fn multiply_from_slot<P: Proc>(s: &SplitNode<'_, P>, slot: u64, b: u64, sum: &mut [f64]) {
    let words = (b * b) as usize;
    let mut x = vec![0.0; words];
    let mut y = vec![0.0; words];
    s.local().read_f64(slot, &mut x);
    s.local().read_f64(slot + words as u64, &mut y);
    multiply_add(sum, &x, &y, b as usize);
    s.proc().charge_work(block_product(b));
}

/// Writes the node's blocks of `matrix` (0 for A, 1 for B) from the seed.
fn fill_local_blocks<P: Proc>(s: &SplitNode<'_, P>, m: &SpreadArray, matrix: u64, cfg: &MmConfig) {
    let nb = cfg.blocks_per_row();
    for local in 0..m.local_len(s.me()) {
        let index = m.global_index(s.me(), local);
        let values = matrix_block(cfg.seed, matrix, cfg.n, cfg.block, index / nb, index % nb);
        s.local().write_f64(m.local_word(local), &values);
    }
}

/// `c += a × b` for row-major `n` × `n` blocks (i-k-j order: the inner
/// loop runs along rows of b and c).
pub(crate) fn multiply_add(c: &mut [f64], a: &[f64], b: &[f64], n: usize) {
    for i in 0..n {
        let row = &mut c[i * n..(i + 1) * n];
        for k in 0..n {
            let aik = a[i * n + k];
            for (cij, bkj) in row.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                *cij += aik * bkj;
            }
        }
    }
}

/// Entries `c0..c0 + len` of row `r` of seeded n × n matrix `matrix`: each
/// entry is one 64-bit word of the ChaCha8 stream `matrix` at its row-major
/// position, mapped to [-1, 1), so any node can generate any part of the
/// matrix and the matrix does not depend on the node count.
pub(crate) fn matrix_row(seed: u64, matrix: u64, n: u64, r: u64, c0: u64, len: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(matrix);
    rng.set_word_pos(2 * u128::from(r * n + c0));
    (0..len).map(|_| unit(rng.next_u64())).collect()
}

/// A 64-bit word as a double in [-1, 1) (its top 53 bits).
pub(crate) fn unit(word: u64) -> f64 {
    (word >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0
}

/// Block (bi, bj) of order b of seeded matrix `matrix`, row-major.
pub(crate) fn matrix_block(seed: u64, matrix: u64, n: u64, b: u64, bi: u64, bj: u64) -> Vec<f64> {
    (0..b).flat_map(|r| matrix_row(seed, matrix, n, bi * b + r, bj * b, b)).collect()
}

/// The whole product A × B of the seeded matrices 0 and 1, row-major,
/// computed sequentially.
pub(crate) fn reference_product(seed: u64, n: u64) -> Vec<f64> {
    let whole = |m| (0..n).flat_map(|r| matrix_row(seed, m, n, r, 0, n)).collect::<Vec<f64>>();
    let (a, b) = (whole(0), whole(1));
    let mut c = vec![0.0; (n * n) as usize];
    multiply_add(&mut c, &a, &b, n as usize);
    c
}

/// Block (bi, bj) of order b of a row-major n × n matrix.
pub(crate) fn block_of(m: &[f64], n: u64, b: u64, bi: u64, bj: u64) -> Vec<f64> {
    let (n, b) = (n as usize, b as usize);
    (0..b).flat_map(|r| &m[(bi as usize * b + r) * n + bj as usize * b..][..b]).copied().collect()
}

/// Compares computed doubles with the reference's within
/// [`RELATIVE_TOLERANCE`] (relative to the larger of 1 and the expected
/// magnitude); the error names the first difference.
pub(crate) fn compare(what: &str, got: &[f64], want: &[f64]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()));
    }
    for (x, (g, w)) in got.iter().zip(want).enumerate() {
        // Written so that a NaN fails too.
        let within = (g - w).abs() <= RELATIVE_TOLERANCE * w.abs().max(1.0);
        if !within {
            return Err(format!("{what}: value {x} is {g}, expected {w}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_product_is_the_textbook_one() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0, 7.0, 8.0];
        let mut c = [1.0; 4];
        multiply_add(&mut c, &a, &b, 2);
        assert_eq!(c, [20.0, 23.0, 44.0, 51.0]);
    }

    #[test]
    fn blocks_are_pieces_of_the_same_matrix() {
        let whole: Vec<f64> = (0..8).flat_map(|r| matrix_row(3, 1, 8, r, 0, 8)).collect();
        assert_eq!(matrix_block(3, 1, 8, 4, 1, 0), block_of(&whole, 8, 4, 1, 0));
        assert!(whole.iter().all(|v| (-1.0..1.0).contains(v)));
        assert_ne!(matrix_row(3, 0, 8, 0, 0, 8), matrix_row(3, 1, 8, 0, 0, 8));
    }

    #[test]
    fn compare_accepts_rounding_and_names_a_real_difference() {
        assert!(compare("x", &[1.0 + 1e-13, 1e-14], &[1.0, 0.0]).is_ok());
        let e = compare("C", &[1.0, 2.5], &[1.0, 2.0]).unwrap_err();
        assert_eq!(e, "C: value 1 is 2.5, expected 2");
        assert!(compare("nan", &[f64::NAN], &[0.0]).is_err());
    }
}
