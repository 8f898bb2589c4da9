//! NCCL's NVTX payload values: the communicator id, rank and number of ranks NCCL attaches to
//! its API ranges, read from `NVTX_EVENTS.binaryData` with the layouts of
//! `NVTX_PAYLOAD_SCHEMAS` and `NVTX_PAYLOAD_SCHEMA_ENTRIES`.
//!
//! Nsight Systems documents the column only as "binary payload" and writes values only when
//! exported with `--include-blobs=true`. What is decoded is what the published readers of
//! such exports agree on: a 32-byte header of four little-endian 64-bit words (domain id,
//! schema id, payload size, then 32 or 32 + payload size), the payload from byte 32, fields
//! at their schema entries' offsets with the NVTX payload extension's fixed-size types. A
//! value outside that is undecodable, with its reason; it is never read another way.

use std::collections::BTreeMap;

use super::names::{self, nvtx as n, payload as p};
use super::remap::Remap;
use super::{Trace, TraceError, quote_ident};

/// The size of the header before a payload.
pub const HEADER_BYTES: usize = 32;

/// The entry names NCCL gives its payload fields (`nvtx_payload_schemas.h`).
pub mod entry {
    /// The communicator's id (NCCL's hash of it, the same on every rank of it).
    pub const COMM_ID: &str = "NCCL communicator ID";
    /// The calling rank within the communicator (comm init).
    pub const RANK: &str = "Rank";
    /// The communicator's size (comm init).
    pub const NRANKS: &str = "No. of ranks";
}

/// What one NCCL range's payload says, where it says it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NcclPayload {
    /// [`entry::COMM_ID`]; None when the schema has no such entry (the NCCL of the DSL
    /// exports sends no communicator with its calls; 2.25's does).
    pub comm: Option<u64>,
    /// [`entry::RANK`].
    pub rank: Option<i64>,
    /// [`entry::NRANKS`].
    pub nranks: Option<i64>,
}

/// A range's payload, decoded or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// The values read.
    Values(NcclPayload),
    /// Why the bytes cannot be read (a sentence for a note).
    Undecodable(String),
}

/// One schema: its declared size and its entries by index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Schema {
    size: Option<i64>,
    entries: BTreeMap<i64, Entry>,
    /// Set when the tables give two different layouts for it.
    conflict: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    flags: Option<i64>,
    ty: Option<i64>,
    name: Option<String>,
    offset: Option<i64>,
}

/// The schemas of an export by (domain, schema id).
type Layouts = BTreeMap<(i64, i64), Schema>;

/// Per range start on a thread: each range's end (None: unterminated) and payload.
type ByStart = BTreeMap<(i64, i64), Vec<(Option<i64>, Decoded)>>;

/// The payloads of the ranges that carry one, keyed by the range's thread and start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Payloads {
    /// Per (`globalTid`, start): each range's end (None: unterminated) and payload.
    rows: ByStart,
}

/// Whether the trace can tie an NCCL kernel to its collective beyond its order: NCCL payload
/// values in `NVTX_EVENTS.binaryData` (the communicator), or PyTorch's `record_param_comms`
/// ops (process group and `Seq`). Free when the export says it kept no blobs
/// (`EXPORT_PARAM_INCLUDE_BLOBS` false, the default of `nsys export`) or has no such column or
/// table; otherwise one row is looked for.
pub fn nccl_ties_recorded(trace: &Trace) -> Result<bool, TraceError> {
    let schema = trace.schema();
    if schema.has_table(super::kineto::COLLECTIVE_LAUNCHES) {
        return Ok(true);
    }
    if schema.blobs_exported == Some(false)
        || !schema.has_table(names::NVTX_EVENTS)
        || !schema.has_column(names::NVTX_EVENTS, n::BINARY_DATA)
    {
        return Ok(false);
    }
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM {} WHERE eventType IN ({}, {}) \
         AND binaryData IS NOT NULL AND globalTid IS NOT NULL)",
        quote_ident(names::NVTX_EVENTS),
        super::nvtx::PUSH_POP_RANGE,
        super::nvtx::START_END_RANGE
    );
    trace
        .conn_with(&[names::NVTX_EVENTS])?
        .query_row(&sql, [], |r| r.get::<_, bool>(0))
        .map_err(TraceError::from_sqlite)
}

impl Payloads {
    /// Reads the payload of every push/pop or start/end range that has one (`binaryData` not
    /// NULL), within the bounds the ranges were read with. An export without the column, or
    /// with no value in it, gives none.
    pub fn load(trace: &Trace, bounds: Option<(i64, i64)>) -> Result<Payloads, TraceError> {
        let schema = trace.schema();
        let mut out = Payloads::default();
        if !schema.has_table(names::NVTX_EVENTS)
            || !schema.has_column(names::NVTX_EVENTS, n::BINARY_DATA)
        {
            return Ok(out);
        }
        let where_bounds = match bounds {
            Some((a, b)) => format!(" AND start <= {b} AND (\"end\" IS NULL OR \"end\" >= {a})"),
            None => String::new(),
        };
        let sql = format!(
            "SELECT globalTid, start, \"end\", domainId, binaryData FROM {} \
             WHERE eventType IN ({}, {}) AND binaryData IS NOT NULL{where_bounds}",
            quote_ident(names::NVTX_EVENTS),
            super::nvtx::PUSH_POP_RANGE,
            super::nvtx::START_END_RANGE
        );
        let conn = trace.conn_with(&[names::NVTX_EVENTS])?;
        let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
            table: names::NVTX_EVENTS.into(),
            column: column.into(),
            detail: e.to_string(),
        };
        let mut stmt = conn.prepare(&sql).map_err(TraceError::from_sqlite)?;
        let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
        let mut schemas: Option<Result<Layouts, String>> = None;
        while let Some(row) = rows.next().map_err(TraceError::from_sqlite)? {
            let Some(tid) = row.get::<_, Option<i64>>(0).map_err(|e| bad(n::GLOBAL_TID, e))? else {
                // A range of no thread encloses no launch.
                continue;
            };
            let start: i64 = row.get(1).map_err(|e| bad(n::START, e))?;
            let end: Option<i64> = row.get(2).map_err(|e| bad(n::END, e))?;
            let domain: Option<i64> = row.get(3).map_err(|e| bad(n::DOMAIN_ID, e))?;
            let layouts = schemas.get_or_insert_with(|| read_schemas(trace));
            let decoded = match (row.get_ref(4).map_err(|e| bad(n::BINARY_DATA, e))?, layouts) {
                (_, Err(why)) => Decoded::Undecodable(why.clone()),
                (rusqlite::types::ValueRef::Blob(bytes), Ok(layouts)) => {
                    decode(bytes, domain, layouts)
                }
                (other, _) => Decoded::Undecodable(format!(
                    "`binaryData` holds a {} value, not bytes",
                    match other {
                        rusqlite::types::ValueRef::Text(_) => "text",
                        rusqlite::types::ValueRef::Integer(_) => "integer",
                        _ => "real",
                    }
                )),
            };
            out.rows.entry((tid, start)).or_default().push((end, decoded));
        }
        Ok(out)
    }

    /// Payloads from rows, for tests: `(global_tid, start, end, decoded)`.
    pub fn from_rows(rows: Vec<(i64, i64, Option<i64>, Decoded)>) -> Payloads {
        let mut out = Payloads::default();
        for (tid, start, end, d) in rows {
            out.rows.entry((tid, start)).or_default().push((end, d));
        }
        out
    }

    /// Joins the payloads of a set's files: times on the set's clock, threads tagged with
    /// their file, as [`super::nvtx::NvtxRanges::merge`] does to the ranges.
    pub fn merge(parts: Vec<(Payloads, &Remap)>) -> Payloads {
        let mut out = Payloads::default();
        for (part, remap) in parts {
            for ((tid, start), list) in part.rows {
                let key = (remap.global_id(tid), remap.time(start));
                let shifted = list.into_iter().map(|(end, d)| (end.map(|e| remap.time(e)), d));
                out.rows.entry(key).or_default().extend(shifted);
            }
        }
        out
    }

    /// Whether no range carries a payload.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The payload of the range of thread `global_tid` that runs from `start` to `end`
    /// (None: unterminated). Two such ranges with different payloads are undecodable: which
    /// belongs to which cannot be told.
    pub fn get(&self, global_tid: i64, start: i64, end: Option<i64>) -> Option<Decoded> {
        let found: Vec<&Decoded> = self
            .rows
            .get(&(global_tid, start))?
            .iter()
            .filter(|(e, _)| *e == end)
            .map(|(_, d)| d)
            .collect();
        match found.as_slice() {
            [] => None,
            [one] => Some((*one).clone()),
            [first, rest @ ..] if rest.iter().all(|d| d == first) => Some((*first).clone()),
            _ => Some(Decoded::Undecodable(
                "two ranges of one thread with the same start and end carry different payloads"
                    .into(),
            )),
        }
    }
}

/// The layouts of the export's payload schemas, or why there are none to use.
fn read_schemas(trace: &Trace) -> Result<Layouts, String> {
    let schema = trace.schema();
    for (table, columns) in [
        (p::SCHEMAS, &[p::DOMAIN_ID, p::SCHEMA_ID, p::PAYLOAD_SIZE][..]),
        (
            p::SCHEMA_ENTRIES,
            &[p::DOMAIN_ID, p::SCHEMA_ID, p::IDX, p::FLAGS, p::TYPE, p::NAME, p::OFFSET][..],
        ),
    ] {
        if !schema.has_table(table) {
            return Err(format!("the export has payloads but no `{table}` table to read them"));
        }
        if let Some(c) = columns.iter().find(|c| !schema.has_column(table, c)) {
            return Err(format!("table `{table}` lacks column `{c}`"));
        }
    }
    let conn = trace.conn();
    let fail = |table: &str, e: rusqlite::Error| format!("table `{table}` cannot be read ({e})");
    let mut out: Layouts = BTreeMap::new();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT domainId, schemaId, payloadSize FROM {}",
            quote_ident(p::SCHEMAS)
        ))
        .map_err(|e| fail(p::SCHEMAS, e))?;
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?, r.get(2)?))
        })
        .map_err(|e| fail(p::SCHEMAS, e))?;
    for row in rows {
        let (domain, id, size): (Option<i64>, Option<i64>, Option<i64>) =
            row.map_err(|e| fail(p::SCHEMAS, e))?;
        let (Some(domain), Some(id)) = (domain, id) else { continue };
        let s = out.entry((domain, id)).or_default();
        // The same schema may be listed once per process that registered it.
        match (s.size, size) {
            (Some(a), Some(b)) if a != b => s.conflict = true,
            (None, Some(b)) => s.size = Some(b),
            _ => {}
        }
    }
    let mut stmt = conn
        .prepare(&format!(
            "SELECT domainId, schemaId, idx, flags, type, name, \"offset\" FROM {}",
            quote_ident(p::SCHEMA_ENTRIES)
        ))
        .map_err(|e| fail(p::SCHEMA_ENTRIES, e))?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, Option<i64>>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<i64>>(2)?,
                Entry { flags: r.get(3)?, ty: r.get(4)?, name: r.get(5)?, offset: r.get(6)? },
            ))
        })
        .map_err(|e| fail(p::SCHEMA_ENTRIES, e))?;
    for row in rows {
        let (domain, id, idx, entry) = row.map_err(|e| fail(p::SCHEMA_ENTRIES, e))?;
        let (Some(domain), Some(id), Some(idx)) = (domain, id, idx) else { continue };
        let s = out.entry((domain, id)).or_default();
        match s.entries.get(&idx) {
            Some(old) if *old != entry => s.conflict = true,
            Some(_) => {}
            None => {
                s.entries.insert(idx, entry);
            }
        }
    }
    Ok(out)
}

/// The width in bytes and signedness of the fixed-size integer entry types of the NVTX
/// payload extension (`NVTX_PAYLOAD_ENTRY_TYPE_*`; `int` is 32 bits on the LP64 hosts nsys
/// profiles). Other types are not read.
fn int_type(ty: i64) -> Option<(usize, bool)> {
    match ty {
        5 | 15 => Some((4, true)),   // INT, INT32
        6 | 16 => Some((4, false)),  // UINT, UINT32
        9 | 17 => Some((8, true)),   // LONGLONG, INT64
        10 | 18 => Some((8, false)), // ULONGLONG, UINT64
        _ => None,
    }
}

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Decodes one `binaryData` value of a range of domain `domain`.
fn decode(bytes: &[u8], domain: Option<i64>, schemas: &Layouts) -> Decoded {
    let bad = |why: String| Decoded::Undecodable(why);
    if bytes.len() < HEADER_BYTES {
        return bad(format!(
            "{} bytes, shorter than the {HEADER_BYTES}-byte payload header",
            bytes.len()
        ));
    }
    let (d, id, size, fourth) = (word(bytes, 0), word(bytes, 8), word(bytes, 16), word(bytes, 24));
    let Some(domain) = domain else {
        return bad("the range has no `domainId` to check the header against".into());
    };
    if i64::try_from(d) != Ok(domain) {
        return bad(format!("the header names domain {d}, the range is in domain {domain}"));
    }
    let held = (bytes.len() - HEADER_BYTES) as u64;
    if size != held {
        return bad(format!("the header gives {size} payload bytes, {held} follow it"));
    }
    if fourth != HEADER_BYTES as u64 && fourth != HEADER_BYTES as u64 + size {
        return bad(format!(
            "the header's fourth word is {fourth}, neither {HEADER_BYTES} nor {HEADER_BYTES} + the payload size: a layout not documented"
        ));
    }
    let Some(schema) = i64::try_from(id).ok().and_then(|id| schemas.get(&(domain, id))) else {
        return bad(format!("schema {id} of domain {domain} is not in `{}`", p::SCHEMAS));
    };
    if schema.conflict {
        return bad(format!("schema {id} of domain {domain} is listed with two layouts"));
    }
    if let Some(s) = schema.size
        && s != size as i64
    {
        return bad(format!("schema {id} declares {s} bytes, the payload has {size}"));
    }
    let payload = &bytes[HEADER_BYTES..];
    let field = |name: &str| -> Result<Option<(u64, bool, usize)>, String> {
        let found: Vec<(&i64, &Entry)> =
            schema.entries.iter().filter(|(_, e)| e.name.as_deref() == Some(name)).collect();
        let (idx, e) = match found.as_slice() {
            [] => return Ok(None),
            [one] => *one,
            _ => return Err(format!("schema {id} has two entries named `{name}`")),
        };
        if e.flags.is_some_and(|f| f != 0) {
            return Err(format!(
                "entry `{name}` has flags {} (a pointer or array)",
                e.flags.unwrap_or(0)
            ));
        }
        // NVTX: an entry without an explicit offset follows self-alignment; only the first
        // entry's position follows from that without the platform's type table.
        let offset = match (e.offset, *idx) {
            (Some(o), _) if o >= 0 => o as usize,
            (None, 0) => 0,
            _ => return Err(format!("entry `{name}` of schema {id} has no offset")),
        };
        let Some((width, signed)) = e.ty.and_then(int_type) else {
            return Err(format!(
                "entry `{name}` has type {}, not a fixed-size integer",
                e.ty.map_or("NULL".to_string(), |t| t.to_string())
            ));
        };
        let Some(raw) = payload.get(offset..offset + width) else {
            return Err(format!(
                "entry `{name}` at byte {offset} lies beyond the {size}-byte payload"
            ));
        };
        let mut w = [0u8; 8];
        w[..width].copy_from_slice(raw);
        Ok(Some((u64::from_le_bytes(w), signed, width)))
    };
    let int = |v: Option<(u64, bool, usize)>| {
        v.map(|(x, signed, width)| match (signed, width) {
            (true, 4) => i64::from(x as u32 as i32),
            (false, 4) => i64::from(x as u32),
            _ => x as i64,
        })
    };
    let values = (|| -> Result<NcclPayload, String> {
        let comm = match field(entry::COMM_ID)? {
            Some((x, false, 8)) => Some(x),
            Some(_) => {
                return Err(format!(
                    "entry `{}` is not an unsigned 64-bit integer",
                    entry::COMM_ID
                ));
            }
            None => None,
        };
        Ok(NcclPayload { comm, rank: int(field(entry::RANK)?), nranks: int(field(entry::NRANKS)?) })
    })();
    match values {
        Ok(v) => Decoded::Values(v),
        Err(why) => bad(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NCCL 2.25's comm-init and all-reduce schemas of domain 1, as an export lists them
    /// (the first entry's offset NULL).
    fn schemas() -> Layouts {
        let e = |ty: i64, name: &str, offset: Option<i64>| Entry {
            flags: None,
            ty: Some(ty),
            name: Some(name.into()),
            offset,
        };
        let mut out = BTreeMap::new();
        out.insert(
            (1, 16777218),
            Schema {
                size: Some(24),
                entries: BTreeMap::from([
                    (0, e(18, entry::COMM_ID, None)),
                    (1, e(5, entry::NRANKS, Some(8))),
                    (2, e(5, entry::RANK, Some(12))),
                    (3, e(5, "CUDA device", Some(16))),
                ]),
                conflict: false,
            },
        );
        out.insert(
            (1, 16777223),
            Schema {
                size: Some(24),
                entries: BTreeMap::from([
                    (0, e(18, entry::COMM_ID, None)),
                    (1, e(22, "Message size [bytes]", Some(8))),
                    (2, e(16777232, "Reduction operation", Some(16))),
                ]),
                conflict: false,
            },
        );
        out
    }

    fn blob(words: [u64; 4], payload: &[u8]) -> Vec<u8> {
        let mut b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        b.extend_from_slice(payload);
        b
    }

    fn init_payload(comm: u64, nranks: i32, rank: i32, dev: i32) -> Vec<u8> {
        let mut p = comm.to_le_bytes().to_vec();
        for x in [nranks, rank, dev, 0] {
            p.extend_from_slice(&x.to_le_bytes());
        }
        p
    }

    #[test]
    fn a_comm_init_payload_gives_communicator_rank_and_size() {
        let p = init_payload(0xDEAD_BEEF_0000_0001, 9, 4, 1);
        for fourth in [32, 56] {
            let d = decode(&blob([1, 16777218, 24, fourth], &p), Some(1), &schemas());
            assert_eq!(
                d,
                Decoded::Values(NcclPayload {
                    comm: Some(0xDEAD_BEEF_0000_0001),
                    rank: Some(4),
                    nranks: Some(9)
                })
            );
        }
        // An all-reduce payload: the communicator only.
        let mut p = 7u64.to_le_bytes().to_vec();
        p.extend_from_slice(&2_097_152u64.to_le_bytes());
        p.extend_from_slice(&[0; 8]);
        let d = decode(&blob([1, 16777223, 24, 32], &p), Some(1), &schemas());
        assert_eq!(d, Decoded::Values(NcclPayload { comm: Some(7), rank: None, nranks: None }));
    }

    #[test]
    fn what_the_header_does_not_explain_is_undecodable_with_its_reason() {
        let p = init_payload(5, 2, 0, 0);
        let why = |b: &[u8], domain: Option<i64>| match decode(b, domain, &schemas()) {
            Decoded::Undecodable(w) => w,
            d => panic!("decoded {d:?}"),
        };
        assert!(why(&p[..20], Some(1)).contains("shorter than the 32-byte"));
        assert!(why(&blob([2, 16777218, 24, 32], &p), Some(1)).contains("names domain 2"));
        assert!(
            why(&blob([1, 16777218, 24, 32], &p[..16]), Some(1)).contains("24 payload bytes, 16")
        );
        assert!(why(&blob([1, 16777218, 24, 40], &p), Some(1)).contains("not documented"));
        assert!(why(&blob([1, 99, 24, 32], &p), Some(1)).contains("schema 99 of domain 1"));
        let mut s = schemas();
        s.get_mut(&(1, 16777218)).unwrap().entries.get_mut(&1).unwrap().offset = Some(22);
        match decode(&blob([1, 16777218, 24, 32], &p), Some(1), &s) {
            Decoded::Undecodable(w) => assert!(w.contains("beyond the 24-byte payload"), "{w}"),
            d => panic!("{d:?}"),
        }
    }

    #[test]
    fn payloads_are_found_by_thread_start_and_end() {
        let v = |c| Decoded::Values(NcclPayload { comm: Some(c), ..Default::default() });
        let p = Payloads::from_rows(vec![
            (7, 100, Some(200), v(1)),
            (7, 100, Some(300), v(2)),
            (8, 100, None, v(3)),
        ]);
        assert_eq!(p.get(7, 100, Some(300)), Some(v(2)));
        assert_eq!(p.get(8, 100, None), Some(v(3)));
        assert_eq!(p.get(8, 100, Some(5)), None);
        let m = Payloads::merge(vec![(p, &Remap { shift_ns: 10, ..Remap::identity() })]);
        assert_eq!(m.get(7, 110, Some(210)), Some(v(1)));
    }
}
