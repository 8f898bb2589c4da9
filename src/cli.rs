//! Command-line types (clap derive) and nothing else: parsing lives here, work in `cmd`.

use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgGroup, ArgMatches, Args, FromArgMatches, Parser, Subcommand};

use crate::analysis::{self, AnalysisSpec, ScopeRule};
use crate::scope::{DeviceSel, Semantics, Window, parse_device_list};

/// A parsed device list (`1-7`, `0,2,4-6`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceList(pub Vec<i64>);

const AFTER_HELP: &str = "\
Examples:
  verdict inspect fixtures/day26/megatron.sqlite --expect-devices 0-7
  verdict query overlap fixtures/day26/megatron.sqlite --device 4 --window 39.964:46.123 --semantics contain
  verdict query nccl-skew fixtures/day26/megatron.sqlite --stream 56 --json
  verdict query nccl-skew 'runs/report_*.sqlite' --stream auto
  verdict check claims/day26-profile-blind.yaml
  verdict draft fixtures/answers/day26-blind.zh-TW.md --out draft.yaml
  verdict render claims/day26-profile-blind.yaml --out out
  verdict verify out/day26-profile-blind.manifest.json

Exit codes: 0 success, 1 audit failed under --strict or drift found by verify, 2 error (bad input,
unreadable trace, a trace verify finds changed or missing).";

/// Audit claims about a GPU profile against an Nsight Systems SQLite export.
#[derive(Debug, Parser)]
#[command(name = "verdict", version = env!("VERDICT_VERSION"), about, after_help = AFTER_HELP, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what a trace holds: schema, devices, streams, time range and coverage.
    ///
    /// Reads the kernel table once; with --expect-devices, lists the expected devices that
    /// ran no kernel (an 8-GPU job whose trace has kernels on devices 1-7 only, say).
    Inspect(InspectArgs),
    /// Run one analysis over a trace and print its evidence with window, devices and
    /// denominators stated.
    #[command(subcommand)]
    Query(QueryCommand),
    /// List the analyses, their parameters and the fields a claim formula may use.
    Analyses,
    /// Judge a claims file against its traces: the verdict table and gates R1-R4.
    ///
    /// Every analysis the file needs runs once per trace; --json prints the evidence ledger
    /// (every part with its evidence, gates, formula and verdict).
    Check(CheckArgs),
    /// Rerun every query a rendered report recorded and compare the evidence.
    ///
    /// Reads OUT/ID.manifest.json and the evidence ledger it names (its sha256 checked),
    /// checks every trace file the ledger read against the sha256 recorded then, reruns each
    /// recorded command (parsed into its query plan, as `verdict query` runs it) and compares
    /// the evidence field by field. Exit 0 with one line when every number is as recorded; 1
    /// on drift, naming the claim, part and number (old -> new); 2 when a trace is missing or
    /// its sha256 differs (naming the trace and both digests) or the set is not the one its
    /// manifest names. Run it from the folder the report was rendered in: the ledger names
    /// traces relative to it.
    Verify(VerifyArgs),
    /// Score many answers (claims files) to one question by one rubric, and compare groups.
    ///
    /// Every answer is judged as `check` judges it; the scores (verdicts, measurable parts that
    /// met evidence, scope errors per gate, stated numbers and arithmetic that do not hold,
    /// causal claims without an A/B comparison, agreement with the answer key) are counted per
    /// answer, summarised per group, and the groups compared with their n, a bootstrap interval
    /// and a rank test. Conditions the eval holds fixed but that differ make the comparison not
    /// controlled.
    Eval(EvalArgs),
    /// Draft a claims file from a prose diagnosis (zh-TW or en), every part unreviewed.
    ///
    /// Each sentence's number, range or multiplier (10–30%, 約 23%, 1.2x, 140 次, 5 ms) becomes
    /// a part: the sentence and its line, a kind proposed from cue words, candidate analyses
    /// and fields, and for a range the condition it states. Dates, versions, names (TP8,
    /// device 4), ordinals and the size of the job are left out and listed at the end. The
    /// draft reads no trace and judges nothing: `check` refuses it until each part is bound and
    /// its `unreviewed` block removed.
    Draft(DraftArgs),
    /// Print the JSON Schema of the claims file, for editors and agents, or of the evidence.
    ///
    /// With a YAML language server, a claims file that starts with
    /// `# yaml-language-server: $schema=claims.schema.json` is checked as it is typed; the
    /// schema covers structure, types, keys and enumerated values (and, with --languages, every
    /// text in each language); `verdict check` does the rest, at each problem's line and column.
    /// `verdict schema evidence` describes the ledger of `check --json` (ID.evidence.json),
    /// derived from the types that write it: required keys, types and enumerated values, and no
    /// key besides them.
    Schema(SchemaArgs),
    /// Render the audit of a claims file as Markdown and PDF, in every language it has.
    ///
    /// Writes ID.LANG.md, ID.LANG.typ and ID.LANG.pdf, ID.evidence.json (the
    /// ledger of `check --json`) and the charts as SVG and PNG into --out. The PDF and the PNG
    /// charts need the `typst` command and the Noto Sans CJK TC font (`verdict doctor` checks
    /// both): without them the default formats write everything else and warn, while an
    /// explicit `--format pdf` or `--format png` is an error.
    Render(RenderArgs),
    /// Manage the report templates.
    #[command(subcommand)]
    Templates(TemplatesCommand),
    /// Check what the PDF and the PNG charts need: the typst found, its version, the CJK fonts, with install
    /// hints for what is missing.
    ///
    /// Exits 0 when `render` can write the PDF and the PNG charts, 1 when something is missing
    /// (the Markdown, ledger and SVG charts never need it).
    Doctor,
    /// Write traces as Parquet: the map step of an audit over many ranks.
    ///
    /// Each TRACE (an nsys `.sqlite` export or a Kineto `.json`/`.json.gz`) becomes a folder
    /// of Parquet files, one per table the analyses read, with the columns they read, times
    /// as 64-bit integer ns, and a manifest (`verdict-extract.json`) naming the source file's
    /// sha256 and every Parquet file's. One TRACE is written to DIR; several, or a quoted
    /// glob, to DIR/NAME, one folder per file, extracted in parallel. Every command reads an
    /// extract (or a folder written by `nsys export --type parquetdir`) as it reads the
    /// trace, with the same evidence; the ledger names the extract and the source's sha256.
    ///
    /// A set's DIR also gets an index, `.verdict-set.json` (a dot file, so that `DIR/*` still
    /// names the members alone): each member folder with its source's path, size and sha256
    /// and its manifest's sha256. When the files were extracted one job each (a job array,
    /// Dask, Spark), `verdict extract --merge DIR` writes that index from the folders.
    Extract(ExtractArgs),
    /// The map of a cluster run, on a worker: scan a shard of a set's files and print each
    /// rank's rows as JSON lines (what `--cluster` runs on every worker; not for use by
    /// hand).
    #[command(hide = true)]
    Map(MapArgs),
    /// Serve the read-only tools to an agent over MCP (JSON-RPC on stdin and stdout).
    ///
    /// Tools: inspect, analyses, query (every analysis, its parameters as the input schema),
    /// check (a claims document inline or by path; the ledger as structured content), schema
    /// and explain (a gate or rule key in en or zh-TW). Traces and claims files are read only
    /// under the roots the client grants and the --root folders; a path outside is a tool
    /// error. Nothing is ever written. docs/agents.md configures the common clients.
    Mcp(McpArgs),
}

/// Arguments of the hidden `map`.
#[derive(Debug, Args)]
pub struct MapArgs {
    /// The origin of the whole set's clock, UTC-epoch ns (absent: one trace on its own clock).
    #[arg(long, value_name = "NS", allow_hyphen_values = true)]
    pub origin: Option<i64>,
    /// The window is one tile of a split.
    #[arg(long)]
    pub tile: bool,
    /// Inside a split, where this tile starts counting (ns on the set's clock).
    #[arg(long, value_name = "NS", allow_hyphen_values = true)]
    pub counted_from: Option<i64>,
    /// `query ANALYSIS [OPTIONS]`, as `verdict query` takes it, then the shard's files.
    #[arg(
        value_name = "QUERY",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true
    )]
    pub query: Vec<String>,
}

/// Arguments of `extract`.
#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The trace files: one, several, or a quoted glob (one folder per file under DIR).
    #[arg(value_name = "TRACE", value_hint = clap::ValueHint::FilePath, required_unless_present = "merge", num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// The folder to write; it must not exist. Nothing is left of it when extraction fails.
    #[arg(long, short, value_name = "DIR", value_hint = clap::ValueHint::DirPath, required_unless_present_any = ["merge", "verify"])]
    pub out: Option<PathBuf>,
    /// Check the extract folder given as TRACE against SOURCE, the trace it was made from:
    /// SOURCE's sha256 must be the one its manifest records, and every table, extracted again
    /// from SOURCE, must have the sha256 its manifest records. Writes nothing.
    #[arg(long, value_name = "SOURCE", value_hint = clap::ValueHint::FilePath, conflicts_with_all = ["out", "merge"])]
    pub verify: Option<PathBuf>,
    /// Index the extracts in DIR's folders (each written by its own `verdict extract`) as one
    /// set: writes DIR/.verdict-set.json, replacing an earlier index.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, conflicts_with_all = ["traces", "out"])]
    pub merge: Option<PathBuf>,
    /// Print each manifest as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// A folder whose traces and claims files the tools may read (repeatable).
    ///
    /// Added to the roots the client grants (MCP roots). Without either, every path is
    /// refused. A relative path in a tool call is read from the first root.
    #[arg(long = "root", value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub roots: Vec<PathBuf>,
}

/// Output formats of `render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Markdown.
    Md,
    /// PDF, through Typst.
    Pdf,
    /// Each chart as PNG too, beside its SVG, through typst (1280 pixels wide).
    Png,
}

/// Arguments of `render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The claims file (YAML; see docs/claims.md).
    #[arg(value_name = "CLAIMS", value_hint = clap::ValueHint::FilePath)]
    pub claims: PathBuf,
    /// Languages to render (default: every language of the claims file).
    #[arg(long, value_name = "LANGS", value_delimiter = ',')]
    pub lang: Vec<String>,
    /// Formats to write (default: md,pdf,png, the last two when typst can make them).
    ///
    /// The ledger and the SVG charts are always written; png adds each chart as PNG.
    #[arg(long, value_enum, value_name = "FORMATS", value_delimiter = ',')]
    pub format: Vec<OutputFormat>,
    /// Make the Markdown's image links absolute: URL, one `/`, the chart's file name.
    ///
    /// URL is an http(s) address or a path from the site root, such as
    /// `https://example.org/posts/day26/` or `/posts/day26/`; the links go to the PNG charts
    /// when they are written, else to the SVGs. Upload the charts there. The PDF keeps its
    /// local SVGs.
    #[arg(long, value_name = "URL", value_parser = parse_image_base)]
    pub image_base: Option<ImageBase>,
    /// Which reports to write, each in every format: full (the whole audit, `ID.LANG.md`),
    /// blog (a post in the article's shape, `ID.LANG.blog.md`), brief (page 1 alone,
    /// `ID.LANG.brief.md`).
    #[arg(
        long,
        value_enum,
        value_name = "PROFILES",
        value_delimiter = ',',
        default_value = "full"
    )]
    pub profile: Vec<Profile>,
    /// Output folder.
    #[arg(long, value_name = "DIR", default_value = "out", value_hint = clap::ValueHint::DirPath)]
    pub out: PathBuf,
    /// A folder of templates that override the built-in ones by name (see `templates eject`).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub templates: Option<PathBuf>,
    /// Exit 1 when the audit fails, as `check --strict` does; the report is written anyway.
    #[arg(long)]
    pub strict: bool,
    /// How long to wait for another render into the same output folder to finish.
    ///
    /// Renders into one folder take turns (a lock file in it); past this many seconds of
    /// waiting, the render fails and writes nothing. 0 fails at once.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub lock_timeout: u64,
    /// Remove the files of this report that the render did not write.
    ///
    /// Another language, profile or format of an earlier run (a PDF when typst is missing
    /// now, say). Without it such files are kept and named on stderr: they are not in the
    /// new `ID.manifest.json`.
    #[arg(long)]
    pub clean: bool,
}

/// `templates` subcommands.
#[derive(Debug, Subcommand)]
pub enum TemplatesCommand {
    /// Write the built-in templates and UI strings into DIR for editing.
    Eject {
        /// A new or empty folder.
        #[arg(value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
        dir: PathBuf,
    },
}

/// Arguments of `schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// What to describe: `claims` (claims files), `eval` (eval files) or `evidence` (the
    /// ledger of `check --json`, ID.evidence.json; --languages does not apply).
    #[arg(value_name = "WHAT", value_parser = ["claims", "eval", "evidence"])]
    pub what: String,
    /// The report's languages (e.g. zh-TW,en): every text must then give exactly these.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub languages: Vec<String>,
}

/// Arguments of `draft`.
#[derive(Debug, Args)]
pub struct DraftArgs {
    /// The answer: a Markdown (or plain text) file.
    #[arg(value_name = "ANSWER", value_hint = clap::ValueHint::FilePath)]
    pub answer: PathBuf,
    /// The answer's language, which the drafted texts keep (default: detected from the text).
    #[arg(long, value_name = "LANG", value_parser = ["en", "zh-TW"])]
    pub lang: Option<String>,
    /// Write the claims file here instead of printing it (never over the answer; over another
    /// existing file only with --force).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub out: Option<PathBuf>,
    /// Replace the file --out names when it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
}

/// Arguments of `verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The manifest of a rendered report set (`ID.manifest.json` in render's --out folder).
    #[arg(value_name = "MANIFEST", value_hint = clap::ValueHint::FilePath)]
    pub manifest: PathBuf,
}

/// Arguments of `eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The eval file (YAML; see docs/eval.md).
    #[arg(value_name = "EVAL", value_hint = clap::ValueHint::FilePath)]
    pub eval: PathBuf,
    /// Print the evaluation as JSON: every answer's scores with what each count stands for,
    /// the groups, their differences and the conditions.
    #[arg(long)]
    pub json: bool,
    /// Write one blind review sheet per answer (Markdown) and the grades CSV to fill into DIR:
    /// answers shuffled by the eval's seed, nothing naming their file, group or conditions.
    ///
    /// A folder that already holds a `grades.csv` or sheets (`S01.md`...) is refused, since
    /// they may be a reviewer's work; `--force` replaces them.
    #[arg(long, value_name = "DIR")]
    pub review_sheets: Option<PathBuf>,
    /// Replace the sheets and `grades.csv` already in the --review-sheets folder.
    #[arg(long, requires = "review_sheets")]
    pub force: bool,
    /// Read filled grades CSVs (one per reviewer), check them, unblind them, and add the human
    /// grades and the reviewers' agreement (Cohen's kappa) to the evaluation.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub grades: Vec<PathBuf>,
    /// Language of the review sheets.
    #[arg(long, value_name = "LANG", default_value = "en")]
    pub lang: String,
    /// Write the eval report into DIR: ID.LANG.md, ID.LANG.typ and, where typst and the CJK
    /// font are installed, ID.LANG.pdf, in every language of the eval; the chart as SVG; and
    /// ID.eval.json (the evaluation of --json).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The claims file (YAML; see docs/claims.md).
    #[arg(value_name = "CLAIMS", value_hint = clap::ValueHint::FilePath)]
    pub claims: PathBuf,
    /// Print the evidence ledger as JSON (the same as --format json).
    #[arg(long)]
    pub json: bool,
    /// What to print: the verdict table (text), the ledger (json), JUnit XML (junit) or
    /// GitHub workflow commands (github).
    ///
    /// junit: one testsuite per claims file, one testcase per part; a failure for a part that
    /// --strict fails on (not supported, a failed gate, a stated number or arithmetic that does
    /// not hold), an error for a failed query, skipped for an unverifiable part or an action.
    /// github: an `::error` annotation at the line and column of each such part, a `::warning`
    /// at each unverifiable one, and, when GITHUB_STEP_SUMMARY names a file, a Markdown summary
    /// appended to it.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        default_value = "text",
        conflicts_with = "json"
    )]
    pub format: CheckFormat,
    /// Exit 1 when a claim is not supported, a gate fails, a query fails, or a stated
    /// number or arithmetic does not hold.
    #[arg(long)]
    pub strict: bool,
    /// Language of the terminal output (one of the claims file's languages).
    #[arg(long, value_name = "LANG", default_value = "en")]
    pub lang: String,
}

/// Output formats of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    /// The verdict table, gates and summary.
    Text,
    /// The evidence ledger.
    Json,
    /// JUnit XML, one testcase per part.
    Junit,
    /// GitHub workflow commands, and a step summary.
    Github,
}

/// Arguments of `inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The `.sqlite` file written by `nsys export --type sqlite` (or a PyTorch profiler
    /// `.json`/`.json.gz` trace, or a folder written by `verdict extract` or `nsys export
    /// --type parquetdir`); several files or a quoted glob make a trace set (one file per
    /// rank or node), shown with its ranks and clock.
    #[arg(value_name = "TRACE", value_hint = clap::ValueHint::FilePath, required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// Devices the job should have, e.g. 0-7; those without kernels are reported missing.
    #[arg(long, value_name = "LIST", value_parser = parse_devices)]
    pub expect_devices: Option<DeviceList>,
    /// Ranks a trace set should have; reported missing when fewer ran kernels.
    #[arg(long, value_name = "N", conflicts_with = "expect_devices", value_parser = clap::value_parser!(u32).range(1..))]
    pub expect_ranks: Option<u32>,
    /// Read the TRACE arguments as a trace set even when they are one file.
    #[arg(long)]
    pub set: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `verdict query ANALYSIS TRACE ...`: one subcommand per analysis of the registry, its
/// options built from the analysis's declared parameters, whose own code parses their values
/// (the same code that reads them from a claim's `measure`).
#[derive(Debug)]
pub struct QueryCommand {
    /// The analysis.
    pub analysis: &'static AnalysisSpec,
    /// The `.sqlite` files: one trace, or a trace set.
    pub traces: Vec<PathBuf>,
    /// Ranks a set should have.
    pub expect_ranks: Option<usize>,
    /// Equal splits of the window, one sample each.
    pub split: Option<u32>,
    /// Read the traces as a set even when they are one file.
    pub force_set: bool,
    /// The window, if any.
    pub window: Option<Window>,
    /// How the window selects.
    pub semantics: Semantics,
    /// Devices the job should have.
    pub expect_devices: Option<DeviceList>,
    /// Print JSON.
    pub json: bool,
    /// `--device`, `--devices` or `--all-devices`, if given.
    pub devices: Option<DeviceSel>,
    /// The analysis's own parameters as given (or at their defaults), `(name, text)`.
    pub params: Vec<(&'static str, String)>,
    /// A window taken from NVTX ranges (`--nvtx-window`, `--nvtx-index`, `--nvtx-on`).
    pub nvtx: Option<analysis::nvtx::NvtxWindow>,
    /// `query compare`: what is compared, and the two sides.
    pub compare: Option<CompareArgs>,
}

/// The arguments of `verdict query compare`.
#[derive(Debug, Clone)]
pub struct CompareArgs {
    /// The analysis each side runs.
    pub of: String,
    /// The metric, a formula over its fields.
    pub metric: String,
    /// Side A's `KEY=VALUE` pairs.
    pub a: Vec<(String, String)>,
    /// Side B's `KEY=VALUE` pairs.
    pub b: Vec<(String, String)>,
    /// The analysis's parameters, `NAME=VALUE`, for both sides.
    pub params: Vec<(String, String)>,
    /// The bootstrap's seed.
    pub seed: u64,
}

/// The keys a side of `query compare` takes.
pub const SIDE_KEYS: &[&str] = &[
    "trace",
    "set",
    "runs",
    "label",
    "devices",
    "expect-devices",
    "expect-ranks",
    "window",
    "nvtx",
    "index",
    "on",
    "project",
    "domain",
    "semantics",
    "split",
];

fn key_value(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("`{s}` is not KEY=VALUE"))?;
    Ok((k.trim().to_string(), v.to_string()))
}

fn side_pair(s: &str) -> Result<(String, String), String> {
    let (k, v) = key_value(s)?;
    if SIDE_KEYS.contains(&k.as_str()) {
        Ok((k, v))
    } else {
        Err(format!("`{k}` is not a side key; keys: {}", SIDE_KEYS.join(", ")))
    }
}

/// `verdict query compare`: two sides, each given as `--a KEY=VALUE` pairs.
fn compare_command() -> clap::Command {
    clap::Command::new(analysis::compare::SPEC.name)
        .about(capitalize(analysis::compare::SPEC.summary))
        .long_about("Compare two sides (A and B) on one metric of another analysis. Each side is a trace (or a trace set: several `trace=` keys or a glob; or, with `runs=true`, several runs, each one sample: the lower median of its windows), its devices, and a window that gives samples: NVTX ranges with `index=all` (one sample per step), `split=N` equal windows, or one window (no test then). The evidence gives each side's distribution (n, median, p10, p90, min, max, mean), the median difference B - A, the Hodges-Lehmann shift with its exact 95% Moses interval and the interval of the ratio B / A, a two-sided Mann-Whitney U test, the pooled rate of a count, the minimum detectable shift, and a 95% percentile bootstrap of the median difference from a fixed, disclosed seed; over kernels, nvtx and copies, the per-name deltas.")
        .arg(Arg::new("of").long("of").value_name("ANALYSIS").required(true).help(format!("The analysis each side runs ({})", analysis::comparable_names())))
        .arg(Arg::new("metric").long("metric").value_name("FORMULA").required(true).help("A formula over its fields, evaluated on each window: total_ns, 'idle_ns / total_ns', wait_share"))
        .arg(Arg::new("a").long("a").value_name("KEY=VALUE").required(true).action(ArgAction::Append).value_parser(side_pair).help("Side A: trace=PATH (repeat, or a quoted glob, for a set; set=true for a set of one file; runs=true: each trace is one run, one sample), label=NAME, devices=LIST, expect-devices=LIST, expect-ranks=N, window=START:END, nvtx=NAME, index=N|A-B|all, on=cpu|gpu (or project=cpu|gpu), domain=D, semantics=clip|contain, split=N; several devices of a per-device analysis: one comparison per device"))
        .arg(Arg::new("b").long("b").value_name("KEY=VALUE").required(true).action(ArgAction::Append).value_parser(side_pair).help("Side B, with the same keys"))
        .arg(Arg::new("param").long("param").value_name("NAME=VALUE").action(ArgAction::Append).value_parser(key_value).help("A parameter of the compared analysis for both sides, as its option takes it (stream=auto, match=flash)"))
        .arg(Arg::new("seed").long("seed").value_name("N").value_parser(clap::value_parser!(u64)).help("The bootstrap's seed (default 8531350844713694241, disclosed in the evidence)"))
        .arg(Arg::new("json").long("json").action(ArgAction::SetTrue).help("Print the evidence as JSON (the stable contract documented in the README)"))
}

impl FromArgMatches for QueryCommand {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = m.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        let analysis = analysis::spec(name)
            .filter(|a| a.is_query())
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        if analysis.name == analysis::compare::SPEC.name {
            let pairs = |k: &str| -> Vec<(String, String)> {
                sub.get_many::<(String, String)>(k).into_iter().flatten().cloned().collect()
            };
            return Ok(QueryCommand {
                analysis,
                traces: Vec::new(),
                expect_ranks: None,
                split: None,
                force_set: false,
                window: None,
                semantics: Semantics::Clip,
                expect_devices: None,
                json: sub.get_flag("json"),
                devices: None,
                params: Vec::new(),
                nvtx: None,
                compare: Some(CompareArgs {
                    of: sub.get_one::<String>("of").cloned().unwrap_or_default(),
                    metric: sub.get_one::<String>("metric").cloned().unwrap_or_default(),
                    a: pairs("a"),
                    b: pairs("b"),
                    params: pairs("param"),
                    seed: sub.get_one::<u64>("seed").copied().unwrap_or(crate::stats::DEFAULT_SEED),
                }),
            });
        }
        let devices = if let Some(n) = sub.get_one::<i64>("device") {
            Some(DeviceSel::Set(vec![*n]))
        } else if let Some(v) = sub.get_one::<DeviceList>("devices") {
            Some(DeviceSel::Set(v.0.clone()))
        } else if sub.get_flag("all-devices") {
            Some(DeviceSel::All)
        } else {
            None
        };
        Ok(QueryCommand {
            analysis,
            traces: sub.get_many::<PathBuf>("trace").into_iter().flatten().cloned().collect(),
            expect_ranks: sub.get_one::<u32>("expect-ranks").map(|n| *n as usize),
            split: sub.get_one::<u32>("split").copied(),
            force_set: sub.get_flag("set"),
            window: sub.get_one::<Window>("window").copied(),
            semantics: sub.get_one::<Semantics>("semantics").copied().unwrap_or(Semantics::Clip),
            expect_devices: sub.get_one::<DeviceList>("expect-devices").cloned(),
            json: sub.get_flag("json"),
            devices,
            params: analysis
                .params
                .iter()
                .filter_map(|p| sub.get_one::<String>(p.name).map(|v| (p.name, v.clone())))
                .collect(),
            compare: None,
            nvtx: match sub.get_one::<String>("nvtx-window") {
                None => None,
                Some(name) => {
                    let mut keys = vec![("nvtx".to_string(), name.clone())];
                    for k in ["index", "on", "domain"] {
                        if let Some(v) = sub.get_one::<String>(&format!("nvtx-{k}")) {
                            keys.push((k.to_string(), v.clone()));
                        }
                    }
                    Some(analysis::nvtx::NvtxWindow::from_keys(&keys).map_err(|(m, h)| {
                        clap::Error::raw(
                            clap::error::ErrorKind::ValueValidation,
                            format!("--nvtx-window: {m}\n  hint: {h}\n"),
                        )
                    })?)
                }
            },
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = QueryCommand::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for QueryCommand {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        let mut cmd = cmd.subcommand_required(true).arg_required_else_help(true);
        for a in analysis::ANALYSES.iter().filter(|a| a.is_query()) {
            cmd = cmd.subcommand(query_command(a));
        }
        cmd.subcommand(compare_command())
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        QueryCommand::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        analysis::spec(name).is_some_and(|a| a.is_query())
    }
}

/// The subcommand of one analysis: the options every query shares, then its own.
fn query_command(a: &'static AnalysisSpec) -> clap::Command {
    let devices_help = match a.scope {
        ScopeRule::Ranks => {
            "Ranks to compare (devices), e.g. 1-7 or 0,2,4-6; default: every device with kernels"
        }
        _ => "A device set, e.g. 1-7 or 0,2,4-6",
    };
    let mut c = clap::Command::new(a.name)
        .about(capitalize(a.summary))
        .arg(
            Arg::new("trace")
                .value_name("TRACE")
                .required(true)
                .num_args(1..)
                .value_parser(clap::value_parser!(PathBuf))
                .value_hint(clap::ValueHint::FilePath)
                .help("The `.sqlite` file written by `nsys export --type sqlite` (or a PyTorch profiler `.json`/`.json.gz` trace, or a folder of Parquet tables); several files or a quoted glob make a trace set")
                .long_help("The `.sqlite` file written by `nsys export --type sqlite`, or a PyTorch profiler (Kineto) trace, `.json` or `.json.gz` as torch.profiler writes it (told by content; see docs/kineto.md), or a folder written by `verdict extract` or by `nsys export --type parquetdir` (the same evidence; see `verdict extract --help`).\n\nSeveral files (one per rank or node), or a quoted glob such as 'runs/*.sqlite', make a trace set: the files are read in parallel, put on one clock (UTC from --ts-normalize exports, else each file's session start) with 0 at the earliest capture start, and their devices numbered as ranks over the files in sorted order; device options then select ranks (see `verdict inspect` on the set for their labels)."),
        )
        .arg(
            Arg::new("window")
                .long("window")
                .value_name("START:END")
                .value_parser(parse_window)
                .help("Time window START:END in seconds on the trace's clock, parsed exactly (39.964:46.123)")
                .long_help("Time window START:END in seconds on the trace's clock, parsed exactly (39.964:46.123).\n\nWithout it the whole trace is used."),
        )
        .arg(
            Arg::new("nvtx-window")
                .long("nvtx-window")
                .value_name("NAME")
                .conflicts_with("window")
                .help("Take the window from the NVTX range NAME (`*` matches any text) on the processes of the devices")
                .long_help("Take the window from the NVTX range NAME (`*` matches any text) on the processes that launched the devices' kernels; with several processes the window spans the chosen range of each. The evidence says which ranges it used."),
        )
        .arg(
            Arg::new("nvtx-index")
                .long("nvtx-index")
                .value_name("N")
                .requires("nvtx-window")
                .help("Which matching range, from 0 in start order (needed when several match)"),
        )
        .arg(
            Arg::new("nvtx-on")
                .long("nvtx-on")
                .value_name("cpu|gpu")
                .requires("nvtx-window")
                .help("cpu: the range itself; gpu: first start to last end of the kernels launched inside it (a PyTorch profiler trace: the range's recorded GPU projection where it has one)"),
        )
        .arg(
            Arg::new("nvtx-domain")
                .long("nvtx-domain")
                .value_name("ID|NAME")
                .requires("nvtx-window")
                .help("Only ranges of this NVTX domain, by id or by name"),
        )
        .arg(
            Arg::new("split")
                .long("split")
                .value_name("N")
                .value_parser(clap::value_parser!(u32).range(2..=i64::from(analysis::MAX_SPLITS)))
                .conflicts_with("nvtx-window")
                .help("Run over N equal windows tiling the window (or the devices' kernel span), one sample each")
                .long_help("Run over N equal windows tiling the window (or, without one, the kernel span of the devices): one sample per window, with min, median, p90 and max over them. The boundaries are exact integers (a + len * i / N). Not with --nvtx-window, whose ranges are already a set of windows."),
        )
        .arg(
            Arg::new("semantics")
                .long("semantics")
                .value_name("SEMANTICS")
                .value_parser(clap::builder::EnumValueParser::<Semantics>::new())
                .default_value("clip")
                .help("How the window selects kernels")
                .long_help("How the window selects kernels.\n\nclip: kernels intersecting the window, clipped to it; the total is the window length. contain: kernels fully inside the window, unclipped; the total is the span of the kept kernels (the semantics of nsys-ai 0.3.0 --trim). Cross-rank matching (nccl-skew, nccl-calls) never clips a kernel: with clip a window that cuts a collective instance (some ranks' kernels in it, others not) leaves every cross-rank number null and fails gate R2; with contain only the instances wholly inside are kept, and the ones left out are counted."),
        )
        .arg(
            Arg::new("expect-devices")
                .long("expect-devices")
                .value_name("LIST")
                .value_parser(parse_devices)
                .help("Devices the job should have, e.g. 0-7; disclosed as missing when they ran no kernel"),
        )
        .arg(
            Arg::new("set")
                .long("set")
                .action(ArgAction::SetTrue)
                .help("Read the TRACE arguments as a trace set even when they are one file (its devices numbered as ranks from 0)"),
        )
        .arg(
            Arg::new("expect-ranks")
                .long("expect-ranks")
                .value_name("N")
                .value_parser(clap::value_parser!(u32).range(1..))
                .conflicts_with("expect-devices")
                .help("Ranks a trace set should have; disclosed as missing when fewer ran kernels"),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("Print the evidence as JSON (the stable contract documented in the README)"),
        )
        .arg(
            Arg::new("device")
                .long("device")
                .value_name("N")
                .value_parser(clap::value_parser!(i64))
                .help("One device (nsys deviceId)"),
        )
        .arg(
            Arg::new("devices")
                .long("devices")
                .value_name("LIST")
                .value_parser(parse_devices)
                .help(devices_help),
        )
        .arg(
            Arg::new("all-devices")
                .long("all-devices")
                .action(ArgAction::SetTrue)
                .help("Every device with kernels"),
        )
        .group(ArgGroup::new("device-scope").args(["device", "devices", "all-devices"]).multiple(false));
    for p in a.params {
        let mut arg = Arg::new(p.name).long(p.name).value_name(p.value_name).help(p.help);
        if let Some(d) = p.default {
            arg = arg.default_value(d);
        }
        if !p.conflicts.is_empty() {
            arg = arg.conflicts_with_all(p.conflicts);
        }
        c = c.arg(arg);
    }
    c
}

/// A summary line as a help sentence.
fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().collect::<String>() + c.as_str())
}

fn parse_window(s: &str) -> Result<Window, String> {
    Window::parse(s).map_err(|e| format!("{e}\n  hint: {}", e.hint()))
}

fn parse_image_base(s: &str) -> Result<ImageBase, String> {
    ImageBase::parse(s).map_err(|e| format!("{}\n  hint: {}", e.message, e.hint))
}

fn parse_devices(s: &str) -> Result<DeviceList, String> {
    parse_device_list(s).map(DeviceList).map_err(|e| format!("{e}\n  hint: {}", e.hint()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}

/// Where the Markdown's images are served from (`render --image-base`): an `http://` or
/// `https://` URL with a host, or a path from the site root (`/posts/day26/`). Image links
/// become this base, one `/`, and the chart's file name, whether or not the base ends in `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageBase(String);

impl ImageBase {
    /// Checks a base: http(s) with a host, or starting with one `/` (not `//`, which names
    /// another host); no space, control character, `<`, `>`, `(`, `)`, `\`, `?` or `#` (a
    /// query or fragment cannot precede a file name, and the others would end or break a
    /// Markdown link), and no bidirectional or invisible control.
    pub fn parse(s: &str) -> Result<ImageBase, crate::Hinted> {
        let hint = "pass an http(s) URL or a path from the site root, such as `https://example.org/posts/day26/` or `/posts/day26/`";
        let lower = s.to_ascii_lowercase();
        let rest = ["https://", "http://"]
            .iter()
            .find_map(|p| lower.starts_with(p).then(|| &s[p.len()..]));
        let why = match rest {
            Some(r) if r.split('/').next().is_none_or(str::is_empty) => Some("it has no host"),
            Some(_) => None,
            // `//host/x` is protocol-relative: the images would come from another host.
            None if s.starts_with("//") => {
                Some("it starts with `//`, which names another host (protocol-relative)")
            }
            None if s.starts_with('/') => None,
            None => Some("it is neither an http(s) URL nor a path from the site root"),
        };
        let why = why.or_else(|| {
            s.chars()
                .any(|c| c.is_whitespace() || c.is_control() || "<>()\\?#".contains(c))
                .then_some("it holds a space, a control character or one of `< > ( ) \\ ? #`")
        });
        let why = why.or_else(|| {
            s.chars().any(invisible).then_some(
                "it holds a bidirectional or invisible control (shown as an escape), which makes the address read as another",
            )
        });
        match why {
            Some(why) => {
                Err(crate::Hinted::new(format!("`{s}` is not an image base: {why}"), hint))
            }
            None => Ok(ImageBase(s.trim_end_matches('/').to_string())),
        }
    }

    /// The address of a file under this base.
    pub fn join(&self, file: &str) -> String {
        format!("{}/{file}", self.0)
    }
}

/// Whether `c` is a bidirectional control or a character that shows nothing (zero-width
/// spaces and joiners, the soft hyphen, word joiners and invisible operators, the byte-order
/// mark): in an address they make it read as another.
fn invisible(c: char) -> bool {
    crate::visible::is_hidden(c)
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// Which sections a report holds, for which reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// The whole audit: decision brief, verdicts, scope, claims, misreadings, provenance.
    Full,
    /// A post in the article's order, with the claims file's `narrative:`: conditions,
    /// prompt, candidates, verdicts, before and after, misreadings, closing.
    Blog,
    /// Page 1 alone: the answer, the bound, open items, sources and conditions.
    Brief,
}

impl Profile {
    /// The name in files and templates.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Blog => "blog",
            Profile::Brief => "brief",
        }
    }

    /// The file stem of a language's report: `ID.LANG` for the full audit, else
    /// `ID.LANG.PROFILE`.
    pub fn stem(self, id: &str, lang: &str) -> String {
        match self {
            Profile::Full => format!("{id}.{lang}"),
            p => format!("{id}.{lang}.{}", p.as_str()),
        }
    }
}
