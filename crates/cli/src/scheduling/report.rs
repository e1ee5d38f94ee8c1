//! The study's figures and its report.

use super::claims::{arbitration_section, f2, high_u, oint_range, sorted_oints, sorted_u, Sensitivity, View};
use super::*;

pub(super) fn draw_figures(out: &Path, grid: &Grid, records: &[RunRecord]) -> Result<Vec<(String, String)>> {
    let v = View::baseline(records);
    let us = sorted_u(grid);
    let (lo, _) = oint_range(grid);
    // Every Oint of the grid: claim 1 is judged at each, not only at the
    // lowest and highest.
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
    let f = "figures/fig3-single-vs-fixed.svg";
    line_chart(
        &out.join(f),
        &Chart {
            title: "Single vs Fixed: run time normalized to Fixed (2 processors)",
            x_label: "compute utilization U = C / (C + Lmin)",
            y_label: "time / time of Fixed",
            series: by_u("single", 1),
            reference_y: Some(1.0),
            // Oint from 1 to 100 us spreads the ratios over two decades.
            log_y: true,
        },
    )?;
    figs.push((f.to_string(), "Single (1 processor) vs Fixed (1 compute + 1 protocol processor)".to_string()));
    let f = "figures/fig4-floating-vs-fixed.svg";
    line_chart(
        &out.join(f),
        &Chart {
            title: "Floating vs Fixed on 2 processors per node",
            x_label: "compute utilization U",
            y_label: "time / time of Fixed",
            series: by_u("floating", 2),
            reference_y: Some(1.0),
            log_y: false,
        },
    )?;
    figs.push((f.to_string(), "Floating (2 compute) vs Fixed (1 compute + 1 PP)".to_string()));
    let mut procs: Vec<u32> = grid.procs_per_node.iter().copied().filter(|&p| p >= 2).collect();
    procs.sort();
    procs.dedup();
    let u_low = us.iter().copied().find(|&u| u >= 0.1).unwrap_or(us[0]);
    let u_high = high_u(&us);
    let mut series = Vec::new();
    for &p in &grid.protocols {
        for u in [u_low, u_high] {
            let pts = procs.iter().filter_map(|&n| v.norm(p, "floating", n, u, lo).map(|x| (n as f64, x))).collect();
            series.push(Series { name: format!("{p}, U={u}"), points: pts });
        }
    }
    let f = "figures/fig5-processors-per-node.svg";
    line_chart(
        &out.join(f),
        &Chart {
            title: &format!("Floating vs Fixed as processors per node grow (Oint {lo})"),
            x_label: "processors per node",
            y_label: "time of Floating / time of Fixed",
            series,
            reference_y: Some(1.0),
            log_y: false,
        },
    )?;
    figs.push((f.to_string(), "Floating/Fixed against processors per node".to_string()));
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
        let f = format!("figures/fig6-cost-performance-{p}.svg");
        line_chart(
            &out.join(&f),
            &Chart {
                title: &format!("Cost-performance, {p} handler (Oint {lo}); below 1 is cost-effective"),
                x_label: "processors per node",
                y_label: "costup x time / time of Single",
                series,
                reference_y: Some(1.0),
                log_y: false,
            },
        )?;
        figs.push((f, format!("cost-performance, {p}")));
    }
    Ok(figs)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn render_report(
    exp: &Experiment,
    src: &Source,
    mode: &str,
    grid: &Grid,
    machine: &MachineConfig,
    lmin: &BTreeMap<Protocol, f64>,
    records: &[RunRecord],
    verdicts: &[Verdict],
    sensitivity: &Sensitivity,
    figures: &[(String, String)],
    started: Instant,
) -> String {
    let mut s = String::new();
    let quick_flag = if mode == "quick" { " --quick" } else { "" };
    let _ = writeln!(s, "# {} ({mode})\n", exp.title);
    let _ = writeln!(
        s,
        "Experiment `{}` ({}), spec `{}`, preset `{}`, base seed {}, {} runs.\nRegenerate: `finegrain reproduce {}{quick_flag} --out DIR` \
         (every run's full configuration and seed is in `runs/<id>.json`).\n",
        exp.name,
        src.origin,
        exp.spec,
        exp.preset,
        exp.seed,
        records.len(),
        src.arg
    );
    let _ = writeln!(s, "## Claims\n");
    for v in verdicts {
        let _ = writeln!(s, "{}\n", v.line());
    }
    if !sensitivity.claim1.is_empty() {
        let _ = writeln!(
            s,
            "## Sensitivity of claim 1\n\nClaim 1's points (Single, null handler, every U and Oint) run again with \
             another share of Oint paid on the interrupt's return, after the role is given up (a message arriving \
             then interrupts again once the work resumes); the preset pays {}% on return. These runs are in \
             `runs/return<percent>-*.json` and are not used for the verdicts above.\n",
            100 - machine.interrupt.entry_percent
        );
        for (r, v) in &sensitivity.claim1 {
            let _ = writeln!(s, "- {r}% on return: {} - {}", v.status(), v.evidence);
        }
        let _ = writeln!(s);
    }
    if !sensitivity.claim2.is_empty() {
        let (lo, hi) = oint_range(grid);
        let _ = writeln!(
            s,
            "## Sensitivity of claim 2\n\nClaim 2's points (null handler, 2 processors per node, Oint {lo} and {hi}) \
             run again with another rule for when an acting protocol processor with work of its own gives the role \
             up; the preset's rule is {}. These runs are in `runs/relinquish-<rule>-*.json` and are not used for the \
             verdicts above.\n",
            sensitivity.preset.relinquish.label()
        );
        for (r, v) in &sensitivity.claim2 {
            let _ = writeln!(s, "- relinquish {}: {} - {}", r.label(), v.status(), v.evidence);
        }
        let _ = writeln!(s);
    }
    if !sensitivity.claim4.is_empty() {
        s += &arbitration_section(grid, records, sensitivity);
    }
    if !sensitivity.claim5.is_empty() {
        let _ = writeln!(
            s,
            "## Sensitivity of claim 5\n\nClaim 5's points (cost-performance at low Oint) run again with one \
             mechanism of the model switched off (an effect, or the split-transaction bus: `split_bus` holds the bus \
             for a transaction's whole occupancy) and the same compute times, to show which decides the verdict. \
             These runs are in `runs/no-<mechanism>-*.json` (its name with dashes) and are not used for the verdicts \
             above.\n"
        );
        for (e, v) in &sensitivity.claim5 {
            let _ = writeln!(s, "- without {e}: {} - {}", v.status(), v.evidence);
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "## Calibration\n");
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
    s += &markdown_table(&["protocol", "Lmin (cycles)", "Lmin (us)", "target (us)"], &rows);
    // The table shows the baseline runs, as the verdicts use them.
    let v = View::baseline(records);
    let (lo, hi) = oint_range(grid);
    let _ = writeln!(s, "\n## Time normalized to Fixed (2 processors)\n");
    let mut rows = Vec::new();
    for &p in &grid.protocols {
        for o in [lo, hi] {
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
    s += &markdown_table(
        &["protocol", "Oint", "U", "Single/Fixed", "Single irq/req", "Floating-2/Fixed", "Floating-2 irq/req"],
        &rows,
    );
    let _ = writeln!(s, "\n## Figures\n");
    for (f, caption) in figures {
        let _ = writeln!(s, "- [{caption}]({f})");
    }
    let events: u64 = records.iter().map(|r| r.stats.events).sum();
    let messages: u64 = records.iter().map(|r| r.stats.messages).sum();
    let busy: f64 = records.iter().map(|r| r.perf.wall_seconds).sum();
    let _ = writeln!(
        s,
        "\n## Simulator\n\n{} events and {} messages simulated in {:.1} s of simulation time on all cores \
         ({:.2} M events/s, {:.2} M messages/s per core); whole study {:.1} s wall.",
        events,
        messages,
        busy,
        events as f64 / busy / 1e6,
        messages as f64 / busy / 1e6,
        started.elapsed().as_secs_f64()
    );
    s
}
