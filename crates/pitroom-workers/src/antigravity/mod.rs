//! Antigravity CLI (`agy -p … --output-format stream-json`), built from Google's documented
//! headless mode and settings (see `docs/workers/antigravity.md`). **Unproven**: the CLI is not
//! installable here, so no run of the real binary backs this adapter; its contract tests run on
//! fixtures written by hand from the documentation.
//!
//! Only read runs are offered. The documented safety settings are presets in
//! `~/.gemini/antigravity-cli/settings.json`: `toolPermission` `strict` asks before every
//! non-read tool, and a headless run has nobody to ask, so only reads run. Letting a headless
//! run write needs `always-proceed` or `--dangerously-skip-permissions` (every tool, the shell
//! included, unprompted), and the format of allow/deny rules in that file is not documented,
//! so the floor's commands could not be denied: edit modes are refused.
//!
//! `-p` takes the prompt as its argument (the CLI documents no stdin prompt), so the invocation
//! ends with `-p` and says so ([`crate::PromptInput::Argument`]): the engine puts the whole
//! prompt there as one argument (stdin closed), as for a `prompt = "argument"` worker.

pub(crate) mod parse;

use std::ffi::OsString;

use serde_json::json;

use crate::adapter::{
    flag, Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, ModelInfo,
    PromptInput, SettingsFile, StreamParser,
};
use crate::classify::contains_any;
use crate::events::FailureKind;
pub use parse::AntigravityStream;

/// The Antigravity CLI adapter (each run's stream gets its own [`AntigravityStream`]).
#[derive(Debug, Default)]
pub struct Antigravity;

/// The private home inside the shared per-backend state dir (conversations persist there).
const HOME_DIR: &str = "antigravity-home";

/// Texts that name each failure kind beyond the generic ones every adapter shares.
const AUTH: &[&str] = &[
    "not signed in",
    "sign in",
    "not logged in",
    "login required",
];

impl Antigravity {
    fn settings_file(req: &InvocationRequest) -> SettingsFile {
        SettingsFile {
            path: req
                .private_home(HOME_DIR)
                .join(".gemini/antigravity-cli/settings.json"),
            content: settings().to_string(),
        }
    }
}

/// The read-run settings: every non-read tool asks (so a headless run never runs one), the
/// shell sandboxed, no access outside the workspace, no telemetry, tips or surveys, and no
/// paid credits spent when the plan's quota runs out.
pub(crate) fn settings() -> serde_json::Value {
    json!({
        "toolPermission": "strict",
        "artifactReviewPolicy": "asks-for-review",
        "enableTerminalSandbox": true,
        "allowNonWorkspaceAccess": false,
        "enableTelemetry": false,
        "useG1Credits": false,
        "showTips": false,
        "showFeedbackSurvey": false,
        "notifications": false,
        "altScreenMode": "never",
    })
}

impl Adapter for Antigravity {
    fn id(&self) -> &'static str {
        "antigravity"
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        if req.mode.may_edit() {
            return Err(AdapterError::ModeUnsupported {
                backend: "antigravity".into(),
                mode: req.mode.as_str().into(),
                why: "a headless Antigravity run writes files only with toolPermission always-proceed or \
                      --dangerously-skip-permissions, which also run every shell command unasked, and its \
                      settings file documents no rule format to deny the floor's commands"
                    .into(),
            });
        }
        let program = req.find_program("antigravity")?;
        let mut notes = Vec::new();
        let mut args: Vec<OsString> = ["--output-format", "stream-json", "--sandbox"]
            .map(OsString::from)
            .to_vec();
        args.extend(flag("--model", req.model.as_ref()));
        notes.extend(
            req.dropped_effort("Antigravity CLI has no effort flag (pick a model variant instead)"),
        );
        if req.web {
            notes.push(
                "--web has no effect: read runs use toolPermission strict, which leaves web tools unapproved"
                    .into(),
            );
        }
        args.extend(flag("--conversation", req.resume_session.as_ref()));
        // `-p` takes the prompt as its argument, and Antigravity reads it nowhere else: last, so
        // nothing after it can be taken for part of the prompt.
        args.push("-p".into());
        let prompt = PromptInput::Argument { index: args.len() };
        Ok(Invocation {
            prompt,
            files: vec![Self::settings_file(req)],
            env: vec![
                ("HOME".into(), req.private_home(HOME_DIR).into()),
                ("TMPDIR".into(), req.dirs.scratch.join("tmp").into()),
            ],
            notes,
            ..Invocation::new(program, args)
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(AntigravityStream::default())
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        match crate::common::failure_texts::TEXTS.classify(evidence) {
            FailureKind::Other if contains_any(&evidence.texts_lowercase(), AUTH) => {
                FailureKind::Auth
            }
            by_text => by_text,
        }
    }

    fn can_resume(&self) -> bool {
        true
    }

    fn models_invocation(&self, _req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        Err(AdapterError::Config(
            "Antigravity CLI documents no model-list command; pass a model by the name its /model panel shows"
                .into(),
        ))
    }

    fn parse_models(&self, _stdout: &str) -> Vec<ModelInfo> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    use crate::events::Mode;

    fn request(mode: Mode, bin: &str) -> InvocationRequest {
        InvocationRequest {
            model: Some("Gemini 3.5 Flash".into()),
            resume_session: Some("conv-1".into()),
            ..InvocationRequest::for_test(mode, vec![("PITROOM_ANTIGRAVITY_BIN", bin.into())])
        }
    }

    #[test]
    fn edit_modes_are_refused_with_the_reason() {
        for mode in [Mode::Write, Mode::Isolate] {
            match Antigravity.invocation(&request(mode, "/bin/true")) {
                Err(AdapterError::ModeUnsupported { why, .. }) => {
                    assert!(why.contains("always-proceed"), "{why}")
                }
                other => panic!("{mode:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn read_settings_ask_for_every_non_read_tool_and_switch_telemetry_off() {
        let s = settings();
        assert_eq!(s["toolPermission"], "strict");
        assert_eq!(s["enableTerminalSandbox"], true);
        assert_eq!(s["enableTelemetry"], false);
        assert_eq!(s["allowNonWorkspaceAccess"], false);
    }

    #[test]
    fn the_prompt_is_the_argument_after_p_and_the_settings_go_where_agy_reads_them() {
        let mut req = request(Mode::Read, "/bin/true");
        req.dirs.shared = "/shared".into();
        let inv = Antigravity.invocation(&req).unwrap();
        let args = inv.args_text();
        assert_eq!(args.last().map(String::as_str), Some("-p"));
        assert_eq!(inv.prompt, PromptInput::Argument { index: args.len() });
        assert!(args.windows(2).any(|w| w == ["--conversation", "conv-1"]));
        assert!(args
            .windows(2)
            .any(|w| w == ["--model", "Gemini 3.5 Flash"]));
        assert_eq!(
            inv.program,
            PathBuf::from("/bin/true"),
            "no launcher in between"
        );
        let [settings] = inv.files.as_slice() else {
            panic!("one settings file: {:?}", inv.files)
        };
        assert_eq!(
            settings.path,
            PathBuf::from("/shared/antigravity-home/.gemini/antigravity-cli/settings.json")
        );
        assert!(
            settings.content.contains("\"toolPermission\":\"strict\""),
            "{}",
            settings.content
        );
    }

    #[test]
    fn a_sign_in_failure_is_auth_and_a_quota_is_rate_limited() {
        let kind = |stderr: &str| {
            Antigravity.classify(&FailureEvidence {
                events: &[],
                stderr_tail: stderr,
                exit_code: Some(1),
            })
        };
        assert_eq!(
            kind("Error: not signed in. Run agy to sign in."),
            FailureKind::Auth
        );
        assert_eq!(
            kind("RESOURCE_EXHAUSTED: quota exceeded"),
            FailureKind::RateLimited
        );
        assert_eq!(kind("something else"), FailureKind::Other);
    }
}
