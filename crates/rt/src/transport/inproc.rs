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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The process-wide part: every node's doorbell and how to reach its
/// threads.
pub(crate) struct InProc {
    /// Padded so one node's words never share a line with another's.
    bells: Box<[CachePadded<Doorbell>]>,
    threads: Box<[NodeThreads]>,
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

    fn open(layout: &Layout) -> Result<(InProc, Endpoints<InProc>), String> {
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
}

/// A thread's rings to every node, and its spill.
pub(crate) struct RingSender {
    producers: Vec<Producer>,
    spill: Spill,
}

impl RingSender {
    fn new(producers: Vec<Producer>) -> RingSender {
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

    #[inline]
    unsafe fn try_recv(&self, lane: usize, into: &mut Message) -> bool {
        // SAFETY: the caller holds the receive right, so no other thread
        // uses this consumer.
        let consumer = unsafe { &mut *self.rings[lane].get() };
        consumer.ready() && consumer.try_pop(|r| codec::decode(r, self.node, into)).is_some()
    }
}
