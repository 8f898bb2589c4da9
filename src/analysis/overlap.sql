-- `overlap`: each rank's unions of kernel intervals and its counts, in SQL: the specification
-- of the aggregates, in standard SQL (views, a recursive CTE, window functions).
--
-- The same per-rank aggregates as `breakdown` in overlap.rs (interval unions by a sweep),
-- which stays the reference, and as the Dask engine's (src/engine/dask_reduce.py). The tests
-- run these statements on SQLite as the aggregates of every query they run on every engine,
-- and require the same evidence as the loop's. The rows a rank keeps in the window are read
-- from its trace first, as table `intervals`, one row per kept kernel:
--   rank         0..R-1, the device's index among the compared devices
--   start, end   the kernel, clipped to the window (ns)
--   nccl         an NCCL kernel
--   counted      it belongs to this window (in a split, a kernel that started in an earlier
--                window adds wall time here but is counted there)
-- Placeholder: {R}, the number of compared devices.
-- The statements run in order; each `-- output: NAME` marks a result that is read back.

-- Every interval twice: in the union of all kernels, and in its kind's (compute or NCCL).
CREATE VIEW tagged AS
SELECT "rank", start, "end", 'all' AS kind FROM intervals
UNION ALL
SELECT "rank", start, "end", CASE WHEN nccl THEN 'nccl' ELSE 'compute' END AS kind FROM intervals;

-- The length of a union: in start order, an interval opens an island when it starts after
-- every earlier one of its kind has ended; an island spans its first start to its last end.
CREATE VIEW reach AS
SELECT "rank", kind, start, "end",
       MAX("end") OVER (
           PARTITION BY "rank", kind ORDER BY start, "end"
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
       ) AS before
FROM tagged;

CREATE VIEW islands AS
SELECT "rank", kind, start, "end",
       SUM(CASE WHEN before IS NULL OR start > before THEN 1 ELSE 0 END) OVER (
           PARTITION BY "rank", kind ORDER BY start, "end"
           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
       ) AS island
FROM reach;

CREATE VIEW unions AS
SELECT "rank", kind, SUM(hi - lo) AS busy
FROM (
    SELECT "rank", kind, island, MIN(start) AS lo, MAX("end") AS hi
    FROM islands
    GROUP BY "rank", kind, island
) i
GROUP BY "rank", kind;

-- Per rank (every compared rank, zeros where it kept nothing): |C|, |N|, |C ∪ N|, the kernels
-- counted, and the span of what it kept.
-- output: ranks
WITH RECURSIVE s (value) AS (
    SELECT 0 WHERE {R} > 0
    UNION ALL
    SELECT value + 1 FROM s WHERE value + 1 < {R}
)
SELECT s.value AS "rank",
       COALESCE(c.busy, 0) AS compute_busy,
       COALESCE(n.busy, 0) AS nccl_busy,
       COALESCE(a.busy, 0) AS all_busy,
       COALESCE(k.compute_kernels, 0) AS compute_kernels,
       COALESCE(k.nccl_kernels, 0) AS nccl_kernels,
       COALESCE(k.lo, 0) AS lo,
       COALESCE(k.hi, 0) AS hi
FROM s
LEFT JOIN unions c ON c."rank" = s.value AND c.kind = 'compute'
LEFT JOIN unions n ON n."rank" = s.value AND n.kind = 'nccl'
LEFT JOIN unions a ON a."rank" = s.value AND a.kind = 'all'
LEFT JOIN (
    SELECT "rank",
           SUM(CASE WHEN counted AND NOT nccl THEN 1 ELSE 0 END) AS compute_kernels,
           SUM(CASE WHEN counted AND nccl THEN 1 ELSE 0 END) AS nccl_kernels,
           MIN(start) AS lo,
           MAX("end") AS hi
    FROM intervals
    GROUP BY "rank"
) k ON k."rank" = s.value
ORDER BY s.value;
