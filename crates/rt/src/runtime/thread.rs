//! One thread's runtime context, which composes the layers: it sends
//! through its [`Sender`] and alerts the destination as [`crate::notify`]
//! says, serves its node through [`crate::dispatch`], and keeps its
//! interrupt gate. Its operations are in `ops.rs` (what the thread asks
//! for), `sending.rs` and `handling.rs`.

use super::cluster::{Cluster, Mode, Node};
use crate::clock::Stamp;
use crate::dispatch::keyed::Idle;
use crate::notify::signal::{Interruptible, IrqGate};
use crate::notify::{poll, Doorbell};
use crate::stats::ThreadStats;
use crate::transport::{codec, Sender, Transport};
use finegrain_core::{mix_seed, Message};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One thread's runtime state. Fields the interrupt handler may use live in
/// cells: the handler runs only while the thread is in the allocation-free
/// `work` loop, which touches none of them (see
/// [`crate::notify::signal`]).
pub(crate) struct ThreadCtx<T: Transport> {
    pub(super) cluster: Arc<Cluster<T>>,
    pub(super) node: u32,
    pub(super) local: u32,
    pub(super) global: usize,
    /// This thread's send side: used only by this thread, and never
    /// re-entrantly (sends happen in runtime code, or in an interrupt that
    /// runs only when the thread is outside runtime code).
    pub(super) out: UnsafeCell<T::Sender>,
    /// Where the serial drain decodes (used only by this thread while it
    /// holds the role; handlers cannot re-enter the drain).
    pub(super) scratch: UnsafeCell<Message>,
    pub(super) rng: UnsafeCell<ChaCha8Rng>,
    pub(super) next_token: Cell<u64>,
    /// Holds the node's role for its whole life (Single, main-am).
    pub(super) owns_role: bool,
    /// The node's co-processor progress thread (Coproc): it forwards what
    /// it may not run to the main thread.
    pub(super) progress: bool,
    /// The node's main thread under Coproc: it runs what the progress
    /// thread forwards.
    pub(super) takes_forwarded: bool,
    /// `request_with`'s closure is running: it borrows this thread's reply
    /// buffer, which the next reply to this thread would overwrite.
    pub(super) reply_lent: Cell<bool>,
    /// What the keyed queue answered when this thread last found nothing
    /// to run there.
    pub(super) keyed_idle: Cell<Idle>,
    /// Whether an interrupt may be served where the thread is now.
    pub(super) irq: IrqGate,
    /// Messages wait in the send side's spill. A reply sent from an
    /// interrupt may spill; the `work` loop, which must not touch the
    /// cells, watches this instead and sends it on without waiting for the
    /// work to end.
    pub(super) spill_waiting: AtomicBool,
    pub(super) stats: ThreadStats,
}

impl<T: Transport> ThreadCtx<T> {
    /// The context of thread `local` of node `node`, sending through `out`.
    pub(super) fn new(cluster: &Arc<Cluster<T>>, out: T::Sender, node: u32, local: u32) -> ThreadCtx<T> {
        let global = (node * cluster.ppn + local) as usize;
        let owns_role = cluster.mode == Mode::Single;
        let coproc = cluster.mode == Mode::Coproc;
        let compute = local < cluster.cfg.compute_threads_per_node();
        if owns_role {
            let taken = crate::dispatch::serial::try_take(&cluster.bell(node).role);
            debug_assert!(taken, "a Single node has one thread");
        }
        ThreadCtx {
            cluster: cluster.clone(),
            node,
            local,
            global,
            out: UnsafeCell::new(out),
            scratch: UnsafeCell::new(codec::scratch_message()),
            rng: UnsafeCell::new(ChaCha8Rng::seed_from_u64(mix_seed(
                cluster.cfg.run.seed,
                node as u64 + 101,
                local as u64 + 7,
            ))),
            next_token: Cell::new(0),
            owns_role,
            progress: coproc && !compute,
            takes_forwarded: coproc && compute,
            reply_lent: Cell::new(false),
            keyed_idle: Cell::new(Idle::NEVER),
            irq: IrqGate::new(),
            spill_waiting: AtomicBool::new(false),
            stats: ThreadStats::new(cluster.cfg.time_split),
        }
    }

    #[inline]
    pub(super) fn node(&self) -> &Node<T> {
        self.cluster.node(self.node)
    }

    /// This thread's node's doorbell.
    #[inline]
    pub(super) fn bell(&self) -> &Doorbell {
        self.cluster.bell(self.node)
    }

    /// Messages waiting in this thread's spill.
    #[inline]
    pub(super) fn spilled(&self) -> usize {
        // SAFETY: only this thread uses its send side, and no mutable
        // borrow of it is alive here (see `out`).
        unsafe { &*self.out.get() }.spilled()
    }

    /// Spin politely: when threads outnumber cores, give the core away.
    /// Under Coproc every message crosses two threads of a node (main and
    /// progress), so when they share cores each empty look yields at once:
    /// the thread that has work is the one that must run.
    #[inline]
    pub(super) fn relax(&self, spins: &mut u32) {
        if self.cluster.oversubscribed && self.cluster.mode == Mode::Coproc {
            return std::thread::yield_now();
        }
        poll::relax(spins, self.cluster.oversubscribed);
    }

    /// Enters runtime code (an interrupt arriving now is deferred).
    #[inline]
    pub(super) fn enter(&self) {
        self.irq.enter();
    }

    /// Leaves runtime code; an interrupt that arrived meanwhile is served
    /// now, and counted (with its time) like one served on arrival.
    #[inline]
    pub(super) fn exit(&self) {
        if self.irq.exit() {
            self.bell().irq_raised.store(false, Ordering::Relaxed);
            self.enter();
            self.serve_interrupt();
            self.irq.leave();
        }
    }

    /// Serves the node's messages for an interrupt, counting it and its
    /// time, the handlers' own time aside.
    pub(super) fn serve_interrupt(&self) {
        let t0 = Stamp::now();
        let before = self.stats.handler_ns();
        self.poll_as_pp();
        let handling = self.stats.handler_ns() - before;
        self.stats.add_interrupt(t0.elapsed_ns().saturating_sub(handling));
    }
}

impl<T: Transport> Interruptible for ThreadCtx<T> {
    /// Called by the interrupt signal handler on this thread.
    fn interrupt(&self) {
        self.bell().irq_raised.store(false, Ordering::Relaxed);
        if self.irq.arrive() {
            self.serve_interrupt();
            self.irq.leave();
        }
    }
}
