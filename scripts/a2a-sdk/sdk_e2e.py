"""Drives a live a2a-mailbox through its A2A 1.0 facade with the reference client, a2a-sdk.

    python sdk_e2e.py BASE_URL BINDING SENDER_TOKEN RECIPIENT_TOKEN RECIPIENT

BINDING is JSONRPC or HTTP+JSON. The sender uses only the A2A client; the recipient works
through the mailbox's native API (lease, then result). Exits non-zero on the first broken
expectation, printing what was expected and what came back.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from google.protobuf import json_format


def check(ok, what):
    if not ok:
        raise AssertionError(what)
    print(f"ok: {what}")


def message(text, message_id=None, key=None):
    m = Message(
        message_id=message_id or str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
    )
    if key is not None:
        m.metadata.update({"urn:a2a-mailbox:v1": {"idempotencyKey": key}})
    return m


async def send(client, msg):
    request = SendMessageRequest(
        message=msg, configuration=SendMessageConfiguration(return_immediately=True)
    )
    async for event in client.send_message(request):
        return event.task
    raise AssertionError("SendMessage answered nothing")


async def work(native, recipient, outcome):
    """The recipient, natively: lease the next task and post a result for it."""
    r = await native.get("/a2a/tasks/next", params={"recipient": recipient, "wait_ms": 5000})
    r.raise_for_status()
    leased = r.json()
    check(leased["task"] is not None, "the recipient leased the task natively")
    body = {"task_id": leased["task"]["id"], "lease_id": leased["lease"]["lease_id"], **outcome}
    r = await native.post("/a2a/results", json=body)
    check(r.status_code == 201, f"the recipient posted its result natively ({r.status_code})")
    return leased["task"]["id"]


async def poll(client, task_id, until):
    for _ in range(200):
        task = await client.get_task(GetTaskRequest(id=task_id))
        if task.status.state == until:
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {TaskState.Name(until)}")


async def main(base, binding, sender_token, recipient_token, recipient):
    agent_url = f"{base}/a2a/agents/{recipient}"
    sender_http = httpx.AsyncClient(headers={"Authorization": f"Bearer {sender_token}"}, timeout=30)
    native = httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {recipient_token}"}, timeout=30
    )
    card = await A2ACardResolver(sender_http, agent_url).get_agent_card()
    check(card.name == recipient, f"the card of {recipient} resolved")
    bindings = {i.protocol_binding for i in card.supported_interfaces}
    check(bindings == {"JSONRPC", "HTTP+JSON"}, f"the card names both bindings: {bindings}")
    factory = ClientFactory(
        ClientConfig(
            httpx_client=sender_http,
            streaming=False,
            supported_protocol_bindings=[binding],
            use_client_preference=True,
        )
    )
    client = factory.create(card)

    # Send, the recipient works natively, poll to COMPLETED with the result as an artifact.
    first = message("refund order 1234")
    task = await send(client, first)
    check(task.status.state == TaskState.TASK_STATE_SUBMITTED, "SendMessage queued a task (SUBMITTED)")
    leased_id = await work(native, recipient, {"status": "ok", "content": [{"type": "text", "text": "refunded"}]})
    check(leased_id == task.id, "the native lease handed out the A2A task")
    done = await poll(client, task.id, TaskState.TASK_STATE_COMPLETED)
    check(done.artifacts[0].parts[0].text == "refunded", "the result came back as artifacts[0]")
    check(done.history[0].parts[0].text == "refund order 1234", "the message is the task's history")

    # The same message again: the same task, in its current state.
    again = await send(client, first)
    check(again.id == task.id, "the same message again answered the same task id")
    check(again.status.state == TaskState.TASK_STATE_COMPLETED, "... in its current state")

    # The same key with another message: refused, the caller told why.
    key = str(uuid.uuid4())
    await send(client, message("ship parcel 7", key=key))
    try:
        await send(client, message("ship parcel 8", key=key))
        raise AssertionError("a different message under the same key was accepted")
    except InvalidParamsError as e:
        check(e.data == {"mailboxError": "IDEMPOTENCY_CONFLICT"}, f"IDEMPOTENCY_CONFLICT ({e.data})")

    # A second task, canceled.
    other = await send(client, message("cancel me"))
    canceled = await client.cancel_task(CancelTaskRequest(id=other.id))
    check(canceled.status.state == TaskState.TASK_STATE_CANCELED, "CancelTask canceled it")
    check(
        (await client.get_task(GetTaskRequest(id=other.id))).status.state
        == TaskState.TASK_STATE_CANCELED,
        "GetTask shows it CANCELED",
    )

    # An unknown id.
    try:
        await client.get_task(GetTaskRequest(id=str(uuid.uuid4())))
        raise AssertionError("an unknown task id was found")
    except TaskNotFoundError:
        check(True, "GetTask of an unknown id raised TaskNotFoundError")

    # An error result shows FAILED with its message. (The key's first task is leased first.)
    await work(native, recipient, {"status": "ok", "content": []})
    failing = await send(client, message("charge card 9"))
    await work(native, recipient, {"status": "error", "error_message": "card declined"})
    failed = await poll(client, failing.id, TaskState.TASK_STATE_FAILED)
    check(failed.status.message.parts[0].text == "card declined", "FAILED carries the error text")

    listed = await client.list_tasks(ListTasksRequest(include_artifacts=True))
    ids = {t.id for t in listed.tasks}
    check({task.id, other.id, failing.id} <= ids, f"ListTasks lists the sender's tasks ({len(ids)})")
    check(all(TaskState.Name(t.status.state).startswith("TASK_STATE_") for t in listed.tasks),
          "every listed state is a TASK_STATE_* name")
    json_format.MessageToDict(listed)
    await client.close()
    await native.aclose()
    print(f"A2A SDK end-to-end over {binding}: passed")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
