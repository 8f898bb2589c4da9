//! The bad-input corpus of `fixtures/bad/` (issue 12), run through the `verdict` binary.
//!
//! Each committed file is one class of broken or hostile input with its expected exit code and
//! message; a refusal is exit 2 with one `error:` line, its position (YAML) or table and column
//! (trace), a `hint:`, nothing on stdout, no panic and nothing written, and its stderr is kept as
//! a snapshot with temporary folders shown as `[TMP]`. Inputs that cannot be committed (a named
//! pipe, a device, files of megabytes, a trace with a live write-ahead log) are built here, in a
//! temporary folder, from the committed ones. `fixtures/bad/README.md` lists every class.

use crate::util;

use std::path::{Path, PathBuf};

use serde_json::Value;

use util::{manifest_dir, run_in, snapshot_with};

/// A file of the corpus, by path relative to `fixtures/bad/`.
fn bad(rel: &str) -> PathBuf {
    let p = manifest_dir().join("fixtures/bad").join(rel);
    assert!(p.is_file(), "{} is missing", p.display());
    p
}

/// What a run printed, with its exit code.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `verdict args` in `dir`: never a panic, never a signal (a stack overflow is SIGABRT,
/// exit 134 from a shell).
fn run_at(dir: &Path, args: &[&str]) -> Run {
    let out = run_in(Some(dir), args);
    let run = Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!run.stderr.contains("panicked"), "{args:?} panicked:\n{}", run.stderr);
    assert!(run.code.is_some(), "{args:?} was killed by a signal:\n{}", run.stderr);
    run
}

/// Runs `verdict args` in `dir` and checks a refusal: exit 2, nothing on stdout, one `error:`
/// line first, a non-empty `hint:`, every needle somewhere in stderr, nothing written in `dir`.
/// Returns stderr with `dir` shown as `[TMP]`.
fn refused(dir: &Path, args: &[&str], needles: &[&str]) -> String {
    let before = snapshot_with(dir, false);
    let run = run_at(dir, args);
    let stderr = &run.stderr;
    assert_eq!(run.code, Some(2), "{args:?}: exit code; stderr:\n{stderr}");
    assert!(run.stdout.is_empty(), "{args:?} printed on stdout:\n{}", run.stdout);
    assert!(stderr.starts_with("error: "), "{args:?}: stderr starts with `error:`:\n{stderr}");
    let errors = stderr.lines().filter(|l| l.trim_start().starts_with("error:")).count();
    assert_eq!(errors, 1, "{args:?}: one error line:\n{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.trim_start().strip_prefix("hint:").is_some_and(|h| !h.trim().is_empty())),
        "{args:?}: a `hint:` line:\n{stderr}"
    );
    for n in needles {
        assert!(stderr.contains(n), "{args:?}: stderr names `{n}`:\n{stderr}");
    }
    assert_eq!(snapshot_with(dir, false), before, "{args:?} wrote into {}", dir.display());
    normalise(stderr, dir)
}

/// `text` with `dir` (and its canonical form) shown as `[TMP]`.
fn normalise(text: &str, dir: &Path) -> String {
    let mut out = text.to_string();
    for d in [dir.canonicalize().ok(), Some(dir.to_path_buf())].into_iter().flatten() {
        out = out.replace(&*d.to_string_lossy(), "[TMP]");
    }
    out
}

/// A claims file of the corpus refused by `check` and by `render`, run from the crate root
/// under its repository path: the one problem's position is `line:column`, its message holds
/// every needle. Returns the stderr of `check` (those of both commands must be the same).
fn refused_claims(rel: &str, line_col: &str, needles: &[&str]) -> String {
    let path = format!("fixtures/bad/{rel}");
    bad(rel);
    let out = tempfile::tempdir().unwrap();
    let root = manifest_dir();
    let check = refused(&root, &["check", &path], needles);
    let render = refused(&root, &["render", &path, "--out", util::s(out.path())], needles);
    assert_eq!(check, render, "{rel}: check and render refuse alike");
    assert!(
        std::fs::read_dir(out.path()).unwrap().next().is_none(),
        "{rel}: render wrote into --out"
    );
    let mut lines = check.lines();
    assert_eq!(lines.next(), Some(format!("error: 1 problem in `{path}`").as_str()), "{check}");
    let located = lines.next().unwrap_or_default();
    assert!(located.starts_with(&format!("{path}:{line_col}: ")), "{rel}: position:\n{check}");
    check
}

/// A copy of a corpus claims file in a temporary folder, with `from` replaced by `to` and
/// the day26 trace path made absolute. Returns the folder and the file's name in it.
fn variant(rel: &str, from: &str, to: &str) -> (tempfile::TempDir, String) {
    let text = std::fs::read_to_string(bad(rel)).unwrap();
    assert!(text.contains(from), "{rel} holds `{from}`");
    let trace = manifest_dir().join("fixtures/day26/megatron.sqlite");
    let text = text.replace(from, to).replace("../../day26/megatron.sqlite", util::s(&trace));
    let dir = tempfile::tempdir().unwrap();
    let name = Path::new(rel).file_name().unwrap().to_string_lossy().into_owned();
    std::fs::write(dir.path().join(&name), text).unwrap();
    (dir, name)
}

// ---------------------------------------------------------------------------------------------
// Formulas: limits with a located error, never a stack overflow.

/// The formula of a corpus file between the quotes after `key: "`.
fn formula_in(rel: &str, key: &str) -> String {
    let text = std::fs::read_to_string(bad(rel)).unwrap();
    let start = text.find(&format!("{key}: \"")).unwrap() + key.len() + 3;
    let len = text[start..].find('"').unwrap();
    text[start..start + len].to_string()
}

#[test]
fn formula_nested_parentheses() {
    let rel = "claims/formula-nested-parentheses.yaml";
    let small = formula_in(rel, "formula");
    assert_eq!(small, format!("{}share{}", "(".repeat(33), ")".repeat(33)));
    let stderr = refused_claims(
        rel,
        "24:18",
        &["part `nested`", "nest deeper than 32 levels (the limit) (at character 33)"],
    );
    insta::assert_snapshot!("formula-nested-parentheses", stderr);

    // 10,000 levels: refused for its length, where the stack overflowed before.
    let huge = format!("{}share{}", "(".repeat(10_000), ")".repeat(10_000));
    let (dir, name) = variant(rel, &small, &huge);
    refused(
        dir.path(),
        &["check", &name],
        &[
            &format!("{name}:24:18: "),
            "20005 characters",
            "longer than 1,000 characters (the limit) (at character 1001)",
        ],
    );
}

#[test]
fn formula_many_terms() {
    let rel = "claims/formula-many-terms.yaml";
    let small = formula_in(rel, "formula");
    assert_eq!(small, vec!["share"; 65].join(" + "));
    // "share + " is 8 characters: the 65th term starts at character 8 * 64 + 1.
    let stderr = refused_claims(
        rel,
        "24:18",
        &["part `many`", "more than 64 numbers and names (the limit) (at character 513)"],
    );
    insta::assert_snapshot!("formula-many-terms", stderr);

    let huge = vec!["1"; 100_000].join("+");
    let (dir, name) = variant(rel, &small, &huge);
    refused(
        dir.path(),
        &["check", &name],
        &[
            &format!("{name}:24:18: "),
            "longer than 1,000 characters (the limit) (at character 1001)",
        ],
    );
}

#[test]
fn formula_minus_signs() {
    let rel = "claims/formula-minus-signs.yaml";
    let small = formula_in(rel, "value");
    assert_eq!(small, format!("{}nccl_only_ns / total_ns", "-".repeat(33)));
    let stderr = refused_claims(
        rel,
        "20:59",
        &["part `share`", "nest deeper than 32 levels (the limit) (at character 33)"],
    );
    insta::assert_snapshot!("formula-minus-signs", stderr);

    let huge = format!("{}nccl_only_ns / total_ns", "-".repeat(100_000));
    let (dir, name) = variant(rel, &small, &huge);
    refused(
        dir.path(),
        &["check", &name],
        &[
            &format!("{name}:20:59: "),
            "longer than 1,000 characters (the limit) (at character 1001)",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Conditions: exact at any size.

/// Reduces a fraction of positive integers.
fn reduced(num: i128, den: i128) -> (i128, i128) {
    let (mut a, mut b) = (num, den);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    (num / a, den / a)
}

#[test]
fn condition_extreme_bounds() {
    // The measured share, from SQL and a brute-force sweep: device 4's kernels inside
    // 39.964-46.123 s (contain), NCCL by short name, over the span of the kept kernels.
    let conn = util::open_ro(&manifest_dir().join("fixtures/day26/megatron.sqlite"));
    let mut stmt = conn
        .prepare(
            "SELECT k.start, k.\"end\", lower(s.value) LIKE '%nccl%'
             FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
             WHERE k.deviceId = 4 AND k.start >= 39964000000 AND k.\"end\" <= 46123000000",
        )
        .unwrap();
    let kernels: Vec<(i64, i64, bool)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let (_, nccl_only, _) = util::sweep(&kernels);
    let span =
        kernels.iter().map(|k| k.1).max().unwrap() - kernels.iter().map(|k| k.0).min().unwrap();
    let (num, den) = reduced(nccl_only.into(), span.into());
    // The premise: 2e-30 is 1 / (5e29); cross-multiplying it with the share overflows i128,
    // and so does 1e27 (99999999999999999999999999999%) against the span.
    assert!(num.checked_mul(5 * 10_i128.pow(29)).is_none());
    assert!(99_999_999_999_999_999_999_999_999_999_i128.checked_mul(den).is_none());
    assert!(num > 0 && num < den, "a share strictly between 0 and 1");

    let rel = "claims/condition-extreme-bounds.yaml";
    bad(rel);
    let run = run_at(&manifest_dir(), &["check", &format!("fixtures/bad/{rel}"), "--json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let audit: Value = serde_json::from_str(&run.stdout).unwrap();
    let results = audit["results"].as_array().unwrap();
    let expected = [
        ("above-tiny", "supported"),
        ("below-tiny", "not_supported"),
        ("at-most-huge", "supported"),
        ("at-least-huge", "not_supported"),
    ];
    assert_eq!(results.len(), expected.len());
    for (r, (id, verdict)) in results.iter().zip(expected) {
        assert_eq!(r["id"], id);
        let part = &r["parts"][0];
        assert_eq!(
            part["formula"]["exact"],
            serde_json::json!([num.to_string(), den.to_string()]),
            "{id}"
        );
        assert_eq!(r["verdict"], verdict, "{id}: {r:#}");
        assert_eq!(part["outcome"], verdict, "{id}");
        assert_eq!(part["condition"]["satisfied"], verdict == "supported", "{id}");
    }
}

// ---------------------------------------------------------------------------------------------
// Validation: bounds no value can satisfy, an empty trace path, a part that reads itself.

#[test]
fn between_reversed() {
    let stderr = refused_claims(
        "claims/between-reversed.yaml",
        "20:20",
        &["`between` bounds are reversed (30% is above 10%)", "between: [10%, 30%]"],
    );
    insta::assert_snapshot!("between-reversed", stderr);
}

#[test]
fn negative_tolerance() {
    let stderr = refused_claims(
        "claims/negative-tolerance.yaml",
        "20:20",
        &["`approx` tolerance `-0.1 pp` is negative", "write 0.1 pp"],
    );
    insta::assert_snapshot!("negative-tolerance", stderr);
}

#[test]
fn empty_trace_path() {
    let stderr = refused_claims(
        "claims/empty-trace-path.yaml",
        "8:14",
        &["trace `A`: the path is empty", "relative to the claims file's folder"],
    );
    insta::assert_snapshot!("empty-trace-path", stderr);
}

#[test]
fn self_reference() {
    let stderr = refused_claims(
        "claims/self-reference.yaml",
        "23:23",
        &["part `reading`: `from` names the part itself"],
    );
    insta::assert_snapshot!("self-reference", stderr);
}

#[test]
fn interpretation_cycle() {
    let stderr = refused_claims(
        "claims/interpretation-cycle.yaml",
        "28:16",
        &[
            "claim `exposed`: parts read each other in a cycle through `from` (`reading` -> `meaning` -> `reading`)",
        ],
    );
    insta::assert_snapshot!("interpretation-cycle", stderr);
}

#[test]
fn exists_not_boolean() {
    let stderr = refused_claims(
        "claims/exists-not-boolean.yaml",
        "20:30",
        &["invalid boolean", "write `true` or `false`"],
    );
    insta::assert_snapshot!("exists-not-boolean", stderr);
    // Unquoted YAML 1.1 spellings too.
    for spelling in ["yes", "on", "y"] {
        let (dir, name) = variant("claims/exists-not-boolean.yaml", "\"yes\"", spelling);
        refused(dir.path(), &["check", &name], &[":20:30: ", "write `true` or `false`"]);
    }
}

#[test]
fn report_id_too_long() {
    let stderr = refused_claims(
        "claims/report-id-too-long.yaml",
        "5:7",
        &["report id is 65 characters; the limit is 64"],
    );
    insta::assert_snapshot!("report-id-too-long", stderr);
    // 250 characters passed `check` and failed `render` with "File name too long"; 64 pass.
    let long = "r".repeat(65);
    let (dir, name) = variant("claims/report-id-too-long.yaml", &long, &"r".repeat(250));
    refused(dir.path(), &["check", &name], &["report id is 250 characters; the limit is 64"]);
    let (dir, name) = variant("claims/report-id-too-long.yaml", &long, &"r".repeat(64));
    let out = dir.path().join("out");
    let run = run_at(dir.path(), &["render", &name, "--format", "md", "--out", util::s(&out)]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(out.join(format!("{}.en.md", "r".repeat(64))).is_file());
}

#[test]
fn problems_without_hints() {
    let path = "fixtures/bad/claims/problems-without-hints.yaml";
    bad("claims/problems-without-hints.yaml");
    let run = run_at(&manifest_dir(), &["check", path]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines[0], format!("error: 11 problems in `{path}`"));
    // Every located problem is followed by its hint.
    let located: Vec<usize> =
        (1..lines.len()).filter(|&i| lines[i].starts_with(&format!("{path}:"))).collect();
    assert_eq!(located.len(), 11, "{}", run.stderr);
    for i in located {
        assert!(
            lines.get(i + 1).is_some_and(|l| l.starts_with("  hint: ") && l.len() > 10),
            "no hint after {}",
            lines[i]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Claims files: what is not a regular file is refused before it is read; the limits on size,
// YAML values and claims have their own messages.

/// Runs `verdict args` in `dir` like [`refused`], but fails instead of waiting forever when
/// the run blocks (reading a named pipe blocks until a writer comes).
fn refused_within(dir: &Path, args: &[&str], needles: &[&str], secs: u64) -> String {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("verdict"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{args:?} still runs after {secs} s: it blocks on its input");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    refused(dir, args, needles)
}

#[test]
fn claims_path_that_is_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let made = std::process::Command::new("mkfifo").arg(d.join("pipe.yaml")).status().unwrap();
    assert!(made.success(), "mkfifo");
    std::fs::create_dir(d.join("folder.yaml")).unwrap();
    let mut all = String::new();
    for (path, kind) in [
        ("pipe.yaml", "a named pipe (FIFO)"),
        ("folder.yaml", "a directory"),
        ("/dev/null", "a character device"),
    ] {
        for command in ["check", "render"] {
            let stderr = refused_within(
                d,
                &[command, path],
                &[
                    &format!("error: claims file `{path}` is {kind}, not a regular file"),
                    "hint: pass",
                ],
                30,
            );
            assert_eq!(stderr.lines().count(), 2, "one error line and its hint:\n{stderr}");
            if command == "check" {
                all += &stderr;
            }
        }
    }
    insta::assert_snapshot!("claims-path-not-a-file", all);
}

#[test]
fn claims_file_over_the_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 16 MiB and one byte, sparse: refused from its size, before a byte is read.
    let f = std::fs::File::create(dir.path().join("huge.yaml")).unwrap();
    f.set_len(16 * 1024 * 1024 + 1).unwrap();
    drop(f);
    let stderr = refused(
        dir.path(),
        &["check", "huge.yaml"],
        &["claims file `huge.yaml` is 16,777,217 bytes; the limit is 16,777,216 bytes (16 MiB)"],
    );
    insta::assert_snapshot!("claims-file-too-large", stderr);
}

/// A claims file of `n` claims over the mock trace: each claim one observation of the
/// kernel count, about 28 YAML values.
fn many_claims(n: usize) -> String {
    let trace = manifest_dir().join("fixtures/nsys-ai/mock.sqlite");
    let mut text = format!(
        "report: {{ id: many, languages: [en], title: {{ en: many }} }}\n\
         traces:\n  A: {{ path: \"{}\" }}\n\
         scopes:\n  all: {{ trace: A }}\n\
         claims:\n",
        trace.display()
    );
    for i in 0..n {
        text += &format!(
            "  - id: c{i}\n    statement: {{ en: \"the trace has kernels\" }}\n    parts:\n      \
             - id: n\n        kind: observation\n        \
             measure: {{ analysis: kernels, scope: all, value: \"count\" }}\n        \
             condition: {{ between: [\"1\", \"1000000\"] }}\n"
        );
    }
    text
}

#[test]
fn claims_count_within_and_over_the_limit() {
    // 9,000 claims are past the YAML parser's default budget of 250,000 values, which refused
    // files of about 3,300 claims of the usual size as a YAML syntax error.
    let text = many_claims(9_000);
    let default = serde_saphyr::from_str::<Value>(&text).expect_err("the default budget");
    assert!(format!("{default}").contains("Nodes"), "{default}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("many.yaml"), &text).unwrap();
    let run = run_at(dir.path(), &["check", "many.yaml", "--json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let audit: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(audit["summary"]["counts"]["supported"], 9_000);

    // One claim over the limit: refused at that claim's id, with the counts.
    let text = many_claims(10_001);
    let line = text.lines().position(|l| l == "  - id: c10000").unwrap() + 1;
    std::fs::write(dir.path().join("too-many.yaml"), &text).unwrap();
    let stderr = refused(
        dir.path(),
        &["check", "too-many.yaml"],
        &[
            &format!("too-many.yaml:{line}:9: the file has 10,001 claims; the limit is 10,000"),
            "split the claims into several files",
        ],
    );
    insta::assert_snapshot!("claims-count-over-the-limit", stderr);
}

#[test]
fn claims_file_over_the_yaml_value_limit() {
    // Two million and one values in one list: the parser's budget, named as such rather than
    // reported as a syntax error.
    let mut text = many_claims(1);
    let values = vec!["1"; 2_000_001].join(",");
    text = text.replace("[\"1\", \"1000000\"]", &format!("[{values}]"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("values.yaml"), &text).unwrap();
    let stderr = refused(
        dir.path(),
        &["check", "values.yaml"],
        &[
            "the file holds more than 2,000,000 YAML values (scalars, lists and mappings), the limit",
        ],
    );
    assert!(!stderr.contains("syntax"), "not a syntax error:\n{stderr}");
}

// ---------------------------------------------------------------------------------------------
// Traces: the state a SQLite reader would see, or a refusal.

/// Every command that reads a trace, on `path`.
fn every_command(path: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["inspect", path, "--json"],
        vec!["query", "overlap", path, "--all-devices", "--json"],
        vec!["query", "kernels", path],
        vec!["query", "nccl-skew", path, "--json"],
        vec!["query", "copies", path, "--all-devices"],
    ]
}

/// The statements of a corpus `.sql` file above and below its marker line (`-- MARKER`).
fn sql_parts(rel: &str, marker: &str) -> (String, String) {
    let text = std::fs::read_to_string(bad(rel)).unwrap();
    let (above, below) = text.split_once(&format!("-- {marker}\n")).expect(marker);
    (above.to_string(), below.to_string())
}

/// A writable connection to a new database file.
fn create(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

/// Kernel rows as a SQLite reader sees them: a normal connection on a copy of the folder, so
/// that rolling back a journal or reading a write-ahead log changes nothing under test.
fn kernels_seen_by_a_reader(dir: &Path, name: &str) -> i64 {
    let copy = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), copy.path().join(e.file_name())).unwrap();
        }
    }
    let conn = rusqlite::Connection::open(copy.path().join(name)).unwrap();
    conn.query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| r.get(0)).unwrap()
}

/// Kernel rows in the file alone (immutable: no journal, no write-ahead log).
fn kernels_in_the_file_alone(path: &Path) -> i64 {
    util::open_ro(path)
        .query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| r.get(0))
        .unwrap()
}

/// The kernel count `verdict query kernels --json` reports.
fn kernels_reported(dir: &Path, name: &str) -> i64 {
    let v = util::run_json_in(Some(dir), &["query", "kernels", name, "--json"]);
    util::int(&v["values"], "count")
}

#[test]
fn uncheckpointed_wal() {
    let (committed, later) = sql_parts("traces/uncheckpointed-wal.sql", "after the checkpoint");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let writer = create(&d.join("t.sqlite"));
    writer.execute_batch(&committed).unwrap();
    writer
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    writer.execute_batch(&later).unwrap();
    // The premise: readers see the log's rows, the file alone does not hold them.
    assert_eq!(kernels_seen_by_a_reader(d, "t.sqlite"), 4);
    assert_eq!(kernels_in_the_file_alone(&d.join("t.sqlite")), 1);
    let wal_len = std::fs::metadata(d.join("t.sqlite-wal")).unwrap().len();
    let needles = [
        "`t.sqlite` has a write-ahead log beside it (`t.sqlite-wal`",
        "whose changes are not in the file",
        "PRAGMA wal_checkpoint(TRUNCATE)",
    ];
    let mut first = String::new();
    for args in every_command("t.sqlite") {
        let stderr = refused(d, &args, &needles);
        assert!(stderr.contains(&format!("{wal_len} bytes")), "{stderr}");
        if first.is_empty() {
            first = stderr.replace(&wal_len.to_string(), "[N]");
        }
    }
    insta::assert_snapshot!("uncheckpointed-wal", first);

    // An audit names it too, and exits 2: its claims are not evaluated from another state.
    std::fs::write(
        d.join("claims.yaml"),
        "report: { id: w, languages: [en], title: { en: w } }\n\
         traces:\n  A: { path: t.sqlite }\nscopes:\n  all: { trace: A }\nclaims:\n  \
         - id: c\n    statement: { en: kernels ran }\n    parts:\n      - id: n\n        \
         kind: observation\n        measure: { analysis: kernels, scope: all, value: count }\n        \
         condition: { at_least: \"1\" }\n",
    )
    .unwrap();
    let audit = run_at(d, &["check", "claims.yaml"]);
    assert_eq!(audit.code, Some(2), "{}", audit.stderr);
    assert!(
        audit.stderr.contains("has a write-ahead log beside it (`t.sqlite-wal`"),
        "{}",
        audit.stderr
    );
    assert!(audit.stdout.contains("not evaluated"), "{}", audit.stdout);
    // The trace's own hint (checkpoint it), not only "fix its path".
    assert!(audit.stderr.contains("PRAGMA wal_checkpoint(TRUNCATE)"), "{}", audit.stderr);
    std::fs::remove_file(d.join("claims.yaml")).unwrap();

    // The log copied aside with the file, no writer and no shared-memory file: the same.
    let aside = tempfile::tempdir().unwrap();
    for f in ["t.sqlite", "t.sqlite-wal"] {
        std::fs::copy(d.join(f), aside.path().join(f)).unwrap();
    }
    refused(aside.path(), &["query", "kernels", "t.sqlite", "--json"], &needles);

    // Closing the writer checkpoints the log into the file: then the file is what readers see.
    drop(writer);
    assert!(!d.join("t.sqlite-wal").exists());
    assert_eq!(kernels_reported(d, "t.sqlite"), 4);
    // An empty log changes nothing and is no reason to refuse.
    std::fs::write(d.join("t.sqlite-wal"), b"").unwrap();
    assert_eq!(kernels_reported(d, "t.sqlite"), 4);
}

#[test]
fn hot_journal() {
    let (committed, interrupted) =
        sql_parts("traces/hot-journal.sql", "in the interrupted transaction");
    let dir = tempfile::tempdir().unwrap();
    let crash = tempfile::tempdir().unwrap();
    let writer = create(&dir.path().join("t.sqlite"));
    writer.execute_batch(&committed).unwrap();
    writer.execute_batch("PRAGMA cache_size = 1; BEGIN;").unwrap();
    writer.execute_batch(&interrupted).unwrap();
    // A crash now: the file with some uncommitted pages, and the journal that undoes them.
    for f in ["t.sqlite", "t.sqlite-journal"] {
        std::fs::copy(dir.path().join(f), crash.path().join(f)).unwrap();
    }
    writer.execute_batch("ROLLBACK").unwrap();
    drop(writer);
    let c = crash.path();
    assert_eq!(kernels_seen_by_a_reader(c, "t.sqlite"), 50);
    assert_ne!(kernels_in_the_file_alone(&c.join("t.sqlite")), 50, "the file holds a torn state");
    let needles = [
        "`t.sqlite` has a hot rollback journal beside it (`t.sqlite-journal`",
        "a write to it was interrupted or is under way",
        "roll the journal back",
    ];
    let mut first = String::new();
    for args in every_command("t.sqlite") {
        let stderr = refused(c, &args, &needles);
        if first.is_empty() {
            let len = std::fs::metadata(c.join("t.sqlite-journal")).unwrap().len();
            first = stderr.replace(&len.to_string(), "[N]");
        }
    }
    insta::assert_snapshot!("hot-journal", first);

    // What the hint says: a SQLite reader rolls the journal back; then the file is the state.
    let conn = rusqlite::Connection::open(c.join("t.sqlite")).unwrap();
    conn.execute_batch("PRAGMA quick_check").unwrap();
    drop(conn);
    assert!(!c.join("t.sqlite-journal").exists());
    assert_eq!(kernels_reported(c, "t.sqlite"), 50);

    // Journals that are not hot: empty (journal_mode=TRUNCATE) or with a zeroed header
    // (journal_mode=PERSIST). SQLite ignores both, and so does verdict.
    std::fs::write(c.join("t.sqlite-journal"), b"").unwrap();
    assert_eq!(kernels_reported(c, "t.sqlite"), 50);
    std::fs::write(c.join("t.sqlite-journal"), [0u8; 512]).unwrap();
    assert_eq!(kernels_reported(c, "t.sqlite"), 50);
}

#[test]
fn gpu_table_with_device_id() {
    let sql = std::fs::read_to_string(bad("traces/gpu-device-id.sql")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    create(&d.join("t.sqlite")).execute_batch(&sql).unwrap();
    for args in every_command("t.sqlite") {
        let run = run_at(d, &args);
        assert_eq!(run.code, Some(0), "{args:?}:\n{}", run.stderr);
    }
    let inspect = util::run_json_in(Some(d), &["inspect", "t.sqlite", "--json"]);
    let text = inspect.to_string();
    let listed: Vec<i64> = inspect["values"]["listed_gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("listed_gpus in {text}"))
        .iter()
        .map(|g| g["id"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, [0, 1]);
    assert_eq!(inspect["values"]["listed_without_kernels"], serde_json::json!([1]));
    let overlap =
        util::run_json_in(Some(d), &["query", "overlap", "t.sqlite", "--all-devices", "--json"]);
    assert_eq!(overlap["scope"]["missing_devices"], serde_json::json!([1]));

    // With neither `id` nor `deviceId` the GPU list is left out, and the coverage says so.
    let conn = create(&d.join("t.sqlite"));
    conn.execute_batch("ALTER TABLE TARGET_INFO_GPU RENAME COLUMN deviceId TO gpu").unwrap();
    drop(conn);
    let inspect = util::run_json_in(Some(d), &["inspect", "t.sqlite", "--json"]);
    assert_eq!(inspect["values"]["listed_gpus"], Value::Null);
    let notes: Vec<&str> =
        inspect["notes"].as_array().unwrap().iter().map(|n| n["key"].as_str().unwrap()).collect();
    assert!(notes.contains(&"note.no_gpu_table"), "{notes:?}");
}

// ---------------------------------------------------------------------------------------------
// Timestamps and sums of nanoseconds: an error naming what, never a wrapped total.

/// A trace in `dir` built from a corpus `.sql` file.
fn trace_from(dir: &Path, rel: &str) -> PathBuf {
    let path = dir.join("t.sqlite");
    create(&path).execute_batch(&std::fs::read_to_string(bad(rel)).unwrap()).unwrap();
    path
}

#[test]
fn kernel_extreme_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = trace_from(d, "traces/kernel-extreme-timestamps.sql");
    let needle = "`CUPTI_ACTIVITY_KIND_KERNEL.start` holds -9223372036854775807 ns, outside ±4,611,686,018,427,387,904 ns (2^62)";
    let mut first = String::new();
    for args in every_command("t.sqlite").into_iter().chain([vec!["query", "nvtx", "t.sqlite"]]) {
        let stderr = refused(d, &args, &[needle, "re-export it"]);
        if first.is_empty() {
            first = stderr;
        }
    }
    insta::assert_snapshot!("kernel-extreme-timestamps", first);

    // The same bound on the other tables with timestamps, each named.
    let conn = create(&path);
    conn.execute_batch(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 3000, \"end\" = 4000 WHERE start < 0;
         CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL,
             deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, bytes INTEGER NOT NULL,
             copyKind INTEGER NOT NULL);
         INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1000, 9223372036854775807, 0, 7, 64, 1);",
    )
    .unwrap();
    refused(
        d,
        &["query", "copies", "t.sqlite", "--all-devices"],
        &["`CUPTI_ACTIVITY_KIND_MEMCPY.end` holds 9223372036854775807 ns"],
    );
    conn.execute_batch(
        "DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY;
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, \"end\" INTEGER, eventType INTEGER NOT NULL,
             text TEXT, globalTid INTEGER, domainId INTEGER);
         INSERT INTO NVTX_EVENTS VALUES (-4611686018427387904, 2000, 59, 'step', 1, 0);",
    )
    .unwrap();
    drop(conn);
    refused(
        d,
        &["query", "nvtx", "t.sqlite"],
        &["`NVTX_EVENTS.start` holds -4611686018427387904 ns"],
    );
    // One nanosecond inside the bound is read.
    let conn = create(&path);
    conn.execute_batch("UPDATE NVTX_EVENTS SET start = -4611686018427387903").unwrap();
    drop(conn);
    let nvtx = util::run_json_in(Some(d), &["query", "nvtx", "t.sqlite", "--json"]);
    assert_eq!(nvtx["analysis"], "nvtx");
    // A row outside the window is not read, but the largest timestamp closes unterminated
    // ranges: it is checked too.
    let conn = create(&path);
    conn.execute_batch(
        "INSERT INTO NVTX_EVENTS VALUES (1500, NULL, 59, 'open', 1, 0),
             (9223372036854775807, NULL, 59, 'late', 1, 0);",
    )
    .unwrap();
    drop(conn);
    refused(
        d,
        &["query", "nvtx", "t.sqlite", "--window", "0:0.000005"],
        &["`NVTX_EVENTS.start` holds 9223372036854775807 ns"],
    );
}

#[test]
fn kernel_time_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    trace_from(d, "traces/kernel-time-overflow.sql");
    let long = 2 * 4_611_686_018_427_387_903_i64;
    assert!(long.checked_add(long).is_none(), "two of them overflow i64");
    let mut all = String::new();
    for (args, what) in [
        (vec!["query", "kernels", "t.sqlite", "--json"], "the kernel time of the matching kernels"),
        (
            vec!["query", "kernels", "t.sqlite", "--device", "1"],
            "the kernel time of the matching kernels",
        ),
        (vec!["query", "nccl-skew", "t.sqlite", "--json"], "the NCCL kernel time"),
        (vec!["query", "nvtx", "t.sqlite"], "the sum of kernel durations"),
    ] {
        let stderr =
            refused(d, &args, &[&format!("{what} overflows 64-bit nanoseconds"), "re-export"]);
        all += &stderr;
    }
    insta::assert_snapshot!("kernel-time-overflow", all);

    // Wall time is a union: it fits, and matches a sweep over the rows.
    let conn = util::open_ro(&d.join("t.sqlite"));
    let overlap =
        util::run_json_in(Some(d), &["query", "overlap", "t.sqlite", "--all-devices", "--json"]);
    for row in overlap["rows"].as_array().unwrap() {
        let device = util::int(row, "device");
        let mut stmt = conn
            .prepare(
                "SELECT k.start, k.\"end\", s.value LIKE '%nccl%' FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 JOIN StringIds s ON s.id = k.shortName WHERE k.deviceId = ?1",
            )
            .unwrap();
        let rows: Vec<(i64, i64, bool)> = stmt
            .query_map([device], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let (compute_only, nccl_only, both) = util::sweep(&rows);
        let span =
            rows.iter().map(|r| r.1).max().unwrap() - rows.iter().map(|r| r.0).min().unwrap();
        assert_eq!(span, long);
        assert_eq!(util::int(row, "total_ns"), span, "device {device}");
        assert_eq!(util::int(row, "compute_only_ns"), compute_only, "device {device}");
        assert_eq!(util::int(row, "nccl_only_ns"), nccl_only, "device {device}");
        assert_eq!(util::int(row, "overlap_ns"), both, "device {device}");
        assert_eq!(
            util::int(row, "idle_ns"),
            span - compute_only - nccl_only - both,
            "device {device}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Leftovers of issue 28: NULLs where nsys writes none, and file names SQLite's URI misread.

#[test]
fn null_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    trace_from(d, "traces/null-metadata.sql");
    for args in every_command("t.sqlite") {
        let run = run_at(d, &args);
        assert_eq!(run.code, Some(0), "{args:?}:\n{}", run.stderr);
    }
    let inspect = util::run_json_in(Some(d), &["inspect", "t.sqlite", "--json"]);
    assert_eq!(inspect["trace"]["schema_version"], "3.25.0");
    let listed: Vec<i64> = inspect["values"]["listed_gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, [0, 1], "the row without an id lists no GPU");
    // Each table's NULLs are disclosed as a note.
    let nulls: Vec<String> = inspect["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["key"] == "note.null_rows")
        .map(|n| n["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        nulls,
        [
            "1 row(s) of `META_DATA_EXPORT.name` are NULL where nsys writes a value: read as absent",
            "1 row(s) of `TARGET_INFO_GPU.id` are NULL where nsys writes a value: read as absent",
            "2 row(s) of `StringIds.value` are NULL where nsys writes a value: read as absent",
        ]
    );
    // The kernel whose name is NULL is a kernel without a name (compute: no `nccl` in it),
    // not a reason to refuse the trace: 3 kernels, one of them unnamed, 100 ns long.
    let kernels = util::run_json_in(Some(d), &["query", "kernels", "t.sqlite", "--json"]);
    assert_eq!(util::int(&kernels["values"], "count"), 3, "{kernels}");
    let unnamed: Vec<&serde_json::Value> =
        kernels["rows"].as_array().unwrap().iter().filter(|r| r["name"] == "").collect();
    assert_eq!(unnamed.len(), 1, "{kernels}");
    assert_eq!(unnamed[0]["total_ns"], 100);
    assert_eq!(inspect["values"]["listed_without_kernels"], serde_json::json!([1]));
    // The range whose string is NULL reads as a range without a text, beside `step`.
    let nvtx = util::run_json_in(Some(d), &["query", "nvtx", "t.sqlite", "--json"]);
    let names: Vec<&str> =
        nvtx["rows"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"step"), "{nvtx}");
    assert_eq!(util::int(&nvtx["values"], "ranges"), 2, "{nvtx}");

    // `//dir/t.sqlite` is a path, not a URI authority; a name that is not UTF-8 opens.
    let doubled = format!("/{}", d.join("t.sqlite").display());
    let out = util::verdict().args(["query", "kernels", &doubled, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let odd = d.join(std::ffi::OsStr::from_bytes(b"t\xff %3f?#.sqlite"));
        std::fs::copy(d.join("t.sqlite"), &odd).unwrap();
        let out =
            util::verdict().args(["query", "kernels"]).arg(&odd).arg("--json").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(util::int(&v["values"], "count"), 3);
    }
}

// ---------------------------------------------------------------------------------------------
// Trace sets (issue 28): each file once, by identity and by content; a glob member that is
// not a regular file is refused as a listed one is.

#[test]
fn set_member_twice() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let runs = d.join("runs");
    std::fs::create_dir(&runs).unwrap();
    let sql = std::fs::read_to_string(bad("traces/set-member-twice.sql")).unwrap();
    for (name, at) in [("a.sqlite", 3000), ("b.sqlite", 3500)] {
        create(&runs.join(name))
            .execute_batch(&format!(
                "{sql}INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({at}, {}, 0, 8, 2, 2, 16777216);",
                at + 1000
            ))
            .unwrap();
    }
    let glob = "runs/*.sqlite";
    fn skew<'a>(args: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec!["query", "nccl-skew"];
        a.extend(args);
        a.push("--json");
        a
    }
    // The set as it is: two ranks.
    let v = util::run_json_in(Some(d), &skew(&[glob]));
    assert_eq!(v["trace"]["set"]["ranks"].as_array().unwrap().len(), 2, "{v}");
    let extra = runs.join("c.sqlite");
    let same_file = ["`runs/a.sqlite` and `runs/c.sqlite` are the same file (device "];
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("a.sqlite", &extra).unwrap();
        refused(d, &skew(&[glob]), &same_file);
        std::fs::remove_file(&extra).unwrap();
    }
    std::fs::hard_link(runs.join("a.sqlite"), &extra).unwrap();
    refused(d, &skew(&[glob]), &same_file);
    std::fs::remove_file(&extra).unwrap();
    std::fs::copy(runs.join("a.sqlite"), &extra).unwrap();
    let sha = util::sha256_file(&extra);
    refused(
        d,
        &skew(&[glob]),
        &[&format!(
            "`runs/a.sqlite` and `runs/c.sqlite` are byte for byte the same (sha256 {sha})"
        )],
    );
    std::fs::remove_file(&extra).unwrap();
    // Two paths to one file in the arguments, and one path twice.
    refused(d, &skew(&["runs/a.sqlite", "./runs/a.sqlite"]), &["are the same file"]);
    refused(d, &skew(&["runs/a.sqlite", glob]), &["`runs/a.sqlite` is named twice"]);
    // What a glob finds that is not a regular file.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("gone.sqlite", &extra).unwrap();
        refused(
            d,
            &skew(&[glob]),
            &[
                "`runs/c.sqlite` (matched by `runs/*.sqlite`) is a symbolic link to nothing, not a regular file",
            ],
        );
        std::fs::remove_file(&extra).unwrap();
    }
    std::fs::create_dir(&extra).unwrap();
    refused(d, &skew(&[glob]), &["`runs/c.sqlite` (matched by `runs/*.sqlite`) is a directory"]);
    std::fs::remove_dir(&extra).unwrap();
    // A claims file's list: `[a, ./a]` is one file twice, `[a, a]` one path twice.
    let claims = |paths: &str| {
        format!(
            "report:\n  id: set\n  languages: [en]\n  title: {{ en: t }}\n  question: {{ en: q }}\n  answer: {{ en: a }}\ntraces:\n  T: {{ path: {paths} }}\nscopes:\n  s: {{ trace: T }}\nclaims:\n  - id: c\n    statement: {{ en: s }}\n    principal: k\n    parts:\n      - id: k\n        kind: observation\n        text: {{ en: k }}\n        measure: {{ analysis: nccl-skew, scope: s, value: matched, unit: count }}\n"
        )
    };
    std::fs::write(d.join("twice.yaml"), claims("[runs/a.sqlite, ./runs/a.sqlite]")).unwrap();
    let run = run_at(d, &["check", "twice.yaml"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("a.sqlite` are the same file (device "), "{}", run.stderr);
    std::fs::write(d.join("same.yaml"), claims("[runs/a.sqlite, runs/a.sqlite]")).unwrap();
    let run = run_at(d, &["check", "same.yaml"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("runs/a.sqlite` is named twice"), "{}", run.stderr);
}

// ---------------------------------------------------------------------------------------------
// Eval (issue 28): each answer once, each grades file once, one reviewer per file.

#[test]
fn eval_duplicate_answers() {
    let root = manifest_dir();
    let path = "fixtures/bad/claims/eval-duplicate-answers.yaml";
    bad("claims/eval-duplicate-answers.yaml");
    let stderr = refused(&root, &["eval", path], &["is the same file as answer"]);
    assert!(
        stderr.contains(&format!("{path}:12:13: answer `../../../claims/eval-day26/../eval-day26/blind-1.yaml` is the same file as answer `../../../claims/eval-day26/blind-1.yaml` (line 10)")),
        "{stderr}"
    );
    // A copy of the bytes under another name is the same answer too.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(root.join("claims/eval-day26/blind-1.yaml"), d.join("a.yaml")).unwrap();
    std::fs::copy(root.join("claims/eval-day26/blind-1.yaml"), d.join("b.yaml")).unwrap();
    let text = std::fs::read_to_string(bad("claims/eval-duplicate-answers.yaml"))
        .unwrap()
        .replace("../../../claims/eval-day26/blind-1.yaml", "a.yaml")
        .replace("../../../claims/eval-day26/../eval-day26/blind-1.yaml", "b.yaml");
    std::fs::write(d.join("eval.yaml"), text).unwrap();
    refused(
        d,
        &["eval", "eval.yaml"],
        &["answer `b.yaml` is byte for byte the same as answer `a.yaml` (line 10)"],
    );
}

#[test]
fn eval_id_that_cannot_name_files() {
    // The eval id names the report's files: `../x` would write outside --out, 65 characters
    // past what some file systems take.
    for (id, needle) in [
        ("../../escape", "eval id `../../escape` cannot name output files"),
        (&*"e".repeat(65), "eval id is 65 characters; the limit is 64"),
    ] {
        let (dir, name) = variant(
            "claims/eval-duplicate-answers.yaml",
            "id: duplicate-answers",
            &format!("id: \"{id}\""),
        );
        let out = dir.path().join("out");
        refused(
            dir.path(),
            &["eval", &name, "--out", util::s(&out)],
            &[&format!("{name}:5:7: {needle}")],
        );
    }
}

#[test]
fn grades_other_reviewer() {
    let root = manifest_dir();
    let eval = "claims/eval-day26/eval.yaml";
    let other = "fixtures/bad/claims/grades-other-reviewer.csv";
    bad("claims/grades-other-reviewer.csv");
    let lin = "claims/eval-day26/grades-lin.csv";
    refused(
        &root,
        &["eval", eval, "--grades", lin, other],
        &[&format!(
            "{other}:5: S04: reviewer `lin` is not `chen`, who grades the file from line 2"
        )],
    );
    // One file given twice, under two names, is one review counted twice.
    let again = "claims/eval-day26/../eval-day26/grades-lin.csv";
    refused(
        &root,
        &["eval", eval, "--grades", lin, again],
        &[&format!("{again}: the same grades file is given twice (as `{lin}` before)")],
    );
    // Quoted fields as spreadsheets write them are read: a note with a comma, a quote and a
    // line break.
    let dir = tempfile::tempdir().unwrap();
    let quoted = dir.path().join("chen.csv");
    let text =
        std::fs::read_to_string(root.join("claims/eval-day26/grades-chen.csv")).unwrap().replace(
            "S06,chen,1,poor,off topic",
            "S06,\"chen\",1,poor,\"off topic, \"\"TP\"\"\nsecond line\"",
        );
    std::fs::write(&quoted, text).unwrap();
    let v = util::run_json_in(
        Some(&root),
        &["eval", eval, "--json", "--grades", lin, util::s(&quoted)],
    );
    let notes: Vec<String> = v["review"]["answers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a[1].as_array().unwrap().iter())
        .filter(|g| g["reviewer"] == "chen")
        .map(|g| g["notes"].as_str().unwrap().to_string())
        .collect();
    assert!(notes.contains(&"off topic, \"TP\"\nsecond line".to_string()), "{notes:?}");
}

// ---------------------------------------------------------------------------------------------
// Terminal layout (issue 28): a value of a megabyte is shown cut with its length; JSON keeps
// it whole. (How long the layout takes is measured by `bench/term-layout`, not here.)

/// The note that ends a value cut for the terminal.
fn cut_note(chars: usize) -> String {
    let n = chars.to_string();
    let mut grouped = String::new();
    for (i, c) in n.chars().enumerate() {
        if i > 0 && (n.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("… (cut: {grouped} characters in all, {grouped} bytes; --json shows the whole value)")
}

/// Text without its white space: the note wraps with the table, inside a word too.
fn flat(text: &str) -> String {
    text.split_whitespace().collect()
}

#[test]
fn megabyte_nvtx_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = trace_from(d, "traces/megabyte-nvtx-name.sql");
    let name: String =
        util::open_ro(&path).query_row("SELECT text FROM NVTX_EVENTS", [], |r| r.get(0)).unwrap();
    assert_eq!(name.len(), 1 << 20);
    let run = run_at(d, &["query", "nvtx", "t.sqlite", "--device", "0"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(flat(&run.stdout).contains(&flat(&cut_note(1 << 20))), "{}", run.stdout);
    // The first 4,096 bytes are shown (wrapped, the last line's piece before the note left
    // out here), no more.
    let shown: String =
        run.stdout.split_whitespace().filter(|w| w.chars().all(|c| "abc_".contains(c))).collect();
    assert!(run.stdout.len() < 16_384, "{} bytes on the terminal", run.stdout.len());
    assert!(shown.len() > 4000 && shown.len() < 4096, "{}", run.stdout);
    assert!(name.starts_with(&shown), "{}", run.stdout);
    let json =
        util::run_json_in(Some(d), &["query", "nvtx", "t.sqlite", "--device", "0", "--json"]);
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows[0]["name"].as_str().unwrap(), name, "--json keeps the name whole");

    // A claim statement of a million characters: `check` shows it cut, the ledger whole.
    let statement = "x".repeat(1_000_000);
    let claims = format!(
        "report:\n  id: long\n  languages: [en]\n  title: {{ en: t }}\n  question: {{ en: q }}\n  answer: {{ en: a }}\ntraces:\n  T: {{ path: t.sqlite }}\nscopes:\n  s: {{ trace: T, devices: \"0\" }}\nclaims:\n  - id: c\n    statement: {{ en: \"{statement}\" }}\n    principal: k\n    parts:\n      - id: k\n        kind: observation\n        text: {{ en: k }}\n        measure: {{ analysis: kernels, scope: s, value: count, unit: count }}\n"
    );
    std::fs::write(d.join("long.yaml"), claims).unwrap();
    let run = run_at(d, &["check", "long.yaml"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // The table's cell is the claim's id, a dash and the statement: 4 + 1,000,000
    // characters, 6 + 1,000,000 bytes (the dash takes three).
    assert!(
        flat(&run.stdout)
            .contains(&flat(&cut_note(1_000_004).replace("1,000,004 bytes", "1,000,006 bytes"))),
        "{}",
        run.stdout
    );
    assert!(run.stdout.len() < 16_384, "{} bytes on the terminal", run.stdout.len());
    let ledger = util::run_json_in(Some(d), &["check", "long.yaml", "--json"]);
    assert_eq!(ledger["claims"]["claims"][0]["statement"]["en"].as_str().unwrap(), statement);
}

// ---------------------------------------------------------------------------------------------
// Write errors (issue 28): each says what to check, and prints its cause once.

#[test]
fn write_errors_say_what_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("afile"), "x").unwrap();
    let claims = manifest_dir().join("claims/day26-profile-blind.yaml");
    let eval = manifest_dir().join("claims/eval-day26/eval.yaml");
    let (claims, eval) = (util::s(&claims), util::s(&eval));
    let under_a_file = "a part of the path is a file, not a folder";
    let mut cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["render", claims, "--format", "md", "--out", "afile/out"], under_a_file),
        (vec!["eval", eval, "--out", "afile/x"], under_a_file),
        (vec!["eval", eval, "--review-sheets", "afile/s"], under_a_file),
        (vec!["templates", "eject", "afile/t"], "whose parent exists and is writable"),
    ];
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("nowhere", d.join("dangling")).unwrap();
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        cases.push((
            vec!["render", claims, "--format", "md", "--out", "dangling"],
            "a symbolic link to nothing",
        ));
        cases.push((vec!["inspect", "loop"], "points back to itself"));
    }
    for (args, hint) in cases {
        let stderr = refused(d, &args, &[hint]);
        assert_eq!(stderr.matches("os error").count(), 1, "{args:?}: the cause once:\n{stderr}");
    }
    // A template or UI strings file that does not parse names its line and what to do.
    let tpl = d.join("tpl");
    assert_eq!(run_at(d, &["templates", "eject", "tpl"]).code, Some(0));
    let md = std::fs::read_to_string(tpl.join("report.md")).unwrap();
    std::fs::write(tpl.join("report.md"), format!("{md}{{{{ oops\n")).unwrap();
    let out = d.join("out");
    let args = ["render", claims, "--format", "md", "--templates", "tpl", "--out", "out"];
    let run = run_at(d, &args);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("report.md:"), "{}", run.stderr);
    assert!(run.stderr.contains("hint: fix the template or UI strings file"), "{}", run.stderr);
    assert!(
        !out.exists()
            || std::fs::read_dir(&out).unwrap().all(|e| {
                e.unwrap().file_name().to_string_lossy().starts_with(".verdict-render.lock")
            })
    );
}

// ---------------------------------------------------------------------------------------------

#[test]
fn every_corpus_file_is_tested_and_listed() {
    // Each file is run by the test of its name (underscores for dashes) and has its row in
    // the corpus README.
    let root = manifest_dir().join("fixtures/bad");
    let mut files = Vec::new();
    for sub in ["claims", "traces"] {
        for e in std::fs::read_dir(root.join(sub)).unwrap() {
            files.push(format!("{sub}/{}", e.unwrap().file_name().to_string_lossy()));
        }
    }
    files.sort();
    assert_eq!(
        files,
        [
            "claims/between-reversed.yaml",
            "claims/condition-extreme-bounds.yaml",
            "claims/empty-trace-path.yaml",
            "claims/eval-duplicate-answers.yaml",
            "claims/exists-not-boolean.yaml",
            "claims/formula-many-terms.yaml",
            "claims/formula-minus-signs.yaml",
            "claims/formula-nested-parentheses.yaml",
            "claims/grades-other-reviewer.csv",
            "claims/interpretation-cycle.yaml",
            "claims/negative-tolerance.yaml",
            "claims/problems-without-hints.yaml",
            "claims/report-id-too-long.yaml",
            "claims/self-reference.yaml",
            "traces/gpu-device-id.sql",
            "traces/hot-journal.sql",
            "traces/kernel-extreme-timestamps.sql",
            "traces/kernel-time-overflow.sql",
            "traces/megabyte-nvtx-name.sql",
            "traces/null-metadata.sql",
            "traces/set-member-twice.sql",
            "traces/uncheckpointed-wal.sql",
        ]
    );
    let this = std::fs::read_to_string(manifest_dir().join("tests/suite/bad_corpus.rs")).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for f in &files {
        let stem = Path::new(f).file_stem().unwrap().to_string_lossy().replace('-', "_");
        let test = if stem == "gpu_device_id" { "gpu_table_with_device_id".into() } else { stem };
        assert!(this.contains(&format!("fn {test}()")), "{f}: a test `{test}`");
        assert!(this.contains(&format!("\"{f}\"")), "{f}: the test reads it");
        assert!(readme.contains(&format!("| `{f}` |")), "{f}: a row in fixtures/bad/README.md");
    }
}
