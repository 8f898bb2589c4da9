//! The run behind a trace: what its metadata says about the machine, the software and the
//! capture (GPU models, driver, CUDA and NCCL versions, nsys, host, capture start, a derived
//! slice), and what one side of a comparison ran (its processes, kernel names and steps).
//!
//! Read-only and descriptive: it compares nothing and judges nothing; the experiment check
//! of a comparison (`crate::verdict`) reads two of these. A value the export does not record
//! is None, never a stand-in.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Kernels, NameStyle, Trace, TraceError, names, quote_ident};

/// One GPU listed in `TARGET_INFO_GPU`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunGpu {
    /// `id` (= the activity tables' `deviceId`).
    pub id: i64,
    /// Marketing name (`NVIDIA H100 80GB HBM3`).
    pub name: Option<String>,
    /// `uuid`.
    pub uuid: Option<String>,
}

/// The Nsight Systems version an export records: `None` for a file another profiler wrote
/// (not serialised: its evidence speaks of no nsys), `Some(None)` for an export that records
/// none (null), `Some(Some(v))` for one that does.
pub type NsysVersion = Option<Option<String>>;

/// Serde's half of [`NsysVersion`]: a present null is an export without a recorded version,
/// an absent key a file no nsys wrote.
pub(crate) mod nsys_version {
    use serde::{Deserialize, Deserializer};

    /// Reads a present value (null included) as `Some`; an absent key is `None` by `default`.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(d).map(Some)
    }
}

/// What one trace file's metadata says about the run it captured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunInfo {
    /// `EXPORT_PRODUCT_VERSION` of the export metadata; absent for a file no nsys wrote.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nsys_version::deserialize"
    )]
    pub nsys_version: NsysVersion,
    /// `TARGET_INFO_SYSTEM_ENV` `Hostname`.
    pub host: Option<String>,
    /// `TARGET_INFO_GPU`: the GPUs of the node, by id (empty when the table is absent).
    pub gpus: Vec<RunGpu>,
    /// `NVIDIA_VISIBLE_DEVICES` of the launched process's environment (`META_DATA_CAPTURE`),
    /// split at commas: GPU uuids where a container runtime set them.
    pub visible_devices: Vec<String>,
    /// `TARGET_INFO_SYSTEM_ENV` `NvDriverVersion` (`580.95.05`).
    pub driver: Option<String>,
    /// `TARGET_INFO_SYSTEM_ENV` `CudaDriverVersion`, as `major.minor` (13000 is `13.0`): the
    /// CUDA version the driver supports.
    pub cuda_driver: Option<String>,
    /// `CUDA_VERSION` of the launched process's environment: the CUDA toolkit, where exported.
    pub cuda: Option<String>,
    /// `NCCL_VERSION` of the launched process's environment, where exported.
    pub nccl: Option<String>,
    /// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`: the capture start, UTC-epoch ns.
    pub capture_start_utc_ns: Option<i64>,
    /// `META_DATA_CAPTURE` `PROFILING_SESSION_UUID`.
    pub session: Option<String>,
    /// `DERIVED_BY` of the export metadata: the file is a slice or a synthetic trace.
    pub derived_by: Option<String>,
}

/// Keys read from `TARGET_INFO_SYSTEM_ENV` (`name`, `value`).
mod env {
    pub(super) const HOSTNAME: &str = "Hostname";
    pub(super) const DRIVER: &str = "NvDriverVersion";
    pub(super) const CUDA_DRIVER: &str = "CudaDriverVersion";
}

/// Keys read from `META_DATA_CAPTURE` (`name`, `value`).
mod capture {
    pub(super) const SESSION: &str = "PROFILING_SESSION_UUID";
    /// One row per variable of the launched process: `NAME="value"`.
    pub(super) const ENVIRONMENT: &str = "PROCESS_0:ENVIRONMENT_VARIABLE";
}

impl Trace {
    /// What the trace's metadata says about its run; tables and rows the export lacks leave
    /// their fields None or empty.
    pub fn run_info(&self) -> Result<RunInfo, TraceError> {
        let schema = self.schema();
        let system = self.name_values(names::SYSTEM_ENV)?;
        let sys = |k: &str| system.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let captured = self.name_values(names::META_DATA_CAPTURE)?;
        let variables: Vec<(String, String)> = captured
            .iter()
            .filter(|(n, _)| n == capture::ENVIRONMENT)
            .filter_map(|(_, v)| parse_variable(v))
            .collect();
        let var = |k: &str| {
            variables.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).filter(|v| !v.is_empty())
        };
        Ok(RunInfo {
            nsys_version: schema.source.is_nsys().then(|| schema.nsys_version.clone()),
            host: sys(env::HOSTNAME),
            gpus: self.run_gpus()?,
            visible_devices: var("NVIDIA_VISIBLE_DEVICES")
                .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
                .unwrap_or_default(),
            driver: sys(env::DRIVER),
            cuda_driver: sys(env::CUDA_DRIVER).map(|v| cuda_version(&v)),
            cuda: var("CUDA_VERSION"),
            nccl: var("NCCL_VERSION"),
            capture_start_utc_ns: schema.session_start_utc_ns,
            session: captured
                .iter()
                .find(|(n, _)| n == capture::SESSION)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty()),
            derived_by: schema.origin.derived_by.clone(),
        })
    }

    /// The `(name, value)` rows of a name/value table, in row order, values as text (numbers
    /// written as SQLite stores them); an absent table or column reads as no rows.
    fn name_values(&self, table: &str) -> Result<Vec<(String, String)>, TraceError> {
        let schema = self.schema();
        if !schema.has_column(table, "name") || !schema.has_column(table, "value") {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT name, value FROM {} WHERE name IS NOT NULL AND value IS NOT NULL ORDER BY rowid",
            quote_ident(table)
        );
        let mut stmt = self.conn().prepare(&sql).map_err(TraceError::from_sqlite)?;
        let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(TraceError::from_sqlite)? {
            let text = |i: usize| -> Result<Option<String>, TraceError> {
                Ok(
                    match r.get::<_, rusqlite::types::Value>(i).map_err(TraceError::from_sqlite)? {
                        rusqlite::types::Value::Text(s) => Some(s.trim().to_string()),
                        rusqlite::types::Value::Integer(n) => Some(n.to_string()),
                        rusqlite::types::Value::Real(x) => Some(x.to_string()),
                        _ => None,
                    },
                )
            };
            if let (Some(n), Some(v)) = (text(0)?, text(1)?) {
                out.push((n, v));
            }
        }
        Ok(out)
    }

    /// `TARGET_INFO_GPU` with names and uuids, by id; empty when the table or its id column
    /// is absent.
    fn run_gpus(&self) -> Result<Vec<RunGpu>, TraceError> {
        let table = names::TARGET_INFO_GPU;
        let schema = self.schema();
        let Some(id) = [names::gpu::ID, names::gpu::DEVICE_ID]
            .into_iter()
            .find(|c| schema.has_column(table, c))
        else {
            return Ok(Vec::new());
        };
        let col =
            |c: &str| if schema.has_column(table, c) { quote_ident(c) } else { "NULL".into() };
        let sql = format!(
            "SELECT {id}, {}, {} FROM {} WHERE {id} IS NOT NULL ORDER BY {id}",
            col(names::gpu::NAME),
            col(names::gpu::UUID),
            quote_ident(table),
            id = quote_ident(id),
        );
        let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
            table: table.into(),
            column: column.into(),
            detail: e.to_string(),
        };
        let mut stmt = self.conn().prepare(&sql).map_err(TraceError::from_sqlite)?;
        let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
        let mut out: Vec<RunGpu> = Vec::new();
        while let Some(r) = rows.next().map_err(TraceError::from_sqlite)? {
            let text = |i: usize, c: &str| -> Result<Option<String>, TraceError> {
                Ok(r.get::<_, Option<String>>(i)
                    .map_err(|e| bad(c, e))?
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty()))
            };
            let gpu = RunGpu {
                id: r.get(0).map_err(|e| bad(id, e))?,
                name: text(1, names::gpu::NAME)?,
                uuid: text(2, names::gpu::UUID)?,
            };
            // Several rows per GPU (one per VM) list it once.
            if out.last().is_none_or(|g| g.id != gpu.id) {
                out.push(gpu);
            }
        }
        Ok(out)
    }
}

/// `NAME="value"` (or `NAME=value`) as a pair, the quotes removed.
fn parse_variable(s: &str) -> Option<(String, String)> {
    let (name, value) = s.split_once('=')?;
    let value = value.trim();
    let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
    Some((name.trim().to_string(), value.to_string()))
}

/// `CudaDriverVersion` as `major.minor`: CUDA encodes it as `1000 * major + 10 * minor`
/// (12080 is 12.8); anything else is kept as written.
fn cuda_version(v: &str) -> String {
    match v.parse::<u32>() {
        Ok(n) if n >= 1000 => format!("{}.{}", n / 1000, (n % 1000) / 10),
        _ => v.to_string(),
    }
}

/// One side of a comparison as the experiment check reads it: the run metadata of its
/// file(s), and what its devices ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SideRun {
    /// The run metadata of each file of the side's trace (one, or one per file of a set);
    /// None for a file whose metadata could not be read.
    pub files: Vec<Option<RunInfo>>,
    /// The side's devices (ranks over a set).
    pub devices: Vec<i64>,
    /// Devices with kernels in the side's whole trace: the GPUs the job ran on.
    pub job_devices: usize,
    /// Processes (pids) with kernels on the side's devices.
    pub pids: Vec<i64>,
    /// Distinct kernel (short) names on the side's devices, over its window when it has one
    /// (a kernel touching it counts, as the scan keeps it), sorted.
    pub kernel_names: Vec<String>,
    /// How the side's samples were taken: `steps` (NVTX ranges), `windows` (equal splits of
    /// its window) or `one` (its one window).
    pub sampling: String,
    /// The number of samples when they are NVTX ranges: the side's step count.
    pub steps: Option<usize>,
}

impl SideRun {
    /// The devices' processes and kernel names from the trace's scan (the names over
    /// `window`, `[start, end]` in ns, when given), with the run metadata of its files.
    pub fn new(
        files: Vec<Option<RunInfo>>,
        kernels: &Kernels,
        devices: &[i64],
        window: Option<[i64; 2]>,
        sampling: &str,
        steps: Option<usize>,
    ) -> SideRun {
        let pids: BTreeSet<i64> = kernels
            .inventory
            .iter()
            .filter(|d| devices.contains(&d.device))
            .flat_map(|d| d.pids.iter().copied())
            .collect();
        let mut names: BTreeSet<&str> = BTreeSet::new();
        for &d in devices {
            // The scan's own rule for a row in its box: it touches the window.
            let touches =
                |i: usize| window.is_none_or(|[a, b]| kernels.end[i] >= a && kernels.start[i] <= b);
            for i in kernels.device_rows(d).filter(|&i| touches(i)) {
                names.insert(kernels.name(i, NameStyle::Short));
            }
        }
        SideRun {
            files,
            devices: devices.to_vec(),
            job_devices: kernels.inventory.len(),
            pids: pids.into_iter().collect(),
            kernel_names: names.into_iter().map(str::to_string).collect(),
            sampling: sampling.to_string(),
            steps,
        }
    }
}

/// The run metadata of each file, None for one that cannot be opened or read: a side the
/// experiment check cannot speak for, never an error of the audit.
pub fn read_runs(paths: &[std::path::PathBuf]) -> Vec<Option<RunInfo>> {
    paths.iter().map(|p| Trace::open(p).and_then(|t| t.run_info()).ok()).collect()
}

/// How a side's samples were taken, and its step count when they are NVTX ranges: `steps`
/// with the number of samples (one window is one step), `windows` for equal splits, `one`
/// for its one window.
pub fn sampling(nvtx: bool, split: bool, samples: usize) -> (&'static str, Option<usize>) {
    match (nvtx, split) {
        (true, _) => ("steps", Some(samples.max(1))),
        (false, true) => ("windows", None),
        (false, false) => ("one", None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_and_cuda_versions_read_as_exported() {
        assert_eq!(
            parse_variable("NCCL_VERSION=\"2.25.1-1\""),
            Some(("NCCL_VERSION".into(), "2.25.1-1".into()))
        );
        assert_eq!(parse_variable("A=b=c"), Some(("A".into(), "b=c".into())));
        assert_eq!(parse_variable("no equals sign"), None);
        assert_eq!(cuda_version("13000"), "13.0");
        assert_eq!(cuda_version("12080"), "12.8");
        assert_eq!(cuda_version("unknown"), "unknown");
    }
}
