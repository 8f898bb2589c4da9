//! The parameters an analysis adopts besides window, semantics and devices: each [`Param`]
//! parses a value from the command line and a claim's `measure` into [`Params`], and gives it
//! back for the command that reproduces a piece of evidence; [`PARAMS`] lists them all.

use super::*;

/// A parameter an analysis adopts besides window, semantics and devices. The same `set`
/// parses it from the command line and from a claim's `measure`; `get` gives it back for the
/// command that reproduces a piece of evidence (None: left out, at its default).
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Key in a claim's `measure` and `--name` on the command line.
    pub name: &'static str,
    /// Placeholder in the help.
    pub value_name: &'static str,
    /// One line for the help.
    pub help: &'static str,
    /// The command line's default, if any.
    pub default: Option<&'static str>,
    /// Parameters it cannot be given with.
    pub conflicts: &'static [&'static str],
    /// Parses a value into the parameters.
    pub set: fn(&mut Params, &str) -> Result<(), String>,
    /// The value as the command line takes it back, or None at the default.
    pub get: fn(&Params) -> Option<String>,
}

impl Serialize for Param {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

/// A kernel-name filter.
#[derive(Debug, Clone)]
pub enum NameFilter {
    /// Substring, case-sensitive.
    Substring(String),
    /// Regular expression (Rust `regex` syntax).
    Regex(regex::Regex),
}

impl NameFilter {
    /// Compiles a regex filter.
    pub fn regex(pattern: &str) -> Result<NameFilter, QueryError> {
        regex::Regex::new(pattern).map(NameFilter::Regex).map_err(|e| {
            // The compiler's message draws a caret diagram over several lines; keep its
            // last line, the actual reason.
            let full = e.to_string();
            let reason =
                full.lines().last().unwrap_or("").trim().trim_start_matches("error: ").to_string();
            QueryError::BadRegex { pattern: pattern.into(), reason }
        })
    }

    /// Whether a name passes.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            NameFilter::Substring(s) => name.contains(s.as_str()),
            NameFilter::Regex(r) => r.is_match(name),
        }
    }

    /// How it is disclosed.
    pub fn describe(&self) -> String {
        match self {
            NameFilter::Substring(s) => format!("name contains `{s}`"),
            NameFilter::Regex(r) => format!("name matches /{}/", r.as_str()),
        }
    }
}

/// Parameters of one query. Each analysis refuses those it does not adopt.
#[derive(Debug, Clone)]
pub struct Params {
    /// The requested window (None: the whole trace).
    pub window: Option<Window>,
    /// How the window selects kernels.
    pub semantics: Semantics,
    /// Devices.
    pub devices: DeviceSel,
    /// Kernel name style (kernels).
    pub names: Option<NameStyle>,
    /// Kernel name filter (kernels).
    pub filter: Option<NameFilter>,
    /// Top-N by total time (kernels).
    pub limit: Option<usize>,
    /// NCCL stream (nccl-skew).
    pub stream: Option<i64>,
    /// Each rank's own NCCL stream, found per rank (nccl-skew).
    pub stream_auto: bool,
    /// Each rank's NCCL stream, given per rank as `rank:stream` (nccl-skew).
    pub stream_map: Option<BTreeMap<i64, i64>>,
    /// Run over N equal splits of the window (or of the devices' kernel span), one sample per
    /// split; any analysis with one value per window.
    pub split: Option<u32>,
    /// Exact range name (nvtx).
    pub exact: Option<String>,
    /// NVTX domain, id or name (nvtx).
    pub domain: Option<String>,
    /// Innermost or outermost enclosing range (nvtx).
    pub nesting: Option<nvtx::Nesting>,
    /// Range name normalisation (nvtx).
    pub normalize: Option<nvtx::NameRule>,
    /// Recording processes (nvtx).
    pub pids: Option<Vec<i64>>,
    /// Recording threads (nvtx).
    pub tids: Option<Vec<i64>>,
    /// The matched instance to decompose, 1-based in time order (nccl-calls).
    pub instance: Option<usize>,
    /// Inside a split, the start of this window when it is not the first: a row (kernel,
    /// copy, NVTX range) that starts before it belongs to an earlier window, where it is
    /// counted; here it adds only wall time to the unions of `overlap` and `copies`, clipped.
    /// Set by [`run_split`] only, so that each row is counted in exactly one split window.
    pub counted_from: Option<i64>,
    /// Whether this window is one tile of a split: cross-rank matching then places each
    /// collective instance in the tile where it starts, never cuts it.
    pub tile: bool,
    /// Where a cross-rank reduce runs (nccl-skew); never disclosed in the evidence, which is
    /// the same on every engine.
    pub engine: crate::engine::Engine,
}

impl Params {
    /// Parameters over all devices and the whole trace.
    pub fn new(devices: DeviceSel) -> Params {
        Params {
            window: None,
            semantics: Semantics::Clip,
            devices,
            names: None,
            filter: None,
            limit: None,
            stream: None,
            stream_auto: false,
            stream_map: None,
            split: None,
            exact: None,
            domain: None,
            nesting: None,
            normalize: None,
            pids: None,
            tids: None,
            instance: None,
            counted_from: None,
            tile: false,
            engine: crate::engine::Engine::Rust,
        }
    }

    /// Whether a row that starts at `start` is counted in this window (see
    /// [`Params::counted_from`]).
    pub fn counts(&self, start: i64) -> bool {
        self.counted_from.is_none_or(|t| start >= t)
    }

    /// Applies one parameter of `spec` from its text, as the command line and a claim's
    /// `measure` give it.
    pub fn set(&mut self, spec: &AnalysisSpec, name: &str, value: &str) -> Result<(), QueryError> {
        let param = spec.param(name).ok_or_else(|| QueryError::NotAdopted {
            analysis: spec.name.into(),
            param: name.into(),
        })?;
        (param.set)(self, value)
            .map_err(|reason| QueryError::BadParam { param: name.into(), reason })
    }
}

/// `names`: group and match kernels by their short (base) or demangled name.
pub const NAMES: Param = Param {
    name: "names",
    value_name: "short|demangled",
    help: "Group and match by the short name (`shortName`, template instances merged) or the demangled name (`demangledName`, with templates and arguments)",
    default: Some("short"),
    conflicts: &[],
    set: |p, v| {
        p.names = Some(match v {
            "short" => NameStyle::Short,
            "demangled" => NameStyle::Demangled,
            _ => return Err(format!("`{v}` is not short or demangled")),
        });
        Ok(())
    },
    get: |p| p.names.filter(|n| *n != NameStyle::Short).map(|n| n.as_str().to_string()),
};

/// `match`: keep kernels whose name contains a text.
pub const MATCH: Param = Param {
    name: "match",
    value_name: "TEXT",
    help: "Keep names that contain TEXT (case-sensitive)",
    default: None,
    conflicts: &["regex"],
    set: |p, v| {
        p.filter = Some(NameFilter::Substring(v.to_string()));
        Ok(())
    },
    get: |p| match &p.filter {
        Some(NameFilter::Substring(s)) => Some(s.clone()),
        _ => None,
    },
};

/// `regex`: keep kernels whose name matches a regular expression.
pub const REGEX: Param = Param {
    name: "regex",
    value_name: "RE",
    help: "Keep names that match the regular expression RE (Rust regex syntax)",
    default: None,
    conflicts: &["match"],
    set: |p, v| {
        p.filter = Some(NameFilter::regex(v).map_err(|e| match e {
            QueryError::BadRegex { reason, .. } => format!("invalid regex `{v}` ({reason})"),
            e => e.to_string(),
        })?);
        Ok(())
    },
    get: |p| match &p.filter {
        Some(NameFilter::Regex(r)) => Some(r.as_str().to_string()),
        _ => None,
    },
};

/// `limit`: the top N names by total time.
pub const LIMIT: Param = Param {
    name: "limit",
    value_name: "N",
    help: "Show the top N names by total time",
    default: Some(kernels::DEFAULT_LIMIT_TEXT),
    conflicts: &[],
    set: |p, v| {
        p.limit = Some(v.trim().parse().map_err(|_| format!("`{v}` is not a whole number"))?);
        Ok(())
    },
    get: |p| p.limit.filter(|l| *l != kernels::DEFAULT_LIMIT).map(|l| l.to_string()),
};

/// `engine`: where the per-rank scan runs (`dask=ADDRESS` is `--cluster ADDRESS`).
pub const ENGINE: Param = Param {
    name: "engine",
    value_name: "rust|dask[=ADDRESS]",
    help: "Where each rank's scan runs: `rust` (default, in process) or `dask` (as --cluster, at ADDRESS, else at DASK_SCHEDULER_ADDRESS); the reduce runs here either way, and the evidence is the same",
    default: None,
    conflicts: &["cluster"],
    set: |p, v| {
        p.engine = crate::engine::Engine::parse(v)?;
        Ok(())
    },
    get: |p| match p.engine {
        crate::engine::Engine::Rust => None,
        ref e => Some(e.as_text()),
    },
};

/// `cluster`: each rank's scan on the workers of a Dask scheduler, the reduce here.
pub const CLUSTER: Param = Param {
    name: "cluster",
    value_name: "ADDRESS",
    help: "Run each rank's scan on the workers of the Dask scheduler at ADDRESS (tcp://HOST:PORT), where the files are, each over a shard of the set, and the reduce here: the same evidence as in process. Workers run this verdict's path, else VERDICT_WORKER_BINARY, and read the files at the paths given here",
    default: None,
    conflicts: &["engine"],
    set: |p, v| {
        p.engine = crate::engine::Engine::parse(&format!("dask={}", v.trim()))
            .map_err(|_| format!("`{v}` is not a scheduler's address (tcp://HOST:PORT)"))?;
        Ok(())
    },
    // Recorded as `--engine dask=ADDRESS`, which says the same.
    get: |_| None,
};

/// `stream`: only the NCCL kernels of one stream, or of each rank's own NCCL stream.
pub const STREAM: Param = Param {
    name: "stream",
    value_name: "S|R:S,...|auto",
    help: "Match only the NCCL kernels of stream S; of each rank's own stream, given as RANK:STREAM pairs (0:7,1:15); or with `auto` of each rank's stream that carries the most of its NCCL kernels (disclosed per rank); default: all NCCL kernels of each rank",
    default: None,
    conflicts: &[],
    set: |p, v| {
        let v = v.trim();
        p.stream = None;
        p.stream_auto = false;
        p.stream_map = None;
        if v == "auto" {
            p.stream_auto = true;
            return Ok(());
        }
        if v.contains(':') {
            let mut map = BTreeMap::new();
            for pair in v.split(',') {
                let (r, s) = pair
                    .split_once(':')
                    .ok_or_else(|| format!("`{pair}` is not RANK:STREAM (as in 0:7,1:15)"))?;
                let parse = |x: &str, what: &str| {
                    x.trim()
                        .parse::<i64>()
                        .map_err(|_| format!("`{x}` in `{pair}` is not a {what} number"))
                };
                if map.insert(parse(r, "rank")?, parse(s, "stream")?).is_some() {
                    return Err(format!("rank {} has two streams", r.trim()));
                }
            }
            p.stream_map = Some(map);
            return Ok(());
        }
        p.stream = Some(
            v.parse()
                .map_err(|_| format!("`{v}` is not an integer, RANK:STREAM pairs or `auto`"))?,
        );
        Ok(())
    },
    get: |p| {
        if p.stream_auto {
            Some("auto".into())
        } else if let Some(m) = &p.stream_map {
            Some(m.iter().map(|(r, s)| format!("{r}:{s}")).collect::<Vec<_>>().join(","))
        } else {
            p.stream.map(|s| s.to_string())
        }
    },
};

/// `name`: keep ranges whose (normalised) name is exactly this.
pub const NAME: Param = Param {
    name: "name",
    value_name: "TEXT",
    help: "Keep ranges whose name (after normalisation) is exactly TEXT",
    default: None,
    conflicts: &["match", "regex"],
    set: |p, v| {
        p.exact = Some(v.to_string());
        Ok(())
    },
    get: |p| p.exact.clone(),
};

/// `domain`: keep ranges of one NVTX domain, by id or name.
pub const DOMAIN: Param = Param {
    name: "domain",
    value_name: "ID|NAME",
    help: "Keep ranges of this NVTX domain: its id (0 is the default domain) or its name (`NCCL`, `domain #3` when unnamed)",
    default: None,
    conflicts: &[],
    set: |p, v| {
        if v.trim().is_empty() {
            return Err("a domain is an id or a name".into());
        }
        p.domain = Some(v.to_string());
        Ok(())
    },
    get: |p| p.domain.clone(),
};

/// `nesting`: attribute a kernel to the innermost or the outermost enclosing range.
pub const NESTING: Param = Param {
    name: "nesting",
    value_name: "innermost|outermost",
    help: "Attribute each kernel to the innermost (latest start) or the outermost (earliest start) of the kept ranges enclosing its launch",
    default: Some("innermost"),
    conflicts: &[],
    set: |p, v| {
        p.nesting = Some(match v {
            "innermost" => nvtx::Nesting::Innermost,
            "outermost" => nvtx::Nesting::Outermost,
            _ => return Err(format!("`{v}` is not innermost or outermost")),
        });
        Ok(())
    },
    get: |p| p.nesting.filter(|n| *n != nvtx::Nesting::Innermost).map(|n| n.as_str().into()),
};

/// `normalize`: group PyTorch op ranges by operator, or keep names as recorded.
pub const NORMALIZE: Param = Param {
    name: "normalize",
    value_name: "pytorch|none",
    help: "pytorch: drop the `, seq = N` and `, op_id = N` parts PyTorch appends to each op range, so calls of one operator group together; none: names as recorded",
    default: Some("pytorch"),
    conflicts: &[],
    set: |p, v| {
        p.normalize = Some(match v {
            "pytorch" => nvtx::NameRule::StripPytorchIds,
            "none" => nvtx::NameRule::Verbatim,
            _ => return Err(format!("`{v}` is not pytorch or none")),
        });
        Ok(())
    },
    get: |p| match p.normalize {
        Some(nvtx::NameRule::Verbatim) => Some("none".into()),
        _ => None,
    },
};

/// Parses a list of ids (`51874`, `51874,51876`, `3-5`).
fn id_list(v: &str) -> Result<Vec<i64>, String> {
    crate::scope::parse_device_list(v).map_err(|e| format!("`{v}`: {e}"))
}

/// `pid`: keep ranges recorded by these processes.
pub const PID: Param = Param {
    name: "pid",
    value_name: "LIST",
    help: "Keep ranges recorded by these process ids (e.g. 51874 or 51874,51876; `verdict inspect` lists them)",
    default: None,
    conflicts: &[],
    set: |p, v| {
        p.pids = Some(id_list(v)?);
        Ok(())
    },
    get: |p| p.pids.as_deref().map(crate::scope::format_device_list),
};

/// `tid`: keep ranges recorded by these threads.
pub const TID: Param = Param {
    name: "tid",
    value_name: "LIST",
    help: "Keep ranges recorded by these thread ids",
    default: None,
    conflicts: &[],
    set: |p, v| {
        p.tids = Some(id_list(v)?);
        Ok(())
    },
    get: |p| p.tids.as_deref().map(crate::scope::format_device_list),
};

/// Every parameter an analysis may adopt.
pub const PARAMS: &[Param] =
    &[NAMES, MATCH, REGEX, LIMIT, STREAM, NAME, DOMAIN, PID, TID, NESTING, NORMALIZE, INSTANCE];

/// `instance`: which matched collective instance to decompose (nccl-calls).
pub const INSTANCE: Param = Param {
    name: "instance",
    value_name: "N",
    help: "Decompose the N-th matched collective instance in time order (1-based); default: the one with the largest start skew",
    default: None,
    conflicts: &[],
    set: |p, v| {
        let n: usize = v
            .trim()
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("`{v}` is not a positive instance number"))?;
        p.instance = Some(n);
        Ok(())
    },
    get: |p| p.instance.map(|n| n.to_string()),
};
