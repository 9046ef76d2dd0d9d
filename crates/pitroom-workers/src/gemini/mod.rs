//! Gemini CLI (`gemini -o stream-json --skip-trust`), measured with `@google/gemini-cli` 0.61.0
//! (see `docs/workers/gemini.md`).
//!
//! Facts this adapter is built on: headless runs offer only the tools the approval mode and the
//! policy engine allow (`default`: no edits; `auto_edit`: edits), and a policy file adds the
//! floor (shell allowed except the denied commands, no web, no subagents, no secret files);
//! the exit code is the HTTP status mod 256, so a run is judged by its events; retries take
//! minutes by default (`general.maxAttempts` caps them, [`Adapter::retry_signal`] reads the
//! `Attempt N failed` lines); usage statistics go to Google unless switched off in the
//! settings. Settings and policies are read only from files: a private `GEMINI_CLI_HOME` gets
//! them as [`SettingsFile`]s the engine writes, with the user's auth merged
//! in (`common::settings_files`).

pub(crate) mod parse;

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::adapter::{
    flag, Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, SettingsFile,
    StreamParser,
};
use crate::common::settings_files::{self as settings, read_json_object, ToolFloor};
use crate::events::{FailureKind, Mode};
use crate::json::merge;
pub use parse::GeminiStream;

/// The Gemini CLI adapter (each run's stream gets its own [`GeminiStream`]).
#[derive(Debug, Default)]
pub struct Gemini;

/// `GEMINI_CLI_HOME` inside the shared per-backend state dir (the CLI adds `.gemini/`).
const HOME_DIR: &str = "gemini-home";
/// Files of the user's `~/.gemini` that carry credentials.
const CREDENTIAL_FILES: &[&str] = &[
    "oauth_creds.json",
    "google_accounts.json",
    ".env",
    "installation_id",
];
const TOOL_FLOOR: ToolFloor = ToolFloor {
    // Tools no worker gets: subagents, plan mode, memory that writes to the user's home.
    always: &[
        "invoke_agent",
        "enter_plan_mode",
        "save_memory",
        "activate_skill",
    ],
    web: &["google_web_search", "web_fetch"],
    edit: &["write_file", "replace"],
};

impl Gemini {
    fn config_dir(req: &InvocationRequest) -> PathBuf {
        req.private_home(HOME_DIR).join(".gemini")
    }

    /// The user's `~/.gemini`: under `$GEMINI_CLI_HOME`, else `$HOME`.
    fn user_dir(req: &InvocationRequest) -> Option<PathBuf> {
        req.env_var("GEMINI_CLI_HOME")
            .filter(|v| !v.is_empty())
            .or_else(|| req.env_var("HOME"))
            .map(|h| PathBuf::from(h).join(".gemini"))
    }

    fn user_settings(req: &InvocationRequest) -> serde_json::Map<String, Value> {
        Self::user_dir(req)
            .map(|d| read_json_object(&d.join("settings.json")))
            .unwrap_or_default()
    }

    fn settings_file(req: &InvocationRequest) -> SettingsFile {
        let mut user = Self::user_settings(req);
        settings::remove_keys(
            &mut user,
            &["policyPaths", "adminPolicyPaths", "mcpServers", "hooks"],
            &["allowed", "core", "exclude"],
        );
        let mut merged = Value::Object(user);
        let has_auth = merged
            .pointer("/security/auth/selectedType")
            .is_some_and(|v| !v.is_null());
        merge(&mut merged, overlay());
        if !has_auth && req.env_var("GEMINI_API_KEY").is_some() {
            merge(
                &mut merged,
                json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}),
            );
        }
        SettingsFile {
            path: Self::config_dir(req).join("settings.json"),
            content: merged.to_string(),
        }
    }

    fn policy_path(req: &InvocationRequest) -> PathBuf {
        Self::config_dir(req).join(format!("pitroom-{}.toml", req.mode.as_str()))
    }

    fn policy_file(req: &InvocationRequest) -> SettingsFile {
        SettingsFile {
            path: Self::policy_path(req),
            content: policy(req.mode, req.web),
        }
    }

    fn credential_links(req: &InvocationRequest) -> Vec<(PathBuf, PathBuf)> {
        settings::credential_links(
            &Self::config_dir(req),
            Self::user_dir(req),
            CREDENTIAL_FILES,
        )
    }
}

/// Pitroom's settings: no usage statistics or telemetry, no update checks, two attempts per
/// model call (the default of ten takes about four minutes on a persistent 429).
fn overlay() -> Value {
    json!({
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": 2},
    })
}

/// The mode's policy (user tier, above the CLI's defaults): the shell allowed except the
/// floor's commands; web, subagents and secret files denied; edits denied in read mode.
pub(crate) fn policy(mode: Mode, web: bool) -> String {
    let mut out = String::from("# Written by Pitroom for one worker run.\n");
    let mut rule = |body: String| out.push_str(&format!("\n[[rule]]\n{body}"));
    rule("toolName = \"run_shell_command\"\ndecision = \"allow\"\npriority = 100\n".into());
    let prefixes: Vec<String> = crate::denied::patterns()
        .map(|p| toml_string(crate::denied::words(&p)))
        .collect();
    rule(format!(
        "toolName = \"run_shell_command\"\ncommandPrefix = [{}]\ndecision = \"deny\"\npriority = 900\n",
        prefixes.join(", ")
    ));
    let names: Vec<String> = TOOL_FLOOR
        .removed(mode, web)
        .iter()
        .map(|t| toml_string(t))
        .collect();
    rule(format!(
        "toolName = [{}]\ndecision = \"deny\"\npriority = 900\n",
        names.join(", ")
    ));
    for pattern in crate::secret_files::json_path_regexes() {
        rule(format!(
            "toolName = [\"read_file\", \"read_many_files\"]\nargsPattern = {}\ndecision = \"deny\"\npriority = 950\n",
            toml_string(&pattern)
        ));
    }
    out
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let escaped: String = text
        .chars()
        .flat_map(|c| match c {
            '\\' => vec!['\\', '\\'],
            '"' => vec!['\\', '"'],
            c => vec![c],
        })
        .collect();
    format!("\"{escaped}\"")
}

fn approval_mode(mode: Mode) -> &'static str {
    match mode {
        Mode::Read => "default",
        Mode::Write | Mode::Isolate => "auto_edit",
    }
}

/// HTTP statuses behind Gemini's exit codes (`status & 0xFF` in the JSON output modes).
fn status_from_exit(code: i32) -> Option<u16> {
    match code {
        173 => Some(429),
        147 => Some(403),
        144 => Some(400),
        145 => Some(401),
        244 => Some(500),
        247 => Some(503),
        17 => Some(529),
        _ => None,
    }
}

impl Adapter for Gemini {
    fn id(&self) -> &'static str {
        "gemini"
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let program = req.find_program("gemini")?;
        let mut notes = Vec::new();
        // The prompt comes on stdin; Gemini reads it whole and appends the (empty) -p text.
        let mut args: Vec<OsString> = ["-p", "", "-o", "stream-json", "--skip-trust"]
            .map(OsString::from)
            .to_vec();
        args.extend([
            "--approval-mode".into(),
            approval_mode(req.mode).into(),
            "--policy".into(),
            Self::policy_path(req).into_os_string(),
        ]);
        args.extend(flag("--model", req.model.as_ref()));
        notes.extend(
            req.dropped_effort("Gemini CLI has no effort flag (thinking is set per model)"),
        );
        args.extend(flag("--resume", req.resume_session.as_ref()));
        let env = vec![
            ("GEMINI_CLI_HOME".into(), req.private_home(HOME_DIR).into()),
            ("TMPDIR".into(), req.dirs.scratch.join("tmp").into()),
            // The relaunch only raises Node's heap; skipping it saves a second start.
            ("GEMINI_CLI_NO_RELAUNCH".into(), "true".into()),
            ("NO_UPDATE_NOTIFIER".into(), "1".into()),
            ("PWD".into(), req.workdir.clone().into()),
        ];
        Ok(Invocation {
            files: vec![Self::settings_file(req), Self::policy_file(req)],
            env,
            env_remove: vec![
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH".into(),
                "GEMINI_CLI_SYSTEM_DEFAULTS_PATH".into(),
                "GEMINI_CLI_TRUST_WORKSPACE".into(),
            ],
            notes,
            links: Self::credential_links(req),
            ..Invocation::new(program, args)
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(GeminiStream::default())
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        let by_text = crate::common::failure_texts::TEXTS.classify(evidence);
        if by_text != FailureKind::Other {
            return by_text;
        }
        match evidence.exit_code.and_then(status_from_exit) {
            Some(429 | 503 | 529) => FailureKind::RateLimited,
            Some(400 | 401 | 403) => FailureKind::Auth,
            _ if evidence.stderr_tail.contains("PERMISSION_DENIED")
                || evidence.stderr_tail.contains("UNAUTHENTICATED") =>
            {
                FailureKind::Auth
            }
            _ => FailureKind::Other,
        }
    }

    fn retry_signal(&self, stderr_line: &str) -> Option<String> {
        // `Attempt 1 failed: Resource has been exhausted (e.g. check quota). … Retrying after 5720ms...`
        // `Attempt 1 failed with status 503. Retrying with backoff... _ApiError: {…}`
        let line = stderr_line.trim_start();
        if !line.starts_with("Attempt ") || !line.contains(" failed") {
            return None;
        }
        let after = line.split_once(" failed")?.1;
        let message = after.trim_start_matches([':', '.']).trim();
        Some(if message.is_empty() {
            line.to_string()
        } else {
            message.to_string()
        })
    }

    fn can_resume(&self) -> bool {
        true
    }

    /// Gemini CLI has no model-list command: the models are the user's configured one
    /// (`GEMINI_MODEL`, `model.name`) and `auto` (the CLI's router), printed by `printf`.
    fn models_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let user = Self::user_settings(req);
        let mut ids: Vec<String> = Vec::new();
        let configured = req
            .env_var("GEMINI_MODEL")
            .or_else(|| settings::configured_model(&user).map(str::to_string));
        ids.extend(configured.filter(|m| !m.is_empty()));
        if !ids.iter().any(|i| i == "auto") {
            ids.push("auto".into());
        }
        Ok(Invocation::printing_models(ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_file_of_the_one_policy_is_denied_to_the_read_tools() {
        use crate::secret_files::check::assert_refuses_exactly_the_secrets;
        for mode in [Mode::Read, Mode::Write] {
            let policy: toml::Value = toml::from_str(&policy(mode, false)).expect("policy TOML");
            let patterns: Vec<regex::Regex> = policy["rule"]
                .as_array()
                .expect("rules")
                .iter()
                .filter(|r| r["decision"].as_str() == Some("deny"))
                .filter(|r| {
                    r["toolName"]
                        .as_array()
                        .is_some_and(|t| t.iter().any(|n| n.as_str() == Some("read_file")))
                })
                .filter_map(|r| r["argsPattern"].as_str())
                .map(|p| regex::Regex::new(p).expect("a valid pattern"))
                .collect();
            // Gemini matches the pattern against the call's JSON arguments: an absolute path,
            // and a relative one, must both be caught.
            assert_refuses_exactly_the_secrets(&format!("gemini ({mode:?})"), |path| {
                let absolute =
                    serde_json::json!({"absolute_path": format!("/work/p/{path}")}).to_string();
                let relative = serde_json::json!({"file_path": path}).to_string();
                patterns.iter().any(|p| p.is_match(&absolute))
                    && patterns.iter().any(|p| p.is_match(&relative))
            });
        }
    }

    fn request(mode: Mode, env: Vec<(&str, String)>) -> InvocationRequest {
        InvocationRequest::for_test_of("gemini", mode, env)
    }

    fn file_content(inv: &Invocation, name: &str) -> String {
        inv.files
            .iter()
            .find(|f| f.path.ends_with(name))
            .map(|f| f.content.clone())
            .expect("file content")
    }

    #[test]
    fn read_policy_denies_edits_web_and_history_commands_and_write_policy_allows_edits() {
        let read = policy(Mode::Read, false);
        assert!(read.contains("\"write_file\", \"replace\""), "{read}");
        assert!(read.contains("\"google_web_search\""), "{read}");
        assert!(read.contains("\"git push\""), "{read}");
        assert!(!read.contains("ask_user"));
        let write = policy(Mode::Write, true);
        assert!(!write.contains("\"write_file\""), "{write}");
        assert!(!write.contains("\"web_fetch\""), "{write}");
        assert_eq!(
            read.matches("[[rule]]").count(),
            read.matches("decision = ").count()
        );
    }

    #[test]
    fn settings_keep_the_users_auth_and_switch_off_statistics() {
        let dir = tempfile::tempdir().unwrap();
        crate::testing::write_file(
            &dir.path().join(".gemini/settings.json"),
            r#"{"security":{"auth":{"selectedType":"oauth-personal"}},"privacy":{"usageStatisticsEnabled":true},"policyPaths":["/x"]}"#,
        );
        std::fs::write(dir.path().join(".gemini/oauth_creds.json"), "{}").unwrap();
        let req = request(Mode::Read, vec![("HOME", dir.path().display().to_string())]);
        let inv = Gemini.invocation(&req).unwrap();
        let s: Value = serde_json::from_str(&file_content(&inv, "settings.json")).unwrap();
        assert_eq!(s["security"]["auth"]["selectedType"], "oauth-personal");
        assert_eq!(s["privacy"]["usageStatisticsEnabled"], false);
        assert_eq!(s["general"]["maxAttempts"], 2);
        assert!(s.get("policyPaths").is_none());
        assert_eq!(
            inv.links,
            vec![(
                PathBuf::from("/s/gemini-home/.gemini/oauth_creds.json"),
                dir.path().join(".gemini/oauth_creds.json")
            )]
        );
    }

    #[test]
    fn an_api_key_in_the_environment_selects_key_auth() {
        let req = request(
            Mode::Write,
            vec![
                ("HOME", "/nonexistent".into()),
                ("GEMINI_API_KEY", "k".into()),
            ],
        );
        let inv = Gemini.invocation(&req).unwrap();
        let s: Value = serde_json::from_str(&file_content(&inv, "settings.json")).unwrap();
        assert_eq!(s["security"]["auth"]["selectedType"], "gemini-api-key");
    }

    #[test]
    fn exit_codes_that_are_http_statuses_classify_when_the_text_does_not() {
        let g = Gemini;
        let kind = |code| {
            g.classify(&FailureEvidence {
                events: &[],
                stderr_tail: "",
                exit_code: Some(code),
            })
        };
        assert_eq!(kind(173), FailureKind::RateLimited);
        assert_eq!(kind(147), FailureKind::Auth);
        assert_eq!(kind(244), FailureKind::Other);
    }

    #[test]
    fn attempt_lines_on_stderr_are_retry_signals() {
        let g = Gemini;
        assert_eq!(
            g.retry_signal("Attempt 1 failed: Resource has been exhausted (e.g. check quota).. Retrying after 5720ms...")
                .as_deref(),
            Some("Resource has been exhausted (e.g. check quota).. Retrying after 5720ms...")
        );
        assert!(g
            .retry_signal("Attempt 1 failed with status 503. Retrying with backoff...")
            .is_some());
        assert!(g
            .retry_signal("Warning: 256-color support not detected")
            .is_none());
    }
}
