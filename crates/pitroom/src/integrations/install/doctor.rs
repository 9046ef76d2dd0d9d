//! What `doctor` says about the skills: where they are linked, and where a host would load
//! them twice (from its Pitroom plugin and from a linked skills dir).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Host, Layout, Manifest};
use crate::integrations::skills::INTRODUCTION;

/// `doctor`'s skills line: a warning when they would load twice, else where they are.
pub(crate) fn doctor_skills() -> (bool, String) {
    let layout = match Layout::from_env(&crate::commands::env_lookup) {
        Ok(l) => l,
        Err(e) => return (false, e),
    };
    let twice = double_loads(&layout);
    if !twice.is_empty() {
        return (false, twice.join("; "));
    }
    let installed = match Manifest::load(&layout.manifest()) {
        Ok(Some(m)) => m
            .hosts
            .iter()
            .map(|h| h.name())
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    };
    if installed.is_empty() {
        (
            true,
            "not linked (a host plugin, or `pitroom install`, adds them)".into(),
        )
    } else {
        (true, format!("linked for {installed} by `pitroom install`"))
    }
}

/// For `doctor`: places where the skills would load twice, one line each.
pub(crate) fn double_loads(layout: &Layout) -> Vec<String> {
    let linked = |dir: &Path| std::fs::symlink_metadata(dir.join(INTRODUCTION)).is_ok();
    let mut out = Vec::new();
    if claude_plugin_installed(layout) && linked(&layout.skills_dir(Host::Claude)) {
        out.push(format!(
            "Claude Code loads the skills twice: from the pitroom plugin and from {}; run `pitroom uninstall` or disable the plugin",
            layout.show(&layout.skills_dir(Host::Claude))
        ));
    }
    if codex_plugin_installed(layout) && linked(&layout.agents_skills) {
        out.push(format!(
            "Codex lists the skills twice: from the pitroom plugin and from {}; run `pitroom uninstall` or remove the plugin",
            layout.show(&layout.agents_skills)
        ));
    }
    if layout.home.join(".gemini/extensions/pitroom").exists() && linked(&layout.agents_skills) {
        out.push(format!(
            "Gemini CLI has the skills from the pitroom extension and from {}; run `pitroom uninstall` or uninstall the extension",
            layout.show(&layout.agents_skills)
        ));
    }
    out
}

/// The plugin is enabled in the user's settings, or Claude Code recorded it as installed.
fn claude_plugin_installed(layout: &Layout) -> bool {
    let enabled = std::fs::read(layout.settings())
        .ok()
        .and_then(|raw| serde_json::from_slice::<Value>(&raw).ok())
        .and_then(|v| v["enabledPlugins"].as_object().cloned())
        .is_some_and(|m| {
            m.iter()
                .any(|(k, v)| k.starts_with("pitroom@") && v != &Value::Bool(false))
        });
    let recorded = std::fs::read_to_string(layout.claude.join("plugins/installed_plugins.json"))
        .is_ok_and(|t| t.contains("\"pitroom@"));
    enabled || recorded
}

fn codex_plugin_installed(layout: &Layout) -> bool {
    let cache = std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| layout.home.join(".codex"))
        .join("plugins/cache");
    std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .any(|m| m.path().join("pitroom").exists())
}
