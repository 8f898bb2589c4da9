//! Printing errors for people: the message, its causes, then hints.
//!
//! Every domain error says what to do about it through one trait, [`Hints`]; an error that
//! does not stop the program (a query an audit could not answer) travels as a [`Diagnostic`],
//! its message and hints kept apart until they are shown.

use crate::analysis::QueryError;
use crate::analysis::copies::CopiesError;
use crate::analysis::nvtx::NvtxError;
use crate::analysis::set::SetError;
use crate::scope::ScopeError;
use crate::trace::TraceError;

/// An error that says what to do about it.
pub trait Hints: std::error::Error {
    /// What to do, most useful first; empty when the message says it all.
    fn hints(&self) -> Vec<String>;

    /// The error as a [`Diagnostic`].
    fn diagnostic(&self) -> Diagnostic {
        Diagnostic { message: self.to_string(), hints: self.hints() }
    }
}

impl Hints for TraceError {
    fn hints(&self) -> Vec<String> {
        self.hint().into_iter().collect()
    }
}

impl Hints for QueryError {
    fn hints(&self) -> Vec<String> {
        self.hint().into_iter().collect()
    }
}

impl Hints for ScopeError {
    fn hints(&self) -> Vec<String> {
        vec![self.hint().to_string()]
    }
}

impl Hints for SetError {
    fn hints(&self) -> Vec<String> {
        self.hint().into_iter().collect()
    }
}

impl Hints for CopiesError {
    fn hints(&self) -> Vec<String> {
        vec![self.hint()]
    }
}

impl Hints for NvtxError {
    fn hints(&self) -> Vec<String> {
        self.hint().into_iter().collect()
    }
}

impl Hints for crate::trace::open::Refused {
    fn hints(&self) -> Vec<String> {
        vec![self.hint.clone()]
    }
}

impl Hints for crate::render::RenderError {
    fn hints(&self) -> Vec<String> {
        vec![self.hint()]
    }
}

impl Hints for crate::i18n::StringsError {
    fn hints(&self) -> Vec<String> {
        vec![self.hint()]
    }
}

impl Hints for crate::Hinted {
    fn hints(&self) -> Vec<String> {
        vec![self.hint.clone()]
    }
}

/// What went wrong and what to do about it, kept apart: how a failed query is recorded in an
/// audit's ledger, and judged.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// What went wrong.
    pub message: String,
    /// What to do about it.
    pub hints: Vec<String>,
}

impl Diagnostic {
    /// A diagnostic without hints.
    pub fn plain(message: impl Into<String>) -> Diagnostic {
        Diagnostic { message: message.into(), hints: Vec::new() }
    }
}

/// The message with its hints on one line: `message (hint: ...)`.
impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        for h in &self.hints {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

/// The hints of one cause of an error chain, when it is a domain error.
fn hints_of(cause: &(dyn std::error::Error + 'static)) -> Vec<String> {
    macro_rules! first_of {
        ($($t:ty),*) => {
            $(if let Some(e) = cause.downcast_ref::<$t>() {
                return e.hints();
            })*
        };
    }
    first_of!(
        TraceError,
        QueryError,
        ScopeError,
        SetError,
        CopiesError,
        NvtxError,
        crate::render::RenderError,
        crate::i18n::StringsError,
        crate::Hinted,
        crate::trace::open::Refused
    );
    // A file the gate refused, carried by an I/O error.
    if let Some(r) =
        cause.downcast_ref::<std::io::Error>().and_then(crate::trace::open::Refused::of)
    {
        return r.hints();
    }
    Vec::new()
}

/// The hints of every known error in the chain, each once; an empty one is no hint.
pub fn hints(err: &anyhow::Error) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cause in err.chain() {
        for h in hints_of(cause) {
            if !h.trim().is_empty() && !out.contains(&h) {
                out.push(h);
            }
        }
    }
    out
}

/// An error and its causes on one line; a cause that a message already quotes
/// (`cannot read x: <cause>`) appears once.
pub fn message(err: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in err.chain().map(|c| c.to_string()) {
        if message.contains(&cause) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&cause);
    }
    message
}

/// Prints `error: ...` with its causes on one line, then each hint. A message quotes names
/// from the claims file and the trace, so control characters in it are shown as escapes
/// ([`crate::term::shown`]).
pub fn print(err: &anyhow::Error) {
    use crate::term::shown;
    if let Some(e) = err.downcast_ref::<crate::claims::ClaimsError>() {
        eprintln!("error: {}", shown(&e.to_string()));
        return;
    }
    let message = message(err);
    eprintln!("error: {}", shown(&message));
    for h in printed_hints(err, &message) {
        eprintln!("  hint: {}", shown(&h));
    }
}

/// The hints printed for an error: its own, else the fallback; never none, never an empty one.
fn printed_hints(err: &anyhow::Error, message: &str) -> Vec<String> {
    let mut hints = hints(err);
    if hints.is_empty() {
        hints.push(fallback_hint(err, message));
    }
    hints
}

/// The hint of an error that carries none: what to check for the operating system's error
/// it holds (a full disk, a read-only folder, a path under a file, a link to nothing), else
/// the paths it names. Every exit 2 says what to do.
fn fallback_hint(err: &anyhow::Error, message: &str) -> String {
    let kind = err.chain().find_map(|c| c.downcast_ref::<std::io::Error>()).map(|e| e.kind());
    crate::trace::open::hint_for(kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_never_printed_with_an_empty_hint() {
        let empty: anyhow::Error = crate::Hinted::new("cannot write `x`", "").into();
        let h = printed_hints(&empty, &message(&empty));
        assert_eq!(h.len(), 1);
        assert!(!h[0].trim().is_empty());
        let given: anyhow::Error = crate::Hinted::new("m", "do this").into();
        assert_eq!(printed_hints(&given, "m"), vec!["do this".to_string()]);
        let refused = std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            crate::trace::open::Refused {
                message: "`p` is a FIFO".into(),
                hint: "pass a file".into(),
            },
        );
        let e: anyhow::Error = anyhow::Error::new(refused).context("cannot read");
        assert_eq!(hints(&e), vec!["pass a file".to_string()]);
    }
}
