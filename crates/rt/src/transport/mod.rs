//! Transport: moving active messages from a sending thread to a node, and
//! reaching a node's threads when they must be woken or interrupted.
//!
//! Like UCX's `uct_iface_ops`, one set of operations that each transport
//! fills in. The layers above never see rings or wires:
//! - the runtime sends through its thread's [`Sender`] and, once a message
//!   has been sent, asks [`crate::notify`] whether the destination must be
//!   alerted, and the [`Transport`] to do it;
//! - [`crate::dispatch`] takes what arrived for a node from its [`Inbox`],
//!   lane by lane, decoding each message into a buffer it provides.
//!
//! Three implementations: [`InProc`], nodes as groups of threads in one
//! process, with one [`ring`] of cache-line slots per (sending thread,
//! node) pair, messages laid out by [`codec`], and an ordered [`spill`] for
//! messages that find a ring full; [`shm`], the same rings in a mapping
//! shared by node processes of one host; and `mpi` (the `mpi` feature),
//! each rank a node, messages as MPI messages.
//!
//! # What a new transport implements
//!
//! A [`Transport`] opens for a run ([`Transport::open`]) and returns the
//! endpoints this process hosts: one [`Sender`] per local thread (its path
//! to every node) and one [`Inbox`] per local node (everything sent to
//! it). It also places every node's [`Doorbell`] (the words senders read
//! to decide whether to alert it), and it carries out alerts: it puts an
//! idle protocol thread to sleep and wakes it, and it interrupts a
//! computing thread. The rules for *when* live in [`crate::notify`], and the
//! rules for *who handles what* live in [`crate::dispatch`]; neither
//! changes with the transport.
//!
//! What differs between the in-process rings and the other two
//! transports, and where it goes:
//!
//! | | in-process ([`InProc`]) | shared memory between processes | MPI across hosts |
//! |---|---|---|---|
//! | who owns the memory | the heap of the one process | a `memfd`/`shm_open` mapping every process of the host maps; each process opens only its own nodes' endpoints | each rank its own: send buffers, preposted receive buffers |
//! | addressing a node | node id = ring index | node id = ring index in the mapping; node -> process in the layout | node id -> rank (and tag) |
//! | [`Layout::local`] | every node | the nodes this process runs | the rank's node |
//! | [`Sender::try_send`] full when | the ring has no room | the ring has no room | no free send buffer or credit (`MPI_Isend` outstanding) |
//! | [`Inbox`] lanes | one ring per sending thread | the same, in the mapping | one per source rank, over preposted `MPI_Irecv`s |
//! | [`Inbox::progress`] | nothing | nothing | `MPI_Testsome` on the preposted receives; reposts them |
//! | [`Inbox::ready`] (any thread) | one load per ring | one load per ring | a flag `progress` keeps, so it is stale until someone progresses |
//! | [`Transport::doorbell`] | in the heap | in the mapping (plain atomics) | local nodes only: `None` for a remote node, whose senders cannot alert it (its own protocol threads poll, or a watchdog does) |
//! | sleep / wake a parked thread | `thread::park_timeout` / `Thread::unpark` | `FUTEX_WAIT` / `FUTEX_WAKE` on a shared word (not `_PRIVATE`) | a blocking `MPI_Wait` on the receives / nothing to do from afar |
//! | interrupt a thread | `pthread_kill` | `tgkill(pid, tid)` | a local progress thread raises it |
//!
//! What a poll costs differs most. On rings, looking at a lane is one load
//! of the line its sender writes (a cache miss only when something has
//! arrived), so any thread may look ([`Inbox::ready`]) as often as it
//! likes, and the holder of the receive right visits every lane on every
//! pass. Under MPI, looking is a library call, so only the holder
//! progresses, once per pass ([`Inbox::progress`]), and the others read
//! what it found.
//!
//! For shared memory, [`ring`]'s layout and its producer and consumer code
//! stay as they are; only the slots and the consumer's position move from
//! the heap into the mapping ([`ring::mapped`]). A transport between
//! processes also counts finished applications cluster-wide
//! ([`Transport::apps_finished`]) and reports trouble at other nodes
//! ([`Transport::peer_trouble`]); its launcher and the gathering of results
//! are in `crate::processes`.
//!
//! The transport is a type parameter of the runtime's thread and node
//! contexts, so every operation on the message path is a direct (mostly
//! inlined) call: no `dyn` call per message.

pub(crate) mod codec;
pub(crate) mod inproc;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;
pub(crate) mod ring;
pub(crate) mod shm;
pub(crate) mod spill;

pub(crate) use codec::{Outgoing, MAX_PAYLOAD};
pub(crate) use inproc::InProc;
pub(crate) use ring::Full;

use crate::notify::Doorbell;
use finegrain_core::Message;
use std::ops::Range;
use std::time::Duration;

/// What a transport opens for: the cluster's shape, and the nodes this
/// process hosts.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub(crate) nodes: u32,
    /// Threads of every node (compute and protocol): each is a sender.
    pub(crate) threads_per_node: u32,
    /// Of those, the compute threads (the ones that may be interrupted).
    pub(crate) compute_threads_per_node: u32,
    /// Slots of each ring (for ring transports; a power of two).
    pub(crate) ring_slots: usize,
    /// The nodes this process runs (their inboxes and threads' senders
    /// are returned by [`Transport::open`]).
    pub(crate) local: Range<u32>,
}

/// The endpoints a process hosts.
pub(crate) struct Endpoints<T: Transport> {
    /// One per thread of the local nodes, node-major.
    pub(crate) senders: Vec<T::Sender>,
    /// One per local node, in node order.
    pub(crate) inboxes: Vec<T::Inbox>,
}

/// Where a message went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// It is in the transport: the destination can take it.
    Now,
    /// It waits in the sender's ordered spill until [`Sender::flush`]
    /// hands it over.
    Spilled,
}

/// What went wrong at a node of another process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trouble {
    /// Its run failed (it says why through the transport).
    Failed { node: u32 },
    /// Its process ended before the run did.
    Died { node: u32, pid: u32 },
    /// A thread of this process found the ring from thread `sender`
    /// (numbered across the run) to node `node` corrupt: its consumer
    /// position `head` is impossible for a producer at `tail` (something
    /// wrote over memory shared with other processes).
    Corrupt { sender: u32, node: u32, head: u64, tail: u64 },
}

/// Which of a node's threads is registering (see
/// [`Transport::register_thread`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ThreadKind {
    /// A compute thread: it may be interrupted.
    Compute,
    /// A dedicated protocol thread: it may park.
    Protocol,
}

/// One transport: its endpoints, where the nodes' doorbells live, and how
/// their threads are reached.
pub(crate) trait Transport: Sized + Send + Sync + 'static {
    /// A thread's send side (its path to every node). Used by its thread
    /// alone.
    type Sender: Sender;
    /// A node's receive side. Shared by the node's threads; only the holder
    /// of the node's receive right (see [`Inbox`]) takes messages out.
    type Inbox: Inbox;
    /// Where the transport's memory or connection comes from (nothing
    /// in-process; the shared mapping between processes).
    type Place;

    /// Opens the transport for a run: the transport (shared by the
    /// process's threads) and the endpoints of [`Layout::local`].
    fn open(layout: &Layout, place: &Self::Place) -> Result<(Self, Endpoints<Self>), String>;

    /// An application of a local node has returned (counted cluster-wide:
    /// serving threads stop once every application has).
    fn app_finished(&self);

    /// Applications of the whole cluster that have returned.
    fn apps_finished(&self) -> u32;

    /// A node of another process that failed or died, if one has (polled
    /// by the run's watcher every few milliseconds).
    fn peer_trouble(&self) -> Option<Trouble> {
        None
    }

    /// Tells the other processes that this process's node `node` failed;
    /// `text` (empty at first, when only the fact is known) says why.
    fn announce_failure(&self, _node: u32, _text: &str) {}

    /// The run failed here (`text` says why, as far as the watcher knows):
    /// a transport whose process must not simply wait for its threads (a
    /// peer they wait on inside a library call may never answer) prepares
    /// to end the process if the run does not end soon.
    fn run_failed(&self, _text: &str) {}

    /// Node `node`'s doorbell, if this process can reach it (always for a
    /// local node).
    fn doorbell(&self, node: u32) -> Option<&Doorbell>;

    /// Records the calling thread as thread `thread` of local node `node`,
    /// so that [`Transport::wake_parked`] and [`Transport::interrupt`] can
    /// reach it. Called by the thread itself before it serves or computes.
    fn register_thread(&self, node: u32, thread: u32, kind: ThreadKind);

    /// Puts the calling protocol thread of local node `node` to sleep until
    /// [`Transport::wake_parked`] for the node, or `timeout` (or a spurious
    /// wake-up).
    fn sleep(&self, node: u32, timeout: Duration);

    /// Wakes node `node`'s sleeping protocol threads.
    fn wake_parked(&self, node: u32);

    /// Interrupts compute thread `thread` of node `node`.
    fn interrupt(&self, node: u32, thread: u32);
}

/// A thread's send side: messages to any node, in order per destination,
/// never dropped.
pub(crate) trait Sender: Send {
    /// Sends `m` to node `dst` if it can go now and in order (nothing to
    /// `dst` waits in the spill); otherwise sends nothing.
    fn try_send(&mut self, dst: u32, m: &Outgoing) -> Result<(), Full>;

    /// Sends `m` to node `dst`, or spills it (in order) if it cannot go
    /// now; never blocks, so a handler can always reply.
    fn send(&mut self, dst: u32, m: &Outgoing) -> Sent;

    /// Messages waiting in the spill.
    fn spilled(&self) -> usize;

    /// Hands over spilled messages, in order, as far as the transport takes
    /// them; `sent(dst)` is called for each. True when none is left.
    fn flush(&mut self, sent: impl FnMut(u32)) -> bool;
}

/// A node's receive side: lanes (each ordered, e.g. one per sender),
/// visited round-robin by the node's dispatch.
///
/// # The receive right
/// The methods marked unsafe take messages out (or look at the lanes'
/// consumer state), and only one thread at a time may call them: the
/// holder of the node's receive right, which is the serial role or the
/// keyed queue's ingest lock (see [`crate::dispatch`]). Its acquire and
/// release order one holder's calls before the next's.
pub(crate) trait Inbox: Send + Sync {
    /// Whether messages reach the lanes only through [`Inbox::progress`]
    /// (so [`Inbox::ready`] is stale until someone progresses, and a
    /// serving thread must progress rather than wait for it).
    const PROGRESSES: bool = false;

    /// Lanes to visit.
    fn lanes(&self) -> usize;

    /// Whether a message may be waiting (any thread, without the receive
    /// right; a hint that a transport needing [`Inbox::progress`] keeps up
    /// to date only as often as someone progresses).
    fn ready(&self) -> bool;

    /// Moves what arrived into the lanes: the transport's progress step,
    /// made once per pass over the lanes. Nothing for rings, which the
    /// senders fill directly.
    ///
    /// # Safety
    /// The caller holds the receive right.
    #[inline]
    unsafe fn progress(&self) {}

    /// Whether any lane has a message, as the holder of the receive right
    /// sees it (cheaper than [`Inbox::ready`] where the holder keeps state).
    ///
    /// # Safety
    /// The caller holds the receive right.
    unsafe fn pending(&self) -> bool;

    /// Takes lane `lane`'s next message into `into` (reusing its payload
    /// buffer); false if the lane is empty.
    ///
    /// # Safety
    /// The caller holds the receive right.
    unsafe fn try_recv(&self, lane: usize, into: &mut Message) -> bool;
}
