//! A node's split-transaction memory bus as a reservation calendar.
//!
//! A processor activity (a handler, a burst of misses) is timed in one go,
//! so its bus transactions are reserved at future cycles. A transaction
//! issued later in event order but earlier in simulated time must not queue
//! behind those future reservations, so the calendar fills the earliest gap
//! at or after the request time that is long enough for the transaction.
//! Transactions therefore queue for the bus in (roughly) request-time order,
//! which is what a FIFO bus arbiter does.

#[derive(Clone, Debug, Default)]
pub struct Bus {
    /// Busy intervals [start, end), sorted, non-overlapping.
    busy: Vec<(u64, u64)>,
    pub transactions: u64,
    pub busy_cycles: u64,
    pub wait_cycles: u64,
}

impl Bus {
    /// Reserves `occupancy` cycles of bus at or after `t`; returns the cycle
    /// the transaction gets the bus. `now` is the simulation clock: nothing
    /// can be requested before it, so older intervals are forgotten.
    pub fn reserve(&mut self, now: u64, t: u64, occupancy: u64) -> u64 {
        let expired = self.busy.iter().take_while(|iv| iv.1 <= now).count();
        if expired > 0 {
            self.busy.drain(..expired);
        }
        self.transactions += 1;
        self.busy_cycles += occupancy;
        if occupancy == 0 {
            return t;
        }
        let mut start = t;
        let mut at = self.busy.len();
        for (i, &(s, e)) in self.busy.iter().enumerate() {
            if e <= start {
                continue;
            }
            if s >= start + occupancy {
                at = i;
                break;
            }
            start = start.max(e);
        }
        self.wait_cycles += start - t;
        self.insert(at, (start, start + occupancy));
        start
    }

    /// Inserts at position `at`, merging with touching neighbours to keep
    /// the calendar short.
    fn insert(&mut self, at: usize, iv: (u64, u64)) {
        let touches_prev = at > 0 && self.busy[at - 1].1 == iv.0;
        let touches_next = at < self.busy.len() && self.busy[at].0 == iv.1;
        match (touches_prev, touches_next) {
            (true, true) => {
                self.busy[at - 1].1 = self.busy[at].1;
                self.busy.remove(at);
            }
            (true, false) => self.busy[at - 1].1 = iv.1,
            (false, true) => self.busy[at].0 = iv.0,
            (false, false) => self.busy.insert(at, iv),
        }
    }

    #[cfg(test)]
    fn intervals(&self) -> &[(u64, u64)] {
        &self.busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_to_back_transactions_queue() {
        let mut b = Bus::default();
        assert_eq!(b.reserve(0, 0, 10), 0);
        assert_eq!(b.reserve(0, 0, 10), 10);
        assert_eq!(b.reserve(0, 5, 10), 20);
        assert_eq!(b.wait_cycles, 10 + 15);
        assert_eq!(b.intervals(), &[(0, 30)]);
    }

    #[test]
    fn later_request_fills_an_earlier_gap() {
        let mut b = Bus::default();
        assert_eq!(b.reserve(0, 100, 10), 100);
        // Earlier in simulated time, processed later: uses the gap before 100.
        assert_eq!(b.reserve(0, 20, 10), 20);
        // Gap [30,100) too small only if occupancy > 70.
        assert_eq!(b.reserve(0, 25, 80), 110);
        assert_eq!(b.intervals(), &[(20, 30), (100, 190)]);
    }

    #[test]
    fn forgets_the_past() {
        let mut b = Bus::default();
        b.reserve(0, 0, 10);
        b.reserve(0, 50, 10);
        b.reserve(55, 70, 5);
        assert_eq!(b.intervals(), &[(50, 60), (70, 75)]);
    }
}
