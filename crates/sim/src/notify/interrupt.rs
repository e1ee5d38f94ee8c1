//! Interrupts: the NI raises its interrupt line while messages wait and
//! nobody serves, and (as the HPCA'97 and Hurricane-1 Mult devices do)
//! interrupts only when every processor of the node is busy computing: a
//! processor between activities (sending, resuming, giving up the role) is
//! about to either take the role or compute, and both paths report the
//! messages again. The arbiter picks computing processors round-robin. The
//! interrupted processor pays Oint, part on entry (delivery and dispatch)
//! and the rest on return. Taking the role masks the interrupt.

use super::{Activity, Notify, PollSite};
use finegrain_core::MachineConfig;
use std::ops::Range;

/// A node's interrupt line.
#[derive(Clone, Copy, Debug, Default)]
struct Line {
    /// Raised: an interrupt is on its way to a processor, and no second
    /// one is raised until that processor has tried to take the role.
    pending: bool,
    /// The arbiter's next candidate (local processor index).
    next: usize,
}

pub(crate) struct Interrupts {
    entry: u64,
    exit: u64,
    overhead: u64,
    /// What a poll site costs: a read of the cached status flag.
    poll_cycles: u64,
    lines: Vec<Line>,
}

impl Interrupts {
    pub fn new(m: &MachineConfig, nodes: usize) -> Interrupts {
        let o = &m.interrupt;
        let entry = o.overhead_cycles * o.entry_percent as u64 / 100;
        Interrupts {
            entry,
            exit: o.overhead_cycles - entry,
            overhead: o.overhead_cycles,
            poll_cycles: m.cache.hit_cycles,
            lines: vec![Line::default(); nodes],
        }
    }
}

impl Notify for Interrupts {
    #[inline]
    fn in_flight(&self, n: usize) -> bool {
        self.lines[n].pending
    }

    /// A processor inside an interrupt counts as computing until it
    /// serves: one already serving there is a protocol processor.
    #[inline]
    fn unattended(&mut self, n: usize, procs: Range<usize>, activity: impl Fn(usize) -> Activity) -> Option<usize> {
        if !procs.clone().all(|p| activity(p) != Activity::Other) {
            return None;
        }
        let (first, count) = (procs.start, procs.len());
        let line = &mut self.lines[n];
        for k in 0..count {
            let local = (line.next + k) % count;
            let p = first + local;
            if activity(p) == Activity::Computing {
                line.next = (local + 1) % count;
                line.pending = true;
                return Some(p);
            }
        }
        None
    }

    #[inline]
    fn settled(&mut self, n: usize) {
        self.lines[n].pending = false;
    }

    #[inline]
    fn entry_cycles(&self) -> u64 {
        self.entry
    }

    #[inline]
    fn exit_cycles(&self) -> u64 {
        self.exit
    }

    #[inline]
    fn overhead(&self) -> u64 {
        self.overhead
    }

    #[inline]
    fn masks_role(&self) -> bool {
        true
    }

    /// Every poll site polls (it reads the NI's status, a cached flag).
    #[inline]
    fn poll_site(&mut self, _p: usize, _now: u64) -> PollSite {
        PollSite { polls: true, cycles: self.poll_cycles }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheme() -> Interrupts {
        let mut m = MachineConfig::load("hpca97").unwrap();
        (m.interrupt.overhead_cycles, m.interrupt.entry_percent) = (1000, 75);
        Interrupts::new(&m, 2)
    }

    #[test]
    fn oint_splits_into_entry_and_return() {
        let mut s = scheme();
        assert_eq!((s.entry_cycles(), s.exit_cycles(), s.overhead()), (750, 250, 1000));
        assert!(s.masks_role());
        assert!(s.poll_site(0, 0).polls);
    }

    #[test]
    fn only_a_node_whose_processors_all_compute_is_interrupted_round_robin() {
        use Activity::{Computing as C, Notified as N, Other as O};
        let mut s = scheme();
        // Node 1's processors are 4..8.
        let node = |acts: [Activity; 4]| move |p: usize| acts[p - 4];
        assert_eq!(s.unattended(1, 4..8, node([C, C, O, C])), None, "one is about to serve or compute");
        assert!(!s.in_flight(1));
        assert_eq!(s.unattended(1, 4..8, node([C, N, C, C])), Some(4));
        assert!(s.in_flight(1) && !s.in_flight(0), "the line stays raised");
        s.settled(1);
        // The arbiter goes on from the next processor, past one already
        // inside an interrupt.
        assert_eq!(s.unattended(1, 4..8, node([C, N, C, C])), Some(6));
        s.settled(1);
        assert_eq!(s.unattended(1, 4..8, node([C, N, N, C])), Some(7));
        s.settled(1);
        assert_eq!(s.unattended(1, 4..8, node([C, N, N, N])), Some(4));
        s.settled(1);
        assert_eq!(s.unattended(1, 4..8, node([N, N, N, N])), None, "nobody computes");
    }
}
