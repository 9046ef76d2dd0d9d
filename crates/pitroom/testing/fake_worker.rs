//! `pitroom-fake-worker`: a fast stand-in for a worker CLI in CLI-level tests. It speaks
//! OpenCode's `--format json` stream and follows a script from `$PITROOM_FAKE_SCRIPT` (JSON, or
//! `@path` to a file). Like OpenCode, it reads stdin to the end before doing anything, so a test
//! hangs if Pitroom ever leaves stdin open.
//!
//! Script: a JSON array of actions, run in order:
//! `{"text": "…"}`, `{"tool": "read", "input": {…}, "status": "completed"|"error", "error": "…"}`,
//! `{"step": {"input": N, "output": N, "cost": X, "reason": "stop"}}`, `{"error": {…}}`,
//! (a tool's input strings may hold `{{cwd}}`: the worker's directory),
//! `{"raw": "line"}`, `{"stderr": "…"}`, `{"write": {"path": "rel", "content": "…"}}`,
//! `{"remove": "rel"}`, `{"rename": {"from": "a", "to": "b"}}`, `{"chmod": {"path": "a", "mode": 493}}`,
//! `{"sleep_ms": N}`, `{"wait_file": "path"}` (until a test creates it, at most 10 minutes),
//! `{"spawn_bg": "shell command", "pid_file": "path"}`, `{"exit": N}`,
//! `{"echo_prompt": true}` (the prompt becomes a text event), `{"sh": "command"}` (run like
//! OpenCode's bash tool; reported as a `bash` call with its output and `metadata.exit`),
//! `{"once": {"marker": "name", "do": [...]}}` (the actions only when the marker does not
//! exist yet, creating it first: the first invocation fails, a rerun goes on; the marker lives
//! in `$XDG_DATA_HOME`, the data dir every run of the backend shares, as OpenCode's session
//! database does, and the one place a read-mode worker may write that outlives its run).
//! The script may instead be `{"by_model": {"provider/model": [...], "*": [...]}}`: the actions
//! for the `--model` it was given (`*` when none matches), to script a fallback chain.
//! With `$PITROOM_FAKE_RECORD` set, argv and the environment are written there as JSON.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;

use serde_json::{json, Value};

const SESSION: &str = "ses_fake0001";

fn main() {
    let mut prompt = String::new();
    let _ = std::io::stdin().read_to_string(&mut prompt);
    if let Ok(path) = std::env::var("PITROOM_FAKE_RECORD") {
        let record = json!({
            "args": std::env::args().collect::<Vec<_>>(),
            "env": std::env::vars().collect::<std::collections::BTreeMap<_, _>>(),
            "cwd": std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default(),
            "prompt": prompt,
        });
        let _ = std::fs::write(path, record.to_string());
    }
    let script = match load_script() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pitroom-fake-worker: {e}");
            std::process::exit(2);
        }
    };
    let mut message = 0;
    for action in script {
        if let Some(code) = perform(&action, &prompt, &mut message) {
            std::process::exit(code);
        }
    }
}

fn load_script() -> Result<Vec<Value>, String> {
    let raw = std::env::var("PITROOM_FAKE_SCRIPT").unwrap_or_else(|_| "[]".into());
    let text = match raw.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?,
        None => raw,
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("bad script: {e}"))?;
    let value = match value.get("by_model") {
        Some(by_model) => {
            let args: Vec<String> = std::env::args().collect();
            let model = args
                .iter()
                .position(|a| a == "--model")
                .and_then(|i| args.get(i + 1))
                .map(String::as_str)
                .unwrap_or("*");
            by_model
                .get(model)
                .or_else(|| by_model.get("*"))
                .cloned()
                .ok_or_else(|| format!("the script has no actions for model {model}"))?
        }
        None => value,
    };
    value
        .as_array()
        .cloned()
        .ok_or_else(|| "the script must be a JSON array".into())
}

fn emit(kind: &str, body: Value) {
    let mut line = json!({"type": kind, "timestamp": 0, "sessionID": SESSION});
    if let (Some(obj), Value::Object(extra)) = (line.as_object_mut(), body) {
        obj.extend(extra);
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Performs one action; `Some(code)` ends the process.
fn perform(action: &Value, prompt: &str, message: &mut u32) -> Option<i32> {
    let msg = format!("msg_{message:04}");
    if let Some(text) = action.get("text").and_then(Value::as_str) {
        emit(
            "text",
            json!({"part": {"type": "text", "messageID": msg, "text": text}}),
        );
    } else if action.get("echo_prompt").is_some() {
        emit(
            "text",
            json!({"part": {"type": "text", "messageID": msg, "text": prompt}}),
        );
    } else if let Some(tool) = action.get("tool").and_then(Value::as_str) {
        let status = action
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("completed");
        let input = with_cwd(action.get("input").cloned().unwrap_or(json!({})));
        let mut state = json!({"status": status, "input": input});
        if let Some(e) = action.get("error") {
            state["error"] = e.clone();
        } else {
            state["output"] = json!("ok");
        }
        emit(
            "tool_use",
            json!({"part": {"type": "tool", "tool": tool, "messageID": msg, "state": state}}),
        );
    } else if let Some(step) = action.get("step") {
        let n = |k: &str| step.get(k).and_then(Value::as_u64).unwrap_or(0);
        emit(
            "step_start",
            json!({"part": {"type": "step-start", "messageID": msg}}),
        );
        emit(
            "step_finish",
            json!({"part": {"type": "step-finish", "messageID": msg,
                "reason": step.get("reason").cloned().unwrap_or(json!("stop")),
                "tokens": {"input": n("input"), "output": n("output"), "reasoning": 0, "cache": {"read": n("cache_read"), "write": 0}},
                "cost": step.get("cost").cloned().unwrap_or(json!(0))}}),
        );
        *message += 1;
    } else if let Some(err) = action.get("error") {
        emit("error", json!({"error": err}));
    } else if let Some(raw) = action.get("raw").and_then(Value::as_str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(raw.as_bytes());
        let _ = out.flush();
    } else if let Some(text) = action.get("stderr").and_then(Value::as_str) {
        eprintln!("{text}");
    } else if let Some(w) = action.get("write") {
        let path = w.get("path").and_then(Value::as_str).unwrap_or("out.txt");
        let content = w.get("content").and_then(Value::as_str).unwrap_or("");
        if let Some(parent) = std::path::Path::new(path).parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(path, content);
    } else if let Some(command) = action.get("sh").and_then(Value::as_str) {
        run_shell(command, &msg);
    } else if let Some(path) = action.get("remove").and_then(Value::as_str) {
        let _ = std::fs::remove_file(path);
    } else if let Some(r) = action.get("rename") {
        let from = r.get("from").and_then(Value::as_str).unwrap_or_default();
        let to = r.get("to").and_then(Value::as_str).unwrap_or_default();
        if let Some(parent) = std::path::Path::new(to).parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::rename(from, to);
    } else if let Some(c) = action.get("chmod") {
        use std::os::unix::fs::PermissionsExt;
        let path = c.get("path").and_then(Value::as_str).unwrap_or_default();
        let mode = c.get("mode").and_then(Value::as_u64).unwrap_or(0o644) as u32;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    } else if let Some(ms) = action.get("sleep_ms").and_then(Value::as_u64) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    } else if let Some(path) = action.get("wait_file").and_then(Value::as_str) {
        // A test holds the worker here, as long as it needs, then lets it go on.
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(600);
        while !std::path::Path::new(path).exists() && std::time::Instant::now() < give_up {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    } else if let Some(command) = action.get("spawn_bg").and_then(Value::as_str) {
        spawn_background(command, action.get("pid_file").and_then(Value::as_str));
    } else if let Some(code) = action.get("exit").and_then(Value::as_i64) {
        return Some(code as i32);
    } else if let Some(once) = action.get("once") {
        let name = once
            .get("marker")
            .and_then(Value::as_str)
            .expect("once.marker");
        let data = std::env::var_os("XDG_DATA_HOME").expect("XDG_DATA_HOME");
        let marker = std::path::Path::new(&data).join(name);
        let first = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(marker)
            .is_ok();
        let actions = once
            .get("do")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for inner in actions.filter(|_| first) {
            if let Some(code) = perform(inner, prompt, message) {
                return Some(code);
            }
        }
    }
    None
}

/// The tool input with `{{cwd}}` in its strings replaced by the directory the worker runs in
/// (a read copy, say), as a real CLI reports absolute paths.
fn with_cwd(value: Value) -> Value {
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    match value {
        Value::String(s) => Value::String(s.replace("{{cwd}}", &cwd)),
        Value::Array(items) => Value::Array(items.into_iter().map(with_cwd).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, with_cwd(v))).collect())
        }
        other => other,
    }
}

/// Runs a shell command as OpenCode's bash tool does and reports it as a `bash` tool call with
/// its output and exit code.
fn run_shell(command: &str, msg: &str) {
    let out = std::process::Command::new("sh")
        .args(["-c", command])
        .stdin(std::process::Stdio::null())
        .output();
    let (code, output) = match out {
        Ok(o) => (
            o.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (-1, e.to_string()),
    };
    emit(
        "tool_use",
        json!({"part": {"type": "tool", "tool": "bash", "messageID": msg, "state": {
            "status": "completed", "input": {"command": command}, "output": output,
            "metadata": {"output": output, "exit": code}}}}),
    );
}

/// Starts a shell command in its own session, as OpenCode's bash tool does, so a
/// process-group kill of the worker does not reach it.
fn spawn_background(command: &str, pid_file: Option<&str>) {
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", command])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    if let Ok(child) = cmd.spawn() {
        if let Some(path) = pid_file {
            let _ = std::fs::write(path, child.id().to_string());
        }
    }
}
