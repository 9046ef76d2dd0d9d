//! The host packages — Claude Code plugin and marketplace, Codex plugin, Gemini CLI extension —
//! generated from one source so their versions, descriptions, skills, hooks and MCP entries
//! never drift. The files are committed; a test fails when they differ from what this module
//! generates, and `PITROOM_WRITE_PACKAGES=1 cargo test -p pitroom --bin pitroom packages`
//! rewrites them.
//!
//! Layout, from the formats' rules (docs/agents.md):
//!
//! - `plugins/pitroom/` is the Claude Code plugin and the Codex plugin (`.claude-plugin/` and
//!   `.codex-plugin/` side by side). Hosts copy a plugin's folder into their cache on install,
//!   so it holds only the plugin: its own copy of the skills, its hooks.
//! - `plugins/pitroom/hooks/hooks.json` is Claude Code's, found by convention and *not* named in
//!   the manifest (naming it there makes Claude Code load it twice, an error). Codex replaces the
//!   default hooks file with the one its manifest names, so it gets `hooks/codex-hooks.json`.
//! - `.claude-plugin/marketplace.json` at the root is the marketplace (Claude Code's, which
//!   Codex reads too), listing `./plugins/pitroom`.
//! - The root is the Gemini CLI extension (`gemini extensions install <repo url>` reads the
//!   root): `gemini-extension.json`, its context file, `hooks/hooks.json` in Gemini's dialect
//!   (AfterTool, `run_shell_command`, milliseconds) and the `skills/` folder itself.

use serde_json::{json, Map, Value};

use super::skills::SKILLS;

pub(crate) const NAME: &str = "pitroom";
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");
pub(crate) const DESCRIPTION: &str = "Hand bounded work - reading and mapping code, small fixes, reviews - to cheap worker agent CLIs run headless, and get back a verified answer, the exact diff and a receipt.";
const AUTHOR: &str = "Pitroom contributors";
const KEYWORDS: &[&str] = &["delegation", "workers", "subagents", "code-review", "mcp"];

/// The plugin folder (Claude Code and Codex), from the repository root.
pub(crate) const PLUGIN_DIR: &str = "plugins/pitroom";

/// Runs a Pitroom subcommand from a hook only when `pitroom` is on PATH, so a host whose user
/// removed the binary starts quietly instead of failing every hook.
fn hook_command(subcommand: &str) -> String {
    format!("if command -v pitroom >/dev/null 2>&1; then pitroom {subcommand}; fi")
}

/// Codex and Gemini CLI start MCP servers with a cleared environment; these are the variables
/// the workers may need (the same list `pitroom mcp --print-config` uses).
fn pass_through() -> Vec<String> {
    pitroom_mcp::hosts::pass_through()
}

/// One generated file: its path from the repository root and its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PackageFile {
    pub path: String,
    pub contents: String,
}

/// Every generated file.
pub(crate) fn files() -> Vec<PackageFile> {
    let plugin = |rel: &str| format!("{PLUGIN_DIR}/{rel}");
    let mut files = vec![
        json_file(
            ".claude-plugin/marketplace.json".into(),
            claude_marketplace(),
        ),
        json_file(plugin(".claude-plugin/plugin.json"), claude_plugin()),
        json_file(plugin("hooks/hooks.json"), claude_hooks()),
        json_file(plugin(".codex-plugin/plugin.json"), codex_plugin()),
        json_file(plugin("hooks/codex-hooks.json"), codex_hooks()),
        PackageFile {
            path: plugin("README.md"),
            contents: plugin_readme(),
        },
        json_file("gemini-extension.json".into(), gemini_extension()),
        json_file("hooks/hooks.json".into(), gemini_hooks()),
        PackageFile {
            path: GEMINI_CONTEXT.into(),
            contents: gemini_context(),
        },
    ];
    for skill in SKILLS {
        files.push(PackageFile {
            path: plugin(&format!("skills/{}/SKILL.md", skill.name)),
            contents: skill.text.to_string(),
        });
    }
    files
}

fn json_file(path: String, value: Value) -> PackageFile {
    let mut contents = serde_json::to_string_pretty(&value).unwrap_or_default();
    contents.push('\n');
    PackageFile { path, contents }
}

/// A plugin manifest: the fields Claude Code's and Codex's share (`name` to `keywords`, in this
/// order), after `head` and before the host's own fields (`tail`); both are JSON objects.
fn plugin_manifest(head: Value, tail: Value) -> Value {
    let common = json!({
        "name": NAME,
        "version": VERSION,
        "description": DESCRIPTION,
        "author": {"name": AUTHOR},
        "license": "MIT",
        "keywords": KEYWORDS,
    });
    let mut manifest = Map::new();
    for part in [head, common, tail] {
        if let Value::Object(fields) = part {
            manifest.extend(fields);
        }
    }
    Value::Object(manifest)
}

fn claude_plugin() -> Value {
    plugin_manifest(
        json!({"$schema": "https://json.schemastore.org/claude-code-plugin-manifest.json"}),
        json!({"mcpServers": {"pitroom": {"command": "pitroom", "args": ["mcp"]}}}),
    )
}

fn claude_marketplace() -> Value {
    json!({
        "name": NAME,
        "owner": {"name": AUTHOR},
        "metadata": {"description": DESCRIPTION, "version": VERSION},
        "plugins": [{
            "name": NAME,
            "source": format!("./{PLUGIN_DIR}"),
            "description": DESCRIPTION,
            "version": VERSION,
            "category": "development",
            "keywords": KEYWORDS
        }]
    })
}

fn claude_hooks() -> Value {
    json!({
        "description": "Pitroom: at session start, that Pitroom is installed and how to delegate (the using-pitroom skill); after a Bash command that ran pitroom, a card per run it started, ended or applied; at the end of a turn, the review gate when the config enables it (review_gate = true).",
        "hooks": with_review_gate(hooks("PostToolUse", "Bash", 10)),
    })
}

fn codex_hooks() -> Value {
    json!({"hooks": with_review_gate(hooks("PostToolUse", "^Bash$", 10))})
}

/// Claude Code and Codex end a turn with a Stop hook whose `{"decision":"block","reason":…}`
/// continues the agent with the reason: the review gate's place. Every user of the plugin gets
/// the hook, so it runs `--if-enabled`: nothing happens unless the config says
/// `review_gate = true`. The review inside may take 10 minutes; the host waits 15 (seconds
/// here, in both hosts' unit).
fn with_review_gate(mut events: Map<String, Value>) -> Map<String, Value> {
    events.insert(
        "Stop".into(),
        json!([{"hooks": [{
            "type": "command",
            "command": hook_command("hook review-gate --if-enabled"),
            "timeout": 900
        }]}]),
    );
    events
}

/// Gemini CLI's dialect: AfterTool, its shell tool's name, timeouts in milliseconds.
fn gemini_hooks() -> Value {
    json!({"hooks": hooks("AfterTool", "run_shell_command", 10_000)})
}

/// The hooks every host gets: the session-start hook, and the card hook after the host's shell
/// tool (`after_tool` names the event, `shell_tool` matches the tool) ran; each may take 10 s,
/// in the host's unit (`timeout`).
fn hooks(after_tool: &str, shell_tool: &str, timeout: u64) -> Map<String, Value> {
    let hook = |command: &str| {
        json!([{
            "type": "command",
            "command": hook_command(command),
            "timeout": timeout
        }])
    };
    let mut events = Map::new();
    events.insert(
        "SessionStart".into(),
        json!([{"hooks": hook("hook session-start")}]),
    );
    events.insert(
        after_tool.into(),
        json!([{"matcher": shell_tool, "hooks": hook("hook-card")}]),
    );
    events
}

fn plugin_readme() -> String {
    format!(
        "# Pitroom plugin (Claude Code and Codex)\n\n\
         {DESCRIPTION}\n\n\
         This folder is generated by `crates/pitroom/src/integrations/packages.rs` (the skills are \
         copies of the repository's `skills/`); do not edit it by hand. It needs the `pitroom` \
         binary on PATH. Set-up per host and what each hook does: `docs/agents.md`.\n\n\
         - Claude Code: `/plugin marketplace add <owner>/pitroom`, then `/plugin install pitroom@pitroom`.\n\
         - Codex: `codex plugin marketplace add <owner>/pitroom`, then `codex plugin add pitroom@pitroom`; \
         review and trust its hooks in `/hooks` (Codex skips untrusted plugin hooks).\n"
    )
}

/// Codex asks before a tool that is not read-only, and `codex exec` refuses it: the tools that
/// start or review runs are approved (the list `pitroom mcp --print-config codex` uses).
fn codex_tool_approvals() -> Value {
    pitroom_mcp::hosts::CODEX_APPROVED_TOOLS
        .iter()
        .map(|tool| (tool.to_string(), json!({"approval_mode": "approve"})))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn codex_plugin() -> Value {
    plugin_manifest(
        json!({}),
        json!({
            "skills": "./skills/",
            "hooks": "./hooks/codex-hooks.json",
            "mcpServers": {"pitroom": {
                "command": "pitroom",
                "args": ["mcp"],
                "env_vars": pass_through(),
                "startup_timeout_sec": 20,
                // Every tool call returns within 540 s (a still-running run comes back as a handle).
                "tool_timeout_sec": 600,
                "tools": codex_tool_approvals()
            }},
            "interface": {
                "displayName": "Pitroom",
                "shortDescription": "Delegate bounded work to cheap worker agents",
                "longDescription": DESCRIPTION,
                "developerName": AUTHOR,
                "category": "Coding",
                "defaultPrompt": [
                    "Map this repository with a Pitroom worker: entry points, modules, tests",
                    "Have a Pitroom worker review my uncommitted change"
                ]
            }
        }),
    )
}

pub(crate) const GEMINI_CONTEXT: &str = "gemini-context.md";

fn gemini_extension() -> Value {
    let env: serde_json::Map<String, Value> = pass_through()
        .iter()
        // `${VAR:-}`: an unset variable becomes empty instead of the literal text `$VAR`.
        .map(|v| (v.to_string(), Value::String(format!("${{{v}:-}}"))))
        .collect();
    json!({
        "name": NAME,
        "version": VERSION,
        "description": DESCRIPTION,
        "contextFileName": GEMINI_CONTEXT,
        "mcpServers": {"pitroom": {
            "command": "pitroom",
            "args": ["mcp"],
            "timeout": 600_000,
            "env": env
        }}
    })
}

/// The Gemini CLI context file: what the extension adds, and the skills it ships. (The
/// session-start hook adds the using-pitroom text itself.)
fn gemini_context() -> String {
    // Names only: Gemini CLI lists each skill's description to the model itself.
    let names: Vec<String> = SKILLS.iter().map(|s| format!("`{}`", s.name)).collect();
    format!(
        "# Pitroom\n\n\
         Pitroom is installed: the `pitroom` command hands bounded work (reading and mapping code, \
         small fixes, reviews) to a cheap worker agent CLI and returns the worker's answer with \
         checked path:line references, the exact diff it made, and a receipt. The same operations \
         are the `pitroom` MCP server's tools (`mcp_pitroom_*`).\n\n\
         The extension's skills (activate one when its description fits the task): {}.\n\n\
         Gemini CLI starts MCP servers with only a few safe variables; the extension passes these \
         through to the workers when they are set: {}.\n",
        names.join(", "),
        pass_through().join(", ")
    )
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn repo_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    #[test]
    fn committed_host_packages_match_the_generator() {
        let root = repo_root();
        let rewrite = std::env::var_os(pitroom_env::PITROOM_WRITE_PACKAGES).is_some();
        let mut stale = Vec::new();
        for file in files() {
            let path = root.join(&file.path);
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            if committed == file.contents {
                continue;
            }
            if rewrite {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).expect("package dir");
                }
                std::fs::write(&path, &file.contents).expect("write package file");
            } else {
                stale.push(file.path);
            }
        }
        assert!(
            stale.is_empty(),
            "{stale:?} differ from what integrations/packages.rs generates; run \
             PITROOM_WRITE_PACKAGES=1 cargo test -p pitroom --bin pitroom packages"
        );
    }

    #[test]
    fn the_plugin_ships_exactly_the_skills_and_nothing_stale() {
        let dir = repo_root().join(PLUGIN_DIR).join("skills");
        let mut found: Vec<String> = std::fs::read_dir(&dir)
            .expect("plugin skills")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        found.sort();
        let mut shipped: Vec<String> = SKILLS.iter().map(|s| s.name.to_string()).collect();
        shipped.sort();
        assert_eq!(found, shipped, "remove skills the plugin no longer ships");
    }

    #[test]
    fn every_manifest_carries_the_crate_version() {
        for file in files().iter().filter(|f| f.path.ends_with(".json")) {
            let v: Value = serde_json::from_str(&file.contents).expect("json");
            let versions = [
                &v["version"],
                &v["metadata"]["version"],
                &v["plugins"][0]["version"],
            ];
            for found in versions.into_iter().filter(|x| !x.is_null()) {
                assert_eq!(found, VERSION, "{}", file.path);
            }
        }
    }

    #[test]
    fn the_claude_manifest_names_no_hooks_file() {
        // hooks/hooks.json is found by convention; naming it too is a load error.
        assert!(claude_plugin().get("hooks").is_none());
        let events: Vec<String> = claude_hooks()["hooks"]
            .as_object()
            .expect("hooks")
            .keys()
            .cloned()
            .collect();
        assert_eq!(events, vec!["SessionStart", "PostToolUse", "Stop"]);
    }

    #[test]
    fn the_plugins_review_gate_stays_off_unless_the_config_enables_it() {
        for hooks in [claude_hooks(), codex_hooks()] {
            let stop = &hooks["hooks"]["Stop"][0]["hooks"][0];
            let command = stop["command"].as_str().expect("command");
            assert!(
                command.ends_with("pitroom hook review-gate --if-enabled; fi"),
                "{command}"
            );
            assert_eq!(
                stop["timeout"], 900,
                "seconds: longer than the review's 10 minutes"
            );
        }
        // Gemini CLI has no Stop hook that continues the agent with a reason.
        assert!(gemini_hooks()["hooks"].get("Stop").is_none());
    }

    #[test]
    fn the_marketplace_lists_the_plugin_folder() {
        let v = claude_marketplace();
        assert_eq!(v["plugins"][0]["source"], format!("./{PLUGIN_DIR}"));
        assert_eq!(v["plugins"][0]["name"], claude_plugin()["name"]);
    }

    #[test]
    fn gemini_hooks_use_its_own_events_tool_name_and_milliseconds() {
        let v = gemini_hooks();
        assert!(v["hooks"].get("PostToolUse").is_none());
        let card = &v["hooks"]["AfterTool"][0];
        assert_eq!(card["matcher"], "run_shell_command");
        assert!(card["hooks"][0]["timeout"]
            .as_u64()
            .is_some_and(|t| t >= 1000));
    }

    #[test]
    fn the_codex_plugin_passes_the_worker_keys_and_sets_a_tool_timeout() {
        let v = codex_plugin();
        let server = &v["mcpServers"]["pitroom"];
        assert_eq!(server["args"], json!(["mcp"]));
        assert!(server["tool_timeout_sec"]
            .as_u64()
            .is_some_and(|t| t >= 540));
        let vars = server["env_vars"].as_array().expect("env_vars");
        assert!(vars.iter().any(|x| x == "OPENROUTER_API_KEY"));
        assert!(vars.iter().any(|x| x == "PITROOM_OPENCODE_BIN"));
        assert_eq!(server["tools"]["pitroom_run"]["approval_mode"], "approve");
        assert!(server["tools"].get("pitroom_apply").is_none());
    }

    #[test]
    fn the_gemini_context_lists_every_skill() {
        let text = gemini_context();
        for skill in SKILLS {
            assert!(
                text.contains(&format!("`{}`", skill.name)),
                "{}",
                skill.name
            );
        }
    }

    #[test]
    fn the_gemini_mcp_server_name_has_no_underscore() {
        // Gemini CLI names tools mcp_<server>_<tool>; an underscore in the server breaks that.
        let v = gemini_extension();
        for name in v["mcpServers"].as_object().expect("servers").keys() {
            assert!(!name.contains('_'), "{name}");
        }
    }
}
