//! End-to-end tests on the real `opencode` binary (the pinned version, installed from npm by
//! the test kit) against the scripted fake chat-completions server.

use std::path::{Path, PathBuf};

use pitroom_testkit::repo::{dirty_repo, fingerprint};
use pitroom_testkit::{real_cli, FakeOpenAi, TestEnv};
use serde_json::{json, Value};

use super::common::{code, record, text, PITROOM};
use super::failfast;
use super::recorder::Recorder;

/// A repository, a fake model server and a real OpenCode configured (through the user's own
/// global OpenCode config file) to talk to it.
pub struct World {
    pub env: TestEnv,
    pub server: FakeOpenAi,
    pub repo: PathBuf,
}

pub fn script() -> Value {
    json!({
        "aux": {"text": "Fake title"},
        "by_model": {"limited-model": "limited", "good-model": "finish"},
        "scenarios": {
            "default": [
                {"tool_calls": [{"name": "read", "arguments": {"filePath": "{{workdir}}/calc.py"}}],
                 "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 200, "reasoning_tokens": 7}},
                {"text": "SUMMARY: divide() has no zero check: calc.py:7\nDETAILS: see {{workdir}}/calc.py:5-7\nFILES CHANGED: none",
                 "usage": {"prompt_tokens": 1500, "completion_tokens": 30, "cached_tokens": 1000}}
            ],
            "edit": [
                {"tool_calls": [
                    {"name": "edit", "arguments": {"filePath": "{{workdir}}/calc.py", "oldString": "    return a / b", "newString": "    if b == 0:\n        raise ZeroDivisionError(\"b is zero\")\n    return a / b"}},
                    {"name": "write", "arguments": {"filePath": "{{workdir}}/new file é.txt", "content": "created by the worker\n"}}
                ]},
                {"tool_calls": [
                    {"name": "edit", "arguments": {"filePath": "{{workdir}}/README.md", "oldString": "user edit in progress", "newString": "user edit in progress\nworker line"}}
                ]},
                {"text": "SUMMARY: added a zero check\nFILES CHANGED: calc.py, README.md, new file é.txt"}
            ],
            "bashwrite": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo sneaky > sneaky.txt", "description": "write a file"}}]},
                {"text": "SUMMARY: wrote a file through the shell"}
            ],
            "gitdeny": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "git commit -am sneaky", "description": "commit"}}]},
                {"text": "SUMMARY: could not commit"}
            ],
            "malformed": [{"raw_stream": ["data: {not valid json\n\n", "data: [DONE]\n\n"]}],
            "err500": [{"error": 500, "headers": {"retry-after": "0"}}],
            "attack": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "sh -c 'git reset -q --soft HEAD~1'; \"$PITROOM_REAL_GIT\" update-ref refs/heads/evil HEAD; \"$PITROOM_REAL_GIT\" commit -q --allow-empty -m direct; git status --short | head -3", "description": "try to rewrite history"}}]},
                {"text": "SUMMARY: tried"}
            ],
            "limited": [
                {"tool_calls": [{"name": "write", "arguments": {"filePath": "{{workdir}}/first.txt", "content": "from the first worker\n"}}]},
                {"error": 429, "error_message": "Rate limit reached for requests", "headers": {"retry-after": "0"}}
            ],
            "finish": [
                {"tool_calls": [{"name": "write", "arguments": {"filePath": "{{workdir}}/second.txt", "content": "from the second worker\n"}}]},
                {"text": "SUMMARY: finished the task the first worker started\nFILES CHANGED: first.txt, second.txt"}
            ],
            "readsecret": [
                {"tool_calls": [
                    {"name": "read", "arguments": {"filePath": "{{workdir}}/.env"}},
                    {"name": "read", "arguments": {"filePath": "{{workdir}}/config/.env.example"}}
                ]},
                {"text": "SUMMARY: read what I could"}
            ],
            // The failure matrix (suite::failfast): one scenario per shape.
            "ff429after": [{"error": 429, "error_message": "Rate limit reached for requests", "headers": {"retry-after": "1"}}],
            "ff429": [{"error": 429, "error_message": "Rate limit reached for requests"}],
            "ffquota": [{"error": 429, "error_body": {"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}}],
            "ff404": [{"error": 404}],
            "ff500": [{"error": 500}],
            "ff503": [{"error": 503}],
            "err404": [{"error": 404}],
            "err429": [{"error": 429, "headers": {"retry-after": "0"}}],
            "err429slow": [{"error": 429}],
            "nofinish": [{"text": "partial", "finish_reason": null}],
            "hang": [{"hang": true}],
            "bgkill": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "nohup sleep 313.7 >/dev/null 2>&1 &\necho started", "description": "start a background job"}}]},
                {"hang": true}
            ]
        }
    })
}

impl World {
    pub fn new() -> World {
        let opencode = real_cli::opencode().expect("the pinned OpenCode CLI installs from npm");
        let server = FakeOpenAi::start(script()).expect("fake server starts");
        let mut env = TestEnv::new(Path::new(PITROOM));
        env.set("PITROOM_OPENCODE_BIN", opencode.display().to_string());
        let config = json!({
            "model": "fake/fake-model",
            "provider": {"fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": server.base_url(), "apiKey": "sk-fake", "timeout": 30000},
                "models": {
                    "fake-model": {"name": "Fake Model", "tool_call": true,
                        "cost": {"input": 1, "output": 2, "cache_read": 0.5, "cache_write": 1.25},
                        "limit": {"context": 100000, "output": 4096}},
                    "limited-model": {"name": "Limited", "tool_call": true,
                        "limit": {"context": 100000, "output": 4096}},
                    "good-model": {"name": "Good", "tool_call": true,
                        "limit": {"context": 100000, "output": 4096}}
                }
            }}
        });
        let dir = env.root.join("xdg-config/opencode");
        std::fs::create_dir_all(&dir).expect("config dir");
        std::fs::write(dir.join("opencode.json"), config.to_string()).expect("config");
        let repo = dirty_repo(&env, "repo");
        World { env, server, repo }
    }

    pub fn run(&self, args: &[&str]) -> std::process::Output {
        self.env.run(&self.repo, args)
    }
}

#[test]
fn read_question_is_answered_with_citations_in_project_paths() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    let out = w.run(&["Where can divide fail?", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("pitroom ✔ done · read"), "{stdout}");
    assert!(stdout.contains("calc.py:7"), "{stdout}");
    let r = record(&w.env, &w.repo);
    // The real CLI reads the live project in place, read-only under Landlock.
    assert_eq!(r["view"], "in_place", "{r:#}");
    let answer = r["answer"].as_str().expect("answer");
    let project = w
        .repo
        .canonicalize()
        .expect("canonical")
        .display()
        .to_string();
    assert!(
        answer.contains(&format!("{project}/calc.py:5-7")),
        "copy path rewritten: {answer}"
    );
    assert!(!answer.contains("snapshots"), "{answer}");
    assert_eq!(r["refs"]["total"], 2, "{r:#}");
    assert_eq!(r["refs"]["verified"], 2, "{r:#}");
    assert!(stdout.contains("── refs: 2/2 verified"), "{stdout}");
    // Usage as OpenCode reported it: 800+43+7+200 then 500+30+1000.
    assert_eq!(r["tally"]["usage"]["input"], 1300);
    assert_eq!(r["tally"]["usage"]["cache_read"], 1200);
    assert_eq!(r["tally"]["steps"], 2);
    assert_eq!(r["tally"]["tool_calls"], 1);
    assert!(r["session"].as_str().is_some_and(|s| s.starts_with("ses_")));
    assert!(r["receipt"]["cost"].as_f64().is_some_and(|c| c > 0.0));
    assert_eq!(fingerprint(&w.repo), before, "the user's tree is untouched");
    // No model was pinned: OpenCode's stream never names it, so the record reads it back
    // from OpenCode's own session data — the one its requests asked the server for.
    let body = &w.server.chat_requests()[0]["body"];
    assert_eq!(body["model"], "fake-model", "{body}");
    assert_eq!(r["reported_model"], "fake/fake-model", "{r:#}");
    // The worker ran with the mode's permission profile.
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"read") && !tools.contains(&"edit") && !tools.contains(&"write"),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"webfetch") && !tools.contains(&"task"),
        "{tools:?}"
    );
}

#[test]
fn write_run_in_a_dirty_tree_records_only_the_workers_edits_and_reverts_byte_exact() {
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
            .join(r["id"].as_str().unwrap())
            .join("changes.patch"),
    )
    .expect("patch");
    assert!(patch.contains("+worker line"), "{patch}");
    assert!(
        !patch.contains("+user edit in progress"),
        "the user's own edit is not the worker's: {patch}"
    );
    assert!(
        !patch.contains("todo list"),
        "untracked user files stay out: {patch}"
    );
    assert_ne!(fingerprint(&w.repo), before);

    let out = w.run(&["revert"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        fingerprint(&w.repo),
        before,
        "every file byte-identical after revert"
    );
    assert_eq!(
        std::fs::read(w.repo.join(".git/index")).expect("index"),
        index_before,
        "the index is untouched"
    );
    let out = w.run(&["revert"]);
    assert_eq!(code(&out), 3, "a second revert is refused: {}", text(&out));
}

#[test]
fn edit_attempted_in_read_mode_is_denied_and_the_tree_is_unchanged() {
    let w = World::new();
    let before = fingerprint(&w.repo);
    let out = w.run(&["try to fix divide scenario:edit", "-t", "90s"]);
    let r = record(&w.env, &w.repo);
    assert!(
        r["tally"]["denied_calls"].as_u64().unwrap_or(0) >= 1,
        "{r:#}\n{}",
        text(&out)
    );
    assert_eq!(r["read_only_violation"], false);
    assert!(r["changes"].as_array().is_some_and(|c| c.is_empty()));
    assert_eq!(fingerprint(&w.repo), before);
}

#[test]
fn write_through_an_allowed_shell_command_in_read_mode_is_a_violation() {
    let mut w = World::new();
    // The snapshot check on its own, as without Landlock (suite/landlock.rs covers the refusal).
    w.env.set("PITROOM_LANDLOCK", "off");
    let before = fingerprint(&w.repo);
    let out = w.run(&["look around scenario:bashwrite", "-t", "90s"]);
    assert_eq!(code(&out), 5, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("READ-ONLY VIOLATION"), "{stdout}");
    assert!(stdout.contains("sneaky.txt"), "{stdout}");
    assert_eq!(
        fingerprint(&w.repo),
        before,
        "the user's tree never saw the write"
    );
    // The spoiled copy is gone, so the next read run gets a clean one.
    let r = record(&w.env, &w.repo);
    assert!(!Path::new(r["copy"].as_str().expect("copy")).exists());
}

#[test]
fn unknown_model_is_classified_as_model_unavailable() {
    let w = World::new();
    let out = w.run(&["anything scenario:err404", "-t", "90s"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let r = record(&w.env, &w.repo);
    assert_eq!(r["state"], "failed");
    assert_eq!(r["failure"], "model_unavailable", "{r:#}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("hint: model unavailable"));
}

#[test]
fn rate_limit_is_classified_as_rate_limited() {
    let w = World::new();
    let out = w.run(&["anything scenario:err429", "-t", "90s"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let r = record(&w.env, &w.repo);
    assert_eq!(r["failure"], "rate_limited", "{r:#}");
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.to_lowercase().contains("rate limit")),
        "{r:#}"
    );
}

#[test]
fn reply_without_finish_reason_is_stopped_by_the_watchdog() {
    let mut w = World::new();
    w.env.set("PITROOM_WATCHDOG", "3s");
    let out = w.run(&["loop scenario:nofinish", "-t", "600s"]);
    assert_eq!(
        code(&out),
        1,
        "the watchdog, not the timeout, ended it: {}",
        text(&out)
    );
    let r = record(&w.env, &w.repo);
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.contains("no progress")),
        "{r:#}"
    );
}

#[test]
fn timeout_stops_the_worker_and_exits_4() {
    let w = World::new();
    let out = w.run(&["wait forever scenario:hang", "-t", "6s"]);
    assert_eq!(code(&out), 4, "{}", text(&out));
    let r = record(&w.env, &w.repo);
    assert_eq!(r["state"], "timeout");
    assert!(String::from_utf8_lossy(&out.stdout).contains("--continue"));
}

#[test]
fn follow_up_resumes_the_same_opencode_session() {
    let w = World::new();
    let out = w.run(&["Where can divide fail?", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let first = record(&w.env, &w.repo);
    let out = w.run(&["run", "--continue", "last", "And add?", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let second = record(&w.env, &w.repo);
    assert_ne!(first["id"], second["id"]);
    assert_eq!(first["session"], second["session"]);
    assert_eq!(
        (&first["view"], &second["view"]),
        (&"in_place".into(), &"in_place".into()),
        "a follow-up of a run in place reads the live tree too"
    );
    // The model saw the whole conversation again.
    let last = w.server.chat_requests().last().cloned().expect("requests");
    let roles: Vec<&str> = last["body"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert!(
        roles.iter().filter(|r| **r == "user").count() >= 2,
        "{roles:?}"
    );
}

/// Issue 16, item 11: each provider failure shape ends OpenCode's run classified, within the
/// retry cap Pitroom sets, so the fallback chain gets its turn (matrix in docs/workers/README.md).
#[test]
fn opencode_every_failure_shape_fails_classified_within_the_retry_cap() {
    let w = World::new();
    let shapes: &[failfast::Shape] = &[
        ("429 with retry-after", "ff429after", "rate_limited", 3),
        ("429 without retry-after", "ff429", "rate_limited", 3),
        ("insufficient_quota 429", "ffquota", "rate_limited", 3),
        ("404 unknown model", "ff404", "model_unavailable", 3),
        ("500", "ff500", "other", 3),
        ("503", "ff503", "rate_limited", 3),
    ];
    failfast::walk(
        "opencode",
        shapes,
        |args| w.run(args),
        || w.server.chat_requests().len(),
        || record(&w.env, &w.repo),
    );
}

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_opencode_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned OpenCode changes"]
fn record_opencode_fixtures() {
    let cases: &[(&str, &[&str])] = &[
        ("read", &["Where can divide fail?"]),
        ("write-edit", &["-w", "fix divide scenario:edit"]),
        ("read-edit-denied", &["try to fix divide scenario:edit"]),
        ("bash-git-denied", &["-w", "commit scenario:gitdeny"]),
        ("bash-write", &["look scenario:bashwrite"]),
        ("err404", &["x scenario:err404"]),
        ("err429", &["x scenario:err429"]),
        ("err500", &["x scenario:err500"]),
        ("malformed-sse", &["x scenario:malformed"]),
        ("unknown-model", &["-m", "fake/nonexistent", "x"]),
        ("no-finish-reason", &["x scenario:nofinish"]),
    ];
    let mut w = World::new();
    w.env.set("PITROOM_WATCHDOG", "2s");
    Recorder {
        cli: "opencode",
        env: &w.env,
        repo: &w.repo,
        timeout: Some("60s"),
        port: None,
        keep_stderr: |l| l.contains("ERROR") || l.starts_with("Error") || l.contains("permission"),
        exit_codes: false,
    }
    .record(cases, |args| w.run(args));
}

#[test]
fn isolated_edit_by_real_opencode_stays_in_its_copy_until_applied() {
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
    // OpenCode really worked in the copy: its session's events name the copy's files.
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
    let expected = fingerprint(&copy);
    let out = w.run(&["apply"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(fingerprint(&w.repo), expected);
    let readme = std::fs::read_to_string(w.repo.join("README.md")).expect("readme");
    assert!(
        readme.contains("user edit in progress\nworker line"),
        "{readme}"
    );
}

#[test]
fn git_guard_holds_under_real_opencode_in_write_mode() {
    let mut w = World::new();
    // Layers 1-2 on their own: with Landlock, `.git` is read-only before git's hook is reached.
    w.env.set("PITROOM_LANDLOCK", "off");
    let refs_before = w.env.git(
        &w.repo,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    );
    let head_before = std::fs::read_to_string(w.repo.join(".git/HEAD")).expect("HEAD");
    let out = w.run(&["-w", "rewrite history scenario:attack", "-t", "90s"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        w.env.git(
            &w.repo,
            &["for-each-ref", "--format=%(refname) %(objectname)"]
        ),
        refs_before
    );
    assert_eq!(
        std::fs::read_to_string(w.repo.join(".git/HEAD")).expect("HEAD"),
        head_before
    );
    let events = w.run(&["show", "--events"]);
    let events = String::from_utf8_lossy(&events.stdout);
    assert!(
        events.contains("blocked inside a Pitroom worker"),
        "the shim answered: {events}"
    );
    assert!(
        events.contains("ref update refused"),
        "the hook answered: {events}"
    );
}

#[test]
fn models_lists_the_users_own_providers_through_the_real_cli() {
    let w = World::new();
    let out = w.run(&["models", "opencode", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let ids: Vec<&str> = v["models"]
        .as_array()
        .expect("models")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(ids.contains(&"fake/fake-model"), "{ids:?}");
    assert_eq!(v["worker"], "opencode");
}

#[test]
fn a_rate_limit_fails_in_seconds_not_after_the_clis_minute_of_retries() {
    let w = World::new();
    // Without retry-after, OpenCode backs off 2.5 s, 4.6 s, 9.9 s, 16.4 s, 39 s (~75 s in all);
    // Pitroom's cut lets it make three model calls (counted, not timed: a loaded machine is slow).
    let out = w.run(&["anything scenario:err429slow", "-t", "600s"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let calls = w.server.chat_requests().len();
    assert!((1..=3).contains(&calls), "{calls} model calls");
    let r = record(&w.env, &w.repo);
    assert_eq!(r["failure"], "rate_limited", "{r:#}");
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.contains("kept retrying")),
        "{r:#}"
    );
}

#[test]
fn a_rate_limit_after_a_tool_call_hands_the_task_to_the_next_target_which_finishes_it() {
    let mut w = World::new();
    w.env.set("PITROOM_FALLBACK", "opencode:fake/good-model");
    let out = w.run(&[
        "-w",
        "-W",
        "opencode:fake/limited-model",
        "Add the two files",
        "-t",
        "600s",
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    let attempts = r["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{r:#}");
    assert_eq!(attempts[0]["target"], "opencode:fake/limited-model");
    assert_eq!(attempts[0]["failure"], "rate_limited", "{r:#}");
    assert!(
        attempts[0]["tool_calls"].as_u64().is_some_and(|n| n >= 1),
        "{r:#}"
    );
    assert_eq!(attempts[1]["state"], "done");
    assert_eq!(attempts[1]["handed_off"], true);
    // The final patch holds both workers' files.
    let files: Vec<&str> = r["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect();
    assert!(
        files.contains(&"first.txt") && files.contains(&"second.txt"),
        "{files:?}"
    );
    // The second model was told what the first one did.
    let handoff = w
        .server
        .chat_requests()
        .into_iter()
        .filter(|q| q["body"]["model"] == "good-model")
        .find_map(|q| {
            let text = q["body"]["messages"].to_string();
            text.contains("HAND-OFF").then_some(text)
        })
        .expect("a request to the second model carries the hand-off");
    assert!(handoff.contains("first.txt"), "{handoff}");
    let out = w.run(&["revert"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(!w.repo.join("first.txt").exists() && !w.repo.join("second.txt").exists());
}

#[test]
fn opencode_cannot_read_secret_files_even_in_a_write_run_but_templates_stay_readable() {
    let w = World::new();
    std::fs::write(w.repo.join(".env"), "API_TOKEN=tok-3f9c2a71d0e8b6\n").unwrap();
    std::fs::create_dir_all(w.repo.join("config")).unwrap();
    std::fs::write(
        w.repo.join("config/.env.example"),
        "API_TOKEN=put-yours-here\n",
    )
    .unwrap();
    let out = w.run(&[
        "-w",
        "Show the settings scenario:readsecret",
        "-t",
        "90s",
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["tally"]["tool_calls"], 2, "{r:#}");
    assert_eq!(
        r["tally"]["denied_calls"].as_u64().unwrap_or(0)
            + r["tally"]["failed_calls"].as_u64().unwrap_or(0),
        1,
        "{r:#}"
    );
    // The secret never reached the model; the template did.
    let sent: String = w
        .server
        .chat_requests()
        .iter()
        .map(|q| q["body"].to_string())
        .collect();
    assert!(
        !sent.contains("tok-3f9c2a71d0e8b6"),
        "the secret reached the model"
    );
    assert!(sent.contains("put-yours-here"), "the template was readable");
}
