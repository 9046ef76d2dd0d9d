//! `pitroom mcp --print-config HOST`: the registration snippet for each MCP host, with what each
//! one needs so the workers still get their keys (Codex and Gemini CLI start MCP servers with
//! a cleared environment) and so long calls are not cut (Codex's tool timeout).

/// Variables a worker may need from the host's environment: provider keys and Pitroom's own.
pub const PASS_THROUGH: &[&str] = &[
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "DASHSCOPE_API_KEY",
    "PITROOM_HOME",
    "PITROOM_CONFIG",
    "PITROOM_WORKER",
];

/// The hosts `--print-config` knows.
pub const HOSTS: &[&str] = &["claude", "codex", "gemini", "cursor"];

/// The snippet for `host`, or why there is none.
pub fn config_for(host: &str) -> Result<String, String> {
    let quoted: Vec<String> = PASS_THROUGH.iter().map(|v| format!("\"{v}\"")).collect();
    match host {
        "claude" => Ok(
            r#"# Claude Code passes its environment to MCP servers. Register for every project:
claude mcp add --transport stdio --scope user pitroom -- pitroom mcp

# or, in a project's .mcp.json (timeout in ms; calls return within 540 s anyway):
{"mcpServers": {"pitroom": {"command": "pitroom", "args": ["mcp"], "timeout": 600000}}}
"#
            .to_string(),
        ),
        "codex" => Ok(format!(
            r#"# ~/.codex/config.toml. Codex clears the environment of MCP servers: env_vars forwards the
# workers' keys by name. tool_timeout_sec covers the longest wait (540 s) of a call.
[mcp_servers.pitroom]
command = "pitroom"
args = ["mcp"]
env_vars = [{}]
startup_timeout_sec = 20
tool_timeout_sec = 600
"#,
            quoted.join(", ")
        )),
        "gemini" => Ok(format!(
            r#"# ~/.gemini/settings.json (or the project's .gemini/settings.json). Gemini CLI passes MCP servers
# only safe variables: list the workers' keys in env. timeout is in ms.
{{"mcpServers": {{"pitroom": {{"command": "pitroom", "args": ["mcp"], "timeout": 600000,
  "env": {{{}}}}}}}}}
"#,
            PASS_THROUGH
                .iter()
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
    fn codex_and_gemini_snippets_forward_the_worker_keys_and_codex_sets_a_tool_timeout() {
        let codex = config_for("codex").expect("codex");
        assert!(
            codex.contains("env_vars = [\"OPENROUTER_API_KEY\""),
            "{codex}"
        );
        assert!(codex.contains("tool_timeout_sec = 600"), "{codex}");
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
        assert!(parsed.contains_key("mcp_servers"));
    }

    #[test]
    fn an_unknown_host_names_the_known_ones() {
        let err = config_for("vim").expect_err("unknown");
        assert!(err.contains("claude, codex, gemini, cursor"));
    }
}
