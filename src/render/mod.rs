//! Turning an audit into documents: context, templates, markup conversion, charts, i18n,
//! and the typst run that makes the PDF.

pub mod charts;
pub mod context;
pub use crate::i18n;
pub mod markup;
pub mod provenance;
pub mod report;
pub mod shell;
pub mod templates;
pub mod typst;
pub mod write;
