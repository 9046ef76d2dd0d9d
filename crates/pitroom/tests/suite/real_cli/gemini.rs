//! Gemini CLI (`@google/gemini-cli`), reaching the fake Gemini API through the user's own
//! environment (`GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY`, `GEMINI_MODEL`). Its checks hold
//! the policy Pitroom gives it in read mode.

use pitroom_testkit::real_cli;
use serde_json::{json, Value};

use super::script::{edit_steps, git_commit_steps, secret_steps, READ_ANSWER, ZERO_CHECK};
use super::{
    Api, Checks, FailureMatrix, Fixtures, GitCommit, ModelError, Provider, ReadFacts, RealCli,
    SecretRead, Setting, Timing, Unproven, Usage, World, EDIT_IN_READ_MODE,
};

pub const CLI: RealCli = RealCli {
    worker: "gemini",
    pinned: real_cli::GEMINI,
    install: real_cli::gemini,
    api: Api::Gemini,
    script,
    provider: Provider {
        config: None,
        env: &[
            ("GOOGLE_GEMINI_BASE_URL", Setting::BaseUrl),
            ("GEMINI_API_KEY", Setting::Is("fake-gemini-key")),
            // The user's default model, from their environment (skips the router side call).
            ("GEMINI_MODEL", Setting::Is("gemini-2.5-pro")),
        ],
        node22: false,
        offline: true,
    },
    timing: Timing::HANG_AFTER_15S,
    retry_cap: 2,
    read: ReadFacts {
        view: "in_place",
        // Gemini's stats: input excludes cached tokens; (1000-200)+(1500-1000), 200+1000 cached.
        usage: Usage::TWO_CALLS_CACHED,
        priced: false,
        session: |s| !s.is_empty(),
        asked_model: Some("gemini-2.5-pro"),
        reported_model: None,
        // The shell is offered (allowed by the policy) in read mode.
        offered: &["read_file", "run_shell_command"],
        withheld: &[
            "write_file",
            "replace",
            "google_web_search",
            "web_fetch",
            "invoke_agent",
        ],
    },
    read_mode_writes: &[EDIT_IN_READ_MODE],
    refusal_on_stderr: &[],
    git_commit: Some(GitCommit::REFUSED_BY_PROFILE),
    // Only `.env`: the policy also refuses `config/.env.example` (seen: `read_file
    // config/.env.example (denied)`), though Pitroom's own rule leaves templates readable. The
    // `.env` read itself ends as a failed call (seen: `read_file .env (failed)`), not a denied one.
    secret_read: Some(SecretRead::env(false)),
    rate_limits: &[ModelError::rate_limited("err429")],
    other_errors: &[ModelError::UNKNOWN_MODEL, ModelError::is("err400", "auth")],
    failure_shapes: FailureMatrix::with_quota((
        "RESOURCE_EXHAUSTED quota 429",
        "daily",
        "rate_limited",
    )),
    listed_model: None,
    effort_at: None,
    checks: Checks {
        read: one_model_call_per_step,
        write: |_, _| {},
    },
    unproven: &[
        Unproven {
            behaviour: "models_are_listed_through_the_real_cli",
            why: "Gemini CLI has no command that lists models: Pitroom prints the user's configured model and `auto` without running it (the adapter's `models_invocation`)",
        },
        Unproven {
            behaviour: "effort_reaches_the_model_request",
            why: "Gemini CLI has no effort flag: `--effort` is dropped with a note (docs/workers/gemini.md)",
        },
    ],
    fixtures: Fixtures {
        cases: &[
            ("err429", &["x scenario:err429"]),
            ("quota-daily", &["x scenario:daily"]),
            ("err404", &["x scenario:err404"]),
            ("err400-key", &["x scenario:err400"]),
            ("err403", &["x scenario:err403"]),
            ("err500", &["x scenario:err500"]),
            ("malformed-sse", &["x scenario:torn"]),
        ],
        first: true,
        timeout: Some("90s"),
        port: false,
        keep_stderr: |l| !l.trim_start().starts_with("at "),
        exit_codes: true,
        prepare: |_| {},
    },
};

real_cli_tests!(CLI; every_cli,
    an_interrupted_run_can_be_continued_in_its_session,
    secret_files_stay_unreadable_in_a_write_run,
);

/// Gemini CLI made exactly one model call per step of the read run (no router side call).
fn one_model_call_per_step(w: &World, _: &Value, _: &std::process::Output) {
    let requests = w.server.model_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
}

fn script() -> Value {
    json!({
        "aux": {"text": "Fake aux"},
        "scenarios": {
            "default": [
                {"text": "Let me look.",
                 "tool_calls": [{"name": "read_file", "arguments": {"file_path": "{{workdir}}/calc.py"}}],
                 "usage": {"prompt": 1000, "candidates": 50, "cached": 200}},
                {"text": READ_ANSWER,
                 "usage": {"prompt": 1500, "candidates": 30, "cached": 1000}}
            ],
            "edit": edit_steps(
                json!({"name": "replace", "arguments": {"file_path": "{{workdir}}/calc.py", "old_string": "    return a / b", "new_string": ZERO_CHECK, "instruction": "add a zero check"}}),
                json!({"name": "write_file", "arguments": {"file_path": "{{workdir}}/new file é.txt", "content": "created by the worker\n"}}),
                json!({"name": "replace", "arguments": {"file_path": "{{workdir}}/README.md", "old_string": "user edit in progress", "new_string": "user edit in progress\nworker line", "instruction": "add a line"}}),
            ),
            "err429": [{"error": 429, "error_details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]}],
            "daily": [{"error": 429, "error_message": "You exceeded your current quota, please check your plan and billing details.",
                "error_details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                    "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                    "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                    "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"}, "quotaValue": "50"}]}]}],
            // The failure matrix (suite::failfast): one scenario per shape.
            "ff429after": [{"error": 429, "headers": {"retry-after": "1"}, "error_details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]}],
            "ff429": [{"error": 429}],
            "ff404": [{"error": 404}],
            "ff500": [{"error": 500}],
            "ff503": [{"error": 503}],
            "err404": [{"error": 404}],
            "err400": [{"error": 400, "error_details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}],
            "err403": [{"error": 403}],
            "err500": [{"error": 500}],
            "gitcommit": git_commit_steps(json!({"name": "run_shell_command", "arguments": {"command": "git commit -am sneaky", "description": "commit"}})),
            "secret": secret_steps(json!({"name": "read_file", "arguments": {"file_path": "{{workdir}}/.env"}})),
            "hang": [{"hang": true}],
            "torn": [{"raw_stream": ["data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"half\"}]}}]}\r\n\r\n", "data: {not json\r\n\r\n"]}]
        }
    })
}

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_gemini_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned Gemini CLI changes"]
fn record_gemini_fixtures() {
    super::record_fixtures(&CLI);
}
