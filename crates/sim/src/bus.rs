//! A node's split-transaction memory bus, and the reservation calendar it
//! and the NI ports are made of.
//!
//! A processor activity (a handler, a burst of misses) is timed in one go,
//! so its bus transactions are reserved at future cycles. A transaction
//! issued later in event order but earlier in simulated time must not queue
//! behind those future reservations, so the calendar fills the earliest gap
//! at or after the request time that is long enough for the transaction.
//! Transactions therefore queue for the bus in (roughly) request-time order,
//! which is what a FIFO bus arbiter does.

use crate::stats::BusStats;
use finegrain_core::config::BusParams;

/// Busy time on a calendar: one interval [start, end), or a word train:
/// `len`-cycle intervals `period` apart from `start`, the last ending at
/// `end`. A processor moving a message's words reserves a train, and one
/// entry for it (instead of one per word) keeps the calendar short; other
/// transactions may still take the gaps between its words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Busy {
    start: u64,
    end: u64,
    len: u64,
    period: u64,
}

impl Busy {
    fn interval(start: u64, end: u64) -> Busy {
        Busy { start, end, len: end - start, period: end - start }
    }

    /// `count` intervals of `len`, `period` apart (`period` > `len`); one
    /// of them is a plain interval (`is_train` is false).
    fn train(start: u64, count: u64, len: u64, period: u64) -> Busy {
        Busy { start, end: start + (count - 1) * period + len, len, period }
    }

    fn is_train(&self) -> bool {
        self.end - self.start != self.len
    }

    fn words(&self) -> u64 {
        (self.end - self.start - self.len) / self.period + 1
    }

    fn word_start(&self, k: u64) -> u64 {
        self.start + k * self.period
    }

    /// Where a reservation of `occupancy` at or after `t` goes in the gaps
    /// of this train, if it fits before the train's last word ends, as
    /// trying the words one by one would find: the word it goes after, and
    /// its start. (It fits before the first word only if it ends by the
    /// train's start, which the caller checks.)
    fn gap_for(&self, t: u64, occupancy: u64) -> Option<(u64, u64)> {
        debug_assert!(t < self.end, "the search passes only trains that end after it");
        if occupancy > self.period - self.len {
            return None; // no gap is long enough
        }
        // The first word that ends after `t`: there is one, since `t` is
        // before the train's end.
        let k = if t < self.start + self.len { 0 } else { (t - self.start - self.len) / self.period + 1 };
        if k > 0 && t + occupancy <= self.word_start(k) {
            return Some((k - 1, t)); // the gap `t` is in is long enough
        }
        // Right after word k, in a gap long enough, unless it is the last.
        (k + 1 < self.words()).then(|| (k, self.word_start(k) + self.len))
    }
}

/// One resource reserved by intervals: a bus phase or an NI port.
#[derive(Clone, Debug, Default)]
pub struct Calendar {
    /// Busy time, sorted and non-overlapping (so the ends are sorted too,
    /// which lets a reservation binary-search its place).
    /// Entries before `head` are expired; they are dropped in batches.
    busy: Vec<Busy>,
    head: usize,
    /// Length beyond which expired intervals are looked for again.
    prune_at: usize,
    pub transactions: u64,
    pub busy_cycles: u64,
    pub wait_cycles: u64,
}

impl Calendar {
    /// Reserves `occupancy` cycles of bus at or after `t`; returns the cycle
    /// the transaction gets the bus. `now` is the simulation clock: nothing
    /// can be requested before it, so older intervals are forgotten.
    #[inline]
    pub fn reserve(&mut self, now: u64, t: u64, occupancy: u64) -> u64 {
        // Forgetting what ended by `now` changes no placement only so.
        debug_assert!(t >= now, "a reservation at {t} before the clock {now}");
        self.transactions += 1;
        self.busy_cycles += occupancy;
        if occupancy == 0 {
            return t;
        }
        // Common case: nothing is reserved after `t`.
        if self.clear_from(t) {
            self.push_after(now, t, t + occupancy);
            return t;
        }
        self.reserve_slow(now, t, occupancy)
    }

    /// Whether nothing is reserved after cycle `t`.
    fn clear_from(&self, t: u64) -> bool {
        self.busy.last().is_none_or(|last| last.end <= t)
    }

    /// Finds the earliest gap when reservations lie after `t`. (A split
    /// bus's data phases come here often: a read's is reserved ahead, at
    /// the end of its latency. Expired intervals end before `t`, so the
    /// search skips them whether or not they were forgotten yet.)
    #[inline(never)]
    fn reserve_slow(&mut self, now: u64, t: u64, occupancy: u64) -> u64 {
        self.prune(now);
        let mut start = t;
        let mut at = self.first_ending_after(start);
        while let Some(&b) = self.busy.get(at) {
            if b.start >= start + occupancy {
                break;
            }
            if b.is_train() {
                if let Some((word, gap_start)) = b.gap_for(start, occupancy) {
                    self.wait_cycles += gap_start - t;
                    self.split_insert(at, word, Busy::interval(gap_start, gap_start + occupancy));
                    return gap_start;
                }
            }
            start = start.max(b.end);
            at += 1;
        }
        self.wait_cycles += start - t;
        self.insert(at, Busy::interval(start, start + occupancy));
        start
    }

    /// The position of the first live interval that ends after `t`. The
    /// intervals reserved ahead of `t` are few and at the end (most live
    /// ones have ended by `t`: a DSM node's calendars held some 38, all
    /// but 4 of them before `t`), so it is looked for from the end, a few
    /// steps through adjacent entries, and by bisection only past those.
    #[inline(always)]
    fn first_ending_after(&self, t: u64) -> usize {
        const STEPS: usize = 8;
        let mut at = self.busy.len();
        for _ in 0..STEPS {
            if at == self.head || self.busy[at - 1].end <= t {
                return at;
            }
            at -= 1;
        }
        self.head + self.busy[self.head..at].partition_point(|b| b.end <= t)
    }

    /// Reserves `count` transactions issued back to back by one processor:
    /// each starts when the previous one has completed (`latency` after it
    /// got the bus). Returns when the last completes.
    pub fn reserve_train(&mut self, now: u64, t: u64, count: u64, occupancy: u64, latency: u64) -> u64 {
        if occupancy == 0 {
            self.transactions += count;
            return t + count * latency;
        }
        // Word by word while something is reserved ahead, then the rest as
        // on a clear calendar.
        let (mut t, mut count) = (t, count);
        while count > 0 && !self.clear_from(t) {
            t = self.reserve(now, t, occupancy) + latency;
            count -= 1;
        }
        if count == 0 {
            return t;
        }
        // Nothing is reserved from `t` on (the usual case: a processor
        // moving a message's words): the transactions follow each other at
        // the larger of latency and occupancy, as one reservation per
        // transaction would place them.
        if latency < occupancy {
            // Back to back: one interval; each waits for the previous.
            self.transactions += count;
            self.busy_cycles += count * occupancy;
            self.wait_cycles += (count - 1) * (occupancy - latency);
            self.push_after(now, t, t + count * occupancy);
            return t + (count - 1) * occupancy + latency;
        }
        self.append_periodic(now, t, count, occupancy, latency);
        t + count * latency
    }

    /// Reserves `count` intervals of `len` cycles, `period` apart from
    /// `start` on, on a calendar clear from `start` (as many reservations
    /// of them in turn would), as one train. The first may touch the last
    /// reservation; that they stay apart changes no placement. Pruning
    /// once at the end rather than after each changes no placement either:
    /// it drops what has ended by `now` either way.
    fn append_periodic(&mut self, now: u64, start: u64, count: u64, len: u64, period: u64) {
        debug_assert!(self.clear_from(start) && period >= len);
        self.transactions += count;
        self.busy_cycles += count * len;
        if len == 0 || count == 0 {
            return;
        }
        if period == len || count == 1 {
            self.push_after(now, start, start + count * len);
            return;
        }
        self.busy.push(Busy::train(start, count, len, period));
        self.prune(now);
    }

    /// Appends an interval that starts at or after the last one ends,
    /// merging when they touch; prunes expired intervals now and then (as
    /// the slow path does), which changes no placement.
    #[inline(always)] // on every transaction's path; the pruning is out of line
    fn push_after(&mut self, now: u64, start: u64, end: u64) {
        match self.busy.last_mut() {
            Some(last) if last.end == start && !last.is_train() => *last = Busy::interval(last.start, end),
            _ => self.busy.push(Busy::interval(start, end)),
        }
        self.prune(now);
    }

    /// Forgets expired intervals once a few more have been added since
    /// they were last looked for.
    #[inline(always)]
    fn prune(&mut self, now: u64) {
        if self.busy.len() > self.prune_at {
            self.forget_before(now);
        }
    }

    #[inline(never)]
    fn forget_before(&mut self, now: u64) {
        // Ends are sorted: the expired prefix is found by bisection.
        self.head += self.busy[self.head..].partition_point(|b| b.end <= now);
        if self.head >= 32 && self.head * 2 >= self.busy.len() {
            self.busy.drain(..self.head);
            self.head = 0;
        }
        // Look again once as many intervals have been added as are live
        // now (at least 64), so that many live ones (a message's word
        // trains reserved ahead) do not make every reservation look.
        self.prune_at = self.busy.len() + (self.busy.len() - self.head).max(64);
    }

    /// Inserts an interval at position `at`, merging with touching
    /// neighbours that are intervals too, to keep the calendar short.
    fn insert(&mut self, at: usize, iv: Busy) {
        let touches_prev = at > self.head && self.busy[at - 1].end == iv.start && !self.busy[at - 1].is_train();
        let touches_next = at < self.busy.len() && self.busy[at].start == iv.end && !self.busy[at].is_train();
        match (touches_prev, touches_next) {
            (true, true) => {
                self.busy[at - 1] = Busy::interval(self.busy[at - 1].start, self.busy[at].end);
                self.busy.remove(at);
            }
            (true, false) => self.busy[at - 1] = Busy::interval(self.busy[at - 1].start, iv.end),
            (false, true) => self.busy[at] = Busy::interval(iv.start, self.busy[at].end),
            (false, false) => self.busy.insert(at, iv),
        }
    }

    /// Puts interval `iv` in the gap after word `word` of the train at
    /// position `at`, splitting the train around it.
    fn split_insert(&mut self, at: usize, word: u64, iv: Busy) {
        let b = self.busy[at];
        let after = Busy::train(b.word_start(word + 1), b.words() - word - 1, b.len, b.period);
        self.busy[at] = Busy::train(b.start, word + 1, b.len, b.period);
        self.busy.splice(at + 1..at + 1, [iv, after]);
    }

    /// The live busy intervals, trains spelled out word by word and
    /// touching intervals merged (what the calendar means, however it
    /// holds it).
    #[cfg(test)]
    fn intervals(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for b in &self.busy[self.head..] {
            for k in 0..b.words() {
                let (s, e) = (b.word_start(k), b.word_start(k) + b.len);
                match out.last_mut() {
                    Some(last) if last.1 == s => last.1 = e,
                    _ => out.push((s, e)),
                }
            }
        }
        out
    }
}

/// When a transaction's data moves, which on a split-transaction bus
/// decides when its data phase takes the data bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phases {
    /// The data comes back at the end, once its supplier has it (a miss
    /// served by memory or a peer cache, an uncached load).
    Read,
    /// The data follows the address at once: the requester holds it (a
    /// write-back, a posted uncached store).
    Write,
    /// No data at all (an upgrade's invalidation).
    AddressOnly,
}

/// A transaction's address phase, data phase, and how long after the
/// address phase starts the data phase may start.
#[inline(always)]
fn split_phases(address_phase: u64, phases: Phases, occupancy: u64, latency: u64) -> (u64, u64, u64) {
    let address = if phases == Phases::AddressOnly { occupancy } else { address_phase.min(occupancy) };
    let data = occupancy - address;
    let offset = match phases {
        Phases::Read => latency.saturating_sub(data).max(address),
        Phases::Write | Phases::AddressOnly => address,
    };
    (address, data, offset)
}

/// When a transaction got the bus, when its requester is done with it, and
/// when its last phase leaves the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granted {
    pub start: u64,
    pub done: u64,
    pub bus_free: u64,
}

/// A node's memory bus. Split into an address bus and a data bus when the
/// preset gives the address phase's length, so that one transaction's
/// address goes out while another's data moves, and a transaction with no
/// data (an upgrade) never waits for data; otherwise one resource that each
/// transaction holds for its whole occupancy at once (what records made
/// before the phases were modelled ran under).
#[derive(Clone, Debug, Default)]
pub struct MemoryBus {
    address_phase: Option<u64>,
    /// The address bus, or the whole bus when it is not split.
    address: Calendar,
    data: Calendar,
    /// Split bus only (the unsplit one's are its calendar's).
    transactions: u64,
    busy_cycles: u64,
    wait_cycles: u64,
}

impl MemoryBus {
    pub fn new(params: &BusParams) -> MemoryBus {
        MemoryBus { address_phase: params.address_phase_cycles, ..MemoryBus::default() }
    }

    /// One transaction of `occupancy` cycles requested at `t`, whose
    /// requester is done `latency` after the bus granted it (a posted
    /// write's requester, once the bus took the write), when nothing
    /// queues. On a split bus, the address phase takes the address bus
    /// (all of the occupancy if the transaction has no data) and the rest
    /// of the occupancy is the data phase: right after the address for a
    /// write, and ending at `latency` for a read; whatever the data phase
    /// waits for the data bus, the requester is done that much later.
    #[inline(always)] // the phases are known where it is called: the split folds away
    pub fn transact(&mut self, now: u64, t: u64, phases: Phases, occupancy: u64, latency: u64) -> Granted {
        let Some(address_phase) = self.address_phase else {
            let start = self.address.reserve(now, t, occupancy);
            return Granted { start, done: start + latency, bus_free: start + occupancy };
        };
        let (address, data, data_offset) = split_phases(address_phase, phases, occupancy, latency);
        let start = self.address.reserve(now, t, address);
        let data_from = start + data_offset;
        let data_start = self.data.reserve(now, data_from, data);
        let done = start + latency + (data_start - data_from);
        self.transactions += 1;
        self.busy_cycles += occupancy;
        // As on the unsplit bus: how much later than on an idle bus.
        self.wait_cycles += done - t - latency;
        Granted { start, done, bus_free: (start + address).max(data_start + data) }
    }

    /// `count` transactions issued back to back by one processor, each when
    /// the previous is done; returns when the last is done.
    pub fn train(&mut self, now: u64, t: u64, count: u64, phases: Phases, occupancy: u64, latency: u64) -> u64 {
        let Some(address_phase) = self.address_phase else {
            return self.address.reserve_train(now, t, count, occupancy, latency);
        };
        // Word by word while something is reserved ahead; once nothing is
        // (often after a word or two), the rest in closed form.
        let mut done = t;
        for left in (1..=count).rev() {
            if latency >= occupancy && self.address.clear_from(done) && self.data.clear_from(done) {
                // Nothing queues: each transaction is done `latency` after
                // it was issued, and the next, issued then, finds both its
                // phases free (the usual case: a processor moving a
                // message's words).
                let (address, data, data_offset) = split_phases(address_phase, phases, occupancy, latency);
                self.address.append_periodic(now, done, left, address, latency);
                self.data.append_periodic(now, done + data_offset, left, data, latency);
                self.transactions += left;
                self.busy_cycles += left * occupancy;
                return done + left * latency;
            }
            done = self.transact(now, done, phases, occupancy, latency).done;
        }
        done
    }

    /// The run's totals, each phase's busy cycles included on a split bus.
    pub fn totals(&self) -> BusStats {
        match self.address_phase {
            None => BusStats {
                transactions: self.address.transactions,
                busy_cycles: self.address.busy_cycles,
                wait_cycles: self.address.wait_cycles,
                address_busy_cycles: None,
                data_busy_cycles: None,
            },
            Some(_) => BusStats {
                transactions: self.transactions,
                busy_cycles: self.busy_cycles,
                wait_cycles: self.wait_cycles,
                address_busy_cycles: Some(self.address.busy_cycles),
                data_busy_cycles: Some(self.data.busy_cycles),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_to_back_transactions_queue() {
        let mut b = Calendar::default();
        assert_eq!(b.reserve(0, 0, 10), 0);
        assert_eq!(b.reserve(0, 0, 10), 10);
        assert_eq!(b.reserve(0, 5, 10), 20);
        assert_eq!(b.wait_cycles, 10 + 15);
        assert_eq!(b.intervals(), vec![(0, 30)]);
    }

    #[test]
    fn later_request_fills_an_earlier_gap() {
        let mut b = Calendar::default();
        assert_eq!(b.reserve(0, 100, 10), 100);
        // Earlier in simulated time, processed later: uses the gap before 100.
        assert_eq!(b.reserve(0, 20, 10), 20);
        // Gap [30,100) too small only if occupancy > 70.
        assert_eq!(b.reserve(0, 25, 80), 110);
        assert_eq!(b.intervals(), vec![(20, 30), (100, 190)]);
    }

    #[test]
    fn train_never_overlaps_even_when_latency_is_below_occupancy() {
        let mut b = Calendar::default();
        let done = b.reserve_train(0, 0, 3, 10, 4);
        assert_eq!(b.intervals(), vec![(0, 30)]);
        assert_eq!(done, 24);
    }

    #[test]
    fn train_matches_single_reservations() {
        let mut a = Calendar::default();
        let mut b = Calendar::default();
        for bus in [&mut a, &mut b] {
            bus.reserve(0, 30, 10);
            bus.reserve(0, 95, 3);
            bus.reserve(0, 140, 40);
        }
        let mut t = 5;
        for _ in 0..12 {
            t = a.reserve(0, t, 4) + 16;
        }
        let done = b.reserve_train(0, 5, 12, 4, 16);
        assert_eq!(done, t);
        assert_eq!(a.intervals(), b.intervals());
        assert_eq!((a.transactions, a.busy_cycles, a.wait_cycles), (b.transactions, b.busy_cycles, b.wait_cycles));
    }

    #[test]
    fn train_on_a_clear_calendar_matches_single_reservations() {
        for (occ, lat) in [(4, 10), (4, 4), (10, 4)] {
            let mut a = Calendar::default();
            let mut b = Calendar::default();
            for bus in [&mut a, &mut b] {
                bus.reserve(0, 0, 7);
                bus.reserve(0, 20, 5);
            }
            let mut t = 25; // touches the last interval
            for _ in 0..100 {
                t = a.reserve(0, t, occ) + lat;
            }
            assert_eq!(b.reserve_train(0, 25, 100, occ, lat), t, "occ {occ} lat {lat}");
            assert_eq!(a.intervals(), b.intervals(), "occ {occ} lat {lat}");
            assert_eq!((a.transactions, a.busy_cycles, a.wait_cycles), (b.transactions, b.busy_cycles, b.wait_cycles));
        }
    }

    fn split(address: u64) -> MemoryBus {
        MemoryBus { address_phase: Some(address), ..MemoryBus::default() }
    }

    #[test]
    fn an_unsplit_bus_holds_the_whole_occupancy_at_once() {
        let mut b = MemoryBus::default();
        assert_eq!(b.transact(0, 0, Phases::Read, 10, 56), Granted { start: 0, done: 56, bus_free: 10 });
        // An upgrade queues behind the whole line transfer.
        assert_eq!(b.transact(0, 0, Phases::AddressOnly, 4, 16), Granted { start: 10, done: 26, bus_free: 14 });
        let whole = BusStats { transactions: 2, busy_cycles: 14, wait_cycles: 10, ..BusStats::default() };
        assert_eq!(b.totals(), whole);
    }

    #[test]
    fn a_split_bus_overlaps_one_transactions_address_with_anothers_data() {
        let mut b = split(2);
        // A read: address [0, 2), data at the end [48, 56).
        assert_eq!(b.transact(0, 0, Phases::Read, 10, 56), Granted { start: 0, done: 56, bus_free: 56 });
        // An upgrade only waits for the address bus.
        assert_eq!(b.transact(0, 0, Phases::AddressOnly, 4, 16), Granted { start: 2, done: 18, bus_free: 6 });
        // A read whose data would land on [48, 56) too: its address waits
        // for the upgrade's, its data queues to [56, 64).
        assert_eq!(b.transact(0, 0, Phases::Read, 10, 50), Granted { start: 6, done: 64, bus_free: 64 });
        // A posted write: data right after its address.
        assert_eq!(b.transact(0, 8, Phases::Write, 4, 4), Granted { start: 8, done: 12, bus_free: 12 });
        let totals = b.totals();
        assert_eq!((totals.address_busy_cycles, totals.data_busy_cycles), (Some(2 + 4 + 2 + 2), Some(8 + 8 + 2)));
        assert_eq!((totals.transactions, totals.busy_cycles), (4, 28));
        // Done later than on an idle bus: the upgrade by 2, the second read
        // by 14 (64 against 50), the write not at all.
        assert_eq!(totals.wait_cycles, 2 + 14);
    }

    #[test]
    fn on_an_idle_bus_a_split_transaction_takes_as_long_as_an_unsplit_one() {
        // Including a posted write longer on the bus than its requester
        // waits for it (an embedded processor's multi-word store).
        for (phases, occ, lat) in [
            (Phases::Read, 10, 56),
            (Phases::Write, 64, 8),
            (Phases::Write, 4, 4),
            (Phases::AddressOnly, 4, 16),
            (Phases::Read, 64, 60),
        ] {
            let done = |bus: &mut MemoryBus| bus.transact(0, 7, phases, occ, lat).done;
            assert_eq!(done(&mut split(2)), done(&mut MemoryBus::default()), "{phases:?} {occ} {lat}");
        }
    }

    /// A deterministic stream of small numbers for the randomized checks.
    fn numbers(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |below| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % below
        }
    }

    #[test]
    fn a_split_train_places_what_its_transactions_one_by_one_would() {
        let mut next = numbers(0x9e37_79b9_7f4a_7c15);
        for case in 0..20_000 {
            let address = 1 + next(4);
            let mut a = split(address);
            let mut b = split(address);
            // Some earlier traffic, before, at or after the train's start.
            for _ in 0..next(4) {
                let (t, kind) = (next(60), [Phases::Read, Phases::Write, Phases::AddressOnly][next(3) as usize]);
                let (occ, lat) = (address + next(12), next(70));
                a.transact(0, t, kind, occ, lat);
                b.transact(0, t, kind, occ, lat);
            }
            let kind = [Phases::Read, Phases::Write, Phases::AddressOnly][next(3) as usize];
            let (t, count, occ, lat) = (next(80), next(5), address + next(12), next(30));
            let mut done = t;
            for _ in 0..count {
                done = a.transact(0, done, kind, occ, lat).done;
            }
            let context = format!("case {case}: {kind:?} t {t} count {count} occ {occ} lat {lat} address {address}");
            assert_eq!(b.train(0, t, count, kind, occ, lat), done, "{context}");
            assert_eq!(a.totals(), b.totals(), "{context}");
            assert_eq!(a.address.intervals(), b.address.intervals(), "{context}");
            assert_eq!(a.data.intervals(), b.data.intervals(), "{context}");
        }
    }

    #[test]
    fn a_split_train_is_its_transactions_back_to_back() {
        // From 0 the calendars are busy (the general path); from 100 they
        // are clear (the closed form).
        for from in [0, 100] {
            for (phases, occ, lat) in [(Phases::Write, 4, 4), (Phases::Read, 4, 10), (Phases::AddressOnly, 4, 16)] {
                let mut a = split(2);
                let mut b = split(2);
                for bus in [&mut a, &mut b] {
                    bus.transact(0, 3, Phases::Read, 10, 56);
                }
                let mut t = from;
                for _ in 0..6 {
                    t = a.transact(0, t, phases, occ, lat).done;
                }
                let case = format!("{phases:?} from {from}");
                assert_eq!(b.train(0, from, 6, phases, occ, lat), t, "{case}");
                assert_eq!(a.totals(), b.totals(), "{case}");
                assert_eq!(a.address.intervals(), b.address.intervals(), "{case}");
                assert_eq!(a.data.intervals(), b.data.intervals(), "{case}");
            }
        }
    }

    /// The calendar as a plain list of intervals, searched in full: what
    /// the entries (trains included) must place like.
    #[derive(Default)]
    struct Reference(Vec<(u64, u64)>);

    impl Reference {
        fn reserve(&mut self, t: u64, occupancy: u64) -> u64 {
            if occupancy == 0 {
                return t;
            }
            self.0.sort_unstable();
            let mut start = t;
            for &(s, e) in &self.0 {
                if e > start && s < start + occupancy {
                    start = e;
                }
            }
            self.0.push((start, start + occupancy));
            start
        }

        fn merged(&self) -> Vec<(u64, u64)> {
            let mut v = self.0.clone();
            v.sort_unstable();
            let mut out: Vec<(u64, u64)> = Vec::new();
            for (s, e) in v {
                match out.last_mut() {
                    Some(last) if last.1 == s => last.1 = e,
                    _ => out.push((s, e)),
                }
            }
            out
        }
    }

    #[test]
    fn trains_and_single_reservations_place_as_a_plain_interval_list_would() {
        let mut next = numbers(0x2545_f491_4f6c_dd1d);
        for case in 0..3_000 {
            let (mut cal, mut reference) = (Calendar::default(), Reference::default());
            for step in 0..40 {
                let t = next(400);
                if next(3) == 0 {
                    // A train: closed form on a clear calendar, else one by one.
                    let (count, occ, lat) = (next(20), 1 + next(6), next(12));
                    let mut done = t;
                    for _ in 0..count {
                        done = reference.reserve(done, occ) + lat;
                    }
                    let got = cal.reserve_train(0, t, count, occ, lat);
                    assert_eq!(got, done, "case {case} step {step}: train at {t} x{count} occ {occ} lat {lat}");
                } else {
                    let occ = next(9);
                    let want = reference.reserve(t, occ);
                    assert_eq!(cal.reserve(0, t, occ), want, "case {case} step {step}: {occ} at {t}");
                }
                assert_eq!(cal.intervals(), reference.merged(), "case {case} step {step}");
            }
        }
    }

    #[test]
    fn forgets_the_past() {
        let mut b = Calendar::default();
        for k in 0..10_000u64 {
            let now = k * 20;
            assert_eq!(b.reserve(now, now + 5, 4), now + 5);
            assert_eq!(b.reserve(now, now + 6, 4), now + 9, "queues behind the one just reserved");
        }
        assert!(b.intervals().len() <= 70, "expired intervals are dropped: {}", b.intervals().len());
    }
}
