//! Read-only access to an Nsight Systems SQLite export.
//!
//! Owns opening (read-only, immutable: no journal, lock or index is ever written beside the
//! file), the schema probe, the inventory of devices and streams, and the one columnar scan of
//! the kernel table that every analysis of a command shares. It computes no metric.
//!
//! Immutable mode reads the file alone, so a trace whose committed state is not the file alone
//! (a write-ahead log or a hot rollback journal beside it) is refused rather than read in a
//! state no other SQLite reader sees.

#[cfg(feature = "columnar")]
pub mod columnar;
/// Training configurations (Megatron-LM's `arguments` block in a log, YAML, JSON, TOML, a
/// launch command line), read into flat keys with their lines and exact values.
pub mod config;
pub mod copies;
mod kernels;
pub mod kineto;
pub mod names;
/// Nsight Compute `ncu --csv` exports (details and raw pages), read with exact numbers.
pub mod ncu;
pub mod nvtx;
pub mod open;
pub mod payload;
pub mod remap;
pub mod run;
mod schema;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};
use schemars::JsonSchema;
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use copies::{Copies, CopyKind};
pub use kernels::{KernelFilter, Kernels, NO_ROWS, NameStyle, RowBox, union_rows};
pub use run::{RunGpu, RunInfo, SideRun};
pub use schema::{NvtxText, Origin, Requirement, Schema, Source, TableRole, TimeBase, quote_ident};

/// Errors reading a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The path does not exist.
    #[error("`{0}` does not exist")]
    NotFound(PathBuf),
    /// The path is a directory or something else that is not a regular file.
    #[error("`{0}` is not a file")]
    NotAFile(PathBuf),
    /// The file is empty.
    #[error("`{0}` is empty")]
    Empty(PathBuf),
    /// The file does not start with the SQLite header.
    #[error("`{0}` is not an SQLite database")]
    NotSqlite(PathBuf),
    /// The file is shorter than its header says.
    #[error("`{path}` is truncated (its header declares {expected} bytes, the file has {actual})")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the header declares.
        expected: u64,
        /// Bytes on disk.
        actual: u64,
    },
    /// A non-empty write-ahead log lies beside the file: SQLite readers see its changes, the
    /// file alone does not hold them.
    #[error(
        "`{path}` has a write-ahead log beside it (`{wal}`, {bytes} bytes) whose changes are not in the file"
    )]
    Wal {
        /// The trace.
        path: PathBuf,
        /// The `-wal` file.
        wal: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// A hot rollback journal lies beside the file: a write was interrupted (or is under way)
    /// and SQLite readers would roll the file back first.
    #[error(
        "`{path}` has a hot rollback journal beside it (`{journal}`, {bytes} bytes): a write to it was interrupted or is under way"
    )]
    HotJournal {
        /// The trace.
        path: PathBuf,
        /// The `-journal` file.
        journal: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// SQLite reports corruption.
    #[error("the database is corrupt ({0})")]
    Corrupt(String),
    /// A table the analysis needs is absent.
    #[error("table `{table}` is absent")]
    MissingTable {
        /// The table.
        table: String,
    },
    /// A column the analysis needs is absent.
    #[error("column `{table}.{column}` is absent")]
    MissingColumn {
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
    /// A value that the schema declares NOT NULL or numeric is not.
    #[error("unexpected value in `{table}.{column}` ({detail})")]
    BadValue {
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// What was found.
        detail: String,
    },
    /// A timestamp outside ±[`MAX_TIMESTAMP_NS`].
    #[error(
        "`{table}.{column}` holds {ns} ns, outside ±4,611,686,018,427,387,904 ns (2^62), the range durations are computed in"
    )]
    OutOfRange {
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// The value.
        ns: i64,
    },
    /// A PyTorch profiler (Kineto) trace that cannot be read.
    #[error("`{path}` cannot be read as a PyTorch profiler (Kineto) trace: {detail}")]
    Kineto {
        /// The trace.
        path: PathBuf,
        /// What was found, and where.
        detail: String,
    },
    /// A folder of Parquet tables (an extract, or an nsys `parquetdir` export) that cannot
    /// be read.
    #[error("`{path}`: {detail}")]
    Columnar {
        /// The folder or file.
        path: PathBuf,
        /// What was found.
        detail: String,
    },
    /// A folder of Parquet tables given to be extracted again.
    #[error("`{0}` is a folder of Parquet tables already")]
    AlreadyColumnar(PathBuf),
    /// A folder given as a trace that is not one this build reads.
    #[error("`{0}` is a folder, not a trace file or a folder of Parquet tables")]
    NotColumnar(PathBuf),
    /// Any other SQLite error.
    #[error("sqlite error ({0})")]
    Sqlite(String),
    /// Reading the file failed.
    #[error("cannot read the file ({0})")]
    Io(#[from] io::Error),
}

impl TraceError {
    pub(crate) fn from_sqlite(e: rusqlite::Error) -> TraceError {
        use rusqlite::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt) | Some(ErrorCode::NotADatabase) => {
                TraceError::Corrupt(e.to_string())
            }
            _ => TraceError::Sqlite(e.to_string()),
        }
    }

    /// A hint on what to do about it: every error has one (tested over every variant).
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            TraceError::NotFound(_) | TraceError::NotAFile(_) => {
                "pass the `.sqlite` file written by `nsys export --type sqlite REPORT.nsys-rep`".into()
            }
            TraceError::Empty(_) | TraceError::NotSqlite(_) => {
                "convert the report first: `nsys export --type sqlite REPORT.nsys-rep` (a `.nsys-rep` file is not SQLite)".into()
            }
            TraceError::Truncated { .. } | TraceError::Corrupt(_) => {
                "the copy is incomplete or damaged; copy it again or re-export it with `nsys export --type sqlite`".into()
            }
            TraceError::MissingTable { table } if table == names::KERNEL => {
                "the capture has no GPU kernel activity; profile with CUDA tracing (`nsys profile --trace=cuda,nvtx`) and export again".into()
            }
            TraceError::MissingTable { table } if table == names::STRING_IDS => {
                "kernel names are stored in `StringIds`; export the full report with `nsys export --type sqlite` (no table filter)".into()
            }
            TraceError::MissingTable { .. } | TraceError::MissingColumn { .. } => {
                "re-export the report with a current nsys (`nsys export --type sqlite --lazy=false`); see `verdict inspect TRACE` for what this file has".into()
            }
            TraceError::Kineto { .. } => {
                "pass the `.json` or `.json.gz` file `torch.profiler` wrote (`export_chrome_trace` or `tensorboard_trace_handler`), unaltered; `ts` and `dur` are read as µs with at most three decimals".into()
            }
            TraceError::Columnar { .. } => {
                "extract the trace again with `verdict extract TRACE --out DIR` (into a new folder), or export it again with `nsys export --type parquetdir`".into()
            }
            TraceError::AlreadyColumnar(_) => {
                "every command reads it as it is; to make a new extract, extract the `.sqlite` or Kineto file it came from".into()
            }
            TraceError::NotColumnar(_) => {
                if cfg!(feature = "columnar") {
                    "pass a `.sqlite` export, a Kineto `.json`/`.json.gz`, a folder written by `verdict extract`, or one written by `nsys export --type parquetdir`".into()
                } else {
                    "this build reads no Parquet folders: build verdict with its default features (`cargo install --path .`), or pass the `.sqlite` export".into()
                }
            }
            TraceError::BadValue { .. } => {
                "nsys writes an integer there; the file was altered or written by another tool: re-export it with `nsys export --type sqlite`".into()
            }
            TraceError::OutOfRange { .. } => {
                "nsys writes ns since the capture started (or since 1970 with `--ts-normalize`), far inside this range: the file was altered or written by another tool; re-export it with `nsys export --type sqlite`".into()
            }
            TraceError::Wal { path, .. } => format!(
                "checkpoint it into the file with `sqlite3 {} 'PRAGMA wal_checkpoint(TRUNCATE)'`, or copy the database with `sqlite3 {} '.backup COPY.sqlite'` and pass the copy; the trace is read as the file alone, which is not what SQLite readers see",
                path.display(),
                path.display()
            ),
            TraceError::HotJournal { path, .. } => format!(
                "once no program writes it, let SQLite roll the journal back with `sqlite3 {} 'PRAGMA quick_check'`, or copy the database with `sqlite3 {} '.backup COPY.sqlite'` and pass the copy; the trace is read as the file alone, which is not what SQLite readers see",
                path.display(),
                path.display()
            ),
            TraceError::Io(e) => {
                open::Refused::of(e).map_or_else(|| open::io_hint(e), |r| r.hint.clone())
            }
            TraceError::Sqlite(_) => {
                "SQLite could not read it: check the file is a complete `nsys export --type sqlite` export (`verdict inspect TRACE` shows what it holds), or export it again".into()
            }
        })
    }
}

/// An open trace: a read-only connection and its probed schema.
pub struct Trace {
    conn: Connection,
    path: PathBuf,
    schema: Schema,
    /// For a Kineto trace: the database its events were read into, in the temporary folder,
    /// removed when the trace is dropped (declared after `conn`, so closed after it). A
    /// columnar folder's database is in memory, with its `spill` file below.
    db: Option<tempfile::TempPath>,
    /// For a columnar folder: its layout, files and the digest its evidence carries.
    #[cfg(feature = "columnar")]
    columnar: Option<Box<columnar::ColumnarInfo>>,
    /// For a columnar folder: its large tables not read into the database yet, with their
    /// files ([`columnar::is_lazy`]); each is loaded when a scan first reads it through SQL.
    #[cfg(feature = "columnar")]
    unloaded: std::cell::RefCell<BTreeMap<String, PathBuf>>,
    /// For a columnar folder whose database is in memory: the temporary file attached to it
    /// (as `spill`) once a table large enough to be scanned over the cores is loaded, which
    /// the split scans open; removed when the trace is dropped.
    #[cfg(feature = "columnar")]
    spill: std::cell::OnceCell<tempfile::TempPath>,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace").field("path", &self.path).finish_non_exhaustive()
    }
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The largest magnitude of a timestamp the tool reads, in ns: 2^62, about 146 years either
/// side of the clock's zero (nsys writes ns since the session start, or UTC-epoch ns, about
/// 1.8e18 in 2026). Within it the difference of any two timestamps fits an i64, so every
/// duration, span and union length is exact; a timestamp outside is a bad value, never
/// wrapped or clamped.
pub const MAX_TIMESTAMP_NS: i64 = 1 << 62;

/// Checks that a timestamp read from `table.column` lies strictly within
/// ±[`MAX_TIMESTAMP_NS`].
pub(crate) fn check_timestamp(table: &str, column: &str, ns: i64) -> Result<i64, TraceError> {
    if ns.unsigned_abs() < MAX_TIMESTAMP_NS.unsigned_abs() {
        return Ok(ns);
    }
    Err(TraceError::OutOfRange { table: table.into(), column: column.into(), ns })
}

/// Rows below which a table is read by one connection: splitting costs a connection and a
/// thread, which pays only on large tables.
const SPLIT_MIN_ROWS: i64 = 200_000;

thread_local! {
    /// Tests' override of the split on their own thread: (rows below which a table is read
    /// whole, ranges).
    static SPLIT: std::cell::Cell<Option<(i64, i64)>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with tables split from `min_rows` rows into `parts` ranges on this thread, so
/// that tests read their small fixtures both ways.
#[cfg(test)]
pub(crate) fn with_split<R>(min_rows: i64, parts: i64, f: impl FnOnce() -> R) -> R {
    SPLIT.with(|s| s.set(Some((min_rows, parts))));
    let out = f();
    SPLIT.with(|s| s.set(None));
    out
}

/// Rows from which a table is read in ranges, and how many: this thread's override, else
/// [`SPLIT_MIN_ROWS`] and one range per core.
fn split_setting() -> (i64, i64) {
    SPLIT.with(|s| s.get()).unwrap_or((SPLIT_MIN_ROWS, rayon::current_num_threads().max(1) as i64))
}

/// Runs `f` reading every table in one pass on this thread: the files of a set are read in
/// parallel already, and more threads than cores only take turns.
pub(crate) fn unsplit<R>(f: impl FnOnce() -> R) -> R {
    let before = SPLIT.with(|s| s.replace(Some((i64::MAX, 1))));
    let out = f();
    SPLIT.with(|s| s.set(before));
    out
}

/// Reads a table in rowid ranges, one per core, each on its own read-only connection and
/// thread (the first on the trace's own connection, on the calling thread), and returns what
/// `scan` made of each range in rowid order. `scan` gets the connection, the SQL condition
/// of its range (`rowid BETWEEN a AND b`, or `1` for the whole table) and, for the first
/// range, `progress` with the number of ranges (its rows times that estimate the total). A
/// table whose rowids cannot be read (a view) is read whole, by one call.
pub(crate) fn split_scan<T: Send>(
    trace: &Trace,
    table: &str,
    progress: &mut dyn FnMut(u64),
    scan: impl Fn(&Connection, &str, Option<(&mut dyn FnMut(u64), u64)>) -> Result<T, TraceError> + Sync,
) -> Result<Vec<T>, TraceError> {
    trace.load_tables(&[table])?;
    // Two queries: SQLite reads one end of the b-tree for a lone min() or max(), but scans
    // the table for both in one.
    let end = |f: &str| -> Option<i64> {
        let sql = format!("SELECT {f}(rowid) FROM {}", quote_ident(table));
        trace.conn().query_row(&sql, [], |r| r.get::<_, Option<i64>>(0)).ok().flatten()
    };
    let bounds = end("min").zip(end("max"));
    let (min_rows, parts) = split_setting();
    // The file the other ranges' connections open: the trace, or the database it was read
    // into; none for a table held in memory.
    let path = trace.split_file(table);
    let Some((lo, hi)) =
        bounds.filter(|(lo, hi)| parts > 1 && hi - lo >= min_rows && path.is_some())
    else {
        return Ok(vec![scan(trace.conn(), "1", Some((progress, 1)))?]);
    };
    let path = path.unwrap_or(trace.path());
    let step = (hi - lo) / parts + 1;
    let ranges: Vec<String> = (0..parts)
        .map(|p| {
            let a = lo + p * step;
            let b = if p == parts - 1 { hi } else { a + step - 1 };
            format!("rowid BETWEEN {a} AND {b}")
        })
        .collect();
    std::thread::scope(|s| {
        let scan = &scan;
        let others: Vec<_> = ranges[1..]
            .iter()
            .map(|range| s.spawn(move || scan(&open_read_only(path)?, range, None)))
            .collect();
        let first = scan(trace.conn(), &ranges[0], Some((progress, parts as u64)));
        let mut out = vec![first?];
        for h in others {
            out.push(h.join().unwrap_or_else(|_| {
                Err(TraceError::Io(std::io::Error::other("a scan thread panicked")))
            })?);
        }
        Ok(out)
    })
}

/// A read-only connection: `immutable=1`, so SQLite takes no lock and never creates a
/// journal, WAL or shm file beside the trace.
fn open_read_only(path: &Path) -> Result<Connection, TraceError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    // An absolute path gets an empty authority (`file:///x`): `file://host/x` would read a
    // path that starts with `//` as a host name.
    let escaped = uri_escape(path);
    let scheme = if escaped.starts_with('/') { "file://" } else { "file:" };
    let uri = format!("{scheme}{escaped}?mode=ro&immutable=1");
    Connection::open_with_flags(uri, flags).map_err(TraceError::from_sqlite)
}

impl Trace {
    /// Opens a trace read-only and probes its schema.
    ///
    /// The format is told by content: an SQLite header is an Nsight Systems export, gzip or a
    /// JSON object a PyTorch profiler (Kineto) trace, read into the same tables
    /// ([`kineto`]).
    pub fn open(path: &Path) -> Result<Trace, TraceError> {
        // The one gate: inside the roots of a confined call, never a FIFO, device or socket.
        open::check(path, open::Want::FileOrDir)?;
        if is_kineto(path)? {
            return Trace::open_kineto(path);
        }
        if path.is_dir() {
            return Trace::open_dir(path);
        }
        check_file(path)?;
        check_side_files(path)?;
        let conn = open_read_only(path)?;
        let schema = Schema::probe(&conn)?;
        Ok(Trace::new(conn, path, schema, None))
    }

    fn new(conn: Connection, path: &Path, schema: Schema, db: Option<tempfile::TempPath>) -> Trace {
        Trace {
            conn,
            path: path.to_path_buf(),
            schema,
            db,
            #[cfg(feature = "columnar")]
            columnar: None,
            #[cfg(feature = "columnar")]
            unloaded: Default::default(),
            #[cfg(feature = "columnar")]
            spill: Default::default(),
        }
    }

    /// A temporary database for a trace read into the tables of an nsys export.
    fn temp_db(prefix: &str) -> Result<tempfile::TempPath, TraceError> {
        Ok(tempfile::Builder::new().prefix(prefix).suffix(".sqlite").tempfile()?.into_temp_path())
    }

    /// A folder of Parquet tables: an extract or an nsys `parquetdir` export
    /// ([`columnar`]).
    #[cfg(feature = "columnar")]
    fn open_dir(path: &Path) -> Result<Trace, TraceError> {
        if !columnar::is_columnar_dir(path) {
            return Err(TraceError::NotColumnar(path.to_path_buf()));
        }
        // The database is the trace's own, in memory: the small tables are read into it here,
        // the large ones when first read through SQL (Trace::load_tables).
        let conn = Connection::open_in_memory().map_err(TraceError::from_sqlite)?;
        let (info, lazy) = columnar::open(path, &conn)?;
        let mut schema = Schema::probe(&conn)?;
        if let Some(k) = info.manifest().and_then(|m| m.kineto.clone()) {
            schema.set_kineto(k);
        }
        // The large tables were created empty for the probe; they are dropped until read, so
        // a read that did not load its table first fails on a missing table, never reads an
        // empty one.
        for (table, _) in &lazy {
            conn.execute_batch(&format!("DROP TABLE {}", quote_ident(table)))
                .map_err(TraceError::from_sqlite)?;
        }
        let mut trace = Trace::new(conn, path, schema, None);
        trace.columnar = Some(Box::new(info));
        trace.unloaded = std::cell::RefCell::new(lazy.into_iter().collect());
        Ok(trace)
    }

    /// Reads the given tables of a columnar folder into its database where they are not yet
    /// (a no-op for any other trace, and for a table the trace does not have): every table
    /// is then there for [`Trace::conn`] to read.
    pub fn load_tables(&self, tables: &[&str]) -> Result<(), TraceError> {
        #[cfg(feature = "columnar")]
        {
            let mut unloaded = self.unloaded.borrow_mut();
            let todo: Vec<(String, PathBuf)> = tables
                .iter()
                .filter_map(|t| unloaded.get(*t).map(|p| (t.to_string(), p.clone())))
                .collect();
            if todo.is_empty() {
                return Ok(());
            }
            // A table a scan would split over the cores goes to the file the split scans open;
            // a smaller one stays in memory.
            let (min_rows, _) = split_setting();
            let mut dbs = Vec::with_capacity(todo.len());
            for (_, path) in &todo {
                let spill = columnar::row_count(path)? >= min_rows;
                if spill && self.spill.get().is_none() {
                    let file = Trace::temp_db("verdict-columnar-")?;
                    let mut attach = self
                        .conn
                        .prepare("ATTACH DATABASE ?1 AS spill")
                        .map_err(TraceError::from_sqlite)?;
                    attach
                        .execute([file.to_string_lossy().as_ref()])
                        .map_err(TraceError::from_sqlite)?;
                    self.conn
                        .execute_batch(
                            "PRAGMA spill.journal_mode = OFF; PRAGMA spill.synchronous = OFF; \
                             PRAGMA spill.locking_mode = EXCLUSIVE;",
                        )
                        .map_err(TraceError::from_sqlite)?;
                    let _ = self.spill.set(file);
                }
                dbs.push(if spill { "spill" } else { "main" });
            }
            self.conn.execute_batch("BEGIN").map_err(TraceError::from_sqlite)?;
            for ((table, path), db) in todo.iter().zip(dbs) {
                if let Err(e) = columnar::load_table(&self.conn, db, table, path) {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(e);
                }
            }
            self.conn.execute_batch("COMMIT").map_err(TraceError::from_sqlite)?;
            for (table, _) in todo {
                unloaded.remove(&table);
            }
        }
        #[cfg(not(feature = "columnar"))]
        let _ = tables;
        Ok(())
    }

    /// The connection, with the given tables read into it ([`Trace::load_tables`]).
    pub(crate) fn conn_with(&self, tables: &[&str]) -> Result<&Connection, TraceError> {
        self.load_tables(tables)?;
        Ok(&self.conn)
    }

    /// For a columnar folder's table not read into its database: its Parquet file, for a
    /// scan to read straight.
    #[cfg(feature = "columnar")]
    pub(crate) fn unloaded_file(&self, table: &str) -> Option<PathBuf> {
        self.unloaded.borrow().get(table).cloned()
    }

    /// Rows of a table: counted by SQL, or for a columnar folder's table not read into its
    /// database, from its file's footer.
    pub(crate) fn row_count(&self, table: &str) -> Result<i64, TraceError> {
        #[cfg(feature = "columnar")]
        if let Some(path) = self.unloaded_file(table) {
            return columnar::row_count(&path);
        }
        self.conn
            .query_row(&format!("SELECT count(*) FROM {}", quote_ident(table)), [], |r| r.get(0))
            .map_err(TraceError::from_sqlite)
    }

    #[cfg(not(feature = "columnar"))]
    fn open_dir(path: &Path) -> Result<Trace, TraceError> {
        Err(TraceError::NotColumnar(path.to_path_buf()))
    }

    /// For a columnar folder: what was read from it.
    #[cfg(feature = "columnar")]
    pub fn columnar(&self) -> Option<&columnar::ColumnarInfo> {
        self.columnar.as_deref()
    }

    /// The digest the evidence carries when it is known without reading the trace's bytes:
    /// a columnar folder's ([`columnar::ColumnarInfo::digest`]).
    pub fn known_digest(&self) -> Option<String> {
        #[cfg(feature = "columnar")]
        if let Some(c) = &self.columnar {
            return Some(c.digest.clone());
        }
        None
    }

    fn open_kineto(path: &Path) -> Result<Trace, TraceError> {
        let db = Trace::temp_db("verdict-kineto-")?;
        let info = kineto::build(path, &db)?;
        let conn = open_read_only(&db)?;
        let mut schema = Schema::probe(&conn)?;
        schema.set_kineto(info);
        Ok(Trace::new(conn, path, schema, Some(db)))
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The SQLite file a table is read from, which a split scan's connections open: the
    /// file itself, the one a Kineto trace was read into, or for a columnar folder the file
    /// its large tables are loaded into; None for a table held in memory.
    fn split_file(&self, table: &str) -> Option<&Path> {
        #[cfg(feature = "columnar")]
        if self.columnar.is_some() {
            let in_spill = self.spill.get().is_some_and(|_| {
                self.conn
                    .query_row(
                        "SELECT 1 FROM spill.sqlite_master WHERE type = 'table' AND name = ?1",
                        [table],
                        |_| Ok(()),
                    )
                    .is_ok()
            });
            return if in_spill { self.spill.get().map(|p| p.as_ref()) } else { None };
        }
        let _ = table;
        Some(self.db.as_deref().unwrap_or(&self.path))
    }

    /// The probed schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The connection, for analyses that read tables other than the kernel table. A
    /// columnar folder's large tables are in it once read ([`Trace::load_tables`]).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The sha256 of the file's bytes, in lowercase hex; for a columnar folder, its digest
    /// ([`Trace::known_digest`]).
    pub fn sha256(&self) -> Result<String, TraceError> {
        if let Some(d) = self.known_digest() {
            return Ok(d);
        }
        sha256_file(&self.path).map_err(TraceError::Io)
    }

    /// Completes the per-device inventory of a kernel scan with the GPU, process and NVTX
    /// tables.
    pub fn inventory(&self, kernels: &Kernels) -> Result<Inventory, TraceError> {
        let devices = kernels.inventory.clone();
        let gpus = self.listed_gpus()?;
        let processes = self.processes()?;
        let nvtx_events = if self.schema.has_table(names::NVTX_EVENTS) {
            Some(self.row_count(names::NVTX_EVENTS)?)
        } else {
            None
        };
        let kernel_range_ns = kernel_range(&devices);
        Ok(Inventory {
            devices,
            listed_gpus: gpus,
            processes,
            nvtx_events,
            kernel_range_ns,
            skipped_invalid: kernels.skipped_invalid,
            payload_schemas: self.schema.has_table(names::payload::SCHEMAS),
        })
    }

    /// The kernel table name, or the error naming it.
    pub fn kernel_table(&self) -> Result<&str, TraceError> {
        self.schema
            .kernel_table
            .as_deref()
            .ok_or_else(|| TraceError::MissingTable { table: names::KERNEL.into() })
    }

    fn listed_gpus(&self) -> Result<Option<Vec<ListedGpu>>, TraceError> {
        let table = names::TARGET_INFO_GPU;
        // Current exports name the GPU id `id`; 2020-era ones `deviceId`. A table with neither
        // lists no GPU: reported as absent (coverage notes it), never as an error that would
        // stop the kernels from being read.
        let Some(id_col) = [names::gpu::ID, names::gpu::DEVICE_ID]
            .into_iter()
            .find(|c| self.schema.has_column(table, c))
        else {
            return Ok(None);
        };
        let name_col =
            if self.schema.has_column(table, names::gpu::NAME) { "name" } else { "NULL" };
        // A row without an id lists no GPU: read as absent, not a reason to refuse the trace.
        let sql = format!(
            "SELECT {id}, {name_col} FROM {table} WHERE {id} IS NOT NULL ORDER BY {id}",
            id = quote_ident(id_col),
            table = quote_ident(table)
        );
        let mut stmt = self.conn.prepare(&sql).map_err(TraceError::from_sqlite)?;
        let bad = |column: &str, e: rusqlite::Error| TraceError::BadValue {
            table: table.into(),
            column: column.into(),
            detail: e.to_string(),
        };
        let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(TraceError::from_sqlite)? {
            out.push(ListedGpu {
                id: r.get(0).map_err(|e| bad(id_col, e))?,
                name: r.get(1).map_err(|e| bad(names::gpu::NAME, e))?,
            });
        }
        out.dedup_by_key(|g| g.id);
        Ok(Some(out))
    }

    /// The host the capture ran on: `TARGET_INFO_SYSTEM_ENV`'s `Hostname` (nsys 2020.3 and
    /// later), None where the table or the row is absent. `EXPORT_HOST` is not used: it names
    /// the machine that exported, which may be another.
    pub fn host_name(&self) -> Result<Option<String>, TraceError> {
        let table = names::SYSTEM_ENV;
        if !self.schema.has_column(table, "name") || !self.schema.has_column(table, "value") {
            return Ok(None);
        }
        let sql = format!(
            "SELECT value FROM {} WHERE name = 'Hostname' AND value IS NOT NULL ORDER BY rowid LIMIT 1",
            quote_ident(table)
        );
        let mut stmt = self.conn.prepare(&sql).map_err(TraceError::from_sqlite)?;
        let mut rows = stmt.query([]).map_err(TraceError::from_sqlite)?;
        match rows.next().map_err(TraceError::from_sqlite)? {
            Some(r) => {
                let v: rusqlite::types::Value = r.get(0).map_err(TraceError::from_sqlite)?;
                Ok(match v {
                    rusqlite::types::Value::Text(s) if !s.trim().is_empty() => {
                        Some(s.trim().to_string())
                    }
                    _ => None,
                })
            }
            None => Ok(None),
        }
    }

    fn processes(&self) -> Result<Option<i64>, TraceError> {
        if !self.schema.has_table(names::PROCESSES) {
            return Ok(None);
        }
        let n = self
            .conn
            .query_row(&format!("SELECT count(*) FROM {}", names::PROCESSES), [], |r| r.get(0))
            .map_err(TraceError::from_sqlite)?;
        Ok(Some(n))
    }
}

/// What the kernel table holds, per device.
#[derive(Debug, Clone, Serialize)]
pub struct Inventory {
    /// Devices with at least one kernel, by id.
    pub devices: Vec<DeviceInventory>,
    /// GPUs listed in `TARGET_INFO_GPU` (None when the table is absent).
    pub listed_gpus: Option<Vec<ListedGpu>>,
    /// Rows of `PROCESSES` (None when absent).
    pub processes: Option<i64>,
    /// Rows of `NVTX_EVENTS` (None when absent).
    pub nvtx_events: Option<i64>,
    /// First kernel start and last kernel end over all devices.
    pub kernel_range_ns: Option<[i64; 2]>,
    /// Kernel rows dropped for uncollected (0/0) or backwards timestamps.
    pub skipped_invalid: u64,
    /// Whether an nsys export registers NVTX payload schemas (`NVTX_PAYLOAD_SCHEMAS`): NCCL's
    /// payloads name each call's communicator when their values were exported too.
    #[serde(skip)]
    pub payload_schemas: bool,
}

impl Inventory {
    /// Ids of the devices with kernels.
    pub fn present_devices(&self) -> Vec<i64> {
        self.devices.iter().map(|d| d.device).collect()
    }

    /// GPUs listed in `TARGET_INFO_GPU` that ran no kernel.
    pub fn listed_without_kernels(&self) -> Vec<i64> {
        let present = self.present_devices();
        self.listed_gpus.iter().flatten().map(|g| g.id).filter(|id| !present.contains(id)).collect()
    }
}

/// One device's kernels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DeviceInventory {
    /// nsys `deviceId`.
    pub device: i64,
    /// Kernel rows.
    pub kernels: i64,
    /// First kernel start (ns).
    pub first_start_ns: i64,
    /// Last kernel end (ns).
    pub last_end_ns: i64,
    /// Kernel rows per stream id.
    pub streams: BTreeMap<i64, i64>,
    /// Process ids (decoded from `globalPid`) that launched kernels on it.
    pub pids: Vec<i64>,
}

impl DeviceInventory {
    /// Counts one kernel row into the inventory of its device; returns that device's entry.
    pub(crate) fn observe(
        map: &mut BTreeMap<i64, DeviceInventory>,
        device: i64,
        stream: i64,
        start: i64,
        end: i64,
    ) -> &mut DeviceInventory {
        let d = map.entry(device).or_insert_with(|| DeviceInventory::new(device, start, end));
        d.count(stream, start, end);
        d
    }

    /// A device with no kernel counted yet, its range starting at the first one's.
    pub(crate) fn new(device: i64, start: i64, end: i64) -> DeviceInventory {
        DeviceInventory {
            device,
            kernels: 0,
            first_start_ns: start,
            last_end_ns: end,
            streams: BTreeMap::new(),
            pids: Vec::new(),
        }
    }

    /// Counts one kernel row of this device.
    pub(crate) fn count(&mut self, stream: i64, start: i64, end: i64) {
        self.kernels += 1;
        self.first_start_ns = self.first_start_ns.min(start);
        self.last_end_ns = self.last_end_ns.max(end);
        *self.streams.entry(stream).or_default() += 1;
    }
}

/// A GPU row of `TARGET_INFO_GPU`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ListedGpu {
    /// `id` (= activity `deviceId`).
    pub id: i64,
    /// Marketing name.
    pub name: Option<String>,
}

/// Whether a kernel is NCCL: its name contains `nccl`, in any case. The one rule for the
/// scans, the analyses and the charts.
pub fn is_nccl_name(name: &str) -> bool {
    name.to_ascii_lowercase().contains("nccl")
}

/// First kernel start and last kernel end over the given devices.
pub fn kernel_range(devices: &[DeviceInventory]) -> Option<[i64; 2]> {
    Some([
        devices.iter().map(|d| d.first_start_ns).min()?,
        devices.iter().map(|d| d.last_end_ns).max()?,
    ])
}

/// Whether a regular, non-empty file starts as a Kineto trace (gzip, or a JSON object) rather
/// than SQLite; a missing, empty or other file is left to [`check_file`] to name.
fn is_kineto(path: &Path) -> Result<bool, TraceError> {
    let Ok(meta) = std::fs::metadata(path) else { return Ok(false) };
    if !meta.is_file() || meta.len() == 0 {
        return Ok(false);
    }
    let mut head = [0u8; 64];
    let n = read_up_to(&mut open::open(path)?, &mut head)?;
    Ok(!head[..n].starts_with(b"SQLite") && kineto::looks_like_kineto(&head[..n]))
}

/// Whether a path is a folder this build reads as a trace: an extract or an nsys
/// `parquetdir` export.
pub fn is_trace_dir(path: &Path) -> bool {
    #[cfg(feature = "columnar")]
    return columnar::is_columnar_dir(path);
    #[cfg(not(feature = "columnar"))]
    {
        let _ = path;
        false
    }
}

/// Checks that the path is a non-empty, complete SQLite file before SQLite sees it.
fn check_file(path: &Path) -> Result<(), TraceError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(TraceError::NotFound(path.into()));
        }
        Err(e) => return Err(TraceError::Io(e)),
    };
    if !meta.is_file() {
        return Err(TraceError::NotAFile(path.into()));
    }
    if meta.len() == 0 {
        return Err(TraceError::Empty(path.into()));
    }
    let mut header = [0u8; 100];
    let mut f = open::open(path)?;
    let n = read_up_to(&mut f, &mut header)?;
    if n < 16 || &header[..16] != SQLITE_MAGIC {
        return Err(TraceError::NotSqlite(path.into()));
    }
    if n < 100 {
        return Err(TraceError::Truncated { path: path.into(), expected: 100, actual: meta.len() });
    }
    // Bytes 16-17: page size (1 means 65536); 28-31: pages, valid when 24-27 == 92-95.
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        s => u64::from(s),
    };
    let pages = u64::from(u32::from_be_bytes([header[28], header[29], header[30], header[31]]));
    if header[24..28] == header[92..96] && pages > 0 {
        let expected = pages * page_size;
        if meta.len() < expected {
            return Err(TraceError::Truncated { path: path.into(), expected, actual: meta.len() });
        }
    }
    Ok(())
}

/// Refuses a trace whose committed state is not the file alone. SQLite readers apply a
/// non-empty `TRACE-wal` and roll back a hot `TRACE-journal` (one that exists, is not empty and
/// whose header is not zeroed: SQLite's `hasHotJournal` rule) before they read; opened
/// immutable, the file would be read without them, in a state no other reader sees. A journal
/// that belongs to a write under way is refused too (without locks it cannot be told from an
/// interrupted one), and so is a journal whose super-journal is gone, which SQLite would
/// ignore: a refusal with a hint, never a different state.
fn check_side_files(path: &Path) -> Result<(), TraceError> {
    let beside = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    let wal = beside("-wal");
    // Through the gate: a side file linked out of the roots is refused, its size unsaid.
    open::within_roots(&wal)?;
    if let Ok(m) = std::fs::metadata(&wal)
        && m.is_file()
        && m.len() > 0
    {
        return Err(TraceError::Wal { path: path.into(), wal, bytes: m.len() });
    }
    let journal = beside("-journal");
    open::within_roots(&journal)?;
    if let Ok(m) = std::fs::metadata(&journal)
        && m.is_file()
        && m.len() > 0
    {
        let mut first = [0u8; 1];
        read_up_to(&mut open::open(&journal)?, &mut first)?;
        // journal_mode=PERSIST zeroes the header of a finished journal and leaves the file.
        if first[0] != 0 {
            return Err(TraceError::HotJournal { path: path.into(), journal, bytes: m.len() });
        }
    }
    Ok(())
}

fn read_up_to(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The path as the path of a SQLite URI: every byte but unreserved ASCII and `/`
/// percent-encoded, which SQLite decodes back to the same bytes, so a name that is not UTF-8,
/// or holds `%`, `?` or `#`, opens the file it names.
fn uri_escape(path: &Path) -> String {
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    let mut out = String::with_capacity(bytes.len());
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The sha256 of a file's bytes, in lowercase hex.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut f = open::open(path)?;
    let mut hasher = Sha256::new();
    // A buffer no larger than the file: the small files of an extract are many.
    let len = f.metadata()?.len().clamp(1, 1 << 20);
    let mut buf = vec![0u8; len as usize];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Bytes in lowercase hex, as digests are shown.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The distinct devices of a device column sorted ascending.
fn devices_of(sorted: &[i64]) -> Vec<i64> {
    let mut out: Vec<i64> = sorted.to_vec();
    out.dedup();
    out
}

/// The contiguous rows of one device in a device column sorted ascending.
fn device_range(sorted: &[i64], device: i64) -> std::ops::Range<usize> {
    sorted.partition_point(|&d| d < device)..sorted.partition_point(|&d| d <= device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timestamp_bound_is_what_its_message_says() {
        assert_eq!(MAX_TIMESTAMP_NS, 4_611_686_018_427_387_904);
        let e = check_timestamp("T", "start", MAX_TIMESTAMP_NS).unwrap_err();
        assert!(e.to_string().contains(&format!(
            "outside ±{} ns (2^62)",
            crate::units::thousands(MAX_TIMESTAMP_NS.into())
        )));
        assert!(check_timestamp("T", "start", -MAX_TIMESTAMP_NS).is_err());
        assert!(check_timestamp("T", "start", i64::MIN).is_err());
        // Inside the bound, the difference of any two timestamps fits an i64.
        let (lo, hi) = (-MAX_TIMESTAMP_NS + 1, MAX_TIMESTAMP_NS - 1);
        assert_eq!(check_timestamp("T", "start", lo).unwrap(), lo);
        assert_eq!(check_timestamp("T", "end", hi).unwrap(), hi);
        assert!(hi.checked_sub(lo).is_some() && lo.checked_sub(hi).is_some());
    }
}
