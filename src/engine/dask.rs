//! The reduce on a Dask cluster: the table `keyed` written as Parquet, one file per rank (the
//! partitions the workers read), `dask_reduce.py` run against the scheduler, its four tables
//! read back. Everything goes through a temporary folder that is removed afterwards.

use std::fs::File;
use std::path::Path;
use std::process::Command;

use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use arrow_array::RecordBatch;

use super::{DASK_SCHEDULER_ENV, EngineError, Outputs, ReduceParams};

/// The Dask program, shipped inside the binary.
const PROGRAM: &str = include_str!("dask_reduce.py");

/// The environment variable naming the Python that has `dask` and `distributed`.
pub(super) const PYTHON_ENV: &str = "VERDICT_PYTHON";

/// The environment variable that sets how long the reduce may run, in seconds.
pub(super) const TIMEOUT_ENV: &str = "VERDICT_ENGINE_TIMEOUT";

/// How long the reduce may run without it: an hour, far past a reduce over a thousand ranks.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Runs the reduce of `analysis` on the scheduler at `address` (else
/// `DASK_SCHEDULER_ADDRESS`): `parts` are its input, one batch per rank; `outputs` the tables
/// it writes.
pub(super) fn run(
    address: Option<&str>,
    analysis: &str,
    parts: Vec<RecordBatch>,
    params: &ReduceParams,
    outputs: &[&str],
) -> Result<Outputs, EngineError> {
    let env = std::env::var(DASK_SCHEDULER_ENV).ok().filter(|a| !a.trim().is_empty());
    let address = address.map(str::to_string).or(env).ok_or_else(|| {
        EngineError::new(
            "`--engine dask` names no scheduler",
            format!(
                "give `--engine dask=tcp://HOST:PORT` or set {DASK_SCHEDULER_ENV}; start one with `dask scheduler` and its workers with `dask worker ADDRESS`"
            ),
        )
    })?;
    let io = |what: &str, e: std::io::Error| {
        EngineError::new(
            format!("the Dask reduce's {what}: {e}"),
            "check the system temporary folder (TMPDIR) has room",
        )
    };
    let dir = tempfile::Builder::new()
        .prefix("verdict-dask-")
        .tempdir()
        .map_err(|e| io("temporary folder", e))?;
    let input = dir.path().join("input");
    let output = dir.path().join("out");
    std::fs::create_dir(&input).map_err(|e| io("input folder", e))?;
    std::fs::create_dir(&output).map_err(|e| io("output folder", e))?;
    for (r, part) in parts.iter().enumerate() {
        write(&input.join(format!("rank-{r:05}.parquet")), part)?;
    }
    let (tile, wstart, wend, from) = match params.tile {
        Some((s, e, f)) => (true, Some(s), Some(e), f),
        None => (false, None, None, None),
    };
    let json = serde_json::json!({
        "R": params.ranks,
        "ordinal": params.ordinal,
        "tile": tile,
        "wstart": wstart,
        "wend": wend,
        "counted_from": from,
    });
    let params_file = dir.path().join("params.json");
    std::fs::write(&params_file, json.to_string()).map_err(|e| io("parameters", e))?;
    let program = dir.path().join("dask_reduce.py");
    std::fs::write(&program, PROGRAM).map_err(|e| io("program", e))?;
    let python = std::env::var(PYTHON_ENV).unwrap_or_else(|_| "python3".into());
    let mut cmd = Command::new(&python);
    cmd.arg(&program)
        .arg("--analysis")
        .arg(analysis)
        .arg("--scheduler")
        .arg(&address)
        .arg("--input")
        .arg(&input)
        .arg("--output")
        .arg(&output)
        .arg("--params")
        .arg(&params_file);
    let timeout = super::process::timeout_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT);
    let done = match super::process::run(&mut cmd, timeout, || Ok::<(), ()>(())) {
        Ok(Ok(done)) => done,
        Ok(Err(())) => unreachable!("the reduce is never stopped early"),
        Err(super::process::Failure::Start(e)) => {
            return Err(EngineError::new(
                format!("`{python}` did not start: {e}"),
                format!(
                    "install Python 3 with `dask[dataframe]`, `distributed` and `pyarrow`, or name it with {PYTHON_ENV}"
                ),
            ));
        }
        Err(super::process::Failure::TimedOut { after, stderr }) => {
            return Err(EngineError::new(
                format!(
                    "the Dask reduce (`{python}`) on {address} did not end within {} s and was stopped; its stderr: {}",
                    after.as_secs_f64(),
                    super::process::last_line(&stderr)
                ),
                format!(
                    "check the scheduler at {address} answers and has workers; allow longer with {TIMEOUT_ENV}=SECONDS, or run `--engine rust`, which gives the same evidence"
                ),
            ));
        }
        Err(super::process::Failure::Wait(e)) => {
            return Err(EngineError::new(
                format!("waiting for `{python}` failed: {e}"),
                "run it again; `--engine rust` gives the same evidence",
            ));
        }
    };
    if !done.status.success() {
        let err = String::from_utf8_lossy(&done.stderr);
        let line = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Err(EngineError::new(
            format!(
                "the Dask reduce (`{python}`) on {address} failed ({}): {}",
                done.status,
                line.trim()
            ),
            format!(
                "check the scheduler and its workers are up and that `{python}` has `dask[dataframe]`, `distributed` and `pyarrow`; `--engine rust` gives the same evidence"
            ),
        ));
    }
    let mut out = Outputs::new();
    for &name in outputs {
        out.insert(name.to_string(), read(&output.join(format!("{name}.parquet")), name)?);
    }
    Ok(out)
}

fn write(path: &Path, b: &RecordBatch) -> Result<(), EngineError> {
    let failed = |e: String| {
        EngineError::new(
            format!("the Dask reduce's input `{}`: {e}", path.display()),
            "check the system temporary folder (TMPDIR) has room",
        )
    };
    let file = File::create(path).map_err(|e| failed(e.to_string()))?;
    let mut w = ArrowWriter::try_new(file, b.schema(), None).map_err(|e| failed(e.to_string()))?;
    w.write(b).map_err(|e| failed(e.to_string()))?;
    w.close().map_err(|e| failed(e.to_string()))?;
    Ok(())
}

fn read(path: &Path, name: &str) -> Result<Vec<RecordBatch>, EngineError> {
    let failed = |e: String| {
        EngineError::new(
            format!("the Dask reduce's table `{name}`: {e}"),
            "the engine's definition and verdict disagree: run both from one release",
        )
    };
    let file = File::open(path).map_err(|e| failed(e.to_string()))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| failed(e.to_string()))?;
    reader.collect::<Result<Vec<_>, _>>().map_err(|e| failed(e.to_string()))
}
