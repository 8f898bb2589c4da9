//! The engines a cross-rank reduce runs on: verdict's own loop (the reference) or a Dask
//! cluster.
//!
//! Only the reduce moves: each rank's trace is still scanned by verdict, which keeps, per rank,
//! the rows the reduce needs (for `nccl-skew`, the compared NCCL kernels with the key that ties
//! each to its group: [`Keyed`]). The engine then matches instances across ranks and computes
//! every aggregate, in dataframe operations on Dask (`src/engine/dask_reduce.py`), and hands
//! back four small tables ([`Reduced`]) that the analysis turns into its result. The
//! definitions are written once more in SQL beside each analysis (`src/analysis/nccl_skew.sql`,
//! `src/analysis/overlap.sql`): a specification the tests run on SQLite, as a
//! [`Supplied`] reduce, against the Rust loop. The tests require the same evidence from every
//! engine.

#[cfg(feature = "columnar")]
mod dask;
pub mod process;

#[cfg(feature = "columnar")]
use std::sync::Arc;

#[cfg(feature = "columnar")]
use arrow_array::{Array, BooleanArray, Int64Array, RecordBatch, StringArray};
#[cfg(feature = "columnar")]
use arrow_schema::{DataType, Field, Schema};

/// Where a cross-rank reduce runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Engine {
    /// verdict's own loop, in process: the reference.
    #[default]
    Rust,
    /// A Dask cluster: its scheduler's address, or None to take `DASK_SCHEDULER_ADDRESS`.
    Dask(Option<String>),
    /// A reduce the caller supplies as functions; never read from text. The tests run the SQL
    /// specifications beside the analyses through it.
    #[doc(hidden)]
    Supplied(Supplied),
}

/// The reduces of [`Engine::Supplied`], in process.
#[derive(Debug, Clone, Copy)]
pub struct Supplied {
    /// The `nccl-skew` reduce, as [`nccl_skew`] runs it.
    pub nccl_skew: fn(&Keyed, &ReduceParams) -> Result<Reduced, EngineError>,
    /// The `overlap` aggregates of a number of ranks, as [`overlap`] runs them.
    pub overlap: fn(&Intervals, i64) -> Result<Vec<Unions>, EngineError>,
}

impl PartialEq for Supplied {
    fn eq(&self, other: &Supplied) -> bool {
        std::ptr::fn_addr_eq(self.nccl_skew, other.nccl_skew)
            && std::ptr::fn_addr_eq(self.overlap, other.overlap)
    }
}

impl Eq for Supplied {}

/// The environment variable that names a Dask scheduler (Dask's own).
pub const DASK_SCHEDULER_ENV: &str = "DASK_SCHEDULER_ADDRESS";

impl Engine {
    /// Reads `rust`, `dask` or `dask=ADDRESS`.
    pub fn parse(text: &str) -> Result<Engine, String> {
        match text.trim() {
            "rust" => Ok(Engine::Rust),
            "dask" => Ok(Engine::Dask(None)),
            t => match t.strip_prefix("dask=") {
                Some(a) if !a.trim().is_empty() => Ok(Engine::Dask(Some(a.trim().to_string()))),
                _ => Err(format!(
                    "`{t}` is not an engine: rust, dask or dask=ADDRESS (tcp://host:port)"
                )),
            },
        }
    }

    /// Its text, as [`Engine::parse`] reads it (a supplied reduce has none that parses).
    pub fn as_text(&self) -> String {
        match self {
            Engine::Rust => "rust".into(),
            Engine::Dask(None) => "dask".into(),
            Engine::Dask(Some(a)) => format!("dask={a}"),
            Engine::Supplied(_) => "supplied".into(),
        }
    }
}

/// An engine failed or is not available.
#[derive(Debug, thiserror::Error)]
#[error("{reason}")]
pub struct EngineError {
    /// What went wrong.
    pub reason: String,
    /// What to do about it.
    pub hint: String,
}

impl EngineError {
    fn new(reason: impl Into<String>, hint: impl Into<String>) -> EngineError {
        EngineError { reason: reason.into(), hint: hint.into() }
    }
}

/// The rows of the `nccl-skew` reduce, one per compared NCCL kernel, as columns (the table
/// `keyed` of `analysis/nccl_skew.sql`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keyed {
    /// The rank's index among the compared ranks.
    pub rank: Vec<i64>,
    /// The group: a collective, a communicator or a process group.
    pub grp: Vec<String>,
    /// First part of the key within the group.
    pub a: Vec<i64>,
    /// Second part of the key.
    pub b: Vec<i64>,
    /// The kernel's row.
    pub row: Vec<i64>,
    /// Start, ns.
    pub start: Vec<i64>,
    /// End, ns.
    pub end: Vec<i64>,
    /// Short name id.
    pub name: Vec<i64>,
    /// Selected by the window.
    pub sel: Vec<bool>,
    /// Held whole by the window.
    pub held: Vec<bool>,
}

/// The constants of the reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReduceParams {
    /// Ranks compared.
    pub ranks: i64,
    /// The ordinal rule: every compared rank is a member of every group.
    pub ordinal: bool,
    /// A tile of a split: its window `[start, end)` and the start it counts from, if any.
    pub tile: Option<(i64, i64, Option<i64>)>,
}

/// Where a matched instance lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// Kept.
    Inside,
    /// Cut by the window.
    Cut,
    /// Its kernels never run at one moment.
    Overlap,
}

/// One instance the reduce placed (outside ones are dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReducedInstance {
    /// Its group.
    pub grp: String,
    /// Its key.
    pub a: i64,
    /// Its key.
    pub b: i64,
    /// Members.
    pub n: i64,
    /// Earliest start.
    pub smin: i64,
    /// Latest start.
    pub smax: i64,
    /// Earliest end.
    pub emin: i64,
    /// Latest end.
    pub emax: i64,
    /// The row of its lowest rank.
    pub first_row: i64,
    /// Where it lies.
    pub place: Placed,
    /// Its minimum duration.
    pub transfer: i64,
    /// The lowest rank with the latest start.
    pub last_rank: i64,
    /// The lowest rank with the earliest start.
    pub first_rank: i64,
    /// Its kernels' names differ.
    pub mismatch: bool,
}

/// One member of a kept instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReducedMember {
    /// Its instance's group.
    pub grp: String,
    /// Its instance's key.
    pub a: i64,
    /// Its instance's key.
    pub b: i64,
    /// The rank.
    pub rank: i64,
    /// The kernel's row.
    pub row: i64,
    /// Its wait: duration minus the instance's minimum.
    pub wait: i64,
    /// Start minus the instance's earliest start.
    pub start_offset: i64,
    /// End minus the instance's earliest end.
    pub end_offset: i64,
}

/// Per rank sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReducedRank {
    /// Selected kernels no instance holds.
    pub unmatched: i64,
    /// Σ wait.
    pub wait: i64,
    /// Kept instances it is a member of.
    pub matched: i64,
    /// Kept instances it started last in.
    pub last: i64,
    /// Kept instances it started first in.
    pub first: i64,
}

/// What an engine hands back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reduced {
    /// Placed instances.
    pub instances: Vec<ReducedInstance>,
    /// Members of kept instances.
    pub members: Vec<ReducedMember>,
    /// Per rank, by index.
    pub ranks: Vec<ReducedRank>,
    /// Σ duration of kept members.
    pub nccl: i64,
    /// Σ wait of kept members.
    pub wait: i64,
    /// Kept instances whose names differ.
    pub mismatches: i64,
}

/// Runs the `nccl-skew` reduce on `engine` (never [`Engine::Rust`], whose loop is the
/// analysis's own).
pub fn nccl_skew(
    engine: &Engine,
    keyed: &Keyed,
    params: &ReduceParams,
) -> Result<Reduced, EngineError> {
    match engine {
        Engine::Rust => Err(EngineError::new(
            "the Rust reduce runs inside the analysis",
            "this is a defect: please report it",
        )),
        Engine::Supplied(s) => (s.nccl_skew)(keyed, params),
        #[cfg(feature = "columnar")]
        Engine::Dask(address) => {
            let parts: Vec<RecordBatch> =
                (0..params.ranks).map(|r| batch(&rank_rows(keyed, r))).collect::<Result<_, _>>()?;
            let names = ["instances", "members", "ranks", "totals"];
            let out = dask::run(address.as_deref(), "nccl-skew", parts, params, &names)?;
            read_reduced(&out, params.ranks)
        }
        #[cfg(not(feature = "columnar"))]
        Engine::Dask(_) => Err(no_columnar()),
    }
}

/// The rows of the `overlap` aggregates, one per kernel a rank keeps in the window (the table
/// `intervals` of `analysis/overlap.sql`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Intervals {
    /// The device's index among the compared devices.
    pub rank: Vec<i64>,
    /// Start, clipped to the window.
    pub start: Vec<i64>,
    /// End, clipped to the window.
    pub end: Vec<i64>,
    /// An NCCL kernel.
    pub nccl: Vec<bool>,
    /// Counted in this window.
    pub counted: Vec<bool>,
}

/// One rank's `overlap` aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unions {
    /// |C|.
    pub compute_busy: i64,
    /// |N|.
    pub nccl_busy: i64,
    /// |C ∪ N|.
    pub all_busy: i64,
    /// Compute kernels counted.
    pub compute_kernels: i64,
    /// NCCL kernels counted.
    pub nccl_kernels: i64,
    /// Earliest kept start (0 when none).
    pub lo: i64,
    /// Latest kept end (0 when none).
    pub hi: i64,
}

/// Runs the `overlap` aggregates of `ranks` ranks on `engine`.
pub fn overlap(
    engine: &Engine,
    intervals: &Intervals,
    ranks: i64,
) -> Result<Vec<Unions>, EngineError> {
    match engine {
        Engine::Rust => Err(EngineError::new(
            "the Rust aggregates run inside the analysis",
            "this is a defect: please report it",
        )),
        Engine::Supplied(s) => (s.overlap)(intervals, ranks),
        #[cfg(feature = "columnar")]
        Engine::Dask(address) => {
            let params = ReduceParams { ranks, ordinal: false, tile: None };
            let parts: Vec<RecordBatch> = (0..ranks)
                .map(|r| interval_batch(&interval_rows(intervals, r)))
                .collect::<Result<_, _>>()?;
            let out = dask::run(address.as_deref(), "overlap", parts, &params, &["ranks"])?;
            read_unions(&out, ranks)
        }
        #[cfg(not(feature = "columnar"))]
        Engine::Dask(_) => Err(no_columnar()),
    }
}

#[cfg(not(feature = "columnar"))]
fn no_columnar() -> EngineError {
    EngineError::new(
        "this verdict was built without the `columnar` feature (Parquet), which the Dask engine reads and writes",
        "build it with the default features, or use `--engine rust` (the same evidence)",
    )
}

/// The table `intervals` as one Arrow batch.
#[cfg(feature = "columnar")]
fn interval_batch(t: &Intervals) -> Result<RecordBatch, EngineError> {
    let int = |n: &str| Field::new(n, DataType::Int64, false);
    let schema = Schema::new(vec![
        int("rank"),
        int("start"),
        int("end"),
        Field::new("nccl", DataType::Boolean, false),
        Field::new("counted", DataType::Boolean, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(t.rank.clone())),
            Arc::new(Int64Array::from(t.start.clone())),
            Arc::new(Int64Array::from(t.end.clone())),
            Arc::new(BooleanArray::from(t.nccl.clone())),
            Arc::new(BooleanArray::from(t.counted.clone())),
        ],
    )
    .map_err(defect)
}

/// The rows of `intervals` of one rank.
#[cfg(feature = "columnar")]
fn interval_rows(t: &Intervals, rank: i64) -> Intervals {
    let mut out = Intervals::default();
    for i in (0..t.rank.len()).filter(|&i| t.rank[i] == rank) {
        out.rank.push(t.rank[i]);
        out.start.push(t.start[i]);
        out.end.push(t.end[i]);
        out.nccl.push(t.nccl[i]);
        out.counted.push(t.counted[i]);
    }
    out
}

#[cfg(feature = "columnar")]
fn defect(e: impl std::fmt::Display) -> EngineError {
    EngineError::new(format!("the reduce's input: {e}"), "this is a defect: please report it")
}

#[cfg(feature = "columnar")]
fn read_unions(out: &Outputs, ranks: i64) -> Result<Vec<Unions>, EngineError> {
    let mut r = vec![Unions::default(); usize::try_from(ranks).unwrap_or(0)];
    let batches = out.get("ranks").ok_or_else(|| {
        EngineError::new(
            "the engine returned no table `ranks`",
            "the engine's definition and verdict disagree: run both from one release",
        )
    })?;
    let mut seen = 0;
    for batch in batches {
        let t = Columns { table: "ranks", batch };
        for i in 0..batch.num_rows() {
            let rank = t.int("rank", i)?;
            let slot = usize::try_from(rank)
                .ok()
                .and_then(|x| r.get_mut(x))
                .ok_or_else(|| t.wrong("rank", "a compared rank"))?;
            *slot = Unions {
                compute_busy: t.int("compute_busy", i)?,
                nccl_busy: t.int("nccl_busy", i)?,
                all_busy: t.int("all_busy", i)?,
                compute_kernels: t.int("compute_kernels", i)?,
                nccl_kernels: t.int("nccl_kernels", i)?,
                lo: t.int("lo", i)?,
                hi: t.int("hi", i)?,
            };
            seen += 1;
        }
    }
    if seen != r.len() {
        return Err(EngineError::new(
            format!("the engine's table `ranks` has {seen} rows for {} ranks", r.len()),
            "the engine's definition and verdict disagree: run both from one release",
        ));
    }
    Ok(r)
}

/// The table `keyed` as one Arrow batch.
#[cfg(feature = "columnar")]
pub fn batch(k: &Keyed) -> Result<RecordBatch, EngineError> {
    let int = |n: &str| Field::new(n, DataType::Int64, false);
    let schema = Schema::new(vec![
        int("rank"),
        Field::new("grp", DataType::Utf8, false),
        int("a"),
        int("b"),
        int("row"),
        int("start"),
        int("end"),
        int("name"),
        Field::new("sel", DataType::Boolean, false),
        Field::new("held", DataType::Boolean, false),
    ]);
    let ints = |v: &[i64]| Arc::new(Int64Array::from(v.to_vec())) as Arc<dyn Array>;
    let bools = |v: &[bool]| Arc::new(BooleanArray::from(v.to_vec())) as Arc<dyn Array>;
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            ints(&k.rank),
            Arc::new(StringArray::from(k.grp.clone())),
            ints(&k.a),
            ints(&k.b),
            ints(&k.row),
            ints(&k.start),
            ints(&k.end),
            ints(&k.name),
            bools(&k.sel),
            bools(&k.held),
        ],
    )
    .map_err(defect)
}

/// The rows of `keyed` of one rank.
#[cfg(feature = "columnar")]
pub fn rank_rows(k: &Keyed, rank: i64) -> Keyed {
    let mut out = Keyed::default();
    for i in (0..k.rank.len()).filter(|&i| k.rank[i] == rank) {
        out.rank.push(k.rank[i]);
        out.grp.push(k.grp[i].clone());
        out.a.push(k.a[i]);
        out.b.push(k.b[i]);
        out.row.push(k.row[i]);
        out.start.push(k.start[i]);
        out.end.push(k.end[i]);
        out.name.push(k.name[i]);
        out.sel.push(k.sel[i]);
        out.held.push(k.held[i]);
    }
    out
}

/// A column of an engine's output table.
#[cfg(feature = "columnar")]
struct Columns<'a> {
    table: &'a str,
    batch: &'a RecordBatch,
}

#[cfg(feature = "columnar")]
impl Columns<'_> {
    fn column(&self, name: &str) -> Result<&Arc<dyn Array>, EngineError> {
        self.batch.column_by_name(name).ok_or_else(|| {
            EngineError::new(
                format!("the engine's table `{}` has no column `{name}`", self.table),
                "the engine's definition and verdict disagree: run both from one release",
            )
        })
    }

    fn wrong(&self, name: &str, want: &str) -> EngineError {
        EngineError::new(
            format!(
                "the engine's table `{}` column `{name}` is not {want} without nulls",
                self.table
            ),
            "the engine's definition and verdict disagree: run both from one release",
        )
    }

    fn int(&self, name: &str, i: usize) -> Result<i64, EngineError> {
        let c = self.column(name)?;
        let a = c.as_any().downcast_ref::<Int64Array>().ok_or_else(|| self.wrong(name, "Int64"))?;
        if a.is_null(i) {
            return Err(self.wrong(name, "Int64"));
        }
        Ok(a.value(i))
    }

    fn text(&self, name: &str, i: usize) -> Result<String, EngineError> {
        let c = self.column(name)?;
        let c = arrow_cast::cast(c, &DataType::Utf8).map_err(|_| self.wrong(name, "text"))?;
        let a = c.as_any().downcast_ref::<StringArray>().ok_or_else(|| self.wrong(name, "text"))?;
        if a.is_null(i) {
            return Err(self.wrong(name, "text"));
        }
        Ok(a.value(i).to_string())
    }

    fn flag(&self, name: &str, i: usize) -> Result<bool, EngineError> {
        let c = self.column(name)?;
        let a =
            c.as_any().downcast_ref::<BooleanArray>().ok_or_else(|| self.wrong(name, "Boolean"))?;
        if a.is_null(i) {
            return Err(self.wrong(name, "Boolean"));
        }
        Ok(a.value(i))
    }
}

/// The four output tables, by name, as batches.
#[cfg(feature = "columnar")]
pub type Outputs = std::collections::BTreeMap<String, Vec<RecordBatch>>;

/// Reads the engine's four tables.
#[cfg(feature = "columnar")]
fn read_reduced(out: &Outputs, ranks: i64) -> Result<Reduced, EngineError> {
    let tables = |name: &'static str| {
        out.get(name).map(|b| b.iter().map(move |batch| Columns { table: name, batch })).ok_or_else(
            || {
                EngineError::new(
                    format!("the engine returned no table `{name}`"),
                    "the engine's definition and verdict disagree: run both from one release",
                )
            },
        )
    };
    let mut r = Reduced {
        ranks: vec![ReducedRank::default(); usize::try_from(ranks).unwrap_or(0)],
        ..Reduced::default()
    };
    for t in tables("instances")? {
        for i in 0..t.batch.num_rows() {
            let place = match t.text("place", i)?.as_str() {
                "inside" => Placed::Inside,
                "cut" => Placed::Cut,
                "overlap" => Placed::Overlap,
                _ => return Err(t.wrong("place", "inside, cut or overlap")),
            };
            r.instances.push(ReducedInstance {
                grp: t.text("grp", i)?,
                a: t.int("a", i)?,
                b: t.int("b", i)?,
                n: t.int("n", i)?,
                smin: t.int("smin", i)?,
                smax: t.int("smax", i)?,
                emin: t.int("emin", i)?,
                emax: t.int("emax", i)?,
                first_row: t.int("first_row", i)?,
                place,
                transfer: t.int("transfer", i)?,
                last_rank: t.int("last_rank", i)?,
                first_rank: t.int("first_rank", i)?,
                mismatch: t.flag("mismatch", i)?,
            });
        }
    }
    for t in tables("members")? {
        for i in 0..t.batch.num_rows() {
            r.members.push(ReducedMember {
                grp: t.text("grp", i)?,
                a: t.int("a", i)?,
                b: t.int("b", i)?,
                rank: t.int("rank", i)?,
                row: t.int("row", i)?,
                wait: t.int("wait", i)?,
                start_offset: t.int("start_offset", i)?,
                end_offset: t.int("end_offset", i)?,
            });
        }
    }
    for t in tables("ranks")? {
        for i in 0..t.batch.num_rows() {
            let rank = t.int("rank", i)?;
            let slot = usize::try_from(rank)
                .ok()
                .and_then(|x| r.ranks.get_mut(x))
                .ok_or_else(|| t.wrong("rank", "a compared rank"))?;
            *slot = ReducedRank {
                unmatched: t.int("unmatched", i)?,
                wait: t.int("wait", i)?,
                matched: t.int("matched", i)?,
                last: t.int("last", i)?,
                first: t.int("first", i)?,
            };
        }
    }
    let mut totals = 0;
    for t in tables("totals")? {
        for i in 0..t.batch.num_rows() {
            r.nccl = t.int("nccl", i)?;
            r.wait = t.int("wait", i)?;
            r.mismatches = t.int("mismatches", i)?;
            totals += 1;
        }
    }
    if totals != 1 {
        return Err(EngineError::new(
            format!("the engine's table `totals` has {totals} rows, not one"),
            "the engine's definition and verdict disagree: run both from one release",
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_parse_and_print_back() {
        for t in ["rust", "dask", "dask=tcp://127.0.0.1:8786"] {
            assert_eq!(Engine::parse(t).unwrap().as_text(), t);
        }
        assert!(Engine::parse("spark").is_err());
        // DataFusion left the product: its name is refused as any other that is no engine.
        let err = Engine::parse("datafusion").unwrap_err();
        assert!(err.contains("rust, dask or dask=ADDRESS"), "{err}");
        assert!(Engine::parse("dask=").is_err());
    }
}
