//! Handler tables and the Active Message request/reply rule.
//!
//! A handler is a plain, short, non-blocking function. The rule every
//! platform enforces at run time: a request handler sends at most one reply,
//! a reply handler sends nothing. The rule is what makes active messages
//! deadlock-free without buffering guarantees, so a violation is reported as
//! an error naming the handler instead of being allowed to wedge a node.

use crate::error::AmError;
use crate::ids::{HandlerId, NodeId};
use crate::memory::{Access, Region};
use crate::message::{Args, Message, MsgKind, Payload, Reply, SyncKey};
use std::sync::Arc;

/// What a handler may do. Each platform implements it: the simulator charges
/// every call to the processor running the handler; the native runtime does
/// the real work.
pub trait HandlerCtx {
    /// The node the handler runs on.
    fn node(&self) -> NodeId;
    /// Answers the request being handled. Allowed once, from request
    /// handlers only.
    fn reply(&mut self, reply: Reply) -> Result<(), AmError>;
    /// Answers with a payload copied from `data`. A runtime may write it
    /// straight into its send queue, without allocating, which is what
    /// handlers that can run in interrupt context need.
    fn reply_bytes(&mut self, handler: HandlerId, args: Args, data: &[u8]) -> Result<(), AmError> {
        self.reply(Reply { handler, args, payload: Payload::bytes(data) })
    }
    /// Sends a protocol message from inside a handler: a one-way request
    /// to `dst` (this node too) carrying `key`, whose handler may send
    /// more. Coherence protocols need it: a DSM home forwards
    /// invalidations and fetches to other nodes before it can answer
    /// (Stache, HPCA 1999 Section 4). Such messages are outside the
    /// request/reply rule, so a protocol using them must not depend on
    /// bounded buffering; every platform queues them without loss. Allowed
    /// from request and reply handlers alike.
    fn send(
        &mut self,
        dst: NodeId,
        handler: HandlerId,
        key: SyncKey,
        args: Args,
        payload: Payload,
    ) -> Result<(), AmError>;
    /// Touches node memory (the simulator models the caches and bus; the
    /// native runtime ignores it, since real handlers touch real memory).
    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access);
    /// Accounts for `cycles` of handler instructions beyond the handler's
    /// registered body cost.
    fn charge(&mut self, cycles: u64);
}

/// Checks where a handler's protocol message ([`HandlerCtx::send`]) goes:
/// a node of the machine and a handler of the table. Every platform
/// refuses the same sends with the same errors.
pub fn check_send_target(dst: NodeId, nodes: u32, handler: HandlerId, handlers: usize) -> Result<(), AmError> {
    if dst.0 >= nodes {
        return Err(AmError::NoSuchNode { node: dst.0, nodes });
    }
    if handler.index() >= handlers {
        return Err(AmError::UnknownHandler { id: handler.0, len: handlers });
    }
    Ok(())
}

/// The function type of a handler.
pub type HandlerFn = Arc<dyn Fn(&mut dyn HandlerCtx, &Message) -> Result<(), AmError> + Send + Sync>;

/// Static description of a handler: its name (for errors and statistics)
/// and its cost on the reference machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerInfo {
    pub name: String,
    /// Instructions of the handler body, in processor cycles.
    pub body_cycles: u64,
    /// Size of the handler's code; the simulator fetches it through the
    /// running processor's cache.
    pub code_bytes: u32,
}

/// What a handler of a communication library does, for platforms that can
/// do the same work without running a generic handler: a co-processor with
/// a DMA engine and remote atomic add moves Split-C's data itself (IPPS
/// 1996 Section 4.3). The handler still runs, so the data really moves;
/// the mark only tells the platform what it may cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LibraryOp {
    /// At the owner: read the words a get asks for and reply with them.
    GetRequest,
    /// At the requester: deposit a get's words, count the get done.
    GetReply,
    /// At the owner: write a put's words and acknowledge.
    PutRequest,
    /// At the requester: count the put done.
    PutAck,
    /// At the owner: write a store's words and count them received.
    Store,
    /// A user's atomic function: runs on the main processor, atomically
    /// with respect to other handlers and the computation.
    Atomic,
    /// The library's own bookkeeping (barrier arrivals, store counts).
    Control,
}

/// The handlers of one program, identical on every node (SPMD).
#[derive(Clone, Default)]
pub struct HandlerTable {
    infos: Vec<HandlerInfo>,
    fns: Vec<HandlerFn>,
    ops: Vec<Option<LibraryOp>>,
}

impl HandlerTable {
    pub fn new() -> HandlerTable {
        HandlerTable::default()
    }

    pub fn register(
        &mut self,
        info: HandlerInfo,
        f: impl Fn(&mut dyn HandlerCtx, &Message) -> Result<(), AmError> + Send + Sync + 'static,
    ) -> Result<HandlerId, AmError> {
        let id = u16::try_from(self.infos.len()).map_err(|_| AmError::TableFull)?;
        if id == u16::MAX {
            return Err(AmError::TableFull);
        }
        self.infos.push(info);
        self.fns.push(Arc::new(f));
        self.ops.push(None);
        Ok(HandlerId(id))
    }

    /// Registers a communication library's handler, marked with what it
    /// does (see [`LibraryOp`]).
    pub fn register_library(
        &mut self,
        info: HandlerInfo,
        op: LibraryOp,
        f: impl Fn(&mut dyn HandlerCtx, &Message) -> Result<(), AmError> + Send + Sync + 'static,
    ) -> Result<HandlerId, AmError> {
        let id = self.register(info, f)?;
        self.ops[id.index()] = Some(op);
        Ok(id)
    }

    /// What library operation a handler is, if it is one.
    pub fn library_op(&self, id: HandlerId) -> Option<LibraryOp> {
        self.ops.get(id.index()).copied().flatten()
    }

    pub fn len(&self) -> usize {
        self.infos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    pub fn info(&self, id: HandlerId) -> Result<&HandlerInfo, AmError> {
        self.infos.get(id.index()).ok_or(AmError::UnknownHandler { id: id.0, len: self.infos.len() })
    }

    pub fn function(&self, id: HandlerId) -> Result<&HandlerFn, AmError> {
        self.fns.get(id.index()).ok_or(AmError::UnknownHandler { id: id.0, len: self.fns.len() })
    }

    /// A handler's description and function in one lookup (the dispatch
    /// hot path).
    #[inline]
    pub fn entry(&self, id: HandlerId) -> Option<(&HandlerInfo, &HandlerFn)> {
        Some((self.infos.get(id.index())?, self.fns.get(id.index())?))
    }

    /// Every handler, in id order.
    pub fn infos(&self) -> impl Iterator<Item = (HandlerId, &HandlerInfo)> {
        self.infos.iter().enumerate().map(|(i, info)| (HandlerId(i as u16), info))
    }
}

/// The request/reply rule for one handler invocation, the one place every
/// platform asks: a request handler replies at most once, a reply handler
/// never, a reply names a handler of the table, and a handler of a request
/// a thread waits on ([`crate::Proc::request`]) must reply. Platforms make
/// one per dispatched message, ask it on every reply, and ask it once the
/// handler returns.
#[derive(Debug)]
pub struct ReplyGuard<'a> {
    kind: MsgKind,
    /// Nonzero when a thread waits for the reply (0: a one-way message).
    token: u64,
    handler: &'a str,
    /// Handlers in the table, to check the id a reply names.
    handlers: usize,
    replied: bool,
}

impl<'a> ReplyGuard<'a> {
    /// The guard of `msg`'s handler, named `handler`, in a table of
    /// `handlers` handlers.
    pub fn new(msg: &Message, handler: &'a str, handlers: usize) -> ReplyGuard<'a> {
        ReplyGuard { kind: msg.kind, token: msg.token, handler, handlers, replied: false }
    }

    /// Records a reply to handler `to`, or says which rule it breaks. A
    /// refused reply is no reply: the handler may still send a valid one.
    #[inline]
    pub fn admit_reply(&mut self, to: HandlerId) -> Result<(), AmError> {
        if self.kind == MsgKind::Request && !self.replied && to.index() < self.handlers {
            self.replied = true;
            return Ok(());
        }
        Err(self.refusal(to))
    }

    /// Why a reply to `to` breaks the rule (kept off the reply's path).
    #[cold]
    #[inline(never)]
    fn refusal(&self, to: HandlerId) -> AmError {
        let handler = self.handler.to_string();
        match self.kind {
            MsgKind::Reply => AmError::ReplyFromReplyHandler { handler },
            MsgKind::Request if self.replied => AmError::SecondReply { handler },
            MsgKind::Request => AmError::ReplyToUnknownHandler { handler, id: to.0, len: self.handlers },
        }
    }

    /// Whether the handler returned owing a reply: it handled a request a
    /// thread waits on and sent none. Asks nothing of the allocator, for
    /// platforms that end handlers in a signal handler.
    pub fn owes_reply(&self) -> bool {
        self.kind == MsgKind::Request && self.token != 0 && !self.replied
    }

    /// Once the handler returned: an error naming it if it owes a reply
    /// (the waiting thread would wait forever).
    pub fn finish(&self) -> Result<(), AmError> {
        match self.owes_reply() {
            true => Err(AmError::NoReply { handler: self.handler.to_string() }),
            false => Ok(()),
        }
    }

    pub fn replied(&self) -> bool {
        self.replied
    }

    /// The name of the handler this guard watches.
    pub fn handler(&self) -> &str {
        self.handler
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: MsgKind, token: u64) -> Message {
        Message {
            kind,
            src_node: NodeId(0),
            src_thread: crate::ThreadId(0),
            dst_node: NodeId(1),
            handler: HandlerId(0),
            key: SyncKey::NoSync,
            args: Args::default(),
            payload: Payload::none(),
            token,
        }
    }

    #[test]
    fn request_handler_may_reply_once() {
        let msg = message(MsgKind::Request, 5);
        let mut g = ReplyGuard::new(&msg, "get", 2);
        assert!(g.owes_reply());
        assert!(g.admit_reply(HandlerId(1)).is_ok());
        assert!(g.replied() && !g.owes_reply() && g.finish().is_ok());
        let e = g.admit_reply(HandlerId(1)).unwrap_err();
        assert_eq!(e, AmError::SecondReply { handler: "get".into() });
        assert_eq!(e.to_string(), "handler 'get' sent a second reply; a request handler may send at most one reply");
    }

    #[test]
    fn reply_handler_may_not_reply() {
        let msg = message(MsgKind::Reply, 5);
        let mut g = ReplyGuard::new(&msg, "get_done", 2);
        let e = g.admit_reply(HandlerId(0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "handler 'get_done' is a reply handler and tried to send a reply; reply handlers may not send messages"
        );
        assert!(!g.replied() && !g.owes_reply() && g.finish().is_ok());
    }

    #[test]
    fn a_reply_names_a_handler_of_the_table_and_a_refused_one_leaves_the_reply_owed() {
        let msg = message(MsgKind::Request, 5);
        let mut g = ReplyGuard::new(&msg, "lost", 2);
        let e = g.admit_reply(HandlerId(77)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "handler 'lost' failed: its reply names unknown handler id 77 (the table has 2 handlers)"
        );
        assert!(g.owes_reply());
        assert!(g.admit_reply(HandlerId(1)).is_ok());
    }

    #[test]
    fn a_request_a_thread_waits_on_must_be_answered_and_a_one_way_one_need_not() {
        let g = ReplyGuard::new(&message(MsgKind::Request, 5), "silent", 2);
        assert_eq!(
            g.finish().unwrap_err().to_string(),
            "handler 'silent' failed: returned without replying to a request sent with Proc::request, whose thread \
             would wait forever"
        );
        let mut one_way = ReplyGuard::new(&message(MsgKind::Request, 0), "quiet", 2);
        assert!(!one_way.owes_reply() && one_way.finish().is_ok());
        // A one-way message's handler may still reply (once).
        assert!(one_way.admit_reply(HandlerId(1)).is_ok());
        assert!(one_way.admit_reply(HandlerId(1)).is_err());
    }

    #[test]
    fn table_lookup_names_the_bad_id() {
        let mut t = HandlerTable::new();
        let id = t.register(HandlerInfo { name: "a".into(), body_cycles: 1, code_bytes: 64 }, |_, _| Ok(())).unwrap();
        assert_eq!(t.info(id).unwrap().name, "a");
        let e = t.info(HandlerId(5)).unwrap_err();
        assert_eq!(e.to_string(), "unknown handler id 5: the table has 1 handlers");
    }
}
