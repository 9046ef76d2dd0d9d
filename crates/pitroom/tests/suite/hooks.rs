//! `pitroom hook session-start`, `pitroom hook-card` and `pitroom statusline`, driven the way a
//! host drives them: a JSON payload on stdin, JSON (or one line) on stdout.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{assert_exit, code, eventually, fake_env, json_stdout, text};
use super::common::{assert_str_has, output_with_stdin};

/// A finished answer with enough usage for a visible saving.
fn big_answer() -> Value {
    json!([
        {"text": "SUMMARY: divide() has no zero check: calc.py:1"},
        {"step": {"input": 3_000_000, "output": 2000, "cost": 0.01, "reason": "stop"}}
    ])
}

/// Runs `pitroom ARGS` in `dir` with `stdin` as its input.
fn with_stdin(
    env: &TestEnv,
    dir: &Path,
    args: &[&str],
    stdin: &str,
    extra: &[(&str, &str)],
) -> Output {
    let mut cmd = env.pitroom(dir, args);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    output_with_stdin(&mut cmd, stdin.as_bytes())
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A PostToolUse payload for a Bash call, as Claude Code sends it.
fn post_tool_use(command: &str, output: &str) -> String {
    json!({
        "session_id": "abc123", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run pitroom"},
        "tool_response": {"stdout": output, "stderr": "", "interrupted": false, "isImage": false},
        "tool_use_id": "toolu_01"
    })
    .to_string()
}

fn card(env: &TestEnv, dir: &Path, command: &str, output: &str) -> Option<Value> {
    let out = with_stdin(
        env,
        dir,
        &["hook-card"],
        &post_tool_use(command, output),
        &[],
    );
    assert_exit(&out, 0);
    let s = stdout(&out);
    (!s.trim().is_empty()).then(|| serde_json::from_str(&s).expect("hook-card prints JSON"))
}

fn run_id(out: &Output) -> String {
    let record = json_stdout(out);
    record["id"].as_str().expect("id").to_string()
}

#[test]
fn session_start_gives_the_using_pitroom_text_as_hook_specific_context() {
    let env = TestEnv::new(Path::new(super::common::PITROOM));
    let dir = env.dir("project");
    let payload =
        json!({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"});
    let out = with_stdin(
        &env,
        &dir,
        &["hook", "session-start"],
        &payload.to_string(),
        &[],
    );
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("additionalContext inside hookSpecificOutput");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(context.contains("Pitroom is installed"), "{context}");
    assert!(context.contains("## Three modes"), "{context}");
    assert!(context.chars().count() < 10_000);
    assert!(v.get("additionalContext").is_none());
}

#[test]
fn session_start_is_silent_inside_a_worker() {
    let env = TestEnv::new(Path::new(super::common::PITROOM));
    let dir = env.dir("project");
    let out = with_stdin(
        &env,
        &dir,
        &["hook", "session-start"],
        "{}",
        &[("PITROOM_ACTIVE", "1")],
    );
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "");
}

#[test]
fn hook_card_shows_each_run_once_per_phase_and_tells_the_agent_the_next_step() {
    let env = fake_env(json!([
        {"write": {"path": "zero.txt", "content": "checked\n"}},
        {"text": "SUMMARY: divide() has no zero check: calc.py:1"},
        {"step": {"input": 3_000_000, "output": 2000, "cost": 0.01, "reason": "stop"}}
    ]));
    let repo = dirty_repo(&env, "repo");
    let out = env.run(&repo, &["-i", "--json", "Add a zero check"]);
    assert_exit(&out, 0);
    let id = run_id(&out);
    let report = format!("pitroom ✔ done · isolate · 1s · run {id}\n");

    let first = card(&env, &repo, "pitroom -i \"Add a zero check\"", &report).expect("a card");
    let person = first["systemMessage"].as_str().expect("systemMessage");
    assert!(person.contains(&format!("run {id}")), "{person}");
    assert!(person.contains("✔ done · isolate"), "{person}");
    assert!(person.contains("divide() has no zero check"), "{person}");
    assert!(person.contains("1 file changed"), "{person}");
    let agent = first["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("additionalContext");
    assert!(agent.contains(&format!("pitroom apply {id}")), "{agent}");
    assert_eq!(first["hookSpecificOutput"]["hookEventName"], "PostToolUse");

    // The same phase again (a `show`, a second look): no second card.
    assert_eq!(
        card(&env, &repo, &format!("pitroom show {id}"), &report),
        None
    );

    let out = env.run(&repo, &["apply", &id]);
    assert_exit(&out, 0);
    let applied = card(&env, &repo, &format!("pitroom apply {id}"), "").expect("applied card");
    assert_str_has(&applied, "/systemMessage", "✔ applied");
    assert_str_has(&applied, "/systemMessage", &id);
    assert_eq!(card(&env, &repo, &format!("pitroom apply {id}"), ""), None);
}

#[test]
fn hook_card_announces_a_background_run_then_its_end() {
    let env = fake_env(big_answer());
    let repo = dirty_repo(&env, "repo");
    let mut start = env.pitroom(&repo, &["--bg", "Map the module"]);
    start.env(
        "PITROOM_FAKE_SCRIPT",
        json!([{"sleep_ms": 60000}, {"text": "SUMMARY: never"}]).to_string(),
    );
    let out = start.output().expect("pitroom runs");
    assert_exit(&out, 0);
    let printed = stdout(&out);
    let started = card(&env, &repo, "pitroom --bg \"Map the module\"", &printed).expect("card");
    let message = started["systemMessage"].as_str().expect("systemMessage");
    assert!(message.contains("Map the module"), "{message}");
    assert_str_has(
        &started,
        "/hookSpecificOutput/additionalContext",
        "pitroom wait",
    );
    let out = env.run(&repo, &["stop"]);
    assert_exit(&out, 0);
    let ended = card(&env, &repo, "pitroom stop", &stdout(&out)).expect("end card");
    assert_str_has(&ended, "/systemMessage", "stopped");
}

#[test]
fn hook_card_ignores_other_tools_other_commands_and_listings() {
    let env = fake_env(big_answer());
    let repo = dirty_repo(&env, "repo");
    let out = env.run(&repo, &["--json", "x"]);
    let id = run_id(&out);
    assert_eq!(card(&env, &repo, "cat notes.txt", &id), None);
    assert_eq!(card(&env, &repo, "pitroom ls", &id), None);
    let read_tool = json!({"hook_event_name": "PostToolUse", "tool_name": "Read",
        "tool_input": {"command": format!("pitroom show {id}")}, "tool_response": {}});
    let out = with_stdin(&env, &repo, &["hook-card"], &read_tool.to_string(), &[]);
    assert_eq!((code(&out), stdout(&out)), (0, String::new()));
    let garbage = with_stdin(&env, &repo, &["hook-card"], "not json", &[]);
    assert_eq!((code(&garbage), stdout(&garbage)), (0, String::new()));
    // The run was never carded, so a carded command still shows it.
    assert!(card(&env, &repo, &format!("pitroom show {id}"), "").is_some());
}

#[test]
fn hook_card_for_a_big_crew_stays_under_the_host_cap() {
    let env = fake_env(big_answer());
    let repo = dirty_repo(&env, "repo");
    let tasks: Vec<String> = (0..9)
        .map(|i| format!("task {i} {}", "word ".repeat(40)))
        .collect();
    let mut args = vec!["crew", "-g", "big"];
    args.extend(tasks.iter().map(String::as_str));
    let out = env.run(&repo, &args);
    assert_exit(&out, 0);
    let out = env.run(&repo, &["wait", "-g", "big", "--brief"]);
    assert_exit(&out, 0);
    let v = card(&env, &repo, "pitroom wait -g big --brief", &stdout(&out)).expect("cards");
    let person = v["systemMessage"].as_str().expect("systemMessage");
    let agent = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context");
    assert!(person.contains("and 3 more runs"), "{person}");
    assert!(person.chars().count() + agent.chars().count() < 10_000);
}

#[test]
fn statusline_says_nothing_on_a_fresh_state_dir_and_creates_nothing() {
    let env = TestEnv::new(Path::new(super::common::PITROOM));
    let dir = env.dir("project");
    std::fs::remove_dir(&env.state).expect("empty state dir");
    let out = with_stdin(&env, &dir, &["statusline"], r#"{"session_id":"s"}"#, &[]);
    assert_eq!(
        (code(&out), stdout(&out)),
        (0, String::new()),
        "{}",
        text(&out)
    );
    assert!(!env.state.exists());
}

#[test]
fn statusline_shows_running_workers_with_backends_and_the_weeks_saving() {
    let env = fake_env(big_answer());
    let repo = dirty_repo(&env, "repo");
    let out = env.run(&repo, &["x"]);
    assert_exit(&out, 0);
    let line = stdout(&with_stdin(&env, &repo, &["statusline"], "{}", &[]));
    assert!(line.starts_with("🏁 pitroom · ~$"), "{line}");
    assert!(line.trim_end().ends_with("saved this week"), "{line}");
    assert!(!line.contains("running"), "{line}");

    let mut start = env.pitroom(&repo, &["--bg", "slow"]);
    start.env(
        "PITROOM_FAKE_SCRIPT",
        json!([{"sleep_ms": 60000}]).to_string(),
    );
    assert_eq!(code(&start.output().expect("bg")), 0);
    let running = eventually(Duration::from_secs(20), || {
        stdout(&with_stdin(&env, &repo, &["statusline"], "{}", &[]))
            .contains("1 running (opencode)")
    });
    assert!(running, "the background run never showed as running");
    assert_eq!(code(&env.run(&repo, &["stop"])), 0);
    let after = stdout(&with_stdin(&env, &repo, &["statusline"], "{}", &[]));
    assert!(!after.contains("running"), "{after}");
    assert_eq!(after.lines().count(), 1, "{after}");
}

#[test]
fn statusline_then_puts_the_users_line_first_fed_the_same_json() {
    let env = fake_env(big_answer());
    let repo = dirty_repo(&env, "repo");
    assert_eq!(code(&env.run(&repo, &["x"])), 0);
    let payload = r#"{"model":{"display_name":"Opus"}}"#;
    let then = r#"python3 -c 'import json,sys; print("mine:" + json.load(sys.stdin)["model"]["display_name"])'"#;
    let out = with_stdin(&env, &repo, &["statusline", "--then", then], payload, &[]);
    assert_exit(&out, 0);
    let line = stdout(&out);
    assert!(line.starts_with("mine:Opus · 🏁 pitroom"), "{line}");
}
