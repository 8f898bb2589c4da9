//! The one scan of the kernel table: columnar rows with dense name ids.
//!
//! Window and device filters are pushed into the SQL so that only the rows a command needs
//! are materialised; rows are then ordered by (device, start) so every per-device analysis
//! reads a contiguous slice. Names are resolved through `StringIds` once per distinct id.
//! The launch key of each row (`correlationId` and process) is read only when asked for, so
//! a kernel-only scan reads no more columns than it needs.

use std::ops::Range;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use serde::Serialize;

use super::names::{self, kernel as k};
use super::nvtx::{LaunchKey, LaunchKeys, process_of};
use super::remap::Remap;
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
    /// Also every NCCL kernel of any device at any time, beside the rows above: matching the
    /// collectives of every rank over the whole trace reads no other kernel.
    pub nccl_anywhere: bool,
    /// The kept rows whose launch keys a scan with keys reads, as `(devices, bounds)` above
    /// (None: every kept row); the others get none.
    pub keys: Option<RowBox>,
    /// Also the launch keys of every kept NCCL kernel, wherever it is: what ties a collective
    /// to its communicator or process group.
    pub nccl_keys: bool,
}

/// A box of rows: devices (None: all) and bounds as in [`KernelFilter`] (None: all times).
pub type RowBox = (Option<Vec<i64>>, Option<(i64, i64)>);

/// The box that keeps no row.
pub const NO_ROWS: RowBox = (Some(Vec::new()), None);

/// The smallest box that holds both: devices united and sorted (None when either is all),
/// bounds as their hull (None when either is all times); a box that keeps no row adds nothing.
pub fn union_rows(a: RowBox, b: RowBox) -> RowBox {
    let empty = |x: &RowBox| x.0.as_ref().is_some_and(Vec::is_empty);
    if empty(&a) {
        return b;
    }
    if empty(&b) {
        return a;
    }
    let devices = match (a.0, b.0) {
        (Some(mut x), Some(y)) => {
            x.extend(y);
            x.sort_unstable();
            x.dedup();
            Some(x)
        }
        _ => None,
    };
    let bounds = match (a.1, b.1) {
        (Some((p, q)), Some((r, t))) => Some((p.min(r), q.max(t))),
        _ => None,
    };
    (devices, bounds)
}

impl KernelFilter {
    /// Whether a row of `device` over `[start, end]` is in the box of `devices` and `bounds`.
    fn boxed(
        devices: &Option<Vec<i64>>,
        bounds: Option<(i64, i64)>,
        device: i64,
        start: i64,
        end: i64,
    ) -> bool {
        devices.as_ref().is_none_or(|v| v.contains(&device))
            && bounds.is_none_or(|(a, b)| end >= a && start <= b)
    }

    /// Whether a row is in the box of `devices` and `bounds`.
    pub fn in_box(&self, device: i64, start: i64, end: i64) -> bool {
        Self::boxed(&self.devices, self.bounds, device, start, end)
    }

    /// Whether a kept row's launch key is read.
    fn wants_key(&self, device: i64, start: i64, end: i64, nccl: impl FnOnce() -> bool) -> bool {
        self.keys.as_ref().is_none_or(|(d, b)| Self::boxed(d, *b, device, start, end))
            || (self.nccl_keys && nccl())
    }
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
        let conn = trace.conn();
        // The ids of NCCL names (`nccl` in any case, as `LIKE` compares ASCII): to keep NCCL
        // kernels outside the box and to tell whether the table has any, by id in the pass.
        let nccl_ids: HashSet<i64> = {
            let sql = format!("SELECT id FROM {} WHERE value LIKE '%nccl%'", names::STRING_IDS);
            let mut stmt = conn.prepare(&sql).map_err(TraceError::from_sqlite)?;
            stmt.query_map([], |r| r.get(0))
                .map_err(TraceError::from_sqlite)?
                .collect::<Result<_, _>>()
                .map_err(TraceError::from_sqlite)?
        };
        // One pass over the whole table, split by rowid over the cores: the inventory needs
        // every row, the analyses only the rows the filter keeps.
        let sql = format!(
            "SELECT start, \"end\", deviceId, streamId, shortName, demangledName, {}{} FROM {} \
             WHERE ",
            if has_pid { "globalPid" } else { "NULL" },
            if read_keys { ", correlationId" } else { "" },
            quote_ident(&table)
        );
        let parts =
            match direct_scan(trace, &table, has_pid, read_keys, filter, &nccl_ids, progress)? {
                Some(part) => vec![part],
                None => super::split_scan(trace, &table, progress, |conn, range, progress| {
                    scan_part(
                        conn,
                        &format!("{sql}{range}"),
                        &table,
                        filter,
                        read_keys,
                        &nccl_ids,
                        progress,
                    )
                })?,
            };
        let mut out = Kernels { filter: filter.clone(), ..Kernels::default() };
        let mut inventory = InventoryAcc::default();
        let kept: usize = parts.iter().map(|p| p.start.len()).sum();
        let mut short_raw: Vec<i64> = Vec::with_capacity(kept);
        let mut demangled_raw: Vec<i64> = Vec::with_capacity(kept);
        let mut correlation: Vec<Option<i64>> = Vec::new();
        let mut process: Vec<Option<i64>> = Vec::new();
        let mut dropped_short: HashSet<i64> = HashSet::default();
        for part in parts {
            dropped_short.extend(part.dropped_short);
            out.start.extend(part.start);
            out.end.extend(part.end);
            out.device.extend(part.device);
            out.stream.extend(part.stream);
            short_raw.extend(part.short);
            demangled_raw.extend(part.demangled);
            correlation.extend(part.correlation);
            process.extend(part.process);
            out.skipped_invalid += part.skipped_invalid;
            out.nccl_in_table |= part.nccl_in_table;
            inventory.absorb(part.inventory);
        }
        // Dense name ids in order of first use, short before demangled on each row.
        let mut ids: HashMap<i64, u32> = HashMap::default();
        let mut raw_ids: Vec<i64> = Vec::new();
        let mut intern = |id: i64| -> u32 {
            *ids.entry(id).or_insert_with(|| {
                raw_ids.push(id);
                (raw_ids.len() - 1) as u32
            })
        };
        out.short.reserve_exact(kept);
        out.demangled.reserve_exact(kept);
        for (&s, &d) in short_raw.iter().zip(&demangled_raw) {
            out.short.push(intern(s));
            out.demangled.push(intern(d));
        }
        drop((short_raw, demangled_raw));

        let mut lookup = conn
            .prepare(&format!("SELECT value FROM {} WHERE id = ?1", names::STRING_IDS))
            .map_err(TraceError::from_sqlite)?;
        for id in &raw_ids {
            // A NULL string names nothing: the kernel reads as one without a name (the
            // schema probe counts such rows, and `inspect` discloses them), never as a reason
            // to refuse the trace.
            let value: Option<String> =
                match lookup.query_row([id], |r| r.get::<_, Option<String>>(0)) {
                    Ok(v) => Some(v.unwrap_or_default()),
                    Err(rusqlite::Error::QueryReturnedNoRows) => None,
                    Err(e) => return Err(TraceError::from_sqlite(e)),
                };
            let value = value.ok_or_else(|| TraceError::BadValue {
                table: table.clone(),
                column: format!("{}/{}", k::SHORT_NAME, k::DEMANGLED_NAME),
                detail: format!("string id {id} has no row in `StringIds`"),
            })?;
            out.nccl.push(super::is_nccl_name(&value));
            out.names.push(value);
        }
        let mut dropped: Vec<i64> =
            dropped_short.into_iter().filter(|id| !ids.contains_key(id)).collect();
        dropped.sort_unstable();
        for id in dropped {
            match lookup.query_row([id], |_| Ok(())) {
                Ok(()) => {}
                Err(rusqlite::Error::QueryReturnedNoRows) => {
                    return Err(TraceError::BadValue {
                        table: table.clone(),
                        column: k::SHORT_NAME.into(),
                        detail: format!("string id {id} has no row in `StringIds`"),
                    });
                }
                Err(e) => return Err(TraceError::from_sqlite(e)),
            }
        }
        out.inventory = inventory.finish();
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
        let mut ids: HashMap<String, u32> = HashMap::default();
        for &(device, stream, start, end, name) in rows {
            let id = *ids.entry(name.to_string()).or_insert_with(|| {
                out.nccl.push(super::is_nccl_name(name));
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

    /// Joins the tables of the files of a trace set, given in file order, each with its
    /// [`Remap`]: times shifted onto the set's clock, devices renumbered as ranks, the
    /// processes of the launch keys tagged with their file, names re-interned into one table
    /// (equal strings, one id), rows in the order of [`Kernels`] (full ties keep file order).
    ///
    /// `filter` is the set's, stored as given. Counters add up; the inventories of devices
    /// that two files map to one rank are combined (OS pids are kept as they are). The
    /// launch keys are [`LaunchKeys::Read`] when every part read them and
    /// [`LaunchKeys::Absent`], the missing columns united, when any part's table lacks them;
    /// parts that read them mixed with parts that did not is a caller error, taken as
    /// [`LaunchKeys::NotRead`]. No parts give an empty table.
    pub fn merge(parts: Vec<(Kernels, Remap)>, filter: KernelFilter) -> Kernels {
        let mut out = Kernels { filter, ..Kernels::default() };
        out.launch_keys = merged_key_kind(parts.iter().map(|(p, _)| &p.launch_keys));
        let mut ids: HashMap<String, u32> = HashMap::default();
        let mut inventory: BTreeMap<i64, DeviceInventory> = BTreeMap::new();
        for (part, remap) in parts {
            let local: Vec<u32> = part
                .names
                .into_iter()
                .map(|name| match ids.get(&name) {
                    Some(&id) => id,
                    None => {
                        out.nccl.push(super::is_nccl_name(&name));
                        out.names.push(name.clone());
                        let id = (out.names.len() - 1) as u32;
                        ids.insert(name, id);
                        id
                    }
                })
                .collect();
            out.start.extend(part.start.iter().map(|&t| remap.time(t)));
            out.end.extend(part.end.iter().map(|&t| remap.time(t)));
            out.device.extend(part.device.iter().map(|&d| remap.device(d)));
            out.stream.extend(part.stream);
            out.short.extend(part.short.iter().map(|&i| local[i as usize]));
            out.demangled.extend(part.demangled.iter().map(|&i| local[i as usize]));
            out.skipped_invalid = out.skipped_invalid.saturating_add(part.skipped_invalid);
            out.nccl_in_table |= part.nccl_in_table;
            for d in part.inventory {
                let d = DeviceInventory {
                    device: remap.device(d.device),
                    first_start_ns: remap.time(d.first_start_ns),
                    last_end_ns: remap.time(d.last_end_ns),
                    ..d
                };
                match inventory.get_mut(&d.device) {
                    Some(into) => combine(into, d),
                    None => {
                        inventory.insert(d.device, d);
                    }
                }
            }
            if let (
                LaunchKeys::Read { correlation, process },
                LaunchKeys::Read { correlation: c, process: p },
            ) = (&mut out.launch_keys, part.launch_keys)
            {
                correlation.extend(c);
                process.extend(p.into_iter().map(|p| p.map(|p| remap.process(p))));
            }
        }
        out.inventory = inventory.into_values().collect();
        out.sort();
        out
    }

    /// Orders the rows by (device, start, end, stream, short name id), stably: rows tied on
    /// the whole key keep their order, so that merging the files of a set in one step or in
    /// several gives the same rows. Rows are bucketed by device (a stable counting sort) and
    /// each device's rows sorted only when they are not in order already, as a table written
    /// in time order is.
    fn sort(&mut self) {
        let n = self.start.len();
        let mut devices: Vec<i64> = Vec::new();
        let mut last: Option<i64> = None;
        for &d in &self.device {
            if last != Some(d) {
                if let Err(at) = devices.binary_search(&d) {
                    devices.insert(at, d);
                }
                last = Some(d);
            }
        }
        let slot = |d: i64| devices.binary_search(&d).expect("a listed device");
        let mut offsets = vec![0usize; devices.len() + 1];
        for &d in &self.device {
            offsets[slot(d) + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut idx: Vec<u32> = vec![0; n];
        let mut next = offsets.clone();
        for (i, &d) in self.device.iter().enumerate() {
            let s = slot(d);
            idx[next[s]] = i as u32;
            next[s] += 1;
        }
        let key = |i: u32| {
            let i = i as usize;
            (self.start[i], self.end[i], self.stream[i], self.short[i])
        };
        for w in offsets.windows(2) {
            let rows = &mut idx[w[0]..w[1]];
            if !rows.windows(2).all(|p| key(p[0]) <= key(p[1])) {
                rows.sort_by_key(|&i| key(i));
            }
        }
        if idx.iter().enumerate().all(|(p, &i)| p == i as usize) {
            return;
        }
        fn permute<T: Copy>(v: &mut Vec<T>, idx: &[u32]) {
            *v = idx.iter().map(|&i| v[i as usize]).collect();
        }
        permute(&mut self.start, &idx);
        permute(&mut self.end, &idx);
        permute(&mut self.device, &idx);
        permute(&mut self.stream, &idx);
        permute(&mut self.short, &idx);
        permute(&mut self.demangled, &idx);
        if let LaunchKeys::Read { correlation, process } = &mut self.launch_keys {
            permute(correlation, &idx);
            permute(process, &idx);
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

    /// The number of dense name ids.
    pub fn name_count(&self) -> usize {
        self.names.len()
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

/// What the launch keys of merged parts become, with no keys yet: any part's table without
/// the columns makes them absent (the missing columns united, in order of first mention);
/// otherwise read when every part read them, else not read.
fn merged_key_kind<'a>(keys: impl Iterator<Item = &'a LaunchKeys> + Clone) -> LaunchKeys {
    let mut missing: Option<Vec<String>> = None;
    for k in keys.clone() {
        if let LaunchKeys::Absent { missing: m } = k {
            let all = missing.get_or_insert_with(Vec::new);
            for c in m {
                if !all.contains(c) {
                    all.push(c.clone());
                }
            }
        }
    }
    if let Some(missing) = missing {
        return LaunchKeys::Absent { missing };
    }
    let (mut read, mut not_read) = (0usize, 0usize);
    for k in keys {
        match k {
            LaunchKeys::Read { .. } => read += 1,
            _ => not_read += 1,
        }
    }
    debug_assert!(read == 0 || not_read == 0, "merging kernels with and without launch keys");
    if read > 0 && not_read == 0 {
        LaunchKeys::Read { correlation: Vec::new(), process: Vec::new() }
    } else {
        LaunchKeys::NotRead
    }
}

/// Adds the inventory of a device of another file that maps to the same rank.
fn combine(into: &mut DeviceInventory, d: DeviceInventory) {
    into.kernels = into.kernels.saturating_add(d.kernels);
    into.first_start_ns = into.first_start_ns.min(d.first_start_ns);
    into.last_end_ns = into.last_end_ns.max(d.last_end_ns);
    for (stream, n) in d.streams {
        let count = into.streams.entry(stream).or_default();
        *count = count.saturating_add(n);
    }
    into.pids.extend(d.pids);
    into.pids.sort_unstable();
    into.pids.dedup();
}

/// The rows of one rowid range of the kernel table, name ids still raw.
#[derive(Default)]
struct Part {
    start: Vec<i64>,
    end: Vec<i64>,
    device: Vec<i64>,
    stream: Vec<i64>,
    short: Vec<i64>,
    demangled: Vec<i64>,
    correlation: Vec<Option<i64>>,
    process: Vec<Option<i64>>,
    inventory: InventoryAcc,
    skipped_invalid: u64,
    nccl_in_table: bool,
    /// With NCCL kernels kept anywhere, the short-name ids of the rows dropped: each must name
    /// a string, or a dropped row could be an NCCL kernel whose name is lost.
    dropped_short: HashSet<i64>,
}

/// One row of the kernel scan, from SQLite or from a Parquet batch: start, end, deviceId,
/// streamId, shortName, demangledName, globalPid (or NULL), and correlationId when the keys
/// are read, by position.
trait ScanRow {
    /// An integer value; a NULL (or, from SQLite, any other type) gives `Row::get`'s error.
    fn int(&self, i: usize) -> rusqlite::Result<i64>;
    /// An integer value or NULL.
    fn opt(&self, i: usize) -> rusqlite::Result<Option<i64>>;
}

impl ScanRow for rusqlite::Row<'_> {
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        int(self, i)
    }

    fn opt(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        self.get(i)
    }
}

/// Scans one range of the kernel table (`sql` selects start, end, deviceId, streamId,
/// shortName, demangledName, globalPid or NULL, and correlationId when `read_keys`).
fn scan_part(
    conn: &rusqlite::Connection,
    sql: &str,
    table: &str,
    filter: &KernelFilter,
    read_keys: bool,
    nccl_ids: &HashSet<i64>,
    mut progress: Option<(&mut dyn FnMut(u64), u64)>,
) -> Result<Part, TraceError> {
    let mut out = Part::default();
    let mut stmt = conn.prepare(sql).map_err(TraceError::from_sqlite)?;
    let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
    let mut seen: u64 = 0;
    while let Some(row) = rows.next().map_err(TraceError::from_sqlite)? {
        out.observe(row, table, filter, read_keys, nccl_ids)?;
        seen += 1;
        if seen.is_multiple_of(65_536)
            && let Some((report, parts)) = progress.as_mut()
        {
            report(seen * *parts);
        }
    }
    if let Some((report, parts)) = progress.as_mut() {
        report(seen * *parts);
    }
    Ok(out)
}

impl Part {
    /// Reads one row of the table: every valid row into the inventory, the rows the filter
    /// keeps into the columns.
    fn observe(
        &mut self,
        row: &impl ScanRow,
        table: &str,
        filter: &KernelFilter,
        read_keys: bool,
        nccl_ids: &HashSet<i64>,
    ) -> Result<(), TraceError> {
        let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
            table: table.to_string(),
            column: column.to_string(),
            detail: e.to_string(),
        };
        let out = self;
        let start: i64 = row.int(0).map_err(|e| bad(k::START, e))?;
        let end: i64 = row.int(1).map_err(|e| bad(k::END, e))?;
        check_timestamp(table, k::START, start)?;
        check_timestamp(table, k::END, end)?;
        let device: i64 = row.int(2).map_err(|e| bad(k::DEVICE, e))?;
        let stream: i64 = row.int(3).map_err(|e| bad(k::STREAM, e))?;
        if end < start || (start == 0 && end == 0) {
            out.skipped_invalid += 1;
            return Ok(());
        }
        let short: i64 = row.int(4).map_err(|e| bad(k::SHORT_NAME, e))?;
        let pid_raw: Option<i64> = row.opt(6).map_err(|e| bad(k::GLOBAL_PID, e))?;
        out.inventory.observe(device, stream, start, end, pid_raw.map(|g| (g >> 24) & 0xFF_FFFF));
        let nccl = (filter.nccl_anywhere || !out.nccl_in_table) && nccl_ids.contains(&short);
        out.nccl_in_table |= nccl;
        if !(filter.in_box(device, start, end) || (filter.nccl_anywhere && nccl)) {
            if filter.nccl_anywhere {
                out.dropped_short.insert(short);
            }
            return Ok(());
        }
        let demangled: i64 = row.int(5).map_err(|e| bad(k::DEMANGLED_NAME, e))?;
        out.start.push(start);
        out.end.push(end);
        out.device.push(device);
        out.stream.push(stream);
        out.short.push(short);
        out.demangled.push(demangled);
        if read_keys {
            if filter.wants_key(device, start, end, || nccl_ids.contains(&short)) {
                let c: Option<i64> = row.opt(7).map_err(|e| bad(k::CORRELATION_ID, e))?;
                out.correlation.push(c);
                out.process.push(pid_raw.map(process_of));
            } else {
                out.correlation.push(None);
                out.process.push(None);
            }
        }
        Ok(())
    }
}

/// A row of a batch of integer columns read straight from a Parquet file, in the order of
/// the scan's select; a column the select reads as NULL is None.
#[cfg(feature = "columnar")]
pub(crate) struct BatchRow<'a> {
    /// The columns.
    pub(crate) columns: &'a [Option<arrow_array::Int64Array>],
    /// Their names, as SQLite names the columns of the select.
    pub(crate) names: &'a [&'a str],
    /// The row.
    pub(crate) row: usize,
}

#[cfg(feature = "columnar")]
impl BatchRow<'_> {
    /// The value of column `i`, or None for NULL.
    pub(crate) fn value(&self, i: usize) -> Option<i64> {
        use arrow_array::Array;
        self.columns[i].as_ref().filter(|a| a.is_valid(self.row)).map(|a| a.value(self.row))
    }

    /// The value of column `i`, or the error `Row::get` gives for a NULL.
    pub(crate) fn not_null(&self, i: usize) -> rusqlite::Result<i64> {
        self.value(i).ok_or_else(|| {
            rusqlite::Error::InvalidColumnType(
                i,
                self.names[i].to_string(),
                rusqlite::types::Type::Null,
            )
        })
    }
}

#[cfg(feature = "columnar")]
impl ScanRow for BatchRow<'_> {
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        self.not_null(i)
    }

    fn opt(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        Ok(self.value(i))
    }
}

/// For a columnar folder whose kernel table is not read into its database: the scan of
/// [`scan_part`] over the table's Parquet file, straight into the columns, rows in file order
/// (the order the database would hold them in). None when the table is in the database, or
/// one of its columns is not an integer column: the scan then reads it through SQLite.
#[cfg(feature = "columnar")]
fn direct_scan(
    trace: &Trace,
    table: &str,
    has_pid: bool,
    read_keys: bool,
    filter: &KernelFilter,
    nccl_ids: &HashSet<i64>,
    progress: &mut dyn FnMut(u64),
) -> Result<Option<Part>, TraceError> {
    let Some(path) = trace.unloaded_file(table) else { return Ok(None) };
    let mut names = vec![k::START, k::END, k::DEVICE, k::STREAM, k::SHORT_NAME, k::DEMANGLED_NAME];
    names.push(if has_pid { k::GLOBAL_PID } else { "NULL" });
    if read_keys {
        names.push(k::CORRELATION_ID);
    }
    let asked: Vec<Option<&str>> =
        names.iter().enumerate().map(|(i, &c)| (i != 6 || has_pid).then_some(c)).collect();
    let Some(mut columns) = super::columnar::IntColumns::open(table, &path, &asked)? else {
        return Ok(None);
    };
    let mut out = Part::default();
    let mut seen: u64 = 0;
    while let Some(batch) = columns.next_batch()? {
        let rows = batch.iter().flatten().map(|a| a.len()).next().unwrap_or(0);
        for row in 0..rows {
            let r = BatchRow { columns: &batch, names: &names, row };
            out.observe(&r, table, filter, read_keys, nccl_ids)?;
        }
        seen += rows as u64;
        progress(seen);
    }
    Ok(Some(out))
}

#[cfg(not(feature = "columnar"))]
fn direct_scan(
    _: &Trace,
    _: &str,
    _: bool,
    _: bool,
    _: &KernelFilter,
    _: &HashSet<i64>,
    _: &mut dyn FnMut(u64),
) -> Result<Option<Part>, TraceError> {
    Ok(None)
}

/// An integer column of a row, read without the checks `Row::get` repeats on every row (the
/// column index is the scan's own); any other type gives `Row::get`'s error.
fn int(row: &rusqlite::Row, i: usize) -> rusqlite::Result<i64> {
    match row.get_ref_unwrap(i) {
        rusqlite::types::ValueRef::Integer(v) => Ok(v),
        _ => row.get(i),
    }
}

/// The per-device inventory gathered in a scan: devices in a small list (a trace has a few),
/// the last one looked up first.
#[derive(Default)]
struct InventoryAcc {
    devices: Vec<DeviceInventory>,
    last: usize,
}

impl InventoryAcc {
    fn observe(&mut self, device: i64, stream: i64, start: i64, end: i64, pid: Option<i64>) {
        if self.devices.get(self.last).is_none_or(|d| d.device != device) {
            self.last = match self.devices.iter().position(|d| d.device == device) {
                Some(i) => i,
                None => {
                    self.devices.push(DeviceInventory::new(device, start, end));
                    self.devices.len() - 1
                }
            };
        }
        let d = &mut self.devices[self.last];
        d.count(stream, start, end);
        if let Some(p) = pid
            && !d.pids.contains(&p)
        {
            d.pids.push(p);
        }
    }

    /// Adds another range's inventory.
    fn absorb(&mut self, other: InventoryAcc) {
        for o in other.devices {
            match self.devices.iter_mut().find(|d| d.device == o.device) {
                Some(d) => combine(d, o),
                None => self.devices.push(o),
            }
        }
    }

    /// The inventory by device, ascending, processes sorted.
    fn finish(mut self) -> Vec<DeviceInventory> {
        for d in &mut self.devices {
            d.pids.sort_unstable();
        }
        self.devices.sort_by_key(|d| d.device);
        self.devices
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::nvtx::Launches;

    /// Every field, private ones included (the inventory has no `PartialEq`).
    fn assert_same(a: &Kernels, b: &Kernels) {
        assert_eq!(
            (&a.start, &a.end, &a.device, &a.stream),
            (&b.start, &b.end, &b.device, &b.stream)
        );
        assert_eq!((&a.short, &a.demangled), (&b.short, &b.demangled));
        assert_eq!((&a.names, &a.nccl), (&b.names, &b.nccl));
        assert_eq!((a.skipped_invalid, &a.filter), (b.skipped_invalid, &b.filter));
        assert_eq!((a.nccl_in_table, &a.launch_keys), (b.nccl_in_table, &b.launch_keys));
        let inv = |k: &Kernels| {
            k.inventory
                .iter()
                .map(|d| {
                    (
                        d.device,
                        d.kernels,
                        d.first_start_ns,
                        d.last_end_ns,
                        d.streams.clone(),
                        d.pids.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(inv(a), inv(b));
    }

    /// A device's inventory: (device, kernels, first, last, (stream, kernels), pids).
    type InventoryRow = (i64, i64, i64, i64, Vec<(i64, i64)>, Vec<i64>);

    /// The process of the kernels of both files: one pid (4242) with the same hardware bits.
    const PROCESS: i64 = (1 << 32) | 4242;

    /// File A: devices 0 and 1, launches 1-3 of [`PROCESS`].
    fn part_a() -> Kernels {
        let mut a = Kernels::from_rows_with_launch_keys(
            &[
                (0, 7, 100, 150, "gemm"),
                (0, 7, 200, 260, "ncclAllReduce"),
                (1, 9, 120, 130, "gemm"),
            ],
            &[(Some(PROCESS), Some(1)), (Some(PROCESS), Some(2)), (Some(PROCESS), Some(3))],
        );
        a.skipped_invalid = 2;
        a.inventory[0].pids = vec![4242];
        a
    }

    /// File B: device 0 too, launches 1-2 of the same process key.
    fn part_b() -> Kernels {
        let mut b = Kernels::from_rows_with_launch_keys(
            &[(0, 3, 60, 90, "softmax"), (0, 3, 10, 40, "ncclAllReduce")],
            &[(Some(PROCESS), Some(2)), (Some(PROCESS), Some(1))],
        );
        b.skipped_invalid = 3;
        b.inventory[0].pids = vec![4242];
        b
    }

    fn remap_a() -> Remap {
        Remap { shift_ns: 1000, devices: BTreeMap::from([(0, 1), (1, 0)]), file_tag: 1 }
    }

    fn remap_b() -> Remap {
        Remap { shift_ns: 1050, devices: BTreeMap::from([(0, 2)]), file_tag: 2 }
    }

    #[test]
    fn merging_one_part_with_the_identity_gives_it_back() {
        let a = part_a();
        let m = Kernels::merge(vec![(a.clone(), Remap::identity())], a.filter.clone());
        assert_same(&m, &a);
        let plain = Kernels::from_rows(&[(3, 1, 5, 6, "x"), (3, 1, 5, 6, "x"), (2, 1, 9, 9, "y")]);
        let m = Kernels::merge(vec![(plain.clone(), Remap::identity())], KernelFilter::default());
        assert_same(&m, &plain);
        assert_eq!(m.launch_keys, LaunchKeys::NotRead);
    }

    #[test]
    fn two_files_sharing_a_pid_and_a_device_id_stay_apart() {
        let f = KernelFilter { devices: None, bounds: Some((0, 5000)), ..Default::default() };
        let m = Kernels::merge(vec![(part_a(), remap_a()), (part_b(), remap_b())], f.clone());
        // A's device 1 is rank 0, its device 0 rank 1; B's device 0 is rank 2.
        assert_eq!(m.device, [0, 1, 1, 2, 2]);
        assert_eq!(m.start, [1120, 1100, 1200, 1060, 1110]);
        assert_eq!(m.end, [1130, 1150, 1260, 1090, 1140]);
        assert_eq!(m.stream, [9, 7, 7, 3, 3]);
        let names: Vec<&str> = (0..m.len()).map(|i| m.name(i, NameStyle::Short)).collect();
        assert_eq!(names, ["gemm", "gemm", "ncclAllReduce", "ncclAllReduce", "softmax"]);
        // One id per string across the files: A's names first, then B's new one.
        assert_eq!(m.short, [0, 0, 1, 1, 2]);
        assert_eq!(m.demangled, m.short);
        assert_eq!((m.name_text(1), m.name_text(2)), ("ncclAllReduce", "softmax"));
        let nccl: Vec<bool> = (0..m.len()).map(|i| m.is_nccl(i)).collect();
        assert_eq!(nccl, [false, false, true, true, false]);
        assert!(m.nccl_in_table);
        assert_eq!(m.skipped_invalid, 5);
        assert_eq!(m.filter, f);
        assert_eq!(m.devices(), [0, 1, 2]);
        assert_eq!(m.device_rows(1), 1..3);
        let (ta, tb) = ((1 << 24) | 4242, (2 << 24) | 4242);
        let keys: Vec<Option<(i64, i64)>> =
            (0..m.len()).map(|i| m.launch_key(i).map(|k| (k.process, k.correlation))).collect();
        assert_eq!(
            keys,
            [Some((ta, 3)), Some((ta, 1)), Some((ta, 2)), Some((tb, 1)), Some((tb, 2))]
        );
        let inv: Vec<InventoryRow> = m
            .inventory
            .iter()
            .map(|d| {
                let streams = d.streams.iter().map(|(&s, &n)| (s, n)).collect();
                (d.device, d.kernels, d.first_start_ns, d.last_end_ns, streams, d.pids.clone())
            })
            .collect();
        assert_eq!(
            inv,
            [
                (0, 1, 1120, 1130, vec![(9, 1)], vec![]),
                (1, 2, 1100, 1260, vec![(7, 2)], vec![4242]),
                (2, 2, 1060, 1140, vec![(3, 2)], vec![4242]),
            ]
        );

        // The launches of both files, merged with the same remaps: each kernel finds its own.
        let (ga, gb) = ((1 << 56) | (4242 << 24) | 17, (1 << 56) | (4242 << 24) | 99);
        let la = Launches::from_rows(&[(ga, 1, 90, 95), (ga, 3, 110, 112)]);
        let lb = Launches::from_rows(&[(gb, 1, 5, 8), (gb, 2, 20, 30)]);
        let l = Launches::merge(vec![(la, remap_a()), (lb, remap_b())]);
        let found = |row: usize| m.launch_key(row).and_then(|k| l.find(k)).map(|i| l.start[i]);
        // Rank 1's gemm is A's launch 1 (90 + 1000); rank 2's first kernel B's (5 + 1050).
        assert_eq!(found(1), Some(1090));
        assert_eq!(found(0), Some(1110));
        assert_eq!(found(3), Some(1055));
        assert_eq!(found(4), Some(1070));
        // A has no launch 2: B's launch 2, same pid and correlation id, is not taken for it.
        assert_eq!(found(2), None);
        assert_eq!(l.find(LaunchKey { process: PROCESS, correlation: 1 }), None);
    }

    #[test]
    fn merging_in_steps_gives_the_rows_of_one_merge() {
        let c = Kernels::from_rows_with_launch_keys(
            &[(5, 1, 0, 10, "gemm"), (5, 1, 0, 10, "layernorm")],
            &[(Some(PROCESS), Some(1)), (Some(PROCESS), None)],
        );
        let remap_c = Remap { shift_ns: 1100, devices: BTreeMap::from([(5, 1)]), file_tag: 3 };
        let f = KernelFilter::default();
        let ab = Kernels::merge(vec![(part_a(), remap_a()), (part_b(), remap_b())], f.clone());
        let stepwise =
            Kernels::merge(vec![(ab, Remap::identity()), (c.clone(), remap_c.clone())], f.clone());
        let once = Kernels::merge(
            vec![(part_a(), remap_a()), (part_b(), remap_b()), (c, remap_c)],
            f.clone(),
        );
        assert_same(&stepwise, &once);
        // C's rows join rank 1 at 1100-1110, before A's gemm there (ties broken by name id).
        assert_eq!(once.device, [0, 1, 1, 1, 1, 2, 2]);
        assert_eq!(once.start, [1120, 1100, 1100, 1100, 1200, 1060, 1110]);
        let names: Vec<&str> = (0..once.len()).map(|i| once.name(i, NameStyle::Short)).collect();
        assert_eq!(
            names,
            ["gemm", "gemm", "layernorm", "gemm", "ncclAllReduce", "ncclAllReduce", "softmax"]
        );
        assert_eq!(once.launch_key(2), None);
        assert_eq!(
            once.launch_key(1),
            Some(LaunchKey { process: (3 << 24) | 4242, correlation: 1 })
        );
        // C's device 5 and A's device 0 share rank 1: one combined entry.
        let d = &once.inventory[1];
        assert_eq!((d.device, d.kernels, d.first_start_ns, d.last_end_ns), (1, 4, 1100, 1260));
        assert_eq!(d.streams, BTreeMap::from([(1, 2), (7, 2)]));
        assert_eq!(d.pids, [4242]);
    }

    #[test]
    fn launch_keys_absent_in_any_part_are_absent_and_not_read_stays_not_read() {
        let mut a = part_a();
        a.launch_keys = LaunchKeys::Absent { missing: vec!["correlationId".into()] };
        let mut b = part_b();
        b.launch_keys = LaunchKeys::Absent { missing: vec!["globalPid".into()] };
        let mut c = part_b();
        c.launch_keys = LaunchKeys::Absent { missing: vec!["correlationId".into()] };
        let parts = vec![
            (a, remap_a()),
            (part_b(), remap_b()),
            (b, Remap::identity()),
            (c, Remap::identity()),
        ];
        let m = Kernels::merge(parts, KernelFilter::default());
        assert_eq!(
            m.launch_keys,
            LaunchKeys::Absent { missing: vec!["correlationId".into(), "globalPid".into()] }
        );
        assert_eq!(m.launch_key(0), None);
        let plain = |name| Kernels::from_rows(&[(0, 0, 1, 2, name)]);
        let m = Kernels::merge(
            vec![(plain("a"), Remap::identity()), (plain("b"), Remap::identity())],
            KernelFilter::default(),
        );
        assert_eq!(m.launch_keys, LaunchKeys::NotRead);
        assert!(!m.nccl_in_table);
        // Same device, same rank: one entry, counts added.
        assert_eq!(m.inventory.len(), 1);
        assert_eq!((m.inventory[0].kernels, m.inventory[0].streams[&0]), (2, 2));
        let empty = Kernels::merge(Vec::new(), KernelFilter::default());
        assert!(empty.is_empty() && empty.inventory.is_empty());
        assert_eq!(empty.launch_keys, LaunchKeys::NotRead);
    }

    fn fixture(name: &str) -> Trace {
        Trace::open(std::path::Path::new(&format!(
            "{}/fixtures/{name}",
            env!("CARGO_MANIFEST_DIR")
        )))
        .unwrap()
    }

    /// Reading a table in rowid ranges on several connections gives the rows, names,
    /// inventory and launch keys of one pass over it, for every filter.
    #[test]
    fn a_split_scan_equals_one_pass() {
        let filters = [
            KernelFilter::default(),
            KernelFilter { devices: Some(vec![1]), ..Default::default() },
            KernelFilter { devices: Some(vec![]), nccl_anywhere: true, ..Default::default() },
            KernelFilter {
                devices: Some(vec![0]),
                bounds: Some((0, i64::MAX / 4)),
                nccl_anywhere: true,
                keys: Some((Some(vec![0]), None)),
                nccl_keys: false,
            },
            // Every device in a window, with the launch keys of its NCCL kernels only.
            KernelFilter {
                bounds: Some((0, i64::MAX / 4)),
                nccl_anywhere: true,
                keys: Some(NO_ROWS),
                nccl_keys: true,
                ..Default::default()
            },
        ];
        for name in [
            "day26/megatron.sqlite",
            "nsys-ai/h100_2gpu_1s.sqlite",
            "nsys-ai/mfu_2gpu_before.sqlite",
            "legacy/mordred_report1_2021.sqlite",
        ] {
            let trace = fixture(name);
            for f in &filters {
                let whole = Kernels::load_with_launch_keys(&trace, f, &mut |_| {}).unwrap();
                for parts in [2, 3, 7] {
                    let split = crate::trace::with_split(1, parts, || {
                        Kernels::load_with_launch_keys(&trace, f, &mut |_| {}).unwrap()
                    });
                    assert_same(&split, &whole);
                    assert_eq!(
                        format!("{:?}", split.inventory),
                        format!("{:?}", whole.inventory),
                        "{name} {parts} parts"
                    );
                    assert_eq!(split.names, whole.names, "{name}");
                    assert_eq!(split.skipped_invalid, whole.skipped_invalid, "{name}");
                }
            }
        }
    }

    /// NCCL kernels anywhere: every row whose short name holds `nccl` in any case, by SQL over
    /// the fixture, and no other row when the box is empty; keys only inside the key box.
    #[test]
    fn nccl_anywhere_keeps_exactly_the_nccl_kernels_and_keys_only_in_their_box() {
        let trace = fixture("day26/megatron.sqlite");
        let (n, sum): (i64, i64) = trace
            .conn()
            .query_row(
                "SELECT count(*), sum(k.\"end\" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k \
                 JOIN StringIds s ON s.id = k.shortName WHERE lower(s.value) LIKE '%nccl%' \
                 AND NOT (k.start = 0 AND k.\"end\" = 0) AND k.\"end\" >= k.start",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert!(n > 0);
        let f = KernelFilter { devices: Some(vec![]), nccl_anywhere: true, ..Default::default() };
        let k = Kernels::load(&trace, &f, &mut |_| {}).unwrap();
        assert_eq!(k.len() as i64, n);
        assert!((0..k.len()).all(|i| k.is_nccl(i)));
        assert_eq!((0..k.len()).map(|i| k.end[i] - k.start[i]).sum::<i64>(), sum);
        assert!(k.nccl_in_table);
        // The inventory still counts every row.
        let all: i64 = trace
            .conn()
            .query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            k.inventory.iter().map(|d| d.kernels).sum::<i64>() + k.skipped_invalid as i64,
            all
        );

        let f = KernelFilter { keys: Some((Some(vec![4]), None)), ..Default::default() };
        let k = Kernels::load_with_launch_keys(&trace, &f, &mut |_| {}).unwrap();
        for i in 0..k.len() {
            assert_eq!(k.launch_key(i).is_some(), k.device[i] == 4, "row {i}");
        }

        // The keys of NCCL kernels alone, whatever else is kept: as many as SQL counts (every
        // NCCL kernel of the fixture has a correlation id and a process).
        let f = KernelFilter { keys: Some(NO_ROWS), nccl_keys: true, ..Default::default() };
        let k = Kernels::load_with_launch_keys(&trace, &f, &mut |_| {}).unwrap();
        assert!(k.len() as i64 > n);
        let keyed = (0..k.len()).filter(|&i| k.launch_key(i).is_some()).count();
        assert_eq!(keyed as i64, n);
        assert!((0..k.len()).all(|i| k.launch_key(i).is_some() == k.is_nccl(i)));
    }
}
