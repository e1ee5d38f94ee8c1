//! Every Split-C operation moves the right words, natively, under the
//! policies that run one compute thread per node.

use finegrain_core::{AmError, HandlerTable, NodeId, Policy, Proc, Topology};
use finegrain_rt::{run, RtConfig};
use finegrain_splitc::{GlobalPtr, Layout, SplitC, CHUNK_WORDS};

const NODES: u32 = 4;
/// Longer than one message, so bulk operations are split.
const BULK: u64 = 3 * CHUNK_WORDS + 7;

fn value(node: u32, i: u64) -> u64 {
    (node as u64) << 32 | i
}

/// Each check returns a description of what went wrong, if anything.
async fn program<P: Proc>(p: P, sc: SplitC, add: finegrain_splitc::AtomicId) -> Result<Vec<String>, AmError> {
    let s = sc.on(&p)?;
    let me = s.me().0;
    let n = s.procs();
    let mut wrong = Vec::new();
    let mine = s.alloc(BULK)?;
    let landing = s.alloc(BULK)?;
    let stores = s.alloc(n as u64)?;
    let counter = s.alloc(1)?;
    for i in 0..BULK {
        s.local().set(mine + i, value(me, i));
    }
    s.barrier().await?;
    // Bulk get of the next node's words.
    let next = (me + 1) % n;
    s.get(GlobalPtr::new(NodeId(next), mine), landing, BULK).await?;
    s.sync().await?;
    if (0..BULK).any(|i| s.local().get(landing + i) != value(next, i)) {
        wrong.push(format!("node {me}: bulk get from {next}"));
    }
    // Bulk put into the previous node's landing area.
    s.barrier().await?;
    let prev = (me + n - 1) % n;
    s.put(GlobalPtr::new(NodeId(prev), landing), mine, BULK).await?;
    s.sync().await?;
    s.barrier().await?;
    if (0..BULK).any(|i| s.local().get(landing + i) != value(next, i)) {
        wrong.push(format!("node {me}: bulk put from {next}"));
    }
    // One-word stores into every node, all_store_sync.
    for d in 0..n {
        s.store_value(GlobalPtr::new(NodeId(d), stores + me as u64), value(me, 99)).await?;
    }
    s.all_store_sync().await?;
    if (0..n).any(|src| s.local().get(stores + src as u64) != value(src, 99)) {
        wrong.push(format!("node {me}: stores"));
    }
    // Bulk store, then a blocking read and write.
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
    // Atomic fetch&add at node 0, ten times from each node.
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
    // Spread arrays and reductions.
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

fn check(policy: Policy, procs_per_node: u32) {
    let mut table = HandlerTable::new();
    let mut b = SplitC::builder(NODES, 4 * BULK + 64);
    let add = b.atomic(5, |local, [word, by, _]| {
        let old = local.get(word);
        local.set(word, old + by);
        old
    });
    let sc = b.register(&mut table).unwrap();
    let cfg = RtConfig::new(Topology { nodes: NODES, procs_per_node }, policy);
    let out = run(&cfg, &table, move |p| program(p, sc.clone(), add)).unwrap_or_else(|e| panic!("{policy:?}: {e}"));
    let wrong: Vec<String> = out.results.into_iter().flatten().collect();
    assert!(wrong.is_empty(), "{policy:?}: {wrong:?}");
}

#[test]
fn every_operation_moves_the_right_words_under_single() {
    check(Policy::Single, 1);
}

#[test]
fn every_operation_moves_the_right_words_under_fixed() {
    check(Policy::Fixed { protocol_procs: 1 }, 2);
}

#[test]
fn more_than_one_thread_per_node_is_refused() {
    let mut table = HandlerTable::new();
    let sc = SplitC::builder(2, 100).register(&mut table).unwrap();
    let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, Policy::Floating);
    let e = run(&cfg, &table, move |p| {
        let sc = sc.clone();
        async move { sc.on(&p).map(|_| ()) }
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("one compute thread per node"), "{e}");
}

#[test]
fn out_of_segment_operations_are_refused() {
    let mut table = HandlerTable::new();
    let sc = SplitC::builder(2, 100).register(&mut table).unwrap();
    let cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 1 }, Policy::Single);
    let out = run(&cfg, &table, move |p| {
        let sc = sc.clone();
        async move {
            let s = sc.on(&p)?;
            let far = s.get(GlobalPtr::new(NodeId(1), 95), 10, 10).await.unwrap_err().to_string();
            let big = s.alloc(1000).unwrap_err().to_string();
            let node = s.read(GlobalPtr::new(NodeId(9), 0)).await.unwrap_err();
            Ok((far, big, node))
        }
    })
    .unwrap();
    for (far, big, node) in out.results {
        assert!(far.contains("outside its 100-word segment"), "{far}");
        assert!(big.contains("allocating 1000 words"), "{big}");
        assert_eq!(node, AmError::NoSuchNode { node: 9, nodes: 2 });
    }
}
