//! `pitroom mcp --print-config HOST`: the registration snippet for each MCP host, with what each
//! one needs so the workers still get their keys (Codex and Gemini CLI start MCP servers with
//! a cleared environment) and so long calls are not cut (Codex's tool timeout).

/// Provider keys the workers' CLIs read.
const PROVIDER_KEYS: &[&str] = &[
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "DASHSCOPE_API_KEY",
];

/// Pitroom's own settings.
const PITROOM_VARS: &[&str] = &["PITROOM_HOME", "PITROOM_CONFIG", "PITROOM_WORKER"];

/// Where worker CLIs keep their config and logins when the user moved them (OpenCode and Kilo
/// read `$XDG_CONFIG_HOME/opencode`, `$XDG_DATA_HOME/opencode/auth.json`): without these a
/// worker started under Codex looks in `~/.config` and finds no provider.
const XDG_DIRS: &[&str] = &["XDG_CONFIG_HOME", "XDG_DATA_HOME"];

/// Variables a worker may need from the host's environment, for hosts that clear it (Codex,
/// Gemini CLI): provider keys, Pitroom's own settings, each worker's `PITROOM_<CLI>_BIN` and
/// the XDG directories. A host forwards only those that are set.
pub fn pass_through() -> Vec<String> {
    let binaries = pitroom_service::info::worker_binary_vars();
    PROVIDER_KEYS
        .iter()
        .chain(PITROOM_VARS)
        .map(|v| v.to_string())
        .chain(binaries)
        .chain(XDG_DIRS.iter().map(|v| v.to_string()))
        .collect()
}

/// The tools Codex may call without asking: the ones that start or review runs. Codex asks
/// before any MCP tool that is not read-only, and `codex exec` (approval policy `never`) refuses
/// such a call outright; the destructive tools (apply, discard, revert, stop) keep that default.
pub const CODEX_APPROVED_TOOLS: &[&str] = &["pitroom_run", "pitroom_review"];

/// The hosts `--print-config` knows.
pub const HOSTS: &[&str] = &["claude", "codex", "gemini", "cursor"];

/// The snippet for `host`, or why there is none.
pub fn config_for(host: &str) -> Result<String, String> {
    let vars = pass_through();
    let quoted: Vec<String> = vars.iter().map(|v| format!("\"{v}\"")).collect();
    match host {
        "claude" => Ok(
            r#"# Claude Code passes its environment to MCP servers. Register for every project:
claude mcp add --transport stdio --scope user pitroom -- pitroom mcp

# or, in a project's .mcp.json (timeout in ms; calls return within 540 s anyway):
{"mcpServers": {"pitroom": {"command": "pitroom", "args": ["mcp"], "timeout": 600000}}}
"#
            .to_string(),
        ),
        "codex" => Ok(codex_config(&quoted)),
        "gemini" => Ok(format!(
            r#"# ~/.gemini/settings.json (or the project's .gemini/settings.json). Gemini CLI passes MCP servers
# only safe variables: list the workers' keys in env. timeout is in ms.
{{"mcpServers": {{"pitroom": {{"command": "pitroom", "args": ["mcp"], "timeout": 600000,
  "env": {{{}}}}}}}}}
"#,
            vars.iter()
                // `${VAR:-}`: an unset variable becomes empty (Pitroom ignores empty ones), where
                // `$VAR` would reach the worker as that literal text.
                .map(|v| format!("\"{v}\": \"${{{v}:-}}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        "cursor" => Ok(r#"# ~/.cursor/mcp.json (or the project's .cursor/mcp.json):
{"mcpServers": {"pitroom": {"command": "pitroom", "args": ["mcp"]}}}
"#
        .to_string()),
        other => Err(format!(
            "no MCP registration is known for `{other}`; pick one of {}",
            HOSTS.join(", ")
        )),
    }
}

fn codex_config(quoted_vars: &[String]) -> String {
    let approvals: String = CODEX_APPROVED_TOOLS
        .iter()
        .map(|tool| format!("\n[mcp_servers.pitroom.tools.{tool}]\napproval_mode = \"approve\"\n"))
        .collect();
    format!(
        r#"# ~/.codex/config.toml. Codex clears the environment of MCP servers: env_vars forwards the
# workers' keys by name. tool_timeout_sec covers the longest wait (540 s) of a call. Codex asks
# before a tool that is not read-only (codex exec refuses it): starting and reviewing runs is
# approved here; apply, discard, revert and stop still ask.
[mcp_servers.pitroom]
command = "pitroom"
args = ["mcp"]
env_vars = [{}]
startup_timeout_sec = 20
tool_timeout_sec = 600
{approvals}"#,
        quoted_vars.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_snippet_starts_pitroom_mcp() {
        for host in HOSTS {
            let text = config_for(host).expect("known host");
            assert!(
                text.contains("\"mcp\"") || text.contains("pitroom mcp"),
                "{host}: {text}"
            );
        }
    }

    #[test]
    fn codex_and_gemini_snippets_forward_the_worker_env_and_codex_approves_only_starting_runs() {
        let codex = config_for("codex").expect("codex");
        assert!(
            codex.contains("env_vars = [\"OPENROUTER_API_KEY\""),
            "{codex}"
        );
        assert!(codex.contains("tool_timeout_sec = 600"), "{codex}");
        // A worker found through PITROOM_<CLI>_BIN or configured under XDG dirs still is.
        assert!(codex.contains("\"PITROOM_OPENCODE_BIN\""), "{codex}");
        assert!(codex.contains("\"XDG_CONFIG_HOME\""), "{codex}");
        let gemini = config_for("gemini").expect("gemini");
        assert!(
            gemini.contains("\"OPENROUTER_API_KEY\": \"${OPENROUTER_API_KEY:-}\""),
            "{gemini}"
        );
        let parsed: toml::Table = codex
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
            .parse()
            .expect("the codex snippet is TOML");
        let tools = &parsed["mcp_servers"]["pitroom"]["tools"];
        assert_eq!(
            tools["pitroom_run"]["approval_mode"].as_str(),
            Some("approve")
        );
        assert!(tools.get("pitroom_apply").is_none(), "{codex}");
    }

    #[test]
    fn an_unknown_host_names_the_known_ones() {
        let err = config_for("vim").expect_err("unknown");
        assert!(err.contains("claude, codex, gemini, cursor"));
    }
}
