//! Where the work of a cross-rank analysis runs: all of it in process (the reference), or its
//! map on a Dask cluster.
//!
//! The reduce has one definition, the analysis's Rust loop. On a cluster only the map moves:
//! each worker runs `verdict map` (the same per-rank scan the process runs) over its shard of
//! the set's files and hands back each rank's rows as JSON lines ([`map`]); the analysis puts
//! them back onto its ranks and reduces them as it reduces its own. The SQL beside each
//! analysis (`src/analysis/nccl_skew.sql`, `src/analysis/overlap.sql`) is a specification the
//! tests run on SQLite, as a [`Supplied`] reduce of the rows of [`Keyed`] and [`Intervals`],
//! against the Rust loop. The tests require the same evidence everywhere.

mod cluster;
pub mod process;

pub use cluster::{Shard, WORKER_BINARY_ENV, map};

/// Where a cross-rank reduce runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Engine {
    /// verdict's own loop, in process: the reference.
    #[default]
    Rust,
    /// The map on a Dask cluster, the reduce in process: the scheduler's address, or None to
    /// take `DASK_SCHEDULER_ADDRESS`.
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
    pub(crate) fn new(reason: impl Into<String>, hint: impl Into<String>) -> EngineError {
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

/// Runs the `nccl-skew` reduce of a [`Supplied`] engine (the others' is the analysis's loop).
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
        Engine::Dask(_) => Err(EngineError::new(
            "a cluster runs the map, never the reduce",
            "this is a defect: please report it",
        )),
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

/// Runs the `overlap` aggregates of `ranks` ranks on a [`Supplied`] engine.
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
        Engine::Dask(_) => Err(EngineError::new(
            "a cluster runs the map, never the reduce",
            "this is a defect: please report it",
        )),
    }
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
