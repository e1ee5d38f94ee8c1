//! What applications and handlers see: [`RtProc`], the runtime's
//! implementation of [`Proc`] for a compute thread, the reply it lends
//! ([`ReplyView`]), and the [`HandlerCtx`] handlers reply through.

use super::cluster::{Completion, FAIL_ERROR};
use super::thread::ThreadCtx;
use crate::config::RtConfig;
use crate::stats::ThreadTimes;
use crate::transport::{Outgoing, Transport, MAX_PAYLOAD};
use finegrain_core::{
    check_send_target, Access, AmError, Args, HandlerCtx, HandlerId, Message, MsgKind, NodeId, Payload, Proc, Region,
    Reply, ReplyGuard, SyncKey, ThreadId, Work, MAX_ARGS,
};
use std::rc::Rc;
use std::sync::atomic::Ordering;

/// The runtime's [`HandlerCtx`]: replies go straight to the transport (into
/// the requester's ring, in process).
pub(super) struct RtHandlerCtx<'a, T: Transport> {
    pub(super) thread: &'a ThreadCtx<T>,
    pub(super) msg: &'a Message,
    pub(super) guard: ReplyGuard<'a>,
}

impl<T: Transport> HandlerCtx for RtHandlerCtx<'_, T> {
    fn node(&self) -> NodeId {
        NodeId(self.thread.node)
    }

    fn reply(&mut self, reply: Reply) -> Result<(), AmError> {
        self.reply_bytes(reply.handler, reply.args, reply.payload.as_slice())
    }

    fn reply_bytes(&mut self, handler: HandlerId, args: Args, data: &[u8]) -> Result<(), AmError> {
        let m = self.msg;
        // A reply to a one-way message keeps its token 0: its handler runs
        // at the sender's node and completes no thread (see `handle`).
        if data.len() > MAX_PAYLOAD {
            return Err(AmError::PayloadTooLarge {
                what: format!("handler '{}''s reply payload", self.guard.handler()),
                given: data.len(),
                max: MAX_PAYLOAD,
                platform: "the native runtime",
            });
        }
        // A refused reply ends the run even if the handler ignores the
        // error, as in the simulator: the rule it breaks is what keeps
        // active messages deadlock-free.
        if let Err(e) = self.guard.admit_reply(handler) {
            self.thread.cluster.fail(FAIL_ERROR, m.handler, Some(e.clone()));
            return Err(e);
        }
        self.thread.send(
            m.src_node.0,
            &Outgoing {
                kind: MsgKind::Reply,
                handler,
                src_node: NodeId(self.thread.node),
                src_thread: m.src_thread,
                token: m.token,
                key: SyncKey::NoSync,
                args: args.as_slice(),
                payload: data,
            },
        );
        Ok(())
    }

    fn send(
        &mut self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> Result<(), AmError> {
        let cluster = &self.thread.cluster;
        check_send_target(dst, cluster.cfg.run.topology.nodes, handler, cluster.handlers.len())?;
        if payload.len() > MAX_PAYLOAD {
            return Err(AmError::PayloadTooLarge {
                what: format!("handler '{}''s protocol message payload", self.guard.handler()),
                given: payload.len(),
                max: MAX_PAYLOAD,
                platform: "the native runtime",
            });
        }
        // Token 0: a one-way message, which completes no thread; the
        // transport spills rather than blocks, so a handler never waits.
        self.thread.send(
            dst.0,
            &Outgoing {
                kind: MsgKind::Request,
                handler,
                src_node: NodeId(self.thread.node),
                src_thread: ThreadId(self.thread.local),
                token: 0,
                key,
                args: args.as_slice(),
                payload: payload.as_slice(),
            },
        );
        Ok(())
    }

    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access) {
        if let Err(reason) = self.thread.touch(region, offset, len, kind) {
            let e = AmError::HandlerFailed { handler: self.guard.handler().to_string(), reason };
            self.thread.cluster.fail(FAIL_ERROR, self.msg.handler, Some(e));
        }
    }

    fn charge(&mut self, _cycles: u64) {}
}

/// A native compute thread's handle: the runtime's implementation of
/// [`Proc`].
#[derive(Clone)]
pub struct RtProc {
    ctx: Rc<dyn ThreadOps>,
}

/// What [`RtProc`] asks of its thread, whatever the transport under it
/// (one indirect call per operation, against the hundreds of nanoseconds
/// a request takes).
pub(super) trait ThreadOps {
    fn node(&self) -> u32;
    fn local(&self) -> u32;
    fn cfg(&self) -> &RtConfig;
    fn request_dyn(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
        f: &mut dyn FnMut(&Completion),
    ) -> Result<(), AmError>;
    fn send_oneway(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
    ) -> Result<(), AmError>;
    fn serve(&self, stop: &dyn Fn() -> bool);
    fn wait_until(&self, done: &dyn Fn() -> bool) -> Result<(), AmError>;
    fn times(&self) -> ThreadTimes;
    fn work(&self, cycles: u64);
    fn touch(&self, region: Region, offset: u64, len: u32, kind: Access) -> Result<(), String>;
    fn fail_thread(&self, error: AmError);
    fn poll_site(&self);
    fn idle(&self, cycles: u64);
}

impl<T: Transport> ThreadOps for ThreadCtx<T> {
    fn node(&self) -> u32 {
        self.node
    }
    fn local(&self) -> u32 {
        self.local
    }
    fn cfg(&self) -> &RtConfig {
        &self.cluster.cfg
    }
    fn request_dyn(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
        f: &mut dyn FnMut(&Completion),
    ) -> Result<(), AmError> {
        self.request_with(dst, handler, key, args, payload, f)
    }
    fn send_oneway(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
    ) -> Result<(), AmError> {
        ThreadCtx::send_oneway(self, dst, handler, key, args, payload)
    }
    fn serve(&self, stop: &dyn Fn() -> bool) {
        if self.takes_forwarded {
            return self.serve_forwarded(stop);
        }
        ThreadCtx::serve(self, stop)
    }
    fn wait_until(&self, done: &dyn Fn() -> bool) -> Result<(), AmError> {
        ThreadCtx::wait_until(self, done)
    }
    fn times(&self) -> ThreadTimes {
        self.stats.times(self.node, self.local, true)
    }
    fn work(&self, cycles: u64) {
        ThreadCtx::work(self, cycles)
    }
    fn touch(&self, region: Region, offset: u64, len: u32, kind: Access) -> Result<(), String> {
        ThreadCtx::touch(self, region, offset, len, kind)
    }
    fn fail_thread(&self, error: AmError) {
        self.cluster.fail_thread(self.node, self.local, error)
    }
    fn poll_site(&self) {
        ThreadCtx::poll_site(self)
    }
    fn idle(&self, cycles: u64) {
        ThreadCtx::idle(self, cycles)
    }
}

impl RtProc {
    pub(super) fn new<T: Transport>(ctx: Rc<ThreadCtx<T>>) -> RtProc {
        RtProc { ctx }
    }

    /// A request whose reply `f` reads in place.
    fn request_in_place<R>(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
        f: impl FnOnce(&Completion) -> R,
    ) -> Result<R, AmError> {
        let mut f = Some(f);
        let mut out = None;
        self.ctx.request_dyn(dst, handler, key, args, payload, &mut |c| {
            if let Some(f) = f.take() {
                out = Some(f(c));
            }
        })?;
        out.ok_or_else(super::cluster::run_aborted)
    }
}

/// A reply, borrowed in place from the thread's mailbox.
pub struct ReplyView<'a> {
    c: &'a Completion,
}

impl ReplyView<'_> {
    pub fn args(&self) -> Args {
        let n = self.c.nargs.load(Ordering::Relaxed) as usize;
        let a: [u64; MAX_ARGS] = std::array::from_fn(|i| self.c.args[i].load(Ordering::Relaxed));
        Args::new(&a[..n]).expect("at most MAX_ARGS")
    }

    pub fn payload(&self) -> &[u8] {
        // SAFETY: the reply handler finished writing before publishing the
        // token this thread waited for, and no other reply can arrive until
        // this thread sends its next request, which it cannot do while the
        // view exists: views live only inside `request_with`'s closure, and
        // a request made from there is refused (see `reply_lent`).
        unsafe { (*self.c.payload.get()).as_slice() }
    }
}

impl RtProc {
    /// Sends a request and lends its reply to `f` without copying it out.
    ///
    /// The reply stays in the thread's one reply buffer while `f` runs, so
    /// `f` may not make another request from this thread (through a clone of
    /// this handle): that request fails at once with an error saying so.
    /// One-way sends, work and the rest remain allowed.
    pub fn request_with<R>(
        &self,
        dst: NodeId,
        handler: HandlerId,
        args: &[u64],
        payload: &[u8],
        f: impl FnOnce(ReplyView) -> R,
    ) -> Result<R, AmError> {
        self.request_in_place(dst, handler, SyncKey::Sequential, args, payload, |c| f(ReplyView { c }))
    }

    /// [`RtProc::request_with`] with a synchronization key.
    pub fn request_keyed_with<R>(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
        f: impl FnOnce(ReplyView) -> R,
    ) -> Result<R, AmError> {
        self.request_in_place(dst, handler, key, args, payload, |c| f(ReplyView { c }))
    }

    /// The reply as an owned message.
    fn reply_message(&self, c: &Completion) -> Message {
        let view = ReplyView { c };
        Message {
            kind: MsgKind::Reply,
            src_node: NodeId(c.src_node.load(Ordering::Relaxed)),
            src_thread: ThreadId(self.ctx.local()),
            dst_node: NodeId(self.ctx.node()),
            handler: HandlerId(c.handler.load(Ordering::Relaxed) as u16),
            key: SyncKey::NoSync,
            args: view.args(),
            payload: Payload::bytes(view.payload()),
            token: c.token.load(Ordering::Relaxed),
        }
    }

    /// Sends a one-way active message (see [`Proc::send_keyed`]).
    /// It carries the `Sequential` key (see [`Proc::request`]).
    pub fn send(&self, dst: NodeId, handler: HandlerId, args: &[u64], payload: &[u8]) -> Result<(), AmError> {
        self.ctx.send_oneway(dst, handler, SyncKey::Sequential, args, payload)
    }

    /// [`RtProc::send`] with a synchronization key.
    pub fn send_keyed(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: &[u64],
        payload: &[u8],
    ) -> Result<(), AmError> {
        self.ctx.send_oneway(dst, handler, key, args, payload)
    }

    /// Acts as protocol processor for this node until `stop` returns true
    /// (or the run fails).
    ///
    /// Only where compute threads may handle messages (policies single,
    /// floating and coprocessor; under coproc-am and optimized the main
    /// thread runs what the progress thread forwards to it); under fixed
    /// they never do, so this fails at once.
    pub fn serve(&self, stop: impl Fn() -> bool) -> Result<(), AmError> {
        let cfg = self.ctx.cfg();
        let policy = cfg.run.policy;
        if !policy.compute_procs_handle() && !cfg.progress_thread() {
            return Err(AmError::NotAllowed(format!(
                "RtProc::serve on a compute thread under policy {}, whose compute threads never handle messages: \
                 only single, floating and coprocessor let them serve (use idle to let time pass)",
                policy.label()
            )));
        }
        self.ctx.serve(&stop);
        Ok(())
    }

    /// This thread's time split so far.
    pub fn times(&self) -> ThreadTimes {
        self.ctx.times()
    }
}

impl Proc for RtProc {
    fn node(&self) -> NodeId {
        NodeId(self.ctx.node())
    }

    fn thread(&self) -> ThreadId {
        ThreadId(self.ctx.local())
    }

    fn nodes(&self) -> u32 {
        self.ctx.cfg().run.topology.nodes
    }

    fn threads_per_node(&self) -> u32 {
        self.ctx.cfg().compute_threads_per_node()
    }

    fn seed(&self) -> u64 {
        finegrain_core::mix_seed(self.ctx.cfg().run.seed, self.ctx.node() as u64 + 1, self.ctx.local() as u64 + 1)
    }

    fn now(&self) -> u64 {
        crate::clock::now_ns()
    }

    async fn work(&self, cycles: u64) {
        self.ctx.work(cycles)
    }

    fn charge(&self, _cycles: u64) {}

    /// Natively the counted work was really done: nothing to add.
    fn charge_work(&self, _work: Work) {}

    async fn request_keyed(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> Result<Message, AmError> {
        self.request_in_place(dst, handler, key, args.as_slice(), payload.as_slice(), |c| self.reply_message(c))
    }

    async fn send_keyed(
        &self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> Result<(), AmError> {
        self.ctx.send_oneway(dst, handler, key, args.as_slice(), payload.as_slice())
    }

    async fn wait_until(&self, done: impl Fn() -> bool) -> Result<(), AmError> {
        self.ctx.wait_until(&done)
    }

    async fn access(&self, region: Region, offset: u64, len: u32, kind: Access) {
        if let Err(reason) = self.ctx.touch(region, offset, len, kind) {
            // The same words as the simulator's.
            let error = AmError::Aborted(format!("thread access rejected: {reason}"));
            self.ctx.fail_thread(error);
        }
    }

    async fn poll(&self) {
        self.ctx.poll_site()
    }

    async fn idle(&self, cycles: u64) {
        self.ctx.idle(cycles)
    }
}
