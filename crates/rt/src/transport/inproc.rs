//! The in-process transport: every node in this process, one ring of
//! cache-line slots per (sending thread, node) pair, an ordered spill per
//! sending thread, doorbells on the heap, and in-process wake-ups (thread
//! unpark, `pthread_kill`).

use super::codec::{self, Outgoing};
use super::ring::{self, Consumer, Full, Peeker, Producer};
use super::spill::Spill;
use super::{Endpoints, Inbox, Layout, Sender, Sent, ThreadKind, Transport};
use crate::notify::{signal, Doorbell};
use crossbeam_utils::CachePadded;
use finegrain_core::{Message, NodeId};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The process-wide part: every node's doorbell and how to reach its
/// threads.
pub(crate) struct InProc {
    /// Padded so one node's words never share a line with another's.
    bells: Box<[CachePadded<Doorbell>]>,
    threads: Box<[NodeThreads]>,
    finished: CachePadded<AtomicU32>,
}

/// How to reach a node's threads.
struct NodeThreads {
    /// pthread ids of the compute threads (0 until registered), for
    /// interrupts.
    compute: Box<[AtomicU64]>,
    /// The dedicated protocol threads, for unparking.
    protocol: Mutex<Vec<std::thread::Thread>>,
}

impl Transport for InProc {
    type Sender = RingSender;
    type Inbox = RingInbox;
    type Place = ();

    fn open(layout: &Layout, _: &()) -> Result<(InProc, Endpoints<InProc>), String> {
        // One process holds everything: the layout's `local` is every node.
        debug_assert_eq!(layout.local, 0..layout.nodes);
        let nodes = layout.nodes as usize;
        let total = nodes * layout.threads_per_node as usize;
        let mut producers: Vec<Vec<Producer>> = (0..total).map(|_| Vec::with_capacity(nodes)).collect();
        let mut consumers: Vec<Vec<Consumer>> = (0..nodes).map(|_| Vec::with_capacity(total)).collect();
        for sender in producers.iter_mut() {
            for inbox in consumers.iter_mut() {
                let (p, c) = ring::ring(layout.ring_slots);
                sender.push(p);
                inbox.push(c);
            }
        }
        let compute = layout.compute_threads_per_node;
        let transport = InProc {
            bells: (0..nodes).map(|_| CachePadded::new(Doorbell::new(compute))).collect(),
            threads: (0..nodes)
                .map(|_| NodeThreads {
                    compute: (0..compute).map(|_| AtomicU64::new(0)).collect(),
                    protocol: Mutex::new(Vec::new()),
                })
                .collect(),
            finished: CachePadded::new(AtomicU32::new(0)),
        };
        let endpoints = Endpoints {
            senders: producers.into_iter().map(RingSender::new).collect(),
            inboxes: consumers.into_iter().enumerate().map(|(n, c)| RingInbox::new(NodeId(n as u32), c)).collect(),
        };
        Ok((transport, endpoints))
    }

    #[inline]
    fn doorbell(&self, node: u32) -> Option<&Doorbell> {
        self.bells.get(node as usize).map(|b| &**b)
    }

    fn register_thread(&self, node: u32, thread: u32, kind: ThreadKind) {
        let t = &self.threads[node as usize];
        match kind {
            ThreadKind::Compute => t.compute[thread as usize].store(signal::current_thread(), Ordering::Release),
            ThreadKind::Protocol => {
                if let Ok(mut threads) = t.protocol.lock() {
                    threads.push(std::thread::current());
                }
            }
        }
    }

    fn sleep(&self, _node: u32, timeout: Duration) {
        std::thread::park_timeout(timeout);
    }

    fn wake_parked(&self, node: u32) {
        if let Ok(threads) = self.threads[node as usize].protocol.lock() {
            threads.iter().for_each(std::thread::Thread::unpark);
        }
    }

    fn interrupt(&self, node: u32, thread: u32) {
        signal::raise(self.threads[node as usize].compute[thread as usize].load(Ordering::Relaxed));
    }

    fn app_finished(&self) {
        self.finished.fetch_add(1, Ordering::AcqRel);
    }

    #[inline]
    fn apps_finished(&self) -> u32 {
        self.finished.load(Ordering::Acquire)
    }
}

/// A thread's rings to every node, and its spill.
pub(crate) struct RingSender {
    producers: Vec<Producer>,
    spill: Spill,
}

impl RingSender {
    pub(crate) fn new(producers: Vec<Producer>) -> RingSender {
        let spill = Spill::new(producers.len());
        RingSender { producers, spill }
    }
}

impl Sender for RingSender {
    #[inline]
    fn try_send(&mut self, dst: u32, m: &Outgoing) -> Result<(), Full> {
        let d = dst as usize;
        if self.spill.clear_for(d) && codec::push_message(&mut self.producers[d], m).is_ok() {
            Ok(())
        } else {
            Err(Full)
        }
    }

    #[inline]
    fn send(&mut self, dst: u32, m: &Outgoing) -> Sent {
        let d = dst as usize;
        if !self.spill.clear_for(d) || codec::push_message(&mut self.producers[d], m).is_err() {
            self.spill.push(d, m);
            return Sent::Spilled;
        }
        Sent::Now
    }

    #[inline]
    fn spilled(&self) -> usize {
        self.spill.count()
    }

    fn flush(&mut self, sent: impl FnMut(u32)) -> bool {
        let producers = &mut self.producers;
        self.spill.flush(|d, meta, words| producers[d].try_push(meta, words).is_ok(), sent)
    }
}

/// A node's end of the rings that lead to it: one lane per sending thread.
pub(crate) struct RingInbox {
    node: NodeId,
    /// Consumer side of every ring leading here, indexed by sending thread.
    rings: Box<[UnsafeCell<Consumer>]>,
    /// Read-only views of the same, for threads without the receive right.
    peek: Box<[Peeker]>,
}

// SAFETY: the consumers are reached only through the unsafe methods of
// `Inbox`, whose callers hold the node's receive right: one thread at a
// time, the right's acquire/release ordering each holder's accesses after
// the previous holder's. The peekers only load atomics.
unsafe impl Sync for RingInbox {}

impl RingInbox {
    /// The receive side of node `node` over these consumers.
    pub(crate) fn new(node: NodeId, consumers: Vec<Consumer>) -> RingInbox {
        RingInbox {
            node,
            peek: consumers.iter().map(|c| c.peeker()).collect(),
            rings: consumers.into_iter().map(UnsafeCell::new).collect(),
        }
    }

    /// Pops lane `lane`'s next record without looking at it first (what
    /// `try_recv` does after a cheap look); for a single dispatcher that
    /// walks the lanes itself (`bench pdq`'s baseline).
    ///
    /// # Safety
    /// As for [`Inbox::try_recv`].
    #[cfg(feature = "probe")]
    pub(crate) unsafe fn pop(&self, lane: usize, into: &mut Message) -> bool {
        // SAFETY: the caller holds the receive right, so no other thread
        // uses this consumer.
        let consumer = unsafe { &mut *self.rings[lane].get() };
        consumer.try_pop(|r| codec::decode(r, self.node, into)).is_some()
    }
}

impl Inbox for RingInbox {
    #[inline]
    fn lanes(&self) -> usize {
        self.rings.len()
    }

    #[inline]
    fn ready(&self) -> bool {
        self.peek.iter().any(|p| p.ready())
    }

    #[inline]
    unsafe fn pending(&self) -> bool {
        // SAFETY: the caller holds the receive right; `ready` only loads a
        // slot header.
        self.rings.iter().any(|c| unsafe { &*c.get() }.ready())
    }

    // Always inlined into the drain loop: as a call it costs the serial
    // drain about 33 more instructions per message (callgrind, `--example
    // selfrate`), since the drain visits every lane on every pass.
    #[inline(always)]
    unsafe fn try_recv(&self, lane: usize, into: &mut Message) -> bool {
        // SAFETY: the caller holds the receive right, so no other thread
        // uses this consumer.
        let consumer = unsafe { &mut *self.rings[lane].get() };
        consumer.ready() && consumer.try_pop(|r| codec::decode(r, self.node, into)).is_some()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use finegrain_core::{HandlerId, MsgKind, SyncKey, ThreadId};

    fn layout(nodes: u32, threads: u32, ring_slots: usize) -> Layout {
        Layout { nodes, threads_per_node: threads, compute_threads_per_node: threads, ring_slots, local: 0..nodes }
    }

    fn request(token: u64) -> Outgoing<'static> {
        Outgoing {
            kind: MsgKind::Request,
            handler: HandlerId(1),
            src_node: NodeId(0),
            src_thread: ThreadId(0),
            token,
            key: SyncKey::NoSync,
            args: &[],
            payload: &[],
        }
    }

    /// Takes everything lane `lane` of `inbox` holds; the tokens in order.
    fn tokens(inbox: &RingInbox, lane: usize) -> Vec<u64> {
        let mut m = codec::scratch_message();
        // SAFETY: this test is the inbox's only user.
        std::iter::from_fn(|| unsafe { inbox.try_recv(lane, &mut m) }.then_some(m.token)).collect()
    }

    #[test]
    fn one_lane_per_sending_thread_and_a_doorbell_per_node() {
        let (t, mut e) = InProc::open(&layout(3, 2, 4), &()).unwrap();
        assert_eq!((e.senders.len(), e.inboxes.len()), (6, 3));
        assert!(e.inboxes.iter().all(|i| i.lanes() == 6));
        assert!(t.doorbell(2).is_some_and(|b| b.compute_threads == 2) && t.doorbell(3).is_none());
        // Thread 1 of node 1 (global thread 3) sends to node 2: lane 3 there.
        assert_eq!(e.senders[3].send(2, &request(7)), Sent::Now);
        assert!(e.inboxes[2].ready() && !e.inboxes[0].ready() && !e.inboxes[1].ready());
        // SAFETY: this test is the inbox's only user.
        assert!(unsafe { e.inboxes[2].pending() });
        assert_eq!(tokens(&e.inboxes[2], 3), [7]);
        let mut m = codec::scratch_message();
        // SAFETY: as above.
        assert!(!unsafe { e.inboxes[2].try_recv(3, &mut m) });
    }

    /// A full ring spills; later messages to the same node queue behind
    /// the spilled ones even once the ring has room, and the spill goes
    /// out in order, each message reported as it leaves.
    #[test]
    fn a_full_ring_spills_in_order_and_nothing_overtakes_the_spill() {
        let (_t, mut e) = InProc::open(&layout(2, 1, 2), &()).unwrap();
        let tx = &mut e.senders[0];
        assert_eq!(tx.send(1, &request(1)), Sent::Now);
        assert_eq!(tx.send(1, &request(2)), Sent::Now);
        assert_eq!(tx.send(1, &request(3)), Sent::Spilled);
        assert_eq!(tx.try_send(1, &request(4)), Err(Full));
        assert_eq!(tx.send(1, &request(4)), Sent::Spilled);
        assert_eq!(tx.try_send(0, &request(10)), Ok(()), "other destinations are not held back");
        assert_eq!(tx.spilled(), 2);
        let mut sent = Vec::new();
        assert!(!tx.flush(|d| sent.push(d)), "the ring is still full");
        assert!(sent.is_empty());
        assert_eq!(tokens(&e.inboxes[1], 0), [1, 2]);
        assert_eq!(tx.try_send(1, &request(5)), Err(Full), "the spill goes first");
        assert!(tx.flush(|d| sent.push(d)));
        assert_eq!(sent, [1, 1]);
        assert_eq!(tx.spilled(), 0);
        assert_eq!(tx.try_send(1, &request(5)), Err(Full), "the ring is full again");
        assert_eq!(tokens(&e.inboxes[1], 0), [3, 4]);
        assert_eq!(tx.try_send(1, &request(5)), Ok(()));
        assert_eq!(tokens(&e.inboxes[1], 0), [5]);
        assert_eq!(tokens(&e.inboxes[0], 0), [10]);
    }
}
