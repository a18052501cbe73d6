//! `harness compare OLD NEW`: regression check between two campaign
//! summaries, for CI after a nightly campaign.
//!
//! Runs are matched by name (names are stable: database, workload, level,
//! isolation, nemesis, seed). A *regression* is:
//!
//! * a new anomaly: a run of NEW shows an anomaly (by title) its OLD run
//!   did not;
//! * a run that met its expectation in OLD and does not in NEW (failed, or
//!   could not run);
//! * a throughput drop: NEW's committed transactions per second below OLD's
//!   by more than `--throughput-drop` (a fraction of OLD's);
//! * an abort-rate rise: NEW's abort rate above OLD's by more than
//!   `--abort-rise` (absolute, 0.05 = five percentage points).
//!
//! Runs only in OLD or only in NEW are listed, and are not regressions.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use crate::campaign::summary::{RunStatus, RunSummary, Summary};

/// Arguments of `harness compare`.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Exit codes: 0 no regression; 1 a regression (a new anomaly, a run that \
no longer meets its expectation, or throughput / abort rate beyond the thresholds); 2 a summary \
cannot be read or the arguments are wrong."
)]
pub struct CompareArgs {
    /// The older summary.json (or its campaign folder).
    pub old: PathBuf,
    /// The newer summary.json (or its campaign folder).
    pub new: PathBuf,
    /// Flag a throughput drop larger than this fraction of the old value.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.25)]
    pub throughput_drop: f64,
    /// Flag an abort-rate rise larger than this (absolute; 0.05 = 5 points).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.05)]
    pub abort_rise: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One difference between the runs of the same name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The run.
    pub run: String,
    /// `new-anomaly`, `expectation`, `throughput`, `abort-rate`, or, for
    /// notes, `improved`, `only-old`, `only-new`.
    pub kind: &'static str,
    /// What changed, in one line.
    pub message: String,
}

/// The result of a comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Comparison {
    /// Runs found in both.
    pub compared: usize,
    /// What is worse.
    pub regressions: Vec<Finding>,
    /// What is better or unmatched.
    pub notes: Vec<Finding>,
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Compares the runs of `new` with those of the same name in `old`.
pub fn compare(old: &Summary, new: &Summary, throughput_drop: f64, abort_rise: f64) -> Comparison {
    let mut c = Comparison::default();
    let find = |s: &'_ Summary, name: &str| -> Option<RunSummary> {
        s.runs.iter().find(|r| r.name == name).cloned()
    };
    for n in &new.runs {
        let Some(o) = find(old, &n.name) else {
            c.notes.push(Finding {
                run: n.name.clone(),
                kind: "only-new",
                message: "no run of this name in OLD".into(),
            });
            continue;
        };
        c.compared += 1;
        let mut reg = |kind, message: String| {
            c.regressions.push(Finding {
                run: n.name.clone(),
                kind,
                message,
            })
        };
        let new_anomalies: Vec<String> = n
            .anomalies
            .iter()
            .filter(|(k, _)| !o.anomalies.contains_key(*k))
            .map(|(k, v)| format!("{k} x{v}"))
            .collect();
        if !new_anomalies.is_empty() {
            reg("new-anomaly", format!("new: {}", new_anomalies.join(", ")));
        }
        if o.status == RunStatus::Passed && n.status != RunStatus::Passed {
            reg(
                "expectation",
                format!("passed before, {:?} now: {}", n.status, n.message).to_lowercase(),
            );
        }
        if let (Some(a), Some(b)) = (o.throughput, n.throughput) {
            if a > 0.0 && b < a * (1.0 - throughput_drop) {
                reg(
                    "throughput",
                    format!(
                        "throughput {a:.1} -> {b:.1} committed/s ({:+.1}%, threshold -{})",
                        (b / a - 1.0) * 100.0,
                        pct(throughput_drop)
                    ),
                );
            } else if a > 0.0 && b > a * (1.0 + throughput_drop) {
                c.notes.push(Finding {
                    run: n.name.clone(),
                    kind: "improved",
                    message: format!("throughput {a:.1} -> {b:.1} committed/s"),
                });
            }
        }
        if let (Some(a), Some(b)) = (o.abort_rate, n.abort_rate) {
            if b > a + abort_rise {
                c.regressions.push(Finding {
                    run: n.name.clone(),
                    kind: "abort-rate",
                    message: format!(
                        "abort rate {} -> {} (threshold +{})",
                        pct(a),
                        pct(b),
                        pct(abort_rise)
                    ),
                });
            }
        }
    }
    for o in &old.runs {
        if find(new, &o.name).is_none() {
            c.notes.push(Finding {
                run: o.name.clone(),
                kind: "only-old",
                message: "no run of this name in NEW".into(),
            });
        }
    }
    c
}

/// Runs `harness compare`; 0 no regression, 1 regression.
pub fn command(args: CompareArgs) -> Result<u8> {
    for (name, v) in [
        ("--throughput-drop", args.throughput_drop),
        ("--abort-rise", args.abort_rise),
    ] {
        if !(0.0..=1.0).contains(&v) {
            bail!("{name} {v}: expected a fraction between 0 and 1");
        }
    }
    let old = Summary::load(&args.old)?;
    let new = Summary::load(&args.new)?;
    let c = compare(&old, &new, args.throughput_drop, args.abort_rise);
    let text = if args.json {
        serde_json::to_string_pretty(&c)? + "\n"
    } else {
        let mut s = format!(
            "compared {} runs of {} (old) and {} (new): {} regression{}\n",
            c.compared,
            args.old.display(),
            args.new.display(),
            c.regressions.len(),
            if c.regressions.len() == 1 { "" } else { "s" }
        );
        for f in &c.regressions {
            s.push_str(&format!(
                "REGRESSION {} [{}]: {}\n",
                f.run, f.kind, f.message
            ));
        }
        for f in &c.notes {
            s.push_str(&format!("note {} [{}]: {}\n", f.run, f.kind, f.message));
        }
        s
    };
    crate::cli::print_out(&text);
    Ok(u8::from(!c.regressions.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn run(name: &str, tput: f64, aborts: f64, anomalies: &[&str]) -> RunSummary {
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
            status: if anomalies.is_empty() {
                RunStatus::Passed
            } else {
                RunStatus::Failed
            },
            message: String::new(),
            verdict: Some(
                if anomalies.is_empty() {
                    "ok"
                } else {
                    "anomalous"
                }
                .into(),
            ),
            anomalies: anomalies.iter().map(|a| (a.to_string(), 1)).collect(),
            txns: Some(100),
            abort_rate: Some(aborts),
            info_rate: Some(0.0),
            throughput: Some(tput),
            tested_little: vec![],
            faults: None,
            faults_failed: None,
            seconds: 1.0,
            dir: None,
            log: None,
            exit_code: Some(0),
        }
    }

    fn summary(runs: Vec<RunSummary>) -> Summary {
        Summary {
            campaign: "c".into(),
            file: String::new(),
            started: String::new(),
            finished: String::new(),
            passed: 0,
            failed: 0,
            errors: 0,
            runs,
        }
    }

    #[test]
    fn each_kind_of_regression_is_flagged() {
        let old = summary(vec![
            run("a", 100.0, 0.10, &[]),
            run("b", 100.0, 0.10, &[]),
            run("c", 100.0, 0.10, &[]),
            run("d", 100.0, 0.10, &["G-single (lost update)"]),
            run("gone", 1.0, 0.0, &[]),
        ]);
        let new = summary(vec![
            run("a", 95.0, 0.12, &[]),  // within thresholds
            run("b", 60.0, 0.10, &[]),  // throughput
            run("c", 100.0, 0.30, &[]), // aborts
            run("d", 100.0, 0.10, &["G-single (lost update)", "G0"]), // new anomaly
            run("fresh", 1.0, 0.0, &[]),
        ]);
        let c = compare(&old, &new, 0.25, 0.05);
        assert_eq!(c.compared, 4);
        let kinds: BTreeMap<&str, &str> = c
            .regressions
            .iter()
            .map(|f| (f.run.as_str(), f.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("b", "throughput"),
                ("c", "abort-rate"),
                ("d", "new-anomaly")
            ]
            .into()
        );
        assert!(c.regressions[2].message.contains("G0"), "{c:?}");
        let notes: Vec<&str> = c.notes.iter().map(|f| f.kind).collect();
        assert_eq!(notes, ["only-new", "only-old"]);
        let same = compare(&old, &old, 0.25, 0.05);
        assert!(same.regressions.is_empty());
    }

    #[test]
    fn a_run_that_stops_passing_is_a_regression() {
        let old = summary(vec![run("a", 100.0, 0.1, &[])]);
        let mut bad = run("a", 100.0, 0.1, &[]);
        bad.status = RunStatus::Error;
        bad.message = "database down".into();
        bad.throughput = None;
        let c = compare(&old, &summary(vec![bad]), 0.25, 0.05);
        assert_eq!(c.regressions.len(), 1);
        assert_eq!(c.regressions[0].kind, "expectation");
    }
}
