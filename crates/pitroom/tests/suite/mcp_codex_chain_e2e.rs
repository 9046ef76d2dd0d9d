//! The whole chain with real Codex as the primary: `codex exec` (the pinned one) is the MCP
//! client of `pitroom mcp`, registered in a scratch `CODEX_HOME` with exactly the snippet
//! `pitroom mcp --print-config codex` prints. Codex's model is the fake Responses server; the
//! worker is real OpenCode on the fake chat-completions server. The worker's cited answer must
//! come back into Codex's next model request, and Pitroom must have recorded the run.
//!
//! Codex 0.171 offers MCP tools only behind its own `tool_search` tool (the namespace
//! `mcp__pitroom` is listed in a developer message; its tools are loaded on a search). There is
//! no switch to turn that off: `codex features list` shows `tool_search` and
//! `tool_search_always_defer_mcp_tools` as *removed* features, fixed on, and a server has no
//! "always load" mark Codex reads. So the fake model does what a real one does: it calls
//! `tool_search` first (a `tool_search_call` item, the tool being of type `tool_search` with
//! client execution), then calls `pitroom_run` in the namespace the search loaded it in.
//!
//! The query matters: Codex ranks the deferred tools with BM25 over each tool's name, its
//! description, the server's instructions (the same text in all nine) and its parameter names,
//! and returns the top 8 by default. "pitroom run a worker" leaves `pitroom_run` out (every
//! tool's text has those words through the shared instructions, and `pitroom_run`'s is the
//! longest); "delegate a task to a worker" finds it. The test uses the latter.
//!
//! Two things `--print-config codex` needed for this chain, both found by it: Codex refuses a
//! call of a tool that is not read-only under `codex exec` ("requires approval, but approval
//! policy is never") unless the tool is approved in the config, and it clears the environment
//! of MCP servers, so `PITROOM_OPENCODE_BIN` and `XDG_CONFIG_HOME` (OpenCode's config) must be
//! in `env_vars`.

use std::process::Command;

use pitroom_testkit::{real_cli, FakeResponses};
use serde_json::{json, Value};

use super::common::{assert_exit, record, text, PITROOM};
use super::mcp_chain_e2e::the_verified_report_came_back;
use super::real_cli::{opencode, World};

/// The namespace Codex gives the tools of the MCP server named `pitroom`.
const NAMESPACE: &str = "mcp__pitroom";

fn primary_script() -> Value {
    json!({"scenarios": {"default": [
        {"tool_search": "delegate a task to a worker"},
        {"tool_calls": [{"name": "pitroom_run",
            "arguments": {"task": "Where can divide fail?", "dir": "{{workdir}}", "wait_seconds": 120}}]},
        {"text": "The worker found it: divide() has no zero check."}
    ]}})
}

/// `~/.codex/config.toml` for the test: the fake model provider, then the registration
/// snippet exactly as `pitroom mcp --print-config codex` prints it.
fn codex_config(world: &World, primary: &FakeResponses) -> String {
    let out = world
        .env
        .run(&world.repo, &["mcp", "--print-config", "codex"]);
    assert_exit(&out, 0);
    let snippet = String::from_utf8(out.stdout).expect("the snippet is UTF-8");
    format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"fake\"\napproval_policy = \"never\"\n\n\
         [model_providers.fake]\nname = \"fake\"\nbase_url = \"{}\"\nwire_api = \"responses\"\n\
         env_key = \"FAKE_API_KEY\"\n\n{snippet}",
        primary.base_url()
    )
}

/// The text of every tool output in a request's input.
fn tool_outputs(request: &Value) -> String {
    request["body"]["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["output"].to_string())
        .collect()
}

/// The tool search's result in a request's input: the tools it loaded.
fn searched_tools(request: &Value) -> Vec<Value> {
    request["body"]["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "tool_search_output")
        .flat_map(|item| item["tools"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn codex_delegates_through_pitroom_mcp_registered_by_print_config_and_reads_the_verified_answer_back(
) {
    let world = World::new(&opencode::CLI);
    let codex = real_cli::codex().expect("the pinned Codex CLI installs from npm");
    let primary = FakeResponses::start(primary_script()).expect("fake Responses starts");
    let codex_home = world.env.root.join("codex-home");
    std::fs::create_dir_all(&codex_home).expect("codex home");
    std::fs::write(
        codex_home.join("config.toml"),
        codex_config(&world, &primary),
    )
    .expect("config.toml");
    // The snippet says `command = "pitroom"`: the binary under test is that `pitroom` on PATH.
    let bin = world.env.root.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(PITROOM, bin.join("pitroom")).expect("link");
    let path = format!("{}:{}", bin.display(), world.env.path().display());

    let mut cmd = Command::new(&codex);
    cmd.args([
        "exec",
        "--json",
        "--color",
        "never",
        "Where can divide fail? Use a worker.",
    ])
    .current_dir(&world.repo)
    .stdin(std::process::Stdio::null());
    world.env.apply(&mut cmd);
    cmd.env("PATH", &path)
        .env("CODEX_HOME", &codex_home)
        .env("FAKE_API_KEY", "sk-fake");
    let out = cmd.output().expect("codex runs");
    assert_exit(&out, 0);

    let requests = primary.model_requests();
    // Codex offered its tool search, and the search loaded pitroom_run in Pitroom's namespace.
    let first = requests.first().expect("a model request");
    assert!(
        first["body"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["type"] == "tool_search"),
        "{:#}",
        first["body"]["tools"]
    );
    let loaded = requests
        .iter()
        .map(searched_tools)
        .find(|t| !t.is_empty())
        .unwrap_or_else(|| panic!("the tool search loaded nothing:\n{}", text(&out)));
    let namespace = loaded
        .iter()
        .find(|t| t["name"] == NAMESPACE)
        .unwrap_or_else(|| panic!("no {NAMESPACE} namespace in {loaded:#?}"));
    assert!(
        namespace["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["name"] == "pitroom_run"),
        "{namespace:#}"
    );
    the_verified_report_came_back(&world, &requests, tool_outputs, "Codex's model", &out);
    // And Pitroom recorded the worker's run.
    let run = record(&world.env, &world.repo);
    assert_eq!(run["state"], "done", "{run:#}");
    assert_eq!(run["spec"]["backend"], "opencode", "{run:#}");
    assert_eq!(run["spec"]["task"], "Where can divide fail?", "{run:#}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no zero check"),
        "{}",
        text(&out)
    );
}
