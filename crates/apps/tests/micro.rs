//! Mechanisms of the scheduling microbenchmark that decide claims of the
//! scheduling-micro study (Falsafi & Wood, HPCA 1997, Section 5; the claims
//! and what decides them are in docs/scheduling-micro.md), checked on
//! single runs so that a change to them shows here before it shows in a
//! study's verdicts.

use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_apps::Sim;
use finegrain_core::{
    Access, AmError, Args, HandlerCtx, MachineConfig, Message, MsgKind, NodeId, Payload, Policy, Region, Reply,
    SyncKey, ThreadId, Topology,
};
use finegrain_sim::SimConfig;

/// Two communication-bound Single nodes (U about 0.05 on hpca97's null
/// handler) with an interrupt of 2000 cycles, `return_percent` of it paid
/// after the role is given up; the interrupts per request.
fn single_interrupts_per_request(return_percent: u32) -> f64 {
    let mut machine = MachineConfig::load("hpca97").unwrap();
    machine.interrupt.overhead_cycles = 2000;
    machine.interrupt.entry_percent = 100 - return_percent;
    // The return path's window alone: the protocol thread's switch back is
    // a window of its own, and requests through the protocol processor
    // change the turnaround (tested with them below).
    machine.protocol.protocol_thread = false;
    machine.protocol.requests_via_pp = false;
    machine.protocol.dispatch_cycles = 74;
    let sim = SimConfig::new(machine, Topology { nodes: 2, procs_per_node: 1 }, Policy::Single, 7);
    let work = MicroConfig {
        protocol: Protocol::Null,
        mean_compute_cycles: 31.6,
        requests_per_node: 2000,
        single_requester: false,
    };
    let out = micro::run(&Sim(sim.clone()), &work).unwrap();
    out.stats.interrupts as f64 / out.stats.requests as f64
}

#[test]
fn a_return_path_longer_than_a_peers_turnaround_locks_single_nodes_into_interrupts() {
    // Oint paid on delivery: the processor is idle, acting as PP, when
    // almost every request arrives (claim 1's fall-back).
    let on_delivery = single_interrupts_per_request(0);
    assert!(on_delivery < 0.1, "{on_delivery} interrupts per request with Oint paid on delivery");
    // 500 cycles paid on return outlast the peer's turnaround (about 430):
    // each request arrives in that window and interrupts again as soon as
    // the work resumes.
    let on_return = single_interrupts_per_request(25);
    assert!(on_return > 0.5, "{on_return} interrupts per request with a quarter paid on return");
}

/// A handler context that records what the handler touches.
#[derive(Default)]
struct Recorder {
    accesses: Vec<(Region, u64, u32, Access)>,
}

impl HandlerCtx for Recorder {
    fn node(&self) -> NodeId {
        NodeId(0)
    }
    fn reply(&mut self, _: Reply) -> Result<(), AmError> {
        Ok(())
    }
    fn send(
        &mut self,
        _: NodeId,
        _: finegrain_core::HandlerId,
        _: finegrain_core::SyncKey,
        _: finegrain_core::Args,
        _: finegrain_core::Payload,
    ) -> Result<(), AmError> {
        Ok(())
    }
    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access) {
        self.accesses.push((region, offset, len, kind));
    }
    fn charge(&mut self, _: u64) {}
}

#[test]
fn the_fetch_reply_stores_the_whole_block_so_no_processor_reads_it_first() {
    // Under Floating the role rotates, so the reply handler's processor
    // rarely wrote the requester's buffer before: reading each line for
    // ownership would cost a cache-to-cache transfer for bytes it then
    // overwrites (docs/scheduling-micro.md, "Where a fetched block lands").
    let machine = MachineConfig::load("hpca97").unwrap();
    let (table, h) = micro::handlers(Protocol::Fetch, &machine).unwrap();
    let reply = Message {
        kind: MsgKind::Reply,
        src_node: NodeId(1),
        src_thread: ThreadId(3),
        dst_node: NodeId(0),
        handler: h.reply,
        key: SyncKey::NoSync,
        args: Args::new(&[7]).unwrap(),
        payload: Payload::zeroed(h.block_bytes as usize),
        token: 0,
    };
    let mut ctx = Recorder::default();
    (table.function(h.reply).unwrap())(&mut ctx, &reply).unwrap();
    assert_eq!(ctx.accesses, vec![(Region::RecvBuffer(ThreadId(3)), 0, h.block_bytes, Access::Overwrite)]);
}
