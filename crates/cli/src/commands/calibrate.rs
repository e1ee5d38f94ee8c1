//! `finegrain calibrate`: a preset's calibration targets measured back.

use crate::say;
use anyhow::{bail, Result};
use finegrain_apps::dsm::spec::handler_costs;
use finegrain_apps::micro::{self, Protocol};
use finegrain_core::config::DsmSystem;
use finegrain_core::config::{Ledger, ProvenanceKind};
use finegrain_core::{DmaCalibration, HandlerTable, MachineConfig, Proc};
use finegrain_dsm::{Dsm, DsmConfig, Home};
use finegrain_sim::stats::TraceEvent;
use finegrain_sim::SimConfig;

/// The seed `finegrain calibrate` measures Lmin with.
const CALIBRATION_SEED: u64 = 1;

/// Ping-pong round trips the bare DMA flag time is averaged over.
const DMA_ROUNDS: u64 = 100;

pub fn calibrate(preset: &str) -> Result<()> {
    let machine = MachineConfig::load(preset)?;
    print_ledger(&machine)?;
    if let Some(cal) = machine.dma_calibration.clone() {
        return calibrate_dma(&machine, &cal);
    }
    if machine.dsm.is_some() && machine.calibration.is_none() {
        return calibrate_remote_miss(&machine);
    }
    let Some(cal) = machine.calibration.clone() else {
        bail!("preset {preset} has no [calibration] or [dma_calibration] targets to measure");
    };
    say!(
        "preset {}: Lmin under Fixed on an idle machine (2 nodes x 2 processors, one requester, seed {CALIBRATION_SEED})",
        machine.name
    );
    say!("{:<10} {:>12} {:>10} {:>11} {:>8}  ok", "protocol", "cycles", "us", "target us", "error");
    let mut bad = Vec::new();
    for (p, target) in [(Protocol::Null, cal.lmin_null_us), (Protocol::Fetch, cal.lmin_fetch_us)] {
        let l = micro::measure_lmin(&machine, p, CALIBRATION_SEED)?;
        let us = machine.cycles_to_us(l);
        let err = (us - target) / target;
        let ok = err.abs() <= cal.tolerance;
        say!(
            "{:<10} {:>12.1} {:>10.3} {:>11.3} {:>7.1}%  {}",
            p.to_string(),
            l,
            us,
            target,
            err * 100.0,
            if ok { "yes" } else { "NO" }
        );
        if !ok {
            bad.push(p.to_string());
        }
    }
    if !bad.is_empty() {
        bail!(
            "Lmin of {} is off its target by more than calibration.tolerance = {} (a fraction of the target)",
            bad.join(", "),
            cal.tolerance
        );
    }
    Ok(())
}

/// The preset's ledger, kind by kind: what the paper states, what follows
/// from it, what was fitted to a stated primitive number (measured back
/// below), and the estimates with the verdicts that move with them.
fn print_ledger(machine: &MachineConfig) -> Result<()> {
    let ledger = &machine.ledger;
    if ledger.is_empty() {
        say!("preset {}: no [ledger] (a preset of one's own may leave it out)", machine.name);
        say!("");
        return Ok(());
    }
    say!("preset {}: where each of its {} parameters comes from ({})", machine.name, ledger.0.len(), counts(ledger));
    for kind in ProvenanceKind::ALL {
        if ledger.of_kind(kind).next().is_none() {
            continue;
        }
        say!("");
        say!("{}:", kind.name());
        for (path, p) in ledger.of_kind(kind) {
            say!("  {path:<36} {}", p.source);
            if let Some(moves) = &p.moves {
                say!("  {:<36} moves: {moves}", "");
            }
        }
    }
    say!("");
    Ok(())
}

fn counts(ledger: &Ledger) -> String {
    ProvenanceKind::ALL
        .iter()
        .map(|&k| format!("{} {}", ledger.of_kind(k).count(), k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A co-processor preset: the one-way time of a flag moved by bare DMA
/// between two main processors, half the round trip of a ping-pong on the
/// co-processor model (the IPPS 1996 paper's Section 5.1 method).
fn calibrate_dma(machine: &MachineConfig, cal: &DmaCalibration) -> Result<()> {
    say!(
        "preset {}: one-way time of a flag moved by bare DMA (2 nodes, half the round trip of {DMA_ROUNDS} ping-pongs)",
        machine.name
    );
    say!("{:<10} {:>12} {:>10} {:>11} {:>8}  ok", "operation", "cycles", "us", "target us", "error");
    let cycles = finegrain_sim::coproc::dma_flag_one_way(machine, DMA_ROUNDS)?;
    let us = machine.cycles_to_us(cycles);
    let err = (us - cal.flag_one_way_us) / cal.flag_one_way_us;
    let ok = err.abs() <= cal.tolerance;
    say!(
        "{:<10} {:>12.1} {:>10.3} {:>11.3} {:>7.1}%  {}",
        "dma-flag",
        cycles,
        us,
        cal.flag_one_way_us,
        err * 100.0,
        if ok { "yes" } else { "NO" }
    );
    if !ok {
        bail!(
            "the bare DMA flag's one-way time is off its target by more than dma_calibration.tolerance = {} (a \
             fraction of the target)",
            cal.tolerance
        );
    }
    print_coproc_primitives(machine)
}

/// The rest of what the co-processor paper states about its primitives
/// (Table 1's round trips, Figure 3's values), measured back with each
/// residual, then the fit of the preset's fitted unknowns to Figure 3
/// done again: a preset at the fit's fixed point prints the same values.
fn print_coproc_primitives(machine: &MachineConfig) -> Result<()> {
    use finegrain_apps::coproc_primitives::{fit, measure};
    say!("");
    say!("stated primitive numbers (IPPS 1996 Table 1 round trips, Figure 3 as Section 5.2 gives it), measured:");
    print_targets(&measure(machine)?)?;
    say!("");
    say!("fit of the unknowns to Figure 3 (Table 1 held out), again from this preset:");
    let f = fit(machine)?;
    for (field, v) in &f.values {
        say!("  {field} = {v}");
    }
    say!("  root-mean-square ln(measured / paper) over Figure 3: {:.3}", f.rms_log_error);
    print_targets(&f.targets)
}

fn print_targets(targets: &[finegrain_apps::coproc_primitives::Target]) -> Result<()> {
    say!("{:<34} {:>10} {:>10} {:>8}", "primitive", "measured", "paper", "error");
    for t in targets {
        say!("{:<34} {:>10.1} {:>10.1} {:>7.1}%  {}", t.name, t.measured, t.paper, t.error() * 100.0, t.unit);
    }
    Ok(())
}

/// The steps of a remote read miss of a 64-byte block on an idle machine,
/// and each system's cycles for them (400 MHz cycles): HPCA 1999 Section
/// 5.1, Table 1. The systems are S-COMA, Hurricane and Hurricane-1.
pub const REMOTE_MISS_STEPS: [(&str, [u64; 3]); 12] = [
    ("requester: detect miss, issue bus transaction", [5, 5, 5]),
    ("requester: dispatch handler", [12, 16, 87]),
    ("requester: get fault state, send", [0, 36, 141]),
    ("network", [100, 100, 100]),
    ("home: dispatch handler", [1, 3, 51]),
    ("home: directory lookup", [8, 61, 121]),
    ("home: fetch data, change tag, send", [136, 140, 205]),
    ("network", [100, 100, 100]),
    ("requester: dispatch handler", [1, 4, 50]),
    ("requester: place data, change tag", [8, 50, 63]),
    ("requester: resume, reissue bus transaction", [6, 6, 178]),
    ("requester: fetch data, complete load", [63, 63, 63]),
];

/// The paper's totals (Table 1's last row).
pub const REMOTE_MISS_TOTALS: [u64; 3] = [440, 584, 1164];

/// The systems of Table 1's columns, one protocol processor each.
pub const REMOTE_MISS_SYSTEMS: [DsmSystem; 3] =
    [DsmSystem::Scoma, DsmSystem::Hurricane { pps: 1 }, DsmSystem::Hurricane1 { pps: 1 }];

/// How far a measured total may be from the paper's (a fraction of it).
pub const REMOTE_MISS_TOLERANCE: f64 = 0.10;

/// Measures one remote read miss of a 64-byte block under `system` on an
/// idle 2-node machine (one compute thread per node; the block is homed on
/// node 0, node 1 reads it): the cycles of each of Table 1's steps, from
/// the run's trace.
pub fn remote_miss_steps(machine: &MachineConfig, system: DsmSystem) -> Result<[u64; 12]> {
    let Some(params) = &machine.dsm else {
        bail!("preset {} has no [dsm] table of handler instructions", machine.name);
    };
    let mut cfg = SimConfig::new(
        machine.clone(),
        finegrain_core::Topology { nodes: 2, procs_per_node: 1 },
        finegrain_core::Policy::Single,
        CALIBRATION_SEED,
    );
    system.apply(&mut cfg.run, 1);
    cfg.trace_handlers = true;
    let dsm_cfg = DsmConfig { block_bytes: 64, costs: handler_costs(params), ..DsmConfig::default() };
    let block_words = dsm_cfg.block_bytes as u64 / 8;
    let mut table = HandlerTable::new();
    let mut b = Dsm::builder(2, 1, dsm_cfg)?;
    let a = b.alloc(4 * block_words, Home::Node(0));
    let dsm = b.register(&mut table)?;
    let out = finegrain_sim::simulate(&cfg, &table, |p| {
        let dsm = dsm.clone();
        async move {
            if p.node().0 != 1 {
                return Ok((0, 0));
            }
            let d = dsm.on(&p)?;
            // A first miss on the same page maps it (page allocation is no
            // step of Table 1's) and its acknowledgement settles at the home.
            d.read(a, block_words).await?;
            p.work(5000).await;
            let t0 = p.now();
            d.read(a, 0).await?;
            Ok((t0, p.now()))
        }
    })?;
    let (t0, t1) = out.results[1];
    let name = |h: u32| table.infos().find(|(id, _)| id.0 as u32 == h).map_or("", |(_, i)| i.name.as_str());
    let trace: Vec<TraceEvent> = out.stats.trace.into_iter().filter(|e| starts(e) >= t0).collect();
    let message = |handler: &str| {
        trace.iter().find_map(|e| match *e {
            TraceEvent::Message { handler: h, injected, arrive, .. } if name(h) == handler => Some((injected, arrive)),
            _ => None,
        })
    };
    let handled = |handler: &str| {
        trace.iter().find_map(|e| match *e {
            TraceEvent::Handler { handler: h, body, first_global, done, .. } if name(h) == handler => {
                Some((body, first_global, done))
            }
            _ => None,
        })
    };
    let access = trace.iter().find_map(|e| match *e {
        TraceEvent::Access { node: 1, global: true, start, end, .. } => Some((start, end)),
        _ => None,
    });
    let missing = |what: &str| anyhow::anyhow!("the remote miss under {system} left no {what} in its trace");
    let (fault_sent, _) = message("dsm-fault").ok_or_else(|| missing("block access fault"))?;
    let (fault_body, _, _) = handled("dsm-fault").ok_or_else(|| missing("fault handler"))?;
    let (get_sent, get_arrive) = message("dsm-get").ok_or_else(|| missing("request"))?;
    let (get_body, get_global, _) = handled("dsm-get").ok_or_else(|| missing("home handler"))?;
    let get_global = get_global.ok_or_else(|| missing("read of the block at the home"))?;
    let (data_sent, data_arrive) = message("dsm-data").ok_or_else(|| missing("data message"))?;
    let (data_body, _, data_done) = handled("dsm-data").ok_or_else(|| missing("data handler"))?;
    let (load, loaded) = access.ok_or_else(|| missing("load by the thread"))?;
    let marks = [
        t0,
        fault_sent,
        fault_body,
        get_sent,
        get_arrive,
        get_body,
        get_global,
        data_sent,
        data_arrive,
        data_body,
        data_done,
        load,
        loaded,
    ];
    if marks.windows(2).any(|w| w[1] < w[0]) || loaded != t1 {
        bail!("the remote miss under {system} has its steps out of order: {marks:?} (the read ended at {t1})");
    }
    let mut steps = [0; 12];
    for (i, w) in marks.windows(2).enumerate() {
        steps[i] = w[1] - w[0];
    }
    Ok(steps)
}

/// When a trace entry's step began.
fn starts(e: &TraceEvent) -> u64 {
    match *e {
        TraceEvent::Message { from, .. } => from,
        TraceEvent::Handler { start, .. } => start,
        TraceEvent::Access { start, .. } => start,
    }
}

/// `finegrain calibrate hpca99`: a remote read miss under S-COMA,
/// Hurricane and Hurricane-1 (one protocol processor each), step by step
/// against HPCA 1999 Table 1.
fn calibrate_remote_miss(machine: &MachineConfig) -> Result<()> {
    say!(
        "preset {}: remote read miss of a 64-byte block on an idle machine (2 nodes, 1 compute thread each, seed \
         {CALIBRATION_SEED}), measured / HPCA 1999 Table 1, in cycles",
        machine.name
    );
    let measured: Vec<[u64; 12]> =
        REMOTE_MISS_SYSTEMS.iter().map(|&s| remote_miss_steps(machine, s)).collect::<Result<_>>()?;
    say!("{:<44} {:>13} {:>13} {:>13}", "step", "s-coma", "hurricane", "hurricane-1");
    for (i, (step, paper)) in REMOTE_MISS_STEPS.iter().enumerate() {
        let cell = |k: usize| format!("{} / {}", measured[k][i], paper[k]);
        say!("{:<44} {:>13} {:>13} {:>13}", step, cell(0), cell(1), cell(2));
    }
    let totals: Vec<u64> = measured.iter().map(|m| m.iter().sum()).collect();
    let cell = |k: usize| format!("{} / {}", totals[k], REMOTE_MISS_TOTALS[k]);
    say!("{:<44} {:>13} {:>13} {:>13}", "total", cell(0), cell(1), cell(2));
    let mut bad = Vec::new();
    for (k, system) in REMOTE_MISS_SYSTEMS.iter().enumerate() {
        let err = (totals[k] as f64 - REMOTE_MISS_TOTALS[k] as f64) / REMOTE_MISS_TOTALS[k] as f64;
        let ok = err.abs() <= REMOTE_MISS_TOLERANCE;
        say!(
            "{:<14} total {:>5} cycles against {:>5}: {:>+6.1}%  {}",
            system.label(),
            totals[k],
            REMOTE_MISS_TOTALS[k],
            err * 100.0,
            if ok { "ok" } else { "NO" }
        );
        if !ok {
            bad.push(system.label());
        }
    }
    if !bad.is_empty() {
        bail!(
            "the remote miss total of {} is off HPCA 1999 Table 1's by more than {}%",
            bad.join(", "),
            REMOTE_MISS_TOLERANCE * 100.0
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each system's steps, from the trace, add up to the read's latency,
    /// each network step is the network's constant latency (from the
    /// payload's last byte out, HPCA 1999 Section 5), and the resume step
    /// holds the device's release of the stalled thread (Table 1).
    #[test]
    fn hpca99_remote_miss_steps_add_up_with_the_network_and_resume_as_configured() {
        let machine = MachineConfig::load("hpca99").unwrap();
        let pdq = machine.pdq.as_ref().unwrap();
        for system in REMOTE_MISS_SYSTEMS {
            let steps = remote_miss_steps(&machine, system).unwrap();
            assert!(steps[0] == machine.protocol.local_event_cycles, "{system}: {steps:?}");
            assert!(steps[3] == machine.network.latency_cycles && steps[7] == steps[3], "{system}: {steps:?}");
            assert!(steps[10] >= pdq.resume_cycles(system.pp_kind()), "{system}: {steps:?}");
        }
    }

    /// `finegrain calibrate hpca99`'s verdict: each system's remote read
    /// miss within 10% of HPCA 1999 Table 1's total.
    #[test]
    fn hpca99_remote_miss_totals_are_within_ten_percent_of_table_1() {
        let machine = MachineConfig::load("hpca99").unwrap();
        let mut off = Vec::new();
        for (k, system) in REMOTE_MISS_SYSTEMS.into_iter().enumerate() {
            let steps = remote_miss_steps(&machine, system).unwrap();
            let total: u64 = steps.iter().sum();
            let paper = REMOTE_MISS_TOTALS[k] as f64;
            if ((total as f64 - paper) / paper).abs() > REMOTE_MISS_TOLERANCE {
                off.push(format!("{system}: {total} cycles against {paper} ({steps:?})"));
            }
        }
        assert!(off.is_empty(), "{off:?}");
    }
}
