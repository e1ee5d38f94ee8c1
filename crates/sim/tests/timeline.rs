//! A recorded run's timeline: well-formed Chrome trace-event JSON that
//! accounts for the run, and a run whose statistics do not change for
//! being recorded.

use finegrain_core::{
    AmError, Args, HandlerId, HandlerInfo, HandlerTable, MachineConfig, Message, NodeId, Payload, Policy, Proc, Reply,
    Topology,
};
use finegrain_sim::timeline::chrome::{Bounds, ChromeTrace};
use finegrain_sim::timeline::recorded;
use finegrain_sim::{simulate, RunStats, SimConfig};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

fn info(name: &str) -> HandlerInfo {
    HandlerInfo { name: name.into(), body_cycles: 10, code_bytes: 128 }
}

fn echo_table() -> (HandlerTable, HandlerId) {
    let mut t = HandlerTable::new();
    let reply = t.register(info("echo_reply"), |_, _| Ok(())).unwrap();
    let request = t
        .register(info("echo"), move |ctx, m: &Message| {
            ctx.reply(Reply { handler: reply, args: Args::new(&[m.args.get(0)])?, payload: Payload::none() })
        })
        .unwrap();
    (t, request)
}

async fn pinger<P: Proc>(p: P, request: HandlerId, n: u64) -> Result<u64, AmError> {
    let peer = NodeId((p.node().0 + 1) % p.nodes());
    for i in 0..n {
        p.work(300 + i * 7 % 200).await;
        p.request(peer, request, Args::new(&[i])?, Payload::none()).await?;
    }
    Ok(n)
}

/// A run of 2 nodes of 2 processors under `policy` (interrupts under
/// Floating), recorded within `bounds` if given.
fn run(policy: Policy, bounds: Option<Bounds>) -> (RunStats, Option<Value>) {
    let m = MachineConfig::load("hpca97").unwrap();
    let mhz = m.processor.mhz as f64;
    let cfg = SimConfig::new(m, Topology { nodes: 2, procs_per_node: 2 }, policy, 3);
    let (table, request) = echo_table();
    let go = || simulate(&cfg, &table, |p| pinger(p, request, 40)).unwrap().stats;
    let Some(bounds) = bounds else { return (go(), None) };
    let trace = Rc::new(RefCell::new(ChromeTrace::new(bounds)));
    let stats = recorded(trace.clone(), go);
    let mut json = Vec::new();
    trace.borrow().write(&mut json, mhz, Value::Null).unwrap();
    (stats, Some(serde_json::from_slice(&json).unwrap()))
}

fn events(v: &Value) -> &Vec<Value> {
    v["traceEvents"].as_array().expect("traceEvents is an array")
}

fn of_ph<'v>(v: &'v Value, ph: &str) -> Vec<&'v Value> {
    events(v).iter().filter(|e| e["ph"] == ph).collect()
}

#[test]
fn a_recorded_timeline_is_well_formed_and_accounts_for_the_run() {
    for policy in [Policy::Fixed { protocol_procs: 1 }, Policy::Floating] {
        let (stats, trace) = run(policy, Some(Bounds::default()));
        let trace = trace.unwrap();
        let mhz = MachineConfig::load("hpca97").unwrap().processor.mhz as f64;
        let length_us = stats.sim_cycles as f64 / mhz;
        let named: BTreeSet<(u64, u64)> = of_ph(&trace, "M")
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
            .collect();
        assert_eq!(named.len(), 4, "{policy:?}: one named track per processor");
        let spans = of_ph(&trace, "X");
        for e in &spans {
            let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
            assert!(dur >= 0.0 && ts >= 0.0 && ts + dur <= length_us + 1e-9, "{policy:?}: {e}");
            assert!(named.contains(&(e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())), "{e}");
        }
        let handlers = spans.iter().filter(|e| e["cat"] == "handler").count() as u64;
        assert_eq!(handlers, stats.handlers, "{policy:?}: one span per handler run");
        // Every processor's activities cover the run, as its cycles do.
        let mut covered: BTreeMap<(u64, u64), f64> = BTreeMap::new();
        for e in spans.iter().filter(|e| e["cat"] == "processor") {
            let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            *covered.entry(track).or_default() += e["dur"].as_f64().unwrap();
        }
        for (track, us) in covered {
            assert!((us - length_us).abs() < 1e-6 * length_us, "{policy:?}: {track:?} covers {us} of {length_us}");
        }
        let starts: BTreeMap<u64, f64> =
            of_ph(&trace, "s").iter().map(|e| (e["id"].as_u64().unwrap(), e["ts"].as_f64().unwrap())).collect();
        let ends: BTreeMap<u64, f64> =
            of_ph(&trace, "f").iter().map(|e| (e["id"].as_u64().unwrap(), e["ts"].as_f64().unwrap())).collect();
        assert_eq!(starts.keys().collect::<Vec<_>>(), ends.keys().collect::<Vec<_>>(), "{policy:?}: flows paired");
        assert_eq!(starts.len() as u64, stats.messages, "{policy:?}: one flow per message");
        assert!(starts.iter().all(|(id, s)| *s <= ends[id]), "{policy:?}: a message arrives after it is sent");
        assert!(trace["otherData"].get("cut").is_none());
    }
}

#[test]
fn recording_changes_no_statistic() {
    let (plain, _) = run(Policy::Floating, None);
    let (traced, _) = run(Policy::Floating, Some(Bounds::default()));
    let json = |s: &RunStats| serde_json::to_value(s).unwrap();
    assert_eq!(json(&plain), json(&traced));
}

#[test]
fn a_timeline_keeps_its_window_and_its_limit_and_says_where_it_was_cut() {
    let mhz = MachineConfig::load("hpca97").unwrap().processor.mhz as f64;
    let (_, windowed) = run(Policy::Floating, Some(Bounds { window: (2_000, 6_000), max_events: usize::MAX }));
    let windowed = windowed.unwrap();
    for e in of_ph(&windowed, "X") {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 2_000.0 / mhz - 1e-9 && ts + dur <= 6_000.0 / mhz + 1e-9, "{e}");
    }
    assert!(!of_ph(&windowed, "X").is_empty());
    let (_, capped) = run(Policy::Floating, Some(Bounds { window: (0, u64::MAX), max_events: 50 }));
    let capped = capped.unwrap();
    let kept = events(&capped).iter().filter(|e| e["ph"] != "M" && e["ph"] != "i").count();
    assert!(kept <= 50, "{kept} events kept");
    assert!(capped["otherData"]["cut"].as_str().unwrap().contains("limit of 50 events"));
    assert_eq!(of_ph(&capped, "i").len(), 1, "the cut is marked on the timeline");
}
