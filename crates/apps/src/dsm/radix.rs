//! radix: SPLASH-2's integer radix sort (HPCA 1999 Table 2: "Integer radix
//! sort", 4M integers).
//!
//! The keys sit in two shared arrays homed in blocks over the nodes; thread
//! t owns the t-th contiguous block of positions in both. Each pass sorts
//! stably on one digit, least significant first, moving every key from one
//! array to the other:
//! 1. every thread counts its keys per digit value and stores its
//!    histogram as its row of the shared `hist` (threads x buckets);
//! 2. the global prefix, through shared arrays: digit values are dealt out
//!    in blocks to threads; a thread reads its block's column of every
//!    thread's histogram, and writes back, for every thread, how many keys
//!    with each of its digits come from threads before it (`rank`), and
//!    its digits' totals (`density`);
//! 3. every thread reads `density` and its row of `rank`, from which the
//!    position of its first key of each digit follows (all keys of smaller
//!    digits, plus this digit's keys at earlier threads), and writes each
//!    key to its position in the other array. A thread's keys of one digit
//!    land at consecutive positions, so they are written as one run; runs
//!    go to every thread's block: the all-to-all permutation HPCA 1999
//!    Section 4 describes for radix, with false sharing where two threads'
//!    runs meet inside a block.
//!
//! Barriers separate the steps, as in SPLASH-2.

use super::{DsmProgram, Phases};
use finegrain_core::{AmError, Proc, Work};
use finegrain_dsm::{DsmBuilder, DsmProc, Home, Shared};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Work to count one key, from `histogram`'s loop: load the key, shift
/// and mask out its digit, load, increment and store its count, the
/// loop's counter and branch.
pub const HISTOGRAM: Work = Work::new(0, 0, 5, 2, 1);

/// Work per histogram entry of a prefix: load the running sum and the
/// count, store the rank and the new sum, the add, the index and the
/// loop.
pub const PREFIX: Work = Work::new(0, 0, 4, 2, 2);

/// Work to route one key, from `permute`'s loop: load the key, its digit
/// (shift, mask), load its run's next position, store the key and the
/// bumped position, the loop.
pub const PERMUTE: Work = Work::new(0, 0, 5, 2, 2);

/// Shared arrays a program allocated in its layout. They are not part of
/// its configuration: serde skips them and `==` ignores them.
#[derive(Clone, Copy)]
pub struct Laid<T>(Option<T>);

impl<T> Default for Laid<T> {
    fn default() -> Laid<T> {
        Laid(None)
    }
}

impl<T> PartialEq for Laid<T> {
    fn eq(&self, _: &Laid<T>) -> bool {
        true
    }
}

impl<T> fmt::Debug for Laid<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "laid out" } else { "not laid out" })
    }
}

impl<T> Laid<T> {
    pub fn set(&mut self, arrays: T) {
        self.0 = Some(arrays);
    }

    /// The arrays, or an error naming `program` when its layout was not
    /// made (or was refused) before the run.
    pub fn get(&self, program: &str) -> Result<&T, AmError> {
        self.0.as_ref().ok_or_else(|| {
            AmError::NotAllowed(format!("{program} ran without its shared arrays: its layout was not made first"))
        })
    }
}

/// The sort's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Radix {
    pub keys: u64,
    /// Keys are uniform in 0..2^key_bits.
    pub key_bits: u32,
    /// Bits sorted per pass (the radix is 2^radix_bits).
    pub radix_bits: u32,
    pub seed: u64,
    #[serde(skip)]
    arrays: Laid<Arrays>,
}

#[derive(Clone, Copy, Debug)]
struct Arrays {
    /// Threads the layout was made for: `hist` and `rank` have a row for
    /// each of them and no more.
    threads: u32,
    keys: [Shared; 2],
    /// Row t: thread t's histogram of the pass's digit.
    hist: Shared,
    /// Row t: for each digit, keys with it at threads before t.
    rank: Shared,
    /// For each digit, keys with it in all.
    density: Shared,
}

impl Radix {
    pub fn new(keys: u64, key_bits: u32, radix_bits: u32, seed: u64) -> Radix {
        Radix { keys, key_bits, radix_bits, seed, arrays: Laid::default() }
    }

    /// HPCA 1999 Table 2's 4M integers, with SPLASH-2's default radix
    /// (1024) and largest key (2^19): two passes.
    pub fn paper(seed: u64) -> Radix {
        Radix::new(4 << 20, 19, 10, seed)
    }

    /// 64K 16-bit keys, radix 256: two passes, 1K keys per thread on 64
    /// threads (the paper's 64K per thread against its radix of 1024 would
    /// be far too long to simulate many times).
    pub fn quick(seed: u64) -> Radix {
        Radix { keys: 64 << 10, key_bits: 16, radix_bits: 8, ..Radix::paper(seed) }
    }

    /// 1K 10-bit keys, radix 16: three passes, so the sorted keys end in
    /// the second array.
    pub fn tiny(seed: u64) -> Radix {
        Radix { keys: 1024, key_bits: 10, radix_bits: 4, ..Radix::paper(seed) }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(1..=1 << 28).contains(&self.keys) {
            return Err(format!("radix: invalid keys = {}; allowed 1..=268435456", self.keys));
        }
        if !(1..=64).contains(&self.key_bits) {
            return Err(format!("radix: invalid key_bits = {}; allowed 1..=64", self.key_bits));
        }
        if !(1..=16).contains(&self.radix_bits) || self.radix_bits > self.key_bits {
            return Err(format!(
                "radix: invalid radix_bits = {}; allowed 1..=16 and at most key_bits ({})",
                self.radix_bits, self.key_bits
            ));
        }
        Ok(())
    }

    fn passes(&self) -> u32 {
        self.key_bits.div_ceil(self.radix_bits)
    }

    fn buckets(&self) -> u64 {
        1 << self.radix_bits
    }

    fn digit(&self, key: u64, pass: u32) -> usize {
        let shift = pass * self.radix_bits;
        if shift >= 64 {
            return 0;
        }
        ((key >> shift) & (self.buckets() - 1)) as usize
    }
}

/// The seeded keys.
pub fn input(seed: u64, n: u64, bits: u32) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mask = if bits >= 64 { u64::MAX } else { (1 << bits) - 1 };
    (0..n).map(|_| rng.gen::<u64>() & mask).collect()
}

/// Thread t's block of `n` items among `threads`: contiguous, sizes
/// differing by at most one.
pub fn block(n: u64, threads: u32, t: u32) -> std::ops::Range<u64> {
    let (p, t) = (threads as u64, t as u64);
    t * n / p..(t + 1) * n / p
}

async fn timed_barrier<P: Proc>(d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<(), AmError> {
    let t0 = d.now();
    d.barrier().await?;
    phases.add("barrier", d.now() - t0);
    Ok(())
}

impl Radix {
    /// Step 1: this thread's histogram, stored as its row of `hist`.
    async fn histogram<P: Proc>(&self, d: &DsmProc<'_, P>, a: &Arrays, keys: &[u64], pass: u32) -> Result<(), AmError> {
        let mut h = vec![0u64; self.buckets() as usize];
        for &k in keys {
            h[self.digit(k, pass)] += 1;
        }
        d.charge_work(HISTOGRAM * keys.len() as u64);
        d.write_from(a.hist, d.rank() as u64 * self.buckets(), &h).await
    }

    /// Step 2: the prefix over threads of this thread's block of digits.
    async fn prefix<P: Proc>(&self, d: &DsmProc<'_, P>, a: &Arrays) -> Result<(), AmError> {
        let (b, threads) = (self.buckets(), d.ranks());
        let mine = block(b, threads, d.rank());
        let width = (mine.end - mine.start) as usize;
        if width == 0 {
            return Ok(());
        }
        let mut counts = vec![0u64; width];
        let mut running = vec![0u64; width];
        // Read every thread's counts before writing any rank, starting
        // after this thread so that the threads spread their reads.
        let mut all = vec![0u64; width * threads as usize];
        for k in 1..=threads {
            let t = (d.rank() + k) % threads;
            d.read_into(a.hist, t as u64 * b + mine.start, &mut counts).await?;
            all[t as usize * width..][..width].copy_from_slice(&counts);
        }
        let mut ranks = vec![0u64; width * threads as usize];
        for t in 0..threads as usize {
            for i in 0..width {
                ranks[t * width + i] = running[i];
                running[i] += all[t * width + i];
            }
        }
        d.charge_work(PREFIX * (width as u64 * threads as u64));
        for k in 1..=threads {
            let t = (d.rank() + k) % threads;
            d.write_from(a.rank, t as u64 * b + mine.start, &ranks[t as usize * width..][..width]).await?;
        }
        d.write_from(a.density, mine.start, &running).await
    }

    /// Step 3: every key of this thread written to its place in `dst`.
    async fn permute<P: Proc>(
        &self,
        d: &DsmProc<'_, P>,
        a: &Arrays,
        keys: &[u64],
        dst: Shared,
        pass: u32,
    ) -> Result<(), AmError> {
        let b = self.buckets();
        let mut density = vec![0u64; b as usize];
        d.read_into(a.density, 0, &mut density).await?;
        let mut start = vec![0u64; b as usize];
        d.read_into(a.rank, d.rank() as u64 * b, &mut start).await?;
        let mut base = 0;
        for (s, n) in start.iter_mut().zip(&density) {
            *s += base;
            base += n;
        }
        let mut runs: Vec<Vec<u64>> = vec![Vec::new(); b as usize];
        for &k in keys {
            runs[self.digit(k, pass)].push(k);
        }
        d.charge_work(PREFIX * b + PERMUTE * keys.len() as u64);
        for (run, &s) in runs.iter().zip(&start) {
            if !run.is_empty() {
                d.write_from(dst, s, run).await?;
            }
        }
        Ok(())
    }
}

impl DsmProgram for Radix {
    /// This thread's block of the sorted keys.
    type Answer = Vec<u64>;

    fn name(&self) -> &'static str {
        "radix"
    }

    fn input(&self) -> String {
        let paper = if *self == Radix::paper(self.seed) {
            "HPCA 1999 Table 2's input"
        } else {
            "HPCA 1999 Table 2: 4M integers"
        };
        format!(
            "{} {}-bit keys, radix {} ({} passes), seed {}; {paper}",
            self.keys,
            self.key_bits,
            self.buckets(),
            self.passes(),
            self.seed
        )
    }

    fn layout(&mut self, b: &mut DsmBuilder) {
        if self.validate().is_err() {
            // `run` reports the error; nothing worth allocating.
            return;
        }
        let n = self.keys;
        let keys = [b.alloc_with(input(self.seed, n, self.key_bits), Home::Blocked), b.alloc(n, Home::Blocked)];
        // One row per thread of the run (the builder knows the DSM's
        // shape), so the arrays take no more pages than the run needs and
        // any thread count fits. The rows keep round-robin pages, which
        // spread them over the nodes: homing row t at thread t's node
        // would make that thread's own accesses local, but would change
        // the simulated times, so it is left for a change of its own.
        let threads = b.nodes() * b.threads_per_node();
        let rows = threads as u64 * self.buckets();
        let hist = b.alloc(rows, Home::RoundRobin);
        let rank = b.alloc(rows, Home::RoundRobin);
        let density = b.alloc(self.buckets(), Home::Blocked);
        self.arrays.set(Arrays { threads, keys, hist, rank, density });
    }

    async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<Vec<u64>, AmError> {
        self.validate().map_err(AmError::NotAllowed)?;
        let a = *self.arrays.get("radix")?;
        // `hist` and `rank` have rows for the layout's threads only. Arrays
        // laid out with another builder (another shape) are refused here,
        // naming both counts, rather than failing later on an index.
        if d.ranks() != a.threads {
            return Err(AmError::NotAllowed(format!(
                "radix laid out for {} threads but run on {}",
                a.threads,
                d.ranks()
            )));
        }
        let mine = block(self.keys, d.ranks(), d.rank());
        let mut keys = vec![0u64; (mine.end - mine.start) as usize];
        for pass in 0..self.passes() {
            let (src, dst) = (a.keys[pass as usize % 2], a.keys[(pass as usize + 1) % 2]);
            let t0 = d.now();
            d.read_into(src, mine.start, &mut keys).await?;
            self.histogram(d, &a, &keys, pass).await?;
            phases.add("histogram", d.now() - t0);
            timed_barrier(d, phases).await?;
            let t0 = d.now();
            self.prefix(d, &a).await?;
            phases.add("prefix", d.now() - t0);
            timed_barrier(d, phases).await?;
            let t0 = d.now();
            self.permute(d, &a, &keys, dst, pass).await?;
            phases.add("permute", d.now() - t0);
            timed_barrier(d, phases).await?;
        }
        d.read_into(a.keys[self.passes() as usize % 2], mine.start, &mut keys).await?;
        Ok(keys)
    }

    fn check(&self, answers: &[&Vec<u64>]) -> Result<(), String> {
        self.validate()?;
        let mut want = input(self.seed, self.keys, self.key_bits);
        want.sort_unstable();
        let threads = answers.len() as u32;
        for (t, got) in answers.iter().enumerate() {
            let range = block(self.keys, threads, t as u32);
            let expect = &want[range.start as usize..range.end as usize];
            if got.len() != expect.len() {
                return Err(format!(
                    "radix: thread {t} holds {} keys; the sorted input gives it {}",
                    got.len(),
                    expect.len()
                ));
            }
            if let Some(i) = (0..expect.len()).find(|&i| got[i] != expect[i]) {
                return Err(format!(
                    "radix: key {} (thread {t}'s {i}) is {}; the sorted input has {}",
                    range.start + i as u64,
                    got[i],
                    expect[i]
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The passes done sequentially (histogram, prefix, stable scatter)
    /// sort the input.
    #[test]
    fn least_significant_digit_passes_sort_the_keys() {
        let cfg = Radix::tiny(4);
        let mut keys = input(cfg.seed, cfg.keys, cfg.key_bits);
        let mut want = keys.clone();
        want.sort_unstable();
        for pass in 0..cfg.passes() {
            let mut count = vec![0usize; cfg.buckets() as usize + 1];
            for &k in &keys {
                count[cfg.digit(k, pass) + 1] += 1;
            }
            for i in 1..count.len() {
                count[i] += count[i - 1];
            }
            let mut out = vec![0; keys.len()];
            for &k in &keys {
                let d = cfg.digit(k, pass);
                out[count[d]] = k;
                count[d] += 1;
            }
            keys = out;
        }
        assert_eq!(keys, want);
    }

    #[test]
    fn blocks_cover_the_keys_in_order() {
        let all: Vec<u64> = (0..7).flat_map(|t| block(100, 7, t)).collect();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn check_names_a_misplaced_key() {
        let cfg = Radix::tiny(1);
        let mut sorted = input(cfg.seed, cfg.keys, cfg.key_bits);
        sorted.sort_unstable();
        let (a, b) = sorted.split_at(512);
        assert!(cfg.check(&[&a.to_vec(), &b.to_vec()]).is_ok());
        let mut bad = b.to_vec();
        bad[0] = 5000;
        let e = cfg.check(&[&a.to_vec(), &bad]).unwrap_err();
        assert!(e.starts_with("radix: key 512 (thread 1's 0) is 5000"), "{e}");
    }

    #[test]
    fn bad_digits_are_refused() {
        let e = Radix { radix_bits: 20, ..Radix::tiny(1) }.validate().unwrap_err();
        assert!(e.contains("radix_bits = 20"), "{e}");
    }

    /// `hist` and `rank` have one row per thread of the builder's shape.
    #[test]
    fn layout_sizes_the_rows_for_the_run() {
        let mut cfg = Radix::tiny(1);
        let mut b = finegrain_dsm::Dsm::builder(3, 5, finegrain_dsm::DsmConfig::default()).unwrap();
        cfg.layout(&mut b);
        let a = *cfg.arrays.get("radix").unwrap();
        assert_eq!(a.threads, 15);
        assert_eq!(a.hist.len(), 15 * cfg.buckets());
        assert_eq!(a.rank.len(), 15 * cfg.buckets());
    }

    /// Arrays laid out for another shape are refused before any access.
    #[test]
    fn a_run_on_another_shape_than_the_layout_is_refused() {
        use crate::dsm::testing::run_sim;
        struct OtherShape(Radix);
        impl DsmProgram for OtherShape {
            type Answer = Vec<u64>;
            fn name(&self) -> &'static str {
                "radix"
            }
            fn input(&self) -> String {
                self.0.input()
            }
            fn layout(&mut self, _: &mut DsmBuilder) {
                let mut b = finegrain_dsm::Dsm::builder(1, 1, finegrain_dsm::DsmConfig::default()).unwrap();
                self.0.layout(&mut b);
            }
            async fn run<P: Proc>(&self, d: &DsmProc<'_, P>, phases: &mut Phases) -> Result<Vec<u64>, AmError> {
                self.0.run(d, phases).await
            }
            fn check(&self, answers: &[&Vec<u64>]) -> Result<(), String> {
                self.0.check(answers)
            }
        }
        let e = run_sim(OtherShape(Radix::tiny(1)), 2, 2).unwrap_err();
        assert!(e.contains("radix laid out for 1 threads but run on 4"), "{e}");
    }

    /// More threads than the 256 the rows were once fixed at: 5 nodes of
    /// 60 (the simulator allows at most 64 processors a node).
    #[test]
    fn runs_right_on_300_threads() {
        use crate::dsm::testing::run_sim;
        assert_eq!(run_sim(Radix::tiny(8), 5, 60).unwrap().len(), 300);
    }

    #[test]
    fn runs_right_on_the_simulator_and_natively() {
        use crate::dsm::testing::{run_native, run_sim};
        let sim = run_sim(Radix::tiny(5), 2, 2).unwrap();
        assert_eq!(sim.len(), 4);
        assert!(sim.iter().all(|r| r.total > 0));
        assert_eq!(run_native(Radix::tiny(6), 2, 2).unwrap().len(), 4);
        // An odd thread count, with rows for exactly its 3 threads.
        assert_eq!(run_sim(Radix::tiny(7), 3, 1).unwrap().len(), 3);
    }
}
