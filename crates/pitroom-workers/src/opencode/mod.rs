//! OpenCode (`opencode run --format json`), the default worker.
//!
//! Facts this adapter is built on (measured with OpenCode 1.18.33, see `docs/workers/opencode.md`):
//! an open stdin hangs it and a positional prompt gets quoted, so the prompt goes on stdin;
//! `ask` permissions silently end a headless run, so the profile is allow/deny only; exit codes
//! lie, so the engine judges a run by its events and its tree.

pub(crate) mod classify;
pub(crate) mod config;
pub(crate) mod parse;

use std::ffi::OsString;
use std::path::PathBuf;

use crate::adapter::{
    Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, LineByLine, ModelInfo,
    PromptInput, StreamParser,
};
use crate::events::FailureKind;
use crate::{find_binary, program_of};

pub use config::{permission_profile, worker_config};

/// The OpenCode adapter. Kilo Code shares its stream format and will reuse the parser.
pub struct OpenCode;

/// Where OpenCode keeps its state, relative to the shared per-backend directory.
const DATA: &str = "data";
/// OpenCode's own database in its data dir: sessions, messages, parts.
const DB_FILE: &str = "opencode.db";

/// `provider/model` of `session` from OpenCode's database (`session.model` holds
/// `{"id": …, "providerID": …}`); opened read-only, so a run that is still writing it is never
/// disturbed. `None` when the file, the session or the field is missing.
pub(crate) fn session_model_in(db: &std::path::Path, session: &str) -> Option<String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    conn.busy_timeout(std::time::Duration::from_secs(2)).ok()?;
    let model: String = conn
        .query_row("SELECT model FROM session WHERE id = ?1", [session], |r| {
            r.get(0)
        })
        .ok()?;
    let value: serde_json::Value = serde_json::from_str(&model).ok()?;
    let id = value["id"].as_str().filter(|s| !s.is_empty())?;
    Some(
        match value["providerID"].as_str().filter(|s| !s.is_empty()) {
            Some(provider) => format!("{provider}/{id}"),
            None => id.to_string(),
        },
    )
}
const CONFIG: &str = "config";
const CACHE: &str = "cache";

impl OpenCode {
    fn program(req: &InvocationRequest) -> Result<PathBuf, AdapterError> {
        let lookup = |k: &str| req.env_var(k);
        Ok(find_binary("opencode", program_of("opencode"), &lookup)?)
    }

    /// Environment shared by runs and model listings: private state dirs, no outbound traffic
    /// beyond the model provider.
    fn base_env(req: &InvocationRequest) -> Vec<(OsString, OsString)> {
        let shared = &req.dirs.shared;
        let scratch = &req.dirs.scratch;
        let mut env: Vec<(OsString, OsString)> = vec![
            ("XDG_DATA_HOME".into(), shared.join(DATA).into()),
            ("XDG_CONFIG_HOME".into(), shared.join(CONFIG).into()),
            ("XDG_CACHE_HOME".into(), shared.join(CACHE).into()),
            // Lock files and daemon discovery live in the state dir: a private one per run means
            // no shared `opencode serve` is ever attached.
            ("XDG_STATE_HOME".into(), scratch.join("state").into()),
            // Bun extracts a 5.5 MB library into TMPDIR on every start and never removes it.
            ("TMPDIR".into(), scratch.join("tmp").into()),
            ("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into()),
            ("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into()),
            // OpenCode installs `@opencode-ai/plugin` in the background with an embedded npm
            // client; a dead loopback registry switches that off without failing the run.
            ("npm_config_registry".into(), "http://127.0.0.1:9/".into()),
        ];
        env.push(("PWD".into(), req.workdir.clone().into()));
        env
    }
}

/// OpenCode keeps provider credentials (`opencode auth login`) in `$XDG_DATA_HOME/opencode/
/// auth.json`. The worker's data dir is private, so the user's file is linked into it.
fn credential_links(req: &InvocationRequest) -> Vec<(PathBuf, PathBuf)> {
    let data_home = req
        .env_var("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            req.env_var("HOME")
                .map(|h| PathBuf::from(h).join(".local/share"))
        });
    let Some(data_home) = data_home else {
        return Vec::new();
    };
    let auth = data_home.join("opencode").join("auth.json");
    if !auth.is_file() {
        return Vec::new();
    }
    let link = req
        .dirs
        .shared
        .join(DATA)
        .join("opencode")
        .join("auth.json");
    vec![(link, auth)]
}

/// `run` and its flags, the same for every CLI of the OpenCode family (OpenCode, Kilo): the
/// mode's agent, a title, logs on stderr, the work dir, the model and its effort variant, the
/// session to resume. `cli` names the CLI in notes.
pub(crate) fn run_args(
    cli: &str,
    req: &InvocationRequest,
    notes: &mut Vec<String>,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["run", "--format", "json", "--agent"]
        .map(OsString::from)
        .to_vec();
    args.push(config::agent_name(req.mode).into());
    // A title skips the CLI's extra title-generation model call.
    args.extend(["--title".into(), OsString::from(&req.title)]);
    // Logs on stderr: the real cause of "Unexpected server error" is only there.
    args.extend(["--print-logs", "--log-level", "WARN"].map(OsString::from));
    args.extend(["--dir".into(), req.workdir.clone().into_os_string()]);
    if let Some(model) = &req.model {
        args.extend(["--model".into(), OsString::from(model)]);
    }
    match (&req.effort, &req.model) {
        (Some(effort), Some(_)) => args.extend(["--variant".into(), OsString::from(effort)]),
        (Some(effort), None) => notes.push(format!(
            "--effort {effort} dropped: {cli} sets effort per model variant, and no model is pinned"
        )),
        _ => {}
    }
    if let Some(session) = &req.resume_session {
        args.extend(["--session".into(), OsString::from(session)]);
    }
    args
}

impl Adapter for OpenCode {
    fn id(&self) -> &'static str {
        "opencode"
    }

    fn session_model(&self, dirs: &crate::adapter::StateDirs, session: &str) -> Option<String> {
        session_model_in(
            &dirs.shared.join(DATA).join("opencode").join(DB_FILE),
            session,
        )
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let program = Self::program(req)?;
        let mut notes = Vec::new();
        let config = worker_config(req).map_err(AdapterError::Config)?;
        let mut env = Self::base_env(req);
        env.push(("OPENCODE_CONFIG_CONTENT".into(), config.to_string().into()));
        // OPENCODE_PERMISSION is applied after every config source: setting it to the
        // profile keeps any other source from loosening the mode's rules.
        let permission = permission_profile(req.mode, req.web);
        env.push(("OPENCODE_PERMISSION".into(), permission.to_string().into()));

        let args = run_args("OpenCode", req, &mut notes);
        Ok(Invocation {
            program,
            args,
            prompt: PromptInput::Stdin,
            files: Vec::new(),
            env,
            env_remove: vec!["OPENCODE_CONFIG".into(), "OPENCODE_CONFIG_DIR".into()],
            notes,
            links: credential_links(req),
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(LineByLine(parse::parse_line))
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        classify::classify(evidence)
    }

    fn can_resume(&self) -> bool {
        true
    }

    fn retry_signal(&self, stderr_line: &str) -> Option<String> {
        // `--print-logs` writes one `message="stream error"` line per failed attempt:
        // `… error.error="AI_APICallError: Rate limit reached for requests"`.
        if !stderr_line.contains("message=\"stream error\"") {
            return None;
        }
        let value = stderr_line.split("error.error=\"").nth(1)?;
        let message = value.split('"').next().unwrap_or(value);
        Some(message.trim_start_matches("AI_APICallError: ").to_string())
    }

    fn models_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let program = Self::program(req)?;
        let config = worker_config(req).map_err(AdapterError::Config)?;
        let mut env = Self::base_env(req);
        env.push(("OPENCODE_CONFIG_CONTENT".into(), config.to_string().into()));
        Ok(Invocation {
            program,
            args: vec!["models".into()],
            prompt: PromptInput::Stdin,
            files: Vec::new(),
            env,
            env_remove: vec!["OPENCODE_CONFIG".into(), "OPENCODE_CONFIG_DIR".into()],
            notes: Vec::new(),
            links: credential_links(req),
        })
    }

    fn parse_models(&self, stdout: &str) -> Vec<ModelInfo> {
        stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && l.contains('/') && !l.contains(' '))
            .map(|id| ModelInfo {
                id: id.to_string(),
                efforts: Vec::new(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db_with(rows: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DB_FILE);
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("CREATE TABLE session (id TEXT PRIMARY KEY, model TEXT)", [])
            .unwrap();
        for (id, model) in rows {
            conn.execute("INSERT INTO session VALUES (?1, ?2)", [id, model])
                .unwrap();
        }
        (dir, path)
    }

    #[test]
    fn the_model_a_session_ran_is_read_from_opencodes_database() {
        let (_dir, db) = db_with(&[
            (
                "ses_1",
                r#"{"id":"big-pickle","providerID":"opencode","variant":"default"}"#,
            ),
            ("ses_2", r#"{"id":"solo"}"#),
            ("ses_3", "not json"),
        ]);
        assert_eq!(
            session_model_in(&db, "ses_1").as_deref(),
            Some("opencode/big-pickle")
        );
        assert_eq!(session_model_in(&db, "ses_2").as_deref(), Some("solo"));
        assert_eq!(session_model_in(&db, "ses_3"), None);
        assert_eq!(session_model_in(&db, "ses_missing"), None);
        assert_eq!(
            session_model_in(&db.with_file_name("absent.db"), "ses_1"),
            None
        );
    }
}
