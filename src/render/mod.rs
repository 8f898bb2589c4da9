//! Turning an audit into documents: UI strings, markup conversion, charts.

pub mod charts;
pub mod i18n;
pub mod markup;
