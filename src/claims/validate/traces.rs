//! The `traces` section of a claims file: a single file, which must exist; a trace set (a
//! glob or a list of files), expanded into its files; the runs of one configuration, one
//! trace per file. It checks paths and counts and never opens a trace.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_saphyr::Spanned;

use super::{Checker, at, glob_files, is_set_path};
use crate::claims::TraceDecl;
use crate::claims::raw::{RawPaths, RawTrace};

/// What a trace set's paths should be.
const SET_HINT: &str = "a trace set is a glob (`runs/*.sqlite`) or a list of files, relative to the claims file's folder";

/// The `traces` section: a single file must exist; a trace set (a glob or a list of files) is
/// expanded here, and its expected ranks checked against the files it holds.
pub(super) fn traces(
    c: &mut Checker,
    raw: &BTreeMap<String, RawTrace>,
    base: &Path,
) -> Vec<TraceDecl> {
    let mut traces = Vec::new();
    for (name, t) in raw {
        let patterns: Vec<PathBuf> = match &t.path.value {
            RawPaths::One(p) => vec![base.join(p)],
            RawPaths::Many(v) => v.iter().map(|p| base.join(p)).collect(),
        };
        let declared_set = match &t.path.value {
            RawPaths::One(p) => is_set_path(base, p),
            RawPaths::Many(_) => true,
        };
        let (path, set) = match &t.path.value {
            RawPaths::One(p) if !is_set_path(base, p) => (p.clone(), None),
            RawPaths::One(p) => (p.clone(), Some(vec![p.clone()])),
            RawPaths::Many(v) => (v.join(", "), Some(v.clone())),
        };
        let resolved = base.join(&path);
        let set = trace_files(c, name, t, base, &path, &resolved, set);
        let expect_ranks = expect_ranks(c, name, t, set.as_deref(), declared_set);
        let is_runs = t.runs.as_ref().is_some_and(|r| r.value);
        if let (Some(_), Some(d), false) = (&set, &t.expect_devices, is_runs) {
            c.err(
                at(d),
                format!("trace `{name}`: `expect_devices` on a trace set"),
                Some(
                    "device numbers repeat across the files of a set and name no rank; state `expect_ranks`"
                        .into(),
                ),
            );
        }
        let label = c.opt_text(&t.label, &format!("trace `{name}` label"));
        let stands_for = c.opt_text(&t.stands_for, &format!("trace `{name}` stands_for"));
        let obtain = t.obtain.as_ref().map(|o| o.value.clone());
        let expect_devices = t.expect_devices.as_ref().and_then(|d| c.devices(d));
        let decl = TraceDecl {
            name: name.clone(),
            path,
            resolved: set.as_ref().and_then(|f| f.first().cloned()).unwrap_or(resolved),
            patterns: set.is_some().then_some(patterns),
            set,
            label,
            expect_devices,
            expect_ranks,
            run_of: None,
            stands_for,
            obtain,
        };
        match t.runs.as_ref().filter(|r| r.value) {
            Some(r) => traces.extend(runs(c, r, &decl, base)),
            None => traces.push(decl),
        }
    }
    traces
}

/// The files of trace `name`, whose `path` resolves to `resolved`: none for a single file,
/// whose absence is reported; for a set (`set`, its paths and globs as written) every file it
/// names, or none and the reason.
fn trace_files(
    c: &mut Checker,
    name: &str,
    t: &RawTrace,
    base: &Path,
    path: &str,
    resolved: &Path,
    set: Option<Vec<String>>,
) -> Option<Vec<PathBuf>> {
    match set {
        None => {
            if path.trim().is_empty() {
                c.err(
                    at(&t.path),
                    format!("trace `{name}`: the path is empty"),
                    Some(
                        "give the `.sqlite` file's path, relative to the claims file's folder"
                            .into(),
                    ),
                );
            } else if !resolved.exists() {
                c.err(
                    at(&t.path),
                    format!(
                        "trace `{name}`: `{path}` does not exist (resolved to `{}`)",
                        resolved.display()
                    ),
                    Some(match &t.obtain {
                        Some(o) => format!("the claims file says where to get it: {}", o.value),
                        None => "trace paths are relative to the claims file's folder".to_string(),
                    }),
                );
            }
            None
        }
        Some(patterns) => match expand_set(base, &patterns) {
            Ok(files) => Some(files),
            Err(e) => {
                let hint = match &t.obtain {
                    Some(o) => format!("the claims file says where to get it: {}", o.value),
                    None => SET_HINT.into(),
                };
                c.err(at(&t.path), format!("trace `{name}`: {e}"), Some(hint));
                None
            }
        },
    }
}

/// Trace `name`'s `expect_ranks`: a positive count, at least the number of files of its set
/// (`files`), and only on a trace declared as a set.
fn expect_ranks(
    c: &mut Checker,
    name: &str,
    t: &RawTrace,
    files: Option<&[PathBuf]>,
    declared_set: bool,
) -> Option<usize> {
    let expect_ranks = t.expect_ranks.as_ref().and_then(|n| match usize::try_from(n.value) {
        Ok(v) if v > 0 => Some(v),
        _ => {
            c.err(
                at(n),
                format!("trace `{name}`: `expect_ranks` is {}, not a positive count", n.value),
                Some("the number of ranks the job ran, such as 8".into()),
            );
            None
        }
    });
    if let (Some(files), Some(n)) = (files, expect_ranks)
        && files.len() > n
    {
        c.err(
            at(&t.path),
            format!(
                "trace `{name}`: {} files for {n} expected ranks (each file has at least one rank)",
                files.len()
            ),
            Some("check the glob, or `expect_ranks`".into()),
        );
    }
    // A set whose glob matched nothing is reported above, not as a single trace.
    if let (false, Some(n)) = (declared_set, &t.expect_ranks) {
        c.err(
            at(n),
            format!("trace `{name}`: `expect_ranks` on a single trace"),
            Some("`expect_ranks` counts the ranks of a trace set (a glob or a list of files); one file states `expect_devices`".into()),
        );
    }
    expect_ranks
}

/// The runs of a trace declared with `runs: true` (`r`), as `decl` holds it: one single trace
/// per file of its set, `NAME#1`, `NAME#2`..., in the set's order; none, and the reason, when
/// the set cannot be runs.
fn runs(c: &mut Checker, r: &Spanned<bool>, decl: &TraceDecl, base: &Path) -> Vec<TraceDecl> {
    let name = &decl.name;
    match &decl.set {
        Some(files) if files.len() >= 2 && decl.expect_ranks.is_none() => files
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let i = i + 1;
                TraceDecl {
                    name: format!("{name}#{i}"),
                    path: f.strip_prefix(base).unwrap_or(f).to_string_lossy().into_owned(),
                    resolved: f.clone(),
                    set: None,
                    patterns: None,
                    label: decl
                        .label
                        .as_ref()
                        .map(|l| l.iter().map(|(k, v)| (k.clone(), format!("{v} #{i}"))).collect()),
                    expect_devices: decl.expect_devices.clone(),
                    expect_ranks: None,
                    run_of: Some(name.clone()),
                    stands_for: decl.stands_for.clone(),
                    obtain: decl.obtain.clone(),
                }
            })
            .collect(),
        Some(_) if decl.expect_ranks.is_some() => {
            c.err(
                at(r),
                format!("trace `{name}`: `runs` with `expect_ranks`"),
                Some("the files of `runs: true` are runs of one configuration, each a whole job; a job of several files per run is not supported as a run".into()),
            );
            Vec::new()
        }
        Some(_) => {
            c.err(
                at(r),
                format!("trace `{name}`: `runs: true` with one file"),
                Some("list two or more runs (a list or a glob), or drop `runs`".into()),
            );
            Vec::new()
        }
        None => {
            c.err(
                at(r),
                format!("trace `{name}`: `runs: true` on a single path"),
                Some("give the runs as a list of files or a glob (`runs/tp4-*.sqlite`)".into()),
            );
            Vec::new()
        }
    }
}

/// The files of a trace set: each entry a path or a glob relative to `base`, sorted; a file
/// named twice (by two entries, or by a glob and a path) is an error.
fn expand_set(base: &Path, patterns: &[String]) -> Result<Vec<PathBuf>, String> {
    if patterns.is_empty() {
        return Err("the list of files is empty".into());
    }
    let mut files = BTreeSet::new();
    for p in patterns {
        let found = if is_set_path(base, p) {
            glob_files(base, p)?
        } else {
            let f = base.join(p);
            if !f.exists() {
                return Err(format!("`{p}` does not exist (resolved to `{}`)", f.display()));
            }
            vec![f]
        };
        for f in found {
            if files.contains(&f) {
                return Err(format!("`{}` is named twice (`{p}` names it again)", f.display()));
            }
            files.insert(f);
        }
    }
    Ok(files.into_iter().collect())
}
