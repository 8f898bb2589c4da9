//! The lock that keeps two renders from writing into one output folder at once.
//!
//! An advisory lock (`flock(2)` through `File::try_lock`) on [`LOCK_FILE`] in `--out`, held
//! from before the temporary folder is made until the new set is in place and the stale files
//! are gone. Another render waits for it, saying so once, and fails after its timeout. The
//! holder removes the file when it is done, so the folder keeps no trace of the lock; a waiter
//! that then holds the lock of a removed file notices and takes the lock again.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::interrupt::Interrupt;

/// The lock's file name in the output folder.
pub const LOCK_FILE: &str = ".verdict-render.lock";

/// How often a waiting render tries the lock again (and looks for a signal).
const POLL: Duration = Duration::from_millis(50);

/// The lock of one output folder, released (and its file removed) on drop.
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: PathBuf,
}

/// Takes the lock of `dir`, waiting up to `timeout` for another render to release it;
/// `on_wait` is told once, when this render has to wait.
pub fn acquire(
    dir: &Path,
    timeout: Duration,
    interrupt: &Interrupt,
    on_wait: &mut dyn FnMut(&str),
) -> anyhow::Result<Lock> {
    let path = dir.join(LOCK_FILE);
    let start = Instant::now();
    let mut told = false;
    loop {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| {
                crate::Hinted::new(
                    format!("cannot open the lock `{}` ({e})", path.display()),
                    "check that the output folder is writable",
                )
            })?;
        match file.try_lock() {
            Ok(()) if is_current(&file, &path) => return Ok(Lock { file, path }),
            // The holder removed the file while this render waited: take the new one.
            Ok(()) => continue,
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                return Err(crate::Hinted::new(
                    format!("cannot lock `{}` ({e})", path.display()),
                    "render into a folder on a local file system",
                )
                .into());
            }
        }
        if !told {
            on_wait(&format!(
                "waiting for another render into `{}` to finish (it holds `{}`; at most {} s, `--lock-timeout` sets it)",
                dir.display(),
                path.display(),
                timeout.as_secs()
            ));
            told = true;
        }
        if start.elapsed() >= timeout {
            return Err(crate::Hinted::new(
                format!(
                    "another render is still writing into `{}` after {} s (it holds `{}`)",
                    dir.display(),
                    timeout.as_secs(),
                    path.display()
                ),
                "let it finish and render again, or wait longer with `--lock-timeout SECONDS`",
            )
            .into());
        }
        interrupt.check()?;
        std::thread::sleep(POLL);
    }
}

/// Whether `path` still names the file `file` holds open.
#[cfg(unix)]
fn is_current(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The file is never removed off Unix, so the path always names it.
#[cfg(not(unix))]
fn is_current(_file: &File, _path: &Path) -> bool {
    true
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Removed while held: a render that opens the path from now on makes a new file, and one
        // already waiting on this file sees it is gone once it gets the lock. Off Unix an open
        // file may not be removable, so it stays.
        #[cfg(unix)]
        if is_current(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_waits_then_fails_after_its_timeout_and_the_file_goes_with_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let none = Interrupt::default();
        let first = acquire(dir.path(), Duration::ZERO, &none, &mut |_| {}).unwrap();
        let mut told = Vec::new();
        let err = acquire(dir.path(), Duration::from_millis(120), &none, &mut |m| {
            told.push(m.to_string())
        })
        .unwrap_err();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].starts_with("waiting for another render"), "{told:?}");
        assert!(err.to_string().contains("another render is still writing"), "{err}");
        drop(first);
        assert!(!dir.path().join(LOCK_FILE).exists(), "the lock file stays behind");
        let again = acquire(dir.path(), Duration::ZERO, &none, &mut |_| panic!("waited"));
        assert!(again.is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_waiter_on_a_removed_lock_file_takes_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let none = Interrupt::default();
        let first = acquire(dir.path(), Duration::ZERO, &none, &mut |_| {}).unwrap();
        let path = dir.path().to_path_buf();
        let waiter = std::thread::spawn(move || {
            acquire(&path, Duration::from_secs(20), &Interrupt::default(), &mut |_| {}).unwrap()
        });
        std::thread::sleep(Duration::from_millis(150));
        drop(first);
        let second = waiter.join().unwrap();
        // The waiter holds the file the path names now, so a third render has to wait.
        assert!(is_current(&second.file, &second.path));
        let third = acquire(dir.path(), Duration::from_millis(100), &none, &mut |_| {});
        assert!(third.is_err(), "two renders hold the lock at once");
    }
}
