//! Nodes as OS processes of one host (platform `shm`): a node process
//! finds its node in the environment its launcher ([`super::launch`])
//! gave it, maps the shared memory, meets the other node processes and
//! watches them; at the end it leaves its report in the mapping.

use super::Crossing;
use crate::config::RtConfig;
use crate::runtime::{layout_of, RtError};
use crate::transport::shm::{
    self, MapLayout, Mapping, Peer, Shm, ShmNode, STATE_FAILED, STATE_REPORTED, STATE_RUNNING,
};
use crate::transport::Trouble;
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

impl Crossing for Shm {
    const NAME: &'static str = "shm";
    type Env = NodeEnv;

    fn node(env: &NodeEnv) -> u32 {
        env.node
    }

    fn connect(config: &RtConfig, env: NodeEnv) -> Result<Arc<ShmNode>, RtError> {
        attach(config, env).map(Arc::new)
    }

    fn failed(place: &Arc<ShmNode>, e: RtError) -> RtError {
        failed(place, e)
    }

    /// Node 0 reports too: a node process that has reported has finished,
    /// where one that ends still running has died.
    fn leave_report(place: &Arc<ShmNode>, _config: &RtConfig, report: &[u8]) -> Result<(), RtError> {
        place.map.write_report(place.node, report).map_err(|e| failed(place, RtError::Setup(e)))
    }

    fn take_report(place: &Arc<ShmNode>, _config: &RtConfig, n: u32) -> Result<Vec<u8>, RtError> {
        wait_reported(place, n)?;
        Ok(place.map.read_report(n))
    }

    /// An empty report: this node process has finished.
    fn done(place: &Arc<ShmNode>) -> Result<(), RtError> {
        place.map.write_report(place.node, &[]).map_err(RtError::Setup)
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

#[cfg(test)]
mod tests {
    //! Corrupt ring state in the shared mapping: two nodes of one process
    //! over one mapping, as two node processes would share it, with a
    //! ring's consumer position written over before the run.

    use super::*;
    use crate::runtime::run_nodes;
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
