//! Facts about the files behind a report that a postmortem cites: the claims file's hash, the
//! commit that last changed it, and the render date.
//!
//! Nothing here writes, and nothing fails the render: a fact that cannot be learned is left out.

use std::path::Path;
use std::process::Command;

use crate::render::RenderError;
use serde::Serialize;

/// The commit that last changed a file, in the repository that holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Vcs {
    /// Full hash of the last commit that changed the file.
    pub commit: String,
    /// Its first 12 digits.
    pub short: String,
    /// Whether the file differs from that commit.
    pub modified: bool,
    /// `remote.origin.url`, without any credentials.
    pub remote: Option<String>,
}

/// The sha256 of a file, in hex.
pub fn file_sha256(path: &Path) -> std::io::Result<String> {
    crate::trace::sha256_file(path)
}

/// The commit that last changed `path`, through the `git` command.
///
/// The last commit of the file, not `HEAD`: a report committed beside its claims file would
/// otherwise change with every commit. None when git is missing, or the file is not tracked.
pub fn vcs_of(path: &Path) -> Option<Vcs> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name()?;
    let git = |args: &[&std::ffi::OsStr]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    let commit = git(&[os("log"), os("-1"), os("--format=%H"), os("--"), name])?;
    if commit.len() < 12 {
        return None;
    }
    let status = git(&[os("status"), os("--porcelain"), os("--"), name]).unwrap_or_default();
    let remote = git(&[os("config"), os("--get"), os("remote.origin.url")])
        .filter(|r| is_network_remote(r))
        .map(|r| strip_credentials(&r));
    Some(Vcs { short: commit[..12].to_string(), commit, modified: !status.is_empty(), remote })
}

/// Whether a remote names a repository others can reach (`https://…`, `ssh://…`,
/// `git@host:owner/repo`), not a folder of this machine (`/srv/x`, `../x`, `file://…`), which
/// would say nothing to a reader and change from clone to clone.
fn is_network_remote(url: &str) -> bool {
    match url.split_once("://") {
        Some((scheme, rest)) => scheme != "file" && !rest.is_empty(),
        // scp-like `user@host:path`: a colon before any slash (one letter is a drive: `C:`).
        None => url
            .split_once(':')
            .is_some_and(|(host, _)| host.len() > 1 && !host.contains('/') && !host.contains('\\')),
    }
}

/// `https://user:token@host/x` -> `https://host/x`; other forms are kept.
fn strip_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((cred, host)) if !cred.contains('/') => format!("{scheme}://{host}"),
            _ => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// The render date, `YYYY-MM-DD` UTC: of `SOURCE_DATE_EPOCH` when set, else of now.
pub fn render_date() -> Result<String, RenderError> {
    date_of(std::env::var("SOURCE_DATE_EPOCH").ok().as_deref(), std::time::SystemTime::now())
}

/// The date of `epoch` (whole seconds, as `SOURCE_DATE_EPOCH` holds them), else of `now`.
pub fn date_of(epoch: Option<&str>, now: std::time::SystemTime) -> Result<String, RenderError> {
    let t = match epoch {
        Some(s) => {
            let date = |detail: String| RenderError::Date { value: s.into(), detail };
            let secs: i64 =
                s.trim().parse().map_err(|_| date("not a whole number of seconds".into()))?;
            time::OffsetDateTime::from_unix_timestamp(secs).map_err(|e| date(e.to_string()))?
        }
        None => time::OffsetDateTime::from(now),
    };
    let d = t.date();
    Ok(format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_come_from_the_epoch_when_given() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(86_400 * 365);
        assert_eq!(date_of(Some("0"), now).unwrap(), "1970-01-01");
        // `date -u -d @1788393600` is Thu Sep 3 00:00:00 UTC 2026.
        assert_eq!(date_of(Some("1788393600"), now).unwrap(), "2026-09-03");
        assert_eq!(date_of(Some(" 1788393599 "), now).unwrap(), "2026-09-02");
        // 365 days after 1970-01-01 is 1971-01-01.
        assert_eq!(date_of(None, now).unwrap(), "1971-01-01");
        assert!(date_of(Some("yesterday"), now).unwrap_err().to_string().contains("`yesterday`"));
    }

    #[test]
    fn only_network_remotes_are_cited() {
        for url in ["https://github.com/o/r.git", "ssh://git@host/o/r", "git@github.com:o/r.git"] {
            assert!(is_network_remote(url), "{url}");
        }
        for url in ["/srv/repos/verdict", "../verdict", "file:///srv/verdict", "", "C:\\repo"] {
            assert!(!is_network_remote(url), "{url}");
        }
    }

    #[test]
    fn credentials_are_stripped_from_remotes() {
        assert_eq!(
            strip_credentials("https://u:tok@example.org/a.git"),
            "https://example.org/a.git"
        );
        assert_eq!(strip_credentials("git@example.org:a/b.git"), "git@example.org:a/b.git");
        assert_eq!(strip_credentials("https://example.org/a@b"), "https://example.org/a@b");
    }

    #[test]
    fn the_last_commit_of_a_file_and_whether_it_changed_since() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", dir.path())
                .output()
        };
        let Ok(o) = run(&["init", "-q"]) else { return }; // no git here: nothing to test
        assert!(o.status.success());
        let file = dir.path().join("claims.yaml");
        std::fs::write(&file, "a: 1\n").unwrap();
        assert_eq!(vcs_of(&file), None, "untracked");
        run(&["add", "claims.yaml"]).unwrap();
        run(&["commit", "-q", "-m", "one"]).unwrap();
        let first = run(&["rev-parse", "HEAD"]).unwrap();
        let first = String::from_utf8_lossy(&first.stdout).trim().to_string();
        std::fs::write(dir.path().join("other"), "x").unwrap();
        run(&["add", "other"]).unwrap();
        run(&["commit", "-q", "-m", "two"]).unwrap();
        let v = vcs_of(&file).unwrap();
        assert_eq!(v.commit, first, "the commit that changed the file, not HEAD");
        assert_eq!(v.short, first[..12]);
        assert!(!v.modified);
        std::fs::write(&file, "a: 2\n").unwrap();
        assert!(vcs_of(&file).unwrap().modified);
    }
}
