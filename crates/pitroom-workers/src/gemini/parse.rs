//! Gemini CLI's `-o stream-json` stream: `init`, `message` (the prompt once, then assistant
//! text in `delta` chunks), `tool_use`, `tool_result`, non-fatal `error` and a final `result`
//! with the run's token stats. Unknown types, non-JSON lines and a torn last line yield nothing.
//!
//! Assistant text arrives in chunks that must be joined without separators, so the parser holds
//! the chunks of one message and emits them as one text when the message ends (at the next
//! non-text event). A tool result names only its call id, so calls are remembered until then.

use std::collections::HashMap;

use serde_json::Value;

use crate::adapter::JsonEvents;
use crate::common::tool_calls::tool_call_event;
use crate::events::{session_started, ToolOutcome, Usage, WorkerEvent};
use crate::json::{str_at, u64_at};

/// Tools whose successful call edits the file named in `file_path`.
const EDIT_TOOLS: &[&str] = &["write_file", "replace", "edit"];

/// `tool_result.error.type` values that mean a rule refused the call, not the tool.
const DENIAL_TYPES: &[&str] = &["policy_violation", "tool_not_registered"];

/// Event types that end the assistant message being streamed; unknown types end nothing.
const ENDS_A_MESSAGE: &[&str] = &["init", "tool_use", "tool_result", "error", "result"];

#[derive(Debug, Default)]
struct State {
    /// Calls awaiting their results: id → (name, parameters).
    pending: HashMap<String, (String, Value)>,
    /// The assistant message being streamed.
    text: String,
    /// Messages so far, to name each one.
    messages: usize,
}

/// Parses one stream.
#[derive(Debug, Default)]
pub struct GeminiStream {
    state: State,
}

impl JsonEvents for GeminiStream {
    fn parse_event(&mut self, value: &Value) -> Vec<WorkerEvent> {
        let Some(kind) = value.get("type").and_then(Value::as_str) else {
            return Vec::new();
        };
        let state = &mut self.state;
        if kind == "message" {
            if str_at(value, &["role"]) == Some("assistant") {
                state
                    .text
                    .push_str(str_at(value, &["content"]).unwrap_or(""));
            }
            return Vec::new();
        }
        if !ENDS_A_MESSAGE.contains(&kind) {
            return Vec::new();
        }
        let mut events: Vec<WorkerEvent> = flush_text(state).into_iter().collect();
        match kind {
            "init" => {
                if let Some(id) = str_at(value, &["session_id"]) {
                    events.extend(session_started(id, str_at(value, &["model"])));
                }
            }
            "tool_use" => {
                if let (Some(id), Some(name)) =
                    (str_at(value, &["tool_id"]), str_at(value, &["tool_name"]))
                {
                    let params = value.get("parameters").cloned().unwrap_or(Value::Null);
                    state
                        .pending
                        .insert(id.to_string(), (name.to_string(), params));
                }
            }
            "tool_result" => events.push(tool_call(state, value)),
            "error" if str_at(value, &["severity"]) != Some("warning") => {
                events.push(error(str_at(value, &["message"]).unwrap_or("error")));
            }
            "result" => events.extend(result(value)),
            _ => {}
        }
        events
    }
}

fn flush_text(state: &mut State) -> Option<WorkerEvent> {
    if state.text.is_empty() {
        return None;
    }
    state.messages += 1;
    Some(WorkerEvent::Text {
        message: Some(format!("assistant-{}", state.messages)),
        text: std::mem::take(&mut state.text),
    })
}

fn tool_call(state: &mut State, value: &Value) -> WorkerEvent {
    let id = str_at(value, &["tool_id"]).unwrap_or("");
    let (name, params) = state
        .pending
        .remove(id)
        // The id is `<name>__<call id>` when the call itself was not seen.
        .unwrap_or_else(|| {
            let name = id.split("__").next().unwrap_or("unknown");
            (name.to_string(), Value::Null)
        });
    let failed = str_at(value, &["status"]) == Some("error");
    let error_type = str_at(value, &["error", "type"]).unwrap_or("");
    let message = str_at(value, &["error", "message"])
        .or_else(|| str_at(value, &["output"]))
        .unwrap_or("");
    let outcome = match failed {
        true if DENIAL_TYPES.contains(&error_type) => ToolOutcome::Denied,
        true => ToolOutcome::Failed,
        false => ToolOutcome::Ok,
    };
    tool_call_event(name, &params, outcome, message, EDIT_TOOLS)
}

/// The run's usage (from `stats`) and, on failure, its error.
fn result(value: &Value) -> Vec<WorkerEvent> {
    let mut events = Vec::new();
    if let Some(stats) = value.get("stats") {
        let usage = Usage {
            // `input` excludes cached tokens; `input_tokens` includes them.
            input: u64_at(stats, &["input"]),
            output: u64_at(stats, &["output_tokens"]),
            reasoning: 0,
            cache_read: u64_at(stats, &["cached"]),
            cache_write: 0,
        };
        if !usage.is_zero() {
            events.push(WorkerEvent::StepFinished {
                reason: Some("stop".into()),
                usage: Some(usage),
                cost: None,
            });
        }
    }
    if str_at(value, &["status"]) == Some("error") {
        let message = str_at(value, &["error", "message"])
            .or_else(|| str_at(value, &["error", "type"]))
            .unwrap_or("the run ended with an error");
        events.push(error(message));
    }
    events
}

/// An error, with the HTTP status when the message carries the API's JSON body
/// (`[API Error: {"error":{"code":500,…}}]`).
fn error(message: &str) -> WorkerEvent {
    let status = message.split("\"code\":").nth(1).and_then(|rest| {
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse::<u16>().ok()
    });
    WorkerEvent::Error {
        message: message.trim().to_string(),
        status,
        retry_after: retry_after(message),
    }
}

/// Seconds from "Suggested retry after 2s.".
fn retry_after(message: &str) -> Option<u64> {
    let rest = message.split("retry after ").nth(1)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::StreamParser;
    use crate::testing::{assert_no_events, events_after};

    #[test]
    fn assistant_chunks_become_one_text_when_the_message_ends() {
        let events = events_after(
            &mut GeminiStream::default(),
            &[
                r#"{"type":"message","role":"assistant","content":"The fun","delta":true}"#,
                r#"{"type":"message","role":"assistant","content":"ction is at a.rs:1.","delta":true}"#,
            ],
            r#"{"type":"result","status":"success","stats":{"total_tokens":381,"input_tokens":360,"output_tokens":21,"cached":150,"input":210}}"#,
        );
        assert_eq!(
            events,
            vec![
                WorkerEvent::Text {
                    message: Some("assistant-1".into()),
                    text: "The function is at a.rs:1.".into()
                },
                WorkerEvent::StepFinished {
                    reason: Some("stop".into()),
                    usage: Some(Usage {
                        input: 210,
                        output: 21,
                        reasoning: 0,
                        cache_read: 150,
                        cache_write: 0
                    }),
                    cost: None
                }
            ]
        );
    }

    #[test]
    fn policy_refusals_are_denied_and_successful_writes_name_their_file() {
        let mut s = GeminiStream::default();
        s.parse_line(r#"{"type":"tool_use","tool_name":"write_file","tool_id":"write_file__1","parameters":{"file_path":"/r/N.txt","content":"x"}}"#);
        let e = s.parse_line(r#"{"type":"tool_result","tool_id":"write_file__1","status":"error","error":{"type":"tool_not_registered","message":"Tool \"write_file\" not found."}}"#);
        assert!(
            matches!(&e[0], WorkerEvent::ToolCall { name, outcome: ToolOutcome::Denied, .. } if name == "write_file")
        );
        s.parse_line(r#"{"type":"tool_use","tool_name":"write_file","tool_id":"write_file__2","parameters":{"file_path":"/r/N.txt"}}"#);
        let e = s.parse_line(
            r#"{"type":"tool_result","tool_id":"write_file__2","status":"success","output":""}"#,
        );
        assert!(
            matches!(&e[0], WorkerEvent::ToolCall { edited: Some(p), outcome: ToolOutcome::Ok, .. } if p == "/r/N.txt")
        );
    }

    #[test]
    fn a_failed_result_is_an_error_with_the_api_status() {
        let mut s = GeminiStream::default();
        let e = s.parse_line(r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":500,\"message\":\"An internal error has occurred.\",\"status\":\"INTERNAL\"}}]"},"stats":{"total_tokens":0}}"#);
        assert!(
            matches!(
                &e[0],
                WorkerEvent::Error {
                    status: Some(500),
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn garbage_torn_and_unknown_lines_yield_nothing() {
        assert_no_events(
            &mut GeminiStream::default(),
            &[
                "",
                "Warning: Basic terminal detected (TERM=dumb)",
                r#"{"type":"tool_use","tool_na"#,
                r#"{"type":"message","role":"user","content":"q"}"#,
                r#"{"type":"error","severity":"warning","message":"loop"}"#,
            ],
        );
    }
}
