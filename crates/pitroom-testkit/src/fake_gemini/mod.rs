//! Scripted fake Gemini API (`generativelanguage` v1beta) for tests of Gemini CLI.
//!
//! Scripted like [`crate::fake_openai`]: the same script shape, the same scenario marker and the
//! same stateless step selection, with Gemini's request and reply formats. It listens on
//! 127.0.0.1 only, one thread per connection, and records every request.
//!
//! # Routes
//! - `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`: the scripted reply as SSE.
//! - `POST /v1beta/models/<model>:generateContent`: the same reply as one JSON body.
//! - `POST …:countTokens`: `{"totalTokens": 123}`.
//! - `GET /v1beta/models`: the ids in `script.models`, or `["gemini-2.5-pro"]`.
//! - Anything else: 404 with a Google-style error body.
//!
//! # Script
//! ```text
//! {
//!   "aux": {"text": "…"},              reply to requests without tools; consumes no step
//!   "models": ["gemini-2.5-pro"],
//!   "scenarios": {"default": [STEP, …], "err429": [STEP]}
//! }
//! ```
//! **Scenario**: the user turns, latest first, are searched for `scenario:NAME`; else
//! `default`. **Step**: the number of model turns after the last user turn that carries text
//! (function responses are user turns too, but continue the same step sequence). Past the end,
//! the last step repeats. A STEP is a response object or a list of them served on repeated hits.
//!
//! Response object fields (all optional): `text`; `tool_calls: [{"name", "arguments"}]`;
//! `usage: {prompt, candidates, cached, thoughts}` (defaults 100, 20, 0, 0); `finish_reason`
//! (default `STOP`); `error: STATUS` with `error_message`, `error_status` (`RESOURCE_EXHAUSTED`…),
//! `error_details` (a list) and `headers`; `raw_stream` (verbatim SSE payloads); `delay_ms`;
//! `hang: true`. Requests whose `generationConfig` asks for JSON (the CLI's router and
//! next-speaker side calls) get a JSON object built from the response schema, no step.
//! String values may use `{{workdir}}` (from the CLI's session context) and `{{port}}`.

use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::http::{lock, reason, Conn, Request, Stopping};
use crate::script::scenario_tags;

const HANG_LIMIT: Duration = Duration::from_secs(600);

/// A running fake Gemini API; dropping it stops the server.
pub struct FakeGemini {
    shared: Arc<Shared>,
}

struct Shared {
    script: Value,
    port: u16,
    stopping: AtomicBool,
    log: Mutex<Vec<Value>>,
    hits: Mutex<HashMap<(String, usize), usize>>,
    connections: Mutex<Vec<TcpStream>>,
}

impl FakeGemini {
    /// Starts the server on 127.0.0.1 with an OS-chosen port.
    pub fn start(script: Value) -> io::Result<FakeGemini> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            script,
            port,
            stopping: AtomicBool::new(false),
            log: Mutex::new(Vec::new()),
            hits: Mutex::new(HashMap::new()),
            connections: Mutex::new(Vec::new()),
        });
        let accepting = Arc::clone(&shared);
        thread::Builder::new()
            .name("fake-gemini-accept".into())
            .spawn(move || accept_loop(&accepting, &listener))?;
        Ok(FakeGemini { shared })
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// The value for `GOOGLE_GEMINI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.shared.port)
    }

    /// Every request so far: `{"method", "path", "headers", "body", "kind": "model" | "side" |
    /// "aux" | "other", "scenario", "step", "model"}`.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.log).clone()
    }

    /// The requests that consumed a script step.
    pub fn model_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["kind"] == "model")
            .collect()
    }
}

impl Drop for FakeGemini {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for conn in lock(&self.shared.connections).iter() {
            let _ = conn.shutdown(Shutdown::Both);
        }
        // Wakes the blocking accept so its thread sees the flag and ends.
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.shared.port));
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    for incoming in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = incoming else {
            thread::sleep(Duration::from_millis(50));
            continue;
        };
        if let Ok(clone) = stream.try_clone() {
            let mut conns = lock(&shared.connections);
            conns.retain(|c| c.peer_addr().is_ok());
            conns.push(clone);
        }
        let worker = Arc::clone(shared);
        let _ = thread::Builder::new()
            .name("fake-gemini-conn".into())
            .spawn(move || serve_connection(&worker, stream));
    }
}

/// Serves keep-alive requests until the client closes or a reply closes the connection.
fn serve_connection(shared: &Shared, stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
    let mut conn = Conn::new(shared, stream);
    while let Ok(req) = conn.read_request() {
        let keep_open = matches!(route(shared, &req, &mut conn.stream), Ok(true));
        if !keep_open || asks_to_close(&req) {
            break;
        }
    }
    let _ = conn.stream.shutdown(Shutdown::Write);
}

/// Whether the client sent `Connection: close` (HTTP/1.0's default is not honoured: Gemini CLI
/// speaks HTTP/1.1).
fn asks_to_close(req: &Request) -> bool {
    req.headers
        .iter()
        .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"))
}

impl Stopping for Shared {
    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

/// Answers one request; `Ok(true)` keeps the connection open.
fn route(shared: &Shared, req: &Request, out: &mut TcpStream) -> io::Result<bool> {
    let path = req.target.split('?').next().unwrap_or_default();
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    if req.method == "GET" && path.trim_end_matches('/').ends_with("/models") {
        record(shared, req, &body, "other", Map::new());
        let ids = shared
            .script
            .get("models")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_else(|| vec![json!("gemini-2.5-pro")]);
        let models: Vec<Value> = ids
            .iter()
            .filter_map(Value::as_str)
            .map(|id| json!({"name": format!("models/{id}"), "supportedGenerationMethods": ["generateContent"]}))
            .collect();
        send_json(out, 200, &json!({"models": models}), &[])?;
        return Ok(true);
    }
    let Some((model, method)) = model_method(path) else {
        record(shared, req, &body, "other", Map::new());
        let error = google_error(404, "NOT_FOUND", "fake-gemini: no such path", &[]);
        send_json(out, 404, &error, &[])?;
        return Ok(true);
    };
    match method.as_str() {
        "countTokens" => {
            record(shared, req, &body, "other", Map::new());
            send_json(out, 200, &json!({"totalTokens": 123}), &[])?;
            Ok(true)
        }
        "generateContent" | "streamGenerateContent" => serve_generate(
            shared,
            req,
            &body,
            &model,
            method == "streamGenerateContent",
            out,
        ),
        _ => {
            record(shared, req, &body, "other", Map::new());
            let error = google_error(404, "NOT_FOUND", "fake-gemini: unknown method", &[]);
            send_json(out, 404, &error, &[])?;
            Ok(true)
        }
    }
}

/// `…/models/<model>:<method>`.
fn model_method(path: &str) -> Option<(String, String)> {
    let rest = path.rsplit_once("/models/")?.1;
    let (model, method) = rest.split_once(':')?;
    Some((model.to_string(), method.to_string()))
}

fn record(shared: &Shared, req: &Request, body: &Value, kind: &str, meta: Map<String, Value>) {
    let headers: Map<String, Value> = req
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let mut entry = Map::new();
    entry.insert("method".into(), json!(req.method));
    entry.insert("path".into(), json!(req.target));
    entry.insert("headers".into(), Value::Object(headers));
    entry.insert("body".into(), body.clone());
    entry.insert("kind".into(), json!(kind));
    entry.extend(meta);
    lock(&shared.log).push(Value::Object(entry));
}

fn serve_generate(
    shared: &Shared,
    req: &Request,
    body: &Value,
    model: &str,
    stream: bool,
    out: &mut TcpStream,
) -> io::Result<bool> {
    let contents = body
        .get("contents")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let workdir = find_workdir(body).unwrap_or_default();
    let fill = |v: &Value| substitute(v, &workdir, shared.port);
    let config = body.get("generationConfig").unwrap_or(&Value::Null);
    let wants_json = config.get("responseMimeType").and_then(Value::as_str)
        == Some("application/json")
        || config.get("responseJsonSchema").is_some()
        || config.get("responseSchema").is_some();
    let reply = if wants_json {
        record(shared, req, body, "side", Map::new());
        json!({"text": side_answer(config).to_string()})
    } else if !has_tools(body) {
        record(shared, req, body, "aux", Map::new());
        fill(
            shared
                .script
                .get("aux")
                .unwrap_or(&json!({"text": "Fake aux"})),
        )
    } else {
        let scenario = scenario_in(contents).unwrap_or_else(|| "default".into());
        let index = step_index(contents);
        let reply = pick(shared, &scenario, index);
        let mut meta = Map::new();
        meta.insert("scenario".into(), json!(scenario));
        meta.insert("step".into(), json!(index));
        meta.insert("model".into(), json!(model));
        record(shared, req, body, "model", meta);
        fill(&reply)
    };
    respond(shared, &reply, model, stream, out)
}

fn has_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| {
            tools.iter().any(|t| {
                t.get("functionDeclarations")
                    .and_then(Value::as_array)
                    .is_some_and(|d| !d.is_empty())
            })
        })
}

fn pick(shared: &Shared, scenario: &str, index: usize) -> Value {
    let steps = shared
        .script
        .get("scenarios")
        .and_then(|s| s.get(scenario))
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
        .cloned()
        .unwrap_or_else(|| {
            vec![json!({"text": format!("fake-gemini: unknown scenario {scenario}")})]
        });
    let clamped = index.min(steps.len() - 1);
    let hit = {
        let mut hits = lock(&shared.hits);
        let n = hits.entry((scenario.to_string(), clamped)).or_insert(0);
        *n += 1;
        *n - 1
    };
    match &steps[clamped] {
        Value::Array(tries) if !tries.is_empty() => tries[hit.min(tries.len() - 1)].clone(),
        step => step.clone(),
    }
}

fn texts_of(content: &Value) -> impl Iterator<Item = &str> {
    content
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
}

fn is_user_text_turn(content: &Value) -> bool {
    content.get("role").and_then(Value::as_str) == Some("user")
        && texts_of(content).next().is_some()
}

/// Model turns after the last user turn that carries text.
fn step_index(contents: &[Value]) -> usize {
    let start = contents
        .iter()
        .rposition(is_user_text_turn)
        .map_or(0, |i| i + 1);
    contents[start..]
        .iter()
        .filter(|c| c.get("role").and_then(Value::as_str) == Some("model"))
        .count()
}

/// The scenario the latest user turn that names one names; within a turn, its last tag. A CLI
/// that resumes a session whose last prompt was never answered (a run stopped mid-turn) sends
/// that prompt and the new one in one user turn, oldest first: the new one decides.
fn scenario_in(contents: &[Value]) -> Option<String> {
    contents
        .iter()
        .rev()
        .filter(|c| is_user_text_turn(c))
        .find_map(|c| texts_of(c).flat_map(scenario_tags).last())
        .map(str::to_string)
}

/// The working directory named in the CLI's session context.
fn find_workdir(body: &Value) -> Option<String> {
    let mut texts: Vec<&str> = Vec::new();
    if let Some(system) = body.get("systemInstruction") {
        texts.extend(texts_of(system));
    }
    for content in body
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        texts.extend(texts_of(content));
    }
    // Gemini CLI 0.61 writes "- **Workspace Directories:**\n  - /path" in its session context.
    let labels = [
        "Workspace Directories:",
        "working in the directory:",
        "Working directory:",
        "Current directory:",
    ];
    texts.iter().find_map(|text| {
        labels.iter().find_map(|label| {
            let at = text.find(label)?;
            let rest = text[at + label.len()..]
                .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '-' | '`'));
            let word: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '`')
                .collect();
            word.starts_with('/').then_some(word)
        })
    })
}

fn substitute(value: &Value, workdir: &str, port: u16) -> Value {
    match value {
        Value::String(s) => Value::String(
            s.replace("{{workdir}}", workdir)
                .replace("{{port}}", &port.to_string()),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| substitute(v, workdir, port)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), substitute(v, workdir, port)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A JSON object synthesised from the side call's response schema, with sensible values for the
/// CLI's known side calls (router, next-speaker check).
fn side_answer(config: &Value) -> Value {
    let schema = config
        .get("responseJsonSchema")
        .or_else(|| config.get("responseSchema"))
        .unwrap_or(&Value::Null);
    let mut answer = synth(schema);
    if let Value::Object(map) = &mut answer {
        if map.contains_key("next_speaker") {
            map.insert("next_speaker".into(), json!("user"));
        }
        if map.contains_key("complexity_score") {
            map.insert("complexity_score".into(), json!(1));
        }
        if map.contains_key("model_choice") {
            map.insert("model_choice".into(), json!("flash"));
        }
    }
    answer
}

fn synth(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("object")
        .to_ascii_lowercase();
    match kind.as_str() {
        "object" => Value::Object(
            schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|props| props.iter().map(|(k, v)| (k.clone(), synth(v))).collect())
                .unwrap_or_default(),
        ),
        "array" => json!([]),
        "integer" | "number" => json!(0),
        "boolean" => json!(false),
        _ => json!("fake"),
    }
}

fn respond(
    shared: &Shared,
    reply: &Value,
    model: &str,
    stream: bool,
    out: &mut TcpStream,
) -> io::Result<bool> {
    if let Some(ms) = reply.get("delay_ms").and_then(Value::as_u64) {
        thread::sleep(Duration::from_millis(ms));
    }
    if reply.get("hang").and_then(Value::as_bool) == Some(true) {
        hang(shared, out);
        return Ok(false);
    }
    let headers = extra_headers(reply);
    if let Some(status) = reply.get("error").and_then(Value::as_u64) {
        let status = u16::try_from(status).unwrap_or(500);
        let (default_status, default_message) = default_error(status, model);
        let message = reply
            .get("error_message")
            .and_then(Value::as_str)
            .unwrap_or(&default_message);
        let google_status = reply
            .get("error_status")
            .and_then(Value::as_str)
            .unwrap_or(default_status);
        let details = reply
            .get("error_details")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let error = google_error(status, google_status, message, &details);
        send_json(out, status, &error, &headers)?;
        return Ok(true);
    }
    if let Some(raw) = reply.get("raw_stream").and_then(Value::as_array) {
        start_sse(out, &headers)?;
        for payload in raw.iter().filter_map(Value::as_str) {
            out.write_all(payload.as_bytes())?;
            out.flush()?;
        }
        return Ok(false);
    }
    let parts = reply_parts(reply);
    let finish = reply
        .get("finish_reason")
        .and_then(Value::as_str)
        .unwrap_or("STOP");
    if !stream {
        let whole = response(parts, model, Some(finish), Some(usage(reply)));
        send_json(out, 200, &whole, &headers)?;
        return Ok(true);
    }
    start_sse(out, &headers)?;
    let count = parts.len();
    for (i, part) in parts.into_iter().enumerate() {
        let last = i + 1 == count;
        let chunk = response(
            vec![part],
            model,
            last.then_some(finish),
            last.then(|| usage(reply)),
        );
        out.write_all(format!("data: {chunk}\r\n\r\n").as_bytes())?;
        out.flush()?;
    }
    Ok(false)
}

fn hang(shared: &Shared, out: &mut TcpStream) {
    let deadline = Instant::now() + HANG_LIMIT;
    let _ = out.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 512];
    while Instant::now() < deadline && !shared.stopping.load(Ordering::SeqCst) {
        match out.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn reply_parts(reply: &Value) -> Vec<Value> {
    let mut parts = Vec::new();
    if let Some(text) = reply.get("text").and_then(Value::as_str) {
        parts.push(json!({"text": text}));
    }
    for call in reply
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        parts.push(json!({"functionCall": {
            "name": call.get("name").cloned().unwrap_or(json!("unknown")),
            "args": call.get("arguments").cloned().unwrap_or(json!({})),
        }}));
    }
    if parts.is_empty() {
        parts.push(json!({"text": ""}));
    }
    parts
}

fn usage(reply: &Value) -> Value {
    let u = reply.get("usage").unwrap_or(&Value::Null);
    let get = |k: &str, d: u64| u.get(k).and_then(Value::as_u64).unwrap_or(d);
    let (prompt, candidates) = (get("prompt", 100), get("candidates", 20));
    let (cached, thoughts) = (get("cached", 0), get("thoughts", 0));
    json!({
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "cachedContentTokenCount": cached,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": prompt + candidates + thoughts,
    })
}

fn response(parts: Vec<Value>, model: &str, finish: Option<&str>, usage: Option<Value>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    let mut body =
        json!({"candidates": [candidate], "modelVersion": model, "responseId": "fake-gemini"});
    if let Some(usage) = usage {
        body["usageMetadata"] = usage;
    }
    body
}

/// Google's status name and message per HTTP status, as the real API words them.
fn default_error(status: u16, model: &str) -> (&'static str, String) {
    match status {
        400 => ("INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.".into()),
        401 => ("UNAUTHENTICATED", "Request had invalid authentication credentials.".into()),
        403 => ("PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.".into()),
        404 => ("NOT_FOUND", format!("models/{model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.")),
        429 => ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).".into()),
        500 => ("INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting".into()),
        503 => ("UNAVAILABLE", "The model is overloaded. Please try again later.".into()),
        _ => ("UNKNOWN", format!("error {status}")),
    }
}

fn google_error(code: u16, status: &str, message: &str, details: &[Value]) -> Value {
    let mut error = json!({"code": code, "message": message, "status": status});
    if !details.is_empty() {
        error["details"] = Value::Array(details.to_vec());
    }
    json!({ "error": error })
}

fn extra_headers(reply: &Value) -> Vec<(String, String)> {
    reply
        .get("headers")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn send_json(
    out: &mut TcpStream,
    status: u16,
    body: &Value,
    headers: &[(String, String)],
) -> io::Result<()> {
    let data = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json; charset=UTF-8\r\ncontent-length: {}\r\n",
        reason(status),
        data.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(data.as_bytes())?;
    out.flush()
}

/// An SSE reply ends when the connection closes (no length), as the real API's does.
fn start_sse(out: &mut TcpStream, headers: &[(String, String)]) -> io::Result<()> {
    let mut head =
        String::from("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.flush()
}

#[cfg(test)]
mod tests;
