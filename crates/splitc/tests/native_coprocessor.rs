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
use finegrain_splitc::{AtomicId, GlobalPtr, Layout, SplitC, CHUNK_WORDS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const NODES: u32 = 4;
/// Longer than one message, so bulk operations are split.
const BULK: u64 = 3 * CHUNK_WORDS + 7;

/// One run at a time: each starts two threads per node, and the machine
/// may have two cores.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static RUNS: Mutex<()> = Mutex::new(());
    RUNS.lock().unwrap_or_else(|e| e.into_inner())
}

fn value(node: u32, i: u64) -> u64 {
    (node as u64) << 32 | i
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

/// Each check returns a description of what went wrong, if anything (the
/// program of `operations.rs`).
async fn program<P: Proc>(p: P, sc: SplitC, add: AtomicId) -> Result<Vec<String>, AmError> {
    let s = sc.on(&p)?;
    let me = s.me().0;
    let n = s.procs();
    let mut wrong = Vec::new();
    let mine = s.alloc(BULK)?;
    let landing = s.alloc(BULK)?;
    let stores = s.alloc(n as u64)?;
    let counter = s.alloc(1)?;
    let puts = s.alloc(n as u64)?;
    for i in 0..BULK {
        s.local().set(mine + i, value(me, i));
    }
    s.barrier().await?;
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    // A store waited for with store_sync (the first stores of the run, so
    // the count is theirs): 4 words from the previous node.
    s.store(GlobalPtr::new(NodeId(next), landing), mine, 4).await?;
    s.store_sync(4).await?;
    if (0..4).any(|i| s.local().get(landing + i) != value(prev, i)) {
        wrong.push(format!("node {me}: store_sync of 4 words from {prev}"));
    }
    s.barrier().await?;
    s.get(GlobalPtr::new(NodeId(next), mine), landing, BULK).await?;
    s.sync().await?;
    if (0..BULK).any(|i| s.local().get(landing + i) != value(next, i)) {
        wrong.push(format!("node {me}: bulk get from {next}"));
    }
    s.barrier().await?;
    s.put(GlobalPtr::new(NodeId(prev), landing), mine, BULK).await?;
    s.sync().await?;
    s.barrier().await?;
    if (0..BULK).any(|i| s.local().get(landing + i) != value(next, i)) {
        wrong.push(format!("node {me}: bulk put from {next}"));
    }
    s.put_value(GlobalPtr::new(NodeId(next), puts + me as u64), value(me, 42)).await?;
    s.sync().await?;
    s.barrier().await?;
    if s.local().get(puts + prev as u64) != value(prev, 42) {
        wrong.push(format!("node {me}: one-word put from {prev}"));
    }
    for d in 0..n {
        s.store_value(GlobalPtr::new(NodeId(d), stores + me as u64), value(me, 99)).await?;
    }
    s.all_store_sync().await?;
    if (0..n).any(|src| s.local().get(stores + src as u64) != value(src, 99)) {
        wrong.push(format!("node {me}: stores"));
    }
    s.store(GlobalPtr::new(NodeId(prev), landing), mine, BULK).await?;
    s.all_store_sync().await?;
    if (0..BULK).any(|i| s.local().get(landing + i) != value(next, i)) {
        wrong.push(format!("node {me}: bulk store from {next}"));
    }
    let got = s.read(GlobalPtr::new(NodeId(next), mine + 5)).await?;
    if got != value(next, 5) {
        wrong.push(format!("node {me}: read {got:#x}"));
    }
    s.write(GlobalPtr::new(NodeId(next), stores + me as u64), 7).await?;
    s.barrier().await?;
    if s.local().get(stores + prev as u64) != 7 {
        wrong.push(format!("node {me}: write from {prev}"));
    }
    let mut olds = Vec::new();
    for _ in 0..10 {
        olds.push(s.atomic(NodeId(0), add, [counter, 1, 0]).await?);
    }
    s.barrier().await?;
    if me == 0 && s.local().get(counter) != 10 * n as u64 {
        wrong.push(format!("atomic adds: counter {}", s.local().get(counter)));
    }
    if olds.windows(2).any(|w| w[1] <= w[0]) {
        wrong.push(format!("node {me}: atomic results not increasing {olds:?}"));
    }
    let a = s.alloc_spread(21, 1, Layout::Cyclic)?;
    for l in 0..a.local_len(s.me()) {
        s.local().set(a.local_word(l), a.global_index(s.me(), l) * 3);
    }
    s.barrier().await?;
    let mut sum = 0;
    for i in 0..a.len {
        sum += s.read(a.ptr(i)).await?;
    }
    if sum != 3 * 21 * 20 / 2 {
        wrong.push(format!("node {me}: spread array sum {sum}"));
    }
    let total = s.all_reduce_sum(me as u64 + 1).await?;
    if total != (n as u64) * (n as u64 + 1) / 2 {
        wrong.push(format!("node {me}: all_reduce_sum {total}"));
    }
    let max = s.all_reduce_max(me as u64 * 10).await?;
    if max != (n as u64 - 1) * 10 {
        wrong.push(format!("node {me}: all_reduce_max {max}"));
    }
    Ok(wrong)
}

/// Split-C for `NODES` nodes with a fetch&add that counts the calls that
/// ran off the main thread in `off_main`.
fn splitc(table: &mut HandlerTable, off_main: Arc<AtomicU64>) -> (SplitC, AtomicId) {
    let mut b = SplitC::builder(NODES, 4 * BULK + 96);
    let add = b.atomic(5, move |local, [word, by, _]| {
        if !on_main_thread() {
            off_main.fetch_add(1, Ordering::Relaxed);
        }
        let old = local.get(word);
        local.set(word, old + by);
        old
    });
    (b.register(table).unwrap(), add)
}

fn check(library: CoprocLibrary) {
    let _one = one_at_a_time();
    let mut table = HandlerTable::new();
    let off_main = Arc::new(AtomicU64::new(0));
    let (sc, add) = splitc(&mut table, off_main.clone());
    let cfg = coprocessor(library, NODES);
    let out = run(&cfg, &table, move |p| program(p, sc.clone(), add)).unwrap_or_else(|e| panic!("{library:?}: {e}"));
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
/// (`finegrain_rt::ShmPlatform`): every operation, as on threads. The test
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
    let mut b = SplitC::builder(2, 4 * BULK + 96);
    let add = b.atomic(5, |local, [word, by, _]| {
        assert!(on_main_thread(), "the atomic function ran off the main thread");
        let old = local.get(word);
        local.set(word, old + by);
        old
    });
    let mut table = HandlerTable::new();
    let sc = b.register(&mut table).unwrap();
    let cfg = coprocessor(CoprocLibrary::Optimized, 2);
    let shm = finegrain_rt::ShmPlatform { config: &cfg, env };
    let out =
        shm.run_node(&table, |p| program(p, sc.clone(), add)).unwrap_or_else(|e| panic!("node {}: {e}", env.node));
    let wrong: Vec<String> = out.results.into_iter().flatten().collect();
    assert!(wrong.is_empty(), "node {}: {wrong:?}", env.node);
    assert_eq!(out.stats.threads.len(), 2, "node {}: a main and a progress thread", env.node);
}
