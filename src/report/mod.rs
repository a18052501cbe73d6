//! A run's `report.html` and the Graphviz DOT and SVG of each
//! counterexample, from its `history.jsonl` and `report.json`, through
//! [`write`]: what `harness run` writes at its end and `harness report`
//! (`report_cmd.rs`) writes again.

mod axes;
mod cycle;
mod escape;
mod html;
mod plot;
pub use plot::Bucketing;
mod timeline;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use history::{Fault, History};
use serde::Deserialize as _;
use serde_json::Value;

/// `report.json` of `dir`, whole and its `check` part, or an error naming
/// the file.
pub(crate) fn load_report(dir: &Path) -> Result<(Value, checkers::Report)> {
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

/// What the page is drawn from.
pub enum Drawn<'a> {
    /// The whole history, read back: every chart, the timeline and every
    /// transaction's latency.
    Whole(&'a History),
    /// What the recorder of a run too long to read back kept as it wrote
    /// (see [`Bucketing`]): the charts over time and the faults; the
    /// drawings of every transaction are left out.
    Kept {
        buckets: Option<plot::Buckets>,
        faults: &'a [Fault],
        txns: u64,
    },
}

/// Writes `report.html` and one `anomaly-<n>.dot` and `.svg` per counterexample into
/// the run folder `dir`, from its `report.json` and what `drawn` gives;
/// returns the HTML's path.
pub fn write(dir: &Path, drawn: &Drawn) -> Result<PathBuf> {
    let (run, check) = load_report(dir)?;
    for (i, a) in check.anomalies.iter().enumerate() {
        for (ext, text) in [("dot", checkers::to_dot(a)), ("svg", cycle::standalone(a))] {
            let p = dir.join(format!("anomaly-{}.{ext}", i + 1));
            fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?;
        }
    }
    let out = dir.join("report.html");
    fs::write(&out, html::render(&run, &check, drawn))
        .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(out)
}
