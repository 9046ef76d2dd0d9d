//! Settings of CLIs that read their configuration only from files (Qwen Code, Gemini CLI, Cursor,
//! Antigravity): reading the user's own and merging Pitroom's over them. The adapter returns the
//! result as [`crate::SettingsFile`]s, which the engine writes (mode 0600) before the launch.

use std::path::Path;

use serde_json::{Map, Value};

/// Reads a JSON settings file; a missing or unparsable one counts as empty (the CLI would
/// refuse a broken file, and Pitroom must not pass it on).
pub(crate) fn read_json_object(path: &Path) -> Map<String, Value> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| match v {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default()
}
