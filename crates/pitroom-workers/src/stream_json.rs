//! Events of Claude Code's `stream-json` shape that other CLIs copy (Qwen Code, Cursor CLI): the
//! `system` event of subtype `init` that opens a run, and the final `result`'s failure flags.

use serde_json::Value;

use crate::events::{session_started, WorkerEvent};
use crate::json::str_at;

/// The events of a `system` event: for the `init` one, the session, its model and the first
/// step; other subtypes carry none.
pub(crate) fn init(value: &Value) -> Vec<WorkerEvent> {
    if str_at(value, &["subtype"]) != Some("init") {
        return Vec::new();
    }
    str_at(value, &["session_id"])
        .map(|id| session_started(id, str_at(value, &["model"])))
        .unwrap_or_default()
}

/// Whether a `result` event reports a failed run: `is_error`, or a subtype other than
/// `success`.
pub(crate) fn result_failed(value: &Value) -> bool {
    value.get("is_error").and_then(Value::as_bool) == Some(true)
        || str_at(value, &["subtype"]).is_some_and(|s| s != "success")
}
