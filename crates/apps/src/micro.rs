//! The scheduling paper's microbenchmarks (Falsafi & Wood, HPCA 1997).
//!
//! Each compute thread loops: compute for an exponentially distributed time
//! with mean C (the platform interleaves random accesses to the thread's
//! private segment), send a request to the other node, wait for the reply.
//! - **null**: the request handler only replies; the lightest protocol.
//! - **fetch**: the request names a random protocol block of a thread's
//!   segment on the other node; the request handler reads the block, updates
//!   the block's entry in the protocol table and replies with the block; the
//!   reply handler deposits it in the requester's receive buffer, and the
//!   requester then reads it.
//!
//! The number of requests per node is fixed and split across the node's
//! compute threads, so adding compute processors divides the work.

use crate::Target;
use finegrain_core::config::{MAX_CYCLES, MAX_REQUESTS};
use finegrain_core::{
    Access, AmError, Args, ConfigError, HandlerId, HandlerInfo, HandlerTable, MachineConfig, Message, NodeId, Payload,
    Proc, Region, Reply, ThreadId,
};
use finegrain_core::{Ran, Workload, WorkloadError};
use finegrain_sim::SimConfig;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Which request/reply protocol the threads run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Null,
    Fetch,
}

impl Protocol {
    pub fn parse(s: &str) -> Result<Protocol, ConfigError> {
        match s {
            "null" => Ok(Protocol::Null),
            "fetch" => Ok(Protocol::Fetch),
            _ => Err(ConfigError::invalid("protocol", s, "allowed null, fetch")),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Protocol::Null => "null",
            Protocol::Fetch => "fetch",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Handler instruction counts of the two protocols, in cycles (software
/// costs, independent of the machine's memory system).
pub const NULL_REQUEST_CYCLES: u64 = 20;
pub const NULL_REPLY_CYCLES: u64 = 10;
pub const FETCH_REQUEST_CYCLES: u64 = 60;
pub const FETCH_REPLY_CYCLES: u64 = 30;
const HANDLER_CODE_BYTES: u32 = 256;
/// Largest protocol block the fetch-block benchmark moves.
pub const MAX_BLOCK_BYTES: u32 = 4096;
static ZEROS: [u8; MAX_BLOCK_BYTES as usize] = [0; MAX_BLOCK_BYTES as usize];

/// One microbenchmark run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MicroConfig {
    pub protocol: Protocol,
    /// Mean of the exponentially distributed compute time between requests.
    pub mean_compute_cycles: f64,
    /// Requests issued by each node, split across its compute threads.
    pub requests_per_node: u64,
    /// Only thread 0 of node 0 issues requests (the idle-machine round trip
    /// used for calibration).
    pub single_requester: bool,
}

impl MicroConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.mean_compute_cycles >= 0.0 && self.mean_compute_cycles <= MAX_CYCLES as f64) {
            return Err(ConfigError::invalid(
                "mean_compute_cycles",
                format!("{:?}", self.mean_compute_cycles),
                format!("allowed 0..={MAX_CYCLES}"),
            ));
        }
        if !(1..=MAX_REQUESTS).contains(&self.requests_per_node) {
            return Err(ConfigError::invalid(
                "requests_per_node",
                self.requests_per_node,
                format!("allowed 1..={MAX_REQUESTS}"),
            ));
        }
        Ok(())
    }

    /// Iterations thread `t` of `threads` runs: an even split, the first
    /// threads taking the remainder, so the node total is exact (and none
    /// for a thread that is not one of them).
    pub fn iterations(&self, t: u32, threads: u32) -> u64 {
        if t >= threads {
            return 0;
        }
        let base = self.requests_per_node / threads as u64;
        base + u64::from((t as u64) < self.requests_per_node % threads as u64)
    }
}

/// The protocol's handlers and what they need to know about the machine.
#[derive(Clone, Debug)]
pub struct MicroHandlers {
    pub request: HandlerId,
    pub reply: HandlerId,
    pub block_bytes: u32,
    pub blocks_per_segment: u64,
}

/// Registers the handlers of `protocol` for `machine`.
pub fn handlers(protocol: Protocol, machine: &MachineConfig) -> Result<(HandlerTable, MicroHandlers), AmError> {
    let mut table = HandlerTable::new();
    let block_bytes = machine.protocol.block_bytes;
    // The runners refuse such a preset first; this keeps the handler's
    // reply inside its static buffer whoever registers it.
    block_fits(protocol, machine)
        .map_err(|e| AmError::HandlerFailed { handler: "fetch_request".into(), reason: e.to_string() })?;
    let blocks_per_segment = machine.blocks_per_segment();
    let entry_bytes = machine.protocol.table_entry_bytes;
    let info = |name: &str, body_cycles| HandlerInfo { name: name.into(), body_cycles, code_bytes: HANDLER_CODE_BYTES };
    let (request, reply) = match protocol {
        Protocol::Null => {
            let reply = table.register(info("null_reply", NULL_REPLY_CYCLES), |_, _| Ok(()))?;
            let request = table.register(info("null_request", NULL_REQUEST_CYCLES), move |ctx, _| {
                ctx.reply(Reply { handler: reply, args: Args::default(), payload: Payload::none() })
            })?;
            (request, reply)
        }
        Protocol::Fetch => {
            let reply = table.register(info("fetch_reply", FETCH_REPLY_CYCLES), move |ctx, m: &Message| {
                // The handler stores the whole block, so the cache claims
                // its lines without reading them.
                ctx.access(Region::RecvBuffer(m.src_thread), 0, block_bytes, Access::Overwrite);
                Ok(())
            })?;
            let request = table.register(info("fetch_request", FETCH_REQUEST_CYCLES), move |ctx, m: &Message| {
                let owner = ThreadId(m.args.get(0) as u32);
                let block = m.args.get(1);
                ctx.access(Region::Segment(owner), block * block_bytes as u64, block_bytes, Access::Read);
                let entry = (owner.0 as u64 * blocks_per_segment + block) * entry_bytes as u64;
                ctx.access(Region::ProtocolTable, entry, entry_bytes, Access::Write);
                // The block's contents do not matter to the benchmark; its
                // size does. Replying from a static buffer allocates
                // nothing, so the handler may run in interrupt context.
                ctx.reply_bytes(reply, Args::new(&[block])?, &ZEROS[..block_bytes as usize])
            })?;
            (request, reply)
        }
    };
    Ok((table, MicroHandlers { request, reply, block_bytes, blocks_per_segment }))
}

/// One compute thread of the microbenchmark; returns the requests it
/// completed.
pub async fn thread<P: Proc>(p: &P, cfg: &MicroConfig, h: &MicroHandlers) -> Result<u64, AmError> {
    if cfg.single_requester && (p.node().0 != 0 || p.thread().0 != 0) {
        return Ok(0);
    }
    let iterations = cfg.iterations(p.thread().0, p.threads_per_node());
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed());
    let compute =
        (cfg.mean_compute_cycles > 0.0).then(|| Exp::new(1.0 / cfg.mean_compute_cycles).expect("positive rate"));
    let peer = NodeId((p.node().0 + 1) % p.nodes());
    // The peer node has as many compute threads as this one (SPMD).
    let owner = p.thread().0 % p.threads_per_node();
    for _ in 0..iterations {
        if let Some(exp) = &compute {
            let c = exp.sample(&mut rng).round() as u64;
            if c > 0 {
                p.work(c).await;
            }
        }
        match cfg.protocol {
            Protocol::Null => {
                p.request(peer, h.request, Args::default(), Payload::none()).await?;
            }
            Protocol::Fetch => {
                let block = rng.gen_range(0..h.blocks_per_segment);
                p.request(peer, h.request, Args::new(&[owner as u64, block])?, Payload::none()).await?;
                p.access(Region::RecvBuffer(p.thread()), 0, h.block_bytes, Access::Read).await;
            }
        }
    }
    Ok(iterations)
}

/// The fetch-block benchmark's reply carries the block as its payload, so
/// the preset's block must fit in one.
pub fn block_fits(protocol: Protocol, machine: &MachineConfig) -> Result<(), ConfigError> {
    let block_bytes = machine.protocol.block_bytes;
    if protocol == Protocol::Fetch && block_bytes > MAX_BLOCK_BYTES {
        return Err(ConfigError::invalid(
            "protocol.block_bytes",
            block_bytes,
            format!(
                "the fetch-block benchmark moves a block in one message; allowed a power of two from \
                 cache.line_bytes to {MAX_BLOCK_BYTES}"
            ),
        ));
    }
    Ok(())
}

/// The fetch-block handler picks blocks across the preset's segment (as
/// large as its cache), so a thread's segment (`segment_bytes`) must hold
/// that many.
pub fn segment_fits(segment_bytes: u64, machine: &MachineConfig) -> Result<(), ConfigError> {
    let needed = machine.segment_bytes();
    if segment_bytes < needed {
        return Err(ConfigError::invalid(
            "segment_bytes",
            segment_bytes,
            format!(
                "the microbenchmark's segment is as large as preset {}'s cache; allowed at least {needed}",
                machine.name
            ),
        ));
    }
    Ok(())
}

/// Requests go to another node, so a run needs two nodes.
pub fn two_nodes_at_least(nodes: u32) -> Result<(), ConfigError> {
    let most = finegrain_core::config::MAX_NODES;
    if !(2..=most).contains(&nodes) {
        return Err(ConfigError::invalid("nodes", nodes, format!("allowed 2..={most} (requests go to another node)")));
    }
    Ok(())
}

/// The mean compute time that gives compute utilization `u` = C / (C +
/// Lmin) against a round trip of `lmin`: C = U / (1 - U) x Lmin.
pub fn mean_compute(u: f64, lmin: f64) -> f64 {
    u / (1.0 - u) * lmin
}

/// Requests a run makes in all (each is answered once): one requester's
/// alone when only it issues.
pub fn total_requests(sim: &SimConfig, cfg: &MicroConfig) -> u64 {
    if cfg.single_requester {
        return cfg.requests_per_node;
    }
    cfg.requests_per_node.saturating_mul(sim.run.topology.nodes as u64)
}

/// The microbenchmark as a [`Workload`], set up for one machine: its
/// handlers, and the count of requests its threads complete, checked
/// against what every node must make.
pub struct Micro {
    cfg: MicroConfig,
    table: HandlerTable,
    h: MicroHandlers,
    completed: AtomicU64,
    nodes: AtomicU32,
}

impl Micro {
    /// Checks `cfg` against `machine` and registers the handlers.
    pub fn new(cfg: &MicroConfig, machine: &MachineConfig) -> Result<Micro, WorkloadError> {
        cfg.validate()?;
        block_fits(cfg.protocol, machine)?;
        let (table, h) = handlers(cfg.protocol, machine)?;
        Ok(Micro { cfg: cfg.clone(), table, h, completed: AtomicU64::new(0), nodes: AtomicU32::new(0) })
    }
}

impl Workload for Micro {
    type Output = u64;

    fn name(&self) -> &'static str {
        "micro"
    }

    fn handlers(&self) -> &HandlerTable {
        &self.table
    }

    async fn thread<P: Proc>(&self, p: P) -> Result<u64, AmError> {
        self.nodes.store(p.nodes(), Ordering::Relaxed);
        let done = thread(&p, &self.cfg, &self.h).await?;
        self.completed.fetch_add(done, Ordering::Relaxed);
        Ok(done)
    }

    fn tally(&self) -> Vec<u64> {
        vec![self.completed.load(Ordering::Relaxed)]
    }

    fn absorb(&self, tally: &[u64]) -> Result<(), WorkloadError> {
        let [completed] = tally else {
            return Err(WorkloadError::WrongAnswer {
                workload: "micro",
                what: format!("another process's tally has {} counters, not 1", tally.len()),
            });
        };
        self.completed.fetch_add(*completed, Ordering::Relaxed);
        Ok(())
    }

    /// Every node completed its requests (the single requester all of
    /// node 0's), each answered once.
    fn check(&self, outputs: &[u64]) -> Result<(), WorkloadError> {
        let nodes = u64::from(self.nodes.load(Ordering::Relaxed));
        let expected =
            if self.cfg.single_requester { self.cfg.requests_per_node } else { self.cfg.requests_per_node * nodes };
        let returned: u64 = outputs.iter().sum();
        let completed = self.completed.load(Ordering::Relaxed);
        if returned != expected || completed != expected {
            return Err(WorkloadError::WrongAnswer {
                workload: "micro",
                what: format!("{completed} requests completed ({returned} returned) where {expected} were made"),
            });
        }
        Ok(())
    }
}

/// Runs the microbenchmark on `on` (natively a `work` cycle lasts
/// `ns_per_cycle` nanoseconds) and checks every request was answered.
pub fn run<P: Target>(on: &P, cfg: &MicroConfig) -> Result<Ran<u64, P::Stats>, P::Error> {
    // The platform first: the workload's checks and handlers size things
    // from its machine (a zero block size would divide by zero).
    on.validate()?;
    two_nodes_at_least(on.run_config().topology.nodes).map_err(WorkloadError::from)?;
    segment_fits(on.segment_bytes(), on.machine()).map_err(WorkloadError::from)?;
    on.run(&Micro::new(cfg, on.machine())?)
}

/// Lmin: the round trip of one request and its reply (including using the
/// fetched data) on an otherwise idle cluster of `on`'s machine (2 nodes x
/// 2 processors under Fixed, one requester), on the platform's clock.
pub fn measure_lmin<P: Target>(on: &P, protocol: Protocol) -> Result<f64, P::Error> {
    let (pair, round_trips) = on.idle_pair();
    let cfg =
        MicroConfig { protocol, mean_compute_cycles: 0.0, requests_per_node: round_trips, single_requester: true };
    let out = run(&pair, &cfg)?;
    Ok(pair.first_thread_time(&out.stats) / round_trips as f64)
}
