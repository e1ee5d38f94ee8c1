//! How an active message is laid out in ring words.
//!
//! Header metadata (56 bits): key kind (2) | kind (1) | argument count (3) |
//! handler (16) | payload length (16). Data words: the token, the source
//! (node << 32 | thread), the synchronization key if it is a numbered one,
//! the arguments, then the payload packed eight bytes to a word. A request
//! with no payload fits one 64-byte slot; 8 bytes of payload still do; 64
//! bytes take two slots and 256 bytes five.

use super::ring::{Full, Producer, Record, SLOT_DATA_WORDS};
use finegrain_core::{Args, HandlerId, Message, MsgKind, NodeId, SyncKey, ThreadId, MAX_ARGS};

/// Largest payload one message carries inline in the ring.
pub const MAX_PAYLOAD: usize = 4096;
/// Data words of the largest message.
pub const MAX_WORDS: usize = 3 + MAX_ARGS + MAX_PAYLOAD / 8;

const KIND_BIT: u64 = 1 << 35;
const KEY_SHIFT: u32 = 36;
const KEY_SEQUENTIAL: u64 = 0;
const KEY_NOSYNC: u64 = 1;
const KEY_NUMBERED: u64 = 2;
const NARGS_SHIFT: u32 = 32;
const HANDLER_SHIFT: u32 = 16;

/// The parts of a message a sender provides.
pub struct Outgoing<'a> {
    pub kind: MsgKind,
    pub handler: HandlerId,
    pub src_node: NodeId,
    pub src_thread: ThreadId,
    pub token: u64,
    pub key: SyncKey,
    pub args: &'a [u64],
    pub payload: &'a [u8],
}

impl Outgoing<'_> {
    /// Data words before the arguments: token, source and a numbered key.
    fn lead_words(&self) -> usize {
        if matches!(self.key, SyncKey::Key(_)) {
            3
        } else {
            2
        }
    }
}

/// Encodes `m` into `words` (cleared first); returns the header metadata.
pub fn encode(m: &Outgoing, words: &mut Vec<u64>) -> u64 {
    debug_assert!(m.args.len() <= MAX_ARGS && m.payload.len() <= MAX_PAYLOAD);
    words.clear();
    words.push(m.token);
    words.push((m.src_node.0 as u64) << 32 | m.src_thread.0 as u64);
    if let SyncKey::Key(k) = m.key {
        words.push(k);
    }
    words.extend_from_slice(m.args);
    for chunk in m.payload.chunks(8) {
        words.push(le_word(chunk));
    }
    meta_of(m)
}

fn meta_of(m: &Outgoing) -> u64 {
    let kind = if m.kind == MsgKind::Reply { KIND_BIT } else { 0 };
    let key = match m.key {
        SyncKey::Sequential => KEY_SEQUENTIAL,
        SyncKey::NoSync => KEY_NOSYNC,
        SyncKey::Key(_) => KEY_NUMBERED,
    };
    key << KEY_SHIFT
        | kind
        | (m.args.len() as u64) << NARGS_SHIFT
        | (m.handler.0 as u64) << HANDLER_SHIFT
        | m.payload.len() as u64
}

/// Encodes `m` straight into the ring; `Err` (nothing written) when full.
#[inline]
pub fn push_message(p: &mut Producer, m: &Outgoing) -> Result<(), Full> {
    // The header's count has room for MAX_ARGS and decoding keeps only that
    // many: the runtime refuses more (and larger payloads) before sending.
    debug_assert!(m.args.len() <= MAX_ARGS && m.payload.len() <= MAX_PAYLOAD);
    let nargs = m.args.len();
    let lead = m.lead_words();
    let len = lead + nargs + m.payload.len().div_ceil(8);
    let meta = meta_of(m);
    let src = (m.src_node.0 as u64) << 32 | m.src_thread.0 as u64;
    let key = match m.key {
        SyncKey::Key(k) => k,
        _ => 0,
    };
    if len <= SLOT_DATA_WORDS {
        // The common small message: assemble its one slot on the stack.
        let mut w = [0u64; SLOT_DATA_WORDS];
        w[0] = m.token;
        w[1] = src;
        w[2] = key;
        w[lead..lead + nargs].copy_from_slice(m.args);
        for (k, chunk) in m.payload.chunks(8).enumerate() {
            w[lead + nargs + k] = le_word(chunk);
        }
        return p.try_push_one(meta, &w[..len]);
    }
    p.try_push_with(meta, len, |i| match i {
        0 => m.token,
        1 => src,
        _ if i < lead => key,
        _ if i < lead + nargs => m.args[i - lead],
        _ => {
            let at = (i - lead - nargs) * 8;
            le_word(&m.payload[at..(at + 8).min(m.payload.len())])
        }
    })
}

/// Up to eight bytes as a little-endian word (no library call for the
/// short tail).
#[inline]
fn le_word(chunk: &[u8]) -> u64 {
    match <[u8; 8]>::try_from(chunk) {
        Ok(b) => u64::from_le_bytes(b),
        Err(_) => chunk.iter().enumerate().fold(0, |v, (i, b)| v | (*b as u64) << (8 * i)),
    }
}

/// Decodes a record into `m`, reusing its payload buffer (no allocation
/// while the payload fits the buffer's capacity).
pub fn decode(r: &Record, dst: NodeId, m: &mut Message) {
    decode_words(r.meta(), |i| r.word(i), dst, m)
}

/// Decodes a record given as its metadata and a source of its data words
/// (a ring's slots, or a buffer a message arrived in).
#[inline]
pub fn decode_words(meta: u64, word: impl Fn(usize) -> u64, dst: NodeId, m: &mut Message) {
    let nargs = ((meta >> NARGS_SHIFT) & 0x7) as usize;
    let len = (meta & 0xffff) as usize;
    m.kind = if meta & KIND_BIT != 0 { MsgKind::Reply } else { MsgKind::Request };
    m.handler = HandlerId(((meta >> HANDLER_SHIFT) & 0xffff) as u16);
    m.token = word(0);
    let src = word(1);
    m.src_node = NodeId((src >> 32) as u32);
    m.src_thread = ThreadId(src as u32);
    m.dst_node = dst;
    let (key, lead) = match (meta >> KEY_SHIFT) & 0x3 {
        KEY_NOSYNC => (SyncKey::NoSync, 2),
        KEY_NUMBERED => (SyncKey::Key(word(2)), 3),
        _ => (SyncKey::Sequential, 2),
    };
    m.key = key;
    let mut args = [0u64; MAX_ARGS];
    for (i, a) in args.iter_mut().enumerate().take(nargs.min(MAX_ARGS)) {
        *a = word(lead + i);
    }
    m.args = Args::from_array(args, nargs.min(MAX_ARGS));
    let first = lead + nargs;
    let out = m.payload.fill_with(len, |bytes| {
        for (k, chunk) in bytes.chunks_mut(8).enumerate() {
            let b = word(first + k).to_le_bytes();
            if let Ok(whole) = <&mut [u8; 8]>::try_from(&mut *chunk) {
                *whole = b;
            } else {
                for (d, s) in chunk.iter_mut().zip(b) {
                    *d = s;
                }
            }
        }
    });
    debug_assert_eq!(out, len);
}

/// Words a message of `nargs` arguments and `payload` bytes occupies
/// (one more when it carries a numbered key).
pub fn words_for(nargs: usize, payload: usize, numbered_key: bool) -> usize {
    2 + numbered_key as usize + nargs + payload.div_ceil(8)
}

/// Slots such a message occupies.
pub fn slots_for(nargs: usize, payload: usize, numbered_key: bool) -> usize {
    words_for(nargs, payload, numbered_key).div_ceil(SLOT_DATA_WORDS).max(1)
}

/// A message-shaped scratch value to decode into.
pub fn scratch_message() -> Message {
    Message {
        kind: MsgKind::Request,
        src_node: NodeId(0),
        src_thread: ThreadId(0),
        dst_node: NodeId(0),
        handler: HandlerId(0),
        key: SyncKey::Sequential,
        args: Args::default(),
        payload: finegrain_core::Payload::with_capacity(MAX_PAYLOAD),
        token: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::ring::ring;

    #[test]
    fn round_trip_through_a_ring() {
        let (mut p, mut c) = ring(128);
        let mut words = Vec::new();
        let mut m = scratch_message();
        for len in [0usize, 1, 8, 9, 64, 255, 256, 1000] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let out = Outgoing {
                kind: if len % 2 == 0 { MsgKind::Reply } else { MsgKind::Request },
                handler: HandlerId(513),
                src_node: NodeId(3),
                src_thread: ThreadId(9),
                token: 0xdead_beef_0000 + len as u64,
                key: [SyncKey::Sequential, SyncKey::NoSync, SyncKey::Key(len as u64 * 3 + 1)][len % 3],
                args: &[1, 2, 3][..len % 4],
                payload: &payload,
            };
            let meta = encode(&out, &mut words);
            let numbered = matches!(out.key, SyncKey::Key(_));
            assert_eq!(words.len(), words_for(out.args.len(), len, numbered));
            // Encoded through a buffer or straight into the ring: same record.
            if len % 3 == 0 {
                p.try_push(meta, &words).unwrap();
            } else {
                push_message(&mut p, &out).unwrap();
            }
            c.try_pop(|r| decode(r, NodeId(1), &mut m)).unwrap();
            assert_eq!(m.kind, out.kind);
            assert_eq!(m.handler, HandlerId(513));
            assert_eq!((m.src_node, m.src_thread, m.dst_node), (NodeId(3), ThreadId(9), NodeId(1)));
            assert_eq!(m.token, out.token);
            assert_eq!(m.key, out.key);
            assert_eq!(m.args.as_slice(), out.args);
            assert_eq!(m.payload.as_slice(), &payload[..]);
        }
        assert_eq!(m.payload.capacity(), MAX_PAYLOAD, "decoding reused the buffer");
    }

    /// Four arguments and a 4096-byte payload under a numbered key: every
    /// header field at its widest, and the largest record, whose second
    /// copy wraps past the ring's end.
    #[test]
    fn the_largest_message_round_trips() {
        let (mut p, mut c) = ring(128);
        assert_eq!(slots_for(MAX_ARGS, MAX_PAYLOAD, true), 75);
        let payload: Vec<u8> = (0..MAX_PAYLOAD).map(|i| (i * 13 + i / 256) as u8).collect();
        let args = [u64::MAX, 1 << 63, 3, 0x0123_4567_89ab_cdef];
        let mut words = Vec::new();
        let mut m = scratch_message();
        for round in 0..2u64 {
            let out = Outgoing {
                kind: MsgKind::Request,
                handler: HandlerId(u16::MAX - 1),
                src_node: NodeId(u32::MAX),
                src_thread: ThreadId(u32::MAX - 1),
                token: u64::MAX - round,
                key: SyncKey::Key(u64::MAX - round),
                args: &args,
                payload: &payload,
            };
            let meta = encode(&out, &mut words);
            assert_eq!(words.len(), MAX_WORDS);
            if round == 0 {
                push_message(&mut p, &out).unwrap();
            } else {
                p.try_push(meta, &words).unwrap();
            }
            c.try_pop(|r| decode(r, NodeId(2), &mut m)).unwrap();
            assert_eq!(m.kind, MsgKind::Request);
            assert_eq!(m.handler, HandlerId(u16::MAX - 1));
            assert_eq!((m.src_node, m.src_thread), (NodeId(u32::MAX), ThreadId(u32::MAX - 1)));
            assert_eq!((m.token, m.key), (out.token, out.key));
            assert_eq!(m.args.as_slice(), &args);
            assert_eq!(m.payload.len(), MAX_PAYLOAD);
            assert!(m.payload.as_slice() == &payload[..], "round {round}: the payload changed");
        }
    }

    #[test]
    fn slot_counts_for_the_benchmark_sizes() {
        assert_eq!(slots_for(0, 0, false), 1);
        assert_eq!(slots_for(0, 8, false), 1);
        assert_eq!(slots_for(0, 64, false), 2);
        assert_eq!(slots_for(0, 256, false), 5);
        assert_eq!(slots_for(2, 0, true), 1, "a keyed fetch&add request still fits one slot");
    }
}
