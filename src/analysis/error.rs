//! What goes wrong in a query: the errors a trace cannot answer as asked, each with its
//! hint, and the checked sum of nanoseconds that fails rather than wraps.

use super::ANALYSES;

/// Errors of a query that the trace cannot answer as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// A requested device has no kernels in the trace.
    #[error("device {device} has no kernels in this trace (devices with kernels: {present})")]
    UnknownDevice {
        /// The device asked for.
        device: i64,
        /// The devices present, formatted.
        present: String,
    },
    /// The window selects nothing of the trace.
    #[error("window {window} s lies outside the trace's kernels ({first}-{last} s)")]
    WindowOutside {
        /// The window, formatted.
        window: String,
        /// First kernel start, formatted in seconds.
        first: String,
        /// Last kernel end, formatted in seconds.
        last: String,
    },
    /// The trace has no kernels at all.
    #[error("the trace has no kernels")]
    NoKernels,
    /// A parameter was given that this analysis does not use.
    #[error("analysis `{analysis}` does not take `{param}`")]
    NotAdopted {
        /// The analysis.
        analysis: String,
        /// The parameter.
        param: String,
    },
    /// A parameter's value does not parse.
    #[error("`{param}`: {reason}")]
    BadParam {
        /// The parameter.
        param: String,
        /// Why.
        reason: String,
    },
    /// The analysis could not compute its values as asked.
    #[error("{reason}")]
    Failed {
        /// Why.
        reason: String,
        /// What to do about it.
        hint: String,
    },
    /// The analysis name is unknown.
    #[error("unknown analysis `{0}`")]
    UnknownAnalysis(String),
    /// A regular expression does not compile.
    #[error("invalid regex `{pattern}` ({reason})")]
    BadRegex {
        /// The pattern.
        pattern: String,
        /// The compiler's message.
        reason: String,
    },
}

/// What to do about a sum of nanoseconds that does not fit 64 bits.
pub(crate) const OVERFLOW_HINT: &str = "the durations add up to more than 292 years, far beyond what nsys records: the trace was altered or written by another tool; re-export it with `nsys export --type sqlite`";

/// The sum of `values`, checked: a total past `i64::MAX` is a failure naming `what`, never a
/// wrapped (negative) or clamped number.
pub(crate) fn checked_sum(
    values: impl IntoIterator<Item = i64>,
    what: &str,
) -> Result<i64, QueryError> {
    values.into_iter().try_fold(0i64, |acc, v| acc.checked_add(v)).ok_or_else(|| overflow(what))
}

/// The failure of a sum of nanoseconds that does not fit 64 bits.
pub(crate) fn overflow(what: &str) -> QueryError {
    QueryError::Failed {
        reason: format!("the {what} overflows 64-bit nanoseconds"),
        hint: OVERFLOW_HINT.into(),
    }
}

impl QueryError {
    /// The message with its hint, on one line, as the ledger records a failed query.
    pub fn with_hint(&self) -> String {
        match self.hint() {
            Some(h) => format!("{self} (hint: {h})"),
            None => self.to_string(),
        }
    }

    /// A hint on what to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            QueryError::UnknownDevice { present, .. } => {
                format!(
                    "pick one of the devices with kernels ({present}), or see `verdict inspect TRACE`"
                )
            }
            QueryError::WindowOutside { first, last, .. } => format!(
                "windows are seconds on the trace's own clock; this trace's kernels run from {first} to {last} s"
            ),
            QueryError::Failed { hint, .. } => hint.clone(),
            QueryError::BadParam { param, .. } => {
                format!("see `verdict analyses` for what `{param}` takes")
            }
            QueryError::NotAdopted { .. } => {
                "a parameter that an analysis would ignore is refused; drop it".into()
            }
            QueryError::NoKernels => {
                "the kernel table has no rows with collected timestamps; profile with CUDA tracing (`nsys profile --trace=cuda`) and export again".into()
            }
            QueryError::BadRegex { .. } => {
                "the pattern uses Rust regex syntax; escape special characters, or use --match for a plain substring".into()
            }
            QueryError::UnknownAnalysis(_) => {
                format!(
                    "known analyses: {}",
                    ANALYSES.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
                )
            }
        })
    }
}
