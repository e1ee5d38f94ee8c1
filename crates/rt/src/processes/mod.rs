//! Nodes as OS processes of one host (platform `shm`): the launcher
//! ([`launch`]), and what a node process does around the runtime's own
//! run: it finds its node in the environment, maps the shared memory,
//! meets the other node processes, watches them, and at the end leaves
//! its results for node 0, which gathers and checks them.

pub mod launch;

use crate::config::RtConfig;
use crate::runtime::{layout_of, run_nodes, RtError, RtOutput};
use crate::stats::{RtStats, ThreadTimes};
use crate::transport::shm::{
    self, MapLayout, Mapping, Peer, Shm, ShmNode, STATE_FAILED, STATE_REPORTED, STATE_RUNNING,
};
use crate::transport::Trouble;
use finegrain_core::{Platform, Ran, Workload};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The environment a launcher gives each node process: the shared
/// memory's descriptor, the node, and how many nodes it started.
pub const ENV_FD: &str = "FINEGRAIN_SHM_FD";
pub const ENV_NODE: &str = "FINEGRAIN_NODE";
pub const ENV_NODES: &str = "FINEGRAIN_NODES";

/// How long a node process waits for the others to start.
const START_WAIT: Duration = Duration::from_secs(30);
/// How long node 0 waits for a failed node to say why.
const WORDS_WAIT: Duration = Duration::from_millis(500);

/// What the launcher told this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeEnv {
    pub fd: i32,
    pub node: u32,
    pub nodes: u32,
}

impl NodeEnv {
    /// The node this process runs, if a launcher started it (None: no
    /// launcher; an error if the environment is malformed).
    pub fn from_env() -> Result<Option<NodeEnv>, String> {
        let get = |name: &str| std::env::var(name).ok();
        let (Some(fd), Some(node), Some(nodes)) = (get(ENV_FD), get(ENV_NODE), get(ENV_NODES)) else {
            return Ok(None);
        };
        let num = |name: &str, v: &str| -> Result<u32, String> {
            v.parse().map_err(|_| format!("invalid {name} = {v}: allowed a whole number (set by finegrain launch)"))
        };
        let env = NodeEnv { fd: num(ENV_FD, &fd)? as i32, node: num(ENV_NODE, &node)?, nodes: num(ENV_NODES, &nodes)? };
        if env.node >= env.nodes {
            return Err(format!("invalid {ENV_NODE} = {}: allowed 0..{} ({ENV_NODES})", env.node, env.nodes));
        }
        Ok(Some(env))
    }
}

/// Maps the run's memory (node 0 makes it), records this process and
/// waits until every node process has.
fn attach(cfg: &RtConfig, env: NodeEnv) -> Result<ShmNode, RtError> {
    let nodes = cfg.run.topology.nodes;
    if env.nodes != nodes {
        return Err(RtError::Setup(format!(
            "the launcher started {} node processes but the configuration has {nodes} nodes: launch exactly {nodes}",
            env.nodes
        )));
    }
    if cfg.compute_threads_per_node() as usize > shm::MAX_COMPUTE {
        return Err(RtError::Setup(format!(
            "{} compute threads per node: a shared-memory run allows at most {}",
            cfg.compute_threads_per_node(),
            shm::MAX_COMPUTE
        )));
    }
    let layout = MapLayout::of(&layout_of(cfg, env.node..env.node + 1));
    let map = if env.node == 0 { Mapping::create(env.fd, layout) } else { Mapping::attach(env.fd, layout, START_WAIT) };
    let map = Arc::new(map.map_err(RtError::Setup)?);
    let me = map.area(env.node);
    me.pid.store(std::process::id() as i32, Ordering::Release);
    me.state.store(STATE_RUNNING, Ordering::Release);
    let start = Instant::now();
    let mut peers = Vec::new();
    for n in (0..nodes).filter(|&n| n != env.node) {
        loop {
            let pid = map.area(n).pid.load(Ordering::Acquire);
            if pid != 0 {
                peers.push(Peer::open(n, pid as u32).map_err(RtError::Setup)?);
                break;
            }
            if start.elapsed() > START_WAIT {
                return Err(RtError::Setup(format!("node {n} did not start within {} s", START_WAIT.as_secs())));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Ok(ShmNode { map, node: env.node, peers })
}

/// Runs workloads with each node an OS process of this host, the nodes
/// exchanging messages through rings in shared memory. Every node process
/// runs the same program; node 0's [`Platform::run`] returns every node's
/// outputs and the whole run's statistics, the others' their own.
pub struct ShmPlatform<'c> {
    pub config: &'c RtConfig,
    pub env: NodeEnv,
}

impl ShmPlatform<'_> {
    /// Runs `spawn`'s future on each compute thread of this process's node
    /// (as [`crate::run`] does for a whole cluster in one process) and
    /// returns this node's results only: for programs outside the
    /// [`Workload`] interface, such as the runtime's own benchmarks.
    pub fn run_node<T, F, Fut>(&self, handlers: &finegrain_core::HandlerTable, spawn: F) -> Result<RtOutput<T>, RtError>
    where
        T: Send,
        F: Fn(crate::RtProc) -> Fut + Sync,
        Fut: std::future::Future<Output = Result<T, finegrain_core::AmError>>,
    {
        self.config.validate()?;
        let node = Arc::new(attach(self.config, self.env)?);
        let local = self.env.node..self.env.node + 1;
        let out =
            run_nodes::<_, Shm, _, _>(self.config, handlers, &node, local, spawn).map_err(|e| failed(&node, e))?;
        node.map.write_report(node.node, &[]).map_err(RtError::Setup)?;
        Ok(out)
    }
}

impl Platform for ShmPlatform<'_> {
    type Stats = RtStats;
    type Error = RtError;

    fn name(&self) -> &'static str {
        "shm"
    }

    fn run<W: Workload>(&self, workload: &W) -> Result<Ran<W::Output, RtStats>, RtError> {
        workload.across_processes()?;
        self.config.validate()?;
        let node = Arc::new(attach(self.config, self.env)?);
        let local = self.env.node..self.env.node + 1;
        let ran = run_nodes::<_, Shm, _, _>(self.config, workload.handlers(), &node, local, |p| workload.thread(p));
        let out = match ran {
            Ok(out) => out,
            Err(e) => return Err(failed(&node, e)),
        };
        let report = Report::of(workload, &out).map_err(RtError::Setup)?;
        node.map.write_report(node.node, &report).map_err(|e| failed(&node, RtError::Setup(e)))?;
        if node.node != 0 {
            return Ok(Ran { outputs: out.results, stats: out.stats });
        }
        gather(&node, workload, out)
    }
}

/// This node's run failed: the others learn why (or, if it failed for
/// one of them, that node's own words are fetched).
fn failed(node: &ShmNode, e: RtError) -> RtError {
    match e {
        RtError::PeerFailed { node: peer, .. } => {
            let start = Instant::now();
            loop {
                if let Some((n, Some(text))) = node.map.failure() {
                    return RtError::PeerFailed { node: n, error: text };
                }
                if start.elapsed() > WORDS_WAIT {
                    return RtError::PeerFailed { node: peer, error: String::new() };
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        RtError::PeerDied { .. } => {
            // Failed, not died: the others must look for the cause.
            node.map.area(node.node).state.store(STATE_FAILED, Ordering::Release);
            e
        }
        e => {
            node.map.announce_failure(node.node, &e.to_string());
            node.map.area(node.node).state.store(STATE_FAILED, Ordering::Release);
            e
        }
    }
}

/// Node 0: waits for every node's report, then checks the whole run.
fn gather<W: Workload>(
    node: &ShmNode,
    workload: &W,
    own: RtOutput<W::Output>,
) -> Result<Ran<W::Output, RtStats>, RtError> {
    let nodes = node.map.layout_nodes();
    let mut outputs = Vec::new();
    let mut stats = own.stats;
    let mut own_outputs = Some(own.results);
    for n in 0..nodes {
        if n == 0 {
            outputs.extend(own_outputs.take().into_iter().flatten());
            continue;
        }
        wait_reported(node, n)?;
        let report = Report::read(&node.map.read_report(n)).map_err(RtError::Setup)?;
        workload.absorb(&report.tally)?;
        for v in report.outputs {
            outputs.push(serde_json::from_value(v).map_err(|e| RtError::Setup(format!("node {n}'s outputs: {e}")))?);
        }
        stats = merge(stats, report.stats);
    }
    workload.check(&outputs)?;
    Ok(Ran { outputs, stats })
}

fn wait_reported(node: &ShmNode, n: u32) -> Result<(), RtError> {
    loop {
        if node.map.area(n).state.load(Ordering::Acquire) == STATE_REPORTED {
            return Ok(());
        }
        match node.trouble() {
            Some(Trouble::Died { node: n, pid }) => return Err(RtError::PeerDied { node: n, pid }),
            Some(Trouble::Failed { node: n }) => {
                return Err(failed(node, RtError::PeerFailed { node: n, error: String::new() }))
            }
            Some(Trouble::Corrupt { sender, node: to, head, .. }) => {
                let what =
                    format!("the ring from thread {sender} of the run to node {to} reads consumer position {head}");
                return Err(failed(node, RtError::Corrupt(what)));
            }
            None => std::thread::sleep(Duration::from_micros(200)),
        }
    }
}

/// Sums two processes' statistics (wall time: the longer).
pub(crate) fn merge(a: RtStats, b: RtStats) -> RtStats {
    let mut threads = a.threads;
    threads.extend(b.threads);
    RtStats {
        wall_ns: a.wall_ns.max(b.wall_ns),
        requests: a.requests + b.requests,
        messages: a.messages + b.messages,
        spilled: a.spilled + b.spilled,
        handlers: a.handlers + b.handlers,
        interrupts: a.interrupts + b.interrupts,
        threads,
    }
}

/// What a node process leaves for node 0.
pub(crate) struct Report {
    pub(crate) outputs: Vec<serde_json::Value>,
    pub(crate) tally: Vec<u64>,
    pub(crate) stats: RtStats,
}

impl Report {
    pub(crate) fn of<W: Workload>(workload: &W, out: &RtOutput<W::Output>) -> Result<Vec<u8>, String> {
        let outputs =
            out.results.iter().map(serde_json::to_value).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
        let s = &out.stats;
        let threads: Vec<Vec<u64>> = s.threads.iter().map(thread_words).collect();
        let totals = [s.wall_ns, s.requests, s.messages, s.spilled, s.handlers, s.interrupts];
        serde_json::to_vec(&(outputs, workload.tally(), totals, threads)).map_err(|e| e.to_string())
    }

    pub(crate) fn read(bytes: &[u8]) -> Result<Report, String> {
        type Wire = (Vec<serde_json::Value>, Vec<u64>, [u64; 6], Vec<Vec<u64>>);
        let (outputs, tally, t, threads): Wire =
            serde_json::from_slice(bytes).map_err(|e| format!("a node's report is malformed: {e}"))?;
        let threads =
            threads.iter().map(|w| thread_of(w)).collect::<Option<Vec<_>>>().ok_or("a node's report is malformed")?;
        let stats = RtStats {
            wall_ns: t[0],
            requests: t[1],
            messages: t[2],
            spilled: t[3],
            handlers: t[4],
            interrupts: t[5],
            threads,
        };
        Ok(Report { outputs, tally, stats })
    }
}

fn thread_words(t: &ThreadTimes) -> Vec<u64> {
    vec![
        t.node as u64,
        t.thread as u64,
        (t.role == "protocol") as u64,
        t.wall_ns,
        t.compute_ns,
        t.handler_ns,
        t.interrupt_ns,
        t.other_ns,
        t.wait_ns,
        t.idle_polling_ns,
        t.handlers,
        t.interrupts,
        t.sent,
        t.requests,
        t.spilled,
        t.work_chunks,
        t.parks,
        t.parks_woken,
    ]
}

fn thread_of(w: &[u64]) -> Option<ThreadTimes> {
    let w: &[u64; 18] = w.try_into().ok()?;
    Some(ThreadTimes {
        node: w[0] as u32,
        thread: w[1] as u32,
        role: if w[2] == 1 { "protocol" } else { "compute" },
        wall_ns: w[3],
        compute_ns: w[4],
        handler_ns: w[5],
        interrupt_ns: w[6],
        other_ns: w[7],
        wait_ns: w[8],
        idle_polling_ns: w[9],
        handlers: w[10],
        interrupts: w[11],
        sent: w[12],
        requests: w[13],
        spilled: w[14],
        work_chunks: w[15],
        parks: w[16],
        parks_woken: w[17],
    })
}

#[cfg(test)]
mod tests {
    //! Corrupt ring state in the shared mapping: two nodes of one process
    //! over one mapping, as two node processes would share it, with a
    //! ring's consumer position written over before the run.

    use super::*;
    use crate::transport::shm::create_memfd;
    use finegrain_core::{
        Args, HandlerId, HandlerInfo, HandlerTable, NodeId, Payload, Policy, Proc, SyncKey, Topology,
    };
    use std::sync::atomic::AtomicU64;
    use std::sync::mpsc;

    fn config(policy: Policy) -> RtConfig {
        let mut cfg = RtConfig::new(Topology { nodes: 2, procs_per_node: 2 }, policy);
        cfg.segment_bytes = 1 << 12;
        cfg.pin = false;
        cfg.ring_slots = 256;
        cfg.progress_timeout_ms = 1000;
        cfg
    }

    /// A one-way handler that does nothing.
    fn table() -> (HandlerTable, HandlerId) {
        let mut t = HandlerTable::new();
        let info = HandlerInfo { name: "null".into(), body_cycles: 0, code_bytes: 0 };
        let id = t.register(info, |_, _| Ok(())).unwrap();
        (t, id)
    }

    /// Both nodes of `cfg` over one fresh mapping, the consumer position
    /// of the ring (thread `sender` of the run, node `dst`) set to `head`.
    fn mapped(cfg: &RtConfig, sender: usize, dst: usize, head: u64) -> Arc<ShmNode> {
        let fd = create_memfd().unwrap();
        let map = Mapping::create(fd, MapLayout::of(&layout_of(cfg, 0..2))).unwrap();
        // SAFETY: the head word lies in the mapping and is an atomic.
        unsafe { (*map.ring_at(sender, dst).head_at.cast::<AtomicU64>()).store(head, Ordering::Release) };
        Arc::new(ShmNode { map: Arc::new(map), node: 0, peers: Vec::new() })
    }

    /// Runs `app` on both nodes in a thread of its own; what the run
    /// returned, or None if it did not end within `limit`.
    fn run_within<F, Fut>(cfg: RtConfig, place: Arc<ShmNode>, app: F, limit: Duration) -> Option<Result<(), String>>
    where
        F: Fn(crate::RtProc) -> Fut + Sync + Send + 'static,
        Fut: std::future::Future<Output = Result<(), finegrain_core::AmError>>,
    {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let (t, _) = table();
            let r = run_nodes::<_, Shm, _, _>(&cfg, &t, &place, 0..2, app);
            let _ = tx.send(r.map(drop).map_err(|e| e.to_string()));
        });
        rx.recv_timeout(limit).ok()
    }

    /// A producer that reads an impossible consumer position reports the
    /// ring (rather than wait for room that never comes).
    #[test]
    fn a_producer_that_reads_a_corrupt_head_ends_the_run_naming_the_ring() {
        let cfg = config(Policy::Single);
        let cfg = RtConfig {
            run: finegrain_core::RunConfig { topology: Topology { nodes: 2, procs_per_node: 1 }, ..cfg.run },
            ..cfg
        };
        // Thread 0 (node 0) to node 1: far past anything it wrote.
        let place = mapped(&cfg, 0, 1, 0xdead_beef_0000);
        let (_, null) = table();
        let r = run_within(
            cfg,
            place,
            move |p| async move {
                if p.node().0 == 0 {
                    for _ in 0..1000 {
                        Proc::send_keyed(&p, NodeId(1), null, SyncKey::NoSync, Args::default(), Payload::none())
                            .await?;
                    }
                } else {
                    // Away from the runtime: node 1 reads nothing for now,
                    // so the corrupt word stays.
                    std::thread::sleep(Duration::from_millis(500));
                }
                Ok(())
            },
            Duration::from_secs(20),
        );
        let err = r.expect("the run ends").expect_err("a corrupt ring fails the run");
        assert!(err.contains("shared memory is corrupt"), "{err}");
        assert!(
            err.contains("the ring from node 0 thread 0 to node 1 has its consumer position at 244837814042624"),
            "{err}"
        );
    }

    /// A consumer position that makes a node's inbox look non-empty for
    /// ever, on a ring nobody sends on: once every application has
    /// returned, the node's serving threads give up at the progress
    /// timeout instead of spinning.
    #[test]
    fn an_inbox_that_says_a_message_waits_for_ever_ends_the_run() {
        let cfg = config(Policy::Fixed { protocol_procs: 1 });
        // Node 1's protocol thread (thread 3 of the run) to its own node:
        // one lap on, where the empty slot 0 reads as full.
        let place = mapped(&cfg, 3, 1, cfg.ring_slots as u64);
        let (_, null) = table();
        let r = run_within(
            cfg,
            place,
            move |p| async move {
                Proc::send_keyed(&p, NodeId(1 - p.node().0), null, SyncKey::NoSync, Args::default(), Payload::none())
                    .await
            },
            Duration::from_secs(20),
        );
        let err = r.expect("the run ends").expect_err("a spin on corrupt state fails the run");
        assert!(err.contains("node 1's inbox said for the progress timeout of 1000 ms that a message waits"), "{err}");
    }
}
