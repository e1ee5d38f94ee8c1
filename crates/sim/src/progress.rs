//! How far the simulation running on this thread has got, for a caller
//! that shows a progress bar while one long run goes on.
//!
//! A scoped observer rather than a parameter: the simulator is called
//! through the workloads' own `simulate` functions, and progress is a
//! concern of the program showing it, not of any workload. The counter is
//! only written, never read, by the engine, so a run's results cannot
//! depend on it.

use std::cell::RefCell;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

thread_local! {
    static OBSERVER: RefCell<Option<Arc<AtomicU64>>> = const { RefCell::new(None) };
}

/// Runs `f` with `answered` kept up to date (every few thousand events)
/// with the requests answered so far by every simulation `f` runs on this
/// thread.
pub fn observed<R>(answered: &Arc<AtomicU64>, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<Arc<AtomicU64>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            OBSERVER.with(|o| *o.borrow_mut() = self.0.take());
        }
    }
    let _reset = Reset(OBSERVER.with(|o| o.borrow_mut().replace(answered.clone())));
    f()
}

/// The counter of the caller observing this thread, if any.
pub(crate) fn observer() -> Option<Arc<AtomicU64>> {
    OBSERVER.with(|o| o.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_observer_is_set_only_inside_and_restored_after() {
        let outer = Arc::new(AtomicU64::new(0));
        let inner = Arc::new(AtomicU64::new(0));
        assert!(observer().is_none());
        observed(&outer, || {
            assert!(Arc::ptr_eq(&observer().unwrap(), &outer));
            observed(&inner, || assert!(Arc::ptr_eq(&observer().unwrap(), &inner)));
            assert!(Arc::ptr_eq(&observer().unwrap(), &outer));
        });
        assert!(observer().is_none());
    }
}
