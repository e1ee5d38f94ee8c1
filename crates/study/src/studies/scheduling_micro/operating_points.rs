//! The paper's operating points that both the grid (which must contain
//! them) and the claims (which are judged at them) name: one place, so the
//! grid's checks and the claims cannot disagree.

/// The interrupt overhead the paper assumes wherever it names no other
/// (Section 2), and Figure 5's (its caption): the claims' low Oint.
pub(super) const PAPER_OINT: u64 = 200;

/// Communication-bound (C << Lmin, Section 5) read as U at most 0.1, i.e.
/// C at most Lmin / 9, about an order of magnitude below Lmin (fixed
/// before any run).
pub(super) const COMM_BOUND_U: f64 = 0.1;

/// The low and high U of the paper's processor sweeps (Section 5, Figure
/// 5), the only U it names there: claims 4 and 5 are judged at these.
pub(super) const PAPER_US: [f64; 2] = [0.3, 0.7];
