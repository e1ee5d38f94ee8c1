//! The fetch&add workload: bad settings are refused with one line, every
//! request is answered under every kind of protocol processor and dispatch
//! discipline, and overlapping handlers of one key would be caught.

use finegrain_apps::fetch_add::{self, FetchAddConfig, KeySkew, Words};
use finegrain_apps::{Sim, Threads};
use finegrain_core::{
    Access, AmError, Args, Discipline, Dispatch, HandlerCtx, HandlerId, HandlerTable, MachineConfig, NodeId, Policy,
    PpKind, Region, Reply, Topology,
};
use finegrain_rt::Placement;
use finegrain_sim::SimConfig;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn workload(keys: u64, skew: KeySkew) -> FetchAddConfig {
    FetchAddConfig {
        keys,
        skew,
        handler_cycles: 50,
        sequential_fraction: 0.0,
        requests_per_thread: 25,
        home_u: 0.5,
        home_burst_cycles: 1000.0,
        think_cycles: 0.0,
    }
}

fn sim(policy: Policy, ppn: u32, discipline: Discipline, pp_kind: PpKind, max_servers: Option<u32>) -> SimConfig {
    let mut c =
        SimConfig::new(MachineConfig::load("hpca99").unwrap(), Topology { nodes: 3, procs_per_node: ppn }, policy, 5);
    c.run.dispatch = Dispatch { discipline, pp_kind, max_servers };
    c
}

#[test]
fn skews_parse_and_bad_ones_are_named() {
    assert_eq!(KeySkew::parse("uniform").unwrap(), KeySkew::Uniform);
    assert_eq!(KeySkew::parse("zipf:1.2").unwrap(), KeySkew::Zipf { exponent: 1.2 });
    for bad in ["zipf", "zipf:0", "zipf:-1", "zipf:x", "normal", "zipf:0.001", "zipf:1000", "zipf:NaN"] {
        let e = KeySkew::parse(bad).unwrap_err().to_string();
        assert!(e.contains(bad) && e.contains("allowed uniform or zipf:S"), "{e}");
    }
}

#[test]
fn bad_workloads_get_one_line_errors() {
    let m = MachineConfig::load("hpca99").unwrap();
    let cap = fetch_add::key_capacity(&m, 2);
    for (cfg, needle) in [
        (FetchAddConfig { keys: 0, ..workload(1, KeySkew::Uniform) }, "invalid keys = 0"),
        (FetchAddConfig { keys: cap + 1, ..workload(1, KeySkew::Uniform) }, "allowed 1..="),
        (FetchAddConfig { sequential_fraction: 1.5, ..workload(4, KeySkew::Uniform) }, "sequential_fraction"),
        (FetchAddConfig { home_u: -0.1, ..workload(4, KeySkew::Uniform) }, "home_u"),
        (FetchAddConfig { requests_per_thread: 0, ..workload(4, KeySkew::Uniform) }, "requests_per_thread"),
        (FetchAddConfig { think_cycles: f64::NAN, ..workload(4, KeySkew::Uniform) }, "think_cycles"),
    ] {
        let e = cfg.validate(&m, 2).unwrap_err().to_string();
        assert!(e.contains(needle) && !e.contains('\n'), "{e}");
    }
    // A preset whose table has no room for one word's block.
    let mut tiny = m.clone();
    tiny.protocol.block_bytes = tiny.cache.size_bytes as u32;
    let e = workload(1, KeySkew::Uniform).validate(&tiny, 1).unwrap_err().to_string();
    assert!(e.contains("holds no") && !e.contains("1..=0"), "{e}");
}

#[test]
fn every_request_is_answered_under_every_arrangement() {
    let arrangements = [
        (Policy::Fixed { protocol_procs: 1 }, 3, Discipline::Serial, PpKind::Smp, None),
        (Policy::Fixed { protocol_procs: 2 }, 4, Discipline::Pdq, PpKind::Embedded, None),
        (Policy::Fixed { protocol_procs: 2 }, 4, Discipline::SpinLock, PpKind::Smp, None),
        (Policy::Fixed { protocol_procs: 2 }, 4, Discipline::Static, PpKind::Embedded, None),
        (Policy::Floating, 3, Discipline::Pdq, PpKind::Smp, Some(2)),
        (Policy::Floating, 3, Discipline::Serial, PpKind::Smp, None),
    ];
    for (policy, ppn, d, kind, max) in arrangements {
        for skew in [KeySkew::Uniform, KeySkew::Zipf { exponent: 1.0 }] {
            let cfg = sim(policy, ppn, d, kind, max);
            let out = fetch_add::run(&Sim(cfg.clone()), &workload(16, skew)).unwrap();
            let threads = policy.compute_procs(ppn) as u64;
            let h = fetch_add::home_measures(&cfg.machine, &out.stats);
            assert_eq!(h.requests, 2 * threads * 25, "{d:?} {kind:?} {skew}: every request reached the home");
            assert!(h.throughput_msgs_per_us > 0.0);
            assert_eq!(out.outputs.iter().map(|r| r.requests).sum::<u64>(), h.requests);
        }
    }
}

#[test]
fn sequential_requests_run_under_pdq_and_are_refused_by_spin_locks() {
    let w = FetchAddConfig { sequential_fraction: 0.2, ..workload(8, KeySkew::Uniform) };
    fetch_add::run(&Sim(sim(Policy::Fixed { protocol_procs: 2 }, 4, Discipline::Pdq, PpKind::Embedded, None)), &w)
        .unwrap();
    let e =
        fetch_add::run(&Sim(sim(Policy::Fixed { protocol_procs: 2 }, 4, Discipline::SpinLock, PpKind::Smp, None)), &w)
            .map(|_| ())
            .unwrap_err()
            .to_string();
    assert!(e.contains("sequential key") && !e.contains('\n'), "{e}");
}

#[test]
fn a_lost_update_is_caught() {
    let w = Words::new(3);
    w.sent[1].store(5, Ordering::Relaxed);
    w.values[1].store(4, Ordering::Relaxed);
    let e = w.check().unwrap_err().to_string();
    assert!(e.contains("word 1 holds 4 after 5"), "{e}");
}

#[test]
fn mult_takes_fewer_interrupts_when_the_home_computes_less() {
    let rate = |home_u| {
        let w = FetchAddConfig { home_u, think_cycles: 20_000.0, ..workload(64, KeySkew::Uniform) };
        let cfg = sim(Policy::Floating, 4, Discipline::Pdq, PpKind::Smp, Some(2));
        let out = fetch_add::run(&Sim(cfg.clone()), &w).unwrap();
        let h = fetch_add::home_measures(&cfg.machine, &out.stats);
        h.interrupts as f64 / h.requests as f64
    };
    let (busy, idle) = (rate(0.95), rate(0.2));
    assert!(busy > 0.05 && idle < busy / 4.0, "interrupts per request: home_u 0.95 -> {busy}, 0.2 -> {idle}");
}

#[test]
fn mult_servers_go_back_to_their_computation_at_saturation() {
    // Requesters send back to back, so the home's queue never empties.
    // Idle compute processors serve it, but one whose thread has work
    // again must go back to it after the handler in hand (the device
    // interrupts when all compute), not drain the queue: that used to
    // cut the home's computation by half (U 0.25 for a target of 0.5).
    for (discipline, servers) in [(Discipline::Pdq, Some(4)), (Discipline::Serial, None)] {
        let cfg = sim(Policy::Floating, 8, discipline, PpKind::Smp, servers);
        let w =
            FetchAddConfig { requests_per_thread: 400, home_burst_cycles: 2000.0, ..workload(4096, KeySkew::Uniform) };
        let out = fetch_add::run(&Sim(cfg.clone()), &w).unwrap();
        let h = fetch_add::home_measures(&cfg.machine, &out.stats);
        assert!(h.home_u > 0.4, "{discipline:?}: the home computed {:.3} of the time, target 0.5", h.home_u);
    }
}

/// The fetch&add handler's context on the native runtime, with `charge`
/// taking the time it charges: natively it takes none, so the handler's
/// load and store would be nanoseconds apart and two handlers of one key
/// would almost never interleave between them, losing no update whatever
/// the dispatch did.
struct SlowCharge<'a>(&'a mut dyn HandlerCtx);

impl HandlerCtx for SlowCharge<'_> {
    fn node(&self) -> NodeId {
        self.0.node()
    }

    fn reply(&mut self, reply: Reply) -> Result<(), AmError> {
        self.0.reply(reply)
    }

    fn reply_bytes(&mut self, handler: HandlerId, args: Args, data: &[u8]) -> Result<(), AmError> {
        self.0.reply_bytes(handler, args, data)
    }

    fn send(
        &mut self,
        dst: NodeId,
        handler: HandlerId,
        key: finegrain_core::SyncKey,
        args: Args,
        payload: finegrain_core::Payload,
    ) -> Result<(), AmError> {
        self.0.send(dst, handler, key, args, payload)
    }

    fn access(&mut self, region: Region, offset: u64, len: u32, kind: Access) {
        self.0.access(region, offset, len, kind)
    }

    fn charge(&mut self, cycles: u64) {
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_nanos(cycles) {
            std::hint::spin_loop();
        }
        self.0.charge(cycles)
    }
}

/// `fetch_add::run_native` with the request handler run through
/// [`SlowCharge`] and watched: returns the run and how many handlers found
/// another of their key in service (the words are checked as there).
fn run_native_watched(
    rt: &finegrain_rt::RtConfig,
    m: &MachineConfig,
    w: &FetchAddConfig,
) -> (finegrain_rt::RtOutput<fetch_add::ThreadOutcome>, u64) {
    let words = Arc::new(Words::new(w.keys));
    let (table, h) = fetch_add::handlers(w, m, words.clone()).unwrap();
    let in_service: Arc<Vec<AtomicU64>> = Arc::new((0..w.keys).map(|_| AtomicU64::new(0)).collect());
    let overlaps = Arc::new(AtomicU64::new(0));
    let mut watched = HandlerTable::new();
    for (id, info) in table.infos() {
        let f = table.function(id).unwrap().clone();
        let (in_service, overlaps) = (in_service.clone(), overlaps.clone());
        let registered = watched.register(info.clone(), move |ctx, msg| {
            if id != h.request {
                return f(ctx, msg);
            }
            let word = &in_service[msg.args.get(0) as usize];
            if word.fetch_add(1, Ordering::SeqCst) != 0 {
                overlaps.fetch_add(1, Ordering::Relaxed);
            }
            let done = f(&mut SlowCharge(ctx), msg);
            word.fetch_sub(1, Ordering::SeqCst);
            done
        });
        assert_eq!(registered.unwrap(), id);
    }
    let requesters = (rt.run.topology.nodes as u64 - 1) * rt.compute_threads_per_node() as u64;
    let shared = Arc::new(fetch_add::Shared { words: words.clone(), requesters_left: AtomicU64::new(requesters) });
    let out = finegrain_rt::run(rt, &watched, |p| {
        let (w, h, shared) = (w.clone(), h.clone(), shared.clone());
        async move { fetch_add::thread(&p, &w, &h, &shared).await }
    })
    .unwrap_or_else(|e| panic!("{:?} {:?}: {e}", rt.run.policy, rt.run.dispatch.discipline));
    if let Err(e) = words.check() {
        panic!("{:?} {:?}: {e}", rt.run.policy, rt.run.dispatch.discipline);
    }
    (out, overlaps.load(Ordering::Relaxed))
}

#[test]
fn native_fetch_add_loses_no_update_under_parallel_dispatch() {
    let m = MachineConfig::load("hpca99").unwrap();
    for (policy, ppn, d) in [
        (Policy::Fixed { protocol_procs: 2 }, 4, Discipline::Pdq),
        (Policy::Floating, 3, Discipline::Pdq),
        (Policy::Fixed { protocol_procs: 2 }, 4, Discipline::SpinLock),
    ] {
        let mut rt = finegrain_rt::RtConfig::new(Topology { nodes: 3, procs_per_node: ppn }, policy);
        rt.run.dispatch.discipline = d;
        rt.segment_bytes = 1 << 16;
        // A quarter of the window is what one visit to the queue takes: one
        // entry, so the home's threads serve side by side instead of one
        // taking every waiting request in a batch.
        rt.pdq_window = 4;
        // 2 us between each handler's load and store (see SlowCharge).
        let w = FetchAddConfig {
            handler_cycles: 2000,
            requests_per_thread: 300,
            home_burst_cycles: 2000.0,
            ..workload(4, KeySkew::Uniform)
        };
        let (out, overlaps) = run_native_watched(&rt, &m, &w);
        assert_eq!(overlaps, 0, "{policy:?} {d:?}: handlers of one key ran at once");
        let compute = policy.compute_procs(ppn) as u64;
        assert_eq!(out.results.iter().map(|r| r.requests).sum::<u64>(), 2 * compute * 300, "{policy:?} {d:?}");
        // The workload's own native driver, which checks the words too.
        let out = fetch_add::run(&native(&rt, m.clone()), &w).unwrap_or_else(|e| panic!("{policy:?} {d:?}: {e}"));
        assert_eq!(out.outputs.iter().map(|r| r.requests).sum::<u64>(), 2 * compute * 300, "{policy:?} {d:?}");
    }
}

/// Runs `f` on a thread of its own; false if it has not returned after
/// `secs` seconds (a livelock fails the test instead of blocking the suite).
fn returns_within(secs: u64, f: impl FnOnce() + Send + 'static) -> bool {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match finished.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(Ok(())) => true,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => false,
    }
}

#[test]
fn mult_serves_even_when_every_idle_period_is_shorter_than_taking_the_role() {
    // Idle compute processors whose threads wake again while they take the
    // role used to leave for their own work, each because another was
    // serving, so no message was ever handled. One-cycle bursts, and
    // near-free interrupts, make every idle period that short.
    // A processor whose own work came back also used to hand the role to a
    // peer whose thread was only pausing, which did the same in turn.
    let quick_wakeups = move |interrupt_cycles: u64, home_u: f64, burst: f64, discipline: Discipline| {
        move || {
            let servers = if discipline == Discipline::Serial { None } else { Some(4) };
            let mut cfg = sim(Policy::Floating, 4, discipline, PpKind::Smp, servers);
            cfg.machine.interrupt.overhead_cycles = interrupt_cycles;
            let w = FetchAddConfig {
                requests_per_thread: 20,
                home_u,
                home_burst_cycles: burst,
                ..workload(2, KeySkew::Uniform)
            };
            let out = fetch_add::run(&Sim(cfg.clone()), &w).unwrap();
            assert_eq!(fetch_add::home_measures(&cfg.machine, &out.stats).requests, 2 * 4 * 20);
        }
    };
    for (interrupt_cycles, home_u, burst, discipline) in [
        (200, 0.0, 1.0, Discipline::SpinLock),
        (200, 0.0, 2.0, Discipline::Pdq),
        (1, 0.5, 1000.0, Discipline::Pdq),
        (200, 0.0, 1.0, Discipline::Serial),
        (200, 0.0, 1.0, Discipline::Pdq),
    ] {
        assert!(
            returns_within(60, quick_wakeups(interrupt_cycles, home_u, burst, discipline)),
            "Oint {interrupt_cycles}, home U {home_u}, bursts of {burst} cycles, {discipline:?}: the run did not end"
        );
    }
}

/// Spinning on a held key lock loads the bus: an embedded processor (no
/// cache) polls the lock word in memory, an SMP one re-reads the line after
/// every release it watches. One hot key keeps three of four processors
/// spinning; 4096 keys keep them apart.
#[test]
fn spinning_on_a_held_lock_costs_bus_transactions() {
    let bus_per_request = |kind, keys| {
        let cfg = sim(Policy::Fixed { protocol_procs: 4 }, 8, Discipline::SpinLock, kind, None);
        let w = FetchAddConfig { requests_per_thread: 200, ..workload(keys, KeySkew::Uniform) };
        let out = fetch_add::run(&Sim(cfg.clone()), &w).unwrap();
        let h = fetch_add::home_measures(&cfg.machine, &out.stats);
        assert!(keys > 1 || h.pp_busy_wait_fraction > 0.3, "{kind:?}: one key, yet little spinning");
        h.bus_transactions_per_request
    };
    let (hot, apart) = (bus_per_request(PpKind::Embedded, 1), bus_per_request(PpKind::Embedded, 4096));
    assert!(hot > 2.0 * apart, "embedded: {hot:.2} bus transactions per request with one key, {apart:.2} with 4096");
    let (hot, apart) = (bus_per_request(PpKind::Smp, 1), bus_per_request(PpKind::Smp, 4096));
    assert!(hot > apart + 2.0, "smp: {hot:.2} bus transactions per request with one key, {apart:.2} with 4096");
}

/// With a dispatch device, the device keeps track of who serves: an idle
/// compute processor taking the role under serial dispatch pays no software
/// lock, exactly as under PDQ with one server.
#[test]
fn a_dispatch_device_spares_serial_dispatch_the_role_lock() {
    let role_and_migration = |discipline, servers| {
        let cfg = sim(Policy::Floating, 8, discipline, PpKind::Smp, servers);
        let w = FetchAddConfig { requests_per_thread: 200, ..workload(1, KeySkew::Uniform) };
        let home = fetch_add::run(&Sim(cfg.clone()), &w).unwrap().stats.nodes.swap_remove(0);
        let role: u64 = home.procs.iter().map(|p| p.cycles.role).sum();
        let migration: u64 = home.procs.iter().map(|p| p.misses.migration).sum();
        (role, migration)
    };
    let (serial, pdq) = (role_and_migration(Discipline::Serial, None), role_and_migration(Discipline::Pdq, Some(1)));
    assert!(serial.0 as f64 <= pdq.0 as f64 * 1.05, "role cycles: serial {} vs PDQ {}", serial.0, pdq.0);
    assert!(serial.1 <= pdq.1 + pdq.1 / 20, "migration misses: serial {} vs PDQ {}", serial.1, pdq.1);
}

#[test]
fn a_home_that_never_computes_adds_no_events_however_long_the_run() {
    // Requesters that think for ~1e7 cycles before each request make a
    // long run with few messages; an idle home must not wake in bursts
    // all that time (it took ~1 event per 1000 simulated cycles).
    let cfg =
        FetchAddConfig { home_u: 0.0, think_cycles: 1e7, requests_per_thread: 2, ..workload(8, KeySkew::Uniform) };
    for (policy, pp_kind) in [(Policy::Fixed { protocol_procs: 1 }, PpKind::Smp), (Policy::Floating, PpKind::Smp)] {
        let max = (policy == Policy::Floating).then_some(1);
        let out = fetch_add::run(&Sim(sim(policy, 3, Discipline::Pdq, pp_kind, max)), &cfg).unwrap();
        let s = &out.stats;
        assert!(s.sim_cycles > 10_000_000, "a long run: {} cycles", s.sim_cycles);
        assert!(s.events < 50 * s.messages, "{} events for {} messages", s.events, s.messages);
    }
}

/// The presets' bus is split-transaction: one transaction's address goes
/// out while another's data moves, so four SMP protocol processors wait
/// less for it than on a bus held for each transaction's whole occupancy,
/// and serve more requests per microsecond.
#[test]
fn a_split_bus_queues_smp_protocol_processors_less_than_one_held_whole() {
    let run = |split: bool| {
        let mut cfg = sim(Policy::Fixed { protocol_procs: 4 }, 8, Discipline::Pdq, PpKind::Smp, None);
        if !split {
            cfg.machine.bus.address_phase_cycles = None;
        }
        let w = FetchAddConfig { requests_per_thread: 200, home_u: 0.0, ..workload(4096, KeySkew::Uniform) };
        let out = fetch_add::run(&Sim(cfg.clone()), &w).unwrap();
        let bus = out.stats.nodes[0].bus.clone();
        (fetch_add::home_measures(&cfg.machine, &out.stats).throughput_msgs_per_us, bus)
    };
    let ((split_rate, split), (whole_rate, whole)) = (run(true), run(false));
    assert!(split.data_busy_cycles.is_some() && whole.data_busy_cycles.is_none());
    let wait = |b: &finegrain_sim::stats::BusStats| b.wait_cycles as f64 / b.transactions as f64;
    assert!(
        wait(&split) < 0.7 * wait(&whole),
        "wait per transaction: split {:.1}, whole {:.1}",
        wait(&split),
        wait(&whole)
    );
    assert!(split_rate > whole_rate, "requests per us: split {split_rate:.2}, whole {whole_rate:.2}");
}

/// The native runtime's threads of this process with `machine`.
fn native(rt: &finegrain_rt::RtConfig, machine: MachineConfig) -> Threads<'static> {
    Threads { on: Placement::Native, config: rt.clone(), machine }
}
