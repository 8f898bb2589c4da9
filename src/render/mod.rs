//! Turning an audit into documents: context, templates, markup conversion, charts, i18n,
//! the typst run that makes the PDF, and the report set those files form in `--out`.

pub mod blog;
pub mod charts;
pub mod context;
mod error;
pub mod eval;
pub mod experiment;
pub use crate::i18n;
pub mod interrupt;
pub mod lock;
pub mod markup;
pub mod provenance;
pub mod report;
pub mod set;
pub mod shell;
pub mod templates;
pub mod typst;
pub mod write;

pub use error::RenderError;
