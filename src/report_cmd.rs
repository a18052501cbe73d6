//! `harness report RUN_DIR`: writes a run's `report.html` and its
//! counterexamples' drawings again, from its history and `report.json`;
//! rebuilds `report.json` from the history alone when the run was killed
//! before it wrote one, and refuses a history that no longer matches its
//! report.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use serde_json::Value;

use crate::output::print_out;
use crate::report::{load_report, write, Drawn};

/// Arguments of `harness report`.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Writes RUN_DIR/report.html and RUN_DIR/anomaly-N.dot and .svg. Exit codes: 0 written; \
2 the folder, its history.jsonl or its report.json cannot be read."
)]
pub struct ReportArgs {
    /// The run folder (e.g. results/RUN/), holding history.jsonl and report.json.
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
}

/// Runs `harness report`: reads the run folder, writes the HTML and DOT.
pub fn command(args: ReportArgs) -> Result<u8> {
    let dir = &args.dir;
    if dir.is_file() {
        bail!(
            "{} is a file; harness report takes a run folder (the one holding history.jsonl)",
            dir.display()
        );
    }
    if !dir.is_dir() {
        bail!("{}: no such folder", dir.display());
    }
    let path = dir.join("history.jsonl");
    let report = dir.join("report.json");
    if !path.exists() {
        // Read the report first: it says whether this is a run at all.
        load_report(dir)?;
        bail!("{}: no such file", path.display());
    }
    let h = history::read_jsonl_file(&path)?;
    if h.end.is_none() {
        eprintln!(
            "note: {} has no end line: the run was cut short (a last line cut mid-record \
             is left out); the report shows what it recorded",
            path.display()
        );
    }
    if !report.exists() {
        // A run killed before it wrote its report: rebuild it.
        let out = crate::run::rebuild_report(dir, &h)?;
        eprintln!("note: {} rebuilt from the history alone", out.display());
    }
    let (run, _) = load_report(dir)?;
    // `counts` is the workload's; the final reads are counted apart.
    let finals = run
        .pointer("/final_reads/txns")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let counted = run
        .pointer("/counts/total")
        .and_then(Value::as_u64)
        .map(|n| n + finals);
    if counted.is_some_and(|n| n != h.txns.len() as u64) {
        bail!(
            "{} describes {} transactions but {} holds {}: the history changed since the \
             report was written; move report.json away to rebuild it from the history",
            report.display(),
            counted.unwrap_or(0),
            path.display(),
            h.txns.len()
        );
    }
    let out = write(dir, &Drawn::Whole(&h))?;
    print_out(&format!("report: {}\n", out.display()));
    Ok(0)
}
