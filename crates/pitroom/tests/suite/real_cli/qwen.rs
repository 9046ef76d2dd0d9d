//! Qwen Code (`@qwen-code/qwen-code`, run under Node 22), configured through the caller's
//! environment (`OPENAI_*`) as a user with an OpenAI-compatible provider would, on the fake
//! chat-completions server. Its checks hold the settings Pitroom gives it in read mode.

use pitroom_testkit::real_cli;
use serde_json::{json, Value};

use super::script::{edit_steps, git_commit_steps, secret_steps, READ_ANSWER, ZERO_CHECK};
use super::{
    with_openai_shapes, Api, Checks, Fixtures, GitCommit, ModelError, Provider, ReadFacts, RealCli,
    SecretRead, Setting, Timing, Unproven, Usage, World, EDIT_IN_READ_MODE, OPENAI_SHAPES,
};

pub const CLI: RealCli = RealCli {
    worker: "qwen",
    pinned: real_cli::QWEN,
    install: real_cli::qwen,
    api: Api::ChatCompletions,
    script,
    provider: Provider {
        config: None,
        env: &[
            ("OPENAI_BASE_URL", Setting::BaseUrl),
            ("OPENAI_API_KEY", Setting::Is("sk-fake")),
            ("OPENAI_MODEL", Setting::Is("fake-model")),
        ],
        node22: true,
        offline: true,
    },
    timing: Timing::HANG_AFTER_15S,
    retry_cap: 4,
    read: ReadFacts {
        view: "in_place",
        // Usage as Qwen reported it per call: (1000-200)+(1500-1000) input, 200+1000 cached.
        usage: Usage {
            output: Some(80),
            ..Usage::TWO_CALLS_CACHED
        },
        priced: false,
        session: |s| s.len() >= 32,
        asked_model: Some("fake-model"),
        reported_model: None,
        // Read mode as Qwen saw it: no edit, web or subagent tool offered.
        offered: &["read_file"],
        withheld: &["write_file", "edit", "web_fetch", "agent"],
    },
    read_mode_writes: &[EDIT_IN_READ_MODE],
    refusal_on_stderr: &[],
    git_commit: Some(GitCommit::REFUSED_BY_PROFILE),
    // Only `.env`: Qwen's `Read` rules also refuse `config/.env.example` (seen: both reads
    // denied), though Pitroom's own rule leaves templates readable.
    secret_read: Some(SecretRead::env(true)),
    rate_limits: &[ModelError::rate_limited("err429")],
    other_errors: &[ModelError::UNKNOWN_MODEL, ModelError::BAD_KEY],
    failure_shapes: OPENAI_SHAPES,
    listed_model: None,
    effort_at: None,
    checks: Checks {
        read: one_model_call_per_step,
        write: |_, _| {},
    },
    unproven: &[
        Unproven {
            behaviour: "models_are_listed_through_the_real_cli",
            why: "Qwen Code has no command that lists models: Pitroom prints the user's configured ones (`OPENAI_MODEL`, settings) without running it (the adapter's `models_invocation`)",
        },
        Unproven {
            behaviour: "effort_reaches_the_model_request",
            why: "Qwen Code has no effort setting: `--effort` is dropped with a note (docs/workers/qwen.md)",
        },
    ],
    fixtures: Fixtures {
        // Without Pitroom's cut, Qwen retries a 500 silently for ~76 s (see docs/workers/qwen.md).
        cases: &[
            ("read", &["Where can divide fail?", "-t", "60s"]),
            (
                "write-edit",
                &["-w", "fix divide scenario:edit", "-t", "60s"],
            ),
            ("read-edit-denied", &[EDIT_IN_READ_MODE, "-t", "60s"]),
            ("err429", &["x scenario:err429", "-t", "60s"]),
            ("err404", &["x scenario:err404", "-t", "60s"]),
            ("err401", &["x scenario:err401", "-t", "60s"]),
            ("err500", &["x scenario:err500", "-t", "150s"]),
            ("malformed-sse", &["x scenario:torn", "-t", "60s"]),
        ],
        first: false,
        timeout: None,
        port: false,
        keep_stderr: |_| true,
        exit_codes: false,
        prepare: |_| {},
    },
};

real_cli_tests!(CLI; every_cli,
    an_interrupted_run_can_be_continued_in_its_session,
    secret_files_stay_unreadable_in_a_write_run,
);

/// One model call per step of the read run (no auto-memory side agent), and no failed call.
fn one_model_call_per_step(w: &World, r: &Value, _: &std::process::Output) {
    let requests = w.server.model_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(r["tally"]["failed_calls"], 0, "{r:#}");
}

fn script() -> Value {
    // Qwen refuses to edit a file it has not read in the session.
    let mut edit = vec![json!({"tool_calls": [
        {"name": "read_file", "arguments": {"file_path": "{{workdir}}/calc.py"}},
        {"name": "read_file", "arguments": {"file_path": "{{workdir}}/README.md"}}
    ]})];
    edit.extend(edit_steps(
        json!({"name": "edit", "arguments": {"file_path": "{{workdir}}/calc.py", "old_string": "    return a / b", "new_string": ZERO_CHECK}}),
        json!({"name": "write_file", "arguments": {"file_path": "{{workdir}}/new file é.txt", "content": "created by the worker\n"}}),
        json!({"name": "edit", "arguments": {"file_path": "{{workdir}}/README.md", "old_string": "user edit in progress", "new_string": "user edit in progress\nworker line"}}),
    ));
    with_openai_shapes(json!({
        "aux": {"text": "Fake aux"},
        "scenarios": {
            "default": [
                {"text": "Let me look.",
                 "tool_calls": [{"name": "read_file", "arguments": {"file_path": "{{workdir}}/calc.py"}}],
                 "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 200}},
                {"text": READ_ANSWER,
                 "usage": {"prompt_tokens": 1500, "completion_tokens": 30, "cached_tokens": 1000}}
            ],
            "edit": edit,
            "err429": [{"error": 429, "error_message": "Rate limit reached for requests. Please try again in 1s.",
                        "headers": {"retry-after": "1"}}],
            "err404": [{"error": 404}],
            "err401": [{"error": 401, "error_message": "Incorrect API key provided: sk-fake. You can find your API key at https://platform.openai.com/account/api-keys."}],
            "err500": [{"error": 500}],
            "gitcommit": git_commit_steps(json!({"name": "run_shell_command", "arguments": {"command": "git commit -am sneaky", "description": "commit", "is_background": false}})),
            "secret": secret_steps(json!({"name": "read_file", "arguments": {"file_path": "{{workdir}}/.env"}})),
            "hang": [{"hang": true}],
            "torn": [{"raw_stream": ["data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n", "data: {not json\n\n"]}]
        }
    }))
}

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_qwen_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned Qwen Code changes"]
fn record_qwen_fixtures() {
    super::record_fixtures(&CLI);
}
