//! Turning an audit into text for people: UI strings per language.

pub mod i18n;
