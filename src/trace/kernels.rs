//! The one scan of the kernel table: columnar rows with dense name ids.
//!
//! Window and device filters are pushed into the SQL so that only the rows a command needs
//! are materialised; rows are then ordered by (device, start) so every per-device analysis
//! reads a contiguous slice. Names are resolved through `StringIds` once per distinct id.
//! The launch key of each row (`correlationId` and process) is read only when asked for, so
//! a kernel-only scan reads no more columns than it needs.

use std::collections::HashMap;
use std::ops::Range;

use serde::Serialize;

use super::names::{self, kernel as k};
use super::nvtx::{LaunchKey, LaunchKeys, process_of};
use super::{
    DeviceInventory, Requirement, TableRole, Trace, TraceError, check_timestamp, quote_ident,
};
use std::collections::BTreeMap;

/// Which kernel name to group and match by.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum NameStyle {
    /// Base name (`shortName`), template instances merged.
    #[default]
    Short,
    /// Full name with templates and arguments (`demangledName`).
    Demangled,
}

impl NameStyle {
    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            NameStyle::Short => "short",
            NameStyle::Demangled => "demangled",
        }
    }
}

/// What rows to read: a superset of what the analyses of one command need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelFilter {
    /// Only these devices (None: all).
    pub devices: Option<Vec<i64>>,
    /// Only kernels with `end >= a` and `start <= b`, a superset of both window semantics
    /// (None: all).
    pub bounds: Option<(i64, i64)>,
}

/// Kernel rows in columns, ordered by (device, start, end).
#[derive(Debug, Clone, Default)]
pub struct Kernels {
    /// Start (ns).
    pub start: Vec<i64>,
    /// End (ns).
    pub end: Vec<i64>,
    /// nsys `deviceId`.
    pub device: Vec<i64>,
    /// Stream id.
    pub stream: Vec<i64>,
    /// Dense id of the short name (index into the name table).
    pub short: Vec<u32>,
    /// Dense id of the demangled name.
    pub demangled: Vec<u32>,
    names: Vec<String>,
    nccl: Vec<bool>,
    /// Rows dropped because their timestamps were not collected (0/0) or ran backwards.
    pub skipped_invalid: u64,
    /// The filter the rows were read with.
    pub filter: KernelFilter,
    /// Per-device inventory of the whole table, gathered in the same scan (before filtering).
    pub inventory: Vec<DeviceInventory>,
    /// Whether any valid row of the whole table, filtered out or not, is an NCCL kernel: "the
    /// trace has no NCCL kernels" and "the selection has none" are different findings.
    pub nccl_in_table: bool,
    /// Per kept row, the key of its launch record, when the scan was asked for it
    /// ([`Kernels::load_with_launch_keys`]).
    pub launch_keys: LaunchKeys,
}

impl Kernels {
    /// The columns every load reads.
    pub const REQUIRES: &'static [Requirement] = &[
        Requirement {
            table: TableRole::Kernel,
            columns: &[k::START, k::END, k::DEVICE, k::STREAM, k::SHORT_NAME, k::DEMANGLED_NAME],
        },
        Requirement { table: TableRole::StringIds, columns: &["id", "value"] },
    ];

    /// Reads the kernel table once, with the filter pushed into the scan.
    pub fn load(
        trace: &Trace,
        filter: &KernelFilter,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Kernels, TraceError> {
        Self::scan(trace, filter, false, progress)
    }

    /// Like [`Kernels::load`], and also keeps each kept row's launch key: `correlationId` and
    /// the process of `globalPid`, to join a kernel to the API call that launched it.
    ///
    /// A table without those columns (older exports) loads all the same, with
    /// [`LaunchKeys::Absent`] naming what is missing.
    pub fn load_with_launch_keys(
        trace: &Trace,
        filter: &KernelFilter,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Kernels, TraceError> {
        Self::scan(trace, filter, true, progress)
    }

    fn scan(
        trace: &Trace,
        filter: &KernelFilter,
        with_keys: bool,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Kernels, TraceError> {
        for req in Self::REQUIRES {
            trace.schema().require(req)?;
        }
        let table = trace.kernel_table()?.to_string();
        let has_pid = trace.schema().has_column(&table, k::GLOBAL_PID);
        let has_correlation = trace.schema().has_column(&table, k::CORRELATION_ID);
        // Keys are read only when asked for and only when both columns exist: a kernel-only
        // scan stays as narrow as it was, and an older table without them still loads.
        let read_keys = with_keys && has_pid && has_correlation;
        let mut correlation: Vec<Option<i64>> = Vec::new();
        let mut process: Vec<Option<i64>> = Vec::new();
        // One pass over the whole table: the inventory needs every row, the analyses only the
        // rows inside the filter, which is applied here rather than in a second scan.
        let sql = format!(
            "SELECT start, \"end\", deviceId, streamId, shortName, demangledName, {}{} FROM {}",
            if has_pid { "globalPid" } else { "NULL" },
            if read_keys { ", correlationId" } else { "" },
            quote_ident(&table)
        );
        let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
            table: table.clone(),
            column: column.to_string(),
            detail: e.to_string(),
        };
        let mut out = Kernels { filter: filter.clone(), ..Kernels::default() };
        let mut inventory: BTreeMap<i64, DeviceInventory> = BTreeMap::new();
        let mut ids: HashMap<i64, u32> = HashMap::new();
        let mut raw_ids: Vec<i64> = Vec::new();
        let mut intern = |id: i64| -> u32 {
            *ids.entry(id).or_insert_with(|| {
                raw_ids.push(id);
                (raw_ids.len() - 1) as u32
            })
        };
        // Short-name ids of the rows the filter drops, to tell whether the table has NCCL
        // kernels outside the selection.
        let mut dropped_short: std::collections::HashSet<i64> = std::collections::HashSet::new();
        let keep_device = |d: i64| filter.devices.as_ref().is_none_or(|v| v.contains(&d));
        let conn = trace.conn();
        let mut stmt = conn.prepare(&sql).map_err(TraceError::from_sqlite)?;
        let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
        let mut seen: u64 = 0;
        while let Some(row) = rows.next().map_err(TraceError::from_sqlite)? {
            let start: i64 = row.get(0).map_err(|e| bad(k::START, e))?;
            let end: i64 = row.get(1).map_err(|e| bad(k::END, e))?;
            check_timestamp(&table, k::START, start)?;
            check_timestamp(&table, k::END, end)?;
            let device: i64 = row.get(2).map_err(|e| bad(k::DEVICE, e))?;
            let stream: i64 = row.get(3).map_err(|e| bad(k::STREAM, e))?;
            seen += 1;
            if seen.is_multiple_of(65_536) {
                progress(seen);
            }
            if end < start || (start == 0 && end == 0) {
                out.skipped_invalid += 1;
                continue;
            }
            let inv = DeviceInventory::observe(&mut inventory, device, stream, start, end);
            let pid_raw: Option<i64> = row.get(6).map_err(|e| bad(k::GLOBAL_PID, e))?;
            if let Some(p) = pid_raw.map(|g| (g >> 24) & 0xFF_FFFF)
                && !inv.pids.contains(&p)
            {
                inv.pids.push(p);
            }
            if !keep_device(device) || filter.bounds.is_some_and(|(a, b)| end < a || start > b) {
                dropped_short.insert(row.get(4).map_err(|e| bad(k::SHORT_NAME, e))?);
                continue;
            }
            let short: i64 = row.get(4).map_err(|e| bad(k::SHORT_NAME, e))?;
            let demangled: i64 = row.get(5).map_err(|e| bad(k::DEMANGLED_NAME, e))?;
            out.start.push(start);
            out.end.push(end);
            out.device.push(device);
            out.stream.push(stream);
            out.short.push(intern(short));
            out.demangled.push(intern(demangled));
            if read_keys {
                let c: Option<i64> = row.get(7).map_err(|e| bad(k::CORRELATION_ID, e))?;
                correlation.push(c);
                process.push(pid_raw.map(process_of));
            }
        }
        progress(seen);
        drop(rows);
        drop(stmt);

        let mut lookup = conn
            .prepare(&format!("SELECT value FROM {} WHERE id = ?1", names::STRING_IDS))
            .map_err(TraceError::from_sqlite)?;
        for id in &raw_ids {
            let value: Option<String> = match lookup.query_row([id], |r| r.get(0)) {
                Ok(v) => Some(v),
                Err(rusqlite::Error::QueryReturnedNoRows) => None,
                Err(e) => return Err(TraceError::from_sqlite(e)),
            };
            let value = value.ok_or_else(|| TraceError::BadValue {
                table: table.clone(),
                column: format!("{}/{}", k::SHORT_NAME, k::DEMANGLED_NAME),
                detail: format!("string id {id} has no row in `StringIds`"),
            })?;
            out.nccl.push(value.to_ascii_lowercase().contains("nccl"));
            out.names.push(value);
        }
        out.nccl_in_table = out.short.iter().any(|&i| out.nccl[i as usize]);
        for id in dropped_short.iter().filter(|id| !ids.contains_key(id)) {
            if out.nccl_in_table {
                break;
            }
            let value: Option<String> = match lookup.query_row([id], |r| r.get(0)) {
                Ok(v) => Some(v),
                Err(rusqlite::Error::QueryReturnedNoRows) => None,
                Err(e) => return Err(TraceError::from_sqlite(e)),
            };
            if value.is_some_and(|v| v.to_ascii_lowercase().contains("nccl")) {
                out.nccl_in_table = true;
            }
        }
        out.inventory = inventory
            .into_values()
            .map(|mut d| {
                d.pids.sort_unstable();
                d
            })
            .collect();
        out.launch_keys = match (with_keys, read_keys) {
            (false, _) => LaunchKeys::NotRead,
            (true, true) => LaunchKeys::Read { correlation, process },
            (true, false) => LaunchKeys::Absent {
                missing: [(k::CORRELATION_ID, has_correlation), (k::GLOBAL_PID, has_pid)]
                    .into_iter()
                    .filter(|&(_, has)| !has)
                    .map(|(c, _)| c.to_string())
                    .collect(),
            },
        };
        out.sort();
        Ok(out)
    }

    /// Builds a table from rows, for tests and generators: `(device, stream, start, end, short name)`.
    pub fn from_rows(rows: &[(i64, i64, i64, i64, &str)]) -> Kernels {
        Self::build(rows, None)
    }

    /// Builds a table from rows with their launch keys, for tests: `(device, stream, start,
    /// end, short name)` and, per row, `(process, correlationId)` with the process as
    /// [`process_of`] gives it (None for a NULL column value).
    pub fn from_rows_with_launch_keys(
        rows: &[(i64, i64, i64, i64, &str)],
        keys: &[(Option<i64>, Option<i64>)],
    ) -> Kernels {
        assert_eq!(rows.len(), keys.len(), "one launch key per row");
        Self::build(rows, Some(keys))
    }

    fn build(
        rows: &[(i64, i64, i64, i64, &str)],
        keys: Option<&[(Option<i64>, Option<i64>)]>,
    ) -> Kernels {
        let mut out = Kernels::default();
        if let Some(keys) = keys {
            out.launch_keys = LaunchKeys::Read {
                process: keys.iter().map(|k| k.0).collect(),
                correlation: keys.iter().map(|k| k.1).collect(),
            };
        }
        let mut ids: HashMap<String, u32> = HashMap::new();
        for &(device, stream, start, end, name) in rows {
            let id = *ids.entry(name.to_string()).or_insert_with(|| {
                out.nccl.push(name.to_ascii_lowercase().contains("nccl"));
                out.names.push(name.to_string());
                (out.names.len() - 1) as u32
            });
            out.start.push(start);
            out.end.push(end);
            out.device.push(device);
            out.stream.push(stream);
            out.short.push(id);
            out.demangled.push(id);
        }
        out.sort();
        out.nccl_in_table = out.short.iter().any(|&i| out.nccl[i as usize]);
        let mut inv: BTreeMap<i64, DeviceInventory> = BTreeMap::new();
        for i in 0..out.len() {
            DeviceInventory::observe(
                &mut inv,
                out.device[i],
                out.stream[i],
                out.start[i],
                out.end[i],
            );
        }
        out.inventory = inv.into_values().collect();
        out
    }

    fn sort(&mut self) {
        let mut idx: Vec<usize> = (0..self.start.len()).collect();
        idx.sort_unstable_by_key(|&i| {
            (self.device[i], self.start[i], self.end[i], self.stream[i], self.short[i])
        });
        let permute_i64 = |v: &Vec<i64>| idx.iter().map(|&i| v[i]).collect::<Vec<_>>();
        let permute_u32 = |v: &Vec<u32>| idx.iter().map(|&i| v[i]).collect::<Vec<_>>();
        self.start = permute_i64(&self.start);
        self.end = permute_i64(&self.end);
        self.device = permute_i64(&self.device);
        self.stream = permute_i64(&self.stream);
        self.short = permute_u32(&self.short);
        self.demangled = permute_u32(&self.demangled);
        if let LaunchKeys::Read { correlation, process } = &mut self.launch_keys {
            let permute = |v: &Vec<Option<i64>>| idx.iter().map(|&i| v[i]).collect::<Vec<_>>();
            *correlation = permute(correlation);
            *process = permute(process);
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// The devices present in the rows, ascending.
    pub fn devices(&self) -> Vec<i64> {
        super::devices_of(&self.device)
    }

    /// The contiguous row range of one device.
    pub fn device_rows(&self, device: i64) -> Range<usize> {
        super::device_range(&self.device, device)
    }

    /// Whether row `i` is an NCCL kernel (short name contains `nccl`, any case).
    pub fn is_nccl(&self, i: usize) -> bool {
        self.nccl[self.short[i] as usize]
    }

    /// The name of row `i` in the given style.
    pub fn name(&self, i: usize, style: NameStyle) -> &str {
        &self.names[self.name_id(i, style) as usize]
    }

    /// The dense name id of row `i` in the given style.
    pub fn name_id(&self, i: usize, style: NameStyle) -> u32 {
        match style {
            NameStyle::Short => self.short[i],
            NameStyle::Demangled => self.demangled[i],
        }
    }

    /// The text of a dense name id.
    pub fn name_text(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// The launch key of row `i`: None when the keys were not read, the table lacks the
    /// columns, or the row holds NULL in one of them ([`Kernels::launch_keys`] says which).
    pub fn launch_key(&self, i: usize) -> Option<LaunchKey> {
        match &self.launch_keys {
            LaunchKeys::Read { correlation, process } => {
                Some(LaunchKey { process: process[i]?, correlation: correlation[i]? })
            }
            _ => None,
        }
    }
}
