//! Adapters as data: a `[workers.<name>]` section of the config describes another agent CLI —
//! its command per mode, where the prompt goes, which JSON fields of its event stream hold the
//! session, text, tool calls, usage and errors, and the patterns that classify its failures —
//! so a user can drive a CLI Pitroom does not ship an adapter for. See `docs/workers/custom.md`.

use std::collections::BTreeMap;
use std::ffi::OsString;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter::{
    Adapter, AdapterError, FailureEvidence, Invocation, InvocationRequest, ModelInfo, PromptInput,
    StreamParser,
};
use crate::events::{FailureKind, Mode, ToolOutcome, Usage, WorkerEvent};
use crate::find_binary;

/// One CLI, as the config describes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerDef {
    /// The program: a name looked up on `PATH` (or `PITROOM_<NAME>_BIN`), or a path.
    pub command: String,
    /// Arguments for a read run. Required: a CLI without a read-only mode is not safe to
    /// hand research to (Pitroom still checks the tree afterwards).
    pub read: Vec<String>,
    /// Arguments for a write run; without them, write runs are refused.
    #[serde(default)]
    pub write: Option<Vec<String>>,
    /// Arguments for an isolated run (default: the write arguments).
    #[serde(default)]
    pub isolate: Option<Vec<String>>,
    /// Appended when a model is chosen; `{model}` is replaced by it.
    #[serde(default)]
    pub model: Vec<String>,
    /// Appended when a session is resumed (`--continue`); `{session}` is replaced by it.
    #[serde(default)]
    pub resume: Vec<String>,
    /// Where the prompt goes: `stdin` (default; the file is the CLI's stdin, then EOF), or
    /// `argument` (the last argument, whole). Arguments may also hold `{prompt_file}`.
    #[serde(default)]
    pub prompt: PromptPlacement,
    /// Extra environment for the CLI (telemetry switches, provider settings).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How to read the CLI's JSON lines.
    #[serde(default)]
    pub events: EventMap,
    /// Regular expressions over error texts (case-insensitive), checked in this order:
    /// auth, rate_limited, model_unavailable.
    #[serde(default)]
    pub errors: ErrorPatterns,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptPlacement {
    #[default]
    Stdin,
    Argument,
}

/// JSON pointers (RFC 6901) into one event line, and the `type` values that select each kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventMap {
    /// The pointer of the field that says what kind of event a line is (e.g. `/type`).
    #[serde(default)]
    pub kind: Option<String>,
    /// A pointer to the session id, read from any line that has it.
    #[serde(default)]
    pub session: Option<String>,
    /// The kind value of a text event, and the pointer to its text.
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub text_field: Option<String>,
    /// The kind value of a tool call, the pointers to its name and input, and to a status whose
    /// value `error` / `failed` / `denied` marks it failed or denied.
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_input: Option<String>,
    #[serde(default)]
    pub tool_status: Option<String>,
    /// The kind value of a finished model call (a step) and the pointers to its usage and cost.
    #[serde(default)]
    pub step: Option<String>,
    #[serde(default)]
    pub input_tokens: Option<String>,
    #[serde(default)]
    pub output_tokens: Option<String>,
    #[serde(default)]
    pub cost: Option<String>,
    /// The kind value of an error event and the pointers to its message and HTTP status.
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub error_message: Option<String>,
    #[serde(default)]
    pub error_status: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorPatterns {
    #[serde(default)]
    pub auth: Option<String>,
    #[serde(default)]
    pub rate_limited: Option<String>,
    #[serde(default)]
    pub model_unavailable: Option<String>,
}

impl WorkerDef {
    /// Reads a `[workers.<name>]` table, saying exactly what is wrong with it.
    pub fn from_value(name: &str, value: &Value) -> Result<WorkerDef, String> {
        let def: WorkerDef =
            serde_json::from_value(value.clone()).map_err(|e| format!("[workers.{name}]: {e}"))?;
        if def.command.trim().is_empty() {
            return Err(format!("[workers.{name}]: `command` is empty"));
        }
        for (key, pattern) in [
            ("auth", &def.errors.auth),
            ("rate_limited", &def.errors.rate_limited),
            ("model_unavailable", &def.errors.model_unavailable),
        ] {
            if let Some(p) = pattern {
                Regex::new(p).map_err(|e| format!("[workers.{name}.errors] {key}: {e}"))?;
            }
        }
        Ok(def)
    }
}

/// A CLI driven from its [`WorkerDef`].
#[derive(Debug, Clone)]
pub struct Custom {
    pub name: String,
    pub def: WorkerDef,
}

impl Custom {
    fn args_for(&self, mode: Mode) -> Result<&[String], AdapterError> {
        let args = match mode {
            Mode::Read => Some(&self.def.read),
            Mode::Write => self.def.write.as_ref(),
            Mode::Isolate => self.def.isolate.as_ref().or(self.def.write.as_ref()),
        };
        args.map(Vec::as_slice)
            .ok_or_else(|| AdapterError::ModeUnsupported {
                backend: self.name.clone(),
                mode: mode.as_str().into(),
                why: format!(
                    "its [workers.{}] section has no `{}` arguments",
                    self.name,
                    if mode == Mode::Read { "read" } else { "write" }
                ),
            })
    }
}

fn pointer<'v>(line: &'v Value, ptr: &Option<String>) -> Option<&'v Value> {
    line.pointer(ptr.as_deref()?)
}

fn text_at(line: &Value, ptr: &Option<String>) -> Option<String> {
    match pointer(line, ptr)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn number_at(line: &Value, ptr: &Option<String>) -> Option<f64> {
    pointer(line, ptr)?.as_f64()
}

impl Adapter for Custom {
    fn id(&self) -> &'static str {
        "custom"
    }

    fn invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let lookup = |k: &str| req.env_var(k);
        let program = if self.def.command.contains('/') {
            std::path::PathBuf::from(&self.def.command)
        } else {
            find_binary(&self.name, &self.def.command, &lookup)?
        };
        let mut args: Vec<OsString> = self
            .args_for(req.mode)?
            .iter()
            .map(OsString::from)
            .collect();
        if let Some(model) = &req.model {
            args.extend(
                self.def
                    .model
                    .iter()
                    .map(|a| a.replace("{model}", model).into()),
            );
        }
        if let Some(session) = &req.resume_session {
            args.extend(
                self.def
                    .resume
                    .iter()
                    .map(|a| a.replace("{session}", session).into()),
            );
        }
        let prompt_file = req.prompt_file.to_string_lossy();
        let args: Vec<OsString> = args
            .into_iter()
            .map(|a| match a.to_str() {
                Some(text) if text.contains(PROMPT_FILE) => {
                    text.replace(PROMPT_FILE, &prompt_file).into()
                }
                _ => a,
            })
            .collect();
        let prompt = match self.def.prompt {
            PromptPlacement::Stdin => PromptInput::Stdin,
            PromptPlacement::Argument => PromptInput::Argument { index: args.len() },
        };
        let mut env: Vec<(OsString, OsString)> = self
            .def
            .env
            .iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        // Scratch state and temp files stay in the run; HOME stays the user's, where a CLI
        // keeps its credentials.
        env.push(("TMPDIR".into(), req.dirs.scratch.join("tmp").into()));
        env.push((
            "XDG_STATE_HOME".into(),
            req.dirs.scratch.join("state").into(),
        ));
        env.push((
            "XDG_CACHE_HOME".into(),
            req.dirs.shared.join("cache").into(),
        ));
        let mut notes = Vec::new();
        if req.effort.is_some() {
            notes.push(format!(
                "--effort dropped: the [workers.{}] section has no effort setting",
                self.name
            ));
        }
        Ok(Invocation {
            prompt,
            env,
            notes,
            ..Invocation::new(program, args)
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(CustomStream {
            map: self.def.events.clone(),
        })
    }

    fn classify(&self, evidence: &FailureEvidence<'_>) -> FailureKind {
        let mut text = String::new();
        for event in evidence.events {
            if let WorkerEvent::Error {
                message, status, ..
            } = event
            {
                text.push_str(message);
                if let Some(s) = status {
                    text.push_str(&format!(" {s}"));
                }
                text.push('\n');
            }
        }
        text.push_str(evidence.stderr_tail);
        let patterns = &self.def.errors;
        for (pattern, kind) in [
            (&patterns.auth, FailureKind::Auth),
            (&patterns.rate_limited, FailureKind::RateLimited),
            (&patterns.model_unavailable, FailureKind::ModelUnavailable),
        ] {
            let matches = pattern
                .as_deref()
                .and_then(|p| Regex::new(&format!("(?i){p}")).ok())
                .is_some_and(|re| re.is_match(&text));
            if matches {
                return kind;
            }
        }
        FailureKind::Other
    }

    fn can_resume(&self) -> bool {
        !self.def.resume.is_empty()
    }

    fn models_invocation(&self, _req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        Err(AdapterError::Config(format!(
            "{} is described in the config ([workers.{}]); it has no model listing",
            self.name, self.name
        )))
    }

    fn parse_models(&self, _stdout: &str) -> Vec<ModelInfo> {
        Vec::new()
    }
}

/// The stream of a config-described CLI, read through its `[workers.<name>.events]` field map.
/// Each line stands alone.
struct CustomStream {
    map: EventMap,
}

impl StreamParser for CustomStream {
    fn parse_line(&mut self, line: &str) -> Vec<WorkerEvent> {
        let Ok(value) = serde_json::from_str::<Value>(line.trim()) else {
            return Vec::new();
        };
        let map = &self.map;
        let mut events = Vec::new();
        if let Some(id) = text_at(&value, &map.session).filter(|s| !s.is_empty()) {
            events.push(WorkerEvent::Session { id });
        }
        let kind = text_at(&value, &map.kind);
        let is = |wanted: &Option<String>| wanted.is_some() && kind.as_ref() == wanted.as_ref();
        if is(&map.text) {
            if let Some(text) = text_at(&value, &map.text_field).filter(|t| !t.trim().is_empty()) {
                events.push(WorkerEvent::Text {
                    message: None,
                    text,
                });
            }
        } else if is(&map.tool) {
            let status = text_at(&value, &map.tool_status).unwrap_or_default();
            let outcome = match status.to_ascii_lowercase().as_str() {
                "denied" | "rejected" => ToolOutcome::Denied,
                "error" | "failed" => ToolOutcome::Failed,
                _ => ToolOutcome::Ok,
            };
            let summary: String = text_at(&value, &map.tool_input)
                .unwrap_or_default()
                .chars()
                .take(120)
                .collect();
            events.push(WorkerEvent::ToolCall {
                name: text_at(&value, &map.tool_name).unwrap_or_else(|| "tool".into()),
                summary: summary.replace(['\n', '\r'], " "),
                outcome,
                error: None,
                edited: None,
            });
        } else if is(&map.step) {
            let usage = Usage {
                input: number_at(&value, &map.input_tokens).unwrap_or(0.0) as u64,
                output: number_at(&value, &map.output_tokens).unwrap_or(0.0) as u64,
                ..Usage::default()
            };
            events.push(WorkerEvent::StepFinished {
                reason: Some("stop".into()),
                usage: Some(usage),
                cost: number_at(&value, &map.cost),
            });
        } else if is(&map.error) {
            events.push(WorkerEvent::Error {
                message: text_at(&value, &map.error_message)
                    .unwrap_or_else(|| line.trim().to_string()),
                status: number_at(&value, &map.error_status).map(|s| s as u16),
                retry_after: None,
            });
        }
        events
    }
}

/// In an argument of a config-described CLI: the path of the file holding the prompt.
pub const PROMPT_FILE: &str = "{prompt_file}";

/// A whole definition as a user writes one (`docs/workers/custom.md`'s shape): every argument
/// list, every event and the error patterns. The unit tests and the fuzzer start from it.
#[cfg(test)]
pub(crate) fn example_def() -> serde_json::Value {
    serde_json::json!({
        "command": "/bin/true",
        "read": ["run", "--json", "--read-only"],
        "write": ["run", "--json"],
        "model": ["--model", "{model}"],
        "resume": ["--resume", "{session}"],
        "events": {
            "kind": "/type", "session": "/session",
            "text": "message", "text_field": "/content",
            "tool": "tool", "tool_name": "/name", "tool_input": "/input/path", "tool_status": "/status",
            "step": "usage", "input_tokens": "/in", "output_tokens": "/out", "cost": "/usd",
            "error": "error", "error_message": "/message", "error_status": "/code"
        },
        "errors": {"rate_limited": "429|slow down", "auth": "401|api key", "model_unavailable": "no such model"}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::StateDirs;

    fn def() -> WorkerDef {
        WorkerDef::from_value("mycli", &example_def()).expect("valid")
    }

    fn req(mode: Mode) -> InvocationRequest {
        InvocationRequest {
            mode,
            model: Some("big".into()),
            effort: Some("high".into()),
            web: false,
            workdir: "/w".into(),
            dirs: StateDirs {
                shared: "/s".into(),
                scratch: "/t".into(),
            },
            resume_session: Some("s1".into()),
            title: "t".into(),
            prompt_file: "/t/prompt.md".into(),
            env: vec![],
        }
    }

    /// Found by fuzzing: a carriage return in the input survived into the one-line summary.
    #[test]
    fn a_tool_summary_is_one_line_with_carriage_returns_too() {
        let c = Custom {
            name: "mycli".into(),
            def: def(),
        };
        let mut p = c.parser();
        let events = p.parse_line(
            r#"{"type":"tool","name":"edit","input":{"path":"a\rb\nc"},"status":"ok"}"#,
        );
        assert!(
            matches!(&events[..], [WorkerEvent::ToolCall { summary, .. }] if summary == "a b c"),
            "{events:?}"
        );
    }

    #[test]
    fn each_mode_gets_its_own_arguments_plus_model_and_resume() {
        let c = Custom {
            name: "mycli".into(),
            def: def(),
        };
        let inv = c.invocation(&req(Mode::Read)).unwrap();
        let args: Vec<String> = inv
            .args
            .iter()
            .map(|a| a.to_string_lossy().into())
            .collect();
        assert_eq!(
            args,
            [
                "run",
                "--json",
                "--read-only",
                "--model",
                "big",
                "--resume",
                "s1"
            ]
        );
        assert!(inv.notes[0].contains("--effort dropped"));
        let write = c.invocation(&req(Mode::Write)).unwrap();
        assert_eq!(
            write.args[..2],
            [OsString::from("run"), OsString::from("--json")]
        );
        assert!(
            c.invocation(&req(Mode::Isolate)).is_ok(),
            "isolate uses the write arguments"
        );
    }

    #[test]
    fn a_mode_without_arguments_is_refused_with_the_reason() {
        let mut d = def();
        d.write = None;
        let c = Custom {
            name: "mycli".into(),
            def: d,
        };
        match c.invocation(&req(Mode::Write)) {
            Err(AdapterError::ModeUnsupported { why, .. }) => assert!(why.contains("`write`")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn event_lines_map_to_normalised_events_through_the_pointers() {
        let c = Custom {
            name: "mycli".into(),
            def: def(),
        };
        let mut p = c.parser();
        let ev = p.parse_line(r#"{"type":"message","session":"abc","content":"SUMMARY: hi"}"#);
        assert_eq!(ev.len(), 2);
        assert!(matches!(&ev[0], WorkerEvent::Session { id } if id == "abc"));
        assert!(matches!(&ev[1], WorkerEvent::Text { text, .. } if text == "SUMMARY: hi"));
        let ev = p.parse_line(
            r#"{"type":"tool","name":"read","input":{"path":"a.rs"},"status":"denied"}"#,
        );
        assert!(
            matches!(&ev[0], WorkerEvent::ToolCall { name, summary, outcome: ToolOutcome::Denied, .. } if name == "read" && summary == "a.rs")
        );
        let ev = p.parse_line(r#"{"type":"usage","in":100,"out":7,"usd":0.01}"#);
        assert!(
            matches!(&ev[0], WorkerEvent::StepFinished { usage: Some(u), cost: Some(c), .. } if u.input == 100 && u.output == 7 && (*c - 0.01).abs() < 1e-9)
        );
        assert!(
            p.parse_line(r#"{"type":"tool","name":"re"#).is_empty(),
            "a torn line yields nothing"
        );
        assert!(p.parse_line("plain text banner").is_empty());
    }

    #[test]
    fn failures_are_classified_by_the_configured_patterns_auth_first() {
        let c = Custom {
            name: "mycli".into(),
            def: def(),
        };
        let classify = |message: &str, status: Option<u16>| {
            let events = [WorkerEvent::Error {
                message: message.into(),
                status,
                retry_after: None,
            }];
            c.classify(&FailureEvidence {
                events: &events,
                stderr_tail: "",
                exit_code: Some(1),
            })
        };
        assert_eq!(
            classify("Too many requests", Some(429)),
            FailureKind::RateLimited
        );
        assert_eq!(classify("please SLOW DOWN", None), FailureKind::RateLimited);
        assert_eq!(classify("bad api key (429 later)", None), FailureKind::Auth);
        assert_eq!(
            classify("no such model: big", None),
            FailureKind::ModelUnavailable
        );
        assert_eq!(classify("disk full", None), FailureKind::Other);
    }

    #[test]
    fn a_bad_section_is_reported_with_its_name_and_field() {
        let err = WorkerDef::from_value(
            "x",
            &serde_json::json!({"command": "x", "read": [], "colour": 1}),
        )
        .unwrap_err();
        assert!(
            err.contains("[workers.x]") && err.contains("colour"),
            "{err}"
        );
        let err = WorkerDef::from_value(
            "x",
            &serde_json::json!({"command": "x", "read": [], "errors": {"auth": "("}}),
        )
        .unwrap_err();
        assert!(err.contains("errors] auth"), "{err}");
    }
}
