//! Barriers and locks over active messages, as the paper's DSM systems
//! provide them beside the shared memory.
//!
//! Barrier: the threads of a node meet in the node's memory; the last one
//! tells node 0 (ARRIVE), whose handler releases every node (RELEASE) once
//! all have arrived. Lock: a queue at the lock's home node (lock `l` on
//! node `l % nodes`); ACQUIRE is granted at once or when the holder
//! releases (GRANT to the waiting thread's node). Keys: every barrier
//! message carries one key, each lock its own, so a parallel dispatch
//! queue serializes exactly the handlers that share state.

use crate::state::{args, State};
use finegrain_core::{AmError, HandlerCtx, Message, NodeId, Payload, SyncKey};
use std::sync::atomic::Ordering;

/// The key of barrier messages and the first lock's (locks follow it):
/// above every block number.
const BARRIER_KEY: u64 = 1 << 62;

pub(crate) fn barrier_key() -> SyncKey {
    SyncKey::Key(BARRIER_KEY)
}

pub(crate) fn lock_key(lock: u32) -> SyncKey {
    SyncKey::Key(BARRIER_KEY + 1 + lock as u64)
}

/// At node 0: a node's threads all reached barrier `epoch`.
pub(crate) fn on_arrive(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let root = &s.nodes[0];
    let arrived = root.barrier_root.fetch_add(1, Ordering::AcqRel) + 1;
    if arrived < s.space.nodes {
        return Ok(());
    }
    root.barrier_root.store(0, Ordering::Release);
    let epoch = m.args.get(0);
    for n in 0..s.space.nodes {
        ctx.send(NodeId(n), s.ids().release, barrier_key(), args(&[epoch]), Payload::none())?;
    }
    Ok(())
}

pub(crate) fn on_release(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    s.nodes[ctx.node().index()].barrier_released.fetch_max(m.args.get(0), Ordering::AcqRel);
    Ok(())
}

/// At the lock's home: `[lock, node, thread]` asks for it.
pub(crate) fn on_acquire(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let (lock, node, thread) = (m.args.get(0) as u32, m.args.get(1) as u32, m.args.get(2) as u32);
    let mut state = s.nodes[ctx.node().index()].lock_state(lock);
    if state.held {
        state.waiting.push_back((node, thread));
        return Ok(());
    }
    state.held = true;
    ctx.send(NodeId(node), s.ids().grant, lock_key(lock), args(&[lock as u64, thread as u64]), Payload::none())
}

pub(crate) fn on_unlock(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let lock = m.args.get(0) as u32;
    let mut state = s.nodes[ctx.node().index()].lock_state(lock);
    match state.waiting.pop_front() {
        Some((node, thread)) => {
            ctx.send(NodeId(node), s.ids().grant, lock_key(lock), args(&[lock as u64, thread as u64]), Payload::none())
        }
        None => {
            state.held = false;
            Ok(())
        }
    }
}

pub(crate) fn on_grant(s: &State, ctx: &mut dyn HandlerCtx, m: &Message) -> Result<(), AmError> {
    let (lock, thread) = (m.args.get(0), m.args.get(1) as usize);
    let node = &s.nodes[ctx.node().index()];
    node.granted[thread].store(lock + 1, Ordering::Release);
    Ok(())
}
