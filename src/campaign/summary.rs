//! What a campaign leaves behind for people and CI: `summary.json` (every
//! run's verdict, anomalies, abort rate, throughput and folder; the input
//! of `harness compare`) and `junit.xml` (one test case per run; a run that
//! misses its expectation is a failure, one that could not run an error).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use serde::{Deserialize, Serialize};

/// How a run ended, for CI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// It met its expectation.
    Passed,
    /// It ran and missed its expectation.
    Failed,
    /// It could not run to a verdict (bad settings, database down, killed
    /// after the run timeout).
    Error,
}

/// One run in `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run's name, stable across campaigns.
    pub name: String,
    /// The database label.
    pub db: String,
    /// The `--db` value.
    #[serde(default)]
    pub db_kind: String,
    /// The workload.
    #[serde(default)]
    pub workload: String,
    /// The level checked.
    #[serde(default)]
    pub level: String,
    /// The database's isolation setting, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// The nemesis label.
    #[serde(default)]
    pub nemesis: String,
    /// The seed.
    #[serde(default)]
    pub seed: u64,
    /// `ok` or `anomalous`.
    #[serde(default)]
    pub expect: String,
    /// Anomalies the run had to find.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_anomalies: Vec<String>,
    /// passed, failed or error.
    pub status: RunStatus,
    /// Why, in one line.
    #[serde(default)]
    pub message: String,
    /// The checker's verdict (`ok`, `anomalous`, `unknown`), when it ran.
    #[serde(default)]
    pub verdict: Option<String>,
    /// Anomaly counts by title.
    #[serde(default)]
    pub anomalies: BTreeMap<String, usize>,
    /// Transactions attempted.
    #[serde(default)]
    pub txns: Option<u64>,
    /// Share of transactions surely aborted.
    #[serde(default)]
    pub abort_rate: Option<f64>,
    /// Share of transactions with unknown outcome.
    #[serde(default)]
    pub info_rate: Option<f64>,
    /// Committed transactions per second.
    #[serde(default)]
    pub throughput: Option<f64>,
    /// Why the run tested little (report.json's `run.tested_little`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tested_little: Vec<String>,
    /// Faults injected.
    #[serde(default)]
    pub faults: Option<u64>,
    /// Of which not applied (their command failed).
    #[serde(default)]
    pub faults_failed: Option<u64>,
    /// Wall-clock seconds of the whole `harness run`.
    #[serde(default)]
    pub seconds: f64,
    /// The run folder, relative to the summary's folder.
    #[serde(default)]
    pub dir: Option<String>,
    /// The log of `harness run`, relative to the summary's folder.
    #[serde(default)]
    pub log: Option<String>,
    /// The exit code of `harness run` (none when it was killed).
    #[serde(default)]
    pub exit_code: Option<i32>,
}

/// The whole `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The campaign's name.
    pub campaign: String,
    /// The campaign file.
    #[serde(default)]
    pub file: String,
    /// When it started (RFC 3339).
    #[serde(default)]
    pub started: String,
    /// When it finished.
    #[serde(default)]
    pub finished: String,
    /// Runs that met their expectation.
    pub passed: u64,
    /// Runs that missed it.
    pub failed: u64,
    /// Runs that could not run.
    pub errors: u64,
    /// Every run, in campaign order.
    pub runs: Vec<RunSummary>,
}

impl Summary {
    /// Reads `summary.json`, or the one in a campaign folder.
    pub fn load(path: &Path) -> Result<Summary> {
        let file = if path.is_dir() {
            path.join("summary.json")
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        serde_json::from_str(&text).map_err(|e| {
            anyhow!(
                "{}:{}: not a campaign summary: {e}",
                file.display(),
                e.line()
            )
        })
    }

    /// Writes `summary.json`.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    /// The JUnit XML: one suite for the campaign, one case per run.
    pub fn junit(&self, logs: &BTreeMap<String, String>) -> Result<String> {
        let mut report = Report::new(format!("isoharness {}", self.campaign));
        let mut suite = TestSuite::new(self.campaign.clone());
        let mut total = Duration::ZERO;
        for r in &self.runs {
            let status = match r.status {
                RunStatus::Passed => TestCaseStatus::success(),
                RunStatus::Failed | RunStatus::Error => {
                    let kind = if r.status == RunStatus::Failed {
                        NonSuccessKind::Failure
                    } else {
                        NonSuccessKind::Error
                    };
                    let mut s = TestCaseStatus::non_success(kind);
                    s.set_message(r.message.clone());
                    s.set_type(if r.status == RunStatus::Failed {
                        "expectation"
                    } else {
                        "run-error"
                    });
                    s
                }
            };
            let mut tc = TestCase::new(r.name.clone(), status);
            tc.set_classname(format!("{}.{}", self.campaign, r.db));
            let secs = Duration::from_secs_f64(r.seconds.max(0.0));
            tc.set_time(secs);
            total += secs;
            let mut out = format!("{}\n", r.message);
            if let Some(d) = &r.dir {
                out.push_str(&format!("run folder: {d}\n"));
            }
            if let Some(log) = logs.get(&r.name) {
                out.push_str(log);
            }
            tc.set_system_out(out);
            suite.add_test_case(tc);
        }
        suite.set_time(total);
        report.add_test_suite(suite);
        report.set_time(total);
        report
            .to_string()
            .map_err(|e| anyhow!("cannot write the JUnit XML: {e}"))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn run(name: &str, status: RunStatus) -> RunSummary {
        RunSummary {
            name: name.into(),
            db: "pg".into(),
            db_kind: "postgres".into(),
            workload: "mini".into(),
            level: "si".into(),
            isolation: None,
            nemesis: "none".into(),
            seed: 1,
            expect: "ok".into(),
            expect_anomalies: vec![],
            status,
            message: format!("{name} <&> \"x\""),
            verdict: Some("ok".into()),
            anomalies: BTreeMap::new(),
            txns: Some(10),
            abort_rate: Some(0.1),
            info_rate: Some(0.0),
            throughput: Some(100.0),
            tested_little: vec![],
            faults: Some(0),
            faults_failed: Some(0),
            seconds: 1.5,
            dir: Some("runs/x".into()),
            log: None,
            exit_code: Some(0),
        }
    }

    #[test]
    fn summaries_round_trip_and_junit_has_a_case_per_run() {
        let s = Summary {
            campaign: "c".into(),
            file: "f.toml".into(),
            started: "t0".into(),
            finished: "t1".into(),
            passed: 1,
            failed: 1,
            errors: 1,
            runs: vec![
                run("a", RunStatus::Passed),
                run("b", RunStatus::Failed),
                run("c", RunStatus::Error),
            ],
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("summary.json");
        s.write(&p).unwrap();
        assert_eq!(Summary::load(dir.path()).unwrap(), s);
        let xml = s.junit(&BTreeMap::new()).unwrap();
        assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
        assert!(xml.contains("<failure") && xml.contains("<error"), "{xml}");
        assert!(xml.contains("&lt;&amp;&gt;"), "escaped: {xml}");
    }
}
