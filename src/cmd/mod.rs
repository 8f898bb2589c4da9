//! The commands: each builds its inputs, runs the pipeline and prints text or JSON.

mod check;
mod doctor;
mod draft;
mod eval;
mod extract;
pub(crate) mod inspect;
mod map;
mod mcp;
pub(crate) mod query;
mod render;
mod verify;
use crate::term as table;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Inspect(args) => inspect::run(args),
        Command::Query(q) => query::run(q),
        Command::Analyses => query::list_analyses(),
        Command::Check(args) => check::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Draft(args) => draft::run(args),
        Command::Schema(args) => {
            let langs = (!args.languages.is_empty()).then_some(args.languages.as_slice());
            print_json(&match args.what.as_str() {
                "eval" => crate::claims::schema::eval_schema(langs),
                "evidence" => crate::audit::evidence_schema(),
                _ => crate::claims::schema::claims_schema(langs),
            })?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Render(args) => render::run(args),
        Command::Templates(cmd) => render::templates(cmd),
        Command::Doctor => doctor::run(),
        Command::Mcp(args) => mcp::run(args),
        Command::Extract(args) => extract::run(args),
        Command::Map(args) => map::run(args),
    }
}

/// The exit code of an audit's command: 2 when a trace could not be read (each one named on
/// stderr, after the output that still shows every claim), else `ok`.
fn exit_code(a: &crate::audit::Audit, ok: ExitCode) -> ExitCode {
    let mut unreadable = false;
    for t in a.unreadable_traces() {
        unreadable = true;
        eprintln!("error: {}", table::shown(t.error.as_deref().unwrap_or("")));
        if let Some(h) = &t.hint {
            eprintln!("  hint: {}", table::shown(h));
        }
        eprintln!(
            "  hint: the claims that read trace `{}` are not evaluated; fix its path under `traces` in the claims file (relative to that file), or the file itself",
            table::shown(&t.name)
        );
    }
    if unreadable { ExitCode::from(2) } else { ok }
}

/// Prints a value as pretty JSON on stdout.
///
/// JSON escapes the C0 controls itself but lets DEL, C1 controls and bidirectional overrides
/// through raw; they can only stand inside strings, where `\u` escapes mean the same value, so
/// they are written that way and the terminal never receives them.
fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    let mut out = String::with_capacity(json.len() + 1);
    for c in json.chars() {
        if crate::visible::is_hidden(c) && c != '\n' {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out.push('\n');
    emit(&out)
}

/// Writes to stdout; a reader that closed the pipe early (`| head`) ends output quietly.
///
/// The last guard of issue 12: whatever a command built, no control character but the line
/// break reaches the terminal ([`table::shown`]); the tables and prose have shown them already,
/// so their widths are right.
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let text = table::shown(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

/// A progress callback: trace name and kernel rows scanned so far.
type Progress = Box<dyn FnMut(&str, u64)>;

/// A spinner on stderr while traces are scanned, only when stderr is a terminal.
fn progress() -> Progress {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return Box::new(|_, _| {});
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} scanning trace {prefix}: {msg} kernel rows",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    Box::new(move |name, rows| {
        bar.set_prefix(table::shown(name).into_owned());
        bar.set_message(crate::units::thousands(rows.into()));
        bar.tick();
    })
}
