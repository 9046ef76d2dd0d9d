//! Codex CLI (`codex exec --json`).
//!
//! Facts this adapter is built on (measured with `@openai/codex` 0.171.0, see
//! `docs/workers/codex.md`): an open stdin hangs it, so the prompt comes on stdin (`-`) and
//! stdin is then closed; its own bubblewrap sandbox enforces the mode (`read-only`,
//! `workspace-write` with `.git` read-only), so nothing else may be wrapped around it; plugins,
//! analytics and update checks reach the internet unless switched off; a dead provider is
//! retried forever unless `unbounded_connection_retries` is off; a command or patch the sandbox
//! refuses leaves no JSON event, only a log line on stderr.

mod classify;
mod config;
mod parse;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::adapter::{
    flag, Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, LineByLine,
    ModelInfo, StreamParser,
};
use crate::events::{FailureKind, ToolOutcome, WorkerEvent};

pub use config::EFFORTS;

/// The Codex adapter.
pub struct Codex;

/// Codex's home inside the shared per-backend directory: sessions live there, so
/// `--continue` (`codex exec resume`) finds them.
const HOME: &str = "data";

/// Where the kernel says whether unprivileged user namespaces (bubblewrap's need) are allowed.
const MAX_USER_NAMESPACES: &str = "/proc/sys/user/max_user_namespaces";

/// Log filter: errors, plus the sandbox's record of each refused write (the only trace a
/// refused command leaves; see [`Adapter::stderr_events`]).
const RUST_LOG: &str = "error,codex_sandboxing=warn";

impl Codex {
    /// A private `CODEX_HOME` and `TMPDIR` (never the user's `~/.codex`), no colour, and the
    /// log filter that shows sandbox refusals.
    fn env(req: &InvocationRequest) -> Vec<(OsString, OsString)> {
        vec![
            ("CODEX_HOME".into(), req.private_home(HOME).into()),
            ("TMPDIR".into(), req.dirs.scratch.join("tmp").into()),
            ("RUST_LOG".into(), RUST_LOG.into()),
            ("NO_COLOR".into(), "1".into()),
        ]
    }

    /// The user's `auth.json` (API key or ChatGPT login) linked into the private home.
    fn links(req: &InvocationRequest) -> Vec<(PathBuf, PathBuf)> {
        config::user_auth_file(req)
            .map(|auth| vec![(req.private_home(HOME).join("auth.json"), auth)])
            .unwrap_or_default()
    }

    /// `-c` overrides: the user's provider settings, the retry cap for their provider, then
    /// the mode's floor (later overrides win).
    fn overrides(
        req: &InvocationRequest,
        notes: &mut Vec<String>,
    ) -> Result<Vec<String>, AdapterError> {
        let user = config::user_config(req).map_err(AdapterError::Config)?;
        let mut overrides = user
            .as_ref()
            .map(config::provider_overrides)
            .unwrap_or_default();
        let provider = config::active_provider(user.as_ref());
        if config::is_user_provider(user.as_ref(), &provider) {
            overrides.extend(config::retry_overrides(&provider));
        } else {
            notes.push(format!(
                "codex's built-in {provider} provider keeps its own retries (up to ~25 s on a server error)"
            ));
        }
        overrides.extend(config::floor_overrides(req.mode, req.web));
        if let Some(effort) = &req.effort {
            if !EFFORTS.contains(&effort.as_str()) {
                notes.push(format!(
                    "--effort {effort}: not one of Codex's levels ({}); passed on as given",
                    EFFORTS.join(", ")
                ));
            }
            overrides.push(format!(
                "model_reasoning_effort=\"{}\"",
                effort.escape_default()
            ));
        }
        Ok(overrides)
    }

    /// `exec` flags shared by runs: JSON events, no git-repo check (read runs work in a copy),
    /// the user's config.toml ignored (its provider settings come back as overrides).
    fn exec_args(overrides: &[String]) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--ignore-user-config",
            "--color",
            "never",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        for o in overrides {
            args.extend(["-c".into(), OsString::from(o)]);
        }
        args
    }
}

impl Adapter for Codex {
    fn id(&self) -> &'static str {
        "codex"
    }

    /// Codex's JSON stream never names the model; its session log does
    /// (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`, `turn_context`).
    fn session_model(&self, dirs: &crate::adapter::StateDirs, session: &str) -> Option<String> {
        let rollout = find_rollout(&dirs.shared.join(HOME).join("sessions"), session)?;
        model_in_rollout(&std::fs::read_to_string(rollout).ok()?)
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        if config::user_namespaces_disabled(Path::new(MAX_USER_NAMESPACES)) {
            return Err(AdapterError::ModeUnsupported {
                backend: "codex".into(),
                mode: req.mode.as_str().into(),
                why: "its sandbox needs user namespaces, and /proc/sys/user/max_user_namespaces is 0 (every command would fail)".into(),
            });
        }
        let program = req.find_program("codex")?;
        let mut notes = Vec::new();
        let overrides = Self::overrides(req, &mut notes)?;
        let mut args = Self::exec_args(&overrides);
        args.extend(["--cd".into(), req.workdir.clone().into_os_string()]);
        args.extend(flag("--model", req.model.as_ref()));
        if let Some(session) = &req.resume_session {
            args.extend(["resume".into(), OsString::from(session)]);
        }
        // `-`: the prompt is read whole from stdin, which the engine closes after it.
        args.push("-".into());
        Ok(Invocation {
            env: Self::env(req),
            notes,
            links: Self::links(req),
            ..Invocation::new(program, args)
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(LineByLine(parse::parse_line))
    }

    /// Codex's built-in providers (`openai`) cannot have their retries capped (a
    /// `model_providers.openai` entry is refused as a reserved id), and their reconnects show
    /// only as `{"type":"error","message":"Reconnecting... 2/5 (cause)"}` lines on **stdout**
    /// (about 40 s in all without a network). The cause is the retry signal; the engine sees it
    /// once it passes stdout lines here too.
    fn retry_signal(&self, line: &str) -> Option<String> {
        let value: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
        let message = value["message"]
            .as_str()
            .filter(|_| value["type"] == "error")?;
        let rest = message.strip_prefix("Reconnecting... ")?;
        let cause = rest
            .split_once(" (")
            .map_or(rest, |(_, c)| c.trim_end_matches(')'));
        Some(cause.to_string())
    }

    fn stderr_events(&self, line: &str) -> Vec<WorkerEvent> {
        sandbox_refusal(line).into_iter().collect()
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        classify::TEXTS.classify(evidence)
    }

    fn can_resume(&self) -> bool {
        true
    }

    /// Codex enforces the mode in its own bubblewrap sandbox (see `config.rs`).
    fn has_own_sandbox(&self) -> bool {
        true
    }

    /// Measured: after `exec resume`, `turn.completed.usage` covers the whole thread.
    fn resumed_usage_is_cumulative(&self) -> bool {
        true
    }

    fn models_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let program = req.find_program("codex")?;
        // The bundled catalogue: a refresh would reach chatgpt.com.
        let args = ["debug", "models", "--bundled"]
            .iter()
            .map(OsString::from)
            .collect();
        Ok(Invocation {
            env: Self::env(req),
            links: Self::links(req),
            ..Invocation::new(program, args)
        })
    }

    fn parse_models(&self, stdout: &str) -> Vec<ModelInfo> {
        let Ok(catalog) = serde_json::from_str::<serde_json::Value>(stdout.trim()) else {
            return Vec::new();
        };
        catalog["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["visibility"].as_str().is_none_or(|v| v == "list"))
            .filter_map(|m| {
                let id = m["slug"].as_str()?.to_string();
                let efforts = m["supported_reasoning_levels"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l["effort"].as_str().map(str::to_string))
                    .collect();
                Some(ModelInfo { id, efforts })
            })
            .collect()
    }
}

/// A refused write as Codex logs it on stderr:
/// `WARN codex_sandboxing::violation: recorded sandbox violation: resource=filesystem …` for a
/// command, `ERROR codex_core::tools::router: error=patch rejected: writing is blocked by
/// read-only sandbox …` for a patch.
fn sandbox_refusal(line: &str) -> Option<WorkerEvent> {
    let (name, detail) = if let Some(rest) = line.split("recorded sandbox violation: ").nth(1) {
        ("shell", rest)
    } else if let Some(rest) = line.split("error=patch rejected: ").nth(1) {
        ("apply_patch", rest)
    } else {
        return None;
    };
    Some(WorkerEvent::ToolCall {
        name: name.into(),
        summary: "(refused by the sandbox)".into(),
        outcome: ToolOutcome::Denied,
        error: Some(detail.trim().to_string()),
        edited: None,
    })
}

/// The rollout file of thread `session` under `sessions/` (three levels of dates deep).
fn find_rollout(sessions: &std::path::Path, session: &str) -> Option<PathBuf> {
    let suffix = format!("-{session}.jsonl");
    let mut dirs = vec![(sessions.to_path_buf(), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            if depth < 3 && path.is_dir() {
                dirs.push((path, depth + 1));
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
            {
                return Some(path);
            }
        }
    }
    None
}

/// The model of the last turn in a rollout log (`{"type":"turn_context","payload":{"model":…}}`).
fn model_in_rollout(log: &str) -> Option<String> {
    log.lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|v| v["type"] == "turn_context")
        .filter_map(|v| v["payload"]["model"].as_str().map(str::to_string))
        .find(|m| !m.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_a_thread_ran_is_read_from_its_rollout_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = [
            r#"{"type":"session_meta","payload":{"id":"t-1"}}"#,
            "not json",
            r#"{"type":"turn_context","payload":{"model":"gpt-5.5"}}"#,
            r#"{"type":"turn_context","payload":{"model":"gpt-5.5-mini"}}"#,
        ]
        .join("\n");
        crate::testing::write_file(
            &dir.path()
                .join("sessions/2026/12/01/rollout-2026-12-01T10-00-00-t-1.jsonl"),
            &log,
        );
        let found = find_rollout(&dir.path().join("sessions"), "t-1").expect("found");
        let text = std::fs::read_to_string(found).unwrap();
        assert_eq!(
            model_in_rollout(&text).as_deref(),
            Some("gpt-5.5-mini"),
            "the last turn's"
        );
        assert!(find_rollout(&dir.path().join("sessions"), "t-2").is_none());
        assert_eq!(model_in_rollout(r#"{"type":"event_msg"}"#), None);
    }

    #[test]
    fn sandbox_refusals_on_stderr_become_denied_calls() {
        let command = "2026-11-29T23:57:30.577370Z  WARN codex_sandboxing::violation: recorded sandbox violation: resource=filesystem backend=linux_sandbox reason=read_only_file_system path=unknown";
        let patch = "2026-11-29T23:57:20.609609Z ERROR codex_core::tools::router: error=patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings";
        for (line, tool) in [(command, "shell"), (patch, "apply_patch")] {
            let events = Codex.stderr_events(line);
            assert!(
                matches!(&events[..], [WorkerEvent::ToolCall { name, outcome: ToolOutcome::Denied, .. }] if name == tool),
                "{events:?}"
            );
        }
        assert!(Codex
            .stderr_events("Reading additional input from stdin...")
            .is_empty());
    }

    #[test]
    fn reconnect_notices_are_retry_signals_and_a_fatal_error_is_not() {
        let line = r#"{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address information: Name does not resolve)"}"#;
        assert_eq!(
            Codex.retry_signal(line).as_deref(),
            Some("stream disconnected before completion: failed to lookup address information: Name does not resolve")
        );
        let fatal = r#"{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}"#;
        assert_eq!(Codex.retry_signal(fatal), None);
    }

    #[test]
    fn the_bundled_catalogue_lists_models_with_their_efforts() {
        let stdout = r#"{"models":[{"slug":"gpt-5.5","visibility":"list","supported_reasoning_levels":[{"effort":"low"},{"effort":"high"}]},{"slug":"internal","visibility":"hide"}]}"#;
        assert_eq!(
            Codex.parse_models(stdout),
            vec![ModelInfo {
                id: "gpt-5.5".into(),
                efforts: vec!["low".into(), "high".into()]
            }]
        );
    }
}
