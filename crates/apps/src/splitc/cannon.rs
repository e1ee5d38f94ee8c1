//! Cannon's matrix multiply with bulk stores (IPPS 1996 Section 5.3,
//! Table 2: "two versions of Cannon's matrix multiply algorithm (which vary
//! on data placement); both use bulk store operations").
//!
//! C = A × B for n × n matrices of doubles on a q × q grid of nodes
//! (node i·q + j is row i, column j), each holding one b × b block
//! (b = n/q) of A, B and C. Node (i,j) must meet every pair A(i,k), B(k,j):
//! once A(i,j+i) and B(i+j,j) are in place (indices mod q), q steps each
//! multiply the blocks at hand into C(i,j), then pass A one node left and B
//! one node up, a whole block in one bulk store each, and wait for the
//! blocks coming in with `all_store_sync`. Incoming blocks land in a second
//! buffer, so a node that is a step ahead never overwrites blocks its
//! neighbour still multiplies.
//!
//! The two placements ([`CannonPlacement`]) differ in where the input
//! starts: `aligned` places A(i,j) and B(i,j) on node (i,j), so a first
//! communication phase skews them into place (A(i,j) to node (i,j-i), B(i,j)
//! to node (i-j,j)); `skewed` places the input already skewed, as a
//! program that produced it for Cannon would, and starts multiplying.
//!
//! The paper gives no input size. [`CannonConfig::paper`] multiplies
//! 512 × 512 matrices (128 × 128 blocks of 128 KiB on 16 nodes);
//! [`CannonConfig::quick`] 128 × 128.

use super::mm::{block_of, block_product, compare, matrix_block, multiply_add, reference_product};
use super::{Phases, SplitcProgram};
use finegrain_core::{AmError, NodeId, Proc};
use finegrain_splitc::{GlobalPtr, SplitNode};
use serde::{Deserialize, Serialize};

/// Where the input blocks start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CannonPlacement {
    /// A(i,j) and B(i,j) on node (i,j): the program skews them first.
    Aligned,
    /// A(i,i+j) and B(i+j,j) on node (i,j): already in place.
    Skewed,
}

/// Cannon's input and placement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CannonConfig {
    /// Matrix order n (a multiple of the grid's side).
    pub n: u64,
    pub placement: CannonPlacement,
    pub seed: u64,
}

impl CannonConfig {
    /// 512 × 512 (the paper gives no size).
    pub fn paper(placement: CannonPlacement) -> CannonConfig {
        CannonConfig { n: 512, placement, seed: 1996 }
    }

    /// 128 × 128.
    pub fn quick(placement: CannonPlacement) -> CannonConfig {
        CannonConfig { n: 128, placement, seed: 1996 }
    }

    /// 12 × 12: blocks of 12, 6, 4 or 3 on 1, 4, 9 or 16 nodes.
    pub fn tiny(placement: CannonPlacement) -> CannonConfig {
        CannonConfig { n: 12, placement, seed: 7 }
    }

    /// Checks the configuration for `nodes` nodes; the error names the
    /// field and what is allowed.
    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        let q = grid_side(nodes).ok_or_else(|| {
            format!("cannon: {nodes} nodes; allowed: a perfect square (1, 4, 9, 16...), Cannon's q x q grid")
        })?;
        if self.n == 0 || !self.n.is_multiple_of(q) {
            return Err(format!(
                "cannon: n = {} on a {q} x {q} grid; allowed: a positive multiple of {q}, so every node holds an \
                 equal block",
                self.n
            ));
        }
        Ok(())
    }

    fn block(&self, nodes: u32) -> u64 {
        self.n / grid_side(nodes).unwrap_or(1)
    }
}

/// The side q of a q × q grid of `nodes`, if it is one.
fn grid_side(nodes: u32) -> Option<u64> {
    let q = (nodes as f64).sqrt().round() as u64;
    (nodes > 0 && q * q == nodes as u64).then_some(q)
}

/// A node's place in the grid and its neighbours.
#[derive(Clone, Copy, Debug)]
struct Grid {
    q: u64,
    i: u64,
    j: u64,
}

impl Grid {
    fn of(me: NodeId, q: u64) -> Grid {
        Grid { q, i: me.0 as u64 / q, j: me.0 as u64 % q }
    }

    /// The node at row `i`, column `j` (both mod q).
    fn node(&self, i: u64, j: u64) -> NodeId {
        NodeId(((i % self.q) * self.q + j % self.q) as u32)
    }

    /// The k of the blocks node (i,j) multiplies at step `step`.
    fn k(&self, step: u64) -> u64 {
        (self.i + self.j + step) % self.q
    }
}

/// Word offsets of a node's blocks: A and B have two buffers each (the one
/// multiplied and the one the next blocks land in).
#[derive(Clone, Copy, Debug)]
struct Buffers {
    a: [u64; 2],
    b: [u64; 2],
    c: u64,
}

impl SplitcProgram for CannonConfig {
    /// The node's C block, row-major.
    type Answer = Vec<f64>;

    fn name(&self) -> &'static str {
        match self.placement {
            CannonPlacement::Aligned => "cannon-aligned",
            CannonPlacement::Skewed => "cannon-skewed",
        }
    }

    fn input(&self, nodes: u32) -> String {
        let b = self.block(nodes);
        format!(
            "{n} x {n} doubles, one {b} x {b} block of A, B and C per node on {nodes}, {:?} placement (the paper \
             gives no size)",
            self.placement,
            n = self.n
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        let b = self.block(nodes);
        b.saturating_mul(b).saturating_mul(5).saturating_add(2 * nodes as u64 + 1)
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<Vec<f64>, AmError> {
        self.validate(s.procs()).map_err(AmError::NotAllowed)?;
        let q = grid_side(s.procs()).unwrap_or(1);
        let g = Grid::of(s.me(), q);
        let b = self.n / q;
        let words = b * b;
        let buf = Buffers {
            a: [s.alloc(words)?, s.alloc(words)?],
            b: [s.alloc(words)?, s.alloc(words)?],
            c: s.alloc(words)?,
        };
        let mut cur = 0;
        match self.placement {
            CannonPlacement::Aligned => {
                s.local().write_f64(buf.a[0], &matrix_block(self.seed, 0, self.n, b, g.i, g.j));
                s.local().write_f64(buf.b[0], &matrix_block(self.seed, 1, self.n, b, g.i, g.j));
                s.barrier().await?;
                let to_a = g.node(g.i, g.j + q - g.i);
                let to_b = g.node(g.i + q - g.j, g.j);
                shift(s, phases, buf, cur, to_a, to_b, words).await?;
                cur = 1;
            }
            CannonPlacement::Skewed => {
                s.local().write_f64(buf.a[0], &matrix_block(self.seed, 0, self.n, b, g.i, g.k(0)));
                s.local().write_f64(buf.b[0], &matrix_block(self.seed, 1, self.n, b, g.k(0), g.j));
                s.barrier().await?;
            }
        }
        let mut sum = vec![0.0; words as usize];
        for step in 0..q {
            multiply_step(s, phases, buf, cur, b, &mut sum);
            if step + 1 < q {
                shift(s, phases, buf, cur, g.node(g.i, g.j + q - 1), g.node(g.i + q - 1, g.j), words).await?;
                cur = 1 - cur;
            }
        }
        s.local().write_f64(buf.c, &sum);
        Ok(sum)
    }

    fn check(&self, nodes: u32, answers: &[&Vec<f64>]) -> Result<(), String> {
        let q = grid_side(nodes).ok_or_else(|| format!("cannon: {nodes} nodes is not a square grid"))?;
        let product = reference_product(self.seed, self.n);
        let b = self.n / q;
        for (node, got) in answers.iter().enumerate() {
            let (i, j) = (node as u64 / q, node as u64 % q);
            compare(&format!("node {node}: C block ({i},{j})"), got, &block_of(&product, self.n, b, i, j))?;
        }
        Ok(())
    }
}

/// Multiplies the blocks at hand into `sum`, and charges it.
fn multiply_step<P: Proc>(
    s: &SplitNode<'_, P>,
    phases: &mut Phases,
    buf: Buffers,
    cur: usize,
    b: u64,
    sum: &mut [f64],
) {
    let t0 = s.proc().now();
    let words = (b * b) as usize;
    let (mut a, mut bb) = (vec![0.0; words], vec![0.0; words]);
    s.local().read_f64(buf.a[cur], &mut a);
    s.local().read_f64(buf.b[cur], &mut bb);
    multiply_add(sum, &a, &bb, b as usize);
    s.proc().charge_work(block_product(b));
    phases.add("compute", s.proc().now() - t0);
}

/// Sends the A block at hand to `to_a` and the B block to `to_b` (bulk
/// stores into their other buffer) and waits for the blocks coming here.
async fn shift<P: Proc>(
    s: &SplitNode<'_, P>,
    phases: &mut Phases,
    buf: Buffers,
    cur: usize,
    to_a: NodeId,
    to_b: NodeId,
    words: u64,
) -> Result<(), AmError> {
    let t0 = s.proc().now();
    let next = 1 - cur;
    s.store(GlobalPtr::new(to_a, buf.a[next]), buf.a[cur], words).await?;
    s.store(GlobalPtr::new(to_b, buf.b[next]), buf.b[cur], words).await?;
    s.all_store_sync().await?;
    phases.add("communicate", s.proc().now() - t0);
    phases.count("bulk_stores", 2);
    phases.count("store_words", 2 * words);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_squares_make_grids() {
        assert_eq!((1..=16).filter_map(grid_side).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(grid_side(0), None);
    }

    #[test]
    fn every_node_meets_every_k_once() {
        let q = 4;
        for me in 0..16 {
            let g = Grid::of(NodeId(me), q);
            let mut ks: Vec<u64> = (0..q).map(|s| g.k(s)).collect();
            ks.sort_unstable();
            assert_eq!(ks, [0, 1, 2, 3]);
        }
    }
}
