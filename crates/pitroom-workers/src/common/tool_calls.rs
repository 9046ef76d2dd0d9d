//! How the CLIs whose tools take Gemini CLI's inputs (Gemini CLI and its fork Qwen Code, and
//! Cursor and Antigravity, which name their inputs alike) report a finished tool call.

use serde_json::Value;

use crate::events::{ToolOutcome, WorkerEvent};
use crate::json::str_at;
use crate::summary::{input_summary, one_line, ERROR_CHARS};

/// The fields of a tool's input that tell most about the call, most telling first.
const INPUT_KEYS: &[&str] = &[
    "file_path",
    "absolute_path",
    "path",
    "pattern",
    "command",
    "url",
    "query",
    "dir_path",
];

/// The most telling field of a tool's input, on one line.
pub(crate) fn summarize_input(input: &Value) -> String {
    input_summary(input, INPUT_KEYS)
}

/// The event of a finished call, for Qwen Code and Gemini CLI (a fork and its origin, whose
/// tools take the same inputs): the input summarized, the error text of a call that did not
/// succeed on one line, and the `file_path` a successful call of one of `edit_tools` edited.
pub(crate) fn tool_call_event(
    name: String,
    input: &Value,
    outcome: ToolOutcome,
    error: &str,
    edit_tools: &[&str],
) -> WorkerEvent {
    let succeeded = outcome == ToolOutcome::Ok;
    let edited = (succeeded && edit_tools.contains(&name.as_str()))
        .then(|| str_at(input, &["file_path"]).map(str::to_string))
        .flatten();
    WorkerEvent::ToolCall {
        summary: summarize_input(input),
        name,
        outcome,
        error: (!succeeded).then(|| one_line(error, ERROR_CHARS)),
        edited,
    }
}
