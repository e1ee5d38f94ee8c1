//! The event queue: events ordered by (time, sequence number), so two events
//! at the same cycle always run in the order they were scheduled. That order
//! is what makes a run bit-reproducible.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens when an event fires. Kept small: the heap moves these
/// around on every push and pop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A processor's current activity ends, or an idle processor is woken.
    /// `gen` lets a preempted activity's stale end event be ignored.
    ProcWake { proc: u32, gen: u32 },
    /// A message (slot in the message slab) reaches its destination NI.
    Arrive { msg: u32 },
    /// The interrupt arbiter delivers an interrupt to a processor.
    Interrupt { proc: u32 },
}

#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub time: u64,
    pub seq: u64,
    pub kind: EventKind,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}

impl Eq for Event {}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Event {
    // Reversed so the max-heap pops the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Event>,
    next_seq: u64,
    popped: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> EventQueue {
        EventQueue { heap: BinaryHeap::with_capacity(n), next_seq: 0, popped: 0 }
    }

    pub fn push(&mut self, time: u64, kind: EventKind) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Event { time, seq, kind });
    }

    pub fn pop(&mut self) -> Option<Event> {
        let e = self.heap.pop();
        if e.is_some() {
            self.popped += 1;
        }
        e
    }

    /// Events handled so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(10, EventKind::Arrive { msg: 1 });
        q.push(5, EventKind::Arrive { msg: 2 });
        q.push(10, EventKind::Arrive { msg: 3 });
        q.push(5, EventKind::Arrive { msg: 4 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop())
            .map(|e| match e.kind {
                EventKind::Arrive { msg } => msg,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
        assert_eq!(q.popped(), 4);
    }
}
