//! Claims as values: what a paper found, stated in words with where it
//! says so and how finegrain judges it, and the verdict the data give.

/// A claim of a paper as a study states it, written before any run: the
/// statement in words, where the paper makes it (so a reader of a clone
/// can find it), and the test that judges it.
#[derive(Clone, Copy, Debug)]
pub struct ClaimSpec {
    /// The claim's number among its study's claims of the same origin.
    pub number: u32,
    /// The paper's finding, or finegrain's own hypothesis.
    pub origin: Origin,
    /// A few words naming the claim (the report's heading).
    pub title: &'static str,
    /// What the paper found, in finegrain's words.
    pub statement: &'static str,
    /// Paper and section, figure or table.
    pub source: &'static str,
    /// How the data decide it: the numbers compared and the bounds used.
    pub test: &'static str,
    /// Whether the numbers it compares were targets of the preset's fit.
    pub basis: Basis,
}

/// Calibrate, then predict: a claim whose own numbers (or the primitives
/// they are made of) were targets when the preset's unknowns were fitted
/// says little about the model when it holds; every other claim is a
/// prediction. A report marks each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// No number the claim compares was a fit target.
    Predicted,
    /// Its numbers were fit targets, as the text says (which targets).
    Calibrated(&'static str),
}

impl Basis {
    /// `predicted` or `calibrated`, the report's column.
    pub fn label(&self) -> &'static str {
        match self {
            Basis::Predicted => "predicted",
            Basis::Calibrated(_) => "calibrated",
        }
    }

    /// The report's sentence about it.
    pub fn words(&self) -> String {
        match self {
            Basis::Predicted => "predicted: no number it compares was a target of the preset's fit".into(),
            Basis::Calibrated(why) => format!("calibrated: {why}"),
        }
    }
}

/// Whose claim it is. A report keeps the two apart, so that no test of
/// finegrain's own reads as a result of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A finding the paper states.
    Paper,
    /// finegrain's own hypothesis: drawn from the paper's argument, but
    /// not a result the paper reports (numbered H1, H2, ...).
    Hypothesis,
}

impl ClaimSpec {
    /// `claim 3` or `hypothesis H1`: how verdict lines name it.
    pub fn name(&self) -> String {
        match self.origin {
            Origin::Paper => format!("claim {}", self.number),
            Origin::Hypothesis => format!("hypothesis H{}", self.number),
        }
    }

    /// `Claim 3` or `Hypothesis H1`: how report headings name it.
    pub fn heading(&self) -> String {
        let name = self.name();
        name[..1].to_uppercase() + &name[1..]
    }
}

/// A claim and the verdict the data give it.
#[derive(Clone, Debug)]
pub struct Claim {
    pub spec: ClaimSpec,
    pub verdict: Verdict,
}

impl Claim {
    /// The verdict on `spec` from `checks` (see [`Verdict::from_checks`]).
    pub fn judged(spec: ClaimSpec, checks: &[Check]) -> Claim {
        Claim { spec, verdict: Verdict::from_checks(spec.number, checks) }
    }

    /// `claim N: supported|not supported|not decided - <checks>` (or
    /// `hypothesis HN: ...`): the verdict and its checks on one line, in
    /// the claim's order, for logs and test messages (reports table them).
    pub fn line(&self) -> String {
        format!("{}: {} - {}", self.spec.name(), self.verdict.status(), self.verdict.text())
    }
}

/// The verdict on one claim, computed from the data.
#[derive(Clone, Debug)]
pub struct Verdict {
    pub claim: u32,
    /// False when data a check needs is missing: the claim is neither
    /// supported nor refuted.
    pub decided: bool,
    pub supported: bool,
    /// The checks that decide it, in the order the claim made them (or,
    /// undecided, the ones whose data is missing).
    pub checks: Vec<Check>,
    /// How many of its checks fail (0 when supported or not decided).
    pub failed_checks: usize,
}

impl Verdict {
    /// Builds a verdict from sub-checks: supported when all hold, not
    /// decided when one lacks its data (or there is nothing to check).
    pub fn from_checks(claim: u32, checks: &[Check]) -> Verdict {
        if checks.is_empty() {
            return Verdict { claim, decided: false, supported: false, checks: Vec::new(), failed_checks: 0 };
        }
        let missing: Vec<Check> = checks.iter().filter(|c| c.outcome == Outcome::Missing).cloned().collect();
        if !missing.is_empty() {
            return Verdict { claim, decided: false, supported: false, checks: missing, failed_checks: 0 };
        }
        let failed_checks = checks.iter().filter(|c| c.outcome == Outcome::Fails).count();
        Verdict { claim, decided: true, supported: failed_checks == 0, checks: checks.to_vec(), failed_checks }
    }

    /// `supported`, `not supported` or `not decided`.
    pub fn status(&self) -> &'static str {
        match (self.decided, self.supported) {
            (false, _) => "not decided",
            (true, true) => "supported",
            (true, false) => "not supported",
        }
    }

    /// `claim N: <status> - <checks>`: [`Claim::line`] where only the
    /// number is at hand.
    pub fn line(&self) -> String {
        format!("claim {}: {} - {}", self.claim, self.status(), self.text())
    }

    /// The checks on one line in the claim's order, `; ` between them.
    pub fn text(&self) -> String {
        if self.checks.is_empty() {
            return "nothing to check".into();
        }
        self.checks.iter().map(Check::text).collect::<Vec<_>>().join("; ")
    }

    /// The checks that decide something (notes left out).
    pub fn judged(&self) -> usize {
        self.checks.iter().filter(|c| c.outcome != Outcome::Note).count()
    }

    /// `2 of 7 fail`, `0 of 4 fail`, `no data` or `nothing to check`:
    /// the verdict table's column.
    pub fn tally(&self) -> String {
        match (self.decided, self.checks.is_empty()) {
            (false, true) => "nothing to check".into(),
            (false, false) => format!("no data for {}", self.checks.len()),
            (true, _) => format!("{} of {} fail", self.failed_checks, self.judged()),
        }
    }

    /// The checks failing first, then holding, then notes, each group in
    /// the claim's order: the rows of its evidence table.
    pub fn rows(&self) -> Vec<&Check> {
        let mut rows: Vec<&Check> = self.checks.iter().collect();
        rows.sort_by_key(|c| c.outcome.rank());
        rows
    }

    /// The evidence as a markdown table (or a sentence when there is
    /// nothing to check).
    pub fn markdown(&self) -> String {
        if self.checks.is_empty() {
            return "Nothing to check: no data point the test needs.\n".into();
        }
        let rows: Vec<Vec<String>> = self.rows().iter().map(|c| c.cells().map(|x| escape_cell(&x)).to_vec()).collect();
        crate::table::markdown_table(&EVIDENCE_HEADER, &rows)
    }
}

/// The evidence table's columns.
pub const EVIDENCE_HEADER: [&str; 4] = ["check", "compared", "measured", "requirement"];

/// A pipe inside a cell would split it in two.
fn escape_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// How one check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Fails,
    Holds,
    /// The data the check needs is missing: it decides nothing.
    Missing,
    /// A figure reported beside the checks, for context: it decides
    /// nothing.
    Note,
}

impl Outcome {
    /// The evidence table's first column.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Fails => "fails",
            Outcome::Holds => "holds",
            Outcome::Missing => "no data",
            Outcome::Note => "note",
        }
    }

    /// Failing rows first: they are what a reader looks for.
    fn rank(&self) -> u8 {
        match self {
            Outcome::Fails | Outcome::Missing => 0,
            Outcome::Holds => 1,
            Outcome::Note => 2,
        }
    }
}

/// One measurable part of a claim: what is compared, the value measured
/// (rounded to what the requirement needs), the requirement (`<= 0.8`,
/// `>= 1.1`, `1.16-1.48`, or words where no number states it) and how
/// it came out.
#[derive(Clone, Debug)]
pub struct Check {
    pub outcome: Outcome,
    pub compared: String,
    pub measured: String,
    pub needs: String,
}

impl Check {
    pub fn new(
        holds: bool,
        compared: impl Into<String>,
        measured: impl Into<String>,
        needs: impl Into<String>,
    ) -> Check {
        let outcome = if holds { Outcome::Holds } else { Outcome::Fails };
        Check { outcome, compared: compared.into(), measured: measured.into(), needs: needs.into() }
    }

    /// A figure reported beside the checks, for context: it decides
    /// nothing.
    pub fn note(compared: impl Into<String>, measured: impl Into<String>) -> Check {
        Check { outcome: Outcome::Note, compared: compared.into(), measured: measured.into(), needs: String::new() }
    }

    /// A check that cannot be evaluated because a data point is missing.
    pub fn missing(what: &str) -> Check {
        Check { outcome: Outcome::Missing, compared: what.into(), measured: "no data".into(), needs: String::new() }
    }

    /// Whether it holds (a note holds: it decides nothing).
    pub fn holds(&self) -> bool {
        matches!(self.outcome, Outcome::Holds | Outcome::Note)
    }

    /// `FAILS: compared = measured (needs ...)`, `compared = measured
    /// (not judged)` or `no data for compared`.
    pub fn text(&self) -> String {
        match self.outcome {
            Outcome::Fails => format!("FAILS: {} = {} (needs {})", self.compared, self.measured, self.needs),
            Outcome::Holds => format!("{} = {} (needs {})", self.compared, self.measured, self.needs),
            Outcome::Note => format!("{} = {} (not judged)", self.compared, self.measured),
            Outcome::Missing => format!("no data for {}", self.compared),
        }
    }

    /// Its row: outcome, compared, measured, `needs ...` (or `not
    /// judged` for a note).
    pub fn cells(&self) -> [String; 4] {
        let needs = match self.outcome {
            Outcome::Note => "not judged".to_string(),
            Outcome::Missing => "data".to_string(),
            _ => format!("needs {}", self.needs),
        };
        [self.outcome.label().to_string(), self.compared.clone(), self.measured.clone(), needs]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_needs_every_check() {
        let v = Verdict::from_checks(3, &[Check::new(true, "a", "1", ">= 1"), Check::new(false, "b", "2", "<= 1")]);
        assert_eq!((v.status(), v.failed_checks, v.tally().as_str()), ("not supported", 1, "1 of 2 fail"));
        let v = Verdict::from_checks(1, &[Check::new(true, "a", "1", ">= 1"), Check::note("c", "3")]);
        assert_eq!((v.status(), v.tally().as_str()), ("supported", "0 of 1 fail"));
        let v = Verdict::from_checks(2, &[]);
        assert!(!v.supported && !v.decided);
        assert_eq!(v.tally(), "nothing to check");
        let v = Verdict::from_checks(4, &[Check::new(false, "a", "1", "<= 0"), Check::missing("fetch at U=0.5")]);
        assert!(!v.decided);
        assert_eq!(v.checks.len(), 1);
        assert_eq!(v.checks[0].compared, "fetch at U=0.5");
    }

    #[test]
    fn evidence_table_puts_failing_rows_first() {
        let checks = [
            Check::note("paper", "2.26"),
            Check::new(true, "x / y", "0.82", "< 1.0"),
            Check::new(false, "get / put", "1.14", ">= 1.2"),
        ];
        let table = Verdict::from_checks(1, &checks).markdown();
        let rows: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(
            rows,
            [
                "| fails | get / put | 1.14 | needs >= 1.2 |",
                "| holds | x / y | 0.82 | needs < 1.0 |",
                "| note | paper | 2.26 | not judged |"
            ]
        );
    }

    #[test]
    fn a_pipe_in_a_cell_is_escaped() {
        let table = Verdict::from_checks(1, &[Check::new(true, "a | b", "1", ">= 1")]).markdown();
        assert!(table.contains("| a \\| b |"), "{table}");
    }
}
