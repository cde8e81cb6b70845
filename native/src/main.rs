//! The `fusegraph` binary. See `fusegraph --help`.

use std::process::ExitCode;

use clap::Parser;

mod cli;

use cli::{run, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = run(cli);
    // FUSEGRAPH_PROFILE=1: the table of every kernel the command ran, to stderr.
    fusegraph_core::profile::report_env();
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("fusegraph: some results did not match the reference");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("fusegraph: {e}");
            ExitCode::from(2)
        }
    }
}
