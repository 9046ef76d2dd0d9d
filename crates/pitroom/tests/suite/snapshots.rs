//! Snapshot tests of what Pitroom prints: the text report of a read, a write, a failed run and
//! one stopped at its budget,
//! `run --json`, `watch --json`, `show --json` and `history --json`, all on
//! the fake worker.
//!
//! The test environment fixes the clock and the run-id seed (`PITROOM_TIMESTAMP`,
//! `PITROOM_RANDOMNESS_SEED`), and these tests fix git's dates, so ids, times and commit ids are
//! the same on every run; the filters below replace only what still is not: the temporary
//! directory, measured durations and process ids. The snapshots sit in `snapshots/` beside this
//! file. After a deliberate change of the output, review them with `cargo insta review` or
//! rewrite them with `INSTA_UPDATE=always cargo test -p pitroom --test all snapshots`, and commit
//! the `.snap` files; in CI (`CI=true`) insta writes nothing and a difference fails.

use std::process::Output;

use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::{json, Value};

use super::common::{assert_exit, code, fake_env, json_stdout, text, use_script};

/// The date git stamps on the test repository's commits, so their ids are the same every run.
const GIT_DATE: &str = "2026-01-01T00:00:00Z";

/// A test environment whose OpenCode is the fake worker running `script`, with git's dates
/// fixed too.
fn snapshot_env(script: Value) -> TestEnv {
    let mut env = fake_env(script);
    env.set("GIT_AUTHOR_DATE", GIT_DATE);
    env.set("GIT_COMMITTER_DATE", GIT_DATE);
    env
}

/// Insta's settings for `env`: the snapshots named after the test alone, and the filters for
/// what a fixed clock does not fix.
fn settings(env: &TestEnv) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    let root = env.root.display().to_string();
    let real_root = std::fs::canonicalize(&env.root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| root.clone());
    for path in [real_root, root] {
        settings.add_filter(&regex_escape(&path), "[ROOT]");
    }
    // A CLI's state dir is named for the run's directory, which is a fresh temp dir.
    settings.add_filter(
        r"/workers/([a-z-]+)/(read|isolate|write)-[0-9a-f]{16}",
        "/workers/$1/$2-[DIR HASH]",
    );
    // Measured, not stamped: worker and queue time, a process's id, start time and memory,
    // and the kernel's Landlock ABI.
    settings.add_filter(
        r#""(duration_ms|queued_ms|pid|pid_start|supervisor_peak_kb|abi)":( ?)\d+"#,
        r#""$1":$2"[N]""#,
    );
    // The receipt's returned tokens are the report's size, and the report prints the run's
    // duration: they, the compression and the saving move with it.
    settings.add_filter(
        r#""(returned_tokens|compression|saved)":( ?)\d+(\.\d+)?"#,
        r#""$1":$2"[N]""#,
    );
    settings.add_filter(
        r"returned ~\d+ tokens, \d+× compression",
        "returned ~[N] tokens, [N]× compression",
    );
    settings.add_filter(r"est\. saved \$\d+\.\d+", "est. saved $[N]");
    // A watch event's run time, in seconds (`"time":0.2`).
    settings.add_filter(r#""time":( ?)\d+(\.\d+)?"#, r#""time":$1"[SECONDS]""#);
    // A report's durations (`0.3s`, `120ms`).
    settings.add_filter(r"\b\d+(\.\d+)?(ms|s)\b", "[DURATION]");
    settings
}

/// `text` with every regex metacharacter escaped (a path as a literal filter).
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The exit code, stdout and stderr of a command, as one snapshot.
fn printed(out: &Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        code(out),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A command's stdout as one JSON value; the command must succeed with `expected`.
fn json_of(out: &Output, expected: i32) -> Value {
    assert_exit(out, expected);
    json_stdout(out)
}

/// A command's stdout, checked to be one JSON object per line; the command must exit with
/// `expected`.
fn json_lines(out: &Output, expected: i32) -> String {
    assert_exit(out, expected);
    let lines = String::from_utf8_lossy(&out.stdout).into_owned();
    for line in lines.lines() {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(event["event"].is_string(), "{line}");
    }
    lines
}

fn read_script() -> Value {
    json!([
        {"tool": "grep", "input": {"pattern": "cookie"}},
        {"step": {"input": 1200, "output": 80, "cost": 0.0012}},
        {"text": "SUMMARY: the cookie is parsed in calc.py\n\ncalc.py:1 reads it."},
        {"step": {"input": 300, "output": 20, "reason": "stop", "cost": 0.0003}}
    ])
}

fn write_script() -> Value {
    json!([
        {"write": {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n        raise ZeroDivisionError\n    return a / b\n"}},
        {"tool": "edit", "input": {"filePath": "calc.py"}},
        {"step": {"input": 2000, "output": 150, "cost": 0.002}},
        {"text": "SUMMARY: divide refuses a zero divisor\n\ncalc.py:6 checks b."},
        {"step": {"input": 400, "output": 30, "reason": "stop", "cost": 0.0004}}
    ])
}

fn failing_script() -> Value {
    json!([
        {"step": {"input": 100, "output": 5}},
        {"stderr": "fatal: the model backend is unreachable\n"},
        {"exit": 1}
    ])
}

#[test]
fn the_clock_variables_the_test_kit_sets_are_the_ones_pitroom_reads() {
    assert_eq!(
        pitroom_testkit::env::TIMESTAMP_VAR,
        pitroom_core::clock::TIMESTAMP_ENV
    );
    assert_eq!(
        pitroom_testkit::env::RANDOMNESS_SEED_VAR,
        pitroom_core::clock::RANDOMNESS_SEED_ENV
    );
}

/// The fake worker runs `script` for `pitroom ARGS` in a dirty repository, which succeeds:
/// what it printed is snapshot `name`.
fn assert_report_snapshot(script: Value, args: &[&str], name: &str) {
    let env = snapshot_env(script);
    let repo = dirty_repo(&env, "repo");
    let out = env.run_expecting(&repo, args, 0);
    settings(&env).bind(|| insta::assert_snapshot!(name, printed(&out)));
}

#[test]
fn the_text_report_of_a_read_run() {
    assert_report_snapshot(
        read_script(),
        &["Where is the cookie parsed?"],
        "read_run_report",
    );
}

#[test]
fn the_text_report_of_a_write_run() {
    assert_report_snapshot(
        write_script(),
        &["-w", "Make divide refuse zero"],
        "write_run_report",
    );
}

#[test]
fn the_text_report_of_a_run_stopped_at_its_budget() {
    let env = snapshot_env(json!([
        {"write": {"path": "calc.py", "content": "def add(a, b):\n    return a + b  # half done\n"}},
        {"step": {"input": 5000, "output": 500, "cost": 0.0}},
        {"step": {"input": 5000, "output": 500, "cost": 0.0}},
        {"sleep_ms": 60000},
        {"text": "SUMMARY: never reached"}
    ]));
    std::fs::write(
        env.root.join("pitroom.toml"),
        "[worker_prices]\n\"opencode:acme/cheap\" = { input = 1.0, output = 4.0 }\n",
    )
    .expect("config written");
    let repo = dirty_repo(&env, "repo");
    let args = ["-i", "-m", "acme/cheap", "--max-usd", "0.01", "Finish add"];
    let out = env.run_expecting(&repo, &args, 1);
    settings(&env).bind(|| insta::assert_snapshot!("over_budget_run_report", printed(&out)));
}

#[test]
fn run_json_of_a_read_run_and_of_a_write_run() {
    let mut env = snapshot_env(read_script());
    let repo = dirty_repo(&env, "repo");
    let read = json_of(
        &env.run(&repo, &["run", "Where is the cookie parsed?", "--json"]),
        0,
    );
    use_script(&mut env, write_script());
    let write = json_of(
        &env.run(&repo, &["run", "-w", "Make divide refuse zero", "--json"]),
        0,
    );
    settings(&env).bind(|| {
        insta::assert_json_snapshot!("read_run_json", read);
        insta::assert_json_snapshot!("write_run_json", write);
    });
}

#[test]
fn watch_json_of_a_finished_run_replays_its_events_to_all_done() {
    let env = snapshot_env(read_script());
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["Where is the cookie parsed?"], 0);
    // The lines exactly as an agent reads them: key order and spacing are part of the schema.
    let watch = env.run(&repo, &["watch", "last", "--json", "--timeout", "60"]);
    let events = json_lines(&watch, 0);
    settings(&env).bind(|| insta::assert_snapshot!("watch_json_finished_run", events));
}

#[test]
fn show_json_and_history_json_of_two_runs() {
    let mut env = snapshot_env(read_script());
    let repo = dirty_repo(&env, "repo");
    env.run_expecting(&repo, &["Where is the cookie parsed?"], 0);
    use_script(&mut env, write_script());
    env.run_expecting(&repo, &["-w", "Make divide refuse zero"], 0);
    let ids: Vec<String> = json_of(&env.run(&repo, &["ls", "--json"]), 0)
        .as_array()
        .map(|runs| {
            runs.iter()
                .filter_map(|r| r["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(ids.len(), 2, "{ids:?}");
    // Both runs were stamped at the same fixed time; `last` (and no id) is still the newer.
    let newest = json_of(&env.run(&repo, &["show", "--json"]), 0);
    assert_eq!(newest["spec"]["mode"], "write", "{newest:#}");
    assert_eq!(
        json_of(&env.run(&repo, &["show", "last", "--json"]), 0)["id"],
        newest["id"]
    );
    let shown: Vec<Value> = ids
        .iter()
        .map(|id| json_of(&env.run(&repo, &["show", id, "--json"]), 0))
        .collect();
    let history = json_of(&env.run(&repo, &["history", "--json"]), 0);
    settings(&env).bind(|| {
        insta::assert_json_snapshot!("show_json_two_runs", shown);
        insta::assert_json_snapshot!("history_json_two_runs", history);
    });
}

#[test]
fn a_failing_worker_reports_the_failure_in_text_in_json_and_to_watch() {
    let env = snapshot_env(failing_script());
    let dir = env.dir("plain");
    let report = env.run(&dir, &["Where is the cookie parsed?"]);
    let failed = env.run(&dir, &["run", "Where is the cookie parsed?", "--json"]);
    let record = json_of(&failed, code(&failed));
    assert_ne!(code(&failed), 0, "{}", text(&failed));
    assert_eq!(code(&report), code(&failed), "{}", text(&report));
    let watch = env.run(&dir, &["watch", "last", "--json", "--timeout", "60"]);
    let events = json_lines(&watch, code(&watch));
    settings(&env).bind(|| {
        insta::assert_snapshot!("failed_run_report", printed(&report));
        insta::assert_json_snapshot!("failed_run_json", record);
        insta::assert_snapshot!(
            "failed_run_watch_json",
            format!("exit: {}\n{events}", code(&watch))
        );
    });
}
