//! The one gate every file the tool reads goes through.
//!
//! A path is resolved (its links followed, and for a path that does not exist, the links of
//! the part that does), checked against the roots when a server confines its calls
//! ([`confine`]), and its type checked before a byte is read: a FIFO, a device or a socket is
//! refused, never opened for reading (opening one can block forever, and reading `/dev/zero`
//! never ends). The roots are checked before the file's existence is, so a refusal says
//! nothing about what lies outside them. Files are opened with `O_NONBLOCK` and their type
//! checked again on the open descriptor, so a file swapped for a FIFO between the two checks
//! is refused too.

use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::RwLock;

/// The roots of the calls under way, when a server confines them; None reads anywhere.
static ROOTS: RwLock<Option<Vec<PathBuf>>> = RwLock::new(None);

/// A file the gate refused: what was wrong and what to do about it.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    /// What was wrong, naming the path.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl Refused {
    fn io(self) -> io::Error {
        io::Error::new(io::ErrorKind::PermissionDenied, self)
    }

    /// The refusal an I/O error carries, if it is one.
    pub fn of(e: &io::Error) -> Option<&Refused> {
        e.get_ref().and_then(|i| i.downcast_ref::<Refused>())
    }
}

/// While the returned guard lives, every file read must lie inside one of `roots` (resolved).
/// A server confines each call with the roots that call may read.
pub fn confine(roots: &[&Path]) -> Confined {
    let resolved = roots.iter().map(|r| resolve(r)).collect();
    *ROOTS.write().unwrap_or_else(|e| e.into_inner()) = Some(resolved);
    Confined(())
}

/// Lifts the confinement of [`confine`] when dropped.
#[must_use]
pub struct Confined(());

impl Drop for Confined {
    fn drop(&mut self) {
        *ROOTS.write().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The roots of the confinement under way, if any.
pub fn roots() -> Option<Vec<PathBuf>> {
    ROOTS.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// `path` made absolute, with every link followed; where a part does not exist, the rest is
/// resolved lexically (`..` removed) after the links of the part that does, including a link
/// whose target is missing.
pub fn resolve(path: &Path) -> PathBuf {
    resolve_depth(path, 0)
}

fn resolve_depth(path: &Path, depth: usize) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    if let Ok(p) = std::fs::canonicalize(&abs) {
        return p;
    }
    let abs = lexical(&abs);
    if depth < 40
        && let Ok(m) = std::fs::symlink_metadata(&abs)
        && m.file_type().is_symlink()
        && let Ok(target) = std::fs::read_link(&abs)
    {
        let parent = abs.parent().map(Path::to_path_buf).unwrap_or_default();
        return resolve_depth(&parent.join(target), depth + 1);
    }
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) if depth < 40 => resolve_depth(parent, depth + 1).join(name),
        _ => abs,
    }
}

/// An absolute path with `.` and `..` resolved without the file system.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Whether `resolved` lies inside the roots of the confinement under way (always, when none).
fn inside(resolved: &Path) -> Result<(), Refused> {
    let Some(roots) = roots() else { return Ok(()) };
    if roots.iter().any(|r| resolved.starts_with(r)) {
        return Ok(());
    }
    Err(outside(resolved, &roots))
}

/// The refusal of a path outside `roots`.
pub fn outside(path: &Path, roots: &[PathBuf]) -> Refused {
    Refused {
        message: format!(
            "`{}` is outside the roots this server may read ({})",
            path.display(),
            roots.iter().map(|r| format!("`{}`", r.display())).collect::<Vec<_>>().join(", ")
        ),
        hint: "grant its folder as a root in the client, or start the server with `verdict mcp --root DIR`".into(),
    }
}

/// What a path may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A regular file.
    File,
    /// A regular file or a folder.
    FileOrDir,
}

/// The name of a file type that is not a regular file or a folder.
fn odd_type(ft: &std::fs::FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if ft.is_char_device() {
            return Some("a character device");
        }
        if ft.is_block_device() {
            return Some("a block device");
        }
        if ft.is_socket() {
            return Some("a socket");
        }
    }
    if ft.is_file() || ft.is_dir() { None } else { Some("not a regular file") }
}

fn not_regular(path: &Path, what: &str) -> Refused {
    Refused {
        message: format!("`{}` is {what}, not a regular file: it is not read", path.display()),
        hint: "pass a regular file (copy the data into one first); a pipe, a device or a socket could block or never end".into(),
    }
}

/// Checks only that a path lies inside the roots of a confinement (links followed), for a
/// file whose metadata alone is read. Returns the resolved path.
pub fn within_roots(path: &Path) -> io::Result<PathBuf> {
    let resolved = resolve(path);
    inside(&resolved).map_err(Refused::io)?;
    Ok(resolved)
}

/// Checks a path before it is read: resolved, inside the roots of a confinement, and (when
/// it exists) a regular file (or, for [`Want::FileOrDir`], a folder). A path that does not
/// exist passes, for the reader to name; the roots are checked first. Returns the resolved
/// path.
pub fn check(path: &Path, want: Want) -> io::Result<PathBuf> {
    let resolved = resolve(path);
    inside(&resolved).map_err(Refused::io)?;
    let meta = match std::fs::metadata(&resolved) {
        Ok(m) => m,
        Err(_) => return Ok(resolved),
    };
    let ft = meta.file_type();
    if let Some(what) = odd_type(&ft) {
        return Err(not_regular(path, what).io());
    }
    if ft.is_dir() && want == Want::File {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            Refused {
                message: format!("`{}` is a folder, not a file", path.display()),
                hint: "pass a file".into(),
            },
        ));
    }
    Ok(resolved)
}

/// Opens a regular file for reading through the gate ([`check`]); the descriptor's type is
/// checked again after the open, which never blocks.
pub fn open(path: &Path) -> io::Result<File> {
    let resolved = check(path, Want::File)?;
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let f = opts.open(&resolved)?;
    let ft = f.metadata()?.file_type();
    if let Some(what) = odd_type(&ft) {
        return Err(not_regular(path, what).io());
    }
    if !ft.is_file() {
        return Err(not_regular(path, "a folder").io());
    }
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // Back to blocking reads: a regular file never blocks, but readers expect the usual.
        let fd = f.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function owns, with flags it read from it.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    Ok(f)
}

/// Reads a whole regular file through the gate, refusing one longer than `limit` bytes
/// before holding it.
pub fn read_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let f = open(path)?;
    let mut out = Vec::new();
    f.take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            Refused {
                message: format!("`{}` is longer than {limit} bytes", path.display()),
                hint: "this file is written by verdict and is far smaller; pass the file it wrote"
                    .into(),
            },
        ));
    }
    Ok(out)
}

/// [`read_limited`] as UTF-8 text.
pub fn read_to_string_limited(path: &Path, limit: u64) -> io::Result<String> {
    let bytes = read_limited(path, limit)?;
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Checks a path a program writes to (an appended step summary): when it exists, it must be a
/// regular file (a FIFO without a reader would block the write forever). Not confined: a
/// server writes nothing.
pub fn check_writable(path: &Path) -> io::Result<()> {
    if let Ok(m) = std::fs::metadata(path)
        && let Some(what) = odd_type(&m.file_type())
    {
        return Err(not_regular(path, what).io());
    }
    Ok(())
}

/// Removes `.` and `x/..` from a path without touching the file system.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    if out.is_empty() { PathBuf::from(".") } else { out.iter().collect() }
}

/// The identity of a file: its device and inode, links followed (two paths with the same
/// identity are one file: a symbolic or hard link, or `a` and `./a`). None when the file
/// cannot be read, which its own open reports.
pub(crate) fn file_id(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// What to check for an operating system's error: the hint of an I/O error that carries none.
pub fn io_hint(e: &std::io::Error) -> String {
    hint_for(Some(e.kind()), &e.to_string())
}

/// The hint for an operating system's error of `kind` (if known) with `message`: what to
/// check, from the kind, else from the words of the message.
pub(crate) fn hint_for(kind: Option<std::io::ErrorKind>, message: &str) -> String {
    use std::io::ErrorKind as K;
    let has = |s: &str| message.contains(s);
    let hint = if kind == Some(K::StorageFull) || has("No space left") || has("Disk quota") {
        "the disk is full: free space on it, or write to a folder on another disk"
    } else if kind == Some(K::ReadOnlyFilesystem) || has("Read-only file system") {
        "the folder is on a read-only file system: write to another folder"
    } else if kind == Some(K::PermissionDenied) || has("Permission denied") {
        "check the permissions of the path and of its folder, or write to a folder you own"
    } else if kind == Some(K::NotADirectory) || has("Not a directory") {
        "a part of the path is a file, not a folder: check the path's parent folders"
    } else if kind == Some(K::AlreadyExists) || has("File exists") {
        "the path exists as something else (a file, or a symbolic link to nothing): remove it or choose another path"
    } else if has("Too many levels of symbolic links") || has("symbolic link") {
        "a symbolic link in the path points back to itself: check the links along the path"
    } else if kind == Some(K::NotFound) || has("No such file") {
        "check that the path exists, and for an output, that its parent folder exists"
    } else if kind == Some(K::InvalidFilename) || has("File name too long") {
        "shorten the file name (most file systems take 255 bytes, some 143)"
    } else {
        "check the paths the message names: that they exist, and for outputs that the folder is writable with space left"
    };
    hint.to_string()
}

/// What reading a text source whole can fail on, before its own format is read: the gate's
/// refusal or an I/O error, a file past the reader's limit, bytes that are not UTF-8. Each
/// source wraps it in its own error, with its own hints.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// Reading the file failed (or the gate refused it).
    #[error("cannot read the file ({0})")]
    Read(#[source] io::Error),
    /// The file is longer than the reader takes.
    #[error("the file is longer than {max} bytes")]
    TooLarge {
        /// The reader's limit.
        max: u64,
    },
    /// The file is not UTF-8 text.
    #[error("the file is not UTF-8 text (a byte sequence at offset {offset} is invalid)")]
    NotUtf8 {
        /// The byte offset of the first invalid sequence.
        offset: usize,
        /// Its line, from 1.
        line: u64,
    },
}

impl TextError {
    /// The line it names, if any.
    pub fn line(&self) -> Option<u64> {
        match self {
            TextError::NotUtf8 { line, .. } => Some(*line),
            _ => None,
        }
    }
}

/// Reads a file whole through the gate ([`open`]), refusing one longer than `max` bytes
/// without reading past the limit.
pub fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, TextError> {
    use std::io::Read as _;
    let file = open(path).map_err(TextError::Read)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(TextError::Read)?;
    if bytes.len() as u64 > max {
        return Err(TextError::TooLarge { max });
    }
    Ok(bytes)
}

/// The bytes as UTF-8 text without a leading byte-order mark, or where they stop being UTF-8.
pub fn utf8(bytes: &[u8]) -> Result<&str, TextError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let line = bytes[..offset].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        TextError::NotUtf8 { offset, line }
    })?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceError;

    /// Every error of the trace layer, one of each variant (the match below fails to compile
    /// when a variant is added without being listed here).
    fn every_trace_error() -> Vec<TraceError> {
        let p = || PathBuf::from("t.sqlite");
        let all = vec![
            TraceError::NotFound(p()),
            TraceError::NotAFile(p()),
            TraceError::Empty(p()),
            TraceError::NotSqlite(p()),
            TraceError::Truncated { path: p(), expected: 2, actual: 1 },
            TraceError::Wal { path: p(), wal: p(), bytes: 1 },
            TraceError::HotJournal { path: p(), journal: p(), bytes: 1 },
            TraceError::Corrupt("x".into()),
            TraceError::MissingTable { table: "T".into() },
            TraceError::MissingTable { table: crate::trace::names::KERNEL.into() },
            TraceError::MissingColumn { table: "T".into(), column: "c".into() },
            TraceError::BadValue { table: "T".into(), column: "c".into(), detail: "x".into() },
            TraceError::OutOfRange { table: "T".into(), column: "c".into(), ns: 1 },
            TraceError::Kineto { path: p(), detail: "x".into() },
            TraceError::Columnar { path: p(), detail: "x".into() },
            TraceError::AlreadyColumnar(p()),
            TraceError::NotColumnar(p()),
            TraceError::Sqlite("x".into()),
            TraceError::Io(io::Error::other("x")),
            TraceError::Io(not_regular(Path::new("p"), "a FIFO").io()),
        ];
        for e in &all {
            match e {
                TraceError::NotFound(_)
                | TraceError::NotAFile(_)
                | TraceError::Empty(_)
                | TraceError::NotSqlite(_)
                | TraceError::Truncated { .. }
                | TraceError::Wal { .. }
                | TraceError::HotJournal { .. }
                | TraceError::Corrupt(_)
                | TraceError::MissingTable { .. }
                | TraceError::MissingColumn { .. }
                | TraceError::BadValue { .. }
                | TraceError::OutOfRange { .. }
                | TraceError::Kineto { .. }
                | TraceError::Columnar { .. }
                | TraceError::AlreadyColumnar(_)
                | TraceError::NotColumnar(_)
                | TraceError::Sqlite(_)
                | TraceError::Io(_) => {}
            }
        }
        all
    }

    #[test]
    fn every_trace_error_has_a_hint() {
        for e in every_trace_error() {
            let h = e.hint();
            assert!(h.as_deref().is_some_and(|h| !h.trim().is_empty()), "{e}: {h:?}");
        }
        let fifo = TraceError::Io(not_regular(Path::new("p"), "a FIFO").io());
        assert_eq!(fifo.hint(), Some(not_regular(Path::new("p"), "a FIFO").hint));
    }

    #[test]
    fn a_missing_file_behind_a_link_resolves_to_the_link_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("gone/x.sqlite"), root.join("l")).unwrap();
            let r = resolve(&root.join("l"));
            assert!(!r.starts_with(std::fs::canonicalize(&root).unwrap()), "{r:?}");
            assert!(r.ends_with("gone/x.sqlite"), "{r:?}");
        }
        let r = resolve(&root.join("a/../b"));
        assert_eq!(r, std::fs::canonicalize(&root).unwrap().join("b"));
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_refused_before_they_are_read() {
        let e = open(Path::new("/dev/zero")).unwrap_err();
        assert!(Refused::of(&e).is_some_and(|r| r.message.contains("character device")), "{e}");
        assert!(open(Path::new("/dev/null")).is_err());
    }
}
