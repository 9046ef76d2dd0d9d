//! Codex CLI (`@openai/codex`), configured through the user's own `~/.codex/config.toml` (a
//! custom provider with an API key in the environment), on the fake Responses API server.
//! Codex keeps its own sandbox: its checks read the sandbox mode Codex sent with each turn.

use pitroom_testkit::real_cli;
use serde_json::{json, Value};

use super::super::common::assert_str_has;
use super::script::{EDIT_ANSWER, READ_ANSWER};
use super::{
    with_openai_shapes, Api, Checks, ConfigFile, Fixtures, GitCommit, ListedModel, ModelError,
    Provider, ReadFacts, RealCli, Setting, Timing, Unproven, Usage, World, EDIT_IN_READ_MODE,
    OPENAI_SHAPES, OTHER_ERRORS, SHELL_WRITE_IN_READ_MODE,
};

pub const CLI: RealCli = RealCli {
    worker: "codex",
    pinned: real_cli::CODEX,
    install: real_cli::codex,
    api: Api::Responses,
    script,
    provider: Provider {
        config: Some(ConfigFile {
            path: "home/.codex/config.toml",
            contents: provider_config,
        }),
        env: &[("FAKE_API_KEY", Setting::Is("sk-fake"))],
        node22: false,
        offline: false,
    },
    timing: Timing {
        stall_limit: "6s",
        ..Timing::HANG_AFTER_15S
    },
    retry_cap: 1,
    read: ReadFacts {
        // Codex keeps its own sandbox, so it is not Landlocked: it reads a copy.
        view: "copy",
        // Codex sums a turn's requests; cached input and reasoning are split out.
        usage: Usage {
            output: Some(73),
            reasoning: Some(7),
            ..Usage::TWO_CALLS_CACHED
        },
        priced: false,
        session: |s| s.len() >= 32,
        // Codex's stream never names the model: the record reads it from Codex's session log.
        asked_model: Some("gpt-5.5"),
        reported_model: None,
        offered: &[],
        withheld: &[],
    },
    read_mode_writes: &[SHELL_WRITE_IN_READ_MODE, EDIT_IN_READ_MODE],
    // Codex reports the refusal only on stderr; the engine turns it into a denied call once it
    // follows `Adapter::stderr_events`.
    refusal_on_stderr: &[
        "recorded sandbox violation",
        "patch rejected: writing is blocked by read-only sandbox",
    ],
    git_commit: Some(GitCommit {
        task: "commit it scenario:gitcommit",
        denied_by_profile: false,
    }),
    secret_read: None,
    // One request each: the 429s are not retried.
    rate_limits: &[
        ModelError::rate_limited("err429"),
        ModelError::rate_limited("usage-limit"),
        ModelError::rate_limited("quota"),
    ],
    // Classified from Codex's texts.
    other_errors: OTHER_ERRORS,
    failure_shapes: OPENAI_SHAPES,
    listed_model: Some(ListedModel {
        id: "gpt-5.5",
        effort: Some("high"),
    }),
    effort_at: Some("/body/reasoning/effort"),
    checks: Checks {
        read: read_sandbox,
        write: |w, _| assert_eq!(turn_metadata(w)["sandbox_mode"], "workspace-write"),
    },
    unproven: &[Unproven {
        behaviour: "secret_files_stay_unreadable_in_a_write_run",
        why: "Codex has no per-path read rule (its sandbox confines writes only): only the read copy keeps secret files away, and a write run has none (docs/safety.md, Secrets)",
    }],
    fixtures: Fixtures {
        cases: &[
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
        ],
        first: false,
        timeout: Some("60s"),
        port: true,
        keep_stderr: |l| l.contains("ERROR") || l.contains("WARN") || l.starts_with("Error"),
        exit_codes: false,
        prepare: |_| {},
    },
};

real_cli_tests!(CLI; every_cli,
    an_interrupted_run_can_be_continued_in_its_session,
    models_are_listed_through_the_real_cli,
    effort_reaches_the_model_request,
);

/// The patch the write scenarios ask Codex's `apply_patch` tool to make.
const PATCH: &str = "*** Begin Patch\n*** Update File: calc.py\n@@\n def divide(a, b):\n-    # no zero check\n-    return a / b\n+    if b == 0:\n+        raise ZeroDivisionError(\"b is zero\")\n+    return a / b\n*** Update File: README.md\n@@\n user edit in progress\n+worker line\n*** Add File: new file é.txt\n+created by the worker\n*** End Patch\n";

/// The user's `~/.codex/config.toml`: their own provider, an approval setting Pitroom must
/// override and an MCP server Pitroom must leave out.
fn provider_config(base_url: &str) -> String {
    format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"fake\"\napproval_policy = \"on-request\"\n\n\
         [model_providers.fake]\nname = \"fake\"\nbase_url = \"{base_url}\"\nwire_api = \"responses\"\nenv_key = \"FAKE_API_KEY\"\n\n\
         [mcp_servers.docs]\ncommand = \"/nonexistent/docs-mcp\"\n"
    )
}

/// The `x-codex-turn-metadata` header Codex sent with the last model request.
fn turn_metadata(w: &World) -> Value {
    let last = w
        .server
        .model_requests()
        .last()
        .cloned()
        .expect("a model request");
    let raw = last["headers"]["x-codex-turn-metadata"]
        .as_str()
        .unwrap_or("{}");
    serde_json::from_str(raw).unwrap_or(Value::Null)
}

/// Codex's own sandbox ran read-only (and the record says why it read a copy), with no web
/// search tool and none of the user's MCP servers; the user's approval setting was overridden.
fn read_sandbox(w: &World, r: &Value, _: &std::process::Output) {
    assert_str_has(r, "/view_reason", "codex keeps its own sandbox");
    let meta = turn_metadata(w);
    assert_eq!(meta["sandbox_mode"], "read-only", "{meta:#}");
    let tools = w.server.tools(&w.server.model_requests()[0]);
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("web_search") || t.contains("docs")),
        "{tools:?}"
    );
}

fn script() -> Value {
    with_openai_shapes(json!({
        "scenarios": {
            "default": [
                {"shell": "grep -n 'def divide' calc.py", "reasoning": "Look for divide.",
                 "usage": {"input_tokens": 1000, "cached_tokens": 200, "output_tokens": 50, "reasoning_tokens": 7}},
                {"text": READ_ANSWER,
                 "usage": {"input_tokens": 1500, "cached_tokens": 1000, "output_tokens": 30}}
            ],
            "edit": [
                {"apply_patch": PATCH},
                {"text": EDIT_ANSWER}
            ],
            "shellwrite": [
                {"shell": "echo sneaky > sneaky.txt"},
                {"text": "SUMMARY: tried to write through the shell"}
            ],
            "err429": [{"error": 429, "error_body": {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}}],
            "usage-limit": [{"error": 429, "error_body": {"error": {"type": "usage_limit_reached", "plan_type": "plus", "resets_in_seconds": 3600}}}],
            "quota": [{"error": 429, "error_body": {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}}],
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
    }))
}

/// Records the real CLI's streams as parser fixtures (run on purpose, not in CI):
/// `cargo test -p pitroom --test all -- --ignored record_codex_fixtures`.
#[test]
#[ignore = "records fixtures; run by hand when the pinned Codex changes"]
fn record_codex_fixtures() {
    super::record_fixtures(&CLI);
}
