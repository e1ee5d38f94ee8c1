//! Claim verdicts and small formatting helpers shared by studies.

use std::fmt::Write;

/// The verdict on one claim of a spec, computed from the data.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Verdict {
    pub claim: u32,
    pub supported: bool,
    /// The numbers that decide it.
    pub evidence: String,
}

impl Verdict {
    /// Builds a verdict from sub-checks: supported when all hold.
    pub fn from_checks(claim: u32, checks: &[Check]) -> Verdict {
        let supported = !checks.is_empty() && checks.iter().all(|c| c.holds);
        let evidence = checks
            .iter()
            .map(|c| format!("{}{}", if c.holds { "" } else { "FAILS: " }, c.text))
            .collect::<Vec<_>>()
            .join("; ");
        Verdict { claim, supported, evidence }
    }

    /// `claim N: supported|not supported - <numbers>`
    pub fn line(&self) -> String {
        format!(
            "claim {}: {} - {}",
            self.claim,
            if self.supported { "supported" } else { "not supported" },
            self.evidence
        )
    }
}

/// One measurable part of a claim.
#[derive(Clone, Debug)]
pub struct Check {
    pub holds: bool,
    pub text: String,
}

impl Check {
    pub fn new(holds: bool, text: impl Into<String>) -> Check {
        Check { holds, text: text.into() }
    }

    /// A check that cannot be evaluated because a data point is missing.
    pub fn missing(what: &str) -> Check {
        Check { holds: false, text: format!("no data for {what}") }
    }
}

/// A markdown table from a header and rows.
pub fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", header.join(" | "));
    let _ = writeln!(s, "|{}|", header.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for r in rows {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_needs_every_check() {
        let v = Verdict::from_checks(3, &[Check::new(true, "a=1"), Check::new(false, "b=2")]);
        assert_eq!(v.line(), "claim 3: not supported - a=1; FAILS: b=2");
        let v = Verdict::from_checks(1, &[Check::new(true, "a=1")]);
        assert_eq!(v.line(), "claim 1: supported - a=1");
        assert!(!Verdict::from_checks(2, &[]).supported);
    }
}
