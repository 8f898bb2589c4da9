//! Columnar traces: a trace's tables as Parquet, one file per table, read back into the
//! tables of an Nsight Systems export so that every scan, analysis and claim reads them
//! unchanged.
//!
//! Two layouts are read, told apart by the manifest:
//!
//! - **An extract** (`verdict extract`): the tables the analyses read, with the columns they
//!   read, written from an Nsight Systems SQLite export or a PyTorch profiler trace, beside a
//!   manifest ([`MANIFEST`]) that names the source file with its size and sha256 and every
//!   Parquet file with its rows and sha256. Opening an extract checks each file against the
//!   manifest, and the evidence carries the source's digest, so a number computed from an
//!   extract is traced back to the export it came from.
//! - **An nsys `parquetdir` export** (`nsys export --type parquetdir`, nsys 2024.6 and later):
//!   the same table names as its SQLite export (`CUPTI_ACTIVITY_KIND_KERNEL.parquet`,
//!   `StringIds.parquet`, ...), with integer columns of several widths. Only the tables the
//!   analyses read are loaded; integers of any width are read as 64-bit.
//!
//! Times stay integer ns (Parquet `INT64`) from the export to the analyses. The SQL type each
//! column was declared with is kept in the Parquet field's metadata (`sqlite.type`), so the
//! tables come back as they were declared.
//!
//! Opening a folder reads its small tables into a database in memory. The large activity
//! tables (`is_lazy`) are read only when a scan reads them: the kernel scan and the launch
//! scan read their Parquet columns straight (`IntColumns`); any other read loads the table
//! into the database first (in memory, or, from the rows at which a scan is split over the
//! cores, into a temporary file in the system's temporary folder, removed when the trace is
//! closed). Nothing is written beside the input.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use super::kineto::KinetoInfo;
use super::names;
use super::{Trace, TraceError, quote_ident, sha256_file};

/// The manifest of an extract, in its folder.
pub const MANIFEST: &str = "verdict-extract.json";

/// The `format` a manifest declares.
pub const FORMAT: &str = "verdict-extract";

/// The version of the layout this build writes and reads.
pub const VERSION: u32 = 1;

/// Rows per Parquet row group and per batch read back.
const BATCH_ROWS: usize = 65_536;

/// The largest manifest read: an extract's is a few kilobytes.
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The field metadata key holding the SQL type a column was declared with.
const SQL_TYPE: &str = "sqlite.type";

/// The columns kept of the large activity tables: those the scans read (names.rs), plus the
/// context id nsys pairs with the device. Every other table is small and kept whole.
fn kept_columns(table: &str, kernel_table: Option<&str>) -> Option<Vec<&'static str>> {
    // What every GPU activity row is: its interval, where it ran, and what launched it.
    const ACTIVITY: &[&str] =
        &["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid"];
    const RUNTIME: &[&str] = &["start", "end", "globalTid", "correlationId", "nameId"];
    const NVTX: &[&str] = &[
        "start",
        "end",
        "eventType",
        "rangeId",
        "category",
        "text",
        "globalTid",
        "endGlobalTid",
        "textId",
        "domainId",
        "binaryData",
        // A PyTorch profiler annotation's External id, which ties it to its GPU projections.
        "externalId",
    ];
    let activity = |more: &[&'static str]| Some([ACTIVITY, more].concat());
    match table {
        t if Some(t) == kernel_table => activity(&["shortName", "demangledName"]),
        names::MEMCPY => activity(&["bytes", "copyKind", "srcKind", "dstKind"]),
        names::MEMSET => activity(&["bytes"]),
        names::RUNTIME => Some(RUNTIME.to_vec()),
        names::NVTX_EVENTS => Some(NVTX.to_vec()),
        _ => None,
    }
}

/// Whether a table is one the analyses read (besides the kernel table, which the probe
/// resolves among its versioned names).
fn is_read(table: &str) -> bool {
    const READ: &[&str] = &[
        names::STRING_IDS,
        names::NVTX_EVENTS,
        names::META_DATA_EXPORT,
        names::EXPORT_META_DATA,
        names::META_DATA_CAPTURE,
        names::TARGET_INFO_GPU,
        names::PROCESSES,
        names::SESSION_START,
        names::SYSTEM_ENV,
        names::MEMCPY,
        names::MEMSET,
        names::ENUM_MEMCPY_OPER,
        names::RUNTIME,
        names::payload::SCHEMAS,
        names::payload::SCHEMA_ENTRIES,
    ];
    READ.contains(&table) || table.starts_with("KINETO_") || is_kernel_table(table)
}

/// `CUPTI_ACTIVITY_KIND_KERNEL` or one of its versioned names (`_V3`, ...).
fn is_kernel_table(table: &str) -> bool {
    table == names::KERNEL
        || table
            .strip_prefix(names::KERNEL)
            .and_then(|v| v.strip_prefix("_V"))
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
}

/// An extract's manifest: where its tables come from, and each file with its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// The layout's version ([`VERSION`]).
    pub version: u32,
    /// The build of verdict that wrote it.
    pub tool: String,
    /// The trace it was extracted from.
    pub source: SourceFile,
    /// What the source is: `nsys` (an Nsight Systems SQLite export) or `kineto`.
    pub kind: String,
    /// For a Kineto source: what it says about itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kineto: Option<KinetoInfo>,
    /// The tables, in name order.
    pub tables: Vec<TableFile>,
}

/// The file an extract was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// The path as it was given to `verdict extract`.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The sha256 of its bytes.
    pub sha256: String,
}

/// One table of an extract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableFile {
    /// The table's name, as in the export.
    pub table: String,
    /// Its file, in the extract's folder.
    pub file: String,
    /// Rows written.
    pub rows: u64,
    /// The columns written.
    pub columns: Vec<String>,
    /// The sha256 of the file.
    pub sha256: String,
}

/// Which layout a folder holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "layout")]
pub enum Layout {
    /// An extract written by `verdict extract`.
    Extract {
        /// Its manifest.
        manifest: Box<Manifest>,
        /// The sha256 of the manifest as read, which names every Parquet file's.
        manifest_sha256: String,
    },
    /// A `nsys export --type parquetdir` folder.
    #[serde(rename = "nsys-parquetdir")]
    NsysParquet {
        /// Parquet files of tables the analyses do not read, left unread.
        skipped: Vec<String>,
    },
}

/// What was read from a columnar folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnarInfo {
    /// The folder as given.
    pub dir: String,
    /// Its layout.
    #[serde(flatten)]
    pub layout: Layout,
    /// The digest the evidence carries: for an extract, the sha256 of its manifest (the
    /// numbers are the extract's; the source's sha256 is what the manifest records, checked
    /// by `verdict extract DIR --verify SOURCE`); for an nsys Parquet folder, the sha256 of the lines `NAME SHA256\n` of its
    /// Parquet files read, in name order.
    pub digest: String,
    /// Each Parquet file read, with its sha256, in name order.
    pub files: Vec<(String, String)>,
}

impl ColumnarInfo {
    /// For an extract, its manifest.
    pub fn manifest(&self) -> Option<&Manifest> {
        match &self.layout {
            Layout::Extract { manifest, .. } => Some(manifest),
            Layout::NsysParquet { .. } => None,
        }
    }

    /// For an extract, the sha256 of its manifest as read.
    pub fn manifest_sha256(&self) -> Option<&str> {
        match &self.layout {
            Layout::Extract { manifest_sha256, .. } => Some(manifest_sha256),
            Layout::NsysParquet { .. } => None,
        }
    }

    /// The layout's name, as the evidence and `inspect` give it.
    pub fn layout_name(&self) -> &'static str {
        match self.layout {
            Layout::Extract { .. } => "verdict-extract",
            Layout::NsysParquet { .. } => "nsys-parquetdir",
        }
    }
}

/// Whether a path is a folder of Parquet tables: an extract (its manifest) or an nsys
/// `parquetdir` export (a `StringIds.parquet` or kernel table file).
pub fn is_columnar_dir(path: &Path) -> bool {
    // A manifest that is there in any form (a FIFO, a link) makes the folder an extract, so
    // that opening it refuses what it is rather than reading the folder as another layout.
    path.is_dir()
        && (std::fs::symlink_metadata(path.join(MANIFEST)).is_ok()
            || path.join(format!("{}.parquet", names::STRING_IDS)).is_file()
            || path.join(format!("{}.parquet", names::KERNEL)).is_file())
}

fn fail(path: &Path, detail: impl std::fmt::Display) -> TraceError {
    TraceError::Columnar { path: path.to_path_buf(), detail: detail.to_string() }
}

/// The type SQLite's affinity rules give a declared type, where they decide one: `INT`
/// anywhere is an integer, `CHAR`, `CLOB` or `TEXT` text, `REAL`, `FLOA` or `DOUB` a float,
/// `BLOB` bytes; anything else (no type, `NUMERIC`) is decided by the values.
fn affinity(declared: &str) -> Option<DataType> {
    let d = declared.to_ascii_uppercase();
    let has = |words: &[&str]| words.iter().any(|w| d.contains(w));
    Some(if has(&["INT"]) {
        DataType::Int64
    } else if has(&["CHAR", "CLOB", "TEXT"]) {
        DataType::Utf8
    } else if has(&["REAL", "FLOA", "DOUB"]) {
        DataType::Float64
    } else if has(&["BLOB"]) {
        DataType::Binary
    } else {
        return None;
    })
}

/// The SQL type a column of a canonical Arrow type is declared with.
fn sql_name(t: &DataType) -> &'static str {
    match t {
        DataType::Int64 => "INTEGER",
        DataType::Utf8 => "TEXT",
        DataType::Float64 => "REAL",
        _ => "BLOB",
    }
}

/// The Arrow type a column is written as, from the type it was declared with (SQLite's
/// affinity rules), or from its values where the declaration does not decide.
fn arrow_type(
    conn: &Connection,
    table: &str,
    column: &str,
    declared: &str,
) -> Result<DataType, TraceError> {
    if let Some(t) = affinity(declared) {
        return Ok(t);
    }
    // No affinity that decides: the values do (one storage class, or integers only).
    let sql = format!(
        "SELECT DISTINCT typeof({c}) FROM {t} WHERE {c} IS NOT NULL LIMIT 3",
        c = quote_ident(column),
        t = quote_ident(table)
    );
    let mut stmt = conn.prepare(&sql).map_err(TraceError::from_sqlite)?;
    let kinds: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .map_err(TraceError::from_sqlite)?
        .collect::<Result<_, _>>()
        .map_err(TraceError::from_sqlite)?;
    match kinds.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] | ["integer"] => Ok(DataType::Int64),
        ["text"] => Ok(DataType::Utf8),
        ["real"] => Ok(DataType::Float64),
        ["blob"] => Ok(DataType::Binary),
        more => Err(TraceError::BadValue {
            table: table.into(),
            column: column.into(),
            detail: format!("values of several kinds ({})", more.join(", ")),
        }),
    }
}

/// One column being gathered into a batch.
enum Builder {
    Int(Int64Builder),
    Text(StringBuilder),
    Real(Float64Builder),
    Blob(BinaryBuilder),
}

impl Builder {
    fn new(t: &DataType) -> Builder {
        match t {
            DataType::Int64 => Builder::Int(Int64Builder::with_capacity(BATCH_ROWS)),
            DataType::Utf8 => Builder::Text(StringBuilder::new()),
            DataType::Float64 => Builder::Real(Float64Builder::with_capacity(BATCH_ROWS)),
            _ => Builder::Blob(BinaryBuilder::new()),
        }
    }

    /// Appends a value, or says what it is when the column cannot hold it.
    fn push(&mut self, v: ValueRef<'_>) -> Result<(), String> {
        match (self, v) {
            (Builder::Int(b), ValueRef::Null) => b.append_null(),
            (Builder::Text(b), ValueRef::Null) => b.append_null(),
            (Builder::Real(b), ValueRef::Null) => b.append_null(),
            (Builder::Blob(b), ValueRef::Null) => b.append_null(),
            (Builder::Int(b), ValueRef::Integer(i)) => b.append_value(i),
            (Builder::Real(b), ValueRef::Real(f)) => b.append_value(f),
            // SQLite stores a whole REAL as an integer on disk: exact below 2^53.
            (Builder::Real(b), ValueRef::Integer(i)) if i.unsigned_abs() <= 1 << 53 => {
                b.append_value(i as f64)
            }
            (Builder::Text(b), ValueRef::Text(t)) => {
                b.append_value(std::str::from_utf8(t).map_err(|e| format!("text {e}"))?)
            }
            (Builder::Blob(b), ValueRef::Blob(x)) => b.append_value(x),
            (_, v) => return Err(format!("a value of type {:?}", v.data_type())),
        }
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Int(b) => Arc::new(b.finish()),
            Builder::Text(b) => Arc::new(b.finish()),
            Builder::Real(b) => Arc::new(b.finish()),
            Builder::Blob(b) => Arc::new(b.finish()),
        }
    }
}

/// Writes the tables the analyses read of an open trace into the folder `out`, which must not
/// exist: the folder is made beside it under a temporary name and renamed when complete, so a
/// failed extraction leaves nothing. Returns the manifest written.
pub fn write(trace: &Trace, out: &Path, tool: &str) -> Result<Manifest, TraceError> {
    if out.exists() {
        return Err(fail(out, "the output folder exists already"));
    }
    if trace.columnar().is_some() {
        return Err(TraceError::AlreadyColumnar(trace.path().to_path_buf()));
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new().prefix(&temp_prefix()).tempdir_in(&parent)?;
    let schema = trace.schema();
    let kernel_table = schema.kernel_table.as_deref();
    let mut tables = Vec::new();
    for (table, columns) in &schema.tables {
        if !is_read(table) || (is_kernel_table(table) && Some(table.as_str()) != kernel_table) {
            continue;
        }
        let keep = kept_columns(table, kernel_table);
        let declared = declared_types(trace.conn(), table)?;
        let cols: Vec<(String, String)> = columns
            .iter()
            .filter(|c| keep.as_ref().is_none_or(|k| k.contains(&c.as_str())))
            .map(|c| (c.clone(), declared.get(c).cloned().unwrap_or_default()))
            .collect();
        let file = format!("{table}.parquet");
        let rows = write_table(trace.conn(), table, &cols, &tmp.path().join(&file))?;
        tables.push(TableFile {
            table: table.clone(),
            sha256: sha256_file(&tmp.path().join(&file))?,
            file,
            rows,
            columns: cols.into_iter().map(|c| c.0).collect(),
        });
    }
    let bytes = std::fs::metadata(trace.path())?.len();
    let manifest = Manifest {
        format: FORMAT.into(),
        version: VERSION,
        tool: tool.into(),
        source: SourceFile {
            path: trace.path().display().to_string(),
            bytes,
            sha256: trace.sha256()?,
        },
        kind: if schema.source.is_nsys() { "nsys" } else { "kineto" }.into(),
        kineto: schema.source.kineto().cloned(),
        tables,
    };
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| fail(out, e))?;
    std::fs::write(tmp.path().join(MANIFEST), text + "\n")?;
    // Kept only once renamed: a failed rename drops (and removes) the temporary folder.
    std::fs::rename(tmp.path(), out)?;
    let _ = tmp.keep();
    Ok(manifest)
}

/// The start of the name of every temporary folder an extract writes into: its own process
/// id, so that a later run can tell a folder of a killed run (whose process is gone) from one
/// being written, and remove it.
pub const TEMP_PREFIX: &str = ".verdict-extract-";

/// [`TEMP_PREFIX`] with this process's id: `.verdict-extract-PID-`.
pub fn temp_prefix() -> String {
    format!("{TEMP_PREFIX}{}-", std::process::id())
}

/// Each column's declared type.
fn declared_types(conn: &Connection, table: &str) -> Result<HashMap<String, String>, TraceError> {
    let mut info = conn
        .prepare(&format!("PRAGMA table_info({})", quote_ident(table)))
        .map_err(TraceError::from_sqlite)?;
    info.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)?)))
        .map_err(TraceError::from_sqlite)?
        .collect::<Result<_, _>>()
        .map_err(TraceError::from_sqlite)
}

/// Writes one table's columns, in row order, as a Parquet file; returns the rows written.
fn write_table(
    conn: &Connection,
    table: &str,
    cols: &[(String, String)],
    path: &Path,
) -> Result<u64, TraceError> {
    let mut fields = Vec::with_capacity(cols.len());
    for (name, declared) in cols {
        let t = arrow_type(conn, table, name, declared)?;
        let meta = HashMap::from([(SQL_TYPE.to_string(), declared.clone())]);
        fields.push(Field::new(name, t, true).with_metadata(meta));
    }
    let schema = Arc::new(ArrowSchema::new(fields));
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(BATCH_ROWS * 16))
        .build();
    let mut writer = ArrowWriter::try_new(File::create(path)?, schema.clone(), Some(props))
        .map_err(|e| fail(path, e))?;
    let list = cols.iter().map(|c| quote_ident(&c.0)).collect::<Vec<_>>().join(", ");
    let mut stmt = conn
        .prepare(&format!("SELECT {list} FROM {} ORDER BY rowid", quote_ident(table)))
        .map_err(TraceError::from_sqlite)?;
    let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
    let mut builders: Vec<Builder> =
        schema.fields().iter().map(|f| Builder::new(f.data_type())).collect();
    let (mut n, mut pending) = (0u64, 0usize);
    let flush = |builders: &mut Vec<Builder>, writer: &mut ArrowWriter<File>| {
        let arrays = builders.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| fail(path, e))?;
        writer.write(&batch).map_err(|e| fail(path, e))
    };
    while let Some(r) = rows.next().map_err(TraceError::from_sqlite)? {
        for (i, b) in builders.iter_mut().enumerate() {
            let v = r.get_ref(i).map_err(TraceError::from_sqlite)?;
            b.push(v).map_err(|detail| TraceError::BadValue {
                table: table.into(),
                column: cols[i].0.clone(),
                detail: format!("{detail} where the column is declared `{}`", cols[i].1),
            })?;
        }
        n += 1;
        pending += 1;
        if pending == BATCH_ROWS {
            flush(&mut builders, &mut writer)?;
            pending = 0;
        }
    }
    if pending > 0 || n == 0 {
        flush(&mut builders, &mut writer)?;
    }
    writer.close().map_err(|e| fail(path, e))?;
    Ok(n)
}

/// The tables read on demand rather than at open: the large activity tables, which most
/// commands read only some of, and which the kernel and launch scans read straight from their
/// Parquet files (`IntColumns`). Every other table is small and read at open.
pub(crate) fn is_lazy(table: &str) -> bool {
    [names::RUNTIME, names::NVTX_EVENTS, names::MEMCPY, names::MEMSET].contains(&table)
        || is_kernel_table(table)
}

/// Opens a columnar folder into the SQLite database of `conn` (in memory), with the tables
/// of an nsys export: every table is created, the small ones filled; the large ones
/// (`is_lazy`) are created empty and returned with their files, for the caller to drop
/// once the schema is probed and to fill with `load_table` when a scan reads them. Every
/// file is checked against the manifest first. The folder is only read.
pub fn open(
    dir: &Path,
    conn: &Connection,
) -> Result<(ColumnarInfo, Vec<(String, PathBuf)>), TraceError> {
    let manifest_path = dir.join(MANIFEST);
    let (layout, wanted): (Layout, Vec<(String, PathBuf)>) = if std::fs::symlink_metadata(
        &manifest_path,
    )
    .is_ok()
    {
        let bytes = super::open::read_limited(&manifest_path, MAX_MANIFEST_BYTES)?;
        let manifest_sha256 = super::hex(&sha2::Sha256::digest(&bytes));
        let m: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| fail(&manifest_path, format!("not an extract's manifest ({e})")))?;
        if m.format != FORMAT || m.version != VERSION {
            return Err(fail(
                &manifest_path,
                format!(
                    "format `{}` version {}, where this build reads `{FORMAT}` version {VERSION}",
                    m.format, m.version
                ),
            ));
        }
        // Each table is a plain file name inside the folder: never a path that leaves it.
        for t in &m.tables {
            let mut parts = Path::new(&t.file).components();
            let plain = matches!(
                (parts.next(), parts.next()),
                (Some(std::path::Component::Normal(n)), None) if n == std::ffi::OsStr::new(&t.file)
            );
            if !plain {
                return Err(fail(
                    &manifest_path,
                    format!(
                        "table `{}` is named by `{}`, which is not a plain file name inside the folder",
                        t.table, t.file
                    ),
                ));
            }
        }
        let wanted = m.tables.iter().map(|t| (t.table.clone(), dir.join(&t.file))).collect();
        (Layout::Extract { manifest: Box::new(m), manifest_sha256 }, wanted)
    } else {
        let mut wanted = Vec::new();
        let mut skipped = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            let Some(table) = name.strip_suffix(".parquet") else { continue };
            if is_read(table) {
                wanted.push((table.to_string(), dir.join(&name)));
            } else {
                skipped.push(name.clone());
            }
        }
        wanted.sort();
        skipped.sort();
        (Layout::NsysParquet { skipped }, wanted)
    };
    // The files are hashed in parallel: the digests are the one cost of opening a folder
    // that grows with its bytes before any table is read.
    let digests: Vec<Result<String, TraceError>> = {
        use rayon::prelude::*;
        wanted
            .par_iter()
            .map(|(_, path)| match sha256_file(path) {
                Ok(s) => Ok(s),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Err(fail(path, "the manifest names it, but it is absent"))
                }
                Err(e) => Err(e.into()),
            })
            .collect()
    };
    let mut files = Vec::with_capacity(wanted.len());
    for ((_, path), sha) in wanted.iter().zip(digests) {
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        files.push((name, sha?));
    }
    let digest = match &layout {
        Layout::Extract { manifest, manifest_sha256 } => {
            for (t, (name, sha)) in manifest.tables.iter().zip(&files) {
                if &t.sha256 != sha {
                    return Err(fail(
                        &dir.join(name),
                        format!(
                            "its sha256 is {sha}, where the manifest records {} for it",
                            t.sha256
                        ),
                    ));
                }
            }
            // The numbers are the extract's: its manifest (which names every table's sha256)
            // is their identity. The source's sha256 is only what the extract records;
            // `verdict extract DIR --verify SOURCE` checks it.
            manifest_sha256.clone()
        }
        Layout::NsysParquet { .. } => {
            let lines: String = files.iter().map(|(n, s)| format!("{n} {s}\n")).collect();
            super::hex(&sha2::Sha256::digest(lines.as_bytes()))
        }
    };
    conn.execute_batch("PRAGMA journal_mode = OFF;").map_err(TraceError::from_sqlite)?;
    let mut lazy = Vec::new();
    conn.execute_batch("BEGIN").map_err(TraceError::from_sqlite)?;
    for (table, path) in &wanted {
        if is_lazy(table) {
            create_table(conn, table, path)?;
            lazy.push((table.clone(), path.clone()));
        } else {
            load_table(conn, "main", table, path)?;
        }
    }
    conn.execute_batch("COMMIT").map_err(TraceError::from_sqlite)?;
    Ok((ColumnarInfo { dir: dir.display().to_string(), layout, digest, files }, lazy))
}

/// The SQL type a column is declared with: as the extract recorded it, else from its Arrow
/// type.
fn sql_type(field: &Field) -> Result<&'static str, String> {
    if let Some(t) = field.metadata().get(SQL_TYPE) {
        // Declared types are kept as SQLite understands them; only their affinity matters
        // to the scans, which read values.
        return Ok(affinity(t).as_ref().map_or("", sql_name));
    }
    Ok(sql_name(&canonical(field.data_type())?))
}

/// The type a column is read as: integers of every width as 64-bit, text and bytes of every
/// encoding as plain ones.
fn canonical(t: &DataType) -> Result<DataType, String> {
    Ok(match t {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Boolean
        | DataType::Null => DataType::Int64,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => DataType::Float64,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => DataType::Binary,
        DataType::Dictionary(_, v) => canonical(v)?,
        other => return Err(format!("a column of type {other}, which no nsys table has")),
    })
}

/// A column of a batch, as the type it is read as.
enum Column<'a> {
    Int(&'a Int64Array),
    Real(&'a Float64Array),
    Text(&'a StringArray),
    Blob(&'a BinaryArray),
}

/// Files up to this size are read whole before they are parsed: a reader over a file opens a
/// new handle for every column chunk it reads, which the many small files of a set of ranks
/// pay per column.
const IN_MEMORY_BYTES: u64 = 16 << 20;

/// A table's Parquet file, opened: its schema, each column's declaration (`"name" TYPE`) and
/// canonical type, and its reader, built on demand with the root columns given
/// (None: all).
struct TableReader {
    schema: arrow_schema::SchemaRef,
    decl: Vec<String>,
    types: Vec<DataType>,
    build: BuildReader,
}

/// Builds a file's reader with the root columns given (None: all).
type BuildReader =
    Box<dyn FnOnce(Option<Vec<usize>>) -> Result<ParquetRecordBatchReader, TraceError>>;

/// Opens a Parquet file of a table (read whole when small): its reader and each column's
/// canonical type, or the error naming the column this build cannot read.
fn table_reader(table: &str, path: &Path) -> Result<TableReader, TraceError> {
    use parquet::file::reader::ChunkReader as _;
    let file = super::open::open(path)?;
    let len = file.metadata()?.len();
    if len <= IN_MEMORY_BYTES {
        let bytes = file.get_bytes(0, len as usize).map_err(|e| fail(path, e))?;
        open_reader(table, path, bytes)
    } else {
        open_reader(table, path, file)
    }
}

fn open_reader<T: parquet::file::reader::ChunkReader + 'static>(
    table: &str,
    path: &Path,
    input: T,
) -> Result<TableReader, TraceError> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(input).map_err(|e| fail(path, e))?;
    let rows = builder.metadata().file_metadata().num_rows();
    // Batches no larger than the table: a batch's buffers are sized for it.
    let builder = builder.with_batch_size(rows.clamp(1, BATCH_ROWS as i64) as usize);
    let schema = builder.schema().clone();
    let mut decl = Vec::with_capacity(schema.fields().len());
    let mut types = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let bad = |detail: String| TraceError::BadValue {
            table: table.into(),
            column: f.name().clone(),
            detail: format!("{detail} (in `{}`)", path.display()),
        };
        decl.push(format!("{} {}", quote_ident(f.name()), sql_type(f).map_err(bad)?));
        types.push(canonical(f.data_type()).map_err(bad)?);
    }
    let path = path.to_path_buf();
    let build = Box::new(move |roots: Option<Vec<usize>>| {
        let builder = match roots {
            Some(roots) => {
                let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), roots);
                builder.with_projection(mask)
            }
            None => builder,
        };
        builder.build().map_err(|e| fail(&path, e))
    });
    Ok(TableReader { schema, decl, types, build })
}

/// Creates the table of a Parquet file, empty, with its columns as declared.
fn create_table(conn: &Connection, table: &str, path: &Path) -> Result<(), TraceError> {
    let decl = table_reader(table, path)?.decl;
    conn.execute_batch(&format!("CREATE TABLE {} ({});", quote_ident(table), decl.join(", ")))
        .map_err(TraceError::from_sqlite)
}

/// Reads one Parquet file into a new table of its name, in the database `main` or an
/// attached one.
pub(crate) fn load_table(
    conn: &Connection,
    db: &str,
    table: &str,
    path: &Path,
) -> Result<(), TraceError> {
    let TableReader { schema, decl, types, build, .. } = table_reader(table, path)?;
    let name = format!("{}.{}", quote_ident(db), quote_ident(table));
    conn.execute_batch(&format!("CREATE TABLE {name} ({});", decl.join(", ")))
        .map_err(TraceError::from_sqlite)?;
    let marks = vec!["?"; types.len()].join(", ");
    let mut insert = conn
        .prepare(&format!("INSERT INTO {name} VALUES ({marks})"))
        .map_err(TraceError::from_sqlite)?;
    let reader = build(None)?;
    let strict = arrow_cast::CastOptions { safe: false, ..Default::default() };
    for batch in reader {
        let batch = batch.map_err(|e| fail(path, e))?;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(types.len());
        for (i, t) in types.iter().enumerate() {
            let a = batch.column(i);
            let a = if a.data_type() == t {
                a.clone()
            } else {
                arrow_cast::cast_with_options(a, t, &strict).map_err(|e| TraceError::BadValue {
                    table: table.into(),
                    column: schema.field(i).name().clone(),
                    detail: format!("{e} (in `{}`)", path.display()),
                })?
            };
            columns.push(a);
        }
        let cols: Vec<Column<'_>> = columns
            .iter()
            .map(|a| match a.data_type() {
                DataType::Int64 => Column::Int(a.as_primitive::<arrow_array::types::Int64Type>()),
                DataType::Float64 => {
                    Column::Real(a.as_primitive::<arrow_array::types::Float64Type>())
                }
                DataType::Utf8 => Column::Text(a.as_string::<i32>()),
                _ => Column::Blob(a.as_binary::<i32>()),
            })
            .collect();
        for row in 0..batch.num_rows() {
            for (i, c) in cols.iter().enumerate() {
                let at = i + 1;
                match c {
                    Column::Int(a) if a.is_valid(row) => {
                        insert.raw_bind_parameter(at, a.value(row))
                    }
                    Column::Real(a) if a.is_valid(row) => {
                        insert.raw_bind_parameter(at, a.value(row))
                    }
                    Column::Text(a) if a.is_valid(row) => {
                        insert.raw_bind_parameter(at, a.value(row))
                    }
                    Column::Blob(a) if a.is_valid(row) => {
                        insert.raw_bind_parameter(at, a.value(row))
                    }
                    _ => insert.raw_bind_parameter(at, rusqlite::types::Null),
                }
                .map_err(TraceError::from_sqlite)?;
            }
            insert.raw_execute().map_err(TraceError::from_sqlite)?;
        }
    }
    Ok(())
}

/// Rows of a table's Parquet file, from its footer.
pub(crate) fn row_count(path: &Path) -> Result<i64, TraceError> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(super::open::open(path)?)
        .map_err(|e| fail(path, e))?;
    Ok(builder.metadata().file_metadata().num_rows())
}

/// Integer columns of a table read straight from its Parquet file, batch by batch in row
/// order, as 64-bit integers: the values a scan of the table loaded into SQLite reads, without
/// the load.
pub(crate) struct IntColumns {
    reader: ParquetRecordBatchReader,
    table: String,
    path: PathBuf,
    /// Per column asked for, its name in the file (None: absent, read as NULL).
    columns: Vec<Option<String>>,
}

impl IntColumns {
    /// Opens the columns `columns` (None: a column the scan reads as NULL) of a table's file,
    /// or gives None when one of them is not an integer column (the table is then read
    /// through SQLite, where the scan's own checks name what it holds). A column absent from
    /// the file is the caller's to have checked against the schema.
    pub(crate) fn open(
        table: &str,
        path: &Path,
        columns: &[Option<&str>],
    ) -> Result<Option<IntColumns>, TraceError> {
        let TableReader { schema, types, build, .. } = table_reader(table, path)?;
        let mut roots = Vec::new();
        for c in columns.iter().flatten() {
            let Ok(i) = schema.index_of(c) else {
                return Err(TraceError::MissingColumn { table: table.into(), column: (*c).into() });
            };
            if types[i] != DataType::Int64 {
                return Ok(None);
            }
            roots.push(i);
        }
        let reader = build(Some(roots))?;
        Ok(Some(IntColumns {
            reader,
            table: table.into(),
            path: path.to_path_buf(),
            columns: columns.iter().map(|c| c.map(str::to_string)).collect(),
        }))
    }

    /// The next batch: per column asked for, its values (None for a column read as NULL).
    pub(crate) fn next_batch(&mut self) -> Result<Option<Vec<Option<Int64Array>>>, TraceError> {
        let Some(batch) = self.reader.next() else { return Ok(None) };
        let batch = batch.map_err(|e| fail(&self.path, e))?;
        let strict = arrow_cast::CastOptions { safe: false, ..Default::default() };
        let mut out = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            let Some(name) = c else {
                out.push(None);
                continue;
            };
            let a = batch.column_by_name(name).ok_or_else(|| TraceError::MissingColumn {
                table: self.table.clone(),
                column: name.clone(),
            })?;
            let a = if a.data_type() == &DataType::Int64 {
                a.clone()
            } else {
                arrow_cast::cast_with_options(a, &DataType::Int64, &strict).map_err(|e| {
                    TraceError::BadValue {
                        table: self.table.clone(),
                        column: name.clone(),
                        detail: format!("{e} (in `{}`)", self.path.display()),
                    }
                })?
            };
            out.push(Some(a.as_primitive::<arrow_array::types::Int64Type>().clone()));
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::nvtx::NvtxRanges;
    use crate::trace::{KernelFilter, Kernels, NameStyle, with_split};

    /// A table loaded from an extract goes to memory below the rows at which scans split,
    /// to the spill file from there, where the split scans read it; both give what the same
    /// scans give over the SQLite source, and what the straight Parquet scan gives.
    #[test]
    fn a_table_loaded_in_memory_or_spilled_reads_as_the_source() {
        let src =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nsys-ai/mfu_2gpu_before.sqlite");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x");
        let a = Trace::open(&src).unwrap();
        write(&a, &out, "test").unwrap();
        // NVTX_EVENTS has 19,118 rows, the kernel table 4,010 (SQL over the fixture).
        with_split(5_000, 3, || {
            let b = Trace::open(&out).unwrap();
            assert!(b.spill.get().is_none(), "nothing spilled before a table is read");
            let (na, nb) =
                (NvtxRanges::load(&a, None).unwrap(), NvtxRanges::load(&b, None).unwrap());
            assert_eq!(nb.start.len(), na.start.len());
            assert_eq!((&na.start, &na.end, &na.global_tid), (&nb.start, &nb.end, &nb.global_tid));
            let texts = |r: &NvtxRanges| -> Vec<String> {
                (0..r.len()).map(|i| r.name_of(i).to_string()).collect()
            };
            assert_eq!(texts(&na), texts(&nb));
            let spill = b.spill.get().expect("NVTX_EVENTS spilled").to_path_buf();
            assert_eq!(b.split_file(names::NVTX_EVENTS), Some(spill.as_path()));

            let filter = KernelFilter::default();
            let straight = Kernels::load(&b, &filter, &mut |_| {}).unwrap();
            b.load_tables(&[names::KERNEL]).unwrap();
            assert_eq!(b.split_file(names::KERNEL), None, "4,010 rows stay in memory");
            let via_sql = Kernels::load(&b, &filter, &mut |_| {}).unwrap();
            let source = Kernels::load(&a, &filter, &mut |_| {}).unwrap();
            for k in [&straight, &via_sql] {
                assert_eq!(k.len(), 4_010);
                assert_eq!(
                    (&k.start, &k.end, &k.device),
                    (&source.start, &source.end, &source.device)
                );
                assert!((0..k.len()).all(
                    |i| k.name(i, NameStyle::Demangled) == source.name(i, NameStyle::Demangled)
                ));
            }
        });
    }
}
