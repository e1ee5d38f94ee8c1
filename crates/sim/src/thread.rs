//! Simulated application threads: async tasks on the engine's executor.
//!
//! A thread's future talks to the engine through a one-slot mailbox: an
//! operation future posts its request (`Op`) and returns `Pending`; the
//! engine takes the op, simulates it on the thread's processor, stores the
//! result and polls the task again. The engine always knows when a task can
//! make progress, so no wakers are needed and polling order is fixed by the
//! event order, which keeps runs deterministic.
//!
//! One operation at a time: the mailbox has one slot, and a thread is one
//! simulated processor's program, which waits for each operation. A second
//! operation started while another is unfinished (two awaited at once, as
//! with `join!` or a select, or one dropped before it completed) would
//! overwrite the first or take its result, so it is refused, and so is a
//! thread ending with one unfinished. That keeps exactly one operation
//! outstanding, so the future polled while a result waits is the one that
//! posted it: each result goes to its own operation. (The engine polls a
//! thread only once its operation is done, so an unfinished operation is
//! either still in the op slot, posted in the same poll, or done with its
//! result unclaimed.) The checks ride on what the mailbox does anyway, so
//! they cost next to nothing per operation.

use finegrain_core::config::ComputeParams;
use finegrain_core::{
    Access, AmError, Args, HandlerId, Message, NodeId, Payload, Proc, Region, SyncKey, ThreadId, Work,
};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// What a thread asked the machine to do.
#[derive(Debug)]
pub(crate) enum Op {
    Work(u64),
    Request {
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    },
    /// A one-way message (`Proc::send_keyed`): done once it is sent.
    Send {
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    },
    /// `Proc::wait_until` found its condition false: done once a handler
    /// has run at the thread's node, when the condition is checked again.
    /// With a key (`Proc::wait_until_keyed`), only handlers of that key (or
    /// the sequential or nosync key) can have made it true.
    Await(Option<u64>),
    Access {
        region: Region,
        offset: u64,
        len: u32,
        kind: Access,
    },
    Poll,
    Idle(u64),
    // Not an operation: a second one was posted beside the first (a future
    // has nowhere else to put the error; the engine reports it when it
    // takes this). A variant rather than a wrapper around `Op`, so the slot
    // costs no more to fill and empty.
    TwoAtOnce,
}

#[derive(Debug)]
pub(crate) enum OpResult {
    Done,
    Reply(Message),
    Failed(AmError),
}

/// The counted part of a thread's charged computation: its cycles under
/// the cost model and the private loads and stores it made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counted {
    pub cycles: u64,
    pub accesses: u64,
    pub stores: u64,
}

/// State shared between a thread's [`SimProc`] handle and the engine.
pub(crate) struct ThreadShared {
    pub node: NodeId,
    pub thread: ThreadId,
    pub nodes: u32,
    pub threads_per_node: u32,
    pub seed: u64,
    pub op: RefCell<Option<Op>>,
    pub result: RefCell<Option<OpResult>>,
    /// Cycles charged with `Proc::charge` or `Proc::charge_work` since
    /// the last operation.
    pub charged: Cell<u64>,
    /// What of `charged` came from counted work, and its private accesses.
    pub counted: Cell<Counted>,
    /// The machine's cost model for counted work.
    pub cost: ComputeParams,
    /// The engine's clock when it last polled the thread.
    pub now: Cell<u64>,
    /// The thread waits in `Proc::wait_for_block`: released, it reissues
    /// an access that missed.
    pub waits_for_block: Cell<bool>,
}

impl ThreadShared {
    pub fn new(
        node: NodeId,
        thread: ThreadId,
        nodes: u32,
        threads_per_node: u32,
        seed: u64,
        cost: ComputeParams,
    ) -> ThreadShared {
        ThreadShared {
            node,
            thread,
            nodes,
            threads_per_node,
            seed,
            op: RefCell::new(None),
            result: RefCell::new(None),
            charged: Cell::new(0),
            counted: Cell::new(Counted::default()),
            cost,
            now: Cell::new(0),
            waits_for_block: Cell::new(false),
        }
    }

    /// Whether an operation is unfinished: posted (and not yet taken by the
    /// engine), or done with its result unclaimed.
    pub fn unfinished(&self) -> bool {
        self.op.borrow().is_some() || self.result.borrow().is_some()
    }
}

/// Ways a thread can misuse its operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpFault {
    /// A second operation while one was unfinished.
    TwoAtOnce,
    /// The thread ended with an operation unfinished.
    Abandoned,
}

impl OpFault {
    pub fn describe(self) -> &'static str {
        match self {
            OpFault::TwoAtOnce => {
                "the thread awaited two finegrain operations at once (with join!, a select, or by starting one while a dropped one was unfinished); allowed: one at a time, each awaited to completion"
            }
            OpFault::Abandoned => {
                "the thread ended with a finegrain operation unfinished (dropped or leaked before it completed), which would lose it; allowed: await each operation to completion"
            }
        }
    }
}

/// A simulated thread's handle on the machine: the simulator's
/// implementation of [`Proc`].
pub struct SimProc {
    pub(crate) shared: Rc<ThreadShared>,
}

struct OpFuture<'a> {
    shared: &'a ThreadShared,
    op: Option<Op>,
}

impl Future for OpFuture<'_> {
    type Output = OpResult;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<OpResult> {
        if let Some(op) = self.op.take() {
            let mut slot = self.shared.op.borrow_mut();
            if slot.is_some() {
                // Posted beside another in this poll: overwriting it would
                // lose it. This one keeps its op, so it never takes the
                // other's result.
                *slot = Some(Op::TwoAtOnce);
                drop(slot);
                self.op = Some(op);
                return Poll::Pending;
            }
            *slot = Some(op);
            return Poll::Pending;
        }
        match self.shared.result.borrow_mut().take() {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        }
    }
}

impl SimProc {
    fn submit(&self, op: Op) -> OpFuture<'_> {
        OpFuture { shared: &self.shared, op: Some(op) }
    }

    /// `wait_until` and `wait_until_keyed` (`watch`: the key, if one).
    async fn wait(&self, watch: Option<u64>, done: impl Fn() -> bool) -> Result<(), AmError> {
        loop {
            if done() {
                return Ok(());
            }
            match self.submit(Op::Await(watch)).await {
                OpResult::Done => {}
                OpResult::Failed(e) => return Err(e),
                OpResult::Reply(_) => return Err(AmError::Aborted("a wait completed with a reply".into())),
            }
        }
    }
}

/// The key a keyed wait watches: none for the sequential and nosync keys,
/// whose handlers may touch anything.
fn watched(key: SyncKey) -> Option<u64> {
    match key {
        SyncKey::Key(k) => Some(k),
        SyncKey::Sequential | SyncKey::NoSync => None,
    }
}

impl Proc for SimProc {
    fn node(&self) -> NodeId {
        self.shared.node
    }

    fn thread(&self) -> ThreadId {
        self.shared.thread
    }

    fn nodes(&self) -> u32 {
        self.shared.nodes
    }

    fn threads_per_node(&self) -> u32 {
        self.shared.threads_per_node
    }

    fn seed(&self) -> u64 {
        self.shared.seed
    }

    fn now(&self) -> u64 {
        self.shared.now.get() + self.shared.charged.get()
    }

    async fn work(&self, cycles: u64) {
        self.submit(Op::Work(cycles)).await;
    }

    fn charge(&self, cycles: u64) {
        self.shared.charged.set(self.shared.charged.get().saturating_add(cycles));
    }

    fn charge_work(&self, work: Work) {
        let cycles = self.shared.cost.cycles(&work);
        self.charge(cycles);
        let c = self.shared.counted.get();
        self.shared.counted.set(Counted {
            cycles: c.cycles.saturating_add(cycles),
            accesses: c.accesses.saturating_add(work.accesses()),
            stores: c.stores.saturating_add(work.stores),
        });
    }

    async fn request_keyed(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> Result<Message, AmError> {
        match self.submit(Op::Request { dst, handler, key, args, payload }).await {
            OpResult::Reply(m) => Ok(m),
            OpResult::Failed(e) => Err(e),
            OpResult::Done => Err(AmError::Aborted("request completed without a reply".into())),
        }
    }

    async fn send_keyed(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> Result<(), AmError> {
        match self.submit(Op::Send { dst, handler, key, args, payload }).await {
            OpResult::Done => Ok(()),
            OpResult::Failed(e) => Err(e),
            OpResult::Reply(_) => Err(AmError::Aborted("a one-way send completed with a reply".into())),
        }
    }

    /// Each `Op::Await` is one operation, awaited to completion before the
    /// condition is checked again, so the mailbox holds one at a time. A
    /// wait nothing ends is the engine's to report (no event left).
    async fn wait_until(&self, done: impl Fn() -> bool) -> Result<(), AmError> {
        self.wait(None, done).await
    }

    async fn wait_until_keyed(&self, key: SyncKey, done: impl Fn() -> bool) -> Result<(), AmError> {
        self.wait(watched(key), done).await
    }

    async fn wait_for_block(&self, key: SyncKey, done: impl Fn() -> bool) -> Result<(), AmError> {
        self.shared.waits_for_block.set(true);
        let waited = self.wait(watched(key), done).await;
        self.shared.waits_for_block.set(false);
        waited
    }

    async fn access(&self, region: Region, offset: u64, len: u32, kind: Access) {
        self.submit(Op::Access { region, offset, len, kind }).await;
    }

    async fn poll(&self) {
        self.submit(Op::Poll).await;
    }

    async fn idle(&self, cycles: u64) {
        self.submit(Op::Idle(cycles)).await;
    }
}

pub use finegrain_core::mix_seed;

#[cfg(test)]
mod tests {
    use super::*;

    fn test_cost() -> ComputeParams {
        ComputeParams {
            access_interval_cycles: 8,
            write_percent: 30,
            issue_width: 2,
            memory_ports: 1,
            fp_units: 1,
            long_flop_cycles: 20,
        }
    }

    #[test]
    fn counted_work_is_charged_by_the_cost_model_and_keeps_its_accesses() {
        let p = SimProc { shared: Rc::new(ThreadShared::new(NodeId(0), ThreadId(0), 1, 1, 0, test_cost())) };
        p.charge(10);
        // 8 instructions over 2 slots (4), 5 accesses on one port (5), 2
        // flops on one unit (2): 5 cycles, plus one divide's 20.
        p.charge_work(Work::new(2, 1, 1, 3, 2));
        assert_eq!(p.shared.charged.get(), 35);
        assert_eq!(p.shared.counted.get(), Counted { cycles: 25, accesses: 5, stores: 2 });
    }

    fn poll(f: &mut Pin<Box<OpFuture<'_>>>) -> Poll<OpResult> {
        f.as_mut().poll(&mut Context::from_waker(std::task::Waker::noop()))
    }

    #[test]
    fn a_second_operation_posted_beside_the_first_is_marked_and_keeps_its_op() {
        let p = SimProc { shared: Rc::new(ThreadShared::new(NodeId(0), ThreadId(0), 1, 1, 0, test_cost())) };
        let mut first = Box::pin(p.submit(Op::Work(1)));
        let mut second = Box::pin(p.submit(Op::Work(2)));
        assert!(poll(&mut first).is_pending());
        assert!(matches!(*p.shared.op.borrow(), Some(Op::Work(1))));
        assert!(poll(&mut second).is_pending());
        assert!(matches!(*p.shared.op.borrow(), Some(Op::TwoAtOnce)));
        // A result arriving now is not the second one's to take.
        *p.shared.result.borrow_mut() = Some(OpResult::Done);
        assert!(poll(&mut second).is_pending());
        assert!(p.shared.unfinished());
    }
}
