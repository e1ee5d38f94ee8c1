//! The report every study writes (`report.md`): a summary of the verdicts
//! on top, how to regenerate the study, each claim in words with its
//! source, its test and the numbers that decide it, the study's own
//! sections, the figures, and what the simulator did.

use crate::claim::{Claim, Origin, Verdict};
use crate::experiment::{Header, Source};
use crate::figures::Figure;
use crate::record::RunRecord;
use crate::table::markdown_table;
use std::fmt::Write;
use std::time::Instant;

/// A section of a report after the claims: a heading and markdown text.
pub struct Section {
    pub heading: String,
    pub body: String,
}

/// Everything a report is made of.
pub struct Parts<'a, L> {
    pub header: &'a Header,
    pub src: &'a Source,
    pub mode: &'a str,
    pub setup: String,
    pub claims: &'a [Claim],
    pub sections: Vec<Section>,
    pub figures: &'a [Figure],
    pub records: &'a [&'a RunRecord<L>],
    /// With `--reuse`: which runs came from earlier records.
    /// Where the runs came from: earlier records, MPI ranks.
    pub notes: &'a [String],
    pub started: Instant,
}

pub fn render<L>(p: &Parts<L>) -> String {
    let mut s = String::new();
    let h = p.header;
    let quick_flag = if p.mode == "quick" { " --quick" } else { "" };
    let _ = writeln!(s, "# {} ({})\n", h.title, p.mode);
    if p.mode == "quick" {
        let _ = writeln!(
            s,
            "*Quick inputs: reduced problem sizes and grids, for CI and a first look. The study's verdicts are the \
             full run's, on the papers' inputs (`finegrain reproduce {}`).*\n",
            p.src.arg
        );
    }
    s += &summary(p.claims);
    let _ = writeln!(
        s,
        "Experiment `{}` ({}), claims from {}, preset `{}`, base seed {}, {} runs.\nRegenerate: `finegrain reproduce \
         {}{quick_flag} --out DIR` (every run's full configuration and seed is in `runs/<id>.json`; `finegrain rerun \
         runs/<id>.json` runs one again and compares).\n",
        h.name,
        p.src.origin,
        h.paper,
        h.preset,
        h.seed,
        p.records.len(),
        p.src.arg
    );
    for note in p.notes {
        let _ = writeln!(s, "{note}\n");
    }
    if !p.setup.is_empty() {
        let _ = writeln!(s, "{}\n", p.setup);
    }
    let _ = writeln!(s, "## Claims\n");
    for c in p.claims.iter().filter(|c| c.spec.origin == Origin::Paper) {
        s += &claim(c);
    }
    let hypotheses: Vec<&Claim> = p.claims.iter().filter(|c| c.spec.origin == Origin::Hypothesis).collect();
    if !hypotheses.is_empty() {
        let _ = writeln!(
            s,
            "## finegrain's hypotheses\n\nNot claims of the paper: tests finegrain adds, each drawn from an argument \
             the paper makes but a result it does not report. Their verdicts say nothing about the paper.\n"
        );
        for c in hypotheses {
            s += &claim(c);
        }
    }
    for section in &p.sections {
        let _ = writeln!(s, "## {}\n\n{}", section.heading, section.body.trim_end());
        s.push('\n');
    }
    s += &estimates(&p.src.preset(&h.preset));
    let _ = writeln!(s, "## Figures\n");
    for f in p.figures {
        let _ = writeln!(s, "- [{}]({}): {}", f.file, f.file, f.caption);
    }
    s += &simulator(p.records, p.started);
    s
}

/// Everything a report of native runs is made of.
pub struct NativeParts<'a> {
    pub header: &'a Header,
    pub src: &'a Source,
    pub mode: &'a str,
    pub not_judged: &'a [crate::native_record::NotJudged],
    pub sections: Vec<Section>,
    /// The platform, what it does not measure, runs left out, and the
    /// warning when threads outnumber cores.
    pub notes: &'a [String],
    pub runs: usize,
    pub wall_seconds: f64,
    pub started: Instant,
}

/// The report of a study run on the native runtime: what the platform is
/// and is not first, then each claim with why it is not judged there, the
/// study's tables of measured times, and no figure drawn from them.
pub fn render_native(p: &NativeParts) -> String {
    let mut s = String::new();
    let h = p.header;
    let quick_flag = if p.mode == "quick" { " --quick" } else { "" };
    let _ = writeln!(s, "# {} ({}, platform native)\n", h.title, p.mode);
    for note in p.notes {
        let _ = writeln!(s, "**{}**\n", sentence(note));
    }
    let _ = writeln!(
        s,
        "Experiment `{}` ({}), claims from {}, planned on preset `{}`, base seed {}, {} runs. Run again: \
         `finegrain reproduce {}{quick_flag} --platform native --out DIR` (other times, same answers); the \
         simulated study, whose verdicts are the study's: `finegrain reproduce {}{quick_flag}`.\n",
        h.name, p.src.origin, h.paper, h.preset, h.seed, p.runs, p.src.arg, p.src.arg
    );
    let _ = writeln!(s, "## Claims\n");
    if p.not_judged.is_empty() {
        let _ = writeln!(s, "The study judges no claim on native runs.\n");
    }
    for c in p.not_judged {
        let _ = writeln!(
            s,
            "### {}: {}\n\n{}\n\n- Source: {}\n- Not judged natively: {}\n",
            c.spec.heading(),
            c.spec.title,
            c.spec.statement,
            c.spec.source,
            c.why
        );
    }
    for section in &p.sections {
        let _ = writeln!(s, "## {}\n\n{}", section.heading, section.body.trim_end());
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "## Figures\n\nNone: the study's figures plot simulated measures against the simulated machine's \
         settings; the tables above give the native runs' measured times, and `results.csv` every run's.\n"
    );
    let _ = writeln!(
        s,
        "## Native runtime\n\n{} runs, one at a time, in {:.1} s of run time; whole study {:.1} s wall.",
        p.runs,
        p.wall_seconds,
        p.started.elapsed().as_secs_f64()
    );
    s
}

/// A note as a sentence: capital first, a full stop last.
fn sentence(note: &str) -> String {
    let mut chars = note.chars();
    let mut s: String = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
    if !s.ends_with('.') {
        s.push('.');
    }
    s
}

/// The verdicts at a glance: one row per claim, the paper's apart from
/// finegrain's own hypotheses.
fn summary(claims: &[Claim]) -> String {
    let count = |origin| {
        let of: Vec<&Claim> = claims.iter().filter(|c| c.spec.origin == origin).collect();
        (of.iter().filter(|c| c.verdict.decided && c.verdict.supported).count(), of.len())
    };
    let (supported, paper) = count(Origin::Paper);
    let mut s = format!("**{supported} of {paper} claims of the paper supported");
    match count(Origin::Hypothesis) {
        (_, 0) => s += ".**\n\n",
        (h, n) => s += &format!("; {h} of {n} of finegrain's own hypotheses.**\n\n"),
    }
    let rows: Vec<Vec<String>> = claims
        .iter()
        .map(|c| {
            let id = match c.spec.origin {
                Origin::Paper => c.spec.number.to_string(),
                Origin::Hypothesis => format!("H{} (finegrain's)", c.spec.number),
            };
            vec![id, c.spec.title.to_string(), c.verdict.status().to_string(), c.spec.basis.label().to_string()]
        })
        .collect();
    s += &markdown_table(&["claim", "about", "verdict", "basis"], &rows);
    s.push('\n');
    s
}

/// A claim in words, where it comes from, how it is judged, its verdict
/// and the table of its checks.
fn claim(c: &Claim) -> String {
    let spec = &c.spec;
    format!(
        "### {}: {}\n\n{}\n\n- Source: {}\n- Test: {}\n- Basis: {}\n\n{}\n",
        spec.heading(),
        spec.title,
        spec.statement,
        spec.source,
        spec.test,
        spec.basis.words(),
        evidence(&spec.name(), &c.verdict)
    )
}

/// `**claim 1: not supported** (1 of 4 checks fail)` over its table of
/// checks: how a report shows a verdict, the claim's own or a variant's
/// (`name` says which).
pub fn evidence(name: &str, v: &Verdict) -> String {
    format!("**{name}: {}** ({})\n\n{}", v.status(), v.tally(), v.markdown())
}

/// Rows as text columns padded to their widest cell: the terminal's
/// tables.
pub fn text_table(header: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells.iter().zip(&width).map(|(c, w)| format!("{c:<w$}")).collect();
        padded.join("  ").trim_end().to_string()
    };
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    std::iter::once(line(&head)).chain(rows.iter().map(|r| line(r))).collect()
}

/// The terminal's verdict table: one row per claim, its verdict and how
/// many of its checks fail.
pub fn verdict_table(claims: &[Claim]) -> Vec<String> {
    let rows: Vec<Vec<String>> =
        claims.iter().map(|c| vec![c.spec.name(), c.verdict.status().to_string(), c.verdict.tally()]).collect();
    text_table(&["claim", "verdict", "checks"], &rows)
}

fn simulator<L>(records: &[&RunRecord<L>], started: Instant) -> String {
    let events: u64 = records.iter().map(|r| r.stats.events).sum();
    let messages: u64 = records.iter().map(|r| r.stats.messages).sum();
    let busy: f64 = records.iter().map(|r| r.wall.wall_seconds).sum::<f64>().max(1e-9);
    format!(
        "\n## Simulator\n\n{events} events and {messages} messages simulated in {busy:.1} s of simulation time on all \
         cores ({:.2} M events/s, {:.2} M messages/s per core); whole study {:.1} s wall.\n",
        events as f64 / busy / 1e6,
        messages as f64 / busy / 1e6,
        started.elapsed().as_secs_f64()
    )
}

/// The preset's estimates (values the paper gives no figure for) and
/// what its ledger says moves with each: the verdicts above rest on them.
/// Estimates the ledger says move nothing are left out.
fn estimates(preset: &str) -> String {
    use finegrain_core::config::ProvenanceKind;
    let mut s = String::from(
        "## The estimates these verdicts rest on

",
    );
    let machine = match finegrain_core::MachineConfig::load(preset) {
        Ok(m) => m,
        Err(e) => return s + &format!("The preset's ledger could not be read: {e}\n\n"),
    };
    let rows: Vec<Vec<String>> = machine
        .ledger
        .of_kind(ProvenanceKind::Estimate)
        .filter(|(_, p)| !p.moves.as_deref().is_some_and(|m| m.starts_with("none")))
        .map(|(field, p)| vec![format!("`{field}`"), p.source.clone(), p.moves.clone().unwrap_or_default()])
        .collect();
    let _ = writeln!(
        s,
        "Parameters of preset `{}` the paper gives no figure for and no stated number could fit (`finegrain \
         calibrate {}` prints every parameter's source, fitted ones with their residuals), and what moves with each \
         as far as it was measured:\n",
        machine.name, preset
    );
    s += &markdown_table(&["parameter", "why this value", "what moves with it"], &rows);
    s.push('\n');
    s
}
