//! Claude Code (`@anthropic-ai/claude-code`), configured the way a user with an API gateway
//! would: `ANTHROPIC_BASE_URL` in their own `~/.claude/settings.json` (with hooks and a bypass
//! mode Pitroom must leave behind), the key in the environment; on the fake Anthropic Messages
//! server. Its checks hold Claude's read profile.

use std::path::Path;

use pitroom_testkit::real_cli;
use serde_json::{json, Value};

use super::script::{edit_steps, git_commit_steps, secret_steps, READ_ANSWER, ZERO_CHECK};
use super::{
    Api, Checks, ConfigFile, FailureMatrix, Fixtures, GitCommit, ListedModel, ModelError, Provider,
    ReadFacts, RealCli, SecretRead, Setting, Timing, Usage, World, EDIT_IN_READ_MODE, OTHER_ERRORS,
    SHELL_WRITE_IN_READ_MODE,
};

/// The file the user's `PreToolUse` hook touches: it must never run under Pitroom.
const HOOK_MARK: &str = "/tmp/pitroom-claude-hook-ran";

pub const CLI: RealCli = RealCli {
    worker: "claude",
    pinned: real_cli::CLAUDE,
    install: real_cli::claude,
    api: Api::Anthropic,
    script,
    provider: Provider {
        config: Some(ConfigFile {
            path: "home/.claude/settings.json",
            contents: provider_config,
        }),
        env: &[("ANTHROPIC_API_KEY", Setting::Is("sk-ant-fake"))],
        node22: false,
        offline: true,
    },
    timing: Timing::HANG_AFTER_15S,
    retry_cap: 2,
    read: ReadFacts {
        view: "in_place",
        usage: Usage {
            input: 2500,
            cache_read: 1200,
            output: Some(80),
            reasoning: None,
        },
        // Claude prices its usage.
        priced: true,
        session: |s| s.len() == 36,
        // No model was pinned: the record names the one Claude Code said it ran.
        asked_model: None,
        reported_model: None,
        offered: &[],
        withheld: &[],
    },
    read_mode_writes: &[EDIT_IN_READ_MODE, SHELL_WRITE_IN_READ_MODE],
    refusal_on_stderr: &[],
    git_commit: Some(GitCommit::REFUSED_BY_PROFILE),
    secret_read: Some(SecretRead::env(true)),
    rate_limits: &[
        ModelError::rate_limited("err429"),
        ModelError::rate_limited("usage-limit"),
        ModelError::rate_limited("credit"),
        ModelError::rate_limited("err529"),
    ],
    other_errors: OTHER_ERRORS,
    failure_shapes: FailureMatrix {
        quota: ("usage limit 429", "usage-limit", "rate_limited"),
        more: &[("529 overloaded", "err529", "rate_limited")],
    },
    listed_model: Some(ListedModel {
        id: "sonnet",
        effort: Some("high"),
    }),
    effort_at: Some("/body/output_config/effort"),
    checks: Checks {
        read: read_profile,
        write: |_, _| {},
    },
    unproven: &[],
    fixtures: Fixtures {
        cases: &[
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
        ],
        first: true,
        timeout: Some("60s"),
        port: true,
        keep_stderr: |_| true,
        exit_codes: false,
        prepare: |w| {
            std::fs::write(w.repo.join(".env"), "API_TOKEN=very-secret-value\n").expect(".env")
        },
    },
};

real_cli_tests!(CLI; every_cli,
    an_interrupted_run_can_be_continued_in_its_session,
    secret_files_stay_unreadable_in_a_write_run,
    models_are_listed_through_the_real_cli,
    effort_reaches_the_model_request,
);

/// The user's `~/.claude/settings.json`: their gateway, a bypass mode and a hook.
fn provider_config(base_url: &str) -> String {
    json!({
        "env": {"ANTHROPIC_BASE_URL": base_url},
        "permissions": {"allow": ["Bash(*)"], "defaultMode": "bypassPermissions"},
        "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": format!("touch {HOOK_MARK}")}]}]}
    })
    .to_string()
}

/// Claude's read profile: only its read tools offered, the default model named, and the
/// user's hooks and bypass mode left behind while their gateway setting came along.
fn read_profile(w: &World, r: &Value, out: &std::process::Output) {
    let first = &w.server.model_requests()[0];
    let asked = w
        .server
        .asked_model(first)
        .expect("the request names a model");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("model {asked} (the CLI's default)")),
        "{stdout}"
    );
    // `DeferredToolPlaceholder` is Claude Code's own stand-in for tools loaded on demand.
    let mut tools: Vec<String> = w
        .server
        .tools(first)
        .into_iter()
        .filter(|t| t != "DeferredToolPlaceholder")
        .collect();
    tools.sort();
    assert_eq!(tools, vec!["Glob", "Grep", "Read"], "{r:#}");
    assert!(!Path::new(HOOK_MARK).exists());
}

fn script() -> Value {
    json!({
        "scenarios": {
            "default": [
                {"text": "Let me look.", "tool_calls": [{"name": "Read", "input": {"file_path": "{{workdir}}/calc.py"}}],
                 "usage": {"input_tokens": 1000, "output_tokens": 50, "cache_read_input_tokens": 200}},
                {"text": READ_ANSWER,
                 "usage": {"input_tokens": 1500, "output_tokens": 30, "cache_read_input_tokens": 1000}}
            ],
            "edit": edit_steps(
                json!({"name": "Edit", "input": {"file_path": "{{workdir}}/calc.py", "old_string": "    # no zero check\n    return a / b", "new_string": ZERO_CHECK}}),
                json!({"name": "Write", "input": {"file_path": "{{workdir}}/new file é.txt", "content": "created by the worker\n"}}),
                json!({"name": "Edit", "input": {"file_path": "{{workdir}}/README.md", "old_string": "user edit in progress", "new_string": "user edit in progress\nworker line"}}),
            ),
            "shellwrite": [
                {"tool_calls": [{"name": "Bash", "input": {"command": "echo sneaky > sneaky.txt", "description": "write a file"}}]},
                {"text": "SUMMARY: tried to write through the shell"}
            ],
            "secret": secret_steps(json!({"name": "Read", "input": {"file_path": "{{workdir}}/.env"}})),
            "gitcommit": git_commit_steps(json!({"name": "Bash", "input": {"command": "git commit -am sneaky", "description": "commit"}})),
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
            "torn": [{"drop": true}],
            "hang": [{"hang": true}]
        }
    })
}

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_claude_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned Claude Code changes"]
fn record_claude_fixtures() {
    super::record_fixtures(&CLI);
}
