-- `nccl-skew`: the cross-rank instance matching and every aggregate, in SQL: the specification
-- of the reduce, in standard SQL (views, a recursive CTE, window functions).
--
-- The same reduce as the loop of `compute` in nccl_skew.rs, which stays the reference, and as
-- the Dask engine's (src/engine/dask_reduce.py). The tests run these statements on SQLite as
-- the reduce of every query they run on every engine, on the fixtures and the real trace sets,
-- and require the same evidence as the loop's. The per-rank part (which NCCL kernels a rank
-- compares, and the key that ties each to its group) is read from the rank's trace first, as
-- table `keyed`, one row per compared kernel:
--   rank    0..R-1, the rank's index among the compared ranks
--   grp     the group: a collective (ordinal rule), a communicator (`0x%016x`) or a process group
--   a, b    the key within the group: (position among the rank's kernels of the group, 0), or
--           (`Seq`, k-th kernel of that `Seq` on the rank) under the process-group rule
--   row     the kernel's row, unique over the table
--   start, end, name   the kernel (ns; the short name's id)
--   sel, held          whether the window selects it, and holds all of it
-- Placeholders, replaced by integers before the statements run: {R} (ranks compared),
-- {ordinal} (TRUE under the ordinal rule: every compared rank is a member of every group),
-- {tile}, {wstart}, {wend}, {counted_from} (a tile of a split: its window and the start from
-- which it counts; the lowest i64 when it counts from its start or is no tile).
-- The statements run in order; each `-- output: NAME` marks a result that is read back.

-- The members of a group: every compared rank under the ordinal rule, else the ranks with a
-- kernel in it.
CREATE VIEW members_of AS
SELECT grp, CASE WHEN {ordinal} THEN {R} ELSE COUNT(DISTINCT "rank") END AS n
FROM keyed
GROUP BY grp;

-- Every key with what its rows span. A rank has at most one row per key.
CREATE VIEW spans AS
SELECT k.grp, k.a, k.b,
       MIN(m.n) AS n,
       COUNT(*) AS present,
       MIN(k.start) AS smin, MAX(k.start) AS smax,
       MIN(k."end") AS emin, MAX(k."end") AS emax,
       MIN(k."end" - k.start) AS transfer,
       MIN(k."rank") AS lowest,
       SUM(CASE WHEN k.sel THEN 1 ELSE 0 END) AS selected,
       SUM(CASE WHEN k.sel AND k.held THEN 1 ELSE 0 END) AS whole,
       COUNT(DISTINCT k.name) AS names
FROM keyed k JOIN members_of m ON k.grp = m.grp
GROUP BY k.grp, k.a, k.b;

-- With the row of the key's lowest rank.
CREATE VIEW keys AS
SELECT s.*, k."row" AS first_row
FROM spans s JOIN keyed k
    ON k.grp = s.grp AND k.a = s.a AND k.b = s.b AND k."rank" = s.lowest;

-- An instance: a key every member of its group has. A communicator or process group with one
-- compared rank has no counterpart among two or more.
CREATE VIEW complete AS
SELECT * FROM keys
WHERE present = n AND ({ordinal} OR n >= 2 OR {R} < 2);

-- Where each instance lies against the window: a tile holds the instances that start in it
-- (the first tile also those that reach into it); else inside when every member's kernel is
-- in the window, outside when none is selected, cut otherwise. Inside instances whose kernels
-- never run at one moment (max start > min end) are overlap failures.
CREATE VIEW placed AS
SELECT c.*,
       CASE
           WHEN p.place = 'inside' AND c.n >= 2 AND c.smax > c.emin THEN 'overlap'
           ELSE p.place
       END AS place
FROM complete c JOIN (
    SELECT grp, a, b,
           CASE
               WHEN {tile} THEN
                   CASE WHEN smin < {wend} AND emax > {wstart} AND smin >= {counted_from}
                        THEN 'inside' ELSE 'outside' END
               WHEN whole = n THEN 'inside'
               WHEN selected = 0 THEN 'outside'
               ELSE 'cut'
           END AS place
    FROM complete
) p ON c.grp = p.grp AND c.a = p.a AND c.b = p.b;

CREATE VIEW kept AS
SELECT * FROM placed WHERE place = 'inside';

-- The rank that started last (first): the lowest among those with the latest (earliest) start.
CREATE VIEW arrivals AS
SELECT p.grp, p.a, p.b,
       MIN(CASE WHEN k.start = p.smax THEN k."rank" END) AS last_rank,
       MIN(CASE WHEN k.start = p.smin THEN k."rank" END) AS first_rank
FROM placed p JOIN keyed k ON k.grp = p.grp AND k.a = p.a AND k.b = p.b
GROUP BY p.grp, p.a, p.b;

CREATE VIEW member_rows AS
SELECT k.grp, k.a, k.b, k."rank", k."row", k.start, k."end",
       (k."end" - k.start) - p.transfer AS wait,
       k.start - p.smin AS start_offset,
       k."end" - p.emin AS end_offset,
       p.smin, p.first_row
FROM keyed k JOIN kept p ON k.grp = p.grp AND k.a = p.a AND k.b = p.b;

-- output: instances
SELECT p.grp, p.a, p.b, p.n, p.smin, p.smax, p.emin, p.emax, p.first_row, p.place, p.transfer,
       r.last_rank, r.first_rank, p.names > 1 AS mismatch
FROM placed p JOIN arrivals r ON p.grp = r.grp AND p.a = r.a AND p.b = r.b
WHERE p.place <> 'outside'
ORDER BY p.place <> 'inside', p.smin, p.first_row, p.emax, p.grp, p.a, p.b;

-- output: members
SELECT grp, a, b, "rank", "row", start, "end", wait, start_offset, end_offset
FROM member_rows
ORDER BY smin, first_row, "rank";

-- Per rank (every compared rank, zeros where it has none): its selected kernels no instance
-- holds, its wait, the kept instances it is a member of, and those it arrived last and first in.
-- output: ranks
WITH RECURSIVE s (value) AS (
    SELECT 0 WHERE {R} > 0
    UNION ALL
    SELECT value + 1 FROM s WHERE value + 1 < {R}
)
SELECT s.value AS "rank",
       COALESCE(u.unmatched, 0) AS unmatched,
       COALESCE(w.wait, 0) AS wait,
       COALESCE(w.matched, 0) AS matched,
       COALESCE(l.last, 0) AS last,
       COALESCE(f.first, 0) AS first
FROM s
LEFT JOIN (
    SELECT k."rank", COUNT(*) AS unmatched
    FROM keyed k LEFT JOIN complete c ON k.grp = c.grp AND k.a = c.a AND k.b = c.b
    WHERE k.sel AND c.grp IS NULL
    GROUP BY k."rank"
) u ON u."rank" = s.value
LEFT JOIN (
    SELECT "rank", SUM(wait) AS wait, COUNT(*) AS matched FROM member_rows GROUP BY "rank"
) w ON w."rank" = s.value
LEFT JOIN (
    SELECT r.last_rank AS "rank", COUNT(*) AS last
    FROM kept p JOIN arrivals r ON p.grp = r.grp AND p.a = r.a AND p.b = r.b
    GROUP BY r.last_rank
) l ON l."rank" = s.value
LEFT JOIN (
    SELECT r.first_rank AS "rank", COUNT(*) AS first
    FROM kept p JOIN arrivals r ON p.grp = r.grp AND p.a = r.a AND p.b = r.b
    GROUP BY r.first_rank
) f ON f."rank" = s.value
ORDER BY s.value;

-- output: totals
SELECT COALESCE((SELECT SUM("end" - start) FROM member_rows), 0) AS nccl,
       COALESCE((SELECT SUM(wait) FROM member_rows), 0) AS wait,
       (SELECT COUNT(*) FROM kept WHERE names > 1) AS mismatches;
