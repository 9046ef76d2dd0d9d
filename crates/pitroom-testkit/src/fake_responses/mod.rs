//! Scripted fake OpenAI **Responses API** server (what `codex exec` talks to), for tests.
//!
//! Scripted in the style of [`crate::fake_openai`]: scenarios chosen by a `scenario:NAME` marker in the prompt,
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
//! - `tool_search: "query"`: a call of the tool search the request offers (Codex's
//!   `tool_search` tool, which loads deferred MCP tools for the next request)
//! - `tool_calls: [{"name", "arguments": {…}, "namespace"?}]`: function calls; a tool that a
//!   `tool_search` loaded is called in its namespace (`mcp__<server>`) unless one is given
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
use std::sync::Mutex;
use std::time::Duration;

use pitroom_script::content_text;
use serde_json::{json, Map, Value};

mod items;
#[cfg(test)]
mod tests;

use crate::http::{self, json_reply, lock, Chunk, Reply, Request, StreamEnd};
use crate::script::{self, error_reply, ScriptState, Scripted};

/// A running fake Responses API server; dropping it stops the server.
#[derive(Debug)]
pub struct FakeResponses {
    server: Scripted,
}

impl FakeResponses {
    /// Starts the server on 127.0.0.1 with an OS-chosen port, serving `script`.
    pub fn start(script: Value) -> io::Result<FakeResponses> {
        let server = Scripted::start("fake-responses", script, handle)?;
        Ok(FakeResponses { server })
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
        self.server.requests()
    }

    /// Only the model requests (`POST …/responses`).
    pub fn model_requests(&self) -> Vec<Value> {
        self.server.requests_of_kind("responses")
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
        .find_map(|t| script::scenario_tag(t).map(str::to_string))
        .unwrap_or_else(|| script::default_scenario(script));
    let step = step_index(&input);
    let reply = lock(state).pick_logged(script, &scenario, step, "responses", &mut entry);
    let workdir = input.iter().rev().find_map(cwd_of).unwrap_or_default();
    let reply = script::fill_placeholders(reply, &workdir, port);
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
                | "tool_search_call"
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
        let status = script::status_of(status);
        let default = json!({"error": {
            "message": default_error_message(status),
            "type": default_error_type(status),
            "code": default_error_type(status),
        }});
        return error_reply(status, r, default);
    }
    if let Some(reply) = script::raw_reply(r) {
        return reply;
    }
    let delay = script::millis(r.get("delay_ms")).unwrap_or_default();
    let id = format!("resp_{}", http::random_hex(12));
    let mut events = vec![sse(
        delay,
        &json!({"type": "response.created", "response": {"id": id, "object": "response", "status": "in_progress"}}),
    )];
    if r.get("drop").is_some_and(script::truthy) {
        return Reply::stream(events, StreamEnd::Close);
    }
    if r.get("hang").is_some_and(script::truthy) {
        return Reply::stream(events, StreamEnd::Hang(script::hang_limit(r)));
    }
    if let Some(error) = r.get("failed") {
        events.push(sse(
            delay,
            &json!({"type": "response.failed", "response": {"id": id, "status": "failed", "error": error}}),
        ));
        return Reply::stream(events, StreamEnd::Close);
    }
    for (i, item) in items::output_items(r, body).into_iter().enumerate() {
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

/// An event of the stream, named by its `type`.
fn sse(delay: Duration, event: &Value) -> Chunk {
    let kind = event["type"].as_str().unwrap_or("message");
    Chunk::sse(delay, kind, event)
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
