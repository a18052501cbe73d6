//! `harness`: drives a real database with generated transactions, records
//! the history, and checks it against an isolation level (see DESIGN.md).

mod check_cmd;
mod cli;
mod run;

fn main() -> std::process::ExitCode {
    cli::main()
}
