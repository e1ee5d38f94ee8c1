//! Fast multipole N-body simulation (HPCA 1999 Section 5, Table 2: `fmm`,
//! 16K particles). SPLASH-2's fmm is the adaptive 2-D method of Greengard
//! and Rokhlin; this one is its uniform-grid form: a complete quadtree of
//! `levels` levels, multipole and local expansions of `terms` terms, for
//! particles spread uniformly over the unit square, with the 2-D
//! (logarithmic) potential. The uniform tree is the stated simplification:
//! for a uniform input the adaptive tree is nearly complete anyway.
//!
//! Shared data:
//! - `parts`: one 8-word record per particle (x, y, mass, vx, vy,
//!   potential, ax, ay), homed `Blocked`; thread `r` owns particles
//!   `[r n / R, (r+1) n / R)`, numbered at the start in Morton order of
//!   their leaf box, so a thread's particles start out in its own boxes.
//! - per level, the boxes' multipole and local expansions, boxes numbered
//!   in Morton order and dealt out to threads in contiguous blocks (a
//!   static stand-in for SPLASH-2's costzones), homed `Blocked`;
//! - per leaf box, its particle count and where its particles' numbers
//!   start in a shared list.
//!
//! Each step, phases separated by barriers:
//! 1. bin: each thread takes a slot in its particles' leaf boxes by
//!    fetch&add on the box's count; each box's owner claims room in the
//!    shared list (fetch&add on a cursor) and publishes where its boxes
//!    start; each thread writes its particles' numbers there;
//! 2. upward: leaf owners read their particles (wherever they are homed)
//!    and form multipole expansions, then level by level each owner shifts
//!    its four children's expansions into its box's;
//! 3. downward: level by level, each owner converts the multipole
//!    expansions of its box's interaction list (up to 27 boxes, most of
//!    them another thread's: the latency-bound remote reads the paper
//!    measures) and adds its parent's local expansion, shifted;
//! 4. evaluate: leaf owners evaluate the local expansion at each of their
//!    particles and add the direct pull of the particles in the nine
//!    adjacent leaf boxes (read remotely), writing potential and
//!    acceleration into the particle's record;
//! 5. update: each thread advances its own particles (kick, drift,
//!    reflection at the square's walls).
//!
//! Particle numbers inside a box are sorted before use and every sum runs
//! in a fixed order, so the parallel run computes exactly the sequential
//! reference's numbers; [`Fmm::check`] allows a relative 1e-9 per value.

// Coordinates and expansion terms are indexed in step across several
// arrays; index loops say so more plainly than zipped iterators.
#![allow(clippy::needless_range_loop)]
use super::{DsmProgram, Phases};
use finegrain_core::{AmError, Proc, Work};
use finegrain_dsm::{DsmBuilder, DsmProc, Home, Shared};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::ops::{Add, AddAssign, Mul, Neg, Sub};

const PART_WORDS: u64 = 8;
const PART_RESULT: u64 = 5;
/// Words per leaf box's bin: count, start.
const BIN_WORDS: u64 = 2;

/// Work of one particle-particle interaction, counted from `direct`: the
/// separation (2 subtracts); the complex logarithm (its modulus squared,
/// 3 flops, then a logarithm and an arc tangent as a math library's
/// polynomial kernels, about 20 flops each, the arc tangent's divide);
/// the complex inverse (3 flops, a divide, 2 multiplies); two scaled
/// accumulations (8); the source's three words loaded; the call, the
/// `j != i` test and the loop.
pub const DIRECT: Work = Work::new(58, 2, 6, 3, 0);
/// Work per source per term of a leaf's multipole expansion, from `p2m`:
/// the coefficient (a divide and a negate), its scale and accumulation
/// (4), the next power (a complex multiply, 6); the term loaded and
/// stored; the loop.
pub const P2M_TERM: Work = Work::new(11, 1, 2, 2, 2);
/// Work per inner term of a shift (`m2m`, `l2l`): a complex multiply,
/// its scale by a binomial and the accumulation (10); the term, the
/// power and the binomial loaded (5); the loop.
pub const SHIFT_TERM: Work = Work::new(10, 0, 2, 5, 0);
/// Work per pair of terms of a multipole-to-local conversion (`m2l`'s
/// inner loop): a scale by a binomial and an accumulation (4); the term
/// and the binomial loaded (3); the loop.
pub const M2L_TERM: Work = Work::new(4, 0, 2, 3, 0);
/// Work per multipole-to-local conversion besides its inner loop: the
/// complex inverse (a divide), the complex logarithm (as in [`DIRECT`]),
/// the powers and signs (a complex multiply per term is in `M2L_POWER`),
/// the expansion's set-up.
pub const M2L_BOX: Work = Work::new(48, 2, 10, 4, 4);
/// Work per term of `m2l`'s powers and final scaling: two complex
/// multiplies and a sign (13); a load and a store.
pub const M2L_POWER: Work = Work::new(13, 0, 2, 2, 2);
/// Work per term of a local expansion's evaluation, from `eval_local`:
/// two complex multiply-adds and a scale (18); the coefficient loaded;
/// the loop.
pub const EVAL_TERM: Work = Work::new(18, 0, 2, 2, 0);
/// Work to advance one particle, from `Particle::advance`: the kick and
/// drift (two complex scales and adds, 8), the two reflections' compares
/// and clamps (4); position, velocity and pull loaded (6), position and
/// velocity stored (4); the branches.
pub const UPDATE: Work = Work::new(12, 0, 4, 6, 4);

/// Inner iterations of a shift of `terms`-term expansions: a triangle of
/// (term, lower term) pairs.
fn triangle(terms: usize) -> u64 {
    let t = terms as u64;
    t * (t + 1) / 2
}

/// The fast multipole run's input and the shared arrays it lays out.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fmm {
    pub particles: u64,
    /// Levels below the root: the leaf boxes are `4^levels`.
    pub levels: u32,
    /// Terms of every expansion (beyond the logarithmic one).
    pub terms: u32,
    pub steps: u32,
    pub dt: f64,
    pub seed: u64,
    #[serde(skip)]
    lay: Option<Layout>,
}

/// Two runs' inputs are equal when their fields are, laid out or not.
impl PartialEq for Fmm {
    fn eq(&self, o: &Fmm) -> bool {
        self.particles == o.particles
            && self.levels == o.levels
            && self.terms == o.terms
            && self.steps == o.steps
            && self.dt == o.dt
            && self.seed == o.seed
    }
}

#[derive(Clone, Debug)]
struct Layout {
    parts: Shared,
    /// Per level 0..=levels.
    mpole: Vec<Shared>,
    local: Vec<Shared>,
    bins: Shared,
    list: Shared,
    /// The list's fill cursor.
    cursor: Shared,
}

impl Fmm {
    /// For tests: 256 particles, 3 levels (64 leaves), 8 terms, 2 steps.
    pub fn tiny(seed: u64) -> Fmm {
        Fmm { particles: 256, levels: 3, terms: 8, steps: 2, dt: 1e-3, seed, lay: None }
    }

    /// The study's quick set: 2048 particles, 4 levels (256 leaves, 8
    /// particles each), 12 terms, 2 steps.
    pub fn quick(seed: u64) -> Fmm {
        Fmm { particles: 2048, levels: 4, terms: 12, ..Fmm::tiny(seed) }
    }

    /// Table 2's 16K particles: 5 levels (1024 leaves, 16 particles each),
    /// 16 terms (about 1e-6 relative accuracy, SPLASH-2's default), 2 steps
    /// (the paper gives no step count).
    pub fn paper(seed: u64) -> Fmm {
        Fmm { particles: 16384, levels: 5, terms: 16, ..Fmm::tiny(seed) }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(2..=1 << 22).contains(&self.particles) {
            return Err(format!("fmm: invalid particles = {}; allowed 2..=4194304", self.particles));
        }
        if !(2..=10).contains(&self.levels) {
            return Err(format!("fmm: invalid levels = {}; allowed 2..=10", self.levels));
        }
        if !(1..=40).contains(&self.terms) {
            return Err(format!("fmm: invalid terms = {}; allowed 1..=40", self.terms));
        }
        if self.steps == 0 {
            return Err("fmm: steps = 0; allowed 1 or more".into());
        }
        if !(self.dt.is_finite() && self.dt >= 0.0) {
            return Err(format!("fmm: invalid dt = {}; allowed a finite number >= 0", self.dt));
        }
        Ok(())
    }

    /// Words per box's expansion: `terms + 1` complex numbers, rounded up
    /// to whole 64-byte blocks.
    fn exp_words(&self) -> u64 {
        (2 * (self.terms as u64 + 1)).next_multiple_of(8)
    }

    fn side(&self) -> u64 {
        1 << self.levels
    }
}

/// A complex number, just what the expansions need.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct C {
    re: f64,
    im: f64,
}

impl C {
    const ZERO: C = C { re: 0.0, im: 0.0 };
    fn new(re: f64, im: f64) -> C {
        C { re, im }
    }
    fn real(re: f64) -> C {
        C { re, im: 0.0 }
    }
    fn ln(self) -> C {
        C::new(self.re.hypot(self.im).ln(), self.im.atan2(self.re))
    }
    fn inv(self) -> C {
        let d = self.re * self.re + self.im * self.im;
        C::new(self.re / d, -self.im / d)
    }
    fn scale(self, s: f64) -> C {
        C::new(self.re * s, self.im * s)
    }
}

impl Add for C {
    type Output = C;
    fn add(self, o: C) -> C {
        C::new(self.re + o.re, self.im + o.im)
    }
}
impl AddAssign for C {
    fn add_assign(&mut self, o: C) {
        *self = *self + o;
    }
}
impl Sub for C {
    type Output = C;
    fn sub(self, o: C) -> C {
        C::new(self.re - o.re, self.im - o.im)
    }
}
impl Mul for C {
    type Output = C;
    fn mul(self, o: C) -> C {
        C::new(self.re * o.re - self.im * o.im, self.re * o.im + self.im * o.re)
    }
}
impl Neg for C {
    type Output = C;
    fn neg(self) -> C {
        C::new(-self.re, -self.im)
    }
}

fn to_words(e: &[C], words: u64) -> Vec<u64> {
    let mut w: Vec<u64> = e.iter().flat_map(|c| [c.re.to_bits(), c.im.to_bits()]).collect();
    w.resize(words as usize, 0);
    w
}

fn from_words(w: &[u64], terms: usize) -> Vec<C> {
    (0..=terms).map(|k| C::new(f64::from_bits(w[2 * k]), f64::from_bits(w[2 * k + 1]))).collect()
}

/// Binomial coefficients up to `2 terms`, as the shifts need.
struct Binomials(Vec<Vec<f64>>);

impl Binomials {
    fn new(terms: usize) -> Binomials {
        let n = 2 * terms + 1;
        let mut t = vec![vec![0.0; n + 1]; n + 1];
        for i in 0..=n {
            t[i][0] = 1.0;
            for j in 1..=i {
                t[i][j] = t[i - 1][j - 1] + if j < i { t[i - 1][j] } else { 0.0 };
            }
        }
        Binomials(t)
    }
    fn c(&self, n: usize, k: usize) -> f64 {
        self.0[n][k]
    }
}

/// A particle as the expansions see it: position and mass.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Src {
    z: C,
    q: f64,
}

/// Multipole expansion about `center` of `srcs`: `a_0 log(z - c) +
/// sum a_k / (z - c)^k`.
fn p2m(srcs: &[Src], center: C, terms: usize) -> Vec<C> {
    let mut a = vec![C::ZERO; terms + 1];
    for s in srcs {
        let d = s.z - center;
        a[0] += C::real(s.q);
        let mut pw = d;
        for (k, ak) in a.iter_mut().enumerate().skip(1) {
            *ak += pw.scale(-s.q / k as f64);
            pw = pw * d;
        }
    }
    a
}

/// Adds child expansion `a` (about a centre `d` from the parent's) to the
/// parent's `b`.
fn m2m(a: &[C], d: C, b: &mut [C], bin: &Binomials) {
    let terms = a.len() - 1;
    let mut pw = vec![C::real(1.0); terms + 1];
    for k in 1..=terms {
        pw[k] = pw[k - 1] * d;
    }
    b[0] += a[0];
    for l in 1..=terms {
        let mut s = -(a[0] * pw[l]).scale(1.0 / l as f64);
        for k in 1..=l {
            s += (a[k] * pw[l - k]).scale(bin.c(l - 1, k - 1));
        }
        b[l] += s;
    }
}

/// Adds multipole expansion `a` (about a centre `d` from the local
/// expansion's) to local expansion `b`.
fn m2l(a: &[C], d: C, b: &mut [C], bin: &Binomials) {
    let terms = a.len() - 1;
    let inv = d.inv();
    // (-1)^k a_k / d^k
    let mut ak = vec![C::ZERO; terms + 1];
    let mut pw = C::real(1.0);
    for k in 1..=terms {
        pw = pw * inv;
        let t = a[k] * pw;
        ak[k] = if k % 2 == 1 { -t } else { t };
    }
    let mut b0 = a[0] * (-d).ln();
    for t in &ak[1..] {
        b0 += *t;
    }
    b[0] += b0;
    let mut pl = C::real(1.0);
    for l in 1..=terms {
        pl = pl * inv;
        let mut s = -(a[0].scale(1.0 / l as f64));
        for k in 1..=terms {
            s += ak[k].scale(bin.c(l + k - 1, k - 1));
        }
        b[l] += s * pl;
    }
}

/// Adds local expansion `a` shifted to a centre `d` from its own to `b`.
fn l2l(a: &[C], d: C, b: &mut [C], bin: &Binomials) {
    let terms = a.len() - 1;
    let mut pw = vec![C::real(1.0); terms + 1];
    for k in 1..=terms {
        pw[k] = pw[k - 1] * d;
    }
    for l in 0..=terms {
        let mut s = C::ZERO;
        for k in l..=terms {
            s += (a[k] * pw[k - l]).scale(bin.c(k, l));
        }
        b[l] += s;
    }
}

/// The local expansion's potential and field (`Φ` and `Φ'`) at `z`.
fn eval_local(b: &[C], center: C, z: C) -> (C, C) {
    let d = z - center;
    let (mut phi, mut dphi) = (C::ZERO, C::ZERO);
    for k in (0..b.len()).rev() {
        phi = phi * d + b[k];
        if k >= 1 {
            dphi = dphi * d + b[k].scale(k as f64);
        }
    }
    (phi, dphi)
}

/// Adds source `s`'s `Φ` and `Φ'` at `z`.
fn direct(acc: &mut (C, C), z: C, s: Src) {
    let d = z - s.z;
    acc.0 += d.ln().scale(s.q);
    acc.1 += d.inv().scale(s.q);
}

/// Potential and acceleration from `Φ` and `Φ'`: the potential is `Re Φ`,
/// and the pull is `-grad Re Φ = (-Re Φ', Im Φ')`.
fn result(acc: (C, C)) -> [f64; 3] {
    [acc.0.re, -acc.1.re, acc.1.im]
}

fn morton(ix: u64, iy: u64) -> u64 {
    let mut m = 0;
    for bit in 0..32 {
        m |= ((ix >> bit) & 1) << (2 * bit) | ((iy >> bit) & 1) << (2 * bit + 1);
    }
    m
}

fn unmorton(m: u64) -> (u64, u64) {
    let (mut ix, mut iy) = (0, 0);
    for bit in 0..32 {
        ix |= ((m >> (2 * bit)) & 1) << bit;
        iy |= ((m >> (2 * bit + 1)) & 1) << bit;
    }
    (ix, iy)
}

fn box_center(level: u32, b: u64) -> C {
    let (ix, iy) = unmorton(b);
    let w = 1.0 / (1u64 << level) as f64;
    C::new((ix as f64 + 0.5) * w, (iy as f64 + 0.5) * w)
}

fn leaf_of(z: C, side: u64) -> u64 {
    let cell = |x: f64| ((x * side as f64).floor().max(0.0) as u64).min(side - 1);
    morton(cell(z.re), cell(z.im))
}

/// Boxes at `level` adjacent to `b` or `b` itself, row by row.
fn neighbours(level: u32, b: u64) -> Vec<u64> {
    let side = 1i64 << level;
    let (ix, iy) = unmorton(b);
    let mut out = Vec::with_capacity(9);
    for dy in -1..=1 {
        for dx in -1..=1 {
            let (x, y) = (ix as i64 + dx, iy as i64 + dy);
            if (0..side).contains(&x) && (0..side).contains(&y) {
                out.push(morton(x as u64, y as u64));
            }
        }
    }
    out
}

/// `b`'s interaction list at `level` (2 or deeper): children of its
/// parent's neighbours that are not adjacent to it.
fn interaction_list(level: u32, b: u64) -> Vec<u64> {
    let (ix, iy) = unmorton(b);
    let mut out = Vec::new();
    for pn in neighbours(level - 1, b / 4) {
        for c in 4 * pn..4 * pn + 4 {
            let (cx, cy) = unmorton(c);
            if cx.abs_diff(ix) > 1 || cy.abs_diff(iy) > 1 {
                out.push(c);
            }
        }
    }
    out
}

/// Boxes `[first, end)` of a level of `count` boxes that rank `r` owns.
fn owned(count: u64, rank: u32, ranks: u32) -> std::ops::Range<u64> {
    let (r, ranks) = (rank as u64, ranks as u64);
    r * count / ranks..(r + 1) * count / ranks
}

/// A particle's full state.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Particle {
    z: C,
    q: f64,
    v: C,
}

impl Particle {
    fn record(&self) -> [u64; PART_WORDS as usize] {
        let mut r = [0; PART_WORDS as usize];
        for (k, x) in [self.z.re, self.z.im, self.q, self.v.re, self.v.im].into_iter().enumerate() {
            r[k] = x.to_bits();
        }
        r
    }

    fn from_record(r: &[u64]) -> Particle {
        let f = |k: usize| f64::from_bits(r[k]);
        Particle { z: C::new(f(0), f(1)), q: f(2), v: C::new(f(3), f(4)) }
    }

    /// Kick, drift, and reflect off the unit square's walls.
    fn advance(&mut self, acc: [f64; 3], dt: f64) {
        self.v += C::new(acc[1], acc[2]).scale(dt);
        self.z += self.v.scale(dt);
        let reflect = |x: &mut f64, v: &mut f64| {
            if *x < 0.0 {
                *x = -*x;
                *v = -*v;
            } else if *x >= 1.0 {
                *x = 2.0 - *x;
                *v = -*v;
            }
            *x = x.clamp(0.0, 1.0 - f64::EPSILON);
        };
        reflect(&mut self.z.re, &mut self.v.re);
        reflect(&mut self.z.im, &mut self.v.im);
    }
}

/// The starting particles: uniform over the unit square, small random
/// velocities, total mass 1, numbered in Morton order of their leaf box.
fn particles(cfg: &Fmm) -> Vec<Particle> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let n = cfg.particles;
    let mut ps: Vec<Particle> = (0..n)
        .map(|_| Particle {
            z: C::new(rng.gen_range(0.0..1.0), rng.gen_range(0.0..1.0)),
            q: 1.0 / n as f64,
            v: C::new(rng.gen_range(-0.1..0.1), rng.gen_range(-0.1..0.1)),
        })
        .collect();
    ps.sort_by_key(|p| leaf_of(p.z, cfg.side()));
    ps
}

/// The sequential reference: one FMM evaluation of potential and pull
/// (`[phi, ax, ay]` per particle), the same sums in the same order as the
/// threads make them.
fn fmm_eval(cfg: &Fmm, ps: &[Particle]) -> Vec<[f64; 3]> {
    let (levels, terms) = (cfg.levels, cfg.terms as usize);
    let bin = Binomials::new(terms);
    let leaves = 4u64.pow(levels);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); leaves as usize];
    for (i, p) in ps.iter().enumerate() {
        members[leaf_of(p.z, cfg.side()) as usize].push(i);
    }
    let srcs = |leaf: u64| -> Vec<(usize, Src)> {
        members[leaf as usize].iter().map(|&i| (i, Src { z: ps[i].z, q: ps[i].q })).collect()
    };
    let mut mpole: Vec<Vec<Vec<C>>> = (0..=levels).map(|l| vec![Vec::new(); 4usize.pow(l)]).collect();
    for leaf in 0..leaves {
        let s: Vec<Src> = srcs(leaf).into_iter().map(|x| x.1).collect();
        mpole[levels as usize][leaf as usize] = p2m(&s, box_center(levels, leaf), terms);
    }
    for l in (2..levels).rev() {
        for b in 0..4u64.pow(l) {
            mpole[l as usize][b as usize] = upward(&bin, l, b, |c| mpole[l as usize + 1][c as usize].clone(), terms);
        }
    }
    let mut local: Vec<Vec<Vec<C>>> = (0..=levels).map(|l| vec![Vec::new(); 4usize.pow(l)]).collect();
    for l in 2..=levels {
        for b in 0..4u64.pow(l) {
            let parent = (l > 2).then(|| local[l as usize - 1][(b / 4) as usize].clone());
            local[l as usize][b as usize] =
                downward(&bin, l, b, parent.as_deref(), |o| mpole[l as usize][o as usize].clone(), terms);
        }
    }
    let mut out = vec![[0.0; 3]; ps.len()];
    for leaf in 0..leaves {
        let near: Vec<Vec<(usize, Src)>> = neighbours(levels, leaf).into_iter().map(srcs).collect();
        for &(i, s) in &srcs(leaf) {
            out[i] = evaluate(&local[levels as usize][leaf as usize], levels, leaf, i, s.z, &near);
        }
    }
    out
}

/// Box `b`'s multipole expansion from its children's.
fn upward(bin: &Binomials, level: u32, b: u64, child: impl Fn(u64) -> Vec<C>, terms: usize) -> Vec<C> {
    let mut e = vec![C::ZERO; terms + 1];
    let c = box_center(level, b);
    for ch in 4 * b..4 * b + 4 {
        m2m(&child(ch), box_center(level + 1, ch) - c, &mut e, bin);
    }
    e
}

/// Box `b`'s local expansion: its parent's shifted, then its interaction
/// list's converted in list order.
fn downward(
    bin: &Binomials,
    level: u32,
    b: u64,
    parent: Option<&[C]>,
    mpole: impl Fn(u64) -> Vec<C>,
    terms: usize,
) -> Vec<C> {
    let mut e = vec![C::ZERO; terms + 1];
    let c = box_center(level, b);
    if let Some(pe) = parent {
        l2l(pe, c - box_center(level - 1, b / 4), &mut e, bin);
    }
    for o in interaction_list(level, b) {
        m2l(&mpole(o), box_center(level, o) - c, &mut e, bin);
    }
    e
}

/// Particle `i` at `z` in leaf `leaf`: its local expansion's value plus
/// the direct sum over the adjacent leaves' particles (`near`, each leaf's
/// sorted by number).
fn evaluate(local: &[C], levels: u32, leaf: u64, i: usize, z: C, near: &[Vec<(usize, Src)>]) -> [f64; 3] {
    let mut acc = eval_local(local, box_center(levels, leaf), z);
    for leaf_srcs in near {
        for &(j, s) in leaf_srcs {
            if j != i {
                direct(&mut acc, z, s);
            }
        }
    }
    result(acc)
}

/// The sequential reference run: the particles after every step, and the
/// last step's potential and pull.
fn reference(cfg: &Fmm) -> Result<(Vec<Particle>, Vec<[f64; 3]>), String> {
    cfg.validate()?;
    let mut ps = particles(cfg);
    let mut last = Vec::new();
    for _ in 0..cfg.steps {
        last = fmm_eval(cfg, &ps);
        for (p, a) in ps.iter_mut().zip(&last) {
            p.advance(*a, cfg.dt);
        }
    }
    Ok((ps, last))
}

/// What one thread returns: its particles' final state and last step's
/// potential and pull.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FmmAnswer {
    pub first: u64,
    /// x, y, vx, vy, potential, ax, ay.
    pub state: Vec<[f64; 7]>,
}

fn not_allowed(what: String) -> AmError {
    AmError::NotAllowed(what)
}

impl Fmm {
    fn lay(&self) -> Result<&Layout, AmError> {
        self.lay.as_ref().ok_or_else(|| not_allowed("fmm: run before layout".into()))
    }

    async fn read_exp<P: Proc>(&self, d: &DsmProc<'_, P>, s: Shared, b: u64) -> Result<Vec<C>, AmError> {
        let mut w = vec![0u64; 2 * (self.terms as usize + 1)];
        d.read_into(s, b * self.exp_words(), &mut w).await?;
        Ok(from_words(&w, self.terms as usize))
    }

    /// A leaf's particles (number, position, mass), sorted by number.
    async fn leaf_particles<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        lay: &Layout,
        leaf: u64,
    ) -> Result<Vec<(usize, Src)>, AmError> {
        let mut bin = [0u64; BIN_WORDS as usize];
        d.read_into(lay.bins, leaf * BIN_WORDS, &mut bin).await?;
        let mut ids = vec![0u64; bin[0] as usize];
        if !ids.is_empty() {
            d.read_into(lay.list, bin[1], &mut ids).await?;
        }
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        let mut rec = [0u64; 3];
        for i in ids {
            d.read_into(lay.parts, i * PART_WORDS, &mut rec).await?;
            let f = |k: usize| f64::from_bits(rec[k]);
            out.push((i as usize, Src { z: C::new(f(0), f(1)), q: f(2) }));
        }
        Ok(out)
    }

    async fn step<P: Proc>(&self, d: &DsmProc<'_, P>, lay: &Layout, phases: &mut Phases) -> Result<(), AmError> {
        let (levels, terms) = (self.levels, self.terms as usize);
        let (rank, ranks) = (d.rank(), d.ranks());
        let bin = Binomials::new(terms);
        let leaves = 4u64.pow(levels);
        let mine = owned(self.particles, rank, ranks);
        let my_leaves = owned(leaves, rank, ranks);
        let mut local = vec![0u64; ((mine.end - mine.start) * PART_WORDS) as usize];
        if !local.is_empty() {
            d.read_into(lay.parts, mine.start * PART_WORDS, &mut local).await?;
        }
        let my_parts: Vec<Particle> = local.chunks(PART_WORDS as usize).map(Particle::from_record).collect();

        // 1. Bin.
        let t0 = d.now();
        let mut slots = Vec::with_capacity(my_parts.len());
        for p in &my_parts {
            let leaf = leaf_of(p.z, self.side());
            slots.push((leaf, d.fetch_add(lay.bins, leaf * BIN_WORDS, 1).await?));
        }
        d.barrier().await?;
        if !my_leaves.is_empty() {
            let width = (my_leaves.end - my_leaves.start) as usize;
            let mut bins = vec![0u64; width * BIN_WORDS as usize];
            d.read_into(lay.bins, my_leaves.start * BIN_WORDS, &mut bins).await?;
            let total: u64 = bins.chunks(2).map(|b| b[0]).sum();
            let mut at = d.fetch_add(lay.cursor, 0, total).await?;
            for b in bins.chunks_mut(2) {
                b[1] = at;
                at += b[0];
            }
            d.write_from(lay.bins, my_leaves.start * BIN_WORDS, &bins).await?;
        }
        d.barrier().await?;
        for (k, &(leaf, slot)) in slots.iter().enumerate() {
            let start = d.read(lay.bins, leaf * BIN_WORDS + 1).await?;
            d.write(lay.list, start + slot, mine.start + k as u64).await?;
        }
        d.barrier().await?;
        let t1 = d.now();
        phases.add("bin", t1 - t0);

        // 2. Upward: leaves, then each level's shift.
        if rank == 0 {
            // Nobody claims list room again before the next step's bin.
            d.write(lay.cursor, 0, 0).await?;
        }
        let mut mine_srcs = BTreeMap::new();
        for leaf in my_leaves.clone() {
            let srcs = self.leaf_particles(d, lay, leaf).await?;
            let s: Vec<Src> = srcs.iter().map(|x| x.1).collect();
            let e = p2m(&s, box_center(levels, leaf), terms);
            d.charge_work(P2M_TERM * (s.len() as u64 * terms as u64));
            d.write_from(lay.mpole[levels as usize], leaf * self.exp_words(), &to_words(&e, self.exp_words())).await?;
            mine_srcs.insert(leaf, srcs);
        }
        d.barrier().await?;
        for l in (2..levels).rev() {
            for b in owned(4u64.pow(l), rank, ranks) {
                let mut kids = Vec::with_capacity(4);
                for ch in 4 * b..4 * b + 4 {
                    kids.push(self.read_exp(d, lay.mpole[l as usize + 1], ch).await?);
                }
                let e = upward(&bin, l, b, |ch| kids[(ch - 4 * b) as usize].clone(), terms);
                d.charge_work(SHIFT_TERM * (4 * triangle(terms)));
                d.write_from(lay.mpole[l as usize], b * self.exp_words(), &to_words(&e, self.exp_words())).await?;
            }
            d.barrier().await?;
        }
        let t2 = d.now();
        phases.add("upward", t2 - t1);

        // 3. Downward.
        for l in 2..=levels {
            for b in owned(4u64.pow(l), rank, ranks) {
                let parent = if l > 2 { Some(self.read_exp(d, lay.local[l as usize - 1], b / 4).await?) } else { None };
                let list = interaction_list(l, b);
                let mut mp = BTreeMap::new();
                for &o in &list {
                    mp.insert(o, self.read_exp(d, lay.mpole[l as usize], o).await?);
                }
                let e = downward(&bin, l, b, parent.as_deref(), |o| mp[&o].clone(), terms);
                let conversion = M2L_BOX + M2L_POWER * terms as u64 + M2L_TERM * (terms as u64 * terms as u64);
                let shift = if parent.is_some() { SHIFT_TERM * triangle(terms) } else { Work::NONE };
                d.charge_work(conversion * list.len() as u64 + shift);
                d.write_from(lay.local[l as usize], b * self.exp_words(), &to_words(&e, self.exp_words())).await?;
            }
            d.barrier().await?;
        }
        let t3 = d.now();
        phases.add("downward", t3 - t2);

        // 4. Evaluate at the leaves' particles.
        let mut near_cache: BTreeMap<u64, Vec<(usize, Src)>> = mine_srcs;
        let mut pairs = 0;
        for leaf in my_leaves.clone() {
            let e = self.read_exp(d, lay.local[levels as usize], leaf).await?;
            let mut near = Vec::with_capacity(9);
            for nb in neighbours(levels, leaf) {
                if let Entry::Vacant(e) = near_cache.entry(nb) {
                    e.insert(self.leaf_particles(d, lay, nb).await?);
                }
                near.push(near_cache[&nb].clone());
            }
            let here = near_cache[&leaf].clone();
            let near_count: u64 = near.iter().map(|v| v.len() as u64).sum();
            for (i, s) in here {
                let r = evaluate(&e, levels, leaf, i, s.z, &near);
                pairs += near_count;
                d.charge_work(DIRECT * near_count + EVAL_TERM * (terms as u64 + 1));
                d.write_from(lay.parts, i as u64 * PART_WORDS + PART_RESULT, &r.map(f64::to_bits)).await?;
            }
        }
        phases.count("direct pairs", pairs);
        // The bins are reset for the next step once everyone has read them.
        d.barrier().await?;
        if !my_leaves.is_empty() {
            let zeros = vec![0u64; ((my_leaves.end - my_leaves.start) * BIN_WORDS) as usize];
            d.write_from(lay.bins, my_leaves.start * BIN_WORDS, &zeros).await?;
        }
        let t4 = d.now();
        phases.add("evaluate", t4 - t3);

        // 5. Update own particles.
        let mut res = vec![0u64; local.len()];
        if !res.is_empty() {
            d.read_into(lay.parts, mine.start * PART_WORDS, &mut res).await?;
        }
        for (k, (mut p, r)) in my_parts.into_iter().zip(res.chunks(PART_WORDS as usize)).enumerate() {
            let acc = [5, 6, 7].map(|w| f64::from_bits(r[w]));
            p.advance(acc, self.dt);
            d.write_from(lay.parts, (mine.start + k as u64) * PART_WORDS, &p.record()[..PART_RESULT as usize]).await?;
        }
        d.charge_work(UPDATE * (mine.end - mine.start));
        d.barrier().await?;
        phases.add("update", d.now() - t4);
        Ok(())
    }
}

impl DsmProgram for Fmm {
    type Answer = FmmAnswer;

    fn name(&self) -> &'static str {
        "fmm"
    }

    fn input(&self) -> String {
        format!(
            "{} particles (uniform, 2-D), {} levels ({} leaf boxes), {} terms, {} steps; Table 2: 16K particles",
            self.particles,
            self.levels,
            4u64.pow(self.levels),
            self.terms,
            self.steps
        )
    }

    fn layout(&mut self, b: &mut DsmBuilder) {
        let init: Vec<u64> = particles(self).iter().flat_map(|p| p.record()).collect();
        let parts = b.alloc_with(init, Home::Blocked);
        let ew = self.exp_words();
        let mpole = (0..=self.levels).map(|l| b.alloc(4u64.pow(l) * ew, Home::Blocked)).collect();
        let local = (0..=self.levels).map(|l| b.alloc(4u64.pow(l) * ew, Home::Blocked)).collect();
        let bins = b.alloc(4u64.pow(self.levels) * BIN_WORDS, Home::Blocked);
        let list = b.alloc(self.particles, Home::Blocked);
        let cursor = b.alloc(1, Home::Node(0));
        self.lay = Some(Layout { parts, mpole, local, bins, list, cursor });
    }

    async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<FmmAnswer, AmError> {
        self.validate().map_err(not_allowed)?;
        let lay = self.lay()?.clone();
        for _ in 0..self.steps {
            self.step(d, &lay, phases).await?;
        }
        let mine = owned(self.particles, d.rank(), d.ranks());
        let mut w = vec![0u64; ((mine.end - mine.start) * PART_WORDS) as usize];
        if !w.is_empty() {
            d.read_into(lay.parts, mine.start * PART_WORDS, &mut w).await?;
        }
        let state = w
            .chunks(PART_WORDS as usize)
            .map(|r| {
                let f = |k: usize| f64::from_bits(r[k]);
                [f(0), f(1), f(3), f(4), f(5), f(6), f(7)]
            })
            .collect();
        Ok(FmmAnswer { first: mine.start, state })
    }

    fn check(&self, answers: &[&FmmAnswer]) -> Result<(), String> {
        let (ps, last) = reference(self)?;
        let ranks = answers.len() as u32;
        for (r, a) in answers.iter().enumerate() {
            let mine = owned(self.particles, r as u32, ranks);
            if a.first != mine.start || a.state.len() as u64 != mine.end - mine.start {
                return Err(format!(
                    "thread {r} returned particles {}..{}; it owns {}..{}",
                    a.first,
                    a.first + a.state.len() as u64,
                    mine.start,
                    mine.end
                ));
            }
            for (k, got) in a.state.iter().enumerate() {
                let i = mine.start as usize + k;
                let (p, l) = (&ps[i], &last[i]);
                let want = [p.z.re, p.z.im, p.v.re, p.v.im, l[0], l[1], l[2]];
                for c in 0..7 {
                    if !super::barnes::close(got[c], want[c], 1e-9) {
                        return Err(format!(
                            "particle {i} value {c} is {}; the sequential reference has {}",
                            got[c], want[c]
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{run_native, run_sim};
    use super::*;

    #[test]
    fn runs_on_the_simulator_and_natively() {
        let sim = run_sim(Fmm::tiny(1), 2, 2).unwrap();
        assert_eq!(sim.len(), 4);
        assert!(sim.iter().all(|r| r.phases.times["evaluate"] > 0));
        run_native(Fmm::tiny(2), 2, 2).unwrap();
        run_native(Fmm::tiny(3), 3, 1).unwrap();
    }

    fn direct_all(ps: &[Particle]) -> Vec<[f64; 3]> {
        (0..ps.len())
            .map(|i| {
                let mut acc = (C::ZERO, C::ZERO);
                for (j, p) in ps.iter().enumerate() {
                    if j != i {
                        direct(&mut acc, ps[i].z, Src { z: p.z, q: p.q });
                    }
                }
                result(acc)
            })
            .collect()
    }

    fn max_rel_error(cfg: &Fmm) -> (f64, f64) {
        let ps = particles(cfg);
        let got = fmm_eval(cfg, &ps);
        let want = direct_all(&ps);
        let scale = |k: usize| want.iter().fold(0.0f64, |m, w| m.max(w[k].abs()));
        let (sp, sa) = (scale(0), scale(1).max(scale(2)));
        let mut err: (f64, f64) = (0.0, 0.0);
        for (g, w) in got.iter().zip(&want) {
            err.0 = err.0.max((g[0] - w[0]).abs() / sp);
            err.1 = err.1.max((g[1] - w[1]).abs().max((g[2] - w[2]).abs()) / sa);
        }
        err
    }

    #[test]
    fn fmm_matches_the_direct_sum() {
        let cfg = Fmm { particles: 400, levels: 3, terms: 16, ..Fmm::tiny(11) };
        let (ep, ea) = max_rel_error(&cfg);
        assert!(ep < 1e-6 && ea < 1e-5, "potential error {ep}, pull error {ea}");
    }

    #[test]
    fn more_terms_means_less_error() {
        let few = max_rel_error(&Fmm { terms: 4, ..Fmm::tiny(12) });
        let many = max_rel_error(&Fmm { terms: 14, ..Fmm::tiny(12) });
        assert!(many.1 < few.1 / 100.0, "{few:?} vs {many:?}");
    }

    #[test]
    fn interaction_lists_cover_every_far_box_once() {
        // At the leaves, the interaction lists up the tree plus the
        // adjacent leaves account for every leaf exactly once.
        let levels = 4;
        for leaf in [0u64, 37, 255, 100] {
            let mut seen = vec![0u32; 256];
            for l in 2..=levels {
                let b = leaf >> (2 * (levels - l));
                for o in interaction_list(l, b) {
                    let span = 1u64 << (2 * (levels - l));
                    for x in o * span..(o + 1) * span {
                        seen[x as usize] += 1;
                    }
                }
            }
            for nb in neighbours(levels, leaf) {
                seen[nb as usize] += 1;
            }
            assert!(seen.iter().all(|&c| c == 1), "leaf {leaf}: {seen:?}");
        }
    }

    #[test]
    fn morton_round_trips() {
        for m in 0..1024 {
            let (x, y) = unmorton(m);
            assert_eq!(morton(x, y), m);
        }
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(Fmm { levels: 1, ..Fmm::tiny(1) }.validate().is_err());
        assert!(Fmm { terms: 0, ..Fmm::tiny(1) }.validate().is_err());
        assert!(Fmm { dt: f64::NAN, ..Fmm::tiny(1) }.validate().is_err());
    }
}
