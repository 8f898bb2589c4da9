//! Reading a claims file: YAML syntax and type errors with their line and column.
//!
//! The path must be a regular file no larger than [`MAX_FILE_BYTES`]; anything else (a
//! directory, a named pipe that would block the read, a device) is refused before it is
//! opened. The YAML budget and the claim count are limited too ([`MAX_YAML_NODES`],
//! [`MAX_CLAIMS`]), each with its own message.

use std::io::Read;
use std::path::Path;

use super::raw::RawClaimFile;
use super::validate::validate;
use super::{ClaimSet, ClaimsError, Problem};
use crate::units::thousands;

/// The largest claims file, in bytes (16 MiB).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The most YAML values (scalars, sequences and mappings) a claims file may hold. The YAML
/// parser's own default, 250,000, stopped files of about 3,300 claims of the usual size.
pub const MAX_YAML_NODES: usize = 2_000_000;

/// The most claims one file may hold.
pub const MAX_CLAIMS: usize = 10_000;

/// Where the limits are documented, for hints.
const LIMITS_DOC: &str = "docs/claims.md, \"Limits\"";

/// Reads, parses and validates a claims file.
pub fn load(path: &Path) -> Result<ClaimSet, ClaimsError> {
    validate(load_raw(path)?, path)
}

/// Reads and parses a claims file, checking its limits, without validating it (an eval adds
/// its shared traces and scopes before validation).
pub fn load_raw(path: &Path) -> Result<RawClaimFile, ClaimsError> {
    let file = path.display().to_string();
    let fail = |message: String, hint: &str| ClaimsError {
        file: file.clone(),
        problems: vec![Problem { line: 0, column: 0, message, hint: Some(hint.into()) }],
    };
    let text = read(path).map_err(|(message, hint)| fail(message, &hint))?;
    parse_checked(&text, file)
}

/// Parses and validates a claims document given as text (an agent's, say) under the limits of
/// a file: `path` names it in every error and locates its relative trace paths.
pub fn load_str(text: &str, path: &Path) -> Result<ClaimSet, ClaimsError> {
    let file = path.display().to_string();
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(ClaimsError {
            file,
            problems: vec![Problem {
                line: 0,
                column: 0,
                message: format!(
                    "the claims document is {} bytes; the limit is {} bytes (16 MiB)",
                    thousands(text.len() as i128),
                    thousands(i128::from(MAX_FILE_BYTES))
                ),
                hint: Some(format!("split the claims into several documents ({LIMITS_DOC})")),
            }],
        });
    }
    validate(parse_checked(text, file)?, path)
}

/// Parses the text of the claims file `file` and checks the claim count.
fn parse_checked(text: &str, file: String) -> Result<RawClaimFile, ClaimsError> {
    let raw = parse(text).map_err(|p| ClaimsError { file: file.clone(), problems: vec![p] })?;
    if raw.claims.len() > MAX_CLAIMS {
        let first_over = &raw.claims[MAX_CLAIMS].id;
        return Err(ClaimsError {
            file,
            problems: vec![Problem {
                line: first_over.referenced.line() as u32,
                column: first_over.referenced.column() as u32,
                message: format!(
                    "the file has {} claims; the limit is {} (this is claim {})",
                    thousands(raw.claims.len() as i128),
                    thousands(MAX_CLAIMS as i128),
                    thousands(MAX_CLAIMS as i128 + 1)
                ),
                hint: Some(format!("split the claims into several files ({LIMITS_DOC})")),
            }],
        });
    }
    Ok(raw)
}

/// The text of a claims file, or what is wrong with the path and what to do about it.
pub(crate) fn read(path: &Path) -> Result<String, (String, String)> {
    let file = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err((
                format!("claims file `{file}` does not exist"),
                "check the path; it is relative to the current folder".into(),
            ));
        }
        Err(e) => {
            return Err((
                format!("cannot read claims file `{file}` ({e})"),
                "check the path and its permissions".into(),
            ));
        }
    };
    // Checked before opening: opening a named pipe blocks until a writer comes, and a device
    // reads as an endless or empty stream, never as the file the user meant.
    if !meta.is_file() {
        let hint = if meta.is_dir() {
            "pass a claims YAML file, not a folder"
        } else {
            "pass the claims YAML file itself; claims are never read from a pipe or a device"
        };
        return Err((
            format!("claims file `{file}` is {}, not a regular file", kind_of(&meta)),
            hint.into(),
        ));
    }
    let too_large = |len: u64| {
        (
            format!(
                "claims file `{file}` is {} bytes; the limit is {} bytes (16 MiB)",
                thousands(i128::from(len)),
                thousands(i128::from(MAX_FILE_BYTES))
            ),
            format!("split the claims into several files ({LIMITS_DOC})"),
        )
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(meta.len()));
    }
    let f = std::fs::File::open(path).map_err(|e| {
        (format!("cannot read claims file `{file}` ({e})"), "check its permissions".to_string())
    })?;
    // The file may have grown since it was measured: read one byte past the limit at most.
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| {
        (format!("cannot read claims file `{file}` ({e})"), "check the path".to_string())
    })?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        (
            format!(
                "claims file `{file}` is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
            "save the claims file as UTF-8".into(),
        )
    })
}

/// What a path that is not a regular file is, for the message: its kind, or a symbolic link
/// that points nowhere.
pub(crate) fn kind_of_path(path: &Path) -> &'static str {
    match std::fs::metadata(path) {
        Ok(meta) => kind_of(&meta),
        Err(_) if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) => {
            "a symbolic link to nothing"
        }
        Err(_) => "unreadable",
    }
}

/// What a path that is not a regular file is, for the message.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

/// Parses YAML into the raw model, turning a serde-saphyr error into one positioned problem.
pub fn parse(text: &str) -> Result<RawClaimFile, Problem> {
    parse_as(text)
}

/// Parses YAML into any serde model under the claims file's limits, turning a serde-saphyr
/// error into one positioned problem (an eval file is read this way too).
pub fn parse_as<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Problem> {
    let options = serde_saphyr::options! {
        // YAML 1.2's booleans only: `exists: yes` or `"on"` is a type error at its position,
        // not a `true` the author may not have meant.
        strict_booleans: true,
        budget: serde_saphyr::budget! {
            max_nodes: MAX_YAML_NODES,
            // Every node is one or two events (a start and an end), plus the stream's own.
            max_events: 2 * MAX_YAML_NODES + 1_024,
        },
    };
    serde_saphyr::from_str_with_options::<T>(text, options).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line() as u32, l.column() as u32));
        if let serde_saphyr::Error::Budget { breach, .. } = e.without_snippet() {
            return Problem {
                line,
                column,
                message: budget_message(breach),
                hint: Some(format!(
                    "split the claims into several files; the limits are in {LIMITS_DOC}"
                )),
            };
        }
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
        } else if message.contains("invalid boolean") {
            "write `true` or `false` (YAML 1.2): `yes`, `no`, `on` and `off` are not booleans here"
        } else {
            "check the YAML syntax around this position"
        };
        Problem { line, column, message, hint: Some(hint.into()) }
    })
}

/// A YAML resource limit that was reached, in words: never a YAML syntax error.
fn budget_message(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    use serde_saphyr::budget::BudgetBreach as B;
    match breach {
        B::Nodes { .. } => format!(
            "the file holds more than {} YAML values (scalars, lists and mappings), the limit",
            thousands(MAX_YAML_NODES as i128)
        ),
        B::Events { .. } => format!(
            "the file holds more than {} YAML events, the limit",
            thousands(2 * MAX_YAML_NODES as i128 + 1_024)
        ),
        B::Depth { depth } => format!("the YAML nests {depth} levels deep, deeper than the limit"),
        B::Aliases { .. } | B::Anchors { .. } | B::AliasAnchorRatio { .. } => {
            "the file uses more YAML anchors and aliases than the limit allows".into()
        }
        other => format!("the file exceeds a YAML resource limit ({other:?})"),
    }
}
