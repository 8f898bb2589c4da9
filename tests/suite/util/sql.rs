//! The SQL definitions written beside the analyses (`src/analysis/nccl_skew.sql`,
//! `src/analysis/overlap.sql`), run on SQLite: an executable specification of the Rust loops.
//! [`run_json_on_engines`](super::run_json_on_engines) runs each query it is given once more in
//! process with these statements as the reduce ([`SQL`]), and requires the same evidence as the
//! loop's.

use rusqlite::Connection;
use rusqlite::types::Value as Sql;
use verdict::engine::{
    EngineError, Intervals, Keyed, Placed, ReduceParams, Reduced, ReducedInstance, ReducedMember,
    ReducedRank, Supplied, Unions,
};

/// The `nccl-skew` reduce.
pub(crate) const NCCL_SKEW_SQL: &str = include_str!("../../../src/analysis/nccl_skew.sql");

/// The `overlap` aggregates.
pub(crate) const OVERLAP_SQL: &str = include_str!("../../../src/analysis/overlap.sql");

/// Both reduces, as an engine.
pub(crate) const SQL: Supplied = Supplied { nccl_skew, overlap };

/// One statement of a SQL file, with the name of its output if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Statement {
    /// The statement, comments removed, placeholders replaced.
    pub sql: String,
    /// `-- output: NAME`, when its result is read.
    pub output: Option<String>,
}

/// Splits `sql` into its statements (each ends with a line ending in `;`), dropping comment
/// lines, and replaces the placeholders with `params`.
pub(crate) fn statements(sql: &str, params: &ReduceParams) -> Vec<Statement> {
    let (tile, wstart, wend, from) = match params.tile {
        Some((s, e, f)) => (true, s, e, f.unwrap_or(i64::MIN)),
        None => (false, 0, 0, i64::MIN),
    };
    let fill = |s: &str| {
        s.replace("{R}", &params.ranks.to_string())
            .replace("{ordinal}", if params.ordinal { "TRUE" } else { "FALSE" })
            .replace("{tile}", if tile { "TRUE" } else { "FALSE" })
            .replace("{wstart}", &wstart.to_string())
            .replace("{wend}", &wend.to_string())
            // The lowest i64 cannot be written as a literal (its magnitude overflows).
            .replace(
                "{counted_from}",
                &if from == i64::MIN {
                    format!("({} - 1)", i64::MIN + 1)
                } else {
                    from.to_string()
                },
            )
    };
    let mut out = Vec::new();
    let mut body = String::new();
    let mut output = None;
    for line in sql.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("-- output:") {
            output = Some(name.trim().to_string());
            continue;
        }
        if t.starts_with("--") || t.is_empty() {
            continue;
        }
        body.push_str(line);
        body.push('\n');
        if t.ends_with(';') {
            out.push(Statement { sql: fill(body.trim_end().trim_end_matches(';')), output });
            body.clear();
            output = None;
        }
    }
    out
}

/// One output table: its rows, each by column name.
struct Table {
    name: String,
    columns: Vec<String>,
    rows: Vec<Vec<Sql>>,
}

impl Table {
    fn get(&self, row: usize, column: &str) -> Result<&Sql, EngineError> {
        let c =
            self.columns.iter().position(|c| c == column).ok_or_else(|| {
                failed(format!("the table `{}` has no column `{column}`", self.name))
            })?;
        Ok(&self.rows[row][c])
    }

    fn int(&self, row: usize, column: &str) -> Result<i64, EngineError> {
        match self.get(row, column)? {
            Sql::Integer(v) => Ok(*v),
            v => Err(self.wrong(column, v)),
        }
    }

    fn text(&self, row: usize, column: &str) -> Result<String, EngineError> {
        match self.get(row, column)? {
            Sql::Text(v) => Ok(v.clone()),
            v => Err(self.wrong(column, v)),
        }
    }

    fn flag(&self, row: usize, column: &str) -> Result<bool, EngineError> {
        match self.get(row, column)? {
            Sql::Integer(0) => Ok(false),
            Sql::Integer(1) => Ok(true),
            v => Err(self.wrong(column, v)),
        }
    }

    fn wrong(&self, column: &str, v: &Sql) -> EngineError {
        failed(format!("the table `{}` column `{column}` holds {v:?}", self.name))
    }
}

fn failed(reason: String) -> EngineError {
    EngineError { reason, hint: "the SQL specification and the Rust loop disagree".into() }
}

/// Runs the statements of `sql` on `db` and returns the marked outputs in order.
fn run(db: &Connection, sql: &str, params: &ReduceParams) -> Result<Vec<Table>, EngineError> {
    let mut out = Vec::new();
    for s in statements(sql, params) {
        let sqlite = |e: rusqlite::Error| failed(format!("SQLite: {e}\n{}", s.sql));
        let Some(name) = s.output else {
            db.execute_batch(&s.sql).map_err(sqlite)?;
            continue;
        };
        let mut stmt = db.prepare(&s.sql).map_err(sqlite)?;
        let columns: Vec<String> = stmt.column_names().map(str::to_string).collect();
        let n = columns.len();
        let rows = stmt
            .query_map([], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())
            .map_err(sqlite)?
            .collect::<Result<Vec<Vec<Sql>>, _>>()
            .map_err(sqlite)?;
        out.push(Table { name, columns, rows });
    }
    Ok(out)
}

fn table<'a>(tables: &'a [Table], name: &str) -> Result<&'a Table, EngineError> {
    tables
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| failed(format!("the SQL marks no output `{name}`")))
}

fn open() -> Result<Connection, EngineError> {
    Connection::open_in_memory().map_err(|e| failed(format!("SQLite: {e}")))
}

/// The `nccl-skew` reduce of `nccl_skew.sql`, on SQLite.
pub(crate) fn nccl_skew(keyed: &Keyed, params: &ReduceParams) -> Result<Reduced, EngineError> {
    let mut db = open()?;
    let sqlite = |e: rusqlite::Error| failed(format!("SQLite: {e}"));
    let tx = db.transaction().map_err(sqlite)?;
    tx.execute_batch(
        "CREATE TABLE keyed (\"rank\" INTEGER NOT NULL, grp TEXT NOT NULL, a INTEGER NOT NULL,
             b INTEGER NOT NULL, \"row\" INTEGER NOT NULL, start INTEGER NOT NULL,
             \"end\" INTEGER NOT NULL, name INTEGER NOT NULL, sel INTEGER NOT NULL,
             held INTEGER NOT NULL)",
    )
    .map_err(sqlite)?;
    {
        let mut insert = tx
            .prepare("INSERT INTO keyed VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")
            .map_err(sqlite)?;
        for i in 0..keyed.rank.len() {
            insert
                .execute(rusqlite::params![
                    keyed.rank[i],
                    keyed.grp[i],
                    keyed.a[i],
                    keyed.b[i],
                    keyed.row[i],
                    keyed.start[i],
                    keyed.end[i],
                    keyed.name[i],
                    keyed.sel[i],
                    keyed.held[i],
                ])
                .map_err(sqlite)?;
        }
    }
    tx.commit().map_err(sqlite)?;
    let out = run(&db, NCCL_SKEW_SQL, params)?;
    let mut r = Reduced {
        ranks: vec![ReducedRank::default(); usize::try_from(params.ranks).unwrap_or(0)],
        ..Reduced::default()
    };
    let t = table(&out, "instances")?;
    for i in 0..t.rows.len() {
        let place = match t.text(i, "place")?.as_str() {
            "inside" => Placed::Inside,
            "cut" => Placed::Cut,
            "overlap" => Placed::Overlap,
            p => return Err(failed(format!("an instance placed `{p}`"))),
        };
        r.instances.push(ReducedInstance {
            grp: t.text(i, "grp")?,
            a: t.int(i, "a")?,
            b: t.int(i, "b")?,
            n: t.int(i, "n")?,
            smin: t.int(i, "smin")?,
            smax: t.int(i, "smax")?,
            emin: t.int(i, "emin")?,
            emax: t.int(i, "emax")?,
            first_row: t.int(i, "first_row")?,
            place,
            transfer: t.int(i, "transfer")?,
            last_rank: t.int(i, "last_rank")?,
            first_rank: t.int(i, "first_rank")?,
            mismatch: t.flag(i, "mismatch")?,
        });
    }
    let t = table(&out, "members")?;
    for i in 0..t.rows.len() {
        r.members.push(ReducedMember {
            grp: t.text(i, "grp")?,
            a: t.int(i, "a")?,
            b: t.int(i, "b")?,
            rank: t.int(i, "rank")?,
            row: t.int(i, "row")?,
            wait: t.int(i, "wait")?,
            start_offset: t.int(i, "start_offset")?,
            end_offset: t.int(i, "end_offset")?,
        });
    }
    let t = table(&out, "ranks")?;
    if t.rows.len() != r.ranks.len() {
        return Err(failed(format!(
            "{} rows of `ranks` for {} ranks",
            t.rows.len(),
            r.ranks.len()
        )));
    }
    for i in 0..t.rows.len() {
        let rank = usize::try_from(t.int(i, "rank")?).ok().filter(|&x| x < r.ranks.len());
        let rank = rank.ok_or_else(|| failed("a rank outside the compared ones".into()))?;
        r.ranks[rank] = ReducedRank {
            unmatched: t.int(i, "unmatched")?,
            wait: t.int(i, "wait")?,
            matched: t.int(i, "matched")?,
            last: t.int(i, "last")?,
            first: t.int(i, "first")?,
        };
    }
    let t = table(&out, "totals")?;
    if t.rows.len() != 1 {
        return Err(failed(format!("{} rows of `totals`, not one", t.rows.len())));
    }
    r.nccl = t.int(0, "nccl")?;
    r.wait = t.int(0, "wait")?;
    r.mismatches = t.int(0, "mismatches")?;
    Ok(r)
}

/// The `overlap` aggregates of `overlap.sql`, on SQLite.
pub(crate) fn overlap(intervals: &Intervals, ranks: i64) -> Result<Vec<Unions>, EngineError> {
    let mut db = open()?;
    let sqlite = |e: rusqlite::Error| failed(format!("SQLite: {e}"));
    let tx = db.transaction().map_err(sqlite)?;
    tx.execute_batch(
        "CREATE TABLE intervals (\"rank\" INTEGER NOT NULL, start INTEGER NOT NULL,
             \"end\" INTEGER NOT NULL, nccl INTEGER NOT NULL, counted INTEGER NOT NULL)",
    )
    .map_err(sqlite)?;
    {
        let mut insert =
            tx.prepare("INSERT INTO intervals VALUES (?1, ?2, ?3, ?4, ?5)").map_err(sqlite)?;
        for i in 0..intervals.rank.len() {
            insert
                .execute(rusqlite::params![
                    intervals.rank[i],
                    intervals.start[i],
                    intervals.end[i],
                    intervals.nccl[i],
                    intervals.counted[i],
                ])
                .map_err(sqlite)?;
        }
    }
    tx.commit().map_err(sqlite)?;
    let params = ReduceParams { ranks, ordinal: false, tile: None };
    let out = run(&db, OVERLAP_SQL, &params)?;
    let t = table(&out, "ranks")?;
    let mut r = vec![Unions::default(); usize::try_from(ranks).unwrap_or(0)];
    if t.rows.len() != r.len() {
        return Err(failed(format!("{} rows of `ranks` for {} ranks", t.rows.len(), r.len())));
    }
    for i in 0..t.rows.len() {
        let rank = usize::try_from(t.int(i, "rank")?).ok().filter(|&x| x < r.len());
        let rank = rank.ok_or_else(|| failed("a rank outside the compared ones".into()))?;
        r[rank] = Unions {
            compute_busy: t.int(i, "compute_busy")?,
            nccl_busy: t.int(i, "nccl_busy")?,
            all_busy: t.int(i, "all_busy")?,
            compute_kernels: t.int(i, "compute_kernels")?,
            nccl_kernels: t.int(i, "nccl_kernels")?,
            lo: t.int(i, "lo")?,
            hi: t.int(i, "hi")?,
        };
    }
    Ok(r)
}
