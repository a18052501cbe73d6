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
//!   by at least `--throughput-drop` (a fraction of OLD's, default 20%)
//!   *and* significantly so: committed counts over the runs' durations
//!   compared as Poisson rates, one-sided p below `--significance` (0.01).
//!   Runs shorter than `--min-duration` (5 s) are not judged on
//!   throughput, and a note says so: over a fraction of a second the rate
//!   of two identical runs differs twofold with the machine's scheduling
//!   (5738 against 2827 committed/s, p = 5e-59, for the same 1000
//!   transactions), a spread the Poisson model of counting does not know;
//!   the same holds for abort rates, which follow which transactions the
//!   scheduling makes meet (14% and 29% for two identical 600-transaction
//!   runs on PostgreSQL);
//! * an abort-rate rise: NEW's abort rate above OLD's by at least
//!   `--abort-rise` (absolute, 0.05 = five percentage points) *and*
//!   significantly so: a one-sided two-proportion z-test on aborted out of
//!   attempted transactions, p below `--significance`.
//!
//! The counts come from `summary.json`: `txns` attempted, `abort_rate` and
//! `info_rate` give the aborted and committed counts, and committed / the
//! throughput the duration. A run without `txns` is judged on the
//! threshold alone, and the message says so. See [`crate::stats`].
//!
//! Runs only in OLD or only in NEW are listed, and are not regressions.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use crate::campaign::summary::{RunStatus, RunSummary, Summary};
use crate::stats;

/// Arguments of `harness compare`.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Exit codes: 0 no regression; 1 a regression (a new anomaly, a run that \
no longer meets its expectation, or a throughput drop / abort-rate rise that is both beyond the \
threshold and statistically significant at --significance given the runs' sizes); 2 a summary \
cannot be read or the arguments are wrong."
)]
pub struct CompareArgs {
    /// The older summary.json (or its campaign folder).
    pub old: PathBuf,
    /// The newer summary.json (or its campaign folder).
    pub new: PathBuf,
    /// Flag a throughput drop only when it is at least this fraction of the
    /// old value (and significant).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.20)]
    pub throughput_drop: f64,
    /// Flag an abort-rate rise only when it is at least this much
    /// (absolute; 0.05 = 5 percentage points) and significant.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.05)]
    pub abort_rise: f64,
    /// The one-sided p-value below which a throughput drop or abort-rate
    /// rise counts as significant (Poisson rate test; two-proportion
    /// z-test).
    #[arg(long, value_name = "P", default_value_t = 0.01)]
    pub significance: f64,
    /// Judge throughput only when both runs' transactions took at least
    /// this long: shorter runs measure the machine's scheduling.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = humantime::parse_duration)]
    pub min_duration: std::time::Duration,
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
    /// notes, `improved`, `too-short`, `only-old`, `only-new`.
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

/// When a change in throughput or abort rate counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// The smallest relative throughput drop flagged (0.2 = 20%).
    pub throughput_drop: f64,
    /// The smallest absolute abort-rate rise flagged (0.05 = 5 points).
    pub abort_rise: f64,
    /// The one-sided p-value a change must be below.
    pub significance: f64,
    /// The shortest run (seconds of committing) whose throughput is judged.
    pub min_seconds: f64,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            throughput_drop: 0.20,
            abort_rise: 0.05,
            significance: 0.01,
            min_seconds: 5.0,
        }
    }
}

/// A rate times a count, as a whole number of transactions.
fn count(rate: f64, n: u64) -> u64 {
    (rate * n as f64).round().max(0.0) as u64
}

/// Committed transactions and the seconds they took, from a run's summary.
fn committed_over_time(r: &RunSummary) -> Option<(u64, f64)> {
    let n = r.txns?;
    let tput = r.throughput?;
    let done = 1.0 - r.abort_rate.unwrap_or(0.0) - r.info_rate.unwrap_or(0.0);
    let c = count(done.max(0.0), n);
    (c > 0 && tput > 0.0).then(|| (c, c as f64 / tput))
}

/// What a throughput change beyond the threshold is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Change {
    /// A significant drop (or, for aborts, rise): a regression.
    Drop,
    /// A significant rise.
    Rise,
    /// Runs too short to judge: a note.
    TooShort,
}

/// A throughput change worth a line, and what it is.
fn throughput_change(o: &RunSummary, n: &RunSummary, t: Thresholds) -> Option<(Change, String)> {
    let (a, b) = (o.throughput?, n.throughput?);
    if a <= 0.0 {
        return None;
    }
    let drop = b <= a * (1.0 - t.throughput_drop);
    let rise = b >= a * (1.0 + t.throughput_drop);
    if !drop && !rise {
        return None;
    }
    let change = (b / a - 1.0) * 100.0;
    let why = match (committed_over_time(o), committed_over_time(n)) {
        (Some((_, t1)), Some((_, t2))) if t1.min(t2) < t.min_seconds => {
            let message = format!(
                "throughput {a:.1} -> {b:.1} committed/s not judged: the runs committed for \
                 {t1:.2}/{t2:.2} s, under the {:.0} s minimum (--min-duration), where the \
                 rate measures the machine's scheduling more than the database",
                t.min_seconds
            );
            return Some((Change::TooShort, message));
        }
        (Some((c1, t1)), Some((c2, t2))) => {
            let test = if drop {
                stats::poisson_rate_drop(c1, t1, c2, t2)
            } else {
                let r = stats::poisson_rate_drop(c2, t2, c1, t1);
                stats::Test { z: -r.z, p: r.p }
            };
            if test.p >= t.significance {
                return None;
            }
            format!(
                "Poisson rate test z = {:.1}, p = {}, committed {c1}/{c2} in {t1:.1}/{t2:.1} s",
                test.z,
                stats::show_p(test.p)
            )
        }
        _ => "no transaction counts in a summary: threshold only, not tested".into(),
    };
    let message = format!("throughput {a:.1} -> {b:.1} committed/s ({change:+.1}%; {why})");
    Some((if drop { Change::Drop } else { Change::Rise }, message))
}

/// An abort-rate rise beyond the threshold: significant (a regression), or
/// on runs too short to judge (a note).
fn abort_rise(o: &RunSummary, n: &RunSummary, t: Thresholds) -> Option<(Change, String)> {
    let (a, b) = (o.abort_rate?, n.abort_rate?);
    if b < a + t.abort_rise - 1e-12 {
        return None;
    }
    if let (Some((_, t1)), Some((_, t2))) = (committed_over_time(o), committed_over_time(n)) {
        if t1.min(t2) < t.min_seconds {
            // Which transactions meet depends on the scheduling of a short
            // run: identical 600-transaction runs gave 14% and 29%.
            let message = format!(
                "abort rate {} -> {} not judged: the runs committed for {t1:.2}/{t2:.2} s, \
                 under the {:.0} s minimum (--min-duration), where contention follows the \
                 machine's scheduling",
                pct(a),
                pct(b),
                t.min_seconds
            );
            return Some((Change::TooShort, message));
        }
    }
    let why = match (o.txns, n.txns) {
        (Some(n1), Some(n2)) => {
            let test = stats::two_proportion_rise(count(a, n1), n1, count(b, n2), n2);
            if test.p >= t.significance {
                return None;
            }
            format!(
                "two-proportion z = {:.1}, p = {}, n = {n1}/{n2}",
                test.z,
                stats::show_p(test.p)
            )
        }
        _ => "no transaction counts in a summary: threshold only, not tested".into(),
    };
    Some((
        Change::Drop,
        format!("abort rate {} -> {} ({why})", pct(a), pct(b)),
    ))
}

/// Compares the runs of `new` with those of the same name in `old`.
pub fn compare(old: &Summary, new: &Summary, t: Thresholds) -> Comparison {
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
        let changes = [
            (throughput_change(&o, n, t), "throughput"),
            (abort_rise(&o, n, t), "abort-rate"),
        ];
        for (change, kind) in changes {
            let Some((change, message)) = change else {
                continue;
            };
            let (kind, list) = match change {
                Change::Drop => (kind, &mut c.regressions),
                Change::Rise => ("improved", &mut c.notes),
                Change::TooShort => ("too-short", &mut c.notes),
            };
            list.push(Finding {
                run: n.name.clone(),
                kind,
                message,
            });
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
        ("--significance", args.significance),
    ] {
        if !(0.0..=1.0).contains(&v) {
            bail!("{name} {v}: expected a fraction between 0 and 1");
        }
    }
    let old = Summary::load(&args.old)?;
    let new = Summary::load(&args.new)?;
    let t = Thresholds {
        throughput_drop: args.throughput_drop,
        abort_rise: args.abort_rise,
        significance: args.significance,
        min_seconds: args.min_duration.as_secs_f64(),
    };
    let c = compare(&old, &new, t);
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
    crate::output::print_out(&text);
    Ok(u8::from(!c.regressions.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn run(name: &str, tput: f64, aborts: f64, anomalies: &[&str]) -> RunSummary {
        let anomalous = !anomalies.is_empty();
        let status = if anomalous {
            RunStatus::Failed
        } else {
            RunStatus::Passed
        };
        RunSummary {
            message: String::new(),
            verdict: Some(if anomalous { "anomalous" } else { "ok" }.into()),
            anomalies: anomalies.iter().map(|a| (a.to_string(), 1)).collect(),
            // 900 committed at 100/s: 9 s, long enough to judge.
            txns: Some(1000),
            abort_rate: Some(aborts),
            throughput: Some(tput),
            faults: None,
            faults_failed: None,
            seconds: 1.0,
            dir: None,
            ..crate::campaign::summary::tests::run(name, status)
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
        let c = compare(&old, &new, Thresholds::default());
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
        let same = compare(&old, &old, Thresholds::default());
        assert!(same.regressions.is_empty());
    }

    /// A run of `txns` at one commit a second: long enough to judge.
    fn sized(name: &str, txns: u64, aborts: f64) -> RunSummary {
        let mut r = run(name, 1.0, aborts, &[]);
        r.txns = Some(txns);
        r
    }

    #[test]
    fn abort_rates_of_small_runs_are_noise_and_of_large_runs_news() {
        // 0.2% -> 33.8% on 10 transactions each: 0/10 vs 3/10 aborted,
        // z = 1.88, p = 0.03: chance explains it.
        let old = summary(vec![sized("small", 10, 0.002)]);
        let new = summary(vec![sized("small", 10, 0.338)]);
        let c = compare(&old, &new, Thresholds::default());
        assert!(c.regressions.is_empty(), "{c:?}");
        // The same two rates on 50 transactions each (0/50 vs 17/50) are
        // no longer chance at p < 0.01: z = 4.5.
        let old = summary(vec![sized("fifty", 50, 0.002)]);
        let new = summary(vec![sized("fifty", 50, 0.338)]);
        let c = compare(&old, &new, Thresholds::default());
        assert_eq!(c.regressions.len(), 1, "{c:?}");
        // 1% -> 30% on 5000 each is flagged, with the test's numbers.
        let old = summary(vec![sized("big", 5000, 0.01)]);
        let new = summary(vec![sized("big", 5000, 0.30)]);
        let c = compare(&old, &new, Thresholds::default());
        assert_eq!(c.regressions.len(), 1, "{c:?}");
        let m = &c.regressions[0].message;
        assert!(
            m.starts_with("abort rate 1.0% -> 30.0% (two-proportion z = ")
                && m.contains(", p = ")
                && m.ends_with(", n = 5000/5000)"),
            "{m}"
        );
        // Significant but below the minimum effect: 1% -> 3% on 100000.
        let old = summary(vec![sized("tiny-effect", 100_000, 0.01)]);
        let new = summary(vec![sized("tiny-effect", 100_000, 0.03)]);
        assert!(compare(&old, &new, Thresholds::default())
            .regressions
            .is_empty());
    }

    #[test]
    fn short_runs_are_not_judged_on_throughput_and_say_so() {
        // Two identical campaigns of 1000 transactions on a busy machine:
        // 0.17 s and 0.35 s of committing.
        let fast = |tput: f64| {
            let mut r = run("t", tput, 0.0, &[]);
            r.txns = Some(1000);
            r
        };
        let (old, new) = (summary(vec![fast(5738.0)]), summary(vec![fast(2827.0)]));
        let c = compare(&old, &new, Thresholds::default());
        assert!(c.regressions.is_empty(), "{c:?}");
        assert_eq!(c.notes.len(), 1, "{c:?}");
        assert_eq!(c.notes[0].kind, "too-short");
        assert!(
            c.notes[0]
                .message
                .contains("not judged: the runs committed for 0.17/0.35 s, under the 5 s minimum"),
            "{}",
            c.notes[0].message
        );
        // With no minimum the Poisson test alone calls it a regression.
        let t = Thresholds {
            min_seconds: 0.0,
            ..Thresholds::default()
        };
        assert_eq!(compare(&old, &new, t).regressions[0].kind, "throughput");
        // Abort rates too: identical short runs on PostgreSQL gave 14% and
        // 29%.
        let (mut o, mut n) = (fast(5738.0), fast(5738.0));
        (o.abort_rate, n.abort_rate) = (Some(0.14), Some(0.29));
        let c = compare(&summary(vec![o]), &summary(vec![n]), Thresholds::default());
        assert!(c.regressions.is_empty(), "{c:?}");
        assert_eq!(c.notes[0].kind, "too-short", "{c:?}");
        assert!(c.notes[0]
            .message
            .starts_with("abort rate 14.0% -> 29.0% not judged"));
    }

    #[test]
    fn throughput_drops_are_tested_as_poisson_rates() {
        let sized_tput = |txns: u64, tput: f64| {
            let mut r = run("t", tput, 0.0, &[]);
            r.txns = Some(txns);
            r
        };
        // 20 committed at 100/s (0.2 s) vs 20 at 50/s (0.4 s): halved, but
        // 20 vs 20 events in 0.2 vs 0.4 s is z = -1.63, p = 0.05.
        let c = compare(
            &summary(vec![sized_tput(20, 100.0)]),
            &summary(vec![sized_tput(20, 50.0)]),
            Thresholds::default(),
        );
        assert!(c.regressions.is_empty(), "{c:?}");
        // 5000 at 100/s vs 5000 at 70/s: z = -8.4.
        let c = compare(
            &summary(vec![sized_tput(5000, 100.0)]),
            &summary(vec![sized_tput(5000, 70.0)]),
            Thresholds::default(),
        );
        assert_eq!(c.regressions.len(), 1, "{c:?}");
        let m = &c.regressions[0].message;
        assert!(
            m.starts_with("throughput 100.0 -> 70.0 committed/s (-30.0%; Poisson rate test z = -")
                && m.contains("committed 5000/5000 in 50.0/71.4 s"),
            "{m}"
        );
        // Significant but small: -10% on 5000.
        let c = compare(
            &summary(vec![sized_tput(5000, 100.0)]),
            &summary(vec![sized_tput(5000, 90.0)]),
            Thresholds::default(),
        );
        assert!(c.regressions.is_empty(), "{c:?}");
        // No counts: the threshold alone decides, and says so.
        let mut o = sized_tput(5000, 100.0);
        let mut n = sized_tput(5000, 50.0);
        o.txns = None;
        n.txns = None;
        let c = compare(&summary(vec![o]), &summary(vec![n]), Thresholds::default());
        assert!(c.regressions[0].message.contains("threshold only"), "{c:?}");
    }

    #[test]
    fn a_run_that_stops_passing_is_a_regression() {
        let old = summary(vec![run("a", 100.0, 0.1, &[])]);
        let mut bad = run("a", 100.0, 0.1, &[]);
        bad.status = RunStatus::Error;
        bad.message = "database down".into();
        bad.throughput = None;
        let c = compare(&old, &summary(vec![bad]), Thresholds::default());
        assert_eq!(c.regressions.len(), 1);
        assert_eq!(c.regressions[0].kind, "expectation");
    }
}
