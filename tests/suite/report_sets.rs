//! Report sets (issue 12): a render's files land together or not at all, under a lock, with a
//! manifest that names the run and every file; an interrupt kills typst and leaves the old set;
//! files of the same report that a render did not write are removed and named.
//!
//! Most tests use a stand-in typst (a shell script, through `TYPST_BIN`) whose `compile` can
//! succeed at once, fail, hang until killed, or wait for a gate file, so each case happens at a
//! known moment whether or not the real typst is installed.

use crate::util;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;

const CLAIMS: &str = "claims/day26-profile-blind.yaml";
const ID: &str = "day26-profile-blind";
/// The render date of the first render in each test (2026-09-03 UTC) and of the second.
const EPOCH: &str = "1788393600";
const LATER_EPOCH: &str = "1788480000";

fn verdict() -> Command {
    let mut c = Command::cargo_bin("verdict").unwrap();
    c.current_dir(util::manifest_dir());
    c
}

/// A stand-in typst that answers `--version` and `fonts` as the real one with the CJK font.
/// `compile` does what `FAKE_TYPST` says: `ok` (or unset) writes a "PDF" holding its Typst
/// source; `fail` prints a diagnostic on line 3 of its source and exits 1; `hang` starts a
/// child, writes both pids to `$FAKE_TYPST_PIDS` and waits for ever; `gate` touches
/// `$FAKE_TYPST_GATE.started`, then waits for `$FAKE_TYPST_GATE` before writing.
fn fake_typst(dir: &Path) -> PathBuf {
    let p = dir.join("typst");
    std::fs::write(
        &p,
        r#"#!/bin/sh
case "$1" in
  --version) echo 'typst 0.15.1 (stand-in)'; exit 0 ;;
  fonts) echo 'Noto Sans CJK TC'; exit 0 ;;
esac
for a; do in=$out; out=$a; done
case "$FAKE_TYPST" in
  fail) echo "$in:3:2: error: unknown variable: nope" >&2; exit 1 ;;
  hang)
    sleep 600 &
    echo "$$ $!" > "$FAKE_TYPST_PIDS.part" && mv "$FAKE_TYPST_PIDS.part" "$FAKE_TYPST_PIDS"
    wait
    exit 0 ;;
  gate)
    touch "$FAKE_TYPST_GATE.started"
    while [ ! -e "$FAKE_TYPST_GATE" ]; do sleep 0.05; done ;;
esac
{ printf '%%PDF-1.7 stand-in\n'; cat "$in"; } > "$out"
"#,
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    p
}

/// A render of `claims` into `out` with the stand-in typst in mode `mode`.
fn render_cmd(claims: &Path, out: &Path, typst: &Path, mode: &str, args: &[&str]) -> Command {
    let mut c = verdict();
    c.env("TYPST_BIN", typst)
        .env("FAKE_TYPST", mode)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .arg("render")
        .arg(claims)
        .arg("--out")
        .arg(out)
        .args(args);
    c
}

fn ok(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    err
}

/// The claims of the day26 example copied into `dir` as `NAME.yaml`, with `marker` before both
/// titles, so each copy's reports say which copy made them.
fn claims_copy(dir: &Path, name: &str, marker: &str) -> PathBuf {
    let root = util::manifest_dir();
    let text = std::fs::read_to_string(root.join(CLAIMS)).unwrap();
    let trace = root.join("fixtures/day26/megatron.sqlite");
    let text = text
        .replace("../fixtures/day26/megatron.sqlite", &trace.display().to_string())
        .replace("zh-TW: \"Day 26：", &format!("zh-TW: \"{marker} Day 26："))
        .replace("en: \"Day 26: ", &format!("en: \"{marker} Day 26: "));
    assert_eq!(text.matches(marker).count(), 2, "both titles carry the marker");
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// Every entry of a folder: its bytes (files) and inode, so a file replaced by an identical
/// one still counts as changed.
fn snapshot(dir: &Path) -> BTreeMap<String, (Option<Vec<u8>>, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            #[cfg(unix)]
            let ino = std::os::unix::fs::MetadataExt::ino(&meta);
            #[cfg(not(unix))]
            let ino = 0;
            let bytes = meta.is_file().then(|| std::fs::read(e.path()).unwrap());
            (e.file_name().to_string_lossy().to_string(), (bytes, ino))
        })
        .collect()
}

/// The entries of a folder whose names start with `.verdict-`: temporary folders and the lock.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".verdict-"))
        .collect()
}

/// The manifest of report `ID` in `out`.
fn manifest(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join(format!("{ID}.manifest.json"))).unwrap())
        .unwrap()
}

/// The names the manifest lists, after checking that each file on disk has the size and
/// sha256 it states.
fn check_manifest(out: &Path) -> Vec<String> {
    let m = manifest(out);
    let mut names = Vec::new();
    for f in m["files"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        let bytes = std::fs::read(out.join(name)).unwrap_or_else(|_| panic!("{name} is missing"));
        assert_eq!(f["bytes"], bytes.len(), "{name}");
        assert_eq!(f["sha256"], util::sha256_hex(&bytes), "{name} is not the file of the manifest");
        names.push(name.to_string());
    }
    names
}

/// The files of report `ID` in `out` (named `ID.` and then anything).
fn report_files(out: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(&format!("{ID}.")))
        .collect();
    v.sort();
    v
}

/// Waits up to `secs` for `f`.
fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to a minute for a child to end.
fn wait_child(child: &mut Child) -> std::process::ExitStatus {
    let mut status = None;
    wait_for("the render to end", 60, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

#[test]
fn the_manifest_names_the_run_and_every_file_of_the_set_with_its_sha256() {
    // The README's command, default formats: the PDF and PNGs where this machine can make them.
    let dir = tempfile::tempdir().unwrap();
    let out = verdict()
        .args(["render", CLAIMS, "--profile", "full,blog", "--out"])
        .arg(dir.path())
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .output()
        .unwrap();
    ok(&out);
    let m = manifest(dir.path());
    assert_eq!(m["report"], ID);
    assert_eq!(m["tool"]["name"], "verdict");
    assert_eq!(m["tool"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["render_date"], "2026-09-03");
    let claims = std::fs::read(util::manifest_dir().join(CLAIMS)).unwrap();
    assert_eq!(m["claims_sha256"], util::sha256_hex(&claims));
    let mut listed = check_manifest(dir.path());
    listed.push(format!("{ID}.manifest.json"));
    listed.sort();
    // The folder holds the set and nothing else: no lock, no temporary folder.
    let mut all: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    all.sort();
    assert_eq!(all, listed);
    // stdout names the same files, the manifest last.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let wrote: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("wrote ")).collect();
    assert_eq!(wrote.len(), listed.len(), "{stdout}");
    assert!(wrote.last().unwrap().ends_with(&format!("{ID}.manifest.json")), "{stdout}");
}

#[test]
fn a_failed_render_leaves_the_previous_set_untouched_and_no_temporary_folder() {
    let dir = tempfile::tempdir().unwrap();
    let typst = fake_typst(dir.path());
    let claims = util::manifest_dir().join(CLAIMS);
    let out_dir = dir.path().join("out");
    ok(&render_cmd(&claims, &out_dir, &typst, "ok", &["--format", "md,pdf"]).output().unwrap());
    let before = snapshot(&out_dir);
    assert!(before.contains_key(&format!("{ID}.en.pdf")));

    // typst fails on the second render's source: its diagnostic is quoted with the line.
    let out = render_cmd(&claims, &out_dir, &typst, "fail", &["--format", "md,pdf"])
        .env("SOURCE_DATE_EPOCH", LATER_EPOCH)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{ID}.zh-TW.typ:3:2: error: unknown variable: nope")), "{err}");
    assert!(err.contains("\n  3 | "), "the source line is not quoted: {err}");
    assert!(err.contains("nothing in the output folder was changed"), "{err}");
    assert_eq!(snapshot(&out_dir), before, "a typst failure changed the folder");

    // A template error and a bad image base fail before the folder is touched.
    let tpl = dir.path().join("tpl");
    std::fs::create_dir_all(&tpl).unwrap();
    std::fs::write(tpl.join("report.typ"), "{{ nope(").unwrap();
    for args in [
        vec!["--format", "md,pdf", "--templates", tpl.to_str().unwrap()],
        vec!["--format", "md,pdf", "--image-base", "ftp://example.org/"],
    ] {
        let out = render_cmd(&claims, &out_dir, &typst, "ok", &args)
            .env("SOURCE_DATE_EPOCH", LATER_EPOCH)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(snapshot(&out_dir), before, "{args:?} changed the folder");
    }
    assert_eq!(temporaries(&out_dir), Vec::<String>::new());
}

/// Whether a process runs (a zombie, killed but not yet reaped by its new parent, does not).
#[cfg(target_os = "linux")]
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit_once(')').map(|(_, r)| r.trim_start()).unwrap_or("");
            !(state.starts_with('Z') || state.starts_with('X'))
        }
    }
}

#[cfg(target_os = "linux")]
#[test]
fn sigterm_or_sigint_during_the_pdf_step_kills_typst_and_keeps_the_old_set() {
    use std::os::unix::process::ExitStatusExt;
    for (signal, number) in [("TERM", 15), ("INT", 2)] {
        let dir = tempfile::tempdir().unwrap();
        let typst = fake_typst(dir.path());
        let claims = util::manifest_dir().join(CLAIMS);
        let out_dir = dir.path().join("out");
        ok(&render_cmd(&claims, &out_dir, &typst, "ok", &["--format", "md,pdf"]).output().unwrap());
        let before = snapshot(&out_dir);

        // A later render, whose typst (and the child it starts) hangs in the PDF step.
        let pids = dir.path().join("pids");
        let mut child = render_cmd(&claims, &out_dir, &typst, "hang", &["--format", "md,pdf"])
            .env("SOURCE_DATE_EPOCH", LATER_EPOCH)
            .env("FAKE_TYPST_PIDS", &pids)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for("typst to start", 60, || pids.exists());
        let typst_pids: Vec<u32> = std::fs::read_to_string(&pids)
            .unwrap()
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(typst_pids.len(), 2);
        assert!(typst_pids.iter().all(|&p| running(p)), "typst is not running");
        assert!(
            temporaries(&out_dir).iter().any(|n| n.starts_with(".verdict-render-")),
            "the render has no temporary folder: {:?}",
            temporaries(&out_dir)
        );

        let kill = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(kill.success());
        let status = wait_child(&mut child);
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        // It ends by the signal, as a shell expects, after saying what it left.
        assert_eq!(status.signal(), Some(number), "{status:?}: {stderr}");
        assert!(stderr.contains(&format!("interrupted by SIG{signal}")), "{stderr}");
        assert!(stderr.contains("the report set there is as it was"), "{stderr}");

        // typst and its child are gone at once: nothing goes on writing.
        wait_for("typst to be gone", 5, || typst_pids.iter().all(|&p| !running(p)));
        assert_eq!(temporaries(&out_dir), Vec::<String>::new(), "SIG{signal}");
        assert_eq!(snapshot(&out_dir), before, "SIG{signal} changed the old set");
    }
}

#[test]
fn two_renders_at_once_end_with_one_consistent_set() {
    let dir = tempfile::tempdir().unwrap();
    let typst = fake_typst(dir.path());
    let out_dir = dir.path().join("out");
    let gate = dir.path().join("go");
    let (a, b) = (claims_copy(dir.path(), "a", "RUN-A"), claims_copy(dir.path(), "b", "RUN-B"));
    let spawn = |claims: &Path, err: &Path| {
        render_cmd(
            claims,
            &out_dir,
            &typst,
            "gate",
            &["--format", "md,pdf", "--lock-timeout", "60"],
        )
        .env("FAKE_TYPST_GATE", &gate)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap()
    };
    // A is in its PDF step, holding the folder's lock, when B starts.
    let (err_a, err_b) = (dir.path().join("a.err"), dir.path().join("b.err"));
    let mut first = spawn(&a, &err_a);
    wait_for("A's typst", 60, || dir.path().join("go.started").exists());
    let mut second = spawn(&b, &err_b);
    wait_for("B to wait for the lock", 60, || {
        std::fs::read_to_string(&err_b).unwrap().contains("waiting for another render into")
    });
    std::fs::write(&gate, "").unwrap();
    assert!(wait_child(&mut first).success(), "{}", std::fs::read_to_string(&err_a).unwrap());
    assert!(wait_child(&mut second).success(), "{}", std::fs::read_to_string(&err_b).unwrap());

    // One set, B's: every file the manifest names is on disk as it says, and no other file of
    // the report is there; every report in it (Markdown, Typst, PDF) was made from B's claims.
    let m = manifest(&out_dir);
    let b_sha = util::sha256_hex(&std::fs::read(&b).unwrap());
    assert_eq!(m["claims_sha256"], b_sha);
    let mut listed = check_manifest(&out_dir);
    for name in &listed {
        let text = String::from_utf8_lossy(&std::fs::read(out_dir.join(name)).unwrap()).to_string();
        assert!(!text.contains("RUN-A"), "{name} holds text of the other run");
        if [".md", ".typ", ".pdf"].iter().any(|ext| name.ends_with(ext)) {
            assert!(text.contains("RUN-B"), "{name} is not from the run of the manifest");
        }
    }
    listed.push(format!("{ID}.manifest.json"));
    listed.sort();
    assert_eq!(report_files(&out_dir), listed);
    assert_eq!(temporaries(&out_dir), Vec::<String>::new());
}

#[test]
fn a_render_waits_for_the_lock_and_fails_clearly_after_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let md = |timeout: &str| {
        let mut c = verdict();
        c.args(["render", CLAIMS, "--format", "md", "--lock-timeout", timeout, "--out"])
            .arg(&out_dir);
        c
    };
    ok(&md("0").output().unwrap());
    let before = snapshot(&out_dir);

    // Another render holds the lock for longer than this one waits.
    let lock_path = out_dir.join(".verdict-render.lock");
    let held = std::fs::File::create(&lock_path).unwrap();
    held.lock().unwrap();
    let mut before_with_lock = before.clone();
    before_with_lock
        .insert(".verdict-render.lock".into(), snapshot(&out_dir)[".verdict-render.lock"].clone());
    let out = md("1").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("waiting for another render into"), "{err}");
    assert!(
        err.contains("another render is still writing into") && err.contains("after 1 s"),
        "{err}"
    );
    assert!(err.contains("--lock-timeout"), "{err}");
    assert_eq!(snapshot(&out_dir), before_with_lock, "a render that timed out changed the folder");

    // Released while the next one waits: that one goes on, and takes the lock file away.
    let err_path = dir.path().join("err");
    let mut waiting = md("60")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    wait_for("the render to wait", 60, || {
        std::fs::read_to_string(&err_path).unwrap().contains("waiting for another render")
    });
    drop(held);
    assert!(wait_child(&mut waiting).success(), "{}", std::fs::read_to_string(&err_path).unwrap());
    assert_eq!(temporaries(&out_dir), Vec::<String>::new());
    check_manifest(&out_dir);
}

#[test]
fn files_of_the_report_that_a_render_did_not_write_are_named_and_removed_with_clean() {
    let dir = tempfile::tempdir().unwrap();
    let typst = fake_typst(dir.path());
    let claims = util::manifest_dir().join(CLAIMS);
    let out_dir = dir.path().join("out");
    // Both languages, two profiles, with PDFs.
    ok(&render_cmd(
        &claims,
        &out_dir,
        &typst,
        "ok",
        &["--profile", "full,blog", "--format", "md,pdf"],
    )
    .output()
    .unwrap());
    // Files that only look like the report's, and a folder named like one of its files.
    let others = [
        format!("{ID}.en.md.bak"),
        format!("{ID}.notes.txt"),
        format!("{ID}.fr.md"),
        format!("{ID}-v2.en.md"),
        "other.en.md".to_string(),
        format!("{ID}.en.overlap-0.svg"),
    ];
    for f in &others {
        std::fs::write(out_dir.join(f), "mine").unwrap();
    }
    let folder = out_dir.join(format!("{ID}.zh-TW.brief.md"));
    std::fs::create_dir(&folder).unwrap();
    let first = report_files(&out_dir);

    // Without --clean, files of the report this render does not write are kept and named.
    let out = render_cmd(&claims, &out_dir, &typst, "ok", &["--lang", "en", "--format", "md"])
        .output()
        .unwrap();
    let err = ok(&out);
    let kept = report_files(&out_dir);
    let stale: Vec<&String> = kept
        .iter()
        .filter(|f| {
            first.contains(f)
                && !check_manifest(&out_dir).contains(f)
                && !others.contains(f)
                && **f != format!("{ID}.manifest.json")
                && **f != format!("{ID}.zh-TW.brief.md")
        })
        .collect();
    assert!(stale.contains(&&format!("{ID}.zh-TW.md")), "{stale:?}");
    assert!(first.iter().all(|f| kept.contains(f)), "a file was removed without --clean: {err}");
    for f in &stale {
        assert!(err.contains(&format!("kept `{}", out_dir.join(f).display())), "{f}: {err}");
    }
    assert_eq!(err.matches("from an earlier run").count(), stale.len(), "{err}");

    // English only, the full report only, Markdown only: no PDF could be made here; --clean.
    let out =
        render_cmd(&claims, &out_dir, &typst, "ok", &["--lang", "en", "--format", "md", "--clean"])
            .output()
            .unwrap();
    let err = ok(&out);
    let mut listed = check_manifest(&out_dir);
    listed.push(format!("{ID}.manifest.json"));
    let now = report_files(&out_dir);
    let removed: Vec<&String> = first.iter().filter(|f| !now.contains(f)).collect();
    for gone in [
        format!("{ID}.zh-TW.md"),
        format!("{ID}.zh-TW.overlap.svg"),
        format!("{ID}.en.pdf"),
        format!("{ID}.en.typ"),
        format!("{ID}.en.blog.md"),
        format!("{ID}.zh-TW.blog.pdf"),
    ] {
        assert!(removed.contains(&&gone), "{gone} stayed");
    }
    // Each removal is named on stderr, and nothing else was removed.
    for f in &removed {
        assert!(
            err.contains(&format!("{f}`: a file of report `{ID}` this render did not write")),
            "{f} was removed without a word: {err}"
        );
    }
    assert_eq!(err.matches("this render did not write").count(), removed.len(), "{err}");
    for f in &others {
        assert_eq!(std::fs::read_to_string(out_dir.join(f)).unwrap(), "mine", "{f}");
    }
    assert!(folder.is_dir());
    // What is left of the report is its set.
    let mut expected: Vec<String> = listed;
    expected.extend(others.iter().filter(|f| f.starts_with(&format!("{ID}."))).cloned());
    expected.push(format!("{ID}.zh-TW.brief.md"));
    expected.sort();
    assert_eq!(now, expected);
}

/// Issue 28: a folder holding a reviewer's filled grades and edited sheets is never
/// replaced by blank ones; the refusal names the files, writes nothing and `--force` is the
/// way to replace them.
#[test]
fn review_sheets_over_a_reviewers_work_are_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let sheets = dir.path().join("sheets");
    std::fs::create_dir(&sheets).unwrap();
    std::fs::write(sheets.join("grades.csv"), "sheet,reviewer\nS01,chen,5,good,\n").unwrap();
    std::fs::write(sheets.join("S02.md"), "edited\n").unwrap();
    std::fs::write(sheets.join("notes.txt"), "mine\n").unwrap();
    let before = snapshot(&sheets);
    let eval = |force: bool| {
        let mut c = verdict();
        c.args(["eval", "claims/eval-day26/eval.yaml", "--review-sheets"]).arg(&sheets);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    let out = eval(false);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("(`S02.md`, `grades.csv`)"), "{stderr}");
    assert!(stderr.contains("hint:") && stderr.contains("--force"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(snapshot(&sheets), before, "a refused run changed the folder");
    let out = eval(true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let grades = std::fs::read_to_string(sheets.join("grades.csv")).unwrap();
    assert!(grades.starts_with("sheet,reviewer,usefulness,next_step,notes\nS01,,,,\n"));
    assert_eq!(std::fs::read_to_string(sheets.join("notes.txt")).unwrap(), "mine\n");
}

/// Issue 28: a protocol-relative `--image-base` (`//host/x`) would load the images from
/// another host, and a bidirectional or invisible control makes the address read as another:
/// both are refused before anything is written, the control shown as an escape.
#[test]
fn an_image_base_that_names_another_host_or_hides_characters_is_refused() {
    for (base, shown, why) in [
        ("//evil.example/x/", "//evil.example/x/", "starts with `//`"),
        ("///evil.example/x/", "///evil.example/x/", "starts with `//`"),
        (
            "https://example.org\u{202e}gro.live/",
            "https://example.org\\u{202e}gro.live/",
            "bidirectional",
        ),
        ("https://exa\u{200b}mple.org/", "https://exa\u{200b}mple.org/", "invisible"),
        ("/posts/\u{2066}x\u{2069}/", "/posts/\\u{2066}x\\u{2069}/", "bidirectional"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let out = verdict()
            .args(["render", CLAIMS, "--format", "md", "--image-base", base, "--out"])
            .arg(&out_dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{base:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("`{shown}` is not an image base")), "{base:?}: {err}");
        assert!(err.contains(why) && err.contains("hint:"), "{base:?}: {err}");
        assert!(!err.contains('\u{202e}') && !err.contains('\u{2066}'), "{err}");
        assert!(!out_dir.exists(), "{base:?}: an error must leave no file behind");
    }
}

/// Issue 28: `templates eject` never writes into a folder that holds anything (it may hold
/// edited templates), and a write that fails part-way (here: the file size limit, past the
/// templates and short of the UI strings) leaves nothing behind, not a partial set.
#[test]
fn templates_eject_refuses_a_non_empty_folder_and_removes_a_partial_set() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = dir.path().join("tpl");
    std::fs::create_dir(&tpl).unwrap();
    std::fs::write(tpl.join("report.md"), "mine\n").unwrap();
    std::fs::write(tpl.join("notes.txt"), "mine\n").unwrap();
    let before = snapshot(&tpl);
    let out = verdict().args(["templates", "eject"]).arg(&tpl).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not empty (it holds `notes.txt`, `report.md`)"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert_eq!(snapshot(&tpl), before);

    #[cfg(unix)]
    {
        let fresh = dir.path().join("new").join("tpl");
        // Files up to 16 KiB (dash's 512-byte blocks) or 32 KiB (bash's): every template, not
        // the UI strings (36 KiB); SIGXFSZ ignored, so the write fails with EFBIG.
        let out = Command::new("sh")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 32; exec \"$0\" templates eject \"$1\"")
            .arg(assert_cmd::cargo::cargo_bin("verdict"))
            .arg(&fresh)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cannot write") && err.contains("en.toml"), "{err}");
        assert!(out.stdout.is_empty());
        assert!(!dir.path().join("new").exists(), "a partial set was left: {err}");
        // With the space back, the same command writes the whole set.
        let out = verdict().args(["templates", "eject"]).arg(&fresh).output().unwrap();
        assert!(out.status.success());
        assert!(
            fresh.join("i18n/zh-TW.toml").is_file() && fresh.join("partials/claim.md").is_file()
        );
    }
}

/// Issue 28: review sheets are written all or none: a write that fails (here `grades.csv`, a
/// folder in the way, after every sheet) takes back the sheets written before it.
#[test]
fn review_sheets_that_fail_part_way_leave_no_sheet() {
    let dir = tempfile::tempdir().unwrap();
    let sheets = dir.path().join("sheets");
    std::fs::create_dir_all(sheets.join("grades.csv")).unwrap();
    let out = verdict()
        .args(["eval", "claims/eval-day26/eval.yaml", "--force", "--review-sheets"])
        .arg(&sheets)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write") && err.contains("grades.csv") && err.contains("hint:"));
    let left: Vec<String> = std::fs::read_dir(&sheets)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["grades.csv"], "{err}");
}
