//! `harness run`: set up the database, run the clients, record the history,
//! then check it and write `report.json`. After the clients and the faults,
//! the final reads read back every key the run wrote ([`final_reads`]).

mod closing;
mod final_reads;
mod holdback;
pub mod hooks;
mod recorder;
mod runner;
mod signals;
mod stats;
mod streamed;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use adapters::{redact_url, Database, OpenOptions};
use anyhow::{anyhow, bail, Context, Result};
use checkers::{CheckOptions, Report, Verdict};
use history::Header;
use serde::Serialize;
use workloads::{KeyDist, WorkloadConfig};

use crate::cli::RunArgs;
use crate::output::exit_code;
use runner::{Budget, Clock, Shared};
use stats::Stats;

/// The transaction budget when neither `--txns` nor `--duration` is given.
const DEFAULT_TXNS: u64 = 2000;
/// The same for the embedded SQLite, which runs several thousand
/// transactions a second: enough committed writers to test something, in
/// about a second.
const DEFAULT_TXNS_SQLITE: u64 = 5000;

/// The transaction budget of a run without `--txns` or `--duration`.
pub(crate) fn default_txns(db: crate::cli::DbArg) -> u64 {
    match db {
        crate::cli::DbArg::Sqlite => DEFAULT_TXNS_SQLITE,
        _ => DEFAULT_TXNS,
    }
}

/// Now, as RFC 3339 UTC with seconds.
pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// What `report.json` says about how the run was made.
#[derive(Serialize)]
struct RunInfo {
    id: String,
    db: String,
    /// The URL(s) or file, passwords redacted.
    url: String,
    workload: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<String>,
    /// blindw and range: the order of keys inside a transaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    key_order: Option<String>,
    level: String,
    /// The database's own isolation setting used.
    isolation: String,
    /// What the server said it is (the history header's `server`).
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    /// Session settings beyond the isolation (`--session-var`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    settings: Vec<String>,
    seed: u64,
    clients: u32,
    keys: u64,
    dist: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    txns_budget: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_s: Option<f64>,
    started: String,
    finished: String,
    /// False when the history lacks its `end` line.
    complete: bool,
    /// True when Ctrl-C or SIGTERM ended the run before its budget was
    /// used up.
    interrupted: bool,
    /// The signal that interrupted it (`SIGINT`, `SIGTERM`).
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupted_by: Option<&'static str>,
    /// Why the run tested little (see `stats::tested_little`): a verdict
    /// `ok` then says little. Empty when it did not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tested_little: Vec<String>,
    /// The longest span with no commit, when the database seems to have
    /// been gone (see `stats::outage`); also among `tested_little`.
    #[serde(skip_serializing_if = "Option::is_none")]
    outage: Option<stats::Outage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    /// How often clients of a `--stream` `append` run skipped ahead; the
    /// plans they skipped never ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped_ahead: Option<SkippedAhead>,
    /// The tables the run created (its own names), and whether they were
    /// kept (`--keep-tables`, or the drop failed) or dropped at the end.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tables: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    tables_kept: bool,
    /// Why they were kept: `--keep-tables`, or why the drop failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    tables_kept_why: Option<String>,
    /// The nemesis entries, in their compact syntax.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    nemesis: Vec<String>,
}

/// The whole `report.json`.
#[derive(Serialize)]
struct RunReport<'a> {
    run: RunInfo,
    verdict: Verdict,
    counts: Counts,
    abort_rate: AbortRates<'a>,
    throughput: &'a stats::Throughput,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_ms: Option<&'a stats::Latency>,
    /// The faults injected, as the history records them.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    faults: &'a [history::Fault],
    /// The workload's end-of-run check (TPC-C consistency conditions).
    #[serde(skip_serializing_if = "Option::is_none")]
    end_check: Option<&'a workloads::EndReport>,
    /// The final reads (transactions of kind `final-read`), left out of
    /// `counts`, `abort_rate`, `throughput` and `latency_ms`; absent with
    /// `--no-final-reads` or when there was nothing to read.
    #[serde(skip_serializing_if = "Option::is_none")]
    final_reads: Option<&'a stats::FinalReads>,
    check: &'a Report,
}

#[derive(Serialize)]
struct Counts {
    total: u64,
    committed: u64,
    failed: u64,
    info: u64,
}

#[derive(Serialize)]
struct AbortRates<'a> {
    overall: f64,
    info: f64,
    /// Transactions a deadlock ended (40P01, 1213), and their share.
    deadlocks: u64,
    deadlock_rate: f64,
    top_errors: &'a [stats::ErrorCount],
    by_kind: &'a std::collections::BTreeMap<String, stats::Outcomes>,
}

/// The workload, its configuration, and the text of its distribution.
fn workload(args: &RunArgs, seed: u64) -> Result<(Box<dyn workloads::Workload>, WorkloadConfig)> {
    let mut cfg = WorkloadConfig::for_workload(&args.workload)?;
    if let Some(k) = args.keys {
        cfg.keys = k;
    }
    if let Some(d) = &args.dist {
        cfg.dist = d.parse::<KeyDist>()?;
    }
    if let Some(o) = args.ops {
        cfg.ops_per_txn = o;
    }
    cfg.read_ratio = args.read_ratio.or(cfg.read_ratio);
    cfg.variant = args.variant.clone();
    if let Some(o) = args.key_order {
        cfg.key_order = o;
    }
    cfg.seed = seed;
    cfg.clients = args.clients;
    args.tpcc.apply(&args.workload, &mut cfg)?;
    let w = workloads::build(&args.workload, &cfg)?;
    Ok((w, cfg))
}

/// A fresh `OUT/<timestamp>-<db>-<workload>-<level>[-N]` folder.
fn make_run_dir(out: &Path, db: &str, workload: &str, level: &str) -> Result<(String, PathBuf)> {
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let base = format!("{stamp}-{db}-{workload}-{level}");
    for n in 1..1000 {
        let id = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let dir = out.join(&id);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok((id, dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
        }
    }
    bail!("{}: too many runs named {base}", out.display())
}

/// Clients that fell more than `max_drift` plans behind the fastest and
/// skipped ahead to it (`closing::Finished::catch_up`): `times` skips,
/// `plans` plans skipped in all.
#[derive(Clone, Copy, Debug, Serialize)]
struct SkippedAhead {
    times: u64,
    plans: u64,
    max_drift: u64,
}

/// The results of the client phase.
struct Phase {
    /// The signal that stopped the clients early, if one did.
    interrupted: Option<&'static str>,
    recorded: recorder::Recorded,
    /// What the recorder counted as it wrote (taken once, for the report).
    kept: Option<recorder::Kept>,
    elapsed: Duration,
    warnings: Vec<String>,
    /// The workload's end-of-run check of the final state, when it ran.
    end_check: Option<workloads::EndReport>,
    /// What the final reads did; `None` with `--no-final-reads`.
    final_reads: Option<final_reads::Done>,
    /// The verdict of the check made while recording.
    streamed: Option<streamed::Ended>,
    /// Whether clients skipped ahead, when any did.
    skipped_ahead: Option<SkippedAhead>,
}

/// Runs `harness run`; returns the verdict's exit code.
pub fn command(mut args: RunArgs) -> Result<u8> {
    let routing = crate::cluster::prepare_run(&mut args)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The handlers of Ctrl-C and SIGTERM are installed before the run
    // folder, the tables and the history exist, so that no signal can kill
    // the run half way through making them: from here on a first signal
    // stops the run gracefully, whenever it comes.
    let interrupts = {
        let _in_runtime = rt.enter();
        signals::Interrupts::watch()
    };
    let seed = args.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64 & 0xffff_ffff_ffff)
    });
    let (wl, cfg) = workload(&args, seed)?;
    let nemesis =
        crate::nemesis::Nemesis::new(&args.nemesis, &args.targets).map_err(|e| anyhow!(e))?;
    let db_name = args.db.kind().name();
    let (run_id, dir) = make_run_dir(&args.out, db_name, wl.name(), args.level.name())?;
    let history_path = dir.join("history.jsonl");
    let started = now_rfc3339();
    let result = (|| {
        let mut opts = OpenOptions::new(args.urls.clone(), dir.clone());
        opts.statement_timeout = args.statement_timeout;
        // After an interrupt's grace period, statements still in flight
        // are abandoned.
        opts.give_up = interrupts.abandoned.clone();
        // Faults of the built-in proxy: the clients go through it; the
        // tables are created and dropped on the database itself.
        let proxies = rt
            .block_on(nemesis.proxies(db_name, &args.urls, seed))
            .map_err(|e| anyhow!(e))?;
        if let Some(p) = &proxies {
            opts.urls = p.urls();
            opts.admin_urls = p.direct();
        }
        opts.bug = args.bug;
        opts.seed = seed;
        opts.read_lock = args.read_lock.unwrap_or_default();
        opts.tidb_txn_mode = args.tidb_txn_mode.clone();
        opts.session_vars = args.session_vars.clone();
        // The run's own tables: two runs on one database never meet.
        opts.tables = adapters::TableNames::for_run(&run_id);
        if args.bug.is_some() && args.db != crate::cli::DbArg::Memdb {
            anyhow::bail!("--bug only applies to --db memdb");
        }
        let db = match &routing {
            Some(r) => crate::cluster::route::open(args.db.kind(), &opts, r)?,
            None => adapters::open(args.db.kind(), &opts)?,
        };
        let iso = match db.isolation(args.level, args.isolation.as_deref()) {
            Ok(iso) => iso,
            // A database that is not there is told first (with how to
            // start it): both need fixing.
            Err(e) => match rt.block_on(db.connect(0)) {
                Err(c) => bail!("{c}\n(and once it runs: {e})"),
                Ok(s) => {
                    rt.block_on(s.close());
                    return Err(e.into());
                }
            },
        };
        // PostgreSQL refuses SERIALIZABLE on a hot standby: every read-only
        // transaction routed there would fail.
        if routing.as_ref().is_some_and(|r| !r.readers.is_empty())
            && args.db == crate::cli::DbArg::Postgres
            && iso.name == "serializable"
        {
            bail!(
                "PostgreSQL standbys refuse SERIALIZABLE transactions, and read-only ones \
                 go to the standbys: add --isolation repeatable-read (or read committed)"
            );
        }
        let header = Header {
            version: 1,
            db: Some(db_name.into()),
            level: Some(args.level.name().into()),
            isolation: Some(iso.name.into()),
            workload: Some(wl.name().into()),
            seed: Some(seed),
            clients: Some(u64::from(args.clients)),
            started: Some(started.clone()),
            // Asked on a connection of its own, before the clients start.
            server: rt.block_on(db.server()),
            settings: db.settings(),
        };
        let location = match &proxies {
            Some(p) => format!("{} (through the proxy to {})", db.location(), p.upstreams()),
            None => db.location(),
        };
        let faults = Faults {
            nemesis: &nemesis,
            proxies,
            dir: &dir,
            seed,
        };
        let streaming = streamed::start(&args, &history_path, &interrupts);
        // A run checked as it goes reads each list as it closes, so the
        // check can let go of it.
        let closing =
            args.stream && !args.no_final_reads && streaming.is_some() && wl.closes_keys();
        let phase = rt.block_on(clients_phase(
            &args,
            &db,
            iso.clone(),
            &*wl,
            &header,
            &history_path,
            faults,
            &interrupts,
            closing,
        ));
        let streamed = streaming.and_then(streamed::Streaming::finish);
        // A cluster whose node faults were just healed: let its nodes
        // rejoin before the tables are dropped through node 1.
        let settled = crate::cluster::settle(&args);
        // Drop the run's tables (only those its setup created), also when
        // the run failed, and release its lock. The adapter keeps trying
        // for `teardown_wait`; this limit only stops a hung drop.
        let limit = opts.teardown_wait + args.connect_timeout + args.statement_timeout;
        let down =
            rt.block_on(async { tokio::time::timeout(limit, db.teardown(args.keep_tables)).await });
        let tables = if args.db == crate::cli::DbArg::Memdb {
            Vec::new()
        } else {
            opts.tables.for_schema(&wl.schema())
        };
        // Why the tables are still there, if they are.
        let kept_why = match down {
            _ if args.keep_tables => Some("--keep-tables".to_string()),
            Ok(Ok(())) => None,
            Ok(Err(adapters::AdapterError::Teardown { url, detail, .. })) => {
                Some(format!("the drop at {url} failed: {detail}"))
            }
            Ok(Err(e)) => Some(format!("the drop failed: {e}")),
            Err(_) => Some(format!("the drop took longer than {} s", limit.as_secs())),
        };
        let kept = kept_why.filter(|_| !tables.is_empty());
        let mut phase = match phase {
            Ok(p) => p,
            Err(e) => {
                // A failed run still says which tables it left behind.
                if let Some(why) = &kept {
                    crate::output::print_out(&tables_kept_line(&tables, why));
                }
                return Err(e);
            }
        };
        phase.warnings.extend(settled);
        phase.streamed = streamed;
        anyhow::Ok((location, iso, header, phase, tables, kept))
    })();
    let (location, iso, header, mut phase, tables, kept_why) = match result {
        Ok(r) => r,
        Err(e) => {
            // Nothing was recorded: leave no run folder behind. A history,
            // even a partial one, is kept.
            if !history_path.exists() {
                let _ = fs::remove_dir_all(&dir);
            }
            return Err(e);
        }
    };
    let finished = now_rfc3339();

    let recorder::Kept {
        stats: counted,
        buckets,
        faults,
    } = phase
        .kept
        .take()
        .ok_or_else(|| anyhow!("the recorder's counts were taken twice"))?;
    let st = counted.finish(phase.elapsed.as_secs_f64());
    // The clients' bar is gone: say what happens while the history is
    // read back and checked (a spinner, or a status line every 10 s).
    let progress = Arc::new(crate::progress::Reporter::stderr());
    let (h, mut report) = match not_read_back(&args, &phase, &history_path) {
        Some(report) => (None, report),
        None => {
            let h = progress
                .read_recorded(&history_path)
                .with_context(|| "cannot read back the recorded history")?;
            let mut opts = CheckOptions {
                timeout: crate::output::limit(args.check_timeout),
                ..CheckOptions::default()
            };
            progress.watch(&mut opts, false);
            let report = checkers::check(&h, args.level, &opts);
            (Some(h), report)
        }
    };
    // A run in which nothing committed has nothing to check, as `harness
    // check` says: its history and report are still written, the report
    // without an `ok`, and the run exits 2.
    let hint = "`harness check --allow-empty` on it checks it anyway";
    let nothing = h
        .as_ref()
        .and_then(|h| crate::check_cmd::nothing_to_check(&history_path, h, hint))
        .or_else(|| {
            // Final reads alone read nothing anyone wrote.
            (st.outcomes.committed == 0).then(|| {
                format!(
                    "{}: nothing to check: none of its {} workload transactions committed \
                     (only its final reads did); {hint}",
                    history_path.display(),
                    st.outcomes.total
                )
            })
        });
    if let Some(why) = &nothing {
        report.verdict = Verdict::Unknown;
        report.fails.clear();
        report.satisfies.clear();
        report.not_placed = history::Level::ALL.to_vec();
        report.notes.insert(0, why.clone());
        report.certificate = None;
        report.certified =
            checkers::Certified::NotChecked("nothing committed: nothing to check".into());
    }
    // The verdict's proof goes beside the report, which stays small.
    if let Some(cert) = report.certificate.take() {
        crate::check_cmd::write_certificate(&dir.join("certificate.json"), &cert)?;
    }
    let little = stats::tested_little(&faults, &st, !nemesis.describe().is_empty());
    // The final reads, counted apart; reported when there was something to
    // read (or the history has some).
    let mut warnings = phase.warnings.clone();
    let final_reads = phase.final_reads.as_ref().and_then(|done| {
        let mut f = st.final_reads.clone();
        f.waited_s = done.waited.map(|w| w.as_secs_f64());
        if done.planned > 0 && f.ok == 0 && phase.interrupted.is_none() {
            warnings.push(format!(
                "final reads were asked for ({} planned) but none committed: a lost write \
                 would have gone unseen",
                done.planned
            ));
        }
        (done.planned > 0 || f.txns > 0).then_some(f)
    });
    let kept = kept_why.as_ref().map(|why| tables_kept_line(&tables, why));
    let info = RunInfo {
        id: run_id,
        db: db_name.into(),
        url: redact_url(&location),
        workload: wl.name().into(),
        variant: cfg.variant.clone(),
        key_order: matches!(wl.name(), "blindw" | "range").then(|| cfg.key_order.to_string()),
        level: args.level.name().into(),
        isolation: iso.name.into(),
        server: header.server.clone(),
        settings: header.settings.clone(),
        seed,
        clients: args.clients,
        keys: cfg.keys,
        dist: cfg.dist.to_string(),
        txns_budget: args
            .duration
            .is_none()
            .then(|| args.txns.unwrap_or(default_txns(args.db))),
        duration_s: args.duration.map(|d| d.as_secs_f64()),
        started,
        finished,
        // The recorder wrote the end line, or the run failed before this.
        complete: h.as_ref().is_none_or(|h| h.end.is_some()),
        interrupted: phase.interrupted.is_some(),
        interrupted_by: phase.interrupted,
        tested_little: little.clone(),
        outage: st.outage.clone(),
        warnings: warnings.clone(),
        skipped_ahead: phase.skipped_ahead,
        tables_kept: kept_why.is_some(),
        tables_kept_why: kept_why,
        tables,
        nemesis: nemesis.describe(),
    };
    let report_path = dir.join("report.json");
    write_report(
        &report_path,
        info,
        &st,
        &report,
        &faults,
        (phase.end_check.as_ref(), final_reads.as_ref()),
    )?;
    // The HTML report and the DOT drawings; the verdict stands without them.
    progress.stage("run: writing report.html");
    let drawn = match &h {
        Some(h) => crate::report::Drawn::Whole(h),
        None => crate::report::Drawn::Kept {
            buckets: buckets.finish(),
            faults: &faults,
            txns: phase.recorded.txns,
        },
    };
    let html = crate::report::write(&dir, &drawn);
    progress.finish();
    if let Err(e) = html {
        eprintln!("warning: {e:#}");
    }
    if let Some(why) = nothing {
        anyhow::bail!("{why}");
    }
    print_summary(
        &report,
        Some(&header),
        (&st, final_reads.as_ref()),
        (&phase, &warnings),
        &little,
        (&history_path, &report_path, seed),
    );
    if let Some(k) = kept {
        crate::output::print_out(&k);
    }
    if let Some(e) = &args.expect {
        let (met, why) = e.judge(report.verdict, &report.anomaly_counts, &little);
        let word = if met { "met" } else { "NOT met" };
        crate::output::print_out(&format!("expectation {word}: {why}\n"));
    }
    if let checkers::Certified::Failed(why) = &report.certified {
        anyhow::bail!(
            "the certificate of the verdict does not hold ({why}): a checker bug; the proof is in {}",
            dir.join("certificate.json").display()
        );
    }
    Ok(hooks::exit_code(
        exit_code(report.verdict),
        args.level,
        phase.end_check.as_ref(),
    ))
}

/// The streamed check's `ok` report, when the run takes it as its verdict
/// and does not read its history back: with `--stream`, or once the history
/// is so large ([`crate::check_cmd::STREAM_FROM`]) that reading it whole
/// would take about three times its size in memory. The statistics and
/// charts then come from what the recorder counted as it wrote, so the
/// run's memory does not grow with its length. An anomaly, or a level or
/// workload the stream does not check, is read back and checked whole.
fn not_read_back(args: &RunArgs, phase: &Phase, history: &Path) -> Option<Report> {
    let ok = phase.streamed.as_ref()?.ok.as_ref()?;
    let size = fs::metadata(history).map_or(0, |m| m.len());
    let why = why_not_read_back(args.stream, size)?;
    let mut report = ok.clone();
    report.notes.push(format!(
        "the run's history was not read back ({why}): the verdict is the check made while \
         it recorded, and the statistics and charts are what the recorder counted as it wrote; \
         `harness check` on the history places the other levels and certifies the verdict"
    ));
    eprintln!("note: {}", report.notes.last().map_or("", String::as_str));
    Some(report)
}

/// Why a run whose stream said `ok` does not read back its history of
/// `size` bytes (`--stream` asked, or it is too large); `None` when it
/// does.
fn why_not_read_back(stream: bool, size: u64) -> Option<String> {
    if stream {
        Some("--stream".into())
    } else if size >= crate::check_cmd::STREAM_FROM {
        Some(format!("the history is {} MB", size / 1_000_000))
    } else {
        None
    }
}

/// Rebuilds a run's `report.json` (and `certificate.json`) from its
/// history alone: what `harness report` does for a run killed before it
/// wrote one. The level, database and workload come from the history's
/// header; what only the command line knew (the URL, the key count, the
/// budget) is left out, and the report says it was rebuilt.
pub fn rebuild_report(dir: &Path, h: &history::History) -> Result<PathBuf> {
    let path = dir.join("history.jsonl");
    let hd = h.header.clone().ok_or_else(|| {
        anyhow!(
            "{}: no header line: not a run's history, so there is no run to report",
            path.display()
        )
    })?;
    let level: history::Level = hd
        .level
        .as_deref()
        .ok_or_else(|| anyhow!("{}: its header names no level", path.display()))?
        .parse()
        .map_err(|e| anyhow!("{}: header level: {e}", path.display()))?;
    let mut report = checkers::check(h, level, &CheckOptions::default());
    if let Some(cert) = report.certificate.take() {
        crate::check_cmd::write_certificate(&dir.join("certificate.json"), &cert)?;
    }
    // The client phase, as far as the history shows it.
    let (first, last) = h.txns.iter().fold((u64::MAX, 0), |(a, b), t| {
        (
            a.min(t.start.unwrap_or(u64::MAX)),
            b.max(t.end.or(t.start).unwrap_or(0)),
        )
    });
    let elapsed_s = last.saturating_sub(first.min(last)) as f64 / 1e9;
    let st = stats::compute(h, elapsed_s);
    let asked = h.faults.iter().any(|f| !f.is_observation());
    let little = stats::tested_little(&h.faults, &st, asked);
    let final_reads = Some(st.final_reads.clone()).filter(|f| f.txns > 0);
    let info = RunInfo {
        id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        db: hd.db.clone().unwrap_or_default(),
        url: String::new(),
        workload: hd.workload.clone().unwrap_or_default(),
        variant: None,
        key_order: None,
        level: level.name().into(),
        isolation: hd.isolation.clone().unwrap_or_default(),
        server: hd.server.clone(),
        settings: hd.settings.clone(),
        seed: hd.seed.unwrap_or(0),
        clients: hd.clients.unwrap_or(0) as u32,
        keys: 0,
        dist: String::new(),
        txns_budget: None,
        duration_s: None,
        started: hd.started.clone().unwrap_or_default(),
        finished: String::new(),
        complete: h.end.is_some(),
        interrupted: false,
        interrupted_by: None,
        tested_little: little,
        outage: st.outage.clone(),
        warnings: vec![format!(
            "rebuilt from the history alone by `harness report` (the run wrote no report.json{}); \
             the URL, key count and budget are not known",
            if h.end.is_some() {
                ""
            } else {
                ", and its history has no end line: it was cut short"
            }
        )],
        // Not in the history: the skips are counted as the clients run.
        skipped_ahead: None,
        tables: Vec::new(),
        tables_kept: false,
        tables_kept_why: None,
        nemesis: Vec::new(),
    };
    let out = dir.join("report.json");
    write_report(
        &out,
        info,
        &st,
        &report,
        &h.faults,
        (None, final_reads.as_ref()),
    )?;
    Ok(out)
}

fn write_report(
    path: &Path,
    run: RunInfo,
    st: &Stats,
    report: &Report,
    faults: &[history::Fault],
    (end_check, final_reads): (Option<&workloads::EndReport>, Option<&stats::FinalReads>),
) -> Result<()> {
    let o = &st.outcomes;
    let r = RunReport {
        run,
        verdict: report.verdict,
        counts: Counts {
            total: o.total,
            committed: o.committed,
            failed: o.failed,
            info: o.info,
        },
        abort_rate: AbortRates {
            overall: o.abort_rate,
            info: o.info_rate,
            deadlocks: o.deadlocks,
            deadlock_rate: o.deadlock_rate,
            top_errors: &o.top_errors,
            by_kind: &st.by_kind,
        },
        throughput: &st.throughput,
        latency_ms: st.latency_ms.as_ref(),
        faults,
        end_check,
        final_reads,
        check: report,
    };
    let text = crate::json_layout::to_string(&r)?;
    fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

fn print_summary(
    report: &Report,
    header: Option<&Header>,
    (st, final_reads): (&Stats, Option<&stats::FinalReads>),
    (phase, warnings): (&Phase, &[String]),
    little: &[String],
    (history, report_path, seed): (&Path, &Path, u64),
) {
    use std::fmt::Write as _;
    let o = &st.outcomes;
    let mut s = String::new();
    let _ = writeln!(s, "verdict: {} ({})", report.verdict, report.level);
    s.push_str(&report.summary());
    const SHOWN: usize = 3;
    for a in report.anomalies.iter().take(SHOWN) {
        let _ = write!(s, "\n{a}");
    }
    if report.anomalies.len() > SHOWN {
        let found: usize = report.anomaly_counts.values().sum();
        let kinds: Vec<String> = report
            .kinds_shown()
            .iter()
            .map(|(k, n, shown)| format!("{k}: {shown} of {n}"))
            .collect();
        let _ = writeln!(
            s,
            "\n{SHOWN} of {} counterexamples shown here; the report has {} of the {found} anomalies found ({})",
            report.anomalies.len(),
            report.anomalies.len(),
            kinds.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "txns: {} ({} committed, {} failed, {} info); {}",
        o.total,
        o.committed,
        o.failed,
        o.info,
        stats::abort_text(o)
    );
    for line in stats::kind_lines(st) {
        let _ = writeln!(s, "  {line}");
    }
    let lat = st.latency_ms.as_ref().map_or(String::new(), |l| {
        format!(
            "; latency ms p50 {:.2} p95 {:.2} p99 {:.2} max {:.2}",
            l.p50, l.p95, l.p99, l.max
        )
    });
    if let Some(hd) = header {
        // Which setting ran, on what server: TiDB's mode is its isolation.
        let mut line = format!(
            "database: {} at {}",
            hd.db.as_deref().unwrap_or("?"),
            hd.isolation.as_deref().unwrap_or("?")
        );
        if let Some(v) = &hd.server {
            let _ = write!(line, "; server {v}");
        }
        if !hd.settings.is_empty() {
            let _ = write!(line, "; session {}", hd.settings.join(", "));
        }
        let _ = writeln!(s, "{line}");
    }
    let _ = writeln!(
        s,
        "throughput: {:.1} committed txn/s over {:.1} s{}{lat}",
        st.throughput.committed_per_s,
        st.throughput.elapsed_s,
        outage_rate(st)
    );
    if let Some(o) = &st.outage {
        let _ = writeln!(s, "{}", o.text());
    }
    if let Some(r) = &phase.end_check {
        s.push_str(&r.to_string());
    }
    if let Some(f) = final_reads {
        let _ = writeln!(s, "{}", f.text());
    }
    for w in warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    match phase.interrupted {
        Some(flag @ "--stop-on-anomaly") => {
            let _ = writeln!(
                s,
                "stopped by {flag} at the first anomaly the streamed check found, after {} \
                 transactions",
                o.total
            );
        }
        Some(sig) => {
            let _ = writeln!(
                s,
                "interrupted by {sig} after {} transactions (before the run's budget was used up)",
                o.total
            );
        }
        None => {}
    }
    if let Some(e) = &phase.streamed {
        let _ = writeln!(s, "{}", e.line);
    }
    if !little.is_empty() {
        let _ = writeln!(
            s,
            "WARNING: this run tested little, so its verdict says little: {}",
            little.join("; ")
        );
    }
    debug_assert_eq!(
        phase.recorded.txns,
        o.total + final_reads.map_or(0, |f| f.txns)
    );
    let _ = writeln!(s, "seed: {seed}");
    let _ = writeln!(s, "history: {}", history.display());
    let _ = writeln!(
        s,
        "report: {} (and report.html beside it)",
        report_path.display()
    );
    crate::output::print_out(&s);
}

/// ` (rate over the 1.0 s before the outage: 812.0 txn/s)` when the run
/// had an outage; empty otherwise.
fn outage_rate(st: &Stats) -> String {
    let t = &st.throughput;
    match (&st.outage, t.outside_outage_s, t.outside_outage_per_s) {
        (Some(o), Some(span), Some(rate)) => {
            format!(" ({}: {rate:.1} txn/s)", o.rate_span(span))
        }
        _ => String::new(),
    }
}

/// The summary's one line naming each table left in the database and why:
/// `tables kept: T1 (why), T2 (why)`.
fn tables_kept_line(tables: &[String], why: &str) -> String {
    let each: Vec<String> = tables.iter().map(|t| format!("{t} ({why})")).collect();
    format!("tables kept: {}\n", each.join(", "))
}

/// The run's nemesis, with what it needs to start.
struct Faults<'a> {
    nemesis: &'a crate::nemesis::Nemesis,
    proxies: Option<Arc<crate::nemesis::Proxies>>,
    dir: &'a Path,
    seed: u64,
}

/// Sets up the tables, connects every client, runs them beside the
/// nemesis, and waits for the recorder to finish the history file.
#[allow(clippy::too_many_arguments)]
async fn clients_phase(
    args: &RunArgs,
    db: &Arc<dyn Database>,
    iso: adapters::Isolation,
    wl: &dyn workloads::Workload,
    header: &Header,
    history_path: &Path,
    faults: Faults<'_>,
    interrupts: &signals::Interrupts,
    closing: bool,
) -> Result<Phase> {
    let limit = args.connect_timeout + args.statement_timeout;
    tokio::time::timeout(limit, db.setup(&wl.schema()))
        .await
        .map_err(|_| {
            anyhow!(
                "setting up the tables took longer than {} s",
                limit.as_secs()
            )
        })??;
    let mut sessions = Vec::with_capacity(args.clients as usize);
    for c in 0..args.clients {
        let s = tokio::time::timeout(args.connect_timeout, db.connect(u64::from(c)))
            .await
            .map_err(|_| {
                anyhow!(
                    "{}: no connection within {} s (--connect-timeout)",
                    db.name(),
                    args.connect_timeout.as_secs_f64()
                )
            })??;
        sessions.push(s);
    }

    let clock = Clock::start();
    let began = Instant::now();
    let txns = args.txns.unwrap_or(default_txns(args.db));
    let budget = match args.duration {
        Some(d) => Budget::Until(began + d),
        None => Budget::Txns {
            total: txns,
            claimed: AtomicU64::new(0),
        },
    };
    let shared = Arc::new(Shared {
        db: Arc::clone(db),
        iso,
        clock,
        budget,
        // Already set when a signal came during the setup: then no client
        // starts a transaction.
        stop: Arc::clone(&interrupts.stop),
        interrupted_by: Arc::clone(&interrupts.by),
        next_session: AtomicU64::new(u64::from(args.clients)),
        reconnect_window: Duration::from_secs(30),
        connect_timeout: args.connect_timeout,
        finished: closing.then(|| closing::Finished::new(args.clients)),
        start: tokio::sync::Barrier::new(sessions.len()),
    });
    let progress = recorder::Progress::new(txns, args.duration, clock);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (fault_tx, fault_rx) = tokio::sync::mpsc::unbounded_channel();
    // A reader waits for its writer's line at most this long (see
    // holdback): every client reports within a few statement timeouts.
    let hold_limit = args.statement_timeout * 3 + Duration::from_secs(2);
    let rec = recorder::spawn(
        history_path,
        header,
        rx,
        fault_rx,
        hold_limit,
        progress.clone(),
    )
    .with_context(|| format!("cannot write {}", history_path.display()))?;
    // The workload's prelude (TPC-C's load) runs alone, before any fault.
    if let Some(plan) = wl.prelude() {
        if let Err(e) = hooks::prelude(&shared, &mut sessions[0], &plan, &tx).await {
            drop((tx, fault_tx));
            let _ = tokio::task::spawn_blocking(move || rec.join()).await;
            progress.finish();
            return Err(e);
        }
    }
    // A Patroni cluster's changes of leader, marked on the timeline.
    let leader_watch = crate::cluster::leader::watch(args, move || clock.now(), fault_tx.clone());
    let nemesis = faults.nemesis.spawn(
        faults.proxies.clone(),
        faults.dir.to_path_buf(),
        faults.seed,
        move || clock.now(),
        fault_tx,
    );

    // The first Ctrl-C or SIGTERM (what `timeout`, docker and CI send)
    // stops the clients after the transactions in flight, so the history
    // stays complete and is checked and reported; one after that (or during
    // the check) quits at once: see `signals::Interrupts::watch`. It also
    // heals every fault at once (a paused node holds its transactions until
    // it is resumed), and what is still in flight after the grace period is
    // abandoned: `fail`, or `info` when it was committing.
    let on_interrupt = {
        let (first, abandon, halt) = (
            Arc::clone(&interrupts.first),
            Arc::clone(&interrupts.abandon),
            nemesis.halt(),
        );
        tokio::spawn(async move {
            first.notified().await;
            halt.now();
            tokio::time::sleep(signals::GRACE).await;
            abandon.now();
        })
    };
    let mut tasks = Vec::with_capacity(sessions.len());
    for (c, s) in sessions.into_iter().enumerate() {
        let c = c as u32;
        tasks.push(tokio::spawn(runner::client(
            Arc::clone(&shared),
            c,
            s,
            wl.client(c),
            tx.clone(),
        )));
    }
    // Kept for the final reads; the recorder ends once it is dropped too.
    let final_tx = tx;
    let mut warnings = Vec::new();
    let mut fatal = None;
    let mut written = std::collections::BTreeSet::new();
    let closer = async {
        match &shared.finished {
            Some(f) => Some(closing::run(&shared, f, wl, &final_tx).await),
            None => None,
        }
    };
    let clients = async {
        let mut ends = Vec::with_capacity(tasks.len());
        for t in tasks {
            ends.push(t.await);
        }
        // A client task that panicked did not say it stopped: the closing
        // reads must not wait for it.
        if let Some(f) = &shared.finished {
            (0..args.clients).for_each(|c| f.stop(c));
        }
        ends
    };
    let (mut closed, ends) = tokio::join!(closer, clients);
    warnings.extend(closed.as_mut().and_then(|c| c.warning.take()));
    let mut skipped_ahead = None;
    if let Some((times, plans)) = shared.finished.as_ref().map(|f| f.skips()) {
        if times > 0 {
            skipped_ahead = Some(SkippedAhead {
                times,
                plans,
                max_drift: closing::MAX_DRIFT,
            });
            eprintln!(
                "note: a client fell over {} plans behind the fastest and skipped ahead to it \
                 {times} time{} ({plans} plans skipped in all), so that few lists stay in use",
                closing::MAX_DRIFT,
                if times == 1 { "" } else { "s" }
            );
        }
    }
    for t in ends {
        match t {
            Ok(mut end) => {
                written.append(&mut end.written);
                warnings.extend(end.warning);
                warnings.extend(end.integrity.into_iter().map(|e| {
                    format!(
                        "POSSIBLE DATABASE BUG: the database found its own data inconsistent \
                         and refused a transaction ({e}); this is not an ordinary abort"
                    )
                }));
                if fatal.is_none() {
                    fatal = end.fatal;
                }
            }
            Err(e) => fatal = Some(format!("a client task failed: {e}")),
        }
    }
    on_interrupt.abort();
    let elapsed = began.elapsed();
    // What the adapter skipped (e.g. TiDB-only statements on MariaDB).
    warnings.extend(db.warnings());
    // Faults still in force are undone before the history is closed.
    warnings.extend(nemesis.stop().await);
    // Every fault healed: read back every key the run wrote.
    let final_reads = if args.no_final_reads {
        None
    } else {
        let plans = if fatal.is_some() {
            Vec::new()
        } else {
            let written: Vec<history::Key> = match (closed, &shared.finished) {
                (Some(closed), Some(f)) => closed.final_keys(wl, f),
                _ => written.into_iter().collect(),
            };
            wl.final_reads(&written)
        };
        let done = final_reads::run(
            &shared,
            plans,
            args.final_read_wait,
            &final_tx,
            &interrupts.first,
            &interrupts.abandon,
        )
        .await;
        warnings.extend(done.warnings.iter().cloned());
        Some(done)
    };
    drop(final_tx);
    // The final state, checked while the database is still reachable.
    let end_check = match wl.end_check() {
        Some(c) => {
            let id = shared.next_session.fetch_add(1, Ordering::Relaxed);
            hooks::end_check(db, c, id, args.connect_timeout, &mut warnings).await
        }
        None => None,
    };
    drop(faults.proxies);
    // From now on a Ctrl-C quits at once.
    shared.stop.store(true, Ordering::Relaxed);
    if let Some(w) = leader_watch {
        let _ = tokio::task::spawn_blocking(move || w.stop()).await;
    }
    let (recorded, kept) = tokio::task::spawn_blocking(move || rec.join())
        .await
        .map_err(|e| anyhow!("recorder: {e}"))?
        .map_err(|_| anyhow!("the recorder thread panicked"))?
        .with_context(|| format!("cannot write {}", history_path.display()))?;
    progress.finish();
    if let Some(f) = fatal {
        bail!("{f}");
    }
    Ok(Phase {
        interrupted: shared.interrupted_by.get().copied(),
        recorded,
        kept: Some(kept),
        elapsed,
        warnings,
        end_check,
        final_reads,
        streamed: None,
        skipped_ahead,
    })
}

#[cfg(test)]
mod tests {
    use super::why_not_read_back;
    use crate::check_cmd::STREAM_FROM;

    #[test]
    fn a_history_is_read_back_unless_streamed_or_too_large() {
        assert_eq!(why_not_read_back(false, 0), None);
        assert_eq!(why_not_read_back(false, STREAM_FROM - 1), None);
        assert_eq!(
            why_not_read_back(false, STREAM_FROM).as_deref(),
            Some("the history is 536 MB")
        );
        assert_eq!(why_not_read_back(true, 10).as_deref(), Some("--stream"));
    }
}
