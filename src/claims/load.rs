//! Reading a claims file: YAML syntax and type errors with their line and column.

use std::path::Path;

use super::raw::RawClaimFile;
use super::validate::validate;
use super::{ClaimSet, ClaimsError, Problem};

/// Reads, parses and validates a claims file.
pub fn load(path: &Path) -> Result<ClaimSet, ClaimsError> {
    let file = path.display().to_string();
    let fail = |message: String, hint: &str| ClaimsError {
        file: file.clone(),
        problems: vec![Problem { line: 0, column: 0, message, hint: Some(hint.into()) }],
    };
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            fail("the file is not UTF-8 text".into(), "save the claims file as UTF-8")
        })?,
        Err(e) if path.is_dir() => {
            return Err(fail(format!("`{file}` is a directory ({e})"), "pass a claims YAML file"));
        }
        Err(e) => return Err(fail(format!("cannot read `{file}` ({e})"), "check the path")),
    };
    let raw = parse(&text).map_err(|p| ClaimsError { file: file.clone(), problems: vec![p] })?;
    validate(raw, path)
}

/// Parses YAML into the raw model, turning a serde-saphyr error into one positioned problem.
pub fn parse(text: &str) -> Result<RawClaimFile, Problem> {
    serde_saphyr::from_str::<RawClaimFile>(text).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line() as u32, l.column() as u32));
        let full = e.to_string();
        let first = full.lines().next().unwrap_or("").trim();
        let message = first
            .strip_prefix("error: ")
            .unwrap_or(first)
            .split_once(": ")
            .filter(|(pos, _)| pos.starts_with("line "))
            .map_or(first.to_string(), |(_, m)| m.to_string());
        let hint = if message.contains("unknown field") {
            "remove or rename the key; the claims format is documented in docs/claims.md"
        } else if message.contains("missing field") {
            "add the required key (docs/claims.md lists them)"
        } else if message.contains("unknown variant") {
            "use one of the values listed in the message"
        } else {
            "check the YAML syntax around this position"
        };
        Problem { line, column, message, hint: Some(hint.into()) }
    })
}
