//! Settings of CLIs that read their configuration only from files (Qwen Code, Gemini CLI, Cursor,
//! Antigravity): reading the user's own and merging Pitroom's over them, and linking the user's
//! login files into the private home. The adapter returns the result as [`crate::SettingsFile`]s,
//! which the engine writes (mode 0600) before the launch.

use std::path::{Path, PathBuf};

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

/// The links that make the user's login visible in a private home: `private_dir/NAME` to
/// `user_dir/NAME` for each of `names` that is a file there (none without a user dir), so the
/// CLI signs in as the user without reading the rest of their configuration.
pub(crate) fn credential_links(
    private_dir: &Path,
    user_dir: Option<PathBuf>,
    names: &[&str],
) -> Vec<(PathBuf, PathBuf)> {
    let Some(user) = user_dir else {
        return Vec::new();
    };
    names
        .iter()
        .map(|name| (private_dir.join(name), user.join(name)))
        .filter(|(_, target)| target.is_file())
        .collect()
}
