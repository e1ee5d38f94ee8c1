//! Water with spatial decomposition (HPCA 1999 Section 5, Table 2:
//! `water-sp`, 4096 molecules), after SPLASH-2's water-spatial: the
//! periodic box is cut into a grid of cells at least a cutoff radius wide,
//! each thread owns a block of cells, and a molecule interacts with the
//! molecules of its own and the 26 adjacent cells whose oxygens are
//! within the cutoff.
//!
//! The model is a simplified one, stated as such: flexible three-site
//! water with SPC charges and oxygen-oxygen Lennard-Jones (kJ/mol, Å,
//! atomic mass units, time in 0.1 ps), harmonic O-H and H-H springs for the
//! intramolecular forces, symplectic Euler steps, no long-range
//! correction. SPLASH-2's water uses the MCY potential and a sixth-order
//! predictor-corrector; what this keeps is the work's shape: nine
//! site-site interactions for each molecule pair within the cutoff, a
//! cell's molecules read by the owners of the adjacent cells each step.
//!
//! Shared data: per cell, its molecule count and fixed-capacity arrays of
//! positions (nine coordinates and the molecule's number) and velocities,
//! cells numbered z-major and dealt out to threads in contiguous blocks,
//! homed `Blocked` to match; a lock per cell.
//!
//! Each step, phases separated by barriers:
//! 1. force: each thread reads the adjacent cells (most of them another
//!    thread's: the neighbour-cell reads the paper measures) and computes
//!    the force on every site of its own molecules; every pair is computed
//!    by the owner of each molecule, so no thread writes another's data;
//! 2. update: each thread moves its molecules and writes its cells back
//!    without the molecules that left them;
//! 3. migrate: each thread appends its leavers to their new cells under
//!    the cell's lock (SPLASH-2 moves molecules between boxes the same
//!    way);
//! 4. order: each owner sorts a cell that received molecules by molecule
//!    number, so every cell lists its molecules in the same order as the
//!    sequential reference and the sums run in the same order.
//!
//! The parallel run therefore computes exactly the sequential reference's
//! numbers; [`WaterSp::check`] allows a relative 1e-9 per coordinate.

// Coordinates and expansion terms are indexed in step across several
// arrays; index loops say so more plainly than zipped iterators.
#![allow(clippy::needless_range_loop)]
use super::{DsmProgram, Phases};
use finegrain_core::{AmError, Proc};
use finegrain_dsm::{DsmBuilder, DsmProc, Home, LockId, Shared};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// Words per molecule in the position array: nine coordinates (O, H, H)
/// and the molecule's number.
const POS_WORDS: u64 = 10;
/// Words per molecule in the velocity array (nine, padded alike).
const VEL_WORDS: u64 = 10;
const ID_WORD: usize = 9;

const MASS: [f64; 3] = [15.9994, 1.008, 1.008];
const CHARGE: [f64; 3] = [-0.82, 0.41, 0.41];
/// Coulomb's constant in kJ Å / (mol e^2).
const COULOMB: f64 = 1389.35;
const LJ_SIGMA: f64 = 3.166;
const LJ_EPSILON: f64 = 0.650;
const R_OH: f64 = 1.0;
const R_HH: f64 = 1.633;
/// Spring constants of the O-H and H-H bonds (kJ/mol/Å^2), of the order of
/// flexible SPC models'.
const K_OH: f64 = 4600.0;
const K_HH: f64 = 2300.0;
/// Å^3 per molecule at 1 g/cm^3.
const VOLUME_PER_MOLECULE: f64 = 29.9;
/// Boltzmann's constant times 300 K, in kJ/mol.
const KT: f64 = 2.494;

/// Cycles to test one pair's oxygen distance (minimum image included): an
/// estimate for a 400 MHz dual-issue processor, not from the paper.
pub const PAIR_TEST_CYCLES: u64 = 12;
/// Cycles per pair within the cutoff: nine site-site Coulomb terms (a
/// square root and a divide each) and the oxygens' Lennard-Jones term.
pub const PAIR_FORCE_CYCLES: u64 = 320;
/// Cycles per molecule for its springs.
pub const INTRA_CYCLES: u64 = 120;
/// Cycles per molecule to advance it and find its cell.
pub const UPDATE_CYCLES: u64 = 60;

/// The water run's input and the shared arrays it lays out.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaterSp {
    /// Molecules per side of the starting lattice (the molecules are its
    /// cube).
    pub lattice: u32,
    /// Cutoff radius in Å; cells are at least this wide.
    pub cutoff: f64,
    pub steps: u32,
    /// Step in 0.1 ps.
    pub dt: f64,
    /// A velocity added to every molecule (Å per 0.1 ps): a bulk flow that
    /// moves molecules across cells without bringing any two closer.
    pub drift: [f64; 3],
    pub seed: u64,
    #[serde(skip)]
    lay: Option<Layout>,
}

/// Two runs' inputs are equal when their fields are, laid out or not.
impl PartialEq for WaterSp {
    fn eq(&self, o: &WaterSp) -> bool {
        self.lattice == o.lattice
            && self.cutoff == o.cutoff
            && self.steps == o.steps
            && self.dt == o.dt
            && self.drift == o.drift
            && self.seed == o.seed
    }
}

#[derive(Clone, Debug)]
struct Layout {
    counts: Shared,
    pos: Shared,
    vel: Shared,
    locks: Vec<LockId>,
}

impl WaterSp {
    /// For tests: 216 molecules, 3x3x3 cells of 8, 2 steps.
    pub fn tiny(seed: u64) -> WaterSp {
        WaterSp { lattice: 6, cutoff: 6.2, steps: 2, dt: 0.005, drift: [0.0; 3], seed, lay: None }
    }

    /// The study's quick set: Table 2's 4096 molecules, 4x4x4 cells of 64
    /// (a 12.4 Å cutoff), 1 step.
    pub fn quick(seed: u64) -> WaterSp {
        WaterSp { lattice: 16, cutoff: 12.4, steps: 1, ..WaterSp::tiny(seed) }
    }

    /// Table 2's 4096 molecules, 3 steps (the paper gives no step count).
    pub fn paper(seed: u64) -> WaterSp {
        WaterSp { steps: 3, ..WaterSp::quick(seed) }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(2..=64).contains(&self.lattice) {
            return Err(format!("water-sp: invalid lattice = {}; allowed 2..=64", self.lattice));
        }
        if !(self.cutoff.is_finite() && self.cutoff > 0.0) {
            return Err(format!("water-sp: invalid cutoff = {}; allowed a finite number > 0", self.cutoff));
        }
        if self.grid() < 3 {
            return Err(format!(
                "water-sp: a {:.2} Å box holds {} cells of the {} Å cutoff per side; allowed 3 or more (a smaller \
                 cutoff or more molecules)",
                self.box_len(),
                self.grid(),
                self.cutoff
            ));
        }
        if self.steps == 0 {
            return Err("water-sp: steps = 0; allowed 1 or more".into());
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Err(format!("water-sp: invalid dt = {}; allowed a finite number > 0", self.dt));
        }
        if self.drift.iter().any(|v| !v.is_finite()) {
            return Err(format!("water-sp: invalid drift = {:?}; allowed finite numbers", self.drift));
        }
        Ok(())
    }

    fn molecules(&self) -> u64 {
        (self.lattice as u64).pow(3)
    }

    fn box_len(&self) -> f64 {
        (self.molecules() as f64 * VOLUME_PER_MOLECULE).cbrt()
    }

    /// Cells per side.
    fn grid(&self) -> u64 {
        (self.box_len() / self.cutoff).floor().min(64.0) as u64
    }

    fn cells(&self) -> u64 {
        self.grid().pow(3)
    }

    /// Molecules a cell has room for: four times the average and some,
    /// ample for a liquid over a few steps.
    fn capacity(&self) -> u64 {
        4 * self.molecules().div_ceil(self.cells()) + 16
    }

    fn cell_of(&self, o: [f64; 3]) -> u64 {
        let (g, l) = (self.grid(), self.box_len());
        let k = |x: f64| ((x / l * g as f64).floor().max(0.0) as u64).min(g - 1);
        (k(o[2]) * g + k(o[1])) * g + k(o[0])
    }

    /// The cell and its 26 neighbours (periodic), in a fixed order.
    fn neighbourhood(&self, c: u64) -> Vec<u64> {
        let g = self.grid() as i64;
        let (x, y, z) = ((c as i64) % g, (c as i64 / g) % g, c as i64 / (g * g));
        let mut out = Vec::with_capacity(27);
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let w = |v: i64| (v + g) % g;
                    out.push(((w(z + dz) * g + w(y + dy)) * g + w(x + dx)) as u64);
                }
            }
        }
        out
    }
}

/// A molecule's state: sites O, H, H.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Molecule {
    id: u64,
    pos: [[f64; 3]; 3],
    vel: [[f64; 3]; 3],
}

impl Molecule {
    fn pos_record(&self) -> [u64; POS_WORDS as usize] {
        let mut r = [0; POS_WORDS as usize];
        for s in 0..3 {
            for k in 0..3 {
                r[3 * s + k] = self.pos[s][k].to_bits();
            }
        }
        r[ID_WORD] = self.id;
        r
    }

    fn vel_record(&self) -> [u64; VEL_WORDS as usize] {
        let mut r = [0; VEL_WORDS as usize];
        for s in 0..3 {
            for k in 0..3 {
                r[3 * s + k] = self.vel[s][k].to_bits();
            }
        }
        r
    }

    fn from_records(p: &[u64], v: &[u64]) -> Molecule {
        let mut m = Molecule { id: p[ID_WORD], pos: [[0.0; 3]; 3], vel: [[0.0; 3]; 3] };
        for s in 0..3 {
            for k in 0..3 {
                m.pos[s][k] = f64::from_bits(p[3 * s + k]);
                m.vel[s][k] = f64::from_bits(v[3 * s + k]);
            }
        }
        m
    }
}

/// Sites of a neighbour as the force loop needs them.
type Sites = [[f64; 3]; 3];

fn sites_of(p: &[u64]) -> Sites {
    let mut s = [[0.0; 3]; 3];
    for a in 0..3 {
        for k in 0..3 {
            s[a][k] = f64::from_bits(p[3 * a + k]);
        }
    }
    s
}

/// The starting molecules: a cubic lattice, each molecule turned at random,
/// velocities from the Maxwell distribution at 300 K (one per molecule,
/// shared by its sites) plus the drift.
fn molecules(cfg: &WaterSp) -> Vec<Molecule> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let (m, l) = (cfg.lattice as u64, cfg.box_len());
    let a = l / m as f64;
    // The molecule's shape: O at the origin, the H-O-H angle 109.47 degrees.
    let half = (109.47f64 / 2.0).to_radians();
    let shape =
        [[0.0, 0.0, 0.0], [R_OH * half.sin(), R_OH * half.cos(), 0.0], [-R_OH * half.sin(), R_OH * half.cos(), 0.0]];
    let total_mass: f64 = MASS.iter().sum();
    let speed = Normal::new(0.0, (KT / total_mass).sqrt()).expect("a positive spread");
    (0..m.pow(3))
        .map(|id| {
            let (x, y, z) = (id % m, (id / m) % m, id / (m * m));
            let o = [(x as f64 + 0.25) * a, (y as f64 + 0.25) * a, (z as f64 + 0.25) * a];
            let rot = random_rotation(&mut rng);
            let v: [f64; 3] = [0, 1, 2].map(|k| speed.sample(&mut rng) + cfg.drift[k]);
            let mut pos = [[0.0; 3]; 3];
            for s in 0..3 {
                for r in 0..3 {
                    pos[s][r] = o[r] + (0..3).map(|c| rot[r][c] * shape[s][c]).sum::<f64>();
                }
            }
            Molecule { id, pos, vel: [v; 3] }
        })
        .collect()
}

/// A uniformly random rotation matrix (from a random unit quaternion).
fn random_rotation(rng: &mut ChaCha8Rng) -> [[f64; 3]; 3] {
    let n = Normal::new(0.0, 1.0).expect("a positive spread");
    let mut q: [f64; 4] = [0.0; 4];
    let mut norm = 0.0;
    while norm < 1e-6 {
        q = [0; 4].map(|_| n.sample(rng));
        norm = q.iter().map(|x| x * x).sum::<f64>().sqrt();
    }
    let [w, x, y, z] = q.map(|c| c / norm);
    [
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)],
        [2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)],
        [2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)],
    ]
}

/// Adds a harmonic spring's pull between sites `a` and `b` of `s` to `f`.
fn spring(s: &Sites, a: usize, b: usize, k: f64, r0: f64, f: &mut Sites, energy: &mut f64) {
    let d = [0, 1, 2].map(|c| s[b][c] - s[a][c]);
    let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let g = k * (r - r0) / r;
    for c in 0..3 {
        f[a][c] += g * d[c];
        f[b][c] -= g * d[c];
    }
    *energy += 0.5 * k * (r - r0) * (r - r0);
}

fn intramolecular(s: &Sites, f: &mut Sites, energy: &mut f64) {
    spring(s, 0, 1, K_OH, R_OH, f, energy);
    spring(s, 0, 2, K_OH, R_OH, f, energy);
    spring(s, 1, 2, K_HH, R_HH, f, energy);
}

/// The periodic image shift that brings `o2` nearest `o1`, and the squared
/// distance then.
fn nearest_image(o1: [f64; 3], o2: [f64; 3], l: f64) -> ([f64; 3], f64) {
    let mut shift = [0.0; 3];
    let mut r2 = 0.0;
    for c in 0..3 {
        let d = o2[c] - o1[c];
        shift[c] = -l * (d / l).round();
        let dd = d + shift[c];
        r2 += dd * dd;
    }
    (shift, r2)
}

/// Adds molecule `j`'s pull on molecule `i`'s sites (the image of `j`
/// shifted by `shift`) to `f`, and half the pair's energy to `energy`.
fn pair(si: &Sites, sj: &Sites, shift: [f64; 3], f: &mut Sites, energy: &mut f64) {
    for a in 0..3 {
        for b in 0..3 {
            let d = [0, 1, 2].map(|c| si[a][c] - (sj[b][c] + shift[c]));
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let r = r2.sqrt();
            let e = COULOMB * CHARGE[a] * CHARGE[b] / r;
            let mut g = e / r2;
            *energy += 0.5 * e;
            if a == 0 && b == 0 {
                let sr6 = (LJ_SIGMA * LJ_SIGMA / r2).powi(3);
                g += 24.0 * LJ_EPSILON * (2.0 * sr6 * sr6 - sr6) / r2;
                *energy += 0.5 * 4.0 * LJ_EPSILON * (sr6 * sr6 - sr6);
            }
            for c in 0..3 {
                f[a][c] += g * d[c];
            }
        }
    }
}

/// The force on every site of molecule `me` (sites `s`) from its springs
/// and from the molecules of `near` (the neighbourhood's cells in order,
/// each `(number, sites)` sorted by number); also its energy. Returns
/// the pairs tested and the pairs within the cutoff.
fn molecule_force(cfg: &WaterSp, me: u64, s: &Sites, near: &[&[(u64, Sites)]], energy: &mut f64) -> (Sites, u64, u64) {
    let (l, rc2) = (cfg.box_len(), cfg.cutoff * cfg.cutoff);
    let mut f = [[0.0; 3]; 3];
    intramolecular(s, &mut f, energy);
    let (mut tested, mut within) = (0, 0);
    for cell in near {
        for (j, sj) in cell.iter() {
            if *j == me {
                continue;
            }
            tested += 1;
            let (shift, r2) = nearest_image(s[0], sj[0], l);
            if r2 < rc2 {
                within += 1;
                pair(s, sj, shift, &mut f, energy);
            }
        }
    }
    (f, tested, within)
}

/// Advances a molecule by one step and keeps its oxygen inside the box
/// (moving the whole molecule by a box length).
fn advance(cfg: &WaterSp, m: &mut Molecule, f: &Sites) {
    let l = cfg.box_len();
    for s in 0..3 {
        for c in 0..3 {
            m.vel[s][c] += f[s][c] / MASS[s] * cfg.dt;
            m.pos[s][c] += m.vel[s][c] * cfg.dt;
        }
    }
    for c in 0..3 {
        let shift = -l * (m.pos[0][c] / l).floor();
        if shift != 0.0 {
            for s in 0..3 {
                m.pos[s][c] += shift;
            }
        }
    }
}

/// The sequential reference run: the molecules (by number) after every
/// step, and each one's energy in the last step's forces.
fn reference(cfg: &WaterSp) -> Result<(Vec<Molecule>, Vec<f64>), String> {
    cfg.validate()?;
    let mut ms = molecules(cfg);
    let mut energies = vec![0.0; ms.len()];
    for _ in 0..cfg.steps {
        let mut cells: Vec<Vec<(u64, Sites)>> = vec![Vec::new(); cfg.cells() as usize];
        for m in &ms {
            cells[cfg.cell_of(m.pos[0]) as usize].push((m.id, m.pos));
        }
        let forces: Vec<Sites> = ms
            .iter()
            .map(|m| {
                let near: Vec<&[(u64, Sites)]> = cfg
                    .neighbourhood(cfg.cell_of(m.pos[0]))
                    .into_iter()
                    .map(|c| cells[c as usize].as_slice())
                    .collect();
                energies[m.id as usize] = 0.0;
                molecule_force(cfg, m.id, &m.pos, &near, &mut energies[m.id as usize]).0
            })
            .collect();
        for (m, f) in ms.iter_mut().zip(&forces) {
            advance(cfg, m, f);
        }
    }
    Ok((ms, energies))
}

/// What one thread returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaterAnswer {
    /// The molecules now in this thread's cells: number, then O, H, H
    /// positions and velocities.
    pub molecules: Vec<(u64, Vec<f64>)>,
    /// The energy (springs, and half of each pair's) of every molecule this
    /// thread computed forces for in the last step, by number: they sat in
    /// its cells before the last move.
    pub energies: Vec<(u64, f64)>,
}

fn not_allowed(what: String) -> AmError {
    AmError::NotAllowed(what)
}

fn owned_cells(cells: u64, rank: u32, ranks: u32) -> std::ops::Range<u64> {
    let (r, ranks) = (rank as u64, ranks as u64);
    r * cells / ranks..(r + 1) * cells / ranks
}

impl WaterSp {
    fn lay(&self) -> Result<&Layout, AmError> {
        self.lay.as_ref().ok_or_else(|| not_allowed("water-sp: run before layout".into()))
    }

    /// Cell `c`'s molecules' position records.
    async fn read_cell<P: Proc>(&self, d: &DsmProc<'_, P>, lay: &Layout, c: u64) -> Result<Vec<u64>, AmError> {
        let count = d.read(lay.counts, c).await?;
        let mut p = vec![0u64; (count * POS_WORDS) as usize];
        if count > 0 {
            d.read_into(lay.pos, c * self.capacity() * POS_WORDS, &mut p).await?;
        }
        Ok(p)
    }

    /// Cell `c`'s molecules, positions and velocities.
    async fn read_own_cell<P: Proc>(&self, d: &DsmProc<'_, P>, lay: &Layout, c: u64) -> Result<Vec<Molecule>, AmError> {
        let p = self.read_cell(d, lay, c).await?;
        let n = p.len() as u64 / POS_WORDS;
        let mut v = vec![0u64; (n * VEL_WORDS) as usize];
        if n > 0 {
            d.read_into(lay.vel, c * self.capacity() * VEL_WORDS, &mut v).await?;
        }
        Ok(p.chunks(POS_WORDS as usize)
            .zip(v.chunks(VEL_WORDS as usize))
            .map(|(p, v)| Molecule::from_records(p, v))
            .collect())
    }

    async fn write_own_cell<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        lay: &Layout,
        c: u64,
        ms: &[Molecule],
    ) -> Result<(), AmError> {
        let p: Vec<u64> = ms.iter().flat_map(|m| m.pos_record()).collect();
        let v: Vec<u64> = ms.iter().flat_map(|m| m.vel_record()).collect();
        if !ms.is_empty() {
            d.write_from(lay.pos, c * self.capacity() * POS_WORDS, &p).await?;
            d.write_from(lay.vel, c * self.capacity() * VEL_WORDS, &v).await?;
        }
        d.write(lay.counts, c, ms.len() as u64).await
    }

    async fn step<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        lay: &Layout,
        phases: &mut Phases,
        energies: &mut BTreeMap<u64, f64>,
    ) -> Result<(), AmError> {
        let mine = owned_cells(self.cells(), d.rank(), d.ranks());

        // 1. Forces.
        let t0 = d.now();
        let mut cache: BTreeMap<u64, Vec<(u64, Sites)>> = BTreeMap::new();
        let mut own: Vec<(u64, Vec<Molecule>)> = Vec::new();
        for c in mine.clone() {
            let ms = self.read_own_cell(d, lay, c).await?;
            cache.insert(c, ms.iter().map(|m| (m.id, m.pos)).collect());
            own.push((c, ms));
        }
        let mut forces: Vec<Vec<Sites>> = Vec::with_capacity(own.len());
        energies.clear();
        for (c, ms) in &own {
            let hood = self.neighbourhood(*c);
            for &nb in &hood {
                if let Entry::Vacant(e) = cache.entry(nb) {
                    let p = self.read_cell(d, lay, nb).await?;
                    e.insert(p.chunks(POS_WORDS as usize).map(|r| (r[ID_WORD], sites_of(r))).collect());
                }
            }
            let near: Vec<&[(u64, Sites)]> = hood.iter().map(|nb| cache[nb].as_slice()).collect();
            let mut fs = Vec::with_capacity(ms.len());
            for m in ms {
                let mut e = 0.0;
                let (f, tested, within) = molecule_force(self, m.id, &m.pos, &near, &mut e);
                d.compute(INTRA_CYCLES + tested * PAIR_TEST_CYCLES + within * PAIR_FORCE_CYCLES);
                phases.count("pairs within cutoff", within);
                energies.insert(m.id, e);
                fs.push(f);
            }
            forces.push(fs);
        }
        d.barrier().await?;
        let t1 = d.now();
        phases.add("force", t1 - t0);

        // 2. Update: move, keep the stayers, collect the leavers.
        let mut leavers = Vec::new();
        let mut kept: Vec<usize> = Vec::with_capacity(own.len());
        for ((c, ms), fs) in own.iter_mut().zip(&forces) {
            let mut stay = Vec::with_capacity(ms.len());
            for (m, f) in ms.iter_mut().zip(fs) {
                advance(self, m, f);
                let to = self.cell_of(m.pos[0]);
                if to == *c {
                    stay.push(*m);
                } else {
                    leavers.push((to, *m));
                }
            }
            d.compute(ms.len() as u64 * UPDATE_CYCLES);
            self.write_own_cell(d, lay, *c, &stay).await?;
            kept.push(stay.len());
        }
        d.barrier().await?;
        let t2 = d.now();
        phases.add("update", t2 - t1);

        // 3. Migrate.
        phases.count("migrations", leavers.len() as u64);
        for (to, m) in &leavers {
            d.lock(lay.locks[*to as usize]).await?;
            let count = d.read(lay.counts, *to).await?;
            if count >= self.capacity() {
                d.unlock(lay.locks[*to as usize]).await?;
                return Err(not_allowed(format!(
                    "water-sp: cell {to} is full ({} molecules); the molecules bunched up more than the cells allow",
                    self.capacity()
                )));
            }
            let at = *to * self.capacity() + count;
            d.write_from(lay.pos, at * POS_WORDS, &m.pos_record()).await?;
            d.write_from(lay.vel, at * VEL_WORDS, &m.vel_record()).await?;
            d.write(lay.counts, *to, count + 1).await?;
            d.unlock(lay.locks[*to as usize]).await?;
        }
        d.barrier().await?;
        let t3 = d.now();
        phases.add("migrate", t3 - t2);

        // 4. Order the cells that received molecules.
        for (k, c) in mine.clone().enumerate() {
            if d.read(lay.counts, c).await? != kept[k] as u64 {
                let mut ms = self.read_own_cell(d, lay, c).await?;
                ms.sort_by_key(|m| m.id);
                d.compute(ms.len() as u64 * 8);
                self.write_own_cell(d, lay, c, &ms).await?;
            }
        }
        d.barrier().await?;
        phases.add("order", d.now() - t3);
        Ok(())
    }
}

impl DsmProgram for WaterSp {
    type Answer = WaterAnswer;

    fn name(&self) -> &'static str {
        "water-sp"
    }

    fn input(&self) -> String {
        format!(
            "{} molecules (flexible 3-site water, simplified), {}^3 cells, {} Å cutoff, {} steps; Table 2: 4096 \
             molecules",
            self.molecules(),
            self.grid(),
            self.cutoff,
            self.steps
        )
    }

    fn layout(&mut self, b: &mut DsmBuilder) {
        let (cells, cap) = (self.cells(), self.capacity());
        let mut counts = vec![0u64; cells as usize];
        let mut pos = vec![0u64; (cells * cap * POS_WORDS) as usize];
        let mut vel = vec![0u64; (cells * cap * VEL_WORDS) as usize];
        // An invalid input gets empty arrays here; run refuses it.
        if self.validate().is_ok() {
            for m in molecules(self) {
                let c = self.cell_of(m.pos[0]);
                let at = c * cap + counts[c as usize];
                if counts[c as usize] < cap {
                    counts[c as usize] += 1;
                    let (p, v) = ((at * POS_WORDS) as usize, (at * VEL_WORDS) as usize);
                    pos[p..p + POS_WORDS as usize].copy_from_slice(&m.pos_record());
                    vel[v..v + VEL_WORDS as usize].copy_from_slice(&m.vel_record());
                }
            }
        }
        let counts = b.alloc_with(counts, Home::Blocked);
        let pos = b.alloc_with(pos, Home::Blocked);
        let vel = b.alloc_with(vel, Home::Blocked);
        let locks = b.locks(cells as u32);
        self.lay = Some(Layout { counts, pos, vel, locks });
    }

    async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<WaterAnswer, AmError> {
        self.validate().map_err(not_allowed)?;
        let lay = self.lay()?.clone();
        let mut energies = BTreeMap::new();
        for _ in 0..self.steps {
            self.step(d, &lay, phases, &mut energies).await?;
        }
        let mut molecules = Vec::new();
        for c in owned_cells(self.cells(), d.rank(), d.ranks()) {
            for m in self.read_own_cell(d, &lay, c).await? {
                molecules.push((m.id, m.pos.iter().chain(&m.vel).flatten().copied().collect()));
            }
        }
        Ok(WaterAnswer { molecules, energies: energies.into_iter().collect() })
    }

    fn check(&self, answers: &[&WaterAnswer]) -> Result<(), String> {
        let (want, energies) = reference(self)?;
        let n = want.len();
        let mut state_seen = vec![false; n];
        let mut energy_seen = vec![false; n];
        for (r, a) in answers.iter().enumerate() {
            for &(id, energy) in &a.energies {
                let i = id as usize;
                if i >= n {
                    return Err(format!("thread {r} returned an energy for molecule {i}; there are {n}"));
                }
                if std::mem::replace(&mut energy_seen[i], true) {
                    return Err(format!("molecule {i}'s energy was computed twice"));
                }
                if !super::barnes::close(energy, energies[i], 1e-9) {
                    return Err(format!(
                        "molecule {i}'s energy is {energy}; the sequential reference has {}",
                        energies[i]
                    ));
                }
            }
            for (id, state) in &a.molecules {
                let i = *id as usize;
                if i >= n {
                    return Err(format!("thread {r} returned molecule {i}; there are {n}"));
                }
                if std::mem::replace(&mut state_seen[i], true) {
                    return Err(format!("molecule {i} is in two cells"));
                }
                let w = &want[i];
                let ws: Vec<f64> = w.pos.iter().chain(&w.vel).flatten().copied().collect();
                if state.len() != ws.len() {
                    return Err(format!("thread {r} returned {} values for molecule {i}; want 18", state.len()));
                }
                for (k, (g, x)) in state.iter().zip(&ws).enumerate() {
                    if !super::barnes::close(*g, *x, 1e-9) {
                        return Err(format!("molecule {i} value {k} is {g}; the sequential reference has {x}"));
                    }
                }
            }
        }
        if let Some(i) = state_seen.iter().position(|s| !s) {
            return Err(format!("molecule {i} is in no cell"));
        }
        if let Some(i) = energy_seen.iter().position(|s| !s) {
            return Err(format!("molecule {i}'s energy was not computed"));
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
        let sim = run_sim(WaterSp::tiny(1), 2, 2).unwrap();
        assert_eq!(sim.len(), 4);
        run_native(WaterSp::tiny(2), 2, 2).unwrap();
        run_native(WaterSp::tiny(3), 3, 1).unwrap();
    }

    #[test]
    fn molecules_migrate_between_threads_cells() {
        // A bulk flow of 1.5 Å a step carries many molecules into the next
        // cell, most of them another thread's.
        let cfg = WaterSp { drift: [300.0, 0.0, 100.0], steps: 3, ..WaterSp::tiny(4) };
        let runs = run_native(cfg.clone(), 2, 2).unwrap();
        let moved: u64 = runs.iter().map(|r| r.phases.counts.get("migrations").copied().unwrap_or(0)).sum();
        assert!(moved > 50, "only {moved} migrations");
        run_sim(cfg, 2, 1).unwrap();
    }

    #[test]
    fn the_reference_conserves_momentum_and_cells_cover_the_cutoff() {
        let cfg = WaterSp::tiny(5);
        let p0 = momentum(&molecules(&cfg));
        let (ms, energies) = reference(&cfg).unwrap();
        let p1 = momentum(&ms);
        // Every pair force is computed from both sides with the same image,
        // so the total force is zero up to rounding.
        for c in 0..3 {
            assert!((p1[c] - p0[c]).abs() < 1e-6 * (1.0 + p0[c].abs()), "{p0:?} -> {p1:?}");
        }
        assert!(energies.iter().all(|e| e.is_finite()));
        assert!(cfg.box_len() / cfg.grid() as f64 >= cfg.cutoff);
    }

    #[test]
    fn cutoff_matches_a_brute_force_pair_sum() {
        // The cells find exactly the pairs an all-pairs search within the
        // cutoff finds.
        let cfg = WaterSp::tiny(6);
        let ms = molecules(&cfg);
        let all: Vec<(u64, Sites)> = ms.iter().map(|m| (m.id, m.pos)).collect();
        let mut cells: Vec<Vec<(u64, Sites)>> = vec![Vec::new(); cfg.cells() as usize];
        for m in &ms {
            cells[cfg.cell_of(m.pos[0]) as usize].push((m.id, m.pos));
        }
        for m in ms.iter().step_by(7) {
            let near: Vec<&[(u64, Sites)]> =
                cfg.neighbourhood(cfg.cell_of(m.pos[0])).into_iter().map(|c| cells[c as usize].as_slice()).collect();
            let (mut e1, mut e2) = (0.0, 0.0);
            let (f1, _, w1) = molecule_force(&cfg, m.id, &m.pos, &near, &mut e1);
            let (f2, _, w2) = molecule_force(&cfg, m.id, &m.pos, &[all.as_slice()], &mut e2);
            assert_eq!(w1, w2);
            for s in 0..3 {
                for c in 0..3 {
                    assert!((f1[s][c] - f2[s][c]).abs() <= 1e-9 * (1.0 + f2[s][c].abs()));
                }
            }
        }
    }

    fn momentum(ms: &[Molecule]) -> [f64; 3] {
        let mut p = [0.0; 3];
        for m in ms {
            for s in 0..3 {
                for c in 0..3 {
                    p[c] += MASS[s] * m.vel[s][c];
                }
            }
        }
        p
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(WaterSp { cutoff: 10.0, ..WaterSp::tiny(1) }.validate().is_err());
        assert!(WaterSp { steps: 0, ..WaterSp::tiny(1) }.validate().is_err());
        assert!(WaterSp { dt: -1.0, ..WaterSp::tiny(1) }.validate().is_err());
    }
}
