//! The commands: each builds its inputs, runs the pipeline and prints text or JSON.

mod check;
mod inspect;
mod query;
mod table;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Inspect(args) => inspect::run(args),
        Command::Query(q) => query::run(q),
        Command::Analyses => query::list_analyses(),
        Command::Check(args) => check::run(args),
    }
}

/// Prints a value as pretty JSON on stdout.
fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
