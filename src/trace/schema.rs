//! The schema probe: what tables and columns a trace has, and which export wrote it.
//!
//! Read once when a trace is opened, from `sqlite_master`, `PRAGMA table_info` and the export
//! metadata table. Analyses check their declared requirements against it before they run.

use std::collections::BTreeMap;

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;

use super::TraceError;
use super::names;

/// How NVTX text is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NvtxText {
    /// No `NVTX_EVENTS` table.
    Absent,
    /// Only a `text` column (older exports).
    TextOnly,
    /// `text` plus `textId` into `StringIds` (registered strings).
    TextAndTextId,
}

/// The clock the timestamps are on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TimeBase {
    /// Session-relative ns (nsys default): 0 is the start of the capture session.
    Session,
    /// UTC-epoch ns (`--ts-normalize=true`), shifted by `shift_ns`.
    Utc {
        /// `EXPORT_CONFIG_TIME_SHIFT`.
        shift_ns: Option<i64>,
    },
    /// No export metadata (2021-era files): session-relative by nsys's default, not recorded.
    Unrecorded,
    /// A PyTorch profiler (Kineto) trace: the host clock of the rank that wrote it (`ts`),
    /// on UTC by `baseTimeNanoseconds` when the trace records it (`UTC = base + ts`); without
    /// it, `ts` is UTC-epoch µs, as older Kineto versions wrote it.
    Host {
        /// `baseTimeNanoseconds`.
        base_utc_ns: Option<i64>,
    },
}

impl TimeBase {
    /// A one-line description for humans.
    pub fn describe(&self) -> String {
        match self {
            TimeBase::Session => "session clock (ns since capture start)".into(),
            TimeBase::Utc { .. } => "UTC epoch ns (--ts-normalize)".into(),
            TimeBase::Unrecorded => {
                "not recorded (pre-2022 export; nsys default is the session clock)".into()
            }
            TimeBase::Host { base_utc_ns: Some(_) } => {
                "the rank's host clock (Kineto `ts`), on UTC by `baseTimeNanoseconds`".into()
            }
            TimeBase::Host { base_utc_ns: None } => {
                "the rank's host clock (Kineto `ts`); no `baseTimeNanoseconds`, so not on UTC"
                    .into()
            }
        }
    }
}

/// Everything the probe found.
#[derive(Debug, Clone, Serialize)]
pub struct Schema {
    /// Every table with its columns, in declaration order.
    pub tables: BTreeMap<String, Vec<String>>,
    /// The metadata table found, if any.
    pub metadata_table: Option<String>,
    /// `EXPORT_SCHEMA_VERSION`.
    pub schema_version: Option<String>,
    /// `EXPORT_PRODUCT_VERSION`.
    pub nsys_version: Option<String>,
    /// The kernel table actually used (canonical or highest `_V<n>`).
    pub kernel_table: Option<String>,
    /// Whether `StringIds` exists.
    pub has_string_ids: bool,
    /// How NVTX text is stored.
    pub nvtx_text: NvtxText,
    /// The clock of the timestamps.
    pub time_base: TimeBase,
    /// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`, when recorded: the capture start on the
    /// UTC-epoch clock.
    pub session_start_utc_ns: Option<i64>,
    /// Where the trace comes from, as its metadata says.
    pub origin: Origin,
    /// Metadata rows read as absent because a column that names them holds NULL, where nsys
    /// writes a value: (table, column, rows). Disclosed by `inspect` as a note.
    pub null_rows: Vec<(String, String, u64)>,
    /// `EXPORT_PARAM_INCLUDE_BLOBS` as the export recorded it (`--include-blobs`): None when
    /// the export does not say (older nsys, other sources).
    pub blobs_exported: Option<bool>,
    /// The format the file was written in.
    #[serde(skip_serializing_if = "Source::is_nsys")]
    pub source: Source,
}

/// The format of a trace file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// An Nsight Systems SQLite export.
    #[default]
    Nsys,
    /// A PyTorch profiler (Kineto) Chrome-trace JSON, read into the same tables.
    Kineto(Box<super::kineto::KinetoInfo>),
}

impl Source {
    /// Whether the file is an Nsight Systems export.
    pub fn is_nsys(&self) -> bool {
        *self == Source::Nsys
    }

    /// What a Kineto trace says about itself, if the file is one.
    pub fn kineto(&self) -> Option<&super::kineto::KinetoInfo> {
        match self {
            Source::Kineto(k) => Some(k),
            Source::Nsys => None,
        }
    }

    /// The format's name in evidence, where it is not the default nsys export:
    /// `pytorch-profiler`.
    pub fn format(&self) -> Option<&'static str> {
        match self {
            Source::Kineto(_) => Some("pytorch-profiler"),
            Source::Nsys => None,
        }
    }

    /// What the source calls its list of the node's GPUs.
    pub fn gpu_list(&self) -> &'static str {
        match self {
            Source::Kineto(_) => "the trace's deviceProperties",
            Source::Nsys => "TARGET_INFO_GPU",
        }
    }

    /// What the source calls the CPU-side ranges the `nvtx` analysis reads.
    pub fn ranges(&self) -> &'static str {
        match self {
            Source::Kineto(_) => "annotation ranges",
            Source::Nsys => "NVTX ranges",
        }
    }
}

/// Where a trace comes from, as its export metadata says.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, JsonSchema)]
pub struct Origin {
    /// `DERIVED_BY`: set by tools that make synthetic or derived traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derived_by: Option<String>,
    /// `DERIVED_FROM`: the capture a derived trace was cut from (its file name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<String>,
    /// `DERIVED_WINDOW_NS`: the window of that capture the derived trace keeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derived_window_ns: Option<[i64; 2]>,
    /// `EXPORT_HOST`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// `EXPORT_TIME_UTC`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exported_utc: Option<String>,
    /// `EXPORT_PARAM_INPUT_FILE`: the report file name, never its path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_file: Option<String>,
}

/// A table an analysis needs, by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableRole {
    /// The kernel activity table (canonical or versioned).
    Kernel,
    /// `StringIds`.
    StringIds,
    /// `CUPTI_ACTIVITY_KIND_MEMCPY`.
    Memcpy,
    /// `CUPTI_ACTIVITY_KIND_MEMSET`.
    Memset,
    /// `NVTX_EVENTS`.
    NvtxEvents,
    /// `CUPTI_ACTIVITY_KIND_RUNTIME`.
    Runtime,
}

/// A requirement an analysis declares: a table and the columns it reads.
#[derive(Debug, Clone, Copy)]
pub struct Requirement {
    /// Which table.
    pub table: TableRole,
    /// Which columns of it.
    pub columns: &'static [&'static str],
}

impl Schema {
    /// Probes the schema of an open connection.
    pub fn probe(conn: &Connection) -> Result<Schema, TraceError> {
        let mut tables = BTreeMap::new();
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .map_err(TraceError::from_sqlite)?;
        let names: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .map_err(TraceError::from_sqlite)?
            .collect::<Result<_, _>>()
            .map_err(TraceError::from_sqlite)?;
        for name in names {
            let mut info = conn
                .prepare(&format!("PRAGMA table_info({})", quote_ident(&name)))
                .map_err(TraceError::from_sqlite)?;
            let cols: Vec<String> = info
                .query_map([], |r| r.get::<_, String>(1))
                .map_err(TraceError::from_sqlite)?
                .collect::<Result<_, _>>()
                .map_err(TraceError::from_sqlite)?;
            tables.insert(name, cols);
        }

        let metadata_table = [names::META_DATA_EXPORT, names::EXPORT_META_DATA]
            .into_iter()
            .find(|t| tables.contains_key(*t))
            .map(str::to_string);
        let mut meta = BTreeMap::new();
        if let Some(t) = &metadata_table {
            let mut stmt = conn
                // A row without a name names nothing: it is read as absent, never as a
                // reason to refuse a readable trace (issue 28).
                .prepare(&format!(
                    "SELECT name, value FROM {} WHERE name IS NOT NULL",
                    quote_ident(t)
                ))
                .map_err(TraceError::from_sqlite)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)))
                .map_err(TraceError::from_sqlite)?;
            for row in rows {
                let (k, v) = row.map_err(TraceError::from_sqlite)?;
                if let Some(v) = v {
                    meta.insert(k, v);
                }
            }
        }

        let kernel_table = resolve_versioned(&tables, names::KERNEL);
        let nvtx_text = match tables.get(names::NVTX_EVENTS) {
            None => NvtxText::Absent,
            Some(cols) if cols.iter().any(|c| c == "textId") => NvtxText::TextAndTextId,
            Some(_) => NvtxText::TextOnly,
        };
        let time_base = match (&metadata_table, meta.get(names::meta::TIME_NORMALIZE)) {
            (None, _) => TimeBase::Unrecorded,
            (Some(_), Some(v)) if v == "true" => TimeBase::Utc {
                shift_ns: meta.get(names::meta::TIME_SHIFT).and_then(|s| s.parse().ok()),
            },
            (Some(_), _) => TimeBase::Session,
        };
        let session_start_utc_ns = if tables
            .get(names::SESSION_START)
            .is_some_and(|c| c.iter().any(|c| c == "utcEpochNs"))
        {
            conn.query_row(
                &format!("SELECT MIN(utcEpochNs) FROM {}", quote_ident(names::SESSION_START)),
                [],
                |r| r.get::<_, Option<i64>>(0),
            )
            .map_err(TraceError::from_sqlite)?
        } else {
            None
        };
        let keep = |k: &str| meta.get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let origin = Origin {
            derived_by: keep(names::meta::DERIVED_BY),
            derived_from: keep(names::meta::DERIVED_FROM)
                .map(|f| f.rsplit(['/', '\\']).next().unwrap_or(&f).to_string()),
            derived_window_ns: keep(names::meta::DERIVED_WINDOW_NS).and_then(|w| {
                let (a, b) = w.split_once('-')?;
                let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                (b >= a).then_some([a, b])
            }),
            host: keep(names::meta::HOST),
            exported_utc: keep(names::meta::TIME_UTC),
            input_file: keep(names::meta::INPUT_FILE).map(|f| {
                // A file name only: some exports write a path here.
                f.rsplit(['/', '\\']).next().unwrap_or(&f).to_string()
            }),
        };
        // NULLs where nsys writes a value: such rows are read as absent (issue 28), counted
        // here so that they are disclosed.
        let mut null_rows = Vec::new();
        let gpu_id = ["id", "deviceId"].into_iter().find(|c| {
            tables.get(names::TARGET_INFO_GPU).is_some_and(|cols| cols.iter().any(|x| x == c))
        });
        let checks = metadata_table
            .iter()
            .map(|t| (t.clone(), "name"))
            .chain(gpu_id.map(|c| (names::TARGET_INFO_GPU.to_string(), c)))
            .chain(
                tables
                    .get(names::STRING_IDS)
                    .filter(|cols| cols.iter().any(|x| x == "value"))
                    .map(|_| (names::STRING_IDS.to_string(), "value")),
            );
        for (table, column) in checks {
            let n: i64 = conn
                .query_row(
                    &format!(
                        "SELECT count(*) FROM {} WHERE {} IS NULL",
                        quote_ident(&table),
                        quote_ident(column)
                    ),
                    [],
                    |r| r.get(0),
                )
                .map_err(TraceError::from_sqlite)?;
            if n > 0 {
                null_rows.push((table, column.to_string(), n as u64));
            }
        }
        let blobs_exported = match meta.get(names::meta::INCLUDE_BLOBS).map(|v| v.trim()) {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        };
        Ok(Schema {
            source: Source::Nsys,
            null_rows,
            blobs_exported,
            origin,
            session_start_utc_ns,
            has_string_ids: tables.contains_key(names::STRING_IDS),
            schema_version: meta.get(names::meta::SCHEMA_VERSION).cloned(),
            nsys_version: meta.get(names::meta::PRODUCT_VERSION).cloned(),
            tables,
            metadata_table,
            kernel_table,
            nvtx_text,
            time_base,
        })
    }

    /// Marks the tables as read from a PyTorch profiler trace: its host clock, its schema
    /// version and what it says about itself.
    pub(crate) fn set_kineto(&mut self, info: super::kineto::KinetoInfo) {
        self.time_base = TimeBase::Host { base_utc_ns: info.base_time_ns };
        self.schema_version = info.schema_version.as_ref().map(|v| format!("kineto {v}"));
        self.source = Source::Kineto(Box::new(info));
    }

    /// Whether a table exists.
    pub fn has_table(&self, name: &str) -> bool {
        self.tables.contains_key(name)
    }

    /// Whether a table has a column.
    pub fn has_column(&self, table: &str, column: &str) -> bool {
        self.tables.get(table).is_some_and(|cols| cols.iter().any(|c| c == column))
    }

    /// Checks a requirement, naming the missing table or column.
    pub fn require(&self, req: &Requirement) -> Result<(), TraceError> {
        let present = |t: &'static str| {
            if self.has_table(t) {
                Ok(t)
            } else {
                Err(TraceError::MissingTable { table: t.into() })
            }
        };
        let table = match req.table {
            TableRole::Kernel => match &self.kernel_table {
                Some(t) => t.as_str(),
                None => return Err(TraceError::MissingTable { table: names::KERNEL.into() }),
            },
            TableRole::StringIds => {
                if !self.has_string_ids {
                    return Err(TraceError::MissingTable { table: names::STRING_IDS.into() });
                }
                names::STRING_IDS
            }
            TableRole::Memcpy | TableRole::Memset => {
                let name =
                    if req.table == TableRole::Memcpy { names::MEMCPY } else { names::MEMSET };
                if !self.has_table(name) {
                    return Err(TraceError::MissingTable { table: name.into() });
                }
                name
            }
            TableRole::NvtxEvents => present(names::NVTX_EVENTS)?,
            TableRole::Runtime => present(names::RUNTIME)?,
        };
        for col in req.columns {
            if !self.has_column(table, col) {
                return Err(TraceError::MissingColumn {
                    table: table.into(),
                    column: (*col).into(),
                });
            }
        }
        Ok(())
    }
}

/// Finds `base`, or else the highest `base_V<n>`.
fn resolve_versioned(tables: &BTreeMap<String, Vec<String>>, base: &str) -> Option<String> {
    if tables.contains_key(base) {
        return Some(base.to_string());
    }
    let prefix = format!("{base}_V");
    tables
        .keys()
        .filter_map(|t| t.strip_prefix(&prefix).and_then(|n| n.parse::<u32>().ok()).map(|n| (n, t)))
        .max_by_key(|(n, _)| *n)
        .map(|(_, t)| t.clone())
}

/// Quotes an SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versioned_tables_resolve_to_the_highest() {
        let mut t = BTreeMap::new();
        for name in ["CUPTI_ACTIVITY_KIND_KERNEL_V3", "CUPTI_ACTIVITY_KIND_KERNEL_V10", "X"] {
            t.insert(name.to_string(), vec![]);
        }
        assert_eq!(
            resolve_versioned(&t, names::KERNEL).as_deref(),
            Some("CUPTI_ACTIVITY_KIND_KERNEL_V10")
        );
        t.insert(names::KERNEL.to_string(), vec![]);
        assert_eq!(resolve_versioned(&t, names::KERNEL).as_deref(), Some(names::KERNEL));
    }
}
