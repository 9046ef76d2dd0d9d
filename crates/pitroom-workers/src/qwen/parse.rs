//! Qwen Code's `-o stream-json` stream (Claude-like): `system/init`, `assistant` events with one
//! content block each, `user` events carrying tool results, and a final `result` (missing when
//! a budget such as `--max-wall-time` ends the run). Unknown types, non-JSON lines and a torn
//! last line yield nothing.
//!
//! A tool result names only its call id, so the parser remembers each call's name and input
//! until its result arrives.

use std::collections::HashMap;

use serde_json::Value;

use crate::adapter::JsonEvents;
use crate::classify::mentions;
use crate::common::tool_calls::tool_call_event;
use crate::events::{ToolOutcome, Usage, WorkerEvent};
use crate::json::{str_at, u64_at};
use crate::stream_json;

/// Tools whose successful call edits the file named in `file_path`.
const EDIT_TOOLS: &[&str] = &["write_file", "edit", "replace", "notebook_edit"];

/// Texts Qwen Code puts in a tool result when a permission rule, not the tool, refused it.
const DENIAL_TEXTS: &[&str] = &[
    "requires permission to use",
    "permission was declined",
    "matching deny rule",
    "denied by permission rules",
    "not listed in the active core tools allowlist",
];

/// The prefix of an API failure that Qwen Code reports as assistant text.
const API_ERROR: &str = "[API Error:";

/// Parses one stream; keeps the calls whose results are still to come.
#[derive(Debug, Default)]
pub struct QwenStream {
    pending: HashMap<String, (String, Value)>,
}

impl JsonEvents for QwenStream {
    fn parse_event(&mut self, value: &Value) -> Vec<WorkerEvent> {
        match value.get("type").and_then(Value::as_str) {
            Some("system") => stream_json::init(value),
            Some("assistant") => self.assistant(value),
            Some("user") => self.tool_results(value),
            Some("result") => result(value),
            _ => Vec::new(),
        }
    }
}

impl QwenStream {
    fn assistant(&mut self, value: &Value) -> Vec<WorkerEvent> {
        let message = value.get("message").unwrap_or(&Value::Null);
        let id = str_at(message, &["id"]).map(str::to_string);
        let mut events = Vec::new();
        for block in blocks(message) {
            match str_at(block, &["type"]) {
                Some("text") => {
                    let text = str_at(block, &["text"]).unwrap_or("");
                    if text.trim_start().starts_with(API_ERROR) {
                        events.push(api_error(text));
                    } else if !text.is_empty() {
                        events.push(WorkerEvent::Text {
                            message: id.clone(),
                            text: text.to_string(),
                        });
                    }
                }
                Some("tool_use") => self.remember_call(block),
                _ => {}
            }
        }
        // The block that ends a model call carries the call's usage; earlier blocks show zeros.
        if let Some(usage) = message.get("usage").map(usage).filter(|u| !u.is_zero()) {
            events.push(WorkerEvent::StepFinished {
                reason: str_at(message, &["stop_reason"])
                    .unwrap_or("stop")
                    .to_string()
                    .into(),
                usage: Some(usage),
                cost: None,
            });
        }
        events
    }

    fn remember_call(&mut self, block: &Value) {
        let (Some(id), Some(name)) = (str_at(block, &["id"]), str_at(block, &["name"])) else {
            return;
        };
        let input = block.get("input").cloned().unwrap_or(Value::Null);
        self.pending
            .insert(id.to_string(), (name.to_string(), input));
    }

    fn tool_results(&mut self, value: &Value) -> Vec<WorkerEvent> {
        let message = value.get("message").unwrap_or(&Value::Null);
        blocks(message)
            .filter(|b| str_at(b, &["type"]) == Some("tool_result"))
            .map(|b| self.tool_call(b))
            .collect()
    }

    fn tool_call(&mut self, result: &Value) -> WorkerEvent {
        let call = str_at(result, &["tool_use_id"]).and_then(|id| self.pending.remove(id));
        let (name, input) = call.unwrap_or_else(|| ("unknown".to_string(), Value::Null));
        let is_error = result
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let output = content_text(result.get("content"));
        let outcome = match is_error {
            true if mentions(&output, DENIAL_TEXTS) => ToolOutcome::Denied,
            true => ToolOutcome::Failed,
            false => ToolOutcome::Ok,
        };
        tool_call_event(name, &input, outcome, &output, EDIT_TOOLS)
    }
}

/// The final event: only its error matters (usage is cumulative over a resumed session, so the
/// per-call usage of the assistant events is what counts).
fn result(value: &Value) -> Vec<WorkerEvent> {
    if !stream_json::result_failed(value) {
        return Vec::new();
    }
    let message = str_at(value, &["error", "message"])
        .or_else(|| str_at(value, &["result"]))
        .unwrap_or("the run ended with an error");
    vec![api_error(message)]
}

/// An error text such as `[API Error: 429 Rate limit reached for requests.]\nPossible quota…`,
/// with its HTTP status when it leads the message.
fn api_error(text: &str) -> WorkerEvent {
    let body = text.trim().strip_prefix(API_ERROR).unwrap_or(text).trim();
    let status = body
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .filter(|digits| digits.len() == 3)
        .and_then(|digits| digits.parse::<u16>().ok());
    WorkerEvent::Error {
        message: text.trim().to_string(),
        status,
        retry_after: retry_after(text),
    }
}

/// Seconds from OpenAI's "Please try again in 1s." / "Please try again in 20ms.".
fn retry_after(text: &str) -> Option<u64> {
    let rest = text.split("try again in ").nth(1)?;
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let value: f64 = number.parse().ok()?;
    let unit = &rest[number.len()..];
    let secs = if unit.starts_with("ms") {
        value / 1000.0
    } else {
        value
    };
    Some(secs.ceil() as u64)
}

fn blocks(message: &Value) -> impl Iterator<Item = &Value> {
    message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn usage(u: &Value) -> Usage {
    let input = u64_at(u, &["input_tokens"]);
    let cache_read = u64_at(u, &["cache_read_input_tokens"]);
    Usage {
        // Qwen's input_tokens include the cached ones; normalised input excludes them.
        input: input.saturating_sub(cache_read),
        output: u64_at(u, &["output_tokens"]),
        reasoning: 0,
        cache_read,
        cache_write: 0,
    }
}

fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::StreamParser;
    use crate::testing::assert_no_events;

    #[test]
    fn init_gives_the_session() {
        let mut s = QwenStream::default();
        let e = s.parse_line(r#"{"type":"system","subtype":"init","session_id":"abc","cwd":"/r"}"#);
        assert_eq!(e[0], WorkerEvent::Session { id: "abc".into() });
    }

    #[test]
    fn a_tool_result_is_reported_under_the_name_and_input_of_its_call() {
        let mut s = QwenStream::default();
        let call = s.parse_line(
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"c1","name":"write_file","input":{"file_path":"/r/a.txt","content":"x"}}],"stop_reason":"tool_use","usage":{"input_tokens":120,"output_tokens":7,"cache_read_input_tokens":50}}}"#,
        );
        assert_eq!(
            call,
            vec![WorkerEvent::StepFinished {
                reason: Some("tool_use".into()),
                usage: Some(Usage {
                    input: 70,
                    output: 7,
                    reasoning: 0,
                    cache_read: 50,
                    cache_write: 0
                }),
                cost: None
            }]
        );
        let result = s.parse_line(
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":false,"content":"Successfully created"}]}}"#,
        );
        assert_eq!(
            result,
            vec![WorkerEvent::ToolCall {
                name: "write_file".into(),
                summary: "/r/a.txt".into(),
                outcome: ToolOutcome::Ok,
                error: None,
                edited: Some("/r/a.txt".into())
            }]
        );
    }

    #[test]
    fn a_declined_permission_is_denied_not_failed() {
        let mut s = QwenStream::default();
        s.parse_line(r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"c","name":"write_file","input":{"file_path":"/r/N"}}]}}"#);
        let e = s.parse_line(
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c","is_error":true,"content":"Qwen Code requires permission to use \"write_file\", but that permission was declined. Matching deny rule: \"edit\"."}]}}"#,
        );
        assert!(matches!(
            &e[0],
            WorkerEvent::ToolCall {
                outcome: ToolOutcome::Denied,
                edited: None,
                ..
            }
        ));
    }

    #[test]
    fn api_error_text_is_an_error_with_its_status_not_an_answer() {
        let mut s = QwenStream::default();
        let e = s.parse_line(
            r#"{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"[API Error: 429 Rate limit reached for requests. Please try again in 1s.]\nPossible quota limitations in place."}],"usage":{"input_tokens":0,"output_tokens":0}}}"#,
        );
        assert_eq!(e.len(), 1);
        assert!(matches!(
            &e[0],
            WorkerEvent::Error {
                status: Some(429),
                retry_after: Some(1),
                ..
            }
        ));
    }

    #[test]
    fn a_failed_result_is_an_error_and_a_successful_one_adds_nothing() {
        let mut s = QwenStream::default();
        let e = s.parse_line(
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"error":{"message":"[API Error: 404 The model `x` does not exist or you do not have access to it.]"}}"#,
        );
        assert!(matches!(
            &e[0],
            WorkerEvent::Error {
                status: Some(404),
                ..
            }
        ));
        let ok = s.parse_line(r#"{"type":"result","subtype":"success","is_error":false,"result":"done","usage":{"input_tokens":5}}"#);
        assert!(ok.is_empty());
    }

    #[test]
    fn garbage_torn_and_unknown_lines_yield_nothing() {
        assert_no_events(
            &mut QwenStream::default(),
            &[
                "",
                "Warning: something",
                r#"{"type":"assistant","message":{"content":[{"type":"te"#,
                r#"{"type":"stream_event","event":{"type":"goal_state"}}"#,
                "[1,2]",
            ],
        );
    }
}
