//! NVTX ranges and the launch records of kernels: the CPU side that kernels are attributed to.
//!
//! Reads the push/pop (59) and start/end (60) ranges of `NVTX_EVENTS` with the names of their
//! domains (75), and the rows of `CUPTI_ACTIVITY_KIND_RUNTIME` for given correlation ids, into
//! columns with dense name ids; the ranges' extended payloads are read beside them
//! (`payload.rs`). It computes no metric: grouping, statistics and attribution
//! live in `analysis::nvtx`.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::ops::Range;

use serde::Serialize;

use super::names::{self, nvtx as n, runtime as r};
use super::remap::Remap;
use super::{Requirement, TableRole, Trace, TraceError, check_timestamp, quote_ident};

/// `eventType` of a push/pop range (`NvtxPushPopRange`).
pub const PUSH_POP_RANGE: i64 = 59;
/// `eventType` of a start/end range (`NvtxStartEndRange`).
pub const START_END_RANGE: i64 = 60;
/// `eventType` of a domain creation, whose text is the domain's name (`NvtxDomainCreate`).
pub const DOMAIN_CREATE: i64 = 75;

/// The process part of a serialized `globalPid` or `globalTid`: `id >> 24`, the hardware, VM
/// and PID bits. A thread's `globalTid >> 24` equals its process's `globalPid >> 24`, which is
/// how rows of the CPU side (`globalTid`) are matched to rows of the GPU side (`globalPid`).
pub fn process_of(global_id: i64) -> i64 {
    global_id >> 24
}

/// The operating-system process id in a serialized global id: `(id >> 24) & 0xFFFFFF`.
pub fn pid_of(global_id: i64) -> i64 {
    (global_id >> 24) & 0xFF_FFFF
}

/// The operating-system thread id in a serialized `globalTid`: `id & 0xFFFFFF`.
pub fn tid_of(global_id: i64) -> i64 {
    global_id & 0xFF_FFFF
}

/// What identifies the launch record of a kernel: its process and `correlationId`, which is
/// unique only within a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct LaunchKey {
    /// [`process_of`] the kernel's `globalPid`.
    pub process: i64,
    /// `correlationId`.
    pub correlation: i64,
}

/// The launch keys of a kernel scan, per kept row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LaunchKeys {
    /// The scan was not asked for them.
    #[default]
    NotRead,
    /// The kernel table lacks these columns (older exports): no kernel can be joined to its
    /// launch.
    Absent {
        /// The missing columns.
        missing: Vec<String>,
    },
    /// Read, aligned with the kernel rows; None where the row holds NULL.
    Read {
        /// `correlationId`.
        correlation: Vec<Option<i64>>,
        /// [`process_of`] the row's `globalPid`.
        process: Vec<Option<i64>>,
    },
}

/// How a range was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeKind {
    /// `nvtxRangePush`/`nvtxRangePop` (eventType 59): nested on one thread.
    PushPop,
    /// `nvtxRangeStart`/`nvtxRangeEnd` (eventType 60): may cross other ranges and end on
    /// another thread.
    StartEnd,
}

/// Where a domain's name comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainSource {
    /// Domain 0, NVTX's default domain: named `default`.
    Default,
    /// The text of the domain's eventType-75 row in its process.
    Registered,
    /// No eventType-75 row for it in its process (a time-sliced or filtered export): named
    /// `domain #N`.
    Unnamed,
}

/// An NVTX domain of one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Domain {
    /// `domainId` (None where the column holds NULL).
    pub id: Option<i64>,
    /// [`process_of`] the `globalTid` of its ranges (None where that is NULL).
    pub process: Option<i64>,
    /// The name: `default`, the registered name, or `domain #N`.
    pub name: String,
    /// Where the name comes from.
    pub source: DomainSource,
}

/// NVTX push/pop and start/end ranges in columns, ordered by (thread, start, end descending,
/// table order): on one thread, an enclosing range comes before the ranges it encloses.
///
/// A range without an `end` (unterminated) is closed at the largest timestamp of the NVTX
/// table, as `nsys stats` does, and flagged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NvtxRanges {
    /// Start (ns).
    pub start: Vec<i64>,
    /// End (ns); for an unterminated range, [`NvtxRanges::closed_at_ns`].
    pub end: Vec<i64>,
    /// Whether the row had no `end` and was closed at [`NvtxRanges::closed_at_ns`].
    pub unterminated: Vec<bool>,
    /// Push/pop or start/end.
    pub kind: Vec<RangeKind>,
    /// `globalTid` of the thread that pushed or started it (None where NULL).
    pub global_tid: Vec<Option<i64>>,
    /// Dense id of the name (index into the name table): `text`, else the `StringIds` value
    /// of `textId`.
    pub name: Vec<u32>,
    /// Dense id of the domain (index into the domain table).
    pub domain: Vec<u32>,
    names: Vec<String>,
    domains: Vec<Domain>,
    /// Whether the trace has no `NVTX_EVENTS` table (no NVTX was captured): the ranges are
    /// empty because there are none to read, not because none matched.
    pub table_absent: bool,
    /// The time bounds the ranges were read with: ranges with `end >= a` and `start <= b`
    /// (None: all).
    pub bounds: Option<(i64, i64)>,
    /// The timestamp unterminated ranges were closed at: the largest `start` or `end` of the
    /// NVTX table (None when no kept range is unterminated).
    pub closed_at_ns: Option<i64>,
    /// Kept ranges with neither `text` nor `textId`: named with the empty string.
    pub untexted: u64,
    /// The extended payloads (`binaryData`) of the ranges that carry one, read within the
    /// same bounds.
    pub payloads: super::payload::Payloads,
    /// The GPU projections the trace recorded of its ranges (a PyTorch profiler trace's
    /// `gpu_user_annotation`), of the ranges read.
    pub projections: GpuProjections,
}

/// The GPU projections a trace recorded of its CPU ranges: per range and GPU stream, the span
/// of the GPU work launched while the range was the innermost on its thread (Kineto's
/// `gpu_user_annotation`, tied to its range by External id: [`super::kineto::GPU_ANNOTATIONS`]).
/// Rows name their range by thread, start and end, as [`NvtxRanges`] holds it. Empty and not
/// [`GpuProjections::recorded`] for an nsys export.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuProjections {
    /// Whether the trace records projections (a table of them, not empty).
    pub recorded: bool,
    /// `globalTid` of the range projected.
    pub range_tid: Vec<i64>,
    /// Start of the range projected (ns, CPU).
    pub range_start: Vec<i64>,
    /// End of the range projected (ns, CPU).
    pub range_end: Vec<i64>,
    /// `deviceId` of the projection.
    pub device: Vec<i64>,
    /// `streamId` of the projection.
    pub stream: Vec<i64>,
    /// Start of the projection (ns, GPU), as written.
    pub start: Vec<i64>,
    /// End of the projection (ns, GPU), as written.
    pub end: Vec<i64>,
    /// Projections in the file tied to no range of it (their range was not captured).
    pub untied: u64,
}

impl GpuProjections {
    /// Reads the projections tied to the ranges that `bounds` keeps (`end >= a` and
    /// `start <= b`, as [`NvtxRanges::load`]), and counts the untied ones.
    pub fn load(trace: &Trace, bounds: Option<(i64, i64)>) -> Result<GpuProjections, TraceError> {
        let table = super::kineto::GPU_ANNOTATIONS;
        let mut out = GpuProjections::default();
        if !trace.schema().has_table(table) {
            return Ok(out);
        }
        let sqlite = TraceError::from_sqlite;
        let conn = trace.conn_with(&[table, names::NVTX_EVENTS])?;
        // A trace whose profiler projected nothing (an empty table) records none.
        out.recorded = conn
            .query_row(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), [], |r| r.get(0))
            .map_err(sqlite)?;
        if !out.recorded {
            return Ok(out);
        }
        let where_bounds = match bounds {
            Some((a, b)) => format!(" AND n.start <= {b} AND n.\"end\" >= {a}"),
            None => String::new(),
        };
        let mut stmt = conn
            .prepare(&format!(
                "SELECT n.globalTid, n.start, n.\"end\", g.deviceId, g.streamId, g.start, g.\"end\" \
                 FROM {table} g JOIN {nvtx} n ON n.externalId = g.externalId \
                 WHERE n.globalTid IS NOT NULL AND n.\"end\" IS NOT NULL{where_bounds} \
                 ORDER BY n.globalTid, n.start, g.deviceId, g.streamId",
                nvtx = names::NVTX_EVENTS
            ))
            .map_err(sqlite)?;
        let mut rows = stmt.query([]).map_err(sqlite)?;
        while let Some(r) = rows.next().map_err(sqlite)? {
            out.range_tid.push(r.get(0).map_err(sqlite)?);
            out.range_start.push(r.get(1).map_err(sqlite)?);
            out.range_end.push(r.get(2).map_err(sqlite)?);
            out.device.push(r.get(3).map_err(sqlite)?);
            out.stream.push(r.get(4).map_err(sqlite)?);
            out.start.push(r.get(5).map_err(sqlite)?);
            out.end.push(r.get(6).map_err(sqlite)?);
        }
        let untied: i64 = conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM {table} g WHERE NOT EXISTS \
                     (SELECT 1 FROM {nvtx} n WHERE n.externalId = g.externalId)",
                    nvtx = names::NVTX_EVENTS
                ),
                [],
                |r| r.get(0),
            )
            .map_err(sqlite)?;
        out.untied = untied as u64;
        Ok(out)
    }

    /// Joins the projections of the files of a set, each with its [`Remap`]: times shifted,
    /// threads tagged, devices renumbered as ranks.
    pub fn merge(parts: Vec<(GpuProjections, &Remap)>) -> GpuProjections {
        let mut out = GpuProjections::default();
        for (p, remap) in parts {
            out.recorded |= p.recorded;
            out.untied += p.untied;
            out.range_tid.extend(p.range_tid.iter().map(|&g| remap.global_id(g)));
            out.range_start.extend(p.range_start.iter().map(|&t| remap.time(t)));
            out.range_end.extend(p.range_end.iter().map(|&t| remap.time(t)));
            out.device.extend(p.device.iter().map(|&d| remap.device(d)));
            out.stream.extend(p.stream);
            out.start.extend(p.start.iter().map(|&t| remap.time(t)));
            out.end.extend(p.end.iter().map(|&t| remap.time(t)));
        }
        out
    }

    /// Number of projections read.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Whether none were read.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// The span (first start, last end) of the projections on `devices` of the range on
    /// thread `tid` from `start` to `end` and of the ranges inside it on that thread (a GPU
    /// op is recorded under its innermost range only), with whether the range has one of its
    /// own there. None when neither it nor a range inside it has one.
    pub fn span_of(
        &self,
        tid: i64,
        start: i64,
        end: i64,
        devices: &[i64],
    ) -> Option<((i64, i64), bool)> {
        let mut span: Option<(i64, i64)> = None;
        let mut own = false;
        for i in 0..self.len() {
            if self.range_tid[i] != tid
                || self.range_start[i] < start
                || self.range_end[i] > end
                || !devices.contains(&self.device[i])
            {
                continue;
            }
            own |= self.range_start[i] == start && self.range_end[i] == end;
            span = Some(span.map_or((self.start[i], self.end[i]), |(a, b)| {
                (a.min(self.start[i]), b.max(self.end[i]))
            }));
        }
        span.map(|s| (s, own))
    }
}

impl NvtxRanges {
    /// The columns every load reads (`textId` is read when present: exports before registered
    /// strings lack it).
    pub const REQUIRES: &'static [Requirement] = &[Requirement {
        table: TableRole::NvtxEvents,
        columns: &[n::START, n::END, n::EVENT_TYPE, n::TEXT, n::GLOBAL_TID, n::DOMAIN_ID],
    }];

    /// Reads the ranges, with the time bounds pushed into the SQL: only ranges with
    /// `end >= a` and `start <= b` are read (an unterminated range is judged by its closing
    /// time). An absent table gives no ranges and [`NvtxRanges::table_absent`].
    pub fn load(trace: &Trace, bounds: Option<(i64, i64)>) -> Result<NvtxRanges, TraceError> {
        let schema = trace.schema();
        if !schema.has_table(names::NVTX_EVENTS) {
            return Ok(NvtxRanges { table_absent: true, bounds, ..NvtxRanges::default() });
        }
        for req in Self::REQUIRES {
            schema.require(req)?;
        }
        let has_text_id = schema.has_column(names::NVTX_EVENTS, n::TEXT_ID);
        let text_id = if has_text_id { "textId" } else { "NULL" };
        let table = quote_ident(names::NVTX_EVENTS);
        let where_bounds = match bounds {
            Some((a, b)) => format!(" AND start <= {b} AND (\"end\" IS NULL OR \"end\" >= {a})"),
            None => String::new(),
        };
        // `ORDER BY rowid` makes table order the last tie-break of the sort below; a plain scan
        // already returns rows in that order, so it costs nothing. The table is read in rowid
        // ranges over the cores; their rows join in rowid order.
        let sql = format!(
            "SELECT start, \"end\", eventType, globalTid, domainId, text, {text_id} FROM {table} \
             WHERE eventType IN ({PUSH_POP_RANGE}, {START_END_RANGE}){where_bounds} AND "
        );
        let parts = super::split_scan(trace, names::NVTX_EVENTS, &mut |_| {}, |conn, range, _| {
            scan_ranges(conn, &format!("{sql}{range} ORDER BY rowid"))
        })?;
        let mut out = NvtxRanges { bounds, ..NvtxRanges::default() };
        let mut names = NameTable::default();
        let mut domain_keys = DomainKeys::default();
        // textId values and the rows that use them, resolved in one pass over the distinct ids.
        let mut text_ids: HashMap<i64, Vec<usize>> = HashMap::default();
        for part in parts {
            let base = out.start.len();
            let name_of: Vec<u32> = part.names.names.iter().map(|n| names.intern(n)).collect();
            let domain_of: Vec<u32> =
                part.domains.iter().map(|&key| domain_keys.intern(key)).collect();
            out.start.extend(part.ranges.start);
            out.end.extend(part.ranges.end);
            out.unterminated.extend(part.ranges.unterminated);
            out.kind.extend(part.ranges.kind);
            out.global_tid.extend(part.ranges.global_tid);
            out.name.extend(
                part.ranges
                    .name
                    .iter()
                    .map(|&i| if i == u32::MAX { i } else { name_of[i as usize] }),
            );
            out.domain.extend(part.ranges.domain.iter().map(|&d| domain_of[d as usize]));
            out.untexted += part.ranges.untexted;
            for (id, users) in part.text_ids {
                text_ids.entry(id).or_default().extend(users.into_iter().map(|i| base + i));
            }
        }
        let conn = trace.conn();

        if !text_ids.is_empty() {
            schema
                .require(&Requirement { table: TableRole::StringIds, columns: &["id", "value"] })?;
            let mut lookup = conn
                .prepare(&format!("SELECT value FROM {} WHERE id = ?1", names::STRING_IDS))
                .map_err(TraceError::from_sqlite)?;
            let mut ids: Vec<(&i64, &Vec<usize>)> = text_ids.iter().collect();
            ids.sort_unstable_by_key(|(id, _)| **id);
            for (id, users) in ids {
                // A NULL string names nothing: the ranges read as ranges without a text
                // (counted and disclosed), never as a reason to refuse the trace.
                let value: Option<String> = match lookup.query_row([id], |r| r.get(0)) {
                    Ok(v) => v,
                    Err(rusqlite::Error::QueryReturnedNoRows) => {
                        return Err(TraceError::BadValue {
                            table: names::NVTX_EVENTS.into(),
                            column: n::TEXT_ID.into(),
                            detail: format!("string id {id} has no row in `StringIds`"),
                        });
                    }
                    Err(e) => return Err(TraceError::from_sqlite(e)),
                };
                let name = match value {
                    Some(v) => names.intern(&v),
                    None => {
                        out.untexted += users.len() as u64;
                        names.intern("")
                    }
                };
                for &i in users {
                    out.name[i] = name;
                }
            }
        }

        if out.unterminated.iter().any(|&u| u) {
            let closed_at = max_timestamp(trace)?;
            out.closed_at_ns = Some(closed_at);
            for i in 0..out.start.len() {
                if out.unterminated[i] {
                    out.end[i] = closed_at;
                }
            }
            // The SQL kept every unterminated range that starts early enough; its closing time
            // decides whether it reaches the lower bound.
            if let Some((a, _)) = bounds
                && closed_at < a
            {
                out.retain(|r, i| !r.unterminated[i]);
                out.closed_at_ns = None;
            }
        }

        out.domains = name_domains(trace, &domain_keys.keys)?;
        out.names = names.names;
        out.payloads = super::payload::Payloads::load(trace, bounds)?;
        out.projections = GpuProjections::load(trace, bounds)?;
        out.sort();
        Ok(out)
    }

    /// Builds ranges from rows, for tests: `(global_tid, start, end, name, domain id)`, with
    /// `end` None for an unterminated range (closed at the largest timestamp of the rows) and
    /// domains named as an export without eventType-75 rows would have them.
    pub fn from_rows(rows: &[(i64, i64, Option<i64>, &str, i64)]) -> NvtxRanges {
        let mut out = NvtxRanges::default();
        let mut names = NameTable::default();
        let mut domain_keys = DomainKeys::default();
        let closed_at = rows.iter().map(|r| r.1.max(r.2.unwrap_or(i64::MIN))).max();
        for &(tid, start, end, name, domain) in rows {
            out.start.push(start);
            out.end.push(end.or(closed_at).unwrap_or(start));
            out.unterminated.push(end.is_none());
            out.kind.push(RangeKind::PushPop);
            out.global_tid.push(Some(tid));
            out.name.push(names.intern(name));
            let key = (Some(domain), Some(process_of(tid)));
            out.domain.push(domain_keys.intern(key));
        }
        if out.unterminated.iter().any(|&u| u) {
            out.closed_at_ns = closed_at;
        }
        out.domains = domain_keys.keys.iter().map(|&(id, process)| unnamed(id, process)).collect();
        out.names = names.names;
        out.sort();
        out
    }

    /// Joins the ranges of the files of a trace set, given in file order, each with its
    /// [`Remap`]: times shifted onto the set's clock, threads and the processes of domains
    /// tagged with their file, names and domains re-interned into one table each (equal
    /// strings, one id; equal domains once tagged, one id), rows in the order of
    /// [`NvtxRanges`] (full ties keep file order).
    ///
    /// The table is absent when it is absent from every file; the bounds are the hull of the
    /// shifted bounds (None when a file was read without); untexted ranges add up. An
    /// unterminated range keeps the closing time of its own file, and
    /// [`NvtxRanges::closed_at_ns`] is the latest of them. No parts give no ranges.
    pub fn merge(parts: Vec<(NvtxRanges, Remap)>) -> NvtxRanges {
        if parts.is_empty() {
            return NvtxRanges::default();
        }
        let shifted_bounds: Option<Vec<(i64, i64)>> = parts
            .iter()
            .map(|(p, remap)| p.bounds.map(|(a, b)| (remap.time(a), remap.time(b))))
            .collect();
        let mut out = NvtxRanges {
            table_absent: parts.iter().all(|(p, _)| p.table_absent),
            bounds: shifted_bounds
                .and_then(|v| Some((v.iter().map(|b| b.0).min()?, v.iter().map(|b| b.1).max()?))),
            closed_at_ns: parts
                .iter()
                .filter_map(|(p, remap)| p.closed_at_ns.map(|t| remap.time(t)))
                .max(),
            ..NvtxRanges::default()
        };
        let mut names = NameTable::default();
        let mut domain_ids: HashMap<(Option<i64>, Option<i64>, String, DomainSource), u32> =
            HashMap::default();
        let mut parts = parts;
        let payloads: Vec<super::payload::Payloads> =
            parts.iter_mut().map(|(p, _)| std::mem::take(&mut p.payloads)).collect();
        out.payloads = super::payload::Payloads::merge(
            payloads.into_iter().zip(parts.iter().map(|(_, r)| r)).collect(),
        );
        let projections: Vec<GpuProjections> =
            parts.iter_mut().map(|(p, _)| std::mem::take(&mut p.projections)).collect();
        out.projections = GpuProjections::merge(
            projections.into_iter().zip(parts.iter().map(|(_, r)| r)).collect(),
        );
        for (part, remap) in parts {
            let name_ids: Vec<u32> = part.names.iter().map(|s| names.intern(s)).collect();
            let domain_map: Vec<u32> = part
                .domains
                .into_iter()
                .map(|d| {
                    let d = Domain { process: d.process.map(|p| remap.process(p)), ..d };
                    let key = (d.id, d.process, d.name.clone(), d.source);
                    *domain_ids.entry(key).or_insert_with(|| {
                        out.domains.push(d);
                        (out.domains.len() - 1) as u32
                    })
                })
                .collect();
            out.start.extend(part.start.iter().map(|&t| remap.time(t)));
            out.end.extend(part.end.iter().map(|&t| remap.time(t)));
            out.unterminated.extend(part.unterminated);
            out.kind.extend(part.kind);
            out.global_tid.extend(part.global_tid.iter().map(|g| g.map(|g| remap.global_id(g))));
            out.name.extend(part.name.iter().map(|&i| name_ids[i as usize]));
            out.domain.extend(part.domain.iter().map(|&i| domain_map[i as usize]));
            out.untexted = out.untexted.saturating_add(part.untexted);
        }
        out.names = names.names;
        out.sort();
        out
    }

    /// Keeps the rows for which `keep(self, row)` holds.
    fn retain(&mut self, keep: impl Fn(&NvtxRanges, usize) -> bool) {
        let idx: Vec<usize> = (0..self.len()).filter(|&i| keep(self, i)).collect();
        self.permute(&idx);
    }

    fn sort(&mut self) {
        let mut idx: Vec<usize> = (0..self.len()).collect();
        // Stable: full ties keep table order.
        idx.sort_by_key(|&i| (self.global_tid[i], self.start[i], std::cmp::Reverse(self.end[i])));
        self.permute(&idx);
    }

    fn permute(&mut self, idx: &[usize]) {
        fn p<T: Copy>(v: &[T], idx: &[usize]) -> Vec<T> {
            idx.iter().map(|&i| v[i]).collect()
        }
        self.start = p(&self.start, idx);
        self.end = p(&self.end, idx);
        self.unterminated = p(&self.unterminated, idx);
        self.kind = p(&self.kind, idx);
        self.global_tid = p(&self.global_tid, idx);
        self.name = p(&self.name, idx);
        self.domain = p(&self.domain, idx);
    }

    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Whether there are no ranges.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// Kept ranges that were unterminated.
    pub fn unterminated_count(&self) -> u64 {
        self.unterminated.iter().filter(|&&u| u).count() as u64
    }

    /// The contiguous rows of one thread (`globalTid`).
    pub fn thread_rows(&self, global_tid: i64) -> Range<usize> {
        let lo = self.global_tid.partition_point(|&g| g < Some(global_tid));
        let hi = self.global_tid.partition_point(|&g| g <= Some(global_tid));
        lo..hi
    }

    /// The name of row `i`.
    pub fn name_of(&self, i: usize) -> &str {
        &self.names[self.name[i] as usize]
    }

    /// The text of a dense name id.
    pub fn name_text(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// The name table: every distinct name, indexed by dense id.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The domain of row `i`.
    pub fn domain_of(&self, i: usize) -> &Domain {
        &self.domains[self.domain[i] as usize]
    }

    /// The domain table, indexed by dense id.
    pub fn domains(&self) -> &[Domain] {
        &self.domains
    }

    /// The process id of row `i` (None where `globalTid` is NULL).
    pub fn pid(&self, i: usize) -> Option<i64> {
        self.global_tid[i].map(pid_of)
    }

    /// The thread id of row `i` (None where `globalTid` is NULL).
    pub fn tid(&self, i: usize) -> Option<i64> {
        self.global_tid[i].map(tid_of)
    }
}

/// The ranges of one rowid range of `NVTX_EVENTS`, with names and domains local to it.
struct RangesPart {
    ranges: NvtxRanges,
    names: NameTable,
    /// Domain keys by local domain id.
    domains: Vec<DomainKey>,
    /// textId values and the local rows that use them.
    text_ids: HashMap<i64, Vec<usize>>,
}

/// Reads one rowid range of the NVTX table (`sql` selects start, end, eventType, globalTid,
/// domainId, text and textId or NULL). Texts are borrowed from SQLite and interned: a row
/// allocates nothing for a name seen before.
fn scan_ranges(conn: &rusqlite::Connection, sql: &str) -> Result<RangesPart, TraceError> {
    let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
        table: names::NVTX_EVENTS.into(),
        column: column.into(),
        detail: e.to_string(),
    };
    let mut stmt = conn.prepare(sql).map_err(TraceError::from_sqlite)?;
    let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
    let mut out = NvtxRanges::default();
    let mut names = NameTable::default();
    let mut domains = DomainKeys::default();
    let mut text_ids: HashMap<i64, Vec<usize>> = HashMap::default();
    while let Some(row) = rows.next().map_err(TraceError::from_sqlite)? {
        let start: i64 = row.get(0).map_err(|e| bad(n::START, e))?;
        let end: Option<i64> = row.get(1).map_err(|e| bad(n::END, e))?;
        check_timestamp(names::NVTX_EVENTS, n::START, start)?;
        if let Some(e) = end {
            check_timestamp(names::NVTX_EVENTS, n::END, e)?;
        }
        let event_type: i64 = row.get(2).map_err(|e| bad(n::EVENT_TYPE, e))?;
        let global_tid: Option<i64> = row.get(3).map_err(|e| bad(n::GLOBAL_TID, e))?;
        let domain_id: Option<i64> = row.get(4).map_err(|e| bad(n::DOMAIN_ID, e))?;
        let text_id: Option<i64> = row.get(6).map_err(|e| bad(n::TEXT_ID, e))?;
        let i = out.start.len();
        out.start.push(start);
        out.end.push(end.unwrap_or(i64::MIN));
        out.unterminated.push(end.is_none());
        out.kind.push(if event_type == PUSH_POP_RANGE {
            RangeKind::PushPop
        } else {
            RangeKind::StartEnd
        });
        out.global_tid.push(global_tid);
        let key = (domain_id, global_tid.map(process_of));
        out.domain.push(domains.intern(key));
        let text = row.get_ref(5).map_err(|e| bad(n::TEXT, e))?;
        match (text, text_id) {
            (rusqlite::types::ValueRef::Null, Some(id)) => {
                out.name.push(u32::MAX);
                text_ids.entry(id).or_default().push(i);
            }
            (rusqlite::types::ValueRef::Null, None) => {
                out.untexted += 1;
                out.name.push(names.intern(""));
            }
            (t, _) => {
                let t = t.as_str().map_err(|e| bad(n::TEXT, e.into()))?;
                out.name.push(names.intern(t));
            }
        }
    }
    Ok(RangesPart { ranges: out, names, domains: domains.keys, text_ids })
}

/// A domain as the ranges key it before it is named: `domainId` and the process.
type DomainKey = (Option<i64>, Option<i64>);

/// Distinct domain keys with dense ids, in order of first use.
#[derive(Default)]
struct DomainKeys {
    ids: HashMap<DomainKey, u32>,
    keys: Vec<DomainKey>,
}

impl DomainKeys {
    fn intern(&mut self, key: DomainKey) -> u32 {
        *self.ids.entry(key).or_insert_with(|| {
            self.keys.push(key);
            (self.keys.len() - 1) as u32
        })
    }
}

/// Distinct strings with dense ids.
#[derive(Default)]
struct NameTable {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl NameTable {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        self.names.push(s.to_string());
        let id = (self.names.len() - 1) as u32;
        self.ids.insert(s.to_string(), id);
        id
    }
}

/// The largest `start` or `end` of the whole NVTX table: where `nsys stats` closes
/// unterminated ranges.
fn max_timestamp(trace: &Trace) -> Result<i64, TraceError> {
    let (s, e): (Option<i64>, Option<i64>) = trace
        .conn_with(&[names::NVTX_EVENTS])?
        .query_row(
            &format!("SELECT max(start), max(\"end\") FROM {}", quote_ident(names::NVTX_EVENTS)),
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(TraceError::from_sqlite)?;
    let last = s.max(e).ok_or_else(|| TraceError::BadValue {
        table: names::NVTX_EVENTS.into(),
        column: n::START.into(),
        detail: "no timestamp to close unterminated ranges at".into(),
    })?;
    // Read over every row, including those outside the bounds that the scan checked.
    check_timestamp(names::NVTX_EVENTS, if e >= s { n::END } else { n::START }, last)
}

fn unnamed(id: Option<i64>, process: Option<i64>) -> Domain {
    match id {
        Some(0) => Domain { id, process, name: "default".into(), source: DomainSource::Default },
        Some(d) => {
            Domain { id, process, name: format!("domain #{d}"), source: DomainSource::Unnamed }
        }
        None => Domain { id, process, name: "domain #NULL".into(), source: DomainSource::Unnamed },
    }
}

/// Names the domains of the kept ranges from the eventType-75 rows of their process (the
/// first such row by start wins).
fn name_domains(
    trace: &Trace,
    keys: &[(Option<i64>, Option<i64>)],
) -> Result<Vec<Domain>, TraceError> {
    if keys.iter().all(|k| k.0 == Some(0)) {
        return Ok(keys.iter().map(|&(id, p)| unnamed(id, p)).collect());
    }
    let has_text_id = trace.schema().has_column(names::NVTX_EVENTS, n::TEXT_ID);
    let sql = format!(
        "SELECT e.domainId, e.globalTid, coalesce(e.text, {}) FROM {} AS e WHERE e.eventType = \
         {DOMAIN_CREATE} ORDER BY e.start, e.rowid",
        if has_text_id && trace.schema().has_string_ids {
            format!("(SELECT s.value FROM {} AS s WHERE s.id = e.textId)", names::STRING_IDS)
        } else {
            "NULL".into()
        },
        quote_ident(names::NVTX_EVENTS),
    );
    let conn = trace.conn_with(&[names::NVTX_EVENTS])?;
    let mut stmt = conn.prepare(&sql).map_err(TraceError::from_sqlite)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, Option<i64>>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .map_err(TraceError::from_sqlite)?;
    let mut registered: HashMap<(i64, i64), String> = HashMap::default();
    for row in rows {
        let (id, tid, name) = row.map_err(TraceError::from_sqlite)?;
        if let (Some(id), Some(tid), Some(name)) = (id, tid, name) {
            registered.entry((id, process_of(tid))).or_insert(name);
        }
    }
    Ok(keys
        .iter()
        .map(|&(id, process)| match (id, process) {
            (Some(d), Some(p)) if d != 0 => match registered.get(&(d, p)) {
                Some(name) => {
                    Domain { id, process, name: name.clone(), source: DomainSource::Registered }
                }
                None => unnamed(id, process),
            },
            _ => unnamed(id, process),
        })
        .collect())
}

/// Launch records: rows of `CUPTI_ACTIVITY_KIND_RUNTIME` (CUDA runtime and driver API calls),
/// read only for the launch keys asked for and indexed by [`LaunchKey`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Launches {
    /// Start of the API call (ns).
    pub start: Vec<i64>,
    /// End of the API call (ns).
    pub end: Vec<i64>,
    /// `globalTid` of the calling thread.
    pub global_tid: Vec<i64>,
    /// `correlationId`.
    pub correlation: Vec<i64>,
    index: HashMap<LaunchKey, u32>,
    /// Whether the trace has no runtime table (CUDA API calls were not traced).
    pub table_absent: bool,
    /// Distinct keys asked for.
    pub requested: u64,
    /// Further rows with a key already read that are not nested in it (another thread, or
    /// disjoint in time): the earliest call is kept.
    pub duplicates: u64,
    /// Further rows with a key already read that nest on the same thread with the kept call:
    /// the versioned call inside the runtime call (`cudaLaunchKernel_v7000` inside
    /// `cudaLaunchKernel`, one correlation id). The outermost call is the launch; the inner
    /// ones are counted here, never as second launches.
    pub nested: u64,
    /// The PyTorch `record_param_comms` op each launch lies in, by key, where the trace
    /// records such ops (a PyTorch profiler trace: [`super::kineto::COLLECTIVE_LAUNCHES`]).
    pub collectives: HashMap<LaunchKey, Collective>,
    /// Whether the trace can record them (a PyTorch profiler trace), even if it holds none.
    pub collectives_recorded: bool,
}

/// A launch record as the launch scan reads it: key, `globalTid`, start, end.
#[cfg(feature = "columnar")]
type LaunchRow = (LaunchKey, i64, i64, i64);

/// For a columnar folder whose runtime table is not read into its database: the rows
/// [`Launches::load`] selects, read straight from the table's Parquet file in file order (the
/// order the database would hold them in), with the same filters and checks. None when the
/// table is in the database or a column is not an integer column: it is then read through
/// SQLite.
#[cfg(feature = "columnar")]
fn direct_launches(
    trace: &Trace,
    lo: i64,
    hi: i64,
    processes: &[i64],
    wanted: &HashSet<LaunchKey>,
) -> Result<Option<Vec<LaunchRow>>, TraceError> {
    let Some(path) = trace.unloaded_file(names::RUNTIME) else { return Ok(None) };
    let cols = [r::CORRELATION_ID, r::GLOBAL_TID, r::START, r::END];
    let asked: Vec<Option<&str>> = cols.iter().map(|&c| Some(c)).collect();
    let Some(mut columns) = super::columnar::IntColumns::open(names::RUNTIME, &path, &asked)?
    else {
        return Ok(None);
    };
    let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
        table: names::RUNTIME.into(),
        column: column.into(),
        detail: e.to_string(),
    };
    let mut out = Vec::new();
    while let Some(batch) = columns.next_batch()? {
        let rows = batch.iter().flatten().map(|a| a.len()).next().unwrap_or(0);
        for row in 0..rows {
            let v = super::kernels::BatchRow { columns: &batch, names: &cols, row };
            // The SQL's filters: the correlation-id range and the processes (NULLs fail both).
            let (Some(correlation), Some(global_tid)) = (v.value(0), v.value(1)) else {
                continue;
            };
            if correlation < lo
                || correlation > hi
                || processes.binary_search(&(global_tid >> 24)).is_err()
            {
                continue;
            }
            let key = LaunchKey { process: process_of(global_tid), correlation };
            if !wanted.contains(&key) {
                continue;
            }
            let start = v.not_null(2).map_err(|e| bad(r::START, e))?;
            let end = v.not_null(3).map_err(|e| bad(r::END, e))?;
            check_timestamp(names::RUNTIME, r::START, start)?;
            check_timestamp(names::RUNTIME, r::END, end)?;
            out.push((key, global_tid, start, end));
        }
    }
    Ok(Some(out))
}

/// What a PyTorch `record_param_comms` op around a launch says of its collective.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collective {
    /// `Process Group Name`: the same on every rank of the group.
    pub group: Option<String>,
    /// `Seq`: the call's sequence number in its process group.
    pub seq: Option<i64>,
}

impl Launches {
    /// The columns every load reads.
    pub const REQUIRES: &'static [Requirement] = &[Requirement {
        table: TableRole::Runtime,
        columns: &[r::START, r::END, r::GLOBAL_TID, r::CORRELATION_ID],
    }];

    /// Reads the launch records of the given keys. The correlation-id range of the keys is
    /// pushed into the SQL; rows inside it whose key was not asked for are skipped. An absent
    /// table gives no records and [`Launches::table_absent`].
    pub fn load(
        trace: &Trace,
        keys: impl IntoIterator<Item = LaunchKey>,
    ) -> Result<Launches, TraceError> {
        let wanted: HashSet<LaunchKey> = keys.into_iter().collect();
        let mut out = Launches {
            requested: wanted.len() as u64,
            collectives_recorded: trace.schema().has_table(super::kineto::COLLECTIVE_LAUNCHES),
            ..Launches::default()
        };
        if !trace.schema().has_table(names::RUNTIME) {
            out.table_absent = true;
            return Ok(out);
        }
        for req in Self::REQUIRES {
            trace.schema().require(req)?;
        }
        let (Some(lo), Some(hi)) = (
            wanted.iter().map(|k| k.correlation).min(),
            wanted.iter().map(|k| k.correlation).max(),
        ) else {
            return Ok(out);
        };
        // The processes of the keys and their correlation-id range, pushed into the SQL; the
        // table is read in rowid ranges over the cores, rows kept in rowid order.
        let mut processes: Vec<i64> = wanted.iter().map(|k| k.process).collect();
        processes.sort_unstable();
        processes.dedup();
        let in_processes = processes.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let sql = format!(
            "SELECT correlationId, globalTid, start, \"end\" FROM {} \
             WHERE correlationId BETWEEN {lo} AND {hi} AND globalTid IS NOT NULL \
             AND (globalTid >> 24) IN ({in_processes}) AND ",
            quote_ident(names::RUNTIME)
        );
        let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
            table: names::RUNTIME.into(),
            column: column.into(),
            detail: e.to_string(),
        };
        #[cfg(feature = "columnar")]
        if let Some(rows) = direct_launches(trace, lo, hi, &processes, &wanted)? {
            for (key, global_tid, start, end) in rows {
                out.push(key, global_tid, start, end);
            }
            out.load_collectives(trace, &wanted, lo, hi)?;
            return Ok(out);
        }
        let parts = super::split_scan(trace, names::RUNTIME, &mut |_| {}, |conn, range, _| {
            let mut stmt = conn
                .prepare(&format!("{sql}{range} ORDER BY rowid"))
                .map_err(TraceError::from_sqlite)?;
            let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
            let mut part: Vec<(LaunchKey, i64, i64, i64)> = Vec::new();
            while let Some(row) = rows.next().map_err(TraceError::from_sqlite)? {
                let correlation: i64 = row.get(0).map_err(|e| bad(r::CORRELATION_ID, e))?;
                let global_tid: i64 = row.get(1).map_err(|e| bad(r::GLOBAL_TID, e))?;
                let key = LaunchKey { process: process_of(global_tid), correlation };
                if !wanted.contains(&key) {
                    continue;
                }
                let start: i64 = row.get(2).map_err(|e| bad(r::START, e))?;
                let end: i64 = row.get(3).map_err(|e| bad(r::END, e))?;
                check_timestamp(names::RUNTIME, r::START, start)?;
                check_timestamp(names::RUNTIME, r::END, end)?;
                part.push((key, global_tid, start, end));
            }
            Ok(part)
        })?;
        for (key, global_tid, start, end) in parts.into_iter().flatten() {
            out.push(key, global_tid, start, end);
        }
        out.load_collectives(trace, &wanted, lo, hi)?;
        Ok(out)
    }

    /// The runtime records whose (process, `correlationId`) key occurs more than once, each key
    /// resolved as [`Launches::load`] resolves it: [`Launches::nested`] and
    /// [`Launches::duplicates`] count the records beyond the kept one. What `inspect` reports;
    /// an absent table or one without the columns gives no records.
    pub fn repeated_keys(trace: &Trace) -> Result<Launches, TraceError> {
        if !trace.schema().has_table(names::RUNTIME) {
            return Ok(Launches { table_absent: true, ..Launches::default() });
        }
        if Self::REQUIRES.iter().any(|req| trace.schema().require(req).is_err()) {
            return Ok(Launches::default());
        }
        let table = quote_ident(names::RUNTIME);
        let sql = format!(
            "SELECT correlationId, globalTid, start, \"end\" FROM {table} \
             WHERE globalTid IS NOT NULL AND correlationId IN \
             (SELECT correlationId FROM {table} WHERE correlationId IS NOT NULL \
              GROUP BY correlationId HAVING count(*) > 1) ORDER BY rowid"
        );
        let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
            table: names::RUNTIME.into(),
            column: column.into(),
            detail: e.to_string(),
        };
        let conn = trace.conn_with(&[names::RUNTIME])?;
        let mut stmt = conn.prepare(&sql).map_err(TraceError::from_sqlite)?;
        let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
        let mut records = Vec::new();
        while let Some(row) = rows.next().map_err(TraceError::from_sqlite)? {
            let correlation: i64 = row.get(0).map_err(|e| bad(r::CORRELATION_ID, e))?;
            let global_tid: i64 = row.get(1).map_err(|e| bad(r::GLOBAL_TID, e))?;
            let start: i64 = row.get(2).map_err(|e| bad(r::START, e))?;
            let end: i64 = row.get(3).map_err(|e| bad(r::END, e))?;
            check_timestamp(names::RUNTIME, r::START, start)?;
            check_timestamp(names::RUNTIME, r::END, end)?;
            records.push((global_tid, correlation, start, end));
        }
        Ok(Launches::from_rows(&records))
    }

    /// Reads the `record_param_comms` op of each wanted launch, where the trace has the table.
    fn load_collectives(
        &mut self,
        trace: &Trace,
        wanted: &HashSet<LaunchKey>,
        lo: i64,
        hi: i64,
    ) -> Result<(), TraceError> {
        let table = super::kineto::COLLECTIVE_LAUNCHES;
        if !self.collectives_recorded {
            return Ok(());
        }
        let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
            table: table.into(),
            column: column.into(),
            detail: e.to_string(),
        };
        let mut stmt = trace
            .conn()
            .prepare(&format!(
                "SELECT globalTid, correlationId, processGroup, seq FROM {} \
                 WHERE correlationId BETWEEN {lo} AND {hi}",
                quote_ident(table)
            ))
            .map_err(TraceError::from_sqlite)?;
        let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
        while let Some(row) = rows.next().map_err(TraceError::from_sqlite)? {
            let global_tid: i64 = row.get(0).map_err(|e| bad("globalTid", e))?;
            let correlation: i64 = row.get(1).map_err(|e| bad(r::CORRELATION_ID, e))?;
            let key = LaunchKey { process: process_of(global_tid), correlation };
            if wanted.contains(&key) {
                let group = row.get(2).map_err(|e| bad("processGroup", e))?;
                let seq = row.get(3).map_err(|e| bad("seq", e))?;
                self.collectives.insert(key, Collective { group, seq });
            }
        }
        Ok(())
    }

    /// Builds launch records from rows `(global_tid, correlation id, start, end)`, every key
    /// asked for, repeated keys resolved as a load resolves them.
    pub fn from_rows(rows: &[(i64, i64, i64, i64)]) -> Launches {
        let mut out = Launches::default();
        for &(global_tid, correlation, start, end) in rows {
            out.push(
                LaunchKey { process: process_of(global_tid), correlation },
                global_tid,
                start,
                end,
            );
        }
        out.requested = out.index.len() as u64;
        out
    }

    /// Joins the launch records of the files of a trace set, given in file order, each with
    /// its [`Remap`]: times shifted onto the set's clock and threads tagged with their file,
    /// rows in file order, indexed by their tagged keys (the keys of the kernels merged with
    /// the same remaps).
    ///
    /// The table is absent when it is absent from every file; keys asked for and duplicates
    /// add up. Two files whose keys meet (same remap tag) keep the earliest call, as one file
    /// does, and count a duplicate. No parts give no records.
    pub fn merge(parts: Vec<(Launches, Remap)>) -> Launches {
        let mut out = Launches {
            table_absent: !parts.is_empty() && parts.iter().all(|(p, _)| p.table_absent),
            ..Launches::default()
        };
        for (part, remap) in parts {
            out.requested = out.requested.saturating_add(part.requested);
            out.duplicates = out.duplicates.saturating_add(part.duplicates);
            out.nested = out.nested.saturating_add(part.nested);
            out.collectives_recorded |= part.collectives_recorded;
            for (key, c) in part.collectives {
                let key = LaunchKey { process: remap.process(key.process), ..key };
                out.collectives.entry(key).or_insert(c);
            }
            let rows =
                part.start.iter().zip(&part.end).zip(&part.global_tid).zip(&part.correlation);
            for (((&start, &end), &global_tid), &correlation) in rows {
                let key = LaunchKey { process: remap.process(process_of(global_tid)), correlation };
                out.push(key, remap.global_id(global_tid), remap.time(start), remap.time(end));
            }
        }
        out
    }

    /// Adds a record. A key already read keeps one record: of two calls on the same thread
    /// where one encloses the other, the enclosing one (a nested call, counted in
    /// [`Launches::nested`]); otherwise the earlier (a duplicate, [`Launches::duplicates`]).
    /// Ties: the earlier start, then the later end, then the row read first.
    fn push(&mut self, key: LaunchKey, global_tid: i64, start: i64, end: i64) {
        let Some(&i) = self.index.get(&key) else {
            self.index.insert(key, self.start.len() as u32);
            self.start.push(start);
            self.end.push(end);
            self.global_tid.push(global_tid);
            self.correlation.push(key.correlation);
            return;
        };
        let i = i as usize;
        let (kept_start, kept_end) = (self.start[i], self.end[i]);
        let nested = global_tid == self.global_tid[i]
            && ((start <= kept_start && end >= kept_end)
                || (kept_start <= start && kept_end >= end));
        if nested {
            self.nested = self.nested.saturating_add(1);
        } else {
            self.duplicates = self.duplicates.saturating_add(1);
        }
        if (start, std::cmp::Reverse(end)) < (kept_start, std::cmp::Reverse(kept_end)) {
            (self.start[i], self.end[i], self.global_tid[i]) = (start, end, global_tid);
        }
    }

    /// The row of a launch key.
    pub fn find(&self, key: LaunchKey) -> Option<usize> {
        self.index.get(&key).map(|&i| i as usize)
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// The earliest and latest call start: the bounds to read the NVTX ranges that can
    /// enclose these calls with ([`NvtxRanges::load`]).
    pub fn start_bounds(&self) -> Option<(i64, i64)> {
        Some((*self.start.iter().min()?, *self.start.iter().max()?))
    }

    /// The process id of row `i`.
    pub fn pid(&self, i: usize) -> i64 {
        pid_of(self.global_tid[i])
    }

    /// The thread id of row `i`.
    pub fn tid(&self, i: usize) -> i64 {
        tid_of(self.global_tid[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_ids_decode_by_shifts() {
        let g: i64 = (1 << 56) | (2 << 48) | (111 << 24) | 4242;
        assert_eq!(pid_of(g), 111);
        assert_eq!(pid_of((111 << 24) | 4242), 111);
        assert_eq!(tid_of(g), 4242);
        assert_eq!(process_of(g), (1 << 32) | (2 << 24) | 111);
    }

    #[test]
    fn ranges_sort_outer_first_and_close_unterminated() {
        let t = (7 << 24) | 1;
        let r = NvtxRanges::from_rows(&[
            (t, 10, Some(20), "inner", 0),
            (t, 5, None, "open", 0),
            (t, 10, Some(50), "outer", 0),
        ]);
        let names: Vec<&str> = (0..r.len()).map(|i| r.name_of(i)).collect();
        assert_eq!(names, ["open", "outer", "inner"]);
        assert_eq!(r.end[0], 50);
        assert!(r.unterminated[0]);
        assert_eq!(r.closed_at_ns, Some(50));
        assert_eq!(r.unterminated_count(), 1);
        assert_eq!(r.thread_rows(t), 0..3);
        assert_eq!(r.domain_of(0).name, "default");
    }

    #[test]
    fn a_call_nested_in_the_launch_on_its_thread_is_counted_as_nested_whatever_the_order() {
        // cudaLaunchKernel 352,044,764-352,102,717 and cudaLaunchKernel_v7000
        // 352,044,799-352,102,677, one correlation id, one thread (the extra-p export).
        let t = (5 << 24) | 9;
        let (outer, inner) =
            ((t, 415, 352_044_764, 352_102_717), (t, 415, 352_044_799, 352_102_677));
        for rows in [[outer, inner], [inner, outer]] {
            let l = Launches::from_rows(&rows);
            assert_eq!((l.len(), l.nested, l.duplicates), (1, 1, 0));
            let i = l.find(LaunchKey { process: 5, correlation: 415 }).unwrap();
            assert_eq!((l.start[i], l.end[i]), (352_044_764, 352_102_717));
        }
        // Same start: the longer call encloses the shorter one.
        let l = Launches::from_rows(&[(t, 1, 10, 20), (t, 1, 10, 30)]);
        assert_eq!((l.nested, l.duplicates, l.end[0]), (1, 0, 30));
        // The same interval on another thread of the process is a duplicate, not nested.
        let l = Launches::from_rows(&[(t, 1, 10, 20), (t + 1, 1, 12, 18)]);
        assert_eq!((l.nested, l.duplicates, l.tid(0)), (0, 1, 9));
    }

    #[test]
    fn launches_keep_the_earliest_duplicate() {
        let l = Launches::from_rows(&[((5 << 24) | 9, 1, 100, 110), ((5 << 24) | 9, 1, 90, 95)]);
        assert_eq!(l.len(), 1);
        assert_eq!(l.duplicates, 1);
        let i = l.find(LaunchKey { process: 5, correlation: 1 }).unwrap();
        assert_eq!((l.start[i], l.pid(i), l.tid(i)), (90, 5, 9));
        assert!(l.find(LaunchKey { process: 6, correlation: 1 }).is_none());
    }

    /// The thread of both files: one pid (4242) and tid (17), same hardware bits.
    const THREAD: i64 = (1 << 56) | (4242 << 24) | 17;

    fn remap(shift_ns: i64, file_tag: i64) -> Remap {
        Remap { shift_ns, devices: Default::default(), file_tag }
    }

    /// File A: an unterminated range in domain 1, two ranges in the default domain.
    fn ranges_a() -> NvtxRanges {
        let mut a = NvtxRanges::from_rows(&[
            (THREAD, 10, Some(20), "step", 0),
            (THREAD, 5, None, "open", 1),
            (THREAD, 10, Some(50), "outer", 0),
        ]);
        a.bounds = Some((0, 100));
        a.untexted = 1;
        a
    }

    /// File B: the same thread id, names shared with A in another order.
    fn ranges_b() -> NvtxRanges {
        let mut b = NvtxRanges::from_rows(&[
            (THREAD, 0, Some(30), "outer", 0),
            (THREAD, 15, None, "step", 0),
        ]);
        b.bounds = Some((-10, 40));
        b.untexted = 2;
        b
    }

    #[test]
    fn merging_ranges_with_the_identity_gives_them_back() {
        let a = ranges_a();
        assert_eq!(NvtxRanges::merge(vec![(a.clone(), Remap::identity())]), a);
        let absent = NvtxRanges { table_absent: true, bounds: Some((1, 2)), ..Default::default() };
        assert_eq!(NvtxRanges::merge(vec![(absent.clone(), Remap::identity())]), absent);
        assert_eq!(NvtxRanges::merge(Vec::new()), NvtxRanges::default());
    }

    #[test]
    fn ranges_of_two_files_sharing_a_thread_id_stay_apart() {
        let m = NvtxRanges::merge(vec![(ranges_a(), remap(1000, 1)), (ranges_b(), remap(990, 2))]);
        let (ta, tb) = ((1 << 48) | (4242 << 24) | 17, (2 << 48) | (4242 << 24) | 17);
        assert_eq!(m.global_tid, [Some(ta), Some(ta), Some(ta), Some(tb), Some(tb)]);
        assert_eq!(m.start, [1005, 1010, 1010, 990, 1005]);
        // Unterminated ranges keep the closing time of their file: 50 + 1000 and 30 + 990.
        assert_eq!(m.end, [1050, 1050, 1020, 1020, 1020]);
        assert_eq!(m.unterminated, [true, false, false, false, true]);
        let names: Vec<&str> = (0..m.len()).map(|i| m.name_of(i)).collect();
        assert_eq!(names, ["open", "outer", "step", "outer", "step"]);
        assert_eq!(m.names(), ["step", "open", "outer"]);
        assert_eq!(m.name, [1, 2, 0, 2, 0]);
        // The default domain of each file's process is its own.
        assert_eq!(m.domain, [1, 0, 0, 2, 2]);
        let domains: Vec<(Option<i64>, Option<i64>, &str)> =
            m.domains().iter().map(|d| (d.id, d.process, d.name.as_str())).collect();
        assert_eq!(
            domains,
            [
                (Some(0), Some((1 << 24) | 4242), "default"),
                (Some(1), Some((1 << 24) | 4242), "domain #1"),
                (Some(0), Some((2 << 24) | 4242), "default"),
            ]
        );
        // The untagged thread, above both tags, has no rows.
        assert_eq!(
            (m.thread_rows(ta), m.thread_rows(tb), m.thread_rows(THREAD)),
            (0..3, 3..5, 5..5)
        );
        assert_eq!((m.pid(4), m.tid(4)), (Some(4242), Some(17)));
        assert_eq!(m.bounds, Some((980, 1100)));
        assert_eq!(m.closed_at_ns, Some(1050));
        assert_eq!((m.untexted, m.unterminated_count(), m.table_absent), (3, 2, false));
    }

    #[test]
    fn ranges_of_one_thread_in_two_parts_interleave_and_ties_keep_file_order() {
        let t = (7 << 24) | 1;
        let x = NvtxRanges::from_rows(&[(t, 10, Some(20), "x", 0)]);
        let y = NvtxRanges::from_rows(&[(t, 10, Some(20), "y", 0), (t, 5, Some(30), "z", 0)]);
        let xy =
            NvtxRanges::merge(vec![(x.clone(), Remap::identity()), (y.clone(), Remap::identity())]);
        let names: Vec<&str> = (0..xy.len()).map(|i| xy.name_of(i)).collect();
        assert_eq!(names, ["z", "x", "y"]);
        assert_eq!(xy.domains().len(), 1);
        assert_eq!(xy.domain, [0, 0, 0]);
        // One file read without bounds: the set has none.
        assert_eq!(xy.bounds, None);
        let yx = NvtxRanges::merge(vec![(y, Remap::identity()), (x, Remap::identity())]);
        let names: Vec<&str> = (0..yx.len()).map(|i| yx.name_of(i)).collect();
        assert_eq!(names, ["z", "y", "x"]);
        let mut a = ranges_a();
        a.table_absent = true;
        let absent = NvtxRanges { table_absent: true, ..Default::default() };
        let m = NvtxRanges::merge(vec![(a.clone(), remap(0, 1)), (absent.clone(), remap(0, 2))]);
        assert!(m.table_absent);
        let m = NvtxRanges::merge(vec![(absent, remap(0, 1)), (ranges_b(), remap(0, 2))]);
        assert!(!m.table_absent);
    }

    #[test]
    fn merging_ranges_in_steps_gives_the_ranges_of_one_merge() {
        let mut c = NvtxRanges::from_rows(&[((4242 << 24) | 17, 1, Some(2), "third", 0)]);
        c.bounds = Some((0, 5));
        let ab = NvtxRanges::merge(vec![(ranges_a(), remap(1000, 1)), (ranges_b(), remap(990, 2))]);
        let stepwise = NvtxRanges::merge(vec![(ab, Remap::identity()), (c.clone(), remap(7, 3))]);
        let once = NvtxRanges::merge(vec![
            (ranges_a(), remap(1000, 1)),
            (ranges_b(), remap(990, 2)),
            (c, remap(7, 3)),
        ]);
        assert_eq!(stepwise, once);
        assert_eq!(once.start[5], 8);
        assert_eq!(once.name_of(5), "third");
        assert_eq!(once.domain_of(5).process, Some((3 << 24) | 4242));
        assert_eq!(once.bounds, Some((7, 1100)));
        assert_eq!(once.names(), ["step", "open", "outer", "third"]);
    }

    #[test]
    fn launches_of_two_files_sharing_a_process_are_found_by_their_tagged_keys() {
        let la = Launches::from_rows(&[
            (THREAD, 1, 100, 110),
            (THREAD, 2, 120, 130),
            (THREAD, 1, 90, 95),
        ]);
        let lb = Launches::from_rows(&[(THREAD, 1, 50, 60)]);
        assert_eq!(Launches::merge(vec![(la.clone(), Remap::identity())]), la);
        let m = Launches::merge(vec![(la.clone(), remap(1000, 1)), (lb.clone(), remap(2000, 2))]);
        let (ta, tb) = ((1 << 48) | (4242 << 24) | 17, (2 << 48) | (4242 << 24) | 17);
        assert_eq!(m.start, [1090, 1120, 2050]);
        assert_eq!(m.end, [1095, 1130, 2060]);
        assert_eq!(m.global_tid, [ta, ta, tb]);
        assert_eq!(m.correlation, [1, 2, 1]);
        assert_eq!((m.requested, m.duplicates, m.table_absent), (3, 1, false));
        let (pa, pb) = ((1 << 24) | 4242, (2 << 24) | 4242);
        assert_eq!(m.find(LaunchKey { process: pa, correlation: 1 }), Some(0));
        assert_eq!(m.find(LaunchKey { process: pa, correlation: 2 }), Some(1));
        assert_eq!(m.find(LaunchKey { process: pb, correlation: 1 }), Some(2));
        // B has no launch 2 of its own, and the untagged key finds nothing.
        assert_eq!(m.find(LaunchKey { process: pb, correlation: 2 }), None);
        assert_eq!(m.find(LaunchKey { process: (1 << 32) | 4242, correlation: 1 }), None);
        assert_eq!((m.pid(2), m.tid(2)), (4242, 17));
        assert_eq!(m.start_bounds(), Some((1090, 2050)));

        // Untagged, the keys meet: the earliest call is kept, a duplicate counted.
        let same =
            Launches::merge(vec![(la.clone(), Remap::identity()), (lb.clone(), Remap::identity())]);
        assert_eq!(
            (same.start, same.end, same.correlation),
            (vec![50, 120], vec![60, 130], vec![1, 2])
        );
        assert_eq!((same.requested, same.duplicates), (3, 2));

        let lc = Launches::from_rows(&[((4242 << 24) | 3, 5, 1, 2)]);
        let ab = Launches::merge(vec![(la.clone(), remap(1000, 1)), (lb.clone(), remap(2000, 2))]);
        let stepwise = Launches::merge(vec![(ab, Remap::identity()), (lc.clone(), remap(10, 3))]);
        let once =
            Launches::merge(vec![(la, remap(1000, 1)), (lb, remap(2000, 2)), (lc, remap(10, 3))]);
        assert_eq!(stepwise, once);
        assert_eq!(once.find(LaunchKey { process: (3 << 24) | 4242, correlation: 5 }), Some(3));
        assert_eq!(once.start[3], 11);

        let absent = Launches { table_absent: true, requested: 4, ..Default::default() };
        let m = Launches::merge(vec![(absent.clone(), remap(0, 1)), (absent.clone(), remap(0, 2))]);
        assert!(m.table_absent && m.is_empty());
        assert_eq!(m.requested, 8);
        let m =
            Launches::merge(vec![(absent, remap(0, 1)), (Launches::from_rows(&[]), remap(0, 2))]);
        assert!(!m.table_absent);
        assert!(!Launches::merge(Vec::new()).table_absent);
    }

    /// Launch records read in rowid ranges on several connections equal one pass.
    #[test]
    fn a_split_launch_scan_equals_one_pass() {
        for name in ["day26/megatron.sqlite", "nsys-ai/mfu_2gpu_before.sqlite"] {
            let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
            let trace = Trace::open(std::path::Path::new(&path)).unwrap();
            let k = crate::trace::Kernels::load_with_launch_keys(
                &trace,
                &Default::default(),
                &mut |_| {},
            )
            .unwrap();
            let keys: Vec<LaunchKey> = (0..k.len()).filter_map(|i| k.launch_key(i)).collect();
            let whole = Launches::load(&trace, keys.clone()).unwrap();
            assert!(!whole.is_empty(), "{name}");
            for parts in [2, 5] {
                let split = crate::trace::with_split(1, parts, || {
                    Launches::load(&trace, keys.clone()).unwrap()
                });
                assert_eq!(split, whole, "{name} {parts} parts");
            }
            // The ranges likewise, whole and in bounds.
            for bounds in [None, whole.start_bounds()] {
                let one = NvtxRanges::load(&trace, bounds).unwrap();
                assert!(!one.is_empty(), "{name}");
                for parts in [2, 3, 7] {
                    let split = crate::trace::with_split(1, parts, || {
                        NvtxRanges::load(&trace, bounds).unwrap()
                    });
                    assert_eq!(split, one, "{name} {parts} parts");
                }
            }
        }
    }

    #[test]
    fn a_projection_span_takes_the_range_and_the_ranges_inside_it_on_its_devices() {
        // Thread T: range 10-100 projected on device 0 stream 7 (40-60) and device 1 (45-70);
        // a range inside it (20-30) projected on device 0 stream 9 (35-80); a range of
        // another thread over the same times (0-200) projected at 1-500.
        let t = THREAD;
        let p = GpuProjections {
            recorded: true,
            range_tid: vec![t, t, t, t + 1],
            range_start: vec![10, 10, 20, 0],
            range_end: vec![100, 100, 30, 200],
            device: vec![0, 1, 0, 0],
            stream: vec![7, 7, 9, 7],
            start: vec![40, 45, 35, 1],
            end: vec![60, 70, 80, 500],
            untied: 0,
        };
        assert_eq!(p.span_of(t, 10, 100, &[0]), Some(((35, 80), true)));
        assert_eq!(p.span_of(t, 10, 100, &[0, 1]), Some(((35, 80), true)));
        assert_eq!(p.span_of(t, 10, 100, &[1]), Some(((45, 70), true)));
        // The inner range alone; a range around the outer one has none of its own.
        assert_eq!(p.span_of(t, 20, 30, &[0]), Some(((35, 80), true)));
        assert_eq!(p.span_of(t, 5, 120, &[0]), Some(((35, 80), false)));
        assert_eq!(p.span_of(t, 10, 100, &[2]), None);
        // In a set: times shifted, threads tagged, devices renumbered as ranks.
        let r = Remap { shift_ns: 1000, devices: [(0, 3), (1, 4)].into(), file_tag: 2 };
        let m =
            GpuProjections::merge(vec![(GpuProjections::default(), &Remap::identity()), (p, &r)]);
        assert!(m.recorded);
        let tagged = r.global_id(t);
        assert_eq!(m.span_of(tagged, 1010, 1100, &[3]), Some(((1035, 1080), true)));
        assert_eq!(m.span_of(t, 1010, 1100, &[3]), None);
        assert_eq!(m.device, vec![3, 4, 3, 3]);
    }
}
