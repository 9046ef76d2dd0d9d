"""Drives `pitroom mcp` with the official MCP Python SDK (PyPI `mcp`, v1 ClientSession API: the
`initialize` handshake Claude Code uses on stdio).

Run by crates/pitroom/tests/suite/mcp.rs, which sets up a hermetic Pitroom (PITROOM_HOME, the
fake worker as OpenCode with a by-model script) and passes:
  PITROOM_BIN      the pitroom binary under test
  MCP_PROJECT      a git repository to work in
Each check prints `ok <name>`; the first failure raises, and the exit code is non-zero.
"""

import asyncio
import json
import os
import sys
import time
from datetime import timedelta

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

PITROOM = os.environ["PITROOM_BIN"]
PROJECT = os.environ["MCP_PROJECT"]
EXPECTED_TOOLS = {
    "pitroom_run", "pitroom_wait", "pitroom_show", "pitroom_apply",
    "pitroom_discard", "pitroom_revert", "pitroom_stop", "pitroom_info", "pitroom_review",
}


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"ok {name}", flush=True)


def sc(result):
    """The structured content, or a failure that shows the text the server sent instead."""
    if result.structuredContent is None:
        raise AssertionError(f"no structuredContent (isError={result.isError}): {text_of(result)}")
    return result.structuredContent


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call(session, name, args, **kw):
    return await session.call_tool(name, args, read_timeout_seconds=timedelta(seconds=120), **kw)


async def tools_are_listed_with_schemas_and_annotations(session, init):
    instructions = init.instructions or ""
    check("instructions_under_2kb", 0 < len(instructions.encode()) < 2048, len(instructions))
    listed = (await session.list_tools()).tools
    names = {t.name for t in listed}
    check("every_tool_is_listed", names == EXPECTED_TOOLS, names)
    for t in listed:
        check(f"{t.name}_description_under_2kb", 0 < len(t.description.encode()) < 2048)
        check(f"{t.name}_input_schema_is_an_object", t.inputSchema.get("type") == "object", t.inputSchema)
        check(f"{t.name}_has_annotations", t.annotations is not None)
    by_name = {t.name: t for t in listed}
    check("run_has_an_output_schema", by_name["pitroom_run"].outputSchema is not None)
    check("apply_is_destructive", by_name["pitroom_apply"].annotations.destructiveHint is True)
    check("wait_is_read_only", by_name["pitroom_wait"].annotations.readOnlyHint is True)
    size = len(json.dumps([t.model_dump(exclude_none=True) for t in listed], separators=(",", ":")))
    # About four characters a token: the whole tool list under 1,500 tokens.
    check("tool_list_under_1500_tokens", size < 6000, size)


async def a_read_run_returns_the_verified_report(session):
    r = await call(session, "pitroom_run", {"task": "Where can divide fail?", "model": "fake/read", "dir": PROJECT})
    check("read_run_is_not_an_error", not r.isError, text_of(r))
    run = sc(r)["runs"][0]
    check("read_run_is_done", run["state"] == "done", run)
    check("read_run_refs_verified", run.get("refs") == "1/1", run)
    check("read_run_text_is_the_report", "SUMMARY:" in text_of(r) and "refs: 1/1 verified" in text_of(r), text_of(r))
    return run["run"]


async def caps_and_no_hold_reach_the_run(session):
    r = await call(session, "pitroom_run", {"task": "Where can divide fail?", "model": "fake/read", "dir": PROJECT, "max_tokens": 50000, "no_hold": True})
    check("token_capped_run_reports_its_budget", not r.isError and "of 50k tokens (--max-tokens)" in text_of(r), text_of(r))
    record = json.loads(text_of(await call(session, "pitroom_show", {"run": sc(r)["runs"][0]["run"], "view": "record"})))
    spec = record["spec"]
    check("token_cap_and_no_hold_are_on_record", spec["budget"].get("max_tokens") == 50000 and spec.get("max_hold_secs", 0) == 0, spec)


async def progress_arrives_while_a_call_waits(session):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, message))

    r = await call(session, "pitroom_run",
                   {"task": "slow research", "model": "fake/slow", "dir": PROJECT, "wait_seconds": 60},
                   progress_callback=on_progress)
    check("slow_run_finishes_within_the_wait", sc(r)["runs"][0]["state"] == "done", text_of(r))
    check("progress_notifications_arrive", len(seen) >= 1, seen)
    check("progress_increases", all(b[0] > a[0] for a, b in zip(seen, seen[1:])), seen)
    check("progress_names_the_run", any("steps" in (m or "") for _, m in seen), seen)


async def a_run_past_wait_seconds_returns_a_handle_that_wait_finishes(session):
    r = await call(session, "pitroom_run", {"task": "slow research", "model": "fake/slow", "dir": PROJECT, "wait_seconds": 1})
    s = sc(r)
    check("handle_while_running", s["active"] == 1 and s["next"]["tool"] == "pitroom_wait", s)
    r2 = await call(session, "pitroom_wait", dict(s["next"]["arguments"], wait_seconds=60))
    check("wait_finishes_the_run", sc(r2)["runs"][0]["state"] == "done", text_of(r2))


def fake_workers_alive():
    """Fake worker processes of this test's state dir (other tests run their own)."""
    mine = ("PITROOM_HOME=" + os.environ["PITROOM_HOME"]).encode() + b"\0"
    alive = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"pitroom-fake-worker" not in f.read():
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mine in f.read():
                    alive.append(pid)
        except OSError:
            pass
    return alive


async def cancelling_a_run_call_stops_its_run(session):
    # The v1 client does not announce a cancelled call by itself; send what hosts send
    # (notifications/cancelled with the call's request id, the session's next id).
    request_id = session._request_id
    task = asyncio.ensure_future(call(session, "pitroom_run",
                                      {"task": "endless", "model": "fake/endless", "dir": PROJECT, "wait_seconds": 120}))
    # The run is going once the fake worker process exists.
    deadline = time.time() + 30
    while not fake_workers_alive() and time.time() < deadline:
        await asyncio.sleep(0.1)
    check("endless_worker_started", fake_workers_alive())
    await session.send_notification(types.ClientNotification(types.CancelledNotification(
        params=types.CancelledNotificationParams(requestId=request_id, reason="test cancels the call"))))
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    deadline = time.time() + 30
    while fake_workers_alive() and time.time() < deadline:
        await asyncio.sleep(0.1)
    check("cancel_leaves_no_worker_process", not fake_workers_alive(), fake_workers_alive())
    state = None
    while time.time() < deadline:
        r = await call(session, "pitroom_show", {"run": "last", "view": "record"})
        state = json.loads(text_of(r))["state"]
        if state == "stopped":
            break
        await asyncio.sleep(0.1)
    check("cancelled_run_is_stopped", state == "stopped", state)


async def isolate_apply_discard_write_revert(session):
    calc = os.path.join(PROJECT, "calc.py")
    before = open(calc).read()
    r = await call(session, "pitroom_run", {"task": "add a zero check", "mode": "isolate", "model": "fake/edit", "dir": PROJECT})
    run = sc(r)["runs"][0]
    check("isolated_run_changed_a_file", run["state"] == "done" and run["changes"] == 1, text_of(r))
    check("isolated_run_left_the_tree_alone", open(calc).read() == before)
    patch = await call(session, "pitroom_show", {"run": run["run"], "view": "patch"})
    check("patch_is_shown", "ZeroDivisionError" in text_of(patch), text_of(patch))
    applied = await call(session, "pitroom_apply", {"run": run["run"]})
    check("apply_lands_the_patch", not applied.isError and "ZeroDivisionError" in open(calc).read(), text_of(applied))
    again = await call(session, "pitroom_apply", {"run": run["run"]})
    check("second_apply_is_an_error", again.isError and "already applied" in text_of(again), text_of(again))

    r = await call(session, "pitroom_run", {"task": "add a zero check", "mode": "isolate", "model": "fake/edit2", "dir": PROJECT})
    other = sc(r)["runs"][0]["run"]
    rv = await call(session, "pitroom_review", {"run": other, "worker": "opencode:fake/review", "wait_seconds": 60})
    view = sc(rv)["runs"][0]
    check("review_gives_a_verdict", not rv.isError and view["verdict"].startswith("SPEC PASS"), text_of(rv))
    d = await call(session, "pitroom_discard", {"run": other})
    check("discard_drops_the_copy", not d.isError and sc(d)["discarded"] is True, text_of(d))

    with_fix = open(calc).read()
    r = await call(session, "pitroom_run", {"task": "add a note", "mode": "write", "model": "fake/note", "dir": PROJECT})
    check("write_run_edits_in_place", sc(r)["runs"][0]["changes"] == 1 and "NOTE" in open(calc).read(), text_of(r))
    rv = await call(session, "pitroom_revert", {})
    check("revert_restores_the_file", not rv.isError and open(calc).read() == with_fix, text_of(rv))


async def a_crew_of_five_runs_in_one_call(session):
    tasks = [f"question {i}" for i in range(5)]
    r = await call(session, "pitroom_run", {"tasks": tasks, "model": "fake/read", "dir": PROJECT, "group": "mcp-crew", "wait_seconds": 120})
    s = sc(r)
    check("crew_reports_every_run", len(s["runs"]) == 5 and s["group"] == "mcp-crew", s)
    check("crew_runs_all_done", all(x["state"] == "done" for x in s["runs"]), s)
    info = await call(session, "pitroom_info", {"topic": "history", "query": "question"})
    check("history_finds_the_crew", len(sc(info)["hits"]) >= 5, text_of(info))


async def a_race_runs_its_contenders_as_one_group(session):
    r = await call(session, "pitroom_run", {"task": "Add a zero check", "race": ["opencode:fake/edit", "opencode:fake/edit2"], "dir": PROJECT, "wait_seconds": 120})
    s = sc(r)
    check("race_is_one_group", s["group"].startswith("race-") and len(s["runs"]) == 2, s)
    check("race_contenders_are_isolated_and_done", all(x["mode"] == "isolate" and x["state"] == "done" for x in s["runs"]), s)
    r = await call(session, "pitroom_run", {"tasks": ["a", "b"], "race": ["opencode", "codex"], "dir": PROJECT})
    check("race_takes_one_task", r.isError and "one `task`" in text_of(r), text_of(r))


async def bad_input_gets_clear_errors_and_the_server_keeps_serving(session):
    try:
        await call(session, "no_such_tool", {})
        raise AssertionError("an unknown tool was accepted")
    except McpError as e:
        check("unknown_tool_is_a_jsonrpc_error", "tool" in str(e).lower(), str(e))
    r = await call(session, "pitroom_run", {"dir": PROJECT})
    check("missing_task_is_an_error", r.isError and "task" in text_of(r), text_of(r))
    r = await call(session, "pitroom_run", {"task": 42})
    check("mistyped_task_is_an_error", r.isError, text_of(r))
    r = await call(session, "pitroom_show", {"run": "19990101-nothing"})
    check("unknown_run_is_an_error", r.isError and "no run matches" in text_of(r), text_of(r))
    r = await call(session, "pitroom_run", {"task": "x" * 100_001, "dir": PROJECT})
    check("oversized_task_is_an_error", r.isError and "over the limit" in text_of(r), text_of(r))
    r = await call(session, "pitroom_run", {"task": "t", "mode": "sideways", "dir": PROJECT})
    check("unknown_mode_is_an_error", r.isError and "read, isolate, write" in text_of(r), text_of(r))
    r = await call(session, "pitroom_run", {"task": "t", "max_usd": 0.5, "dir": PROJECT})
    check("a_spend_cap_on_an_unpriced_model_is_refused_with_the_line_that_prices_it", r.isError and "worker_prices." in text_of(r), text_of(r))
    r = await call(session, "pitroom_info", {"topic": "runs"})
    check("server_still_serves", not r.isError and len(sc(r)["runs"]) > 0, text_of(r))
    r = await call(session, "pitroom_info", {"topic": "doctor"})
    names = {c["check"] for c in sc(r)["checks"]}
    check("doctor_reports_the_checkup", not r.isError and {"git", "git guard", "landlock", "containment", "opencode"} <= names, text_of(r))
    check("doctor_says_whether_the_machine_is_healthy", isinstance(sc(r)["healthy"], bool), sc(r))
    r = await call(session, "pitroom_info", {"topic": "probe", "worker": "opencode:fake/probe"})
    probes = sc(r)["probes"]
    check("probe_makes_a_real_round_trip", not r.isError and len(probes) == 1 and probes[0]["ok"] and probes[0]["run"], sc(r))
    r = await call(session, "pitroom_info", {"topic": "probe", "worker": "opencode:fake/mute"})
    probes = sc(r)["probes"]
    check("probe_says_what_went_wrong", len(probes) == 1 and not probes[0]["ok"] and probes[0]["error"] and sc(r)["healthy"] is False, sc(r))
    r = await call(session, "pitroom_info", {"topic": "weather"})
    check("unknown_topic_names_doctor_among_the_topics", r.isError and "doctor" in text_of(r), text_of(r))


NOTIFICATIONS = []


async def on_message(message):
    """Every server notification the session receives (resource updates, list changes)."""
    if isinstance(message, types.ServerNotification):
        NOTIFICATIONS.append(message.root)


async def subscribed_runs_push_updates_and_new_runs_change_the_list(session):
    r = await call(session, "pitroom_run", {"task": "slow research", "model": "fake/slow", "dir": PROJECT, "wait_seconds": 1})
    run_id = sc(r)["runs"][0]["run"]
    uri = f"pitroom://run/{run_id}"
    await session.subscribe_resource(uri)
    await call(session, "pitroom_wait", {"runs": [run_id], "wait_seconds": 60})
    deadline = time.time() + 30
    def updated():
        return [n for n in NOTIFICATIONS if isinstance(n, types.ResourceUpdatedNotification) and str(n.params.uri) == uri]
    while not updated() and time.time() < deadline:
        await asyncio.sleep(0.1)
    check("subscribed_run_pushes_updates", updated(), NOTIFICATIONS)
    check("new_runs_change_the_resource_list",
          any(isinstance(n, types.ResourceListChangedNotification) for n in NOTIFICATIONS), NOTIFICATIONS)
    await session.unsubscribe_resource(uri)


async def resources_name_each_run(session, run_id):
    templates = (await session.list_resource_templates()).resourceTemplates
    check("resource_templates", {t.uriTemplate for t in templates} == {"pitroom://run/{id}", "pitroom://run/{id}/patch"}, templates)
    got = await session.read_resource(f"pitroom://run/{run_id}")
    check("run_resource_is_the_report", "SUMMARY:" in got.contents[0].text, got)


async def main():
    params = StdioServerParameters(command=PITROOM, args=["mcp"], env=dict(os.environ), cwd=PROJECT)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            check("initialize_answered", init.serverInfo.name == "pitroom", init.serverInfo)
            await tools_are_listed_with_schemas_and_annotations(session, init)
            first = await a_read_run_returns_the_verified_report(session)
            await resources_name_each_run(session, first)
            await caps_and_no_hold_reach_the_run(session)
            await subscribed_runs_push_updates_and_new_runs_change_the_list(session)
            await progress_arrives_while_a_call_waits(session)
            await a_run_past_wait_seconds_returns_a_handle_that_wait_finishes(session)
            await cancelling_a_run_call_stops_its_run(session)
            await isolate_apply_discard_write_revert(session)
            await a_crew_of_five_runs_in_one_call(session)
            await a_race_runs_its_contenders_as_one_group(session)
            await bad_input_gets_clear_errors_and_the_server_keeps_serving(session)
            # Closing the session ends waits, never runs: the test runner waits for this one.
            r = await call(session, "pitroom_run", {"task": "outlives the session", "model": "fake/slow", "dir": PROJECT, "wait_seconds": 1})
            check("detached_run_still_going", sc(r)["active"] == 1, text_of(r))
            print(f"detached run {sc(r)['runs'][0]['run']}", flush=True)
    print("all checks passed", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
