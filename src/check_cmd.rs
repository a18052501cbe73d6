//! `harness check`: read a history, check it, print the verdict; and
//! `harness convert`, which reads the same formats.

use anyhow::{bail, Context, Result};

use checkers::CheckOptions;

use crate::cli::{CheckArgs, ConvertArgs};
use crate::output::{exit_code, print_out};
use crate::progress::Reporter;

/// Runs `harness check`; returns the verdict's exit code.
pub fn command(args: CheckArgs) -> Result<u8> {
    let path = &args.history;
    if !path.exists() {
        bail!("{}: no such file", path.display());
    }
    // Progress on stderr while the history is read and checked; cleared
    // before the verdict, and when it is dropped (before an error is
    // printed).
    let progress = std::sync::Arc::new(Reporter::stderr());
    if args.follow || args.stream {
        if history::formats::is_gzip(path)? {
            bail!(
                "{}: a gzipped history is read whole; check it without --{}",
                path.display(),
                if args.follow { "follow" } else { "stream" }
            );
        }
        return follow(&args, &progress);
    }
    if let Some(size) = streams_whole(&args) {
        eprintln!(
            "note: {} is {} MB: checked as it is read, in bounded memory (no certificate, no \
             other level placed; --offline reads it whole)",
            path.display(),
            size / 1_000_000
        );
        return follow(&args, &progress);
    }
    let times = crate::progress::stage_times();
    let h = progress.read(path, args.format)?;
    if let Some(t0) = times {
        eprintln!(
            "stage: read at {} ms{}",
            t0.elapsed().as_millis(),
            crate::progress::resident()
        );
    }
    check_read(&args, h, &progress)
}

/// From this size on, a finished JSONL history at a streamed level is
/// checked as it is read: read whole, it would take about three times its
/// size in memory.
pub(crate) const STREAM_FROM: u64 = 512 << 20;

/// The size of a finished history that `harness check` streams: JSONL, at
/// least [`STREAM_FROM`] bytes, at a level the stream decides, and nothing
/// asked that only the whole history gives (a certificate, `--use-dbts`,
/// `--offline`).
fn streams_whole(args: &CheckArgs) -> Option<u64> {
    if args.offline || args.use_dbts || args.certify.is_some() {
        return None;
    }
    if !checkers::stream::streams(args.level) {
        return None;
    }
    let size = std::fs::metadata(&args.history).ok()?.len();
    if size < STREAM_FROM || history::formats::is_gzip(&args.history).unwrap_or(true) {
        return None;
    }
    let format = history::formats::resolve(&args.history, args.format).ok()?;
    (format == history::Format::Jsonl).then_some(size)
}

/// `harness check --follow`: the streamed check while the file is written;
/// what it leaves open goes to the offline check of the lines it read. A
/// finished file (no `--follow`) is read to its end and no further.
fn follow(args: &CheckArgs, progress: &std::sync::Arc<Reporter>) -> Result<u8> {
    use checkers::stream::{ok_report, StreamOptions, Streamed};
    let path = &args.history;
    let flag = if args.follow { "--follow" } else { "--stream" };
    let format = match args.format {
        // A file still being written may be empty yet.
        history::Format::Auto if args.follow => history::Format::Auto,
        f => history::formats::resolve(path, f).map_err(|e| anyhow::anyhow!("{e}"))?,
    };
    if !matches!(format, history::Format::Auto | history::Format::Jsonl) {
        bail!("{flag} reads JSONL histories (the format the harness records), not {format}");
    }
    if !args.follow && !checkers::stream::streams(args.level) {
        eprintln!(
            "note: {} is not checked as it is read; checking the whole history",
            args.level
        );
        return check_read(args, progress.read(path, args.format)?, progress);
    }
    let t0 = std::time::Instant::now();
    let opts = StreamOptions::default();
    let finished = std::sync::atomic::AtomicBool::new(true);
    let until = crate::follow::Until {
        idle: Some(args.idle),
        stop_on_anomaly: args.stop_on_anomaly,
        stop_when_decided: !args.follow,
        writer_done: (!args.follow).then_some(&finished),
    };
    let f = crate::follow::follow(path, args.level, opts, &until, |why| {
        eprintln!("streamed check: anomaly found: {why}");
    })?;
    // A finished file without its `end` line: the report's note says so.
    if let (Some(why), true) = (&f.stopped, args.follow) {
        eprintln!(
            "note: {}: {why}; checking the {} bytes read",
            path.display(),
            f.consumed
        );
    }
    match f.streamed {
        // A certificate or the database's timestamps need the whole history.
        Some((Streamed::Ok, stats)) if !args.use_dbts && args.certify.is_none() => {
            let mut report = ok_report(args.level, &stats, &opts, t0.elapsed().as_millis() as u64);
            if !f.ended {
                report.notes.push("the history has no end line: the run was cut short; in-flight transactions are missing".into());
            }
            eprintln!(
                "streamed check: verdict {} ms after the last line read",
                f.after_last.as_millis()
            );
            print_report(args, &report)?;
            Ok(exit_code(report.verdict))
        }
        other => {
            match other {
                Some((Streamed::Anomalous(why) | Streamed::Offline(why), _)) => {
                    eprintln!("streamed check: the offline check decides ({why})")
                }
                None => eprintln!(
                    "streamed check: {} is not checked as it goes; checking the whole history",
                    args.level
                ),
                _ => {}
            }
            // A finished file is read whole (the stream stopped where it
            // decided); a followed one as far as it was read.
            let h = if args.follow {
                crate::follow::read_prefix(path, f.consumed)?
            } else {
                progress.read(path, args.format)?
            };
            check_read(args, h, progress)
        }
    }
}

/// The check of a history read whole: print its verdict and counterexamples.
fn check_read(
    args: &CheckArgs,
    h: history::History,
    progress: &std::sync::Arc<Reporter>,
) -> Result<u8> {
    let path = &args.history;
    if h.header.is_some() && h.end.is_none() {
        // A recorded run's history always ends with its `end` line.
        eprintln!(
            "note: {} has no end line: the run was cut short (a last line cut mid-record \
             is left out); checking what it recorded",
            path.display()
        );
    }
    if !args.allow_empty {
        if let Some(why) = nothing_to_check(path, &h, "pass --allow-empty to check it anyway") {
            bail!("{why}");
        }
    }
    if args.use_dbts && h.txns.iter().all(|t| t.dbts.is_none()) {
        bail!(
            "{}: --use-dbts needs the database's timestamps, but no transaction has a `dbts` \
             field{}",
            path.display(),
            why_no_dbts(&h)
        );
    }
    let mut opts = CheckOptions {
        timeout: crate::output::limit(args.timeout),
        use_dbts: args.use_dbts,
        strategy: args.solver,
        skip_witness: args.no_witness,
        ..CheckOptions::default()
    };
    progress.watch(&mut opts, true);
    let mut report = checkers::check(&h, args.level, &opts);
    progress.finish();
    // A file that cannot be written does not hide the verdict: it is
    // printed first, then the error (exit 2).
    let mut unwritten = None;
    if let (Some(path), Some(cert)) = (&args.certify, &report.certificate) {
        unwritten = write_certificate(path, cert).err();
    }
    if let checkers::Certified::Failed(why) = &report.certified {
        // A proof that does not hold is a checker bug: show it, exit 2.
        let proof = serde_json::to_string_pretty(&report.certificate)?;
        eprintln!("{}", report.summary());
        eprintln!("certificate:\n{proof}");
        bail!("the certificate of the verdict does not hold: {why} (a checker bug; do not trust this verdict)");
    }
    if !args.json {
        report.certificate = None;
    }
    if let Some(dot) = &args.dot {
        let paths = dot_paths(dot, report.anomalies.len());
        for (p, a) in paths.iter().zip(&report.anomalies) {
            if let Err(e) = std::fs::write(p, checkers::to_dot(a)) {
                let e = anyhow::Error::new(e).context(format!("cannot write {}", p.display()));
                unwritten.get_or_insert(e);
                break;
            }
        }
        if paths.len() > 1 && unwritten.is_none() {
            eprintln!(
                "{} counterexamples written as {} … {}",
                paths.len(),
                paths[0].display(),
                paths[paths.len() - 1].display()
            );
        }
    }
    print_report(args, &report)?;
    // The process ends now: freeing a history of a million transactions
    // allocation by allocation would only delay the exit.
    std::mem::forget(h);
    match unwritten {
        Some(e) => Err(e),
        None => Ok(exit_code(report.verdict)),
    }
}

/// Prints a verdict as text (with its counterexamples) or JSON.
fn print_report(args: &CheckArgs, report: &checkers::Report) -> Result<()> {
    if args.json {
        // Written as it is laid out (a certificate can be tens of MB). As
        // with `print_out`, a closed output (`| head`) is not an error.
        use std::io::Write;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
        match crate::json_layout::to_writer(&mut out, report) {
            Err(e) if !e.is_io() => return Err(e.into()),
            _ => {
                let _ = out.write_all(b"\n").and_then(|()| out.flush());
            }
        }
        return Ok(());
    }
    let mut s = report.summary();
    for a in &report.anomalies {
        s.push('\n');
        s.push_str(&a.to_string());
    }
    print_out(&s);
    Ok(())
}

/// The refusal of a history in which no transaction committed (`None`
/// when one did): an `ok` of it would be meaningless. `hint` says how to
/// check it anyway.
pub fn nothing_to_check(
    path: &std::path::Path,
    h: &history::History,
    hint: &str,
) -> Option<String> {
    // The first committed transaction settles it; the counts are for the
    // message.
    if h.txns.iter().any(|t| t.status == history::Status::Ok) {
        return None;
    }
    let (committed, failed, info) = h.status_counts();
    (committed == 0).then(|| {
        format!(
            "{}: nothing to check: none of its {} transactions committed ({failed} failed, \
             {info} info); {hint}",
            path.display(),
            h.txns.len()
        )
    })
}

/// Where `--dot FILE` writes `n` counterexamples, one Graphviz graph per
/// file (one file of several graphs is not valid input for `dot -Tsvg`):
/// FILE itself for one; `STEM-1.EXT` … `STEM-n.EXT` beside it for several;
/// `FILE/anomaly-1.dot` … when FILE is a folder.
pub fn dot_paths(file: &std::path::Path, n: usize) -> Vec<std::path::PathBuf> {
    if file.is_dir() {
        return (1..=n)
            .map(|i| file.join(format!("anomaly-{i}.dot")))
            .collect();
    }
    if n == 1 {
        return vec![file.to_path_buf()];
    }
    let stem = file
        .file_stem()
        .map_or_else(|| "anomaly".into(), |s| s.to_string_lossy().into_owned());
    let ext = file
        .extension()
        .map_or_else(|| "dot".into(), |e| e.to_string_lossy().into_owned());
    (1..=n)
        .map(|i| file.with_file_name(format!("{stem}-{i}.{ext}")))
        .collect()
}

/// Writes a verdict's certificate as JSON, for `harness check --certify`
/// and beside each run's report.
pub fn write_certificate(
    path: &std::path::Path,
    cert: &checkers::certify::Certificate,
) -> Result<()> {
    let f =
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    serde_json::to_writer(&mut w, cert)?;
    std::io::Write::flush(&mut w).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Runs `harness convert`: reads any supported format, writes JSONL, Elle
/// EDN or the `r(k,v,s,t)` text. The output is written to a temporary file
/// beside it and renamed into place, so a conversion that fails leaves no
/// half-written output (and an existing one as it was).
pub fn convert(args: ConvertArgs) -> Result<u8> {
    let (input, output) = (&args.input, &args.output);
    if !input.exists() {
        bail!("{}: no such file", input.display());
    }
    if same_file(input, output) {
        bail!(
            "{}: the output is the input ({}): write the conversion to another file",
            output.display(),
            input.display()
        );
    }
    if !args.to.can_write() {
        bail!(
            "histories cannot be written as {} (writable: jsonl, elle-edn, text)",
            args.to
        );
    }
    let h = history::formats::read(input, args.from)?;
    let lost = losses(&h, args.to);
    if !lost.is_empty() && !args.lossy {
        bail!(
            "{}: {} cannot carry {}; pass --lossy to drop them",
            input.display(),
            args.to,
            list(&lost, "or")
        );
    }
    write_atomically(&h, output, args.to)
        .with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "{} transactions written to {} ({})",
        h.txns.len(),
        output.display(),
        args.to
    );
    if !lost.is_empty() {
        eprintln!("dropped (--lossy): {}", list(&lost, "and"));
    }
    // As after a check: freeing millions of transactions one by one only
    // delays the exit.
    std::mem::forget(h);
    Ok(0)
}

/// True when `output` names the same file as `input` (the same path in
/// another spelling, a symlink to it, a hard link).
fn same_file(input: &std::path::Path, output: &std::path::Path) -> bool {
    let (Ok(a), Ok(b)) = (std::fs::metadata(input), std::fs::metadata(output)) else {
        // An output that does not exist is no existing input.
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if a.dev() == b.dev() && a.ino() == b.ino() {
            return true;
        }
    }
    let _ = (a, b);
    matches!(
        (input.canonicalize(), output.canonicalize()),
        (Ok(x), Ok(y)) if x == y
    )
}

/// What `format` cannot carry of `h`, as phrases for a message (empty when
/// it carries all of it): the transactions' `dbts`, `kind` and `node`, and
/// the fault lines, which only JSONL writes.
fn losses(h: &history::History, format: history::Format) -> Vec<String> {
    if format == history::Format::Jsonl {
        return Vec::new();
    }
    let count = |f: fn(&history::Txn) -> bool| h.txns.iter().filter(|t| f(t)).count();
    let mut parts = Vec::new();
    for (n, what) in [
        (count(|t| t.dbts.is_some()), "dbts"),
        (count(|t| t.kind.is_some()), "kind"),
        (count(|t| t.node.is_some()), "node"),
    ] {
        if n > 0 {
            let whose = if parts.is_empty() {
                "the transactions' "
            } else {
                ""
            };
            parts.push(format!("{whose}{what} ({n} of them)"));
        }
    }
    match h.faults.len() {
        0 => {}
        1 => parts.push("the fault line".into()),
        n => parts.push(format!("the {n} fault lines")),
    }
    parts
}

/// `a`, `a or b`, `a, b or c` (with `and` or `or`).
fn list(parts: &[String], conj: &str) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} {conj} {last}", rest.join(", ")),
    }
}

/// Writes `h` to a temporary file beside `path` and renames it onto
/// `path` (onto the file a symlink `path` points to): the output appears
/// whole or not at all.
fn write_atomically(
    h: &history::History,
    path: &std::path::Path,
    format: history::Format,
) -> Result<()> {
    // A device, a FIFO or a socket (`/dev/null`, `/dev/stdout`, a pipe) is
    // written where it is: a file renamed onto it would replace the node
    // itself (as root, `/dev/null` became a regular file).
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let out = std::fs::OpenOptions::new().write(true).open(path)?;
        return Ok(history::formats::write_to(h, out, format)?);
    }
    let dest = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    };
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = dest
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    history::formats::write_to(h, tmp.as_file_mut(), format).map_err(|e| match e {
        history::formats::ExportError::Io { path: None, source } => {
            anyhow::Error::new(source).context(format!("{}", tmp.path().display()))
        }
        other => anyhow::Error::new(other),
    })?;
    tmp.as_file().sync_all().ok();
    // The permissions of the file replaced, else those of a new file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let perms = std::fs::metadata(&dest)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| std::fs::Permissions::from_mode(0o644));
        let _ = std::fs::set_permissions(tmp.path(), perms);
    }
    tmp.persist(&dest)
        .map_err(|e| anyhow::Error::new(e.error))
        .with_context(|| format!("cannot rename the output into place as {}", dest.display()))?;
    Ok(())
}

/// Why a history of a database that has timestamps has none: TiDB records
/// them only where every read happens at start_ts.
fn why_no_dbts(h: &history::History) -> String {
    let header = h.header.as_ref();
    let db = header.and_then(|hd| hd.db.as_deref());
    let iso = header.and_then(|hd| hd.isolation.as_deref());
    match (db, iso) {
        (Some("tidb"), Some(i)) if i != "optimistic" => format!(
            " (this TiDB run used the isolation `{i}`: in pessimistic mode DML reads at a \
             per-statement for_update_ts, and at read committed every statement reads at its \
             own timestamp, so start_ts is not where its reads happened and none were recorded; \
             only --isolation optimistic records them)"
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{dot_paths, streams_whole, STREAM_FROM};
    use std::path::{Path, PathBuf};

    /// The check flags of `harness check PATH EXTRA...`.
    fn check_args(path: &Path, extra: &[&str]) -> crate::cli::CheckArgs {
        use clap::Parser;
        let mut argv = vec!["harness", "check", path.to_str().unwrap()];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Check(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_large_jsonl_history_is_streamed_unless_the_whole_is_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.jsonl");
        // A JSONL header and blank lines where the format is told, then
        // holes up to the size (a sparse file).
        let f = std::fs::File::create(&path).unwrap();
        let mut head = b"{\"type\":\"header\",\"version\":1}".to_vec();
        head.resize(1 << 20, b'\n');
        std::io::Write::write_all(&mut &f, &head).unwrap();
        f.set_len(STREAM_FROM - 1).unwrap();
        assert_eq!(streams_whole(&check_args(&path, &["--level", "si"])), None);
        f.set_len(STREAM_FROM).unwrap();
        let streamed = |extra: &[&str]| streams_whole(&check_args(&path, extra));
        assert_eq!(streamed(&["--level", "si"]), Some(STREAM_FROM));
        assert_eq!(
            streamed(&["--level", "strong-session-ser"]),
            Some(STREAM_FROM)
        );
        // A level the stream does not decide, or what needs the whole file.
        assert_eq!(streamed(&["--level", "rc"]), None);
        assert_eq!(streamed(&["--level", "si", "--offline"]), None);
        assert_eq!(streamed(&["--level", "si", "--use-dbts"]), None);
        assert_eq!(streamed(&["--level", "si", "--certify", "c.json"]), None);
        assert_eq!(streamed(&["--level", "si", "--format", "text"]), None);
    }

    #[test]
    fn dot_files_are_one_per_counterexample() {
        assert_eq!(
            dot_paths(Path::new("out.dot"), 1),
            vec![PathBuf::from("out.dot")]
        );
        assert_eq!(
            dot_paths(Path::new("d/out.dot"), 2),
            vec![PathBuf::from("d/out-1.dot"), PathBuf::from("d/out-2.dot")]
        );
        assert_eq!(dot_paths(Path::new("g"), 2)[1], PathBuf::from("g-2.dot"));
        assert!(dot_paths(Path::new("out.dot"), 0).is_empty());
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            dot_paths(dir.path(), 1),
            vec![dir.path().join("anomaly-1.dot")]
        );
    }
}
