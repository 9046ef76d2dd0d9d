//! The whole chain with real agents: real Claude Code (the pinned one) as the MCP client of
//! `pitroom mcp`, its model the fake Anthropic server scripted to call `pitroom_run`; the worker
//! is real OpenCode on the fake chat-completions server. The worker's cited answer must come
//! back into the primary's next model request.

use std::process::{Command, Output};

use pitroom_testkit::{real_cli, FakeAnthropic};
use serde_json::{json, Value};

use super::common::assert_str_has;
use super::common::{assert_exit, json_stdout, text, PITROOM};
use super::real_cli::{opencode, World};

/// Claude Code's tool name for `pitroom_run` of the MCP server named `pitroom`.
const RUN_TOOL: &str = "mcp__pitroom__pitroom_run";

fn primary_script() -> Value {
    json!({"scenarios": {"default": [
        {"text": "I'll delegate this.", "tool_calls": [{"name": RUN_TOOL,
            "input": {"task": "Where can divide fail?", "dir": "{{workdir}}", "wait_seconds": 120}}]},
        {"text": "The worker found it: divide() has no zero check."}
    ]}})
}

fn tool_names(request: &Value) -> Vec<String> {
    request["body"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// The text of every tool result in a request's messages.
fn tool_results(request: &Value) -> String {
    let mut out = String::new();
    for message in request["body"]["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                out.push_str(&block["content"].to_string());
            }
        }
    }
    out
}

/// The worker's cited, verified report and its receipt reached the primary's model (`primary`)
/// in the tool `results` of one of its `requests`, and the worker really was OpenCode on its
/// own fake model server.
pub fn the_verified_report_came_back(
    world: &World,
    requests: &[Value],
    results: fn(&Value) -> String,
    primary: &str,
    out: &Output,
) {
    let answered = requests
        .iter()
        .map(results)
        .find(|t| t.contains("refs: 2/2 verified"))
        .unwrap_or_else(|| {
            let seen: Vec<String> = requests.iter().map(results).collect();
            panic!(
                "the worker's report never reached {primary}: {seen:#?}\n{}",
                text(out)
            )
        });
    assert!(
        answered.contains("SUMMARY: divide() has no zero check: calc.py:7"),
        "{answered}"
    );
    assert!(answered.contains("receipt: worker processed"), "{answered}");
    assert!(
        !world.server.model_requests().is_empty(),
        "OpenCode never called its model"
    );
}

#[test]
fn claude_code_delegates_through_pitroom_mcp_and_reads_the_verified_answer_back() {
    let world = World::new(&opencode::CLI);
    let claude = real_cli::claude().expect("the pinned Claude Code installs from npm");
    let primary = FakeAnthropic::start(primary_script()).expect("fake Anthropic starts");
    let config = world.env.root.join("mcp.json");
    // Claude Code passes its own environment to the servers it starts: the state dir, the
    // worker's binary and its provider config reach `pitroom mcp` that way.
    std::fs::write(
        &config,
        json!({"mcpServers": {"pitroom": {"command": PITROOM, "args": ["mcp"]}}}).to_string(),
    )
    .expect("mcp config");
    let mut cmd = Command::new(&claude);
    cmd.args([
        "-p",
        "--output-format",
        "json",
        "--strict-mcp-config",
        "--mcp-config",
    ])
    .arg(&config)
    .args([
        "--allowedTools",
        RUN_TOOL,
        "--",
        "Where can divide fail? Use a worker.",
    ])
    .current_dir(&world.repo);
    world.env.apply(&mut cmd);
    cmd.env("PATH", real_cli::path_with_node22().expect("node 22"))
        .env("ANTHROPIC_BASE_URL", primary.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-fake")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    let out = cmd.output().expect("claude runs");
    assert_exit(&out, 0);

    let requests = primary.model_requests();
    let first = requests
        .iter()
        .find(|r| {
            tool_names(r)
                .iter()
                .any(|n| n.starts_with("mcp__pitroom__"))
        })
        .unwrap_or_else(|| panic!("no request offered Pitroom's tools: {requests:#?}"));
    // pitroom_run is marked anthropic/alwaysLoad, so Claude Code offers it up front instead
    // of behind its tool search.
    assert!(
        tool_names(first).iter().any(|n| n == RUN_TOOL),
        "{:?}",
        tool_names(first)
    );
    // Claude Code forwards only structuredContent when a result has it: the report is there.
    the_verified_report_came_back(&world, &requests, tool_results, "the primary", &out);
    let result = json_stdout(&out);
    assert_str_has(&result, "/result", "no zero check");
}
