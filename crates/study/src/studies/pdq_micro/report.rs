//! The study's figures, tables and report sections.

use super::claims::{self, f2, skewed, View, UNIFORM};
use super::grid::{Experiment, Grid, Sweep};
use super::runs::Run;
use crate::claim::{Claim, Origin};
use crate::experiment::EffectOff;
use crate::figures::{Chart, Figure, Paper, Series};
use crate::report::{self, Section};
use crate::table::markdown_table;
use anyhow::Result;
use finegrain_core::{Discipline, ServingKind};
use std::fmt::Write as _;
use std::path::Path;

pub(super) fn draw_figures(out: &Path, grid: &Grid, records: &[Run]) -> Result<Vec<Figure>> {
    let v = View::main(records);
    let keys = grid.most_keys();
    let zipf = skewed(records);
    let mut figs = Vec::new();
    // Draws one chart into figures/<file> and lists it for the report.
    // The paper gives no number for these microbenchmarks (its Figure 3
    // sketches the dispatch device, its results are the applications'),
    // so no figure draws one; each caption says so.
    let mut draw = |file: &str, title: String, axes: (&str, &str), series: Vec<Series>, look: &str| -> Result<()> {
        let chart = Chart {
            title: &title,
            x_label: axes.0,
            y_label: axes.1,
            series,
            reference_y: None,
            log_y: false,
            paper: Paper::default(),
        };
        let caption = format!(
            "{title}. Look for {look}. The paper states these only in words, with no number to draw (Sections 3 \
             and 5.2; its figures of results are the applications', in the pdq-dsm study)."
        );
        figs.push(Figure::draw(out, file, &chart, caption)?);
        Ok(())
    };
    const THROUGHPUT: (&str, &str) = ("protocol processors", "requests per us");
    let ks = |f: &dyn Fn(u32) -> Option<f64>| -> Vec<(f64, f64)> {
        grid.protocol_procs.iter().filter_map(|&k| f(k).map(|y| (k as f64, y))).collect()
    };
    for &kind in &grid.kinds {
        for (skew, tag) in [(UNIFORM, "uniform"), (zipf.as_str(), "skewed")] {
            let series = grid
                .disciplines
                .iter()
                .map(|&d| Series { name: d.label().into(), points: ks(&|k| v.tput(kind, d, k, keys, skew)) })
                .filter(|s| !s.points.is_empty())
                .collect();
            let title = format!("{}: fetch&add throughput, {keys} {skew} keys", kind.system());
            let look = if skew == UNIFORM {
                "PDQ rising with the protocol processors (claim 1), above serial dispatch and the spin-locks \
                 (claim 3), and static partitioning close to PDQ (hypothesis 1)"
            } else {
                "PDQ still rising with the protocol processors (claim 1) and static partitioning falling behind \
                 it, its popular keys' processors the bottleneck (hypothesis 1)"
            };
            draw(&format!("throughput-{}-{tag}.svg", kind.label()), title, THROUGHPUT, series, look)?;
        }
    }
    let series = grid
        .keys
        .iter()
        .map(|&keys| Series {
            name: format!("{keys} keys"),
            points: ks(&|k| v.tput(ServingKind::Embedded, Discipline::Pdq, k, keys, UNIFORM)),
        })
        .collect();
    let title = "Hurricane (embedded) PDQ: throughput by distinct keys (uniform)".to_string();
    let look = "one key flat at serial dispatch's throughput whatever the processors (claim 2) and the gain from \
                more processors growing with the distinct keys (claim 1)";
    draw("pdq-keys-embedded.svg", title, THROUGHPUT, series, look)?;
    let series = grid
        .kinds
        .iter()
        .map(|&kind| Series {
            name: kind.label().into(),
            points: grid
                .keys
                .iter()
                .filter_map(|&keys| {
                    v.busy_wait(kind, Discipline::SpinLock, 4, keys, UNIFORM).map(|b| ((keys as f64).log2(), b))
                })
                .collect(),
        })
        .collect();
    let title = "Spin-locks at 4 protocol processors: busy-wait share by key count (uniform)".to_string();
    let look = "the share of protocol time spent spinning falling as the keys grow, contention thinning out \
                (claim 3); PDQ's own share is 0 everywhere and is not drawn";
    draw("spin-busy-wait.svg", title, ("log2(keys)", "busy-wait / protocol time"), series, look)?;
    let mut mult = v.sweep(Sweep::MultHomeU);
    mult.sort_by(|a, b| a.home.home_u.total_cmp(&b.home.home_u));
    let points: Vec<(f64, f64)> =
        mult.iter().map(|r| (r.home.home_u, r.home.interrupts as f64 / r.home.requests.max(1) as f64)).collect();
    if !points.is_empty() {
        let title = "Hurricane-1 Mult: interrupts per request by the home's compute utilization".to_string();
        let series = vec![Series { name: format!("PDQ, {} servers", grid.mult_sweep_procs), points }];
        let look = "interrupts per request falling as the home computes less, to at most 0.1 at the lowest \
                    utilization (hypothesis 2; the paper's \"infrequent\", Section 4.2, is finegrain's 0.1)";
        let axes = ("home compute utilization (measured)", "interrupts per request");
        draw("mult-interrupts.svg", title, axes, series, look)?;
    }
    Ok(figs)
}

fn throughput_table(grid: &Grid, records: &[Run]) -> String {
    let v = View::main(records);
    let zipf = skewed(records);
    let mut rows = Vec::new();
    for &kind in &grid.kinds {
        for &d in &grid.disciplines {
            for &keys in &grid.keys {
                for skew in [UNIFORM, zipf.as_str()] {
                    let mut row =
                        vec![kind.label().to_string(), d.label().to_string(), keys.to_string(), skew.to_string()];
                    let mut any = false;
                    for &k in &grid.protocol_procs {
                        match v.get(kind, d, k, keys, skew) {
                            Some(r) => {
                                any = true;
                                let bw = r.home.pp_busy_wait_fraction;
                                let spin = if bw > 0.0 { format!(" ({:.0}% spin)", bw * 100.0) } else { String::new() };
                                row.push(format!("{}{spin}", f2(r.throughput())));
                            }
                            None => row.push("-".into()),
                        }
                    }
                    if any {
                        rows.push(row);
                    }
                }
            }
        }
    }
    let mut header = vec!["kind".to_string(), "discipline".into(), "keys".into(), "skew".into()];
    header.extend(grid.protocol_procs.iter().map(|k| format!("{k} PP")));
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    markdown_table(&h, &rows)
}

/// Hypothesis H2's SMP-scaling check on the sensitivity runs: one line per effect
/// switched off.
fn sensitivity_lines(grid: &Grid, records: &[Run]) -> Vec<String> {
    let keys = grid.most_keys();
    grid.sensitivity
        .iter()
        .map(|&e| {
            let run = |kind: ServingKind, k: u32| {
                records.iter().find(|run| {
                    let r = run.l();
                    r.sweep == Sweep::Sensitivity
                        && r.effect_off == Some(e)
                        && r.kind == kind
                        && r.protocol_procs == k
                        && r.keys == keys
                })
            };
            let t = |kind, k| run(kind, k).map(Run::throughput);
            match (t(ServingKind::Smp, 1), t(ServingKind::Smp, 4), t(ServingKind::Embedded, 1), t(ServingKind::Embedded, 4)) {
                (Some(s1), Some(s4), Some(e1), Some(e4)) => {
                    let migration = run(ServingKind::Smp, 4).map_or(0.0, Run::migration_per_request);
                    let bus = run(ServingKind::Smp, 4).map_or(0.0, home_bus_utilization);
                    format!(
                        "- without {e}: gain 1->4 smp {}x vs embedded {}x ({}); smp/embedded msgs/us at 1: {}/{}, at 4: {}/{}; \
                         smp migration misses per request at 4: {migration:.2}; smp home bus utilization at 4 (busier \
                         phase): {bus:.2}",
                        f2(s4 / s1),
                        f2(e4 / e1),
                        if s4 / s1 >= e4 / e1 { "the scaling part would hold" } else { "still below embedded" },
                        f2(s1),
                        f2(e1),
                        f2(s4),
                        f2(e4)
                    )
                }
                _ => format!("- without {e}: missing smp or embedded PDQ runs at 1 and 4 processors"),
            }
        })
        .collect()
}

/// Hypotheses H1 and H2 (at saturation) judged again with PDQ's points taken from the runs with
/// the device's key affinity on, and what affinity changes at 4 processors.
fn affinity_section(grid: &Grid, records: &[Run]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "The paper's dispatch device hands a free protocol processor the \
         oldest dispatchable entry, whatever key that processor served before, so on SMP processors a key's state \
         moves from cache to cache, while static partitioning keeps each key on one processor. These runs \
         (`runs/*-affinity.json`) give the device key affinity: a processor asking for work gets the oldest \
         dispatchable entry of a key it served last, or that nobody has served yet, if the search window holds one \
         before any nosync or sequential entry, and otherwise the oldest dispatchable entry, as without affinity; \
         the oldest dispatchable entry is passed over at most {} times. Claim 1, hypothesis H1, and H2 at saturation \
         (the fixed-load runs have no affinity counterparts), are judged again with these PDQ runs in place of the \
         main ones (static partitioning, serial and Mult as above); the verdicts above stay the paper's device's.\n",
        grid.affinity_passes
    );
    let v = View { records, pdq_sweep: Sweep::Affinity };
    let zipf = skewed(records);
    for claim in affinity_verdicts(grid, records) {
        s += "\n";
        s += &report::evidence(&format!("with affinity, {}", claim.spec.name()), &claim.verdict);
    }
    let plain = View::main(records);
    // The grid always has 4 processors and both dedicated kinds (checked
    // when the experiment file is read).
    let (k, keys) = (4, grid.most_keys());
    let mut rows = Vec::new();
    for kind in [ServingKind::Embedded, ServingKind::Smp] {
        for skew in [UNIFORM, zipf.as_str()] {
            let cells = [&plain, &v].map(|view| view.get(kind, Discipline::Pdq, k, keys, skew));
            let (Some(stat), [Some(p), Some(a)]) = (plain.tput(kind, Discipline::Static, k, keys, skew), cells) else {
                continue;
            };
            let both = |f: fn(&Run) -> String| format!("{} / {}", f(p), f(a));
            rows.push(vec![
                kind.label().to_string(),
                skew.to_string(),
                both(|r| f2(r.throughput())),
                f2(stat),
                both(|r| f2(r.migration_per_request())),
                both(|r| format!("{:.0}", r.home.mean_queue_delay_cycles)),
                both(|r| r.home.p99_queue_delay_cycles.to_string()),
            ]);
        }
    }
    let _ =
        writeln!(s, "\nAt {k} protocol processors, {keys} keys: PDQ / PDQ with affinity, and static partitioning\n");
    s += &markdown_table(
        &[
            "kind",
            "skew",
            "requests per us",
            "static",
            "migration misses per request",
            "mean queue delay",
            "p99 queue delay",
        ],
        &rows,
    );
    s.push('\n');
    s
}

/// Claim 1, hypothesis H1 and H2 at saturation judged with PDQ's points
/// taken from the runs with the device's key affinity on.
fn affinity_verdicts(grid: &Grid, records: &[Run]) -> [Claim; 3] {
    let v = View { records, pdq_sweep: Sweep::Affinity };
    let zipf = skewed(records);
    [
        Claim { spec: claims::CLAIMS[0], verdict: claims::claim1(&v, grid) },
        Claim { spec: claims::CLAIMS[3], verdict: claims::static_partitioning(&v, grid, &zipf) },
        Claim { spec: claims::CLAIMS[4], verdict: claims::smp_saturation_only(&v, grid) },
    ]
}

/// Embedded PDQ's gain from 1 to 4 processors (the most keys, uniform) in
/// the sensitivity runs without `effect`, if both ran.
fn embedded_gain_without(grid: &Grid, records: &[Run], effect: EffectOff) -> Option<f64> {
    let t = |k: u32| {
        records
            .iter()
            .find(|run| {
                let r = run.l();
                r.sweep == Sweep::Sensitivity
                    && r.effect_off == Some(effect)
                    && r.kind == ServingKind::Embedded
                    && r.protocol_procs == k
                    && r.keys == grid.most_keys()
            })
            .map(Run::throughput)
    };
    Some(t(4)? / t(1)?)
}

/// For each claim or hypothesis the main runs do not support, what the
/// reruns that bear on it give: claim 1's embedded gain from 1 to 4 without
/// each mechanism, and every verdict judged again with key affinity. None
/// when all hold or nothing was rerun.
fn failing_claims_body(grid: &Grid, records: &[Run], claims: &[Claim]) -> Option<String> {
    let with_affinity = (grid.affinity_passes > 0).then(|| affinity_verdicts(grid, records));
    let mut lines = Vec::new();
    for claim in claims.iter().filter(|c| c.verdict.decided && !c.verdict.supported) {
        let mut said = Vec::new();
        if claim.spec.number == 1 && claim.spec.origin == Origin::Paper {
            for &e in &grid.sensitivity {
                if let Some(g) = embedded_gain_without(grid, records, e) {
                    said.push(format!("without {e} embedded PDQ gains {}x from 1 to 4", f2(g)));
                }
            }
        }
        let again = with_affinity.iter().flatten().find(|c| c.spec.name() == claim.spec.name());
        if let Some(c) = again {
            said.push(format!("with key affinity it is {}", c.verdict.status()));
        }
        if !said.is_empty() {
            lines.push(format!("- {}: {}", claim.spec.name(), said.join("; ")));
        }
    }
    if lines.is_empty() {
        return None;
    }
    Some(format!(
        "Each claim or hypothesis the main runs do not support, with what the reruns above give for it (claim 1 asks \
         embedded PDQ to gain at least 3.5x from 1 to 4 processors). A rerun in which it holds names a mechanism \
         that decides it.\n\n{}\n",
        lines.join("\n")
    ))
}

/// The share of the run (to the home's last handler) its bus, or the
/// busier of a split bus's phases, was busy.
fn home_bus_utilization(r: &Run) -> f64 {
    let home = &r.record.stats.nodes[0];
    home.bus.bottleneck_busy_cycles() as f64 / home.last_handler_end.max(1) as f64
}

/// Per-request cost at the home for embedded and SMP processors: what
/// makes one kind scale differently from the other.
fn occupancy_table(grid: &Grid, records: &[Run]) -> String {
    let v = View::main(records);
    let mut rows = Vec::new();
    for kind in [ServingKind::Embedded, ServingKind::Smp].into_iter().filter(|k| grid.kinds.contains(k)) {
        for &k in &grid.protocol_procs {
            let Some(r) = v.get(kind, Discipline::Pdq, k, grid.most_keys(), UNIFORM) else { continue };
            let home = &r.record.stats.nodes[0];
            rows.push(vec![
                kind.label().to_string(),
                k.to_string(),
                f2(r.throughput()),
                format!("{:.0}", r.pp_cycles_per_request()),
                format!("{:.1}", r.home.bus_transactions_per_request),
                format!("{:.2}", home_bus_utilization(r)),
                format!("{:.1}", home.bus.wait_cycles as f64 / home.bus.transactions.max(1) as f64),
                format!("{:.2}", r.migration_per_request()),
            ]);
        }
    }
    markdown_table(
        &[
            "kind",
            "PPs",
            "requests per us",
            "PP cycles per request",
            "bus transactions per request",
            "bus utilization (busier phase)",
            "bus wait per transaction",
            "migration misses per request",
        ],
        &rows,
    )
}

/// The report's paragraph on the setup.
pub(super) fn setup(exp: &Experiment, grid: &Grid) -> String {
    format!(
        "Home node 0, {} requester nodes x {} threads sending fetch&add requests back to back (the key is the word), \
         handler cost {} cycles, home compute utilization {}, {} requests per requester thread.",
        exp.own.requester_nodes,
        exp.own.compute_procs,
        exp.own.handler_cycles,
        exp.own.home_u,
        grid.requests_per_thread
    )
}

/// The sections after the claims.
pub(super) fn sections(grid: &Grid, records: &[Run], claims: &[Claim]) -> Vec<Section> {
    let mut out = Vec::new();
    let mut section = |heading: &str, body: String| out.push(Section { heading: heading.to_string(), body });
    let sensitivity = sensitivity_lines(grid, records);
    if !sensitivity.is_empty() {
        let mut s = format!(
            "SMP and embedded PDQ ({} uniform keys) at 1 and 4 protocol processors, run again with one mechanism of \
             the model switched off (an effect, or the split-transaction bus: `split_bus` holds the bus for a \
             transaction's whole occupancy), to show which decides the gain. These runs \
             (`runs/*-no-<mechanism>.json`, its name with dashes) are not used for the verdicts above.\n\n",
            grid.most_keys()
        );
        for line in sensitivity {
            let _ = writeln!(s, "{line}");
        }
        section("Sensitivity of hypothesis H2's SMP scaling", s);
    }
    if grid.affinity_passes > 0 {
        section("PDQ with key affinity (an extension)", affinity_section(grid, records));
    }
    if let Some(body) = failing_claims_body(grid, records, claims) {
        section("What the reruns say about the failing claims", body);
    }
    section(
        "Throughput at the home (requests per us; spin-lock busy-wait share in brackets)",
        throughput_table(grid, records),
    );
    let v = View::main(records);
    let mut rows = Vec::new();
    for r in v.sweep(Sweep::MultHomeU) {
        rows.push(vec![
            format!("{:.2}", r.l().target_home_u),
            format!("{:.3}", r.home.home_u),
            r.home.interrupts.to_string(),
            format!("{:.4}", r.home.interrupts as f64 / r.home.requests.max(1) as f64),
            f2(r.throughput()),
        ]);
    }
    section(
        "Hurricane-1 Mult by the home's compute utilization",
        markdown_table(&["target U", "measured U", "interrupts", "per request", "requests per us"], &rows),
    );
    let mut rows = Vec::new();
    for r in v.sweep(Sweep::Sequential) {
        rows.push(vec![
            format!("{}", r.l().sequential_fraction),
            f2(r.throughput()),
            format!("{:.0}", r.home.mean_queue_delay_cycles),
            r.home.p99_queue_delay_cycles.to_string(),
        ]);
    }
    section(
        "PDQ with sequential requests (embedded, 4 processors)",
        markdown_table(&["sequential share", "requests per us", "mean queue delay", "p99 queue delay"], &rows),
    );
    section(
        &format!("Where protocol-processor time goes (PDQ, {} uniform keys)", grid.most_keys()),
        occupancy_table(grid, records),
    );
    out
}
