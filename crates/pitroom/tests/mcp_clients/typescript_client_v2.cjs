// Drives `pitroom mcp` with the official MCP TypeScript client v2 (npm @modelcontextprotocol/client)
// in its 2026-07-28 mode: `versionNegotiation: { mode: "auto" }` probes with `server/discover`
// and, on a modern answer, never sends `initialize` — every request carries its own `_meta`
// (protocol version, client info, capabilities). Then the same client in its default (legacy)
// mode, to show the server still answers `initialize`. Run by crates/pitroom/tests/suite/mcp.rs
// with NODE_PATH at the pinned client and PITROOM_BIN, MCP_PROJECT, PITROOM_HOME set. Prints
// `ok <name>` per check and `negotiated <era> <version>` per connection; the first failure exits
// non-zero.
const { Client } = require("@modelcontextprotocol/client");
const { StdioClientTransport } = require("@modelcontextprotocol/client/stdio");

const PROJECT = process.env.MCP_PROJECT;
const MODERN = "2026-07-28";
const VERSION_KEY = "io.modelcontextprotocol/protocolVersion";

function check(name, condition, detail) {
  if (!condition) {
    console.log(`FAILED ${name}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}

async function until(condition, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return condition();
}

const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

/** A stdio transport to `pitroom mcp` that keeps every message the client sends on it. */
function recordingTransport() {
  const transport = new StdioClientTransport({
    command: process.env.PITROOM_BIN,
    args: ["mcp"],
    env: process.env,
    cwd: PROJECT,
  });
  const sent = [];
  const send = transport.send.bind(transport);
  // Patched on the instance: the client probes on a sibling process only for the base
  // StdioClientTransport class itself, so a subclass would change what is tested.
  transport.send = (message, options) => {
    sent.push(message);
    return send(message, options);
  };
  return { transport, sent };
}

async function modern() {
  const client = new Client(
    { name: "pitroom-ts-v2-test", version: "1.0.0" },
    { versionNegotiation: { mode: "auto" } },
  );
  const { transport, sent } = recordingTransport();
  await client.connect(transport);
  const era = client.getProtocolEra();
  const version = client.getNegotiatedProtocolVersion();
  console.log(`negotiated ${era} ${version}`);
  check("modern_era_negotiated", era === "modern" && version === MODERN, { era, version });

  const discovered = client.getDiscoverResult();
  check("discover_named_pitroom",
    discovered?._meta?.["io.modelcontextprotocol/serverInfo"]?.name === "pitroom", discovered);
  check("discover_offers_both_eras",
    discovered.supportedVersions.includes(MODERN) && discovered.supportedVersions.includes("2025-11-25"),
    discovered.supportedVersions);
  // server/discover on the session itself, not only on the connect-time probe.
  const again = await client.discover();
  check("discover_answers_in_session", again.supportedVersions.includes(MODERN), again);

  const { tools } = await client.listTools();
  check("nine_tools", tools.length === 9, tools.map((t) => t.name));

  const progress = [];
  const result = await client.callTool(
    { name: "pitroom_run", arguments: { task: "slow research", model: "fake/slow", dir: PROJECT, wait_seconds: 60 } },
    { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true, timeout: 120000 },
  );
  check("read_run_refs_verified", !result.isError && /refs: \d+\/\d+ verified/.test(text(result)), text(result));
  check("structured_run_done", result.structuredContent?.runs?.[0]?.state === "done", result.structuredContent);
  check("progress_in_the_modern_era", progress.length > 0, progress);

  await listenedRunsPushUpdates(client);

  const initialize = sent.filter((m) => m.method === "initialize");
  check("no_initialize_sent", initialize.length === 0, sent.map((m) => m.method));
  const requests = sent.filter((m) => m.method && m.id !== undefined);
  const stamped = requests.filter((m) => m.params?._meta?.[VERSION_KEY] === MODERN);
  check("every_request_carries_its_meta", requests.length > 0 && stamped.length === requests.length,
    requests.map((m) => [m.method, m.params?._meta]));
  console.log(`modern requests: ${requests.map((m) => m.method).join(", ")}`);
  await client.close();
}

/** 2026-07-28 resource notifications: `subscriptions/listen` streams, not `resources/subscribe`. */
async function listenedRunsPushUpdates(client) {
  const notifications = [];
  client.setNotificationHandler("notifications/resources/list_changed", (n) => notifications.push(n));
  client.setNotificationHandler("notifications/resources/updated", (n) => notifications.push(n));
  const lists = await client.listen({ resourcesListChanged: true });
  check("listen_acknowledged_list_changes", lists.honoredFilter.resourcesListChanged === true, lists.honoredFilter);
  const started = await client.callTool(
    { name: "pitroom_run", arguments: { task: "slow research", model: "fake/slow", dir: PROJECT, wait_seconds: 1 } },
  );
  const run = started.structuredContent.runs[0].run;
  const uri = `pitroom://run/${run}`;
  const listChanged = () => notifications.some((n) => n.method === "notifications/resources/list_changed");
  check("listened_new_run_changes_the_list", await until(listChanged, 30000), notifications);
  const updates = await client.listen({ resourceSubscriptions: [uri, "file:///etc/passwd"] });
  check("listen_honors_only_pitroom_uris",
    JSON.stringify(updates.honoredFilter.resourceSubscriptions) === JSON.stringify([uri]), updates.honoredFilter);
  await client.callTool(
    { name: "pitroom_wait", arguments: { runs: [run], wait_seconds: 60 } },
    { timeout: 120000 },
  );
  const updated = () => notifications.some((n) => n.method === "notifications/resources/updated" && n.params.uri === uri);
  check("listened_run_pushes_updates", await until(updated, 30000), notifications);
  await updates.close();
  await lists.close();
  check("closed_streams_end_locally", (await updates.closed) === "local" && (await lists.closed) === "local", "");
}

async function legacy() {
  const client = new Client({ name: "pitroom-ts-v2-legacy", version: "1.0.0" });
  const { transport, sent } = recordingTransport();
  await client.connect(transport);
  const era = client.getProtocolEra();
  const version = client.getNegotiatedProtocolVersion();
  console.log(`negotiated ${era} ${version}`);
  check("legacy_mode_uses_initialize",
    era === "legacy" && sent.some((m) => m.method === "initialize"), { era, version });
  const { tools } = await client.listTools();
  check("legacy_nine_tools", tools.length === 9, tools.map((t) => t.name));
  await client.close();
}

async function main() {
  await modern();
  await legacy();
  console.log("all checks passed");
}

main().catch((e) => {
  console.log(`FAILED exception: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
