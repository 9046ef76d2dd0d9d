//! `pitroom-scripted-worker`: the demo's stand-in for a worker CLI. It is this binary, started
//! through a link of that name (chosen by `argv[0]` in `main`, before clap). It speaks OpenCode's
//! `opencode run --format json` stream, so Pitroom's OpenCode adapter drives it unchanged, and
//! replays the JSON script named by `$PITROOM_DEMO_SCRIPT`. No model is called.
//!
//! A script is a JSON array of actions, run in order, or `{"by_prompt": [{"contains": "…",
//! "actions": […]}, …]}`: the actions of the first case whose text occurs in the prompt (one
//! script for a crew whose runs get different tasks, or for a repair round), or `{"by_model":
//! [{"model": "…", "actions": […]}, …]}`: the actions for the `--model` it was given (one script
//! for a race whose contenders are different models). Actions:
//! `{"text": "…"}` (a text part: the answer), `{"tool": {"name": "read", "input": {…},
//! "status": "completed"|"error", "output": "…"}}`, `{"step": {"input": N, "output": N,
//! "cost": X}}` (a model call's start and finish, with its tokens), and `{"write": {"path":
//! "rel", "content": "…"}}` (a file edit in the work tree, relative to `--dir`).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a stand-in worker CLI: its stdout is the event stream Pitroom reads"
)]

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The file name that makes this binary the scripted worker.
pub(crate) const WORKER_NAME: &str = "pitroom-scripted-worker";
/// The variable that names the script file.
pub(crate) const SCRIPT_ENV: &str = pitroom_env::PITROOM_DEMO_SCRIPT;

/// Whether `argv[0]` asks for the scripted worker.
pub(crate) fn is_scripted_worker(argv0: Option<&OsString>) -> bool {
    argv0
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|n| n == WORKER_NAME)
}

/// A script: actions, or actions chosen by the prompt.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Script {
    Actions(Vec<Action>),
    ByPrompt { by_prompt: Vec<Case> },
    ByModel { by_model: Vec<ModelCase> },
}

/// The actions for the model `model`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ModelCase {
    pub model: String,
    pub actions: Vec<Action>,
}

/// The actions for prompts that contain `contains`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Case {
    pub contains: String,
    pub actions: Vec<Action>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    Text(String),
    Tool(Tool),
    Step(Step),
    Write(WriteFile),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Tool {
    pub name: String,
    #[serde(default)]
    pub input: Value,
    #[serde(default = "completed")]
    pub status: String,
    #[serde(default)]
    pub output: String,
}

fn completed() -> String {
    "completed".into()
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub(crate) struct Step {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cost: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WriteFile {
    pub path: String,
    pub content: String,
}

/// The worker's entry point: `args` are everything after `argv[0]` (OpenCode's flags).
pub(crate) fn main(args: &[OsString]) -> i32 {
    // Like OpenCode: the prompt comes on stdin, read to the end before anything else.
    let mut prompt = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut prompt) {
        eprintln!("{WORKER_NAME}: could not read the prompt from stdin: {e}");
        return 2;
    }
    let model = flag_value(args, "--model").map(|m| m.to_string_lossy().into_owned());
    let actions = match load(&prompt, model.as_deref()) {
        Ok(a) => a,
        Err(why) => {
            eprintln!("{WORKER_NAME}: {why}");
            return 2;
        }
    };
    let dir = flag_value(args, "--dir")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    // A follow-up (`--session ID`) continues the same session, as OpenCode's does.
    let session = flag_value(args, "--session")
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("ses_scripted{:08x}", std::process::id()));
    let mut out = std::io::stdout().lock();
    match run(&actions, &dir, &session, &mut out) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("{WORKER_NAME}: {why}");
            1
        }
    }
}

fn flag_value(args: &[OsString], flag: &str) -> Option<OsString> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).cloned()
}

/// The actions `$PITROOM_DEMO_SCRIPT` holds for this prompt and model.
fn load(prompt: &str, model: Option<&str>) -> Result<Vec<Action>, String> {
    let path = std::env::var_os(SCRIPT_ENV).ok_or_else(|| {
        format!("{SCRIPT_ENV} is not set: this worker only replays a script (pitroom demo sets it)")
    })?;
    let path = PathBuf::from(path);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("could not read the script {}: {e}", path.display()))?;
    let script: Script = serde_json::from_str(&text)
        .map_err(|e| format!("the script {} is not valid: {e}", path.display()))?;
    select(script, prompt, model)
}

/// The actions of a script for a prompt and a model.
pub(crate) fn select(
    script: Script,
    prompt: &str,
    model: Option<&str>,
) -> Result<Vec<Action>, String> {
    match script {
        Script::Actions(actions) => Ok(actions),
        Script::ByPrompt { by_prompt } => by_prompt
            .into_iter()
            .find(|c| prompt.contains(&c.contains))
            .map(|c| c.actions)
            .ok_or_else(|| "the script has no case for this prompt".to_string()),
        Script::ByModel { by_model } => by_model
            .into_iter()
            .find(|c| Some(c.model.as_str()) == model)
            .map(|c| c.actions)
            .ok_or_else(|| format!("the script has no case for the model {model:?}")),
    }
}

/// Performs the actions, writing OpenCode's JSON lines to `out`; files go under `dir`.
pub(crate) fn run(
    actions: &[Action],
    dir: &Path,
    session: &str,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut message = 0u32;
    for action in actions {
        let msg = format!("msg_{message:04}");
        match action {
            Action::Text(text) => emit(
                out,
                session,
                "text",
                json!({"part": {"type": "text", "messageID": msg, "text": text}}),
            )?,
            Action::Tool(tool) => {
                let mut state = json!({"status": tool.status, "input": tool.input});
                if tool.status == "error" {
                    state["error"] = json!(tool.output);
                } else {
                    state["output"] = json!(tool.output);
                }
                emit(
                    out,
                    session,
                    "tool_use",
                    json!({"part": {"type": "tool", "tool": tool.name, "messageID": msg, "state": state}}),
                )?;
            }
            Action::Step(step) => {
                emit(
                    out,
                    session,
                    "step_start",
                    json!({"part": {"type": "step-start", "messageID": msg}}),
                )?;
                emit(
                    out,
                    session,
                    "step_finish",
                    json!({"part": {"type": "step-finish", "messageID": msg, "reason": "stop",
                        "tokens": {"input": step.input, "output": step.output, "reasoning": 0,
                            "cache": {"read": 0, "write": 0}},
                        "cost": step.cost}}),
                )?;
                message += 1;
            }
            Action::Write(w) => {
                let path = dir.join(&w.path);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| format!("could not create {}: {e}", parent.display()))?;
                }
                std::fs::write(&path, &w.content)
                    .map_err(|e| format!("could not write {}: {e}", path.display()))?;
            }
        }
    }
    Ok(())
}

fn emit(out: &mut dyn Write, session: &str, kind: &str, body: Value) -> Result<(), String> {
    let mut line = json!({"type": kind, "timestamp": 0, "sessionID": session});
    if let (Some(obj), Value::Object(extra)) = (line.as_object_mut(), body) {
        obj.extend(extra);
    }
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| format!("could not write to stdout: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitroom_workers::{opencode::OpenCode, ToolOutcome, Usage, WorkerEvent};

    #[test]
    fn a_script_becomes_lines_the_opencode_parser_reads() {
        let script: Script = serde_json::from_value(json!({"by_prompt": [
            {"contains": "other task", "actions": [{"text": "wrong case"}]},
            {"contains": "divide", "actions": [
                {"tool": {"name": "read", "input": {"filePath": "calc.py"}}},
                {"step": {"input": 1200, "output": 40}},
                {"write": {"path": "sub/out.txt", "content": "hi\n"}},
                {"tool": {"name": "edit", "input": {"filePath": "sub/out.txt"}, "output": "ok"}},
                {"text": "SUMMARY: divide has no zero check: calc.py:9"},
                {"step": {"input": 1500, "output": 60, "cost": 0.5}}
            ]}
        ]}))
        .expect("script parses");
        let actions = select(script, "Where can divide fail?", None).expect("a case matches");
        let dir = std::env::temp_dir().join(format!("pitroom-worker-test-{}", std::process::id()));
        let mut out = Vec::new();
        run(&actions, &dir, "ses_t", &mut out).expect("runs");
        let written = std::fs::read_to_string(dir.join("sub/out.txt"));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(written.ok().as_deref(), Some("hi\n"));

        let text = String::from_utf8(out).expect("utf-8");
        let events: Vec<WorkerEvent> = pitroom_workers::parse_stream(&OpenCode, &text)
            .into_iter()
            .filter(|e| !matches!(e, WorkerEvent::Session { .. }))
            .collect();
        let usage = |input, output| Usage {
            input,
            output,
            ..Usage::default()
        };
        assert_eq!(
            events,
            vec![
                WorkerEvent::ToolCall {
                    name: "read".into(),
                    summary: "calc.py".into(),
                    outcome: ToolOutcome::Ok,
                    error: None,
                    edited: None,
                },
                WorkerEvent::StepStarted,
                WorkerEvent::StepFinished {
                    reason: Some("stop".into()),
                    usage: Some(usage(1200, 40)),
                    cost: Some(0.0),
                },
                WorkerEvent::ToolCall {
                    name: "edit".into(),
                    summary: "sub/out.txt".into(),
                    outcome: ToolOutcome::Ok,
                    error: None,
                    edited: Some("sub/out.txt".into()),
                },
                WorkerEvent::Text {
                    message: Some("msg_0001".into()),
                    text: "SUMMARY: divide has no zero check: calc.py:9".into(),
                },
                WorkerEvent::StepStarted,
                WorkerEvent::StepFinished {
                    reason: Some("stop".into()),
                    usage: Some(usage(1500, 60)),
                    cost: Some(0.5),
                },
            ]
        );
        assert!(text.lines().all(|l| l.contains("\"sessionID\":\"ses_t\"")));
    }

    #[test]
    fn a_race_script_gives_each_model_its_own_actions() {
        let script: Script = serde_json::from_value(json!({"by_model": [
            {"model": "pitroom/quick", "actions": [{"text": "quick"}]},
            {"model": "pitroom/careful", "actions": [{"text": "careful"}]}
        ]}))
        .expect("script parses");
        let text = |actions: Vec<Action>| match actions.as_slice() {
            [Action::Text(t)] => t.clone(),
            _ => String::new(),
        };
        assert_eq!(
            select(script.clone(), "task", Some("pitroom/careful")).map(text),
            Ok("careful".to_string())
        );
        assert!(select(script, "task", Some("other/model")).is_err());
    }

    #[test]
    fn the_link_name_selects_the_worker() {
        assert!(is_scripted_worker(Some(&OsString::from(
            "/tmp/x/bin/pitroom-scripted-worker"
        ))));
        assert!(!is_scripted_worker(Some(&OsString::from("pitroom"))));
        assert!(!is_scripted_worker(None));
    }
}
