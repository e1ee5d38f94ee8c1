//! A cheap monotonic clock for per-thread time accounting: the time-stamp
//! counter on x86_64 (a few nanoseconds to read, against ~20 for
//! `Instant::now`), converted to nanoseconds with a rate measured once.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[cfg(target_arch = "x86_64")]
fn ticks() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 processor and has no memory
    // effects; reading it cannot fault.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn ticks() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Ticks per nanosecond, measured over 20 ms the first time it is needed.
fn rate() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        let (t0, i0) = (ticks(), Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        let (t1, i1) = (ticks(), Instant::now());
        (t1.wrapping_sub(t0)) as f64 / (i1 - i0).as_nanos().max(1) as f64
    })
}

/// A point in time, in clock ticks.
#[derive(Clone, Copy, Debug)]
pub struct Stamp(u64);

impl Stamp {
    pub fn now() -> Stamp {
        Stamp(ticks())
    }

    /// Nanoseconds since this stamp.
    pub fn elapsed_ns(self) -> u64 {
        Self::now().since(self)
    }

    /// Nanoseconds from `earlier` to this stamp.
    pub fn since(self, earlier: Stamp) -> u64 {
        (self.0.saturating_sub(earlier.0) as f64 / rate()) as u64
    }

    /// The stamp `ns` nanoseconds after this one.
    pub fn plus_ns(self, ns: f64) -> Stamp {
        // Saturates: a deadline past the end of time is never reached,
        // which is what `work(u64::MAX)` asks for.
        Stamp(self.0.saturating_add((ns * rate()) as u64))
    }

    /// The raw tick value (to carry a time stamp in a message).
    pub fn ticks(self) -> u64 {
        self.0
    }

    pub fn from_ticks(t: u64) -> Stamp {
        Stamp(t)
    }

    pub fn reached(self) -> bool {
        ticks() >= self.0
    }
}

/// Nanoseconds since the process first asked (a common origin for every
/// thread's [`finegrain_core::Proc::now`]).
pub fn now_ns() -> u64 {
    static ORIGIN: OnceLock<Stamp> = OnceLock::new();
    Stamp::now().since(*ORIGIN.get_or_init(Stamp::now))
}

/// Calibrates the clock now (so the first measurement is not delayed).
pub fn calibrate() {
    let _ = rate();
}

#[cfg(test)]
mod tests {
    use super::*;

    // Bounds a preempted test thread cannot break: a sleep only overshoots
    // (a loaded machine may add tens of milliseconds, a miscalibrated clock
    // would be off by orders of magnitude), and a deadline is checked as
    // not reached only when it is seconds away.
    #[test]
    fn measures_a_sleep() {
        calibrate();
        let t = Stamp::now();
        std::thread::sleep(Duration::from_millis(5));
        let ns = t.elapsed_ns();
        assert!((4_000_000..1_000_000_000).contains(&ns), "{ns}");
        let far = Stamp::now().plus_ns(10e9);
        assert!(!far.reached());
        let soon = Stamp::now().plus_ns(1e6);
        std::thread::sleep(Duration::from_millis(2));
        assert!(soon.reached());
    }
}
