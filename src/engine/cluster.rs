//! The map on a Dask cluster: `dask_map.py` connects to the scheduler, runs `verdict map` on
//! the workers, one task per shard of the set's files, and writes each shard's JSON lines into a
//! temporary folder that is read back here and removed. Nothing is reduced here or there: the
//! rows go back to the analysis, whose Rust reduce is the only one.

use std::path::PathBuf;
use std::process::Command;

use super::{DASK_SCHEDULER_ENV, EngineError};

/// The Dask program, shipped inside the binary.
const PROGRAM: &str = include_str!("dask_map.py");

/// The environment variable naming the Python that has `distributed`.
pub(super) const PYTHON_ENV: &str = "VERDICT_PYTHON";

/// The environment variable naming the `verdict` the workers run (default: this one's path).
pub const WORKER_BINARY_ENV: &str = "VERDICT_WORKER_BINARY";

/// The environment variable that sets how long the map may run, in seconds.
pub(super) const TIMEOUT_ENV: &str = "VERDICT_ENGINE_TIMEOUT";

/// The environment variable that sets the number of shards (tasks) of a set.
pub(super) const SHARDS_ENV: &str = "VERDICT_CLUSTER_SHARDS";

/// How long the map may run without it: an hour.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Shards of a set without it: enough to keep some tens of workers busy, few enough that a
/// task's start is small beside its scan.
const DEFAULT_SHARDS: usize = 64;

/// What one task handed back: its first file's index in the set and its JSON lines.
#[derive(Debug)]
pub struct Shard {
    /// The index of its first file in the set.
    pub start: usize,
    /// What `verdict map` printed.
    pub lines: Vec<u8>,
}

/// Runs `verdict WORDS SHARD-FILES...` on the workers of the scheduler at `address` (else
/// `DASK_SCHEDULER_ADDRESS`), over contiguous shards of `files`.
pub fn map(
    address: Option<&str>,
    words: &[String],
    files: &[String],
) -> Result<Vec<Shard>, EngineError> {
    let env = std::env::var(DASK_SCHEDULER_ENV).ok().filter(|a| !a.trim().is_empty());
    let address = address.map(str::to_string).or(env).ok_or_else(|| {
        EngineError::new(
            "`--cluster` names no scheduler",
            format!(
                "give `--cluster tcp://HOST:PORT` or set {DASK_SCHEDULER_ENV}; start one with `dask scheduler` and its workers with `dask worker ADDRESS`"
            ),
        )
    })?;
    let binary = match std::env::var_os(WORKER_BINARY_ENV) {
        Some(b) => PathBuf::from(b),
        None => std::env::current_exe().map_err(|e| {
            EngineError::new(
                format!("the path of this verdict is unknown ({e})"),
                format!("name the workers' verdict with {WORKER_BINARY_ENV}"),
            )
        })?,
    };
    let io = |what: &str, e: std::io::Error| {
        EngineError::new(
            format!("the cluster map's {what}: {e}"),
            "check the system temporary folder (TMPDIR) has room",
        )
    };
    let dir = tempfile::Builder::new()
        .prefix("verdict-map-")
        .tempdir()
        .map_err(|e| io("temporary folder", e))?;
    let per = files.len().div_ceil(shards().min(files.len()).max(1)).max(1);
    let shards: Vec<(usize, &[String])> =
        files.chunks(per).enumerate().map(|(i, c)| (i * per, c)).collect();
    let timeout = super::process::timeout_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT);
    let job = serde_json::json!({
        "scheduler": address,
        "binary": binary.display().to_string(),
        "words": words,
        "shards": shards.iter().map(|(s, f)| serde_json::json!({"start": s, "files": f})).collect::<Vec<_>>(),
        "timeout": timeout.as_secs_f64(),
    });
    let job_file = dir.path().join("job.json");
    std::fs::write(&job_file, job.to_string()).map_err(|e| io("job", e))?;
    let program = dir.path().join("dask_map.py");
    std::fs::write(&program, PROGRAM).map_err(|e| io("program", e))?;
    let output = dir.path().join("out");
    let python = std::env::var(PYTHON_ENV).unwrap_or_else(|_| "python3".into());
    let mut cmd = Command::new(&python);
    cmd.arg(&program).arg("--job").arg(&job_file).arg("--output").arg(&output);
    let done = match super::process::run(&mut cmd, timeout, || Ok::<(), ()>(())) {
        Ok(Ok(done)) => done,
        Ok(Err(())) => unreachable!("the map is never stopped early"),
        Err(super::process::Failure::Start(e)) => {
            return Err(EngineError::new(
                format!("`{python}` did not start: {e}"),
                format!("install Python 3 with `distributed`, or name it with {PYTHON_ENV}"),
            ));
        }
        Err(super::process::Failure::TimedOut { after, stderr }) => {
            return Err(EngineError::new(
                format!(
                    "the map on the Dask cluster at {address} did not end within {} s and was stopped; its stderr: {}",
                    after.as_secs_f64(),
                    super::process::last_line(&stderr)
                ),
                format!(
                    "check the scheduler at {address} answers and has workers; allow longer with {TIMEOUT_ENV}=SECONDS, or run without `--cluster`, which gives the same evidence"
                ),
            ));
        }
        Err(super::process::Failure::Wait(e)) => {
            return Err(EngineError::new(
                format!("waiting for `{python}` failed: {e}"),
                "run it again; without `--cluster` the evidence is the same",
            ));
        }
    };
    if !done.status.success() {
        let line = super::process::last_line(&done.stderr);
        let line = line.strip_prefix("error: ").unwrap_or(&line);
        let hint = line
            .split_once(" (hint: ")
            .map(|(_, h)| h.trim_end_matches(')').to_string())
            .unwrap_or_else(|| {
                format!("check the scheduler at {address} and its workers are up; without `--cluster` the evidence is the same")
            });
        let reason = line.split(" (hint: ").next().unwrap_or(line);
        return Err(EngineError::new(
            format!("the map on the Dask cluster at {address} failed: {reason}"),
            hint,
        ));
    }
    shards
        .iter()
        .map(|&(start, _)| {
            let path = output.join(format!("shard-{start:06}.jsonl"));
            let lines = std::fs::read(&path).map_err(|e| {
                EngineError::new(
                    format!("the cluster map wrote no shard from file {start} ({e})"),
                    "the map's program and verdict disagree: run both from one release",
                )
            })?;
            Ok(Shard { start, lines })
        })
        .collect()
}

/// The number of shards: `VERDICT_CLUSTER_SHARDS`, else 64.
fn shards() -> usize {
    std::env::var(SHARDS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_SHARDS)
}
