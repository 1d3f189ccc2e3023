#!/usr/bin/env python3
"""A real MCP client (the official Python SDK, `pip install mcp`) driving `phoneagent mcp` over
stdio against the virtual phone and the scripted model (SPEC C4, issue #13 item 4).

Spawned by crates/phoneagent-cli/tests/mcp_e2e.rs, one phase per call:

  mcp_client.py PHASE -- PHONEAGENT_ARGS...

PHASE is one of
  tools    list the tools, list devices, take a screenshot
  buy      run the demo's buy task (wary mode: the model confirms) to its end, read the trajectory
  refuse   hard mode: the approval of 提交订单 goes to the person; answering it ourselves is
           refused; then cancel the run
  person   hard mode with the person's standing `--on-approval approve`: the run ends succeeded

Prints one JSON line with what it saw (the Rust test checks the phone's ground truth); exits 1
with a message on any failed expectation.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

EXPECTED_TOOLS = {
    "list_devices",
    "screenshot",
    "start_task",
    "follow_task",
    "answer_request",
    "cancel_task",
    "get_run",
}


def attr(obj, snake, camel):
    """A field of an SDK object: snake_case in mcp 2.x, camelCase in 1.x."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def fail(msg):
    print(f"mcp_client: {msg}", file=sys.stderr)
    sys.exit(1)


def body(result):
    """The JSON of a tool result's first text block."""
    for c in result.content:
        if c.type == "text":
            return json.loads(c.text)
    fail(f"no text content in {result}")


async def call(session, name, args=None, error=False):
    r = await session.call_tool(name, args or {})
    is_error = bool(attr(r, "is_error", "isError"))
    if is_error != error:
        fail(f"{name}({args}) is_error={is_error}, expected {error}: {r.content}")
    return r


async def follow(session, run_id, until):
    """Poll follow_task until `until(state)` is true; returns that state and all events."""
    events, after = [], None
    for _ in range(200):
        args = {"run_id": run_id, "wait_ms": 1000}
        if after is not None:
            args["after_seq"] = after
        st = body(await call(session, "follow_task", args))
        events += st["events"]
        after = st["next_after_seq"]
        if until(st):
            return st, events
    fail(f"run {run_id} never reached the expected state")


async def main():
    phase = sys.argv[1]
    argv = sys.argv[sys.argv.index("--") + 1 :]
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    out = {"phase": phase}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = attr(init, "server_info", "serverInfo").name
            if phase == "tools":
                tools = {t.name for t in (await session.list_tools()).tools}
                if tools != EXPECTED_TOOLS:
                    fail(f"tools {sorted(tools)} != {sorted(EXPECTED_TOOLS)}")
                devices = body(await call(session, "list_devices"))
                out["serials"] = [d["serial"] for d in devices["devices"]]
                shot = await call(session, "screenshot", {})
                images = [c for c in shot.content if c.type == "image"]
                if len(images) != 1 or attr(images[0], "mime_type", "mimeType") != "image/png":
                    fail(f"screenshot content {shot.content}")
                import base64

                png = base64.b64decode(images[0].data)
                if png[:8] != b"\x89PNG\r\n\x1a\n":
                    fail("the screenshot is not a PNG")
                out["screenshot"] = body(shot)
                out["instructions"] = init.instructions
            elif phase == "buy":
                started = body(
                    await call(
                        session,
                        "start_task",
                        {"task": "Buy the first product in the shop"},
                    )
                )
                run_id = started["run_id"]
                # One task per phone: a second start while it runs is refused.
                busy = await call(
                    session, "start_task", {"task": "Open Settings"}, error=True
                )
                out["busy"] = body(busy)["error"]
                st, events = await follow(session, run_id, lambda s: s["finished"])
                out["status"] = st["status"]
                out["kinds"] = [e["kind"] for e in events]
                run = body(
                    await call(session, "get_run", {"run_id": run_id, "trajectory": True})
                )
                traj = run["untrusted"]["trajectory"]
                out["trajectory_schema"] = traj.get("schema_version")
                out["trajectory_events"] = len(traj.get("events", []))
                out["run_id"] = run_id
            elif phase in ("refuse", "person"):
                started = body(
                    await call(
                        session,
                        "start_task",
                        {"task": "Buy the first product in the shop"},
                    )
                )
                run_id = started["run_id"]
                out["mode"] = started["mode"]
                if phase == "refuse":
                    st, _ = await follow(session, run_id, lambda s: s["pending"])
                    req = st["pending"][0]
                    out["pending_kind"] = req["kind"]["type"]
                    out["answered_by"] = req["answered_by"]
                    # The client tries to approve its own irreversible action.
                    r = body(
                        await call(
                            session,
                            "answer_request",
                            {"request_id": req["request_id"], "response": "approve"},
                            error=True,
                        )
                    )
                    out["self_approval"] = r
                    # Still pending: the refusal did not consume the person's request.
                    st = body(await call(session, "follow_task", {"run_id": run_id}))
                    out["still_pending"] = len(st["pending"])
                    body(await call(session, "cancel_task", {"run_id": run_id}))
                st, events = await follow(session, run_id, lambda s: s["finished"])
                out["status"] = st["status"]
                out["kinds"] = [e["kind"] for e in events]
                out["run_id"] = run_id
            else:
                fail(f"unknown phase {phase}")
    print(json.dumps(out))


asyncio.run(main())
