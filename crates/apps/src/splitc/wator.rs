//! Wator (IPPS 1996 Section 5.3, Table 2: fish moving in a current, with
//! blocking reads): an N-body-like simulation in which every fish attracts
//! every other (softened inverse-square) while a current carries them.
//!
//! The ocean (the unit square at the start) is cut into one vertical strip
//! per node, and each node owns the fish that start in its strip:
//! `fish_per_node` on average, a few more or fewer on each node, as a
//! spatial decomposition gives (so the nodes' loops do not run in perfect
//! step). A node's fish's positions sit in its segment; their velocities
//! stay with the node. Fish keep their owner as they move.
//!
//! Every time step each node has the paper's read/compute loop: for every
//! remote fish it reads the fish's x (a blocking one-word read) and
//! computes each local fish's x offset from it, then reads its y and
//! computes the fish's pull on every local fish.
//! The computation after each read is charged right after it, before the
//! next read: while a node computes, the reads other nodes send it wait
//! under a library whose main processor handles messages only when it
//! communicates (the paper's 600-800 us against 25-33 us on the
//! co-processor). Each read's wait is timed into phase "read-wait" and
//! counted in count "reads" (read-wait is also part of "communicate").
//! After a barrier each node moves its fish and stores their positions.
//!
//! Sources are visited starting from the node itself (`me`, `me + 1`, ...
//! mod `nodes`, so nodes do not all read node 0 at once) and each fish's
//! forces are summed in that order; the sequential reference sums in the
//! same order, so the answer matches it bit for bit. The paper gives no
//! input size; [`WatorConfig::paper`] and [`WatorConfig::quick`] are this
//! crate's choices.

use super::radix::{compute, LIBRARY_WORDS_PER_NODE};
use super::{Phases, SplitcProgram, SINE};
use finegrain_core::{AmError, NodeId, Proc, Work};
use finegrain_splitc::{GlobalPtr, SplitNode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::f64::consts::TAU;

/// `pull`'s arithmetic: the squared distance and the softening (2
/// multiplies, 2 adds), `r2 * sqrt(r2)` (1 multiply, a square root), the
/// reciprocal (a divide), and the accelerations (`dx * inv` once, added
/// twice, as written; `dy * inv` added once: 2 multiplies, 3 adds): 10
/// flops, 2 long ones.
pub const PULL_FLOPS: Work = Work::new(10, 2, 0, 0, 0);

/// Per local fish after reading a remote fish's x (`remote_pull`'s first
/// loop): the subtraction (1 flop), the loop (3 integer), a load of the
/// local x and a store of the offset.
pub const OFFSET: Work = Work::new(1, 0, 3, 1, 1);

/// Per local fish after reading a remote fish's y (`remote_pull`'s second
/// loop): the y offset (1 flop) and `pull`, the loop (3 integer); loads of
/// the x offset, the local y and the two accelerations, stores of the two
/// accelerations.
pub const FORCE: Work = Work::new(1, 0, 3, 4, 2).plus(PULL_FLOPS);

/// Per pair of a node's own fish (`local_pull`'s loop, the other fish's
/// position in registers): the two offsets (2 flops) and `pull`, the loop
/// (3 integer) and the `i != j` filter (compare and branch: 2); loads of
/// the fish's x and y and the two accelerations, stores of the two
/// accelerations. The loop's skipped `i == j` iteration is not counted.
pub const LOCAL_PAIR: Work = Work::new(2, 0, 5, 4, 2).plus(PULL_FLOPS);

/// Moving one fish (`advance`'s loop, `DT * strength` hoisted, then the
/// stores of its position to the segment): the velocities (a multiply and
/// an add each), x (`TAU * y`, a [`SINE`], the current's multiply, the add
/// of vx, the multiply by DT and the add: 5 flops), y (a multiply and an
/// add): 11 flops; the two loops (3 integer each) and the position's two
/// words' addresses (3); loads of vx, vy, ax, ay, x and y and again of x
/// and y in the second loop, stores of vx, vy, x and y and of the
/// position's two words.
pub const MOVE: Work = Work::new(11, 0, 9, 8, 6).plus(SINE);

/// The time step.
const DT: f64 = 1e-3;
/// Squared softening length, so close fish do not fling each other off.
const SOFTENING2: f64 = 1e-4;
/// Strength of the attraction, divided among all fish.
const PULL: f64 = 0.1;
/// The current's peak speed along x; it varies with y as a sine.
const CURRENT: f64 = 0.5;

/// The simulation's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatorConfig {
    /// Fish in the ocean per node (each node owns those in its strip).
    pub fish_per_node: u64,
    /// Time steps.
    pub steps: u32,
    pub seed: u64,
}

impl WatorConfig {
    /// For the IPPS 1996 Table 2 run on 16 nodes (the paper gives no size):
    /// 256 fish per node (4096 fish), 3 time steps. Each read of a fish's
    /// y is followed by its pull on 256 local fish (about 8K cycles under
    /// ipps96's cost model).
    pub fn paper() -> WatorConfig {
        WatorConfig { fish_per_node: 256, steps: 3, seed: 1996 }
    }

    /// A few seconds to simulate on 16 nodes: 128 fish per node, 1 step.
    pub fn quick() -> WatorConfig {
        WatorConfig { fish_per_node: 128, steps: 1, ..WatorConfig::paper() }
    }

    /// For tests: 16 fish per node, 2 steps.
    pub fn tiny() -> WatorConfig {
        WatorConfig { fish_per_node: 16, steps: 2, seed: 7 }
    }

    /// Whether the simulation can run on `nodes` nodes; the error names the
    /// field and what is allowed.
    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        if nodes == 0 {
            return Err("wator on 0 nodes; allowed: 1 or more".into());
        }
        if !(1..=1 << 16).contains(&self.fish_per_node) {
            return Err(format!("invalid fish_per_node = {}; allowed 1..=65536", self.fish_per_node));
        }
        if !(1..=1000).contains(&self.steps) {
            return Err(format!("invalid steps = {}; allowed 1..=1000", self.steps));
        }
        Ok(())
    }
}

/// Fish: positions and velocities, one entry per fish.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct School {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub vx: Vec<f64>,
    pub vy: Vec<f64>,
}

/// Every node's fish at the start: `nodes * fish_per_node` fish uniform in
/// the unit square, drifting slowly, each owned by the node whose strip of
/// x it starts in (in the order they were made).
fn ocean(seed: u64, nodes: u32, fish_per_node: u64) -> Vec<School> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut schools = vec![School::default(); nodes as usize];
    for _ in 0..fish_per_node * nodes as u64 {
        let (x, y) = (rng.gen::<f64>(), rng.gen::<f64>());
        let s = &mut schools[((x * nodes as f64) as usize).min(nodes as usize - 1)];
        s.x.push(x);
        s.y.push(y);
        s.vx.push(rng.gen_range(-0.01..0.01));
        s.vy.push(rng.gen_range(-0.01..0.01));
    }
    schools
}

/// Adds the pull of a fish `(dx, dy)` away to `(ax, ay)`.
fn pull(dx: f64, dy: f64, ax: &mut f64, ay: &mut f64) {
    let r2 = dx * dx + dy * dy + SOFTENING2;
    let inv = 1.0 / (r2 * r2.sqrt());
    *ax += dx * inv;
    *ay += dy * inv;
}

/// Moves every fish one step under accelerations `(ax, ay)` (before the
/// pull's strength) and the current.
fn advance(s: &mut School, ax: &[f64], ay: &[f64], total_fish: u64) {
    let strength = PULL / total_fish as f64;
    for i in 0..s.x.len() {
        s.vx[i] += DT * strength * ax[i];
        s.vy[i] += DT * strength * ay[i];
        s.x[i] += DT * (s.vx[i] + CURRENT * (TAU * s.y[i]).sin());
        s.y[i] += DT * s.vy[i];
    }
}

/// The accelerations the reference computes for node `p`'s fish
/// from every node's positions, summed in the parallel program's order.
fn reference_pull(schools: &[School], p: usize) -> (Vec<f64>, Vec<f64>) {
    let nodes = schools.len();
    let mine = &schools[p];
    let (mut ax, mut ay) = (vec![0.0; mine.x.len()], vec![0.0; mine.x.len()]);
    for k in 0..nodes {
        let q = (p + k) % nodes;
        for j in 0..schools[q].x.len() {
            for i in 0..mine.x.len() {
                if q != p || i != j {
                    pull(schools[q].x[j] - mine.x[i], schools[q].y[j] - mine.y[i], &mut ax[i], &mut ay[i]);
                }
            }
        }
    }
    (ax, ay)
}

impl WatorConfig {
    /// The pull of this node's own fish on each other.
    fn local_pull<P: Proc>(&self, s: &SplitNode<'_, P>, fish: &School, acc: &mut [Vec<f64>; 2], phases: &mut Phases) {
        let f = fish.x.len();
        let [ax, ay] = acc;
        for j in 0..f {
            compute(s, phases, LOCAL_PAIR * (f as u64 - 1), || {
                for i in (0..f).filter(|&i| i != j) {
                    pull(fish.x[j] - fish.x[i], fish.y[j] - fish.y[i], &mut ax[i], &mut ay[i]);
                }
            });
        }
    }

    /// One blocking read, timed into "read-wait" and "communicate".
    async fn read<P: Proc>(&self, s: &SplitNode<'_, P>, at: GlobalPtr, phases: &mut Phases) -> Result<f64, AmError> {
        let t0 = s.proc().now();
        let v = s.read_f64(at).await?;
        let waited = s.proc().now() - t0;
        phases.add("read-wait", waited);
        phases.add("communicate", waited);
        phases.count("reads", 1);
        Ok(v)
    }

    /// The read/compute loop over node `q`'s fish.
    async fn remote_pull<P: Proc>(
        &self,
        s: &SplitNode<'_, P>,
        base: u64,
        (q, count): (u32, u64),
        fish: &School,
        acc: &mut [Vec<f64>; 2],
        phases: &mut Phases,
    ) -> Result<(), AmError> {
        let f = fish.x.len();
        let mut dx = vec![0.0; f];
        for j in 0..count {
            let xj = self.read(s, GlobalPtr::new(NodeId(q), base + 2 * j), phases).await?;
            compute(s, phases, OFFSET * f as u64, || {
                for (d, xi) in dx.iter_mut().zip(&fish.x) {
                    *d = xj - xi;
                }
            });
            let yj = self.read(s, GlobalPtr::new(NodeId(q), base + 2 * j + 1), phases).await?;
            let [ax, ay] = &mut *acc;
            compute(s, phases, FORCE * f as u64, || {
                for i in 0..f {
                    pull(dx[i], yj - fish.y[i], &mut ax[i], &mut ay[i]);
                }
            });
        }
        Ok(())
    }

    /// One time step: every fish's pull, then the move.
    async fn step<P: Proc>(
        &self,
        s: &SplitNode<'_, P>,
        base: u64,
        counts: &[u64],
        fish: &mut School,
        phases: &mut Phases,
    ) -> Result<(), AmError> {
        let (p, me) = (s.procs(), s.me().0);
        let f = fish.x.len();
        let mut acc = [vec![0.0; f], vec![0.0; f]];
        for k in 0..p {
            let q = (me + k) % p;
            if q == me {
                self.local_pull(s, fish, &mut acc, phases);
            } else {
                self.remote_pull(s, base, (q, counts[q as usize]), fish, &mut acc, phases).await?;
            }
        }
        // Nobody reads the old positions once all nodes are here.
        phases.time(s.proc(), "communicate", s.barrier()).await?;
        compute(s, phases, MOVE * f as u64, || {
            advance(fish, &acc[0], &acc[1], self.fish_per_node * p as u64);
            for i in 0..f {
                s.local().set_f64(base + 2 * i as u64, fish.x[i]);
                s.local().set_f64(base + 2 * i as u64 + 1, fish.y[i]);
            }
        });
        // Every position is new before the next step reads any.
        phases.time(s.proc(), "communicate", s.barrier()).await
    }
}

impl SplitcProgram for WatorConfig {
    type Answer = School;

    fn name(&self) -> &'static str {
        "wator"
    }

    fn input(&self, nodes: u32) -> String {
        format!(
            "{} fish, {} per node on average (those in its strip), {} time steps, two one-word reads per remote \
             fish per step; the paper gives no size",
            self.fish_per_node * nodes as u64,
            self.fish_per_node,
            self.steps
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        let most = ocean(self.seed, nodes, self.fish_per_node).iter().map(|s| s.x.len() as u64).max();
        LIBRARY_WORDS_PER_NODE * nodes as u64 + 2 * most.unwrap_or(0)
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<School, AmError> {
        self.validate(s.procs()).map_err(AmError::NotAllowed)?;
        // Every node makes the whole ocean (it is small): its own fish, and
        // how many every other node owns.
        let mut schools = ocean(self.seed, s.procs(), self.fish_per_node);
        let counts: Vec<u64> = schools.iter().map(|s| s.x.len() as u64).collect();
        let base = s.alloc(2 * counts.iter().max().copied().unwrap_or(0))?;
        let mut fish = schools.swap_remove(s.me().index());
        for i in 0..fish.x.len() {
            s.local().set_f64(base + 2 * i as u64, fish.x[i]);
            s.local().set_f64(base + 2 * i as u64 + 1, fish.y[i]);
        }
        s.barrier().await?;
        for _ in 0..self.steps {
            self.step(s, base, &counts, &mut fish, phases).await?;
        }
        Ok(fish)
    }

    fn check(&self, nodes: u32, answers: &[&School]) -> Result<(), String> {
        let mut schools = ocean(self.seed, nodes, self.fish_per_node);
        for _ in 0..self.steps {
            let pulls: Vec<(Vec<f64>, Vec<f64>)> = (0..schools.len()).map(|p| reference_pull(&schools, p)).collect();
            for (school, (ax, ay)) in schools.iter_mut().zip(pulls) {
                advance(school, &ax, &ay, self.fish_per_node * nodes as u64);
            }
        }
        for (node, (want, got)) in schools.iter().zip(answers).enumerate() {
            let fields =
                [("x", &want.x, &got.x), ("y", &want.y, &got.y), ("vx", &want.vx, &got.vx), ("vy", &want.vy, &got.vy)];
            for (name, w, g) in fields {
                if g.len() != w.len() {
                    return Err(format!("node {node} has {} fish; it owns {}", g.len(), w.len()));
                }
                // Bit for bit: the same operations in the same order.
                if let Some(i) = (0..w.len()).find(|&i| g[i].to_bits() != w[i].to_bits()) {
                    return Err(format!("node {node}'s fish {i} has {name} {}; the reference has {}", g[i], w[i]));
                }
            }
        }
        Ok(())
    }
}
