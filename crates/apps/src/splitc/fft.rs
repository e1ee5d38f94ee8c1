//! FFT and FFTB: a radix-2 complex FFT with a cyclic-to-blocked remap
//! (IPPS 1996 Section 5.3, Table 2: "a fast Fourier transform computation
//! involving 2 computation phases separated by a cyclic-to-blocked remap
//! phase (done with store operations). FFTB is the same FFT program,
//! except communication uses bulk stores").
//!
//! The classic Split-C FFT (Culler et al., LogP, 1993). The n points (a
//! power of two) start in a cyclic layout: point i on node i mod P at
//! local index i / P. Decimation in frequency pairs, at stage s, the
//! points whose indices differ in bit log n - 1 - s: the first log(n/P)
//! stages pair points of the same node under the cyclic layout, so they run
//! with no communication. The remap then moves every point to the blocked
//! layout (point i on node i / (n/P)), where the last log P stages pair
//! points of the same node again. The result is the DFT in bit-reversed
//! order: node q ends with X[bitrev(i)] for i in its block.
//!
//! The remap ([`FftRemap`]): `store` (program `fft`) writes each point
//! straight to its place with one-word stores, two per point (real and
//! imaginary part); `bulk-store` (program `fftb`) sends each node the run
//! of points bound for it, which is contiguous at the sender, with one bulk
//! store, into an area kept per sender, and the receiver interleaves the
//! runs into its block. Both send to node q+1 first, then q+2, ..., so the
//! nodes do not all send to the same node at once, and wait for every
//! point with `all_store_sync`.
//!
//! The paper gives no input size. [`FftConfig::paper`] transforms 64 K
//! points (4 K per node on 16 nodes, 128 K one-word stores in `fft`'s
//! remap); [`FftConfig::quick`] 16 K.

use super::mm::{compare, unit};
use super::{Phases, SplitcProgram, SINE};
use finegrain_core::{AmError, NodeId, Proc, Work};
use finegrain_splitc::{GlobalPtr, SplitNode};
use rand::RngCore;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::f64::consts::PI;

/// One radix-2 butterfly of `stage`'s inner loop with its twiddle: the
/// difference and the sum of the two points (4 flops) and the complex
/// multiply of the difference by the twiddle (4 multiplies, 2 adds); the
/// twiddle's angle (two converts and a multiply: 3 flops, and a divide)
/// and its cosine and sine (two [`SINE`]s: `twiddle` calls libm, there is
/// no table); the loop (3 integer), the global index (`l * p + me`: 2;
/// the blocked stages' `me * m + l` is 1, not told apart), its remainder
/// by `half` (a power of two: a mask, 1) and the partner's index
/// (`l + local_half`: 1); loads of the two points' four words, stores of
/// four.
pub const BUTTERFLY: Work = Work::new(13, 1, 7, 4, 4).plus(SINE.times(2));

/// One point of `fft`'s remap by one-word stores, besides the two stores
/// themselves: the loop (3 integer), its place at the destination
/// (`l * p + me - d * m`, the last product hoisted: 3), the word's address
/// (shift and add: 2) and the second word's (1); loads of the point's two
/// words.
pub const REMAP_STORE_POINT: Work = Work::new(0, 0, 9, 2, 0);

/// One point of `fftb`'s interleave of the runs that arrived: the loop (3
/// integer), the word it comes from (`2 * (src * share + t)`, the product
/// hoisted: 2) and the word it goes to (`2 * (t * p + src)`: 3); loads
/// and stores of its two words.
pub const INTERLEAVE_POINT: Work = Work::new(0, 0, 8, 2, 2);

/// How the cyclic-to-blocked remap communicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FftRemap {
    /// One-word stores, two per point: the paper's `fft`.
    Store,
    /// One bulk store per pair of nodes: the paper's `fftb`.
    BulkStore,
}

/// The FFT's input and remap.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FftConfig {
    /// Complex points n (a power of two).
    pub points: u64,
    pub remap: FftRemap,
    pub seed: u64,
}

/// A complex number.
type Complex = (f64, f64);

impl FftConfig {
    /// 64 K points (the paper gives no size).
    pub fn paper(remap: FftRemap) -> FftConfig {
        FftConfig { points: 64 * 1024, remap, seed: 1996 }
    }

    /// 16 K points.
    pub fn quick(remap: FftRemap) -> FftConfig {
        FftConfig { points: 16 * 1024, remap, seed: 1996 }
    }

    /// 64 points, for tests on up to 8 nodes.
    pub fn tiny(remap: FftRemap) -> FftConfig {
        FftConfig { points: 64, remap, seed: 7 }
    }

    /// Checks the configuration for `nodes` nodes; the error names the
    /// field and what is allowed.
    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        if !nodes.is_power_of_two() {
            return Err(format!("fft: {nodes} nodes; allowed: a power of two (1, 2, 4, 8, 16...)"));
        }
        let square = (nodes as u64).pow(2);
        if !self.points.is_power_of_two() || self.points < square {
            return Err(format!(
                "fft: points = {} on {nodes} nodes; allowed: a power of two of at least nodes² = {square}, so \
                 every node sends every node a share of its points",
                self.points
            ));
        }
        Ok(())
    }
}

/// Point `i` of the seeded input: words 2i and 2i + 1 of the ChaCha8
/// stream as doubles in [-1, 1), so each node generates its own points.
fn point(rng: &mut ChaCha8Rng, i: u64) -> Complex {
    rng.set_word_pos(4 * u128::from(i));
    (unit(rng.next_u64()), unit(rng.next_u64()))
}

/// e^(-i π j / half): the twiddle of a butterfly `j` into a run of
/// 2 · `half` points.
fn twiddle(j: u64, half: u64) -> Complex {
    let angle = -PI * j as f64 / half as f64;
    (angle.cos(), angle.sin())
}

/// One decimation-in-frequency stage over the points a node holds: pairs
/// the points whose global indices differ by `half`, `local_half` apart in
/// `x`; `global` maps a local index to its global one (for the twiddle).
fn stage(x: &mut [Complex], half: u64, local_half: usize, global: impl Fn(usize) -> u64) {
    for start in (0..x.len()).step_by(2 * local_half) {
        for l in start..start + local_half {
            let w = twiddle(global(l) % half, half);
            let (a, b) = (x[l], x[l + local_half]);
            let d = (a.0 - b.0, a.1 - b.1);
            x[l] = (a.0 + b.0, a.1 + b.1);
            x[l + local_half] = (d.0 * w.0 - d.1 * w.1, d.0 * w.1 + d.1 * w.0);
        }
    }
}

/// The whole transform sequentially: every stage over all points (the
/// reference; its result in bit-reversed order).
fn reference(seed: u64, n: u64) -> Vec<Complex> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut x: Vec<Complex> = (0..n).map(|i| point(&mut rng, i)).collect();
    let mut half = n / 2;
    while half >= 1 {
        stage(&mut x, half, half as usize, |l| l as u64);
        half /= 2;
    }
    x
}

fn to_words(x: &[Complex]) -> Vec<f64> {
    x.iter().flat_map(|&(re, im)| [re, im]).collect()
}

fn from_words(w: &[f64]) -> Vec<Complex> {
    w.chunks_exact(2).map(|c| (c[0], c[1])).collect()
}

/// Where a node keeps its points (two words each): `cyclic` before the
/// remap, `blocked` after, and (bulk remap) the runs as they arrive.
#[derive(Clone, Copy, Debug)]
struct Areas {
    cyclic: u64,
    blocked: u64,
    landing: u64,
}

/// The shape of one run: n points on p nodes, m per node.
#[derive(Clone, Copy, Debug)]
struct Shape {
    p: u64,
    m: u64,
    me: u64,
}

impl Shape {
    /// Points every node sends every node in the remap.
    fn share(&self) -> u64 {
        self.m / self.p
    }

    /// The nodes in the order this one sends to them: q+1 first.
    fn destinations(&self) -> impl Iterator<Item = u64> + '_ {
        (1..=self.p).map(move |x| (self.me + x) % self.p)
    }
}

impl SplitcProgram for FftConfig {
    /// The node's points after the transform (its block of the
    /// bit-reversed result), real and imaginary parts interleaved.
    type Answer = Vec<f64>;

    fn name(&self) -> &'static str {
        match self.remap {
            FftRemap::Store => "fft",
            FftRemap::BulkStore => "fftb",
        }
    }

    fn input(&self, nodes: u32) -> String {
        format!(
            "{} complex points, {} per node on {nodes}, remap by {} (the paper gives no size)",
            self.points,
            self.points / nodes.max(1) as u64,
            match self.remap {
                FftRemap::Store => "one-word stores",
                FftRemap::BulkStore => "bulk stores",
            }
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        let area = self.points.saturating_mul(2) / nodes.max(1) as u64;
        area.saturating_mul(3).saturating_add(2 * nodes as u64 + 1)
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<Vec<f64>, AmError> {
        self.validate(s.procs()).map_err(AmError::NotAllowed)?;
        let sh = Shape { p: s.procs() as u64, m: self.points / s.procs() as u64, me: s.me().0 as u64 };
        let areas = Areas { cyclic: s.alloc(2 * sh.m)?, blocked: s.alloc(2 * sh.m)?, landing: s.alloc(2 * sh.m)? };
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut x: Vec<Complex> = (0..sh.m).map(|l| point(&mut rng, l * sh.p + sh.me)).collect();
        s.barrier().await?;

        // Stages over the high bits, local under the cyclic layout.
        let t0 = s.proc().now();
        let mut half = self.points / 2;
        while half >= sh.p {
            stage(&mut x, half, (half / sh.p) as usize, |l| l as u64 * sh.p + sh.me);
            s.proc().charge_work(BUTTERFLY * (sh.m / 2));
            half /= 2;
        }
        s.local().write_f64(areas.cyclic, &to_words(&x));
        phases.add("compute", s.proc().now() - t0);

        let t0 = s.proc().now();
        match self.remap {
            FftRemap::Store => remap_by_stores(s, sh, areas, &x, phases).await?,
            FftRemap::BulkStore => remap_by_bulk_stores(s, sh, areas, phases).await?,
        }
        phases.add("remap", s.proc().now() - t0);

        // Stages over the low bits, local under the blocked layout.
        let t0 = s.proc().now();
        let mut words = vec![0.0; 2 * sh.m as usize];
        s.local().read_f64(areas.blocked, &mut words);
        let mut y = from_words(&words);
        while half >= 1 {
            stage(&mut y, half, half as usize, |l| sh.me * sh.m + l as u64);
            s.proc().charge_work(BUTTERFLY * (sh.m / 2));
            half /= 2;
        }
        let out = to_words(&y);
        s.local().write_f64(areas.blocked, &out);
        phases.add("compute", s.proc().now() - t0);
        Ok(out)
    }

    fn check(&self, nodes: u32, answers: &[&Vec<f64>]) -> Result<(), String> {
        let want = to_words(&reference(self.seed, self.points));
        let words = want.len() / nodes.max(1) as usize;
        for (node, got) in answers.iter().enumerate() {
            compare(&format!("node {node}: transformed points"), got, &want[node * words..(node + 1) * words])?;
        }
        Ok(())
    }
}

/// The remap with one-word stores: each point's two words straight to
/// their place in the destination's blocked array.
async fn remap_by_stores<P: Proc>(
    s: &SplitNode<'_, P>,
    sh: Shape,
    areas: Areas,
    x: &[Complex],
    phases: &mut Phases,
) -> Result<(), AmError> {
    for d in sh.destinations() {
        // The points bound for node d are a contiguous run here; there they
        // are P apart.
        let first = d * sh.share();
        s.proc().charge_work(REMAP_STORE_POINT * sh.share());
        for l in first..first + sh.share() {
            let place = l * sh.p + sh.me - d * sh.m;
            let to = GlobalPtr::new(NodeId(d as u32), areas.blocked + 2 * place);
            let (re, im) = x[l as usize];
            s.store_value(to, re.to_bits()).await?;
            s.store_value(to.offset(1), im.to_bits()).await?;
        }
    }
    phases.count("stores", 2 * sh.m);
    s.all_store_sync().await
}

/// The remap with bulk stores: the run bound for each node in one bulk
/// store, then the runs that arrived interleaved into the blocked array.
async fn remap_by_bulk_stores<P: Proc>(
    s: &SplitNode<'_, P>,
    sh: Shape,
    areas: Areas,
    phases: &mut Phases,
) -> Result<(), AmError> {
    let run = 2 * sh.share();
    for d in sh.destinations() {
        let to = GlobalPtr::new(NodeId(d as u32), areas.landing + sh.me * run);
        s.store(to, areas.cyclic + d * run, run).await?;
    }
    phases.count("bulk_stores", sh.p);
    phases.count("store_words", 2 * sh.m);
    s.all_store_sync().await?;
    // Point t of the run from node src is point t·P + src of the block.
    let mut arrived = vec![0.0; 2 * sh.m as usize];
    s.local().read_f64(areas.landing, &mut arrived);
    let mut block = vec![0.0; arrived.len()];
    for src in 0..sh.p {
        for t in 0..sh.share() {
            let (from, to) = (2 * (src * sh.share() + t) as usize, 2 * (t * sh.p + src) as usize);
            block[to..to + 2].copy_from_slice(&arrived[from..from + 2]);
        }
    }
    s.proc().charge_work(INTERLEAVE_POINT * sh.m);
    s.local().write_f64(areas.blocked, &block);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bit_reverse(i: u64, bits: u32) -> u64 {
        i.reverse_bits() >> (64 - bits)
    }

    #[test]
    fn the_reference_is_the_dft_in_bit_reversed_order() {
        let n = 32u64;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let x: Vec<Complex> = (0..n).map(|i| point(&mut rng, i)).collect();
        let got = reference(5, n);
        for (i, g) in got.iter().enumerate() {
            let k = bit_reverse(i as u64, 5);
            let mut want = (0.0, 0.0);
            for (j, xj) in x.iter().enumerate() {
                let w = twiddle(2 * (j as u64 * k % n), n);
                want.0 += xj.0 * w.0 - xj.1 * w.1;
                want.1 += xj.0 * w.1 + xj.1 * w.0;
            }
            assert!((g.0 - want.0).abs() < 1e-9 && (g.1 - want.1).abs() < 1e-9, "X[{k}] {g:?} against {want:?}");
        }
    }

    #[test]
    fn nodes_send_to_every_node_once_starting_after_themselves() {
        let sh = Shape { p: 4, m: 16, me: 1 };
        assert_eq!(sh.destinations().collect::<Vec<_>>(), [2, 3, 0, 1]);
    }
}
