//! Independent readers of a trace for the tests' reference computations: plain SQL through a
//! read-only connection, never the code under test.

use rusqlite::Connection;

/// Kernel rows (aliased `k`) with collected timestamps (not 0/0) that do not run backwards:
/// the rows the scan keeps.
pub(crate) const VALID_KERNEL: &str =
    "NOT (k.start = 0 AND k.\"end\" = 0) AND k.\"end\" >= k.start";

/// The stream that carries most of `device`'s NCCL kernels (ties: the lowest id), NCCL
/// being a short name containing `nccl` in any case.
pub(crate) fn busiest_nccl_stream(conn: &Connection, device: i64) -> i64 {
    conn.query_row(
        "SELECT k.streamId FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
         WHERE k.deviceId = ?1 AND lower(s.value) LIKE '%nccl%'
         GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1",
        [device],
        |r| r.get(0),
    )
    .expect("a device with NCCL kernels")
}

/// The NCCL kernels of `device` on `stream` as `(start, end)`, in start order.
pub(crate) fn nccl_kernels(conn: &Connection, device: i64, stream: i64) -> Vec<(i64, i64)> {
    conn.prepare(
        "SELECT k.start, k.\"end\" FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
         WHERE k.deviceId = ?1 AND k.streamId = ?2 AND lower(s.value) LIKE '%nccl%'
         ORDER BY k.start, k.\"end\"",
    )
    .expect("the kernel and string tables")
    .query_map([device, stream], |r| Ok((r.get(0)?, r.get(1)?)))
    .expect("a query")
    .map(Result::unwrap)
    .collect()
}

/// The lower median of a sample: the order statistic the tool reports as a median.
pub(crate) fn lower_median(v: &[i64]) -> i64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    s[(s.len() - 1) / 2]
}
