//! Split-C's handlers, registered once per program, and the user's atomic
//! functions.
//!
//! Argument words of the data messages: `[word, words, value]`, the first
//! word at the destination (a get's: at the owner, then where it lands at
//! the requester), the length, and the value itself when the operation
//! moves one word (no payload then). Longer operations carry their words as
//! the payload, at most [`CHUNK_WORDS`] a message.

use crate::state::{bytes_to_words, words_to_bytes, NodeState};
use finegrain_core::{
    Access, AmError, Args, HandlerCtx, HandlerId, HandlerInfo, HandlerTable, LibraryOp, Message, Region,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Words one message carries at most: 4 KiB, the native transports' largest
/// payload. Bulk operations are split into messages of this size.
pub const CHUNK_WORDS: u64 = 512;

/// A get's destination word that means "return the value in the reply,
/// deposit nothing": a blocking read, whose thread waits for the reply.
pub(crate) const RETURN_VALUE: u64 = u64::MAX;

/// Instructions of a Split-C handler's own code besides its data words:
/// the `ipps96` preset's estimate for the library's handlers (15; the paper
/// gives no count), and 10 for those that only count (its estimate for the
/// thread that decrements a split counter).
const DATA_HANDLER_CYCLES: u64 = 15;
const COUNTING_HANDLER_CYCLES: u64 = 10;
const CODE_BYTES: u32 = 128;

/// A user's atomic function: reads and writes its node's segment, returns
/// one word to the caller.
pub type AtomicFn = Arc<dyn Fn(&Local<'_>, [u64; 3]) -> u64 + Send + Sync>;

/// The handler ids of one program's Split-C.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ids {
    pub get: HandlerId,
    pub put: HandlerId,
    pub store: HandlerId,
    pub count: HandlerId,
    pub barrier: HandlerId,
    pub atomic: HandlerId,
}

/// A node's words, for the thread that owns them and for atomic functions.
pub struct Local<'a> {
    pub(crate) words: &'a [AtomicU64],
}

impl Local<'_> {
    /// Words in the segment.
    pub fn len(&self) -> u64 {
        self.words.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub fn get(&self, word: u64) -> u64 {
        self.words[word as usize].load(Ordering::Relaxed)
    }

    pub fn set(&self, word: u64, value: u64) {
        self.words[word as usize].store(value, Ordering::Relaxed)
    }

    pub fn get_f64(&self, word: u64) -> f64 {
        f64::from_bits(self.get(word))
    }

    pub fn set_f64(&self, word: u64, value: f64) {
        self.set(word, value.to_bits())
    }

    /// Copies `out.len()` words from `word` on.
    pub fn read(&self, word: u64, out: &mut [u64]) {
        for (o, w) in out.iter_mut().zip(&self.words[word as usize..]) {
            *o = w.load(Ordering::Relaxed);
        }
    }

    /// Writes `data` from `word` on.
    pub fn write(&self, word: u64, data: &[u64]) {
        for (d, w) in data.iter().zip(&self.words[word as usize..]) {
            w.store(*d, Ordering::Relaxed);
        }
    }

    pub fn read_f64(&self, word: u64, out: &mut [f64]) {
        for (o, w) in out.iter_mut().zip(&self.words[word as usize..]) {
            *o = f64::from_bits(w.load(Ordering::Relaxed));
        }
    }

    pub fn write_f64(&self, word: u64, data: &[f64]) {
        for (d, w) in data.iter().zip(&self.words[word as usize..]) {
            w.store(d.to_bits(), Ordering::Relaxed);
        }
    }
}

fn info(name: &str, body_cycles: u64) -> HandlerInfo {
    HandlerInfo { name: name.into(), body_cycles, code_bytes: CODE_BYTES }
}

fn failed(handler: &str, reason: String) -> AmError {
    AmError::HandlerFailed { handler: handler.into(), reason }
}

/// The words `[first, first + len)` of the handling node's segment, their
/// access costed as the platform models the global segment.
fn touch<'s>(
    ctx: &mut dyn HandlerCtx,
    state: &'s NodeState,
    handler: &str,
    first: u64,
    len: u64,
    kind: Access,
) -> Result<&'s [AtomicU64], AmError> {
    let words = state.words(first, len, handler).map_err(|r| failed(handler, r))?;
    let bytes = u32::try_from(len * 8).map_err(|_| failed(handler, format!("{len} words in one message")))?;
    ctx.access(Region::Global, first * 8, bytes, kind);
    Ok(words)
}

/// Writes a data message's words (its value, or its payload) at the node.
fn deposit(ctx: &mut dyn HandlerCtx, state: &NodeState, handler: &str, m: &Message) -> Result<u64, AmError> {
    let (first, len) = (m.args.get(0), m.args.get(1));
    let words = touch(ctx, state, handler, first, len, Access::Overwrite)?;
    if len == 1 && m.payload.is_empty() {
        words[0].store(m.args.get(2), Ordering::Relaxed);
    } else if m.payload.len() as u64 == len * 8 {
        bytes_to_words(m.payload.as_slice(), words);
    } else {
        return Err(failed(handler, format!("{} payload bytes for {len} words", m.payload.len())));
    }
    Ok(len)
}

/// Registers Split-C's handlers; `states` holds every node's state and
/// `atomics` the program's atomic functions, in id order.
pub(crate) fn register(
    table: &mut HandlerTable,
    states: Arc<Vec<NodeState>>,
    atomics: Arc<Vec<(AtomicFn, u64)>>,
) -> Result<Ids, AmError> {
    let s = states.clone();
    let get_reply =
        table.register_library(info("splitc_get_reply", DATA_HANDLER_CYCLES), LibraryOp::GetReply, move |ctx, m| {
            let state = &s[ctx.node().index()];
            if m.args.get(0) != RETURN_VALUE {
                deposit(ctx, state, "splitc_get_reply", m)?;
                state.gets_done.fetch_add(1, Ordering::Release);
            }
            Ok(())
        })?;
    let s = states.clone();
    let get =
        table.register_library(info("splitc_get", DATA_HANDLER_CYCLES), LibraryOp::GetRequest, move |ctx, m| {
            let state = &s[ctx.node().index()];
            let (first, len, to) = (m.args.get(0), m.args.get(1), m.args.get(2));
            let words = touch(ctx, state, "splitc_get", first, len, Access::Read)?;
            if len == 1 {
                let value = words[0].load(Ordering::Relaxed);
                return ctx.reply_bytes(get_reply, Args::new(&[to, 1, value])?, &[]);
            }
            ctx.reply_bytes(get_reply, Args::new(&[to, len])?, &words_to_bytes(words))
        })?;
    let s = states.clone();
    let put_ack =
        table.register_library(info("splitc_put_ack", COUNTING_HANDLER_CYCLES), LibraryOp::PutAck, move |ctx, m| {
            if m.args.get(0) == 0 {
                s[ctx.node().index()].puts_done.fetch_add(1, Ordering::Release);
            }
            Ok(())
        })?;
    let s = states.clone();
    let put =
        table.register_library(info("splitc_put", DATA_HANDLER_CYCLES), LibraryOp::PutRequest, move |ctx, m| {
            let state = &s[ctx.node().index()];
            deposit(ctx, state, "splitc_put", m)?;
            // The fourth word marks a blocking write, whose thread waits for
            // this reply itself: its ack counts nothing.
            ctx.reply_bytes(put_ack, Args::new(&[m.args.get(3)])?, &[])
        })?;
    let s = states.clone();
    let store =
        table.register_library(info("splitc_store", DATA_HANDLER_CYCLES), LibraryOp::Store, move |ctx, m| {
            let state = &s[ctx.node().index()];
            let len = deposit(ctx, state, "splitc_store", m)?;
            state.stores_received.fetch_add(len, Ordering::Release);
            Ok(())
        })?;
    let s = states.clone();
    let count = table.register_library(
        info("splitc_store_count", COUNTING_HANDLER_CYCLES),
        LibraryOp::Control,
        move |ctx, m| {
            let state = &s[ctx.node().index()];
            let src = m.src_node.index();
            state.counts_reported[src].store(m.args.get(1), Ordering::Relaxed);
            state.counts_heard[src].fetch_max(m.args.get(0), Ordering::Release);
            Ok(())
        },
    )?;
    let s = states.clone();
    let barrier = table.register_library(
        info("splitc_barrier", COUNTING_HANDLER_CYCLES),
        LibraryOp::Control,
        move |ctx, m| {
            let arrivals = &s[ctx.node().index()].barrier_arrivals;
            let round = m.args.get(0) as usize;
            let Some(a) = arrivals.get(round) else {
                return Err(failed("splitc_barrier", format!("round {round} of a {}-round barrier", arrivals.len())));
            };
            a.fetch_add(1, Ordering::Release);
            Ok(())
        },
    )?;
    let atomic_reply =
        table.register_library(info("splitc_atomic_reply", COUNTING_HANDLER_CYCLES), LibraryOp::Control, |_, _| {
            Ok(())
        })?;
    let s = states;
    let atomic =
        table.register_library(info("splitc_atomic", DATA_HANDLER_CYCLES), LibraryOp::Atomic, move |ctx, m| {
            let id = m.args.get(0) as usize;
            let Some((f, cycles)) = atomics.get(id) else {
                return Err(failed("splitc_atomic", format!("atomic function {id} of {}", atomics.len())));
            };
            ctx.charge(*cycles);
            let words = s[ctx.node().index()].segment();
            let value = f(&Local { words }, [m.args.get(1), m.args.get(2), m.args.get(3)]);
            ctx.reply_bytes(atomic_reply, Args::new(&[value])?, &[])
        })?;
    Ok(Ids { get, put, store, count, barrier, atomic })
}
