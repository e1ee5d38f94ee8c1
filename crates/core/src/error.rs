//! Errors of the messaging layer, shared by every platform.

use thiserror::Error;

/// Errors of the messaging layer, shared by both platforms.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AmError {
    #[error("handler '{handler}' is a reply handler and tried to send a reply; reply handlers may not send messages")]
    ReplyFromReplyHandler { handler: String },
    #[error("handler '{handler}' sent a second reply; a request handler may send at most one reply")]
    SecondReply { handler: String },
    #[error("handler '{handler}' failed: its reply names unknown handler id {id} (the table has {len} handlers)")]
    ReplyToUnknownHandler { handler: String, id: u16, len: usize },
    #[error(
        "handler '{handler}' failed: returned without replying to a request sent with Proc::request, whose thread \
         would wait forever"
    )]
    NoReply { handler: String },
    #[error("an active message carries at most 4 argument words, {given} given")]
    TooManyArgs { given: usize },
    #[error("unknown handler id {id}: the table has {len} handlers")]
    UnknownHandler { id: u16, len: usize },
    #[error("handler table is full: at most 65535 handlers")]
    TableFull,
    #[error("node {node} does not exist: the machine has nodes 0..{nodes}")]
    NoSuchNode { node: u32, nodes: u32 },
    #[error("handler '{handler}' failed: {reason}")]
    HandlerFailed { handler: String, reason: String },
    #[error("the run was aborted: {0}")]
    Aborted(String),
    /// A payload over a platform's limit, refused before anything is sent.
    #[error("{what} of {given} bytes: allowed at most {max} bytes on {platform}")]
    PayloadTooLarge { what: String, given: usize, max: usize, platform: &'static str },
    /// An operation the platform's configuration does not allow where it
    /// was made; the message says why and what to do instead.
    #[error("{0}")]
    NotAllowed(String),
}
