//! PyTorch profiler (Kineto) traces: Chrome-trace JSON, plain or gzip, read into the tables
//! of an Nsight Systems export so that every scan, analysis and claim reads them unchanged.
//!
//! The file is streamed once (`serde_json`'s reader over `traceEvents`, one event at a time,
//! through `flate2` for gzip): only the categories the analyses read are kept, each as a row
//! of the table nsys would write it to, in a database of its own in the temporary folder
//! (deleted when the trace is closed; never beside the trace, which is only read). The reader
//! holds one event and SQLite's page cache, whatever the size of the file.
//!
//! Times are exact: `ts` and `dur` are decimal µs with up to three fraction digits, read from
//! their digits into integer ns (never through a float). The clock is the rank's host clock
//! as Kineto wrote it; `baseTimeNanoseconds` puts it on UTC (`UTC = base + ts`); a trace
//! without it has `ts` on the UTC epoch already, as older Kineto versions wrote it.
//!
//! What maps to what:
//!
//! | Kineto | table | columns |
//! |---|---|---|
//! | `kernel` | `CUPTI_ACTIVITY_KIND_KERNEL` | `args.device`, `args.stream`, `args.correlation`; the name as `demangledName`, its base name as `shortName`; `globalPid` from the launching runtime call |
//! | `gpu_memcpy` | `CUPTI_ACTIVITY_KIND_MEMCPY` | `args.bytes`, `copyKind` from the name (`Memcpy HtoD (...)`) |
//! | `gpu_memset` | `CUPTI_ACTIVITY_KIND_MEMSET` | `args.bytes` |
//! | `cuda_runtime`, `cuda_driver` | `CUPTI_ACTIVITY_KIND_RUNTIME` | `args.correlation`, `pid`/`tid` as `globalTid` |
//! | `user_annotation`, `ProfilerStep#N` | `NVTX_EVENTS` | push/pop ranges (59) in domain 0 on `pid`/`tid`; `args["External id"]` as `externalId` |
//! | `gpu_user_annotation` | [`GPU_ANNOTATIONS`] | `pid` as `deviceId`, `tid` as `streamId`, `args["External id"]` (that of the CPU annotation it projects) |
//! | `deviceProperties` | `TARGET_INFO_GPU` | `id`, `name` |
//! | `baseTimeNanoseconds` + first `ts` | `TARGET_INFO_SESSION_START_TIME` | `utcEpochNs` |
//! | `host_name`/`hostname` | `TARGET_INFO_SYSTEM_ENV` | `Hostname` |
//! | `cpu_op` `record_param_comms` | [`PARAM_COMMS`], then [`COLLECTIVE_LAUNCHES`] | `args["Process Group Name"]`, `args.Seq`; each runtime call inside one (innermost, same thread) |
//!
//! The `record_param_comms` tables are of this source alone (nsys has no such thing): PyTorch
//! wraps each collective call of a process group in a `record_param_comms` op, and the launch
//! of the NCCL kernel lies inside it on the calling thread. Tying every runtime call to the op
//! around it gives each kernel (through its correlation) its process group and sequence
//! number, which `nccl-skew` and `nccl-calls` match ranks by.
//!
//! So is [`GPU_ANNOTATIONS`]: Kineto writes, per CPU annotation and GPU stream, the span of the
//! GPU work launched while that annotation was the innermost on its thread. Each row keeps the
//! External id of its CPU annotation, which `NVTX_EVENTS.externalId` holds: the tie is a join,
//! and a projection whose annotation is not in the file (it began before the capture) stays
//! untied, counted in [`KinetoInfo::gpu_annotations_tied`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{BufReader, Read};
use std::path::Path;

use rusqlite::{Connection, params};
use rustc_hash::FxHashMap as HashMap;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::TraceError;

/// The gzip magic.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether a file's first bytes are a Kineto trace's: gzip, or a JSON object (`{` after
/// white space).
pub fn looks_like_kineto(head: &[u8]) -> bool {
    head.starts_with(&GZIP_MAGIC)
        || head.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|&b| b == b'{')
}

/// What a Kineto trace says about itself, beside its events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KinetoInfo {
    /// Whether the file is gzip-compressed.
    pub gzip: bool,
    /// `schemaVersion`.
    pub schema_version: Option<String>,
    /// `baseTimeNanoseconds`: UTC-epoch ns of the clock's 0.
    pub base_time_ns: Option<i64>,
    /// `distributedInfo.rank`.
    pub rank: Option<i64>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<i64>,
    /// `distributedInfo.backend`.
    pub backend: Option<String>,
    /// `distributedInfo.nccl_version`.
    pub nccl_version: Option<String>,
    /// `distributedInfo.pg_config`, as written (compact JSON), compared across a set.
    pub process_groups: Option<String>,
    /// Events read, and those kept, per category (`ph`/`cat`).
    pub events: u64,
    /// Events kept by category.
    pub kept: BTreeMap<String, u64>,
    /// `gpu_user_annotation` events: the GPU projections of annotations, read into
    /// [`GPU_ANNOTATIONS`].
    pub gpu_annotations: u64,
    /// Of them, those whose External id is that of a CPU annotation of the file.
    pub gpu_annotations_tied: u64,
    /// Kernels, copies and sets whose `correlation` matches no runtime call: no process.
    pub unlaunched: u64,
    /// The earliest start of a kept event (ns, the file's clock): where the capture starts.
    pub first_ts_ns: Option<i64>,
    /// The layout when it is not the current one: `PyTorch 1.8-1.9` for the capitalised
    /// categories (`Kernel`, `Runtime`, `Memcpy`, `Memset`, `Operator`), read as their later
    /// names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
}

/// The categories PyTorch 1.8 and 1.9 wrote, with the names later versions give them.
const LEGACY_CATEGORIES: &[(&str, &str)] = &[
    ("Kernel", "kernel"),
    ("Runtime", "cuda_runtime"),
    ("Memcpy", "gpu_memcpy"),
    ("Memset", "gpu_memset"),
    ("Operator", "cpu_op"),
];

/// The categories of complete events the reader keeps, as 1.10 and later name them.
const KNOWN_CATEGORIES: &[&str] = &[
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "cuda_runtime",
    "cuda_driver",
    "user_annotation",
    "gpu_user_annotation",
    "cpu_op",
];

/// What the reader reads, for the refusal of a file it cannot.
const LAYOUTS: &str = "PyTorch 1.8-1.9 (`Kernel`, `Runtime`, `Memcpy`, `Memset`, `Operator`), \
     1.10 and later (`kernel`, `cuda_runtime`, `cuda_driver`, `gpu_memcpy`, `gpu_memset`, \
     `cpu_op`, `user_annotation`, `gpu_user_annotation`)";

/// The `record_param_comms` ops: `start`, `end`, `globalTid`, `processGroup` (`args["Process
/// Group Name"]`), `seq` (`args.Seq`), each NULL where the op does not say.
pub const PARAM_COMMS: &str = "KINETO_PARAM_COMMS";

/// Each runtime call that lies inside a `record_param_comms` op on its thread, with that op's
/// process group and sequence number (the innermost op, where ops nest): `globalTid`,
/// `correlationId`, `processGroup`, `seq`.
pub const COLLECTIVE_LAUNCHES: &str = "KINETO_COLLECTIVE_LAUNCHES";

/// The GPU projections of annotations (`gpu_user_annotation`): `start`, `end`, `deviceId`
/// (the event's `pid`), `streamId` (its `tid`), `externalId` (`args["External id"]`, equal to
/// `NVTX_EVENTS.externalId` of the CPU annotation projected; NULL where absent), `text`. Times
/// as written, with the margin the writer adds for display (docs/kineto.md).
pub const GPU_ANNOTATIONS: &str = "KINETO_GPU_ANNOTATIONS";

/// A parse failure located in the file.
fn json_err(path: &Path, detail: impl fmt::Display) -> TraceError {
    TraceError::Kineto { path: path.to_path_buf(), detail: detail.to_string() }
}

/// Reads a Kineto trace into a new SQLite database at `db`, holding the nsys tables the scans
/// read. The trace itself is only read.
pub fn build(path: &Path, db: &Path) -> Result<KinetoInfo, TraceError> {
    let mut head = [0u8; 2];
    let mut f = super::open::open(path)?;
    let n = super::read_up_to(&mut f, &mut head)?;
    drop(f);
    let gzip = n == 2 && head == GZIP_MAGIC;
    let file = BufReader::with_capacity(1 << 20, super::open::open(path)?);
    let mut conn = Connection::open(db).map_err(TraceError::from_sqlite)?;
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -16384; \
         PRAGMA temp_store = FILE;",
    )
    .map_err(TraceError::from_sqlite)?;
    conn.execute_batch(DDL).map_err(TraceError::from_sqlite)?;
    let tx = conn.transaction().map_err(TraceError::from_sqlite)?;
    let mut info = KinetoInfo { gzip, ..KinetoInfo::default() };
    // serde_json reads its input a byte at a time: the decompressed side is buffered too, and
    // the reader's type is concrete, so that each byte is a buffer read, not a call.
    if gzip {
        let unzipped = BufReader::with_capacity(1 << 16, flate2::read::MultiGzDecoder::new(file));
        read_into(path, StringCap::new(unzipped), &tx, &mut info)?;
    } else {
        read_into(path, StringCap::new(file), &tx, &mut info)?;
    }
    tx.commit().map_err(TraceError::from_sqlite)?;
    Ok(info)
}

/// The longest JSON string (a name, a key, any text) a trace may hold, in bytes as written:
/// a longer one is refused as it is read, before it is held. The longest kernel names of
/// real traces (C++ templates) are tens of kilobytes.
pub const MAX_STRING_BYTES: usize = 4 << 20;

/// A reader that refuses a JSON string longer than [`MAX_STRING_BYTES`] as the bytes pass,
/// so that a small compressed file cannot make the parser hold a huge name.
struct StringCap<R> {
    inner: R,
    in_string: bool,
    escaped: bool,
    run: usize,
    offset: u64,
}

impl<R> StringCap<R> {
    fn new(inner: R) -> StringCap<R> {
        StringCap { inner, in_string: false, escaped: false, run: 0, offset: 0 }
    }
}

impl<R: Read> Read for StringCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            self.offset += 1;
            if !self.in_string {
                if b == b'"' {
                    self.in_string = true;
                    self.run = 0;
                }
                continue;
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                continue;
            }
            self.run += 1;
            if self.run > MAX_STRING_BYTES {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "a JSON string at byte {} (decompressed) is longer than {} bytes, the longest text a trace may hold",
                        self.offset - self.run as u64,
                        MAX_STRING_BYTES
                    ),
                ));
            }
        }
        Ok(n)
    }
}

/// Any JSON value, skipped as `IgnoredAny` does, but with every object's keys checked: a key
/// twice in one object is refused (JSON readers differ on which one counts).
struct NoDup;

impl<'de> DeserializeSeed<'de> for NoDup {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NoDup {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(NoDup)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("duplicate key `{key}` in one object")));
            }
            map.next_value_seed(NoDup)?;
        }
        Ok(())
    }
}

/// Refuses a key twice in any object of a JSON text.
fn no_duplicate_keys(text: &str) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    NoDup.deserialize(&mut de)
}

/// Streams the events of `reader` into the tables of `conn`.
fn read_into<R: Read>(
    path: &Path,
    reader: R,
    conn: &Connection,
    info: &mut KinetoInfo,
) -> Result<(), TraceError> {
    let mut sink = Sink::new(conn)?;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let top = Top { sink: &mut sink, info };
    top.deserialize(&mut de).map_err(|e| json_err(path, e))?;
    de.end().map_err(|e| json_err(path, e))?;
    if !sink.saw_events {
        return Err(json_err(path, "the JSON object has no `traceEvents` array"));
    }
    sink.refuse_unknown(path)?;
    sink.finish(info)
}

/// The tables and the columns the scans read, as nsys declares them (a subset of columns).
const DDL: &str = "
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
  shortName INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, bytes INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, \"end\" INTEGER, eventType INTEGER NOT NULL,
  text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER, binaryData TEXT,
  externalId INTEGER);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (name TEXT, value TEXT);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE KINETO_PARAM_COMMS (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL,
  globalTid INTEGER NOT NULL, processGroup TEXT, seq INTEGER);
CREATE TABLE KINETO_COLLECTIVE_LAUNCHES (globalTid INTEGER NOT NULL,
  correlationId INTEGER NOT NULL, processGroup TEXT, seq INTEGER);
CREATE TABLE KINETO_GPU_ANNOTATIONS (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, externalId INTEGER, text TEXT);
";

/// Parses a JSON number of µs with at most three fraction digits into ns, from its digits.
/// `1.5` is 1,500 ns, `-0.001` is -1 ns; an exponent, more than three nonzero fraction
/// digits, or a value past ±2^62 ns is an error naming what was found.
pub fn micros_to_ns(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !all_digits(int) || !all_digits(frac) {
        return Err(format!("`{t}` is not a decimal number of µs"));
    }
    let (ns_digits, rest) = frac.split_at(frac.len().min(3));
    if rest.bytes().any(|b| b != b'0') {
        return Err(format!("`{t}` has a fraction finer than 1 ns (more than three µs decimals)"));
    }
    let too_big = || format!("`{t}` µs is outside ±2^62 ns");
    let mut ns: i64 = 0;
    for b in int.bytes() {
        ns = ns
            .checked_mul(10)
            .and_then(|v| v.checked_add(i64::from(b - b'0')))
            .ok_or_else(too_big)?;
    }
    let mut f: i64 = 0;
    for i in 0..3 {
        f = f * 10 + ns_digits.as_bytes().get(i).map_or(0, |b| i64::from(b - b'0'));
    }
    let ns = ns.checked_mul(1000).and_then(|v| v.checked_add(f)).ok_or_else(too_big)?;
    let ns = if neg { -ns } else { ns };
    if ns.unsigned_abs() >= super::MAX_TIMESTAMP_NS.unsigned_abs() {
        return Err(too_big());
    }
    Ok(ns)
}

/// The `copyKind` code of a Kineto memcpy name (`Memcpy HtoD (Pageable -> Device)`): the codes
/// of `CUpti_ActivityMemcpyKind`, which Kineto names and nsys stores; 0 (unknown) otherwise.
pub fn copy_kind_of(name: &str) -> i64 {
    let kind = name.strip_prefix("Memcpy ").and_then(|r| r.split_whitespace().next());
    match kind {
        Some("HtoD") => 1,
        Some("DtoH") => 2,
        Some("HtoA") => 3,
        Some("AtoH") => 4,
        Some("AtoA") => 5,
        Some("AtoD") => 6,
        Some("DtoA") => 7,
        Some("DtoD") => 8,
        Some("HtoH") => 9,
        Some("PtoP") => 10,
        _ => 0,
    }
}

/// The base name of a demangled kernel name, as nsys's `shortName`: the function's own
/// name without return type, namespaces, template arguments or parameters
/// (`void at::native::f<float>(int)` is `f`). A name that is not a C++ signature stays whole.
pub fn short_name(name: &str) -> &str {
    // The text before the parameter list: the first `(` outside template brackets.
    let mut depth = 0i32;
    let mut end = name.len();
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 && i > 0 && !name[i..].starts_with("(anonymous namespace)") => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let head = &name[..end];
    // Drop a trailing template argument list.
    let head = if head.ends_with('>') {
        let mut depth = 0i32;
        let mut cut = head.len();
        for (i, c) in head.char_indices().rev() {
            match c {
                '>' => depth += 1,
                '<' => {
                    depth -= 1;
                    if depth == 0 {
                        cut = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        &head[..cut]
    } else {
        head
    };
    // The last `::` component outside brackets, then the last word (the return type goes).
    let head = head.rsplit("::").next().unwrap_or(head);
    let head = head.rsplit(' ').next().unwrap_or(head).trim();
    if head.is_empty() { name } else { head }
}

/// A `pid` or `tid`: a number, or a name (Kineto's `"Spans"` tracks).
#[derive(Debug, Clone)]
enum Id {
    Num(i64),
    Name,
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id::Num(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                i64::try_from(v).map(Id::Num).map_err(|_| E::custom("an id past 2^63"))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Id, E> {
                Ok(Id::Name)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                // PyTorch 1.8-1.9 write thread ids as decimal strings (`"tid": "5555"`).
                let digits = v.strip_prefix('-').unwrap_or(v);
                if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                    return v.parse().map(Id::Num).map_err(|_| E::custom("an id past 2^63"));
                }
                Ok(Id::Name)
            }
        }
        d.deserialize_any(V)
    }
}

/// One event, with the fields the reader may need; `args` is parsed only for kept events. A key
/// twice in an event is refused, whether the reader uses it or not.
#[derive(Default)]
struct Event {
    ph: Option<String>,
    cat: Option<String>,
    name: Option<String>,
    pid: Option<Id>,
    tid: Option<Id>,
    ts: Option<Box<RawValue>>,
    dur: Option<Box<RawValue>>,
    args: Option<Box<RawValue>>,
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Event;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a trace event (a JSON object)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
                let mut ev = Event::default();
                let mut seen: Vec<String> = Vec::with_capacity(8);
                while let Some(key) = map.next_key::<String>()? {
                    if seen.contains(&key) {
                        return Err(de::Error::custom(format!(
                            "duplicate key `{key}` in one event"
                        )));
                    }
                    match key.as_str() {
                        "ph" => ev.ph = map.next_value()?,
                        "cat" => ev.cat = map.next_value()?,
                        "name" => ev.name = map.next_value()?,
                        "pid" => ev.pid = map.next_value()?,
                        "tid" => ev.tid = map.next_value()?,
                        "ts" => ev.ts = map.next_value()?,
                        "dur" => ev.dur = map.next_value()?,
                        "args" => ev.args = map.next_value()?,
                        _ => map.next_value_seed(NoDup)?,
                    }
                    seen.push(key);
                }
                Ok(ev)
            }
        }
        d.deserialize_map(V)
    }
}

/// The `args` of a GPU activity or a runtime call.
#[derive(Deserialize, Default)]
struct Args {
    device: Option<i64>,
    stream: Option<i64>,
    correlation: Option<i64>,
    context: Option<i64>,
    bytes: Option<i64>,
    /// The CPU op's id; on a `gpu_user_annotation`, that of the CPU annotation it projects.
    #[serde(rename = "External id", default, deserialize_with = "lenient_id")]
    external_id: Option<i64>,
}

/// The `args` of a metadata event.
#[derive(Deserialize, Default)]
struct MetaArgs {
    name: Option<String>,
}

#[derive(Deserialize)]
struct DeviceProperties {
    id: i64,
    name: Option<String>,
}

#[derive(Deserialize)]
struct DistributedInfo {
    rank: Option<i64>,
    world_size: Option<i64>,
    backend: Option<String>,
    nccl_version: Option<String>,
    pg_config: Option<Box<RawValue>>,
}

/// The `args` of a `record_param_comms` op that tie a collective across ranks (PyTorch's
/// names: `Process Group Name`, `Seq`).
#[derive(Deserialize, Default)]
struct CommsArgs {
    #[serde(rename = "Process Group Name", default, deserialize_with = "text_or_number")]
    group: Option<String>,
    #[serde(rename = "Seq", default, deserialize_with = "sequence_number")]
    seq: Option<i64>,
}

/// A name written as a string or as a number.
fn text_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        Some(other) => {
            return Err(de::Error::custom(format!("is `{other}`, not a name")));
        }
    })
}

/// An id that only ties rows together: an integer, or a string of one; anything else ties
/// nothing (None), so an odd id in a kernel's `args` never refuses the trace.
fn lenient_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        Some(serde_json::Value::Number(n)) => n.as_i64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    })
}

/// A sequence number: a non-negative integer, or a string of one.
fn sequence_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    let n = match &v {
        None | Some(serde_json::Value::Null) => return Ok(None),
        Some(serde_json::Value::Number(n)) => n.as_i64(),
        Some(serde_json::Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(_) => None,
    };
    match n {
        Some(n) if n >= 0 => Ok(Some(n)),
        _ => Err(de::Error::custom(format!(
            "`Seq` is `{}`, not a non-negative integer",
            v.map(|v| v.to_string()).unwrap_or_default()
        ))),
    }
}

/// Where an event sits, for its errors: its index in `traceEvents`, category and name.
struct At<'e> {
    index: u64,
    cat: &'e str,
    name: &'e str,
}

impl At<'_> {
    /// An error naming the event and `field`.
    fn err(&self, field: &str, detail: String) -> String {
        format!("traceEvents[{}] (`{}` `{}`): `{field}` {detail}", self.index, self.cat, self.name)
    }

    /// A time field, µs as written, in ns.
    fn time(&self, field: &str, v: &Option<Box<RawValue>>) -> Result<i64, String> {
        match v {
            Some(raw) => micros_to_ns(raw.get()).map_err(|e| self.err(field, e)),
            None => Err(self.err(field, "is absent".into())),
        }
    }

    /// The thread of a CPU event as nsys numbers one: the process in the high bits.
    fn global_tid(&self, pid: &Option<Id>, tid: &Option<Id>) -> Result<i64, String> {
        let (Some(Id::Num(p)), Some(Id::Num(t))) = (pid, tid) else {
            return Err(self.err("pid/tid", "is not a number".into()));
        };
        if !(0..=0xFF_FFFF).contains(p) {
            return Err(self.err("pid", format!("{p} does not fit 24 bits")));
        }
        Ok((p << 24) | (t & 0xFF_FFFF))
    }
}

/// Where kept events go: prepared inserts on the new database.
struct Sink<'c> {
    kernel: rusqlite::Statement<'c>,
    memcpy: rusqlite::Statement<'c>,
    memset: rusqlite::Statement<'c>,
    runtime: rusqlite::Statement<'c>,
    nvtx: rusqlite::Statement<'c>,
    comms: rusqlite::Statement<'c>,
    gpu_annotation: rusqlite::Statement<'c>,
    conn: &'c Connection,
    strings: HashMap<String, i64>,
    processes: BTreeMap<i64, Option<String>>,
    cpu_pids: BTreeSet<i64>,
    first_ts: Option<i64>,
    index: u64,
    saw_events: bool,
    kept: BTreeMap<String, u64>,
    gpu_annotations: u64,
    /// Complete events (`ph: X`) of categories the reader does not keep, by category as
    /// written, and how many of them name a device or a stream (GPU work under a name the
    /// reader does not know).
    unknown: BTreeMap<String, (u64, u64)>,
    /// Whether an event used a PyTorch 1.8-1.9 category.
    legacy: bool,
    /// Complete events of a category the reader knows, kept or not.
    known: u64,
}

impl<'c> Sink<'c> {
    fn new(conn: &'c Connection) -> Result<Sink<'c>, TraceError> {
        let p = |sql: &str| conn.prepare(sql).map_err(TraceError::from_sqlite);
        Ok(Sink {
            kernel: p(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, \"end\", deviceId, contextId, streamId, correlationId, demangledName, shortName) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?,
            memcpy: p(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, \"end\", deviceId, streamId, correlationId, bytes, copyKind) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?,
            memset: p(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, \"end\", deviceId, streamId, correlationId, bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?,
            runtime: p(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, \"end\", globalTid, correlationId, nameId) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?,
            nvtx: p(
                "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId, externalId) VALUES (?1, ?2, 59, ?3, ?4, 0, ?5)",
            )?,
            comms: p(
                "INSERT INTO KINETO_PARAM_COMMS (start, \"end\", globalTid, processGroup, seq) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?,
            gpu_annotation: p(
                "INSERT INTO KINETO_GPU_ANNOTATIONS (start, \"end\", deviceId, streamId, externalId, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?,
            conn,
            strings: HashMap::default(),
            processes: BTreeMap::new(),
            cpu_pids: BTreeSet::new(),
            first_ts: None,
            index: 0,
            saw_events: false,
            kept: BTreeMap::new(),
            gpu_annotations: 0,
            unknown: BTreeMap::new(),
            legacy: false,
            known: 0,
        })
    }

    fn intern(&mut self, s: &str) -> Result<i64, TraceError> {
        if let Some(&id) = self.strings.get(s) {
            return Ok(id);
        }
        let id = self.strings.len() as i64 + 1;
        self.conn
            .execute("INSERT INTO StringIds (id, value) VALUES (?1, ?2)", params![id, s])
            .map_err(TraceError::from_sqlite)?;
        self.strings.insert(s.to_string(), id);
        Ok(id)
    }

    /// A file that would read as empty is refused: no complete event of a kind the reader
    /// knows (none at all, or only of unknown categories), or no GPU activity kept while events
    /// of unknown categories name a device or a stream.
    fn refuse_unknown(&self, path: &Path) -> Result<(), TraceError> {
        let gpu_kept = ["kernel", "gpu_memcpy", "gpu_memset"]
            .iter()
            .any(|k| self.kept.get(*k).is_some_and(|&n| n > 0));
        let unknown_gpu: u64 = self.unknown.values().map(|v| v.1).sum();
        let nothing = self.known == 0 && self.kept.is_empty();
        if !nothing && (gpu_kept || unknown_gpu == 0) {
            return Ok(());
        }
        if nothing && self.unknown.is_empty() {
            return Err(json_err(
                path,
                format!(
                    "no complete event (`ph: X`) at all: nothing to read; the reader reads the \
                     layouts of {LAYOUTS}"
                ),
            ));
        }
        let seen: Vec<String> = self
            .unknown
            .iter()
            .map(|(c, (n, gpu))| {
                let c = if c.is_empty() { "(no category)".to_string() } else { format!("`{c}`") };
                if *gpu > 0 {
                    format!("{c} {n} ({gpu} naming a device or stream)")
                } else {
                    format!("{c} {n}")
                }
            })
            .collect();
        Err(json_err(
            path,
            format!(
                "{}: complete events of categories the reader does not know: {}; it reads the \
                 layouts of {LAYOUTS}",
                if nothing {
                    "no event of a kind the reader keeps"
                } else {
                    "GPU work under categories the reader does not know, and none it knows"
                },
                seen.join(", ")
            ),
        ))
    }

    /// One event of `traceEvents`; a bad value is an error naming the event and the field.
    fn push(&mut self, ev: Event) -> Result<(), String> {
        let i = self.index;
        self.index += 1;
        if let Some(a) = &ev.args {
            no_duplicate_keys(a.get()).map_err(|e| format!("traceEvents[{i}]: `args`: {e}"))?;
        }
        let ph = ev.ph.as_deref().unwrap_or("");
        if ph == "M" {
            self.metadata(&ev);
            return Ok(());
        }
        if ph != "X" {
            return Ok(());
        }
        let Some((cat, kind, step)) = self.classify(&ev) else { return Ok(()) };
        let name = ev.name.as_deref().unwrap_or("");
        let at = At { index: i, cat, name };
        let start = at.time("ts", &ev.ts)?;
        let dur = at.time("dur", &ev.dur)?;
        if dur < 0 {
            return Err(at.err("dur", format!("is negative ({dur} ns)")));
        }
        let end = start
            .checked_add(dur)
            .filter(|e| e.unsigned_abs() < super::MAX_TIMESTAMP_NS.unsigned_abs())
            .ok_or_else(|| at.err("dur", "ends past ±2^62 ns".into()))?;
        // A projection is derived from the GPU rows and widened by its writer: it does not
        // move the capture start.
        if kind != "gpu_user_annotation" {
            self.first_ts = Some(self.first_ts.map_or(start, |f| f.min(start)));
        }
        self.store(kind, &ev, &at, (start, end))?;
        *self
            .kept
            .entry(if step { "ProfilerStep".into() } else { kind.to_string() })
            .or_default() += 1;
        Ok(())
    }

    /// A metadata event (`ph: M`): the name of a process.
    fn metadata(&mut self, ev: &Event) {
        if ev.name.as_deref() == Some("process_name")
            && let Some(Id::Num(pid)) = ev.pid
        {
            let args: MetaArgs = match &ev.args {
                Some(a) => serde_json::from_str(a.get()).unwrap_or_default(),
                None => MetaArgs::default(),
            };
            self.processes.entry(pid).or_insert(args.name);
        }
    }

    /// The category of a complete event as the reader reads it (a PyTorch 1.8-1.9 name
    /// mapped to its later one), the kind it is kept as, and whether it is a profiler step;
    /// None for an event the reader does not keep, counted as known or tallied as unknown.
    fn classify<'e>(&mut self, ev: &'e Event) -> Option<(&'e str, &'e str, bool)> {
        let written = ev.cat.as_deref().unwrap_or("");
        let cat = match LEGACY_CATEGORIES.iter().find(|(old, _)| *old == written) {
            Some((_, new)) => {
                self.legacy = true;
                *new
            }
            None => written,
        };
        let name = ev.name.as_deref().unwrap_or("");
        let step = cat == "cpu_op" && name.starts_with("ProfilerStep#");
        let comms = cat == "cpu_op" && name == "record_param_comms";
        let kind = match cat {
            "kernel"
            | "gpu_memcpy"
            | "gpu_memset"
            | "cuda_runtime"
            | "cuda_driver"
            | "user_annotation"
            | "gpu_user_annotation" => cat,
            _ if step => "user_annotation",
            _ if comms => "record_param_comms",
            _ => {
                if KNOWN_CATEGORIES.contains(&cat) {
                    self.known += 1;
                } else {
                    let gpu = ev.args.as_ref().is_some_and(|a| {
                        let a = a.get();
                        a.contains("\"device\"") || a.contains("\"stream\"")
                    });
                    let e = self.unknown.entry(written.to_string()).or_default();
                    e.0 += 1;
                    e.1 += u64::from(gpu);
                }
                return None;
            }
        };
        Some((cat, kind, step))
    }

    /// Writes one kept event of `kind`, spanning `(start, end)` ns, into its table.
    fn store(
        &mut self,
        kind: &str,
        ev: &Event,
        at: &At<'_>,
        (start, end): (i64, i64),
    ) -> Result<(), String> {
        let args: Args = match &ev.args {
            Some(a) => serde_json::from_str(a.get()).map_err(|e| at.err("args", e.to_string()))?,
            None => Args::default(),
        };
        let need = |field: &str, v: Option<i64>| {
            v.ok_or_else(|| at.err(&format!("args.{field}"), "is absent".into()))
        };
        let sql = |e: rusqlite::Error| at.err("", format!("cannot be stored ({e})"));
        let name = at.name;
        match kind {
            "kernel" => {
                let device = need("device", args.device)?;
                let stream = need("stream", args.stream)?;
                let full = self.intern(name).map_err(|e| at.err("name", e.to_string()))?;
                let short =
                    self.intern(short_name(name)).map_err(|e| at.err("name", e.to_string()))?;
                self.kernel
                    .execute(params![
                        start,
                        end,
                        device,
                        args.context,
                        stream,
                        args.correlation,
                        full,
                        short
                    ])
                    .map_err(sql)?;
            }
            "gpu_memcpy" => {
                let device = need("device", args.device)?;
                let stream = need("stream", args.stream)?;
                let bytes = need("bytes", args.bytes)?;
                self.memcpy
                    .execute(params![
                        start,
                        end,
                        device,
                        stream,
                        args.correlation,
                        bytes,
                        copy_kind_of(name)
                    ])
                    .map_err(sql)?;
            }
            "gpu_memset" => {
                let device = need("device", args.device)?;
                let stream = need("stream", args.stream)?;
                let bytes = need("bytes", args.bytes)?;
                self.memset
                    .execute(params![start, end, device, stream, args.correlation, bytes])
                    .map_err(sql)?;
            }
            "cuda_runtime" | "cuda_driver" => {
                let tid = at.global_tid(&ev.pid, &ev.tid)?;
                self.cpu_pids.insert(tid >> 24);
                let id = self.intern(name).map_err(|e| at.err("name", e.to_string()))?;
                self.runtime
                    .execute(params![start, end, tid, args.correlation, id])
                    .map_err(sql)?;
            }
            "record_param_comms" => {
                let tid = at.global_tid(&ev.pid, &ev.tid)?;
                let c: CommsArgs = match &ev.args {
                    Some(a) => {
                        serde_json::from_str(a.get()).map_err(|e| at.err("args", e.to_string()))?
                    }
                    None => CommsArgs::default(),
                };
                self.comms.execute(params![start, end, tid, c.group, c.seq]).map_err(sql)?;
            }
            "gpu_user_annotation" => {
                // The track of a GPU projection is its device (`pid`) and stream (`tid`).
                let (Some(Id::Num(device)), Some(Id::Num(stream))) = (&ev.pid, &ev.tid) else {
                    return Err(at.err("pid/tid", "is not a number (device/stream)".into()));
                };
                self.gpu_annotations += 1;
                self.gpu_annotation
                    .execute(params![start, end, device, stream, args.external_id, name])
                    .map_err(sql)?;
            }
            _ => {
                let tid = at.global_tid(&ev.pid, &ev.tid)?;
                self.cpu_pids.insert(tid >> 24);
                self.nvtx.execute(params![start, end, name, tid, args.external_id]).map_err(sql)?;
            }
        }
        Ok(())
    }

    /// Joins GPU rows to the process of their launch and writes the metadata tables.
    fn finish(&mut self, info: &mut KinetoInfo) -> Result<(), TraceError> {
        let c = self.conn;
        let run = |sql: &str| c.execute_batch(sql).map_err(TraceError::from_sqlite);
        run(
            "CREATE INDEX kineto_runtime_correlation ON CUPTI_ACTIVITY_KIND_RUNTIME (correlationId);",
        )?;
        let mut unlaunched = 0u64;
        for t in [
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_MEMSET",
        ] {
            run(&format!(
                "UPDATE {t} SET globalPid = (SELECT (r.globalTid >> 24) << 24 FROM CUPTI_ACTIVITY_KIND_RUNTIME r \
                 WHERE r.correlationId = {t}.correlationId ORDER BY r.rowid LIMIT 1)"
            ))?;
            let n: i64 = c
                .query_row(&format!("SELECT count(*) FROM {t} WHERE globalPid IS NULL"), [], |r| {
                    r.get(0)
                })
                .map_err(TraceError::from_sqlite)?;
            unlaunched += n as u64;
        }
        run("DROP INDEX kineto_runtime_correlation;")?;
        tie_launches(c)?;
        // The tie of a projection to its CPU annotation is this join; the index stays for the
        // readers of the projections.
        run("CREATE INDEX kineto_nvtx_external ON NVTX_EVENTS (externalId);")?;
        let tied: i64 = c
            .query_row(
                "SELECT count(*) FROM KINETO_GPU_ANNOTATIONS g WHERE EXISTS \
                 (SELECT 1 FROM NVTX_EVENTS n WHERE n.externalId = g.externalId)",
                [],
                |r| r.get(0),
            )
            .map_err(TraceError::from_sqlite)?;
        info.gpu_annotations_tied = tied as u64;
        for pid in &self.cpu_pids {
            let name = self.processes.get(pid).cloned().flatten();
            c.execute("INSERT INTO PROCESSES VALUES (?1, ?2, ?3)", params![pid << 24, pid, name])
                .map_err(TraceError::from_sqlite)?;
        }
        // Without `baseTimeNanoseconds`, `ts` is on the UTC epoch already, as older Kineto
        // versions wrote it.
        if let Some(first) = self.first_ts {
            let base = info.base_time_ns.unwrap_or(0);
            c.execute(
                "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?1)",
                params![base + first],
            )
            .map_err(TraceError::from_sqlite)?;
        }
        info.kept = std::mem::take(&mut self.kept);
        if self.legacy {
            info.layout = Some("PyTorch 1.8-1.9".into());
        }
        info.gpu_annotations = self.gpu_annotations;
        info.events = self.index;
        info.unlaunched = unlaunched;
        info.first_ts_ns = self.first_ts;
        Ok(())
    }
}

/// One `record_param_comms` op: start, end, process group, sequence number.
type Op = (i64, i64, Option<String>, Option<i64>);

/// Fills [`COLLECTIVE_LAUNCHES`]: every runtime call on a thread with `record_param_comms` ops
/// that lies inside one of them (start and end within the op's), tied to the innermost (the
/// latest start; at equal starts, the shortest). The ops are read once, per thread in start
/// order; the runtime calls of those threads are streamed once.
fn tie_launches(c: &Connection) -> Result<(), TraceError> {
    let sqlite = TraceError::from_sqlite;
    let mut ops: BTreeMap<i64, Vec<Op>> = BTreeMap::new();
    {
        let mut stmt = c
            .prepare(
                "SELECT globalTid, start, \"end\", processGroup, seq FROM KINETO_PARAM_COMMS \
                 ORDER BY globalTid, start, \"end\" DESC",
            )
            .map_err(sqlite)?;
        let mut rows = stmt.query([]).map_err(sqlite)?;
        while let Some(r) = rows.next().map_err(sqlite)? {
            ops.entry(r.get(0).map_err(sqlite)?).or_default().push((
                r.get(1).map_err(sqlite)?,
                r.get(2).map_err(sqlite)?,
                r.get(3).map_err(sqlite)?,
                r.get(4).map_err(sqlite)?,
            ));
        }
    }
    if ops.is_empty() {
        return Ok(());
    }
    // Per thread, the latest end among the ops up to each one: walking back from the last op
    // that starts by a call's start, no earlier op can hold the call once this is before its
    // end.
    let reach: BTreeMap<i64, Vec<i64>> = ops
        .iter()
        .map(|(&t, v)| {
            let mut m = i64::MIN;
            (
                t,
                v.iter()
                    .map(|o| {
                        m = m.max(o.1);
                        m
                    })
                    .collect(),
            )
        })
        .collect();
    let threads = ops.keys().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let mut tied: Vec<(i64, i64, usize)> = Vec::new();
    {
        let mut stmt = c
            .prepare(&format!(
                "SELECT globalTid, start, \"end\", correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME \
                 WHERE correlationId IS NOT NULL AND globalTid IN ({threads})"
            ))
            .map_err(sqlite)?;
        let mut rows = stmt.query([]).map_err(sqlite)?;
        while let Some(r) = rows.next().map_err(sqlite)? {
            let (tid, start, end, corr): (i64, i64, i64, i64) = (
                r.get(0).map_err(sqlite)?,
                r.get(1).map_err(sqlite)?,
                r.get(2).map_err(sqlite)?,
                r.get(3).map_err(sqlite)?,
            );
            let (Some(list), Some(reach)) = (ops.get(&tid), reach.get(&tid)) else { continue };
            let mut j = list.partition_point(|o| o.0 <= start);
            while j > 0 && reach[j - 1] >= end {
                j -= 1;
                if list[j].1 >= end {
                    tied.push((tid, corr, j));
                    break;
                }
            }
        }
    }
    let mut insert = c
        .prepare(
            "INSERT INTO KINETO_COLLECTIVE_LAUNCHES (globalTid, correlationId, processGroup, seq) \
             VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(sqlite)?;
    for (tid, corr, j) in tied {
        let op = &ops[&tid][j];
        insert.execute(params![tid, corr, op.2, op.3]).map_err(sqlite)?;
    }
    Ok(())
}

/// The top-level object: `traceEvents` streamed, the few metadata keys read, the rest skipped.
struct Top<'a, 'c> {
    sink: &'a mut Sink<'c>,
    info: &'a mut KinetoInfo,
}

impl<'de> DeserializeSeed<'de> for Top<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Chrome-trace JSON object with `traceEvents`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            // A key twice is refused: readers differ on which one counts (Python's `json` and
            // HTA take the last), so two tools would read two traces.
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!(
                    "the top-level key `{key}` appears twice; a trace holds each key once"
                )));
            }
            match key.as_str() {
                "traceEvents" => {
                    self.sink.saw_events = true;
                    map.next_value_seed(Events { sink: self.sink })?;
                }
                "schemaVersion" => {
                    let v: serde_json::Value = map.next_value()?;
                    self.info.schema_version = Some(match v {
                        serde_json::Value::String(s) => s,
                        v => v.to_string(),
                    });
                }
                "baseTimeNanoseconds" => {
                    let raw: Box<RawValue> = map.next_value()?;
                    let ns = raw.get().trim().parse::<i64>().map_err(|_| {
                        de::Error::custom(format!(
                            "`baseTimeNanoseconds` is `{}`, not an integer of ns",
                            raw.get()
                        ))
                    })?;
                    self.info.base_time_ns = Some(ns);
                }
                "distributedInfo" => {
                    let d: DistributedInfo = map.next_value()?;
                    self.info.rank = d.rank;
                    self.info.world_size = d.world_size;
                    self.info.backend = d.backend;
                    self.info.nccl_version = d.nccl_version;
                    self.info.process_groups = d.pg_config.map(|r| {
                        serde_json::from_str::<serde_json::Value>(r.get())
                            .map(|v| v.to_string())
                            .unwrap_or_else(|_| r.get().to_string())
                    });
                }
                "deviceProperties" => {
                    let gpus: Vec<DeviceProperties> = map.next_value()?;
                    for g in gpus {
                        self.sink
                            .conn
                            .execute(
                                "INSERT INTO TARGET_INFO_GPU VALUES (?1, ?2)",
                                params![g.id, g.name],
                            )
                            .map_err(de::Error::custom)?;
                    }
                }
                "host_name" | "hostname" => {
                    if let Ok(serde_json::Value::String(h)) = map.next_value::<serde_json::Value>()
                    {
                        self.sink
                            .conn
                            .execute(
                                "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES ('Hostname', ?1)",
                                params![h],
                            )
                            .map_err(de::Error::custom)?;
                    }
                }
                _ => {
                    map.next_value_seed(NoDup)?;
                }
            }
        }
        Ok(())
    }
}

struct Events<'a, 'c> {
    sink: &'a mut Sink<'c>,
}

impl<'de> DeserializeSeed<'de> for Events<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(ev) = seq.next_element::<Event>()? {
            self.sink.push(ev).map_err(de::Error::custom)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_read_exactly_to_ns() {
        assert_eq!(micros_to_ns("4458676522690.655"), Ok(4_458_676_522_690_655));
        assert_eq!(micros_to_ns("156.777"), Ok(156_777));
        assert_eq!(micros_to_ns("1.5"), Ok(1_500));
        assert_eq!(micros_to_ns("7"), Ok(7_000));
        assert_eq!(micros_to_ns("0.001"), Ok(1));
        assert_eq!(micros_to_ns("-0.001"), Ok(-1));
        assert_eq!(micros_to_ns("2.000000"), Ok(2_000));
        assert!(micros_to_ns("2.0001").unwrap_err().contains("finer than 1 ns"));
        assert!(micros_to_ns("1e3").is_err());
        assert!(micros_to_ns("\"1\"").is_err());
        assert!(micros_to_ns("4611686018427387.904").unwrap_err().contains("2^62"));
        assert_eq!(micros_to_ns("4611686018427387.903"), Ok((1 << 62) - 1));
    }

    #[test]
    fn copy_kinds_and_short_names_come_from_the_names() {
        assert_eq!(copy_kind_of("Memcpy HtoD (Pageable -> Device)"), 1);
        assert_eq!(copy_kind_of("Memcpy DtoH (Device -> Pinned)"), 2);
        assert_eq!(copy_kind_of("Memcpy DtoD (Device -> Device)"), 8);
        assert_eq!(copy_kind_of("Memcpy PtoP (Device -> Device)"), 10);
        assert_eq!(copy_kind_of("Memset (Device)"), 0);
        assert_eq!(
            short_name(
                "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32, true, 1>(float, float)"
            ),
            "bn_bw_1C11_kernel_new"
        );
        assert_eq!(
            short_name(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
            ),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
        );
        assert_eq!(
            short_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
            ),
            "vectorized_elementwise_kernel"
        );
        assert_eq!(short_name("sm80_xmma_gemm_f32f32_tn_n"), "sm80_xmma_gemm_f32f32_tn_n");
        assert_eq!(
            short_name(
                "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, float const*, int)"
            ),
            "cunn_SoftMaxForward"
        );
    }

    #[test]
    fn each_launch_is_tied_to_the_innermost_record_param_comms_op_on_its_thread() {
        // Thread 7: op A (group "0", Seq 3) over 10-100 µs holds op B (group "1", Seq 9) over
        // 20-40 µs; launches at 25-30 (in B), 50-60 (in A only), 95-105 (past A's end), and
        // one at 25-30 on thread 8 (no op there). Op C on thread 7 (200-300 µs) has no Seq.
        let text = r#"{"traceEvents": [
          {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 7, "ts": 10, "dur": 90, "args": {"Process Group Name": "0", "Seq": 3}},
          {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 7, "ts": 20, "dur": 20, "args": {"Process Group Name": 1, "Seq": "9"}},
          {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 7, "ts": 200, "dur": 100, "args": {"Process Group Name": "0"}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7, "ts": 25, "dur": 5, "args": {"correlation": 1}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7, "ts": 50, "dur": 10, "args": {"correlation": 2}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7, "ts": 95, "dur": 10, "args": {"correlation": 3}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 8, "ts": 25, "dur": 5, "args": {"correlation": 4}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7, "ts": 250, "dur": 5, "args": {"correlation": 5}}
        ]}"#;
        let dir = tempfile::tempdir().unwrap();
        let (json, db) = (dir.path().join("t.json"), dir.path().join("t.db"));
        std::fs::write(&json, text).unwrap();
        let info = build(&json, &db).unwrap();
        assert_eq!(info.kept.get("record_param_comms"), Some(&3));
        let c = Connection::open(&db).unwrap();
        let mut stmt = c
            .prepare("SELECT globalTid, correlationId, processGroup, seq FROM KINETO_COLLECTIVE_LAUNCHES ORDER BY correlationId")
            .unwrap();
        let rows: Vec<(i64, i64, Option<String>, Option<i64>)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let t7 = (1 << 24) | 7;
        assert_eq!(
            rows,
            vec![
                (t7, 1, Some("1".into()), Some(9)),
                (t7, 2, Some("0".into()), Some(3)),
                (t7, 5, Some("0".into()), None),
            ]
        );
        // A Seq that is not a non-negative integer is an error naming the event.
        let bad = text.replace(r#""Seq": 3"#, r#""Seq": -3"#);
        std::fs::write(&json, bad).unwrap();
        let err = build(&json, &dir.path().join("u.db")).unwrap_err().to_string();
        assert!(err.contains("traceEvents[0]") && err.contains("`Seq` is `-3`"), "{err}");
    }

    #[test]
    fn the_format_is_told_by_content() {
        assert!(looks_like_kineto(b"\x1f\x8b\x08"));
        assert!(looks_like_kineto(b"  \n{\"traceEvents\""));
        assert!(!looks_like_kineto(b"SQLite format 3\0"));
        assert!(!looks_like_kineto(b"[1]"));
    }
}
