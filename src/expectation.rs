//! What a scenario expects of a run (ok or anomalous, which anomalies,
//! whether it may test little) and how a finished run is judged against
//! it. A leaf: the command line, scenarios and campaigns all use it.

use std::collections::BTreeMap;

use checkers::Verdict;
use serde::{Deserialize, Serialize};

/// The outcome a scenario expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// No anomaly at the level (an `unknown` verdict does not fail this).
    Ok,
    /// At least one anomaly (and each of `anomalies`, when listed).
    Anomalous,
}

impl Expect {
    /// The name in files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Expect::Ok => "ok",
            Expect::Anomalous => "anomalous",
        }
    }
}

/// An expected outcome, and how a run is judged against it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    /// Anomalous or not.
    pub expect: Expect,
    /// Anomalies that must be among those found.
    pub anomalies: Vec<String>,
    /// Whether the run may test little (see `Scenario::tested_little`).
    pub tested_little: bool,
}

/// True when the expected anomaly name `want` names the found anomaly
/// title `found` (`G-single (lost update)`, `G2-item-realtime (write
/// skew)`): by the whole title, the Adya name with or without its scope,
/// or the common name; case and `_`/`-`/space are ignored.
pub fn names_match(want: &str, found: &str) -> bool {
    let norm = |s: &str| s.trim().to_ascii_lowercase().replace(['_', ' '], "-");
    let want = norm(want);
    let (adya, common) = match found.split_once(" (") {
        Some((a, c)) => (a, Some(c.trim_end_matches(')'))),
        None => (found, None),
    };
    let base = adya
        .strip_suffix("-session")
        .or_else(|| adya.strip_suffix("-realtime"))
        .unwrap_or(adya);
    want == norm(found)
        || want == norm(adya)
        || want == norm(base)
        || common.is_some_and(|c| want == norm(c))
}

impl Expectation {
    /// Whether a run with this verdict, these anomaly counts (titles as in
    /// `report.json`) and these reasons why it tested little (empty when
    /// it did not) meets the expectation, and why not. A run that tested
    /// little fails unless the expectation allows it.
    pub fn judge(
        &self,
        verdict: Verdict,
        found: &BTreeMap<String, usize>,
        little: &[String],
    ) -> (bool, String) {
        let (met, why) = self.judge_verdict(verdict, found);
        if met && !little.is_empty() && !self.tested_little {
            return (
                false,
                format!(
                    "{why}, but the run tested little ({}; set tested_little = true if that \
                     is expected)",
                    little.join("; ")
                ),
            );
        }
        (met, why)
    }

    fn judge_verdict(&self, verdict: Verdict, found: &BTreeMap<String, usize>) -> (bool, String) {
        let list = || {
            let v: Vec<String> = found.iter().map(|(k, n)| format!("{k} x{n}")).collect();
            v.join(", ")
        };
        match (self.expect, verdict) {
            (Expect::Ok, Verdict::Anomalous) => {
                (false, format!("expected no anomaly, found {}", list()))
            }
            (Expect::Ok, Verdict::Ok) => (true, "no anomaly, as expected".into()),
            (Expect::Ok, Verdict::Unknown) => (
                true,
                "no anomaly found (the check was undecided), as expected".into(),
            ),
            (Expect::Anomalous, Verdict::Anomalous) => {
                let missing: Vec<&str> = self
                    .anomalies
                    .iter()
                    .filter(|w| !found.keys().any(|f| names_match(w, f)))
                    .map(String::as_str)
                    .collect();
                if missing.is_empty() {
                    (true, format!("found {}, as expected", list()))
                } else {
                    (
                        false,
                        format!(
                            "expected {} among the anomalies, found {}",
                            missing.join(", "),
                            list()
                        ),
                    )
                }
            }
            (Expect::Anomalous, v) => {
                let what = if self.anomalies.is_empty() {
                    "an anomaly".to_string()
                } else {
                    self.anomalies.join(", ")
                };
                (false, format!("expected {what}, but the verdict is {v}"))
            }
        }
    }
}
