//! fft: SPLASH-2's complex 1-D radix-sqrt(n) FFT, the six-step algorithm
//! (HPCA 1999 Table 2: "Complex 1-D radix-sqrt(n) FFT", 1M points).
//!
//! The n = r * r points are an r x r matrix of complex numbers, row-major,
//! each complex two words (real, imaginary). Threads own contiguous blocks
//! of rows, and the shared arrays are homed in blocks over the nodes, so a
//! thread's rows live in its node's memory as SPLASH-2 places them. With
//! point j = r*a + b and output index k = c + r*d,
//! X[c + r*d] = sum_b w_r^(b*d) * w_n^(b*c) * sum_a x[r*a + b] * w_r^(a*c),
//! so the steps are:
//! 1. transpose `x` into `trans` (row b of `trans` is column b of `x`);
//! 2. an r-point FFT of every row, then each element multiplied by its
//!    twiddle w_n^(b*c);
//! 3. transpose back into `x`;
//! 4. an r-point FFT of every row;
//! 5. transpose into `trans`, which then holds X in natural order.
//!
//! A transpose is all-to-all: every thread reads, from every other
//! thread's rows, the block of columns matching its own rows (one range
//! per source row, starting with the thread after itself so the threads do
//! not all read from the same one at once) and writes its own rows, which
//! are local. As in SPLASH-2, a thread keeps the rows it just transposed
//! and transforms them before storing them (there they would stay in its
//! cache), so each step between two barriers is transpose, compute, store.
//! This is the all-to-all, bursty communication HPCA 1999 Section 4
//! describes for fft.

use super::radix::Laid;
use super::{DsmProgram, Phases};
use finegrain_core::{AmError, Proc, Work};
use finegrain_dsm::{DsmBuilder, DsmProc, Home, Shared};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::f64::consts::PI;

/// Work of one radix-2 butterfly, counted from `fft_in_place`'s inner
/// loop: a complex multiply (4 multiplies, 2 adds) and two complex adds
/// (4 adds); the loads of a root of unity and two points (6 words), the
/// stores of two points (4); three index computations and the loop's
/// counter and branch.
pub const BUTTERFLY: Work = Work::new(10, 0, 5, 6, 4);

/// Work per point of a row transform's bit-reversal permutation: the
/// reversed index (a reverse and a shift), the compare and branch, the
/// loop; half the points swap (two loads and two stores of two words,
/// halved).
pub const BIT_REVERSE: Work = Work::new(0, 0, 4, 2, 2);

/// Work to multiply one point by its twiddle factor: a complex multiply;
/// the factor loaded from SPLASH-2's precomputed table and the point (4
/// words), the point stored (2); the table index (a multiply and a mask)
/// and the loop.
pub const TWIDDLE: Work = Work::new(6, 0, 3, 4, 2);

/// Work to move one point within a transpose: its two words loaded from
/// the fetched segment and stored in place, the index and the loop.
pub const TRANSPOSE: Work = Work::new(0, 0, 3, 2, 2);

/// Largest transform: 2^26 points are 2 GB of shared arrays.
pub const MAX_LOG_POINTS: u32 = 26;

/// Outputs may differ from the sequential FFT's by this much times
/// sqrt(n): an FFT's rounding error grows like eps * log n * sqrt(n) for
/// inputs in [-1, 1), far below it, while any misplaced or mistransformed
/// point is off by the order of sqrt(n).
pub const TOLERANCE: f64 = 1e-9;

/// The FFT's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fft {
    /// n = 2^log_points complex points; even, so that n is a square.
    pub log_points: u32,
    pub seed: u64,
    #[serde(skip)]
    arrays: Laid<Arrays>,
}

#[derive(Clone, Copy, Debug)]
struct Arrays {
    x: Shared,
    trans: Shared,
}

type Complex = (f64, f64);

impl Fft {
    pub fn new(log_points: u32, seed: u64) -> Fft {
        Fft { log_points, seed, arrays: Laid::default() }
    }

    /// HPCA 1999 Table 2's input: 1M points (2^20).
    pub fn paper(seed: u64) -> Fft {
        Fft::new(20, seed)
    }

    /// 16K points (a 128 x 128 matrix): three transposes of 32K words.
    pub fn quick(seed: u64) -> Fft {
        Fft { log_points: 14, ..Fft::paper(seed) }
    }

    /// 64 points (8 x 8), for tests.
    pub fn tiny(seed: u64) -> Fft {
        Fft { log_points: 6, ..Fft::paper(seed) }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.log_points < 2 || self.log_points > MAX_LOG_POINTS || !self.log_points.is_multiple_of(2) {
            return Err(format!(
                "fft: invalid log_points = {}; allowed an even number in 2..={MAX_LOG_POINTS} (n must be a square)",
                self.log_points
            ));
        }
        Ok(())
    }

    pub fn points(&self) -> u64 {
        1 << self.log_points
    }

    /// The matrix's order r = sqrt(n).
    fn order(&self) -> u64 {
        1 << (self.log_points / 2)
    }
}

/// The rows thread `t` of `threads` owns: a contiguous block.
fn rows_of(r: u64, threads: u32, t: u32) -> std::ops::Range<u64> {
    let (p, t) = (threads as u64, t as u64);
    t * r / p..(t + 1) * r / p
}

/// The seeded input, interleaved (real, imaginary), uniform in [-1, 1).
pub fn input(seed: u64, n: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..2 * n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

/// w_n^k = e^(-2 pi i k / n), from k reduced mod n so that large
/// exponents lose no accuracy.
fn root(k: u64, n: u64) -> Complex {
    let a = -2.0 * PI * ((k % n) as f64) / n as f64;
    (a.cos(), a.sin())
}

fn mul(a: Complex, b: Complex) -> Complex {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

/// The roots w_m^k, k < m/2, an m-point FFT uses (SPLASH-2's `umain`).
fn roots(m: u64) -> Vec<Complex> {
    (0..m / 2).map(|k| root(k, m)).collect()
}

/// In-place iterative radix-2 forward FFT of `a` (length a power of two,
/// `w` from [`roots`] of that length), natural order in and out.
fn fft_in_place(a: &mut [Complex], w: &[Complex]) {
    let m = a.len();
    if m < 2 {
        return;
    }
    let bits = m.trailing_zeros();
    for i in 0..m {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if i < j {
            a.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= m {
        let step = m / len;
        for start in (0..m).step_by(len) {
            for k in 0..len / 2 {
                let t = mul(w[k * step], a[start + k + len / 2]);
                let u = a[start + k];
                a[start + k] = (u.0 + t.0, u.1 + t.1);
                a[start + k + len / 2] = (u.0 - t.0, u.1 - t.1);
            }
        }
        len *= 2;
    }
}

/// The sequential reference: one n-point radix-2 FFT of the seeded input,
/// interleaved (real, imaginary).
pub fn reference(seed: u64, n: u64) -> Vec<f64> {
    let x = input(seed, n);
    let mut a: Vec<Complex> = x.chunks(2).map(|c| (c[0], c[1])).collect();
    fft_in_place(&mut a, &roots(n));
    a.into_iter().flat_map(|(re, im)| [re, im]).collect()
}

fn butterflies(r: u64) -> u64 {
    r / 2 * r.trailing_zeros() as u64
}

impl Fft {
    /// Reads, from every thread's rows of `src`, the columns matching this
    /// thread's rows: returns this thread's rows of src's transpose.
    async fn transpose<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        src: Shared,
        mine: &std::ops::Range<u64>,
    ) -> Result<Vec<Complex>, AmError> {
        let r = self.order();
        let width = mine.end - mine.start;
        let mut out = vec![(0.0, 0.0); (width * r) as usize];
        if width == 0 {
            return Ok(out);
        }
        let mut seg = vec![0u64; 2 * width as usize];
        let threads = d.ranks();
        for k in 1..=threads {
            let source = (d.rank() + k) % threads;
            for i in rows_of(r, threads, source) {
                d.read_into(src, 2 * (i * r + mine.start), &mut seg).await?;
                for (j, c) in seg.chunks(2).enumerate() {
                    out[j * r as usize + i as usize] = (f64::from_bits(c[0]), f64::from_bits(c[1]));
                }
            }
        }
        d.charge_work(TRANSPOSE * (width * r));
        Ok(out)
    }

    async fn store<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        dst: Shared,
        mine: &std::ops::Range<u64>,
        rows: &[Complex],
    ) -> Result<(), AmError> {
        let words: Vec<u64> = rows.iter().flat_map(|c| [c.0.to_bits(), c.1.to_bits()]).collect();
        d.write_from(dst, 2 * mine.start * self.order(), &words).await
    }

    /// Row FFTs of this thread's rows, each element then multiplied by
    /// w_n^(row * column) when `twiddle`.
    fn transform_rows<P: Proc>(&self, d: &DsmProc<'_, P>, rows: &mut [Complex], first_row: u64, twiddle: bool) {
        let (r, n) = (self.order(), self.points());
        let w = roots(r);
        for (k, row) in rows.chunks_mut(r as usize).enumerate() {
            fft_in_place(row, &w);
            if twiddle {
                let b = first_row + k as u64;
                for (c, v) in row.iter_mut().enumerate() {
                    *v = mul(*v, root(b * c as u64, n));
                }
            }
        }
        let count = rows.len() as u64 / r.max(1);
        let per_row = BUTTERFLY * butterflies(r) + BIT_REVERSE * r + if twiddle { TWIDDLE * r } else { Work::NONE };
        d.charge_work(per_row * count);
    }

    async fn timed_barrier<P: Proc>(d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<(), AmError> {
        let t0 = d.now();
        d.barrier().await?;
        phases.add("barrier", d.now() - t0);
        Ok(())
    }

    /// Transposes `src` into this thread's rows, transforms them as `step`
    /// says, and stores them into `dst`.
    async fn step<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        (src, dst): (Shared, Shared),
        mine: &std::ops::Range<u64>,
        transform: Option<bool>,
        phases: &mut Phases,
    ) -> Result<Vec<Complex>, AmError> {
        let t0 = d.now();
        let mut rows = self.transpose(d, src, mine).await?;
        phases.add("transpose", d.now() - t0);
        if let Some(twiddle) = transform {
            let t0 = d.now();
            self.transform_rows(d, &mut rows, mine.start, twiddle);
            phases.add("compute", d.now() - t0);
        }
        let t0 = d.now();
        self.store(d, dst, mine, &rows).await?;
        phases.add("transpose", d.now() - t0);
        Self::timed_barrier(d, phases).await?;
        Ok(rows)
    }
}

impl DsmProgram for Fft {
    /// This thread's rows of the transform, interleaved (real, imaginary)
    /// as bit patterns.
    type Answer = Vec<u64>;

    fn name(&self) -> &'static str {
        "fft"
    }

    fn input(&self) -> String {
        let n = self.points();
        let paper = if self.log_points == 20 { "HPCA 1999 Table 2's input" } else { "HPCA 1999 Table 2: 1M points" };
        format!("{n} complex points ({r} x {r}), seed {}; {paper}", self.seed, r = self.order())
    }

    fn layout(&mut self, b: &mut DsmBuilder) {
        if self.validate().is_err() {
            // `run` reports the error; nothing worth allocating.
            return;
        }
        let n = self.points();
        let x = input(self.seed, n).into_iter().map(f64::to_bits).collect();
        let x = b.alloc_with(x, Home::Blocked);
        let trans = b.alloc(2 * n, Home::Blocked);
        self.arrays.set(Arrays { x, trans });
    }

    async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<Vec<u64>, AmError> {
        self.validate().map_err(AmError::NotAllowed)?;
        let a = *self.arrays.get("fft")?;
        let mine = rows_of(self.order(), d.ranks(), d.rank());
        self.step(d, (a.x, a.trans), &mine, Some(true), phases).await?;
        self.step(d, (a.trans, a.x), &mine, Some(false), phases).await?;
        let rows = self.step(d, (a.x, a.trans), &mine, None, phases).await?;
        Ok(rows.into_iter().flat_map(|c| [c.0.to_bits(), c.1.to_bits()]).collect())
    }

    fn check(&self, answers: &[&Vec<u64>]) -> Result<(), String> {
        self.validate()?;
        let (n, r) = (self.points(), self.order());
        let threads = answers.len() as u32;
        let want = reference(self.seed, n);
        let tolerance = TOLERANCE * (n as f64).sqrt();
        for (t, got) in answers.iter().enumerate() {
            let rows = rows_of(r, threads, t as u32);
            let expect = &want[(2 * rows.start * r) as usize..(2 * rows.end * r) as usize];
            if got.len() != expect.len() {
                return Err(format!("fft: thread {t} returned {} words; its rows hold {}", got.len(), expect.len()));
            }
            for (i, (&g, &w)) in got.iter().zip(expect).enumerate() {
                let g = f64::from_bits(g);
                // Written so that a NaN fails too.
                let within = (g - w).abs() <= tolerance;
                if !within {
                    let point = rows.start * r + i as u64 / 2;
                    let part = if i % 2 == 0 { "real" } else { "imaginary" };
                    return Err(format!(
                        "fft: X[{point}]'s {part} part is {g}, the sequential FFT's {w} (tolerance {tolerance:e})"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_is_the_dft() {
        let n = 64u64;
        let x = input(3, n);
        let got = reference(3, n);
        for k in 0..n {
            let mut want = (0.0, 0.0);
            for j in 0..n {
                let t = mul((x[2 * j as usize], x[2 * j as usize + 1]), root(j * k, n));
                want = (want.0 + t.0, want.1 + t.1);
            }
            let g = (got[2 * k as usize], got[2 * k as usize + 1]);
            assert!((g.0 - want.0).abs() < 1e-10 && (g.1 - want.1).abs() < 1e-10, "X[{k}] {g:?} against {want:?}");
        }
    }

    /// The six steps done sequentially on the matrix give the reference.
    #[test]
    fn six_steps_give_the_fft_in_natural_order() {
        let cfg = Fft::tiny(9);
        let (n, r) = (cfg.points() as usize, cfg.order() as usize);
        let x: Vec<Complex> = input(9, n as u64).chunks(2).map(|c| (c[0], c[1])).collect();
        let transpose = |m: &[Complex]| -> Vec<Complex> { (0..n).map(|k| m[(k % r) * r + k / r]).collect() };
        let w = roots(r as u64);
        let mut t = transpose(&x);
        for (b, row) in t.chunks_mut(r).enumerate() {
            fft_in_place(row, &w);
            for (c, v) in row.iter_mut().enumerate() {
                *v = mul(*v, root((b * c) as u64, n as u64));
            }
        }
        let mut t = transpose(&t);
        for row in t.chunks_mut(r) {
            fft_in_place(row, &w);
        }
        let out = transpose(&t);
        let want = reference(9, n as u64);
        for (k, v) in out.iter().enumerate() {
            assert!((v.0 - want[2 * k]).abs() < 1e-12 && (v.1 - want[2 * k + 1]).abs() < 1e-12, "X[{k}]");
        }
    }

    #[test]
    fn rows_are_split_in_contiguous_blocks() {
        let all: Vec<u64> = (0..3).flat_map(|t| rows_of(8, 3, t)).collect();
        assert_eq!(all, (0..8).collect::<Vec<_>>());
        assert!(rows_of(2, 4, 0).is_empty());
    }

    #[test]
    fn an_odd_log_is_refused() {
        let e = Fft { log_points: 7, ..Fft::tiny(1) }.validate().unwrap_err();
        assert!(e.contains("log_points = 7"), "{e}");
    }

    #[test]
    fn check_names_a_wrong_point() {
        let cfg = Fft::tiny(2);
        let want: Vec<u64> = reference(2, cfg.points()).into_iter().map(f64::to_bits).collect();
        assert!(cfg.check(&[&want]).is_ok());
        let mut bad = want.clone();
        bad[10] = (f64::from_bits(want[10]) + 1.0).to_bits();
        assert!(cfg.check(&[&bad]).unwrap_err().contains("X[5]'s real part"));
    }

    #[test]
    fn runs_right_on_the_simulator_and_natively() {
        use crate::dsm::testing::{run_native, run_sim};
        let sim = run_sim(Fft::tiny(5), 2, 2).unwrap();
        assert_eq!(sim.len(), 4);
        assert!(sim.iter().all(|r| r.total > 0));
        assert_eq!(run_native(Fft::tiny(6), 2, 2).unwrap().len(), 4);
    }
}
