//! A program every platform must run right: each Split-C operation, its
//! result checked. The library's own tests, the native co-processor
//! policy's and the simulator's libraries all run it, so every platform
//! is held to the same checks.

use crate::{AtomicId, GlobalPtr, Layout, SplitC, CHUNK_WORDS};
use finegrain_core::{AmError, HandlerTable, NodeId, Proc};

/// Longer than one message, so bulk operations are split.
pub const BULK: u64 = 3 * CHUNK_WORDS + 7;

/// Atomic additions each node makes at node 0.
pub const ATOMIC_CALLS: u64 = 10;

/// The program's Split-C: its segment and its one atomic function (a
/// fetch&add at a word).
#[derive(Clone)]
pub struct Conformance {
    pub splitc: SplitC,
    pub add: AtomicId,
}

fn value(node: u32, i: u64) -> u64 {
    (node as u64) << 32 | i
}

impl Conformance {
    /// The program for `nodes` nodes, its handlers registered in `table`.
    pub fn register(nodes: u32, table: &mut HandlerTable) -> Result<Conformance, AmError> {
        Conformance::register_with(nodes, table, || {})
    }

    /// [`Conformance::register`], with `on_atomic` called in every run of
    /// the atomic function (where it runs, say, for a platform's test).
    pub fn register_with(
        nodes: u32,
        table: &mut HandlerTable,
        on_atomic: impl Fn() + Send + Sync + 'static,
    ) -> Result<Conformance, AmError> {
        let mut b = SplitC::builder(nodes, 4 * BULK + 64 + 4 * nodes as u64);
        let add = b.atomic(5, move |local, [word, by, _]| {
            on_atomic();
            let old = local.get(word);
            local.set(word, old + by);
            old
        });
        Ok(Conformance { splitc: b.register(table)?, add })
    }

    /// One node's run: what went wrong, one line each (empty: all right).
    pub async fn run<P: Proc>(&self, p: &P) -> Result<Vec<String>, AmError> {
        let s = self.splitc.on(p)?;
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
        let mut check = |ok: bool, what: String| {
            if !ok {
                wrong.push(format!("node {me}: {what}"));
            }
        };
        // A store waited for with store_sync (the run's first stores, so
        // the count is theirs): 4 words from the previous node.
        s.store(GlobalPtr::new(NodeId(next), landing), mine, 4).await?;
        s.store_sync(4).await?;
        check(
            (0..4).all(|i| s.local().get(landing + i) == value(prev, i)),
            format!("store_sync of 4 words from {prev}"),
        );
        s.barrier().await?;
        s.get(GlobalPtr::new(NodeId(next), mine), landing, BULK).await?;
        s.sync().await?;
        check((0..BULK).all(|i| s.local().get(landing + i) == value(next, i)), format!("bulk get from {next}"));
        s.get(GlobalPtr::new(NodeId(next), mine + 3), landing, 1).await?;
        s.sync().await?;
        check(s.local().get(landing) == value(next, 3), format!("one-word get from {next}"));
        s.barrier().await?;
        s.put(GlobalPtr::new(NodeId(prev), landing), mine, BULK).await?;
        s.sync().await?;
        s.barrier().await?;
        check((0..BULK).all(|i| s.local().get(landing + i) == value(next, i)), format!("bulk put from {next}"));
        s.put_value(GlobalPtr::new(NodeId(next), puts + me as u64), value(me, 42)).await?;
        s.sync().await?;
        s.barrier().await?;
        check(s.local().get(puts + prev as u64) == value(prev, 42), format!("one-word put from {prev}"));
        for d in 0..n {
            s.store_value(GlobalPtr::new(NodeId(d), stores + me as u64), value(me, 99)).await?;
        }
        s.all_store_sync().await?;
        check((0..n).all(|src| s.local().get(stores + src as u64) == value(src, 99)), "one-word stores".into());
        s.store(GlobalPtr::new(NodeId(prev), landing), mine, BULK).await?;
        s.all_store_sync().await?;
        check((0..BULK).all(|i| s.local().get(landing + i) == value(next, i)), format!("bulk store from {next}"));
        let got = s.read(GlobalPtr::new(NodeId(next), mine + 5)).await?;
        check(got == value(next, 5), format!("read {got:#x}"));
        s.write(GlobalPtr::new(NodeId(next), stores + me as u64), 7).await?;
        s.barrier().await?;
        check(s.local().get(stores + prev as u64) == 7, format!("write from {prev}"));
        let mut olds = Vec::new();
        for _ in 0..ATOMIC_CALLS {
            olds.push(s.atomic(NodeId(0), self.add, [counter, 1, 0]).await?);
        }
        s.barrier().await?;
        let total = s.local().get(counter);
        check(me != 0 || total == ATOMIC_CALLS * n as u64, format!("atomic adds: counter {total}"));
        check(olds.windows(2).all(|w| w[1] > w[0]), format!("atomic results not increasing {olds:?}"));
        let a = s.alloc_spread(21, 1, Layout::Cyclic)?;
        for l in 0..a.local_len(s.me()) {
            s.local().set(a.local_word(l), a.global_index(s.me(), l) * 3);
        }
        s.barrier().await?;
        let mut sum = 0;
        for i in 0..a.len {
            sum += s.read(a.ptr(i)).await?;
        }
        check(sum == 3 * 21 * 20 / 2, format!("spread array sum {sum}"));
        let total = s.all_reduce_sum(me as u64 + 1).await?;
        check(total == (n as u64) * (n as u64 + 1) / 2, format!("all_reduce_sum {total}"));
        let max = s.all_reduce_max(me as u64 * 10).await?;
        check(max == (n as u64 - 1) * 10, format!("all_reduce_max {max}"));
        Ok(wrong)
    }
}
