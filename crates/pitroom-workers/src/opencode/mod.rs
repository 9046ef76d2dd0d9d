//! OpenCode (`opencode run --format json`), the default worker.
//!
//! Facts this adapter is built on (measured with OpenCode 1.18.33, see `docs/workers/opencode.md`):
//! an open stdin hangs it and a positional prompt gets quoted, so the prompt goes on stdin;
//! `ask` permissions silently end a headless run, so the profile is allow/deny only; exit codes
//! lie, so the engine judges a run by its events and its tree.

pub(crate) mod config;
pub(crate) mod family;
pub(crate) mod parse;

use serde_json::Value;

use crate::adapter::{
    Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, LineByLine, ModelInfo,
    StreamParser,
};
use crate::events::FailureKind;
use config::OPENCODE_CONFIG;
use family::Family;

pub use config::permission_profile;

/// The OpenCode adapter. Kilo Code is a CLI of the same family (`opencode::family`).
pub struct OpenCode;

const OPENCODE: Family = Family {
    id: "opencode",
    name: "OpenCode",
    config: OPENCODE_CONFIG,
    env: &[
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ],
    env_remove: &["OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR"],
    db_file: "opencode.db",
    permission: |req| permission_profile(req.mode, req.web),
};

/// The full `OPENCODE_CONFIG_CONTENT`: the user's config, their permission rules replaced by the
/// mode's profile, and Pitroom's agent for the mode.
pub fn worker_config(req: &InvocationRequest) -> Value {
    OPENCODE.worker_config(req)
}

impl Adapter for OpenCode {
    fn id(&self) -> &'static str {
        OPENCODE.id
    }

    fn session_model(&self, dirs: &crate::adapter::StateDirs, session: &str) -> Option<String> {
        OPENCODE.session_model(dirs, session)
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        OPENCODE.run_invocation(req)
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(LineByLine(parse::parse_line))
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        crate::common::failure_texts::TEXTS.classify(evidence)
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
        OPENCODE.models_invocation(req)
    }

    fn parse_models(&self, stdout: &str) -> Vec<ModelInfo> {
        stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && l.contains('/') && !l.contains(' '))
            .map(ModelInfo::without_efforts)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::family::session_model_in;
    use super::*;

    fn db_with(rows: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(OPENCODE.db_file);
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
