//! Split-C's primitives timed one at a time (IPPS 1996 Section 5.2,
//! Figure 3): node 0 issues, node 1 owns the data, every other node only
//! joins the barriers.
//!
//! - `get`: one-word get and sync, back to back: each is a full round
//!   trip (request to the owner, the word back);
//! - `put`: one-word put and sync (the write, then its acknowledgement);
//! - `store` and `bulk-store`: a store ping-pong (node 0 stores, node 1
//!   waits for it with `store_sync` and stores back): the latency of one
//!   store is half the round trip, the time from issue until the receiver
//!   knows the data is there, since a store has no acknowledgement;
//! - `bulk-put`: puts of a large block and sync, for bandwidth.
//!
//! Phase `op` holds node 0's time over all repetitions (after the warm-up
//! ones) and count `ops` their number, so the latency is their quotient
//! (halved for stores).

use super::{Phases, SplitcProgram};
use finegrain_core::{AmError, NodeId, Proc};
use finegrain_splitc::{GlobalPtr, SplitNode};
use serde::{Deserialize, Serialize};

/// Which primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Primitive {
    Get,
    Put,
    Store,
    BulkStore,
    BulkPut,
}

impl Primitive {
    pub const ALL: [Primitive; 5] =
        [Primitive::Get, Primitive::Put, Primitive::Store, Primitive::BulkStore, Primitive::BulkPut];

    pub fn label(self) -> &'static str {
        match self {
            Primitive::Get => "get",
            Primitive::Put => "put",
            Primitive::Store => "store",
            Primitive::BulkStore => "bulk-store",
            Primitive::BulkPut => "bulk-put",
        }
    }

    /// Whether one repetition is a ping-pong of two operations (stores).
    pub fn ping_pong(self) -> bool {
        matches!(self, Primitive::Store | Primitive::BulkStore)
    }
}

/// One primitive's timing run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrimitivesConfig {
    pub primitive: Primitive,
    /// Words each operation moves (1 for the one-word primitives; the
    /// paper's bulk store is 32 bytes, 4 words).
    pub words: u64,
    /// Timed repetitions.
    pub reps: u64,
    /// Untimed repetitions first (caches and channels warm).
    pub warmup: u64,
}

/// The most words one timed operation may move (1 MiB).
pub const MAX_WORDS: u64 = 1 << 17;
/// The most repetitions of a run.
pub const MAX_REPS: u64 = 1_000_000;

impl PrimitivesConfig {
    /// The paper's Figure 3 operations: one word, or 32 bytes for the bulk
    /// store.
    pub fn figure3(primitive: Primitive, reps: u64) -> PrimitivesConfig {
        let words = if primitive == Primitive::BulkStore { 4 } else { 1 };
        PrimitivesConfig { primitive, words, reps, warmup: 10 }
    }

    /// Bulk bandwidth: puts of `words` words.
    pub fn bandwidth(words: u64, reps: u64) -> PrimitivesConfig {
        PrimitivesConfig { primitive: Primitive::BulkPut, words, reps, warmup: 2 }
    }

    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        if nodes < 2 {
            return Err(format!("primitives on {nodes} node(s): allowed 2 or more nodes (node 0 issues, node 1 owns)"));
        }
        if self.words == 0 || self.words > MAX_WORDS {
            return Err(format!("invalid words = {}: allowed 1..={MAX_WORDS}", self.words));
        }
        let one_word = matches!(self.primitive, Primitive::Get | Primitive::Put | Primitive::Store);
        if one_word && self.words != 1 {
            return Err(format!(
                "invalid words = {} for {}: it moves one word (use bulk-store or bulk-put for more)",
                self.words,
                self.primitive.label()
            ));
        }
        if self.reps == 0 || self.reps > MAX_REPS || self.warmup > MAX_REPS {
            return Err(format!("invalid reps = {} / warmup = {}: allowed 1..={MAX_REPS}", self.reps, self.warmup));
        }
        Ok(())
    }

    fn total(&self) -> u64 {
        self.reps + self.warmup
    }
}

/// The value node 1 holds, or node 0 writes, at word `i` of repetition `r`.
fn value(r: u64, i: u64) -> u64 {
    (r << 20) ^ (i + 1)
}

/// What a node saw: node 0 the sum of what it got (gets) or of the echoes
/// it received (stores); node 1 the sum of what it holds at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub sum: u64,
}

impl SplitcProgram for PrimitivesConfig {
    type Answer = Seen;

    fn name(&self) -> &'static str {
        "primitives"
    }

    fn input(&self, _nodes: u32) -> String {
        format!(
            "{} of {} word(s), {} timed repetitions after {} warm-up",
            self.primitive.label(),
            self.words,
            self.reps,
            self.warmup
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        2 * nodes as u64 + 2 * self.words + 64
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<Seen, AmError> {
        let data = s.alloc(self.words)?;
        let landing = s.alloc(self.words)?;
        if s.me().0 == 1 {
            for i in 0..self.words {
                s.local().set(data + i, value(0, i));
            }
        }
        s.barrier().await?;
        let area = Area { data, landing };
        let sum = match (s.me().0, self.primitive) {
            (0, Primitive::Get) => self.gets(s, area, phases).await?,
            (0, Primitive::Put | Primitive::BulkPut) => self.puts(s, area, phases).await?,
            (0, _) => self.store_pings(s, area, phases).await?,
            (1, p) if p.ping_pong() => self.store_pongs(s, area).await?,
            _ => 0,
        };
        s.barrier().await?;
        if s.me().0 == 1 && !self.primitive.ping_pong() {
            return Ok(Seen { sum: self.sum_at(s, landing) });
        }
        Ok(Seen { sum })
    }

    fn check(&self, _nodes: u32, answers: &[&Seen]) -> Result<(), String> {
        let (node, got) = match self.primitive {
            Primitive::Get | Primitive::Store | Primitive::BulkStore => (0, answers[0].sum),
            Primitive::Put | Primitive::BulkPut => (1, answers[1].sum),
        };
        let expected = self.expected();
        if got != expected {
            return Err(format!("{}: node {node} saw sum {got}, expected {expected}", self.primitive.label()));
        }
        Ok(())
    }
}

/// Where a node keeps the words it sends and the words it receives.
#[derive(Clone, Copy)]
struct Area {
    data: u64,
    landing: u64,
}

impl PrimitivesConfig {
    fn sum_at<P: Proc>(&self, s: &SplitNode<'_, P>, word: u64) -> u64 {
        (0..self.words).fold(0u64, |a, i| a.wrapping_add(s.local().get(word + i)))
    }

    /// The sum the checked node must have seen.
    fn expected(&self) -> u64 {
        let sum_of = |r: u64| (0..self.words).fold(0u64, |a, i| a.wrapping_add(value(r, i)));
        match self.primitive {
            Primitive::Get => (0..self.total()).fold(0u64, |a, _| a.wrapping_add(sum_of(0))),
            Primitive::Put | Primitive::BulkPut => sum_of(self.total() - 1),
            Primitive::Store | Primitive::BulkStore => (0..self.total()).fold(0u64, |a, r| a.wrapping_add(sum_of(r))),
        }
    }

    async fn gets<P: Proc>(&self, s: &SplitNode<'_, P>, a: Area, phases: &mut Phases) -> Result<u64, AmError> {
        let mut sum = 0u64;
        let mut t0 = s.proc().now();
        for r in 0..self.total() {
            if r == self.warmup {
                t0 = s.proc().now();
            }
            s.get(GlobalPtr::new(NodeId(1), a.data), a.landing, self.words).await?;
            s.sync().await?;
            sum = sum.wrapping_add(self.sum_at(s, a.landing));
        }
        self.record(s, phases, t0);
        Ok(sum)
    }

    async fn puts<P: Proc>(&self, s: &SplitNode<'_, P>, a: Area, phases: &mut Phases) -> Result<u64, AmError> {
        let mut t0 = s.proc().now();
        for r in 0..self.total() {
            if r == self.warmup {
                t0 = s.proc().now();
            }
            for i in 0..self.words {
                s.local().set(a.data + i, value(r, i));
            }
            s.put(GlobalPtr::new(NodeId(1), a.landing), a.data, self.words).await?;
            s.sync().await?;
        }
        self.record(s, phases, t0);
        Ok(0)
    }

    async fn store_pings<P: Proc>(&self, s: &SplitNode<'_, P>, a: Area, phases: &mut Phases) -> Result<u64, AmError> {
        let mut sum = 0u64;
        let mut t0 = s.proc().now();
        for r in 0..self.total() {
            if r == self.warmup {
                t0 = s.proc().now();
            }
            for i in 0..self.words {
                s.local().set(a.data + i, value(r, i));
            }
            s.store(GlobalPtr::new(NodeId(1), a.landing), a.data, self.words).await?;
            s.store_sync(self.words).await?;
            sum = sum.wrapping_add(self.sum_at(s, a.landing));
        }
        self.record(s, phases, t0);
        Ok(sum)
    }

    /// Node 1's side of the store ping-pong: each store back as soon as
    /// the one it answers has landed.
    async fn store_pongs<P: Proc>(&self, s: &SplitNode<'_, P>, a: Area) -> Result<u64, AmError> {
        for _ in 0..self.total() {
            s.store_sync(self.words).await?;
            let mut words = vec![0; self.words as usize];
            s.local().read(a.landing, &mut words);
            s.local().write(a.data, &words);
            s.store(GlobalPtr::new(NodeId(0), a.landing), a.data, self.words).await?;
        }
        Ok(0)
    }

    /// Node 0's timed repetitions into phase `op` and count `ops`.
    fn record<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases, t0: u64) {
        phases.add("op", s.proc().now() - t0);
        phases.count("ops", self.reps);
    }
}
