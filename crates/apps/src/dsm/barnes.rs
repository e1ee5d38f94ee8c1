//! Barnes-Hut N-body simulation (HPCA 1999 Section 5, Table 2: `barnes`,
//! 16K particles), after the SPLASH-2 program: a 3-D octree rebuilt every
//! time step, forces by a tree walk with opening criterion `theta`.
//!
//! Shared data, as SPLASH-2 lays it out:
//! - `bodies`: one 16-word record per body (position, mass, velocity,
//!   acceleration, potential), homed `Blocked`. Bodies are numbered in
//!   Morton order of their starting positions and thread `r` owns the
//!   contiguous block `[r n / R, (r+1) n / R)`, so a thread's bodies are
//!   near each other in space (a static stand-in for SPLASH-2's
//!   costzones) and mostly homed on its node.
//! - `cells`: a pool of 16-word cell records (eight child references, then
//!   mass and centre of mass), handed out to threads in chunks by a
//!   fetch&add on a shared counter, homed `RoundRobin`.
//! - cell locks, hashed by cell number, as SPLASH-2's `CellLock`s.
//!
//! Each step, phases separated by barriers:
//! 1. bounds: each thread's bounding box merged into a shared one under a
//!    lock (SPLASH-2's global min/max update);
//! 2. build: every thread inserts its own bodies into the one shared tree,
//!    locking a cell only to change one of its child slots (a slot that
//!    already holds a cell is followed without a lock, since cells are never
//!    replaced);
//! 3. centre of mass: each thread computes it for the cells it created,
//!    deepest level first with a barrier between levels (SPLASH-2 waits on
//!    per-cell done flags instead; the levels give the same order of sums);
//! 4. force: each thread walks the tree for each of its bodies, reading
//!    remote cells and bodies as it goes (the sporadic, latency-bound reads
//!    the paper measures), and writes the body's acceleration and
//!    potential into its record (the false sharing of SPLASH-2's body
//!    records included);
//! 5. update: each thread advances its own bodies (kick then drift).
//!
//! The tree a set of positions gives is the same whatever order bodies are
//! inserted in (a leaf holds one body; a cell exists where two or more
//! bodies share a region), sums run over children in octant order and the
//! walk visits them in octant order, so the parallel run computes exactly
//! the sequential reference's numbers; [`Barnes::check`] still allows a
//! relative 1e-9 per coordinate.

// Coordinates and expansion terms are indexed in step across several
// arrays; index loops say so more plainly than zipped iterators.
#![allow(clippy::needless_range_loop)]
use super::{DsmProgram, Phases};
use finegrain_core::{AmError, Proc, Work};
use finegrain_dsm::{DsmBuilder, DsmProc, Home, LockId, Shared};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Words per body record: x y z mass | vx vy vz - | ax ay az phi | - - - -.
const BODY_WORDS: u64 = 16;
/// Words per cell record: eight children | mass cx cy cz | - - - -.
const CELL_WORDS: u64 = 16;
const BODY_ACC: u64 = 8;
const CELL_MASS: u64 = 8;
/// Cells a thread takes from the shared pool at a time, so the counter is
/// touched once per chunk rather than once per cell.
const CELL_CHUNK: u64 = 16;
const CELL_LOCKS: u32 = 1024;
/// Deeper than any tree of distinct double-precision positions gets; a
/// body that would go deeper shares its position with another.
const MAX_DEPTH: u32 = 64;

/// A child slot: 0 is empty, a body has the top bit set, a cell is its
/// number plus one.
const EMPTY: u64 = 0;
const BODY_TAG: u64 = 1 << 63;

/// Work of one body-body or body-cell interaction, counted from
/// `interact`: the separation (3 subtracts), its square plus softening (3
/// multiplies, 3 adds), the square root and two divides, the scale (1
/// multiply), the pull (3 multiply-adds: 6) and the potential (1
/// subtract); the running sums' four loads and stores; the call and its
/// branch.
pub const INTERACTION: Work = Work::new(17, 3, 2, 4, 4);
/// Work per cell visited by a walk, from `walk` and `far_enough`: the
/// opening test (3 subtracts, 3 multiplies, 2 adds, 2 multiplies, a
/// compare); scanning the eight children's words (a load, a mask and
/// test, a branch each) and the stack's pop and pushes.
pub const VISIT: Work = Work::new(11, 0, 28, 10, 2);
/// Work per tree level an insertion descends: the octant (3 compares and
/// 3 integer operations to form its index), the sub-centre (3 adds or
/// subtracts and the halved side), the child's index and the loop.
pub const INSERT_LEVEL: Work = Work::new(7, 0, 6, 4, 4);
/// Work per child summed into a centre of mass, from `combine`: the mass
/// add and three multiply-adds; the child's four words loaded; the loop.
pub const COM_CHILD: Work = Work::new(7, 0, 2, 4, 0);
/// Work per cell's centre of mass besides its children: three divides by
/// the mass, four stores.
pub const COM_CELL: Work = Work::new(0, 3, 2, 0, 4);
/// Work to advance one body, from `kick_drift`: three kicks and drifts
/// (a multiply and an add each: 12); position, velocity and acceleration
/// loaded (9), position and velocity stored (6); the loop.
pub const UPDATE: Work = Work::new(12, 0, 2, 9, 6);
/// Work to fold one body into the bounding box, from `bounds`: six
/// compares (min, max), three coordinates loaded, the loop.
pub const BOUND: Work = Work::new(6, 0, 2, 3, 0);

/// The Barnes-Hut run's input and the shared arrays it lays out.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Barnes {
    pub bodies: u64,
    pub steps: u32,
    /// Opening criterion: a cell of side `s` at distance `d` is used whole
    /// when `s < theta d` (0 opens every cell: the direct sum).
    pub theta: f64,
    /// Softening length.
    pub eps: f64,
    pub dt: f64,
    pub seed: u64,
    #[serde(skip)]
    lay: Option<Layout>,
}

/// Two runs' inputs are equal when their fields are, laid out or not.
impl PartialEq for Barnes {
    fn eq(&self, o: &Barnes) -> bool {
        self.bodies == o.bodies
            && self.steps == o.steps
            && self.theta == o.theta
            && self.eps == o.eps
            && self.dt == o.dt
            && self.seed == o.seed
    }
}

#[derive(Clone, Debug)]
struct Layout {
    bodies: Shared,
    cells: Shared,
    /// min xyz, max xyz, deepest level, next free cell.
    frame: Shared,
    cell_locks: Vec<LockId>,
    frame_lock: LockId,
}

const FRAME_NEXT_CELL: u64 = 7;
const FRAME_DEPTH: u64 = 6;

impl Barnes {
    /// For tests: 128 bodies, 2 steps.
    pub fn tiny(seed: u64) -> Barnes {
        Barnes { bodies: 128, steps: 2, theta: 1.0, eps: 0.05, dt: 0.025, seed, lay: None }
    }

    /// The study's quick set: 1024 bodies, 1 step (about 150K shared
    /// reads, most of them in the force walk).
    pub fn quick(seed: u64) -> Barnes {
        Barnes { bodies: 1024, steps: 1, ..Barnes::tiny(seed) }
    }

    /// Table 2's 16K particles, 2 steps (the paper gives no step count;
    /// SPLASH-2's default input runs 4, the first of which warms up).
    pub fn paper(seed: u64) -> Barnes {
        Barnes { bodies: 16384, steps: 2, ..Barnes::tiny(seed) }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(2..=1 << 22).contains(&self.bodies) {
            return Err(format!("barnes: invalid bodies = {}; allowed 2..=4194304", self.bodies));
        }
        if self.steps == 0 {
            return Err("barnes: steps = 0; allowed 1 or more".into());
        }
        if !(self.theta.is_finite() && self.theta >= 0.0) {
            return Err(format!("barnes: invalid theta = {}; allowed a finite number >= 0", self.theta));
        }
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return Err(format!("barnes: invalid eps = {}; allowed a finite number > 0", self.eps));
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Err(format!("barnes: invalid dt = {}; allowed a finite number > 0", self.dt));
        }
        Ok(())
    }

    /// Cells the pool holds: a tree of n bodies has fewer than n cells
    /// unless close pairs make chains; twice that plus every thread's
    /// partly used chunk is ample for the Plummer input.
    fn cell_capacity(&self) -> u64 {
        2 * self.bodies + 64 * CELL_CHUNK + 64
    }
}

/// A body's state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Body {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    pub mass: f64,
}

impl Body {
    fn record(&self) -> [u64; BODY_WORDS as usize] {
        let mut r = [0u64; BODY_WORDS as usize];
        for k in 0..3 {
            r[k] = self.pos[k].to_bits();
            r[4 + k] = self.vel[k].to_bits();
        }
        r[3] = self.mass.to_bits();
        r
    }

    fn from_record(r: &[u64]) -> Body {
        let f = |k: usize| f64::from_bits(r[k]);
        Body { pos: [f(0), f(1), f(2)], vel: [f(4), f(5), f(6)], mass: f(3) }
    }
}

/// The Plummer model SPLASH-2's barnes starts from (Aarseth, Henon and
/// Wielen 1974), in units where the total mass is 1, numbered in Morton
/// order of position.
pub(crate) fn plummer(n: u64, seed: u64) -> Vec<Body> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let rscale = 3.0 * std::f64::consts::PI / 16.0;
    let vscale = 1.0 / rscale.sqrt();
    let mut bodies: Vec<Body> = (0..n)
        .map(|_| {
            // The mass fraction inside radius r is (1 + r^-2)^-3/2; SPLASH-2
            // drops the outermost bodies the same way (r < 9).
            let r = loop {
                let u: f64 = rng.gen_range(0.0..0.999);
                let r = 1.0 / (u.powf(-2.0 / 3.0) - 1.0).sqrt();
                if r.is_finite() && r < 9.0 {
                    break r;
                }
            };
            let q = loop {
                let x: f64 = rng.gen_range(0.0..1.0);
                let y: f64 = rng.gen_range(0.0..0.1);
                if y < x * x * (1.0 - x * x).powf(3.5) {
                    break x;
                }
            };
            let v = q * 2f64.sqrt() * (1.0 + r * r).powf(-0.25);
            let (dp, dv) = (unit_vector(&mut rng), unit_vector(&mut rng));
            Body { pos: dp.map(|c| c * r * rscale), vel: dv.map(|c| c * v * vscale), mass: 1.0 / n as f64 }
        })
        .collect();
    let (lo, hi) = bounds(&bodies);
    let key = |b: &Body| {
        let mut k = 0u64;
        let cells: Vec<u64> = (0..3)
            .map(|d| {
                let span = (hi[d] - lo[d]).max(f64::MIN_POSITIVE);
                (((b.pos[d] - lo[d]) / span) * ((1u64 << 21) - 1) as f64) as u64
            })
            .collect();
        for bit in (0..21).rev() {
            for c in &cells {
                k = (k << 1) | ((c >> bit) & 1);
            }
        }
        k
    };
    bodies.sort_by_key(key);
    bodies
}

fn unit_vector(rng: &mut ChaCha8Rng) -> [f64; 3] {
    loop {
        let v: [f64; 3] = [rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)];
        let r2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        if r2 > 1e-6 && r2 <= 1.0 {
            let r = r2.sqrt();
            return [v[0] / r, v[1] / r, v[2] / r];
        }
    }
}

fn bounds(bodies: &[Body]) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for b in bodies {
        for d in 0..3 {
            lo[d] = lo[d].min(b.pos[d]);
            hi[d] = hi[d].max(b.pos[d]);
        }
    }
    (lo, hi)
}

/// The root cell's centre and side from the bodies' bounding box: a cube a
/// little larger than the box, so no body sits on its outer faces.
fn root_frame(lo: [f64; 3], hi: [f64; 3]) -> ([f64; 3], f64) {
    let side = (0..3).map(|d| hi[d] - lo[d]).fold(0.0, f64::max) * 1.0001 + 1e-9;
    ([0, 1, 2].map(|d| 0.5 * (lo[d] + hi[d])), side)
}

fn octant(p: [f64; 3], center: [f64; 3]) -> usize {
    (0..3).map(|d| ((p[d] >= center[d]) as usize) << d).sum()
}

fn sub_center(center: [f64; 3], o: usize, side: f64) -> [f64; 3] {
    [0, 1, 2].map(|d| center[d] + if o >> d & 1 == 1 { side / 4.0 } else { -side / 4.0 })
}

/// Adds body or cell `(m, q)`'s pull on a body at `p` to `acc` (xyz, then
/// potential), with Plummer softening.
fn interact(acc: &mut [f64; 4], p: [f64; 3], m: f64, q: [f64; 3], eps2: f64) {
    let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
    let r = r2.sqrt();
    let s = m / (r2 * r);
    for k in 0..3 {
        acc[k] += d[k] * s;
    }
    acc[3] -= m / r;
}

/// Whether a cell of side `side` with centre of mass `com` is far enough
/// from `p` to stand for its bodies.
fn far_enough(p: [f64; 3], com: [f64; 3], side: f64, theta: f64) -> bool {
    let d = [com[0] - p[0], com[1] - p[1], com[2] - p[2]];
    side * side < theta * theta * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
}

fn kick_drift(b: &mut Body, acc: [f64; 4], dt: f64) {
    for k in 0..3 {
        b.vel[k] += acc[k] * dt;
        b.pos[k] += b.vel[k] * dt;
    }
}

/// The sum of centres of mass of children `(mass, position)` in octant
/// order.
fn combine(children: &[(f64, [f64; 3])]) -> (f64, [f64; 3]) {
    let mut m = 0.0;
    let mut s = [0.0; 3];
    for (cm, cp) in children {
        m += cm;
        for k in 0..3 {
            s[k] += cm * cp[k];
        }
    }
    (m, s.map(|x| x / m))
}

/// The sequential tree: the same records as the shared one, in local
/// memory.
struct Tree {
    cells: Vec<[u64; 8]>,
    com: Vec<(f64, [f64; 3])>,
    side: f64,
}

impl Tree {
    fn build(bodies: &[Body]) -> Result<Tree, String> {
        let (lo, hi) = bounds(bodies);
        let (center, side) = root_frame(lo, hi);
        let mut t = Tree { cells: vec![[EMPTY; 8]], com: Vec::new(), side };
        for (i, b) in bodies.iter().enumerate() {
            let (mut cell, mut c, mut s) = (0usize, center, side);
            for depth in 0.. {
                if depth > MAX_DEPTH {
                    return Err(format!("barnes: body {i} shares its position with another body"));
                }
                let o = octant(b.pos, c);
                let ch = t.cells[cell][o];
                if ch == EMPTY {
                    t.cells[cell][o] = BODY_TAG | i as u64;
                    break;
                }
                let sc = sub_center(c, o, s);
                if ch & BODY_TAG != 0 {
                    let other = (ch & !BODY_TAG) as usize;
                    let mut fresh = [EMPTY; 8];
                    fresh[octant(bodies[other].pos, sc)] = ch;
                    t.cells.push(fresh);
                    t.cells[cell][o] = t.cells.len() as u64;
                }
                cell = (t.cells[cell][o] - 1) as usize;
                (c, s) = (sc, s / 2.0);
            }
        }
        t.com = vec![(0.0, [0.0; 3]); t.cells.len()];
        t.centre_of_mass(0, bodies);
        Ok(t)
    }

    fn centre_of_mass(&mut self, cell: usize, bodies: &[Body]) -> (f64, [f64; 3]) {
        let mut children = Vec::with_capacity(8);
        for o in 0..8 {
            let ch = self.cells[cell][o];
            if ch & BODY_TAG != 0 {
                let b = &bodies[(ch & !BODY_TAG) as usize];
                children.push((b.mass, b.pos));
            } else if ch != EMPTY {
                children.push(self.centre_of_mass((ch - 1) as usize, bodies));
            }
        }
        self.com[cell] = combine(&children);
        self.com[cell]
    }

    /// Body `i`'s acceleration and potential, walking as the threads do.
    fn force(&self, i: usize, bodies: &[Body], theta: f64, eps2: f64) -> [f64; 4] {
        let p = bodies[i].pos;
        let mut acc = [0.0; 4];
        let mut stack = vec![(0usize, self.side)];
        while let Some((cell, side)) = stack.pop() {
            let (m, com) = self.com[cell];
            if far_enough(p, com, side, theta) {
                interact(&mut acc, p, m, com, eps2);
                continue;
            }
            for o in (0..8).rev() {
                let ch = self.cells[cell][o];
                if ch & BODY_TAG != 0 {
                    let j = (ch & !BODY_TAG) as usize;
                    if j != i {
                        interact(&mut acc, p, bodies[j].mass, bodies[j].pos, eps2);
                    }
                } else if ch != EMPTY {
                    stack.push(((ch - 1) as usize, side / 2.0));
                }
            }
        }
        acc
    }
}

/// Accelerations (and potentials) of one tree evaluation, sequentially.
pub(crate) fn tree_forces(bodies: &[Body], theta: f64, eps: f64) -> Result<Vec<[f64; 4]>, String> {
    let t = Tree::build(bodies)?;
    Ok((0..bodies.len()).map(|i| t.force(i, bodies, theta, eps * eps)).collect())
}

/// The sequential reference run: the bodies after every step.
pub(crate) fn reference(cfg: &Barnes) -> Result<Vec<Body>, String> {
    cfg.validate()?;
    let mut bodies = plummer(cfg.bodies, cfg.seed);
    for _ in 0..cfg.steps {
        let acc = tree_forces(&bodies, cfg.theta, cfg.eps)?;
        for (b, a) in bodies.iter_mut().zip(acc) {
            kick_drift(b, a, cfg.dt);
        }
    }
    Ok(bodies)
}

/// What one thread returns: its bodies' final state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BarnesAnswer {
    pub first: u64,
    /// Position then velocity of each body from `first` on.
    pub state: Vec<[f64; 6]>,
}

fn my_bodies(n: u64, rank: u32, ranks: u32) -> std::ops::Range<u64> {
    let (r, ranks) = (rank as u64, ranks as u64);
    r * n / ranks..(r + 1) * n / ranks
}

fn not_allowed(what: String) -> AmError {
    AmError::NotAllowed(what)
}

fn f3(r: &[u64]) -> [f64; 3] {
    [f64::from_bits(r[0]), f64::from_bits(r[1]), f64::from_bits(r[2])]
}

/// A thread's chunk of the cell pool.
struct CellAlloc {
    next: u64,
    end: u64,
}

impl Barnes {
    fn lay(&self) -> Result<&Layout, AmError> {
        self.lay.as_ref().ok_or_else(|| not_allowed("barnes: run before layout".into()))
    }

    async fn alloc_cell<P: Proc>(&self, d: &DsmProc<'_, P>, lay: &Layout, a: &mut CellAlloc) -> Result<u64, AmError> {
        if a.next == a.end {
            let base = d.fetch_add(lay.frame, FRAME_NEXT_CELL, CELL_CHUNK).await?;
            if base + CELL_CHUNK > self.cell_capacity() {
                return Err(not_allowed(format!(
                    "barnes: the tree needs more than {} cells (bodies too close together)",
                    self.cell_capacity()
                )));
            }
            (a.next, a.end) = (base, base + CELL_CHUNK);
        }
        a.next += 1;
        Ok(a.next - 1)
    }

    /// Inserts body `b` at `p`; returns the cells it created with their
    /// levels.
    #[allow(clippy::too_many_arguments)]
    async fn insert<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        lay: &Layout,
        (center, side): ([f64; 3], f64),
        b: u64,
        p: [f64; 3],
        alloc: &mut CellAlloc,
        created: &mut Vec<(u64, u32)>,
    ) -> Result<u64, AmError> {
        let (mut cell, mut c, mut s) = (0u64, center, side);
        let mut level = 0;
        loop {
            if level > MAX_DEPTH {
                return Err(not_allowed(format!("barnes: body {b} shares its position with another body")));
            }
            let o = octant(p, c) as u64;
            let slot = cell * CELL_WORDS + o;
            // As in SPLASH-2: read the slot without the lock, take it only to
            // change the slot (an empty or body slot is read again under it).
            let mut ch = d.read(lay.cells, slot).await?;
            if ch == EMPTY || ch & BODY_TAG != 0 {
                let lock = lay.cell_locks[(cell % CELL_LOCKS as u64) as usize];
                d.lock(lock).await?;
                ch = d.read(lay.cells, slot).await?;
                if ch == EMPTY {
                    d.write(lay.cells, slot, BODY_TAG | b).await?;
                    d.unlock(lock).await?;
                    return Ok(level as u64 + 1);
                }
                if ch & BODY_TAG != 0 {
                    let mut op = [0u64; 3];
                    d.read_into(lay.bodies, (ch & !BODY_TAG) * BODY_WORDS, &mut op).await?;
                    let fresh = self.alloc_cell(d, lay, alloc).await?;
                    let mut rec = [0u64; CELL_WORDS as usize];
                    rec[octant(f3(&op), sub_center(c, o as usize, s))] = ch;
                    d.write_from(lay.cells, fresh * CELL_WORDS, &rec).await?;
                    d.write(lay.cells, slot, fresh + 1).await?;
                    created.push((fresh, level + 1));
                    ch = fresh + 1;
                }
                d.unlock(lock).await?;
            }
            cell = ch - 1;
            c = sub_center(c, o as usize, s);
            s /= 2.0;
            level += 1;
        }
    }

    /// One body's tree walk (the same walk as [`Tree::force`]); returns
    /// its acceleration and potential and the interactions it counted.
    async fn walk<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        lay: &Layout,
        side: f64,
        i: u64,
        p: [f64; 3],
    ) -> Result<([f64; 4], u64, u64), AmError> {
        let eps2 = self.eps * self.eps;
        let mut acc = [0.0; 4];
        let (mut interactions, mut visits) = (0, 0);
        let mut stack = vec![(0u64, side)];
        let mut rec = [0u64; 12];
        let mut other = [0u64; 4];
        while let Some((cell, side)) = stack.pop() {
            d.read_into(lay.cells, cell * CELL_WORDS, &mut rec).await?;
            visits += 1;
            let m = f64::from_bits(rec[CELL_MASS as usize]);
            let com = f3(&rec[CELL_MASS as usize + 1..]);
            if far_enough(p, com, side, self.theta) {
                interact(&mut acc, p, m, com, eps2);
                interactions += 1;
                continue;
            }
            for o in (0..8).rev() {
                let ch = rec[o];
                if ch & BODY_TAG != 0 {
                    let j = ch & !BODY_TAG;
                    if j != i {
                        d.read_into(lay.bodies, j * BODY_WORDS, &mut other).await?;
                        interact(&mut acc, p, f64::from_bits(other[3]), f3(&other), eps2);
                        interactions += 1;
                    }
                } else if ch != EMPTY {
                    stack.push((ch - 1, side / 2.0));
                }
            }
        }
        Ok((acc, interactions, visits))
    }

    async fn step<P: Proc>(&self, d: &DsmProc<'_, P>, lay: &Layout, phases: &mut Phases) -> Result<(), AmError> {
        let mine = my_bodies(self.bodies, d.rank(), d.ranks());
        let owned = (mine.end - mine.start) as usize;
        let mut local = vec![0u64; owned * BODY_WORDS as usize];
        if owned > 0 {
            d.read_into(lay.bodies, mine.start * BODY_WORDS, &mut local).await?;
        }
        let mine_bodies: Vec<Body> = local.chunks(BODY_WORDS as usize).map(Body::from_record).collect();

        // 1. Bounds.
        let t0 = d.now();
        let (lo, hi) = bounds(&mine_bodies);
        d.charge_work(BOUND * owned as u64);
        d.lock(lay.frame_lock).await?;
        let mut g = [0u64; 6];
        d.read_into(lay.frame, 0, &mut g).await?;
        let mut g: Vec<f64> = g.iter().map(|&w| f64::from_bits(w)).collect();
        for k in 0..3 {
            g[k] = g[k].min(lo[k]);
            g[3 + k] = g[3 + k].max(hi[k]);
        }
        let g: Vec<u64> = g.iter().map(|x| x.to_bits()).collect();
        d.write_from(lay.frame, 0, &g).await?;
        d.unlock(lay.frame_lock).await?;
        d.barrier().await?;
        let mut g = [0u64; 6];
        d.read_into(lay.frame, 0, &mut g).await?;
        let (center, side) = root_frame(f3(&g), f3(&g[3..]));
        if d.rank() == 0 {
            d.write_from(lay.cells, 0, &[0u64; CELL_WORDS as usize]).await?;
            d.write(lay.frame, FRAME_NEXT_CELL, 1).await?;
            d.write(lay.frame, FRAME_DEPTH, 0).await?;
        }
        d.barrier().await?;
        let t1 = d.now();
        phases.add("bounds", t1 - t0);

        // 2. Build.
        let mut alloc = CellAlloc { next: 0, end: 0 };
        let mut created = Vec::new();
        if d.rank() == 0 {
            created.push((0, 0));
            let reset: Vec<u64> =
                [f64::INFINITY; 3].iter().chain(&[f64::NEG_INFINITY; 3]).map(|x| x.to_bits()).collect();
            d.write_from(lay.frame, 0, &reset).await?;
        }
        for (k, b) in mine_bodies.iter().enumerate() {
            let levels =
                self.insert(d, lay, (center, side), mine.start + k as u64, b.pos, &mut alloc, &mut created).await?;
            d.charge_work(INSERT_LEVEL * levels);
        }
        let deepest = created.iter().map(|c| c.1).max().unwrap_or(0) as u64;
        d.lock(lay.frame_lock).await?;
        let depth = d.read(lay.frame, FRAME_DEPTH).await?;
        if deepest > depth {
            d.write(lay.frame, FRAME_DEPTH, deepest).await?;
        }
        d.unlock(lay.frame_lock).await?;
        d.barrier().await?;
        let t2 = d.now();
        phases.add("build", t2 - t1);
        phases.count("cells", created.len() as u64);

        // 3. Centres of mass, deepest level first.
        let depth = d.read(lay.frame, FRAME_DEPTH).await? as u32;
        for level in (0..=depth).rev() {
            for &(cell, _) in created.iter().filter(|c| c.1 == level) {
                let mut kids = [0u64; 8];
                d.read_into(lay.cells, cell * CELL_WORDS, &mut kids).await?;
                let mut children = Vec::with_capacity(8);
                let mut rec = [0u64; 4];
                for &ch in kids.iter().filter(|&&ch| ch != EMPTY) {
                    if ch & BODY_TAG != 0 {
                        d.read_into(lay.bodies, (ch & !BODY_TAG) * BODY_WORDS, &mut rec).await?;
                        children.push((f64::from_bits(rec[3]), f3(&rec)));
                    } else {
                        d.read_into(lay.cells, (ch - 1) * CELL_WORDS + CELL_MASS, &mut rec).await?;
                        children.push((f64::from_bits(rec[0]), f3(&rec[1..])));
                    }
                }
                let (m, com) = combine(&children);
                d.charge_work(COM_CHILD * children.len() as u64 + COM_CELL);
                let out = [m.to_bits(), com[0].to_bits(), com[1].to_bits(), com[2].to_bits()];
                d.write_from(lay.cells, cell * CELL_WORDS + CELL_MASS, &out).await?;
            }
            d.barrier().await?;
        }
        let t3 = d.now();
        phases.add("com", t3 - t2);

        // 4. Forces.
        let mut accs = Vec::with_capacity(owned);
        for (k, b) in mine_bodies.iter().enumerate() {
            let i = mine.start + k as u64;
            let (acc, interactions, visits) = self.walk(d, lay, side, i, b.pos).await?;
            d.charge_work(INTERACTION * interactions + VISIT * visits);
            d.write_from(lay.bodies, i * BODY_WORDS + BODY_ACC, &acc.map(f64::to_bits)).await?;
            phases.count("interactions", interactions);
            accs.push(acc);
        }
        d.barrier().await?;
        let t4 = d.now();
        phases.add("force", t4 - t3);

        // 5. Update.
        for (k, (mut b, acc)) in mine_bodies.into_iter().zip(accs).enumerate() {
            kick_drift(&mut b, acc, self.dt);
            let rec = b.record();
            d.write_from(lay.bodies, (mine.start + k as u64) * BODY_WORDS, &rec[..8]).await?;
        }
        d.charge_work(UPDATE * owned as u64);
        d.barrier().await?;
        phases.add("update", d.now() - t4);
        Ok(())
    }
}

impl DsmProgram for Barnes {
    type Answer = BarnesAnswer;

    fn name(&self) -> &'static str {
        "barnes"
    }

    fn input(&self) -> String {
        format!(
            "{} particles (Plummer), {} steps, theta {}; Table 2: 16K particles",
            self.bodies, self.steps, self.theta
        )
    }

    fn layout(&mut self, b: &mut DsmBuilder) {
        let init: Vec<u64> = plummer(self.bodies, self.seed).iter().flat_map(|b| b.record()).collect();
        let bodies = b.alloc_with(init, Home::Blocked);
        let cells = b.alloc(self.cell_capacity() * CELL_WORDS, Home::RoundRobin);
        let frame: Vec<u64> =
            [f64::INFINITY; 3].iter().chain(&[f64::NEG_INFINITY; 3]).map(|x| x.to_bits()).chain([0, 1]).collect();
        let frame = b.alloc_with(frame, Home::Node(0));
        let cell_locks = b.locks(CELL_LOCKS);
        let frame_lock = b.locks(1)[0];
        self.lay = Some(Layout { bodies, cells, frame, cell_locks, frame_lock });
    }

    async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<BarnesAnswer, AmError> {
        self.validate().map_err(not_allowed)?;
        let lay = self.lay()?.clone();
        for _ in 0..self.steps {
            self.step(d, &lay, phases).await?;
        }
        let mine = my_bodies(self.bodies, d.rank(), d.ranks());
        let mut local = vec![0u64; ((mine.end - mine.start) * BODY_WORDS) as usize];
        if !local.is_empty() {
            d.read_into(lay.bodies, mine.start * BODY_WORDS, &mut local).await?;
        }
        let state = local
            .chunks(BODY_WORDS as usize)
            .map(Body::from_record)
            .map(|b| [b.pos[0], b.pos[1], b.pos[2], b.vel[0], b.vel[1], b.vel[2]])
            .collect();
        Ok(BarnesAnswer { first: mine.start, state })
    }

    fn check(&self, answers: &[&BarnesAnswer]) -> Result<(), String> {
        let want = reference(self)?;
        let ranks = answers.len() as u32;
        for (r, a) in answers.iter().enumerate() {
            let mine = my_bodies(self.bodies, r as u32, ranks);
            if a.first != mine.start || a.state.len() as u64 != mine.end - mine.start {
                return Err(format!(
                    "thread {r} returned bodies {}..{}; it owns {}..{}",
                    a.first,
                    a.first + a.state.len() as u64,
                    mine.start,
                    mine.end
                ));
            }
            for (k, got) in a.state.iter().enumerate() {
                let i = mine.start as usize + k;
                let w = &want[i];
                let want6 = [w.pos[0], w.pos[1], w.pos[2], w.vel[0], w.vel[1], w.vel[2]];
                for c in 0..6 {
                    if !close(got[c], want6[c], 1e-9) {
                        return Err(format!(
                            "body {i} coordinate {c} is {}; the sequential reference has {}",
                            got[c], want6[c]
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether `a` is within `rel` of `b`, relative to `b` (absolutely, near
/// zero).
pub(crate) fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1.0)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{run_native, run_sim};
    use super::*;

    #[test]
    fn runs_on_the_simulator_and_natively() {
        let sim = run_sim(Barnes::tiny(1), 2, 2).unwrap();
        assert_eq!(sim.len(), 4);
        assert!(sim.iter().all(|r| r.phases.times["force"] > 0));
        run_native(Barnes::tiny(2), 2, 2).unwrap();
        run_native(Barnes::tiny(3), 3, 1).unwrap();
        let sim = run_sim(Barnes::tiny(4), 3, 2).unwrap();
        assert_eq!(sim.len(), 6);
    }

    fn direct(bodies: &[Body], eps: f64) -> Vec<[f64; 4]> {
        (0..bodies.len())
            .map(|i| {
                let mut acc = [0.0; 4];
                for (j, o) in bodies.iter().enumerate() {
                    if j != i {
                        interact(&mut acc, bodies[i].pos, o.mass, o.pos, eps * eps);
                    }
                }
                acc
            })
            .collect()
    }

    #[test]
    fn theta_zero_tree_is_the_direct_sum() {
        let bodies = plummer(200, 3);
        let tree = tree_forces(&bodies, 0.0, 0.05).unwrap();
        let want = direct(&bodies, 0.05);
        let scale = want.iter().flat_map(|a| a.iter()).fold(0.0f64, |m, x| m.max(x.abs()));
        for (t, w) in tree.iter().zip(&want) {
            for k in 0..4 {
                assert!((t[k] - w[k]).abs() <= 1e-12 * scale, "{t:?} vs {w:?}");
            }
        }
    }

    #[test]
    fn theta_one_is_close_to_the_direct_sum() {
        let bodies = plummer(512, 4);
        let tree = tree_forces(&bodies, 1.0, 0.05).unwrap();
        let want = direct(&bodies, 0.05);
        // Barnes-Hut at theta 1 is good to a few percent per body.
        let err: f64 = tree
            .iter()
            .zip(&want)
            .map(|(t, w)| {
                let e = (0..3).map(|k| (t[k] - w[k]).powi(2)).sum::<f64>().sqrt();
                e / (0..3).map(|k| w[k] * w[k]).sum::<f64>().sqrt()
            })
            .sum::<f64>()
            / bodies.len() as f64;
        assert!(err < 0.05, "mean relative force error {err}");
    }

    #[test]
    fn tree_does_not_depend_on_insertion_order() {
        let bodies = plummer(300, 5);
        let a = tree_forces(&bodies, 0.7, 0.05).unwrap();
        let mut rev: Vec<Body> = bodies.clone();
        rev.reverse();
        let b = tree_forces(&rev, 0.7, 0.05).unwrap();
        // Same cells, same sums: only the bodies' numbers differ.
        for (i, acc) in a.iter().enumerate() {
            assert_eq!(*acc, b[bodies.len() - 1 - i]);
        }
    }

    #[test]
    fn plummer_is_deterministic_and_bounded() {
        let a = plummer(1000, 9);
        assert_eq!(a, plummer(1000, 9));
        assert!(a.iter().all(|b| b.pos.iter().all(|x| x.abs() < 9.0)));
        let m: f64 = a.iter().map(|b| b.mass).sum();
        assert!((m - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(Barnes { theta: -1.0, ..Barnes::tiny(1) }.validate().is_err());
        assert!(Barnes { bodies: 1, ..Barnes::tiny(1) }.validate().is_err());
        assert!(Barnes { steps: 0, ..Barnes::tiny(1) }.validate().is_err());
    }
}
