//! `harness`: drives a real database with generated transactions, records
//! the history, and checks it against an isolation level (see docs/design.md).

mod campaign;
mod check_cmd;
mod cli;
mod cluster;
mod compare;
mod expectation;
mod follow;
mod json_layout;
mod memory;
mod nemesis;
mod output;
mod progress;
mod quantiles;
mod report;
mod report_cmd;
mod run;
mod scenario;
mod stats;

use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Command};

/// Parses the command line, runs the subcommand, and maps the result to
/// the exit codes of docs/cli.md.
fn main() -> ExitCode {
    memory::keep_freed_memory();
    memory::no_fault_around();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A value a flag's parser refused: its message is complete on
        // clap's first line (`error: invalid value '-1' for '--txns
        // <TXNS>': ...`); print that one line, as every other failure is.
        Err(e) if e.kind() == clap::error::ErrorKind::ValueValidation => {
            let text = e.to_string();
            eprintln!("{}", text.lines().next().unwrap_or("error: invalid value"));
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Run(a) => scenario::run_command(*a),
        Command::Check(a) => check_cmd::command(a),
        Command::Convert(a) => check_cmd::convert(a),
        Command::Campaign(a) => campaign::command(a),
        Command::Compare(a) => compare::command(a),
        Command::Report(a) => report_cmd::command(a),
        Command::Cluster(a) => cluster::command(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
