//! Kilo Code (`kilo run --format json`), measured with `@kilocode/cli` 7.7.7 (see
//! `docs/workers/kilo.md`).
//!
//! Kilo is OpenCode under another name: the same `run` flags, the same event stream (parsed by
//! OpenCode's parser), the same config format, permission profile and agents, read from
//! `KILO_*` variables and `kilo/` directories. Differences this adapter handles: `bash` defaults
//! to `ask` (the profile says allow/deny only), extra tools that start background work are
//! denied, telemetry, session ingest, presence, codebase indexing and the daemon are switched
//! off, and every XDG directory is private so no running Kilo daemon is attached.

use serde_json::Value;

use crate::adapter::{
    Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, LineByLine, ModelInfo,
    StateDirs, StreamParser,
};
use crate::events::FailureKind;
use crate::opencode::config::{permission_profile, ConfigPlaces};
use crate::opencode::family::Family;
use crate::opencode::OpenCode;

/// The Kilo Code adapter.
pub struct Kilo;

const KILO: Family = Family {
    id: "kilo",
    name: "Kilo",
    config: KILO_CONFIG,
    env: &[
        ("KILO_NO_DAEMON", "1"),
        ("KILO_DISABLE_AUTOUPDATE", "1"),
        ("KILO_DISABLE_MODELS_FETCH", "1"),
        ("KILO_TELEMETRY_LEVEL", "off"),
        ("KILO_DISABLE_SESSION_INGEST", "1"),
        ("KILO_DISABLE_PRESENCE", "1"),
        ("KILO_DISABLE_CODEBASE_INDEXING", "1"),
    ],
    env_remove: &["KILO_CONFIG", "KILO_CONFIG_DIR", "KILO_SERVER_URL"],
    // Kilo keeps OpenCode's database schema under its own name.
    db_file: "kilo.db",
    permission: kilo_permission_profile,
};

/// Where the user's Kilo configuration lives (Kilo also reads OpenCode's file names there).
const KILO_CONFIG: ConfigPlaces = ConfigPlaces {
    dir: "kilo",
    files: &[
        "config.json",
        "kilo.json",
        "kilo.jsonc",
        "opencode.json",
        "opencode.jsonc",
    ],
    env_prefix: "KILO",
};

/// Kilo's own tools that OpenCode lacks and that start work outliving the run or reach out.
const DENIED_KILO_TOOLS: &[&str] = &[
    "background_process",
    "schedule_wakeup",
    "cancel_wakeup",
    "board_post",
    "board_read",
];

/// OpenCode's permission profile plus Kilo's extra tools denied.
pub fn kilo_permission_profile(req: &InvocationRequest) -> Value {
    let mut profile = permission_profile(req.mode, req.web);
    if let Value::Object(map) = &mut profile {
        for tool in DENIED_KILO_TOOLS {
            map.insert((*tool).into(), "deny".into());
        }
    }
    profile
}

/// The full `KILO_CONFIG_CONTENT`: the user's config, their permission rules replaced by the
/// profile, and Pitroom's agent for the mode.
pub fn worker_config(req: &InvocationRequest) -> Value {
    KILO.worker_config(req)
}

impl Adapter for Kilo {
    fn id(&self) -> &'static str {
        KILO.id
    }

    /// Kilo starts several seconds slower than OpenCode and retries the same way: stopped after
    /// two failed calls instead of three, a 5xx still surfaces within 15 s (measured idle: the
    /// third retry took a 500 to 15.9 s).
    fn retry_cut(&self) -> u32 {
        2
    }

    fn session_model(&self, dirs: &StateDirs, session: &str) -> Option<String> {
        KILO.session_model(dirs, session)
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        KILO.run_invocation(req)
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(LineByLine(crate::opencode::parse::parse_line))
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        crate::common::failure_texts::TEXTS.classify(evidence)
    }

    fn retry_signal(&self, stderr_line: &str) -> Option<String> {
        // The same `--print-logs` lines as OpenCode.
        OpenCode.retry_signal(stderr_line)
    }

    fn can_resume(&self) -> bool {
        true
    }

    fn models_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        KILO.models_invocation(req)
    }

    fn parse_models(&self, stdout: &str) -> Vec<ModelInfo> {
        OpenCode.parse_models(stdout)
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;
    use crate::events::Mode;

    fn request(mode: Mode, env: Vec<(&str, String)>) -> InvocationRequest {
        InvocationRequest::for_test_of("kilo", mode, env)
    }

    fn env_of<'a>(inv: &'a Invocation, key: &str) -> Option<&'a OsString> {
        inv.env.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    #[test]
    fn the_users_kilo_providers_survive_and_their_permissions_do_not() {
        let dir = tempfile::tempdir().unwrap();
        crate::testing::write_file(
            &dir.path().join("kilo/kilo.jsonc"),
            r#"{ // mine
               "provider": {"p": {"options": {"baseURL": "http://x"}}},
               "permission": {"edit": "allow", "bash": "ask"}, }"#,
        );
        let req = request(
            Mode::Read,
            vec![("XDG_CONFIG_HOME", dir.path().display().to_string())],
        );
        let cfg = worker_config(&req);
        assert_eq!(cfg["provider"]["p"]["options"]["baseURL"], "http://x");
        assert_eq!(cfg["permission"]["edit"], "deny");
        assert_eq!(cfg["permission"]["background_process"], "deny");
        assert_eq!(cfg["agent"]["pitroom-read"]["permission"]["task"], "deny");
    }

    /// Found by fuzzing: a user's agent named like Pitroom's merged its rules into the profile.
    #[test]
    fn a_users_agent_named_like_pitrooms_adds_no_rule_to_the_profile() {
        let user = r#"{"agent": {"pitroom-write": {"permission": {"git push*": "allow"}}}}"#;
        let req = request(Mode::Write, vec![("KILO_CONFIG_CONTENT", user.into())]);
        let cfg = worker_config(&req);
        assert_eq!(
            cfg["agent"]["pitroom-write"]["permission"],
            kilo_permission_profile(&req)
        );
    }

    #[test]
    fn every_state_dir_is_private_and_the_daemon_is_off() {
        let inv = Kilo.invocation(&request(Mode::Write, vec![])).unwrap();
        assert_eq!(env_of(&inv, "XDG_STATE_HOME").unwrap(), "/t/state");
        assert_eq!(env_of(&inv, "XDG_DATA_HOME").unwrap(), "/s/data");
        assert_eq!(env_of(&inv, "KILO_NO_DAEMON").unwrap(), "1");
        assert_eq!(env_of(&inv, "KILO_TELEMETRY_LEVEL").unwrap(), "off");
        let permission: Value =
            serde_json::from_str(&env_of(&inv, "KILO_PERMISSION").unwrap().to_string_lossy())
                .unwrap();
        assert_eq!(permission["edit"]["*"], "allow");
        let args = inv.args_text();
        assert!(args.windows(2).any(|w| w == ["--agent", "pitroom-write"]));
        assert!(!args.iter().any(|a| a == "--auto"));
    }
}
