//! The event queue: events ordered by (time, sequence number), so two events
//! at the same cycle always run in the order they were scheduled. That order
//! is what makes a run bit-reproducible.
//!
//! A 4-ary min-heap keyed by one `u128` (time in the high half, sequence in
//! the low half): keys are unique, comparisons are single integer compares,
//! and the shallow tree keeps sift paths short at any queue length. Events
//! scheduled for the current cycle (wake-ups, interrupt deliveries) are the
//! commonest and go to a FIFO instead; popping takes the smaller key of the
//! FIFO's front and the heap's top, so the order is exactly (time, seq).
//!
//! An event may also be *reserved*: its place in that order is fixed (its
//! key taken) without putting it in the queue. The engine does this for an
//! activity whose end changes nothing unless something happens to its
//! processor first; if something does, the event goes in with the key it
//! was given, so it runs exactly where it would have, and if nothing does,
//! it never costs a push and a pop. Either way it counts as one event
//! handled ([`EventQueue::handled`]), as it did when it was always pushed.

/// What happens when an event fires. Kept small: the heap moves these
/// around on every push and pop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A processor's current activity ends, or an idle processor is woken.
    /// `gen` lets a preempted activity's stale end event be ignored.
    ProcWake { proc: u32, gen: u32 },
    /// A message (slot in the message slab) reaches its destination NI.
    Arrive { msg: u32 },
    /// A notification (an interrupt) reaches the processor the
    /// notification scheme chose.
    Interrupt { proc: u32 },
    /// A thread's `idle` period is over.
    IdleEnd { thread: u32 },
    /// A processor holding the role for want of a successor reconsiders
    /// whether the quiet since the last arrival makes giving it up pay.
    Recheck { proc: u32 },
    /// The releasing store of a node's role lock is done: the role is free.
    RoleFree { node: u32 },
    /// A compute thread has stored a request for its node's protocol
    /// processor to send.
    Submitted { node: u32 },
    /// Policy coprocessor: a sending co-processor thread takes a message
    /// (its trigger or flag seen, or the event it waited on set).
    CoprocSend { msg: u32 },
    /// Policy coprocessor: a message's DMA has written it into its
    /// destination's memory.
    CoprocDeliver { msg: u32 },
    /// Policy coprocessor (coproc-am): a thread's main processor sees the
    /// completion word its co-processor wrote after the reply handler.
    CoprocSeen { thread: u32 },
    /// Policy coprocessor (main-am): the sender's co-processor learns its
    /// receive buffer at `dst` is empty again.
    CoprocBufferFree { src: u32, dst: u32 },
    /// Policy coprocessor (coproc-am): a handler on node `node`'s
    /// co-processor has ended while threads there wait in
    /// `Proc::wait_until`.
    CoprocHandled { node: u32 },
    /// Policy coprocessor (coproc-am, and unmarked messages under
    /// optimized): the acknowledgement of channel `src` to `dst`'s last
    /// message is back; the oldest message waiting for the channel goes.
    CoprocChannelFree { src: u32, dst: u32 },
    /// Policy coprocessor (coproc-am): the dispatch thread has left an
    /// atomic function's message for the main processor, whose flag it
    /// wrote.
    CoprocDeposit { msg: u32 },
    /// Policy coprocessor (optimized): the next step of a Split-C
    /// operation the library does with the Elan's hardware.
    CoprocDirect { msg: u32, step: DirectStep },
}

/// The steps of the optimized library's operations (IPPS 1996 Section
/// 5.2), each at the node where it happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectStep {
    /// The requester's DMA engine sees the main processor's trigger.
    Issue,
    /// A put's data is in the owner's memory.
    Deliver,
    /// A get's descriptor is at the owner: the requester's co-processor
    /// sets the owner's event that triggers it.
    Descriptor,
    /// A get's descriptor runs at the owner: the data goes back.
    Trigger,
    /// A store's data DMA is done at the source: the remote add goes out.
    Add,
    /// A store's remote add has landed in the owner's counter.
    Land,
    /// A DMA's completion wakes the requester's counter thread.
    Count,
    /// The requester's main processor sees the counter word change.
    Seen,
    /// An atomic function's message is in the owner's buffer for its main
    /// processor.
    Deposit,
}

#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub time: u64,
    pub kind: EventKind,
}

#[derive(Default)]
pub struct EventQueue {
    heap: Vec<(u128, EventKind)>,
    /// Events for the cycle last popped, in scheduling order.
    now_fifo: std::collections::VecDeque<(u128, EventKind)>,
    now: u64,
    next_seq: u64,
    popped: u64,
    /// The key of the event popped last: the one being handled.
    current: u128,
    /// Reserved events not put in the queue (see the module's notes).
    reserved: u64,
}

/// An event's place in the order, taken by [`EventQueue::reserve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reserved(u128);

const ARITY: usize = 4;

impl EventQueue {
    pub fn with_capacity(n: usize) -> EventQueue {
        EventQueue {
            heap: Vec::with_capacity(n),
            now_fifo: Default::default(),
            now: 0,
            next_seq: 0,
            popped: 0,
            current: 0,
            reserved: 0,
        }
    }

    fn next_key(&mut self, time: u64) -> u128 {
        let key = (time as u128) << 64 | self.next_seq as u128;
        self.next_seq += 1;
        key
    }

    pub fn push(&mut self, time: u64, kind: EventKind) {
        let key = self.next_key(time);
        if time == self.now {
            self.now_fifo.push_back((key, kind));
            return;
        }
        self.push_heap(key, kind);
    }

    /// Takes the place an event for `time` pushed now would have, without
    /// pushing it; it counts as handled unless [`EventQueue::push_reserved`]
    /// puts it in the queue after all.
    pub fn reserve(&mut self, time: u64) -> Reserved {
        self.reserved += 1;
        Reserved(self.next_key(time))
    }

    /// Whether a reserved event would have been handled already: its place
    /// comes before the event being handled now.
    pub fn passed(&self, r: Reserved) -> bool {
        r.0 < self.current
    }

    /// Puts a reserved event, not yet passed, in the queue at its place.
    /// Always the heap: the FIFO holds only later keys of the current cycle.
    pub fn push_reserved(&mut self, r: Reserved, kind: EventKind) {
        debug_assert!(!self.passed(r), "a reserved event is pushed after its place");
        self.reserved -= 1;
        self.push_heap(r.0, kind);
    }

    fn push_heap(&mut self, key: u128, kind: EventKind) {
        let mut i = self.heap.len();
        self.heap.push((key, kind));
        // Sift up.
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent].0 <= key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = (key, kind);
    }

    pub fn pop(&mut self) -> Option<Event> {
        let from_fifo = match (self.now_fifo.front(), self.heap.first()) {
            (Some(f), Some(h)) => f.0 < h.0,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if from_fifo {
            let (key, kind) = self.now_fifo.pop_front().expect("non-empty");
            self.popped += 1;
            self.current = key;
            return Some(Event { time: (key >> 64) as u64, kind });
        }
        let e = self.pop_heap()?;
        self.now = e.time;
        Some(e)
    }

    fn pop_heap(&mut self) -> Option<Event> {
        let last = self.heap.pop()?;
        self.popped += 1;
        if self.heap.is_empty() {
            self.current = last.0;
            return Some(Event { time: (last.0 >> 64) as u64, kind: last.1 });
        }
        let top = self.heap[0];
        // Sift the last element down from the root.
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let mut child = first;
            for c in first + 1..end {
                if self.heap[c].0 < self.heap[child].0 {
                    child = c;
                }
            }
            if self.heap[child].0 >= last.0 {
                break;
            }
            self.heap[i] = self.heap[child];
            i = child;
        }
        self.heap[i] = last;
        self.current = top.0;
        Some(Event { time: (top.0 >> 64) as u64, kind: top.1 })
    }

    /// Events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Events handled so far: those popped and those reserved and left out
    /// (each would have been popped before the run could end: see
    /// [`EventQueue::reserve`]'s caller).
    pub fn handled(&self) -> u64 {
        self.popped + self.reserved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn msg(e: Event) -> u32 {
        match e.kind {
            EventKind::Arrive { msg } => msg,
            _ => unreachable!(),
        }
    }

    #[test]
    fn pops_by_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(10, EventKind::Arrive { msg: 1 });
        q.push(5, EventKind::Arrive { msg: 2 });
        q.push(10, EventKind::Arrive { msg: 3 });
        q.push(5, EventKind::Arrive { msg: 4 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(msg).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
        assert_eq!(q.popped(), 4);
    }

    #[test]
    fn matches_a_sort_on_random_interleavings() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut q = EventQueue::default();
        let mut reference = Vec::new();
        let mut now = 0;
        let mut id = 0;
        for _ in 0..20_000 {
            if rng.gen_bool(0.55) {
                let t = now + rng.gen_range(0..50);
                q.push(t, EventKind::Arrive { msg: id });
                reference.push((t, id));
                id += 1;
            } else if let Some(e) = q.pop() {
                reference.sort();
                let (t, m) = reference.remove(0);
                assert_eq!((e.time, msg(e)), (t, m));
                now = e.time;
            }
        }
    }

    /// Reserved events, some pushed later (before their place passes),
    /// pop exactly where they would have if pushed when reserved; the ones
    /// never pushed still count as handled.
    #[test]
    fn a_reserved_event_pushed_later_pops_at_its_place() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut q = EventQueue::default();
        // Reference: every event pushed at once, reserved ones marked.
        let mut reference: Vec<(u64, u32, bool)> = Vec::new();
        let mut pending: Vec<(Reserved, u32)> = Vec::new();
        let (mut now, mut id, mut left_out) = (0, 0, 0);
        for _ in 0..20_000 {
            let roll = rng.gen_range(0..100);
            if roll < 35 {
                let t = now + rng.gen_range(0..20);
                q.push(t, EventKind::Arrive { msg: id });
                reference.push((t, id, false));
                id += 1;
            } else if roll < 55 {
                let t = now + rng.gen_range(0..3);
                pending.push((q.reserve(t), id));
                reference.push((t, id, true));
                id += 1;
            } else if roll < 65 {
                if let Some(i) = (!pending.is_empty()).then(|| rng.gen_range(0..pending.len())) {
                    // Still pending: the pops below drop those passed.
                    let (r, m) = pending.swap_remove(i);
                    assert!(!q.passed(r));
                    q.push_reserved(r, EventKind::Arrive { msg: m });
                    reference.iter_mut().find(|e| e.1 == m).unwrap().2 = false;
                }
            } else if let Some(e) = q.pop() {
                reference.sort();
                // Reserved events not pushed by now are skipped over in
                // the reference, as the queue never held them: they have
                // passed.
                while reference.first().is_some_and(|r| r.2) {
                    let (_, m, _) = reference.remove(0);
                    let i = pending.iter().position(|p| p.1 == m).unwrap();
                    assert!(q.passed(pending.swap_remove(i).0));
                    left_out += 1;
                }
                let (t, m, _) = reference.remove(0);
                assert_eq!((e.time, msg(e)), (t, m));
                now = e.time;
            }
        }
        assert!(left_out > 1000, "the test left out only {left_out} reserved events");
        assert_eq!(q.handled(), q.popped() + left_out + pending.len() as u64);
    }
}
