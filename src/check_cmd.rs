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
    let times = crate::progress::stage_times();
    let h = progress.read(path, args.format)?;
    if let Some(t0) = times {
        eprintln!("stage: read at {} ms", t0.elapsed().as_millis());
    }
    let (committed, failed, info) = h.status_counts();
    if committed == 0 && !args.allow_empty {
        bail!(
            "{}: nothing to check: none of its {} transactions committed ({failed} failed, \
             {info} info); pass --allow-empty to check it anyway",
            path.display(),
            h.txns.len()
        );
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
    if let (Some(path), Some(cert)) = (&args.certify, &report.certificate) {
        write_certificate(path, cert)?;
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
            std::fs::write(p, checkers::to_dot(a))
                .with_context(|| format!("cannot write {}", p.display()))?;
        }
        if paths.len() > 1 {
            eprintln!(
                "{} counterexamples written as {} … {}",
                paths.len(),
                paths[0].display(),
                paths[paths.len() - 1].display()
            );
        }
    }
    let text = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        let mut s = report.summary();
        for a in &report.anomalies {
            s.push('\n');
            s.push_str(&a.to_string());
        }
        s
    };
    print_out(&text);
    // The process ends now: freeing a history of a million transactions
    // allocation by allocation would only delay the exit.
    std::mem::forget(h);
    Ok(exit_code(report.verdict))
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
/// EDN or the `r(k,v,s,t)` text.
pub fn convert(args: ConvertArgs) -> Result<u8> {
    if !args.input.exists() {
        bail!("{}: no such file", args.input.display());
    }
    let h = history::formats::read(&args.input, args.from)?;
    history::formats::write(&h, &args.output, args.to)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    eprintln!(
        "{} transactions written to {} ({})",
        h.txns.len(),
        args.output.display(),
        args.to
    );
    Ok(0)
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
    use super::dot_paths;
    use std::path::{Path, PathBuf};

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
