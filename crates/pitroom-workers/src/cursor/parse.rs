//! Cursor CLI's `--output-format stream-json` stream, as its output-format reference documents
//! it: `system`/`init` (the session), `user` (the prompt echoed), `assistant` (one complete
//! message between tool calls), `tool_call` `started`/`completed` pairs keyed by `call_id`
//! (the tool is the one key of `tool_call`: `readToolCall`, `writeToolCall`, `shellToolCall`,
//! … or `function` with a `name`), and a final `result`. The documented stream carries no
//! token usage, so a finished run reports none. Unknown types, non-JSON lines and a torn last
//! line yield nothing.
//!
//! Unproven: built from the documentation, not from a recorded run of the real CLI.

use std::collections::HashMap;

use serde_json::Value;

use crate::adapter::JsonEvents;
use crate::common::tool_calls::summarize_input;
use crate::events::{ToolOutcome, WorkerEvent};
use crate::json::str_at;
use crate::stream_json;
use crate::summary::{one_line, ERROR_CHARS};

/// Tools whose successful call changes the file named in its `path`.
const EDIT_TOOLS: &[&str] = &["write", "edit", "delete", "applyPatch"];

/// Result keys (besides `success`) that mean a permission rule refused the call.
const DENIAL_KEYS: &[&str] = &["rejected", "permissionDenied", "denied"];

#[derive(Debug, Default)]
struct State {
    /// Calls awaiting completion: call id → (tool name, args).
    pending: HashMap<String, (String, Value)>,
    /// Assistant messages so far, to name each one.
    messages: usize,
}

/// Parses one stream.
#[derive(Debug, Default)]
pub struct CursorStream {
    state: State,
}

impl JsonEvents for CursorStream {
    fn parse_event(&mut self, value: &Value) -> Vec<WorkerEvent> {
        match str_at(value, &["type"]) {
            Some("system") => stream_json::init(value),
            Some("assistant") => self.assistant(value),
            Some("tool_call") => self.tool_call(value),
            Some("result") => result(value),
            _ => Vec::new(),
        }
    }
}

impl CursorStream {
    fn assistant(&mut self, value: &Value) -> Vec<WorkerEvent> {
        let text: String = value
            .pointer("/message/content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|block| str_at(block, &["type"]) == Some("text"))
            .filter_map(|block| str_at(block, &["text"]))
            .collect();
        if text.is_empty() {
            return Vec::new();
        }
        let state = &mut self.state;
        state.messages += 1;
        vec![WorkerEvent::Text {
            message: Some(format!("assistant-{}", state.messages)),
            text,
        }]
    }

    fn tool_call(&mut self, value: &Value) -> Vec<WorkerEvent> {
        let (Some(id), Some((name, call))) = (str_at(value, &["call_id"]), tool_of(value)) else {
            return Vec::new();
        };
        let args = call.get("args").cloned().unwrap_or(Value::Null);
        let state = &mut self.state;
        match str_at(value, &["subtype"]) {
            Some("started") => {
                state.pending.insert(id.to_string(), (name, args));
                Vec::new()
            }
            Some("completed") => {
                let (name, args) = state.pending.remove(id).unwrap_or((name, args));
                vec![completed(name, &args, call.get("result"))]
            }
            _ => Vec::new(),
        }
    }
}

/// The tool's short name and its object: `{"readToolCall": {…}}` → `read`;
/// `{"function": {"name": "x", "arguments": "…"}}` → `x`.
fn tool_of(value: &Value) -> Option<(String, &Value)> {
    let (key, call) = value.get("tool_call")?.as_object()?.iter().next()?;
    if key == "function" {
        let name = str_at(call, &["name"]).unwrap_or("function").to_string();
        return Some((name, call));
    }
    Some((key.trim_end_matches("ToolCall").to_string(), call))
}

fn completed(name: String, args: &Value, result: Option<&Value>) -> WorkerEvent {
    let result = result.unwrap_or(&Value::Null);
    let success = result.get("success");
    let denied = DENIAL_KEYS.iter().find_map(|k| result.get(*k));
    let (outcome, error) = match (success, denied) {
        (Some(ok), _) => match ok.get("exitCode").and_then(Value::as_i64) {
            // A shell command that ran and failed is the tool's failure, not a refusal.
            Some(code) if code != 0 => (
                ToolOutcome::Failed,
                Some(format!("exit code {code}: {}", text_of(ok.get("stderr")))),
            ),
            _ => (ToolOutcome::Ok, None),
        },
        (None, Some(why)) => (ToolOutcome::Denied, Some(text_of(Some(why)))),
        (None, None) => (ToolOutcome::Failed, Some(text_of(result.get("error")))),
    };
    let edited = (outcome == ToolOutcome::Ok && EDIT_TOOLS.contains(&name.as_str()))
        .then(|| {
            success
                .and_then(|s| str_at(s, &["path"]))
                .or_else(|| str_at(args, &["path"]))
                .map(str::to_string)
        })
        .flatten();
    WorkerEvent::ToolCall {
        summary: summarize_input(args),
        name,
        outcome,
        error: error.map(|e| one_line(&e, ERROR_CHARS)),
        edited,
    }
}

/// A message from a string, or from an object's `message`/`reason`, or the JSON itself.
fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => str_at(v, &["message"])
            .or_else(|| str_at(v, &["reason"]))
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string()),
        Some(Value::Null) | None => "the tool failed".to_string(),
        Some(v) => v.to_string(),
    }
}

/// The run's end. The stream documents no usage, so the step ends without any (`n/a`).
fn result(value: &Value) -> Vec<WorkerEvent> {
    if stream_json::result_failed(value) {
        let message = str_at(value, &["result"])
            .filter(|r| !r.trim().is_empty())
            .or_else(|| str_at(value, &["subtype"]))
            .unwrap_or("the run ended with an error");
        return vec![WorkerEvent::Error {
            message: message.trim().to_string(),
            status: None,
            retry_after: None,
        }];
    }
    vec![WorkerEvent::StepFinished {
        reason: Some("stop".into()),
        usage: None,
        cost: None,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::StreamParser;
    use crate::testing::{assert_no_events, events_after};

    #[test]
    fn init_gives_the_session_the_model_and_a_started_step() {
        let mut s = CursorStream::default();
        let e = s.parse_line(r#"{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/w","session_id":"c6b6","model":"Auto","permissionMode":"default"}"#);
        assert_eq!(
            e,
            vec![
                WorkerEvent::Session { id: "c6b6".into() },
                WorkerEvent::Model {
                    name: "Auto".into()
                },
                WorkerEvent::StepStarted
            ]
        );
        let without_model =
            s.parse_line(r#"{"type":"system","subtype":"init","session_id":"c6b6","model":" "}"#);
        assert_eq!(
            without_model,
            vec![
                WorkerEvent::Session { id: "c6b6".into() },
                WorkerEvent::StepStarted
            ]
        );
    }

    #[test]
    fn a_completed_call_is_named_by_its_started_args_and_a_write_names_its_file() {
        let e = events_after(
            &mut CursorStream::default(),
            &[
                r#"{"type":"tool_call","subtype":"started","call_id":"t1","tool_call":{"writeToolCall":{"args":{"path":"a.txt","fileText":"x"}}}}"#,
            ],
            r#"{"type":"tool_call","subtype":"completed","call_id":"t1","tool_call":{"writeToolCall":{"args":{"path":"a.txt"},"result":{"success":{"path":"/w/a.txt","linesCreated":1,"fileSize":1}}}}}"#,
        );
        assert!(
            matches!(&e[0], WorkerEvent::ToolCall { name, outcome: ToolOutcome::Ok, edited: Some(p), .. } if name == "write" && p == "/w/a.txt"),
            "{e:?}"
        );
    }

    #[test]
    fn a_refused_call_is_denied_and_a_failed_command_is_failed() {
        let mut s = CursorStream::default();
        let e = s.parse_line(r#"{"type":"tool_call","subtype":"completed","call_id":"t2","tool_call":{"shellToolCall":{"args":{"command":"git push"},"result":{"rejected":{"command":"git push","reason":"denied by permissions"}}}}}"#);
        assert!(
            matches!(
                &e[0],
                WorkerEvent::ToolCall {
                    outcome: ToolOutcome::Denied,
                    edited: None,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = s.parse_line(r#"{"type":"tool_call","subtype":"completed","call_id":"t3","tool_call":{"shellToolCall":{"args":{"command":"false"},"result":{"success":{"exitCode":1,"stdout":"","stderr":"boom"}}}}}"#);
        assert!(
            matches!(&e[0], WorkerEvent::ToolCall { outcome: ToolOutcome::Failed, error: Some(m), .. } if m.contains("boom")),
            "{e:?}"
        );
    }

    #[test]
    fn a_successful_result_ends_the_step_without_usage_and_an_error_result_is_an_error() {
        let mut s = CursorStream::default();
        assert_eq!(
            s.parse_line(r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":1,"result":"ok","session_id":"c"}"#),
            vec![WorkerEvent::StepFinished {
                reason: Some("stop".into()),
                usage: None,
                cost: None
            }]
        );
        let e = s.parse_line(r#"{"type":"result","subtype":"error","is_error":true,"result":"boom","session_id":"c"}"#);
        assert!(matches!(&e[0], WorkerEvent::Error { message, .. } if message == "boom"));
    }

    #[test]
    fn garbage_torn_echoes_and_unknown_lines_yield_nothing() {
        assert_no_events(
            &mut CursorStream::default(),
            &[
                "",
                "T: Cannot use this model",
                r#"{"type":"tool_call","subtype":"comp"#,
                r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"q"}]}}"#,
                r#"{"type":"thinking","subtype":"delta","text":"hm"}"#,
                r#"{"type":"assistant","message":{"role":"assistant","content":[]}}"#,
            ],
        );
    }
}
