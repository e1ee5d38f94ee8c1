// Where a DSM application's protocol occupancy goes, handler by handler:
// one run of em3d, fft or radix at the quick input on preset hpca99 (8
// nodes x 8 processors, 64-byte blocks) under one system, traced, with
// each handler's runs, their total time (from dispatch to the end of its
// activity, sends included) and its share of all handler time.
//
// It measures what the handlers HPCA 1999's Stache does not show cost
// (the data acknowledgement, `dsm-data-ack`, among them), and then the
// protocol's other work beyond the paper's: invalidations and fetches put
// back in the queue while a block is held for the thread it just arrived
// for (their runs found in the trace: the message each sends to its own
// node), and upgrades: writes granted to a current read-only copy, which
// carry no data (until 2026-12-07 they carried the whole block; a grant
// that still does is counted with its payload's injection cycles):
//
//   cargo run --release -p finegrain-apps --example handler_occupancy -- fft hurricane-1pp
use finegrain_apps::dsm::spec::ProgramSpec;
use finegrain_apps::dsm::{DsmProgram, DsmWorkload};
use finegrain_apps::splitc::spec::Size;
use finegrain_core::config::ServingSystem;
use finegrain_core::{MachineConfig, Platform, Policy, Topology, Workload};
use finegrain_dsm::DsmConfig;
use finegrain_sim::stats::TraceEvent;
use finegrain_sim::{SimConfig, Simulator};
use std::collections::BTreeMap;

const SEED: u64 = 1999;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [app, system] = args.as_slice() else {
        return Err("usage: handler_occupancy APP SYSTEM (APP em3d, fft or radix; SYSTEM a pdq-dsm label)".into());
    };
    let system = ServingSystem::parse(system)?;
    let program = ProgramSpec::named(app, Size::Quick, SEED)?;
    match program {
        ProgramSpec::Em3d(p) => report(p, system),
        ProgramSpec::Fft(p) => report(p, system),
        ProgramSpec::Radix(p) => report(p, system),
        _ => Err(format!("{app}: allowed em3d, fft or radix").into()),
    }
}

fn report<G: DsmProgram + Clone>(program: G, system: ServingSystem) -> Result<(), Box<dyn std::error::Error>> {
    let machine = MachineConfig::load("hpca99")?;
    let costs = machine.dsm.clone().ok_or("hpca99 has no [dsm] section")?;
    let mut cfg = SimConfig::new(machine, Topology { nodes: 8, procs_per_node: 8 }, Policy::Single, SEED);
    system.apply(&mut cfg.run, 8);
    cfg.trace_handlers = true;
    let dsm = DsmConfig { block_bytes: 64, costs, ..DsmConfig::default() };
    let threads = cfg.run.policy.compute_procs(cfg.run.topology.procs_per_node);
    let workload = DsmWorkload::new(program, 8, threads, dsm)?;
    let ran = Simulator { config: &cfg }.run(&workload)?;
    let names: BTreeMap<u32, String> =
        workload.handlers().infos().map(|(id, info)| (id.0 as u32, info.name.clone())).collect();
    let mut by_name: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for e in &ran.stats.trace {
        if let TraceEvent::Handler { handler, start, end, .. } = *e {
            let name = names.get(&handler).map_or("?", String::as_str);
            let entry = by_name.entry(name).or_default();
            entry.0 += 1;
            entry.1 += end - start;
        }
    }
    let total: u64 = by_name.values().map(|v| v.1).sum();
    println!("{system} on hpca99, 8x8, 64-byte blocks, quick input, seed {SEED}: handler time by handler");
    println!("{:<22} {:>9} {:>14} {:>12} {:>7}", "handler", "runs", "cycles", "per run", "share");
    let mut rows: Vec<_> = by_name.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1 .1));
    for (name, (runs, cycles)) in rows {
        let share = 100.0 * cycles as f64 / total.max(1) as f64;
        println!("{name:<22} {runs:>9} {cycles:>14} {:>12.1} {share:>6.1}%", cycles as f64 / runs as f64);
    }
    println!("{:<22} {:>9} {total:>14}", "all", "");
    beyond_stache(&workload, &ran.stats.trace, &names, &cfg, total);
    Ok(())
}

/// The held re-queues' handler time and the upgrades' wasted payload, as
/// shares of all handler time.
fn beyond_stache<G: DsmProgram>(
    workload: &DsmWorkload<G>,
    trace: &[TraceEvent],
    names: &BTreeMap<u32, String>,
    cfg: &SimConfig,
    total: u64,
) {
    let counts = workload.dsm().protocol_counts();
    let requeued = |h: u32| names.get(&h).is_some_and(|n| n == "dsm-inv" || n == "dsm-fetch");
    let mut requeue_cycles = 0;
    for e in trace {
        // Only a held block makes a node send an invalidation or fetch to
        // itself; the run that sent it is that node's run of the same
        // handler under way when the message left.
        let TraceEvent::Message { handler, src, dst, from, .. } = *e else { continue };
        if src != dst || !requeued(handler) {
            continue;
        }
        let run = trace.iter().find_map(|r| match *r {
            TraceEvent::Handler { node, handler: h, start, end, .. }
                if node == src && h == handler && start <= from && from <= end =>
            {
                Some(end - start)
            }
            _ => None,
        });
        requeue_cycles += run.unwrap_or(0);
    }
    let share = |c: u64| 100.0 * c as f64 / total.max(1) as f64;
    let block = workload.dsm().config().block_bytes as u64;
    let upgrade_cycles = counts.upgrades_with_data * block * cfg.machine.network.payload_cycles_per_byte;
    println!();
    println!("beyond the paper's Stache ({} blocks placed at requesters):", counts.blocks_placed);
    println!(
        "held re-queues         {:>9} {requeue_cycles:>14} {:>12.1} {:>6.1}%",
        counts.held_requeues,
        requeue_cycles as f64 / counts.held_requeues.max(1) as f64,
        share(requeue_cycles)
    );
    println!("upgrades (no data)     {:>9}", counts.upgrades);
    println!(
        "upgrades with data     {:>9} {upgrade_cycles:>14} {:>12.1} {:>6.1}%  (payload injection only; {:.1}% of blocks placed)",
        counts.upgrades_with_data,
        (block * cfg.machine.network.payload_cycles_per_byte) as f64,
        share(upgrade_cycles),
        100.0 * counts.upgrades_with_data as f64 / counts.blocks_placed.max(1) as f64
    );
}
