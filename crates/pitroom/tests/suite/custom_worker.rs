//! Adapters as data: a CLI described in a `[workers.<name>]` config section, driven end to end.
//! The CLI here is the fake worker (it speaks OpenCode's JSON lines), described field by field
//! as a user would describe any other CLI.

use std::path::Path;

use pitroom_testkit::repo::{dirty_repo, fingerprint};
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{
    args_of, assert_stderr_has, fake_env, fake_worker, json_stdout, record_invocations, recorded,
    text,
};

fn describe(env: &mut TestEnv, dir: &Path, prompt: &str) {
    let config = format!(
        r#"
[workers.fakecli]
command = "{bin}"
read = ["run", "--format", "json", "--mode", "read"]
write = ["run", "--format", "json", "--mode", "write"]
model = ["--model", "{{model}}"]
resume = ["--session", "{{session}}"]
prompt = "{prompt}"

[workers.fakecli.env]
FAKECLI_TELEMETRY = "off"

[workers.fakecli.events]
kind = "/type"
session = "/sessionID"
text = "text"
text_field = "/part/text"
tool = "tool_use"
tool_name = "/part/tool"
tool_input = "/part/state/input/filePath"
tool_status = "/part/state/status"
step = "step_finish"
input_tokens = "/part/tokens/input"
output_tokens = "/part/tokens/output"
cost = "/part/cost"
error = "error"
error_message = "/error/data/message"
error_status = "/error/data/statusCode"

[workers.fakecli.errors]
rate_limited = "429|rate limit"
auth = "401|unauthori[sz]ed"
model_unavailable = "model not found"

[workers.broken]
command = "x"
read = []
colour = "blue"
"#,
        bin = fake_worker().display()
    );
    let path = dir.join("pitroom.toml");
    std::fs::write(&path, config).unwrap();
    env.set("PITROOM_CONFIG", path.display().to_string());
}

fn answering() -> Value {
    json!({"by_model": {
        "limited": [
            {"error": {"name": "APIError", "data": {"message": "Rate limit reached", "statusCode": 429}}},
            {"exit": 1}
        ],
        "*": [
            {"tool": "read", "input": {"filePath": "calc.py"}, "status": "completed"},
            {"step": {"input": 120, "output": 9, "cost": 0.25, "reason": "tool-calls"}},
            {"text": "SUMMARY: described CLI answered\nDETAILS: calc.py:1"},
            {"step": {"input": 80, "output": 5, "reason": "stop"}}
        ]
    }})
}

#[test]
fn a_cli_described_in_the_config_runs_with_its_own_arguments_events_and_usage() {
    let mut env = fake_env(answering());
    let repo = dirty_repo(&env, "repo");
    describe(&mut env, &repo, "stdin");
    let seen = record_invocations(&mut env, "fakecli");
    let out = env.run_expecting(&repo, &["-W", "fakecli:big", "Where is calc?", "--json"], 0);
    assert_stderr_has(&out, "[workers.broken]");
    let r = json_stdout(&out);
    assert_eq!(r["spec"]["backend"], "fakecli");
    assert_eq!(r["session"], "ses_fake0001");
    assert_eq!(r["tally"]["steps"], 2);
    assert_eq!(r["tally"]["tool_calls"], 1);
    assert_eq!(r["tally"]["usage"]["input"], 200);
    assert_eq!(r["tally"]["cost"], 0.25);
    assert!(r["answer"]
        .as_str()
        .unwrap()
        .contains("described CLI answered"));
    let call = recorded(&seen);
    let args = args_of(&call);
    assert_eq!(
        &args[1..],
        ["run", "--format", "json", "--mode", "read", "--model", "big"]
    );
    assert_eq!(call["env"]["FAKECLI_TELEMETRY"], "off");
    assert!(call["prompt"]
        .as_str()
        .unwrap()
        .contains("TASK:\nWhere is calc?"));

    // A follow-up resumes the session through the described arguments.
    env.run_expecting(
        &repo,
        &["run", "--continue", "last", "And then?", "--json"],
        0,
    );
    let call = recorded(&seen);
    let args = args_of(&call);
    assert!(args.ends_with(&["--session", "ses_fake0001"]), "{args:?}");
}

#[test]
fn a_described_cli_edits_in_write_mode_and_pitroom_still_guards_read_mode() {
    let mut env = fake_env(json!([
        {"write": {"path": "calc.py", "content": "changed by the described CLI\n"}},
        {"tool": "write", "input": {"filePath": "calc.py"}, "status": "completed"},
        {"text": "SUMMARY: edited"},
        {"step": {"reason": "stop"}}
    ]));
    let repo = dirty_repo(&env, "repo");
    describe(&mut env, &repo, "stdin");
    // Read mode: whatever the CLI does, the user's tree is untouched.
    let before = fingerprint(&repo);
    let out = env.run(&repo, &["-W", "fakecli", "look only", "--json"]);
    let r = json_stdout(&out);
    assert_eq!(fingerprint(&repo), before, "{}", text(&out));
    assert!(
        r["read_only_violation"] == true || r["changes"].as_array().is_some_and(Vec::is_empty),
        "{r:#}"
    );
    // Write mode: the edit is recorded exactly and reverts.
    let r = env.run_json(&repo, &["-w", "-W", "fakecli", "edit calc", "--json"]);
    assert_eq!(r["changes"][0]["path"], "calc.py", "{r:#}");
    env.run_expecting(&repo, &["revert"], 0);
    assert_eq!(fingerprint(&repo), before);
}

#[test]
fn a_described_cli_failure_is_classified_by_its_patterns_and_falls_back() {
    let mut env = fake_env(answering());
    let dir = env.dir("plain");
    describe(&mut env, &dir, "stdin");
    env.set("PITROOM_FALLBACK", "opencode");
    let r = env.run_json(&dir, &["-W", "fakecli:limited", "x", "--json"]);
    assert_eq!(r["attempts"][0]["target"], "fakecli:limited");
    assert_eq!(r["attempts"][0]["failure"], "rate_limited", "{r:#}");
    assert_eq!(r["spec"]["backend"], "fakecli", "what was asked: {r:#}");
    assert_eq!(
        r["fell_back_to"]["backend"], "opencode",
        "what answered: {r:#}"
    );
}

#[test]
fn a_described_cli_can_take_the_prompt_as_its_last_argument() {
    let mut env = fake_env(json!([{"text": "SUMMARY: ok"}, {"step": {"reason": "stop"}}]));
    let dir = env.dir("plain");
    describe(&mut env, &dir, "argument");
    let seen = record_invocations(&mut env, "fakecli");
    let task = "-n a task that starts with a dash\nand spans lines";
    env.run_expecting(&dir, &["-W", "fakecli", "--", task], 0);
    let call = recorded(&seen);
    let args = args_of(&call);
    let last = args.last().unwrap();
    assert!(last.contains(&format!("TASK:\n{task}")), "{args:?}");
    assert_eq!(
        call["prompt"], "",
        "stdin is closed when the prompt is an argument"
    );
}
