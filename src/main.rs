//! The `verdict` binary: parse, dispatch, print the error chain with hints, exit.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match verdict::cli::Cli::try_parse() {
        Ok(cli) => cli,
        // A usage error quotes the argument as given: its control characters and bidirectional
        // overrides are shown as escapes, as in every other error.
        Err(e) if e.use_stderr() => {
            eprint!("{}", verdict::term::shown(&e.render().to_string()));
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
        Err(e) => e.exit(),
    };
    match verdict::cmd::run(cli) {
        Ok(code) => code,
        Err(err) => {
            verdict::diag::print(&err);
            ExitCode::from(2)
        }
    }
}
