//! The arguments of `harness campaign` (a leaf module the command line uses).

use std::path::PathBuf;

use clap::Args;

/// Arguments of `harness campaign`.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Exit codes: 0 every run met its expectation; 1 some run did not, or \
could not run (see junit.xml); 2 the campaign file is wrong or the results cannot be written."
)]
pub struct CampaignArgs {
    /// The campaign file (TOML; see scenarios/local.toml).
    pub file: PathBuf,
    /// Folder that receives `<campaign>/`.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Only the runs whose name contains this text (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub only: Vec<String>,
    /// List the runs, run nothing.
    #[arg(long)]
    pub dry_run: bool,
}
