//! A lock for critical sections of a few hundred nanoseconds (a node's
//! dispatch queue): it spins, then yields, and never sleeps in the kernel.
//! A futex-based mutex parks a waiter when the holder is slow to release,
//! and waking it costs microseconds, more than the critical section itself;
//! yielding still lets a descheduled holder run when threads outnumber
//! cores.

use crossbeam_utils::CachePadded;
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, Ordering};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, Ordering};

/// Looks at a held lock before yielding the core.
const YIELD_AFTER: u32 = 2048;

pub(crate) struct SpinLock<T> {
    /// On a line of its own: waiters polling it must not pull in the line
    /// the holder is writing.
    locked: CachePadded<AtomicBool>,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and at most one guard
// exists at a time (the acquire/release pair on `locked` orders the
// holders' accesses).
unsafe impl<T: Send> Sync for SpinLock<T> {}

pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    pub(crate) fn new(value: T) -> SpinLock<T> {
        SpinLock { locked: CachePadded::new(AtomicBool::new(false)), value: UnsafeCell::new(value) }
    }

    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        loop {
            // Test before test-and-set: waiters spin on a shared copy of the
            // line instead of stealing it from the holder.
            if self.looks_free()
                && self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                return SpinGuard { lock: self };
            }
            // One pause per look, not an exponential backoff: a pause costs
            // ~140 cycles on recent Intel cores, and a waiter backing off for
            // microseconds misses releases that come every few hundred
            // nanoseconds. A long wait means the holder was descheduled.
            spins += 1;
            #[cfg(loom)]
            loom::thread::yield_now(); // the model checker explores a spin only if it yields
            if spins.is_multiple_of(YIELD_AFTER) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

impl<T> SpinLock<T> {
    /// The plain load of test-and-test-and-set. Under the loom model
    /// checker a relaxed load may return a stale value every time it is
    /// retried, so a spin on it would never end in the model; there the
    /// compare-exchange alone (which always sees the latest value) decides.
    #[inline]
    fn looks_free(&self) -> bool {
        #[cfg(loom)]
        return true;
        #[cfg(not(loom))]
        return !self.locked.load(Ordering::Relaxed);
    }

    /// The lock if it is free now.
    pub(crate) fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        let free = self.looks_free()
            && self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok();
        // Not `then_some`: building a guard we do not own would release the
        // lock when it is dropped.
        if free {
            Some(SpinGuard { lock: self })
        } else {
            None
        }
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see the Sync argument).
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and the guard is borrowed mutably.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excludes_and_releases() {
        let lock = SpinLock::new(0u64);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        let mut g = lock.lock();
                        // Non-atomic read-modify-write: a second holder
                        // would lose increments.
                        let v = *g;
                        *g = v + 1;
                    }
                });
            }
        });
        assert_eq!(*lock.lock(), 40_000);
    }

    #[test]
    fn a_failed_try_lock_leaves_the_holder_alone() {
        let lock = SpinLock::new(());
        let held = lock.lock();
        assert!(lock.try_lock().is_none());
        assert!(lock.try_lock().is_none(), "still held after a failed attempt");
        drop(held);
        assert!(lock.try_lock().is_some());
    }
}

/// The lock under the loom model checker: two threads update data the lock
/// guards (a loom cell, whose accesses loom checks for races), in every
/// interleaving. A release that did not order the holder's writes before the
/// next holder's reads shows up as a causality violation.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    struct Guarded {
        lock: SpinLock<()>,
        count: loom::cell::UnsafeCell<u32>,
    }
    // SAFETY: `count` is touched only while `lock` is held.
    unsafe impl Sync for Guarded {}
    // SAFETY: nothing in it is tied to a thread.
    unsafe impl Send for Guarded {}

    fn add(g: &Guarded) {
        let _held = g.lock.lock();
        // SAFETY: the lock is held.
        g.count.with_mut(|c| unsafe { *c += 1 });
    }

    #[test]
    fn loom_spin_lock_orders_what_it_guards() {
        loom::model(|| {
            let g = Arc::new(Guarded { lock: SpinLock::new(()), count: loom::cell::UnsafeCell::new(0) });
            let other = g.clone();
            let t = loom::thread::spawn(move || add(&other));
            add(&g);
            if let Some(_held) = g.lock.try_lock() {
                // Either the other thread is done or has not started.
                // SAFETY: the lock is held.
                let n = g.count.with(|c| unsafe { *c });
                assert!(n == 1 || n == 2, "count {n}");
            }
            t.join().unwrap();
            // SAFETY: the other thread has finished.
            assert_eq!(g.count.with(|c| unsafe { *c }), 2);
        });
    }
}
