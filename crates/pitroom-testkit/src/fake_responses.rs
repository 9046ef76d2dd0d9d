//! Scripted fake OpenAI **Responses API** server (what `codex exec` talks to), for tests.
//!
//! The Rust counterpart of `shared/reference/fakes/fake-responses-server.py`, scripted in the
//! style of [`crate::fake_openai`]: scenarios chosen by a `scenario:NAME` marker in the prompt,
//! steps chosen statelessly from the conversation, step lists for retries. It listens on
//! 127.0.0.1 only and answers every connection with `Connection: close`.
//!
//! # Routes
//! - `POST …/responses`: the scripted reply as an SSE stream (`response.created`,
//!   `response.output_item.added/done`, `response.output_text.delta`, `response.completed`).
//! - `GET …/models`: an empty model list. Anything else: 404 with a JSON error body.
//!
//! # Script
//! ```text
//! {"default_scenario": "default", "scenarios": {"default": [STEP, …], "err429": […]}}
//! ```
//! **Scenario**: the user messages of the request's `input`, latest first, are searched for
//! `scenario:NAME`; the first match wins, else `default_scenario` (else `default`).
//!
//! **Step**: the number of model replies (runs of model output items: reasoning, messages,
//! function calls) after the last user message. A follow-up prompt starts at step 0 again; past
//! the end the last step is reused. A STEP is a reply object, or a list of them served one after
//! the other on repeated hits of the same (scenario, step), the last one repeating: that is how
//! retries are scripted.
//!
//! Reply fields (all optional):
//! - `text`: an assistant message; `reasoning`: a reasoning item first
//! - `shell: "cmd"`: a call of the shell tool the request offers (`exec_command`,
//!   `shell_command`, `shell` or `local_shell`, in that order)
//! - `apply_patch: "*** Begin Patch…"`: a call of `apply_patch` (custom tool when offered)
//! - `tool_calls: [{"name", "arguments": {…}}]`: function calls sent as given
//! - `items: […]`: output items sent verbatim
//! - `usage: {input_tokens, cached_tokens, output_tokens, reasoning_tokens}` (100 / 0 / 20 / 0)
//! - `error: STATUS` with `error_body` (object or raw string; an OpenAI-style body by default),
//!   `content_type` and `headers`
//! - `failed: {"code", "message"}`: a `response.failed` event instead of `response.completed`
//! - `raw: "…"`: a verbatim 200 body (`raw_content_type`, default `text/event-stream`)
//! - `drop: true`: `response.created`, then the connection closes
//! - `hang: true`: `response.created`, then silence for `hang_s` seconds (default 600)
//! - `delay_ms`: a pause before every SSE event
//!
//! Strings in a reply may use `{{workdir}}` (the `<cwd>` Codex reports in its environment
//! context) and `{{port}}`.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};

use self::http::{
    error_reply, json_reply, lock, Chunk, Reply, Request, ScriptState, Server, StreamEnd,
};

/// A running fake Responses API server; dropping it stops the server.
pub struct FakeResponses {
    server: Server,
    log: Arc<Mutex<Vec<Value>>>,
}

impl FakeResponses {
    /// Starts the server on 127.0.0.1 with an OS-chosen port, serving `script`.
    pub fn start(script: Value) -> io::Result<FakeResponses> {
        let log = Arc::new(Mutex::new(Vec::new()));
        let state = Arc::new(Mutex::new(ScriptState::default()));
        let handler_log = Arc::clone(&log);
        let server = Server::start(
            "fake-responses",
            Arc::new(move |req: &Request, port: u16| {
                let (reply, entry) = handle(&script, &state, req, port);
                lock(&handler_log).push(entry);
                reply
            }),
        )?;
        Ok(FakeResponses { server, log })
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The provider base URL: `http://127.0.0.1:PORT/v1` (Codex posts to `{base}/responses`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port())
    }

    /// Every request so far: `{"method", "path", "headers", "body", "kind": "responses" |
    /// "other", "scenario", "step", "hit"}`.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.log).clone()
    }

    /// Only the model requests (`POST …/responses`).
    pub fn model_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["kind"] == "responses")
            .collect()
    }
}

impl std::fmt::Debug for FakeResponses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeResponses")
            .field("port", &self.port())
            .finish_non_exhaustive()
    }
}

fn handle(script: &Value, state: &Mutex<ScriptState>, req: &Request, port: u16) -> (Reply, Value) {
    let body = req.json_body();
    let mut entry = req.log_entry(&body);
    let path = req.path_only();
    if req.method == "GET" && path.trim_end_matches('/').ends_with("/models") {
        entry["kind"] = "other".into();
        return (
            json_reply(200, &json!({"object": "list", "data": [], "models": []})),
            entry,
        );
    }
    if req.method != "POST" || !path.trim_end_matches('/').ends_with("/responses") {
        entry["kind"] = "other".into();
        let body = json!({"error": {"message": format!("fake-responses: no route {path}"), "type": "invalid_request_error"}});
        return (json_reply(404, &body), entry);
    }
    let input = body
        .get("input")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let scenario = user_texts(&input)
        .iter()
        .rev()
        .find_map(|t| http::scenario_tag(t).map(str::to_string))
        .unwrap_or_else(|| http::default_scenario(script));
    let step = step_index(&input);
    let (reply, hit) = lock(state).pick(script, &scenario, step);
    entry["kind"] = "responses".into();
    entry["scenario"] = scenario.clone().into();
    entry["step"] = step.into();
    entry["hit"] = hit.into();
    let workdir = input.iter().rev().find_map(cwd_of).unwrap_or_default();
    let reply = http::fill_placeholders(reply, &workdir, port);
    (answer(&reply, &body, &scenario), entry)
}

/// The texts of the user messages in `input`, in order.
fn user_texts(input: &[Value]) -> Vec<String> {
    input
        .iter()
        .filter(|item| item["role"] == "user")
        .map(|item| content_text(&item["content"]))
        .collect()
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `<cwd>/path</cwd>` from Codex's environment context.
fn cwd_of(item: &Value) -> Option<String> {
    let text = content_text(&item["content"]);
    let start = text.find("<cwd>")? + "<cwd>".len();
    let len = text[start..].find("</cwd>")?;
    Some(text[start..start + len].trim().to_string())
}

/// Items a model reply produces; a run of them after the last user message is one reply.
fn is_model_item(item: &Value) -> bool {
    match item["type"].as_str() {
        Some("message") => item["role"] == "assistant",
        Some(kind) => matches!(
            kind,
            "reasoning"
                | "function_call"
                | "custom_tool_call"
                | "local_shell_call"
                | "web_search_call"
        ),
        None => false,
    }
}

fn step_index(input: &[Value]) -> usize {
    let start = input
        .iter()
        .rposition(|item| item["role"] == "user")
        .map_or(0, |i| i + 1);
    let mut runs = 0;
    let mut in_run = false;
    for item in &input[start..] {
        let model = is_model_item(item);
        if model && !in_run {
            runs += 1;
        }
        in_run = model;
    }
    runs
}

fn answer(r: &Map<String, Value>, body: &Value, scenario: &str) -> Reply {
    if r.is_empty() {
        return Reply::text(
            200,
            "text/plain",
            format!("fake-responses: unknown scenario {scenario}"),
        );
    }
    if let Some(status) = r.get("error") {
        let status = http::status_of(status);
        let default = json!({"error": {
            "message": default_error_message(status),
            "type": default_error_type(status),
            "code": default_error_type(status),
        }});
        return error_reply(status, r, default);
    }
    if let Some(raw) = r.get("raw") {
        let content_type = r
            .get("raw_content_type")
            .and_then(Value::as_str)
            .unwrap_or("text/event-stream");
        return Reply::text(200, content_type, http::value_text(raw));
    }
    let delay = http::millis(r.get("delay_ms")).unwrap_or_default();
    let id = format!("resp_{}", http::random_hex(12));
    let mut events = vec![sse(
        delay,
        &json!({"type": "response.created", "response": {"id": id, "object": "response", "status": "in_progress"}}),
    )];
    if r.get("drop").is_some_and(http::truthy) {
        return Reply::stream(events, StreamEnd::Close);
    }
    if r.get("hang").is_some_and(http::truthy) {
        return Reply::stream(events, StreamEnd::Hang(http::hang_limit(r)));
    }
    if let Some(error) = r.get("failed") {
        events.push(sse(
            delay,
            &json!({"type": "response.failed", "response": {"id": id, "status": "failed", "error": error}}),
        ));
        return Reply::stream(events, StreamEnd::Close);
    }
    for (i, item) in output_items(r, body).into_iter().enumerate() {
        events.push(sse(
            delay,
            &json!({"type": "response.output_item.added", "output_index": i, "item": item}),
        ));
        if item["type"] == "message" {
            let text = item["content"][0]["text"].clone();
            events.push(sse(
                delay,
                &json!({"type": "response.output_text.delta", "item_id": item["id"], "output_index": i, "content_index": 0, "delta": text}),
            ));
        }
        events.push(sse(
            delay,
            &json!({"type": "response.output_item.done", "output_index": i, "item": item}),
        ));
    }
    events.push(sse(
        delay,
        &json!({"type": "response.completed", "response": {"id": id, "object": "response", "status": "completed", "usage": usage(r.get("usage"))}}),
    ));
    Reply::stream(events, StreamEnd::Close)
}

fn sse(delay: Duration, event: &Value) -> Chunk {
    let kind = event["type"].as_str().unwrap_or("message");
    Chunk {
        delay,
        data: format!("event: {kind}\ndata: {event}\n\n").into_bytes(),
    }
}

fn output_items(r: &Map<String, Value>, body: &Value) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(text) = r.get("reasoning").and_then(Value::as_str) {
        items.push(json!({"type": "reasoning", "id": format!("rs_{}", http::random_hex(12)),
            "summary": [{"type": "summary_text", "text": text}], "content": null, "encrypted_content": null}));
    }
    if let Some(cmd) = r.get("shell").and_then(Value::as_str) {
        items.push(shell_call(cmd, body));
    }
    if let Some(patch) = r.get("apply_patch").and_then(Value::as_str) {
        items.push(patch_call(patch, body));
    }
    for call in r
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let call_id = format!("call_{}", http::random_hex(12));
        let arguments = match &call["arguments"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        items.push(
            json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
            "name": call["name"], "arguments": arguments, "status": "completed"}),
        );
    }
    items.extend(
        r.get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .cloned(),
    );
    if let Some(text) = r.get("text") {
        items.push(json!({"type": "message", "id": format!("msg_{}", http::random_hex(12)),
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": http::value_text(text), "annotations": []}]}));
    }
    items
}

/// The tools a request offers, by name (or by type for unnamed built-ins).
fn offered_tools(body: &Value) -> Map<String, Value> {
    let mut names = Map::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        let name = tool["name"]
            .as_str()
            .or_else(|| tool["function"]["name"].as_str())
            .or_else(|| tool["type"].as_str());
        if let Some(name) = name {
            names.insert(name.to_string(), tool.clone());
        }
    }
    names
}

/// A call of whichever shell tool the request offers, in its argument shape.
fn shell_call(cmd: &str, body: &Value) -> Value {
    let names = offered_tools(body);
    let call_id = format!("call_{}", http::random_hex(12));
    let name = ["exec_command", "shell_command", "shell", "local_shell"]
        .into_iter()
        .find(|n| names.contains_key(*n))
        .unwrap_or("shell");
    let arguments = match name {
        "exec_command" => json!({"cmd": cmd}),
        "shell_command" => json!({"command": cmd}),
        "local_shell" => {
            return json!({"type": "local_shell_call", "id": format!("lsh_{call_id}"), "call_id": call_id,
                "status": "completed", "action": {"type": "exec", "command": ["bash", "-lc", cmd]}});
        }
        _ => json!({"command": ["bash", "-lc", cmd]}),
    };
    json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id, "name": name,
        "arguments": arguments.to_string(), "status": "completed"})
}

fn patch_call(patch: &str, body: &Value) -> Value {
    let names = offered_tools(body);
    let call_id = format!("call_{}", http::random_hex(12));
    if names
        .get("apply_patch")
        .is_some_and(|t| t["type"] == "custom")
    {
        return json!({"type": "custom_tool_call", "id": format!("ctc_{call_id}"), "call_id": call_id,
            "name": "apply_patch", "input": patch, "status": "completed"});
    }
    json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id, "name": "apply_patch",
        "arguments": json!({"input": patch}).to_string(), "status": "completed"})
}

fn usage(spec: Option<&Value>) -> Value {
    let get = |key: &str, default: u64| {
        spec.and_then(|s| s.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(default)
    };
    let input = get("input_tokens", 100);
    let output = get("output_tokens", 20);
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": get("cached_tokens", 0), "cache_write_tokens": get("cache_write_tokens", 0)},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": get("reasoning_tokens", 0)},
        "total_tokens": input + output,
    })
}

fn default_error_type(status: u16) -> &'static str {
    match status {
        401 => "invalid_api_key",
        404 => "model_not_found",
        429 => "rate_limit_exceeded",
        400 => "invalid_request_error",
        _ => "server_error",
    }
}

fn default_error_message(status: u16) -> &'static str {
    match status {
        401 => "Incorrect API key provided: sk-fake.",
        404 => "The model `gpt-5.5` does not exist or you do not have access to it.",
        429 => "Rate limit reached for requests",
        400 => "Invalid request.",
        _ => "The server had an error while processing your request.",
    }
}

/// The HTTP plumbing and script walking shared by the Responses and Anthropic fakes: a small
/// HTTP/1.1 server (one thread per connection, `Connection: close` on every reply) that can
/// stream SSE with pauses, drop a stream or hang it.
pub(crate) mod http {
    use std::collections::HashMap;
    use std::io::{self, Read, Write};
    use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
    use std::thread::{self, JoinHandle};
    use std::time::{Duration, Instant};

    use serde_json::{json, Map, Value};

    /// Blocking reads and scripted sleeps wake this often to notice a stop.
    const POLL: Duration = Duration::from_millis(50);
    const MAX_HEAD: usize = 64 * 1024;
    const MAX_BODY: usize = 64 * 1024 * 1024;
    /// How long `hang` lasts without `hang_s`.
    const DEFAULT_HANG: Duration = Duration::from_secs(600);

    pub(crate) type Handler = Arc<dyn Fn(&Request, u16) -> Reply + Send + Sync>;

    pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One request as received.
    pub(crate) struct Request {
        pub method: String,
        pub path: String,
        /// Lower-cased names.
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
    }

    impl Request {
        pub fn path_only(&self) -> &str {
            self.path.split('?').next().unwrap_or("")
        }

        /// The body as JSON; `Null` when empty or not JSON.
        pub fn json_body(&self) -> Value {
            serde_json::from_slice(&self.body).unwrap_or(Value::Null)
        }

        /// The log entry every fake keeps: method, path, headers and body (parsed when JSON).
        pub fn log_entry(&self, body: &Value) -> Value {
            let headers: Map<String, Value> = self
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            let body = if body.is_null() && !self.body.is_empty() {
                Value::String(String::from_utf8_lossy(&self.body).into_owned())
            } else {
                body.clone()
            };
            json!({"method": self.method, "path": self.path, "headers": headers, "body": body,
                "kind": "other", "scenario": null, "step": null, "hit": null})
        }
    }

    /// A piece of a streamed body, sent after `delay`.
    pub(crate) struct Chunk {
        pub delay: Duration,
        pub data: Vec<u8>,
    }

    /// How a streamed reply ends.
    pub(crate) enum StreamEnd {
        /// Close the connection (the body is delimited by the close).
        Close,
        /// Stay silent this long (or until the client leaves or the server stops), then close.
        Hang(Duration),
    }

    pub(crate) enum Reply {
        Body {
            status: u16,
            headers: Vec<(String, String)>,
            body: Vec<u8>,
        },
        Stream {
            chunks: Vec<Chunk>,
            end: StreamEnd,
        },
    }

    impl Reply {
        pub fn text(status: u16, content_type: &str, body: String) -> Reply {
            Reply::Body {
                status,
                headers: vec![("content-type".into(), content_type.into())],
                body: body.into_bytes(),
            }
        }

        pub fn stream(chunks: Vec<Chunk>, end: StreamEnd) -> Reply {
            Reply::Stream { chunks, end }
        }
    }

    pub(crate) fn json_reply(status: u16, body: &Value) -> Reply {
        Reply::text(status, "application/json", body.to_string())
    }

    /// An error reply from a script step: `error_body` (object or raw string, else `default`),
    /// `content_type` and extra `headers`.
    pub(crate) fn error_reply(status: u16, r: &Map<String, Value>, default: Value) -> Reply {
        let body = match r.get("error_body") {
            Some(Value::String(raw)) => raw.clone(),
            Some(other) => other.to_string(),
            None => default.to_string(),
        };
        let content_type = r
            .get("content_type")
            .and_then(Value::as_str)
            .unwrap_or("application/json");
        let mut headers = vec![("content-type".to_string(), content_type.to_string())];
        for (k, v) in r
            .get("headers")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            headers.push((k.clone(), value_text(v)));
        }
        Reply::Body {
            status,
            headers,
            body: body.into_bytes(),
        }
    }

    /// Which hit of each (scenario, step) comes next, to walk step lists.
    #[derive(Default)]
    pub(crate) struct ScriptState {
        hits: HashMap<(String, usize), usize>,
    }

    impl ScriptState {
        /// The reply for `step` of `scenario` (the last step past the end; an empty map for an
        /// unknown scenario) and how many times that step was hit before.
        pub fn pick(
            &mut self,
            script: &Value,
            scenario: &str,
            step: usize,
        ) -> (Map<String, Value>, usize) {
            let Some(steps) = script["scenarios"][scenario]
                .as_array()
                .filter(|s| !s.is_empty())
            else {
                return (Map::new(), 0);
            };
            let index = step.min(steps.len() - 1);
            let counter = self.hits.entry((scenario.to_string(), index)).or_insert(0);
            let hit = *counter;
            *counter += 1;
            let reply = match &steps[index] {
                Value::Array(list) if !list.is_empty() => list[hit.min(list.len() - 1)].clone(),
                other => other.clone(),
            };
            (reply.as_object().cloned().unwrap_or_default(), hit)
        }
    }

    /// `scenario:NAME` (or `scenario=NAME`) in `text`.
    pub(crate) fn scenario_tag(text: &str) -> Option<&str> {
        let start = text.find("scenario:").or_else(|| text.find("scenario="))? + "scenario:".len();
        let rest = &text[start..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
            .unwrap_or(rest.len());
        let name = rest[..end].trim_end_matches('.');
        (!name.is_empty()).then_some(name)
    }

    pub(crate) fn default_scenario(script: &Value) -> String {
        script["default_scenario"]
            .as_str()
            .unwrap_or("default")
            .to_string()
    }

    /// Replaces `{{workdir}}` and `{{port}}` in every string of `reply`.
    pub(crate) fn fill_placeholders(
        reply: Map<String, Value>,
        workdir: &str,
        port: u16,
    ) -> Map<String, Value> {
        fn fill(value: Value, workdir: &str, port: &str) -> Value {
            match value {
                Value::String(s) => {
                    Value::String(s.replace("{{workdir}}", workdir).replace("{{port}}", port))
                }
                Value::Array(items) => {
                    Value::Array(items.into_iter().map(|v| fill(v, workdir, port)).collect())
                }
                Value::Object(map) => Value::Object(
                    map.into_iter()
                        .map(|(k, v)| (k, fill(v, workdir, port)))
                        .collect(),
                ),
                other => other,
            }
        }
        let port = port.to_string();
        reply
            .into_iter()
            .map(|(k, v)| (k, fill(v, workdir, &port)))
            .collect()
    }

    pub(crate) fn status_of(value: &Value) -> u16 {
        value
            .as_u64()
            .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
            .and_then(|n| u16::try_from(n).ok())
            .unwrap_or(500)
    }

    pub(crate) fn value_text(value: &Value) -> String {
        match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    pub(crate) fn millis(value: Option<&Value>) -> Option<Duration> {
        value
            .and_then(Value::as_f64)
            .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0))
    }

    pub(crate) fn truthy(value: &Value) -> bool {
        !matches!(value, Value::Null | Value::Bool(false))
    }

    pub(crate) fn hang_limit(r: &Map<String, Value>) -> Duration {
        r.get("hang_s")
            .and_then(Value::as_f64)
            .map_or(DEFAULT_HANG, |s| Duration::from_secs_f64(s.max(0.0)))
    }

    /// Random-looking lowercase hex, for ids.
    pub(crate) fn random_hex(len: usize) -> String {
        use std::hash::{BuildHasher, Hasher};
        let mut out = String::new();
        while out.len() < len {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(Instant::now().elapsed().as_nanos());
            out.push_str(&format!("{:016x}", h.finish()));
        }
        out.truncate(len);
        out
    }

    /// A running server; dropping it stops it and cuts every open stream short.
    pub(crate) struct Server {
        port: u16,
        stopping: Arc<AtomicBool>,
        accept: Option<JoinHandle<()>>,
    }

    impl Server {
        pub fn start(name: &str, handler: Handler) -> io::Result<Server> {
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
            let port = listener.local_addr()?.port();
            let stopping = Arc::new(AtomicBool::new(false));
            let accepting = Arc::clone(&stopping);
            let accept = thread::Builder::new()
                .name(format!("{name}-accept"))
                .spawn(move || {
                    for stream in listener.incoming() {
                        if accepting.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(stream) = stream else { continue };
                        let handler = Arc::clone(&handler);
                        let stopping = Arc::clone(&accepting);
                        let _ = thread::Builder::new().spawn(move || {
                            let _ = serve(stream, &handler, port, &stopping);
                        });
                    }
                })?;
            Ok(Server {
                port,
                stopping,
                accept: Some(accept),
            })
        }

        pub fn port(&self) -> u16 {
            self.port
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.stopping.store(true, Ordering::SeqCst);
            // A blocking accept() only returns for a connection, so make one.
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
            drop(TcpStream::connect_timeout(&addr, Duration::from_secs(1)));
            if let Some(handle) = self.accept.take() {
                let _ = handle.join();
            }
        }
    }

    fn serve(
        mut stream: TcpStream,
        handler: &Handler,
        port: u16,
        stopping: &AtomicBool,
    ) -> io::Result<()> {
        stream.set_read_timeout(Some(POLL))?;
        stream.set_write_timeout(Some(Duration::from_secs(30)))?;
        let Some(request) = read_request(&mut stream, stopping)? else {
            return Ok(());
        };
        match handler(&request, port) {
            Reply::Body {
                status,
                headers,
                body,
            } => {
                write_head(&mut stream, status, &headers, Some(body.len()))?;
                stream.write_all(&body)?;
                stream.flush()?;
            }
            Reply::Stream { chunks, end } => {
                let headers = vec![
                    ("content-type".to_string(), "text/event-stream".to_string()),
                    ("cache-control".to_string(), "no-cache".to_string()),
                ];
                write_head(&mut stream, 200, &headers, None)?;
                stream.flush()?;
                for chunk in chunks {
                    if !pause(chunk.delay, stopping, None) {
                        break;
                    }
                    stream.write_all(&chunk.data)?;
                    stream.flush()?;
                }
                if let StreamEnd::Hang(limit) = end {
                    pause(limit, stopping, Some(&mut stream));
                }
            }
        }
        let _ = stream.shutdown(Shutdown::Both);
        Ok(())
    }

    /// Sleeps up to `limit`; false when the server stopped (or the watched client left) first.
    fn pause(limit: Duration, stopping: &AtomicBool, mut client: Option<&mut TcpStream>) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if stopping.load(Ordering::SeqCst) {
                return false;
            }
            match client.as_deref_mut() {
                // Reads time out after POLL: that is the sleep. 0 bytes: the client left.
                Some(stream) => match stream.read(&mut [0u8; 512]) {
                    Ok(0) => return false,
                    Ok(_) => {}
                    Err(e) if is_timeout(&e) => {}
                    Err(_) => return false,
                },
                None => thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))),
            }
        }
        true
    }

    fn is_timeout(err: &io::Error) -> bool {
        matches!(
            err.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        )
    }

    /// Reads one request; `None` when the client closed first or the server is stopping.
    fn read_request(stream: &mut TcpStream, stopping: &AtomicBool) -> io::Result<Option<Request>> {
        let mut buf = Vec::new();
        let head_end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            if buf.len() > MAX_HEAD {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "head too long"));
            }
            if !read_more(stream, &mut buf, stopping)? {
                return Ok(None);
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut rest = buf[head_end + 4..].to_vec();
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or("").split_whitespace();
        let method = first.next().unwrap_or("").to_string();
        let path = first.next().unwrap_or("/").to_string();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let find = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let body = if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            read_chunked(stream, rest, stopping)?
        } else {
            let length: usize = find("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if length > MAX_BODY {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "body too long"));
            }
            while rest.len() < length {
                if !read_more(stream, &mut rest, stopping)? {
                    return Ok(None);
                }
            }
            rest.truncate(length);
            rest
        };
        Ok(Some(Request {
            method,
            path,
            headers,
            body,
        }))
    }

    fn read_chunked(
        stream: &mut TcpStream,
        mut buf: Vec<u8>,
        stopping: &AtomicBool,
    ) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(p) = buf.windows(2).position(|w| w == b"\r\n") {
                    break p;
                }
                if !read_more(stream, &mut buf, stopping)? {
                    return Ok(body);
                }
            };
            let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            buf.drain(..line_end + 2);
            if size == 0 {
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "body too long"));
            }
            while buf.len() < size + 2 {
                if !read_more(stream, &mut buf, stopping)? {
                    return Ok(body);
                }
            }
            body.extend_from_slice(&buf[..size]);
            buf.drain(..size + 2);
        }
    }

    /// Reads what is available into `buf`; false at EOF or on stop.
    fn read_more(
        stream: &mut TcpStream,
        buf: &mut Vec<u8>,
        stopping: &AtomicBool,
    ) -> io::Result<bool> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if stopping.load(Ordering::SeqCst) {
                return Ok(false);
            }
            match stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn write_head(
        out: &mut TcpStream,
        status: u16,
        headers: &[(String, String)],
        length: Option<usize>,
    ) -> io::Result<()> {
        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("request-id: req_fake_{}\r\n", random_hex(12)));
        if let Some(n) = length {
            head.push_str(&format!("content-length: {n}\r\n"));
        }
        head.push_str("connection: close\r\n\r\n");
        out.write_all(head.as_bytes())
    }

    fn reason(status: u16) -> &'static str {
        match status {
            200 => "OK",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            429 => "Too Many Requests",
            500 => "Internal Server Error",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            529 => "Overloaded",
            _ => "Status",
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn scenario_tags_end_at_the_first_non_name_character() {
            assert_eq!(scenario_tag("do it scenario:err429, now"), Some("err429"));
            assert_eq!(scenario_tag("scenario=edit."), Some("edit"));
            assert_eq!(scenario_tag("no tag"), None);
        }

        #[test]
        fn step_lists_walk_then_repeat_their_last_entry() {
            let script = json!({"scenarios": {"s": [[{"n": 1}, {"n": 2}]]}});
            let mut state = ScriptState::default();
            let picks: Vec<Value> = (0..3)
                .map(|_| state.pick(&script, "s", 5).0["n"].clone())
                .collect();
            assert_eq!(picks, vec![json!(1), json!(2), json!(2)]);
            assert!(state.pick(&script, "missing", 0).0.is_empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    fn post(server: &FakeResponses, body: &Value) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        let payload = body.to_string();
        write!(
            s,
            "POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{payload}",
            payload.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let status = out[9..12].parse().unwrap();
        (status, out)
    }

    fn user(text: &str) -> Value {
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    }

    fn script() -> Value {
        json!({"scenarios": {
            "default": [{"shell": "grep -n add calc.py"}, {"text": "at {{workdir}}/calc.py:1"}],
            "err429": [[{"error": 429, "headers": {"retry-after": "0"}}, {"text": "recovered"}]],
            "fail": [{"failed": {"code": "rate_limit_exceeded", "message": "slow down"}}],
        }})
    }

    #[test]
    fn steps_follow_the_conversation_and_the_shell_tool_offered() {
        let server = FakeResponses::start(script()).unwrap();
        let env = user("<environment_context>\n  <cwd>/w/repo</cwd>\n</environment_context>");
        let tools = json!([{"type": "function", "name": "exec_command"}]);
        let (status, out) = post(
            &server,
            &json!({"input": [env.clone(), user("where?")], "tools": tools}),
        );
        assert_eq!(status, 200);
        assert!(out.contains(r#"\"cmd\":\"grep -n add calc.py\""#), "{out}");
        assert!(out.contains("response.completed"), "{out}");
        let call = json!({"type": "function_call", "name": "exec_command", "call_id": "c", "arguments": "{}"});
        let result = json!({"type": "function_call_output", "call_id": "c", "output": "1:def add"});
        let (_, out) = post(
            &server,
            &json!({"input": [env, user("where?"), call, result], "tools": tools}),
        );
        assert!(out.contains("at /w/repo/calc.py:1"), "{out}");
        let steps: Vec<u64> = server
            .model_requests()
            .iter()
            .map(|r| r["step"].as_u64().unwrap())
            .collect();
        assert_eq!(steps, vec![0, 1]);
    }

    #[test]
    fn a_step_list_scripts_retries_and_errors_carry_headers() {
        let server = FakeResponses::start(script()).unwrap();
        let body = json!({"input": [user("go scenario:err429")]});
        let (status, out) = post(&server, &body);
        assert_eq!(status, 429);
        assert!(out.to_lowercase().contains("retry-after: 0"), "{out}");
        assert!(out.contains("rate_limit_exceeded"), "{out}");
        let (status, out) = post(&server, &body);
        assert_eq!(status, 200);
        assert!(out.contains("recovered"), "{out}");
    }

    #[test]
    fn response_failed_replaces_completed() {
        let server = FakeResponses::start(script()).unwrap();
        let (_, out) = post(&server, &json!({"input": [user("scenario:fail")]}));
        assert!(
            out.contains("response.failed") && out.contains("slow down"),
            "{out}"
        );
        assert!(!out.contains("response.completed"), "{out}");
    }

    #[test]
    fn unknown_routes_are_404_and_logged() {
        let server = FakeResponses::start(script()).unwrap();
        let mut s = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        s.write_all(b"GET /nope HTTP/1.1\r\nhost: x\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 404"), "{out}");
        assert_eq!(server.requests()[0]["kind"], "other");
    }
}
