//! Printing errors for people: the message, its causes, then hints.
//!
//! Domain errors carry their own hints; this module finds them anywhere in an error chain.

use crate::analysis::QueryError;
use crate::scope::ScopeError;
use crate::trace::TraceError;

/// The hints of every known error in the chain.
pub fn hints(err: &anyhow::Error) -> Vec<String> {
    let mut out = Vec::new();
    for cause in err.chain() {
        let hint = if let Some(e) = cause.downcast_ref::<TraceError>() {
            e.hint()
        } else if let Some(e) = cause.downcast_ref::<QueryError>() {
            e.hint()
        } else if let Some(e) = cause.downcast_ref::<ScopeError>() {
            Some(e.hint().to_string())
        } else {
            cause.downcast_ref::<crate::Hinted>().map(|e| e.hint.clone())
        };
        if let Some(h) = hint
            && !out.contains(&h)
        {
            out.push(h);
        }
    }
    out
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
    let chain: Vec<String> = err.chain().map(|c| c.to_string()).collect();
    eprintln!("error: {}", shown(&chain.join(": ")));
    for h in hints(err) {
        eprintln!("  hint: {}", shown(&h));
    }
}
