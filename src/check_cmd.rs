//! `harness check`: read a history, check it, print the verdict; and
//! `harness convert`, which reads the same formats.

use anyhow::{bail, Context, Result};
use checkers::CheckOptions;

use crate::cli::{exit_code, print_out, CheckArgs, ConvertArgs};

/// Runs `harness check`; returns the verdict's exit code.
pub fn command(args: CheckArgs) -> Result<u8> {
    let path = &args.history;
    if !path.exists() {
        bail!("{}: no such file", path.display());
    }
    let h = history::formats::read(path, args.format)?;
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
            "{}: --use-dbts needs the database's timestamps, but no transaction has a `dbts` field",
            path.display()
        );
    }
    let opts = CheckOptions {
        timeout: crate::cli::limit(args.timeout),
        use_dbts: args.use_dbts,
        strategy: args.solver,
        skip_witness: args.no_witness,
        on_verdict: verdict_early(),
        ..CheckOptions::default()
    };
    let mut report = checkers::check(&h, args.level, &opts);
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
        let text: String = report.anomalies.iter().map(checkers::to_dot).collect();
        std::fs::write(dot, text).with_context(|| format!("cannot write {}", dot.display()))?;
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
    Ok(exit_code(report.verdict))
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

/// On a terminal, the verdict is shown the moment it is known: placing the
/// other levels and shrinking counterexamples can take seconds more.
pub fn verdict_early() -> Option<checkers::OnVerdict> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(std::sync::Arc::new(|level, verdict, took| {
        eprintln!(
            "{level}: {verdict} (decided in {:.2} s; placing the other levels and shrinking counterexamples)",
            took.as_secs_f64()
        );
    }))
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
