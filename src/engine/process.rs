//! External programs run with a deadline: `VERDICT_PYTHON` for the map on a Dask cluster,
//! `typst` for the PDF, each in a process group of its own, its output read on threads, and the
//! whole group killed when the deadline passes, so that a program that never ends cannot hold
//! verdict.

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How often a running program is checked for its exit.
const POLL: Duration = Duration::from_millis(20);

/// A program that did not end in time, or did not start.
#[derive(Debug)]
pub enum Failure {
    /// It did not start.
    Start(std::io::Error),
    /// It ran past its deadline and was killed, with what it wrote on stderr by then.
    TimedOut {
        /// The deadline.
        after: Duration,
        /// Its stderr until it was killed.
        stderr: Vec<u8>,
    },
    /// Waiting for it failed.
    Wait(std::io::Error),
}

/// The deadline named by the environment variable `var` in seconds (a positive number), else
/// `default`.
pub fn timeout_from_env(var: &str, default: Duration) -> Duration {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(default)
}

/// Runs `cmd` to its end with stdin closed, or kills its process group after `timeout`.
/// `stop` is asked between polls whether to stop early (an interrupt); when it says so, the
/// group is killed and its error returned.
pub fn run<E>(
    cmd: &mut Command,
    timeout: Duration,
    mut stop: impl FnMut() -> Result<(), E>,
) -> Result<Result<Output, E>, Failure> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own group: a terminal's Ctrl-C reaches verdict alone, which then ends the group.
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(Failure::Start)?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let join = |h: std::thread::JoinHandle<Vec<u8>>| h.join().unwrap_or_default();
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return Ok(Ok(Output { status, stdout: join(stdout), stderr: join(stderr) }));
            }
            Ok(None) => {}
            Err(e) => {
                kill_group(&mut child);
                return Err(Failure::Wait(e));
            }
        }
        if let Err(e) = stop() {
            kill_group(&mut child);
            return Ok(Err(e));
        }
        if start.elapsed() >= timeout {
            kill_group(&mut child);
            return Err(Failure::TimedOut { after: timeout, stderr: join(stderr) });
        }
        std::thread::sleep(POLL);
    }
}

/// Reads a pipe to its end on a thread of its own, so a full pipe never stalls the program.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// Kills the child's process group (the child itself off Unix), then reaps it.
pub fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) takes plain integers; a negative pid names the process group, which
        // the child leads and which lives on while the child is not reaped.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    // Reaped only now: until then the group's id cannot be reused by another process.
    let _ = child.wait();
}

/// The last non-empty line a program wrote on stderr, or a note that it wrote none.
pub fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("it wrote nothing on stderr")
        .to_string()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_program_past_its_deadline_is_killed() {
        let t = Instant::now();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo started >&2; sleep 30"]);
        let r = run(&mut cmd, Duration::from_millis(500), || Ok::<(), ()>(()));
        match r {
            Err(Failure::TimedOut { stderr, .. }) => assert_eq!(last_line(&stderr), "started"),
            other => panic!("{other:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_program_that_ends_gives_its_output() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let o = run(&mut cmd, Duration::from_secs(20), || Ok::<(), ()>(())).unwrap().unwrap();
        assert_eq!(o.status.code(), Some(3));
        assert_eq!(o.stdout, b"out\n");
        assert_eq!(last_line(&o.stderr), "err");
    }
}
