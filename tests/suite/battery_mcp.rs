//! The hostile battery's MCP cases: a client over stdio, a root with files an agent could write,
//! and a canary outside the root (a trace whose every string starts with `CANARY_`, and its
//! extract). No answer may carry the canary, a digest of a file outside the root, or a word
//! about whether a path outside exists; no call may start a program or hang the server.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util;

const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/day26/megatron.sqlite");

/// How long one answer may take: far more than any call here needs; a hang fails the test.
const PATIENCE: Duration = Duration::from_secs(60);

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next: u64,
}

impl Server {
    fn start(root: &Path, env: &[(&str, &str)]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_verdict"));
        cmd.arg("mcp")
            .arg("--root")
            .arg(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Server { child, stdin, lines, next: 0 };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "battery", "version": "1"}}),
        );
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        match self.lines.recv_timeout(PATIENCE) {
            Ok(line) => {
                let v: Value = serde_json::from_str(&line).unwrap();
                assert_eq!(v["id"], id, "{v}");
                v
            }
            Err(_) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("no answer to `{method}` within {PATIENCE:?}: the server hangs");
            }
        }
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(r.get("error").is_none(), "{r}");
        r["result"].clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A place with a root (holding a copy of the day26 trace) and, beside it, the canary.
struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::copy(TRACE, root.join("megatron.sqlite")).unwrap();
        let canary = outside.join("canary.sqlite");
        std::fs::copy(TRACE, &canary).unwrap();
        {
            let c = rusqlite::Connection::open(&canary).unwrap();
            c.execute("UPDATE StringIds SET value = 'CANARY_' || value", []).unwrap();
        }
        assert!(!outside.join("canary.sqlite-journal").exists());
        Place { _dir: dir, root, outside }
    }

    fn canary(&self) -> PathBuf {
        self.outside.join("canary.sqlite")
    }

    /// The canary's extract, outside the root.
    fn canary_extract(&self) -> PathBuf {
        let out = self.outside.join("canary-extract");
        if !out.exists() {
            let o = util::run(&["extract", util::s(&self.canary()), "--out", util::s(&out)]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        out
    }

    /// An extract of the root's trace, inside the root.
    fn inside_extract(&self, name: &str) -> PathBuf {
        let out = self.root.join(name);
        let src = self.root.join("megatron.sqlite");
        let o = util::run(&["extract", util::s(&src), "--out", util::s(&out)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    }
}

/// The whole answer as text, for what must not be in it.
fn text(r: &Value) -> String {
    r.to_string()
}

fn assert_refused_without_canary(r: &Value, what: &str) {
    assert_eq!(r["isError"], true, "{what}: {r}");
    let t = text(r);
    assert!(!t.contains("CANARY_"), "{what}: the canary's strings came back: {t}");
}

fn sides(a: &str, b: &str) -> Value {
    json!({
        "analysis": "compare",
        "of": "kernels",
        "metric": "count",
        "a": [a, "devices=4", "window=39.964:46.123", "split=2"],
        "b": [b, "devices=4", "window=39.964:46.123", "split=2"],
    })
}

#[test]
fn a_side_key_with_spaces_is_read_as_the_command_reads_it_and_confined() {
    let p = Place::new();
    let mut s = Server::start(&p.root, &[]);
    // The control: inside the root, the comparison runs and gives kernel names.
    let ok = s.call("query", sides("trace=megatron.sqlite", "trace=megatron.sqlite"));
    assert_eq!(ok["isError"], false, "{ok}");
    let canary = p.canary();
    for key in [" trace", "trace ", "\ttrace", " trace "] {
        let b = format!("{key}={}", canary.display());
        let r = s.call("query", sides("trace=megatron.sqlite", &b));
        assert_refused_without_canary(&r, &format!("side key {key:?}"));
        assert!(text(&r).contains("outside the roots"), "{key:?}: {r}");
    }
}

#[test]
fn param_takes_only_the_parameters_served_and_never_starts_a_program() {
    let p = Place::new();
    let marker = p.outside.join("started");
    let python = p.outside.join("python");
    std::fs::write(&python, format!("#!/bin/sh\ntouch '{}'\nsleep 5\n", marker.display())).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut s = Server::start(&p.root, &[("VERDICT_PYTHON", util::s(&python))]);
    for param in [
        "engine=dask=127.0.0.1:9",
        " engine=dask=127.0.0.1:9",
        "engine =rust",
        "cluster=tcp://127.0.0.1:9",
    ] {
        let mut args = sides("trace=megatron.sqlite", "trace=megatron.sqlite");
        args["of"] = json!("nccl-skew");
        args["metric"] = json!("skew_ns");
        args["param"] = json!([param]);
        let r = s.call("query", args);
        assert_eq!(r["isError"], true, "{param:?}: {r}");
        assert!(text(&r).contains("not a parameter this tool takes"), "{param:?}: {r}");
    }
    // A value that looks like the option is a value: it names no engine.
    for (k, v) in [("match", "--engine=dask=127.0.0.1:9"), ("window", "--engine=dask=127.0.0.1:9")]
    {
        let mut args = json!({"analysis": "nccl-skew", "trace": "megatron.sqlite"});
        args[k] = json!(v);
        let _ = s.call("query", args);
    }
    // Without it, the analysis runs in process.
    let r = s.call("query", json!({"analysis": "nccl-skew", "trace": "megatron.sqlite"}));
    assert_eq!(r["isError"], false, "{r}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "a call started VERDICT_PYTHON");
}

#[test]
fn an_extract_in_the_root_reads_no_table_outside_its_folder() {
    let p = Place::new();
    let canary = p.canary_extract();
    let outside_table = canary.join("StringIds.parquet");
    let outside_sha = util::sha256_file(&outside_table);
    let mut s = Server::start(&p.root, &[]);
    for (n, entry) in [
        outside_table.display().to_string(),
        "../../outside/canary-extract/StringIds.parquet".to_string(),
        "sub/../StringIds.parquet".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = p.inside_extract(&format!("x{n}"));
        let manifest = dir.join("verdict-extract.json");
        let mut m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
        for t in m["tables"].as_array_mut().unwrap() {
            if t["table"] == "StringIds" {
                t["file"] = json!(entry);
                // First with the right digest of the outside file, then a wrong one, which
                // must not be answered with the real digest.
                t["sha256"] = json!(outside_sha);
            }
        }
        std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
        let r = s.call(
            "query",
            json!({"analysis": "kernels", "trace": format!("x{n}"), "all-devices": true}),
        );
        assert_refused_without_canary(&r, &format!("manifest entry {entry}"));
        assert!(text(&r).contains("not a plain file name"), "{entry}: {r}");
        for t in m["tables"].as_array_mut().unwrap() {
            if t["table"] == "StringIds" {
                t["sha256"] = json!("0".repeat(64));
            }
        }
        std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
        let r = s.call("inspect", json!({"trace": format!("x{n}")}));
        assert_refused_without_canary(&r, &format!("manifest entry {entry}, wrong digest"));
        assert!(!text(&r).contains(&outside_sha), "the outside file's sha256 was answered: {r}");
    }
}

#[cfg(unix)]
#[test]
fn parquet_links_out_of_the_root_are_refused_at_open() {
    let p = Place::new();
    let canary = p.canary_extract();
    let outside_sha = util::sha256_file(&canary.join("StringIds.parquet"));
    let mut s = Server::start(&p.root, &[]);
    // An nsys-parquetdir-like folder whose tables are links to the canary's.
    let dir = p.root.join("pq");
    std::fs::create_dir(&dir).unwrap();
    for e in std::fs::read_dir(&canary).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".parquet") {
            std::os::unix::fs::symlink(e.path(), dir.join(&name)).unwrap();
        }
    }
    let r = s.call("query", json!({"analysis": "kernels", "trace": "pq", "all-devices": true}));
    assert_refused_without_canary(&r, "linked tables");
    assert!(text(&r).contains("outside the roots"), "{r}");
    assert!(!text(&r).contains(&outside_sha), "{r}");
    // An extract in the root whose one table is a link out, its digest the outside file's.
    let x = p.inside_extract("x");
    std::fs::remove_file(x.join("StringIds.parquet")).unwrap();
    std::os::unix::fs::symlink(canary.join("StringIds.parquet"), x.join("StringIds.parquet"))
        .unwrap();
    let r = s.call("inspect", json!({"trace": "x"}));
    assert_refused_without_canary(&r, "a linked table of an extract");
    assert!(text(&r).contains("outside the roots"), "{r}");
    assert!(!text(&r).contains(&outside_sha), "{r}");
}

#[cfg(unix)]
#[test]
fn a_link_out_of_the_root_is_outside_whether_or_not_its_target_exists() {
    let p = Place::new();
    std::os::unix::fs::symlink(p.outside.join("missing.sqlite"), p.root.join("gone.sqlite"))
        .unwrap();
    std::os::unix::fs::symlink(p.canary(), p.root.join("there.sqlite")).unwrap();
    std::os::unix::fs::symlink(p.outside.join("nodir/x.sqlite"), p.root.join("deep.sqlite"))
        .unwrap();
    let mut s = Server::start(&p.root, &[]);
    let answers: Vec<String> = ["gone.sqlite", "there.sqlite", "deep.sqlite"]
        .iter()
        .map(|t| {
            let r = s.call("inspect", json!({"trace": t}));
            assert_refused_without_canary(&r, t);
            let t = r["structuredContent"]["error"]["message"].as_str().unwrap().to_string();
            assert!(t.contains("outside the roots"), "{t}");
            assert!(!t.contains("not exist") && !t.contains("not found"), "{t}");
            t
        })
        .collect();
    // The answers differ only by the name asked for: nothing tells which target exists.
    let generic: Vec<String> = answers
        .iter()
        .zip(["gone.sqlite", "there.sqlite", "deep.sqlite"])
        .map(|(a, n)| {
            a.replace(n, "NAME")
                .replace("missing.sqlite", "T")
                .replace("canary.sqlite", "T")
                .replace("nodir/x.sqlite", "T")
        })
        .collect();
    assert_eq!(generic[0], generic[1]);
    assert_eq!(generic[1], generic[2]);
}

#[cfg(unix)]
#[test]
fn fifos_and_devices_in_the_root_are_refused_and_the_server_goes_on() {
    let p = Place::new();
    let fifo = p.root.join("pipe.sqlite");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::os::unix::fs::symlink("/dev/zero", p.root.join("zero.json")).unwrap();
    // A folder whose member is a FIFO, and an extract whose table is `/dev/zero`.
    let dir = p.root.join("pq");
    std::fs::create_dir(&dir).unwrap();
    assert!(Command::new("mkfifo").arg(dir.join("StringIds.parquet")).status().unwrap().success());
    let x = p.inside_extract("x");
    std::fs::remove_file(x.join("StringIds.parquet")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", x.join("StringIds.parquet")).unwrap();
    let mut s = Server::start(&p.root, &[]);
    for t in ["pipe.sqlite", "zero.json", "pq", "x"] {
        let r = s.call("inspect", json!({"trace": t}));
        assert_eq!(r["isError"], true, "{t}: {r}");
        let hints =
            r["structuredContent"]["error"]["hints"].as_array().cloned().unwrap_or_default();
        assert!(
            hints.iter().any(|h| !h.as_str().unwrap_or("").trim().is_empty()),
            "{t}: no hint: {r}"
        );
    }
    // The server still answers a call that reads a good trace.
    let r = s.call("inspect", json!({"trace": "megatron.sqlite"}));
    assert_eq!(r["isError"], false, "{r}");
}

#[cfg(unix)]
#[test]
fn a_side_file_linked_out_of_the_root_is_refused_without_its_size() {
    let p = Place::new();
    std::os::unix::fs::symlink(p.canary(), p.root.join("megatron.sqlite-wal")).unwrap();
    let size = std::fs::metadata(p.canary()).unwrap().len();
    let mut s = Server::start(&p.root, &[]);
    let r = s.call("inspect", json!({"trace": "megatron.sqlite"}));
    assert_refused_without_canary(&r, "a -wal link");
    let t = text(&r);
    assert!(t.contains("outside the roots"), "{t}");
    assert!(!t.contains(&size.to_string()), "the outside file's size was answered: {t}");
}
