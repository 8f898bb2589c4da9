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

    if let Some(dir) = &args.merge {
        return merge(dir, args.json);
    }
    let (files, set) = crate::plan::expand(&args.traces)?;
    let Some(out) = &args.out else {
        return Err(crate::Hinted::new("no --out folder", "give --out DIR").into());
    };
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
        write_index(tmp.path(), &index(tmp.path(), &names, &tool)?)?;
        std::fs::rename(tmp.keep(), out)?;
        files
            .iter()
            .zip(names)
            .zip(manifests)
            .map(|((f, n), m)| (f.clone(), out.join(n), m))
            .collect()
    } else {
        let m = extract(&files[0], out)?;
        vec![(files[0].clone(), out.to_path_buf(), m)]
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

/// The index of a set of extracts, in the set's folder.
#[cfg(feature = "columnar")]
pub const SET_INDEX: &str = ".verdict-set.json";

/// The format name of [`SET_INDEX`].
#[cfg(feature = "columnar")]
pub const SET_FORMAT: &str = "verdict-extract-set";

/// The index of a set of extracts: its members, each with the chain back to its source.
#[cfg(feature = "columnar")]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SetIndex {
    /// Always [`SET_FORMAT`].
    pub format: String,
    /// The layout's version (that of the members' manifests).
    pub version: u32,
    /// The build of verdict that wrote the index.
    pub tool: String,
    /// The members, by folder name.
    pub members: Vec<SetMember>,
}

/// One member of a [`SetIndex`].
#[cfg(feature = "columnar")]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SetMember {
    /// The member's folder, relative to the set's.
    pub folder: String,
    /// The trace it was extracted from.
    pub source: crate::trace::columnar::SourceFile,
    /// The sha256 of its manifest file.
    pub manifest_sha256: String,
}

/// Reads the manifests of `folders` under `dir` into an index; a folder without a readable
/// manifest, or two members of one source, are errors.
#[cfg(feature = "columnar")]
fn index(dir: &Path, folders: &[String], tool: &str) -> anyhow::Result<SetIndex> {
    use crate::trace::columnar::{FORMAT, MANIFEST, Manifest, VERSION};
    use sha2::Digest;

    let mut members = Vec::with_capacity(folders.len());
    let mut sources: std::collections::BTreeMap<String, String> = Default::default();
    for f in folders {
        let path = dir.join(f).join(MANIFEST);
        let bad = |why: String| {
            crate::Hinted::new(
                format!("`{}`: {why}", path.display()),
                "each folder of a set is one `verdict extract` of one trace: extract it again, or move what is not an extract out of the folder",
            )
        };
        let bytes = std::fs::read(&path).map_err(|e| bad(e.to_string()))?;
        let m: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| bad(format!("not a manifest ({e})")))?;
        if m.format != FORMAT || m.version != VERSION {
            return Err(bad(format!(
                "a manifest of {} version {}, not {FORMAT} version {VERSION}",
                m.format, m.version
            ))
            .into());
        }
        if let Some(other) = sources.insert(m.source.sha256.clone(), f.clone()) {
            return Err(crate::Hinted::new(
                format!(
                    "`{other}` and `{f}` are extracts of the same bytes (sha256 {})",
                    m.source.sha256
                ),
                "a set holds each rank's capture once: remove one of the two folders",
            )
            .into());
        }
        members.push(SetMember {
            folder: f.clone(),
            source: m.source,
            manifest_sha256: crate::trace::hex(&sha2::Sha256::digest(&bytes)),
        });
    }
    Ok(SetIndex { format: SET_FORMAT.into(), version: VERSION, tool: tool.to_string(), members })
}

/// Writes `index` into `dir` (through a temporary file renamed into place).
#[cfg(feature = "columnar")]
fn write_index(dir: &Path, index: &SetIndex) -> anyhow::Result<()> {
    let mut tmp = tempfile::Builder::new().prefix(".verdict-set-").tempfile_in(dir)?;
    let text = serde_json::to_string_pretty(index)?;
    std::io::Write::write_all(&mut tmp, (text + "\n").as_bytes())?;
    tmp.persist(dir.join(SET_INDEX))?;
    Ok(())
}

/// `extract --merge DIR`: indexes the extracts in DIR's folders.
#[cfg(feature = "columnar")]
fn merge(dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    if !dir.is_dir() {
        return Err(crate::Hinted::new(
            format!("`{}` is not a folder", dir.display()),
            "give the folder that holds one extract folder per trace",
        )
        .into());
    }
    let mut folders = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        // Dot files and folders are not members (the index itself, temporary folders).
        if !name.starts_with('.') && e.file_type()?.is_dir() {
            folders.push(name);
        }
    }
    folders.sort();
    if folders.is_empty() {
        return Err(crate::Hinted::new(
            format!("`{}` holds no extract folder", dir.display()),
            "extract each trace into its own folder under it first (`verdict extract TRACE --out DIR/NAME`)",
        )
        .into());
    }
    let t = crate::analysis::ToolRef::current();
    let tool = match t.build {
        Some(b) => format!("{} {} ({b})", t.name, t.version),
        None => format!("{} {}", t.name, t.version),
    };
    let idx = index(dir, &folders, &tool)?;
    write_index(dir, &idx)?;
    if json {
        super::print_json(&idx)?;
    } else {
        println!(
            "{}: {} extracts indexed in {}",
            dir.display(),
            idx.members.len(),
            dir.join(SET_INDEX).display()
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
