//! The study's figures and its report's own sections.

use super::claims::{
    arbitration_body, f2, high_oint, sorted_oints, sorted_u, Sensitivity, View, CLAIM4_US, SATURATED_FETCH_LEAD,
    SATURATED_NULL_LEAD,
};
use super::grid::{ContextSwitch, Experiment, Grid, Mechanism, Variant};
use super::operating_points::PAPER_OINT;
use super::runs::Run;
use crate::claim::{Claim, Verdict};
use crate::figures::{Chart, Figure, Paper, PaperBand, Series};
use crate::report::{self, Section};
use crate::table::markdown_table;
use anyhow::Result;
use finegrain_apps::micro::Protocol;
use finegrain_core::MachineConfig;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

pub(super) fn draw_figures(out: &Path, grid: &Grid, records: &[Run]) -> Result<Vec<Figure>> {
    let v = View::baseline(records);
    let us = sorted_u(grid);
    let lo = PAPER_OINT;
    // Every Oint of the grid: claims 1 and 2 are judged at 200 and the
    // highest, the others are drawn for context.
    let oints = sorted_oints(grid);
    let mut figs = Vec::new();
    let by_u = |policy: &str, ppn: u32| -> Vec<Series> {
        let mut s = Vec::new();
        for &p in &grid.protocols {
            for &o in &oints {
                let pts: Vec<(f64, f64)> =
                    us.iter().filter_map(|&u| v.norm(p, policy, ppn, u, o).map(|x| (u, x))).collect();
                s.push(Series { name: format!("{p}, Oint {o}"), points: pts });
            }
        }
        s
    };
    figs.push(Figure::draw(
        out,
        "fig3-single-vs-fixed.svg",
        &Chart {
            title: "Single vs Fixed: run time normalized to Fixed (2 processors)",
            x_label: "compute utilization U = C / (C + Lmin)",
            y_label: "time / time of Fixed",
            series: by_u("single", 1),
            reference_y: Some(1.0),
            // Oint from 1 to 100 us spreads the ratios over two decades.
            log_y: true,
            paper: Paper::default(),
        },
        "Single (1 processor) against Fixed (1 compute + 1 protocol processor), as the paper's Figure 3: above the \
         dashed line Fixed is faster. Look for each curve rising to a peak and falling again towards high U \
         (claims 1 and 3), the high-Oint curves far above the Oint 200 ones, and fetch below null. The paper's \
         Figure 3 gives these curves only as a plot and its text no value, so nothing of the paper is drawn.",
    )?);
    figs.push(Figure::draw(
        out,
        "fig4-floating-vs-fixed.svg",
        &Chart {
            title: "Floating vs Fixed on 2 processors per node",
            x_label: "compute utilization U",
            y_label: "time / time of Fixed",
            series: by_u("floating", 2),
            reference_y: Some(1.0),
            log_y: false,
            paper: Paper::default(),
        },
        "Floating (2 compute processors) against Fixed (1 compute + 1 protocol processor), as the paper's Figure 3: \
         below the dashed line \
         Floating is faster. Look for the high-Oint curves hugging 1 (claim 2: Floating behaves like Fixed) and \
         the Oint 200 curves well below 1 above U = 0.5, with fetch below 1 down to low U (claim 3). The paper \
         states these only in words (Section 5) and as a plot, with no value to draw.",
    )?);
    let mut procs: Vec<u32> = grid.procs_per_node.iter().copied().filter(|&p| p >= 2).collect();
    procs.sort();
    procs.dedup();
    // Claim 4's U (0.3 and 0.7).
    let mut series = Vec::new();
    for &p in &grid.protocols {
        for u in CLAIM4_US {
            let pts = procs.iter().filter_map(|&n| v.norm(p, "floating", n, u, lo).map(|x| (n as f64, x))).collect();
            series.push(Series { name: format!("{p}, U={u}"), points: pts });
        }
    }
    figs.push(Figure::draw(
        out,
        "fig5-processors-per-node.svg",
        &Chart {
            title: &format!("Floating vs Fixed as processors per node grow (Oint {lo})"),
            x_label: "processors per node",
            y_label: "time of Floating / time of Fixed",
            series,
            reference_y: Some(1.0),
            log_y: false,
            paper: Paper { points: Vec::new(), bands: saturation_bands(&grid.protocols, &procs) },
        },
        "Floating/Fixed against processors per node (the paper's Figure 4), at U = 0.3 and 0.7: above the dashed \
         line Fixed is faster. Look for the U = 0.3 curves crossing 1 and levelling off, ending inside the grey \
         bands at the most processors: the paper says Fixed \"nearly doubles\" Floating there for null and is \
         \"only 20%\" faster for fetch (Section 5, Figure 4); the bands are claim 4's readings of those words, \
         1.7-2.1 and 1.1-1.3. The U = 0.7 curves should start below 1 and rise.",
    )?);
    for &p in &grid.protocols {
        let mut series = Vec::new();
        for &u in &grid.cost_performance_u {
            for pol in ["fixed", "floating"] {
                let mut pts: Vec<(f64, f64)> =
                    v.cost_perf(p, "single", 1, u, lo).map(|c| (1.0, c)).into_iter().collect();
                pts.extend(procs.iter().filter_map(|&n| v.cost_perf(p, pol, n, u, lo).map(|c| (n as f64, c))));
                series.push(Series { name: format!("{pol}, U={u}"), points: pts });
            }
        }
        figs.push(Figure::draw(
            out,
            &format!("fig6-cost-performance-{p}.svg"),
            &Chart {
                title: &format!("Cost-performance, {p} handler (Oint {lo}); below 1 is cost-effective"),
                x_label: "processors per node",
                y_label: "costup x time / time of Single",
                series,
                reference_y: Some(1.0),
                log_y: false,
                paper: Paper::default(),
            },
            cost_caption(p),
        )?);
    }
    Ok(figs)
}

/// Claim 4's bands on Floating/Fixed at U = 0.3 and the grid's most
/// processors: the paper's "nearly doubles" (null) and "only 20%"
/// (fetch), Section 5 and Figure 4. None without a processor count.
fn saturation_bands(protocols: &[Protocol], procs: &[u32]) -> Vec<PaperBand> {
    let Some(&most) = procs.last() else { return Vec::new() };
    let x = (most as f64 - 0.25, most as f64 + 0.25);
    protocols
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let (lead, words) = match p {
                Protocol::Null => (&SATURATED_NULL_LEAD, "nearly doubles"),
                Protocol::Fetch => (&SATURATED_FETCH_LEAD, "only 20%"),
            };
            PaperBand {
                name: format!("{p}, U=0.3: \"{words}\" (claim 4)"),
                x,
                y: (*lead.start(), *lead.end()),
                // The figure's series run protocol by protocol, U = 0.3 first.
                series: Some(i * CLAIM4_US.len()),
            }
        })
        .collect()
}

/// What to look for in a cost-performance figure (claim 5).
fn cost_caption(p: Protocol) -> String {
    let expected = match p {
        Protocol::Null => {
            "Fixed-2 below 1 (a dedicated protocol processor pays), Floating-2 lower still, and a Fixed \
                           system the lowest point"
        }
        Protocol::Fetch => {
            "Fixed-2 above 1 (a dedicated protocol processor does not pay), Floating-2 below 1, and a \
                            Floating system the lowest point"
        }
    };
    format!(
        "Cost-performance of the {p} handler (the paper's Figure 5): costup (1 + 0.3 per added processor, Section 4) \
         times run time over Single's; below the dashed line a system is cost-effective. Look for {expected} \
         (claim 5). The paper states this only as an ordering, with no value to draw."
    )
}

/// The report's paragraph on the setup.
pub(super) fn setup(exp: &Experiment, grid: &Grid) -> String {
    format!(
        "{} nodes; each compute thread computes for an exponentially distributed time whose mean C gives the \
         compute utilization U = C / (C + Lmin), then sends a request to another node and waits for the reply; \
         {} requests per node, split over its compute threads; {} seeds per point (the claims use their means). \
         Processors per node {}: 1 runs Single, every other count Fixed (one dedicated protocol processor) and \
         Floating. Oint {} cycles.",
        exp.own.nodes,
        grid.requests_per_node,
        grid.replicates,
        grid.procs_per_node.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        grid.oint_cycles.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
    )
}

/// The sections after the claims: each claim again under its sensitivity
/// runs, the calibration, and the ratios behind claims 1 and 2.
pub(super) fn sections(
    grid: &Grid,
    machine: &MachineConfig,
    lmin: &BTreeMap<Protocol, f64>,
    records: &[Run],
    sensitivity: &Sensitivity,
    claims: &[Claim],
) -> Vec<Section> {
    let mut out = Vec::new();
    let mut section = |heading: &str, body: String| out.push(Section { heading: heading.to_string(), body });
    if !sensitivity.claim1.is_empty() {
        let mut s = format!(
            "Claim 1's points (Single, null handler, every U and Oint) run again with another share of Oint paid on \
             the interrupt's return, after the role is given up (a message arriving then interrupts again once the \
             work resumes); the preset pays {}% on return. These runs are in `runs/return<percent>-*.json` and are \
             not used for the verdicts above.\n\n",
            100 - machine.interrupt.entry_percent
        );
        for (r, v) in &sensitivity.claim1 {
            s += &report::evidence(&format!("{r}% on return"), v);
            s.push('\n');
        }
        section("Sensitivity of claim 1", s);
    }
    if !sensitivity.claim2.is_empty() {
        let lo = PAPER_OINT;
        let hi = high_oint(&sorted_oints(grid)).unwrap_or(lo);
        let mut s = format!(
            "Claim 2's points (null handler, 2 processors per node, Oint {lo} and {hi}) run again with another rule \
             for when an acting protocol processor with work of its own gives the role up; the study's own rule is {}. \
             These runs are in `runs/relinquish-<rule>-*.json` and are not used for the verdicts above.\n\n",
            sensitivity.own_relinquish.label()
        );
        for (r, v) in &sensitivity.claim2 {
            s += &report::evidence(&format!("relinquish {}", r.label()), v);
            s.push('\n');
        }
        section("Sensitivity of claim 2", s);
    }
    if !sensitivity.claim4.is_empty() {
        section("Sensitivity of claim 4", arbitration_body(grid, records, sensitivity));
    }
    if !sensitivity.claim5.is_empty() {
        let mut s = String::from(
            "Claim 5's points (cost-performance at Oint 200) run again with one mechanism of the model switched off \
             (an effect, or the split-transaction bus: `split_bus` holds the bus for a transaction's whole \
             occupancy) and the same compute times, to show which decides the verdict. These runs are in \
             `runs/no-<mechanism>-*.json` (its name with dashes) and are not used for the verdicts above.\n\n",
        );
        for (e, v) in &sensitivity.claim5 {
            s += &report::evidence(&format!("without {e}"), v);
            s.push('\n');
        }
        section("Sensitivity of claim 5", s);
    }
    if !sensitivity.mechanisms.is_empty() {
        section("Claims without the paper's Section 5 mechanisms", mechanisms_body(sensitivity));
    }
    if !sensitivity.switches.is_empty() {
        section("The context-switch map", switch_map_body(grid, records, machine, claims, sensitivity));
    }
    if let Some(body) = failing_claims_body(claims, sensitivity) {
        section("What the reruns say about the failing claims", body);
    }
    section("Calibration", calibration(machine, lmin));
    section("Time normalized to Fixed (2 processors)", normalized_table(grid, records));
    out
}

/// Every claim judged again without each mechanism of Section 5.
fn mechanisms_body(sensitivity: &Sensitivity) -> String {
    let mut s = String::from(
        "Every point of the grid run again with one mechanism of the paper's Section 5 (Figure 2) switched off in \
         the preset, at the same compute times and seeds: `protocol_thread` (a computing processor taking or giving \
         up the acting-PP role switches to or from the node's protocol thread) or `requests_via_pp` (requests are \
         handed to the protocol processor, which sends them). These runs are in `runs/without-<mechanism>-*.json` \
         (its name with dashes) and are not used for the verdicts above.\n\n",
    );
    for (m, verdicts) in &sensitivity.mechanisms {
        let supported = verdicts.iter().filter(|v| v.supported).count();
        let _ = writeln!(s, "Without {m}: {supported} of {} claims supported.\n", verdicts.len());
        for v in verdicts {
            s += &report::evidence(&format!("without {m}, claim {}", v.claim), v);
            s.push('\n');
        }
    }
    s
}

/// Every claim at each cost of the context switches the paper leaves
/// open, with the protocol thread switched off as the free end when that
/// rerun was made and the preset's own cost (the study's verdicts) in
/// its place: where each claim holds as the unknown moves.
fn switch_map_body(
    grid: &Grid,
    records: &[Run],
    machine: &MachineConfig,
    claims: &[Claim],
    sensitivity: &Sensitivity,
) -> String {
    let own = ContextSwitch::of(&machine.protocol);
    let rule = machine
        .ledger
        .0
        .get("protocol.context_switch_cycles")
        .map(|p| format!("{} ({})", p.source, p.kind.name()))
        .unwrap_or_else(|| "not recorded in the preset's ledger".into());
    let mut s = format!(
        "The paper charges a processor that takes the protocol processor's role two context switches, to and from \
         the protocol thread, and their cache pollution (Section 5, Figure 2), but gives no cost for them. The \
         study's own runs use the preset's {} (cycles of one switch / bytes of context written and read through \
         the caches), by a rule that looks at no claim: {rule}. Every point of the grid was run again at each \
         other cost (the experiment's `switch_sensitivity`; same compute times and seeds; \
         `runs/switch<cycles>-context<bytes>-*.json`, not used for the verdicts above), and every claim judged \
         again. Each cell is the verdict, with the number of the claim's checks that fail; the last column is \
         Floating/Fixed on two processors, null handler, at the highest Oint, over U (claim 2's ratio).\n\n",
        own.label()
    );
    let mut rows: Vec<(Option<ContextSwitch>, String, Vec<Verdict>, Variant)> = Vec::new();
    if let Some((_, v)) = sensitivity.mechanisms.iter().find(|(m, _)| *m == Mechanism::ProtocolThread) {
        let variant = Variant { mechanism_off: Some(Mechanism::ProtocolThread), ..Variant::BASELINE };
        rows.push((None, "free (protocol_thread off)".into(), v.clone(), variant));
    }
    for (c, v) in &sensitivity.switches {
        let variant = Variant { context_switch: Some(*c), ..Variant::BASELINE };
        rows.push((Some(*c), c.label(), v.clone(), variant));
    }
    let own_verdicts = claims.iter().map(|c| c.verdict.clone()).collect();
    rows.push((
        Some(own),
        format!("{} (the preset's: the verdicts above)", own.label()),
        own_verdicts,
        Variant::BASELINE,
    ));
    rows.sort_by_key(|(c, ..)| c.map(|c| (c.cycles, c.bytes)));
    let hi = high_oint(&sorted_oints(grid)).unwrap_or(PAPER_OINT);
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|(_, name, verdicts, variant)| {
            let v = View::of_variant(records, *variant);
            let ratios: Vec<f64> =
                sorted_u(grid).into_iter().filter_map(|u| v.norm(Protocol::Null, "floating", 2, u, hi)).collect();
            let range = match (ratios.iter().cloned().reduce(f64::min), ratios.iter().cloned().reduce(f64::max)) {
                (Some(lo), Some(hi)) => format!("{}-{}", f2(lo), f2(hi)),
                _ => "-".into(),
            };
            let mut row = vec![name.clone()];
            row.extend(verdicts.iter().map(map_cell));
            row.push(range);
            row
        })
        .collect();
    let mut header = vec!["switch cycles / context bytes".to_string()];
    header.extend(claims.iter().map(|c| format!("claim {}", c.spec.number)));
    header.push(format!("Floating/Fixed, 2 processors, null, Oint {hi}"));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    s += &markdown_table(&header, &table);
    s
}

/// `yes`, `no (k)` with k failing checks, or `not decided`.
fn map_cell(v: &Verdict) -> String {
    match (v.decided, v.supported) {
        (false, _) => "not decided".into(),
        (true, true) => "**yes**".into(),
        (true, false) => format!("no ({})", v.failed_checks),
    }
}

/// For each claim the study's own runs do not support, how many of its
/// checks fail in each rerun that judged it again: a rerun under which it
/// holds points at the mechanism that fails it. None when every claim holds.
fn failing_claims_body(claims: &[Claim], sensitivity: &Sensitivity) -> Option<String> {
    let mut lines = Vec::new();
    for claim in claims.iter().filter(|c| c.verdict.decided && !c.verdict.supported) {
        let n = claim.spec.number;
        let mut reruns: Vec<(String, &Verdict)> = Vec::new();
        match n {
            1 => reruns.extend(sensitivity.claim1.iter().map(|(r, v)| (format!("{r}% of Oint on return"), v))),
            2 => reruns.extend(sensitivity.claim2.iter().map(|(r, v)| (format!("relinquish {}", r.label()), v))),
            4 => reruns.extend(sensitivity.claim4.iter().map(|(a, v)| (format!("arbitration {}", a.label()), v))),
            5 => reruns.extend(sensitivity.claim5.iter().map(|(e, v)| (format!("without {e}"), v))),
            _ => {}
        }
        for (m, verdicts) in &sensitivity.mechanisms {
            reruns.extend(verdicts.iter().filter(|v| v.claim == n).map(|v| (format!("without {m}"), v)));
        }
        for (c, verdicts) in &sensitivity.switches {
            reruns.extend(verdicts.iter().filter(|v| v.claim == n).map(|v| (format!("switch {}", c.label()), v)));
        }
        let judged: Vec<String> =
            reruns.iter().map(|(setting, v)| format!("{setting}: {}", checks_failing(v))).collect();
        let judged = if judged.is_empty() { "no rerun judges it".to_string() } else { judged.join("; ") };
        lines.push(format!("- claim {n} ({}): {judged}", checks_failing(&claim.verdict)));
    }
    if lines.is_empty() {
        return None;
    }
    Some(format!(
        "Each claim the study's own runs do not support, with the number of its checks that fail there and in each \
         rerun that judged it again (the sections above give their numbers). A rerun in which the claim holds names \
         a mechanism that decides it.\n\n{}\n",
        lines.join("\n")
    ))
}

/// "supported", "not decided" or how many checks fail.
fn checks_failing(v: &Verdict) -> String {
    match (v.decided, v.supported, v.failed_checks) {
        (false, ..) => "not decided".into(),
        (true, true, _) => "supported".into(),
        (true, false, 1) => "1 check fails".into(),
        (true, false, k) => format!("{k} checks fail"),
    }
}

/// Lmin as measured, against the preset's targets.
fn calibration(machine: &MachineConfig, lmin: &BTreeMap<Protocol, f64>) -> String {
    let mut rows = Vec::new();
    for (p, l) in lmin {
        let target = machine.calibration.as_ref().map(|c| match p {
            Protocol::Null => c.lmin_null_us,
            Protocol::Fetch => c.lmin_fetch_us,
        });
        rows.push(vec![
            p.to_string(),
            format!("{l:.1}"),
            format!("{:.2}", machine.cycles_to_us(*l)),
            target.map(|t| format!("{t:.2}")).unwrap_or_else(|| "-".into()),
        ]);
    }
    markdown_table(&["protocol", "Lmin (cycles)", "Lmin (us)", "target (us)"], &rows)
}

/// Single/Fixed and Floating-2/Fixed with their interrupts per request,
/// at Oint 200 and the highest Oint (the baseline runs, as the verdicts).
fn normalized_table(grid: &Grid, records: &[Run]) -> String {
    let v = View::baseline(records);
    let lo = PAPER_OINT;
    let hi = high_oint(&sorted_oints(grid)).unwrap_or(lo);
    let mut oints = vec![lo, hi];
    oints.dedup();
    let mut rows = Vec::new();
    for &p in &grid.protocols {
        for &o in &oints {
            for u in sorted_u(grid) {
                let cell = |x: Option<f64>| x.map(f2).unwrap_or_else(|| "-".into());
                rows.push(vec![
                    p.to_string(),
                    o.to_string(),
                    u.to_string(),
                    cell(v.norm(p, "single", 1, u, o)),
                    cell(v.irq_rate(p, "single", 1, u, o)),
                    cell(v.norm(p, "floating", 2, u, o)),
                    cell(v.irq_rate(p, "floating", 2, u, o)),
                ]);
            }
        }
    }
    markdown_table(
        &["protocol", "Oint", "U", "Single/Fixed", "Single irq/req", "Floating-2/Fixed", "Floating-2 irq/req"],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_processor_figure_bands_are_claim_4s_at_the_most_processors() {
        let bands = saturation_bands(&[Protocol::Null, Protocol::Fetch], &[2, 4, 8]);
        assert_eq!(bands.len(), 2);
        assert_eq!(bands[0].y, (*SATURATED_NULL_LEAD.start(), *SATURATED_NULL_LEAD.end()));
        assert_eq!(bands[1].y, (*SATURATED_FETCH_LEAD.start(), *SATURATED_FETCH_LEAD.end()));
        for b in &bands {
            assert!(b.x.0 < 8.0 && 8.0 < b.x.1 && b.x.0 > 4.0, "{:?} around 8 processors only", b.x);
        }
        // Each box outlined in its U = 0.3 series' colour (null, fetch).
        assert_eq!(bands.iter().map(|b| b.series).collect::<Vec<_>>(), [Some(0), Some(2)]);
        assert!(saturation_bands(&[Protocol::Null], &[]).is_empty());
    }
}
