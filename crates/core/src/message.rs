//! Active messages: a handler id, a synchronization key, a few word
//! arguments and an optional payload.

use crate::ids::{HandlerId, NodeId, ThreadId};

/// Word arguments an active message carries besides its payload. Four words
/// is what the CM-5 and Tempest active messages carried; more data goes in
/// the payload.
pub const MAX_ARGS: usize = 4;

/// Which protocol resources a handler touches (Parallel Dispatch Queue).
/// Handlers with different keys may run in parallel; same-key handlers run
/// one at a time in arrival order; `Sequential` runs alone; `NoSync` is never
/// held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SyncKey {
    Key(u64),
    #[default]
    Sequential,
    NoSync,
}

/// Small fixed-size argument block (no allocation per message).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Args {
    words: [u64; MAX_ARGS],
    len: u8,
}

impl Args {
    /// Builds an argument block; at most [`MAX_ARGS`] words.
    pub fn new(words: &[u64]) -> Result<Args, crate::AmError> {
        if words.len() > MAX_ARGS {
            return Err(crate::AmError::TooManyArgs { given: words.len() });
        }
        let mut a = Args::default();
        a.words[..words.len()].copy_from_slice(words);
        a.len = words.len() as u8;
        Ok(a)
    }

    pub fn as_slice(&self) -> &[u64] {
        &self.words[..self.len as usize]
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The i-th word, or 0 when absent (handlers of a fixed protocol know
    /// how many words they were sent).
    pub fn get(&self, i: usize) -> u64 {
        if i < self.len as usize {
            self.words[i]
        } else {
            0
        }
    }
}

/// Bulk data carried by a message. `None` is the common, allocation-free
/// case.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Payload(Option<Box<[u8]>>);

impl Payload {
    pub fn none() -> Payload {
        Payload(None)
    }

    pub fn bytes(data: &[u8]) -> Payload {
        if data.is_empty() {
            Payload(None)
        } else {
            Payload(Some(data.into()))
        }
    }

    pub fn zeroed(len: usize) -> Payload {
        if len == 0 {
            Payload(None)
        } else {
            Payload(Some(vec![0u8; len].into_boxed_slice()))
        }
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |b| b.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        self.0.as_deref().unwrap_or(&[])
    }
}

/// Requests may be answered by one reply; replies may not be answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgKind {
    Request,
    Reply,
}

/// One active message in flight.
#[derive(Clone, Debug)]
pub struct Message {
    pub kind: MsgKind,
    pub src_node: NodeId,
    /// Thread that issued the request this message belongs to (for a reply:
    /// the thread the reply completes).
    pub src_thread: ThreadId,
    pub dst_node: NodeId,
    pub handler: HandlerId,
    pub key: SyncKey,
    pub args: Args,
    pub payload: Payload,
    /// Identifies the request a reply answers.
    pub token: u64,
}

/// What a request handler sends back.
#[derive(Clone, Debug)]
pub struct Reply {
    pub handler: HandlerId,
    pub args: Args,
    pub payload: Payload,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_reject_more_than_max() {
        assert!(Args::new(&[1, 2, 3, 4]).is_ok());
        let err = Args::new(&[1, 2, 3, 4, 5]).unwrap_err();
        assert!(err.to_string().contains("at most 4"), "{err}");
    }

    #[test]
    fn args_get_and_slice() {
        let a = Args::new(&[7, 9]).unwrap();
        assert_eq!(a.as_slice(), &[7, 9]);
        assert_eq!(a.get(1), 9);
        assert_eq!(a.get(3), 0);
    }

    #[test]
    fn empty_payload_allocates_nothing() {
        assert_eq!(Payload::bytes(&[]), Payload::none());
        assert_eq!(Payload::zeroed(128).len(), 128);
    }
}
