//! `verdict` turns an Nsight Systems SQLite export and a file of claims into an audited
//! diagnosis.
//!
//! Data flows one way: [`trace`] reads the export (read-only), [`analysis`] computes evidence
//! that discloses its window, devices and denominators, and the commands in [`cmd`] print it.
//! [`scope`] holds windows and device selections, [`units`] the exact display of numbers,
//! [`stats`] the two-sample statistics (rank test, shift intervals, bootstrap) of a comparison,
//! [`draft`] the claims skeleton drafted from a prose answer, [`mcp`] the tools served to agents.

#![warn(missing_docs)]

pub mod analysis;
pub mod audit;
pub mod ci;
pub mod claims;
pub mod cli;
pub mod cmd;
pub mod diag;
pub mod draft;
pub mod engine;
pub mod eval;
pub mod formula;
pub mod i18n;
pub mod inspect;
pub mod markdown;
pub mod mcp;
pub mod plan;
pub mod render;
pub mod scope;
pub mod stats;
pub mod term;
pub mod trace;
pub mod units;
pub mod verdict;
pub mod verify;
pub mod visible;

/// An error message with a hint, for errors that have no domain type of their own.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Hinted {
    /// What went wrong.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl Hinted {
    /// Builds one.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Hinted {
        Hinted { message: message.into(), hint: hint.into() }
    }
}
