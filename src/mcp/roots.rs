//! Where the tools may read: the `--root` folders and the roots the client grants.
//!
//! A path is made absolute (a relative one against the first root), its links followed, and
//! accepted only inside a root; a glob is expanded and each of its files checked. Paths a
//! claims document names are checked the same way before its traces are opened.

use std::path::{Path, PathBuf};

use super::tools::ToolError;

/// The folders the tools may read under.
#[derive(Debug, Default)]
pub struct Roots {
    /// `--root` folders, resolved.
    server: Vec<PathBuf>,
    /// The client's `file://` roots, resolved.
    client: Vec<PathBuf>,
}

impl Roots {
    /// The `--root` folders, each of which must be a folder.
    pub fn new(dirs: &[PathBuf]) -> Result<Roots, crate::Hinted> {
        let mut server = Vec::new();
        for d in dirs {
            let resolved = std::fs::canonicalize(d).map_err(|e| {
                crate::Hinted::new(
                    format!("--root `{}` cannot be read ({e})", d.display()),
                    "pass a folder that exists",
                )
            })?;
            if !resolved.is_dir() {
                return Err(crate::Hinted::new(
                    format!("--root `{}` is not a folder", d.display()),
                    "pass the folder that holds the traces and claims files",
                ));
            }
            server.push(resolved);
        }
        Ok(Roots { server, client: Vec::new() })
    }

    /// Replaces the client's roots with those of `uris` that are local `file://` folders.
    pub fn set_client(&mut self, uris: &[&str]) {
        self.client = uris
            .iter()
            .filter_map(|u| file_uri_path(u))
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
    }

    /// The `--root` folders with the client roots of one call (`uris`), for the stateless
    /// revision, where roots come with each call.
    pub fn with_client(&self, uris: &[&str]) -> Roots {
        let mut r = Roots { server: self.server.clone(), client: Vec::new() };
        r.set_client(uris);
        r
    }

    /// Every root: the `--root` folders, then the client's.
    pub fn all(&self) -> Vec<&Path> {
        self.server.iter().chain(&self.client).map(PathBuf::as_path).collect()
    }

    /// The path a tool argument names, absolute and inside a root.
    pub fn resolve(&self, text: &str) -> Result<PathBuf, ToolError> {
        let first = self.first()?;
        let p = Path::new(text);
        let abs = if p.is_absolute() { p.to_path_buf() } else { first.join(p) };
        self.check(&abs)
    }

    /// The files a trace argument names: a file, or a glob expanded in sorted order, each
    /// inside a root; and whether the glob made them a set.
    pub fn expand(&self, text: &str) -> Result<(Vec<PathBuf>, bool), ToolError> {
        let first = self.first()?;
        let p = Path::new(text);
        let abs = if p.is_absolute() { p.to_path_buf() } else { first.join(p) };
        if !crate::claims::validate::is_set_path(first, text) {
            return Ok((vec![self.check(&abs)?], false));
        }
        // The glob's folder must lie inside a root before anything under it is listed.
        let literal: PathBuf = abs
            .components()
            .take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '[']))
            .collect();
        self.check(&literal)?;
        let files = crate::claims::validate::glob_files(first, text).map_err(|e| {
            ToolError::new(
                e,
                Some("a glob is read from the first root unless it is absolute".into()),
            )
        })?;
        let files = files.iter().map(|f| self.check(f)).collect::<Result<Vec<_>, _>>()?;
        Ok((files, true))
    }

    /// `path`, its links followed (where a part does not exist, the links of the part that
    /// does, a link to a missing file included), if it lies inside a root. The roots are
    /// checked before anything says whether the file exists.
    pub fn check(&self, path: &Path) -> Result<PathBuf, ToolError> {
        let roots = self.all();
        let resolved = crate::trace::open::resolve(path);
        if roots.iter().any(|r| resolved.starts_with(r)) {
            return Ok(resolved);
        }
        let owned: Vec<PathBuf> = roots.iter().map(|r| r.to_path_buf()).collect();
        let refused = crate::trace::open::outside(path, &owned);
        Err(ToolError::new(refused.message, Some(refused.hint)))
    }

    /// The first root, against which relative paths are read.
    fn first(&self) -> Result<&Path, ToolError> {
        self.all().first().copied().ok_or_else(|| {
            ToolError::new(
                "no root is granted: this server reads no path",
                Some(
                    "grant a folder as a root in the client, or start the server with `verdict mcp --root DIR`"
                        .into(),
                ),
            )
        })
    }
}

/// The local path of a `file://` URI (percent-decoded), or None for another scheme or host.
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|b| hex(*b)),
            bytes.get(i + 2).and_then(|b| hex(*b)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
    }
    #[cfg(not(unix))]
    {
        String::from_utf8(out).ok().map(PathBuf::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_decoded_and_other_hosts_refused() {
        assert_eq!(file_uri_path("file:///a/b%20c"), Some(PathBuf::from("/a/b c")));
        assert_eq!(file_uri_path("file://localhost/x"), Some(PathBuf::from("/x")));
        assert_eq!(file_uri_path("file://server/share"), None);
        assert_eq!(file_uri_path("https://example.org/"), None);
    }

    #[test]
    fn a_path_that_climbs_out_of_the_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("in");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(dir.path().join("secret.sqlite"), b"x").unwrap();
        std::fs::write(inner.join("t.sqlite"), b"x").unwrap();
        let roots = Roots::new(std::slice::from_ref(&inner)).unwrap();
        assert!(roots.resolve("t.sqlite").is_ok());
        assert!(roots.resolve("../secret.sqlite").is_err());
        assert!(roots.resolve(&dir.path().join("secret.sqlite").display().to_string()).is_err());
        assert!(roots.resolve("../in/../../nowhere.sqlite").is_err());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret.sqlite"), inner.join("link.sqlite"))
                .unwrap();
            assert!(roots.resolve("link.sqlite").is_err(), "a link is followed to its target");
        }
        assert!(Roots::default().resolve("t.sqlite").is_err(), "no root, no path");
        #[cfg(unix)]
        {
            // A link to a missing file outside: refused as outside, not "does not exist".
            std::os::unix::fs::symlink(
                dir.path().join("missing.sqlite"),
                inner.join("gone.sqlite"),
            )
            .unwrap();
            let e = roots.resolve("gone.sqlite").unwrap_err();
            assert!(e.message.contains("outside the roots"), "{}", e.message);
        }
    }
}
