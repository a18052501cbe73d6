//! `harness report RUN_DIR`: rebuild a run's `report.html` and the Graphviz
//! DOT and SVG of each counterexample from the run's `history.jsonl` and
//! `report.json`. `harness run` writes the same files through [`write`].

mod cycle;
mod escape;
mod html;
mod plot;
mod timeline;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use history::History;
use serde::Deserialize as _;
use serde_json::Value;

use crate::output::print_out;

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
    // Read the report first: it is small, and says whether this is a run.
    load_report(dir)?;
    let path = dir.join("history.jsonl");
    if !path.exists() {
        bail!("{}: no such file", path.display());
    }
    let h = history::read_jsonl_file(&path)?;
    let out = write(dir, &h)?;
    print_out(&format!("report: {}\n", out.display()));
    Ok(0)
}

/// `report.json` of `dir`, whole and its `check` part, or an error naming
/// the file.
fn load_report(dir: &Path) -> Result<(Value, checkers::Report)> {
    let path = dir.join("report.json");
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{}: no such file", path.display())
        }
        Err(e) => bail!("{}: {e}", path.display()),
    };
    let run: Value = serde_json::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let check = run
        .get("check")
        .ok_or_else(|| anyhow!("{}: no \"check\" object", path.display()))?;
    let check = checkers::Report::deserialize(check)
        .map_err(|e| anyhow!("{}: in \"check\": {e}", path.display()))?;
    Ok((run, check))
}

/// Writes `report.html` and one `anomaly-<n>.dot` and `.svg` per counterexample into
/// the run folder `dir`, from its `report.json` and its history `h`;
/// returns the HTML's path.
pub fn write(dir: &Path, h: &History) -> Result<PathBuf> {
    let (run, check) = load_report(dir)?;
    for (i, a) in check.anomalies.iter().enumerate() {
        for (ext, text) in [("dot", checkers::to_dot(a)), ("svg", cycle::standalone(a))] {
            let p = dir.join(format!("anomaly-{}.{ext}", i + 1));
            fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?;
        }
    }
    let out = dir.join("report.html");
    fs::write(&out, html::render(&run, &check, h))
        .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(out)
}
