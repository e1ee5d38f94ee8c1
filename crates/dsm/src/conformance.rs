//! A program that exercises every DSM operation and checks what it reads,
//! for every platform's tests: blocks that move between read-only sharing
//! and exclusive ownership many times, writes by the home's own threads,
//! lock-protected read-modify-writes, atomic adds, range accesses that
//! cross blocks, and barriers between rounds.

use crate::{Dsm, DsmConfig, Home, LockId, Shared};
use finegrain_core::{AmError, HandlerTable, Proc};

/// Rounds of the producer/consumer part and increments per thread.
const ROUNDS: u64 = 3;
const INCREMENTS: u64 = 4;

#[derive(Clone)]
pub struct Conformance {
    dsm: Dsm,
    slots: Shared,
    counter: Shared,
    adds: Shared,
    board: Shared,
    lock: LockId,
}

impl Conformance {
    /// Registers the DSM and the program's arrays in `table`.
    pub fn register(
        nodes: u32,
        threads: u32,
        cfg: DsmConfig,
        table: &mut HandlerTable,
    ) -> Result<Conformance, AmError> {
        let ranks = (nodes * threads) as u64;
        let mut b = Dsm::builder(nodes, threads, cfg)?;
        let slots = b.alloc(ranks * 16, Home::Blocked);
        let counter = b.alloc(1, Home::Node(nodes - 1));
        let adds = b.alloc(8, Home::Node(0));
        // Initial contents 1000 + i, so an unplaced block (zeros) shows.
        let board = b.alloc_with((0..ranks * 24).map(|i| 1000 + i).collect(), Home::RoundRobin);
        let lock = b.locks(1)[0];
        let dsm = b.register(table)?;
        Ok(Conformance { dsm, slots, counter, adds, board, lock })
    }

    /// The DSM's counts of protocol work (see [`crate::ProtocolCounts`]).
    pub fn protocol_counts(&self) -> crate::ProtocolCounts {
        self.dsm.protocol_counts()
    }

    /// One thread's program; returns what it found wrong.
    pub async fn run<P: Proc>(&self, p: &P) -> Result<Vec<String>, AmError> {
        let d = self.dsm.on(p)?;
        let (me, ranks) = (d.rank() as u64, d.ranks() as u64);
        let mut wrong = Vec::new();
        d.barrier().await?;
        // Every thread writes its slots; all read all of them.
        for k in 0..16 {
            d.write(self.slots, me * 16 + k, me * 100 + k).await?;
        }
        d.barrier().await?;
        for r in 0..ranks {
            for k in [0, 15] {
                let v = d.read(self.slots, r * 16 + k).await?;
                if v != r * 100 + k {
                    wrong.push(format!("rank {me} read slot {r}.{k} = {v}, want {}", r * 100 + k));
                }
            }
        }
        // A migratory counter under a lock, and atomic adds.
        for _ in 0..INCREMENTS {
            d.lock(self.lock).await?;
            let v = d.read(self.counter, 0).await?;
            d.write(self.counter, 0, v + 1).await?;
            d.unlock(self.lock).await?;
            d.fetch_add(self.adds, me % 8, 1).await?;
        }
        // Producer/consumer rounds over ranges that cross blocks: in round
        // r, rank i rewrites its 24-word stripe of the board, then reads
        // its neighbour's.
        for round in 1..=ROUNDS {
            d.barrier().await?;
            let mine: Vec<u64> = (0..24).map(|k| round * 1_000_000 + me * 24 + k).collect();
            d.write_from(self.board, me * 24, &mine).await?;
            d.barrier().await?;
            let next = (me + 1) % ranks;
            let mut got = vec![0; 24];
            d.read_into(self.board, next * 24, &mut got).await?;
            let want: Vec<u64> = (0..24).map(|k| round * 1_000_000 + next * 24 + k).collect();
            if got != want {
                wrong.push(format!("rank {me} round {round} read stripe {next} = {got:?}"));
            }
        }
        d.barrier().await?;
        let count = d.read(self.counter, 0).await?;
        if count != ranks * INCREMENTS {
            wrong.push(format!("rank {me}: counter {count}, want {}", ranks * INCREMENTS));
        }
        let mut adds = 0;
        for i in 0..8 {
            adds += d.read(self.adds, i).await?;
        }
        if adds != ranks * INCREMENTS {
            wrong.push(format!("rank {me}: atomic adds {adds}, want {}", ranks * INCREMENTS));
        }
        d.barrier().await?;
        Ok(wrong)
    }
}
