//! The one scan of the memcpy and memset tables: columnar rows with their copy kind.
//!
//! Each table is read once; the device and bounds filter of the kernel scan is evaluated by
//! SQLite in that pass, which also gathers the per-device inventory of the whole tables. Both
//! tables are created lazily by nsys, so an absent table is a finding (recorded), not an error;
//! a present table without a needed column is an error naming both. Computes no metric.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use serde::{Serialize, Serializer};

use super::names::{self, copy as c, enums};
use super::remap::Remap;
use super::{
    KernelFilter, Requirement, TableRole, Trace, TraceError, check_timestamp, quote_ident,
};

/// What a row of the memcpy or memset table did.
///
/// Memcpy rows carry a `copyKind` (`ENUM_CUDA_MEMCPY_OPER`); memset rows are one kind of their
/// own. The export's enum table names each code (`CUDA_MEMCPY_KIND_UVM_HTOD`), and that name
/// decides the kind; without the table, the codes of schema 3.1.2-3.25.0 do. Codes without a
/// variant (0 "Unknown", anything newer) are kept apart by their code in
/// [`CopyKind::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyKind {
    /// Host to device (`copyKind` 1).
    HtoD,
    /// Device to host (2).
    DtoH,
    /// Device to device on one GPU (8).
    DtoD,
    /// Host to host (9).
    HtoH,
    /// Peer to peer between GPUs (10).
    PtoP,
    /// Host to CUDA array (3).
    HtoA,
    /// CUDA array to host (4).
    AtoH,
    /// Array to array (5).
    AtoA,
    /// Array to device (6).
    AtoD,
    /// Device to array (7).
    DtoA,
    /// Unified memory migrated host to device (11).
    UnifiedHtoD,
    /// Unified memory migrated device to host (12).
    UnifiedDtoH,
    /// Unified memory migrated device to device (13).
    UnifiedDtoD,
    /// A row of the memset table.
    Memset,
    /// Any other `copyKind` code, kept as written.
    Unknown(i64),
}

/// `copyKind` labels as `ENUM_CUDA_MEMCPY_OPER` spells them (identical in schema 3.1.2 and
/// 3.25.0), for exports that lack the table (2021 era).
const BUILT_IN_LABELS: &[(i64, &str)] = &[
    (0, "Unknown"),
    (1, "Host-to-Device"),
    (2, "Device-to-Host"),
    (3, "Host-to-Array"),
    (4, "Array-to-Host"),
    (5, "Array-to-Array"),
    (6, "Array-to-Device"),
    (7, "Device-to-Array"),
    (8, "Device-to-Device"),
    (9, "Host-to-Host"),
    (10, "Peer-to-Peer"),
    (11, "Unified Host-to-Device"),
    (12, "Unified Device-to-Host"),
    (13, "Unified Device-to-Device"),
];

/// The label of memset rows (nsys prints them as `[CUDA memset]`).
const MEMSET_LABEL: &str = "Memset";

impl CopyKind {
    /// The kind of a memcpy row's `copyKind` code.
    pub fn from_code(code: i64) -> CopyKind {
        match code {
            1 => CopyKind::HtoD,
            2 => CopyKind::DtoH,
            3 => CopyKind::HtoA,
            4 => CopyKind::AtoH,
            5 => CopyKind::AtoA,
            6 => CopyKind::AtoD,
            7 => CopyKind::DtoA,
            8 => CopyKind::DtoD,
            9 => CopyKind::HtoH,
            10 => CopyKind::PtoP,
            11 => CopyKind::UnifiedHtoD,
            12 => CopyKind::UnifiedDtoH,
            13 => CopyKind::UnifiedDtoD,
            n => CopyKind::Unknown(n),
        }
    }

    /// The kind an export's enum table names (`CUDA_MEMCPY_KIND_UVM_HTOD`), if it is one this
    /// program knows.
    pub fn from_enum_name(name: &str) -> Option<CopyKind> {
        Some(match name.trim().strip_prefix("CUDA_MEMCPY_KIND_")? {
            "HTOD" => CopyKind::HtoD,
            "DTOH" => CopyKind::DtoH,
            "HTOA" => CopyKind::HtoA,
            "ATOH" => CopyKind::AtoH,
            "ATOA" => CopyKind::AtoA,
            "ATOD" => CopyKind::AtoD,
            "DTOA" => CopyKind::DtoA,
            "DTOD" => CopyKind::DtoD,
            "HTOH" => CopyKind::HtoH,
            "PTOP" => CopyKind::PtoP,
            "UVM_HTOD" => CopyKind::UnifiedHtoD,
            "UVM_DTOH" => CopyKind::UnifiedDtoH,
            "UVM_DTOD" => CopyKind::UnifiedDtoD,
            _ => return None,
        })
    }

    /// Whether it is a row of the memcpy table (every kind but memset).
    pub fn is_memcpy(self) -> bool {
        self != CopyKind::Memset
    }

    /// The `copyKind` code (None for memset).
    pub fn code(self) -> Option<i64> {
        Some(match self {
            CopyKind::HtoD => 1,
            CopyKind::DtoH => 2,
            CopyKind::HtoA => 3,
            CopyKind::AtoH => 4,
            CopyKind::AtoA => 5,
            CopyKind::AtoD => 6,
            CopyKind::DtoA => 7,
            CopyKind::DtoD => 8,
            CopyKind::HtoH => 9,
            CopyKind::PtoP => 10,
            CopyKind::UnifiedHtoD => 11,
            CopyKind::UnifiedDtoH => 12,
            CopyKind::UnifiedDtoD => 13,
            CopyKind::Unknown(n) => n,
            CopyKind::Memset => return None,
        })
    }

    /// The stable short name used in JSON and on the command line (`HtoD`, ..., `memset`;
    /// `unknown` for every unnamed code: [`fmt::Display`] adds the code).
    pub fn as_str(self) -> &'static str {
        match self {
            CopyKind::HtoD => "HtoD",
            CopyKind::DtoH => "DtoH",
            CopyKind::DtoD => "DtoD",
            CopyKind::HtoH => "HtoH",
            CopyKind::PtoP => "PtoP",
            CopyKind::HtoA => "HtoA",
            CopyKind::AtoH => "AtoH",
            CopyKind::AtoA => "AtoA",
            CopyKind::AtoD => "AtoD",
            CopyKind::DtoA => "DtoA",
            CopyKind::UnifiedHtoD => "UnifiedHtoD",
            CopyKind::UnifiedDtoH => "UnifiedDtoH",
            CopyKind::UnifiedDtoD => "UnifiedDtoD",
            CopyKind::Memset => "memset",
            CopyKind::Unknown(_) => "unknown",
        }
    }

    /// The label of the schema reference (`Host-to-Device`, `Memset`), for exports without
    /// `ENUM_CUDA_MEMCPY_OPER`.
    pub fn built_in_label(self) -> Cow<'static, str> {
        match self.code() {
            None => Cow::Borrowed(MEMSET_LABEL),
            Some(code) => match BUILT_IN_LABELS.iter().find(|(id, _)| *id == code) {
                Some((_, label)) => Cow::Borrowed(label),
                None => Cow::Owned(format!("Unknown (copyKind {code})")),
            },
        }
    }

    /// Memcpy kinds by code, then memset.
    fn order_key(self) -> (u8, i64, u8) {
        match self {
            CopyKind::Memset => (1, 0, 0),
            CopyKind::Unknown(n) => (0, n, 1),
            k => (0, k.code().unwrap_or_default(), 0),
        }
    }
}

impl PartialOrd for CopyKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CopyKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.order_key().cmp(&other.order_key())
    }
}

impl fmt::Display for CopyKind {
    /// [`CopyKind::as_str`], with the code for unnamed kinds (`unknown_11`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CopyKind::Unknown(n) => write!(f, "unknown_{n}"),
            k => f.write_str(k.as_str()),
        }
    }
}

impl Serialize for CopyKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What [`CopyKind`]'s `Serialize` writes: a named kind (`HtoD`, ..., `memset`), or
/// `unknown_N` for an unnamed `copyKind` code N.
impl schemars::JsonSchema for CopyKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CopyKind".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // Every named kind: the codes nsys names, then memset.
        let named: Vec<&str> = BUILT_IN_LABELS
            .iter()
            .map(|(code, _)| CopyKind::from_code(*code))
            .chain([CopyKind::Memset])
            .filter(|k| !matches!(k, CopyKind::Unknown(_)))
            .map(CopyKind::as_str)
            .collect();
        schemars::json_schema!({
            "description": "The kind of copy: a named kind, or `unknown_N` for an unnamed `copyKind` code N.",
            "anyOf": [
                { "type": "string", "enum": named },
                { "type": "string", "pattern": "^unknown_-?[0-9]+$" }
            ]
        })
    }
}

/// Where the `copyKind` labels come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelSource {
    /// The export's `ENUM_CUDA_MEMCPY_OPER` table.
    Export,
    /// The built-in table (the export has no usable `ENUM_CUDA_MEMCPY_OPER`).
    #[default]
    BuiltIn,
}

/// What one of the two tables held.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CopyTable {
    /// The table name.
    pub table: &'static str,
    /// Whether the export has the table (nsys creates it only when there were such rows).
    pub present: bool,
    /// Valid rows of the whole table, filtered out or not.
    pub rows: i64,
    /// Rows dropped because their timestamps were not collected (0/0) or ran backwards.
    pub skipped_invalid: u64,
}

/// Rows and bytes of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindTally {
    /// The kind.
    pub kind: CopyKind,
    /// Its display label.
    pub label: String,
    /// Rows.
    pub count: i64,
    /// Sum of `bytes` (B).
    pub bytes: i64,
}

/// One device's copies and memsets over the whole tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CopyInventory {
    /// nsys `deviceId`.
    pub device: i64,
    /// First start (ns).
    pub first_start_ns: i64,
    /// Last end (ns).
    pub last_end_ns: i64,
    /// Rows and bytes per kind, memcpy kinds by code, then memset.
    pub kinds: Vec<KindTally>,
}

/// Memcpy and memset rows in columns, ordered by (device, start, end).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Copies {
    /// Start (ns).
    pub start: Vec<i64>,
    /// End (ns).
    pub end: Vec<i64>,
    /// nsys `deviceId`.
    pub device: Vec<i64>,
    /// Stream id.
    pub stream: Vec<i64>,
    /// Bytes copied or set (B), never negative.
    pub bytes: Vec<i64>,
    /// What the row did.
    pub kind: Vec<CopyKind>,
    /// The memcpy table.
    pub memcpy: CopyTable,
    /// The memset table.
    pub memset: CopyTable,
    /// The filter the rows were read with.
    pub filter: KernelFilter,
    /// Per-device inventory of the whole tables, gathered in the same scan (before filtering).
    pub inventory: Vec<CopyInventory>,
    /// Where the labels come from.
    pub label_source: LabelSource,
    /// Labels read from the export, by `copyKind` code.
    labels: BTreeMap<i64, String>,
}

/// Running totals of one device's inventory.
#[derive(Default)]
struct DeviceTally {
    first: i64,
    last: i64,
    kinds: BTreeMap<CopyKind, (i64, i64)>,
}

/// Counts one row into the inventory of its device; None when its device's byte sum of that
/// kind would overflow.
fn tally_row(
    tally: &mut BTreeMap<i64, DeviceTally>,
    device: i64,
    start: i64,
    end: i64,
    kind: CopyKind,
    bytes: i64,
) -> Option<()> {
    let t = tally.entry(device).or_insert_with(|| DeviceTally {
        first: start,
        last: end,
        kinds: BTreeMap::new(),
    });
    t.first = t.first.min(start);
    t.last = t.last.max(end);
    let (count, sum) = t.kinds.entry(kind).or_default();
    *count += 1;
    *sum = sum.checked_add(bytes)?;
    Some(())
}

impl Copies {
    /// The columns each table must have when it exists. An absent table is not an error.
    pub const REQUIRES: &'static [Requirement] = &[
        Requirement {
            table: TableRole::Memcpy,
            columns: &[c::START, c::END, c::DEVICE, c::STREAM, c::BYTES, c::COPY_KIND],
        },
        Requirement {
            table: TableRole::Memset,
            columns: &[c::START, c::END, c::DEVICE, c::STREAM, c::BYTES],
        },
    ];

    /// Reads the memcpy and memset tables once each, with the filter evaluated in the SQL.
    ///
    /// Rows outside the filter count in the inventory only. An absent table gives no rows and
    /// `present: false`; a present table without a needed column is
    /// [`TraceError::MissingColumn`].
    pub fn load(trace: &Trace, filter: &KernelFilter) -> Result<Copies, TraceError> {
        let schema = trace.schema();
        let mut out = Copies {
            filter: filter.clone(),
            memcpy: CopyTable { table: names::MEMCPY, ..CopyTable::default() },
            memset: CopyTable { table: names::MEMSET, ..CopyTable::default() },
            ..Copies::default()
        };
        for req in Self::REQUIRES {
            let table = if req.table == TableRole::Memcpy { names::MEMCPY } else { names::MEMSET };
            if schema.has_table(table) {
                schema.require(req)?;
            }
        }
        let named = out.read_labels(trace)?;
        let mut tally: BTreeMap<i64, DeviceTally> = BTreeMap::new();
        for memcpy in [true, false] {
            let table = if memcpy { names::MEMCPY } else { names::MEMSET };
            if !schema.has_table(table) {
                continue;
            }
            let (rows, skipped) = out.scan(trace, table, memcpy, &named, &mut tally)?;
            let t = if memcpy { &mut out.memcpy } else { &mut out.memset };
            t.present = true;
            t.rows = rows;
            t.skipped_invalid = skipped;
        }
        out.inventory = out.inventory_of(tally);
        out.sort();
        Ok(out)
    }

    /// Reads `ENUM_CUDA_MEMCPY_OPER` when it has `id` and `label`; otherwise the built-in
    /// labels stay in use. Returns the kinds its `name` column names, by code.
    fn read_labels(&mut self, trace: &Trace) -> Result<BTreeMap<i64, CopyKind>, TraceError> {
        let schema = trace.schema();
        let t = names::ENUM_MEMCPY_OPER;
        let mut named = BTreeMap::new();
        if !(schema.has_column(t, enums::ID) && schema.has_column(t, enums::LABEL)) {
            return Ok(named);
        }
        let sql = format!("SELECT {}, {} FROM {}", enums::ID, enums::LABEL, quote_ident(t));
        let mut stmt = trace.conn().prepare(&sql).map_err(TraceError::from_sqlite)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?)))
            .map_err(TraceError::from_sqlite)?;
        for row in rows {
            let (id, label) = row.map_err(TraceError::from_sqlite)?;
            if let Some(label) = label.filter(|l| !l.trim().is_empty()) {
                self.labels.insert(id, label);
            }
        }
        if !self.labels.is_empty() {
            self.label_source = LabelSource::Export;
        }
        if schema.has_column(t, enums::NAME) {
            let sql = format!("SELECT {}, {} FROM {}", enums::ID, enums::NAME, quote_ident(t));
            let mut stmt = trace.conn().prepare(&sql).map_err(TraceError::from_sqlite)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?)))
                .map_err(TraceError::from_sqlite)?;
            for row in rows {
                let (id, name) = row.map_err(TraceError::from_sqlite)?;
                if let Some(kind) = name.as_deref().and_then(CopyKind::from_enum_name) {
                    named.insert(id, kind);
                }
            }
        }
        Ok(named)
    }

    /// One pass over one table: every valid row into the inventory, the rows the filter keeps
    /// into the columns. Returns (valid rows, skipped rows).
    fn scan(
        &mut self,
        trace: &Trace,
        table: &str,
        memcpy: bool,
        named: &BTreeMap<i64, CopyKind>,
        tally: &mut BTreeMap<i64, DeviceTally>,
    ) -> Result<(i64, u64), TraceError> {
        let sql = format!(
            "SELECT {}, {}, {}, {}, {}, {}, {} FROM {}",
            quote_ident(c::START),
            quote_ident(c::END),
            quote_ident(c::DEVICE),
            quote_ident(c::STREAM),
            quote_ident(c::BYTES),
            if memcpy { quote_ident(c::COPY_KIND) } else { "NULL".into() },
            keep_expr(&self.filter),
            quote_ident(table)
        );
        let bad = |column: &str, detail: String| TraceError::BadValue {
            table: table.to_string(),
            column: column.to_string(),
            detail,
        };
        let mut stmt = trace.conn_with(&[table])?.prepare(&sql).map_err(TraceError::from_sqlite)?;
        let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
        let (mut valid, mut skipped) = (0i64, 0u64);
        while let Some(row) = rows.next().map_err(TraceError::from_sqlite)? {
            let start: i64 = row.get(0).map_err(|e| bad(c::START, e.to_string()))?;
            let end: i64 = row.get(1).map_err(|e| bad(c::END, e.to_string()))?;
            check_timestamp(table, c::START, start)?;
            check_timestamp(table, c::END, end)?;
            let device: i64 = row.get(2).map_err(|e| bad(c::DEVICE, e.to_string()))?;
            let stream: i64 = row.get(3).map_err(|e| bad(c::STREAM, e.to_string()))?;
            let bytes: i64 = row.get(4).map_err(|e| bad(c::BYTES, e.to_string()))?;
            if end < start || (start == 0 && end == 0) {
                skipped += 1;
                continue;
            }
            if bytes < 0 {
                // An unsigned count above 2^63 stored signed: no exact sum can hold it.
                return Err(bad(c::BYTES, format!("negative byte count {bytes}")));
            }
            let kind = if memcpy {
                // As the export's enum table names the code, else as the built-in codes say.
                let code = row.get(5).map_err(|e| bad(c::COPY_KIND, e.to_string()))?;
                named.get(&code).copied().unwrap_or_else(|| CopyKind::from_code(code))
            } else {
                CopyKind::Memset
            };
            valid += 1;
            tally_row(tally, device, start, end, kind, bytes).ok_or_else(|| {
                bad(c::BYTES, format!("the sum over device {device} overflows 64 bits"))
            })?;
            let keep: bool = row.get(6).map_err(TraceError::from_sqlite)?;
            if keep {
                self.start.push(start);
                self.end.push(end);
                self.device.push(device);
                self.stream.push(stream);
                self.bytes.push(bytes);
                self.kind.push(kind);
            }
        }
        Ok((valid, skipped))
    }

    /// Builds a table from rows, for tests and generators:
    /// `(device, stream, start, end, bytes, kind)`. Both tables count as present, labels are
    /// the built-in ones and the inventory covers the given rows.
    pub fn from_rows(rows: &[(i64, i64, i64, i64, i64, CopyKind)]) -> Copies {
        let mut out = Copies {
            memcpy: CopyTable { table: names::MEMCPY, present: true, ..CopyTable::default() },
            memset: CopyTable { table: names::MEMSET, present: true, ..CopyTable::default() },
            ..Copies::default()
        };
        let mut tally: BTreeMap<i64, DeviceTally> = BTreeMap::new();
        for &(device, stream, start, end, bytes, kind) in rows {
            out.start.push(start);
            out.end.push(end);
            out.device.push(device);
            out.stream.push(stream);
            out.bytes.push(bytes);
            out.kind.push(kind);
            let t = if kind == CopyKind::Memset { &mut out.memset } else { &mut out.memcpy };
            t.rows += 1;
            if tally_row(&mut tally, device, start, end, kind, bytes).is_none() {
                // Test rows may overflow a sum on purpose: the inventory saturates.
                if let Some(e) = tally.get_mut(&device).and_then(|t| t.kinds.get_mut(&kind)) {
                    e.1 = i64::MAX;
                }
            }
        }
        out.inventory = out.inventory_of(tally);
        out.sort();
        out
    }

    /// Joins the copies of the files of a trace set, given in file order, each with its
    /// [`Remap`]: times shifted onto the set's clock, devices renumbered as ranks, rows in the
    /// order of [`Copies`].
    ///
    /// `filter` is the set's, stored as given. Row counts add up and a table is present when
    /// any file has it. The labels are the first file's, with the codes it lacks taken from
    /// later files (which makes them the export's); the inventory is labelled with them. The
    /// inventories of devices that two files map to one rank are combined, byte sums
    /// saturating. No parts give an empty table.
    pub fn merge(parts: Vec<(Copies, Remap)>, filter: KernelFilter) -> Copies {
        let mut out = Copies { filter, ..Copies::default() };
        let mut tally: BTreeMap<i64, DeviceTally> = BTreeMap::new();
        for (n, (part, remap)) in parts.into_iter().enumerate() {
            if n == 0 {
                out.memcpy.table = part.memcpy.table;
                out.memset.table = part.memset.table;
                out.labels = part.labels;
                out.label_source = part.label_source;
            } else {
                for (code, label) in part.labels {
                    if let std::collections::btree_map::Entry::Vacant(e) = out.labels.entry(code) {
                        e.insert(label);
                        out.label_source = LabelSource::Export;
                    }
                }
            }
            for (into, t) in [(&mut out.memcpy, part.memcpy), (&mut out.memset, part.memset)] {
                into.present |= t.present;
                into.rows = into.rows.saturating_add(t.rows);
                into.skipped_invalid = into.skipped_invalid.saturating_add(t.skipped_invalid);
            }
            out.start.extend(part.start.iter().map(|&t| remap.time(t)));
            out.end.extend(part.end.iter().map(|&t| remap.time(t)));
            out.device.extend(part.device.iter().map(|&d| remap.device(d)));
            out.stream.extend(part.stream);
            out.bytes.extend(part.bytes);
            out.kind.extend(part.kind);
            for inv in part.inventory {
                let (first, last) = (remap.time(inv.first_start_ns), remap.time(inv.last_end_ns));
                let t = tally.entry(remap.device(inv.device)).or_insert_with(|| DeviceTally {
                    first,
                    last,
                    kinds: BTreeMap::new(),
                });
                t.first = t.first.min(first);
                t.last = t.last.max(last);
                for k in inv.kinds {
                    let (count, sum) = t.kinds.entry(k.kind).or_default();
                    *count = count.saturating_add(k.count);
                    *sum = sum.saturating_add(k.bytes);
                }
            }
        }
        out.inventory = out.inventory_of(tally);
        out.sort();
        out
    }

    /// The per-device inventory of the tallies, kinds labelled as this export labels them.
    fn inventory_of(&self, tally: BTreeMap<i64, DeviceTally>) -> Vec<CopyInventory> {
        tally
            .into_iter()
            .map(|(device, t)| CopyInventory {
                device,
                first_start_ns: t.first,
                last_end_ns: t.last,
                kinds: t
                    .kinds
                    .into_iter()
                    .map(|(kind, (count, bytes))| KindTally {
                        kind,
                        label: self.label(kind).into_owned(),
                        count,
                        bytes,
                    })
                    .collect(),
            })
            .collect()
    }

    fn sort(&mut self) {
        let mut idx: Vec<usize> = (0..self.start.len()).collect();
        idx.sort_unstable_by_key(|&i| {
            (
                self.device[i],
                self.start[i],
                self.end[i],
                self.stream[i],
                self.kind[i],
                self.bytes[i],
            )
        });
        let permute = |v: &Vec<i64>| idx.iter().map(|&i| v[i]).collect::<Vec<_>>();
        self.start = permute(&self.start);
        self.end = permute(&self.end);
        self.device = permute(&self.device);
        self.stream = permute(&self.stream);
        self.bytes = permute(&self.bytes);
        self.kind = idx.iter().map(|&i| self.kind[i]).collect();
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

    /// The display label of a kind: the export's `ENUM_CUDA_MEMCPY_OPER` label when it has
    /// one for the code, else the built-in one.
    pub fn label(&self, kind: CopyKind) -> Cow<'_, str> {
        match kind.code().and_then(|code| self.labels.get(&code)) {
            Some(l) => Cow::Borrowed(l.as_str()),
            None => kind.built_in_label(),
        }
    }
}

/// The SQL expression that is true for the rows the filter keeps: the kernel scan's rule
/// (device listed, `end >= a` and `start <= b`), so copies and kernels are selected alike.
fn keep_expr(filter: &KernelFilter) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(devices) = &filter.devices {
        if devices.is_empty() {
            return "0".into();
        }
        let list: Vec<String> = devices.iter().map(i64::to_string).collect();
        parts.push(format!("{} IN ({})", quote_ident(c::DEVICE), list.join(", ")));
    }
    if let Some((a, b)) = filter.bounds {
        parts.push(format!("{} >= {a} AND {} <= {b}", quote_ident(c::END), quote_ident(c::START)));
    }
    if parts.is_empty() { "1".into() } else { format!("({})", parts.join(" AND ")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    /// Writes a database from DDL and rows to a temporary file and opens it as a trace.
    fn trace_from_sql(sql: &str) -> (tempfile::TempDir, Trace) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        Connection::open(&path).unwrap().execute_batch(sql).unwrap();
        let trace = Trace::open(&path).unwrap();
        (dir, trace)
    }

    const MEMCPY_DDL: &str = "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, \
        end INTEGER NOT NULL, deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, \
        bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL);";
    const MEMSET_DDL: &str = "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, \
        end INTEGER NOT NULL, deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, \
        value INTEGER NOT NULL, bytes INTEGER NOT NULL);";

    #[test]
    fn kinds_map_from_codes_and_back() {
        for code in 0..=14 {
            assert_eq!(CopyKind::from_code(code).code(), Some(code));
        }
        assert_eq!(CopyKind::from_code(1).as_str(), "HtoD");
        assert_eq!(CopyKind::from_code(8).as_str(), "DtoD");
        assert_eq!(CopyKind::from_code(10).as_str(), "PtoP");
        assert_eq!(CopyKind::from_code(11), CopyKind::UnifiedHtoD);
        assert_eq!(CopyKind::from_code(14), CopyKind::Unknown(14));
        assert_eq!(
            CopyKind::from_enum_name("CUDA_MEMCPY_KIND_UVM_DTOH"),
            Some(CopyKind::UnifiedDtoH)
        );
        assert_eq!(CopyKind::from_enum_name("CUDA_MEMCPY_KIND_HTOD"), Some(CopyKind::HtoD));
        assert_eq!(CopyKind::from_enum_name("CUDA_MEMCPY_KIND_NEW"), None);
        assert_eq!(CopyKind::Unknown(11).to_string(), "unknown_11");
        assert_eq!(CopyKind::Memset.to_string(), "memset");
        assert_eq!(CopyKind::Memset.code(), None);
        assert_eq!(CopyKind::Unknown(11).built_in_label(), "Unified Host-to-Device");
        assert_eq!(CopyKind::Unknown(42).built_in_label(), "Unknown (copyKind 42)");
        assert_eq!(serde_json::to_value(CopyKind::DtoH).unwrap(), "DtoH");
        let mut v = vec![CopyKind::Memset, CopyKind::Unknown(0), CopyKind::DtoD, CopyKind::HtoD];
        v.sort();
        assert_eq!(v, [CopyKind::Unknown(0), CopyKind::HtoD, CopyKind::DtoD, CopyKind::Memset]);
    }

    #[test]
    fn absent_tables_give_empty_copies_with_flags() {
        let (_d, trace) = trace_from_sql("CREATE TABLE StringIds (id INTEGER, value TEXT);");
        let copies = Copies::load(&trace, &KernelFilter::default()).unwrap();
        assert!(copies.is_empty());
        assert!(!copies.memcpy.present && !copies.memset.present);
        assert!(copies.inventory.is_empty());
        assert_eq!(copies.label_source, LabelSource::BuiltIn);
        assert_eq!(copies.label(CopyKind::HtoD), "Host-to-Device");
    }

    #[test]
    fn a_present_table_without_a_column_is_an_error_naming_it() {
        let (_d, trace) = trace_from_sql(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, \
             deviceId INTEGER, streamId INTEGER, copyKind INTEGER);",
        );
        let err = Copies::load(&trace, &KernelFilter::default()).unwrap_err();
        assert!(
            matches!(&err, TraceError::MissingColumn { table, column }
                if table == names::MEMCPY && column == "bytes"),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "column `CUPTI_ACTIVITY_KIND_MEMCPY.bytes` is absent");
        let (_d, trace) = trace_from_sql(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, \
             deviceId INTEGER, bytes INTEGER);",
        );
        let err = Copies::load(&trace, &KernelFilter::default()).unwrap_err();
        assert_eq!(err.to_string(), "column `CUPTI_ACTIVITY_KIND_MEMSET.streamId` is absent");
    }

    #[test]
    fn rows_filter_inventory_invalid_rows_and_labels() {
        let sql = format!(
            "{MEMCPY_DDL}{MEMSET_DDL}
             CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
             INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'H2D label'),
                 (8, 'CUDA_MEMCPY_KIND_DTOD', NULL);
             INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
                 (300, 400, 1, 7, 10, 1), (100, 200, 1, 7, 20, 8), (0, 0, 1, 7, 5, 1),
                 (50, 40, 0, 7, 5, 1), (1000, 1100, 0, 7, 30, 11), (500, 500, 1, 9, 3, 2);
             INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES
                 (150, 160, 1, 7, 0, 64), (5000, 5100, 1, 7, 0, 8);"
        );
        let (_d, trace) = trace_from_sql(&sql);
        let all = Copies::load(&trace, &KernelFilter::default()).unwrap();
        assert_eq!((all.memcpy.rows, all.memcpy.skipped_invalid), (4, 2));
        assert_eq!((all.memset.rows, all.memset.skipped_invalid), (2, 0));
        assert!(all.memcpy.present && all.memset.present);
        assert_eq!(all.len(), 6);
        assert_eq!(all.devices(), [0, 1]);
        assert_eq!(all.device_rows(1), 1..6);
        // Ordered by (device, start, end).
        assert_eq!(all.start, [1000, 100, 150, 300, 500, 5000]);
        assert_eq!(all.kind[0], CopyKind::UnifiedHtoD);
        assert_eq!(all.label_source, LabelSource::Export);
        assert_eq!(all.label(CopyKind::HtoD), "H2D label");
        // A NULL label falls back to the built-in one, code by code.
        assert_eq!(all.label(CopyKind::DtoD), "Device-to-Device");
        assert_eq!(all.label(CopyKind::Memset), "Memset");
        let d1 = &all.inventory[1];
        assert_eq!((d1.device, d1.first_start_ns, d1.last_end_ns), (1, 100, 5100));
        let kinds: Vec<(String, i64, i64)> =
            d1.kinds.iter().map(|k| (k.kind.to_string(), k.count, k.bytes)).collect();
        assert_eq!(
            kinds,
            [
                ("HtoD".into(), 1, 10),
                ("DtoH".into(), 1, 3),
                ("DtoD".into(), 1, 20),
                ("memset".into(), 2, 72)
            ]
        );
        assert_eq!(d1.kinds[0].label, "H2D label");

        // The filter selects rows; the inventory still covers the whole tables.
        let f =
            KernelFilter { devices: Some(vec![1]), bounds: Some((160, 450)), ..Default::default() };
        let some = Copies::load(&trace, &f).unwrap();
        // [100,200) ends after 160; [500,500) starts after 450.
        assert_eq!(some.start, [100, 150, 300]);
        assert_eq!(some.kind, [CopyKind::DtoD, CopyKind::Memset, CopyKind::HtoD]);
        assert_eq!(some.inventory, all.inventory);
        assert_eq!(some.filter, f);
        let f = KernelFilter { devices: None, bounds: Some((161, 450)), ..Default::default() };
        assert_eq!(Copies::load(&trace, &f).unwrap().start, [100, 300]);
        let none = Copies::load(
            &trace,
            &KernelFilter { devices: Some(vec![]), bounds: None, ..Default::default() },
        );
        assert!(none.unwrap().is_empty());
    }

    #[test]
    fn bad_values_are_errors() {
        let sql = format!(
            "{MEMCPY_DDL} INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1, 2, 0, 7, -1, 1);"
        );
        let (_d, trace) = trace_from_sql(&sql);
        let err = Copies::load(&trace, &KernelFilter::default()).unwrap_err();
        assert!(matches!(&err, TraceError::BadValue { column, .. } if column == "bytes"), "{err}");
        let sql = format!(
            "{MEMCPY_DDL} INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
                 (1, 2, 0, 7, 9223372036854775807, 1), (3, 4, 0, 7, 1, 1);"
        );
        let (_d, trace) = trace_from_sql(&sql);
        let err = Copies::load(&trace, &KernelFilter::default()).unwrap_err();
        assert!(err.to_string().contains("overflows"), "{err}");
        let sql = format!(
            "{MEMSET_DDL} INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (1, 2, 0, 7, 0, 'x');"
        );
        let (_d, trace) = trace_from_sql(&sql);
        let err = Copies::load(&trace, &KernelFilter::default()).unwrap_err();
        assert!(
            matches!(&err, TraceError::BadValue { table, column, .. } if table == names::MEMSET && column == "bytes"),
            "{err}"
        );
    }

    /// A device's inventory: (device, first, last, (kind, label, rows, bytes)).
    type InventoryRow<'a> = (i64, i64, i64, Vec<(CopyKind, &'a str, i64, i64)>);

    fn remap_a() -> Remap {
        Remap { shift_ns: 1000, devices: BTreeMap::from([(0, 1), (1, 0)]), file_tag: 1 }
    }

    fn remap_b() -> Remap {
        Remap { shift_ns: 1100, devices: BTreeMap::from([(0, 2)]), file_tag: 2 }
    }

    /// File A: devices 0 and 1, its own label for HtoD.
    fn part_a() -> Copies {
        let mut a = Copies::from_rows(&[
            (0, 7, 300, 400, 10, CopyKind::HtoD),
            (0, 7, 100, 200, 20, CopyKind::DtoD),
            (1, 2, 150, 160, 64, CopyKind::Memset),
        ]);
        a.labels = BTreeMap::from([(1, "H2D A".to_string())]);
        a.label_source = LabelSource::Export;
        a.memcpy.skipped_invalid = 1;
        a
    }

    /// File B: device 0 too, labels for HtoD and DtoD, no memset table.
    fn part_b() -> Copies {
        let mut b = Copies::from_rows(&[
            (0, 3, 50, 80, 5, CopyKind::Memset),
            (0, 3, 50, 80, 5, CopyKind::HtoD),
        ]);
        b.labels = BTreeMap::from([(1, "H2D B".to_string()), (8, "D2D B".to_string())]);
        b.label_source = LabelSource::Export;
        b.memcpy.skipped_invalid = 2;
        b.memset.present = false;
        b
    }

    #[test]
    fn merging_one_part_with_the_identity_gives_it_back() {
        let sql = format!(
            "{MEMCPY_DDL}{MEMSET_DDL}
             CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
             INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'H2D label');
             INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
                 (300, 400, 1, 7, 10, 1), (100, 200, 1, 7, 20, 8), (0, 0, 1, 7, 5, 1);
             INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (150, 160, 1, 7, 0, 64);"
        );
        let (_d, trace) = trace_from_sql(&sql);
        let f =
            KernelFilter { devices: Some(vec![1]), bounds: Some((160, 450)), ..Default::default() };
        let loaded = Copies::load(&trace, &f).unwrap();
        let m = Copies::merge(vec![(loaded.clone(), Remap::identity())], f);
        assert_eq!(m, loaded);
        let built = Copies::from_rows(&[(2, 1, 5, 9, 3, CopyKind::HtoD)]);
        let m = Copies::merge(vec![(built.clone(), Remap::identity())], KernelFilter::default());
        assert_eq!(m, built);
        let empty = Copies::merge(Vec::new(), KernelFilter::default());
        assert!(empty.is_empty() && !empty.memcpy.present && empty.inventory.is_empty());
    }

    #[test]
    fn two_files_sharing_a_device_id_stay_apart() {
        let f = KernelFilter { devices: Some(vec![0, 1, 2]), bounds: None, ..Default::default() };
        let m = Copies::merge(vec![(part_a(), remap_a()), (part_b(), remap_b())], f.clone());
        // A's device 1 is rank 0, its device 0 rank 1; B's device 0 is rank 2.
        assert_eq!(m.device, [0, 1, 1, 2, 2]);
        assert_eq!(m.start, [1150, 1100, 1300, 1150, 1150]);
        assert_eq!(m.end, [1160, 1200, 1400, 1180, 1180]);
        assert_eq!(m.stream, [2, 7, 7, 3, 3]);
        assert_eq!(m.bytes, [64, 20, 10, 5, 5]);
        // B's two rows tie up to the kind: memcpy kinds before memset.
        assert_eq!(
            m.kind,
            [CopyKind::Memset, CopyKind::DtoD, CopyKind::HtoD, CopyKind::HtoD, CopyKind::Memset]
        );
        assert_eq!(m.filter, f);
        assert_eq!((m.memcpy.table, m.memset.table), (names::MEMCPY, names::MEMSET));
        assert_eq!((m.memcpy.present, m.memcpy.rows, m.memcpy.skipped_invalid), (true, 3, 3));
        // B has no memset table, A has one.
        assert_eq!((m.memset.present, m.memset.rows, m.memset.skipped_invalid), (true, 2, 0));
        // A's label for HtoD wins; DtoD, which A does not label, takes B's.
        assert_eq!(m.label_source, LabelSource::Export);
        assert_eq!(m.label(CopyKind::HtoD), "H2D A");
        assert_eq!(m.label(CopyKind::DtoD), "D2D B");
        assert_eq!(m.label(CopyKind::DtoH), "Device-to-Host");
        let inv: Vec<InventoryRow> = m
            .inventory
            .iter()
            .map(|d| {
                let kinds =
                    d.kinds.iter().map(|k| (k.kind, k.label.as_str(), k.count, k.bytes)).collect();
                (d.device, d.first_start_ns, d.last_end_ns, kinds)
            })
            .collect();
        assert_eq!(
            inv,
            [
                (0, 1150, 1160, vec![(CopyKind::Memset, "Memset", 1, 64)]),
                (
                    1,
                    1100,
                    1400,
                    vec![(CopyKind::HtoD, "H2D A", 1, 10), (CopyKind::DtoD, "D2D B", 1, 20)]
                ),
                (
                    2,
                    1150,
                    1180,
                    vec![(CopyKind::HtoD, "H2D A", 1, 5), (CopyKind::Memset, "Memset", 1, 5)]
                ),
            ]
        );
    }

    #[test]
    fn labels_of_a_later_file_fill_a_first_file_without_any() {
        let first = Copies::from_rows(&[]);
        let m = Copies::merge(
            vec![(first, Remap::identity()), (part_b(), remap_b())],
            KernelFilter::default(),
        );
        assert_eq!(m.label_source, LabelSource::Export);
        assert_eq!(m.label(CopyKind::HtoD), "H2D B");
        let m = Copies::merge(
            vec![(Copies::from_rows(&[]), Remap::identity()), (Copies::default(), remap_b())],
            KernelFilter::default(),
        );
        assert_eq!(m.label_source, LabelSource::BuiltIn);
    }

    #[test]
    fn merging_in_steps_gives_the_rows_of_one_merge() {
        let mut c = Copies::from_rows(&[(4, 1, 0, 10, 8, CopyKind::Unknown(11))]);
        c.labels = BTreeMap::from([(11, "U C".to_string()), (1, "H2D C".to_string())]);
        let remap_c = Remap { shift_ns: 1140, devices: BTreeMap::from([(4, 1)]), file_tag: 3 };
        let f = KernelFilter::default();
        let ab = Copies::merge(vec![(part_a(), remap_a()), (part_b(), remap_b())], f.clone());
        let stepwise =
            Copies::merge(vec![(ab, Remap::identity()), (c.clone(), remap_c.clone())], f.clone());
        let once =
            Copies::merge(vec![(part_a(), remap_a()), (part_b(), remap_b()), (c, remap_c)], f);
        assert_eq!(stepwise, once);
        // C's device 4 joins A's device 0 on rank 1.
        assert_eq!(once.device, [0, 1, 1, 1, 2, 2]);
        assert_eq!(once.start, [1150, 1100, 1140, 1300, 1150, 1150]);
        assert_eq!(once.kind[2], CopyKind::Unknown(11));
        assert_eq!(
            (once.label(CopyKind::Unknown(11)), once.label(CopyKind::HtoD)),
            ("U C".into(), "H2D A".into())
        );
        let d = &once.inventory[1];
        assert_eq!((d.device, d.first_start_ns, d.last_end_ns), (1, 1100, 1400));
        let kinds: Vec<(CopyKind, &str, i64, i64)> =
            d.kinds.iter().map(|k| (k.kind, k.label.as_str(), k.count, k.bytes)).collect();
        assert_eq!(
            kinds,
            [
                (CopyKind::HtoD, "H2D A", 1, 10),
                (CopyKind::DtoD, "D2D B", 1, 20),
                (CopyKind::Unknown(11), "U C", 1, 8)
            ]
        );
        assert_eq!((once.memcpy.rows, once.memset.rows), (4, 2));
    }
}
