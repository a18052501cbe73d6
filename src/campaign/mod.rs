//! `harness campaign FILE`: a matrix of runs, as nightly CI wants it.
//!
//! Each run is one `harness run --scenario` in a child process (a run that
//! hangs or crashes cannot take the campaign with it, and is killed after
//! the campaign's `run_timeout`). Its merged scenario is kept in its folder,
//! so any run can be repeated alone:
//!
//! ```text
//! OUT/<campaign>/summary.json         every run: verdict, anomalies, rates, folder
//! OUT/<campaign>/junit.xml            one test case per run
//! OUT/<campaign>/runs/<run>/scenario.toml, run.log, <run-id>/ (history, report)
//! ```
//!
//! A `summary.json` already there is kept as `summary.prev.json`, ready for
//! `harness compare`.

pub mod args;
pub mod plan;
pub mod summary;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

pub use args::CampaignArgs;
use plan::{CampaignFile, PlannedRun};
use summary::{RunStatus, RunSummary, Summary};

/// Runs `harness campaign`; returns 0 when every run met its expectation,
/// 1 otherwise.
pub fn command(args: CampaignArgs) -> Result<u8> {
    let file = CampaignFile::load(&args.file)?;
    let stem = args
        .file
        .file_stem()
        .map_or("campaign".into(), |s| s.to_string_lossy().into_owned());
    let mut plan = file
        .plan(&stem)
        .with_context(|| format!("{}", args.file.display()))?;
    if !args.only.is_empty() {
        plan.runs
            .retain(|r| args.only.iter().any(|o| r.name.contains(o.as_str())));
        if plan.runs.is_empty() {
            bail!("no run name contains {}", args.only.join(" or "));
        }
    }
    if args.dry_run {
        let mut s = String::new();
        for r in &plan.runs {
            s.push_str(&format!("{}  (expect {})\n", r.name, describe(&r.expect)));
        }
        crate::output::print_out(&s);
        return Ok(0);
    }
    let root = args.out.join(&plan.name);
    fs::create_dir_all(root.join("runs"))
        .with_context(|| format!("cannot create {}", root.display()))?;
    let summary_path = root.join("summary.json");
    if summary_path.exists() {
        let prev = root.join("summary.prev.json");
        fs::rename(&summary_path, &prev)
            .with_context(|| format!("cannot move {} aside", summary_path.display()))?;
    }
    let exe = std::env::current_exe().context("cannot find the harness binary")?;
    let started = crate::run::now_rfc3339();
    let n = plan.runs.len();
    let mut runs = Vec::with_capacity(n);
    let mut logs = BTreeMap::new();
    let interrupted = on_ctrl_c();
    for (i, r) in plan.runs.iter().enumerate() {
        if interrupted.load(Ordering::Relaxed) {
            eprintln!("interrupted: {} runs not started", n - i);
            break;
        }
        eprintln!("[{}/{n}] {} ...", i + 1, r.name);
        let (summary, log) = execute(&exe, &root, r, plan.run_timeout);
        eprintln!(
            "[{}/{n}] {}: {} ({}) in {:.1} s",
            i + 1,
            r.name,
            status_word(summary.status),
            summary.message,
            summary.seconds
        );
        logs.insert(r.name.clone(), log);
        runs.push(summary);
    }
    let count = |s: RunStatus| runs.iter().filter(|r| r.status == s).count() as u64;
    let summary = Summary {
        campaign: plan.name.clone(),
        file: args.file.display().to_string(),
        started,
        finished: crate::run::now_rfc3339(),
        passed: count(RunStatus::Passed),
        failed: count(RunStatus::Failed),
        errors: count(RunStatus::Error),
        runs,
    };
    summary.write(&summary_path)?;
    let junit_path = root.join("junit.xml");
    fs::write(&junit_path, summary.junit(&logs)?)
        .with_context(|| format!("cannot write {}", junit_path.display()))?;
    let n = summary.runs.len();
    crate::output::print_out(&format!(
        "campaign {}: {} passed, {} failed, {} errors of {n} runs\nsummary: {}\njunit: {}\n",
        summary.campaign,
        summary.passed,
        summary.failed,
        summary.errors,
        summary_path.display(),
        junit_path.display()
    ));
    Ok(if summary.failed + summary.errors > 0 {
        1
    } else {
        0
    })
}

/// A flag the first Ctrl-C sets: the campaign then writes its summary
/// after the run in progress (which the same Ctrl-C asks to finish its
/// transactions in flight). A second Ctrl-C quits at once.
fn on_ctrl_c() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    if let Ok(rt) = rt {
        std::thread::spawn(move || {
            rt.block_on(async move {
                while tokio::signal::ctrl_c().await.is_ok() {
                    if f.swap(true, Ordering::Relaxed) {
                        eprintln!("interrupted");
                        std::process::exit(130);
                    }
                    eprintln!("interrupted: finishing the run in progress (Ctrl-C again to quit)");
                }
            })
        });
    }
    flag
}

fn status_word(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Passed => "passed",
        RunStatus::Failed => "FAILED",
        RunStatus::Error => "ERROR",
    }
}

fn describe(e: &crate::expectation::Expectation) -> String {
    if e.anomalies.is_empty() {
        e.expect.name().to_string()
    } else {
        format!("{}: {}", e.expect.name(), e.anomalies.join(", "))
    }
}

/// `path` relative to `base`, with `/`.
fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Runs one planned run in a child `harness run`; never fails: what goes
/// wrong is the run's `error`. Returns its summary and the end of its log.
fn execute(exe: &Path, root: &Path, r: &PlannedRun, limit: Duration) -> (RunSummary, String) {
    let t0 = Instant::now();
    let dir = root.join("runs").join(&r.name);
    let mut s = RunSummary {
        name: r.name.clone(),
        db: r.db.clone(),
        db_kind: r.db_kind.clone(),
        workload: r.workload.clone(),
        level: r.level.clone(),
        isolation: r.isolation.clone(),
        nemesis: r.nemesis.clone(),
        seed: r.seed,
        expect: r.expect.expect.name().into(),
        expect_anomalies: r.expect.anomalies.clone(),
        status: RunStatus::Error,
        message: String::new(),
        verdict: None,
        anomalies: BTreeMap::new(),
        txns: None,
        abort_rate: None,
        info_rate: None,
        throughput: None,
        tested_little: Vec::new(),
        faults: None,
        faults_failed: None,
        seconds: 0.0,
        dir: None,
        log: Some(relative(&dir.join("run.log"), root)),
        exit_code: None,
    };
    let result = spawn_run(exe, &dir, r, limit);
    s.seconds = t0.elapsed().as_secs_f64();
    let log = log_tail(&dir.join("run.log"));
    match result {
        Err(e) => s.message = format!("{e:#}"),
        Ok((code, run_dir)) => {
            s.exit_code = code;
            match run_dir.map(|d| read_report(&d, root, &mut s)) {
                Some(Ok(())) => {
                    let found = s.anomalies.clone();
                    let verdict = match s.verdict.as_deref() {
                        Some("ok") => checkers::Verdict::Ok,
                        Some("anomalous") => checkers::Verdict::Anomalous,
                        _ => checkers::Verdict::Unknown,
                    };
                    let (met, why) = r.expect.judge(verdict, &found, &s.tested_little);
                    s.status = if met {
                        RunStatus::Passed
                    } else {
                        RunStatus::Failed
                    };
                    s.message = why;
                }
                other => {
                    let last = log
                        .lines()
                        .rev()
                        .find(|l| l.starts_with("error:"))
                        .map(str::to_string)
                        .or_else(|| other.and_then(Result::err).map(|e| format!("{e:#}")))
                        .unwrap_or_else(|| "no report was written".into());
                    s.message = match code {
                        Some(c) => format!("harness run exited {c}: {last}"),
                        None => last,
                    };
                }
            }
        }
    }
    (s, log)
}

/// Writes the scenario and runs it; the exit code (none when killed) and
/// the run folder it made.
fn spawn_run(
    exe: &Path,
    dir: &Path,
    r: &PlannedRun,
    limit: Duration,
) -> Result<(Option<i32>, Option<PathBuf>)> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut scenario = r.scenario.clone();
    scenario.insert(
        "out".into(),
        toml::Value::String(dir.to_string_lossy().into_owned()),
    );
    // The run reads the scenario with its passwords from a private
    // temporary file; the copy kept in the results has them masked.
    let secret = format!(
        "# Run {} of a campaign\n{}",
        r.name,
        toml::to_string(&scenario)?
    );
    let mut private = tempfile::Builder::new()
        .prefix("isoharness-scenario-")
        .suffix(".toml")
        .tempfile()
        .context("cannot create a temporary scenario file")?;
    std::io::Write::write_all(&mut private, secret.as_bytes())
        .and_then(|()| private.as_file().sync_all())
        .context("cannot write a temporary scenario file")?;
    let shown = masked(&scenario);
    let text = format!(
        "# Run {} of a campaign; repeat it with: harness run --scenario THIS_FILE\n{}{}",
        r.name,
        if shown == scenario {
            ""
        } else {
            "# Passwords in URLs are masked as ***: put them back before repeating it.\n"
        },
        toml::to_string(&shown)?
    );
    let scenario_path = dir.join("scenario.toml");
    fs::write(&scenario_path, text)
        .with_context(|| format!("cannot write {}", scenario_path.display()))?;
    let before = run_dirs(dir);
    let log_path = dir.join("run.log");
    let log = fs::File::create(&log_path)
        .with_context(|| format!("cannot write {}", log_path.display()))?;
    let mut child = Command::new(exe)
        .arg("run")
        .arg("--scenario")
        .arg(private.path())
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    let t0 = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait()? {
            break st.code();
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "killed after the campaign's run_timeout ({} s)",
                limit.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let made = run_dirs(dir)
        .into_iter()
        .filter(|d| !before.contains(d))
        .max();
    Ok((code, made))
}

/// The scenario with every password in a URL (or a `password=` setting)
/// replaced by `***`, as logs and reports show URLs.
fn masked(scenario: &toml::Table) -> toml::Table {
    fn mask(v: &toml::Value) -> toml::Value {
        match v {
            toml::Value::String(s) => toml::Value::String(adapters::redact_url(s)),
            toml::Value::Array(a) => toml::Value::Array(a.iter().map(mask).collect()),
            toml::Value::Table(t) => toml::Value::Table(masked(t)),
            other => other.clone(),
        }
    }
    scenario.iter().map(|(k, v)| (k.clone(), mask(v))).collect()
}

/// The run folders (those with a history) under `dir`.
fn run_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("history.jsonl").exists())
        .collect()
}

/// Fills the summary from the run's `report.json`.
fn read_report(run_dir: &Path, root: &Path, s: &mut RunSummary) -> Result<()> {
    s.dir = Some(relative(run_dir, root));
    let path = run_dir.join("report.json");
    let text = fs::read_to_string(&path)
        .map_err(|_| anyhow!("the run left no report ({} is missing)", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    s.verdict = v["verdict"].as_str().map(str::to_string);
    if let Some(m) = v["check"]["anomaly_counts"].as_object() {
        for (k, n) in m {
            s.anomalies
                .insert(k.clone(), n.as_u64().unwrap_or(0) as usize);
        }
    }
    s.txns = v["counts"]["total"].as_u64();
    s.abort_rate = v["abort_rate"]["overall"].as_f64();
    s.info_rate = v["abort_rate"]["info"].as_f64();
    s.throughput = v["throughput"]["committed_per_s"].as_f64();
    s.tested_little = v["run"]["tested_little"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    // Leader changes the run saw are recorded beside its faults.
    let faults: Option<Vec<&serde_json::Value>> = v["faults"].as_array().map(|a| {
        a.iter()
            .filter(|f| f["kind"] != history::LEADER_CHANGE)
            .collect()
    });
    let faults = faults.as_ref();
    s.faults = Some(faults.map_or(0, |f| f.len() as u64));
    s.faults_failed = Some(faults.map_or(0, |f| {
        f.iter().filter(|x| x["applied"] == false).count() as u64
    }));
    if s.verdict.is_none() {
        bail!("{}: no verdict", path.display());
    }
    Ok(())
}

/// The last lines of a run's log, for the JUnit output.
fn log_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(40);
    let mut s = lines[from..].join("\n");
    s.push('\n');
    s
}
