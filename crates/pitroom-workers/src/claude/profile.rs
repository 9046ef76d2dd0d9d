//! What Claude Code may do in each mode: the built-in tools it is offered, the permission rules
//! handed over with `--settings` (allow and deny only: `dontAsk` refuses everything not allowed,
//! so no call can wait for an answer), and the user's provider settings carried over.

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::adapter::InvocationRequest;
use crate::events::Mode;

/// Tools that only read.
const READ_TOOLS: &[&str] = &["Read", "Grep", "Glob"];
/// Tools that edit files or run commands.
const WRITE_TOOLS: &[&str] = &["Edit", "Write", "NotebookEdit", "Bash"];
/// Tools that reach the web, offered only with `--web`.
const WEB_TOOLS: &[&str] = &["WebFetch", "WebSearch"];

/// Keys of the user's `settings.json` that reach their model: provider variables, a key
/// helper, the model. Hooks, permissions, MCP servers and plugins stay behind.
const PROVIDER_KEYS: &[&str] = &[
    "env",
    "apiKeyHelper",
    "model",
    "awsAuthRefresh",
    "awsCredentialExport",
    "forceLoginMethod",
    "forceLoginOrgUUID",
];

/// The built-in tools offered in `mode` (the `--tools` list).
pub fn tools(mode: Mode, web: bool) -> Vec<&'static str> {
    let mut tools = READ_TOOLS.to_vec();
    if mode.may_edit() {
        tools.extend(WRITE_TOOLS);
    }
    if web {
        tools.extend(WEB_TOOLS);
    }
    tools
}

/// The permission rules for `mode`: every offered tool allowed, secrets and history-changing
/// commands denied (deny wins over allow).
pub fn permissions(mode: Mode, web: bool) -> Value {
    let allow: Vec<String> = tools(mode, web).iter().map(|t| t.to_string()).collect();
    let mut deny: Vec<String> = Vec::new();
    for pattern in crate::secret_files::anywhere_globs() {
        for tool in ["Read", "Edit", "Write"] {
            deny.push(format!("{tool}({pattern})"));
        }
    }
    // Claude matches a command by its leading words: `Bash(prefix:*)`.
    for pattern in crate::denied::patterns() {
        deny.push(format!("Bash({}:*)", crate::denied::words(&pattern)));
    }
    json!({"allow": allow, "deny": deny, "defaultMode": "dontAsk"})
}

/// The user's Claude Code config dir: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn user_config_dir(req: &InvocationRequest) -> Option<PathBuf> {
    req.dir_from_env("CLAUDE_CONFIG_DIR", ".claude")
}

/// The settings passed with `--settings`: the user's provider keys, then the mode's
/// permissions. A user file that is not JSON is skipped (Claude Code itself ignores it).
pub fn settings(req: &InvocationRequest) -> Value {
    let mut settings = Map::new();
    let user = user_config_dir(req)
        .and_then(|dir| std::fs::read_to_string(dir.join("settings.json")).ok())
        .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    if let Some(Value::Object(user)) = user {
        for key in PROVIDER_KEYS {
            if let Some(value) = user.get(*key) {
                settings.insert((*key).to_string(), value.clone());
            }
        }
    }
    settings.insert("permissions".into(), permissions(req.mode, req.web));
    settings.insert("enableAllProjectMcpServers".into(), false.into());
    Value::Object(settings)
}

/// The user's login (`.credentials.json`, written by `claude login`), when there is one.
pub fn user_credentials(req: &InvocationRequest) -> Option<PathBuf> {
    let file = user_config_dir(req)?.join(".credentials.json");
    file.is_file().then_some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_file_of_the_one_policy_is_denied_to_read_edit_and_write() {
        use crate::secret_files::check::assert_tool_rules_refuse_exactly_the_secrets;
        assert_tool_rules_refuse_exactly_the_secrets(
            "claude",
            |_| &["Read", "Edit", "Write"],
            deny_rules,
        );
    }

    /// The mode's deny rules (no web).
    fn deny_rules(mode: Mode) -> Vec<String> {
        serde_json::from_value(permissions(mode, false)["deny"].clone()).expect("deny rules")
    }

    fn request(mode: Mode, home: &std::path::Path) -> InvocationRequest {
        InvocationRequest::for_test(mode, vec![("HOME", home.display().to_string())])
    }

    #[test]
    fn read_mode_offers_no_tool_that_writes_or_runs_commands() {
        let read = tools(Mode::Read, false);
        assert_eq!(read, vec!["Read", "Grep", "Glob"]);
        assert!(tools(Mode::Write, false).contains(&"Edit"));
        assert!(tools(Mode::Read, true).contains(&"WebFetch"));
    }

    #[test]
    fn secrets_and_history_commands_are_denied_in_every_mode() {
        for mode in [Mode::Read, Mode::Write] {
            let deny = deny_rules(mode);
            assert!(deny.iter().any(|r| r == "Read(**/.env)"), "{deny:?}");
            assert!(deny.iter().any(|r| r == "Bash(git commit:*)"));
            let text = permissions(mode, false).to_string();
            assert!(
                !text.contains("bypassPermissions") && !text.contains("\"ask\""),
                "{text}"
            );
        }
    }

    #[test]
    fn the_users_provider_settings_survive_and_their_permissions_do_not() {
        let home = tempfile::tempdir().unwrap();
        crate::testing::write_file(
            &home.path().join(".claude/settings.json"),
            r#"{"env": {"ANTHROPIC_BASE_URL": "http://gw"}, "model": "sonnet",
                "permissions": {"allow": ["Bash(rm:*)"], "defaultMode": "bypassPermissions"},
                "hooks": {"PreToolUse": []}}"#,
        );
        let s = settings(&request(Mode::Read, home.path()));
        assert_eq!(s["env"]["ANTHROPIC_BASE_URL"], "http://gw");
        assert_eq!(s["model"], "sonnet");
        assert_eq!(s["permissions"]["defaultMode"], "dontAsk");
        assert!(s.get("hooks").is_none());
        assert!(!s.to_string().contains("\"Bash(rm:*)\""), "{s}");
    }
}
