//! Claude Code's settings that `install` writes into `settings.json`, keeping the rest of the
//! file: the `statusLine` of `--statusline` (the user's own status command kept behind
//! `--then`), and the `Stop` hook of `--review-gate` (added beside the user's own hooks).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::manifest::{ensure_dir, io_error, write_atomically};
use super::{hash, Entry, Layout, Manifest};

/// What install sets in Claude Code's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SettingsWant {
    pub statusline: bool,
    pub review_gate: bool,
}

/// The command of the review gate's Stop hook.
pub(super) const REVIEW_GATE_COMMAND: &str = "pitroom hook review-gate";

/// The review gate's entry in `hooks.Stop`. The host may wait 15 minutes for it: the review
/// inside it is limited to 10 (docs/review-gate.md).
fn review_gate_entry() -> Value {
    json!({"hooks": [{"type": "command", "command": REVIEW_GATE_COMMAND, "timeout": 900}]})
}

/// Adds the review gate's Stop hook to `settings`, unless a Stop hook already runs it.
fn add_review_gate(settings: &mut serde_json::Map<String, Value>) -> Result<(), String> {
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("its `hooks` is not a JSON object")?;
    let stop = hooks
        .entry("Stop")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or("its `hooks.Stop` is not a JSON array")?;
    let present = stop.iter().any(|entry| {
        entry["hooks"].as_array().into_iter().flatten().any(|h| {
            h["command"]
                .as_str()
                .is_some_and(|c| c.contains(REVIEW_GATE_COMMAND))
        })
    });
    if !present {
        stop.push(review_gate_entry());
    }
    Ok(())
}

/// The settings file's text with `want` applied to `original` (`None`: there is no file), or
/// why it cannot be (the caller names the file).
pub(super) fn settings_text(
    original: Option<&[u8]>,
    want: SettingsWant,
) -> Result<Vec<u8>, String> {
    let mut settings: Value = match original {
        Some(raw) => serde_json::from_slice(raw)
            .map_err(|e| format!("is not valid JSON ({e}); fix it, then run install again"))?,
        None => json!({}),
    };
    let Some(object) = settings.as_object_mut() else {
        return Err("does not hold a JSON object".into());
    };
    if want.statusline {
        let line = statusline_setting(object.get("statusLine"));
        object.insert("statusLine".into(), line);
    }
    if want.review_gate {
        add_review_gate(object)
            .map_err(|e| format!("cannot take the review gate's Stop hook: {e}"))?;
    }
    let mut text = serde_json::to_vec_pretty(&settings).map_err(|e| e.to_string())?;
    text.push(b'\n');
    Ok(text)
}

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
    want: SettingsWant,
    manifest: &mut Manifest,
    backup: Option<PathBuf>,
) -> Result<(), String> {
    let original = match std::fs::read(path) {
        Ok(raw) => Some(raw),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(io_error("read", path, &e)),
    };
    let text = settings_text(original.as_deref(), want)
        .map_err(|e| format!("{} {e}", layout.show(path)))?;
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

    const BOTH: SettingsWant = SettingsWant {
        statusline: true,
        review_gate: true,
    };

    #[test]
    fn the_review_gate_joins_the_users_own_stop_hooks_once() {
        let theirs = br#"{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "~/bin/notify"}]}],
            "PreToolUse": []}}"#;
        let gate = SettingsWant {
            statusline: false,
            review_gate: true,
        };
        let text = settings_text(Some(theirs), gate).expect("settings");
        let v: Value = serde_json::from_slice(&text).expect("json");
        assert_eq!(v["model"], "opus");
        assert!(v.get("statusLine").is_none());
        let stop = v["hooks"]["Stop"].as_array().expect("Stop");
        assert_eq!(stop.len(), 2, "{v:#}");
        assert_eq!(stop[0]["hooks"][0]["command"], "~/bin/notify");
        assert_eq!(stop[1]["hooks"][0]["command"], "pitroom hook review-gate");
        assert_eq!(stop[1]["hooks"][0]["timeout"], 900);
        assert!(v["hooks"]["PreToolUse"].is_array());
        // Applied again, nothing changes.
        assert_eq!(settings_text(Some(&text), gate).expect("again"), text);
        let both = settings_text(None, BOTH).expect("fresh");
        let v: Value = serde_json::from_slice(&both).expect("json");
        assert_eq!(v["statusLine"]["command"], "pitroom statusline");
        assert_eq!(v["hooks"]["Stop"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn settings_whose_hooks_are_not_an_object_are_refused_not_overwritten() {
        let odd = br#"{"hooks": ["x"]}"#;
        let err = settings_text(Some(odd), BOTH).expect_err("refused");
        assert!(err.contains("`hooks` is not a JSON object"), "{err}");
        let err = settings_text(Some(b"[1]"), BOTH).expect_err("refused");
        assert!(err.contains("does not hold a JSON object"), "{err}");
    }
}
