//! A timeline as Chrome trace-event JSON, the format Perfetto's UI and
//! chrome://tracing open: each node a process, each processor a thread,
//! activities and handlers as complete ("X") events, messages as flows
//! ("s" at the send, "f" at the handler that receives them).
//!
//! Bounded: only what overlaps a window of cycles is kept, and at most a
//! number of events; the file says where it was cut.

use super::{Doing, TraceSink, COPROCESSOR};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::io::Write;

/// The events kept when no limit is asked for: about 100 MB of JSON.
pub const DEFAULT_MAX_EVENTS: usize = 1_000_000;

/// What part of a run a timeline keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Cycles from..to (to excluded); events overlapping it are kept,
    /// clipped to it.
    pub window: (u64, u64),
    /// At most this many events (spans and flow ends) are kept.
    pub max_events: usize,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds { window: (0, u64::MAX), max_events: DEFAULT_MAX_EVENTS }
    }
}

#[derive(Clone, Copy, Debug)]
enum Recorded {
    Span { node: u32, proc: u32, name: u32, handler: bool, start: u64, end: u64 },
    Sent { id: u64, node: u32, proc: u32, at: u64 },
    Received { id: u64, node: u32, proc: u32, at: u64 },
}

/// A [`TraceSink`] keeping a bounded timeline, written as Chrome
/// trace-event JSON by [`ChromeTrace::write`].
#[derive(Debug)]
pub struct ChromeTrace {
    bounds: Bounds,
    events: Vec<Recorded>,
    /// Span names: activity labels and handler names.
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    tracks: BTreeSet<(u32, u32)>,
    /// Processors that are dedicated protocol processors.
    protocol: BTreeSet<(u32, u32)>,
    /// Messages whose send was kept (a receive is kept only with it).
    sent: std::collections::HashSet<u64>,
    /// The cycle of the first event refused for want of room.
    cut_at: Option<u64>,
}

impl ChromeTrace {
    pub fn new(bounds: Bounds) -> ChromeTrace {
        ChromeTrace {
            bounds,
            events: Vec::new(),
            names: Vec::new(),
            name_ids: HashMap::new(),
            tracks: BTreeSet::new(),
            protocol: BTreeSet::new(),
            sent: Default::default(),
            cut_at: None,
        }
    }

    /// Where the timeline was cut for want of room, if it was: the cycle of
    /// the first event left out.
    pub fn cut_at(&self) -> Option<u64> {
        self.cut_at
    }

    /// Events kept (spans and flow ends).
    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    fn name_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.name_ids.insert(name.to_string(), id);
        id
    }

    /// Keeps `e` (at cycle `at`) if there is room; notes the cut otherwise.
    fn keep(&mut self, at: u64, e: Recorded) -> bool {
        if self.events.len() >= self.bounds.max_events {
            self.cut_at = Some(self.cut_at.map_or(at, |c| c.min(at)));
            return false;
        }
        self.events.push(e);
        true
    }

    fn in_window(&self, at: u64) -> bool {
        (self.bounds.window.0..self.bounds.window.1).contains(&at)
    }

    /// The span clipped to the window, if any of it is inside.
    fn clip(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        let (from, to) = self.bounds.window;
        let (s, e) = (start.max(from), end.min(to));
        (s < e || (start == end && self.in_window(start))).then_some((s, e))
    }

    fn span(&mut self, node: u32, proc: u32, name: &str, handler: bool, start: u64, end: u64) {
        let Some((start, end)) = self.clip(start, end) else { return };
        self.tracks.insert((node, proc));
        let name = self.name_id(name);
        self.keep(start, Recorded::Span { node, proc, name, handler, start, end });
    }

    /// Writes the timeline as Chrome trace-event JSON, times in
    /// microseconds of a `mhz` processor; `about` goes in the file's
    /// `otherData` (the run's configuration, say).
    pub fn write(&self, out: impl Write, mhz: f64, about: serde_json::Value) -> serde_json::Result<()> {
        let us = |cycles: u64| cycles as f64 / mhz;
        let mut events: Vec<Event<'_>> = Vec::with_capacity(self.events.len() + 2 * self.tracks.len());
        for &node in self.tracks.iter().map(|(n, _)| n).collect::<BTreeSet<_>>() {
            events.push(Event::meta("process_name", node, 0, format!("node {node}")));
            events.push(Event::meta("process_sort_index", node, 0, node));
        }
        for &(node, proc) in &self.tracks {
            let role = if self.protocol.contains(&(node, proc)) { "protocol" } else { "compute" };
            let name = match proc {
                COPROCESSOR => "co-processor".to_string(),
                _ => format!("processor {proc} ({role})"),
            };
            events.push(Event::meta("thread_name", node, proc, name));
            events.push(Event::meta("thread_sort_index", node, proc, proc));
        }
        let received: std::collections::HashSet<u64> = self
            .events
            .iter()
            .filter_map(|e| match e {
                Recorded::Received { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        let mut timed: Vec<(u64, u64, Event<'_>)> = Vec::with_capacity(self.events.len());
        for e in &self.events {
            match *e {
                Recorded::Span { node, proc, name, handler, start, end } => {
                    let cat = if handler { "handler" } else { "processor" };
                    let ev = Event::span(&self.names[name as usize], cat, node, proc, us(start), us(end - start));
                    // At one start, the longer span first: it encloses.
                    timed.push((start, u64::MAX - (end - start) + handler as u64, ev));
                }
                Recorded::Sent { id, node, proc, at } if received.contains(&id) => {
                    timed.push((at, u64::MAX, Event::flow("s", id, node, proc, us(at))));
                }
                Recorded::Sent { .. } => {}
                Recorded::Received { id, node, proc, at } => {
                    timed.push((at, u64::MAX, Event::flow("f", id, node, proc, us(at))));
                }
            }
        }
        timed.sort_by_key(|(at, order, _)| (*at, *order));
        events.extend(timed.into_iter().map(|(_, _, e)| e));
        let cut = self.cut_at.map(|c| {
            format!(
                "cut at the limit of {} events: events from cycle {c} ({:.3} us) on are missing",
                self.bounds.max_events,
                us(c)
            )
        });
        if let Some(c) = self.cut_at {
            events.push(Event::instant("timeline cut here (event limit)", us(c)));
        }
        let (from, to) = self.bounds.window;
        let file = File {
            trace_events: events,
            display_time_unit: "ns",
            other_data: OtherData {
                clock: format!("simulated time in microseconds at {mhz} MHz"),
                window_cycles: format!("{from}..{}", if to == u64::MAX { String::new() } else { to.to_string() }),
                max_events: self.bounds.max_events,
                cut,
                about,
            },
        };
        serde_json::to_writer(out, &file)
    }
}

impl TraceSink for ChromeTrace {
    fn processor(&mut self, node: u32, proc: u32, protocol: bool) {
        if protocol {
            self.protocol.insert((node, proc));
        }
    }

    fn activity(&mut self, node: u32, proc: u32, doing: Doing, start: u64, end: u64) {
        self.span(node, proc, doing.label(), false, start, end);
    }

    fn sent(&mut self, id: u64, node: u32, proc: u32, _dst: u32, at: u64) {
        if self.in_window(at) && self.keep(at, Recorded::Sent { id, node, proc, at }) {
            self.sent.insert(id);
        }
    }

    fn handler(&mut self, id: u64, node: u32, proc: u32, name: &str, start: u64, end: u64) {
        self.span(node, proc, name, true, start, end);
        if self.sent.remove(&id) && self.in_window(start) {
            self.keep(start, Recorded::Received { id, node, proc, at: start });
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct File<'a> {
    trace_events: Vec<Event<'a>>,
    display_time_unit: &'static str,
    other_data: OtherData,
}

#[derive(Serialize)]
struct OtherData {
    clock: String,
    window_cycles: String,
    max_events: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    cut: Option<String>,
    about: serde_json::Value,
}

/// One trace event, as the Trace Event Format names its fields.
#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    cat: &'a str,
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    /// A flow's end binds to the slice enclosing it (the handler starting
    /// there), not to the next one.
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    /// An instant event's scope: the whole trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<serde_json::Value>,
}

impl<'a> Event<'a> {
    fn base(name: &'a str, cat: &'a str, ph: &'static str, pid: u32, tid: u32) -> Event<'a> {
        Event { name, cat, ph, ts: None, dur: None, pid, tid, id: None, bp: None, s: None, args: None }
    }

    fn meta(name: &'a str, pid: u32, tid: u32, value: impl Serialize) -> Event<'a> {
        let key = if name.ends_with("sort_index") { "sort_index" } else { "name" };
        Event { args: Some(serde_json::json!({ key: value })), ..Event::base(name, "", "M", pid, tid) }
    }

    fn span(name: &'a str, cat: &'a str, pid: u32, tid: u32, ts: f64, dur: f64) -> Event<'a> {
        Event { ts: Some(ts), dur: Some(dur), ..Event::base(name, cat, "X", pid, tid) }
    }

    fn flow(ph: &'static str, id: u64, pid: u32, tid: u32, ts: f64) -> Event<'a> {
        let bp = (ph == "f").then_some("e");
        Event { ts: Some(ts), id: Some(id), bp, ..Event::base("message", "message", ph, pid, tid) }
    }

    fn instant(name: &'a str, ts: f64) -> Event<'a> {
        Event { ts: Some(ts), s: Some("g"), ..Event::base(name, "", "i", 0, 0) }
    }
}
