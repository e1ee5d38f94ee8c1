//! cholesky: sparse Cholesky factorization A = L * L^T by supernodal
//! fan-out, as SPLASH-2's CHOLESKY (HPCA 1999 Table 2: "Sparse cholesky
//! factorization", input tk29.O).
//!
//! The input: tk29.O (BCSSTK29, the stiffness matrix of a Boeing 767 rear
//! pressure bulkhead, 13,992 columns) is not available here, so the matrix
//! is a seeded one of its kind: a shell structure meshed as a surface of
//! `mesh[0] x mesh[1]` nodes with `dofs` degrees of freedom each (6 for a
//! shell element: three displacements, three rotations), each node coupled
//! to itself and its 8 neighbours (the corners of the quadrilateral
//! elements it shares) by dense `dofs x dofs` blocks of random negative
//! weights, with a dominant diagonal (so it is symmetric positive
//! definite). The paper size, 48 x 48 nodes of 6, has 13,824 columns. It
//! is ordered by nested dissection of the mesh, a node's degrees of
//! freedom together, as SPLASH-2's inputs come ordered to limit fill, and
//! factored symbolically before the run (as SPLASH-2 does before its timed
//! section): every thread knows L's structure.
//!
//! The factorization is SPLASH-2's fan-out: L's columns form supernodes
//! (runs of columns with one structure below their diagonal block, from
//! the elimination tree), cut into panels of at most `panel_columns`
//! columns, each owned by one thread and homed at its node: whole subtrees
//! of the elimination tree small enough for one thread ("domains") go to
//! one thread, balanced by work, and the panels above them to the least
//! loaded thread in turn. A panel is complete once every panel that
//! modifies it has: its owner then factors it (each column's square root
//! and scaling, and the updates among its own columns) and sends a task
//! to the owner of every panel it modifies, through that thread's task
//! queue (a shared array under a lock). An owner takes its tasks and, for
//! each, fetches the source panel whole (remote supernodes come in as
//! whole blocks, the compulsory misses HPCA 1999 Section 4 describes for
//! cholesky) and applies its updates to its own panel, which no other
//! thread writes.
//!
//! The answer is checked twice, within a stated tolerance: L * L^T against
//! A on L's structure, and L against a sequential factorization of the
//! same matrix (updates there come in column order, here in whatever order
//! the tasks arrive, so the two differ by rounding only).

use super::radix::Laid;
use super::{DsmProgram, Phases};
use finegrain_core::{AmError, Proc, Work};
use finegrain_dsm::{DsmBuilder, DsmProc, Home, LockId, Shared};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::ops::Range;
use std::sync::Arc;

/// Work per source entry of a column update, from `update`: the multiply
/// and subtract; the source's row number and value and the target's
/// value loaded, the target stored; the loop's counter and branch.
pub const UPDATE: Work = Work::new(2, 0, 2, 3, 1);

/// Work per target row walked to find where the source's rows are (the
/// `while` in `update`): the row number loaded, the compare, the
/// increment and branch.
pub const MATCH: Work = Work::new(0, 0, 3, 1, 0);

/// Work to start a column, from `compute_column`: the pivot's test, square
/// root and reciprocal (a divide), loaded and stored.
pub const PIVOT: Work = Work::new(1, 2, 4, 1, 1);
/// Work per entry scaled by the pivot's reciprocal: load, multiply,
/// store, the loop.
pub const SCALE: Work = Work::new(1, 0, 2, 1, 1);

/// Cycles an idle thread waits before looking at its task queue again, at
/// first; doubled each time it finds it empty, up to [`MAX_WAIT_CYCLES`].
pub const WAIT_CYCLES: u64 = 100;
pub const MAX_WAIT_CYCLES: u64 = 3200;

/// L * L^T may differ from A, and L from the sequential factor, by this
/// much relative to the largest entry of A (of L): the rounding of sums
/// of a few thousand products, and of taking them in another order, is
/// far below it.
pub const TOLERANCE: f64 = 1e-9;

/// The matrix and how the factorization cuts it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cholesky {
    /// The shell's mesh of nodes.
    pub mesh: [u32; 2],
    /// Degrees of freedom per node: one column each.
    pub dofs: u32,
    /// Most columns of a panel: the unit of ownership and of a task.
    pub panel_columns: u32,
    pub seed: u64,
    #[serde(skip)]
    arrays: Laid<Arrays>,
}

#[derive(Clone, Debug)]
struct Arrays {
    sym: Arc<Symbolic>,
    plan: Arc<Plan>,
    /// Per thread: the values of the panels it owns, one after another
    /// (A's at first), homed at its node.
    owned: Vec<Shared>,
    /// Per thread: its task queue (a task per word) and the queue's head
    /// and tail, homed at its node, under its lock.
    queues: Vec<Shared>,
    ends: Vec<Shared>,
    locks: Vec<LockId>,
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
    fn col(&self, j: usize) -> Range<usize> {
        self.start[j]..self.start[j + 1]
    }

    pub fn nnz(&self) -> usize {
        self.rows.len()
    }

    /// Column j's parent in the elimination tree: its first row below the
    /// diagonal.
    fn parent(&self, j: usize) -> Option<usize> {
        self.rows.get(self.start[j] + 1).filter(|_| self.col(j).len() > 1).map(|&r| r as usize)
    }

    /// Multiply-adds of the factorization.
    pub fn flops(&self) -> u64 {
        (0..self.n).map(|j| (self.col(j).len() as u64).pow(2)).sum()
    }

    /// The fundamental supernodes: maximal runs of columns j, j+1, ...
    /// where each is its successor's only child and has the same structure
    /// below the diagonal plus the successor itself.
    pub fn supernodes(&self) -> Vec<Range<usize>> {
        let mut children = vec![0u32; self.n];
        for j in 0..self.n {
            if let Some(p) = self.parent(j) {
                children[p] += 1;
            }
        }
        let mut out: Vec<Range<usize>> = Vec::new();
        for (j, &own_children) in children.iter().enumerate() {
            let continues = j > 0
                && self.parent(j - 1) == Some(j)
                && own_children == 1
                && self.col(j - 1).len() == self.col(j).len() + 1;
            match out.last_mut() {
                Some(last) if continues => last.end = j + 1,
                _ => out.push(j..j + 1),
            }
        }
        out
    }
}

/// Who owns which panel, where its values live, and the tasks between
/// panels: a function of L's structure, the panel width and the number of
/// threads only, so every thread (and the check) makes the same one.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Each panel's columns.
    pub panels: Vec<Range<usize>>,
    /// The panel of each column.
    panel_of: Vec<u32>,
    /// Each panel's thread.
    pub owner: Vec<u32>,
    /// Where each panel's values start in its owner's array.
    offset: Vec<u64>,
    /// Per thread: its panels, ascending.
    pub owned: Vec<Vec<u32>>,
    /// Per panel: the other panels that modify it.
    sources: Vec<u32>,
    /// Per panel: the panels it modifies, ascending.
    targets: Vec<Vec<u32>>,
    /// Per thread: the tasks it receives.
    tasks: Vec<u64>,
    pub supernodes: usize,
}

impl Plan {
    pub fn new(sym: &Symbolic, panel_columns: usize, ranks: u32) -> Plan {
        let supernodes = sym.supernodes();
        let panels: Vec<Range<usize>> = supernodes
            .iter()
            .flat_map(|s| s.clone().step_by(panel_columns).map(move |c| c..(c + panel_columns).min(s.end)))
            .collect();
        let mut panel_of = vec![0u32; sym.n];
        for (p, cols) in panels.iter().enumerate() {
            panel_of[cols.clone()].fill(p as u32);
        }
        let (targets, work) = Plan::targets_and_work(sym, &panels, &panel_of);
        let mut sources = vec![0u32; panels.len()];
        for t in targets.iter().flatten() {
            sources[*t as usize] += 1;
        }
        let owner = Plan::map(sym, &panels, &panel_of, &work, ranks);
        let mut owned = vec![Vec::new(); ranks as usize];
        let mut offset = vec![0u64; panels.len()];
        let mut used = vec![0u64; ranks as usize];
        for (p, cols) in panels.iter().enumerate() {
            let r = owner[p] as usize;
            owned[r].push(p as u32);
            offset[p] = used[r];
            used[r] += (sym.start[cols.end] - sym.start[cols.start]) as u64;
        }
        let mut tasks = vec![0u64; ranks as usize];
        for t in targets.iter().flatten() {
            tasks[owner[*t as usize] as usize] += 1;
        }
        Plan { panels, panel_of, owner, offset, owned, sources, targets, tasks, supernodes: supernodes.len() }
    }

    /// Each panel's targets (the other panels its columns update), and the
    /// multiply-adds that land in each panel (its work).
    fn targets_and_work(sym: &Symbolic, panels: &[Range<usize>], panel_of: &[u32]) -> (Vec<Vec<u32>>, Vec<u64>) {
        let mut targets = vec![Vec::new(); panels.len()];
        let mut work = vec![0u64; panels.len()];
        for (p, cols) in panels.iter().enumerate() {
            for j in cols.clone() {
                let c = sym.col(j);
                work[p] += c.len() as u64;
                for (k, &i) in sym.rows[c.clone()].iter().enumerate().skip(1) {
                    let t = panel_of[i as usize];
                    work[t as usize] += (c.len() - k) as u64;
                    if t as usize != p && targets[p].last() != Some(&t) {
                        targets[p].push(t);
                    }
                }
            }
            targets[p].sort_unstable();
            targets[p].dedup();
        }
        (targets, work)
    }

    /// Each panel's thread: subtrees of at most a thread's share of the
    /// work (domains) whole to the least loaded thread, largest first; the
    /// panels above them one by one, in order, to the least loaded.
    fn map(sym: &Symbolic, panels: &[Range<usize>], panel_of: &[u32], work: &[u64], ranks: u32) -> Vec<u32> {
        let n = panels.len();
        let parent: Vec<Option<usize>> =
            panels.iter().map(|c| sym.parent(c.end - 1).map(|r| panel_of[r] as usize)).collect();
        // Children come before parents (every update goes to a later
        // column), so one pass in order sums each subtree.
        let mut subtree = work.to_vec();
        let mut children = vec![Vec::new(); n];
        for p in 0..n {
            if let Some(q) = parent[p] {
                subtree[q] += subtree[p];
                children[q].push(p);
            }
        }
        let share = work.iter().sum::<u64>().div_ceil(ranks as u64);
        let is_domain = |p: usize| subtree[p] <= share && parent[p].is_none_or(|q| subtree[q] > share);
        let mut domains: Vec<usize> = (0..n).filter(|&p| is_domain(p)).collect();
        domains.sort_by_key(|&p| (std::cmp::Reverse(subtree[p]), p));
        let mut load = vec![0u64; ranks as usize];
        let least = |load: &[u64]| (0..load.len()).min_by_key(|&r| (load[r], r)).unwrap_or(0);
        let mut owner = vec![u32::MAX; n];
        for root in domains {
            let r = least(&load);
            load[r] += subtree[root];
            let mut stack = vec![root];
            while let Some(p) = stack.pop() {
                owner[p] = r as u32;
                stack.extend(&children[p]);
            }
        }
        for p in 0..n {
            if owner[p] == u32::MAX {
                let r = least(&load);
                load[r] += work[p];
                owner[p] = r as u32;
            }
        }
        owner
    }

    /// The words of panel `p`'s values.
    fn len(&self, sym: &Symbolic, p: usize) -> usize {
        let cols = &self.panels[p];
        sym.start[cols.end] - sym.start[cols.start]
    }
}

impl Cholesky {
    pub fn new(mesh: [u32; 2], dofs: u32, seed: u64) -> Cholesky {
        Cholesky { mesh, dofs, panel_columns: PANEL_COLUMNS, seed, arrays: Laid::default() }
    }

    /// 48 x 48 nodes of 6 degrees of freedom: 13,824 columns, against
    /// tk29.O's 13,992.
    pub fn paper(seed: u64) -> Cholesky {
        Cholesky::new([48, 48], 6, seed)
    }

    /// 16 x 16 nodes of 6: 1,536 columns.
    pub fn quick(seed: u64) -> Cholesky {
        Cholesky::new([16, 16], 6, seed)
    }

    /// 5 x 4 nodes of 3: 60 columns, for tests (narrow panels, so that
    /// supernodes split).
    pub fn tiny(seed: u64) -> Cholesky {
        Cholesky { panel_columns: 4, ..Cholesky::new([5, 4], 3, seed) }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.mesh.contains(&0) || self.dofs == 0 || self.columns() > 1 << 20 {
            return Err(format!(
                "cholesky: invalid mesh = {:?} with dofs = {}; allowed sides and dofs of 1 or more, at most \
                 1048576 columns",
                self.mesh, self.dofs
            ));
        }
        if self.panel_columns == 0 {
            return Err("cholesky: invalid panel_columns = 0; allowed 1 or more".into());
        }
        Ok(())
    }

    pub fn columns(&self) -> u64 {
        self.mesh.iter().map(|&g| g as u64).product::<u64>() * self.dofs as u64
    }

    /// Mesh node (x, y)'s number in the mesh's natural order.
    fn point(&self, [x, y]: [u32; 2]) -> usize {
        (x + self.mesh[0] * y) as usize
    }

    /// The nested-dissection order of the mesh's nodes: `order[k]` is the
    /// node whose degrees of freedom come k-th.
    pub fn order(&self) -> Vec<usize> {
        let mut order = Vec::with_capacity((self.mesh[0] * self.mesh[1]) as usize);
        self.dissect([0, 0], self.mesh, &mut order);
        order
    }

    /// Orders the box [lo, hi): both halves, then the line separating them
    /// (with 9-point couplings a line one node thick separates).
    fn dissect(&self, lo: [u32; 2], hi: [u32; 2], order: &mut Vec<usize>) {
        let ext = [hi[0] - lo[0], hi[1] - lo[1]];
        let d = if ext[1] > ext[0] { 1 } else { 0 };
        if ext[d] <= 2 {
            for y in lo[1]..hi[1] {
                for x in lo[0]..hi[0] {
                    order.push(self.point([x, y]));
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

    /// The seeded matrix, in columns numbered node by node in the mesh's
    /// natural order: for each column, its couplings to later columns
    /// (column, value), and its diagonal.
    fn matrix(&self) -> (Vec<Vec<(usize, f64)>>, Vec<f64>) {
        let n = self.columns() as usize;
        let [nx, ny] = self.mesh;
        let dofs = self.dofs as usize;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut upper = vec![Vec::new(); n];
        let mut diag = vec![0.0; n];
        let mut couple = |a: usize, b: usize, rng: &mut ChaCha8Rng| {
            let v = -rng.gen_range(0.1..1.0);
            upper[a].push((b, v));
            diag[a] -= v;
            diag[b] -= v;
        };
        for y in 0..ny {
            for x in 0..nx {
                let p = self.point([x, y]) * dofs;
                // The node's own block, above its diagonal.
                for a in 0..dofs {
                    for b in a + 1..dofs {
                        couple(p + a, p + b, &mut rng);
                    }
                }
                for (dx, dy) in [(1, 0), (-1, 1), (0, 1), (1, 1)] {
                    let (qx, qy) = (x as i64 + dx, y as i64 + dy);
                    if qx < 0 || qx >= nx as i64 || qy >= ny as i64 {
                        continue;
                    }
                    let q = self.point([qx as u32, qy as u32]) * dofs;
                    for a in 0..dofs {
                        for b in 0..dofs {
                            couple(p + a, q + b, &mut rng);
                        }
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
        let dofs = self.dofs as usize;
        let order: Vec<usize> =
            self.order().into_iter().flat_map(|node| (0..dofs).map(move |a| node * dofs + a)).collect();
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

/// Most columns of a panel at every size: SPLASH-2 CHOLESKY's block
/// size (an estimate of its default; the paper does not give it).
pub const PANEL_COLUMNS: u32 = 16;

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

/// A task: source panel `s` modifies panel `t` (one word).
fn task(s: u32, t: u32) -> u64 {
    (s as u64) << 32 | t as u64
}

fn untask(w: u64) -> (usize, usize) {
    ((w >> 32) as usize, (w & 0xffff_ffff) as usize)
}

fn to_f64(words: &[u64]) -> Vec<f64> {
    words.iter().map(|&w| f64::from_bits(w)).collect()
}

fn to_words(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Applies every update of source panel `src` (values `s`) to panel `dst`
/// (values `t`); returns the cycles they cost.
fn modify(sym: &Symbolic, src: &Range<usize>, s: &[f64], dst: &Range<usize>, t: &mut [f64]) -> Work {
    let (sbase, tbase) = (sym.start[src.start], sym.start[dst.start]);
    let mut work = Work::NONE;
    for j in src.clone() {
        let cj = sym.col(j);
        let src_rows = &sym.rows[cj.clone()];
        let src_vals = &s[cj.start - sbase..cj.end - sbase];
        for (k, &i) in src_rows.iter().enumerate().skip(1) {
            let i = i as usize;
            if !dst.contains(&i) {
                continue;
            }
            let ci = sym.col(i);
            let walked = update(&mut t[ci.start - tbase..ci.end - tbase], &sym.rows[ci], src_vals, src_rows, k);
            work += UPDATE * (src_rows.len() - k) as u64 + MATCH * walked as u64;
        }
    }
    work
}

/// Factors a panel whose modifications are all in: each column in turn is
/// computed and updates the panel's later columns. Returns the work it
/// did, or an error naming a column whose pivot is not positive.
fn factor_panel(sym: &Symbolic, cols: &Range<usize>, t: &mut [f64]) -> Result<Work, String> {
    let base = sym.start[cols.start];
    let mut work = Work::NONE;
    for j in cols.clone() {
        let cj = sym.col(j);
        let (head, tail) = t.split_at_mut(cj.end - base);
        let src = &mut head[cj.start - base..];
        compute_column(j, src)?;
        work += PIVOT + SCALE * (src.len() as u64 - 1);
        let src_rows = &sym.rows[cj.clone()];
        for (k, &i) in src_rows.iter().enumerate().skip(1) {
            let i = i as usize;
            if !cols.contains(&i) {
                break;
            }
            let ci = sym.col(i);
            let target = &mut tail[ci.start - cj.end..ci.end - cj.end];
            let walked = update(target, &sym.rows[ci], src, src_rows, k);
            work += UPDATE * (src_rows.len() - k) as u64 + MATCH * walked as u64;
        }
    }
    Ok(work)
}

impl Cholesky {
    /// Panel `p`'s values as words, from its owner's array.
    async fn read_panel<P: Proc>(&self, d: &DsmProc<'_, P>, a: &Arrays, p: usize) -> Result<Vec<u64>, AmError> {
        let mut words = vec![0u64; a.plan.len(&a.sym, p)];
        d.read_into(a.owned[a.plan.owner[p] as usize], a.plan.offset[p], &mut words).await?;
        Ok(words)
    }

    /// Tasks in this thread's queue from `head` on, waiting while there
    /// are none.
    async fn take<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        a: &Arrays,
        head: u64,
        phases: &mut Phases,
    ) -> Result<Vec<u64>, AmError> {
        let me = d.rank() as usize;
        let mut wait = WAIT_CYCLES;
        let t0 = d.now();
        loop {
            d.lock(a.locks[me]).await?;
            let tail = d.read(a.ends[me], 0).await?;
            d.unlock(a.locks[me]).await?;
            if tail > head {
                // Written before the tail under the lock, and never again.
                let mut tasks = vec![0u64; (tail - head) as usize];
                d.read_into(a.queues[me], head, &mut tasks).await?;
                phases.add("queue", d.now() - t0);
                return Ok(tasks);
            }
            // Nothing yet: wait, backing off so that an idle thread does
            // not flood its queue's lock. (Looking under the lock, not
            // spinning on a cached copy: the DSM's coherence check counts a
            // racy read as a violation.)
            d.proc().idle(wait).await;
            wait = (wait * 2).min(MAX_WAIT_CYCLES);
        }
    }

    /// Factors panel `p` (values `t`, all its modifications in), writes it
    /// and sends its tasks to the owners of the panels it modifies.
    async fn complete<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        a: &Arrays,
        p: usize,
        mut t: Vec<f64>,
        phases: &mut Phases,
    ) -> Result<(), AmError> {
        let (sym, plan) = (&a.sym, &a.plan);
        let t0 = d.now();
        let work = factor_panel(sym, &plan.panels[p], &mut t).map_err(AmError::NotAllowed)?;
        d.charge_work(work);
        d.write_from(a.owned[d.rank() as usize], plan.offset[p], &to_words(&t)).await?;
        phases.add("factor", d.now() - t0);
        let t0 = d.now();
        let targets = &plan.targets[p];
        let mut owners: Vec<u32> = targets.iter().map(|&t| plan.owner[t as usize]).collect();
        owners.sort_unstable();
        owners.dedup();
        for r in owners {
            let batch: Vec<u64> =
                targets.iter().filter(|&&t| plan.owner[t as usize] == r).map(|&t| task(p as u32, t)).collect();
            let r = r as usize;
            d.lock(a.locks[r]).await?;
            let tail = d.read(a.ends[r], 0).await?;
            d.write_from(a.queues[r], tail, &batch).await?;
            d.write(a.ends[r], 0, tail + batch.len() as u64).await?;
            d.unlock(a.locks[r]).await?;
        }
        phases.add("send tasks", d.now() - t0);
        Ok(())
    }
}

impl DsmProgram for Cholesky {
    /// This thread's panels' values (L's, as bit patterns), one after
    /// another.
    type Answer = Vec<u64>;

    fn name(&self) -> &'static str {
        "cholesky"
    }

    fn input(&self) -> String {
        let [x, y] = self.mesh;
        let shape = self
            .arrays
            .get("cholesky")
            .map(|a| {
                format!(
                    ", A with {} and L with {} entries (lower triangle), {} supernodes in {} panels",
                    a.sym.a.iter().filter(|&&v| v != 0.0).count(),
                    a.sym.nnz(),
                    a.plan.supernodes,
                    a.plan.panels.len()
                )
            })
            .unwrap_or_default();
        format!(
            "{} columns: a {x} x {y} shell mesh of {}-dof nodes coupled to their 8 neighbours, nested-dissection \
             order{shape}, panels of at most {} columns, seed {}; HPCA 1999 Table 2's tk29.O (13,992 columns) is \
             not available",
            self.columns(),
            self.dofs,
            self.panel_columns,
            self.seed
        )
    }

    fn layout(&mut self, b: &mut DsmBuilder) {
        if self.validate().is_err() {
            // `run` reports the error; nothing worth allocating.
            return;
        }
        let sym = self.symbolic();
        let ranks = b.nodes() * b.threads_per_node();
        let plan = Plan::new(&sym, self.panel_columns as usize, ranks);
        let threads = b.threads_per_node();
        let home = |r: u32| Home::Node(r / threads);
        let mut owned = Vec::new();
        for (r, panels) in plan.owned.iter().enumerate() {
            let mut values = Vec::new();
            for &p in panels {
                let cols = &plan.panels[p as usize];
                values.extend(sym.a[sym.start[cols.start]..sym.start[cols.end]].iter().map(|v| v.to_bits()));
            }
            if values.is_empty() {
                values.push(0);
            }
            owned.push(b.alloc_with(values, home(r as u32)));
        }
        let queues = (0..ranks).map(|r| b.alloc(plan.tasks[r as usize].max(1), home(r))).collect();
        let ends = (0..ranks).map(|r| b.alloc(1, home(r))).collect();
        let locks = b.locks(ranks);
        self.arrays.set(Arrays { sym: Arc::new(sym), plan: Arc::new(plan), owned, queues, ends, locks });
    }

    async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<Vec<u64>, AmError> {
        self.validate().map_err(AmError::NotAllowed)?;
        let a = self.arrays.get("cholesky")?;
        let (sym, plan) = (&*a.sym, &*a.plan);
        let me = d.rank() as usize;
        let mine = &plan.owned[me];
        // Modifications each of this thread's panels still waits for.
        let mut waiting: Vec<u32> = mine.iter().map(|&p| plan.sources[p as usize]).collect();
        let position = |p: usize| mine.binary_search(&(p as u32)).expect("a task for a panel this thread owns");
        let mut left = mine.len();
        for (k, &p) in mine.iter().enumerate() {
            if waiting[k] == 0 {
                let t = to_f64(&self.read_panel(d, a, p as usize).await?);
                self.complete(d, a, p as usize, t, phases).await?;
                left -= 1;
            }
        }
        let mut head = 0;
        while left > 0 {
            let tasks = self.take(d, a, head, phases).await?;
            head += tasks.len() as u64;
            phases.count("tasks", tasks.len() as u64);
            for w in tasks {
                let (s, p) = untask(w);
                let t0 = d.now();
                let src = to_f64(&self.read_panel(d, a, s).await?);
                let mut t = to_f64(&self.read_panel(d, a, p).await?);
                d.charge_work(modify(sym, &plan.panels[s], &src, &plan.panels[p], &mut t));
                let k = position(p);
                waiting[k] -= 1;
                if waiting[k] > 0 {
                    d.write_from(a.owned[me], plan.offset[p], &to_words(&t)).await?;
                    phases.add("modify", d.now() - t0);
                } else {
                    phases.add("modify", d.now() - t0);
                    self.complete(d, a, p, t, phases).await?;
                    left -= 1;
                }
            }
        }
        let t0 = d.now();
        d.barrier().await?;
        phases.add("barrier", d.now() - t0);
        let len: usize = mine.iter().map(|&p| plan.len(sym, p as usize)).sum();
        let mut out = vec![0u64; len];
        if len > 0 {
            d.read_into(a.owned[me], 0, &mut out).await?;
        }
        Ok(out)
    }

    fn check(&self, answers: &[&Vec<u64>]) -> Result<(), String> {
        self.validate()?;
        let sym = self.symbolic();
        let plan = Plan::new(&sym, self.panel_columns as usize, answers.len() as u32);
        let mut l = vec![0.0; sym.nnz()];
        for (r, got) in answers.iter().enumerate() {
            let want: usize = plan.owned[r].iter().map(|&p| plan.len(&sym, p as usize)).sum();
            if got.len() != want {
                return Err(format!(
                    "cholesky: thread {r} returned {} entries of L; its panels hold {want}",
                    got.len()
                ));
            }
            for &p in &plan.owned[r] {
                let (p, off) = (p as usize, plan.offset[p as usize] as usize);
                let at = sym.start[plan.panels[p].start];
                let len = plan.len(&sym, p);
                for (x, &w) in got[off..off + len].iter().enumerate() {
                    l[at + x] = f64::from_bits(w);
                }
            }
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
        let cfg = Cholesky::new([9, 7], 2, 1);
        let mut order = cfg.order();
        order.sort_unstable();
        assert_eq!(order, (0..63).collect::<Vec<_>>());
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
    fn the_matrix_is_symmetric_with_the_shell_pattern() {
        let cfg = Cholesky::new([4, 3], 2, 2);
        let sym = cfg.symbolic();
        // Couplings of a 4 x 3 mesh of 2-dof nodes: a node's own pair, and
        // 2 x 2 per neighbouring pair (3*3 + 4*2 + 2 * 3*2 of them).
        let off = (0..sym.n).flat_map(|j| sym.col(j).skip(1)).filter(|&x| sym.a[x] != 0.0).count();
        assert_eq!(off, 12 + 4 * (9 + 8 + 12));
        assert!((0..sym.n).all(|j| sym.a[sym.start[j]] > 0.0));
    }

    #[test]
    fn supernodes_share_their_structure_and_panels_cover_every_column() {
        let cfg = Cholesky::tiny(7);
        let sym = cfg.symbolic();
        let supernodes = sym.supernodes();
        assert!(supernodes.iter().any(|s| s.len() > cfg.panel_columns as usize), "{supernodes:?}");
        for s in &supernodes {
            let last = &sym.rows[sym.col(s.end - 1)];
            for j in s.clone() {
                let rows = &sym.rows[sym.col(j)];
                assert_eq!(&rows[s.end - j..], &last[1..], "column {j} of supernode {s:?}");
            }
        }
        let plan = Plan::new(&sym, cfg.panel_columns as usize, 4);
        let covered: Vec<usize> = plan.panels.iter().flat_map(|p| p.clone()).collect();
        assert_eq!(covered, (0..sym.n).collect::<Vec<_>>());
        assert!(plan.panels.iter().all(|p| p.len() <= cfg.panel_columns as usize));
        // Every task goes to a later panel's owner, and each thread is
        // told how many it will get.
        let targets: usize = plan.targets.iter().map(Vec::len).sum();
        assert_eq!(plan.tasks.iter().sum::<u64>(), targets as u64);
        assert_eq!(plan.sources.iter().map(|&s| s as usize).sum::<usize>(), targets);
        assert!(plan.targets.iter().enumerate().all(|(s, t)| t.iter().all(|&t| t as usize > s)));
        assert_eq!(plan.owned.iter().map(Vec::len).sum::<usize>(), plan.panels.len());
    }

    #[test]
    fn check_accepts_the_reference_and_names_a_wrong_entry() {
        let cfg = Cholesky::tiny(4);
        let sym = cfg.symbolic();
        let l = factor(&sym).unwrap();
        let plan = Plan::new(&sym, cfg.panel_columns as usize, 2);
        let answers: Vec<Vec<u64>> = plan
            .owned
            .iter()
            .map(|panels| {
                panels
                    .iter()
                    .flat_map(|&p| {
                        let cols = &plan.panels[p as usize];
                        l[sym.start[cols.start]..sym.start[cols.end]].iter().map(|v| v.to_bits())
                    })
                    .collect()
            })
            .collect();
        assert!(cfg.check(&[&answers[0], &answers[1]]).is_ok());
        let mut bad = answers.clone();
        let w = bad[0].len() / 2;
        bad[0][w] = (f64::from_bits(bad[0][w]) + 0.5).to_bits();
        let e = cfg.check(&[&bad[0], &bad[1]]).unwrap_err();
        assert!(e.starts_with("cholesky: (L * L^T)"), "{e}");
        let e = cfg.check(&[&answers[0]]).unwrap_err();
        assert!(e.contains("thread 0 returned"), "{e}");
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
        // More threads than some thread has panels for.
        assert_eq!(run_sim(Cholesky::tiny(8), 4, 4).unwrap().len(), 16);
    }
}
