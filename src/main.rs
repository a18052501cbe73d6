//! `harness`: drives a real database with generated transactions, records
//! the history, and checks it against an isolation level (see docs/design.md).

mod campaign;
mod check_cmd;
mod cli;
mod cluster;
mod compare;
mod expectation;
mod nemesis;
mod output;
mod progress;
mod report;
mod run;
mod scenario;
mod stats;

use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Command};

/// Parses the command line, runs the subcommand, and maps the result to
/// the exit codes of docs/cli.md.
fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => scenario::run_command(*a),
        Command::Check(a) => check_cmd::command(a),
        Command::Convert(a) => check_cmd::convert(a),
        Command::Campaign(a) => campaign::command(a),
        Command::Compare(a) => compare::command(a),
        Command::Report(a) => report::command(a),
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
