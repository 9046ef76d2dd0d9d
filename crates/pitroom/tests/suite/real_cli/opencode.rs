//! OpenCode (`opencode-ai`), configured through the user's own global OpenCode config file, on
//! the fake chat-completions server; and the tests that are OpenCode's own: a shell write in
//! read mode without Landlock, the watchdog, the git guard under its bash tool, and the
//! fallback chain mid-run.

use std::path::Path;

use pitroom_testkit::real_cli;
use pitroom_testkit::repo::fingerprint;
use serde_json::{json, Value};

use super::super::common::assert_str_has;
use super::super::common::{assert_exit, assert_stdout_has, code, text};
use super::script::{edit_steps, git_commit_steps, READ_ANSWER, ZERO_CHECK};
use super::{
    with_openai_shapes, Api, Checks, ConfigFile, Fixtures, GitCommit, ListedModel, ModelError,
    Provider, ReadFacts, RealCli, SecretRead, Stall, Timing, Unproven, Usage, World,
    EDIT_IN_READ_MODE, OPENAI_SHAPES,
};

pub const CLI: RealCli = RealCli {
    worker: "opencode",
    pinned: real_cli::OPENCODE,
    install: real_cli::opencode,
    api: Api::ChatCompletions,
    script,
    provider: Provider {
        config: Some(ConfigFile {
            path: "xdg-config/opencode/opencode.json",
            contents: provider_config,
        }),
        env: &[],
        node22: false,
        offline: false,
    },
    timing: Timing {
        timeout: "90s",
        stall_limit: "20s",
        // A session exists only once the model has answered: the second request never is.
        resumable_stall: Stall {
            scenario: "readhang",
            waits_at: 1,
        },
    },
    retry_cap: 3,
    read: ReadFacts {
        view: "in_place",
        // Usage as OpenCode reported it: 800+43+7+200 then 500+30+1000.
        usage: Usage::TWO_CALLS_CACHED,
        priced: true,
        session: |s| s.starts_with("ses_"),
        // No model was pinned: OpenCode's stream never names it, so the record reads it back
        // from OpenCode's own session data — the one its requests asked the server for.
        asked_model: Some("fake-model"),
        reported_model: Some("fake/fake-model"),
        offered: &["read"],
        withheld: &["edit", "write", "webfetch", "task"],
    },
    read_mode_writes: &[EDIT_IN_READ_MODE],
    refusal_on_stderr: &[],
    git_commit: Some(GitCommit {
        task: "commit scenario:gitdeny",
        denied_by_profile: false,
    }),
    secret_read: Some(SecretRead {
        task: "Show the settings scenario:readsecret",
        template: true,
        denied: false,
    }),
    rate_limits: &[
        ModelError::rate_limited("err429")
            .saying("rate limit")
            .uncapped(),
        // Without retry-after, OpenCode backs off 2.5 s, 4.6 s, 9.9 s, 16.4 s, 39 s (~75 s in
        // all); Pitroom's cut lets it make three model calls (counted, not timed).
        ModelError::rate_limited("err429slow").saying("kept retrying"),
    ],
    other_errors: &[ModelError::UNKNOWN_MODEL],
    failure_shapes: OPENAI_SHAPES,
    listed_model: Some(ListedModel {
        id: "fake/fake-model",
        effort: None,
    }),
    effort_at: None,
    checks: Checks {
        // One step per model call: the read and the answer.
        read: |_, r, _| assert_eq!(r["tally"]["steps"], 2, "{r:#}"),
        write: |_, _| {},
    },
    unproven: &[
        Unproven {
            behaviour: "effort_reaches_the_model_request",
            why: "OpenCode has no effort setting of its own: `--effort` becomes `--variant` only with a pinned model, and the fake provider's models have no variants (docs/workers/opencode.md)",
        },
    ],
    fixtures: Fixtures {
        cases: &[
            ("bash-git-denied", &["-w", "commit scenario:gitdeny"]),
            ("bash-write", &["look scenario:bashwrite"]),
            ("err404", &["x scenario:err404"]),
            ("err429", &["x scenario:err429"]),
            ("err500", &["x scenario:err500"]),
            ("malformed-sse", &["x scenario:malformed"]),
            ("unknown-model", &["-m", "fake/nonexistent", "x"]),
            ("no-finish-reason", &["x scenario:nofinish"]),
        ],
        first: true,
        timeout: Some("60s"),
        port: false,
        keep_stderr: |l| {
            l.contains("ERROR") || l.starts_with("Error") || l.contains("permission")
        },
        exit_codes: false,
        prepare: |w| w.env.set("PITROOM_WATCHDOG", "2s"),
    },
};

real_cli_tests!(CLI; every_cli,
    an_interrupted_run_can_be_continued_in_its_session,
    secret_files_stay_unreadable_in_a_write_run,
    models_are_listed_through_the_real_cli,
);

/// The user's global OpenCode config: a provider on the fake server with three models (the
/// fallback test hands a task from `limited-model` to `good-model`) and a 30 s request timeout.
fn provider_config(base_url: &str) -> String {
    provider_config_with(base_url, Some(30_000))
}

/// The same provider, with `timeout_ms` as its request timeout (none: the CLI's default).
pub fn provider_config_with(base_url: &str, timeout_ms: Option<u64>) -> String {
    let mut config = json!({
        "model": "fake/fake-model",
        "provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": base_url, "apiKey": "sk-fake"},
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
    if let Some(ms) = timeout_ms {
        config["provider"]["fake"]["options"]["timeout"] = ms.into();
    }
    config.to_string()
}

/// The fake server's script, in OpenCode's tools (Kilo speaks them too).
pub fn script() -> Value {
    with_openai_shapes(json!({
        "aux": {"text": "Fake title"},
        "by_model": {"limited-model": "limited", "good-model": "finish"},
        "scenarios": {
            "default": [
                {"tool_calls": [{"name": "read", "arguments": {"filePath": "{{workdir}}/calc.py"}}],
                 "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 200, "reasoning_tokens": 7}},
                {"text": READ_ANSWER,
                 "usage": {"prompt_tokens": 1500, "completion_tokens": 30, "cached_tokens": 1000}}
            ],
            "edit": edit_steps(
                json!({"name": "edit", "arguments": {"filePath": "{{workdir}}/calc.py", "oldString": "    return a / b", "newString": ZERO_CHECK}}),
                json!({"name": "write", "arguments": {"filePath": "{{workdir}}/new file é.txt", "content": "created by the worker\n"}}),
                json!({"name": "edit", "arguments": {"filePath": "{{workdir}}/README.md", "oldString": "user edit in progress", "newString": "user edit in progress\nworker line"}}),
            ),
            "bashwrite": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo sneaky > sneaky.txt", "description": "write a file"}}]},
                {"text": "SUMMARY: wrote a file through the shell"}
            ],
            "gitdeny": git_commit_steps(json!({"name": "bash", "arguments": {"command": "git commit -am sneaky", "description": "commit"}})),
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
            "err404": [{"error": 404}],
            "err429": [{"error": 429, "headers": {"retry-after": "0"}}],
            "err429slow": [{"error": 429}],
            "nofinish": [{"text": "partial", "finish_reason": null}],
            "hang": [{"hang": true}],
            // A run that times out once its session has started: OpenCode's stream names the
            // session in its first event, which comes with the model's first reply.
            "readhang": [
                {"tool_calls": [{"name": "read", "arguments": {"filePath": "{{workdir}}/calc.py"}}]},
                {"hang": true}
            ],
            "bgkill": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "nohup sleep 313.7 >/dev/null 2>&1 &\necho started", "description": "start a background job"}}]},
                {"hang": true}
            ]
        }
    }))
}

#[test]
fn a_write_through_an_allowed_shell_command_in_read_mode_is_a_violation() {
    let mut w = World::new(&CLI);
    // The snapshot check on its own, as without Landlock (suite/landlock.rs covers the refusal).
    w.env.set("PITROOM_LANDLOCK", "off");
    let before = fingerprint(&w.repo);
    let out = w.task(&["look around scenario:bashwrite", "-t", "90s"]);
    assert_exit(&out, 5);
    assert_stdout_has(&out, "READ-ONLY VIOLATION");
    assert_stdout_has(&out, "sneaky.txt");
    assert_eq!(
        fingerprint(&w.repo),
        before,
        "the user's tree never saw the write"
    );
    // The spoiled copy is gone, so the next read run gets a clean one.
    let r = w.record();
    assert!(!Path::new(r["copy"].as_str().expect("copy")).exists());
}

#[test]
fn a_reply_without_finish_reason_is_stopped_by_the_watchdog() {
    let mut w = World::new(&CLI);
    w.env.set("PITROOM_WATCHDOG", "3s");
    let out = w.task(&["loop scenario:nofinish", "-t", "600s"]);
    assert_eq!(
        code(&out),
        1,
        "the watchdog, not the timeout, ended it: {}",
        text(&out)
    );
    let r = w.record();
    assert_str_has(&r, "/error", "no progress");
}

#[test]
fn the_git_guard_holds_under_opencodes_bash_tool_in_write_mode() {
    let mut w = World::new(&CLI);
    // Layers 1-2 on their own: with Landlock, `.git` is read-only before git's hook is reached.
    w.env.set("PITROOM_LANDLOCK", "off");
    let refs = |w: &World| {
        w.env.git(
            &w.repo,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        )
    };
    let refs_before = refs(&w);
    let head_before = std::fs::read_to_string(w.repo.join(".git/HEAD")).expect("HEAD");
    let out = w.task(&["-w", "rewrite history scenario:attack", "-t", "90s"]);
    assert_exit(&out, 0);
    assert_eq!(refs(&w), refs_before);
    assert_eq!(
        std::fs::read_to_string(w.repo.join(".git/HEAD")).expect("HEAD"),
        head_before
    );
    let events = w.run(&["show", "--events"]);
    // The shim answered, and the hook did.
    assert_stdout_has(&events, "blocked inside a Pitroom worker");
    assert_stdout_has(&events, "ref update refused");
}

#[test]
fn a_rate_limit_after_a_tool_call_hands_the_task_to_the_next_target_which_finishes_it() {
    let mut w = World::new(&CLI);
    w.env.set("PITROOM_FALLBACK", "opencode:fake/good-model");
    let r = w.run_json(&[
        "run",
        "-w",
        "-W",
        "opencode:fake/limited-model",
        "Add the two files",
        "-t",
        "600s",
        "--json",
    ]);
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
    let files = super::changed(&r);
    assert!(
        files.contains(&"first.txt") && files.contains(&"second.txt"),
        "{files:?}"
    );
    // The second model was told what the first one did.
    let handoff = w
        .server
        .model_requests()
        .into_iter()
        .filter(|q| q["body"]["model"] == "good-model")
        .find_map(|q| {
            let text = q["body"]["messages"].to_string();
            text.contains("HAND-OFF").then_some(text)
        })
        .expect("a request to the second model carries the hand-off");
    assert!(handoff.contains("first.txt"), "{handoff}");
    let out = w.run(&["revert"]);
    assert_exit(&out, 0);
    assert!(!w.repo.join("first.txt").exists() && !w.repo.join("second.txt").exists());
}

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_opencode_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned OpenCode changes"]
fn record_opencode_fixtures() {
    super::record_fixtures(&CLI);
}
