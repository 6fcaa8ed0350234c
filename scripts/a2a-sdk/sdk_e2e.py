"""Drives a live a2a-mailbox through its A2A 1.0 facade with the reference client, a2a-sdk.

    python sdk_e2e.py BASE_URL BINDING SENDER_TOKEN RECIPIENT_TOKEN RECIPIENT

BINDING is JSONRPC or HTTP+JSON. The sender uses only the A2A client, in its default
configuration (streaming on); the recipient works through the mailbox's native API (lease,
then result). Exits non-zero on the first broken expectation, printing what was expected and
what came back.
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
    SubscribeToTaskRequest,
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
    """Sends and answers the task as the first event shows it (the stream is then closed)."""
    request = SendMessageRequest(
        message=msg, configuration=SendMessageConfiguration(return_immediately=True)
    )
    stream = client.send_message(request)
    try:
        async for event in stream:
            return event.task
    finally:
        await stream.aclose()
    raise AssertionError("SendMessage answered nothing")


async def lease(native, recipient):
    """The recipient, natively: lease the next task."""
    r = await native.get("/a2a/tasks/next", params={"recipient": recipient, "wait_ms": 5000})
    r.raise_for_status()
    leased = r.json()
    check(leased["task"] is not None, "the recipient leased the task natively")
    return leased


async def answer(native, leased, outcome):
    """The recipient, natively: post a result for the task it leased."""
    body = {"task_id": leased["task"]["id"], "lease_id": leased["lease"]["lease_id"], **outcome}
    r = await native.post("/a2a/results", json=body)
    check(r.status_code == 201, f"the recipient posted its result natively ({r.status_code})")


async def work(native, recipient, outcome):
    """The recipient, natively: lease the next task and post a result for it."""
    leased = await lease(native, recipient)
    await answer(native, leased, outcome)
    return leased["task"]["id"]


async def next_event(events, what):
    try:
        return await asyncio.wait_for(anext(events), 20)
    except StopAsyncIteration:
        raise AssertionError(f"the stream ended before {what}")


async def ended(events, what):
    try:
        event = await asyncio.wait_for(anext(events), 20)
    except StopAsyncIteration:
        check(True, f"the stream ended after {what}")
        return
    raise AssertionError(f"the stream went on after {what}: {event}")


async def streams(client, canceler, native, recipient):
    """The default client streams: every change of the task arrives as it happens."""
    events = client.send_message(SendMessageRequest(message=message("stream order 55")))
    first = await next_event(events, "the task")
    check(first.task.status.state == TaskState.TASK_STATE_SUBMITTED, "a stream opens SUBMITTED")
    leased = await lease(native, recipient)
    check(leased["task"]["id"] == first.task.id, "the recipient leased the streamed task")
    working = await next_event(events, "WORKING")
    check(working.status_update.status.state == TaskState.TASK_STATE_WORKING,
          "the lease showed WORKING on the stream")
    await answer(native, leased, {"status": "ok", "content": [{"type": "text", "text": "sent"}]})
    artifact = await next_event(events, "the artifact")
    check(artifact.artifact_update.artifact.parts[0].text == "sent",
          "the result came as an artifactUpdate")
    done = await next_event(events, "COMPLETED")
    check(done.status_update.status.state == TaskState.TASK_STATE_COMPLETED,
          "then COMPLETED")
    await ended(events, "COMPLETED")

    # Canceled from another connection while a subscriber follows it.
    doomed = await send(client, message("cancel me while streaming"))
    events = client.subscribe(SubscribeToTaskRequest(id=doomed.id))
    first = await next_event(events, "the task")
    check(first.task.id == doomed.id, "SubscribeToTask opens with the task")
    await canceler.cancel_task(CancelTaskRequest(id=doomed.id))
    canceled = await next_event(events, "CANCELED")
    check(canceled.status_update.status.state == TaskState.TASK_STATE_CANCELED,
          "a cancel from another connection ended the stream with CANCELED")
    await ended(events, "CANCELED")

    # An error result: FAILED with its text.
    events = client.send_message(SendMessageRequest(message=message("charge card 77")))
    await next_event(events, "the task")
    await work(native, recipient, {"status": "error", "error_message": "card expired"})
    while True:
        event = await next_event(events, "FAILED")
        if event.status_update.status.state != TaskState.TASK_STATE_WORKING:
            break
    check(event.status_update.status.state == TaskState.TASK_STATE_FAILED, "FAILED on the stream")
    check(event.status_update.status.message.parts[0].text == "card expired",
          "FAILED carries the error text")
    await ended(events, "FAILED")


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
    check(card.capabilities.streaming, "the card says it streams")
    config = ClientConfig(
        httpx_client=sender_http,
        supported_protocol_bindings=[binding],
        use_client_preference=True,
    )
    check(config.streaming, "the client's default configuration streams")
    client = ClientFactory(config).create(card)
    canceler_http = httpx.AsyncClient(
        headers={"Authorization": f"Bearer {sender_token}"}, timeout=30
    )
    canceler = ClientFactory(
        ClientConfig(
            httpx_client=canceler_http,
            supported_protocol_bindings=[binding],
            use_client_preference=True,
        )
    ).create(card)

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
    await streams(client, canceler, native, recipient)
    await client.close()
    await canceler.close()
    await native.aclose()
    print(f"A2A SDK end-to-end over {binding}: passed")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
