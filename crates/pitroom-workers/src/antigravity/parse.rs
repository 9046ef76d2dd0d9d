//! Antigravity CLI's `--output-format stream-json` stream: typed `init`, `step_update` and a
//! terminal `result` event, each under an `event` key (the 1.1.8 release notes name these
//! events, the `step_type` discriminator and the `tool_info` object of each tool step; the
//! field names inside come from published captures, see `docs/workers/antigravity.md`).
//!
//! Assistant text arrives as `text_delta` chunks of an `agent_response` step, joined without
//! separators and emitted as one text when the step is `DONE` (or the next step starts); a
//! tool step is reported once, when `DONE`. Usage is taken from `result` only (the turn's
//! total), so per-step usage is never counted twice. Unknown events, non-JSON lines and a torn
//! last line yield nothing.
//!
//! Unproven: built from documentation and published captures, not a recorded run here.

use serde_json::Value;

use crate::adapter::JsonEvents;
use crate::classify::mentions;
use crate::common::tool_calls::summarize_input;
use crate::events::{session_started, ToolOutcome, Usage, WorkerEvent};
use crate::json::str_at;
use crate::summary::{one_line, ERROR_CHARS};

/// Step types that are tool calls (a subagent step is reported like one, so it is visible).
const TOOL_STEPS: &[&str] = &["tool", "subagent"];

/// Texts of a tool error that mean a permission check, not the tool, refused the call.
const DENIAL_TEXTS: &[&str] = &["permission", "denied", "not allowed", "requires approval"];

#[derive(Debug, Default)]
struct State {
    /// The `agent_response` step being streamed: (step index, text so far).
    text: Option<(i64, String)>,
}

/// Parses one stream.
#[derive(Debug, Default)]
pub struct AntigravityStream {
    state: State,
}

impl JsonEvents for AntigravityStream {
    fn parse_event(&mut self, value: &Value) -> Vec<WorkerEvent> {
        let state = &mut self.state;
        match str_at(value, &["event"]) {
            Some("init") => {
                let mut events: Vec<WorkerEvent> = flush(state).into_iter().collect();
                events.extend(init(value));
                events
            }
            Some("step_update") => match value.get("step_update") {
                Some(step) => step_update(state, step),
                None => Vec::new(),
            },
            Some("result") => {
                let mut events: Vec<WorkerEvent> = flush(state).into_iter().collect();
                events.extend(result(value.get("result").unwrap_or(&Value::Null)));
                events
            }
            _ => Vec::new(),
        }
    }
}

fn init(value: &Value) -> Vec<WorkerEvent> {
    // The start-up event names no model.
    str_at(value, &["conversation_id"])
        .map(|id| session_started(id, None))
        .unwrap_or_default()
}

fn step_update(state: &mut State, step: &Value) -> Vec<WorkerEvent> {
    let index = step.get("step_index").and_then(Value::as_i64).unwrap_or(-1);
    let done = str_at(step, &["state"]) == Some("DONE");
    match str_at(step, &["step_type"]) {
        Some("agent_response") => {
            let mut events = Vec::new();
            if state.text.as_ref().is_some_and(|(i, _)| *i != index) {
                events.extend(flush(state));
            }
            let delta = str_at(step, &["text_delta"]).unwrap_or("");
            let (_, text) = state.text.get_or_insert_with(|| (index, String::new()));
            text.push_str(delta);
            if done {
                events.extend(flush(state));
            }
            events
        }
        Some(kind) if TOOL_STEPS.contains(&kind) && done => {
            let mut events: Vec<WorkerEvent> = flush(state).into_iter().collect();
            events.push(tool_call(step, kind));
            events
        }
        _ => Vec::new(),
    }
}

fn flush(state: &mut State) -> Option<WorkerEvent> {
    let (index, text) = state.text.take()?;
    (!text.is_empty()).then(|| WorkerEvent::Text {
        message: Some(format!("step-{index}")),
        text,
    })
}

fn tool_call(step: &Value, kind: &str) -> WorkerEvent {
    let info = step.get("tool_info").unwrap_or(&Value::Null);
    let name = str_at(step, &["tool_name"])
        .or_else(|| str_at(info, &["name"]))
        .unwrap_or(kind)
        .to_string();
    let error = info.get("error").filter(|e| !e.is_null()).map(|e| {
        e.as_str()
            .map(str::to_string)
            .unwrap_or_else(|| e.to_string())
    });
    let outcome = match &error {
        Some(e) if mentions(e, DENIAL_TEXTS) => ToolOutcome::Denied,
        Some(_) => ToolOutcome::Failed,
        None => ToolOutcome::Ok,
    };
    WorkerEvent::ToolCall {
        summary: summarize_input(info.get("parameters").unwrap_or(&Value::Null)),
        name,
        outcome,
        error: error.map(|e| one_line(&e, ERROR_CHARS)),
        // Antigravity runs are read-only in Pitroom (see the adapter): nothing is edited.
        edited: None,
    }
}

/// The turn's usage, the actions headless mode refused, and on failure its error.
fn result(result: &Value) -> Vec<WorkerEvent> {
    let mut events: Vec<WorkerEvent> = denied_actions(result);
    let usage = result.get("usage").map(usage).filter(|u| !u.is_zero());
    let failed = str_at(result, &["status"]).is_some_and(|s| !s.eq_ignore_ascii_case("success"));
    if usage.is_some() || !failed {
        events.push(WorkerEvent::StepFinished {
            reason: Some(if failed { "error" } else { "stop" }.into()),
            usage,
            cost: None,
        });
    }
    if failed {
        let message = str_at(result, &["error"])
            .filter(|e| !e.trim().is_empty())
            .or_else(|| str_at(result, &["status"]))
            .unwrap_or("the run ended with an error");
        events.push(WorkerEvent::Error {
            message: message.trim().to_string(),
            status: status_in(message),
            retry_after: None,
        });
    }
    events
}

/// `denied_actions`: strings, or objects naming the tool and why.
fn denied_actions(result: &Value) -> Vec<WorkerEvent> {
    let Some(list) = result.get("denied_actions").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .map(|action| {
            let name = str_at(action, &["tool_name"])
                .or_else(|| str_at(action, &["name"]))
                .unwrap_or("action");
            let why = action
                .as_str()
                .or_else(|| str_at(action, &["reason"]))
                .map(str::to_string)
                .unwrap_or_else(|| action.to_string());
            WorkerEvent::ToolCall {
                name: name.to_string(),
                summary: summarize_input(action.get("parameters").unwrap_or(&Value::Null)),
                outcome: ToolOutcome::Denied,
                error: Some(one_line(&why, ERROR_CHARS)),
                edited: None,
            }
        })
        .collect()
}

/// `input_tokens` excludes cached tokens; `thinking_tokens` are part of `output_tokens`.
fn usage(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let reasoning = n("thinking_tokens");
    Usage {
        input: n("input_tokens"),
        output: n("output_tokens").saturating_sub(reasoning),
        reasoning,
        cache_read: n("cache_read_tokens"),
        cache_write: 0,
    }
}

/// An HTTP status named in an error text (`… 429 …`, `"code": 503`).
fn status_in(message: &str) -> Option<u16> {
    message
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|d| d.parse::<u16>().ok())
        .find(|s| matches!(s, 400 | 401 | 403 | 404 | 429 | 500 | 502 | 503 | 529))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::StreamParser;
    use crate::testing::{assert_no_events, events_after};

    #[test]
    fn response_deltas_become_one_text_when_the_step_is_done() {
        let e = events_after(
            &mut AntigravityStream::default(),
            &[
                r#"{"event":"step_update","step_update":{"step_index":2,"state":"ACTIVE","step_type":"agent_response","text_delta":"The fun"}}"#,
            ],
            r#"{"event":"step_update","step_update":{"step_index":2,"state":"DONE","step_type":"agent_response","text_delta":"ction."}}"#,
        );
        assert_eq!(
            e,
            vec![WorkerEvent::Text {
                message: Some("step-2".into()),
                text: "The function.".into()
            }]
        );
    }

    #[test]
    fn a_tool_step_is_reported_once_when_done_and_a_permission_error_is_a_denial() {
        let e = events_after(
            &mut AntigravityStream::default(),
            &[
                r#"{"event":"step_update","step_update":{"step_index":3,"state":"ACTIVE","step_type":"tool","tool_name":"view_file","tool_info":{"name":"view_file","parameters":{"AbsolutePath":"/w/a.rs"}}}}"#,
            ],
            r#"{"event":"step_update","step_update":{"step_index":3,"state":"DONE","step_type":"tool","tool_name":"run_command","tool_info":{"name":"run_command","parameters":{"CommandLine":"touch x"},"error":"permission check failed for command \"touch x\": user denied permission"}}}"#,
        );
        assert!(
            matches!(&e[0], WorkerEvent::ToolCall { name, outcome: ToolOutcome::Denied, .. } if name == "run_command"),
            "{e:?}"
        );
    }

    #[test]
    fn the_result_carries_the_turns_usage_and_a_failed_result_is_an_error() {
        let mut s = AntigravityStream::default();
        let e = s.parse_line(r#"{"event":"result","result":{"status":"SUCCESS","response":"ok","usage":{"input_tokens":900,"output_tokens":60,"thinking_tokens":20,"cache_read_tokens":800}}}"#);
        assert_eq!(
            e,
            vec![WorkerEvent::StepFinished {
                reason: Some("stop".into()),
                usage: Some(Usage {
                    input: 900,
                    output: 40,
                    reasoning: 20,
                    cache_read: 800,
                    cache_write: 0
                }),
                cost: None
            }]
        );
        let e = s.parse_line(r#"{"event":"result","result":{"status":"ERROR","error":"RESOURCE_EXHAUSTED (429): quota exceeded"}}"#);
        assert!(
            matches!(
                &e[..],
                [WorkerEvent::Error {
                    status: Some(429),
                    ..
                }]
            ),
            "{e:?}"
        );
    }

    #[test]
    fn garbage_torn_and_unknown_lines_yield_nothing() {
        assert_no_events(
            &mut AntigravityStream::default(),
            &[
                "",
                "AGY_ERROR: something",
                r#"{"event":"step_update","step_upd"#,
                r#"{"event":"step_update","step_update":{"step_index":0,"state":"DONE","step_type":"user_input"}}"#,
                r#"{"event":"future_event"}"#,
            ],
        );
    }
}
