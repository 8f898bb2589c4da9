//! `verdict mcp`: the read-only tools served to an agent over the Model Context Protocol.
//!
//! A JSON-RPC 2.0 loop over newline-delimited JSON on stdin and stdout (MCP's stdio
//! transport): the stateless revision 2026-07-28 (`server/discover`, each request stating its
//! revision in `_meta`, the client's roots asked for as input a call requires), and the
//! `initialize` handshake of revisions 2024-11-05 to 2025-11-25.
//! The tools call the functions the commands call (`tools.rs`), read paths only under the
//! granted roots (`roots.rs`), check their arguments against their own input schemas
//! (`args.rs`) and cap what they return, saying what was cut (`cap.rs`). Nothing here writes
//! a file.

pub mod args;
pub mod cap;
pub mod roots;
pub mod tools;

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde_json::{Value, json};

/// The handshake's protocol revisions, newest first. A client that offers another is
/// answered with the newest, as the handshake prescribes.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The stateless revisions: no handshake; each request names its revision in `_meta`.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// `_meta` keys of the stateless revisions.
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// JSON-RPC's error codes used here.
mod code {
    pub(super) const PARSE_ERROR: i64 = -32700;
    pub(super) const INVALID_REQUEST: i64 = -32600;
    pub(super) const METHOD_NOT_FOUND: i64 = -32601;
    pub(super) const INVALID_PARAMS: i64 = -32602;
    pub(super) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// What the server tells the client about itself, for a model's prompt.
const INSTRUCTIONS: &str = "verdict audits claims about GPU profiles (Nsight Systems SQLite exports). Start with `inspect` on a trace (devices, time range, NVTX), list `analyses` and run `query` to measure; write the claims as YAML (the `schema` tool gives their JSON Schema; docs/claims.md in the project explains them) and `check` them: each part gets gates R1-R4 (window, population, metric and denominator, aggregation and units) and each claim a verdict. A failed gate names what the claim speaks of and what the evidence covers; `explain` gives any gate or rule key's text in en or zh-TW. Paths are read only under the roots the client grants or the server's --root folders.";

/// A JSON-RPC error: code, message, and data when there is more to say.
#[derive(Debug)]
pub struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }
}

/// The server's state: the roots and whether the client of the handshake has its own.
pub struct Server {
    roots: roots::Roots,
    /// The client declared the `roots` capability: its roots are asked for.
    client_roots: bool,
    /// The id of the `roots/list` request the server waits for, if any.
    pending_roots: Option<String>,
    next_id: u64,
}

/// The incoming messages: lines read ahead while waiting for a response come first.
struct Inbox<R> {
    reader: R,
    queue: VecDeque<Vec<u8>>,
}

impl<R: BufRead> Inbox<R> {
    /// The next line from the queue, else from the reader; None at the end of input.
    fn next(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if let Some(line) = self.queue.pop_front() {
            return Ok(Some(line));
        }
        self.read()
    }

    /// The next line from the reader, skipping empty ones; None at the end of input.
    fn read(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        loop {
            let mut line = Vec::new();
            if self.reader.read_until(b'\n', &mut line)? == 0 {
                return Ok(None);
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(line));
            }
        }
    }
}

impl Server {
    /// A server whose roots are the folders `dirs` (each must exist), and those the client
    /// grants.
    pub fn new(dirs: &[PathBuf]) -> Result<Server, crate::Hinted> {
        Ok(Server {
            roots: roots::Roots::new(dirs)?,
            client_roots: false,
            pending_roots: None,
            next_id: 0,
        })
    }

    /// Serves requests from `input` until it ends, writing responses (and the server's own
    /// requests) to `output`, one JSON message per line.
    pub fn serve(&mut self, input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
        let mut inbox = Inbox { reader: input, queue: VecDeque::new() };
        while let Some(line) = inbox.next()? {
            self.handle(&line, &mut inbox, &mut output)?;
        }
        Ok(())
    }

    /// One incoming line: a request, a notification or a response to the server's request.
    fn handle<R: BufRead>(
        &mut self,
        line: &[u8],
        inbox: &mut Inbox<R>,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        // A line that is not UTF-8 is refused, never read with its bytes replaced.
        let parsed = std::str::from_utf8(line)
            .map_err(|e| format!("a message must be UTF-8 text ({e})"))
            .and_then(|text| serde_json::from_str::<Value>(text).map_err(|e| e.to_string()));
        let msg = match parsed {
            Ok(v) => v,
            Err(e) => return send(out, &error_response(Value::Null, code::PARSE_ERROR, &e)),
        };
        let Some(obj) = msg.as_object() else {
            // Batches were removed from the protocol in 2025-06-18.
            return send(
                out,
                &error_response(
                    Value::Null,
                    code::INVALID_REQUEST,
                    "a message must be one JSON-RPC object (batches are not supported)",
                ),
            );
        };
        let id = obj.get("id").cloned();
        match (obj.get("method").and_then(Value::as_str), id) {
            (Some(method), Some(id)) => {
                let params = obj.get("params").cloned().unwrap_or(Value::Null);
                let reply = match self.request(method, &params, inbox)? {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(e) => {
                        let mut reply = error_response(id, e.code, &e.message);
                        if let Some(data) = e.data {
                            reply["error"]["data"] = data;
                        }
                        reply
                    }
                };
                send(out, &reply)
            }
            (Some(method), None) => self.notification(method, out),
            (None, Some(id)) => {
                self.response(&id, obj.get("result"));
                Ok(())
            }
            (None, None) => send(
                out,
                &error_response(
                    Value::Null,
                    code::INVALID_REQUEST,
                    "neither a request nor a response",
                ),
            ),
        }
    }

    /// A request's result, or its error. A request that names a stateless revision in its
    /// `_meta` gets that revision's result shapes.
    fn request<R: BufRead>(
        &mut self,
        method: &str,
        params: &Value,
        inbox: &mut Inbox<R>,
    ) -> std::io::Result<Result<Value, RpcError>> {
        let meta = params.get("_meta");
        let stated = meta.and_then(|m| m.get(META_VERSION)).and_then(Value::as_str);
        let modern = match stated {
            Some(v) if MODERN_VERSIONS.contains(&v) => true,
            Some(v) if method == "server/discover" || !PROTOCOL_VERSIONS.contains(&v) => {
                return Ok(Err(unsupported(v)));
            }
            None if method == "server/discover" => return Ok(Err(unsupported(""))),
            _ => false,
        };
        let result = match method {
            "server/discover" => Ok(json!({
                "supportedVersions": MODERN_VERSIONS,
                "capabilities": { "tools": { "listChanged": false } },
                "instructions": INSTRUCTIONS,
                "cacheScope": "public",
                "ttlMs": 0,
                "_meta": { META_SERVER_INFO: server_info() },
            })),
            "initialize" => Ok(self.initialize(params)),
            "ping" => Ok(json!({})),
            "tools/list" if modern => {
                Ok(json!({ "tools": tools::list(), "cacheScope": "public", "ttlMs": 0 }))
            }
            "tools/list" => Ok(json!({ "tools": tools::list() })),
            "tools/call" => {
                let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
                let empty = serde_json::Map::new();
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => Ok(&empty),
                    Some(Value::Object(m)) => Ok(m),
                    Some(_) => {
                        Err(RpcError::new(code::INVALID_PARAMS, "`arguments` must be an object"))
                    }
                };
                let roots = if modern {
                    // Stateless: the client's roots come with the call that reads a path, asked
                    // for as input the call requires when the client has them.
                    let has_roots = meta
                        .and_then(|m| m.get(META_CAPABILITIES))
                        .and_then(|c| c.get("roots"))
                        .is_some_and(Value::is_object);
                    match params.pointer("/inputResponses/roots/roots").and_then(Value::as_array) {
                        Some(given) => Some(self.roots.with_client(&uri_list(given))),
                        None if has_roots && tools::reads_paths(name) => {
                            return Ok(Ok(json!({
                                "resultType": "input_required",
                                "inputRequests": { "roots": { "method": "roots/list" } },
                            })));
                        }
                        None => None,
                    }
                } else {
                    self.await_roots(inbox)?;
                    None
                };
                let roots = roots.as_ref().unwrap_or(&self.roots);
                arguments.and_then(|a| {
                    tools::call(name, a, roots).ok_or_else(|| {
                        RpcError::new(
                            code::INVALID_PARAMS,
                            format!("unknown tool `{name}`; tools: {}", tools::NAMES.join(", ")),
                        )
                    })
                })
            }
            _ => Err(RpcError::new(code::METHOD_NOT_FOUND, format!("method `{method}` not found"))),
        };
        Ok(result.map(|mut r| {
            if modern {
                r["resultType"] = json!("complete");
            }
            r
        }))
    }

    /// The handshake: the revision both speak, the tools capability, who the server is.
    fn initialize(&mut self, params: &Value) -> Value {
        let offered = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        let version =
            PROTOCOL_VERSIONS.iter().find(|v| **v == offered).unwrap_or(&PROTOCOL_VERSIONS[0]);
        self.client_roots = params.pointer("/capabilities/roots").is_some_and(Value::is_object);
        json!({
            "protocolVersion": version,
            "capabilities": { "tools": { "listChanged": false } },
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        })
    }

    /// A notification: after the handshake, and whenever the client's roots change, its
    /// roots are asked for.
    fn notification(&mut self, method: &str, out: &mut impl Write) -> std::io::Result<()> {
        match method {
            "notifications/initialized" | "notifications/roots/list_changed"
                if self.client_roots =>
            {
                self.next_id += 1;
                let id = format!("verdict-roots-{}", self.next_id);
                self.pending_roots = Some(id.clone());
                send(out, &json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"}))
            }
            _ => Ok(()),
        }
    }

    /// A response to the server's own request: the client's roots.
    fn response(&mut self, id: &Value, result: Option<&Value>) {
        if self.pending_roots.as_deref() != id.as_str() {
            return;
        }
        self.pending_roots = None;
        let given = result.and_then(|r| r.get("roots")).and_then(Value::as_array);
        self.roots.set_client(&given.map(|g| uri_list(g)).unwrap_or_default());
    }

    /// Waits for the answer to a pending `roots/list` before a tool reads a path: messages
    /// read meanwhile are kept, in order, for later.
    fn await_roots<R: BufRead>(&mut self, inbox: &mut Inbox<R>) -> std::io::Result<()> {
        while self.pending_roots.is_some() {
            let Some(line) = inbox.read()? else {
                self.pending_roots = None;
                return Ok(());
            };
            let is_response = serde_json::from_slice::<Value>(&line)
                .ok()
                .filter(|m| m.get("method").is_none() && m.get("id").is_some());
            match is_response {
                Some(m) => self.response(&m["id"], m.get("result")),
                None => inbox.queue.push_back(line),
            }
        }
        Ok(())
    }
}

/// Who the server is.
fn server_info() -> Value {
    json!({
        "name": "verdict",
        "title": "verdict: claims about GPU profiles, judged against the trace",
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// The URIs of a `roots/list` result's roots.
fn uri_list(roots: &[Value]) -> Vec<&str> {
    roots.iter().filter_map(|r| r.get("uri").and_then(Value::as_str)).collect()
}

/// The error for a revision the server does not speak, with those it does.
fn unsupported(version: &str) -> RpcError {
    let supported: Vec<&str> = MODERN_VERSIONS.iter().chain(PROTOCOL_VERSIONS).copied().collect();
    RpcError {
        code: code::UNSUPPORTED_PROTOCOL_VERSION,
        message: format!("protocol version `{version}` is not supported"),
        data: Some(json!({ "supported": supported, "requested": version })),
    }
}

fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Writes one message as one line and flushes it.
fn send(out: &mut impl Write, msg: &Value) -> std::io::Result<()> {
    let mut line = serde_json::to_string(msg).map_err(std::io::Error::other)?;
    line.push('\n');
    out.write_all(line.as_bytes())?;
    out.flush()
}
