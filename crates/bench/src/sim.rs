//! `finegrain bench sim`: simulator speed, as medians over repeated runs in
//! one process.
//!
//! Counting: a *message* is one active message delivered to a node (each
//! request and each reply counts once); an *event* is one entry popped from
//! the event queue. Rates are simulated quantities per second of wall
//! time on one core (runs are sequential).

use anyhow::Result;
use finegrain_apps::micro::{self, MicroConfig, Protocol};
use finegrain_apps::Sim;
use finegrain_core::{MachineConfig, Policy, Topology};
use finegrain_sim::SimConfig;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Instant;

#[derive(Debug, Serialize)]
pub struct SimBenchRow {
    /// What regenerates the runs: the preset and the seed of every run.
    pub preset: String,
    pub seed: u64,
    /// Lmin as measured for the run's protocol, which sets its mean
    /// compute time from `target_u`.
    pub lmin_cycles: f64,
    pub protocol: Protocol,
    pub policy: String,
    pub nodes: u32,
    pub procs_per_node: u32,
    pub target_u: f64,
    pub requests_per_node: u64,
    pub rounds: u32,
    pub messages_per_run: u64,
    pub events_per_run: u64,
    pub median_wall_seconds: f64,
    pub median_messages_per_second: f64,
    pub median_events_per_second: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The seed of every benchmarked run and of its Lmin measurement, so a
/// row regenerates with `finegrain run micro --u 0.5 --seed 42`.
const SEED: u64 = 42;

/// Most repetitions `bench sim` takes (each runs four configurations).
pub const MAX_ROUNDS: u32 = 1000;

/// Benchmarks the fetch-block and null microbenchmarks on 2 nodes x 2
/// processors under Fixed and Floating.
pub fn sim(rounds: u32, requests_per_node: u64) -> Result<Vec<SimBenchRow>> {
    if !(1..=MAX_ROUNDS).contains(&rounds) {
        anyhow::bail!(
            "invalid rounds = {rounds}: allowed 1..={MAX_ROUNDS} (the median of that many runs of each configuration is \
             reported)"
        );
    }
    let machine = MachineConfig::load("hpca97")?;
    let target_u = 0.5;
    let mut rows = Vec::new();
    for protocol in [Protocol::Fetch, Protocol::Null] {
        let lmin = micro::measure_lmin(&Sim::idle(&machine, SEED), protocol)?;
        for policy in [Policy::Fixed { protocol_procs: 1 }, Policy::Floating] {
            let cfg = Sim(SimConfig::new(machine.clone(), Topology { nodes: 2, procs_per_node: 2 }, policy, SEED));
            let work = MicroConfig {
                protocol,
                mean_compute_cycles: micro::mean_compute(target_u, lmin),
                requests_per_node,
                single_requester: false,
            };
            let mut walls = Vec::new();
            let (mut messages, mut events) = (0, 0);
            for _ in 0..rounds {
                let t0 = Instant::now();
                let out = micro::run(&cfg, &work)?;
                walls.push(t0.elapsed().as_secs_f64());
                messages = out.stats.messages;
                events = out.stats.events;
            }
            let wall = median(walls);
            rows.push(SimBenchRow {
                preset: machine.name.clone(),
                seed: SEED,
                lmin_cycles: lmin,
                protocol,
                policy: policy.label(),
                nodes: 2,
                procs_per_node: 2,
                target_u,
                requests_per_node,
                rounds,
                messages_per_run: messages,
                events_per_run: events,
                median_wall_seconds: wall,
                median_messages_per_second: messages as f64 / wall,
                median_events_per_second: events as f64 / wall,
            });
        }
    }
    Ok(rows)
}

pub fn sim_table(rows: &[SimBenchRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<8} {:<9} {:>6} {:>10} {:>10} {:>12} {:>14} {:>14}",
        "protocol", "policy", "nodes", "procs/node", "messages", "median s", "messages/s", "events/s"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<8} {:<9} {:>6} {:>10} {:>10} {:>12.4} {:>14.0} {:>14.0}",
            r.protocol.to_string(),
            r.policy,
            r.nodes,
            r.procs_per_node,
            r.messages_per_run,
            r.median_wall_seconds,
            r.median_messages_per_second,
            r.median_events_per_second
        );
    }
    s
}
