//! `verdict extract`: the map step of an audit at fleet scale. Each trace's tables, as the
//! analyses read them, are written as Parquet with a manifest, one folder per file; every
//! command reads such a folder as it reads the trace.

#[cfg(feature = "columnar")]
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::ExtractArgs;

/// Runs `extract`.
#[cfg(feature = "columnar")]
pub(super) fn run(args: ExtractArgs) -> anyhow::Result<ExitCode> {
    use rayon::prelude::*;

    use crate::trace::Trace;
    use crate::trace::columnar::{self, Manifest};
    use crate::units::thousands;

    if let Some(dir) = &args.merge {
        return merge(dir, args.json);
    }
    if let Some(source) = &args.verify {
        return verify(&args.traces, source);
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
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Folders a killed extract left beside OUT: removed when their process is gone, named
    // when it is not (another extract is writing there).
    for (path, state) in leftovers(&parent) {
        match state {
            Leftover::Removed => eprintln!(
                "removed `{}`: a temporary folder of an extract that was killed",
                path.display()
            ),
            Leftover::Running(pid) => eprintln!(
                "note: `{}` is the temporary folder of an extract still running (process {pid}); left as it is",
                path.display()
            ),
            Leftover::Unknown(why) => eprintln!(
                "warning: `{}` is a temporary folder of an earlier extract, not removed ({why})\n  hint: remove it by hand once no extract runs there",
                path.display()
            ),
        }
    }
    // From here on SIGINT, SIGTERM and SIGHUP remove this run's temporary folder before the
    // process ends as the signal would end it.
    let interrupt = crate::render::interrupt::Interrupt::catch()
        .map_err(|e| anyhow::anyhow!("cannot catch SIGINT and SIGTERM ({e})"))?;
    watch(interrupt.clone(), parent.clone(), out.clone());
    let result = (|| -> anyhow::Result<ExitCode> {
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
                    e.hint().unwrap_or_else(|| {
                        "pass a `.sqlite` export or a PyTorch profiler `.json`/`.json.gz` file that can be read".into()
                    }),
                )
            })?;
            columnar::write(&trace, dir, &tool).map_err(|e| {
                crate::Hinted::new(
                    format!("cannot extract `{}` into `{}`: {e}", file.display(), dir.display()),
                    e.hint().unwrap_or_else(|| {
                        "check that the folder of --out exists, is writable and has room; nothing was left there".into()
                    }),
                )
                .into()
            })
        };
        let written: Vec<(PathBuf, PathBuf, Manifest)> = if set {
            let names = member_names(&files)?;
            // The members are written into a folder beside OUT under a temporary name, renamed
            // once every one is complete: a failed file leaves no partial set.
            let tmp =
                tempfile::Builder::new().prefix(&columnar::temp_prefix()).tempdir_in(&parent)?;
            let done: Vec<anyhow::Result<Manifest>> = files
                .par_iter()
                .zip(&names)
                .map(|(f, n)| extract(f, &tmp.path().join(n)))
                .collect();
            let mut manifests = Vec::with_capacity(done.len());
            for m in done {
                manifests.push(m?);
            }
            write_index(tmp.path(), &index(tmp.path(), &names, &tool)?)?;
            // Kept only once renamed: a failed rename drops (and removes) the temporary folder.
            std::fs::rename(tmp.path(), out).map_err(|e| {
                crate::Hinted::new(
                    format!("cannot move the extracted set into `{}` ({e})", out.display()),
                    "check that nothing was created at --out meanwhile and that its folder is writable; nothing was left there",
                )
            })?;
            let _ = tmp.keep();
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
    })();
    // A failure caused by the signal (the watcher removing the folder under the writers) is
    // the signal's: the watcher ends the process as the signal would.
    if interrupt.signal().is_some() {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    result
}

/// `extract DIR --verify SOURCE`: whether the extract in DIR holds what SOURCE gives. The
/// extract's manifest names each table's sha256 and the source's; neither is signed, so an
/// extract whose table was changed and its manifest updated reads as a whole. Extracting
/// SOURCE again (into the temporary folder) and comparing the digests tells.
#[cfg(feature = "columnar")]
fn verify(dirs: &[PathBuf], source: &Path) -> anyhow::Result<ExitCode> {
    use crate::trace::Trace;
    let [dir] = dirs else {
        return Err(crate::Hinted::new(
            "--verify checks one extract folder",
            "give one folder written by `verdict extract`: `verdict extract DIR --verify SOURCE`",
        )
        .into());
    };
    let unreadable = |what: &Path, e: &crate::trace::TraceError| {
        crate::Hinted::new(
            format!("cannot read `{}`: {e}", what.display()),
            e.hint().unwrap_or_else(|| "check the path and its permissions".into()),
        )
    };
    let extract = Trace::open(dir).map_err(|e| unreadable(dir, &e))?;
    let Some(manifest) = extract.columnar().and_then(|c| c.manifest()).cloned() else {
        return Err(crate::Hinted::new(
            format!("`{}` is not a folder written by `verdict extract`", dir.display()),
            "give the extract folder as TRACE and the trace it was made from as --verify SOURCE",
        )
        .into());
    };
    drop(extract);
    let sha = crate::trace::sha256_file(source).map_err(|e| {
        crate::Hinted::new(
            format!("cannot read source `{}` ({e})", source.display()),
            crate::trace::open::Refused::of(&e).map_or_else(
                || "give the trace the extract was made from".to_string(),
                |r| r.hint.clone(),
            ),
        )
    })?;
    if sha != manifest.source.sha256 {
        return Err(crate::Hinted::new(
            format!(
                "`{}` is not the source of `{}`: its sha256 is {sha}, the extract records {}",
                source.display(),
                dir.display(),
                manifest.source.sha256
            ),
            format!("give the file extracted, `{}` when it was extracted", manifest.source.path),
        )
        .into());
    }
    let trace = Trace::open(source).map_err(|e| unreadable(source, &e))?;
    // The source is extracted again into the system's temporary folder, under this run's
    // prefix, so that a signal removes it as it removes an extract's.
    let tmp = std::env::temp_dir();
    let interrupt = crate::render::interrupt::Interrupt::catch()
        .map_err(|e| anyhow::anyhow!("cannot catch SIGINT and SIGTERM ({e})"))?;
    watch(interrupt, tmp.clone(), dir.clone());
    let scratch =
        tempfile::Builder::new().prefix(&crate::trace::columnar::temp_prefix()).tempdir_in(&tmp)?;
    let again = crate::trace::columnar::write(&trace, &scratch.path().join("x"), &manifest.tool)
        .map_err(|e| unreadable(source, &e))?;
    let mut differ = Vec::new();
    for t in &manifest.tables {
        match again.tables.iter().find(|a| a.table == t.table) {
            Some(a) if a.sha256 == t.sha256 => {}
            Some(a) => differ.push(format!(
                "table `{}` (`{}`): sha256 {} recorded, {} from the source",
                t.table, t.file, t.sha256, a.sha256
            )),
            None => differ
                .push(format!("table `{}` (`{}`) is not one the source gives", t.table, t.file)),
        }
    }
    for a in &again.tables {
        if !manifest.tables.iter().any(|t| t.table == a.table) {
            differ.push(format!("table `{}` of the source is missing from the extract", a.table));
        }
    }
    if !differ.is_empty() {
        return Err(crate::Hinted::new(
            format!(
                "`{}` does not hold what `{}` gives:\n  {}",
                dir.display(),
                source.display(),
                differ.join("\n  ")
            ),
            "the extract was changed after it was written, or written by another build: extract the source again into a new folder",
        )
        .into());
    }
    println!(
        "{}: verified: {} tables are what `{}` (sha256 {}) gives",
        dir.display(),
        manifest.tables.len(),
        source.display(),
        sha
    );
    Ok(ExitCode::SUCCESS)
}

/// What became of a temporary folder an earlier extract left.
#[cfg(feature = "columnar")]
enum Leftover {
    /// Its process is gone: removed.
    Removed,
    /// Its process still runs: left.
    Running(u32),
    /// Its owner cannot be told, or it could not be removed: left, with why.
    Unknown(String),
}

/// The temporary folders of other extracts in `parent`, each removed when the process that
/// wrote it is gone.
#[cfg(feature = "columnar")]
fn leftovers(parent: &Path) -> Vec<(PathBuf, Leftover)> {
    use crate::trace::columnar::{TEMP_PREFIX, temp_prefix};
    let Ok(entries) = std::fs::read_dir(parent) else { return Vec::new() };
    let mine = temp_prefix();
    let mut out = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(TEMP_PREFIX) else { continue };
        if name.starts_with(&mine) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let pid = rest.split_once('-').and_then(|(p, _)| p.parse::<u32>().ok());
        let state = match pid {
            Some(pid) if alive(pid) => Leftover::Running(pid),
            Some(_) => match std::fs::remove_dir_all(e.path()) {
                Ok(()) => Leftover::Removed,
                Err(err) => Leftover::Unknown(err.to_string()),
            },
            None => Leftover::Unknown("its name does not say which process wrote it".into()),
        };
        out.push((e.path(), state));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether a process runs with this id.
#[cfg(feature = "columnar")]
fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
        // SAFETY: kill(2) with signal 0 sends nothing; it only tells whether the id exists.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Watches for a signal on a thread of its own: when one comes, this run's temporary
/// folders beside `out` are removed and the process ends as the signal would end it.
#[cfg(feature = "columnar")]
fn watch(interrupt: crate::render::interrupt::Interrupt, parent: PathBuf, out: PathBuf) {
    std::thread::spawn(move || {
        loop {
            if let Some(signal) = interrupt.signal() {
                let mine = crate::trace::columnar::temp_prefix();
                // The writers may still add a file while the folder goes: try again.
                for _ in 0..50 {
                    let left: Vec<PathBuf> = std::fs::read_dir(&parent)
                        .into_iter()
                        .flatten()
                        .filter_map(Result::ok)
                        .filter(|e| e.file_name().to_string_lossy().starts_with(&mine))
                        .map(|e| e.path())
                        .collect();
                    if left.is_empty() {
                        break;
                    }
                    for p in left {
                        let _ = std::fs::remove_dir_all(p);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                eprintln!(
                    "error: {}: stopped; `{}` is as it was and the temporary folder is removed",
                    crate::render::interrupt::Interrupted { signal },
                    out.display()
                );
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
}

/// The index of a set of extracts, in the set's folder.
#[cfg(feature = "columnar")]
pub(super) const SET_INDEX: &str = ".verdict-set.json";

/// The format name of [`SET_INDEX`].
#[cfg(feature = "columnar")]
pub(super) const SET_FORMAT: &str = "verdict-extract-set";

/// The index of a set of extracts: its members, each with the chain back to its source.
#[cfg(feature = "columnar")]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct SetIndex {
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
pub(super) struct SetMember {
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
        let bytes =
            crate::trace::open::read_limited(&path, 16 << 20).map_err(|e| bad(e.to_string()))?;
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
pub(super) fn run(args: ExtractArgs) -> anyhow::Result<ExitCode> {
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
