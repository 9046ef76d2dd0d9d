//! Settings of CLIs that read their configuration only from files (Qwen Code, Gemini CLI, Cursor,
//! Antigravity): reading the user's own and merging Pitroom's over them, and linking the user's
//! login files into the private home. The adapter returns the result as [`crate::SettingsFile`]s,
//! which the engine writes (mode 0600) before the launch.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::events::Mode;

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

/// Removes from a user's settings the keys that could loosen a mode: `keys` at the top level,
/// `tool_keys` under `tools` (Gemini CLI and its fork Qwen Code keep their tool lists there).
pub(crate) fn remove_keys(settings: &mut Map<String, Value>, keys: &[&str], tool_keys: &[&str]) {
    for key in keys {
        settings.remove(*key);
    }
    if let Some(Value::Object(tools)) = settings.get_mut("tools") {
        for key in tool_keys {
            tools.remove(*key);
        }
    }
}

/// The model a user's settings name (`model.name`, in Gemini CLI's and Qwen Code's format).
pub(crate) fn configured_model(settings: &Map<String, Value>) -> Option<&str> {
    settings
        .get("model")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
}

/// The tools a CLI's floor takes away from a run: `always` from every run, `web` from a run
/// without `--web`, `edit` from a mode that may not edit.
pub(crate) struct ToolFloor {
    pub always: &'static [&'static str],
    pub web: &'static [&'static str],
    pub edit: &'static [&'static str],
}

impl ToolFloor {
    /// The tools taken away from a run in `mode`.
    pub(crate) fn removed(&self, mode: Mode, web: bool) -> Vec<&'static str> {
        let mut tools = self.always.to_vec();
        if !web {
            tools.extend(self.web);
        }
        if !mode.may_edit() {
            tools.extend(self.edit);
        }
        tools
    }
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
