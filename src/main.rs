//! The `verdict` binary: parse, dispatch, print the error chain with hints, exit.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = verdict::cli::Cli::parse();
    match verdict::cmd::run(cli) {
        Ok(code) => code,
        Err(err) => {
            verdict::diag::print(&err);
            ExitCode::from(2)
        }
    }
}
