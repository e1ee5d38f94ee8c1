//! Stache (HPCA 1999 Section 4; Reinhardt et al. 1994): a full-map,
//! invalidation-based protocol that caches remote blocks in the node's
//! main memory. Every handler is an active message keyed by its block's
//! number, so a parallel dispatch queue runs handlers of different blocks
//! at once and those of one block one at a time, in arrival order; page
//! allocation uses the sequential key.
//!
//! The messages of one miss:
//! - FAULT (requester, to itself): a thread found the block's tag too weak;
//!   the handler re-reads the tag and asks the home (GET), or serves the
//!   request itself when it is the home;
//! - GET (home): grants at once when no other node's copy is in the way,
//!   else sends INV to every sharer or FETCH to the owner and waits;
//! - INV / FETCH (sharer, owner): drop or downgrade the copy, answer
//!   INV_ACK / FETCH_REPLY (with the block) to the home;
//! - DATA (requester): places the block, sets the tag, acknowledges with
//!   DATA_ACK, which closes the home's transaction.
//!
//! The home keeps one transaction per block open, deferring other requests
//! for the block, until the requester acknowledges the block (DATA_ACK).
//! The paper's network delivered in order; finegrain's native transports
//! do not order messages sent by different threads of one node, and a
//! node puts back in its own queue an invalidation or fetch of a block it
//! holds for a waiting thread (see `NodeState::take_hold`). With the
//! acknowledgement no two messages of one block are ever in flight between
//! the same pair of nodes in a way their order could matter, on every
//! platform. The price is one more handler at the home per miss, off the
//! miss's critical path.

use crate::node::{DirEntry, DirState, Txn, INVALID, READ_ONLY, READ_WRITE};
use crate::space::Space;
use crate::state::{args, State};
use finegrain_core::{Access, AmError, HandlerCtx, Message, NodeId, Payload, Region, SyncKey};
use std::sync::atomic::Ordering;

fn key(block: u64) -> SyncKey {
    SyncKey::Key(block)
}

/// Where the simulator finds a block's directory entry and tag: entries
/// of 8 bytes from 0, then a tag byte per block.
fn dir_offset(block: u64) -> u64 {
    block * 8
}

fn tag_offset(space: &Space, block: u64) -> u64 {
    space.blocks() * 8 + block
}

fn block_bytes(space: &Space) -> u32 {
    (space.block_words * 8) as u32
}

fn words_payload(words: &[u64]) -> Payload {
    let mut bytes = Vec::with_capacity(words.len() * 8);
    for w in words {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    Payload::bytes(&bytes)
}

fn payload_words(p: &Payload) -> Vec<u64> {
    p.as_slice().chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
}

/// Page allocation at a caching node (sequential key: it touches every
/// block of the page).
pub(crate) fn on_page(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let page = m.args.get(0);
    let node = s.node(ctx);
    if !node.mapped(page) {
        node.map(page);
        let blocks = s.space.blocks_per_page();
        ctx.access(Region::AccessTags, tag_offset(&s.space, page * blocks), blocks as u32, Access::Write);
    }
    Ok(())
}

/// A block access fault at the requester.
pub(crate) fn on_fault(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let (block, want) = (m.args.get(0), m.args.get(1) as u8);
    let node = s.node(ctx);
    ctx.access(Region::AccessTags, tag_offset(&s.space, block), 1, Access::Read);
    if node.state(block) >= want {
        node.settle_request(block, want);
        return Ok(());
    }
    let home = s.space.home_of_block(block);
    if home == node.node {
        return home_request(s, ctx, block, home, want);
    }
    ctx.send(NodeId(home), s.ids().get, key(block), args(&[block, node.node as u64, want as u64]), Payload::none())
}

pub(crate) fn on_get(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    home_request(s, ctx, m.args.get(0), m.args.get(1) as u32, m.args.get(2) as u8)
}

/// A request for `want` on `block` from `requester` reached its home.
fn home_request(s: &State, ctx: &mut dyn HandlerCtx, block: u64, requester: u32, want: u8) -> Result<(), AmError> {
    ctx.access(Region::Directory, dir_offset(block), 8, Access::Read);
    let home = s.node(ctx);
    let mut entry = home.dir(block);
    if entry.busy.is_some() {
        entry.deferred.push_back((requester, want));
        return Ok(());
    }
    start(s, ctx, &mut entry, block, requester, want)?;
    drain(s, ctx, &mut entry, block)
}

/// Opens the transaction for a request: grants it, or sends what must
/// happen first.
fn start(
    s: &State,
    ctx: &mut dyn HandlerCtx,
    entry: &mut DirEntry,
    block: u64,
    requester: u32,
    want: u8,
) -> Result<(), AmError> {
    let home = ctx.node().0;
    match entry.state {
        DirState::Shared(sharers) if want == READ_WRITE => {
            let others = sharers & !(1u128 << requester);
            if others == 0 {
                return grant(s, ctx, entry, block, requester, want);
            }
            entry.state = DirState::Shared(sharers & (1u128 << requester));
            let mut awaiting = 0;
            for n in (0..s.space.nodes).filter(|n| others & (1u128 << n) != 0) {
                ctx.send(NodeId(n), s.ids().inv, key(block), args(&[block]), Payload::none())?;
                awaiting += 1;
            }
            entry.busy = Some(Txn { requester, want, awaiting, data_sent: false });
            Ok(())
        }
        DirState::Exclusive(owner) if owner != requester && owner != home => {
            ctx.send(NodeId(owner), s.ids().fetch, key(block), args(&[block, want as u64]), Payload::none())?;
            entry.busy = Some(Txn { requester, want, awaiting: 1, data_sent: false });
            Ok(())
        }
        _ => grant(s, ctx, entry, block, requester, want),
    }
}

/// No other node's copy is in the way: the home's memory is current.
/// Records the new state, changes the home's tag and sends the block.
fn grant(
    s: &State,
    ctx: &mut dyn HandlerCtx,
    entry: &mut DirEntry,
    block: u64,
    requester: u32,
    want: u8,
) -> Result<(), AmError> {
    let home = s.node(ctx);
    let bit = |n: u32| 1u128 << n;
    let sharers = match entry.state {
        DirState::Shared(x) => x,
        DirState::Exclusive(o) => bit(o),
        DirState::Idle => 0,
    };
    // A write to a block the requester holds read-only: its copy is
    // current (any write since would have invalidated it here first), so
    // the grant carries no data, as in any directory protocol's upgrade.
    let upgrade = requester != home.node
        && want == READ_WRITE
        && matches!(entry.state, DirState::Shared(x) if x & bit(requester) != 0);
    let (state, home_tag, want) = if entry.state == DirState::Exclusive(requester) {
        // A repeated request from the owner: it keeps its copy.
        (entry.state, INVALID, READ_WRITE)
    } else if requester == home.node {
        match want {
            READ_WRITE => (DirState::Idle, READ_WRITE, want),
            _ if sharers == 0 => (DirState::Idle, READ_WRITE, want),
            _ => (DirState::Shared(sharers), READ_ONLY, want),
        }
    } else {
        match want {
            READ_WRITE => (DirState::Exclusive(requester), INVALID, want),
            _ => (DirState::Shared(sharers | bit(requester)), READ_ONLY, want),
        }
    };
    entry.state = state;
    ctx.access(Region::Directory, dir_offset(block), 8, Access::Write);
    let bytes = block_bytes(&s.space);
    home.lock_block(block);
    let words = (requester != home.node && !upgrade).then(|| {
        ctx.access(Region::Global, block * bytes as u64, bytes, Access::Read);
        home.read_block(block)
    });
    ctx.access(Region::AccessTags, tag_offset(&s.space, block), 1, Access::Write);
    home.unlock_block(block, home_tag);
    if requester == home.node {
        home.settle_request(block, want);
        return Ok(());
    }
    entry.busy = Some(Txn { requester, want, awaiting: 0, data_sent: true });
    let payload = words.map_or_else(Payload::none, |w| words_payload(&w));
    ctx.send(NodeId(requester), s.ids().data, key(block), args(&[block, want as u64]), payload)
}

/// Serves deferred requests while the block has no open transaction.
fn drain(s: &State, ctx: &mut dyn HandlerCtx, entry: &mut DirEntry, block: u64) -> Result<(), AmError> {
    while entry.busy.is_none() {
        let Some((requester, want)) = entry.deferred.pop_front() else { return Ok(()) };
        start(s, ctx, entry, block, requester, want)?;
    }
    Ok(())
}

/// Puts a message that would take a held block away back in this node's
/// queue (see `NodeState::take_hold`); true if it did.
fn deferred(s: &State, ctx: &mut dyn HandlerCtx, m: &Message, block: u64) -> Result<bool, AmError> {
    let node = s.node(ctx);
    if !node.take_hold(block) {
        return Ok(false);
    }
    ctx.send(NodeId(node.node), m.handler, key(block), m.args, Payload::none())?;
    s.counts.held_requeues.fetch_add(1, Ordering::Relaxed);
    Ok(true)
}

pub(crate) fn on_inv(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let block = m.args.get(0);
    if deferred(s, ctx, m, block)? {
        return Ok(());
    }
    let node = s.node(ctx);
    node.lock_block(block);
    ctx.access(Region::AccessTags, tag_offset(&s.space, block), 1, Access::Write);
    node.unlock_block(block, INVALID);
    let home = s.space.home_of_block(block);
    ctx.send(NodeId(home), s.ids().inv_ack, key(block), args(&[block]), Payload::none())
}

pub(crate) fn on_fetch(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let (block, want) = (m.args.get(0), m.args.get(1) as u8);
    if deferred(s, ctx, m, block)? {
        return Ok(());
    }
    let node = s.node(ctx);
    let bytes = block_bytes(&s.space);
    node.lock_block(block);
    ctx.access(Region::Global, block * bytes as u64, bytes, Access::Read);
    let words = node.read_block(block);
    ctx.access(Region::AccessTags, tag_offset(&s.space, block), 1, Access::Write);
    node.unlock_block(block, if want == READ_WRITE { INVALID } else { READ_ONLY });
    let home = s.space.home_of_block(block);
    ctx.send(NodeId(home), s.ids().fetch_reply, key(block), args(&[block]), words_payload(&words))
}

pub(crate) fn on_inv_ack(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    answered(s, ctx, m.args.get(0), None)
}

pub(crate) fn on_fetch_reply(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    answered(s, ctx, m.args.get(0), Some(payload_words(&m.payload)))
}

/// An invalidation ack or a fetched block reached the home; the last one
/// lets the transaction grant its request.
fn answered(s: &State, ctx: &mut dyn HandlerCtx, block: u64, fetched: Option<Vec<u64>>) -> Result<(), AmError> {
    ctx.access(Region::Directory, dir_offset(block), 8, Access::Read);
    let home = s.node(ctx);
    let mut entry = home.dir(block);
    let Some(mut txn) = entry.busy.filter(|t| t.awaiting > 0 && !t.data_sent) else {
        return Err(protocol_error(block, home.node, "an ack or fetched block arrived with no transaction waiting"));
    };
    if let Some(words) = fetched {
        let bytes = block_bytes(&s.space);
        home.lock_block(block);
        ctx.access(Region::Global, block * bytes as u64, bytes, Access::Overwrite);
        home.write_block(block, &words);
        let tag = home.state(block);
        home.unlock_block(block, tag);
        // The owner kept a read-only copy if the request was a read.
        entry.state = match (entry.state, txn.want) {
            (DirState::Exclusive(o), READ_ONLY) => DirState::Shared(1u128 << o),
            _ => DirState::Idle,
        };
    }
    txn.awaiting -= 1;
    entry.busy = Some(txn);
    if txn.awaiting > 0 {
        return Ok(());
    }
    if txn.want == READ_WRITE {
        // Invalidations done: the requester's own read-only copy, if any,
        // is all that remains (kept, so the grant need not send the block).
        entry.state = match entry.state {
            DirState::Shared(x) if x != 0 && txn.requester != home.node => DirState::Shared(x),
            _ => DirState::Idle,
        };
    }
    entry.busy = None;
    grant(s, ctx, &mut entry, block, txn.requester, txn.want)?;
    drain(s, ctx, &mut entry, block)
}

pub(crate) fn on_data(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let (block, want) = (m.args.get(0), m.args.get(1) as u8);
    let node = s.node(ctx);
    let state = node.lock_block(block);
    // A copy that already allows as much is newer than the home's (a
    // repeated request's answer): keep it.
    let placed = if m.payload.is_empty() {
        // An upgrade: the home granted a write to the read-only copy here.
        if state != READ_ONLY || want != READ_WRITE {
            node.unlock_block(block, state);
            return Err(protocol_error(block, node.node, "a data-less grant reached a node without a read-only copy"));
        }
        s.counts.upgrades.fetch_add(1, Ordering::Relaxed);
        ctx.access(Region::AccessTags, tag_offset(&s.space, block), 1, Access::Write);
        want
    } else if state < want {
        s.counts.blocks_placed.fetch_add(1, Ordering::Relaxed);
        if state == READ_ONLY {
            // A write to a block read here whose grant still carried the
            // block (none should: see `grant`).
            s.counts.upgrades_with_data.fetch_add(1, Ordering::Relaxed);
        }
        let bytes = block_bytes(&s.space);
        ctx.access(Region::Global, block * bytes as u64, bytes, Access::Overwrite);
        node.write_block(block, &payload_words(&m.payload));
        ctx.access(Region::AccessTags, tag_offset(&s.space, block), 1, Access::Write);
        want
    } else {
        state
    };
    node.unlock_block(block, placed);
    if placed == want {
        node.hold(block);
    }
    node.settle_request(block, want);
    let home = s.space.home_of_block(block);
    ctx.send(NodeId(home), s.ids().data_ack, key(block), args(&[block]), Payload::none())
}

pub(crate) fn on_data_ack(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let block = m.args.get(0);
    ctx.access(Region::Directory, dir_offset(block), 8, Access::Write);
    let home = s.node(ctx);
    let mut entry = home.dir(block);
    if !entry.busy.is_some_and(|t| t.data_sent) {
        return Err(protocol_error(block, home.node, "a data acknowledgement arrived with no block sent"));
    }
    entry.busy = None;
    drain(s, ctx, &mut entry, block)
}

fn protocol_error(block: u64, node: u32, what: &str) -> AmError {
    AmError::HandlerFailed { handler: "dsm".into(), reason: format!("block {block} at its home node {node}: {what}") }
}

/// The wants a thread can raise.
pub(crate) const WANT_READ: u8 = READ_ONLY;
pub(crate) const WANT_WRITE: u8 = READ_WRITE;
