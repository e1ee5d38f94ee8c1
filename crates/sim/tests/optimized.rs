//! The optimized co-processor library in the engine (IPPS 1996 Section
//! 5.2): every Split-C operation moves the right words under
//! `coprocessor:optimized` on ipps96, one put, get and store on an idle
//! pair take what the scripted sequences take, atomic functions run on the
//! main processor under both co-processor libraries, the same seed gives
//! the same statistics, and coproc-am's queued one-way stores cost each
//! message a bounded number of events.

use finegrain_core::{CoprocLibrary, HandlerTable, MachineConfig, NodeId, Policy, Proc, Topology};
use finegrain_sim::coproc::{optimized_latency, SplitOp};
use finegrain_sim::{cycles_consistent, simulate, RunStats, SimConfig};
use finegrain_splitc::conformance::Conformance;
use finegrain_splitc::{GlobalPtr, SplitC};

fn ipps96(library: CoprocLibrary, nodes: u32, seed: u64) -> SimConfig {
    let topology = Topology { nodes, procs_per_node: 1 };
    SimConfig::new(MachineConfig::load("ipps96").unwrap(), topology, Policy::Coprocessor { library }, seed)
}

/// Runs the operations program; returns its statistics.
fn run_operations(cfg: &SimConfig) -> RunStats {
    let nodes = cfg.run.topology.nodes;
    let mut table = HandlerTable::new();
    let c = Conformance::register(nodes, &mut table).unwrap();
    let what = format!("{} nodes {:?}", nodes, cfg.run.policy);
    let out = simulate(cfg, &table, move |p| {
        let c = c.clone();
        async move { c.run(&p).await }
    })
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let wrong: Vec<String> = out.results.into_iter().flatten().collect();
    assert!(wrong.is_empty(), "{what}: {wrong:?}");
    assert!(cycles_consistent(&out.stats), "{what}");
    out.stats
}

fn coproc_sum(stats: &RunStats, f: impl Fn(&finegrain_sim::stats::CoprocStats) -> u64) -> u64 {
    stats.nodes.iter().map(|n| f(n.coproc.as_ref().expect("a co-processor node"))).sum()
}

#[test]
fn every_operation_moves_the_right_words_under_optimized_on_2_and_4_nodes() {
    for nodes in [2, 4] {
        let stats = run_operations(&ipps96(CoprocLibrary::Optimized, nodes, 3));
        // Split-C's handlers are all the hardware's or the main
        // processor's: no dispatch thread runs one.
        assert_eq!(coproc_sum(&stats, |c| c.handlers), 0, "{nodes} nodes");
        assert!(coproc_sum(&stats, |c| c.direct_dmas) > 0);
        assert!(coproc_sum(&stats, |c| c.remote_adds) > 0);
        assert!(coproc_sum(&stats, |c| c.counter_threads) > 0);
        // The atomic functions, on node 0's main processor.
        assert_eq!(stats.nodes[0].procs[0].handlers, 10 * nodes as u64, "{nodes} nodes");
        assert_eq!(stats.interrupts, 0);
        assert_eq!(stats.replies, stats.requests);
    }
}

#[test]
fn every_operation_moves_the_right_words_under_the_other_libraries_too() {
    for library in [CoprocLibrary::CoprocAm, CoprocLibrary::MainAm] {
        let stats = run_operations(&ipps96(library, 4, 3));
        // Atomic functions run on the main processor in every library.
        let main_handlers = stats.nodes[0].procs[0].handlers;
        match library {
            CoprocLibrary::CoprocAm => assert_eq!(main_handlers, 40, "coproc-am: the atomics only"),
            _ => assert!(main_handlers > 40, "main-am: every handler"),
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_statistics() {
    let cfg = ipps96(CoprocLibrary::Optimized, 4, 11);
    assert_eq!(run_operations(&cfg), run_operations(&cfg));
}

/// Node 0 issues one `op` on an idle pair at cycle 0; returns when it is
/// complete as the scripts time it: `sync` returns (put, get), or node 1
/// sees the store with `store_sync`.
fn one_op(op: SplitOp) -> u64 {
    let cfg = ipps96(CoprocLibrary::Optimized, 2, 1);
    let mut table = HandlerTable::new();
    let sc = SplitC::builder(2, 64).register(&mut table).unwrap();
    let out = simulate(&cfg, &table, move |p| {
        let sc = sc.clone();
        async move {
            let s = sc.on(&p)?;
            let word = s.alloc(1)?;
            let owner = GlobalPtr::new(NodeId(1), word);
            let t0 = p.now();
            match (s.me().0, op) {
                (0, SplitOp::Put { .. }) => {
                    s.put_value(owner, 5).await?;
                    s.sync().await?;
                }
                (0, SplitOp::Get { .. }) => {
                    s.get(owner, word, 1).await?;
                    s.sync().await?;
                }
                (0, SplitOp::Store { .. }) => s.store_value(owner, 5).await?,
                (1, SplitOp::Store { .. }) => s.store_sync(1).await?,
                _ => {}
            }
            Ok(p.now() - t0)
        }
    })
    .unwrap();
    match op {
        SplitOp::Store { .. } => out.results[1],
        _ => out.results[0],
    }
}

#[test]
fn one_put_get_and_store_on_an_idle_pair_take_the_scripted_latencies() {
    let m = MachineConfig::load("ipps96").unwrap();
    for op in [SplitOp::Put { bytes: 8 }, SplitOp::Get { bytes: 8 }, SplitOp::Store { bytes: 8 }] {
        let engine = one_op(op);
        let script = optimized_latency(&m, op).unwrap();
        assert!(engine.abs_diff(script) <= 5, "{op:?}: engine {engine} cycles, script {script}");
    }
}

/// Node 1 calls an atomic function at node 0, whose thread computes
/// `work` cycles in `chunks` pieces (polling between them when `poll`)
/// and then finishes; returns how long node 1 waited for the answer.
fn atomic_wait(library: CoprocLibrary, work: u64, chunks: u64, poll: bool) -> u64 {
    let cfg = ipps96(library, 2, 1);
    let mut table = HandlerTable::new();
    let mut b = SplitC::builder(2, 64);
    let inc = b.atomic(5, |local, [word, _, _]| {
        let old = local.get(word);
        local.set(word, old + 1);
        old
    });
    let sc = b.register(&mut table).unwrap();
    let out = simulate(&cfg, &table, move |p| {
        let sc = sc.clone();
        async move {
            let s = sc.on(&p)?;
            let word = s.alloc(1)?;
            if s.me().0 == 0 {
                for _ in 0..chunks {
                    p.work(work / chunks).await;
                    if poll {
                        p.poll().await;
                    }
                }
                return Ok(0);
            }
            let t0 = p.now();
            let old = s.atomic(NodeId(0), inc, [word, 0, 0]).await?;
            assert_eq!(old, 0);
            Ok(p.now() - t0)
        }
    })
    .unwrap();
    assert_eq!(
        out.stats.nodes[0].procs[0].handlers,
        1,
        "{}: the atomic ran on node 0's main processor",
        library.label()
    );
    out.results[1]
}

#[test]
fn an_atomic_function_runs_on_the_main_processor_which_must_poll_for_it() {
    const WORK: u64 = 400_000;
    for library in [CoprocLibrary::CoprocAm, CoprocLibrary::Optimized] {
        let idle = atomic_wait(library, 0, 1, false);
        // Computing without a poll: the atomic waits until it is done.
        let busy = atomic_wait(library, WORK, 1, false);
        assert!(busy >= WORK && busy < WORK + idle, "{}: idle {idle}, busy {busy}", library.label());
        // Polling every tenth of it: it waits a tenth at most.
        let polled = atomic_wait(library, WORK, 10, true);
        assert!(polled < WORK / 10 + idle + 100, "{}: idle {idle}, polled {polled}", library.label());
    }
}

/// Node 0 stores `n` words one way into one word of node 1, back to back,
/// then all nodes `all_store_sync`; returns node 1's word and the
/// statistics.
fn queued_stores(library: CoprocLibrary, n: u64) -> (u64, RunStats) {
    let cfg = ipps96(library, 2, 1);
    let mut table = HandlerTable::new();
    let sc = SplitC::builder(2, 64).register(&mut table).unwrap();
    let out = simulate(&cfg, &table, move |p| {
        let sc = sc.clone();
        async move {
            let s = sc.on(&p)?;
            let word = s.alloc(1)?;
            if s.me().0 == 0 {
                for i in 1..=n {
                    s.store_value(GlobalPtr::new(NodeId(1), word), i).await?;
                }
            }
            s.all_store_sync().await?;
            Ok(s.local().get(word))
        }
    })
    .unwrap();
    (out.results[1], out.stats)
}

#[test]
fn stores_queued_on_one_channel_go_in_order_and_each_costs_a_few_events() {
    for library in CoprocLibrary::ALL {
        let (small, few) = queued_stores(library, 100);
        let (last, many) = queued_stores(library, 1000);
        assert_eq!((small, last), (100, 1000), "{}: the stores landed in the order sent", library.label());
        // Events grow with the stores, not with their square.
        let per_store = (many.events - few.events) as f64 / 900.0;
        assert!(per_store < 20.0, "{}: {per_store:.1} events per store", library.label());
    }
}
