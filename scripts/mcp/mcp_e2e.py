"""Drives a live a2a-mailbox through its MCP server with the reference client, `mcp` 1.30.0.

    python mcp_e2e.py BASE_URL SENDER_TOKEN RECIPIENT_TOKEN RECIPIENT

The sender (allowed to send to RECIPIENT only) and the recipient each use an MCP ClientSession
over Streamable HTTP; the recipient also works natively and through the A2A facade's reader, so
one mailbox is seen through three protocols. Exits non-zero on the first broken expectation,
printing what was expected and what came back.
"""

import asyncio
import json
import sys
import uuid
import warnings
from contextlib import asynccontextmanager

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError
from mcp.types import CallToolResult

# mcp 1.30 marks its client of MCP Tasks (revision 2025-11-25) deprecated; it is what is tested.
warnings.filterwarnings("ignore", category=DeprecationWarning)


def check(ok, what):
    if not ok:
        raise AssertionError(what)
    print(f"ok: {what}")


@asynccontextmanager
async def session(url, token):
    headers = {"Authorization": f"Bearer {token}"}
    async with streamablehttp_client(url, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as s:
            yield s, await s.initialize()


async def until(what, probe, want):
    for _ in range(200):
        got = await probe()
        if want(got):
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what}: never happened (last: {got})")


async def main(base, sender_token, recipient_token, recipient):
    url = f"{base}/mcp"
    native = httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {recipient_token}"}, timeout=30
    )

    # No token: refused at the HTTP level, with the scheme to use.
    r = await native.post(url, headers={"Authorization": ""}, json={})
    check(r.status_code == 401, f"no token: 401 ({r.status_code})")
    check(r.headers.get("www-authenticate", "").startswith("Bearer"), "WWW-Authenticate: Bearer")

    async with session(url, sender_token) as (alice, init):
        check(init.serverInfo.name == "a2a-mailbox", "initialize names the server")
        check(init.protocolVersion == "2025-11-25", f"2025-11-25 agreed ({init.protocolVersion})")
        check(init.capabilities.tasks is not None, "the server offers tasks")
        tools = {t.name: t for t in (await alice.list_tools()).tools}
        check(
            set(tools) == {"send_task", "next_task", "post_result", "next_result", "get_task",
                           "list_tasks", "cancel_task", "heartbeat"},
            f"tools/list: {sorted(tools)}",
        )
        check(tools["send_task"].execution.taskSupport == "optional", "send_task runs as a task")
        check(all(t.outputSchema for t in tools.values()), "every tool has an output schema")

        # A plain send, then refused: another recipient is not in the token's capabilities.
        sent = await alice.call_tool("send_task", {"recipient": recipient, "intent_text": "plain"})
        check(not sent.isError, f"send_task queued a task ({sent.structuredContent})")
        plain = sent.structuredContent["task_id"]
        refused = await alice.call_tool("send_task", {"recipient": "carol", "intent_text": "no"})
        check(refused.isError, "a send without the capability is an isError result")
        check(refused.structuredContent["code"] == "capability_missing",
              f"... carrying the native error body ({refused.structuredContent})")

        got = await alice.call_tool("get_task", {"task_id": plain})
        check(got.structuredContent["state"] == "queued", "get_task reads it queued")
        listed = await alice.call_tool("list_tasks", {"role": "sender"})
        check(plain in {t["task"]["id"] for t in listed.structuredContent["tasks"]},
              "list_tasks lists it")

        # The recipient works through MCP tools: lease, heartbeat, answer.
        async with session(url, recipient_token) as (bob, _):
            leased = await bob.call_tool("next_task", {"wait_ms": 2000})
            task, lease = leased.structuredContent["task"], leased.structuredContent["lease"]
            check(task["id"] == plain, "next_task leased the task")
            hb = await bob.call_tool("heartbeat", {"task_id": plain, "lease_id": lease["lease_id"]})
            check(hb.structuredContent["kind"] == "a2a_lease_extended", "heartbeat extended it")
            posted = await bob.call_tool("post_result", {
                "task_id": plain, "lease_id": lease["lease_id"], "status": "ok",
                "content": [{"type": "text", "text": "plain done"}]})
            check(posted.structuredContent["kind"] == "a2a_result_posted", "post_result answered")
        drained = await alice.call_tool("next_result", {"wait_ms": 2000})
        check(drained.structuredContent["result"]["task_id"] == plain, "next_result drained it")

        doomed = (await alice.call_tool(
            "send_task", {"recipient": recipient, "intent_text": "cancel me"})).structuredContent
        canceled = await alice.call_tool("cancel_task", {"task_id": doomed["task_id"],
                                                         "reason": "changed my mind"})
        check(canceled.structuredContent["kind"] == "a2a_task_canceled", "cancel_task canceled it")

        # next_task with max leases a batch, each task with its own lease.
        pair = [(await alice.call_tool("send_task", {"recipient": recipient, "intent_text": f"b{i}"}))
                .structuredContent["task_id"] for i in range(2)]
        async with session(url, recipient_token) as (bob, _):
            batch = (await bob.call_tool("next_task", {"max": 5, "wait_ms": 2000})).structuredContent
            check(batch["kind"] == "a2a_task_batch", f"next_task with max: a batch ({batch['kind']})")
            check([x["task"]["id"] for x in batch["leases"]] == pair, "both tasks, oldest first")
            check(len({x["lease"]["lease_id"] for x in batch["leases"]}) == 2, "each with its lease")
            bad = await bob.call_tool("next_task", {"max": 0})
            check(bad.isError and bad.structuredContent["code"] == "invalid_request", "max 0 refused")
            for x in batch["leases"]:
                done = await bob.call_tool("post_result", {
                    "task_id": x["task"]["id"], "lease_id": x["lease"]["lease_id"], "status": "ok"})
                check(not done.isError, "a batch lease answered")
        for want in pair:
            got = (await alice.call_tool("next_result", {"wait_ms": 2000})).structuredContent
            check(got["result"]["task_id"] == want, "its result drained")

        # MCP Tasks: send as a task, a native worker answers, the result comes back.
        created = await alice.experimental.call_tool_as_task(
            "send_task", {"recipient": recipient, "intent_text": "refund 1234"})
        task_id = created.task.taskId
        check(created.task.status == "working", f"call_tool_as_task: working ({created.task})")
        r = await native.get("/a2a/tasks/next", params={"wait_ms": 5000})
        leased = r.json()
        check(leased["task"]["id"] == task_id, "the native worker leased the MCP task")
        r = await native.post("/a2a/results", json={
            "task_id": task_id, "lease_id": leased["lease"]["lease_id"], "status": "ok",
            "content": [{"type": "text", "text": "refunded"}, {"type": "json", "value": {"n": 1}}]})
        check(r.status_code == 201, "the native worker answered")
        done = await until("completed", lambda: alice.experimental.get_task(task_id),
                           lambda t: t.status == "completed")
        check(done.pollInterval == 1000, "pollInterval 1000 ms")
        result = await alice.experimental.get_task_result(task_id, CallToolResult)
        check(result.content[0].text == "refunded", f"get_task_result: the recipient's content")
        check(json.loads(result.content[1].text) == {"n": 1}, "json content as a text block")
        check(result.structuredContent["status"] == "ok", "structuredContent carries the status")
        native_view = await native.get(f"/a2a/tasks/{task_id}",
                                       headers={"Authorization": f"Bearer {sender_token}"})
        check(native_view.json()["state"] == "resolved", "tasks/result delivered the result")

        # tasks/result waits: asked before the answer, it answers when the worker does.
        created = await alice.experimental.call_tool_as_task(
            "send_task", {"recipient": recipient, "intent_text": "slow one"})
        waiting = asyncio.create_task(
            alice.experimental.get_task_result(created.task.taskId, CallToolResult))
        await asyncio.sleep(0.3)
        check(not waiting.done(), "tasks/result waits while the task works")
        await work(native, "failed: no stock", error=True)
        failed = await asyncio.wait_for(waiting, 20)
        check(failed.isError, "an error result is isError")

        listed = await alice.experimental.list_tasks()
        check(task_id in {t.taskId for t in listed.tasks}, "tasks/list lists the MCP task")
        other = await alice.experimental.call_tool_as_task(
            "send_task", {"recipient": recipient, "intent_text": "cancel this task"})
        cancelled = await alice.experimental.cancel_task(other.task.taskId)
        check(cancelled.status == "cancelled", "tasks/cancel cancelled it")
        try:
            await alice.experimental.get_task(str(uuid.uuid4()))
            raise AssertionError("an unknown task was found")
        except McpError as e:
            check(e.error.code == -32602, f"an unknown task: -32602 ({e.error.code})")

    # A session the server never issued: 404, which tells a client to initialize again; the
    # tasks are still there for the new session.
    r = await native.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Mcp-Session-Id": "0.forged", "Authorization":
                                   f"Bearer {sender_token}", "Accept":
                                   "application/json, text/event-stream"})
    check(r.status_code == 404, f"an unknown session: 404 ({r.status_code})")
    async with session(url, sender_token) as (again, _):
        t = await again.experimental.get_task(task_id)
        check(t.status == "completed", "a new session reads the earlier task")

    await three_protocols(base, url, sender_token, recipient_token, recipient, native)
    await native.aclose()
    print("MCP end-to-end: passed")


async def work(native, text, error=False):
    """The recipient, natively: lease the next task and answer it."""
    r = await native.get("/a2a/tasks/next", params={"wait_ms": 5000})
    leased = r.json()
    check(leased["task"] is not None, "the native worker leased a task")
    body = {"task_id": leased["task"]["id"], "lease_id": leased["lease"]["lease_id"]}
    if error:
        body.update(status="error", error_message=text)
    else:
        body.update(status="ok", content=[{"type": "text", "text": text}])
    r = await native.post("/a2a/results", json=body)
    check(r.status_code == 201, "the native worker answered")
    return leased["task"]["id"]


async def three_protocols(base, url, sender_token, recipient_token, recipient, native):
    """One mailbox: sent through MCP and read through A2A, sent through A2A and worked and read
    through MCP."""
    a2a = httpx.AsyncClient(base_url=f"{base}/a2a/agents/{recipient}", timeout=30, headers={
        "Authorization": f"Bearer {sender_token}", "A2A-Version": "1.0"})
    async with session(url, sender_token) as (alice, _):
        created = await alice.experimental.call_tool_as_task(
            "send_task", {"recipient": recipient, "intent_text": "through MCP"})
        await work(native, "answered natively")
        r = await a2a.get(f"/tasks/{created.task.taskId}")
        check(r.json()["status"]["state"] == "TASK_STATE_COMPLETED",
              "sent through MCP, read COMPLETED through A2A")

        msg = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                           "parts": [{"text": "through A2A"}]},
               "configuration": {"returnImmediately": True}}
        sent = (await a2a.post("/message:send", json=msg)).json()["task"]
        async with session(url, recipient_token) as (bob, _):
            leased = (await bob.call_tool("next_task", {"wait_ms": 2000})).structuredContent
            check(leased["task"]["id"] == sent["id"], "sent through A2A, leased through MCP")
            await bob.call_tool("post_result", {
                "task_id": sent["id"], "lease_id": leased["lease"]["lease_id"],
                "status": "ok", "content": [{"type": "text", "text": "answered through MCP"}]})
        t = await alice.experimental.get_task(sent["id"])
        check(t.status == "completed", "... and read completed through MCP tasks/get")
        r = await a2a.get(f"/tasks/{sent['id']}")
        check(r.json()["artifacts"][0]["parts"][0]["text"] == "answered through MCP",
              "... and its answer read through A2A")
    await a2a.aclose()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
