//! Qwen Code (`qwen -o stream-json`), measured with `@qwen-code/qwen-code` 0.24.4 (see
//! `docs/workers/qwen.md`).
//!
//! Facts this adapter is built on: with no prompt argument and stdin not a TTY, Qwen reads the
//! whole prompt from stdin, so the engine's stdin prompt needs no `-p`; headless runs decline
//! any tool that needs a confirmation, so the approval mode is the mode's floor (`default` for
//! read: no edits; `auto-edit` for write); its retries are unbounded by default (a 429 retried
//! for minutes), so `--max-wall-time` is always passed, the settings cap the request retries and
//! [`Adapter::retry_signal`] reads its `Retrying in …` lines and the silent outer loop's attempts
//! (followed from its debug log, see `retries`); it may end without a `result` line,
//! so a run is judged by its events. Telemetry, usage statistics (sent to Alibaba's RUM
//! endpoint by default), the auto-memory side agent and update checks are switched off in the
//! settings, which Qwen reads only from files: see `settings`.

pub(crate) mod parse;
mod retries;

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::adapter::{
    flag, Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, SettingsFile,
    StreamParser,
};
use crate::common::settings_files::{self as settings, read_json_object, ToolFloor};
use crate::events::{FailureKind, Mode};
pub use parse::QwenStream;

/// The Qwen Code adapter (each run's stream gets its own [`QwenStream`]).
#[derive(Debug, Default)]
pub struct Qwen;

/// Qwen's home (settings, sessions) inside the shared per-backend state dir.
const HOME_DIR: &str = "qwen-home";
/// Where Qwen reads its system settings (the highest-precedence file).
const SYSTEM_SETTINGS_VAR: &str = "QWEN_CODE_SYSTEM_SETTINGS_PATH";
/// Qwen's own bound on a run. The engine's timeout is the real limit; this one ends a Qwen
/// whose supervisor is gone, instead of letting it retry for an hour.
const MAX_WALL_TIME: &str = "2h";
/// Files of the user's Qwen home that carry credentials, made visible in the private one.
const CREDENTIAL_FILES: &[&str] = &["oauth_creds.json", ".env", "installation_id"];
/// Tools removed outright for a mode (in the deny rules, also passed as `--exclude-tools`).
const TOOL_FLOOR: ToolFloor = ToolFloor {
    // Tools no worker gets: subagents, messaging, schedulers, worktrees.
    always: &[
        "agent",
        "task",
        "send_message",
        "cron_create",
        "cron_delete",
        "loop_wakeup",
        "enter_worktree",
        "exit_worktree",
    ],
    web: &["web_fetch", "web_search"],
    edit: &["write_file", "edit", "notebook_edit"],
};

impl Qwen {
    /// The user's own Qwen home: `$QWEN_HOME`, else `~/.qwen`.
    fn user_home(req: &InvocationRequest) -> Option<PathBuf> {
        req.dir_from_env("QWEN_HOME", ".qwen")
    }

    /// The user's own `settings.json` (empty without one).
    fn user_settings(req: &InvocationRequest) -> serde_json::Map<String, Value> {
        Self::user_home(req)
            .map(|h| read_json_object(&h.join("settings.json")))
            .unwrap_or_default()
    }

    fn env(req: &InvocationRequest) -> Vec<(OsString, OsString)> {
        vec![
            ("QWEN_HOME".into(), req.private_home(HOME_DIR).into()),
            ("TMPDIR".into(), req.dirs.scratch.join("tmp").into()),
            // The relaunch only raises Node's heap; skipping it saves a second start.
            ("QWEN_CODE_NO_RELAUNCH".into(), "1".into()),
            ("NO_UPDATE_NOTIFIER".into(), "1".into()),
            ("PWD".into(), req.workdir.clone().into()),
            (retries::DEBUG_LOG_VAR.into(), "1".into()),
            (
                SYSTEM_SETTINGS_VAR.into(),
                Self::mode_settings_path(req).into(),
            ),
        ]
    }

    /// The mode's settings, in the run's own scratch dir: runs of different modes that start
    /// together each read their own. Qwen's system settings override the user's and the
    /// project's, so no `.qwen/settings.json` in the tree can loosen them.
    fn mode_settings_path(req: &InvocationRequest) -> PathBuf {
        req.dirs.scratch.join("qwen-system-settings.json")
    }

    fn mode_settings_file(req: &InvocationRequest) -> SettingsFile {
        SettingsFile {
            path: Self::mode_settings_path(req),
            content: overlay(req.mode, req.web).to_string(),
        }
    }

    /// The user-level settings file in the private home: the user's settings (their providers
    /// and auth) without their permission rules, hooks, MCP servers and tool lists, so none can
    /// loosen a mode. The same for every run of the user, whatever its mode.
    fn settings_file(req: &InvocationRequest) -> SettingsFile {
        let mut user = Self::user_settings(req);
        settings::remove_keys(
            &mut user,
            &["permissions", "hooks", "mcpServers"],
            &["allowed", "core", "approvalMode"],
        );
        SettingsFile {
            path: req.private_home(HOME_DIR).join("settings.json"),
            content: Value::Object(user).to_string(),
        }
    }

    fn credential_links(req: &InvocationRequest) -> Vec<(PathBuf, PathBuf)> {
        settings::credential_links(
            &req.private_home(HOME_DIR),
            Self::user_home(req),
            CREDENTIAL_FILES,
        )
    }
}

/// Pitroom's settings for every Qwen run: no telemetry or usage statistics, no update checks,
/// no auto-memory side agent (an extra model call with write tools), request retries capped,
/// and the mode's deny rules (the highest-priority permission layer).
fn overlay(mode: Mode, web: bool) -> Value {
    json!({
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "disableAutoUpdate": true, "disableUpdateNag": true},
        "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
        // `maxRetries` caps the rate-limit loop and the OpenAI SDK's own retry (which doubled
        // every attempt of the outer loop); the outer loop is cut by the engine (`retries`).
        "model": {"generationConfig": {"maxRetries": 0, "retryInitialDelayMs": 500, "retryMaxDelayMs": 1000}},
        "permissions": {"deny": deny_rules(mode, web)},
    })
}

/// Deny rules: denied tools, the floor's shell commands, secret files, and edits in read mode.
pub(crate) fn deny_rules(mode: Mode, web: bool) -> Vec<String> {
    let mut rules: Vec<String> = TOOL_FLOOR
        .removed(mode, web)
        .into_iter()
        .map(str::to_string)
        .collect();
    for pattern in crate::denied::patterns() {
        let base = crate::denied::words(&pattern);
        rules.push(format!("Bash({base})"));
        rules.push(format!("Bash({base} *)"));
    }
    rules.extend(
        crate::secret_files::anywhere_globs()
            .iter()
            .map(|g| format!("Read({g})")),
    );
    rules
}

/// `default` declines edits and unlisted shell commands headless; `auto-edit` approves edits.
fn approval_mode(mode: Mode) -> &'static str {
    match mode {
        Mode::Read => "default",
        Mode::Write | Mode::Isolate => "auto-edit",
    }
}

impl Adapter for Qwen {
    fn id(&self) -> &'static str {
        "qwen"
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let program = req.find_program("qwen")?;
        let mut notes = Vec::new();
        let mut args: Vec<OsString> = ["-o", "stream-json", "--max-wall-time", MAX_WALL_TIME]
            .map(OsString::from)
            .to_vec();
        args.extend(["--approval-mode".into(), approval_mode(req.mode).into()]);
        // The shell is allowed in every mode, inside the deny rules and the git guard; a write
        // through it in read mode is caught by the read copy (a read-only violation).
        args.extend(["--allowed-tools".into(), "run_shell_command".into()]);
        args.push("--exclude-tools".into());
        args.extend(
            TOOL_FLOOR
                .removed(req.mode, req.web)
                .into_iter()
                .map(OsString::from),
        );
        args.extend(flag("--model", req.model.as_ref()));
        notes.extend(req.dropped_effort("Qwen Code has no effort setting"));
        // The session is named up front, so its debug log (the outer retry loop's only trace)
        // can be followed: see [`retries`].
        let session = match &req.resume_session {
            Some(session) => {
                args.extend(["--resume".into(), OsString::from(session)]);
                session.clone()
            }
            None => {
                let session = retries::new_session_id(&req.dirs.scratch);
                args.extend(["--session-id".into(), OsString::from(&session)]);
                session
            }
        };
        let (program, args) = retries::follow(
            &retries::debug_log(&req.private_home(HOME_DIR), &session),
            &program,
            args,
        );
        Ok(Invocation {
            files: vec![Self::settings_file(req), Self::mode_settings_file(req)],
            env: Self::env(req),
            env_remove: vec![
                SYSTEM_SETTINGS_VAR.into(),
                "QWEN_CODE_SYSTEM_DEFAULTS_PATH".into(),
            ],
            notes,
            links: Self::credential_links(req),
            ..Invocation::new(program, args)
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(QwenStream::default())
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        crate::common::failure_texts::TEXTS.classify(evidence)
    }

    fn retry_signal(&self, stderr_line: &str) -> Option<String> {
        // The outer loop's attempts, copied from the debug log (see [`retries`]).
        if let Some(error) = retries::attempt_signal(stderr_line) {
            return Some(error);
        }
        // `Retrying in 1s (attempt 1/1): [API Error: 429 Rate limit reached for requests.]`
        if !stderr_line.contains("Retrying in") {
            return None;
        }
        let at = stderr_line.find("[API Error:")?;
        Some(stderr_line[at..].trim().to_string())
    }

    fn can_resume(&self) -> bool {
        true
    }

    /// Qwen Code has no model-list command: the models are the ones the user configured
    /// (`OPENAI_MODEL`, `model.name`, `modelProviders`), printed by `printf`.
    fn models_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let user = Self::user_settings(req);
        let mut ids: Vec<String> = Vec::new();
        let mut add = |id: &str| {
            if !id.is_empty() && !ids.iter().any(|i| i == id) {
                ids.push(id.to_string());
            }
        };
        for var in ["OPENAI_MODEL", "QWEN_MODEL"] {
            if let Some(model) = req.env_var(var) {
                add(&model);
            }
        }
        if let Some(name) = settings::configured_model(&user) {
            add(name);
        }
        if let Some(Value::Object(providers)) = user.get("modelProviders") {
            for models in providers.values().filter_map(Value::as_array) {
                for id in models
                    .iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                {
                    add(id);
                }
            }
        }
        Ok(Invocation::printing_models(ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_file_of_the_one_policy_is_denied_to_read() {
        use crate::secret_files::check::assert_tool_rules_refuse_exactly_the_secrets;
        assert_tool_rules_refuse_exactly_the_secrets(
            "qwen",
            |_| &["Read"],
            |mode| deny_rules(mode, false),
        );
    }

    fn request(mode: Mode, env: Vec<(&str, String)>) -> InvocationRequest {
        InvocationRequest::for_test_of("qwen", mode, env)
    }

    /// The JSON of the settings file named `name` that the invocation has the engine write.
    fn file_of(inv: &Invocation, name: &str) -> Value {
        let file = inv
            .files
            .iter()
            .find(|f| f.path.file_name().is_some_and(|n| n == name))
            .expect("settings");
        serde_json::from_str(&file.content).expect("json")
    }

    #[test]
    fn read_mode_denies_edits_and_write_mode_auto_approves_them() {
        let read = Qwen.invocation(&request(Mode::Read, vec![])).unwrap();
        let args = read.args_text();
        assert!(args.windows(2).any(|w| w == ["--approval-mode", "default"]));
        assert!(args.contains(&"write_file".to_string()) && args.contains(&"edit".to_string()));
        let write = Qwen.invocation(&request(Mode::Write, vec![])).unwrap();
        let args = write.args_text();
        assert!(args
            .windows(2)
            .any(|w| w == ["--approval-mode", "auto-edit"]));
        assert!(!args.contains(&"write_file".to_string()));
        assert!(args
            .windows(2)
            .any(|w| w == ["--max-wall-time", MAX_WALL_TIME]));
    }

    #[test]
    fn the_users_providers_survive_but_not_their_permission_rules() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("settings.json"),
            r#"{"security":{"auth":{"selectedType":"openai"}},"modelProviders":{"openai":[{"id":"m1"}]},
               "permissions":{"allow":["Bash"]},"privacy":{"usageStatisticsEnabled":true}}"#,
        )
        .unwrap();
        let req = request(
            Mode::Write,
            vec![("QWEN_HOME", dir.path().display().to_string())],
        );
        let inv = Qwen.invocation(&req).unwrap();
        let user = file_of(&inv, "settings.json");
        assert_eq!(user["security"]["auth"]["selectedType"], "openai");
        assert_eq!(user["modelProviders"]["openai"][0]["id"], "m1");
        assert!(user.get("permissions").is_none(), "{user}");
        // The mode's settings are Qwen's system settings, which override the user's.
        let s = file_of(&inv, "qwen-system-settings.json");
        assert_eq!(s["privacy"]["usageStatisticsEnabled"], false);
        assert!(s["permissions"].get("allow").is_none(), "{s}");
        assert!(inv
            .env
            .iter()
            .any(|(k, v)| k == SYSTEM_SETTINGS_VAR && *v == *"/t/qwen-system-settings.json"));
        let deny: Vec<&str> = s["permissions"]["deny"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(deny.contains(&"Bash(git push *)") && deny.contains(&"Read(**/.env)"));
        assert!(deny.contains(&"web_fetch") && deny.contains(&"agent"));
    }

    #[test]
    fn the_settings_go_to_the_private_home_and_credentials_are_linked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("oauth_creds.json"), "{}").unwrap();
        let req = request(
            Mode::Read,
            vec![
                ("HOME", dir.path().parent().unwrap().display().to_string()),
                ("QWEN_HOME", dir.path().display().to_string()),
            ],
        );
        let inv = Qwen.invocation(&req).unwrap();
        assert!(inv
            .env
            .iter()
            .any(|(k, v)| k == "QWEN_HOME" && v == "/s/qwen-home"));
        assert_eq!(
            inv.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>(),
            [
                PathBuf::from("/s/qwen-home/settings.json"),
                PathBuf::from("/t/qwen-system-settings.json")
            ]
        );
        assert_eq!(
            inv.links,
            vec![(
                PathBuf::from("/s/qwen-home/oauth_creds.json"),
                dir.path().join("oauth_creds.json")
            )]
        );
    }

    #[test]
    fn a_new_run_names_its_session_and_follows_that_sessions_debug_log() {
        let inv = Qwen.invocation(&request(Mode::Read, vec![])).unwrap();
        let args = inv.args_text();
        let at = args
            .iter()
            .position(|a| a == "--session-id")
            .expect("--session-id");
        let log = format!("/s/qwen-home/debug/{}.txt", args[at + 1]);
        assert!(args.contains(&log), "{args:?}");
        assert!(inv
            .env
            .iter()
            .any(|(k, v)| k == retries::DEBUG_LOG_VAR && v == "1"));
        let mut req = request(Mode::Read, vec![]);
        req.resume_session = Some("abc".into());
        let args = Qwen.invocation(&req).unwrap().args_text();
        assert!(!args.contains(&"--session-id".to_string()));
        assert!(args.contains(&"/s/qwen-home/debug/abc.txt".to_string()));
    }

    #[test]
    fn retry_lines_on_stderr_are_signals() {
        let q = Qwen;
        assert_eq!(
            q.retry_signal(
                "Retrying in 1s (attempt 1/1): [API Error: 429 Rate limit reached for requests.]"
            )
            .as_deref(),
            Some("[API Error: 429 Rate limit reached for requests.]")
        );
        assert!(q.retry_signal("Warning: Basic terminal detected").is_none());
    }
}
