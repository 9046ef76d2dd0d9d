//! Claude Code's `--output-format stream-json --verbose` stream: one JSON object per line
//! (`system`, `assistant`, `user`, `result`). A tool call arrives in two halves, the `tool_use`
//! block of an `assistant` line and the `tool_result` block of a later `user` line, so the
//! parser remembers the calls it has seen. Unknown types, non-JSON lines and a torn last line
//! yield nothing.

use std::collections::HashMap;

use serde_json::Value;

use crate::adapter::JsonEvents;
use crate::classify::mentions;
use crate::events::{ToolOutcome, Usage, WorkerEvent};
use crate::json::content_text;
use crate::stream_json;
use crate::summary::{input_summary, one_line, ERROR_CHARS};

/// Tools whose successful call edits the file in `file_path` (`notebook_path`).
const EDIT_TOOLS: &[&str] = &["Edit", "MultiEdit", "Write", "NotebookEdit"];

/// Tool-result texts meaning the permission profile, not the tool, refused the call.
const DENIAL_TEXTS: &[&str] = &[
    "no such tool available",
    "denied by your permission settings",
    "permission to use",
    "haven't granted it yet",
    "don't ask mode",
    "requires approval",
    "outside allowed working directories",
    "while in plan mode",
];

/// The tool calls seen so far, by id, until their results arrive.
#[derive(Debug, Default)]
pub struct Calls {
    pending: HashMap<String, (String, Value)>,
    /// A synthetic assistant message already reported the run's API error, so the `result`
    /// that follows adds none (its `api_error_status` is null for some, e.g. "Not logged in").
    api_error_seen: bool,
}

impl JsonEvents for Calls {
    fn parse_event(&mut self, value: &Value) -> Vec<WorkerEvent> {
        match value["type"].as_str() {
            Some("system") => stream_json::init(value),
            Some("assistant") => self.assistant(value),
            Some("user") => self.tool_results(value),
            Some("result") => result(value, self.api_error_seen),
            _ => Vec::new(),
        }
    }
}

impl Calls {
    fn assistant(&mut self, value: &Value) -> Vec<WorkerEvent> {
        let message = &value["message"];
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        // An API error arrives as a synthetic assistant message carrying the error text.
        if value.get("error").is_some_and(|e| !e.is_null()) || message["model"] == "<synthetic>" {
            let text: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
            self.api_error_seen = true;
            return vec![WorkerEvent::Error {
                message: text.join("\n"),
                status: value["api_error_status"]
                    .as_u64()
                    .and_then(|s| u16::try_from(s).ok()),
                retry_after: None,
            }];
        }
        let id = message["id"].as_str().map(str::to_string);
        let mut events = Vec::new();
        for block in blocks {
            match block["type"].as_str() {
                Some("text") => {
                    if let Some(text) = block["text"].as_str() {
                        events.push(WorkerEvent::Text {
                            message: id.clone(),
                            text: text.to_string(),
                        });
                    }
                }
                Some("tool_use") => {
                    if let (Some(call), Some(name)) = (block["id"].as_str(), block["name"].as_str())
                    {
                        self.pending
                            .insert(call.to_string(), (name.to_string(), block["input"].clone()));
                    }
                }
                _ => {}
            }
        }
        events
    }

    fn tool_results(&mut self, value: &Value) -> Vec<WorkerEvent> {
        let rejected: Vec<&str> = value["tool_result_meta"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["permission_decision"]["decision"] == "reject")
            .filter_map(|m| m["id"].as_str())
            .collect();
        let mut events = Vec::new();
        for block in value["message"]["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            let call = block["tool_use_id"].as_str().unwrap_or("");
            let (name, input) = self
                .pending
                .remove(call)
                .unwrap_or_else(|| ("tool".to_string(), Value::Null));
            let is_error = block["is_error"].as_bool().unwrap_or(false);
            let text = content_text(&block["content"]);
            let outcome = if rejected.contains(&call) || (is_error && mentions(&text, DENIAL_TEXTS))
            {
                ToolOutcome::Denied
            } else if is_error {
                ToolOutcome::Failed
            } else {
                ToolOutcome::Ok
            };
            let edited = (outcome == ToolOutcome::Ok && EDIT_TOOLS.contains(&name.as_str()))
                .then(|| {
                    input["file_path"]
                        .as_str()
                        .or_else(|| input["notebook_path"].as_str())
                        .map(str::to_string)
                })
                .flatten();
            events.push(WorkerEvent::ToolCall {
                summary: summarize(&input),
                name,
                outcome,
                error: (outcome != ToolOutcome::Ok).then(|| one_line(&text, ERROR_CHARS)),
                edited,
            });
        }
        events
    }
}

/// The run's end: usage and cost of this run, and an error when it failed for another reason
/// than an API error (those came as a synthetic assistant message already).
fn result(value: &Value, api_error_seen: bool) -> Vec<WorkerEvent> {
    let mut events = vec![WorkerEvent::StepFinished {
        reason: value["stop_reason"]
            .as_str()
            .or_else(|| value["terminal_reason"].as_str())
            .or_else(|| value["subtype"].as_str())
            .map(str::to_string),
        usage: usage(&value["usage"]),
        cost: cost(value),
    }];
    let is_error = value["is_error"].as_bool().unwrap_or(false);
    if is_error && !api_error_seen && value["api_error_status"].is_null() {
        let mut message: Vec<String> = value["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e.as_str().map(str::to_string))
            .collect();
        if let Some(text) = value["result"].as_str() {
            message.push(text.to_string());
        }
        if message.is_empty() {
            message.push(value["subtype"].as_str().unwrap_or("error").to_string());
        }
        events.push(WorkerEvent::Error {
            message: message.join("; "),
            status: None,
            retry_after: None,
        });
    }
    events
}

/// Anthropic usage: `input_tokens` already excludes cache reads and writes; thinking is inside
/// `output_tokens`.
fn usage(u: &Value) -> Option<Usage> {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let thinking = n(&u["output_tokens_details"]["thinking_tokens"]);
    let usage = Usage {
        input: n(&u["input_tokens"]),
        output: n(&u["output_tokens"]).saturating_sub(thinking),
        reasoning: thinking,
        cache_read: n(&u["cache_read_input_tokens"]),
        cache_write: n(&u["cache_creation_input_tokens"]),
    };
    (!usage.is_zero()).then_some(usage)
}

/// This run's cost. `total_cost_usd` adds up the whole session after `--resume`, so the
/// per-run `model_usage_since_last_result` is preferred.
fn cost(value: &Value) -> Option<f64> {
    if let Some(models) = value["model_usage_since_last_result"].as_object() {
        let costs: Vec<f64> = models
            .values()
            .filter_map(|m| m["costUSD"].as_f64())
            .collect();
        if !costs.is_empty() {
            return Some(costs.iter().sum());
        }
    }
    value["total_cost_usd"].as_f64()
}

/// The fields of a tool's input that tell most about the call, most telling first.
const INPUT_KEYS: &[&str] = &[
    "file_path",
    "notebook_path",
    "command",
    "pattern",
    "path",
    "url",
    "query",
];

/// The most telling field of a tool's input, on one line.
fn summarize(input: &Value) -> String {
    input_summary(input, INPUT_KEYS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::StreamParser;

    #[test]
    fn a_call_is_reported_when_its_result_arrives_with_the_tool_it_used() {
        let mut calls = Calls::default();
        let use_line = r#"{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/w/a.py"}}]}}"#;
        assert!(calls.parse_line(use_line).is_empty());
        let result = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"updated"}]}}"#;
        let events = calls.parse_line(result);
        assert!(
            matches!(
                &events[..],
                [WorkerEvent::ToolCall { name, outcome: ToolOutcome::Ok, edited: Some(p), .. }] if name == "Edit" && p == "/w/a.py"
            ),
            "{events:?}"
        );
    }

    #[test]
    fn a_synthetic_api_error_message_is_an_error_with_its_status_not_an_answer() {
        let line = r#"{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"API Error: Request rejected (429) · slow down"}]},"error":"rate_limit","api_error_status":429}"#;
        let events = Calls::default().parse_line(line);
        assert!(
            matches!(
                &events[..],
                [WorkerEvent::Error {
                    status: Some(429),
                    ..
                }]
            ),
            "{events:?}"
        );
    }

    #[test]
    fn not_logged_in_is_one_error_although_the_result_carries_no_status() {
        let mut calls = Calls::default();
        let mut events = calls.parse_line(
            r#"{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed"}"#,
        );
        events.extend(calls.parse_line(
            r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"result":"Not logged in · Please run /login"}"#,
        ));
        let errors = events
            .iter()
            .filter(|e| matches!(e, WorkerEvent::Error { .. }))
            .count();
        assert_eq!(errors, 1, "{events:?}");
    }

    #[test]
    fn cost_is_this_runs_not_the_sessions() {
        let line = r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.00234,"model_usage_since_last_result":{"m":{"costUSD":0.00078}},"usage":{"input_tokens":10,"output_tokens":5}}"#;
        let events = Calls::default().parse_line(line);
        assert!(
            matches!(&events[..], [WorkerEvent::StepFinished { cost: Some(c), .. }] if (*c - 0.00078).abs() < 1e-9),
            "{events:?}"
        );
    }
}
