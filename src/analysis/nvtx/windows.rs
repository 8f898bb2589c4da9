//! NVTX windows: a scope's window taken from named NVTX ranges, read on the CPU or the GPU
//! timeline, resolved per process that drives the scope's devices.

use super::*;

/// Which timeline an NVTX window is read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Timeline {
    /// The range's own start and end, on the CPU thread that recorded it.
    #[default]
    Cpu,
    /// The GPU projection: where the trace records one (a PyTorch profiler trace's
    /// `gpu_user_annotation`), the span of the range's recorded projections on the scope's
    /// devices; otherwise first start to last end of the kernels launched inside the range.
    Gpu,
}

/// Where the GPU projections of one window's chosen ranges come from, for a trace that
/// records projections (None for one that does not: all computed, as always).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GpuSource {
    /// Chosen ranges whose recorded projection was used.
    pub recorded: usize,
    /// Chosen ranges without a recorded projection of their own on the devices: computed
    /// from the kernels launched inside them.
    pub computed: usize,
}

/// A scope's window taken from NVTX ranges: `{nvtx: "step 4"}`, `{nvtx: "ProfilerStep#*",
/// index: 5, on: gpu}`. The ranges are those of the processes that launched the scope's
/// kernels; with several processes, the window spans the chosen range of each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NvtxWindow {
    /// The range name: exact, or a pattern where `*` stands for any text.
    pub name: String,
    /// Which matching ranges, counting from 0 in start order on each process; None: the name
    /// must match exactly one range per process. Several give a set of windows.
    pub index: Option<IndexSel>,
    /// CPU range or GPU projection.
    pub on: Timeline,
    /// Only ranges of this domain (id or name).
    pub domain: Option<String>,
}

impl NvtxWindow {
    /// Reads the keys of a claims file's `window:` mapping; an error is (message, hint).
    pub fn from_keys(keys: &[(String, String)]) -> Result<NvtxWindow, (String, String)> {
        let hint = "write `window: {nvtx: \"step 4\"}`, optionally with `index: N` (from 0, in start order; `A-B` or `all` for a set of windows), `project: cpu|gpu` (or `on:`, which YAML 1.1 readers take for a boolean) and `domain: ID|NAME`".to_string();
        let mut w =
            NvtxWindow { name: String::new(), index: None, on: Timeline::Cpu, domain: None };
        let mut named = false;
        let mut timeline: Option<&str> = None;
        for (k, v) in keys {
            match k.as_str() {
                "nvtx" => {
                    if v.trim().is_empty() {
                        return Err(("`nvtx` names a range".into(), hint));
                    }
                    w.name = v.clone();
                    named = true;
                }
                "index" => {
                    w.index = Some(IndexSel::parse(v).ok_or_else(|| {
                        (
                            format!("`index: {v}` is not N, A-B (A <= B, from 0) or all"),
                            hint.clone(),
                        )
                    })?)
                }
                // `project` is `on` under a name no YAML 1.1 reader takes for a boolean.
                "on" | "project" => {
                    if timeline.replace(k.as_str()).is_some() {
                        return Err((
                            "`on` and `project` are one key: give one of them".into(),
                            hint,
                        ));
                    }
                    w.on = match v.trim() {
                        "cpu" => Timeline::Cpu,
                        "gpu" => Timeline::Gpu,
                        _ => return Err((format!("`{k}: {v}` is not cpu or gpu"), hint)),
                    }
                }
                "domain" => w.domain = Some(v.clone()),
                _ => return Err((format!("unknown key `{k}`"), hint)),
            }
        }
        if !named {
            return Err(("a window mapping needs `nvtx: NAME`".into(), hint));
        }
        Ok(w)
    }

    /// Whether a recorded range name matches.
    fn matches(&self, name: &str) -> bool {
        let parts: Vec<&str> = self.name.split('*').collect();
        if parts.len() == 1 {
            return name == self.name;
        }
        let (first, last) = (parts[0], parts[parts.len() - 1]);
        if !name.starts_with(first) || name.len() < first.len() + last.len() {
            return false;
        }
        let mut rest = &name[first.len()..];
        for mid in &parts[1..parts.len() - 1] {
            match rest.find(mid) {
                Some(at) => rest = &rest[at + mid.len()..],
                None => return false,
            }
        }
        rest.ends_with(last)
    }
}

/// Which of the matching ranges a window takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IndexSel {
    /// One, from 0 in start order.
    One(usize),
    /// `A-B`, both included: a set of windows.
    Range(usize, usize),
    /// Every matching range: a set of windows.
    All,
}

impl IndexSel {
    /// Reads `5`, `3-8` or `all`.
    pub fn parse(text: &str) -> Option<IndexSel> {
        let t = text.trim();
        if t == "all" {
            return Some(IndexSel::All);
        }
        if let Some((a, b)) = t.split_once('-') {
            let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            return (a <= b).then_some(IndexSel::Range(a, b));
        }
        t.parse().ok().map(IndexSel::One)
    }

    fn indices(self, matches: usize) -> std::ops::RangeInclusive<usize> {
        match self {
            IndexSel::One(k) => k..=k,
            IndexSel::Range(a, b) => a..=b,
            IndexSel::All => 0..=matches.saturating_sub(1),
        }
    }
}

impl std::fmt::Display for IndexSel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexSel::One(k) => write!(f, "{k}"),
            IndexSel::Range(a, b) => write!(f, "{a}-{b}"),
            IndexSel::All => f.write_str("all"),
        }
    }
}

/// An NVTX window resolved on a trace: the window and the ranges it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedWindow {
    /// The window on the trace's clock.
    pub window: Window,
    /// Per process: (pid, range start, range end) of the chosen range.
    pub ranges: Vec<(i64, i64, i64)>,
    /// Ranges matching the name on each process (the smallest count over processes).
    pub matches: usize,
    /// Its index among them.
    pub index: usize,
    /// On the GPU timeline of a trace that records projections: which rule each chosen
    /// range's projection came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_source: Option<GpuSource>,
}

/// The processes that launched kernels on some devices: what a device or rank scope selects
/// of the CPU side (NVTX ranges and the windows they give).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeProcesses {
    /// Whether `ids` are process keys (`globalPid >> 24`: in a trace set, tagged by file, so
    /// two nodes' equal pids stay apart), read from the kernels' launch keys; else OS pids
    /// from the inventory (the keys were not read).
    pub by_key: bool,
    /// Sorted, distinct.
    pub ids: Vec<i64>,
}

/// [`ScopeProcesses`] of `devices`.
pub fn scope_processes(ctx: &Context, devices: &[i64]) -> ScopeProcesses {
    let k = &ctx.kernels;
    let mut keys: Vec<i64> = devices
        .iter()
        .flat_map(|&d| k.device_rows(d))
        .filter_map(|i| k.launch_key(i).map(|l| l.process))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if !keys.is_empty() {
        return ScopeProcesses { by_key: true, ids: keys };
    }
    let mut pids: Vec<i64> = ctx
        .inventory
        .devices
        .iter()
        .filter(|d| devices.contains(&d.device))
        .flat_map(|d| d.pids.iter().copied())
        .collect();
    pids.sort_unstable();
    pids.dedup();
    ScopeProcesses { by_key: false, ids: pids }
}

/// Resolves an NVTX window over the processes that launched kernels on `devices`: one window,
/// or one per index of a set, in index order.
pub fn resolve_windows(
    w: &NvtxWindow,
    ctx: &Context,
    devices: &[i64],
) -> Result<Vec<ResolvedWindow>, QueryError> {
    let fail = |reason: String, hint: &str| QueryError::Failed { reason, hint: hint.into() };
    let data = ctx.nvtx.as_ref().ok_or_else(|| {
        fail("the NVTX tables were not read".into(), "this is a defect of the planner")
    })?;
    let r = &data.ranges;
    if r.table_absent {
        return Err(fail(
            format!("window `{}`: the trace has no NVTX_EVENTS table", w.name),
            "capture with `nsys profile --trace=cuda,nvtx`, or give the window in seconds",
        ));
    }
    let ScopeProcesses { by_key, ids } = scope_processes(ctx, devices);
    let (keys, pids) = if by_key { (ids, Vec::new()) } else { (Vec::new(), ids) };
    let domain = w.domain.as_ref().map(|d| match d.trim().parse::<i64>() {
        Ok(id) => DomainSel::Id(id),
        Err(_) => DomainSel::Name(d.clone()),
    });
    let mut per: std::collections::BTreeMap<i64, Vec<usize>> = std::collections::BTreeMap::new();
    for i in 0..r.len() {
        let Some(g) = r.global_tid[i] else { continue };
        let pid =
            if by_key { crate::trace::nvtx::process_of(g) } else { crate::trace::nvtx::pid_of(g) };
        if !(if by_key { keys.contains(&pid) } else { pids.contains(&pid) })
            || !w.matches(&r.names()[r.name[i] as usize])
            || domain.as_ref().is_some_and(|d| !d.matches(r.domain_of(i)))
        {
            continue;
        }
        per.entry(pid).or_default().push(i);
    }
    if per.is_empty() {
        return Err(fail(
            format!(
                "window `{}`: no NVTX range of that name on the processes of devices {}",
                w.name,
                crate::scope::format_device_list(devices)
            ),
            "`verdict query nvtx TRACE` lists the range names; `*` in the name matches any text",
        ));
    }
    let counts: Vec<usize> = per.values().map(Vec::len).collect();
    let matches = counts.iter().copied().min().unwrap_or(0);
    let sel = match w.index {
        Some(k) => k,
        None if counts.iter().all(|&c| c == 1) => IndexSel::One(0),
        None => {
            return Err(fail(
                format!(
                    "window `{}`: {} ranges match on one process",
                    w.name,
                    counts.iter().max().unwrap_or(&0)
                ),
                "pick one with `index: N` (from 0, in start order)",
            ));
        }
    };
    let indices = sel.indices(matches);
    if *indices.end() >= matches {
        return Err(fail(
            format!(
                "window `{}`: index {} is past the {matches} matching range(s)",
                w.name,
                indices.end()
            ),
            "indices count from 0 in start order on each process",
        ));
    }
    for rows in per.values_mut() {
        rows.sort_by_key(|&i| (r.start[i], std::cmp::Reverse(r.end[i])));
    }
    indices.map(|index| one_window(w, ctx, data, devices, &per, index, matches)).collect()
}

/// The window of one index: the chosen range of each process.
fn one_window(
    w: &NvtxWindow,
    ctx: &Context,
    data: &NvtxData,
    devices: &[i64],
    per: &std::collections::BTreeMap<i64, Vec<usize>>,
    index: usize,
    matches: usize,
) -> Result<ResolvedWindow, QueryError> {
    let fail = |reason: String, hint: &str| QueryError::Failed { reason, hint: hint.into() };
    let r = &data.ranges;
    // The OS pid of each process (a process key holds it in its low 24 bits).
    let chosen: Vec<(i64, usize)> =
        per.iter().map(|(key, rows)| (key & 0xFF_FFFF, rows[index])).collect();
    let ranges: Vec<(i64, i64, i64)> =
        chosen.iter().map(|&(pid, i)| (pid, r.start[i], r.end[i])).collect();
    let mut gpu_source = None;
    let window = match w.on {
        Timeline::Cpu => Window {
            start_ns: ranges.iter().map(|x| x.1).min().unwrap_or(0),
            end_ns: ranges.iter().map(|x| x.2).max().unwrap_or(0),
        },
        Timeline::Gpu => {
            // The recorded projection of each chosen range that has one of its own on the
            // devices (with those of the ranges inside it); the others computed.
            let recorded = &r.projections;
            let mut span: Option<(i64, i64)> = None;
            let mut widen = |a: i64, b: i64| {
                span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            };
            let mut rows: Vec<usize> = Vec::new();
            for &(_, i) in &chosen {
                let own = r.global_tid[i]
                    .and_then(|tid| recorded.span_of(tid, r.start[i], r.end[i], devices))
                    .filter(|&(_, own)| own);
                match own {
                    Some(((a, b), _)) => widen(a, b),
                    None => rows.push(i),
                }
            }
            if recorded.recorded {
                gpu_source =
                    Some(GpuSource { recorded: chosen.len() - rows.len(), computed: rows.len() });
            }
            // Kernels whose launch one of the remaining ranges encloses: attribute to ranges
            // of that name (outermost), keep those that landed on a chosen row.
            let names: Vec<String> =
                rows.iter().map(|&i| r.names()[r.name[i] as usize].clone()).collect();
            for name in names.iter().collect::<BTreeSet<_>>() {
                let params = AttributionParams {
                    devices: devices.to_vec(),
                    nesting: Nesting::Outermost,
                    rule: NameRule::Verbatim,
                    ranges: RangeFilter {
                        name: Some(NameMatch::Exact(name.clone())),
                        ..RangeFilter::default()
                    },
                    ..AttributionParams::default()
                };
                for o in attribute_each(&ctx.kernels, &data.launches, r, &params).map_err(failed)? {
                    if let Outcome::Range(i) = o.outcome
                        && rows.contains(&i)
                    {
                        widen(o.start_ns, o.end_ns);
                    }
                }
            }
            let (a, b) = span.ok_or_else(|| {
                fail(
                    format!(
                        "window `{}` on the GPU: no kernel of devices {} was launched inside it",
                        w.name,
                        crate::scope::format_device_list(devices)
                    ),
                    "use `on: cpu`, or check that the export has the CUDA runtime table",
                )
            })?;
            Window { start_ns: a, end_ns: b }
        }
    };
    Ok(ResolvedWindow { window, ranges, matches, index, gpu_source })
}

/// Says where the windows taken from NVTX ranges come from: each range of one window, or
/// the first and last of a set.
pub fn note_windows(ev: &mut Evidence, w: &NvtxWindow, rws: &[ResolvedWindow]) {
    let ranges = |rw: &ResolvedWindow| {
        rw.ranges
            .iter()
            .map(|(pid, a, b)| {
                format!(
                    "pid {pid}: {}–{} s",
                    crate::scope::format_seconds(*a),
                    crate::scope::format_seconds(*b)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    // On a trace that records GPU projections: which were used, and which computed.
    let (recorded, computed) = rws
        .iter()
        .filter_map(|rw| rw.gpu_source)
        .fold((0, 0), |(a, b), g| (a + g.recorded, b + g.computed));
    let timeline = match w.on {
        Timeline::Cpu => "cpu",
        Timeline::Gpu if recorded > 0 => "gpu_recorded",
        Timeline::Gpu => "gpu",
    };
    match rws {
        [] => {}
        [rw] => ev.note(
            &format!("note.window_nvtx_{timeline}"),
            &[
                ("name", w.name.clone()),
                ("index", rw.index.to_string()),
                ("matches", rw.matches.to_string()),
                ("window", rw.window.to_string()),
                ("ranges", ranges(rw)),
            ],
        ),
        [first, .., last] => ev.note(
            &format!("note.windows_nvtx_{timeline}"),
            &[
                ("n", rws.len().to_string()),
                ("name", w.name.clone()),
                ("first_index", first.index.to_string()),
                ("last_index", last.index.to_string()),
                ("matches", first.matches.to_string()),
                ("first", first.window.to_string()),
                ("last", last.window.to_string()),
            ],
        ),
    }
    if computed > 0 {
        ev.note(
            "note.nvtx_gpu_computed",
            &[("n", computed.to_string()), ("of", (recorded + computed).to_string())],
        );
    }
}
