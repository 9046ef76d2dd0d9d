//! Scripted fake OpenAI-compatible chat-completions server for tests.
//!
//! Its script format, scenario and step selection and reply shapes are those of the
//! reference fake model server the worker CLIs' behaviour was first measured against. Tests
//! start it in-process with [`FakeOpenAi::start`] and point the worker CLI (OpenCode, Kilo) at
//! [`FakeOpenAi::base_url`]. It listens on 127.0.0.1 only, and serves one thread per
//! connection.
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
use std::io::{self, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::http::{lock, reason, ReadError, Request, Stopping};

mod output;
mod reply;
mod route;
#[cfg(test)]
mod tests;

use output::*;
use reply::*;
use route::*;

/// Read timeout on every connection: blocking reads wake this often to notice
/// that the server is stopping.
const POLL: Duration = Duration::from_millis(100);
/// A client that stops reading must not pin a handler thread forever.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a closing connection waits for the client to close its side.
const LINGER: Duration = Duration::from_secs(1);
/// How long `Drop` waits for the accept thread before detaching it.
const DROP_WAIT: Duration = Duration::from_secs(2);
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

/// A connection of this server, read through the shared HTTP core.
type Conn<'a> = crate::http::Conn<'a, Shared>;

impl Stopping for Shared {
    fn is_stopping(&self) -> bool {
        Shared::is_stopping(self)
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
    let mut conn = Conn::new(shared, stream);
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
            conn.close_gracefully(LINGER);
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
