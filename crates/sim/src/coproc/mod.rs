//! The communication co-processor of a node (the Meiko CS-2's Elan, IPPS
//! 1996 Section 4) and the three libraries of the paper run on it.
//!
//! `machine` holds the mechanisms, each timed on the resources it uses: a
//! thread engine with its own instruction rate, an 8-word instruction
//! cache and no data cache (every data word is a transaction on the node's
//! memory bus, shared with the main processor); a DMA engine moving
//! arbitrary sizes between two nodes' memories, whose completion can wake
//! a thread; remote atomic adds done by the destination's input engine;
//! events that wake a waiting thread, which holds nothing while it waits.
//! `library` composes them into the paper's microbenchmarks: the bare DMA
//! flag ping-pong the `ipps96` preset is calibrated to, one-way Active
//! Messages under each library, and the optimized library's put, get and
//! store.
//!
//! The engine runs `Proc` programs on these mechanisms under all three
//! libraries (`crate::engine`'s `coproc` module, lending it each node's
//! memory bus through [`Buses`]): under the optimized one, the handlers a
//! library marks with their `LibraryOp` (Split-C's put, get, store and
//! control messages) go by the same sequences as the scripts here.

mod library;
mod machine;

pub(crate) use library::main_instructions;
pub use library::{am_one_way, dma_flag_one_way, optimized_latency, SplitOp};
pub(crate) use machine::{Buses, Coproc};
