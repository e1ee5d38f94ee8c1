//! Network-interface models: how a message gets from a processor into the
//! network, across it, and out of the destination's NI into a handler.
//!
//! The engine owns the message (its slot, its `Arrive` event, the queue it
//! waits in, the handler that runs it); an [`NiModel`] owns everything the
//! NI decides: what moving the message costs the processors and the memory
//! bus, the NI's ports and the network between them, its registers and
//! queues. The engine calls the model at each step of a message's life:
//!
//! 1. [`NiModel::send`]: a processor hands a message to its NI from cycle
//!    `t`. The model charges the processor's side (words written into the
//!    NI, blocks through a block buffer, a DMA initiation, stores into a
//!    cachable queue) on the node's memory, then times injection, the
//!    network and ejection, and says when the processor is done and when
//!    the message is in the destination's NI.
//! 2. [`NiModel::arrive`]: the message has reached the destination's NI
//!    (its `Arrive` event). The model updates what the NI shows the
//!    processors (an arrival register; a depositing NI writes the message
//!    into its queue here, on the destination's memory).
//! 3. [`NiModel::receive`]: a protocol processor notices the message and
//!    reads it out, from cycle `t`: status or dispatch registers, then the
//!    message (uncached loads, block loads, misses on queue lines).
//! 4. [`NiModel::register_write`]: an uncached store to an NI register
//!    (masking or unmasking the NI's interrupt, telling a dispatch device
//!    a handler is done).
//! 5. [`NiModel::device_words`]: what a cacheless agent on the NI device
//!    (an embedded protocol processor) pays per word it moves over the
//!    memory bus.
//!
//! The models are a closed set dispatched by [`Ni`], an enum: the engine's
//! hot path makes no dynamic call, and with one model the match folds away.
//! The machine's `ni.kind` chooses the model.
//!
//! # The network-interface study's designs as models
//!
//! The study (Mukherjee and Hill, HPCA 1998) compares NIs that differ in
//! who moves the data, in what units, and where the queues live. Each is a
//! model behind the same calls; what each needs:
//!
//! - **NI2w, CM-5-like** ([`Cm5Ni`], the one implemented): `send` is a
//!   train of uncached word stores on the sender's bus, `receive` a status
//!   register read and a train of uncached word loads; `arrive` bumps the
//!   cachable arrival register, which a processor re-reads after arrivals.
//! - **Single-cycle NI2w** (register-mapped): `send` and `receive` charge a
//!   cycle per word and nothing on the bus.
//! - **NI64w+Udma** (Princeton UDMA): payloads up to 96 bytes as NI2w;
//!   larger ones pay an initiation in `send` (an uncached store and load),
//!   then the NI masters block reads of the payload from memory (line
//!   transfers that snoop the sender's cache, as `NodeMemory::access_device`
//!   does): [`Sent::done`] is when the DMA is done, since the messaging
//!   software waits for it. At the destination `arrive` DMA-writes the
//!   blocks into memory (invalidating cached copies) and `receive` reads
//!   them as cache misses after the register loads.
//! - **NI16w+Blkbuf** (Fujitsu AP3000): `send` and `receive` move 64-byte
//!   blocks through the processor's block buffer: per block a flush or load
//!   overhead (12 cycles) and one block-sized uncached transaction instead
//!   of a word train.
//! - **CNI0Qm** (MIT StarT-JR): queues homed in main memory, coherent.
//!   `send` writes the message into send-queue lines in the sender's cache
//!   (`NodeMemory::access` on queue lines the address map would gain), reads
//!   the receiver's head now and then (lazy pointer), and the NI pulls the
//!   blocks (a cache-to-cache transfer to the NI, a device read): the
//!   injection waits for them. `arrive` writes the blocks to their home in
//!   memory, invalidating the receiver's cached copies; `receive` polls the
//!   valid bit in its cache (a miss on the head line once invalidated) and
//!   reads the blocks from memory.
//! - **Memory Channel-like**: the AP3000-like `send` with the StarT-JR-like
//!   `arrive` and `receive`.
//! - **CNI512Q** (Wisconsin CNI, no cache): queues homed on the NI in
//!   DRAM-speed NI memory; `send` overlaps the NI's pull of one block with
//!   the processor's writing of the next (prefetch); `receive`'s misses are
//!   supplied by the NI at NI-memory latency.
//! - **CNI32Qm** (Wisconsin CNI with a cache): queues homed in main memory,
//!   cached in 32-entry NI caches. `arrive` deposits into the NI's receive
//!   cache while an entry is free and bypasses it to memory otherwise (the
//!   model keeps the cache's occupancy, and updates the head on a flush to
//!   avoid writing back dead messages); `receive`'s misses come from the
//!   NI cache (cache to cache) or from memory.
//!
//! Flow control (every NI in the study): return-to-sender with a number of
//! outgoing and incoming buffers per NI. The model keeps the buffers; what
//! the engine will need for it is the one thing these calls do not offer
//! yet: a send refused for want of an outgoing buffer (a `Sent` variant
//! that blocks the sender until one frees), an incoming message refused
//! for want of a buffer (the model schedules its return and the retry: an
//! NI event kind the engine hands back to the model), and a call when a
//! handler has read a message out (its buffer frees and the sender's is
//! acknowledged). They come with the first model that limits buffers.

mod cm5;

pub(crate) use cm5::Cm5Ni;

use crate::memory::NodeMemory;
use finegrain_core::config::NiKind;
use finegrain_core::{MachineConfig, Message, Topology};

/// Who moves a message's words between a processor and the NI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mover {
    /// A processor on the memory bus, with its cache: a compute processor
    /// or an SMP protocol processor (`local` is its index in its node).
    Bus { local: usize },
    /// A protocol processor embedded in the NI device: it reaches the
    /// device's queues directly, `word_cycles` per word, off the memory bus.
    Device { word_cycles: u64 },
}

/// A message handed to the NI: when the sending processor is done, when
/// the sender's link has injected its payload (the network's constant
/// latency runs from there), and when the message is in the destination's
/// NI (its `Arrive` event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sent {
    pub done: u64,
    pub injected: u64,
    pub arrive: u64,
}

/// What a cacheless agent on the NI device pays to move a word over the
/// memory bus: the bus occupancy of a word read or write, a posted write's
/// latency, and the word's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeviceWords {
    pub occupancy: u64,
    pub posted_write: u64,
    pub word_bytes: u64,
}

/// A network-interface design: the costs and timing of a message's
/// passage from a sending processor to a handler (see the module docs).
/// Nodes are numbered as the engine numbers them; `now` is the clock, and
/// nothing may be reserved on a calendar before it.
pub(crate) trait NiModel {
    /// Processor `by` of node `src` hands `msg` (bound for
    /// `msg.dst_node`) to its NI from cycle `t`, charging the node's memory
    /// `mem` for its side of the transfer; returns when the processor is
    /// done and when the message is in the destination's NI.
    fn send(&mut self, mem: &mut NodeMemory, now: u64, t: u64, src: usize, by: Mover, msg: &Message) -> Sent;

    /// `msg` has reached node `n`'s NI at `now`; `mem` is that node's
    /// memory, where a depositing NI puts it.
    fn arrive(&mut self, mem: &mut NodeMemory, now: u64, n: usize, msg: &Message);

    /// Processor `by` of node `n` notices `msg` and reads it out of the NI
    /// from cycle `t`; returns when it has the message (the dispatch that
    /// follows is the engine's).
    fn receive(&mut self, mem: &mut NodeMemory, now: u64, t: u64, n: usize, by: Mover, msg: &Message) -> u64;

    /// An uncached store to one of the NI's registers over the memory bus
    /// from cycle `t`; returns when the processor is done with it.
    fn register_write(&mut self, mem: &mut NodeMemory, now: u64, t: u64) -> u64;

    /// Word transfers over the memory bus by a cacheless agent on the NI
    /// device.
    fn device_words(&self) -> DeviceWords;
}

/// The machine's NI model, chosen by `ni.kind`: a closed set, so the
/// engine's calls are matches, not dynamic calls.
pub(crate) enum Ni {
    Cm5(Cm5Ni),
}

impl Ni {
    pub fn new(m: &MachineConfig, topology: &Topology) -> Ni {
        match m.ni.kind {
            NiKind::Cm5 => Ni::Cm5(Cm5Ni::new(m, topology)),
        }
    }
}

impl NiModel for Ni {
    #[inline(always)]
    fn send(&mut self, mem: &mut NodeMemory, now: u64, t: u64, src: usize, by: Mover, msg: &Message) -> Sent {
        match self {
            Ni::Cm5(ni) => ni.send(mem, now, t, src, by, msg),
        }
    }

    #[inline(always)]
    fn arrive(&mut self, mem: &mut NodeMemory, now: u64, n: usize, msg: &Message) {
        match self {
            Ni::Cm5(ni) => ni.arrive(mem, now, n, msg),
        }
    }

    #[inline(always)]
    fn receive(&mut self, mem: &mut NodeMemory, now: u64, t: u64, n: usize, by: Mover, msg: &Message) -> u64 {
        match self {
            Ni::Cm5(ni) => ni.receive(mem, now, t, n, by, msg),
        }
    }

    #[inline(always)]
    fn register_write(&mut self, mem: &mut NodeMemory, now: u64, t: u64) -> u64 {
        match self {
            Ni::Cm5(ni) => ni.register_write(mem, now, t),
        }
    }

    #[inline(always)]
    fn device_words(&self) -> DeviceWords {
        match self {
            Ni::Cm5(ni) => ni.device_words(),
        }
    }
}
