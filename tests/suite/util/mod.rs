//! Helpers shared by the integration tests: running the `verdict` binary, fixture paths,
//! read-only access to traces for independent reference computations, and file snapshots.
//!
//! Each test crate uses a different subset, hence the `dead_code` allowance.

#![allow(dead_code)]

pub(crate) mod reference;
pub(crate) mod sql;
pub(crate) mod typst;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Mutex, OnceLock};

use assert_cmd::Command;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The crate root.
pub(crate) fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A committed fixture, by path relative to `fixtures/` (e.g. `nsys-ai/mock.sqlite`).
pub(crate) fn fixture(rel: &str) -> PathBuf {
    let p = manifest_dir().join("fixtures").join(rel);
    assert!(p.is_file(), "fixture {} is missing", p.display());
    p
}

/// `../shared/traces` next to the crate, when it exists (it holds unlicensed traces that are
/// read in place and never committed). Tests that need it return early when it is `None`.
pub(crate) fn shared_traces() -> Option<PathBuf> {
    let p = manifest_dir().join("..").join("shared").join("traces");
    p.is_dir().then_some(p)
}

/// Prints why a test on unlicensed shared data did not run.
pub(crate) fn skip_no_shared(test: &str) {
    eprintln!(
        "{test}: ../shared/traces does not exist; skipped (unlicensed data is never committed)"
    );
}

/// The `verdict` binary built by cargo for this test run, laying text out for 100 columns
/// whatever the terminal the tests run from.
pub(crate) fn verdict() -> Command {
    let mut cmd =
        Command::cargo_bin("verdict").expect("the verdict binary is built for integration tests");
    cmd.env("COLUMNS", "100");
    cmd
}

/// Runs `verdict` with `args` (in `cwd` when given) and returns its raw output.
pub(crate) fn run_in(cwd: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = verdict();
    cmd.args(args);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    cmd.output().expect("verdict runs")
}

/// Runs `verdict` with `args`.
pub(crate) fn run(args: &[&str]) -> Output {
    run_in(None, args)
}

/// Runs `verdict ... --json`-style arguments, asserts exit code 0 and an empty stderr free
/// of panics, and parses stdout as JSON.
pub(crate) fn run_json(args: &[&str]) -> Value {
    run_json_in(None, args)
}

/// [`run_json`] in a working directory.
pub(crate) fn run_json_in(cwd: Option<&Path>, args: &[&str]) -> Value {
    let out = run_in(cwd, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "verdict {args:?} failed with {:?}\nstderr:\n{stderr}",
        out.status.code()
    );
    assert!(!stderr.contains("panicked"), "verdict {args:?} panicked:\n{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verdict {args:?} did not print JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Display columns of a line of terminal text: a CJK character takes two.
pub(crate) fn display_width(line: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(line)
}

/// The display columns `[start, end)` of each column of the terminal table whose header line
/// starts with `header`, read from the rule of dashes under the header.
pub(crate) fn table_columns(text: &str, header: &str) -> Vec<(usize, usize)> {
    let rule = text
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .find(|l| l.starts_with('-'))
        .unwrap_or_else(|| panic!("a table under `{header}`:\n{text}"));
    let mut cols = Vec::new();
    let mut start = None;
    for (i, c) in rule.char_indices().chain([(rule.len(), ' ')]) {
        match (c, start) {
            ('-', None) => start = Some(i),
            (' ', Some(s)) => {
                cols.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    cols
}

/// The text of `line` in display columns `[start, end)`, trimmed; a character belongs to the
/// column it starts in.
pub(crate) fn display_slice(line: &str, (start, end): (usize, usize)) -> String {
    let mut col = 0;
    let mut out = String::new();
    for c in line.chars() {
        if (start..end).contains(&col) {
            out.push(c);
        }
        col += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
    }
    out.trim().to_string()
}

/// The cells of the rows of the terminal table whose header line starts with `header`, one row
/// for each of `row_starts` (how its first cell begins): the lines from the one that starts so
/// to a blank line or the next row, cut at the table's columns, the pieces of each cell joined
/// with spaces.
pub(crate) fn table_rows(text: &str, header: &str, row_starts: &[&str]) -> Vec<Vec<String>> {
    let cols = table_columns(text, header);
    let lines: Vec<&str> = text.lines().skip_while(|l| !l.starts_with(header)).collect();
    row_starts
        .iter()
        .map(|start| {
            let first = lines
                .iter()
                .position(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("a table row starting `{start}`:\n{text}"));
            let block: Vec<&str> = lines[first..]
                .iter()
                .enumerate()
                .take_while(|(k, l)| {
                    !l.is_empty() && (*k == 0 || !row_starts.iter().any(|s| l.starts_with(s)))
                })
                .map(|(_, l)| *l)
                .collect();
            cols.iter()
                .map(|&c| {
                    let pieces: Vec<String> = block
                        .iter()
                        .map(|l| display_slice(l, c))
                        .filter(|p| !p.is_empty())
                        .collect();
                    pieces.join(" ")
                })
                .collect()
        })
        .collect()
}

/// A path as a `&str` for argument lists.
pub(crate) fn s(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// Lowercase hex sha256 of bytes, written by hand from the digest.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 0x0f)] as char);
    }
    out
}

/// sha256 of a file's bytes.
pub(crate) fn sha256_file(path: &Path) -> String {
    sha256_hex(&std::fs::read(path).expect("readable file"))
}

/// sha256 of a file that no test changes (a fixture or a shared trace), computed once per
/// test binary: hashing is slow in a debug build.
pub(crate) fn sha256_cached(path: &Path) -> String {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(h) = cache.lock().unwrap().get(path) {
        return h.clone();
    }
    let h = sha256_file(path);
    cache.lock().unwrap().insert(path.to_path_buf(), h.clone());
    h
}

/// Opens a trace strictly read-only (`mode=ro&immutable=1`): no lock, journal or WAL file.
pub(crate) fn open_ro(path: &Path) -> Connection {
    let uri = format!("file:{}?mode=ro&immutable=1", path.display());
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap_or_else(|e| panic!("cannot open {} read-only: {e}", path.display()))
}

/// One entry of a directory snapshot: size, sha256 (files only) and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// `dir`, `file` or `other`.
    pub kind: &'static str,
    /// Bytes.
    pub len: u64,
    /// sha256 of a file's bytes (empty for directories).
    pub sha256: String,
    /// Modification time.
    pub modified: Option<std::time::SystemTime>,
}

/// Every entry of a directory (one level), by name, with the bytes of each file hashed.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<String, Entry> {
    snapshot_with(dir, true)
}

/// Every entry of a directory by name with kind, size and modification time, hashing the
/// files' bytes only when `hash` is set.
pub(crate) fn snapshot_with(dir: &Path, hash: bool) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("readable dir") {
        let e = e.expect("dir entry");
        let meta = std::fs::symlink_metadata(e.path()).expect("metadata");
        let kind = if meta.is_dir() {
            "dir"
        } else if meta.is_file() {
            "file"
        } else {
            "other"
        };
        let sha256 = if hash && meta.is_file() { sha256_file(&e.path()) } else { String::new() };
        out.insert(
            e.file_name().to_string_lossy().into_owned(),
            Entry { kind, len: meta.len(), sha256, modified: meta.modified().ok() },
        );
    }
    out
}

/// Formats ns as seconds with only the decimals needed (`60111513113` -> `60.111513113`).
pub(crate) fn seconds(ns: i64) -> String {
    let whole = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{}", format!("{frac:09}").trim_end_matches('0'))
    }
}

/// An integer field of a JSON object, with a message naming it.
pub(crate) fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or_else(|| panic!("`{key}` is not an integer in {v}"))
}

/// Wall time covered by compute only, NCCL only, and both, for intervals `(start, end, nccl)`:
/// a brute-force reference that cuts the timeline at every start and end point and classifies
/// each elementary segment by how many compute and NCCL kernels cover it. It shares no code or
/// method with the tool's merge-and-intersect interval algebra.
pub(crate) fn sweep(intervals: &[(i64, i64, bool)]) -> (i64, i64, i64) {
    let mut points: Vec<i64> = intervals.iter().flat_map(|&(s, e, _)| [s, e]).collect();
    points.sort_unstable();
    points.dedup();
    let mut dc = vec![0i64; points.len()];
    let mut dn = vec![0i64; points.len()];
    for &(s, e, nccl) in intervals {
        let i = points.binary_search(&s).unwrap();
        let j = points.binary_search(&e).unwrap();
        let d = if nccl { &mut dn } else { &mut dc };
        d[i] += 1;
        d[j] -= 1;
    }
    let (mut c, mut n) = (0i64, 0i64);
    let (mut compute_only, mut nccl_only, mut both) = (0i64, 0i64, 0i64);
    for i in 0..points.len().saturating_sub(1) {
        c += dc[i];
        n += dn[i];
        let len = points[i + 1] - points[i];
        match (c > 0, n > 0) {
            (true, true) => both += len,
            (true, false) => compute_only += len,
            (false, true) => nccl_only += len,
            (false, false) => {}
        }
    }
    if let (Some(lc), Some(ln)) = (dc.last(), dn.last()) {
        assert_eq!((c + lc, n + ln), (0, 0), "sweep is balanced");
    }
    (compute_only, nccl_only, both)
}

/// The rank C of the Moses interval of m against n values at 95%: the largest C with
/// 2 P(U <= C - 1) <= 5%, P from the count of the C(m + n, m) ways to give A its ranks, by
/// their rank sum (U = rank sum - m (m + 1) / 2).
pub(crate) fn moses_rank(m: usize, n: usize) -> usize {
    // ways[k][s]: subsets of size k of the ranks seen so far with sum s.
    let top = (m + n) * (m + n + 1) / 2;
    let mut ways = vec![vec![0u128; top + 1]; m + 1];
    ways[0][0] = 1;
    for r in 1..=m + n {
        for k in (1..=m.min(r)).rev() {
            for s in (r..=top).rev() {
                ways[k][s] += ways[k - 1][s - r];
            }
        }
    }
    let base = m * (m + 1) / 2;
    let counts: Vec<u128> = (base..=base + m * n).map(|s| ways[m][s]).collect();
    let total: u128 = counts.iter().sum();
    let mut cum = 0u128;
    let mut c = 0;
    for (u, k) in counts.iter().enumerate() {
        cum += k;
        if 2 * cum * 100 > 5 * total {
            break;
        }
        c = u + 1;
    }
    c
}

/// The options of an in-process render of both languages' full report with a fixed date, for
/// snapshots (Markdown and Typst; the PDF is not run).
pub(crate) fn snapshot_render_options() -> verdict::render::report::Options {
    verdict::render::report::Options {
        langs: vec!["zh-TW".into(), "en".into()],
        markdown: true,
        pdf: verdict::render::report::Pdf::Required,
        png: verdict::render::report::Pdf::No,
        image_base: None,
        out: PathBuf::from("out"),
        templates: None,
        timestamp: 0,
        profiles: vec![verdict::render::report::Profile::Full],
        render_date: Some("2026-09-03".into()),
        lock_timeout: std::time::Duration::ZERO,
        clean: false,
        interrupt: Default::default(),
    }
}

/// A rendered file with the tool's build commit blanked, so a committed example compares equal
/// to a render by a later build of the same output: the full commit (`"build": "<40 hex>"`,
/// the provenance line) and the short one of page 1 (`build 1a2b3c4d5e6f`). A PDF compares by
/// its text (`pdftotext -layout`) and page count; None when pdftotext is missing.
pub(crate) fn without_build(name: &str, bytes: &[u8]) -> Option<Vec<u8>> {
    let text = if name.ends_with(".pdf") {
        let dir = tempfile::tempdir().unwrap();
        let pdf = dir.path().join("f.pdf");
        std::fs::write(&pdf, bytes).unwrap();
        let out = std::process::Command::new("pdftotext")
            .args(["-layout"])
            .arg(&pdf)
            .arg("-")
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else if name.ends_with(".png") {
        return Some(bytes.to_vec());
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    };
    // The full commit anywhere (a provenance line, the ledger's `build`), and the short one
    // after its word on page 1.
    let full = regex::Regex::new(r"\b[0-9a-f]{40}(\\?\+modified)?\b").unwrap();
    let short = regex::Regex::new(r"(build|建置) [0-9a-f]{12}(\\?\+modified)?").unwrap();
    let text = full.replace_all(&text, "<build>");
    Some(short.replace_all(&text, "$1 <build>").into_owned().into_bytes())
}

/// SplitMix64 and Lemire's bounded draw, written again from their papers (independent of the
/// crate's own): the bootstrap's draws are disclosed by their seed so anyone can redo them,
/// and generated test workloads are the same on every run.
pub(crate) struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw from `0..n`, unbiased (Lemire's multiply-and-reject).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        let mut m = u128::from(self.next()) * u128::from(n);
        if (m as u64) < n {
            let t = n.wrapping_neg() % n;
            while (m as u64) < t {
                m = u128::from(self.next()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
}

/// The note of `key` in a piece of evidence; panics, showing the notes, when there is none.
pub(crate) fn note<'a>(ev: &'a Value, key: &str) -> &'a Value {
    ev["notes"]
        .as_array()
        .and_then(|a| a.iter().find(|n| n["key"] == key))
        .unwrap_or_else(|| panic!("no note `{key}` among {}", ev["notes"]))
}

/// The places a query's per-rank scan can run besides the process, as options: the Dask
/// scheduler at `dask`, if given, by `--cluster` and by its alias `--engine dask=`.
pub(crate) fn engines(dask: Option<&str>) -> Vec<[String; 2]> {
    dask.map(|a| [["--cluster".into(), a.into()], ["--engine".into(), format!("dask={a}")]])
        .into_iter()
        .flatten()
        .collect()
}

/// Runs `verdict ARGS` (a query printing JSON) on the Rust engine and on every engine of
/// [`engines`]: each must print the same bytes. Then runs it in process with the SQL
/// specification as the reduce ([`sql::SQL`]), which must give the same evidence as the Rust
/// loop. Returns the evidence.
pub(crate) fn run_json_on_engines(args: &[&str], dask: Option<&str>) -> Value {
    let reference = run(args);
    let text = String::from_utf8_lossy(&reference.stdout).into_owned();
    assert!(
        reference.status.success(),
        "verdict {args:?} failed:\n{}",
        String::from_utf8_lossy(&reference.stderr)
    );
    for engine in engines(dask) {
        let mut with = args.to_vec();
        with.extend(engine.iter().map(String::as_str));
        let out = run(&with);
        assert!(
            out.status.success(),
            "verdict {with:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = String::from_utf8_lossy(&out.stdout);
        if got != text {
            let at = got.lines().zip(text.lines()).position(|(a, b)| a != b);
            panic!(
                "verdict {with:?} differs from the Rust reduce at line {at:?}:\n{}\n--- rust:\n{}",
                at.and_then(|i| got.lines().nth(i)).unwrap_or(""),
                at.and_then(|i| text.lines().nth(i)).unwrap_or("")
            );
        }
    }
    same_evidence_on_sql(args);
    serde_json::from_str(&text).expect("JSON")
}

/// Runs the query `verdict ARGS` in process over one load of its traces, with the Rust loop and
/// with the SQL specification as the reduce: both must give the same evidence.
pub(crate) fn same_evidence_on_sql(args: &[&str]) {
    use verdict::cli::{Cli, Command};
    use verdict::engine::Engine;
    let argv = std::iter::once("verdict").chain(args.iter().copied());
    let cli = <Cli as clap::Parser>::try_parse_from(argv)
        .unwrap_or_else(|e| panic!("verdict {args:?} does not parse: {e}"));
    let Command::Query(q) = cli.command else { panic!("verdict {args:?} is not a query") };
    let plan = verdict::plan::QueryPlan::from_command(&q)
        .unwrap_or_else(|e| panic!("verdict {args:?}: {e} ({})", e.hint));
    let (_, ctx) = plan.load().unwrap_or_else(|e| panic!("verdict {args:?}: {e:#}"));
    let json = |engine: Engine| {
        let name = engine.as_text();
        let mut on = plan.clone();
        on.params.engine = engine;
        let ev = on.run(&ctx).unwrap_or_else(|e| {
            panic!("verdict {args:?} on {name}: {e} ({})", e.hint().unwrap_or_default())
        });
        serde_json::to_string_pretty(&ev).unwrap()
    };
    let (rust, sql) = (json(Engine::Rust), json(Engine::Supplied(sql::SQL)));
    if sql != rust {
        let at = sql.lines().zip(rust.lines()).position(|(a, b)| a != b);
        panic!(
            "verdict {args:?} on the SQL specification differs from the Rust loop at line {at:?}:\n{}\n--- rust:\n{}",
            at.and_then(|i| sql.lines().nth(i)).unwrap_or(""),
            at.and_then(|i| rust.lines().nth(i)).unwrap_or("")
        );
    }
}

/// The Rust files below `dir`, sorted.
pub(crate) fn rs_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}
