//! A run's timeline, for a caller that wants to see it: what each
//! processor does when, every message sent, every handler run.
//!
//! A scoped observer, like [`crate::progress`], rather than a parameter:
//! the simulator is called through the workloads' own functions, and a
//! timeline is a concern of the program showing it, not of any workload.
//! The engine only calls the sink, never reads from it, so a run's results
//! cannot depend on it; with no sink, each point the engine would call it
//! costs one test of an `Option`.

pub mod chrome;

use std::cell::RefCell;
use std::rc::Rc;

/// What a processor is doing over a stretch of cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Doing {
    /// Its thread's own work.
    Compute,
    /// Writing its thread's message into the network interface.
    Send,
    /// Its thread waits for a reply or a condition.
    Wait,
    /// Protocol work: handlers (named apart by [`TraceSink::handler`]),
    /// dispatch and forwarding requests.
    Handler,
    /// Taking an interrupt.
    Interrupt,
    /// Taking or giving up the protocol-processor role (the protocol
    /// thread's switch).
    Role,
    /// Holding the role with nothing to handle, polling.
    PollIdle,
    /// Holding the role for want of a successor while its own work could run.
    Hold,
    /// Nothing to do.
    Idle,
    /// Stalled on memory at the start of an activity.
    Stall,
}

impl Doing {
    /// Its name on a timeline.
    pub fn label(self) -> &'static str {
        match self {
            Doing::Compute => "computing",
            Doing::Send => "sending",
            Doing::Wait => "waiting",
            Doing::Handler => "handling",
            Doing::Interrupt => "interrupt",
            Doing::Role => "role switch",
            Doing::PollIdle => "polling idle",
            Doing::Hold => "holding role",
            Doing::Idle => "idle",
            Doing::Stall => "memory stall",
        }
    }
}

/// Where a timeline goes. Times are cycles; processors are numbered
/// within their node.
pub trait TraceSink {
    /// Processor `proc` of `node` is a dedicated protocol processor
    /// (`protocol`) or runs a compute thread; told once, before the run.
    fn processor(&mut self, _node: u32, _proc: u32, _protocol: bool) {}
    /// Processor `proc` of `node` did `doing` from `start` to `end`.
    fn activity(&mut self, node: u32, proc: u32, doing: Doing, start: u64, end: u64);
    /// Message `id` leaves processor `proc` of `node` at `at` for node `dst`.
    fn sent(&mut self, id: u64, node: u32, proc: u32, dst: u32, at: u64);
    /// Handler `name` ran on processor `proc` of `node` from `start` to
    /// `end`, for message `id` (the id [`TraceSink::sent`] gave it).
    fn handler(&mut self, id: u64, node: u32, proc: u32, name: &str, start: u64, end: u64);
}

/// The processor number of a node's co-processor (policy coprocessor),
/// whose handlers [`TraceSink::handler`] reports from their dispatch to
/// their end, with no message id (0).
pub const COPROCESSOR: u32 = u32::MAX;

/// A sink shared between its owner and the engine running on this thread.
pub type SharedSink = Rc<RefCell<dyn TraceSink>>;

thread_local! {
    static SINK: RefCell<Option<SharedSink>> = const { RefCell::new(None) };
}

/// Runs `f` with the first simulation it starts on this thread recording
/// its timeline into `sink` (a later one, such as a calibration run, is not
/// recorded).
pub fn recorded<R>(sink: SharedSink, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<SharedSink>);
    impl Drop for Reset {
        fn drop(&mut self) {
            SINK.with(|s| *s.borrow_mut() = self.0.take());
        }
    }
    let _reset = Reset(SINK.with(|s| s.borrow_mut().replace(sink)));
    f()
}

/// The sink of the caller recording this thread, taken: one run records.
pub(crate) fn take_sink() -> Option<SharedSink> {
    SINK.with(|s| s.borrow_mut().take())
}
