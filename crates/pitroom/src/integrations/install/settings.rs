//! Claude Code's status line: the `statusLine` setting `install --statusline` writes into
//! `settings.json`, keeping the rest of the file and the user's own status command.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::manifest::{ensure_dir, io_error, write_atomically};
use super::{hash, Entry, Layout, Manifest};

/// The status-line setting, and the command it runs (the user's own one kept behind `--then`).
pub(super) fn statusline_setting(existing: Option<&Value>) -> Value {
    let theirs = existing
        .and_then(|s| s["command"].as_str())
        .filter(|c| !c.trim_start().starts_with("pitroom statusline"));
    let command = match theirs {
        Some(c) => format!("pitroom statusline --then {}", shell_quote(c)),
        None => "pitroom statusline".into(),
    };
    serde_json::json!({"type": "command", "command": command, "padding": 0, "refreshInterval": 5})
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

pub(super) fn write_settings(
    layout: &Layout,
    path: &Path,
    manifest: &mut Manifest,
    backup: Option<PathBuf>,
) -> Result<(), String> {
    let original = match std::fs::read(path) {
        Ok(raw) => Some(raw),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(io_error("read", path, &e)),
    };
    let mut settings: Value = match &original {
        Some(raw) => serde_json::from_slice(raw).map_err(|e| {
            format!(
                "{} is not valid JSON ({e}); fix it, then run install again",
                layout.show(path)
            )
        })?,
        None => serde_json::json!({}),
    };
    let Some(object) = settings.as_object_mut() else {
        return Err(format!("{} does not hold a JSON object", layout.show(path)));
    };
    let line = statusline_setting(object.get("statusLine"));
    object.insert("statusLine".into(), line);
    let mut text = serde_json::to_vec_pretty(&settings).map_err(|e| e.to_string())?;
    text.push(b'\n');
    let h = hash(&text);
    match (original, backup) {
        (Some(raw), Some(backup)) => {
            if let Some(dir) = backup.parent() {
                ensure_dir(dir, manifest)?;
            }
            std::fs::write(&backup, &raw).map_err(|e| io_error("back up", &backup, &e))?;
            write_atomically(path, &text)?;
            manifest.entries.push(Entry::Edited {
                path: path.to_path_buf(),
                backup,
                hash: h,
            });
        }
        (Some(_), None) => {
            // Ours from an earlier install (the step said so): refresh its hash.
            write_atomically(path, &text)?;
            if let Some(Entry::File { hash, .. } | Entry::Edited { hash, .. }) =
                manifest.entries.iter_mut().rev().find(|e| e.path() == path)
            {
                *hash = h;
            }
        }
        (None, _) => {
            write_atomically(path, &text)?;
            manifest.entries.push(Entry::File {
                path: path.to_path_buf(),
                hash: h,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_own_status_command_is_kept_behind_then() {
        let existing = serde_json::json!({"type": "command", "command": "~/bin/my line's"});
        let v = statusline_setting(Some(&existing));
        assert_eq!(
            v["command"],
            r"pitroom statusline --then '~/bin/my line'\''s'"
        );
        let ours = serde_json::json!({"command": "pitroom statusline"});
        assert_eq!(
            statusline_setting(Some(&ours))["command"],
            "pitroom statusline"
        );
        assert_eq!(statusline_setting(None)["refreshInterval"], 5);
    }
}
