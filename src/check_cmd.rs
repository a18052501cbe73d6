//! `harness check`: read a history, check it, print the verdict.

use anyhow::{bail, Result};
use checkers::CheckOptions;

use crate::cli::{exit_code, print_out, CheckArgs};

/// Runs `harness check`; returns the verdict's exit code.
pub fn command(args: CheckArgs) -> Result<u8> {
    let path = &args.history;
    if !path.exists() {
        bail!("{}: no such file", path.display());
    }
    let h = history::formats::read(path, args.format)?;
    let opts = CheckOptions {
        timeout: args.timeout,
        use_dbts: args.use_dbts,
        ..CheckOptions::default()
    };
    let report = checkers::check(&h, args.level, &opts);
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
