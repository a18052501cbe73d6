//! `harness`: drives a real database with generated transactions, records
//! the history, and checks it against an isolation level (see docs/design.md).

mod campaign;
mod check_cmd;
mod cli;
mod cluster;
mod compare;
mod nemesis;
mod progress;
mod report;
mod run;
mod scenario;
mod stats;

fn main() -> std::process::ExitCode {
    cli::main()
}
