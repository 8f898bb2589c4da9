//! `verdict verify`: what a rendered report set recorded, read back for rerunning.
//!
//! A report set's manifest names its evidence ledger with its sha256; the ledger holds every
//! query's reproducing command (as words), its evidence, and the sha256 of every trace file it
//! read. This module reads that record, checks the traces against their recorded digests, and
//! compares evidence field by field. Rerunning is the commands' own work (`cmd/verify.rs`
//! parses each recorded command into its query plan).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The parts of a piece of evidence that a rerun must give again (the producer's version, the
/// trace's path as named and the metrics' definitions are not numbers).
pub const COMPARED: &[&str] =
    &["analysis", "window", "scope", "parameters", "values", "rows", "notes", "samples"];

/// One recorded command.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The ledger key.
    pub key: String,
    /// The command as one shell line.
    pub command: String,
    /// The command as words.
    pub argv: Vec<String>,
    /// The evidence it gave, as JSON.
    pub evidence: Option<Value>,
    /// Or why it failed.
    pub error: Option<String>,
}

/// A trace file the record read, with its digest then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedTrace {
    /// The trace's name in the claims file (with the file's place in a set).
    pub name: String,
    /// The path as recorded (relative to the folder the render ran in).
    pub path: PathBuf,
    /// Its sha256 then.
    pub sha256: String,
}

/// What a report set recorded.
#[derive(Debug, Clone)]
pub struct Record {
    /// The report id.
    pub report: String,
    /// The version of the tool that rendered it.
    pub tool_version: String,
    /// The evidence file, as read.
    pub evidence_file: PathBuf,
    /// The ledger's commands, then the chart context's.
    pub entries: Vec<Entry>,
    /// Every trace file, once.
    pub traces: Vec<RecordedTrace>,
    /// For each ledger key, the claims and parts that read it (`claim/part`), and for each
    /// chart-context key the parts whose spread it gives.
    pub readers: BTreeMap<String, Vec<String>>,
}

/// A file of the set that the manifest names, or the set's evidence, could not be read or
/// is not the one named; or a trace is missing or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The report set itself: a message and a hint.
    Set(String, String),
    /// A trace file the ledger read is not where it was.
    Missing {
        /// Trace name.
        name: String,
        /// The recorded path.
        path: PathBuf,
        /// Where it was looked for.
        at: PathBuf,
    },
    /// A trace file's bytes are not the ones the ledger read.
    Changed {
        /// Trace name.
        name: String,
        /// The recorded path.
        path: PathBuf,
        /// The recorded sha256.
        recorded: String,
        /// The sha256 now.
        now: String,
    },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Set(m, _) => write!(f, "{m}"),
            Problem::Missing { name, path, at } => write!(
                f,
                "trace `{name}` is missing: the ledger read `{}`, expected at `{}`",
                path.display(),
                at.display()
            ),
            Problem::Changed { name, path, recorded, now } => write!(
                f,
                "trace `{name}` (`{}`) is not the file the report read: sha256 {now} now, {recorded} recorded",
                path.display()
            ),
        }
    }
}

impl Problem {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            Problem::Set(_, h) => h.clone(),
            Problem::Missing { .. } => "run `verdict verify` from the folder the report was rendered in (the ledger names traces relative to it), with the traces in place".into(),
            Problem::Changed { .. } => "the report was rendered from other bytes: restore that trace, or render the report again from this one (`verdict render CLAIMS.yaml`) and commit the new set".into(),
        }
    }
}

fn set_problem(m: impl Into<String>, h: impl Into<String>) -> Problem {
    Problem::Set(m.into(), h.into())
}

/// The largest manifest read: a report set's lists its files in a few kilobytes.
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The largest evidence ledger read.
const MAX_LEDGER_BYTES: u64 = 4 << 30;

/// The sha256 of a file, as lowercase hex.
pub fn sha256(path: &Path) -> std::io::Result<String> {
    // A folder of Parquet tables has the digest its evidence carries (an extract's manifest).
    if path.is_dir() {
        let trace = crate::trace::Trace::open(path).map_err(std::io::Error::other)?;
        return trace.known_digest().ok_or_else(|| std::io::Error::other("not a trace folder"));
    }
    crate::trace::sha256_file(path)
}

/// Reads the manifest at `path` and the evidence ledger it names (which must have the sha256
/// the manifest gives it).
pub fn read(path: &Path) -> Result<Record, Problem> {
    let shown = path.display();
    let text =
        crate::trace::open::read_to_string_limited(path, MAX_MANIFEST_BYTES).map_err(|e| {
            set_problem(
                format!("cannot read manifest `{shown}` ({e})"),
                "pass the `ID.manifest.json` that `verdict render` wrote into its --out folder",
            )
        })?;
    let manifest: Value = serde_json::from_str(&text).map_err(|e| {
        set_problem(
            format!("manifest `{shown}` is not JSON ({e})"),
            "pass the `ID.manifest.json` that `verdict render` wrote into its --out folder",
        )
    })?;
    let report = manifest["report"].as_str().ok_or_else(|| {
        set_problem(
            format!("`{shown}` is not a report manifest: it has no `report`"),
            "pass the `ID.manifest.json` that `verdict render` wrote into its --out folder",
        )
    })?;
    // The report's id names a file beside the manifest: never a path elsewhere.
    if report.is_empty() || report.contains(['/', '\\']) || report.starts_with('.') {
        return Err(set_problem(
            format!("manifest `{shown}` names report `{report}`, which is not a report id"),
            "the report set was changed after it was rendered: render it again",
        ));
    }
    let name = format!("{report}.evidence.json");
    let listed = manifest["files"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["name"].as_str() == Some(name.as_str()))
        .and_then(|f| f["sha256"].as_str())
        .ok_or_else(|| {
            set_problem(
                format!("manifest `{shown}` names no `{name}`"),
                "render the report again: every report set holds its evidence ledger",
            )
        })?;
    let evidence_file = path.parent().unwrap_or(Path::new("")).join(&name);
    let at = evidence_file.display();
    let digest = sha256(&evidence_file).map_err(|e| {
        set_problem(
            format!("cannot read `{at}`, the evidence ledger the manifest names ({e})"),
            "keep the report set's files together, as `verdict render` wrote them",
        )
    })?;
    if digest != listed {
        return Err(set_problem(
            format!(
                "`{at}` is not the ledger the manifest names: sha256 {digest}, the manifest says {listed}"
            ),
            "the report set was changed after it was rendered: render it again",
        ));
    }
    let ledger: Value =
        crate::trace::open::read_to_string_limited(&evidence_file, MAX_LEDGER_BYTES)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or_else(|| set_problem(format!("`{at}` is not JSON"), "render the report again"))?;
    Ok(Record {
        report: report.to_string(),
        tool_version: manifest["tool"]["version"].as_str().unwrap_or("").to_string(),
        evidence_file,
        entries: entries(&ledger),
        traces: traces(&ledger),
        readers: readers(&ledger),
    })
}

/// The ledger's commands, then the chart context's.
fn entries(ledger: &Value) -> Vec<Entry> {
    ["ledger", "context"]
        .iter()
        .flat_map(|k| ledger[*k].as_array().into_iter().flatten())
        .map(|e| Entry {
            key: e["key"].as_str().unwrap_or("").to_string(),
            command: e["command"].as_str().unwrap_or("").to_string(),
            argv: e["argv"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| w.as_str().map(String::from))
                .collect(),
            evidence: e.get("evidence").filter(|v| !v.is_null()).cloned(),
            error: e["error"].as_str().map(String::from),
        })
        .collect()
}

/// Every trace file the ledger read, once: the declared traces (a set by its files) and the
/// trace of every piece of evidence.
fn traces(ledger: &Value) -> Vec<RecordedTrace> {
    let mut out: Vec<RecordedTrace> = Vec::new();
    let mut add = |name: &str, t: &Value| {
        let files: Vec<(String, &Value)> = match t["set"]["files"].as_array() {
            Some(files) => files
                .iter()
                .enumerate()
                .map(|(i, f)| (format!("{name} (file {} of {})", i + 1, files.len()), f))
                .collect(),
            None => vec![(name.to_string(), t)],
        };
        for (name, f) in files {
            let (Some(path), Some(sha)) = (f["path"].as_str(), f["sha256"].as_str()) else {
                continue;
            };
            if !out.iter().any(|r| r.path == Path::new(path)) {
                out.push(RecordedTrace { name, path: path.into(), sha256: sha.into() });
            }
        }
    };
    for t in ledger["traces"].as_array().into_iter().flatten() {
        let name = t["name"].as_str().unwrap_or("");
        add(name, &t["coverage"]["trace"]);
    }
    for e in ["ledger", "context"].iter().flat_map(|k| ledger[*k].as_array().into_iter().flatten())
    {
        add(
            e["key"].as_str().unwrap_or("").split('/').next().unwrap_or(""),
            &e["evidence"]["trace"],
        );
    }
    out
}

/// For each ledger key, the `claim/part`s that read it; for each chart-context key, the
/// parts whose spread over devices it gives.
fn readers(ledger: &Value) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in ledger["results"].as_array().into_iter().flatten() {
        for p in c["parts"].as_array().into_iter().flatten() {
            if let Some(key) = p["evidence"].as_str() {
                let who = format!(
                    "{}/{}",
                    c["id"].as_str().unwrap_or(""),
                    p["id"].as_str().unwrap_or("")
                );
                out.entry(key.to_string()).or_default().push(who);
            }
        }
    }
    for s in ledger["spreads"].as_array().into_iter().flatten() {
        if let Some(key) = s["context"].as_str() {
            let who = format!(
                "{}/{} (spread)",
                s["claim"].as_str().unwrap_or(""),
                s["part"].as_str().unwrap_or("")
            );
            out.entry(key.to_string()).or_default().push(who);
        }
    }
    out
}

/// The recorded traces that are missing or changed, each file resolved against `base`.
pub fn check_traces(traces: &[RecordedTrace], base: &Path) -> Vec<Problem> {
    let mut out = Vec::new();
    for t in traces {
        let at = base.join(&t.path);
        match sha256(&at) {
            Err(_) if !at.exists() => {
                out.push(Problem::Missing { name: t.name.clone(), path: t.path.clone(), at });
            }
            Err(e) => out.push(set_problem(
                format!("cannot read trace `{}` at `{}` ({e})", t.name, at.display()),
                crate::trace::open::Refused::of(&e)
                    .map_or_else(|| "check its permissions".to_string(), |r| r.hint.clone()),
            )),
            Ok(now) if now != t.sha256 => out.push(Problem::Changed {
                name: t.name.clone(),
                path: t.path.clone(),
                recorded: t.sha256.clone(),
                now,
            }),
            Ok(_) => {}
        }
    }
    out
}

/// One value that differs between the recorded evidence and the rerun's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Where, as `values.nccl_only_ns` or `rows[2].wait_ns`.
    pub path: String,
    /// The recorded value (JSON), or `absent`.
    pub old: String,
    /// The rerun's value (JSON), or `absent`.
    pub new: String,
}

/// The values that differ between two pieces of evidence, over [`COMPARED`], leaf by leaf.
pub fn diff(old: &Value, new: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    for k in COMPARED {
        walk(k, old.get(*k), new.get(*k), &mut out);
    }
    out
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "null".into(),
        Some(v) => v.to_string(),
    }
}

fn walk(path: &str, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<Difference>) {
    let (old, new) = (old.filter(|v| !v.is_null()), new.filter(|v| !v.is_null()));
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                walk(&format!("{path}.{k}"), a.get(k), b.get(k), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                walk(&format!("{path}[{i}]"), Some(x), Some(y), out);
            }
        }
        (a, b) if a != b => {
            let len = |v: Option<&Value>| match v {
                Some(Value::Array(x)) => Some(x.len()),
                _ => None,
            };
            // Arrays of another length: their lengths, not their whole text.
            let (old, new) = match (len(a), len(b)) {
                (Some(x), Some(y)) => (format!("{x} items"), format!("{y} items")),
                _ => (shown(a), shown(b)),
            };
            out.push(Difference { path: path.to_string(), old, new });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_names_each_changed_leaf() {
        let old = json!({"values": {"a": 1, "b": [1, 2]}, "rows": [{"x": 1}], "tool": 1});
        let new = json!({"values": {"a": 2, "b": [1, 3]}, "rows": [{"x": 1}, {"x": 2}], "tool": 2});
        let d = diff(&old, &new);
        let got: Vec<(String, String, String)> =
            d.into_iter().map(|d| (d.path, d.old, d.new)).collect();
        assert_eq!(
            got,
            vec![
                ("values.a".into(), "1".into(), "2".into()),
                ("values.b[1]".into(), "2".into(), "3".into()),
                ("rows".into(), "1 items".into(), "2 items".into()),
            ]
        );
        assert!(diff(&old, &old).is_empty());
    }
}
