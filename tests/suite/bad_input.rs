//! Bad input through the `verdict` binary: every case must exit with code 2, print one
//! `error:` line that names what is wrong and a `hint:` line on stderr, never panic, print
//! nothing on stdout and write nothing beside the input.
//!
//! Inputs are built in a temporary folder that is also the working directory of the run:
//! a missing path, a directory, an empty file, a text file, a truncated and a corrupt copy of
//! a real export, an SQLite file without the kernel table and one without `StringIds`, and
//! malformed or impossible windows and device lists on a real export.

use crate::util;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use util::{fixture, open_ro, run_in, seconds, snapshot_with};

const BEFORE: &str = "nsys-ai/mfu_2gpu_before.sqlite";

/// Runs `verdict args` in `dir` and checks the refusal. `needles` must all appear in the
/// error line. Returns stderr.
fn assert_refused(dir: &Path, args: &[&str], needles: &[&str]) -> String {
    let before = snapshot_with(dir, false);
    let out = run_in(Some(dir), args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stderr.contains("panicked"), "{args:?} panicked:\n{stderr}");
    assert_eq!(out.status.code(), Some(2), "{args:?} exit code; stderr:\n{stderr}");
    assert!(stdout.is_empty(), "{args:?} printed on stdout:\n{stdout}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(first.starts_with("error: "), "{args:?}: stderr starts with `error:`:\n{stderr}");
    assert_eq!(
        stderr.lines().filter(|l| l.trim_start().starts_with("error:")).count(),
        1,
        "{args:?}: one error line:\n{stderr}"
    );
    for n in needles {
        assert!(first.contains(n), "{args:?}: the error line names `{n}`:\n{stderr}");
    }
    assert!(
        stderr
            .lines()
            .any(|l| l.trim_start().strip_prefix("hint:").is_some_and(|h| !h.trim().is_empty())),
        "{args:?}: a `hint:` line follows:\n{stderr}"
    );
    assert_eq!(snapshot_with(dir, false), before, "{args:?} wrote beside its input");
    stderr
}

/// Every command that reads a trace, on one path.
fn every_command(path: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["inspect", path, "--json"],
        vec!["query", "overlap", path, "--all-devices", "--json"],
        vec!["query", "kernels", path],
        vec!["query", "nccl-skew", path, "--json"],
    ]
}

/// Checks a file-level refusal for every command.
fn refused_by_every_command(dir: &Path, name: &str, needles: &[&str]) {
    for args in every_command(name) {
        assert_refused(dir, &args, needles);
    }
}

/// A writable SQLite database in `dir` with the fixture attached read-only as `src`.
fn new_db_with_source(dir: &Path, name: &str) -> (Connection, PathBuf) {
    let path = dir.join(name);
    let conn = Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let src = format!("file:{}?mode=ro&immutable=1", fixture(BEFORE).display());
    conn.execute("ATTACH DATABASE ?1 AS src", [src]).unwrap();
    (conn, path)
}

/// The DDL of a table of the fixture.
fn ddl(table: &str) -> String {
    open_ro(&fixture(BEFORE))
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn missing_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    refused_by_every_command(dir.path(), "missing.sqlite", &["missing.sqlite", "does not exist"]);
}

#[test]
fn a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("folder.sqlite")).unwrap();
    refused_by_every_command(
        dir.path(),
        "folder.sqlite",
        &["folder.sqlite", "is a folder, not a trace file or a folder of Parquet tables"],
    );
}

#[test]
fn an_empty_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.sqlite"), b"").unwrap();
    refused_by_every_command(dir.path(), "empty.sqlite", &["empty.sqlite", "is empty"]);
}

#[test]
fn a_text_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.sqlite"), "start,end,deviceId\n1,2,0\n").unwrap();
    refused_by_every_command(
        dir.path(),
        "notes.sqlite",
        &["notes.sqlite", "not an SQLite database"],
    );
}

#[test]
fn a_truncated_export_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture(BEFORE)).unwrap();
    let half = &bytes[..bytes.len() / 2];
    std::fs::write(dir.path().join("half.sqlite"), half).unwrap();
    // The header's page count times page size is the full length.
    let (full, cut) = (bytes.len().to_string(), half.len().to_string());
    refused_by_every_command(dir.path(), "half.sqlite", &["half.sqlite", "truncated", &full, &cut]);
}

#[test]
fn a_corrupt_export_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixture(BEFORE)).unwrap();
    // Overwrite the middle half of the file: page headers and cells of the kernel table's
    // and NVTX_EVENTS's b-trees become garbage while the header stays intact.
    let (a, b) = (bytes.len() / 4, 3 * bytes.len() / 4);
    for (i, x) in bytes[a..b].iter_mut().enumerate() {
        *x = (i as u8).wrapping_mul(37) ^ 0xA5;
    }
    std::fs::write(dir.path().join("corrupt.sqlite"), &bytes).unwrap();
    refused_by_every_command(dir.path(), "corrupt.sqlite", &["corrupt.sqlite", "corrupt"]);
}

#[test]
fn an_export_without_the_kernel_table_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, _) = new_db_with_source(dir.path(), "nokernels.sqlite");
    conn.execute_batch(&ddl("StringIds")).unwrap();
    conn.execute("INSERT INTO StringIds SELECT * FROM src.StringIds", []).unwrap();
    conn.execute("DETACH DATABASE src", []).unwrap();
    drop(conn);
    refused_by_every_command(
        dir.path(),
        "nokernels.sqlite",
        &["nokernels.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL"],
    );
}

#[test]
fn an_export_without_string_ids_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, _) = new_db_with_source(dir.path(), "nostrings.sqlite");
    conn.execute_batch(&ddl("CUPTI_ACTIVITY_KIND_KERNEL")).unwrap();
    let n = conn
        .execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM src.CUPTI_ACTIVITY_KIND_KERNEL LIMIT 50", [])
        .unwrap();
    assert_eq!(n, 50);
    conn.execute("DETACH DATABASE src", []).unwrap();
    drop(conn);
    refused_by_every_command(dir.path(), "nostrings.sqlite", &["nostrings.sqlite", "StringIds"]);
}

/// A folder holding a copy of mfu_2gpu_before as `t.sqlite`.
fn with_real_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(BEFORE), dir.path().join("t.sqlite")).unwrap();
    dir
}

#[test]
fn malformed_windows_are_refused() {
    let dir = with_real_copy();
    for (w, needles) in [("5:4", ["5:4", "window"]), ("abc", ["abc", "window"])] {
        assert_refused(
            dir.path(),
            &["query", "overlap", "t.sqlite", "--all-devices", "--window", w],
            &needles,
        );
        assert_refused(
            dir.path(),
            &["query", "kernels", "t.sqlite", "--window", w, "--json"],
            &needles,
        );
        assert_refused(dir.path(), &["query", "nccl-skew", "t.sqlite", "--window", w], &needles);
    }
}

#[test]
fn a_window_outside_the_trace_is_refused_with_the_trace_range() {
    let dir = with_real_copy();
    // The range the message must state, from SQL: first kernel start, last kernel end.
    let (first, last): (i64, i64) = open_ro(&fixture(BEFORE))
        .query_row("SELECT min(start), max(\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(first > 2_000_000_000, "kernels start after 2 s");
    let (first, last) = (seconds(first), seconds(last));
    let needles = ["1:2", "outside", first.as_str(), last.as_str()];
    assert_refused(
        dir.path(),
        &["query", "overlap", "t.sqlite", "--all-devices", "--window", "1:2"],
        &needles,
    );
    assert_refused(
        dir.path(),
        &["query", "kernels", "t.sqlite", "--window", "1:2", "--json"],
        &needles,
    );
    assert_refused(
        dir.path(),
        &["query", "nccl-skew", "t.sqlite", "--window", "1:2", "--semantics", "contain"],
        &needles,
    );
}

#[test]
fn an_unknown_device_is_refused() {
    let dir = with_real_copy();
    assert_refused(dir.path(), &["query", "overlap", "t.sqlite", "--device", "9"], &["device 9"]);
    assert_refused(
        dir.path(),
        &["query", "kernels", "t.sqlite", "--device", "9", "--json"],
        &["device 9"],
    );
    assert_refused(
        dir.path(),
        &["query", "nccl-skew", "t.sqlite", "--devices", "0,9"],
        &["device 9"],
    );
}

#[test]
fn malformed_device_lists_are_refused() {
    let dir = with_real_copy();
    for (list, needles) in [("3-1", ["`3-1`", "device list"]), ("x", ["`x`", "device list"])] {
        assert_refused(dir.path(), &["query", "overlap", "t.sqlite", "--devices", list], &needles);
        assert_refused(
            dir.path(),
            &["query", "kernels", "t.sqlite", "--devices", list, "--json"],
            &needles,
        );
        assert_refused(
            dir.path(),
            &["query", "nccl-skew", "t.sqlite", "--devices", list],
            &needles,
        );
        assert_refused(dir.path(), &["inspect", "t.sqlite", "--expect-devices", list], &needles);
    }
}

#[test]
fn overlap_without_a_device_scope_is_refused() {
    let dir = with_real_copy();
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["query", "overlap", "t.sqlite"];
        args.extend(extra);
        let stderr = assert_refused(dir.path(), &args, &["device"]);
        assert!(stderr.contains("--device"), "the hint names the flags:\n{stderr}");
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions: defects these tests found (no hint, multi-line error, panic on a closed
// stdout), since fixed in src.
// ---------------------------------------------------------------------------------------------

#[test]
fn an_export_with_an_empty_kernel_table_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, _) = new_db_with_source(dir.path(), "nokernelrows.sqlite");
    conn.execute_batch(&ddl("CUPTI_ACTIVITY_KIND_KERNEL")).unwrap();
    conn.execute_batch(&ddl("StringIds")).unwrap();
    conn.execute("INSERT INTO StringIds SELECT * FROM src.StringIds", []).unwrap();
    conn.execute("DETACH DATABASE src", []).unwrap();
    drop(conn);
    for args in every_command("nokernelrows.sqlite").into_iter().skip(1) {
        assert_refused(dir.path(), &args, &["nokernelrows.sqlite", "no kernels"]);
    }
}

#[test]
fn a_null_timestamp_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, _) = new_db_with_source(dir.path(), "nullend.sqlite");
    conn.execute_batch(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, \"end\" INTEGER, deviceId INTEGER,
             streamId INTEGER, shortName INTEGER, demangledName INTEGER);
         CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'gemm');
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, NULL, 0, 7, 1, 1);",
    )
    .unwrap();
    drop(conn);
    refused_by_every_command(dir.path(), "nullend.sqlite", &["nullend.sqlite", "end"]);
}

#[test]
fn a_dangling_name_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, _) = new_db_with_source(dir.path(), "dangling.sqlite");
    conn.execute_batch(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, \"end\" INTEGER, deviceId INTEGER,
             streamId INTEGER, shortName INTEGER, demangledName INTEGER);
         CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 7, 42, 42);",
    )
    .unwrap();
    drop(conn);
    for args in every_command("dangling.sqlite").into_iter().skip(1) {
        assert_refused(dir.path(), &args, &["dangling.sqlite", "StringIds", "42"]);
    }
}

#[test]
fn an_invalid_regex_is_refused() {
    let dir = with_real_copy();
    assert_refused(
        dir.path(),
        &["query", "kernels", "t.sqlite", "--regex", "(", "--json"],
        &["regex", "`(`"],
    );
}

#[test]
fn a_closed_stdout_does_not_panic() {
    // `verdict ... | head -1`: the reader goes away before the tool prints.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("verdict"))
        .args(["query", "kernels", fixture(BEFORE).to_str().unwrap(), "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "panicked on a closed stdout:\n{stderr}");
    assert_ne!(out.status.code(), Some(101), "exit code 101 is a panic");
}

/// `render` refuses a templates folder that does not exist and a negative
/// `SOURCE_DATE_EPOCH` (typst cannot stamp a PDF before 1970) before writing anything.
#[test]
fn render_refuses_a_missing_templates_folder_and_a_negative_epoch() {
    let claims = util::manifest_dir().join("claims/h100-2gpu-no-nccl.yaml");
    for (env, args, needle) in [
        (None, vec!["--templates", "no-such-folder"], "templates folder `no-such-folder`"),
        (Some("-1"), vec![], "SOURCE_DATE_EPOCH is `-1`"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = assert_cmd::Command::cargo_bin("verdict").unwrap();
        cmd.current_dir(dir.path()).arg("render").arg(&claims).args(["--out", "out"]).args(&args);
        if let Some(e) = env {
            cmd.env("SOURCE_DATE_EPOCH", e);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains(needle), "{stderr}");
        assert!(stderr.contains("hint:"), "{stderr}");
        assert!(!dir.path().join("out").exists(), "{needle}: wrote into --out");
    }
}
