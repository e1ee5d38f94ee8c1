//! Small scripted programs that pin down when the simulator interrupts a
//! processor and when one gives up the protocol-processor role: under
//! Hurricane-1 Mult (idle compute processors serve the node's queue in
//! parallel; the device interrupts only when every processor computes),
//! under Floating and under Single.

use finegrain_core::{
    Access, Args, Discipline, Dispatch, HandlerId, HandlerInfo, HandlerTable, MachineConfig, NodeId, Payload, Policy,
    PpKind, Proc, Region, Reply, SyncKey, Topology,
};
use finegrain_sim::{simulate, RunStats, SimConfig};

/// What one thread does, in order.
#[derive(Clone, Copy)]
enum Step {
    Work(u64),
    /// A request to a node with a key.
    Request(u32, u64),
    /// A read of so many bytes of the thread's own segment.
    Read(u32),
}

fn mult(oint: u64, nodes: u32) -> SimConfig {
    let mut m = MachineConfig::load("hpca99").unwrap();
    m.interrupt.overhead_cycles = oint;
    let mut cfg = SimConfig::new(m, Topology { nodes, procs_per_node: 2 }, Policy::Floating, 1);
    cfg.run.dispatch = Dispatch { discipline: Discipline::Pdq, pp_kind: PpKind::Smp, max_servers: None };
    cfg
}

fn floating(oint: u64) -> SimConfig {
    let mut m = MachineConfig::load("hpca97").unwrap();
    m.interrupt.overhead_cycles = oint;
    SimConfig::new(m, Topology { nodes: 2, procs_per_node: 2 }, Policy::Floating, 1)
}

/// Floating at Oint 5000 under the eager rule, with a release of
/// `release_cycles` instructions: node 0's thread 0 takes the role while
/// it waits for its reply, and thread 1 sends its own request after
/// `thread1_work` cycles; node 1's threads do nothing but serve. Node 0's
/// threads then compute for `after` cycles (thread 1 for half as long).
fn hand_off(release_cycles: u64, thread1_work: u64, after: u64) -> RunStats {
    let mut cfg = floating(5000);
    cfg.run.relinquish = finegrain_core::Relinquish::Eager;
    cfg.machine.protocol.role_release_cycles = release_cycles;
    let steps = move |node: u32, thread: u32| match (node, thread) {
        (0, 0) => vec![Step::Request(1, 1), Step::Work(after)],
        (0, _) => vec![Step::Work(thread1_work), Step::Request(1, 2), Step::Work(after / 2)],
        _ => vec![],
    };
    run_steps(&cfg, &steps)
}

fn table() -> (HandlerTable, HandlerId) {
    let mut t = HandlerTable::new();
    let info = |n: &str| HandlerInfo { name: n.into(), body_cycles: 50, code_bytes: 128 };
    let reply = t.register(info("reply"), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("request"), move |ctx, _| {
            ctx.reply(Reply { handler: reply, args: Args::default(), payload: Payload::none() })
        })
        .unwrap();
    (t, request)
}

/// Runs `script(node, thread)` on every thread.
fn run(cfg: &SimConfig, script: fn(u32, u32) -> Vec<Step>) -> RunStats {
    run_steps(cfg, &script)
}

/// [`run`] of a script that captures its parameters.
fn run_steps(cfg: &SimConfig, script: &(dyn Fn(u32, u32) -> Vec<Step> + Sync)) -> RunStats {
    let (t, request) = table();
    let out = simulate(cfg, &t, |p| async move {
        for step in script(p.node().0, p.thread().0) {
            match step {
                Step::Work(c) => p.work(c).await,
                Step::Request(dst, key) => {
                    p.request_keyed(NodeId(dst), request, SyncKey::Key(key), Args::default(), Payload::none()).await?;
                }
                Step::Read(bytes) => p.access(Region::Segment(p.thread()), 0, bytes, Access::Read).await,
            }
        }
        Ok(())
    })
    .unwrap();
    out.stats
}

#[test]
fn an_idle_server_takes_messages_while_an_interrupt_is_delivered_elsewhere() {
    // Node 1's thread 0 computes throughout. A request arriving while both
    // of node 1's threads compute interrupts thread 0's processor, whose
    // interrupt takes 15000 cycles to enter (Oint 20000). Meanwhile thread
    // 1 waits for a slow reply from node 2 (computing too), so its
    // processor serves: it takes the first request, and a second one
    // arriving later used to wait for the interrupt beside it.
    let stats = run(&mult(20_000, 3), |node, thread| match (node, thread) {
        (0, 0) => vec![Step::Request(1, 1)],
        (0, _) => vec![Step::Work(4000), Step::Request(1, 2)],
        (1, 0) => vec![Step::Work(200_000)],
        (1, _) => vec![Step::Work(1500), Step::Request(2, 100), Step::Work(200_000)],
        _ => vec![Step::Work(300_000)],
    });
    let delay = &stats.nodes[1].queue_delay;
    assert!(delay.max_cycles < 5000, "node 1 held a message {} cycles beside an idle server", delay.max_cycles);
}

#[test]
fn a_processor_serving_inside_an_interrupt_is_not_computing() {
    // Node 1's two threads compute throughout; two requests arrive 200
    // cycles apart. The first interrupts one processor, which serves both:
    // the device must not interrupt the other while the first serves.
    let stats = run(&mult(2000, 2), |node, thread| match (node, thread) {
        (0, 0) => vec![Step::Request(1, 1)],
        (0, _) => vec![Step::Work(200), Step::Request(1, 2)],
        _ => vec![Step::Work(100_000)],
    });
    let node = &stats.nodes[1];
    let interrupts: u64 = node.procs.iter().map(|p| p.interrupts).sum();
    let handlers: u64 = node.procs.iter().map(|p| p.handlers).sum();
    assert_eq!(handlers, 2);
    assert_eq!(interrupts, 1, "a second processor was interrupted ({} spurious)", node.spurious_interrupts);
}

#[test]
fn a_holder_gives_the_role_up_once_messages_have_stopped() {
    // Under the adaptive rule a processor whose work can go on keeps the
    // role while messages arrive faster than an interrupt costs. Here
    // node 1's thread 0 gets its reply while thread 1 computes, a few
    // requests arrive, then none: its million cycles of work used to wait
    // for thread 1's to end (the run took 2.0 M cycles, 1.0 M under the
    // eager rule), since no arrival came to make it reconsider.
    let stats = run(&floating(5000), |node, thread| match (node, thread) {
        (0, 0) => vec![Step::Request(1, 1), Step::Request(1, 1), Step::Request(1, 1)],
        (0, _) => vec![],
        (1, 0) => vec![Step::Request(0, 2), Step::Work(1_000_000)],
        _ => vec![Step::Work(1_000_000)],
    });
    assert!(stats.sim_cycles < 1_200_000, "the run took {} cycles", stats.sim_cycles);
}

#[test]
fn an_arrival_interrupts_a_thread_in_the_middle_of_its_own_access() {
    // Single: node 1's only thread reads half its segment (16384 lines,
    // about 16000 cycles even when they hit) as node 0's request arrives.
    // The access is the thread's computation, so the request interrupts it
    // (Oint 200) instead of waiting for it to end. The round trip is
    // longer than an idle one since hpca97's protocol processing is a
    // thread: the interrupted processor switches to the protocol thread and
    // back, and both 512-byte save areas miss in a cache the segment read
    // has just swept (about 5400 cycles in all, against ~16000 waiting).
    let mut m = MachineConfig::load("hpca97").unwrap();
    m.interrupt.overhead_cycles = 200;
    let cfg = SimConfig::new(m, Topology { nodes: 2, procs_per_node: 1 }, Policy::Single, 1);
    let stats = run(&cfg, |node, _| match node {
        0 => vec![Step::Work(100), Step::Request(1, 1)],
        _ => vec![Step::Read(512 * 1024)],
    });
    let node = &stats.nodes[1];
    assert_eq!(node.procs[0].interrupts, 1);
    assert!(stats.request_latency.max_cycles < 8000, "the request took {} cycles", stats.request_latency.max_cycles);
    assert!(stats.sim_cycles > 16_000, "the access took only {} cycles", stats.sim_cycles);
}

#[test]
fn a_hand_off_to_an_idle_peer_fetches_the_lock_line_the_peer_announced_itself_in() {
    // Node 0's thread 0 waits for its reply as acting PP while thread 1
    // waits for its own. Once thread 0's reply is in, processor 0 hands
    // the role to idle processor 1, which it knows is idle because
    // processor 1 said so in the role's lock line: processor 0's release
    // write has to fetch that line back (a migration miss; its acquire
    // found the line in memory). Processor 0 takes the role only this once
    // and handles nothing after; its other migration miss is its own
    // announcement when its thread finishes while processor 1 (whose
    // thread finished first) holds the role. A free notice would leave it
    // only that one.
    let stats = hand_off(MachineConfig::load("hpca97").unwrap().protocol.role_release_cycles, 300, 200_000);
    let procs = &stats.nodes[0].procs;
    assert_eq!((procs[0].role_acquires, procs[1].role_acquires), (1, 2), "who took the role");
    assert_eq!(procs[0].misses.migration, 2, "processor 0's misses: {:?}", procs[0].misses);
}

#[test]
fn a_released_role_is_free_only_once_the_release_is_done() {
    // Node 0's thread 0 holds the role while waiting; thread 1 waits too.
    // When processor 0 gives the role up, processor 1 may take it only
    // after processor 0's release (instructions, unmasking, then the lock
    // write) is done, so their role-switch activities never overlap.
    let stats = hand_off(5000, 300, 50_000);
    // Thread 1's reply arrives about a round trip after its request, while
    // processor 0's 5000-cycle release goes on; it waits for the release,
    // so its round trip is thread 0's and most of the release.
    let lat = &stats.request_latency;
    assert!(
        lat.max_cycles > lat.min_cycles + 4000,
        "round trips {} and {} cycles: thread 1's reply was taken inside the holder's release",
        lat.min_cycles,
        lat.max_cycles
    );
}

#[test]
fn a_peer_going_idle_during_a_release_still_costs_the_lock_its_moves() {
    // As above, but thread 1 goes idle while processor 0 runs its long
    // release: it announces itself then, so the releasing store, issued
    // at the release's end, must fetch the line back from it, and its
    // acquire fetch it once more. (Timed at the release's start, the store
    // used to come before the announcement in the cache model and both
    // later writes were hits.)
    let stats = hand_off(5000, 2500, 200_000);
    let procs = &stats.nodes[0].procs;
    assert_eq!((procs[0].role_acquires, procs[1].role_acquires), (1, 2), "who took the role");
    // The releasing store's fetch, and processor 0's own announcement when
    // its thread finishes (as in the test above).
    assert_eq!(procs[0].misses.migration, 2, "processor 0's misses: {:?}", procs[0].misses);
}
