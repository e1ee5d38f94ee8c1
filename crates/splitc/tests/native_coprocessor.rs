//! Split-C natively under the co-processor policy's three libraries: every
//! operation moves the right words; a user's atomic function (and, under
//! optimized, an ordinary user handler) is forwarded from the progress
//! thread to the node's main thread, which runs it; a failing handler on
//! the progress thread ends the run at once.

use finegrain_core::{
    AmError, Args, CoprocLibrary, HandlerInfo, HandlerTable, LibraryOp, NodeId, Payload, Policy, Proc, SyncKey,
    Topology,
};
use finegrain_rt::{run, RtConfig};
use finegrain_splitc::conformance::Conformance;
use finegrain_splitc::SplitC;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const NODES: u32 = 4;

/// One run at a time: each starts two threads per node, and the machine
/// may have two cores.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static RUNS: Mutex<()> = Mutex::new(());
    RUNS.lock().unwrap_or_else(|e| e.into_inner())
}

fn coprocessor(library: CoprocLibrary, nodes: u32) -> RtConfig {
    let mut cfg = RtConfig::new(Topology { nodes, procs_per_node: 1 }, Policy::Coprocessor { library });
    // Two cores for up to eight threads: pinning would only stack them.
    cfg.pin = false;
    cfg
}

/// Whether the calling thread is its node's main thread (`fg-n{n}-t0`).
fn on_main_thread() -> bool {
    std::thread::current().name().is_some_and(|n| n.starts_with("fg-n") && n.ends_with("-t0"))
}

/// Split-C for `NODES` nodes with a fetch&add that counts the calls that
/// ran off the main thread in `off_main`.
/// The conformance program, counting atomic calls off the main thread.
fn conformance(table: &mut HandlerTable, off_main: Arc<AtomicU64>) -> Conformance {
    Conformance::register_with(NODES, table, move || {
        if !on_main_thread() {
            off_main.fetch_add(1, Ordering::Relaxed);
        }
    })
    .unwrap()
}

/// One node's run of the conformance program, boxed so one function
/// serves both the in-process and the shm platform.
type Run = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<String>, AmError>>>>;

/// Every node runs the conformance program.
fn conforming(c: &Conformance) -> impl Fn(finegrain_rt::RtProc) -> Run + Sync + '_ {
    move |p| {
        let c = c.clone();
        Box::pin(async move { c.run(&p).await })
    }
}

fn check(library: CoprocLibrary) {
    let _one = one_at_a_time();
    let mut table = HandlerTable::new();
    let off_main = Arc::new(AtomicU64::new(0));
    let c = conformance(&mut table, off_main.clone());
    let cfg = coprocessor(library, NODES);
    let out = run(&cfg, &table, conforming(&c)).unwrap_or_else(|e| panic!("{library:?}: {e}"));
    let wrong: Vec<String> = out.results.into_iter().flatten().collect();
    assert!(wrong.is_empty(), "{library:?}: {wrong:?}");
    // Every library runs atomic functions on the main processor.
    assert_eq!(off_main.load(Ordering::Relaxed), 0, "{library:?}: atomic functions ran off the main thread");
    let threads = out.stats.threads.len();
    let expected = if library == CoprocLibrary::MainAm { NODES } else { 2 * NODES };
    assert_eq!(threads, expected as usize, "{library:?}: threads of the run");
}

#[test]
fn every_operation_moves_the_right_words_under_main_am() {
    check(CoprocLibrary::MainAm);
}

#[test]
fn every_operation_moves_the_right_words_under_coproc_am() {
    check(CoprocLibrary::CoprocAm);
}

#[test]
fn every_operation_moves_the_right_words_under_optimized() {
    check(CoprocLibrary::Optimized);
}

/// Which thread ran an atomic function and an ordinary user handler at
/// node 1, under `library`: (atomic on main, user handler on main).
fn where_handlers_run(library: CoprocLibrary) -> (bool, bool) {
    let _one = one_at_a_time();
    let mut table = HandlerTable::new();
    let atomic_main = Arc::new(AtomicU64::new(0));
    let user_main = Arc::new(AtomicU64::new(0));
    let mut b = SplitC::builder(2, 64);
    let am = atomic_main.clone();
    let add = b.atomic(5, move |local, [word, by, _]| {
        am.store(1 + u64::from(on_main_thread()), Ordering::Relaxed);
        let old = local.get(word);
        local.set(word, old + by);
        old
    });
    let sc = b.register(&mut table).unwrap();
    let info = |name: &str| HandlerInfo { name: name.into(), body_cycles: 10, code_bytes: 64 };
    let done = table.register(info("user_done"), |_, _| Ok(())).unwrap();
    let um = user_main.clone();
    let user = table
        .register(info("user"), move |ctx, m| {
            um.store(1 + u64::from(on_main_thread()), Ordering::Relaxed);
            ctx.reply_bytes(done, Args::new(&[m.args.get(0) + 1])?, &[])
        })
        .unwrap();
    let cfg = coprocessor(library, 2);
    let out = run(&cfg, &table, move |p| {
        let sc = sc.clone();
        async move {
            let s = sc.on(&p)?;
            let word = s.alloc(1)?;
            let mut answers = Vec::new();
            if s.me().0 == 0 {
                answers.push(s.atomic(NodeId(1), add, [word, 5, 0]).await?);
                answers.push(s.atomic(NodeId(1), add, [word, 5, 0]).await?);
                let reply =
                    p.request_keyed(NodeId(1), user, SyncKey::NoSync, Args::new(&[41])?, Payload::none()).await?;
                answers.push(reply.args.get(0));
            }
            // Node 1 only waits: its main thread runs what is forwarded
            // while it does.
            s.barrier().await?;
            Ok(answers)
        }
    })
    .unwrap_or_else(|e| panic!("{library:?}: {e}"));
    assert_eq!(out.results[0], [0, 5, 42], "{library:?}: the atomic adds' old values and the user handler's reply");
    let ran = |c: &AtomicU64| match c.load(Ordering::Relaxed) {
        0 => panic!("{library:?}: a handler never ran"),
        v => v == 2,
    };
    (ran(&atomic_main), ran(&user_main))
}

#[test]
fn atomic_functions_are_forwarded_to_the_main_thread_under_optimized() {
    assert_eq!(where_handlers_run(CoprocLibrary::Optimized), (true, true), "atomic and user handler on main");
}

#[test]
fn under_coproc_am_only_atomics_are_forwarded() {
    assert_eq!(where_handlers_run(CoprocLibrary::CoprocAm), (true, false), "atomic on main, user handler off it");
}

#[test]
fn under_main_am_the_main_thread_runs_everything() {
    assert_eq!(where_handlers_run(CoprocLibrary::MainAm), (true, true));
}

/// A data handler that panics runs on the progress thread (optimized): the
/// run fails at once, naming it, rather than leaving the main threads
/// waiting (for the whole progress timeout) for what it never did.
#[test]
fn a_panicking_handler_on_the_progress_thread_fails_the_run_within_a_second() {
    let _one = one_at_a_time();
    let mut table = HandlerTable::new();
    let info = HandlerInfo { name: "bad_store".into(), body_cycles: 10, code_bytes: 64 };
    let seen = Arc::new(Mutex::new((String::new(), None)));
    let t = seen.clone();
    let bad = table
        .register_library(info, LibraryOp::Store, move |_, _| {
            let name = std::thread::current().name().unwrap_or("").to_string();
            *t.lock().unwrap() = (name, Some(Instant::now()));
            panic!("a store handler that fails")
        })
        .unwrap();
    let mut cfg = coprocessor(CoprocLibrary::Optimized, 2);
    cfg.progress_timeout_ms = 60_000;
    let never = Arc::new(AtomicU64::new(0));
    let e = run(&cfg, &table, move |p| {
        let never = never.clone();
        async move {
            if p.node().0 == 0 {
                p.send_keyed(NodeId(1), bad, SyncKey::NoSync, &[], &[])?;
            }
            p.wait_until(|| never.load(Ordering::Acquire) != 0).await
        }
    })
    .unwrap_err()
    .to_string();
    let (thread, panicked) = seen.lock().unwrap().clone();
    let took = panicked.expect("the handler ran").elapsed();
    assert!(took < Duration::from_secs(1), "the run took {took:?} to end after the handler panicked");
    assert!(e.contains("bad_store") && e.contains("panicked"), "{e}");
    assert_eq!(thread, "fg-n1-t1", "the store handler ran on node 1's progress thread");
}

/// The co-processor policy needs the serial discipline (one progress
/// thread serves each node); the refusal says so on one line.
#[test]
fn a_parallel_discipline_is_refused_under_the_coprocessor_policy() {
    let mut cfg = coprocessor(CoprocLibrary::Optimized, 2);
    cfg.run.dispatch.discipline = finegrain_core::Discipline::Pdq;
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("use serial") && !e.contains('\n'), "{e}");
    assert_eq!(coprocessor(CoprocLibrary::Optimized, 2).threads_per_node(), 2);
    assert_eq!(coprocessor(CoprocLibrary::MainAm, 2).threads_per_node(), 1);
}

/// Under optimized with its 2 nodes in 2 processes over shared memory
/// (`finegrain_rt::Placement::Shm`): every operation, as on threads. The test
/// launches two copies of this test binary, each told its node through
/// the environment, which run only this test and check their own node's
/// answers (a failed check fails its process, and so the launch).
#[test]
fn every_operation_moves_the_right_words_under_optimized_across_two_processes() {
    use finegrain_rt::processes::launch::{launch, Launched};
    const NAME: &str = "every_operation_moves_the_right_words_under_optimized_across_two_processes";
    if let Some(env) = finegrain_rt::NodeEnv::from_env().expect("a well-formed launcher environment") {
        return shm_node(env);
    }
    let _one = one_at_a_time();
    let exe = std::env::current_exe().expect("this test binary").into_os_string();
    let args: Vec<std::ffi::OsString> =
        ["--exact", NAME, "--test-threads=1", "--nocapture"].iter().map(|a| a.into()).collect();
    match launch(2, &exe, &args).expect("the launcher starts") {
        Launched::Done => {}
        other => panic!("the node processes did not all succeed: {other:?}"),
    }
}

/// One node process of the test above.
fn shm_node(env: finegrain_rt::NodeEnv) {
    let mut table = HandlerTable::new();
    let c = Conformance::register_with(2, &mut table, || {
        assert!(on_main_thread(), "the atomic function ran off the main thread");
    })
    .unwrap();
    let cfg = coprocessor(CoprocLibrary::Optimized, 2);
    let shm = finegrain_rt::Placement::Shm(env);
    let out = shm.run_node(&cfg, &table, conforming(&c)).unwrap_or_else(|e| panic!("node {}: {e}", env.node));
    let wrong: Vec<String> = out.results.into_iter().flatten().collect();
    assert!(wrong.is_empty(), "node {}: {wrong:?}", env.node);
    assert_eq!(out.stats.threads.len(), 2, "node {}: a main and a progress thread", env.node);
}
