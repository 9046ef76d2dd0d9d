//! `pitroom demo --worker <cli>`: the real worker CLIs the demo can drive, and how each is
//! pointed at the scripted model server, through a provider config in the demo's temporary
//! HOME (never the user's own config).

use std::path::{Path, PathBuf};

use pitroom_core::exit;
use pitroom_workers::find_binary;

use super::model_server::{ModelServer, MODEL_ID};
use super::write;

/// The backends whose protocol the scripted model server speaks: OpenAI chat completions
/// (OpenCode, Kilo Code, Qwen Code) and Anthropic Messages (Claude Code).
pub(super) const SUPPORTED: [&str; 4] = ["opencode", "kilo", "qwen", "claude"];

/// The provider id of the scripted model in OpenCode's and Kilo's configs.
const PROVIDER: &str = "pitroom";

/// A real worker CLI the demo drives.
pub(super) struct RealWorker {
    pub backend: &'static str,
    pub bin: PathBuf,
}

impl RealWorker {
    /// The installed CLI for `--worker NAME`: found as Pitroom finds it (`PITROOM_<CLI>_BIN`,
    /// then PATH; each supported CLI's program is named like its backend). The error carries the exit code: usage for a backend the demo cannot drive,
    /// refused for one that is not installed.
    pub(super) fn find(name: &str) -> Result<RealWorker, (i32, String)> {
        let supported = SUPPORTED.join(", ");
        let Some(backend) = SUPPORTED.iter().copied().find(|b| *b == name) else {
            let why = if pitroom_workers::KNOWN_BACKENDS.contains(&name) {
                format!(
                    "demo --worker {name}: the demo's scripted model speaks only the OpenAI chat-completions and Anthropic Messages protocols so far, which {supported} use; {name} is not one of them (plain `pitroom demo` needs no worker CLI)"
                )
            } else {
                format!(
                    "demo --worker {name}: not a worker CLI the demo can drive; it drives {supported}"
                )
            };
            return Err((exit::USAGE, why));
        };
        let env = |k: &str| std::env::var(k).ok();
        let bin = find_binary(backend, backend, &env)
            .map_err(|e| (exit::REFUSED, format!("demo --worker {backend}: {e}")))?;
        Ok(RealWorker { backend, bin })
    }

    /// The model Pitroom is told to use (`-m`).
    pub(super) fn model(&self) -> String {
        match self.backend {
            "qwen" | "claude" => MODEL_ID.to_string(),
            _ => format!("{PROVIDER}/{MODEL_ID}"),
        }
    }

    /// The variable that points Pitroom at the CLI.
    pub(super) fn bin_var(&self) -> String {
        pitroom_env::worker_bin(self.backend)
    }

    /// Writes the CLI's provider config into the demo's `config_home` (its
    /// `XDG_CONFIG_HOME`) and returns the variables that point the CLI at `base_url`.
    /// `server` gives the base URLs: OpenAI-style (`…/v1`) and Anthropic-style.
    pub(super) fn configure(
        &self,
        config_home: &Path,
        server: &ModelServer,
    ) -> Result<Vec<(String, String)>, String> {
        let key = "sk-pitroom-demo-scripted-no-key".to_string();
        let base_url = server.base_url();
        // Qwen Code and Claude Code take their provider from the environment; any traffic
        // that is not the scripted model fails fast instead of leaving the machine.
        let dead = "http://127.0.0.1:9".to_string();
        let offline = [
            ("HTTPS_PROXY".to_string(), dead.clone()),
            ("HTTP_PROXY".to_string(), dead),
            ("NO_PROXY".to_string(), "127.0.0.1,localhost".to_string()),
        ];
        let (dir, file) = match self.backend {
            "opencode" => ("opencode", "opencode.json"),
            "kilo" => ("kilo", "kilo.json"),
            "claude" => {
                let mut env = vec![
                    ("ANTHROPIC_BASE_URL".into(), server.anthropic_url()),
                    ("ANTHROPIC_API_KEY".into(), key),
                    ("ANTHROPIC_MODEL".into(), MODEL_ID.into()),
                    ("ANTHROPIC_SMALL_FAST_MODEL".into(), MODEL_ID.into()),
                    (
                        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                        "1".into(),
                    ),
                ];
                env.extend(offline);
                return Ok(env);
            }
            _ => {
                let mut env = vec![
                    ("OPENAI_BASE_URL".into(), base_url),
                    ("OPENAI_API_KEY".into(), key),
                    ("OPENAI_MODEL".into(), MODEL_ID.into()),
                ];
                env.extend(offline);
                return Ok(env);
            }
        };
        let config = serde_json::json!({
            "model": format!("{PROVIDER}/{MODEL_ID}"),
            "provider": {PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "pitroom demo (scripted, not a model)",
                "options": {"baseURL": base_url, "apiKey": key, "timeout": 60000},
                "models": {MODEL_ID: {"name": "scripted (pitroom demo)", "tool_call": true,
                    "cost": {"input": 0, "output": 0},
                    "limit": {"context": 100000, "output": 4096}}}
            }}
        });
        let dir = config_home.join(dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        write(&dir.join(file), &config.to_string())?;
        Ok(Vec::new())
    }
}

/// Whether a variable of the user's would reach into the worker CLI's configuration, so the
/// demo's children go without it.
pub(super) fn is_worker_setting(name: &str) -> bool {
    [
        "OPENCODE_",
        "KILO_",
        "QWEN_",
        "OPENAI_",
        "DASHSCOPE_",
        "ANTHROPIC_",
        "CLAUDE_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}
