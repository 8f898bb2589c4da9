//! Report sets: the files of one render, written into a temporary folder inside `--out`
//! ([`Stage`]), moved into place only once every one of them is complete, and named with their
//! sha256 by the set's manifest (`ID.manifest.json`), which is moved last.
//!
//! Each move is a `rename(2)` in the same folder, so every file is either its old or its new
//! version, never partial. While the moves run (a few dozen renames), a reader can see new and
//! old files side by side; a set whose files all match its manifest is complete and from one
//! run. Files of the same report id that the run did not write are named after the moves, and
//! removed with `--clean`.
//! This module never touches a file outside that naming ([`is_report_file`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::report::Profile;
use super::write;
use crate::analysis::ToolRef;

/// The prefix of a render's temporary folder in `--out`.
pub const STAGE_PREFIX: &str = ".verdict-render-";

/// The prefixes of the temporary folders earlier versions made in `--out` for typst.
const OLD_TEMP_PREFIXES: [&str; 2] = [".verdict-pdf", ".verdict-png"];

/// The manifest's file name.
pub fn manifest_name(id: &str) -> String {
    format!("{id}.manifest.json")
}

/// The files of a report set while they are written: a temporary folder in the output folder,
/// removed with everything in it when the set is dropped before [`Stage::commit`].
#[derive(Debug)]
pub struct Stage {
    dir: tempfile::TempDir,
    out: PathBuf,
    files: Vec<String>,
}

impl Stage {
    /// Makes the temporary folder in `out`.
    pub fn new(out: &Path) -> Result<Stage, crate::Hinted> {
        let dir = tempfile::Builder::new().prefix(STAGE_PREFIX).tempdir_in(out).map_err(|e| {
            crate::Hinted::new(
                format!("cannot create a temporary folder in `{}` ({e})", out.display()),
                "check that the output folder is writable",
            )
        })?;
        Ok(Stage { dir, out: out.to_path_buf(), files: Vec::new() })
    }

    /// The temporary folder: typst runs there, as in the output folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file of the set.
    pub fn put(&mut self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        write::create(&self.dir.path().join(name), bytes).map_err(|e| {
            anyhow::anyhow!("cannot write `{}` ({e})", self.out.join(name).display())
        })?;
        self.add(name);
        Ok(())
    }

    /// Counts a file some other program wrote into the folder (the PDF, a PNG) as one of the
    /// set.
    pub fn add(&mut self, name: &str) {
        self.files.push(name.to_string());
    }

    /// The manifest of the files so far: the run and each file's size and sha256, by name.
    pub fn manifest(
        &self,
        report: &str,
        claims_sha256: Option<String>,
        render_date: Option<String>,
    ) -> anyhow::Result<Manifest> {
        let mut files = Vec::new();
        for name in &self.files {
            let p = self.dir.path().join(name);
            let read = |e: std::io::Error| anyhow::anyhow!("cannot read `{}` ({e})", p.display());
            let bytes = std::fs::metadata(&p).map_err(read)?.len();
            files.push(ManifestFile {
                name: name.clone(),
                bytes,
                sha256: crate::trace::sha256_file(&p).map_err(read)?,
            });
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Manifest {
            report: report.to_string(),
            tool: ToolRef::current(),
            claims_sha256,
            render_date,
            files,
        })
    }

    /// Moves every file into the output folder, in the order they were written (the manifest,
    /// written last, moves last), then removes the temporary folder. Returns the paths.
    pub fn commit(self) -> anyhow::Result<Vec<PathBuf>> {
        // A folder in a file's place would stop the moves halfway: refuse before the first.
        for name in &self.files {
            let target = self.out.join(name);
            if std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
                return Err(crate::Hinted::new(
                    format!(
                        "`{}` is a folder, so the report cannot be written there",
                        target.display()
                    ),
                    "move that folder away and render again; the report set was left as it was",
                )
                .into());
            }
        }
        let mut moved = Vec::new();
        for name in &self.files {
            let target = self.out.join(name);
            if let Err(e) = std::fs::rename(self.dir.path().join(name), &target) {
                return Err(crate::Hinted::new(
                    format!(
                        "cannot move `{}` into place ({e}); {} of the {} files of the new set are in place",
                        target.display(),
                        moved.len(),
                        self.files.len()
                    ),
                    "the manifest names the files of one run: until a render succeeds, the files that differ from it are a mix of two runs",
                )
                .into());
            }
            moved.push(target);
        }
        Ok(moved)
    }
}

/// What a report set holds: the run that made it and every file but the manifest itself.
///
/// Nothing in it depends on the machine or the time of the run, only on the inputs, the tool
/// version and the render date (`SOURCE_DATE_EPOCH`): the same inputs give the same manifest.
#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    /// The report id.
    pub report: String,
    /// The tool that rendered the set.
    pub tool: ToolRef,
    /// The sha256 of the claims file, when it could be read.
    pub claims_sha256: Option<String>,
    /// The render date the reports show (`YYYY-MM-DD`).
    pub render_date: Option<String>,
    /// Every file of the set, by name.
    pub files: Vec<ManifestFile>,
}

impl Manifest {
    /// Its JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// One file of a report set.
#[derive(Debug, Clone, Serialize)]
pub struct ManifestFile {
    /// Its name in the output folder.
    pub name: String,
    /// Its size.
    pub bytes: u64,
    /// The sha256 of its bytes, in hex.
    pub sha256: String,
}

/// Whether `name` is a file a render of report `id` writes, in some language, profile or
/// format: `ID.evidence.json`, `ID.manifest.json`, `ID.LANG[.PROFILE].{md,typ,pdf}` and
/// `ID.LANG.KIND[-N].{svg,png}`, with LANG a supported language, PROFILE a report profile and
/// KIND an analysis. Only such files are ever removed as stale.
pub fn is_report_file(name: &str, id: &str) -> bool {
    if name == format!("{id}.evidence.json") || name == manifest_name(id) {
        return true;
    }
    let profiles = <Profile as clap::ValueEnum>::value_variants();
    crate::claims::LANGUAGES.iter().any(|lang| {
        let report = profiles.iter().any(|p| {
            let stem = p.stem(id, lang);
            ["md", "typ", "pdf"].iter().any(|ext| name == format!("{stem}.{ext}"))
        });
        let chart = || {
            let Some(rest) = name.strip_prefix(&format!("{id}.{lang}.")) else { return false };
            let Some(stem) = rest.strip_suffix(".svg").or_else(|| rest.strip_suffix(".png")) else {
                return false;
            };
            // `overlap`, `nccl-skew`, then `overlap-2`, `nccl-skew-3`...
            let kind = match stem.rsplit_once('-') {
                Some((kind, n)) if is_chart_number(n) => kind,
                _ => stem,
            };
            crate::analysis::ANALYSES.iter().any(|a| a.name == kind)
        };
        report || chart()
    })
}

/// `2`, `3`, … as the charts after the first of a kind are numbered.
fn is_chart_number(n: &str) -> bool {
    !n.starts_with('0')
        && n.bytes().all(|b| b.is_ascii_digit())
        && n.parse::<u64>().is_ok_and(|n| n >= 2)
}

/// The files of report `id` in `out` that are not in `keep` (the set just moved into place),
/// sorted: only regular files named as [`is_report_file`] says.
pub fn stale_files(out: &Path, id: &str, keep: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(out) else { return Vec::new() };
    let mut stale: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| e.file_name().to_str().is_some_and(|n| is_report_file(n, id)))
        .map(|e| e.path())
        .filter(|p| !keep.iter().any(|k| k.file_name() == p.file_name()))
        .collect();
    stale.sort();
    stale
}

/// Removes the files of report `id` in `out` that are not in `keep` (the set just moved into
/// place): another language, profile or format of an earlier run. Only regular files named as
/// [`is_report_file`] says are touched. Returns the files removed, and those that could not be,
/// with why.
pub fn remove_stale(
    out: &Path,
    id: &str,
    keep: &[PathBuf],
) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let mut removed = Vec::new();
    let mut failed = Vec::new();
    for p in stale_files(out, id, keep) {
        match std::fs::remove_file(&p) {
            Ok(()) => removed.push(p),
            Err(e) => failed.push((p, e.to_string())),
        }
    }
    (removed, failed)
}

/// Removes the temporary folders renders left in `out` when they were killed outright
/// (`SIGKILL`, a power cut): with the lock held, no other render owns one. Returns them.
pub fn remove_leftovers(out: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(out) else { return Vec::new() };
    let mut gone = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let ours =
            name.starts_with(STAGE_PREFIX) || OLD_TEMP_PREFIXES.iter().any(|p| name.starts_with(p));
        if ours
            && e.file_type().is_ok_and(|t| t.is_dir())
            && std::fs::remove_dir_all(e.path()).is_ok()
        {
            gone.push(e.path());
        }
    }
    gone.sort();
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_files_are_recognised_by_their_exact_naming() {
        let id = "day26";
        for name in [
            "day26.evidence.json",
            "day26.manifest.json",
            "day26.en.md",
            "day26.zh-TW.pdf",
            "day26.en.blog.md",
            "day26.zh-TW.brief.typ",
            "day26.en.overlap.svg",
            "day26.zh-TW.nccl-skew.png",
            "day26.en.overlap-2.svg",
            "day26.en.nccl-skew-12.png",
            "day26.en.kernels.svg",
        ] {
            assert!(is_report_file(name, id), "{name}");
        }
        for name in [
            "day26",
            "day26.md",
            "day26.fr.md",
            "day26.en.md.bak",
            "day26.en.full.md",
            "day26.en.notes.md",
            "day26.en.notes.svg",
            "day26.en.overlap-1.svg",
            "day26.en.overlap-02.svg",
            "day26.en.overlap-x.svg",
            "day26.en.overlap.pdf",
            "day26.evidence.json.old",
            "day26-profile-blind.en.md",
            "day26x.en.md",
            "other.en.md",
            ".verdict-render.lock",
            "day26.en.blog.svg",
        ] {
            assert!(!is_report_file(name, id), "{name}");
        }
        // A report id with a dot does not claim the files of a shorter id, nor the reverse.
        assert!(!is_report_file("a.en.en.md", "a"));
        assert!(is_report_file("a.en.en.md", "a.en"));
        assert!(!is_report_file("a.en.md", "a.en"));
    }

    #[test]
    fn a_dropped_stage_leaves_nothing_and_a_commit_moves_the_manifest_last() {
        let out = tempfile::tempdir().unwrap();
        let mut stage = Stage::new(out.path()).unwrap();
        stage.put("r.en.md", b"new").unwrap();
        drop(stage);
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);

        std::fs::write(out.path().join("r.en.md"), "old").unwrap();
        let mut stage = Stage::new(out.path()).unwrap();
        stage.put("r.en.md", b"new").unwrap();
        stage.put("r.evidence.json", b"{}").unwrap();
        let m = stage.manifest("r", None, Some("2026-09-03".into())).unwrap();
        assert_eq!(
            m.files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            ["r.en.md", "r.evidence.json"]
        );
        assert_eq!(
            m.files[0].sha256,
            "11507a0e2f5e69d5dfa40a62a1bd7b6ee57e6bcd85c67c9b8431b36fff21c437"
        );
        stage.put(&manifest_name("r"), m.to_json().as_bytes()).unwrap();
        let moved = stage.commit().unwrap();
        assert_eq!(moved.last().unwrap(), &out.path().join("r.manifest.json"));
        assert_eq!(std::fs::read_to_string(out.path().join("r.en.md")).unwrap(), "new");
        let mut left: Vec<String> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        left.sort();
        assert_eq!(left, ["r.en.md", "r.evidence.json", "r.manifest.json"], "the stage stays");
    }

    #[test]
    fn a_folder_in_a_file_s_place_stops_the_commit_before_any_move() {
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("r.en.md"), "old").unwrap();
        std::fs::create_dir(out.path().join("r.evidence.json")).unwrap();
        let mut stage = Stage::new(out.path()).unwrap();
        stage.put("r.en.md", b"new").unwrap();
        stage.put("r.evidence.json", b"{}").unwrap();
        let err = stage.commit().unwrap_err();
        assert!(err.to_string().contains("is a folder"), "{err}");
        assert_eq!(std::fs::read_to_string(out.path().join("r.en.md")).unwrap(), "old");
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 2, "the stage stays");
    }
}
