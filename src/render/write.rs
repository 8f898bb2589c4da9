//! File writes with the mode any other program's output would get: 0666 less the process
//! umask. [`atomic`] writes a temporary file in the target folder, then renames it, so a reader
//! never sees a half-written file; [`create`] writes a new file in a folder nobody else reads
//! (a render's temporary folder, whose files are renamed into place later and keep that mode).

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically.
pub fn atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".verdict-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // The kernel applies the umask to the mode asked for, as it does for `open(2)`.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.flush()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes `bytes` to a new file at `path`; an existing file is an error, never overwritten.
pub fn create(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // `OpenOptions` asks for 0666 on Unix, which the kernel reduces by the umask.
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    f.write_all(bytes)?;
    f.flush()
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    /// The umask of this process, read without changing it for long.
    fn umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            .unwrap_or(0o022)
    }

    #[test]
    fn the_mode_is_what_the_umask_leaves_of_0666() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("report.md");
        super::atomic(&p, b"x").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask());
        // Replacing a file keeps that rule too.
        super::atomic(&p, b"y").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"y");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o666 & !umask());
        // A file created in a render's temporary folder, then renamed over the report, too.
        let staged = dir.path().join("staged.md");
        super::create(&staged, b"z").unwrap();
        assert!(super::create(&staged, b"again").is_err(), "create overwrote a file");
        std::fs::rename(&staged, &p).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o666 & !umask());
    }
}
