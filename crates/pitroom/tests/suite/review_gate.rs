//! `pitroom hook review-gate` fed Stop payloads the way Claude Code and Codex send them, with
//! the fake worker as the reviewer: a change not yet reviewed is reviewed once and its findings
//! come back as the block reason; everything else (a clean tree, the same change again, the
//! second stop of a turn, the session's cap, a failed reviewer, the gate not enabled) lets the
//! agent stop with nothing on stdout and exit 0.

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{assert_exit, fake_env, json_stdout, output_with_stdin, text};

const FINDING: &str = "important: calc.py:7 divides by zero unchecked";

/// The reviewer's answer: one important issue, so quality needs fixes.
fn reviewer_with_findings() -> Value {
    json!([
        {"step": {"input": 900, "output": 60, "cost": 0.001}},
        {"text": format!("SUMMARY: divide() still fails on zero\nDETAILS: {FINDING}\nSPEC: PASS · QUALITY: NEEDS_FIXES · ISSUES: critical=0 important=1 minor=0")}
    ])
}

fn stop_payload(session: &str, cwd: &Path, stop_hook_active: bool) -> String {
    json!({
        "session_id": session,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": cwd,
        "hook_event_name": "Stop",
        "stop_hook_active": stop_hook_active,
    })
    .to_string()
}

/// One stop: the hook's output, which always exits 0.
fn stop(env: &TestEnv, dir: &Path, args: &[&str], payload: &str) -> Output {
    let mut all = vec!["hook", "review-gate"];
    all.extend_from_slice(args);
    let out = output_with_stdin(&mut env.pitroom(dir, &all), payload.as_bytes());
    assert_exit(&out, 0);
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The block decision the hook printed.
fn blocked(out: &Output) -> Value {
    let v: Value = serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("the hook prints one JSON decision ({e}): {}", text(out)));
    assert_eq!(v["decision"], "block", "{v:#}");
    v
}

fn assert_silent(out: &Output) {
    assert_eq!(stdout(out), "", "the agent may stop: {}", text(out));
}

/// The reviews Pitroom recorded (runs that reviewed uncommitted work).
fn reviews(env: &TestEnv, dir: &Path) -> usize {
    let runs = json_stdout(&env.run_expecting(dir, &["ls", "--json"], 0));
    runs.as_array()
        .expect("a list of runs")
        .iter()
        .filter(|r| r["spec"]["review_of"] == "uncommitted")
        .count()
}

fn gate_state(env: &TestEnv, session: &str) -> Value {
    let raw = std::fs::read(
        env.state
            .join("review-gate")
            .join(format!("{session}.json")),
    )
    .expect("the session's gate state");
    serde_json::from_slice(&raw).expect("json")
}

#[test]
fn a_new_change_is_reviewed_once_and_its_findings_continue_the_agent() {
    let env = fake_env(reviewer_with_findings());
    let repo = dirty_repo(&env, "repo");
    let out = stop(&env, &repo, &[], &stop_payload("s-1", &repo, false));
    let reason = blocked(&out)["reason"]
        .as_str()
        .expect("a reason")
        .to_string();
    assert!(reason.contains(FINDING), "{reason}");
    assert!(
        reason.contains("SPEC PASS · QUALITY NEEDS_FIXES · critical 0, important 1, minor 0"),
        "{reason}"
    );
    assert!(reason.chars().count() < 10_000);
    assert_eq!(reviews(&env, &repo), 1);
    let state = gate_state(&env, "s-1");
    assert_eq!(state["rounds"], 1, "{state:#}");
    assert_eq!(state["reviewed"].as_array().map(Vec::len), Some(1));
    assert_eq!(state["runs"].as_array().map(Vec::len), Some(1));

    // The same turn stops again after the agent answered the findings: it may stop.
    assert_silent(&stop(&env, &repo, &[], &stop_payload("s-1", &repo, true)));
    // A later turn with the very same change: reviewed already.
    assert_silent(&stop(&env, &repo, &[], &stop_payload("s-1", &repo, false)));
    assert_eq!(reviews(&env, &repo), 1, "no second review of one change");

    // A new change is reviewed again; another session has its own memory.
    std::fs::write(
        repo.join("calc.py"),
        "def divide(a, b):\n    return a / b if b else 0\n",
    )
    .expect("edit");
    blocked(&stop(&env, &repo, &[], &stop_payload("s-1", &repo, false)));
    blocked(&stop(&env, &repo, &[], &stop_payload("s-2", &repo, false)));
    assert_eq!(reviews(&env, &repo), 3);
    assert_eq!(gate_state(&env, "s-1")["rounds"], 2);
}

#[test]
fn a_clean_tree_or_a_clean_verdict_lets_the_agent_stop() {
    let env = fake_env(json!([
        {"step": {"input": 900, "output": 60}},
        {"text": "SUMMARY: fine\nSPEC: PASS · QUALITY: APPROVED · ISSUES: critical=0 important=0 minor=1"}
    ]));
    let repo = dirty_repo(&env, "repo");
    let out = stop(&env, &repo, &[], &stop_payload("s-clean", &repo, false));
    assert_silent(&out);
    assert!(text(&out).contains("fit to land"), "{}", text(&out));
    assert_eq!(reviews(&env, &repo), 1);

    // Nothing uncommitted: no review at all, and no state written.
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "everything"]);
    assert_silent(&stop(
        &env,
        &repo,
        &[],
        &stop_payload("s-tree", &repo, false),
    ));
    assert_eq!(reviews(&env, &repo), 1);
    assert!(!env.state.join("review-gate/s-tree.json").exists());
    // Not a git repository: the same.
    let plain = env.dir("plain");
    assert_silent(&stop(
        &env,
        &plain,
        &[],
        &stop_payload("s-tree", &plain, false),
    ));
}

#[test]
fn the_session_cap_stops_new_reviews() {
    let mut env = fake_env(reviewer_with_findings());
    let config = env.root.join("config.toml");
    std::fs::write(&config, "review_gate_max_rounds = 1\n").expect("config");
    env.set("PITROOM_CONFIG", config.display().to_string());
    let repo = dirty_repo(&env, "repo");
    blocked(&stop(
        &env,
        &repo,
        &[],
        &stop_payload("s-cap", &repo, false),
    ));
    std::fs::write(repo.join("README.md"), "# another change\n").expect("edit");
    let out = stop(&env, &repo, &[], &stop_payload("s-cap", &repo, false));
    assert_silent(&out);
    assert!(text(&out).contains("1 of 1 review(s)"), "{}", text(&out));
    assert_eq!(reviews(&env, &repo), 1);
}

#[test]
fn a_failed_reviewer_never_holds_the_agent_and_is_not_retried_on_the_same_change() {
    let env = fake_env(json!([
        {"stderr": "Error: 503 upstream overloaded"},
        {"exit": 1}
    ]));
    let repo = dirty_repo(&env, "repo");
    let out = stop(&env, &repo, &[], &stop_payload("s-fail", &repo, false));
    assert_silent(&out);
    assert!(
        text(&out).contains("the review did not happen"),
        "{}",
        text(&out)
    );
    assert_eq!(gate_state(&env, "s-fail")["rounds"], 1);
    assert_silent(&stop(
        &env,
        &repo,
        &[],
        &stop_payload("s-fail", &repo, false),
    ));
    assert_eq!(reviews(&env, &repo), 1);

    // A reviewer that answers without a verdict line is a failed review too.
    let env = fake_env(json!([{"text": "SUMMARY: looks good to me"}]));
    let repo = dirty_repo(&env, "repo");
    let out = stop(&env, &repo, &[], &stop_payload("s-noverdict", &repo, false));
    assert_silent(&out);
    assert!(text(&out).contains("without a verdict"), "{}", text(&out));
}

#[test]
fn the_plugins_gate_is_off_until_the_config_enables_it() {
    let mut env = fake_env(reviewer_with_findings());
    let repo = dirty_repo(&env, "repo");
    let payload = stop_payload("s-opt", &repo, false);
    assert_silent(&stop(&env, &repo, &["--if-enabled"], &payload));
    assert_eq!(reviews(&env, &repo), 0);
    let config = env.root.join("config.toml");
    std::fs::write(&config, "review_gate = true\n").expect("config");
    env.set("PITROOM_CONFIG", config.display().to_string());
    blocked(&stop(&env, &repo, &["--if-enabled"], &payload));
    assert_eq!(reviews(&env, &repo), 1);
}

#[test]
fn bad_input_or_a_worker_inside_pitroom_does_nothing() {
    let mut env = fake_env(reviewer_with_findings());
    let repo = dirty_repo(&env, "repo");
    for payload in [
        "",
        "not json",
        "[]",
        r#"{"cwd": "/tmp"}"#,
        r#"{"session_id": "x"}"#,
    ] {
        assert_silent(&stop(&env, &repo, &[], payload));
    }
    // A session id is never a path.
    let hostile = stop_payload("../../escape", &repo, false);
    blocked(&stop(&env, &repo, &[], &hostile));
    assert!(!env.root.join("escape.json").exists());
    assert!(!env.state.join("escape.json").exists());

    env.set("PITROOM_ACTIVE", "1");
    std::fs::write(repo.join("README.md"), "# inside a worker\n").expect("edit");
    assert_silent(&stop(&env, &repo, &[], &stop_payload("s-in", &repo, false)));
    env.unset("PITROOM_ACTIVE");
    assert_eq!(reviews(&env, &repo), 1);
}

#[test]
fn two_gates_on_one_stop_review_the_change_once() {
    // The plugin's hook and the installed one both run at the same stop. (Which of them gets
    // the session's lock first is up to the machine; the service's unit test pins the order.)
    let env = fake_env(reviewer_with_findings());
    let repo = dirty_repo(&env, "repo");
    let payload = stop_payload("s-twice", &repo, false);
    let children: Vec<_> = (0..2)
        .map(|_| {
            let mut child = env
                .pitroom(&repo, &["hook", "review-gate"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the hook starts");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(payload.as_bytes())
                .expect("payload written");
            child
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("the hook ends"))
        .collect();
    for out in &outs {
        assert_exit(out, 0);
    }
    let blocks = outs.iter().filter(|o| !stdout(o).is_empty()).count();
    assert_eq!(blocks, 1, "{}\n---\n{}", text(&outs[0]), text(&outs[1]));
    assert_eq!(reviews(&env, &repo), 1);
    assert_eq!(gate_state(&env, "s-twice")["rounds"], 1);
}
