//! End-to-end tests on the real `codex` binary (`@openai/codex` at the pinned version, installed
//! from npm by the test kit) against the scripted fake Responses API server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pitroom_testkit::repo::{dirty_repo, fingerprint};
use pitroom_testkit::{real_cli, FakeResponses, TestEnv};
use serde_json::{json, Value};

use super::common::{code, eventually, processes_with_env, record, text, PITROOM};
use super::failfast;
use super::recorder::Recorder;

/// The patch the write scenarios ask Codex's `apply_patch` tool to make.
const PATCH: &str = "*** Begin Patch\n*** Update File: calc.py\n@@\n def divide(a, b):\n-    # no zero check\n-    return a / b\n+    if b == 0:\n+        raise ZeroDivisionError(\"b is zero\")\n+    return a / b\n*** Update File: README.md\n@@\n user edit in progress\n+worker line\n*** Add File: new file é.txt\n+created by the worker\n*** End Patch\n";

/// A repository, a fake model server and a real Codex configured through the user's own
/// `~/.codex/config.toml` (a custom provider with an API key in the environment), as a user
/// with their own provider would have it.
pub struct World {
    pub env: TestEnv,
    pub server: FakeResponses,
    pub repo: PathBuf,
}

pub fn script() -> Value {
    json!({
        "scenarios": {
            "default": [
                {"shell": "grep -n 'def divide' calc.py", "reasoning": "Look for divide.",
                 "usage": {"input_tokens": 1000, "cached_tokens": 200, "output_tokens": 50, "reasoning_tokens": 7}},
                {"text": "SUMMARY: divide() has no zero check: calc.py:7\nDETAILS: see {{workdir}}/calc.py:5-7\nFILES CHANGED: none",
                 "usage": {"input_tokens": 1500, "cached_tokens": 1000, "output_tokens": 30}}
            ],
            "edit": [
                {"apply_patch": PATCH},
                {"text": "SUMMARY: added a zero check\nFILES CHANGED: calc.py, README.md, new file é.txt"}
            ],
            "shellwrite": [
                {"shell": "echo sneaky > sneaky.txt"},
                {"text": "SUMMARY: tried to write through the shell"}
            ],
            "err429": [{"error": 429, "error_body": {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}}],
            "usage-limit": [{"error": 429, "error_body": {"error": {"type": "usage_limit_reached", "plan_type": "plus", "resets_in_seconds": 3600}}}],
            "quota": [{"error": 429, "error_body": {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}}],
            // The failure matrix (suite::failfast): one scenario per shape.
            "ff429after": [{"error": 429, "error_message": "Rate limit reached for requests", "headers": {"retry-after": "1"}}],
            "ff429": [{"error": 429, "error_message": "Rate limit reached for requests"}],
            "ffquota": [{"error": 429, "error_body": {"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}}],
            "ff404": [{"error": 404}],
            "ff500": [{"error": 500}],
            "ff503": [{"error": 503}],
            "err404": [{"error": 404}],
            "err401": [{"error": 401}],
            "err500": [{"error": 500}],
            "torn": [{"drop": true}],
            "hang": [{"hang": true}],
            "gitcommit": [
                {"shell": "git commit -qam sneaky; git update-ref refs/heads/evil HEAD; echo tried"},
                {"text": "SUMMARY: tried to commit"}
            ]
        }
    })
}

impl World {
    pub fn new() -> World {
        let codex = real_cli::codex().expect("the pinned Codex CLI installs from npm");
        let server = FakeResponses::start(script()).expect("fake server starts");
        let mut env = TestEnv::new(Path::new(PITROOM));
        env.set("PITROOM_CODEX_BIN", codex.display().to_string());
        env.set("FAKE_API_KEY", "sk-fake");
        let config = format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"fake\"\napproval_policy = \"on-request\"\n\n\
             [model_providers.fake]\nname = \"fake\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"FAKE_API_KEY\"\n\n\
             [mcp_servers.docs]\ncommand = \"/nonexistent/docs-mcp\"\n",
            server.base_url()
        );
        let home = env.home.join(".codex");
        std::fs::create_dir_all(&home).expect("codex home");
        std::fs::write(home.join("config.toml"), config).expect("config");
        let repo = dirty_repo(&env, "repo");
        World { env, server, repo }
    }

    pub fn run(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["-W", "codex"];
        all.extend(args);
        self.env.run(&self.repo, &all)
    }
}

/// The `x-codex-turn-metadata` header Codex sent with the last model request.
fn last_turn_metadata(server: &FakeResponses) -> Value {
    let last = server
        .model_requests()
        .last()
        .cloned()
        .expect("a model request");
    let raw = last["headers"]["x-codex-turn-metadata"]
        .as_str()
        .unwrap_or("{}");
    serde_json::from_str(raw).unwrap_or(Value::Null)
}

#[test]
fn read_question_is_answered_with_verified_citations_under_the_read_only_sandbox() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    let out = w.run(&["Where can divide fail?", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("pitroom ✔ done · read"), "{stdout}");
    let r = record(&w.env, &w.repo);
    // Codex's stream never names the model: the record reads it from Codex's session log,
    // and it is the one Codex's requests asked the server for.
    let asked = w.server.model_requests()[0]["body"]["model"].clone();
    assert_eq!(asked, "gpt-5.5");
    assert_eq!(r["reported_model"], asked, "{r:#}");
    // Codex keeps its own sandbox, so it is not Landlocked: it reads a copy, and says why.
    assert_eq!(r["view"], "copy", "{r:#}");
    assert!(
        r["view_reason"]
            .as_str()
            .is_some_and(|why| why.contains("codex keeps its own sandbox")),
        "{r:#}"
    );
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
    // Codex sums a turn's requests; cached input and reasoning are split out.
    assert_eq!(r["tally"]["usage"]["input"], 1300, "{r:#}");
    assert_eq!(r["tally"]["usage"]["cache_read"], 1200);
    assert_eq!(r["tally"]["usage"]["output"], 73);
    assert_eq!(r["tally"]["usage"]["reasoning"], 7);
    assert_eq!(r["tally"]["tool_calls"], 1);
    assert!(
        r["receipt"]["cost"].is_null(),
        "Codex reports no cost: {r:#}"
    );
    assert!(
        r["session"].as_str().is_some_and(|s| s.len() >= 32),
        "{r:#}"
    );
    assert_eq!(fingerprint(&w.repo), before, "the user's tree is untouched");
    // Codex's own sandbox ran read-only, with no web search tool and none of the user's MCP
    // servers; the user's approval setting was overridden.
    let meta = last_turn_metadata(&w.server);
    assert_eq!(meta["sandbox_mode"], "read-only", "{meta:#}");
    let body = &w.server.model_requests()[0]["body"];
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().or_else(|| t["type"].as_str()))
        .collect();
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("web_search") || t.contains("docs")),
        "{tools:?}"
    );
    // The run stayed out of the user's ~/.codex: nothing but the config the test wrote.
    let entries: Vec<String> = std::fs::read_dir(w.env.home.join(".codex"))
        .expect("user codex home")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, vec!["config.toml"]);
}

#[test]
fn write_run_patches_in_place_and_reverts_byte_exact() {
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
    assert!(
        patch.contains("+        raise ZeroDivisionError"),
        "{patch}"
    );
    assert!(
        !patch.contains("+user edit in progress"),
        "the user's own edit is not the worker's: {patch}"
    );
    assert_eq!(
        last_turn_metadata(&w.server)["sandbox_mode"],
        "workspace-write"
    );

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
fn writes_in_read_mode_are_refused_by_codexs_sandbox_and_the_tree_is_unchanged() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    for task in [
        "look around scenario:shellwrite",
        "try to fix divide scenario:edit",
    ] {
        let out = w.run(&[task, "-t", "90s"]);
        assert_eq!(code(&out), 0, "{}", text(&out));
        let r = record(&w.env, &w.repo);
        assert_eq!(r["read_only_violation"], false, "{r:#}");
        assert!(
            r["changes"].as_array().is_some_and(|c| c.is_empty()),
            "{r:#}"
        );
        let stderr = std::fs::read_to_string(
            w.env
                .state
                .join("runs")
                .join(r["id"].as_str().expect("id"))
                .join("stderr.log"),
        )
        .unwrap_or_default();
        // Codex reports the refusal only on stderr; the engine turns it into a denied call once
        // it follows `Adapter::stderr_events`.
        assert!(
            r["tally"]["denied_calls"].as_u64().unwrap_or(0) >= 1
                || stderr.contains("recorded sandbox violation")
                || stderr.contains("patch rejected: writing is blocked by read-only sandbox"),
            "{task}: {r:#}\n{stderr}"
        );
        let copy = PathBuf::from(r["copy"].as_str().unwrap_or(""));
        assert!(
            !copy.join("sneaky.txt").exists(),
            "the sandbox kept the copy unchanged too"
        );
    }
    assert_eq!(fingerprint(&w.repo), before);
}

#[test]
fn rate_limit_is_classified_as_such_within_seconds() {
    let w = World::new();
    for scenario in ["err429", "usage-limit", "quota"] {
        let out = w.run(&[&format!("anything scenario:{scenario}"), "-t", "600s"]);
        assert_eq!(code(&out), 1, "{}", text(&out));
        let r = record(&w.env, &w.repo);
        assert_eq!(r["failure"], "rate_limited", "{scenario}: {r:#}");
    }
    // One request each: the 429s were not retried.
    assert_eq!(w.server.model_requests().len(), 3);
}

#[test]
fn unknown_model_and_bad_key_are_classified_from_codexs_texts() {
    let w = World::new();
    let cases = [
        ("err404", "model_unavailable"),
        ("err401", "auth"),
        ("err500", "other"),
    ];
    for (scenario, failure) in cases {
        let before = w.server.model_requests().len();
        let out = w.run(&[&format!("anything scenario:{scenario}"), "-t", "600s"]);
        assert_eq!(code(&out), 1, "{}", text(&out));
        let calls = w.server.model_requests().len() - before;
        assert_eq!(calls, 1, "{scenario}: retries were capped");
        let r = record(&w.env, &w.repo);
        assert_eq!(r["failure"], failure, "{scenario}: {r:#}");
    }
}

#[test]
fn follow_up_resumes_the_same_codex_thread() {
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
    // The model saw the whole conversation again: both prompts.
    let last = w.server.model_requests().last().cloned().expect("requests");
    let prompts = last["body"]["input"]
        .as_array()
        .expect("input")
        .iter()
        .filter(|i| i["role"] == "user" && i.to_string().contains("divide fail"))
        .count();
    assert!(prompts >= 1, "{last:#}");
    assert!(last.to_string().contains("And add?"));
}

#[test]
fn history_stays_untouched_when_codex_tries_to_commit_in_write_mode() {
    let w = World::new();
    let refs = |w: &World| {
        w.env.git(
            &w.repo,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        )
    };
    let before = refs(&w);
    let out = w.run(&["-w", "commit it scenario:gitcommit", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(refs(&w), before, "no commit, no new ref");
}

#[test]
fn isolated_codex_edit_stays_in_its_copy_until_applied() {
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
    assert_eq!(
        last_turn_metadata(&w.server)["sandbox_mode"],
        "workspace-write"
    );
    let expected = fingerprint(&copy);
    let out = w.env.run(&w.repo, &["apply"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(fingerprint(&w.repo), expected);
}

#[test]
fn timeout_stops_codex_and_every_process_it_started() {
    let w = World::new();
    let out = w.run(&["wait forever scenario:hang", "-t", "6s"]);
    assert_eq!(code(&out), 4, "{}", text(&out));
    let r = record(&w.env, &w.repo);
    assert_eq!(r["state"], "timeout", "{r:#}");
    let state = w.env.state.display().to_string();
    assert!(
        eventually(Duration::from_secs(5), || processes_with_env(&state)
            .is_empty()),
        "left running: {:?}",
        processes_with_env(&state)
    );
}

#[test]
fn models_are_listed_through_the_real_cli() {
    let w = World::new();
    let out = w.env.run(&w.repo, &["models", "codex", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["worker"], "codex");
    let model = v["models"]
        .as_array()
        .expect("models")
        .iter()
        .find(|m| m["id"] == "gpt-5.5")
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
fn effort_reaches_the_model_request() {
    let w = World::new();
    let out = w.run(&["Where can divide fail?", "--effort", "xhigh", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let first = w.server.model_requests()[0].clone();
    assert_eq!(
        first["body"]["reasoning"]["effort"], "xhigh",
        "{:#}",
        first["body"]
    );
}

#[test]
fn a_timed_out_codex_run_can_be_continued() {
    let w = World::new();
    let out = w.run(&["first wait scenario:hang", "-t", "6s"]);
    assert_eq!(code(&out), 4, "{}", text(&out));
    let first = record(&w.env, &w.repo);
    let out = w.env.run(
        &w.repo,
        &[
            "run",
            "--continue",
            "last",
            "Where can divide fail? scenario:default",
            "-t",
            "90s",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let second = record(&w.env, &w.repo);
    assert_eq!(first["session"], second["session"], "{first:#}\n{second:#}");
}

/// Issue 16, item 11: each provider failure shape ends Codex's run classified, within the
/// retry cap Pitroom sets, so the fallback chain gets its turn (matrix in docs/workers/README.md).
#[test]
fn codex_every_failure_shape_fails_classified_within_the_retry_cap() {
    let w = World::new();
    let shapes: &[failfast::Shape] = &[
        ("429 with retry-after", "ff429after", "rate_limited", 1),
        ("429 without retry-after", "ff429", "rate_limited", 1),
        ("insufficient_quota 429", "ffquota", "rate_limited", 1),
        ("404 unknown model", "ff404", "model_unavailable", 1),
        ("500", "ff500", "other", 1),
        ("503", "ff503", "rate_limited", 1),
    ];
    failfast::walk(
        "codex",
        shapes,
        |args| w.run(args),
        || w.server.model_requests().len(),
        || record(&w.env, &w.repo),
    );
}

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_codex_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned Codex changes"]
fn record_codex_fixtures() {
    let cases: &[(&str, &[&str])] = &[
        ("read", &["Where can divide fail?"]),
        // Before the write run, whose patch would no longer apply to the changed tree.
        ("read-patch-refused", &["fix divide scenario:edit"]),
        ("read-shell-write-refused", &["look scenario:shellwrite"]),
        ("write-patch", &["-w", "fix divide scenario:edit"]),
        ("err429", &["x scenario:err429"]),
        ("usage-limit", &["x scenario:usage-limit"]),
        ("quota", &["x scenario:quota"]),
        ("err404", &["x scenario:err404"]),
        ("err401", &["x scenario:err401"]),
        ("err500", &["x scenario:err500"]),
        ("dropped-stream", &["x scenario:torn"]),
    ];
    let w = World::new();
    Recorder {
        cli: "codex",
        env: &w.env,
        repo: &w.repo,
        timeout: Some("60s"),
        port: Some(w.server.port()),
        keep_stderr: |l| l.contains("ERROR") || l.contains("WARN") || l.starts_with("Error"),
        exit_codes: false,
    }
    .record(cases, |args| w.run(args));
}
