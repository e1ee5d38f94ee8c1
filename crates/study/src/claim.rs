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

    /// `claim N: supported|not supported|not decided - <numbers>` (or
    /// `hypothesis HN: ...`), the line a report and `reproduce` print.
    pub fn line(&self) -> String {
        format!("{}: {} - {}", self.spec.name(), self.verdict.status(), self.verdict.evidence)
    }
}

/// The verdict on one claim, computed from the data.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Verdict {
    pub claim: u32,
    /// False when data a check needs is missing: the claim is neither
    /// supported nor refuted.
    pub decided: bool,
    pub supported: bool,
    /// The numbers that decide it (or, undecided, what is missing).
    pub evidence: String,
    /// How many of its checks fail (0 when supported or not decided).
    pub failed_checks: usize,
}

impl Verdict {
    /// Builds a verdict from sub-checks: supported when all hold, not
    /// decided when one lacks its data (or there is nothing to check).
    pub fn from_checks(claim: u32, checks: &[Check]) -> Verdict {
        if checks.is_empty() {
            return Verdict {
                claim,
                decided: false,
                supported: false,
                evidence: "nothing to check".into(),
                failed_checks: 0,
            };
        }
        let missing: Vec<&str> = checks.iter().filter(|c| c.missing).map(|c| c.text.as_str()).collect();
        if !missing.is_empty() {
            return Verdict { claim, decided: false, supported: false, evidence: missing.join("; "), failed_checks: 0 };
        }
        let supported = checks.iter().all(|c| c.holds);
        let evidence = checks
            .iter()
            .map(|c| format!("{}{}", if c.holds { "" } else { "FAILS: " }, c.text))
            .collect::<Vec<_>>()
            .join("; ");
        let failed_checks = checks.iter().filter(|c| !c.holds).count();
        Verdict { claim, decided: true, supported, evidence, failed_checks }
    }

    /// `supported`, `not supported` or `not decided`.
    pub fn status(&self) -> &'static str {
        match (self.decided, self.supported) {
            (false, _) => "not decided",
            (true, true) => "supported",
            (true, false) => "not supported",
        }
    }

    /// `claim N: supported|not supported|not decided - <numbers>`
    pub fn line(&self) -> String {
        format!("claim {}: {} - {}", self.claim, self.status(), self.evidence)
    }
}

/// One measurable part of a claim.
#[derive(Clone, Debug)]
pub struct Check {
    pub holds: bool,
    /// The data the check needs is missing: it decides nothing.
    pub missing: bool,
    pub text: String,
}

impl Check {
    pub fn new(holds: bool, text: impl Into<String>) -> Check {
        Check { holds, missing: false, text: text.into() }
    }

    /// A figure reported beside the checks, for context: it decides
    /// nothing.
    pub fn note(text: impl Into<String>) -> Check {
        Check { holds: true, missing: false, text: text.into() }
    }

    /// A check that cannot be evaluated because a data point is missing.
    pub fn missing(what: &str) -> Check {
        Check { holds: false, missing: true, text: format!("no data for {what}") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_needs_every_check() {
        let v = Verdict::from_checks(3, &[Check::new(true, "a=1"), Check::new(false, "b=2")]);
        assert_eq!(v.line(), "claim 3: not supported - a=1; FAILS: b=2");
        assert_eq!(v.failed_checks, 1);
        let v = Verdict::from_checks(1, &[Check::new(true, "a=1")]);
        assert_eq!(v.line(), "claim 1: supported - a=1");
        assert_eq!(v.failed_checks, 0);
        let v = Verdict::from_checks(2, &[]);
        assert!(!v.supported && !v.decided);
        assert_eq!(v.line(), "claim 2: not decided - nothing to check");
        let v = Verdict::from_checks(4, &[Check::new(false, "a=1"), Check::missing("fetch at U=0.5")]);
        assert!(!v.decided);
        assert_eq!(v.line(), "claim 4: not decided - no data for fetch at U=0.5");
    }
}
