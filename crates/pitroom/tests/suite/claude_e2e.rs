//! End-to-end tests on the real `claude` binary (`@anthropic-ai/claude-code` at the pinned
//! version, installed from npm under Node 22 by the test kit) against the scripted fake
//! Anthropic Messages API server.

use std::path::{Path, PathBuf};

use pitroom_testkit::repo::{dirty_repo, fingerprint};
use pitroom_testkit::{real_cli, FakeAnthropic, TestEnv};
use serde_json::{json, Value};

use super::common::{code, record, text, PITROOM};
use super::failfast;
use super::recorder::Recorder;

/// A repository, a fake model server and a real Claude Code configured the way a user with an
/// API gateway would: `ANTHROPIC_BASE_URL` in their own `~/.claude/settings.json`, the key in
/// the environment.
pub struct World {
    pub env: TestEnv,
    pub server: FakeAnthropic,
    pub repo: PathBuf,
}

pub fn script() -> Value {
    json!({
        "scenarios": {
            "default": [
                {"text": "Let me look.", "tool_calls": [{"name": "Read", "input": {"file_path": "{{workdir}}/calc.py"}}],
                 "usage": {"input_tokens": 1000, "output_tokens": 50, "cache_read_input_tokens": 200}},
                {"text": "SUMMARY: divide() has no zero check: calc.py:7\nDETAILS: see {{workdir}}/calc.py:5-7\nFILES CHANGED: none",
                 "usage": {"input_tokens": 1500, "output_tokens": 30, "cache_read_input_tokens": 1000}}
            ],
            "edit": [
                {"tool_calls": [
                    {"name": "Edit", "input": {"file_path": "{{workdir}}/calc.py", "old_string": "    # no zero check\n    return a / b", "new_string": "    if b == 0:\n        raise ZeroDivisionError(\"b is zero\")\n    return a / b"}},
                    {"name": "Write", "input": {"file_path": "{{workdir}}/new file é.txt", "content": "created by the worker\n"}}
                ]},
                {"tool_calls": [
                    {"name": "Edit", "input": {"file_path": "{{workdir}}/README.md", "old_string": "user edit in progress", "new_string": "user edit in progress\nworker line"}}
                ]},
                {"text": "SUMMARY: added a zero check\nFILES CHANGED: calc.py, README.md, new file é.txt"}
            ],
            "shellwrite": [
                {"tool_calls": [{"name": "Bash", "input": {"command": "echo sneaky > sneaky.txt", "description": "write a file"}}]},
                {"text": "SUMMARY: tried to write through the shell"}
            ],
            "secret": [
                {"tool_calls": [{"name": "Read", "input": {"file_path": "{{workdir}}/.env"}}]},
                {"text": "SUMMARY: could not read it"}
            ],
            "gitcommit": [
                {"tool_calls": [{"name": "Bash", "input": {"command": "git commit -am sneaky", "description": "commit"}}]},
                {"text": "SUMMARY: could not commit"}
            ],
            "err429": [{"error": 429, "headers": {"retry-after": "1"}}],
            "usage-limit": [{"error": 429, "error_message": "Usage limit reached for this organization.",
                             "headers": {"anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-reset": "1900000000", "retry-after": "3600"}}],
            "credit": [{"error": 400, "error_type": "invalid_request_error", "error_message": "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}],
            // The failure matrix (suite::failfast): one scenario per shape.
            "ff429after": [{"error": 429, "headers": {"retry-after": "1"}}],
            "ff429": [{"error": 429}],
            "ff404": [{"error": 404}],
            "ff500": [{"error": 500}],
            "ff503": [{"error": 503, "error_type": "api_error", "error_message": "Service Unavailable"}],
            "err404": [{"error": 404}],
            "err401": [{"error": 401}],
            "err500": [{"error": 500}],
            "err529": [{"error": 529}],
            "torn": [{"drop": true}]
        }
    })
}

impl World {
    pub fn new() -> World {
        let claude = real_cli::claude().expect("the pinned Claude Code installs from npm");
        let server = FakeAnthropic::start(script()).expect("fake server starts");
        let mut env = TestEnv::new(Path::new(PITROOM));
        env.set("PITROOM_CLAUDE_BIN", claude.display().to_string());
        env.set("ANTHROPIC_API_KEY", "sk-ant-fake");
        // Any traffic that is not the fake model fails fast instead of leaving the machine.
        env.set("HTTPS_PROXY", "http://127.0.0.1:9");
        env.set("HTTP_PROXY", "http://127.0.0.1:9");
        env.set("NO_PROXY", "127.0.0.1,localhost");
        let settings = json!({
            "env": {"ANTHROPIC_BASE_URL": server.base_url()},
            "permissions": {"allow": ["Bash(*)"], "defaultMode": "bypassPermissions"},
            "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "touch /tmp/pitroom-claude-hook-ran"}]}]}
        });
        let dir = env.home.join(".claude");
        std::fs::create_dir_all(&dir).expect("claude dir");
        std::fs::write(dir.join("settings.json"), settings.to_string()).expect("settings");
        let repo = dirty_repo(&env, "repo");
        World { env, server, repo }
    }

    pub fn run(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["-W", "claude"];
        all.extend(args);
        self.env.run(&self.repo, &all)
    }
}

fn tools_offered(request: &Value) -> Vec<String> {
    request["body"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn read_question_is_answered_with_verified_citations_and_only_read_tools() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    let out = w.run(&["Where can divide fail?", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("pitroom ✔ done · read"), "{stdout}");
    let r = record(&w.env, &w.repo);
    // The real CLI reads the live project in place, read-only under Landlock.
    assert_eq!(r["view"], "in_place", "{r:#}");
    let project = w
        .repo
        .canonicalize()
        .expect("canonical")
        .display()
        .to_string();
    let answer = r["answer"].as_str().expect("answer");
    assert!(
        answer.contains(&format!("{project}/calc.py:5-7")),
        "copy path rewritten: {answer}"
    );
    assert_eq!(r["refs"]["total"], 2, "{r:#}");
    assert_eq!(r["refs"]["verified"], 2, "{r:#}");
    assert_eq!(r["tally"]["usage"]["input"], 2500, "{r:#}");
    assert_eq!(r["tally"]["usage"]["cache_read"], 1200);
    assert_eq!(r["tally"]["usage"]["output"], 80);
    assert_eq!(r["tally"]["tool_calls"], 1);
    assert!(
        r["receipt"]["cost"].as_f64().is_some_and(|c| c > 0.0),
        "Claude prices its usage: {r:#}"
    );
    assert!(
        r["session"].as_str().is_some_and(|s| s.len() == 36),
        "{r:#}"
    );
    assert_eq!(fingerprint(&w.repo), before, "the user's tree is untouched");
    let first = &w.server.model_requests()[0];
    // No model was pinned: the record names the one Claude Code said it ran, which is the one
    // its requests asked the server for.
    let asked = first["body"]["model"]
        .as_str()
        .expect("the request names a model");
    assert_eq!(r["reported_model"], asked, "{r:#}");
    assert!(
        stdout.contains(&format!("model {asked} (the CLI's default)")),
        "{stdout}"
    );
    // `DeferredToolPlaceholder` is Claude Code's own stand-in for tools loaded on demand.
    let mut tools: Vec<String> = tools_offered(first)
        .into_iter()
        .filter(|t| t != "DeferredToolPlaceholder")
        .collect();
    tools.sort();
    assert_eq!(tools, vec!["Glob", "Grep", "Read"]);
    // The user's hooks and bypass mode stayed behind; their gateway setting came along.
    assert!(!Path::new("/tmp/pitroom-claude-hook-ran").exists());
    // Nothing was written into the user's ~/.claude but the settings the test put there.
    let entries: Vec<String> = std::fs::read_dir(w.env.home.join(".claude"))
        .expect("user claude dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, vec!["settings.json"]);
    assert!(!w.env.home.join(".claude.json").exists());
}

#[test]
fn write_run_edits_in_place_and_reverts_byte_exact() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    let index_before = std::fs::read(w.repo.join(".git/index")).expect("index");
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
    let patch = std::fs::read_to_string(
        w.env
            .state
            .join("runs")
            .join(r["id"].as_str().expect("id"))
            .join("changes.patch"),
    )
    .expect("patch");
    assert!(patch.contains("+worker line"), "{patch}");
    assert!(!patch.contains("+user edit in progress"), "{patch}");

    let out = w.env.run(&w.repo, &["revert"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        fingerprint(&w.repo),
        before,
        "every file byte-identical after revert"
    );
    assert_eq!(
        std::fs::read(w.repo.join(".git/index")).expect("index"),
        index_before
    );
}

#[test]
fn writes_in_read_mode_are_refused_and_the_tree_is_unchanged() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    for task in [
        "try to fix divide scenario:edit",
        "look around scenario:shellwrite",
    ] {
        let out = w.run(&[task, "-t", "90s"]);
        assert_eq!(code(&out), 0, "{}", text(&out));
        let r = record(&w.env, &w.repo);
        assert!(
            r["tally"]["denied_calls"].as_u64().unwrap_or(0) >= 1,
            "{task}: {r:#}"
        );
        assert_eq!(r["read_only_violation"], false, "{r:#}");
        assert!(
            r["changes"].as_array().is_some_and(|c| c.is_empty()),
            "{r:#}"
        );
    }
    assert_eq!(fingerprint(&w.repo), before);
}

#[test]
fn secret_files_and_history_commands_are_denied_in_write_mode() {
    let w = World::new();
    std::fs::write(w.repo.join(".env"), "API_TOKEN=very-secret-value\n").expect(".env");
    let out = w.run(&["-w", "read the env scenario:secret", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let r = record(&w.env, &w.repo);
    assert!(
        r["tally"]["denied_calls"].as_u64().unwrap_or(0) >= 1,
        "{r:#}"
    );
    let sent = w
        .server
        .model_requests()
        .last()
        .cloned()
        .expect("request")
        .to_string();
    assert!(
        !sent.contains("very-secret-value"),
        "the secret never reached the model"
    );

    let head = w.env.git(&w.repo, &["rev-parse", "HEAD"]);
    let out = w.run(&["-w", "commit scenario:gitcommit", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let r = record(&w.env, &w.repo);
    assert!(
        r["tally"]["denied_calls"].as_u64().unwrap_or(0) >= 1,
        "{r:#}"
    );
    assert_eq!(w.env.git(&w.repo, &["rev-parse", "HEAD"]), head);
}

#[test]
fn rate_limit_and_usage_limit_are_classified_within_seconds() {
    let w = World::new();
    for scenario in ["err429", "usage-limit", "credit", "err529"] {
        let before = w.server.model_requests().len();
        let out = w.run(&[&format!("anything scenario:{scenario}"), "-t", "600s"]);
        assert_eq!(code(&out), 1, "{}", text(&out));
        let calls = w.server.model_requests().len() - before;
        assert!((1..=2).contains(&calls), "{scenario}: {calls} model calls");
        let r = record(&w.env, &w.repo);
        assert_eq!(r["failure"], "rate_limited", "{scenario}: {r:#}");
    }
}

#[test]
fn unknown_model_bad_key_and_server_error_are_classified() {
    let w = World::new();
    for (scenario, failure) in [
        ("err404", "model_unavailable"),
        ("err401", "auth"),
        ("err500", "other"),
    ] {
        let before = w.server.model_requests().len();
        let out = w.run(&[&format!("anything scenario:{scenario}"), "-t", "600s"]);
        assert_eq!(code(&out), 1, "{}", text(&out));
        let calls = w.server.model_requests().len() - before;
        assert!(
            (1..=2).contains(&calls),
            "{scenario}: retries were capped: {calls} calls"
        );
        let r = record(&w.env, &w.repo);
        assert_eq!(r["failure"], failure, "{scenario}: {r:#}");
    }
}

#[test]
fn follow_up_resumes_the_same_claude_session() {
    let w = World::new();
    let out = w.run(&["Where can divide fail?", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let first = record(&w.env, &w.repo);
    let out = w.env.run(
        &w.repo,
        &["run", "--continue", "last", "And add?", "-t", "90s"],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let second = record(&w.env, &w.repo);
    assert_ne!(first["id"], second["id"]);
    assert_eq!(first["session"], second["session"]);
    let last = w.server.model_requests().last().cloned().expect("requests");
    let sent = last["body"]["messages"].to_string();
    assert!(
        sent.contains("divide fail") && sent.contains("And add?"),
        "{sent}"
    );
    // The follow-up's cost is its own, not the session's running total.
    let (c1, c2) = (
        first["receipt"]["cost"].as_f64(),
        second["receipt"]["cost"].as_f64(),
    );
    assert!(c1.is_some() && c2.is_some(), "{first:#} {second:#}");
}

#[test]
fn models_are_listed_through_the_real_cli() {
    let w = World::new();
    let out = w.env.run(&w.repo, &["models", "claude", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["worker"], "claude");
    let model = v["models"]
        .as_array()
        .expect("models")
        .iter()
        .find(|m| m["id"] == "sonnet")
        .cloned()
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(
        model["efforts"]
            .as_array()
            .is_some_and(|e| e.iter().any(|x| x == "high")),
        "{model:#}"
    );
}

#[test]
fn isolated_claude_edit_stays_in_its_copy_until_applied() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    let out = w.run(&["-i", "fix divide scenario:edit", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        fingerprint(&w.repo),
        before,
        "nothing reaches the tree before apply"
    );
    let r = record(&w.env, &w.repo);
    let copy = PathBuf::from(r["copy"].as_str().expect("copy"));
    assert!(
        copy.starts_with(&w.env.state),
        "the copy lives in the state dir"
    );
    let expected = fingerprint(&copy);
    let out = w.env.run(&w.repo, &["apply"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(fingerprint(&w.repo), expected);
    let readme = std::fs::read_to_string(w.repo.join("README.md")).expect("readme");
    assert!(
        readme.contains("user edit in progress\nworker line"),
        "{readme}"
    );
}

#[test]
fn effort_reaches_the_model_request() {
    let w = World::new();
    let out = w.run(&["Where can divide fail?", "--effort", "xhigh", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let first = w.server.model_requests()[0].clone();
    assert_eq!(
        first["body"]["output_config"]["effort"], "xhigh",
        "{:#}",
        first["body"]
    );
}

/// Issue 16, item 11: each provider failure shape ends Claude Code's run classified, within the
/// retry cap Pitroom sets, so the fallback chain gets its turn (matrix in docs/workers/README.md).
#[test]
fn claude_every_failure_shape_fails_classified_within_the_retry_cap() {
    let w = World::new();
    let shapes: &[failfast::Shape] = &[
        ("429 with retry-after", "ff429after", "rate_limited", 2),
        ("429 without retry-after", "ff429", "rate_limited", 2),
        ("usage limit 429", "usage-limit", "rate_limited", 2),
        ("404 unknown model", "ff404", "model_unavailable", 2),
        ("500", "ff500", "other", 2),
        ("503", "ff503", "rate_limited", 2),
        ("529 overloaded", "err529", "rate_limited", 2),
    ];
    failfast::walk(
        "claude",
        shapes,
        |args| w.run(args),
        || w.server.model_requests().len(),
        || record(&w.env, &w.repo),
    );
}

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_claude_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned Claude Code changes"]
fn record_claude_fixtures() {
    let cases: &[(&str, &[&str])] = &[
        ("read", &["Where can divide fail?"]),
        ("write-edit", &["-w", "fix divide scenario:edit"]),
        ("read-edit-denied", &["try to fix divide scenario:edit"]),
        ("read-bash-denied", &["look scenario:shellwrite"]),
        ("write-secret-denied", &["-w", "read it scenario:secret"]),
        (
            "write-git-commit-denied",
            &["-w", "commit scenario:gitcommit"],
        ),
        ("err429", &["x scenario:err429"]),
        ("usage-limit", &["x scenario:usage-limit"]),
        ("credit", &["x scenario:credit"]),
        ("err404", &["x scenario:err404"]),
        ("err401", &["x scenario:err401"]),
        ("err500", &["x scenario:err500"]),
        ("err529", &["x scenario:err529"]),
        ("dropped-stream", &["x scenario:torn"]),
    ];
    let w = World::new();
    std::fs::write(w.repo.join(".env"), "API_TOKEN=very-secret-value\n").expect(".env");
    Recorder {
        cli: "claude",
        env: &w.env,
        repo: &w.repo,
        timeout: Some("60s"),
        port: Some(w.server.port()),
        keep_stderr: |_| true,
        exit_codes: false,
    }
    .record(cases, |args| w.run(args));
}
