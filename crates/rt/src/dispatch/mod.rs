//! Dispatch: which of a node's threads handles which message, and when.
//!
//! A node's messages are taken from its transport [`Inbox`] by whoever
//! holds the node's *receive right*, under one of two disciplines:
//! - [`serial`]: one thread at a time acts as the node's protocol
//!   processor. It holds the role (a try-lock) and drains the lanes
//!   round-robin, running each handler as it decodes it (Tempest
//!   semantics: one handler at a time per node). Used by Single, Fixed
//!   and Floating under the serial discipline.
//! - [`keyed`]: several threads serve at once through the node's
//!   [`KeyedQueue`](keyed::KeyedQueue): one of them at a time ingests from
//!   the lanes (its ingest lock is the receive right), and a dispatch lock
//!   hands out decoded entries under PDQ's rules (distinct keys in
//!   parallel, a key's handlers in arrival order, sequential ones alone) or
//!   under a lock per key. Threads serving it may be limited in number
//!   ([`keyed::ServerLimit`], Hurricane-1 Mult's K).
//! - [`spin`]: the short spinning lock the keyed queue's critical
//!   sections use.
//!
//! Nothing here knows how messages travel (that is
//! [`crate::transport`]) or how a thread learns that one arrived (that is
//! [`crate::notify`]); handlers are run through a callback the runtime
//! passes in.
//!
//! [`Inbox`]: crate::transport::Inbox

pub(crate) mod keyed;
pub(crate) mod serial;
pub(crate) mod spin;
