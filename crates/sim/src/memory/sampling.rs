//! The cache misses of synthetic computation, sampled instead of simulated
//! access by access: a compute burst of `n` uniformly random accesses over
//! `S` sets touches each of the `F` foreign sets with probability
//! `1 - exp(-n / S)`; the number touched is drawn from that binomial and the
//! sets chosen at random, which is exact in distribution and costs
//! O(misses) instead of O(accesses).

use super::cache::{ABSENT, SHARED, SHARED_OWN, TAG_MASK};
use super::node::{NodeMemory, Outcome};
use finegrain_core::Access;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};

impl NodeMemory {
    /// Cache misses of a compute burst by `proc` making `accesses` random
    /// accesses to its private segment, `write_fraction` of them writes.
    /// Sets whose own line is gone are touched by any access; sets whose own
    /// line is shared matter only to writes (an upgrade). For each kind, the
    /// number of sets a burst of `n` accesses (or writes) touches is drawn
    /// from Binomial(F, 1 - exp(-n / S)) and the sets are chosen at random,
    /// which is exact in distribution and costs O(touched) instead of
    /// O(accesses). Work resumed after an interrupt passes the epoch its
    /// first part was sampled at (`newer_than`): only sets that became
    /// foreign since are sampled again, so no access is counted twice.
    /// Returns the stall cycles (transactions issued from cycle `t`) and the
    /// epoch to pass if this work is interrupted in turn.
    #[allow(clippy::too_many_arguments)]
    pub fn compute_misses(
        &mut self,
        now: u64,
        t: u64,
        proc: usize,
        accesses: f64,
        write_fraction: f64,
        newer_than: Option<u32>,
        rng: &mut ChaCha8Rng,
    ) -> (u64, u32) {
        // With interference off the misses below are waived (free), but
        // still sampled: the own lines they bring back evict what took their
        // sets, as with it on, and upgrades of shared own lines are data
        // placement, not interference.
        let Some(own) = self.caches[proc].own_thread else {
            return (0, 0);
        };
        if accesses <= 0.0 {
            return (0, self.caches[proc].foreign.epoch);
        }
        let mut stall = 0;
        for (kind, n) in [(ABSENT, accesses), (SHARED_OWN, accesses * write_fraction)] {
            let touch = Touch::after(n, self.sets);
            let mut picks = std::mem::take(&mut self.picks);
            self.pick_sets(proc, kind, touch, newer_than, rng, &mut picks);
            for &set in &picks {
                let line = self.map.segment_line(own, set);
                let held = self.tags.get(proc, set as usize);
                let (present, shared) = (held & TAG_MASK == own as u16, held & SHARED != 0);
                let write = match kind {
                    SHARED_OWN => true,
                    _ => rng.gen_bool(write_fraction),
                };
                if present && (!write || !shared) {
                    continue; // repaired meanwhile, or a read of a shared copy
                }
                let kind = if write { Access::Write } else { Access::Read };
                // A waived miss is a hit, which the burst's work already
                // counts: only real misses stall.
                let (latency, outcome) = self.access(now, t + stall, proc, line, kind);
                if outcome != Outcome::Hit {
                    stall += latency;
                }
            }
            self.picks = picks;
        }
        // Work resumed after an interrupt passes back the epoch returned
        // here and asks only for what joins the lists after it.
        let foreign = &mut self.caches[proc].foreign;
        foreign.forget_joined();
        (stall, foreign.epoch)
    }

    /// Draws the sets of list `kind` a burst touches (each with probability
    /// `touch.p`), distinct, optionally only among those newer than an epoch, into
    /// `out` (a buffer kept across bursts: this runs once per compute burst).
    fn pick_sets(
        &self,
        proc: usize,
        kind: usize,
        touch: Touch,
        newer_than: Option<u32>,
        rng: &mut ChaCha8Rng,
        out: &mut Vec<u32>,
    ) {
        out.clear();
        let list = &self.caches[proc].foreign.lists[kind];
        match newer_than {
            None => {
                let touched = binomial(list.len() as u64, touch, rng) as usize;
                distinct_indices(list.len(), touched, rng, out);
                for s in out.iter_mut() {
                    *s = list[*s as usize].0;
                }
            }
            Some(mark) => {
                self.caches[proc].foreign.joined_after(kind, mark, out);
                let touched = binomial(out.len() as u64, touch, rng) as usize;
                for i in 0..touched {
                    let j = rng.gen_range(i..out.len());
                    out.swap(i, j);
                }
                out.truncate(touched);
            }
        }
    }
}

/// `k` distinct indices below `len`, uniformly, appended to `out` (empty):
/// rejection while few are wanted (the usual case), a partial shuffle
/// otherwise.
fn distinct_indices(len: usize, k: usize, rng: &mut ChaCha8Rng, out: &mut Vec<u32>) {
    let k = k.min(len);
    if k * 4 <= len {
        while out.len() < k {
            let i = rng.gen_range(0..len);
            if !out.contains(&(i as u32)) {
                out.push(i as u32);
            }
        }
    } else {
        out.extend(0..len as u32);
        for i in 0..k {
            let j = rng.gen_range(i..len);
            out.swap(i, j);
        }
        out.truncate(k);
    }
}

/// The chance that a burst of `n` uniformly random accesses over `sets`
/// sets touches a given one: p = 1 - exp(-n / sets). Its complement's
/// logarithm is kept too, so that q^k is one `exp` rather than a `powf`
/// (this runs twice per compute burst).
#[derive(Clone, Copy, Debug)]
struct Touch {
    p: f64,
    ln_q: f64,
}

impl Touch {
    fn after(n: f64, sets: u32) -> Touch {
        let ln_q = -n / sets as f64;
        Touch { p: 1.0 - ln_q.exp(), ln_q }
    }
}

/// Draws from Binomial(n, touch.p). Compute bursts touch few foreign sets,
/// so the mean is usually small: inversion from k = 0 then needs about
/// `mean` cheap steps, much less than a general sampler's setup.
fn binomial(n: u64, touch: Touch, rng: &mut ChaCha8Rng) -> u64 {
    let p = touch.p;
    let mean = n as f64 * p;
    if mean > 40.0 || p > 0.5 {
        return Binomial::new(n, p).map(|d| d.sample(rng)).unwrap_or(0);
    }
    let q = 1.0 - p;
    let mut pmf = (n as f64 * touch.ln_q).exp();
    let mut cdf = pmf;
    let u: f64 = rng.gen();
    let mut k = 0;
    while u > cdf && k < n {
        pmf *= (n - k) as f64 / (k + 1) as f64 * p / q;
        k += 1;
        cdf += pmf;
        if pmf < 1e-300 {
            break;
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::AddressMap;
    use finegrain_core::config::MachineConfig;
    use finegrain_core::Region;
    use rand::SeedableRng;

    #[test]
    fn small_binomial_has_the_right_mean() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for (n, p) in [(40u64, 0.01), (200, 0.02), (1000, 0.3), (5, 0.9)] {
            let draws = 20_000;
            let sum: u64 = (0..draws).map(|_| binomial(n, Touch { p, ln_q: (-p).ln_1p() }, &mut rng)).sum();
            let mean = sum as f64 / draws as f64;
            let expect = n as f64 * p;
            assert!((mean - expect).abs() < 0.05 * expect + 0.02, "n={n} p={p}: {mean} vs {expect}");
        }
    }

    fn machine() -> MachineConfig {
        MachineConfig::load("hpca97").unwrap()
    }

    fn node(m: &MachineConfig, owners: &[Option<u32>]) -> NodeMemory {
        let threads = owners.iter().flatten().count() as u32;
        NodeMemory::new(m, AddressMap::new(m, &[2048]).unwrap(), owners, threads)
    }

    #[test]
    fn compute_misses_repair_foreign_sets() {
        let m = machine();
        let mut n = node(&m, &[Some(0)]);
        let (first, count) = n.map().lines(Region::ProtocolTable, 0, 4096, 1).unwrap();
        n.access_lines(0, 0, 0, first, count, Access::Write);
        assert_eq!(n.foreign_sets(0), 128);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // A long burst touches every set: all foreign sets are refilled.
        let (stall, _) = n.compute_misses(0, 0, 0, 50_000_000.0 / 8.0, 0.3, None, &mut rng);
        assert_eq!(n.foreign_sets(0), 0);
        assert!(stall >= 128 * m.bus.memory_latency);
    }

    #[test]
    fn a_compute_burst_stalls_only_on_the_misses_it_records() {
        // Processor 1 reads 64 of processor 0's own lines (so processor 0
        // must upgrade them to write) and then 64 other lines of another
        // thread's segment in processor 0's cache (displacing own lines).
        // With each effect on or off, the stall of a long burst is exactly
        // the misses it records: a waived miss stalls nothing.
        for (placement, interference) in [(true, true), (false, true), (true, false), (false, false)] {
            let mut m = machine();
            m.effects.data_placement = placement;
            m.effects.cache_interference = interference;
            let mut n = node(&m, &[Some(0), Some(1), Some(2)]);
            for set in 0..64 {
                let own = n.map().segment_line(0, set);
                n.access(0, 0, 1, own, Access::Read);
                let other = n.map().segment_line(2, 1000 + set);
                n.access(0, 0, 0, other, Access::Read);
            }
            let before = n.misses[0];
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let (stall, _) = n.compute_misses(0, 100_000, 0, 50_000_000.0 / 8.0, 0.3, None, &mut rng);
            let after = &n.misses[0];
            let upgrades = after.placement_cycles - before.placement_cycles;
            let refetches = after.interference_cycles - before.interference_cycles;
            let case = format!("placement {placement}, interference {interference}");
            assert_eq!(stall, upgrades + refetches, "{case}");
            assert_eq!((upgrades > 0, refetches > 0), (placement, interference), "{case}");
        }
    }
}
