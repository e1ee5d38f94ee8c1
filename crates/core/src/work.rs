//! Computation a program counted: the operations its kernel executed, not
//! how long they took.
//!
//! The papers' simulators ran the applications' instructions directly; a
//! finegrain program runs natively and tells the simulator what it did.
//! Each kernel counts its operations by reading its own inner loop (once
//! per kernel, written beside it as a constant, not an event per access),
//! and the machine's [`ComputeParams`](crate::config::ComputeParams) turn
//! the counts into cycles and into the private accesses the cache model
//! samples misses for. One cost model per preset replaces per-application
//! cycle guesses.

use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign, Mul};

/// Operations executed by a stretch of computation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Work {
    /// Pipelined floating-point operations (add, subtract, multiply,
    /// compare, convert).
    pub flops: u64,
    /// Floating-point divides and square roots, which do not pipeline.
    pub long_flops: u64,
    /// Integer and control instructions: address arithmetic, loop
    /// counters, compares and branches, shifts and masks.
    pub int_ops: u64,
    /// Loads of the thread's private data (shared-memory accesses are the
    /// DSM's, charged where they happen).
    pub loads: u64,
    /// Stores to the thread's private data.
    pub stores: u64,
}

impl Work {
    pub const NONE: Work = Work { flops: 0, long_flops: 0, int_ops: 0, loads: 0, stores: 0 };

    /// A kernel's counts: `flops`, `long_flops`, `int_ops`, `loads`,
    /// `stores`, in that order.
    pub const fn new(flops: u64, long_flops: u64, int_ops: u64, loads: u64, stores: u64) -> Work {
        Work { flops, long_flops, int_ops, loads, stores }
    }

    /// `n` repetitions of this work.
    pub const fn times(self, n: u64) -> Work {
        Work {
            flops: self.flops.saturating_mul(n),
            long_flops: self.long_flops.saturating_mul(n),
            int_ops: self.int_ops.saturating_mul(n),
            loads: self.loads.saturating_mul(n),
            stores: self.stores.saturating_mul(n),
        }
    }

    /// This work followed by `other`.
    pub const fn plus(self, other: Work) -> Work {
        Work {
            flops: self.flops.saturating_add(other.flops),
            long_flops: self.long_flops.saturating_add(other.long_flops),
            int_ops: self.int_ops.saturating_add(other.int_ops),
            loads: self.loads.saturating_add(other.loads),
            stores: self.stores.saturating_add(other.stores),
        }
    }

    /// Instructions issued.
    pub const fn instructions(&self) -> u64 {
        self.flops
            .saturating_add(self.long_flops)
            .saturating_add(self.int_ops)
            .saturating_add(self.loads)
            .saturating_add(self.stores)
    }

    /// Private memory accesses (loads and stores).
    pub const fn accesses(&self) -> u64 {
        self.loads.saturating_add(self.stores)
    }

    pub const fn is_none(&self) -> bool {
        self.instructions() == 0
    }
}

impl Add for Work {
    type Output = Work;
    fn add(self, other: Work) -> Work {
        self.plus(other)
    }
}

impl AddAssign for Work {
    fn add_assign(&mut self, other: Work) {
        *self = self.plus(other);
    }
}

impl Mul<u64> for Work {
    type Output = Work;
    fn mul(self, n: u64) -> Work {
        self.times(n)
    }
}

impl std::iter::Sum for Work {
    fn sum<I: Iterator<Item = Work>>(iter: I) -> Work {
        iter.fold(Work::NONE, Work::plus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_and_repeat_field_by_field() {
        let w = Work::new(2, 1, 3, 4, 5);
        assert_eq!(w * 3, Work::new(6, 3, 9, 12, 15));
        assert_eq!(w + Work::new(1, 0, 0, 0, 1), Work::new(3, 1, 3, 4, 6));
        assert_eq!(w.instructions(), 15);
        assert_eq!(w.accesses(), 9);
        assert_eq!([w, w].into_iter().sum::<Work>(), w * 2);
        assert!(Work::NONE.is_none() && !w.is_none());
    }
}
