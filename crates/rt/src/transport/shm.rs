//! Shared memory between processes: each node is an OS process of one
//! host, and everything the in-process transport keeps on the heap that
//! other nodes touch lives in one `memfd` mapping every node process maps.
//!
//! The mapping, laid out by [`MapLayout`] (every part on its own lines):
//! - a header: the layout it was made for (so a process started with
//!   another configuration is refused), the cluster-wide count of finished
//!   applications, and the first failure of any node (its node and text);
//! - one [`NodeArea`] per node: its process id, its state (running,
//!   reported, failed), the futex word its parked protocol threads sleep
//!   on, and its compute threads' thread ids for interrupts;
//! - one [`Doorbell`] per node, exactly as in-process (plain atomics);
//! - one ring per (sending thread, node) pair, the same ring as
//!   in-process (cache-line slots, sense-reversing valid bit, lazy head)
//!   with its slots and head in the mapping;
//! - one report area per node, where each node leaves its results for
//!   node 0 to gather at the end of the run.
//!
//! Node 0's process sizes and initialises the mapping; the others wait for
//! its magic word, then check the layout against their own. Memory made by
//! `memfd_create` has no name in any file system, so nothing is left
//! behind however the processes end: the kernel frees it with the last
//! mapping and descriptor.

use super::inproc::{RingInbox, RingSender};
use super::ring::{self, FaultAt, MappedRing};
use super::{Endpoints, Layout, ThreadKind, Transport, Trouble};
use crate::notify::Doorbell;
use crossbeam_utils::CachePadded;
use finegrain_core::NodeId;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most compute threads a node of a shared-memory run may have (the
/// thread-id table in its [`NodeArea`]).
pub(crate) const MAX_COMPUTE: usize = 64;
/// Bytes of text a failing node leaves for the others.
const FAIL_TEXT: usize = 480;
/// Bytes each node may leave for node 0 at the end of a run.
pub(crate) const REPORT_BYTES: usize = 4 << 20;
const MAGIC: u64 = 0x6669_6e65_6772_6e31; // "finegrn1"

/// A node process's state, as the others see it.
pub(crate) const STATE_RUNNING: u32 = 1;
pub(crate) const STATE_REPORTED: u32 = 2;
pub(crate) const STATE_FAILED: u32 = 3;

#[repr(C)]
struct Header {
    magic: AtomicU64,
    /// nodes, threads per node, compute threads per node, ring slots.
    shape: [AtomicU64; 4],
    finished: AtomicU32,
    /// 0, or 1 + the node that failed first.
    failed: AtomicU32,
    /// Bytes of `fail_text` written (0: none yet).
    fail_len: AtomicU32,
    fail_text: [AtomicU64; FAIL_TEXT / 8],
    /// A ring whose consumer position a producer found impossible: 1 +
    /// the ring's number (0: none), the position, the producer's.
    ring_fault: [AtomicU64; 3],
}

/// What the other processes see of one node process.
#[repr(C, align(128))]
pub(crate) struct NodeArea {
    pub(crate) pid: AtomicI32,
    pub(crate) state: AtomicU32,
    /// Bumped by every wake-up of the node's parked protocol threads;
    /// they sleep on it with `FUTEX_WAIT` (a shared futex: no `_PRIVATE`).
    wake: CachePadded<AtomicU32>,
    /// Linux thread ids of the compute threads (0 until registered).
    tids: [AtomicI32; MAX_COMPUTE],
    /// Bytes of the node's report.
    pub(crate) report_len: AtomicU64,
}

/// Where each part of the mapping starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MapLayout {
    nodes: usize,
    threads_per_node: usize,
    compute: usize,
    ring_slots: usize,
    areas_at: usize,
    bells_at: usize,
    rings_at: usize,
    ring_bytes: usize,
    reports_at: usize,
    pub(crate) len: usize,
}

fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

impl MapLayout {
    pub(crate) fn of(layout: &Layout) -> MapLayout {
        let nodes = layout.nodes as usize;
        let threads = layout.threads_per_node as usize;
        let areas_at = round_up(std::mem::size_of::<Header>(), 4096);
        let bells_at = round_up(areas_at + nodes * std::mem::size_of::<NodeArea>(), 128);
        let rings_at = round_up(bells_at + nodes * std::mem::size_of::<CachePadded<Doorbell>>(), 4096);
        let ring_bytes = round_up(ring::mapped_bytes(layout.ring_slots), 128);
        let reports_at = round_up(rings_at + nodes * threads * nodes * ring_bytes, 4096);
        MapLayout {
            nodes,
            threads_per_node: threads,
            compute: layout.compute_threads_per_node as usize,
            ring_slots: layout.ring_slots,
            areas_at,
            bells_at,
            rings_at,
            ring_bytes,
            reports_at,
            len: reports_at + nodes * REPORT_BYTES,
        }
    }

    fn shape(&self) -> [u64; 4] {
        [self.nodes as u64, self.threads_per_node as u64, self.compute as u64, self.ring_slots as u64]
    }
}

/// One process's mapping of the run's shared memory.
pub(crate) struct Mapping {
    base: *mut u8,
    pub(crate) layout: MapLayout,
}

// SAFETY: the mapping is shared memory that every part of the runtime
// reaches only through atomics (or, for reports, through one writer
// before a release store its reader acquires); the pointer stays valid
// until `drop` unmaps it, after every user is gone (they hold an `Arc`).
unsafe impl Send for Mapping {}
// SAFETY: as for Send.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are what mmap returned; nothing refers
        // into the mapping once its last `Arc` is dropped.
        unsafe { libc::munmap(self.base.cast(), self.layout.len) };
    }
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Creates the anonymous shared-memory file a run's nodes will map
/// (inherited by the node processes: no close-on-exec).
pub(crate) fn create_memfd() -> Result<i32, String> {
    // SAFETY: the name is a NUL-terminated string; memfd_create has no
    // other preconditions.
    let fd = unsafe { libc::memfd_create(c"finegrain-shm".as_ptr(), 0) };
    if fd < 0 {
        return Err(os_error("memfd_create"));
    }
    Ok(fd)
}

fn file_len(fd: i32) -> Result<usize, String> {
    // SAFETY: a zeroed stat is valid plain data for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(os_error("fstat of the shared memory"));
    }
    Ok(st.st_size as usize)
}

fn map(fd: i32, len: usize) -> Result<*mut u8, String> {
    // SAFETY: a fresh shared mapping of `len` bytes of `fd`; the kernel
    // picks the address.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        return Err(os_error("mmap of the shared memory"));
    }
    Ok(p.cast())
}

impl Mapping {
    /// Node 0: sizes the file for `layout`, maps it and initialises the
    /// header and doorbells; the magic word, stored last, lets the others
    /// map it.
    pub(crate) fn create(fd: i32, layout: MapLayout) -> Result<Mapping, String> {
        // SAFETY: ftruncate on a descriptor we were given; the new bytes
        // read as zero.
        if unsafe { libc::ftruncate(fd, layout.len as libc::off_t) } != 0 {
            return Err(os_error(&format!("sizing the shared memory to {} bytes", layout.len)));
        }
        let m = Mapping { base: map(fd, layout.len)?, layout };
        for n in 0..layout.nodes {
            let bell =
                m.at::<CachePadded<Doorbell>>(layout.bells_at + n * std::mem::size_of::<CachePadded<Doorbell>>());
            // SAFETY: the doorbell's place is inside the mapping, aligned
            // (128-byte aligned offsets of a page-aligned base) and not yet
            // seen by any other process (the magic is not set).
            unsafe { std::ptr::write(bell.cast_mut(), CachePadded::new(Doorbell::new(layout.compute as u32))) };
        }
        for (word, v) in m.header().shape.iter().zip(layout.shape()) {
            word.store(v, Ordering::Relaxed);
        }
        m.header().magic.store(MAGIC, Ordering::Release);
        Ok(m)
    }

    /// Nodes 1..: waits (up to `wait`) for node 0 to set the mapping up,
    /// maps it and checks it was made for the same layout.
    pub(crate) fn attach(fd: i32, layout: MapLayout, wait: Duration) -> Result<Mapping, String> {
        let start = Instant::now();
        loop {
            // One reading of the length: node 0 may size the file between
            // two, and a short first reading with a full second one is not
            // another configuration.
            let len = file_len(fd)?;
            if len >= layout.len {
                let m = Mapping { base: map(fd, layout.len)?, layout };
                if m.header().magic.load(Ordering::Acquire) == MAGIC {
                    return m.check_shape();
                }
            } else if len > 0 {
                return Err(format!(
                    "node 0 made the shared memory for another configuration ({len} bytes where this one needs {}): \
                     start every node with the same options",
                    layout.len
                ));
            }
            if start.elapsed() > wait {
                return Err(format!("node 0 did not set up the shared memory within {} s", wait.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn check_shape(self) -> Result<Mapping, String> {
        let theirs: Vec<u64> = self.header().shape.iter().map(|w| w.load(Ordering::Relaxed)).collect();
        let ours = self.layout.shape();
        if theirs != ours {
            let names = ["nodes", "threads per node", "compute threads per node", "ring slots"];
            let diff: Vec<String> = names
                .iter()
                .zip(theirs.iter().zip(ours))
                .filter(|(_, (a, b))| *a != b)
                .map(|(n, (a, b))| format!("{n} {b} here, {a} at node 0"))
                .collect();
            return Err(format!(
                "this node's configuration differs from node 0's ({}): start every node with the same options",
                diff.join(", ")
            ));
        }
        Ok(self)
    }

    fn at<T>(&self, offset: usize) -> *const T {
        debug_assert!(offset + std::mem::size_of::<T>() <= self.layout.len);
        // SAFETY: the offset is inside the mapping (checked above in debug
        // builds; every caller computes it from the layout).
        unsafe { self.base.add(offset) as *const T }
    }

    fn header(&self) -> &Header {
        // SAFETY: the header is at offset 0, page-aligned; all its fields
        // are atomics, for which zeroed memory is a valid value.
        unsafe { &*self.at::<Header>(0) }
    }

    pub(crate) fn area(&self, node: u32) -> &NodeArea {
        // SAFETY: node areas lie within the mapping at aligned offsets and
        // are made of atomics (zero is a valid value).
        unsafe { &*self.at::<NodeArea>(self.layout.areas_at + node as usize * std::mem::size_of::<NodeArea>()) }
    }

    fn bell(&self, node: u32) -> &Doorbell {
        let at = self.layout.bells_at + node as usize * std::mem::size_of::<CachePadded<Doorbell>>();
        // SAFETY: node 0 wrote a doorbell here before publishing the magic
        // word, which every process acquired before using the mapping.
        unsafe { &*self.at::<CachePadded<Doorbell>>(at) }
    }

    pub(crate) fn ring_at(&self, sender: usize, dst: usize) -> MappedRing {
        let at = self.layout.rings_at + (sender * self.layout.nodes + dst) * self.layout.ring_bytes;
        let slots_bytes = self.layout.ring_slots * 64;
        MappedRing {
            slots_at: self.at::<u8>(at),
            slots: self.layout.ring_slots,
            head_at: self.at::<u8>(at + slots_bytes),
            fault: FaultAt { words: &self.header().ring_fault, ring: (sender * self.layout.nodes + dst) as u64 },
        }
    }

    /// The ring a producer found corrupt, if one has: its sending thread
    /// (numbered across the run), its node, the consumer position read
    /// and the producer's own.
    pub(crate) fn ring_fault(&self) -> Option<(u32, u32, u64, u64)> {
        let w = &self.header().ring_fault;
        let ring = w[0].load(Ordering::Acquire).checked_sub(1)?;
        let nodes = self.layout.nodes as u64;
        Some(((ring / nodes) as u32, (ring % nodes) as u32, w[1].load(Ordering::Relaxed), w[2].load(Ordering::Relaxed)))
    }

    /// The cluster-wide count of applications that have returned.
    pub(crate) fn finished(&self) -> &AtomicU32 {
        &self.header().finished
    }

    /// Records that `node` failed (the first failure wins); `text` (if not
    /// empty) is what it says, written once.
    pub(crate) fn announce_failure(&self, node: u32, text: &str) {
        let h = self.header();
        let first = h.failed.compare_exchange(0, node + 1, Ordering::AcqRel, Ordering::Acquire);
        let ours = first.is_ok() || first == Err(node + 1);
        if !ours || text.is_empty() || h.fail_len.load(Ordering::Acquire) != 0 {
            return;
        }
        let bytes = &text.as_bytes()[..text.len().min(FAIL_TEXT)];
        for (i, chunk) in bytes.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h.fail_text[i].store(u64::from_le_bytes(w), Ordering::Relaxed);
        }
        h.fail_len.store(bytes.len() as u32, Ordering::Release);
    }

    /// The first failed node, and its text once written.
    pub(crate) fn failure(&self) -> Option<(u32, Option<String>)> {
        let h = self.header();
        let node = h.failed.load(Ordering::Acquire).checked_sub(1)?;
        let len = h.fail_len.load(Ordering::Acquire) as usize;
        if len == 0 {
            return Some((node, None));
        }
        let bytes: Vec<u8> =
            h.fail_text.iter().flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes()).take(len).collect();
        Some((node, Some(String::from_utf8_lossy(&bytes).into_owned())))
    }

    /// Writes this node's report (for node 0 to read once the state says
    /// reported).
    pub(crate) fn write_report(&self, node: u32, bytes: &[u8]) -> Result<(), String> {
        if bytes.len() > REPORT_BYTES {
            return Err(format!(
                "node {node}'s results take {} bytes, more than the {REPORT_BYTES} a shared-memory run passes back",
                bytes.len()
            ));
        }
        let at = self.layout.reports_at + node as usize * REPORT_BYTES;
        // SAFETY: the node's report area lies inside the mapping and only
        // this node writes it, before the release store of its state that
        // node 0 acquires before reading.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.add(at), bytes.len()) };
        self.area(node).report_len.store(bytes.len() as u64, Ordering::Relaxed);
        self.area(node).state.store(STATE_REPORTED, Ordering::Release);
        Ok(())
    }

    /// Node `node`'s report; the caller has seen its state reported.
    pub(crate) fn read_report(&self, node: u32) -> Vec<u8> {
        let len = (self.area(node).report_len.load(Ordering::Relaxed) as usize).min(REPORT_BYTES);
        let at = self.layout.reports_at + node as usize * REPORT_BYTES;
        let mut out = vec![0u8; len];
        // SAFETY: the area lies inside the mapping; its writer finished
        // before publishing STATE_REPORTED, which the caller acquired.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(at), out.as_mut_ptr(), len) };
        out
    }
}

/// A peer node process, watched through a pidfd (readable once it ends,
/// even before its parent reaps it).
pub(crate) struct Peer {
    node: u32,
    pid: u32,
    fd: OwnedFd,
}

impl Peer {
    pub(crate) fn open(node: u32, pid: u32) -> Result<Peer, String> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor (or -1); nothing else is touched.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as i32;
        if fd < 0 {
            return Err(format!("watching node {node} (process {pid}): {}", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a descriptor we own from here on.
        Ok(Peer { node, pid, fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    fn ended(&self) -> bool {
        let mut p = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, no waiting.
        unsafe { libc::poll(&mut p, 1, 0) > 0 }
    }
}

/// This process's node of a shared-memory run: the mapping and the other
/// node processes.
pub(crate) struct ShmNode {
    pub(crate) map: Arc<Mapping>,
    pub(crate) node: u32,
    pub(crate) peers: Vec<Peer>,
}

impl ShmNode {
    /// What went wrong elsewhere, if anything: a node that announced a
    /// failure, or one whose process ended without reporting.
    /// A death comes first: the nodes that stopped because of it have
    /// failed too, but it is the cause.
    pub(crate) fn trouble(&self) -> Option<Trouble> {
        if let Some((sender, node, head, tail)) = self.map.ring_fault() {
            // The process of the thread that found it reports it; the
            // others learn of its failure as of any other.
            if sender / self.map.layout.threads_per_node as u32 == self.node {
                return Some(Trouble::Corrupt { sender, node, head, tail });
            }
        }
        let state = |p: &Peer| self.map.area(p.node).state.load(Ordering::Acquire);
        if let Some(p) = self.peers.iter().find(|p| state(p) == STATE_RUNNING && p.ended()) {
            return Some(Trouble::Died { node: p.node, pid: p.pid });
        }
        if let Some((node, _)) = self.map.failure() {
            if node != self.node {
                return Some(Trouble::Failed { node });
            }
        }
        self.peers.iter().find(|p| state(p) == STATE_FAILED).map(|p| Trouble::Failed { node: p.node })
    }
}

/// The shared-memory transport as one node process sees it.
pub(crate) struct Shm {
    map: Arc<Mapping>,
    place: Arc<ShmNode>,
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32, timeout: Option<&libc::timespec>) {
    let ts = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned 32-bit atomic (in shared memory,
    // so the shared, not `_PRIVATE`, operations); the kernel only reads
    // it and the timeout.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), op, val, ts, std::ptr::null::<u32>(), 0) };
}

impl Transport for Shm {
    type Sender = RingSender;
    type Inbox = RingInbox;
    type Place = Arc<ShmNode>;

    fn open(layout: &Layout, place: &Arc<ShmNode>) -> Result<(Shm, Endpoints<Shm>), String> {
        let map = &place.map;
        let nodes = layout.nodes as usize;
        let tpn = layout.threads_per_node as usize;
        let owner = || -> Arc<dyn Send + Sync> { map.clone() };
        let local: Vec<usize> = layout.local.clone().map(|n| n as usize).collect();
        // Each local thread's producers to every node.
        let senders = local
            .iter()
            .flat_map(|&n| (0..tpn).map(move |l| n * tpn + l))
            .map(|g| {
                // SAFETY: the ring (sender g, node d) is used by thread g
                // alone as producer, and its consumer is node d's inbox.
                let producers =
                    (0..nodes).map(|d| unsafe { ring::mapped_producer(&map.ring_at(g, d), owner()) }).collect();
                RingSender::new(producers)
            })
            .collect();
        let inboxes = local
            .iter()
            .map(|&n| {
                // SAFETY: node n's inbox is the one consumer of every ring
                // leading to it, and this process runs node n.
                let consumers =
                    (0..nodes * tpn).map(|g| unsafe { ring::mapped_consumer(&map.ring_at(g, n), owner()) }).collect();
                RingInbox::new(NodeId(n as u32), consumers)
            })
            .collect();
        Ok((Shm { map: map.clone(), place: place.clone() }, Endpoints { senders, inboxes }))
    }

    #[inline]
    fn doorbell(&self, node: u32) -> Option<&Doorbell> {
        (node < self.map.layout.nodes as u32).then(|| self.map.bell(node))
    }

    fn register_thread(&self, node: u32, thread: u32, kind: ThreadKind) {
        if kind == ThreadKind::Compute {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            self.map.area(node).tids[thread as usize].store(tid, Ordering::Release);
        }
    }

    fn sleep(&self, node: u32, timeout: Duration) {
        let word = &*self.map.area(node).wake;
        let seen = word.load(Ordering::Acquire);
        let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
        futex(word, libc::FUTEX_WAIT, seen, Some(&ts));
    }

    fn wake_parked(&self, node: u32) {
        let word = &*self.map.area(node).wake;
        word.fetch_add(1, Ordering::Release);
        futex(word, libc::FUTEX_WAKE, i32::MAX as u32, None);
    }

    fn interrupt(&self, node: u32, thread: u32) {
        let area = self.map.area(node);
        let tid = area.tids[thread as usize].load(Ordering::Acquire);
        let pid = area.pid.load(Ordering::Acquire);
        if tid != 0 && pid != 0 {
            // SAFETY: tgkill only sends a signal; a thread that has exited
            // makes it fail harmlessly (the pid check stops a recycled tid
            // of another process from being hit).
            unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, crate::notify::signal::signal_number()) };
        }
    }

    fn app_finished(&self) {
        self.map.finished().fetch_add(1, Ordering::AcqRel);
    }

    #[inline]
    fn apps_finished(&self) -> u32 {
        self.map.finished().load(Ordering::Acquire)
    }

    fn peer_trouble(&self) -> Option<Trouble> {
        self.place.trouble()
    }

    fn announce_failure(&self, node: u32, text: &str) {
        self.map.announce_failure(node, text);
    }
}
