//! `verdict extract`: the map step of an audit at fleet scale. Each trace's tables, as the
//! analyses read them, are written as Parquet with a manifest, one folder per file; every
//! command reads such a folder as it reads the trace.

#[cfg(feature = "columnar")]
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::ExtractArgs;

/// Runs `extract`.
#[cfg(feature = "columnar")]
pub fn run(args: ExtractArgs) -> anyhow::Result<ExitCode> {
    use rayon::prelude::*;

    use crate::trace::Trace;
    use crate::trace::columnar::{self, Manifest};
    use crate::units::thousands;

    let (files, set) = crate::plan::expand(&args.traces)?;
    let out = &args.out;
    if out.exists() {
        return Err(crate::Hinted::new(
            format!("`{}` exists already", out.display()),
            "extract into a new folder (an extract is never written over, nor merged into another)",
        )
        .into());
    }
    let tool = {
        let t = crate::analysis::ToolRef::current();
        match t.build {
            Some(b) => format!("{} {} ({b})", t.name, t.version),
            None => format!("{} {}", t.name, t.version),
        }
    };
    let extract = |file: &Path, dir: &Path| -> anyhow::Result<Manifest> {
        let trace = Trace::open(file).map_err(|e| {
            crate::Hinted::new(
                format!("cannot read trace `{}`: {e}", file.display()),
                e.hint().unwrap_or_default(),
            )
        })?;
        columnar::write(&trace, dir, &tool).map_err(|e| {
            crate::Hinted::new(
                format!("cannot extract `{}`: {e}", file.display()),
                e.hint().unwrap_or_default(),
            )
            .into()
        })
    };
    let written: Vec<(PathBuf, PathBuf, Manifest)> = if set {
        let names = member_names(&files)?;
        // The members are written into a folder beside OUT under a temporary name, renamed
        // once every one is complete: a failed file leaves no partial set.
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = tempfile::Builder::new().prefix(".verdict-extract-").tempdir_in(&parent)?;
        let done: Vec<anyhow::Result<Manifest>> =
            files.par_iter().zip(&names).map(|(f, n)| extract(f, &tmp.path().join(n))).collect();
        let mut manifests = Vec::with_capacity(done.len());
        for m in done {
            manifests.push(m?);
        }
        std::fs::rename(tmp.keep(), out)?;
        files
            .iter()
            .zip(names)
            .zip(manifests)
            .map(|((f, n), m)| (f.clone(), out.join(n), m))
            .collect()
    } else {
        let m = extract(&files[0], out)?;
        vec![(files[0].clone(), out.clone(), m)]
    };
    if args.json {
        let v: Vec<_> = written
            .iter()
            .map(|(f, d, m)| serde_json::json!({"trace": f, "out": d, "manifest": m}))
            .collect();
        super::print_json(&v)?;
        return Ok(ExitCode::SUCCESS);
    }
    for (f, d, m) in &written {
        let rows: u64 = m.tables.iter().map(|t| t.rows).sum();
        let bytes: u64 = m
            .tables
            .iter()
            .filter_map(|t| std::fs::metadata(d.join(&t.file)).ok())
            .map(|x| x.len())
            .sum();
        println!(
            "{} -> {}: {} tables, {} rows, {} bytes of Parquet (source {} bytes, sha256 {})",
            f.display(),
            d.display(),
            m.tables.len(),
            thousands(rows.into()),
            thousands(bytes.into()),
            thousands(m.source.bytes.into()),
            m.source.sha256.get(..16).unwrap_or_default()
        );
    }
    if set {
        println!(
            "the set is read by a quoted glob over its folders: `verdict query nccl-skew '{0}/*'`, or `path: {0}/*` under a trace of a claims file",
            out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Without the `columnar` feature: says how to get it.
#[cfg(not(feature = "columnar"))]
pub fn run(args: ExtractArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    Err(crate::Hinted::new(
        "this build of verdict writes no Parquet extracts",
        "build it with its default features (`cargo install --path .`); the `columnar` feature adds the Parquet writer and reader",
    )
    .into())
}

#[cfg(feature = "columnar")]
/// The folder name of each file of a set: its file name without the trace suffix; two files
/// of one name (from two folders) are an error.
fn member_names(files: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::with_capacity(files.len());
    let mut seen = std::collections::BTreeMap::new();
    for f in files {
        let name = f.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let stem = [".sqlite", ".json.gz", ".json", ".gz"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|s| !s.is_empty())
            .unwrap_or(&name)
            .to_string();
        if let Some(other) = seen.insert(stem.clone(), f.clone()) {
            return Err(crate::Hinted::new(
                format!(
                    "`{}` and `{}` would both be extracted to `{stem}`",
                    other.display(),
                    f.display()
                ),
                "extract the files of each folder separately (one `verdict extract` per folder), or rename one",
            )
            .into());
        }
        names.push(stem);
    }
    Ok(names)
}
