//! MPI across hosts: each rank is one node, and active messages travel as
//! MPI messages in the ring's record layout ([`super::codec`]: a metadata
//! word, then the data words).
//!
//! - Sending: each thread owns [`SEND_SLOTS`] send buffers, each with its
//!   `MPI_Isend` in flight; a thread whose buffers are all in flight is
//!   "full" and spills in order, like a full ring. MPI keeps one thread's
//!   messages to one rank in order (non-overtaking), which is the order
//!   the runtime needs.
//! - Receiving: [`RECV_SLOTS`] receives from any rank are preposted, in a
//!   circle; the holder of the node's receive right tests the oldest (its
//!   progress step), takes messages out in posting order (so each sender's
//!   order holds) and reposts each buffer once its message is handled.
//!   Only that holder calls MPI on the receive side: under Fixed the
//!   protocol thread, under Single and Floating whoever acts as protocol
//!   processor. Other threads see a flag the holder keeps.
//! - Control: a second preposted receive carries the end-of-run counts
//!   and failures ([`Control`]); the run ends only when every rank has
//!   received every message the others sent it, so no one-way message in
//!   flight is lost when the runtime stops.
//!
//! Threads of a rank call MPI concurrently (any thread sends; the receive
//! right moves between threads), so nodes of several threads need
//! `MPI_THREAD_MULTIPLE`; a node of one thread needs only
//! `MPI_THREAD_SERIALIZED` (see `crate::MpiEnv`).
//!
//! A remote node's doorbell is out of reach (`doorbell` gives `None`):
//! senders do not wake or interrupt other ranks' threads. A rank's own
//! threads notice messages when they poll: protocol threads all the time,
//! Single and Floating threads when they wait, serve or reach a poll site.

use super::codec::{self, Outgoing, MAX_WORDS};
use super::ring::Full;
use super::spill::Spill;
use super::{Endpoints, Inbox, Layout, Sender, Sent, ThreadKind, Transport, Trouble};
use crate::notify::Doorbell;
use crossbeam_utils::CachePadded;
use finegrain_core::{Message, NodeId};
use mpi::ffi;
use std::cell::UnsafeCell;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Sends one thread may have in flight.
pub(crate) const SEND_SLOTS: usize = 64;
/// Receives a rank keeps posted.
pub(crate) const RECV_SLOTS: usize = 64;
const TAG_AM: c_int = 11;
const TAG_CONTROL: c_int = 12;
/// Tag of the end-of-run reports (see `crate::processes`).
pub(crate) const TAG_REPORT: c_int = 13;
/// Words of the largest message: the metadata word and the data.
const MSG_WORDS: usize = 1 + MAX_WORDS;
/// Words of a control message: kind, node, count, then text.
const CONTROL_WORDS: usize = 64;
const CONTROL_FINISHED: u64 = 1;
const CONTROL_SENT: u64 = 2;
const CONTROL_FAILED: u64 = 3;
/// Progress steps between tests of the control receive.
const CONTROL_EVERY: u32 = 64;
/// How long a failed run's threads have to stop before the job is
/// aborted from the guard thread (the run's own path aborts it sooner).
const FAILED_GRACE: Duration = Duration::from_millis(1500);

/// An MPI request handle, moved between threads only with the buffer it
/// belongs to.
struct Request(ffi::MPI_Request);

// SAFETY: an MPI request is an opaque handle; with MPI_THREAD_MULTIPLE
// (checked at start-up) any thread may test or wait on it, and each is
// used by one thread at a time (its sender, or the receive-right holder).
unsafe impl Send for Request {}

fn null_request() -> Request {
    // SAFETY: reading an immutable constant the MPI library exports.
    Request(unsafe { ffi::RSMPI_REQUEST_NULL })
}

impl Request {
    fn is_null(&self) -> bool {
        // SAFETY: as in `null_request`.
        self.0 == unsafe { ffi::RSMPI_REQUEST_NULL }
    }

    /// Whether the operation completed (a null request has); fills
    /// `status` when given.
    fn test(&mut self, status: Option<&mut ffi::MPI_Status>) -> bool {
        if self.is_null() {
            return true;
        }
        let mut done: c_int = 0;
        // SAFETY: a live request of ours; MPI writes the flag and status.
        let status = status.map_or(unsafe { ffi::RSMPI_STATUS_IGNORE }, |s| s as *mut _);
        // SAFETY: as above.
        unsafe { ffi::MPI_Test(&mut self.0, &mut done, status) };
        done != 0
    }

    /// Waits for the operation (cancelling a receive first).
    fn finish(&mut self, cancel: bool) {
        if self.is_null() {
            return;
        }
        // SAFETY: a live request of ours; cancelling a receive that no
        // message matched makes the wait return at once.
        unsafe {
            if cancel {
                ffi::MPI_Cancel(&mut self.0);
            }
            ffi::MPI_Wait(&mut self.0, ffi::RSMPI_STATUS_IGNORE);
        }
    }
}

fn comm() -> ffi::MPI_Comm {
    // SAFETY: reading an immutable constant the MPI library exports.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

fn bytes() -> ffi::MPI_Datatype {
    // SAFETY: as in `comm`.
    unsafe { ffi::RSMPI_UINT8_T }
}

/// Posts a receive of up to `buf.len()` words from any rank with `tag`.
fn post_recv(buf: &mut [u64], tag: c_int, req: &mut Request) {
    // SAFETY: the buffer stays allocated and untouched until the request
    // completes or is cancelled and waited on (see `Request::finish`).
    unsafe {
        ffi::MPI_Irecv(
            buf.as_mut_ptr().cast(),
            (buf.len() * 8) as c_int,
            bytes(),
            ffi::RSMPI_ANY_SOURCE,
            tag,
            comm(),
            &mut req.0,
        )
    };
}

/// Sends `words` to `rank` and waits (control messages: a few words,
/// sent eagerly).
pub(crate) fn send_now(words: &[u64], rank: u32, tag: c_int) {
    // SAFETY: the buffer is live for the whole blocking call.
    unsafe { ffi::MPI_Send(words.as_ptr().cast(), (words.len() * 8) as c_int, bytes(), rank as c_int, tag, comm()) };
}

/// The job's last resort. A rank whose run failed must not finalise MPI
/// (`MPI_Finalize` waits for every rank, and one may be stopped or stuck),
/// nor may it wait for ever in a blocking call to a rank that makes no
/// progress. So a failing rank says why in one line and aborts the whole
/// job (`MPI_Abort`: mpirun then ends every rank), and the waits that a
/// silent peer could make endless are covered by a deadline that a thread
/// of its own watches, since the waiting thread is inside MPI and cannot
/// look at a clock.
pub(crate) mod job {
    use super::{comm, ffi};
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Mutex, Once, OnceLock};
    use std::time::{Duration, Instant};

    /// The status an aborted job ends with: the command line's own for an
    /// error it has reported, so a launcher knows the line was printed.
    pub(crate) const ABORT_STATUS: i32 = 2;
    /// How often the guard looks at its deadline.
    const PERIOD: Duration = Duration::from_millis(20);
    /// How long `MPI_Abort` may take before the process ends itself.
    const ABORT_GRACE_S: u32 = 2;

    /// Milliseconds since [`epoch`] at which the guard aborts (0: never).
    static DEADLINE_MS: AtomicU64 = AtomicU64::new(0);
    /// What the guard says when it aborts.
    static TEXT: Mutex<String> = Mutex::new(String::new());
    /// The error line has been written.
    static SAID: AtomicBool = AtomicBool::new(false);
    static GUARD: Once = Once::new();

    fn epoch() -> Instant {
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        *EPOCH.get_or_init(Instant::now)
    }

    fn now_ms() -> u64 {
        epoch().elapsed().as_millis() as u64 + 1
    }

    /// Starts the guard thread (once per process; MPI is initialised).
    pub(crate) fn start_guard() -> Result<(), String> {
        let mut result = Ok(());
        GUARD.call_once(|| {
            epoch();
            let spawned = std::thread::Builder::new().name("fg-mpi-guard".into()).spawn(|| loop {
                std::thread::sleep(PERIOD);
                let at = DEADLINE_MS.load(Ordering::Acquire);
                if at != 0 && now_ms() >= at {
                    let text = TEXT.lock().map(|t| t.clone()).unwrap_or_default();
                    abort(&text);
                }
            });
            result = spawned.map(drop).map_err(|e| format!("cannot start the MPI job's guard thread: {e}"));
        });
        result
    }

    /// Aborts the job `after` from now unless [`disarm`] comes first,
    /// saying `text` (an earlier deadline stays, with its text).
    pub(crate) fn arm(after: Duration, text: String) {
        let at = now_ms() + after.as_millis() as u64;
        let mut t = TEXT.lock().unwrap_or_else(|e| e.into_inner());
        let old = DEADLINE_MS.load(Ordering::Acquire);
        if old == 0 || at < old {
            *t = text;
            DEADLINE_MS.store(at, Ordering::Release);
        }
    }

    /// The wait the deadline covered is over.
    pub(crate) fn disarm() {
        let _t = TEXT.lock().unwrap_or_else(|e| e.into_inner());
        DEADLINE_MS.store(0, Ordering::Release);
    }

    /// Writes `error: text` once per process, in one write (ranks share
    /// mpirun's standard error, where separate writes would interleave).
    fn say_once(text: &str) {
        if !SAID.swap(true, Ordering::AcqRel) {
            let line = format!("error: {}\n", text.replace('\n', " "));
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }

    /// Says why, then ends every rank of the job.
    pub(crate) fn abort(text: &str) -> ! {
        say_once(text);
        // Should the library not get the job ended (its own locks held by
        // a thread stuck inside it), SIGALRM's default action ends this
        // process, which mpirun takes as the job failing.
        // SAFETY: alarm only schedules a signal; MPI_Abort takes the world
        // communicator and a status, and does not return.
        unsafe {
            libc::alarm(ABORT_GRACE_S);
            ffi::MPI_Abort(comm(), ABORT_STATUS);
            libc::_exit(ABORT_STATUS)
        }
    }
}

/// The rank's end-of-run bookkeeping, kept by the receive-right holder and
/// read by every thread.
struct Control {
    ranks: u32,
    me: u32,
    /// Applications that have returned, here and (by control messages)
    /// elsewhere.
    finished: AtomicU32,
    /// Messages this rank sent to each rank, and received from each.
    sent_to: Box<[AtomicU64]>,
    received_from: Box<[AtomicU64]>,
    /// What each rank says it sent here (u64::MAX: not said yet).
    announced: Box<[AtomicU64]>,
    /// This rank told the others what it sent them.
    told: AtomicBool,
    /// 1 + the first rank that said it failed (0: none), and its words.
    failed: AtomicU32,
    failure: Mutex<Option<String>>,
}

/// The MPI transport as one rank sees it.
pub(crate) struct Mpi {
    bell: CachePadded<Doorbell>,
    control: Arc<Control>,
    total_compute: u32,
    multiple: bool,
}

/// A rank's MPI environment as the transport needs it.
#[derive(Clone, Copy)]
pub(crate) struct MpiPlace {
    pub(crate) rank: u32,
    pub(crate) ranks: u32,
    /// MPI_THREAD_MULTIPLE: any thread may call MPI at any time (otherwise
    /// only the node's one thread does while the run goes on).
    pub(crate) multiple: bool,
}

impl Transport for Mpi {
    type Sender = MpiSender;
    type Inbox = MpiInbox;
    type Place = MpiPlace;

    fn open(layout: &Layout, place: &MpiPlace) -> Result<(Mpi, Endpoints<Mpi>), String> {
        debug_assert_eq!(layout.local, place.rank..place.rank + 1);
        let n = place.ranks as usize;
        let zeros = || (0..n).map(|_| AtomicU64::new(0)).collect();
        let control = Arc::new(Control {
            ranks: place.ranks,
            me: place.rank,
            finished: AtomicU32::new(0),
            sent_to: zeros(),
            received_from: zeros(),
            announced: (0..n).map(|_| AtomicU64::new(u64::MAX)).collect(),
            told: AtomicBool::new(false),
            failed: AtomicU32::new(0),
            failure: Mutex::new(None),
        });
        let senders = (0..layout.threads_per_node).map(|_| MpiSender::new(n, control.clone())).collect();
        let inbox = MpiInbox::new(NodeId(place.rank), control.clone());
        let transport = Mpi {
            bell: CachePadded::new(Doorbell::new(layout.compute_threads_per_node)),
            control,
            total_compute: layout.nodes * layout.compute_threads_per_node,
            multiple: place.multiple,
        };
        Ok((transport, Endpoints { senders, inboxes: vec![inbox] }))
    }

    fn doorbell(&self, node: u32) -> Option<&Doorbell> {
        (node == self.control.me).then_some(&*self.bell)
    }

    fn register_thread(&self, _node: u32, _thread: u32, _kind: ThreadKind) {}

    fn sleep(&self, _node: u32, timeout: Duration) {
        // Nobody elsewhere can wake this thread: a short sleep.
        std::thread::sleep(timeout);
    }

    fn wake_parked(&self, _node: u32) {}

    /// Interrupts come only from this rank's own threads, which the
    /// runtime never asks for (only remote messages raise them).
    fn interrupt(&self, _node: u32, _thread: u32) {}

    fn app_finished(&self) {
        let c = &self.control;
        c.finished.fetch_add(1, Ordering::AcqRel);
        for r in (0..c.ranks).filter(|&r| r != c.me) {
            send_now(&[CONTROL_FINISHED, c.me as u64, 1], r, TAG_CONTROL);
        }
    }

    /// Every application has returned only once every message sent to
    /// this rank has arrived too (the count stays one short until then).
    fn apps_finished(&self) -> u32 {
        let c = &self.control;
        let f = c.finished.load(Ordering::Acquire);
        if f < self.total_compute {
            return f;
        }
        if !c.told.swap(true, Ordering::AcqRel) {
            for r in (0..c.ranks).filter(|&r| r != c.me) {
                send_now(&[CONTROL_SENT, c.me as u64, c.sent_to[r as usize].load(Ordering::Acquire)], r, TAG_CONTROL);
            }
            c.announced[c.me as usize].store(c.sent_to[c.me as usize].load(Ordering::Acquire), Ordering::Release);
        }
        let all_in = (0..c.ranks as usize)
            .all(|r| c.announced[r].load(Ordering::Acquire) == c.received_from[r].load(Ordering::Acquire));
        if all_in {
            f
        } else {
            f - 1
        }
    }

    fn peer_trouble(&self) -> Option<Trouble> {
        let node = self.control.failed.load(Ordering::Acquire).checked_sub(1)?;
        (node != self.control.me).then_some(Trouble::Failed { node })
    }

    /// Called by the run's watcher thread: only where MPI lets any thread
    /// call it (otherwise the platform announces once the run's threads
    /// have stopped).
    fn announce_failure(&self, node: u32, text: &str) {
        if self.multiple {
            announce(self.control.ranks, self.control.me, node, text);
        }
    }

    /// The run's threads may be stuck inside MPI (a send to a rank that
    /// makes no progress): the job ends soon whatever they do.
    fn run_failed(&self, text: &str) {
        job::arm(FAILED_GRACE, text.to_string());
    }
}

/// Tells every other rank that node `node` failed, and why (`text`, may be
/// empty).
pub(crate) fn announce(ranks: u32, me: u32, node: u32, text: &str) {
    {
        let mut words = vec![CONTROL_FAILED, node as u64, text.len().min((CONTROL_WORDS - 3) * 8) as u64];
        for chunk in text.as_bytes().chunks(8).take(CONTROL_WORDS - 3) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            words.push(u64::from_le_bytes(w));
        }
        for r in (0..ranks).filter(|&r| r != me) {
            send_now(&words, r, TAG_CONTROL);
        }
    }
}

/// One send buffer and its send in flight.
struct SendSlot {
    buf: Box<[u64]>,
    req: Request,
}

/// A thread's send side: its buffers, its spill, and the rank's counts.
pub(crate) struct MpiSender {
    slots: Vec<SendSlot>,
    next: usize,
    spill: Spill,
    control: Arc<Control>,
}

impl MpiSender {
    fn new(ranks: usize, control: Arc<Control>) -> MpiSender {
        let slots = (0..SEND_SLOTS)
            .map(|_| SendSlot { buf: vec![0u64; MSG_WORDS].into_boxed_slice(), req: null_request() })
            .collect();
        MpiSender { slots, next: 0, spill: Spill::new(ranks), control }
    }

    /// A buffer whose send has completed, testing in turn from the last one
    /// used.
    fn free_slot(&mut self) -> Option<usize> {
        for k in 0..SEND_SLOTS {
            let i = (self.next + k) % SEND_SLOTS;
            if self.slots[i].req.test(None) {
                self.next = (i + 1) % SEND_SLOTS;
                return Some(i);
            }
        }
        None
    }

    /// Starts sending a record (`meta`, then `len` data words from `word`).
    fn isend(&mut self, dst: usize, meta: u64, len: usize, word: impl Fn(usize) -> u64) -> Result<(), Full> {
        let i = self.free_slot().ok_or(Full)?;
        let slot = &mut self.slots[i];
        slot.buf[0] = meta;
        for k in 0..len {
            slot.buf[1 + k] = word(k);
        }
        // SAFETY: the buffer is not touched again until the request
        // completes (`free_slot` tests it first; `drop` waits for it).
        unsafe {
            ffi::MPI_Isend(
                slot.buf.as_ptr().cast(),
                ((1 + len) * 8) as c_int,
                bytes(),
                dst as c_int,
                TAG_AM,
                comm(),
                &mut slot.req.0,
            )
        };
        self.control.sent_to[dst].fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    fn push(&mut self, dst: usize, m: &Outgoing) -> Result<(), Full> {
        let mut words = Vec::with_capacity(MAX_WORDS);
        let meta = codec::encode(m, &mut words);
        self.isend(dst, meta, words.len(), |k| words[k])
    }
}

impl Drop for MpiSender {
    fn drop(&mut self) {
        for s in &mut self.slots {
            s.req.finish(false);
        }
    }
}

impl Sender for MpiSender {
    fn try_send(&mut self, dst: u32, m: &Outgoing) -> Result<(), Full> {
        if !self.spill.clear_for(dst as usize) {
            return Err(Full);
        }
        self.push(dst as usize, m)
    }

    fn send(&mut self, dst: u32, m: &Outgoing) -> Sent {
        let d = dst as usize;
        if !self.spill.clear_for(d) || self.push(d, m).is_err() {
            self.spill.push(d, m);
            return Sent::Spilled;
        }
        Sent::Now
    }

    fn spilled(&self) -> usize {
        self.spill.count()
    }

    fn flush(&mut self, sent: impl FnMut(u32)) -> bool {
        let mut spill = std::mem::replace(&mut self.spill, Spill::new(0));
        let empty = spill.flush(|d, meta, words| self.isend(d, meta, words.len(), |k| words[k]).is_ok(), sent);
        self.spill = spill;
        empty
    }
}

/// The preposted receives, in posting order: messages are tested and
/// taken out oldest first.
struct Posted {
    bufs: Vec<Box<[u64]>>,
    reqs: Vec<Request>,
    /// Bytes each completed receive holds.
    lens: Vec<usize>,
    /// The oldest receive not yet seen complete.
    tested: usize,
    /// The oldest completed receive not yet taken (== `tested`: none).
    taken: usize,
    /// Completed and not taken.
    waiting: usize,
    control_buf: Box<[u64]>,
    control_req: Request,
    /// Progress steps since the control receive was last tested.
    since_control: u32,
}

/// A rank's receive side: one lane, over the preposted receives.
pub(crate) struct MpiInbox {
    node: NodeId,
    posted: UnsafeCell<Posted>,
    /// Messages received and not yet taken (the hint other threads read).
    ready: AtomicBool,
    control: Arc<Control>,
}

// SAFETY: `posted` is touched only through the unsafe `Inbox` methods,
// whose callers hold the node's receive right (one thread at a time, the
// right's acquire and release ordering their accesses); the rest is
// atomics and a mutex.
unsafe impl Sync for MpiInbox {}
// SAFETY: the buffers and requests move with the inbox; see `Request`.
unsafe impl Send for MpiInbox {}

impl MpiInbox {
    fn new(node: NodeId, control: Arc<Control>) -> MpiInbox {
        let mut posted = Posted {
            bufs: (0..RECV_SLOTS).map(|_| vec![0u64; MSG_WORDS].into_boxed_slice()).collect(),
            reqs: (0..RECV_SLOTS).map(|_| null_request()).collect(),
            lens: vec![0; RECV_SLOTS],
            tested: 0,
            taken: 0,
            waiting: 0,
            control_buf: vec![0u64; CONTROL_WORDS].into_boxed_slice(),
            control_req: null_request(),
            since_control: 0,
        };
        for i in 0..RECV_SLOTS {
            post_recv(&mut posted.bufs[i], TAG_AM, &mut posted.reqs[i]);
        }
        post_recv(&mut posted.control_buf, TAG_CONTROL, &mut posted.control_req);
        MpiInbox { node, posted: UnsafeCell::new(posted), ready: AtomicBool::new(false), control }
    }

    /// Takes in the control messages that have come.
    fn progress_control(&self, p: &mut Posted) {
        while p.control_req.test(None) {
            let w = &p.control_buf;
            let c = &self.control;
            match w[0] {
                CONTROL_FINISHED => {
                    c.finished.fetch_add(w[2] as u32, Ordering::AcqRel);
                }
                CONTROL_SENT => c.announced[w[1] as usize].store(w[2], Ordering::Release),
                CONTROL_FAILED => {
                    let _ = c.failed.compare_exchange(0, w[1] as u32 + 1, Ordering::AcqRel, Ordering::Acquire);
                    let len = w[2] as usize;
                    if len > 0 {
                        let text: Vec<u8> = w[3..].iter().flat_map(|x| x.to_le_bytes()).take(len).collect();
                        if let Ok(mut f) = c.failure.lock() {
                            f.get_or_insert_with(|| String::from_utf8_lossy(&text).into_owned());
                        }
                    }
                }
                _ => {}
            }
            post_recv(&mut p.control_buf, TAG_CONTROL, &mut p.control_req);
        }
    }
}

impl Drop for MpiInbox {
    fn drop(&mut self) {
        let p = self.posted.get_mut();
        for (i, r) in p.reqs.iter_mut().enumerate() {
            // A completed receive not yet taken has nothing to cancel.
            let waiting = (p.taken..p.taken + p.waiting).any(|k| k % RECV_SLOTS == i);
            if !waiting {
                r.finish(true);
            }
        }
        p.control_req.finish(true);
    }
}

impl Inbox for MpiInbox {
    const PROGRESSES: bool = true;

    fn lanes(&self) -> usize {
        1
    }

    fn ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    unsafe fn progress(&self) {
        // SAFETY: the caller holds the receive right.
        let p = unsafe { &mut *self.posted.get() };
        // Control messages matter only at the end of a run or on a failure:
        // testing their receive on every step would double the library
        // calls on the message path.
        p.since_control += 1;
        if p.since_control >= CONTROL_EVERY {
            p.since_control = 0;
            self.progress_control(p);
        }
        while p.waiting < RECV_SLOTS {
            let i = p.tested;
            // SAFETY: a zeroed status is valid plain data for MPI to fill.
            let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
            if !p.reqs[i].test(Some(&mut status)) {
                break;
            }
            let mut count: c_int = 0;
            // SAFETY: `status` belongs to the receive just completed.
            unsafe { ffi::MPI_Get_count(&status, bytes(), &mut count) };
            p.lens[i] = count.max(0) as usize;
            self.control.received_from[status.MPI_SOURCE as usize].fetch_add(1, Ordering::AcqRel);
            p.tested = (i + 1) % RECV_SLOTS;
            p.waiting += 1;
        }
        self.ready.store(p.waiting > 0, Ordering::Release);
    }

    unsafe fn pending(&self) -> bool {
        // SAFETY: the caller holds the receive right.
        unsafe { &*self.posted.get() }.waiting > 0
    }

    unsafe fn try_recv(&self, _lane: usize, into: &mut Message) -> bool {
        // SAFETY: the caller holds the receive right.
        let p = unsafe { &mut *self.posted.get() };
        if p.waiting == 0 {
            return false;
        }
        let i = p.taken;
        let words = p.lens[i] / 8;
        let buf = &p.bufs[i];
        if words >= 1 {
            codec::decode_words(buf[0], |k| if 1 + k < words { buf[1 + k] } else { 0 }, self.node, into);
        }
        post_recv(&mut p.bufs[i], TAG_AM, &mut p.reqs[i]);
        p.taken = (i + 1) % RECV_SLOTS;
        p.waiting -= 1;
        if p.waiting == 0 {
            self.ready.store(false, Ordering::Release);
        }
        words >= 1
    }
}
