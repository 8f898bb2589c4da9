//! Trace sets: one export per rank or per node, read in parallel and merged into one
//! [`Context`] whose devices are the set's ranks, on one clock.
//!
//! Owns the clock alignment of the files, the numbering and labels of ranks, and the set's
//! coverage (GPUs a node lists that no file of the set covers). Each file is read once, on a
//! worker of its own; the per-file scans merge associatively (`merge` of each table with a
//! [`Remap`]), so the same map/reduce runs over any number of files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

use super::{Context, Inventory, NvtxData, Table, TraceRef};
use crate::trace::remap::{MAX_FILE_TAG, Remap};
use crate::trace::{Copies, KernelFilter, Kernels, TimeBase, Trace, TraceError};

/// A file of a set could not be read or put on the set's clock.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// One file failed.
    #[error("`{}`: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: TraceError,
    },
    /// A file's timestamps cannot be put on a common clock.
    #[error("`{}` cannot be put on the set's clock ({reason})", path.display())]
    Clock {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// PyTorch profiler traces whose `distributedInfo` disagree: two files of one rank, a rank
    /// outside the world, or different world sizes or process groups.
    #[error("`{}` and `{}`: {reason}", first.display(), second.display())]
    Ranks {
        /// The file met first.
        first: PathBuf,
        /// The one that disagrees with it.
        second: PathBuf,
        /// What disagrees.
        reason: String,
    },
    /// More files than the tags of the merge can tell apart.
    #[error("the set has {0} files, more than the {MAX_FILE_TAG} one audit reads")]
    TooMany(usize),
    /// No file at all.
    #[error("the set has no file")]
    Empty,
    /// Two members are one file (a link, or two paths to it) or hold the same bytes: one
    /// rank's capture would count twice.
    #[error("`{}` and `{}` are {how}", first.display(), second.display())]
    Duplicate {
        /// The member met first.
        first: PathBuf,
        /// The one that repeats it.
        second: PathBuf,
        /// `the same file (...)` or `byte for byte the same (...)`.
        how: String,
    },
}

impl SetError {
    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            SetError::File { source, .. } => source.hint(),
            SetError::Clock { .. } => Some(
                "files of a set need a shared time base: export with `nsys export --type sqlite --ts-normalize=true`, or keep `TARGET_INFO_SESSION_START_TIME` in the export".into(),
            ),
            SetError::Ranks { .. } => Some(
                "a set holds one `torch.profiler` trace per rank of one job: remove the file of another run or the second file of a rank".into(),
            ),
            SetError::TooMany(_) => Some(
                "split the set (one claims file per group of nodes), or see ARCHITECTURE.md on fleet scale".into(),
            ),
            SetError::Empty => Some("the trace entry's list or glob matched no file".into()),
            SetError::Duplicate { .. } => Some(
                "a set holds each rank's export once: remove the link or the copy from the list or the glob's folder".into(),
            ),
        }
    }
}

/// How one file of a set was put on the set's clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Alignment {
    /// Already on the UTC-epoch clock (`--ts-normalize`): shifted by minus the set's origin.
    Normalized,
    /// On its session clock: shifted by its session start in UTC minus the set's origin.
    SessionStart,
    /// On its host clock (a PyTorch profiler trace): put on UTC by its
    /// `baseTimeNanoseconds`, then shifted by minus the set's origin.
    HostClock,
    /// On its host clock without `baseTimeNanoseconds` (older PyTorch profilers): its `ts`
    /// read as UTC-epoch µs, then shifted by minus the set's origin.
    HostEpoch,
    /// The set's only file: its own clock, unshifted.
    Own,
}

/// A file of a set.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SetFile {
    /// The path as given.
    pub path: String,
    /// sha256 of its bytes (for a columnar folder, of the file it was extracted from).
    pub sha256: String,
    /// For a columnar folder: where its tables come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columnar: Option<Box<super::ColumnarRef>>,
    /// The host the capture ran on (`TARGET_INFO_SYSTEM_ENV` `Hostname`), if recorded.
    pub host: Option<String>,
    /// `EXPORT_PRODUCT_VERSION`, null if not recorded; absent for a file no nsys wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nsys_version: crate::trace::run::NsysVersion,
    /// Its format where it is not an nsys export: `pytorch-profiler`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The capture start in UTC-epoch ns, if recorded.
    pub session_start_utc_ns: Option<i64>,
    /// How it was aligned.
    pub alignment: Alignment,
    /// Added to its timestamps to put them on the set's clock.
    pub shift_ns: i64,
    /// GPUs its `TARGET_INFO_GPU` lists that no file of the set covers on the same host
    /// (idle on that node, or their process's file is not in the set).
    pub idle_listed: Vec<i64>,
}

/// A rank of a set: one device of one file, with the processes that ran on it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RankRef {
    /// Its number in the set, from 0: the devices with kernels of the first file (sorted), then
    /// the second's...; devices with copies but no kernel after all of them.
    pub rank: i64,
    /// Index of its file in [`SetInfo::files`].
    pub file: usize,
    /// The host, if recorded.
    pub host: Option<String>,
    /// OS pids that launched kernels on it.
    pub pids: Vec<i64>,
    /// `deviceId` in its file.
    pub device: i64,
    /// `host:pid/devN`: the short host name (else the file stem), the pids, the device.
    pub label: String,
}

/// What a context over a set knows of its files and ranks.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SetInfo {
    /// The files, in set order (sorted paths).
    pub files: Vec<SetFile>,
    /// The ranks, by number.
    pub ranks: Vec<RankRef>,
    /// The UTC-epoch ns that is 0 on the set's clock: the earliest capture start of its
    /// files (None for a set of one file on its own clock).
    pub origin_utc_ns: Option<i64>,
    /// Ranks the claims file expects (`expect_ranks`), if stated.
    pub expected_ranks: Option<usize>,
}

impl SetInfo {
    /// The label of a rank, or its number.
    pub fn label(&self, rank: i64) -> String {
        self.ranks
            .iter()
            .find(|r| r.rank == rank)
            .map_or_else(|| rank.to_string(), |r| r.label.clone())
    }

    /// Whether its files are PyTorch profiler traces.
    pub fn is_pytorch_profiler(&self) -> bool {
        self.files.iter().any(|f| f.format.as_deref() == Some("pytorch-profiler"))
    }

    /// Distinct hosts, in order of first appearance.
    pub fn hosts(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in &self.files {
            let h = f.host.clone().unwrap_or_else(|| "?".into());
            if !out.contains(&h) {
                out.push(h);
            }
        }
        out
    }
}

/// Says in a piece of evidence over a set what its ranks are and how its files share a
/// clock: each per-device row gets its rank's `label`, and a set of several files a note on
/// its alignment and the limit of cross-node differences.
pub fn disclose(ev: &mut super::Evidence, set: &SetInfo) {
    if let Some(rows) = ev.rows.as_mut() {
        rows.label_devices(|d| set.label(d));
    }
    if set.files.len() < 2 {
        return;
    }
    // PyTorch profiler traces carry their own clock words: no session, no export option.
    if set.is_pytorch_profiler() {
        let epoch = set.files.iter().filter(|f| f.alignment == Alignment::HostEpoch).count();
        match epoch {
            0 => ev.note("note.set_clock_host", &[("files", set.files.len().to_string())]),
            n => ev.note(
                "note.set_clock_host_epoch",
                &[("files", set.files.len().to_string()), ("epoch", n.to_string())],
            ),
        }
        return;
    }
    let normalized = set.files.iter().filter(|f| f.alignment == Alignment::Normalized).count();
    ev.note(
        "note.set_clock",
        &[
            ("files", set.files.len().to_string()),
            ("hosts", set.hosts().len().to_string()),
            ("normalized", normalized.to_string()),
            ("shifted", (set.files.len() - normalized).to_string()),
        ],
    );
}

/// The clock facts of one opened file.
struct Clock {
    /// UTC-epoch ns of the file's time 0: 0 for a normalized file, its session start else.
    zero_utc_ns: i64,
    /// The capture start in UTC.
    start_utc_ns: i64,
    alignment: Alignment,
}

fn clock_of(trace: &Trace) -> Result<Clock, SetError> {
    let s = trace.schema();
    let err = |reason: &str| SetError::Clock {
        path: trace.path().to_path_buf(),
        reason: reason.to_string(),
    };
    match s.time_base {
        TimeBase::Utc { shift_ns } => {
            let start = shift_ns
                .or(s.session_start_utc_ns)
                .ok_or_else(|| err("a UTC clock without a recorded capture start"))?;
            Ok(Clock { zero_utc_ns: 0, start_utc_ns: start, alignment: Alignment::Normalized })
        }
        TimeBase::Host { base_utc_ns } => {
            // `UTC = base + ts`: time 0 of the file is `base`; the capture starts at its first
            // kept event, which the reader records as the session start.
            // Without `baseTimeNanoseconds`, `ts` is UTC-epoch µs (older Kineto versions).
            let alignment =
                if base_utc_ns.is_some() { Alignment::HostClock } else { Alignment::HostEpoch };
            let base = base_utc_ns.unwrap_or(0);
            let start = s.session_start_utc_ns.unwrap_or(base);
            Ok(Clock { zero_utc_ns: base, start_utc_ns: start, alignment })
        }
        TimeBase::Session | TimeBase::Unrecorded => {
            let start = s.session_start_utc_ns.ok_or_else(|| {
                err("a session clock without `TARGET_INFO_SESSION_START_TIME.utcEpochNs`")
            })?;
            Ok(Clock {
                zero_utc_ns: start,
                start_utc_ns: start,
                alignment: Alignment::SessionStart,
            })
        }
    }
}

/// The short form of a host name: its first DNS label (`ault43` of `ault43.cscs.ch`).
fn short_host(host: &str) -> &str {
    host.split('.').next().filter(|s| !s.is_empty()).unwrap_or(host)
}

/// A rank's label: `host:pid/devN` (pids joined with `+`), the file stem where no host is
/// recorded.
pub fn rank_label(host: Option<&str>, file: &Path, pids: &[i64], device: i64) -> String {
    let who = match host {
        Some(h) => short_host(h).to_string(),
        None => file.file_stem().map_or_else(|| "?".into(), |s| s.to_string_lossy().into_owned()),
    };
    let pids = pids.iter().map(i64::to_string).collect::<Vec<_>>().join("+");
    if pids.is_empty() { format!("{who}/dev{device}") } else { format!("{who}:{pids}/dev{device}") }
}

/// One file read on its own clock, before the merge.
struct Part {
    ctx: Context,
    trace: Trace,
    /// The bounds of the set's filter on this file's clock.
    bounds: Option<(i64, i64)>,
    host: Option<String>,
    clock: Clock,
    listed: Vec<i64>,
}

/// Reads every file of a set in parallel and merges them into one context whose devices are
/// the set's ranks and whose times are on the set's clock (0 at the earliest capture start).
///
/// `filter` is on the set's clock and selects ranks by number; each file is read with the
/// bounds moved onto its own clock and all its devices (ranks are known only after the scan).
/// `progress` is told the rows read once every file is done.
pub fn load_set(
    paths: &[PathBuf],
    filter: &KernelFilter,
    expected_ranks: Option<usize>,
    needs: &[Table],
    progress: &mut dyn FnMut(u64),
) -> Result<Context, SetError> {
    load_set_on(paths, filter, expected_ranks, needs, progress, None)
}

/// [`load_set`] on the clock of a wider set whose origin (UTC-epoch ns) is `origin`: a shard of
/// a set, read where its files are, keeps the times the whole set gives them, even as one file.
pub fn load_set_on(
    paths: &[PathBuf],
    filter: &KernelFilter,
    expected_ranks: Option<usize>,
    needs: &[Table],
    progress: &mut dyn FnMut(u64),
    origin: Option<i64>,
) -> Result<Context, SetError> {
    if paths.is_empty() {
        return Err(SetError::Empty);
    }
    if paths.len() as i64 > MAX_FILE_TAG {
        return Err(SetError::TooMany(paths.len()));
    }
    // One file once (issue 28): a link or a second path to a member would add its ranks
    // again.
    let mut ids: BTreeMap<(u64, u64), &PathBuf> = BTreeMap::new();
    for p in paths {
        if let Some(id) = crate::trace::open::file_id(p)
            && let Some(first) = ids.insert(id, p)
        {
            return Err(SetError::Duplicate {
                first: first.clone(),
                second: p.clone(),
                how: format!("the same file (device {}, inode {})", id.0, id.1),
            });
        }
    }
    let file_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SetError::File { path: path.clone(), source }
    };
    // Open and probe every file: the origin of the set's clock needs all of them.
    let opened: Vec<(Trace, Clock, Option<String>)> = paths
        .par_iter()
        .map(|p| {
            let t = Trace::open(p).map_err(file_err(p))?;
            let clock = clock_of(&t)?;
            let host = t.host_name().map_err(file_err(p))?;
            Ok((t, clock, host))
        })
        .collect::<Result<_, SetError>>()?;
    // PyTorch profiler traces are ranks by their own word: in `distributedInfo.rank` order.
    let order = kineto_order(&opened, paths)?;
    let mut slots: Vec<Option<(Trace, Clock, Option<String>)>> =
        opened.into_iter().map(Some).collect();
    let opened: Vec<(Trace, Clock, Option<String>)> =
        order.iter().filter_map(|&i| slots[i].take()).collect();
    let ordered: Vec<PathBuf> = order.iter().map(|&i| paths[i].clone()).collect();
    let paths: &[PathBuf] = &ordered;
    let fixed = origin;
    let origin =
        fixed.unwrap_or_else(|| opened.iter().map(|(_, c, _)| c.start_utc_ns).min().unwrap_or(0));
    // NCCL ties are read from every file when one records them, so that every rank is tied
    // the same way or its file says why not.
    let needs = super::resolve_ties(needs, opened.iter().zip(paths), |((t, _, _), p)| {
        crate::trace::payload::nccl_ties_recorded(t).map_err(file_err(p))
    })?;
    let needs = &needs[..];
    let single = paths.len() == 1 && fixed.is_none();
    let shift_of = |c: &Clock| if single { 0 } else { c.zero_utc_ns - origin };
    let mut parts: Vec<Part> = opened
        .into_par_iter()
        .map(|(t, clock, host)| {
            let shift = shift_of(&clock);
            let on_file = |b: Option<(i64, i64)>| {
                b.map(|(a, b)| (a.saturating_sub(shift), b.saturating_sub(shift)))
            };
            // Devices are ranks, known only once read: every device of the file, or no rows
            // at all (an inventory only, or NCCL kernels alone).
            let own = KernelFilter {
                devices: filter.devices.as_ref().filter(|d| d.is_empty()).cloned(),
                bounds: on_file(filter.bounds),
                nccl_anywhere: filter.nccl_anywhere,
                keys: filter.keys.as_ref().map(|(_, b)| (None, on_file(*b))),
                nccl_keys: false,
            };
            // NVTX launches and ranges wait for the ranks: only the rows of the ranks that
            // need them look their launches up.
            let load = || Context::load_parts(&t, &own, None, needs, false, &mut |_| {});
            let ctx = if single { load() } else { crate::trace::unsplit(load) }
                .map_err(file_err(t.path()))?;
            let listed = ctx.inventory.listed_gpus.iter().flatten().map(|g| g.id).collect();
            Ok(Part { ctx, trace: t, bounds: own.bounds, host, clock, listed })
        })
        .collect::<Result<_, SetError>>()?;
    // ... and the same bytes once: a copy of a member is the same capture.
    for (i, p) in parts.iter().enumerate() {
        if let Some(j) = parts[..i].iter().position(|q| q.ctx.trace.sha256 == p.ctx.trace.sha256) {
            return Err(SetError::Duplicate {
                first: paths[j].clone(),
                second: paths[i].clone(),
                how: format!("byte for byte the same (sha256 {})", p.ctx.trace.sha256),
            });
        }
    }
    let (ranks, maps) = number_ranks(&parts, paths);
    if needs.contains(&Table::Nvtx) || needs.contains(&Table::NcclTies) {
        let wanted = filter.keys.as_ref().and_then(|(ranks, _)| ranks.clone());
        parts.par_iter_mut().zip(&maps).try_for_each(|(p, map)| {
            let k = &p.ctx.kernels;
            let keep = |i: usize| {
                wanted.as_ref().is_none_or(|w| map.get(&k.device[i]).is_some_and(|r| w.contains(r)))
            };
            let span = super::NvtxData::bounds(
                &KernelFilter { bounds: p.bounds, ..KernelFilter::default() },
                needs,
            );
            let load = || super::NvtxData::load(&p.trace, span, k, keep);
            let nvtx = if single { load() } else { crate::trace::unsplit(load) }
                .map_err(file_err(p.trace.path()))?;
            p.ctx.nvtx = Some(nvtx);
            Ok::<(), SetError>(())
        })?;
    }
    progress(parts.iter().map(|p| p.ctx.kernels.len() as u64).sum());
    Ok(merge(parts, paths, filter, expected_ranks, single, origin, ranks, maps))
}

/// The order of a set's files: as given, but when every file is a PyTorch profiler trace that
/// records `distributedInfo.rank`, by that rank; their world sizes and process groups must
/// agree, and a rank must be below the world size and held by one file.
fn kineto_order(
    opened: &[(Trace, Clock, Option<String>)],
    paths: &[PathBuf],
) -> Result<Vec<usize>, SetError> {
    let given: Vec<usize> = (0..opened.len()).collect();
    let infos: Vec<_> = opened.iter().map(|(t, _, _)| t.schema().source.kineto()).collect();
    let Some(infos) = infos.into_iter().collect::<Option<Vec<_>>>() else { return Ok(given) };
    if infos.iter().any(|k| k.rank.is_none()) {
        return Ok(given);
    }
    let err = |a: usize, b: usize, reason: String| SetError::Ranks {
        first: paths[a].clone(),
        second: paths[b].clone(),
        reason,
    };
    let mut by_rank: BTreeMap<i64, usize> = BTreeMap::new();
    for (i, k) in infos.iter().enumerate() {
        let rank = k.rank.unwrap_or_default();
        if let Some(&j) = by_rank.get(&rank) {
            return Err(err(j, i, format!("both are rank {rank} (`distributedInfo.rank`)")));
        }
        by_rank.insert(rank, i);
        if let Some(w) = k.world_size
            && !(0..w).contains(&rank)
        {
            return Err(err(i, i, format!("rank {rank} is outside a world of {w}")));
        }
        let first = infos[0];
        if k.world_size != first.world_size {
            let show = |w: Option<i64>| w.map_or_else(|| "unrecorded".into(), |w| w.to_string());
            return Err(err(
                0,
                i,
                format!(
                    "world sizes {} and {} (`distributedInfo.world_size`)",
                    show(first.world_size),
                    show(k.world_size)
                ),
            ));
        }
        if k.process_groups.is_some()
            && first.process_groups.is_some()
            && k.process_groups != first.process_groups
        {
            return Err(err(0, i, "different process groups (`distributedInfo.pg_config`)".into()));
        }
    }
    Ok(by_rank.into_values().collect())
}

/// Ranks: each file's devices with kernels, sorted, files in order, numbered from 0; so the
/// numbering depends on the files alone, whatever tables a command reads. Devices with copies
/// but no kernel (read only when an analysis needs copies) come after them. Also, per file, its
/// devices' ranks.
fn number_ranks(parts: &[Part], paths: &[PathBuf]) -> (Vec<RankRef>, Vec<BTreeMap<i64, i64>>) {
    let mut ranks = Vec::new();
    let mut maps: Vec<BTreeMap<i64, i64>> = vec![BTreeMap::new(); parts.len()];
    let kernel_devices = |p: &Part| -> Vec<i64> {
        p.ctx
            .inventory
            .devices
            .iter()
            .map(|d| d.device)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let copy_only = |p: &Part| -> Vec<i64> {
        let k = kernel_devices(p);
        p.ctx
            .copies
            .iter()
            .flat_map(|c| c.inventory.iter().map(|d| d.device))
            .filter(|d| !k.contains(d))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    for pass in 0..2 {
        for (i, p) in parts.iter().enumerate() {
            let devices = if pass == 0 { kernel_devices(p) } else { copy_only(p) };
            for d in devices {
                let rank = ranks.len() as i64;
                let pids = p
                    .ctx
                    .inventory
                    .devices
                    .iter()
                    .find(|x| x.device == d)
                    .map(|x| x.pids.clone())
                    .unwrap_or_default();
                ranks.push(RankRef {
                    rank,
                    file: i,
                    host: p.host.clone(),
                    label: rank_label(p.host.as_deref(), &paths[i], &pids, d),
                    pids,
                    device: d,
                });
                maps[i].insert(d, rank);
            }
        }
    }
    (ranks, maps)
}

#[allow(clippy::too_many_arguments)]
fn merge(
    parts: Vec<Part>,
    paths: &[PathBuf],
    filter: &KernelFilter,
    expected_ranks: Option<usize>,
    single: bool,
    origin: i64,
    ranks: Vec<RankRef>,
    maps: Vec<BTreeMap<i64, i64>>,
) -> Context {
    let remaps: Vec<Remap> = parts
        .iter()
        .zip(maps)
        .enumerate()
        .map(|(i, (p, map))| Remap {
            shift_ns: if single { 0 } else { p.clock.zero_utc_ns - origin },
            devices: map,
            file_tag: i as i64 + 1,
        })
        .collect();
    // GPUs a file lists that no file of the same host covers.
    let covered: BTreeSet<(Option<&str>, i64)> =
        ranks.iter().map(|r| (r.host.as_deref(), r.device)).collect();
    let files: Vec<SetFile> = parts
        .iter()
        .zip(&remaps)
        .map(|(p, r)| SetFile {
            path: p.ctx.trace.path.clone(),
            sha256: p.ctx.trace.sha256.clone(),
            columnar: p.ctx.trace.columnar.clone(),
            host: p.host.clone(),
            nsys_version: p.ctx.trace.nsys_version.clone(),
            format: p.ctx.trace.format.clone(),
            session_start_utc_ns: Some(p.clock.start_utc_ns),
            alignment: if single { Alignment::Own } else { p.clock.alignment.clone() },
            shift_ns: r.shift_ns,
            idle_listed: p
                .listed
                .iter()
                .copied()
                .filter(|d| !covered.contains(&(p.host.as_deref(), *d)))
                .collect(),
        })
        .collect();
    let first = parts[0].ctx.trace.clone();
    let payload_schemas = parts.iter().any(|p| p.ctx.inventory.payload_schemas);
    let mut kernels = Vec::new();
    let mut copies = Vec::new();
    let mut ranges = Vec::new();
    let mut launches = Vec::new();
    let mut processes: Option<i64> = None;
    let mut nvtx_events: Option<i64> = None;
    let mut skipped = 0u64;
    let has_copies = parts.iter().all(|p| p.ctx.copies.is_some());
    let has_nvtx = parts.iter().all(|p| p.ctx.nvtx.is_some());
    for (p, r) in parts.into_iter().zip(remaps) {
        processes = add(processes, p.ctx.inventory.processes);
        nvtx_events = add(nvtx_events, p.ctx.inventory.nvtx_events);
        skipped += p.ctx.inventory.skipped_invalid;
        kernels.push((p.ctx.kernels, r.clone()));
        if let Some(c) = p.ctx.copies {
            copies.push((c, r.clone()));
        }
        if let Some(n) = p.ctx.nvtx {
            ranges.push((n.ranges, r.clone()));
            launches.push((n.launches, r));
        }
    }
    // Every rank is read: the filter keeps only its bounds.
    let filter = &KernelFilter { devices: None, ..filter.clone() };
    let kernels = Kernels::merge(kernels, filter.clone());
    let devices = kernels.inventory.clone();
    let kernel_range_ns = crate::trace::kernel_range(&devices);
    let sha = set_digest(&files);
    let set = SetInfo { files, ranks, origin_utc_ns: (!single).then_some(origin), expected_ranks };
    Context {
        trace: TraceRef {
            path: set_path(paths),
            sha256: sha,
            schema_version: first.schema_version,
            nsys_version: first.nsys_version,
            format: first.format,
            time_base: if single { first.time_base } else { "set".into() },
            capture_start_ns: if single { first.capture_start_ns } else { None },
            origin: first.origin,
            columnar: None,
            set: Some(Box::new(set)),
        },
        copies: has_copies.then(|| Copies::merge(copies, filter.clone())),
        nvtx: has_nvtx.then(|| NvtxData {
            ranges: crate::trace::nvtx::NvtxRanges::merge(ranges),
            launches: crate::trace::nvtx::Launches::merge(launches),
        }),
        inventory: Inventory {
            devices,
            listed_gpus: None,
            processes,
            nvtx_events,
            kernel_range_ns,
            skipped_invalid: skipped,
            payload_schemas,
        },
        kernels,
        expected_devices: expected_ranks.map(|n| (0..n as i64).collect()),
    }
}

fn add(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
    }
}

/// The digest of a set: sha256 over its files' paths and digests, in order.
fn set_digest(files: &[SetFile]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for f in files {
        h.update(f.sha256.as_bytes());
        h.update(b"  ");
        h.update(f.path.as_bytes());
        h.update(b"\n");
    }
    crate::trace::hex(&h.finalize())
}

/// How a set is named where one path stood: the one file, or the common folder with the
/// number of files.
pub fn set_path(paths: &[PathBuf]) -> String {
    if let [one] = paths {
        return one.display().to_string();
    }
    let dir = paths[0].parent().map(Path::to_path_buf).unwrap_or_default();
    if paths.iter().all(|p| p.parent() == Some(dir.as_path())) {
        format!("{}/ ({} files)", dir.display(), paths.len())
    } else {
        format!("{} files", paths.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_host_pid_and_device_and_fall_back_to_the_file_stem() {
        let f = Path::new("d/report_ault43_854723.sqlite");
        assert_eq!(rank_label(Some("ault43.cscs.ch"), f, &[854_723], 1), "ault43:854723/dev1");
        assert_eq!(rank_label(None, f, &[5, 6], 0), "report_ault43_854723:5+6/dev0");
        assert_eq!(rank_label(Some("n1"), f, &[], 2), "n1/dev2");
    }

    #[test]
    fn a_set_is_named_by_its_folder() {
        let p = [PathBuf::from("a/x.sqlite"), PathBuf::from("a/y.sqlite")];
        assert_eq!(set_path(&p), "a/ (2 files)");
        assert_eq!(set_path(&p[..1]), "a/x.sqlite");
    }
}
