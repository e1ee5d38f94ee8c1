//! The fetch&add microbenchmark of the PDQ study (Falsafi & Wood, HPCA
//! 1999): requesters on every node but node 0 send fetch&add requests for
//! words at node 0 (the home) and wait for the old value.
//!
//! The synchronization key of a request is its word, so handlers for
//! different words may run in parallel and handlers for one word must not.
//! Each word sits in its own protocol block of the home's protocol table
//! (the key is the block, as in Stache). Words are chosen uniformly among K
//! or with a Zipf skew (word 0 the most popular); a fraction of requests may
//! carry the sequential key instead (they update their word all the same).
//!
//! Requesters send back to back, or compute for an exponentially
//! distributed time before each request.
//!
//! The home node's compute threads alternate exponentially distributed
//! bursts of computation and idle periods at a target utilization, until the
//! requesters are done; under Floating their idle processors serve.
//!
//! The handler really adds: it reads the word, adds, and writes it back as
//! two separate steps, so two handlers of one key running at once would lose
//! an update. Every run checks each word against the number of requests the
//! requesters sent for it. (The simulator runs each handler's code in one
//! step, so there the words cannot show an overlap; the engine checks every
//! handler's time against its key instead, see `finegrain_sim::stats::KeyCheck`.)

use crate::Target;
use finegrain_core::config::{MAX_CYCLES, MAX_REQUESTS};
use finegrain_core::{
    Access, AmError, Args, ConfigError, HandlerId, HandlerInfo, HandlerTable, MachineConfig, Message, NodeId, Payload,
    Proc, Region, Reply, SyncKey,
};
use finegrain_core::{Ran, Workload, WorkloadError};
use finegrain_sim::{RunStats, SimConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Zipf};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Handler instructions besides the word's own accesses (decode the
/// request, add, compose the reply).
pub const FETCH_ADD_REQUEST_CYCLES: u64 = 12;
pub const FETCH_ADD_REPLY_CYCLES: u64 = 8;
const HANDLER_CODE_BYTES: u32 = 128;

/// How requesters pick the word.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum KeySkew {
    Uniform,
    /// Word i (from 0) is chosen with probability proportional to
    /// 1 / (i + 1)^exponent.
    Zipf {
        exponent: f64,
    },
}

/// Zipf exponents a workload takes: below, keys are as good as uniform;
/// above, every request goes to word 0 anyway.
pub const ZIPF_EXPONENTS: std::ops::RangeInclusive<f64> = 0.01..=100.0;

/// Refuses a Zipf exponent outside [`ZIPF_EXPONENTS`], naming `field`.
pub fn check_zipf_exponent(field: &str, exponent: f64) -> Result<(), ConfigError> {
    if ZIPF_EXPONENTS.contains(&exponent) {
        return Ok(());
    }
    Err(ConfigError::invalid(
        field,
        format!("{exponent:?}"),
        format!("allowed {}..={}", ZIPF_EXPONENTS.start(), ZIPF_EXPONENTS.end()),
    ))
}

impl KeySkew {
    /// Parses `uniform` or `zipf:S`.
    pub fn parse(s: &str) -> Result<KeySkew, ConfigError> {
        let bad = || {
            let allowed = format!(
                "allowed uniform or zipf:S (S in {}..={}, for example zipf:1.0)",
                ZIPF_EXPONENTS.start(),
                ZIPF_EXPONENTS.end()
            );
            ConfigError::invalid("skew", s, allowed)
        };
        if s == "uniform" {
            return Ok(KeySkew::Uniform);
        }
        let exponent: f64 = s.strip_prefix("zipf:").ok_or_else(bad)?.parse().map_err(|_| bad())?;
        if !ZIPF_EXPONENTS.contains(&exponent) {
            return Err(bad());
        }
        Ok(KeySkew::Zipf { exponent })
    }

    pub fn label(&self) -> String {
        match self {
            KeySkew::Uniform => "uniform".into(),
            KeySkew::Zipf { exponent } => format!("zipf:{exponent}"),
        }
    }
}

impl fmt::Display for KeySkew {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// One fetch&add run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchAddConfig {
    /// Distinct words (keys) at the home node.
    pub keys: u64,
    pub skew: KeySkew,
    /// Extra handler instructions per request (the configurable handler cost).
    pub handler_cycles: u64,
    /// Share of requests that carry the sequential key.
    pub sequential_fraction: f64,
    /// Requests each requester thread sends.
    pub requests_per_thread: u64,
    /// Mean of the exponentially distributed computation a requester does
    /// before each request (0: back to back).
    pub think_cycles: f64,
    /// Target compute utilization of the home node's threads, in [0, 1].
    pub home_u: f64,
    /// Mean of a home thread's compute bursts (and the scale of its idle
    /// periods), in cycles.
    pub home_burst_cycles: f64,
}

impl FetchAddConfig {
    pub fn validate(&self, machine: &MachineConfig, threads_per_node: u32) -> Result<(), ConfigError> {
        let capacity = key_capacity(machine, threads_per_node);
        if capacity == 0 {
            return Err(ConfigError::invalid(
                "preset",
                &machine.name,
                format!(
                    "its home protocol table ({threads_per_node} threads x {} blocks x {}-byte entries) holds no \
                     {}-byte word block; allowed presets with room for at least one",
                    machine.blocks_per_segment(),
                    machine.protocol.table_entry_bytes,
                    machine.protocol.block_bytes
                ),
            ));
        }
        if self.keys == 0 || self.keys > capacity {
            return Err(ConfigError::invalid(
                "keys",
                self.keys,
                format!(
                    "allowed 1..={capacity} (one protocol block per word in the home's protocol table; more threads \
                     per node, or a preset with a larger cache.size_bytes, make room)"
                ),
            ));
        }
        if let KeySkew::Zipf { exponent } = self.skew {
            check_zipf_exponent("skew exponent", exponent)?;
        }
        if !(0.0..=1.0).contains(&self.sequential_fraction) {
            return Err(ConfigError::invalid("sequential_fraction", self.sequential_fraction, "allowed 0..=1"));
        }
        if !(self.think_cycles >= 0.0 && self.think_cycles <= MAX_CYCLES as f64) {
            return Err(ConfigError::invalid(
                "think_cycles",
                format!("{:?}", self.think_cycles),
                format!("allowed 0..={MAX_CYCLES}"),
            ));
        }
        if self.handler_cycles > MAX_CYCLES {
            return Err(ConfigError::invalid(
                "handler_cycles",
                self.handler_cycles,
                format!("allowed 0..={MAX_CYCLES}"),
            ));
        }
        if !(1..=MAX_REQUESTS).contains(&self.requests_per_thread) {
            return Err(ConfigError::invalid(
                "requests_per_thread",
                self.requests_per_thread,
                format!("allowed 1..={MAX_REQUESTS}"),
            ));
        }
        if !(0.0..=1.0).contains(&self.home_u) || self.home_u.is_sign_negative() {
            return Err(ConfigError::invalid("home_u", self.home_u, "allowed 0..=1"));
        }
        if !(self.home_burst_cycles >= 1.0 && self.home_burst_cycles <= MAX_CYCLES as f64) {
            return Err(ConfigError::invalid(
                "home_burst_cycles",
                format!("{:?}", self.home_burst_cycles),
                format!("allowed 1..={MAX_CYCLES}"),
            ));
        }
        // The home's mean idle period, burst (1 - U) / U, is a cost like any
        // other: at most MAX_CYCLES.
        let lowest_u = self.home_burst_cycles / (self.home_burst_cycles + MAX_CYCLES as f64);
        if self.home_u > 0.0 && self.home_u < lowest_u {
            // Shown rounded up to four figures, so the value shown is allowed.
            let scale = 10f64.powf(lowest_u.log10().floor() - 3.0);
            let shown = (lowest_u / scale).ceil() * scale;
            return Err(ConfigError::invalid(
                "home_u",
                format!("{:?}", self.home_u),
                format!(
                    "allowed 0 (the home does not compute) or {shown:.3e}..=1 (with home_burst_cycles = {} a lower U \
                     idles more than {MAX_CYCLES} cycles between bursts)",
                    self.home_burst_cycles
                ),
            ));
        }
        Ok(())
    }
}

/// Words the home's protocol table holds at one protocol block each.
pub fn key_capacity(machine: &MachineConfig, threads_per_node: u32) -> u64 {
    let table = threads_per_node as u64 * machine.blocks_per_segment() * machine.protocol.table_entry_bytes as u64;
    table / machine.protocol.block_bytes as u64
}

/// The words at the home and how many requests were sent for each: the
/// handlers update the first, requesters the second.
#[derive(Debug)]
pub struct Words {
    pub values: Vec<AtomicU64>,
    pub sent: Vec<AtomicU64>,
}

impl Words {
    pub fn new(keys: u64) -> Words {
        let zeros = || (0..keys).map(|_| AtomicU64::new(0)).collect();
        Words { values: zeros(), sent: zeros() }
    }

    /// Every word must equal the requests sent for it: a lost update means
    /// two handlers of one key overlapped.
    pub fn check(&self) -> Result<(), WorkloadError> {
        for (k, (v, s)) in self.values.iter().zip(&self.sent).enumerate() {
            let (v, s) = (v.load(Ordering::Relaxed), s.load(Ordering::Relaxed));
            if v != s {
                return Err(WorkloadError::WrongAnswer {
                    workload: "fetch&add",
                    what: format!("word {k} holds {v} after {s} fetch&add requests: handlers of one key overlapped"),
                });
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct FetchAddHandlers {
    pub request: HandlerId,
    pub reply: HandlerId,
    pub block_bytes: u32,
    /// Across processes: the request a requester sends the home once it
    /// is done (the home's threads count requesters down by it).
    pub done: Option<HandlerId>,
}

/// Registers the fetch&add handlers; they update `words`.
pub fn handlers(
    cfg: &FetchAddConfig,
    machine: &MachineConfig,
    words: Arc<Words>,
) -> Result<(HandlerTable, FetchAddHandlers), AmError> {
    let mut table = HandlerTable::new();
    let block_bytes = machine.protocol.block_bytes;
    let info = |name: &str, body_cycles| HandlerInfo { name: name.into(), body_cycles, code_bytes: HANDLER_CODE_BYTES };
    let reply = table.register(info("fetch_add_reply", FETCH_ADD_REPLY_CYCLES), |_, _| Ok(()))?;
    let extra = cfg.handler_cycles;
    let request = table.register(info("fetch_add_request", FETCH_ADD_REQUEST_CYCLES), move |ctx, m: &Message| {
        let key = m.args.get(0);
        let add = m.args.get(1);
        let offset = key * block_bytes as u64;
        let word = words.values.get(key as usize).ok_or_else(|| AmError::HandlerFailed {
            handler: "fetch_add_request".into(),
            reason: format!("word {key} does not exist (the home holds {})", words.values.len()),
        })?;
        // Load, add, store, as the handler's code does: two steps, so
        // overlapping handlers of one key would lose an update.
        ctx.access(Region::ProtocolTable, offset, 8, Access::Read);
        let old = word.load(Ordering::Relaxed);
        ctx.charge(extra);
        ctx.access(Region::ProtocolTable, offset, 8, Access::Write);
        word.store(old.wrapping_add(add), Ordering::Relaxed);
        ctx.reply(Reply { handler: reply, args: Args::new(&[old])?, payload: Payload::none() })
    })?;
    Ok((table, FetchAddHandlers { request, reply, block_bytes, done: None }))
}

/// What each thread did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadOutcome {
    pub requests: u64,
}

/// Shared between the threads of one run.
pub struct Shared {
    pub words: Arc<Words>,
    /// Requester threads still running; the home's threads stop at zero.
    pub requesters_left: AtomicU64,
}

/// One thread: a requester on nodes 1.., a computing-and-idling thread on
/// the home (node 0).
pub async fn thread<P: Proc>(
    p: &P,
    cfg: &FetchAddConfig,
    h: &FetchAddHandlers,
    shared: &Shared,
) -> Result<ThreadOutcome, AmError> {
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed());
    if p.node().0 == 0 {
        home_thread(p, cfg, shared, &mut rng).await;
        return Ok(ThreadOutcome::default());
    }
    let zipf = match cfg.skew {
        KeySkew::Zipf { exponent } => Some(
            Zipf::new(cfg.keys, exponent)
                .map_err(|e| AmError::Aborted(format!("zipf over {} keys, exponent {exponent}: {e}", cfg.keys)))?,
        ),
        KeySkew::Uniform => None,
    };
    // Counted down however the requests end: the home's threads run until
    // every requester is done, and a failed requester must not keep them
    // (and so the run) going forever.
    let sent = requests(p, cfg, h, shared, zipf.as_ref(), &mut rng).await;
    match h.done {
        // The home is in another process: tell it by a message.
        Some(done) => {
            p.request_keyed(NodeId(0), done, SyncKey::Sequential, Args::default(), Payload::none()).await?;
        }
        None => {
            shared.requesters_left.fetch_sub(1, Ordering::AcqRel);
        }
    }
    sent?;
    Ok(ThreadOutcome { requests: cfg.requests_per_thread })
}

/// A requester's fetch&add requests, one after another.
async fn requests<P: Proc>(
    p: &P,
    cfg: &FetchAddConfig,
    h: &FetchAddHandlers,
    shared: &Shared,
    zipf: Option<&Zipf<f64>>,
    rng: &mut ChaCha8Rng,
) -> Result<(), AmError> {
    let think = (cfg.think_cycles > 0.0).then(|| Exp::new(1.0 / cfg.think_cycles).expect("positive mean"));
    for _ in 0..cfg.requests_per_thread {
        if let Some(think) = &think {
            let c = think.sample(rng).round() as u64;
            if c > 0 {
                p.work(c).await;
            }
        }
        let word = match zipf {
            Some(z) => (z.sample(rng) as u64).clamp(1, cfg.keys) - 1,
            None => rng.gen_range(0..cfg.keys),
        };
        let key = if cfg.sequential_fraction > 0.0 && rng.gen_bool(cfg.sequential_fraction) {
            SyncKey::Sequential
        } else {
            SyncKey::Key(word)
        };
        shared.words.sent[word as usize].fetch_add(1, Ordering::Relaxed);
        p.request_keyed(NodeId(0), h.request, key, Args::new(&[word, 1])?, Payload::none()).await?;
    }
    Ok(())
}

async fn home_thread<P: Proc>(p: &P, cfg: &FetchAddConfig, shared: &Shared, rng: &mut ChaCha8Rng) {
    if cfg.home_u == 0.0 {
        // The home never computes: its processors are idle throughout, as
        // a finished thread's are. (Idling in bursts instead would wake each
        // thread every burst for nothing, and the events would grow with
        // simulated time however few the messages.)
        return;
    }
    let burst = Exp::new(1.0 / cfg.home_burst_cycles).expect("positive mean");
    let idle_mean = cfg.home_burst_cycles * (1.0 - cfg.home_u) / cfg.home_u;
    let idle = (idle_mean > 0.0).then(|| Exp::new(1.0 / idle_mean).expect("positive mean"));
    while shared.requesters_left.load(Ordering::Acquire) > 0 {
        p.work((burst.sample(rng).round() as u64).max(1)).await;
        if let Some(idle) = &idle {
            p.idle((idle.sample(rng).round() as u64).max(1)).await;
        }
    }
}

/// Fetch&add as a [`Workload`], set up for one machine and topology: the
/// words at the home, the handlers that update them, and the count of
/// requesters the home's threads wait for.
pub struct FetchAdd {
    cfg: FetchAddConfig,
    table: HandlerTable,
    h: FetchAddHandlers,
    shared: Arc<Shared>,
}

impl FetchAdd {
    /// Checks `cfg` against the home's protocol table (`threads_per_node`
    /// compute threads' worth on `machine`) and registers the handlers for
    /// a machine of `nodes` nodes (node 0 the home).
    pub fn new(
        cfg: &FetchAddConfig,
        machine: &MachineConfig,
        nodes: u32,
        threads_per_node: u32,
    ) -> Result<FetchAdd, WorkloadError> {
        cfg.validate(machine, threads_per_node)?;
        crate::micro::two_nodes_at_least(nodes)?;
        let words = Arc::new(Words::new(cfg.keys));
        let (table, h) = handlers(cfg, machine, words.clone())?;
        let requesters = (nodes as u64 - 1) * threads_per_node as u64;
        let shared = Arc::new(Shared { words, requesters_left: AtomicU64::new(requesters) });
        Ok(FetchAdd { cfg: cfg.clone(), table, h, shared })
    }

    /// [`FetchAdd::new`] for nodes in separate processes: a requester that
    /// is done tells the home with one more request (handler
    /// `requester_done`), since the home cannot see a count other
    /// processes keep. The simulator and the in-process runtime use
    /// [`FetchAdd::new`], whose handler table (and so simulated code
    /// layout) stays as the studies were calibrated with.
    pub fn for_processes(
        cfg: &FetchAddConfig,
        machine: &MachineConfig,
        nodes: u32,
        threads_per_node: u32,
    ) -> Result<FetchAdd, WorkloadError> {
        let mut w = FetchAdd::new(cfg, machine, nodes, threads_per_node)?;
        let shared = w.shared.clone();
        let reply = w.h.reply;
        let info = HandlerInfo { name: "requester_done".into(), body_cycles: 4, code_bytes: HANDLER_CODE_BYTES };
        let done = w.table.register(info, move |ctx, _| {
            shared.requesters_left.fetch_sub(1, Ordering::AcqRel);
            ctx.reply(Reply { handler: reply, args: Args::default(), payload: Payload::none() })
        })?;
        w.h.done = Some(done);
        Ok(w)
    }
}

impl Workload for FetchAdd {
    type Output = ThreadOutcome;

    fn name(&self) -> &'static str {
        "fetch-add"
    }

    fn handlers(&self) -> &HandlerTable {
        &self.table
    }

    async fn thread<P: Proc>(&self, p: P) -> Result<ThreadOutcome, AmError> {
        thread(&p, &self.cfg, &self.h, &self.shared).await
    }

    /// Every word equals the requests sent for it.
    fn check(&self, _outputs: &[ThreadOutcome]) -> Result<(), WorkloadError> {
        self.shared.words.check()
    }

    /// Every word's value, then the requests sent for each.
    fn tally(&self) -> Vec<u64> {
        let w = &self.shared.words;
        w.values.iter().chain(&w.sent).map(|v| v.load(Ordering::Relaxed)).collect()
    }

    fn absorb(&self, tally: &[u64]) -> Result<(), WorkloadError> {
        let w = &self.shared.words;
        if tally.len() != w.values.len() * 2 {
            return Err(WorkloadError::WrongAnswer {
                workload: "fetch&add",
                what: format!("another process's tally has {} counters, not {}", tally.len(), w.values.len() * 2),
            });
        }
        for (word, add) in w.values.iter().chain(&w.sent).zip(tally) {
            word.fetch_add(*add, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The home's threads count requesters down: across processes only
    /// a workload built with [`FetchAdd::for_processes`] can (or one whose
    /// home does not compute, and so never waits for them).
    fn across_processes(&self) -> Result<(), WorkloadError> {
        if self.h.done.is_none() && self.cfg.home_u > 0.0 {
            return Err(WorkloadError::Config(ConfigError::invalid(
                "home_u",
                self.cfg.home_u,
                "a home that computes waits for the requesters, which in separate processes takes \
                 FetchAdd::for_processes; allowed 0 with FetchAdd::new",
            )));
        }
        Ok(())
    }
}

/// Runs fetch&add on `on` and checks every word afterwards. Nodes in
/// separate processes tell the home they are done by message
/// ([`FetchAdd::for_processes`]).
pub fn run<P: Target>(on: &P, cfg: &FetchAddConfig) -> Result<Ran<ThreadOutcome, P::Stats>, P::Error> {
    // The platform first: the workload's checks size the key table from
    // its machine.
    on.validate()?;
    let run = on.run_config();
    let (nodes, threads) = (run.topology.nodes, run.policy.compute_procs(run.topology.procs_per_node));
    // A native table's room first: the simulated machine's (what the
    // workload checks) is larger, and would name the wrong range.
    if let Some(bytes) = on.native_table_bytes() {
        check_native_keys(bytes, on.machine(), cfg).map_err(WorkloadError::from)?;
    }
    if on.across_processes() {
        on.run(&FetchAdd::for_processes(cfg, on.machine(), nodes, threads)?)
    } else {
        on.run(&FetchAdd::new(cfg, on.machine(), nodes, threads)?)
    }
}

/// Requests a run makes in all (each is answered once).
pub fn total_requests(sim: &SimConfig, cfg: &FetchAddConfig) -> u64 {
    requester_threads(sim).saturating_mul(cfg.requests_per_thread)
}

fn requester_threads(sim: &SimConfig) -> u64 {
    let per_node = sim.run.policy.compute_procs(sim.run.topology.procs_per_node) as u64;
    (sim.run.topology.nodes as u64 - 1) * per_node
}

/// What a fetch&add run measured at the home node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HomeMeasures {
    pub requests: u64,
    /// Requests handled per microsecond of simulated time (up to the last
    /// handler at the home).
    pub throughput_msgs_per_us: f64,
    pub mean_queue_delay_cycles: f64,
    pub p99_queue_delay_cycles: u64,
    /// Share of the home's protocol-processing time spent spinning on key
    /// locks: busy-wait / (handler + busy-wait) cycles.
    pub pp_busy_wait_fraction: f64,
    /// Interrupts taken at the home.
    pub interrupts: u64,
    /// Measured compute utilization of the home's threads.
    pub home_u: f64,
    /// Bus transactions at the home per request.
    pub bus_transactions_per_request: f64,
}

/// The home node's measures from a run's statistics alone (what a run
/// record keeps).
pub fn home_measures(machine: &MachineConfig, stats: &RunStats) -> HomeMeasures {
    let home = &stats.nodes[0];
    let requests: u64 = home.procs.iter().map(|p| p.handlers).sum();
    let busy: u64 = home.procs.iter().map(|p| p.cycles.busy_wait).sum();
    let handler: u64 = home.procs.iter().map(|p| p.cycles.handler).sum();
    let interrupts = home.procs.iter().map(|p| p.interrupts).sum();
    let end = home.last_handler_end.max(1) as f64;
    let compute: Vec<f64> = home
        .procs
        .iter()
        .filter(|p| p.role == finegrain_sim::ProcRole::Compute)
        .map(|p| p.cycles.compute as f64 / stats.sim_cycles.max(1) as f64)
        .collect();
    HomeMeasures {
        requests,
        throughput_msgs_per_us: requests as f64 / machine.cycles_to_us(end),
        mean_queue_delay_cycles: home.queue_delay.mean_cycles,
        p99_queue_delay_cycles: home.queue_delay.p99_cycles,
        pp_busy_wait_fraction: if busy + handler > 0 { busy as f64 / (busy + handler) as f64 } else { 0.0 },
        interrupts,
        home_u: if compute.is_empty() { 0.0 } else { compute.iter().sum::<f64>() / compute.len() as f64 },
        bus_transactions_per_request: home.bus.transactions as f64 / requests.max(1) as f64,
    }
}

/// The native home's protocol table holds fewer words than the simulated
/// one (which the workload checks): refuse more with the native range.
fn check_native_keys(table_bytes: u64, machine: &MachineConfig, cfg: &FetchAddConfig) -> Result<(), ConfigError> {
    let capacity = table_bytes / machine.protocol.block_bytes as u64;
    if cfg.keys == 0 || cfg.keys > capacity {
        let allowed = format!(
            "allowed 1..={capacity} on the native runtime (one protocol block per word in its {}-byte protocol table; more compute threads, or a preset with a larger cache.size_bytes, make room: each thread's segment is as large as its cache)",
            table_bytes
        );
        return Err(ConfigError::invalid("keys", cfg.keys, allowed));
    }
    Ok(())
}
