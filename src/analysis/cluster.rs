//! The map of an analysis on a cluster: the per-rank scan runs where the files are (the
//! `verdict map` of `cmd/map.rs` on each worker, over its shard of the set) and hands back
//! each rank's rows as JSON lines; the reduce runs here, in the analysis's own Rust.
//!
//! Owns the words a worker runs, the shard's numbering put back onto the set's (a rank is its
//! file and its device there) and the check that a worker read the same bytes. It must not
//! reduce: each analysis does that over the rows.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{AnalysisSpec, Context, Params, QueryError};
use crate::scope::DeviceSel;

/// The words of `verdict map` that make a worker scan as `params` asks, before the shard's
/// files: the query as `verdict query` takes it, every rank of the shard, on the clock of the
/// set whose origin is `origin` (none: one trace on its own clock).
pub fn worker_words(origin: Option<i64>, spec: &AnalysisSpec, params: &Params) -> Vec<String> {
    let mut w: Vec<String> = vec!["map".into()];
    if let Some(origin) = origin {
        w.extend(["--origin".into(), origin.to_string()]);
    }
    if params.tile {
        w.push("--tile".into());
    }
    if let Some(t) = params.counted_from {
        w.extend(["--counted-from".into(), t.to_string()]);
    }
    w.extend(["--".into(), "query".into(), spec.name.into()]);
    w.extend(spec.device_words(&DeviceSel::All));
    if let Some(win) = params.window {
        w.extend(["--window".into(), win.to_string()]);
        w.extend(["--semantics".into(), params.semantics.to_string()]);
    }
    for param in
        spec.params.iter().filter(|p| ![super::ENGINE.name, super::CLUSTER.name].contains(&p.name))
    {
        if let Some(v) = (param.get)(params) {
            w.extend([format!("--{}", param.name), v]);
        }
    }
    w
}

/// The files of the context, in the set's order, with their sha256.
fn files(ctx: &Context) -> Vec<(String, String)> {
    match &ctx.trace.set {
        Some(set) => set.files.iter().map(|f| (f.path.clone(), f.sha256.clone())).collect(),
        None => vec![(ctx.trace.path.clone(), ctx.trace.sha256.clone())],
    }
}

/// Where a rank of `ctx` lives: the index of its file and its device there.
pub fn place_of(ctx: &Context, rank: i64) -> (usize, i64) {
    match &ctx.trace.set {
        Some(set) => {
            set.ranks.iter().find(|r| r.rank == rank).map_or((0, rank), |r| (r.file, r.device))
        }
        None => (0, rank),
    }
}

/// One rank's rows as the worker wrote them, with the file and device they came from and the
/// file's sha256.
pub fn line(ctx: &Context, rank: i64, rows: Value) -> Value {
    let (file, device) = place_of(ctx, rank);
    let sha = files(ctx).get(file).map(|f| f.1.clone()).unwrap_or_default();
    serde_json::json!({"file": file, "device": device, "sha256": sha, "rows": rows})
}

/// Runs the map of `spec` over every file of `ctx` on the cluster at `address` and gives each
/// rank's rows, by the rank's number in `ctx`.
pub fn run(
    ctx: &Context,
    spec: &AnalysisSpec,
    params: &Params,
    address: Option<&str>,
) -> Result<BTreeMap<i64, Value>, QueryError> {
    let failed =
        |e: crate::engine::EngineError| QueryError::Failed { reason: e.reason, hint: e.hint };
    let files = files(ctx);
    let paths: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
    let origin = ctx.trace.set.as_ref().and_then(|s| s.origin_utc_ns);
    let shards =
        crate::engine::map(address, &worker_words(origin, spec, params), &paths).map_err(failed)?;
    let bad = |what: String| QueryError::Failed {
        reason: format!("a worker of the cluster returned {what}"),
        hint: "run the workers' verdict from the release of this one (VERDICT_WORKER_BINARY)"
            .into(),
    };
    let by_place: BTreeMap<(usize, i64), i64> = match &ctx.trace.set {
        Some(set) => set.ranks.iter().map(|r| ((r.file, r.device), r.rank)).collect(),
        None => ctx.inventory.devices.iter().map(|d| ((0, d.device), d.device)).collect(),
    };
    let mut out = BTreeMap::new();
    for shard in shards {
        for text in shard.lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_slice(text)
                .map_err(|e| bad(format!("a line that is not JSON ({e})")))?;
            let file = v["file"].as_u64().and_then(|f| usize::try_from(f).ok());
            let device = v["device"].as_i64();
            let (Some(file), Some(device)) = (file, device) else {
                return Err(bad("a line without its file and device".into()));
            };
            let file = shard.start + file;
            let (path, sha) =
                files.get(file).ok_or_else(|| bad(format!("a file {file} outside the set")))?;
            if v["sha256"].as_str() != Some(sha.as_str()) {
                return Err(QueryError::Failed {
                    reason: format!(
                        "the file `{path}` a worker read is not the one read here (sha256 {} there, {sha} here)",
                        v["sha256"].as_str().unwrap_or("?")
                    ),
                    hint: "give the workers the same files at the same paths (a shared file system), or run without `--cluster`".into(),
                });
            }
            if let Some(&rank) = by_place.get(&(file, device)) {
                out.insert(rank, v["rows"].clone());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::{Semantics, Window};

    #[test]
    fn a_worker_runs_the_query_without_saying_where() {
        let mut p = Params::new(DeviceSel::All);
        p.window = Some(Window { start_ns: 1_000_000_001, end_ns: 2_500_000_000 });
        p.semantics = Semantics::Contain;
        p.tile = true;
        p.counted_from = Some(1_200_000_000);
        p.engine = crate::engine::Engine::Dask(Some("tcp://h:1".into()));
        let w = worker_words(Some(-5), &super::super::overlap::SPEC, &p);
        let words: Vec<&str> = w.iter().map(String::as_str).collect();
        assert_eq!(
            words,
            [
                "map",
                "--origin",
                "-5",
                "--tile",
                "--counted-from",
                "1200000000",
                "--",
                "query",
                "overlap",
                "--all-devices",
                "--window",
                "1.000000001:2.5",
                "--semantics",
                "contain"
            ]
        );
    }
}
