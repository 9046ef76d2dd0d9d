//! `codex exec --json`: one JSON object per line (`thread.started`, `turn.started`,
//! `item.started/updated/completed`, `turn.completed`, `turn.failed`, `error`). Parsed as
//! untyped JSON on purpose: a `web_search` item carries its `"id"` key twice, which a derived
//! struct rejects. Unknown types, non-JSON lines and a torn last line yield nothing.

use serde_json::Value;

use crate::events::{ToolOutcome, Usage, WorkerEvent};
use crate::summary::{one_line, ERROR_CHARS, INPUT_CHARS};

/// Texts a command's output shows when Codex's sandbox, not the command, refused a write.
const SANDBOX_DENIALS: &[&str] = &["read-only file system", "operation not permitted"];

/// The output of every command when the sandbox itself cannot start (no user namespaces).
const SANDBOX_BROKEN: &str = "bwrap:";

pub fn parse_line(line: &str) -> Vec<WorkerEvent> {
    let Ok(value) = serde_json::from_str::<Value>(line.trim()) else {
        return Vec::new();
    };
    match value["type"].as_str() {
        Some("thread.started") => value["thread_id"]
            .as_str()
            .map(|id| WorkerEvent::Session { id: id.to_string() })
            .into_iter()
            .collect(),
        Some("turn.started") => vec![WorkerEvent::StepStarted],
        Some("turn.completed") => vec![WorkerEvent::StepFinished {
            reason: Some("stop".into()),
            usage: usage(&value["usage"]),
            // Codex reports tokens, never a price.
            cost: None,
        }],
        Some("turn.failed") => {
            let message = value["error"]["message"]
                .as_str()
                .unwrap_or("turn failed")
                .to_string();
            vec![WorkerEvent::Error {
                status: status_in(&message),
                message,
                retry_after: None,
            }]
        }
        Some("item.completed") => item(&value["item"]),
        // `error` lines are either "Reconnecting... n/N" notices or the first half of the
        // `error` + `turn.failed` pair that ends a failed turn: the pair's second half is the
        // one kept, so an error is not counted twice.
        _ => Vec::new(),
    }
}

/// The normalised usage of one turn. Codex counts cached input inside `input_tokens` and
/// reasoning inside `output_tokens`; Pitroom's [`Usage`] keeps them apart.
fn usage(u: &Value) -> Option<Usage> {
    let n = |key: &str| u[key].as_u64().unwrap_or(0);
    let cached = n("cached_input_tokens");
    let reasoning = n("reasoning_output_tokens");
    let usage = Usage {
        input: n("input_tokens").saturating_sub(cached),
        output: n("output_tokens").saturating_sub(reasoning),
        reasoning,
        cache_read: cached,
        cache_write: n("cache_write_input_tokens"),
    };
    (!usage.is_zero()).then_some(usage)
}

/// The HTTP status in a Codex error text: `last status: 429 Too Many Requests`,
/// `unexpected status 401 Unauthorized: …`.
pub fn status_in(message: &str) -> Option<u16> {
    ["last status: ", "unexpected status "]
        .iter()
        .find_map(|label| {
            let rest = &message[message.find(label)? + label.len()..];
            rest.get(..3)?.parse().ok()
        })
}

fn item(item: &Value) -> Vec<WorkerEvent> {
    let id = item["id"].as_str().map(str::to_string);
    match item["type"].as_str() {
        Some("agent_message") => item["text"]
            .as_str()
            .map(|text| WorkerEvent::Text {
                message: id,
                text: text.to_string(),
            })
            .into_iter()
            .collect(),
        Some("command_execution") => vec![command(item)],
        Some("file_change") => file_changes(item),
        Some("mcp_tool_call") => vec![mcp_call(item)],
        Some("web_search") => vec![WorkerEvent::ToolCall {
            name: "web_search".into(),
            summary: one_line(item["query"].as_str().unwrap_or(""), 120),
            outcome: ToolOutcome::Ok,
            error: None,
            edited: None,
        }],
        _ => Vec::new(),
    }
}

fn command(item: &Value) -> WorkerEvent {
    let output = item["aggregated_output"].as_str().unwrap_or("");
    let failed = item["status"] == "failed"
        || item["status"] == "declined"
        || item["exit_code"].as_i64().is_some_and(|c| c != 0);
    let lower = output.to_lowercase();
    let outcome = if failed && SANDBOX_DENIALS.iter().any(|d| lower.contains(d)) {
        ToolOutcome::Denied
    } else if failed || output.starts_with(SANDBOX_BROKEN) {
        ToolOutcome::Failed
    } else {
        ToolOutcome::Ok
    };
    WorkerEvent::ToolCall {
        name: "shell".into(),
        summary: one_line(
            &unwrap_shell(item["command"].as_str().unwrap_or("")),
            INPUT_CHARS,
        ),
        outcome,
        error: (outcome != ToolOutcome::Ok).then(|| one_line(output, ERROR_CHARS)),
        edited: None,
    }
}

/// `/bin/bash -c "grep -n x f"` → `grep -n x f`: the wrapper says nothing about the call.
fn unwrap_shell(command: &str) -> String {
    for wrapper in ["/bin/bash -lc ", "/bin/bash -c ", "bash -lc ", "bash -c "] {
        if let Some(inner) = command.strip_prefix(wrapper) {
            let quoted = (inner.starts_with('"') && inner.ends_with('"'))
                || (inner.starts_with('\'') && inner.ends_with('\''));
            return if quoted && inner.len() >= 2 {
                inner[1..inner.len() - 1].to_string()
            } else {
                inner.to_string()
            };
        }
    }
    command.to_string()
}

/// One tool call per changed file, so each edited path is reported.
fn file_changes(item: &Value) -> Vec<WorkerEvent> {
    let ok = item["status"] == "completed";
    item["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|change| {
            let path = change["path"].as_str().unwrap_or("").to_string();
            let kind = change["kind"].as_str().unwrap_or("update");
            WorkerEvent::ToolCall {
                name: "apply_patch".into(),
                summary: one_line(&format!("{kind} {path}"), INPUT_CHARS),
                outcome: if ok {
                    ToolOutcome::Ok
                } else {
                    ToolOutcome::Failed
                },
                error: None,
                edited: (ok && !path.is_empty()).then_some(path),
            }
        })
        .collect()
}

fn mcp_call(item: &Value) -> WorkerEvent {
    let failed = item["status"] == "failed" || !item["error"].is_null();
    WorkerEvent::ToolCall {
        name: format!(
            "mcp:{}/{}",
            item["server"].as_str().unwrap_or("?"),
            item["tool"].as_str().unwrap_or("?")
        ),
        summary: one_line(&item["arguments"].to_string(), 120),
        outcome: if failed {
            ToolOutcome::Failed
        } else {
            ToolOutcome::Ok
        },
        error: item["error"]["message"]
            .as_str()
            .map(|m| one_line(m, ERROR_CHARS)),
        edited: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing: a changed path holding a newline made a multi-line summary.
    #[test]
    fn a_file_change_summary_is_one_line_whatever_the_path_holds() {
        let events = parse_line(
            r#"{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"a\nb.rs","kind":"update"}],"status":"completed"}}"#,
        );
        match &events[..] {
            [WorkerEvent::ToolCall {
                summary, edited, ..
            }] => {
                assert_eq!(summary, "update a b.rs");
                assert_eq!(edited.as_deref(), Some("a\nb.rs"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn usage_splits_cached_input_and_reasoning_out() {
        let events = parse_line(
            r#"{"type":"turn.completed","usage":{"input_tokens":3400,"cached_input_tokens":2300,"cache_write_input_tokens":0,"output_tokens":190,"reasoning_output_tokens":40}}"#,
        );
        let WorkerEvent::StepFinished {
            usage: Some(u),
            cost,
            ..
        } = &events[0]
        else {
            panic!("{events:?}");
        };
        assert_eq!(
            *u,
            Usage {
                input: 1100,
                output: 150,
                reasoning: 40,
                cache_read: 2300,
                cache_write: 0
            }
        );
        assert_eq!(*cost, None);
    }

    #[test]
    fn a_web_search_item_with_a_duplicate_id_key_still_parses() {
        let line = r#"{"type":"item.completed","item":{"id":"item_5","type":"web_search","id":"ws_1","query":"python add","action":{"type":"search","query":"python add"}}}"#;
        let events = parse_line(line);
        assert!(matches!(&events[0], WorkerEvent::ToolCall { name, .. } if name == "web_search"));
    }

    #[test]
    fn a_write_the_sandbox_refused_is_denied_and_a_broken_sandbox_is_a_failure() {
        let denied = parse_line(
            r#"{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"/bin/bash -c 'echo x > f'","aggregated_output":"/bin/bash: line 1: f: Read-only file system\n","exit_code":1,"status":"failed"}}"#,
        );
        assert!(matches!(
            &denied[0],
            WorkerEvent::ToolCall { outcome: ToolOutcome::Denied, summary, .. } if summary == "echo x > f"
        ));
        let broken = parse_line(
            r#"{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"ls","aggregated_output":"bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)\n","exit_code":1,"status":"failed"}}"#,
        );
        assert!(matches!(
            &broken[0],
            WorkerEvent::ToolCall {
                outcome: ToolOutcome::Failed,
                ..
            }
        ));
    }

    #[test]
    fn statuses_are_read_from_codex_error_texts() {
        assert_eq!(
            status_in("exceeded retry limit, last status: 429 Too Many Requests"),
            Some(429)
        );
        assert_eq!(
            status_in("unexpected status 401 Unauthorized: Incorrect API key provided"),
            Some(401)
        );
        assert_eq!(
            status_in("Quota exceeded. Check your plan and billing details."),
            None
        );
    }

    #[test]
    fn the_error_half_of_a_failed_turn_is_not_counted_twice() {
        assert!(parse_line(r#"{"type":"error","message":"Reconnecting... 1/5"}"#).is_empty());
        let failed = parse_line(r#"{"type":"turn.failed","error":{"message":"boom"}}"#);
        assert_eq!(failed.len(), 1);
    }
}
