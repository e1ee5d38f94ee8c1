//! Water with spatial decomposition (HPCA 1999 Section 5, Table 2:
//! `water-sp`, 4096 molecules): SPLASH-2's water-spatial, rewritten.
//!
//! What it models, as SPLASH-2 does: flexible three-atom water molecules
//! (O, H, H) in a periodic cube at 298 K and 0.998 g/cm^3, with
//! - the MCY (Matsuoka-Clementi-Yoshimine) intermolecular potential: a
//!   negative charge on an extra site M on the H-O-H bisector and positive
//!   charges on the hydrogens (nine Coulomb terms per molecule pair, each
//!   shifted so its force vanishes at the cutoff and taken only for sites
//!   within the cutoff), and exponential O-O, H-H and O-H repulsion and
//!   attraction, taken only when all nine charged-site pairs are within the
//!   cutoff;
//! - intramolecular forces from a quartic force field in the two O-H bond
//!   lengths and the H-O-H angle;
//! - Gear's sixth-order predictor-corrector (the position and its first
//!   six scaled derivatives per atom coordinate);
//! - a grid of boxes at least a cutoff radius wide, a molecule belonging to
//!   the box its oxygen is in; a molecule's forces come from the molecules
//!   of its own box and the 26 neighbouring boxes (periodic), each site
//!   separation taken at its nearest periodic image; each pair is computed
//!   by the owner of each molecule (SPLASH-2 water-spatial does not use
//!   Newton's third law across boxes), so no thread writes another's
//!   molecules; a molecule whose oxygen leaves its box moves to the new box
//!   under that box's lock.
//!
//! Units as SPLASH-2's: Å, atomic mass units, femtoseconds; the constants
//! (MCY parameters, force constants, masses, geometry) are the published
//! model's. Input per size (molecules on SPLASH-2's cubic lattice, all
//! oriented alike; box side L from the density):
//! - `tiny` (unit tests): 216 molecules, L = 18.64 Å, SPLASH-2's input-file
//!   cutoff 6.212752 Å, 3 boxes per side (8 molecules each), 2 steps;
//! - `quick`: 4096 molecules, L = 49.70 Å, the input file's cutoff
//!   6.212752 Å, 8 boxes per side (8 molecules each), 1 step;
//! - `paper`: as quick with 3 steps (SPLASH-2's input file's step count).
//!
//! The rule for the paper's input: Table 2 gives the molecule count only,
//! so everything else is SPLASH-2's distributed input file (cutoff, step,
//! step count). (SPLASH-2's automatic cutoff, asked for with 0, would be
//! 11 Å here: 4 boxes per side of 64 molecules.)
//!
//! All use SPLASH-2's 0.15 fs step (1.5e-16 s).
//!
//! Where this differs from SPLASH-2, and why:
//! - The issue asked for rigid molecules; SPLASH-2 water-spatial's
//!   molecules are flexible (its INTRAF computes bond and angle forces
//!   every step), and so are this file's.
//! - Initial velocities are drawn from a seeded generator (uniform in
//!   [-4, 4) per atom and direction, then scaled as SPLASH-2 scales its
//!   `random.in` numbers); SPLASH-2 reads them from a file.
//! - The initial accelerations (SPLASH-2's first INTRAF and INTERF before
//!   the time loop) are computed at layout, outside the timed run.
//! - Boxes are dealt out to threads in contiguous blocks of the z-major
//!   numbering rather than SPLASH-2's 3-D blocks of boxes; a box's
//!   molecules are fixed-capacity arrays rather than a linked list, kept
//!   sorted by molecule number (see below).
//! - SPLASH-2's potential-energy and kinetic-energy sums (POTENG, KINETI:
//!   reports, not dynamics) are not computed; each molecule's virial (its
//!   intramolecular term and half its pairs' terms) is, and is checked.
//! - Fewer than 3 boxes per side is refused (SPLASH-2 special-cases 2).
//! - `drift`, a velocity added to every molecule, is a test knob (zero in
//!   every size): a bulk flow that carries molecules across boxes.
//!
//! Shared data: per box, its molecule count and fixed-capacity arrays of
//! position records (O, H, H, the M site, and the molecule's number: what
//! neighbours read) and state records (the six scaled derivatives per
//! coordinate: the owner's), boxes numbered z-major and dealt out to
//! threads in contiguous blocks, homed `Blocked` to match; a lock per box.
//!
//! Each step, phases separated by barriers:
//! 1. predict: each thread reads its boxes, sorts any box that received
//!    molecules by molecule number, predicts its molecules, computes their
//!    intramolecular forces and writes the predicted positions back;
//! 2. force: each thread reads the neighbouring boxes (many of them another
//!    thread's: the neighbour-box reads the paper measures) and adds the
//!    intermolecular forces on its own molecules;
//! 3. correct: each thread corrects its molecules, puts any that left the
//!    periodic cube back in it, and writes its boxes back without the
//!    molecules that left them;
//! 4. migrate: each thread appends its leavers to their new boxes under the
//!    box's lock.
//!
//! Every box lists its molecules in the same order as the sequential
//! reference and every sum runs in the same order, so the parallel run
//! computes exactly the reference's numbers; [`WaterSp::check`] allows a
//! relative 1e-9 per value.
//!
//! Computation is charged as counted [`Work`], one constant per kernel
//! below, each counted from this file's kernel and matched against
//! SPLASH-2's loop (INTERF and CSHIFT per pair, INTRAF, PREDIC and CORREC
//! per molecule, BNDRY per molecule).

// Coordinates and expansion terms are indexed in step across several
// arrays; index loops say so more plainly than zipped iterators.
#![allow(clippy::needless_range_loop)]
use super::{DsmProgram, Phases};
use finegrain_core::{AmError, Proc, Work};
use finegrain_dsm::{DsmBuilder, DsmProc, Home, LockId, Shared};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// Site numbers: oxygen, the two hydrogens, and MCY's charge site.
const O: usize = 0;
const H1: usize = 1;
const H2: usize = 2;
const M: usize = 3;

/// The predictor-corrector's order (SPLASH-2's input: 6) and the values
/// kept per coordinate (the position and six scaled derivatives).
const ORDER: usize = 6;
const TERMS: usize = ORDER + 1;

/// Words per molecule in the position array: O, H, H, M coordinates and
/// the molecule's number.
const POS_WORDS: u64 = 13;
const ID_WORD: usize = 12;
/// Words per molecule in the state array: derivatives 1 to 6 of the nine
/// atom coordinates.
const STATE_WORDS: u64 = (ORDER * 9) as u64;

const O_MASS: f64 = 15.99945;
const H_MASS: f64 = 1.007825;
const MASS: [f64; 3] = [O_MASS, H_MASS, H_MASS];
/// Equilibrium O-H length (Å) and H-O-H angle (radians).
const R_OH: f64 = 0.9572;
const ANGLE: f64 = 1.824218;
const INV_R_OH: f64 = 1.0 / R_OH;
const INV_R_OH2: f64 = INV_R_OH * INV_R_OH;

/// MCY: the charge product unit (amu Å^3/fs^2), the exponential terms'
/// amplitudes and decay rates (O-O, H-H, and the O-H pair of terms), and
/// where M sits: a fraction `MCY_M` of the way from O towards the
/// hydrogens' midpoint.
const QQ: f64 = 0.07152158;
const A_OO: f64 = 455.313100;
const B_OO: f64 = 5.15271070;
const A_HH: f64 = 0.27879839;
const B_HH: f64 = 2.76084370;
const A_OH: f64 = 0.60895706;
const B_OH: f64 = 2.96189550;
const A_OH2: f64 = 0.11447336;
const B_OH2: f64 = 2.23326410;
const MCY_M: f64 = 0.45682590;
/// M = W_O * O + W_H * (H1 + H2).
const W_O: f64 = 1.0 - MCY_M;
const W_H: f64 = 0.5 * MCY_M;
/// Charges in units of the hydrogen's, by site.
const CHARGE: [f64; 4] = [0.0, 1.0, 1.0, -2.0];

/// The intramolecular force field's constants (amu/fs^2 units), named by
/// the coordinates they couple: R and S the two bonds' stretches, T the
/// bend (angle change times R_OH).
const K_RR: f64 = 0.512596;
const K_TT: f64 = 0.048098;
const K_RS: f64 = -0.005823;
const K_RT: f64 = 0.016452;
const K_RRR: f64 = -0.57191;
const K_TTT: f64 = -0.007636;
const K_RRS: f64 = -0.001867;
const K_RRT: f64 = -0.002047;
const K_RST: f64 = -0.03083;
const K_RTT: f64 = -0.0094245;
const K_RRRR: f64 = 0.8431;
const K_TTTT: f64 = -0.00193;
const K_RRRS: f64 = -0.0030;
const K_RRSS: f64 = 0.0036;
const K_RRRT: f64 = -0.012;
const K_RRST: f64 = 0.0060;
const K_RRTT: f64 = -0.0048;
const K_RSTT: f64 = 0.0211;
const K_RTTT: f64 = 0.006263;

const TEMPERATURE: f64 = 298.0;
/// g/cm^3.
const DENSITY: f64 = 0.998;
const AMU_GRAMS: f64 = 1.6605655e-24;
const BOLTZMANN_CGS: f64 = 1.380662e-16;
/// kT in amu Å^2/fs^2 (1 erg = 1e16 Å^2 g/s^2 = 1e-14 Å^2 g/fs^2).
const KT: f64 = BOLTZMANN_CGS * TEMPERATURE / AMU_GRAMS * 1e-14;
/// SPLASH-2's largest automatic cutoff (Å).
const MAX_AUTO_CUTOFF: f64 = 11.0;

/// Binomial coefficients C(l, k): the predictor's Taylor step on scaled
/// derivatives.
const BINOMIAL: [[f64; TERMS]; TERMS] = {
    let mut c = [[0.0; TERMS]; TERMS];
    let mut l = 0;
    while l < TERMS {
        c[l][0] = 1.0;
        let mut k = 1;
        while k <= l {
            c[l][k] = c[l - 1][k - 1] + if k < l { c[l - 1][k] } else { 0.0 };
            k += 1;
        }
        l += 1;
    }
    c
};

/// Gear's corrector coefficients for a second-order equation with seven
/// values (the standard sixth-order set).
const GEAR: [f64; TERMS] = [863.0 / 6048.0, 665.0 / 1008.0, 1.0, 25.0 / 36.0, 35.0 / 144.0, 1.0 / 24.0, 1.0 / 360.0];

// Counted work. Conventions: an add, subtract, multiply, compare, absolute
// value or float-integer conversion is a flop; a divide or square root is
// a long flop; a loop's counter and branch are two integer ops per trip
// (SPLASH-2's loops have run-time bounds, so they are counted as loops,
// not unrolled); loads and stores are of the thread's private copies (the
// DSM charges the shared reads that filled them).

/// One `exp` from the math library: range reduction (4 flops), a degree-11
/// polynomial by Horner's rule (22), the range test (1); building 2^k from
/// the reduced exponent (6 integer ops).
pub const EXP: Work = Work::new(27, 0, 6, 0, 0);

/// Testing one molecule pair ([`pair`]'s separations and cutoff test, as
/// SPLASH-2's CSHIFT and the first loop of INTERF): 14 site separations x 3
/// components, each a subtract, an absolute value and a compare with half
/// the box (126 flops, and 42 branches), the image shift taken by about one
/// component in five at 3-4 boxes a side (8 flops); 9 squared distances (5
/// flops each) and their cutoff compares (9 flops, 9 branches). Loops: 23
/// trips (46 int ops), and the pair loop's own test and step (5).
/// Loads: both coordinates per component (84) and the separations again
/// for the distances (27); stores: the separations (42) and distances (9).
pub const PAIR_TEST: Work = Work::new(126 + 8 + 54, 0, 42 + 9 + 46 + 5, 84 + 27, 42 + 9);

/// One charged-site pair within the cutoff (SPLASH-2 INTERF's Coulomb
/// terms, up to nine per molecule pair): a square root and a divide; the
/// r^3 multiply, the shift's add, and the virial's multiply and add. Loads:
/// the distance, the charge product, the shift; stores: r and the term.
pub const CHARGE_TERM: Work = Work::new(4, 2, 3, 3, 2);

/// A pair with all nine charged-site pairs within the cutoff: the short-range
/// MCY terms (SPLASH-2 INTERF's `KC == 0` branch). Five more squared
/// distances (25 flops) and square roots (5); thirteen exponentials (O-O,
/// four H-H, two per O-H pair for four O-H pairs), each with its rate and
/// amplitude multiplies (26); nine divides by r; four O-H subtracts and four
/// H-H adds into the Coulomb terms (8); nine virial multiply-adds (18).
/// Loops 5 + 4 + 4 trips and the calls (2 each: 52 int ops); loads: the
/// separations (15) and distances (20); stores: distances, r and terms (19).
pub const SHORT_RANGE: Work = Work::new(25 + 26 + 8 + 18, 5 + 9, 52, 35, 19).plus(EXP.times(13));

/// Applying one interacting pair's terms to the molecule (SPLASH-2's
/// UPDATE_FORCES, 114 flops there): 14 terms times 3 components into the
/// per-site sums (42 multiplies, 42 adds), then M's share folded into O and
/// the hydrogens and added to the molecule's forces (3 x 9 = 27). Zeroing
/// the terms and sums (26 stores), loops (14 + 42 trips at 2 and 1, and the
/// fold: 80 int ops); loads: terms (14), separations (42), sums (54) and
/// forces (9); stores: sums (42) and forces (9).
pub const FORCE_UPDATE: Work = Work::new(42 + 42 + 27, 0, 80, 14 + 42 + 54 + 9, 26 + 42 + 9);

/// A whole pair within the cutoff, all nine charged pairs in range (for
/// reference: the run charges the parts it did).
pub const PAIR_WITHIN: Work = PAIR_TEST.plus(CHARGE_TERM.times(9)).plus(SHORT_RANGE).plus(FORCE_UPDATE);

/// One neighbouring box visited for one owned box: the periodic wrap of
/// three box indices (compare, add: 12 int ops) and the list head (1 load).
pub const BOX_VISIT: Work = Work::new(0, 0, 12, 1, 0);

/// A molecule's intramolecular forces ([`intramolecular`], SPLASH-2's
/// INTRAF, with its M site): the M site (12 flops); bond vectors (6),
/// their squares and dot product (15), two square roots; cos (1 multiply,
/// 1 divide), sin (2 flops, a root), the angle by `acos` (counted as 25
/// flops and a root, like [`EXP`] and the argument's transform), bend and
/// stretches (4); the force field's derivatives as written (56 per stretch,
/// 49 for the bend: 161); the bend weights (4 flops, 2 divides); per
/// component the unit vectors (2 divides), the forces on H, H and O (12)
/// and the virial (6): 54 flops and 6 divides. Loops and calls: 40 int ops;
/// loads: 9 coordinates and 19 constants; stores: 9 forces and 3 M.
pub const INTRA: Work = Work::new(12 + 6 + 15 + 1 + 2 + 25 + 4 + 161 + 4 + 54, 2 + 1 + 1 + 1 + 2 + 6, 40, 28, 12);

/// Predicting one molecule ([`predict`], SPLASH-2's PREDIC): per coordinate
/// (9) and derivative k = 0..5, a sum of 6 - k terms (21 multiply-adds in
/// all, 42 flops) added to the value (6): 48 flops. Loops: 21 inner and 6
/// outer trips (54 int ops); loads: a coefficient and a value per term and
/// the value itself (48); stores: 6.
pub const PREDICT: Work = Work::new(9 * 48, 0, 9 * 54, 9 * 48, 9 * 6);

/// Correcting one molecule ([`correct`], SPLASH-2's CORREC and INTERF's
/// final mass scaling): per coordinate (9), the force times the site's
/// dt^2/2m, less the predicted term (2 flops), then 7 multiply-adds (14).
/// Loops: 7 trips and the coordinate's (17 int ops); loads: force, scale,
/// predicted term, and a coefficient and value per trip (17); stores: 7.
pub const CORRECT: Work = Work::new(9 * 16, 0, 9 * 17, 9 * 17, 9 * 7);

/// Putting one molecule back in the cube and finding its box ([`wrap`] and
/// [`WaterSp::box_of`], SPLASH-2's BNDRY): per direction two compares (6
/// flops), the box index by a divide, a floor, a clamp and a conversion (3
/// divides, 9 flops); the box number and the compare with the current box
/// (8 int ops), the direction loop (6); loads: the oxygen's coordinates
/// (3). Also the M site for the position record written back (12 flops, 3
/// stores).
pub const BOUNDARY: Work = Work::new(6 + 9 + 12, 3, 14, 3, 3);

/// Checking that one molecule of a box is in order (compare, branch, load).
pub const ORDER_CHECK: Work = Work::new(0, 0, 2, 1, 0);
/// One step of sorting a box that received molecules (per molecule and
/// halving: compare, branch, index; a record moved, 2 loads 2 stores).
pub const SORT_STEP: Work = Work::new(0, 0, 4, 2, 2);

/// The water run's input and the shared arrays it lays out.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaterSp {
    /// Molecules, a cube (SPLASH-2's lattice).
    pub molecules: u64,
    /// Cutoff radius in Å; boxes are at least this wide. 0 is SPLASH-2's
    /// own choice: half the box, at most 11 Å.
    pub cutoff: f64,
    pub steps: u32,
    /// Step in fs (SPLASH-2's input: 1.5e-16 s, 0.15 fs).
    pub dt: f64,
    /// A velocity added to every atom (Å/fs): a bulk flow that moves
    /// molecules across boxes without bringing any two closer (a test
    /// knob; zero in every size).
    pub drift: [f64; 3],
    pub seed: u64,
    #[serde(skip)]
    lay: Option<Layout>,
}

/// Two runs' inputs are equal when their fields are, laid out or not.
impl PartialEq for WaterSp {
    fn eq(&self, o: &WaterSp) -> bool {
        self.molecules == o.molecules
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
    state: Shared,
    locks: Vec<LockId>,
}

impl WaterSp {
    /// For tests: 216 molecules, SPLASH-2's input-file cutoff (6.212752
    /// Å), 3x3x3 boxes of 8, 2 steps.
    pub fn tiny(seed: u64) -> WaterSp {
        WaterSp { molecules: 216, cutoff: 6.212752, steps: 2, dt: 0.15, drift: [0.0; 3], seed, lay: None }
    }

    /// The study's quick set: Table 2's 4096 molecules, the input file's
    /// cutoff (6.212752 Å), 8x8x8 boxes of 8, 1 step.
    pub fn quick(seed: u64) -> WaterSp {
        WaterSp { molecules: 4096, steps: 1, ..WaterSp::tiny(seed) }
    }

    /// Table 2's 4096 molecules, 3 steps (SPLASH-2's input file's count;
    /// the paper gives none).
    pub fn paper(seed: u64) -> WaterSp {
        WaterSp { steps: 3, ..WaterSp::quick(seed) }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.side().pow(3) != self.molecules || !(2..=64).contains(&self.side()) {
            return Err(format!(
                "water-sp: invalid molecules = {}; allowed a cube from 8 to 262144 (8, 27, 64, ...: SPLASH-2's lattice)",
                self.molecules
            ));
        }
        if !(self.cutoff.is_finite() && self.cutoff >= 0.0) {
            return Err(format!(
                "water-sp: invalid cutoff = {}; allowed a finite number >= 0 (0: SPLASH-2's)",
                self.cutoff
            ));
        }
        if self.cutoff > self.box_len() / 2.0 {
            return Err(format!(
                "water-sp: cutoff = {} Å is larger than half the {:.3} Å box; allowed 0 (SPLASH-2's choice) to {:.3}",
                self.cutoff,
                self.box_len(),
                self.box_len() / 2.0
            ));
        }
        if self.grid() < 3 {
            return Err(format!(
                "water-sp: a {:.3} Å box holds {} boxes of the {:.3} Å cutoff per side; allowed 3 or more (a smaller \
                 cutoff or more molecules)",
                self.box_len(),
                self.grid(),
                self.cutoff_radius()
            ));
        }
        if self.steps == 0 {
            return Err("water-sp: steps = 0; allowed 1 or more".into());
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Err(format!("water-sp: invalid dt = {}; allowed a finite number > 0 (fs)", self.dt));
        }
        if self.drift.iter().any(|v| !v.is_finite()) {
            return Err(format!("water-sp: invalid drift = {:?}; allowed finite numbers", self.drift));
        }
        Ok(())
    }

    /// Molecules per side of the lattice (rounded; `validate` checks the
    /// cube).
    fn side(&self) -> u64 {
        let s = (self.molecules as f64).cbrt().round() as u64;
        s.max(1)
    }

    /// The cube's side in Å, from the density.
    fn box_len(&self) -> f64 {
        let grams = self.molecules as f64 * (O_MASS + 2.0 * H_MASS) * AMU_GRAMS;
        (grams / DENSITY).cbrt() * 1e8
    }

    /// The cutoff in use: the input's, or SPLASH-2's choice for 0.
    fn cutoff_radius(&self) -> f64 {
        if self.cutoff == 0.0 {
            (self.box_len() / 2.0).min(MAX_AUTO_CUTOFF)
        } else {
            self.cutoff
        }
    }

    /// Boxes per side.
    fn grid(&self) -> u64 {
        (self.box_len() / self.cutoff_radius()).floor().min(64.0) as u64
    }

    fn cells(&self) -> u64 {
        self.grid().pow(3)
    }

    /// Molecules a box has room for: four times the average and some,
    /// ample for a liquid over a few steps.
    fn capacity(&self) -> u64 {
        4 * self.molecules.div_ceil(self.cells()) + 16
    }

    /// The box an oxygen at `o` belongs to.
    fn box_of(&self, o: [f64; 3]) -> u64 {
        let g = self.grid();
        let w = self.box_len() / g as f64;
        let k = |x: f64| ((x / w).floor().max(0.0) as u64).min(g - 1);
        (k(o[2]) * g + k(o[1])) * g + k(o[0])
    }

    /// The box and its 26 neighbours (periodic), in a fixed order.
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

    fn kernel(&self) -> Kernel {
        let l = self.box_len();
        let rc = self.cutoff_radius();
        let mut qq = [0.0; 9];
        let mut shift = [0.0; 9];
        for n in 0..9 {
            let (p, q) = SITE_PAIRS[n];
            qq[n] = QQ * CHARGE[p] * CHARGE[q];
            shift[n] = -qq[n] / (rc * rc * rc);
        }
        Kernel { l, half: 0.5 * l, rc2: rc * rc, qq, shift, accel: MASS.map(|m| self.dt * self.dt * 0.5 / m) }
    }
}

/// A pair kernel's box-independent constants.
#[derive(Clone, Copy, Debug)]
struct Kernel {
    l: f64,
    half: f64,
    rc2: f64,
    /// Charge products and force shifts of the nine charged-site pairs.
    qq: [f64; 9],
    shift: [f64; 9],
    /// dt^2 / 2m by site: force to scaled acceleration.
    accel: [f64; 3],
}

/// Per-atom coordinates: [site][direction].
type Coords = [[f64; 3]; 3];
/// A molecule's sites as the pair kernel reads them: O, H1, H2, M.
type Sites = [[f64; 3]; 4];

/// Site pairs (own site, other's site) in the order the kernel keeps their
/// separations: the nine between charged sites, then O-O and the four O-H.
const SITE_PAIRS: [(usize, usize); 14] = [
    (M, M),
    (M, H1),
    (M, H2),
    (H1, M),
    (H1, H1),
    (H1, H2),
    (H2, M),
    (H2, H1),
    (H2, H2),
    (O, O),
    (O, H1),
    (O, H2),
    (H1, O),
    (H2, O),
];

/// A molecule: its number and, per atom coordinate, the position and its
/// six scaled derivatives (the k-th derivative times dt^k / k!).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Molecule {
    id: u64,
    y: [Coords; TERMS],
}

fn m_site(x: &Coords) -> [f64; 3] {
    [0, 1, 2].map(|c| W_O * x[O][c] + W_H * (x[H1][c] + x[H2][c]))
}

fn sites_of(x: &Coords) -> Sites {
    [x[O], x[H1], x[H2], m_site(x)]
}

impl Molecule {
    fn pos_record(&self) -> [u64; POS_WORDS as usize] {
        let mut r = [0; POS_WORDS as usize];
        let s = sites_of(&self.y[0]);
        for a in 0..4 {
            for c in 0..3 {
                r[3 * a + c] = s[a][c].to_bits();
            }
        }
        r[ID_WORD] = self.id;
        r
    }

    fn state_record(&self) -> [u64; STATE_WORDS as usize] {
        let mut r = [0; STATE_WORDS as usize];
        for k in 1..TERMS {
            for a in 0..3 {
                for c in 0..3 {
                    r[9 * (k - 1) + 3 * a + c] = self.y[k][a][c].to_bits();
                }
            }
        }
        r
    }

    fn from_records(p: &[u64], s: &[u64]) -> Molecule {
        let mut m = Molecule { id: p[ID_WORD], y: [[[0.0; 3]; 3]; TERMS] };
        for a in 0..3 {
            for c in 0..3 {
                m.y[0][a][c] = f64::from_bits(p[3 * a + c]);
                for k in 1..TERMS {
                    m.y[k][a][c] = f64::from_bits(s[9 * (k - 1) + 3 * a + c]);
                }
            }
        }
        m
    }
}

fn record_sites(p: &[u64]) -> Sites {
    let mut s = [[0.0; 3]; 4];
    for a in 0..4 {
        for c in 0..3 {
            s[a][c] = f64::from_bits(p[3 * a + c]);
        }
    }
    s
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The force field's derivatives with respect to one bond's stretch `a`
/// (the other's `b`) and the bend `t`; the quadratic, cubic (over R_OH) and
/// quartic (over R_OH^2) parts.
fn stretch_derivative(a: f64, b: f64, t: f64) -> f64 {
    let (aa, bb, tt) = (a * a, b * b, t * t);
    let quadratic = K_RR * a + K_RS * b + K_RT * t;
    let cubic = 3.0 * K_RRR * aa + K_RRS * (2.0 * a + b) * b + 2.0 * K_RRT * a * t + K_RST * b * t + K_RTT * tt;
    let quartic = 4.0 * K_RRRR * aa * a
        + K_RRRS * (3.0 * aa + bb) * b
        + 2.0 * K_RRSS * a * bb
        + 3.0 * K_RRRT * aa * t
        + K_RRST * (2.0 * a + b) * b * t
        + (2.0 * K_RRTT * a + K_RSTT * b + K_RTTT * t) * tt;
    quadratic + cubic * INV_R_OH + quartic * INV_R_OH2
}

fn bend_derivative(a: f64, b: f64, t: f64) -> f64 {
    let (sum, prod, sq, tt) = (a + b, a * b, a * a + b * b, t * t);
    let quadratic = K_TT * t + K_RT * sum;
    let cubic = 3.0 * K_TTT * tt + K_RRT * sq + K_RST * prod + 2.0 * K_RTT * sum * t;
    let quartic = 4.0 * K_TTTT * tt * t
        + K_RRRT * (a * a * a + b * b * b)
        + K_RRST * sum * prod
        + 2.0 * K_RRTT * sq * t
        + 2.0 * K_RSTT * prod * t
        + 3.0 * K_RTTT * sum * tt;
    quadratic + cubic * INV_R_OH + quartic * INV_R_OH2
}

/// Sets `f` to the intramolecular forces on the atoms at `x`; returns their
/// virial (the sum of position times force).
fn intramolecular(x: &Coords, f: &mut Coords) -> f64 {
    let b1 = [0, 1, 2].map(|c| x[H1][c] - x[O][c]);
    let b2 = [0, 1, 2].map(|c| x[H2][c] - x[O][c]);
    let (r1, r2) = (dot(b1, b1).sqrt(), dot(b2, b2).sqrt());
    let cos = dot(b1, b2) / (r1 * r2);
    let sin = (1.0 - cos * cos).sqrt();
    let t = (cos.acos() - ANGLE) * R_OH;
    let (s1, s2) = (r1 - R_OH, r2 - R_OH);
    let (g1, g2, gt) = (stretch_derivative(s1, s2, t), stretch_derivative(s2, s1, t), bend_derivative(s1, s2, t));
    // The bend's pull on each hydrogen, per unit of the perpendicular.
    let (w1, w2) = (gt * R_OH / (r1 * sin), gt * R_OH / (r2 * sin));
    let mut vir = 0.0;
    for c in 0..3 {
        let (u1, u2) = (b1[c] / r1, b2[c] / r2);
        let h1 = -g1 * u1 + w1 * (u2 - cos * u1);
        let h2 = -g2 * u2 + w2 * (u1 - cos * u2);
        f[H1][c] = h1;
        f[H2][c] = h2;
        f[O][c] = -(h1 + h2);
        vir += x[O][c] * f[O][c] + x[H1][c] * h1 + x[H2][c] * h2;
    }
    vir
}

/// Adds molecule `b`'s pull on molecule `a`'s atoms to `f` and the pair's
/// virial terms to `vir`. Returns how many of the nine charged-site pairs
/// were within the cutoff (all nine: the short-range terms were taken too).
fn pair(k: &Kernel, a: &Sites, b: &Sites, f: &mut Coords, vir: &mut f64) -> u32 {
    // Every separation, each component at its nearest periodic image.
    let mut d = [[0.0f64; 3]; 14];
    for (n, &(p, q)) in SITE_PAIRS.iter().enumerate() {
        for c in 0..3 {
            let mut x = a[p][c] - b[q][c];
            if x.abs() > k.half {
                x -= k.l.copysign(x);
            }
            d[n][c] = x;
        }
    }
    let mut r2 = [0.0f64; 14];
    let mut within = 0;
    for n in 0..9 {
        r2[n] = dot(d[n], d[n]);
        if r2[n] < k.rc2 {
            within += 1;
        }
    }
    if within == 0 {
        return 0;
    }
    // Each term: the force along the separation, per unit of separation.
    let mut g = [0.0f64; 14];
    let mut r = [0.0f64; 14];
    for n in 0..9 {
        if r2[n] < k.rc2 {
            r[n] = r2[n].sqrt();
            g[n] = k.qq[n] / (r2[n] * r[n]) + k.shift[n];
            *vir += g[n] * r2[n];
        }
    }
    if within == 9 {
        for n in 9..14 {
            r2[n] = dot(d[n], d[n]);
            r[n] = r2[n].sqrt();
        }
        g[9] = A_OO * B_OO * (-B_OO * r[9]).exp() / r[9];
        *vir += g[9] * r2[9];
        for n in [4, 5, 7, 8] {
            let e = A_HH * B_HH * (-B_HH * r[n]).exp() / r[n];
            g[n] += e;
            *vir += e * r2[n];
        }
        for n in 10..14 {
            g[n] = (A_OH * B_OH * (-B_OH * r[n]).exp() - A_OH2 * B_OH2 * (-B_OH2 * r[n]).exp()) / r[n];
            *vir += g[n] * r2[n];
        }
    }
    let mut sum = [[0.0f64; 3]; 4];
    for n in 0..14 {
        let p = SITE_PAIRS[n].0;
        for c in 0..3 {
            sum[p][c] += g[n] * d[n][c];
        }
    }
    for c in 0..3 {
        f[O][c] += sum[O][c] + W_O * sum[M][c];
        f[H1][c] += sum[H1][c] + W_H * sum[M][c];
        f[H2][c] += sum[H2][c] + W_H * sum[M][c];
    }
    within
}

/// What a molecule's pair loop did, for its counted work.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Tally {
    tested: u64,
    /// Charged-site pairs within the cutoff.
    terms: u64,
    /// Pairs with any charged-site pair within the cutoff.
    interacting: u64,
    /// Pairs with all nine within (short-range terms taken).
    full: u64,
}

impl Tally {
    fn work(&self) -> Work {
        PAIR_TEST * self.tested + CHARGE_TERM * self.terms + FORCE_UPDATE * self.interacting + SHORT_RANGE * self.full
    }
}

/// Adds to `f` the pull on molecule `me` (sites `s`) of the molecules of
/// `near` (the neighbourhood's boxes in order, each `(number, sites)`
/// sorted by number); returns the pairs' virial and the tally.
fn molecule_force(k: &Kernel, me: u64, s: &Sites, near: &[&[(u64, Sites)]], f: &mut Coords) -> (f64, Tally) {
    let mut vir = 0.0;
    let mut t = Tally::default();
    for cell in near {
        for (j, sj) in cell.iter() {
            if *j == me {
                continue;
            }
            t.tested += 1;
            let within = pair(k, s, sj, f, &mut vir) as u64;
            t.terms += within;
            t.interacting += (within > 0) as u64;
            t.full += (within == 9) as u64;
        }
    }
    (vir, t)
}

/// Gear's predictor: each value advanced by the Taylor series of the
/// higher ones.
fn predict(y: &mut [Coords; TERMS]) {
    for k in 0..ORDER {
        for a in 0..3 {
            for c in 0..3 {
                let mut s = 0.0;
                for l in k + 1..TERMS {
                    s += BINOMIAL[l][k] * y[l][a][c];
                }
                y[k][a][c] += s;
            }
        }
    }
}

/// Gear's corrector: every value moved by its coefficient times the
/// difference between the force's scaled acceleration and the predicted
/// one.
fn correct(k: &Kernel, y: &mut [Coords; TERMS], f: &Coords) {
    for a in 0..3 {
        for c in 0..3 {
            let delta = f[a][c] * k.accel[a] - y[2][a][c];
            for n in 0..TERMS {
                y[n][a][c] += GEAR[n] * delta;
            }
        }
    }
}

/// Moves a molecule whose oxygen left the cube back by a cube side.
fn wrap(k: &Kernel, x: &mut Coords) {
    for c in 0..3 {
        let shift = if x[O][c] > k.l {
            -k.l
        } else if x[O][c] < 0.0 {
            k.l
        } else {
            continue;
        };
        for a in 0..3 {
            x[a][c] += shift;
        }
    }
}

/// Forces (intramolecular and from the neighbourhood) and virials of every
/// molecule of `ms` (sorted by number) at their current positions, each
/// molecule in box `boxes[i]`.
fn all_forces(cfg: &WaterSp, k: &Kernel, ms: &[Molecule], boxes: &[u64]) -> (Vec<Coords>, Vec<f64>) {
    let sites: Vec<Sites> = ms.iter().map(|m| sites_of(&m.y[0])).collect();
    let mut lists: Vec<Vec<(u64, Sites)>> = vec![Vec::new(); cfg.cells() as usize];
    for (i, m) in ms.iter().enumerate() {
        lists[boxes[i] as usize].push((m.id, sites[i]));
    }
    ms.iter()
        .enumerate()
        .map(|(i, m)| {
            let mut f = [[0.0; 3]; 3];
            let intra = intramolecular(&m.y[0], &mut f);
            let near: Vec<&[(u64, Sites)]> =
                cfg.neighbourhood(boxes[i]).into_iter().map(|c| lists[c as usize].as_slice()).collect();
            let (inter, _) = molecule_force(k, m.id, &sites[i], &near, &mut f);
            (f, intra + 0.5 * inter)
        })
        .unzip()
}

/// The starting molecules, by number: SPLASH-2's lattice (spacing L/n,
/// half a spacing in, every molecule in the same orientation in the x-y
/// plane), per-atom velocities uniform in [-4, 4) with the mean removed
/// and each direction scaled to kT per atom (SPLASH-2's normalisation),
/// plus the drift; the accelerations from the forces at the start, higher
/// derivatives zero.
fn initial(cfg: &WaterSp) -> Vec<Molecule> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let (n, l) = (cfg.side(), cfg.box_len());
    let a = l / n as f64;
    let (wc, ws) = (R_OH * (ANGLE / 2.0).cos(), R_OH * (ANGLE / 2.0).sin());
    let shape = [[0.0, 0.0, 0.0], [wc, ws, 0.0], [wc, -ws, 0.0]];
    let mut ms: Vec<Molecule> = (0..cfg.molecules)
        .map(|id| {
            let o = [id % n, (id / n) % n, id / (n * n)].map(|i| (i as f64 + 0.5) * a);
            let mut y = [[[0.0; 3]; 3]; TERMS];
            for s in 0..3 {
                for c in 0..3 {
                    y[0][s][c] = o[c] + shape[s][c];
                    y[1][s][c] = rng.gen_range(-4.0..4.0);
                }
            }
            Molecule { id, y }
        })
        .collect();
    let atoms = 3.0 * cfg.molecules as f64;
    for c in 0..3 {
        let mean = ms.iter().flat_map(|m| (0..3).map(move |s| m.y[1][s][c])).sum::<f64>() / atoms;
        let spread: f64 = ms.iter().flat_map(|m| (0..3).map(move |s| (m.y[1][s][c] - mean).powi(2) / MASS[s])).sum();
        let scale = (KT * atoms / spread).sqrt();
        for m in &mut ms {
            for s in 0..3 {
                m.y[1][s][c] = ((m.y[1][s][c] - mean) * scale / MASS[s] + cfg.drift[c]) * cfg.dt;
            }
        }
    }
    let k = cfg.kernel();
    let boxes: Vec<u64> = ms.iter().map(|m| cfg.box_of(m.y[0][O])).collect();
    let (forces, _) = all_forces(cfg, &k, &ms, &boxes);
    for (m, f) in ms.iter_mut().zip(&forces) {
        for s in 0..3 {
            for c in 0..3 {
                m.y[2][s][c] = f[s][c] * k.accel[s];
            }
        }
    }
    ms
}

/// The sequential reference run: the molecules (by number) after every
/// step, and each one's virial in the last step's forces.
fn reference(cfg: &WaterSp) -> Result<(Vec<Molecule>, Vec<f64>), String> {
    cfg.validate()?;
    let k = cfg.kernel();
    let mut ms = initial(cfg);
    let mut virials = vec![0.0; ms.len()];
    for _ in 0..cfg.steps {
        let boxes: Vec<u64> = ms.iter().map(|m| cfg.box_of(m.y[0][O])).collect();
        for m in &mut ms {
            predict(&mut m.y);
        }
        let (forces, vs) = all_forces(cfg, &k, &ms, &boxes);
        virials = vs;
        for (m, f) in ms.iter_mut().zip(&forces) {
            correct(&k, &mut m.y, f);
            wrap(&k, &mut m.y[0]);
        }
    }
    Ok((ms, virials))
}

/// What one thread returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaterAnswer {
    /// The molecules now in this thread's boxes: number, then O, H, H
    /// positions (Å) and velocities (Å/fs).
    pub molecules: Vec<(u64, Vec<f64>)>,
    /// The virial (intramolecular, and half of each pair's) of every
    /// molecule this thread computed forces for in the last step, by
    /// number: they sat in its boxes before the last move.
    pub virials: Vec<(u64, f64)>,
}

fn not_allowed(what: String) -> AmError {
    AmError::NotAllowed(what)
}

fn owned_cells(cells: u64, rank: u32, ranks: u32) -> std::ops::Range<u64> {
    let (r, ranks) = (rank as u64, ranks as u64);
    r * cells / ranks..(r + 1) * cells / ranks
}

/// One of a thread's boxes during a step.
struct OwnBox {
    c: u64,
    ms: Vec<Molecule>,
    /// Forces on each molecule (intramolecular, then the pairs').
    forces: Vec<Coords>,
    /// Each molecule's virial (intramolecular, then half the pairs').
    virials: Vec<f64>,
}

impl WaterSp {
    fn lay(&self) -> Result<&Layout, AmError> {
        self.lay.as_ref().ok_or_else(|| not_allowed("water-sp: run before layout".into()))
    }

    /// Box `c`'s molecules' position records.
    async fn read_cell<P: Proc>(&self, d: &DsmProc<'_, P>, lay: &Layout, c: u64) -> Result<Vec<u64>, AmError> {
        let count = d.read(lay.counts, c).await?;
        let mut p = vec![0u64; (count * POS_WORDS) as usize];
        if count > 0 {
            d.read_into(lay.pos, c * self.capacity() * POS_WORDS, &mut p).await?;
        }
        Ok(p)
    }

    /// Box `c`'s molecules, positions and derivatives, sorted by number.
    async fn read_own_cell<P: Proc>(&self, d: &DsmProc<'_, P>, lay: &Layout, c: u64) -> Result<Vec<Molecule>, AmError> {
        let p = self.read_cell(d, lay, c).await?;
        let n = p.len() as u64 / POS_WORDS;
        let mut s = vec![0u64; (n * STATE_WORDS) as usize];
        if n > 0 {
            d.read_into(lay.state, c * self.capacity() * STATE_WORDS, &mut s).await?;
        }
        let mut ms: Vec<Molecule> = p
            .chunks(POS_WORDS as usize)
            .zip(s.chunks(STATE_WORDS as usize))
            .map(|(p, s)| Molecule::from_records(p, s))
            .collect();
        d.charge_work(ORDER_CHECK * n);
        if !ms.is_sorted_by_key(|m| m.id) {
            ms.sort_by_key(|m| m.id);
            d.charge_work(SORT_STEP * (n * (64 - n.leading_zeros() as u64)));
        }
        Ok(ms)
    }

    async fn write_positions<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        lay: &Layout,
        c: u64,
        ms: &[Molecule],
    ) -> Result<(), AmError> {
        if !ms.is_empty() {
            let p: Vec<u64> = ms.iter().flat_map(|m| m.pos_record()).collect();
            d.write_from(lay.pos, c * self.capacity() * POS_WORDS, &p).await?;
        }
        Ok(())
    }

    async fn write_own_cell<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        lay: &Layout,
        c: u64,
        ms: &[Molecule],
    ) -> Result<(), AmError> {
        self.write_positions(d, lay, c, ms).await?;
        if !ms.is_empty() {
            let s: Vec<u64> = ms.iter().flat_map(|m| m.state_record()).collect();
            d.write_from(lay.state, c * self.capacity() * STATE_WORDS, &s).await?;
        }
        d.write(lay.counts, c, ms.len() as u64).await
    }

    async fn step<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        lay: &Layout,
        k: &Kernel,
        phases: &mut Phases,
        virials: &mut BTreeMap<u64, f64>,
    ) -> Result<(), AmError> {
        let mine = owned_cells(self.cells(), d.rank(), d.ranks());

        // 1. Predict, and the intramolecular forces.
        let t0 = d.now();
        let mut cache: BTreeMap<u64, Vec<(u64, Sites)>> = BTreeMap::new();
        let mut own: Vec<OwnBox> = Vec::new();
        for c in mine.clone() {
            let mut ms = self.read_own_cell(d, lay, c).await?;
            let mut forces = Vec::with_capacity(ms.len());
            let mut virs = Vec::with_capacity(ms.len());
            for m in &mut ms {
                predict(&mut m.y);
                let mut f = [[0.0; 3]; 3];
                virs.push(intramolecular(&m.y[0], &mut f));
                forces.push(f);
            }
            d.charge_work((PREDICT + INTRA) * ms.len() as u64);
            self.write_positions(d, lay, c, &ms).await?;
            cache.insert(c, ms.iter().map(|m| (m.id, sites_of(&m.y[0]))).collect());
            own.push(OwnBox { c, ms, forces, virials: virs });
        }
        d.barrier().await?;
        let t1 = d.now();
        phases.add("predict", t1 - t0);

        // 2. Intermolecular forces.
        virials.clear();
        for o in &mut own {
            let hood = self.neighbourhood(o.c);
            for &nb in &hood {
                if let Entry::Vacant(e) = cache.entry(nb) {
                    let p = self.read_cell(d, lay, nb).await?;
                    e.insert(p.chunks(POS_WORDS as usize).map(|r| (r[ID_WORD], record_sites(r))).collect());
                }
            }
            d.charge_work(BOX_VISIT * hood.len() as u64);
            let near: Vec<&[(u64, Sites)]> = hood.iter().map(|nb| cache[nb].as_slice()).collect();
            for (i, m) in o.ms.iter().enumerate() {
                let (inter, t) = molecule_force(k, m.id, &sites_of(&m.y[0]), &near, &mut o.forces[i]);
                o.virials[i] += 0.5 * inter;
                d.charge_work(t.work());
                phases.count("pairs within cutoff", t.interacting);
                virials.insert(m.id, o.virials[i]);
            }
        }
        d.barrier().await?;
        let t2 = d.now();
        phases.add("force", t2 - t1);

        // 3. Correct, put back in the cube, keep the stayers.
        let mut leavers = Vec::new();
        for o in &mut own {
            let mut stay = Vec::with_capacity(o.ms.len());
            for (m, f) in o.ms.iter_mut().zip(&o.forces) {
                correct(k, &mut m.y, f);
                wrap(k, &mut m.y[0]);
                let to = self.box_of(m.y[0][O]);
                if to == o.c {
                    stay.push(*m);
                } else {
                    leavers.push((to, *m));
                }
            }
            d.charge_work((CORRECT + BOUNDARY) * o.ms.len() as u64);
            self.write_own_cell(d, lay, o.c, &stay).await?;
        }
        d.barrier().await?;
        let t3 = d.now();
        phases.add("correct", t3 - t2);

        // 4. Migrate.
        phases.count("migrations", leavers.len() as u64);
        for (to, m) in &leavers {
            d.lock(lay.locks[*to as usize]).await?;
            let count = d.read(lay.counts, *to).await?;
            if count >= self.capacity() {
                d.unlock(lay.locks[*to as usize]).await?;
                return Err(not_allowed(format!(
                    "water-sp: box {to} is full ({} molecules); the molecules bunched up more than the boxes allow",
                    self.capacity()
                )));
            }
            let at = *to * self.capacity() + count;
            d.write_from(lay.pos, at * POS_WORDS, &m.pos_record()).await?;
            d.write_from(lay.state, at * STATE_WORDS, &m.state_record()).await?;
            d.write(lay.counts, *to, count + 1).await?;
            d.unlock(lay.locks[*to as usize]).await?;
        }
        d.barrier().await?;
        phases.add("migrate", d.now() - t3);
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
            "{} molecules (SPLASH-2 water-spatial: MCY, flexible, 6th-order Gear), {}^3 boxes, {:.3} Å cutoff, {} \
             steps of {} fs; Table 2: 4096 molecules",
            self.molecules,
            self.grid(),
            self.cutoff_radius(),
            self.steps,
            self.dt
        )
    }

    fn layout(&mut self, b: &mut DsmBuilder) {
        // An invalid input gets empty arrays here; run refuses it.
        let ok = self.validate().is_ok();
        let (cells, cap) = if ok { (self.cells(), self.capacity()) } else { (1, 1) };
        let mut counts = vec![0u64; cells as usize];
        let mut pos = vec![0u64; (cells * cap * POS_WORDS) as usize];
        let mut state = vec![0u64; (cells * cap * STATE_WORDS) as usize];
        if ok {
            for m in initial(self) {
                let c = self.box_of(m.y[0][O]);
                let at = c * cap + counts[c as usize];
                if counts[c as usize] < cap {
                    counts[c as usize] += 1;
                    let (p, s) = ((at * POS_WORDS) as usize, (at * STATE_WORDS) as usize);
                    pos[p..p + POS_WORDS as usize].copy_from_slice(&m.pos_record());
                    state[s..s + STATE_WORDS as usize].copy_from_slice(&m.state_record());
                }
            }
        }
        let counts = b.alloc_with(counts, Home::Blocked);
        let pos = b.alloc_with(pos, Home::Blocked);
        let state = b.alloc_with(state, Home::Blocked);
        let locks = b.locks(cells as u32);
        self.lay = Some(Layout { counts, pos, state, locks });
    }

    async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<WaterAnswer, AmError> {
        self.validate().map_err(not_allowed)?;
        let lay = self.lay()?.clone();
        let k = self.kernel();
        let mut virials = BTreeMap::new();
        for _ in 0..self.steps {
            self.step(d, &lay, &k, phases, &mut virials).await?;
        }
        let mut molecules = Vec::new();
        for c in owned_cells(self.cells(), d.rank(), d.ranks()) {
            for m in self.read_own_cell(d, &lay, c).await? {
                let velocity = m.y[1].iter().flatten().map(|v| v / self.dt);
                molecules.push((m.id, m.y[0].iter().flatten().copied().chain(velocity).collect()));
            }
        }
        Ok(WaterAnswer { molecules, virials: virials.into_iter().collect() })
    }

    fn check(&self, answers: &[&WaterAnswer]) -> Result<(), String> {
        let (want, virials) = reference(self)?;
        let n = want.len();
        let mut state_seen = vec![false; n];
        let mut virial_seen = vec![false; n];
        for (r, a) in answers.iter().enumerate() {
            for &(id, virial) in &a.virials {
                let i = id as usize;
                if i >= n {
                    return Err(format!("thread {r} returned a virial for molecule {i}; there are {n}"));
                }
                if std::mem::replace(&mut virial_seen[i], true) {
                    return Err(format!("molecule {i}'s forces were computed twice"));
                }
                if !super::barnes::close(virial, virials[i], 1e-9) {
                    return Err(format!(
                        "molecule {i}'s virial is {virial}; the sequential reference has {}",
                        virials[i]
                    ));
                }
            }
            for (id, state) in &a.molecules {
                let i = *id as usize;
                if i >= n {
                    return Err(format!("thread {r} returned molecule {i}; there are {n}"));
                }
                if std::mem::replace(&mut state_seen[i], true) {
                    return Err(format!("molecule {i} is in two boxes"));
                }
                let w = &want[i];
                let ws: Vec<f64> =
                    w.y[0].iter().flatten().copied().chain(w.y[1].iter().flatten().map(|v| v / self.dt)).collect();
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
            return Err(format!("molecule {i} is in no box"));
        }
        if let Some(i) = virial_seen.iter().position(|s| !s) {
            return Err(format!("molecule {i}'s forces were not computed"));
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
    fn molecules_migrate_between_threads_boxes() {
        // A bulk flow of 1.2 Å a step carries many molecules into the next
        // box, most of them another thread's.
        let cfg = WaterSp { drift: [8.0, 0.0, 3.0], steps: 3, ..WaterSp::tiny(4) };
        let runs = run_native(cfg.clone(), 2, 2).unwrap();
        let moved: u64 = runs.iter().map(|r| r.phases.counts.get("migrations").copied().unwrap_or(0)).sum();
        assert!(moved > 50, "only {moved} migrations");
        run_sim(cfg, 2, 1).unwrap();
    }

    #[test]
    fn sizes_match_splash2_and_table_2() {
        let t = WaterSp::tiny(1);
        assert_eq!((t.molecules, t.grid()), (216, 3));
        let q = WaterSp::quick(1);
        assert_eq!((q.molecules, q.cutoff_radius(), q.grid()), (4096, 6.212752, 8));
        let p = WaterSp::paper(1);
        assert_eq!((p.molecules, p.grid(), p.steps), (4096, 8, 3));
        // SPLASH-2's automatic cutoff (0) on the same box: 11 Å, 4 a side.
        let auto = WaterSp { cutoff: 0.0, ..WaterSp::paper(1) };
        assert_eq!((auto.cutoff_radius(), auto.grid()), (11.0, 4));
        for w in [t, q, p] {
            w.validate().unwrap();
            assert!(w.box_len() / w.grid() as f64 >= w.cutoff_radius());
        }
        // SPLASH-2's base input: 512 molecules, 4 boxes a side at its cutoff.
        assert_eq!(WaterSp { molecules: 512, ..WaterSp::tiny(1) }.grid(), 4);
    }

    #[test]
    fn the_reference_conserves_momentum() {
        let cfg = WaterSp { steps: 4, ..WaterSp::tiny(5) };
        let p0 = momentum(&initial(&cfg));
        let (ms, virials) = reference(&cfg).unwrap();
        let p1 = momentum(&ms);
        // Every pair force is computed from both sides with the same
        // images and cutoff decisions, and the predictor-corrector is
        // linear, so the total momentum stays put up to rounding.
        let scale: f64 = ms.iter().map(|m| (0..3).map(|s| MASS[s] * m.y[1][s][0].abs()).sum::<f64>()).sum();
        for c in 0..3 {
            assert!((p1[c] - p0[c]).abs() < 1e-9 * scale, "{p0:?} -> {p1:?}");
        }
        assert!(virials.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn the_molecules_hold_together_and_the_temperature_is_right() {
        let cfg = WaterSp { steps: 10, ..WaterSp::tiny(7) };
        let (ms, _) = reference(&cfg).unwrap();
        for m in &ms {
            let x = m.y[0];
            for h in [H1, H2] {
                let r = dot([0, 1, 2].map(|c| x[h][c] - x[O][c]), [0, 1, 2].map(|c| x[h][c] - x[O][c])).sqrt();
                assert!((r - R_OH).abs() < 0.1, "molecule {}: O-H {r}", m.id);
            }
        }
        let kinetic: f64 = initial(&cfg)
            .iter()
            .map(|m| (0..3).map(|s| 0.5 * MASS[s] * dot(m.y[1][s], m.y[1][s])).sum::<f64>())
            .sum::<f64>()
            / (cfg.dt * cfg.dt);
        let atoms = 3.0 * cfg.molecules as f64;
        assert!((kinetic / (1.5 * atoms * KT) - 1.0).abs() < 1e-9, "{kinetic}");
    }

    #[test]
    fn the_boxes_find_every_pair_whose_oxygens_are_a_box_apart() {
        // A pair interacts when any charged sites are within the cutoff;
        // SPLASH-2 looks only in the neighbouring boxes, which hold every
        // molecule whose oxygen is within a box width (so a few pairs whose
        // oxygens are farther apart but whose hydrogens are not are left
        // out, there as here).
        let cfg = WaterSp::tiny(6);
        let k = cfg.kernel();
        let ms = initial(&cfg);
        let boxes: Vec<u64> = ms.iter().map(|m| cfg.box_of(m.y[0][O])).collect();
        let width = cfg.box_len() / cfg.grid() as f64;
        for (i, m) in ms.iter().enumerate().step_by(7) {
            let hood = cfg.neighbourhood(boxes[i]);
            let s = sites_of(&m.y[0]);
            for (j, o) in ms.iter().enumerate() {
                if i == j {
                    continue;
                }
                let (mut f, mut v) = ([[0.0; 3]; 3], 0.0);
                let interacts = pair(&k, &s, &sites_of(&o.y[0]), &mut f, &mut v) > 0;
                let oo = (0..3)
                    .map(|c| {
                        let x = m.y[0][O][c] - o.y[0][O][c];
                        (x - k.l * (x / k.l).round()).powi(2)
                    })
                    .sum::<f64>()
                    .sqrt();
                if interacts && oo < width {
                    assert!(hood.contains(&boxes[j]), "{i} and {j} interact {oo} Å apart");
                }
            }
        }
    }

    #[test]
    fn the_counted_work_is_per_kernel() {
        const { assert!(PAIR_WITHIN.flops > 600 && PAIR_WITHIN.long_flops >= 32) };
        let t = Tally { tested: 10, terms: 9, interacting: 1, full: 1 };
        assert_eq!(t.work(), PAIR_TEST * 9 + PAIR_WITHIN);
    }

    fn momentum(ms: &[Molecule]) -> [f64; 3] {
        let mut p = [0.0; 3];
        for m in ms {
            for s in 0..3 {
                for c in 0..3 {
                    p[c] += MASS[s] * m.y[1][s][c];
                }
            }
        }
        p
    }

    #[test]
    fn bad_input_is_refused() {
        let bad = [
            WaterSp { molecules: 0, ..WaterSp::tiny(1) },
            WaterSp { molecules: 200, ..WaterSp::tiny(1) },
            WaterSp { cutoff: 10.0, ..WaterSp::tiny(1) },
            WaterSp { cutoff: 7.0, ..WaterSp::tiny(1) },
            WaterSp { cutoff: -1.0, ..WaterSp::tiny(1) },
            WaterSp { steps: 0, ..WaterSp::tiny(1) },
            WaterSp { dt: -1.0, ..WaterSp::tiny(1) },
        ];
        for w in bad {
            let e = w.validate().unwrap_err();
            assert!(e.starts_with("water-sp: ") && !e.contains('\n'), "{e}");
        }
        assert!(WaterSp::tiny(1).validate().is_ok());
    }
}
