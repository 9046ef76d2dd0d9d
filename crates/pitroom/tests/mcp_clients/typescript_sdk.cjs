// Drives `pitroom mcp` with the official MCP TypeScript SDK (npm @modelcontextprotocol/sdk, v1:
// Client + StdioClientTransport). Run by crates/pitroom/tests/suite/mcp.rs with NODE_PATH at
// the pinned SDK and PITROOM_BIN, MCP_PROJECT, PITROOM_HOME set. Prints `ok <name>` per check;
// the first failure exits non-zero.
const fs = require("node:fs");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const PROJECT = process.env.MCP_PROJECT;

function check(name, condition, detail) {
  if (!condition) {
    console.log(`FAILED ${name}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

/** Fake worker processes of this test's state dir. */
function fakeWorkers() {
  const mine = `PITROOM_HOME=${process.env.PITROOM_HOME}\0`;
  return fs.readdirSync("/proc").filter((pid) => /^\d+$/.test(pid)).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("pitroom-fake-worker")
        && fs.readFileSync(`/proc/${pid}/environ`, "latin1").includes(mine);
    } catch {
      return false;
    }
  });
}

async function until(condition, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return condition();
}

async function main() {
  const client = new Client({ name: "pitroom-ts-test", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command: process.env.PITROOM_BIN,
    args: ["mcp"],
    env: process.env,
    cwd: PROJECT,
  });
  await client.connect(transport);
  check("server_named_pitroom", client.getServerVersion().name === "pitroom", client.getServerVersion());

  const { tools } = await client.listTools();
  check("nine_tools", tools.length === 9, tools.map((t) => t.name));

  const progress = [];
  const slow = await client.callTool(
    { name: "pitroom_run", arguments: { task: "slow research", model: "fake/slow", dir: PROJECT, wait_seconds: 60 } },
    undefined,
    { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true, timeout: 120000 },
  );
  check("slow_run_done", slow.structuredContent.runs[0].state === "done", text(slow));
  check("progress_reached_the_ts_client", progress.length >= 1, progress);
  check("structured_report_present", slow.structuredContent.report.includes("SUMMARY:"), slow.structuredContent);

  // Cancellation the SDK's own way: aborting the call sends notifications/cancelled.
  const controller = new AbortController();
  const endless = client.callTool(
    { name: "pitroom_run", arguments: { task: "endless", model: "fake/endless", dir: PROJECT, wait_seconds: 120 } },
    undefined,
    { signal: controller.signal, timeout: 180000 },
  ).catch((e) => e);
  check("endless_worker_started", await until(() => fakeWorkers().length > 0, 30000), "no fake worker");
  controller.abort("the test cancels");
  const aborted = await endless;
  check("aborted_call_rejects", aborted instanceof Error, String(aborted));
  check("abort_leaves_no_worker_process", await until(() => fakeWorkers().length === 0, 30000), fakeWorkers());
  let state;
  await until(async () => {
    const shown = await client.callTool({ name: "pitroom_show", arguments: { run: "last", view: "record" } });
    state = JSON.parse(text(shown)).state;
    return state === "stopped";
  }, 30000);
  check("aborted_run_is_stopped", state === "stopped", state);

  const crew = await client.callTool(
    { name: "pitroom_run", arguments: { tasks: ["a", "b", "c"], model: "fake/read", dir: PROJECT, wait_seconds: 120 } },
    undefined,
    { timeout: 180000 },
  );
  check("crew_of_three_done", crew.structuredContent.runs.length === 3
    && crew.structuredContent.runs.every((r) => r.state === "done"), crew.structuredContent);

  const missing = await client.callTool({ name: "pitroom_wait", arguments: { runs: ["19990101-nothing"] } });
  check("unknown_run_is_an_error_result", missing.isError === true && text(missing).includes("no run matches"), text(missing));

  await client.close();
  console.log("all checks passed");
}

main().catch((e) => {
  console.log(`FAILED with ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
