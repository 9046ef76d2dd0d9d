//! Cursor CLI (`cursor-agent -p --output-format stream-json`), built from Cursor's documented
//! headless mode and stream format (see `docs/workers/cursor.md`). **Unproven**: the CLI is not
//! installable here, so no run of the real binary backs this adapter; its contract tests run on
//! fixtures written by hand from the documentation.
//!
//! Facts from the documentation this adapter is built on: print mode (`-p`) reads the prompt
//! from a piped stdin; `--mode ask` is read-only; permissions live in `cli-config.json` under
//! `CURSOR_CONFIG_DIR` as `Shell(…)`, `Read(…)`, `Write(…)` and `WebFetch(…)` allow/deny tokens
//! where deny wins; a tool call not allowed runs only with `--force`, which Pitroom never
//! passes; `--sandbox enabled` confines shell commands; `--resume <chatId>` continues a
//! session. The config file is a [`crate::SettingsFile`] the engine writes.

pub(crate) mod parse;

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::json;

use crate::adapter::{
    flag, Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, ModelInfo,
    SettingsFile, StreamParser,
};
use crate::classify::contains_any;
use crate::events::{FailureKind, Mode};
pub use parse::CursorStream;

/// The Cursor CLI adapter (each run's stream gets its own [`CursorStream`]).
#[derive(Debug, Default)]
pub struct Cursor;

/// The private home inside the shared per-backend state dir (sessions persist there).
const HOME_DIR: &str = "cursor-home";
/// The login Cursor keeps in its config directory, linked into the private one.
const CREDENTIAL_FILES: &[&str] = &["auth.json"];

/// Texts that name each failure kind (beyond the generic ones every adapter shares), from
/// Cursor's reported error messages; see the docs for their sources.
const MODEL_UNAVAILABLE: &[&str] = &[
    "cannot use this model",
    "invalid model",
    "model not available",
];
const RATE_LIMITED: &[&str] = &[
    "hit your usage limit",
    "usage limit",
    "rate limit",
    "too many requests",
];
const AUTH: &[&str] = &[
    "authentication required",
    "not authenticated",
    "agent login",
    "cursor-agent login",
    "invalid api key",
];

impl Cursor {
    /// `CURSOR_CONFIG_DIR`, also `$XDG_CONFIG_HOME/cursor`: both name the same private place.
    fn config_dir(req: &InvocationRequest) -> PathBuf {
        req.private_home(HOME_DIR).join(".config/cursor")
    }

    /// Where the user's own login lives: `$CURSOR_CONFIG_DIR`, `$XDG_CONFIG_HOME/cursor`,
    /// `~/.config/cursor`, `~/.cursor`, the first that holds a credential file.
    fn user_config_dirs(req: &InvocationRequest) -> Vec<PathBuf> {
        let set = |k: &str| req.env_var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let mut dirs: Vec<PathBuf> = Vec::new();
        dirs.extend(set("CURSOR_CONFIG_DIR"));
        dirs.extend(set("XDG_CONFIG_HOME").map(|d| d.join("cursor")));
        if let Some(home) = set("HOME") {
            dirs.push(home.join(".config/cursor"));
            dirs.push(home.join(".cursor"));
        }
        dirs
    }

    fn credential_links(req: &InvocationRequest) -> Vec<(PathBuf, PathBuf)> {
        CREDENTIAL_FILES
            .iter()
            .filter_map(|name| {
                Self::user_config_dirs(req)
                    .into_iter()
                    .map(|d| d.join(name))
                    .find(|target| target.is_file())
                    .map(|target| (Self::config_dir(req).join(name), target))
            })
            .collect()
    }

    fn config_file(req: &InvocationRequest) -> SettingsFile {
        SettingsFile {
            path: Self::config_dir(req).join("cli-config.json"),
            content: cli_config(req.mode, req.web).to_string(),
        }
    }
}

/// The mode's `cli-config.json`. Read runs allow nothing beyond the read tools (which need no
/// approval) and deny every write; edit runs allow workspace writes and the shell. Both deny
/// the floor's commands, other agent CLIs, secret files and, without `--web`, every fetch.
pub(crate) fn cli_config(mode: Mode, web: bool) -> serde_json::Value {
    let mut allow: Vec<String> = Vec::new();
    let mut deny: Vec<String> = denied_shell_tokens();
    for glob in crate::secret_files::anywhere_globs() {
        deny.push(format!("Read({glob})"));
        deny.push(format!("Write({glob})"));
    }
    if mode.may_edit() {
        // Relative globs are scoped to the workspace, so writes elsewhere still need approval,
        // which a headless run never gets.
        allow.extend(["Write(**)".to_string(), "Shell(*)".to_string()]);
    } else {
        deny.push("Write(**)".into());
        deny.push("Write(/**)".into());
    }
    if web {
        allow.push("WebFetch(*)".into());
    } else {
        deny.push("WebFetch(*)".into());
    }
    json!({
        "version": 1,
        "editor": {"vimMode": false},
        "permissions": {"allow": allow, "deny": deny},
    })
}

/// The floor's commands as `Shell(base)` or `Shell(base:args)` tokens: `git push*` →
/// `Shell(git:push*)`, `sudo *` → `Shell(sudo)`, `pitroom*` → `Shell(pitroom*)`.
pub(crate) fn denied_shell_tokens() -> Vec<String> {
    crate::denied::patterns()
        .map(|pattern| {
            let pattern = pattern.trim();
            match pattern.split_once(' ') {
                Some((base, rest)) if rest.trim() != "*" => {
                    format!("Shell({base}:{})", rest.trim())
                }
                Some((base, _)) => format!("Shell({base})"),
                None => format!("Shell({pattern})"),
            }
        })
        .collect()
}

impl Adapter for Cursor {
    fn id(&self) -> &'static str {
        "cursor"
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let program = req.find_program("cursor")?;
        let mut notes = Vec::new();
        // The prompt comes on stdin: print mode reads a piped stdin whole.
        let mut args: Vec<OsString> = [
            "-p",
            "--output-format",
            "stream-json",
            "--trust",
            "--sandbox",
            "enabled",
        ]
        .map(OsString::from)
        .to_vec();
        args.extend(["--workspace".into(), req.workdir.clone().into_os_string()]);
        if req.mode == Mode::Read {
            args.extend(["--mode".into(), "ask".into()]);
        }
        args.extend(flag("--model", req.model.as_ref()));
        notes.extend(
            req.dropped_effort("Cursor CLI has no effort flag (pick a model variant instead)"),
        );
        args.extend(flag("--resume", req.resume_session.as_ref()));
        let env = vec![
            ("HOME".into(), req.private_home(HOME_DIR).into()),
            (
                "XDG_CONFIG_HOME".into(),
                req.private_home(HOME_DIR).join(".config").into(),
            ),
            ("CURSOR_CONFIG_DIR".into(), Self::config_dir(req).into()),
            ("TMPDIR".into(), req.dirs.scratch.join("tmp").into()),
            ("NO_UPDATE_NOTIFIER".into(), "1".into()),
        ];
        Ok(Invocation {
            files: vec![Self::config_file(req)],
            env,
            notes,
            links: Self::credential_links(req),
            ..Invocation::new(program, args)
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(CursorStream::default())
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        let haystack = evidence.texts_lowercase();
        if contains_any(&haystack, MODEL_UNAVAILABLE) {
            FailureKind::ModelUnavailable
        } else if contains_any(&haystack, RATE_LIMITED) {
            FailureKind::RateLimited
        } else if contains_any(&haystack, AUTH) {
            FailureKind::Auth
        } else {
            crate::common::failure_texts::TEXTS.classify(evidence)
        }
    }

    fn can_resume(&self) -> bool {
        true
    }

    fn models_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        Ok(Invocation::new(
            req.find_program("cursor")?,
            vec!["--list-models".into()],
        ))
    }

    /// Lines `id - Display name` (the list's documented shape is not pinned; anything else,
    /// headers and tips, is skipped).
    fn parse_models(&self, stdout: &str) -> Vec<ModelInfo> {
        stdout
            .lines()
            .filter_map(|line| line.trim().split_once(" - "))
            .map(|(id, _)| id.trim())
            .filter(|id| !id.is_empty() && !id.contains(char::is_whitespace))
            .map(ModelInfo::without_efforts)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_file_of_the_one_policy_is_denied_to_read_and_write() {
        use crate::secret_files::check::assert_tool_rules_refuse_exactly_the_secrets;
        // Read mode denies every write (`Write(**)`); the secret rules matter for edits.
        let tools = |mode: Mode| -> &'static [&'static str] {
            if mode.may_edit() {
                &["Read", "Write"]
            } else {
                &["Read"]
            }
        };
        let deny = |mode| {
            serde_json::from_value(cli_config(mode, false)["permissions"]["deny"].clone())
                .expect("deny rules")
        };
        assert_tool_rules_refuse_exactly_the_secrets("cursor", tools, deny);
    }

    fn request(mode: Mode, env: Vec<(&str, String)>) -> InvocationRequest {
        InvocationRequest::for_test_of("cursor", mode, env)
    }

    #[test]
    fn read_runs_ask_mode_and_deny_every_write_and_edit_runs_allow_workspace_writes() {
        let read = cli_config(Mode::Read, false).to_string();
        assert!(read.contains("\"Write(**)\""), "{read}");
        assert!(read.contains("\"WebFetch(*)\""), "{read}");
        let read_deny = &cli_config(Mode::Read, false)["permissions"]["deny"];
        assert!(read_deny
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "Write(**)"));
        let write = cli_config(Mode::Write, true);
        let allow = write["permissions"]["allow"].as_array().unwrap();
        assert!(allow.iter().any(|t| t == "Write(**)") && allow.iter().any(|t| t == "WebFetch(*)"));
        let deny = write["permissions"]["deny"].as_array().unwrap();
        for token in [
            "Shell(git:push*)",
            "Shell(sudo)",
            "Shell(gh)",
            "Read(**/.env)",
            "Shell(agy*)",
        ] {
            assert!(
                deny.iter().any(|t| t == token),
                "{token} missing from {deny:?}"
            );
        }
        let inv = Cursor.invocation(&request(Mode::Read, vec![])).unwrap();
        let a = inv.args_text();
        assert!(a.windows(2).any(|w| w == ["--mode", "ask"]), "{a:?}");
        let inv = Cursor.invocation(&request(Mode::Write, vec![])).unwrap();
        assert!(!inv.args_text().iter().any(|a| a == "--mode"));
    }

    #[test]
    fn the_config_goes_where_cursor_reads_it_and_the_prompt_on_stdin() {
        let mut req = request(Mode::Read, vec![]);
        req.dirs.shared = "/shared".into();
        let inv = Cursor.invocation(&req).unwrap();
        assert_eq!(
            inv.program,
            PathBuf::from("/bin/true"),
            "no launcher in between"
        );
        assert_eq!(inv.prompt, crate::PromptInput::Stdin);
        let config_dir = inv
            .env
            .iter()
            .find(|(k, _)| k == "CURSOR_CONFIG_DIR")
            .map(|(_, v)| PathBuf::from(v))
            .expect("CURSOR_CONFIG_DIR");
        let [config] = inv.files.as_slice() else {
            panic!("one config file: {:?}", inv.files)
        };
        assert_eq!(config.path, config_dir.join("cli-config.json"));
        let written: serde_json::Value = serde_json::from_str(&config.content).unwrap();
        assert_eq!(written, cli_config(Mode::Read, false));
    }

    #[test]
    fn the_users_login_is_linked_into_the_private_config_dir() {
        let dir = tempfile::tempdir().unwrap();
        crate::testing::write_file(&dir.path().join(".config/cursor/auth.json"), "{}");
        let req = request(Mode::Read, vec![("HOME", dir.path().display().to_string())]);
        let inv = Cursor.invocation(&req).unwrap();
        assert_eq!(
            inv.links,
            vec![(
                PathBuf::from("/s/cursor-home/.config/cursor/auth.json"),
                dir.path().join(".config/cursor/auth.json")
            )]
        );
        let env: Vec<String> = inv
            .env
            .iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .collect();
        assert!(env.contains(&"CURSOR_CONFIG_DIR=/s/cursor-home/.config/cursor".to_string()));
    }

    #[test]
    fn failures_classify_from_cursors_texts() {
        let kind = |stderr: &str| {
            Cursor.classify(&FailureEvidence {
                events: &[],
                stderr_tail: stderr,
                exit_code: Some(1),
            })
        };
        assert_eq!(
            kind("Cannot use this model: gpt-9. Available models: auto"),
            FailureKind::ModelUnavailable
        );
        assert_eq!(
            kind("You've hit your usage limit"),
            FailureKind::RateLimited
        );
        assert_eq!(
            kind("Error: Authentication required. Please run 'cursor-agent login' first, or set CURSOR_API_KEY environment variable."),
            FailureKind::Auth
        );
        assert_eq!(kind("Connection reset"), FailureKind::Other);
    }

    #[test]
    fn model_lines_are_read_and_headers_skipped() {
        let models = Cursor.parse_models(
            "Available models\n\nauto - Auto\ngpt-5 - GPT-5 (current)\nTip: use --model\n",
        );
        let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, vec!["auto", "gpt-5"]);
    }
}
