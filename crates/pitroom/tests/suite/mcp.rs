//! `pitroom mcp` driven by the official MCP Python SDK over stdio: tools and schemas, a read
//! run, progress, a handle past `wait_seconds`, cancellation, isolate/apply/discard,
//! write/revert, a crew of five and bad input. The client script lives in
//! `tests/mcp_clients/python_sdk.py`; each check it passes prints `ok <name>`.

use std::path::{Path, PathBuf};
use std::process::Command;

use pitroom_testkit::real_cli::{python_mcp, ts_mcp_client_v2, ts_mcp_sdk};
use pitroom_testkit::repo::dirty_repo;
use pitroom_testkit::TestEnv;
use serde_json::json;

use super::common::{fake_env, text, PITROOM};

const CALC_FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n        raise ZeroDivisionError(\"b is 0\")\n    return a / b\n";

/// The fake worker's behaviour per `--model`, so one server can be asked for each kind of run.
fn scripts() -> serde_json::Value {
    let step = json!({"step": {"input": 1200, "output": 80, "cost": 0.001}});
    let read_answer = json!({"text": "SUMMARY: divide() has no zero check\nDETAILS: `divide` at calc.py:5-7 divides without a check\nFILES CHANGED: none"});
    let edit_answer = json!({"text": "SUMMARY: added a zero check to divide()\nDETAILS: calc.py:5-8\nFILES CHANGED: calc.py"});
    json!({"by_model": {
        "fake/read": [{"tool": "read", "input": {"filePath": "calc.py"}}, step, read_answer],
        "fake/slow": [{"tool": "read", "input": {"filePath": "calc.py"}}, step, {"sleep_ms": 9000}, read_answer, step],
        "fake/endless": [{"tool": "read", "input": {"filePath": "calc.py"}}, step, {"sleep_ms": 600000}],
        "fake/edit": [{"write": {"path": "calc.py", "content": CALC_FIXED}}, step, edit_answer],
        "fake/edit2": [{"write": {"path": "calc.py", "content": format!("{CALC_FIXED}# other\n")}}, step, edit_answer],
        "fake/note": [{"write": {"path": "calc.py", "content": format!("{CALC_FIXED}# NOTE: checked\n")}}, step, edit_answer],
        "fake/probe": [step, {"text": pitroom_service::probe::WORD}],
        "fake/mute": [step, {"text": "I would rather not."}],
        "fake/review": [step, {"text": "SUMMARY: fine\nSPEC: PASS · QUALITY: APPROVED · ISSUES: critical=0 important=0 minor=0"}],
        "*": [step, read_answer],
    }})
}

/// What runs an MCP client script.
enum Client {
    /// The Python with the MCP Python SDK.
    Python(PathBuf),
    /// `node`, with this installed SDK's `node_modules` on `NODE_PATH`.
    Node(PathBuf),
}

/// Runs the MCP client script `tests/mcp_clients/<script>` with `client` against `pitroom mcp`
/// in a dirty project, and asserts it succeeded and printed each of `checks` and `all checks
/// passed`. Returns the environment, the project and what the script printed.
fn run_client(client: Client, script: &str, checks: &[&str]) -> (TestEnv, PathBuf, String) {
    let env = fake_env(scripts());
    let project = dirty_repo(&env, "project");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp_clients")
        .join(script);
    let mut cmd = match &client {
        Client::Python(python) => Command::new(python),
        Client::Node(_) => Command::new("node"),
    };
    cmd.arg(&script).current_dir(&project);
    // `apply` clears the environment: the client's own variables come after it.
    env.apply(&mut cmd);
    if let Client::Node(sdk) = &client {
        cmd.env("NODE_PATH", sdk.join("node_modules"));
    }
    cmd.env("PITROOM_BIN", PITROOM).env("MCP_PROJECT", &project);
    let out = cmd.output().expect("the client runs");
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    for check in ["all checks passed"].iter().chain(checks) {
        assert!(printed.contains(check), "missing `{check}`:\n{printed}");
    }
    (env, project, printed)
}

/// What follows `prefix` on each printed line that starts with it.
fn lines_after<'a>(printed: &'a str, prefix: &str) -> Vec<&'a str> {
    printed
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .collect()
}

#[test]
fn the_official_python_sdk_drives_every_tool_of_pitroom_mcp() {
    let python = python_mcp().expect("the MCP Python SDK installs from PyPI");
    let (env, project, printed) = run_client(
        Client::Python(python),
        "python_sdk.py",
        &[
            "ok tool_list_under_1500_tokens",
            "ok read_run_refs_verified",
            "ok progress_notifications_arrive",
            "ok wait_finishes_the_run",
            "ok subscribed_run_pushes_updates",
            "ok new_runs_change_the_resource_list",
            "ok cancel_leaves_no_worker_process",
            "ok apply_lands_the_patch",
            "ok review_gives_a_verdict",
            "ok revert_restores_the_file",
            "ok crew_runs_all_done",
            "ok race_contenders_are_isolated_and_done",
            "ok race_takes_one_task",
            "ok server_still_serves",
            "ok a_spend_cap_on_an_unpriced_model_is_refused_with_the_line_that_prices_it",
            "ok token_capped_run_reports_its_budget",
            "ok token_cap_and_no_hold_are_on_record",
            "ok probe_makes_a_real_round_trip",
            "ok probe_says_what_went_wrong",
        ],
    );
    // The session closed while a run was going: the run went on and finished.
    let detached = lines_after(&printed, "detached run ")
        .first()
        .expect("the script named its detached run")
        .trim()
        .to_string();
    let record = env.run_json(&project, &["wait", &detached, "--timeout", "60", "--json"]);
    assert_eq!(record["state"], "done", "{record:#}");
}

#[test]
fn the_official_typescript_sdk_gets_progress_cancels_the_node_way_and_runs_a_crew() {
    let sdk = ts_mcp_sdk().expect("the MCP TypeScript SDK installs from npm");
    run_client(
        Client::Node(sdk),
        "typescript_sdk.cjs",
        &[
            "ok progress_reached_the_ts_client",
            "ok abort_leaves_no_worker_process",
            "ok aborted_run_is_stopped",
            "ok crew_of_three_done",
        ],
    );
}

/// The v2 TypeScript client in its `auto` mode: it probes `server/discover`, gets a modern
/// answer, and then speaks the 2026-07-28 revision — no `initialize`, `_meta` on every request,
/// resource notifications on `subscriptions/listen` streams.
/// The script prints the era and version each connection negotiated.
#[test]
fn the_typescript_client_v2_speaks_the_2026_07_28_revision_without_initialize() {
    let client = ts_mcp_client_v2().expect("the MCP TypeScript client v2 installs from npm");
    let (_env, _project, printed) = run_client(
        Client::Node(client),
        "typescript_client_v2.cjs",
        &[
            "ok discover_offers_both_eras",
            "ok discover_answers_in_session",
            "ok read_run_refs_verified",
            "ok progress_in_the_modern_era",
            "ok listened_new_run_changes_the_list",
            "ok listen_honors_only_pitroom_uris",
            "ok listened_run_pushes_updates",
            "ok no_initialize_sent",
            "ok every_request_carries_its_meta",
            "ok legacy_mode_uses_initialize",
        ],
    );
    assert_eq!(
        lines_after(&printed, "negotiated "),
        ["modern 2026-07-28", "legacy 2025-11-25"],
        "{printed}"
    );
}

#[test]
fn print_config_gives_each_host_its_snippet_and_refuses_an_unknown_one() {
    let env = fake_env(json!([]));
    let dir = env.dir("anywhere");
    for (host, needle) in [
        (
            "claude",
            "claude mcp add --transport stdio --scope user pitroom -- pitroom mcp",
        ),
        ("codex", "tool_timeout_sec"),
        ("gemini", "\"mcpServers\""),
        ("cursor", "\"mcpServers\""),
    ] {
        let out = env.run(&dir, &["mcp", "--print-config", host]);
        assert!(out.status.success(), "{host}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(needle),
            "{host}: {}",
            text(&out)
        );
    }
    let out = env.run(&dir, &["mcp", "--print-config", "vim"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
