//! End-to-end tests on the real `qwen` binary (Qwen Code at the pinned version, installed from
//! npm under Node 22 by the test kit) against the scripted fake chat-completions server.

use std::path::{Path, PathBuf};

use pitroom_testkit::repo::{dirty_repo, fingerprint};
use pitroom_testkit::{real_cli, FakeOpenAi, TestEnv};
use serde_json::{json, Value};

use super::common::{code, record, text, PITROOM};
use super::failfast;
use super::recorder::Recorder;

/// A repository, a fake model server and a real Qwen Code configured through the caller's
/// environment (`OPENAI_*`), as a user with an OpenAI-compatible provider would.
pub struct World {
    pub env: TestEnv,
    pub server: FakeOpenAi,
    pub repo: PathBuf,
}

pub fn script() -> Value {
    json!({
        "aux": {"text": "Fake aux"},
        "scenarios": {
            "default": [
                {"text": "Let me look.",
                 "tool_calls": [{"name": "read_file", "arguments": {"file_path": "{{workdir}}/calc.py"}}],
                 "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 200}},
                {"text": "SUMMARY: divide() has no zero check: calc.py:7\nDETAILS: see {{workdir}}/calc.py:5-7\nFILES CHANGED: none",
                 "usage": {"prompt_tokens": 1500, "completion_tokens": 30, "cached_tokens": 1000}}
            ],
            "edit": [
                // Qwen refuses to edit a file it has not read in the session.
                {"tool_calls": [
                    {"name": "read_file", "arguments": {"file_path": "{{workdir}}/calc.py"}},
                    {"name": "read_file", "arguments": {"file_path": "{{workdir}}/README.md"}}
                ]},
                {"tool_calls": [
                    {"name": "edit", "arguments": {"file_path": "{{workdir}}/calc.py", "old_string": "    return a / b", "new_string": "    if b == 0:\n        raise ZeroDivisionError(\"b is zero\")\n    return a / b"}},
                    {"name": "write_file", "arguments": {"file_path": "{{workdir}}/new file é.txt", "content": "created by the worker\n"}}
                ]},
                {"tool_calls": [
                    {"name": "edit", "arguments": {"file_path": "{{workdir}}/README.md", "old_string": "user edit in progress", "new_string": "user edit in progress\nworker line"}}
                ]},
                {"text": "SUMMARY: added a zero check\nFILES CHANGED: calc.py, README.md, new file é.txt"}
            ],
            "err429": [{"error": 429, "error_message": "Rate limit reached for requests. Please try again in 1s.",
                        "headers": {"retry-after": "1"}}],
            // The failure matrix (suite::failfast): one scenario per shape.
            "ff429after": [{"error": 429, "error_message": "Rate limit reached for requests", "headers": {"retry-after": "1"}}],
            "ff429": [{"error": 429, "error_message": "Rate limit reached for requests"}],
            "ffquota": [{"error": 429, "error_body": {"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}}],
            "ff404": [{"error": 404}],
            "ff500": [{"error": 500}],
            "ff503": [{"error": 503}],
            "err404": [{"error": 404}],
            "err401": [{"error": 401, "error_message": "Incorrect API key provided: sk-fake. You can find your API key at https://platform.openai.com/account/api-keys."}],
            "err500": [{"error": 500}],
            "torn": [{"raw_stream": ["data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n", "data: {not json\n\n"]}]
        }
    })
}

impl World {
    pub fn new() -> World {
        let qwen = real_cli::qwen().expect("the pinned Qwen Code installs from npm");
        let path = real_cli::path_with_node22().expect("Node 22 installs from npm");
        let server = FakeOpenAi::start(script()).expect("fake server starts");
        let mut env = TestEnv::new(Path::new(PITROOM));
        env.set("PATH", path);
        env.set("PITROOM_QWEN_BIN", qwen.display().to_string());
        env.set("OPENAI_BASE_URL", server.base_url());
        env.set("OPENAI_API_KEY", "sk-fake");
        env.set("OPENAI_MODEL", "fake-model");
        // Any traffic that is not the fake model fails fast instead of leaving the machine.
        env.set("HTTPS_PROXY", "http://127.0.0.1:9");
        env.set("HTTP_PROXY", "http://127.0.0.1:9");
        env.set("NO_PROXY", "127.0.0.1,localhost");
        let repo = dirty_repo(&env, "repo");
        World { env, server, repo }
    }

    /// `pitroom run -W qwen ARGS` (a task, or `run --continue …`); other subcommands as given.
    pub fn run(&self, args: &[&str]) -> std::process::Output {
        let rest = match args.first() {
            Some(&"run") => &args[1..],
            Some(&("revert" | "show" | "models" | "doctor")) => {
                return self.env.run(&self.repo, args)
            }
            _ => args,
        };
        let mut all = vec!["run", "-W", "qwen"];
        all.extend(rest);
        self.env.run(&self.repo, &all)
    }
}

fn tool_names(request: &Value) -> Vec<String> {
    request["body"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn qwen_read_question_is_answered_with_verified_citations() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    let out = w.run(&["Where can divide fail?", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("calc.py:7"), "{stdout}");
    let r = record(&w.env, &w.repo);
    // The real CLI reads the live project in place, read-only under Landlock.
    assert_eq!(r["view"], "in_place", "{r:#}");
    assert_eq!(r["refs"]["total"], 2, "{r:#}");
    assert_eq!(r["refs"]["verified"], 2, "{r:#}");
    assert_eq!(r["tally"]["tool_calls"], 1, "{r:#}");
    assert_eq!(r["tally"]["failed_calls"], 0, "{r:#}");
    // Usage as Qwen reported it per call: (1000-200)+(1500-1000) input, 200+1000 cached.
    assert_eq!(r["tally"]["usage"]["input"], 1300, "{r:#}");
    assert_eq!(r["tally"]["usage"]["cache_read"], 1200, "{r:#}");
    assert_eq!(r["tally"]["usage"]["output"], 80, "{r:#}");
    assert!(
        r["session"].as_str().is_some_and(|s| s.len() >= 32),
        "{r:#}"
    );
    assert_eq!(fingerprint(&w.repo), before, "the user's tree is untouched");
    // Read mode as Qwen saw it: no edit, web or subagent tool offered; one model call per step
    // (no auto-memory side agent).
    let requests = w.server.chat_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    // The record names the model Qwen Code said it ran: the one its requests asked for.
    let asked = requests[0]["body"]["model"]
        .as_str()
        .expect("the request names a model");
    assert_eq!(r["reported_model"], asked, "{r:#}");
    let tools = tool_names(&requests[0]);
    assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
    for banned in ["write_file", "edit", "web_fetch", "agent"] {
        assert!(
            !tools.contains(&banned.to_string()),
            "{banned} in {tools:?}"
        );
    }
    // Qwen's home stayed private: nothing was written to the user's home.
    let home_entries: Vec<_> = std::fs::read_dir(&w.env.home)
        .expect("home")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(home_entries.is_empty(), "{home_entries:?}");
}

#[test]
fn qwen_write_run_records_exactly_its_edits_and_reverts_byte_exact() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    let out = w.run(&["-w", "fix divide scenario:edit", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let r = record(&w.env, &w.repo);
    let changed: Vec<&str> = r["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect();
    assert_eq!(
        changed,
        vec!["README.md", "calc.py", "new file é.txt"],
        "{r:#}"
    );
    assert_eq!(r["unreported"].as_array().map(Vec::len), Some(0), "{r:#}");
    let patch = std::fs::read_to_string(
        w.env
            .state
            .join("runs")
            .join(r["id"].as_str().expect("id"))
            .join("changes.patch"),
    )
    .expect("patch");
    assert!(patch.contains("+worker line"), "{patch}");
    assert!(
        patch.contains("+        raise ZeroDivisionError"),
        "{patch}"
    );
    assert!(!patch.contains("+user edit in progress"), "{patch}");
    let out = w.run(&["revert"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(fingerprint(&w.repo), before, "byte-identical after revert");
}

#[test]
fn qwen_write_attempt_in_read_mode_is_refused_and_the_tree_is_unchanged() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    let out = w.run(&["try to fix divide scenario:edit", "-t", "90s"]);
    let r = record(&w.env, &w.repo);
    assert!(
        r["tally"]["denied_calls"].as_u64().unwrap_or(0) >= 1,
        "{r:#}\n{}",
        text(&out)
    );
    assert_eq!(r["read_only_violation"], false, "{r:#}");
    assert!(
        r["changes"].as_array().is_some_and(|c| c.is_empty()),
        "{r:#}"
    );
    assert_eq!(fingerprint(&w.repo), before);
}

#[test]
fn qwen_rate_limit_fails_fast_and_is_classified() {
    let w = World::new();
    let out = w.run(&["anything scenario:err429", "-t", "600s"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let calls = w.server.chat_requests().len();
    assert!((1..=4).contains(&calls), "{calls} model calls");
    let r = record(&w.env, &w.repo);
    assert_eq!(r["state"], "failed", "{r:#}");
    assert_eq!(r["failure"], "rate_limited", "{r:#}");
}

#[test]
fn qwen_unknown_model_and_bad_key_are_classified() {
    let w = World::new();
    for (scenario, failure) in [("err404", "model_unavailable"), ("err401", "auth")] {
        let out = w.run(&[&format!("anything scenario:{scenario}"), "-t", "90s"]);
        assert_eq!(code(&out), 1, "{}", text(&out));
        let r = record(&w.env, &w.repo);
        assert_eq!(r["failure"], failure, "{scenario}: {r:#}");
    }
}

#[test]
fn qwen_follow_up_resumes_the_same_session() {
    let w = World::new();
    let out = w.run(&["Where can divide fail?", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let first = record(&w.env, &w.repo);
    let out = w.run(&["run", "--continue", "last", "And add?", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let second = record(&w.env, &w.repo);
    assert_ne!(first["id"], second["id"]);
    assert_eq!(first["session"], second["session"], "{second:#}");
    let last = w.server.chat_requests().last().cloned().expect("requests");
    let users = last["body"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert!(
        users >= 2,
        "the model saw the first question again: {last:#}"
    );
}

/// Issue 16, item 11: each provider failure shape ends Qwen Code's run classified, within the
/// retry cap Pitroom sets, so the fallback chain gets its turn (matrix in docs/workers/README.md).
#[test]
fn qwen_every_failure_shape_fails_classified_within_the_retry_cap() {
    let w = World::new();
    let shapes: &[failfast::Shape] = &[
        ("429 with retry-after", "ff429after", "rate_limited", 4),
        ("429 without retry-after", "ff429", "rate_limited", 4),
        ("insufficient_quota 429", "ffquota", "rate_limited", 4),
        ("404 unknown model", "ff404", "model_unavailable", 4),
        ("500", "ff500", "other", 4),
        ("503", "ff503", "rate_limited", 4),
    ];
    failfast::walk(
        "qwen",
        shapes,
        |args| w.run(args),
        || w.server.chat_requests().len(),
        || record(&w.env, &w.repo),
    );
}

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_qwen_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned Qwen Code changes"]
fn record_qwen_fixtures() {
    // Without Pitroom's cut, Qwen retries a 500 silently for ~76 s (see docs/workers/qwen.md).
    let cases: &[(&str, &[&str])] = &[
        ("read", &["Where can divide fail?", "-t", "60s"]),
        (
            "write-edit",
            &["-w", "fix divide scenario:edit", "-t", "60s"],
        ),
        (
            "read-edit-denied",
            &["try to fix divide scenario:edit", "-t", "60s"],
        ),
        ("err429", &["x scenario:err429", "-t", "60s"]),
        ("err404", &["x scenario:err404", "-t", "60s"]),
        ("err401", &["x scenario:err401", "-t", "60s"]),
        ("err500", &["x scenario:err500", "-t", "150s"]),
        ("malformed-sse", &["x scenario:torn", "-t", "60s"]),
    ];
    let w = World::new();
    Recorder {
        cli: "qwen",
        env: &w.env,
        repo: &w.repo,
        timeout: None,
        port: None,
        keep_stderr: |_| true,
        exit_codes: false,
    }
    .record(cases, |args| w.run(args));
}
