//! Claude Code (`claude -p --output-format stream-json --verbose`).
//!
//! Facts this adapter is built on (measured with `@anthropic-ai/claude-code` 2.1.332, see
//! `docs/workers/claude.md`): with no prompt argument it reads the prompt from stdin, whole
//! (200 KB, a leading dash and flag-like lines tested), so the prompt comes on stdin and nothing
//! follows the final `--`; the mode is enforced by offering only the mode's built-in tools
//! (`--tools`) with `dontAsk` and allow/deny rules (no call can wait for an answer); a 429 is
//! retried for ~3 minutes unless `CLAUDE_CODE_MAX_RETRIES` says otherwise; without
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` it calls api.anthropic.com whatever the base URL.

mod classify;
mod parse;
pub(crate) mod profile;

use std::ffi::OsString;
use std::path::PathBuf;

use crate::adapter::{
    flag, Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, ModelInfo,
    StreamParser,
};
use crate::events::FailureKind;

pub use profile::{permissions, tools};

/// The reasoning efforts `--effort` accepts (Claude Code ignores others with a warning).
pub const EFFORTS: &[&str] = &["low", "medium", "high", "xhigh", "max"];

/// The model aliases Claude Code resolves itself; it has no command that lists models.
const MODEL_ALIASES: &[&str] = &["opus", "sonnet", "haiku"];

/// The Claude Code adapter (each run's stream gets its own parser, which remembers tool calls
/// until their results arrive).
#[derive(Debug, Default)]
pub struct Claude;

/// Claude Code's config dir inside the shared per-backend directory: sessions live there, so
/// `--continue` (`--resume`) finds them.
const CONFIG: &str = "config";

impl Claude {
    fn config_dir(req: &InvocationRequest) -> PathBuf {
        req.dirs.shared.join(CONFIG)
    }

    /// A private config dir and `TMPDIR`, no telemetry or other traffic beyond the model, no
    /// auto-update, and the CLI's retries off so a failure surfaces in about a second.
    fn env(req: &InvocationRequest) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = vec![
            ("CLAUDE_CONFIG_DIR".into(), Self::config_dir(req).into()),
            ("TMPDIR".into(), req.dirs.scratch.join("tmp").into()),
        ];
        for (k, v) in [
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("CLAUDE_CODE_MAX_RETRIES", "0"),
            ("NO_COLOR", "1"),
        ] {
            env.push((k.into(), v.into()));
        }
        env
    }

    /// The user's login linked into the private config dir.
    fn links(req: &InvocationRequest) -> Vec<(PathBuf, PathBuf)> {
        profile::user_credentials(req)
            .map(|file| vec![(Self::config_dir(req).join(".credentials.json"), file)])
            .unwrap_or_default()
    }
}

impl Adapter for Claude {
    fn id(&self) -> &'static str {
        "claude"
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let program = req.find_program("claude")?;
        let mut notes = Vec::new();
        let mut args: Vec<OsString> = ["-p", "--output-format", "stream-json", "--verbose"]
            .iter()
            .map(OsString::from)
            .collect();
        args.extend(["--permission-mode".into(), "dontAsk".into()]);
        args.extend(["--tools".into(), tools(req.mode, req.web).join(",").into()]);
        args.extend([
            "--settings".into(),
            profile::settings(req).to_string().into(),
        ]);
        // Only the private config dir's settings (none) besides `--settings`: a project's
        // `.claude/settings*.json` could add hooks or loosen rules.
        args.extend(["--setting-sources".into(), "user".into()]);
        // No MCP servers: not the user's, not the project's.
        args.push("--strict-mcp-config".into());
        args.extend(flag("--model", req.model.as_ref()));
        if let Some(effort) = &req.effort {
            if EFFORTS.contains(&effort.as_str()) {
                args.extend(["--effort".into(), OsString::from(effort)]);
            } else {
                notes.push(format!(
                    "--effort {effort} dropped: Claude Code accepts {}",
                    EFFORTS.join(", ")
                ));
            }
        }
        args.extend(flag("--resume", req.resume_session.as_ref()));
        // Ends the options, so nothing can be read as a prompt or swallowed by a variadic
        // flag; the prompt itself comes on stdin, which the engine closes after it.
        args.push("--".into());
        Ok(Invocation {
            env: Self::env(req),
            env_remove: vec!["CLAUDECODE".into(), "CLAUDE_CODE_ENTRYPOINT".into()],
            notes,
            links: Self::links(req),
            ..Invocation::new(program, args)
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(parse::Calls::default())
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        classify::TEXTS.classify(evidence)
    }

    fn can_resume(&self) -> bool {
        true
    }

    /// `claude --version`: proof the CLI runs; the models are its aliases.
    fn models_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        Ok(Invocation {
            env: Self::env(req),
            links: Self::links(req),
            ..Invocation::new(req.find_program("claude")?, vec!["--version".into()])
        })
    }

    fn parse_models(&self, stdout: &str) -> Vec<ModelInfo> {
        if !stdout.contains("Claude Code") {
            return Vec::new();
        }
        MODEL_ALIASES
            .iter()
            .map(|id| ModelInfo {
                id: (*id).to_string(),
                efforts: EFFORTS.iter().map(|e| (*e).to_string()).collect(),
            })
            .collect()
    }
}
