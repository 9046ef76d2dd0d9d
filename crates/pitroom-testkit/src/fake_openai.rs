//! Scripted fake OpenAI-compatible chat-completions server for tests.
//!
//! A Rust port of `shared/reference/fakes/fake-openai-server.py`, with the same
//! script format, the same scenario and step selection and the same reply
//! shapes. Tests start it in-process with [`FakeOpenAi::start`] and point the
//! worker CLI (OpenCode, Kilo) at [`FakeOpenAi::base_url`]. It listens on
//! 127.0.0.1 only, and serves one thread per connection.
//!
//! # Routes
//! - `POST …/chat/completions`: the scripted reply, streamed (SSE) when the
//!   request says `"stream": true`, else a `chat.completion` JSON body.
//! - `GET …/models`: the ids in `script.models`, or `["fake-model"]`.
//! - `GET /__requests`: the request log as JSON. `POST /__reset` clears the log
//!   and the per-step hit counters. `GET /__health`: `{"ok": true}`.
//! - Anything else: 404 with an OpenAI-style JSON error body.
//!
//! # Script
//! ```text
//! {
//!   "aux": {"text": "Fake title"},   reply for requests WITHOUT tools (titles,
//!                                    summaries); consumes no step
//!   "models": ["fake-model"],        ids listed by GET …/models
//!   "default_scenario": "default",   optional; the Python's --scenario
//!   "workdir": "/fallback",          optional; the Python's --workdir
//!   "scenarios": {"default": [STEP, STEP, …], "rate-limit": […]},
//!   "by_model": {"some-model": "rate-limit"}   optional; a request for that
//!                                    model plays that scenario, whatever the
//!                                    prompt names (to script a fallback chain)
//! }
//! ```
//!
//! **Scenario**: the user messages, latest first, are searched for
//! `scenario:NAME` (or `scenario=NAME`, NAME in `[A-Za-z0-9_.-]+`); the first
//! match wins, otherwise the default scenario. An unknown scenario answers
//! with the text `fake-openai: unknown scenario NAME`.
//!
//! **Step**: stateless; the index is the number of assistant messages after the
//! last user message, so a follow-up prompt starts again at step 0. Past the
//! end, the last step is reused.
//!
//! A STEP is a response object, or a list of them served one after the other
//! on repeated hits of the same (scenario, step), the last one repeating: that
//! is how retries are scripted, e.g. `[{"error": 429}, {"text": "ok"}]`.
//!
//! Response object fields (all optional):
//! - `text`, `reasoning` (streamed as `delta.reasoning_content`),
//!   `tool_calls: [{"name", "arguments": {…} or "raw string", "id"}]`
//! - `error: 429` (any status) with optional `error_message`, `error_body`
//!   (object, or a raw string), and `headers` (extra response headers)
//! - `raw` (a verbatim HTTP 200 body, `raw_content_type` defaults to
//!   `application/json`), `raw_stream` (verbatim SSE payloads)
//! - `usage: {prompt_tokens, completion_tokens, cached_tokens,
//!   reasoning_tokens, cache_write_tokens}` (defaults 100, 20, 0, 0, absent)
//! - `finish_reason` (default `tool_calls` when there are tool calls, else
//!   `stop`); an explicit `null` sends no finish reason at all
//! - `delay_ms`, `chunk_delay_ms`, `hang: true` (never answer, until the
//!   client disconnects or `hang_s` seconds pass, default 600)
//!
//! String values anywhere in the chosen response may use `{{workdir}}` (from
//! `Working directory: /path` in a system message, or `<cwd>`/`Current working
//! directory:` in a user message) and `{{port}}` (this server's port).

use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Read timeout on every connection: blocking reads wake this often to notice
/// that the server is stopping.
const POLL: Duration = Duration::from_millis(100);
/// A client that stops reading must not pin a handler thread forever.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a closing connection waits for the client to close its side.
const LINGER: Duration = Duration::from_secs(1);
/// How long `Drop` waits for the accept thread before detaching it.
const DROP_WAIT: Duration = Duration::from_secs(2);
const MAX_HEAD: usize = 64 * 1024;
const MAX_LINE: usize = 8 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;
/// The Python's default for `hang` without `hang_s`.
const DEFAULT_HANG_SECS: f64 = 600.0;

/// A running fake OpenAI-compatible server; dropping it stops the server.
pub struct FakeOpenAi {
    shared: Arc<Shared>,
    accept_thread: Option<JoinHandle<()>>,
    /// Disconnects when the accept thread ends, so `Drop` can wait with a bound.
    accept_done: mpsc::Receiver<()>,
}

impl FakeOpenAi {
    /// Starts the server on 127.0.0.1 with an OS-chosen port.
    ///
    /// `script` has the format described in the module documentation. The
    /// server runs until the returned value is dropped.
    pub fn start(script: Value) -> io::Result<FakeOpenAi> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared::new(script, port));
        let (done_tx, accept_done) = mpsc::channel::<()>();
        let accepting = Arc::clone(&shared);
        let accept_thread = thread::Builder::new()
            .name("fake-openai-accept".into())
            .spawn(move || {
                let _done = done_tx;
                accept_loop(&accepting, &listener);
            })?;
        Ok(FakeOpenAi {
            shared,
            accept_thread: Some(accept_thread),
            accept_done,
        })
    }

    /// The port the server listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// The OpenAI base URL to configure in a client: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.shared.port)
    }

    /// Every request received so far, in order (the `/__…` control routes are
    /// not logged).
    ///
    /// Each entry is `{"seq", "time", "method", "path", "headers": {lowercased
    /// name: value}, "body": parsed JSON or string, "kind": "chat" | "aux" |
    /// "models" | "other", "scenario": name or null, "step": index or null}`,
    /// plus `hit` and `tool_names` for chat requests and `note` for rejected
    /// ones. `step` is the raw index (before clamping to the last step), `hit`
    /// the number of earlier hits of the same step. Aux requests have
    /// `"scenario": "aux"` as in the Python.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.state).log.clone()
    }

    /// Only the chat requests that consumed a script step (`"kind": "chat"`).
    pub fn chat_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|entry| entry["kind"] == "chat")
            .collect()
    }
}

impl fmt::Debug for FakeOpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeOpenAi")
            .field("port", &self.shared.port)
            .finish_non_exhaustive()
    }
}

impl Drop for FakeOpenAi {
    /// Stops accepting, unblocks every handler (including hanging ones) and
    /// joins the accept thread, waiting at most a couple of seconds.
    fn drop(&mut self) {
        self.shared.stop();
        // A blocking accept() only returns for a connection, so make one.
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.shared.port));
        drop(TcpStream::connect_timeout(&addr, Duration::from_secs(1)));
        if let Some(handle) = self.accept_thread.take() {
            match self.accept_done.recv_timeout(DROP_WAIT) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                    let _ = handle.join();
                }
                // Detach rather than hang the test that dropped us.
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// State shared by the accept thread, the connection threads and the handle.
struct Shared {
    script: Value,
    port: u16,
    default_scenario: String,
    fallback_workdir: String,
    stopping: AtomicBool,
    state: Mutex<State>,
    /// Clones of the open connections, so a stop can shut them all down.
    connections: Mutex<HashMap<u64, TcpStream>>,
    next_connection: AtomicU64,
    /// Scripted sleeps wait on this condition so that a stop cuts them short.
    sleep_lock: Mutex<()>,
    sleep_wake: Condvar,
}

#[derive(Default)]
struct State {
    /// Hits per (scenario, clamped step index), to walk step lists.
    hits: HashMap<(String, usize), usize>,
    log: Vec<Value>,
    seq: u64,
}

/// Locks without panicking: a poisoned lock still holds usable test data.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn new(script: Value, port: u16) -> Shared {
        let text = |key: &str| script.get(key).and_then(Value::as_str).map(str::to_owned);
        let default_scenario = text("default_scenario").unwrap_or_else(|| "default".into());
        let fallback_workdir = text("workdir").unwrap_or_default();
        Shared {
            script,
            port,
            default_scenario,
            fallback_workdir,
            stopping: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            connections: Mutex::new(HashMap::new()),
            next_connection: AtomicU64::new(0),
            sleep_lock: Mutex::new(()),
            sleep_wake: Condvar::new(),
        }
    }

    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    fn stop(&self) {
        {
            // Set the flag under the sleep lock so no sleeper misses the wake-up.
            let _guard = lock(&self.sleep_lock);
            self.stopping.store(true, Ordering::SeqCst);
        }
        self.sleep_wake.notify_all();
        for stream in lock(&self.connections).values() {
            // Wakes every blocked read and write, hanging handlers included.
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Sleeps for `duration` unless the server stops first; false if it stopped.
    fn pause(&self, duration: Duration) -> bool {
        let guard = lock(&self.sleep_lock);
        drop(
            self.sleep_wake
                .wait_timeout_while(guard, duration, |_| !self.is_stopping()),
        );
        !self.is_stopping()
    }

    fn register(&self, stream: &TcpStream) -> u64 {
        let id = self.next_connection.fetch_add(1, Ordering::Relaxed);
        if let Ok(clone) = stream.try_clone() {
            lock(&self.connections).insert(id, clone);
        }
        id
    }

    fn unregister(&self, id: u64) {
        lock(&self.connections).remove(&id);
    }

    /// Appends a request to the log; `meta` adds or overrides fields.
    fn record(&self, req: &Request, body: Value, kind: &str, meta: Map<String, Value>) {
        let mut state = lock(&self.state);
        state.seq += 1;
        let mut entry = fields([
            ("seq", json!(state.seq)),
            ("time", json!(unix_time())),
            ("method", json!(req.method)),
            ("path", json!(req.target)),
            ("headers", req.headers_json()),
            ("body", body),
            ("kind", json!(kind)),
            ("scenario", Value::Null),
            ("step", Value::Null),
        ]);
        entry.extend(meta);
        state.log.push(Value::Object(entry));
    }

    /// Counts a hit of (scenario, step) and returns how many came before it.
    fn next_hit(&self, scenario: &str, step: usize) -> usize {
        let mut state = lock(&self.state);
        let hits = state.hits.entry((scenario.to_owned(), step)).or_insert(0);
        *hits += 1;
        *hits - 1
    }

    fn reset(&self) {
        let mut state = lock(&self.state);
        state.hits.clear();
        state.log.clear();
    }
}

fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    for incoming in listener.incoming() {
        if shared.is_stopping() {
            break;
        }
        match incoming {
            Ok(stream) => spawn_connection(shared, stream),
            // Usually EMFILE or ECONNABORTED: back off instead of spinning.
            Err(_) => thread::sleep(POLL),
        }
    }
}

fn spawn_connection(shared: &Arc<Shared>, stream: TcpStream) {
    let id = shared.register(&stream);
    let worker = Arc::clone(shared);
    let spawned = thread::Builder::new()
        .name("fake-openai-conn".into())
        .spawn(move || {
            serve_connection(&worker, stream);
            worker.unregister(id);
        });
    if spawned.is_err() {
        // The closure, and with it the stream, is gone: the client sees a close.
        shared.unregister(id);
    }
}

/// What to do with a connection after a reply.
enum Outcome {
    KeepOpen,
    Close,
}

fn outcome(close: bool) -> Outcome {
    if close {
        Outcome::Close
    } else {
        Outcome::KeepOpen
    }
}

/// Serves requests on one connection until either side closes it (HTTP/1.1
/// keep-alive for JSON replies, as the Python's `BaseHTTPRequestHandler`).
fn serve_connection(shared: &Shared, stream: TcpStream) {
    if configure(&stream).is_err() {
        return;
    }
    let mut conn = Conn {
        shared,
        stream,
        buf: Vec::new(),
    };
    loop {
        let next = match conn.read_request() {
            Ok(req) => route(&mut conn, &req).unwrap_or(Outcome::Close),
            Err(ReadError::Closed) => return,
            Err(ReadError::Bad(why)) => {
                let _ = send_bad_request(&mut conn.stream, &why);
                Outcome::Close
            }
        };
        if matches!(next, Outcome::Close) || shared.is_stopping() {
            conn.close_gracefully();
            return;
        }
    }
}

fn configure(stream: &TcpStream) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    // SSE chunks must leave one by one, when the script says so.
    stream.set_nodelay(true)
}

fn is_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

// ---------------------------------------------------------------- HTTP input

/// A parsed request; header names are lowercased.
struct Request {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    /// The last value of a header (the Python's dict also keeps the last).
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path used for routing: no query string, no trailing slashes.
    fn route_path(&self) -> &str {
        let path = self.target.split('?').next().unwrap_or_default();
        path.trim_end_matches('/')
    }

    fn wants_close(&self) -> bool {
        match self.header("connection").map(str::to_ascii_lowercase) {
            Some(value) if value.contains("close") => true,
            Some(value) if value.contains("keep-alive") => false,
            _ => self.version == "HTTP/1.0",
        }
    }

    fn headers_json(&self) -> Value {
        let map: Map<String, Value> = self
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), json!(value)))
            .collect();
        Value::Object(map)
    }

    /// The body for the log: parsed JSON, else the text (as the Python).
    fn body_json(&self) -> Value {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(value) if !value.is_null() => value,
            _ => Value::String(String::from_utf8_lossy(&self.body).into_owned()),
        }
    }

    fn expects_continue(&self) -> bool {
        self.header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    }
}

enum ReadError {
    /// EOF, an I/O error or a stopping server: just drop the connection.
    Closed,
    /// Malformed input: answer 400, then close.
    Bad(String),
}

/// A connection with the bytes received but not yet consumed.
struct Conn<'a> {
    shared: &'a Shared,
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn<'_> {
    /// Reads more bytes into `buf`; the read timeout only exists so that a
    /// stopping server is noticed.
    fn fill(&mut self) -> Result<(), ReadError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if self.shared.is_stopping() {
                return Err(ReadError::Closed);
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ReadError::Closed),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(err) if is_timeout(&err) => {}
                Err(_) => return Err(ReadError::Closed),
            }
        }
    }

    fn read_request(&mut self) -> Result<Request, ReadError> {
        let head = self.take_head()?;
        let mut req = parse_head(&head).map_err(ReadError::Bad)?;
        req.body = self.read_body(&req)?;
        Ok(req)
    }

    fn take_head(&mut self) -> Result<Vec<u8>, ReadError> {
        loop {
            // Stray line breaks between requests are allowed (RFC 9112 §2.2).
            let blank = self.buf.iter().take_while(|b| matches!(b, b'\r' | b'\n'));
            let skip = blank.count();
            self.buf.drain(..skip);
            if let Some((end, consumed)) = find_head_end(&self.buf) {
                let head = self.buf[..end].to_vec();
                self.buf.drain(..consumed);
                return Ok(head);
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ReadError::Bad("request head too large".into()));
            }
            self.fill()?;
        }
    }

    /// One line without its line break (for chunked bodies).
    fn take_line(&mut self) -> Result<Vec<u8>, ReadError> {
        loop {
            if let Some(eol) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=eol).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if self.buf.len() > MAX_LINE {
                return Err(ReadError::Bad("chunk line too long".into()));
            }
            self.fill()?;
        }
    }

    fn take_exact(&mut self, len: usize) -> Result<Vec<u8>, ReadError> {
        while self.buf.len() < len {
            self.fill()?;
        }
        Ok(self.buf.drain(..len).collect())
    }

    fn read_body(&mut self, req: &Request) -> Result<Vec<u8>, ReadError> {
        let chunked = req
            .header("transfer-encoding")
            .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
        let length = match req.header("content-length") {
            None => 0,
            Some(value) => value
                .trim()
                .parse::<usize>()
                .map_err(|_| ReadError::Bad(format!("bad Content-Length {value:?}")))?,
        };
        if !chunked && length > MAX_BODY {
            return Err(ReadError::Bad("request body too large".into()));
        }
        if (chunked || length > 0) && req.expects_continue() {
            self.stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .map_err(|_| ReadError::Closed)?;
        }
        if chunked {
            self.read_chunked()
        } else {
            self.take_exact(length)
        }
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>, ReadError> {
        let mut body = Vec::new();
        loop {
            let line = self.take_line()?;
            let size = parse_chunk_size(&line)
                .ok_or_else(|| ReadError::Bad("bad chunk size line".into()))?;
            if size == 0 {
                // Trailer fields, ignored, up to the blank line.
                while !self.take_line()?.is_empty() {}
                return Ok(body);
            }
            if body.len().saturating_add(size) > MAX_BODY {
                return Err(ReadError::Bad("request body too large".into()));
            }
            body.extend(self.take_exact(size)?);
            if !self.take_line()?.is_empty() {
                return Err(ReadError::Bad("chunk not followed by CRLF".into()));
            }
        }
    }

    /// Waits (sending nothing) until the client disconnects, the deadline
    /// passes or the server stops.
    fn hang(&mut self, limit: Duration) {
        let deadline = Instant::now().checked_add(limit);
        let mut sink = [0u8; 1024];
        while deadline.is_none_or(|d| Instant::now() < d) && !self.shared.is_stopping() {
            match self.stream.read(&mut sink) {
                Ok(0) => return,
                Ok(_) => {}
                Err(err) if is_timeout(&err) => {}
                Err(_) => return,
            }
        }
    }

    /// Half-closes and drains what the client still sends, so the kernel does
    /// not answer unread request bytes with a RST that could destroy the reply.
    fn close_gracefully(&mut self) {
        if self.stream.shutdown(Shutdown::Write).is_err() {
            return;
        }
        let deadline = Instant::now() + LINGER;
        let mut sink = [0u8; 4096];
        while Instant::now() < deadline && !self.shared.is_stopping() {
            match self.stream.read(&mut sink) {
                Ok(0) => return,
                Ok(_) => {}
                Err(err) if is_timeout(&err) => {}
                Err(_) => return,
            }
        }
    }
}

/// Finds the blank line ending a request head; tolerates bare `\n` line ends.
/// Returns (length of the head, bytes to consume).
fn find_head_end(buf: &[u8]) -> Option<(usize, usize)> {
    buf.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .find_map(|(i, _)| match buf.get(i + 1..) {
            Some([b'\n', ..]) => Some((i, i + 2)),
            Some([b'\r', b'\n', ..]) => Some((i, i + 3)),
            _ => None,
        })
}

fn parse_chunk_size(line: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(line).ok()?;
    // Chunk extensions (";name=value") are allowed and ignored.
    let size = text.split(';').next()?.trim();
    usize::from_str_radix(size, 16).ok()
}

fn parse_head(head: &[u8]) -> Result<Request, String> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("malformed request line {request_line:?}"));
    };
    if !version.starts_with("HTTP/1.") || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!("malformed request line {request_line:?}"));
    }
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in lines {
        if line.starts_with([' ', '\t']) {
            // Obsolete line folding continues the previous header's value.
            let (_, value) = headers
                .last_mut()
                .ok_or_else(|| format!("malformed header line {line:?}"))?;
            value.push(' ');
            value.push_str(line.trim());
            continue;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("malformed header line {line:?}"))?;
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("malformed header line {line:?}"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    Ok(Request {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers,
        body: Vec::new(),
    })
}

// ---------------------------------------------------------------- routing

fn route(conn: &mut Conn, req: &Request) -> io::Result<Outcome> {
    let close = req.wants_close();
    let shared = conn.shared;
    let out = &mut conn.stream;
    match (req.method.as_str(), req.route_path()) {
        ("GET", path) if path.ends_with("/models") => {
            shared.record(req, req.body_json(), "models", Map::new());
            send_json(out, 200, &models_list(&shared.script), &[], close)?;
        }
        ("GET", "/__requests") => {
            let log = Value::Array(lock(&shared.state).log.clone());
            send_json(out, 200, &log, &[], close)?;
        }
        ("GET", "/__health") => send_json(out, 200, &json!({"ok": true}), &[], close)?,
        ("POST", "/__reset") => {
            shared.reset();
            send_json(out, 200, &json!({"ok": true}), &[], close)?;
        }
        ("POST", path) if path.ends_with("/chat/completions") => {
            return serve_chat(conn, req, close);
        }
        ("POST", _) => {
            let note = fields([("note", json!("unknown path"))]);
            shared.record(req, req.body_json(), "other", note);
            let message = format!("unknown path {}", req.target);
            send_json(out, 404, &not_found_body(message), &[], close)?;
        }
        _ => {
            shared.record(req, req.body_json(), "other", Map::new());
            let message = format!("not found: {}", req.target);
            send_json(out, 404, &not_found_body(message), &[], close)?;
        }
    }
    Ok(outcome(close))
}

fn not_found_body(message: String) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error"}})
}

fn models_list(script: &Value) -> Value {
    let ids = script
        .get("models")
        .and_then(Value::as_array)
        .filter(|ids| !ids.is_empty())
        .cloned()
        .unwrap_or_else(|| vec![json!("fake-model")]);
    let created = now();
    let data: Vec<Value> = ids
        .into_iter()
        .map(|id| json!({"id": id, "object": "model", "created": created, "owned_by": "fake"}))
        .collect();
    json!({"object": "list", "data": data})
}

fn serve_chat(conn: &mut Conn, req: &Request, close: bool) -> io::Result<Outcome> {
    let body = match serde_json::from_slice::<Value>(&req.body) {
        Ok(Value::Object(body)) => body,
        _ => {
            let raw = Value::String(String::from_utf8_lossy(&req.body).into_owned());
            let note = fields([("note", json!("bad json"))]);
            conn.shared.record(req, raw, "other", note);
            let error = json!({"error": {"message": "bad json", "type": "invalid_request_error"}});
            send_json(&mut conn.stream, 400, &error, &[], close)?;
            return Ok(outcome(close));
        }
    };
    let pick = pick_reply(conn.shared, &body);
    // Logged before answering, so a hanging request is visible in the log.
    conn.shared
        .record(req, Value::Object(body.clone()), pick.kind, pick.meta);
    respond(conn, &body, &pick.reply, close)
}

// ---------------------------------------------------------------- script logic

/// The response object chosen for a chat request, and what to log about it.
struct Pick {
    reply: Value,
    kind: &'static str,
    meta: Map<String, Value>,
}

fn pick_reply(shared: &Shared, body: &Map<String, Value>) -> Pick {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let placeholders = Placeholders {
        workdir: find_workdir(messages).unwrap_or_else(|| shared.fallback_workdir.clone()),
        port: shared.port.to_string(),
    };
    if !body.get("tools").is_some_and(truthy) {
        return aux_pick(&shared.script, &placeholders);
    }
    let scenario = scenario_for_model(&shared.script, body)
        .or_else(|| scenario_named_in(messages))
        .unwrap_or_else(|| shared.default_scenario.clone());
    let steps = scenario_steps(&shared.script, &scenario);
    let index = step_index(messages);
    // Past the end, the last step is reused (steps is never empty).
    let clamped = index.min(steps.len().saturating_sub(1));
    let hit = shared.next_hit(&scenario, clamped);
    let reply = match steps.get(clamped) {
        Some(Value::Array(tries)) => tries
            .get(hit.min(tries.len().saturating_sub(1)))
            .cloned()
            .unwrap_or_else(|| json!({})),
        step => step.cloned().unwrap_or_default(),
    };
    let meta = fields([
        ("scenario", json!(scenario)),
        ("step", json!(index)),
        ("hit", json!(hit)),
        ("tool_names", tool_names(body.get("tools"))),
    ]);
    Pick {
        reply: placeholders.apply(&reply),
        kind: "chat",
        meta,
    }
}

/// The steps of a scenario; an unknown or empty one answers with a note.
fn scenario_steps<'s>(script: &'s Value, name: &str) -> Cow<'s, [Value]> {
    match script.get("scenarios").and_then(|s| s.get(name)) {
        Some(Value::Array(steps)) if !steps.is_empty() => Cow::Borrowed(steps),
        // Not in the Python (which would crash): a bare object is one step.
        Some(step @ Value::Object(o)) if !o.is_empty() => Cow::Borrowed(std::slice::from_ref(step)),
        _ => Cow::Owned(vec![
            json!({"text": format!("fake-openai: unknown scenario {name}")}),
        ]),
    }
}

/// Requests without tools (titles, summaries) get the aux reply, no step.
fn aux_pick(script: &Value, placeholders: &Placeholders) -> Pick {
    let aux = script
        .get("aux")
        .filter(|aux| truthy(aux))
        .cloned()
        .unwrap_or_else(|| json!({"text": "Fake title"}));
    Pick {
        reply: placeholders.apply(&aux),
        kind: "aux",
        meta: fields([
            ("scenario", json!("aux")),
            ("step", Value::Null),
            ("hit", Value::Null),
        ]),
    }
}

fn tool_names(tools: Option<&Value>) -> Value {
    let names = tools
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|tool| tool["function"]["name"].clone())
        .collect();
    Value::Array(names)
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// The number of assistant messages after the last user message.
fn step_index(messages: &[Value]) -> usize {
    let start = messages
        .iter()
        .rposition(|m| role(m) == Some("user"))
        .map_or(0, |last_user| last_user + 1);
    messages[start..]
        .iter()
        .filter(|m| role(m) == Some("assistant"))
        .count()
}

/// The scenario `script.by_model` assigns to the requested model, if any.
fn scenario_for_model(script: &Value, body: &Map<String, Value>) -> Option<String> {
    let model = body.get("model")?.as_str()?;
    let scenario = script.get("by_model")?.get(model)?.as_str()?;
    Some(scenario.to_owned())
}

/// The scenario named by the latest user message that names one.
fn scenario_named_in(messages: &[Value]) -> Option<String> {
    messages
        .iter()
        .rev()
        .filter(|m| role(m) == Some("user"))
        .find_map(|m| scenario_tag(&msg_text(m.get("content"))).map(str::to_owned))
}

/// The first `scenario[:=]([A-Za-z0-9_.-]+)` match, as the Python's regex.
fn scenario_tag(text: &str) -> Option<&str> {
    text.match_indices("scenario").find_map(|(at, word)| {
        let rest = text[at + word.len()..].strip_prefix([':', '='])?;
        let is_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        let end = rest.find(|c: char| !is_name(c)).unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// The text of a message's content: a string, or the text parts of a list.
fn msg_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|part| match part {
                Value::Object(o) => o.get("text").map(value_text).unwrap_or_default(),
                other => value_text(other),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => py_dumps(other),
    }
}

/// The working directory named in the request. OpenCode puts it in the
/// system prompt, Kilo in the user message's `<environment_details>`: system
/// messages are searched first, then user messages from the latest.
fn find_workdir(messages: &[Value]) -> Option<String> {
    let system = messages.iter().filter(|m| role(m) == Some("system"));
    let users = messages.iter().rev().filter(|m| role(m) == Some("user"));
    system
        .chain(users)
        .find_map(|m| workdir_in(&msg_text(m.get("content"))).map(str::to_owned))
}

fn workdir_in(text: &str) -> Option<&str> {
    word_after(text, "Working directory:")
        .or_else(|| cwd_tag(text))
        .or_else(|| word_after(text, "Current working directory:"))
        // Qwen Code's first user message: "I'm currently working in the directory: /path".
        .or_else(|| word_after(text, "working in the directory:"))
}

/// `LABEL\s*(\S+)`: the first non-blank word after the label.
fn word_after<'t>(text: &'t str, label: &str) -> Option<&'t str> {
    text.match_indices(label).find_map(|(at, _)| {
        let rest = text[at + label.len()..].trim_start();
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// `<cwd>\s*(\S+?)\s*</cwd>`: the shortest word followed by the closing tag.
fn cwd_tag(text: &str) -> Option<&str> {
    text.match_indices("<cwd>").find_map(|(at, tag)| {
        let rest = text[at + tag.len()..].trim_start();
        let word_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let ends = rest[..word_len].char_indices().skip(1).map(|(i, _)| i);
        ends.chain([word_len])
            .filter(|&end| end > 0)
            .find(|&end| rest[end..].trim_start().starts_with("</cwd>"))
            .map(|end| &rest[..end])
    })
}

/// `{{workdir}}` and `{{port}}` values for one request.
struct Placeholders {
    workdir: String,
    port: String,
}

impl Placeholders {
    /// Substitutes in every string value (not in keys), as the Python.
    fn apply(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(
                text.replace("{{workdir}}", &self.workdir)
                    .replace("{{port}}", &self.port),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.apply(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.apply(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

// ---------------------------------------------------------------- replies

fn respond(
    conn: &mut Conn,
    body: &Map<String, Value>,
    reply: &Value,
    close: bool,
) -> io::Result<Outcome> {
    let Some(r) = reply.as_object() else {
        let error = json!({"error": {"message": "fake-openai: script step is not a JSON object",
                                     "type": "server_error", "param": null, "code": null}});
        send_json(&mut conn.stream, 500, &error, &[], close)?;
        return Ok(outcome(close));
    };
    if let Some(delay) = millis(r.get("delay_ms")) {
        if !conn.shared.pause(delay) {
            return Ok(Outcome::Close);
        }
    }
    if r.get("hang").is_some_and(truthy) {
        conn.hang(hang_limit(r));
        return Ok(Outcome::Close);
    }
    let headers = extra_headers(r.get("headers"));
    if r.get("error").is_some_and(truthy) {
        send_error(&mut conn.stream, r, body, &headers, close)?;
        return Ok(outcome(close));
    }
    if let Some(raw) = r.get("raw") {
        let content_type = r
            .get("raw_content_type")
            .map_or_else(|| "application/json".to_owned(), value_text);
        let raw = value_text(raw);
        send_body(
            &mut conn.stream,
            200,
            &content_type,
            raw.as_bytes(),
            &headers,
            close,
        )?;
        return Ok(outcome(close));
    }
    let completion = Completion::from_step(body, r);
    if body.get("stream").is_some_and(truthy) {
        stream_reply(conn, r, &completion, &headers)?;
        return Ok(Outcome::Close);
    }
    send_json(
        &mut conn.stream,
        200,
        &completion.response(),
        &headers,
        close,
    )?;
    Ok(outcome(close))
}

/// A positive number of milliseconds as a duration.
fn millis(value: Option<&Value>) -> Option<Duration> {
    let ms = value.and_then(Value::as_f64).filter(|ms| *ms > 0.0)?;
    Duration::try_from_secs_f64(ms / 1000.0).ok()
}

fn hang_limit(r: &Map<String, Value>) -> Duration {
    let secs = r
        .get("hang_s")
        .and_then(Value::as_f64)
        .unwrap_or(DEFAULT_HANG_SECS);
    if secs > 0.0 {
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    } else {
        Duration::ZERO
    }
}

fn extra_headers(headers: Option<&Value>) -> Vec<(String, String)> {
    headers
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .map(|(k, v)| (k.clone(), value_text(v)))
                .collect()
        })
        .unwrap_or_default()
}

fn send_error(
    out: &mut TcpStream,
    r: &Map<String, Value>,
    body: &Map<String, Value>,
    headers: &[(String, String)],
    close: bool,
) -> io::Result<()> {
    let status = error_status(r.get("error"));
    if let Some(custom) = r.get("error_body") {
        return match custom {
            Value::String(text) => send_body(
                out,
                status,
                "application/json",
                text.as_bytes(),
                headers,
                close,
            ),
            other => send_json(out, status, other, headers, close),
        };
    }
    let (message, kind, code) = default_error(status, body.get("model"));
    let message = r.get("error_message").cloned().unwrap_or(json!(message));
    let payload = json!({"error": {"message": message, "type": kind, "param": null, "code": code}});
    send_json(out, status, &payload, headers, close)
}

/// The status of `"error"`: a number or numeric string; anything unusable
/// (the Python would crash) becomes 500.
fn error_status(value: Option<&Value>) -> u16 {
    let number = match value {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    number
        .map(f64::trunc)
        .filter(|n| (100.0..=999.0).contains(n))
        .map_or(500, |n| n as u16)
}

/// OpenAI's messages, types and codes per status, as OpenCode expects them.
fn default_error(
    status: u16,
    model: Option<&Value>,
) -> (String, &'static str, Option<&'static str>) {
    let (message, kind, code) = match status {
        400 => ("Bad request", "invalid_request_error", None),
        401 => (
            "Incorrect API key provided",
            "invalid_request_error",
            Some("invalid_api_key"),
        ),
        404 => {
            let message = format!(
                "The model `{}` does not exist or you do not have access to it.",
                python_str(model)
            );
            return (message, "invalid_request_error", Some("model_not_found"));
        }
        429 => (
            "Rate limit reached for requests",
            "rate_limit_error",
            Some("rate_limit_exceeded"),
        ),
        500 => (
            "The server had an error while processing your request.",
            "server_error",
            None,
        ),
        503 => (
            "The engine is currently overloaded, please try again later",
            "server_error",
            None,
        ),
        _ => return (format!("error {status}"), "server_error", None),
    };
    (message.to_owned(), kind, code)
}

/// Python's `"%s" % value` for a JSON value (missing or null is `None`).
fn python_str(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "None".into(),
        Some(other) => value_text(other),
    }
}

/// A string value as is, anything else as JSON text.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => py_dumps(other),
    }
}

/// Python truthiness of a JSON value (the script semantics follow `if r.get(…)`).
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A successful completion built from a script step.
struct Completion {
    id: String,
    model: Value,
    text: Value,
    reasoning: Value,
    /// OpenAI tool calls, each with its stream `index`.
    tool_calls: Vec<Value>,
    /// `Value::Null` means "send no finish reason".
    finish_reason: Value,
    usage: Value,
}

impl Completion {
    fn from_step(body: &Map<String, Value>, r: &Map<String, Value>) -> Completion {
        let tool_calls = tool_calls(r);
        let finish_reason = finish_reason(r, !tool_calls.is_empty());
        Completion {
            id: format!("chatcmpl-{}", random_hex(24)),
            model: body
                .get("model")
                .cloned()
                .unwrap_or_else(|| json!("fake-model")),
            text: r.get("text").cloned().unwrap_or(Value::Null),
            reasoning: r.get("reasoning").cloned().unwrap_or(Value::Null),
            tool_calls,
            finish_reason,
            usage: usage(r),
        }
    }

    /// The non-streaming `chat.completion` body.
    fn response(&self) -> Value {
        let mut message = fields([("role", json!("assistant")), ("content", self.text.clone())]);
        if truthy(&self.reasoning) {
            message.insert("reasoning_content".into(), self.reasoning.clone());
        }
        if !self.tool_calls.is_empty() {
            let calls = self.tool_calls.iter().map(without_index).collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        json!({
            "id": self.id, "object": "chat.completion", "created": now(), "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self.usage,
        })
    }

    fn chunk(&self, delta: Value, finish_reason: Value) -> Value {
        json!({
            "id": self.id, "object": "chat.completion.chunk", "created": now(), "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
    }

    /// The SSE events of a streamed reply, in order, before `[DONE]`.
    fn events(&self) -> Vec<Value> {
        let none = || Value::Null;
        let mut events = vec![self.chunk(json!({"role": "assistant", "content": ""}), none())];
        if truthy(&self.reasoning) {
            for piece in pieces(&value_text(&self.reasoning)) {
                events.push(self.chunk(json!({"reasoning_content": piece}), none()));
            }
        }
        if truthy(&self.text) {
            for piece in pieces(&value_text(&self.text)) {
                events.push(self.chunk(json!({"content": piece}), none()));
            }
        }
        for call in &self.tool_calls {
            // First the identity with empty arguments, then the arguments, as
            // OpenAI does, so clients must accumulate deltas by index.
            let (index, function) = (&call["index"], &call["function"]);
            let head = json!({"index": index, "id": call["id"], "type": "function",
                              "function": {"name": function["name"], "arguments": ""}});
            let args = json!({"index": index, "function": {"arguments": function["arguments"]}});
            events.push(self.chunk(json!({"tool_calls": [head]}), none()));
            events.push(self.chunk(json!({"tool_calls": [args]}), none()));
        }
        if !self.finish_reason.is_null() {
            events.push(self.chunk(json!({}), self.finish_reason.clone()));
        }
        // OpenAI sends this only for stream_options.include_usage; the Python
        // (and so this fake) always sends it.
        events.push(json!({
            "id": self.id, "object": "chat.completion.chunk", "created": now(),
            "model": self.model, "choices": [], "usage": self.usage,
        }));
        events
    }
}

fn without_index(call: &Value) -> Value {
    let map = call.as_object().map(|o| {
        o.iter()
            .filter(|(k, _)| *k != "index")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Map<_, _>>()
    });
    map.map_or(Value::Null, Value::Object)
}

fn tool_calls(r: &Map<String, Value>) -> Vec<Value> {
    let Some(list) = r.get("tool_calls").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .enumerate()
        .map(|(index, call)| {
            // Arguments travel as a JSON string; a scripted string is sent verbatim
            // (that is how invalid arguments are scripted).
            let arguments = match call.get("arguments") {
                Some(Value::String(raw)) => raw.clone(),
                Some(other) => py_dumps(other),
                None => "{}".to_owned(),
            };
            let id = call
                .get("id")
                .filter(|id| truthy(id))
                .cloned()
                .unwrap_or_else(|| json!(format!("call_{}", random_hex(20))));
            let name = call.get("name").cloned().unwrap_or(Value::Null);
            json!({"index": index, "id": id, "type": "function",
                   "function": {"name": name, "arguments": arguments}})
        })
        .collect()
}

fn finish_reason(r: &Map<String, Value>, has_tool_calls: bool) -> Value {
    match r.get("finish_reason") {
        // Not in the Python: an explicit null scripts "no finish reason".
        Some(Value::Null) => Value::Null,
        Some(reason) if truthy(reason) => reason.clone(),
        _ if has_tool_calls => json!("tool_calls"),
        _ => json!("stop"),
    }
}

/// Maps the script's flat usage fields to OpenAI's usage object.
fn usage(r: &Map<String, Value>) -> Value {
    let empty = Map::new();
    let u = r
        .get("usage")
        .filter(|u| truthy(u))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let field = |key: &str, default: u64| u.get(key).cloned().unwrap_or_else(|| json!(default));
    let prompt = field("prompt_tokens", 100);
    let completion = field("completion_tokens", 20);
    let total = add_numbers(&prompt, &completion);
    let mut prompt_details = fields([("cached_tokens", field("cached_tokens", 0))]);
    if let Some(written) = u.get("cache_write_tokens").filter(|w| truthy(w)) {
        prompt_details.insert("cache_write_tokens".into(), written.clone());
    }
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {"reasoning_tokens": field("reasoning_tokens", 0)},
    })
}

fn add_numbers(a: &Value, b: &Value) -> Value {
    if let Some(sum) = a
        .as_i64()
        .zip(b.as_i64())
        .and_then(|(x, y)| x.checked_add(y))
    {
        return json!(sum);
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => {
            serde_json::Number::from_f64(x + y).map_or(Value::Null, Value::Number)
        }
        _ => Value::Null,
    }
}

/// Splits a string into up to three pieces so clients must accumulate deltas
/// (the Python's `_pieces`, counting characters, not bytes).
fn pieces(text: &str) -> Vec<String> {
    const N: usize = 3;
    let chars: Vec<char> = text.chars().collect();
    if chars.len() < 2 * N {
        return vec![text.to_owned()];
    }
    let k = chars.len() / N;
    (0..N)
        .map(|i| {
            let end = if i == N - 1 { chars.len() } else { (i + 1) * k };
            chars[i * k..end].iter().collect()
        })
        .collect()
}

fn stream_reply(
    conn: &mut Conn,
    r: &Map<String, Value>,
    completion: &Completion,
    extra: &[(String, String)],
) -> io::Result<()> {
    let mut headers = owned_headers(&[
        ("Content-Type", "text/event-stream"),
        ("Cache-Control", "no-cache"),
        ("Connection", "close"),
        ("Transfer-Encoding", "chunked"),
    ]);
    headers.extend_from_slice(extra);
    write_head(&mut conn.stream, 200, &headers)?;
    let mut sse = Sse {
        out: &mut conn.stream,
        shared: conn.shared,
        delay: millis(r.get("chunk_delay_ms")).unwrap_or_default(),
    };
    if let Some(raw) = r.get("raw_stream") {
        let items = match raw {
            Value::Array(items) => items.as_slice(),
            single => std::slice::from_ref(single),
        };
        for item in items {
            match item {
                Value::String(payload) => sse.send(payload)?,
                event => sse.data(event)?,
            }
        }
    } else {
        for event in completion.events() {
            sse.data(&event)?;
        }
        sse.send("data: [DONE]\n\n")?;
    }
    sse.end()
}

/// Writes SSE payloads as HTTP chunks.
struct Sse<'a> {
    out: &'a mut TcpStream,
    shared: &'a Shared,
    delay: Duration,
}

impl Sse<'_> {
    /// Sends one payload as one chunk, flushed, then waits `chunk_delay_ms`.
    fn send(&mut self, payload: &str) -> io::Result<()> {
        // A zero-length chunk would end the body; the Python writes nothing.
        if !payload.is_empty() {
            let mut frame = format!("{:x}\r\n", payload.len()).into_bytes();
            frame.extend_from_slice(payload.as_bytes());
            frame.extend_from_slice(b"\r\n");
            self.out.write_all(&frame)?;
            self.out.flush()?;
        }
        if !self.delay.is_zero() && !self.shared.pause(self.delay) {
            return Err(io::Error::other("fake-openai server stopped"));
        }
        Ok(())
    }

    fn data(&mut self, event: &Value) -> io::Result<()> {
        self.send(&format!("data: {}\n\n", py_dumps(event)))
    }

    fn end(self) -> io::Result<()> {
        self.out.write_all(b"0\r\n\r\n")?;
        self.out.flush()
    }
}

// ---------------------------------------------------------------- HTTP output

fn owned_headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn write_head(out: &mut impl Write, status: u16, headers: &[(String, String)]) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nServer: fake-openai/1.0\r\n",
        reason_phrase(status)
    );
    // Script-supplied headers must not be able to break the framing.
    let clean = |s: &str| s.replace(['\r', '\n'], " ");
    for (name, value) in headers {
        head.push_str(&format!("{}: {}\r\n", clean(name), clean(value)));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())
}

fn send_body(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    extra: &[(String, String)],
    close: bool,
) -> io::Result<()> {
    let length = body.len().to_string();
    let mut headers = owned_headers(&[("Content-Type", content_type), ("Content-Length", &length)]);
    if close {
        headers.push(("Connection".into(), "close".into()));
    }
    headers.extend_from_slice(extra);
    let mut bytes = Vec::with_capacity(256 + body.len());
    write_head(&mut bytes, status, &headers)?;
    bytes.extend_from_slice(body);
    out.write_all(&bytes)?;
    out.flush()
}

fn send_json(
    out: &mut TcpStream,
    status: u16,
    value: &Value,
    extra: &[(String, String)],
    close: bool,
) -> io::Result<()> {
    let body = py_dumps(value);
    send_body(
        out,
        status,
        "application/json",
        body.as_bytes(),
        extra,
        close,
    )
}

fn send_bad_request(out: &mut TcpStream, why: &str) -> io::Result<()> {
    let error = json!({"error": {"message": format!("bad request: {why}"),
                                 "type": "invalid_request_error"}});
    send_json(out, 400, &error, &[], true)
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Request Entity Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// JSON text exactly as Python's `json.dumps` writes it (`", "` and `": "`
/// separators, non-ASCII escaped), so bodies that clients echo back in error
/// messages (OpenCode's `responseBody`) read the same as with the Python fake.
fn py_dumps(value: &Value) -> String {
    let mut out = String::new();
    write_py_json(&mut out, value);
    out
}

fn write_py_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_py_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_string(out, key);
                out.push_str(": ");
                write_py_json(out, item);
            }
            out.push('}');
        }
    }
}

fn write_py_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn unix_time() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Random-looking lowercase hex for ids (std's randomly seeded hasher stands
/// in for a random number generator, which is not a dependency here).
fn random_hex(len: usize) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parsed HTTP reply, as a raw client sees it.
    struct Reply {
        status: u16,
        headers: HashMap<String, String>,
        body: Vec<u8>,
    }

    impl Reply {
        fn json(&self) -> Value {
            serde_json::from_slice(&self.body).expect("reply body is JSON")
        }

        fn header(&self, name: &str) -> Option<&str> {
            self.headers.get(name).map(String::as_str)
        }

        /// The `data:` payloads of an SSE body; fails on anything else.
        fn events(&self) -> Vec<String> {
            let text = String::from_utf8(self.body.clone()).unwrap();
            assert!(text.ends_with("\n\n"), "SSE body ends an event: {text:?}");
            text.split("\n\n")
                .filter(|event| !event.is_empty())
                .map(|event| {
                    let data = event.strip_prefix("data: ");
                    data.unwrap_or_else(|| panic!("not an SSE data event: {event:?}"))
                        .to_owned()
                })
                .collect()
        }

        /// The JSON chunks of an SSE body, checking it ends with `[DONE]`.
        fn chunks(&self) -> Vec<Value> {
            let mut events = self.events();
            assert_eq!(events.pop().as_deref(), Some("[DONE]"));
            events
                .iter()
                .map(|e| serde_json::from_str(e).expect("chunk is JSON"))
                .collect()
        }

        /// The concatenated `delta.content` of a streamed reply.
        fn streamed_text(&self) -> String {
            self.chunks()
                .iter()
                .filter_map(|c| {
                    c["choices"][0]["delta"]["content"]
                        .as_str()
                        .map(str::to_owned)
                })
                .collect()
        }
    }

    fn parse_reply(all: &[u8]) -> Reply {
        let split = all
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("reply has a head");
        let head = String::from_utf8_lossy(&all[..split]);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let headers: HashMap<String, String> = lines
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.to_ascii_lowercase(), value.trim().to_owned())
            })
            .collect();
        let rest = &all[split + 4..];
        let body = if headers
            .get("transfer-encoding")
            .is_some_and(|v| v == "chunked")
        {
            dechunk(rest)
        } else {
            let length: usize = headers["content-length"].parse().unwrap();
            assert_eq!(rest.len(), length, "body matches Content-Length");
            rest.to_vec()
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Decodes a chunked body, insisting on the `0\r\n\r\n` terminator.
    fn dechunk(mut data: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let eol = data.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&data[..eol]).unwrap(), 16).unwrap();
            let chunk = &data[eol + 2..];
            if size == 0 {
                assert_eq!(chunk, b"\r\n", "chunked body ends with the terminator");
                return body;
            }
            body.extend_from_slice(&chunk[..size]);
            assert_eq!(&chunk[size..size + 2], b"\r\n");
            data = &chunk[size + 2..];
        }
    }

    fn connect(port: u16) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream
    }

    /// Sends raw bytes on a new connection and reads the reply up to EOF.
    fn exchange(port: u16, raw: &[u8]) -> Reply {
        let mut stream = connect(port);
        stream.write_all(raw).unwrap();
        let mut all = Vec::new();
        stream.read_to_end(&mut all).unwrap();
        parse_reply(&all)
    }

    fn request(
        port: u16,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let mut raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
             Content-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            raw.push_str(&format!("{name}: {value}\r\n"));
        }
        raw.push_str("\r\n");
        let mut bytes = raw.into_bytes();
        bytes.extend_from_slice(body);
        exchange(port, &bytes)
    }

    fn post_chat(server: &FakeOpenAi, body: &Value) -> Reply {
        let headers = [("Content-Type", "application/json")];
        let body = body.to_string();
        request(
            server.port(),
            "POST",
            "/v1/chat/completions",
            &headers,
            body.as_bytes(),
        )
    }

    fn system(text: &str) -> Value {
        json!({"role": "system", "content": text})
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn assistant() -> Value {
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call_1",
               "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
    }

    fn tool_result() -> Value {
        json!({"role": "tool", "tool_call_id": "call_1", "content": "file contents"})
    }

    /// A request shaped like OpenCode's: tools, streaming, usage requested.
    fn chat(messages: Vec<Value>) -> Value {
        json!({
            "model": "fake-model",
            "messages": messages,
            "tools": [{"type": "function", "function": {"name": "read", "parameters": {}}}],
            "tool_choice": "auto",
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    }

    fn start(script: Value) -> FakeOpenAi {
        FakeOpenAi::start(script).unwrap()
    }

    #[test]
    fn scenario_comes_from_the_latest_user_message_that_names_one() {
        let server = start(json!({"scenarios": {
            "default": [{"text": "default reply"}],
            "alpha": [{"text": "alpha reply"}],
            "beta.2": [{"text": "beta reply"}],
        }}));
        let plain = chat(vec![user("hello")]);
        assert_eq!(post_chat(&server, &plain).streamed_text(), "default reply");
        let switched = chat(vec![
            user("go scenario:alpha"),
            user("follow-up scenario=beta.2!"),
        ]);
        assert_eq!(post_chat(&server, &switched).streamed_text(), "beta reply");
        let untagged_follow_up = chat(vec![user("scenario:alpha"), user("no tag here")]);
        assert_eq!(
            post_chat(&server, &untagged_follow_up).streamed_text(),
            "alpha reply"
        );
        let unknown = chat(vec![user("scenario:nope")]);
        assert_eq!(
            post_chat(&server, &unknown).streamed_text(),
            "fake-openai: unknown scenario nope"
        );
        let scenarios: Vec<Value> = server
            .chat_requests()
            .iter()
            .map(|r| r["scenario"].clone())
            .collect();
        assert_eq!(
            scenarios,
            [
                json!("default"),
                json!("beta.2"),
                json!("alpha"),
                json!("nope")
            ]
        );
    }

    #[test]
    fn step_index_counts_assistant_messages_after_the_last_user_message() {
        let server = start(json!({"scenarios": {"default": [
            {"text": "step zero"}, {"text": "step one"}, {"text": "step two"},
        ]}}));
        let mut messages = vec![system("sys"), user("first prompt")];
        let mut texts = Vec::new();
        for _ in 0..4 {
            texts.push(post_chat(&server, &chat(messages.clone())).streamed_text());
            messages.extend([assistant(), tool_result()]);
        }
        // A follow-up prompt in the same session starts again at step 0.
        messages.push(user("second prompt"));
        texts.push(post_chat(&server, &chat(messages)).streamed_text());
        assert_eq!(
            texts,
            ["step zero", "step one", "step two", "step two", "step zero"]
        );
        let steps: Vec<Value> = server
            .chat_requests()
            .iter()
            .map(|r| r["step"].clone())
            .collect();
        assert_eq!(steps, [json!(0), json!(1), json!(2), json!(3), json!(0)]);
    }

    #[test]
    fn step_list_walks_through_retries_then_repeats_its_last_entry() {
        let server = start(json!({"scenarios": {"default": [[
            {"error": 429, "headers": {"retry-after": "0"}},
            {"text": "ok"},
        ]]}}));
        let request = chat(vec![user("hi")]);
        let limited = post_chat(&server, &request);
        assert_eq!(limited.status, 429);
        assert_eq!(limited.header("retry-after"), Some("0"));
        assert_eq!(
            limited.json(),
            json!({"error": {"message": "Rate limit reached for requests", "type": "rate_limit_error",
                             "param": null, "code": "rate_limit_exceeded"}})
        );
        assert_eq!(post_chat(&server, &request).streamed_text(), "ok");
        assert_eq!(post_chat(&server, &request).streamed_text(), "ok");
        let hits: Vec<Value> = server
            .chat_requests()
            .iter()
            .map(|r| r["hit"].clone())
            .collect();
        assert_eq!(hits, [json!(0), json!(1), json!(2)]);
    }

    #[test]
    fn request_without_tools_gets_the_aux_reply_and_consumes_no_step() {
        let server = start(json!({
            "aux": {"text": "A fine title"},
            "scenarios": {"default": [[{"text": "first"}, {"text": "second"}]]},
        }));
        let mut title = chat(vec![system("You are a title generator"), user("hi")]);
        title.as_object_mut().unwrap().remove("tools");
        assert_eq!(post_chat(&server, &title).streamed_text(), "A fine title");
        assert_eq!(
            post_chat(&server, &chat(vec![user("hi")])).streamed_text(),
            "first"
        );
        let kinds: Vec<Value> = server
            .requests()
            .iter()
            .map(|r| r["kind"].clone())
            .collect();
        assert_eq!(kinds, [json!("aux"), json!("chat")]);
        assert_eq!(server.chat_requests().len(), 1);
        assert_eq!(server.chat_requests()[0]["hit"], 0);
    }

    #[test]
    fn streamed_tool_call_argument_deltas_concatenate_to_the_scripted_json() {
        let read_args = json!({"filePath": "/a/b.py", "limit": 5, "note": "naïve ✓"});
        let bash_args = json!({"command": "echo hi"});
        let server = start(json!({"scenarios": {"default": [{"tool_calls": [
            {"name": "read", "arguments": read_args},
            {"name": "bash", "arguments": bash_args, "id": "call_fixed"},
        ]}]}}));
        let reply = post_chat(&server, &chat(vec![user("hi")]));
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-type"), Some("text/event-stream"));
        assert_eq!(reply.header("cache-control"), Some("no-cache"));
        let chunks = reply.chunks();
        assert_eq!(
            chunks[0]["choices"][0]["delta"],
            json!({"role": "assistant", "content": ""})
        );
        let mut calls: Vec<(String, String, String)> = Vec::new();
        for chunk in &chunks {
            assert_eq!(chunk["object"], "chat.completion.chunk");
            for delta in chunk["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let index = delta["index"].as_u64().unwrap() as usize;
                if index == calls.len() {
                    calls.push(Default::default());
                }
                let call = &mut calls[index];
                if let Some(id) = delta["id"].as_str() {
                    assert_eq!(delta["type"], "function");
                    call.0 = id.to_owned();
                }
                if let Some(name) = delta["function"]["name"].as_str() {
                    call.1 = name.to_owned();
                }
                call.2
                    .push_str(delta["function"]["arguments"].as_str().unwrap());
            }
        }
        assert_eq!(calls.len(), 2);
        assert!(
            calls[0].0.starts_with("call_") && calls[0].0.len() == 25,
            "{}",
            calls[0].0
        );
        assert_eq!(
            (
                calls[0].1.as_str(),
                calls[1].0.as_str(),
                calls[1].1.as_str()
            ),
            ("read", "call_fixed", "bash")
        );
        assert_eq!(
            serde_json::from_str::<Value>(&calls[0].2).unwrap(),
            read_args
        );
        assert_eq!(
            serde_json::from_str::<Value>(&calls[1].2).unwrap(),
            bash_args
        );
        let finishes: Vec<&Value> = chunks
            .iter()
            .filter_map(|c| c["choices"].get(0).map(|choice| &choice["finish_reason"]))
            .filter(|f| !f.is_null())
            .collect();
        assert_eq!(finishes, [&json!("tool_calls")]);
        let usage_chunk = chunks.last().unwrap();
        assert_eq!(usage_chunk["choices"], json!([]));
        assert_eq!(
            usage_chunk["usage"],
            json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                   "prompt_tokens_details": {"cached_tokens": 0},
                   "completion_tokens_details": {"reasoning_tokens": 0}})
        );
    }

    #[test]
    fn workdir_placeholder_is_taken_from_working_directory_in_the_system_prompt() {
        let server = start(
            json!({"scenarios": {"default": [{"tool_calls": [{"name": "read",
            "arguments": {"filePath": "{{workdir}}/calc.py", "url": "http://127.0.0.1:{{port}}/x"}}]}]}}),
        );
        let prompt = "You are OpenCode.\n<env>\n  Working directory: /x/y\n  Is directory a git repo: yes\n</env>";
        let mut request = chat(vec![system(prompt), user("read calc.py")]);
        request["stream"] = json!(false);
        let reply = post_chat(&server, &request).json();
        let message = &reply["choices"][0]["message"];
        let arguments: Value = serde_json::from_str(
            message["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        let url = format!("http://127.0.0.1:{}/x", server.port());
        assert_eq!(arguments, json!({"filePath": "/x/y/calc.py", "url": url}));
        assert_eq!(reply["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(reply["object"], "chat.completion");
    }

    #[test]
    fn workdir_is_also_found_in_kilo_style_user_messages() {
        let messages = [
            system("no directory here"),
            json!({"role": "user", "content": [{"type": "text", "text": "<environment_details>\n<cwd> /k/repo </cwd>"}]}),
        ];
        assert_eq!(find_workdir(&messages).as_deref(), Some("/k/repo"));
        assert_eq!(cwd_tag("<cwd>/a/b</cwd>"), Some("/a/b"));
        assert_eq!(cwd_tag("<cwd>/a b</cwd>"), None);
        assert_eq!(
            workdir_in("Current working directory: /c/d\n"),
            Some("/c/d")
        );
        assert_eq!(find_workdir(&[user("nothing")]), None);
    }

    #[test]
    fn request_log_records_method_path_headers_and_body() {
        let server = start(json!({"scenarios": {"default": [{"text": "ok"}]}}));
        let body = chat(vec![user("hi")]);
        let headers = [
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer test-key"),
            ("X-Session-Id", "ses_123"),
        ];
        let encoded = body.to_string();
        request(
            server.port(),
            "POST",
            "/v1/chat/completions?x=1",
            &headers,
            encoded.as_bytes(),
        );
        let log = server.requests();
        assert_eq!(log.len(), 1);
        let entry = &log[0];
        assert_eq!(entry["method"], "POST");
        assert_eq!(entry["path"], "/v1/chat/completions?x=1");
        assert_eq!(entry["headers"]["authorization"], "Bearer test-key");
        assert_eq!(entry["headers"]["x-session-id"], "ses_123");
        assert_eq!(entry["body"], body);
        assert_eq!(
            (&entry["kind"], &entry["scenario"], &entry["step"]),
            (&json!("chat"), &json!("default"), &json!(0))
        );
        assert_eq!(entry["tool_names"], json!(["read"]));
        // The HTTP view of the log is the same list ("time" is a float that
        // serde_json may re-parse one ulp off, so it is left out).
        let without_time = |entries: Vec<Value>| -> Vec<Value> {
            entries
                .into_iter()
                .map(|mut e| {
                    e.as_object_mut().unwrap().remove("time").unwrap();
                    e
                })
                .collect()
        };
        let over_http = request(server.port(), "GET", "/__requests", &[], b"").json();
        let Value::Array(over_http) = over_http else {
            panic!("log is a list")
        };
        assert_eq!(without_time(over_http), without_time(log));
    }

    #[test]
    fn reset_clears_the_log_and_the_retry_counters() {
        let server = start(json!({"scenarios": {"default": [[{"text": "one"}, {"text": "two"}]]}}));
        let request_body = chat(vec![user("hi")]);
        assert_eq!(post_chat(&server, &request_body).streamed_text(), "one");
        assert_eq!(
            request(server.port(), "POST", "/__reset", &[], b"").json(),
            json!({"ok": true})
        );
        assert!(server.requests().is_empty());
        assert_eq!(post_chat(&server, &request_body).streamed_text(), "one");
    }

    #[test]
    fn usage_fields_map_to_openai_usage_in_the_usage_chunk() {
        let server = start(
            json!({"scenarios": {"default": [{"text": "hello", "reasoning": "thinking hard",
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 200,
                      "reasoning_tokens": 7, "cache_write_tokens": 3}}]}}),
        );
        let reply = post_chat(&server, &chat(vec![user("hi")]));
        let chunks = reply.chunks();
        let reasoning: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str())
            .collect();
        assert_eq!(reasoning, "thinking hard");
        assert_eq!(
            chunks.last().unwrap()["usage"],
            json!({"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
                   "prompt_tokens_details": {"cached_tokens": 200, "cache_write_tokens": 3},
                   "completion_tokens_details": {"reasoning_tokens": 7}})
        );
    }

    #[test]
    fn long_text_is_streamed_in_three_content_deltas() {
        let server =
            start(json!({"scenarios": {"default": [{"text": "divide() has no zero check"}]}}));
        let chunks = post_chat(&server, &chat(vec![user("hi")])).chunks();
        let deltas: Vec<&str> = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .filter(|d| !d.is_empty())
            .collect();
        assert_eq!(deltas, ["divide()", " has no ", "zero check"]);
        assert_eq!(pieces("short"), ["short"]);
    }

    #[test]
    fn explicit_null_finish_reason_sends_no_finish_reason() {
        let server = start(json!({"scenarios": {
            "default": [{"text": "partial", "finish_reason": null}],
            "long": [{"text": "cut off", "finish_reason": "length"}],
        }}));
        let chunks = post_chat(&server, &chat(vec![user("hi")])).chunks();
        assert!(chunks.iter().all(|c| c["choices"]
            .get(0)
            .is_none_or(|choice| choice["finish_reason"].is_null())));
        assert!(chunks.last().unwrap()["usage"].is_object());
        let chunks = post_chat(&server, &chat(vec![user("scenario:long")])).chunks();
        assert_eq!(
            chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
            "length"
        );
    }

    #[test]
    fn error_replies_use_openai_defaults_or_the_scripted_body() {
        let server = start(json!({"scenarios": {
            "e404": [{"error": 404}],
            "e503": [{"error": 503, "error_message": "busy {{port}}"}],
            "custom": [{"error": 400, "error_body": "{\"error\": {\"message\": \"context_length_exceeded\"}}"}],
        }}));
        let mut missing = chat(vec![user("scenario:e404")]);
        missing["model"] = json!("gpt-nope");
        let reply = post_chat(&server, &missing);
        assert_eq!(reply.status, 404);
        assert_eq!(
            String::from_utf8(reply.body).unwrap(),
            "{\"error\": {\"message\": \"The model `gpt-nope` does not exist or you do not have access \
             to it.\", \"type\": \"invalid_request_error\", \"param\": null, \"code\": \"model_not_found\"}}"
        );
        let busy = post_chat(&server, &chat(vec![user("scenario:e503")]));
        assert_eq!(busy.status, 503);
        assert_eq!(
            busy.json()["error"]["message"],
            format!("busy {}", server.port())
        );
        assert_eq!(busy.json()["error"]["type"], "server_error");
        let custom = post_chat(&server, &chat(vec![user("scenario:custom")]));
        assert_eq!(custom.status, 400);
        assert_eq!(
            custom.body,
            b"{\"error\": {\"message\": \"context_length_exceeded\"}}"
        );
    }

    #[test]
    fn raw_and_raw_stream_replies_are_sent_verbatim() {
        let server = start(json!({"scenarios": {
            "raw": [{"raw": "not json", "raw_content_type": "text/plain"}],
            "bad": [{"raw_stream": ["data: {not valid json\n\n", "", "data: [DONE]\n\n"], "chunk_delay_ms": 5}],
        }}));
        let raw = post_chat(&server, &chat(vec![user("scenario:raw")]));
        assert_eq!(
            (raw.status, raw.body.as_slice()),
            (200, b"not json".as_slice())
        );
        assert_eq!(raw.header("content-type"), Some("text/plain"));
        let bad = post_chat(&server, &chat(vec![user("scenario:bad")]));
        assert_eq!(bad.body, b"data: {not valid json\n\ndata: [DONE]\n\n");
    }

    #[test]
    fn hang_sends_nothing_until_hang_s_passes() {
        let server = start(json!({"scenarios": {"default": [{"hang": true, "hang_s": 0.3}]}}));
        let started = Instant::now();
        let mut stream = connect(server.port());
        let body = chat(vec![user("hi")]).to_string();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut all = Vec::new();
        stream.read_to_end(&mut all).unwrap();
        assert!(all.is_empty());
        assert!(started.elapsed() >= Duration::from_millis(300));
    }

    #[test]
    fn dropping_the_server_unblocks_a_hanging_request() {
        let server = start(json!({"scenarios": {"default": [{"hang": true}]}}));
        let mut stream = connect(server.port());
        let body = chat(vec![user("hi")]).to_string();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while server.requests().is_empty() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            server.chat_requests().len(),
            1,
            "the hanging request was logged"
        );
        let started = Instant::now();
        drop(server);
        let mut all = Vec::new();
        let _ = stream.read_to_end(&mut all);
        assert!(all.is_empty());
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn malformed_requests_get_400_and_the_server_keeps_serving() {
        let server = start(json!({}));
        let port = server.port();
        assert_eq!(exchange(port, b"garbage\r\n\r\n").status, 400);
        assert_eq!(
            exchange(port, b"GET / HTTP/1.1\r\nno colon\r\n\r\n").status,
            400
        );
        let bad_length = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: lots\r\n\r\n{}";
        assert_eq!(exchange(port, bad_length).status, 400);
        let bad_chunk =
            b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert_eq!(exchange(port, bad_chunk).status, 400);
        let not_json = request(port, "POST", "/v1/chat/completions", &[], b"{not json");
        assert_eq!(
            (not_json.status, &not_json.json()["error"]["message"]),
            (400, &json!("bad json"))
        );
        assert_eq!(server.requests()[0]["body"], "{not json");
        assert_eq!(
            request(port, "GET", "/__health", &[], b"").json(),
            json!({"ok": true})
        );
    }

    #[test]
    fn chunked_request_bodies_are_accepted() {
        let server = start(json!({"scenarios": {"default": [{"text": "chunked ok"}]}}));
        let body = chat(vec![user("hi")]).to_string();
        let (a, b) = body.split_at(10);
        let raw = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n\
             {:x};ext=1\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\nX-Trailer: t\r\n\r\n",
            a.len(),
            b.len()
        );
        assert_eq!(
            exchange(server.port(), raw.as_bytes()).streamed_text(),
            "chunked ok"
        );
    }

    #[test]
    fn keep_alive_connection_serves_several_json_requests() {
        let server = start(json!({"models": ["m1", "m2"]}));
        let mut stream = connect(server.port());
        let mut received = Vec::new();
        for _ in 0..2 {
            stream
                .write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap();
            received.push(parse_reply(&buf[..n]));
        }
        for reply in &received {
            let models = reply.json();
            let ids: Vec<&Value> = models["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| &m["id"])
                .collect();
            assert_eq!(ids, [&json!("m1"), &json!("m2")]);
        }
        assert_eq!(server.requests().len(), 2);
        assert_eq!(server.requests()[0]["kind"], "models");
    }

    #[test]
    fn unknown_routes_get_a_404_json_error() {
        let server = start(json!({}));
        let get = request(server.port(), "GET", "/v1/nothing", &[], b"");
        assert_eq!(
            (get.status, get.json()["error"]["message"].clone()),
            (404, json!("not found: /v1/nothing"))
        );
        let post = request(server.port(), "POST", "/v1/embeddings", &[], b"{}");
        assert_eq!(
            post.json()["error"]["message"],
            "unknown path /v1/embeddings"
        );
        let delete = request(server.port(), "DELETE", "/v1/chat/completions", &[], b"");
        assert_eq!(delete.status, 404);
        let models = request(server.port(), "GET", "/models/", &[], b"").json();
        assert_eq!(models["data"][0]["id"], "fake-model");
    }

    #[test]
    fn json_is_written_as_python_json_dumps_writes_it() {
        let value = json!({"a": [1, "é😀"], "b": null, "c": "q\"\\\n\u{7f}"});
        assert_eq!(
            py_dumps(&value),
            r#"{"a": [1, "\u00e9\ud83d\ude00"], "b": null, "c": "q\"\\\n\u007f"}"#
        );
    }

    #[test]
    fn scenario_tag_matches_like_the_python_regex() {
        assert_eq!(
            scenario_tag("run scenario:err-429.b now"),
            Some("err-429.b")
        );
        assert_eq!(scenario_tag("scenario: x scenario=y"), Some("y"));
        assert_eq!(scenario_tag("no scenario here"), None);
    }
}
