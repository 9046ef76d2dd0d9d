//! Scripted fake **Anthropic Messages API** server (what Claude Code talks to), for tests.
//!
//! Scripted in the style of [`crate::fake_openai`]. It listens on 127.0.0.1 only.
//!
//! # Routes
//! - `POST /v1/messages` (with or without `?beta=true`): the scripted reply, streamed as SSE
//!   (`message_start`, `content_block_*`, `message_delta`, `message_stop`) when the request says
//!   `"stream": true`, else one JSON message (Claude Code retries a failed stream without
//!   streaming).
//! - `POST /v1/messages/count_tokens`: `{"input_tokens": 123}`.
//! - Anything else: 404 with an Anthropic-style error body.
//!
//! # Script
//! ```text
//! {"aux": {"text": "…"}, "default_scenario": "default", "scenarios": {"default": [STEP, …]}}
//! ```
//! **Scenario**: the user messages, latest first, are searched for `scenario:NAME`; else
//! `default_scenario` (else `default`). Requests that offer no tools get the `aux` reply (a plain
//! `ok` by default) and consume no step.
//!
//! **Step**: the number of assistant messages after the last user message that carries the
//! prompt (user messages holding tool results do not count), so a follow-up starts at step 0.
//! Past the end the last step is reused. A STEP is a reply object or a list of them served one
//! after the other on repeated hits (retries), the last one repeating.
//!
//! Reply fields (all optional):
//! - `text`; `tool_calls: [{"name", "input": {…}}]` (after the text, `stop_reason: tool_use`)
//! - `usage: {input_tokens, output_tokens, cache_read_input_tokens,
//!   cache_creation_input_tokens}` (defaults 120 / 7 / 0 / 0)
//! - `error: STATUS` with `error_type`, `error_message` (or a whole `error_body`), `headers`
//! - `stream_error: {"type", "message"}`: `message_start`, then an SSE `error` event
//! - `raw: "…"`: a verbatim 200 body (`raw_content_type`, default `text/event-stream`)
//! - `drop: true` (the stream closes after `message_start`), `hang: true` (silence for `hang_s`
//!   seconds, default 600), `delay_ms` before every SSE event
//!
//! Strings may use `{{workdir}}` (Claude's "Primary working directory") and `{{port}}`.

use std::io;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::http::{self, json_reply, lock, Chunk, Reply, Request, StreamEnd};
use crate::script::{self, error_reply, ScriptState, Scripted};

/// A running fake Anthropic server; dropping it stops the server.
#[derive(Debug)]
pub struct FakeAnthropic {
    server: Scripted,
}

impl FakeAnthropic {
    /// Starts the server on 127.0.0.1 with an OS-chosen port, serving `script`.
    pub fn start(script: Value) -> io::Result<FakeAnthropic> {
        let server = Scripted::start("fake-anthropic", script, handle)?;
        Ok(FakeAnthropic { server })
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The value for `ANTHROPIC_BASE_URL`: `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port())
    }

    /// Every request so far: `{"method", "path", "headers", "body", "kind": "messages" | "aux" |
    /// "other", "scenario", "step", "hit"}`.
    pub fn requests(&self) -> Vec<Value> {
        self.server.requests()
    }

    /// Only the scripted model requests (`"kind": "messages"`).
    pub fn model_requests(&self) -> Vec<Value> {
        self.server.requests_of_kind("messages")
    }
}

fn handle(script: &Value, state: &Mutex<ScriptState>, req: &Request, port: u16) -> (Reply, Value) {
    let body = req.json_body();
    let mut entry = req.log_entry(&body);
    let path = req.path_only().trim_end_matches('/');
    if req.method == "POST" && path.ends_with("/v1/messages/count_tokens") {
        return (json_reply(200, &json!({"input_tokens": 123})), entry);
    }
    if req.method != "POST" || !path.ends_with("/v1/messages") {
        let body = error_body(
            "not_found_error",
            &format!("fake-anthropic: no route {path}"),
        );
        return (json_reply(404, &body), entry);
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let workdir = workdir_in(&body).unwrap_or_default();
    let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let (reply, scenario) = if offers_tools {
        let scenario = messages
            .iter()
            .rev()
            .filter(|m| m["role"] == "user")
            .find_map(|m| script::scenario_tag(&text_of(&m["content"])).map(str::to_string))
            .unwrap_or_else(|| script::default_scenario(script));
        let step = pitroom_script::step_index(&messages);
        let reply = lock(state).pick_logged(script, &scenario, step, "messages", &mut entry);
        (reply, scenario)
    } else {
        entry["kind"] = "aux".into();
        let aux = script["aux"].as_object().cloned().unwrap_or_else(|| {
            json!({"text": "ok"})
                .as_object()
                .cloned()
                .unwrap_or_default()
        });
        (aux, "aux".to_string())
    };
    let reply = script::fill_placeholders(reply, &workdir, port);
    let model = body["model"].as_str().unwrap_or("claude-fake").to_string();
    let streaming = body["stream"].as_bool().unwrap_or(false);
    (answer(&reply, &model, streaming, &scenario), entry)
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The text blocks of a message's content (a string, or blocks of which only `text` count).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// "Primary working directory: /path" from the system prompt or a message.
fn workdir_in(body: &Value) -> Option<String> {
    let mut texts = vec![text_of(&body["system"])];
    if let Some(s) = body["system"].as_str() {
        texts.push(s.to_string());
    }
    texts.extend(
        body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| text_of(&m["content"])),
    );
    texts.iter().find_map(|t| {
        let start = t.find("Primary working directory:")? + "Primary working directory:".len();
        t[start..].split_whitespace().next().map(str::to_string)
    })
}

fn answer(r: &Map<String, Value>, model: &str, streaming: bool, scenario: &str) -> Reply {
    if r.is_empty() {
        let text = format!("fake-anthropic: unknown scenario {scenario}");
        return answer(
            json!({ "text": text }).as_object().unwrap_or(&Map::new()),
            model,
            streaming,
            scenario,
        );
    }
    if let Some(status) = r.get("error") {
        let status = script::status_of(status);
        let kind = r
            .get("error_type")
            .and_then(Value::as_str)
            .unwrap_or_else(|| default_error_type(status));
        let default_message = default_error_message(status, model);
        let message = r
            .get("error_message")
            .and_then(Value::as_str)
            .unwrap_or(&default_message);
        return error_reply(status, r, error_body(kind, message));
    }
    if let Some(reply) = script::raw_reply(r) {
        return reply;
    }
    let message = Message::from_script(r, model);
    if !streaming {
        // The non-streaming fallback of a failed stream: a scripted stream error becomes a 529.
        if r.contains_key("stream_error") {
            return json_reply(529, &error_body("overloaded_error", "Overloaded"));
        }
        return json_reply(200, &message.whole());
    }
    let delay = script::millis(r.get("delay_ms")).unwrap_or_default();
    let mut events = vec![Chunk::sse(
        delay,
        "message_start",
        &json!({"type": "message_start", "message": message.start()}),
    )];
    if let Some(error) = r.get("stream_error") {
        events.push(Chunk::sse(
            delay,
            "error",
            &json!({"type": "error", "error": error}),
        ));
        return Reply::stream(events, StreamEnd::Close);
    }
    if r.get("drop").is_some_and(script::truthy) {
        return Reply::stream(events, StreamEnd::Close);
    }
    if r.get("hang").is_some_and(script::truthy) {
        return Reply::stream(events, StreamEnd::Hang(script::hang_limit(r)));
    }
    events.push(Chunk::sse(delay, "ping", &json!({"type": "ping"})));
    for (index, block) in message.content.iter().enumerate() {
        events.extend(block_events(delay, index, block));
    }
    events.push(Chunk::sse(
        delay,
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": message.stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": message.usage["output_tokens"]}}),
    ));
    events.push(Chunk::sse(
        delay,
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    Reply::stream(events, StreamEnd::Close)
}

/// One scripted assistant message.
struct Message {
    id: String,
    model: String,
    content: Vec<Value>,
    stop_reason: &'static str,
    usage: Value,
}

impl Message {
    fn from_script(r: &Map<String, Value>, model: &str) -> Message {
        let mut content = Vec::new();
        if let Some(text) = r.get("text") {
            content.push(json!({"type": "text", "text": script::value_text(text)}));
        }
        for call in r
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let id = call["id"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("toolu_fake_{}", http::random_hex(16)));
            content.push(
                json!({"type": "tool_use", "id": id, "name": call["name"], "input": call["input"]}),
            );
        }
        let has_calls = content.iter().any(|b| b["type"] == "tool_use");
        let get = |key: &str, default: u64| {
            r.get("usage")
                .and_then(|u| u.get(key))
                .and_then(Value::as_u64)
                .unwrap_or(default)
        };
        Message {
            id: format!("msg_fake_{}", http::random_hex(16)),
            model: model.to_string(),
            content,
            stop_reason: if has_calls { "tool_use" } else { "end_turn" },
            usage: json!({
                "input_tokens": get("input_tokens", 120),
                "cache_creation_input_tokens": get("cache_creation_input_tokens", 0),
                "cache_read_input_tokens": get("cache_read_input_tokens", 0),
                "output_tokens": get("output_tokens", 7),
            }),
        }
    }

    /// The message as `message_start` carries it: no content yet, output tokens 1.
    fn start(&self) -> Value {
        let mut usage = self.usage.clone();
        usage["output_tokens"] = 1.into();
        json!({"id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage})
    }

    fn whole(&self) -> Value {
        json!({"id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": self.content, "stop_reason": self.stop_reason, "stop_sequence": null,
            "usage": self.usage})
    }
}

/// A content block as `content_block_start`, two deltas and `content_block_stop`.
fn block_events(delay: Duration, index: usize, block: &Value) -> Vec<Chunk> {
    let (start, halves, delta_kind, delta_field) = if block["type"] == "tool_use" {
        let start =
            json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}});
        (
            start,
            block["input"].to_string(),
            "input_json_delta",
            "partial_json",
        )
    } else {
        let text = block["text"].as_str().unwrap_or("").to_string();
        (
            json!({"type": "text", "text": ""}),
            text,
            "text_delta",
            "text",
        )
    };
    let mut split = halves.len() / 2;
    while !halves.is_char_boundary(split) {
        split -= 1;
    }
    let mut events = vec![Chunk::sse(
        delay,
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": start}),
    )];
    for part in [&halves[..split], &halves[split..]] {
        events.push(Chunk::sse(
            delay,
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": {"type": delta_kind, delta_field: part}}),
        ));
    }
    events.push(Chunk::sse(
        delay,
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
    events
}

fn default_error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

fn default_error_message(status: u16, model: &str) -> String {
    match status {
        401 => "invalid x-api-key".into(),
        404 => format!("model: {model}"),
        429 => {
            "This request would exceed your account's rate limit. Please try again later.".into()
        }
        529 => "Overloaded".into(),
        _ => "Internal server error".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(server: &FakeAnthropic, body: &Value) -> (u16, String) {
        let out = http::post_raw(server.port(), "/v1/messages?beta=true", "", body);
        (out[9..12].parse().unwrap(), out)
    }

    fn script() -> Value {
        json!({"scenarios": {
            "default": [
                {"text": "Let me look.", "tool_calls": [{"name": "Read", "input": {"file_path": "{{workdir}}/calc.py"}}]},
                {"text": "It is at calc.py:1"}
            ],
            "err429": [{"error": 429, "headers": {"retry-after": "0"}}],
            "overloaded": [{"stream_error": {"type": "overloaded_error", "message": "Overloaded"}}],
        }})
    }

    fn request(messages: Value, stream: bool) -> Value {
        json!({"model": "claude-x", "stream": stream, "tools": [{"name": "Read"}],
            "system": [{"type": "text", "text": "Primary working directory: /w/repo\n"}],
            "messages": messages})
    }

    #[test]
    fn a_tool_call_then_the_answer_streamed_with_the_workdir_filled_in() {
        let server = FakeAnthropic::start(script()).unwrap();
        let first = json!([{"role": "user", "content": [{"type": "text", "text": "where?"}]}]);
        let (status, out) = post(&server, &request(first, true));
        assert_eq!(status, 200);
        let input: String = out
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|e| e["delta"]["partial_json"].as_str().map(str::to_string))
            .collect();
        assert_eq!(input, r#"{"file_path":"/w/repo/calc.py"}"#, "{out}");
        assert!(out.contains(r#""stop_reason":"tool_use""#), "{out}");
        let second = json!([
            {"role": "user", "content": "where?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "1\tdef add"}]}
        ]);
        let (_, out) = post(&server, &request(second, false));
        let body: Value = serde_json::from_str(out.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["content"][0]["text"], "It is at calc.py:1");
        assert_eq!(body["stop_reason"], "end_turn");
    }

    #[test]
    fn errors_carry_the_anthropic_shape_and_headers() {
        let server = FakeAnthropic::start(script()).unwrap();
        let msgs = json!([{"role": "user", "content": "x scenario:err429"}]);
        let (status, out) = post(&server, &request(msgs, true));
        assert_eq!(status, 429);
        assert!(
            out.contains("rate_limit_error") && out.contains("retry-after: 0"),
            "{out}"
        );
    }

    #[test]
    fn a_stream_error_falls_back_to_a_529_without_streaming() {
        let server = FakeAnthropic::start(script()).unwrap();
        let msgs = json!([{"role": "user", "content": "x scenario:overloaded"}]);
        let (_, out) = post(&server, &request(msgs.clone(), true));
        assert!(out.contains("event: error"), "{out}");
        let (status, _) = post(&server, &request(msgs, false));
        assert_eq!(status, 529);
    }

    #[test]
    fn requests_without_tools_are_aux_and_take_no_step() {
        let server = FakeAnthropic::start(script()).unwrap();
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "title?"}]});
        let (status, out) = post(&server, &body);
        assert_eq!(status, 200);
        assert!(out.contains("\"ok\""), "{out}");
        assert!(server.model_requests().is_empty());
        assert_eq!(server.requests()[0]["kind"], "aux");
    }
}
