//! The `-c key=value` overrides handed to `codex exec`: the user's own model provider settings
//! (read from their `config.toml`, which the run itself ignores) and Pitroom's floor on top.

use std::path::{Path, PathBuf};

use crate::adapter::InvocationRequest;
use crate::events::Mode;

/// Top-level keys of the user's `config.toml` that choose and reach their model. Everything
/// else (MCP servers, plugins, hooks, profiles, sandbox and approval settings, notify commands)
/// stays behind: `--ignore-user-config` drops it.
const PROVIDER_KEYS: &[&str] = &[
    "model",
    "model_provider",
    "model_providers",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "model_context_window",
    "model_auto_compact_token_limit",
    "openai_base_url",
    "chatgpt_base_url",
    "forced_login_method",
    "forced_chatgpt_workspace_id",
    "cli_auth_credentials_store",
];

/// Codex's built-in provider ids: a user entry under one of these names would replace the
/// built-in definition, so Pitroom never writes one.
const BUILT_IN_PROVIDERS: &[&str] = &["openai", "oss", "ollama", "lmstudio"];

/// The reasoning efforts Codex 0.171 offers (it passes any value through unchecked).
pub const EFFORTS: &[&str] = &[
    "none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra",
];

/// The user's Codex home: `$CODEX_HOME`, else `~/.codex`.
pub fn user_codex_home(req: &InvocationRequest) -> Option<PathBuf> {
    req.dir_from_env("CODEX_HOME", ".codex")
}

/// The user's `config.toml`, parsed; `None` when absent. A file Codex itself would reject is an
/// error, so the run does not silently use other settings than the user expects.
pub fn user_config(req: &InvocationRequest) -> Result<Option<toml::Table>, String> {
    let Some(path) = user_codex_home(req).map(|h| h.join("config.toml")) else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    text.parse::<toml::Table>()
        .map(Some)
        .map_err(|e| format!("{} is not valid TOML: {e}", path.display()))
}

/// `key=value` overrides carrying the user's provider settings, in a stable order.
pub fn provider_overrides(user: &toml::Table) -> Vec<String> {
    let mut out = Vec::new();
    for key in PROVIDER_KEYS {
        if let Some(value) = user.get(*key) {
            flatten(key, value, &mut out);
        }
    }
    out
}

/// The provider a run uses: the user's `model_provider`, else Codex's default `openai`.
pub fn active_provider(user: Option<&toml::Table>) -> String {
    user.and_then(|u| u.get("model_provider"))
        .and_then(toml::Value::as_str)
        .unwrap_or("openai")
        .to_string()
}

/// Whether `id` is a provider the user defined (so its retry settings may be set).
pub fn is_user_provider(user: Option<&toml::Table>, id: &str) -> bool {
    !BUILT_IN_PROVIDERS.contains(&id)
        && user
            .and_then(|u| u.get("model_providers"))
            .and_then(toml::Value::as_table)
            .is_some_and(|p| p.contains_key(id))
}

/// Nested tables become dotted keys (`-c` splits its key on dots); keys that would not survive
/// that are skipped.
fn flatten(key: &str, value: &toml::Value, out: &mut Vec<String>) {
    match value {
        toml::Value::Table(table) => {
            for (sub, v) in table {
                if is_plain_key(sub) {
                    flatten(&format!("{key}.{sub}"), v, out);
                }
            }
        }
        leaf => out.push(format!("{key}={leaf}")),
    }
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Pitroom's floor, applied after the user's settings: Codex's own sandbox for the mode,
/// approvals never, no plugins, analytics, update checks or web search unless asked for, no
/// endless reconnects, and commands run without a login shell.
pub fn floor_overrides(mode: Mode, web: bool) -> Vec<String> {
    let sandbox = match mode {
        Mode::Read => "read-only",
        Mode::Write | Mode::Isolate => "workspace-write",
    };
    let web_search = if web { "live" } else { "disabled" };
    vec![
        format!("sandbox_mode=\"{sandbox}\""),
        "approval_policy=\"never\"".into(),
        "sandbox_workspace_write.network_access=false".into(),
        "features.plugins=false".into(),
        "analytics.enabled=false".into(),
        "features.unbounded_connection_retries=false".into(),
        "check_for_update_on_startup=false".into(),
        format!("web_search=\"{web_search}\""),
        "allow_login_shell=false".into(),
    ]
}

/// Retries capped to none for a user-defined provider: a failure surfaces in about a second
/// instead of after Codex's ~25 s of reconnects, and the fallback chain takes over.
pub fn retry_overrides(provider: &str) -> Vec<String> {
    vec![
        format!("model_providers.{provider}.request_max_retries=0"),
        format!("model_providers.{provider}.stream_max_retries=0"),
    ]
}

/// The user's `auth.json` (API key or ChatGPT login), when there is one.
pub fn user_auth_file(req: &InvocationRequest) -> Option<PathBuf> {
    let auth = user_codex_home(req)?.join("auth.json");
    auth.is_file().then_some(auth)
}

/// Whether unprivileged user namespaces are switched off, so Codex's bubblewrap sandbox cannot
/// start (every command would then fail while the run still exits 0).
pub fn user_namespaces_disabled(proc_file: &Path) -> bool {
    std::fs::read_to_string(proc_file).is_ok_and(|v| v.trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_settings_are_flattened_and_everything_else_dropped() {
        let user: toml::Table = r#"
            model = "gpt-5.5"
            model_provider = "corp"
            approval_policy = "on-request"
            sandbox_mode = "danger-full-access"
            [model_providers.corp]
            name = "Corp"
            base_url = "http://proxy/v1"
            env_key = "CORP_KEY"
            http_headers = { "X-Team" = "a", "a.b" = "c" }
            [mcp_servers.docs]
            command = "docs-mcp"
        "#
        .parse()
        .unwrap();
        let got = provider_overrides(&user);
        assert_eq!(
            got,
            vec![
                "model=\"gpt-5.5\"",
                "model_provider=\"corp\"",
                "model_providers.corp.base_url=\"http://proxy/v1\"",
                "model_providers.corp.env_key=\"CORP_KEY\"",
                "model_providers.corp.http_headers.X-Team=\"a\"",
                "model_providers.corp.name=\"Corp\"",
            ],
            "a key that would need quoting (a.b) is skipped"
        );
        assert!(got
            .iter()
            .all(|o| !o.contains("mcp") && !o.contains("approval")));
        assert_eq!(active_provider(Some(&user)), "corp");
        assert!(is_user_provider(Some(&user), "corp"));
        assert!(!is_user_provider(Some(&user), "openai"));
    }

    #[test]
    fn the_floor_picks_the_sandbox_per_mode_and_never_bypasses_it() {
        let read = floor_overrides(Mode::Read, false).join(" ");
        let write = floor_overrides(Mode::Write, false).join(" ");
        assert!(read.contains("sandbox_mode=\"read-only\""), "{read}");
        assert!(
            write.contains("sandbox_mode=\"workspace-write\""),
            "{write}"
        );
        for text in [&read, &write] {
            assert!(text.contains("approval_policy=\"never\""));
            assert!(!text.contains("danger-full-access"));
            assert!(text.contains("web_search=\"disabled\""));
        }
        assert!(floor_overrides(Mode::Read, true)
            .join(" ")
            .contains("web_search=\"live\""));
    }

    #[test]
    fn switched_off_user_namespaces_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("max_user_namespaces");
        std::fs::write(&file, "0\n").unwrap();
        assert!(user_namespaces_disabled(&file));
        std::fs::write(&file, "15000\n").unwrap();
        assert!(!user_namespaces_disabled(&file));
        assert!(!user_namespaces_disabled(&dir.path().join("missing")));
    }
}
