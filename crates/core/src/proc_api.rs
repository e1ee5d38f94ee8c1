//! The Proc API: what an application thread sees, on either platform.
//!
//! An application is an async function run once per compute thread (SPMD),
//! generic over `P: Proc`. The simulator advances virtual time when the
//! thread works or waits; the native runtime really does the work.

use crate::error::AmError;
use crate::ids::{HandlerId, NodeId, ThreadId};
use crate::memory::{Access, Region};
use crate::message::{Args, Message, Payload, SyncKey};
use crate::work::Work;
use std::future::Future;

/// A compute thread's handle on the machine.
pub trait Proc {
    /// The node this thread runs on.
    fn node(&self) -> NodeId;
    /// This thread's number within its node.
    fn thread(&self) -> ThreadId;
    /// Number of nodes in the machine.
    fn nodes(&self) -> u32;
    /// Compute threads per node.
    fn threads_per_node(&self) -> u32;
    /// A seed for this thread's private random stream, derived from the run
    /// seed, the node and the thread, so runs are reproducible.
    fn seed(&self) -> u64;
    /// The platform's clock, for timing a program's phases: simulated
    /// processor cycles in the simulator (including what `charge` has
    /// added), nanoseconds natively. Only differences mean anything.
    fn now(&self) -> u64;
    /// Synthetic work: `cycles` of computation interleaved with random
    /// accesses to the thread's private segment.
    fn work(&self, cycles: u64) -> impl Future<Output = ()>;
    /// Accounts for real computation the code just did (simulator only).
    fn charge(&self, cycles: u64);
    /// Accounts for real computation the code just did, as the operations
    /// it counted: the simulator turns them into cycles and private cache
    /// accesses with the machine's cost model (`[compute]`); natively the
    /// work was really done and this does nothing.
    fn charge_work(&self, work: Work);
    /// Sends an active-message request to `dst` and waits until its reply
    /// handler has run; returns the reply message. The request carries the
    /// `Sequential` key: under a parallel dispatch queue its handler runs
    /// alone, the safe choice for a handler that did not say what it touches.
    fn request(
        &self,
        dst: NodeId,
        handler: HandlerId,
        args: Args,
        payload: Payload,
    ) -> impl Future<Output = Result<Message, AmError>> {
        self.request_keyed(dst, handler, SyncKey::Sequential, args, payload)
    }
    /// [`Proc::request`] with a synchronization key naming what the handler
    /// touches, so a parallel dispatch queue may run it beside handlers with
    /// other keys. (Replies carry `NoSync`: a reply handler touches only the
    /// waiting thread's own completion state.)
    fn request_keyed(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> impl Future<Output = Result<Message, AmError>>;
    /// Sends a one-way active message to `dst`: returns once the message
    /// is on its way, without waiting for anything. Its request handler
    /// may reply (at most once) or not; a reply runs its reply handler at
    /// this node, where no thread waits for it, so the reply handler
    /// itself records what arrived (Split-C's get and put counters work
    /// this way). Wait for what handlers record with
    /// [`Proc::wait_until`].
    fn send_keyed(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> impl Future<Output = Result<(), AmError>>;
    /// Waits until `done` holds, handling messages meanwhile as the
    /// platform's policy lets this thread (so a condition that only a
    /// handler at this node can make true comes true). `done` must read
    /// state that handlers at this node change; the platform checks it
    /// again after each handler that ran here. A wait that cannot end (the
    /// run has nothing left to do, or nothing arrives within the runtime's
    /// progress timeout) fails the run with an error naming it.
    fn wait_until(&self, done: impl Fn() -> bool) -> impl Future<Output = Result<(), AmError>>;
    /// [`Proc::wait_until`] for a condition that only the code of a
    /// handler with synchronization key `key` can make true at this node:
    /// state the key protects, as a parallel dispatch queue has it (a
    /// DSM's block, a lock). Handlers with the sequential or the nosync
    /// key may touch anything, so they count too (and with either as `key`
    /// this is plain `wait_until`). The platform still checks the
    /// condition after every handler here, at the same cost; the simulator
    /// knows a check after handlers of other keys finds it false, and
    /// saves itself the work of polling the thread (its debug builds poll
    /// anyway and fail the run if the promise was broken). The result is
    /// the same as `wait_until`'s.
    fn wait_until_keyed(&self, key: SyncKey, done: impl Fn() -> bool) -> impl Future<Output = Result<(), AmError>> {
        let _ = key;
        self.wait_until(done)
    }
    /// [`Proc::wait_until_keyed`] for a memory block's data after an access
    /// to it missed (a DSM's block access fault): once the condition holds
    /// the thread reissues the access. A platform that models the release
    /// of a stalled access (the simulator's `pdq.*_resume_cycles` with
    /// `pdq.resume_after_misses_only`) charges it here only; to every other
    /// platform this is `wait_until_keyed`.
    fn wait_for_block(&self, key: SyncKey, done: impl Fn() -> bool) -> impl Future<Output = Result<(), AmError>> {
        self.wait_until_keyed(key, done)
    }
    /// Touches memory of this node (for example data a reply handler left in
    /// this thread's receive buffer).
    fn access(&self, region: Region, offset: u64, len: u32, kind: Access) -> impl Future<Output = ()>;
    /// A poll site: handles pending messages if the platform's policy lets
    /// this thread act as protocol processor.
    fn poll(&self) -> impl Future<Output = ()>;
    /// Nothing to compute for `cycles` (waiting on a device, a timer, a
    /// phase of the application elsewhere). Under policies where compute
    /// processors handle messages, the processor serves meanwhile.
    fn idle(&self, cycles: u64) -> impl Future<Output = ()>;
}
