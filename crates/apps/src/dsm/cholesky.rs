//! cholesky: sparse Cholesky factorization A = L * L^T with a task queue
//! (HPCA 1999 Table 2: "Sparse cholesky factorization", input tk29.O).
//!
//! The input: tk29.O (BCSSTK29, 13,992 columns of a structural model) is
//! not available here, so the matrix is a seeded one of the same family: a
//! 3-D grid's 7-point Laplacian-like pattern plus each of the remaining
//! 27-point neighbours with probability `fill_percent`, random negative
//! off-diagonal weights and a dominant diagonal (so it is symmetric
//! positive definite). It is ordered by nested dissection of the grid, as
//! SPLASH-2's inputs come ordered to limit fill, and factored
//! symbolically before the run (as SPLASH-2 does before its timed
//! section): the structure of L is known to every thread, and L's values,
//! column by column, start as A's in a shared array.
//!
//! The factorization is right-looking, a column at a time, with dynamic
//! scheduling as in SPLASH-2: a shared task queue under a lock holds the
//! columns whose updates are all done. A thread takes a column j, computes
//! it (the square root of its diagonal, the column divided by it), then
//! for every row i below the diagonal applies j's update to column i
//! (column i minus L[i][j] times j's rows from i down) under i's lock, and
//! counts the update; the update that makes column i complete puts i on
//! the queue. Columns are read and written as ranges; they are homed
//! round-robin by page, and every update reads a column other threads
//! wrote and writes one others will read: the producer/consumer traffic,
//! with many compulsory misses, that HPCA 1999 Section 4 describes for
//! cholesky.
//!
//! The answer is checked twice, within a stated tolerance: L * L^T against
//! A on L's structure, and L against a sequential factorization of the
//! same matrix (updates there come in column order, here in whatever order
//! the threads make them, so the two differ by rounding only).

use super::radix::{block, Laid};
use super::{DsmProgram, Phases};
use finegrain_core::{AmError, Proc};
use finegrain_dsm::{DsmBuilder, DsmProc, Home, LockId, Shared};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Cycles per entry of an update: a multiply-subtract and matching the
/// source row in the target column (about 4 instructions on a dual-issue
/// processor). An estimate, not from the paper.
pub const UPDATE_CYCLES: u64 = 2;

/// Cycles per entry of a target column's rows walked to find where the
/// source's rows are.
pub const MATCH_CYCLES: u64 = 1;

/// Cycles to compute a column: the square root, then per entry a multiply
/// by its reciprocal.
pub const SQRT_CYCLES: u64 = 30;
pub const SCALE_CYCLES: u64 = 1;

/// Cycles an idle thread waits before looking at the task queue again, at
/// first; doubled each time it finds it empty, up to [`MAX_WAIT_CYCLES`].
pub const WAIT_CYCLES: u64 = 100;
pub const MAX_WAIT_CYCLES: u64 = 3200;

/// Locks guarding columns against simultaneous updates (column i takes
/// lock i mod this).
pub const COLUMN_LOCKS: u32 = 256;

/// L * L^T may differ from A, and L from the sequential factor, by this
/// much relative to the largest entry of A (of L): the rounding of sums
/// of a few hundred products, and of taking them in another order, is far
/// below it.
pub const TOLERANCE: f64 = 1e-9;

/// The matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cholesky {
    /// The grid: one column per point.
    pub grid: [u32; 3],
    /// Percent of the non-face 27-point neighbour pairs that are coupled.
    pub fill_percent: u32,
    pub seed: u64,
    #[serde(skip)]
    arrays: Laid<Arrays>,
}

#[derive(Clone, Debug)]
struct Arrays {
    sym: Arc<Symbolic>,
    /// L's values, column by column (A's at first).
    l: Shared,
    /// Updates each column still waits for.
    pending: Shared,
    /// Columns ready to compute, in the order they became ready.
    queue: Shared,
    /// The queue's head and tail.
    ends: Shared,
    queue_lock: LockId,
    column_locks: Vec<LockId>,
}

/// L's structure (and A on it), column by column: rows ascending, the
/// diagonal first.
#[derive(Clone, Debug, PartialEq)]
pub struct Symbolic {
    pub n: usize,
    pub start: Vec<usize>,
    pub rows: Vec<u32>,
    /// A's entries on L's structure (zero where L fills in).
    pub a: Vec<f64>,
}

impl Symbolic {
    fn col(&self, j: usize) -> std::ops::Range<usize> {
        self.start[j]..self.start[j + 1]
    }

    pub fn nnz(&self) -> usize {
        self.rows.len()
    }

    /// Updates column j receives: one from each column k < j whose
    /// structure holds row j.
    fn updates(&self) -> Vec<u64> {
        let mut count = vec![0u64; self.n];
        for j in 0..self.n {
            for &i in &self.rows[self.col(j)][1..] {
                count[i as usize] += 1;
            }
        }
        count
    }

    /// Multiply-adds of the factorization.
    pub fn flops(&self) -> u64 {
        (0..self.n).map(|j| (self.col(j).len() as u64).pow(2)).sum()
    }
}

impl Cholesky {
    pub fn new(grid: [u32; 3], fill_percent: u32, seed: u64) -> Cholesky {
        Cholesky { grid, fill_percent, seed, arrays: Laid::default() }
    }

    /// A 20 x 20 x 20 grid: 8,000 columns, L with 1.1M entries and 330M
    /// multiply-adds. Fewer columns than tk29.O's 13,992: the 3-D grid of
    /// that many columns (24 x 24 x 24) fills L with 2.5M entries and needs
    /// 1G multiply-adds, 2.5M column updates each a locked range read and
    /// write, too long to simulate.
    pub fn paper(seed: u64) -> Cholesky {
        Cholesky::new([20, 20, 20], 20, seed)
    }

    /// An 8 x 8 x 4 grid: 256 columns, L with 5.9K entries (5.7K column
    /// updates).
    pub fn quick(seed: u64) -> Cholesky {
        Cholesky { grid: [8, 8, 4], ..Cholesky::paper(seed) }
    }

    /// A 4 x 4 x 3 grid: 48 columns, for tests.
    pub fn tiny(seed: u64) -> Cholesky {
        Cholesky { grid: [4, 4, 3], ..Cholesky::paper(seed) }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.grid.contains(&0) || self.columns() > 1 << 20 {
            return Err(format!(
                "cholesky: invalid grid = {:?}; allowed sides of 1 or more, at most 1048576 points",
                self.grid
            ));
        }
        if self.fill_percent > 100 {
            return Err(format!("cholesky: invalid fill_percent = {}; allowed 0..=100", self.fill_percent));
        }
        Ok(())
    }

    pub fn columns(&self) -> u64 {
        self.grid.iter().map(|&g| g as u64).product()
    }

    /// Grid point (x, y, z)'s number in the grid's natural order.
    fn point(&self, [x, y, z]: [u32; 3]) -> usize {
        let [nx, ny, _] = self.grid;
        (x + nx * (y + ny * z)) as usize
    }

    /// The nested-dissection order: `order[k]` is the grid point that
    /// becomes column k.
    pub fn order(&self) -> Vec<usize> {
        let mut order = Vec::with_capacity(self.columns() as usize);
        self.dissect([0, 0, 0], self.grid, &mut order);
        order
    }

    /// Orders the box [lo, hi): both halves, then the plane separating
    /// them (with 27-point couplings a plane one point thick separates).
    fn dissect(&self, lo: [u32; 3], hi: [u32; 3], order: &mut Vec<usize>) {
        let ext = [0, 1, 2].map(|d| hi[d] - lo[d]);
        let d = (0..3).max_by_key(|&d| (ext[d], 3 - d)).unwrap_or(0);
        if ext[d] <= 2 {
            for z in lo[2]..hi[2] {
                for y in lo[1]..hi[1] {
                    for x in lo[0]..hi[0] {
                        order.push(self.point([x, y, z]));
                    }
                }
            }
            return;
        }
        let mid = lo[d] + ext[d] / 2;
        let (mut left_hi, mut right_lo, mut sep_lo, mut sep_hi) = (hi, lo, lo, hi);
        left_hi[d] = mid;
        right_lo[d] = mid + 1;
        sep_lo[d] = mid;
        sep_hi[d] = mid + 1;
        self.dissect(lo, left_hi, order);
        self.dissect(right_lo, hi, order);
        self.dissect(sep_lo, sep_hi, order);
    }

    /// The seeded matrix in the grid's natural order: for each point, its
    /// couplings to later points (point, value), and its diagonal.
    fn matrix(&self) -> (Vec<Vec<(usize, f64)>>, Vec<f64>) {
        let n = self.columns() as usize;
        let [nx, ny, nz] = self.grid;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut upper = vec![Vec::new(); n];
        let mut diag = vec![0.0; n];
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    let p = self.point([x, y, z]);
                    for (dx, dy, dz) in later_neighbours() {
                        let (qx, qy, qz) = (x as i64 + dx, y as i64 + dy, z as i64 + dz);
                        if qx < 0 || qy < 0 || qx >= nx as i64 || qy >= ny as i64 || qz >= nz as i64 {
                            continue;
                        }
                        let face = dx.abs() + dy.abs() + dz.abs() == 1;
                        if !face && rng.gen_range(0..100) >= self.fill_percent {
                            continue;
                        }
                        let q = self.point([qx as u32, qy as u32, qz as u32]);
                        let v = -rng.gen_range(0.1..1.0);
                        upper[p].push((q, v));
                        diag[p] -= v;
                        diag[q] -= v;
                    }
                }
            }
        }
        for d in &mut diag {
            *d += rng.gen_range(0.5..1.5);
        }
        (upper, diag)
    }

    /// L's structure for the nested-dissection order, with A on it.
    pub fn symbolic(&self) -> Symbolic {
        let n = self.columns() as usize;
        let order = self.order();
        let mut column_of = vec![0usize; n];
        for (k, &p) in order.iter().enumerate() {
            column_of[p] = k;
        }
        let (upper, diag) = self.matrix();
        // A's lower triangle in the new order, column by column.
        let mut lower: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
        for (p, couplings) in upper.iter().enumerate() {
            for &(q, v) in couplings {
                let (a, b) = (column_of[p], column_of[q]);
                lower[a.min(b)].push((a.max(b), v));
            }
        }
        // Column j's structure: its own rows and its children's in the
        // elimination tree, less the children themselves.
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut mark = vec![usize::MAX; n];
        let (mut start, mut rows, mut a) = (vec![0], Vec::new(), Vec::new());
        let mut values = vec![0.0; n];
        for j in 0..n {
            let mut col = vec![j];
            mark[j] = j;
            values[j] = diag[order[j]];
            for &(i, v) in &lower[j] {
                if mark[i] != j {
                    mark[i] = j;
                    col.push(i);
                }
                values[i] += v;
            }
            for &c in &children[j] {
                for &i in &rows[start[c] + 1..start[c + 1]] {
                    let i = i as usize;
                    if mark[i] != j {
                        mark[i] = j;
                        col.push(i);
                    }
                }
            }
            col.sort_unstable();
            if let Some(&parent) = col.get(1) {
                children[parent].push(j);
            }
            for &i in &col {
                rows.push(i as u32);
                a.push(values[i]);
                values[i] = 0.0;
            }
            start.push(rows.len());
        }
        Symbolic { n, start, rows, a }
    }
}

/// The 13 offsets of a 27-point neighbourhood that come later in the
/// natural order (each coupling made once).
fn later_neighbours() -> impl Iterator<Item = (i64, i64, i64)> {
    (-1..=1)
        .flat_map(|dz| (-1..=1).flat_map(move |dy| (-1..=1).map(move |dx| (dx, dy, dz))))
        .filter(|&(dx, dy, dz)| (dz, dy, dx) > (0, 0, 0))
}

/// Computes a column whose updates are done: its diagonal's square root,
/// the rest divided by it. The error names the column when its diagonal
/// is not positive (the matrix is not positive definite).
fn compute_column(j: usize, col: &mut [f64]) -> Result<(), String> {
    let d = col[0];
    // Written so that a NaN fails too.
    let positive = d > 0.0;
    if !positive {
        return Err(format!("cholesky: column {j}'s pivot is {d}; the matrix is not positive definite"));
    }
    let d = d.sqrt();
    col[0] = d;
    let inv = 1.0 / d;
    for v in &mut col[1..] {
        *v *= inv;
    }
    Ok(())
}

/// Applies computed column j (`src`, rows `src_rows`) to column i
/// (`target`, rows `target_rows`, a prefix of the column that holds every
/// row of j from i down), where i is j's row at position `k`: target[r] -=
/// L[r][j] * L[i][j]. Returns the target rows walked.
fn update(target: &mut [f64], target_rows: &[u32], src: &[f64], src_rows: &[u32], k: usize) -> usize {
    let lij = src[k];
    let mut t = 0;
    for (&r, &v) in src_rows[k..].iter().zip(&src[k..]) {
        while target_rows[t] != r {
            t += 1;
        }
        target[t] -= v * lij;
    }
    t + 1
}

/// How much of column i (from its diagonal) an update by a column whose
/// rows from i down are `src_rows` touches: up to its last row.
fn touched(target_rows: &[u32], src_rows: &[u32]) -> usize {
    let last = src_rows[src_rows.len() - 1];
    target_rows.partition_point(|&r| r <= last)
}

/// The sequential reference: the same updates, column after column.
pub fn factor(sym: &Symbolic) -> Result<Vec<f64>, String> {
    let mut l = sym.a.clone();
    for j in 0..sym.n {
        let cj = sym.col(j);
        compute_column(j, &mut l[cj.clone()])?;
        for k in 1..cj.len() {
            let i = sym.rows[cj.start + k] as usize;
            let ci = sym.col(i);
            let (head, tail) = l.split_at_mut(ci.start);
            update(&mut tail[..ci.len()], &sym.rows[ci], &head[cj.clone()], &sym.rows[cj.clone()], k);
        }
    }
    Ok(l)
}

/// L * L^T on L's structure (where all of it lies).
pub fn product(sym: &Symbolic, l: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; sym.nnz()];
    for k in 0..sym.n {
        let ck = sym.col(k);
        let rows = &sym.rows[ck.clone()];
        for (b, &c) in rows.iter().enumerate() {
            let cc = sym.col(c as usize);
            let target = &sym.rows[cc.clone()];
            let mut t = 0;
            for (&r, &v) in rows[b..].iter().zip(&l[ck.start + b..ck.end]) {
                while target[t] != r {
                    t += 1;
                }
                out[cc.start + t] += v * l[ck.start + b];
            }
        }
    }
    out
}

fn largest(values: &[f64]) -> f64 {
    values.iter().fold(0.0, |m: f64, v| m.max(v.abs()))
}

impl Cholesky {
    /// Takes the next ready column, waiting while there is none; `None`
    /// once every column has been taken.
    async fn take<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        a: &Arrays,
        phases: &mut Phases,
    ) -> Result<Option<usize>, AmError> {
        let n = a.sym.n as u64;
        let mut wait = WAIT_CYCLES;
        let t0 = d.now();
        loop {
            d.lock(a.queue_lock).await?;
            let mut ends = [0u64; 2];
            d.read_into(a.ends, 0, &mut ends).await?;
            let [head, tail] = ends;
            let taken = if head < tail {
                let j = d.read(a.queue, head).await?;
                d.write(a.ends, 0, head + 1).await?;
                Some(j as usize)
            } else {
                None
            };
            d.unlock(a.queue_lock).await?;
            if taken.is_some() || head >= n {
                phases.add("queue", d.now() - t0);
                return Ok(taken);
            }
            // Nothing ready yet: wait, backing off so that idle threads
            // do not flood the queue's home with lock requests. (Looking
            // under the lock, not spinning on a cached copy: the DSM's
            // coherence check counts a racy read as a violation.)
            d.proc().idle(wait).await;
            wait = (wait * 2).min(MAX_WAIT_CYCLES);
        }
    }

    async fn push<P: Proc>(&self, d: &DsmProc<'_, P>, a: &Arrays, i: usize) -> Result<(), AmError> {
        d.lock(a.queue_lock).await?;
        let tail = d.read(a.ends, 1).await?;
        d.write(a.queue, tail, i as u64).await?;
        d.write(a.ends, 1, tail + 1).await?;
        d.unlock(a.queue_lock).await
    }

    /// Computes column j and applies it to every column below it.
    async fn column<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        a: &Arrays,
        j: usize,
        phases: &mut Phases,
    ) -> Result<(), AmError> {
        let sym = &a.sym;
        let cj = sym.col(j);
        let src_rows = &sym.rows[cj.clone()];
        let t0 = d.now();
        let mut words = vec![0u64; cj.len()];
        d.read_into(a.l, cj.start as u64, &mut words).await?;
        let mut src: Vec<f64> = words.iter().map(|&w| f64::from_bits(w)).collect();
        compute_column(j, &mut src).map_err(AmError::NotAllowed)?;
        d.compute(SQRT_CYCLES + SCALE_CYCLES * src.len() as u64);
        let words: Vec<u64> = src.iter().map(|v| v.to_bits()).collect();
        d.write_from(a.l, cj.start as u64, &words).await?;
        phases.add("compute column", d.now() - t0);
        let t0 = d.now();
        let mut target = Vec::new();
        for k in 1..src_rows.len() {
            let i = src_rows[k] as usize;
            let ci = sym.col(i);
            let target_rows = &sym.rows[ci.clone()];
            let len = touched(target_rows, &src_rows[k..]);
            let lock = a.column_locks[i % a.column_locks.len()];
            d.lock(lock).await?;
            target.resize(len, 0);
            d.read_into(a.l, ci.start as u64, &mut target).await?;
            let mut values: Vec<f64> = target.iter().map(|&w| f64::from_bits(w)).collect();
            let walked = update(&mut values, target_rows, &src, src_rows, k);
            d.compute(UPDATE_CYCLES * (src_rows.len() - k) as u64 + MATCH_CYCLES * walked as u64);
            for (w, v) in target.iter_mut().zip(&values) {
                *w = v.to_bits();
            }
            d.write_from(a.l, ci.start as u64, &target).await?;
            let before = d.fetch_add(a.pending, i as u64, u64::MAX).await?;
            d.unlock(lock).await?;
            if before == 1 {
                self.push(d, a, i).await?;
            }
        }
        phases.add("update", d.now() - t0);
        phases.count("updates", (src_rows.len() - 1) as u64);
        Ok(())
    }
}

impl DsmProgram for Cholesky {
    /// This thread's block of L's values (column by column), as bit
    /// patterns.
    type Answer = Vec<u64>;

    fn name(&self) -> &'static str {
        "cholesky"
    }

    fn input(&self) -> String {
        let [x, y, z] = self.grid;
        let nnz = self.arrays.get("cholesky").map(|a| format!(", {} entries in L", a.sym.nnz())).unwrap_or_default();
        format!(
            "{} columns: a {x} x {y} x {z} grid's 7-point pattern plus {}% of the other 27-point couplings, \
             nested-dissection order{nnz}, seed {}; HPCA 1999 Table 2's tk29.O (13,992 columns) is not available",
            self.columns(),
            self.fill_percent,
            self.seed
        )
    }

    fn layout(&mut self, b: &mut DsmBuilder) {
        if self.validate().is_err() {
            // `run` reports the error; nothing worth allocating.
            return;
        }
        let sym = self.symbolic();
        let l = b.alloc_with(sym.a.iter().map(|v| v.to_bits()).collect(), Home::RoundRobin);
        let updates = sym.updates();
        let mut queue: Vec<u64> = (0..sym.n as u64).filter(|&j| updates[j as usize] == 0).collect();
        let ready = queue.len() as u64;
        queue.resize(sym.n, 0);
        let pending = b.alloc_with(updates, Home::RoundRobin);
        let queue = b.alloc_with(queue, Home::Node(0));
        let ends = b.alloc_with(vec![0, ready], Home::Node(0));
        let queue_lock = b.locks(1)[0];
        let column_locks = b.locks(COLUMN_LOCKS.min(sym.n as u32).max(1));
        self.arrays.set(Arrays { sym: Arc::new(sym), l, pending, queue, ends, queue_lock, column_locks });
    }

    async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<Vec<u64>, AmError> {
        self.validate().map_err(AmError::NotAllowed)?;
        let a = self.arrays.get("cholesky")?;
        while let Some(j) = self.take(d, a, phases).await? {
            self.column(d, a, j, phases).await?;
        }
        let t0 = d.now();
        d.barrier().await?;
        phases.add("barrier", d.now() - t0);
        let mine = block(a.sym.nnz() as u64, d.ranks(), d.rank());
        let mut out = vec![0u64; (mine.end - mine.start) as usize];
        d.read_into(a.l, mine.start, &mut out).await?;
        Ok(out)
    }

    fn check(&self, answers: &[&Vec<u64>]) -> Result<(), String> {
        self.validate()?;
        let sym = self.symbolic();
        let threads = answers.len() as u32;
        let mut l = Vec::with_capacity(sym.nnz());
        for (t, got) in answers.iter().enumerate() {
            let want = block(sym.nnz() as u64, threads, t as u32);
            if got.len() as u64 != want.end - want.start {
                return Err(format!(
                    "cholesky: thread {t} returned {} entries of L; its block holds {}",
                    got.len(),
                    want.end - want.start
                ));
            }
            l.extend(got.iter().map(|&w| f64::from_bits(w)));
        }
        let column_of = |x: usize| sym.start.partition_point(|&s| s <= x) - 1;
        let product = product(&sym, &l);
        let tolerance = TOLERANCE * largest(&sym.a);
        for (x, (p, a)) in product.iter().zip(&sym.a).enumerate() {
            let within = (p - a).abs() <= tolerance;
            if !within {
                return Err(format!(
                    "cholesky: (L * L^T)[{}][{}] is {p}, A's is {a} (tolerance {tolerance:e})",
                    sym.rows[x],
                    column_of(x)
                ));
            }
        }
        let want = factor(&sym)?;
        let tolerance = TOLERANCE * largest(&want);
        for (x, (g, w)) in l.iter().zip(&want).enumerate() {
            let within = (g - w).abs() <= tolerance;
            if !within {
                return Err(format!(
                    "cholesky: L[{}][{}] is {g}, the sequential factor's {w} (tolerance {tolerance:e})",
                    sym.rows[x],
                    column_of(x)
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense copy of column-by-column lower-triangular values.
    fn dense(sym: &Symbolic, values: &[f64]) -> Vec<Vec<f64>> {
        let mut m = vec![vec![0.0; sym.n]; sym.n];
        for j in 0..sym.n {
            for (&r, &v) in sym.rows[sym.col(j)].iter().zip(&values[sym.col(j)]) {
                m[r as usize][j] = v;
            }
        }
        m
    }

    #[test]
    fn the_order_is_a_permutation() {
        let cfg = Cholesky::new([8, 8, 6], 20, 1);
        let mut order = cfg.order();
        order.sort_unstable();
        assert_eq!(order, (0..384).collect::<Vec<_>>());
    }

    #[test]
    fn the_factor_times_its_transpose_is_the_matrix() {
        let cfg = Cholesky::tiny(3);
        let sym = cfg.symbolic();
        let l = dense(&sym, &factor(&sym).unwrap());
        let a = dense(&sym, &sym.a);
        for r in 0..sym.n {
            for c in 0..=r {
                let p: f64 = (0..sym.n).map(|k| l[r][k] * l[c][k]).sum();
                assert!((p - a[r][c]).abs() < 1e-12, "({r}, {c}): {p} against {}", a[r][c]);
            }
        }
        // Nothing of L outside its structure: the dense factor's zeros are
        // where the structure has no entry.
        let mut dense_l = a.clone();
        for j in 0..sym.n {
            dense_l[j][j] = dense_l[j][j].sqrt();
            for i in j + 1..sym.n {
                dense_l[i][j] /= dense_l[j][j];
            }
            for c in j + 1..sym.n {
                for r in c..sym.n {
                    let v = dense_l[r][j] * dense_l[c][j];
                    dense_l[r][c] -= v;
                }
            }
        }
        for r in 0..sym.n {
            for c in 0..=r {
                assert!((dense_l[r][c] - l[r][c]).abs() < 1e-12, "L[{r}][{c}]");
            }
        }
    }

    #[test]
    fn the_matrix_is_symmetric_with_the_grid_pattern() {
        let cfg = Cholesky { fill_percent: 0, ..Cholesky::tiny(2) };
        let sym = cfg.symbolic();
        // 7-point couplings of a 4 x 4 x 3 grid: 3*4*3 + 4*3*3 + 4*4*2.
        let off = (0..sym.n).flat_map(|j| sym.col(j).skip(1)).filter(|&x| sym.a[x] != 0.0).count();
        assert_eq!(off, 36 + 36 + 32);
        assert!((0..sym.n).all(|j| sym.a[sym.start[j]] > 0.0));
    }

    #[test]
    fn check_accepts_the_reference_and_names_a_wrong_entry() {
        let cfg = Cholesky::tiny(4);
        let sym = cfg.symbolic();
        let l: Vec<u64> = factor(&sym).unwrap().into_iter().map(f64::to_bits).collect();
        let (x, y) = l.split_at(l.len() / 2);
        assert!(cfg.check(&[&x.to_vec(), &y.to_vec()]).is_ok());
        let mut bad = l.clone();
        bad[5] = (f64::from_bits(bad[5]) + 0.5).to_bits();
        let e = cfg.check(&[&bad]).unwrap_err();
        assert!(e.starts_with("cholesky: (L * L^T)"), "{e}");
    }

    #[test]
    fn a_matrix_that_is_not_positive_definite_is_refused() {
        let mut col = [-1.0, 2.0];
        assert!(compute_column(3, &mut col).unwrap_err().contains("column 3's pivot is -1"));
    }

    #[test]
    fn runs_right_on_the_simulator_and_natively() {
        use crate::dsm::testing::{run_native, run_sim};
        let sim = run_sim(Cholesky::tiny(5), 2, 2).unwrap();
        assert_eq!(sim.len(), 4);
        assert!(sim.iter().all(|r| r.total > 0));
        assert_eq!(run_native(Cholesky::tiny(6), 2, 2).unwrap().len(), 4);
    }
}
