//! The scripted model server of `pitroom demo --worker <cli>`: an OpenAI-compatible
//! chat-completions endpoint and an Anthropic Messages endpoint on 127.0.0.1 (a port the system
//! picks), inside the demo's own process, that the real worker CLI is pointed at. It is not a model: each reply is the demo's
//! script for the stage the request belongs to, told by the stage's task in the request's user
//! messages, and for the step within it, told by the assistant turns since that message.
//!
//! The steps are tool calls named after the tools the request offers (OpenCode and Kilo's
//! `read`/`edit` with `filePath`, Qwen Code's `read_file`/`edit` with `file_path`, Claude Code's
//! `Read`/`Edit`), so the CLI
//! reads and edits the sample project through its own tools, then the stage's answer, the same
//! text the built-in scripted worker gives. Requests that offer no tools (titles, summaries)
//! get a short title.
//!
//! It runs axum on a tokio runtime of its own, on its own thread; dropping the server stops it.

use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use pitroom_script::step_index;
use pitroom_workers::content_text;
use serde_json::{json, Value};

use super::scripts::{self, CREW_TASKS, DOCSTRING, ZERO_CHECK};

/// The model id the CLIs are configured with and ask for.
pub(super) const MODEL_ID: &str = "scripted";
/// The reply to requests without tools: OpenCode asks for a session title that way.
const TITLE: &str = "pitroom demo (scripted model)";

/// A running scripted model server.
pub(super) struct ModelServer {
    port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ModelServer {
    /// Binds 127.0.0.1 on a free port and serves on a thread of its own.
    pub(super) fn start() -> Result<ModelServer, String> {
        let fail = |e: std::io::Error| format!("could not start the scripted model server: {e}");
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(fail)?;
        listener.set_nonblocking(true).map_err(fail)?;
        let port = listener.local_addr().map_err(fail)?.port();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(fail)?;
        let listener = {
            let _context = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(fail)?
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .fallback(not_found);
        let thread = std::thread::Builder::new()
            .name("demo-model-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stopped => {}
                    }
                });
            })
            .map_err(fail)?;
        Ok(ModelServer {
            port,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The OpenAI-style base URL (`…/v1`) the CLIs are given.
    pub(super) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The Anthropic-style base URL (the client adds `/v1/messages`).
    pub(super) fn anthropic_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn chat(body: Bytes) -> Response {
    let not_json = json!({"error": {"message": "the request body is not JSON",
        "type": "invalid_request_error"}});
    answer(&body, not_json, Reply::sse, Reply::completion)
}

/// Anthropic Messages: the same script, in Anthropic's shapes.
async fn messages(body: Bytes) -> Response {
    let not_json = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "the request body is not JSON"}});
    answer(
        &body,
        not_json,
        Reply::anthropic_sse,
        Reply::anthropic_message,
    )
}

/// The reply to one request body, in one API's shapes: `stream` (server-sent events) when the
/// request asks to stream, else `whole` (one JSON body); `not_json` (400) for a body that is
/// not JSON.
fn answer(
    body: &[u8],
    not_json: Value,
    stream: fn(&Reply) -> String,
    whole: fn(&Reply) -> Value,
) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return (StatusCode::BAD_REQUEST, Json(not_json)).into_response();
    };
    let reply = Reply::new(&request, turn_for(&request), body.len());
    if request["stream"].as_bool() == Some(true) {
        (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            stream(&reply),
        )
            .into_response()
    } else {
        Json(whole(&reply)).into_response()
    }
}

async fn count_tokens(body: Bytes) -> Json<Value> {
    Json(json!({"input_tokens": body.len() / 4}))
}

async fn models() -> Json<Value> {
    Json(json!({"object": "list", "data": [
        {"id": MODEL_ID, "object": "model", "owned_by": "pitroom-demo-scripted"}
    ]}))
}

async fn not_found() -> Response {
    let error = json!({"error": {"message": "pitroom demo's scripted model server serves only /v1/chat/completions and /v1/models",
        "type": "invalid_request_error"}});
    (StatusCode::NOT_FOUND, Json(error)).into_response()
}

// ------------------------------------------------------------------------- the script

/// What the scripted model does in one turn.
#[derive(Debug, Clone, PartialEq)]
enum Turn {
    /// Tool calls: `(tool name, arguments)`.
    Calls(Vec<(String, Value)>),
    /// The final answer.
    Answer(String),
}

/// The demo stage a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    Read,
    FollowUp,
    Isolate,
    Review,
    Write,
    Crew(usize),
}

/// The reply to one chat request.
fn turn_for(request: &Value) -> Turn {
    let messages = request["messages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let offered = request["tools"].as_array().map_or(&[][..], Vec::as_slice);
    if offered.is_empty() {
        return Turn::Answer(TITLE.into());
    }
    let Some(stage) = stage_of(messages) else {
        return Turn::Answer(
            "SUMMARY: this is pitroom demo's scripted model, not a model: it answers the demo's tasks only.\nFILES CHANGED: none"
                .into(),
        );
    };
    let tools = Tools {
        offered,
        workdir: workdir_of(request),
    };
    let calc = "calc.py";
    let both = ["calc.py", "test_calc.py"];
    let plan = match stage {
        Stage::Read => vec![
            tools.read(&both),
            Some(Turn::Answer(scripts::read_answer())),
        ],
        Stage::FollowUp => vec![Some(Turn::Answer(scripts::follow_up_answer()))],
        Stage::Isolate => vec![
            tools.read(&[calc]),
            tools.edit(calc, ZERO_CHECK),
            Some(Turn::Answer(scripts::isolate_answer())),
        ],
        Stage::Review => vec![
            tools.read(&both),
            Some(Turn::Answer(scripts::review_answer())),
        ],
        Stage::Write => vec![
            tools.read(&[calc]),
            tools.edit(calc, DOCSTRING),
            Some(Turn::Answer(scripts::write_answer())),
        ],
        Stage::Crew(n) => {
            let answer = scripts::crew_answers()
                .into_iter()
                .nth(n)
                .unwrap_or_default();
            vec![tools.read(&[calc]), Some(Turn::Answer(answer))]
        }
    };
    // A tool the CLI does not offer is skipped; past the end, the answer is repeated.
    let plan: Vec<Turn> = plan.into_iter().flatten().collect();
    let step = step_index(messages);
    plan.get(step)
        .or(plan.last())
        .cloned()
        .unwrap_or_else(|| Turn::Answer(TITLE.into()))
}

fn role(message: &Value) -> Option<&str> {
    message["role"].as_str()
}

/// A message's text: a string, or the text of its parts.
fn text_of(message: &Value) -> String {
    content_text(&message["content"])
}

/// The stage named by the latest user message that names one. The review comes first: its
/// package quotes the reviewed run's task.
fn stage_of(messages: &[Value]) -> Option<Stage> {
    let marks = [
        (scripts::REVIEW_MARK, Stage::Review),
        (scripts::FOLLOW_UP_TASK, Stage::FollowUp),
        (scripts::READ_TASK, Stage::Read),
        (scripts::ISOLATE_TASK, Stage::Isolate),
        (scripts::WRITE_TASK, Stage::Write),
    ];
    let crew = CREW_TASKS
        .iter()
        .enumerate()
        .map(|(n, (_, key))| (*key, Stage::Crew(n)));
    let marks: Vec<(&str, Stage)> = marks.into_iter().chain(crew).collect();
    messages
        .iter()
        .rev()
        .filter(|m| role(m) == Some("user"))
        .find_map(|m| {
            let text = text_of(m);
            marks
                .iter()
                .find(|(mark, _)| text.contains(mark))
                .map(|(_, stage)| *stage)
        })
}

/// The directory the CLI works in, as its prompt states it: OpenCode's system prompt says
/// `Working directory: …`, Kilo's user message `Current working directory: …`, Qwen Code's
/// `I'm currently working in the directory: …`, Claude Code's `Primary working directory: …`.
fn workdir_of(request: &Value) -> Option<String> {
    let labels = [
        "Primary working directory:",
        "Working directory:",
        "Current working directory:",
        "working in the directory:",
    ];
    let messages = request["messages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    // Anthropic's system prompt is a field of its own.
    let top = std::iter::once(content_text(&request["system"]));
    let system = messages
        .iter()
        .filter(|m| role(m) == Some("system"))
        .map(text_of);
    let users = messages
        .iter()
        .rev()
        .filter(|m| role(m) == Some("user"))
        .map(text_of);
    top.chain(system).chain(users).find_map(|text| {
        labels.iter().find_map(|label| {
            let at = text.find(label)? + label.len();
            let word = text[at..].split_whitespace().next()?;
            word.starts_with('/').then(|| word.to_string())
        })
    })
}

/// The tools a request offers, and where the files are.
struct Tools<'a> {
    offered: &'a [Value],
    workdir: Option<String>,
}

impl Tools<'_> {
    /// The first offered tool of these names, with its parameter names (OpenAI's
    /// `function.parameters` or Anthropic's `input_schema`).
    fn find(&self, names: &[&str]) -> Option<(String, Vec<String>)> {
        names.iter().find_map(|name| {
            let tool = self.offered.iter().find(|t| {
                t["function"]["name"].as_str() == Some(name) || t["name"].as_str() == Some(name)
            })?;
            let schema = match tool.get("input_schema") {
                Some(schema) => schema,
                None => &tool["function"]["parameters"],
            };
            let params = schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            Some(((*name).to_string(), params))
        })
    }

    /// A file's path as the tools want it: absolute when the working directory is known.
    fn path(&self, file: &str) -> String {
        match &self.workdir {
            Some(dir) => format!("{}/{file}", dir.trim_end_matches('/')),
            None => file.to_string(),
        }
    }

    fn read(&self, files: &[&str]) -> Option<Turn> {
        let (name, params) = self.find(&["read", "read_file", "Read"])?;
        let key = pick(&params, &["filePath", "file_path", "absolute_path", "path"]);
        let calls = files
            .iter()
            .map(|f| (name.clone(), json!({ key: self.path(f) })))
            .collect();
        Some(Turn::Calls(calls))
    }

    fn edit(&self, file: &str, (old, new): (&str, &str)) -> Option<Turn> {
        let (name, params) = self.find(&["edit", "replace", "Edit"])?;
        let path = pick(&params, &["filePath", "file_path", "path"]);
        let old_key = pick(&params, &["oldString", "old_string"]);
        let new_key = pick(&params, &["newString", "new_string"]);
        let args = json!({ path: self.path(file), old_key: old, new_key: new });
        Some(Turn::Calls(vec![(name, args)]))
    }
}

/// The first of `candidates` among a tool's parameters, else the first candidate.
fn pick<'c>(params: &[String], candidates: &[&'c str]) -> &'c str {
    candidates
        .iter()
        .find(|c| params.iter().any(|p| p == *c))
        .or(candidates.first())
        .copied()
        .unwrap_or("path")
}

// -------------------------------------------------------------------------- the wire

/// Numbers the replies, for unique completion and tool call ids.
static REPLIES: AtomicU64 = AtomicU64::new(0);

/// One reply, in OpenAI's chat-completions shapes.
struct Reply {
    id: String,
    model: Value,
    turn: Turn,
    /// Scripted token counts: about a token per four bytes of request and of reply.
    prompt_tokens: u64,
    completion_tokens: u64,
}

impl Reply {
    fn new(request: &Value, turn: Turn, request_bytes: usize) -> Reply {
        let n = REPLIES.fetch_add(1, Ordering::Relaxed);
        let reply_bytes = match &turn {
            Turn::Answer(text) => text.len(),
            Turn::Calls(calls) => calls.iter().map(|(_, a)| a.to_string().len() + 16).sum(),
        };
        let tokens = |bytes: usize| u64::try_from(bytes / 4).unwrap_or(u64::MAX);
        Reply {
            id: format!("chatcmpl-pitroom-demo-{n}"),
            model: request
                .get("model")
                .cloned()
                .unwrap_or_else(|| json!(MODEL_ID)),
            turn,
            prompt_tokens: tokens(request_bytes),
            completion_tokens: tokens(reply_bytes) + 1,
        }
    }

    fn finish_reason(&self) -> &'static str {
        match self.turn {
            Turn::Calls(_) => "tool_calls",
            Turn::Answer(_) => "stop",
        }
    }

    fn calls(&self) -> Vec<Value> {
        let Turn::Calls(calls) = &self.turn else {
            return Vec::new();
        };
        calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"index": i, "id": format!("call_{}_{i}", self.id), "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect()
    }

    fn usage(&self) -> Value {
        json!({"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens})
    }

    /// The non-streamed `chat.completion` body.
    fn completion(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": Value::Null});
        match &self.turn {
            Turn::Answer(text) => message["content"] = json!(text),
            Turn::Calls(_) => message["tool_calls"] = json!(self.calls()),
        }
        json!({"id": self.id, "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason()}],
            "usage": self.usage()})
    }

    /// Anthropic's whole message: text, or `tool_use` blocks.
    fn anthropic_message(&self) -> Value {
        let content: Vec<Value> = match &self.turn {
            Turn::Answer(text) => vec![json!({"type": "text", "text": text})],
            Turn::Calls(calls) => calls
                .iter()
                .enumerate()
                .map(|(i, (name, input))| {
                    json!({"type": "tool_use", "id": format!("toolu_{}_{i}", self.id),
                        "name": name, "input": input})
                })
                .collect(),
        };
        let stop = match self.turn {
            Turn::Calls(_) => "tool_use",
            Turn::Answer(_) => "end_turn",
        };
        json!({"id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": self.prompt_tokens, "output_tokens": self.completion_tokens,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
    }

    /// Anthropic's stream: `message_start`, each block as start, delta and stop, then
    /// `message_delta` with the stop reason and `message_stop`.
    fn anthropic_sse(&self) -> String {
        let whole = self.anthropic_message();
        let mut start = whole.clone();
        start["content"] = json!([]);
        start["stop_reason"] = Value::Null;
        let mut events = vec![
            (
                "message_start",
                json!({"type": "message_start", "message": start}),
            ),
            ("ping", json!({"type": "ping"})),
        ];
        let blocks = whole["content"].as_array().map_or(&[][..], Vec::as_slice);
        for (index, block) in blocks.iter().enumerate() {
            let (empty, delta) = if block["type"] == "tool_use" {
                (
                    json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                    json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
                )
            } else {
                (
                    json!({"type": "text", "text": ""}),
                    json!({"type": "text_delta", "text": block["text"]}),
                )
            };
            events.extend([
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": empty}),
                ),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ),
                (
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": index}),
                ),
            ]);
        }
        events.extend([
            (
                "message_delta",
                json!({"type": "message_delta",
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": null},
                "usage": {"output_tokens": self.completion_tokens}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);
        events
            .iter()
            .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
            .collect()
    }

    fn chunk(&self, delta: Value, finish_reason: Value) -> Value {
        json!({"id": self.id, "object": "chat.completion.chunk", "created": 0, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
    }

    /// The streamed reply: server-sent events, ending with `[DONE]`. A tool call comes as its
    /// name, then its arguments, as OpenAI streams them.
    fn sse(&self) -> String {
        let mut events = vec![self.chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
        if let Turn::Answer(text) = &self.turn {
            for line in text.split_inclusive('\n') {
                events.push(self.chunk(json!({"content": line}), Value::Null));
            }
        }
        for call in self.calls() {
            let head = json!({"index": call["index"], "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}});
            let args = json!({"index": call["index"],
                "function": {"arguments": call["function"]["arguments"]}});
            events.push(self.chunk(json!({"tool_calls": [head]}), Value::Null));
            events.push(self.chunk(json!({"tool_calls": [args]}), Value::Null));
        }
        events.push(self.chunk(json!({}), json!(self.finish_reason())));
        events.push(
            json!({"id": self.id, "object": "chat.completion.chunk", "created": 0,
            "model": self.model, "choices": [], "usage": self.usage()}),
        );
        let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        body.push_str("data: [DONE]\n\n");
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, params: &[&str]) -> Value {
        let props: serde_json::Map<String, Value> = params
            .iter()
            .map(|p| ((*p).to_string(), json!({"type": "string"})))
            .collect();
        json!({"type": "function", "function": {"name": name,
            "parameters": {"type": "object", "properties": props}}})
    }

    fn opencode_tools() -> Value {
        json!([
            tool("read", &["filePath", "offset", "limit"]),
            tool(
                "edit",
                &["filePath", "oldString", "newString", "replaceAll"]
            ),
        ])
    }

    fn request(messages: Value, tools: Value) -> Value {
        json!({"model": MODEL_ID, "stream": true, "messages": messages, "tools": tools})
    }

    #[test]
    fn an_isolated_edit_is_read_then_edit_then_answer_in_the_cli_s_own_tools() {
        let system =
            json!({"role": "system", "content": "Working directory: /w/copy\nPlatform: linux"});
        let user = json!({"role": "user", "content": [{"type": "text", "text": format!("Brief…\n{}", scripts::ISOLATE_TASK)}]});
        let assistant = json!({"role": "assistant", "content": null});
        let tool_result = json!({"role": "tool", "content": "…"});
        let mut messages = vec![system, user];
        let first = turn_for(&request(json!(messages), opencode_tools()));
        assert_eq!(
            first,
            Turn::Calls(vec![(
                "read".into(),
                json!({"filePath": "/w/copy/calc.py"})
            )])
        );
        messages.extend([assistant.clone(), tool_result.clone()]);
        let Turn::Calls(calls) = turn_for(&request(json!(messages), opencode_tools())) else {
            panic!("an edit");
        };
        assert_eq!(calls[0].0, "edit");
        assert_eq!(calls[0].1["oldString"], ZERO_CHECK.0);
        assert_eq!(calls[0].1["newString"], ZERO_CHECK.1);
        messages.extend([assistant, tool_result]);
        assert_eq!(
            turn_for(&request(json!(messages), opencode_tools())),
            Turn::Answer(scripts::isolate_answer())
        );
    }

    #[test]
    fn qwen_s_tool_names_and_parameters_are_used_and_the_review_wins_over_the_task_it_quotes() {
        let tools = json!([
            tool("read_file", &["absolute_path", "offset"]),
            tool("edit", &["file_path", "old_string", "new_string"]),
        ]);
        let env =
            json!({"role": "user", "content": "I'm currently working in the directory: /p/calc"});
        let review = json!({"role": "user", "content": format!("{} run x. The brief: {}", scripts::REVIEW_MARK, scripts::ISOLATE_TASK)});
        let turn = turn_for(&request(json!([env, review]), tools));
        assert_eq!(
            turn,
            Turn::Calls(vec![
                (
                    "read_file".into(),
                    json!({"absolute_path": "/p/calc/calc.py"})
                ),
                (
                    "read_file".into(),
                    json!({"absolute_path": "/p/calc/test_calc.py"})
                ),
            ])
        );
    }

    #[test]
    fn a_follow_up_is_answered_at_once_and_requests_without_tools_get_a_title() {
        let messages = json!([
            {"role": "user", "content": scripts::READ_TASK},
            {"role": "assistant", "content": "…"},
            {"role": "user", "content": scripts::FOLLOW_UP_TASK},
        ]);
        assert_eq!(
            turn_for(&request(messages.clone(), opencode_tools())),
            Turn::Answer(scripts::follow_up_answer())
        );
        assert_eq!(
            turn_for(&request(messages, json!([]))),
            Turn::Answer(TITLE.into())
        );
    }

    #[test]
    fn the_stream_carries_the_tool_call_arguments_as_a_json_string_and_ends_with_done() {
        let req = request(json!([]), json!([]));
        let turn = Turn::Calls(vec![("read".into(), json!({"filePath": "calc.py"}))]);
        let sse = Reply::new(&req, turn, 400).sse();
        assert!(sse.ends_with("data: [DONE]\n\n"), "{sse}");
        let events: Vec<Value> = sse
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str(e).expect("each event is JSON"))
            .collect();
        let args = events
            .iter()
            .find_map(|e| {
                e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .filter(|a| !a.is_empty())
            })
            .expect("the arguments");
        assert_eq!(args, r#"{"filePath":"calc.py"}"#);
        assert!(events
            .iter()
            .any(|e| e["choices"][0]["finish_reason"] == "tool_calls"));
        assert_eq!(
            events.last().map(|e| &e["usage"]["prompt_tokens"]),
            Some(&json!(100))
        );
    }

    #[test]
    fn claude_s_tools_and_tool_results_keep_the_step_and_the_stream_is_anthropic_s() {
        let tools = json!([
            {"name": "Read", "input_schema": {"properties": {"file_path": {}, "offset": {}}}},
            {"name": "Edit", "input_schema": {"properties": {"file_path": {}, "old_string": {}, "new_string": {}}}},
        ]);
        let system = json!([{"type": "text", "text": "Primary working directory: /c/copy\n"}]);
        let messages = json!([
            {"role": "user", "content": [{"type": "text", "text": scripts::WRITE_TASK}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "…"}]},
        ]);
        let req = json!({"model": MODEL_ID, "stream": true, "system": system,
            "messages": messages, "tools": tools});
        let turn = turn_for(&req);
        let Turn::Calls(calls) = &turn else {
            panic!("an edit: {turn:?}");
        };
        assert_eq!(calls[0].0, "Edit");
        assert_eq!(calls[0].1["file_path"], "/c/copy/calc.py");
        assert_eq!(calls[0].1["old_string"], DOCSTRING.0);
        let sse = Reply::new(&req, turn, 40).anthropic_sse();
        let kinds: Vec<&str> = sse
            .lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .collect();
        assert_eq!(
            kinds,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert!(sse.contains(r#""stop_reason":"tool_use""#), "{sse}");
        assert!(sse.contains(r#""type":"input_json_delta""#), "{sse}");
    }
}
