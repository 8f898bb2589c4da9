//! Atomic file writes: a temporary file in the target folder, then a rename.
//!
//! A reader never sees a half-written report, and a failed run leaves no partial file.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically.
pub fn atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.flush()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
