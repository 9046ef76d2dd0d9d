//! OpenCode's `--format json` stream: one JSON object per line, `{"type", "timestamp",
//! "sessionID", "part" | "error"}`. Unknown types, non-JSON lines and a torn last line yield
//! nothing.

use serde_json::Value;

use crate::classify::mentions;
use crate::events::{ToolOutcome, Usage, WorkerEvent};
use crate::json::{str_at, u64_at};
use crate::summary::{input_summary, one_line, ERROR_CHARS};

/// Tools whose successful call edits the file named in `filePath`.
const EDIT_TOOLS: &[&str] = &["edit", "write", "patch", "multiedit", "apply_patch"];

/// Error texts OpenCode uses when a permission rule, not the tool, refused a call.
const DENIAL_TEXTS: &[&str] = &[
    "rule which prevents you",
    "rejected permission",
    "permission denied",
    "tried to call unavailable tool",
];

pub fn parse_line(line: &str) -> Vec<WorkerEvent> {
    let Ok(value) = serde_json::from_str::<Value>(line.trim()) else {
        return Vec::new();
    };
    let mut events = Vec::new();
    if let Some(id) = value.get("sessionID").and_then(Value::as_str) {
        events.push(WorkerEvent::Session { id: id.to_string() });
    }
    let part = value.get("part").unwrap_or(&Value::Null);
    let parsed = match value.get("type").and_then(Value::as_str) {
        Some("step_start") => Some(WorkerEvent::StepStarted),
        Some("step_finish") => Some(step_finished(part)),
        Some("text") => text(part),
        Some("tool_use") => tool_call(part),
        Some("error") => Some(error(value.get("error").unwrap_or(&Value::Null))),
        _ => None,
    };
    events.extend(parsed);
    events
}

fn step_finished(part: &Value) -> WorkerEvent {
    let tokens = part.get("tokens");
    let usage = tokens.map(|t| Usage {
        input: u64_at(t, &["input"]),
        output: u64_at(t, &["output"]),
        reasoning: u64_at(t, &["reasoning"]),
        cache_read: u64_at(t, &["cache", "read"]),
        cache_write: u64_at(t, &["cache", "write"]),
    });
    WorkerEvent::StepFinished {
        reason: str_at(part, &["reason"]).map(str::to_string),
        usage: usage.filter(|u| !u.is_zero()),
        cost: part.get("cost").and_then(Value::as_f64),
    }
}

fn text(part: &Value) -> Option<WorkerEvent> {
    let text = str_at(part, &["text"])?;
    Some(WorkerEvent::Text {
        message: str_at(part, &["messageID"]).map(str::to_string),
        text: text.to_string(),
    })
}

fn tool_call(part: &Value) -> Option<WorkerEvent> {
    let mut name = str_at(part, &["tool"])?.to_string();
    let state = part.get("state").unwrap_or(&Value::Null);
    let input = state.get("input").unwrap_or(&Value::Null);
    let status = str_at(state, &["status"]).unwrap_or("");
    let error = str_at(state, &["error"]).map(str::to_string);
    let output = str_at(state, &["output"]).unwrap_or("");

    // A call to a tool the profile removed comes back as the internal `invalid` tool.
    if name == "invalid" {
        if let Some(wanted) = str_at(input, &["tool"]) {
            name = wanted.to_string();
        }
    }
    let problem = error
        .as_deref()
        .or_else(|| (output.contains("tried to call unavailable tool")).then_some(output));
    let outcome = match (status, problem) {
        (_, Some(text)) if mentions(text, DENIAL_TEXTS) => ToolOutcome::Denied,
        ("error", _) => ToolOutcome::Failed,
        _ if bash_exit(state).is_some_and(|code| code != 0) => ToolOutcome::Failed,
        _ => ToolOutcome::Ok,
    };
    let edited = (outcome == ToolOutcome::Ok && EDIT_TOOLS.contains(&name.as_str()))
        .then(|| str_at(input, &["filePath"]).map(str::to_string))
        .flatten();
    Some(WorkerEvent::ToolCall {
        summary: summarize_input(input),
        name,
        outcome,
        error: problem.map(|e| one_line(e, ERROR_CHARS)),
        edited,
    })
}

fn bash_exit(state: &Value) -> Option<i64> {
    state.get("metadata")?.get("exit")?.as_i64()
}

fn error(err: &Value) -> WorkerEvent {
    // Kilo puts a plain string in `error`; OpenCode an object with `name` and `data`.
    let message = err
        .as_str()
        .or_else(|| str_at(err, &["data", "message"]))
        .or_else(|| str_at(err, &["message"]))
        .or_else(|| str_at(err, &["name"]))
        .unwrap_or("unknown error")
        .to_string();
    let data = err.get("data").unwrap_or(&Value::Null);
    let status = data
        .get("statusCode")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let mut message = message;
    if let Some(code) = error_code(data) {
        if !message.contains(&code) {
            message = format!("{message} ({code})");
        }
    }
    WorkerEvent::Error {
        message,
        status,
        retry_after: data.get("responseHeaders").and_then(retry_after),
    }
}

/// The provider's machine-readable error code (`model_not_found`, `insufficient_quota`), which
/// classification trusts more than the human message.
fn error_code(data: &Value) -> Option<String> {
    let body = str_at(data, &["responseBody"])?;
    let parsed: Value = serde_json::from_str(body).ok()?;
    let err = parsed.get("error")?;
    str_at(err, &["code"])
        .or_else(|| str_at(err, &["type"]))
        .map(str::to_string)
}

/// Seconds from `retry-after` (seconds) or `retry-after-ms`.
fn retry_after(headers: &Value) -> Option<u64> {
    let header = |name: &str| {
        headers.as_object()?.iter().find_map(|(k, v)| {
            k.eq_ignore_ascii_case(name)
                .then(|| v.as_str().map(str::to_string))
                .flatten()
        })
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Some((ms / 1000.0).ceil() as u64);
    }
    header("retry-after").and_then(|v| v.trim().parse::<f64>().ok().map(|s| s.ceil() as u64))
}

/// The fields of a tool's input that tell most about the call, most telling first.
const INPUT_KEYS: &[&str] = &[
    "filePath", "path", "pattern", "command", "url", "query", "name",
];

/// The most telling field of a tool's input, on one line.
fn summarize_input(input: &Value) -> String {
    input_summary(input, INPUT_KEYS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::LineByLine;
    use crate::testing::assert_no_events;

    fn only(line: &str) -> WorkerEvent {
        parse_line(line)
            .into_iter()
            .find(|e| !matches!(e, WorkerEvent::Session { .. }))
            .expect("an event besides the session")
    }

    /// The outcome of the tool call `line` carries.
    fn outcome_of(line: &str) -> ToolOutcome {
        match only(line) {
            WorkerEvent::ToolCall { outcome, .. } => outcome,
            other => panic!("not a tool call: {other:?}"),
        }
    }

    #[test]
    fn every_line_carries_the_session_id() {
        let events = parse_line(r#"{"type":"step_start","sessionID":"ses_1","part":{}}"#);
        assert_eq!(
            events,
            vec![
                WorkerEvent::Session { id: "ses_1".into() },
                WorkerEvent::StepStarted
            ]
        );
    }

    #[test]
    fn step_finish_maps_tokens_and_cost() {
        let e = only(
            r#"{"type":"step_finish","sessionID":"s","part":{"reason":"tool-calls","tokens":{"total":1050,"input":800,"output":43,"reasoning":7,"cache":{"write":0,"read":200}},"cost":0.001}}"#,
        );
        assert_eq!(
            e,
            WorkerEvent::StepFinished {
                reason: Some("tool-calls".into()),
                usage: Some(Usage {
                    input: 800,
                    output: 43,
                    reasoning: 7,
                    cache_read: 200,
                    cache_write: 0
                }),
                cost: Some(0.001)
            }
        );
    }

    #[test]
    fn a_step_without_a_finish_reason_is_empty() {
        let e = only(
            r#"{"type":"step_finish","part":{"reason":"unknown","tokens":{"input":0,"output":0,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}"#,
        );
        assert!(e.is_empty_step());
    }

    #[test]
    fn pattern_denial_is_denied_not_failed() {
        let outcome = outcome_of(
            r#"{"type":"tool_use","part":{"tool":"bash","state":{"status":"error","input":{"command":"git push"},"error":"The user has specified a rule which prevents you from using this specific tool call."}}}"#,
        );
        assert_eq!(outcome, ToolOutcome::Denied);
    }

    #[test]
    fn call_to_a_removed_tool_is_denied_under_its_own_name() {
        let e = only(
            r#"{"type":"tool_use","part":{"tool":"invalid","state":{"status":"completed","input":{"tool":"edit","error":"Model tried to call unavailable tool 'edit'."},"output":"The arguments provided to the tool are invalid: Model tried to call unavailable tool 'edit'. Available tools: read."}}}"#,
        );
        match e {
            WorkerEvent::ToolCall { name, outcome, .. } => {
                assert_eq!(name, "edit");
                assert_eq!(outcome, ToolOutcome::Denied);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn completed_edit_names_the_file() {
        let e = only(
            r#"{"type":"tool_use","part":{"tool":"edit","state":{"status":"completed","input":{"filePath":"/r/a.py","oldString":"x","newString":"y"},"output":"ok"}}}"#,
        );
        assert!(matches!(e, WorkerEvent::ToolCall { edited: Some(p), .. } if p == "/r/a.py"));
    }

    #[test]
    fn bash_with_nonzero_exit_is_failed() {
        let outcome = outcome_of(
            r#"{"type":"tool_use","part":{"tool":"bash","state":{"status":"completed","input":{"command":"false"},"output":"","metadata":{"exit":1}}}}"#,
        );
        assert_eq!(outcome, ToolOutcome::Failed);
    }

    #[test]
    fn api_error_keeps_status_code_and_retry_after() {
        let e = only(
            r#"{"type":"error","error":{"name":"APIError","data":{"message":"Rate limit reached for requests","statusCode":429,"isRetryable":true,"responseHeaders":{"Retry-After":"7"},"responseBody":"{\"error\":{\"code\":\"rate_limit_exceeded\"}}"}}}"#,
        );
        assert_eq!(
            e,
            WorkerEvent::Error {
                message: "Rate limit reached for requests (rate_limit_exceeded)".into(),
                status: Some(429),
                retry_after: Some(7)
            }
        );
    }

    #[test]
    fn kilo_string_error_is_read() {
        let e = only(r#"{"type":"error","error":"run ended without an assistant message"}"#);
        assert!(matches!(e, WorkerEvent::Error { message, .. } if message.contains("without")));
    }

    #[test]
    fn garbage_torn_and_unknown_lines_yield_nothing() {
        assert_no_events(
            &mut LineByLine(parse_line),
            &[
                "",
                "hello world",
                r#"{"type":"tool_use","part":{"tool":"re"#,
                r#"{"type":"done","reason":"idle"}"#,
                "[1,2,3]",
            ],
        );
    }

    #[test]
    fn long_commands_are_summarised_on_one_line() {
        let s = summarize_input(&serde_json::json!({"command": "a\nb  c"}));
        assert_eq!(s, "a b c");
        let long = "x".repeat(400);
        assert_eq!(
            summarize_input(&serde_json::json!({ "command": long }))
                .chars()
                .count(),
            160
        );
    }
}
