//! Simulated application threads: async tasks on the engine's executor.
//!
//! A thread's future talks to the engine through a one-slot mailbox: an
//! operation future posts its request (`Op`) and returns `Pending`; the
//! engine takes the op, simulates it on the thread's processor, stores the
//! result and polls the task again. The engine always knows when a task can
//! make progress, so no wakers are needed and polling order is fixed by the
//! event order, which keeps runs deterministic.

use finegrain_core::{Access, AmError, Args, HandlerId, Message, NodeId, Payload, Proc, Region, SyncKey, ThreadId};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// What a thread asked the machine to do.
#[derive(Debug)]
pub(crate) enum Op {
    Work(u64),
    Request { dst: NodeId, handler: HandlerId, key: SyncKey, args: Args, payload: Payload },
    Access { region: Region, offset: u64, len: u32, kind: Access },
    Poll,
    Idle(u64),
}

#[derive(Debug)]
pub(crate) enum OpResult {
    Done,
    Reply(Message),
    Failed(AmError),
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
    /// Cycles charged with `Proc::charge` since the last operation.
    pub charged: Cell<u64>,
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
            *self.shared.op.borrow_mut() = Some(op);
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

    async fn work(&self, cycles: u64) {
        self.submit(Op::Work(cycles)).await;
    }

    fn charge(&self, cycles: u64) {
        self.shared.charged.set(self.shared.charged.get().saturating_add(cycles));
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
