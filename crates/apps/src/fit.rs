//! Fitting a preset's unknowns to the numbers a paper states about its
//! primitives: coordinate descent over integer values, shared by the
//! co-processor fit (IPPS 1996 Figure 3) and the remote-miss fit (HPCA
//! 1999 Table 1).

/// One integer unknown of a machine `M` and the range searched for it.
pub trait Unknown<M> {
    fn range(&self) -> (u64, u64);
    fn get(&self, m: &M) -> u64;
    fn set(&self, m: &mut M, v: u64);
}

/// From `start`, each unknown in turn is scanned over its whole range for
/// the least `error` (None: a value the machine refuses, skipped), until
/// a pass changes nothing (at most ten passes). Ties keep the smaller
/// value, so the result depends only on `start`.
pub fn coordinate_descent<M: Clone, U: Unknown<M>, E>(
    start: M,
    unknowns: &[U],
    error: impl Fn(&M) -> Result<Option<f64>, E>,
) -> Result<M, E> {
    let mut m = start;
    let mut best = error(&m)?.unwrap_or(f64::INFINITY);
    for _pass in 0..10 {
        let mut changed = false;
        for u in unknowns {
            let current = u.get(&m);
            let mut pick = (best, current);
            let (lo, hi) = u.range();
            for v in lo..=hi {
                let mut trial = m.clone();
                u.set(&mut trial, v);
                let Some(e) = error(&trial)? else { continue };
                if e < pick.0 - 1e-9 || (e <= pick.0 + 1e-9 && v < pick.1) {
                    pick = (e, v);
                }
            }
            if pick.1 != current {
                u.set(&mut m, pick.1);
                best = pick.0;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Coord(usize);

    impl Unknown<[u64; 2]> for Coord {
        fn range(&self) -> (u64, u64) {
            (0, 20)
        }
        fn get(&self, m: &[u64; 2]) -> u64 {
            m[self.0]
        }
        fn set(&self, m: &mut [u64; 2], v: u64) {
            m[self.0] = v;
        }
    }

    #[test]
    fn it_finds_a_separable_minimum_and_skips_refused_values() {
        let error = |m: &[u64; 2]| -> Result<Option<f64>, ()> {
            // 7 is refused for the first coordinate, whose best is there.
            if m[0] == 7 {
                return Ok(None);
            }
            Ok(Some((m[0] as f64 - 7.0).powi(2) + (m[1] as f64 - 3.0).powi(2)))
        };
        let found = coordinate_descent([0, 0], &[Coord(0), Coord(1)], error).unwrap();
        // Ties between 6 and 8 keep the smaller.
        assert_eq!(found, [6, 3]);
    }
}
