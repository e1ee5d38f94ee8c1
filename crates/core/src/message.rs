//! Active messages: a handler id, a synchronization key, a few word
//! arguments and an optional payload.

use crate::error::AmError;
use crate::ids::{HandlerId, NodeId, ThreadId};

/// Word arguments an active message carries besides its payload. Four words
/// is what the CM-5 and Tempest active messages carried; more data goes in
/// the payload.
pub const MAX_ARGS: usize = 4;

/// Which protocol resources a handler touches (Parallel Dispatch Queue).
/// Handlers with different keys may run in parallel; same-key handlers run
/// one at a time in arrival order; `Sequential` runs alone; `NoSync` is never
/// held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
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
    /// Whether `words` fit one message's arguments (at most [`MAX_ARGS`]).
    pub fn check_len(words: &[u64]) -> Result<(), AmError> {
        if words.len() > MAX_ARGS {
            return Err(AmError::TooManyArgs { given: words.len() });
        }
        Ok(())
    }

    /// Builds an argument block; at most [`MAX_ARGS`] words.
    pub fn new(words: &[u64]) -> Result<Args, AmError> {
        Args::check_len(words)?;
        let mut a = Args::default();
        a.words[..words.len()].copy_from_slice(words);
        a.len = words.len() as u8;
        Ok(a)
    }

    pub fn as_slice(&self) -> &[u64] {
        &self.words[..self.len as usize]
    }

    /// The first `len` words of `words` (at most [`MAX_ARGS`]; a decoder
    /// passes a length its header field cannot make larger). The words
    /// beyond `len` are zeroed, so equal argument lists compare equal.
    pub fn from_array(mut words: [u64; MAX_ARGS], len: usize) -> Args {
        let len = len.min(MAX_ARGS);
        words[len..].fill(0);
        Args { words, len: len as u8 }
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

/// Bulk data carried by a message. An empty payload allocates nothing, and
/// a payload can be refilled in place ([`Payload::set`]) so a runtime can
/// reuse one buffer per thread instead of allocating per message.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Payload(Vec<u8>);

impl Payload {
    pub fn none() -> Payload {
        Payload(Vec::new())
    }

    pub fn bytes(data: &[u8]) -> Payload {
        Payload(data.to_vec())
    }

    pub fn zeroed(len: usize) -> Payload {
        Payload(vec![0u8; len])
    }

    /// An empty payload that can take `capacity` bytes without allocating.
    pub fn with_capacity(capacity: usize) -> Payload {
        Payload(Vec::with_capacity(capacity))
    }

    /// Replaces the contents; allocates only if `data` exceeds the capacity.
    pub fn set(&mut self, data: &[u8]) {
        self.0.clear();
        self.0.extend_from_slice(data);
    }

    /// Sets the length to `len` and lets `write` fill every byte in place
    /// (no zeroing pass); returns the length.
    pub fn fill_with(&mut self, len: usize, write: impl FnOnce(&mut [u8])) -> usize {
        self.0.clear();
        self.0.resize(len, 0);
        write(&mut self.0);
        len
    }

    /// Makes room for `len` bytes (zero-filled) and returns them to be
    /// written in place.
    pub fn fill(&mut self, len: usize) -> &mut [u8] {
        self.0.clear();
        self.0.resize(len, 0);
        &mut self.0
    }

    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.0
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
        // Decoded argument blocks equal built ones whatever the unused words held.
        assert_eq!(Args::from_array([7, 9, 1, 2], 2), a);
        assert_eq!(Args::from_array([7, 9, 1, 2], 99).len(), 4);
    }

    #[test]
    fn empty_payload_allocates_nothing() {
        assert_eq!(Payload::bytes(&[]), Payload::none());
        assert_eq!(Payload::none().capacity(), 0);
        assert_eq!(Payload::zeroed(128).len(), 128);
    }

    #[test]
    fn payload_is_refilled_in_place() {
        let mut p = Payload::with_capacity(256);
        let buffer = p.as_slice().as_ptr();
        // Checked after every call: a copy into a new buffer would free the
        // old one, and the allocator could hand it back to the next copy.
        p.set(&[1, 2, 3]);
        assert_eq!((p.as_slice().as_ptr(), p.capacity()), (buffer, 256), "set kept the buffer");
        p.set(&[9; 200]);
        assert_eq!(p.as_slice(), &[9; 200]);
        assert_eq!((p.as_slice().as_ptr(), p.capacity()), (buffer, 256), "set kept the buffer");
        assert_eq!(p.fill(8), &[0u8; 8]);
        assert_eq!((p.as_slice().as_ptr(), p.capacity()), (buffer, 256), "fill kept the buffer");
        assert_eq!(p.fill_with(16, |b| b.fill(5)), 16);
        assert_eq!(p.as_slice(), &[5; 16]);
        assert_eq!((p.as_slice().as_ptr(), p.capacity()), (buffer, 256), "fill_with kept the buffer");
    }
}
